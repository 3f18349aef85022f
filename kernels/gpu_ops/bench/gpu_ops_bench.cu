/* gpu_ops_bench.cu - `baker bench primitives`: our reduction, histogram and radix sort (gpu_ops.cu)
 * against CUB's (it ships with the toolkit) for sizes 2^min..2^max, and the three ways of
 * aggregating a global counter on a synthetic work-claiming kernel.
 *
 * Every row is checked before it is timed (ours against CUB: integers and sorts exactly, float
 * sums within 1e-5 relative) and says so in the "ok" column. Times are the median of --reps runs
 * after two warm-ups, taken with CUDA events; the L2 cache is flushed (a 256 MB memset) before
 * each timed run so that sizes under 50 MB are not served from it. GB/s counts the bytes a
 * primitive must move at least (its input read once, its output written once), and %copy relates
 * that to a device-to-device cudaMemcpy measured in the same run (bytes read + written).
 * --variants also times each kernel variant of gpu_ops.cu and gpu_ops_variants.cu at 2^max.
 */
#include <cub/cub.cuh>

#include "gpu_ops.h"
extern "C" {
#include "bench.h"
}

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(expr)                                                                                                  \
    do {                                                                                                          \
        cudaError_t e_ = (expr);                                                                                  \
        if (e_ != cudaSuccess) {                                                                                  \
            fprintf(stderr, "CUDA error in %s: %s (%s:%d)\n", #expr, cudaGetErrorString(e_), __FILE__, __LINE__); \
            exit(1);                                                                                              \
        }                                                                                                         \
    } while (0)
#define PK(...)                                                                                \
    do {                                                                                       \
        if ((__VA_ARGS__) != 0) {                                                              \
            fprintf(stderr, "%s failed: %s (%s:%d)\n", #__VA_ARGS__, err, __FILE__, __LINE__); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static char err[512];

/* ---- data ---------------------------------------------------------------------------------- */

__device__ __forceinline__ uint32_t mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* mod 0: full 32 bits; else uniform-ish in [0, mod). */
__global__ void gen_u32(uint32_t *p, uint64_t n, uint32_t seed, uint32_t mod)
{
    const uint32_t s = mix32(seed * 0x9e3779b9u + 1u);
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t h = mix32((uint32_t)i ^ s) ^ mix32((uint32_t)(i >> 32) + s);
        p[i] = mod ? h % mod : h;
    }
}

__global__ void gen_u64(uint64_t *p, uint64_t n, uint32_t seed)
{
    const uint32_t s = mix32(seed * 0x9e3779b9u + 7u);
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = ((uint64_t)mix32((uint32_t)(2 * i) ^ s) << 32) | mix32((uint32_t)(2 * i + 1) ^ mix32(s));
}

__global__ void gen_f32(float *p, uint64_t n, uint32_t seed)
{
    const uint32_t s = mix32(seed * 0x9e3779b9u + 3u);
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = (float)(mix32((uint32_t)i ^ s) >> 8) * (1.0f / 16777216.0f);
}

__global__ void gen_iota(uint32_t *p, uint64_t n)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)i;
}

__global__ void count_diff(const uint32_t *a, const uint32_t *b, uint64_t n, unsigned long long *bad)
{
    unsigned c = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        c += a[i] != b[i];
    c = __reduce_add_sync(0xffffffffu, c);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(bad, (unsigned long long)c);
}

static const unsigned GEN_BLOCKS = 132 * 8, GEN_THREADS = 256;

static unsigned long long *d_bad;

static unsigned long long diff_words(const void *a, const void *b, uint64_t words)
{
    CK(cudaMemset(d_bad, 0, 8));
    count_diff<<<GEN_BLOCKS, GEN_THREADS>>>((const uint32_t *)a, (const uint32_t *)b, words, d_bad);
    CK(cudaGetLastError());
    unsigned long long h = 0;
    CK(cudaMemcpy(&h, d_bad, 8, cudaMemcpyDeviceToHost));
    return h;
}

/* ---- timing -------------------------------------------------------------------------------- */

struct timer {
    cudaEvent_t a, b;
    void       *flush;
    size_t      flush_bytes;
    int         reps;
};

template <class F> static double time_ms(timer &t, F &&f)
{
    f();
    f();
    CK(cudaDeviceSynchronize());
    std::vector<float> v;
    for (int r = 0; r < t.reps; ++r) {
        CK(cudaMemsetAsync(t.flush, r & 0xff, t.flush_bytes));
        CK(cudaEventRecord(t.a));
        f();
        CK(cudaEventRecord(t.b));
        CK(cudaEventSynchronize(t.b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, t.a, t.b));
        v.push_back(ms);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static double copy_gbs;

static void print_header(void)
{
    printf("%-22s %5s %9s %9s %6s %9s %6s %9s %4s\n", "op", "log2n", "ours_ms", "cub_ms", "x_cub", "ours_GB/s", "%copy",
           "cub_GB/s", "ok");
}

static void print_row(const char *op, int lg, double bytes, double ours, double cub, int ok)
{
    const double g1 = bytes / (ours * 1e6), g2 = bytes / (cub * 1e6);
    printf("%-22s %5d %9.4f %9.4f %6.3f %9.1f %5.1f%% %9.1f %4s\n", op, lg, ours, cub, cub / ours, g1,
           100.0 * g1 / copy_gbs, g2, ok ? "ok" : "FAIL");
    fflush(stdout);
}

/* ---- buffers ------------------------------------------------------------------------------- */

struct bufs {
    void  *in, *vals, *k1, *v1, *k2, *v2, *small1, *small2, *cub_tmp;
    size_t cub_tmp_bytes;
};

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CK(cudaMalloc(&p, bytes));
    return p;
}

/* ---- the primitives ------------------------------------------------------------------------ */

enum { R_SUM, R_MIN, R_MAX };

template <typename T, typename O, int OP>
static int run_ours_reduce(bk_gpu_ops *p, const void *in, uint64_t n, void *out)
{
    if constexpr (std::is_same<T, float>::value) {
        if (OP == R_SUM) return bk_gpu_ops_reduce_sum_f32(p, (const float *)in, n, (float *)out, err, sizeof err);
        if (OP == R_MIN) return bk_gpu_ops_reduce_min_f32(p, (const float *)in, n, (float *)out, err, sizeof err);
        return bk_gpu_ops_reduce_max_f32(p, (const float *)in, n, (float *)out, err, sizeof err);
    } else {
        if (OP == R_SUM) return bk_gpu_ops_reduce_sum_u32(p, (const uint32_t *)in, n, (uint64_t *)out, err, sizeof err);
        if (OP == R_MIN) return bk_gpu_ops_reduce_min_u32(p, (const uint32_t *)in, n, (uint32_t *)out, err, sizeof err);
        return bk_gpu_ops_reduce_max_u32(p, (const uint32_t *)in, n, (uint32_t *)out, err, sizeof err);
    }
}

template <typename T, typename O, int OP> static void run_cub_reduce(bufs &b, uint64_t n, void *out)
{
    size_t bytes = b.cub_tmp_bytes;
    if (OP == R_SUM) CK(cub::DeviceReduce::Sum(b.cub_tmp, bytes, (const T *)b.in, (O *)out, (int64_t)n));
    if (OP == R_MIN) CK(cub::DeviceReduce::Min(b.cub_tmp, bytes, (const T *)b.in, (O *)out, (int64_t)n));
    if (OP == R_MAX) CK(cub::DeviceReduce::Max(b.cub_tmp, bytes, (const T *)b.in, (O *)out, (int64_t)n));
}

template <typename T, typename O, int OP>
static void bench_reduce(bk_gpu_ops *p, bufs &b, timer &t, const char *name, int lg, uint32_t seed)
{
    const uint64_t n = 1ull << lg;
    if (std::is_same<T, float>::value) gen_f32<<<GEN_BLOCKS, GEN_THREADS>>>((float *)b.in, n, seed);
    else gen_u32<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.in, n, seed, 0);
    CK(cudaGetLastError());
    CK(cudaMemset(b.small1, 0xAB, 8));
    CK(cudaMemset(b.small2, 0xCD, 8));
    PK(run_ours_reduce<T, O, OP>(p, b.in, n, b.small1));
    run_cub_reduce<T, O, OP>(b, n, b.small2);
    O r1, r2;
    CK(cudaMemcpy(&r1, b.small1, sizeof(O), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&r2, b.small2, sizeof(O), cudaMemcpyDeviceToHost));
    int ok;
    if (std::is_same<O, float>::value && OP == R_SUM) ok = fabs((double)r1 - (double)r2) <= 1e-5 * fabs((double)r2);
    else ok = r1 == r2;
    double ours = time_ms(t, [&] { PK(run_ours_reduce<T, O, OP>(p, b.in, n, b.small1)); });
    double cub = time_ms(t, [&] { run_cub_reduce<T, O, OP>(b, n, b.small2); });
    print_row(name, lg, 4.0 * n, ours, cub, ok);
}

static void run_cub_hist(bufs &b, uint64_t n, uint32_t bins, void *out)
{
    size_t bytes = b.cub_tmp_bytes;
    CK(cub::DeviceHistogram::HistogramEven(b.cub_tmp, bytes, (const uint32_t *)b.in, (unsigned *)out, (int)bins + 1, 0u,
                                           bins, (int64_t)n));
}

static void bench_hist(bk_gpu_ops *p, bufs &b, timer &t, const char *name, int lg, uint32_t bins, uint32_t seed)
{
    const uint64_t n = 1ull << lg;
    gen_u32<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.in, n, seed, bins);
    CK(cudaGetLastError());
    CK(cudaMemset(b.small1, 0xAB, 4ull * bins));
    CK(cudaMemset(b.small2, 0xCD, 4ull * bins));
    PK(bk_gpu_ops_histogram_u32(p, (const uint32_t *)b.in, n, bins, (uint32_t *)b.small1, err, sizeof err));
    run_cub_hist(b, n, bins, b.small2);
    int    ok = diff_words(b.small1, b.small2, bins) == 0;
    double ours = time_ms(t, [&] {
        PK(bk_gpu_ops_histogram_u32(p, (const uint32_t *)b.in, n, bins, (uint32_t *)b.small1, err, sizeof err));
    });
    double cub = time_ms(t, [&] { run_cub_hist(b, n, bins, b.small2); });
    print_row(name, lg, 4.0 * n + 4.0 * bins, ours, cub, ok);
}

template <typename K> static int run_ours_sort(bk_gpu_ops *p, bufs &b, uint64_t n, int end_bit)
{
    if constexpr (sizeof(K) == 4)
        return bk_gpu_ops_sort_pairs_u32(p, (const uint32_t *)b.in, (uint32_t *)b.k1, (const uint32_t *)b.vals,
                                         (uint32_t *)b.v1, n, end_bit, err, sizeof err);
    else
        return bk_gpu_ops_sort_pairs_u64(p, (const uint64_t *)b.in, (uint64_t *)b.k1, (const uint32_t *)b.vals,
                                         (uint32_t *)b.v1, n, end_bit, err, sizeof err);
}

template <typename K> static void run_cub_sort(bufs &b, uint64_t n, int end_bit)
{
    size_t bytes = b.cub_tmp_bytes;
    CK(cub::DeviceRadixSort::SortPairs(b.cub_tmp, bytes, (const K *)b.in, (K *)b.k2, (const uint32_t *)b.vals,
                                       (uint32_t *)b.v2, (int)n, 0, end_bit));
}

template <typename K> static void gen_sort_input(bufs &b, uint64_t n, uint32_t seed)
{
    if (sizeof(K) == 4) gen_u32<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.in, n, seed, 0);
    else gen_u64<<<GEN_BLOCKS, GEN_THREADS>>>((uint64_t *)b.in, n, seed);
    gen_iota<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.vals, n);
    CK(cudaGetLastError());
}

template <typename K> static int check_sort(bk_gpu_ops *p, bufs &b, uint64_t n, int end_bit)
{
    CK(cudaMemset(b.k1, 0xAB, n * sizeof(K)));
    CK(cudaMemset(b.v1, 0xAB, n * 4));
    CK(cudaMemset(b.k2, 0xCD, n * sizeof(K)));
    CK(cudaMemset(b.v2, 0xCD, n * 4));
    PK(run_ours_sort<K>(p, b, n, end_bit));
    run_cub_sort<K>(b, n, end_bit);
    return diff_words(b.k1, b.k2, n * sizeof(K) / 4) == 0 && diff_words(b.v1, b.v2, n) == 0;
}

template <typename K>
static void bench_sort(bk_gpu_ops *p, bufs &b, timer &t, const char *name, int lg, int end_bit, uint32_t seed)
{
    const uint64_t n = 1ull << lg;
    gen_sort_input<K>(b, n, seed);
    int    ok = check_sort<K>(p, b, n, end_bit);
    double ours = time_ms(t, [&] { PK(run_ours_sort<K>(p, b, n, end_bit)); });
    double cub = time_ms(t, [&] { run_cub_sort<K>(b, n, end_bit); });
    print_row(name, lg, 2.0 * n * (sizeof(K) + 4), ours, cub, ok);
}

/* ---- counter aggregation ------------------------------------------------------------------- */

/* One atomic the compiler cannot merge across the warp (it may do that to a plain atomicAdd with
 * a uniform address), so "thread" really issues one per thread. */
__device__ __forceinline__ unsigned long long atom_add_u64(unsigned long long *p, unsigned long long v)
{
    unsigned long long old;
    asm volatile("atom.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
    return old;
}

/* A persistent grid claims items from ctr[0] and counts keys with (key & 7) == 0 into ctr[1]:
 * MODE 0 one atomicAdd per thread and item, 1 one per warp (ballot + popc, the leader adds,
 * shfl broadcasts the base), 2 one per block (thread 0 claims blockDim items; the counts meet
 * in a shared-memory tally). */
template <int MODE>
__global__ void __launch_bounds__(256)
    claim_kernel(const uint32_t *__restrict__ keys, uint64_t n, unsigned long long *ctr)
{
    __shared__ unsigned long long s_base, s_tally;
    const unsigned                lane = threadIdx.x & 31u;
    unsigned                      found = 0;
    if (MODE == 2 && threadIdx.x == 0) s_tally = 0;
    for (;;) {
        uint64_t i;
        if (MODE == 0) {
            i = atom_add_u64(&ctr[0], 1ull);
            if (i >= n) break;
        } else if (MODE == 1) {
            const unsigned     mask = __ballot_sync(0xffffffffu, 1);
            unsigned long long base = 0;
            if (lane == 0) base = atom_add_u64(&ctr[0], (unsigned long long)__popc(mask));
            base = __shfl_sync(0xffffffffu, base, 0);
            if (base >= n) break;
            i = base + __popc(mask & ((1u << lane) - 1u));
        } else {
            __syncthreads();
            if (threadIdx.x == 0) s_base = atom_add_u64(&ctr[0], (unsigned long long)blockDim.x);
            __syncthreads();
            if (s_base >= n) break;
            i = s_base + threadIdx.x;
        }
        if (i < n) found += (__ldg(keys + i) & 7u) == 0;
    }
    if (MODE == 0) {
        atom_add_u64(&ctr[1], found);
    } else if (MODE == 1) {
        found = __reduce_add_sync(0xffffffffu, found);
        if (lane == 0) atom_add_u64(&ctr[1], found);
    } else {
        atomicAdd(&s_tally, (unsigned long long)found);
        __syncthreads();
        if (threadIdx.x == 0) atom_add_u64(&ctr[1], s_tally);
    }
}

__global__ void count_ref(const uint32_t *keys, uint64_t n, unsigned long long *out)
{
    unsigned c = 0;
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        c += (keys[i] & 7u) == 0;
    c = __reduce_add_sync(0xffffffffu, c);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, (unsigned long long)c);
}

static void bench_counters(bk_gpu_ops *p, bufs &b, timer &t, int lg, int sm_count)
{
    static const char *const names[3] = { "thread", "warp", "block" };
    void (*kern[3])(const uint32_t *, uint64_t, unsigned long long *) = { claim_kernel<0>, claim_kernel<1>,
                                                                          claim_kernel<2> };
    const uint64_t n = 1ull << lg;
    gen_u32<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.in, n, 99u + lg, 0);
    CK(cudaGetLastError());
    unsigned long long *ctr = (unsigned long long *)b.small1, *ref = (unsigned long long *)b.small2, href = 0;
    CK(cudaMemset(ref, 0, 8));
    count_ref<<<GEN_BLOCKS, GEN_THREADS>>>((const uint32_t *)b.in, n, ref);
    CK(cudaGetLastError());
    CK(cudaMemcpy(&href, ref, 8, cudaMemcpyDeviceToHost));
    for (int m = 0; m < 3; ++m) {
        int per_sm = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern[m], 256, 0));
        const unsigned blocks = (unsigned)(per_sm * sm_count);
        const uint64_t threads = (uint64_t)blocks * 256;
        auto           run = [&] {
            CK(cudaMemsetAsync(ctr, 0, 16));
            kern[m]<<<blocks, 256>>>((const uint32_t *)b.in, n, ctr);
            CK(cudaGetLastError());
        };
        run();
        unsigned long long h[2];
        CK(cudaMemcpy(h, ctr, 16, cudaMemcpyDeviceToHost));
        /* Every item claimed once: the counter ends at n plus what the last claims overshot. */
        const int    ok = h[1] == href && h[0] >= n;
        const double ms = time_ms(t, run);
        const double atomics = m == 0   ? (double)n + (double)threads * 2
                               : m == 1 ? (double)n / 32 + threads / 16.0
                                        : (double)n / 256 + blocks * 2.0;
        printf("%-8s %5d %10.4f %10.2f %14.0f %11.3f %4s\n", names[m], lg, ms, n / (ms * 1e6), atomics,
               atomics / (double)n, ok ? "ok" : "FAIL");
        fflush(stdout);
    }
}

/* ---- variants ------------------------------------------------------------------------------ */

static void bench_variants(bk_gpu_ops *p, bufs &b, timer &t, int lg, const char *only)
{
    const uint64_t n = 1ull << lg;
    printf("\nkernel variants at 2^%d (each checked against CUB first)\n", lg);
    printf("%-10s %-28s %9s %9s %6s %4s\n", "op", "variant", "ours_ms", "cub_ms", "x_cub", "ok");
    /* reduce sum f32 */
    if (strstr("reduce_sum_f32", only)) {
        gen_f32<<<GEN_BLOCKS, GEN_THREADS>>>((float *)b.in, n, 5);
        double cub = time_ms(t, [&] { run_cub_reduce<float, float, R_SUM>(b, n, b.small2); });
        float  r2;
        CK(cudaMemcpy(&r2, b.small2, 4, cudaMemcpyDeviceToHost));
        for (int v = 1; v <= bk_gpu_ops_variant_count(BK_GPU_OP_REDUCE); ++v) {
            PK(bk_gpu_ops_set_variant(p, BK_GPU_OP_REDUCE, v, err, sizeof err));
            CK(cudaMemset(b.small1, 0xAB, 8));
            PK(bk_gpu_ops_reduce_sum_f32(p, (const float *)b.in, n, (float *)b.small1, err, sizeof err));
            float r1;
            CK(cudaMemcpy(&r1, b.small1, 4, cudaMemcpyDeviceToHost));
            double ours = time_ms(t, [&] {
                PK(bk_gpu_ops_reduce_sum_f32(p, (const float *)b.in, n, (float *)b.small1, err, sizeof err));
            });
            printf("%-10s %-28s %9.4f %9.4f %6.3f %4s\n", "sum_f32", bk_gpu_ops_variant_name(BK_GPU_OP_REDUCE, v), ours,
                   cub, cub / ours, fabs((double)r1 - r2) <= 1e-5 * fabs((double)r2) ? "ok" : "FAIL");
        }
        PK(bk_gpu_ops_set_variant(p, BK_GPU_OP_REDUCE, 0, err, sizeof err));
    }
    /* histogram 256 */
    if (strstr("histogram_256", only)) {
        const uint32_t bins = 256;
        gen_u32<<<GEN_BLOCKS, GEN_THREADS>>>((uint32_t *)b.in, n, 6, bins);
        double cub = time_ms(t, [&] { run_cub_hist(b, n, bins, b.small2); });
        for (int v = 1; v <= bk_gpu_ops_variant_count(BK_GPU_OP_HISTOGRAM); ++v) {
            PK(bk_gpu_ops_set_variant(p, BK_GPU_OP_HISTOGRAM, v, err, sizeof err));
            CK(cudaMemset(b.small1, 0xAB, 4 * bins));
            PK(bk_gpu_ops_histogram_u32(p, (const uint32_t *)b.in, n, bins, (uint32_t *)b.small1, err, sizeof err));
            int    ok = diff_words(b.small1, b.small2, bins) == 0;
            double ours = time_ms(t, [&] {
                PK(bk_gpu_ops_histogram_u32(p, (const uint32_t *)b.in, n, bins, (uint32_t *)b.small1, err, sizeof err));
            });
            printf("%-10s %-28s %9.4f %9.4f %6.3f %4s\n", "hist_256", bk_gpu_ops_variant_name(BK_GPU_OP_HISTOGRAM, v),
                   ours, cub, cub / ours, ok ? "ok" : "FAIL");
        }
        PK(bk_gpu_ops_set_variant(p, BK_GPU_OP_HISTOGRAM, 0, err, sizeof err));
    }
    /* sorts */
    for (int k = 0; k < 2; ++k) {
        const int op = k ? BK_GPU_OP_SORT64 : BK_GPU_OP_SORT32;
        if (!strstr(k ? "sort_pairs_u64" : "sort_pairs_u32", only)) continue;
        const int end_bit = k ? 64 : 32;
        if (k) gen_sort_input<uint64_t>(b, n, 8);
        else gen_sort_input<uint32_t>(b, n, 7);
        double cub = k ? time_ms(t, [&] { run_cub_sort<uint64_t>(b, n, end_bit); })
                       : time_ms(t, [&] { run_cub_sort<uint32_t>(b, n, end_bit); });
        for (int v = 1; v <= bk_gpu_ops_variant_count(op); ++v) {
            PK(bk_gpu_ops_set_variant(p, op, v, err, sizeof err));
            int    ok = k ? check_sort<uint64_t>(p, b, n, end_bit) : check_sort<uint32_t>(p, b, n, end_bit);
            double ours = k ? time_ms(t, [&] { PK(run_ours_sort<uint64_t>(p, b, n, end_bit)); })
                            : time_ms(t, [&] { PK(run_ours_sort<uint32_t>(p, b, n, end_bit)); });
            printf("%-10s %-28s %9.4f %9.4f %6.3f %4s\n", k ? "sort_u64" : "sort_u32", bk_gpu_ops_variant_name(op, v),
                   ours, cub, cub / ours, ok ? "ok" : "FAIL");
        }
        PK(bk_gpu_ops_set_variant(p, op, 0, err, sizeof err));
    }
    fflush(stdout);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* The buffers for inputs of up to N items, and CUB's temporary storage for the largest call. */
static void alloc_bufs(bufs &b, const uint64_t N)
{
    memset(&b, 0, sizeof b);
    b.in = dalloc(N * 8);
    b.vals = dalloc(N * 4);
    b.k1 = dalloc(N * 8);
    b.v1 = dalloc(N * 4);
    b.k2 = dalloc(N * 8);
    b.v2 = dalloc(N * 4);
    b.small1 = dalloc(65536 * 4);
    b.small2 = dalloc(65536 * 4);
    CK(cudaMalloc((void **)&d_bad, 8));
    { /* CUB's temporary storage: the largest any call here asks for. */
        size_t need = 0, s = 0;
        CK(cub::DeviceReduce::Sum(NULL, s, (const float *)b.in, (float *)b.small2, (int64_t)N));
        need = std::max(need, s);
        CK(cub::DeviceReduce::Sum(NULL, s, (const uint32_t *)b.in, (uint64_t *)b.small2, (int64_t)N));
        need = std::max(need, s);
        CK(cub::DeviceReduce::Min(NULL, s, (const float *)b.in, (float *)b.small2, (int64_t)N));
        need = std::max(need, s);
        CK(cub::DeviceReduce::Max(NULL, s, (const float *)b.in, (float *)b.small2, (int64_t)N));
        need = std::max(need, s);
        CK(cub::DeviceReduce::Min(NULL, s, (const uint32_t *)b.in, (uint32_t *)b.small2, (int64_t)N));
        need = std::max(need, s);
        CK(cub::DeviceReduce::Max(NULL, s, (const uint32_t *)b.in, (uint32_t *)b.small2, (int64_t)N));
        need = std::max(need, s);
        for (uint32_t bins : { 256u, 65536u }) {
            CK(cub::DeviceHistogram::HistogramEven(NULL, s, (const uint32_t *)b.in, (unsigned *)b.small2, (int)bins + 1,
                                                   0u, bins, (int64_t)N));
            need = std::max(need, s);
        }
        CK(cub::DeviceRadixSort::SortPairs(NULL, s, (const uint32_t *)b.in, (uint32_t *)b.k2, (const uint32_t *)b.vals,
                                           (uint32_t *)b.v2, (int)N, 0, 32));
        need = std::max(need, s);
        CK(cub::DeviceRadixSort::SortPairs(NULL, s, (const uint64_t *)b.in, (uint64_t *)b.k2, (const uint32_t *)b.vals,
                                           (uint32_t *)b.v2, (int)N, 0, 64));
        need = std::max(need, s);
        b.cub_tmp_bytes = need;
        b.cub_tmp = dalloc(need);
    }
}

/* The tables of each op against CUB, 2^lo to 2^hi items; the rows whose name contains only. */
static void bench_tables(bk_gpu_ops *p, bufs &b, timer &t, int lo, int hi, const char *only)
{
    if (strstr("reduce_sum_f32", only))
        for (int lg = lo; lg <= hi; ++lg) bench_reduce<float, float, R_SUM>(p, b, t, "reduce_sum_f32", lg, 1 + lg);
    if (strstr("reduce_min_f32", only))
        for (int lg = lo; lg <= hi; ++lg) bench_reduce<float, float, R_MIN>(p, b, t, "reduce_min_f32", lg, 2 + lg);
    if (strstr("reduce_max_f32", only))
        for (int lg = lo; lg <= hi; ++lg) bench_reduce<float, float, R_MAX>(p, b, t, "reduce_max_f32", lg, 3 + lg);
    if (strstr("reduce_sum_u32(u64)", only))
        for (int lg = lo; lg <= hi; ++lg)
            bench_reduce<uint32_t, uint64_t, R_SUM>(p, b, t, "reduce_sum_u32(u64)", lg, 4 + lg);
    if (strstr("reduce_min_u32", only))
        for (int lg = lo; lg <= hi; ++lg)
            bench_reduce<uint32_t, uint32_t, R_MIN>(p, b, t, "reduce_min_u32", lg, 5 + lg);
    if (strstr("reduce_max_u32", only))
        for (int lg = lo; lg <= hi; ++lg)
            bench_reduce<uint32_t, uint32_t, R_MAX>(p, b, t, "reduce_max_u32", lg, 6 + lg);
    if (strstr("histogram_256", only))
        for (int lg = lo; lg <= hi; ++lg) bench_hist(p, b, t, "histogram_256", lg, 256, 7 + lg);
    if (strstr("histogram_65536(glob)", only))
        for (int lg = lo; lg <= hi; ++lg) bench_hist(p, b, t, "histogram_65536(glob)", lg, 65536, 8 + lg);
    if (strstr("sort_pairs_u32", only))
        for (int lg = lo; lg <= hi; ++lg) bench_sort<uint32_t>(p, b, t, "sort_pairs_u32", lg, 32, 9 + lg);
    if (strstr("sort_pairs_u64", only))
        for (int lg = lo; lg <= hi; ++lg) bench_sort<uint64_t>(p, b, t, "sort_pairs_u64", lg, 64, 10 + lg);
    if (strstr("sort_pairs_u32_30bit", only))
        for (int lg = lo; lg <= hi; ++lg) bench_sort<uint32_t>(p, b, t, "sort_pairs_u32_30bit", lg, 30, 11 + lg);
}

/* Everything alloc_bufs and the timer made. */
static void free_bufs(bufs &b, timer &t)
{
    cudaFree(b.in);
    cudaFree(b.vals);
    cudaFree(b.k1);
    cudaFree(b.v1);
    cudaFree(b.k2);
    cudaFree(b.v2);
    cudaFree(b.small1);
    cudaFree(b.small2);
    cudaFree(b.cub_tmp);
    cudaFree(t.flush);
    cudaFree(d_bad);
    cudaEventDestroy(t.a);
    cudaEventDestroy(t.b);
}

static const char usage[] =
    "usage: baker bench primitives [--min-log2 16] [--max-log2 28] [--reps 7] [--variants] [--no-counters]\n"
    "                              [--only TEXT]   (rows whose op name contains TEXT; 'counter' for that table)\n";

extern "C" int bk_bench_primitives(int argc, char **argv)
{
    int         lo = 16, hi = 28, reps = 7, variants = 0, counters = 1;
    const char *only = "";
    for (int i = 0; i < argc; ++i) {
        if (!strcmp(argv[i], "--min-log2") && i + 1 < argc) lo = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-log2") && i + 1 < argc) hi = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--variants")) variants = 1;
        else if (!strcmp(argv[i], "--no-counters")) counters = 0;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr, "baker bench primitives: unknown option %s\n%s", argv[i], usage);
            return 2;
        }
    }
    if (lo < 1 || hi > 29 || lo > hi || reps < 1) {
        fprintf(stderr, "baker bench primitives: need 1 <= --min-log2 <= --max-log2 <= 29 and --reps >= 1\n");
        return 2;
    }
    bk_gpu_ops *p = bk_gpu_ops_init(err, sizeof err);
    if (!p) {
        fprintf(stderr, "baker bench primitives: %s\n", err);
        return 1;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));

    const uint64_t N = 1ull << hi;
    bufs           b;
    alloc_bufs(b, N);
    timer t;
    t.reps = reps;
    t.flush_bytes = 256ull << 20;
    t.flush = dalloc(t.flush_bytes);
    CK(cudaEventCreate(&t.a));
    CK(cudaEventCreate(&t.b));

    /* The ceiling: a device-to-device copy of up to 1 GiB, counting bytes read and written. */
    {
        const size_t bytes = std::min<size_t>(N * 8, 1ull << 30);
        const double ms = time_ms(t, [&] { CK(cudaMemcpyAsync(b.k1, b.in, bytes, cudaMemcpyDeviceToDevice)); });
        copy_gbs = 2.0 * bytes / (ms * 1e6);
    }
    printf(
        "baker bench primitives: %s, %d SMs, %.0f MB L2; median of %d runs after 2 warm-ups, L2 flushed before each\n",
        prop.name, prop.multiProcessorCount, prop.l2CacheSize / 1e6, reps);
    printf("device-to-device copy: %.1f GB/s (cudaMemcpy of %.0f MiB, bytes read + written)\n", copy_gbs,
           std::min<size_t>(N * 8, 1ull << 30) / 1048576.0);
    printf(
        "GB/s: input read once + output written once, over the time; x_cub = cub_ms / ours_ms (above 1: faster)\n\n");
    print_header();
    bench_tables(p, b, t, lo, hi, only);
    if (counters && (!*only || strstr("counter", only))) {
        printf("\ncounter aggregation: a persistent grid claims items from one global counter and counts keys with\n"
               "(key & 7) == 0 into a second; 'global atomics' counts both counters' atomics\n");
        printf("%-8s %5s %10s %10s %14s %11s %4s\n", "mode", "log2n", "ms", "Gitems/s", "global atomics", "per item",
               "ok");
        for (int lg = lo; lg <= hi; lg += 4) bench_counters(p, b, t, lg, prop.multiProcessorCount);
        if ((hi - lo) % 4) bench_counters(p, b, t, hi, prop.multiProcessorCount);
    }
    if (variants) bench_variants(p, b, t, hi, only);

    free_bufs(b, t);
    bk_gpu_ops_free(p);
    return 0;
}
