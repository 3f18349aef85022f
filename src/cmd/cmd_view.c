/* cmd_view.c - `baker view SCENE... --lightmap LM -o view.png`: the baked scene seen from a camera,
 * albedo x lightmap through the lightmap UVs, as an engine shows it (src/bake/view.h renders it).
 *
 * The lightmap UVs are the bake's: the atlas is deterministic given the scene and the atlas
 * options, so the view takes the bake's atlas options and rebuilds it the bake's way
 * (cmd_bake_scene.c). The scene loads and the accel builds as the bake's do; the camera rays
 * are traced by --backend (the same traversal on the CPU and the GPU: the same image), and the
 * image is written to a temporary file and renamed (outputs.h). The bake's --preview comes
 * here too (bk_cmd_view_write).
 */
#include "accel_build.h"
#include "cmd_bake_internal.h"
#include "cmd_view.h"
#include "image.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The setters of bk_cmd_view_opts: dst is a bk_view_opts. */
static int set_camera(void *dst, const char *opt, const char *v)
{
    bk_view_opts *o = dst;
    float         f[7];
    if (bk_cmd_bake_parse_floats(opt, v, 7, f)) return -1;
    if (!(f[6] > 0 && f[6] < 180) || (f[0] == f[3] && f[1] == f[4] && f[2] == f[5])) {
        bk_cmd_bake_error("--camera: the eye and the target must differ and FOV be in (0, 180) degrees\n");
        return -1;
    }
    memcpy(o->eye, f, sizeof o->eye);
    memcpy(o->target, f + 3, sizeof o->target);
    o->fov_deg = f[6];
    o->camera_given = 1;
    return 0;
}

static int set_resolution(void *dst, const char *opt, const char *v)
{
    bk_view_opts *o = dst;
    float         f[2];
    if (bk_cmd_bake_parse_floats(opt, v, 2, f)) return -1;
    if (!(f[0] >= 1 && f[1] >= 1 && f[0] <= BK_VIEW_MAX_SIDE && f[1] <= BK_VIEW_MAX_SIDE && f[0] == (int)f[0] &&
          f[1] == (int)f[1])) {
        bk_cmd_bake_error("--resolution: expected W,H in pixels, 1..%d each, got '%s'\n", BK_VIEW_MAX_SIDE, v);
        return -1;
    }
    o->width = (int)f[0];
    o->height = (int)f[1];
    return 0;
}

static int set_show(void *dst, const char *opt, const char *v)
{
    bk_view_opts *o = dst;
    char          names[128];
    (void)opt;
    if ((o->show = bk_view_show_parse(v)) < 0) {
        bk_cmd_bake_error("--show: expected %s, got '%s'\n", bk_view_show_names(names, sizeof names, ", "), v);
        return -1;
    }
    return 0;
}

static int set_background(void *dst, const char *opt, const char *v)
{
    bk_view_opts *o = dst;
    if (bk_cmd_bake_parse_floats(opt, v, 3, o->background)) return -1;
    if (!(o->background[0] >= 0 && o->background[1] >= 0 && o->background[2] >= 0)) {
        bk_cmd_bake_error("--background: colours must be >= 0\n");
        return -1;
    }
    return 0;
}

/* --show's choices and help, from BK_VIEW_SHOWS (view.h). */
static const char *show_arg(void)
{
    static char buf[128];
    return bk_view_show_names(buf, sizeof buf, "|");
}
static const char *show_help(void)
{
    static char buf[1024];
    size_t      len = (size_t)snprintf(buf, sizeof buf, "what the surfaces show (default %s):", bk_view_show_name(0));
    for (int k = 0; k < BK_VIEW_SHOW_COUNT && len < sizeof buf; ++k) {
        int n = snprintf(buf + len, sizeof buf - len, "\n  %-9s%s", bk_view_show_name(k), bk_view_show_about(k));
        if (n < 0) break;
        len += (size_t)n;
    }
    return buf;
}

const bk_cli_opt bk_cmd_view_opts[] = {
    { .name = "--camera",
      .arg = "EX,EY,EZ,TX,TY,TZ,FOV",
      .set = set_camera,
      .help = "the camera: eye, the point it looks at, vertical field of view in\n"
              "degrees (y up). Default: from a corner of the scene's box above\n"
              "eye height, eye = centre + (0.9, 0.6, 1.1) x the box's size,\n"
              "looking at the centre, 50 degrees (the summary prints it); a scene\n"
              "with cameras (glTF) is seen from its first perspective camera" },
    { .name = "--resolution",
      .arg = "W,H",
      .set = set_resolution,
      .help = "the image's size in pixels (default 960,540)" },
    { .name = "--show", .arg_of = show_arg, .set = set_show, .help_of = show_help },
    { .name = "--background",
      .arg = "R,G,B",
      .set = set_background,
      .help = "linear colour of pixels that see no surface (default 0,0,0)" },
    { 0 },
};

int bk_cmd_view_write(bk_backend *be, const bk_trace_opts *t, const bk_scene *s, const bk_atlas *at,
                      const bk_view_lightmap *lm, const bk_view_opts *view, bk_outputs *io, int idx, const char *path,
                      bk_view_result *r)
{
    char   err[1024];
    float *img = malloc(sizeof(float) * 3 * (size_t)view->width * (size_t)view->height);
    FILE  *f = NULL;
    int    rc = 1;
    /* the render's errors do not name the file; the writer's do */
    if (!img || bk_view_render(be, t, s, at, lm, view, img, r, err, sizeof err)) {
        bk_cmd_bake_error("%s: %s\n", path, img ? err : "out of memory for the view");
    } else if (!(f = bk_outputs_open(io, idx, err, sizeof err)) ||
               bk_image_write_file(f, path, img, view->width, view->height, 1.0f, err, sizeof err) ||
               bk_outputs_close(io, idx, err, sizeof err)) {
        bk_cmd_bake_error("%s\n", err);
    } else {
        rc = 0;
    }
    free(img);
    return rc;
}

/* The command's options: the bake's scenes, atlas and tracing options, and the view's own. */
typedef struct view_cli {
    bk_cmd_bake_cli b; /* SCENEs, -o (b.out), --quiet, the atlas (b.atlas), the tracing (b.t), b.view */
    const char     *lightmap;
    int             directional; /* --directional sh: the bands beside the lightmap are read */
} view_cli;

static int set_out(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((view_cli *)dst)->b.out = v;
    return 0;
}
static int set_lightmap(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((view_cli *)dst)->lightmap = v;
    return 0;
}
static int set_view_directional(void *dst, const char *opt, const char *v)
{
    (void)opt;
    if (strcmp(v, "sh") && strcmp(v, "off")) {
        bk_cmd_bake_error("--directional: baker view reads the sh bands (or off), not '%s'\n", v);
        return -1;
    }
    ((view_cli *)dst)->directional = !strcmp(v, "sh");
    return 0;
}
static int set_bumps(void *dst, const char *opt, const char *v)
{
    float f;
    if (bk_cmd_bake_parse_floats(opt, v, 1, &f)) return -1;
    if (!(f > 0)) {
        bk_cmd_bake_error("--bumps: the bumps' spacing must be > 0 (world units)\n");
        return -1;
    }
    ((view_cli *)dst)->b.view.bumps = f;
    return 0;
}
static int set_quiet(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((view_cli *)dst)->b.quiet = 1;
    return 0;
}

#define TEXT(s)   \
    {             \
        .help = s \
    }
static const bk_cli_opt view_opts[] = {
    TEXT("usage: baker view SCENE [SCENE...] --lightmap LM.png|.hdr|.exr -o VIEW.png [options]\n"
         "\n"
         "Shows a baked lightmap on its scene, as a game engine would: the scene seen from a\n"
         "camera, each surface its albedo (MTL Kd, times its map_Kd texture) times the lightmap,\n"
         "sampled bilinearly through the lightmap UVs. Give the SCENEs and the atlas options of\n"
         "the bake that made LM: the atlas is rebuilt from them, the same as the bake's. A .png\n"
         "lightmap is read back to linear (its values after the bake's --exposure, clamped to 1);\n"
         ".hdr and .exr are linear. With --pages auto, LM is the bake's -o name and its pages\n"
         "NAME-0.png ... are read. The camera rays are traced by --backend (both give the same\n"
         "image); misses show --background. The image is 8-bit sRGB (.png), or linear (.hdr,\n"
         ".exr). Voxel scenes are not supported yet.\n"
         "\n"
         "options:\n"),
    { .name = "--lightmap",
      .arg = "LM",
      .set = set_lightmap,
      .help = "the baked lightmap (not needed with --show albedo)" },
    { .name = "-o", .alias = "--output", .arg = "FILE", .set = set_out, .help = "the image to write" },
    { .name = "--directional",
      .arg = "off|sh",
      .set = set_view_directional,
      .help = "sh: also read the bake's directional bands beside LM (LM_L1x,\n"
              "LM_L1y, LM_L1z, the same type), which --bumps shades with" },
    { .name = "--bumps",
      .arg = "D",
      .set = set_bumps,
      .help = "a normal map of bumps D apart (world units) on every surface:\n"
              "with --directional sh the light follows it, without it the\n"
              "map looks as flat as it is" },
    { .sub = bk_cmd_view_opts, .sub_offset = offsetof(view_cli, b.view) },
    { .name = "--quiet", .alias = "-q", .set = set_quiet, .help = "no summary" },
    TEXT("atlas (the bake's: give the options the lightmap was baked with):\n"),
    { .sub = bk_cmd_bake_atlas_opts, .sub_offset = offsetof(view_cli, b) },
    TEXT("engine:\n"),
    { .sub = bk_cli_trace_opts, .sub_offset = offsetof(view_cli, b.t) },
    TEXT("\n"
         "examples:\n"
         "  baker scenes/cornell.obj -o cornell.png --size 256\n"
         "  baker view scenes/cornell.obj --size 256 --lightmap cornell.png -o view.png\n"
         "  baker view sponza.obj --lightmap lm.hdr -o v.png --camera -10,3,0,10,4,0,60 --resolution 1280,720\n"
         "  baker scenes/cornell.obj -o cornell.png --preview view.png    (the bake's own preview)\n"),
    { 0 },
};
#undef TEXT

void bk_cmd_view_help(FILE *f) { bk_cli_table_help(f, view_opts); }

/* 0, 1 after printing why (the usage's exit status is 2: *usage), or -1 after --help. */
static int view_parse(view_cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    if (!(c->b.scenes = malloc(sizeof(char *) * (size_t)(argc + 1)))) {
        bk_cmd_bake_error("out of memory\n");
        return 1;
    }
    bk_cmd_bake_defaults(&c->b);
    c->b.writer = 1;
    int operands = 0;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (operands || !strcmp(a, "--")) {
            if (operands++) c->b.scenes[c->b.nscenes++] = a;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bk_cmd_view_help(stdout);
            return -1;
        }
        int r = bk_cli_table_option(view_opts, c, argc, argv, &i);
        if (r < 0) return 1;
        if (r > 0) continue;
        if (a[0] == '-') {
            char m[1024];
            bk_cmd_bake_error("%s\n", bk_cli_unknown(a, "baker help view", m, sizeof m));
            return 1;
        }
        c->b.scenes[c->b.nscenes++] = a;
    }
    if (c->b.t.opts.any_hit) {
        bk_cmd_bake_error("--any-hit is an option of baker trace: a view needs the closest hits\n");
        return 1;
    }
    if (bk_cmd_bake_check_scenes(&c->b)) return 1;
    char terr[1024];
    if (!c->b.out) {
        bk_cmd_bake_error("no output given: add -o view.png\n");
        return 1;
    }
    if (!c->lightmap && c->b.view.show != BK_VIEW_ALBEDO) {
        bk_cmd_bake_error("no lightmap given: add --lightmap LM.png (the bake's -o), or --show albedo\n");
        return 1;
    }
    if (bk_image_type_check("-o", c->b.out, terr, sizeof terr) ||
        (c->lightmap && bk_image_type_check("--lightmap", c->lightmap, terr, sizeof terr))) {
        bk_cmd_bake_error("%s\n", terr);
        return 1;
    }
    return 0;
}

/* Everything one view holds, freed by view_end. */
typedef struct view_state {
    view_cli    c;
    bk_outputs  io;
    int         out_idx;
    bk_scene    s, one;
    bk_backend *be;
    bk_accel    a;
    bk_tex_pool pool; /* the cut-outs the camera rays see through (material.h) */
    int         have_accel, have_atlas;
    bk_atlas    at;
    float      *tri_scale, *lm;
    char        err[1024];
    double      t0, t_load, t_build, t_atlas;
    char        backend_name[64];
} view_state;

/* The files: the scenes and the lightmap are inputs, -o the one output. 0, or the exit status. */
static int view_plan(view_state *st)
{
    const view_cli *c = &st->c;
    int             r = 0;
    bk_outputs_init(&st->io);
    for (int k = 0; k < c->b.nscenes && !r; ++k)
        r = bk_outputs_input(&st->io, "a scene", c->b.scenes[k], st->err, sizeof st->err);
    if (!r && c->lightmap) r = bk_outputs_input(&st->io, "the lightmap", c->lightmap, st->err, sizeof st->err);
    if (!r && (r = st->out_idx = bk_outputs_add(&st->io, "-o", c->b.out, 0, st->err, sizeof st->err)) >= 0) r = 0;
    if (!r) return 0;
    bk_cmd_bake_error("%s\n", st->err);
    return r == BK_OUT_CLASH ? 2 : 1;
}

/* Without --camera, the scene's first perspective camera (a glTF camera placed by its node): eye
 * at its position, looking along its direction, its vertical field of view. The view keeps y up
 * (the camera's own up is not used) and has no orthographic projection: such cameras are passed
 * over. Returns its index + 1, or 0 when none was taken. */
static int view_scene_camera(bk_view_opts *v, const bk_scene *s)
{
    if (v->camera_given) return 0;
    for (uint32_t i = 0; i < s->camera_count; ++i) {
        const bk_scene_camera *k = &s->cameras[i];
        float                  deg = k->yfov * (float)(180.0 / 3.14159265358979323846);
        if (!(k->yfov > 0) || !(deg < 180.0f)) continue;
        for (int j = 0; j < 3; ++j) {
            v->eye[j] = k->pos[j];
            v->target[j] = k->pos[j] + k->dir[j];
        }
        v->fov_deg = deg;
        v->camera_given = 1;
        return (int)i + 1;
    }
    return 0;
}

/* The scene, its accel on the backend, the bake's atlas. 0, or the exit status. */
static int view_scene(view_state *st)
{
    view_cli *c = &st->c;
    char      msg[512];
    double    t = bk_time_now();
    int       r = bk_cmd_bake_load_scenes(&c->b, &st->io, &st->s, &st->one);
    if (r) return r;
    if (st->s.vox_instance_count) {
        bk_cmd_bake_error("%s: baker view does not show voxels yet (only triangle scenes)\n", c->b.scene);
        return 1;
    }
    int cam = view_scene_camera(&c->b.view, &st->s);
    if (cam && !c->b.quiet)
        fprintf(stderr, "baker: view from the scene's camera '%s' (--camera overrides it)\n",
                st->s.cameras[cam - 1].name);
    st->t_load = bk_time_now() - t;
    if (!(st->be = bk_backend_init(c->b.t.backend, msg, sizeof msg))) {
        bk_cmd_bake_error("%s\n", msg);
        return 1;
    }
    if (msg[0] && !c->b.quiet) fprintf(stderr, "baker: %s\n", msg);
    snprintf(st->backend_name, sizeof st->backend_name, "%s", st->be->i->name(st->be));
    if (!st->be->i->supports(st->be, &c->b.t.opts, st->err, sizeof st->err)) {
        bk_cmd_bake_error("the %s backend cannot trace with these options: %s\n", st->backend_name, st->err);
        return 1;
    }
    t = bk_time_now();
    bk_build_opts bo = bk_build_opts_default();
    if (bk_accel_build(&st->s, c->b.t.accel, &bo, &st->a, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s: %s\n", c->b.scene, st->err);
        return 1;
    }
    st->have_accel = 1;
    if (bk_tex_pool_build(&st->s, &st->pool, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s: %s\n", c->b.scene, st->err);
        return 1;
    }
    bk_accel_set_surface(&st->a, &st->pool);
    bk_accel_view av = bk_accel_get_view(&st->a);
    if (st->be->i->upload(st->be, &av, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    st->t_build = bk_time_now() - t;
    t = bk_time_now();
    if (bk_cmd_bake_make_atlas(&c->b, &st->s, &st->s, &st->tri_scale, &st->at)) return 1;
    st->have_atlas = 1;
    st->t_atlas = bk_time_now() - t;
    return 0;
}

/* An image of the lightmap's pages (NAME-K.ext with --pages auto), stacked as the atlas stacks
 * them, into dst (3 floats per pixel): 0, or 1 after printing why. */
static int read_pages(view_state *st, const char *path, int data, float *dst)
{
    const view_cli *c = &st->c;
    const bk_atlas *at = &st->at;
    const size_t    page = (size_t)at->width * (size_t)at->height;
    for (int p = 0; p < at->page_count; ++p) {
        char  *name = c->b.pages_auto ? bk_cmd_bake_page_name(path, p) : (char *)path;
        float *rgb = NULL;
        int    w = 0, h = 0, rc = 1;
        if (!name) bk_fail(st->err, sizeof st->err, "out of memory");
        else if ((!c->b.pages_auto || !bk_outputs_input(&st->io, "the lightmap", name, st->err, sizeof st->err)) &&
                 !(data ? bk_image_read_data : bk_image_read)(name, &rgb, &w, &h, st->err, sizeof st->err)) {
            if (w != at->width || h != at->height)
                bk_fail(st->err, sizeof st->err,
                        "%s is %dx%d but the atlas is %dx%d: give the atlas options of its bake (--size, "
                        "--texels-per-unit, --padding, --uv, --pages, --object-scale)",
                        name, w, h, at->width, at->height);
            else {
                memcpy(dst + 3 * page * (size_t)p, rgb, sizeof(float) * 3 * page);
                rc = 0;
            }
        }
        free(rgb);
        if (c->b.pages_auto) free(name);
        if (rc) {
            bk_cmd_bake_error("%s\n", st->err);
            return 1;
        }
    }
    return 0;
}

/* The lightmap, and with --directional sh its bands: read from an .exr as they are; from a .png
 * (each channel 0.5 + b / (4 M) as a byte, which the reader took for sRGB) as (4 v - 2) M. */
static int view_lightmap(view_state *st, bk_view_lightmap *lm)
{
    const view_cli *c = &st->c;
    const bk_atlas *at = &st->at;
    const size_t    n = 3 * (size_t)at->width * (size_t)at->height * (size_t)at->page_count;
    memset(lm, 0, sizeof *lm);
    if (!c->lightmap) return 0;
    if (!(st->lm = malloc(sizeof(float) * n * (c->directional ? 4 : 1)))) {
        bk_cmd_bake_error("out of memory for the lightmap\n");
        return 1;
    }
    if (read_pages(st, c->lightmap, 0, st->lm)) return 1;
    lm->rgb = st->lm;
    lm->w = at->width;
    lm->h = at->height;
    lm->pages = at->page_count;
    const int png = bk_image_type_of(c->lightmap) == BK_IMAGE_TYPE_PNG;
    for (int b = 0; c->directional && b < 3; ++b) {
        float *band = st->lm + n * (size_t)(b + 1);
        char  *name = bk_cmd_bake_dir_name(BK_CMD_DIR_SH, c->lightmap, b);
        int    bad = !name || bk_outputs_input(&st->io, "a directional band", name, st->err, sizeof st->err);
        if (bad) bk_cmd_bake_error("%s\n", name ? st->err : "out of memory");
        bad = bad || read_pages(st, name, 1, band);
        free(name);
        if (bad) return 1;
        for (size_t i = 0; png && i < n; ++i) {
            const float x = band[i], v = x <= 0.0031308f ? 12.92f * x : 1.055f * powf(x, 1.0f / 2.4f) - 0.055f;
            band[i] = (4.0f * v - 2.0f) * st->lm[i];
        }
        lm->band[b] = band;
    }
    return 0;
}

static int view_end(view_state *st, int rc)
{
    bk_outputs_free(&st->io);
    bk_cmd_bake_cli *b = &st->c.b;
    for (int k = 0; k < b->noscale; ++k) free((char *)b->oscale_pat[k]);
    free(b->oscale_pat);
    free(b->oscale_f);
    free(b->scenes);
    free(b->points);
    free(b->devices);
    free(st->tri_scale);
    free(st->lm);
    if (st->have_atlas) bk_atlas_free(&st->at);
    if (st->have_accel) bk_accel_free(&st->a);
    bk_tex_pool_free(&st->pool);
    bk_backend_free(st->be);
    bk_scene_free(&st->one);
    bk_scene_free(&st->s);
    return rc;
}

int bk_cmd_view(int argc, char **argv)
{
    view_state *st = calloc(1, sizeof *st);
    if (!st) {
        fprintf(stderr, "baker: out of memory\n");
        return 1;
    }
    st->t0 = bk_time_now();
    int pr = view_parse(&st->c, argc, argv), rc;
    if (pr) {
        free(st->c.b.scenes);
        free(st);
        return pr < 0 ? 0 : 2;
    }
    bk_view_lightmap lm;
    bk_view_result   r;
    const view_cli  *c = &st->c;
    if ((rc = view_plan(st)) || (rc = view_scene(st)) || (rc = view_lightmap(st, &lm)) ||
        (rc = bk_cmd_view_write(st->be, &c->b.t.opts, &st->s, &st->at, &lm, &c->b.view, &st->io, st->out_idx, c->b.out,
                                &r)))
        goto done;
    if (!c->b.quiet)
        printf("viewed %s -> %s (%dx%d, %s, %.1f%% of pixels on a surface, %s backend)\n"
               "  camera %g,%g,%g,%g,%g,%g,%g | load %.3f s | build %.3f s | atlas %.3f s | render %.3f s (trace "
               "%.3f s) | total %.3f s\n",
               c->b.scene, c->b.out, c->b.view.width, c->b.view.height, bk_view_show_name(c->b.view.show),
               r.rays ? 100.0 * (double)r.hits / (double)r.rays : 0.0, st->backend_name, (double)r.eye[0],
               (double)r.eye[1], (double)r.eye[2], (double)r.target[0], (double)r.target[1], (double)r.target[2],
               (double)c->b.view.fov_deg, st->t_load, st->t_build, st->t_atlas, r.seconds, r.trace_seconds,
               bk_time_now() - st->t0);
    if (bk_outputs_commit(&st->io, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        rc = 1;
    }
done:
    rc = view_end(st, rc);
    free(st);
    return rc;
}
