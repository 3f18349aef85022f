/* atlas_topology.c - the atlas's view of the mesh: triangle geometry in double precision, vertices
 * welded by exact position, and triangle adjacency across shared, consistently wound edges.
 *
 * Pipeline: bk_scene -> bk_atlas_geom_init, bk_atlas_weld, bk_atlas_adjacency_build -> the chart
 * passes (atlas_grow.c and after). See atlas_internal.h for the parts of the atlas.
 */
#include "atlas_internal.h"
#include "bk_common.h"
#include "pool.h"
#include "sort.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Triangle geometry (double precision: normals of tiny or thin triangles stay meaningful). */

typedef struct geom_ctx {
    const bk_scene *s;
    tri_geom       *g;
    double          tiny;
} geom_ctx;

static void geom_tri_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const geom_ctx *c = ctx;
    const bk_scene *s = c->s;
    tri_geom       *g = c->g;
    for (size_t t = begin; t < end; ++t) {
        double p0[3], p1[3], p2[3], e1[3], e2[3], cr[3];
        bk_atlas_pos_of(s, (uint32_t)t, 0, p0);
        bk_atlas_pos_of(s, (uint32_t)t, 1, p1);
        bk_atlas_pos_of(s, (uint32_t)t, 2, p2);
        double emax = 0;
        for (int k = 0; k < 3; ++k) {
            e1[k] = p1[k] - p0[k];
            e2[k] = p2[k] - p0[k];
        }
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
    geom_ctx c = { s, g, 1e-14 * d2 }; /* tiny: twice the area of a triangle 1e-7 of the scene across */
    bk_parallel_for(T, 16384, geom_tri_fn, &c);
    for (uint32_t t = 0; t < T; ++t) g->degen_count += g->degen[t];
    return 0;
}

void bk_atlas_geom_free(tri_geom *g)
{
    free(g->n);
    free(g->area);
    free(g->degen);
}

/* ---------------------------------------------------------------------------------------------
 * Welding and adjacency. Many OBJs repeat a position once per (v, vt, vn) combination; charts
 * must grow across those seams, so vertices are welded by exact position (-0 == +0). */

static uint32_t hash_u32x3(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t h = (uint64_t)a * 0x9E3779B97F4A7C15ull ^ ((uint64_t)b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    h ^= ((uint64_t)c + 0x165667B19E3779F9ull) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    return (uint32_t)h;
}

static uint32_t fkey(float f)
{
    if (f == 0.0f) f = 0.0f;
    return bk_float_bits(f);
}

/* weld[v]: the smallest vertex index with v's exact position. On the pool: every vertex goes into
 * one open-addressing table by compare-and-swap (a position takes the first free slot of its
 * probe sequence, so it has one slot, and keeps the smallest index that reached it), then every
 * vertex reads its position's slot: the serial loop's answer, whatever the thread count. */
typedef struct weld_ctx {
    const bk_scene   *s;
    _Atomic uint32_t *table;
    size_t            cap;
    uint32_t         *weld;
    int               pass; /* 0: insert, 1: read */
} weld_ctx;

static void weld_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const weld_ctx *c = ctx;
    const float    *pos = c->s->positions;
    for (size_t v = begin; v < end; ++v) {
        const float *p = pos + 3 * v;
        uint32_t     kx = fkey(p[0]), ky = fkey(p[1]), kz = fkey(p[2]);
        size_t       h = hash_u32x3(kx, ky, kz) & (c->cap - 1);
        for (;;) {
            uint32_t w = atomic_load_explicit(&c->table[h], memory_order_acquire);
            if (w == BK_NONE) {
                if (c->pass == 0 && atomic_compare_exchange_strong_explicit(&c->table[h], &w, (uint32_t)v,
                                                                            memory_order_acq_rel, memory_order_acquire))
                    break;
                if (w == BK_NONE) continue; /* (a read never sees its own position's slot empty) */
            }
            const float *q = pos + 3 * (size_t)w;
            if (fkey(q[0]) == kx && fkey(q[1]) == ky && fkey(q[2]) == kz) {
                if (c->pass == 1) {
                    c->weld[v] = w;
                    break;
                }
                while (v < w && !atomic_compare_exchange_weak_explicit(&c->table[h], &w, (uint32_t)v,
                                                                       memory_order_acq_rel, memory_order_acquire)) {}
                break;
            }
            h = (h + 1) & (c->cap - 1);
        }
    }
}

uint32_t *bk_atlas_weld(const bk_scene *s)
{
    uint32_t  V = s->vertex_count;
    uint32_t *weld = malloc(sizeof(uint32_t) * (size_t)V + 1);
    size_t    cap = 16;
    while (cap < 2 * (size_t)V) cap <<= 1;
    _Atomic uint32_t *table = malloc(sizeof(_Atomic uint32_t) * cap);
    if (!weld || !table) {
        free(weld);
        free((void *)table);
        return NULL;
    }
    for (size_t i = 0; i < cap; ++i) atomic_init(&table[i], BK_NONE);
    weld_ctx c = { s, table, cap, weld, 0 };
    bk_parallel_for(V, 16384, weld_fn, &c);
    c.pass = 1;
    bk_parallel_for(V, 16384, weld_fn, &c);
    free((void *)table);
    return weld;
}

typedef struct edge_rec {
    uint64_t key;
    uint32_t tri;
    uint32_t fwd;
} edge_rec;

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
    uint32_t  T = s->tri_count;
    size_t    n = 0;
    edge_rec *e = malloc(sizeof *e * 3 * (size_t)T + 1);
    A->start = calloc((size_t)T + 2, sizeof(uint32_t));
    A->adj = NULL;
    if (!e || !A->start) {
        free(e);
        return -1;
    }
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
                        if (pass == 0) {
                            A->start[e[x].tri + 1]++;
                            A->start[e[y].tri + 1]++;
                        } else {
                            A->adj[A->start[e[x].tri]++] = e[y].tri;
                            A->adj[A->start[e[y].tri]++] = e[x].tri;
                        }
                    }
            i = j;
        }
        if (pass == 0) {
            for (uint32_t t = 0; t < T; ++t) A->start[t + 1] += A->start[t];
            A->adj = malloc(sizeof(uint32_t) * (size_t)A->start[T] + 1);
            if (!A->adj) {
                free(e);
                return -1;
            }
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
 * the pool finds the runs of its own edges, keys ascending, by bisection in their buckets. A triangle receives a run's
 * other members in run order (the pair loop of adjacency_build_sorted appends them so), and runs in key order, so the
 * lists are the sorted build's, entry for entry. That needs no two edges of one triangle with the same key (two corners
 * welded together: zero area, which skip marks); a scene with one takes the sorted build. */
typedef struct adj_bucket_edge {
    uint32_t b, tri;
    uint8_t  fwd;
} adj_bucket_edge;

typedef struct adj_ctx {
    const bk_scene        *s;
    const uint32_t        *weld;
    const uint8_t         *skip;
    const uint32_t        *bstart; /* V + 1: bucket of welded vertex a */
    const adj_bucket_edge *be;
    uint32_t              *start, *adj; /* count pass: start[t + 1] = count; fill pass: the lists */
    int                    fill;
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
    adj_ctx         *c = ctx;
    adj_bucket_edge *be = (adj_bucket_edge *)c->be;
    for (size_t v = begin; v < end; ++v) {
        uint32_t b0 = c->bstart[v], n = c->bstart[v + 1] - b0;
        if (n > 16) {
            qsort(be + b0, n, sizeof *be, adj_edge_cmp);
            continue;
        }
        for (uint32_t i = 1; i < n; ++i) {
            adj_bucket_edge e = be[b0 + i];
            uint32_t        j = i;
            while (j > 0 && adj_edge_cmp(&be[b0 + j - 1], &e) > 0) {
                be[b0 + j] = be[b0 + j - 1];
                j--;
            }
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
            uint8_t  kf[3];
            for (int k = 0; k < 3; ++k) {
                uint32_t a = c->weld[c->s->tri_v[3 * t + k]], b = c->weld[c->s->tri_v[3 * t + (k + 1) % 3]];
                if (a == b) continue;
                uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
                uint64_t kk = (uint64_t)lo << 32 | hi;
                uint32_t i = m++;
                while (i > 0 && key[i - 1] > kk) {
                    key[i] = key[i - 1];
                    ka[i] = ka[i - 1];
                    kb[i] = kb[i - 1];
                    kf[i] = kf[i - 1];
                    i--;
                }
                key[i] = kk;
                ka[i] = lo;
                kb[i] = hi;
                kf[i] = a < b;
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
    const bk_scene   *s;
    const uint32_t   *weld;
    const uint8_t    *skip;
    uint32_t          T;
    _Atomic uint32_t *ctr; /* count pass: per smaller end point + 1; fill pass: the next place */
    adj_bucket_edge  *be;
    int               fill;
    atomic_int        twin; /* a triangle with two corners welded together */
} adj_fill_ctx;

static void adj_fill_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    adj_fill_ctx *c = ctx;
    for (size_t t = begin; t < end; ++t) {
        if (c->skip[t]) continue;
        uint32_t v[3];
        for (int k = 0; k < 3; ++k) v[k] = c->weld[c->s->tri_v[3 * t + k]];
        if (v[0] == v[1] || v[1] == v[2] || v[0] == v[2]) {
            atomic_store(&c->twin, 1);
            continue;
        }
        for (int k = 0; k < 3; ++k) {
            uint32_t a = v[k], b = v[(k + 1) % 3], lo = a < b ? a : b;
            if (!c->fill) {
                atomic_fetch_add_explicit(&c->ctr[lo + 1], 1, memory_order_relaxed);
                continue;
            }
            adj_bucket_edge *e = &c->be[atomic_fetch_add_explicit(&c->ctr[lo], 1, memory_order_relaxed)];
            e->b = a < b ? b : a;
            e->tri = (uint32_t)t;
            e->fwd = a < b;
        }
    }
}

int bk_atlas_adjacency_build(const bk_scene *s, const uint32_t *weld, const uint8_t *skip, adjacency *A)
{
    uint32_t         T = s->tri_count, V = s->vertex_count;
    uint32_t        *bstart = calloc((size_t)V + 2, sizeof(uint32_t));
    adj_bucket_edge *be = malloc(sizeof *be * 3 * (size_t)T + 1);
    A->start = calloc((size_t)T + 2, sizeof(uint32_t));
    A->adj = NULL;
    if (!bstart || !be || !A->start) {
        free(bstart);
        free(be);
        return -1;
    }
    /* bucket sizes, then the edges into their buckets, on the pool (atomic counters: the order in
     * a bucket varies, which its sort below undoes, (b, triangle) being unique in a bucket) */
    adj_fill_ctx      fc = { s, weld, skip, T, (_Atomic uint32_t *)NULL, NULL, 0, 0 };
    _Atomic uint32_t *ctr = malloc(sizeof(_Atomic uint32_t) * ((size_t)V + 2));
    if (!ctr) {
        free(bstart);
        free(be);
        return -1;
    }
    for (size_t v = 0; v < (size_t)V + 2; ++v) atomic_init(&ctr[v], 0);
    fc.ctr = ctr;
    bk_parallel_for(T, 16384, adj_fill_fn, &fc);
    if (atomic_load(&fc.twin)) {
        free((void *)ctr);
        free(bstart);
        free(be);
        free(A->start);
        return adjacency_build_sorted(s, weld, skip, A);
    }
    for (uint32_t v = 0; v < V; ++v)
        bstart[v + 1] = bstart[v] + atomic_load_explicit(&ctr[v + 1], memory_order_relaxed);
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
    if (!A->adj) {
        free(bstart);
        free(be);
        return -1;
    }
    c.adj = A->adj;
    c.fill = 1;
    bk_parallel_for(T, 8192, adj_tri_fn, &c);
    free(bstart);
    free(be);
    return 0;
}

void bk_atlas_adjacency_free(adjacency *A)
{
    free(A->start);
    free(A->adj);
}
