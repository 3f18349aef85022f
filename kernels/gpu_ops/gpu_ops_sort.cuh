/* gpu_ops_sort.cuh - what the onesweep radix sort passes share (CUDA only): the pass
 * arguments, the look-back status word, the warp-level match and the decoupled look-back, and the
 * pass launcher. gpu_ops.cu holds the product's pass (onesweep2_kernel) and the sort driver;
 * gpu_ops_variants.cu the earlier pass that only the bench and the test of every variant select.
 * The algorithm is described at the top of gpu_ops.cu.
 */
#ifndef BK_GPU_OPS_SORT_CUH
#define BK_GPU_OPS_SORT_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* In a function with `char *err, size_t err_size`: fail with the CUDA error, expression and place. */
#define CUDA_TRY(expr)                                                                                       \
    do {                                                                                                     \
        cudaError_t e_ = (expr);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            snprintf(err, err_size, "CUDA error in %s: %s (%s:%d)", #expr, cudaGetErrorString(e_), __FILE__, \
                     __LINE__);                                                                              \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)

#ifndef NDEBUG
#define DEBUG_SYNC() CUDA_TRY(cudaDeviceSynchronize())
#else
#define DEBUG_SYNC() \
    do {             \
    } while (0)
#endif

enum { RADIX = 256, RADIX_BITS = 8, LOOKBACK_WINDOW = 16 };

/* Look-back status word: flag in the top 2 bits, count in the low 30 (hence n < 2^30). */
#define ST_AGGREGATE 0x40000000u
#define ST_INCLUSIVE 0x80000000u
#define ST_VALUE     0x3FFFFFFFu

template <typename K> __device__ __forceinline__ uint32_t bk_digit_of(K key, int shift, uint32_t mask)
{
    return (uint32_t)(key >> shift) & mask;
}

__device__ __forceinline__ uint32_t bk_load_volatile(const uint32_t *p) { return *(const volatile uint32_t *)p; }
__device__ __forceinline__ void     bk_store_volatile(uint32_t *p, uint32_t v) { *(volatile uint32_t *)p = v; }

struct bk_sort_pass_args {
    const void     *keys_in;
    void           *keys_out;
    const uint32_t *vals_in;
    uint32_t       *vals_out;
    uint32_t        n;
    int             shift, bits;
    const uint32_t *offsets;      /* [RADIX] exclusive scan of this pass's digit counts */
    uint32_t       *status;       /* [tiles][RADIX] this pass; zero on entry */
    uint32_t       *status_next;  /* [tiles][RADIX] the next pass's; each tile clears its row */
    uint32_t       *tile_counter; /* zero on entry */
    int             vals_aligned; /* vals_in on a 16-byte boundary: values are staged with cp.async */
};

/* A key's rank among the keys of one step of its warp, plus the warp's counter of its digit d:
 * lanes with equal digits find each other by RADIX_BITS ballots, and the lowest of them bumps
 * wc[d] by the group size. lt: the lanes below this one. Every lane of the warp calls it. */
__device__ __forceinline__ uint32_t bk_warp_match_rank(uint32_t d, uint32_t *wc, int lane, uint32_t lt)
{
    uint32_t peers = 0xffffffffu;
#pragma unroll
    for (int b = 0; b < RADIX_BITS; ++b) {
        const uint32_t bit = (d >> b) & 1u, bal = __ballot_sync(0xffffffffu, bit);
        peers &= bit ? bal : ~bal;
    }
    const int leader = __ffs(peers) - 1;
    uint32_t  before = 0;
    if (lane == leader) {
        before = wc[d];
        wc[d] = before + __popc(peers);
    }
    return __shfl_sync(0xffffffffu, before, leader) + __popc(peers & lt);
}

/* The warps' counters of one digit (s_counts[w * RADIX + digit], w < warps) become the counts of
 * the warps before each; returns the tile's count of the digit. */
__device__ __forceinline__ uint32_t bk_warps_exclusive(uint32_t *s_counts, int warps, int digit)
{
    uint32_t total = 0;
    for (int w = 0; w < warps; ++w) {
        const uint32_t c = s_counts[w * RADIX + digit];
        s_counts[w * RADIX + digit] = total;
        total += c;
    }
    return total;
}

/* Inclusive prefix sum of x over the lanes of a warp. */
__device__ __forceinline__ uint32_t bk_warp_inclusive_sum(uint32_t x, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    return x;
}

/* Decoupled look-back for digit `digit` of tile > 0, LOOKBACK_WINDOW predecessors per step: the
 * aggregates summed back to the nearest inclusive prefix; a tile that has published nothing yet
 * is read again. Returns the count of the digit in every earlier tile. */
__device__ __forceinline__ uint32_t bk_lookback_prefix(const uint32_t *status, uint32_t tile, int digit)
{
    uint32_t prefix = 0;
    int      j = (int)tile - 1;
    uint32_t spins = 0;
    for (;;) {
        uint32_t st[LOOKBACK_WINDOW];
#pragma unroll
        for (int w = 0; w < LOOKBACK_WINDOW; ++w)
            st[w] = j - w >= 0 ? bk_load_volatile(status + (size_t)(j - w) * RADIX + digit) : ST_INCLUSIVE;
        int used = 0, done = 0;
#pragma unroll
        for (int w = 0; w < LOOKBACK_WINDOW; ++w) {
            if (!done && used == w && (st[w] & (ST_AGGREGATE | ST_INCLUSIVE))) {
                prefix += st[w] & ST_VALUE;
                used++;
                done = (st[w] & ST_INCLUSIVE) != 0;
            }
        }
        if (done) break;
        j -= used;
        if (++spins > (1u << 22)) break; /* never seen; a wrong result beats a hung GPU */
    }
    return prefix;
}

/* Launches pass kernel k on tiles of THREADS x IPT pairs with keys of type K, giving it the
 * dynamic shared memory of one tile of keys and values on its first launch (*ready). */
template <typename K, int THREADS, int IPT>
static int bk_sort_pass_launch(void (*k)(bk_sort_pass_args), int *ready, const bk_sort_pass_args &a, uint32_t tiles,
                               char *err, size_t err_size)
{
    const size_t smem = (size_t)THREADS * IPT * (sizeof(K) + 4);
    if (!*ready) {
        CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        *ready = 1;
    }
    k<<<tiles, THREADS, smem>>>(a);
    CUDA_TRY(cudaGetLastError());
    DEBUG_SYNC();
    return 0;
}

/* The first onesweep pass (gpu_ops_variants.cu), variant 1 of BK_GPU_OP_SORT32 (384 x 16) and
 * BK_GPU_OP_SORT64 (384 x 12). */
int bk_gpu_ops_sort_v1_pass_u32(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size);
int bk_gpu_ops_sort_v1_pass_u64(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size);

#endif /* BK_GPU_OPS_SORT_CUH */
