/* bk_accel.h - traversal layouts of the two acceleration structures, shared by CPU and CUDA.
 *
 * The host builders (src/accel/bvh.c, src/accel/kdtree.c) each build their own build-node format and then
 * flatten it into the layouts below (the tinybvh habit: one build format, one layout per use).
 * A bk_accel_view is the non-owning flat description a traversal gets: host pointers on the CPU,
 * device pointers (d_*) after the CUDA backend's upload.
 */
#ifndef BK_ACCEL_H
#define BK_ACCEL_H

#include "bk_common.h"
#include "bk_material.h"

/* BK_ACCEL_CWBVH is not built on its own: a backend collapses a binary BVH into it (src/accel/bvh_cw.c)
 * and traces it in place of the binary layout (bk_trace_opts.bvh_width). */
enum bk_accel_type { BK_ACCEL_BVH = 0, BK_ACCEL_KDTREE = 1, BK_ACCEL_CWBVH = 2 };

/* What the leaves hold: opaque triangles only; triangles some of which are alpha-tested (a record's
 * v1.w names its cut-out, bk_material.h); or triangles, cut-outs and voxel instances (bk_voxel.h).
 * A scene uses the least it needs, so an opaque one's traversal carries neither the cut-out filter
 * nor the voxel code (the filter's test alone, compiled in, cost the GPU's KD-tree 9-14 % of the
 * rays per second on sponza). */
enum bk_prim_type { BK_PRIM_TRI = 0, BK_PRIM_VOX = 1, BK_PRIM_CUT = 2 };

/* Deepest tree the builders make. Every stack entry stands for one pending subtree on the path
 * from the root, so BK_MAX_DEPTH bounds the stack, and the BVH restart trail holds one bit per
 * level in a uint64_t. */
#define BK_MAX_DEPTH 60

/* Binary BVH node, 64 bytes: both children's boxes live in the parent, so one node fetch
 * (four 16-byte loads) tests two boxes (Aila & Laine 2009, "Understanding the Efficiency of Ray
 * Traversal on GPUs"). A child reference is an int32: >= 0 an inner node index, < 0 a leaf
 * whose first triangle is ~ref in the BVH's triangle array. */
typedef struct bk_bvh_node {
    bk_f4 xy0;  /* child 0 box: lo.x hi.x lo.y hi.y                       16 B */
    bk_f4 xy1;  /* child 1 box: lo.x hi.x lo.y hi.y                       16 B */
    bk_f4 z01;  /* child 0 lo.z hi.z, child 1 lo.z hi.z                   16 B */
    bk_f4 refs; /* bits of int32: child 0 ref, child 1 ref, unused x2     16 B */
} bk_bvh_node;  /*                                                        64 B */

/* Compressed 8-wide BVH node, 80 bytes (five 16-byte loads; after Ylitie, Karras & Laine 2017,
 * "Efficient Incoherent Ray Traversal on GPUs Through Compressed Wide BVHs"). The children's boxes
 * are quantised to 8 bits per plane on a grid local to the node: plane q of axis k lies at
 * origin[k] + q * 2^(exp[k] - 127), rounded outwards by the builder, so every child box contains
 * the exact one. Slot s of a node holds the child that rays of direction octant s should visit
 * first (octant bit k: the ray runs down axis k), so a ray visits slots in the order s ^ octant
 * with no sorting. Inner children sit next to each other in slot order from child_base; leaf
 * children are runs of records (3 x bk_f4 as the binary layout's, in this layout's own copy) that
 * start at rec_base + meta[s] and end at the one marked BK_TRI_LAST. */
typedef struct bk_cw_node {
    BK_ALIGN16 float origin[3];  /* the grid's corner: the node's box lo                     12 B */
    uint8_t          exp[3];     /* per axis: grid step 2^(exp - 127)                          3 B */
    uint8_t          imask;      /* bit s: slot s is an inner node                             1 B */
    uint32_t         child_base; /* the first inner child's node index                         4 B */
    uint32_t         rec_base;   /* the first leaf record of the node's leaf children          4 B */
    uint8_t          meta[8];    /* leaf slot: first record - rec_base; empty slot: 0xFF;
                                    inner slot: 0                                              8 B */
    uint8_t qlo[3][8];           /* per axis, per slot: the box's low plane                   24 B */
    uint8_t qhi[3][8];           /* per axis, per slot: the box's high plane                  24 B */
} bk_cw_node;                    /*                                                           80 B */
#define BK_CW_EMPTY 0xFFu
/* Levels of compressed nodes the traversal takes: the short stack's restart trail keeps 4 bits per
 * level in two 64-bit words (the builder refuses deeper trees; the backends then trace the binary
 * layout). */
#define BK_CW_MAX_DEPTH 32

/* Triangles are stored as 3 bk_f4 (48 bytes): v0, v1, v2. v0.w holds, as bits, the triangle's
 * number in the file (rays.md numbering) with BK_TRI_LAST set on the last triangle of a BVH leaf,
 * so a leaf needs no count. The BVH orders triangles by leaf; the KD-tree keeps file order and
 * reaches them through a reference array, because one triangle may sit in several leaves. */
#define BK_TRI_LAST 0x80000000u
#define BK_TRI_ID   0x7FFFFFFFu
/* Child references that stand for no subtree: NONE (a dead end: pop) and DONE (nothing left).
 * The BVH builder keeps triangle starts below 2^31 - 2, so ~start equals neither. */
#define BK_REF_NONE ((int32_t)0x80000000)
#define BK_REF_DONE ((int32_t)0x80000001)

/* KD-tree node, 8 bytes (the layout of pbrt's KdAccelNode). Nodes are in depth-first order: the
 * child below the split plane of node i is node i + 1. */
typedef struct bk_kd_node {
    uint32_t flags; /* bits 0-1: split axis, 3 = leaf; bits 2-31: inner: index of the child
                       above the plane; leaf: number of triangle references        4 B */
    uint32_t data;  /* inner: split position (float bits); leaf: first reference   4 B */
} bk_kd_node;       /*                                                             8 B */

#define BK_KD_LEAF 3u

/* ---- voxels (kernels/bk_voxel.h walks them) ---------------------------------------------- */

/* In a leaf record's id (v0.w): the record is a voxel instance, not a triangle. Triangle ids stay
 * below it. */
#define BK_PRIM_VOX_BIT 0x40000000u
#define BK_VOX_AUX      0x80000000u

/* A model, 32 bytes. Its bricks are bricks[brick_base + bx + nbx * (by + nby * bz)] with
 * nb = (size + 3) / 4 per axis; its voxels' palette indices are colours[colour_base + rank]. */
typedef struct bk_vox_model_rec {
    BK_ALIGN16 uint32_t sx;
    uint32_t            sy, sz;        /* size in voxels, 1..256                                    12 B */
    uint32_t            brick_base;    /*                                                            4 B */
    uint32_t            colour_base;   /*                                                            4 B */
    uint32_t            material_base; /* material of palette index k: material_base + k             4 B */
    uint32_t            voxel_count;   /*                                                            4 B */
    uint32_t            pad;           /*                                                            4 B */
} bk_vox_model_rec;                    /*                                                           32 B */

/* A brick of 4 x 4 x 4 voxels, 16 bytes. */
typedef struct bk_vox_brick {
    BK_ALIGN16 uint32_t mask_lo; /* bits 0-31 of the occupancy mask                       4 B */
    uint32_t            mask_hi; /* bits 32-63                                                 4 B */
    uint32_t            rank;    /* voxels of the model in earlier bricks (grid order)         4 B */
    uint32_t            pad;     /*                                                            4 B */
} bk_vox_brick;                  /*                                                           16 B */

/* A voxel segment's leaf record (one instance's model inside one 8^3 block, src/accel/geom.h), 3 x 16
 * bytes like a triangle's, with what the walk needs (the instance and model records are read only
 * at a hit):
 *   v0 = world box lo (x y z), id bits: BK_PRIM_VOX_BIT | instance (| BK_TRI_LAST in a BVH leaf)
 *   v1 = world box hi (x y z), the model's first brick (bits)
 *   v2 = T (x y z, integers as floats: world = M p + T), bits: rotation byte (vox.h) | bricks
 *        along model x << 7 | bricks along model y << 14 */


typedef struct bk_accel_view {
    int32_t            type;      /* enum bk_accel_type */
    int32_t            prim;      /* enum bk_prim_type (bk_traverse.h): what the leaves hold */
    uint32_t           depth;     /* levels of inner nodes on the longest path */
    const bk_bvh_node *bvh_nodes; /* BVH: root is node 0, always an inner node */
    uint32_t           bvh_node_count;
    const bk_kd_node  *kd_nodes; /* KD-tree: root is node 0 */
    uint32_t           kd_node_count;
    const uint32_t    *kd_refs; /* KD-tree: triangle indices, per leaf */
    uint32_t           kd_ref_count;
    const bk_f4       *tris;      /* 3 per leaf record: triangles, then voxel instances */
    uint32_t           tri_count; /* leaf records (triangles + voxel instances) */
    /* voxels (prim BK_PRIM_VOX); see bk_voxel.h */
    const bk_vox_model_rec *vox_models;
    uint32_t                vox_model_count;
    const bk_vox_brick     *vox_bricks;
    uint32_t                vox_brick_count;
    const uint8_t          *vox_colours; /* palette index per voxel, by model and rank */
    uint32_t                vox_colour_count;
    const uint32_t         *vox_inst; /* 2 per instance: the HITS id of its first voxel's face 0, its model */
    uint32_t                vox_instance_count;
    bk_vec3                 lo, hi; /* scene bounds (the KD-tree's root cell) */
    /* compressed wide BVH (type BK_ACCEL_CWBVH): its nodes; tris then holds its own copy of the
     * records, in its leaf order; bvh_nodes stays the binary layout it came from */
    const bk_cw_node *cw_nodes;
    uint32_t          cw_node_count;
    /* alpha-tested triangles (bk_material.h): 2 per record, named by a record's v1.w; NULL when
     * every triangle is opaque. tex: the texture pool they and the bake read. */
    const bk_f4 *alpha;
    uint32_t     alpha_count;
    bk_tex_view  tex;
} bk_accel_view;

/* The bytes a trace reads of a view: its nodes, leaf records and voxel data (what --ray-order auto
 * weighs against BK_RAY_ORDER_CACHED_BYTES, bk_ray.h). */
BK_HD uint64_t bk_accel_view_bytes(const bk_accel_view *v)
{
    return (uint64_t)v->bvh_node_count * sizeof(bk_bvh_node) + (uint64_t)v->cw_node_count * sizeof(bk_cw_node) +
           (uint64_t)v->kd_node_count * sizeof(bk_kd_node) + (uint64_t)v->kd_ref_count * sizeof(uint32_t) +
           (uint64_t)v->tri_count * 3 * sizeof(bk_f4) + (uint64_t)v->vox_brick_count * sizeof(bk_vox_brick) +
           (uint64_t)v->vox_model_count * sizeof(bk_vox_model_rec) + v->vox_colour_count +
           (uint64_t)v->alpha_count * 2 * sizeof(bk_f4);
}

BK_HD bk_kd_node bk_kd_make_inner(int axis, float split, uint32_t above)
{
    bk_kd_node n;
    n.flags = (uint32_t)axis | (above << 2);
    n.data = bk_float_bits(split);
    return n;
}
BK_HD bk_kd_node bk_kd_make_leaf(uint32_t count, uint32_t first)
{
    bk_kd_node n;
    n.flags = BK_KD_LEAF | (count << 2);
    n.data = first;
    return n;
}

#endif /* BK_ACCEL_H */
