/* denoise_cpu.h - the denoiser's passes on the CPU (denoise_cpu.c): what the CPU backend's
 * denoise() runs; the driver around them (guides, chart sums) is denoise.h. */
#ifndef BK_DENOISE_CPU_H
#define BK_DENOISE_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "bk_bake.h"
#include "bk_denoise.h"

/* The filter's passes over one page on the CPU, on the host thread pool (pool.h): col is replaced
 * by the filtered texels (rgb, variance), and band (NULL, or 3 per pixel: a directional bake's
 * bands) by its own filtered with the same weights. Same per-texel code as the GPU's. */
int bk_denoise_page_cpu(const bk_denoise_params *p, int passes, bk_f4 *col, const bk_f4 *pos, const bk_f4 *nrm,
                        bk_f4 *band, char *err, size_t err_size);

/* The same for a page given as its texels (the backend interface's denoise(), on the CPU): they
 * are scattered into page layouts, filtered, and gathered back into col (and band: 3 per texel,
 * or NULL). */
int bk_denoise_texels_cpu(const bk_denoise_params *p, int passes, const bk_texel *tx, const uint32_t *chart, bk_f4 *col,
                          bk_f4 *band, uint32_t n, uint64_t base, char *err, size_t err_size);

#endif
