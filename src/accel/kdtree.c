/* kdtree.c - SAH KD-tree builder: bk_scene -> bk_accel (type BK_ACCEL_KDTREE).
 *
 * Pipeline: scene -> triangle boxes -> top-down SAH splits -> bk_kd_node array (depth-first, pbrt's
 * KdAccelNode layout, kernels/bk_accel.h) + per-leaf triangle references; bk_kd_trace() in
 * kernels/bk_traverse.h walks it.
 *
 * Split search: src/accel/kd_split.c (where a node splits; kd_split_internal.h).
 *
 * Classification uses the triangle's bounding box clipped to the cell: below when min <= p, above
 * when max >= p. A box that touches the plane goes to both sides, which the traversal relies on (a
 * ray lying in the plane visits one side only). With box clipping, a triangle is in a leaf exactly
 * when its box overlaps the leaf cell (closed boxes); the unit test checks that property.
 *
 * Robustness margin: the exact sweep's candidates are each box's min and max (touching: both sides)
 * and min - margin, max + margin (one side only), so a split can cut empty space off or separate
 * axis-aligned walls without duplicating them; margin is 2^-20 of the axis' coordinate magnitude
 * (8 ulps), and no child cell may be thinner than it. A ray computes plane distances to about an
 * ulp: planes one float away from a planar wall made cells that rays entering the scene through the
 * wall skipped (hits lost), and ulp-sized cells around tiny geometry were crossed out of order.
 *
 * Termination (pbrt-v3 KdTreeAccel): one triangle; depth min(max_depth, round(8 + 1.3 log2 N));
 * split cost >= leaf cost counts as a bad refine, three along a path make a leaf; a split that
 * keeps every triangle on both sides; and a memory bound: each subtree gets a reference allowance
 * (root: kd_max_refs_per_tri * N) which a split shares between its children in proportion to their
 * counts, so the total never exceeds the root's allowance and no part of the tree starves another.
 *
 * Work: an explicit task stack (no recursion). The clipped boxes of the pending nodes live in one
 * arena used as a stack: a node's entries are on top, a split writes the above list in place and
 * the below list after it, so the below child (next node in depth-first order) is on top again.
 * Below a certain size (a fixed share of the triangle count), subtrees are independent tasks built
 * on the host pool (pool.h) into their own arrays, then spliced into the depth-first layout; the
 * top tree above them is built on the pool too, its largest nodes level by level in chunks, the
 * rest in depth-first parts (build_top). The preparation (records, boxes, bounds) and the splice
 * run on the pool too. The result does not depend on the thread count (tests/unit_build_threads.c).
 */
#include "kdtree.h"
#include "geom.h"
#include "kd_split_internal.h"
#include "pool.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KD_BAD_REFINES 3           /* pbrt: splits costlier than a leaf allowed along one path */
#define KD_MAX_TRIS    0x3FFFFFFFu /* a leaf count and a node index have 30 bits */

/* A node waiting to be built: its entries are arena[off, off + n). */
typedef struct kd_task {
    size_t   off;
    uint32_t n;
    uint32_t parent; /* inner node whose above child this is; BK_NONE for a below child or a root */
    float    lo[3], hi[3];
    int      depth, bad;
    double   cap; /* references this subtree's leaves may hold */
} kd_task;

typedef struct kd_params {
    float    cost_node, bonus;
    int      max_depth;
    float    margin[3]; /* per axis: no cell thinner, no candidate plane this close to a box it misses */
    uint32_t par_min;   /* subtrees of at most this many entries become parallel tasks (0: none) */
    uint32_t top_local; /* top-tree nodes of at most this many entries are built depth-first (build_top) */
    int      search;    /* enum bk_kd_search */
} kd_params;

/* A subtree handed to a worker: its entries (copied out of the arena) and where it hangs. */
typedef struct kd_sub {
    kd_task    task;
    bk_kd_ref *entries;
    uint32_t   placeholder; /* node index in the top tree */
    /* results */
    bk_kd_node *nodes;
    uint32_t    node_count;
    uint32_t   *refs;
    uint32_t    ref_count;
    double      sah;
    uint32_t    leaves, depth, max_leaf;
    int         failed;
} kd_sub;

/* One builder: the top tree or one subtree. */
typedef struct kd_builder {
    const kd_params *prm;
    bk_kd_ref       *arena;
    size_t           arena_cap;
    bk_kd_ref       *scratch;
    size_t           scratch_cap;
    bk_kd_node      *nodes;
    size_t           node_count, node_cap;
    uint32_t        *refs;
    size_t           ref_count, ref_cap;
    double           sah; /* sum of area(node) * cost, unnormalised */
    uint32_t         leaves, depth, max_leaf;
    kd_sub          *subs;
    size_t           sub_count, sub_cap; /* top tree only */
} kd_builder;

/* ---- small helpers ------------------------------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need) c += c / 2 + 64;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static double cell_area(const float lo[3], const float hi[3])
{
    double dx = (double)hi[0] - lo[0], dy = (double)hi[1] - lo[1], dz = (double)hi[2] - lo[2];
    return 2.0 * (dx * dy + dy * dz + dz * dx);
}

/* ---- building ------------------------------------------------------------------------------ */

static int emit_node(kd_builder *b, bk_kd_node nd, uint32_t *index)
{
    if (b->node_count >= KD_MAX_TRIS) return -1;
    if (grow((void **)&b->nodes, &b->node_cap, b->node_count + 1, sizeof(bk_kd_node))) return -1;
    *index = (uint32_t)b->node_count;
    b->nodes[b->node_count++] = nd;
    return 0;
}

/* A leaf of the task's n entries e. */
static int emit_leaf(kd_builder *b, const kd_task *t, const bk_kd_ref *e)
{
    uint32_t idx;
    if (b->ref_count + t->n > 0xFFFFFFFFu) return -1;
    if (grow((void **)&b->refs, &b->ref_cap, b->ref_count + t->n, sizeof(uint32_t))) return -1;
    if (emit_node(b, bk_kd_make_leaf(t->n, (uint32_t)b->ref_count), &idx)) return -1;
    for (uint32_t i = 0; i < t->n; ++i) b->refs[b->ref_count + i] = e[i].tri;
    b->ref_count += t->n;
    b->leaves++;
    if ((uint32_t)t->depth > b->depth) b->depth = (uint32_t)t->depth;
    if (t->n > b->max_leaf) b->max_leaf = t->n;
    b->sah += cell_area(t->lo, t->hi) * (double)t->n;
    return 0;
}

/* Hands the task's subtree to a worker, with its entries e (malloc'd: the sub owns them from
 * here, also on failure): a placeholder node now, the subtree spliced in later. */
static int emit_sub(kd_builder *b, const kd_task *t, bk_kd_ref *e)
{
    if (grow((void **)&b->subs, &b->sub_cap, b->sub_count + 1, sizeof(kd_sub))) {
        free(e);
        return -1;
    }
    kd_sub *s = &b->subs[b->sub_count];
    memset(s, 0, sizeof *s);
    s->entries = e;
    s->task = *t;
    s->task.off = 0;
    s->task.parent = BK_NONE;
    b->sub_count++; /* builder_free frees the entries from here on */
    if (emit_node(b, bk_kd_make_leaf(0, 0), &s->placeholder)) return -1;
    return 0;
}

/* A node of a part of the top tree built depth-first (build() with ops): recorded, to be emitted
 * in this order later (build_top). */
typedef struct kd_op {
    int        kind; /* KD_TOP_INNER, _LEAF or _SUB */
    int        axis; /* inner */
    float      pos;
    uint32_t   above; /* inner: the op of its above child */
    kd_task    t;
    bk_kd_ref *e; /* leaf, sub: its entries (malloc'd) */
} kd_op;

typedef struct kd_ops {
    kd_op *op;
    size_t count, cap;
} kd_ops;

enum { KD_TOP_SEARCH, KD_TOP_INNER, KD_TOP_LEAF, KD_TOP_SUB, KD_TOP_LOCAL };

/* Records a node; a leaf or a sub gets a copy of its entries e. */
static int op_add(kd_ops *o, int kind, const kd_task *t, const bk_kd_ref *e, int axis, float pos, uint32_t *index)
{
    if (grow((void **)&o->op, &o->cap, o->count + 1, sizeof(kd_op))) return -1;
    kd_op *x = &o->op[o->count];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->axis = axis;
    x->pos = pos;
    x->t = *t;
    if (kind != KD_TOP_INNER) {
        x->e = malloc((t->n ? t->n : 1) * sizeof(bk_kd_ref));
        if (!x->e) return -1;
        memcpy(x->e, e, (size_t)t->n * sizeof(bk_kd_ref));
        x->t.off = 0;
        x->t.parent = BK_NONE;
    }
    *index = (uint32_t)o->count++;
    return 0;
}

/* Builds the subtree of `root` (entries already at arena[root.off, +n), on top). Returns 0 or -1
 * (out of memory). With ops (a part of the top tree), the nodes are recorded there instead of
 * emitted, and subtrees of at most par_min entries are cut off as sub ops. */
static int build(kd_builder *b, const kd_task *root, kd_ops *ops)
{
    const kd_params *prm = b->prm;
    kd_task          stack[BK_MAX_DEPTH + 2];
    int              sp = 0;
    stack[sp++] = *root;
    while (sp > 0) {
        kd_task  t = stack[--sp];
        uint32_t idx;
        if (t.parent != BK_NONE) {
            if (ops) ops->op[t.parent].above = (uint32_t)ops->count;
            else b->nodes[t.parent].flags |= (uint32_t)b->node_count << 2;
        }
        if (ops && t.n <= prm->par_min && t.n > 1 && t.depth < prm->max_depth) {
            if (op_add(ops, KD_TOP_SUB, &t, b->arena + t.off, -1, 0.0f, &idx)) return -1;
            continue;
        }
        bk_kd_ref  *e = b->arena + t.off;
        double      area = cell_area(t.lo, t.hi);
        bk_kd_split best;
        best.axis = -1;
        best.pos = 0.0f;
        best.cost = BK_INF;
        best.counted = 0;
        if (t.n > 1 && t.depth < prm->max_depth && area > 0.0) {
            bk_kd_sah c;
            c.inv_area = 1.0 / area;
            c.cost_node = prm->cost_node;
            c.bonus = prm->bonus;
            for (int k = 0; k < 3; ++k) c.e[k] = (double)t.hi[k] - t.lo[k];
            const float *m = prm->margin;
            if (t.n > BK_KD_EXACT_MAX) bk_kd_split_binned(e, t.n, t.lo, t.hi, m, &c, &best, prm->search);
            else if (prm->search == BK_KD_SEARCH_REF) bk_kd_split_sweep(e, t.n, t.lo, t.hi, m, &c, &best);
            else bk_kd_split_exact(e, t.n, t.lo, t.hi, m, &c, &best, prm->search);
            double leaf_cost = (double)t.n;
            if (best.axis >= 0 && best.cost >= leaf_cost) t.bad++;
            if (best.axis >= 0 && ((best.cost > 4.0 * leaf_cost && t.n < 16) || t.bad >= KD_BAD_REFINES))
                best.axis = -1;
        }
        uint32_t nb = 0, na = 0;
        if (best.axis >= 0) {
            const int   k = best.axis;
            const float p = best.pos;
            if (best.counted) {
                nb = best.nb;
                na = best.na;
            } else
                for (uint32_t i = 0; i < t.n; ++i) {
                    nb += e[i].lo[k] <= p;
                    na += e[i].hi[k] >= p;
                }
            if ((nb == t.n && na == t.n) || (double)nb + (double)na > t.cap) best.axis = -1;
        }
        if (best.axis < 0) {
            if (ops ? op_add(ops, KD_TOP_LEAF, &t, b->arena + t.off, -1, 0.0f, &idx)
                    : emit_leaf(b, &t, b->arena + t.off))
                return -1;
            continue;
        }
        /* Inner node: above list in place, below list after it (on top of the arena). */
        const int   k = best.axis;
        const float p = best.pos;
        if (grow((void **)&b->arena, &b->arena_cap, t.off + (size_t)nb + na, sizeof(bk_kd_ref))) return -1;
        if (grow((void **)&b->scratch, &b->scratch_cap, nb, sizeof(bk_kd_ref))) return -1;
        e = b->arena + t.off;
        uint32_t   ib = 0, ia = 0;
        bk_kd_ref *sc = b->scratch;
        for (uint32_t i = 0; i < t.n; ++i) {
            /* read the two coordinates first: e[ia] may be e[i] */
            const float rl = e[i].lo[k], rh = e[i].hi[k];
            if (rl <= p) {
                sc[ib] = e[i];
                sc[ib].hi[k] = rh > p ? p : rh;
                ib++;
            }
            if (rh >= p) {
                if (ia != i) e[ia] = e[i];
                e[ia].lo[k] = rl < p ? p : rl;
                ia++;
            }
        }
        /* nb is 0 when the split cuts off empty space below; a worker's first such split finds
         * scratch never allocated (NULL), and memcpy from NULL is undefined even for 0 bytes. */
        if (nb) memcpy(e + na, b->scratch, (size_t)nb * sizeof(bk_kd_ref));
        if (ops) {
            if (op_add(ops, KD_TOP_INNER, &t, NULL, k, p, &idx)) return -1;
        } else {
            if (emit_node(b, bk_kd_make_inner(k, p, 0), &idx)) return -1;
            b->sah += area * prm->cost_node;
        }
        double  sum = (double)nb + (double)na;
        kd_task ab = t, be = t;
        ab.off = t.off;
        ab.n = na;
        ab.parent = idx;
        ab.lo[k] = p;
        ab.depth = t.depth + 1;
        ab.cap = t.cap * ((double)na / sum);
        be.off = t.off + na;
        be.n = nb;
        be.parent = BK_NONE;
        be.hi[k] = p;
        be.depth = t.depth + 1;
        be.cap = t.cap * ((double)nb / sum);
        BK_CHECK(sp + 2 <= BK_MAX_DEPTH + 2);
        stack[sp++] = ab;
        stack[sp++] = be;
    }
    return 0;
}

static void builder_free(kd_builder *b)
{
    free(b->arena);
    free(b->scratch);
    free(b->nodes);
    free(b->refs);
    for (size_t i = 0; i < b->sub_count; ++i) {
        free(b->subs[i].entries);
        free(b->subs[i].nodes);
        free(b->subs[i].refs);
    }
    free(b->subs);
    memset(b, 0, sizeof *b);
}

/* ---- the top tree -------------------------------------------------------------------------- */

/* The top tree (the nodes of more than par_min entries) is built in two parts, each on the pool:
 *   - the nodes of more than top_local entries, level by level: the nodes of a level count their
 *     events, pick their planes, count their sides and partition their entries in chunks of
 *     KD_TOP_GRAIN entries, the chunks of all the level's nodes side by side. Counts are integers,
 *     summed in chunk order: each node finds the plane the serial build finds. A level's nodes
 *     have their entries in one buffer, each chunk writing its below and above entries after those
 *     of the chunks before it (a stable partition: the order the serial build gives them);
 *   - the nodes below that, each a task that builds its part of the top tree depth-first with
 *     build(), its nodes recorded as ops rather than emitted. Level by level, every level streams
 *     through memory three times, where depth-first a node's entries are still in cache from its
 *     parent's partition: on one thread, dragon_vrip's top tree took 0.13 s level by level down to
 *     8 par_min, 0.10 s depth-first. So there are about four parts per thread, and one thread
 *     builds the whole top tree as one part.
 * A child of at most par_min entries becomes a subtree task (kd_sub) with its entries, as in the
 * serial build. The nodes are then emitted in depth-first order, as build() emits them (a part's
 * ops in their order), so the numbering, the references and the SAH sum are those of one serial
 * build whatever the thread count (which only moves the line between the two parts). */
#define KD_TOP_GRAIN 8192

typedef struct kd_tnode {
    kd_task    t;     /* off unused; parent: the parent's tnode for an above child, else BK_NONE */
    bk_kd_ref *e;     /* its t.n entries */
    int        owned; /* e is its own (malloc'd); else a part of the level's buffer */
    size_t     e_cap; /* entries e has room for */
    int        kind;
    uint32_t   below, above; /* an inner node's children (tnodes) */
    uint32_t   idx;          /* an inner node's index once emitted */
    kd_ops     ops;          /* KD_TOP_LOCAL: its part of the tree, built depth-first */
    int        failed;
    /* while its level is built */
    bk_kd_bins  bins;
    bk_kd_split best;
    uint32_t    chunk0, chunks;
    bk_kd_ref  *eb, *ea; /* the children's entries */
} kd_tnode;

typedef struct kd_tchunk {
    uint32_t node, begin, end;
    uint32_t nb, na; /* its entries below and above the plane */
    uint32_t ob, oa; /* where they go in the children's buffers */
} kd_tchunk;

typedef struct kd_top_job {
    const kd_params *prm;
    kd_tnode        *tn;
    const uint32_t  *level; /* the level's tnodes */
    kd_tchunk       *ch;
    bk_kd_hist      *hist; /* one per chunk */
    int              phase;
} kd_top_job;

/* phase 1, one node at a time: the plane, from its chunks' histograms */
static void top_pick(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const kd_top_job *J = (const kd_top_job *)ctx;
    const kd_params  *prm = J->prm;
    for (size_t i = begin; i < end; ++i) {
        kd_tnode *T = &J->tn[J->level[i]];
        if (T->kind != KD_TOP_SEARCH) continue;
        kd_task   *t = &T->t;
        bk_kd_hist h;
        bk_kd_hist_clear(&h, T->bins.nbins);
        for (uint32_t c = T->chunk0; c < T->chunk0 + T->chunks; ++c)
            for (int k = 0; k < 3; ++k)
                for (int j = 0; j < T->bins.nbins; ++j) {
                    h.minc[k][j] += J->hist[c].minc[k][j];
                    h.maxc[k][j] += J->hist[c].maxc[k][j];
                }
        bk_kd_sah c;
        c.inv_area = 1.0 / cell_area(t->lo, t->hi);
        c.cost_node = prm->cost_node;
        c.bonus = prm->bonus;
        for (int k = 0; k < 3; ++k) c.e[k] = (double)t->hi[k] - t->lo[k];
        bk_kd_split best;
        best.axis = -1;
        best.pos = 0.0f;
        best.cost = BK_INF;
        best.counted = 0;
        bk_kd_binned_pick(&h, t->n, t->lo, t->hi, prm->margin, &T->bins, &c, &best, prm->search);
        double leaf_cost = (double)t->n; /* build()'s rules */
        if (best.axis >= 0 && best.cost >= leaf_cost) t->bad++;
        if (best.axis >= 0 && ((best.cost > 4.0 * leaf_cost && t->n < 16) || t->bad >= KD_BAD_REFINES)) best.axis = -1;
        T->best = best;
        if (best.axis < 0) T->kind = KD_TOP_LEAF;
    }
}

/* phases 0, 2 and 3, one chunk at a time: histogram; side counts; partition */
static void top_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const kd_top_job *J = (const kd_top_job *)ctx;
    for (size_t ci = begin; ci < end; ++ci) {
        kd_tchunk       *C = &J->ch[ci];
        const kd_tnode  *T = &J->tn[C->node];
        const bk_kd_ref *e = T->e;
        if (J->phase == 0) {
            bk_kd_hist_clear(&J->hist[ci], T->bins.nbins);
            bk_kd_hist_add(&J->hist[ci], e, C->begin, C->end, T->t.lo, T->bins.scale, T->bins.nbins);
            continue;
        }
        const int   k = T->best.axis;
        const float p = T->best.pos;
        if (J->phase == 2) {
            if (T->kind != KD_TOP_SEARCH) continue;
            uint32_t nb = 0, na = 0;
            for (uint32_t i = C->begin; i < C->end; ++i) {
                nb += e[i].lo[k] <= p;
                na += e[i].hi[k] >= p;
            }
            C->nb = nb;
            C->na = na;
            continue;
        }
        if (T->kind != KD_TOP_INNER) continue;
        bk_kd_ref *eb = T->eb + C->ob, *ea = T->ea + C->oa;
        for (uint32_t i = C->begin; i < C->end; ++i) {
            const float rl = e[i].lo[k], rh = e[i].hi[k];
            if (rl <= p) {
                *eb = e[i];
                eb->hi[k] = rh > p ? p : rh;
                eb++;
            }
            if (rh >= p) {
                *ea = e[i];
                ea->lo[k] = rl < p ? p : rl;
                ea++;
            }
        }
    }
}

/* What becomes of a node of n entries at depth d: searched level by level, a part built
 * depth-first, a subtree task or a leaf. */
static int top_kind(const kd_params *prm, uint32_t n, int depth)
{
    if (n > prm->top_local) return KD_TOP_SEARCH;
    if (n > prm->par_min) return KD_TOP_LOCAL;
    if (n > 1 && depth < prm->max_depth) return KD_TOP_SUB;
    return KD_TOP_LEAF;
}

/* A new tnode for task t with entries e (if owned, freed on failure). */
static int top_add(kd_tnode **tn, size_t *count, size_t *cap, const kd_params *prm, const kd_task *t, bk_kd_ref *e,
                   int owned, uint32_t *index)
{
    if (grow((void **)tn, cap, *count + 1, sizeof(kd_tnode))) {
        if (owned) free(e);
        return -1;
    }
    kd_tnode *T = &(*tn)[*count];
    memset(T, 0, sizeof *T);
    T->t = *t;
    T->e = e;
    T->e_cap = t->n;
    T->owned = owned;
    T->kind = top_kind(prm, t->n, t->depth);
    *index = (uint32_t)(*count)++;
    return 0;
}

/* A part of the top tree, depth-first (build() with ops); its entries become build()'s arena. */
static void top_local(const kd_params *prm, kd_tnode *T)
{
    kd_builder b;
    memset(&b, 0, sizeof b);
    b.prm = prm;
    b.arena = T->e;
    b.arena_cap = T->e_cap;
    T->e = NULL;
    T->owned = 0;
    kd_task t = T->t;
    t.off = 0;
    t.parent = BK_NONE;
    T->failed = build(&b, &t, &T->ops) != 0;
    builder_free(&b);
}

/* The parts in task order: largest first, so one big part does not finish alone at the end. */
typedef struct top_key {
    uint32_t n, node;
} top_key;
static int cmp_top_key(const void *a, const void *b)
{
    const top_key *x = (const top_key *)a, *y = (const top_key *)b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return x->node < y->node ? -1 : (x->node > y->node ? 1 : 0);
}

typedef struct top_local_job {
    const kd_params *prm;
    kd_tnode        *tn;
    const top_key   *order;
} top_local_job;
static void top_local_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const top_local_job *J = (const top_local_job *)ctx;
    for (size_t i = begin; i < end; ++i) top_local(J->prm, &J->tn[J->order[i].node]);
}

/* Emits a part's ops in their order: op j becomes node base + j. */
static int top_replay(kd_builder *b, const kd_tnode *T)
{
    const uint32_t base = (uint32_t)b->node_count;
    for (size_t j = 0; j < T->ops.count; ++j) {
        kd_op   *x = &T->ops.op[j];
        uint32_t idx;
        if (x->kind == KD_TOP_INNER) {
            bk_kd_node nd = bk_kd_make_inner(x->axis, x->pos, 0);
            nd.flags |= (base + x->above) << 2;
            if (emit_node(b, nd, &idx)) return -1;
            b->sah += cell_area(x->t.lo, x->t.hi) * b->prm->cost_node;
        } else if (x->kind == KD_TOP_SUB) {
            bk_kd_ref *e = x->e;
            x->e = NULL;
            if (emit_sub(b, &x->t, e)) return -1;
        } else {
            if (emit_leaf(b, &x->t, x->e)) return -1;
            free(x->e);
            x->e = NULL;
        }
        BK_CHECK(b->node_count == (size_t)base + j + 1);
    }
    return 0;
}

/* The top tree's build state (build_top): the tnodes, the level being searched and the next, their
 * chunks and histograms, and the level buffers. */
typedef struct kd_top {
    kd_builder      *b;
    const kd_params *prm;
    bk_kd_ref       *cur, *nxt; /* the level's entries, and the next level's */
    size_t           cur_cap, nxt_cap;
    kd_tnode        *tn;
    size_t           tn_count, tn_cap;
    uint32_t        *level, *next; /* the level's tnodes (m of them) and the next level's (nm) */
    size_t           level_cap, next_cap, m, nm;
    kd_tchunk       *ch; /* the level's chunks (nch of them), one histogram each */
    size_t           ch_cap, nch;
    bk_kd_hist      *hist;
    size_t           hist_cap;
    top_key         *keys;
    uint32_t         ri; /* the root's tnode */
} kd_top;

/* The level's searching nodes and their chunks. */
static int top_level_chunks(kd_top *L)
{
    const kd_params *prm = L->prm;
    size_t           nch = 0;
    for (size_t i = 0; i < L->m; ++i) {
        kd_tnode *T = &L->tn[L->level[i]];
        if (T->kind != KD_TOP_SEARCH) continue;
        if (!(T->t.n > 1 && T->t.depth < prm->max_depth && cell_area(T->t.lo, T->t.hi) > 0.0)) {
            T->kind = KD_TOP_LEAF;
            continue;
        }
        bk_kd_binned_setup(T->t.n, T->t.lo, T->t.hi, prm->margin, &T->bins);
        T->chunk0 = (uint32_t)nch;
        T->chunks = (T->t.n - 1) / KD_TOP_GRAIN + 1;
        if (grow((void **)&L->ch, &L->ch_cap, nch + T->chunks, sizeof(kd_tchunk))) return -1;
        for (uint32_t c = 0; c < T->chunks; ++c) {
            kd_tchunk *C = &L->ch[nch++];
            memset(C, 0, sizeof *C);
            C->node = L->level[i];
            C->begin = c * KD_TOP_GRAIN;
            C->end = T->t.n - C->begin > KD_TOP_GRAIN ? C->begin + KD_TOP_GRAIN : T->t.n;
        }
    }
    L->nch = nch;
    if (grow((void **)&L->hist, &L->hist_cap, nch ? nch : 1, sizeof(bk_kd_hist))) return -1;
    return 0;
}

static kd_top_job top_job(const kd_top *L, int phase)
{
    kd_top_job J;
    J.prm = L->prm;
    J.tn = L->tn;
    J.level = L->level;
    J.ch = L->ch;
    J.hist = L->hist;
    J.phase = phase;
    return J;
}

/* The splits taken, and the room the next level's nodes take in nxt (its old contents are spent:
 * no realloc copy). */
static int top_level_sides(kd_top *L)
{
    const kd_params *prm = L->prm;
    size_t           need = 0;
    for (size_t i = 0; i < L->m; ++i) {
        kd_tnode *T = &L->tn[L->level[i]];
        if (T->kind != KD_TOP_SEARCH) continue;
        uint32_t nb = 0, na = 0;
        for (uint32_t c = T->chunk0; c < T->chunk0 + T->chunks; ++c) {
            L->ch[c].ob = nb;
            L->ch[c].oa = na;
            nb += L->ch[c].nb;
            na += L->ch[c].na;
        }
        T->best.nb = nb;
        T->best.na = na;
        if ((nb == T->t.n && na == T->t.n) || (double)nb + (double)na > T->t.cap) {
            T->kind = KD_TOP_LEAF;
            continue;
        }
        if (top_kind(prm, nb, T->t.depth + 1) == KD_TOP_SEARCH) need += nb;
        if (top_kind(prm, na, T->t.depth + 1) == KD_TOP_SEARCH) need += na;
    }
    if (need > L->nxt_cap) {
        free(L->nxt);
        L->nxt_cap = need + need / 2;
        L->nxt = malloc(L->nxt_cap * sizeof(bk_kd_ref));
        if (!L->nxt) {
            L->nxt_cap = 0;
            return -1;
        }
    }
    return 0;
}

/* The children and their buffers (tn may move: indices from here). */
static int top_level_children(kd_top *L)
{
    const kd_params *prm = L->prm;
    size_t           nm = 0, at = 0;
    for (size_t i = 0; i < L->m; ++i) {
        const uint32_t ti = L->level[i];
        if (L->tn[ti].kind != KD_TOP_SEARCH) continue;
        const uint32_t nb = L->tn[ti].best.nb, na = L->tn[ti].best.na;
        const kd_task  t = L->tn[ti].t;
        const int      k = L->tn[ti].best.axis;
        const float    p = L->tn[ti].best.pos;
        const int      own_b = top_kind(prm, nb, t.depth + 1) != KD_TOP_SEARCH,
                  own_a = top_kind(prm, na, t.depth + 1) != KD_TOP_SEARCH;
        bk_kd_ref *eb = own_b ? malloc((nb ? nb : 1) * sizeof(bk_kd_ref)) : L->nxt + at;
        at += own_b ? 0 : nb;
        bk_kd_ref *ea = own_a ? malloc((na ? na : 1) * sizeof(bk_kd_ref)) : L->nxt + at;
        at += own_a ? 0 : na;
        if (!eb || !ea) {
            if (own_b) free(eb);
            if (own_a) free(ea);
            return -1;
        }
        double  sum = (double)nb + (double)na;
        kd_task ab = t, be = t;
        ab.off = 0;
        ab.n = na;
        ab.parent = ti;
        ab.lo[k] = p;
        ab.depth = t.depth + 1;
        ab.cap = t.cap * ((double)na / sum);
        be.off = 0;
        be.n = nb;
        be.parent = BK_NONE;
        be.hi[k] = p;
        be.depth = t.depth + 1;
        be.cap = t.cap * ((double)nb / sum);
        uint32_t bi, ai;
        if (top_add(&L->tn, &L->tn_count, &L->tn_cap, prm, &be, eb, own_b, &bi)) {
            if (own_a) free(ea);
            return -1;
        }
        if (top_add(&L->tn, &L->tn_count, &L->tn_cap, prm, &ab, ea, own_a, &ai)) return -1;
        kd_tnode *T = &L->tn[ti];
        T->kind = KD_TOP_INNER;
        T->below = bi;
        T->above = ai;
        T->eb = eb;
        T->ea = ea;
        if (grow((void **)&L->next, &L->next_cap, nm + 2, sizeof(uint32_t))) return -1;
        if (L->tn[bi].kind == KD_TOP_SEARCH) L->next[nm++] = bi;
        if (L->tn[ai].kind == KD_TOP_SEARCH) L->next[nm++] = ai;
    }
    L->nm = nm;
    return 0;
}

/* The partition into the children's buffers; cur is spent then but for the leaves among the
 * level's nodes, which take their entries along. The next level becomes the current one. */
static int top_level_finish(kd_top *L)
{
    kd_top_job J = top_job(L, 3);
    bk_parallel_for(L->nch, 1, top_chunk, &J);
    for (size_t i = 0; i < L->m; ++i) {
        kd_tnode *T = &L->tn[L->level[i]];
        if (T->owned) continue;
        bk_kd_ref *le = NULL;
        if (T->kind == KD_TOP_LEAF) {
            le = malloc((T->t.n ? T->t.n : 1) * sizeof(bk_kd_ref));
            if (!le) return -1;
            memcpy(le, T->e, (size_t)T->t.n * sizeof(bk_kd_ref));
        }
        T->e = le;
        T->owned = le != NULL;
    }
    bk_kd_ref *swr = L->cur;
    L->cur = L->nxt;
    L->nxt = swr;
    size_t swc = L->cur_cap;
    L->cur_cap = L->nxt_cap;
    L->nxt_cap = swc;
    uint32_t *sw = L->level;
    L->level = L->next;
    L->next = sw;
    size_t sc = L->level_cap;
    L->level_cap = L->next_cap;
    L->next_cap = sc;
    L->m = L->nm;
    return 0;
}

/* One level of the nodes searched level by level: chunks' histograms, each node's plane, the
 * chunks' side counts (on the pool), then the children and the partition. */
static int top_level(kd_top *L)
{
    if (top_level_chunks(L)) return -1;
    kd_top_job J = top_job(L, 0);
    bk_parallel_for(L->nch, 1, top_chunk, &J);
    bk_parallel_for(L->m, 1, top_pick, &J);
    J.phase = 2;
    bk_parallel_for(L->nch, 1, top_chunk, &J);
    if (top_level_sides(L)) return -1;
    if (top_level_children(L)) return -1;
    return top_level_finish(L);
}

/* The parts below, depth-first, each a task. */
static int top_parts(kd_top *L)
{
    size_t nloc = 0;
    for (size_t i = 0; i < L->tn_count; ++i) nloc += L->tn[i].kind == KD_TOP_LOCAL;
    if (!nloc) return 0;
    L->keys = malloc(nloc * sizeof *L->keys);
    if (!L->keys) return -1;
    top_key *keys = L->keys;
    nloc = 0;
    for (size_t i = 0; i < L->tn_count; ++i)
        if (L->tn[i].kind == KD_TOP_LOCAL) {
            keys[nloc].n = L->tn[i].t.n;
            keys[nloc].node = (uint32_t)i;
            nloc++;
        }
    qsort(keys, nloc, sizeof *keys, cmp_top_key);
    top_local_job LJ;
    LJ.prm = L->prm;
    LJ.tn = L->tn;
    LJ.order = keys;
    bk_parallel_for(nloc, 1, top_local_chunk, &LJ);
    for (size_t i = 0; i < nloc; ++i)
        if (L->tn[keys[i].node].failed) return -1;
    return 0;
}

/* Depth-first emission, below child first, as build() pops its stack. */
static int top_emit(kd_top *L)
{
    kd_builder *b = L->b;
    kd_tnode   *tn = L->tn;
    uint32_t    stack[BK_MAX_DEPTH + 4];
    int         sp = 0;
    stack[sp++] = L->ri;
    while (sp) {
        kd_tnode *T = &tn[stack[--sp]];
        if (T->t.parent != BK_NONE) b->nodes[tn[T->t.parent].idx].flags |= (uint32_t)b->node_count << 2;
        if (T->kind == KD_TOP_INNER) {
            if (emit_node(b, bk_kd_make_inner(T->best.axis, T->best.pos, 0), &T->idx)) return -1;
            b->sah += cell_area(T->t.lo, T->t.hi) * L->prm->cost_node;
            BK_CHECK(sp + 2 <= BK_MAX_DEPTH + 4);
            stack[sp++] = T->above;
            stack[sp++] = T->below;
        } else if (T->kind == KD_TOP_SUB) {
            bk_kd_ref *se = T->e;
            T->e = NULL;
            if (emit_sub(b, &T->t, se)) return -1;
        } else if (T->kind == KD_TOP_LOCAL) {
            if (top_replay(b, T)) return -1;
        } else {
            if (emit_leaf(b, &T->t, T->e)) return -1;
            free(T->e);
            T->e = NULL;
        }
    }
    return 0;
}

static void top_free(kd_top *L)
{
    free(L->cur);
    free(L->nxt);
    for (size_t i = 0; i < L->tn_count; ++i) {
        if (L->tn[i].owned) free(L->tn[i].e);
        for (size_t j = 0; j < L->tn[i].ops.count; ++j) free(L->tn[i].ops.op[j].e);
        free(L->tn[i].ops.op);
    }
    free(L->tn);
    free(L->level);
    free(L->next);
    free(L->ch);
    free(L->hist);
    free(L->keys);
}

/* Builds the top tree of root, whose entries e (malloc'd; owned from here) are root->n, into b
 * (nodes, leaves' references, and b->subs for the subtree tasks). Returns 0 or -1 (out of memory).
 * The nodes searched level by level have their entries in one buffer per level (cur, then nxt for
 * the next level's, the two swapped level by level: memory already touched, where a fresh buffer
 * per node costs page faults); the other nodes' entries are their own. */
static int build_top(kd_builder *b, const kd_task *root, bk_kd_ref *e, size_t e_cap)
{
    kd_top L;
    memset(&L, 0, sizeof L);
    L.b = b;
    L.prm = b->prm;
    L.cur = e;
    L.cur_cap = e_cap;
    L.m = 1;
    int rc = -1;
    /* a root searched level by level has its entries in cur; else they are its own */
    const int root_own = top_kind(L.prm, root->n, root->depth) != KD_TOP_SEARCH;
    if (root_own) L.cur = NULL;
    if (top_add(&L.tn, &L.tn_count, &L.tn_cap, L.prm, root, e, root_own, &L.ri)) goto done;
    L.tn[L.ri].e_cap = e_cap;
    if (grow((void **)&L.level, &L.level_cap, 1, sizeof(uint32_t))) goto done;
    L.level[0] = L.ri;
    while (L.m)
        if (top_level(&L)) goto done;
    if (top_parts(&L) || top_emit(&L)) goto done;
    rc = 0;
done:
    top_free(&L);
    return rc;
}

static void build_sub(const kd_params *prm, kd_sub *s)
{
    kd_builder b;
    memset(&b, 0, sizeof b);
    b.prm = prm;
    b.arena = s->entries;
    b.arena_cap = s->task.n;
    s->entries = NULL;
    if (build(&b, &s->task, NULL)) {
        s->failed = 1;
    } else {
        s->nodes = b.nodes;
        s->node_count = (uint32_t)b.node_count;
        s->refs = b.refs;
        s->ref_count = (uint32_t)b.ref_count;
        s->sah = b.sah;
        s->leaves = b.leaves;
        s->depth = b.depth;
        s->max_leaf = b.max_leaf;
        b.nodes = NULL;
        b.refs = NULL;
    }
    builder_free(&b);
}

static void sub_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const kd_builder *top = (const kd_builder *)ctx;
    for (size_t i = begin; i < end; ++i) build_sub(top->prm, &top->subs[i]);
}

static int cmp_sub_size(const void *a, const void *b)
{
    uint32_t x = ((const kd_sub *)a)->task.n, y = ((const kd_sub *)b)->task.n;
    return x < y ? 1 : (x > y ? -1 : 0);
}
static int cmp_sub_place(const void *a, const void *b)
{
    uint32_t x = ((const kd_sub *)a)->placeholder, y = ((const kd_sub *)b)->placeholder;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* Builds every subtree on the pool (pool.h), largest first so one big subtree does not finish
 * alone at the end, then puts them back in placeholder (depth-first) order. */
static void run_subs(kd_builder *b)
{
    qsort(b->subs, b->sub_count, sizeof *b->subs, cmp_sub_size);
    bk_parallel_for(b->sub_count, 1, sub_chunk, b);
    qsort(b->subs, b->sub_count, sizeof *b->subs, cmp_sub_place);
}

/* Copies the subtrees into their places in the spliced arrays, one task each. */
typedef struct splice_job {
    const kd_builder *b;
    bk_kd_node       *nn;
    uint32_t         *rr;
    const size_t     *at, *rat;
} splice_job;
static void splice_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const splice_job *J = (const splice_job *)ctx;
    for (size_t si = begin; si < end; ++si) {
        const kd_sub *s = &J->b->subs[si];
        const size_t  o = J->at[si], ro = J->rat[si];
        for (uint32_t j = 0; j < s->node_count; ++j) {
            bk_kd_node x = s->nodes[j];
            if ((x.flags & 3u) == BK_KD_LEAF) x.data += (uint32_t)ro;
            else x.flags += (uint32_t)o << 2; /* above index shifts with the subtree */
            J->nn[o + j] = x;
        }
        if (s->ref_count) memcpy(J->rr + ro, s->refs, (size_t)s->ref_count * sizeof(uint32_t));
    }
}

/* Splices the subtrees into the top tree, in depth-first order: the places of every node and
 * reference first (one pass over the top tree), then the subtrees copied in parallel. */
static int splice(kd_builder *b, bk_kd_node **out_nodes, uint32_t *out_count, uint32_t **out_refs,
                  uint32_t *out_ref_count)
{
    size_t nodes = b->node_count - b->sub_count, refs = b->ref_count;
    for (size_t i = 0; i < b->sub_count; ++i) {
        nodes += b->subs[i].node_count;
        refs += b->subs[i].ref_count;
        b->sah += b->subs[i].sah;
        b->leaves += b->subs[i].leaves;
        if (b->subs[i].depth > b->depth) b->depth = b->subs[i].depth;
        if (b->subs[i].max_leaf > b->max_leaf) b->max_leaf = b->subs[i].max_leaf;
    }
    if (nodes > KD_MAX_TRIS || refs > 0xFFFFFFFFu) return -1;
    bk_kd_node *nn = malloc((nodes ? nodes : 1) * sizeof *nn);
    uint32_t   *rr = malloc((refs ? refs : 1) * sizeof *rr);
    uint32_t   *map = malloc((b->node_count ? b->node_count : 1) * sizeof *map); /* old top index -> new */
    size_t     *at = malloc((2 * b->sub_count + 1) * sizeof *at);                /* sub -> first node, first ref */
    if (!nn || !rr || !map || !at) {
        free(nn);
        free(rr);
        free(map);
        free(at);
        return -1;
    }
    /* Old top nodes are in depth-first order already; a placeholder expands to its subtree. */
    size_t o = 0, ro = 0, si = 0;
    for (size_t i = 0; i < b->node_count; ++i) {
        map[i] = (uint32_t)o;
        bk_kd_node nd = b->nodes[i];
        if (si < b->sub_count && b->subs[si].placeholder == i) {
            const kd_sub *s = &b->subs[si];
            at[si] = o;
            at[b->sub_count + si] = ro;
            si++;
            o += s->node_count;
            ro += s->ref_count;
        } else if ((nd.flags & 3u) == BK_KD_LEAF) {
            uint32_t count = nd.flags >> 2;
            if (count) memcpy(rr + ro, b->refs + nd.data, (size_t)count * sizeof(uint32_t));
            nd.data = (uint32_t)ro;
            ro += count;
            nn[o++] = nd;
        } else {
            nn[o++] = nd; /* above index fixed below, once map is complete */
        }
    }
    splice_job J;
    J.b = b;
    J.nn = nn;
    J.rr = rr;
    J.at = at;
    J.rat = at + b->sub_count;
    bk_parallel_for(b->sub_count, 1, splice_chunk, &J);
    for (size_t i = 0, si2 = 0; i < b->node_count; ++i) {
        if (si2 < b->sub_count && b->subs[si2].placeholder == i) {
            si2++;
            continue;
        }
        bk_kd_node nd = b->nodes[i];
        if ((nd.flags & 3u) != BK_KD_LEAF) nn[map[i]].flags = (nd.flags & 3u) | (map[nd.flags >> 2] << 2);
    }
    free(map);
    free(at);
    *out_nodes = nn;
    *out_count = (uint32_t)o;
    *out_refs = rr;
    *out_ref_count = (uint32_t)ro;
    return 0;
}

/* ---- preparation --------------------------------------------------------------------------- */

#define KD_PREP_GRAIN 16384
typedef struct prep_part {
    float    lo[3], hi[3];
    uint32_t valid;
} prep_part;
typedef struct prep_job {
    const bk_geom *g;
    uint32_t       tri_count;
    bk_f4         *tris;
    bk_kd_ref     *arena; /* arena[i]: primitive i's box, tri = BK_NONE when it cannot be hit */
    prep_part     *part;  /* one per chunk */
} prep_job;

static void prep_chunk(void *ctx, size_t b, size_t e, int worker)
{
    (void)worker;
    const prep_job *J = (const prep_job *)ctx;
    prep_part       P;
    for (int k = 0; k < 3; ++k) {
        P.lo[k] = BK_INF;
        P.hi[k] = -BK_INF;
    }
    P.valid = 0;
    for (size_t t = b; t < e; ++t) {
        const uint32_t i = (uint32_t)t;
        bk_kd_ref     *r = &J->arena[i];
        int            finite = 1;
        bk_geom_record(J->g, i, &J->tris[3 * (size_t)i]);
        bk_geom_box(J->g, i, r->lo, r->hi);
        for (int c = 0; c < 3 && i < J->tri_count; ++c) { /* a NaN vertex may not show in the box */
            const bk_f4 *q = &J->tris[3 * (size_t)i + c];
            finite &= isfinite(q->x) && isfinite(q->y) && isfinite(q->z);
        }
        r->tri = finite ? i : BK_NONE; /* NaN/inf vertices: no ray can hit it; keep it out of the tree */
        if (!finite) continue;
        for (int k = 0; k < 3; ++k) {
            P.lo[k] = bk_minf(P.lo[k], r->lo[k]);
            P.hi[k] = bk_maxf(P.hi[k], r->hi[k]);
        }
        P.valid++;
    }
    J->part[b / KD_PREP_GRAIN] = P;
}

/* ---- entry point: one function per stage (enum bk_build_stage) on the build's state --------- */

typedef struct kd_build {
    const bk_scene *s;
    bk_accel       *out;
    bk_geom         g;
    uint32_t        n; /* primitives: triangles, then voxel segments */
    kd_params       prm;
    int             refs_per_tri;
    kd_builder      b;
    float           lo[3], hi[3]; /* bounds of the primitives that can be hit */
    uint32_t        valid;        /* of them */
    kd_task         root;
} kd_build;

/* The builder's parameters from the options (those the bounds set come in kd_prep). */
static void kd_params_init(kd_build *S, const bk_build_opts *o)
{
    kd_params *prm = &S->prm;
    prm->cost_node = o->cost_node >= 0.0f ? o->cost_node : 0.0f; /* NaN -> 0 too */
    prm->bonus = o->kd_empty_bonus >= 0.0f ? (o->kd_empty_bonus <= 1.0f ? o->kd_empty_bonus : 1.0f) : 0.0f;
    prm->max_depth = o->max_depth < 0 ? 0 : (o->max_depth > BK_MAX_DEPTH ? BK_MAX_DEPTH : o->max_depth);
    S->refs_per_tri = o->kd_max_refs_per_tri < 1 ? 1 : o->kd_max_refs_per_tri;
    prm->search = bk_kd_search_default();
    if (o->kd_sweep) prm->search = BK_KD_SEARCH_REF;
}

/* Records, boxes and bounds; then the margin, the depth limit, the parallel cut and the root. */
static int kd_prep(kd_build *S)
{
    const uint32_t n = S->n;
    kd_builder    *b = &S->b;
    kd_params     *prm = &S->prm;
    bk_accel      *out = S->out;
    out->tris = malloc((size_t)n * 3 * sizeof(bk_f4));
    b->arena_cap = (size_t)n * 2;
    b->arena = malloc(b->arena_cap * sizeof(bk_kd_ref));
    if (!out->tris || !b->arena) return -1;

    /* Triangles in file order, and the boxes of those that can be hit (finite vertices): in chunks
     * on the pool, then the boxes of the others squeezed out in order. The bounds are folded chunk
     * by chunk in order, as one loop would (bk_minf keeps the later of equal values: -0, +0). */
    float *lo = S->lo, *hi = S->hi;
    for (int k = 0; k < 3; ++k) {
        lo[k] = BK_INF;
        hi[k] = -BK_INF;
    }
    uint32_t   valid = 0;
    size_t     chunks = n ? ((size_t)n - 1) / KD_PREP_GRAIN + 1 : 0;
    prep_part *pp = malloc((chunks ? chunks : 1) * sizeof *pp);
    if (!pp) return -1;
    prep_job PJ;
    PJ.g = &S->g;
    PJ.tri_count = S->s->tri_count;
    PJ.tris = out->tris;
    PJ.arena = b->arena;
    PJ.part = pp;
    bk_parallel_for(n, KD_PREP_GRAIN, prep_chunk, &PJ);
    for (size_t ch = 0; ch < chunks; ++ch) {
        for (int k = 0; k < 3; ++k) {
            lo[k] = bk_minf(lo[k], pp[ch].lo[k]);
            hi[k] = bk_maxf(hi[k], pp[ch].hi[k]);
        }
        valid += pp[ch].valid;
    }
    free(pp);
    if (valid < n) {
        uint32_t j = 0;
        for (uint32_t i = 0; i < n; ++i)
            if (b->arena[i].tri != BK_NONE) b->arena[j++] = b->arena[i];
    }
    bk_geom_free(&S->g);
    if (valid == 0)
        for (int k = 0; k < 3; ++k) lo[k] = hi[k] = 0.0f;
    S->valid = valid;

    /* Robustness margin (see the top of the file): 2^-20 of the coordinate magnitude, 8 to 16 ulps. */
    for (int k = 0; k < 3; ++k) prm->margin[k] = bk_maxf(ldexpf(bk_maxf(bk_absf(lo[k]), bk_absf(hi[k])), -20), FLT_MIN);

    /* pbrt's depth limit, under the caller's. */
    int log2n = 0;
    while (log2n < 31 && ((uint32_t)1 << (log2n + 1)) <= (valid ? valid : 1)) ++log2n;
    int auto_depth = (int)lround(8.0 + 1.3 * log2n);
    if (auto_depth < prm->max_depth) prm->max_depth = auto_depth;

    /* Parallel subtrees: enough of them to balance 16 workers, large enough to be worth a task;
     * from the triangle count only, so the cut (and the tree) is the same for any thread count. */
    prm->par_min = valid >= 4096 ? valid / 128 : 0;
    if (prm->par_min > 0 && prm->par_min < 256) prm->par_min = 256;
    /* The top tree's depth-first parts (build_top): about four per thread; one thread builds it all
     * depth-first. Any split gives the same tree, so this one may follow the thread count. */
    const int threads = bk_pool_threads();
    prm->top_local = threads == 1 ? UINT32_MAX : valid / (4u * (uint32_t)threads);
    if (prm->top_local < prm->par_min) prm->top_local = prm->par_min;

    kd_task *root = &S->root;
    root->off = 0;
    root->n = valid;
    root->parent = BK_NONE;
    root->depth = 0;
    root->bad = 0;
    for (int k = 0; k < 3; ++k) {
        root->lo[k] = lo[k];
        root->hi[k] = hi[k];
    }
    root->cap = (double)S->refs_per_tri * (double)valid;
    if (root->cap > 4294967295.0) root->cap = 4294967295.0;
    return 0;
}

/* The top tree (build_top) when there are subtree tasks, else the whole tree (build). */
static int kd_top_tree(kd_build *S)
{
    kd_builder *b = &S->b;
    if (S->prm.par_min > 0) {
        bk_kd_ref *re = b->arena; /* the top tree takes the root's entries */
        size_t     re_cap = b->arena_cap;
        b->arena = NULL;
        b->arena_cap = 0;
        return build_top(b, &S->root, re, re_cap);
    }
    return build(b, &S->root, NULL);
}

/* The subtrees spliced into the top tree. */
static int kd_join(kd_build *S)
{
    kd_builder *b = &S->b;
    bk_kd_node *nn;
    uint32_t   *rr;
    uint32_t    nc, rc;
    if (splice(b, &nn, &nc, &rr, &rc)) return -1;
    free(b->nodes);
    free(b->refs);
    b->nodes = nn;
    b->node_count = nc;
    b->refs = rr;
    b->ref_count = rc;
    return 0;
}

/* The tree, its references and the report into out, with the voxel models' bricks; frees the
 * builder. 0, or -1: out of memory (out->tris still out's, the nodes freed), or -2 with err (the
 * voxel bricks; out emptied). */
static int kd_output(kd_build *S, char *err, size_t err_size)
{
    bk_accel   *out = S->out;
    kd_builder *b = &S->b;
    out->kd_nodes = b->nodes;
    out->kd_node_count = (uint32_t)b->node_count;
    out->kd_refs = b->refs;
    out->kd_ref_count = (uint32_t)b->ref_count;
    if (!out->kd_refs) out->kd_refs = malloc(sizeof(uint32_t)); /* never NULL, even with no references */
    if (!out->kd_refs) {
        b->nodes = NULL;
        free(out->kd_nodes);
        return -1;
    }
    b->nodes = NULL;
    b->refs = NULL;
    out->tri_count = S->n;
    if (bk_vox_pack_build(S->s, &out->vox, err, err_size)) {
        free(out->kd_nodes);
        free(out->kd_refs);
        free(out->tris);
        memset(out, 0, sizeof *out);
        out->type = BK_ACCEL_KDTREE;
        return -2;
    }
    const float *lo = S->lo, *hi = S->hi;
    out->lo = bk_v3(lo[0], lo[1], lo[2]);
    out->hi = bk_v3(hi[0], hi[1], hi[2]);
    double         root_area = cell_area(lo, hi);
    bk_build_info *info = &out->info;
    info->sah_cost = root_area > 0.0 ? b->sah / root_area : (double)S->valid;
    info->nodes = out->kd_node_count;
    info->leaves = b->leaves;
    info->depth = b->depth;
    info->refs = out->kd_ref_count;
    info->max_leaf = b->max_leaf;
    info->bytes = (size_t)out->kd_node_count * sizeof(bk_kd_node) + (size_t)out->kd_ref_count * sizeof(uint32_t) +
                  (size_t)S->n * 3 * sizeof(bk_f4) + bk_vox_pack_bytes(&out->vox);
    builder_free(b);
    return 0;
}

int bk_kd_build(const bk_scene *s, const bk_build_opts *o, bk_accel *out, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    memset(out, 0, sizeof *out);
    out->type = BK_ACCEL_KDTREE;
    kd_build S;
    memset(&S, 0, sizeof S);
    S.s = s;
    S.out = out;
    if (!s) return bk_fail(err, err_size, "no scene");
    if (bk_geom_init(&S.g, s, err, err_size)) return -1;
    S.n = S.g.count;
    if (S.n > KD_MAX_TRIS) {
        bk_geom_free(&S.g);
        return bk_fail(err, err_size, "scene has %u primitives; the KD-tree holds at most %u", S.n, KD_MAX_TRIS);
    }

    bk_build_opts def = bk_build_opts_default();
    if (!o) o = &def;
    kd_params_init(&S, o);
    S.b.prm = &S.prm;
    double st[BK_BUILD_STAGES] = { 0 }, ts = t0;
#define STAGE_END(k)                 \
    do {                             \
        double now_ = bk_time_now(); \
        st[k] = now_ - ts;           \
        ts = now_;                   \
    } while (0)
    if (kd_prep(&S)) goto oom;
    STAGE_END(BK_BUILD_PREP);
    if (kd_top_tree(&S)) goto oom;
    STAGE_END(BK_BUILD_TOP);

    if (S.b.sub_count) {
        run_subs(&S.b);
        for (size_t i = 0; i < S.b.sub_count; ++i)
            if (S.b.subs[i].failed) goto oom;
        STAGE_END(BK_BUILD_SUBTREES);
        if (kd_join(&S)) goto oom;
        STAGE_END(BK_BUILD_JOIN);
    }
#undef STAGE_END
    int rc = kd_output(&S, err, err_size);
    if (rc == -2) return -1;
    if (rc) goto oom;
    memcpy(out->info.stage_seconds, st, sizeof st);
    out->info.seconds = bk_time_now() - t0;
    return 0;

oom:
    bk_geom_free(&S.g);
    builder_free(&S.b);
    free(out->tris);
    memset(out, 0, sizeof *out);
    out->type = BK_ACCEL_KDTREE;
    return bk_fail(err, err_size, "out of memory building the KD-tree of %u triangles", S.n);
}
