/* atlas_merge.c - neighbouring charts merged by unfolding: one chart's layout rotated about the
 * shared edge into the other's plane, kept when the union's padded rectangle costs less than
 * the two apart and nothing overlaps (a small box's six faces become one cross).
 *
 * Pipeline: split charts (atlas_split.c) -> bk_atlas_charts_merge -> tidy and absorb
 * (atlas_refine.c). Every triangle keeps its projection, so its texel density.
 */
#include "atlas_internal.h"
#include "pool.h"
#include "util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Merging neighbouring charts by unfolding. A chart's layout is rotated about the edge it shares
 * with a neighbour into the neighbour's plane, like a box's faces laid out as a cross: every
 * triangle keeps its own projection (so its texel density), the shared edge stays continuous.
 * Worth it where the padding dominates (thousands of small boxes' faces in a 1024 atlas) or where
 * strips line up end to end. A merge is kept when the shared edge has the same length in both
 * layouts, nothing overlaps, and the union's rectangle grown by the padding costs less than the
 * two apart. Smallest charts first; each keeps merging while that pays. */
typedef struct hull_set {
    bk_hpt **p;
    int     *n;
} hull_set;

/* The convex hull of a chart's corners (linked list from head) into hs slot ci. */
static int hull_of_chart(const charting *C, const uint32_t *next, uint32_t head, uint32_t count, hull_set *hs,
                         uint32_t ci, bk_hpt **tmp, size_t *tmp_cap)
{
    size_t np = 3 * (size_t)count;
    if (np > *tmp_cap) {
        bk_hpt *p = realloc(*tmp, sizeof(bk_hpt) * np);
        if (!p) return -1;
        *tmp = p;
        *tmp_cap = np;
    }
    size_t k = 0;
    for (uint32_t x = head; x != BK_NONE; x = next[x])
        for (int j = 0; j < 3; ++j) {
            (*tmp)[k].x = C->loc[6 * (size_t)x + 2 * j];
            (*tmp)[k].y = C->loc[6 * (size_t)x + 2 * j + 1];
            k++;
        }
    bk_hpt *h = realloc(hs->p[ci], sizeof(bk_hpt) * (2 * k + 1));
    if (!h) return -1;
    hs->p[ci] = h;
    hs->n[ci] = bk_atlas_convex_hull(*tmp, (int)k, h);
    return 0;
}

typedef struct hull_ctx {
    const charting *C;
    const uint32_t *next, *head;
    hull_set       *hs;
    bk_hpt        **tmp;
    size_t         *cap;
    _Atomic int     err;
} hull_ctx;

static void hull_fn(void *ctx, size_t begin, size_t end, int worker)
{
    hull_ctx *h = ctx;
    for (size_t ci = begin; ci < end; ++ci)
        if (hull_of_chart(h->C, h->next, h->head[ci], h->C->charts[ci].count, h->hs, (uint32_t)ci, &h->tmp[worker],
                          &h->cap[worker]))
            h->err = 1;
}

typedef struct merge_cand {
    double   gain;
    uint32_t b, t, u;
    double   cs, sn, max, may, mbx, mby;
} merge_cand;
static int cand_cmp(const void *pa, const void *pb)
{
    const merge_cand *a = pa, *b = pb;
    if (a->gain != b->gain) return a->gain > b->gain ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}


/* What a merge reads, and one thread's scratch for looking at one chart's merges. */
typedef struct merge_state {
    const bk_scene  *s;
    const uint32_t  *weld;
    const adjacency *A;
    const charting  *C;
    double           pad_w;
    const uint32_t  *head, *next;
    const uint8_t   *dead;
    const hull_set  *hs;
} merge_state;

typedef struct merge_scratch {
    uint32_t       *stamp, visit; /* per chart: the look that met it last */
    merge_cand     *cand;         /* charts + 1 */
    bk_hpt         *hp;
    size_t          hp_cap;
    double         *tl;       /* the union's corners: 6 per triangle */
    uint32_t       *ids, cap; /* its triangles; room for cap */
    overlap_scratch ovs;
    uint32_t       *seen, nseen, seen_cap; /* the charts the look met (when seen_cap is not 0) */
} merge_scratch;

static void merge_scratch_free(merge_scratch *S)
{
    free(S->stamp);
    free(S->cand);
    free(S->hp);
    free(S->tl);
    free(S->ids);
    free(S->seen);
    bk_atlas_overlap_scratch_free(&S->ovs);
    memset(S, 0, sizeof *S);
}

/* Chart ci's triangles, then b's turned onto ci's layout by m, into S->tl and S->ids; their count,
 * or 0 out of memory. */
static uint32_t merge_union(const merge_state *M, uint32_t ci, const merge_cand *m, merge_scratch *S)
{
    const charting *C = M->C;
    uint32_t        need = C->charts[ci].count + C->charts[m->b].count;
    if (need > S->cap) {
        uint32_t cap = 2 * need;
        double  *tl = realloc(S->tl, sizeof(double) * 6 * cap);
        if (tl) S->tl = tl;
        uint32_t *ids = realloc(S->ids, sizeof(uint32_t) * cap);
        if (ids) S->ids = ids;
        if (!tl || !ids) return 0;
        S->cap = cap;
    }
    uint32_t cnt = 0;
    double  *tl = S->tl;
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

/* Chart ci's hull points and chart m->b's turned into ci's plane by merge m, into S->hp, which
 * grows to 3 (na + nb) points: the points, then room for their hull. 0, or -1 out of memory. */
static int merge_hull_points(const hull_set *hs, merge_scratch *S, uint32_t ci, const merge_cand *m)
{
    uint32_t b = m->b;
    int      na = hs->n[ci], nb = hs->n[b];
    if ((size_t)(3 * (na + nb)) + 1 > S->hp_cap) { /* points, then 2 (na + nb) hull slots */
        size_t  cap = 3 * (size_t)(na + nb) + 64;
        bk_hpt *q = realloc(S->hp, sizeof(bk_hpt) * cap);
        if (!q) return -1;
        S->hp = q;
        S->hp_cap = cap;
    }
    bk_hpt *hp = S->hp;
    memcpy(hp, hs->p[ci], sizeof(bk_hpt) * (size_t)na);
    for (int j = 0; j < nb; ++j) {
        double dx = hs->p[b][j].x - m->mbx, dy = hs->p[b][j].y - m->mby;
        hp[na + j].x = m->max + m->cs * dx - m->sn * dy;
        hp[na + j].y = m->may + m->sn * dx + m->cs * dy;
    }
    return 0;
}

/* Chart ci's best merge now: its neighbouring charts, each with one shared edge, the gain of each
 * from the two convex hulls alone, and the best of up to 8 whose union has no overlap. 1 with it
 * in *out (its union in S->tl, S->ids: *m_tris triangles), 0 none, -1 out of memory. It reads the
 * charts ci and those it meets (S->seen) only. */
static int merge_eval(const merge_state *M, uint32_t ci, merge_scratch *S, merge_cand *out, uint32_t *m_tris,
                      uint64_t *work)
{
    const bk_scene  *s = M->s;
    const uint32_t  *weld = M->weld;
    const adjacency *A = M->A;
    const charting  *C = M->C;
    const hull_set  *hs = M->hs;
    double           pad_w = M->pad_w;
    const chart     *c = &C->charts[ci];
    double           cost_c = (c->w + pad_w) * (c->h + pad_w);
    merge_cand      *cand = S->cand;
    uint32_t         nc = 0, visit = ++S->visit;
    S->nseen = 0;
    for (uint32_t t = M->head[ci]; t != BK_NONE; t = M->next[t])
        for (uint32_t p = A->start[t]; p < A->start[t + 1]; ++p) {
            uint32_t u = A->adj[p], b = C->tri_chart[u];
            if (b == ci || S->stamp[b] == visit) continue;
            if (S->stamp[b] != visit + 1) { /* met for the first time in this look */
                S->stamp[b] = visit + 1;
                if (S->seen_cap) {
                    if (S->nseen == S->seen_cap) {
                        uint32_t cap = 2 * S->seen_cap, *q = realloc(S->seen, sizeof(uint32_t) * cap);
                        if (!q) return -1;
                        S->seen = q;
                        S->seen_cap = cap;
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
                        weld[s->tri_v[3 * (size_t)t + (x + 1) % 3]] == weld[s->tri_v[3 * (size_t)u + y]]) {
                        kt = x;
                        ku = y;
                        break;
                    }
            if (kt < 0) continue;
            const double *Lt = C->loc + 6 * (size_t)t, *Lu = C->loc + 6 * (size_t)u;
            double        pax = Lt[2 * kt], pay = Lt[2 * kt + 1], qax = Lt[2 * ((kt + 1) % 3)],
                   qay = Lt[2 * ((kt + 1) % 3) + 1];
            double pbx = Lu[2 * ((ku + 1) % 3)], pby = Lu[2 * ((ku + 1) % 3) + 1], qbx = Lu[2 * ku],
                   qby = Lu[2 * ku + 1];
            double la = hypot(qax - pax, qay - pay), lb = hypot(qbx - pbx, qby - pby);
            if (!(la > 0) || fabs(la - lb) > 1e-6 * la) continue; /* try another edge of b */
            S->stamp[b] = visit;
            merge_cand *m = &cand[nc];
            double      ang = atan2(qay - pay, qax - pax) - atan2(qby - pby, qbx - pbx);
            m->cs = cos(ang);
            m->sn = sin(ang);
            m->max = 0.5 * (pax + qax);
            m->may = 0.5 * (pay + qay);
            m->mbx = 0.5 * (pbx + qbx);
            m->mby = 0.5 * (pby + qby);
            m->b = b;
            m->t = t;
            m->u = u;
            const int na = hs->n[ci], nb = hs->n[b];
            if (merge_hull_points(hs, S, ci, m)) return -1;
            bk_hpt *hp = S->hp;
            int     hn = bk_atlas_convex_hull(hp, na + nb, hp + na + nb);
            double  w, h, rcs, rsn;
            bk_atlas_rect_from_hull(hp + na + nb, hn, &rcs, &rsn, &w, &h);
            const chart *cb = &C->charts[b];
            m->gain = cost_c + (cb->w + pad_w) * (cb->h + pad_w) - (w + pad_w) * (h + pad_w);
            if (m->gain > 0.02 * cost_c) nc++;
        }
    S->visit++; /* visit + 1 marked charts met */
    if (!nc) return 0;
    qsort(cand, nc, sizeof(merge_cand), cand_cmp);
    /* the best merge whose union has no overlap */
    for (uint32_t k = 0; k < nc && k < 8; ++k) {
        const merge_cand *m = &cand[k];
        uint32_t          cnt = merge_union(M, ci, m, S);
        if (!cnt) return -1;
        int ov = bk_atlas_sets_overlap(S->tl, c->count, S->tl + 6 * (size_t)c->count, cnt - c->count,
                                       1e-8 * (c->w + c->h + C->charts[m->b].w + C->charts[m->b].h), &S->ovs, work);
        if (ov < 0) return -1;
        if (!ov) {
            *out = *m;
            *m_tris = cnt;
            return 1;
        }
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
    merge_scratch     *S;            /* per worker */
    merge_cand        *best;         /* per chart */
    int8_t            *res;          /* per chart: merge_eval's return */
    uint64_t          *work;         /* per chart: its overlap work */
    uint32_t         **seen, *nseen; /* per chart: the charts it met */
} merge_spec;

static void merge_spec_fn(void *ctx, size_t begin, size_t end, int worker)
{
    const merge_spec *x = ctx;
    merge_scratch    *S = &x->S[worker];
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

/* The lists a merge changes: each chart's triangles linked head -> next -> tail, the charts
 * merged away (dead) and those a merge changed (touched); iota[i] = i. */
typedef struct merge_lists {
    uint32_t       *head, *tail, *next;
    const uint32_t *iota;
    uint8_t        *dead, *touched;
} merge_lists;

/* Makes merge m of chart ci, whose union merge_eval or merge_union left in S (m_tris corners in
 * S->tl of the triangles S->ids): the union's hull from the two hulls, its rectangle, applied to
 * every corner; chart m->b's triangles join ci's list. 0, or -1 out of memory. */
static int merge_apply(charting *C, hull_set *hs, merge_scratch *S, const merge_lists *L, uint32_t ci,
                       const merge_cand *m, uint32_t m_tris)
{
    chart   *c = &C->charts[ci];
    uint32_t b = m->b;
    /* the union's hull from the two hulls, its rectangle, applied to every corner */
    const int na = hs->n[ci], nb = hs->n[b];
    if (merge_hull_points(hs, S, ci, m)) return -1;
    bk_hpt *hp = S->hp;
    bk_hpt *nh = realloc(hs->p[ci], sizeof(bk_hpt) * (size_t)(2 * (na + nb) + 1));
    if (!nh) return -1;
    hs->p[ci] = nh;
    hs->n[ci] = bk_atlas_convex_hull(hp, na + nb, nh);
    double rcs, rsn, rw, rh;
    bk_atlas_rect_from_hull(nh, hs->n[ci], &rcs, &rsn, &rw, &rh);
    double   *tl = S->tl;
    uint32_t *ids = S->ids;
    bk_atlas_apply_rect(tl, L->iota, m_tris, nh, hs->n[ci], rcs, rsn, &c->w, &c->h);
    for (uint32_t i = 0; i < m_tris; ++i) memcpy(C->loc + 6 * (size_t)ids[i], tl + 6 * (size_t)i, 6 * sizeof(double));
    for (uint32_t x = L->head[b]; x != BK_NONE; x = L->next[x]) C->tri_chart[x] = ci;
    L->next[L->tail[ci]] = L->head[b];
    L->tail[ci] = L->tail[b];
    c->count += C->charts[b].count;
    L->dead[b] = 1;
    L->touched[ci] = L->touched[b] = 1;
    return 0;
}

/* each worker's scratch: stamps, candidates and a list of the charts a look saw */
static int merge_scratch_init(merge_scratch *S, int threads, uint32_t n)
{
    for (int w = 0; w < threads; ++w) {
        S[w].stamp = malloc(sizeof(uint32_t) * ((size_t)n + 1));
        S[w].cand = malloc(sizeof(merge_cand) * ((size_t)n + 1));
        S[w].seen_cap = 16;
        S[w].seen = malloc(sizeof(uint32_t) * S[w].seen_cap);
        if (!S[w].stamp || !S[w].cand || !S[w].seen) return -1;
        for (uint32_t ci = 0; ci < n; ++ci) S[w].stamp[ci] = BK_NONE;
    }
    return 0;
}

static int merge_hulls(const charting *C, uint32_t n, const uint32_t *next, const uint32_t *head, hull_set *hs,
                       int threads)
{
    /* every chart's hull, side by side (scratch per worker; a chart writes its own slot) */
    hull_ctx hc = {
        C, next, head, hs, calloc((size_t)threads, sizeof(bk_hpt *)), calloc((size_t)threads, sizeof(size_t)), 0
    };
    if (!hc.tmp || !hc.cap) {
        free(hc.tmp);
        free(hc.cap);
        return -1;
    }
    bk_parallel_for(n, 16, hull_fn, &hc);
    for (int w = 0; w < threads; ++w) free(hc.tmp[w]);
    free(hc.tmp);
    free(hc.cap);
    if (hc.err) return -1;
    return 0;
}

static int merge_compact(charting *C, uint32_t n, uint32_t T, const uint8_t *dead, uint32_t *head, uint32_t *next)
{
    uint32_t *cnt = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    if (!cnt) return -1;
    for (uint32_t ci = 0; ci < n; ++ci) cnt[ci] = dead[ci] ? 0 : C->charts[ci].count;
    uint32_t live = bk_atlas_compact_charts(C, n, T, cnt, head, next, NULL);
    free(cnt);
    if (live == BK_NONE) return -1;
    return 0;
}

int bk_atlas_charts_merge(const bk_scene *s, const uint32_t *weld, const adjacency *A, charting *C, double pad_w,
                          uint64_t *work)
{
    uint32_t  T = s->tri_count, n = C->count;
    int       threads = bk_pool_threads();
    uint32_t *next = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint32_t *head = malloc(sizeof(uint32_t) * ((size_t)n + 1)), *tail = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    uint32_t *iota = malloc(sizeof(uint32_t) * ((size_t)T + 1));
    uint8_t  *dead = calloc((size_t)n + 1, 1), *touched = calloc((size_t)n + 1, 1);
    key_idx  *order = malloc(sizeof(key_idx) * ((size_t)n + 1));
    hull_set  hs = { calloc((size_t)n + 1, sizeof(bk_hpt *)), calloc((size_t)n + 1, sizeof(int)) };
    merge_scratch *S = calloc((size_t)threads, sizeof(merge_scratch));
    merge_spec     sp = { NULL,
                          S,
                          malloc(sizeof(merge_cand) * ((size_t)n + 1)),
                          malloc((size_t)n + 1),
                          malloc(sizeof(uint64_t) * ((size_t)n + 1)),
                          calloc((size_t)n + 1, sizeof(uint32_t *)),
                          malloc(sizeof(uint32_t) * ((size_t)n + 1)) };
    int            rc = -1;
    if (!next || !head || !tail || !iota || !dead || !touched || !order || !hs.p || !hs.n || !S || !sp.best ||
        !sp.res || !sp.work || !sp.seen || !sp.nseen)
        goto done;
    if (merge_scratch_init(S, threads, n)) goto done;
    for (uint32_t t = 0; t < T; ++t) iota[t] = t;
    for (uint32_t ci = 0; ci < n; ++ci) {
        const chart *c = &C->charts[ci];
        bk_atlas_chart_link(C, ci, head, tail, NULL, next, NULL);
        double   cost = (c->w + pad_w) * (c->h + pad_w);
        uint64_t bits;
        memcpy(&bits, &cost, 8);
        order[ci].key = bits;
        order[ci].idx = ci;
    }
    if (merge_hulls(C, n, next, head, &hs, threads)) goto done;
    merge_state M = { s, weld, A, C, pad_w, head, next, dead, &hs };
    merge_lists L = { head, tail, next, iota, dead, touched };
    sp.M = &M;
    /* (fewer than MERGE_SPEC_THREADS: every look made in the loop; speculation also looks at the
     * charts that an earlier merge takes before their turn, which 2 threads do not hide:
     * sibenik's merges 0.042 -> 0.054 s on 2 threads) */
    if (threads >= MERGE_SPEC_THREADS && bk_atlas_spec) bk_parallel_for(n, 4, merge_spec_fn, &sp);
    else memset(sp.res, 0xFF, n);
    S[0].seen_cap = 0; /* the serial loop's looks: no list */
    bk_key_idx_sort(order, n);
    for (uint32_t oi = 0; oi < n; ++oi) {
        uint32_t ci = order[oi].idx;
        for (int round = 0; round < 16 && !dead[ci]; ++round) {
            merge_cand mc;
            uint32_t   m_tris = 0;
            int        r = -2;
            if (round == 0 && sp.res[ci] >= 0 && !touched[ci]) {
                r = sp.res[ci];
                for (uint32_t k = 0; k < sp.nseen[ci] && r != -2; ++k)
                    if (touched[sp.seen[ci][k]]) r = -2;
            }
            if (r != -2) {
                /* the speculative look stands: its work, and its union made again */
                *work += sp.work[ci];
                if (r == 1) {
                    mc = sp.best[ci];
                    m_tris = merge_union(&M, ci, &mc, &S[0]);
                    if (!m_tris) goto done;
                }
            } else r = merge_eval(&M, ci, &S[0], &mc, &m_tris, work);
            if (r < 0) goto done;
            if (r == 0) break;
            if (merge_apply(C, &hs, &S[0], &L, ci, &mc, m_tris)) goto done;
        }
    }
    /* compact: live charts, their triangles contiguous again */
    if (merge_compact(C, n, T, dead, head, next)) goto done;
    rc = 0;
done:
    if (hs.p)
        for (uint32_t ci = 0; ci < n; ++ci) free(hs.p[ci]);
    if (sp.seen)
        for (uint32_t ci = 0; ci < n; ++ci) free(sp.seen[ci]);
    for (int w = 0; S && w < threads; ++w) merge_scratch_free(&S[w]);
    free(hs.p);
    free(hs.n);
    free(S);
    free(sp.best);
    free(sp.res);
    free(sp.work);
    free(sp.seen);
    free(sp.nseen);
    free(next);
    free(head);
    free(tail);
    free(iota);
    free(dead);
    free(touched);
    free(order);
    return rc;
}
