/* atlas_split.c - charts that fill their rectangle poorly (rings, frames) re-grown into compact
 * parts, each chart's rectangle grown by the padding (what the packer pays for).
 *
 * Pipeline: planar and smooth charts (atlas_grow.c, atlas_smooth.c) -> bk_atlas_charts_split ->
 * the merges (atlas_merge.c). Every triangle keeps its projection, so its texel density.
 */
#include "atlas_internal.h"
#include "pool.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    const charting  *C;
    double           pad_w;
    uint32_t        *queue, *part, *nparts;
    key_idx         *kt;
} split_ctx;

static void split_parts_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const split_ctx *x = ctx;
    const adjacency *A = x->A;
    const charting  *C = x->C;
    for (size_t ci = begin; ci < end; ++ci) {
        chart c = C->charts[ci];
        x->nparts[ci] = 0;
        if (c.count < 3) continue;
        double area = 0;
        for (uint32_t i = 0; i < c.count; ++i) area += bk_tri2_area(C->loc + 6 * (size_t)C->chart_tris[c.first + i]);
        if (area >= FILL_MIN * c.w * c.h) continue;
        uint32_t *part = x->part, *queue = x->queue + c.first;
        key_idx  *kt = x->kt + c.first;
        /* seeds by decreasing projected area */
        for (uint32_t i = 0; i < c.count; ++i) {
            uint32_t t = C->chart_tris[c.first + i];
            double   a = bk_tri2_area(C->loc + 6 * (size_t)t);
            uint64_t bits;
            memcpy(&bits, &a, 8);
            kt[i].key = ~bits;
            kt[i].idx = t;
            part[t] = BK_NONE;
        }
        bk_key_idx_sort(kt, c.count);
        uint32_t nparts = 0, w = 0;
        double   cost = 0;
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
                    nb[0] = fmin(box[0], bu[0]);
                    nb[1] = fmin(box[1], bu[1]);
                    nb[2] = fmax(box[2], bu[2]);
                    nb[3] = fmax(box[3], bu[3]);
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

int bk_atlas_charts_split(const bk_scene *s, const adjacency *A, charting *C, double pad_w, uint32_t *queue,
                          key_idx *kt, uint32_t *part)
{
    bk_hpt   *pts = NULL;
    size_t    pts_cap = 0;
    uint32_t  n0 = C->count;
    uint32_t *np = malloc(sizeof(uint32_t) * ((size_t)n0 + 1));
    if (!np) return -1;
    split_ctx x = { A, C, pad_w, queue, part, np, kt };
    bk_parallel_for(n0, 16, split_parts_fn, &x);
    /* then the splits, in chart order (new charts numbered as one loop numbers them) */
    for (uint32_t ci = 0; ci < n0; ++ci) {
        uint32_t nparts = np[ci];
        if (!nparts) continue;
        chart           c = C->charts[ci];
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
                if (bk_atlas_chart_push(C, nc)) {
                    free(pts);
                    free(np);
                    return -1;
                }
                for (uint32_t i = start; i < end; ++i) C->tri_chart[q[i]] = idx;
            }
            /* a smooth chart's parts keep its unfolding; a planar chart's are projected again
             * along its axis (the same projection), both turned to their own rectangles */
            if (nc.smooth ? bk_atlas_fit_rect(C->loc, C->chart_tris + nc.first, nc.count, &C->charts[idx].w,
                                              &C->charts[idx].h, &pts, &pts_cap)
                          : bk_atlas_chart_project(s, C, idx, &pts, &pts_cap)) {
                free(pts);
                free(np);
                return -1;
            }
            start = end;
        }
    }
    free(pts);
    free(np);
    return 0;
}
