/* raster.h - the atlas as texels: conservative rasterization of its UV triangles (raster.c).
 *
 * Pipeline: bk_atlas (atlas.h) -> bk_atlas_rasterize: one bk_texel (kernels/bk_bake.h) per
 * covered texel, row-major -> bake; coverage, chart ids and bilinear reach ids for the dilation
 * and the tests. Pixels are numbered as atlas.h says (pages stacked vertically).
 *
 * Usage:
 *     bk_texel *tx; uint32_t n; uint8_t *cov;
 *     if (bk_atlas_rasterize(&scene, &atlas, &tx, &n, &cov, err, sizeof err)) { puts(err); ... }
 *     ... bake n texels into rgb[3 * atlas.width * atlas.height] at tx[i].pixel ...
 *     bk_image_dilate(rgb, cov, atlas.width, atlas.height, padding + 1);
 *     free(tx); free(cov);
 */
#ifndef BK_RASTER_H
#define BK_RASTER_H

#include "atlas.h"
#include "bk_bake.h"
#include "bk_texel.h"
#include "scene.h"

#include <stddef.h>
#include <stdint.h>

/* One bk_texel per texel that some triangle's UV footprint touches (conservative: slivers thinner
 * than a texel still get theirs), sorted by pixel. Where several triangles touch a texel the one
 * covering its centre wins, else the nearest one, and the position is the nearest point of that
 * triangle to the texel centre. *coverage (may be NULL to skip) is width * height bytes, 1 where
 * a texel was made. Both arrays are malloc'ed; free them. Returns 0 or -1 with err. */
int bk_atlas_rasterize(const bk_scene *s, const bk_atlas *a, bk_texel **texels, uint32_t *count, uint8_t **coverage,
                       char *err, size_t err_size);

/* The same texels as their refs only (pixel and triangle, 8 B each instead of 32), for a backend
 * that keeps its own copy of the texels (caps().keeps_texels): bk_texels_make makes the whole
 * texels from them a slice at a time, as the bake uploads them (bk_bake_run_opts.make_texels). */
int bk_atlas_rasterize_refs(const bk_scene *s, const bk_atlas *a, bk_texel_ref **refs, uint32_t *count,
                            uint8_t **coverage, char *err, size_t err_size);
/* out[i] = the texel bk_atlas_rasterize makes for refs[i] (the same bits), for i in [0, n); on
 * the host thread pool (pool.h). */
void bk_texels_make(const bk_scene *s, const bk_atlas *a, const bk_texel_ref *refs, uint32_t n, bk_texel *out);

/* What a backend needs to make the texels of refs itself (backend.h: bake_refs): the atlas's UVs
 * and pages (pointed to, not copied) and each triangle's vertex normals (*tri_n: malloc'ed, NULL
 * when the scene has none; free it after the bake). Their texels are bk_texels_make's. Returns 0,
 * or -1 when out of memory. */
int bk_texel_src_make(const bk_scene *s, const bk_atlas *a, bk_texel_src *src, float **tri_n);

/* The texels turned, in their own memory, into their refs (pixel and triangle: 8 of their 32 B),
 * in the same order, the rest of the block given back (realloc); *texels is freed and NULL
 * afterwards. For when the backend holds its own copy (caps().keeps_texels) or the bake is done:
 * what follows reads nothing else. Never fails: when realloc cannot shrink, the block stays. */
bk_texel_ref *bk_texels_compact(bk_texel **texels, uint32_t n);

/* Conservative coverage only: mask (width * height * page_count bytes) gets 1 where a triangle touches;
 * returns the number of covered texels. Degenerate triangles (tri_chart BK_NONE) are skipped. */
uint64_t bk_atlas_coverage(const bk_atlas *a, uint8_t *mask);

/* Conservative chart ids (width * height * page_count): ids[pixel] = chart of a triangle touching that texel, BK_NONE
 * where none (tests check the padding with it). */
void bk_atlas_chart_ids(const bk_atlas *a, uint32_t *ids);

/* Every texel a bilinear lookup at a point of a triangle reads (its centre at most one texel from
 * the triangle along both axes), the covered ones among them, gets that triangle's chart; BK_NONE
 * where none reads. The packer lets no two charts read one texel (padding 2 and more), so the
 * covered texels get the ids of bk_atlas_chart_ids, and bk_image_dilate_charts gives each of
 * the others the colours of its own chart only. */
void bk_atlas_reach_ids(const bk_atlas *a, uint32_t *ids);

/* Debug picture: every chart gets a random colour (rgb is width * height * page_count * 3 floats,
 * linear). */
void bk_atlas_debug_rgb(const bk_atlas *a, float *rgb);

#endif /* BK_RASTER_H */
