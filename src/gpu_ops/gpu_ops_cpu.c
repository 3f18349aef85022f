/* gpu_ops_cpu.c - CPU twins of the GPU primitives in kernels/gpu_ops/gpu_ops.cu: reductions (sums in double or
 * 64-bit integers), a histogram, and a stable LSD radix sort of key-value pairs (sort.h's). They
 * are the reference tests/gpu_ops.c compares the GPU with, and what the CPU backend can call.
 * Without CUDA this file also defines the GPU entry points, which say so and fail. */
#include "gpu_ops.h"
#include "sort.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double bk_gpu_ops_cpu_sum_f32(const float *a, uint64_t n)
{
    double s = 0.0;
    for (uint64_t i = 0; i < n; ++i) s += (double)a[i];
    return s;
}

float bk_gpu_ops_cpu_min_f32(const float *a, uint64_t n)
{
    float m = INFINITY;
    for (uint64_t i = 0; i < n; ++i) m = fminf(m, a[i]);
    return m;
}

float bk_gpu_ops_cpu_max_f32(const float *a, uint64_t n)
{
    float m = -INFINITY;
    for (uint64_t i = 0; i < n; ++i) m = fmaxf(m, a[i]);
    return m;
}

uint64_t bk_gpu_ops_cpu_sum_u32(const uint32_t *a, uint64_t n)
{
    uint64_t s = 0;
    for (uint64_t i = 0; i < n; ++i) s += a[i];
    return s;
}

uint32_t bk_gpu_ops_cpu_min_u32(const uint32_t *a, uint64_t n)
{
    uint32_t m = UINT32_MAX;
    for (uint64_t i = 0; i < n; ++i) m = a[i] < m ? a[i] : m;
    return m;
}

uint32_t bk_gpu_ops_cpu_max_u32(const uint32_t *a, uint64_t n)
{
    uint32_t m = 0;
    for (uint64_t i = 0; i < n; ++i) m = a[i] > m ? a[i] : m;
    return m;
}

int64_t bk_gpu_ops_cpu_sum_i32(const int32_t *a, uint64_t n)
{
    int64_t s = 0;
    for (uint64_t i = 0; i < n; ++i) s += a[i];
    return s;
}

int32_t bk_gpu_ops_cpu_min_i32(const int32_t *a, uint64_t n)
{
    int32_t m = INT32_MAX;
    for (uint64_t i = 0; i < n; ++i) m = a[i] < m ? a[i] : m;
    return m;
}

int32_t bk_gpu_ops_cpu_max_i32(const int32_t *a, uint64_t n)
{
    int32_t m = INT32_MIN;
    for (uint64_t i = 0; i < n; ++i) m = a[i] > m ? a[i] : m;
    return m;
}

void bk_gpu_ops_cpu_histogram_u32(const uint32_t *keys, uint64_t n, uint32_t bins, uint32_t *counts)
{
    memset(counts, 0, sizeof(uint32_t) * bins);
    for (uint64_t i = 0; i < n; ++i)
        if (keys[i] < bins) counts[keys[i]]++;
}

/* The host's one radix sort (sort.h), keys with their values beside them. */
#define BK_SORT_CPU(NAME, KEY)                                               \
    int NAME(KEY *keys, uint32_t *vals, uint64_t n, int end_bit)             \
    {                                                                        \
        if (end_bit < 1 || end_bit > (int)(8 * sizeof(KEY))) return -1;      \
        bk_sort_spec sp = bk_sort_spec_of(sizeof(KEY), 0, (int)sizeof(KEY)); \
        sp.end_bit = end_bit;                                                \
        sp.vals = vals;                                                      \
        sp.val_size = sizeof(uint32_t);                                      \
        return bk_sort_radix(keys, (size_t)n, &sp);                          \
    }

BK_SORT_CPU(bk_gpu_ops_cpu_sort_pairs_u32, uint32_t)
BK_SORT_CPU(bk_gpu_ops_cpu_sort_pairs_u64, uint64_t)

#if !BK_HAVE_CUDA
/* Built without nvcc: the GPU side reports that it is absent (tests skip on the NULL context). */
bk_gpu_ops *bk_gpu_ops_init(char *err, size_t err_size)
{
    bk_fail(err, err_size, "this baker was built without CUDA (nvcc was not found)");
    return NULL;
}
bk_gpu_ops *bk_gpu_ops_init_device(int device, char *err, size_t err_size)
{
    (void)device;
    return bk_gpu_ops_init(err, err_size);
}
void bk_gpu_ops_free(bk_gpu_ops *p) { (void)p; }
int  bk_gpu_ops_sort_reserve_u32(bk_gpu_ops *p, uint64_t n, char *err, size_t err_size)
{
    (void)p;
    (void)n;
    return bk_fail(err, err_size, "built without CUDA");
}
int bk_gpu_ops_use(bk_gpu_ops *p, char *err, size_t err_size)
{
    (void)p;
    return bk_fail(err, err_size, "built without CUDA");
}
const char *bk_gpu_ops_device_name(const bk_gpu_ops *p) { return "none"; }
int         bk_gpu_ops_variant_count(int op) { return 0; }
const char *bk_gpu_ops_variant_name(int op, int variant) { return "none"; }
int         bk_gpu_ops_set_variant(bk_gpu_ops *p, int op, int variant, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
uint32_t bk_gpu_ops_histogram_shared_max_bins(const bk_gpu_ops *p) { return 0; }
void    *bk_gpu_ops_dev_alloc(size_t bytes, char *err, size_t err_size)
{
    bk_fail(err, err_size, "built without CUDA");
    return NULL;
}
void bk_gpu_ops_dev_free(void *d) { (void)d; }
int  bk_gpu_ops_dev_fill(void *d, int byte, size_t bytes, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
int bk_gpu_ops_to_dev(void *d, const void *s, size_t bytes, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
int bk_gpu_ops_to_host(void *d, const void *s, size_t bytes, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}

#define BK_NO_CUDA_REDUCE(NAME, T, O)                                                        \
    int NAME(bk_gpu_ops *p, const T *d_in, uint64_t n, O *d_out, char *err, size_t err_size) \
    {                                                                                        \
        return bk_fail(err, err_size, "built without CUDA");                                 \
    }
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_sum_f32, float, float)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_min_f32, float, float)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_max_f32, float, float)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_sum_u32, uint32_t, uint64_t)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_min_u32, uint32_t, uint32_t)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_max_u32, uint32_t, uint32_t)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_sum_i32, int32_t, int64_t)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_min_i32, int32_t, int32_t)
BK_NO_CUDA_REDUCE(bk_gpu_ops_reduce_max_i32, int32_t, int32_t)

int bk_gpu_ops_histogram_u32(bk_gpu_ops *p, const uint32_t *d_keys, uint64_t n, uint32_t bins, uint32_t *d_counts,
                             char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
int bk_gpu_ops_sort_pairs_u32(bk_gpu_ops *p, const uint32_t *ki, uint32_t *ko, const uint32_t *vi, uint32_t *vo,
                              uint64_t n, int end_bit, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
int bk_gpu_ops_sort_pairs_u64(bk_gpu_ops *p, const uint64_t *ki, uint64_t *ko, const uint32_t *vi, uint32_t *vo,
                              uint64_t n, int end_bit, char *err, size_t err_size)
{
    return bk_fail(err, err_size, "built without CUDA");
}
#endif
