/* raster.c - conservative rasterization of the atlas: texels for the bake, coverage, chart ids.
 *
 * Pipeline: bk_atlas (atlas.c) -> every texel whose square a triangle's UV footprint touches ->
 * bk_texel (kernels/bk_bake.h) in row-major order -> bake.
 *
 * A texel square touches a triangle when no separating axis exists among the two image axes (the
 * triangle's bounding box) and the three edge normals; for an edge function E(p) = a x + b y + c
 * the square of centre c lies on the inner side somewhere iff E(c) + (|a| + |b|) / 2 >= 0
 * (Akenine-Moller & Aila 2005, "Conservative and tiled rasterization using a modified triangle
 * setup"). A triangle flat in UV (a sliver far below a texel) is tested as its longest segment.
 * Each row tests only the span its edges allow (rtri_row_span), not the whole bounding box, so a
 * long diagonal sliver costs its length in texels, not the square of it.
 * Where triangles meet in one texel the one nearest the texel centre (distance 0 when it covers
 * the centre; the lower triangle index on a tie) owns it, and the texel's position is the nearest
 * point of that triangle to the centre, so it always lies on the surface.
 */
#include "raster.h"
#include "atlas_internal.h"
#include "bk_texel.h"
#include "pool.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct rtri {
    bk_uvtri u;            /* corners in texel units, edge functions, flat and point (bk_texel.h) */
    int      centre;       /* 1: a rectangular chart's triangle: a texel is its own when its centre is
                              inside (its corners sit on texel corners: no conservative ring) */
    double half;           /* half the side of the square tested around a texel centre: 0.5 the texel
                              itself, 1 the centres a bilinear lookup at a point of the triangle reads */
    int    x0, y0, x1, y1; /* texel bounding box, clamped to the atlas */
    int    spans;          /* row spans set up (rtri_spans_setup); 0: rows cover the whole box */
    double inv_a[3];       /* row spans (rtri_row_span): 1 / a, 0 for an edge that restricts nothing */
    double rad[3];         /* the edge's texel half-extent with rtri_touches' slack */
    double slack[3];       /* texels of slack on the edge's bound in x */
} rtri;

/* Row-span constants (see rtri_row_span), for the loops over a triangle's texels only and only
 * for boxes more than a few texels wide, where they can save anything. The bound
 * -(b cy + c +- rad) / a - 0.5 is evaluated with a reciprocal; its slack, one texel plus far more
 * than the rounding of E's terms divided by |a|, lets a nearly horizontal edge fall back to the
 * whole box. */
static void rtri_spans_setup(rtri *r)
{
    r->spans = !r->u.point && r->x1 - r->x0 > 3;
    if (!r->spans) return;
    for (int i = 0; i < (r->u.flat ? 1 : 3); ++i) {
        double a = r->u.a[i];
        r->rad[i] = r->half * (fabs(a) + fabs(r->u.b[i])) * (1.0 + 1e-9);
        r->inv_a[i] = a != 0 ? 1.0 / a : 0.0;
        r->slack[i] =
            a != 0
                ? 1.0 + 1e-10 *
                            (fabs(a) * (r->x1 + 1.0) + fabs(r->u.b[i]) * (r->y1 + 1.0) + fabs(r->u.c[i]) + r->rad[i]) /
                            fabs(a)
                : 0.0;
    }
}

static int rtri_setup_half(const bk_atlas *at, uint32_t t, double half, rtri *r)
{
    const float *uv = at->uv + 6 * (size_t)t;
    double       W = at->width, H = at->height;
    /* pages are stacked vertically (atlas.h): page p's rows are p * height .. */
    int    page = at->tri_page ? (int)at->tri_page[t] : 0, ylo = page * at->height, yhi = ylo + at->height - 1;
    double lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX };
    r->centre = t >= at->rect_first_tri && half == 0.5;
    r->half = half;
    bk_uvtri_corners(uv, W, H, ylo, r->u.p);
    for (int k = 0; k < 3; ++k)
        for (int d = 0; d < 2; ++d) {
            if (r->u.p[k][d] < lo[d]) lo[d] = r->u.p[k][d];
            if (r->u.p[k][d] > hi[d]) hi[d] = r->u.p[k][d];
        }
    if (!(lo[0] <= hi[0] && lo[1] <= hi[1])) return 0; /* NaN */
    /* texel x's square [x + 0.5 - half, x + 0.5 + half] meets [lo, hi], touching included on
     * both sides as rtri_touches takes it (floor(lo + 0.5 - half) left out the texel whose square
     * ends exactly at lo: a reach texel the packer keeps for its chart, which the dilation then
     * filled from both sides) */
    r->x0 = (int)ceil(lo[0] - 0.5 - half);
    r->x1 = (int)floor(hi[0] - 0.5 + half);
    r->y0 = (int)ceil(lo[1] - 0.5 - half);
    r->y1 = (int)floor(hi[1] - 0.5 + half);
    if (r->x0 < 0) r->x0 = 0;
    if (r->y0 < ylo) r->y0 = ylo;
    if (r->x1 >= at->width) r->x1 = at->width - 1;
    if (r->y1 > yhi) r->y1 = yhi;
    if (r->x0 > r->x1 || r->y0 > r->y1) return 0;
    bk_uvtri_edges(&r->u);
    return 1;
}

static int rtri_setup(const bk_atlas *at, uint32_t t, rtri *r) { return rtri_setup_half(at, t, 0.5, r); }

/* Does the texel (x, y) square touch the triangle? (within the bounding box already) */
static int rtri_touches(const rtri *r, int x, int y)
{
    double cx = x + 0.5, cy = y + 0.5;
    if (r->u.point) return 1;
    if (r->centre && !r->u.flat) {
        /* the centre inside, with a margin for the UVs' float rounding: centres lie half a texel
         * from the rectangle's edges, and on its diagonal either triangle may take them */
        for (int i = 0; i < 3; ++i) {
            double e = r->u.a[i] * cx + r->u.b[i] * cy + r->u.c[i];
            if (e < -1e-4 * (fabs(r->u.a[i]) + fabs(r->u.b[i]))) return 0;
        }
        return 1;
    }
    if (r->u.flat) {
        double e = r->u.a[0] * cx + r->u.b[0] * cy + r->u.c[0], rad = r->half * (fabs(r->u.a[0]) + fabs(r->u.b[0]));
        return fabs(e) <= rad * (1.0 + 1e-9);
    }
    for (int i = 0; i < 3; ++i) {
        double e = r->u.a[i] * cx + r->u.b[i] * cy + r->u.c[i], rad = r->half * (fabs(r->u.a[i]) + fabs(r->u.b[i]));
        if (e + rad * (1.0 + 1e-9) < 0) return 0;
    }
    return 1;
}

/* The texels of row y that may touch the triangle: [*xa, *xb], a superset of those rtri_touches
 * accepts, so callers test only these instead of the whole bounding box and a long sliver costs
 * its length in texels, not its box. Along a row each edge's test is linear in x: a cx + k + rad
 * >= 0 (flat triangles: -rad <= a cx + k <= rad), with the slack of rtri_span_setup. An edge
 * with a == 0 is the same on the whole row and restricts nothing here. 0: no texel. */
static int rtri_row_span(const rtri *r, int y, int *xa, int *xb)
{
    double lo = r->x0, hi = r->x1, cy = y + 0.5;
    if (!r->spans) {
        *xa = r->x0;
        *xb = r->x1;
        return 1;
    }
    for (int i = 0; i < (r->u.flat ? 1 : 3); ++i) {
        if (r->inv_a[i] == 0) continue;
        double k = r->u.b[i] * cy + r->u.c[i];
        double x_in = -(k + r->rad[i]) * r->inv_a[i] - 0.5;
        if (r->u.a[i] > 0) lo = fmax(lo, floor(x_in - r->slack[i]));
        else hi = fmin(hi, ceil(x_in + r->slack[i]));
        if (r->u.flat) {
            double x_out = -(k - r->rad[i]) * r->inv_a[i] - 0.5;
            if (r->u.a[i] > 0) hi = fmin(hi, ceil(x_out + r->slack[i]));
            else lo = fmax(lo, floor(x_out - r->slack[i]));
        }
    }
    if (!(lo <= hi)) return 0;
    *xa = (int)lo;
    *xb = (int)hi;
    return 1;
}

/* Nearest point of the triangle to q: barycentric weights w[3]; returns the squared distance. */
static double rtri_nearest(const rtri *r, double qx, double qy, double w[3])
{
    return bk_uvtri_nearest(&r->u, qx, qy, w);
}

/* ---- row bands: the passes below run one band of BAND_ROWS rows per task ------------------
 * Each band visits the triangles touching its rows in ascending index order, clipped to its
 * rows, so every texel sees the same triangles in the same order as one loop over all triangles
 * would: the result does not depend on the thread count (and a texel is written by one band). */

#define BAND_ROWS 16

typedef struct raster_bands {
    uint32_t  nb;    /* bands: ceil(rows / BAND_ROWS) */
    uint32_t *start; /* nb + 1: band b's triangles are tris[start[b] .. start[b + 1]) */
    uint32_t *tris;  /* ascending within a band */
    int      *y01;   /* 2 per triangle: rows y0, y1 (y0 > y1: no texels) */
    double    half;  /* the squares tested around texel centres (rtri.half) */
} raster_bands;

static void bands_rows_fn(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const bk_atlas *a = ((const void **)ctx)[0];
    raster_bands   *B = ((void **)ctx)[1];
    int            *y01 = B->y01;
    for (size_t t = b; t < e; ++t) {
        rtri r;
        if (a->tri_chart[t] == BK_NONE || !rtri_setup_half(a, (uint32_t)t, B->half, &r)) {
            y01[2 * t] = 1;
            y01[2 * t + 1] = 0;
            continue;
        }
        y01[2 * t] = r.y0;
        y01[2 * t + 1] = r.y1;
    }
}

static void bands_free(raster_bands *B)
{
    free(B->start);
    free(B->tris);
    free(B->y01);
    memset(B, 0, sizeof *B);
}

/* 0, or -1 out of memory. */
static int bands_build_half(const bk_atlas *a, double half, raster_bands *B)
{
    memset(B, 0, sizeof *B);
    B->half = half;
    size_t rows = (size_t)a->height * (size_t)a->page_count, T = a->tri_count;
    B->nb = (uint32_t)((rows + BAND_ROWS - 1) / BAND_ROWS);
    B->start = calloc((size_t)B->nb + 1, sizeof(uint32_t));
    B->y01 = malloc(sizeof(int) * 2 * (T ? T : 1));
    if (!B->start || !B->y01) {
        bands_free(B);
        return -1;
    }
    const void *ctx[2] = { a, B };
    bk_parallel_for(T, 4096, bands_rows_fn, (void *)ctx);
    size_t total = 0;
    for (size_t t = 0; t < T; ++t) {
        int y0 = B->y01[2 * t], y1 = B->y01[2 * t + 1];
        if (y0 > y1) continue;
        for (int b = y0 / BAND_ROWS; b <= y1 / BAND_ROWS; ++b) B->start[b + 1]++;
        total += (size_t)(y1 / BAND_ROWS - y0 / BAND_ROWS + 1);
    }
    if (total > UINT32_MAX || !(B->tris = malloc(sizeof(uint32_t) * (total ? total : 1)))) {
        bands_free(B);
        return -1;
    }
    for (uint32_t b = 0; b < B->nb; ++b) B->start[b + 1] += B->start[b];
    uint32_t *cur = malloc(sizeof(uint32_t) * ((size_t)B->nb + 1));
    if (!cur) {
        bands_free(B);
        return -1;
    }
    memcpy(cur, B->start, sizeof(uint32_t) * B->nb);
    for (size_t t = 0; t < T; ++t) {
        int y0 = B->y01[2 * t], y1 = B->y01[2 * t + 1];
        if (y0 > y1) continue;
        for (int b = y0 / BAND_ROWS; b <= y1 / BAND_ROWS; ++b) B->tris[cur[b]++] = (uint32_t)t;
    }
    free(cur);
    return 0;
}

static int bands_build(const bk_atlas *a, raster_bands *B) { return bands_build_half(a, 0.5, B); }

/* Calls VISIT(t, x, y) for every texel of band b that triangle t touches, triangles in
 * ascending order (r is the triangle's setup). */
#define BAND_FOR_TEXELS(a, B, b, r, t, x, y, VISIT)                        \
    for (uint32_t bi_ = (B)->start[b]; bi_ < (B)->start[(b) + 1]; ++bi_) { \
        uint32_t t = (B)->tris[bi_];                                       \
        if (!rtri_setup_half(a, t, (B)->half, &r)) continue;               \
        rtri_spans_setup(&r);                                              \
        int ylo_ = (int)(b)*BAND_ROWS, yhi_ = ylo_ + BAND_ROWS - 1;        \
        if (r.y0 > ylo_) ylo_ = r.y0;                                      \
        if (r.y1 < yhi_) yhi_ = r.y1;                                      \
        for (int y = ylo_, xa_, xb_; y <= yhi_; ++y)                       \
            if (rtri_row_span(&r, y, &xa_, &xb_))                          \
                for (int x = xa_; x <= xb_; ++x)                           \
                    if (rtri_touches(&r, x, y)) { VISIT; }                 \
    }

static size_t band_lo(const bk_atlas *a, size_t b) { return b * BAND_ROWS * (size_t)a->width; }
static size_t band_hi(const bk_atlas *a, size_t b)
{
    size_t e = (b + 1) * BAND_ROWS * (size_t)a->width, N = BK_ATLAS_PIXELS(a);
    return e < N ? e : N;
}

typedef struct cov_ctx {
    const bk_atlas     *a;
    const raster_bands *B;
    uint8_t            *mask;
    uint32_t           *ids;
    uint64_t           *count;
} cov_ctx;

static void coverage_fn(void *ctx, size_t b0, size_t b1, int worker)
{
    (void)worker;
    cov_ctx        *c = ctx;
    const bk_atlas *a = c->a;
    for (size_t b = b0; b < b1; ++b) {
        size_t lo = band_lo(a, b), hi = band_hi(a, b);
        rtri   r;
        if (c->mask) {
            memset(c->mask + lo, 0, hi - lo);
            BAND_FOR_TEXELS(a, c->B, b, r, t, x, y, c->mask[(size_t)y * a->width + x] = 1)
            uint64_t n = 0;
            for (size_t i = lo; i < hi; ++i) n += c->mask[i];
            c->count[b] = n;
        } else {
            for (size_t i = lo; i < hi; ++i) c->ids[i] = BK_NONE;
            BAND_FOR_TEXELS(a, c->B, b, r, t, x, y, c->ids[(size_t)y * a->width + x] = a->tri_chart[t])
        }
    }
}

/* Serial fallback when the bands cannot be allocated (out of memory): one pass over all triangles. */
static void coverage_serial(const bk_atlas *a, double half, uint8_t *mask, uint32_t *ids)
{
    for (uint32_t t = 0; t < a->tri_count; ++t) {
        rtri r;
        if (a->tri_chart[t] == BK_NONE || !rtri_setup_half(a, t, half, &r)) continue;
        rtri_spans_setup(&r);
        for (int y = r.y0, xa, xb; y <= r.y1; ++y)
            if (rtri_row_span(&r, y, &xa, &xb))
                for (int x = xa; x <= xb; ++x)
                    if (rtri_touches(&r, x, y)) {
                        if (mask) mask[(size_t)y * a->width + x] = 1;
                        else ids[(size_t)y * a->width + x] = a->tri_chart[t];
                    }
    }
}

uint64_t bk_atlas_coverage(const bk_atlas *a, uint8_t *mask)
{
    size_t       N = BK_ATLAS_PIXELS(a);
    raster_bands B;
    uint64_t    *count = NULL;
    if (bands_build(a, &B) == 0 && (count = calloc(B.nb ? B.nb : 1, sizeof(uint64_t)))) {
        cov_ctx c = { a, &B, mask, NULL, count };
        bk_parallel_for(B.nb, 1, coverage_fn, &c);
        uint64_t n = 0;
        for (uint32_t b = 0; b < B.nb; ++b) n += count[b];
        free(count);
        bands_free(&B);
        return n;
    }
    bands_free(&B);
    memset(mask, 0, N);
    coverage_serial(a, 0.5, mask, NULL);
    uint64_t n = 0;
    for (size_t i = 0; i < N; ++i) n += mask[i];
    return n;
}

/* Every texel within half of a triangle (0.5: the ones it touches; BK_ATLAS_REACH: the ones its
 * bilinear lookups read) gets its chart, a later triangle's over an earlier one's. A chart's
 * reach holds its own texels and no other chart's, so the reach alone labels those too. */
static void chart_ids(const bk_atlas *a, double half, uint32_t *ids)
{
    size_t       N = BK_ATLAS_PIXELS(a);
    raster_bands B;
    if (bands_build_half(a, half, &B) == 0) {
        cov_ctx c = { a, &B, NULL, ids, NULL };
        bk_parallel_for(B.nb, 1, coverage_fn, &c);
        bands_free(&B);
        return;
    }
    for (size_t i = 0; i < N; ++i) ids[i] = BK_NONE;
    coverage_serial(a, half, NULL, ids);
}

void bk_atlas_chart_ids(const bk_atlas *a, uint32_t *ids) { chart_ids(a, 0.5, ids); }
void bk_atlas_reach_ids(const bk_atlas *a, uint32_t *ids) { chart_ids(a, BK_ATLAS_REACH, ids); }

void bk_atlas_debug_rgb(const bk_atlas *a, float *rgb)
{
    size_t    N = BK_ATLAS_PIXELS(a);
    uint32_t *ids = malloc(sizeof(uint32_t) * (N ? N : 1));
    memset(rgb, 0, sizeof(float) * 3 * N);
    if (!ids) return;
    bk_atlas_chart_ids(a, ids);
    for (size_t i = 0; i < N; ++i) {
        if (ids[i] == BK_NONE) continue;
        uint32_t h = ids[i] * 0x9E3779B1u;
        h ^= h >> 15;
        h *= 0x2C1B3C6Du;
        h ^= h >> 12;
        h *= 0x297A2D39u;
        h ^= h >> 15;
        for (int k = 0; k < 3; ++k) rgb[3 * i + k] = 0.15f + 0.85f * (float)((h >> (8 * k)) & 0xFF) / 255.0f;
    }
    free(ids);
}

/* The texel of pixel i, owned by triangle t (r: its setup). */
static void texel_make(const bk_scene *s, const bk_atlas *a, const rtri *r, uint32_t t, size_t i, bk_texel *o)
{
    double w[3];
    rtri_nearest(r, (double)(i % (size_t)a->width) + 0.5, (double)(i / (size_t)a->width) + 0.5, w);
    const float *P[3], *N[3] = { NULL, NULL, NULL };
    int          have_vn = s->tri_vn != NULL && s->normals != NULL;
    for (int c = 0; c < 3; ++c) {
        P[c] = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + c];
        uint32_t vn = have_vn ? s->tri_vn[3 * (size_t)t + c] : BK_NONE;
        if (vn == BK_NONE || vn >= s->normal_count) have_vn = 0;
        else N[c] = s->normals + 3 * (size_t)vn;
    }
    if (!have_vn) N[0] = N[1] = N[2] = NULL;
    bk_texel_fill(P[0], P[1], P[2], N[0], N[1], N[2], w, t, (uint32_t)i, o);
}

typedef struct rast_ctx {
    const bk_scene     *s;
    const bk_atlas     *a;
    const raster_bands *B;
    float              *best_d;
    uint32_t           *best_t;
    uint32_t           *first; /* nb + 1: texels before each band (pass 2) */
    bk_texel           *tx;    /* pass 2 makes the texels, */
    bk_texel_ref       *refs;  /*   or only their refs */
    uint8_t            *cov;
} rast_ctx;

/* Pass 1: the owner of each texel of the band, and the band's texel count in first[b + 1]. */
static void rast_owner_fn(void *ctx, size_t b0, size_t b1, int worker)
{
    (void)worker;
    rast_ctx       *c = ctx;
    const bk_atlas *a = c->a;
    for (size_t b = b0; b < b1; ++b) {
        size_t    lo = band_lo(a, b), hi = band_hi(a, b);
        float    *best_d = c->best_d;
        uint32_t *best_t = c->best_t;
        for (size_t i = lo; i < hi; ++i) {
            best_d[i] = FLT_MAX;
            best_t[i] = BK_NONE;
        }
        rtri r;
        BAND_FOR_TEXELS(a, c->B, b, r, t, x, y, {
            double w[3];
            float  d = (float)rtri_nearest(&r, x + 0.5, y + 0.5, w);
            size_t i = (size_t)y * a->width + x;
            if (d < best_d[i]) {
                best_d[i] = d;
                best_t[i] = t;
            }
        })
        uint32_t n = 0;
        for (size_t i = lo; i < hi; ++i) n += best_t[i] != BK_NONE;
        c->first[b + 1] = n;
    }
}

/* Pass 2: the band's texels, in pixel order, from first[b]. */
static void rast_emit_fn(void *ctx, size_t b0, size_t b1, int worker)
{
    (void)worker;
    rast_ctx       *c = ctx;
    const bk_atlas *a = c->a;
    for (size_t b = b0; b < b1; ++b) {
        size_t   lo = band_lo(a, b), hi = band_hi(a, b);
        uint32_t k = c->first[b], last_t = BK_NONE;
        rtri     r;
        for (size_t i = lo; i < hi; ++i) {
            uint32_t t = c->best_t[i];
            if (c->cov) c->cov[i] = t != BK_NONE;
            if (t == BK_NONE) continue;
            if (c->refs) {
                c->refs[k].pixel = (uint32_t)i;
                c->refs[k].tri = t;
                k++;
                continue;
            }
            if (t != last_t) {
                rtri_setup(a, t, &r);
                last_t = t;
            } /* a row's texels mostly share a triangle */
            texel_make(c->s, a, &r, t, i, &c->tx[k++]);
        }
    }
}

/* ---- rectangles alone: each quad's texels made directly -----------------------------------------
 * An atlas of rectangles alone (voxel quads: rect_first_tri 0, triangles 2 q and 2 q + 1 the
 * quad q, corners c0 c1 c2 and c0 c2 c3) needs no owner per pixel: the packer keeps every quad's
 * texels apart from the others' (padding), so a texel is touched by its quad's two triangles
 * only. Where the corners lie on texel corners (a page side that is a power of two makes the
 * UVs exact), the general pass's tests are exact too (edge functions of integers at half-integer
 * centres): by centre, a quad takes exactly the texels of its rectangle, and of two triangles
 * that both take a centre on the diagonal (distance 0 to both) the first owns it. So a texel is
 * the first triangle's when its centre lies on c1's side of the diagonal c0 c2 or on it. A
 * band's quads, sorted by their first column, give its texels in pixel order row by row. Any
 * other quad sends the whole atlas to the general pass, as bk_atlas_raster_general does (tests
 * compare the two). */

int bk_atlas_raster_general;

typedef struct rq_ctx {
    const bk_scene *s;
    const bk_atlas *a;
    uint32_t        nq;    /* quads */
    int            *box;   /* 4 per quad: its texels x0 y0 x1 y1, inclusive (rows in the stacked pages) */
    uint8_t        *bad;   /* per quad: corners off texel corners (or NaN, or zero area): general pass */
    uint32_t        nb;    /* bands of BAND_ROWS rows */
    uint32_t       *start; /* nb + 1 */
    uint64_t       *quads; /* band by band: first column << 32 | quad, sorted */
    uint32_t       *first; /* nb + 1: texels before each band */
    bk_texel       *tx;
    bk_texel_ref   *refs;
    uint8_t        *cov;
} rq_ctx;

/* Quad q's corners c0 c1 c2 c3 in texel units as rtri_setup_half computes them. */
static void rq_corners(const bk_atlas *a, uint32_t q, double c[4][2])
{
    const float *u0 = a->uv + 12 * (size_t)q, *u1 = u0 + 6;
    double       W = a->width, H = a->height;
    int          ylo = (a->tri_page ? (int)a->tri_page[2 * (size_t)q] : 0) * a->height;
    const float *src[4] = { u0, u0 + 2, u0 + 4, u1 + 4 };
    for (int k = 0; k < 4; ++k) {
        c[k][0] = src[k][0] * W;
        c[k][1] = src[k][1] * H + ylo;
    }
}

static void rq_box_fn(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    rq_ctx         *c = ctx;
    const bk_atlas *a = c->a;
    for (size_t q = b; q < e; ++q) {
        double p[4][2], lo[2] = { 1e300, 1e300 }, hi[2] = { -1e300, -1e300 };
        int   *bx = c->box + 4 * q, ok = a->tri_chart[2 * q] != BK_NONE && a->tri_chart[2 * q + 1] != BK_NONE;
        rq_corners(a, (uint32_t)q, p);
        const float *u1 = a->uv + 12 * q + 6; /* the second triangle's c0 and c2 are the first's */
        ok = ok && u1[0] == a->uv[12 * q] && u1[1] == a->uv[12 * q + 1] && u1[2] == a->uv[12 * q + 4] &&
             u1[3] == a->uv[12 * q + 5] && (!a->tri_page || a->tri_page[2 * q] == a->tri_page[2 * q + 1]);
        for (int k = 0; k < 4; ++k)
            for (int d = 0; d < 2; ++d) {
                ok = ok && p[k][d] == floor(p[k][d]) && fabs(p[k][d]) < 1e9;
                if (p[k][d] < lo[d]) lo[d] = p[k][d];
                if (p[k][d] > hi[d]) hi[d] = p[k][d];
            }
        /* an axis-aligned rectangle: c0 c1 and c2 c3 along one axis, c1 c2 and c3 c0 the other */
        ok = ok && lo[0] < hi[0] && lo[1] < hi[1] &&
             ((p[0][1] == p[1][1] && p[2][1] == p[3][1] && p[1][0] == p[2][0] && p[3][0] == p[0][0]) ||
              (p[0][0] == p[1][0] && p[2][0] == p[3][0] && p[1][1] == p[2][1] && p[3][1] == p[0][1]));
        int page = a->tri_page ? (int)a->tri_page[2 * q] : 0;
        ok = ok && lo[0] >= 0 && hi[0] <= a->width && lo[1] >= (double)page * a->height &&
             hi[1] <= (double)(page + 1) * a->height;
        c->bad[q] = !ok;
        if (!ok) continue;
        bx[0] = (int)lo[0];
        bx[1] = (int)lo[1];
        bx[2] = (int)hi[0] - 1;
        bx[3] = (int)hi[1] - 1;
    }
}

static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Pass 1 (emit 0): the band's quads sorted and its texel count in first[b + 1]; pass 2 (emit 1):
 * its texels from first[b]. */
static void rq_band(rq_ctx *c, size_t b, int emit)
{
    const bk_atlas *a = c->a;
    uint64_t       *qs = c->quads + c->start[b];
    const uint32_t  nq = c->start[b + 1] - c->start[b];
    int             ylo = (int)b * BAND_ROWS, yhi = ylo + BAND_ROWS - 1;
    uint32_t        k = emit ? c->first[b] : 0;
    if (!emit) {
        qsort(qs, nq, sizeof(uint64_t), u64_cmp);
        for (uint32_t j = 0; j < nq; ++j) {
            const int *bx = c->box + 4 * (size_t)(uint32_t)qs[j];
            int        y0 = bx[1] > ylo ? bx[1] : ylo, y1 = bx[3] < yhi ? bx[3] : yhi;
            k += (uint32_t)((y1 - y0 + 1) * (bx[2] - bx[0] + 1));
        }
        c->first[b + 1] = k;
        return;
    }
    if (c->cov) memset(c->cov + band_lo(a, b), 0, band_hi(a, b) - band_lo(a, b));
    for (int y = ylo; y <= yhi; ++y)
        for (uint32_t j = 0; j < nq; ++j) {
            const uint32_t q = (uint32_t)qs[j];
            const int     *bx = c->box + 4 * (size_t)q;
            if (y < bx[1] || y > bx[3]) continue;
            double p[4][2];
            rq_corners(a, q, p);
            const double dx = p[2][0] - p[0][0], dy = p[2][1] - p[0][1], cy = y + 0.5 - p[0][1];
            const double s1 = dx * (p[1][1] - p[0][1]) - dy * (p[1][0] - p[0][0]); /* c1's side, never 0 */
            rtri         r[2];
            int          set[2] = { 0, 0 };
            for (int x = bx[0]; x <= bx[2]; ++x) {
                double   sd = dx * cy - dy * (x + 0.5 - p[0][0]);
                int      second = !(sd == 0 || (sd > 0) == (s1 > 0));
                uint32_t t = 2 * q + (uint32_t)second;
                size_t   i = (size_t)y * a->width + x;
                if (c->cov) c->cov[i] = 1;
                if (c->refs) {
                    c->refs[k].pixel = (uint32_t)i;
                    c->refs[k].tri = t;
                } else {
                    if (!set[second]) set[second] = rtri_setup(a, t, &r[second]) + 1;
                    texel_make(c->s, a, &r[second], t, i, &c->tx[k]);
                }
                k++;
            }
        }
}

static void rq_count_fn(void *ctx, size_t b0, size_t b1, int worker)
{
    (void)worker;
    for (size_t b = b0; b < b1; ++b) rq_band(ctx, b, 0);
}

static void rq_emit_fn(void *ctx, size_t b0, size_t b1, int worker)
{
    (void)worker;
    for (size_t b = b0; b < b1; ++b) rq_band(ctx, b, 1);
}

/* The rectangles-alone path: 1 done (or *err set: -1 returned through *rc), 0 not taken (some
 * quad it cannot take: the general pass runs). */
static int rasterize_rects(const bk_scene *s, const bk_atlas *a, bk_texel **texels, bk_texel_ref **refs,
                           uint32_t *count, uint8_t **coverage, char *err, size_t err_size, int *rc)
{
    const size_t T = a->tri_count, N = BK_ATLAS_PIXELS(a);
    if (bk_atlas_raster_general || a->rect_first_tri != 0 || T == 0 || T % 2) return 0;
    rq_ctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.a = a;
    c.nq = (uint32_t)(T / 2);
    c.nb = (uint32_t)(((size_t)a->height * a->page_count + BAND_ROWS - 1) / BAND_ROWS);
    c.box = malloc(sizeof(int) * 4 * (size_t)c.nq);
    c.bad = malloc(c.nq);
    c.start = calloc((size_t)c.nb + 1, sizeof(uint32_t));
    c.first = calloc((size_t)c.nb + 1, sizeof(uint32_t));
    int taken = 0;
    *rc = 0;
    if (!c.box || !c.bad || !c.start || !c.first) goto done; /* the general pass says what runs out */
    bk_parallel_for(c.nq, 16384, rq_box_fn, &c);
    size_t total = 0;
    for (uint32_t q = 0; q < c.nq; ++q) {
        const int *bx = c.box + 4 * (size_t)q;
        if (c.bad[q]) goto done;
        for (int b = bx[1] / BAND_ROWS; b <= bx[3] / BAND_ROWS; ++b) c.start[b + 1]++;
        total += (size_t)(bx[3] / BAND_ROWS - bx[1] / BAND_ROWS + 1);
    }
    if (!(c.quads = malloc(sizeof(uint64_t) * (total ? total : 1)))) goto done;
    for (uint32_t b = 0; b < c.nb; ++b) c.start[b + 1] += c.start[b];
    memcpy(c.first, c.start, sizeof(uint32_t) * c.nb); /* (first: the fill's cursors for now) */
    for (uint32_t q = 0; q < c.nq; ++q) {
        const int *bx = c.box + 4 * (size_t)q;
        for (int b = bx[1] / BAND_ROWS; b <= bx[3] / BAND_ROWS; ++b)
            c.quads[c.first[b]++] = (uint64_t)(uint32_t)bx[0] << 32 | q;
    }
    memset(c.first, 0, sizeof(uint32_t) * ((size_t)c.nb + 1));
    taken = 1;
    bk_parallel_for(c.nb, 1, rq_count_fn, &c);
    for (uint32_t b = 0; b < c.nb; ++b) c.first[b + 1] += c.first[b];
    uint32_t n = c.first[c.nb];
    c.tx = texels ? bk_malloc_large(sizeof(bk_texel) * (n ? n : 1)) : NULL;
    c.refs = texels ? NULL : bk_malloc_large(sizeof(bk_texel_ref) * (n ? n : 1));
    c.cov = coverage ? bk_malloc_large(N ? N : 1) : NULL;
    if ((!c.tx && !c.refs) || (coverage && !c.cov)) {
        free(c.tx);
        free(c.refs);
        free(c.cov);
        *rc = bk_fail(err, err_size, "atlas %dx%d: out of memory for %u texels", a->width, a->height, n);
        goto done;
    }
    bk_parallel_for(c.nb, 1, rq_emit_fn, &c);
    if (texels) *texels = c.tx;
    if (refs) *refs = c.refs;
    *count = n;
    if (coverage) *coverage = c.cov;
done:
    free(c.box);
    free(c.bad);
    free(c.start);
    free(c.first);
    free(c.quads);
    return taken;
}

/* Both rasterizers: pass 1 (owners), then the texels (texels) or their refs (refs). */
static int rasterize(const bk_scene *s, const bk_atlas *a, bk_texel **texels, bk_texel_ref **refs, uint32_t *count,
                     uint8_t **coverage, char *err, size_t err_size)
{
    if (texels) *texels = NULL;
    if (refs) *refs = NULL;
    *count = 0;
    if (coverage) *coverage = NULL;
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "atlas built for %u triangles, scene has %u", a->tri_count, s->tri_count);
    int rc_rects;
    if (rasterize_rects(s, a, texels, refs, count, coverage, err, err_size, &rc_rects)) return rc_rects;
    size_t       N = BK_ATLAS_PIXELS(a);
    raster_bands B;
    float       *best_d = bk_malloc_large(sizeof(float) * (N ? N : 1));
    uint32_t    *best_t = bk_malloc_large(sizeof(uint32_t) * (N ? N : 1));
    int          bands_bad = bands_build(a, &B);
    uint32_t    *first = bands_bad ? NULL : calloc((size_t)B.nb + 1, sizeof(uint32_t));
    if (!best_d || !best_t || !first) {
        free(best_d);
        free(best_t);
        free(first);
        bands_free(&B);
        return bk_fail(err, err_size, "atlas %dx%d: out of memory", a->width, a->height);
    }
    rast_ctx c = { s, a, &B, best_d, best_t, first, NULL, NULL, NULL };
    bk_parallel_for(B.nb, 1, rast_owner_fn, &c);
    for (uint32_t b = 0; b < B.nb; ++b) first[b + 1] += first[b];
    uint32_t n = first[B.nb];
    /* the distances served pass 1 only: given back before the texels are made */
    free(best_d);
    c.best_d = best_d = NULL;
    bk_texel     *tx = texels ? bk_malloc_large(sizeof(bk_texel) * (n ? n : 1)) : NULL;
    bk_texel_ref *rf = texels ? NULL : bk_malloc_large(sizeof(bk_texel_ref) * (n ? n : 1));
    uint8_t      *cov = coverage ? bk_malloc_large(N ? N : 1) : NULL;
    if ((!tx && !rf) || (coverage && !cov)) {
        free(best_t);
        free(first);
        free(tx);
        free(rf);
        free(cov);
        bands_free(&B);
        return bk_fail(err, err_size, "atlas %dx%d: out of memory for %u texels", a->width, a->height, n);
    }
    c.tx = tx;
    c.refs = rf;
    c.cov = cov;
    bk_parallel_for(B.nb, 1, rast_emit_fn, &c);
    free(best_t);
    free(first);
    bands_free(&B);
    if (texels) *texels = tx;
    if (refs) *refs = rf;
    *count = n;
    if (coverage) *coverage = cov;
    return 0;
}

int bk_atlas_rasterize(const bk_scene *s, const bk_atlas *a, bk_texel **texels, uint32_t *count, uint8_t **coverage,
                       char *err, size_t err_size)
{
    return rasterize(s, a, texels, NULL, count, coverage, err, err_size);
}

int bk_atlas_rasterize_refs(const bk_scene *s, const bk_atlas *a, bk_texel_ref **refs, uint32_t *count,
                            uint8_t **coverage, char *err, size_t err_size)
{
    return rasterize(s, a, NULL, refs, count, coverage, err, err_size);
}

/* bk_texels_make on the pool: fixed chunks, each texel written once. */
typedef struct make_job {
    const bk_scene     *s;
    const bk_atlas     *a;
    const bk_texel_ref *refs;
    bk_texel           *out;
} make_job;

static void make_fn(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const make_job *j = ctx;
    uint32_t        last_t = BK_NONE;
    rtri            r;
    for (size_t i = b; i < e; ++i) {
        const uint32_t t = j->refs[i].tri;
        if (t != last_t) {
            rtri_setup(j->a, t, &r);
            last_t = t;
        }
        texel_make(j->s, j->a, &r, t, j->refs[i].pixel, &j->out[i]);
    }
}

void bk_texels_make(const bk_scene *s, const bk_atlas *a, const bk_texel_ref *refs, uint32_t n, bk_texel *out)
{
    make_job j;
    j.s = s;
    j.a = a;
    j.refs = refs;
    j.out = out;
    bk_parallel_for(n, 4096, make_fn, &j);
}

bk_texel_ref *bk_texels_compact(bk_texel **texels, uint32_t n)
{
    bk_texel *tx = *texels;
    *texels = NULL;
    if (!tx) return NULL;
    /* ref i (bytes [8 i, 8 i + 8)) ends before texel i's triangle and pixel (bytes 32 i + 24 on):
     * going up, each is read before anything is written over it. Every access is a uint32_t, the
     * type of both fields, so the compiler sees that the two views alias. */
    _Static_assert(sizeof(bk_texel) % sizeof(uint32_t) == 0 && sizeof(bk_texel_ref) == 2 * sizeof(uint32_t), "layouts");
    uint32_t    *w = (uint32_t *)(void *)tx;
    const size_t stride = sizeof(bk_texel) / sizeof(uint32_t);
    const size_t at_pixel = offsetof(bk_texel, pixel) / sizeof(uint32_t),
                 at_tri = offsetof(bk_texel, tri) / sizeof(uint32_t);
    for (size_t i = 0; i < n; ++i) {
        const uint32_t pixel = w[stride * i + at_pixel], tri = w[stride * i + at_tri];
        w[2 * i + offsetof(bk_texel_ref, pixel) / sizeof(uint32_t)] = pixel;
        w[2 * i + offsetof(bk_texel_ref, tri) / sizeof(uint32_t)] = tri;
    }
    void *shrunk = realloc(w, sizeof(bk_texel_ref) * (n ? n : 1));
    return (bk_texel_ref *)(shrunk ? shrunk : (void *)w);
}

/* bk_texel_src_make's normals on the pool. */
static void tri_n_fn(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const bk_scene *s = ((const void **)ctx)[0];
    float          *n = ((void **)ctx)[1];
    for (size_t t = b; t < e; ++t) {
        float *o = n + 9 * t;
        int    ok = 1;
        for (int c = 0; c < 3 && ok; ++c) {
            uint32_t vn = s->tri_vn[3 * t + c];
            ok = vn != BK_NONE && vn < s->normal_count;
        }
        for (int c = 0; c < 3 && ok; ++c)
            for (int d = 0; d < 3; ++d) o[3 * c + d] = s->normals[3 * (size_t)s->tri_vn[3 * t + c] + d];
        if (!ok) o[0] = NAN; /* texel_make's rule: the geometric normal */
    }
}

int bk_texel_src_make(const bk_scene *s, const bk_atlas *a, bk_texel_src *src, float **tri_n)
{
    memset(src, 0, sizeof *src);
    *tri_n = NULL;
    src->uv = a->uv;
    src->tri_page = a->tri_page;
    src->tri_count = s->tri_count;
    src->width = a->width;
    src->height = a->height;
    if (!s->tri_vn || !s->normals || !s->tri_count) return 0;
    float *n = malloc(sizeof(float) * 9 * (size_t)s->tri_count);
    if (!n) return -1;
    const void *ctx[2] = { s, n };
    bk_parallel_for(s->tri_count, 4096, tri_n_fn, (void *)ctx);
    src->tri_n = n;
    *tri_n = n;
    return 0;
}
