/* atlas_refine.c - the last chart passes: ragged borders tidied (a triangle with two edges on
 * another chart moves into it) and small charts absorbed whole into a neighbour, laid triangle
 * by triangle on its layout; and the compaction of charts emptied by those moves.
 *
 * Pipeline: merged charts (atlas_merge.c) -> bk_atlas_charts_tidy -> bk_atlas_charts_absorb ->
 * packing (atlas_pack.c).
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
    bk_atlas_pos_of(s, t, 0, p0);
    bk_atlas_pos_of(s, t, 1, p1);
    bk_atlas_pos_of(s, t, 2, p2);
    for (int k = 0; k < 3; ++k) {
        e1[k] = p1[k] - p0[k];
        e2[k] = p2[k] - p0[k];
    }
    c[0] = e1[1] * e2[2] - e1[2] * e2[1];
    c[1] = e1[2] * e2[0] - e1[0] * e2[2];
    c[2] = e1[0] * e2[1] - e1[1] * e2[0];
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
typedef struct tidy_edge_ctx {
    const bk_scene  *s;
    const uint32_t  *weld;
    const adjacency *A;
    uint8_t         *ek;
} tidy_edge_ctx;

static void tidy_edge_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const tidy_edge_ctx *c = ctx;
    const uint32_t      *weld = c->weld, *tv = c->s->tri_v;
    for (size_t t = begin; t < end; ++t)
        for (uint32_t p = c->A->start[t]; p < c->A->start[t + 1]; ++p) {
            uint32_t u = c->A->adj[p];
            int      kt = -1, ku = -1;
            for (int x = 0; x < 3 && kt < 0; ++x)
                for (int y = 0; y < 3; ++y)
                    if (weld[tv[3 * t + x]] == weld[tv[3 * (size_t)u + (y + 1) % 3]] &&
                        weld[tv[3 * t + (x + 1) % 3]] == weld[tv[3 * (size_t)u + y]]) {
                        kt = x;
                        ku = y;
                        break;
                    }
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
typedef struct u32_list {
    uint32_t *v, n, cap;
} u32_list;

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
    double lo[2], inv;      /* cell of (x, y): floor((x - lo) * inv), clamped to the grid */
    int    gw, gh;          /* 0: not built */
    int    active;          /* read by the tests (from the chart's first test with TIDY_GRID_MIN
                               triangles on; built before, at the start with threads to
                               spare, for a chart that had them then) */
    uint32_t *start, *item; /* cells' triangles: item[start[c] .. start[c + 1]) */
    u32_list  late;
} tidy_grid;

#define TIDY_GRID_MIN  48 /* charts of fewer triangles are read whole */
#define TIDY_GRID_SPAN 64 /* a triangle over more cells goes to late */

static int tidy_cell(const tidy_grid *G, double v, int axis)
{
    double c = floor((v - G->lo[axis]) * G->inv);
    int    n = axis ? G->gh : G->gw;
    return c >= n - 1 ? n - 1 : c > 0 ? (int)c : 0; /* NaN: 0 */
}

/* Chart b's grid from its list (head, next) of m triangles. */
static int tidy_grid_build(tidy_grid *G, const double *loc, uint32_t head, const uint32_t *next, uint32_t m)
{
    double lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX }, b[4];
    for (uint32_t x = head; x != BK_NONE; x = next[x]) {
        bk_box_of_tri(loc + 6 * (size_t)x, b);
        lo[0] = bk_dmin(lo[0], b[0]);
        lo[1] = bk_dmin(lo[1], b[1]);
        hi[0] = bk_dmax(hi[0], b[2]);
        hi[1] = bk_dmax(hi[1], b[3]);
    }
    double ex = hi[0] - lo[0], ey = hi[1] - lo[1], cs = sqrt(ex * ey / m);
    if (!(cs > 0)) cs = bk_dmax(ex, ey) > 0 ? bk_dmax(ex, ey) / m : 1.0;
    G->lo[0] = lo[0];
    G->lo[1] = lo[1];
    G->inv = 1.0 / cs;
    G->gw = (int)bk_dmin(ex / cs + 1, 2.0 * m + 1);
    G->gh = (int)bk_dmin(ey / cs + 1, 2.0 * m + 1);
    if (G->gw < 1) G->gw = 1;
    if (G->gh < 1) G->gh = 1;
    while ((size_t)G->gw * G->gh > 4 * (size_t)m + 16) { /* a degenerate spread: coarser cells */
        G->inv *= 0.5;
        G->gw = (G->gw + 1) / 2;
        G->gh = (G->gh + 1) / 2;
    }
    size_t cells = (size_t)G->gw * G->gh, total = 0;
    G->start = calloc(cells + 1, sizeof(uint32_t));
    if (!G->start) return -1;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t x = head; x != BK_NONE; x = next[x]) {
            bk_box_of_tri(loc + 6 * (size_t)x, b);
            int cx0 = tidy_cell(G, b[0], 0), cx1 = tidy_cell(G, b[2], 0), cy0 = tidy_cell(G, b[1], 1),
                cy1 = tidy_cell(G, b[3], 1);
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
            for (size_t c = cells; c > 0; --c) G->start[c] = G->start[c - 1]; /* back to the cells' starts */
            G->start[0] = 0;
        }
    }
    return 0;
}

static void tidy_grid_free(tidy_grid *G)
{
    free(G->start);
    free(G->item);
    free(G->late.v);
    memset(G, 0, sizeof *G);
}

/* Triangle x's corners to out when it is still chart b's, not seen in query q, and its box meets
 * box[]: 1, else 0. */
static uint32_t tidy_take(const double *loc, const uint32_t *tri_chart, uint32_t b, const double *box, uint32_t *seen,
                          uint32_t q, uint32_t x, double *out)
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
static uint32_t tidy_near(const tidy_grid *G, const double *loc, const uint32_t *tri_chart, uint32_t b,
                          const double *box, uint32_t *seen, uint32_t q, double *xb)
{
    uint32_t m = 0;
    int      cx0 = tidy_cell(G, box[0], 0), cx1 = tidy_cell(G, box[2], 0), cy0 = tidy_cell(G, box[1], 1),
        cy1 = tidy_cell(G, box[3], 1);
    for (int cy = cy0; cy <= cy1; ++cy)
        for (int cx = cx0; cx <= cx1; ++cx) {
            size_t c = (size_t)cy * G->gw + cx;
            for (uint32_t i = G->start[c]; i < G->start[c + 1]; ++i)
                m += tidy_take(loc, tri_chart, b, box, seen, q, G->item[i], xb + 6 * (size_t)m);
        }
    for (uint32_t i = 0; i < G->late.n; ++i)
        m += tidy_take(loc, tri_chart, b, box, seen, q, G->late.v[i], xb + 6 * (size_t)m);
    return m;
}

/* The changed charts' rectangles fitted again, side by side (each writes only its own corners). */
typedef struct tidy_fit_ctx {
    charting      *C;
    const uint8_t *changed;
    bk_hpt       **pts;
    size_t        *cap;
    int            err;
} tidy_fit_ctx;

static void tidy_fit_fn(void *ctx, size_t begin, size_t end, int worker)
{
    tidy_fit_ctx *f = ctx;
    chart        *ch = f->C->charts;
    for (size_t ci = begin; ci < end; ++ci)
        if (f->changed[ci] && bk_atlas_fit_rect(f->C->loc, f->C->chart_tris + ch[ci].first, ch[ci].count, &ch[ci].w,
                                                &ch[ci].h, &f->pts[worker], &f->cap[worker]))
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
        } else {
            L[2 * tk[e]] = x;
            L[2 * tk[e] + 1] = y;
            *have |= 1 << tk[e];
        }
    }
    return ok;
}

/* Drops the charts of n whose triangle count cnt[] fell to 0 and makes the others' triangle lists
 * (linked through head[] and next[]) contiguous in C->chart_tris again, in chart order; changed[]
 * (when given) moves with its chart. The charts left, or BK_NONE out of memory. */
typedef struct compact_ctx {
    charting       *C;
    const uint32_t *live_of, *first, *cnt, *head,
        *next; /* per old chart: its new index (BK_NONE: dropped), its first place */
    uint32_t *ids;
} compact_ctx;

static void compact_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const compact_ctx *x = ctx;
    for (size_t ci = begin; ci < end; ++ci) {
        uint32_t live = x->live_of[ci], w = x->first[ci];
        if (live == BK_NONE) continue;
        for (uint32_t t = x->head[ci]; t != BK_NONE; t = x->next[t]) {
            x->ids[w++] = t;
            x->C->tri_chart[t] = live;
        }
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
    uint32_t  live = 0, w = 0;
    uint32_t *ids = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *live_of = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *first = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    if (!ids || !live_of || !first) {
        free(ids);
        free(live_of);
        free(first);
        return BK_NONE;
    }
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
    free(ids);
    free(live_of);
    free(first);
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
    charting  *C;
    uint32_t  *head, *cnt, *next, *prev;
    tidy_grid *grid;
    int        eager; /* grids too (threads to spare; one thread builds them as the tests come) */
    int        err;
} tidy_init_ctx;

static void tidy_init_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    tidy_init_ctx  *x = ctx;
    const charting *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, (uint32_t)ci, x->head, NULL, x->cnt, x->next, x->prev);
        if (x->eager && c->count >= TIDY_GRID_MIN &&
            tidy_grid_build(&x->grid[ci], C->loc, x->head[ci], x->next, c->count))
            x->err = 1;
    }
}

/* What a triangle's test reads before the overlap search, and the bits of the pass's triangles
 * that fail it. */
typedef struct tidy_cand_ctx {
    const bk_scene  *s;
    const adjacency *A;
    const uint8_t   *ek;
    const charting  *C;
    const float     *tri_scale;
    double           cmin, max_stretch;
    const uint64_t  *cur;
    uint64_t        *skip;
    size_t           words;
} tidy_cand_ctx;

/* Triangle t's move, short of the overlap search: 1 with the chart b it would join, its corners L
 * in b's layout and the tolerance, when t is a leaf of its chart with two edges on b whose corners
 * agree there, and b's rules allow the layout; else 0. It reads only t's and its neighbours'
 * charts and corners (and b's rectangle and kind, fixed while tidying). */
static int tidy_candidate(const tidy_cand_ctx *x, uint32_t t, uint32_t *out_b, double *L, double *out_tol)
{
    const adjacency *A = x->A;
    const charting  *C = x->C;
    uint32_t         a = C->tri_chart[t];
    if (a == BK_NONE || A->start[t + 1] - A->start[t] < 2) return 0;
    /* the neighbours' charts and the edge each shares (corners kt -> kt+1 of t are
     * corners ku+1 -> ku of u) */
    uint32_t nb_chart[8], nb_tri[8];
    int      nb_kt[8], nb_ku[8], nn = 0;
    for (uint32_t p = A->start[t]; p < A->start[t + 1] && nn < 8; ++p) {
        uint32_t u = A->adj[p];
        if (x->ek[p] == 0xFF) continue;
        int kt = x->ek[p] / 3, ku = x->ek[p] % 3;
        nb_chart[nn] = C->tri_chart[u];
        nb_tri[nn] = u;
        nb_kt[nn] = kt;
        nb_ku[nn] = ku;
        nn++;
    }
    int own = 0;
    for (int i = 0; i < nn; ++i) own += nb_chart[i] == a;
    if (own > 1) return 0; /* not a leaf of its chart */
    for (int i = 0; i < nn; ++i) {
        uint32_t b = nb_chart[i];
        if (b == a || b == BK_NONE) continue;
        int edges = 0;
        for (int j = 0; j < nn; ++j)
            if (nb_chart[j] == b) edges |= 1 << nb_kt[j];
        if (__builtin_popcount((unsigned)edges) < 2) continue;
        /* t's corners from b's layout: every shared corner must agree */
        double tol = 1e-9 * (C->charts[b].w + C->charts[b].h);
        int    have = 0, ok = 1;
        for (int j = 0; j < nn && ok; ++j) {
            if (nb_chart[j] != b) continue;
            const double *Lu = C->loc + 6 * (size_t)nb_tri[j];
            int           kt = nb_kt[j], ku = nb_ku[j];
            if (!lay_edge(L, &have, Lu, kt, ku, tol)) ok = 0;
        }
        if (!ok || have != 7) return 0;
        double s1, s2, f = x->tri_scale ? x->tri_scale[t] : 1.0;
        if (tri_map_sv(x->s, t, L, &s1, &s2)) return 0;
        s1 /= f;
        s2 /= f;
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
            double   L[6], tol;
            if (!tidy_candidate(x, t, &b, L, &tol)) sk |= 1ull << (t & 63);
            m &= m - 1;
        }
        x->skip[w] = sk;
    }
}

/* the corners of b's triangles that a move of L onto b is tested against, into *xb (grown as
 * needed): those near L in b's grid (when use_grid; built), or all of them; their count in *m_out,
 * -1 out of memory. Either way the test's answer is the same: it reads only the triangles whose
 * boxes meet L's. */
static int tidy_collect(const charting *C, const uint32_t *head, const uint32_t *next, const uint32_t *cnt,
                        const tidy_grid *grid, int use_grid, uint32_t b, const double *L, uint32_t *seen,
                        uint32_t *query, double **xb, size_t *xb_cap, uint32_t *m_out)
{
    if (6 * (size_t)cnt[b] > *xb_cap) {
        size_t  cap = 12 * (size_t)cnt[b] + 64;
        double *q = realloc(*xb, sizeof(double) * cap);
        if (!q) return -1;
        *xb = q;
        *xb_cap = cap;
    }
    uint32_t m = 0;
    if (use_grid) {
        double lb[4];
        bk_box_of_tri(L, lb);
        m = tidy_near(&grid[b], C->loc, C->tri_chart, b, lb, seen, ++*query, *xb);
    }
    if (!use_grid || m > 4096) /* (beyond 4096 the test's order matters: the whole list) */
        for (uint32_t x = (m = 0, head[b]); x != BK_NONE; x = next[x])
            memcpy(*xb + 6 * (size_t)m++, C->loc + 6 * (size_t)x, 6 * sizeof(double));
    *m_out = m;
    return 0;
}

/* tidy_collect from the serial loop: b's grid built and read from b's first test with
 * TIDY_GRID_MIN triangles on */
static int tidy_gather(const charting *C, const uint32_t *head, const uint32_t *next, const uint32_t *cnt,
                       tidy_grid *grid, uint32_t b, const double *L, uint32_t *seen, uint32_t *query, double **xb,
                       size_t *xb_cap, uint32_t *m_out)
{
    if (cnt[b] >= TIDY_GRID_MIN && !grid[b].active) {
        if (!grid[b].gw && tidy_grid_build(&grid[b], C->loc, head[b], next, cnt[b])) return -1;
        grid[b].active = 1;
    }
    return tidy_collect(C, head, next, cnt, grid, grid[b].active, b, L, seen, query, xb, xb_cap, m_out);
}

/* Speculation (threads > 1): a pass's candidates' tests (tidy_candidate and the overlap test)
 * made side by side on the charts as they are when the pass starts, before the serial loop
 * moves anything. The loop makes tidy_candidate again (cheap) and takes the test's answer when
 * it gives the same chart b and the same corners L: the overlap test is "does a triangle of b
 * whose box meets L's overlap L" (bk_atlas_sets_overlap on one triangle, pair by pair), an OR
 * over b's triangles, and b's triangles change only by moves (a triangle's corners change only
 * when it moves). So no overlap then means no overlap now unless one of the triangles that
 * joined b since overlaps (tested alone), and an overlap then stands unless a triangle left b
 * (then the test is made again). The moves are those of the serial loop. Almost every
 * candidate moves (dragon_vrip: 11,766 of 11,901 in the first pass), so looks are made once. */
#define TIDY_SPEC_MIN 64 /* candidates in a pass worth a parallel look */

typedef struct tidy_spec_ws { /* one worker's */
    uint32_t       *seen, query;
    double         *xb;
    size_t          xb_cap;
    overlap_scratch ovs;
} tidy_spec_ws;

typedef struct tidy_spec {
    const tidy_cand_ctx *tc;
    const uint32_t      *head, *next, *cnt;
    const tidy_grid     *grid;
    uint32_t             T;
    tidy_spec_ws        *ws;
    const uint32_t      *cand; /* the pass's candidates, ascending */
    uint32_t            *b;    /* per candidate: the chart it joins (BK_NONE: no candidate) */
    double              *L;    /* 6 per candidate */
    int8_t              *ov;   /* per candidate: the overlap test, -1 not made */
    uint64_t            *work;
} tidy_spec;

static void tidy_spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const tidy_spec *x = ctx;
    tidy_spec_ws    *w = &x->ws[worker];
    for (size_t i = begin; i < end; ++i) {
        double   tol, *L = x->L + 6 * i;
        uint32_t m;
        x->ov[i] = -1;
        x->work[i] = 0;
        if (!tidy_candidate(x->tc, x->cand[i], &x->b[i], L, &tol)) {
            x->b[i] = BK_NONE;
            continue;
        }
        if (!w->seen && !(w->seen = calloc((size_t)x->T + 1, sizeof(uint32_t)))) continue; /* made in the loop */
        uint32_t b = x->b[i];
        if (tidy_collect(x->tc->C, x->head, x->next, x->cnt, x->grid, x->grid[b].gw != 0, b, L, w->seen, &w->query,
                         &w->xb, &w->xb_cap, &m))
            continue; /* out of memory: made again in the loop */
        int ov = bk_atlas_sets_overlap(L, 1, w->xb, m, tol * 10, &w->ovs, &x->work[i]);
        if (ov >= 0) x->ov[i] = (int8_t)ov;
    }
}

/* The loop's overlap test of candidate t (joining b at corners L) from the look at place *at of
 * the candidates (advanced past t): 0 or 1, or -2 when the look does not serve (made again). The
 * triangles that joined b in this pass are tested here, those that left it, now elsewhere, are
 * passed over by their chart. */
static int tidy_spec_take(const tidy_spec *x, uint32_t ncand, uint32_t *at, uint32_t t, uint32_t b, const double *L,
                          double tol, const u32_list *joined, const uint8_t *left, double **gx, size_t *gx_cap,
                          overlap_scratch *ovs, uint64_t *work)
{
    while (*at < ncand && x->cand[*at] < t) ++*at;
    if (*at == ncand || x->cand[*at] != t) return -2;
    uint32_t i = (*at)++;
    if (x->ov[i] < 0 || x->b[i] != b || memcmp(x->L + 6 * (size_t)i, L, 6 * sizeof(double))) return -2;
    if (x->ov[i] == 1) {
        if (left[b]) return -2;
        *work += x->work[i];
        return 1;
    }
    const u32_list *J = &joined[b];
    if (6 * (size_t)J->n > *gx_cap) {
        size_t  cap = 12 * (size_t)J->n + 64;
        double *q = realloc(*gx, sizeof(double) * cap);
        if (!q) return -2;
        *gx = q;
        *gx_cap = cap;
    }
    const charting *C = x->tc->C;
    double          lb[4], tb[4];
    uint32_t        m = 0;
    bk_box_of_tri(L, lb);
    for (uint32_t k = 0; k < J->n; ++k) {
        uint32_t u = J->v[k];
        if (C->tri_chart[u] != b) continue; /* left again */
        bk_box_of_tri(C->loc + 6 * (size_t)u, tb);
        if (!(tb[0] <= lb[2] && tb[2] >= lb[0] && tb[1] <= lb[3] && tb[3] >= lb[1])) continue;
        memcpy(*gx + 6 * (size_t)m++, C->loc + 6 * (size_t)u, 6 * sizeof(double));
    }
    *work += x->work[i];
    if (!m) return 0;
    int ov = bk_atlas_sets_overlap(L, 1, *gx, m, tol * 10, ovs, work);
    return ov < 0 ? -2 : ov;
}

static int tidy_compact(charting *C, uint32_t n, uint32_t T, const uint32_t *cnt, const uint32_t *head,
                        const uint32_t *next, uint8_t *changed)
{
    uint32_t live = bk_atlas_compact_charts(C, n, T, cnt, head, next, changed);
    if (live == BK_NONE) return -1;
    int          threads = bk_pool_threads();
    tidy_fit_ctx fc = { C, changed, calloc((size_t)threads, sizeof(bk_hpt *)), calloc((size_t)threads, sizeof(size_t)),
                        0 };
    if (fc.pts && fc.cap) bk_parallel_for(live, 4, tidy_fit_fn, &fc);
    for (int w = 0; fc.pts && w < threads; ++w) free(fc.pts[w]);
    int bad = !fc.pts || !fc.cap || fc.err;
    free(fc.pts);
    free(fc.cap);
    if (bad) return -1;
    return 0;
}

/* A pass's looks (threads > 1): the candidates (cur less skip) listed and looked at side by
 * side, when there are TIDY_SPEC_MIN of them (*ncand, else 0), and the charts' joins and leaves
 * forgotten. 0, or -1 out of memory. */
static int tidy_spec_pass(tidy_spec *sp, uint32_t *cap, const uint64_t *cur, const uint64_t *skip, size_t words,
                          u32_list *joined, uint8_t *left, uint32_t n, uint32_t *ncand_out)
{
    uint32_t ncand = 0;
    for (size_t w = 0; w < words; ++w) ncand += (uint32_t)__builtin_popcountll(cur[w] & ~skip[w]);
    if (ncand < TIDY_SPEC_MIN) ncand = 0;
    if (ncand > *cap) {
        free((void *)sp->cand);
        free(sp->b);
        free(sp->L);
        free(sp->ov);
        free(sp->work);
        *cap = ncand + ncand / 2;
        sp->cand = malloc(sizeof(uint32_t) * *cap);
        sp->b = malloc(sizeof(uint32_t) * *cap);
        sp->L = malloc(sizeof(double) * 6 * *cap);
        sp->ov = malloc(*cap);
        sp->work = malloc(sizeof(uint64_t) * *cap);
        if (!sp->cand || !sp->b || !sp->L || !sp->ov || !sp->work) return -1;
    }
    uint32_t *cl = (uint32_t *)sp->cand, k = 0;
    for (size_t w = 0; ncand && w < words; ++w)
        for (uint64_t m = cur[w] & ~skip[w]; m; m &= m - 1) cl[k++] = (uint32_t)(64 * w) + (uint32_t)__builtin_ctzll(m);
    if (ncand) bk_parallel_for(ncand, 16, tidy_spec_fn, sp);
    for (uint32_t ci = 0; ci < n; ++ci) {
        joined[ci].n = 0;
        left[ci] = 0;
    }
    *ncand_out = ncand;
    return 0;
}

static void tidy_spec_free(tidy_spec *sp, int threads)
{
    for (int w = 0; sp->ws && w < threads; ++w) {
        free(sp->ws[w].seen);
        free(sp->ws[w].xb);
        bk_atlas_overlap_scratch_free(&sp->ws[w].ovs);
    }
    free(sp->ws);
    free((void *)sp->cand);
    free(sp->b);
    free(sp->L);
    free(sp->ov);
    free(sp->work);
}

/* Long: one loop of passes over a dozen shared buffers (the charts' lists, the marks, the looks);
 * its parts are functions already, what is left is their order. */
int bk_atlas_charts_tidy(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale,
                         double cone_deg, double max_stretch, charting *C, uint64_t *work)
{
    uint32_t   T = s->tri_count, n = C->count;
    uint32_t  *next = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *prev = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t  *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint8_t   *changed = calloc((size_t)n + 1, 1);
    tidy_grid *grid = calloc((size_t)n + 1, sizeof(tidy_grid));
    uint32_t  *seen = calloc((size_t)T + 1, sizeof(uint32_t)), query = 0;
    size_t     words = ((size_t)T + 63) / 64;
    uint64_t  *cur = malloc(sizeof(uint64_t) * (words + 1)), *nxt = calloc(words + 1, sizeof(uint64_t));
    uint64_t  *skip = malloc(sizeof(uint64_t) * (words + 1));
    u32_list  *ovl = calloc((size_t)n + 1, sizeof(u32_list));
    double    *xb = NULL;
    size_t     xb_cap = 0;
    overlap_scratch ovs = { 0 };
    int             rc = -1;
    const double    cmin = cos(cone_deg * BK_ATLAS_PI / 180.0);
    uint8_t        *ek = malloc((size_t)A->start[T] + 1);
    const int       threads = bk_pool_threads(), spec = threads > 1 && bk_atlas_spec;
    /* speculation (tidy_spec_fn): the looks, and per chart the triangles that joined it and
     * whether one left it in this pass */
    tidy_spec sp = { 0 };
    uint32_t  sp_cap = 0;
    u32_list *joined = spec ? calloc((size_t)n + 1, sizeof(u32_list)) : NULL;
    uint8_t  *left = spec ? calloc((size_t)n + 1, 1) : NULL;
    double   *gx = NULL;
    size_t    gx_cap = 0;
    sp.ws = spec ? calloc((size_t)threads, sizeof(tidy_spec_ws)) : NULL;
    if (!next || !prev || !head || !cnt || !changed || !ek || !grid || !seen || !cur || !nxt || !skip || !ovl ||
        (spec && (!joined || !left || !sp.ws)))
        goto done;
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
    sp.tc = &tc;
    sp.head = head;
    sp.next = next;
    sp.cnt = cnt;
    sp.grid = grid;
    sp.T = T;
    for (int pass = 0; pass < 8; ++pass) {
        uint32_t moved = 0, ncand = 0, at = 0;
        tc.cur = cur;
        bk_parallel_for(words, 256, tidy_skip_fn, &tc);
        if (spec && tidy_spec_pass(&sp, &sp_cap, cur, skip, words, joined, left, n, &ncand)) goto done;
        for (size_t w = 0; w < words; ++w)
            while (cur[w]) {
                uint32_t t = (uint32_t)(64 * w) + (uint32_t)__builtin_ctzll(cur[w]);
                cur[w] &= cur[w] - 1;
                if (skip[w] >> (t & 63) & 1) continue; /* not a candidate, as tidy_skip_fn found */
                uint32_t a = C->tri_chart[t], b;
                double   L[6], tol;
                if (!tidy_candidate(&tc, t, &b, L, &tol)) continue;
                uint32_t m;
                int      ov =
                    ncand ? tidy_spec_take(&sp, ncand, &at, t, b, L, tol, joined, left, &gx, &gx_cap, &ovs, work) : -2;
                if (ov == -2) {
                    if (tidy_gather(C, head, next, cnt, grid, b, L, seen, &query, &xb, &xb_cap, &m)) goto done;
                    ov = bk_atlas_sets_overlap(L, 1, xb, m, tol * 10, &ovs, work);
                }
                if (ov < 0 || (ov && u32_push(&ovl[b], t))) goto done;
                if (ov) continue;
                /* move: out of a's list, onto the end of b's */
                if (prev[t] != BK_NONE) next[prev[t]] = next[t];
                else head[a] = next[t];
                if (next[t] != BK_NONE) prev[next[t]] = prev[t];
                cnt[a]--;
                next[t] = head[b];
                prev[t] = BK_NONE;
                if (head[b] != BK_NONE) prev[head[b]] = t;
                head[b] = t;
                cnt[b]++;
                memcpy(C->loc + 6 * (size_t)t, L, sizeof L);
                C->tri_chart[t] = b;
                if (grid[b].gw && u32_push(&grid[b].late, t)) goto done;
                if (joined) {
                    if (u32_push(&joined[b], t)) goto done;
                    left[a] = 1;
                }
                changed[a] = changed[b] = 1;
                moved++;
                tidy_mark(cur, nxt, t, t);
                for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
                    tidy_mark(cur, nxt, t, A->adj[p]);
                    skip[A->adj[p] >> 6] &= ~(1ull << (A->adj[p] & 63)); /* its test reads t */
                }
                for (uint32_t i = 0; i < ovl[a].n; ++i) tidy_mark(cur, nxt, t, ovl[a].v[i]);
                ovl[a].n = 0;
            }
        if (!moved) break;
        uint64_t *sw = cur;
        cur = nxt;
        nxt = sw;
        memset(nxt, 0, sizeof(uint64_t) * words);
    }
    /* compact: charts with triangles left, their lists contiguous again, rectangles refitted */
    if (tidy_compact(C, n, T, cnt, head, next, changed)) goto done;
    rc = 0;
done:
    for (uint32_t ci = 0; grid && ci < n; ++ci) tidy_grid_free(&grid[ci]);
    for (uint32_t ci = 0; ovl && ci < n; ++ci) free(ovl[ci].v);
    free(grid);
    free(seen);
    free(cur);
    free(nxt);
    free(skip);
    free(ovl);
    free(next);
    free(prev);
    free(head);
    free(cnt);
    free(changed);
    free(xb);
    free(ek);
    bk_atlas_overlap_scratch_free(&ovs);
    for (uint32_t ci = 0; joined && ci < n; ++ci) free(joined[ci].v);
    free(joined);
    free(left);
    free(gx);
    tidy_spec_free(&sp, threads);
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
                weld[s->tri_v[3 * (size_t)t + (x + 1) % 3]] == weld[s->tri_v[3 * (size_t)u + y]]) {
                *kt = x;
                *ku = y;
                return 0;
            }
    return -1;
}

/* Corner k of t laid on its edge i -> j already at L[2i..], L[2j..]: t's world shape scaled by
 * the edge's layout length over its world length, on the side that keeps the layout's positive
 * orientation. */
static void lay_on_edge(const bk_scene *s, uint32_t t, int i, int j, int k, double *L)
{
    double pi[3], pj[3], pk[3], e[3], d[3];
    bk_atlas_pos_of(s, t, i, pi);
    bk_atlas_pos_of(s, t, j, pj);
    bk_atlas_pos_of(s, t, k, pk);
    for (int q = 0; q < 3; ++q) {
        e[q] = pj[q] - pi[q];
        d[q] = pk[q] - pi[q];
    }
    double lw2 = bk_dot3d(e, e), along = bk_dot3d(d, e) / lw2;
    double perp2 = bk_dot3d(d, d) - along * along * lw2, perp = sqrt(bk_dmax(perp2, 0)) / sqrt(lw2);
    double ex = L[2 * j] - L[2 * i], ey = L[2 * j + 1] - L[2 * i + 1];
    /* in layout units: along and perp are fractions of the edge (scale la / lw built in) */
    double x1 = L[2 * i] + along * ex - perp * ey, y1 = L[2 * i + 1] + along * ey + perp * ex;
    double x2 = L[2 * i] + along * ex + perp * ey, y2 = L[2 * i + 1] + along * ey - perp * ex;
    L[2 * k] = x1;
    L[2 * k + 1] = y1;
    double a1 = (L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]);
    if (!(a1 > 0)) {
        L[2 * k] = x2;
        L[2 * k + 1] = y2;
    }
}

typedef struct absorb_nb {
    double   len;
    uint32_t b;
} absorb_nb;
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
    uint32_t       *head, *tail, *cnt, *next, *slot;
    bk_hpt        **hull_p;
    int            *hull_n;
    atomic_int      err;
} absorb_init_ctx;

static void absorb_init_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    absorb_init_ctx *x = ctx;
    const charting  *C = x->C;
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
    const charting  *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        size_t nb3 = 0, np = 3 * (size_t)x->cnt[ci];
        if (!np) continue;
        bk_hpt *hp = malloc(sizeof(bk_hpt) * 3 * np);
        if (!hp) {
            x->err = 1;
            continue;
        }
        for (uint32_t t = x->head[ci]; t != BK_NONE; t = x->next[t])
            for (int k2 = 0; k2 < 3; ++k2) {
                hp[nb3].x = C->loc[6 * (size_t)t + 2 * k2];
                hp[nb3].y = C->loc[6 * (size_t)t + 2 * k2 + 1];
                nb3++;
            }
        int bn = bk_atlas_convex_hull(hp, (int)nb3, hp + nb3);
        if (!(x->hull_p[ci] = malloc(sizeof(bk_hpt) * ((size_t)bn + 1)))) x->err = 1;
        else {
            memcpy(x->hull_p[ci], hp + nb3, sizeof(bk_hpt) * (size_t)bn);
            x->hull_n[ci] = bn;
        }
        free(hp);
    }
}

/* bk_atlas_charts_absorb's state: what it reads, the charts' lists (head -> next -> tail, cnt
 * triangles), and scratch grown as needed. */
typedef struct absorb_state {
    const bk_scene  *s;
    const uint32_t  *weld;
    const adjacency *A;
    const float     *tri_scale;
    double           max_stretch, pad_w, cmin;
    charting        *C;
    uint64_t        *work;
    uint32_t        *next, *tail, *head, *cnt, *slot, *stamp;
    absorb_nb       *nbs;
    uint32_t        *ids, *queue, *bt;
    double          *xa, *xb, *len;
    size_t           cap_a, cap_b, cap_nb, cap_h, cap_bt;
    bk_hpt          *hp, **hull_p;
    int             *hull_n;
    pair_list        pairs;
    overlap_scratch  ovs;
} absorb_state;

/* Chart a's neighbouring charts into S->nbs, by the length of the edges they share, longest
 * first. Returns how many, or -1 out of memory. */
static int absorb_neighbours(absorb_state *S, uint32_t a)
{
    const bk_scene  *s = S->s;
    const adjacency *A = S->A;
    const charting  *C = S->C;
    const uint32_t  *head = S->head, *next = S->next;
    uint32_t        *stamp = S->stamp;
    double          *len = S->len;
    uint32_t         nn = 0;
    for (uint32_t t = head[a]; t != BK_NONE; t = next[t])
        for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
            uint32_t u = A->adj[p], b = C->tri_chart[u];
            int      kt, ku;
            if (b == a || b == BK_NONE || bk_atlas_shared_edge(s, S->weld, t, u, &kt, &ku)) continue;
            double p0[3], p1[3], e[3];
            bk_atlas_pos_of(s, t, kt, p0);
            bk_atlas_pos_of(s, t, (kt + 1) % 3, p1);
            for (int q = 0; q < 3; ++q) e[q] = p1[q] - p0[q];
            if (stamp[b] != a) {
                stamp[b] = a;
                len[b] = 0;
                if (nn + 1 > S->cap_nb) {
                    S->cap_nb = 2 * nn + 16;
                    absorb_nb *q = realloc(S->nbs, sizeof(absorb_nb) * S->cap_nb);
                    if (!q) return -1;
                    S->nbs = q;
                }
                S->nbs[nn].b = b;
                nn++;
            }
            len[b] += sqrt(bk_dot3d(e, e));
        }
    for (uint32_t k = 0; k < nn; ++k) S->nbs[k].len = len[S->nbs[k].b];
    if (nn) qsort(S->nbs, nn, sizeof(absorb_nb), absorb_nb_cmp);
    return (int)nn;
}

/* Chart a's na triangles (S->ids) laid on chart b's layout, breadth-first from b, into S->xa
 * (slot[t]: t's place there), each as its shared edges give it (see above). 1 when all are laid
 * within b's rules, *qt_out the triangles in S->queue in the order laid; else 0. */
static int absorb_lay(absorb_state *S, uint32_t a, uint32_t b, uint32_t na, double tol, uint32_t *qt_out)
{
    const bk_scene  *s = S->s;
    const uint32_t  *weld = S->weld;
    const adjacency *A = S->A;
    const charting  *C = S->C;
    const chart     *cb = &C->charts[b];
    const uint32_t  *ids = S->ids;
    uint32_t        *slot = S->slot, *queue = S->queue;
    double          *xa = S->xa;
    const float     *tri_scale = S->tri_scale;
    double           max_stretch = S->max_stretch, cmin = S->cmin;
    /* slot[t]: t's place in xa once laid (BK_NONE before); breadth-first from b */
    uint32_t qh = 0, qt = 0, placed = 0;
    int      ok = 1;
    for (uint32_t i = 0; i < na; ++i) slot[ids[i]] = BK_NONE;
    for (uint32_t i = 0; i < na; ++i) {
        uint32_t t = ids[i];
        for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p)
            if (C->tri_chart[A->adj[p]] == b) {
                slot[t] = BK_NONE - 1;
                queue[qt++] = t;
                break;
            } /* queued */
    }
    while (qh < qt && ok) {
        uint32_t t = queue[qh++];
        double   L[6];
        int      have = 0, edge_i = -1;
        for (uint32_t p = A->start[t]; p < A->start[t + 1] && ok; ++p) {
            uint32_t      u = A->adj[p];
            const double *Lu;
            if (C->tri_chart[u] == b) Lu = C->loc + 6 * (size_t)u;
            else if (C->tri_chart[u] == a && slot[u] < BK_NONE - 1) Lu = xa + 6 * (size_t)slot[u];
            else continue;
            int kt, ku;
            if (bk_atlas_shared_edge(s, weld, t, u, &kt, &ku)) continue;
            if (!lay_edge(L, &have, Lu, kt, ku, tol)) ok = 0;
            if (edge_i < 0) edge_i = kt;
        }
        if (!ok || edge_i < 0) {
            ok = 0;
            break;
        }
        if (have != 7) lay_on_edge(s, t, edge_i, (edge_i + 1) % 3, (edge_i + 2) % 3, L);
        double s1, s2, f = tri_scale ? tri_scale[t] : 1.0;
        if (tri_map_sv(s, t, L, &s1, &s2)) {
            ok = 0;
            break;
        }
        s1 /= f;
        s2 /= f;
        if (cb->smooth) {
            double r = s1 * s2;
            if (!(r <= max_stretch && r >= 1.0 / max_stretch && s1 <= 2.0 * s2)) {
                ok = 0;
                break;
            }
        } else if (!(s1 <= 1.0 + 1e-6 && s2 >= cmin && s1 * s2 >= cmin)) {
            ok = 0;
            break;
        }
        memcpy(xa + 6 * (size_t)placed, L, sizeof L);
        slot[t] = placed++;
        for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
            uint32_t u = A->adj[p];
            if (C->tri_chart[u] == a && slot[u] == BK_NONE) {
                slot[u] = BK_NONE - 1;
                queue[qt++] = u;
            }
        }
    }
    *qt_out = qt;
    return ok && placed == na;
}

/* Whether a's laid triangles (S->xa) may join b: no overlaps among them or with b's triangles,
 * and the union's rectangle (from b's hull, made from its corners once, then kept, and the moved
 * corners; its hull left at S->hp + *np_out, *hn_out points, turned by (*rcs, *rsn)) costs less
 * than the two apart. 1 yes, 0 no, -1 out of memory. */
static int absorb_union(absorb_state *S, uint32_t a, uint32_t b, uint32_t na, double tol, size_t *np_out, int *hn_out,
                        double *rcs_out, double *rsn_out)
{
    const charting *C = S->C;
    const chart    *cb = &C->charts[b];
    const uint32_t *head = S->head, *next = S->next, *cnt = S->cnt;
    bk_hpt        **hull_p = S->hull_p;
    int            *hull_n = S->hull_n;
    const double   *xa = S->xa;
    double          pad_w = S->pad_w;
    /* overlaps: among the moved triangles, and with b's */
    S->pairs.n = 0;
    if (bk_atlas_find_overlaps(xa, na, tol * 10, &S->pairs, S->work)) return -1;
    if (S->pairs.n) return 0;
    /* the union's rectangle from b's hull (made from its corners once, then kept) and
     * the moved corners */
    size_t np = 3 * ((size_t)(hull_p[b] ? (uint32_t)hull_n[b] : cnt[b]) + na);
    if (np * 3 + 1 > S->cap_h) {
        S->cap_h = np * 3 + 1;
        bk_hpt *q = realloc(S->hp, sizeof(bk_hpt) * S->cap_h);
        if (!q) return -1;
        S->hp = q;
    }
    bk_hpt *hp = S->hp;
    if (!hull_p[b]) {
        size_t nb3 = 0;
        for (uint32_t x = head[b]; x != BK_NONE; x = next[x])
            for (int k2 = 0; k2 < 3; ++k2) {
                hp[nb3].x = C->loc[6 * (size_t)x + 2 * k2];
                hp[nb3].y = C->loc[6 * (size_t)x + 2 * k2 + 1];
                nb3++;
            }
        int bn = bk_atlas_convex_hull(hp, (int)nb3, hp + nb3);
        if (!(hull_p[b] = malloc(sizeof(bk_hpt) * ((size_t)bn + 1)))) return -1;
        memcpy(hull_p[b], hp + nb3, sizeof(bk_hpt) * (size_t)bn);
        hull_n[b] = bn;
    }
    size_t hb = (size_t)hull_n[b];
    np = hb + 3 * (size_t)na;
    memcpy(hp, hull_p[b], sizeof(bk_hpt) * hb);
    for (uint32_t i = 0; i < na; ++i)
        for (int k2 = 0; k2 < 3; ++k2) {
            hp[hb + 3 * i + k2].x = xa[6 * (size_t)i + 2 * k2];
            hp[hb + 3 * i + k2].y = xa[6 * (size_t)i + 2 * k2 + 1];
        }
    int    hn = bk_atlas_convex_hull(hp, (int)np, hp + np);
    double rcs, rsn, rw, rh;
    bk_atlas_rect_from_hull(hp + np, hn, &rcs, &rsn, &rw, &rh);
    const chart *ca = &C->charts[a];
    double gain = (cb->w + pad_w) * (cb->h + pad_w) + (ca->w + pad_w) * (ca->h + pad_w) - (rw + pad_w) * (rh + pad_w);
    if (!(gain > 0)) return 0;
    if (6 * (size_t)cnt[b] > S->cap_b) {
        S->cap_b = 12 * (size_t)cnt[b] + 64;
        double *q = realloc(S->xb, sizeof(double) * S->cap_b);
        if (!q) return -1;
        S->xb = q;
    }
    uint32_t m = 0;
    for (uint32_t x = head[b]; x != BK_NONE; x = next[x])
        memcpy(S->xb + 6 * (size_t)m++, C->loc + 6 * (size_t)x, 6 * sizeof(double));
    int ov = bk_atlas_sets_overlap(xa, na, S->xb, m, tol * 10, &S->ovs, S->work);
    if (ov < 0) return -1;
    if (ov) return 0;
    *np_out = np;
    *hn_out = hn;
    *rcs_out = rcs;
    *rsn_out = rsn;
    return 1;
}

/* a's qt triangles (S->queue, in the order laid) moved onto the end of b's list, and b turned to
 * the union's rectangle (hull S->hp + np, hn points, rotation (rcs, rsn)). 0, or -1 out of
 * memory. */
static int absorb_move(absorb_state *S, uint32_t a, uint32_t b, uint32_t qt, size_t np, int hn, double rcs, double rsn)
{
    charting       *C = S->C;
    uint32_t       *next = S->next, *tail = S->tail, *head = S->head, *cnt = S->cnt;
    const uint32_t *queue = S->queue, *slot = S->slot;
    const double   *xa = S->xa;
    bk_hpt         *hp = S->hp, **hull_p = S->hull_p;
    int            *hull_n = S->hull_n;
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
    if ((size_t)cnt[b] > S->cap_bt) {
        S->cap_bt = 2 * (size_t)cnt[b];
        uint32_t *q = realloc(S->bt, sizeof(uint32_t) * S->cap_bt);
        if (!q) return -1;
        S->bt = q;
    }
    uint32_t m = 0;
    for (uint32_t x = head[b]; x != BK_NONE; x = next[x]) S->bt[m++] = x;
    bk_atlas_apply_rect(C->loc, S->bt, m, hp + np, hn, rcs, rsn, &C->charts[b].w, &C->charts[b].h);
    bk_hpt *nh = realloc(hull_p[b], sizeof(bk_hpt) * ((size_t)hn + 1));
    if (!nh) return -1;
    memcpy(nh, hp + np, sizeof(bk_hpt) * (size_t)hn);
    hull_p[b] = nh;
    hull_n[b] = hn;
    free(hull_p[a]);
    hull_p[a] = NULL;
    return 0;
}

int bk_atlas_charts_absorb(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale,
                           double cone_deg, double max_stretch, double max_cost, double pad_w, double smooth_min_tri,
                           charting *C, uint64_t *work)
{
    uint32_t     T = s->tri_count, n = C->count;
    absorb_state S;
    memset(&S, 0, sizeof S);
    S.s = s;
    S.weld = weld;
    S.A = A;
    S.tri_scale = tri_scale;
    S.max_stretch = max_stretch;
    S.pad_w = pad_w;
    S.C = C;
    S.work = work;
    uint32_t *next = S.next = malloc(sizeof(uint32_t) * ((size_t)T + 1)),
             *tail = S.tail = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *head = S.head = malloc(sizeof(uint32_t) * ((size_t)n + 1)),
             *cnt = S.cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *slot = S.slot = malloc(sizeof(uint32_t) * ((size_t)T + 1)),
             *stamp = S.stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    key_idx *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    S.len = malloc(sizeof(double) * ((size_t)n + 1));
    bk_hpt **hull_p = S.hull_p = calloc((size_t)n + 1, sizeof(bk_hpt *));
    int     *hull_n = S.hull_n = calloc((size_t)n + 1, sizeof(int));
    int      rc = -1;
    S.cmin = cos(cone_deg * BK_ATLAS_PI / 180.0);
    if (!next || !tail || !head || !cnt || !slot || !stamp || !order || !S.len || !hull_p || !hull_n) goto done;
    uint32_t        nsmall = 0;
    absorb_init_ctx ic = { C, head, tail, cnt, next, slot, NULL, NULL, 0 };
    bk_parallel_for(n, 16, absorb_init_fn, &ic);
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        stamp[ci] = BK_NONE;
        double cost = (c->w + pad_w) * (c->h + pad_w);
        if (!(cost <= max_cost * pad_w * pad_w)) continue;
        if (c->smooth) {
            double area = 0;
            for (uint32_t i = 0; i < c->count; ++i)
                area += bk_tri2_area(C->loc + 6 * (size_t)C->chart_tris[c->first + i]);
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
        ic.hull_p = hull_p;
        ic.hull_n = hull_n;
        bk_parallel_for(n, 4, absorb_hull_fn, &ic);
        if (ic.err) goto done;
    }
    bk_key_idx_sort(order, nsmall);
    for (uint32_t oi = 0; oi < nsmall; ++oi) {
        uint32_t a = order[oi].idx;
        if (!cnt[a]) continue;
        /* a's neighbouring charts by the length of the edges they share */
        int nn = absorb_neighbours(&S, a);
        if (nn < 0) goto done;
        if (!nn) continue; /* alone (a separate piece of the mesh) */
        if ((size_t)cnt[a] > S.cap_a) {
            S.cap_a = 2 * (size_t)cnt[a] + 16;
            double   *q = realloc(S.xa, sizeof(double) * 6 * S.cap_a);
            uint32_t *qi = realloc(S.ids, sizeof(uint32_t) * S.cap_a),
                     *qq = realloc(S.queue, sizeof(uint32_t) * S.cap_a);
            if (q) S.xa = q;
            if (qi) S.ids = qi;
            if (qq) S.queue = qq;
            if (!q || !qi || !qq) goto done;
        }
        uint32_t na = 0;
        for (uint32_t t = head[a]; t != BK_NONE; t = next[t]) S.ids[na++] = t;
        for (uint32_t k = 0; k < (uint32_t)nn && k < 4; ++k) {
            uint32_t     b = S.nbs[k].b, qt;
            const chart *cb = &C->charts[b];
            double       tol = 1e-9 * (cb->w + cb->h);
            if (!absorb_lay(&S, a, b, na, tol, &qt)) continue;
            size_t np;
            int    hn;
            double rcs, rsn;
            int    r = absorb_union(&S, a, b, na, tol, &np, &hn, &rcs, &rsn);
            if (r < 0) goto done;
            if (!r) continue;
            if (absorb_move(&S, a, b, qt, np, hn, rcs, rsn)) goto done;
            break;
        }
        for (uint32_t i = 0; i < na; ++i) slot[S.ids[i]] = BK_NONE;
    }
    /* compact: charts with triangles left, their lists contiguous again (rectangles fitted as they grew) */
    if (bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL) == BK_NONE) goto done;
    rc = 0;
done:
    free(next);
    free(tail);
    free(head);
    free(cnt);
    free(slot);
    free(stamp);
    free(order);
    free(S.nbs);
    free(S.ids);
    free(S.queue);
    free(S.xa);
    free(S.xb);
    free(S.len);
    free(S.pairs.p);
    free(S.hp);
    free(S.bt);
    for (uint32_t ci = 0; hull_p && ci < n; ++ci) free(hull_p[ci]);
    free(hull_p);
    free(hull_n);
    bk_atlas_overlap_scratch_free(&S.ovs);
    return rc;
}
