/* gpu_ops.h - GPU reduction, histogram and radix sort (kernels/gpu_ops/gpu_ops.cu) and their CPU twins
 * (src/gpu_ops/gpu_ops_cpu.c). The CPU twins are the readable reference the GPU versions are tested against
 * (tests/gpu_ops.c) and are what the CPU backend uses.
 *
 * Usage:
 *     char err[256];
 *     bk_gpu_ops *p = bk_gpu_ops_init(err, sizeof err);          // NULL without a usable GPU (err says why)
 *     uint32_t *d_keys = bk_gpu_ops_dev_alloc(n * 4, err, sizeof err);
 *     bk_gpu_ops_to_dev(d_keys, keys, n * 4, err, sizeof err);
 *     bk_gpu_ops_histogram_u32(p, d_keys, n, 256, d_counts, err, sizeof err);
 *     bk_gpu_ops_sort_pairs_u32(p, d_keys, d_keys, d_vals, d_vals, n, 30, err, sizeof err);  // in place
 *     bk_gpu_ops_to_host(counts, d_counts, 256 * 4, err, sizeof err);                       // waits
 *     bk_gpu_ops_free(p);
 *
 * Every GPU call is asynchronous: it queues its work on the default stream and returns 0, or a
 * negative status with a message in err when an argument is bad or a CUDA call or launch fails.
 * Results are in device memory (d_*), ready for whatever is queued next; bk_gpu_ops_to_host waits.
 * The context owns the temporary buffers (grown, never shrunk), so repeated calls do not allocate;
 * it is not thread-safe: one context per host thread.
 *
 * Semantics, identical in both twins:
 *   reduce   sum_f32 accumulates in double (per 16 loaded values in float, then double), result
 *            rounded to float once: error ~1e-7 relative to the sum of |x|, far under n*eps.
 *            sum_u32 / sum_i32 are exact in 64 bits. min/max f32 follow fminf/fmaxf (NaN ignored).
 *            n = 0 gives the identity: 0, +inf (min f32), -inf (max f32), UINT32_MAX / 0,
 *            INT32_MAX / INT32_MIN. The GPU result does not depend on the run (fixed tree).
 *   histogram counts[k] = number of keys equal to k, for k < bins; keys >= bins are ignored
 *            (as in cub::DeviceHistogram::HistogramEven). d_counts is overwritten.
 *   sort     stable LSD radix sort of (key, value) pairs by the low end_bit bits of the key
 *            (1..32 or 1..64); higher key bits travel with the key but do not order it.
 *            In and out may be the same arrays (in place); other overlaps are not allowed.
 *            n < 2^30 on the GPU.
 */
#ifndef BK_GPU_OPS_H
#define BK_GPU_OPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_gpu_ops bk_gpu_ops;

/* Kernel variants behind one dispatcher (the llm.c habit): 0 is the default; `baker bench
 * primitives --variants` checks and times each. */
enum bk_gpu_op {
    BK_GPU_OP_REDUCE = 0,
    BK_GPU_OP_HISTOGRAM = 1,
    BK_GPU_OP_SORT32 = 2,
    BK_GPU_OP_SORT64 = 3,
    BK_GPU_OP_COUNT = 4
};

/* ---- GPU (kernels/gpu_ops/gpu_ops.cu; without CUDA, init returns NULL and says so) ---- */
bk_gpu_ops *bk_gpu_ops_init(char *err, size_t err_size);                    /* on device 0 */
bk_gpu_ops *bk_gpu_ops_init_device(int device, char *err, size_t err_size); /* leaves it current */
void        bk_gpu_ops_free(bk_gpu_ops *p);
const char *bk_gpu_ops_device_name(const bk_gpu_ops *p);
int         bk_gpu_ops_variant_count(int op); /* variants 1..count; 0 = default */
const char *bk_gpu_ops_variant_name(int op, int variant);
int         bk_gpu_ops_set_variant(bk_gpu_ops *p, int op, int variant, char *err, size_t err_size);
/* Largest bin count the shared-memory histogram takes; above it the global path runs. */
uint32_t bk_gpu_ops_histogram_shared_max_bins(const bk_gpu_ops *p);

/* The primitives run on the context's device (0 for bk_gpu_ops_init): this makes it the calling thread's current
 * device again, as it must be for the calls below and bk_gpu_ops_dev_*, after code that works on
 * another one (a bake on several GPUs leaves the thread on the last it fetched from). 0, or -1. */
int bk_gpu_ops_use(bk_gpu_ops *p, char *err, size_t err_size);

/* Device memory, so C callers need no CUDA headers. to_dev / to_host are synchronous. */
void *bk_gpu_ops_dev_alloc(size_t bytes, char *err, size_t err_size);
void  bk_gpu_ops_dev_free(void *d);
int   bk_gpu_ops_dev_fill(void *d, int byte, size_t bytes, char *err, size_t err_size);
int   bk_gpu_ops_to_dev(void *d_dst, const void *src, size_t bytes, char *err, size_t err_size);
int   bk_gpu_ops_to_host(void *dst, const void *d_src, size_t bytes, char *err, size_t err_size);

/* Reductions: one launch (the last block to finish folds the per-block partials). */
int bk_gpu_ops_reduce_sum_f32(bk_gpu_ops *p, const float *d_in, uint64_t n, float *d_out, char *err, size_t err_size);
int bk_gpu_ops_reduce_min_f32(bk_gpu_ops *p, const float *d_in, uint64_t n, float *d_out, char *err, size_t err_size);
int bk_gpu_ops_reduce_max_f32(bk_gpu_ops *p, const float *d_in, uint64_t n, float *d_out, char *err, size_t err_size);
int bk_gpu_ops_reduce_sum_u32(bk_gpu_ops *p, const uint32_t *d_in, uint64_t n, uint64_t *d_out, char *err,
                              size_t err_size);
int bk_gpu_ops_reduce_min_u32(bk_gpu_ops *p, const uint32_t *d_in, uint64_t n, uint32_t *d_out, char *err,
                              size_t err_size);
int bk_gpu_ops_reduce_max_u32(bk_gpu_ops *p, const uint32_t *d_in, uint64_t n, uint32_t *d_out, char *err,
                              size_t err_size);
int bk_gpu_ops_reduce_sum_i32(bk_gpu_ops *p, const int32_t *d_in, uint64_t n, int64_t *d_out, char *err,
                              size_t err_size);
int bk_gpu_ops_reduce_min_i32(bk_gpu_ops *p, const int32_t *d_in, uint64_t n, int32_t *d_out, char *err,
                              size_t err_size);
int bk_gpu_ops_reduce_max_i32(bk_gpu_ops *p, const int32_t *d_in, uint64_t n, int32_t *d_out, char *err,
                              size_t err_size);

/* counts[0..bins) of keys < bins. Shared-memory tallies merged with one global atomic per bin and
 * block when bins * 4 bytes fit in a block's shared memory, else one global atomic per key. */
int bk_gpu_ops_histogram_u32(bk_gpu_ops *p, const uint32_t *d_keys, uint64_t n, uint32_t bins, uint32_t *d_counts,
                             char *err, size_t err_size);

/* Stable key-value radix sort (onesweep: one read and one write of the pairs per 8-bit digit). */
/* Room for a sort of n 32-bit pairs, so that the sort itself allocates nothing (timed work). */
int bk_gpu_ops_sort_reserve_u32(bk_gpu_ops *p, uint64_t n, char *err, size_t err_size);
int bk_gpu_ops_sort_pairs_u32(bk_gpu_ops *p, const uint32_t *d_keys_in, uint32_t *d_keys_out, const uint32_t *d_vals_in,
                              uint32_t *d_vals_out, uint64_t n, int end_bit, char *err, size_t err_size);
int bk_gpu_ops_sort_pairs_u64(bk_gpu_ops *p, const uint64_t *d_keys_in, uint64_t *d_keys_out, const uint32_t *d_vals_in,
                              uint32_t *d_vals_out, uint64_t n, int end_bit, char *err, size_t err_size);

/* ---- CPU twins (src/gpu_ops/gpu_ops_cpu.c), plain C11 ---- */
double   bk_gpu_ops_cpu_sum_f32(const float *a, uint64_t n); /* in double, left to right */
float    bk_gpu_ops_cpu_min_f32(const float *a, uint64_t n);
float    bk_gpu_ops_cpu_max_f32(const float *a, uint64_t n);
uint64_t bk_gpu_ops_cpu_sum_u32(const uint32_t *a, uint64_t n);
uint32_t bk_gpu_ops_cpu_min_u32(const uint32_t *a, uint64_t n);
uint32_t bk_gpu_ops_cpu_max_u32(const uint32_t *a, uint64_t n);
int64_t  bk_gpu_ops_cpu_sum_i32(const int32_t *a, uint64_t n);
int32_t  bk_gpu_ops_cpu_min_i32(const int32_t *a, uint64_t n);
int32_t  bk_gpu_ops_cpu_max_i32(const int32_t *a, uint64_t n);
void     bk_gpu_ops_cpu_histogram_u32(const uint32_t *keys, uint64_t n, uint32_t bins, uint32_t *counts);
/* In place, stable, 8-bit LSD passes; -1 when end_bit is out of range or memory runs out. */
int bk_gpu_ops_cpu_sort_pairs_u32(uint32_t *keys, uint32_t *vals, uint64_t n, int end_bit);
int bk_gpu_ops_cpu_sort_pairs_u64(uint64_t *keys, uint32_t *vals, uint64_t n, int end_bit);

#ifdef __cplusplus
}
#endif
#endif
