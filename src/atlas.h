/* atlas.h - lightmap UVs: charts, packing, texel rasterization, and the mesh writer.
 *
 * Pipeline: bk_scene -> bk_atlas_build (weld, adjacency, charts, projection, packing; or the
 * file's own vt with --uv file) -> bk_atlas_rasterize (one bk_texel per covered texel, row-major)
 * -> bake -> bk_fill_hidden_texels (fill.h) -> bk_image_dilate / bk_image_write (image.h);
 * bk_mesh_write_obj writes the mesh with its lightmap UVs.
 *
 * Usage:
 *     bk_atlas_opts o; bk_atlas_opts_default(&o); o.size = 1024; o.scene_path = path;
 *     bk_atlas a;
 *     if (bk_atlas_build(&scene, &o, &a, err, sizeof err) != 0) { puts(err); ... }
 *     bk_texel *tx; uint32_t n; uint8_t *cov;
 *     bk_atlas_rasterize(&scene, &a, &tx, &n, &cov, err, sizeof err);
 *     ... bake n texels into rgb[3 * a.width * a.height] at tx[i].pixel ...
 *     bk_image_dilate(rgb, cov, a.width, a.height, o.padding + 1);
 *     free(tx); free(cov); bk_atlas_free(&a);
 *
 * UV conventions. Inside the atlas (bk_atlas.uv) u runs along image columns and v down image
 * rows: texel (x, y), pixel y * width + x, has its centre at ((x + 0.5) / width, (y + 0.5) / height),
 * and row 0 is the first row of the PNG. OBJ files count v upwards from the bottom of the image,
 * so bk_mesh_write_obj writes vt = (u, 1 - v) and --uv file reads v = 1 - vt.v: a mesh written by
 * --mesh-out and baked again with --uv file gives the same texels.
 *
 * Pages. With page_count > 1 the atlas is page_count images of width x height; UVs stay in
 * [0,1]^2 within a triangle's page (tri_page). Texels are numbered as if the pages were stacked
 * vertically into one width x (height * page_count) image: pixel = (page * height + y) * width + x
 * = page * width * height + y * width + x (a uint32: page_count * width * height <= 2^32 is
 * checked). Coverage, chart ids and baked images use the same layout, so page p is the slice
 * [p * width * height, (p + 1) * width * height) of them.
 *
 * Charts may touch the atlas border (a game samples lightmaps with clamp-to-edge). Between two
 * charts lies what bilinear filtering needs: the texels a lookup inside a chart reads (centres
 * within one texel of it along both axes, bk_atlas_reach_ids) are read by no other chart, and with
 * `padding` P > 2 they keep P - 2 texels from another chart's. For charts on texel corners (the
 * voxel quads, and the rectangles' packing of padded blocks) that is P empty texels between them;
 * the texels of charts packed by their shapes may lie one texel apart, or side by side where
 * their edges fall between texel centres (close_charts), so the dilation gives each texel that
 * a chart's lookups read that chart's colours (bk_image_dilate_charts).
 */
#ifndef BK_ATLAS_H
#define BK_ATLAS_H

#include "bk_bake.h"
#include "scene.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BK_ATLAS_MAX_SIZE 16384  /* largest atlas side bk_atlas_build makes (texels) */
/* A bilinear lookup reads the texels whose centres lie within this many texels of its point
 * along both axes: a chart's footprint, what the shape packer keeps apart (atlas_pack.c) and
 * bk_atlas_reach_ids labels. */
#define BK_ATLAS_REACH 1.0

/* Texels of all pages together: width * height * page_count. */
#define BK_ATLAS_PIXELS(a) ((size_t)(a)->width * (size_t)(a)->height * (size_t)(a)->page_count)

typedef struct bk_atlas_opts {
    int         size;             /* square atlas side in texels (default 1024); ignored when
                                     texels_per_unit > 0 */
    float       texels_per_unit;  /* > 0: chart scale in texels per world unit; the atlas side
                                     is then the smallest multiple of 4 that holds every chart */
    int         padding;          /* texels between the charts' bilinear footprints, plus 2: >= 2
                                     (default 2: no texel read by two charts; see above) */
    int         uv_from_file;     /* 1: use the OBJ's vt (--uv file) instead of making charts */
    float       cone_deg;         /* largest angle between a triangle's normal and its chart's
                                     (default 20); planar projection shrinks a triangle's texel
                                     area by at most cos(cone_deg) */
    const char *scene_path;       /* names the scene in error messages; may be NULL */
    int         planar_only;      /* 1: no smooth (conformally unfolded) charts, only planar
                                     projections within cone_deg */
    int         no_fill;          /* 1: every chart at the one uniform scale (no fill pass) */
    const float *tri_scale;       /* NULL, or per triangle a factor on its texel density along
                                     each axis (--object-scale: Unity's "scale in lightmap"):
                                     its texel area is factor^2 times the atlas's density; no
                                     chart spans two factors. Ignored by --uv file and voxels. */
    /* Rectangular charts given by the caller (the voxel surface's quads: voxmesh.h). Rectangle i
     * is the two triangles rect_first_tri + 2 i and + 2 i + 1, corners (c0 c1 c2) and (c0 c2 c3),
     * and becomes a chart of exactly w x h texels: c0 -> c1 along w, c0 -> c3 along h, corners on
     * texel corners, so each texel centre lies inside the quad and the rasterizer makes exactly
     * w x h texels (no conservative ring). The triangles before rect_first_tri are charted as a
     * mesh, at texels_per_unit or, when it is 0, at the largest scale that fits one page beside
     * the rectangles. */
    const struct bk_atlas_rect *rects;
    uint32_t    rect_count;
    uint32_t    rect_first_tri;   /* must be tri_count - 2 rect_count */
    float       rect_texels_per_unit;  /* the rectangles' density, for reports and messages */
    int         pages_auto;       /* 0 (default): one atlas page. 1 (--pages auto): as many
                                     pages of size x size as the charts need, when every chart's
                                     size is fixed (texels_per_unit > 0, or rectangles only);
                                     charts of one group stay on one page */
} bk_atlas_opts;

/* A rectangular chart: w x h texels; charts of one group are kept on one page (group = voxel
 * instance). Mesh charts each form a group of their own, before the rectangles' groups. */
typedef struct bk_atlas_rect {
    uint32_t w, h;
    uint32_t group;
} bk_atlas_rect;

#define BK_ATLAS_STAGES 9

typedef struct bk_atlas {
    int       width, height;      /* atlas size in texels (square today) */
    uint32_t  tri_count;          /* triangles of the scene it was built for */
    float    *uv;                 /* 6 floats per triangle: (u, v) of corners 0, 1, 2 in [0,1]^2 */
    uint32_t *tri_chart;          /* chart of each triangle; BK_NONE for degenerate triangles,
                                     whose corners all sit on one reserved texel */
    uint32_t  chart_count;        /* charts (not counting the degenerate triangles' texel) */
    uint32_t  degenerate_count;   /* zero-area triangles: no texels, UVs collapsed to a point */
    float     texels_per_unit;    /* chart scale actually used (texels per world unit); for
                                     --uv file the mean over the scene */
    uint64_t  covered;            /* texels touched by some triangle (conservative) */
    float     utilisation;        /* covered / (width * height): the share of the atlas that bakes */
    float     area_utilisation;   /* sum of triangle UV areas / atlas area (exact, no edge texels) */
    float     max_cone_deg;       /* largest triangle-to-projection-axis angle over the planar
                                     charts */
    float     density_max;        /* the fill pass (charts scaled to fill the page): the largest
                                     texel density of a chart over texels_per_unit^2 (1 to 2; 1:
                                     uniform, and always with --texels-per-unit) */
    uint32_t  smooth_charts;      /* charts unfolded by least-squares conformal maps (curved
                                     regions); the others are planar projections */
    float     stretch_min;        /* texel area / (world area * texels_per_unit^2) over the mesh */
    float     stretch_max;        /* triangles: 1 is the density asked for; planar charts keep
                                     [cos(max_cone_deg), 1], smooth ones [1/2, 2] */
    float     stretch_l2;         /* Sander et al. 2001's L2 stretch of the map from the atlas
                                     (in world units) to the surface, over the whole mesh: 1 for
                                     an isometry, sqrt(1/cos^2 + 1)/sqrt(2) for a uniform tilt;
                                     stretch fields are 0 for --uv file */
    double    seconds;            /* time bk_atlas_build took */
    double    stage_seconds[BK_ATLAS_STAGES];  /* of it, per stage (bk_atlas_stage_names) */
    double    stage_seconds_sim[BK_ATLAS_STAGES];  /* the same on bk_pool_sim's threads (as
                                                      stage_seconds when that is off) */
    int       page_count;         /* pages of width x height, >= 1 */
    uint32_t *tri_page;           /* page of each triangle; NULL when page_count is 1 */
    uint32_t  rect_first_tri;     /* triangles from here on are rectangular charts (rasterized
                                     by texel centre); tri_count when there are none */
    int       close_charts;       /* 1: packed by their shapes, charts may lie less than two texels
                                     apart: dilate with bk_image_dilate_charts (bk_atlas_reach_ids) */
    uint64_t  overlap_work;       /* steps of the overlap searches (charts' self-overlap, merges,
                                     --uv file): grid cells filled, corners counted, pairs and
                                     wedges looked at. A few times tri_count whatever the
                                     triangles' shapes; tests check that bound (no timings) */
} bk_atlas;

/* The stages of bk_atlas_build, in order, as bk_atlas.stage_seconds counts them (a profile for
 * tools/atlas_bench; only the total is reported by baker). */
extern const char *const bk_atlas_stage_names[BK_ATLAS_STAGES];

void bk_atlas_opts_default(bk_atlas_opts *o);

/* Builds lightmap UVs for every triangle of s. Returns 0, or -1 with one line in err (bad
 * options, an atlas that cannot hold the charts, --uv file with missing / out-of-range /
 * overlapping vt naming the first offending triangle). */
int  bk_atlas_build(const bk_scene *s, const bk_atlas_opts *o, bk_atlas *out, char *err, size_t err_size);
void bk_atlas_free(bk_atlas *a);

/* One bk_texel per texel that some triangle's UV footprint touches (conservative: slivers thinner
 * than a texel still get theirs), sorted by pixel. Where several triangles touch a texel the one
 * covering its centre wins, else the nearest one, and the position is the nearest point of that
 * triangle to the texel centre. *coverage (may be NULL to skip) is width * height bytes, 1 where
 * a texel was made. Both arrays are malloc'ed; free them. Returns 0 or -1 with err. */
int  bk_atlas_rasterize(const bk_scene *s, const bk_atlas *a, bk_texel **texels, uint32_t *count,
                        uint8_t **coverage, char *err, size_t err_size);

/* The same texels as their refs only (pixel and triangle, 8 B each instead of 32), for a backend
 * that keeps its own copy of the texels (caps().keeps_texels): bk_texels_make makes the whole
 * texels from them a slice at a time, as the bake uploads them (bk_bake_run_opts.make_texels). */
int  bk_atlas_rasterize_refs(const bk_scene *s, const bk_atlas *a, bk_texel_ref **refs, uint32_t *count,
                             uint8_t **coverage, char *err, size_t err_size);
/* out[i] = the texel bk_atlas_rasterize makes for refs[i] (the same bits), for i in [0, n); on
 * the host thread pool (pool.h). */
void bk_texels_make(const bk_scene *s, const bk_atlas *a, const bk_texel_ref *refs, uint32_t n, bk_texel *out);

/* The texels turned, in their own memory, into their refs (pixel and triangle: 8 of their 32 B),
 * in the same order, the rest of the block given back (realloc); *texels is freed and NULL
 * afterwards. For when the backend holds its own copy (caps().keeps_texels) or the bake is done:
 * what follows reads nothing else. Never fails: when realloc cannot shrink, the block stays. */
bk_texel_ref *bk_texels_compact(bk_texel **texels, uint32_t n);

/* Conservative coverage only: mask (width * height * page_count bytes) gets 1 where a triangle touches;
 * returns the number of covered texels. Degenerate triangles (tri_chart BK_NONE) are skipped. */
uint64_t bk_atlas_coverage(const bk_atlas *a, uint8_t *mask);

/* Conservative chart ids (width * height * page_count): ids[pixel] = chart of a triangle touching that texel, BK_NONE where
 * none (tests check the padding with it). */
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

/* Writes the scene as an OBJ with the lightmap UVs as vt (one per distinct corner UV), its
 * positions, its normals when it has them, and usemtl runs. scene_path (may be NULL: no mtllib)
 * is the OBJ the scene came from; its MTL files are named by relative mtllib lines only: one in
 * the output's folder by its name, the others copied into FILE.mtl beside FILE.obj
 * (bk_mesh_mtl_name) with their texture paths (map_*, bump, disp, decal, refl, norm) rewritten
 * relative to the output's folder. FILE.mtl is refused when it exists and baker did not write it
 * (bk_mesh_mtl_check) or when it is an MTL of the scene. Temporary files + rename, both or
 * neither; returns 0 or -1 with err. */
int  bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                       char *err, size_t err_size);
/* The same into an open stream (an output of bk_outputs); path is where it will be. With no MTL
 * stream here, an MTL of another folder is named by its absolute path: baker itself uses
 * bk_mesh_write_obj_vox with an MTL stream. */
int  bk_mesh_write_obj_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                            char *err, size_t err_size);

/* The same for a scene with a voxel surface (voxmesh.h; vm NULL: none): its own triangles as
 * above, then each merged quad as one 4-corner face (c0 c1 c2 c3: an OBJ loader fans it into the
 * surface's two triangles, so --uv file numbers them alike) with usemtl vox_M (M the scene
 * material) and group vox_instance_I, and mtl_f (to be the file mtl_path, beside the OBJ) gets
 * newmtl vox_M with Kd (and Ke when emissive) for each material the quads use. With several
 * pages, faces are also in group page_K of their page. MTL files of the scene's OBJ files are
 * named by relative mtllib lines or copied into mtl_f as for bk_mesh_write_obj; mtl_f (may be
 * NULL when there are no quads and bk_mesh_obj_copies_mtl is 0) starts "# written by baker". */
struct bk_voxmesh;
/* FILE.obj -> FILE.mtl (malloc'ed): the MTL --mesh-out writes beside the OBJ. */
char *bk_mesh_mtl_name(const char *obj_path);
/* 1 when some MTL file of s lies outside obj_path's folder: bk_mesh_write_obj_vox then copies it
 * into the MTL stream, which must be given. */
int  bk_mesh_obj_copies_mtl(const bk_scene *s, const char *obj_path);
/* 0 when mtl_path may be written: it does not exist, or its first line is baker's "# written by
 * baker" (an earlier --mesh-out). Else -1 with a line naming both files. */
int  bk_mesh_mtl_check(const char *mtl_path, const char *obj_path, char *err, size_t err_size);
int  bk_mesh_write_obj_vox(FILE *f, const char *path, const bk_scene *s, const struct bk_voxmesh *vm, const bk_atlas *a,
                           FILE *mtl_f, const char *mtl_path, char *err, size_t err_size);

#endif /* BK_ATLAS_H */
