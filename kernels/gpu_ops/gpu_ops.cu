/* gpu_ops.cu - GPU reduction, histogram and stable radix sort behind src/gpu_ops/gpu_ops.h; CPU twins in
 * src/gpu_ops/gpu_ops_cpu.c, checks in tests/gpu_ops.c, timings against CUB in kernels/gpu_ops/bench/gpu_ops_bench.cu.
 *
 * Reduction: a grid of (SMs x resident blocks) threads reads 16-byte vectors, UNROLL of them in
 * flight per thread, folds them in registers (float sums: 16 values in float, then a double
 * accumulator), then warp shuffles and one shared-memory step per block. Each block writes one
 * partial; the last block to finish (threadfence + ticket, the CUDA threadFenceReduction sample)
 * folds the partials in a fixed order, so a result never depends on the run and there is one launch.
 *
 * Histogram: privatised tallies in shared memory (one per warp when they fit, which keeps same-bin
 * atomics of different warps apart), merged with one global atomicAdd per bin and block. When
 * bins * 4 bytes do not fit in a block's shared memory, one global atomic per key (resolved in L2).
 *
 * Sort: LSD radix sort, 8-bit digits, "onesweep" (Adinets & Merrill 2022): one kernel reads every
 * key once and counts all digits of all passes; a tiny kernel scans them; then one kernel per digit
 * reads the pairs once and writes them once. A tile ranks its keys in shared memory (warp-level
 * match by 8 ballots, per-warp digit counters, a block scan), publishes its per-digit counts, and
 * finds the counts of all earlier tiles by decoupled look-back (Merrill & Garland 2016) over a
 * per-tile status word, 16 predecessors per step; keys and values then go through shared memory so
 * that each digit's run is written contiguously. Tiles take their index from an atomic counter, so
 * a tile only ever waits for tiles that are already running. Stable: within a tile a key's rank
 * follows its input position, and tiles are ordered by input position. onesweep2_kernel is the
 * product's pass: it hides more latency per tile (values staged by cp.async, early counts,
 * look-back after the shuffle) than the first version, which the bench keeps as variant 1 in
 * gpu_ops_variants.cu. The parts both passes share are in gpu_ops_sort.cuh. Numbers per
 * version: tools/gpu_ops_notes.md.
 */
#include "gpu_ops.h"
#include "gpu_ops_sort.cuh"

#include <cuda_runtime.h>
#include <cuda_pipeline.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <type_traits>

#define FAIL(...)                             \
    do {                                      \
        snprintf(err, err_size, __VA_ARGS__); \
        return -1;                            \
    } while (0)

/* RADIX, RADIX_BITS, LOOKBACK_WINDOW, the status word and CUDA_TRY: gpu_ops_sort.cuh */
enum { RED_THREADS = 256, HIST_THREADS = 256, MAX_PASSES = 8 };

struct bk_gpu_ops {
    int       device;
    int       sm_count;
    int       smem_optin; /* bytes of shared memory a block may ask for */
    char      name[256];
    int       variant[BK_GPU_OP_COUNT];
    void     *d_partials; /* reduce: one 8-byte partial per block */
    int       partials_cap;
    unsigned *d_ticket;                /* reduce: blocks finished; the last one resets it */
    void     *d_tmp_keys, *d_tmp_vals; /* sort: the other half of the ping-pong */
    size_t    tmp_keys_bytes, tmp_vals_bytes;
    uint32_t *d_sort; /* sort: [tile counters 8 | digit counts 8 x 256 | status 2 x tiles x 256] */
    size_t    sort_words;
};

/* ------------------------------------------------------------------------------------------ */
/* Reduction                                                                                   */

enum { OP_SUM = 0, OP_MIN = 1, OP_MAX = 2 };

template <typename T> __device__ __forceinline__ T from_bits(uint32_t u);
template <> __device__ __forceinline__ float       from_bits<float>(uint32_t u) { return __uint_as_float(u); }
template <> __device__ __forceinline__ uint32_t    from_bits<uint32_t>(uint32_t u) { return u; }
template <> __device__ __forceinline__ int32_t     from_bits<int32_t>(uint32_t u) { return (int32_t)u; }

template <typename A, int OP> __device__ __forceinline__ A red_identity();
template <> __device__ __forceinline__ double              red_identity<double, OP_SUM>() { return 0.0; }
template <> __device__ __forceinline__ uint64_t            red_identity<uint64_t, OP_SUM>() { return 0; }
template <> __device__ __forceinline__ int64_t             red_identity<int64_t, OP_SUM>() { return 0; }
template <> __device__ __forceinline__ float red_identity<float, OP_MIN>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ float red_identity<float, OP_MAX>() { return __int_as_float((int)0xff800000u); }
template <> __device__ __forceinline__ uint32_t red_identity<uint32_t, OP_MIN>() { return 0xFFFFFFFFu; }
template <> __device__ __forceinline__ uint32_t red_identity<uint32_t, OP_MAX>() { return 0u; }
template <> __device__ __forceinline__ int32_t  red_identity<int32_t, OP_MIN>() { return 0x7FFFFFFF; }
template <> __device__ __forceinline__ int32_t  red_identity<int32_t, OP_MAX>() { return (int32_t)0x80000000u; }

template <int OP, typename A> __device__ __forceinline__ A red_op(A a, A b)
{
    if (OP == OP_SUM) return a + b;
    if (OP == OP_MIN) return b < a ? b : a;
    return b > a ? b : a;
}
template <> __device__ __forceinline__ float red_op<OP_MIN, float>(float a, float b) { return fminf(a, b); }
template <> __device__ __forceinline__ float red_op<OP_MAX, float>(float a, float b) { return fmaxf(a, b); }

/* Fold U loaded vectors into the accumulator type. A float sum adds the 4U values pairwise in
 * float (error ~log2(4U) eps of their magnitude) and crosses to double once. */
template <typename T, typename A, int OP, int U> __device__ __forceinline__ A red_chunk(const uint4 (&v)[U])
{
    if constexpr (OP == OP_SUM && sizeof(A) == 8 && sizeof(T) == 4 && std::is_same<T, float>::value) {
        float s[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            s[u] = (__uint_as_float(v[u].x) + __uint_as_float(v[u].y)) +
                   (__uint_as_float(v[u].z) + __uint_as_float(v[u].w));
#pragma unroll
        for (int w = 1; w < U; w *= 2)
#pragma unroll
            for (int u = 0; u + w < U; u += 2 * w) s[u] += s[u + w];
        return (A)s[0];
    } else {
        A r = red_identity<A, OP>();
#pragma unroll
        for (int u = 0; u < U; ++u) {
            r = red_op<OP>(r, (A)from_bits<T>(v[u].x));
            r = red_op<OP>(r, (A)from_bits<T>(v[u].y));
            r = red_op<OP>(r, (A)from_bits<T>(v[u].z));
            r = red_op<OP>(r, (A)from_bits<T>(v[u].w));
        }
        return r;
    }
}

template <int OP, typename A> __device__ __forceinline__ A warp_reduce(A v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = red_op<OP>(v, __shfl_down_sync(0xffffffffu, v, o));
    return v;
}

/* Result valid in thread 0. s_warp holds 32 entries; the caller syncs before reusing it. */
template <int OP, typename A> __device__ __forceinline__ A block_reduce(A v, A *s_warp)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce<OP>(v);
    if (lane == 0) s_warp[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? s_warp[lane] : red_identity<A, OP>();
        v = warp_reduce<OP>(v);
    }
    return v;
}

template <typename T, typename A, typename O, int OP, int UNROLL>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_kernel(const T *__restrict__ in, uint64_t n, A *partials, unsigned *ticket, O *out)
{
    __shared__ A   s_warp[32];
    __shared__ int s_last;
    const uint64_t gtid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    /* Unaligned head (0..3 values before the first 16-byte boundary), vector body, tail. */
    uint64_t head = ((16u - ((uintptr_t)in & 15u)) & 15u) >> 2;
    if (head > n) head = n;
    const uint64_t nvec = (n - head) >> 2;
    const uint4   *vin = (const uint4 *)(in + head);
    A              acc = red_identity<A, OP>();
    uint64_t       i = gtid;
    for (; i + (UNROLL - 1) * stride < nvec; i += UNROLL * stride) {
        uint4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = __ldg(vin + i + u * stride);
        acc = red_op<OP>(acc, red_chunk<T, A, OP, UNROLL>(v));
    }
    for (; i < nvec; i += stride) {
        uint4 v[1] = { __ldg(vin + i) };
        acc = red_op<OP>(acc, red_chunk<T, A, OP, 1>(v));
    }
    const uint64_t tail0 = head + 4 * nvec;
    if (gtid < head) acc = red_op<OP>(acc, (A)in[gtid]);
    if (gtid < n - tail0) acc = red_op<OP>(acc, (A)in[tail0 + gtid]);

    A total = block_reduce<OP>(acc, s_warp);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = total;
        __threadfence();
        s_last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    A a = red_identity<A, OP>();
    for (unsigned j = threadIdx.x; j < gridDim.x; j += blockDim.x) a = red_op<OP>(a, ((volatile A *)partials)[j]);
    a = block_reduce<OP>(a, s_warp);
    if (threadIdx.x == 0) {
        *out = (O)a;
        *ticket = 0;
    }
}

/* Resident blocks per SM of one kernel, asked once. */
template <typename K> static int blocks_per_sm(K kernel, int threads, size_t smem)
{
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, threads, smem) != cudaSuccess || b < 1) b = 1;
    return b;
}

template <typename T, typename A, typename O, int OP, int UNROLL>
static int reduce_launch(bk_gpu_ops *p, const T *d_in, uint64_t n, O *d_out, char *err, size_t err_size)
{
    auto       k = reduce_kernel<T, A, O, OP, UNROLL>;
    static int per_sm = 0;
    if (!per_sm) per_sm = blocks_per_sm(k, RED_THREADS, 0);
    uint64_t nvec = n / 4;
    uint64_t blocks = (nvec + (uint64_t)RED_THREADS * UNROLL - 1) / ((uint64_t)RED_THREADS * UNROLL);
    uint64_t most = (uint64_t)per_sm * p->sm_count;
    if (most > (uint64_t)p->partials_cap) most = p->partials_cap;
    if (blocks > most) blocks = most;
    if (blocks < 1) blocks = 1;
    k<<<(unsigned)blocks, RED_THREADS>>>(d_in, n, (A *)p->d_partials, p->d_ticket, d_out);
    CUDA_TRY(cudaGetLastError());
    DEBUG_SYNC();
    return 0;
}

template <typename T, typename A, typename O, int OP>
static int reduce_dispatch(bk_gpu_ops *p, const T *d_in, uint64_t n, O *d_out, char *err, size_t err_size)
{
    if (!p || !d_out || (n && !d_in)) FAIL("reduce: NULL context or pointer");
    if (((uintptr_t)d_in & 3u) != 0) FAIL("reduce: input not aligned to 4 bytes");
    switch (p->variant[BK_GPU_OP_REDUCE]) {
    case 1: return reduce_launch<T, A, O, OP, 2>(p, d_in, n, d_out, err, err_size);
    case 3: return reduce_launch<T, A, O, OP, 8>(p, d_in, n, d_out, err, err_size);
    default: return reduce_launch<T, A, O, OP, 4>(p, d_in, n, d_out, err, err_size);
    }
}

#define BK_REDUCE(NAME, T, A, O, OP)                                                                    \
    extern "C" int NAME(bk_gpu_ops *p, const T *d_in, uint64_t n, O *d_out, char *err, size_t err_size) \
    {                                                                                                   \
        return reduce_dispatch<T, A, O, OP>(p, d_in, n, d_out, err, err_size);                          \
    }

BK_REDUCE(bk_gpu_ops_reduce_sum_f32, float, double, float, OP_SUM)
BK_REDUCE(bk_gpu_ops_reduce_min_f32, float, float, float, OP_MIN)
BK_REDUCE(bk_gpu_ops_reduce_max_f32, float, float, float, OP_MAX)
BK_REDUCE(bk_gpu_ops_reduce_sum_u32, uint32_t, uint64_t, uint64_t, OP_SUM)
BK_REDUCE(bk_gpu_ops_reduce_min_u32, uint32_t, uint32_t, uint32_t, OP_MIN)
BK_REDUCE(bk_gpu_ops_reduce_max_u32, uint32_t, uint32_t, uint32_t, OP_MAX)
BK_REDUCE(bk_gpu_ops_reduce_sum_i32, int32_t, int64_t, int64_t, OP_SUM)
BK_REDUCE(bk_gpu_ops_reduce_min_i32, int32_t, int32_t, int32_t, OP_MIN)
BK_REDUCE(bk_gpu_ops_reduce_max_i32, int32_t, int32_t, int32_t, OP_MAX)

/* ------------------------------------------------------------------------------------------ */
/* Histogram                                                                                   */

enum { HIST_UNROLL = 4 };

/* Calls f(key) for every key, 16-byte loads with HIST_UNROLL in flight; grid-stride. */
template <typename F> __device__ __forceinline__ void for_each_key(const uint32_t *__restrict__ keys, uint64_t n, F f)
{
    const uint64_t gtid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    uint64_t       head = ((16u - ((uintptr_t)keys & 15u)) & 15u) >> 2;
    if (head > n) head = n;
    const uint64_t nvec = (n - head) >> 2;
    const uint4   *v = (const uint4 *)(keys + head);
    uint64_t       i = gtid;
    for (; i + (HIST_UNROLL - 1) * stride < nvec; i += HIST_UNROLL * stride) {
        uint4 q[HIST_UNROLL];
#pragma unroll
        for (int u = 0; u < HIST_UNROLL; ++u) q[u] = __ldg(v + i + u * stride);
#pragma unroll
        for (int u = 0; u < HIST_UNROLL; ++u) {
            f(q[u].x);
            f(q[u].y);
            f(q[u].z);
            f(q[u].w);
        }
    }
    for (; i < nvec; i += stride) {
        uint4 q = __ldg(v + i);
        f(q.x);
        f(q.y);
        f(q.z);
        f(q.w);
    }
    const uint64_t tail0 = head + 4 * nvec;
    if (gtid < head) f(keys[gtid]);
    if (gtid < n - tail0) f(keys[tail0 + gtid]);
}

/* copies tallies of bins counters each; warp w uses copy w % copies. */
__global__ void __launch_bounds__(HIST_THREADS)
    hist_shared_kernel(const uint32_t *__restrict__ keys, uint64_t n, uint32_t bins, uint32_t copies, uint32_t *counts)
{
    extern __shared__ uint32_t sh[];
    for (uint32_t j = threadIdx.x; j < copies * bins; j += blockDim.x) sh[j] = 0;
    __syncthreads();
    uint32_t *h = sh + ((threadIdx.x >> 5) % copies) * bins;
    for_each_key(keys, n, [&](uint32_t k) {
        if (k < bins) atomicAdd(h + k, 1u);
    });
    __syncthreads();
    for (uint32_t b = threadIdx.x; b < bins; b += blockDim.x) {
        uint32_t s = 0;
        for (uint32_t c = 0; c < copies; ++c) s += sh[c * bins + b];
        if (s) atomicAdd(counts + b, s);
    }
}

__global__ void __launch_bounds__(HIST_THREADS)
    hist_global_kernel(const uint32_t *__restrict__ keys, uint64_t n, uint32_t bins, uint32_t *counts)
{
    for_each_key(keys, n, [&](uint32_t k) {
        if (k < bins) atomicAdd(counts + k, 1u);
    });
}

extern "C" uint32_t bk_gpu_ops_histogram_shared_max_bins(const bk_gpu_ops *p)
{
    return p ? (uint32_t)(p->smem_optin / 4) : 0;
}

extern "C" int bk_gpu_ops_histogram_u32(bk_gpu_ops *p, const uint32_t *d_keys, uint64_t n, uint32_t bins,
                                        uint32_t *d_counts, char *err, size_t err_size)
{
    if (!p || (bins && !d_counts) || (n && !d_keys)) FAIL("histogram: NULL context or pointer");
    if (((uintptr_t)d_keys & 3u) != 0) FAIL("histogram: keys not aligned to 4 bytes");
    if (!bins) return 0;
    CUDA_TRY(cudaMemsetAsync(d_counts, 0, sizeof(uint32_t) * bins));
    if (!n) return 0;
    const int      v = p->variant[BK_GPU_OP_HISTOGRAM];
    const uint64_t nvec = n / 4 + 1;
    uint64_t       need = (nvec + (uint64_t)HIST_THREADS * HIST_UNROLL - 1) / ((uint64_t)HIST_THREADS * HIST_UNROLL);
    if ((uint64_t)bins * 4 <= (uint64_t)p->smem_optin && v != 3) {
        /* One tally per warp while 8 of them fit in 32 KB (bins <= 1024), fewer above, at least one. */
        const uint32_t warps = HIST_THREADS / 32;
        uint32_t       copies = v == 1 ? 1 : (uint32_t)((32u * 1024u) / (bins * 4u));
        if (copies > warps) copies = warps;
        if (copies < 1) copies = 1;
        size_t smem = (size_t)copies * bins * 4;
        if (smem > 48 * 1024)
            CUDA_TRY(cudaFuncSetAttribute(hist_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        int      per_sm = blocks_per_sm(hist_shared_kernel, HIST_THREADS, smem);
        uint64_t blocks = (uint64_t)per_sm * p->sm_count;
        if (blocks > need) blocks = need;
        hist_shared_kernel<<<(unsigned)blocks, HIST_THREADS, smem>>>(d_keys, n, bins, copies, d_counts);
    } else {
        static int per_sm = 0;
        if (!per_sm) per_sm = blocks_per_sm(hist_global_kernel, HIST_THREADS, 0);
        uint64_t blocks = (uint64_t)per_sm * p->sm_count;
        if (blocks > need) blocks = need;
        hist_global_kernel<<<(unsigned)blocks, HIST_THREADS>>>(d_keys, n, bins, d_counts);
    }
    CUDA_TRY(cudaGetLastError());
    DEBUG_SYNC();
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Radix sort                                                                                  */

/* Digit counts of every pass in one read of the keys (16-byte loads, two in flight per thread);
 * one global atomic per digit and block. */
template <typename K>
__global__ void __launch_bounds__(256)
    sort_hist_kernel(const K *__restrict__ keys, uint32_t n, int end_bit, uint32_t *counts)
{
    constexpr int       PER = 16 / sizeof(K); /* keys in one 16-byte load */
    __shared__ uint32_t sh[MAX_PASSES][RADIX];
    const int           passes = (end_bit + RADIX_BITS - 1) / RADIX_BITS;
    for (int j = threadIdx.x; j < MAX_PASSES * RADIX; j += blockDim.x) (&sh[0][0])[j] = 0;
    __syncthreads();
    auto count = [&](K k) {
#pragma unroll
        for (int p = 0; p < MAX_PASSES; ++p) {
            if (p < passes) {
                const int bits = end_bit - p * RADIX_BITS < RADIX_BITS ? end_bit - p * RADIX_BITS : RADIX_BITS;
                atomicAdd(&sh[p][bk_digit_of(k, p * RADIX_BITS, (1u << bits) - 1u)], 1u);
            }
        }
    };
    const uint32_t gtid = blockIdx.x * blockDim.x + threadIdx.x, stride = gridDim.x * blockDim.x;
    uint32_t       head = (uint32_t)(((16u - ((uintptr_t)keys & 15u)) & 15u) / sizeof(K));
    if (head > n) head = n;
    const uint32_t nvec = (n - head) / PER;
    const uint4   *v = (const uint4 *)(keys + head);
    uint32_t       i = gtid;
    for (; i + stride < nvec; i += 2 * stride) {
        const uint4 a = __ldg(v + i), b = __ldg(v + i + stride);
        const K    *ka = (const K *)&a, *kb = (const K *)&b;
#pragma unroll
        for (int e = 0; e < PER; ++e) {
            count(ka[e]);
            count(kb[e]);
        }
    }
    for (; i < nvec; i += stride) {
        const uint4 a = __ldg(v + i);
        const K    *ka = (const K *)&a;
#pragma unroll
        for (int e = 0; e < PER; ++e) count(ka[e]);
    }
    const uint32_t tail0 = head + nvec * PER;
    if (gtid < head) count(keys[gtid]);
    if (gtid < n - tail0) count(keys[tail0 + gtid]);
    __syncthreads();
    for (int j = threadIdx.x; j < passes * RADIX; j += blockDim.x) {
        uint32_t c = (&sh[0][0])[j];
        if (c) atomicAdd(counts + j, c);
    }
}

/* In place: counts[p][d] becomes the number of keys with a smaller digit d in pass p. */
__global__ void __launch_bounds__(RADIX) sort_scan_kernel(uint32_t *counts)
{
    __shared__ uint32_t s_warp[RADIX / 32];
    uint32_t           *c = counts + blockIdx.x * RADIX;
    const uint32_t      v = c[threadIdx.x];
    const int           lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    uint32_t            x = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    if (lane == 31) s_warp[warp] = x;
    __syncthreads();
    uint32_t before = 0;
    for (int w = 0; w < warp; ++w) before += s_warp[w];
    c[threadIdx.x] = before + x - v;
}

/* One digit pass. THREADS >= RADIX: threads 0..255 each own one digit for the counting, the
 * look-back and the scatter bases. This is the second version of the pass; against the first
 * (gpu_ops_variants.cu), same result, fewer exposed latencies per tile:
 *  - values go from global to shared memory with cp.async (LDGSTS) as the tile starts, so they
 *    arrive while the keys are ranked instead of being waited for afterwards;
 *  - "early counts" (as in CUB's BlockRadixRankMatchEarlyCounts): per-warp digit counts by shared
 *    atomics right after the keys arrive, so the tile publishes its aggregate before ranking, and
 *    the warp counters start at the final tile offsets, so a match gives the final rank at once;
 *  - the look-back runs after the keys and values are shuffled in shared memory, by which time
 *    the tiles before have usually published their inclusive prefixes;
 *  - full tiles load and store without bounds checks, and one loop scatters keys and values. */
template <typename K, int THREADS, int IPT, int MINB>
__global__ void __launch_bounds__(THREADS, MINB) onesweep2_kernel(bk_sort_pass_args a)
{
    constexpr int WARPS = THREADS / 32, TILE = THREADS * IPT;
    static_assert(THREADS >= RADIX && THREADS % 32 == 0, "one thread per digit");
    static_assert(WARPS * RADIX * 4 <= TILE * (int)sizeof(K), "digit counters fit in the key space");
    static_assert(TILE % 4 == 0, "values are staged in 16-byte pieces");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    K                                            *s_keys = (K *)smem_raw;           /* [TILE], sorted keys */
    uint32_t                                     *s_counts = (uint32_t *)smem_raw;  /* [WARPS][RADIX], before */
    uint32_t           *s_vals = (uint32_t *)(smem_raw + (size_t)TILE * sizeof(K)); /* [TILE] staged, then sorted */
    __shared__ uint32_t s_tile, s_base[RADIX], s_warp_sum[RADIX / 32];

    const int      tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const uint32_t mask = (1u << a.bits) - 1u;

    if (tid == 0) s_tile = atomicAdd(a.tile_counter, 1u);
    for (int j = tid; j < WARPS * RADIX; j += THREADS) s_counts[j] = 0;
    __syncthreads();
    const uint32_t tile = s_tile;
    if (tid < RADIX) a.status_next[(size_t)tile * RADIX + tid] = 0;
    const uint32_t tile_base = tile * TILE;
    const bool     full = a.n - tile_base >= (uint32_t)TILE;

    /* Values: staged in input order. */
    const uint32_t *vsrc = a.vals_in + tile_base;
    if (full && a.vals_aligned) {
        for (int c = tid; c < TILE / 4; c += THREADS) __pipeline_memcpy_async(s_vals + 4 * c, vsrc + 4 * c, 16);
        __pipeline_commit();
    } else {
        for (int k = tid; k < TILE; k += THREADS) s_vals[k] = tile_base + k < a.n ? vsrc[k] : 0u;
    }

    /* Keys, warp-striped (warp w holds the 32 * IPT keys from tile_base + w * 32 * IPT, item j of
     * lane l at + j * 32 + l, so the warp's rank order is input order); past the end the largest
     * key, whose digit is the largest and which ranks after every real key as it comes last. */
    const uint32_t in_warp = warp * 32 * IPT + lane;
    const K       *kp = (const K *)a.keys_in + tile_base + in_warp;
    K              key[IPT];
    if (full) {
#pragma unroll
        for (int j = 0; j < IPT; ++j) key[j] = kp[j * 32];
    } else {
#pragma unroll
        for (int j = 0; j < IPT; ++j) key[j] = tile_base + in_warp + j * 32 < a.n ? kp[j * 32] : ~(K)0;
    }

    /* Early counts: each warp's digit histogram. */
    uint32_t *wc = s_counts + warp * RADIX;
#pragma unroll
    for (int j = 0; j < IPT; ++j) atomicAdd(wc + bk_digit_of(key[j], a.shift, mask), 1u);
    __syncthreads();

    /* Per digit: exclusive prefix over warps, the tile count published at once, then where the
     * digit starts in the tile, added to every warp's counter. */
    uint32_t total = 0, local_start = 0, incl = 0;
    if (tid < RADIX) {
        total = bk_warps_exclusive(s_counts, WARPS, tid);
        bk_store_volatile(a.status + (size_t)tile * RADIX + tid, (tile == 0 ? ST_INCLUSIVE : ST_AGGREGATE) | total);
        incl = bk_warp_inclusive_sum(total, lane);
        if (lane == 31) s_warp_sum[warp] = incl;
    }
    __syncthreads();
    if (tid < RADIX) {
        local_start = incl - total;
        for (int w = 0; w < warp; ++w) local_start += s_warp_sum[w];
        for (int w = 0; w < WARPS; ++w) s_counts[w * RADIX + tid] += local_start;
    }
    __syncthreads();

    /* Rank: lanes with equal digits find each other by 8 ballots; the lowest bumps the warp's
     * counter, which already holds the tile position of the warp's next key of that digit. */
    uint32_t       rank[IPT];
    const uint32_t lt = (1u << lane) - 1u;
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        rank[j] = bk_warp_match_rank(bk_digit_of(key[j], a.shift, mask), wc, lane, lt);
        __syncwarp();
    }
    if (full && a.vals_aligned) __pipeline_wait_prior(0);
    __syncthreads();

    /* Shuffle into sorted order: keys straight from registers, values via the staging copy. */
#pragma unroll
    for (int j = 0; j < IPT; ++j) s_keys[rank[j]] = key[j];
    uint32_t val[IPT];
#pragma unroll
    for (int j = 0; j < IPT; ++j) val[j] = s_vals[in_warp + j * 32];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < IPT; ++j) s_vals[rank[j]] = val[j];

    /* Decoupled look-back, LOOKBACK_WINDOW tiles per step. */
    if (tid < RADIX) {
        uint32_t prefix = 0;
        if (tile > 0) {
            prefix = bk_lookback_prefix(a.status, tile, tid);
            bk_store_volatile(a.status + (size_t)tile * RADIX + tid, ST_INCLUSIVE | (prefix + total));
        }
        s_base[tid] = a.offsets[tid] + prefix - local_start;
    }
    __syncthreads();

    /* Sorted position i goes to s_base[digit] + i, key and value together. */
    const uint32_t valid = full ? (uint32_t)TILE : a.n - tile_base;
    K *__restrict__ keys_out = (K *)a.keys_out;
#pragma unroll
    for (int j = 0; j < IPT; ++j) {
        const uint32_t i = tid + j * THREADS;
        if (full || i < valid) {
            const K        k = s_keys[i];
            const uint32_t dst = s_base[bk_digit_of(k, a.shift, mask)] + i;
            keys_out[dst] = k;
            a.vals_out[dst] = s_vals[i];
        }
    }
}

/* onesweep2_kernel, MINB resident blocks per SM asked of the register allocator (0: 3 blocks of
 * 256 threads, else 2). Variant 1 (the first kernel) is launched by gpu_ops_variants.cu. */
template <typename K, int THREADS, int IPT, int MINB = 0>
static int onesweep_launch(const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size)
{
    constexpr int minb = MINB ? MINB : (THREADS >= 384 ? 2 : 3);
    static int    ready = 0;
    return bk_sort_pass_launch<K, THREADS, IPT>(onesweep2_kernel<K, THREADS, IPT, minb>, &ready, a, tiles, err,
                                                err_size);
}

static int ensure(void **d, size_t *have, size_t want, char *err, size_t err_size)
{
    if (*have >= want) return 0;
    cudaFree(*d);
    *d = NULL;
    *have = 0;
    CUDA_TRY(cudaMalloc(d, want));
    *have = want;
    return 0;
}

/* Variants: threads x items per thread, kernel version, resident blocks asked for (0: the
 * version's usual). Index 0 is the default, chosen by `baker bench primitives --variants` on the
 * H100 (tools/gpu_ops_notes.md): larger tiles amortise each tile's fixed latency (barriers, look-back,
 * the first loads) and 2 blocks of 512 threads per SM keep enough loads in flight. Keep the three
 * tables in step. */
static const int sort32_shape[][4] = { { 512, 23, 2, 0 }, { 384, 16, 1, 0 }, { 384, 16, 2, 0 },
                                       { 384, 23, 2, 0 }, { 512, 20, 2, 0 }, { 512, 23, 2, 0 },
                                       { 384, 28, 2, 0 }, { 384, 32, 2, 0 }, { 768, 12, 2, 2 } };
static const int sort64_shape[][4] = { { 512, 13, 2, 0 }, { 384, 12, 1, 0 }, { 384, 12, 2, 0 },
                                       { 384, 15, 2, 0 }, { 512, 12, 2, 0 }, { 384, 17, 2, 0 },
                                       { 512, 13, 2, 0 }, { 448, 15, 2, 0 }, { 384, 18, 2, 0 } };

template <typename K>
static int sort_pass(int variant, const bk_sort_pass_args &a, uint32_t tiles, char *err, size_t err_size)
{
    if constexpr (sizeof(K) == 4) {
        switch (variant) {
        case 1: return bk_gpu_ops_sort_v1_pass_u32(a, tiles, err, err_size);
        case 2: return onesweep_launch<K, 384, 16>(a, tiles, err, err_size);
        case 3: return onesweep_launch<K, 384, 23>(a, tiles, err, err_size);
        case 4: return onesweep_launch<K, 512, 20>(a, tiles, err, err_size);
        case 6: return onesweep_launch<K, 384, 28>(a, tiles, err, err_size);
        case 7: return onesweep_launch<K, 384, 32>(a, tiles, err, err_size);
        case 8: return onesweep_launch<K, 768, 12, 2>(a, tiles, err, err_size);
        default: return onesweep_launch<K, 512, 23>(a, tiles, err, err_size);
        }
    } else {
        switch (variant) {
        case 1: return bk_gpu_ops_sort_v1_pass_u64(a, tiles, err, err_size);
        case 2: return onesweep_launch<K, 384, 12>(a, tiles, err, err_size);
        case 3: return onesweep_launch<K, 384, 15>(a, tiles, err, err_size);
        case 4: return onesweep_launch<K, 512, 12>(a, tiles, err, err_size);
        case 5: return onesweep_launch<K, 384, 17>(a, tiles, err, err_size);
        case 7: return onesweep_launch<K, 448, 15>(a, tiles, err, err_size);
        case 8: return onesweep_launch<K, 384, 18>(a, tiles, err, err_size);
        default: return onesweep_launch<K, 512, 13>(a, tiles, err, err_size);
        }
    }
}

/* The tiles of a sort of n keys of type K, and room for its ping-pong and status words. */
template <typename K> static int sort_room(bk_gpu_ops *p, uint64_t n, uint32_t *tiles_out, char *err, size_t err_size)
{
    const int      op = sizeof(K) == 4 ? BK_GPU_OP_SORT32 : BK_GPU_OP_SORT64;
    const int     *shape = sizeof(K) == 4 ? sort32_shape[p->variant[op]] : sort64_shape[p->variant[op]];
    const uint32_t tile = (uint32_t)(shape[0] * shape[1]);
    const uint32_t tiles = (uint32_t)((n + tile - 1) / tile);
    if (ensure(&p->d_tmp_keys, &p->tmp_keys_bytes, n * sizeof(K), err, err_size) ||
        ensure(&p->d_tmp_vals, &p->tmp_vals_bytes, n * 4, err, err_size))
        return -1;
    const size_t head_words = MAX_PASSES + MAX_PASSES * RADIX;
    const size_t status_words = (size_t)tiles * RADIX;
    size_t       have = p->sort_words * 4;
    if (ensure((void **)&p->d_sort, &have, (head_words + 2 * status_words) * 4, err, err_size)) return -1;
    p->sort_words = have / 4;
    *tiles_out = tiles;
    return 0;
}

extern "C" int bk_gpu_ops_sort_reserve_u32(bk_gpu_ops *p, uint64_t n, char *err, size_t err_size)
{
    uint32_t tiles;
    if (!p) FAIL("sort: NULL context");
    return sort_room<uint32_t>(p, n, &tiles, err, err_size);
}

template <typename K>
static int sort_pairs(bk_gpu_ops *p, const K *d_keys_in, K *d_keys_out, const uint32_t *d_vals_in, uint32_t *d_vals_out,
                      uint64_t n, int end_bit, char *err, size_t err_size)
{
    const int key_bits = 8 * (int)sizeof(K);
    if (!p) FAIL("sort: NULL context");
    if (end_bit < 1 || end_bit > key_bits) FAIL("sort: end_bit %d is outside 1..%d", end_bit, key_bits);
    if (n >= (1ull << 30)) FAIL("sort: %llu pairs; the GPU sort takes fewer than 2^30", (unsigned long long)n);
    if (n == 0) return 0;
    if (!d_keys_in || !d_keys_out || !d_vals_in || !d_vals_out) FAIL("sort: NULL pointer");
    if (n == 1) {
        if (d_keys_out != d_keys_in)
            CUDA_TRY(cudaMemcpyAsync(d_keys_out, d_keys_in, sizeof(K), cudaMemcpyDeviceToDevice));
        if (d_vals_out != d_vals_in) CUDA_TRY(cudaMemcpyAsync(d_vals_out, d_vals_in, 4, cudaMemcpyDeviceToDevice));
        return 0;
    }
    const int op = sizeof(K) == 4 ? BK_GPU_OP_SORT32 : BK_GPU_OP_SORT64;
    const int variant = p->variant[op];
    const int passes = (end_bit + RADIX_BITS - 1) / RADIX_BITS;
    uint32_t  tiles;
    if (sort_room<K>(p, n, &tiles, err, err_size)) return -1;
    const size_t head_words = MAX_PASSES + MAX_PASSES * RADIX;
    const size_t status_words = (size_t)tiles * RADIX;
    uint32_t    *counters = p->d_sort, *digits = p->d_sort + MAX_PASSES;
    uint32_t    *status[2] = { p->d_sort + head_words, p->d_sort + head_words + status_words };
    /* Tile counters, digit counts and the first status array are contiguous: one memset. Each
     * pass clears the next pass's status rows itself. */
    CUDA_TRY(cudaMemsetAsync(p->d_sort, 0, (head_words + status_words) * 4));

    int      per_sm = blocks_per_sm(sort_hist_kernel<K>, 256, 0);
    uint64_t hblocks = (uint64_t)per_sm * p->sm_count, hneed = (n + 255) / 256;
    if (hblocks > hneed) hblocks = hneed;
    sort_hist_kernel<K><<<(unsigned)hblocks, 256>>>(d_keys_in, (uint32_t)n, end_bit, digits);
    CUDA_TRY(cudaGetLastError());
    sort_scan_kernel<<<passes, RADIX>>>(digits);
    CUDA_TRY(cudaGetLastError());

    /* The last pass must land in the output. Without aliasing, count back from it; when input
     * and output are the same arrays, the first pass must not write there, and an odd number of
     * passes ends in scratch and is copied back. */
    const int       alias = d_keys_in == d_keys_out || d_vals_in == d_vals_out;
    const void     *src_k = d_keys_in;
    const uint32_t *src_v = d_vals_in;
    for (int pass = 0; pass < passes; ++pass) {
        const int         to_out = alias ? (pass & 1) : ((passes - 1 - pass) & 1) == 0;
        bk_sort_pass_args a;
        a.keys_in = src_k;
        a.vals_in = src_v;
        a.keys_out = to_out ? (void *)d_keys_out : p->d_tmp_keys;
        a.vals_out = to_out ? d_vals_out : (uint32_t *)p->d_tmp_vals;
        a.n = (uint32_t)n;
        a.shift = pass * RADIX_BITS;
        a.bits = end_bit - a.shift < RADIX_BITS ? end_bit - a.shift : RADIX_BITS;
        a.offsets = digits + pass * RADIX;
        a.status = status[pass & 1];
        a.status_next = status[(pass + 1) & 1];
        a.tile_counter = counters + pass;
        a.vals_aligned = ((uintptr_t)src_v & 15u) == 0;
        if (sort_pass<K>(variant, a, tiles, err, err_size)) return -1;
        src_k = a.keys_out;
        src_v = a.vals_out;
    }
    if (src_k != (const void *)d_keys_out) {
        CUDA_TRY(cudaMemcpyAsync(d_keys_out, src_k, n * sizeof(K), cudaMemcpyDeviceToDevice));
        CUDA_TRY(cudaMemcpyAsync(d_vals_out, src_v, n * 4, cudaMemcpyDeviceToDevice));
    }
    return 0;
}

extern "C" int bk_gpu_ops_sort_pairs_u32(bk_gpu_ops *p, const uint32_t *d_keys_in, uint32_t *d_keys_out,
                                         const uint32_t *d_vals_in, uint32_t *d_vals_out, uint64_t n, int end_bit,
                                         char *err, size_t err_size)
{
    return sort_pairs<uint32_t>(p, d_keys_in, d_keys_out, d_vals_in, d_vals_out, n, end_bit, err, err_size);
}

extern "C" int bk_gpu_ops_sort_pairs_u64(bk_gpu_ops *p, const uint64_t *d_keys_in, uint64_t *d_keys_out,
                                         const uint32_t *d_vals_in, uint32_t *d_vals_out, uint64_t n, int end_bit,
                                         char *err, size_t err_size)
{
    return sort_pairs<uint64_t>(p, (const uint64_t *)d_keys_in, (uint64_t *)d_keys_out, d_vals_in, d_vals_out, n,
                                end_bit, err, err_size);
}

/* ------------------------------------------------------------------------------------------ */
/* Context, variants, device memory                                                            */

static const char *const variant_names[BK_GPU_OP_COUNT][9] = {
    { "default (unroll 4)", "unroll 2", "unroll 4", "unroll 8" },
    { "default (per-warp tallies)", "one shared tally per block", "per-warp shared tallies", "global atomics" },
    { "default (v2 512x23)", "v1 384x16", "v2 384x16", "v2 384x23", "v2 512x20", "v2 512x23", "v2 384x28", "v2 384x32",
      "v2 768x12" },
    { "default (v2 512x13)", "v1 384x12", "v2 384x12", "v2 384x15", "v2 512x12", "v2 384x17", "v2 512x13", "v2 448x15",
      "v2 384x18" },
};

extern "C" int bk_gpu_ops_variant_count(int op)
{
    static const int count[BK_GPU_OP_COUNT] = { 3, 3, 8, 8 };
    return op >= 0 && op < BK_GPU_OP_COUNT ? count[op] : 0;
}

extern "C" const char *bk_gpu_ops_variant_name(int op, int variant)
{
    if (variant < 0 || variant > bk_gpu_ops_variant_count(op)) return "unknown";
    return variant_names[op][variant];
}

extern "C" int bk_gpu_ops_set_variant(bk_gpu_ops *p, int op, int variant, char *err, size_t err_size)
{
    if (!p || variant < 0 || variant > bk_gpu_ops_variant_count(op)) FAIL("no variant %d of primitive %d", variant, op);
    p->variant[op] = variant;
    return 0;
}

extern "C" const char *bk_gpu_ops_device_name(const bk_gpu_ops *p) { return p ? p->name : "none"; }

extern "C" bk_gpu_ops *bk_gpu_ops_init(char *err, size_t err_size) { return bk_gpu_ops_init_device(0, err, err_size); }

extern "C" bk_gpu_ops *bk_gpu_ops_init_device(int device, char *err, size_t err_size)
{
    int         count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(err, err_size, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return NULL;
    }
    cudaDeviceProp prop;
    if (device < 0 || device >= count || cudaGetDeviceProperties(&prop, device) != cudaSuccess ||
        cudaSetDevice(device) != cudaSuccess) {
        snprintf(err, err_size, "cannot use CUDA device %d", device);
        return NULL;
    }
    bk_gpu_ops *p = (bk_gpu_ops *)calloc(1, sizeof(bk_gpu_ops));
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    p->device = device;
    p->sm_count = prop.multiProcessorCount;
    p->smem_optin = (int)prop.sharedMemPerBlockOptin;
    snprintf(p->name, sizeof p->name, "%s", prop.name);
    p->partials_cap = p->sm_count * 32;
    if (cudaMalloc(&p->d_partials, (size_t)p->partials_cap * 8) != cudaSuccess ||
        cudaMalloc((void **)&p->d_ticket, sizeof(unsigned)) != cudaSuccess ||
        cudaMemset(p->d_ticket, 0, sizeof(unsigned)) != cudaSuccess) {
        snprintf(err, err_size, "CUDA device %d (%s) is not usable: %s", device, prop.name,
                 cudaGetErrorString(cudaGetLastError()));
        bk_gpu_ops_free(p);
        return NULL;
    }
    return p;
}

extern "C" int bk_gpu_ops_use(bk_gpu_ops *p, char *err, size_t err_size)
{
    if (!p) FAIL("use: NULL context");
    CUDA_TRY(cudaSetDevice(p->device));
    return 0;
}

extern "C" void bk_gpu_ops_free(bk_gpu_ops *p)
{
    if (!p) return;
    cudaFree(p->d_partials);
    cudaFree(p->d_ticket);
    cudaFree(p->d_tmp_keys);
    cudaFree(p->d_tmp_vals);
    cudaFree(p->d_sort);
    free(p);
}

extern "C" void *bk_gpu_ops_dev_alloc(size_t bytes, char *err, size_t err_size)
{
    void       *d = NULL;
    cudaError_t e = cudaMalloc(&d, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        snprintf(err, err_size, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
        return NULL;
    }
    return d;
}

extern "C" void bk_gpu_ops_dev_free(void *d) { cudaFree(d); }

extern "C" int bk_gpu_ops_dev_fill(void *d, int byte, size_t bytes, char *err, size_t err_size)
{
    CUDA_TRY(cudaMemset(d, byte, bytes));
    return 0;
}

extern "C" int bk_gpu_ops_to_dev(void *d_dst, const void *src, size_t bytes, char *err, size_t err_size)
{
    if (bytes) CUDA_TRY(cudaMemcpy(d_dst, src, bytes, cudaMemcpyHostToDevice));
    return 0;
}

extern "C" int bk_gpu_ops_to_host(void *dst, const void *d_src, size_t bytes, char *err, size_t err_size)
{
    if (bytes) CUDA_TRY(cudaMemcpy(dst, d_src, bytes, cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaGetLastError());
    return 0;
}
