/* atlas_smooth.c - smooth charts: curved regions unfolded by least-squares conformal maps
 * (bk_atlas_charts_smooth), and smooth charts joined with a neighbour across their seam by the
 * same map and check (bk_atlas_charts_join).
 *
 * Pipeline: adjacency (atlas_topology.c) -> bk_atlas_charts_smooth -> the planar charts take the
 * rest (atlas_grow.c) -> split (atlas_split.c) -> bk_atlas_charts_join -> merge (atlas_merge.c).
 */
#include "atlas_internal.h"
#include "atlas_lscm.h"
#include "pool.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

int                  bk_atlas_lscm_profile;
bk_atlas_lscm_counts bk_atlas_lscm_stats;
int                  bk_atlas_lscm_solver;

static int tried_ev(const uint8_t *ev, uint32_t i) { return ev[i] != 0; }

/* The solve's layout: a vertex's (u, v) side by side (x[2 j], x[2 j + 1]), and a triangle's
 * coefficients as the pairs (gx, gy) of its corners, so that a corner's two terms are one complex
 * product, (gx + i gy) (u + i v) forward and its conjugate backward, on two-lane vectors (GCC's
 * vector extension: SSE2 on x86-64, plain code elsewhere). Each lane does the scalar loop's
 * operations on the same operands in the same order, and the sums over the unknowns still run
 * over every u, then every v: the same bits as the scalar code with u's and v's in two blocks,
 * with one load per vertex instead of two and three read-modify-writes per triangle in A^T r
 * instead of six. */
typedef double        lscm_v2 __attribute__((vector_size(16)));
static inline lscm_v2 v2_load(const double *p)
{
    lscm_v2 r;
    memcpy(&r, p, sizeof r);
    return r;
}
static inline void v2_store(double *p, lscm_v2 a) { memcpy(p, &a, sizeof a); }
/* lanes moved by element (GCC's __builtin_shuffle is not in clang, which builds the sanitizer and
 * fuzz targets; both make the same shuffles of these) */
static inline lscm_v2 v2_lo(lscm_v2 a) { return (lscm_v2){ a[0], a[0] }; }
static inline lscm_v2 v2_hi(lscm_v2 a) { return (lscm_v2){ a[1], a[1] }; }
static inline lscm_v2 v2_swap(lscm_v2 a) { return (lscm_v2){ a[1], a[0] }; }

typedef bk_lscm_tri lscm_tri; /* g: (gx, gy) per corner; 72 B */

/* residuals r = A x for the chart's triangles: 2 per triangle; x = (u_j, v_j) of n vertices.
 * Returns the sum of their squares, added in order (CGLS's |A D p|^2: summed here, the sum's chain
 * of additions runs in the shadow of the gathers instead of a loop of its own). Per corner:
 * a += gx u - gy v, b += gy u + gx v. */
static double lscm_apply(const lscm_tri *L, uint32_t nt, const double *x, double *r)
{
    const lscm_v2 flip = { -1.0, 1.0 };
    double        ss = 0;
    for (uint32_t i = 0; i < nt; ++i) {
        const lscm_tri *q = &L[i];
        lscm_v2         ab = { 0.0, 0.0 };
        for (int j = 0; j < 3; ++j) {
            lscm_v2 z = v2_load(x + 2 * (size_t)q->v[j]), g = v2_load(q->g + 2 * j);
            ab += v2_lo(z) * g + v2_hi(z) * (v2_swap(g) * flip); /* (u gx + v (-gy), u gy + v gx) */
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
static void lscm_apply_t(const lscm_tri *L, uint32_t nt, uint32_t n, double *r, const double *dq, double alpha,
                         double *y)
{
    const lscm_v2 conj = { 1.0, -1.0 };
    memset(y, 0, sizeof(double) * 2 * n);
    for (uint32_t i = 0; i < nt; ++i) {
        const lscm_tri *q = &L[i];
        lscm_v2         ri = v2_load(r + 2 * (size_t)i);
        if (dq) {
            ri -= (lscm_v2){ alpha, alpha } * v2_load(dq + 2 * (size_t)i);
            v2_store(r + 2 * (size_t)i, ri);
        }
        lscm_v2 ab = (lscm_v2){ q->w, q->w } * ri, a = v2_lo(ab), b = v2_hi(ab);
        for (int j = 0; j < 3; ++j) {
            lscm_v2 g = v2_load(q->g + 2 * j);
            double *yj = y + 2 * (size_t)q->v[j];
            v2_store(yj, v2_load(yj) + (a * (g * conj) + b * v2_swap(g))); /* (a gx + b gy, a (-gy) + b gx) */
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
    lscm_tri       *tri;
    double         *x, *r, *s, *p, *q, *d; /* unknowns and CGLS vectors */
    uint8_t        *pin;
    size_t          tcap, vcap;
    bk_lscm_direct *direct; /* the direct solver's scratch, or NULL */
} lscm_ws;

static int lscm_reserve(lscm_ws *W, uint32_t nt, uint32_t n)
{
    if (nt > W->tcap) {
        size_t    c = 2 * (size_t)nt;
        lscm_tri *a = realloc(W->tri, sizeof(lscm_tri) * c);
        double   *r = realloc(W->r, sizeof(double) * 2 * c), *q = a && r ? realloc(W->q, sizeof(double) * 2 * c) : NULL;
        if (a) W->tri = a;
        if (r) W->r = r;
        if (q) W->q = q;
        if (!a || !r || !q) return -1;
        W->tcap = c;
    }
    if (n > W->vcap) {
        size_t   c = 2 * (size_t)n;
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
    free(W->tri);
    free(W->x);
    free(W->r);
    free(W->s);
    free(W->p);
    free(W->q);
    free(W->d);
    free(W->pin);
    bk_lscm_direct_free(W->direct);
    memset(W, 0, sizeof *W);
}

/* CGLS on the columns not pinned, scaled by d (1 / column norm). x holds the start and the
 * answer. Returns the iterations taken. */
static int lscm_solve(lscm_ws *W, uint32_t nt, uint32_t n, int max_iter)
{
    uint32_t m = 2 * n;
    double  *x = W->x, *r = W->r, *s = W->s, *p = W->p, *q = W->q, *d = W->d;
    /* column norms: sum over triangles of the squared coefficients */
    memset(d, 0, sizeof(double) * m);
    for (uint32_t i = 0; i < nt; ++i)
        for (int j = 0; j < 3; ++j) {
            const lscm_tri *t = &W->tri[i];
            double          c = t->w * t->w * (t->g[2 * j] * t->g[2 * j] + t->g[2 * j + 1] * t->g[2 * j + 1]);
            d[2 * (size_t)t->v[j]] += c;
            d[2 * (size_t)t->v[j] + 1] += c;
        }
    for (uint32_t k = 0; k < m; ++k) d[k] = W->pin[k] || !(d[k] > 0) ? 0.0 : 1.0 / sqrt(d[k]);
    /* r = -A x (the residual of A x = 0), s = D A^T r */
    lscm_apply(W->tri, nt, x, r);
    for (uint32_t i = 0; i < 2 * nt; ++i) r[i] = -r[i];
    lscm_apply_t(W->tri, nt, n, r, NULL, 0.0, s);
    for (uint32_t k = 0; k < m; ++k) {
        s[k] *= d[k];
        p[k] = s[k];
    }
    double gamma = lscm_sumsq(s, n);
    double g0 = gamma;
    int    it = 0;
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
        for (uint32_t k = 0; k < m; ++k) {
            p[k] = s[k] + beta * p[k];
            s[k] = d[k] * p[k];
        }
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

typedef struct sm_ws { /* one worker's scratch */
    lscm_ws   W;
    uint32_t *hkey, *hval;   /* the chart being grown: triangle -> its place in the growth (open */
    uint32_t *hused, nused;  /* addressing, hmask + 1 slots; hused lists the slots taken) */
    uint32_t  hmask, hshift; /* hmask + 1 == 1 << (32 - hshift) */
    uint32_t *uf, *cid;      /* 3 max_tris */
    uint8_t  *evict;         /* max_tris, zero between uses */
    double   *xy;
    size_t    xy_cap;
    bk_hpt   *pts;
    size_t    pts_cap;
    pair_list pairs;
} sm_ws;

typedef struct sm_try { /* one chart grown from a seed */
    uint32_t  seed, limit;
    uint32_t  k;             /* its place in the batch: the charts before it grow first */
    int       stale;         /* its growth read a triangle whose owner changed (sm_stale_fn) */
    uint32_t *tris, nt;      /* grown triangles (max_tris); after sm_check_chain the first nt of nt0 */
    uint32_t  nt0, levels;   /* sm_check_chain: the first growth's size, the sizes it checked */
    int       skip;          /* its seed is in an earlier chart of its batch */
    uint32_t *keep, nkeep;   /* places in tris of those kept (max_tris), when ok */
    uint32_t *front, nfront; /* neighbours its growth read and did not take (4 max_tris, repeats
                                possible); nfront BK_NONE: more (read every neighbour) */
    double  *loc;            /* 6 per place in tris: the chart's corners (C->loc's layout by place) */
    double   avg[3];         /* mean normal */
    double   w, h;
    int      curved, ok, err;
    uint64_t work;
    uint32_t limit0; /* the growth's limit (sm_check_chain may lower limit) */
} sm_try;

#define SM_OWN_K_BITS 8 /* a batch's place (K <= 256) under a snapshot id of 24 bits */
#define SM_OWN_K_MASK ((1u << SM_OWN_K_BITS) - 1)
#define SM_OWN_ID_MAX ((1u << (32 - SM_OWN_K_BITS)) - 1)
#define SM_LEVELS                                                                   \
    24 /* speculation (sm_spec_plan): levels planned after the first, at most (2000 \
        * triangles halve to 4 in 9) */

typedef struct sm_ctx {
    const bk_scene             *s;
    const tri_geom             *g;
    const adjacency            *A;
    const uint32_t             *weld;
    const bk_atlas_smooth_opts *so;
    charting                   *C; /* tri_chart read only while a batch grows */
    const uint8_t              *tried;
    _Atomic uint32_t           *own[3]; /* per triangle, snapshots of who owns it in the batch's growths
                                          (sm_claim_fn): id << SM_OWN_K_BITS | the chart's place, where id
                                          is the snapshot's (other ids: owned by none) */
    int             oslot, oslot_prev;  /* the snapshot growths read: own[oslot], id snap (a fresh id: none */
    uint32_t        snap, snap_prev;    /* owned); sm_stale_fn: the one they were made over, oslot_prev */
    const uint32_t *regrow;             /* sm_grow_fn: the tries to grow again (NULL: all) */
    const uint32_t *iota;               /* 0, 1, ... max_tris: places as triangle lists for bk_atlas_fit_rect */
    sm_ws          *ws;
    sm_try         *tries;
    sm_try        **task;    /* the batch's checks: a try's chain, or one level of it */
    const key_idx  *order;   /* the order they start in: task[order[i].idx] */
    const uint32_t *slot;    /* per task: BK_NONE the whole chain (sm_check_chain), else the level's
                                state in lstate: try * (SM_LEVELS + 1) + level */
    _Atomic uint8_t *lstate; /* a level: 0 not checked, 1 failed, 2 kept or out of memory */
} sm_ctx;

static uint32_t hm_slot(const sm_ws *w, uint32_t key)
{
    uint32_t h =
        (key * 2654435761u) >> w->hshift; /* the product's high bits: ids far apart by a power of 2 still spread */
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
    for (uint32_t i = 0; i < t->nt && !curved; ++i)
        curved = bk_dot3d(bk_atlas_tri_n(x->g, t->tris[i]), t->avg) < cos_flat;
    t->curved = curved;
}

/* Grows a chart from t->seed up to t->limit triangles over those free in tri_chart, tried and
 * the snapshot x->snap (the batch's charts before t; all three only read), its own in ws's map
 * (cleared by the caller). */
static void sm_grow(const sm_ctx *x, sm_ws *ws, sm_try *t)
{
    const uint32_t         *tri_chart = x->C->tri_chart;
    const uint8_t          *tried = x->tried;
    const tri_geom         *g = x->g;
    const adjacency        *A = x->A;
    const _Atomic uint32_t *own = x->own[x->oslot];
    const uint32_t          lo = x->snap << SM_OWN_K_BITS, hi = lo | t->k; /* owned by a chart before t: [lo, hi) */
    double                  cos_cone = cos(x->so->cone_deg * BK_ATLAS_PI / 180.0),
           cos_crease = cos(x->so->crease_deg * BK_ATLAS_PI / 180.0);
    double        cos_flat = cos(x->so->flat_deg * BK_ATLAS_PI / 180.0);
    uint32_t      seed = t->seed, limit = t->limit, qh = 0, qt = 0, *queue = t->tris;
    const double *ns = bk_atlas_tri_n(g, seed);
    double        sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] }, *avg = t->avg;
    avg[0] = ns[0];
    avg[1] = ns[1];
    avg[2] = ns[2];
    hm_put(ws, seed, qt);
    queue[qt++] = seed;
    t->nfront = 0;
    while (qh < qt && qt < limit) {
        uint32_t      tt = queue[qh++];
        const double *nt = bk_atlas_tri_n(g, tt);
        for (uint32_t p = A->start[tt]; p < A->start[tt + 1] && qt < limit; ++p) {
            uint32_t u = A->adj[p];
            if (hm_get(ws, u) != BK_NONE) continue;
            const double *nu = bk_atlas_tri_n(g, u);
            if (tri_chart[u] != BK_NONE || tried[u] ||
                (atomic_load_explicit(&own[u], memory_order_relaxed) - lo < hi - lo) || bk_dot3d(nu, nt) < cos_crease ||
                bk_dot3d(nu, avg) < cos_cone) {
                if (t->nfront < 4 * (x->so->max_tris + 1)) t->front[t->nfront++] = u;
                else t->nfront = BK_NONE;
                continue;
            }
            hm_put(ws, u, qt);
            queue[qt++] = u;
            for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
            double l = sqrt(bk_dot3d(sum, sum));
            if (l > 0)
                for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
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
    uint32_t        seed = t->tris[0];
    const double   *ns = bk_atlas_tri_n(g, seed);
    double          sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] }, *avg = t->avg;
    avg[0] = ns[0];
    avg[1] = ns[1];
    avg[2] = ns[2];
    for (uint32_t i = 1; i < limit; ++i) {
        uint32_t      u = t->tris[i];
        const double *nu = bk_atlas_tri_n(g, u);
        for (int k = 0; k < 3; ++k) sum[k] += nu[k] * g->area[u];
        double l = sqrt(bk_dot3d(sum, sum));
        if (l > 0)
            for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
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

/* The chart's vertices: cid[c] for each corner c (3 per place in t->tris), corners joined across
 * the chart's own edges (union-find), so a vertex where the chart touches itself only at a point
 * (two sectors of its fan) becomes two, free to part, instead of a hinge the two sectors fold
 * over. Returns the number of vertices. */
static uint32_t sm_vertices(const sm_ctx *x, const sm_try *t, sm_ws *ws)
{
    const bk_scene  *s = x->s;
    const adjacency *A = x->A;
    const uint32_t  *queue = t->tris;
    uint32_t         nt = t->nt, *uf = ws->uf, *cid = ws->cid;
    uint32_t         n = 0;
    for (uint32_t c = 0; c < 3 * nt; ++c) uf[c] = c;
    for (uint32_t i = 0; i < nt; ++i) {
        uint32_t tt = queue[i];
        for (uint32_t p = A->start[tt]; p < A->start[tt + 1]; ++p) {
            uint32_t u = A->adj[p];
            if (u < tt) continue;
            uint32_t j = hm_get(ws, u);
            if (j == BK_NONE || j >= nt) continue; /* not grown, or past the prefix sm_shrink kept */
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
        cid[c] = a == c ? n++ : cid[a]; /* roots are the smallest corner: seen first */
    }
    return n;
}

/* A curved chart unfolded by the least-squares conformal map from its projection (in t->loc), the
 * two vertices farthest apart along its x pinned: t->loc gets the map, scaled to the chart's
 * world area; triangles stretched past max_stretch are marked in ws->evict (*nstretch of them).
 * 1 when nothing flips and few enough stretch, else 0. */
static int sm_unfold(const sm_ctx *x, sm_try *t, sm_ws *ws, uint32_t n, uint32_t *nstretch_out)
{
    const bk_scene             *s = x->s;
    const tri_geom             *g = x->g;
    const bk_atlas_smooth_opts *so = x->so;
    const uint32_t             *queue = t->tris;
    uint32_t                    nt = t->nt, *cid = ws->cid, nstretch = 0;
    double                     *loc = t->loc;
    lscm_ws                    *W = &ws->W;
    int                         ok;
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
        uint32_t  tt = queue[i];
        lscm_tri *q = &W->tri[i];
        double    p0[3], p1[3], p2[3], e1[3], e2[3];
        bk_atlas_pos_of(s, tt, 0, p0);
        bk_atlas_pos_of(s, tt, 1, p1);
        bk_atlas_pos_of(s, tt, 2, p2);
        for (int k = 0; k < 3; ++k) {
            e1[k] = p1[k] - p0[k];
            e2[k] = p2[k] - p0[k];
        }
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
    struct timespec c0, c1;
    if (bk_atlas_lscm_profile) clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    int iters = 0;
    if (bk_atlas_lscm_solver && !W->direct) W->direct = bk_lscm_direct_new();
    if (bk_atlas_lscm_solver && W->direct) {
        int rd = bk_lscm_direct_solve(W->direct, W->tri, nt, n, W->pin, W->x);
        iters = rd ? -1 : 1;
    }
    if (iters < 0) { /* singular: the projection again, for the conjugate gradients */
        for (uint32_t i = 0; i < nt; ++i)
            for (int k = 0; k < 3; ++k) {
                uint32_t j = cid[3 * i + k];
                W->x[2 * (size_t)j] = loc[6 * (size_t)i + 2 * k];
                W->x[2 * (size_t)j + 1] = loc[6 * (size_t)i + 2 * k + 1];
            }
    }
    if (iters <= 0) iters = lscm_solve(W, nt, n, so->max_iter);
    if (bk_atlas_lscm_profile) {
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        bk_atlas_lscm_stats.solves++;
        bk_atlas_lscm_stats.iters += (uint64_t)iters;
        bk_atlas_lscm_stats.capped += iters >= so->max_iter;
        bk_atlas_lscm_stats.verts += n;
        bk_atlas_lscm_stats.ns += (uint64_t)((c1.tv_sec - c0.tv_sec) * 1000000000LL + (c1.tv_nsec - c0.tv_nsec));
    }
    t->work += (uint64_t)iters * nt;
    /* corners, orientation, area ratios */
    double areauv = 0;
    int    flips = 0;
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
            if (!(ratio <= so->max_stretch && ratio >= 1.0 / so->max_stretch)) {
                ws->evict[i] = 1;
                nstretch++;
            }
        }
        ok = (double)nstretch <= so->max_evict * nt;
        if (!ok) memset(ws->evict, 0, nt);
    }
    *nstretch_out = nstretch;
    return ok;
}

/* The chart's layout (t->loc) checked for overlaps: a few overlapping triangles (where the
 * chart's boundary comes back over itself, round a hole the cone left) leave, the later of each
 * pair whose earlier one stays, as the planar charts do, and so do the nstretch marked in
 * ws->evict; t->keep lists the others. 1 when few enough leave, 0 when too many (the chart is
 * grown smaller), -1 out of memory. */
static int sm_keep(sm_try *t, sm_ws *ws, uint32_t nstretch)
{
    uint32_t      nt = t->nt;
    const double *loc = t->loc;
    int           ok;
    if (6 * (size_t)nt > ws->xy_cap) {
        size_t  cap = 12 * (size_t)nt;
        double *p = realloc(ws->xy, sizeof(double) * cap);
        if (!p) return -1;
        ws->xy = p;
        ws->xy_cap = cap;
    }
    double *xy = ws->xy, lo[2] = { DBL_MAX, DBL_MAX }, hi[2] = { -DBL_MAX, -DBL_MAX };
    for (uint32_t i = 0; i < nt; ++i) {
        memcpy(xy + 6 * (size_t)i, loc + 6 * (size_t)i, 6 * sizeof(double));
        for (int k = 0; k < 3; ++k)
            for (int d = 0; d < 2; ++d) {
                lo[d] = bk_dmin(lo[d], xy[6 * i + 2 * k + d]);
                hi[d] = bk_dmax(hi[d], xy[6 * i + 2 * k + d]);
            }
    }
    ws->pairs.n = 0;
    if (bk_atlas_find_overlaps(xy, nt, 1e-9 * (hi[0] - lo[0] + hi[1] - lo[1]), &ws->pairs, &t->work)) return -1;
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
    return ok;
}

/* Unfolds and checks a grown chart: t->ok, t->keep, t->w, t->h, t->loc; its triangles are those
 * of ws's map placed before nt; it writes nothing shared, so charts of one batch run side by side. */
static void sm_check(const sm_ctx *x, sm_try *t, sm_ws *ws)
{
    const bk_scene             *s = x->s;
    const bk_atlas_smooth_opts *so = x->so;
    uint32_t                   *queue = t->tris, nt = t->nt;
    double                     *loc = t->loc;
    lscm_ws                    *W = &ws->W;
    int                         curved = t->curved;
    uint32_t                    nstretch = 0; /* triangles ws->evict holds for their stretch */
    t->work = 0;
    t->err = 0;
    /* a flat region larger than the cap is the planar charts' (they grow it whole) */
    int ok = nt >= so->min_tris && (curved || nt < t->limit);
    t->ok = 0;
    if (!ok) return;
    /* the start (and the map of a flat chart), turned to its rectangle: the pins below go to the
     * ends of its long side */
    sm_project(s, t->avg, queue, nt, loc);
    if (bk_atlas_fit_rect(loc, x->iota, nt, &t->w, &t->h, &ws->pts, &ws->pts_cap)) {
        t->err = 1;
        return;
    }
    uint32_t n = sm_vertices(x, t, ws);
    if (lscm_reserve(W, nt, n)) {
        t->err = 1;
        return;
    }
    if (curved) ok = sm_unfold(x, t, ws, n, &nstretch);
    /* planar: the projection, checked for overlaps here */
    t->nkeep = 0;
    if (ok) {
        ok = sm_keep(t, ws, nstretch);
        if (ok < 0) {
            t->err = 1;
            return;
        }
    }
    if (ok && bk_atlas_fit_rect(loc, t->keep, t->nkeep, &t->w, &t->h, &ws->pts, &ws->pts_cap)) {
        t->err = 1;
        return;
    }
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
    sm_ws  *ws = &x->ws[worker];
    for (size_t i = begin; i < end; ++i) {
        sm_grow(x, ws, &x->tries[x->regrow ? x->regrow[i] : i]);
        hm_clear(ws);
    }
}

/* The batch's charts (their growth final) checked side by side. */
static void sm_check_fn(void *ctx, size_t begin, size_t end, int worker)
{
    sm_ctx *x = ctx;
    sm_ws  *ws = &x->ws[worker];
    for (size_t i = begin; i < end; ++i) {
        sm_try        *t = x->task[x->order[i].idx];
        const uint32_t slot = x->slot[x->order[i].idx], first = slot == BK_NONE ? 0 : slot - slot % (SM_LEVELS + 1);
        /* a later level is not checked once an earlier one was kept: the chain ends there */
        int needed = 1;
        for (uint32_t j = first; slot != BK_NONE && j < slot && needed; ++j) needed = atomic_load(&x->lstate[j]) != 2;
        if (!needed) continue;
        /* the growth's places (a level's check skips those past its prefix) */
        for (uint32_t j = 0; j < t->nt0; ++j) hm_put(ws, t->tris[j], j);
        if (slot == BK_NONE) sm_check_chain(x, t, ws);
        else {
            sm_check(x, t, ws);
            t->levels = 1;
        }
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
#define SM_SPEC_THREADS  8   /* fewer threads: every check counts, no level checked for nothing */
#define SM_SPEC_MIN_TRIS 256 /* smaller charts' chains are short */

static uint32_t sm_spec_plan(const sm_ctx *x, sm_try *t, sm_try *lv, uint32_t max_levels, uint32_t *arena_u,
                             double *arena_d)
{
    uint32_t      n = 0, used = 0;
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
    uint64_t      work = t->work;
    uint32_t      levels = 1;
    const sm_try *end = t;
    for (uint32_t k = 0; k < n && !end->ok && !end->err; ++k) {
        BK_CHECK(atomic_load(&lstate[k + 1]) != 0); /* every level the chain needs was checked */
        end = &lv[k];
        work += end->work;
        levels++;
    }
    if (end != t) {
        t->nt = end->nt;
        t->limit = end->limit;
        t->curved = end->curved;
        memcpy(t->avg, end->avg, sizeof t->avg);
        t->w = end->w;
        t->h = end->h;
        t->ok = end->ok;
        t->err = end->err;
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
    uint32_t     *nlv;
    sm_try       *lv; /* NULL: no speculation */
    uint32_t     *arena_u;
    double       *arena_d;
    uint32_t      M;
    const sm_try *memo; /* the checked tries the last batch let go */
    uint32_t      nmemo;
    uint32_t     *hit; /* per try: its memo, or BK_NONE */
} sm_plan_ctx;

static uint32_t sm_memo_find(const sm_plan_ctx *p, const sm_try *t)
{
    for (uint32_t j = 0; j < p->nmemo; ++j) {
        const sm_try *m = &p->memo[j];
        if (m->seed == t->seed && m->nt0 == t->nt && m->limit0 == t->limit &&
            !memcmp(m->tris, t->tris, sizeof(uint32_t) * t->nt))
            return j;
    }
    return BK_NONE;
}

static void sm_plan_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sm_plan_ctx          *p = ctx;
    const bk_atlas_smooth_opts *so = p->x->so;
    for (size_t k = begin; k < end; ++k) {
        sm_try *t = &p->x->tries[k];
        p->nlv[k] = 0;
        p->hit[k] = BK_NONE;
        if (t->skip) continue;
        t->nt0 = t->nt;
        t->limit0 = t->limit;
        if ((p->hit[k] = sm_memo_find(p, t)) != BK_NONE) continue;
        int ok0 = t->nt >= so->min_tris && (t->curved || t->nt < t->limit); /* as sm_check decides */
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
    d.tris = dst->tris;
    d.keep = dst->keep;
    d.loc = dst->loc;
    d.front = dst->front;
    d.nfront = dst->nfront;
    d.skip = dst->skip;
    if (with_tris) memcpy(d.tris, src->tris, sizeof(uint32_t) * src->nt0);
    memcpy(d.keep, src->keep, sizeof(uint32_t) * src->nkeep);
    memcpy(d.loc, src->loc, sizeof(double) * 6 * src->nt);
    *dst = d;
}

typedef struct sm_memo_ctx {
    sm_try         *tries, *memo;
    const uint32_t *hit;
    uint32_t        first;
    double         *loc;
} sm_memo_ctx;

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
            for (uint32_t j = 0; j < t->nt; ++j)
                memcpy(c->loc + 6 * (size_t)t->tris[j], t->loc + 6 * (size_t)j, 6 * sizeof(double));
    }
}

/* memo slot j from the let-go try first + j (skipped and failed ones are NULL-seeded) */
static void sm_save_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const sm_memo_ctx *c = ctx;
    for (size_t j = begin; j < end; ++j) {
        const sm_try *t = &c->tries[c->first + j];
        if (t->skip || t->err) {
            c->memo[j].seed = BK_NONE;
            continue;
        }
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
    const adjacency        *A = x->A;
    const _Atomic uint32_t *oa = x->own[x->oslot_prev], *ob = x->own[x->oslot];
    const uint32_t          a = x->snap_prev, b = x->snap, k = t->k;
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
    sm_ctx           *x = ctx;
    _Atomic uint32_t *own = x->own[x->oslot];
    const uint32_t    lo = x->snap << SM_OWN_K_BITS;
    for (size_t k = begin; k < end; ++k) {
        const sm_try *t = &x->tries[k];
        if (t->skip) continue;
        const uint32_t v = lo | (uint32_t)k;
        for (uint32_t i = 0; i < t->nt; ++i) {
            _Atomic uint32_t *o = &own[t->tris[i]];
            uint32_t          cur = atomic_load_explicit(o, memory_order_relaxed);
            while (cur - lo > v - lo &&
                   !atomic_compare_exchange_weak_explicit(o, &cur, v, memory_order_relaxed, memory_order_relaxed)) {}
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
        int     skip = sm_owned(x->own[x->oslot], x->snap, t->seed, k);
        if (skip == t->skip) continue;
        changed = 1;
        if (!skip) t->stale = 1;
        t->skip = skip;
    }
    return changed;
}

/* Needles (height under 1/1000 of the longest edge) have normals of float noise: the planar
 * charts take them, as whole fans and strips (tried set for them). */
typedef struct needle_ctx {
    const bk_scene *s;
    const tri_geom *g;
    uint8_t        *tried;
} needle_ctx;

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

/* Each worker's scratch for charts of up to M triangles (a growth map of H slots). 0, or -1 out
 * of memory (sm_ws_free releases what was allocated). */
static int sm_ws_init(sm_ws *ws, int threads, uint32_t M, uint32_t H, uint32_t hshift)
{
    for (int w = 0; w < threads; ++w) {
        ws[w].uf = malloc(sizeof(uint32_t) * 3 * (size_t)M);
        ws[w].cid = malloc(sizeof(uint32_t) * 3 * (size_t)M);
        ws[w].evict = calloc(M, 1);
        ws[w].hkey = malloc(sizeof(uint32_t) * H);
        ws[w].hval = malloc(sizeof(uint32_t) * H);
        ws[w].hused = malloc(sizeof(uint32_t) * M);
        ws[w].hmask = H - 1;
        ws[w].hshift = hshift;
        if (!ws[w].uf || !ws[w].cid || !ws[w].evict || !ws[w].hkey || !ws[w].hval || !ws[w].hused) return -1;
        memset(ws[w].hkey, 0xFF, sizeof(uint32_t) * H);
    }
    return 0;
}

static void sm_ws_free(sm_ws *ws, int threads)
{
    for (int w = 0; ws && w < threads; ++w) {
        lscm_free(&ws[w].W);
        free(ws[w].uf);
        free(ws[w].cid);
        free(ws[w].evict);
        free(ws[w].hkey);
        free(ws[w].hval);
        free(ws[w].hused);
        free(ws[w].xy);
        free(ws[w].pts);
        free(ws[w].pairs.p);
    }
}

/* A batch: the next free seeds from seeds[si] on, up to K, as tries at the full limit; at[k] gets
 * try k's seed index and *sj_out the seed index the scan stopped at. Returns the tries made. */
static uint32_t sm_batch_seeds(const sm_ctx *x, const uint32_t *seeds, uint32_t nseeds, uint32_t si, uint32_t K,
                               uint32_t *at, uint32_t *sj_out)
{
    uint32_t nb = 0, sj = si;
    for (; sj < nseeds && nb < K; ++sj) {
        uint32_t seed = seeds[sj];
        if (x->C->tri_chart[seed] != BK_NONE || x->tried[seed]) continue;
        x->tries[nb].seed = seed;
        x->tries[nb].limit = x->so->max_tris;
        x->tries[nb].k = nb;
        x->tries[nb].skip = 0;
        x->tries[nb].stale = 0;
        at[nb] = sj;
        nb++;
    }
    *sj_out = sj;
    return nb;
}

/* A batch of nb tries (of at most K) grown as one at a time would grow them: over snapshots of
 * who owns what, again where stale, to the fixed point (below). *snap_id is the last snapshot id
 * taken. */
static void sm_grow_batch(sm_ctx *x, uint32_t nb, uint32_t K, uint32_t T, uint32_t *regrow, uint32_t *snap_id)
{
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
    if (*snap_id > SM_OWN_ID_MAX - (K + 2) * (K + 2)) {
        memset((void *)x->own[0], 0, 3 * ((size_t)T + 1) * sizeof(_Atomic uint32_t));
        *snap_id = 0;
    }
    x->oslot = 0;
    x->snap = ++*snap_id;
    x->regrow = NULL;
    bk_parallel_for(nb, 1, sm_grow_fn, x);
    for (;;) {
        x->oslot_prev = x->oslot;
        x->snap_prev = x->snap;
        x->oslot = (x->oslot_prev + 1) % 3;
        for (;;) {
            x->snap = ++*snap_id;
            bk_parallel_for(nb, 1, sm_claim_fn, x);
            if (!sm_skips(x, nb)) break;
            x->oslot = x->oslot == (x->oslot_prev + 1) % 3 ? (x->oslot_prev + 2) % 3 : (x->oslot_prev + 1) % 3;
        }
        bk_parallel_for(nb, 4, sm_stale_fn, x);
        uint32_t nre = 0;
        for (uint32_t k = 0; k < nb; ++k)
            if (!x->tries[k].skip && x->tries[k].stale) {
                regrow[nre++] = k;
                x->tries[k].stale = 0;
            }
        if (!nre) break;
        x->regrow = regrow;
        bk_parallel_for(nre, 1, sm_grow_fn, x);
        x->regrow = NULL;
    }
}

/* The batch's checks: planned (sm_plan_fn: results the last batch saved, speculation's levels),
 * run side by side, and each try's levels taken. */
static void sm_check_batch(sm_ctx *x, sm_plan_ctx *pc, uint32_t nb, key_idx *ok_keys, uint32_t *slot)
{
    sm_try          *tries = x->tries, **task = x->task, *lv = pc->lv;
    const uint32_t  *nlv = pc->nlv, *hit = pc->hit;
    _Atomic uint8_t *lstate = x->lstate;
    /* the checks, largest first (their cost grows with the triangles), so that the batch's
     * longest does not start last: dragon_vrip's batches of 32 on 16 threads, simulated from
     * one-thread times, 0.59 -> 0.52 s */
    uint32_t ntask = 0;
    bk_parallel_for(nb, 1, sm_plan_fn, pc);
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
    bk_parallel_for(ntask, 1, sm_check_fn, x);
    for (uint32_t k = 0; k < nb; ++k)
        if (nlv[k]) sm_spec_take(&tries[k], lv + (size_t)SM_LEVELS * k, nlv[k], lstate + k * (SM_LEVELS + 1));
}

/* each try's and memo's lists, in their slices of the shared buffers */
static void sm_bind_tries(sm_try *tries, sm_try *memo, uint32_t *tbuf, double *lbuf, uint32_t *mbuf_u, double *mbuf_d,
                          uint32_t M, uint32_t K)
{
    for (uint32_t k = 0; k < K; ++k) {
        tries[k].tris = tbuf + 6 * (size_t)M * k;
        tries[k].keep = tries[k].tris + M;
        tries[k].front = tries[k].keep + M;
        tries[k].loc = lbuf + 6 * (size_t)M * k;
        memo[k].tris = mbuf_u + 2 * (size_t)M * k;
        memo[k].keep = memo[k].tris + M;
        memo[k].loc = mbuf_d + 6 * (size_t)M * k;
    }
}

/* the batch's checked tries taken in seed order, up to the first that an earlier one's freed
 * triangles may change (*kc: it, or nb; *si: where the next batch starts); -1 on error */
static int sm_take_batch(sm_ctx *x, const adjacency *A, const charting *C, sm_try *tries, uint32_t nb,
                         const uint32_t *at, const uint32_t *spos, uint8_t *tried, uint8_t *freed, uint32_t *freed_list,
                         uint32_t *ntris, uint64_t *work, uint32_t *si, uint32_t *kc_out)
{
    uint32_t nfreed = 0, min_freed = UINT32_MAX, kc = nb;
    for (uint32_t k = 0; k < nb; ++k) {
        sm_try *t = &tries[k];
        if (t->skip) continue;
        if (t->err) return -1;
        if (min_freed < at[k] || (nfreed && sm_touches(A, t, freed))) {
            kc = k;
            /* a chart grown beside triangles an earlier one freed, or after a freed seed:
             * it and the batch's later charts are let go; the next batch starts at it (the
             * seeds before it that the batch skipped were taken before the batch) or at the
             * freed seed */
            *si = at[k] < min_freed ? at[k] : min_freed;
            break;
        }
        int r = sm_take(x, t, tried, ntris, work);
        if (r < 0) return -1;
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
    if (min_freed < *si) *si = min_freed; /* a freed seed after the batch's last chart */
    for (uint32_t i = 0; i < nfreed; ++i) freed[freed_list[i]] = 0;
    *kc_out = kc;
    return 0;
}

int bk_atlas_charts_smooth(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld,
                           const bk_atlas_smooth_opts *so, charting *C, uint64_t *work)
{
    uint32_t T = s->tri_count;
    bk_atlas_charting_alloc(C, T);
    int      threads = bk_pool_threads();
    uint32_t K = threads > 1 ? (uint32_t)(2 * threads) : 1, M = so->max_tris + 1, H = 16, hshift = 28;
    if (K > 256) K = 256;
    while (H < 4 * M) {
        H <<= 1;
        hshift--;
    }
    uint32_t         *seeds = malloc(sizeof(uint32_t) * (size_t)T + 1);
    _Atomic uint32_t *own = calloc(3 * ((size_t)T + 1), sizeof(_Atomic uint32_t)); /* id 0: never a snapshot's */
    uint32_t         *regrow = malloc(sizeof(uint32_t) * K), snap_id = 0;
    uint8_t          *tried = calloc((size_t)T + 1, 1);
    key_idx          *kt = malloc(sizeof(key_idx) * (size_t)T + 1);
    sm_ws            *ws = calloc((size_t)threads, sizeof(sm_ws));
    sm_try           *tries = calloc(K, sizeof(sm_try));
    uint32_t         *tbuf = malloc(sizeof(uint32_t) * 6 * (size_t)M * K), *iota = malloc(sizeof(uint32_t) * M);
    double           *lbuf = malloc(sizeof(double) * 6 * (size_t)M * K);
    uint32_t *spos = malloc(sizeof(uint32_t) * (size_t)T + 1), *freed_list = malloc(sizeof(uint32_t) * (size_t)M * K);
    uint8_t  *freed = calloc((size_t)T + 1, 1);
    /* speculation's levels: per try up to SM_LEVELS and an arena (sm_spec_plan) */
    const int spec = threads >= SM_SPEC_THREADS && bk_atlas_spec;
    uint32_t  ntask_cap = K * (spec ? SM_LEVELS + 1 : 1);
    sm_try  **task = malloc(sizeof(sm_try *) * ntask_cap), *lv = spec ? malloc(sizeof(sm_try) * K * SM_LEVELS) : NULL;
    uint32_t *nlv = calloc(K, sizeof(uint32_t)), *arena_u = spec ? malloc(sizeof(uint32_t) * (size_t)M * K) : NULL;
    double   *arena_d = spec ? malloc(sizeof(double) * 6 * (size_t)M * K) : NULL;
    uint32_t *slot = malloc(sizeof(uint32_t) * ntask_cap);
    _Atomic uint8_t *lstate = spec ? malloc(sizeof(_Atomic uint8_t) * K * (SM_LEVELS + 1)) : NULL;
    key_idx         *ok_keys = malloc(sizeof(key_idx) * ntask_cap);
    sm_try          *memo = calloc(K, sizeof(sm_try));
    uint32_t *mbuf_u = malloc(sizeof(uint32_t) * 2 * (size_t)M * K), *hit = malloc(sizeof(uint32_t) * K), nmemo = 0;
    double   *mbuf_d = malloc(sizeof(double) * 6 * (size_t)M * K);
    int       rc = -1;
    if (!C->tri_chart || !C->chart_tris || !C->loc || !seeds || !own || !regrow || !tried || !kt || !ws || !tries ||
        !tbuf || !iota || !lbuf || !spos || !freed_list || !freed || !task || !nlv || !slot || !ok_keys ||
        (spec && (!lv || !arena_u || !arena_d || !lstate)) || !memo || !mbuf_u || !hit || !mbuf_d)
        goto done;
    if (sm_ws_init(ws, threads, M, H, hshift)) goto done;
    for (uint32_t i = 0; i < M; ++i) iota[i] = i;
    sm_bind_tries(tries, memo, tbuf, lbuf, mbuf_u, mbuf_d, M, K);
    uint32_t nseeds = 0, ntris = 0;
    for (uint32_t t = 0; t < T; ++t) {
        C->tri_chart[t] = BK_NONE;
        if (!g->degen[t]) seeds[nseeds++] = t;
    }
    needle_ctx nc = { s, g, tried };
    bk_parallel_for(T, 16384, needle_fn, &nc);
    bk_atlas_sort_by_area_desc(seeds, nseeds, g->area, kt);
    for (uint32_t i = 0; i < nseeds; ++i) spos[seeds[i]] = i;
    sm_ctx x = { s,    g,       A,    weld,  so,   C,    tried, { own, own + (size_t)T + 1, own + 2 * ((size_t)T + 1) },
                 0,    0,       0,    0,     NULL, iota, ws,    tries,
                 task, ok_keys, slot, lstate };
    if (so->max_tris < so->min_tris) nseeds = 0;
    for (uint32_t si = 0; si < nseeds;) {
        /* a batch: the next free seeds, each grown at the full limit as one at a time would grow
         * it if every earlier chart of the batch is kept whole (side by side over the triangles
         * free now; again, in order, where that growth met an earlier chart's), then checked side
         * by side, then taken in seed order */
        uint32_t sj, *at = (uint32_t *)kt; /* kt's room: seed index of each try */
        uint32_t nb = sm_batch_seeds(&x, seeds, nseeds, si, K, at, &sj);
        if (!nb) break;
        sm_grow_batch(&x, nb, K, T, regrow, &snap_id);
        sm_plan_ctx pc = { &x, nlv, spec ? lv : NULL, arena_u, arena_d, M, memo, nmemo, hit };
        sm_check_batch(&x, &pc, nb, ok_keys, slot);
        sm_memo_ctx mc = { tries, memo, hit, 0, C->loc };
        bk_parallel_for(nb, 1, sm_corners_fn, &mc);
        si = sj;
        uint32_t kc;
        if (sm_take_batch(&x, A, C, tries, nb, at, spos, tried, freed, freed_list, &ntris, work, &si, &kc)) goto done;
        /* the charts let go, checked, for the next batch */
        mc.first = kc;
        nmemo = nb - kc;
        bk_parallel_for(nmemo, 1, sm_save_fn, &mc);
    }
    rc = 0;
done:
    sm_ws_free(ws, threads);
    free(ws);
    free(tries);
    free(tbuf);
    free(iota);
    free(lbuf);
    free(spos);
    free(freed_list);
    free(freed);
    free(seeds);
    free((void *)own);
    free(regrow);
    free(tried);
    free(kt);
    free(task);
    free(lv);
    free(nlv);
    free(arena_u);
    free(arena_d);
    free(slot);
    free((void *)lstate);
    free(ok_keys);
    free(memo);
    free(mbuf_u);
    free(hit);
    free(mbuf_d);
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
#define JOIN_TRIES        3
#define JOIN_SPEC_THREADS 4
#define JOIN_SPEC_WINDOW  2

typedef struct join_ws { /* one look's scratch */
    sm_ws     ws;
    sm_try    t;     /* the union of the last neighbour tried */
    uint32_t  looks; /* looks made with this scratch */
    uint32_t *stamp; /* per chart: the look that last measured its seam with the candidate */
    double   *len;   /* per chart: that seam's world length (-1: tried) */
} join_ws;

typedef struct join_state {
    const bk_scene  *s;
    const tri_geom  *g;
    const adjacency *A;
    const uint32_t  *weld;
    const float     *tri_scale;
    const charting  *C;
    const uint32_t  *head, *next, *cnt; /* the charts' triangle lists and counts */
    uint32_t         max_tris;
    double           pad_w;
    sm_ctx           x;
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
    if (!W->ws.uf || !W->ws.cid || !W->ws.evict || !W->ws.hkey || !W->ws.hval || !W->ws.hused || !W->t.tris ||
        !W->t.keep || !W->t.loc || !W->stamp || !W->len)
        return -1;
    memset(W->ws.hkey, 0xFF, sizeof(uint32_t) * H);
    for (uint32_t ci = 0; ci < n; ++ci) W->stamp[ci] = BK_NONE;
    return 0;
}

static void join_ws_free(join_ws *W)
{
    sm_ws *ws = &W->ws;
    lscm_free(&ws->W);
    free(ws->uf);
    free(ws->cid);
    free(ws->evict);
    free(ws->hkey);
    free(ws->hval);
    free(ws->hused);
    free(ws->xy);
    free(ws->pts);
    free(ws->pairs.p);
    free(W->t.tris);
    free(W->t.keep);
    free(W->t.loc);
    free(W->stamp);
    free(W->len);
}

/* Chart a's look: the neighbour b it joins (*out_b, BK_NONE: none), with the union's layout in
 * W->t (a's triangles, then b's, in list order); 0, or -1 out of memory. */
static int join_eval(const join_state *J, uint32_t a, join_ws *W, uint32_t *out_b, uint64_t *work)
{
    const uint32_t   look = W->looks++; /* stamps start at BK_NONE */
    const adjacency *A = J->A;
    const charting  *C = J->C;
    const uint32_t  *head = J->head, *next = J->next, *cnt = J->cnt;
    uint32_t        *stamp = W->stamp;
    double          *len = W->len;
    sm_try          *t = &W->t;
    *out_b = BK_NONE;
    /* the seam (world length) shared with each neighbour small enough */
    for (uint32_t v = head[a]; v != BK_NONE; v = next[v])
        for (uint32_t p = A->start[v]; p < A->start[v + 1]; ++p) {
            uint32_t u = A->adj[p], c = C->tri_chart[u];
            int      kv, ku;
            if (c == a || c == BK_NONE || !cnt[c] || cnt[a] + cnt[c] > J->max_tris ||
                bk_atlas_shared_edge(J->s, J->weld, v, u, &kv, &ku))
                continue;
            double p0[3], p1[3], e[3];
            bk_atlas_pos_of(J->s, v, kv, p0);
            bk_atlas_pos_of(J->s, v, (kv + 1) % 3, p1);
            for (int q = 0; q < 3; ++q) e[q] = p1[q] - p0[q];
            if (stamp[c] != look) {
                stamp[c] = look;
                len[c] = 0;
            }
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
        double   sum[3] = { 0, 0, 0 };
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
        double       f = J->tri_scale ? J->tri_scale[t->tris[0]] : 1.0, pad_w = J->pad_w;
        const chart *ca = &C->charts[a], *cb = &C->charts[b];
        double       gain = (ca->w + pad_w) * (ca->h + pad_w) + (cb->w + pad_w) * (cb->h + pad_w) -
                      (f * t->w + pad_w) * (f * t->h + pad_w);
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
    join_ws          *W;       /* per worker */
    const key_idx    *order;   /* the candidates */
    uint32_t          first;   /* the looks made are of candidates first + chunk range */
    uint32_t          now;     /* joins so far: the looks' time */
    uint32_t         *time;    /* per candidate: the joins made before its look */
    const uint32_t   *changed; /* per chart: the joins made when it last changed */
    int8_t           *res;     /* per candidate: join_eval's return */
    uint32_t         *b;       /* per candidate: the neighbour it joins, or BK_NONE */
    uint64_t         *work;    /* per candidate: its overlap work */
    double           *wh;      /* per candidate: the union's rectangle (2) and mean normal (3) */
    double          **loc;     /* per candidate that joins: the union's layout, 6 per triangle */
} join_spec;

static void join_spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const join_spec *x = ctx;
    join_ws         *W = &x->W[worker];
    for (size_t k = begin; k < end; ++k) {
        size_t oi = x->first + k;
        if (x->res[oi] >= 0 && join_stands(x->J, x->changed, x->order[oi].idx, x->time[oi]))
            continue; /* still stands */
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
        if ((x->loc[oi] = malloc(sizeof(double) * 6 * (size_t)t->nt)))
            memcpy(x->loc[oi], t->loc, sizeof(double) * 6 * (size_t)t->nt);
        else x->res[oi] = -1; /* looked at again in the loop */
    }
}

/* each chart's triangle list, and the smooth charts worth joining (their ring is large enough)
 * into order; their count */
static uint32_t join_link_order(charting *C, uint32_t n, uint32_t max_tris, double min_ring, double pad_w,
                                uint32_t *head, uint32_t *tail, uint32_t *cnt, uint32_t *next, key_idx *order)
{
    uint32_t nsm = 0;
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, ci, head, tail, cnt, next, NULL);
        if (!c->smooth || c->count >= max_tris) continue;
        if (c->w * c->h > (1.0 - min_ring) * (c->w + pad_w) * (c->h + pad_w)) continue; /* little ring to save */
        order[nsm].key = c->count;
        order[nsm].idx = ci;
        nsm++;
    }
    return nsm;
}

/* the join made: b's triangles onto a's list at the union's layout uloc, rectangle and normal wh */
static void join_take(charting *C, const float *tri_scale, uint32_t *head, uint32_t *next, uint32_t *tail,
                      uint32_t *cnt, uint32_t *changed, uint32_t *now, uint32_t a, uint32_t b, const double *uloc,
                      const double *wh)
{
    /* a takes b: the union's layout, a's triangles then b's */
    double   f = tri_scale ? tri_scale[head[a]] : 1.0;
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
    changed[a] = changed[b] = ++*now;
}

int bk_atlas_charts_join(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld,
                         const float *tri_scale, const bk_atlas_smooth_opts *so, uint32_t max_tris, double min_ring,
                         double pad_w, charting *C, uint64_t *work)
{
    uint32_t T = s->tri_count, n = C->count, M = max_tris + 1, H = 16, hshift = 28;
    while (H < 4 * M) {
        H <<= 1;
        hshift--;
    }
    int       threads = bk_pool_threads();
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1)), *head = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *iota = malloc(sizeof(uint32_t) * M);
    uint32_t *changed = calloc((size_t)n + 1, sizeof(uint32_t)),
             now = 0; /* per chart: the joins made when it last changed */
    key_idx  *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    join_ws  *W = calloc((size_t)threads, sizeof(join_ws));
    join_spec sp = { NULL,
                     W,
                     order,
                     0,
                     0,
                     malloc(sizeof(uint32_t) * ((size_t)n + 1)),
                     changed,
                     malloc((size_t)n + 1),
                     malloc(sizeof(uint32_t) * ((size_t)n + 1)),
                     malloc(sizeof(uint64_t) * ((size_t)n + 1)),
                     malloc(sizeof(double) * 5 * ((size_t)n + 1)),
                     calloc((size_t)n + 1, sizeof(double *)) };
    uint32_t  nsm = 0;
    int       rc = -1;
    if (!next || !head || !tail || !cnt || !iota || !changed || !order || !W || !sp.time || !sp.res || !sp.b ||
        !sp.work || !sp.wh || !sp.loc)
        goto done;
    for (int w = 0; w < threads; ++w)
        if (join_ws_init(&W[w], n, M, H, hshift)) goto done;
    for (uint32_t i = 0; i < M; ++i) iota[i] = i;
    nsm = join_link_order(C, n, max_tris, min_ring, pad_w, head, tail, cnt, next, order);
    bk_key_idx_sort(order, nsm);
    join_state J = { s, g, A, weld, tri_scale, C, head, next, cnt, max_tris, pad_w, { 0 } };
    J.x.s = s;
    J.x.g = g;
    J.x.A = A;
    J.x.weld = weld;
    J.x.so = so;
    J.x.C = C;
    J.x.iota = iota;
    sp.J = &J;
    const int spec = threads >= JOIN_SPEC_THREADS && bk_atlas_spec;
    memset(sp.res, 0xFF, nsm); /* no look yet */
    if (spec) bk_parallel_for(nsm, 2, join_spec_fn, &sp);
    for (uint32_t oi = 0; oi < nsm; ++oi) {
        uint32_t a = order[oi].idx, b = BK_NONE;
        if (!cnt[a]) continue;
        /* a stale look (or none): this one and the next ones again, on the charts as they are */
        int stands = sp.res[oi] >= 0 && join_stands(&J, changed, a, sp.time[oi]);
        if (!stands && spec) {
            sp.first = oi;
            sp.now = now;
            uint32_t m =
                nsm - oi < JOIN_SPEC_WINDOW * (uint32_t)threads ? nsm - oi : JOIN_SPEC_WINDOW * (uint32_t)threads;
            bk_parallel_for(m, 1, join_spec_fn, &sp);
            stands = sp.res[oi] >= 0;
        }
        const double *uloc, *wh;
        double        wh_loop[5];
        if (stands) {
            *work += sp.work[oi];
            b = sp.b[oi];
            uloc = sp.loc[oi];
            wh = sp.wh + 5 * (size_t)oi;
        } else {
            if (join_eval(&J, a, &W[0], &b, work)) goto done;
            const sm_try *t = &W[0].t;
            uloc = t->loc;
            wh_loop[0] = t->w;
            wh_loop[1] = t->h;
            for (int q = 0; q < 3; ++q) wh_loop[2 + q] = t->avg[q];
            wh = wh_loop;
        }
        if (b == BK_NONE) continue;
        join_take(C, tri_scale, head, next, tail, cnt, changed, &now, a, b, uloc, wh);
    }
    if (bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL) == BK_NONE) goto done;
    rc = 0;
done:
    for (int w = 0; W && w < threads; ++w) join_ws_free(&W[w]);
    if (sp.loc)
        for (uint32_t oi = 0; oi < nsm; ++oi) free(sp.loc[oi]);
    free(W);
    free(sp.time);
    free(sp.res);
    free(sp.b);
    free(sp.work);
    free(sp.wh);
    free(sp.loc);
    free(next);
    free(head);
    free(tail);
    free(cnt);
    free(iota);
    free(changed);
    free(order);
    return rc;
}
