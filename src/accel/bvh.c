/* bvh.c - binned SAH BVH builder on the host, flattened into the 64-byte two-box node layout.
 *
 * Pipeline: bk_scene -> primitive boxes -> binned SAH top-down build (Wald 2007, "On fast
 * Construction of SAH-based Bounding Volume Hierarchies": 32 bins per axis over the centroid
 * bounds) -> build nodes -> depth-first flattening into bk_bvh_node (kernels/bk_accel.h), with
 * the triangles reordered by leaf so a leaf is one contiguous run.
 *
 * Threads (pool.h), with the same output whatever their number:
 *   - the top levels (nodes above SUB_MAX primitives) bin in chunks of BIN_GRAIN primitives,
 *     each chunk into bins of its own, merged in chunk order. Bins hold only min/max and counts,
 *     which are exact, so the merged bins equal those of a single pass;
 *   - below SUB_MAX, a node's subtree is a task built into a private node array, over its own
 *     range of the primitive array; the tasks' nodes are then renumbered into exactly the
 *     numbering a serial depth-first build gives (a subtree's nodes are one contiguous run of it);
 *   - the flattening (layout nodes and leaf records) runs in chunks of build nodes: the numbering
 *     gives every inner node its layout index, and a prefix over the chunks' leaf sizes gives every
 *     leaf its records' place (flat_chunk).
 * A node of at most BIN_GRAIN primitives is split the same way in the top levels (bins filled in
 * one pass, partition in place) as in a task, so any SUB_MAX up to BIN_GRAIN gives the same tree:
 * there it follows the thread count (about four tasks per thread, at least max(SUB_MIN, n /
 * SUB_DIV)), so that the nodes between that and BIN_GRAIN are not split one after the other on one
 * thread when there are many threads; above BIN_GRAIN it depends on the primitive count only.
 *
 * Single-thread speed: the build partitions 32-byte primitive records (box + index) in place, so
 * every pass streams through memory instead of gathering boxes by index; a split's child boxes are
 * the unions of its bins, and its children's centroid bounds come out of the partition pass, so a
 * node costs one binning pass and one partition pass.
 */
#include "bvh.h"
#include "geom.h"
#include "pool.h"
#include "util.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NBINS     32    /* at most 32: bins.used is one bit per bin */
#define BIN_GRAIN 16384 /* primitives per chunk of a parallel pass */
#define SUB_MIN   4096  /* SUB_MAX = max(SUB_MIN, n / SUB_DIV): subtrees this small are tasks */
#define SUB_DIV   128

typedef struct box {
    float lo[3], hi[3];
} box;

/* A primitive during the build, 32 B: two per cache line. */
typedef struct pref {
    box      b;
    uint32_t id; /* bk_geom primitive: triangles, then voxel segments */
    uint32_t pad;
} pref;

typedef struct bnode {
    box      b;
    int32_t  left; /* child build nodes (right = left + 1); -1 for a leaf */
    uint32_t first, count;
    uint32_t depth;
} bnode;

/* A node waiting to be split, with what the pass that made it learnt about its primitives. */
typedef struct pend {
    uint32_t ni;
    uint32_t vox;            /* holds a voxel segment */
    float    clo[3], chi[3]; /* centroid bounds */
} pend;

/* A bin's box, 32 B: four lanes each so a prim's box grows it with one minps and one maxps (lane 3
 * holds whatever the primitive record has there and is never read). */
typedef struct bbox {
    float lo[4], hi[4];
} bbox;

typedef struct bins {
    bbox     b[3][NBINS];
    uint32_t n[3][NBINS];
    uint32_t used[3]; /* bit b: bin b is not empty */
} bins;

static box box_empty(void)
{
    box b;
    for (int k = 0; k < 3; ++k) {
        b.lo[k] = FLT_MAX;
        b.hi[k] = -FLT_MAX;
    }
    return b;
}
/* Stores unconditionally, which compiles to minss / maxss (a conditional store is a branch per
 * coordinate); same result, NaN and signed zeros included: b stays unless o is strictly beyond. */
static void box_grow(box *b, const box *o)
{
    for (int k = 0; k < 3; ++k) {
        b->lo[k] = o->lo[k] < b->lo[k] ? o->lo[k] : b->lo[k];
        b->hi[k] = o->hi[k] > b->hi[k] ? o->hi[k] : b->hi[k];
    }
}
static float box_area(const box *b)
{
    float dx = b->hi[0] - b->lo[0], dy = b->hi[1] - b->lo[1], dz = b->hi[2] - b->lo[2];
    if (dx < 0 || dy < 0 || dz < 0) return 0.0f;
    return 2.0f * (dx * dy + dy * dz + dz * dx);
}
static bbox bbox_empty(void)
{
    bbox b;
    for (int k = 0; k < 4; ++k) {
        b.lo[k] = FLT_MAX;
        b.hi[k] = -FLT_MAX;
    }
    return b;
}
/* box_grow's comparisons lane by lane: MINPS(a, b) is a < b ? a : b, MAXPS(a, b) a > b ? a : b */
static void bbox_grow4(bbox *b, const float *lo, const float *hi)
{
#if defined(__SSE2__)
    _mm_storeu_ps(b->lo, _mm_min_ps(_mm_loadu_ps(lo), _mm_loadu_ps(b->lo)));
    _mm_storeu_ps(b->hi, _mm_max_ps(_mm_loadu_ps(hi), _mm_loadu_ps(b->hi)));
#else
    for (int k = 0; k < 3; ++k) {
        b->lo[k] = lo[k] < b->lo[k] ? lo[k] : b->lo[k];
        b->hi[k] = hi[k] > b->hi[k] ? hi[k] : b->hi[k];
    }
#endif
}
static void box_grow_bb(box *b, const bbox *o)
{
    for (int k = 0; k < 3; ++k) {
        b->lo[k] = o->lo[k] < b->lo[k] ? o->lo[k] : b->lo[k];
        b->hi[k] = o->hi[k] > b->hi[k] ? o->hi[k] : b->hi[k];
    }
}
static float centroid(const pref *r, int k) { return 0.5f * (r->b.lo[k] + r->b.hi[k]); }

static void pend_reset(pend *p)
{
    p->vox = 0;
    for (int k = 0; k < 3; ++k) {
        p->clo[k] = FLT_MAX;
        p->chi[k] = -FLT_MAX;
    }
}
static void pend_add(pend *p, const pref *r, uint32_t tri_count)
{
    for (int k = 0; k < 3; ++k) {
        float c = centroid(r, k);
        p->clo[k] = c < p->clo[k] ? c : p->clo[k];
        p->chi[k] = c > p->chi[k] ? c : p->chi[k];
    }
    p->vox |= r->id >= tri_count;
}
static void pend_merge(pend *p, const pend *o)
{
    for (int k = 0; k < 3; ++k) {
        if (o->clo[k] < p->clo[k]) p->clo[k] = o->clo[k];
        if (o->chi[k] > p->chi[k]) p->chi[k] = o->chi[k];
    }
    p->vox |= o->vox;
}

/* Bin of a centroid coordinate, with scale = NBINS / extent (times 1 - 1e-6). Computed in double:
 * below an extent of about 1e-37 the float scale overflows to inf, and (c - lo) * inf is inf or
 * NaN, whose conversion to int is undefined. Clamped before the conversion. */
static int bin_of(float c, float lo, double scale)
{
    double f = ((double)c - (double)lo) * scale;
    f = f > 0.0 ? f : 0.0; /* also NaN */
    f = f < (double)(NBINS - 1) ? f : (double)(NBINS - 1);
    return (int)f;
}

static void bins_clear(bins *B)
{
    for (int k = 0; k < 3; ++k)
        for (int b = 0; b < NBINS; ++b) {
            B->b[k][b] = bbox_empty();
            B->n[k][b] = 0;
        }
    B->used[0] = B->used[1] = B->used[2] = 0;
}
/* All three axes in one loop: each axis' bins are a read-modify-write chain, and three
 * independent chains hide each other's store-to-load latency. An axis with scale 0 lands in bin 0
 * and is never swept. */
static void bins_add(bins *B, const pref *p, size_t begin, size_t end, const float clo[3], const double scale[3])
{
    const float  l0 = clo[0], l1 = clo[1], l2 = clo[2];
    const double s0 = scale[0], s1 = scale[1], s2 = scale[2];
    for (size_t i = begin; i < end; ++i) {
        const pref *r = &p[i];
        int         b0 = bin_of(centroid(r, 0), l0, s0), b1 = bin_of(centroid(r, 1), l1, s1),
            b2 = bin_of(centroid(r, 2), l2, s2);
        /* lo[0..2] then hi[0]; hi[0..2] then id: lane 3 is never read */
        B->n[0][b0]++;
        bbox_grow4(&B->b[0][b0], r->b.lo, r->b.hi);
        B->used[0] |= 1u << b0;
        B->n[1][b1]++;
        bbox_grow4(&B->b[1][b1], r->b.lo, r->b.hi);
        B->used[1] |= 1u << b1;
        B->n[2][b2]++;
        bbox_grow4(&B->b[2][b2], r->b.lo, r->b.hi);
        B->used[2] |= 1u << b2;
    }
}
static void bins_merge(bins *B, const bins *o)
{
    for (int k = 0; k < 3; ++k)
        for (int b = 0; b < NBINS; ++b) {
            B->n[k][b] += o->n[k][b];
            bbox_grow4(&B->b[k][b], o->b[k][b].lo, o->b[k][b].hi);
        }
    for (int k = 0; k < 3; ++k) B->used[k] |= o->used[k];
}

/* ---- parallel passes over a range of primitives: one result per chunk, merged in chunk order ---- */

typedef struct bin_job {
    const pref   *p;
    size_t        first;
    const float  *clo;
    const double *scale;
    bins         *part; /* one per chunk */
} bin_job;

static void bin_chunk(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    bin_job *J = (bin_job *)ctx;
    bins    *B = &J->part[b / BIN_GRAIN];
    bins_clear(B);
    bins_add(B, J->p, J->first + b, J->first + e, J->clo, J->scale);
}

typedef struct builder {
    const bk_build_opts *o;
    pref                *p;
    uint32_t             tri_count; /* ids from here on are voxel segments */
    bnode               *nodes;
    uint32_t             node_count;
    bins                *scr;  /* empty bins, for one node at a time */
    bins                *part; /* chunk bins for the parallel top levels (NULL: bin serially) */
    size_t               part_cap;
    pref                *tmp;    /* the top levels' partitions: n records, and per chunk its counts */
    uint32_t            *part_n; /* and children's centroid bounds (NULL: partition in place) */
    pend                *part_lr;
} builder;

/* The top levels' partition, on the pool: each chunk counts and bounds its two sides (phase 0),
 * then writes its records, left ones and right ones each in their order, to where the chunks
 * before it end (phase 1: a stable partition, into tmp), and tmp is copied back (phase 2). The
 * children are the same sets as those of the in-place partition below, in another order. */
typedef struct part_job {
    pref     *p, *tmp;
    size_t    first, count;
    int       k, best_bin, phase;
    float     lo;
    double    sc;
    uint32_t  tri_count, nleft;
    uint32_t *n;  /* per chunk: left records; in phase 1, where its left ones start */
    pend     *lr; /* per chunk: the left and right sides' bounds */
} part_job;

static void part_chunk(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    part_job *J = (part_job *)ctx;
    size_t    c = b / BIN_GRAIN;
    pref     *src = J->p + J->first;
    if (J->phase == 2) {
        memcpy(src + b, J->tmp + J->first + b, sizeof(pref) * (e - b));
        return;
    }
    if (J->phase == 0) {
        uint32_t nl = 0;
        pend_reset(&J->lr[2 * c]);
        pend_reset(&J->lr[2 * c + 1]);
        for (size_t i = b; i < e; ++i) {
            int left = bin_of(centroid(&src[i], J->k), J->lo, J->sc) <= J->best_bin;
            nl += (uint32_t)left;
            pend_add(&J->lr[2 * c + !left], &src[i], J->tri_count);
        }
        J->n[c] = nl;
        return;
    }
    pref *l = J->tmp + J->first + J->n[c], *r = J->tmp + J->first + J->nleft + (b - J->n[c]);
    for (size_t i = b; i < e; ++i) {
        if (bin_of(centroid(&src[i], J->k), J->lo, J->sc) <= J->best_bin) *l++ = src[i];
        else *r++ = src[i];
    }
}

/* What a node's binning pass found: the cheapest plane (axis -1: none) and, should it be taken,
 * the children's boxes (the unions of the bins on either side). */
typedef struct bin_split {
    int   axis, bin;
    float cost;
    box   side[2];
} bin_split;

/* Bins the node's count primitives from first (in chunks on the pool for a top-level node of
 * several chunks) into B->scr, with scale[k] = NBINS / extent of the centroid bounds clo..chi. */
static void node_bins(builder *B, uint32_t first, uint32_t count, const float *clo, const float *chi, double scale[3])
{
    bins *bn = B->scr; /* empty on entry, emptied again before the partition */
    for (int k = 0; k < 3; ++k) {
        double ext = (double)chi[k] - (double)clo[k]; /* finite even for -FLT_MAX .. FLT_MAX */
        scale[k] = ext > 0.0 ? (double)NBINS * (1.0 - 1e-6) / ext : 0.0;
    }
    if (B->part && count > BIN_GRAIN) {
        size_t chunks = ((size_t)count - 1) / BIN_GRAIN + 1;
        BK_CHECK(chunks <= B->part_cap);
        bin_job J;
        J.p = B->p;
        J.first = first;
        J.clo = clo;
        J.scale = scale;
        J.part = B->part;
        bk_parallel_for(count, BIN_GRAIN, bin_chunk, &J);
        for (size_t c = 0; c < chunks; ++c) bins_merge(bn, &B->part[c]);
    } else {
        bins_add(bn, B->p, first, (size_t)first + count, clo, scale);
    }
}

/* The SAH sweep over B->scr's bins for a node of box nb, then the bins emptied again. */
static bin_split bins_sweep(builder *B, const box *nb, const double scale[3])
{
    bins     *bn = B->scr;
    bin_split r;
    r.axis = -1;
    r.bin = 0;
    r.cost = FLT_MAX;
    /* The sweep visits only the non-empty bins: a plane after an empty bin has the cost of the
     * plane before it, which the strict comparison already saw first, so the result is that of
     * the sweep over all bins, for a fraction of the work in the many small nodes. */
    int ne[3][NBINS], nne[3];
    for (int k = 0; k < 3; ++k) {
        nne[k] = 0;
        for (uint32_t u = bn->used[k]; u; u &= u - 1) ne[k][nne[k]++] = __builtin_ctz(u);
    }
    float parent_area = box_area(nb);
    if (parent_area <= 0) parent_area = 1.0f;
    for (int k = 0; k < 3; ++k) {
        if (scale[k] == 0.0) continue;
        const int m = nne[k];
        float     right_cost[NBINS];
        box       acc = box_empty();
        uint32_t  cnt = 0;
        for (int j = m - 1; j > 0; --j) {
            box_grow_bb(&acc, &bn->b[k][ne[k][j]]);
            cnt += bn->n[k][ne[k][j]];
            right_cost[j] = box_area(&acc) * (float)cnt;
        }
        acc = box_empty();
        cnt = 0;
        for (int j = 0; j < m - 1; ++j) {
            box_grow_bb(&acc, &bn->b[k][ne[k][j]]);
            cnt += bn->n[k][ne[k][j]];
            float cost = B->o->cost_node + (box_area(&acc) * (float)cnt + right_cost[j + 1]) / parent_area;
            if (cost < r.cost) {
                r.cost = cost;
                r.axis = k;
                r.bin = ne[k][j];
            }
        }
    }
    /* the children's boxes, should the split be taken: the unions of the bins on either side */
    r.side[0] = box_empty();
    r.side[1] = box_empty();
    if (r.axis >= 0)
        for (int j = 0; j < nne[r.axis]; ++j) {
            int b = ne[r.axis][j];
            box_grow_bb(&r.side[b > r.bin], &bn->b[r.axis][b]);
        }
    for (int k = 0; k < 3; ++k)
        for (int j = 0; j < nne[k]; ++j) {
            bn->b[k][ne[k][j]] = bbox_empty();
            bn->n[k][ne[k][j]] = 0;
        }
    bn->used[0] = bn->used[1] = bn->used[2] = 0;
    return r;
}

/* The top levels' stable partition on the pool (part_job) of a node of several chunks; the sides'
 * centroid bounds merged into L and R in chunk order. Returns the first right primitive. */
static uint32_t partition_par(builder *B, uint32_t first, uint32_t count, int k, int best_bin, float lo, double sc,
                              pend *L, pend *R)
{
    size_t   chunks = ((size_t)count - 1) / BIN_GRAIN + 1;
    part_job J;
    J.p = B->p;
    J.tmp = B->tmp;
    J.first = first;
    J.count = count;
    J.k = k;
    J.best_bin = best_bin;
    J.lo = lo;
    J.sc = sc;
    J.tri_count = B->tri_count;
    J.n = B->part_n;
    J.lr = B->part_lr;
    J.nleft = 0;
    J.phase = 0;
    bk_parallel_for(count, BIN_GRAIN, part_chunk, &J);
    for (size_t c = 0; c < chunks; ++c) { /* counts to starts; bounds merged in chunk order */
        uint32_t nl = J.n[c];
        J.n[c] = J.nleft;
        J.nleft += nl;
        pend_merge(L, &J.lr[2 * c]);
        pend_merge(R, &J.lr[2 * c + 1]);
    }
    J.phase = 1;
    bk_parallel_for(count, BIN_GRAIN, part_chunk, &J);
    J.phase = 2;
    bk_parallel_for(count, BIN_GRAIN, part_chunk, &J);
    return first + J.nleft;
}

/* In place, each primitive classified once, where it ends up (the children's centroid bounds come
 * out of this pass). Returns the first right primitive. */
static uint32_t partition_seq(builder *B, uint32_t first, uint32_t count, int k, int best_bin, float lo, double sc,
                              pend *L, pend *R)
{
    pref    *p = B->p;
    uint32_t i = first, j = first + count;
    while (i < j) {
        if (bin_of(centroid(&p[i], k), lo, sc) <= best_bin) {
            pend_add(L, &p[i], B->tri_count);
            ++i;
        } else {
            pref t = p[i];
            p[i] = p[--j];
            p[j] = t;
            pend_add(R, &p[j], B->tri_count);
        }
    }
    return i;
}

/* Node ni's two children over [first, mid) and [mid, first + count): their boxes from the bins'
 * sides when the partition followed the bins, else (and their pend records) from their
 * primitives. */
static void make_children(builder *B, uint32_t ni, uint32_t first, uint32_t count, uint32_t mid, int from_bins,
                          const box side[2], pend ch_out[2])
{
    uint32_t l = B->node_count;
    B->node_count += 2;
    bnode *n = &B->nodes[ni]; /* nodes never reallocate (2N - 1 reserved), but keep it obvious */
    n->left = (int32_t)l;
    for (int c = 0; c < 2; ++c) {
        bnode *ch = &B->nodes[l + c];
        ch->first = c == 0 ? first : mid;
        ch->count = c == 0 ? mid - first : first + count - mid;
        ch->left = -1;
        ch->depth = n->depth + 1;
        ch->b = box_empty();
        ch_out[c].ni = l + (uint32_t)c;
        if (from_bins) {
            /* the union of the bins on this side: min and max of the same boxes */
            ch->b = side[c];
        } else {
            pend_reset(&ch_out[c]);
            for (uint32_t i = ch->first; i < ch->first + ch->count; ++i) {
                box_grow(&ch->b, &B->p[i].b);
                pend_add(&ch_out[c], &B->p[i], B->tri_count);
            }
        }
    }
}

/* Splits node pn->ni if the SAH (or the leaf size limit) says so; on a split, fills the children's
 * pend records and returns 1. */
static int split_node(builder *B, const pend *pn, int force, pend ch_out[2])
{
    const uint32_t ni = pn->ni;
    const bnode   *n = &B->nodes[ni];
    uint32_t       first = n->first, count = n->count;
    if (count <= 1 || (int)n->depth >= B->o->max_depth) return 0;

    /* A leaf with a voxel segment holds only it: a segment's walk costs a dozen triangle tests,
     * and a warp's lanes wait for the longest (H100, world54k: 1.54 -> 1.71 Grays/s closest hit
     * with 8^3 segments) */
    uint32_t     max_leaf = pn->vox ? 1u : (uint32_t)B->o->max_leaf;
    const float *clo = pn->clo, *chi = pn->chi;

    double scale[3];
    node_bins(B, first, count, clo, chi, scale);
    const bin_split bs = bins_sweep(B, &n->b, scale);

    uint32_t mid;
    int      from_bins = 0;
    pend    *L = &ch_out[0], *R = &ch_out[1];
    pend_reset(L);
    pend_reset(R);
    if (bs.axis < 0) {
        /* All centroids coincide: only an object-median split can bound the leaf size. */
        if (count <= max_leaf && !force) return 0;
        mid = first + count / 2;
    } else {
        if (bs.cost >= (float)count && count <= max_leaf && !force) return 0;
        const int k = bs.axis;
        if (B->tmp && count > BIN_GRAIN) mid = partition_par(B, first, count, k, bs.bin, clo[k], scale[k], L, R);
        else mid = partition_seq(B, first, count, k, bs.bin, clo[k], scale[k], L, R);
        from_bins = 1;
        if (mid == first || mid == first + count) {
            mid = first + count / 2;
            from_bins = 0;
        }
    }
    make_children(B, ni, first, count, mid, from_bins, bs.side, ch_out);
    return 1;
}

/* ---- top levels and subtree tasks ---------------------------------------------------------- */

typedef struct sub {
    pend     root;  /* root.ni: the subtree's root in the top numbering */
    uint32_t at;    /* top nodes made before this task was cut off */
    uint32_t order; /* position in cut-off order */
    size_t   off;   /* its private nodes: B.sub_nodes[off, off + 2 count) */
    uint32_t count; /* its node count after the build (root included) */
    uint32_t base;  /* final index of its node 1 */
} sub;

typedef struct build_ctx {
    const bk_build_opts *o;
    pref                *p;
    uint32_t             tri_count;
    bnode               *top; /* the top nodes */
    bnode               *sub_nodes;
    sub                 *subs;
    uint32_t            *sorted; /* task order: largest first */
} build_ctx;

/* Depth-first build of the subtree under B->nodes[root.ni]; subtrees of at most sub_max
 * primitives (other than the root) are cut off into subs instead when subs != NULL. */
static void build_dfs(builder *B, const pend *root, int force_root, uint32_t sub_max, sub *subs, uint32_t *sub_count)
{
    pend stack[BK_MAX_DEPTH + 4];
    int  sp = 0;
    stack[sp++] = *root;
    while (sp) {
        pend pn = stack[--sp];
        if (subs && pn.ni != root->ni && B->nodes[pn.ni].count <= sub_max) {
            sub *s = &subs[(*sub_count)++];
            s->root = pn;
            s->at = B->node_count;
            s->order = *sub_count - 1;
            continue;
        }
        pend ch[2];
        if (split_node(B, &pn, force_root && pn.ni == root->ni, ch)) {
            BK_CHECK(sp + 2 <= BK_MAX_DEPTH + 4);
            stack[sp++] = ch[1];
            stack[sp++] = ch[0];
        }
    }
}

static void sub_task(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    build_ctx *C = (build_ctx *)ctx;
    for (size_t i = b; i < e; ++i) {
        sub    *s = &C->subs[C->sorted[i]];
        builder B;
        memset(&B, 0, sizeof B);
        bins scr;
        bins_clear(&scr);
        B.o = C->o;
        B.p = C->p;
        B.tri_count = C->tri_count;
        B.scr = &scr;
        B.nodes = C->sub_nodes + s->off;
        B.nodes[0] = C->top[s->root.ni];
        B.node_count = 1;
        pend r = s->root;
        r.ni = 0;
        build_dfs(&B, &r, 0, 0, NULL, NULL);
        s->count = B.node_count;
    }
}

/* The tasks' nodes to their places in the final numbering (each task's to its own run). */
typedef struct renum_job {
    const sub      *subs;
    const bnode    *sub_nodes;
    const uint32_t *map;
    bnode          *nodes;
} renum_job;

static void renum_task(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const renum_job *R = (const renum_job *)ctx;
    for (size_t t = b; t < e; ++t) {
        const sub *sb = &R->subs[t];
        for (uint32_t j = 0; j < sb->count; ++j) {
            bnode n = R->sub_nodes[sb->off + j];
            if (n.left >= 0) n.left = (int32_t)(sb->base + (uint32_t)n.left - 1);
            R->nodes[j == 0 ? R->map[sb->root.ni] : sb->base + j - 1] = n;
        }
    }
}

/* Tasks largest first, so one big subtree does not finish alone at the end; ties in cut-off order. */
typedef struct sub_key {
    uint32_t count, order;
} sub_key;
static int cmp_sub_key(const void *a, const void *b)
{
    const sub_key *x = (const sub_key *)a, *y = (const sub_key *)b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return x->order < y->order ? -1 : (x->order > y->order ? 1 : 0);
}

/* ---- primitive records ------------------------------------------------------------------- */

typedef struct prep_job {
    const bk_geom *g;
    pref          *p;
    box           *part_box;
    pend          *part_pend;
} prep_job;

static void prep_chunk(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    prep_job *J = (prep_job *)ctx;
    box       bb = box_empty();
    pend      pp;
    pend_reset(&pp);
    for (size_t t = b; t < e; ++t) {
        pref *r = &J->p[t];
        bk_geom_box(J->g, (uint32_t)t, r->b.lo, r->b.hi);
        r->id = (uint32_t)t;
        r->pad = 0;
        box_grow(&bb, &r->b);
        pend_add(&pp, r, J->g->s->tri_count);
    }
    J->part_box[b / BIN_GRAIN] = bb;
    J->part_pend[b / BIN_GRAIN] = pp;
}

/* ---- flattening ---------------------------------------------------------------------------- */

static void set_child(bk_bvh_node *ln, int c, const box *b, int32_t ref)
{
    bk_f4 *xy = c == 0 ? &ln->xy0 : &ln->xy1;
    xy->x = b->lo[0];
    xy->y = b->hi[0];
    xy->z = b->lo[1];
    xy->w = b->hi[1];
    if (c == 0) {
        ln->z01.x = b->lo[2];
        ln->z01.y = b->hi[2];
        ln->refs.x = bk_bits_float((uint32_t)ref);
    } else {
        ln->z01.z = b->lo[2];
        ln->z01.w = b->hi[2];
        ln->refs.y = bk_bits_float((uint32_t)ref);
    }
}

/* The build nodes are numbered as a serial depth-first build numbers them: the k-th node split
 * (depth-first, left child first) made nodes 2k + 1 and 2k + 2. So an inner node's place in the
 * layout, its rank in depth-first order, is (left - 1) / 2 with no walk over the tree. Leaves get
 * their runs of records in the order of their parents' build indices, each parent's left child
 * first (the order of the serial flattening this replaces: same bytes). The flattening is two
 * passes over the inner build nodes as parents, in chunks of FLAT_GRAIN on the pool: what each
 * chunk's leaf children hold (and the chunk's share of the depth and the SAH cost); then, from
 * where the chunk's first run starts, the layout nodes and the leaf records. */
#define FLAT_GRAIN 16384

typedef struct flat_part {
    uint64_t tris; /* records in the chunk's leaves; after pass 0, where the first goes */
    uint32_t leaves, max_leaf, depth;
    double   sah; /* the chunk's terms, summed in node order */
} flat_part;

typedef struct flat_job {
    const bk_geom *g;
    const bnode   *nodes;
    const pref    *p;
    flat_part     *part; /* one per chunk */
    bk_bvh_node   *ln;
    bk_f4         *tris;
    double         root_area;
    float          cost_node;
    int            pass;
} flat_job;

static void leaf_records(const flat_job *J, const bnode *lf, uint32_t at)
{
    bk_f4 *q = &J->tris[3 * (size_t)at];
    for (uint32_t k = 0; k < lf->count; ++k, q += 3) {
        bk_geom_record(J->g, J->p[lf->first + k].id, q);
        q[0].w = bk_bits_float(bk_float_bits(q[0].w) | (k + 1 == lf->count ? BK_TRI_LAST : 0u));
    }
}

static void flat_chunk(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const flat_job *J = (const flat_job *)ctx;
    const bnode    *nodes = J->nodes;
    flat_part      *P = &J->part[b / FLAT_GRAIN];
    if (J->pass == 0) {
        flat_part q;
        memset(&q, 0, sizeof q);
        for (size_t i = b; i < e; ++i) {
            const bnode *bn = &nodes[i];
            if (bn->left < 0) continue;
            if (bn->depth + 1 > q.depth) q.depth = bn->depth + 1;
            q.sah += box_area(&bn->b) / J->root_area * J->cost_node;
            for (int c = 0; c < 2; ++c) {
                const bnode *lf = &nodes[bn->left + c];
                if (lf->left >= 0) continue;
                q.tris += lf->count;
                q.leaves++;
                if (lf->count > q.max_leaf) q.max_leaf = lf->count;
                q.sah += box_area(&lf->b) / J->root_area * lf->count;
            }
        }
        *P = q;
        return;
    }
    uint32_t at = (uint32_t)P->tris;
    for (size_t i = b; i < e; ++i) {
        const bnode *bn = &nodes[i];
        if (bn->left < 0) continue;
        const uint32_t l = (uint32_t)bn->left;
        /* depth-first: an inner left child follows its parent (checks the numbering) */
        BK_CHECK((l & 1u) && (nodes[l].left < 0 || (uint32_t)nodes[l].left == l + 2));
        bk_bvh_node *dst = &J->ln[(l - 1) / 2];
        for (int c = 0; c < 2; ++c) {
            const bnode *ch = &nodes[l + c];
            int32_t      ref;
            if (ch->left >= 0) {
                ref = (ch->left - 1) / 2;
            } else {
                ref = ~(int32_t)at;
                leaf_records(J, ch, at);
                at += ch->count;
            }
            set_child(dst, c, &ch->b, ref);
        }
        dst->refs.z = 0.0f;
        dst->refs.w = 0.0f;
    }
}

/* ---- entry point: one function per stage (enum bk_build_stage) on the build's state --------- */

typedef struct bvh_build {
    const bk_scene *s;
    bk_build_opts   o;
    bk_geom         g;
    uint32_t        n;          /* primitives: triangles, then voxel segments */
    size_t          n1, chunks; /* max(n, 1) and its chunks of BIN_GRAIN */
    uint32_t        sub_max;    /* subtrees this small are tasks */
    pref           *p;
    box            *part_box;
    pend           *part_pend;
    bins           *part;
    box             root;
    pend            rp;  /* the root's pend record */
    bnode          *top; /* the top nodes, top_count of them */
    uint32_t        top_count;
    sub            *subs;
    uint32_t        nsub;
    bnode          *sub_nodes;
    uint32_t       *sorted;
    sub_key        *keys;
    uint32_t       *map;
    bnode          *nodes; /* all build nodes, in the serial depth-first numbering */
    uint32_t        node_count;
    flat_part      *fpart;
    bk_bvh_node    *ln; /* the layout: layout_count nodes, and n leaf records in tris */
    bk_f4          *tris;
    uint32_t        layout_count, leaves, max_leaf, depth;
    double          sah;
} bvh_build;

/* Primitive records, their bounds and the root; the buffers of the top levels. */
static int bvh_prep(bvh_build *S)
{
    const uint32_t n = S->n;
    if (S->o.max_depth > BK_MAX_DEPTH || S->o.max_depth < 1) S->o.max_depth = BK_MAX_DEPTH;
    if (S->o.max_leaf < 1) S->o.max_leaf = 1;

    const size_t n1 = n ? n : 1, chunks = (n1 - 1) / BIN_GRAIN + 1;
    S->n1 = n1;
    S->chunks = chunks;
    uint32_t sub_max = n / SUB_DIV > SUB_MIN ? n / SUB_DIV : SUB_MIN;
    if (sub_max < BIN_GRAIN) { /* see the top of the file: same tree for any value up to BIN_GRAIN */
        const uint32_t want = n / (4u * (uint32_t)bk_pool_threads());
        if (want > sub_max) sub_max = want < BIN_GRAIN ? want : BIN_GRAIN;
    }
    S->sub_max = sub_max;
    S->p = malloc(sizeof(pref) * n1);
    S->part_box = malloc(sizeof(box) * chunks);
    S->part_pend = malloc(sizeof(pend) * chunks);
    S->part = malloc(sizeof(bins) * chunks);
    S->top = malloc(sizeof(bnode) * 2 * n1);
    S->subs = malloc(sizeof(sub) * n1);
    if (!S->p || !S->part_box || !S->part_pend || !S->part || !S->top || !S->subs) return -1;

    prep_job PJ;
    PJ.g = &S->g;
    PJ.p = S->p;
    PJ.part_box = S->part_box;
    PJ.part_pend = S->part_pend;
    bk_parallel_for(n, BIN_GRAIN, prep_chunk, &PJ);
    box  root = box_empty();
    pend rp;
    pend_reset(&rp);
    for (size_t c = 0; n && c < chunks; ++c) {
        box_grow(&root, &S->part_box[c]);
        pend_merge(&rp, &S->part_pend[c]);
    }
    rp.ni = 0;
    S->top[0].b = root;
    S->top[0].left = -1;
    S->top[0].first = 0;
    S->top[0].count = n;
    S->top[0].depth = 0;
    S->root = root;
    S->rp = rp;
    return 0;
}

/* Top levels; the root always splits when it can, so the layout's root is an inner node. */
static int bvh_top(bvh_build *S)
{
    builder T;
    memset(&T, 0, sizeof T);
    T.o = &S->o;
    T.p = S->p;
    T.tri_count = S->s->tri_count;
    T.nodes = S->top;
    T.node_count = 1;
    T.part = S->part;
    T.part_cap = S->chunks;
    /* the parallel partition only where a node has several chunks (never for the small scenes) */
    if (S->n > BIN_GRAIN) {
        T.tmp = malloc(sizeof(pref) * S->n1);
        T.part_n = malloc(sizeof(uint32_t) * S->chunks);
        T.part_lr = malloc(sizeof(pend) * 2 * S->chunks);
        if (!T.tmp || !T.part_n || !T.part_lr) {
            free(T.tmp);
            free(T.part_n);
            free(T.part_lr);
            return -1;
        }
    }
    bins scr;
    bins_clear(&scr);
    T.scr = &scr;
    S->nsub = 0;
    build_dfs(&T, &S->rp, 1, S->sub_max, S->subs, &S->nsub);
    free(T.tmp);
    free(T.part_n);
    free(T.part_lr);
    S->top_count = T.node_count;
    return 0;
}

/* Subtrees: 2 count - 1 nodes at most each. */
static int bvh_subtrees(bvh_build *S)
{
    const uint32_t nsub = S->nsub;
    sub           *subs = S->subs;
    const bnode   *top = S->top;
    size_t         sub_total = 0;
    for (uint32_t i = 0; i < nsub; ++i) {
        subs[i].off = sub_total;
        sub_total += 2 * (size_t)top[subs[i].root.ni].count;
    }
    S->sub_nodes = malloc(sizeof(bnode) * (sub_total ? sub_total : 1));
    S->sorted = malloc(sizeof(uint32_t) * (nsub ? nsub : 1));
    S->keys = malloc(sizeof(sub_key) * (nsub ? nsub : 1));
    if (!S->sub_nodes || !S->sorted || !S->keys) return -1;
    sub_key *keys = S->keys;
    for (uint32_t i = 0; i < nsub; ++i) {
        keys[i].count = top[subs[i].root.ni].count;
        keys[i].order = i;
    }
    qsort(keys, nsub, sizeof *keys, cmp_sub_key);
    for (uint32_t i = 0; i < nsub; ++i) S->sorted[i] = keys[i].order;
    build_ctx C;
    C.o = &S->o;
    C.p = S->p;
    C.tri_count = S->s->tri_count;
    C.top = S->top;
    C.sub_nodes = S->sub_nodes;
    C.subs = subs;
    C.sorted = S->sorted;
    bk_parallel_for(nsub, 1, sub_task, &C);
    return 0;
}

/* Renumber into the serial depth-first numbering: a task's nodes follow the top nodes made
 * before it was cut off and the tasks cut off before it. */
static int bvh_join(bvh_build *S)
{
    const uint32_t nsub = S->nsub, top_count = S->top_count;
    sub           *subs = S->subs;
    S->map = malloc(sizeof(uint32_t) * top_count);
    if (!S->map) return -1;
    uint32_t *map = S->map;
    uint32_t  acc = 0, si = 0;
    for (uint32_t i = 0; i < top_count; ++i) {
        for (; si < nsub && subs[si].at <= i; ++si) {
            subs[si].base = subs[si].at + acc;
            acc += subs[si].count - 1;
        }
        map[i] = i + acc;
    }
    for (; si < nsub; ++si) {
        subs[si].base = subs[si].at + acc;
        acc += subs[si].count - 1;
    }
    const uint32_t node_count = top_count + acc;
    S->node_count = node_count;
    S->nodes = malloc(sizeof(bnode) * node_count);
    if (!S->nodes) return -1;
    for (uint32_t i = 0; i < top_count; ++i) {
        bnode b = S->top[i];
        if (b.left >= 0) b.left = (int32_t)map[b.left];
        S->nodes[map[i]] = b;
    }
    renum_job RN = { subs, S->sub_nodes, map, S->nodes };
    bk_parallel_for(nsub, 1, renum_task, &RN);
    free(S->sub_nodes);
    S->sub_nodes = NULL;
    free(S->top);
    S->top = NULL;
    free(S->map);
    S->map = NULL;
    return 0;
}

/* Flatten (see flat_chunk): a binary tree of node_count nodes has (node_count - 1) / 2 inner
 * ones; a root that is a leaf (one primitive or none) becomes both children of one layout node. */
static int bvh_flatten(bvh_build *S)
{
    const uint32_t node_count = S->node_count;
    const bnode   *nodes = S->nodes;
    const uint32_t inner = (node_count - 1) / 2, layout_count = inner ? inner : 1;
    const size_t   fchunks = ((size_t)node_count - 1) / FLAT_GRAIN + 1;
    S->fpart = malloc(sizeof(flat_part) * fchunks);
    /* 64-byte aligned: one node is exactly one cache line */
    S->ln = aligned_alloc(64, sizeof(bk_bvh_node) * layout_count);
    S->tris = aligned_alloc(64, (sizeof(bk_f4) * 3 * S->n1 + 63) / 64 * 64);
    if (!S->fpart || !S->ln || !S->tris) return -1;
    flat_part   *fpart = S->fpart;
    bk_bvh_node *ln = S->ln;
    flat_job     FJ;
    FJ.g = &S->g;
    FJ.nodes = nodes;
    FJ.p = S->p;
    FJ.part = fpart;
    FJ.ln = ln;
    FJ.tris = S->tris;
    FJ.root_area = box_area(&S->root) > 0 ? box_area(&S->root) : 1.0;
    FJ.cost_node = S->o.cost_node;
    uint64_t tri_next = 0;
    uint32_t leaves = 0, max_leaf = 0, depth = 0;
    double   sah = 0.0;
    if (!inner) {
        leaves = 1;
        max_leaf = nodes[0].count;
        depth = 1;
        tri_next = nodes[0].count;
        sah = box_area(&nodes[0].b) / FJ.root_area * nodes[0].count;
        leaf_records(&FJ, &nodes[0], 0);
        set_child(&ln[0], 0, &S->root, ~0);
        set_child(&ln[0], 1, &S->root, ~0);
        ln[0].refs.z = 0.0f;
        ln[0].refs.w = 0.0f;
    } else {
        FJ.pass = 0;
        bk_parallel_for(node_count, FLAT_GRAIN, flat_chunk, &FJ);
        for (size_t c = 0; c < fchunks; ++c) {
            const uint64_t t = fpart[c].tris;
            fpart[c].tris = tri_next;
            tri_next += t;
            leaves += fpart[c].leaves;
            if (fpart[c].max_leaf > max_leaf) max_leaf = fpart[c].max_leaf;
            if (fpart[c].depth > depth) depth = fpart[c].depth;
            sah += fpart[c].sah;
        }
        FJ.pass = 1;
        bk_parallel_for(node_count, FLAT_GRAIN, flat_chunk, &FJ);
    }
    BK_CHECK(tri_next == S->n && leaves == node_count - inner);
    S->layout_count = layout_count;
    S->leaves = leaves;
    S->max_leaf = max_leaf;
    S->depth = depth;
    S->sah = sah;
    return 0;
}

/* Everything but the layout (ln, tris), which goes to the accel. */
static void bvh_build_free(bvh_build *S)
{
    free(S->fpart);
    free(S->nodes);
    free(S->p);
    free(S->part_box);
    free(S->part_pend);
    free(S->part);
    free(S->top);
    free(S->subs);
    free(S->sub_nodes);
    free(S->sorted);
    free(S->keys);
    free(S->map);
    bk_geom_free(&S->g);
    S->fpart = NULL;
    S->nodes = NULL;
    S->p = NULL;
    S->part_box = NULL;
    S->part_pend = NULL;
    S->part = NULL;
    S->top = NULL;
    S->subs = NULL;
    S->sub_nodes = NULL;
    S->sorted = NULL;
    S->keys = NULL;
    S->map = NULL;
}

/* The layout and the report into out, with the voxel models' bricks. 0, or -1 with err. */
static int bvh_output(bvh_build *S, bk_accel *out, char *err, size_t err_size)
{
    const uint32_t n = S->n, next = S->layout_count;
    out->type = BK_ACCEL_BVH;
    if (bk_vox_pack_build(S->s, &out->vox, err, err_size)) {
        free(S->ln);
        free(S->tris);
        return -1;
    }
    out->bvh_nodes = S->ln;
    out->bvh_node_count = next;
    out->tris = S->tris;
    out->tri_count = n;
    out->lo = bk_v3(S->root.lo[0], S->root.lo[1], S->root.lo[2]);
    out->hi = bk_v3(S->root.hi[0], S->root.hi[1], S->root.hi[2]);
    out->info.nodes = next;
    out->info.leaves = S->leaves;
    out->info.depth = S->depth;
    out->info.refs = n;
    out->info.max_leaf = S->max_leaf;
    out->info.sah_cost = S->sah;
    out->info.bytes = sizeof(bk_bvh_node) * (size_t)next + sizeof(bk_f4) * 3 * (size_t)n + bk_vox_pack_bytes(&out->vox);
    return 0;
}

int bk_bvh_build(const bk_scene *s, const bk_build_opts *opts, bk_accel *out, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    memset(out, 0, sizeof *out);
    bvh_build S;
    memset(&S, 0, sizeof S);
    if (bk_geom_init(&S.g, s, err, err_size)) return -1;
    S.s = s;
    S.n = S.g.count;
    S.o = *opts;
    double st[BK_BUILD_STAGES] = { 0 }, ts = t0;
#define STAGE_END(k)                 \
    do {                             \
        double now_ = bk_time_now(); \
        st[k] = now_ - ts;           \
        ts = now_;                   \
    } while (0)
    if (bvh_prep(&S)) goto oom;
    STAGE_END(BK_BUILD_PREP);
    if (bvh_top(&S)) goto oom;
    STAGE_END(BK_BUILD_TOP);
    if (bvh_subtrees(&S)) goto oom;
    STAGE_END(BK_BUILD_SUBTREES);
    if (bvh_join(&S)) goto oom;
    STAGE_END(BK_BUILD_JOIN);
    if (bvh_flatten(&S)) goto oom;
    bvh_build_free(&S);
    STAGE_END(BK_BUILD_FLATTEN);
#undef STAGE_END
    if (bvh_output(&S, out, err, err_size)) return -1;
    memcpy(out->info.stage_seconds, st, sizeof st);
    out->info.seconds = bk_time_now() - t0;
    return 0;

oom:
    free(S.ln);
    free(S.tris);
    bvh_build_free(&S);
    return bk_fail(err, err_size, "out of memory building the BVH (%u primitives)", S.n);
}
