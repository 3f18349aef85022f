/* denoise.h - the lightmap denoiser: what a lightmap knows that an image denoiser does not.
 *
 * Pipeline: bake (mean rgb and the variance of each texel's mean luminance, bake.h) + the texels'
 * world positions and normals + their charts (atlas.h) -> guides per page -> passes of the
 * edge-avoiding a-trous filter (kernels/bk_denoise.h) on the backend (the GPU when the bake ran
 * there; CPU threads otherwise: the same per-texel code) -> each chart scaled back to the sum it
 * had (per channel), so the mean of the map never changes -> rgb, denoised in place.
 *
 * Usage:
 *     bk_denoise_opts o; bk_denoise_opts_default(&o);
 *     bk_denoise_view v = { .coverage = cov, .texels = tx, .n = n, .tri_chart = tri_chart,
 *                           .tri_count = tri_count, .w = w, .h = h, .pages = pages, .texel_world = tw };
 *     bk_denoise_lightmap(be, rgb, var, &v, &o, &res, err, sizeof err);
 */
#ifndef BK_DENOISE_HOST_H
#define BK_DENOISE_HOST_H

#include "backend.h"
#include "bk_denoise.h"
#include "denoise_cpu.h" /* for backend_cpu.c, until it includes denoise_cpu.h itself */

typedef struct bk_denoise_opts {
    int   passes;                    /* a-trous passes (steps 1, 2, 4, ...); 0 turns the filter off */
    float sigma_l, sigma_n, sigma_x; /* see bk_denoise_params */
} bk_denoise_opts;

void bk_denoise_opts_default(bk_denoise_opts *o);

typedef struct bk_denoise_result {
    double   seconds;         /* the whole denoise: guides, filter (incl. transfers), chart sums */
    double   filter_seconds;  /* the passes alone (GPU: kernel time) */
    double   prep_seconds;    /* the texels' colours and charts, and the charts' sums */
    double   backend_seconds; /* the backend's calls: the filter with its transfers */
    double   finish_seconds;  /* the charts scaled back to their sums, written into the map */
    uint64_t texels;          /* texels filtered */
    uint32_t charts;          /* charts scaled back to their sums */
} bk_denoise_result;

/* What the denoiser reads of a bake besides the colours: its texels, their charts, the pages. */
typedef struct bk_denoise_view {
    const uint8_t  *coverage; /* per pixel: texels baked where it is BK_COVER_TEXEL */
    const bk_texel *texels;   /* n texels; texels[i].pixel numbers pixels over all pages (NULL:
                                 bk_denoise_texel_colours with refs) */
    uint32_t        n;
    const uint32_t *tri_chart; /* each of the tri_count triangles' chart (BK_NONE: none) */
    uint32_t        tri_count;
    int             w, h, pages; /* pages of w x h (the texels' pixel numbers say which page) */
    float           texel_world; /* a texel's size in world units (bk_denoise_params) */
} bk_denoise_view;

/* Denoises the baked texels' colours in place: col[i] holds texel i's mean rgb and, in w, the
 * variance of its mean luminance (bk_bake_run_opts.texel_col); the texels of a chart that were
 * baked (coverage BK_COVER_TEXEL) are filtered and each chart scaled back to its sum, the others
 * are left as they are. v's w x h is one page; a texel's pixel numbers pixels over all pages. What
 * bk_denoise_lightmap does without an image: a bake that denoises holds only these colours (16 B
 * per texel) until the map is made, not the image and a variance per pixel as well.
 * The texels are given whole (v->texels, refs NULL), or as their refs alone (v->texels NULL) when be
 * kept its own copy of the last bake's texels (caps().keeps_texels): those very texels, in the
 * same order; the host then holds 8 B per texel instead of 32, and the texels' charts go into
 * the refs themselves (no array of 4 B per texel): on return each ref's tri field holds its
 * triangle's chart (tri_chart[tri], BK_NONE for none), which bk_fill_hidden_texels reads with
 * tri_chart NULL (on failure the refs are left in no defined state). */
int bk_denoise_texel_colours(bk_backend *be, bk_f4 *col, bk_texel_ref *refs, const bk_denoise_view *v,
                             const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size);
/* The same with a directional bake's bands (band: 3 per texel, bk_bake_run_opts.texel_dir), filtered
 * with the colours' weights and scaled back with their charts' factors (NULL: none). */
int bk_denoise_texel_bands(bk_backend *be, bk_f4 *col, bk_f4 *band, bk_texel_ref *refs, const bk_denoise_view *v,
                           const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size);

/* Denoises a baked lightmap in place: rgb (3 floats per pixel) and var (variance of the mean
 * luminance per pixel, bk_bake_run_opts.variance) over v's pages; texels baked where v's coverage
 * is BK_COVER_TEXEL. Other pixels are left as they are. be: the backend that runs the passes
 * (NULL: the CPU). The result does not depend on the number of threads. */
int bk_denoise_lightmap(bk_backend *be, float *rgb, const float *var, const bk_denoise_view *v,
                        const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size);

#endif
