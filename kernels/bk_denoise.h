/* bk_denoise.h - the lightmap denoiser's per-texel filter, shared by CPU (src/bake/denoise.c) and CUDA
 * (kernels/cuda/denoise.cu).
 *
 * Pipeline (src/bake/denoise.h): baked mean and variance per texel + guides (world position, normal,
 * chart) -> bk_denoise_prefilter (the variance, 3 x 3 within the chart) -> passes of
 * bk_denoise_pass at steps 1, 2, 4, ... (an edge-avoiding a-trous wavelet filter, Dammertz et al.
 * 2010, with variance-guided luminance weights as in SVGF, Schied et al. 2017) -> each chart scaled
 * back to its own sum (src/bake/denoise.c), so no light is lost or gained.
 *
 * It works in the atlas: a texel's neighbours are texels of the same chart only (a chart is one
 * connected piece of surface, so its atlas neighbours are its world neighbours), weighed by
 *   - the B3-spline kernel (1/16, 1/4, 3/8, 1/4, 1/16) at the pass's step,
 *   - the normals: max(0, n_p . n_q)^sigma_n, so creases inside a chart stay sharp,
 *   - the distance of q from p's tangent plane, in texels: exp(-d^2 / (2 sigma_x^2)),
 *   - the luminance difference against the noise the two texels' variances predict:
 *     exp(-|Y_p - Y_q| / (sigma_l sqrt(var_p + var_q))), so shadow edges (differences the
 *     variance does not explain) are kept, and noise (differences it does) is averaged away.
 * Each pass also carries the variance of its output (sum w^2 var / (sum w)^2), so later, wider
 * passes trust the already smoothed texels more.
 *
 * Layouts (one page of w x h texels, row-major): col = (r, g, b, variance of the mean
 * luminance); pos = (x, y, z, -); nrm = (nx, ny, nz, chart id bits), chart BK_DN_NONE for texels
 * without a baked value (outside charts, inside geometry): those are never read or written. The
 * backends receive a page as its list of texels (bk_texel: position, normal, pixel), a chart and
 * a colour per texel, and scatter them into these layouts themselves (bk_denoise_scatter), so
 * only the texels travel to a GPU, not whole pages.
 */
#ifndef BK_DENOISE_H
#define BK_DENOISE_H

#include "bk_bake.h"
#include "bk_common.h"
#include <math.h>

#define BK_DN_NONE 0xFFFFFFFFu

typedef struct bk_denoise_params {
    int   w, h;
    float texel_world; /* world size of one texel (plane distances are measured in texels) */
    float sigma_l;     /* luminance: differences within sigma_l standard deviations mix */
    float sigma_n;     /* normals: exponent of the cosine */
    float sigma_x;     /* plane distance, in texels */
} bk_denoise_params;

BK_HD uint32_t bk_dn_chart(bk_f4 n) { return bk_float_bits(n.w); }
BK_HD float    bk_dn_lum(bk_f4 c) { return 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z; }

BK_HD bk_f4 bk_dn_load(const bk_f4 *a, size_t i)
{
#if BK_DEVICE_CODE
    float4 v = __ldg((const float4 *)(a + i));
    bk_f4  r;
    r.x = v.x;
    r.y = v.y;
    r.z = v.z;
    r.w = v.w;
    return r;
#else
    return a[i];
#endif
}

/* The variance of texel (x, y) averaged over its 3 x 3 neighbours of the same chart (the per-texel
 * estimate from a few samples is itself noisy). */
BK_HD float bk_denoise_prefilter(const bk_denoise_params *p, const bk_f4 *col, const bk_f4 *nrm, int x, int y)
{
    const size_t   i = (size_t)y * (size_t)p->w + (size_t)x;
    const uint32_t chart = bk_dn_chart(bk_dn_load(nrm, i));
    if (chart == BK_DN_NONE) return 0.0f;
    float sum = 0.0f, wsum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            const int qx = x + dx, qy = y + dy;
            if (qx < 0 || qy < 0 || qx >= p->w || qy >= p->h) continue;
            const size_t j = (size_t)qy * (size_t)p->w + (size_t)qx;
            if (bk_dn_chart(bk_dn_load(nrm, j)) != chart) continue;
            const float k = (dx == 0 ? 2.0f : 1.0f) * (dy == 0 ? 2.0f : 1.0f);
            sum += k * bk_dn_load(col, j).w;
            wsum += k;
        }
    }
    return sum / wsum;
}

/* One a-trous pass at `step` for texel (x, y): the weighted mean of its 5 x 5 taps (rgb) and the
 * variance of that mean (w). var_c is the texel's prefiltered variance. Texels without a chart come
 * back unchanged. band (NULL: none): a directional bake's bands, 3 per pixel (bk_bake_dir_sample,
 * rgb in each), filtered with the same weights into bout[0..2], so their direction stays the
 * map's. */
BK_HD bk_f4 bk_denoise_pass_bands(const bk_denoise_params *p, const bk_f4 *col, const bk_f4 *pos, const bk_f4 *nrm,
                                  float var_c, int x, int y, int step, const bk_f4 *band, bk_f4 *bout)
{
    const size_t   i = (size_t)y * (size_t)p->w + (size_t)x;
    const bk_f4    c = bk_dn_load(col, i), n = bk_dn_load(nrm, i);
    const uint32_t chart = bk_dn_chart(n);
    if (chart == BK_DN_NONE) {
        for (int k = 0; band && k < 3; ++k) bout[k] = bk_dn_load(band, 3 * i + (size_t)k);
        return c;
    }
    const bk_f4 xp = bk_dn_load(pos, i);
    const float lum = bk_dn_lum(c);
    const float inv_tw = p->texel_world > 0.0f ? 1.0f / p->texel_world : 0.0f;
    const float plane_k = 0.5f / (p->sigma_x * p->sigma_x);
    const float kern[3] = { 0.375f, 0.25f, 0.0625f };
    float       r = 0.0f, g = 0.0f, b = 0.0f, v = 0.0f, wsum = 0.0f;
    bk_f4       bs[3];
    for (int k = 0; k < 3; ++k) bs[k].x = bs[k].y = bs[k].z = bs[k].w = 0.0f;
    for (int dy = -2; dy <= 2; ++dy) {
        const int qy = y + dy * step;
        if (qy < 0 || qy >= p->h) continue;
        for (int dx = -2; dx <= 2; ++dx) {
            const int qx = x + dx * step;
            if (qx < 0 || qx >= p->w) continue;
            const size_t j = (size_t)qy * (size_t)p->w + (size_t)qx;
            const bk_f4  nq = bk_dn_load(nrm, j);
            if (bk_dn_chart(nq) != chart) continue;
            const bk_f4 cq = bk_dn_load(col, j), xq = bk_dn_load(pos, j);
            float       w = kern[dx < 0 ? -dx : dx] * kern[dy < 0 ? -dy : dy];
            if (dx != 0 || dy != 0) {
                const float cn = n.x * nq.x + n.y * nq.y + n.z * nq.z;
                if (!(cn > 0.0f)) continue;
                const float d = ((xq.x - xp.x) * n.x + (xq.y - xp.y) * n.y + (xq.z - xp.z) * n.z) * inv_tw;
                const float sd = sqrtf(bk_maxf(var_c + cq.w, 0.0f));
                const float dl = bk_absf(bk_dn_lum(cq) - lum);
                float       e = d * d * plane_k;
                e += sd > 0.0f ? dl / (p->sigma_l * sd) : (dl > 0.0f ? 1e30f : 0.0f);
                w *= powf(cn, p->sigma_n) * expf(-e);
            }
            r += w * cq.x;
            g += w * cq.y;
            b += w * cq.z;
            v += w * w * cq.w;
            wsum += w;
            for (int k = 0; band && k < 3; ++k) {
                const bk_f4 bq = bk_dn_load(band, 3 * j + (size_t)k);
                bs[k].x += w * bq.x;
                bs[k].y += w * bq.y;
                bs[k].z += w * bq.z;
            }
        }
    }
    bk_f4       o;
    const float inv = 1.0f / wsum; /* wsum >= the centre's own weight, 0.14 */
    o.x = r * inv;
    o.y = g * inv;
    o.z = b * inv;
    o.w = v * inv * inv;
    for (int k = 0; band && k < 3; ++k) {
        bout[k].x = bs[k].x * inv;
        bout[k].y = bs[k].y * inv;
        bout[k].z = bs[k].z * inv;
        bout[k].w = 0.0f;
    }
    return o;
}

/* One pass without bands. */
BK_HD bk_f4 bk_denoise_pass(const bk_denoise_params *p, const bk_f4 *col, const bk_f4 *pos, const bk_f4 *nrm,
                            float var_c, int x, int y, int step)
{
    return bk_denoise_pass_bands(p, col, pos, nrm, var_c, x, y, step, NULL, NULL);
}

/* Texel i of a page's list into the page's layouts: its colour (rgb, variance), position and
 * normal with its chart, and its 3 bands (band NULL: none); chart BK_DN_NONE leaves it out.
 * base: the pixel number of the page's first texel. The page's nrm must start as BK_DN_NONE
 * charts. */
BK_HD void bk_denoise_scatter(const bk_texel *tx, const uint32_t *chart, const bk_f4 *col, uint32_t i, uint64_t base,
                              bk_f4 *pcol, bk_f4 *ppos, bk_f4 *pnrm, const bk_f4 *band, bk_f4 *pband)
{
    const uint32_t c = chart[i];
    if (c == BK_DN_NONE) return;
    const bk_texel t = tx[i];
    const size_t   k = (size_t)((uint64_t)t.pixel - base);
    bk_f4          q, n;
    q.x = t.px;
    q.y = t.py;
    q.z = t.pz;
    q.w = 0.0f;
    n.x = t.nx;
    n.y = t.ny;
    n.z = t.nz;
    n.w = bk_bits_float(c);
    pcol[k] = col[i];
    ppos[k] = q;
    pnrm[k] = n;
    for (int b = 0; band && b < 3; ++b) pband[3 * k + (size_t)b] = band[3 * (size_t)i + (size_t)b];
}

#endif /* BK_DENOISE_H */
