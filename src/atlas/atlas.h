/* atlas.h - lightmap UVs: the atlas (charts packed into pages) and the one call that builds it.
 *
 * Pipeline: bk_scene -> bk_atlas_build (weld, adjacency, charts, projection, packing; or the
 * file's own vt with --uv file) -> bk_atlas -> bk_atlas_rasterize (raster.h: one bk_texel per
 * covered texel, row-major) -> bake -> bk_fill_hidden_texels (fill.h) -> bk_image_dilate /
 * bk_image_write (image.h); bk_mesh_write_obj (mesh_out.h) writes the mesh with its lightmap UVs.
 *
 * Usage:
 *     bk_atlas_opts o; bk_atlas_opts_default(&o); o.size = 1024; o.scene_path = path;
 *     bk_atlas a;
 *     if (bk_atlas_build(&scene, &o, &a, err, sizeof err) != 0) { puts(err); ... }
 *     ... rasterize (raster.h), bake, write ...
 *     bk_atlas_free(&a);
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

#include "scene.h"
#include "voxmesh.h"

#include <stddef.h>
#include <stdint.h>

#define BK_ATLAS_MAX_SIZE 16384 /* largest atlas side bk_atlas_build makes (texels) */
/* A bilinear lookup reads the texels whose centres lie within this many texels of its point
 * along both axes: a chart's footprint, what the shape packer keeps apart (atlas_pack_shapes.c) and
 * bk_atlas_reach_ids labels. */
#define BK_ATLAS_REACH 1.0

/* Texels of all pages together: width * height * page_count. */
#define BK_ATLAS_PIXELS(a) ((size_t)(a)->width * (size_t)(a)->height * (size_t)(a)->page_count)

typedef struct bk_atlas_opts {
    int size;                /* square atlas side in texels (default 1024); ignored when
                                texels_per_unit > 0 */
    float texels_per_unit;   /* > 0: chart scale in texels per world unit; the atlas side
                                is then the smallest multiple of 4 that holds every chart */
    int padding;             /* texels between the charts' bilinear footprints, plus 2: >= 2
                                (default 2: no texel read by two charts; see above) */
    int   uv_from_file;      /* 1: use the OBJ's vt (--uv file) instead of making charts */
    float cone_deg;          /* largest angle between a triangle's normal and its chart's
                                (default 20); planar projection shrinks a triangle's texel
                                area by at most cos(cone_deg) */
    const char *scene_path;  /* names the scene in error messages; may be NULL */
    int         planar_only; /* 1: no smooth (conformally unfolded) charts, only planar
                                projections within cone_deg */
    int          no_fill;    /* 1: every chart at the one uniform scale (no fill pass) */
    const float *tri_scale;  /* NULL, or per triangle a factor on its texel density along
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
    uint32_t                    rect_count;
    uint32_t                    rect_first_tri;       /* must be tri_count - 2 rect_count */
    float                       rect_texels_per_unit; /* the rectangles' density, for reports and messages */
    int                         pages_auto;           /* 0 (default): one atlas page. 1 (--pages auto): as many
                                                         pages of size x size as the charts need, when every chart's
                                                         size is fixed (texels_per_unit > 0, or rectangles only);
                                                         charts of one group stay on one page when they fit one,
                                                         else take consecutive pages */
} bk_atlas_opts;

/* A rectangular chart: w x h texels; charts of one group are kept on one page (group = voxel
 * instance) when they fit one; with pages_auto a group larger than a page is spread over
 * consecutive pages. Mesh charts each form a group of their own, before the rectangles' groups. */
typedef struct bk_atlas_rect {
    uint32_t w, h;
    uint32_t group;
} bk_atlas_rect;

/* The stages of bk_atlas_build, in order: atlas.c runs one function per entry (stage_NAME) and
 * times each (bk_atlas.stage_seconds, named by bk_atlas_stage_names). */
#define BK_ATLAS_STAGE_LIST(X) X(prep) X(smooth) X(planar) X(split) X(merge) X(tidy) X(rects) X(shapes) X(place)
#define BK_ATLAS_STAGE_ENUM(n) BK_ATLAS_STAGE_##n,
enum bk_atlas_stage { BK_ATLAS_STAGE_LIST(BK_ATLAS_STAGE_ENUM) BK_ATLAS_STAGES };
#undef BK_ATLAS_STAGE_ENUM

typedef struct bk_atlas {
    int       width, height;                   /* atlas size in texels (square today) */
    uint32_t  tri_count;                       /* triangles of the scene it was built for */
    float    *uv;                              /* 6 floats per triangle: (u, v) of corners 0, 1, 2 in [0,1]^2 */
    uint32_t *tri_chart;                       /* chart of each triangle; BK_NONE for degenerate triangles,
                                                  whose corners all sit on one reserved texel */
    uint32_t chart_count;                      /* charts (not counting the degenerate triangles' texel) */
    uint32_t degenerate_count;                 /* zero-area triangles: no texels, UVs collapsed to a point */
    float    texels_per_unit;                  /* chart scale actually used (texels per world unit); for
                                                  --uv file the mean over the scene */
    uint64_t covered;                          /* texels touched by some triangle (conservative) */
    float    utilisation;                      /* covered / (width * height): the share of the atlas that bakes */
    float    area_utilisation;                 /* sum of triangle UV areas / atlas area (exact, no edge texels) */
    float    max_cone_deg;                     /* largest triangle-to-projection-axis angle over the planar
                                                  charts */
    float density_max;                         /* the fill pass (charts scaled to fill the page): the largest
                                                  texel density of a chart over texels_per_unit^2 (1 to 2; 1:
                                                  uniform, and always with --texels-per-unit) */
    uint32_t smooth_charts;                    /* charts unfolded by least-squares conformal maps (curved
                                                  regions); the others are planar projections */
    float stretch_min;                         /* texel area / (world area * texels_per_unit^2) over the mesh */
    float stretch_max;                         /* triangles: 1 is the density asked for; planar charts keep
                                                  [cos(max_cone_deg), 1], smooth ones [1/2, 2] */
    float stretch_l2;                          /* Sander et al. 2001's L2 stretch of the map from the atlas
                                                  (in world units) to the surface, over the whole mesh: 1 for
                                                  an isometry, sqrt(1/cos^2 + 1)/sqrt(2) for a uniform tilt;
                                                  stretch fields are 0 for --uv file */
    double seconds;                            /* time bk_atlas_build took */
    double stage_seconds[BK_ATLAS_STAGES];     /* of it, per stage (bk_atlas_stage_names) */
    double stage_seconds_sim[BK_ATLAS_STAGES]; /* the same on bk_pool_sim's threads (as
                                                  stage_seconds when that is off) */
    int       page_count;                      /* pages of width x height, >= 1 */
    uint32_t *tri_page;                        /* page of each triangle; NULL when page_count is 1 */
    uint32_t  rect_first_tri;                  /* triangles from here on are rectangular charts (rasterized
                                                  by texel centre); tri_count when there are none */
    int close_charts;                          /* 1: packed by their shapes, charts may lie less than two texels
                                                  apart: dilate with bk_image_dilate_charts (bk_atlas_reach_ids) */
    uint64_t overlap_work;                     /* steps of the overlap searches (charts' self-overlap, merges,
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

/* The voxel surface's quads as the atlas's rectangular charts at texels_per_voxel texels per
 * voxel edge (one group per instance, so an instance stays on one page when it fits one; atlas_voxels.c): sets o's
 * rect fields and returns the array they point to (malloc'ed; free it after the atlas is built),
 * NULL when out of memory. */
bk_atlas_rect *bk_voxmesh_rects(const bk_voxmesh *m, int texels_per_voxel, bk_atlas_opts *o);

#endif /* BK_ATLAS_H */
