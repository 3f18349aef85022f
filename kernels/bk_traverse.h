/* bk_traverse.h - the one ray traversal, compiled for the CPU backend (gcc) and the CUDA one (nvcc).
 *
 * Pipeline: rays -> bk_bvh_trace() or bk_kd_trace() -> hits. Pieces, in order:
 *   - bk_stack: where the traversal stack lives. The strategy changes the storage, never the
 *     traversal: a slot pointer and a stride (1 for a per-thread array, blockDim.x for a
 *     shared-memory stack so a warp's pushes fall in different banks), plus what happens when the
 *     fast part is full: nothing (global: it holds the deepest tree), drop the oldest entry and
 *     restart later (short), or move the whole fast part to a global-memory region (spill).
 *   - ray/box slabs (robust to axis-parallel rays: a zero direction gets a huge finite inverse, so
 *     no 0 * inf NaN, and a ray parallel to a slab is inside it for every t or for none; the far
 *     distance is widened by a few ulps as in Ize 2013, "Robust BVH Ray Traversal") and the
 *     watertight ray/triangle test (Woop, Benthin & Wald 2013), evaluated unfused on both sides.
 *   - BVH traversal with ordered children, as Aila & Laine's while-while loop with postponed
 *     leaves; with the short stack, a restart trail (Laine 2010, "Restart Trail for Stackless BVH
 *     Traversal") records per level whether only one child is left and which, so a restart from
 *     the root skips finished subtrees.
 *   - KD-tree traversal (pbrt's front-to-back traversal); with the short stack, kd-restart
 *     (Foley & Sugerman 2005): when dropped entries are needed, restart from the root with tmin
 *     advanced to the exit of the last leaf.
 *   - compressed 8-wide BVH traversal (Ylitie, Karras & Laine 2017), with a restart trail of one
 *     visiting position per level for the short stack.
 * A closest hit is the least (t, id) over the hits a traversal tests (bk_hit_better): at equal t
 * the lower HITS id wins, whatever order they were tested in, so every accel, layout, stack and
 * warp gives the same hit. (Keeping the hit tested last made the result depend on the order:
 * with postponed leaves a lane's warp-mates decide whether it tests a leaf before or after
 * culling with a new nearest hit, and the wavefront bake, whose warps are formed by atomics,
 * gave a few different rays in 14e9 from run to run.)
 */
#ifndef BK_TRAVERSE_H
#define BK_TRAVERSE_H

#include <stddef.h>

#include "bk_common.h"
#include "bk_accel.h"
#include "bk_ray.h"
#include "bk_voxel.h"

/* 1: on the GPU a lane that meets a leaf keeps descending until its whole warp holds leaves
 * (Aila & Laine's postponed leaves): 5-15 % more Mrays/s on the H100 (sponza, sibenik, dragon).
 * The nodes visited per ray then depend on its warp-mates; hits do not (bk_hit_better). */
#ifndef BK_POSTPONE_LEAVES
#define BK_POSTPONE_LEAVES 1
#endif

/* The stack strategies, one row each: X(U, NAME, "name", SIZED, SPILLS, "help"). NAME is
 * the suffix of the enum value (BK_STACK_##NAME); "name" is what --stack takes and the reports
 * print; SIZED 1: the fast part is a block's shared memory of --stack-size entries per thread (0: a
 * per-thread array of BK_STACK_ENTRIES, local memory on the GPU); SPILLS 1: a full fast part moves
 * to a global-memory region of BK_STACK_ENTRIES per thread; "help" is its text in --help (K is
 * --stack-size; '\n' between lines). What a full fast part does is the
 * strategy's own code (bk_stack_push, bk_stack_pop, the traversals' restarts). U is carried to
 * every row for expansions that need it (BK_TRAVERSALS); BK_STACK_MODES(X) calls X without it.
 * The enum, the names, the traversals below, the stack sizing of both backends, the bench and the
 * tests all expand this list. */
#define BK_STACK_MODES_U(X, U)                                                       \
    X(U, GLOBAL, "global", 0, 0, "a full per-thread stack in local (device) memory") \
    X(U, SHORT, "short", 1, 0,                                                       \
      "K entries in shared memory; on overflow the oldest\n"                         \
      "are dropped and traversal restarts from the root\n"                           \
      "(restart trail for the BVH, kd-restart for the KD-tree)")                     \
    X(U, SPILL, "spill", 1, 1, "K entries in shared memory that spill to global memory")
#define BK_STACK_MODES_ROW_(X, ...) X(__VA_ARGS__)
#define BK_STACK_MODES(X)           BK_STACK_MODES_U(BK_STACK_MODES_ROW_, X)

#define BK_STACK_MODE_ENUM_(N, S, SZ, SP, D) BK_STACK_##N,
enum bk_stack_mode { BK_STACK_MODES(BK_STACK_MODE_ENUM_) BK_STACK_MODE_COUNT };
#undef BK_STACK_MODE_ENUM_

/* The per-mode flags as constant expressions of a mode m (kernels size arrays with them). */
#define BK_STACK_SIZED_OR_(m, N, S, SZ, SP, D)  | ((m) == BK_STACK_##N ? (SZ) : 0)
#define BK_STACK_SPILLS_OR_(m, N, S, SZ, SP, D) | ((m) == BK_STACK_##N ? (SP) : 0)
#define BK_STACK_SIZED_OF(m)                    (0 BK_STACK_MODES_U(BK_STACK_SIZED_OR_, m))
#define BK_STACK_SPILLS_OF(m)                   (0 BK_STACK_MODES_U(BK_STACK_SPILLS_OR_, m))
/* 1 when mode's fast part holds --stack-size entries in shared memory (short, spill) */
BK_HD int bk_stack_sized(int mode) { return BK_STACK_SIZED_OF(mode); }
/* 1 when mode moves a full fast part to a global-memory spill region (spill) */
BK_HD int bk_stack_spills(int mode) { return BK_STACK_SPILLS_OF(mode); }

/* Every specialised traversal: the product accel x stack strategy x query (closest 0, any 1) x
 * primitive type, expanded as X(ACCEL, STACK, ANY, PRIM) with ACCEL, STACK and PRIM the suffixes
 * of the enum names (BK_ACCEL_##ACCEL ...); the strategies are BK_STACK_MODES'. The traversal's
 * index (enum bk_traversal, bk_traversal_index below), bk_trace_dispatch, the CPU backend's loops
 * and the CUDA trace kernels all expand this one list, so a new strategy or primitive type is one
 * edit. */
#define BK_LIST_PRIMS(X, A, S, Q) X(A, S, Q, TRI) X(A, S, Q, CUT) X(A, S, Q, VOX)
#define BK_LIST_QUERIES(X, A, S)  BK_LIST_PRIMS(X, A, S, 0) BK_LIST_PRIMS(X, A, S, 1)
/* the compressed wide BVH holds triangles only (voxel scenes trace the binary layout) */
#define BK_LIST_QUERIES_TRI(X, A, S) X(A, S, 0, TRI) X(A, S, 0, CUT) X(A, S, 1, TRI) X(A, S, 1, CUT)
/* one row of BK_STACK_MODES_U with U = (X, A): that strategy's queries */
#define BK_LIST_X_(X, A)              X
#define BK_LIST_A_(X, A)              A
#define BK_LIST_STACK_(U, N, ...)     BK_LIST_QUERIES(BK_LIST_X_ U, BK_LIST_A_ U, N)
#define BK_LIST_STACK_TRI_(U, N, ...) BK_LIST_QUERIES_TRI(BK_LIST_X_ U, BK_LIST_A_ U, N)
#define BK_LIST_STACKS(X, A)          BK_STACK_MODES_U(BK_LIST_STACK_, (X, A))
#define BK_LIST_STACKS_TRI(X, A)      BK_STACK_MODES_U(BK_LIST_STACK_TRI_, (X, A))
#define BK_TRAVERSALS(X)              BK_LIST_STACKS(X, BVH) BK_LIST_STACKS(X, KDTREE) BK_LIST_STACKS_TRI(X, CWBVH)

/* The traversals numbered in the order of BK_TRAVERSALS: BK_TRAVERSAL_BVH_GLOBAL_0_TRI = 0 ...
 * BK_TRAVERSAL_COUNT. */
#define BK_TRAVERSAL_ID(A, S, Q, P)    BK_TRAVERSAL_##A##_##S##_##Q##_##P
#define BK_TRAVERSAL_ENUM_(A, S, Q, P) BK_TRAVERSAL_ID(A, S, Q, P),
enum bk_traversal { BK_TRAVERSALS(BK_TRAVERSAL_ENUM_) BK_TRAVERSAL_COUNT };
#undef BK_TRAVERSAL_ENUM_

/* A traversal's fields: enum bk_accel_type, enum bk_stack_mode, 0 closest / 1 any, enum bk_gpu_ops. */
typedef struct bk_traversal_variant {
    int accel, stack_mode, any_hit, prim;
} bk_traversal_variant;

/* The one runtime choice of a traversal: its index, or -1 for a combination that has none (a
 * backend refuses those in supports()). any_hit is taken as 0 or not 0. */
BK_HD int bk_traversal_index(int accel, int stack_mode, int any_hit, int prim)
{
    const int any = any_hit != 0;
#define BK_TRAVERSAL_INDEX_(A, S, Q, P)                                                         \
    if (accel == BK_ACCEL_##A && stack_mode == BK_STACK_##S && any == Q && prim == BK_PRIM_##P) \
        return BK_TRAVERSAL_ID(A, S, Q, P);
    BK_TRAVERSALS(BK_TRAVERSAL_INDEX_)
#undef BK_TRAVERSAL_INDEX_
    return -1;
}

/* The fields of traversal i (0 <= i < BK_TRAVERSAL_COUNT; all -1 outside). */
BK_HD bk_traversal_variant bk_traversal_get(int i)
{
    bk_traversal_variant v;
    v.accel = -1;
    v.stack_mode = -1;
    v.any_hit = -1;
    v.prim = -1;
    switch (i) {
#define BK_TRAVERSAL_GET_(A, S, Q, P) \
    case BK_TRAVERSAL_ID(A, S, Q, P): \
        v.accel = BK_ACCEL_##A;       \
        v.stack_mode = BK_STACK_##S;  \
        v.any_hit = Q;                \
        v.prim = BK_PRIM_##P;         \
        break;
        BK_TRAVERSALS(BK_TRAVERSAL_GET_)
#undef BK_TRAVERSAL_GET_
    default: break;
    }
    return v;
}

/* Entries a full stack (global mode, or a spill region) needs: one per level of the deepest tree. */
#define BK_STACK_ENTRIES (BK_MAX_DEPTH + 4)
/* Words per stack entry: the KD-tree's (node, tmin, tmax), the compressed wide BVH's group
 * (child base, hits | imask | level), else a child ref (the BVH short stack's restart trail knows
 * an entry's level: bk_trail). A constant expression (kernels size arrays with it);
 * bk_stack_width() is the same as a function. BK_STACK_WIDTH is the widest. */
#define BK_STACK_WIDTH_OF(accel, mode) ((accel) == BK_ACCEL_KDTREE ? 3 : (accel) == BK_ACCEL_CWBVH ? 2 : 1)
#define BK_STACK_WIDTH                 3
BK_HD int bk_stack_width(int accel, int mode) { return BK_STACK_WIDTH_OF(accel, mode); }

/* Per-ray work counters; the caller sums them. */
typedef struct bk_trace_stats {
    uint32_t nodes;    /* inner nodes visited */
    uint32_t tris;     /* ray/triangle tests */
    uint32_t restarts; /* short stack: restarts from the root */
    uint32_t spills;   /* spill stack: fast part moved to global memory */
    uint32_t rays;     /* bake: rays traced (the trace commands count rays themselves) */
    uint32_t depth;    /* most entries pending at once (short stack: in the fast part) */
    uint32_t aux;      /* the last ray's hit: BK_VOX_AUX | material << 3 | face for a voxel
                          (bk_voxel.h), 0 for a triangle */
} bk_trace_stats;

/* The stack. Word w of entry i sits at slot[(i * width + w) * stride]; the spill region has the
 * same layout with spill_stride. Entries are 1 word (BVH: child ref), 2 (compressed wide BVH: a group)
 * or 3 (KD-tree: node, tmin, tmax). */
typedef struct bk_stack {
    uint32_t *slot;
    uint32_t *spill;
    int32_t   stride, spill_stride;
    int32_t   width;   /* words per entry */
    int32_t   cap;     /* entries the fast part holds */
    int32_t   top;     /* entries in the fast part */
    int32_t   spilled; /* spill: entries in the spill region */
    int32_t   dropped; /* short: entries were dropped since the last restart */
    int32_t   mode;    /* enum bk_stack_mode */
} bk_stack;

BK_HD bk_stack bk_stack_make(int mode, uint32_t *slot, int stride, int cap, uint32_t *spill, int spill_stride)
{
    bk_stack s;
    s.slot = slot;
    s.spill = spill;
    s.stride = stride;
    s.spill_stride = spill_stride;
    s.width = 1;
    s.cap = cap;
    s.top = 0;
    s.spilled = 0;
    s.dropped = 0;
    s.mode = mode;
    return s;
}

/* Entries the fast part of a mode's stack holds: --stack-size (size) where it is sized, else all
 * BK_STACK_ENTRIES. */
BK_HD int bk_stack_cap(int mode, int size) { return bk_stack_sized(mode) ? size : BK_STACK_ENTRIES; }

/* Words of one thread's own array (local memory on the GPU) for mode's stack of accel's entries:
 * the full stack where the fast part is not sized, else 1 (unused). A constant expression. */
#define BK_STACK_LOCAL_WORDS(accel, mode) \
    (BK_STACK_SIZED_OF(mode) ? 1 : BK_STACK_ENTRIES * BK_STACK_WIDTH_OF(accel, mode))

/* Bytes of a block's shared memory that a sized stack's fast parts take: size entries of width
 * words for each of its threads; 0 for a mode whose fast part is the thread's own array. */
BK_HD size_t bk_stack_shared_bytes(int mode, int size, int width, int threads)
{
    return bk_stack_sized(mode) ? (size_t)size * width * threads * sizeof(uint32_t) : 0;
}

/* One GPU thread's stack: its own array local (BK_STACK_LOCAL_WORDS) where mode's fast part is not
 * sized; else its slots of the block's shared array (shared, stride shared_stride, size entries)
 * with its slots of the spill region (spill, stride spill_stride). */
BK_HD bk_stack bk_stack_thread(int mode, uint32_t *local, uint32_t *shared, int shared_stride, int size,
                               uint32_t *spill, int spill_stride)
{
    return bk_stack_sized(mode) ? bk_stack_make(mode, shared, shared_stride, size, spill, spill_stride)
                                : bk_stack_make(mode, local, 1, BK_STACK_ENTRIES, 0, 0);
}

/* An empty stack for one ray of accel's traversal (entries as wide as it needs). */
BK_HDI void bk_stack_begin(bk_stack *s, int accel)
{
    s->width = bk_stack_width(accel, s->mode);
    s->top = 0;
    s->spilled = 0;
    s->dropped = 0;
}

BK_HDI void bk_stack_spill_all(bk_stack *s, bk_trace_stats *st)
{
    /* Entries [0, cap) go to spill[spilled, spilled + cap). */
    for (int i = 0; i < s->cap; ++i)
        for (int w = 0; w < s->width; ++w)
            s->spill[((s->spilled + i) * s->width + w) * s->spill_stride] = s->slot[(i * s->width + w) * s->stride];
    s->spilled += s->cap;
    s->top = 0;
    st->spills++;
}

/* Short stack, full: the oldest entry goes, the others move down one place. Rare (a few pushes in
 * a thousand at 8 entries), so every other push and pop indexes a plain array instead of a ring. */
BK_HDI void bk_stack_drop_oldest(bk_stack *s)
{
    for (int i = 1; i < s->cap; ++i)
        for (int w = 0; w < s->width; ++w)
            s->slot[((i - 1) * s->width + w) * s->stride] = s->slot[(i * s->width + w) * s->stride];
    s->top--;
    s->dropped = 1;
}

BK_HDI void bk_stack_push(bk_stack *s, uint32_t w0, uint32_t w1, uint32_t w2, bk_trace_stats *st)
{
    if (s->top == s->cap) {
        if (s->mode == BK_STACK_SHORT) bk_stack_drop_oldest(s);
        else if (s->mode == BK_STACK_SPILL) bk_stack_spill_all(s, st);
        /* global: cap bounds the tree depth */
    }
    uint32_t *p = s->slot + s->top * s->width * s->stride;
    p[0] = w0;
    if (s->width > 1) p[s->stride] = w1;
    if (s->width > 2) p[2 * s->stride] = w2;
    s->top++;
    uint32_t depth = (uint32_t)(s->top + s->spilled);
    if (depth > st->depth) st->depth = depth;
}

/* One word of per-ray statistics: the deepest stack and the nodes visited, saturated. */
BK_HD uint32_t bk_ray_stat_word(const bk_trace_stats *st)
{
    return (st->depth < 255u ? st->depth : 255u) << 24 | (st->nodes < 0xFFFFFFu ? st->nodes : 0xFFFFFFu);
}

/* Pops into w[0..width). Returns 0 when nothing is left in fast or spill storage. */
BK_HDI int bk_stack_pop(bk_stack *s, uint32_t *w)
{
    if (s->top == 0) {
        if (s->mode != BK_STACK_SPILL || s->spilled == 0) return 0;
        int n = s->spilled < s->cap ? s->spilled : s->cap;
        s->spilled -= n;
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < s->width; ++k)
                s->slot[(i * s->width + k) * s->stride] = s->spill[((s->spilled + i) * s->width + k) * s->spill_stride];
        s->top = n;
    }
    s->top--;
    const uint32_t *p = s->slot + s->top * s->width * s->stride;
    w[0] = p[0];
    if (s->width > 1) w[1] = p[s->stride];
    if (s->width > 2) w[2] = p[2 * s->stride];
    return 1;
}

BK_HDI bk_vec3 bk_tri_vertex(const bk_accel_view *a, uint32_t tri, int k, uint32_t *w)
{
    bk_f4 v = bk_load4(a->tris + 3 * tri + k);
    if (w) *w = bk_float_bits(v.w);
    return bk_f4_xyz(v);
}

/* Whether a hit at t on HITS id `id` replaces the nearest so far (best_t, best_id; BK_NO_HIT, the
 * largest id, before the first): the nearer one, and at equal t the lower id. */
BK_HD int bk_hit_better(float t, uint32_t id, float best_t, uint32_t best_id)
{
    return t < best_t || (t == best_t && id < best_id);
}

/* The cut-out filter at a hit at t of ray on leaf record rec (a triangle whose v1.w names an alpha
 * record): whether the surface stands there (bk_alpha_stands). Never inlined, and it takes only
 * what the traversal holds anyway (the ray in memory, the record's number, t): it reloads the
 * corners and the ray, so no traversal keeps them alive for a test it rarely makes (passing the
 * corners and the set-up ray cost the GPU's BVH 7 % and its KD-tree 13 % of the rays per second,
 * sponza, H200). Every leaf test of every layout calls it (bk_leaf_test, the compressed BVH's
 * leaves, the CPU's wide BVH). */
BK_HDN int bk_alpha_keep(const bk_accel_view *a, const bk_ray *ray, uint32_t rec, float t)
{
    const bk_f4   q0 = bk_load4(a->tris + 3 * (size_t)rec), q1 = bk_load4(a->tris + 3 * (size_t)rec + 1);
    const bk_f4   q2 = bk_load4(a->tris + 3 * (size_t)rec + 2);
    const bk_vec3 o = bk_v3(ray->ox, ray->oy, ray->oz), d = bk_v3(ray->dx, ray->dy, ray->dz);
    const bk_vec3 y = bk_v3(bk_add(o.x, bk_mul(d.x, t)), bk_add(o.y, bk_mul(d.y, t)), bk_add(o.z, bk_mul(d.z, t)));
    float         b1, b2;
    bk_tri_bary(bk_f4_xyz(q0), bk_f4_xyz(q1), bk_f4_xyz(q2), y, &b1, &b2);
    const uint32_t k = bk_float_bits(q1.w) - 1u;
    const bk_f4    a0 = bk_load4(a->alpha + 2 * (size_t)k), a1 = bk_load4(a->alpha + 2 * (size_t)k + 1);
    const float    coin =
        (bk_float_bits(a1.w) >> 28) == BK_ALPHA_BLEND ? bk_alpha_hash(o, d, bk_float_bits(q0.w) & BK_TRI_ID) : 0.0f;
    return bk_alpha_stands(&a->tex, a0, a1, b1, b2, coin);
}

/* Leaf record rec against the ray for hits in [tmin, tmax]: a triangle, or with prim BK_PRIM_VOX a
 * voxel instance when its id says so, walked only where the ray is in [cell_lo, cell_hi] (a
 * KD-tree leaf's cell, slightly widened; the BVH passes the whole ray). *id gets the record's id
 * word (with BK_TRI_LAST), *t, *hit_id (the HITS id) and *aux (bk_trace_stats.aux) the hit. */
BK_HDI int bk_leaf_test(const bk_accel_view *a, const bk_ray *ray, const bk_ray_pre *r, uint32_t rec, int prim,
                        int any_hit, float tmax, float *t, uint32_t *id, uint32_t *hit_id, uint32_t *aux, float cell_lo,
                        float cell_hi)
{
    bk_f4 v0 = bk_load4(a->tris + 3 * rec);
    *id = bk_float_bits(v0.w);
    if (prim == BK_PRIM_VOX && (*id & BK_PRIM_VOX_BIT)) {
        bk_vox_hit vh;
        if (!bk_vox_instance_hit(a, r, a->tris + 3 * rec, v0, bk_maxf(r->tmin, cell_lo), bk_minf(tmax, cell_hi),
                                 any_hit, &vh))
            return 0;
        *t = vh.t;
        *hit_id = vh.id;
        *aux = vh.aux;
        return 1;
    }
    uint32_t w1;
    bk_vec3  v1 = bk_tri_vertex(a, rec, 1, &w1), v2 = bk_tri_vertex(a, rec, 2, 0);
    if (!bk_tri_intersect(r, bk_f4_xyz(v0), v1, v2, tmax, t)) return 0;
    if (prim != BK_PRIM_TRI && w1 && !bk_alpha_keep(a, ray, rec, *t)) return 0; /* none in an opaque scene */
    *hit_id = *id & BK_TRI_ID;
    *aux = 0;
    return 1;
}

/* A closest hit on a triangle (record hrec) gets its precise distance (bk_tri_refine_t). */
BK_HDI bk_hit bk_hit_refine(const bk_accel_view *a, const bk_ray *ray, bk_hit h, uint32_t hrec, int any_hit,
                            const bk_trace_stats *st)
{
    if (!any_hit && h.tri != BK_NO_HIT && st->aux == 0)
        h.t = bk_tri_refine_t(ray, bk_tri_vertex(a, hrec, 0, 0), bk_tri_vertex(a, hrec, 1, 0),
                              bk_tri_vertex(a, hrec, 2, 0), h.t);
    return h;
}

/* The host CPU is latency-bound on node fetches: start loading a subtree put aside for later.
 * (The GPU hides latency with other warps instead.) */
BK_HDI void bk_prefetch_ref(const bk_accel_view *a, int32_t ref)
{
#if !BK_DEVICE_CODE
    if (ref >= 0) __builtin_prefetch(a->bvh_nodes + ref);
    else __builtin_prefetch(a->tris + 3 * (size_t)(uint32_t)~ref);
#else
    (void)a;
    (void)ref;
#endif
}

/* ---- BVH ------------------------------------------------------------------------------------ */

/* The BVH short stack's restart trail (after Laine 2010, "Restart Trail for Stackless BVH
 * Traversal"): two bits per level of the path from the root to the node being visited,
 *   pend:   the level's farther child waits (on the stack, or dropped from it);
 *   popped: the path goes on through the level's farther child, taken from the stack;
 *   neither: only one child was hit there, and the path goes on through it.
 * No bits are set from the visited node's level on. The stack's entries are the pending levels'
 * farther children, the deepest on top, so an entry's level is the highest bit of pend and an
 * entry is one ref; on the way down only a push sets a bit. When the stack runs dry after
 * dropping entries, the walk restarts at the root and follows the recorded path down to the
 * deepest pending level (bk_bvh_pop). (Entries that carry their level, with pend bits set only
 * when one is dropped, made the any-hit kernel 5 % faster on the H100 but the closest-hit one 7 %
 * slower.) */
typedef struct bk_trail {
    uint64_t pend, popped;
    int      level; /* depth of the node `ref` */
    int      replay_end;
} bk_trail;

/* The deepest pending level d leaves pend: the path now goes through its farther child (popped),
 * and the levels below d are new. Returns d. */
BK_HDI int bk_trail_take(bk_trail *tr)
{
    const int      d = bk_msb64(tr->pend);
    const uint64_t bit = (uint64_t)1 << d;
    tr->pend ^= bit;
    tr->popped = (tr->popped & (bit - 1u)) | bit;
    return d;
}

/* Node ref's children against the ray for hits in [tmin, cull]: the nearer by entry distance
 * first, which does not depend on the cull distance (a replay sees the same order). */
BK_HDI void bk_bvh_children(const bk_accel_view *a, const bk_ray_pre *r, int32_t ref, float cull, int32_t *near_ref,
                            int *near_hit, int32_t *far_ref, int *far_hit)
{
    const bk_bvh_node *n = a->bvh_nodes + ref;
    bk_f4   xy0 = bk_load4(&n->xy0), xy1 = bk_load4(&n->xy1), z01 = bk_load4(&n->z01), rf = bk_load4(&n->refs);
    float   t0, t1;
    int     hits = bk_slab2(r, xy0, xy1, z01, r->tmin, cull, &t0, &t1);
    int     hit0 = hits & 1, hit1 = hits >> 1;
    int32_t c0 = (int32_t)bk_float_bits(rf.x), c1 = (int32_t)bk_float_bits(rf.y);
    int     swap = t1 < t0;
    *near_ref = swap ? c1 : c0;
    *far_ref = swap ? c0 : c1;
    *near_hit = swap ? hit1 : hit0;
    *far_hit = swap ? hit0 : hit1;
}

/* The child to enter at a level of a replay (see bk_trail; `bit` is the level's), or
 * BK_REF_NONE. Children are ordered by entry distance, and the nearest hit only gets nearer, so
 * where the nearer child is culled now, so is the farther. */
BK_HDI int32_t bk_bvh_replay(bk_stack *s, bk_trail *tr, uint64_t bit, int32_t near_ref, int near_hit, int32_t far_ref,
                             int far_hit, bk_trace_stats *st)
{
    int32_t ref = BK_REF_NONE;
    if (tr->pend & bit) { /* a dropped level: its farther child waits again */
        if (near_hit && far_hit) {
            bk_stack_push(s, (uint32_t)far_ref, 0, 0, st);
            ref = near_ref;
        } else if (near_hit) {
            tr->pend ^= bit;
            ref = near_ref;
        } else if (far_hit) { /* (not reached, by the order) off the path, as a pop */
            tr->pend &= bit - 1u;
            tr->popped = (tr->popped & (bit - 1u)) | bit;
            tr->replay_end = 0;
            ref = far_ref;
        }
    } else if (tr->popped & bit) {
        ref = far_hit ? far_ref : BK_REF_NONE;
    } else { /* one child was hit here: now at most that one */
        ref = near_hit ? near_ref : far_hit ? far_ref : BK_REF_NONE;
    }
    if (ref == BK_REF_NONE) tr->pend &= bit - 1u; /* the rest of the path is culled */
    return ref;
}

/* Next subtree of a BVH traversal: the stack top, or, on an emptied short stack that dropped
 * entries, a restart: the walk from the root along the trail down to the deepest pending level's
 * farther child (tr->level gets its depth); BK_REF_DONE when nothing is left. The walk is a loop
 * of its own here, so the traversal's node loop needs no test for it (restarts are rare: 0.003
 * per ray on sponza with 8 entries). */
BK_HDI int32_t bk_bvh_pop(const bk_accel_view *a, const bk_ray_pre *r, float best, bk_stack *s, int mode, bk_trail *tr,
                          bk_trace_stats *st)
{
    uint32_t e[3] = { 0, 0, 0 };
    for (;;) {
        if (bk_stack_pop(s, e)) {
            if (mode == BK_STACK_SHORT)
                tr->level = bk_trail_take(tr) + 1; /* the farther child of the deepest pending level */
            return (int32_t)e[0];
        }
        if (mode != BK_STACK_SHORT || !s->dropped || !tr->pend) return BK_REF_DONE;
        /* every entry left was dropped */
        tr->replay_end = bk_trail_take(tr) + 1;
        s->dropped = 0;
        st->restarts++;
        int32_t ref = 0;
        int     level = 0;
        while (level < tr->replay_end) { /* (bk_bvh_replay ends it early off the path) */
            int32_t near_ref, far_ref;
            int     near_hit, far_hit;
            st->nodes++;
            bk_bvh_children(a, r, ref, bk_cull_far(best), &near_ref, &near_hit, &far_ref, &far_hit);
            ref = bk_bvh_replay(s, tr, (uint64_t)1 << level, near_ref, near_hit, far_ref, far_hit, st);
            ++level;
            if (ref == BK_REF_NONE) break; /* culled: what the replay pushed, or the next restart */
        }
        if (ref != BK_REF_NONE) {
            tr->level = level;
            return ref;
        }
    }
}

/* mode and any_hit are constants at every call site, so the compiler specialises this function.
 * The loop is Aila & Laine's "while-while" with postponed leaves: a lane that meets a leaf parks
 * it and keeps descending until every lane of its warp holds one, and then the warp tests
 * triangles together. Control flow is structured (no goto, no return from inside the loops), so
 * a warp's lanes reconverge at the loop heads. On the CPU a warp is one lane. */
BK_HDI bk_hit bk_bvh_trace(const bk_accel_view *a, const bk_ray *ray, int any_hit, int prim, bk_stack *stack,
                           bk_trace_stats *st)
{
    /* A local copy: its fields stay in registers instead of being reloaded after every store to
     * the slots (which may alias them as far as the compiler knows). */
    bk_stack local = *stack, *s = &local;
    bk_hit   h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
    const int mode = s->mode;
    bk_stack_begin(s, BK_ACCEL_BVH);
    float    best = r.tmax;
    bk_trail tr = { 0, 0, 0, 0 }; /* short stack: the restart trail */
    /* (opaque to the optimiser here, or NVVM recomputes the parallel-ray test from the direction
     * in the node loop of the short and spill kernels: 24 instructions per node visited; the
     * global stack's triangle kernels keep it without, and were slower with it; the voxel ones
     * recomputed it too, from direction components spilled to local memory) */
    if (mode != BK_STACK_GLOBAL || prim == BK_PRIM_VOX) BK_OPAQUE_INT(r.par);
    uint32_t hrec = 0; /* leaf record of the hit */
    int32_t  ref = 0, leaf = BK_REF_NONE;
    for (;;) {
        for (;;) {
            if (ref >= 0) {
                int32_t near_ref, far_ref;
                int     near_hit, far_hit;
                st->nodes++;
                bk_bvh_children(a, &r, ref, bk_cull_far(best), &near_ref, &near_hit, &far_ref, &far_hit);
                if (near_hit && far_hit) {
                    bk_prefetch_ref(a, far_ref);
                    if (mode == BK_STACK_SHORT) tr.pend |= (uint64_t)1 << tr.level;
                    bk_stack_push(s, (uint32_t)far_ref, 0, 0, st);
                    ref = near_ref;
                } else {
                    ref = near_hit ? near_ref : far_hit ? far_ref : BK_REF_NONE; /* missed, or culled */
                }
                tr.level++; /* (a pop sets it again) */
            }
            /* a leaf in hand is parked when none is; with nothing in hand, the next subtree.
             * (One call of the pop, whose restart walk is long: inlined once.) */
            for (;;) {
                if (ref < 0 && ref != BK_REF_DONE && ref != BK_REF_NONE && leaf == BK_REF_NONE) {
                    leaf = ref; /* park it and go on descending */
                    ref = BK_REF_NONE;
                }
                if (ref != BK_REF_NONE) break;
                ref = bk_bvh_pop(a, &r, best, s, mode, &tr, st);
            }
            if (ref < 0) break; /* DONE, or a second leaf in hand */
#if BK_POSTPONE_LEAVES
            if (BK_WARP_ALL(leaf != BK_REF_NONE)) break;
#else
            if (leaf != BK_REF_NONE) break;
#endif
        }
        /* a leaf is parked unless nothing is left (ref DONE); ref is DONE, a leaf, or (when the
         * warp voted) an inner node still to visit */
        if (leaf == BK_REF_NONE) break;
        int found = 0;
        for (uint32_t rec = (uint32_t)~leaf;; ++rec) { /* records ~leaf .. the one marked last */
            uint32_t id, hid, aux;
            float    t;
            st->tris++;
            if (bk_leaf_test(a, ray, &r, rec, prim, any_hit, best, &t, &id, &hid, &aux, -BK_INF, BK_INF) &&
                bk_hit_better(t, hid, best, h.tri)) {
                best = t;
                h.t = t;
                h.tri = hid;
                hrec = rec;
                st->aux = aux;
                found = any_hit;
            }
            if ((id & BK_TRI_LAST) || found) break;
        }
        leaf = BK_REF_NONE;
        if (found || ref == BK_REF_DONE) break;
    }
    return bk_hit_refine(a, ray, h, hrec, any_hit, st);
}

/* ---- compressed wide BVH ---------------------------------------------------------------------- */

/* A pending group: the inner children of one node still to visit, as stack words
 *   w0 = the node's child_base,
 *   w1 = hit children (bit p: the slot p ^ octant, so bits in visiting order) | imask << 8 |
 *        the node's level << 16.
 * The short stack's restart trail keeps per level 4 bits: the visiting position of the child
 * being visited (bits 0-2) and whether it is the level's last hit child (bit 3). */
#define BK_CW_LEVEL_SHIFT 16

/* (two words, selected rather than indexed, so that they stay in registers on the GPU) */
BK_HD uint32_t bk_cw_trail_get(const uint64_t *trail, int level)
{
    return (uint32_t)((level < 16 ? trail[0] : trail[1]) >> (4 * (level & 15)) & 15u);
}
BK_HD void bk_cw_trail_set(uint64_t *trail, int level, uint32_t v)
{
    int      sh = 4 * (level & 15);
    uint64_t w = level < 16 ? trail[0] : trail[1];
    w = (w & ~((uint64_t)15 << sh)) | (uint64_t)v << sh;
    if (level < 16) trail[0] = w;
    else trail[1] = w;
}

/* Byte s (0-7) of a pair of little-endian words. */
BK_HD uint32_t bk_byte8(uint32_t lo, uint32_t hi, int s) { return ((s < 4 ? lo : hi) >> (8 * (s & 3))) & 0xFFu; }

/* 2^15 + byte s of a word pair, as a float: the byte goes into the mantissa of 2^15, one byte
 * permutation on the GPU instead of an integer-to-float conversion (a quarter-rate instruction
 * there, 48 of them per node). */
BK_HD float bk_q15(uint32_t lo, uint32_t hi, int s, uint32_t k47)
{
#if BK_DEVICE_CODE
    return __uint_as_float(__byte_perm(s < 4 ? lo : hi, k47, 0x7504u | (uint32_t)(s & 3) << 4));
#else
    (void)k47;
    return bk_bits_float(0x47000000u | bk_byte8(lo, hi, s) << 8);
#endif
}

/* Bit p of the result is bit p ^ oct of m (8 bits): from slot order to a ray's visiting order. */
BK_HD uint32_t bk_cw_order(uint32_t m, uint32_t oct)
{
    if (oct & 1u) m = (m & 0x55u) << 1 | (m >> 1 & 0x55u);
    if (oct & 2u) m = (m & 0x33u) << 2 | (m >> 2 & 0x33u);
    if (oct & 4u) m = (m & 0x0Fu) << 4 | m >> 4;
    return m;
}

/* Bit s set where byte s of the word pair is not 0xFF (the slots that hold a child). */
BK_HD uint32_t bk_cw_used(uint32_t lo, uint32_t hi)
{
    /* a byte is 0xFF where its complement is 0: the high bit of (c | (c + 0x7F) per byte) */
    uint32_t cl = ~lo, ch = ~hi;
    cl = (cl | ((cl & 0x7F7F7F7Fu) + 0x7F7F7F7Fu)) & 0x80808080u;
    ch = (ch | ((ch & 0x7F7F7F7Fu) + 0x7F7F7F7Fu)) & 0x80808080u;
    return (cl * 0x00204081u) >> 28 | ((ch * 0x00204081u) >> 28) << 4;
}

/* The children of compressed node n that the ray may hit in [tmin, tmax]: returns the inner ones
 * and writes the leaf ones to *leaves, both as bits in visiting order (bit p: slot p ^ oct).
 * Plane q of axis k is met at t = (2^15 + q) * b + (a - 2^15 b) with b = step * inv and
 * a = (origin - o) * inv: one multiply-add per plane. Its rounding error stays below err (eight
 * ulps of |a| + 2^15 |b|, at most 1/32 of a grid step past an ulp of a), by which the far planes are
 * moved out, so no child box that holds a hit is missed. Rays parallel to a slab take the exact
 * test (bk_slab) of each child's dequantised box, rounded outwards. */
BK_HDI uint32_t bk_cw_children(const bk_ray_pre *r, const bk_cw_node *nd, uint32_t oct, float tmin, float tmax,
                               uint32_t *child_base, uint32_t *rec_base, uint32_t *meta_lo, uint32_t *meta_hi,
                               uint32_t *imask_out, uint32_t *leaves)
{
    const bk_f4 *q4 = (const bk_f4 *)nd;
    bk_f4 f0 = bk_load4(q4), f1 = bk_load4(q4 + 1), f2 = bk_load4(q4 + 2), f3 = bk_load4(q4 + 3), f4 = bk_load4(q4 + 4);
    uint32_t e = bk_float_bits(f0.w);
    *child_base = bk_float_bits(f1.x);
    *rec_base = bk_float_bits(f1.y);
    *meta_lo = bk_float_bits(f1.z);
    *meta_hi = bk_float_bits(f1.w);
    const uint32_t imask = e >> 24, used = bk_cw_used(*meta_lo, *meta_hi);
    *imask_out = imask;
    /* qlo x | qlo y | qlo z | qhi x | qhi y | qhi z, two words each */
    const uint32_t q0 = bk_float_bits(f2.x), q1 = bk_float_bits(f2.y), q2 = bk_float_bits(f2.z),
                   q3 = bk_float_bits(f2.w);
    const uint32_t q4w = bk_float_bits(f3.x), q5 = bk_float_bits(f3.y), q6 = bk_float_bits(f3.z),
                   q7 = bk_float_bits(f3.w);
    const uint32_t q8 = bk_float_bits(f4.x), q9 = bk_float_bits(f4.y), q10 = bk_float_bits(f4.z),
                   q11 = bk_float_bits(f4.w);
    const float ox = f0.x, oy = f0.y, oz = f0.z;
    const float sx = bk_bits_float((e & 0xFFu) << 23), sy = bk_bits_float((e >> 8 & 0xFFu) << 23),
                sz = bk_bits_float((e >> 16 & 0xFFu) << 23);
    uint32_t hits = 0;
    if (!r->par) {
        const float ax = (ox - r->o.x) * r->inv.x, ay = (oy - r->o.y) * r->inv.y, az = (oz - r->o.z) * r->inv.z;
        const float bx = sx * r->inv.x, by = sy * r->inv.y, bz = sz * r->inv.z;
        const float err = bk_maxf_fast(bk_absf_fast(ax) + 32768.0f * bk_absf_fast(bx),
                                       bk_maxf_fast(bk_absf_fast(ay) + 32768.0f * bk_absf_fast(by),
                                                    bk_absf_fast(az) + 32768.0f * bk_absf_fast(bz))) *
                          0x1p-20f;
        const float cx = ax - 32768.0f * bx, cy = ay - 32768.0f * by, cz = az - 32768.0f * bz;
        const float ex = cx + err, ey = cy + err, ez = cz + err, tmaxe = tmax + err;
        /* near planes: the low ones on axes the ray runs up, the high ones on axes it runs down
         * (selected once per node, so the words are never indexed at run time) */
        const uint32_t nx0 = (oct & 1) ? q6 : q0, nx1 = (oct & 1) ? q7 : q1, fx0 = (oct & 1) ? q0 : q6,
                       fx1 = (oct & 1) ? q1 : q7;
        const uint32_t ny0 = (oct & 2) ? q8 : q2, ny1 = (oct & 2) ? q9 : q3, fy0 = (oct & 2) ? q2 : q8,
                       fy1 = (oct & 2) ? q3 : q9;
        const uint32_t nz0 = (oct & 4) ? q10 : q4w, nz1 = (oct & 4) ? q11 : q5, fz0 = (oct & 4) ? q4w : q10,
                       fz1 = (oct & 4) ? q5 : q11;
        /* 2^15's bits, in a register: the byte permutations then take their selectors as
         * immediates (oct < 8, so the shift adds nothing; it only hides the constant) */
        const uint32_t k47 = 0x47000000u | oct >> 3;
        for (int s = 0; s < 8; ++s) {
            float tn = bk_maxf_fast(bk_maxf_fast(bk_fma_fast(bk_q15(nx0, nx1, s, k47), bx, cx),
                                                 bk_fma_fast(bk_q15(ny0, ny1, s, k47), by, cy)),
                                    bk_maxf_fast(bk_fma_fast(bk_q15(nz0, nz1, s, k47), bz, cz), tmin));
            float tf = bk_minf_fast(bk_minf_fast(bk_fma_fast(bk_q15(fx0, fx1, s, k47), bx, ex),
                                                 bk_fma_fast(bk_q15(fy0, fy1, s, k47), by, ey)),
                                    bk_minf_fast(bk_fma_fast(bk_q15(fz0, fz1, s, k47), bz, ez), tmaxe));
            hits |= (uint32_t) !(tn > tf) << s; /* NaN: hit (never a miss by mistake) */
        }
    } else {
        const uint32_t q[12] = { q0, q1, q2, q3, q4w, q5, q6, q7, q8, q9, q10, q11 };
        const float    o3[3] = { ox, oy, oz }, s3[3] = { sx, sy, sz };
        for (int s = 0; s < 8; ++s) {
            float lo[3], hi[3], tn;
            for (int k = 0; k < 3; ++k) {
                float l = o3[k] + (float)bk_byte8(q[2 * k], q[2 * k + 1], s) * s3[k];
                float h = o3[k] + (float)bk_byte8(q[6 + 2 * k], q[7 + 2 * k], s) * s3[k];
                lo[k] = l - bk_absf(l) * 0x1p-22f - 1e-30f;
                hi[k] = h + bk_absf(h) * 0x1p-22f + 1e-30f;
            }
            hits |= (uint32_t)bk_slab(r, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], tmin, tmax, &tn) << s;
        }
    }
    hits &= used;
    *leaves = bk_cw_order(hits & ~imask, oct);
    return bk_cw_order(hits & imask, oct);
}

/* Compressed wide BVH traversal (layout in bk_accel.h). A node's hit children are visited in the
 * order of their slots' visiting positions (slot ^ octant), leaves at once and inner children
 * depth first: the first is entered, the rest of the group is pushed as one stack entry and popped
 * one child at a time (Ylitie et al. 2017). With the short stack, the restart trail
 * keeps per level the visiting position of the child being visited and whether it was the level's
 * last (after Vaidyanathan, Woop & Benthin 2019, "Wide BVH Traversal with a Short Stack"): when the
 * stack ran dry after dropping entries, the walk restarts at the root, follows the trail down to the
 * deepest level with children left, and goes on after the one it had visited there. */
BK_HDI bk_hit bk_cw_trace(const bk_accel_view *a, const bk_ray *ray, int any_hit, int prim, bk_stack *stack,
                          bk_trace_stats *st)
{
    bk_stack local = *stack, *s = &local; /* see bk_bvh_trace */
    bk_hit   h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
    const int mode = s->mode;
    bk_stack_begin(s, BK_ACCEL_CWBVH);
    const uint32_t oct = (r.inv.x < 0.0f ? 1u : 0u) | (r.inv.y < 0.0f ? 2u : 0u) | (r.inv.z < 0.0f ? 4u : 0u);
    float          best = r.tmax;
    uint32_t       hrec = 0;
    int            done = 0;
    uint64_t       trail[2] = { 0, 0 };
    int            level = 0;   /* level of the node whose children make the group */
    int            replay = -1; /* short stack, restarting: the level to resume at */
    /* the group: the root, as the one inner child (slot 0) of a node above it */
    uint32_t g_base = 0, g_hits = 1u << oct, g_imask = 1u;
    int      g_level = -1;
    while (!done) {
        if (!g_hits) { /* next group: the stack, or a restart */
            uint32_t e[3] = { 0, 0, 0 };
            if (bk_stack_pop(s, e)) {
                g_base = e[0];
                g_hits = e[1] & 0xFFu;
                g_imask = e[1] >> 8 & 0xFFu;
                g_level = (int)(e[1] >> BK_CW_LEVEL_SHIFT);
                continue;
            }
            if (mode != BK_STACK_SHORT || !s->dropped) break;
            /* the deepest level above the last node with hit children not yet visited: every
             * entry left was dropped, so these are exactly the levels marked not last */
            int L = -1;
            for (int l = level - 1; l >= 0; --l)
                if (!(bk_cw_trail_get(trail, l) & 8u)) {
                    L = l;
                    break;
                }
            if (L < 0) break;
            replay = L;
            s->dropped = 0;
            st->restarts++;
            g_base = 0;
            g_hits = 1u << oct;
            g_imask = 1u;
            g_level = -1;
            continue;
        }
        /* enter the group's first child; the rest waits on the stack */
        uint32_t p = (uint32_t)bk_ctz32(g_hits), slot = p ^ oct;
        g_hits &= g_hits - 1u;
        if (mode == BK_STACK_SHORT && g_level >= 0 && replay < 0)
            bk_cw_trail_set(trail, g_level, p | (g_hits ? 0u : 8u));
        if (g_hits) bk_stack_push(s, g_base, g_hits | g_imask << 8 | (uint32_t)g_level << BK_CW_LEVEL_SHIFT, 0, st);
        uint32_t node = g_base + (uint32_t)bk_popc32(g_imask & ((1u << slot) - 1u));
        level = g_level + 1;
        st->nodes++;
        uint32_t child_base, rec_base, meta_lo, meta_hi, imask, leaves;
        uint32_t inner = bk_cw_children(&r, a->cw_nodes + node, oct, r.tmin, bk_cull_far(best), &child_base, &rec_base,
                                        &meta_lo, &meta_hi, &imask, &leaves);
        if (mode == BK_STACK_SHORT && replay >= 0) {
            /* a restart's walk down the trail: no leaves (tested before). Above the level to
             * resume, the trail's child is entered and its hit siblings after it wait on the stack
             * again (as the binary trail's replay pushes the far child): the restart was for the
             * deepest level only. At that level, or where the trail's child is no longer hit (a
             * nearer hit culled it, and all that waited below it), the walk goes on normally with
             * the children after it. */
            uint32_t tv = bk_cw_trail_get(trail, level), tp = tv & 7u;
            uint32_t rest = (tv & 8u) ? 0u : inner & ~((2u << tp) - 1u);
            leaves = 0;
            if (level < replay && (inner >> tp & 1u)) {
                bk_cw_trail_set(trail, level, tp | (rest ? 0u : 8u));
                if (rest) bk_stack_push(s, child_base, rest | imask << 8 | (uint32_t)level << BK_CW_LEVEL_SHIFT, 0, st);
                inner = 1u << tp;
            } else {
                inner = rest;
                replay = -1;
                if (!inner) bk_cw_trail_set(trail, level, tv | 8u);
            }
        }
        while (leaves) {
            uint32_t lp = (uint32_t)bk_ctz32(leaves);
            leaves &= leaves - 1u;
            for (uint32_t rec = rec_base + bk_byte8(meta_lo, meta_hi, (int)(lp ^ oct));; ++rec) {
                st->tris++;
                bk_f4    v0 = bk_load4(a->tris + 3 * rec);
                uint32_t id = bk_float_bits(v0.w), w1;
                float    t;
                bk_vec3  v1 = bk_tri_vertex(a, rec, 1, &w1), v2 = bk_tri_vertex(a, rec, 2, 0);
                if (bk_tri_intersect(&r, bk_f4_xyz(v0), v1, v2, best, &t) &&
                    bk_hit_better(t, id & BK_TRI_ID, best, h.tri) &&
                    (prim == BK_PRIM_TRI || !w1 || bk_alpha_keep(a, ray, rec, t))) {
                    best = t;
                    h.t = t;
                    h.tri = id & BK_TRI_ID;
                    hrec = rec;
                    if (any_hit) {
                        done = 1;
                        break;
                    }
                }
                if (id & BK_TRI_LAST) break;
            }
            if (done) break;
        }
        g_base = child_base;
        g_hits = inner;
        g_imask = imask;
        g_level = level;
    }
    st->aux = 0;
    return bk_hit_refine(a, ray, h, hrec, any_hit, st);
}

/* ---- KD-tree -------------------------------------------------------------------------------- */

BK_HDI bk_hit bk_kd_trace(const bk_accel_view *a, const bk_ray *ray, int any_hit, int prim, bk_stack *stack,
                          bk_trace_stats *st)
{
    bk_stack local = *stack, *s = &local; /* see bk_bvh_trace */
    bk_hit   h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
    const int mode = s->mode;
    bk_stack_begin(s, BK_ACCEL_KDTREE);
    float t_enter;
    if (!bk_slab(&r, a->lo.x, a->hi.x, a->lo.y, a->hi.y, a->lo.z, a->hi.z, r.tmin, r.tmax, &t_enter)) return h;
    float t_exit = r.tmax;
    { /* the scene's exit distance, widened like the slab test */
        float tx = bk_maxf((a->lo.x - r.o.x) * r.inv.x, (a->hi.x - r.o.x) * r.inv.x);
        float ty = bk_maxf((a->lo.y - r.o.y) * r.inv.y, (a->hi.y - r.o.y) * r.inv.y);
        float tz = bk_maxf((a->lo.z - r.o.z) * r.inv.z, (a->hi.z - r.o.z) * r.inv.z);
        if (r.par & 1) tx = BK_INF; /* parallel: the slab test above found it inside */
        if (r.par & 2) ty = BK_INF;
        if (r.par & 4) tz = BK_INF;
        /* widened away from the entry whatever the sign: a ray may have tmin < 0, and a negative
         * exit times 1.0000004 would move towards it and cut off the scene's last cells */
        float tf = bk_minf(tx, bk_minf(ty, tz));
        t_exit = bk_minf(t_exit, tf * (tf >= 0.0f ? 1.0000004f : 0.9999996f));
        /* finite, so a plane crossed at +inf is always beyond it (one compare per node below) */
        t_exit = bk_maxf(bk_minf(t_exit, 3.40282347e38f), t_enter);
    }
    /* The inverse direction for the planes, +-inf on the axes the ray runs parallel to: such a
     * plane is crossed at +-inf, never inside the t range, so the ray keeps to its side (the 1e30
     * safe inverse put the crossing at |split - o| * 1e30, inside the range of a ray that starts
     * 1e29 away: a scene with a vertex at 1e38, found by fuzzing). A ray lying in the plane gets
     * NaN and takes the first side; triangles touching a plane are referenced on both sides. Set
     * up once per ray, so the loop below pays nothing for it. */
    bk_vec3 kinv = bk_v3((r.par & 1) ? r.inv.x * BK_INF : r.inv.x, (r.par & 2) ? r.inv.y * BK_INF : r.inv.y,
                         (r.par & 4) ? r.inv.z * BK_INF : r.inv.z);
    float    best = r.tmax;
    uint32_t node = 0, hrec = 0;
    float    tmin = t_enter, tmax = t_exit;
    uint32_t e[3] = { 0, 0, 0 };
    int      last_pass = 0;
    for (;;) {
        bk_kd_node n;
        n.flags = bk_load_u32(&a->kd_nodes[node].flags);
        n.data = bk_load_u32(&a->kd_nodes[node].data);
        while ((n.flags & 3u) != BK_KD_LEAF) {
            st->nodes++;
            int   axis = (int)(n.flags & 3u);
            float split = bk_bits_float(n.data);
            float o = bk_comp3(r.o, axis), inv = bk_comp3(kinv, axis);
            float tsplit = (split - o) * inv;
            /* The ray crosses from below to above when it points up the axis. */
            uint32_t below = node + 1, above = n.flags >> 2;
            uint32_t first = inv > 0.0f ? below : above, second = inv > 0.0f ? above : below;
            /* A plane crossed exactly at tmax (in float) still opens the far side: the ray may
             * end on a surface there, a hair beyond the plane (rays aimed at a point, tmax = 1);
             * a plane never crossed (tsplit = inf, or NaN) does not: tmax is finite.
             * At tmin the test stays strict, so a kd-restart from tmin never revisits the leaf
             * it left and always moves on; both sides are taken only when tmin == tmax. */
            if (!(tsplit <= tmax)) {
                node = first;
            } else if (tsplit < tmin || (tsplit == tmin && tmin < tmax)) {
                node = second;
            } else {
                bk_stack_push(s, second, bk_float_bits(tsplit), bk_float_bits(tmax), st);
                node = first;
                tmax = tsplit;
            }
            n.flags = bk_load_u32(&a->kd_nodes[node].flags);
            n.data = bk_load_u32(&a->kd_nodes[node].data);
        }
        uint32_t count = n.flags >> 2;
        for (uint32_t i = 0; i < count; ++i) {
            uint32_t rec = bk_load_u32(a->kd_refs + n.data + i), id, hid, aux;
            float    t;
            st->tris++;
            /* an instance's voxels only inside this leaf's cell: the leaves after it reference
             * the instance too where it reaches them; the cell widened by 2^-20, as the builder's
             * margin, so a face on a split plane is not lost between two leaves */
            if (bk_leaf_test(a, ray, &r, rec, prim, any_hit, best, &t, &id, &hid, &aux, tmin - bk_absf(tmin) * 0x1p-20f,
                             tmax + bk_absf(tmax) * 0x1p-20f) &&
                bk_hit_better(t, hid, best, h.tri)) {
                best = t;
                h.t = t;
                h.tri = hid;
                hrec = rec;
                st->aux = aux;
                if (any_hit) break;
            }
        }
        /* any hit: done at the first; closest: leaves come front to back, nothing later is nearer.
         * Without a hit, best is the ray's tmax: a cell that ends there may still be followed by
         * one that starts there (see above), so only a hit ends the walk at its cell's end. */
        if ((any_hit && h.tri != BK_NO_HIT) || best < tmax || (best == tmax && h.tri != BK_NO_HIT)) break;
        if (!bk_stack_pop(s, e)) {
            if (mode != BK_STACK_SHORT || !s->dropped || tmax > t_exit) break;
            /* At the ray's end, what was dropped can only be cells that start there: the far
             * side of a plane crossed exactly at t_exit (a ray aimed at a point on a surface,
             * found by fuzzing). One last pass over [t_exit, t_exit] takes both sides of every
             * such plane; a second would see the same cells. */
            if (tmax == t_exit) {
                if (last_pass) break;
                last_pass = 1;
            }
            /* kd-restart: descend again from the root over what is left of the ray */
            node = 0;
            tmin = tmax;
            tmax = t_exit;
            s->dropped = 0;
            st->restarts++;
            continue;
        }
        node = e[0];
        tmin = bk_bits_float(e[1]);
        tmax = bk_bits_float(e[2]);
        if (tmin > best) break;
    }
    return bk_hit_refine(a, ray, h, hrec, any_hit, st);
}

/* One specialised traversal: every argument but a, ray, s and st is a constant at each call site
 * (the expansions of BK_TRAVERSALS), so each gets its own inlined copy. */
BK_HDI bk_hit bk_trace_one(const bk_accel_view *a, const bk_ray *ray, int accel, int mode, int any_hit, int prim,
                           bk_stack *s, bk_trace_stats *st)
{
    bk_stack t = *s;
    t.mode = mode;
    return accel == BK_ACCEL_BVH     ? bk_bvh_trace(a, ray, any_hit, prim, &t, st)
           : accel == BK_ACCEL_CWBVH ? bk_cw_trace(a, ray, any_hit, prim, &t, st)
                                     : bk_kd_trace(a, ray, any_hit, prim, &t, st);
}

/* Runtime accel, stack mode, query and primitive type to the traversal specialised for them.
 * An unknown combination (backends refuse them in supports()) misses everything. */
BK_HD bk_hit bk_trace_dispatch(const bk_accel_view *a, const bk_ray *ray, int any_hit, bk_stack *s, bk_trace_stats *st)
{
    st->rays++;
    switch (bk_traversal_index(a->type, s->mode, any_hit, a->prim)) {
#define BK_DISPATCH(A, S, Q, P) \
    case BK_TRAVERSAL_ID(A, S, Q, P): return bk_trace_one(a, ray, BK_ACCEL_##A, BK_STACK_##S, Q, BK_PRIM_##P, s, st);
        BK_TRAVERSALS(BK_DISPATCH)
#undef BK_DISPATCH
    default: break;
    }
    bk_hit h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    return h;
}

#endif /* BK_TRAVERSE_H */
