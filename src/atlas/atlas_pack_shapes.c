/* atlas_pack_shapes.c - packing charts by their shapes: each chart rasterized into a bit mask of
 * its bilinear footprint, placed at the first position in scan order where it meets no taken
 * texel, into a strip as wide as the atlas (bk_atlas_pack_shapes).
 *
 * Pipeline: the uniform scale of the skyline packing (atlas_pack.c, from atlas.c's rects stage)
 * -> bk_atlas_pack_shapes at that scale and above (atlas.c's shapes stage, with the fill pass)
 * -> placements the UVs are made from (bk_atlas.close_charts). The method and its numbers are in
 * the section comment below.
 */
#include "atlas_internal.h"
#include "pool.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Shape packing: charts as their texels, not their rectangles.
 *
 * Each chart is rasterized at the scale being tried into a bit mask of its footprint: the texels
 * a bilinear lookup at one of its points reads, those whose centre lies within BK_ATLAS_REACH
 * = 1 texel of it along both axes (conservatively, with a slack of SHAPE_EPS texels, so the float
 * UVs and raster.c's closed tests never reach a texel the mask lacks). The chart lies 0.51 texel
 * into its mask (BK_ATLAS_SHAPE_MARGIN): the texel centres left of and above it are then more
 * than one texel away, so its footprint adds no column or row there, and one on the far side
 * only where its extent's fraction asks for it. The bin keeps one bit per texel taken by a placed
 * footprint (dilated by pad - 2 texels, a square kernel); a chart fits at (x, y) when none of its
 * bits meets a taken one. So no texel is read by two charts (raster.c's bk_atlas_reach_ids and
 * image.c's bk_image_dilate_charts give it its own chart's colours), while their texels may lie
 * one texel apart, or side by side where their edges fall between texel centres (with two empty
 * texels around each chart, the rule before, sibenik's atlas was 78.4 % covered at 1024^2, now
 * 87.1 %). Concave charts interlock, small charts drop into the holes of large ones (windows in
 * a wall) and into the corners rectangles waste. Charts go tallest first (by their rectangles'
 * shorter side, then the longer; up to 16 charts, by their rectangles' area), each at the first
 * position in scan order (top row first, then leftmost) where it fits, unrotated or turned 90
 * degrees, and large masks also 180 and 270 (a turn only when its bottom ends higher than the
 * turns before). The bin is a strip as wide as the atlas and twice as tall, so one packing also
 * says how many rows the charts need at this scale.
 *
 * The search must not cost a test per texel per chart (xatlas's brute force is why it takes
 * seconds). Per row it keeps the longest free run, in a segment tree of (min, max). For a chart it
 * picks a band of its rows whose runs are all at least L: a position y is possible only when the
 * atlas rows beside the band all have a free run of L, and the first row that has not rules out
 * every y up to it at once (a range-minimum descent). Rows left then intersect, row by row, the
 * intervals of x at which each mask row's longest run lies on free texels (from the lists of free
 * runs the atlas rows keep), and only the x that survive are tested bit by bit. The mask rows go
 * in an order that spreads them over the mask (neighbouring rows rule out the same x), after the
 * one that ended the last search row; an intersection is the same in any order. */

#define SHAPE_EPS            1e-3
#define SHAPE_REACH          (BK_ATLAS_REACH - 0.5) /* beyond the texel's own half side */
#define SHAPE_AREA_ORDER_MAX 16
/* Masks of at least 1/1024 of the atlas (32 x 32 texels in 1024^2) are also tried turned half
 * round (both of their quarter turns): measured at 960, 1024 and 1088 texels against two turns
 * for all: dragon_vrip_res2 74.4 -> 75.7 % on average, sponza 85.8 -> 85.9, sibenik 75.2 -> 75.1;
 * for every chart: 75.2, 85.9, 75.3, at 20 % more CPU time on sibenik and dragon (the smaller
 * charts' searches). A fraction of the atlas, not a texel count, so that a 4096^2 atlas turns
 * the same charts (all of 1024 texels or more there: sponza 0.90 -> 1.12 s one-thread CPU). */
#define SHAPE_ROTS               4
#define SHAPE_HALF_TURN_FRACTION 1024
/* Charts searched ahead at once (spec_resolve). The atlas is the same whatever the window; the
 * shapes stage on 16 simulated threads (atlas_bench --threads 1 --sim 16), sponza 4096^2 /
 * dragon_vrip 1024^2: one chart at a time 0.19 / 0.14 s; 8 ahead 0.165 / 0.100, 16 0.131 /
 * 0.096, 32 0.129 / 0.098, 64 0.126 / 0.107, 128 0.121 / 0.118. */
#define SHAPE_AHEAD 32

typedef struct shape {
    int       w, h, wpr;              /* mask size in texels, 64-bit words per row */
    int       band0, band1, band_run; /* mask rows band0 .. band1 all have a run of band_run set bits */
    int       last_row;               /* last row with a bit set */
    int      *run;                    /* h: longest run of set bits in each row */
    int      *run_at;                 /* h: where that run starts */
    int      *order;                  /* h: the rows in the order the search intersects them */
    uint64_t *bits;                   /* h * wpr words */
} shape;

/* First set (want 1) or clear (want 0) bit of row at or after x, or end when none before end. */
static int bits_next(const uint64_t *row, int x, int end, int want)
{
    while (x < end) {
        uint64_t w = want ? row[x >> 6] : ~row[x >> 6];
        w &= ~0ull << (x & 63);
        if (w) {
            int b = (x & ~63) + __builtin_ctzll(w);
            return b < end ? b : end;
        }
        x = (x & ~63) + 64;
    }
    return end;
}

/* Longest run of set (want 1) or clear (want 0) bits in row[0 .. n); *at (may be NULL) gets its
 * start. */
static int bits_longest(const uint64_t *row, int n, int want, int *at)
{
    int best = 0;
    for (int x = bits_next(row, 0, n, want); x < n;) {
        int e = bits_next(row, x, n, !want);
        if (e - x > best) {
            best = e - x;
            if (at) *at = x;
        }
        x = bits_next(row, e, n, want);
    }
    return best;
}

/* Corners of chart ci in mask coordinates at scale s, rotation rot (0, or 90 degrees as
 * (x, y) -> (h - y, x): never a mirror). */
static void shape_corner(const charting *C, uint32_t ci, uint32_t t, int k, double s, int rot, double *px, double *py)
{
    const chart *c = &C->charts[ci];
    double       lx = C->loc[6 * (size_t)t + 2 * k] * s, ly = C->loc[6 * (size_t)t + 2 * k + 1] * s;
    bk_atlas_shape_place(c->w * s, c->h * s, 0, 0, lx, ly, rot, px, py); /* rot 0, 1: the mask size is not needed */
}

static void bits_set(uint64_t *row, int x) { row[x >> 6] |= 1ull << (x & 63); }

/* Sets bits x0 .. x1 (inclusive) of row. */
static void bits_set_range(uint64_t *row, int x0, int x1)
{
    int      a = x0 >> 6, b = x1 >> 6;
    uint64_t ma = ~0ull << (x0 & 63), mb = ~0ull >> (63 - (x1 & 63));
    if (a == b) {
        row[a] |= ma & mb;
        return;
    }
    row[a] |= ma;
    for (int k = a + 1; k < b; ++k) row[k] = ~0ull;
    row[b] |= mb;
}

/* The size of chart ci's mask (ci == C->count: the degenerate triangles' single texel): 0, or -2
 * when it is larger than any atlas. */
static int shape_size(const charting *C, uint32_t ci, double s, int rot, shape *sh)
{
    const double m = BK_ATLAS_SHAPE_MARGIN; /* the chart's distance from its mask's edges, in texels */
    if (ci >= C->count) {
        sh->w = sh->h = 1;
    } else {
        const chart *c = &C->charts[ci];
        double       W = (rot & 1 ? c->h : c->w) * s, H = (rot & 1 ? c->w : c->h) * s;
        if (!(W < BK_ATLAS_MAX_SIZE && H < BK_ATLAS_MAX_SIZE)) return -2;
        /* the chart from m to m + W: the texels its footprint reaches, to floor(m + W + reach) */
        sh->w = (int)floor(m + W + SHAPE_REACH + SHAPE_EPS) + 1;
        sh->h = (int)floor(m + H + SHAPE_REACH + SHAPE_EPS) + 1;
    }
    sh->wpr = (sh->w + 63) / 64;
    return 0;
}

/* The footprint mask of chart ci into sh (sized by shape_size; bits: wpr * h zeroed words,
 * run and run_at: h ints each). */
static void shape_finish(shape *sh);
static void shape_order(shape *sh);

static void shape_fill(const charting *C, uint32_t ci, double s, int rot, shape *sh)
{
    int whole = ci >= C->count;
    if (!whole) {
        /* a chart of long slivers (a fan, a strip) would cost its triangles times their rows:
         * its whole rectangle instead, when that is far less work than the triangles' rows */
        const chart *c = &C->charts[ci];
        double       rows = 0, rows_max = 4.0 * sh->w * sh->h + 4096;
        for (uint32_t i = 0; i < c->count && rows <= rows_max; ++i) {
            const double *L = C->loc + 6 * (size_t)C->chart_tris[c->first + i];
            int           k = rot & 1 ? 0 : 1; /* the mask's rows run along the chart's x when turned */
            rows += (bk_dmax(L[k], bk_dmax(L[k + 2], L[k + 4])) - bk_dmin(L[k], bk_dmin(L[k + 2], L[k + 4]))) * s + 2;
        }
        whole = rows > rows_max;
    }
    if (whole)
        for (int y = 0; y < sh->h; ++y) bits_set_range(sh->bits + (size_t)y * sh->wpr, 0, sh->w - 1);
    else {
        const chart *c = &C->charts[ci];
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C->chart_tris[c->first + i];
            double   p[3][2], lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX };
            for (int k = 0; k < 3; ++k) {
                shape_corner(C, ci, t, k, s, rot, &p[k][0], &p[k][1]);
                for (int d = 0; d < 2; ++d) {
                    lo[d] = bk_dmin(lo[d], p[k][d]);
                    hi[d] = bk_dmax(hi[d], p[k][d]);
                }
            }
            const double g = SHAPE_REACH + SHAPE_EPS; /* texel (x, y) reaches [x - g, x + 1 + g] x [y - g, y + 1 + g] */
            int          y0 = (int)ceil(lo[1] - 1 - g), y1 = (int)floor(hi[1] + g);
            if (y0 < 0) y0 = 0;
            if (y1 >= sh->h) y1 = sh->h - 1;
            /* row by row: the triangle's x extent within the row's slab (widened by the reach
             * and the slack) is exactly the texels of that row it reaches, a slab being convex */
            for (int y = y0; y <= y1; ++y) {
                double ya = y - g, yb = y + 1 + g, xa = DBL_MAX, xb = -DBL_MAX;
                if (lo[1] >= ya && hi[1] <= yb) {
                    /* the whole triangle in the slab (most rows of a triangle under a texel):
                     * its corners' extent, which the edges' crossings (clamped to their edges)
                     * never pass */
                    int x0 = (int)ceil(lo[0] - 1 - g), x1 = (int)floor(hi[0] + g);
                    if (x0 < 0) x0 = 0;
                    if (x1 >= sh->w) x1 = sh->w - 1;
                    if (x0 <= x1) bits_set_range(sh->bits + (size_t)y * sh->wpr, x0, x1);
                    continue;
                }
                for (int k = 0; k < 3; ++k) {
                    const double *P = p[k], *Q = p[(k + 1) % 3];
                    if (P[1] >= ya && P[1] <= yb) {
                        xa = bk_dmin(xa, P[0]);
                        xb = bk_dmax(xb, P[0]);
                    }
                    if (P[1] == Q[1]) continue;
                    for (int e = 0; e < 2; ++e) {
                        double Y = e ? yb : ya;
                        if ((Y > P[1]) == (Y > Q[1])) continue;
                        double X = P[0] + (Y - P[1]) * (Q[0] - P[0]) / (Q[1] - P[1]);
                        X = bk_dmax(bk_dmin(X, bk_dmax(P[0], Q[0])), bk_dmin(P[0], Q[0]));
                        xa = bk_dmin(xa, X);
                        xb = bk_dmax(xb, X);
                    }
                }
                if (!(xa <= xb)) continue;
                int x0 = (int)ceil(xa - 1 - g), x1 = (int)floor(xb + g);
                if (x0 < 0) x0 = 0;
                if (x1 >= sh->w) x1 = sh->w - 1;
                if (x0 <= x1) bits_set_range(sh->bits + (size_t)y * sh->wpr, x0, x1);
            }
        }
    }
    shape_finish(sh);
}

/* sh as src turned half round: bit (x, y) is src's (w - 1 - x, h - 1 - y) (same size). */
static uint64_t rev64(uint64_t v)
{
    v = (v >> 1 & 0x5555555555555555ull) | (v & 0x5555555555555555ull) << 1;
    v = (v >> 2 & 0x3333333333333333ull) | (v & 0x3333333333333333ull) << 2;
    v = (v >> 4 & 0x0F0F0F0F0F0F0F0Full) | (v & 0x0F0F0F0F0F0F0F0Full) << 4;
    return __builtin_bswap64(v);
}

static void shape_mirror(const shape *src, shape *sh)
{
    int h = sh->h;
    int n = sh->wpr, sft = 64 * n - sh->w; /* the reversed words hold the row sft bits up */
    for (int y = 0; y < sh->h; ++y) {
        const uint64_t *a = src->bits + (size_t)(src->h - 1 - y) * src->wpr;
        uint64_t       *b = sh->bits + (size_t)y * sh->wpr;
        for (int k = 0; k < n; ++k) {
            uint64_t lo = rev64(a[n - 1 - k]), hi = k + 1 < n ? rev64(a[n - 2 - k]) : 0;
            b[k] = sft ? lo >> sft | hi << (64 - sft) : lo;
        }
        /* the row's longest run and the band, mirrored (any longest run serves the search) */
        sh->run[y] = src->run[h - 1 - y];
        sh->run_at[y] = sh->run[y] ? sh->w - src->run_at[h - 1 - y] - sh->run[y] : 0;
    }
    int first = 0;
    while (first < h - 1 && !src->run[first]) first++;
    sh->last_row = h - 1 - first;
    sh->band0 = h - 1 - src->band1;
    sh->band1 = h - 1 - src->band0;
    sh->band_run = src->band_run;
    shape_order(sh);
}

/* A mask's rows' longest runs, band and search order. */
static void shape_finish(shape *sh)
{
    /* rows' longest runs; the band: the rows' widest "inner rectangle" among a few run lengths */
    int max_run = 0;
    sh->last_row = 0;
    for (int y = 0; y < sh->h; ++y) {
        sh->run_at[y] = 0;
        sh->run[y] = bits_longest(sh->bits + (size_t)y * sh->wpr, sh->w, 1, &sh->run_at[y]);
        if (sh->run[y] > max_run) max_run = sh->run[y];
        if (sh->run[y]) sh->last_row = y;
    }
    if (max_run == 0) {
        bits_set(sh->bits, 0);
        sh->run[0] = 1;
        sh->run_at[0] = 0;
        max_run = 1;
    }
    sh->band0 = sh->band1 = 0;
    sh->band_run = 1;
    long best = -1;
    for (int q = 4; q >= 1; --q) {
        int L = (max_run * q + 3) / 4;
        if (L < 1) L = 1;
        for (int y = 0; y < sh->h;) {
            if (sh->run[y] < L) {
                y++;
                continue;
            }
            int e = y;
            while (e + 1 < sh->h && sh->run[e + 1] >= L) e++;
            if ((long)(e - y + 1) * L > best) {
                best = (long)(e - y + 1) * L;
                sh->band0 = y;
                sh->band1 = e;
                sh->band_run = L;
            }
            y = e + 1;
        }
    }
    shape_order(sh);
}

/* The search's row order: band0, then offsets from it in bit-reversed order (1/2, 1/4, 3/4 ...
 * of the height), so each next row lands far from those before: neighbouring rows of the bin
 * mostly rule out the same positions. */
static void shape_order(shape *sh)
{
    int p2 = 1, n = 0;
    while (p2 < sh->h) p2 <<= 1;
    for (int i = 0; i < p2; ++i) {
        int v = 0;
        for (int b = 1, k = i; b < p2; b <<= 1, k >>= 1) v = v << 1 | (k & 1);
        if (v < sh->h) sh->order[n++] = (sh->band0 + v) % sh->h;
    }
}

/* Every item's masks (both rotations) at once, on the pool: masks of items [begin, end) go to
 * their own slots, so they are the same whatever the thread count. */
typedef struct shape_set {
    const charting *C;
    const double   *fill;
    double          s;
    shape          *sh; /* SHAPE_ROTS per item: unrotated, turned 90, 180, 270 degrees (w == 0: not made) */
    uint64_t       *bits;
    int            *runs;
} shape_set;

static void shape_set_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    shape_set *S = ctx;
    for (size_t ci = begin; ci < end; ++ci)
        for (int r = 0; r < SHAPE_ROTS; ++r) {
            shape *sh = &S->sh[SHAPE_ROTS * ci + (size_t)r];
            if (!sh->w) continue;
            if (r >= 2) shape_mirror(sh - 2, sh);
            else shape_fill(S->C, (uint32_t)ci, S->fill && ci < S->C->count ? S->s * S->fill[ci] : S->s, r, sh);
        }
}

typedef struct shape_bin {
    int       N, H, wpr;      /* width and height in texels, words per row (one spare word) */
    uint64_t *taken;          /* H rows */
    int      *free_run;       /* longest run of free texels per row */
    int     **runs;           /* per row: its free runs as (start, end) pairs, in order; full when untouched */
    int      *nrun, *rcap;    /* per row: runs, capacity in pairs (0: points at full) */
    int       full[2];        /* the one run of an empty row: (0, N) */
    int      *rtmp;           /* scratch: N / 2 + 1 pairs per thread */
    int       P;              /* leaves of the segment trees, a power of two >= H */
    int      *smin, *smax;    /* min and max of free_run over row ranges, leaves at P + y */
    int       lowest;         /* one past the lowest row taken by a chart (not its padding) */
    int      *xa, *xb;        /* scratch: 2 (N + 2) each per thread, intervals of candidate x */
    int       threads, tasks; /* the pool's threads; row ranges per wave of a wide search */
    int      *hit_x, *hit_y;  /* tasks each: the wave's answers */
    uint64_t *hz;             /* scratch: a mask's rows widened by the padding, and one bin row's dilation */
    size_t    hz_cap;         /* words in hz */
} shape_bin;

static void seg_set(shape_bin *B, int y, int v)
{
    int i = B->P + y;
    B->smin[i] = B->smax[i] = v;
    for (i >>= 1; i >= 1; i >>= 1) {
        int a = B->smin[2 * i] < B->smin[2 * i + 1] ? B->smin[2 * i] : B->smin[2 * i + 1];
        int b = B->smax[2 * i] > B->smax[2 * i + 1] ? B->smax[2 * i] : B->smax[2 * i + 1];
        if (B->smin[i] == a && B->smax[i] == b) break;
        B->smin[i] = a;
        B->smax[i] = b;
    }
}

/* The first row in [lo, hi] whose free_run is below L (want_below) or at least L; -1 if none. */
static int seg_find(const int *seg_min, const int *seg_max, int P, int node, int nlo, int nhi, int lo, int hi, int L,
                    int want_below)
{
    if (nhi < lo || nlo > hi) return -1;
    if (want_below ? seg_min[node] >= L : seg_max[node] < L) return -1;
    if (nlo == nhi) return nlo;
    int mid = (nlo + nhi) / 2;
    int r = seg_find(seg_min, seg_max, P, 2 * node, nlo, mid, lo, hi, L, want_below);
    return r >= 0 ? r : seg_find(seg_min, seg_max, P, 2 * node + 1, mid + 1, nhi, lo, hi, L, want_below);
}

/* Does the mask fit at (x, y)? The row that rejected the last position first (*kill, updated;
 * neighbouring positions mostly fail on the same obstacle), then the rows in the shape's search
 * order. The answer does not depend on the order. */
static int shape_fits(const shape_bin *B, const shape *sh, int x, int y, int *kill)
{
    int sft = x & 63, base = x >> 6;
    for (int i = -1; i < sh->h; ++i) {
        int r = i < 0 ? *kill : sh->order[i];
        if (i >= 0 && r == *kill) continue;
        const uint64_t *m = sh->bits + (size_t)r * sh->wpr, *a = B->taken + (size_t)(y + r) * B->wpr + base;
        uint64_t        carry = 0;
        for (int k = 0; k < sh->wpr; ++k) {
            uint64_t w = m[k];
            if (a[k] & (w << sft | carry)) {
                *kill = r;
                return 0;
            }
            carry = sft ? w >> (64 - sft) : 0;
        }
        if (carry && (a[sh->wpr] & carry)) {
            *kill = r;
            return 0;
        }
    }
    return 1;
}

/* First position in scan order among rows ya .. yb (from x_start on row y_start) where sh fits;
 * 0 if none. xa, xb: scratch of 2 (N + 2) ints each. Each row is decided on its own (the jumps
 * only pass rows that cannot fit), so a range's answer is the same however the rows are cut. */
static int shape_find_rows(const shape_bin *B, const shape *sh, int y_start, int x_start, int ya, int yb, int *xa_s,
                           int *xb_s, int *ox, int *oy)
{
    int N = B->N, kill = sh->band0, fkill = sh->band0;
    for (int y = ya; y <= yb;) {
        /* the band's rows must all have a free run of band_run: jump past the first that has not */
        int q = -1;
        if (sh->band1 - sh->band0 < 32) { /* short bands: the rows themselves, the last failing one */
            for (int r = y + sh->band1; r >= y + sh->band0; --r)
                if (B->free_run[r] < sh->band_run) {
                    q = r;
                    break;
                }
        } else q = seg_find(B->smin, B->smax, B->P, 1, 0, B->P - 1, y + sh->band0, y + sh->band1, sh->band_run, 1);
        if (q >= 0) {
            y = q - sh->band0 + 1;
            continue;
        }
        /* every mask row needs a free run as long as its own beside it; 32 rows at a time
         * without a branch (vectorized: a quarter of the search's time went here one by one) */
        int skip = 0;
        for (int r0 = 0; r0 < sh->h && !skip; r0 += 32) {
            const int n = sh->h - r0 < 32 ? sh->h - r0 : 32, *fr = B->free_run + y + r0, *rn = sh->run + r0;
            for (int r = 0; r < n; ++r) skip |= fr[r] < rn[r];
        }
        if (skip) {
            y++;
            continue;
        }
        int *xa = xa_s, *xb = xb_s, *na = xa_s + N + 2, *nb = xb_s + N + 2, nx = 1;
        xa[0] = y == y_start ? x_start : 0;
        xb[0] = N - sh->w;
        if (xa[0] > xb[0]) {
            y++;
            continue;
        }
        /* the mask row that emptied the last row's intervals first: the obstacle that stopped
         * it mostly stops the next (the intersection is the same in any order) */
        for (int i = -1; i < sh->h && nx; ++i) {
            int r = i < 0 ? kill : sh->order[i], L = sh->run[r], s = sh->run_at[r];
            if (L == 0 || (i >= 0 && r == kill)) continue;
            const int *run = B->runs[y + r];
            int        nr = B->nrun[y + r], nn = 0, j = 0;
            /* within each interval's reach only: the free runs [a, e) of L or more, clipped to
             * the reach, leave x in [a - s, e - s - L]. Intervals come in order, so a run that
             * ends before one's reach ends before the next's. */
            for (int k = 0; k < nx; ++k) {
                int lo = xa[k] + s, hi = xb[k] + s + L;
                while (j < nr && run[2 * j + 1] <= lo) j++;
                for (int q = j; q < nr && run[2 * q] < hi; ++q) {
                    int a = run[2 * q] > lo ? run[2 * q] : lo, e = run[2 * q + 1] < hi ? run[2 * q + 1] : hi;
                    if (e - a >= L) {
                        na[nn] = a - s;
                        nb[nn] = e - s - L;
                        nn++;
                    }
                }
            }
            int *t1 = xa, *t2 = xb;
            xa = na;
            xb = nb;
            na = t1;
            nb = t2;
            nx = nn;
            if (!nx) kill = r;
        }
        for (int k = 0; k < nx; ++k)
            for (int x = xa[k]; x <= xb[k]; ++x)
                if (shape_fits(B, sh, x, y, &fkill)) {
                    *ox = x;
                    *oy = y;
                    return 1;
                }
        y++;
    }
    return 0;
}

/* Rows searched alone before the search goes wide, and rows per task after (waves of the
 * pool's threads' count of tasks, doubling up to 4 per thread). A wave costs more than it saves
 * on a search that ends soon, and a search's rows cost more in a larger atlas (its masks are
 * taller), so the rows alone are 512 at 1024^2, falling as the square of the size to 64 from
 * 2896^2. On the GPU machine's 16 cores (atlas_bench --stages, shapes stage, three alternating
 * runs): sponza 1024^2 0.27 / 0.18 / 0.17 s with 64 rows against 0.16 / 0.14 / 0.15 with 512,
 * dragon_vrip 1024^2 0.67 / 0.66 / 0.56 against 0.45 / 0.35 / 0.40; but sponza 4096^2
 * 0.42 / 0.36 / 0.38 with 64 against 0.61 / 0.58 / 0.48 with 512 (and 0.68 / 0.41 / 0.59 with
 * 2048). */
#define FIND_ROWS_SERIAL_1024 512
#define FIND_ROWS_SERIAL_MIN  64
#define FIND_ROWS_TASK        16

typedef struct find_ctx {
    const shape_bin *B;
    const shape     *sh;
    int              y_start, x_start, ya, yb;
    int             *hit_x, *hit_y; /* per task: the first fit in its rows, hit_y < 0 when none */
} find_ctx;

static void find_fn(void *ctx, size_t begin, size_t end, int worker)
{
    find_ctx *f = ctx;
    int      *xa = f->B->xa + (size_t)worker * 2 * ((size_t)f->B->N + 2),
        *xb = f->B->xb + (size_t)worker * 2 * ((size_t)f->B->N + 2);
    for (size_t c = begin; c < end; ++c) {
        int ya = f->ya + (int)c * FIND_ROWS_TASK, yb = ya + FIND_ROWS_TASK - 1;
        if (yb > f->yb) yb = f->yb;
        f->hit_y[c] = -1;
        if (ya <= yb &&
            shape_find_rows(f->B, f->sh, f->y_start, f->x_start, ya, yb, xa, xb, &f->hit_x[c], &f->hit_y[c]) == 0)
            f->hit_y[c] = -1;
    }
}

/* First position in scan order from (x_start, y_start) where sh fits with y < y_limit; 0 if
 * none. The first rows alone; then waves of row ranges on the pool, the earliest range with a
 * fit wins: the same position as one pass over the rows, whatever the thread count. */
/* The last row a search for sh with y < y_limit looks at (*ymax); 0 when sh fits nowhere. */
static int find_ymax(const shape_bin *B, const shape *sh, int y_limit, int *ymax)
{
    if (sh->w > B->N || sh->h > B->H) return 0;
    int y = B->H - sh->h;
    if (y > y_limit - 1) y = y_limit - 1;
    /* below every chart all is free: nothing later in scan order is worth a look */
    if (y > B->lowest + B->N) y = B->lowest + B->N;
    *ymax = y;
    return 1;
}

static int shape_find(const shape_bin *B, const shape *sh, int y_start, int x_start, int y_limit, int *ox, int *oy)
{
    int N = B->N, ymax;
    if (!find_ymax(B, sh, y_limit, &ymax)) return 0;
    double q = 1024.0 / N;
    int    serial = (int)(FIND_ROWS_SERIAL_1024 * q * q);
    if (serial > FIND_ROWS_SERIAL_1024) serial = FIND_ROWS_SERIAL_1024;
    if (serial < FIND_ROWS_SERIAL_MIN) serial = FIND_ROWS_SERIAL_MIN;
    int yb = y_start + serial - 1;
    if (B->threads <= 1 || yb >= ymax) yb = ymax;
    if (shape_find_rows(B, sh, y_start, x_start, y_start, yb, B->xa, B->xb, ox, oy)) return 1;
    find_ctx f;
    f.B = B;
    f.sh = sh;
    f.y_start = y_start;
    f.x_start = x_start;
    f.hit_x = B->hit_x;
    f.hit_y = B->hit_y;
    /* waves of threads ranges, doubling to B->tasks: most searches that go on end soon */
    for (int ya = yb + 1, wave = B->threads; ya <= ymax; wave = 2 * wave < B->tasks ? 2 * wave : B->tasks) {
        int tasks = wave, rows = tasks * FIND_ROWS_TASK;
        if (rows > ymax - ya + 1) {
            rows = ymax - ya + 1;
            tasks = (rows + FIND_ROWS_TASK - 1) / FIND_ROWS_TASK;
        }
        f.ya = ya;
        f.yb = ya + rows - 1;
        bk_parallel_for((size_t)tasks, 1, find_fn, &f);
        for (int c = 0; c < tasks; ++c)
            if (f.hit_y[c] >= 0) {
                *ox = f.hit_x[c];
                *oy = f.hit_y[c];
                return 1;
            }
        ya += rows;
    }
    return 0;
}

/* Searches ahead (bk_atlas_pack_shapes). The charts go in windows of SHAPE_AHEAD. Each chart of a
 * window is first searched ahead, on a thread of its own and side by side with the window's
 * others, over the bin as the charts before the window left it: from where its size class starts
 * then, and again from where the window's earlier charts of its class will have moved that start
 * (guessed from where their own searches ahead ended). Then the window's charts are placed one
 * by one, in order, each from its start as one search at a time has it (shape_hints with the
 * class rows as the charts before it left them). The bin only fills: a position where a mask did
 * not fit then does not fit later. So when a search ahead started at or before the chart's start
 * and found its first fit at or after it, every position between is still ruled out, and the
 * first fit now is that position if it is still free, or else the first one after it (searched
 * on from there); a search ahead that found nothing ruled out every row it looked at; a search
 * ahead that started later, or whose fit lies before the start, says nothing. Each chart thus
 * lands exactly where one search at a time puts it, whatever the window or the thread count; the
 * searches ahead only do much of the looking on every core at once. (Before, each search went
 * wide over row ranges of one chart at a time, a call of the pool per range: sponza 4096^2's
 * shapes stage took 0.29 s on the GPU machine's 16 threads against 0.82 s on one.) */
typedef struct spec_res {
    int y0, x0;      /* where it started (scan order: rows from y0, the first one from x0) */
    int found, x, y; /* the first fit from there, in rows up to ymax */
    int ymax;
    int valid; /* 0: not searched ahead */
} spec_res;

/* sh's first fit from (x_start, y_start) with y < y_limit, on one thread (xa, xb: its scratch):
 * what shape_find answers, and the last row it could have looked at. */
static void spec_find(const shape_bin *B, const shape *sh, int y_start, int x_start, int y_limit, int *xa, int *xb,
                      spec_res *o)
{
    o->y0 = y_start;
    o->x0 = x_start;
    o->found = 0;
    o->valid = 1;
    int ymax;
    if (!find_ymax(B, sh, y_limit, &ymax)) {
        o->ymax = B->H;
        return;
    } /* never fits: nothing to look at anywhere */
    o->ymax = ymax;
    if (y_start <= ymax) o->found = shape_find_rows(B, sh, y_start, x_start, y_start, ymax, xa, xb, &o->x, &o->y);
}

/* (ya, xa) at or after (yb, xb) in scan order */
static int scan_ge(int ya, int xa, int yb, int xb) { return ya > yb || (ya == yb && xa >= xb); }

/* shape_find(B, sh, y_start, x_start, y_limit, ox, oy) now, knowing the search ahead s (NULL or
 * not valid: none). */
static int spec_resolve_fast(const shape_bin *B, const shape *sh, const spec_res *s, int y_start, int x_start,
                             int y_limit, int *ox, int *oy)
{
    int sy = y_start, sx = x_start;
    if (s && s->valid && scan_ge(y_start, x_start, s->y0, s->x0)) {
        if (s->found && scan_ge(s->y, s->x, y_start, x_start)) {
            if (s->y >= y_limit) return 0; /* every fit from here is at or after it */
            int kill = sh->band0;
            if (shape_fits(B, sh, s->x, s->y, &kill)) {
                *ox = s->x;
                *oy = s->y;
                return 1;
            }
            sy = s->y;
            sx = s->x + 1; /* taken since: on from just after it */
        } else if (!s->found && s->ymax + 1 > y_start) {
            sy = s->ymax + 1;
            sx = 0;
        }
    }
    return shape_find(B, sh, sy, sx, y_limit, ox, oy);
}

int              bk_atlas_ahead_check;
_Atomic uint64_t bk_atlas_ahead_checked, bk_atlas_ahead_wrong;

/* The same with two searches ahead (either NULL or not valid: none), the one from the later start
 * where the search now does not start before it. */
static int spec_resolve(const shape_bin *B, const shape *sh, const spec_res *s, const spec_res *s2, int y_start,
                        int x_start, int y_limit, int *ox, int *oy)
{
    if (s2 && s2->valid && scan_ge(y_start, x_start, s2->y0, s2->x0) &&
        !(s && s->valid && scan_ge(s->y0, s->x0, s2->y0, s2->x0)))
        s = s2;
    int found = spec_resolve_fast(B, sh, s, y_start, x_start, y_limit, ox, oy);
    if (bk_atlas_ahead_check) {
        int x = 0, y = 0, f = shape_find(B, sh, y_start, x_start, y_limit, &x, &y);
        bk_atlas_ahead_checked++;
        if (f != found || (f && (x != *ox || y != *oy))) bk_atlas_ahead_wrong++;
    }
    return found;
}

typedef struct spec_task {
    const shape *sh;
    int          y0, x0, lim;
    spec_res    *out;
} spec_task;
typedef struct spec_ctx {
    const shape_bin *B;
    const spec_task *task;
} spec_ctx;

static void spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const spec_ctx *c = ctx;
    int            *xa = c->B->xa + (size_t)worker * 2 * ((size_t)c->B->N + 2),
        *xb = c->B->xb + (size_t)worker * 2 * ((size_t)c->B->N + 2);
    for (size_t i = begin; i < end; ++i) {
        const spec_task *t = &c->task[i];
        spec_find(c->B, t->sh, t->y0, t->x0, t->lim, xa, xb, t->out);
    }
}

/* dst |= src (nbits bits) placed at bit pos of dst (pos may be negative: the bits before 0 are
 * dropped); dst has dst_words words. */
static void row_or_at(uint64_t *dst, int dst_words, const uint64_t *src, int nbits, int pos)
{
    int nw = (nbits + 63) / 64;
    for (int k = 0; k < nw; ++k) {
        uint64_t w = src[k];
        if (!w) continue;
        int p = pos + 64 * k; /* where bit 0 of this word lands */
        if (p >= 0) {
            int j = p >> 6, sft = p & 63;
            if (j < dst_words) dst[j] |= w << sft;
            if (sft && j + 1 < dst_words) dst[j + 1] |= w >> (64 - sft);
        } else if (p > -64) {
            dst[0] |= w >> (-p);
        }
    }
}

/* A take (shape_take): mask sh at (x, y) dilated by pad; hz holds its rows widened by pad each
 * side (dwpr words each, dw bits); the bin's runs change only in columns [cx0, cx1). */
typedef struct take_ctx {
    shape_bin   *B;
    const shape *sh;
    uint64_t    *hz; /* sh->h rows of dwpr words */
    uint64_t    *d;  /* per worker: dwpr words */
    int          dw, dwpr, x, y, pad, cx0, cx1;
    atomic_int   err;
} take_ctx;

/* Mask rows [begin, end) widened by pad each side into hz. */
static void take_widen_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    take_ctx    *t = ctx;
    const shape *sh = t->sh;
    uint64_t    *hz = t->hz;
    for (size_t rr = begin; rr < end; ++rr) {
        memset(hz + rr * t->dwpr, 0, sizeof(uint64_t) * (size_t)t->dwpr);
        if (sh->run[rr])
            for (int j = 0; j <= 2 * t->pad; ++j)
                row_or_at(hz + rr * t->dwpr, t->dwpr, sh->bits + rr * sh->wpr, sh->w, j);
    }
}

/* Bin rows y - pad + [begin, end): each ORs the widened mask rows within pad of it, and its free
 * runs and longest run are made again (the segment trees are the caller's). Each row writes its
 * own, so rows may go side by side. */
static void take_rows_fn(void *ctx, size_t begin, size_t end, int worker)
{
    take_ctx    *t = ctx;
    shape_bin   *B = t->B;
    const shape *sh = t->sh;
    const int    pad = t->pad, dwpr = t->dwpr, cx0 = t->cx0, cx1 = t->cx1;
    uint64_t    *d = t->d + (size_t)worker * dwpr;
    int         *rtmp = B->rtmp + (size_t)worker * ((size_t)B->N + 2);
    for (size_t k = begin; k < end; ++k) {
        int r = (int)k - pad, ay = t->y + r;
        if (ay < 0 || ay >= B->H) continue;
        /* the rows r - pad .. r + pad of the mask, OR'ed, then widened by pad each side */
        memset(d, 0, sizeof(uint64_t) * (size_t)dwpr);
        int any = 0;
        for (int rr = r - pad; rr <= r + pad; ++rr) {
            if (rr < 0 || rr >= sh->h || !sh->run[rr]) continue;
            const uint64_t *h = t->hz + (size_t)rr * dwpr;
            for (int q = 0; q < dwpr; ++q) d[q] |= h[q];
            any = 1;
        }
        if (!any) continue;
        uint64_t *a = B->taken + (size_t)ay * B->wpr;
        row_or_at(a, B->wpr, d, t->dw, t->x - pad);
        /* bits past the right edge stay taken; the spare word too */
        /* the row's free runs again, and the longest: only runs that meet [cx0, cx1) changed,
         * into runs within their own extent (taking only splits and shortens runs) */
        const int *run = B->runs[ay];
        int        nr = B->nrun[ay], j0 = 0, n = 0, longest = 0;
        while (j0 < nr && run[2 * j0 + 1] <= cx0) j0++;
        int j1 = j0;
        while (j1 < nr && run[2 * j1] < cx1) j1++;
        if (j1 == j0) continue;
        memcpy(rtmp, run, sizeof(int) * 2 * (size_t)j0);
        n = j0;
        int lo = run[2 * j0] < cx0 ? run[2 * j0] : cx0, hi = run[2 * j1 - 1] > cx1 ? run[2 * j1 - 1] : cx1;
        for (int xx = bits_next(a, lo, hi, 0); xx < hi;) {
            int e = bits_next(a, xx, hi, 1);
            rtmp[2 * n] = xx;
            rtmp[2 * n + 1] = e;
            n++;
            xx = bits_next(a, e, hi, 0);
        }
        memcpy(rtmp + 2 * n, run + 2 * j1, sizeof(int) * 2 * (size_t)(nr - j1));
        n += nr - j1;
        for (int q = 0; q < n; ++q)
            if (rtmp[2 * q + 1] - rtmp[2 * q] > longest) longest = rtmp[2 * q + 1] - rtmp[2 * q];
        if (n > B->rcap[ay]) {
            int cap = n > 4 ? n : 4, *q = malloc(sizeof(int) * 2 * (size_t)cap);
            if (!q) {
                atomic_store(&t->err, 1);
                return;
            }
            if (B->rcap[ay]) free(B->runs[ay]);
            B->runs[ay] = q;
            B->rcap[ay] = cap;
        }
        if (n) memcpy(B->runs[ay], rtmp, sizeof(int) * 2 * (size_t)n);
        B->nrun[ay] = n;
        B->free_run[ay] = longest;
    }
}

/* Masks of at least this many rows are taken on the pool, in chunks of TAKE_CHUNK rows (sponza
 * 4096^2's takes were 0.06-0.08 s of its shapes stage on 16 threads, one thread taking them). */
#define TAKE_ROWS_POOL 64
#define TAKE_CHUNK     16

/* Marks sh at (x, y), dilated by pad, as taken; updates the rows' free runs. -1: out of memory. */
static int shape_take(shape_bin *B, const shape *sh, int x, int y, int pad)
{
    int dw = sh->w + 2 * pad, dwpr = (dw + 63) / 64 + 1;
    /* the square kernel is separable: each mask row widened by pad each side once, then each
     * bin row ORs the 2 pad + 1 widened rows around it */
    size_t need = (size_t)sh->h * dwpr + (size_t)B->threads * dwpr;
    if (need > B->hz_cap) {
        uint64_t *q = realloc(B->hz, sizeof(uint64_t) * need);
        if (!q) return -1;
        B->hz = q;
        B->hz_cap = need;
    }
    take_ctx t;
    t.B = B;
    t.sh = sh;
    t.hz = B->hz;
    t.d = B->hz + (size_t)sh->h * dwpr;
    t.dw = dw;
    t.dwpr = dwpr;
    t.x = x;
    t.y = y;
    t.pad = pad;
    t.cx0 = x - pad < 0 ? 0 : x - pad;
    t.cx1 = x - pad + dw < B->N ? x - pad + dw : B->N;
    atomic_init(&t.err, 0);
    size_t rows = (size_t)sh->h + 2 * (size_t)pad;
    if (B->threads > 1 && rows >= TAKE_ROWS_POOL) {
        bk_parallel_for((size_t)sh->h, TAKE_CHUNK, take_widen_fn, &t);
        bk_parallel_for(rows, TAKE_CHUNK, take_rows_fn, &t);
    } else {
        take_widen_fn(&t, 0, (size_t)sh->h, 0);
        take_rows_fn(&t, 0, rows, 0);
    }
    if (atomic_load(&t.err)) return -1;
    /* the segment trees, row by row (a row that did not change leaves them as they are) */
    for (int r = -pad; r < sh->h + pad; ++r)
        if (y + r >= 0 && y + r < B->H) seg_set(B, y + r, B->free_run[y + r]);
    if (y + sh->last_row + 1 > B->lowest) B->lowest = y + sh->last_row + 1;
    return 0;
}

/* Per turn: the last chart placed, where it landed, and whether that turn was the one taken. */
typedef struct shape_last {
    int ci, x, y, valid;
} shape_last;

/* The turns chart ci tries, and the step between them (squares: no quarter turns). */
static int nr_of(const charting *C, uint32_t ci, const shape *sh)
{
    return ci >= C->count ? 1 : sh[2].w ? SHAPE_ROTS : 2;
}
static int step_of(const charting *C, uint32_t ci)
{
    return ci < C->count && C->charts[ci].w == C->charts[ci].h ? 2 : 1;
}

/* Where each turn of a chart (sh: its turns) starts its search (y0, x0), and its size class.
 * With last NULL, where its size class alone starts it (the searches ahead: never later than the
 * start with the same-mask rule, which only moves it on). */
static void shape_hints(const shape_set *S, const shape *sh, int nrot, const shape_last *last, const int *class_y,
                        int *y0, int *x0, int *cls_out)
{
    for (int r = 0; r < SHAPE_ROTS; ++r) {
        y0[r] = 0;
        x0[r] = 0;
    }
    /* the same mask as the last chart's (repeated geometry: columns, arches, steps) fails
     * wherever it failed then, and the bin has only filled since: search on from there */
    for (int r = 0; last && r < nrot; ++r) {
        const shape *ls = last[r].valid ? &S->sh[SHAPE_ROTS * (size_t)last[r].ci + (size_t)r] : NULL;
        if (ls && ls->w == sh[r].w && ls->h == sh[r].h &&
            !memcmp(ls->bits, sh[r].bits, sizeof(uint64_t) * (size_t)sh[r].wpr * sh[r].h)) {
            y0[r] = last[r].y;
            x0[r] = last[r].x;
        }
    }
    /* Charts of one size class (bounding area within a factor 2) start their search some
     * rows above where the class's last one landed: holes further up that did not take the
     * class's first chart (which searched from the top) rarely take its later ones, and this
     * bounds the search of thousands of small charts by their class, not by the whole bin.
     * Each class remembers its row (charts come tallest first, so the classes interleave).
     * How far back: 4 mask heights + 256 rows. Measured against 2 heights + 16 rows with the
     * row forgotten whenever the class changes (which the tallest-first order makes often):
     * sibenik, sponza, dragon_vrip_res2 at 1024^2 75.1 -> 75.2, 85.8 -> 86.0, 75.2 -> 75.2 %
     * (mean of 960, 1024, 1088: 75.1 -> 75.2, 85.9 -> 85.8, 75.7 -> 75.0), sponza 4096^2
     * 93.2 -> 93.1 % at 0.96 -> 0.77 s one-thread CPU. Other look-backs: 2 heights + 16 rows
     * 0.64 s but 92.2 %; 2 + 128: 0.85 s, dragon mean 74.9; 16 + 128: 1.20 s, 93.7 %, means
     * 75.3, 85.9, 76.1. */
    int cls = (int)floor(log2((double)sh[0].w * sh[0].h));
    if (cls < 0) cls = 0;
    if (cls > 63) cls = 63;
    for (int r = 0; r < nrot; ++r) {
        int hint = class_y[cls] - 4 * sh[r].h - 256;
        if (hint > y0[r]) {
            y0[r] = hint;
            x0[r] = 0;
        }
    }
    *cls_out = cls;
}

/* Every chart's masks (each turn tried: the half turns only for masks of at least
 * 1/SHAPE_HALF_TURN_FRACTION of the atlas, no quarter turns for squares): sizes and slots in
 * S->bits and S->runs here, contents on the pool; too_big[ci] for charts larger than any atlas.
 * 0, or -1 out of memory. */
static int shape_masks(shape_set *S, uint32_t n_mesh, int N, uint8_t *too_big)
{
    const charting *C = S->C;
    const double   *fill = S->fill, s = S->s;
    size_t          nbits = 0, nruns = 0;
    for (uint32_t ci = 0; ci < n_mesh; ++ci) {
        int nrot = ci < C->count ? SHAPE_ROTS : 1;
        for (int r = 0; r < nrot; ++r) {
            shape *sh = &S->sh[SHAPE_ROTS * (size_t)ci + (size_t)r];
            /* the half turns (copies of the first two) only for masks large enough to try them */
            if (r >= 2 && !((double)sh[-r].w * sh[-r].h * SHAPE_HALF_TURN_FRACTION >= (double)N * N)) break;
            if ((r & 1) && C->charts[ci].w == C->charts[ci].h) continue; /* squares: no quarter turns */
            if (shape_size(C, ci, fill && ci < C->count ? s * fill[ci] : s, r, sh)) {
                too_big[ci] = 1;
                sh->w = 0;
                break;
            }
            nbits += (size_t)sh->wpr * sh->h;
            nruns += 3 * (size_t)sh->h;
        }
        if (too_big[ci])
            for (int r = 0; r < SHAPE_ROTS; ++r) S->sh[SHAPE_ROTS * (size_t)ci + (size_t)r].w = 0;
    }
    S->bits = calloc(nbits ? nbits : 1, sizeof(uint64_t));
    S->runs = malloc(sizeof(int) * (nruns ? nruns : 1));
    if (!S->bits || !S->runs) return -1;
    nbits = nruns = 0;
    for (size_t i = 0; i < SHAPE_ROTS * (size_t)n_mesh; ++i) {
        shape *sh = &S->sh[i];
        if (!sh->w) continue;
        sh->bits = S->bits + nbits;
        sh->run = S->runs + nruns;
        sh->run_at = sh->run + sh->h;
        sh->order = sh->run + 2 * (size_t)sh->h;
        nbits += (size_t)sh->wpr * sh->h;
        nruns += 3 * (size_t)sh->h;
    }
    bk_parallel_for(n_mesh, 16, shape_set_fn, S);
    return 0;
}

/* The order the charts go in (order[k].idx), by their rectangles at scale s (times fill[i]). */
static void shape_order_charts(const charting *C, uint32_t n_mesh, double s, const double *fill, key_idx *order)
{
    for (uint32_t i = 0; i < n_mesh; ++i) {
        /* Tallest first, where height is the rectangle's shorter side, then the longer side (in
         * 1/256 texels); largest rectangle first when the charts are few (SHAPE_AREA_ORDER_MAX).
         * Measured at 960, 1024 and 1088 texels against largest first for all: sibenik,
         * dragon_vrip_res2 and sponza 0.6, 1.3 and 0.9 points more on average, spider and Wuson
         * (107, 155 charts) 3 and 2 more at 512 and 1024; but the demo scene's 10 charts and the
         * Cornell box's 11 lost 2 points at 512 and 1024, so few charts keep the area order. */
        double si = fill && i < C->count ? s * fill[i] : s;
        double w = i < C->count ? C->charts[i].w * si : 0.0, h = i < C->count ? C->charts[i].h * si : 0.0;
        if (n_mesh > SHAPE_AREA_ORDER_MAX) {
            order[i].key = ~((uint64_t)llround(h * 256.0) << 32 | (uint64_t)llround(w * 256.0));
        } else {
            double   a = i < C->count ? (w + 1) * (h + 1) : 1.0;
            uint64_t bits;
            memcpy(&bits, &a, 8);
            order[i].key = ~bits;
        }
        order[i].idx = i;
    }
    qsort(order, n_mesh, sizeof(key_idx), bk_key_idx_cmp);
}

/* Searches ahead for the window of charts order[k0 .. k1) (SHAPE_AHEAD), side by side; the
 * serial placement takes their answers where they stand (spec_resolve). */
static void spec_window(const shape_bin *B, const shape_set *S, const key_idx *order, uint32_t k0, uint32_t k1,
                        const uint8_t *too_big, spec_res *spec, spec_task *stask, const int *class_y)
{
    const charting *C = S->C;
    /* 1: each chart's first turn from where its class starts now (spec) */
    uint32_t nt = 0;
    for (uint32_t k = k0; k < k1; ++k) {
        uint32_t     ci = order[k].idx;
        const shape *sh = &S->sh[SHAPE_ROTS * (size_t)ci];
        spec_res    *sr = &spec[2 * SHAPE_ROTS * (size_t)(k - k0)];
        for (int r = 0; r < 2 * SHAPE_ROTS; ++r) sr[r].valid = 0;
        if (too_big[ci]) continue;
        int y0[SHAPE_ROTS], x0[SHAPE_ROTS], cls;
        shape_hints(S, sh, nr_of(C, ci, sh), NULL, class_y, y0, x0, &cls);
        stask[nt++] = (spec_task){ &sh[0], y0[0], x0[0], B->H, &sr[0] };
    }
    spec_ctx sc = { B, stask };
    bk_parallel_for(nt, 1, spec_fn, &sc);
    /* 2: where the window's earlier charts of its class will have moved its start, guessed
     * from where their searches ahead ended: the first turn again from there, when later,
     * and the other turns from there (spec + SHAPE_ROTS + r), down to where the first
     * one's bottom ends ahead */
    int pred[64];
    memcpy(pred, class_y, sizeof pred);
    nt = 0;
    for (uint32_t k = k0; k < k1; ++k) {
        uint32_t     ci = order[k].idx;
        const shape *sh = &S->sh[SHAPE_ROTS * (size_t)ci];
        spec_res    *sr = &spec[2 * SHAPE_ROTS * (size_t)(k - k0)];
        if (too_big[ci]) continue;
        int nrot = nr_of(C, ci, sh), step = step_of(C, ci);
        int y0[SHAPE_ROTS], x0[SHAPE_ROTS], cls;
        shape_hints(S, sh, nrot, NULL, pred, y0, x0, &cls);
        if (y0[0] > sr[0].y0) stask[nt++] = (spec_task){ &sh[0], y0[0], x0[0], B->H, &sr[SHAPE_ROTS] };
        int land = sr[0].found ? sr[0].y : y0[0];
        if (land < y0[0]) land = y0[0];
        for (int r = step; r < nrot; r += step) {
            int lim = sr[0].found ? land + sh[0].h - sh[r].h : B->H;
            if (lim > 0) stask[nt++] = (spec_task){ &sh[r], y0[r], x0[r], lim, &sr[SHAPE_ROTS + r] };
        }
        if (sr[0].found) pred[cls] = land;
    }
    bk_parallel_for(nt, 1, spec_fn, &sc);
}

/* the bin's rows, free-run tree and scratch, allocated (a NULL is looked at by the caller) */
static void shape_bin_alloc(shape_bin *B, int N)
{
    memset(B, 0, sizeof *B);
    B->N = N;
    B->H = 2 * N;
    B->wpr = (N + 63) / 64 + 1;
    for (B->P = 1; B->P < B->H; B->P <<= 1) {}
    B->taken = calloc((size_t)B->wpr * B->H, sizeof(uint64_t));
    B->free_run = malloc(sizeof(int) * (size_t)B->H);
    B->runs = malloc(sizeof(int *) * (size_t)B->H);
    B->nrun = malloc(sizeof(int) * (size_t)B->H);
    B->rcap = calloc((size_t)B->H, sizeof(int));
    B->threads = bk_pool_threads();
    B->rtmp = malloc(sizeof(int) * ((size_t)N + 2) * (size_t)B->threads);
    B->full[0] = 0;
    B->full[1] = N;
    B->smin = malloc(sizeof(int) * 2 * (size_t)B->P);
    B->smax = malloc(sizeof(int) * 2 * (size_t)B->P);
    B->tasks = 4 * B->threads;
    B->xa = malloc(sizeof(int) * 2 * ((size_t)N + 2) * (size_t)B->threads);
    B->xb = malloc(sizeof(int) * 2 * ((size_t)N + 2) * (size_t)B->threads);
    B->hit_x = malloc(sizeof(int) * (size_t)B->tasks);
    B->hit_y = malloc(sizeof(int) * (size_t)B->tasks);
}

/* every row empty: its run the whole width, the columns past the edge taken */
static void shape_bin_rows(shape_bin *B, int N)
{
    for (int y = 0; y < B->H; ++y) {
        uint64_t *row = B->taken + (size_t)y * B->wpr;
        for (int xb = N; xb < 64 * B->wpr; ++xb) row[xb >> 6] |= 1ull << (xb & 63); /* past the edge */
        B->free_run[y] = N;
        B->runs[y] = B->full;
        B->nrun[y] = 1;
    }
    for (int i = 0; i < B->P; ++i) { B->smin[B->P + i] = B->smax[B->P + i] = i < B->H ? N : 0; }
    for (int i = B->P - 1; i >= 1; --i) {
        B->smin[i] = B->smin[2 * i] < B->smin[2 * i + 1] ? B->smin[2 * i] : B->smin[2 * i + 1];
        B->smax[i] = B->smax[2 * i] > B->smax[2 * i + 1] ? B->smax[2 * i] : B->smax[2 * i + 1];
    }
}

static void shape_bin_free(shape_bin *B)
{
    if (B->rcap)
        for (int y = 0; y < B->H; ++y)
            if (B->rcap[y]) free(B->runs[y]);
    free(B->runs);
    free(B->nrun);
    free(B->rcap);
    free(B->rtmp);
    free(B->taken);
    free(B->free_run);
    free(B->smin);
    free(B->smax);
    free(B->xa);
    free(B->xb);
    free(B->hit_x);
    free(B->hit_y);
    free(B->hz);
}

int bk_atlas_pack_shapes(const charting *C, uint32_t n_mesh, double s, const double *fill, int N, int pad, pk_item *it,
                         int *used_rows)
{
    int       rc = -1;
    shape_bin B;
    shape_bin_alloc(&B, N);
    key_idx  *order = malloc(sizeof(key_idx) * ((size_t)n_mesh + 1));
    shape_set S = { C, fill, s, NULL, NULL, NULL };
    S.sh = calloc(SHAPE_ROTS * ((size_t)n_mesh + 1), sizeof(shape));
    uint8_t   *too_big = calloc((size_t)n_mesh + 1, 1);
    spec_res  *spec = malloc(sizeof(spec_res) * 2 * SHAPE_ROTS * SHAPE_AHEAD);
    spec_task *stask = malloc(sizeof(spec_task) * SHAPE_ROTS * SHAPE_AHEAD);
    shape_last last[SHAPE_ROTS];
    int        class_y[64]; /* per size class: the row where its last chart landed */
    for (int c = 0; c < 64; ++c) class_y[c] = 0;
    memset(last, 0, sizeof last);
    if (!B.taken || !B.free_run || !B.runs || !B.nrun || !B.rcap || !B.rtmp || !B.smin || !B.smax || !B.xa || !B.xb ||
        !B.hit_x || !B.hit_y || !order || !S.sh || !too_big || !spec || !stask)
        goto out;
    /* the masks: sizes and slots here, contents on the pool */
    if (shape_masks(&S, n_mesh, N, too_big)) goto out;
    shape_bin_rows(&B, N);
    shape_order_charts(C, n_mesh, s, fill, order);
    rc = 0;
    /* windows of SHAPE_AHEAD charts searched ahead (spec_resolve) */
    const uint32_t ahead = bk_atlas_spec ? SHAPE_AHEAD : 1;
    for (uint32_t k0 = 0; k0 < n_mesh; k0 += ahead) {
        const uint32_t k1 = k0 + ahead < n_mesh ? k0 + ahead : n_mesh;
        spec_window(&B, &S, order, k0, k1, too_big, spec, stask, class_y);
        /* then one by one, in order, each at the first fit from its start in the bin as the
         * charts before it left it */
        for (uint32_t k = k0; k < k1; ++k) {
            uint32_t        ci = order[k].idx;
            const shape    *sh = &S.sh[SHAPE_ROTS * (size_t)ci];
            const spec_res *sr = &spec[2 * SHAPE_ROTS * (size_t)(k - k0)];
            int             nrot = nr_of(C, ci, sh);
            int             x = 0, y = 0, rot = 0, found = 0;
            /* a square rectangle is not turned a quarter (as the rectangles never were): the demo
             * scene's walls searched twice for nothing */
            int step = step_of(C, ci);
            if (too_big[ci]) goto out; /* larger than any atlas: does not fit (rc 0) */
            int y0[SHAPE_ROTS], x0[SHAPE_ROTS], cls;
            shape_hints(&S, sh, nrot, last, class_y, y0, x0, &cls);
            found = spec_resolve(&B, &sh[0], &sr[0], &sr[SHAPE_ROTS], y0[0], x0[0], B.H, &x, &y);
            for (int r = step; r < nrot; r += step) {
                int x1 = 0, y1 = 0;
                /* another turn only where its bottom ends higher: upright strips would fill the
                 * bin's height with their length */
                int lim = found ? y + sh[rot].h - sh[r].h : B.H;
                if (lim > 0 && spec_resolve(&B, &sh[r], NULL, &sr[SHAPE_ROTS + r], y0[r], x0[r], lim, &x1, &y1)) {
                    x = x1;
                    y = y1;
                    rot = r;
                    found = 1;
                }
            }
            /* remember each rotation's mask and where its search ended */
            for (int r = 0; r < nrot; ++r) {
                last[r].ci = (int)ci;
                last[r].valid = 1;
                /* a rotation not taken searched to its own first fit (or to the other's row) */
                last[r].y = found ? y : 0;
                last[r].x = found && r == rot ? x : 0;
                if (r != rot) last[r].valid = 0;
            }
            for (int r = nrot; r < SHAPE_ROTS; ++r) last[r].valid = 0;
            if (!found) {
                B.lowest = B.H + 1;
                goto out;
            }
            class_y[cls] = y;
            if (shape_take(&B, &sh[rot], x, y, pad - 2)) {
                rc = -1;
                goto out;
            }
            it[ci].x = x;
            it[ci].y = y;
            it[ci].rot = rot;
            it[ci].w = sh[rot].w;
            it[ci].h = sh[rot].h;
        }
    }
    rc = 1;
out:
    if (used_rows) *used_rows = B.lowest;
    shape_bin_free(&B);
    free(order);
    free(S.sh);
    free(S.bits);
    free(S.runs);
    free(too_big);
    free(spec);
    free(stask);
    return rc;
}
