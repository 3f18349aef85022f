/* stats.h - statistics and orderings through the primitives of gpu_ops.h: on the GPU when a
 * primitives context is given (the data go up, the primitive runs there), else with the CPU
 * twins. Used for the traversal-step histogram of `baker trace --stats`, the luminance histogram
 * behind `--exposure auto`, and the sort behind `--bin-rays`. */
#ifndef BK_STATS_H
#define BK_STATS_H

#include <stdint.h>
#include <stddef.h>
#include "gpu_ops.h"

int bk_stats_histogram(bk_gpu_ops *gpu, const uint32_t *keys, uint64_t n, uint32_t bins, uint32_t *counts, char *err,
                       size_t err_size);
int bk_stats_sum_u32(bk_gpu_ops *gpu, const uint32_t *a, uint64_t n, uint64_t *sum, char *err, size_t err_size);
int bk_stats_max_u32(bk_gpu_ops *gpu, const uint32_t *a, uint64_t n, uint32_t *max, char *err, size_t err_size);
int bk_stats_sum_f32(bk_gpu_ops *gpu, const float *a, uint64_t n, double *sum, char *err, size_t err_size);
/* Sorts (key, value) pairs in place by the low end_bit bits; *seconds gets the time of the sort
 * itself (on the GPU: between the upload and the download). */
int bk_stats_sort_pairs_u64(bk_gpu_ops *gpu, uint64_t *keys, uint32_t *vals, uint64_t n, int end_bit, double *seconds,
                            char *err, size_t err_size);

/* The first histogram bin at which the cumulative count reaches fraction q of the total. */
uint32_t bk_stats_percentile_bin(const uint32_t *counts, uint32_t bins, double q);

#endif
