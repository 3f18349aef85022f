/* geom.h - what the builders index: a scene's triangles, then its voxel instances.
 *
 * Pipeline: bk_scene -> primitives (boxes and 48-byte leaf records, kernels/bk_accel.h) -> the BVH
 * and KD-tree builders, and bk_scene -> bk_vox_pack (bricks of every model, kernels/bk_voxel.h)
 * -> the accel's voxel arrays. Primitive i < tri_count is triangle i; primitive tri_count + j is
 * voxel instance j. Both builders see only this, so a new primitive type is added here.
 */
#ifndef BK_GEOM_H
#define BK_GEOM_H

#include "bk_accel.h"
#include "scene.h"

#include <stddef.h>
#include <stdint.h>

/* The brick data of a scene's voxel models (host arrays, owned). */
typedef struct bk_vox_pack {
    bk_vox_model_rec *models;
    uint32_t          model_count;
    bk_vox_brick     *bricks;
    uint32_t          brick_count;
    uint8_t          *colours;
    uint32_t          colour_count;
    uint32_t         *inst; /* per instance: its first face's HITS id, its model (bk_voxel.h) */
    uint32_t          instance_count;
} bk_vox_pack;

/* The primitives of a scene, as the builders see them: triangles, then voxel segments. A
 * segment is the part of one instance's model inside one BK_VOX_SEG^3 block of the model's cells
 * that holds voxels, with a box tight around them: a voxel world's instances overlap (props stand
 * in terrain chunks' boxes) and are mostly empty, so segments give the top level the culling the
 * surface's triangles would have, and bound each walk (kernels/bk_voxel.h) to a small block. */
#define BK_VOX_SEG 8 /* H100, world54k, BVH closest hit: 8^3 1.71 Grays/s, 16^3 1.64 */

typedef struct bk_vox_mseg {
    uint16_t lo[3], hi[3];
} bk_vox_mseg; /* model cells [lo, hi) */

typedef struct bk_geom {
    const bk_scene *s;
    uint32_t        count;      /* primitives: tri_count + segments */
    uint32_t       *brick_base; /* per model: its first brick */
    bk_vox_mseg    *msegs;      /* every model's segments, model by model */
    uint32_t       *mseg_first; /* per model: its first segment; [model_count] = total */
    uint32_t       *prim_inst;  /* per segment primitive: its instance */
    uint32_t       *prim_mseg;  /* per segment primitive: its model segment */
} bk_geom;

/* Checks what the builders rely on (vertex and model indices in range, counts within the limits
 * of the layouts) and makes the segments. 0, or -1 with one line in err. */
int  bk_geom_init(bk_geom *g, const bk_scene *s, char *err, size_t err_size);
void bk_geom_free(bk_geom *g);
/* Primitive i's box and its leaf record (rec[0].w: the id bits, without BK_TRI_LAST). */
void bk_geom_box(const bk_geom *g, uint32_t i, float lo[3], float hi[3]);
void bk_geom_record(const bk_geom *g, uint32_t i, bk_f4 rec[3]);
/* Bricks of every model (duplicate voxels: the last one in the file wins). 0, or -1 with err. */
int                  bk_vox_pack_build(const bk_scene *s, bk_vox_pack *out, char *err, size_t err_size);
void                 bk_vox_pack_free(bk_vox_pack *p);
static inline size_t bk_vox_pack_bytes(const bk_vox_pack *p)
{
    return sizeof(bk_vox_model_rec) * (size_t)p->model_count + sizeof(bk_vox_brick) * (size_t)p->brick_count +
           (size_t)p->colour_count + 2 * sizeof(uint32_t) * (size_t)p->instance_count;
}

#endif /* BK_GEOM_H */
