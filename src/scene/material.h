/* material.h - a scene's materials made into what the kernels read (kernels/bk_material.h): the
 * texture pool, the texture record of each material map, and the alpha records of the triangles
 * whose material is not opaque.
 *
 * Pipeline: bk_scene (materials, decoded images: src/io/texture.c) -> bk_tex_pool_build (here) ->
 * bk_accel_set_surface (accel.h: the records' v1.w, the pool's view) and bk_bake_data_build_hit
 * (the material records' texture uses, the triangles' texture coordinates) -> backends (uploaded
 * once per scene).
 *
 * Usage:
 *     bk_tex_pool pool;
 *     if (bk_tex_pool_build(scene, &pool, err, sizeof err)) fail(err);
 *     bk_accel_set_surface(&accel, &pool);          // before the backend's upload
 *     ...
 *     bk_tex_pool_free(&pool);                      // after the accel is done with
 */
#ifndef BK_MATERIAL_HOST_H
#define BK_MATERIAL_HOST_H

#include "bk_material.h"
#include "scene.h"

/* A material's maps, as bk_tex_pool.mat_tex indexes them. */
enum bk_mat_map { BK_MAT_MAP_KD = 0, BK_MAT_MAP_KE = 1, BK_MAT_MAP_D = 2, BK_MAT_MAPS = 3 };

typedef struct bk_tex_pool {
    bk_tex_rec *recs; /* one per material map that loaded */
    uint32_t    rec_count;
    uint32_t   *texels8; /* every 8-bit image once, RGBA */
    size_t      texel8_count;
    bk_f4      *texelsf; /* every HDR image once */
    size_t      texelf_count;
    float       srgb[256];
    uint32_t   *mat_tex; /* BK_MAT_MAPS per material: its record, or BK_NONE */
    uint32_t    material_count;
    /* per triangle (tri_alpha, tri_count of them or NULL when all are opaque): 0, or 1 + its
     * record in alpha (2 bk_f4 each, bk_material.h) */
    uint32_t *tri_alpha;
    uint32_t  tri_count;
    bk_f4    *alpha;
    uint32_t  alpha_count;
    uint32_t  textured_tris; /* triangles whose material has an albedo or emission map */
} bk_tex_pool;

/* Builds p from s (an empty pool when s has no maps and no cut-outs). Returns 0, or -1 with err
 * (out of memory, a pool over 2^32 texels). p is then safe to free. */
int  bk_tex_pool_build(const bk_scene *s, bk_tex_pool *p, char *err, size_t err_size);
void bk_tex_pool_free(bk_tex_pool *p);
/* Host pointers into p for the kernels; zeroed for NULL. */
bk_tex_view bk_tex_pool_view(const bk_tex_pool *p);
/* The texture record of material m's map k (enum bk_mat_map), BK_NONE when it has none. */
uint32_t bk_tex_pool_map(const bk_tex_pool *p, uint32_t m, int k);
/* The albedo (kd x map_kd, or map_kd alone for kd_by_map; 0.8 grey for the default material) and
 * emission (ke x map_ke) of triangle t of s at corner weights (b1, b2) of corners 1 and 2, linear,
 * as the bake's rules have them (docs/materials.md); tv = bk_tex_pool_view(p). */
void bk_tex_pool_surface(const bk_tex_pool *p, const bk_tex_view *tv, const bk_scene *s, uint32_t t, float b1, float b2,
                         float albedo[3], float emission[3]);
/* Bytes of texels and records: what a device holds for the pool. */
uint64_t bk_tex_pool_bytes(const bk_tex_pool *p);
/* Whether the surface of triangle t stands at barycentrics (b1, b2) for a texel (bk_alpha_stands
 * with no coin: a BLEND surface stands where its opacity is above 0). 1 for an opaque triangle. */
int bk_tex_pool_texel_stands(const bk_tex_pool *p, uint32_t t, float b1, float b2);

#endif /* BK_MATERIAL_HOST_H */
