/* bvh_wide.h - the wide (8 children, or 4: BK_WBVH_WIDTH) BVH the CPU backend traces: a traversal
 * layout collapsed from the binary SAH BVH (src/accel/bvh.c), not a second builder.
 *
 * Pipeline: bk_bvh_build -> binary layout (bk_bvh_node, kernels/bk_accel.h) -> bk_wbvh_build
 * (src/accel/bvh_wide.c, host only) -> bk_wbvh_trace (src/accel/trace_wide.c: AVX2 or SSE4.1 when the CPU
 * has them, else scalar; all give the same hits, and the binary traversal's, see below).
 *
 * The collapse is SAH-greedy (as in Embree's BVH4 builder from a binary tree and tinybvh's
 * BVH4 conversion): a wide node starts with the two children of a binary node and, while it has
 * fewer than W, replaces the inner child of largest surface area by that child's own two
 * children. A binary subtree of at most 8 triangles becomes one wide leaf (BK_WBVH_MERGE in
 * bvh_wide.c); otherwise leaves are the binary tree's leaves. A leaf's triangles, in the binary
 * layout's record order, are copied into 4-triangle blocks for the SIMD test (bk_wbvh_tri4). The
 * GPU keeps the binary layout; this one lives in host memory only.
 *
 * Ties. Of hits at the same float distance every traversal keeps the one of lowest id
 * (bk_hit_better, kernels/bk_traverse.h), whatever order it tests them in, so the wide and the
 * binary traversals return the same hits.
 */
#ifndef BK_BVH_WIDE_H
#define BK_BVH_WIDE_H

#include "bk_accel.h"
#include "bk_ray.h"
#include "bk_traverse.h"

#include <stddef.h>

/* Children per node: 4 or 8 (a compile-time choice; 8 measured faster, see trace_wide.c). */
#ifndef BK_WBVH_WIDTH
#define BK_WBVH_WIDTH 8
#endif
#define BK_WBVH_PAD (BK_WBVH_WIDTH == 8 ? 7 : 3)

/* Wide node, W = BK_WBVH_WIDTH children: 256 bytes for W = 8 (four cache lines), 128 for W = 4
 * (two), 64-byte aligned. The children's boxes are a structure of arrays, so one SIMD register
 * holds one bound of 4 (SSE) or 8 (AVX2) boxes and the slab test of all of them takes 6 loads,
 * 6 subtractions and 6 multiplications per register. A ray picks the near and far planes of each
 * axis by the sign of its direction (Embree's nearX/farX offsets), so no min/max of the two.
 * Byte offsets for W = 8 (W = 4: halve them):
 *   0 lo_x, 32 hi_x, 64 lo_y, 96 hi_y, 128 lo_z, 160 hi_z, 192 child, 224 count, 228 pad. */
typedef struct bk_wbvh_node {
    float   lo_x[BK_WBVH_WIDTH], hi_x[BK_WBVH_WIDTH]; /* children's boxes, x        8W B */
    float   lo_y[BK_WBVH_WIDTH], hi_y[BK_WBVH_WIDTH]; /*                   y        8W B */
    float   lo_z[BK_WBVH_WIDTH], hi_z[BK_WBVH_WIDTH]; /*                   z        8W B */
    int32_t child[BK_WBVH_WIDTH];                     /* >= 0 a wide node, < 0 a leaf whose first block is ~ref
                                                         in tri4 (runs to the block marked BK_WBVH_BLOCK_LAST);
                                                         BK_REF_NONE for an unused slot                    4W B */
    uint32_t count;                                   /* slots used: 2..W, always the first ones           4 B */
    uint32_t pad[BK_WBVH_PAD];                        /*                                       (28 or 12) B */
} bk_wbvh_node;                                       /*                                  32W B */
BK_STATIC_ASSERT(sizeof(bk_wbvh_node) == 32 * BK_WBVH_WIDTH, "wide node size");

/* Leaf triangles, 4 to a block, 192 bytes (three cache lines): the vertices as structure of arrays,
 * so the SIMD test reads the ray's permuted axes (the watertight test's kx, ky, kz) at per-ray
 * offsets, with no shuffles; the same floats as the binary layout's records. A wide node's leaf
 * child ~b names block b; a wide leaf of n records (a binary leaf's run, or a small subtree's
 * leaves depth first) fills ceil(n / 4) consecutive blocks, the last one marked. Lanes past the
 * leaf's end repeat its last triangle and are marked unused. Ids and vertices are here so that a
 * ray never reads the binary layout's records (any hit: its id; closest hit: its id and the
 * precise t, from the block it last tested). */
#define BK_WBVH_LANE_UNUSED 0x80000000u /* in rec[k]: lane k holds no triangle */
#define BK_WBVH_BLOCK_LAST  0x40000000u /* in rec[0]: the leaf's last block */
#define BK_WBVH_REC         0x3FFFFFFFu /* in rec[k]: the record (so at most 2^30 records) */
typedef struct bk_wbvh_tri4 {
    float    v[9][4]; /* v0.x v0.y v0.z v1.x v1.y v1.z v2.x v2.y v2.z, 4 lanes each  144 B */
    uint32_t rec[4];  /* each lane's record in the binary layout, with the flags
                         above                                                    16 B */
    uint32_t id[4];   /* each lane's triangle number (the HITS id)                 16 B */
    uint32_t pad[4];  /*                                                          16 B */
} bk_wbvh_tri4;       /*                                                         192 B */

/* The wide BVH: owns its nodes and leaf blocks. */
typedef struct bk_wbvh {
    bk_wbvh_node *nodes; /* root is node 0 */
    uint32_t      node_count;
    bk_wbvh_tri4 *tri4; /* leaf blocks */
    uint32_t      tri4_count;
    uint32_t      depth; /* levels of wide nodes on the longest path */
    bk_accel_view bin;   /* the binary layout it was collapsed from (not owned) */
} bk_wbvh;

/* Which traversal code runs: the best the CPU has, or the scalar one (tests and comparisons). */
enum bk_wbvh_isa { BK_WBVH_ISA_AUTO = 0, BK_WBVH_ISA_SCALAR = 1, BK_WBVH_ISA_SSE41 = 2, BK_WBVH_ISA_AVX2 = 3 };

/* Collapses a binary BVH of triangles (view->type BK_ACCEL_BVH, prim not BK_PRIM_VOX). Deterministic
 * (single-threaded, a few ms for 1M triangles). 0, or -1 with a message (out of memory, a view it
 * cannot take). */
int  bk_wbvh_build(const bk_accel_view *bin, bk_wbvh *out, char *err, size_t err_size);
void bk_wbvh_free(bk_wbvh *w);

/* The ISA that BK_WBVH_ISA_AUTO resolves to on this CPU (__builtin_cpu_supports). */
int         bk_wbvh_isa_best(void);
const char *bk_wbvh_isa_name(int isa);

/* Traces rays[begin, end) into hits; closest (any_hit 0) or any hit. Counters as the binary
 * traversal's (nodes: wide nodes visited), added to acc[0] (nodes) and acc[1] (triangle tests);
 * ray_stats as bk_trace_opts.ray_stats (may be NULL). isa: enum bk_wbvh_isa. */
void bk_wbvh_trace(const bk_wbvh *w, const bk_ray *rays, bk_hit *hits, uint64_t begin, uint64_t end, int any_hit,
                   int isa, uint32_t *ray_stats, uint64_t acc[2]);

/* One ray (the bake's loop), with st's counters as bk_trace_dispatch's but rays; isa resolved
 * (bk_wbvh_isa_resolve: what the CPU has, at most the one asked for). */
bk_hit bk_wbvh_trace_one(const bk_wbvh *w, const bk_ray *ray, int any_hit, int isa, bk_trace_stats *st);
int    bk_wbvh_isa_resolve(int isa);

/* The collapse's steps, shared with the compressed layout (src/accel/bvh_cw.c). A child of a wide node:
 * a binary child ref and its box. */
typedef struct bk_bvh_child {
    int32_t ref;
    float   lo[3], hi[3];
} bk_bvh_child;
/* Records under binary ref; size[] gets them for every inner node below (0xFFFFFFFF on a malformed
 * tree). */
uint32_t bk_bvh_subtree_sizes(const bk_accel_view *bin, int32_t ref, uint32_t level, uint32_t *size);
/* Appends the records under binary ref (a leaf's run, or every leaf of a subtree, depth first) to
 * out[*count ...] (room for bin->tri_count in all). 0, or -1 on a malformed tree. */
int bk_bvh_gather_records(const bk_accel_view *bin, int32_t ref, uint32_t level, uint32_t *out, uint32_t *count);
/* A child the collapse keeps as a leaf: a binary leaf, or a subtree of at most merge records. */
int bk_bvh_child_is_leaf(const bk_bvh_child *c, const uint32_t *size, uint32_t merge);
/* The children of a wide node made from binary inner node n: its two children, then, while fewer
 * than width, the inner child of largest surface area (first on equal areas) replaced by its two.
 * The count, or -1 on a ref out of range. */
int bk_bvh_wide_children(const bk_accel_view *bin, const uint32_t *size, uint32_t merge, int32_t n, int width,
                         bk_bvh_child *c);


#endif
