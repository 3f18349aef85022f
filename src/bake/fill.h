/* fill.h - texels found inside geometry take the light of the nearest valid texel of their chart.
 *
 * Pipeline: bake (bk_bake_texels marks a texel whose rays mostly meet back faces as coverage
 * BK_COVER_NONE: it lies inside geometry, under a box standing on the floor, say) ->
 * bk_fill_hidden_texels (every such texel of a chart gets the value of the nearest validly baked
 * texel of the SAME chart) -> bk_image_dilate (the padding, from the charts' edges) ->
 * bk_image_write (image.h).
 *
 * Usage:
 *     bk_fill_stats fs;
 *     if (bk_fill_hidden_texels(rgb, cov, refs, ntx, atlas.tri_chart, atlas.width, atlas.height,
 *                               atlas.page_count, &fs, err, sizeof err) != 0) puts(err);
 *     for each page: bk_image_dilate(...);
 *
 * Nearest is exact Euclidean distance between texel centres (in a chart, a planar projection, that
 * is distance on the surface's plane), found by the two-pass distance transform of Felzenszwalb &
 * Huttenlocher ("Distance Transforms of Sampled Functions", Theory of Computing 8, 2012), run over
 * each chart's bounding box with only that chart's valid texels as seeds: linear in the boxes'
 * area, no iteration count to choose, and a hidden texel never sees another chart's light however
 * close that chart lies. Valid texels are never written; the result does not depend on the order
 * of anything (each chart reads only its own valid texels and writes only its own hidden ones).
 */
#ifndef BK_FILL_H
#define BK_FILL_H

#include "bk_bake.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bk_fill_stats {
    uint64_t filled;       /* hidden texels given the nearest valid texel of their own chart */
    uint32_t charts;       /* charts that had hidden texels and valid ones */
    uint32_t empty_charts; /* charts without a single valid texel (a box's face lying on the floor) */
    uint64_t empty_texels; /* their texels, filled flat (see bk_fill_hidden) */
    uint64_t unfilled;     /* texels left BK_COVER_NONE: only on a page with no valid texel at all */
    double   seconds;
} bk_fill_stats;

/* One image of w x h: chart[i] is the chart of pixel i (BK_NONE: no chart, padding), coverage[i]
 * BK_COVER_TEXEL for a validly baked texel. Every pixel with a chart and coverage BK_COVER_NONE
 * (hidden) takes rgb of the nearest pixel of the same chart with BK_COVER_TEXEL (ties: a
 * deterministic choice) and becomes BK_COVER_DILATED, so the dilation after it grows the padding
 * from it too. A chart with no valid texel is given one flat colour: the mean, over its pixels,
 * of the nearest valid texel of the image whatever its chart (it has no light of its own; one
 * colour keeps its mip levels clean). Pixels without a chart and valid texels are never written.
 * st (may be NULL) is set, not accumulated. Returns 0, or -1 with err when out of memory. */
int bk_fill_hidden(float *rgb, uint8_t *coverage, const uint32_t *chart, int w, int h, bk_fill_stats *st, char *err,
                   size_t err_size);

/* The same for an atlas of `pages` pages of w x h stacked vertically (atlas.h): the chart of a
 * pixel is tri_chart[tx.tri] of the texel the rasterizer made there (so exactly the baked texels
 * have charts), page by page. The texels are given as their refs (pixel and triangle: all it
 * reads; bk_texels_compact); tri_chart NULL: their tri fields hold the charts themselves (as
 * bk_denoise_texel_colours leaves them). Returns at once, touching nothing, when no texel is
 * hidden. */
int bk_fill_hidden_texels(float *rgb, uint8_t *coverage, const bk_texel_ref *tx, uint32_t n, const uint32_t *tri_chart,
                          int w, int h, int pages, bk_fill_stats *st, char *err, size_t err_size);
/* The same with refs malloc'ed, which it frees (and sets *refs NULL) as soon as it no longer
 * needs them: once the last page's chart map is made (4 B per pixel of a page), before the fill
 * itself and its scratch; at once when no texel is hidden; in any case before it returns. */
int bk_fill_hidden_refs(float *rgb, uint8_t *coverage, bk_texel_ref **refs, uint32_t n, const uint32_t *tri_chart,
                        int w, int h, int pages, bk_fill_stats *st, char *err, size_t err_size);

#endif /* BK_FILL_H */
