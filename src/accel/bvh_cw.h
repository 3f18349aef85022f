/* bvh_cw.h - the compressed 8-wide BVH (bk_cw_node, kernels/bk_accel.h) the CUDA backend traces:
 * a traversal layout collapsed from the binary SAH BVH (src/accel/bvh.c), not a second builder.
 *
 * Pipeline: bk_bvh_build -> binary layout -> bk_cwbvh_build (host, here) -> bk_cwbvh_view ->
 * upload -> bk_cw_trace (kernels/bk_traverse.h; all three stack strategies, CPU and CUDA alike).
 *
 * The collapse is greedy by surface area, as src/accel/bvh_wide.c's: a node starts with the two children
 * of a binary node and, while it has fewer than 8, replaces the inner child of largest area by that
 * child's two children. A binary subtree of at most BK_CW_MERGE records becomes one leaf. Children
 * are put in the slot of the direction octant whose rays should visit them first (the child of
 * smallest centroid projection on the octant's diagonal, greedily), so a ray orders a node's
 * children by an exclusive or. Of hits at equal distance every traversal keeps the lowest id
 * (bk_hit_better), so bk_cw_trace returns the binary traversal's hits.
 */
#ifndef BK_BVH_CW_H
#define BK_BVH_CW_H

#include "bk_accel.h"

#include <stddef.h>

typedef struct bk_cwbvh {
    bk_cw_node *nodes; /* root is node 0 */
    uint32_t    node_count;
    bk_f4      *recs; /* 3 per record, in leaf order (the binary layout's records) */
    uint32_t    rec_count;
    uint32_t    depth; /* levels of nodes on the longest path */
} bk_cwbvh;

/* Collapses binary BVH bin (type BK_ACCEL_BVH, prim not BK_PRIM_VOX). Deterministic. 0, or -1 with a
 * message: out of memory, a tree deeper than BK_CW_MAX_DEPTH compressed levels or with leaves too
 * long for a node's record offsets (a degenerate scene: the caller traces the binary layout). */
int  bk_cwbvh_build(const bk_accel_view *bin, bk_cwbvh *out, char *err, size_t err_size);
void bk_cwbvh_free(bk_cwbvh *cw);

/* The view that traces cw: bin's, with type BK_ACCEL_CWBVH and cw's nodes and records (host
 * pointers; a backend swaps in its own). */
bk_accel_view bk_cwbvh_view(const bk_cwbvh *cw, const bk_accel_view *bin);

#endif
