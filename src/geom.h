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
    uint32_t         *face_base;     /* per instance, see bk_voxel.h */
    uint32_t          instance_count;
} bk_vox_pack;

static inline uint32_t bk_geom_count(const bk_scene *s) { return s->tri_count + s->vox_instance_count; }
/* Checks what the builders rely on: vertex and model indices in range, counts within the
 * limits of the layouts. 0, or -1 with one line in err. */
int  bk_geom_check(const bk_scene *s, char *err, size_t err_size);
/* Primitive i's box and its leaf record (rec[0].w: the id bits, without BK_TRI_LAST).
 * brick_base: bk_vox_brick_bases(s) (NULL without voxels). */
void bk_geom_box(const bk_scene *s, uint32_t i, float lo[3], float hi[3]);
void bk_geom_record(const bk_scene *s, const uint32_t *brick_base, uint32_t i, bk_f4 rec[3]);
/* Per model, its first brick in bk_vox_pack.bricks (malloc'ed; NULL when there are no models or
 * no memory: check s->vox_model_count). */
uint32_t *bk_vox_brick_bases(const bk_scene *s);
/* Bricks of every model (duplicate voxels: the last one in the file wins). 0, or -1 with err. */
int  bk_vox_pack_build(const bk_scene *s, bk_vox_pack *out, char *err, size_t err_size);
void bk_vox_pack_free(bk_vox_pack *p);
static inline size_t bk_vox_pack_bytes(const bk_vox_pack *p)
{
    return sizeof(bk_vox_model_rec) * (size_t)p->model_count + sizeof(bk_vox_brick) * (size_t)p->brick_count
         + (size_t)p->colour_count + sizeof(uint32_t) * (size_t)p->instance_count;
}

#endif /* BK_GEOM_H */
