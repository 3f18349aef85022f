/* bk_test_stacks.h - the stack strategies and layouts the traversal tests run, generated from the
 * lists of kernels/bk_traverse.h (BK_STACK_MODES, BK_TRAVERSALS), never written out by hand: a new
 * strategy or accel is tested by every test that loops over these, without an edit in the tests.
 *
 *   bk_test_stacks(sizes, n, out): every strategy of BK_STACK_MODES in its order; a sized one
 *     (short, spill: bk_stack_sized) once per entry of sizes[0 .. n), the others once with size 0
 *     (their stack holds the deepest tree; the tests pass 8, the default, as --stack-size).
 *   bk_test_layouts(out): the layouts the backends trace, the accels of BK_TRAVERSALS in their
 *     order, each as what a test builds (BK_ACCEL_BVH or BK_ACCEL_KDTREE) and the bvh_width of
 *     bk_trace_opts that selects it (the compressed wide BVH is made from a binary one: width 8).
 *
 * Usage:
 *     static const int sizes[] = { 1, 2, 8 };
 *     bk_test_stack st[BK_TEST_STACKS_MAX];
 *     int n = bk_test_stacks(sizes, 3, st);
 *     for (int i = 0; i < n; ++i) { o.stack_mode = st[i].mode; o.stack_size = bk_test_stack_size(st[i]); ... }
 */
#ifndef BK_TEST_STACKS_H
#define BK_TEST_STACKS_H

#include "bk_traverse.h"

/* at most this many sizes per sized strategy */
#define BK_TEST_STACK_SIZES_MAX 8
#define BK_TEST_STACKS_MAX      (BK_STACK_MODE_COUNT * BK_TEST_STACK_SIZES_MAX)

typedef struct bk_test_stack {
    int mode; /* enum bk_stack_mode */
    int size; /* --stack-size of a sized strategy; 0 for the others */
} bk_test_stack;

static inline int bk_test_stacks(const int *sizes, int nsizes, bk_test_stack *out)
{
    int n = 0;
    if (nsizes > BK_TEST_STACK_SIZES_MAX) nsizes = BK_TEST_STACK_SIZES_MAX;
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m) {
        for (int k = 0; k < (bk_stack_sized(m) ? nsizes : 1); ++k) {
            out[n].mode = m;
            out[n].size = bk_stack_sized(m) ? sizes[k] : 0;
            n++;
        }
    }
    return n;
}

/* The --stack-size to trace a configuration with: its size, or the default 8 where it has none. */
static inline int bk_test_stack_size(bk_test_stack s) { return s.size ? s.size : 8; }

typedef struct bk_test_layout {
    int accel;    /* the traversal's accel (BK_TRAVERSALS): enum bk_accel_type */
    int build;    /* the accel a test builds for it */
    int width;    /* bk_trace_opts.bvh_width that traces it: 8 for the compressed wide BVH, else 2 */
    int tri_only; /* 1: it has no traversal of voxels (a voxel scene traces the binary BVH then) */
} bk_test_layout;

#define BK_TEST_LAYOUTS_MAX 8

static inline int bk_test_layouts(bk_test_layout *out)
{
    int n = 0;
    for (int i = 0; i < BK_TRAVERSAL_COUNT; ++i) {
        bk_traversal_variant v = bk_traversal_get(i);
        int                  seen = 0;
        for (int j = 0; j < n; ++j) seen |= out[j].accel == v.accel;
        if (seen || n == BK_TEST_LAYOUTS_MAX) continue;
        out[n].accel = v.accel;
        out[n].build = v.accel == BK_ACCEL_KDTREE ? BK_ACCEL_KDTREE : BK_ACCEL_BVH;
        out[n].width = v.accel == BK_ACCEL_CWBVH ? 8 : 2;
        out[n].tri_only = bk_traversal_index(v.accel, BK_STACK_GLOBAL, 0, BK_PRIM_VOX) < 0;
        n++;
    }
    return n;
}

/* 1 when lay[b] is the first layout of its accel: a test builds each accel once, for all its
 * layouts. */
static inline int bk_test_layout_first(const bk_test_layout *lay, int b)
{
    for (int j = 0; j < b; ++j)
        if (lay[j].build == lay[b].build) return 0;
    return 1;
}

#endif
