/* bvh_wide.h - the 4-wide BVH the CPU backend traces: a traversal layout collapsed from the binary
 * SAH BVH (src/bvh.c), not a second builder.
 *
 * Pipeline: bk_bvh_build -> binary layout (bk_bvh_node, kernels/bk_accel.h) -> bk_bvh4_build
 * (src/bvh_wide.c, host only) -> bk_bvh4_trace (src/trace_wide.c: SSE4.1 when the CPU has it,
 * else scalar; both give the same hits as kernels/bk_traverse.h's binary traversal).
 *
 * The collapse is SAH-greedy (as in Embree's BVH4 builder from a binary tree and tinybvh's
 * BVH4 conversion): a wide node starts with the two children of a binary node and, while it has
 * fewer than 4, replaces the inner child of largest surface area by that child's own two
 * children. Leaves are the binary tree's leaves, unchanged: the same triangle records (the
 * 48-byte records of the binary layout, in its array), in the same order. The GPU keeps the
 * binary layout; this one lives in host memory only.
 *
 * Ties. The binary traversal keeps, of hits at the same float distance, the one it tests last
 * (bk_tri_intersect accepts t <= best), i.e. the last in its depth-first order, which at every
 * binary node visits the child of smaller entry distance first. A wide node visits its up to four
 * children in another order, so on a tie the wide traversal asks the binary tree which of the two
 * records it would have tested last (bk_bvh4_later): ties are rare (a ray through a shared edge),
 * and the answer costs one slab test of the two records' lowest common binary ancestor.
 */
#ifndef BK_BVH_WIDE_H
#define BK_BVH_WIDE_H

#include "bk_accel.h"
#include "bk_ray.h"

#include <stddef.h>

#define BK_BVH4_WIDTH 4

/* 4-wide node, 128 bytes (two cache lines, 64-byte aligned): the children's boxes as structure of
 * arrays, so one SSE register holds one bound of four boxes and the slab test takes 6 loads, 6
 * subtractions and 6 multiplications for all four. A ray picks the near and far planes of each
 * axis by the sign of its direction (Embree's nearX/farX offsets), so no min/max of the two. */
typedef struct bk_bvh4_node {
    float    lo_x[4], hi_x[4];   /* children's boxes, x: lower bounds, upper bounds       32 B */
    float    lo_y[4], hi_y[4];   /*                   y                                    32 B */
    float    lo_z[4], hi_z[4];   /*                   z                                    32 B */
    int32_t  child[4];           /* as a binary child ref: >= 0 a wide node, < 0 a leaf whose
                                    first record is ~ref in the binary layout's record array
                                    (runs to the record marked BK_TRI_LAST); BK_REF_NONE for an
                                    unused slot                                            16 B */
    uint32_t count;              /* slots used: 2..4, always the first ones                  4 B */
    uint32_t pad[3];             /*                                                         12 B */
} bk_bvh4_node;                  /*                                                        128 B */

/* The wide BVH: owns its nodes and the tie table; reads the binary view's records and nodes. */
typedef struct bk_bvh4 {
    bk_bvh4_node *nodes;         /* root is node 0 */
    uint32_t      node_count;
    uint32_t      depth;         /* levels of wide nodes on the longest path */
    uint64_t     *path;          /* per record: its binary leaf's path from the root, bit k the
                                    child taken at level k (the tie rule walks it)      8 B/record */
    uint8_t      *path_len;      /* per record: levels on that path                      1 B/record */
    bk_accel_view bin;           /* the binary layout it was collapsed from (not owned) */
} bk_bvh4;

/* Which traversal code runs: the best the CPU has, or the scalar one (tests and comparisons). */
enum bk_bvh4_isa { BK_BVH4_ISA_AUTO = 0, BK_BVH4_ISA_SCALAR = 1, BK_BVH4_ISA_SSE41 = 2 };

/* Collapses a binary BVH of triangles (view->type BK_ACCEL_BVH, prim BK_PRIM_TRI). Deterministic
 * (single-threaded, a few ms for 1M triangles). 0, or -1 with a message (out of memory, a view it
 * cannot take). */
int  bk_bvh4_build(const bk_accel_view *bin, bk_bvh4 *out, char *err, size_t err_size);
void bk_bvh4_free(bk_bvh4 *w);

/* The ISA that BK_BVH4_ISA_AUTO resolves to on this CPU (__builtin_cpu_supports). */
int  bk_bvh4_isa_best(void);
const char *bk_bvh4_isa_name(int isa);

/* Traces rays[begin, end) into hits; closest (any_hit 0) or any hit. Counters as the binary
 * traversal's (nodes: wide nodes visited), added to acc[0] (nodes) and acc[1] (triangle tests);
 * ray_stats as bk_trace_opts.ray_stats (may be NULL). isa: enum bk_bvh4_isa. */
void bk_bvh4_trace(const bk_bvh4 *w, const bk_ray *rays, bk_hit *hits, uint64_t begin, uint64_t end, int any_hit,
                   int isa, uint32_t *ray_stats, uint64_t acc[2]);

/* 1 when the binary traversal would test record b after record a (so b wins a tie at equal t). */
int  bk_bvh4_later(const bk_bvh4 *w, const bk_ray_pre *r, uint32_t a, uint32_t b);

#endif
