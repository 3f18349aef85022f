/* lit.h - the "lit" pages of a glTF output: each lightmap texel times the albedo of the surface
 * it lies on, plus what that surface emits (albedo x light + emission, linear), dilated like the
 * lightmap, so a viewer that shows only a material's emissive texture shows the baked look.
 *
 * Pipeline: bk_scene + bk_atlas + the bake's linear RGB pages (after fill and dilation) + the
 * scene's texture pool (material.h) -> per page: rasterize each triangle's lightmap-UV triangle,
 * interpolate its texture UV at each texel centre, sample kd x map_kd (bk_tex_sample, the
 * kernels' own bilinear fetch) and ke x map_ke -> out. gltf.c encodes the pages as sRGB PNGs
 * with the bake's exposure.
 *
 * A texel takes the triangle whose lightmap-UV triangle is nearest its centre (inside beats
 * outside; texels within 0.75 texel of a triangle's edge take it with clamped barycentrics, as
 * the conservative raster of the bake does), the rest are dilated from their covered neighbours
 * (bk_image_dilate_charts with the atlas's reach ids when charts lie close).
 *
 * Usage:
 *     float *lit = malloc(sizeof(float) * 3 * BK_ATLAS_PIXELS(&atlas));
 *     if (bk_lit_pages(&scene, &atlas, rgb, &pool, lit, err, sizeof err)) puts(err);
 */
#ifndef BK_LIT_H
#define BK_LIT_H

#include "atlas.h"
#include "material.h"
#include "scene.h"

#include <stddef.h>

/* rgb and out: BK_ATLAS_PIXELS(a) * 3 floats, pages stacked (atlas.h). pool: s's texture pool
 * (bk_tex_pool_build), NULL to build one here. Returns 0, or -1 with one line in err. */
int bk_lit_pages(const bk_scene *s, const bk_atlas *a, const float *rgb, const bk_tex_pool *pool, float *out, char *err,
                 size_t err_size);

#endif /* BK_LIT_H */
