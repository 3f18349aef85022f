/* view.h - a preview of a baked scene: the scene seen from a camera, each surface showing its
 * albedo times its lightmap through the lightmap UVs, as a game engine shows the bake.
 *
 * Pipeline: bk_scene + bk_atlas (the bake's lightmap UVs) + the lightmap (linear RGB: the bake's
 * image, or a file read back, src/out/image.h) -> bk_view_render: primary rays made on the host,
 * traced by the backend's trace() (the same traversal on the CPU and the GPU, so both backends
 * give the same image), shaded on the host (the hit triangle, its barycentrics, the lightmap and
 * the albedo texture sampled bilinearly) -> linear RGB, which `baker view` and `baker --preview`
 * write as an 8-bit sRGB PNG (src/cmd/cmd_view.c).
 *
 * Usage:
 *     bk_view_opts o; bk_view_opts_default(&o);        // camera framing the scene, 960 x 540, lit
 *     bk_view_lightmap lm = { rgb, atlas.width, atlas.height, atlas.page_count };
 *     // be holds the scene's accel (upload() done)
 *     float *img = malloc(sizeof(float) * 3 * o.width * o.height);
 *     if (bk_view_render(be, &trace_opts, &scene, &atlas, &lm, &o, img, &res, err, sizeof err)) ...
 *
 * Conventions. The default camera frames the scene's box from a corner above eye height: eye =
 * centre + (0.9, 0.6, 1.1) x extent (the box's size along each axis), looking at the centre, y up,
 * 50 degrees of vertical field of view. Rays leave through pixel centres; row 0 is the top of
 * the image. A ray that meets nothing shows the background (default black). The lightmap is
 * sampled bilinearly at the texel centres of the atlas (atlas.h: v down the rows), clamped to
 * its page; the albedo is the material's kd, times its map_kd texture where one loaded (the
 * texture alone for a material whose kd_by_map says it replaces kd), sampled bilinearly at the
 * triangle's own texture coordinates (kernels/bk_material.h); no lighting is added: a preview
 * shows the lightmap, not a render.
 */
#ifndef BK_VIEW_H
#define BK_VIEW_H

#include "atlas.h"
#include "backend.h"
#include "scene.h"

#include <stddef.h>
#include <stdint.h>

/* What the surfaces show (--show). */
#define BK_VIEW_SHOWS(X)                                                       \
    X(LIT, "lit", "albedo x lightmap + emission, as an engine shows the bake") \
    X(LIGHTMAP, "lightmap", "the lightmap alone, on a white surface")          \
    X(ALBEDO, "albedo", "the material's colour alone (kd x its texture)")
#define BK_VIEW_SHOW_ENUM_(N, S, D) BK_VIEW_##N,
enum bk_view_show { BK_VIEW_SHOWS(BK_VIEW_SHOW_ENUM_) BK_VIEW_SHOW_COUNT };
#undef BK_VIEW_SHOW_ENUM_

#define BK_VIEW_MAX_SIDE 16384 /* largest image side */

typedef struct bk_view_opts {
    int   width, height; /* pixels (default 960 x 540) */
    int   camera_given;  /* 0: the default camera (above), from the scene's box */
    float eye[3];        /* camera position, world units */
    float target[3];     /* the point it looks at */
    float fov_deg;       /* vertical field of view, degrees, in (0, 180) (default 50) */
    int   show;          /* enum bk_view_show (default BK_VIEW_LIT) */
    float background[3]; /* linear colour of a miss (default 0: black) */
    float bumps;         /* 0 (default), or a normal map of bumps this far apart (world units) on
                            every surface: what lm's directional bands, when it has them, respond to */
} bk_view_opts;

/* A lightmap of `pages` pages of w x h texels stacked vertically (atlas.h), linear RGB. */
typedef struct bk_view_lightmap {
    const float *rgb; /* w * h * pages * 3 floats, row 0 at the top */
    int          w, h, pages;
    /* NULL, or --directional sh's bands x, y, z, laid out as rgb: the irradiance vector over pi b
     * (the bake's units), shaded for a normal n' at a surface of normal n as rgb + dot(b, n' - n) */
    const float *band[3];
} bk_view_lightmap;

typedef struct bk_view_result {
    uint64_t rays, hits;
    double   trace_seconds;     /* the backend's trace call */
    double   seconds;           /* the whole render: rays, trace, shading */
    float    eye[3], target[3]; /* the camera used (the default one's, when none was given) */
} bk_view_result;

void bk_view_opts_default(bk_view_opts *o);
/* The word of a show mode ("?" out of range), a mode from its word (-1 unknown), and all words
 * joined by sep ("lit|lightmap|albedo"). */
const char *bk_view_show_name(int show);
int         bk_view_show_parse(const char *s);
const char *bk_view_show_names(char *buf, size_t size, const char *sep);
/* A line saying what a show mode is, for help text ("" out of range). */
const char *bk_view_show_about(int show);
/* The default camera (see the file comment) for the box [lo, hi]: eye and target. */
void bk_view_default_camera(const float lo[3], const float hi[3], float eye[3], float target[3]);

/* Renders s (whose accel the backend be holds: upload() done; triangle hits number s's
 * triangles) seen by o's camera into out (o->width * o->height * 3 linear floats, row 0 at the
 * top). at gives the lightmap UVs of s's triangles (at->tri_count == s->tri_count), lm the
 * lightmap (its size must be the atlas's). Returns 0, or -1 with one line in err (a bad
 * option, a lightmap of another size, out of memory, a failed trace). */
int bk_view_render(bk_backend *be, const bk_trace_opts *t, const bk_scene *s, const bk_atlas *at,
                   const bk_view_lightmap *lm, const bk_view_opts *o, float *out, bk_view_result *r, char *err,
                   size_t err_size);

#endif /* BK_VIEW_H */
