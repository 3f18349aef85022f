/* stats.c - statistics through the primitives (see stats.h). */
#include "stats.h"
#include "util.h"

#include <stdlib.h>

/* Uploads n 32-bit values, runs fn on the GPU, downloads out_bytes of result. */
typedef int (*gpu_fn)(bk_gpu_ops *p, const void *d_in, uint64_t n, uint32_t arg, void *d_out, char *err,
                      size_t err_size);

static int gpu_run(bk_gpu_ops *p, const void *in, uint64_t n, uint32_t arg, gpu_fn fn, void *out, size_t out_bytes,
                   char *err, size_t err_size)
{
    if (bk_gpu_ops_use(p, err, err_size)) return -1;
    void *d_in = bk_gpu_ops_dev_alloc(n ? n * 4 : 4, err, err_size),
         *d_out = bk_gpu_ops_dev_alloc(out_bytes, err, err_size);
    int rc = !d_in || !d_out || bk_gpu_ops_to_dev(d_in, in, n * 4, err, err_size) ||
             fn(p, d_in, n, arg, d_out, err, err_size) || bk_gpu_ops_to_host(out, d_out, out_bytes, err, err_size);
    bk_gpu_ops_dev_free(d_in);
    bk_gpu_ops_dev_free(d_out);
    return rc ? -1 : 0;
}

static int hist_fn(bk_gpu_ops *p, const void *d_in, uint64_t n, uint32_t bins, void *d_out, char *err, size_t err_size)
{
    return bk_gpu_ops_histogram_u32(p, d_in, n, bins, d_out, err, err_size);
}
static int sum_fn(bk_gpu_ops *p, const void *d_in, uint64_t n, uint32_t arg, void *d_out, char *err, size_t err_size)
{
    return bk_gpu_ops_reduce_sum_u32(p, d_in, n, d_out, err, err_size);
}
static int max_fn(bk_gpu_ops *p, const void *d_in, uint64_t n, uint32_t arg, void *d_out, char *err, size_t err_size)
{
    return bk_gpu_ops_reduce_max_u32(p, d_in, n, d_out, err, err_size);
}
static int sumf_fn(bk_gpu_ops *p, const void *d_in, uint64_t n, uint32_t arg, void *d_out, char *err, size_t err_size)
{
    return bk_gpu_ops_reduce_sum_f32(p, d_in, n, d_out, err, err_size);
}

int bk_stats_histogram(bk_gpu_ops *gpu, const uint32_t *keys, uint64_t n, uint32_t bins, uint32_t *counts, char *err,
                       size_t err_size)
{
    if (!gpu) {
        bk_gpu_ops_cpu_histogram_u32(keys, n, bins, counts);
        return 0;
    }
    return gpu_run(gpu, keys, n, bins, hist_fn, counts, sizeof(uint32_t) * bins, err, err_size);
}

int bk_stats_sum_u32(bk_gpu_ops *gpu, const uint32_t *a, uint64_t n, uint64_t *sum, char *err, size_t err_size)
{
    if (!gpu) {
        *sum = bk_gpu_ops_cpu_sum_u32(a, n);
        return 0;
    }
    return gpu_run(gpu, a, n, 0, sum_fn, sum, sizeof *sum, err, err_size);
}

int bk_stats_max_u32(bk_gpu_ops *gpu, const uint32_t *a, uint64_t n, uint32_t *max, char *err, size_t err_size)
{
    if (!gpu) {
        *max = bk_gpu_ops_cpu_max_u32(a, n);
        return 0;
    }
    return gpu_run(gpu, a, n, 0, max_fn, max, sizeof *max, err, err_size);
}

int bk_stats_sum_f32(bk_gpu_ops *gpu, const float *a, uint64_t n, double *sum, char *err, size_t err_size)
{
    if (!gpu) {
        *sum = bk_gpu_ops_cpu_sum_f32(a, n);
        return 0;
    }
    float f = 0;
    int   rc = gpu_run(gpu, a, n, 0, sumf_fn, &f, sizeof f, err, err_size);
    *sum = f;
    return rc;
}

int bk_stats_sort_pairs_u64(bk_gpu_ops *gpu, uint64_t *keys, uint32_t *vals, uint64_t n, int end_bit, double *seconds,
                            char *err, size_t err_size)
{
    double t0;
    if (!gpu) {
        t0 = bk_time_now();
        if (bk_gpu_ops_cpu_sort_pairs_u64(keys, vals, n, end_bit)) return bk_fail(err, err_size, "sort: out of memory");
        *seconds = bk_time_now() - t0;
        return 0;
    }
    if (bk_gpu_ops_use(gpu, err, err_size)) return -1;
    uint64_t *d_k = bk_gpu_ops_dev_alloc(n ? n * 8 : 8, err, err_size);
    uint32_t *d_v = bk_gpu_ops_dev_alloc(n ? n * 4 : 4, err, err_size);
    int       rc = !d_k || !d_v || bk_gpu_ops_to_dev(d_k, keys, n * 8, err, err_size) ||
             bk_gpu_ops_to_dev(d_v, vals, n * 4, err, err_size);
    if (!rc) {
        uint64_t probe;
        t0 = bk_time_now();
        rc = bk_gpu_ops_sort_pairs_u64(gpu, d_k, d_k, d_v, d_v, n, end_bit, err, err_size) ||
             bk_gpu_ops_to_host(&probe, d_k, 8, err, err_size); /* waits for the sort */
        *seconds = bk_time_now() - t0;
    }
    if (!rc)
        rc = bk_gpu_ops_to_host(keys, d_k, n * 8, err, err_size) || bk_gpu_ops_to_host(vals, d_v, n * 4, err, err_size);
    bk_gpu_ops_dev_free(d_k);
    bk_gpu_ops_dev_free(d_v);
    return rc ? -1 : 0;
}

uint32_t bk_stats_percentile_bin(const uint32_t *counts, uint32_t bins, double q)
{
    uint64_t total = 0, acc = 0;
    for (uint32_t b = 0; b < bins; ++b) total += counts[b];
    for (uint32_t b = 0; b < bins; ++b) {
        acc += counts[b];
        if ((double)acc >= q * (double)total) return b;
    }
    return bins ? bins - 1 : 0;
}
