/* atlas.c - lightmap UVs: charts by region growing, planar projection, unfolding merges and
 * skyline packing.
 *
 * Pipeline (see atlas.h): weld vertices by position -> edge adjacency -> charts -> split charts
 * that fill their rectangle poorly -> merge neighbouring charts by unfolding -> every chart
 * rotated to its minimal-area rectangle -> one uniform scale for all charts -> skyline packing
 * -> UVs -> conservative coverage (raster.c) for the utilisation.
 *
 * Charts: seeds in order of decreasing area; a chart grows breadth-first over shared edges
 * (welded positions, consistently oriented neighbours only) while a triangle's normal stays
 * within cone_deg of both the seed's and the chart's running area-weighted normal. The chart is
 * projected along that mean normal; triangles the drifting mean left more than cone_deg away
 * leave again, so every triangle keeps at least cos(cone_deg) of its area (uniform texel density
 * within that factor) and none folds over its neighbours. Surfaces that come back over
 * themselves (spirals, sheets touching at a vertex) can still overlap in projection; an exact
 * separating-axis test finds such pairs (ov_search: wedges at shared corners, a grid of the cells
 * each triangle touches), a triangle that overlaps an earlier one that stays leaves the chart,
 * and the evicted triangles are charted again among themselves until nothing overlaps.
 *
 * Then two passes on what the packer pays for, each chart's rectangle grown by the padding:
 * rings and frames are re-grown into compact parts (split_charts), and neighbouring charts are
 * unfolded into one another across a shared edge when their union's rectangle costs less than
 * the two apart and nothing overlaps (merge_charts): a small box's six faces become one cross.
 * Both keep every triangle's projection, so its texel density.
 *
 * Packing: each chart becomes a block of floor(L + 0.02) + 1 texels per side (L its extent in
 * texels) with the chart centred in it (at least 0.01 texel from the block's edges), so
 * conservative rasterization never leaves the block; blocks carry `padding` empty texels to
 * their right and bottom. Blocks are sorted by their shorter side and placed with the skyline
 * bottom-left heuristic plus a waste map (Jylanki 2010, "A Thousand Ways to Pack the Bin"): the
 * gaps a block leaves under the skyline are kept as free rectangles and filled first. With a fixed
 * atlas size the scale is bisected (in log space, to 0.1 %) to the largest one that packs; with
 * texels_per_unit the side is the smallest multiple of 4 that packs.
 */
#include "atlas.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CONE_DEG 20.0f
#define PI_D 3.14159265358979323846

void bk_atlas_opts_default(bk_atlas_opts *o)
{
    memset(o, 0, sizeof *o);
    o->size = 1024;
    o->padding = 2;
    o->cone_deg = DEFAULT_CONE_DEG;
}

void bk_atlas_free(bk_atlas *a)
{
    if (!a) return;
    free(a->uv);
    free(a->tri_chart);
    free(a->tri_page);
    memset(a, 0, sizeof *a);
}

static const char *scene_name(const bk_atlas_opts *o) { return o->scene_path && o->scene_path[0] ? o->scene_path : "scene"; }

/* ---------------------------------------------------------------------------------------------
 * Triangle geometry (double precision: normals of tiny or thin triangles stay meaningful). */

typedef struct tri_geom {
    double  *n;        /* 3 per triangle: unit geometric normal (0 for degenerate) */
    double  *area;     /* world area */
    uint8_t *degen;    /* 1: zero area (or too small to matter), gets no chart */
    uint32_t degen_count;
    double   diag;     /* scene bounding-box diagonal */
} tri_geom;

static void pos_of(const bk_scene *s, uint32_t t, int k, double p[3])
{
    const float *f = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + k];
    p[0] = f[0]; p[1] = f[1]; p[2] = f[2];
}

static int geom_init(const bk_scene *s, tri_geom *g)
{
    uint32_t T = s->tri_count;
    memset(g, 0, sizeof *g);
    g->n = malloc(sizeof(double) * 3 * (size_t)T + 1);
    g->area = malloc(sizeof(double) * (size_t)T + 1);
    g->degen = malloc((size_t)T + 1);
    if (!g->n || !g->area || !g->degen) return -1;
    double lo[3] = { DBL_MAX, DBL_MAX, DBL_MAX }, hi[3] = { -DBL_MAX, -DBL_MAX, -DBL_MAX };
    for (uint32_t v = 0; v < s->vertex_count; ++v)
        for (int k = 0; k < 3; ++k) {
            double x = s->positions[3 * (size_t)v + k];
            if (x < lo[k]) lo[k] = x;
            if (x > hi[k]) hi[k] = x;
        }
    double d2 = 0;
    if (s->vertex_count)
        for (int k = 0; k < 3; ++k) d2 += (hi[k] - lo[k]) * (hi[k] - lo[k]);
    g->diag = sqrt(d2);
    double tiny = 1e-14 * d2;  /* twice the area of a triangle 1e-7 of the scene across */
    for (uint32_t t = 0; t < T; ++t) {
        double p0[3], p1[3], p2[3], e1[3], e2[3], c[3];
        pos_of(s, t, 0, p0); pos_of(s, t, 1, p1); pos_of(s, t, 2, p2);
        double emax = 0;
        for (int k = 0; k < 3; ++k) { e1[k] = p1[k] - p0[k]; e2[k] = p2[k] - p0[k]; }
        double l1 = e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2];
        double l2 = e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2];
        double l3 = 0;
        for (int k = 0; k < 3; ++k) l3 += (p2[k] - p1[k]) * (p2[k] - p1[k]);
        emax = l1 > l2 ? l1 : l2;
        if (l3 > emax) emax = l3;
        c[0] = e1[1] * e2[2] - e1[2] * e2[1];
        c[1] = e1[2] * e2[0] - e1[0] * e2[2];
        c[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double len = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        /* Degenerate: collinear to 1e-7 of its longest edge, or below float precision of the scene. */
        int bad = !(len > 1e-7 * emax) || !(len > tiny) || !isfinite(len);
        g->degen[t] = (uint8_t)bad;
        g->degen_count += (uint32_t)bad;
        g->area[t] = bad ? 0.0 : 0.5 * len;
        for (int k = 0; k < 3; ++k) g->n[3 * (size_t)t + k] = bad ? 0.0 : c[k] / len;
    }
    return 0;
}

static void geom_free(tri_geom *g) { free(g->n); free(g->area); free(g->degen); }

/* ---------------------------------------------------------------------------------------------
 * Welding and adjacency. Many OBJs repeat a position once per (v, vt, vn) combination; charts
 * must grow across those seams, so vertices are welded by exact position (-0 == +0). */

static uint32_t hash_u32x3(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ ((uint64_t)b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= ((uint64_t)c + 0x165667B19E3779F9ull) * 0x94D049BB133111EBull;
    h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29;
    return (uint32_t)h;
}

static uint32_t fkey(float f) { if (f == 0.0f) f = 0.0f; return bk_float_bits(f); }

/* weld[v]: the smallest vertex index with v's exact position. */
static uint32_t *weld_vertices(const bk_scene *s)
{
    uint32_t V = s->vertex_count;
    uint32_t *weld = malloc(sizeof(uint32_t) * (size_t)V + 1);
    size_t cap = 16;
    while (cap < 2 * (size_t)V) cap <<= 1;
    uint32_t *table = malloc(sizeof(uint32_t) * cap);
    if (!weld || !table) { free(weld); free(table); return NULL; }
    memset(table, 0xFF, sizeof(uint32_t) * cap);
    for (uint32_t v = 0; v < V; ++v) {
        const float *p = s->positions + 3 * (size_t)v;
        uint32_t kx = fkey(p[0]), ky = fkey(p[1]), kz = fkey(p[2]);
        size_t h = hash_u32x3(kx, ky, kz) & (cap - 1);
        for (;;) {
            uint32_t w = table[h];
            if (w == BK_NONE) { table[h] = v; weld[v] = v; break; }
            const float *q = s->positions + 3 * (size_t)w;
            if (fkey(q[0]) == kx && fkey(q[1]) == ky && fkey(q[2]) == kz) { weld[v] = w; break; }
            h = (h + 1) & (cap - 1);
        }
    }
    free(table);
    return weld;
}

typedef struct edge_rec { uint64_t key; uint32_t tri; uint32_t fwd; } edge_rec;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge_rec *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->tri < b->tri ? -1 : (a->tri > b->tri);
}

/* LSD radix sort on the 64-bit key, 16 bits per pass, skipping passes where all digits agree. */
static void edge_sort(edge_rec *e, size_t n)
{
    edge_rec *tmp = malloc(sizeof *tmp * n + 1);
    size_t *cnt = malloc(sizeof(size_t) * 65537);
    if (!tmp || !cnt) { free(tmp); free(cnt); qsort(e, n, sizeof *e, edge_cmp); return; }
    uint64_t all_or = 0, all_and = ~0ull;
    for (size_t i = 0; i < n; ++i) { all_or |= e[i].key; all_and &= e[i].key; }
    edge_rec *src = e, *dst = tmp;
    for (int shift = 0; shift < 64; shift += 16) {
        if ((((all_or ^ all_and) >> shift) & 0xFFFF) == 0) continue;
        memset(cnt, 0, sizeof(size_t) * 65537);
        for (size_t i = 0; i < n; ++i) cnt[((src[i].key >> shift) & 0xFFFF) + 1]++;
        for (int d = 0; d < 65536; ++d) cnt[d + 1] += cnt[d];
        for (size_t i = 0; i < n; ++i) dst[cnt[(src[i].key >> shift) & 0xFFFF]++] = src[i];
        edge_rec *x = src; src = dst; dst = x;
    }
    if (src != e) memcpy(e, src, sizeof *e * n);
    free(tmp);
    free(cnt);
}

/* Neighbours across shared edges: adj[adj_start[t] .. adj_start[t+1]). Two triangles are
 * neighbours when they share an edge traversed in opposite directions (consistent winding);
 * triangles marked in skip (degenerate ones) have none. */
typedef struct adjacency { uint32_t *start, *adj; } adjacency;

static int adjacency_build(const bk_scene *s, const uint32_t *weld, const uint8_t *skip, adjacency *A)
{
    uint32_t T = s->tri_count;
    size_t n = 0;
    edge_rec *e = malloc(sizeof *e * 3 * (size_t)T + 1);
    A->start = calloc((size_t)T + 2, sizeof(uint32_t));
    A->adj = NULL;
    if (!e || !A->start) { free(e); return -1; }
    for (uint32_t t = 0; t < T; ++t) {
        if (skip[t]) continue;
        for (int k = 0; k < 3; ++k) {
            uint32_t a = weld[s->tri_v[3 * (size_t)t + k]], b = weld[s->tri_v[3 * (size_t)t + (k + 1) % 3]];
            if (a == b) continue;
            e[n].key = a < b ? ((uint64_t)a << 32 | b) : ((uint64_t)b << 32 | a);
            e[n].tri = t;
            e[n].fwd = a < b;
            n++;
        }
    }
    edge_sort(e, n);
    /* Two passes over the runs of equal keys: count, then fill. Non-manifold runs longer than 8
     * (fans of slivers) connect nothing: such edges make poor chart interiors anyway. */
    for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < n;) {
            size_t j = i + 1;
            while (j < n && e[j].key == e[i].key) j++;
            if (j - i >= 2 && j - i <= 8)
                for (size_t x = i; x < j; ++x)
                    for (size_t y = x + 1; y < j; ++y) {
                        if (e[x].fwd == e[y].fwd || e[x].tri == e[y].tri) continue;
                        if (pass == 0) { A->start[e[x].tri + 1]++; A->start[e[y].tri + 1]++; }
                        else { A->adj[A->start[e[x].tri]++] = e[y].tri; A->adj[A->start[e[y].tri]++] = e[x].tri; }
                    }
            i = j;
        }
        if (pass == 0) {
            for (uint32_t t = 0; t < T; ++t) A->start[t + 1] += A->start[t];
            A->adj = malloc(sizeof(uint32_t) * (size_t)A->start[T] + 1);
            if (!A->adj) { free(e); return -1; }
        } else {
            /* fill advanced start[t] to the old start[t+1]: shift back */
            for (uint32_t t = T; t > 0; --t) A->start[t] = A->start[t - 1];
            A->start[0] = 0;
        }
    }
    free(e);
    return 0;
}

static void adjacency_free(adjacency *A) { free(A->start); free(A->adj); }

/* ---------------------------------------------------------------------------------------------
 * 2D triangle overlap. Interiors overlap unless one of the six edge normals separates the two
 * triangles; `tol` (in the coordinates' units) lets shared edges and vertices touch.
 *
 * The overlapping pairs among many triangles (ov_search) must cost about what the triangles
 * themselves cost, whatever their shapes: a 100,000-vertex polygon fan-triangulated into slivers
 * that all meet at one apex made a grid of bounding boxes all-pairs in time and memory. Candidate
 * pairs come from two places and tri2_overlap confirms each, so the pairs found are the ones an
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

/* tri2_overlap's first test: does t have an interior at this tolerance? */
static int tri2_has_interior(const double *t, double tol)
{
    double ar = (t[2] - t[0]) * (t[5] - t[1]) - (t[3] - t[1]) * (t[4] - t[0]);
    double per = fabs(t[2] - t[0]) + fabs(t[3] - t[1]) + fabs(t[4] - t[0]) + fabs(t[5] - t[1]);
    return !(fabs(ar) <= tol * per);
}

static int tri2_overlap(const double *a, const double *b, double tol)
{
    const double *tr[2] = { a, b };
    if (!tri2_has_interior(a, tol) || !tri2_has_interior(b, tol)) return 0;  /* no interior to overlap */
    for (int w = 0; w < 2; ++w)
        for (int k = 0; k < 3; ++k) {
            const double *t = tr[w];
            int k1 = (k + 1) % 3;
            double ax = -(t[2 * k1 + 1] - t[2 * k + 1]), ay = t[2 * k1] - t[2 * k];
            double len = sqrt(ax * ax + ay * ay);
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

typedef struct pair_list { uint32_t *p; size_t n, cap; } pair_list;

static int pair_push(pair_list *L, uint32_t i, uint32_t j)
{
    if (L->n == L->cap) {
        size_t c = L->cap ? 2 * L->cap : 64;
        uint32_t *p = realloc(L->p, sizeof(uint32_t) * 2 * c);
        if (!p) return -1;
        L->p = p; L->cap = c;
    }
    L->p[2 * L->n] = i; L->p[2 * L->n + 1] = j; L->n++;
    return 0;
}

static double dmin(double a, double b) { return a < b ? a : b; }
static double dmax(double a, double b) { return a > b ? a : b; }
static void box_of_tri(const double *L, double *b)
{
    b[0] = dmin(L[0], dmin(L[2], L[4])); b[1] = dmin(L[1], dmin(L[3], L[5]));
    b[2] = dmax(L[0], dmax(L[2], L[4])); b[3] = dmax(L[1], dmax(L[3], L[5]));
}

static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

/* Sorts a[0..*n) and drops repeats. LSD radix (16 bits a pass, skipping passes where all digits
 * agree) for long lists, qsort for short ones (the counters would dominate). */
static int u64_sort_unique(uint64_t *a, size_t *n)
{
    size_t m = *n;
    if (m < 2) return 0;
    if (m < 4096) qsort(a, m, sizeof *a, u64_cmp);
    else {
        uint64_t *tmp = malloc(sizeof *tmp * m);
        size_t *cnt = malloc(sizeof(size_t) * 65537);
        if (!tmp || !cnt) { free(tmp); free(cnt); return -1; }
        uint64_t all_or = 0, all_and = ~0ull;
        for (size_t i = 0; i < m; ++i) { all_or |= a[i]; all_and &= a[i]; }
        uint64_t *src = a, *dst = tmp;
        for (int shift = 0; shift < 64; shift += 16) {
            if ((((all_or ^ all_and) >> shift) & 0xFFFF) == 0) continue;
            memset(cnt, 0, sizeof(size_t) * 65537);
            for (size_t i = 0; i < m; ++i) cnt[((src[i] >> shift) & 0xFFFF) + 1]++;
            for (int d = 0; d < 65536; ++d) cnt[d + 1] += cnt[d];
            for (size_t i = 0; i < m; ++i) dst[cnt[(src[i] >> shift) & 0xFFFF]++] = src[i];
            uint64_t *x = src; src = dst; dst = x;
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
    const double  *xy;       /* 6 per triangle: the corners */
    const uint8_t *group;    /* NULL: every pair; else only pairs from different groups */
    uint32_t       n;
    double         tol;
    uint64_t       work;     /* grid cells filled, corners counted, pairs and wedges looked at */
    double        *bb;       /* 4 per triangle: xmin, ymin, xmax, ymax */
    double        *dir;      /* 3 per triangle: longest edge as (cos 2a, sin 2a) * length, length */
    uint8_t       *live;     /* 1: finite, with an interior; the others overlap nothing */
    uint32_t      *vid;      /* 3 per triangle: the first corner (3 t + k) at the same point */
    uint32_t      *cnt;      /* 3 n counters by vid, kept at zero between uses */
    uint64_t      *cand;     /* candidate pairs, (i << 32) | j with i < j */
    size_t         ncand, ccap;
    int            first_only;  /* 1: test candidates at once and stop at the first overlap */
    int            found;       /* first_only: an overlapping pair was found */
} ov_search;

/* A candidate pair. Nonzero stops the search: out of memory, or (first_only) an overlap found. */
static int ov_push(ov_search *S, uint32_t i, uint32_t j)
{
    if (S->first_only) {
        S->work++;
        if (!tri2_overlap(S->xy + 6 * (size_t)(i < j ? i : j), S->xy + 6 * (size_t)(i < j ? j : i), S->tol)) return 0;
        S->found = 1;
        return 1;
    }
    if (S->ncand == S->ccap) {
        size_t c = S->ccap ? 2 * S->ccap : 256;
        uint64_t *p = realloc(S->cand, sizeof(uint64_t) * c);
        if (!p) return -1;
        S->cand = p; S->ccap = c;
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

static uint64_t dkey(double d) { uint64_t b; if (d == 0) d = 0; memcpy(&b, &d, 8); return b; }

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
        h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29;
        for (size_t s = h & (cap - 1);; s = (s + 1) & (cap - 1)) {
            uint32_t w = table[s];
            if (w == BK_NONE) { table[s] = (uint32_t)c; S->vid[c] = (uint32_t)c; break; }
            if (dkey(S->xy[2 * (size_t)w]) == kx && dkey(S->xy[2 * (size_t)w + 1]) == ky) { S->vid[c] = w; break; }
        }
    }
    free(table);
    return 0;
}

/* ---- pairs with a common corner: wedges ---------------------------------------------------- */

/* The wedge of a triangle at one corner: the directions of its two edges there as pseudo-angles
 * (below), from s counter-clockwise to e (less than a half turn apart). */
typedef struct ov_arc { double s, e; uint32_t t; } ov_arc;

/* A direction as a number in [0, 4) that grows with its angle (a quarter turn per unit, the
 * "diamond angle"): cheaper than atan2, the same for the same vector, and a half turn is 2. */
static double diamond_angle(double x, double y)
{
    if (y >= 0) return x >= 0 ? y / (x + y) : 1 - x / (y - x);
    return x < 0 ? 2 - y / (-x - y) : 3 + x / (x - y);
}

/* A margin on pseudo-angles, far above their rounding yet far below any angle a real mesh meets
 * at: an overlap the wedges miss by less is a sliver of depth below tol, which tri2_overlap
 * rejects anyway. */
#define OV_ARC_EPS 1e-12

static double ccw_from(double a, double b) { double d = b - a; return d < 0 ? d + 4.0 : d; }

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
    size_t nc = 3 * (size_t)S->n;
    uint32_t *start = calloc(nc + 2, sizeof(uint32_t)), *corner = malloc(sizeof(uint32_t) * (nc + 1));
    ov_arc *arc = malloc(sizeof(ov_arc) * (nc + 1));
    int rc = -1;
    if (!start || !corner || !arc) goto out;
    for (size_t c = 0; c < nc; ++c)
        if (S->live[c / 3]) start[S->vid[c] + 1]++;
    for (size_t v = 0; v < nc; ++v) start[v + 1] += start[v];
    for (size_t c = 0; c < nc; ++c)
        if (S->live[c / 3]) corner[start[S->vid[c]]++] = (uint32_t)c;
    for (size_t v = nc; v > 0; --v) start[v] = start[v - 1];  /* the fill advanced each start */
    start[0] = 0;
    for (size_t v = 0; v < nc; ++v) {
        uint32_t k = start[v + 1] - start[v];
        if (k < 2) continue;
        S->work += k;
        if (S->group) {  /* only pairs across the groups count: most corners have none */
            uint8_t g0 = S->group[corner[start[v]] / 3];
            uint32_t i = 1;
            while (i < k && S->group[corner[start[v] + i] / 3] == g0) i++;
            if (i == k) continue;
        }
        for (uint32_t i = 0; i < k; ++i) {
            uint32_t c = corner[start[v] + i], t = c / 3, kk = c % 3;
            const double *P = S->xy + 6 * (size_t)t;
            const double *o = P + 2 * kk, *p = P + 2 * ((kk + 1) % 3), *q = P + 2 * ((kk + 2) % 3);
            double ar = (P[2] - P[0]) * (P[5] - P[1]) - (P[3] - P[1]) * (P[4] - P[0]);
            double sp = diamond_angle(p[0] - o[0], p[1] - o[1]), sq = diamond_angle(q[0] - o[0], q[1] - o[1]);
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
    free(start); free(corner); free(arc);
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
        if (py >= y0 && py <= y1) { a = dmin(a, px); b = dmax(b, px); }
        if (py == qy) continue;
        for (int s = 0; s < 2; ++s) {
            double Y = s ? y1 : y0;
            if ((Y > py) == (Y > qy)) continue;
            double x = px + (Y - py) * (qx - px) / (qy - py);
            x = dmax(dmin(x, dmax(px, qx)), dmin(px, qx));  /* rounding never leaves the edge */
            a = dmin(a, x);
            b = dmax(b, x);
        }
    }
    if (!(a <= b)) return 0;
    *xa = a; *xb = b;
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
    double  lo[2], sx, sy, eps;
    int     gx, gy;
    size_t *cstart;          /* gx * gy + 1 */
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
    int few = (r1 - r0 + 1) * (bc1 - bc0 + 1) <= 4;
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

typedef struct ov_sw { double s, e; uint32_t t; } ov_sw;  /* a triangle's extent on the sweep axis */

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
        c2 += d[0]; s2 += d[1]; len += d[2];
        wx += b[2] - b[0]; wy += b[3] - b[1];
    }
    if (sqrt(c2 * c2 + s2 * s2) > 0.5 * len) {
        double a = 0.5 * atan2(s2, c2);
        *ax = -sin(a); *ay = cos(a);
    } else if (wx <= wy) { *ax = 1; *ay = 0; }
    else { *ax = 0; *ay = 1; }
}

static void ov_project(const ov_search *S, const uint32_t *L, uint32_t k, double ax, double ay, double eps, ov_sw *out)
{
    for (uint32_t i = 0; i < k; ++i) {
        const double *T = S->xy + 6 * (size_t)L[i];
        double p0 = ax * T[0] + ay * T[1], p1 = ax * T[2] + ay * T[3], p2 = ax * T[4] + ay * T[5];
        out[i].s = dmin(p0, dmin(p1, p2)) - eps;
        out[i].e = dmax(p0, dmax(p1, p2)) + eps;
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

#define OV_SMALL 16  /* cells up to this many triangles test all their pairs */

/* The pairs of one cell's triangles L[0..k) (L is overwritten). While one corner is shared by at
 * least a quarter of them, those are split off and paired only with the rest. */
static int ov_cell(ov_search *S, uint32_t *L, uint32_t k, double eps, uint32_t *H, uint32_t *R, ov_sw *sw1, ov_sw *sw2)
{
    while (k > OV_SMALL) {
        uint32_t hub = BK_NONE, best = 0;
        for (uint32_t i = 0; i < k; ++i)
            for (int c = 0; c < 3; ++c) {
                uint32_t v = S->vid[3 * (size_t)L[i] + c];
                if (++S->cnt[v] > best) { best = S->cnt[v]; hub = v; }
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
    double lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX }, per = 0, area = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (!S->live[i]) continue;
        const double *b = S->bb + 4 * (size_t)i, *t = S->xy + 6 * (size_t)i;
        for (int k = 0; k < 2; ++k) { lo[k] = dmin(lo[k], b[k]); hi[k] = dmax(hi[k], b[2 + k]); }
        per += (b[2] - b[0]) + (b[3] - b[1]);
        area += 0.5 * fabs((t[2] - t[0]) * (t[5] - t[1]) - (t[3] - t[1]) * (t[4] - t[0]));
        nl++;
    }
    if (nl < 2) return 0;
    /* A triangle touches about area / cell^2 + (width + height) / cell + 1 cells: the cell is
     * the one with about one triangle per cell (as for even meshes), grown until the summed
     * perimeters and areas add at most 4 and 2 cells per triangle. */
    double ex = hi[0] - lo[0], ey = hi[1] - lo[1];
    double cell = dmax(sqrt(dmax(ex * ey, 1e-300) / nl), dmax(per / (4.0 * nl), sqrt(area / (2.0 * nl))));
    if (!(cell > 0) || !isfinite(cell)) cell = dmax(ex, ey) + 1.0;
    ov_grid G;
    G.lo[0] = lo[0]; G.lo[1] = lo[1];
    G.gx = (int)dmin(dmax(ceil(ex / cell), 1.0), 2048.0);
    G.gy = (int)dmin(dmax(ceil(ey / cell), 1.0), 2048.0);
    G.sx = G.gx / dmax(ex, 1e-300);
    G.sy = G.gy / dmax(ey, 1e-300);
    /* far above the rounding of coordinates this large, far below anything a cell holds */
    G.eps = 1e-9 * (ex + ey + fabs(lo[0]) + fabs(lo[1]));
    size_t NG = (size_t)G.gx * G.gy;
    G.cstart = calloc(NG + 1, sizeof(size_t));
    G.items = NULL;
    uint32_t *L = NULL, *H = NULL, *R = NULL;
    ov_sw *sw1 = NULL, *sw2 = NULL;
    int rc = -1;
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
    free(G.cstart); free(G.items); free(L); free(H); free(R); free(sw1); free(sw2);
    return rc;
}

static void ov_free(ov_search *S)
{
    free(S->bb); free(S->dir); free(S->live); free(S->vid); free(S->cnt); free(S->cand);
    memset(S, 0, sizeof *S);
}

/* Candidate pairs of xy[0..n) into S->cand[0..S->ncand), sorted, each once: a superset of the
 * pairs tri2_overlap accepts among those whose boxes touch. With first_only, candidates are
 * tested as they come (repeats included) and S->found says whether one overlapped. 0, or -1 out
 * of memory. */
static int ov_run(ov_search *S, const double *xy, uint32_t n, const uint8_t *group, double tol, int first_only)
{
    memset(S, 0, sizeof *S);
    S->xy = xy; S->n = n; S->group = group; S->tol = tol; S->first_only = first_only;
    S->bb = malloc(sizeof(double) * 4 * (size_t)n + 1);
    S->dir = malloc(sizeof(double) * 3 * (size_t)n + 1);
    S->live = malloc((size_t)n + 1);
    S->vid = malloc(sizeof(uint32_t) * 3 * (size_t)n + 1);
    S->cnt = calloc(3 * (size_t)n + 1, sizeof(uint32_t));
    if (!S->bb || !S->dir || !S->live || !S->vid || !S->cnt) return -1;
    for (uint32_t i = 0; i < n; ++i) {
        const double *t = xy + 6 * (size_t)i;
        int fin = 1;
        for (int k = 0; k < 6; ++k) fin &= isfinite(t[k]) != 0;
        S->live[i] = (uint8_t)(fin && tri2_has_interior(t, tol));
        box_of_tri(t, S->bb + 4 * (size_t)i);
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
static int find_overlaps(const double *xy, uint32_t n, double tol, pair_list *out, uint64_t *work)
{
    if (n < 2) return 0;
    if (n <= 24) {
        *work += (uint64_t)n * (n - 1) / 2;
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t j = i + 1; j < n; ++j)
                if (tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j)) return -1;
        return 0;
    }
    if (n <= 64) {  /* below the search's own setup cost; boxes first, as the search does */
        *work += (uint64_t)n * (n - 1) / 2;
        for (uint32_t i = 0; i < n; ++i) {
            double bi[4], bj[4];
            box_of_tri(xy + 6 * (size_t)i, bi);
            for (uint32_t j = i + 1; j < n; ++j) {
                box_of_tri(xy + 6 * (size_t)j, bj);
                if (bi[0] > bj[2] || bj[0] > bi[2] || bi[1] > bj[3] || bj[1] > bi[3]) continue;
                if (tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j)) return -1;
            }
        }
        return 0;
    }
    ov_search S;
    int rc = ov_run(&S, xy, n, NULL, tol, 0);
    for (size_t c = 0; c < S.ncand && !rc; ++c) {
        uint32_t i = (uint32_t)(S.cand[c] >> 32), j = (uint32_t)S.cand[c];
        if (tri2_overlap(xy + 6 * (size_t)i, xy + 6 * (size_t)j, tol) && pair_push(out, i, j)) rc = -1;
    }
    *work += S.work;
    ov_free(&S);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Charts. */

typedef struct chart {
    uint32_t first, count;   /* triangles chart_tris[first .. first+count) in growth order */
    double   n[3];           /* projection axis (unit) */
    double   w, h;           /* extent of the rotated projection, world units, w >= h */
} chart;

typedef struct charting {
    uint32_t *tri_chart;     /* per triangle, BK_NONE for degenerate */
    uint32_t *chart_tris;
    chart    *charts;
    uint32_t  count, cap;
    double   *loc;           /* 6 per triangle: corner positions in the chart's rotated frame */
} charting;

static int chart_push(charting *C, chart c)
{
    if (C->count == C->cap) {
        uint32_t cap = C->cap ? 2 * C->cap : 1024;
        chart *p = realloc(C->charts, sizeof(chart) * cap);
        if (!p) return -1;
        C->charts = p; C->cap = cap;
    }
    C->charts[C->count++] = c;
    return 0;
}

static const double *tri_n(const tri_geom *g, uint32_t t) { return g->n + 3 * (size_t)t; }
static double dot3d(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

typedef struct hpt { double x, y; } hpt;
static int hpt_cmp(const void *pa, const void *pb)
{
    const hpt *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->y > b->y) - (a->y < b->y);
}
static double hcross(hpt o, hpt a, hpt b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

/* Convex hull (Andrew's monotone chain) of p[0..n) (sorted in place) into h, which needs room
 * for 2 n points; returns the hull size. */
static int convex_hull(hpt *p, int n, hpt *h)
{
    if (n < 3) { for (int i = 0; i < n; ++i) h[i] = p[i]; return n; }
    if (n <= 48) {  /* merging two small hulls: insertion sort beats qsort's indirect calls */
        for (int i = 1; i < n; ++i) {
            hpt x = p[i];
            int j = i - 1;
            while (j >= 0 && (p[j].x > x.x || (p[j].x == x.x && p[j].y > x.y))) { p[j + 1] = p[j]; j--; }
            p[j + 1] = x;
        }
    } else qsort(p, (size_t)n, sizeof *p, hpt_cmp);
    int k = 0;
    for (int i = 0; i < n; ++i) {
        while (k >= 2 && hcross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    for (int i = n - 2, t = k + 1; i >= 0; --i) {
        while (k >= t && hcross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    return k - 1;
}

/* The rotation (cs, sn) that turns a convex polygon (counter-clockwise, no collinear points, as
 * convex_hull makes it) into its minimal-area bounding rectangle: that rectangle has a side along
 * a hull edge (Freeman & Shapira 1975); rotating calipers (Toussaint 1983) find the extreme points
 * for every edge in O(hn) altogether. */
static double hdot(hpt a, double ex, double ey) { return a.x * ex + a.y * ey; }

static void rect_from_hull(const hpt *H, int hn, double *out_cs, double *out_sn, double *out_w, double *out_h)
{
    *out_cs = 1; *out_sn = 0; *out_w = 0; *out_h = 0;
    if (hn <= 0) return;
    if (hn < 3) {
        double dx = H[hn - 1].x - H[0].x, dy = H[hn - 1].y - H[0].y, len = sqrt(dx * dx + dy * dy);
        if (len > 0) { *out_cs = dx / len; *out_sn = dy / len; *out_w = len; }
        return;
    }
    double best = DBL_MAX;
    int r = 0, t = 0, l = 0;
    for (int i = 0; i < hn; ++i) {
        hpt a = H[i], b = H[(i + 1) % hn];
        double dx = b.x - a.x, dy = b.y - a.y, len = sqrt(dx * dx + dy * dy);
        if (!(len > 0)) continue;
        double ex = dx / len, ey = dy / len, nx = -ey, ny = ex;
        if (i == 0) {
            for (int j = 1; j < hn; ++j) {
                if (hdot(H[j], ex, ey) > hdot(H[r], ex, ey)) r = j;
                if (hdot(H[j], nx, ny) > hdot(H[t], nx, ny)) t = j;
                if (hdot(H[j], ex, ey) < hdot(H[l], ex, ey)) l = j;
            }
        } else {
            for (int k = 0; k < hn && hdot(H[(r + 1) % hn], ex, ey) >= hdot(H[r], ex, ey); ++k) r = (r + 1) % hn;
            for (int k = 0; k < hn && hdot(H[(t + 1) % hn], nx, ny) >= hdot(H[t], nx, ny); ++k) t = (t + 1) % hn;
            for (int k = 0; k < hn && hdot(H[(l + 1) % hn], ex, ey) <= hdot(H[l], ex, ey); ++k) l = (l + 1) % hn;
        }
        double w = hdot(H[r], ex, ey) - hdot(H[l], ex, ey), h = hdot(H[t], nx, ny) - hdot(a, nx, ny);
        if (w * h < best) { best = w * h; *out_cs = ex; *out_sn = ey; *out_w = w; *out_h = h; }
    }
}

/* Rotates the corners of tris[0..n) (their loc) and the hull H by (cs, sn), shifts them to the
 * origin and turns them landscape (w >= h). Rotations only, never a mirror: triangles keep
 * their counter-clockwise orientation. */
static void apply_rect(double *loc, const uint32_t *tris, uint32_t n, hpt *H, int hn, double cs, double sn,
                       double *out_w, double *out_h)
{
    double x0 = DBL_MAX, x1 = -DBL_MAX, y0 = DBL_MAX, y1 = -DBL_MAX;
    for (int j = 0; j < hn; ++j) {
        double x = H[j].x * cs + H[j].y * sn, y = -H[j].x * sn + H[j].y * cs;
        H[j].x = x; H[j].y = y;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
    }
    int swap = (y1 - y0) > (x1 - x0);
    double hh = y1 - y0;
    for (uint32_t i = 0; i < n; ++i) {
        double *L = loc + 6 * (size_t)tris[i];
        for (int k = 0; k < 3; ++k) {
            double x = L[2 * k] * cs + L[2 * k + 1] * sn - x0, y = -L[2 * k] * sn + L[2 * k + 1] * cs - y0;
            /* (x, y) -> (h - y, x) is a rotation, not a mirror */
            if (swap) { L[2 * k] = hh - y; L[2 * k + 1] = x; }
            else { L[2 * k] = x; L[2 * k + 1] = y; }
        }
    }
    for (int j = 0; j < hn; ++j) {
        double x = H[j].x - x0, y = H[j].y - y0;
        if (swap) { H[j].x = hh - y; H[j].y = x; }
        else { H[j].x = x; H[j].y = y; }
    }
    *out_w = swap ? y1 - y0 : x1 - x0;
    *out_h = swap ? x1 - x0 : y1 - y0;
}

/* fit_rect: rect_from_hull + apply_rect for a set of triangles. */
static int fit_rect(double *loc, const uint32_t *tris, uint32_t n, double *out_w, double *out_h, hpt **pts, size_t *pts_cap)
{
    size_t np = 3 * (size_t)n;
    if (np * 3 + 1 > *pts_cap) {  /* points, then up to 2 np hull slots (monotone chain) */
        hpt *p = realloc(*pts, sizeof(hpt) * (np * 3 + 1));
        if (!p) return -1;
        *pts = p; *pts_cap = np * 3 + 1;
    }
    hpt *P = *pts, *H = *pts + np;
    for (uint32_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            P[3 * i + k].x = loc[6 * (size_t)tris[i] + 2 * k];
            P[3 * i + k].y = loc[6 * (size_t)tris[i] + 2 * k + 1];
        }
    int hn = convex_hull(P, (int)np, H);
    double cs, sn, w, h;
    rect_from_hull(H, hn, &cs, &sn, &w, &h);
    apply_rect(loc, tris, n, H, hn, cs, sn, out_w, out_h);
    return 0;
}

/* Projects chart c along its axis into its plane, then fits its rectangle. */
static int chart_project(const bk_scene *s, charting *C, uint32_t ci, hpt **pts, size_t *pts_cap)
{
    chart *c = &C->charts[ci];
    const double *n = c->n;
    double t1[3], t2[3];
    /* axis least aligned with n, crossed with n; (t1, t2, n) is right-handed */
    double ax = fabs(n[0]), ay = fabs(n[1]), az = fabs(n[2]);
    double e[3] = { 0, 0, 0 };
    e[(ax <= ay && ax <= az) ? 0 : (ay <= az ? 1 : 2)] = 1.0;
    t1[0] = n[1] * e[2] - n[2] * e[1]; t1[1] = n[2] * e[0] - n[0] * e[2]; t1[2] = n[0] * e[1] - n[1] * e[0];
    double l = sqrt(dot3d(t1, t1));
    for (int k = 0; k < 3; ++k) t1[k] /= l;
    t2[0] = n[1] * t1[2] - n[2] * t1[1]; t2[1] = n[2] * t1[0] - n[0] * t1[2]; t2[2] = n[0] * t1[1] - n[1] * t1[0];
    double o[3];
    pos_of(s, C->chart_tris[c->first], 0, o);
    for (uint32_t i = 0; i < c->count; ++i) {
        uint32_t t = C->chart_tris[c->first + i];
        for (int k = 0; k < 3; ++k) {
            double p[3];
            pos_of(s, t, k, p);
            for (int d = 0; d < 3; ++d) p[d] -= o[d];
            C->loc[6 * (size_t)t + 2 * k] = dot3d(p, t1);
            C->loc[6 * (size_t)t + 2 * k + 1] = dot3d(p, t2);
        }
    }
    return fit_rect(C->loc, C->chart_tris + c->first, c->count, &c->w, &c->h, pts, pts_cap);
}

/* Sorting by a 64-bit key without a global context (C11 qsort has none): (key, index) pairs. */
typedef struct key_idx { uint64_t key; uint32_t idx; } key_idx;
static int key_idx_cmp(const void *pa, const void *pb)
{
    const key_idx *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Triangles by decreasing area (ties by index): positive doubles order like their bit patterns. */
static void sort_by_area_desc(uint32_t *t, uint32_t n, const double *area, key_idx *tmp)
{
    for (uint32_t i = 0; i < n; ++i) {
        double a = area[t[i]];
        uint64_t bits;
        memcpy(&bits, &a, 8);
        tmp[i].key = ~bits;
        tmp[i].idx = t[i];
    }
    qsort(tmp, n, sizeof *tmp, key_idx_cmp);
    for (uint32_t i = 0; i < n; ++i) t[i] = tmp[i].idx;
}

/* Region growing over the seeds in `seeds` (sorted by decreasing area); appends charts. */
static int grow_charts(const tri_geom *g, const adjacency *A, charting *C, const uint32_t *seeds, uint32_t nseeds,
                       double cos_cone, uint32_t *queue, uint32_t *ntris)
{
    for (uint32_t si = 0; si < nseeds; ++si) {
        uint32_t seed = seeds[si];
        if (C->tri_chart[seed] != BK_NONE) continue;
        chart c;
        memset(&c, 0, sizeof c);
        c.first = *ntris;
        uint32_t ci = C->count;
        const double *ns = tri_n(g, seed);
        double sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] };
        double avg[3] = { ns[0], ns[1], ns[2] };
        uint32_t qh = 0, qt = 0;
        queue[qt++] = seed;
        C->tri_chart[seed] = ci;
        while (qh < qt) {
            uint32_t t = queue[qh++];
            C->chart_tris[(*ntris)++] = t;
            for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                uint32_t u = A->adj[p];
                if (C->tri_chart[u] != BK_NONE) continue;
                const double *nu = tri_n(g, u);
                if (dot3d(nu, ns) < cos_cone || dot3d(nu, avg) < cos_cone) continue;
                C->tri_chart[u] = ci;
                queue[qt++] = u;
                for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
                double l = sqrt(dot3d(sum, sum));
                if (l > 0) for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
            }
        }
        c.count = *ntris - c.first;
        for (int k = 0; k < 3; ++k) c.n[k] = avg[k];
        if (chart_push(C, c)) return -1;
    }
    return 0;
}

static int make_charts(const bk_scene *s, const tri_geom *g, const adjacency *A, double cone_deg, charting *C,
                       uint64_t *work)
{
    uint32_t T = s->tri_count;
    double cos_cone = cos(cone_deg * PI_D / 180.0);
    memset(C, 0, sizeof *C);
    C->tri_chart = malloc(sizeof(uint32_t) * (size_t)T + 1);
    C->chart_tris = malloc(sizeof(uint32_t) * (size_t)T + 1);
    C->loc = calloc(6 * (size_t)T + 1, sizeof(double));
    uint32_t *seeds = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *ctmp = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint8_t *evicted = calloc((size_t)T + 1, 1);
    key_idx *kt = malloc(sizeof(key_idx) * (size_t)T + 1);
    double *xy = NULL;
    size_t xy_cap = 0;
    hpt *pts = NULL;
    size_t pts_cap = 0;
    pair_list pairs = { 0 };
    int rc = -1;
    if (!C->tri_chart || !C->chart_tris || !C->loc || !seeds || !queue || !ctmp || !evicted || !kt) goto done;
    uint32_t nseeds = 0, ntris = 0;
    for (uint32_t t = 0; t < T; ++t) {
        C->tri_chart[t] = BK_NONE;
        if (!g->degen[t]) seeds[nseeds++] = t;
    }
    sort_by_area_desc(seeds, nseeds, g->area, kt);
    uint32_t first_new = 0;
    for (int round = 0; nseeds; ++round) {
        if (grow_charts(g, A, C, seeds, nseeds, cos_cone, queue, &ntris)) goto done;
        nseeds = 0;
        /* project the new charts and evict the later triangle of every overlapping pair */
        for (uint32_t ci = first_new; ci < C->count; ++ci) {
            if (chart_project(s, C, ci, &pts, &pts_cap)) goto done;
            chart *c = &C->charts[ci];
            if (c->count < 2) continue;
            /* the mean normal drifted while the chart grew: triangles now tilted more than the
             * cone from it leave too (never the seed, so every round makes progress) */
            uint32_t nev = 0;
            for (uint32_t i = 1; i < c->count; ++i) {
                uint32_t t = C->chart_tris[c->first + i];
                if (dot3d(tri_n(g, t), c->n) < cos_cone) { evicted[t] = 1; nev++; }
            }
            if (6 * (size_t)c->count > xy_cap) {
                xy_cap = 6 * (size_t)c->count * 2;
                double *p = realloc(xy, sizeof(double) * xy_cap);
                if (!p) goto done;
                xy = p;
            }
            for (uint32_t i = 0; i < c->count; ++i)
                memcpy(xy + 6 * (size_t)i, C->loc + 6 * (size_t)C->chart_tris[c->first + i], 6 * sizeof(double));
            pairs.n = 0;
            if (find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pairs, work)) goto done;
            if (!pairs.n && !nev) continue;
            /* pairs come sorted by (i, j): when i's pairs are reached, whether i stays is settled,
             * so j leaves iff it overlaps an earlier triangle that stays, whatever found the pairs */
            for (size_t p = 0; p < pairs.n; ++p) {
                uint32_t ti = C->chart_tris[c->first + pairs.p[2 * p]], tj = C->chart_tris[c->first + pairs.p[2 * p + 1]];
                if (evicted[ti] || evicted[tj]) continue;
                evicted[tj] = 1;  /* j > i: added later */
                nev++;
            }
            /* compact the chart's list; evicted triangles wait for the next round */
            uint32_t keep = 0;
            for (uint32_t i = 0; i < c->count; ++i) {
                uint32_t t = C->chart_tris[c->first + i];
                if (evicted[t]) { evicted[t] = 0; C->tri_chart[t] = BK_NONE; seeds[nseeds++] = t; }
                else C->chart_tris[c->first + keep++] = t;
            }
            c->count = keep;
            if (chart_project(s, C, ci, &pts, &pts_cap)) goto done;
        }
        /* the compaction left holes in chart_tris; close them so new charts append at the end */
        uint32_t w = 0;
        for (uint32_t ci = 0; ci < C->count; ++ci) {
            chart *c = &C->charts[ci];
            memmove(ctmp + w, C->chart_tris + c->first, sizeof(uint32_t) * c->count);
            c->first = w;
            w += c->count;
        }
        memcpy(C->chart_tris, ctmp, sizeof(uint32_t) * w);
        ntris = w;
        first_new = C->count;
        sort_by_area_desc(seeds, nseeds, g->area, kt);
        BK_CHECK(round < 10000);
    }
    rc = 0;
done:
    free(seeds); free(queue); free(ctmp); free(evicted); free(kt); free(xy); free(pts); free(pairs.p);
    return rc;
}


/* Re-growing charts that fill their rectangle poorly (rings, frames, L and U shapes: the
 * rectangle is what the packer pays for). The chart's triangles grow again, breadth-first from
 * the largest, and a triangle joins only while the part's triangles fill at least FILL_MIN of its
 * bounding box in the chart's frame (or the box does not grow): a frame falls apart into its four
 * straight strips, a ring into arcs. The parts replace the chart when their rectangles, each grown
 * by the padding (pad_w: world units at the expected scale), cost less than the chart's. */
#define FILL_MIN 0.5

static double tri2_area(const double *L)
{
    return 0.5 * fabs((L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]));
}
static double box_area(const double *b) { return (b[2] - b[0]) * (b[3] - b[1]); }

static int split_charts(const bk_scene *s, const adjacency *A, charting *C, double pad_w, uint32_t *queue, key_idx *kt,
                        uint32_t *part)
{
    hpt *pts = NULL;
    size_t pts_cap = 0;
    uint32_t n0 = C->count;
    for (uint32_t ci = 0; ci < n0; ++ci) {
        chart c = C->charts[ci];
        if (c.count < 3) continue;
        double area = 0;
        for (uint32_t i = 0; i < c.count; ++i) area += tri2_area(C->loc + 6 * (size_t)C->chart_tris[c.first + i]);
        if (area >= FILL_MIN * c.w * c.h) continue;
        /* seeds by decreasing projected area */
        for (uint32_t i = 0; i < c.count; ++i) {
            uint32_t t = C->chart_tris[c.first + i];
            double a = tri2_area(C->loc + 6 * (size_t)t);
            uint64_t bits;
            memcpy(&bits, &a, 8);
            kt[i].key = ~bits; kt[i].idx = t;
            part[t] = BK_NONE;
        }
        qsort(kt, c.count, sizeof(key_idx), key_idx_cmp);
        uint32_t nparts = 0, w = 0;
        double cost = 0;
        for (uint32_t si = 0; si < c.count; ++si) {
            uint32_t seed = kt[si].idx;
            if (part[seed] != BK_NONE) continue;
            double box[4], pa = tri2_area(C->loc + 6 * (size_t)seed);
            box_of_tri(C->loc + 6 * (size_t)seed, box);
            uint32_t qh = w, qt = w;
            queue[qt++] = seed;
            part[seed] = nparts;
            while (qh < qt) {
                uint32_t t = queue[qh++];
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                    uint32_t u = A->adj[p];
                    if (C->tri_chart[u] != ci || part[u] != BK_NONE) continue;
                    double bu[4], nb[4], au = tri2_area(C->loc + 6 * (size_t)u);
                    box_of_tri(C->loc + 6 * (size_t)u, bu);
                    nb[0] = fmin(box[0], bu[0]); nb[1] = fmin(box[1], bu[1]);
                    nb[2] = fmax(box[2], bu[2]); nb[3] = fmax(box[3], bu[3]);
                    double ba = box_area(box), nba = box_area(nb);
                    if (!(nba <= ba * 1.000001) && (pa + au) < FILL_MIN * nba) continue;
                    memcpy(box, nb, sizeof box);
                    pa += au;
                    part[u] = nparts;
                    queue[qt++] = u;
                }
            }
            /* a cheap bound on the part's rectangle: its box in the chart's frame */
            cost += (box[2] - box[0] + pad_w) * (box[3] - box[1] + pad_w);
            w = qt;
            nparts++;
        }
        if (nparts < 2 || cost >= (c.w + pad_w) * (c.h + pad_w)) continue;
        /* queue[0 .. count) holds the triangles part by part: they become the new lists */
        memcpy(C->chart_tris + c.first, queue, sizeof(uint32_t) * c.count);
        uint32_t start = 0;
        for (uint32_t pi = 0; pi < nparts; ++pi) {
            uint32_t end = start;
            while (end < c.count && part[queue[end]] == pi) end++;
            chart nc = c;
            nc.first = c.first + start;
            nc.count = end - start;
            uint32_t idx = ci;
            if (pi == 0) C->charts[ci] = nc;
            else {
                idx = C->count;
                if (chart_push(C, nc)) { free(pts); return -1; }
                for (uint32_t i = start; i < end; ++i) C->tri_chart[queue[i]] = idx;
            }
            if (chart_project(s, C, idx, &pts, &pts_cap)) { free(pts); return -1; }
            start = end;
        }
    }
    free(pts);
    return 0;
}

/* Merging neighbouring charts by unfolding. A chart's layout is rotated about the edge it shares
 * with a neighbour into the neighbour's plane, like a box's faces laid out as a cross: every
 * triangle keeps its own projection (so its texel density), the shared edge stays continuous.
 * Worth it where the padding dominates (thousands of small boxes' faces in a 1024 atlas) or where
 * strips line up end to end. A merge is kept when the shared edge has the same length in both
 * layouts, nothing overlaps, and the union's rectangle grown by the padding costs less than the
 * two apart. Smallest charts first; each keeps merging while that pays. */
/* Does any triangle of xa[0..na) overlap one of xb[0..nb)? Only the triangles of a whose boxes
 * touch b's bounding box are looked at, and of b only those touching the box of these (a pair
 * with touching boxes is never left out), all in one overlap search whose groups keep a's from
 * pairing with a's; 1 yes, 0 no, -1 out of memory. */
typedef struct overlap_scratch { uint32_t *sel, *selb; double *box, *xy; uint8_t *grp; size_t cap; } overlap_scratch;

static int sets_overlap(const double *xa, uint32_t na, const double *xb, uint32_t nb, double tol, overlap_scratch *o,
                        uint64_t *work)
{
    if ((size_t)na + nb > o->cap) {
        size_t cap = 2 * ((size_t)na + nb);
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
    double bb[4] = { DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX }, t[4];
    double *boxb = o->box;
    for (uint32_t j = 0; j < nb; ++j) {
        double *q = boxb + 4 * (size_t)j;
        box_of_tri(xb + 6 * (size_t)j, q);
        bb[0] = dmin(bb[0], q[0]); bb[1] = dmin(bb[1], q[1]); bb[2] = dmax(bb[2], q[2]); bb[3] = dmax(bb[3], q[3]);
    }
    uint32_t ns = 0, nbs = 0;
    double ba[4] = { DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX };
    for (uint32_t i = 0; i < na; ++i) {
        box_of_tri(xa + 6 * (size_t)i, t);
        if (t[0] <= bb[2] && t[2] >= bb[0] && t[1] <= bb[3] && t[3] >= bb[1]) {
            o->sel[ns++] = i;
            ba[0] = dmin(ba[0], t[0]); ba[1] = dmin(ba[1], t[1]); ba[2] = dmax(ba[2], t[2]); ba[3] = dmax(ba[3], t[3]);
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
            box_of_tri(ta, t);
            for (uint32_t jj = 0; jj < nbs; ++jj) {
                uint32_t j = o->selb[jj];
                const double *q = boxb + 4 * (size_t)j;
                if (t[0] > q[2] || q[0] > t[2] || t[1] > q[3] || q[1] > t[3]) continue;
                if (tri2_overlap(ta, xb + 6 * (size_t)j, tol)) return 1;
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
    int rc = ov_run(&S, o->xy, ns + nbs, o->grp, tol, 1) ? -1 : S.found;
    *work += S.work;
    ov_free(&S);
    return rc;
}

typedef struct hull_set { hpt **p; int *n; } hull_set;

/* The convex hull of a chart's corners (linked list from head) into hs slot ci. */
static int hull_of_chart(const charting *C, const uint32_t *next, uint32_t head, uint32_t count, hull_set *hs, uint32_t ci,
                         hpt **tmp, size_t *tmp_cap)
{
    size_t np = 3 * (size_t)count;
    if (np > *tmp_cap) {
        hpt *p = realloc(*tmp, sizeof(hpt) * np);
        if (!p) return -1;
        *tmp = p; *tmp_cap = np;
    }
    size_t k = 0;
    for (uint32_t x = head; x != BK_NONE; x = next[x])
        for (int j = 0; j < 3; ++j) { (*tmp)[k].x = C->loc[6 * (size_t)x + 2 * j]; (*tmp)[k].y = C->loc[6 * (size_t)x + 2 * j + 1]; k++; }
    hpt *h = realloc(hs->p[ci], sizeof(hpt) * (2 * k + 1));
    if (!h) return -1;
    hs->p[ci] = h;
    hs->n[ci] = convex_hull(*tmp, (int)k, h);
    return 0;
}

typedef struct merge_cand { double gain; uint32_t b, t, u; double cs, sn, max, may, mbx, mby; } merge_cand;
static int cand_cmp(const void *pa, const void *pb)
{
    const merge_cand *a = pa, *b = pb;
    if (a->gain != b->gain) return a->gain > b->gain ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

static int merge_charts(const bk_scene *s, const uint32_t *weld, const adjacency *A, charting *C, double pad_w,
                        uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count;
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    merge_cand *cand = malloc(sizeof(merge_cand) * ((size_t)n + 1));
    uint32_t *ids = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *iota = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    double *tl = malloc(sizeof(double) * 6 * ((size_t)T + 1));
    uint8_t *dead = calloc((size_t)n + 1, 1);
    key_idx *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    hull_set hs = { calloc((size_t)n + 1, sizeof(hpt *)), calloc((size_t)n + 1, sizeof(int)) };
    hpt *pts = NULL, *hp = NULL;
    size_t pts_cap = 0, hp_cap = 0;
    overlap_scratch ovs = { 0 };
    int rc = -1;
    if (!next || !head || !tail || !stamp || !cand || !ids || !iota || !tl || !dead || !order || !hs.p || !hs.n) goto done;
    for (uint32_t t = 0; t < T; ++t) iota[t] = t;
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        head[ci] = c->count ? C->chart_tris[c->first] : BK_NONE;
        for (uint32_t i = 0; i < c->count; ++i)
            next[C->chart_tris[c->first + i]] = i + 1 < c->count ? C->chart_tris[c->first + i + 1] : BK_NONE;
        tail[ci] = c->count ? C->chart_tris[c->first + c->count - 1] : BK_NONE;
        stamp[ci] = BK_NONE;
        if (hull_of_chart(C, next, head[ci], c->count, &hs, ci, &pts, &pts_cap)) goto done;
        double cost = (c->w + pad_w) * (c->h + pad_w);
        uint64_t bits;
        memcpy(&bits, &cost, 8);
        order[ci].key = bits;
        order[ci].idx = ci;
    }
    qsort(order, n, sizeof(key_idx), key_idx_cmp);
    uint32_t visit = 0;
    for (uint32_t oi = 0; oi < n; ++oi) {
        uint32_t ci = order[oi].idx;
        for (int round = 0; round < 16 && !dead[ci]; ++round) {
            chart *c = &C->charts[ci];
            double cost_c = (c->w + pad_w) * (c->h + pad_w);
            /* neighbouring charts, each with one shared edge (t in c, u in the neighbour), and
             * the gain of each merge from the two convex hulls alone */
            uint32_t nc = 0;
            visit++;
            for (uint32_t t = head[ci]; t != BK_NONE; t = next[t])
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                    uint32_t u = A->adj[p], b = C->tri_chart[u];
                    if (b == ci || dead[b] || stamp[b] == visit) continue;
                    /* the shared edge: corners kt -> kt+1 of t are corners ku+1 -> ku of u */
                    int kt = -1, ku = -1;
                    for (int x = 0; x < 3 && kt < 0; ++x)
                        for (int y = 0; y < 3; ++y)
                            if (weld[s->tri_v[3 * (size_t)t + x]] == weld[s->tri_v[3 * (size_t)u + (y + 1) % 3]] &&
                                weld[s->tri_v[3 * (size_t)t + (x + 1) % 3]] == weld[s->tri_v[3 * (size_t)u + y]]) { kt = x; ku = y; break; }
                    if (kt < 0) continue;
                    const double *Lt = C->loc + 6 * (size_t)t, *Lu = C->loc + 6 * (size_t)u;
                    double pax = Lt[2 * kt], pay = Lt[2 * kt + 1], qax = Lt[2 * ((kt + 1) % 3)], qay = Lt[2 * ((kt + 1) % 3) + 1];
                    double pbx = Lu[2 * ((ku + 1) % 3)], pby = Lu[2 * ((ku + 1) % 3) + 1], qbx = Lu[2 * ku], qby = Lu[2 * ku + 1];
                    double la = hypot(qax - pax, qay - pay), lb = hypot(qbx - pbx, qby - pby);
                    if (!(la > 0) || fabs(la - lb) > 1e-6 * la) continue;  /* try another edge of b */
                    stamp[b] = visit;
                    merge_cand *m = &cand[nc];
                    double ang = atan2(qay - pay, qax - pax) - atan2(qby - pby, qbx - pbx);
                    m->cs = cos(ang); m->sn = sin(ang);
                    m->max = 0.5 * (pax + qax); m->may = 0.5 * (pay + qay);
                    m->mbx = 0.5 * (pbx + qbx); m->mby = 0.5 * (pby + qby);
                    m->b = b; m->t = t; m->u = u;
                    int na = hs.n[ci], nb = hs.n[b];
                    if ((size_t)(3 * (na + nb)) + 1 > hp_cap) {  /* points, then 2 (na + nb) hull slots */
                        hp_cap = 3 * (size_t)(na + nb) + 64;
                        hpt *q = realloc(hp, sizeof(hpt) * hp_cap);
                        if (!q) goto done;
                        hp = q;
                    }
                    memcpy(hp, hs.p[ci], sizeof(hpt) * (size_t)na);
                    for (int j = 0; j < nb; ++j) {
                        double dx = hs.p[b][j].x - m->mbx, dy = hs.p[b][j].y - m->mby;
                        hp[na + j].x = m->max + m->cs * dx - m->sn * dy;
                        hp[na + j].y = m->may + m->sn * dx + m->cs * dy;
                    }
                    int hn = convex_hull(hp, na + nb, hp + na + nb);
                    double w, h, rcs, rsn;
                    rect_from_hull(hp + na + nb, hn, &rcs, &rsn, &w, &h);
                    const chart *cb = &C->charts[b];
                    m->gain = cost_c + (cb->w + pad_w) * (cb->h + pad_w) - (w + pad_w) * (h + pad_w);
                    if (m->gain > 0.02 * cost_c) nc++;
                }
            if (!nc) break;
            qsort(cand, nc, sizeof(merge_cand), cand_cmp);
            /* the best merge whose union has no overlap */
            uint32_t chosen = BK_NONE, m_tris = 0;
            for (uint32_t k = 0; k < nc && k < 8 && chosen == BK_NONE; ++k) {
                const merge_cand *m = &cand[k];
                uint32_t cnt = 0;
                for (uint32_t x = head[ci]; x != BK_NONE; x = next[x]) {
                    memcpy(tl + 6 * (size_t)cnt, C->loc + 6 * (size_t)x, 6 * sizeof(double));
                    ids[cnt++] = x;
                }
                for (uint32_t x = head[m->b]; x != BK_NONE; x = next[x]) {
                    const double *L = C->loc + 6 * (size_t)x;
                    for (int j = 0; j < 3; ++j) {
                        double dx = L[2 * j] - m->mbx, dy = L[2 * j + 1] - m->mby;
                        tl[6 * (size_t)cnt + 2 * j] = m->max + m->cs * dx - m->sn * dy;
                        tl[6 * (size_t)cnt + 2 * j + 1] = m->may + m->sn * dx + m->cs * dy;
                    }
                    ids[cnt++] = x;
                }
                int ov = sets_overlap(tl, c->count, tl + 6 * (size_t)c->count, cnt - c->count,
                                      1e-8 * (c->w + c->h + C->charts[m->b].w + C->charts[m->b].h), &ovs, work);
                if (ov < 0) goto done;
                if (!ov) { chosen = k; m_tris = cnt; }
            }
            if (chosen == BK_NONE) break;
            const merge_cand *m = &cand[chosen];
            uint32_t b = m->b;
            /* the union's hull from the two hulls, its rectangle, applied to every corner */
            int na = hs.n[ci], nb = hs.n[b];
            memcpy(hp, hs.p[ci], sizeof(hpt) * (size_t)na);
            for (int j = 0; j < nb; ++j) {
                double dx = hs.p[b][j].x - m->mbx, dy = hs.p[b][j].y - m->mby;
                hp[na + j].x = m->max + m->cs * dx - m->sn * dy;
                hp[na + j].y = m->may + m->sn * dx + m->cs * dy;
            }
            hpt *nh = realloc(hs.p[ci], sizeof(hpt) * (size_t)(2 * (na + nb) + 1));
            if (!nh) goto done;
            hs.p[ci] = nh;
            hs.n[ci] = convex_hull(hp, na + nb, nh);
            double rcs, rsn, rw, rh;
            rect_from_hull(nh, hs.n[ci], &rcs, &rsn, &rw, &rh);
            apply_rect(tl, iota, m_tris, nh, hs.n[ci], rcs, rsn, &c->w, &c->h);
            for (uint32_t i = 0; i < m_tris; ++i) memcpy(C->loc + 6 * (size_t)ids[i], tl + 6 * (size_t)i, 6 * sizeof(double));
            for (uint32_t x = head[b]; x != BK_NONE; x = next[x]) C->tri_chart[x] = ci;
            next[tail[ci]] = head[b];
            tail[ci] = tail[b];
            c->count += C->charts[b].count;
            dead[b] = 1;
        }
    }
    /* compact: live charts, their triangles contiguous again */
    uint32_t live = 0, w = 0;
    for (uint32_t ci = 0; ci < n; ++ci) {
        if (dead[ci]) continue;
        chart c = C->charts[ci];
        c.first = w;
        for (uint32_t x = head[ci]; x != BK_NONE; x = next[x]) { ids[w++] = x; C->tri_chart[x] = live; }
        BK_CHECK(w - c.first == c.count);
        C->charts[live++] = c;
    }
    memcpy(C->chart_tris, ids, sizeof(uint32_t) * w);
    C->count = live;
    rc = 0;
done:
    if (hs.p) for (uint32_t ci = 0; ci < n; ++ci) free(hs.p[ci]);
    free(hs.p); free(hs.n);
    free(next); free(head); free(tail); free(stamp); free(cand); free(ids); free(iota); free(tl);
    free(dead); free(order); free(pts); free(hp); free(ovs.sel); free(ovs.selb); free(ovs.box); free(ovs.xy); free(ovs.grp);
    return rc;
}

static void charting_free(charting *C) { free(C->tri_chart); free(C->chart_tris); free(C->charts); free(C->loc); }

/* ---------------------------------------------------------------------------------------------
 * Skyline packing. */

typedef struct pk_item {
    int      w, h;       /* block size in texels, before rotation (w >= h for charts) */
    int      x, y, rot;  /* placement of the block's top-left texel; rot: turned 90 degrees */
} pk_item;

typedef struct sky_node { int x, y, w; } sky_node;

typedef struct waste_rect { int x, y, w, h; } waste_rect;

typedef struct packer {
    sky_node   *nodes;
    int         count, cap;
    uint32_t   *order;
    key_idx    *keys;
    key_idx    *keys2;       /* radix sort scratch (as many as keys) */
    size_t     *cnt;         /* radix sort counts, 65537 */
    waste_rect *waste;       /* free rectangles left under the skyline (Jylanki's waste map) */
    int         nwaste, wcap;
    int         min_side;    /* smallest item side: thinner waste is dropped */
} packer;

static void waste_add(packer *P, int x, int y, int w, int h)
{
    if (w < P->min_side || h < P->min_side) return;
    if (P->nwaste == P->wcap) {
        int cap = P->wcap ? 2 * P->wcap : 256;
        waste_rect *r = realloc(P->waste, sizeof(waste_rect) * (size_t)cap);
        if (!r) return;  /* losing a waste rectangle only loses space */
        P->waste = r; P->wcap = cap;
    }
    waste_rect *r = &P->waste[P->nwaste++];
    r->x = x; r->y = y; r->w = w; r->h = h;
}

/* Lowest top over the nodes a rectangle of width w starting at node i would rest on; -1 if it
 * runs past the bin. */
static int sky_fit(const packer *P, int i, int w, int bin_w)
{
    int x = P->nodes[i].x;
    if (x + w > bin_w) return -1;
    int y = 0, left = w;
    for (int j = i; left > 0; ++j) {
        if (P->nodes[j].y > y) y = P->nodes[j].y;
        left -= P->nodes[j].w;
    }
    return y;
}

static void sky_place(packer *P, int i, int x, int y, int w, int h)
{
    /* new node [x, x + w) at height y + h replaces what it covers; the gaps between the old
     * nodes and the rectangle's top become waste rectangles */
    int end = x + w, j = i;
    while (j < P->count && P->nodes[j].x < end) {
        int nend = P->nodes[j].x + P->nodes[j].w;
        if (P->nodes[j].y < y) {
            int wx0 = P->nodes[j].x, wx1 = nend < end ? nend : end;
            waste_add(P, wx0, P->nodes[j].y, wx1 - wx0, y - P->nodes[j].y);
        }
        if (nend <= end) { j++; continue; }
        P->nodes[j].w = nend - end;  /* partly covered: keep the right part */
        P->nodes[j].x = end;
        break;
    }
    /* nodes i .. j-1 are replaced by one */
    int removed = j - i;
    if (removed == 0) {
        memmove(P->nodes + i + 1, P->nodes + i, sizeof(sky_node) * (size_t)(P->count - i));
        P->count++;
    } else if (removed > 1) {
        memmove(P->nodes + i + 1, P->nodes + j, sizeof(sky_node) * (size_t)(P->count - j));
        P->count -= removed - 1;
    }
    P->nodes[i].x = x; P->nodes[i].y = y + h; P->nodes[i].w = w;
    /* merge equal heights with the neighbours */
    if (i + 1 < P->count && P->nodes[i + 1].y == P->nodes[i].y) {
        P->nodes[i].w += P->nodes[i + 1].w;
        memmove(P->nodes + i + 1, P->nodes + i + 2, sizeof(sky_node) * (size_t)(P->count - i - 2));
        P->count--;
    }
    if (i > 0 && P->nodes[i - 1].y == P->nodes[i].y) {
        P->nodes[i - 1].w += P->nodes[i].w;
        memmove(P->nodes + i, P->nodes + i + 1, sizeof(sky_node) * (size_t)(P->count - i - 1));
        P->count--;
    }
}

/* Packs items (sizes include the padding) into bin_w x bin_h; returns 1 when all fit. An item
 * goes into the waste rectangle it fits most tightly (best short side fit, guillotine split of
 * the rest), else onto the skyline where its top ends lowest (bottom-left). */
static int pack_items(packer *P, pk_item *it, uint32_t n, int bin_w, int bin_h)
{
    P->count = 1;
    P->nodes[0].x = 0; P->nodes[0].y = 0; P->nodes[0].w = bin_w;
    P->nwaste = 0;
    P->min_side = INT32_MAX;
    for (uint32_t k = 0; k < n; ++k) {
        const pk_item *q = &it[P->order[k]];
        int m = q->w < q->h ? q->w : q->h;
        if (m < P->min_side) P->min_side = m;
    }
    for (uint32_t k = 0; k < n; ++k) {
        pk_item *r = &it[P->order[k]];
        /* waste map first */
        int best_fit = INT32_MAX, best_wi = -1, best_wrot = 0;
        for (int wi = 0; wi < P->nwaste; ++wi) {
            const waste_rect *f = &P->waste[wi];
            for (int rot = 0; rot < 2; ++rot) {
                int w = rot ? r->h : r->w, h = rot ? r->w : r->h;
                if (w > f->w || h > f->h) continue;
                int fit = f->w - w < f->h - h ? f->w - w : f->h - h;
                if (fit < best_fit) { best_fit = fit; best_wi = wi; best_wrot = rot; }
            }
        }
        if (best_wi >= 0) {
            waste_rect f = P->waste[best_wi];
            P->waste[best_wi] = P->waste[--P->nwaste];
            int w = best_wrot ? r->h : r->w, h = best_wrot ? r->w : r->h;
            r->x = f.x; r->y = f.y; r->rot = best_wrot;
            /* split the rest along the longer leftover side */
            if (f.w - w > f.h - h) {
                waste_add(P, f.x + w, f.y, f.w - w, f.h);
                waste_add(P, f.x, f.y + h, w, f.h - h);
            } else {
                waste_add(P, f.x + w, f.y, f.w - w, h);
                waste_add(P, f.x, f.y + h, f.w, f.h - h);
            }
            continue;
        }
        int best_top = INT32_MAX, best_i = -1, best_rot = 0, best_y = 0, best_x = INT32_MAX;
        for (int rot = 0; rot < 2; ++rot) {
            if (rot && r->w == r->h) break;
            int w = rot ? r->h : r->w, h = rot ? r->w : r->h;
            for (int i = 0; i < P->count; ++i) {
                int y = sky_fit(P, i, w, bin_w);
                if (y < 0) break;
                int top = y + h;
                if (top > bin_h) continue;
                if (top < best_top || (top == best_top && P->nodes[i].x < best_x)) {
                    best_top = top; best_i = i; best_rot = rot; best_y = y; best_x = P->nodes[i].x;
                }
            }
        }
        if (best_i < 0) return 0;
        r->x = best_x; r->y = best_y; r->rot = best_rot;
        if (P->count + 2 > P->cap) return 0;  /* cannot happen: each placement adds at most one node */
        sky_place(P, best_i, best_x, best_y, best_rot ? r->h : r->w, best_rot ? r->w : r->h);
    }
    return 1;
}

/* A chart extent in texels as a block side, without the padding: a chart longer than the largest
 * atlas becomes BK_ATLAS_MAX_SIZE + 2, too long for any atlas, before the conversion to int can
 * overflow (--texels-per-unit 1e30). */
static int block_side(double texels)
{
    double f = floor(texels + 0.02);
    return f <= BK_ATLAS_MAX_SIZE ? (int)f + 1 : BK_ATLAS_MAX_SIZE + 2;
}

/* Block sizes of every item at scale s (texels per world unit) plus padding: the n_mesh mesh
 * items (charts, then the degenerate triangles' texel) scaled, then the given rectangles as they
 * are (exactly their texels: they are rasterized by texel centre). */
static void items_at_scale(const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, pk_item *it)
{
    for (uint32_t i = 0; i < n_mesh; ++i) {
        double w = i < C->count ? C->charts[i].w * s : 0.0, h = i < C->count ? C->charts[i].h * s : 0.0;
        it[i].w = block_side(w) + pad;
        it[i].h = block_side(h) + pad;
    }
    for (uint32_t i = 0; i < o->rect_count; ++i) {
        it[n_mesh + i].w = (int)o->rects[i].w + pad;
        it[n_mesh + i].h = (int)o->rects[i].h + pad;
    }
}

/* Packs the items list[0..n) (all n items when list is NULL) into a size x size atlas. Order:
 * tallest first, where height is the shorter side, then the longer side (sorting by area or by
 * the longer side first packed no better on the corpus). */
static int pack_list(packer *P, pk_item *it, const uint32_t *list, uint32_t n, int pad, int size)
{
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t i = list ? list[k] : k;
        uint64_t lo = (uint64_t)(it[i].w < it[i].h ? it[i].w : it[i].h), hi = (uint64_t)(it[i].w < it[i].h ? it[i].h : it[i].w);
        if (hi > (uint64_t)(size + pad)) return 0;
        P->keys[k].key = ~(lo << 32 | hi);  /* largest first */
        P->keys[k].idx = i;
    }
    if (n > 4096 && P->keys2 && P->cnt) {
        /* many items (voxel quads): LSD radix, 16 bits a pass, passes where every digit agrees
         * skipped (block sides fit 15 bits: two passes). Stable, so ties keep the list's order,
         * as qsort's index tie-break does for the whole list. */
        uint64_t all_or = 0, all_and = ~0ull;
        for (uint32_t k = 0; k < n; ++k) { all_or |= P->keys[k].key; all_and &= P->keys[k].key; }
        key_idx *src = P->keys, *dst = P->keys2;
        for (int shift = 0; shift < 64; shift += 16) {
            if ((((all_or ^ all_and) >> shift) & 0xFFFF) == 0) continue;
            memset(P->cnt, 0, sizeof(size_t) * 65537);
            for (uint32_t k = 0; k < n; ++k) P->cnt[((src[k].key >> shift) & 0xFFFF) + 1]++;
            for (int d = 0; d < 65536; ++d) P->cnt[d + 1] += P->cnt[d];
            for (uint32_t k = 0; k < n; ++k) dst[P->cnt[(src[k].key >> shift) & 0xFFFF]++] = src[k];
            key_idx *x = src; src = dst; dst = x;
        }
        for (uint32_t k = 0; k < n; ++k) P->order[k] = src[k].idx;
    } else {
        qsort(P->keys, n, sizeof(key_idx), key_idx_cmp);
        for (uint32_t k = 0; k < n; ++k) P->order[k] = P->keys[k].idx;
    }
    return pack_items(P, it, n, size + pad, size + pad);
}

/* Packs every chart at scale s into one size x size atlas. */
static int pack_at(packer *P, const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, int size, pk_item *it)
{
    items_at_scale(C, n_mesh, o, s, pad, it);
    return pack_list(P, it, NULL, n_mesh + o->rect_count, pad, size);
}

/* Pages of size x size for items of fixed size, groups kept whole and in order (seq lists the
 * items group by group, group g being seq[run[g] .. run[g + 1])). Each page takes as many of the
 * next groups as pack: a first count from their area, grown while it packs, then bisected to
 * within 1/64 of the most that pack (a page may stay a little emptier than it could be, for a
 * bounded number of packings). best[i] gets item i's placement, page[i] its page. Returns the
 * number of pages, 0 when one group alone does not fit a page (*bad = its group). */
static uint32_t pack_pages(packer *P, pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq, const uint32_t *run,
                           uint32_t nrun, int size, int pad, uint32_t *bad)
{
    uint32_t g = 0, pages = 0;
    double cap = (double)(size + pad) * (size + pad);
    while (g < nrun) {
        uint32_t left = nrun - g, m = 0;
        double a = 0;
        while (m < left) {
            double ga = 0;
            for (uint32_t k = run[g + m]; k < run[g + m + 1]; ++k) ga += (double)it[seq[k]].w * it[seq[k]].h;
            if (m > 0 && a + ga > 0.85 * cap) break;
            a += ga;
            m++;
        }
        uint32_t ok = 0, fail = left + 1;
        for (;;) {
            const uint32_t *list = seq + run[g];
            uint32_t n = run[g + m] - run[g];
            if (pack_list(P, it, list, n, pad, size)) {
                ok = m;
                for (uint32_t k = 0; k < n; ++k) best[list[k]] = it[list[k]];
            } else {
                fail = m;
            }
            if (ok == left || fail - ok <= (ok / 64 > 1 ? ok / 64 : 1)) break;
            if (fail == left + 1) { m = ok + (ok / 4 > 1 ? ok / 4 : 1); if (m > left) m = left; }
            else m = ok + (fail - ok) / 2;
        }
        if (ok == 0) { *bad = g; return 0; }
        for (uint32_t k = run[g]; k < run[g + ok]; ++k) page[seq[k]] = pages;
        pages++;
        g += ok;
    }
    return pages;
}

/* ---------------------------------------------------------------------------------------------
 * Build. */

static void finish_stats(bk_atlas *a)
{
    size_t N = BK_ATLAS_PIXELS(a);
    double uva = 0, rect_texels = 0;
    for (uint32_t t = 0; t < a->tri_count; ++t) {
        if (a->tri_chart[t] == BK_NONE) continue;
        const float *u = a->uv + 6 * (size_t)t;
        double ar = 0.5 * fabs((double)(u[2] - u[0]) * (u[5] - u[1]) - (double)(u[3] - u[1]) * (u[4] - u[0]));
        uva += ar;
        if (t >= a->rect_first_tri) rect_texels += ar * a->width * a->height;
    }
    if (a->rect_first_tri == 0) {
        /* rectangles alone: each covers exactly its w x h texels (no raster needed) */
        a->covered = (uint64_t)llround(rect_texels);
    } else {
        uint8_t *mask = malloc(N ? N : 1);
        if (mask) {
            a->covered = bk_atlas_coverage(a, mask);
            free(mask);
        }
    }
    a->utilisation = N ? (float)((double)a->covered / (double)N) : 0.0f;
    a->area_utilisation = (float)(uva / a->page_count);
}

static int build_from_file(const bk_scene *s, const bk_atlas_opts *o, const tri_geom *g, const uint32_t *weld,
                           bk_atlas *a, char *err, size_t err_size)
{
    uint32_t T = s->tri_count;
    const char *name = scene_name(o);
    if (!s->tri_vt || !s->texcoords)
        return bk_fail(err, err_size, "%s: --uv file: the file has no texture coordinates (vt); use --uv auto", name);
    for (uint32_t t = 0; t < T; ++t)
        for (int k = 0; k < 3; ++k) {
            uint32_t vi = s->tri_vt[3 * (size_t)t + k];
            if (vi == BK_NONE || vi >= s->texcoord_count)
                return bk_fail(err, err_size, "%s: --uv file: triangle %u (corner %d) has no vt; use --uv auto", name, t, k);
            float u = s->texcoords[2 * (size_t)vi], v = s->texcoords[2 * (size_t)vi + 1];
            const float e = 1e-6f;
            if (!(u >= -e && u <= 1 + e && v >= -e && v <= 1 + e))
                return bk_fail(err, err_size, "%s: --uv file: triangle %u has vt (%g, %g) outside [0,1]^2 "
                               "(tiled or unnormalised UVs); use --uv auto", name, t, (double)u, (double)v);
            a->uv[6 * (size_t)t + 2 * k] = fminf(fmaxf(u, 0.0f), 1.0f);
            a->uv[6 * (size_t)t + 2 * k + 1] = 1.0f - fminf(fmaxf(v, 0.0f), 1.0f);  /* OBJ v points up */
        }
    /* every surface needs texels of its own: no vt collapsed to a point or a line */
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        const float *u = a->uv + 6 * (size_t)t;
        double e1x = (double)u[2] - u[0], e1y = (double)u[3] - u[1], e2x = (double)u[4] - u[0], e2y = (double)u[5] - u[1];
        double e3x = (double)u[4] - u[2], e3y = (double)u[5] - u[3];
        double m = dmax(e1x * e1x + e1y * e1y, dmax(e2x * e2x + e2y * e2y, e3x * e3x + e3y * e3y));
        if (!(fabs(e1x * e2y - e1y * e2x) > 1e-9 * m) || m == 0)
            return bk_fail(err, err_size, "%s: --uv file: the vt of triangle %u have no area (its corners map to one point "
                           "or line), so it would get no texels; use --uv auto", name, t);
    }
    /* size */
    double wa = 0, ua = 0;
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        const float *u = a->uv + 6 * (size_t)t;
        wa += g->area[t];
        ua += 0.5 * fabs((double)(u[2] - u[0]) * (u[5] - u[1]) - (double)(u[3] - u[1]) * (u[4] - u[0]));
    }
    int N = o->size;
    if (o->texels_per_unit > 0) {
        if (!(ua > 0)) return bk_fail(err, err_size, "%s: --uv file: the vt have no area", name);
        double side = o->texels_per_unit * sqrt(wa / ua);
        if (side > BK_ATLAS_MAX_SIZE)
            return bk_fail(err, err_size, "%s: --texels-per-unit %g needs a %.0f texel atlas with these vt (at most %d)",
                           name, (double)o->texels_per_unit, side, BK_ATLAS_MAX_SIZE);
        N = ((int)ceil(side) + 3) / 4 * 4;
        if (N < 4) N = 4;
    }
    a->width = a->height = N;
    a->texels_per_unit = wa > 0 ? (float)(N * sqrt(ua / wa)) : 0.0f;
    /* overlaps: interiors of two triangles that share more than an edge or a vertex */
    double *xy = malloc(sizeof(double) * 6 * (size_t)T + 1);
    uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)T + 1);
    pair_list pairs = { 0 };
    if (!xy || !ids) { free(xy); free(ids); return bk_fail(err, err_size, "%s: out of memory", name); }
    uint32_t n = 0;
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        for (int k = 0; k < 6; ++k) xy[6 * (size_t)n + k] = a->uv[6 * (size_t)t + k];
        ids[n++] = t;
    }
    int rc = find_overlaps(xy, n, 1e-3 / N, &pairs, &a->overlap_work);
    if (rc == 0 && pairs.n) {
        size_t best = 0;
        for (size_t p = 1; p < pairs.n; ++p)
            if (pairs.p[2 * p] < pairs.p[2 * best] || (pairs.p[2 * p] == pairs.p[2 * best] && pairs.p[2 * p + 1] < pairs.p[2 * best + 1]))
                best = p;
        uint32_t i = ids[pairs.p[2 * best]], j = ids[pairs.p[2 * best + 1]];
        const float *u = a->uv + 6 * (size_t)i;
        rc = bk_fail(err, err_size, "%s: --uv file: the vt of triangles %u and %u overlap (near u=%.4f v=%.4f; "
                     "%zu overlapping pairs); lightmap UVs must not overlap: use --uv auto",
                     name, i, j, (u[0] + u[2] + u[4]) / 3.0, 1.0 - (u[1] + u[3] + u[5]) / 3.0, pairs.n);
    } else if (rc) rc = bk_fail(err, err_size, "%s: out of memory", name);
    free(xy); free(ids); free(pairs.p);
    if (rc) return rc;
    /* charts for reporting: triangles joined by edges with the same UVs on both sides */
    adjacency A;
    if (adjacency_build(s, weld, g->degen, &A)) { adjacency_free(&A); return bk_fail(err, err_size, "%s: out of memory", name); }
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)T + 1);
    if (!queue) { adjacency_free(&A); return bk_fail(err, err_size, "%s: out of memory", name); }
    for (uint32_t t = 0; t < T; ++t) a->tri_chart[t] = BK_NONE;
    uint32_t charts = 0;
    for (uint32_t t0 = 0; t0 < T; ++t0) {
        if (g->degen[t0] || a->tri_chart[t0] != BK_NONE) continue;
        uint32_t qh = 0, qt = 0;
        queue[qt++] = t0;
        a->tri_chart[t0] = charts;
        while (qh < qt) {
            uint32_t t = queue[qh++];
            for (uint32_t p = A.start[t]; p < A.start[t + 1]; ++p) {
                uint32_t u = A.adj[p];
                if (a->tri_chart[u] != BK_NONE) continue;
                /* same UV at both welded ends of the shared edge? */
                int same = 0;
                for (int k = 0; k < 3; ++k)
                    for (int m = 0; m < 3; ++m)
                        if (weld[s->tri_v[3 * (size_t)t + k]] == weld[s->tri_v[3 * (size_t)u + m]] &&
                            a->uv[6 * (size_t)t + 2 * k] == a->uv[6 * (size_t)u + 2 * m] &&
                            a->uv[6 * (size_t)t + 2 * k + 1] == a->uv[6 * (size_t)u + 2 * m + 1]) same++;
                if (same < 2) continue;
                a->tri_chart[u] = charts;
                queue[qt++] = u;
            }
        }
        charts++;
    }
    free(queue);
    adjacency_free(&A);
    a->chart_count = charts;
    return 0;
}

/* The groups of the items for pack_pages: each mesh item alone, in order, then the rectangles by
 * group (stable). seq and run need n_items and n_items + 1 entries; returns the group count. */
static uint32_t item_groups(uint32_t n_mesh, const bk_atlas_opts *o, key_idx *tmp, uint32_t *seq, uint32_t *run)
{
    uint32_t nrun = 0;
    for (uint32_t i = 0; i < n_mesh; ++i) { run[nrun++] = i; seq[i] = i; }
    for (uint32_t i = 0; i < o->rect_count; ++i) { tmp[i].key = o->rects[i].group; tmp[i].idx = i; }
    qsort(tmp, o->rect_count, sizeof(key_idx), key_idx_cmp);
    for (uint32_t k = 0; k < o->rect_count; ++k) {
        if (k == 0 || tmp[k].key != tmp[k - 1].key) run[nrun++] = n_mesh + k;
        seq[n_mesh + k] = n_mesh + tmp[k].idx;
    }
    run[nrun] = n_mesh + o->rect_count;
    return nrun;
}

/* The density a page-count message quotes. */
static void density_words(const bk_atlas_opts *o, uint32_t n_mesh, char *buf, size_t n)
{
    if (o->rect_count && (n_mesh == 0 || !(o->texels_per_unit > 0)))
        snprintf(buf, n, "%g texels per voxel", (double)sqrtf(o->rect_texels_per_unit * o->rect_texels_per_unit));
    else
        snprintf(buf, n, "%g texels per unit", (double)o->texels_per_unit);
}

int bk_atlas_build(const bk_scene *s, const bk_atlas_opts *o, bk_atlas *out, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    memset(out, 0, sizeof *out);
    const char *name = scene_name(o);
    int pad = o->padding;
    double cone = o->cone_deg > 0 ? o->cone_deg : DEFAULT_CONE_DEG;
    uint32_t R = o->rect_count, T = s->tri_count;
    if (pad < 2 || pad > 64) return bk_fail(err, err_size, "%s: padding %d: must be between 2 and 64 texels", name, pad);
    if (!(cone > 0 && cone < 80)) return bk_fail(err, err_size, "%s: chart cone %g degrees: must be in (0, 80)", name, cone);
    if (!(o->texels_per_unit >= 0) || !isfinite(o->texels_per_unit))
        return bk_fail(err, err_size, "%s: texels per unit %g: must be a positive number", name, (double)o->texels_per_unit);
    if ((o->texels_per_unit == 0 || o->pages_auto) && (o->size < 4 || o->size > BK_ATLAS_MAX_SIZE))
        return bk_fail(err, err_size, "%s: atlas size %d: must be between 4 and %d", name, o->size, BK_ATLAS_MAX_SIZE);
    if (s->tri_count == 0) return bk_fail(err, err_size, "%s: no triangles to map", name);
    if (R && (!o->rects || (uint64_t)o->rect_first_tri + 2 * (uint64_t)R != T))
        return bk_fail(err, err_size, "%s: %u rectangles from triangle %u do not end the scene's %u triangles", name, R, o->rect_first_tri, T);
    if (R && o->uv_from_file)
        return bk_fail(err, err_size, "%s: --uv file: voxel charts are made from their quads; bake the --mesh-out OBJ for file UVs", name);
    for (uint32_t i = 0; i < R; ++i)
        if (o->rects[i].w < 1 || o->rects[i].h < 1 || o->rects[i].w > BK_ATLAS_MAX_SIZE || o->rects[i].h > BK_ATLAS_MAX_SIZE)
            return bk_fail(err, err_size, "%s: rectangle %u is %ux%u texels (1 to %d a side)", name, i, o->rects[i].w, o->rects[i].h,
                           BK_ATLAS_MAX_SIZE);
    /* the mesh part: the triangles before the rectangles */
    uint32_t MT = R ? o->rect_first_tri : T;
    bk_scene ms = *s;
    ms.tri_count = MT;

    out->tri_count = T;
    out->page_count = 1;
    out->rect_first_tri = R ? MT : T;
    out->uv = calloc(6 * (size_t)T, sizeof(float));
    out->tri_chart = malloc(sizeof(uint32_t) * (size_t)T);
    tri_geom g;
    memset(&g, 0, sizeof g);
    uint32_t *weld = NULL;
    adjacency A = { 0 };
    charting C;
    memset(&C, 0, sizeof C);
    packer P = { 0 };
    pk_item *items = NULL, *best_items = NULL;
    uint32_t *item_page = NULL, *seq = NULL, *run = NULL;
    key_idx *gtmp = NULL;
    int rc = -1;
    if (!out->uv || !out->tri_chart || (MT && (geom_init(&ms, &g) || !(weld = weld_vertices(&ms))))) {
        rc = bk_fail(err, err_size, "%s: out of memory", name);
        goto done;
    }
    out->degenerate_count = g.degen_count;
    if (MT && g.degen_count == MT && !R) { rc = bk_fail(err, err_size, "%s: every triangle has zero area", name); goto done; }

    if (o->uv_from_file) {
        rc = build_from_file(s, o, &g, weld, out, err, err_size);
        goto done;
    }

    if (MT && (adjacency_build(&ms, weld, g.degen, &A) || make_charts(&ms, &g, &A, cone, &C, &out->overlap_work))) {
        rc = bk_fail(err, err_size, "%s: out of memory", name);
        goto done;
    }
    if (MT) {
        /* the scale to expect: charts filling ~60 % of the atlas, or the one asked for */
        double area = 0;
        for (uint32_t t = 0; t < MT; ++t) area += g.area[t];
        double s_est = o->texels_per_unit > 0 ? o->texels_per_unit : o->size * sqrt(0.6 / fmax(area, 1e-300));
        uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)MT + 1), *part = malloc(sizeof(uint32_t) * (size_t)MT + 1);
        key_idx *kt = malloc(sizeof(key_idx) * (size_t)MT + 1);
        int bad = !queue || !part || !kt || split_charts(&ms, &A, &C, (pad + 1) / s_est, queue, kt, part) ||
                  merge_charts(&ms, weld, &A, &C, (pad + 1) / s_est, &out->overlap_work);
        free(queue); free(part); free(kt);
        if (bad) { rc = bk_fail(err, err_size, "%s: out of memory", name); goto done; }
    }
    /* items: one per chart, plus one texel for all degenerate triangles, then the rectangles */
    uint32_t n_mesh = C.count + (g.degen_count ? 1 : 0), n_items = n_mesh + R;
    items = malloc(sizeof(pk_item) * n_items);
    best_items = malloc(sizeof(pk_item) * n_items);
    item_page = calloc(n_items, sizeof(uint32_t));
    P.cap = (int)n_items + 4;
    P.nodes = malloc(sizeof(sky_node) * (size_t)P.cap);
    P.order = malloc(sizeof(uint32_t) * n_items);
    P.keys = malloc(sizeof(key_idx) * n_items);
    if (n_items > 4096) {   /* radix scratch: without it pack_list falls back to qsort */
        P.keys2 = malloc(sizeof(key_idx) * n_items);
        P.cnt = malloc(sizeof(size_t) * 65537);
    }
    if (!items || !best_items || !item_page || !P.nodes || !P.order || !P.keys) { rc = bk_fail(err, err_size, "%s: out of memory", name); goto done; }

    double sum_wh = 0, max_w = 0;
    for (uint32_t i = 0; i < C.count; ++i) {
        sum_wh += C.charts[i].w * C.charts[i].h;
        if (C.charts[i].w > max_w) max_w = C.charts[i].w;
    }
    double scale = 0;
    int N, fixed = o->texels_per_unit > 0 || n_mesh == 0;
    char dens[64];
    density_words(o, n_mesh, dens, sizeof dens);
    if (fixed) {
        scale = o->texels_per_unit;
        items_at_scale(&C, n_mesh, o, scale, pad, items);
    }
    /* Fixed chart sizes: pages of --size (one, or as many as needed), except that a mesh at a
     * given --texels-per-unit on one page grows the page to fit, as it always did. */
    if (fixed && (o->pages_auto || !(o->texels_per_unit > 0) || n_mesh == 0)) {
        N = o->size;
        if (!o->pages_auto && pack_list(&P, items, NULL, n_items, pad, N)) {
            memcpy(best_items, items, sizeof(pk_item) * n_items);
            goto place;
        }
        uint32_t bad_group = 0;
        seq = malloc(sizeof(uint32_t) * n_items);
        run = malloc(sizeof(uint32_t) * (n_items + 1));
        gtmp = malloc(sizeof(key_idx) * (R ? R : 1));
        if (!seq || !run || !gtmp) { rc = bk_fail(err, err_size, "%s: out of memory", name); goto done; }
        uint32_t nrun = item_groups(n_mesh, o, gtmp, seq, run);
        uint32_t pages = pack_pages(&P, items, best_items, item_page, seq, run, nrun, N, pad, &bad_group);
        if (!pages) {
            uint32_t first = seq[run[bad_group]];
            if (first >= n_mesh)
                rc = bk_fail(err, err_size, "%s: the charts of voxel instance %u do not fit one %dx%d page at %s; use a larger --size "
                             "or fewer --texels-per-voxel", name, o->rects[first - n_mesh].group, N, N, dens);
            else
                rc = bk_fail(err, err_size, "%s: chart %u does not fit one %dx%d page at %s; use a larger --size or a smaller "
                             "--texels-per-unit", name, first, N, N, dens);
            goto done;
        }
        if (!o->pages_auto) {
            rc = bk_fail(err, err_size, "%s: needs %u pages of %dx%d at %s; use --pages auto or a larger --size", name, pages, N, N, dens);
            goto done;
        }
        if ((uint64_t)N * N * pages > 0x100000000ull) {
            rc = bk_fail(err, err_size, "%s: needs %u pages of %dx%d at %s: more than 2^32 texels, which a bake cannot number; "
                         "use fewer texels per voxel or unit", name, pages, N, N, dens);
            goto done;
        }
        out->page_count = (int)pages;
        goto place;
    }
    if (fixed) {
        double need = 0;
        int longest = 0;
        for (uint32_t i = 0; i < n_items; ++i) {
            need += (double)items[i].w * items[i].h;
            if (items[i].w - pad > longest) longest = items[i].w - pad;
            if (items[i].h - pad > longest) longest = items[i].h - pad;
        }
        /* the side the blocks' area alone needs, bounded before it becomes an int */
        double lo_d = dmax(floor(sqrt(need)) - pad, (double)longest);
        int lo = lo_d <= BK_ATLAS_MAX_SIZE ? ((int)lo_d + 3) / 4 * 4 : BK_ATLAS_MAX_SIZE + 1;
        if (lo < 4) lo = 4;
        if (lo > BK_ATLAS_MAX_SIZE) {
            rc = bk_fail(err, err_size, "%s: --texels-per-unit %g needs an atlas larger than %d texels%s", name,
                         (double)o->texels_per_unit, BK_ATLAS_MAX_SIZE, R ? "; use --pages auto" : "");
            goto done;
        }
        /* grow geometrically until it packs, then bisect down on multiples of 4 */
        int hi = lo, ok_hi = 0;
        for (;;) {
            if (pack_list(&P, items, NULL, n_items, pad, hi)) { ok_hi = 1; memcpy(best_items, items, sizeof(pk_item) * n_items); break; }
            if (hi >= BK_ATLAS_MAX_SIZE) break;
            lo = hi + 4;
            hi = ((int)(hi * 1.125) + 3) / 4 * 4;
            if (hi < lo) hi = lo;
            if (hi > BK_ATLAS_MAX_SIZE) hi = BK_ATLAS_MAX_SIZE;
        }
        if (!ok_hi) {
            rc = bk_fail(err, err_size, "%s: --texels-per-unit %g needs an atlas larger than %d texels; use --pages auto", name,
                         (double)o->texels_per_unit, BK_ATLAS_MAX_SIZE);
            goto done;
        }
        while (lo < hi) {
            int mid = (lo + hi) / 8 * 4, ok = 0;
            if (mid < lo) mid = lo;
            ok = pack_list(&P, items, NULL, n_items, pad, mid);
            if (ok) { hi = mid; memcpy(best_items, items, sizeof(pk_item) * n_items); }
            else lo = mid + 4;
        }
        N = hi;
    } else {
        N = o->size;
        /* Upper bound: the charts' rectangles alone fill the atlas, or the longest one spans it. */
        double s_hi = fmin((N + pad) / sqrt(fmax(sum_wh, 1e-300)), N / fmax(max_w, 1e-300));
        double s_lo = s_hi;
        int found = 0;
        for (int i = 0; i < 60; ++i) {
            if (pack_at(&P, &C, n_mesh, o, s_lo, pad, N, items)) { found = 1; break; }
            s_hi = s_lo;
            s_lo *= 0.5;
        }
        if (!found && pack_at(&P, &C, n_mesh, o, 0.0, pad, N, items)) found = 1, s_lo = 0.0;
        if (!found) {
            rc = bk_fail(err, err_size, "%s: %u charts do not fit a %dx%d atlas even at one texel each with %d texels of "
                         "padding; use a larger --size%s", name, C.count + R, N, N, pad,
                         R ? ", or --pages auto" : " or --uv file");
            goto done;
        }
        memcpy(best_items, items, sizeof(pk_item) * n_items);
        if (s_lo < s_hi) {
            /* bisect log(scale) to 0.1 % */
            double lo = s_lo, hi = s_hi;
            while (hi > lo * 1.001) {
                double mid = sqrt(lo * hi);
                if (pack_at(&P, &C, n_mesh, o, mid, pad, N, items)) { lo = mid; memcpy(best_items, items, sizeof(pk_item) * n_items); }
                else hi = mid;
            }
            s_lo = lo;
        }
        scale = s_lo;
    }

place:
    /* UVs */
    out->width = out->height = N;
    out->texels_per_unit = (float)(MT ? scale : o->rect_texels_per_unit);
    out->chart_count = C.count + R;
    if (out->page_count > 1 && !(out->tri_page = malloc(sizeof(uint32_t) * (size_t)T))) {
        rc = bk_fail(err, err_size, "%s: out of memory", name);
        goto done;
    }
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        const pk_item *b = &best_items[ci];
        int bw = b->w - pad, bh = b->h - pad;
        double ox = 0.5 * (bw - c->w * scale), oy = 0.5 * (bh - c->h * scale);
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C.chart_tris[c->first + i];
            if (out->tri_page) out->tri_page[t] = item_page[ci];
            for (int k = 0; k < 3; ++k) {
                double lx = C.loc[6 * (size_t)t + 2 * k] * scale + ox, ly = C.loc[6 * (size_t)t + 2 * k + 1] * scale + oy;
                double x = b->rot ? bh - ly : lx, y = b->rot ? lx : ly;
                out->uv[6 * (size_t)t + 2 * k] = (float)((b->x + x) / N);
                out->uv[6 * (size_t)t + 2 * k + 1] = (float)((b->y + y) / N);
            }
        }
    }
    for (uint32_t t = 0; t < MT; ++t) out->tri_chart[t] = C.tri_chart[t];
    if (g.degen_count) {
        const pk_item *b = &best_items[C.count];
        for (uint32_t t = 0; t < MT; ++t) {
            if (!g.degen[t]) continue;
            if (out->tri_page) out->tri_page[t] = item_page[C.count];
            for (int k = 0; k < 3; ++k) {
                out->uv[6 * (size_t)t + 2 * k] = (float)((b->x + 0.5) / N);
                out->uv[6 * (size_t)t + 2 * k + 1] = (float)((b->y + 0.5) / N);
            }
        }
    }
    /* rectangles: corners on texel corners, c0 -> c1 along w, c0 -> c3 along h */
    for (uint32_t i = 0; i < R; ++i) {
        const pk_item *b = &best_items[n_mesh + i];
        double W = o->rects[i].w, H = o->rects[i].h;
        const double cx[4] = { 0, W, W, 0 }, cy[4] = { 0, 0, H, H };
        static const int corner[2][3] = { { 0, 1, 2 }, { 0, 2, 3 } };
        for (int h = 0; h < 2; ++h) {
            uint32_t t = MT + 2 * i + (uint32_t)h;
            out->tri_chart[t] = C.count + i;
            if (out->tri_page) out->tri_page[t] = item_page[n_mesh + i];
            for (int k = 0; k < 3; ++k) {
                double lx = cx[corner[h][k]], ly = cy[corner[h][k]];
                double x = b->rot ? H - ly : lx, y = b->rot ? lx : ly;
                out->uv[6 * (size_t)t + 2 * k] = (float)((b->x + x) / N);
                out->uv[6 * (size_t)t + 2 * k + 1] = (float)((b->y + y) / N);
            }
        }
    }
    /* the largest tilt actually reached: each triangle keeps cos(tilt) of its area */
    double min_ratio = 1.0;
    for (uint32_t t = 0; t < MT; ++t)
        if (!g.degen[t]) min_ratio = fmin(min_ratio, tri2_area(C.loc + 6 * (size_t)t) / g.area[t]);
    out->max_cone_deg = (float)(acos(fmin(1.0, min_ratio)) * 180.0 / PI_D);
    rc = 0;
done:
    if (rc == 0) finish_stats(out);
    else bk_atlas_free(out);
    out->seconds = bk_time_now() - t0;
    geom_free(&g);
    free(weld);
    adjacency_free(&A);
    charting_free(&C);
    free(items); free(best_items); free(item_page); free(seq); free(run); free(gtmp);
    free(P.nodes); free(P.order); free(P.keys); free(P.keys2); free(P.cnt); free(P.waste);
    return rc;
}
