/* gpu_ops_variants.cu - sort kernel variants kept for `baker bench primitives --variants` and for
 * the test of every variant (tests/gpu_ops.c), apart from the product's kernels in gpu_ops.cu (as
 * llm.c keeps its kernel versions in dev/cuda/). The product never selects them; only
 * bk_gpu_ops_set_variant does.
 *
 * onesweep_kernel is the first version of the onesweep digit pass (variant 1 of
 * BK_GPU_OP_SORT32 and BK_GPU_OP_SORT64). gpu_ops.cu's onesweep2_kernel, the default, gives the
 * same result with fewer exposed latencies per tile; tools/gpu_ops_notes.md compares the two.
 */
#include "gpu_ops_sort.cuh"

/* One digit pass. THREADS >= RADIX: threads 0..255 each own one digit for the counting, the
 * look-back and the scatter bases. Items are warp-striped: warp w holds the 32 * IPT keys from
 * tile_base + w * 32 * IPT, item j of lane l at + j * 32 + l, so the warp's rank order (item-major,
 * lane-minor) is input order. */
template <typename K, int THREADS, int IPT>
__global__ void __launch_bounds__(THREADS, THREADS >= 384 ? 2 : 3) onesweep_kernel(bk_sort_pass_args a)
{
    constexpr int WARPS = THREADS / 32, TILE = THREADS * IPT;
    static_assert(THREADS >= RADIX && THREADS % 32 == 0, "one thread per digit");
    static_assert(WARPS * RADIX * 4 <= TILE * (int)sizeof(K), "digit counters fit in the key space");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* [keys: TILE x K, aliased earlier by the per-warp digit counters] [vals: TILE x 4] */
    K                  *s_keys = (K *)smem_raw;
    uint32_t           *s_counts = (uint32_t *)smem_raw; /* [WARPS][RADIX] */
    uint32_t           *s_vals = (uint32_t *)(smem_raw + (size_t)TILE * sizeof(K));
    __shared__ uint32_t s_tile, s_local_start[RADIX], s_base[RADIX], s_warp_sum[RADIX / 32];

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const K *__restrict__ keys_in = (const K *)a.keys_in;
    K *__restrict__ keys_out = (K *)a.keys_out;
    const uint32_t mask = (1u << a.bits) - 1u;

    if (tid == 0) s_tile = atomicAdd(a.tile_counter, 1u);
    for (int j = tid; j < WARPS * RADIX; j += THREADS) s_counts[j] = 0;
    __syncthreads();
    const uint32_t tile = s_tile;
    if (tid < RADIX) a.status_next[(size_t)tile * RADIX + tid] = 0;
    const uint32_t tile_base = tile * TILE;
    const uint32_t warp_base = tile_base + warp * 32 * IPT + lane;

    /* Load; past the end, the largest key (its digit is the largest, and being last in input
     * order it ranks after every real key, so sorted positions 0..valid-1 are the real keys). */
    K key[IPT];
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t idx = warp_base + j * 32;
        key[j] = idx < a.n ? keys_in[idx] : ~(K)0;
    }

    /* Rank within the warp (bk_warp_match_rank). */
    uint32_t       rank[IPT];
    uint32_t      *wc = s_counts + warp * RADIX;
    const uint32_t lt = (1u << lane) - 1u;
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        rank[j] = bk_warp_match_rank(bk_digit_of(key[j], a.shift, mask), wc, lane, lt);
        __syncwarp();
    }
    __syncthreads();

    /* Per digit: the warps' counters become exclusive prefixes; the tile count is published
     * at once so later tiles can use it before this tile knows its own prefix. */
    uint32_t total = 0, local_start = 0;
    if (tid < RADIX) {
        total = bk_warps_exclusive(s_counts, WARPS, tid);
        bk_store_volatile(a.status + (size_t)tile * RADIX + tid, (tile == 0 ? ST_INCLUSIVE : ST_AGGREGATE) | total);
        /* Exclusive scan of the tile counts over digits: where each digit starts in the tile. */
        const uint32_t x = bk_warp_inclusive_sum(total, lane);
        if (lane == 31) s_warp_sum[warp] = x;
        local_start = x - total;
    }
    __syncthreads();
    if (tid < RADIX) {
        for (int w = 0; w < warp; ++w) local_start += s_warp_sum[w];
        s_local_start[tid] = local_start;
        /* Decoupled look-back (bk_lookback_prefix). */
        uint32_t prefix = 0;
        if (tile > 0) {
            prefix = bk_lookback_prefix(a.status, tile, tid);
            bk_store_volatile(a.status + (size_t)tile * RADIX + tid, ST_INCLUSIVE | (prefix + total));
        }
        s_base[tid] = a.offsets[tid] + prefix - local_start;
    }
    __syncthreads();

    /* Tile rank = where the digit starts in the tile + earlier warps' keys of that digit + rank
     * in the warp. Then the counters' space takes the keys in sorted order. */
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t d = bk_digit_of(key[j], a.shift, mask);
        rank[j] += s_local_start[d] + s_counts[warp * RADIX + d];
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < IPT; ++j) s_keys[rank[j]] = key[j];
    uint32_t val[IPT];
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t idx = warp_base + j * 32;
        val[j] = idx < a.n ? a.vals_in[idx] : 0u;
    }
    __syncthreads();

    /* Position i of the sorted tile goes to s_base[digit] + i: consecutive threads write
     * consecutive addresses within each digit's run. */
    const uint32_t valid = a.n - tile_base < (uint32_t)TILE ? a.n - tile_base : (uint32_t)TILE;
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t i = tid + j * THREADS;
        const K        k = s_keys[i];
        if (i < valid) keys_out[s_base[bk_digit_of(k, a.shift, mask)] + i] = k;
    }
#pragma unroll
    for (int j = 0; j < IPT; ++j) s_vals[rank[j]] = val[j];
    __syncthreads();
    /* Destinations are found again from the sorted keys, which costs a shared load per item
     * and saves IPT registers. */
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t i = tid + j * THREADS;
        if (i < valid) a.vals_out[s_base[bk_digit_of(s_keys[i], a.shift, mask)] + i] = s_vals[i];
    }
}

template <typename K, int THREADS, int IPT>
static int onesweep1_launch(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size)
{
    static int ready = 0;
    return bk_sort_pass_launch<K, THREADS, IPT>(onesweep_kernel<K, THREADS, IPT>, &ready, a, tiles, err, err_size);
}

int bk_gpu_ops_sort_v1_pass_u32(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size)
{
    return onesweep1_launch<uint32_t, 384, 16>(a, tiles, err, err_size);
}

int bk_gpu_ops_sort_v1_pass_u64(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size)
{
    return onesweep1_launch<uint64_t, 384, 12>(a, tiles, err, err_size);
}
