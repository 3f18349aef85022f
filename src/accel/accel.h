/* accel.h - the container the builders fill: bk_accel (owns the arrays), its build options and
 * report, the view handed to traversals, freeing. The builders declare themselves in bvh.h and
 * kdtree.h; bk_accel_build (accel_build.h) picks one of them.
 *
 * Pipeline: bk_scene -> bk_bvh_build / bk_kd_build -> bk_accel (owns the arrays) -> bk_accel_view
 * (kernels/bk_accel.h), which the CPU backend traverses directly and the CUDA backend uploads.
 */
#ifndef BK_ACCEL_HOST_H
#define BK_ACCEL_HOST_H

#include "scene.h"
#include "bk_accel.h"
#include "geom.h"
#include "material.h"

typedef struct bk_build_opts {
    int   max_leaf;            /* BVH: at most this many triangles per leaf unless the depth limit forces more */
    int   max_depth;           /* levels of inner nodes, at most BK_MAX_DEPTH */
    float cost_node;           /* SAH cost of visiting an inner node, relative to one triangle test */
    float kd_empty_bonus;      /* KD-tree: SAH discount for splits with an empty side (0..1) */
    int   kd_max_refs_per_tri; /* KD-tree: stop splitting when references exceed this many per triangle */
    int   kd_sweep;            /* KD-tree: 1 = the plain split searches (sorted sweep in small nodes, one plane at
                                  a time in binned ones), the reference the default is tested against (same
                                  tree, slower); 0 = default */
} bk_build_opts;

/* The stages of a build, in order, as bk_build_info.stage_seconds counts them (a profile for
 * `baker build`; a stage a builder does not have stays 0): primitive records and bounds; the top
 * levels (split on the pool's chunks); the subtree tasks; joining their nodes into one depth-first
 * array (BVH: renumbering, KD-tree: splicing); the traversal layout and leaf records (BVH). */
enum bk_build_stage {
    BK_BUILD_PREP,
    BK_BUILD_TOP,
    BK_BUILD_SUBTREES,
    BK_BUILD_JOIN,
    BK_BUILD_FLATTEN,
    BK_BUILD_STAGES
};
extern const char *const bk_build_stage_names[BK_BUILD_STAGES]; /* accel.c */

typedef struct bk_build_info {
    double   seconds;
    double   stage_seconds[BK_BUILD_STAGES]; /* of it, per stage (bk_build_stage_names) */
    double   sah_cost; /* expected cost of a random ray, in triangle tests, for the tree as built */
    uint32_t nodes;    /* inner nodes (BVH: layout nodes) or all nodes (KD-tree) */
    uint32_t leaves;
    uint32_t depth;    /* levels of inner nodes on the longest path */
    uint32_t refs;     /* triangle references in leaves */
    uint32_t max_leaf; /* largest leaf */
    size_t   bytes;    /* memory of the traversal layout */
} bk_build_info;

typedef struct bk_accel {
    int           type; /* enum bk_accel_type */
    bk_bvh_node  *bvh_nodes;
    uint32_t      bvh_node_count;
    bk_kd_node   *kd_nodes;
    uint32_t      kd_node_count;
    uint32_t     *kd_refs;
    uint32_t      kd_ref_count;
    bk_f4        *tris;      /* 3 per leaf record (triangles, voxel instances), see bk_accel.h */
    uint32_t      tri_count; /* leaf records */
    bk_vox_pack   vox;       /* bricks of the voxel models (empty without voxels) */
    bk_vec3       lo, hi;
    bk_build_info info;
    /* the surface (bk_accel_set_surface): the pool's, not owned */
    const bk_f4 *alpha;
    uint32_t     alpha_count;
    bk_tex_view  tex;
} bk_accel;

/* Defaults; here, so the builders need nothing from accel.c (arrows point down). */
static inline bk_build_opts bk_build_opts_default(void)
{
    bk_build_opts o;
    o.max_leaf = 4;
    o.max_depth = BK_MAX_DEPTH;
    o.cost_node = 1.2f;
    o.kd_empty_bonus = 0.2f;
    o.kd_max_refs_per_tri = 6;
    o.kd_sweep = 0;
    return o;
}
bk_accel_view bk_accel_get_view(const bk_accel *a);
/* Gives a built accel the scene's surface: each triangle record's v1.w names its alpha record
 * (bk_material.h; 0 for an opaque one) and the view carries the pool's alpha records and texture
 * view. p (NULL: all opaque, no textures) must outlive every view of a. Call before a backend's
 * upload; a KD-tree's records and a BVH's alike. */
void        bk_accel_set_surface(bk_accel *a, const bk_tex_pool *p);
void        bk_accel_free(bk_accel *a);
const char *bk_accel_type_name(int type);

/* The words of --accel, one row each: X(word, accel type, layout, shown). layout is the BVH layout
 * traced (bk_trace_opts.bvh_width: 0 the backend's fastest, 2 binary, 8 compressed 8-wide); the
 * row of a type with layout 0 names the type (bk_accel_type_name, `baker build --accel`); a word
 * not shown is an alias the parser takes. The parsers, their help and errors, and the bench's
 * labels are made from this list. */
#define BK_ACCEL_WORDS(X)              \
    X("bvh", BK_ACCEL_BVH, 0, 1)       \
    X("bvh2", BK_ACCEL_BVH, 2, 1)      \
    X("cwbvh", BK_ACCEL_BVH, 8, 1)     \
    X("kdtree", BK_ACCEL_KDTREE, 0, 1) \
    X("kd", BK_ACCEL_KDTREE, 0, 0)
/* word -> its type and layout: 0, or -1 when no row has it; types_only: only the shown rows of
 * layout 0 (the type names) */
int bk_accel_word_parse(const char *word, int types_only, int *type, int *layout);
/* The shown words into buf (types_only: of layout 0), between sep with last before the last one:
 * ("|", "|") gives "bvh|bvh2|cwbvh|kdtree". Returns buf. */
const char *bk_accel_words(char *buf, size_t size, const char *sep, const char *last, int types_only);
/* The word of a type traced in a layout ("?" when no row has them). */
const char *bk_accel_layout_name(int type, int layout);

#endif
