/* atlas_chart.c - charts for the lightmap atlas (see atlas.c for the pipeline): triangle
 * geometry, welding and adjacency; charts by region growing within a normal cone, planar
 * projection, self-overlaps evicted (atlas_overlap.c); every chart turned to its minimal-area
 * rectangle; poorly filled charts split, neighbouring charts merged by unfolding.
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
 */
#include "atlas_internal.h"
#include "bk_common.h"
#include "pool.h"
#include "sort.h"
#include "util.h"

#include <float.h>
#include <stdatomic.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Triangle geometry (double precision: normals of tiny or thin triangles stay meaningful). */

typedef struct geom_ctx { const bk_scene *s; tri_geom *g; double tiny; } geom_ctx;

static void geom_tri_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const geom_ctx *c = ctx;
    const bk_scene *s = c->s;
    tri_geom *g = c->g;
    for (size_t t = begin; t < end; ++t) {
        double p0[3], p1[3], p2[3], e1[3], e2[3], cr[3];
        bk_atlas_pos_of(s, (uint32_t)t, 0, p0); bk_atlas_pos_of(s, (uint32_t)t, 1, p1); bk_atlas_pos_of(s, (uint32_t)t, 2, p2);
        double emax = 0;
        for (int k = 0; k < 3; ++k) { e1[k] = p1[k] - p0[k]; e2[k] = p2[k] - p0[k]; }
        double l1 = e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2];
        double l2 = e2[0] * e2[0] + e2[1] * e2[1] + e2[2] * e2[2];
        double l3 = 0;
        for (int k = 0; k < 3; ++k) l3 += (p2[k] - p1[k]) * (p2[k] - p1[k]);
        emax = l1 > l2 ? l1 : l2;
        if (l3 > emax) emax = l3;
        cr[0] = e1[1] * e2[2] - e1[2] * e2[1];
        cr[1] = e1[2] * e2[0] - e1[0] * e2[2];
        cr[2] = e1[0] * e2[1] - e1[1] * e2[0];
        double len = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
        /* Degenerate: collinear to 1e-7 of its longest edge, or below float precision of the scene. */
        int bad = !(len > 1e-7 * emax) || !(len > c->tiny) || !isfinite(len);
        g->degen[t] = (uint8_t)bad;
        g->area[t] = bad ? 0.0 : 0.5 * len;
        for (int k = 0; k < 3; ++k) g->n[3 * t + k] = bad ? 0.0 : cr[k] / len;
    }
}

int bk_atlas_geom_init(const bk_scene *s, tri_geom *g)
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
    geom_ctx c = { s, g, 1e-14 * d2 };  /* tiny: twice the area of a triangle 1e-7 of the scene across */
    bk_parallel_for(T, 16384, geom_tri_fn, &c);
    for (uint32_t t = 0; t < T; ++t) g->degen_count += g->degen[t];
    return 0;
}

void bk_atlas_geom_free(tri_geom *g) { free(g->n); free(g->area); free(g->degen); }

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

/* weld[v]: the smallest vertex index with v's exact position. On the pool: every vertex goes into
 * one open-addressing table by compare-and-swap (a position takes the first free slot of its
 * probe sequence, so it has one slot, and keeps the smallest index that reached it), then every
 * vertex reads its position's slot: the serial loop's answer, whatever the thread count. */
typedef struct weld_ctx {
    const bk_scene *s;
    _Atomic uint32_t *table;
    size_t cap;
    uint32_t *weld;
    int pass;                /* 0: insert, 1: read */
} weld_ctx;

static void weld_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const weld_ctx *c = ctx;
    const float *pos = c->s->positions;
    for (size_t v = begin; v < end; ++v) {
        const float *p = pos + 3 * v;
        uint32_t kx = fkey(p[0]), ky = fkey(p[1]), kz = fkey(p[2]);
        size_t h = hash_u32x3(kx, ky, kz) & (c->cap - 1);
        for (;;) {
            uint32_t w = atomic_load_explicit(&c->table[h], memory_order_acquire);
            if (w == BK_NONE) {
                if (c->pass == 0 &&
                    atomic_compare_exchange_strong_explicit(&c->table[h], &w, (uint32_t)v, memory_order_acq_rel, memory_order_acquire))
                    break;
                if (w == BK_NONE) continue;  /* (a read never sees its own position's slot empty) */
            }
            const float *q = pos + 3 * (size_t)w;
            if (fkey(q[0]) == kx && fkey(q[1]) == ky && fkey(q[2]) == kz) {
                if (c->pass == 1) { c->weld[v] = w; break; }
                while (v < w && !atomic_compare_exchange_weak_explicit(&c->table[h], &w, (uint32_t)v, memory_order_acq_rel,
                                                                      memory_order_acquire)) {}
                break;
            }
            h = (h + 1) & (c->cap - 1);
        }
    }
}

uint32_t *bk_atlas_weld(const bk_scene *s)
{
    uint32_t V = s->vertex_count;
    uint32_t *weld = malloc(sizeof(uint32_t) * (size_t)V + 1);
    size_t cap = 16;
    while (cap < 2 * (size_t)V) cap <<= 1;
    _Atomic uint32_t *table = malloc(sizeof(_Atomic uint32_t) * cap);
    if (!weld || !table) { free(weld); free((void *)table); return NULL; }
    for (size_t i = 0; i < cap; ++i) atomic_init(&table[i], BK_NONE);
    weld_ctx c = { s, table, cap, weld, 0 };
    bk_parallel_for(V, 16384, weld_fn, &c);
    c.pass = 1;
    bk_parallel_for(V, 16384, weld_fn, &c);
    free((void *)table);
    return weld;
}

typedef struct edge_rec { uint64_t key; uint32_t tri; uint32_t fwd; } edge_rec;

static int edge_cmp(const void *pa, const void *pb)
{
    const edge_rec *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->tri < b->tri ? -1 : (a->tri > b->tri);
}

/* Stable by key (sort.h), so edges of one key stay in triangle order; qsort on (key, triangle)
 * gives that order too when the sort's scratch cannot be had. */
static void edge_sort(edge_rec *e, size_t n)
{
    bk_sort_spec sp = bk_sort_spec_of(sizeof *e, offsetof(edge_rec, key), 8);
    if (bk_sort_radix(e, n, &sp)) qsort(e, n, sizeof *e, edge_cmp);
}

/* The reference: every edge sorted by its key (welded end points), runs of equal keys paired. */
static int adjacency_build_sorted(const bk_scene *s, const uint32_t *weld, const uint8_t *skip, adjacency *A)
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

/* The same lists without sorting every edge: edges in buckets by their smaller welded end point
 * (a counting sort), each bucket sorted by (other end, triangle) on the pool (a vertex of high
 * valence, a fan's centre, must not be scanned by each of its triangles), then each triangle on
 * the pool finds the runs of its own edges, keys ascending, by bisection in their buckets. A triangle receives a run's other
 * members in run order (the pair loop of adjacency_build_sorted appends them so), and runs in key
 * order, so the lists are the sorted build's, entry for entry. That needs no two edges of one
 * triangle with the same key (two corners welded together: zero area, which skip marks); a scene
 * with one takes the sorted build. */
typedef struct adj_bucket_edge { uint32_t b, tri; uint8_t fwd; } adj_bucket_edge;

typedef struct adj_ctx {
    const bk_scene *s;
    const uint32_t *weld;
    const uint8_t *skip;
    const uint32_t *bstart;          /* V + 1: bucket of welded vertex a */
    const adj_bucket_edge *be;
    uint32_t *start, *adj;           /* count pass: start[t + 1] = count; fill pass: the lists */
    int fill;
} adj_ctx;

static int adj_edge_cmp(const void *pa, const void *pb)
{
    const adj_bucket_edge *a = pa, *b = pb;
    if (a->b != b->b) return a->b < b->b ? -1 : 1;
    return (a->tri > b->tri) - (a->tri < b->tri);
}

/* Each bucket sorted by (b, triangle): in triangle order within a run, as filled. */
static void adj_sort_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    adj_ctx *c = ctx;
    adj_bucket_edge *be = (adj_bucket_edge *)c->be;
    for (size_t v = begin; v < end; ++v) {
        uint32_t b0 = c->bstart[v], n = c->bstart[v + 1] - b0;
        if (n > 16) { qsort(be + b0, n, sizeof *be, adj_edge_cmp); continue; }
        for (uint32_t i = 1; i < n; ++i) {
            adj_bucket_edge e = be[b0 + i];
            uint32_t j = i;
            while (j > 0 && adj_edge_cmp(&be[b0 + j - 1], &e) > 0) { be[b0 + j] = be[b0 + j - 1]; j--; }
            be[b0 + j] = e;
        }
    }
}

static void adj_tri_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const adj_ctx *c = ctx;
    for (size_t t = begin; t < end; ++t) {
        uint32_t n = 0, w = c->fill ? c->start[t] : 0;
        if (!c->skip[t]) {
            uint64_t key[3];
            uint32_t ka[3], kb[3], m = 0;
            uint8_t kf[3];
            for (int k = 0; k < 3; ++k) {
                uint32_t a = c->weld[c->s->tri_v[3 * t + k]], b = c->weld[c->s->tri_v[3 * t + (k + 1) % 3]];
                if (a == b) continue;
                uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
                uint64_t kk = (uint64_t)lo << 32 | hi;
                uint32_t i = m++;
                while (i > 0 && key[i - 1] > kk) { key[i] = key[i - 1]; ka[i] = ka[i - 1]; kb[i] = kb[i - 1]; kf[i] = kf[i - 1]; i--; }
                key[i] = kk; ka[i] = lo; kb[i] = hi; kf[i] = a < b;
            }
            for (uint32_t j = 0; j < m; ++j) {
                /* the run: bucket entries with this b (sorted by b, then triangle) */
                uint32_t lo = c->bstart[ka[j]], hi = c->bstart[ka[j] + 1];
                while (lo < hi) {
                    uint32_t mid = lo + (hi - lo) / 2;
                    if (c->be[mid].b < kb[j]) lo = mid + 1;
                    else hi = mid;
                }
                uint32_t b0 = lo, b1 = lo, bend = c->bstart[ka[j] + 1];
                while (b1 < bend && c->be[b1].b == kb[j]) b1++;
                uint32_t len = b1 - b0;
                if (len < 2 || len > 8) continue;
                for (uint32_t q = b0; q < b1; ++q) {
                    const adj_bucket_edge *e = &c->be[q];
                    if (e->tri == t || e->fwd == kf[j]) continue;
                    if (c->fill) c->adj[w++] = e->tri;
                    else n++;
                }
            }
        }
        if (!c->fill) c->start[t + 1] = n;
    }
}

typedef struct adj_fill_ctx {
    const bk_scene *s;
    const uint32_t *weld;
    const uint8_t *skip;
    uint32_t T;
    _Atomic uint32_t *ctr;   /* count pass: per smaller end point + 1; fill pass: the next place */
    adj_bucket_edge *be;
    int fill;
    atomic_int twin;         /* a triangle with two corners welded together */
} adj_fill_ctx;

static void adj_fill_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    adj_fill_ctx *c = ctx;
    for (size_t t = begin; t < end; ++t) {
        if (c->skip[t]) continue;
        uint32_t v[3];
        for (int k = 0; k < 3; ++k) v[k] = c->weld[c->s->tri_v[3 * t + k]];
        if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2]) { atomic_store(&c->twin, 1); continue; }
        for (int k = 0; k < 3; ++k) {
            uint32_t a = v[k], b = v[(k + 1) % 3], lo = a < b ? a : b;
            if (!c->fill) { atomic_fetch_add_explicit(&c->ctr[lo + 1], 1, memory_order_relaxed); continue; }
            adj_bucket_edge *e = &c->be[atomic_fetch_add_explicit(&c->ctr[lo], 1, memory_order_relaxed)];
            e->b = a < b ? b : a;
            e->tri = (uint32_t)t;
            e->fwd = a < b;
        }
    }
}

int bk_atlas_adjacency_build(const bk_scene *s, const uint32_t *weld, const uint8_t *skip, adjacency *A)
{
    uint32_t T = s->tri_count, V = s->vertex_count;
    uint32_t *bstart = calloc((size_t)V + 2, sizeof(uint32_t));
    adj_bucket_edge *be = malloc(sizeof *be * 3 * (size_t)T + 1);
    A->start = calloc((size_t)T + 2, sizeof(uint32_t));
    A->adj = NULL;
    if (!bstart || !be || !A->start) { free(bstart); free(be); return -1; }
    /* bucket sizes, then the edges into their buckets, on the pool (atomic counters: the order in
     * a bucket varies, which its sort below undoes, (b, triangle) being unique in a bucket) */
    adj_fill_ctx fc = { s, weld, skip, T, (_Atomic uint32_t *)NULL, NULL, 0, 0 };
    _Atomic uint32_t *ctr = malloc(sizeof(_Atomic uint32_t) * ((size_t)V + 2));
    if (!ctr) { free(bstart); free(be); return -1; }
    for (size_t v = 0; v < (size_t)V + 2; ++v) atomic_init(&ctr[v], 0);
    fc.ctr = ctr;
    bk_parallel_for(T, 16384, adj_fill_fn, &fc);
    if (atomic_load(&fc.twin)) {
        free((void *)ctr); free(bstart); free(be); free(A->start);
        return adjacency_build_sorted(s, weld, skip, A);
    }
    for (uint32_t v = 0; v < V; ++v) bstart[v + 1] = bstart[v] + atomic_load_explicit(&ctr[v + 1], memory_order_relaxed);
    for (uint32_t v = 0; v <= V; ++v) atomic_store_explicit(&ctr[v], bstart[v], memory_order_relaxed);
    fc.be = be;
    fc.fill = 1;
    bk_parallel_for(T, 16384, adj_fill_fn, &fc);
    free((void *)ctr);
    adj_ctx c = { s, weld, skip, bstart, be, A->start, NULL, 0 };
    bk_parallel_for(V, 16384, adj_sort_fn, &c);
    bk_parallel_for(T, 8192, adj_tri_fn, &c);
    for (uint32_t t = 0; t < T; ++t) A->start[t + 1] += A->start[t];
    A->adj = malloc(sizeof(uint32_t) * (size_t)A->start[T] + 1);
    if (!A->adj) { free(bstart); free(be); return -1; }
    c.adj = A->adj;
    c.fill = 1;
    bk_parallel_for(T, 8192, adj_tri_fn, &c);
    free(bstart);
    free(be);
    return 0;
}

void bk_atlas_adjacency_free(adjacency *A) { free(A->start); free(A->adj); }

/* ---------------------------------------------------------------------------------------------
 * Charts. */


int bk_atlas_chart_push(charting *C, chart c)
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


/* A frame of the plane normal to unit n: t1 is the axis least aligned with n crossed with n,
 * normalised; t2 = n x t1, so (t1, t2, n) is right-handed. */
void bk_atlas_plane_frame(const double *n, double *t1, double *t2)
{
    double ax = fabs(n[0]), ay = fabs(n[1]), az = fabs(n[2]);
    double e[3] = { 0, 0, 0 };
    e[(ax <= ay && ax <= az) ? 0 : (ay <= az ? 1 : 2)] = 1.0;
    t1[0] = n[1] * e[2] - n[2] * e[1]; t1[1] = n[2] * e[0] - n[0] * e[2]; t1[2] = n[0] * e[1] - n[1] * e[0];
    double l = sqrt(bk_dot3d(t1, t1));
    for (int k = 0; k < 3; ++k) t1[k] /= l;
    t2[0] = n[1] * t1[2] - n[2] * t1[1]; t2[1] = n[2] * t1[0] - n[0] * t1[2]; t2[2] = n[0] * t1[1] - n[1] * t1[0];
}

static double hcross(bk_hpt o, bk_hpt a, bk_hpt b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

static int hpt_less(bk_hpt a, bk_hpt b) { return a.x < b.x || (a.x == b.x && a.y < b.y); }

/* Sorts p[0..n) by (x, y): quicksort on the median of three, insertion sort below 24 points, the
 * smaller side first (log n stack). qsort's indirect calls cost a chart's hull as much again. */
static void hpt_sort(bk_hpt *p, int n)
{
    while (n > 24) {
        bk_hpt a = p[0], b = p[n / 2], c = p[n - 1], piv;
        if (hpt_less(a, b)) piv = hpt_less(b, c) ? b : (hpt_less(a, c) ? c : a);
        else piv = hpt_less(a, c) ? a : (hpt_less(b, c) ? c : b);
        int i = 0, j = n - 1;
        for (;;) {
            while (hpt_less(p[i], piv)) i++;
            while (hpt_less(piv, p[j])) j--;
            if (i >= j) break;
            bk_hpt x = p[i]; p[i] = p[j]; p[j] = x;
            i++; j--;
        }
        /* [0, j] <= piv <= [j + 1, n) */
        int left = j + 1;
        if (left < n - left) { hpt_sort(p, left); p += left; n -= left; }
        else { hpt_sort(p + left, n - left); n = left; }
    }
    for (int i = 1; i < n; ++i) {
        bk_hpt x = p[i];
        int j = i - 1;
        while (j >= 0 && hpt_less(x, p[j])) { p[j + 1] = p[j]; j--; }
        p[j + 1] = x;
    }
}

/* Convex hull (Andrew's monotone chain) of p[0..n) (sorted in place) into h, which needs room
 * for 2 n points; returns the hull size. */
int bk_atlas_convex_hull(bk_hpt *p, int n, bk_hpt *h)
{
    if (n < 3) { for (int i = 0; i < n; ++i) h[i] = p[i]; return n; }
    if (n <= 48) {  /* merging two small hulls: insertion sort beats qsort's indirect calls */
        for (int i = 1; i < n; ++i) {
            bk_hpt x = p[i];
            int j = i - 1;
            while (j >= 0 && (p[j].x > x.x || (p[j].x == x.x && p[j].y > x.y))) { p[j + 1] = p[j]; j--; }
            p[j + 1] = x;
        }
    } else {
        /* Akl-Toussaint: points strictly inside the octagon of the extreme points in x, y, x + y
         * and x - y are no hull vertices; a chart's interior vertices (most of its corners) go
         * before the sort */
        int ex[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        for (int i = 1; i < n; ++i) {
            bk_hpt q = p[i];
            if (q.x > p[ex[0]].x) ex[0] = i;
            if (q.x + q.y > p[ex[1]].x + p[ex[1]].y) ex[1] = i;
            if (q.y > p[ex[2]].y) ex[2] = i;
            if (q.y - q.x > p[ex[3]].y - p[ex[3]].x) ex[3] = i;
            if (q.x < p[ex[4]].x) ex[4] = i;
            if (q.x + q.y < p[ex[5]].x + p[ex[5]].y) ex[5] = i;
            if (q.y < p[ex[6]].y) ex[6] = i;
            if (q.x - q.y > p[ex[7]].x - p[ex[7]].y) ex[7] = i;
        }
        bk_hpt oct[8];
        int no = 0;
        for (int k = 0; k < 8; ++k) {
            bk_hpt q = p[ex[k]];
            if (no && oct[no - 1].x == q.x && oct[no - 1].y == q.y) continue;
            oct[no++] = q;
        }
        if (no > 1 && oct[no - 1].x == oct[0].x && oct[no - 1].y == oct[0].y) no--;
        if (no >= 3) {
            int m = 0;
            for (int i = 0; i < n; ++i) {
                int inside = 1;
                for (int k = 0; k < no && inside; ++k) inside = hcross(oct[k], oct[(k + 1) % no], p[i]) > 0;
                if (!inside) p[m++] = p[i];
            }
            n = m;
        }
        hpt_sort(p, n);
    }
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
 * bk_atlas_convex_hull makes it) into its minimal-area bounding rectangle: that rectangle has a side along
 * a hull edge (Freeman & Shapira 1975); rotating calipers (Toussaint 1983) find the extreme points
 * for every edge in O(hn) altogether. */
static double hdot(bk_hpt a, double ex, double ey) { return a.x * ex + a.y * ey; }

void bk_atlas_rect_from_hull(const bk_hpt *H, int hn, double *out_cs, double *out_sn, double *out_w, double *out_h)
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
        bk_hpt a = H[i], b = H[(i + 1) % hn];
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
void bk_atlas_apply_rect(double *loc, const uint32_t *tris, uint32_t n, bk_hpt *H, int hn, double cs, double sn,
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

/* bk_atlas_fit_rect: bk_atlas_rect_from_hull + bk_atlas_apply_rect for a set of triangles. */
int bk_atlas_fit_rect(double *loc, const uint32_t *tris, uint32_t n, double *out_w, double *out_h, bk_hpt **pts, size_t *pts_cap)
{
    size_t np = 3 * (size_t)n;
    if (np * 3 + 1 > *pts_cap) {  /* points, then up to 2 np hull slots (monotone chain) */
        bk_hpt *p = realloc(*pts, sizeof(bk_hpt) * (np * 3 + 1));
        if (!p) return -1;
        *pts = p; *pts_cap = np * 3 + 1;
    }
    bk_hpt *P = *pts, *H = *pts + np;
    for (uint32_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            P[3 * i + k].x = loc[6 * (size_t)tris[i] + 2 * k];
            P[3 * i + k].y = loc[6 * (size_t)tris[i] + 2 * k + 1];
        }
    int hn = bk_atlas_convex_hull(P, (int)np, H);
    double cs, sn, w, h;
    bk_atlas_rect_from_hull(H, hn, &cs, &sn, &w, &h);
    bk_atlas_apply_rect(loc, tris, n, H, hn, cs, sn, out_w, out_h);
    return 0;
}

/* Projects chart c along its axis into its plane, then fits its rectangle. */
/* Projects chart c along its axis into its plane (no rectangle fitted). */
static void chart_project_only(const bk_scene *s, charting *C, uint32_t ci)
{
    chart *c = &C->charts[ci];
    const double *n = c->n;
    double t1[3], t2[3];
    bk_atlas_plane_frame(n, t1, t2);
    double o[3];
    bk_atlas_pos_of(s, C->chart_tris[c->first], 0, o);
    for (uint32_t i = 0; i < c->count; ++i) {
        uint32_t t = C->chart_tris[c->first + i];
        for (int k = 0; k < 3; ++k) {
            double p[3];
            bk_atlas_pos_of(s, t, k, p);
            for (int d = 0; d < 3; ++d) p[d] -= o[d];
            C->loc[6 * (size_t)t + 2 * k] = bk_dot3d(p, t1);
            C->loc[6 * (size_t)t + 2 * k + 1] = bk_dot3d(p, t2);
        }
    }
}

int bk_atlas_chart_project(const bk_scene *s, charting *C, uint32_t ci, bk_hpt **pts, size_t *pts_cap)
{
    chart *c = &C->charts[ci];
    chart_project_only(s, C, ci);
    return bk_atlas_fit_rect(C->loc, C->chart_tris + c->first, c->count, &c->w, &c->h, pts, pts_cap);
}


/* (key, index) is a total order, so it has one sorted result: stably by index (skipped when the
 * indices already ascend), then stably by key (sort.h, on the pool when large), is qsort's. */
void bk_key_idx_sort(key_idx *a, size_t n)
{
    int ascending = 1;
    for (size_t i = 1; i < n && ascending; ++i)
        if (a[i].idx <= a[i - 1].idx) ascending = 0;
    bk_sort_spec by_idx = bk_sort_spec_of(sizeof *a, offsetof(key_idx, idx), 4);
    bk_sort_spec by_key = bk_sort_spec_of(sizeof *a, offsetof(key_idx, key), 8);
    by_idx.parallel = by_key.parallel = 1;
    if ((!ascending && bk_sort_radix(a, n, &by_idx)) || bk_sort_radix(a, n, &by_key))
        qsort(a, n, sizeof *a, bk_key_idx_cmp);
}

/* Triangles by decreasing area (ties by index): positive doubles order like their bit patterns. */
void bk_atlas_sort_by_area_desc(uint32_t *t, uint32_t n, const double *area, key_idx *tmp)
{
    for (uint32_t i = 0; i < n; ++i) {
        double a = area[t[i]];
        uint64_t bits;
        memcpy(&bits, &a, 8);
        tmp[i].key = ~bits;
        tmp[i].idx = t[i];
    }
    bk_key_idx_sort(tmp, n);
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
        const double *ns = bk_atlas_tri_n(g, seed);
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
                const double *nu = bk_atlas_tri_n(g, u);
                if (bk_dot3d(nu, ns) < cos_cone || bk_dot3d(nu, avg) < cos_cone) continue;
                C->tri_chart[u] = ci;
                queue[qt++] = u;
                for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
                double l = sqrt(bk_dot3d(sum, sum));
                if (l > 0) for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
            }
        }
        c.count = *ntris - c.first;
        for (int k = 0; k < 3; ++k) c.n[k] = avg[k];
        if (bk_atlas_chart_push(C, c)) return -1;
    }
    return 0;
}

/* An empty charting for T triangles: its arrays allocated (NULL where out of memory). */
void bk_atlas_charting_alloc(charting *C, uint32_t T)
{
    memset(C, 0, sizeof *C);
    C->tri_chart = malloc(sizeof(uint32_t) * (size_t)T + 1);
    C->chart_tris = malloc(sizeof(uint32_t) * (size_t)T + 1);
    C->loc = calloc(6 * (size_t)T + 1, sizeof(double));
}

typedef struct mk_ws { double *xy; size_t xy_cap; bk_hpt *pts; size_t pts_cap; pair_list pairs; uint32_t *out; size_t out_cap; } mk_ws;

typedef struct mk_ctx {
    const bk_scene *s;
    const tri_geom *g;
    charting *C;
    double cos_cone;
    uint8_t *evicted;
    mk_ws *ws;
    uint32_t first;          /* the first new chart */
    uint32_t *end;           /* per new chart: one past its evicted triangles in chart_tris */
    uint64_t *work;          /* per new chart: its overlap search's steps */
} mk_ctx;

#define MK_ERR UINT64_MAX  /* work[k] of a chart whose check ran out of memory */

/* A new planar chart projected, its tilted and overlapping triangles evicted (tri_chart BK_NONE,
 * left in chart_tris after the kept ones, in their order) and the rest projected again. Writes
 * only the chart's own triangles' entries, so charts run side by side. */
static void mk_check_fn(void *ctx, size_t begin, size_t end, int worker)
{
    mk_ctx *m = ctx;
    charting *C = m->C;
    mk_ws *w = &m->ws[worker];
    for (size_t k = begin; k < end; ++k) {
        uint32_t ci = m->first + (uint32_t)k;
        chart *c = &C->charts[ci];
        m->end[k] = c->first + c->count;
        m->work[k] = 0;
        if (bk_atlas_chart_project(m->s, C, ci, &w->pts, &w->pts_cap)) { m->work[k] = MK_ERR; continue; }
        if (c->count < 2) continue;
        /* the mean normal drifted while the chart grew: triangles now tilted more than the cone
         * from it leave too (never the seed, so every round makes progress) */
        uint32_t nev = 0;
        for (uint32_t i = 1; i < c->count; ++i) {
            uint32_t t = C->chart_tris[c->first + i];
            if (bk_dot3d(bk_atlas_tri_n(m->g, t), c->n) < m->cos_cone) { m->evicted[t] = 1; nev++; }
        }
        if (6 * (size_t)c->count > w->xy_cap) {
            size_t cap = 6 * (size_t)c->count * 2;
            double *p = realloc(w->xy, sizeof(double) * cap);
            if (!p) { m->work[k] = MK_ERR; continue; }
            w->xy = p;
            w->xy_cap = cap;
        }
        for (uint32_t i = 0; i < c->count; ++i)
            memcpy(w->xy + 6 * (size_t)i, C->loc + 6 * (size_t)C->chart_tris[c->first + i], 6 * sizeof(double));
        w->pairs.n = 0;
        if (bk_atlas_find_overlaps(w->xy, c->count, 1e-9 * (c->w + c->h), &w->pairs, &m->work[k])) { m->work[k] = MK_ERR; continue; }
        if (!w->pairs.n && !nev) continue;
        /* pairs come sorted by (i, j): when i's pairs are reached, whether i stays is settled, so
         * j leaves iff it overlaps an earlier triangle that stays, whatever found the pairs */
        for (size_t p = 0; p < w->pairs.n; ++p) {
            uint32_t ti = C->chart_tris[c->first + w->pairs.p[2 * p]], tj = C->chart_tris[c->first + w->pairs.p[2 * p + 1]];
            if (m->evicted[ti] || m->evicted[tj]) continue;
            m->evicted[tj] = 1;  /* j > i: added later */
            nev++;
        }
        /* compact the chart's list; evicted triangles wait for the next round */
        if (nev > w->out_cap) {
            uint32_t *p = realloc(w->out, sizeof(uint32_t) * 2 * (size_t)nev);
            if (!p) { m->work[k] = MK_ERR; continue; }
            w->out = p;
            w->out_cap = 2 * (size_t)nev;
        }
        uint32_t keep = 0, nout = 0;
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C->chart_tris[c->first + i];
            if (m->evicted[t]) { m->evicted[t] = 0; C->tri_chart[t] = BK_NONE; w->out[nout++] = t; }
            else C->chart_tris[c->first + keep++] = t;
        }
        memcpy(C->chart_tris + c->first + keep, w->out, sizeof(uint32_t) * nout);
        c->count = keep;
        if (bk_atlas_chart_project(m->s, C, ci, &w->pts, &w->pts_cap)) { m->work[k] = MK_ERR; continue; }
    }
}

int bk_atlas_charts_make(const bk_scene *s, const tri_geom *g, const adjacency *A, double cone_deg, charting *C,
                       uint64_t *work)
{
    uint32_t T = s->tri_count;
    double cos_cone = cos(cone_deg * BK_ATLAS_PI / 180.0);
    int prefilled = C->tri_chart != NULL;  /* charts of bk_atlas_charts_smooth stay */
    if (!prefilled) {
        bk_atlas_charting_alloc(C, T);
    }
    uint32_t *seeds = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *ctmp = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint8_t *evicted = calloc((size_t)T + 1, 1);
    key_idx *kt = malloc(sizeof(key_idx) * (size_t)T + 1);
    int threads = bk_pool_threads();
    mk_ws *mws = calloc((size_t)threads, sizeof(mk_ws));
    uint32_t *orig_end = NULL;
    uint64_t *cwork = NULL;
    size_t orig_cap = 0;
    int rc = -1;
    if (!C->tri_chart || !C->chart_tris || !C->loc || !seeds || !queue || !ctmp || !evicted || !kt || !mws) goto done;
    uint32_t nseeds = 0, ntris = 0;
    for (uint32_t t = 0; t < T; ++t) {
        if (!prefilled) C->tri_chart[t] = BK_NONE;
        if (!g->degen[t] && C->tri_chart[t] == BK_NONE) seeds[nseeds++] = t;
    }
    for (uint32_t ci = 0; ci < C->count; ++ci) ntris += C->charts[ci].count;
    bk_atlas_sort_by_area_desc(seeds, nseeds, g->area, kt);
    uint32_t first_new = C->count;
    for (int round = 0; nseeds; ++round) {
        if (grow_charts(g, A, C, seeds, nseeds, cos_cone, queue, &ntris)) goto done;
        nseeds = 0;
        /* project the new charts and evict the later triangle of every overlapping pair: each
         * chart on its own (on the pool), its evicted triangles left after its kept ones */
        if (C->count > first_new) {
            mk_ctx m;
            m.s = s; m.g = g; m.C = C; m.cos_cone = cos_cone; m.evicted = evicted; m.ws = mws; m.first = first_new;
            m.end = orig_end;
            m.work = cwork;
            if (C->count - first_new > orig_cap) {
                size_t cap = 2 * (size_t)(C->count - first_new);
                uint32_t *p = realloc(orig_end, sizeof(uint32_t) * cap);
                uint64_t *q = p ? realloc(cwork, sizeof(uint64_t) * cap) : NULL;
                if (p) orig_end = p;
                if (q) cwork = q;
                if (!p || !q) goto done;
                orig_cap = cap;
                m.end = orig_end;
                m.work = cwork;
            }
            bk_parallel_for(C->count - first_new, 8, mk_check_fn, &m);
            for (uint32_t ci = first_new; ci < C->count; ++ci) {
                const chart *c = &C->charts[ci];
                if (cwork[ci - first_new] == MK_ERR) goto done;
                *work += cwork[ci - first_new];
                for (uint32_t i = c->first + c->count; i < orig_end[ci - first_new]; ++i) seeds[nseeds++] = C->chart_tris[i];
            }
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
        bk_atlas_sort_by_area_desc(seeds, nseeds, g->area, kt);
        BK_CHECK(round < 10000);
    }
    rc = 0;
done:
    free(seeds); free(queue); free(ctmp); free(evicted); free(kt);
    for (int w = 0; mws && w < threads; ++w) { free(mws[w].xy); free(mws[w].pts); free(mws[w].pairs.p); free(mws[w].out); }
    free(mws); free(orig_end); free(cwork);
    return rc;
}


/* Re-growing charts that fill their rectangle poorly (rings, frames, L and U shapes: the
 * rectangle is what the packer pays for). The chart's triangles grow again, breadth-first from
 * the largest, and a triangle joins only while the part's triangles fill at least FILL_MIN of its
 * bounding box in the chart's frame (or the box does not grow): a frame falls apart into its four
 * straight strips, a ring into arcs. The parts replace the chart when their rectangles, each grown
 * by the padding (pad_w: world units at the expected scale), cost less than the chart's. */
#define FILL_MIN 0.5

static double box_area(const double *b) { return (b[2] - b[0]) * (b[3] - b[1]); }

/* Split, first pass: chart ci's parts, grown in its own ranges of queue and kt (its triangles'
 * places in chart_tris), part per triangle; *nparts 0 when it stays whole. Reads only chart ci's
 * triangles (a neighbour of another chart, split or not, is never ci), so charts run side by side. */
typedef struct split_ctx {
    const adjacency *A;
    const charting *C;
    double pad_w;
    uint32_t *queue, *part, *nparts;
    key_idx *kt;
} split_ctx;

static void split_parts_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const split_ctx *x = ctx;
    const adjacency *A = x->A;
    const charting *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        chart c = C->charts[ci];
        x->nparts[ci] = 0;
        if (c.count < 3) continue;
        double area = 0;
        for (uint32_t i = 0; i < c.count; ++i) area += bk_tri2_area(C->loc + 6 * (size_t)C->chart_tris[c.first + i]);
        if (area >= FILL_MIN * c.w * c.h) continue;
        uint32_t *part = x->part, *queue = x->queue + c.first;
        key_idx *kt = x->kt + c.first;
        /* seeds by decreasing projected area */
        for (uint32_t i = 0; i < c.count; ++i) {
            uint32_t t = C->chart_tris[c.first + i];
            double a = bk_tri2_area(C->loc + 6 * (size_t)t);
            uint64_t bits;
            memcpy(&bits, &a, 8);
            kt[i].key = ~bits; kt[i].idx = t;
            part[t] = BK_NONE;
        }
        bk_key_idx_sort(kt, c.count);
        uint32_t nparts = 0, w = 0;
        double cost = 0;
        for (uint32_t si = 0; si < c.count; ++si) {
            uint32_t seed = kt[si].idx;
            if (part[seed] != BK_NONE) continue;
            double box[4], pa = bk_tri2_area(C->loc + 6 * (size_t)seed);
            bk_box_of_tri(C->loc + 6 * (size_t)seed, box);
            uint32_t qh = w, qt = w;
            queue[qt++] = seed;
            part[seed] = nparts;
            while (qh < qt) {
                uint32_t t = queue[qh++];
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                    uint32_t u = A->adj[p];
                    if (C->tri_chart[u] != ci || part[u] != BK_NONE) continue;
                    double bu[4], nb[4], au = bk_tri2_area(C->loc + 6 * (size_t)u);
                    bk_box_of_tri(C->loc + 6 * (size_t)u, bu);
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
            cost += (box[2] - box[0] + x->pad_w) * (box[3] - box[1] + x->pad_w);
            w = qt;
            nparts++;
        }
        if (nparts < 2 || cost >= (c.w + x->pad_w) * (c.h + x->pad_w)) continue;
        x->nparts[ci] = nparts;
    }
}

int bk_atlas_charts_split(const bk_scene *s, const adjacency *A, charting *C, double pad_w, uint32_t *queue, key_idx *kt,
                        uint32_t *part)
{
    bk_hpt *pts = NULL;
    size_t pts_cap = 0;
    uint32_t n0 = C->count;
    uint32_t *np = malloc(sizeof(uint32_t) * ((size_t)n0 + 1));
    if (!np) return -1;
    split_ctx x = { A, C, pad_w, queue, part, np, kt };
    bk_parallel_for(n0, 16, split_parts_fn, &x);
    /* then the splits, in chart order (new charts numbered as one loop numbers them) */
    for (uint32_t ci = 0; ci < n0; ++ci) {
        uint32_t nparts = np[ci];
        if (!nparts) continue;
        chart c = C->charts[ci];
        const uint32_t *q = queue + c.first;
        /* q[0 .. count) holds the triangles part by part: they become the new lists */
        memcpy(C->chart_tris + c.first, q, sizeof(uint32_t) * c.count);
        uint32_t start = 0;
        for (uint32_t pi = 0; pi < nparts; ++pi) {
            uint32_t end = start;
            while (end < c.count && part[q[end]] == pi) end++;
            chart nc = c;
            nc.first = c.first + start;
            nc.count = end - start;
            uint32_t idx = ci;
            if (pi == 0) C->charts[ci] = nc;
            else {
                idx = C->count;
                if (bk_atlas_chart_push(C, nc)) { free(pts); free(np); return -1; }
                for (uint32_t i = start; i < end; ++i) C->tri_chart[q[i]] = idx;
            }
            /* a smooth chart's parts keep its unfolding; a planar chart's are projected again
             * along its axis (the same projection), both turned to their own rectangles */
            if (nc.smooth ? bk_atlas_fit_rect(C->loc, C->chart_tris + nc.first, nc.count, &C->charts[idx].w, &C->charts[idx].h, &pts, &pts_cap)
                          : bk_atlas_chart_project(s, C, idx, &pts, &pts_cap)) { free(pts); free(np); return -1; }
            start = end;
        }
    }
    free(pts);
    free(np);
    return 0;
}

/* Merging neighbouring charts by unfolding. A chart's layout is rotated about the edge it shares
 * with a neighbour into the neighbour's plane, like a box's faces laid out as a cross: every
 * triangle keeps its own projection (so its texel density), the shared edge stays continuous.
 * Worth it where the padding dominates (thousands of small boxes' faces in a 1024 atlas) or where
 * strips line up end to end. A merge is kept when the shared edge has the same length in both
 * layouts, nothing overlaps, and the union's rectangle grown by the padding costs less than the
 * two apart. Smallest charts first; each keeps merging while that pays. */
typedef struct hull_set { bk_hpt **p; int *n; } hull_set;

/* The convex hull of a chart's corners (linked list from head) into hs slot ci. */
static int hull_of_chart(const charting *C, const uint32_t *next, uint32_t head, uint32_t count, hull_set *hs, uint32_t ci,
                         bk_hpt **tmp, size_t *tmp_cap)
{
    size_t np = 3 * (size_t)count;
    if (np > *tmp_cap) {
        bk_hpt *p = realloc(*tmp, sizeof(bk_hpt) * np);
        if (!p) return -1;
        *tmp = p; *tmp_cap = np;
    }
    size_t k = 0;
    for (uint32_t x = head; x != BK_NONE; x = next[x])
        for (int j = 0; j < 3; ++j) { (*tmp)[k].x = C->loc[6 * (size_t)x + 2 * j]; (*tmp)[k].y = C->loc[6 * (size_t)x + 2 * j + 1]; k++; }
    bk_hpt *h = realloc(hs->p[ci], sizeof(bk_hpt) * (2 * k + 1));
    if (!h) return -1;
    hs->p[ci] = h;
    hs->n[ci] = bk_atlas_convex_hull(*tmp, (int)k, h);
    return 0;
}

typedef struct hull_ctx {
    const charting *C;
    const uint32_t *next, *head;
    hull_set *hs;
    bk_hpt **tmp;
    size_t *cap;
    _Atomic int err;
} hull_ctx;

static void hull_fn(void *ctx, size_t begin, size_t end, int worker)
{
    hull_ctx *h = ctx;
    for (size_t ci = begin; ci < end; ++ci)
        if (hull_of_chart(h->C, h->next, h->head[ci], h->C->charts[ci].count, h->hs, (uint32_t)ci, &h->tmp[worker], &h->cap[worker]))
            h->err = 1;
}

typedef struct merge_cand { double gain; uint32_t b, t, u; double cs, sn, max, may, mbx, mby; } merge_cand;
static int cand_cmp(const void *pa, const void *pb)
{
    const merge_cand *a = pa, *b = pb;
    if (a->gain != b->gain) return a->gain > b->gain ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}


/* What a merge reads, and one thread's scratch for looking at one chart's merges. */
typedef struct merge_state {
    const bk_scene *s;
    const uint32_t *weld;
    const adjacency *A;
    const charting *C;
    double pad_w;
    const uint32_t *head, *next;
    const uint8_t *dead;
    const hull_set *hs;
} merge_state;

typedef struct merge_scratch {
    uint32_t *stamp, visit;  /* per chart: the look that met it last */
    merge_cand *cand;        /* charts + 1 */
    bk_hpt *hp;
    size_t hp_cap;
    double *tl;              /* the union's corners: 6 per triangle */
    uint32_t *ids, cap;      /* its triangles; room for cap */
    overlap_scratch ovs;
    uint32_t *seen, nseen, seen_cap;  /* the charts the look met (when seen_cap is not 0) */
} merge_scratch;

static void merge_scratch_free(merge_scratch *S)
{
    free(S->stamp); free(S->cand); free(S->hp); free(S->tl); free(S->ids); free(S->seen);
    bk_atlas_overlap_scratch_free(&S->ovs);
    memset(S, 0, sizeof *S);
}

/* Chart ci's triangles, then b's turned onto ci's layout by m, into S->tl and S->ids; their count,
 * or 0 out of memory. */
static uint32_t merge_union(const merge_state *M, uint32_t ci, const merge_cand *m, merge_scratch *S)
{
    const charting *C = M->C;
    uint32_t need = C->charts[ci].count + C->charts[m->b].count;
    if (need > S->cap) {
        uint32_t cap = 2 * need;
        double *tl = realloc(S->tl, sizeof(double) * 6 * cap);
        if (tl) S->tl = tl;
        uint32_t *ids = realloc(S->ids, sizeof(uint32_t) * cap);
        if (ids) S->ids = ids;
        if (!tl || !ids) return 0;
        S->cap = cap;
    }
    uint32_t cnt = 0;
    double *tl = S->tl;
    for (uint32_t x = M->head[ci]; x != BK_NONE; x = M->next[x]) {
        memcpy(tl + 6 * (size_t)cnt, C->loc + 6 * (size_t)x, 6 * sizeof(double));
        S->ids[cnt++] = x;
    }
    for (uint32_t x = M->head[m->b]; x != BK_NONE; x = M->next[x]) {
        const double *L = C->loc + 6 * (size_t)x;
        for (int j = 0; j < 3; ++j) {
            double dx = L[2 * j] - m->mbx, dy = L[2 * j + 1] - m->mby;
            tl[6 * (size_t)cnt + 2 * j] = m->max + m->cs * dx - m->sn * dy;
            tl[6 * (size_t)cnt + 2 * j + 1] = m->may + m->sn * dx + m->cs * dy;
        }
        S->ids[cnt++] = x;
    }
    return cnt;
}

/* Chart ci's best merge now: its neighbouring charts, each with one shared edge, the gain of each
 * from the two convex hulls alone, and the best of up to 8 whose union has no overlap. 1 with it
 * in *out (its union in S->tl, S->ids: *m_tris triangles), 0 none, -1 out of memory. It reads the
 * charts ci and those it meets (S->seen) only. */
static int merge_eval(const merge_state *M, uint32_t ci, merge_scratch *S, merge_cand *out, uint32_t *m_tris, uint64_t *work)
{
    const bk_scene *s = M->s;
    const uint32_t *weld = M->weld;
    const adjacency *A = M->A;
    const charting *C = M->C;
    const hull_set *hs = M->hs;
    double pad_w = M->pad_w;
    const chart *c = &C->charts[ci];
    double cost_c = (c->w + pad_w) * (c->h + pad_w);
    merge_cand *cand = S->cand;
    uint32_t nc = 0, visit = ++S->visit;
    S->nseen = 0;
    for (uint32_t t = M->head[ci]; t != BK_NONE; t = M->next[t])
        for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
            uint32_t u = A->adj[p], b = C->tri_chart[u];
            if (b == ci || S->stamp[b] == visit) continue;
            if (S->stamp[b] != visit + 1) {  /* met for the first time in this look */
                S->stamp[b] = visit + 1;
                if (S->seen_cap) {
                    if (S->nseen == S->seen_cap) {
                        uint32_t cap = 2 * S->seen_cap, *q = realloc(S->seen, sizeof(uint32_t) * cap);
                        if (!q) return -1;
                        S->seen = q; S->seen_cap = cap;
                    }
                    S->seen[S->nseen++] = b;
                }
            }
            if (M->dead[b]) continue;
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
            S->stamp[b] = visit;
            merge_cand *m = &cand[nc];
            double ang = atan2(qay - pay, qax - pax) - atan2(qby - pby, qbx - pbx);
            m->cs = cos(ang); m->sn = sin(ang);
            m->max = 0.5 * (pax + qax); m->may = 0.5 * (pay + qay);
            m->mbx = 0.5 * (pbx + qbx); m->mby = 0.5 * (pby + qby);
            m->b = b; m->t = t; m->u = u;
            int na = hs->n[ci], nb = hs->n[b];
            if ((size_t)(3 * (na + nb)) + 1 > S->hp_cap) {  /* points, then 2 (na + nb) hull slots */
                size_t cap = 3 * (size_t)(na + nb) + 64;
                bk_hpt *q = realloc(S->hp, sizeof(bk_hpt) * cap);
                if (!q) return -1;
                S->hp = q; S->hp_cap = cap;
            }
            bk_hpt *hp = S->hp;
            memcpy(hp, hs->p[ci], sizeof(bk_hpt) * (size_t)na);
            for (int j = 0; j < nb; ++j) {
                double dx = hs->p[b][j].x - m->mbx, dy = hs->p[b][j].y - m->mby;
                hp[na + j].x = m->max + m->cs * dx - m->sn * dy;
                hp[na + j].y = m->may + m->sn * dx + m->cs * dy;
            }
            int hn = bk_atlas_convex_hull(hp, na + nb, hp + na + nb);
            double w, h, rcs, rsn;
            bk_atlas_rect_from_hull(hp + na + nb, hn, &rcs, &rsn, &w, &h);
            const chart *cb = &C->charts[b];
            m->gain = cost_c + (cb->w + pad_w) * (cb->h + pad_w) - (w + pad_w) * (h + pad_w);
            if (m->gain > 0.02 * cost_c) nc++;
        }
    S->visit++;  /* visit + 1 marked charts met */
    if (!nc) return 0;
    qsort(cand, nc, sizeof(merge_cand), cand_cmp);
    /* the best merge whose union has no overlap */
    for (uint32_t k = 0; k < nc && k < 8; ++k) {
        const merge_cand *m = &cand[k];
        uint32_t cnt = merge_union(M, ci, m, S);
        if (!cnt) return -1;
        int ov = bk_atlas_sets_overlap(S->tl, c->count, S->tl + 6 * (size_t)c->count, cnt - c->count,
                                       1e-8 * (c->w + c->h + C->charts[m->b].w + C->charts[m->b].h), &S->ovs, work);
        if (ov < 0) return -1;
        if (!ov) { *out = *m; *m_tris = cnt; return 1; }
    }
    return 0;
}

/* Chart ci's triangles as a list linked through next, in chart order: head[ci], and where given
 * tail[ci], cnt[ci] and prev (the merge, tidy, absorb and join passes keep charts so while they
 * move triangles between them). */
void bk_atlas_chart_link(const charting *C, uint32_t ci, uint32_t *head, uint32_t *tail, uint32_t *cnt, uint32_t *next,
                       uint32_t *prev)
{
    const chart *c = &C->charts[ci];
    head[ci] = c->count ? C->chart_tris[c->first] : BK_NONE;
    if (tail) tail[ci] = c->count ? C->chart_tris[c->first + c->count - 1] : BK_NONE;
    if (cnt) cnt[ci] = c->count;
    for (uint32_t i = 0; i < c->count; ++i) {
        uint32_t t = C->chart_tris[c->first + i];
        next[t] = i + 1 < c->count ? C->chart_tris[c->first + i + 1] : BK_NONE;
        if (prev) prev[t] = i ? C->chart_tris[c->first + i - 1] : BK_NONE;
    }
}

/* Speculation: every chart's first look (merge_eval) made side by side on the charts as they are
 * before any merge; the serial loop takes a chart's answer when neither it nor a chart it met has
 * changed since (merged, or merged into another), else looks again. A look reads only those
 * charts, so the answer is the one it would find: the merges are those of the serial loop. */
#define MERGE_SPEC_THREADS 4

typedef struct merge_spec {
    const merge_state *M;
    merge_scratch *S;        /* per worker */
    merge_cand *best;        /* per chart */
    int8_t *res;             /* per chart: merge_eval's return */
    uint64_t *work;          /* per chart: its overlap work */
    uint32_t **seen, *nseen; /* per chart: the charts it met */
} merge_spec;

static void merge_spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const merge_spec *x = ctx;
    merge_scratch *S = &x->S[worker];
    for (size_t ci = begin; ci < end; ++ci) {
        uint32_t m_tris = 0;
        x->work[ci] = 0;
        x->res[ci] = (int8_t)merge_eval(x->M, (uint32_t)ci, S, &x->best[ci], &m_tris, &x->work[ci]);
        x->nseen[ci] = S->nseen;
        x->seen[ci] = x->res[ci] >= 0 && S->nseen ? malloc(sizeof(uint32_t) * S->nseen) : NULL;
        if (x->seen[ci]) memcpy(x->seen[ci], S->seen, sizeof(uint32_t) * S->nseen);
        else if (S->nseen) x->res[ci] = -1;
    }
}

int bk_atlas_charts_merge(const bk_scene *s, const uint32_t *weld, const adjacency *A, charting *C, double pad_w,
                        uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count;
    int threads = bk_pool_threads();
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *iota = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint8_t *dead = calloc((size_t)n + 1, 1), *touched = calloc((size_t)n + 1, 1);
    key_idx *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    hull_set hs = { calloc((size_t)n + 1, sizeof(bk_hpt *)), calloc((size_t)n + 1, sizeof(int)) };
    merge_scratch *S = calloc((size_t)threads, sizeof(merge_scratch));
    merge_spec sp = { NULL, S, malloc(sizeof(merge_cand) * ((size_t)n + 1)), malloc((size_t)n + 1), malloc(sizeof(uint64_t) * ((size_t)n + 1)),
                      calloc((size_t)n + 1, sizeof(uint32_t *)), malloc(sizeof(uint32_t) * ((size_t)n + 1)) };
    int rc = -1;
    if (!next || !head || !tail || !iota || !dead || !touched || !order || !hs.p || !hs.n || !S || !sp.best || !sp.res || !sp.work ||
        !sp.seen || !sp.nseen)
        goto done;
    for (int w = 0; w < threads; ++w) {
        S[w].stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
        S[w].cand = malloc(sizeof(merge_cand) * ((size_t)n + 1));
        S[w].seen_cap = 16;
        S[w].seen = malloc(sizeof(uint32_t) * S[w].seen_cap);
        if (!S[w].stamp || !S[w].cand || !S[w].seen) goto done;
        for (uint32_t ci = 0; ci < n; ++ci) S[w].stamp[ci] = BK_NONE;
    }
    for (uint32_t t = 0; t < T; ++t) iota[t] = t;
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, ci, head, tail, NULL, next, NULL);
        double cost = (c->w + pad_w) * (c->h + pad_w);
        uint64_t bits;
        memcpy(&bits, &cost, 8);
        order[ci].key = bits;
        order[ci].idx = ci;
    }
    {
        /* every chart's hull, side by side (scratch per worker; a chart writes its own slot) */
        hull_ctx hc = { C, next, head, &hs, calloc((size_t)threads, sizeof(bk_hpt *)), calloc((size_t)threads, sizeof(size_t)), 0 };
        if (!hc.tmp || !hc.cap) { free(hc.tmp); free(hc.cap); goto done; }
        bk_parallel_for(n, 16, hull_fn, &hc);
        for (int w = 0; w < threads; ++w) free(hc.tmp[w]);
        free(hc.tmp); free(hc.cap);
        if (hc.err) goto done;
    }
    merge_state M = { s, weld, A, C, pad_w, head, next, dead, &hs };
    sp.M = &M;
    /* (fewer than MERGE_SPEC_THREADS: every look made in the loop; speculation also looks at the
     * charts that an earlier merge takes before their turn, which 2 threads do not hide:
     * sibenik's merges 0.042 -> 0.054 s on 2 threads) */
    if (threads >= MERGE_SPEC_THREADS) bk_parallel_for(n, 4, merge_spec_fn, &sp);
    else memset(sp.res, 0xFF, n);
    S[0].seen_cap = 0;  /* the serial loop's looks: no list */
    bk_key_idx_sort(order, n);
    for (uint32_t oi = 0; oi < n; ++oi) {
        uint32_t ci = order[oi].idx;
        for (int round = 0; round < 16 && !dead[ci]; ++round) {
            chart *c = &C->charts[ci];
            merge_cand mc;
            uint32_t m_tris = 0;
            int r = -2;
            if (round == 0 && sp.res[ci] >= 0 && !touched[ci]) {
                r = sp.res[ci];
                for (uint32_t k = 0; k < sp.nseen[ci] && r != -2; ++k)
                    if (touched[sp.seen[ci][k]]) r = -2;
            }
            if (r != -2) {
                /* the speculative look stands: its work, and its union made again */
                *work += sp.work[ci];
                if (r == 1) { mc = sp.best[ci]; m_tris = merge_union(&M, ci, &mc, &S[0]); if (!m_tris) goto done; }
            } else r = merge_eval(&M, ci, &S[0], &mc, &m_tris, work);
            if (r < 0) goto done;
            if (r == 0) break;
            const merge_cand *m = &mc;
            uint32_t b = m->b;
            /* the union's hull from the two hulls, its rectangle, applied to every corner */
            int na = hs.n[ci], nb = hs.n[b];
            if ((size_t)(3 * (na + nb)) + 1 > S[0].hp_cap) {
                size_t cap = 3 * (size_t)(na + nb) + 64;
                bk_hpt *q = realloc(S[0].hp, sizeof(bk_hpt) * cap);
                if (!q) goto done;
                S[0].hp = q; S[0].hp_cap = cap;
            }
            bk_hpt *hp = S[0].hp;
            memcpy(hp, hs.p[ci], sizeof(bk_hpt) * (size_t)na);
            for (int j = 0; j < nb; ++j) {
                double dx = hs.p[b][j].x - m->mbx, dy = hs.p[b][j].y - m->mby;
                hp[na + j].x = m->max + m->cs * dx - m->sn * dy;
                hp[na + j].y = m->may + m->sn * dx + m->cs * dy;
            }
            bk_hpt *nh = realloc(hs.p[ci], sizeof(bk_hpt) * (size_t)(2 * (na + nb) + 1));
            if (!nh) goto done;
            hs.p[ci] = nh;
            hs.n[ci] = bk_atlas_convex_hull(hp, na + nb, nh);
            double rcs, rsn, rw, rh;
            bk_atlas_rect_from_hull(nh, hs.n[ci], &rcs, &rsn, &rw, &rh);
            double *tl = S[0].tl;
            uint32_t *ids = S[0].ids;
            bk_atlas_apply_rect(tl, iota, m_tris, nh, hs.n[ci], rcs, rsn, &c->w, &c->h);
            for (uint32_t i = 0; i < m_tris; ++i) memcpy(C->loc + 6 * (size_t)ids[i], tl + 6 * (size_t)i, 6 * sizeof(double));
            for (uint32_t x = head[b]; x != BK_NONE; x = next[x]) C->tri_chart[x] = ci;
            next[tail[ci]] = head[b];
            tail[ci] = tail[b];
            c->count += C->charts[b].count;
            dead[b] = 1;
            touched[ci] = touched[b] = 1;
        }
    }
    /* compact: live charts, their triangles contiguous again */
    {
        uint32_t *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
        if (!cnt) goto done;
        for (uint32_t ci = 0; ci < n; ++ci) cnt[ci] = dead[ci] ? 0 : C->charts[ci].count;
        uint32_t live = bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL);
        free(cnt);
        if (live == BK_NONE) goto done;
    }
    rc = 0;
done:
    if (hs.p) for (uint32_t ci = 0; ci < n; ++ci) free(hs.p[ci]);
    if (sp.seen) for (uint32_t ci = 0; ci < n; ++ci) free(sp.seen[ci]);
    for (int w = 0; S && w < threads; ++w) merge_scratch_free(&S[w]);
    free(hs.p); free(hs.n); free(S);
    free(sp.best); free(sp.res); free(sp.work); free(sp.seen); free(sp.nseen);
    free(next); free(head); free(tail); free(iota); free(dead); free(touched); free(order);
    return rc;
}

void bk_atlas_charts_free(charting *C) { free(C->tri_chart); free(C->chart_tris); free(C->charts); free(C->loc); }

/* ---------------------------------------------------------------------------------------------
 * Smooth charts: regions without creases unfolded by least-squares conformal maps (Levy, Petitjean,
 * Ray and Maillot 2002, "Least squares conformal maps for automatic texture atlas generation").
 *
 * A chart grows breadth-first, largest triangles first, across edges whose dihedral angle is below
 * the crease angle, while each triangle's normal stays within the smooth cone of the chart's
 * running mean normal. Then its vertices (welded) get the (u, v) that minimise the conformal
 * energy, the integral over the chart of |u_x - v_y|^2 + |u_y + v_x|^2 in each triangle's own
 * plane, with the two vertices farthest apart along the chart's projection pinned where the
 * projection put them: a sparse linear least-squares problem, solved by conjugate gradients on its
 * normal equations (CGLS, columns scaled to unit norm), started from the projection, so mildly
 * curved charts take a few iterations. The map is kept when no triangle flips, no two triangles
 * overlap, and every triangle's area, the chart scaled to keep its total area, stays within a
 * factor max_stretch of its world area. A few overlapping triangles leave the chart, and so do a
 * few stretched ones (max_evict: on a scan, a handful of noisy triangles among thousands made
 * the whole chart halve); else it is grown again, half as large, and at the end its triangles
 * are left to the planar charts. */

static int tried_ev(const uint8_t *ev, uint32_t i) { return ev[i] != 0; }

/* The solve's layout: a vertex's (u, v) side by side (x[2 j], x[2 j + 1]), and a triangle's
 * coefficients as the pairs (gx, gy) of its corners, so that a corner's two terms are one complex
 * product, (gx + i gy) (u + i v) forward and its conjugate backward, on two-lane vectors (GCC's
 * vector extension: SSE2 on x86-64, plain code elsewhere). Each lane does the scalar loop's
 * operations on the same operands in the same order, and the sums over the unknowns still run
 * over every u, then every v: the same bits as the scalar code with u's and v's in two blocks,
 * with one load per vertex instead of two and three read-modify-writes per triangle in A^T r
 * instead of six. */
typedef double lscm_v2 __attribute__((vector_size(16)));
static inline lscm_v2 v2_load(const double *p) { lscm_v2 r; memcpy(&r, p, sizeof r); return r; }
static inline void v2_store(double *p, lscm_v2 a) { memcpy(p, &a, sizeof a); }
/* lanes moved by element (GCC's __builtin_shuffle is not in clang, which builds the sanitizer and
 * fuzz targets; both make the same shuffles of these) */
static inline lscm_v2 v2_lo(lscm_v2 a) { return (lscm_v2){ a[0], a[0] }; }
static inline lscm_v2 v2_hi(lscm_v2 a) { return (lscm_v2){ a[1], a[1] }; }
static inline lscm_v2 v2_swap(lscm_v2 a) { return (lscm_v2){ a[1], a[0] }; }

typedef struct lscm_tri { double g[6], w; uint32_t v[3]; } lscm_tri;  /* g: (gx, gy) per corner; 72 B */

/* residuals r = A x for the chart's triangles: 2 per triangle; x = (u_j, v_j) of n vertices.
 * Returns the sum of their squares, added in order (CGLS's |A D p|^2: summed here, the sum's chain
 * of additions runs in the shadow of the gathers instead of a loop of its own). Per corner:
 * a += gx u - gy v, b += gy u + gx v. */
static double lscm_apply(const lscm_tri *L, uint32_t nt, const double *x, double *r)
{
    const lscm_v2 flip = { -1.0, 1.0 };
    double ss = 0;
    for (uint32_t i = 0; i < nt; ++i) {
        const lscm_tri *q = &L[i];
        lscm_v2 ab = { 0.0, 0.0 };
        for (int j = 0; j < 3; ++j) {
            lscm_v2 z = v2_load(x + 2 * (size_t)q->v[j]), g = v2_load(q->g + 2 * j);
            ab += v2_lo(z) * g + v2_hi(z) * (v2_swap(g) * flip);  /* (u gx + v (-gy), u gy + v gx) */
        }
        ab *= (lscm_v2){ q->w, q->w };
        v2_store(r + 2 * (size_t)i, ab);
        ss += ab[0] * ab[0];
        ss += ab[1] * ab[1];
    }
    return ss;
}

/* r -= alpha dq (dq NULL: r as it is), then y = A^T r: per corner, with (a, b) = w r,
 * y_u += gx a + gy b, y_v += -gy a + gx b */
static void lscm_apply_t(const lscm_tri *L, uint32_t nt, uint32_t n, double *r, const double *dq, double alpha, double *y)
{
    const lscm_v2 conj = { 1.0, -1.0 };
    memset(y, 0, sizeof(double) * 2 * n);
    for (uint32_t i = 0; i < nt; ++i) {
        const lscm_tri *q = &L[i];
        lscm_v2 ri = v2_load(r + 2 * (size_t)i);
        if (dq) {
            ri -= (lscm_v2){ alpha, alpha } * v2_load(dq + 2 * (size_t)i);
            v2_store(r + 2 * (size_t)i, ri);
        }
        lscm_v2 ab = (lscm_v2){ q->w, q->w } * ri, a = v2_lo(ab), b = v2_hi(ab);
        for (int j = 0; j < 3; ++j) {
            lscm_v2 g = v2_load(q->g + 2 * j);
            double *yj = y + 2 * (size_t)q->v[j];
            v2_store(yj, v2_load(yj) + (a * (g * conj) + b * v2_swap(g)));  /* (a gx + b gy, a (-gy) + b gx) */
        }
    }
}

/* the sum of the squares of s over the u's, then over the v's (the scalar code's order) */
static double lscm_sumsq(const double *s, uint32_t n)
{
    double g = 0;
    for (uint32_t j = 0; j < n; ++j) g += s[2 * j] * s[2 * j];
    for (uint32_t j = 0; j < n; ++j) g += s[2 * j + 1] * s[2 * j + 1];
    return g;
}

typedef struct lscm_ws {
    lscm_tri *tri;
    double   *x, *r, *s, *p, *q, *d;  /* unknowns and CGLS vectors */
    uint8_t  *pin;
    size_t    tcap, vcap;
} lscm_ws;

static int lscm_reserve(lscm_ws *W, uint32_t nt, uint32_t n)
{
    if (nt > W->tcap) {
        size_t c = 2 * (size_t)nt;
        lscm_tri *a = realloc(W->tri, sizeof(lscm_tri) * c);
        double *r = realloc(W->r, sizeof(double) * 2 * c), *q = a && r ? realloc(W->q, sizeof(double) * 2 * c) : NULL;
        if (a) W->tri = a;
        if (r) W->r = r;
        if (q) W->q = q;
        if (!a || !r || !q) return -1;
        W->tcap = c;
    }
    if (n > W->vcap) {
        size_t c = 2 * (size_t)n;
        double **v[5] = { &W->x, &W->s, &W->p, &W->d, NULL };
        for (int k = 0; v[k]; ++k) {
            double *z = realloc(*v[k], sizeof(double) * 2 * c);
            if (!z) return -1;
            *v[k] = z;
        }
        uint8_t *pn = realloc(W->pin, 2 * c);
        if (!pn) return -1;
        W->pin = pn;
        W->vcap = c;
    }
    return 0;
}

static void lscm_free(lscm_ws *W)
{
    free(W->tri); free(W->x); free(W->r); free(W->s); free(W->p); free(W->q); free(W->d); free(W->pin);
    memset(W, 0, sizeof *W);
}

/* CGLS on the columns not pinned, scaled by d (1 / column norm). x holds the start and the
 * answer. Returns the iterations taken. */
static int lscm_solve(lscm_ws *W, uint32_t nt, uint32_t n, int max_iter)
{
    uint32_t m = 2 * n;
    double *x = W->x, *r = W->r, *s = W->s, *p = W->p, *q = W->q, *d = W->d;
    /* column norms: sum over triangles of the squared coefficients */
    memset(d, 0, sizeof(double) * m);
    for (uint32_t i = 0; i < nt; ++i)
        for (int j = 0; j < 3; ++j) {
            const lscm_tri *t = &W->tri[i];
            double c = t->w * t->w * (t->g[2 * j] * t->g[2 * j] + t->g[2 * j + 1] * t->g[2 * j + 1]);
            d[2 * (size_t)t->v[j]] += c;
            d[2 * (size_t)t->v[j] + 1] += c;
        }
    for (uint32_t k = 0; k < m; ++k) d[k] = W->pin[k] || !(d[k] > 0) ? 0.0 : 1.0 / sqrt(d[k]);
    /* r = -A x (the residual of A x = 0), s = D A^T r */
    lscm_apply(W->tri, nt, x, r);
    for (uint32_t i = 0; i < 2 * nt; ++i) r[i] = -r[i];
    lscm_apply_t(W->tri, nt, n, r, NULL, 0.0, s);
    for (uint32_t k = 0; k < m; ++k) { s[k] *= d[k]; p[k] = s[k]; }
    double gamma = lscm_sumsq(s, n);
    double g0 = gamma;
    int it = 0;
    /* The textbook loop's passes fused where one's values feed the next in the same order (the
     * same arithmetic, so the same bits): s = D p is made with p, r -= alpha q with A^T r. */
    for (uint32_t k = 0; k < m; ++k) s[k] = d[k] * p[k];
    for (; it < max_iter && gamma > 1e-14 * g0 && gamma > 0; ++it) {
        /* q = A D p */
        double qq = lscm_apply(W->tri, nt, s, q);
        if (!(qq > 0)) break;
        double alpha = gamma / qq;
        lscm_apply_t(W->tri, nt, n, r, q, alpha, s);
        for (uint32_t k = 0; k < m; ++k) {
            x[k] += alpha * d[k] * p[k];
            s[k] *= d[k];
        }
        double gn = lscm_sumsq(s, n);
        double beta = gn / gamma;
        for (uint32_t k = 0; k < m; ++k) { p[k] = s[k] + beta * p[k]; s[k] = d[k] * p[k]; }
        gamma = gn;
    }
    return it;
}

/* The smooth charts are tried in batches: charts grown one after another from the next seeds
 * (each as the one-at-a-time loop would grow it if every earlier one is kept as grown), then
 * unfolded and checked on the pool, then taken in seed order. A chart kept whole, or dropped with
 * all its triangles marked tried, leaves the later charts' growth as it was; a chart that loses
 * triangles (evicted overlaps) or is grown again smaller frees triangles the later charts might
 * have taken, so the batch's later charts are let go and the seeds after it start a new batch.
 * The charts are thus exactly those of one chart at a time, whatever the thread count. */

typedef struct sm_ws {       /* one worker's scratch */
    lscm_ws   W;
    uint32_t *hkey, *hval;   /* the chart being grown: triangle -> its place in the growth (open */
    uint32_t *hused, nused;  /* addressing, hmask + 1 slots; hused lists the slots taken) */
    uint32_t  hmask, hshift;  /* hmask + 1 == 1 << (32 - hshift) */
    uint32_t *uf, *cid;      /* 3 max_tris */
    uint8_t  *evict;         /* max_tris, zero between uses */
    double   *xy;
    size_t    xy_cap;
    bk_hpt      *pts;
    size_t    pts_cap;
    pair_list pairs;
} sm_ws;

typedef struct sm_try {      /* one chart grown from a seed */
    uint32_t seed, limit;
    uint32_t k;              /* its place in the batch: the charts before it grow first */
    int      stale;          /* its growth read a triangle whose owner changed (sm_stale_fn) */
    uint32_t *tris, nt;      /* grown triangles (max_tris); after sm_check_chain the first nt of nt0 */
    uint32_t nt0, levels;    /* sm_check_chain: the first growth's size, the sizes it checked */
    int      skip;           /* its seed is in an earlier chart of its batch */
    uint32_t *keep, nkeep;   /* places in tris of those kept (max_tris), when ok */
    uint32_t *front, nfront; /* neighbours its growth read and did not take (4 max_tris, repeats
                                possible); nfront BK_NONE: more (read every neighbour) */
    double   *loc;           /* 6 per place in tris: the chart's corners (C->loc's layout by place) */
    double   avg[3];         /* mean normal */
    double   w, h;
    int      curved, ok, err;
    uint64_t work;
    uint32_t limit0;         /* the growth's limit (sm_check_chain may lower limit) */
} sm_try;

#define SM_OWN_K_BITS 8  /* a batch's place (K <= 256) under a snapshot id of 24 bits */
#define SM_OWN_K_MASK ((1u << SM_OWN_K_BITS) - 1)
#define SM_OWN_ID_MAX ((1u << (32 - SM_OWN_K_BITS)) - 1)
#define SM_LEVELS 24  /* speculation (sm_spec_plan): levels planned after the first, at most (2000
                       * triangles halve to 4 in 9) */

typedef struct sm_ctx {
    const bk_scene *s;
    const tri_geom *g;
    const adjacency *A;
    const uint32_t *weld;
    const bk_atlas_smooth_opts *so;
    charting *C;             /* tri_chart read only while a batch grows */
    const uint8_t *tried;
    _Atomic uint32_t *own[3]; /* per triangle, snapshots of who owns it in the batch's growths
                                (sm_claim_fn): id << SM_OWN_K_BITS | the chart's place, where id
                                is the snapshot's (other ids: owned by none) */
    int      oslot, oslot_prev; /* the snapshot growths read: own[oslot], id snap (a fresh id: none */
    uint32_t snap, snap_prev;   /* owned); sm_stale_fn: the one they were made over, oslot_prev */
    const uint32_t *regrow;  /* sm_grow_fn: the tries to grow again (NULL: all) */
    const uint32_t *iota;    /* 0, 1, ... max_tris: places as triangle lists for bk_atlas_fit_rect */
    sm_ws *ws;
    sm_try *tries;
    sm_try **task;           /* the batch's checks: a try's chain, or one level of it */
    const key_idx *order;    /* the order they start in: task[order[i].idx] */
    const uint32_t *slot;    /* per task: BK_NONE the whole chain (sm_check_chain), else the level's
                                state in lstate: try * (SM_LEVELS + 1) + level */
    _Atomic uint8_t *lstate; /* a level: 0 not checked, 1 failed, 2 kept or out of memory */
} sm_ctx;

static uint32_t hm_slot(const sm_ws *w, uint32_t key)
{
    uint32_t h = (key * 2654435761u) >> w->hshift;  /* the product's high bits: ids far apart by a power of 2 still spread */
    while (w->hkey[h] != BK_NONE && w->hkey[h] != key) h = (h + 1) & w->hmask;
    return h;
}
static uint32_t hm_get(const sm_ws *w, uint32_t key)
{
    uint32_t h = hm_slot(w, key);
    return w->hkey[h] == key ? w->hval[h] : BK_NONE;
}
static void hm_put(sm_ws *w, uint32_t key, uint32_t val)
{
    uint32_t h = hm_slot(w, key);
    if (w->hkey[h] == BK_NONE) w->hused[w->nused++] = h;
    w->hkey[h] = key;
    w->hval[h] = val;
}
static void hm_clear(sm_ws *w)
{
    for (uint32_t i = 0; i < w->nused; ++i) w->hkey[w->hused[i]] = BK_NONE;
    w->nused = 0;
}

/* Only charts that need it are unfolded: a chart within the planar cone is left to the planar charts. */
static void sm_curved(const sm_ctx *x, sm_try *t, double cos_flat)
{
    int curved = 0;
    for (uint32_t i = 0; i < t->nt && !curved; ++i) curved = bk_dot3d(bk_atlas_tri_n(x->g, t->tris[i]), t->avg) < cos_flat;
    t->curved = curved;
}

/* Grows a chart from t->seed up to t->limit triangles over those free in tri_chart, tried and
 * the snapshot x->snap (the batch's charts before t; all three only read), its own in ws's map
 * (cleared by the caller). */
static void sm_grow(const sm_ctx *x, sm_ws *ws, sm_try *t)
{
    const uint32_t *tri_chart = x->C->tri_chart;
    const uint8_t *tried = x->tried;
    const tri_geom *g = x->g;
    const adjacency *A = x->A;
    const _Atomic uint32_t *own = x->own[x->oslot];
    const uint32_t lo = x->snap << SM_OWN_K_BITS, hi = lo | t->k;  /* owned by a chart before t: [lo, hi) */
    double cos_cone = cos(x->so->cone_deg * BK_ATLAS_PI / 180.0), cos_crease = cos(x->so->crease_deg * BK_ATLAS_PI / 180.0);
    double cos_flat = cos(x->so->flat_deg * BK_ATLAS_PI / 180.0);
    uint32_t seed = t->seed, limit = t->limit, qh = 0, qt = 0, *queue = t->tris;
    const double *ns = bk_atlas_tri_n(g, seed);
    double sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] }, *avg = t->avg;
    avg[0] = ns[0]; avg[1] = ns[1]; avg[2] = ns[2];
    hm_put(ws, seed, qt);
    queue[qt++] = seed;
    t->nfront = 0;
    while (qh < qt && qt < limit) {
        uint32_t tt = queue[qh++];
        const double *nt = bk_atlas_tri_n(g, tt);
        for (uint32_t p = A->start[tt]; p < A->start[tt + 1] && qt < limit; ++p) {
            uint32_t u = A->adj[p];
            if (hm_get(ws, u) != BK_NONE) continue;
            const double *nu = bk_atlas_tri_n(g, u);
            if (tri_chart[u] != BK_NONE || tried[u] || (atomic_load_explicit(&own[u], memory_order_relaxed) - lo < hi - lo) || bk_dot3d(nu, nt) < cos_crease ||
                bk_dot3d(nu, avg) < cos_cone) {
                if (t->nfront < 4 * (x->so->max_tris + 1)) t->front[t->nfront++] = u;
                else t->nfront = BK_NONE;
                continue;
            }
            hm_put(ws, u, qt);
            queue[qt++] = u;
            for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
            double l = sqrt(bk_dot3d(sum, sum));
            if (l > 0) for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
        }
    }
    t->nt = qt;
    sm_curved(x, t, cos_flat);
}

/* The chart grown again with a smaller limit, from the same state, takes the first limit
 * triangles of its growth (breadth-first, the same decisions in the same order): its mean normal
 * is replayed over that prefix as sm_grow sums it, without touching tri_chart. */
static void sm_shrink(const sm_ctx *x, sm_try *t, uint32_t limit)
{
    const tri_geom *g = x->g;
    uint32_t seed = t->tris[0];
    const double *ns = bk_atlas_tri_n(g, seed);
    double sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] }, *avg = t->avg;
    avg[0] = ns[0]; avg[1] = ns[1]; avg[2] = ns[2];
    for (uint32_t i = 1; i < limit; ++i) {
        uint32_t u = t->tris[i];
        const double *nu = bk_atlas_tri_n(g, u);
        for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
        double l = sqrt(bk_dot3d(sum, sum));
        if (l > 0) for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
    }
    t->limit = limit;
    t->nt = limit;
    sm_curved(x, t, cos(x->so->flat_deg * BK_ATLAS_PI / 180.0));
}

/* Projects triangles tris along n into n's plane (as chart_project_only does for a chart), corners
 * of tris[i] to loc[6 i ..]. */
static void sm_project(const bk_scene *s, const double *n, const uint32_t *tris, uint32_t nt, double *loc)
{
    double t1[3], t2[3];
    bk_atlas_plane_frame(n, t1, t2);
    double o[3];
    bk_atlas_pos_of(s, tris[0], 0, o);
    for (uint32_t i = 0; i < nt; ++i) {
        uint32_t t = tris[i];
        for (int k = 0; k < 3; ++k) {
            double p[3];
            bk_atlas_pos_of(s, t, k, p);
            for (int d = 0; d < 3; ++d) p[d] -= o[d];
            loc[6 * (size_t)i + 2 * k] = bk_dot3d(p, t1);
            loc[6 * (size_t)i + 2 * k + 1] = bk_dot3d(p, t2);
        }
    }
}

/* Unfolds and checks a grown chart: t->ok, t->keep, t->w, t->h, t->loc; its triangles are those
 * of ws's map placed before nt; it writes nothing shared, so charts of one batch run side by side. */
static void sm_check(const sm_ctx *x, sm_try *t, sm_ws *ws)
{
    const bk_scene *s = x->s;
    const tri_geom *g = x->g;
    const adjacency *A = x->A;
    const bk_atlas_smooth_opts *so = x->so;
    uint32_t *queue = t->tris, nt = t->nt;
    double *loc = t->loc;
    lscm_ws *W = &ws->W;
    uint32_t *uf = ws->uf, *cid = ws->cid;
    int curved = t->curved;
    uint32_t nstretch = 0;  /* triangles ws->evict holds for their stretch */
    t->work = 0;
    t->err = 0;
    /* a flat region larger than the cap is the planar charts' (they grow it whole) */
    int ok = nt >= so->min_tris && (curved || nt < t->limit);
    t->ok = 0;
    if (!ok) return;
    /* the start (and the map of a flat chart), turned to its rectangle: the pins below go to the
     * ends of its long side */
    sm_project(s, t->avg, queue, nt, loc);
    if (bk_atlas_fit_rect(loc, x->iota, nt, &t->w, &t->h, &ws->pts, &ws->pts_cap)) { t->err = 1; return; }
    /* vertices: corners joined across the chart's own edges (union-find), so a vertex where the
     * chart touches itself only at a point (two sectors of its fan) becomes two, free to part,
     * instead of a hinge the two sectors fold over */
    uint32_t n = 0;
    for (uint32_t c = 0; c < 3 * nt; ++c) uf[c] = c;
    for (uint32_t i = 0; i < nt; ++i) {
        uint32_t tt = queue[i];
        for (uint32_t p = A->start[tt]; p < A->start[tt + 1]; ++p) {
            uint32_t u = A->adj[p];
            if (u < tt) continue;
            uint32_t j = hm_get(ws, u);
            if (j == BK_NONE || j >= nt) continue;  /* not grown, or past the prefix sm_shrink kept */
            for (int k = 0; k < 3; ++k)
                for (int m = 0; m < 3; ++m)
                    if (x->weld[s->tri_v[3 * (size_t)tt + k]] == x->weld[s->tri_v[3 * (size_t)u + m]]) {
                        uint32_t a = 3 * i + (uint32_t)k, b = 3 * j + (uint32_t)m;
                        while (uf[a] != a) a = uf[a] = uf[uf[a]];
                        while (uf[b] != b) b = uf[b] = uf[uf[b]];
                        if (a != b) uf[a < b ? b : a] = a < b ? a : b;
                    }
        }
    }
    for (uint32_t c = 0; c < 3 * nt; ++c) {
        uint32_t a = c;
        while (uf[a] != a) a = uf[a];
        cid[c] = a == c ? n++ : cid[a];  /* roots are the smallest corner: seen first */
    }
    if (lscm_reserve(W, nt, n)) { t->err = 1; return; }
    if (curved) {
        /* start from the projection; pin the two vertices farthest apart along its x */
        uint32_t vlo = 0, vhi = 0;
        for (uint32_t i = 0; i < nt; ++i)
            for (int k = 0; k < 3; ++k) {
                uint32_t j = cid[3 * i + k];
                W->x[2 * (size_t)j] = loc[6 * (size_t)i + 2 * k];
                W->x[2 * (size_t)j + 1] = loc[6 * (size_t)i + 2 * k + 1];
            }
        for (uint32_t j = 1; j < n; ++j) {
            if (W->x[2 * (size_t)j] < W->x[2 * (size_t)vlo]) vlo = j;
            if (W->x[2 * (size_t)j] > W->x[2 * (size_t)vhi]) vhi = j;
        }
        memset(W->pin, 0, 2 * (size_t)n);
        W->pin[2 * (size_t)vlo] = W->pin[2 * (size_t)vlo + 1] = W->pin[2 * (size_t)vhi] = W->pin[2 * (size_t)vhi + 1] = 1;
        double area3 = 0;
        for (uint32_t i = 0; i < nt; ++i) {
            uint32_t tt = queue[i];
            lscm_tri *q = &W->tri[i];
            double p0[3], p1[3], p2[3], e1[3], e2[3];
            bk_atlas_pos_of(s, tt, 0, p0); bk_atlas_pos_of(s, tt, 1, p1); bk_atlas_pos_of(s, tt, 2, p2);
            for (int k = 0; k < 3; ++k) { e1[k] = p1[k] - p0[k]; e2[k] = p2[k] - p0[k]; }
            /* the triangle in its own plane: p0 = (0, 0), p1 on the x axis, counter-clockwise */
            double l1 = sqrt(bk_dot3d(e1, e1)), x2 = bk_dot3d(e2, e1) / l1, dd = 2 * g->area[tt];
            double y2 = dd / l1;
            double X[3] = { 0, l1, x2 }, Y[3] = { 0, 0, y2 };
            for (int j = 0; j < 3; ++j) {
                int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
                q->g[2 * j] = -(Y[j2] - Y[j1]) / dd;
                q->g[2 * j + 1] = (X[j2] - X[j1]) / dd;
                q->v[j] = cid[3 * i + j];
            }
            q->w = sqrt(g->area[tt]);
            area3 += g->area[tt];
        }
        int iters = lscm_solve(W, nt, n, so->max_iter);
        t->work += (uint64_t)iters * nt;
        /* corners, orientation, area ratios */
        double areauv = 0;
        int flips = 0;
        for (uint32_t i = 0; i < nt; ++i) {
            double *L = loc + 6 * (size_t)i;
            for (int k = 0; k < 3; ++k) {
                uint32_t j = cid[3 * i + k];
                L[2 * k] = W->x[2 * (size_t)j];
                L[2 * k + 1] = W->x[2 * (size_t)j + 1];
            }
            double a2 = (L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]);
            if (!(a2 > 0)) flips++;
            areauv += 0.5 * fabs(a2);
        }
        ok = flips == 0 && areauv > 0 && isfinite(areauv);
        if (ok) {
            /* triangles stretched past max_stretch leave the chart as overlapping ones do, when
             * they are few (so->max_evict of it); more, and the chart is grown smaller */
            double sc = sqrt(area3 / areauv);
            for (uint32_t i = 0; i < nt; ++i) {
                double *L = loc + 6 * (size_t)i;
                for (int k = 0; k < 6; ++k) L[k] *= sc;
                double ratio = bk_tri2_area(L) / g->area[queue[i]];
                if (!(ratio <= so->max_stretch && ratio >= 1.0 / so->max_stretch)) { ws->evict[i] = 1; nstretch++; }
            }
            ok = (double)nstretch <= so->max_evict * nt;
            if (!ok) memset(ws->evict, 0, nt);
        }
    }
    /* planar: the projection, checked for overlaps here */
    t->nkeep = 0;
    if (ok) {
        if (6 * (size_t)nt > ws->xy_cap) {
            size_t cap = 12 * (size_t)nt;
            double *p = realloc(ws->xy, sizeof(double) * cap);
            if (!p) { t->err = 1; return; }
            ws->xy = p;
            ws->xy_cap = cap;
        }
        double *xy = ws->xy, lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX };
        for (uint32_t i = 0; i < nt; ++i) {
            memcpy(xy + 6 * (size_t)i, loc + 6 * (size_t)i, 6 * sizeof(double));
            for (int k = 0; k < 3; ++k)
                for (int d = 0; d < 2; ++d) { lo[d] = bk_dmin(lo[d], xy[6 * i + 2 * k + d]); hi[d] = bk_dmax(hi[d], xy[6 * i + 2 * k + d]); }
        }
        ws->pairs.n = 0;
        if (bk_atlas_find_overlaps(xy, nt, 1e-9 * (hi[0] - lo[0] + hi[1] - lo[1]), &ws->pairs, &t->work)) { t->err = 1; return; }
        /* a few overlapping triangles (where the chart's boundary comes back over itself, round a
         * hole the cone left) leave: the later of each pair whose earlier one stays, as the planar
         * charts do; too many, and the chart is grown smaller */
        uint8_t *evict = ws->evict;
        uint32_t nev = nstretch;
        for (size_t q = 0; q < ws->pairs.n; ++q) {
            uint32_t a = ws->pairs.p[2 * q], b = ws->pairs.p[2 * q + 1];
            if (tried_ev(evict, a) || tried_ev(evict, b)) continue;
            evict[b] = 1;
            nev++;
        }
        ok = nev * 10 <= nt;
        for (uint32_t i = 0; i < nt; ++i)
            if (!evict[i]) t->keep[t->nkeep++] = i;
        memset(evict, 0, nt);
    }
    if (ok && bk_atlas_fit_rect(loc, t->keep, t->nkeep, &t->w, &t->h, &ws->pts, &ws->pts_cap)) { t->err = 1; return; }
    t->ok = ok;
}

/* Checks a grown chart and, while it fails and may be grown again half as large, its prefixes
 * (sm_shrink): the chart one at a time would get, decided on the worker, not in the serial take.
 * t->work sums the checks' work. */
static void sm_check_chain(const sm_ctx *x, sm_try *t, sm_ws *ws)
{
    uint64_t work = 0;
    t->nt0 = t->nt;
    t->levels = 0;
    for (;;) {
        sm_check(x, t, ws);
        work += t->work;
        t->levels++;
        if (t->err || t->ok) break;
        uint32_t limit = (t->nt < t->limit ? t->nt : t->limit) / 2;
        if (!t->curved || limit < x->so->min_tris) break;
        sm_shrink(x, t, limit);
    }
    t->work = work;
}

/* The batch's charts grown side by side over the triangles free when the batch began, or
 * (x->regrow) those listed there, again, over the snapshot x->snap. */
static void sm_grow_fn(void *ctx, size_t begin, size_t end, int worker)
{
    sm_ctx *x = ctx;
    sm_ws *ws = &x->ws[worker];
    for (size_t i = begin; i < end; ++i) {
        sm_grow(x, ws, &x->tries[x->regrow ? x->regrow[i] : i]);
        hm_clear(ws);
    }
}

/* The batch's charts (their growth final) checked side by side. */
static void sm_check_fn(void *ctx, size_t begin, size_t end, int worker)
{
    sm_ctx *x = ctx;
    sm_ws *ws = &x->ws[worker];
    for (size_t i = begin; i < end; ++i) {
        sm_try *t = x->task[x->order[i].idx];
        const uint32_t slot = x->slot[x->order[i].idx], first = slot == BK_NONE ? 0 : slot - slot % (SM_LEVELS + 1);
        /* a later level is not checked once an earlier one was kept: the chain ends there */
        int needed = 1;
        for (uint32_t j = first; slot != BK_NONE && j < slot && needed; ++j) needed = atomic_load(&x->lstate[j]) != 2;
        if (!needed) continue;
        /* the growth's places (a level's check skips those past its prefix) */
        for (uint32_t j = 0; j < t->nt0; ++j) hm_put(ws, t->tris[j], j);
        if (slot == BK_NONE) sm_check_chain(x, t, ws);
        else { sm_check(x, t, ws); t->levels = 1; }
        hm_clear(ws);
        if (slot != BK_NONE) atomic_store(&x->lstate[slot], (uint8_t)(t->ok || t->err ? 2 : 1));
    }
}


/* Speculation: a large curved chart's chain (checked whole, then grown again half as large while
 * it fails) is one long task that a batch waits for. With threads to spare, its levels are
 * planned up front (sm_shrink needs only the growth) and are tasks of their own, each with
 * buffers of its own (arena: room for 6 corners and a place per triangle of all levels after the
 * first, which together are at most the first's size). They come after every first check, so
 * they fill threads that would wait for the batch's last checks, and a level whose chart was
 * kept at an earlier level by then is not checked. sm_spec_take then keeps what the chain would
 * have ended with: the first level that was kept (or failed for want of memory), else the last,
 * with the work of the levels the chain would have checked. Sponza's batches of 32 on 16 threads,
 * simulated from one-thread times: 0.27 -> 0.18 s. */
#define SM_SPEC_THREADS 8     /* fewer threads: every check counts, no level checked for nothing */
#define SM_SPEC_MIN_TRIS 256  /* smaller charts' chains are short */

static uint32_t sm_spec_plan(const sm_ctx *x, sm_try *t, sm_try *lv, uint32_t max_levels, uint32_t *arena_u, double *arena_d)
{
    uint32_t n = 0, used = 0;
    const sm_try *prev = t;
    for (;;) {
        uint32_t limit = (prev->nt < prev->limit ? prev->nt : prev->limit) / 2;
        if (!prev->curved || limit < x->so->min_tris || n == max_levels) break;
        sm_try *l = &lv[n++];
        *l = *t;
        l->keep = arena_u + used;
        l->loc = arena_d + 6 * (size_t)used;
        sm_shrink(x, l, limit);
        used += limit;
        prev = l;
    }
    return n;
}

static void sm_spec_take(sm_try *t, const sm_try *lv, uint32_t n, _Atomic uint8_t *lstate)
{
    uint64_t work = t->work;
    uint32_t levels = 1;
    const sm_try *end = t;
    for (uint32_t k = 0; k < n && !end->ok && !end->err; ++k) {
        BK_CHECK(atomic_load(&lstate[k + 1]) != 0);  /* every level the chain needs was checked */
        end = &lv[k]; work += end->work; levels++;
    }
    if (end != t) {
        t->nt = end->nt; t->limit = end->limit; t->curved = end->curved;
        memcpy(t->avg, end->avg, sizeof t->avg);
        t->w = end->w; t->h = end->h; t->ok = end->ok; t->err = end->err;
        t->nkeep = end->nkeep;
        memcpy(t->keep, end->keep, sizeof(uint32_t) * end->nkeep);
        memcpy(t->loc, end->loc, sizeof(double) * 6 * end->nt);
    }
    t->work = work;
    t->levels = levels;
}

/* The batch's speculation plans side by side (each try's levels and arena are its own), and
 * the tries whose growth is one that the last batch checked and let go (memo): a check reads
 * only the growth (its triangles in order, and the limit, the same for every first growth), so
 * its result is taken from there instead of checking again. A batch that frees triangles lets
 * its later charts go, and most of them grow the same in the next batch: dragon_vrip on 16
 * simulated threads checked a third of its charts twice. */
typedef struct sm_plan_ctx {
    const sm_ctx *x;
    uint32_t *nlv;
    sm_try *lv;              /* NULL: no speculation */
    uint32_t *arena_u;
    double *arena_d;
    uint32_t M;
    const sm_try *memo;      /* the checked tries the last batch let go */
    uint32_t nmemo;
    uint32_t *hit;           /* per try: its memo, or BK_NONE */
} sm_plan_ctx;

static uint32_t sm_memo_find(const sm_plan_ctx *p, const sm_try *t)
{
    for (uint32_t j = 0; j < p->nmemo; ++j) {
        const sm_try *m = &p->memo[j];
        if (m->seed == t->seed && m->nt0 == t->nt && m->limit0 == t->limit && !memcmp(m->tris, t->tris, sizeof(uint32_t) * t->nt))
            return j;
    }
    return BK_NONE;
}

static void sm_plan_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sm_plan_ctx *p = ctx;
    const bk_atlas_smooth_opts *so = p->x->so;
    for (size_t k = begin; k < end; ++k) {
        sm_try *t = &p->x->tries[k];
        p->nlv[k] = 0;
        p->hit[k] = BK_NONE;
        if (t->skip) continue;
        t->nt0 = t->nt;
        t->limit0 = t->limit;
        if ((p->hit[k] = sm_memo_find(p, t)) != BK_NONE) continue;
        int ok0 = t->nt >= so->min_tris && (t->curved || t->nt < t->limit);  /* as sm_check decides */
        if (p->lv && ok0 && t->curved && t->nt >= SM_SPEC_MIN_TRIS)
            p->nlv[k] = sm_spec_plan(p->x, t, p->lv + (size_t)SM_LEVELS * k, SM_LEVELS, p->arena_u + (size_t)p->M * k,
                                     p->arena_d + 6 * (size_t)p->M * k);
    }
}

/* A checked try into a memo slot (save) or a memo's result into the try that grew the same
 * (restore): everything but the try's own buffers and its growth's front. */
static void sm_try_copy(sm_try *dst, const sm_try *src, int with_tris)
{
    sm_try d = *src;
    d.tris = dst->tris; d.keep = dst->keep; d.loc = dst->loc;
    d.front = dst->front; d.nfront = dst->nfront; d.skip = dst->skip;
    if (with_tris) memcpy(d.tris, src->tris, sizeof(uint32_t) * src->nt0);
    memcpy(d.keep, src->keep, sizeof(uint32_t) * src->nkeep);
    memcpy(d.loc, src->loc, sizeof(double) * 6 * src->nt);
    *dst = d;
}

typedef struct sm_memo_ctx { sm_try *tries, *memo; const uint32_t *hit; uint32_t first; double *loc; } sm_memo_ctx;

/* A try's memo result taken (when it has one), then a kept chart's corners into C->loc, taken or
 * not: the batch's growths are disjoint, and a triangle of a chart let go gets its corners again
 * from the chart that takes it. */
static void sm_corners_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sm_memo_ctx *c = ctx;
    for (size_t k = begin; k < end; ++k) {
        if (c->hit[k] != BK_NONE) sm_try_copy(&c->tries[k], &c->memo[c->hit[k]], 0);
        const sm_try *t = &c->tries[k];
        if (!t->skip && t->ok)
            for (uint32_t j = 0; j < t->nt; ++j) memcpy(c->loc + 6 * (size_t)t->tris[j], t->loc + 6 * (size_t)j, 6 * sizeof(double));
    }
}

/* memo slot j from the let-go try first + j (skipped and failed ones are NULL-seeded) */
static void sm_save_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sm_memo_ctx *c = ctx;
    for (size_t j = begin; j < end; ++j) {
        const sm_try *t = &c->tries[c->first + j];
        if (t->skip || t->err) { c->memo[j].seed = BK_NONE; continue; }
        sm_try_copy(&c->memo[j], t, 1);
    }
}

/* Takes a chart checked by sm_check_chain in seed order: kept (a new chart; sm_check_fn wrote its
 * corners), or released (its triangles tried, for the planar charts). Returns 1 when the later
 * charts' growth is as it was (kept whole, or dropped for good at its first size), 0 when it
 * freed triangles. -1 out of memory. */
static int sm_take(sm_ctx *x, sm_try *t, uint8_t *tried, uint32_t *ntris, uint64_t *work)
{
    charting *C = x->C;
    *work += t->work;
    if (t->ok) {
        chart c;
        memset(&c, 0, sizeof c);
        c.first = *ntris;
        c.count = t->nkeep;
        c.smooth = (uint8_t)t->curved;
        for (int k = 0; k < 3; ++k) c.n[k] = t->avg[k];
        c.w = t->w;
        c.h = t->h;
        uint32_t ci = C->count;
        if (bk_atlas_chart_push(C, c)) return -1;
        for (uint32_t i = 0; i < t->nkeep; ++i) {
            uint32_t tt = t->tris[t->keep[i]];
            C->chart_tris[*ntris + i] = tt;
            C->tri_chart[tt] = ci;
        }
        *ntris += t->nkeep;
        return t->nkeep == t->nt0;
    }
    for (uint32_t i = 0; i < t->nt; ++i) tried[t->tris[i]] = 1;
    return t->nt == t->nt0;
}

/* Did chart t's growth look at a triangle marked in freed? (a neighbour it did not take: none of
 * its own is an earlier chart's) */
static int sm_touches(const adjacency *A, const sm_try *t, const uint8_t *freed)
{
    if (t->nfront != BK_NONE) {
        for (uint32_t i = 0; i < t->nfront; ++i)
            if (freed[t->front[i]]) return 1;
        return 0;
    }
    for (uint32_t i = 0; i < t->nt0; ++i)
        for (uint32_t p = A->start[t->tris[i]]; p < A->start[t->tris[i] + 1]; ++p)
            if (freed[A->adj[p]]) return 1;
    return 0;
}

/* Is chart t's growth stale: did it read a triangle (its own, or a neighbour it did not take)
 * that the snapshot it was grown over (x->snap_prev) and the new one (x->snap) see differently,
 * free for t in one and taken by an earlier chart of the batch in the other? */
static int sm_owned(const _Atomic uint32_t *own, uint32_t snap, uint32_t u, uint32_t k)
{
    uint32_t v = atomic_load_explicit(&own[u], memory_order_relaxed);
    return v >> SM_OWN_K_BITS == snap && (v & SM_OWN_K_MASK) < k;
}

static int sm_stale(const sm_ctx *x, const sm_try *t)
{
    const adjacency *A = x->A;
    const _Atomic uint32_t *oa = x->own[x->oslot_prev], *ob = x->own[x->oslot];
    const uint32_t a = x->snap_prev, b = x->snap, k = t->k;
#define SM_DIFF(u) (sm_owned(oa, a, (u), k) != sm_owned(ob, b, (u), k))
    for (uint32_t i = 0; i < t->nt; ++i)
        if (SM_DIFF(t->tris[i])) return 1;
    if (t->nfront != BK_NONE) {
        for (uint32_t i = 0; i < t->nfront; ++i)
            if (SM_DIFF(t->front[i])) return 1;
        return 0;
    }
    for (uint32_t i = 0; i < t->nt; ++i)
        for (uint32_t p = A->start[t->tris[i]]; p < A->start[t->tris[i] + 1]; ++p)
            if (SM_DIFF(A->adj[p])) return 1;
#undef SM_DIFF
    return 0;
}

static void sm_stale_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sm_ctx *x = ctx;
    for (size_t k = begin; k < end; ++k) {
        sm_try *t = &x->tries[k];
        if (!t->skip && !t->stale) t->stale = sm_stale(x, t);
    }
}

/* A snapshot of the batch's growths (x->own[x->oslot], id x->snap): each triangle owned by the
 * first chart in batch order that grew over it, skipped charts (sm_skips) owning nothing. Side
 * by side: each chart lowers a triangle's owner to itself (the least place wins, whatever the
 * order). */
static void sm_claim_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sm_ctx *x = ctx;
    _Atomic uint32_t *own = x->own[x->oslot];
    const uint32_t lo = x->snap << SM_OWN_K_BITS;
    for (size_t k = begin; k < end; ++k) {
        const sm_try *t = &x->tries[k];
        if (t->skip) continue;
        const uint32_t v = lo | (uint32_t)k;
        for (uint32_t i = 0; i < t->nt; ++i) {
            _Atomic uint32_t *o = &own[t->tris[i]];
            uint32_t cur = atomic_load_explicit(o, memory_order_relaxed);
            while (cur - lo > v - lo && !atomic_compare_exchange_weak_explicit(o, &cur, v, memory_order_relaxed, memory_order_relaxed)) {}
        }
    }
}

/* The skips the snapshot says: a chart whose seed an earlier chart owns is skipped. Returns
 * whether any changed; a chart no longer skipped is stale (its growth was not kept up). */
static int sm_skips(sm_ctx *x, uint32_t nb)
{
    int changed = 0;
    for (uint32_t k = 0; k < nb; ++k) {
        sm_try *t = &x->tries[k];
        int skip = sm_owned(x->own[x->oslot], x->snap, t->seed, k);
        if (skip == t->skip) continue;
        changed = 1;
        if (!skip) t->stale = 1;
        t->skip = skip;
    }
    return changed;
}

/* Needles (height under 1/1000 of the longest edge) have normals of float noise: the planar
 * charts take them, as whole fans and strips (tried set for them). */
typedef struct needle_ctx { const bk_scene *s; const tri_geom *g; uint8_t *tried; } needle_ctx;

static void needle_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const needle_ctx *c = ctx;
    for (size_t t = begin; t < end; ++t) {
        if (c->g->degen[t]) continue;
        double p[3][3], lmax = 0;
        for (int k = 0; k < 3; ++k) bk_atlas_pos_of(c->s, (uint32_t)t, k, p[k]);
        for (int k = 0; k < 3; ++k) {
            double d0 = p[(k + 1) % 3][0] - p[k][0], d1 = p[(k + 1) % 3][1] - p[k][1], d2 = p[(k + 1) % 3][2] - p[k][2];
            lmax = bk_dmax(lmax, d0 * d0 + d1 * d1 + d2 * d2);
        }
        if (2 * c->g->area[t] < 1e-3 * lmax) c->tried[t] = 1;
    }
}

int bk_atlas_charts_smooth(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld,
                           const bk_atlas_smooth_opts *so, charting *C, uint64_t *work)
{
    uint32_t T = s->tri_count;
    bk_atlas_charting_alloc(C, T);
    int threads = bk_pool_threads();
    uint32_t K = threads > 1 ? (uint32_t)(2 * threads) : 1, M = so->max_tris + 1, H = 16, hshift = 28;
    if (K > 256) K = 256;
    while (H < 4 * M) { H <<= 1; hshift--; }
    uint32_t *seeds = malloc(sizeof(uint32_t) * (size_t)T + 1);
    _Atomic uint32_t *own = calloc(3 * ((size_t)T + 1), sizeof(_Atomic uint32_t));  /* id 0: never a snapshot's */
    uint32_t *regrow = malloc(sizeof(uint32_t) * K), snap_id = 0;
    uint8_t *tried = calloc((size_t)T + 1, 1);
    key_idx *kt = malloc(sizeof(key_idx) * (size_t)T + 1);
    sm_ws *ws = calloc((size_t)threads, sizeof(sm_ws));
    sm_try *tries = calloc(K, sizeof(sm_try));
    uint32_t *tbuf = malloc(sizeof(uint32_t) * 6 * (size_t)M * K), *iota = malloc(sizeof(uint32_t) * M);
    double *lbuf = malloc(sizeof(double) * 6 * (size_t)M * K);
    uint32_t *spos = malloc(sizeof(uint32_t) * (size_t)T + 1), *freed_list = malloc(sizeof(uint32_t) * (size_t)M * K);
    uint8_t *freed = calloc((size_t)T + 1, 1);
    /* speculation's levels: per try up to SM_LEVELS and an arena (sm_spec_plan) */
    const int spec = threads >= SM_SPEC_THREADS;
    uint32_t ntask_cap = K * (spec ? SM_LEVELS + 1 : 1);
    sm_try **task = malloc(sizeof(sm_try *) * ntask_cap), *lv = spec ? malloc(sizeof(sm_try) * K * SM_LEVELS) : NULL;
    uint32_t *nlv = calloc(K, sizeof(uint32_t)), *arena_u = spec ? malloc(sizeof(uint32_t) * (size_t)M * K) : NULL;
    double *arena_d = spec ? malloc(sizeof(double) * 6 * (size_t)M * K) : NULL;
    uint32_t *slot = malloc(sizeof(uint32_t) * ntask_cap);
    _Atomic uint8_t *lstate = spec ? malloc(sizeof(_Atomic uint8_t) * K * (SM_LEVELS + 1)) : NULL;
    key_idx *ok_keys = malloc(sizeof(key_idx) * ntask_cap);
    sm_try *memo = calloc(K, sizeof(sm_try));
    uint32_t *mbuf_u = malloc(sizeof(uint32_t) * 2 * (size_t)M * K), *hit = malloc(sizeof(uint32_t) * K), nmemo = 0;
    double *mbuf_d = malloc(sizeof(double) * 6 * (size_t)M * K);
    int rc = -1;
    if (!C->tri_chart || !C->chart_tris || !C->loc || !seeds || !own || !regrow || !tried || !kt || !ws || !tries || !tbuf || !iota || !lbuf ||
        !spos || !freed_list || !freed || !task || !nlv || !slot || !ok_keys || (spec && (!lv || !arena_u || !arena_d || !lstate)) ||
        !memo || !mbuf_u || !hit || !mbuf_d)
        goto done;
    for (int w = 0; w < threads; ++w) {
        ws[w].uf = malloc(sizeof(uint32_t) * 3 * (size_t)M);
        ws[w].cid = malloc(sizeof(uint32_t) * 3 * (size_t)M);
        ws[w].evict = calloc(M, 1);
        ws[w].hkey = malloc(sizeof(uint32_t) * H);
        ws[w].hval = malloc(sizeof(uint32_t) * H);
        ws[w].hused = malloc(sizeof(uint32_t) * M);
        ws[w].hmask = H - 1;
        ws[w].hshift = hshift;
        if (!ws[w].uf || !ws[w].cid || !ws[w].evict || !ws[w].hkey || !ws[w].hval || !ws[w].hused) goto done;
        memset(ws[w].hkey, 0xFF, sizeof(uint32_t) * H);
    }
    for (uint32_t i = 0; i < M; ++i) iota[i] = i;
    for (uint32_t k = 0; k < K; ++k) {
        tries[k].tris = tbuf + 6 * (size_t)M * k;
        tries[k].keep = tries[k].tris + M;
        tries[k].front = tries[k].keep + M;
        tries[k].loc = lbuf + 6 * (size_t)M * k;
        memo[k].tris = mbuf_u + 2 * (size_t)M * k;
        memo[k].keep = memo[k].tris + M;
        memo[k].loc = mbuf_d + 6 * (size_t)M * k;
    }
    uint32_t nseeds = 0, ntris = 0;
    for (uint32_t t = 0; t < T; ++t) {
        C->tri_chart[t] = BK_NONE;
        if (!g->degen[t]) seeds[nseeds++] = t;
    }
    needle_ctx nc = { s, g, tried };
    bk_parallel_for(T, 16384, needle_fn, &nc);
    bk_atlas_sort_by_area_desc(seeds, nseeds, g->area, kt);
    for (uint32_t i = 0; i < nseeds; ++i) spos[seeds[i]] = i;
    sm_ctx x = { s, g, A, weld, so, C, tried, { own, own + (size_t)T + 1, own + 2 * ((size_t)T + 1) }, 0, 0, 0, 0, NULL,
                 iota, ws, tries, task, ok_keys, slot, lstate };
    if (so->max_tris < so->min_tris) nseeds = 0;
    for (uint32_t si = 0; si < nseeds;) {
        /* a batch: the next free seeds, each grown at the full limit as one at a time would grow
         * it if every earlier chart of the batch is kept whole (side by side over the triangles
         * free now; again, in order, where that growth met an earlier chart's), then checked side
         * by side, then taken in seed order */
        uint32_t nb = 0, sj = si, *at = (uint32_t *)kt;  /* kt's room: seed index of each try */
        for (; sj < nseeds && nb < K; ++sj) {
            uint32_t seed = seeds[sj];
            if (C->tri_chart[seed] != BK_NONE || tried[seed]) continue;
            tries[nb].seed = seed;
            tries[nb].limit = so->max_tris;
            tries[nb].k = nb;
            tries[nb].skip = 0;
            tries[nb].stale = 0;
            at[nb] = sj;
            nb++;
        }
        if (!nb) break;
        /* Each chart must grow as it would after the batch's earlier charts, as grown: a
         * fixed point, reached side by side. The growths (first over a snapshot that owns
         * nothing) give a snapshot of who owns what (sm_claim_fn, in batch order); a chart whose
         * growth read a triangle that snapshot sees otherwise than the one it grew over is
         * grown again over the new one, and so on until no growth is stale. Chart k is final
         * once the charts before it are, so this ends; and then each chart is exactly what the
         * one-at-a-time loop grows. (That loop grew each chart that met an earlier one again
         * on one thread: dragon_vrip's 170 on 16 simulated threads, 0.05 s.) A snapshot's
         * skips and claims are settled the same way (a skipped chart claims nothing), in a
         * slot other than the one the growths read. */
        /* a batch takes at most (K + 1) (K + 2) + 1 ids (a round per chart at most, each with a
         * claim per chart at most); before they could wrap, every slot forgets (a snapshot
         * lives within its batch) */
        if (snap_id > SM_OWN_ID_MAX - (K + 2) * (K + 2)) {
            memset((void *)own, 0, 3 * ((size_t)T + 1) * sizeof(_Atomic uint32_t));
            snap_id = 0;
        }
        x.oslot = 0;
        x.snap = ++snap_id;
        x.regrow = NULL;
        bk_parallel_for(nb, 1, sm_grow_fn, &x);
        for (;;) {
            x.oslot_prev = x.oslot;
            x.snap_prev = x.snap;
            x.oslot = (x.oslot_prev + 1) % 3;
            for (;;) {
                x.snap = ++snap_id;
                bk_parallel_for(nb, 1, sm_claim_fn, &x);
                if (!sm_skips(&x, nb)) break;
                x.oslot = x.oslot == (x.oslot_prev + 1) % 3 ? (x.oslot_prev + 2) % 3 : (x.oslot_prev + 1) % 3;
            }
            bk_parallel_for(nb, 4, sm_stale_fn, &x);
            uint32_t nre = 0;
            for (uint32_t k = 0; k < nb; ++k)
                if (!tries[k].skip && tries[k].stale) { regrow[nre++] = k; tries[k].stale = 0; }
            if (!nre) break;
            x.regrow = regrow;
            bk_parallel_for(nre, 1, sm_grow_fn, &x);
            x.regrow = NULL;
        }
        /* the checks, largest first (their cost grows with the triangles), so that the batch's
         * longest does not start last: dragon_vrip's batches of 32 on 16 threads, simulated from
         * one-thread times, 0.59 -> 0.52 s */
        uint32_t ntask = 0;
        sm_plan_ctx pc = { &x, nlv, spec ? lv : NULL, arena_u, arena_d, M, memo, nmemo, hit };
        bk_parallel_for(nb, 1, sm_plan_fn, &pc);
        for (uint32_t k = 0; k < nb; ++k) {
            sm_try *t = &tries[k];
            if (t->skip || hit[k] != BK_NONE) continue;
            for (uint32_t j = 0; j <= nlv[k]; ++j) {
                sm_try *c = j ? &lv[(size_t)SM_LEVELS * k + j - 1] : t;
                /* first checks, then later levels; each largest first */
                ok_keys[ntask].key = (uint64_t)(j > 0) << 32 | (uint64_t)(UINT32_MAX - c->nt);
                ok_keys[ntask].idx = ntask;
                task[ntask] = c;
                slot[ntask] = nlv[k] ? k * (SM_LEVELS + 1) + j : BK_NONE;
                if (nlv[k]) atomic_store(&lstate[k * (SM_LEVELS + 1) + j], 0);
                ntask++;
            }
        }
        qsort(ok_keys, ntask, sizeof(key_idx), bk_key_idx_cmp);
        bk_parallel_for(ntask, 1, sm_check_fn, &x);
        for (uint32_t k = 0; k < nb; ++k)
            if (nlv[k]) sm_spec_take(&tries[k], lv + (size_t)SM_LEVELS * k, nlv[k], lstate + k * (SM_LEVELS + 1));
        sm_memo_ctx mc = { tries, memo, hit, 0, C->loc };
        bk_parallel_for(nb, 1, sm_corners_fn, &mc);
        si = sj;
        uint32_t nfreed = 0, min_freed = UINT32_MAX, kc = nb;
        for (uint32_t k = 0; k < nb; ++k) {
            sm_try *t = &tries[k];
            if (t->skip) continue;
            if (t->err) goto done;
            if (min_freed < at[k] || (nfreed && sm_touches(A, t, freed))) {
                kc = k;
                /* a chart grown beside triangles an earlier one freed, or after a freed seed:
                 * it and the batch's later charts are let go; the next batch starts at it (the
                 * seeds before it that the batch skipped were taken before the batch) or at the
                 * freed seed */
                si = at[k] < min_freed ? at[k] : min_freed;
                break;
            }
            int r = sm_take(&x, t, tried, &ntris, work);
            if (r < 0) goto done;
            if (r == 1) continue;
            /* it freed triangles (evictions, or grown again smaller, which sm_check_chain did: the
             * prefix of its first growth, so the later charts do not change it). A later chart of
             * the batch stands only when it never met one (never grew beside one, and its seed
             * comes before every freed seed) */
            for (uint32_t i = 0; i < t->nt0; ++i) {
                uint32_t u = t->tris[i];
                if (C->tri_chart[u] != BK_NONE || tried[u] || freed[u]) continue;
                freed[u] = 1;
                freed_list[nfreed++] = u;
                if (spos[u] > at[k] && spos[u] < min_freed) min_freed = spos[u];
            }
        }
        if (min_freed < si) si = min_freed;  /* a freed seed after the batch's last chart */
        for (uint32_t i = 0; i < nfreed; ++i) freed[freed_list[i]] = 0;
        /* the charts let go, checked, for the next batch */
        mc.first = kc;
        nmemo = nb - kc;
        bk_parallel_for(nmemo, 1, sm_save_fn, &mc);
    }
    rc = 0;
done:
    for (int w = 0; ws && w < threads; ++w) {
        lscm_free(&ws[w].W);
        free(ws[w].uf); free(ws[w].cid); free(ws[w].evict); free(ws[w].hkey); free(ws[w].hval); free(ws[w].hused); free(ws[w].xy); free(ws[w].pts); free(ws[w].pairs.p);
    }
    free(ws); free(tries); free(tbuf); free(iota); free(lbuf); free(spos); free(freed_list); free(freed);
    free(seeds); free((void *)own); free(regrow); free(tried); free(kt);
    free(task); free(lv); free(nlv); free(arena_u); free(arena_d); free(slot); free((void *)lstate); free(ok_keys);
    free(memo); free(mbuf_u); free(hit); free(mbuf_d);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Tidying chart borders. Region growing leaves ragged borders (a triangle of one chart poking
 * into another, the other's triangles on two of its sides), and every texel of border costs a
 * ring of padding and keeps neighbours away in the packing. A triangle with two edges shared with
 * one other chart B has all three corners on B already: in B's layout it fills the notch between
 * them, with no new unfolding. It moves to B when that layout keeps B's rules (no flip, a planar
 * chart's density within its cone, a smooth chart's area within max_stretch) and overlaps none of
 * B's triangles. Each move shortens the border (one edge instead of two), so this ends; a
 * triangle is a leaf of its old chart (one edge there at most), so both charts stay connected. */

/* Singular values of the map from triangle t (world, its own plane) to its layout L. */
static int tri_map_sv(const bk_scene *s, uint32_t t, const double *L, double *s1, double *s2)
{
    double p0[3], p1[3], p2[3], e1[3], e2[3], c[3];
    bk_atlas_pos_of(s, t, 0, p0); bk_atlas_pos_of(s, t, 1, p1); bk_atlas_pos_of(s, t, 2, p2);
    for (int k = 0; k < 3; ++k) { e1[k] = p1[k] - p0[k]; e2[k] = p2[k] - p0[k]; }
    c[0] = e1[1] * e2[2] - e1[2] * e2[1]; c[1] = e1[2] * e2[0] - e1[0] * e2[2]; c[2] = e1[0] * e2[1] - e1[1] * e2[0];
    double l1 = sqrt(bk_dot3d(e1, e1)), dd = sqrt(bk_dot3d(c, c));
    if (!(l1 > 0) || !(dd > 0)) return -1;
    double x2 = bk_dot3d(e2, e1) / l1, y2 = dd / l1;
    /* M = U P^-1 with P = [l1 x2; 0 y2] */
    double u1 = L[2] - L[0], v1 = L[3] - L[1], u2 = L[4] - L[0], v2 = L[5] - L[1];
    double m00 = u1 / l1, m10 = v1 / l1;
    double m01 = (u2 - x2 * m00) / y2, m11 = (v2 - x2 * m10) / y2;
    double det = m00 * m11 - m01 * m10, E = m00 * m00 + m01 * m01 + m10 * m10 + m11 * m11;
    if (!(det > 0)) return -1;
    double q = sqrt(bk_dmax(E * E - 4 * det * det, 0));
    *s1 = sqrt(0.5 * (E + q));
    *s2 = det / *s1;
    return 0;
}

/* The edge each neighbour shares, found once for every pass (on the pool): ek[p] for adj[p] of t
 * is 3 kt + ku (corners kt -> kt+1 of t are ku+1 -> ku of the neighbour), 0xFF for none. */
typedef struct tidy_edge_ctx { const bk_scene *s; const uint32_t *weld; const adjacency *A; uint8_t *ek; } tidy_edge_ctx;

static void tidy_edge_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const tidy_edge_ctx *c = ctx;
    const uint32_t *weld = c->weld, *tv = c->s->tri_v;
    for (size_t t = begin; t < end; ++t)
        for (uint32_t p = c->A->start[t]; p < c->A->start[t + 1]; ++p) {
            uint32_t u = c->A->adj[p];
            int kt = -1, ku = -1;
            for (int x = 0; x < 3 && kt < 0; ++x)
                for (int y = 0; y < 3; ++y)
                    if (weld[tv[3 * t + x]] == weld[tv[3 * (size_t)u + (y + 1) % 3]] &&
                        weld[tv[3 * t + (x + 1) % 3]] == weld[tv[3 * (size_t)u + y]]) { kt = x; ku = y; break; }
            c->ek[p] = kt < 0 ? 0xFF : (uint8_t)(3 * kt + ku);
        }
}

/* A chart's triangles by where they lie in its layout, so that a move's overlap test reads the
 * few triangles of the chart whose boxes meet the moved one's, not the whole chart (a scan's
 * border triangles are tried against charts of thousands, pass after pass). Built at a chart's
 * first test from its triangles then; triangles that join it later, and those whose box spans
 * many cells, are in `late`, read whole; those that leave it stay in their cells and are passed
 * over by their chart. A triangle's box [x0, x1] covers the cells c(x0) .. c(x1), c monotone
 * (clamped to the grid), so a box meeting it covers one of them: the test sees exactly the
 * triangles whose boxes meet the moved one's, which are all that bk_atlas_sets_overlap tests. */
typedef struct u32_list { uint32_t *v, n, cap; } u32_list;

static int u32_push(u32_list *l, uint32_t x)
{
    if (l->n == l->cap) {
        uint32_t cap = l->cap ? 2 * l->cap : 16, *q = realloc(l->v, sizeof(uint32_t) * cap);
        if (!q) return -1;
        l->v = q;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

typedef struct tidy_grid {
    double lo[2], inv;       /* cell of (x, y): floor((x - lo) * inv), clamped to the grid */
    int gw, gh;              /* 0: not built */
    int active;              /* read by the tests (from the chart's first test with TIDY_GRID_MIN
                                triangles on; built before, at the start with threads to
                                spare, for a chart that had them then) */
    uint32_t *start, *item;  /* cells' triangles: item[start[c] .. start[c + 1]) */
    u32_list late;
} tidy_grid;

#define TIDY_GRID_MIN   48   /* charts of fewer triangles are read whole */
#define TIDY_GRID_SPAN  64   /* a triangle over more cells goes to late */

static int tidy_cell(const tidy_grid *G, double v, int axis)
{
    double c = floor((v - G->lo[axis]) * G->inv);
    int n = axis ? G->gh : G->gw;
    return c >= n - 1 ? n - 1 : c > 0 ? (int)c : 0;  /* NaN: 0 */
}

/* Chart b's grid from its list (head, next) of m triangles. */
static int tidy_grid_build(tidy_grid *G, const double *loc, uint32_t head, const uint32_t *next, uint32_t m)
{
    double lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX }, b[4];
    for (uint32_t x = head; x != BK_NONE; x = next[x]) {
        bk_box_of_tri(loc + 6 * (size_t)x, b);
        lo[0] = bk_dmin(lo[0], b[0]); lo[1] = bk_dmin(lo[1], b[1]); hi[0] = bk_dmax(hi[0], b[2]); hi[1] = bk_dmax(hi[1], b[3]);
    }
    double ex = hi[0] - lo[0], ey = hi[1] - lo[1], cs = sqrt(ex * ey / m);
    if (!(cs > 0)) cs = bk_dmax(ex, ey) > 0 ? bk_dmax(ex, ey) / m : 1.0;
    G->lo[0] = lo[0]; G->lo[1] = lo[1]; G->inv = 1.0 / cs;
    G->gw = (int)bk_dmin(ex / cs + 1, 2.0 * m + 1);
    G->gh = (int)bk_dmin(ey / cs + 1, 2.0 * m + 1);
    if (G->gw < 1) G->gw = 1;
    if (G->gh < 1) G->gh = 1;
    while ((size_t)G->gw * G->gh > 4 * (size_t)m + 16) {  /* a degenerate spread: coarser cells */
        G->inv *= 0.5;
        G->gw = (G->gw + 1) / 2; G->gh = (G->gh + 1) / 2;
    }
    size_t cells = (size_t)G->gw * G->gh, total = 0;
    G->start = calloc(cells + 1, sizeof(uint32_t));
    if (!G->start) return -1;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t x = head; x != BK_NONE; x = next[x]) {
            bk_box_of_tri(loc + 6 * (size_t)x, b);
            int cx0 = tidy_cell(G, b[0], 0), cx1 = tidy_cell(G, b[2], 0), cy0 = tidy_cell(G, b[1], 1), cy1 = tidy_cell(G, b[3], 1);
            if ((cx1 - cx0 + 1) * (cy1 - cy0 + 1) > TIDY_GRID_SPAN) {
                if (pass == 1 && u32_push(&G->late, x)) return -1;
                continue;
            }
            for (int cy = cy0; cy <= cy1; ++cy)
                for (int cx = cx0; cx <= cx1; ++cx) {
                    size_t c = (size_t)cy * G->gw + cx;
                    if (pass == 0) G->start[c + 1]++;
                    else G->item[G->start[c]++] = x;
                }
        }
        if (pass == 0) {
            for (size_t c = 0; c < cells; ++c) G->start[c + 1] += G->start[c];
            total = G->start[cells];
            G->item = malloc(sizeof(uint32_t) * (total ? total : 1));
            if (!G->item) return -1;
        } else {
            for (size_t c = cells; c > 0; --c) G->start[c] = G->start[c - 1];  /* back to the cells' starts */
            G->start[0] = 0;
        }
    }
    return 0;
}

static void tidy_grid_free(tidy_grid *G)
{
    free(G->start); free(G->item); free(G->late.v);
    memset(G, 0, sizeof *G);
}

/* Triangle x's corners to out when it is still chart b's, not seen in query q, and its box meets
 * box[]: 1, else 0. */
static uint32_t tidy_take(const double *loc, const uint32_t *tri_chart, uint32_t b, const double *box, uint32_t *seen, uint32_t q,
                          uint32_t x, double *out)
{
    double tb[4];
    if (seen[x] == q || tri_chart[x] != b) return 0;
    seen[x] = q;
    bk_box_of_tri(loc + 6 * (size_t)x, tb);
    if (!(tb[0] <= box[2] && tb[2] >= box[0] && tb[1] <= box[3] && tb[3] >= box[1])) return 0;
    memcpy(out, loc + 6 * (size_t)x, 6 * sizeof(double));
    return 1;
}

/* Chart b's triangles whose boxes meet box[] (corners into xb, each once: seen stamps them with
 * q); returns how many. */
static uint32_t tidy_near(const tidy_grid *G, const double *loc, const uint32_t *tri_chart, uint32_t b, const double *box,
                          uint32_t *seen, uint32_t q, double *xb)
{
    uint32_t m = 0;
    int cx0 = tidy_cell(G, box[0], 0), cx1 = tidy_cell(G, box[2], 0), cy0 = tidy_cell(G, box[1], 1), cy1 = tidy_cell(G, box[3], 1);
    for (int cy = cy0; cy <= cy1; ++cy)
        for (int cx = cx0; cx <= cx1; ++cx) {
            size_t c = (size_t)cy * G->gw + cx;
            for (uint32_t i = G->start[c]; i < G->start[c + 1]; ++i)
                m += tidy_take(loc, tri_chart, b, box, seen, q, G->item[i], xb + 6 * (size_t)m);
        }
    for (uint32_t i = 0; i < G->late.n; ++i) m += tidy_take(loc, tri_chart, b, box, seen, q, G->late.v[i], xb + 6 * (size_t)m);
    return m;
}

/* The changed charts' rectangles fitted again, side by side (each writes only its own corners). */
typedef struct tidy_fit_ctx { charting *C; const uint8_t *changed; bk_hpt **pts; size_t *cap; int err; } tidy_fit_ctx;

static void tidy_fit_fn(void *ctx, size_t begin, size_t end, int worker)
{
    tidy_fit_ctx *f = ctx;
    chart *ch = f->C->charts;
    for (size_t ci = begin; ci < end; ++ci)
        if (f->changed[ci] && bk_atlas_fit_rect(f->C->loc, f->C->chart_tris + ch[ci].first, ch[ci].count, &ch[ci].w, &ch[ci].h, &f->pts[worker], &f->cap[worker]))
            f->err = 1;
}

/* Lays the two corners of edge kt of a triangle (layout L, corners already placed: bits of *have)
 * on the matching corners of its neighbour's edge ku (layout Lu, which runs the other way): a
 * corner not placed yet takes the neighbour's, a placed one must be within tol of it. 0 when one
 * is not. */
static int lay_edge(double *L, int *have, const double *Lu, int kt, int ku, double tol)
{
    int ok = 1, tk[2] = { kt, (kt + 1) % 3 }, uk[2] = { (ku + 1) % 3, ku };
    for (int e = 0; e < 2; ++e) {
        double x = Lu[2 * uk[e]], y = Lu[2 * uk[e] + 1];
        if (*have & (1 << tk[e])) {
            if (fabs(L[2 * tk[e]] - x) > tol || fabs(L[2 * tk[e] + 1] - y) > tol) ok = 0;
        } else { L[2 * tk[e]] = x; L[2 * tk[e] + 1] = y; *have |= 1 << tk[e]; }
    }
    return ok;
}

/* Drops the charts of n whose triangle count cnt[] fell to 0 and makes the others' triangle lists
 * (linked through head[] and next[]) contiguous in C->chart_tris again, in chart order; changed[]
 * (when given) moves with its chart. The charts left, or BK_NONE out of memory. */
typedef struct compact_ctx {
    charting *C;
    const uint32_t *live_of, *first, *cnt, *head, *next;  /* per old chart: its new index (BK_NONE: dropped), its first place */
    uint32_t *ids;
} compact_ctx;

static void compact_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const compact_ctx *x = ctx;
    for (size_t ci = begin; ci < end; ++ci) {
        uint32_t live = x->live_of[ci], w = x->first[ci];
        if (live == BK_NONE) continue;
        for (uint32_t t = x->head[ci]; t != BK_NONE; t = x->next[t]) { x->ids[w++] = t; x->C->tri_chart[t] = live; }
        BK_CHECK(w - x->first[ci] == x->cnt[ci]);
    }
}

/* Drops the charts of n whose triangle count cnt[] fell to 0 and makes the others' triangle lists
 * (linked through head[] and next[]) contiguous in C->chart_tris again, in chart order; changed[]
 * (when given) moves with its chart. The lists are walked on the pool, each chart's into its own
 * places. The charts left, or BK_NONE out of memory. */
uint32_t bk_atlas_compact_charts(charting *C, uint32_t n, uint32_t T, const uint32_t *cnt, const uint32_t *head,
                               const uint32_t *next, uint8_t *changed)
{
    uint32_t live = 0, w = 0;
    uint32_t *ids = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *live_of = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *first = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    if (!ids || !live_of || !first) { free(ids); free(live_of); free(first); return BK_NONE; }
    for (uint32_t ci = 0; ci < n; ++ci) {
        live_of[ci] = cnt[ci] ? live++ : BK_NONE;
        first[ci] = w;
        w += cnt[ci];
    }
    compact_ctx cx = { C, live_of, first, cnt, head, next, ids };
    bk_parallel_for(n, 8, compact_fn, &cx);
    for (uint32_t ci = 0; ci < n; ++ci) {
        if (live_of[ci] == BK_NONE) continue;
        chart c = C->charts[ci];
        c.first = first[ci];
        c.count = cnt[ci];
        C->charts[live_of[ci]] = c;
        if (changed) changed[live_of[ci]] = changed[ci];
    }
    memcpy(C->chart_tris, ids, sizeof(uint32_t) * w);
    free(ids); free(live_of); free(first);
    C->count = live;
    return live;
}

/* Triangle x to be tested again: later in this pass (after the current triangle t) or in the next. */
static void tidy_mark(uint64_t *cur, uint64_t *nxt, uint32_t t, uint32_t x)
{
    uint64_t *set = x > t ? cur : nxt;
    set[x >> 6] |= 1ull << (x & 63);
}

/* Each chart's triangle list linked through next and prev, and the grid of a chart with
 * TIDY_GRID_MIN triangles, built here on the pool for its first test: a grid lists the chart's
 * triangles of when it was built and those that joined since (late), so the tests see the same
 * triangles whenever it was built; grids built as the tests came took a third of tidying. */
typedef struct tidy_init_ctx {
    charting *C;
    uint32_t *head, *cnt, *next, *prev;
    tidy_grid *grid;
    int eager;               /* grids too (threads to spare; one thread builds them as the tests come) */
    int err;
} tidy_init_ctx;

static void tidy_init_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    tidy_init_ctx *x = ctx;
    const charting *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, (uint32_t)ci, x->head, NULL, x->cnt, x->next, x->prev);
        if (x->eager && c->count >= TIDY_GRID_MIN && tidy_grid_build(&x->grid[ci], C->loc, x->head[ci], x->next, c->count)) x->err = 1;
    }
}

/* What a triangle's test reads before the overlap search, and the bits of the pass's triangles
 * that fail it. */
typedef struct tidy_cand_ctx {
    const bk_scene *s;
    const adjacency *A;
    const uint8_t *ek;
    const charting *C;
    const float *tri_scale;
    double cmin, max_stretch;
    const uint64_t *cur;
    uint64_t *skip;
    size_t words;
} tidy_cand_ctx;

/* Triangle t's move, short of the overlap search: 1 with the chart b it would join, its corners L
 * in b's layout and the tolerance, when t is a leaf of its chart with two edges on b whose corners
 * agree there, and b's rules allow the layout; else 0. It reads only t's and its neighbours'
 * charts and corners (and b's rectangle and kind, fixed while tidying). */
static int tidy_candidate(const tidy_cand_ctx *x, uint32_t t, uint32_t *out_b, double *L, double *out_tol)
{
    const adjacency *A = x->A;
    const charting *C = x->C;
    uint32_t a = C->tri_chart[t];
    if (a == BK_NONE || A->start[t + 1] - A->start[t] < 2) return 0;
    /* the neighbours' charts and the edge each shares (corners kt -> kt+1 of t are
     * corners ku+1 -> ku of u) */
    uint32_t nb_chart[8], nb_tri[8];
    int nb_kt[8], nb_ku[8], nn = 0;
    for (uint32_t p = A->start[t]; p < A->start[t + 1] && nn < 8; ++p) {
        uint32_t u = A->adj[p];
        if (x->ek[p] == 0xFF) continue;
        int kt = x->ek[p] / 3, ku = x->ek[p] % 3;
        nb_chart[nn] = C->tri_chart[u]; nb_tri[nn] = u; nb_kt[nn] = kt; nb_ku[nn] = ku; nn++;
    }
    int own = 0;
    for (int i = 0; i < nn; ++i) own += nb_chart[i] == a;
    if (own > 1) return 0;  /* not a leaf of its chart */
    for (int i = 0; i < nn; ++i) {
        uint32_t b = nb_chart[i];
        if (b == a || b == BK_NONE) continue;
        int edges = 0;
        for (int j = 0; j < nn; ++j) if (nb_chart[j] == b) edges |= 1 << nb_kt[j];
        if (__builtin_popcount((unsigned)edges) < 2) continue;
        /* t's corners from b's layout: every shared corner must agree */
        double tol = 1e-9 * (C->charts[b].w + C->charts[b].h);
        int have = 0, ok = 1;
        for (int j = 0; j < nn && ok; ++j) {
            if (nb_chart[j] != b) continue;
            const double *Lu = C->loc + 6 * (size_t)nb_tri[j];
            int kt = nb_kt[j], ku = nb_ku[j];
            if (!lay_edge(L, &have, Lu, kt, ku, tol)) ok = 0;
        }
        if (!ok || have != 7) return 0;
        double s1, s2, f = x->tri_scale ? x->tri_scale[t] : 1.0;
        if (tri_map_sv(x->s, t, L, &s1, &s2)) return 0;
        s1 /= f; s2 /= f;
        if (C->charts[b].smooth) {
            double r = s1 * s2;
            if (!(r <= x->max_stretch && r >= 1.0 / x->max_stretch && s1 <= 2.0 * s2)) return 0;
        } else if (!(s1 <= 1.0 + 1e-6 && s2 >= x->cmin && s1 * s2 >= x->cmin)) return 0;
        *out_b = b;
        *out_tol = tol;
        return 1;
    }
    return 0;
}

/* skip: the pass's triangles (cur) that are no candidates now, 64 to a word, each word its chunk's
 * own. Most triangles are none (dragon_vrip: 17,000 of 900,000 tests), so the serial pass
 * looks only at the others and at those whose neighbourhood a move changed. */
static void tidy_skip_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const tidy_cand_ctx *x = ctx;
    for (size_t w = begin; w < end; ++w) {
        uint64_t m = x->cur[w], sk = 0;
        while (m) {
            uint32_t t = (uint32_t)(64 * w) + (uint32_t)__builtin_ctzll(m);
            uint32_t b;
            double L[6], tol;
            if (!tidy_candidate(x, t, &b, L, &tol)) sk |= 1ull << (t & 63);
            m &= m - 1;
        }
        x->skip[w] = sk;
    }
}

int bk_atlas_charts_tidy(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale, double cone_deg,
                         double max_stretch, charting *C, uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count;
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *prev = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint8_t *changed = calloc((size_t)n + 1, 1);
    tidy_grid *grid = calloc((size_t)n + 1, sizeof(tidy_grid));
    uint32_t *seen = calloc((size_t)T + 1, sizeof(uint32_t)), query = 0;
    size_t words = ((size_t)T + 63) / 64;
    uint64_t *cur = malloc(sizeof(uint64_t) * (words + 1)), *nxt = calloc(words + 1, sizeof(uint64_t));
    uint64_t *skip = malloc(sizeof(uint64_t) * (words + 1));
    u32_list *ovl = calloc((size_t)n + 1, sizeof(u32_list));
    double *xb = NULL;
    size_t xb_cap = 0;
    overlap_scratch ovs = { 0 };
    int rc = -1;
    const double cmin = cos(cone_deg * BK_ATLAS_PI / 180.0);
    uint8_t *ek = malloc((size_t)A->start[T] + 1);
    if (!next || !prev || !head || !cnt || !changed || !ek || !grid || !seen || !cur || !nxt || !skip || !ovl) goto done;
    tidy_edge_ctx ec = { s, weld, A, ek };
    bk_parallel_for(T, 8192, tidy_edge_fn, &ec);
    tidy_init_ctx ic = { C, head, cnt, next, prev, grid, bk_pool_threads() > 1, 0 };
    bk_parallel_for(n, 8, tidy_init_fn, &ic);
    if (ic.err) goto done;
    /* Each pass looks at the triangles whose test may have changed since their last one (the
     * first pass at all): what a test reads is the triangle's and its neighbours' charts and
     * corners, which change only when one of them moves, and for a test that failed on an
     * overlap with chart b, b's triangles, whose leaving may let it pass (joining only adds
     * overlaps). So a move marks the mover and its neighbours (adjacency is symmetric: shared
     * edges), and a chart that loses a triangle marks those that failed on it; marks after the
     * current triangle count in this pass, the others in the next. The moves are those of
     * testing every triangle in every pass. */
    for (size_t w = 0; w < words; ++w) cur[w] = ~0ull;
    if (T & 63) cur[words - 1] = (1ull << (T & 63)) - 1;
    tidy_cand_ctx tc = { s, A, ek, C, tri_scale, cmin, max_stretch, NULL, skip, words };
    for (int pass = 0; pass < 8; ++pass) {
        uint32_t moved = 0;
        tc.cur = cur;
        bk_parallel_for(words, 256, tidy_skip_fn, &tc);
        for (size_t w = 0; w < words; ++w)
            while (cur[w]) {
            uint32_t t = (uint32_t)(64 * w) + (uint32_t)__builtin_ctzll(cur[w]);
            cur[w] &= cur[w] - 1;
            if (skip[w] >> (t & 63) & 1) continue;  /* not a candidate, as tidy_skip_fn found */
            uint32_t a = C->tri_chart[t], b;
            double L[6], tol;
            if (!tidy_candidate(&tc, t, &b, L, &tol)) continue;
            /* overlaps with b's triangles */
            if (6 * (size_t)cnt[b] > xb_cap) {
                size_t cap = 12 * (size_t)cnt[b] + 64;
                double *q = realloc(xb, sizeof(double) * cap);
                if (!q) goto done;
                xb = q; xb_cap = cap;
            }
            uint32_t m = 0;
            if (cnt[b] >= TIDY_GRID_MIN && !grid[b].active) {
                if (!grid[b].gw && tidy_grid_build(&grid[b], C->loc, head[b], next, cnt[b])) goto done;
                grid[b].active = 1;
            }
            if (grid[b].active) {
                double lb[4];
                bk_box_of_tri(L, lb);
                m = tidy_near(&grid[b], C->loc, C->tri_chart, b, lb, seen, ++query, xb);
            }
            if (!grid[b].active || m > 4096)  /* (beyond 4096 the test's order matters: the whole list) */
                for (uint32_t x = (m = 0, head[b]); x != BK_NONE; x = next[x]) memcpy(xb + 6 * (size_t)m++, C->loc + 6 * (size_t)x, 6 * sizeof(double));
            int ov = bk_atlas_sets_overlap(L, 1, xb, m, tol * 10, &ovs, work);
            if (ov < 0 || (ov && u32_push(&ovl[b], t))) goto done;
            if (ov) continue;
            /* move: out of a's list, onto the end of b's */
            if (prev[t] != BK_NONE) next[prev[t]] = next[t]; else head[a] = next[t];
            if (next[t] != BK_NONE) prev[next[t]] = prev[t];
            cnt[a]--;
            next[t] = head[b]; prev[t] = BK_NONE;
            if (head[b] != BK_NONE) prev[head[b]] = t;
            head[b] = t;
            cnt[b]++;
            memcpy(C->loc + 6 * (size_t)t, L, sizeof L);
            C->tri_chart[t] = b;
            if (grid[b].gw && u32_push(&grid[b].late, t)) goto done;
            changed[a] = changed[b] = 1;
            moved++;
            tidy_mark(cur, nxt, t, t);
            for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                tidy_mark(cur, nxt, t, A->adj[p]);
                skip[A->adj[p] >> 6] &= ~(1ull << (A->adj[p] & 63));  /* its test reads t */
            }
            for (uint32_t i = 0; i < ovl[a].n; ++i) tidy_mark(cur, nxt, t, ovl[a].v[i]);
            ovl[a].n = 0;
            }
        if (!moved) break;
        uint64_t *sw = cur; cur = nxt; nxt = sw;
        memset(nxt, 0, sizeof(uint64_t) * words);
    }
    /* compact: charts with triangles left, their lists contiguous again, rectangles refitted */
    {
        uint32_t live = bk_atlas_compact_charts(C, n, T, cnt, head, next, changed);
        if (live == BK_NONE) goto done;
        int threads = bk_pool_threads();
        tidy_fit_ctx fc = { C, changed, calloc((size_t)threads, sizeof(bk_hpt *)), calloc((size_t)threads, sizeof(size_t)), 0 };
        if (fc.pts && fc.cap) bk_parallel_for(live, 4, tidy_fit_fn, &fc);
        for (int w = 0; fc.pts && w < threads; ++w) free(fc.pts[w]);
        int bad = !fc.pts || !fc.cap || fc.err;
        free(fc.pts); free(fc.cap);
        if (bad) goto done;
    }
    rc = 0;
done:
    for (uint32_t ci = 0; grid && ci < n; ++ci) tidy_grid_free(&grid[ci]);
    for (uint32_t ci = 0; ovl && ci < n; ++ci) free(ovl[ci].v);
    free(grid); free(seen); free(cur); free(nxt); free(skip); free(ovl);
    free(next); free(prev); free(head); free(cnt); free(changed); free(xb); free(ek);
    bk_atlas_overlap_scratch_free(&ovs);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Absorbing small charts. What the packer loses most is the padding ring around each chart, and
 * small or thin charts are mostly ring (a chart one texel tall pays two rows of padding for each
 * row it covers). Most of them share edges with a larger chart, whose layout the unfolding merge
 * cannot extend: the two layouts give the shared edges different lengths (a planar projection
 * shortens tilted edges, a conformal map scales each region its own way). Here a small chart's
 * triangles join a neighbour one at a time, breadth-first from the shared edges: a triangle with
 * all three corners on placed triangles takes them (they must agree), one with an edge on them
 * is laid on that edge with its own shape, scaled by the edge's length in the layout over its
 * world length (a similarity: no shear). Each keeps the neighbour's rules (no flip, a planar
 * chart's density within [cos cone, 1], a smooth chart's within max_stretch), and the moved
 * triangles overlap neither each other nor the neighbour. The chart moves whole or not at all,
 * smallest first, into the neighbour it shares the most edge length with (of four tried), and
 * only where the union's rectangle grown by the padding costs no more than the two apart (a move
 * that makes a long arm leaves a hole the packer rarely fills).
 * Planar charts move, and smooth ones made of large triangles (smooth_min_tri: a mean area of at
 * least that many padding squares), which are pieces of modelled curves (mouldings, arches) as a
 * planar chart is a piece of a wall; a scan's small smooth pieces, of many tiny triangles, are
 * what fills the gaps between its large charts, and stay. Measured at 960, 1024 and 1088 texels
 * (mean utilisation): planar ones: sibenik 75.2 -> 77.0 %, sponza 86.0 -> 86.1,
 * dragon_vrip_res2 75.0 -> 75.3; all smooth ones too: 77.6, 86.1, but dragon 74.8. Later (with
 * smooth charts of up to 4,000 triangles) smooth ones of triangles of at least 0.6 padding
 * squares: sibenik 76.9 -> 77.4 %, sponza 87.2 -> 87.4, dragon_vrip_res2 78.0 -> 77.9 (1, 0.3:
 * 77.3, 77.4; all: 77.7, but dragon 77.2); small scenes: bunny at 512^2 67.8 -> 76.6 % (21
 * charts: 16, with the join), WusonOBJ, a low-poly character whose triangles count as large,
 * 82.0 -> 80.9 at 1024^2 (without the join; 1 point at 640 to 1536 too). Without the
 * rectangle test: sibenik 74.3, dragon 73.8 (fewer charts, more holes). */

/* The edge shared by triangles t and u: corners kt -> kt+1 of t are ku+1 -> ku of u; 0 or -1. */
int bk_atlas_shared_edge(const bk_scene *s, const uint32_t *weld, uint32_t t, uint32_t u, int *kt, int *ku)
{
    for (int x = 0; x < 3; ++x)
        for (int y = 0; y < 3; ++y)
            if (weld[s->tri_v[3 * (size_t)t + x]] == weld[s->tri_v[3 * (size_t)u + (y + 1) % 3]] &&
                weld[s->tri_v[3 * (size_t)t + (x + 1) % 3]] == weld[s->tri_v[3 * (size_t)u + y]]) { *kt = x; *ku = y; return 0; }
    return -1;
}

/* Corner k of t laid on its edge i -> j already at L[2i..], L[2j..]: t's world shape scaled by
 * the edge's layout length over its world length, on the side that keeps the layout's positive
 * orientation. */
static void lay_on_edge(const bk_scene *s, uint32_t t, int i, int j, int k, double *L)
{
    double pi[3], pj[3], pk[3], e[3], d[3];
    bk_atlas_pos_of(s, t, i, pi); bk_atlas_pos_of(s, t, j, pj); bk_atlas_pos_of(s, t, k, pk);
    for (int q = 0; q < 3; ++q) { e[q] = pj[q] - pi[q]; d[q] = pk[q] - pi[q]; }
    double lw2 = bk_dot3d(e, e), along = bk_dot3d(d, e) / lw2;
    double perp2 = bk_dot3d(d, d) - along * along * lw2, perp = sqrt(bk_dmax(perp2, 0)) / sqrt(lw2);
    double ex = L[2 * j] - L[2 * i], ey = L[2 * j + 1] - L[2 * i + 1];
    /* in layout units: along and perp are fractions of the edge (scale la / lw built in) */
    double x1 = L[2 * i] + along * ex - perp * ey, y1 = L[2 * i + 1] + along * ey + perp * ex;
    double x2 = L[2 * i] + along * ex + perp * ey, y2 = L[2 * i + 1] + along * ey - perp * ex;
    L[2 * k] = x1; L[2 * k + 1] = y1;
    double a1 = (L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]);
    if (!(a1 > 0)) { L[2 * k] = x2; L[2 * k + 1] = y2; }
}

typedef struct absorb_nb { double len; uint32_t b; } absorb_nb;
static int absorb_nb_cmp(const void *pa, const void *pb)
{
    const absorb_nb *a = pa, *b = pb;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

/* Each chart's list linked through next (and its triangles' slots cleared), on the pool; then,
 * with threads to spare, each chart's hull. */
typedef struct absorb_init_ctx {
    const charting *C;
    uint32_t *head, *tail, *cnt, *next, *slot;
    bk_hpt **hull_p;
    int *hull_n;
    atomic_int err;
} absorb_init_ctx;

static void absorb_init_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    absorb_init_ctx *x = ctx;
    const charting *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, (uint32_t)ci, x->head, x->tail, x->cnt, x->next, NULL);
        for (uint32_t i = 0; i < c->count; ++i) x->slot[C->chart_tris[c->first + i]] = BK_NONE;
    }
}

static void absorb_hull_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    absorb_init_ctx *x = ctx;
    const charting *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        size_t nb3 = 0, np = 3 * (size_t)x->cnt[ci];
        if (!np) continue;
        bk_hpt *hp = malloc(sizeof(bk_hpt) * 3 * np);
        if (!hp) { x->err = 1; continue; }
        for (uint32_t t = x->head[ci]; t != BK_NONE; t = x->next[t])
            for (int k2 = 0; k2 < 3; ++k2) { hp[nb3].x = C->loc[6 * (size_t)t + 2 * k2]; hp[nb3].y = C->loc[6 * (size_t)t + 2 * k2 + 1]; nb3++; }
        int bn = bk_atlas_convex_hull(hp, (int)nb3, hp + nb3);
        if (!(x->hull_p[ci] = malloc(sizeof(bk_hpt) * ((size_t)bn + 1)))) x->err = 1;
        else { memcpy(x->hull_p[ci], hp + nb3, sizeof(bk_hpt) * (size_t)bn); x->hull_n[ci] = bn; }
        free(hp);
    }
}

int bk_atlas_charts_absorb(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale, double cone_deg,
                           double max_stretch, double max_cost, double pad_w, double smooth_min_tri, charting *C, uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count;
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *slot = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    key_idx *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    absorb_nb *nbs = NULL;
    uint32_t *ids = NULL, *queue = NULL;
    double *xa = NULL, *xb = NULL, *len = malloc(sizeof(double) * ((size_t)n + 1));
    size_t cap_a = 0, cap_b = 0, cap_nb = 0, cap_h = 0, cap_bt = 0;
    bk_hpt *hp = NULL, **hull_p = calloc((size_t)n + 1, sizeof(bk_hpt *));
    int *hull_n = calloc((size_t)n + 1, sizeof(int));
    uint32_t *bt = NULL;
    pair_list pairs = { 0 };
    overlap_scratch ovs = { 0 };
    int rc = -1;
    const double cmin = cos(cone_deg * BK_ATLAS_PI / 180.0);
    if (!next || !tail || !head || !cnt || !slot || !stamp || !order || !len || !hull_p || !hull_n) goto done;
    uint32_t nsmall = 0;
    absorb_init_ctx ic = { C, head, tail, cnt, next, slot, NULL, NULL, 0 };
    bk_parallel_for(n, 16, absorb_init_fn, &ic);
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        stamp[ci] = BK_NONE;
        double cost = (c->w + pad_w) * (c->h + pad_w);
        if (!(cost <= max_cost * pad_w * pad_w)) continue;
        if (c->smooth) {
            double area = 0;
            for (uint32_t i = 0; i < c->count; ++i) area += bk_tri2_area(C->loc + 6 * (size_t)C->chart_tris[c->first + i]);
            if (!(smooth_min_tri > 0 && area >= smooth_min_tri * pad_w * pad_w * c->count)) continue;
        }
        uint64_t bits;
        memcpy(&bits, &cost, 8);
        order[nsmall].key = bits;
        order[nsmall].idx = ci;
        nsmall++;
    }
    if (bk_pool_threads() > 1 && nsmall) {
        /* every chart's hull now, side by side: the loop below makes a neighbour's hull at its
         * first use from its corners then, which are these unless it took a chart before (and
         * then it has its hull already); one thread makes only those it uses */
        ic.hull_p = hull_p; ic.hull_n = hull_n;
        bk_parallel_for(n, 4, absorb_hull_fn, &ic);
        if (ic.err) goto done;
    }
    bk_key_idx_sort(order, nsmall);
    for (uint32_t oi = 0; oi < nsmall; ++oi) {
        uint32_t a = order[oi].idx;
        if (!cnt[a]) continue;
        /* a's neighbouring charts by the length of the edges they share */
        uint32_t nn = 0;
        for (uint32_t t = head[a]; t != BK_NONE; t = next[t])
            for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                uint32_t u = A->adj[p], b = C->tri_chart[u];
                int kt, ku;
                if (b == a || b == BK_NONE || bk_atlas_shared_edge(s, weld, t, u, &kt, &ku)) continue;
                double p0[3], p1[3], e[3];
                bk_atlas_pos_of(s, t, kt, p0); bk_atlas_pos_of(s, t, (kt + 1) % 3, p1);
                for (int q = 0; q < 3; ++q) e[q] = p1[q] - p0[q];
                if (stamp[b] != a) {
                    stamp[b] = a;
                    len[b] = 0;
                    if (nn + 1 > cap_nb) {
                        cap_nb = 2 * nn + 16;
                        absorb_nb *q = realloc(nbs, sizeof(absorb_nb) * cap_nb);
                        if (!q) goto done;
                        nbs = q;
                    }
                    nbs[nn].b = b;
                    nn++;
                }
                len[b] += sqrt(bk_dot3d(e, e));
            }
        if (!nn) continue;  /* alone (a separate piece of the mesh) */
        for (uint32_t k = 0; k < nn; ++k) nbs[k].len = len[nbs[k].b];
        qsort(nbs, nn, sizeof(absorb_nb), absorb_nb_cmp);
        if ((size_t)cnt[a] > cap_a) {
            cap_a = 2 * (size_t)cnt[a] + 16;
            double *q = realloc(xa, sizeof(double) * 6 * cap_a);
            uint32_t *qi = realloc(ids, sizeof(uint32_t) * cap_a), *qq = realloc(queue, sizeof(uint32_t) * cap_a);
            if (q) xa = q;
            if (qi) ids = qi;
            if (qq) queue = qq;
            if (!q || !qi || !qq) goto done;
        }
        uint32_t na = 0;
        for (uint32_t t = head[a]; t != BK_NONE; t = next[t]) ids[na++] = t;
        for (uint32_t k = 0; k < nn && k < 4; ++k) {
            uint32_t b = nbs[k].b;
            const chart *cb = &C->charts[b];
            double tol = 1e-9 * (cb->w + cb->h);
            /* slot[t]: t's place in xa once laid (BK_NONE before); breadth-first from b */
            uint32_t qh = 0, qt = 0, placed = 0;
            int ok = 1;
            for (uint32_t i = 0; i < na; ++i) slot[ids[i]] = BK_NONE;
            for (uint32_t i = 0; i < na; ++i) {
                uint32_t t = ids[i];
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p)
                    if (C->tri_chart[A->adj[p]] == b) { slot[t] = BK_NONE - 1; queue[qt++] = t; break; }  /* queued */
            }
            while (qh < qt && ok) {
                uint32_t t = queue[qh++];
                double L[6];
                int have = 0, edge_i = -1;
                for (uint32_t p = A->start[t]; p < A->start[t + 1] && ok; ++p) {
                    uint32_t u = A->adj[p];
                    const double *Lu;
                    if (C->tri_chart[u] == b) Lu = C->loc + 6 * (size_t)u;
                    else if (C->tri_chart[u] == a && slot[u] < BK_NONE - 1) Lu = xa + 6 * (size_t)slot[u];
                    else continue;
                    int kt, ku;
                    if (bk_atlas_shared_edge(s, weld, t, u, &kt, &ku)) continue;
                    if (!lay_edge(L, &have, Lu, kt, ku, tol)) ok = 0;
                    if (edge_i < 0) edge_i = kt;
                }
                if (!ok || edge_i < 0) { ok = 0; break; }
                if (have != 7) lay_on_edge(s, t, edge_i, (edge_i + 1) % 3, (edge_i + 2) % 3, L);
                double s1, s2, f = tri_scale ? tri_scale[t] : 1.0;
                if (tri_map_sv(s, t, L, &s1, &s2)) { ok = 0; break; }
                s1 /= f; s2 /= f;
                if (cb->smooth) {
                    double r = s1 * s2;
                    if (!(r <= max_stretch && r >= 1.0 / max_stretch && s1 <= 2.0 * s2)) { ok = 0; break; }
                } else if (!(s1 <= 1.0 + 1e-6 && s2 >= cmin && s1 * s2 >= cmin)) { ok = 0; break; }
                memcpy(xa + 6 * (size_t)placed, L, sizeof L);
                slot[t] = placed++;
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                    uint32_t u = A->adj[p];
                    if (C->tri_chart[u] == a && slot[u] == BK_NONE) { slot[u] = BK_NONE - 1; queue[qt++] = u; }
                }
            }
            if (!ok || placed != na) continue;
            /* overlaps: among the moved triangles, and with b's */
            pairs.n = 0;
            if (bk_atlas_find_overlaps(xa, na, tol * 10, &pairs, work)) goto done;
            if (pairs.n) continue;
            /* the union's rectangle from b's hull (made from its corners once, then kept) and
             * the moved corners */
            size_t np = 3 * ((size_t)(hull_p[b] ? (uint32_t)hull_n[b] : cnt[b]) + na);
            if (np * 3 + 1 > cap_h) {
                cap_h = np * 3 + 1;
                bk_hpt *q = realloc(hp, sizeof(bk_hpt) * cap_h);
                if (!q) goto done;
                hp = q;
            }
            if (!hull_p[b]) {
                size_t nb3 = 0;
                for (uint32_t x = head[b]; x != BK_NONE; x = next[x])
                    for (int k2 = 0; k2 < 3; ++k2) { hp[nb3].x = C->loc[6 * (size_t)x + 2 * k2]; hp[nb3].y = C->loc[6 * (size_t)x + 2 * k2 + 1]; nb3++; }
                int bn = bk_atlas_convex_hull(hp, (int)nb3, hp + nb3);
                if (!(hull_p[b] = malloc(sizeof(bk_hpt) * ((size_t)bn + 1)))) goto done;
                memcpy(hull_p[b], hp + nb3, sizeof(bk_hpt) * (size_t)bn);
                hull_n[b] = bn;
            }
            size_t hb = (size_t)hull_n[b];
            np = hb + 3 * (size_t)na;
            memcpy(hp, hull_p[b], sizeof(bk_hpt) * hb);
            for (uint32_t i = 0; i < na; ++i)
                for (int k2 = 0; k2 < 3; ++k2) { hp[hb + 3 * i + k2].x = xa[6 * (size_t)i + 2 * k2]; hp[hb + 3 * i + k2].y = xa[6 * (size_t)i + 2 * k2 + 1]; }
            int hn = bk_atlas_convex_hull(hp, (int)np, hp + np);
            double rcs, rsn, rw, rh;
            bk_atlas_rect_from_hull(hp + np, hn, &rcs, &rsn, &rw, &rh);
            const chart *ca = &C->charts[a];
            double gain = (cb->w + pad_w) * (cb->h + pad_w) + (ca->w + pad_w) * (ca->h + pad_w) - (rw + pad_w) * (rh + pad_w);
            if (!(gain > 0)) continue;
            if (6 * (size_t)cnt[b] > cap_b) {
                cap_b = 12 * (size_t)cnt[b] + 64;
                double *q = realloc(xb, sizeof(double) * cap_b);
                if (!q) goto done;
                xb = q;
            }
            uint32_t m = 0;
            for (uint32_t x = head[b]; x != BK_NONE; x = next[x]) memcpy(xb + 6 * (size_t)m++, C->loc + 6 * (size_t)x, 6 * sizeof(double));
            int ov = bk_atlas_sets_overlap(xa, na, xb, m, tol * 10, &ovs, work);
            if (ov < 0) goto done;
            if (ov) continue;
            /* move: a's triangles (in the order laid) onto the end of b's list */
            for (uint32_t i = 0; i < qt; ++i) {
                uint32_t t = queue[i];
                memcpy(C->loc + 6 * (size_t)t, xa + 6 * (size_t)slot[t], 6 * sizeof(double));
                C->tri_chart[t] = b;
                next[t] = i + 1 < qt ? queue[i + 1] : BK_NONE;
            }
            next[tail[b]] = queue[0];
            tail[b] = queue[qt - 1];
            cnt[b] += cnt[a];
            cnt[a] = 0;
            head[a] = BK_NONE;
            /* b turned to the union's rectangle now (as bk_atlas_fit_rect would), its hull with it, so
             * that later gains see them */
            if ((size_t)cnt[b] > cap_bt) {
                cap_bt = 2 * (size_t)cnt[b];
                uint32_t *q = realloc(bt, sizeof(uint32_t) * cap_bt);
                if (!q) goto done;
                bt = q;
            }
            m = 0;
            for (uint32_t x = head[b]; x != BK_NONE; x = next[x]) bt[m++] = x;
            bk_atlas_apply_rect(C->loc, bt, m, hp + np, hn, rcs, rsn, &C->charts[b].w, &C->charts[b].h);
            bk_hpt *nh = realloc(hull_p[b], sizeof(bk_hpt) * ((size_t)hn + 1));
            if (!nh) goto done;
            memcpy(nh, hp + np, sizeof(bk_hpt) * (size_t)hn);
            hull_p[b] = nh;
            hull_n[b] = hn;
            free(hull_p[a]);
            hull_p[a] = NULL;
            break;
        }
        for (uint32_t i = 0; i < na; ++i) slot[ids[i]] = BK_NONE;
    }
    /* compact: charts with triangles left, their lists contiguous again (rectangles fitted as they grew) */
    if (bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL) == BK_NONE) goto done;
    rc = 0;
done:
    free(next); free(tail); free(head); free(cnt); free(slot); free(stamp); free(order); free(nbs);
    free(ids); free(queue); free(xa); free(xb); free(len); free(pairs.p); free(hp); free(bt);
    for (uint32_t ci = 0; hull_p && ci < n; ++ci) free(hull_p[ci]);
    free(hull_p); free(hull_n);
    bk_atlas_overlap_scratch_free(&ovs);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Joining charts across their seams. Where two charts meet, each pays a padding ring along the
 * seam, and most of a modelled scene's seams lie between a smooth chart and a neighbour (smooth
 * or planar) whose layout the unfolding merge cannot extend (the seam has different lengths in
 * the two layouts). Here a smooth chart and the neighbour it shares the most seam with are
 * unfolded again as one, by the smooth charts' own least-squares conformal map and check
 * (sm_check: no flip, no overlap, every triangle's area within max_stretch, and here no triangle
 * evicted: the union unfolds whole or not at all), and the union replaces the two when its
 * rectangle grown by the padding costs less than theirs (as the merge decides); else the
 * neighbour with the next longest seam is tried, JOIN_TRIES in all. Small unions only (max_tris):
 * each costs a solve, and large charts have little seam for their area; and only charts whose
 * padding ring is at least min_ring of their padded rectangle (a large page's charts have little
 * ring to save, and the solves cost as much there). Smallest charts first, serially: the same
 * result at any thread count.
 * Speculation (from JOIN_SPEC_THREADS threads on, as the merges'): every candidate's look
 * (join_eval) made side by side on the charts as they are before any join; the serial loop
 * takes a candidate's answer when neither it nor a chart beside it has changed since the look
 * (joined, or joined into another). A look reads only those charts (their triangles in list
 * order, counts, rectangles, and the charts of the triangles beside the candidate's), so the
 * answer is the one it would find: the joins are those of the serial loop. Where a look is
 * stale, those of the next JOIN_SPEC_WINDOW candidates per thread that are stale too are made
 * again side by side on the charts as they are then (half the first looks went stale on
 * sponza). */
#define JOIN_TRIES 3
#define JOIN_SPEC_THREADS 4
#define JOIN_SPEC_WINDOW  2

typedef struct join_ws {     /* one look's scratch */
    sm_ws    ws;
    sm_try   t;              /* the union of the last neighbour tried */
    uint32_t looks;          /* looks made with this scratch */
    uint32_t *stamp;         /* per chart: the look that last measured its seam with the candidate */
    double   *len;           /* per chart: that seam's world length (-1: tried) */
} join_ws;

typedef struct join_state {
    const bk_scene *s;
    const tri_geom *g;
    const adjacency *A;
    const uint32_t *weld;
    const float *tri_scale;
    const charting *C;
    const uint32_t *head, *next, *cnt;  /* the charts' triangle lists and counts */
    uint32_t max_tris;
    double pad_w;
    sm_ctx x;
} join_state;

static int join_ws_init(join_ws *W, uint32_t n, uint32_t M, uint32_t H, uint32_t hshift)
{
    memset(W, 0, sizeof *W);
    W->ws.uf = malloc(sizeof(uint32_t) * 3 * (size_t)M);
    W->ws.cid = malloc(sizeof(uint32_t) * 3 * (size_t)M);
    W->ws.evict = calloc(M, 1);
    W->ws.hkey = malloc(sizeof(uint32_t) * H);
    W->ws.hval = malloc(sizeof(uint32_t) * H);
    W->ws.hused = malloc(sizeof(uint32_t) * M);
    W->ws.hmask = H - 1;
    W->ws.hshift = hshift;
    W->t.tris = malloc(sizeof(uint32_t) * M);
    W->t.keep = malloc(sizeof(uint32_t) * M);
    W->t.loc = malloc(sizeof(double) * 6 * (size_t)M);
    W->stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    W->len = malloc(sizeof(double) * ((size_t)n + 1));
    if (!W->ws.uf || !W->ws.cid || !W->ws.evict || !W->ws.hkey || !W->ws.hval || !W->ws.hused || !W->t.tris || !W->t.keep || !W->t.loc ||
        !W->stamp || !W->len)
        return -1;
    memset(W->ws.hkey, 0xFF, sizeof(uint32_t) * H);
    for (uint32_t ci = 0; ci < n; ++ci) W->stamp[ci] = BK_NONE;
    return 0;
}

static void join_ws_free(join_ws *W)
{
    sm_ws *ws = &W->ws;
    lscm_free(&ws->W);
    free(ws->uf); free(ws->cid); free(ws->evict); free(ws->hkey); free(ws->hval); free(ws->hused); free(ws->xy); free(ws->pts); free(ws->pairs.p);
    free(W->t.tris); free(W->t.keep); free(W->t.loc); free(W->stamp); free(W->len);
}

/* Chart a's look: the neighbour b it joins (*out_b, BK_NONE: none), with the union's layout in
 * W->t (a's triangles, then b's, in list order); 0, or -1 out of memory. */
static int join_eval(const join_state *J, uint32_t a, join_ws *W, uint32_t *out_b, uint64_t *work)
{
    const uint32_t look = W->looks++;  /* stamps start at BK_NONE */
    const adjacency *A = J->A;
    const charting *C = J->C;
    const uint32_t *head = J->head, *next = J->next, *cnt = J->cnt;
    uint32_t *stamp = W->stamp;
    double *len = W->len;
    sm_try *t = &W->t;
    *out_b = BK_NONE;
    /* the seam (world length) shared with each neighbour small enough */
    for (uint32_t v = head[a]; v != BK_NONE; v = next[v])
        for (uint32_t p = A->start[v]; p < A->start[v + 1]; ++p) {
            uint32_t u = A->adj[p], c = C->tri_chart[u];
            int kv, ku;
            if (c == a || c == BK_NONE || !cnt[c] || cnt[a] + cnt[c] > J->max_tris || bk_atlas_shared_edge(J->s, J->weld, v, u, &kv, &ku)) continue;
            double p0[3], p1[3], e[3];
            bk_atlas_pos_of(J->s, v, kv, p0); bk_atlas_pos_of(J->s, v, (kv + 1) % 3, p1);
            for (int q = 0; q < 3; ++q) e[q] = p1[q] - p0[q];
            if (stamp[c] != look) { stamp[c] = look; len[c] = 0; }
            len[c] += sqrt(bk_dot3d(e, e));
        }
    /* the neighbours by their seam, longest first (JOIN_TRIES of them), until one joins;
     * a neighbour tried gets length -1 */
    for (int k = 0; k < JOIN_TRIES; ++k) {
        uint32_t b = BK_NONE;
        for (uint32_t v = head[a]; v != BK_NONE; v = next[v])
            for (uint32_t p = A->start[v]; p < A->start[v + 1]; ++p) {
                uint32_t c = C->tri_chart[A->adj[p]];
                if (c == a || c == BK_NONE || stamp[c] != look || !(len[c] > 0)) continue;
                if (b == BK_NONE || len[c] > len[b] || (len[c] == len[b] && c < b)) b = c;
            }
        if (b == BK_NONE) break;
        len[b] = -1;
        /* the union, a's triangles then b's, with its area-weighted mean normal to start from */
        uint32_t nt = 0;
        double sum[3] = { 0, 0, 0 };
        for (int side = 0; side < 2; ++side)
            for (uint32_t u = head[side ? b : a]; u != BK_NONE; u = next[u]) {
                hm_put(&W->ws, u, nt);
                t->tris[nt++] = u;
                for (int q = 0; q < 3; ++q) sum[q] += bk_atlas_tri_n(J->g, u)[q] * J->g->area[u];
            }
        double l = sqrt(bk_dot3d(sum, sum));
        if (l > 0) {
            for (int q = 0; q < 3; ++q) t->avg[q] = sum[q] / l;
            t->nt = nt;
            t->limit = nt + 1;
            t->curved = 1;
            sm_check(&J->x, t, &W->ws);
            *work += t->work;
        }
        hm_clear(&W->ws);
        if (!(l > 0)) continue;
        if (t->err) return -1;
        if (!t->ok || t->nkeep != nt) continue;
        /* per-object density (--object-scale): the layout grows by the charts' factor (one
         * factor: adjacency never crosses two) */
        double f = J->tri_scale ? J->tri_scale[t->tris[0]] : 1.0, pad_w = J->pad_w;
        const chart *ca = &C->charts[a], *cb = &C->charts[b];
        double gain = (ca->w + pad_w) * (ca->h + pad_w) + (cb->w + pad_w) * (cb->h + pad_w) - (f * t->w + pad_w) * (f * t->h + pad_w);
        if (!(gain > 0)) continue;
        *out_b = b;
        return 0;
    }
    return 0;
}

/* Does a look at chart a made after `time` joins still stand: neither a nor a chart beside it
 * changed since (changed: per chart, the joins made when it last changed)? */
static int join_stands(const join_state *J, const uint32_t *changed, uint32_t a, uint32_t time)
{
    if (changed[a] > time) return 0;
    for (uint32_t v = J->head[a]; v != BK_NONE; v = J->next[v])
        for (uint32_t p = J->A->start[v]; p < J->A->start[v + 1]; ++p) {
            uint32_t c = J->C->tri_chart[J->A->adj[p]];
            if (c != BK_NONE && changed[c] > time) return 0;
        }
    return 1;
}

typedef struct join_spec {
    const join_state *J;
    join_ws *W;              /* per worker */
    const key_idx *order;    /* the candidates */
    uint32_t first;          /* the looks made are of candidates first + chunk range */
    uint32_t now;            /* joins so far: the looks' time */
    uint32_t *time;          /* per candidate: the joins made before its look */
    const uint32_t *changed; /* per chart: the joins made when it last changed */
    int8_t *res;             /* per candidate: join_eval's return */
    uint32_t *b;             /* per candidate: the neighbour it joins, or BK_NONE */
    uint64_t *work;          /* per candidate: its overlap work */
    double *wh;              /* per candidate: the union's rectangle (2) and mean normal (3) */
    double **loc;            /* per candidate that joins: the union's layout, 6 per triangle */
} join_spec;

static void join_spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const join_spec *x = ctx;
    join_ws *W = &x->W[worker];
    for (size_t k = begin; k < end; ++k) {
        size_t oi = x->first + k;
        if (x->res[oi] >= 0 && join_stands(x->J, x->changed, x->order[oi].idx, x->time[oi])) continue;  /* still stands */
        x->work[oi] = 0;
        free(x->loc[oi]);
        x->loc[oi] = NULL;
        x->time[oi] = x->now;
        x->res[oi] = (int8_t)join_eval(x->J, x->order[oi].idx, W, &x->b[oi], &x->work[oi]);
        if (x->res[oi] < 0 || x->b[oi] == BK_NONE) continue;
        const sm_try *t = &W->t;
        x->wh[5 * oi] = t->w;
        x->wh[5 * oi + 1] = t->h;
        for (int q = 0; q < 3; ++q) x->wh[5 * oi + 2 + q] = t->avg[q];
        if ((x->loc[oi] = malloc(sizeof(double) * 6 * (size_t)t->nt))) memcpy(x->loc[oi], t->loc, sizeof(double) * 6 * (size_t)t->nt);
        else x->res[oi] = -1;   /* looked at again in the loop */
    }
}

int bk_atlas_charts_join(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld, const float *tri_scale,
                         const bk_atlas_smooth_opts *so, uint32_t max_tris, double min_ring, double pad_w, charting *C,
                         uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count, M = max_tris + 1, H = 16, hshift = 28;
    while (H < 4 * M) { H <<= 1; hshift--; }
    int threads = bk_pool_threads();
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *head = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *iota = malloc(sizeof(uint32_t) * M);
    uint32_t *changed = calloc((size_t)n + 1, sizeof(uint32_t)), now = 0;  /* per chart: the joins made when it last changed */
    key_idx *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    join_ws *W = calloc((size_t)threads, sizeof(join_ws));
    join_spec sp = { NULL, W, order, 0, 0, malloc(sizeof(uint32_t) * ((size_t)n + 1)), changed, malloc((size_t)n + 1),
                     malloc(sizeof(uint32_t) * ((size_t)n + 1)), malloc(sizeof(uint64_t) * ((size_t)n + 1)),
                     malloc(sizeof(double) * 5 * ((size_t)n + 1)), calloc((size_t)n + 1, sizeof(double *)) };
    uint32_t nsm = 0;
    int rc = -1;
    if (!next || !head || !tail || !cnt || !iota || !changed || !order || !W || !sp.time || !sp.res || !sp.b || !sp.work || !sp.wh || !sp.loc) goto done;
    for (int w = 0; w < threads; ++w)
        if (join_ws_init(&W[w], n, M, H, hshift)) goto done;
    for (uint32_t i = 0; i < M; ++i) iota[i] = i;
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, ci, head, tail, cnt, next, NULL);
        if (!c->smooth || c->count >= max_tris) continue;
        if (c->w * c->h > (1.0 - min_ring) * (c->w + pad_w) * (c->h + pad_w)) continue;   /* little ring to save */
        order[nsm].key = c->count;
        order[nsm].idx = ci;
        nsm++;
    }
    bk_key_idx_sort(order, nsm);
    join_state J = { s, g, A, weld, tri_scale, C, head, next, cnt, max_tris, pad_w, { 0 } };
    J.x.s = s; J.x.g = g; J.x.A = A; J.x.weld = weld; J.x.so = so; J.x.C = C; J.x.iota = iota;
    sp.J = &J;
    const int spec = threads >= JOIN_SPEC_THREADS;
    memset(sp.res, 0xFF, nsm);   /* no look yet */
    if (spec) bk_parallel_for(nsm, 2, join_spec_fn, &sp);
    for (uint32_t oi = 0; oi < nsm; ++oi) {
        uint32_t a = order[oi].idx, b = BK_NONE;
        if (!cnt[a]) continue;
        /* a stale look (or none): this one and the next ones again, on the charts as they are */
        int stands = sp.res[oi] >= 0 && join_stands(&J, changed, a, sp.time[oi]);
        if (!stands && spec) {
            sp.first = oi;
            sp.now = now;
            uint32_t m = nsm - oi < JOIN_SPEC_WINDOW * (uint32_t)threads ? nsm - oi : JOIN_SPEC_WINDOW * (uint32_t)threads;
            bk_parallel_for(m, 1, join_spec_fn, &sp);
            stands = sp.res[oi] >= 0;
        }
        const double *uloc, *wh;
        double wh_loop[5];
        if (stands) {
            *work += sp.work[oi];
            b = sp.b[oi];
            uloc = sp.loc[oi];
            wh = sp.wh + 5 * (size_t)oi;
        } else {
            if (join_eval(&J, a, &W[0], &b, work)) goto done;
            const sm_try *t = &W[0].t;
            uloc = t->loc;
            wh_loop[0] = t->w; wh_loop[1] = t->h;
            for (int q = 0; q < 3; ++q) wh_loop[2 + q] = t->avg[q];
            wh = wh_loop;
        }
        if (b == BK_NONE) continue;
        /* a takes b: the union's layout, a's triangles then b's */
        double f = tri_scale ? tri_scale[head[a]] : 1.0;
        uint32_t i = 0;
        for (int side = 0; side < 2; ++side)
            for (uint32_t u = head[side ? b : a]; u != BK_NONE; u = next[u], ++i)
                for (int q = 0; q < 6; ++q) C->loc[6 * (size_t)u + q] = f * uloc[6 * (size_t)i + q];
        for (uint32_t u = head[b]; u != BK_NONE; u = next[u]) C->tri_chart[u] = a;
        next[tail[a]] = head[b];
        tail[a] = tail[b];
        cnt[a] += cnt[b];
        cnt[b] = 0;
        head[b] = BK_NONE;
        chart *ca = &C->charts[a];
        ca->w = f * wh[0];
        ca->h = f * wh[1];
        for (int q = 0; q < 3; ++q) ca->n[q] = wh[2 + q];
        changed[a] = changed[b] = ++now;
    }
    if (bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL) == BK_NONE) goto done;
    rc = 0;
done:
    for (int w = 0; W && w < threads; ++w) join_ws_free(&W[w]);
    if (sp.loc) for (uint32_t oi = 0; oi < nsm; ++oi) free(sp.loc[oi]);
    free(W); free(sp.time); free(sp.res); free(sp.b); free(sp.work); free(sp.wh); free(sp.loc);
    free(next); free(head); free(tail); free(cnt); free(iota); free(changed); free(order);
    return rc;
}

