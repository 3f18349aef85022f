/* lit.c - the lit pages of a glTF output (lit.h says what they hold and why).
 *
 * Pipeline: out stage, called by gltf.c. Per triangle: its lightmap-UV triangle in texel units,
 * the texels of its box grown by one, each texel centre's barycentrics; the signed distance to
 * the nearest edge decides which triangle a texel shows (the largest wins: inside > 0).
 */
#include "lit.h"
#include "image.h"
#include "raster.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LIT_REACH  0.75f /* texels this far outside a triangle still take it (edge texels) */
#define LIT_DILATE 32    /* rounds of dilation: past the padding of any atlas (the lightmap's is padding + 14) */

/* Triangle t into its page: every texel it is the nearest triangle to so far. */
static void raster_tri(const bk_scene *s, const bk_atlas *a, const bk_tex_pool *pool, uint32_t t, const float *rgb,
                       float *out, float *best, uint8_t *cov)
{
    const bk_tex_view tv = bk_tex_pool_view(pool);
    const int         w = a->width, h = a->height;
    const size_t      page = a->tri_page && a->page_count > 1 ? a->tri_page[t] : 0;
    const float      *uv = a->uv + 6 * (size_t)t;
    double            X[3], Y[3];
    for (int k = 0; k < 3; ++k) {
        X[k] = (double)uv[2 * k] * w;
        Y[k] = (double)uv[2 * k + 1] * h;
    }
    double area2 = (X[1] - X[0]) * (Y[2] - Y[0]) - (X[2] - X[0]) * (Y[1] - Y[0]);
    if (!(fabs(area2) > 1e-12)) return;
    /* the length of the edge opposite each corner: distance = weight x |area2| / length */
    double len[3];
    for (int k = 0; k < 3; ++k) {
        int i = (k + 1) % 3, j = (k + 2) % 3;
        len[k] = hypot(X[j] - X[i], Y[j] - Y[i]);
        if (!(len[k] > 0)) return;
    }
    double lo_x = fmin(X[0], fmin(X[1], X[2])) - 1, hi_x = fmax(X[0], fmax(X[1], X[2])) + 1;
    double lo_y = fmin(Y[0], fmin(Y[1], Y[2])) - 1, hi_y = fmax(Y[0], fmax(Y[1], Y[2])) + 1;
    int    x0 = lo_x < 0 ? 0 : (int)lo_x, x1 = hi_x >= w ? w - 1 : (int)hi_x;
    int    y0 = lo_y < 0 ? 0 : (int)lo_y, y1 = hi_y >= h ? h - 1 : (int)hi_y;
    for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) {
            double px = x + 0.5, py = y + 0.5, b[3];
            b[1] = ((px - X[0]) * (Y[2] - Y[0]) - (X[2] - X[0]) * (py - Y[0])) / area2;
            b[2] = ((X[1] - X[0]) * (py - Y[0]) - (px - X[0]) * (Y[1] - Y[0])) / area2;
            b[0] = 1.0 - b[1] - b[2];
            double d = INFINITY;
            for (int k = 0; k < 3; ++k) d = fmin(d, b[k] * fabs(area2) / len[k]);
            size_t i = page * (size_t)w * h + (size_t)y * w + x;
            if (!(d >= -LIT_REACH) || !(d > best[i])) continue;
            best[i] = (float)d;
            double sum = 0;
            for (int k = 0; k < 3; ++k) sum += b[k] = b[k] > 0 ? b[k] : 0;
            float alb[3], em[3];
            bk_tex_pool_surface(pool, &tv, s, t, (float)(b[1] / sum), (float)(b[2] / sum), alb, em);
            for (int k = 0; k < 3; ++k) out[3 * i + k] = alb[k] * rgb[3 * i + k] + em[k];
            cov[i] = BK_COVER_TEXEL;
        }
}

int bk_lit_pages(const bk_scene *s, const bk_atlas *a, const float *rgb, const bk_tex_pool *pool, float *out, char *err,
                 size_t err_size)
{
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "lit pages: atlas built for %u triangles, scene has %u", a->tri_count,
                       s->tri_count);
    size_t      npx = BK_ATLAS_PIXELS(a), page_px = (size_t)a->width * a->height;
    float      *best = malloc(sizeof(float) * (npx ? npx : 1));
    uint8_t    *cov = calloc(npx ? npx : 1, 1);
    uint32_t   *reach = a->close_charts ? malloc(sizeof(uint32_t) * (npx ? npx : 1)) : NULL;
    bk_tex_pool own;
    memset(&own, 0, sizeof own);
    int rc = 0;
    if (!best || !cov || (a->close_charts && !reach)) rc = bk_fail(err, err_size, "lit pages: out of memory");
    if (!rc && !pool) {
        if (bk_tex_pool_build(s, &own, err, err_size)) rc = -1;
        pool = &own;
    }
    if (!rc) {
        for (size_t i = 0; i < npx; ++i) best[i] = -INFINITY;
        memset(out, 0, sizeof(float) * 3 * npx);
        for (uint32_t t = 0; t < s->tri_count; ++t) raster_tri(s, a, pool, t, rgb, out, best, cov);
        if (reach) bk_atlas_reach_ids(a, reach);
        for (int p = 0; p < a->page_count; ++p)
            bk_image_dilate_charts(out + 3 * page_px * (size_t)p, cov + page_px * (size_t)p,
                                   reach ? reach + page_px * (size_t)p : NULL, a->width, a->height, LIT_DILATE);
    }
    if (pool == &own) bk_tex_pool_free(&own);
    free(best);
    free(cov);
    free(reach);
    return rc;
}
