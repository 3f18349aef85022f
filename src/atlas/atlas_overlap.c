/* atlas_overlap.c - which 2D triangles overlap: a chart's self-overlap after projection, two
 * charts before a merge, and the vt of --uv file (see the comment below for how the search stays
 * about linear in the triangles whatever their shapes; issue 7).
 */
#include "atlas_internal.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * 2D triangle overlap. Interiors overlap unless one of the six edge normals separates the two
 * triangles; `tol` (in the coordinates' units) lets shared edges and vertices touch.
 *
 * The overlapping pairs among many triangles (ov_search) must cost about what the triangles
 * themselves cost, whatever their shapes: a 100,000-vertex polygon fan-triangulated into slivers
 * that all meet at one apex made a grid of bounding boxes all-pairs in time and memory. Candidate
 * pairs come from two places and bk_atlas_tri2_overlap confirms each, so the pairs found are the ones an
 * all-pairs test finds (on pairs whose boxes touch, as before), however they were looked up:
 *  - pairs with a common corner (equal coordinates): two triangles meeting at a point overlap iff
 *    their angular wedges there overlap, so one sort of the wedges around each corner settles
 *    them, in time linear in its triangles plus the overlapping pairs;
 *  - pairs without one: a uniform grid, each triangle in the cells its area actually touches (row
 *    spans from its edges, not its box), with cells coarse enough that every triangle touches a
 *    few on average (long slivers make coarser cells). In a cell, the triangles around a corner
 *    most of them share (a fan's apex) are never paired with each other (the wedges did that),
 *    and the rest are swept along the axis across the cell's main edge direction, so a strip of
 *    parallel slivers costs its length, not its square.
 * Candidates are sorted and deduplicated, so the pairs come out sorted by (i, j) whatever the grid.
 * Not linear: the overlapping pairs themselves (n^2 for n stacked copies); triangles without a
 * common corner that overlap on the sweep axis in one cell yet not in the plane: two families of
 * long slivers crossing at an angle that only touch, many mid-size fans in one cell (a strip
 * between 1,000 and 100,000 points costs ~300 steps a triangle, growing with the fans' size), two
 * fans whose apexes coincide only approximately (a fan split between two charts being merged). */

/* bk_atlas_tri2_overlap's first test: does t have an interior at this tolerance? */
static int tri2_has_interior(const double *t, double tol)
{
    double ar = (t[2] - t[0]) * (t[5] - t[1]) - (t[3] - t[1]) * (t[4] - t[0]);
    double per = fabs(t[2] - t[0]) + fabs(t[3] - t[1]) + fabs(t[4] - t[0]) + fabs(t[5] - t[1]);
    return !(fabs(ar) <= tol * per);
}

int bk_atlas_tri2_overlap(const double *a, const double *b, double tol)
{
    const double *tr[2] = { a, b };
    if (!tri2_has_interior(a, tol) || !tri2_has_interior(b, tol)) return 0; /* no interior to overlap */
    for (int w = 0; w < 2; ++w)
        for (int k = 0; k < 3; ++k) {
            const double *t = tr[w];
            int           k1 = (k + 1) % 3;
            double        ax = -(t[2 * k1 + 1] - t[2 * k + 1]), ay = t[2 * k1] - t[2 * k];
            double        len = sqrt(ax * ax + ay * ay);
            if (len == 0) continue;
            double amin = DBL_MAX, amax = -DBL_MAX, bmin = DBL_MAX, bmax = -DBL_MAX;
            for (int i = 0; i < 3; ++i) {
                double pa = ax * a[2 * i] + ay * a[2 * i + 1], pb = ax * b[2 * i] + ay * b[2 * i + 1];
                if (pa < amin) amin = pa;
                if (pa > amax) amax = pa;
                if (pb < bmin) bmin = pb;
                if (pb > bmax) bmax = pb;
            }
            if (amax - bmin <= tol * len || bmax - amin <= tol * len) return 0;
        }
    return 1;
}


static int pair_push(pair_list *L, uint32_t i, uint32_t j)
{
    if (L->n == L->cap) {
        size_t    c = L->cap ? 2 * L->cap : 64;
        uint32_t *p = realloc(L->p, sizeof(uint32_t) * 2 * c);
        if (!p) return -1;
        L->p = p;
        L->cap = c;
    }
    L->p[2 * L->n] = i;
    L->p[2 * L->n + 1] = j;
    L->n++;
    return 0;
}


static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Sorts a[0..*n) and drops repeats. LSD radix for all but short lists (qsort's calls of its
 * comparison cost more), passes only over the digits where the keys differ, with the digit
 * width (8, 11 or 16 bits) that costs least for this many keys: the candidate pairs (i << 32 | j,
 * 12 bits each in a chart of 4,000 triangles) took two passes of 65,536 counters each, whose
 * clearing and prefix sums cost more than the 10,000-30,000 keys themselves. */
static int u64_sort_unique(uint64_t *a, size_t *n)
{
    size_t m = *n;
    if (m < 2) return 0;
    if (m < 64) qsort(a, m, sizeof *a, u64_cmp);
    else {
        uint64_t all_or = 0, all_and = ~0ull;
        for (size_t i = 0; i < m; ++i) {
            all_or |= a[i];
            all_and &= a[i];
        }
        const uint64_t   vary = all_or ^ all_and;
        static const int widths[3] = { 8, 11, 16 };
        int              w = 16;
        double           best = -1;
        for (int k = 0; k < 3; ++k) {
            int passes = 0;
            for (int shift = 0; shift < 64; shift += widths[k])
                passes += ((vary >> shift) & ((1ull << widths[k]) - 1)) != 0;
            double cost = passes * (2.0 * (double)m + 2.0 * (double)(1 << widths[k]));
            if (best < 0 || cost < best) {
                best = cost;
                w = widths[k];
            }
        }
        const uint64_t mask = (1ull << w) - 1;
        const size_t   nb = (size_t)1 << w;
        uint64_t      *tmp = malloc(sizeof *tmp * m);
        size_t        *cnt = malloc(sizeof(size_t) * (nb + 1));
        if (!tmp || !cnt) {
            free(tmp);
            free(cnt);
            return -1;
        }
        uint64_t *src = a, *dst = tmp;
        for (int shift = 0; shift < 64; shift += w) {
            if (((vary >> shift) & mask) == 0) continue;
            memset(cnt, 0, sizeof(size_t) * (nb + 1));
            for (size_t i = 0; i < m; ++i) cnt[((src[i] >> shift) & mask) + 1]++;
            for (size_t d = 0; d < nb; ++d) cnt[d + 1] += cnt[d];
            for (size_t i = 0; i < m; ++i) dst[cnt[(src[i] >> shift) & mask]++] = src[i];
            uint64_t *x = src;
            src = dst;
            dst = x;
        }
        if (src != a) memcpy(a, src, sizeof *a * m);
        free(tmp);
        free(cnt);
    }
    size_t w = 1;
    for (size_t i = 1; i < m; ++i)
        if (a[i] != a[w - 1]) a[w++] = a[i];
    *n = w;
    return 0;
}

typedef struct ov_search {
    const double  *xy;    /* 6 per triangle: the corners */
    const uint8_t *group; /* NULL: every pair; else only pairs from different groups */
    uint32_t       n;
    double         tol;
    uint64_t       work; /* grid cells filled, corners counted, pairs and wedges looked at */
    double        *bb;   /* 4 per triangle: xmin, ymin, xmax, ymax */
    double        *dir;  /* 3 per triangle: longest edge as (cos 2a, sin 2a) * length, length */
    uint8_t       *live; /* 1: finite, with an interior; the others overlap nothing */
    uint32_t      *vid;  /* 3 per triangle: the first corner (3 t + k) at the same point */
    uint32_t      *cnt;  /* 3 n counters by vid, kept at zero between uses */
    uint64_t      *cand; /* candidate pairs, (i << 32) | j with i < j */
    size_t         ncand, ccap;
    int            first_only; /* 1: test candidates at once and stop at the first overlap */
    int            found;      /* first_only: an overlapping pair was found */
} ov_search;

/* A candidate pair. Nonzero stops the search: out of memory, or (first_only) an overlap found. */
static int ov_push(ov_search *S, uint32_t i, uint32_t j)
{
    if (S->first_only) {
        S->work++;
        if (!bk_atlas_tri2_overlap(S->xy + 6 * (size_t)(i < j ? i : j), S->xy + 6 * (size_t)(i < j ? j : i), S->tol))
            return 0;
        S->found = 1;
        return 1;
    }
    if (S->ncand == S->ccap) {
        size_t    c = S->ccap ? 2 * S->ccap : 256;
        uint64_t *p = realloc(S->cand, sizeof(uint64_t) * c);
        if (!p) return -1;
        S->cand = p;
        S->ccap = c;
    }
    S->cand[S->ncand++] = i < j ? (uint64_t)i << 32 | j : (uint64_t)j << 32 | i;
    return 0;
}

/* A pair for the grid: from different groups, boxes touching, and no common corner (pairs with
 * one are the wedges' business). */
static int ov_consider(ov_search *S, uint32_t i, uint32_t j)
{
    S->work++;
    if (S->group && S->group[i] == S->group[j]) return 0;
    const double *a = S->bb + 4 * (size_t)i, *b = S->bb + 4 * (size_t)j;
    if (a[0] > b[2] || b[0] > a[2] || a[1] > b[3] || b[1] > a[3]) return 0;
    const uint32_t *va = S->vid + 3 * (size_t)i, *vb = S->vid + 3 * (size_t)j;
    for (int k = 0; k < 3; ++k)
        if (va[k] == vb[0] || va[k] == vb[1] || va[k] == vb[2]) return 0;
    return ov_push(S, i, j);
}

static uint64_t dkey(double d)
{
    uint64_t b;
    if (d == 0) d = 0;
    memcpy(&b, &d, 8);
    return b;
}

/* vid: corners with equal coordinates (-0 == +0) get the index of the first of them. */
static int ov_corner_ids(ov_search *S)
{
    size_t nc = 3 * (size_t)S->n, cap = 16;
    while (cap < 2 * nc) cap <<= 1;
    uint32_t *table = malloc(sizeof(uint32_t) * cap);
    if (!table) return -1;
    memset(table, 0xFF, sizeof(uint32_t) * cap);
    for (size_t c = 0; c < nc; ++c) {
        uint64_t kx = dkey(S->xy[2 * c]), ky = dkey(S->xy[2 * c + 1]);
        uint64_t h = kx * 0x9E3779B97F4A7C15ull ^ (ky + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
        h ^= h >> 31;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        for (size_t s = h & (cap - 1);; s = (s + 1) & (cap - 1)) {
            uint32_t w = table[s];
            if (w == BK_NONE) {
                table[s] = (uint32_t)c;
                S->vid[c] = (uint32_t)c;
                break;
            }
            if (dkey(S->xy[2 * (size_t)w]) == kx && dkey(S->xy[2 * (size_t)w + 1]) == ky) {
                S->vid[c] = w;
                break;
            }
        }
    }
    free(table);
    return 0;
}

/* ---- pairs with a common corner: wedges ---------------------------------------------------- */

/* The wedge of a triangle at one corner: the directions of its two edges there as pseudo-angles
 * (below), from s counter-clockwise to e (less than a half turn apart). */
typedef struct ov_arc {
    double   s, e;
    uint32_t t;
} ov_arc;

/* A direction as a number in [0, 4) that grows with its angle (a quarter turn per unit, the
 * "diamond angle"): cheaper than atan2, the same for the same vector, and a half turn is 2. */
static double diamond_angle(double x, double y)
{
    if (y >= 0) return x >= 0 ? y / (x + y) : 1 - x / (y - x);
    return x < 0 ? 2 - y / (-x - y) : 3 + x / (x - y);
}

/* A margin on pseudo-angles, far above their rounding yet far below any angle a real mesh meets
 * at: an overlap the wedges miss by less is a sliver of depth below tol, which bk_atlas_tri2_overlap
 * rejects anyway. */
#define OV_ARC_EPS 1e-12

static double ccw_from(double a, double b)
{
    double d = b - a;
    return d < 0 ? d + 4.0 : d;
}

/* May the two wedges' interiors meet? Wedges with a ray in common (the same edge, or collinear
 * ones) only touch there: each is less than pi wide. */
static int arcs_meet(const ov_arc *a, const ov_arc *b)
{
    if (a->s == b->s || a->e == b->e) return 1;
    if (a->s == b->e || b->s == a->e) return 0;
    double d = ccw_from(a->s, b->s);
    return d <= ccw_from(a->s, a->e) + OV_ARC_EPS || d >= 4.0 - ccw_from(b->s, b->e) - OV_ARC_EPS;
}

static int arc_cmp(const void *pa, const void *pb)
{
    const ov_arc *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

static int ov_wedges(ov_search *S)
{
    size_t    nc = 3 * (size_t)S->n;
    uint32_t *start = calloc(nc + 2, sizeof(uint32_t)), *corner = malloc(sizeof(uint32_t) * (nc + 1));
    ov_arc   *arc = malloc(sizeof(ov_arc) * (nc + 1));
    int       rc = -1;
    if (!start || !corner || !arc) goto out;
    for (size_t c = 0; c < nc; ++c)
        if (S->live[c / 3]) start[S->vid[c] + 1]++;
    for (size_t v = 0; v < nc; ++v) start[v + 1] += start[v];
    for (size_t c = 0; c < nc; ++c)
        if (S->live[c / 3]) corner[start[S->vid[c]]++] = (uint32_t)c;
    for (size_t v = nc; v > 0; --v) start[v] = start[v - 1]; /* the fill advanced each start */
    start[0] = 0;
    for (size_t v = 0; v < nc; ++v) {
        uint32_t k = start[v + 1] - start[v];
        if (k < 2) continue;
        S->work += k;
        if (S->group) { /* only pairs across the groups count: most corners have none */
            uint8_t  g0 = S->group[corner[start[v]] / 3];
            uint32_t i = 1;
            while (i < k && S->group[corner[start[v] + i] / 3] == g0) i++;
            if (i == k) continue;
        }
        for (uint32_t i = 0; i < k; ++i) {
            uint32_t      c = corner[start[v] + i], t = c / 3, kk = c % 3;
            const double *P = S->xy + 6 * (size_t)t;
            const double *o = P + 2 * kk, *p = P + 2 * ((kk + 1) % 3), *q = P + 2 * ((kk + 2) % 3);
            double        ar = (P[2] - P[0]) * (P[5] - P[1]) - (P[3] - P[1]) * (P[4] - P[0]);
            double        sp = diamond_angle(p[0] - o[0], p[1] - o[1]), sq = diamond_angle(q[0] - o[0], q[1] - o[1]);
            /* counter-clockwise corners (o, p, q): the interior runs from o->p round to o->q */
            arc[i].s = ar > 0 ? sp : sq;
            arc[i].e = ar > 0 ? sq : sp;
            arc[i].t = t;
        }
        if (k <= 8) {
            for (uint32_t i = 0; i < k; ++i)
                for (uint32_t j = i + 1; j < k; ++j) {
                    S->work++;
                    if (S->group && S->group[arc[i].t] == S->group[arc[j].t]) continue;
                    if (arcs_meet(&arc[i], &arc[j]) && ov_push(S, arc[i].t, arc[j].t)) goto out;
                }
            continue;
        }
        /* Every meeting pair has one wedge starting inside the other (or both at one angle): from
         * each wedge, walk the wedges that start after it, in angle order, round the circle,
         * until one starts past its end. A fan's wedges each meet the next one only at a ray. */
        qsort(arc, k, sizeof(ov_arc), arc_cmp);
        for (uint32_t i = 0; i < k; ++i) {
            double w = ccw_from(arc[i].s, arc[i].e) + OV_ARC_EPS;
            for (uint32_t step = 1; step < k; ++step) {
                const ov_arc *b = &arc[(i + step) % k];
                S->work++;
                if (ccw_from(arc[i].s, b->s) > w) break;
                if (S->group && S->group[arc[i].t] == S->group[b->t]) continue;
                if (arcs_meet(&arc[i], b) && ov_push(S, arc[i].t, b->t)) goto out;
            }
        }
    }
    rc = 0;
out:
    free(start);
    free(corner);
    free(arc);
    return rc;
}

/* ---- pairs without one: the grid ----------------------------------------------------------- */

/* The x extent of triangle t between the lines y = y0 and y = y1 (y0 <= y1): its corners in the
 * slab and its edges' crossings of the two lines. 0 when it misses the slab. */
static int slab_span(const double *t, double y0, double y1, double *xa, double *xb)
{
    double a = DBL_MAX, b = -DBL_MAX;
    for (int k = 0; k < 3; ++k) {
        double px = t[2 * k], py = t[2 * k + 1], qx = t[2 * ((k + 1) % 3)], qy = t[2 * ((k + 1) % 3) + 1];
        if (py >= y0 && py <= y1) {
            a = bk_dmin(a, px);
            b = bk_dmax(b, px);
        }
        if (py == qy) continue;
        for (int s = 0; s < 2; ++s) {
            double Y = s ? y1 : y0;
            if ((Y > py) == (Y > qy)) continue;
            double x = px + (Y - py) * (qx - px) / (qy - py);
            x = bk_dmax(bk_dmin(x, bk_dmax(px, qx)), bk_dmin(px, qx)); /* rounding never leaves the edge */
            a = bk_dmin(a, x);
            b = bk_dmax(b, x);
        }
    }
    if (!(a <= b)) return 0;
    *xa = a;
    *xb = b;
    return 1;
}

/* A grid cell index from a coordinate, clamped before the conversion (no float->int overflow). */
static int grid_cell(double x, double lo, double scale, int g)
{
    double c = floor((x - lo) * scale);
    if (!(c >= 0)) return 0;
    if (c > g - 1) return g - 1;
    return (int)c;
}

typedef struct ov_grid {
    double    lo[2], sx, sy, eps;
    int       gx, gy;
    size_t   *cstart; /* gx * gy + 1 */
    uint32_t *items;
} ov_grid;

/* Visits the cells triangle t touches, row by row: pass 0 counts, pass 1 fills. Every point of
 * the triangle lies in a visited cell (eps widens the slabs and spans past rounding). */
static size_t ov_grid_tri(const ov_search *S, ov_grid *G, uint32_t t, int pass)
{
    const double *T = S->xy + 6 * (size_t)t, *b = S->bb + 4 * (size_t)t;
    int r0 = grid_cell(b[1] - G->eps, G->lo[1], G->sy, G->gy), r1 = grid_cell(b[3] + G->eps, G->lo[1], G->sy, G->gy);
    int bc0 = grid_cell(b[0] - G->eps, G->lo[0], G->sx, G->gx), bc1 = grid_cell(b[2] + G->eps, G->lo[0], G->sx, G->gx);
    /* a box of a few cells: all of them (spans would save nothing) */
    int    few = (r1 - r0 + 1) * (bc1 - bc0 + 1) <= 4;
    size_t n = 0;
    for (int r = r0; r <= r1; ++r) {
        int c0 = bc0, c1 = bc1;
        if (!few) {
            double y0 = G->lo[1] + r / G->sy - G->eps, y1 = G->lo[1] + (r + 1) / G->sy + G->eps, xa, xb;
            if (!slab_span(T, y0, y1, &xa, &xb)) continue;
            c0 = grid_cell(xa - G->eps, G->lo[0], G->sx, G->gx);
            c1 = grid_cell(xb + G->eps, G->lo[0], G->sx, G->gx);
        }
        for (int c = c0; c <= c1; ++c) {
            size_t cell = (size_t)r * G->gx + c;
            if (pass == 0) G->cstart[cell + 1]++;
            else G->items[G->cstart[cell]++] = t;
        }
        n += (size_t)(c1 - c0 + 1);
    }
    return n;
}

typedef struct ov_sw {
    double   s, e;
    uint32_t t;
} ov_sw; /* a triangle's extent on the sweep axis */

static int sw_cmp(const void *pa, const void *pb)
{
    const ov_sw *a = pa, *b = pb;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->t > b->t) - (a->t < b->t);
}

/* The sweep axis for the triangles L[0..k): across their longest edges' mean direction (as
 * doubled angles, so opposite edges agree) when they share one, else the box axis along which
 * they are thinner. */
static void ov_axis(const ov_search *S, const uint32_t *L, uint32_t k, double *ax, double *ay)
{
    double c2 = 0, s2 = 0, len = 0, wx = 0, wy = 0;
    for (uint32_t i = 0; i < k; ++i) {
        const double *d = S->dir + 3 * (size_t)L[i], *b = S->bb + 4 * (size_t)L[i];
        c2 += d[0];
        s2 += d[1];
        len += d[2];
        wx += b[2] - b[0];
        wy += b[3] - b[1];
    }
    if (sqrt(c2 * c2 + s2 * s2) > 0.5 * len) {
        double a = 0.5 * atan2(s2, c2);
        *ax = -sin(a);
        *ay = cos(a);
    } else if (wx <= wy) {
        *ax = 1;
        *ay = 0;
    } else {
        *ax = 0;
        *ay = 1;
    }
}

static void ov_project(const ov_search *S, const uint32_t *L, uint32_t k, double ax, double ay, double eps, ov_sw *out)
{
    for (uint32_t i = 0; i < k; ++i) {
        const double *T = S->xy + 6 * (size_t)L[i];
        double        p0 = ax * T[0] + ay * T[1], p1 = ax * T[2] + ay * T[3], p2 = ax * T[4] + ay * T[5];
        out[i].s = bk_dmin(p0, bk_dmin(p1, p2)) - eps;
        out[i].e = bk_dmax(p0, bk_dmax(p1, p2)) + eps;
        out[i].t = L[i];
    }
    qsort(out, k, sizeof(ov_sw), sw_cmp);
}

/* Pairs of L[0..k) whose extents on the sweep axis overlap. */
static int ov_within(ov_search *S, const uint32_t *L, uint32_t k, double eps, ov_sw *sw)
{
    double ax, ay;
    ov_axis(S, L, k, &ax, &ay);
    ov_project(S, L, k, ax, ay, eps, sw);
    for (uint32_t i = 0; i < k; ++i)
        for (uint32_t j = i + 1; j < k && sw[j].s <= sw[i].e; ++j)
            if (ov_consider(S, sw[i].t, sw[j].t)) return -1;
    return 0;
}

/* Pairs (h, r), h in H[0..nh), r in R[0..nr), whose extents on the sweep axis overlap: the one
 * that starts first (H on a tie) walks the other list. */
static int ov_cross(ov_search *S, const uint32_t *H, uint32_t nh, const uint32_t *R, uint32_t nr, double eps,
                    uint32_t *both, ov_sw *sh, ov_sw *sr)
{
    if (!nh || !nr) return 0;
    double ax, ay;
    memcpy(both, H, sizeof(uint32_t) * nh);
    memcpy(both + nh, R, sizeof(uint32_t) * nr);
    ov_axis(S, both, nh + nr, &ax, &ay);
    ov_project(S, H, nh, ax, ay, eps, sh);
    ov_project(S, R, nr, ax, ay, eps, sr);
    uint32_t i = 0, j = 0;
    while (i < nh && j < nr) {
        if (sh[i].s <= sr[j].s) {
            for (uint32_t q = j; q < nr && sr[q].s <= sh[i].e; ++q)
                if (ov_consider(S, sh[i].t, sr[q].t)) return -1;
            i++;
        } else {
            for (uint32_t q = i; q < nh && sh[q].s <= sr[j].e; ++q)
                if (ov_consider(S, sh[q].t, sr[j].t)) return -1;
            j++;
        }
    }
    return 0;
}

#define OV_SMALL 16 /* cells up to this many triangles test all their pairs */

/* The pairs of one cell's triangles L[0..k) (L is overwritten). While one corner is shared by at
 * least a quarter of them, those are split off and paired only with the rest. */
static int ov_cell(ov_search *S, uint32_t *L, uint32_t k, double eps, uint32_t *H, uint32_t *R, ov_sw *sw1, ov_sw *sw2)
{
    while (k > OV_SMALL) {
        uint32_t hub = BK_NONE, best = 0;
        for (uint32_t i = 0; i < k; ++i)
            for (int c = 0; c < 3; ++c) {
                uint32_t v = S->vid[3 * (size_t)L[i] + c];
                if (++S->cnt[v] > best) {
                    best = S->cnt[v];
                    hub = v;
                }
            }
        for (uint32_t i = 0; i < k; ++i)
            for (int c = 0; c < 3; ++c) S->cnt[S->vid[3 * (size_t)L[i] + c]] = 0;
        S->work += k;
        if (best < 2 || 4 * (uint64_t)best < k) break;
        uint32_t nh = 0, nr = 0;
        for (uint32_t i = 0; i < k; ++i) {
            const uint32_t *v = S->vid + 3 * (size_t)L[i];
            if (v[0] == hub || v[1] == hub || v[2] == hub) H[nh++] = L[i];
            else R[nr++] = L[i];
        }
        /* L doubles as the scratch for H and R together */
        if (ov_cross(S, H, nh, R, nr, eps, L, sw1, sw2)) return -1;
        memcpy(L, R, sizeof(uint32_t) * nr);
        k = nr;
    }
    if (k <= OV_SMALL) {
        for (uint32_t i = 0; i < k; ++i)
            for (uint32_t j = i + 1; j < k; ++j)
                if (ov_consider(S, L[i], L[j])) return -1;
        return 0;
    }
    return ov_within(S, L, k, eps, sw1);
}

static int ov_grid_pairs(ov_search *S)
{
    uint32_t n = S->n, nl = 0;
    double   lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX }, per = 0, area = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (!S->live[i]) continue;
        const double *b = S->bb + 4 * (size_t)i, *t = S->xy + 6 * (size_t)i;
        for (int k = 0; k < 2; ++k) {
            lo[k] = bk_dmin(lo[k], b[k]);
            hi[k] = bk_dmax(hi[k], b[2 + k]);
        }
        per += (b[2] - b[0]) + (b[3] - b[1]);
        area += 0.5 * fabs((t[2] - t[0]) * (t[5] - t[1]) - (t[3] - t[1]) * (t[4] - t[0]));
        nl++;
    }
    if (nl < 2) return 0;
    /* A triangle touches about area / cell^2 + (width + height) / cell + 1 cells: the cell is
     * the one with about one triangle per cell (as for even meshes), grown until the summed
     * perimeters and areas add at most 4 and 2 cells per triangle. */
    double ex = hi[0] - lo[0], ey = hi[1] - lo[1];
    double cell = bk_dmax(sqrt(bk_dmax(ex * ey, 1e-300) / nl), bk_dmax(per / (4.0 * nl), sqrt(area / (2.0 * nl))));
    if (!(cell > 0) || !isfinite(cell)) cell = bk_dmax(ex, ey) + 1.0;
    ov_grid G;
    G.lo[0] = lo[0];
    G.lo[1] = lo[1];
    G.gx = (int)bk_dmin(bk_dmax(ceil(ex / cell), 1.0), 2048.0);
    G.gy = (int)bk_dmin(bk_dmax(ceil(ey / cell), 1.0), 2048.0);
    G.sx = G.gx / bk_dmax(ex, 1e-300);
    G.sy = G.gy / bk_dmax(ey, 1e-300);
    /* far above the rounding of coordinates this large, far below anything a cell holds */
    G.eps = 1e-9 * (ex + ey + fabs(lo[0]) + fabs(lo[1]));
    size_t NG = (size_t)G.gx * G.gy;
    G.cstart = calloc(NG + 1, sizeof(size_t));
    G.items = NULL;
    uint32_t *L = NULL, *H = NULL, *R = NULL;
    ov_sw    *sw1 = NULL, *sw2 = NULL;
    int       rc = -1;
    if (!G.cstart) goto out;
    size_t total = 0;
    for (uint32_t i = 0; i < n; ++i)
        if (S->live[i]) total += ov_grid_tri(S, &G, i, 0);
    S->work += total;
    size_t most = 0;
    for (size_t c = 0; c < NG; ++c) {
        if (G.cstart[c + 1] > most) most = G.cstart[c + 1];
        G.cstart[c + 1] += G.cstart[c];
    }
    G.items = malloc(sizeof(uint32_t) * (total + 1));
    L = malloc(sizeof(uint32_t) * (most + 1));
    H = malloc(sizeof(uint32_t) * (most + 1));
    R = malloc(sizeof(uint32_t) * (most + 1));
    sw1 = malloc(sizeof(ov_sw) * (most + 1));
    sw2 = malloc(sizeof(ov_sw) * (most + 1));
    if (!G.items || !L || !H || !R || !sw1 || !sw2) goto out;
    for (uint32_t i = 0; i < n; ++i)
        if (S->live[i]) ov_grid_tri(S, &G, i, 1);
    /* the fill advanced each start to the next cell's: cell c holds [cstart[c-1], cstart[c]) */
    for (size_t c = 0; c < NG; ++c) {
        size_t a = c ? G.cstart[c - 1] : 0, b = G.cstart[c];
        if (b - a < 2) continue;
        memcpy(L, G.items + a, sizeof(uint32_t) * (b - a));
        if (ov_cell(S, L, (uint32_t)(b - a), G.eps, H, R, sw1, sw2)) goto out;
    }
    rc = 0;
out:
    free(G.cstart);
    free(G.items);
    free(L);
    free(H);
    free(R);
    free(sw1);
    free(sw2);
    return rc;
}

static void ov_free(ov_search *S)
{
    free(S->bb);
    free(S->dir);
    free(S->live);
    free(S->vid);
    free(S->cnt);
    free(S->cand);
    memset(S, 0, sizeof *S);
}

/* Candidate pairs of xy[0..n) into S->cand[0..S->ncand), sorted, each once: a superset of the
 * pairs bk_atlas_tri2_overlap accepts among those whose boxes touch. With first_only, candidates are
 * tested as they come (repeats included) and S->found says whether one overlapped. 0, or -1 out
 * of memory. */
static int ov_run(ov_search *S, const double *xy, uint32_t n, const uint8_t *group, double tol, int first_only)
{
    memset(S, 0, sizeof *S);
    S->xy = xy;
    S->n = n;
    S->group = group;
    S->tol = tol;
    S->first_only = first_only;
    S->bb = malloc(sizeof(double) * 4 * (size_t)n + 1);
    S->dir = malloc(sizeof(double) * 3 * (size_t)n + 1);
    S->live = malloc((size_t)n + 1);
    S->vid = malloc(sizeof(uint32_t) * 3 * (size_t)n + 1);
    S->cnt = calloc(3 * (size_t)n + 1, sizeof(uint32_t));
    if (!S->bb || !S->dir || !S->live || !S->vid || !S->cnt) return -1;
    for (uint32_t i = 0; i < n; ++i) {
        const double *t = xy + 6 * (size_t)i;
        int           fin = 1;
        for (int k = 0; k < 6; ++k) fin &= isfinite(t[k]) != 0;
        S->live[i] = (uint8_t)(fin && tri2_has_interior(t, tol));
        bk_box_of_tri(t, S->bb + 4 * (size_t)i);
        double *d = S->dir + 3 * (size_t)i, best = -1;
        for (int k = 0; k < 3; ++k) {
            double dx = t[2 * ((k + 1) % 3)] - t[2 * k], dy = t[2 * ((k + 1) % 3) + 1] - t[2 * k + 1];
            double l2 = dx * dx + dy * dy;
            if (!(l2 > best)) continue;
            best = l2;
            double l = sqrt(l2);
            d[0] = l > 0 ? (dx * dx - dy * dy) / l : 0;
            d[1] = l > 0 ? 2 * dx * dy / l : 0;
            d[2] = l;
        }
    }
    if (ov_corner_ids(S) || ov_wedges(S) || ov_grid_pairs(S)) return S->found ? 0 : -1;
    S->work += S->ncand;
    return u64_sort_unique(S->cand, &S->ncand);
}

/* All pairs (i < j) of the n triangles xy[6 i ..] whose interiors overlap, appended to out in
 * (i, j) order; *work grows by the search's work. */
int bk_atlas_find_overlaps(const double *xy, uint32_t n, double tol, pair_list *out, uint64_t *work)
{
    if (n < 2) return 0;
    if (n <= 24) {
        *work += (uint64_t)n * (n - 1) / 2;
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t j = i + 1; j < n; ++j)
                if (bk_atlas_tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j))
                    return -1;
        return 0;
    }
    if (n <= 64) { /* below the search's own setup cost; boxes first, as the search does */
        *work += (uint64_t)n * (n - 1) / 2;
        for (uint32_t i = 0; i < n; ++i) {
            double bi[4], bj[4];
            bk_box_of_tri(xy + 6 * (size_t)i, bi);
            for (uint32_t j = i + 1; j < n; ++j) {
                bk_box_of_tri(xy + 6 * (size_t)j, bj);
                if (bi[0] > bj[2] || bj[0] > bi[2] || bi[1] > bj[3] || bj[1] > bi[3]) continue;
                if (bk_atlas_tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j))
                    return -1;
            }
        }
        return 0;
    }
    ov_search S;
    int       rc = ov_run(&S, xy, n, NULL, tol, 0);
    for (size_t c = 0; c < S.ncand && !rc; ++c) {
        uint32_t i = (uint32_t)(S.cand[c] >> 32), j = (uint32_t)S.cand[c];
        if (bk_atlas_tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j)) rc = -1;
    }
    *work += S.work;
    ov_free(&S);
    return rc;
}

/* Does any triangle of xa[0..na) overlap one of xb[0..nb)? Only the triangles of a whose boxes
 * touch b's bounding box are looked at, and of b only those touching the box of these (a pair
 * with touching boxes is never left out), all in one overlap search whose groups keep a's from
 * pairing with a's; 1 yes, 0 no, -1 out of memory. */

int bk_atlas_sets_overlap(const double *xa, uint32_t na, const double *xb, uint32_t nb, double tol, overlap_scratch *o,
                          uint64_t *work)
{
    if ((size_t)na + nb > o->cap) {
        size_t    cap = 2 * ((size_t)na + nb);
        uint32_t *sel = realloc(o->sel, sizeof(uint32_t) * cap);
        if (!sel) return -1;
        o->sel = sel;
        sel = realloc(o->selb, sizeof(uint32_t) * cap);
        if (!sel) return -1;
        o->selb = sel;
        double *box = realloc(o->box, sizeof(double) * 4 * cap);
        if (!box) return -1;
        o->box = box;
        double *xy = realloc(o->xy, sizeof(double) * 6 * cap);
        if (!xy) return -1;
        o->xy = xy;
        uint8_t *grp = realloc(o->grp, cap);
        if (!grp) return -1;
        o->grp = grp;
        o->cap = cap;
    }
    /* boxes of b's triangles and of all of b */
    double  bb[4] = { DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX }, t[4];
    double *boxb = o->box;
    for (uint32_t j = 0; j < nb; ++j) {
        double *q = boxb + 4 * (size_t)j;
        bk_box_of_tri(xb + 6 * (size_t)j, q);
        bb[0] = bk_dmin(bb[0], q[0]);
        bb[1] = bk_dmin(bb[1], q[1]);
        bb[2] = bk_dmax(bb[2], q[2]);
        bb[3] = bk_dmax(bb[3], q[3]);
    }
    uint32_t ns = 0, nbs = 0;
    double   ba[4] = { DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX };
    for (uint32_t i = 0; i < na; ++i) {
        bk_box_of_tri(xa + 6 * (size_t)i, t);
        if (t[0] <= bb[2] && t[2] >= bb[0] && t[1] <= bb[3] && t[3] >= bb[1]) {
            o->sel[ns++] = i;
            ba[0] = bk_dmin(ba[0], t[0]);
            ba[1] = bk_dmin(ba[1], t[1]);
            ba[2] = bk_dmax(ba[2], t[2]);
            ba[3] = bk_dmax(ba[3], t[3]);
        }
    }
    if (!ns) return 0;
    for (uint32_t j = 0; j < nb; ++j) {
        const double *q = boxb + 4 * (size_t)j;
        if (q[0] <= ba[2] && q[2] >= ba[0] && q[1] <= ba[3] && q[3] >= ba[1]) o->selb[nbs++] = j;
    }
    *work += (uint64_t)na + nb;
    if ((uint64_t)ns * nbs <= 4096) {
        *work += (uint64_t)ns * nbs;
        for (uint32_t i = 0; i < ns; ++i) {
            const double *ta = xa + 6 * (size_t)o->sel[i];
            bk_box_of_tri(ta, t);
            for (uint32_t jj = 0; jj < nbs; ++jj) {
                uint32_t      j = o->selb[jj];
                const double *q = boxb + 4 * (size_t)j;
                if (t[0] > q[2] || q[0] > t[2] || t[1] > q[3] || q[1] > t[3]) continue;
                if (bk_atlas_tri2_overlap(ta, xb + 6 * (size_t)j, tol)) return 1;
            }
        }
        return 0;
    }
    for (uint32_t i = 0; i < ns; ++i) {
        memcpy(o->xy + 6 * (size_t)i, xa + 6 * (size_t)o->sel[i], 6 * sizeof(double));
        o->grp[i] = 0;
    }
    for (uint32_t j = 0; j < nbs; ++j) {
        memcpy(o->xy + 6 * ((size_t)ns + j), xb + 6 * (size_t)o->selb[j], 6 * sizeof(double));
        o->grp[ns + j] = 1;
    }
    ov_search S;
    int       rc = ov_run(&S, o->xy, ns + nbs, o->grp, tol, 1) ? -1 : S.found;
    *work += S.work;
    ov_free(&S);
    return rc;
}

void bk_atlas_overlap_scratch_free(overlap_scratch *o)
{
    free(o->sel);
    free(o->selb);
    free(o->box);
    free(o->xy);
    free(o->grp);
    memset(o, 0, sizeof *o);
}
