/* atlas_grow.c - planar charts by region growing (see atlas.c for the pipeline), projected along
 * their mean normal, with self-overlaps evicted (atlas_overlap.c) and charted again.
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
 * and the evicted triangles are charted again among themselves until nothing overlaps. Every
 * chart is turned to its minimal-area rectangle (atlas_rect.c).
 */
#include "atlas_internal.h"
#include "pool.h"
#include "sort.h"
#include "util.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Charts. */


int bk_atlas_chart_push(charting *C, chart c)
{
    if (C->count == C->cap) {
        uint32_t cap = C->cap ? 2 * C->cap : 1024;
        chart   *p = realloc(C->charts, sizeof(chart) * cap);
        if (!p) return -1;
        C->charts = p;
        C->cap = cap;
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
    t1[0] = n[1] * e[2] - n[2] * e[1];
    t1[1] = n[2] * e[0] - n[0] * e[2];
    t1[2] = n[0] * e[1] - n[1] * e[0];
    double l = sqrt(bk_dot3d(t1, t1));
    for (int k = 0; k < 3; ++k) t1[k] /= l;
    t2[0] = n[1] * t1[2] - n[2] * t1[1];
    t2[1] = n[2] * t1[0] - n[0] * t1[2];
    t2[2] = n[0] * t1[1] - n[1] * t1[0];
}

/* Projects chart c along its axis into its plane, then fits its rectangle. */
/* Projects chart c along its axis into its plane (no rectangle fitted). */
static void chart_project_only(const bk_scene *s, charting *C, uint32_t ci)
{
    chart        *c = &C->charts[ci];
    const double *n = c->n;
    double        t1[3], t2[3];
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
        double   a = area[t[i]];
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
        uint32_t      ci = C->count;
        const double *ns = bk_atlas_tri_n(g, seed);
        double        sum[3] = { ns[0] * g->area[seed], ns[1] * g->area[seed], ns[2] * g->area[seed] };
        double        avg[3] = { ns[0], ns[1], ns[2] };
        uint32_t      qh = 0, qt = 0;
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
                if (l > 0)
                    for (int k = 0; k < 3; ++k) avg[k] = sum[k] / l;
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

typedef struct mk_ws {
    double   *xy;
    size_t    xy_cap;
    bk_hpt   *pts;
    size_t    pts_cap;
    pair_list pairs;
    uint32_t *out;
    size_t    out_cap;
} mk_ws;

typedef struct mk_ctx {
    const bk_scene *s;
    const tri_geom *g;
    charting       *C;
    double          cos_cone;
    uint8_t        *evicted;
    mk_ws          *ws;
    uint32_t        first; /* the first new chart */
    uint32_t       *end;   /* per new chart: one past its evicted triangles in chart_tris */
    uint64_t       *work;  /* per new chart: its overlap search's steps */
} mk_ctx;

#define MK_ERR UINT64_MAX /* work[k] of a chart whose check ran out of memory */

/* A new planar chart projected, its tilted and overlapping triangles evicted (tri_chart BK_NONE,
 * left in chart_tris after the kept ones, in their order) and the rest projected again. Writes
 * only the chart's own triangles' entries, so charts run side by side. */
static void mk_check_fn(void *ctx, size_t begin, size_t end, int worker)
{
    mk_ctx   *m = ctx;
    charting *C = m->C;
    mk_ws    *w = &m->ws[worker];
    for (size_t k = begin; k < end; ++k) {
        uint32_t ci = m->first + (uint32_t)k;
        chart   *c = &C->charts[ci];
        m->end[k] = c->first + c->count;
        m->work[k] = 0;
        if (bk_atlas_chart_project(m->s, C, ci, &w->pts, &w->pts_cap)) {
            m->work[k] = MK_ERR;
            continue;
        }
        if (c->count < 2) continue;
        /* the mean normal drifted while the chart grew: triangles now tilted more than the cone
         * from it leave too (never the seed, so every round makes progress) */
        uint32_t nev = 0;
        for (uint32_t i = 1; i < c->count; ++i) {
            uint32_t t = C->chart_tris[c->first + i];
            if (bk_dot3d(bk_atlas_tri_n(m->g, t), c->n) < m->cos_cone) {
                m->evicted[t] = 1;
                nev++;
            }
        }
        if (6 * (size_t)c->count > w->xy_cap) {
            size_t  cap = 6 * (size_t)c->count * 2;
            double *p = realloc(w->xy, sizeof(double) * cap);
            if (!p) {
                m->work[k] = MK_ERR;
                continue;
            }
            w->xy = p;
            w->xy_cap = cap;
        }
        for (uint32_t i = 0; i < c->count; ++i)
            memcpy(w->xy + 6 * (size_t)i, C->loc + 6 * (size_t)C->chart_tris[c->first + i], 6 * sizeof(double));
        w->pairs.n = 0;
        if (bk_atlas_find_overlaps(w->xy, c->count, 1e-9 * (c->w + c->h), &w->pairs, &m->work[k])) {
            m->work[k] = MK_ERR;
            continue;
        }
        if (!w->pairs.n && !nev) continue;
        /* pairs come sorted by (i, j): when i's pairs are reached, whether i stays is settled, so
         * j leaves iff it overlaps an earlier triangle that stays, whatever found the pairs */
        for (size_t p = 0; p < w->pairs.n; ++p) {
            uint32_t ti = C->chart_tris[c->first + w->pairs.p[2 * p]],
                     tj = C->chart_tris[c->first + w->pairs.p[2 * p + 1]];
            if (m->evicted[ti] || m->evicted[tj]) continue;
            m->evicted[tj] = 1; /* j > i: added later */
            nev++;
        }
        /* compact the chart's list; evicted triangles wait for the next round */
        if (nev > w->out_cap) {
            uint32_t *p = realloc(w->out, sizeof(uint32_t) * 2 * (size_t)nev);
            if (!p) {
                m->work[k] = MK_ERR;
                continue;
            }
            w->out = p;
            w->out_cap = 2 * (size_t)nev;
        }
        uint32_t keep = 0, nout = 0;
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C->chart_tris[c->first + i];
            if (m->evicted[t]) {
                m->evicted[t] = 0;
                C->tri_chart[t] = BK_NONE;
                w->out[nout++] = t;
            } else C->chart_tris[c->first + keep++] = t;
        }
        memcpy(C->chart_tris + c->first + keep, w->out, sizeof(uint32_t) * nout);
        c->count = keep;
        if (bk_atlas_chart_project(m->s, C, ci, &w->pts, &w->pts_cap)) {
            m->work[k] = MK_ERR;
            continue;
        }
    }
}

int bk_atlas_charts_make(const bk_scene *s, const tri_geom *g, const adjacency *A, double cone_deg, charting *C,
                         uint64_t *work)
{
    uint32_t T = s->tri_count;
    double   cos_cone = cos(cone_deg * BK_ATLAS_PI / 180.0);
    int      prefilled = C->tri_chart != NULL; /* charts of bk_atlas_charts_smooth stay */
    if (!prefilled) { bk_atlas_charting_alloc(C, T); }
    uint32_t *seeds = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint32_t *ctmp = malloc(sizeof(uint32_t) * (size_t)T + 1);
    uint8_t  *evicted = calloc((size_t)T + 1, 1);
    key_idx  *kt = malloc(sizeof(key_idx) * (size_t)T + 1);
    int       threads = bk_pool_threads();
    mk_ws    *mws = calloc((size_t)threads, sizeof(mk_ws));
    uint32_t *orig_end = NULL;
    uint64_t *cwork = NULL;
    size_t    orig_cap = 0;
    int       rc = -1;
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
            m.s = s;
            m.g = g;
            m.C = C;
            m.cos_cone = cos_cone;
            m.evicted = evicted;
            m.ws = mws;
            m.first = first_new;
            m.end = orig_end;
            m.work = cwork;
            if (C->count - first_new > orig_cap) {
                size_t    cap = 2 * (size_t)(C->count - first_new);
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
                for (uint32_t i = c->first + c->count; i < orig_end[ci - first_new]; ++i)
                    seeds[nseeds++] = C->chart_tris[i];
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
    free(seeds);
    free(queue);
    free(ctmp);
    free(evicted);
    free(kt);
    for (int w = 0; mws && w < threads; ++w) {
        free(mws[w].xy);
        free(mws[w].pts);
        free(mws[w].pairs.p);
        free(mws[w].out);
    }
    free(mws);
    free(orig_end);
    free(cwork);
    return rc;
}

void bk_atlas_charts_free(charting *C)
{
    free(C->tri_chart);
    free(C->chart_tris);
    free(C->charts);
    free(C->loc);
}
