/* cmd_bake.c - `baker SCENE -o lightmap.png [options]`: the whole bake from the command line.
 *
 * Phases, each timed: load (every SCENE, appended into one scene; a scene with voxels also gets
 * its voxel surface, voxmesh.h) -> build (BVH or KD-tree) -> atlas (charts, packing, texels) ->
 * bake (backend, bounded launches) -> write (dilation, PNG/HDR, optional mesh with lightmap UVs).
 * Options and every file named are checked before any work (outputs.h: no output may be an input
 * or another output); outputs are written to temporary files and renamed together at the end, so a
 * failed bake leaves every existing file as it was. The memory the bake needs is estimated before
 * the texels are made, and a bake that cannot fit is refused.
 *
 * This file is the driver: one function per phase of BAKE_PHASES on a bake_state, run in order by
 * bake_run, then the report and the end; the other jobs of the command are the cmd_bake_*.c files
 * that cmd_bake_internal.h lists.
 */
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "registry.h"
#include "cli.h"
#include "cmd_bake_internal.h"
#include "cmd_bake.h"
#include "fill.h"
#include "image.h"
#include "loader.h"
#include "outputs.h"
#include "pool.h"
#include "stats.h"
#include "util.h"
#include "voxmesh.h"
#include "gltf.h"
#include "probes.h"
#include "image.h"
#include "pool.h"
#include "util.h"
#include "mesh_out.h"
#include "raster.h"
#include "world.h"

#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Every error of the bake goes through here: one line on stderr, kept for the job's agreement
 * (world.h) when several processes bake together. In such a job only rank 0 prints: another
 * rank's error reaches it through bk_world_agree and is printed once, naming the rank. */
static char bake_last_error[1024];
static int  bake_error_quiet; /* a rank other than 0 of a job */
static int  bake_end_fast;    /* bk_cmd_bake_end_fast */

void bk_cmd_bake_end_fast(int on) { bake_end_fast = on; }

static int bake_last; /* bk_cmd_bake_last */

void bk_cmd_bake_last(int on) { bake_last = on; }

void bk_cmd_bake_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(bake_last_error, sizeof bake_last_error, fmt, ap);
    va_end(ap);
    size_t len = strlen(bake_last_error);
    while (len && bake_last_error[len - 1] == '\n') bake_last_error[--len] = 0;
    bk_escape_controls(bake_last_error, sizeof bake_last_error);
    if (!bake_error_quiet) fprintf(stderr, "baker: %s\n", bake_last_error);
}


const char *bk_cmd_bake_error_text(void) { return bake_last_error; }

#define STEP_NAME(E, n) #n,
const char *const bk_cmd_bake_phase_names[PH_COUNT] = { BAKE_PHASES(STEP_NAME) };
const char *const bk_cmd_bake_write_step_names[WR_COUNT] = { WRITE_STEPS(STEP_NAME) };
#undef STEP_NAME

/* Seconds since *t, which moves on to now. */
static double lap(double *t)
{
    double now = bk_time_now(), d = now - *t;
    *t = now;
    return d;
}

/* The image from the texels' colours: each texel writes its own pixel. */
typedef struct image_job {
    const bk_texel_ref *refs;
    const bk_f4        *col;
    float              *rgb;
} image_job;

static void image_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const image_job *j = ctx;
    for (size_t i = begin; i < end; ++i) {
        size_t px = j->refs[i].pixel;
        j->rgb[3 * px] = j->col[i].x;
        j->rgb[3 * px + 1] = j->col[i].y;
        j->rgb[3 * px + 2] = j->col[i].z;
    }
}

/* Everything one bake holds from its start to its end, handed from phase to phase. */
typedef struct bake_state {
    int                     argc;
    char                  **argv;
    bk_cmd_bake_job        *job;
    int                     rc; /* the exit status when a phase stops the bake */
    bk_cmd_bake_cli         c;
    FILE                   *say; /* the summary's stream: stderr with --stats - */
    bk_outputs              io;
    int                     out_idx[OUT_COUNT], mtl_idx, *page_idx; /* page_idx: -o outs[0]'s pages */
    char                  **page_names, *mtl_path;                  /* page_names: the same pages' names */
    int                     lm_idx[BK_CMD_BAKE_MAX_OUTS];           /* each -o's first page */
    char                   *lm_page0[BK_CMD_BAKE_MAX_OUTS];         /* --pages auto: each -o's NAME-0 */
    char                  **x_names[BK_CMD_BAKE_MAX_OUTS];          /* --pages auto: outs[k]'s pages, k >= 1 */
    int                    *x_idx[BK_CMD_BAKE_MAX_OUTS];
    double                  clip_share; /* covered texels with a channel over 1 after the exposure (PNG) */
    float                   clip_fit;   /* the exposure that maps their brightest channel's 99th percentile to 1 */
    char                    err[1024], msg[512];
    double                  t_start, t0; /* the command's start; the running phase's */
    double                  ph[PH_COUNT], wr[WR_COUNT], bake_prep;
    bk_scene                s, one;
    bk_voxmesh              vm;
    const bk_scene         *surf; /* the scene's triangles, then the voxel quads' (voxmesh.h) */
    int                     has_vox;
    bk_atlas_rect          *rects;
    bk_accel                a;
    bk_accel_view           av; /* the upload's view of a: held until the backend is done */
    bk_atlas                at;
    bk_bake_data            bd;
    bk_tex_pool             pool;        /* the scene's textures and cut-outs (material.h) */
    uint32_t                cut;         /* texels cut away (bk_cmd_bake_cut_texels) */
    double                  tex_seconds; /* the pool's making */
    bk_texel               *tx;
    bk_texel_ref           *refs;             /* the texels' pixel and triangle, once the whole texels are gone */
    int                     refs_hold_charts; /* their tri fields hold charts (bk_denoise_texel_colours) */
    uint8_t                *cov;
    float                  *rgb, *tri_scale;
    bk_f4                  *tcol;
    bk_cmd_bake_dir         dir;  /* --directional: its bands and files */
    bk_f4                  *tdir; /*   and the texels' bands when the denoiser filters them (3 each) */
    float                  *mask[2]; /* --shadowmask: its channels, 3 per pixel in each (bk_bake_run_opts.mask) */
    bk_denoise_result       dres;
    uint32_t                ntx;
    size_t                  page_px, npx; /* pixels of a page, of all pages */
    int                     img_h;        /* pages are stacked vertically into one image (atlas.h) */
    int                     filter;       /* the texels' colours go through the denoiser */
    bk_gpu_ops             *gpu;
    bk_cmd_bake_release     rel;
    double                  mean_lum, sort_seconds;
    uint64_t                mem[MEM_COUNT];
    char                    backend_name[64];
    bk_backend             *be;
    bk_cmd_bake_start       bs;
    int                     bs_begun;
    int                     lend_core; /* the host phases left the backend's start a core */
    bk_bake_view            bv;
    bk_bake_run_opts        ro;
    bk_cmd_bake_kept_texels kt;
    bk_cmd_bake_made_texels mt;
    bk_texel_src            tsrc;   /* the texels' source for a device that makes them (bake_refs) */
    float                  *tsrc_n; /* its normals (bk_texel_src_make) */
    bk_bake_result          res;
    bk_view_result          view;       /* --preview */
    bk_probe_set            probes;     /* --probes */
    bk_cmd_bake_probes      probe_stat; /*   their figures */
} bake_state;

/* Stops the bake with exit status 2 for a clash of names, else 1, after printing msg. */
static int bake_stop(bake_state *st, int clash, const char *msg)
{
    bk_cmd_bake_error("%s\n", msg);
    st->rc = clash ? 2 : 1;
    return 1;
}

/* The options, with --stats FILE pulled out first: it belongs to the bake, and
 * bk_cli_trace_option would take a bare --stats as the trace counters flag. Returns 0, or 1 with
 * st->rc the exit status (0 after --help). */
static int startup_options(bake_state *st)
{
    const char *stats_path = NULL;
    char      **args = malloc(sizeof(char *) * (size_t)(st->argc + 1));
    int         nargs = 0;
    if (!args) return 1;
    for (int i = 0; i < st->argc; ++i) {
        if (!strcmp(st->argv[i], "--")) { /* SCENEs only from here (parse) */
            while (i < st->argc) args[nargs++] = st->argv[i++];
            break;
        }
        if (!strcmp(st->argv[i], "--stats")) {
            if (i + 1 >= st->argc) {
                bk_cmd_bake_error("--stats needs a FILE.json (or - for standard output)\n");
                free(args);
                st->rc = 2;
                return 1;
            }
            stats_path = st->argv[++i];
            continue;
        }
        if (!strcmp(st->argv[i], "--help") || !strcmp(st->argv[i], "-h")) {
            if (st->job->rank == 0) bk_cmd_bake_help(stdout);
            free(args);
            st->rc = 0;
            return 1;
        }
        args[nargs++] = st->argv[i];
    }
    int pr = bk_cmd_bake_parse(&st->c, nargs, args);
    free(args);
    if (pr) {
        st->rc = 2;
        return 1;
    }
    st->c.stats = stats_path;
    return 0;
}

/* startup: the options, every file named (bk_cmd_bake_plan_files), and the backend's start on its thread. */
static int phase_startup(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    bk_cmd_bake_job *job = st->job;
    st->rc = 1;
    if (startup_options(st)) return 1;
    /* a job (world.h): every rank bakes its share of the texels; rank 0 alone writes and speaks */
    c->writer = job->rank == 0;
    if (!c->writer) {
        c->quiet = 1;
        c->stats = NULL;
    }
    if (job->size > 1 && c->t.opts.threads == 0) {
        /* the ranks of a host share its cores (or the cores mpirun bound each to): no more
         * threads than that, in the bake and in the host phases */
        c->t.opts.threads = bk_world_cpu_threads(1);
        bk_pool_set_threads(c->t.opts.threads);
        job->own_threads = 1;
    }
    /* with --stats - the JSON owns standard output and the summary goes to stderr */
    st->say = c->stats && !strcmp(c->stats, "-") ? stderr : stdout;

    bk_outputs_init(&st->io);
    for (int k = 0; k < OUT_COUNT; ++k) st->out_idx[k] = -1;
    for (int k = 0; k < BK_CMD_BAKE_MAX_OUTS; ++k) st->lm_idx[k] = -1;
    st->mtl_idx = -1;
    for (int k = 0; c->pages_auto && k < c->nouts; ++k)
        if (!(st->lm_page0[k] = bk_cmd_bake_page_name(c->outs[k], 0))) {
            bk_cmd_bake_error("out of memory\n");
            return 1;
        }
    st->rc = bk_cmd_bake_plan_files(c, &st->io, st->out_idx, st->lm_idx, c->pages_auto ? st->lm_page0 : NULL);
    if (!st->rc && (c->directional || c->shadowmask) && job->size > 1) {
        bk_cmd_bake_error("%s: not yet in a job of several processes\n",
                          c->directional ? "--directional" : "--shadowmask");
        st->rc = 1;
    }
    if (!st->rc) st->rc = bk_cmd_bake_dir_plan(c, &st->io, &st->dir);
    if (st->rc) return 1;
    st->rc = 1;

    /* The backend starts (a CUDA context: about 0.25 s) on a thread of its own while the scene
     * loads, its accel builds and the atlas is made, and takes the accel as soon as it is built
     * (bk_cmd_bake_start). The phases startup and upload count only the waits for it that loading,
     * building and the atlas did not hide. */
    /* In a job each rank takes its own GPUs by default: those whose number modulo the host's
     * ranks is its local rank (world.h), or one of them when there are more ranks than GPUs. */
    bk_cmd_bake_start_begin(&st->bs, c->t.backend, c->devices, c->ndevices, bk_world_local_rank(),
                            bk_world_local_size(), &c->t.opts);
    st->bs_begun = 1;
    /* A device's start (its context, then the upload) keeps a core busy while the host phases
     * run: their pool leaves it that core until the backend is there (the phases' results do not
     * depend on the thread count). On the GPU machine's 16 cores, sponza 1024^2: the atlas
     * 0.49 -> 0.39 s, the whole command 1.01 -> 0.87 s (`baker bench bake`, BK_THREADS=15). */
    st->lend_core = st->bs.running && bk_backend_starts_device(c->t.backend) && c->t.opts.threads == 0 &&
                    !getenv("BK_THREADS") && bk_cpu_threads() > 2;
    if (st->lend_core) bk_pool_set_threads(bk_cpu_threads() - 1);

    st->t0 = bk_time_now();
    st->ph[PH_STARTUP] = st->t0 - st->t_start;
    return 0;
}

/* A scene with voxels: its voxel surface, checked against --max-memory, and its quads' charts. */
static int load_voxels(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    char            *err = st->err;
    if (c->atlas.uv_from_file) {
        bk_cmd_bake_error(
            "%s: --uv file: voxels get their charts from their quads; bake the --mesh-out OBJ for file UVs\n",
            c->scene);
        return 1;
    }
    if (bk_voxmesh_build(&st->s, &st->vm, err, sizeof st->err)) {
        bk_cmd_bake_error("%s: %s\n", c->scene, err);
        return 1;
    }
    if (bk_cmd_bake_check_memory_early(c, st->vm.face_count * (uint64_t)(c->texels_per_voxel * c->texels_per_voxel)))
        return 1;
    st->surf = &st->vm.scene;
    if (!(st->rects = bk_voxmesh_rects(&st->vm, c->texels_per_voxel, &c->atlas))) {
        bk_cmd_bake_error("out of memory for %u voxel quads\n", st->vm.quad_count);
        return 1;
    }
    /* world units are voxels: with pages, an OBJ without --texels-per-unit gets the voxels' density */
    if (c->pages_auto && !(c->atlas.texels_per_unit > 0) && st->vm.first_quad_tri > 0)
        c->atlas.texels_per_unit = (float)c->texels_per_voxel;
    return 0;
}

/* load: every SCENE, appended into one; the voxel surface; the MTL file beside --mesh-out. */
static int phase_load(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    char            *err = st->err;
    int              r = bk_cmd_bake_load_scenes(c, &st->io, &st->s, &st->one);
    if (r) {
        st->rc = r;
        return 1;
    }
    /* The surface the atlas, the texels, the bake data and --mesh-out use: the scene's own
     * triangles, then two per merged quad of visible voxel faces (voxmesh.h). */
    st->surf = &st->s;
    st->has_vox = st->s.vox_instance_count > 0;
    if (st->has_vox && c->preview) {
        bk_cmd_bake_error("%s: --preview does not show voxels yet: bake without it, or an OBJ scene\n", c->scene);
        return 1;
    }
    if (st->has_vox && load_voxels(st)) return 1;
    /* FILE.mtl beside the --mesh-out OBJ: the voxel palette, and copies of the scene's MTL files
     * (their texture statements commented out, the lightmap named); never replacing a user's own file */
    if (c->writer && c->mesh_obj && (st->has_vox || bk_mesh_obj_writes_mtl(&st->s, NULL))) {
        r = -1;
        if (!(st->mtl_path = bk_mesh_mtl_name(c->mesh_obj)) ||
            (r = bk_mesh_mtl_check(st->mtl_path, c->mesh_obj, err, sizeof st->err) ? BK_OUT_CLASH : 0) ||
            (r = st->mtl_idx = bk_outputs_add(&st->io, "--mesh-out (its MTL)", st->mtl_path, 0, err, sizeof st->err)) <
                0)
            return bake_stop(st, r == BK_OUT_CLASH, st->mtl_path ? err : "out of memory");
    }
    st->ph[PH_LOAD] = bk_time_now() - st->t0;
    return 0;
}

/* build: the accel. It holds the scene's own triangles and its voxel instances, traced natively
 * (a DDA inside each instance, kernels/bk_voxel.h); the surface's quads are only for the atlas,
 * the texels and the emitters. Triangle hits keep the numbers the bake data uses (the surface
 * starts with the scene's triangles); voxel hits bring their normal and material along. */
static int phase_build(bake_state *st)
{
    st->t0 = bk_time_now();
    bk_build_opts   bo = bk_build_opts_default();
    const bk_scene *trace_scene = &st->s;
    double          tt = 0;
    if (bk_accel_build(trace_scene, st->c.t.accel, &bo, &st->a, st->err, sizeof st->err) ||
        ((tt = bk_time_now()), bk_tex_pool_build(trace_scene, &st->pool, st->err, sizeof st->err))) {
        bk_cmd_bake_error("%s: %s\n", st->c.scene, st->err);
        return 1;
    }
    st->tex_seconds = bk_time_now() - tt;
    bk_accel_set_surface(&st->a, &st->pool);
    st->ph[PH_BUILD] = bk_time_now() - st->t0;
    return 0;
}

/* upload: the accel handed over to the backend's start, which uploads it on its thread; the phase's
 * time is the wait for that upload which the atlas did not hide (bk_cmd_bake_start_finish, in the atlas). */
static int phase_upload(bake_state *st)
{
    st->t0 = bk_time_now();
    st->av = bk_accel_get_view(&st->a);
    if (bk_cmd_bake_start_give(&st->bs, &st->av)) {
        st->be = bk_cmd_bake_start_finish(&st->bs, NULL, NULL);
        bk_cmd_bake_error("%s\n", st->bs.msg);
        return 1;
    }
    return 0;
}

/* --pages auto: the pages are known now: name them, each -o's, with the same checks as every
 * output, before the bake. */
static int name_pages(bake_state *st)
{
    const int n = st->at.page_count;
    for (int k = 0; k < st->c.nouts; ++k) {
        char **names = calloc((size_t)n, sizeof(char *));
        int   *idx = malloc(sizeof(int) * (size_t)n);
        if (k) st->x_names[k] = names, st->x_idx[k] = idx;
        else st->page_names = names, st->page_idx = idx;
        if (!names || !idx) {
            bk_cmd_bake_error("out of memory\n");
            return 1;
        }
        names[0] = st->lm_page0[k];
        st->lm_page0[k] = NULL;
        idx[0] = st->lm_idx[k];
        for (int p = 1; p < n; ++p) {
            int r = -1;
            if (!(names[p] = bk_cmd_bake_page_name(st->c.outs[k], p)) ||
                (r = idx[p] = bk_outputs_add(&st->io, "-o", names[p], 0, st->err, sizeof st->err)) < 0)
                return bake_stop(st, r == BK_OUT_CLASH, names[p] ? st->err : "out of memory");
        }
    }
    return 0;
}

/* The backend, once its start and upload are done; the wait is startup and upload, not atlas. */
static int await_backend(bake_state *st)
{
    const double tw = bk_time_now();
    st->be = bk_cmd_bake_start_finish(&st->bs, &st->ph[PH_STARTUP], &st->ph[PH_UPLOAD]);
    if (st->lend_core) bk_pool_set_threads(0);
    if (!st->be || !st->bs.ok) {
        bk_cmd_bake_error("%s\n", st->bs.msg);
        return 1;
    }
    if (st->bs.note[0] && !st->c.quiet) fprintf(stderr, "baker: %s\n", st->bs.note);
    snprintf(st->backend_name, sizeof st->backend_name, "%s", st->be->i->name(st->be));
    st->t0 += bk_time_now() - tw;
    return 0;
}

/* atlas: charts and packing (bk_atlas_build), the pages' names, the memory check, the texels. */
static int phase_atlas(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    st->t0 = bk_time_now();
    if (bk_cmd_bake_make_atlas(c, &st->s, st->surf, &st->tri_scale, &st->at)) return 1;
    if (c->pages_auto && c->writer && name_pages(st)) return 1;
    if (await_backend(st)) return 1;
    if (bk_cmd_bake_check_memory(c, st->be, &st->at, st->mem)) return 1;
    /* A backend with its own copy of the texels (a GPU) gets them a slice at a time, made from
     * their refs during the bake (bk_bake_run_opts.make_texels): the host never holds them whole
     * (32 B each, 8 for a ref). The CPU reads them in place; --bin-rays sorts them whole first. */
    bk_backend_caps caps0;
    st->be->i->caps(st->be, &caps0);
    const int make_later = caps0.keeps_texels && !c->bin_rays;
    int       rc = make_later
                       ? bk_atlas_rasterize_refs(st->surf, &st->at, &st->refs, &st->ntx, &st->cov, st->err, sizeof st->err)
                       : bk_atlas_rasterize(st->surf, &st->at, &st->tx, &st->ntx, &st->cov, st->err, sizeof st->err);
    if (rc || (st->cut = bk_cmd_bake_cut_texels(&st->pool, st->surf, &st->at, st->tx, st->refs, &st->ntx, st->cov,
                                                st->err, sizeof st->err)) == BK_NONE) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    st->ph[PH_ATLAS] = bk_time_now() - st->t0;
    return 0;
}

/* The shading data and the lighting defaults that depend on the scene. */
static int bake_lighting(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    const bk_accel  *a = &st->a;
    const bk_scene  *surf = st->surf;
    float diag = sqrtf((a->hi.x - a->lo.x) * (a->hi.x - a->lo.x) + (a->hi.y - a->lo.y) * (a->hi.y - a->lo.y) +
                       (a->hi.z - a->lo.z) * (a->hi.z - a->lo.z));
    if (bk_bake_data_build_hit(surf, &st->pool, st->has_vox ? st->vm.first_quad_tri : surf->tri_count, c->points,
                               c->point_count, &st->bd, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    for (uint32_t i = 0; i < c->point_count; ++i) bk_bake_data_point_mode(&st->bd, i, c->point_modes[i]);
    int has_sun = c->p.sun_color[0] > 0 || c->p.sun_color[1] > 0 || c->p.sun_color[2] > 0;
    if (c->p.mode == BK_BAKE_LIGHT && !has_sun && !c->sky_given && !st->bd.point_count && !st->bd.emit_count) {
        c->p.sky[0] = c->p.sky[1] = c->p.sky[2] = 1.0f;
        if (!c->quiet)
            fprintf(stderr,
                    "baker: %s has no emissive materials and no --sun, --point or --sky was given: "
                    "lighting it with a white sky (--sky 1,1,1)\n",
                    c->scene);
    }
    if (!c->ao_given) c->p.ao_distance = 0.1f * diag;
    c->p.eps = 1e-4f * diag;
    if (st->has_vox) {
        /* Voxel faces are hit exactly (integer planes, t to an ulp), so rays may leave them much
         * closer than 1e-4 of a world of thousands of voxels (0.3 voxels: light under one-voxel
         * ledges): 1e-3 voxels, or 8 ulps of the largest coordinate. */
        float m = fmaxf(fmaxf(fmaxf(fabsf(a->lo.x), fabsf(a->hi.x)), fmaxf(fabsf(a->lo.y), fabsf(a->hi.y))),
                        fmaxf(fabsf(a->lo.z), fabsf(a->hi.z)));
        float ev = fmaxf(1e-3f, m * 1e-6f);
        if (ev < c->p.eps) c->p.eps = ev;
        /* texels on visible voxel faces are never inside geometry: no unocclude step */
        c->p.open_tri_begin = st->vm.first_quad_tri;
        c->p.open_tri_end = st->vm.scene.tri_count;
    }
    /* the larger of the two texel sizes when voxels and triangles are charted at different scales */
    float tpu_min = st->at.texels_per_unit;
    if (st->has_vox && (!(tpu_min > 0) || (float)c->texels_per_voxel < tpu_min)) tpu_min = (float)c->texels_per_voxel;
    c->p.texel_world = tpu_min > 0 ? 1.0f / tpu_min : 0.01f * diag;
    return 0;
}

/* The bake's launch options: parameters, trace options, progress, and the register cap. */
static void bake_launch_opts(bake_state *st)
{
    bk_cmd_bake_cli  *c = &st->c;
    bk_bake_run_opts *ro = &st->ro;
    memset(ro, 0, sizeof *ro);
    ro->params = c->p;
    ro->trace = c->t.opts;
    ro->max_launch_ms = c->max_launch_ms;
    ro->progress = !c->quiet;
    /* (For --kernel megakernel; the wavefront's kernels keep their registers, kernels/cuda/bake.cu.)
     * The bake kernel capped at 32 registers (4x the resident warps, some spills) where the backend
     * has it and the scene is triangles only: on an H100, global stack, it bakes sponza, sibenik and
     * dragon_vrip_res2 1.56x, 1.81x and 1.98x as fast (BVH; KD-tree 1.57-1.82x); a voxel walk's state
     * spills instead, and the 54k-object world bakes 0.76x as fast capped (baker bench stacks,
     * docs/bench_stacks.md). The short and spill stacks keep more state across the traversal (the
     * fast part's bookkeeping, the restart trail) and spill it under 32: capped at 48 they bake 1.35
     * to 1.9x as fast as at 32 (sponza and sibenik, both accels; at 32 they were slower than
     * uncapped). Same texels either way. */
    if (!st->has_vox) {
        bk_trace_opts capped = ro->trace;
        capped.reg_cap = ro->trace.stack_mode == BK_STACK_GLOBAL ? 32 : 48;
        char why[256];
        if (st->be->i->supports(st->be, &capped, why, sizeof why)) ro->trace = capped;
    }
}

/* --probes: the grid over the scene's box, baked with the map's bounces and lights (probes.h). */
static int bake_probes(bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    const double           t0 = bk_time_now();
    const float    lo[3] = { st->a.lo.x, st->a.lo.y, st->a.lo.z }, hi[3] = { st->a.hi.x, st->a.hi.y, st->a.hi.z };
    bk_bake_params p = st->ro.params;
    p.spp = c->probe_spp;
    p.sample_begin = 0;
    p.sample_end = c->probe_spp;
    bk_cmd_bake_probes *ps = &st->probe_stat;
    if (bk_probe_grid(lo, hi, c->probe_spacing, &st->probes, st->err, sizeof st->err) ||
        bk_bake_probes(st->be, &st->bv, &p, &st->ro.trace, &st->probes, &ps->totals, st->err, sizeof st->err)) {
        bk_cmd_bake_error("--probes: %s\n", st->err);
        return 1;
    }
    ps->seconds = bk_time_now() - t0;
    ps->n = st->probes.n;
    ps->spp = c->probe_spp;
    for (uint32_t i = 0; i < st->probes.n; ++i) ps->invalid += !st->probes.valid[i];
    return 0;
}

/* Where the bake's colours go: this rank's share of a job (granules of the texels, taken from
 * the job's counter as the rank's devices ask for work, bake.h, so a faster rank takes more);
 * texel colours for the denoiser or the gather, else the image itself. */
static int bake_targets(bake_state *st)
{
    bk_cmd_bake_job *job = st->job;
    const bk_atlas  *at = &st->at;
    const uint32_t   ntx = st->ntx;
    if (job->size > 1) {
        job->granule = bk_bake_granule(ntx, (uint32_t)job->size);
        job->granules = (uint32_t)(((uint64_t)ntx + job->granule - 1) / job->granule);
        job->taken = malloc(sizeof(uint32_t) * (job->granules ? job->granules : 1));
        if (!job->taken) {
            bk_cmd_bake_error("out of memory for the list of %u granules\n", job->granules);
            return 1;
        }
        st->ro.rank = (uint32_t)job->rank;
        st->ro.ranks = (uint32_t)job->size;
        st->ro.granule = job->granule;
        st->ro.next_granule = bk_cmd_bake_job_next_granule;
        st->ro.granule_ctx = job;
    }
    /* a job's ranks bake into texel colours too: what rank 0 gathers (bk_cmd_bake_job_share) */
    if (st->filter || job->size > 1) {
        st->tcol = malloc(sizeof(bk_f4) * (ntx ? ntx : 1));
        if (!st->tcol) {
            bk_cmd_bake_error("out of memory for the colours of %u texels\n", ntx);
            return 1;
        }
        st->ro.texel_col = st->tcol;
    } else {
        st->rgb = malloc(sizeof(float) * 3 * st->npx);
        if (!st->rgb) {
            bk_cmd_bake_error("out of memory for a %dx%d lightmap (%d pages)\n", at->width, at->height, at->page_count);
            return 1;
        }
    }
    if (bk_cmd_bake_dir_alloc(&st->dir, st->npx)) return 1;
    for (int b = 0; b < 3; ++b) st->ro.dir[b] = st->dir.band[b];
    if (st->dir.mode && st->tcol && !(st->ro.texel_dir = st->tdir = malloc(3 * sizeof(bk_f4) * (ntx ? ntx : 1)))) {
        bk_cmd_bake_error("out of memory for the directional bands of %u texels\n", ntx);
        return 1;
    }
    st->ro.params.directional = st->dir.mode != BK_CMD_DIR_OFF;
    for (uint32_t m = 0; m < (st->c.p.mask_count + 2) / 3; ++m)
        if (!(st->ro.mask[m] = st->mask[m] = calloc(3 * st->npx, sizeof(float)))) {
            bk_cmd_bake_error("out of memory for the shadowmask (%zu pixels)\n", st->npx);
            return 1;
        }
    return 0;
}

/* bake: shading data, lighting defaults, the texels' order, then the bake itself, and in a job
 * the gather of every rank's share at rank 0. */
static int phase_bake(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    bk_cmd_bake_job *job = st->job;
    st->t0 = bk_time_now();
    if (bake_lighting(st)) return 1;
    /* statistics and the ray order run through the primitives, on the GPU with the cuda backend */
    bk_backend_caps caps;
    st->be->i->caps(st->be, &caps);
    if (caps.gpu_primitives && (c->bin_rays || c->exposure_auto || c->stats))
        st->gpu = bk_gpu_ops_init(st->msg, sizeof st->msg);
    if (c->bin_rays &&
        bk_cmd_bake_bin_texels(st->gpu, st->tx, st->ntx, &st->a, &st->sort_seconds, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    /* pages are stacked vertically into one image of at.height * page_count rows (atlas.h) */
    st->page_px = (size_t)st->at.width * (size_t)st->at.height;
    st->npx = BK_ATLAS_PIXELS(&st->at);
    st->img_h = st->at.height * st->at.page_count;
    st->bv = bk_bake_data_view(&st->bd, &st->a);
    st->bake_prep = bk_time_now() - st->t0;
    bake_launch_opts(st);
    if (c->probe_spacing > 0 && c->writer && bake_probes(st)) return 1;
    const int denoise = c->denoise >= 0 ? c->denoise : c->p.mode == BK_BAKE_LIGHT;
    /* A bake that denoises keeps each texel's colour and variance (16 B per texel) until the
     * denoiser is done and only then makes the image (12 B per pixel): never both at once with
     * the texels (32 B), nor a variance per pixel. */
    st->filter = denoise && c->dn.passes > 0 && c->p.spp > 1;
    if (bake_targets(st)) return 1;
    /* a backend with its own copy of the texels (a GPU) lets the host keep only their refs from
     * the moment every device has begun (texels_kept); the CPU reads them in place, through the
     * denoiser's passes too, and they are compacted after those */
    st->kt.tx = &st->tx;
    st->kt.refs = &st->refs;
    st->kt.n = st->ntx;
    st->ro.texels_kept = bk_cmd_bake_texels_kept;
    st->ro.texels_kept_ctx = &st->kt;
    st->mt.s = st->surf;
    st->mt.a = &st->at;
    st->mt.refs = st->refs;
    if (!st->tx) {
        st->ro.make_texels = bk_cmd_bake_make_texels;
        st->ro.make_texels_ctx = &st->mt;
        st->ro.texel_refs = st->refs;
        /* a device that makes them from their refs gets those (8 B each) and the atlas's UVs */
        if (st->bv.tri_count == st->surf->tri_count) {
            if (bk_texel_src_make(st->surf, &st->at, &st->tsrc, &st->tsrc_n)) {
                bk_cmd_bake_error("out of memory for the texels' normals\n");
                return 1;
            }
            st->ro.texel_src = &st->tsrc;
        }
    }
    const uint64_t key = job->size > 1 ? bk_cmd_bake_job_key(job, c, st->tx, &st->mt, st->ntx, st->img_h) : 0;
    if (bk_bake_texels(st->be, &st->bv, st->tx, st->ntx, st->at.width, st->img_h, &st->ro, st->rgb, st->cov, &st->res,
                       st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    if (job->size > 1) {
        if (bk_cmd_bake_job_share(job, c, key, st->tx, st->refs, st->ntx, st->cov, st->tcol, &st->res)) return 1;
        if (job->rank != 0) { /* its share is with rank 0: wait for its word, and stop */
            st->rc = bk_cmd_bake_job_agree(job, 1, 1) ? 1 : 0;
            return 1;
        }
        /* the other ranks now sleep in that wait: what follows (denoise, fill, write) takes
         * every core the job holds on rank 0's host (mpirun binds each of 2 ranks to one core;
         * with 1 thread rank 0's denoiser took twice as long as one process's) */
        if (job->own_threads) bk_pool_set_threads(bk_world_take_host_cores());
    }
    st->ph[PH_BAKE] = bk_time_now() - st->t0;
    return 0;
}

/* The image: every texel's colour at its pixel (0 inside geometry), 0 elsewhere; from the last
 * texel down, a slice at a time, each slice's colours given back once written (texels are in
 * pixel order: the image's fresh pages fill as the colours shrink, so the two are never both
 * whole). */
static int image_from_colours(bake_state *st)
{
    st->rgb = calloc(3 * st->npx, sizeof(float));
    if (!st->rgb) {
        bk_cmd_bake_error("out of memory for a %dx%d lightmap (%d pages)\n", st->at.width, st->at.height,
                          st->at.page_count);
        return 1;
    }
    enum { SLICE = 1 << 20 };
    for (uint32_t end = st->ntx; end > 0;) {
        uint32_t  begin = end > SLICE ? end - SLICE : 0;
        image_job ij = { st->refs + begin, st->tcol + begin, st->rgb };
        bk_parallel_for(end - begin, 16384, image_fn, &ij); /* each texel its own pixel */
        end = begin;
        bk_f4 *shrunk = end ? realloc(st->tcol, sizeof(bk_f4) * end) : NULL;
        if (shrunk) st->tcol = shrunk;
    }
    free(st->tcol);
    st->tcol = NULL;
    return 0;
}

/* denoise: the texels' colours filtered (bk_denoise_texel_colours), then made into the image. */
static int phase_denoise(bake_state *st)
{
    const bk_atlas *at = &st->at;
    st->t0 = bk_time_now();
    if (st->tcol) {
        /* the whole texels (the CPU's passes read them), or their refs (the backend kept them),
         * which come back holding charts instead of triangles */
        const bk_denoise_view dv = { .coverage = st->cov,
                                     .texels = st->refs ? NULL : st->tx,
                                     .n = st->ntx,
                                     .tri_chart = at->tri_chart,
                                     .tri_count = at->tri_count,
                                     .w = at->width,
                                     .h = at->height,
                                     .pages = at->page_count,
                                     .texel_world = st->c.p.texel_world };
        if (st->filter && bk_denoise_texel_bands(st->be, st->tcol, st->tdir, st->refs, &dv, &st->c.dn, &st->dres,
                                                 st->err, sizeof st->err)) {
            bk_cmd_bake_error("%s\n", st->err);
            return 1;
        }
        if (st->filter && st->refs) st->refs_hold_charts = 1;
    }
    /* from here on a texel's pixel and triangle are all that is read: 8 B of its 32 */
    if (!st->refs) st->refs = bk_texels_compact(&st->tx, st->ntx);
    if (st->tcol && image_from_colours(st)) return 1;
    if (st->tdir) bk_cmd_bake_dir_from_texels(&st->dir, st->refs, st->tdir, st->ntx);
    free(st->tdir);
    st->tdir = NULL;
    st->ph[PH_DENOISE] = bk_time_now() - st->t0;
    return 0;
}

/* Where charts may lie less than two texels apart, each texel that bilinear lookups inside a
 * chart read takes that chart's colours only (bk_atlas_reach_ids, into *reach: NULL where they
 * never do); 0, or 1 after printing why. */
static int reach_ids(bake_state *st, uint32_t **reach)
{
    const bk_atlas *at = &st->at;
    *reach = at->close_charts ? malloc(sizeof(uint32_t) * (st->npx ? st->npx : 1)) : NULL;
    if (at->close_charts && !*reach) {
        bk_cmd_bake_error("out of memory\n");
        return 1;
    }
    if (*reach) bk_atlas_reach_ids(at, *reach);
    return 0;
}

/* The padding of img, page by page, with those charts' ids (reach_ids). */
static void dilate_pages(bake_state *st, float *img, uint8_t *cov, const uint32_t *reach)
{
    const bk_atlas *at = &st->at;
    bk_image_dilate_pages(img, cov, reach, at->width, at->height, at->page_count, st->c.atlas.padding + 14);
}

/* Each -o's pages, each to its temporary file (they replace their targets together at the end):
 * an -o's pages at once (bk_image_write_files: PNG pages encoded side by side on the pool). */
static int write_images(bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    char                  *err = st->err;
    const int              np = st->at.page_count, batch = c->pages_auto ? np : 1;
    FILE                 **f = malloc(sizeof(FILE *) * (size_t)np);
    const char           **name = malloc(sizeof(char *) * (size_t)np);
    const float          **rgb = malloc(sizeof(float *) * (size_t)np);
    int                    rc = !f || !name || !rgb;
    if (rc) bk_cmd_bake_error("out of memory\n");
    for (int k = 0; !rc && k < c->nouts; ++k)
        for (int p0 = 0; !rc && p0 < np; p0 += batch) {
            for (int p = p0; !rc && p < p0 + batch; ++p) {
                int oi = !c->pages_auto ? st->lm_idx[k] : k ? st->x_idx[k][p] : st->page_idx[p];
                name[p - p0] = !c->pages_auto ? c->outs[k] : k ? st->x_names[k][p] : st->page_names[p];
                rgb[p - p0] = st->rgb + 3 * st->page_px * (size_t)p;
                rc = !(f[p - p0] = bk_outputs_open(&st->io, oi, err, sizeof st->err));
            }
            rc = rc || bk_image_write_files(f, name, rgb, batch, st->at.width, st->at.height, c->exposure, err,
                                            sizeof st->err);
            for (int p = p0; !rc && p < p0 + batch; ++p) {
                int oi = !c->pages_auto ? st->lm_idx[k] : k ? st->x_idx[k][p] : st->page_idx[p];
                rc = bk_outputs_close(&st->io, oi, err, sizeof st->err);
            }
            if (rc) bk_cmd_bake_error("%s\n", err);
        }
    free(f);
    free(name);
    free(rgb);
    return rc;
}

/* --mesh-out: the OBJ (with its MTL file) and the glTF, each to its temporary file. The OBJ's MTL
 * names the lightmap -o outs[0] (the PNG when there is one) page by page, the other -o in a comment. */
static int write_mesh(bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    char                  *err = st->err;
    const size_t           es = sizeof st->err;
    FILE                  *f, *mf = NULL;
    if (c->mesh_obj) {
        const char      *also[BK_CMD_BAKE_MAX_OUTS];
        bk_mesh_obj_opts mo;
        memset(&mo, 0, sizeof mo);
        mo.lightmap = c->pages_auto ? (const char *const *)st->page_names : &c->out;
        for (int k = 1; k < c->nouts; ++k) also[mo.also_count++] = c->pages_auto ? st->x_names[k][0] : c->outs[k];
        mo.also = also;
        mo.vox_instances = st->s.vox_instances;
        mo.vox_instance_count = st->s.vox_instance_count;
        if (!(f = bk_outputs_open(&st->io, st->out_idx[OUT_MESH_OBJ], err, es)) ||
            (st->mtl_idx >= 0 && !(mf = bk_outputs_open(&st->io, st->mtl_idx, err, es))) ||
            bk_mesh_write_obj_vox(f, c->mesh_obj, st->surf, st->has_vox ? &st->vm : NULL, &st->at, mf, st->mtl_path,
                                  &mo, err, es) ||
            bk_outputs_close(&st->io, st->out_idx[OUT_MESH_OBJ], err, es) ||
            (st->mtl_idx >= 0 && bk_outputs_close(&st->io, st->mtl_idx, err, es))) {
            bk_cmd_bake_error("%s\n", err);
            return 1;
        }
    }
    if (c->mesh_gltf) {
        /* the glTF embeds the main lightmap's pages as written: their temporary files until the commit */
        const char **files = malloc(sizeof(char *) * (size_t)st->at.page_count);
        if (!files) return bake_stop(st, 0, "out of memory");
        for (int p = 0; p < st->at.page_count; ++p)
            files[p] = st->io.out[c->pages_auto ? st->page_idx[p] : st->out_idx[OUT_LIGHTMAP]].tmp;
        int rc = !(f = bk_outputs_open(&st->io, st->out_idx[OUT_MESH_GLTF], err, es)) ||
                 bk_cmd_bake_write_gltf(f, c, &st->s, st->surf, st->has_vox ? &st->vm : NULL, &st->at, st->page_names,
                                        files, st->rgb, &st->pool, st->probes.n, err, es) ||
                 bk_outputs_close(&st->io, st->out_idx[OUT_MESH_GLTF], err, es);
        free(files);
        if (rc) {
            bk_cmd_bake_error("%s\n", err);
            return 1;
        }
    }
    return 0;
}

/* --preview: the scene through view's camera with the lightmap as -o holds it: a PNG's values
 * are the exposed ones, clamped to 1 (what `baker view` reads back from it, but for the 8-bit
 * rounding); an HDR's or EXR's the bake's own. */
static int write_preview(bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    const int              png = bk_image_type_of(c->out) == BK_IMAGE_TYPE_PNG;
    float                 *lm = st->rgb;
    if (png) {
        if (!(lm = malloc(sizeof(float) * 3 * (st->npx ? st->npx : 1)))) {
            bk_cmd_bake_error("out of memory for the preview's lightmap\n");
            return 1;
        }
        for (size_t i = 0; i < 3 * st->npx; ++i) {
            float v = st->rgb[i] * c->exposure;
            lm[i] = v > 1.0f ? 1.0f : v > 0.0f ? v : 0.0f;
        }
    }
    bk_view_lightmap l = { lm, st->at.width, st->at.height, st->at.page_count, { NULL, NULL, NULL } };
    int rc = bk_cmd_view_write(st->be, &c->t.opts, &st->s, &st->at, &l, &c->view, &st->io, st->out_idx[OUT_PREVIEW],
                               c->preview, &st->view);
    if (png) free(lm);
    return rc;
}

/* For the hint after a PNG bake: the 8-bit PNG clips where exposure x value > 1 in a channel
 * (image.c encodes min(1, E v)). st->clip_share: the share of the baked texels that clip;
 * st->clip_fit: the exposure that maps their brightest channel's 99th percentile to 1 (from a
 * histogram of 1/16-octave bins, the percentile's bin's upper edge: a little under). */
static void clip_stats(bake_state *st)
{
    bk_cmd_bake_clip_stats(st->rgb, st->cov, st->npx, st->c.exposure, &st->clip_share, &st->clip_fit);
}

/* --directional's bands and --shadowmask's images: each filled and dilated as the map is (before
 * the map's fill, which frees the refs), each from the coverage as the bake left it. */
static int fill_bands(bake_state *st)
{
    const bk_atlas *at = &st->at;
    float          *img[5];
    int             n = 0;
    for (int b = 0; st->dir.mode && b < 3; ++b) img[n++] = st->dir.band[b];
    for (int m = 0; m < 2; ++m)
        if (st->mask[m]) img[n++] = st->mask[m];
    if (!n) return 0;
    uint8_t  *cov = malloc(st->npx ? st->npx : 1);
    uint32_t *reach = NULL;
    if (!cov) return bake_stop(st, 0, "out of memory");
    int rc = reach_ids(st, &reach);
    for (int b = 0; b < n && !rc; ++b) {
        memcpy(cov, st->cov, st->npx);
        rc = bk_fill_hidden_texels(img[b], cov, st->refs, st->ntx, st->refs_hold_charts ? NULL : at->tri_chart,
                                   at->width, at->height, at->page_count, NULL, st->err, sizeof st->err);
        if (rc) bk_cmd_bake_error("%s\n", st->err);
        else dilate_pages(st, img[b], cov, reach);
    }
    free(reach);
    free(cov);
    return rc;
}

/* --shadowmask: its channels as one RGBA PNG (8 bits, linear). Channels past the lights' are 0,
 * but an unused alpha is 1, so that viewers show the page opaque. */
static int write_mask(bake_state *st)
{
    const size_t   npx = st->npx;
    const uint32_t nc = st->c.p.mask_count;
    float         *px = malloc(sizeof(float) * 4 * (npx ? npx : 1));
    int            rc = px ? 0 : bake_stop(st, 0, "out of memory for the shadowmask's page");
    for (size_t i = 0; !rc && i < npx; ++i)
        for (uint32_t c = 0; c < 4; ++c) px[4 * i + c] = c < nc ? st->mask[c / 3][3 * i + c % 3] : c == 3 ? 1.0f : 0.0f;
    FILE *f = rc ? NULL : bk_outputs_open(&st->io, st->out_idx[OUT_MASK], st->err, sizeof st->err);
    if (!rc && (!f || bk_image_write_data(f, st->c.mask_out, px, 4, st->at.width, st->img_h, st->err, sizeof st->err) ||
                bk_outputs_close(&st->io, st->out_idx[OUT_MASK], st->err, sizeof st->err)))
        rc = bake_stop(st, 0, st->err);
    free(px);
    return rc;
}

/* write: the exposure, the fill of texels inside geometry, the dilation, the images, the mesh
 * (WRITE_STEPS, each timed). */
static int phase_write(bake_state *st)
{
    bk_cmd_bake_cli *c = &st->c;
    const bk_atlas  *at = &st->at;
    st->t0 = bk_time_now();
    double wt = st->t0;
    if (c->exposure_auto || c->stats) {
        float e = bk_cmd_bake_auto_exposure(st->gpu, st->rgb, st->cov, st->npx, &st->mean_lum, st->err, sizeof st->err);
        if (e < 0) {
            bk_cmd_bake_error("%s\n", st->err);
            return 1;
        }
        if (c->exposure_auto) c->exposure = e;
    }
    /* texels found inside geometry take the nearest valid texel of their own chart (fill.h);
     * then the padding, page by page */
    /* the refs go as soon as the fill has its chart map: not held through the fill nor the write */
    st->wr[WR_EXPOSURE] = lap(&wt);
    /* the devices' last use: when the process ends with this bake, they go now, on a thread,
     * while the host fills, dilates and writes (bk_cmd_bake_last) */
    st->mem[MEM_PEAK_DEVICE] = st->be->i->memory_peak(st->be);
    if (bake_last && !c->preview) { /* else the preview traces on the backend, after the images */
        st->rel.gpu = st->gpu;
        st->rel.be = st->be;
        st->rel.running = pthread_create(&st->rel.th, NULL, bk_cmd_bake_release_run, &st->rel) == 0;
        if (st->rel.running) st->gpu = NULL, st->be = NULL;
    }
    /* before the fill and the dilation: only baked texels count */
    for (int k = 0; !c->quiet && k < c->nouts; ++k)
        if (bk_image_type_of(c->outs[k]) == BK_IMAGE_TYPE_PNG) {
            clip_stats(st);
            break; /* (the same for each) */
        }
    if (fill_bands(st)) return 1;
    if (bk_fill_hidden_refs(st->rgb, st->cov, &st->refs, st->ntx, st->refs_hold_charts ? NULL : at->tri_chart,
                            at->width, at->height, at->page_count, NULL, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    st->wr[WR_FILL] = lap(&wt);
    uint32_t *reach;
    if (reach_ids(st, &reach)) return 1;
    dilate_pages(st, st->rgb, st->cov, reach);
    free(reach);
    st->wr[WR_DILATE] = lap(&wt);
    if (write_images(st)) return 1;
    if (bk_cmd_bake_dir_write(&st->dir, c, &st->io, st->rgb, at->width, st->img_h, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    if (st->out_idx[OUT_MASK] >= 0 && write_mask(st)) return 1;
    if (st->out_idx[OUT_PROBES] >= 0) {
        FILE *f = bk_outputs_open(&st->io, st->out_idx[OUT_PROBES], st->err, sizeof st->err);
        int   rc = !f || bk_probe_file_write(f, &st->probes);
        if (f && rc) bk_fail(st->err, sizeof st->err, "%s: a write failed", c->probes_out);
        if (rc || bk_outputs_close(&st->io, st->out_idx[OUT_PROBES], st->err, sizeof st->err)) {
            bk_cmd_bake_error("%s\n", st->err);
            return 1;
        }
    }
    st->wr[WR_IMAGES] = lap(&wt);
    if (c->mesh_out && write_mesh(st)) return 1;
    st->wr[WR_MESH] = lap(&wt);
    if (c->preview && write_preview(st)) return 1;
    st->wr[WR_PREVIEW] = lap(&wt);
    st->ph[PH_WRITE] = bk_time_now() - st->t0;
    return 0;
}

/* free: what the stats and the summary no longer need goes before they are written, so that its
 * time is a phase too (the scene and the atlas stay: the stats name pages and materials). */
static int phase_free(bake_state *st)
{
    st->t0 = bk_time_now();
    if (!bake_end_fast) { /* else the process end takes the host memory (see bk_cmd_bake_end_fast) */
        free(st->rgb);
        st->rgb = NULL;
        free(st->tx);
        st->tx = NULL;
        free(st->refs);
        st->refs = NULL;
        free(st->cov);
        st->cov = NULL;
        bk_bake_data_free(&st->bd);
        bk_accel_free(&st->a);
        memset(&st->a, 0, sizeof st->a);
        bk_tex_pool_free(&st->pool);
    }
    bk_gpu_ops_free(st->gpu);
    st->gpu = NULL;
    bk_backend_free(st->be);
    st->be = NULL;
    bk_cmd_bake_release_finish(&st->rel); /* what the devices' teardown did not hide behind the write */
    st->ph[PH_FREE] = bk_time_now() - st->t0;
    st->mem[MEM_PEAK_HOST] = bk_peak_rss();
    return 0;
}

/* The summary of a bake, unless --quiet. */
static void print_summary(const bake_state *st)
{
    const bk_cmd_bake_cli   *c = &st->c;
    const bk_cmd_bake_job   *job = st->job;
    const bk_atlas          *at = &st->at;
    const bk_voxmesh        *vm = &st->vm;
    const bk_bake_result    *res = &st->res;
    const bk_denoise_result *dres = &st->dres;
    const uint64_t          *mem = st->mem;
    FILE                    *say = st->say;
    double mrays = res->totals.seconds > 0 ? (double)res->totals.rays / res->totals.seconds / 1e6 : 0.0;
    if (at->page_count > 1 || c->pages_auto)
        fprintf(say,
                "baked %s -> %s ... %s (%d pages of %dx%d, %u charts, %u texels, utilisation %.1f%%, %s backend)\n",
                c->scene, st->page_names[0], st->page_names[at->page_count - 1], at->page_count, at->width, at->height,
                at->chart_count, st->ntx, 100.0 * at->utilisation, st->backend_name);
    else
        fprintf(say, "baked %s -> %s (%dx%d, %u charts, %u texels, utilisation %.1f%%, stretch %.3f, %s backend)\n",
                c->scene, c->out, at->width, at->height, at->chart_count, st->ntx, 100.0 * at->utilisation,
                (double)at->stretch_l2, st->backend_name);
    if (st->has_vox)
        fprintf(say,
                "  voxels: %u instances, %llu voxels -> %llu visible faces (%llu hidden between instances) -> %u quads "
                "= %u charts, "
                "%llu texels at %d per voxel; surface %.3f s\n",
                st->s.vox_instance_count, (unsigned long long)vm->voxel_count, (unsigned long long)vm->face_count,
                (unsigned long long)vm->hidden_faces, vm->quad_count, vm->quad_count,
                (unsigned long long)vm->face_count * (uint64_t)(c->texels_per_voxel * c->texels_per_voxel),
                c->texels_per_voxel, vm->seconds);
    fprintf(say, " ");
    for (int k = 0; k < PH_COUNT; ++k)
        fprintf(say, "%s %s %.3f s", k ? " |" : "", bk_cmd_bake_phase_names[k], st->ph[k]);
    fputc('\n', say);
    fprintf(
        say,
        "  %llu rays in %.3f s of tracing%s: %.1f Mrays/s; %u launches, longest %.1f ms; %u texels inside geometry\n",
        (unsigned long long)res->totals.rays, res->totals.seconds, res->devices > 1 ? " (busiest device)" : "", mrays,
        res->launches, res->longest_launch_ms, res->invalid);
    for (int k = 0; res->devices > 1 && k < res->devices && k < BK_BAKE_MAX_DEVICES; ++k)
        fprintf(say, "    device %d: %llu texels in %u blocks, %llu rays, busy %.3f s\n", k,
                (unsigned long long)res->dev[k].texels, res->dev[k].blocks, (unsigned long long)res->dev[k].rays,
                res->dev[k].busy_seconds);
    const bk_cmd_bake_probes *pr = &st->probe_stat;
    if (pr->n)
        fprintf(say,
                "  probes: %u (%u x %u x %u, %g apart; %u invalid: inside geometry or behind walls), %u rays each, "
                "%.3f s (%.3f s of tracing, %llu rays)\n",
                pr->n, st->probes.grid_dims[0], st->probes.grid_dims[1], st->probes.grid_dims[2], c->probe_spacing,
                pr->invalid, pr->spp, pr->seconds, pr->totals.seconds, (unsigned long long)pr->totals.rays);
    for (uint32_t k = 0; k < c->p.mask_count; ++k) {
        if (c->mask_point[k] < 0) fprintf(say, "%s%c the sun", k ? ", " : "  shadowmask: ", "rgba"[k]);
        else fprintf(say, "%s%c point light %d", k ? ", " : "  shadowmask: ", "rgba"[k], c->mask_point[k]);
        if (k + 1 == c->p.mask_count) fprintf(say, " (%s)\n", c->mask_out);
    }
    if (dres->texels)
        fprintf(say, "  denoise %.3f s (passes %.3f s on %s): %llu texels in %u charts, each chart's mean kept\n",
                dres->seconds, dres->filter_seconds, st->backend_name, (unsigned long long)dres->texels, dres->charts);
    uint64_t px = (uint64_t)BK_ATLAS_PIXELS(at);
    fprintf(say, "  memory: peak %.2f GB host (estimated %.2f GB; %.1f bytes per atlas texel)",
            bk_cmd_bake_gb(mem[MEM_PEAK_HOST]), bk_cmd_bake_gb(mem[MEM_EST_HOST]),
            px ? (double)mem[MEM_PEAK_HOST] / (double)px : 0.0);
    if (mem[MEM_PEAK_DEVICE] || mem[MEM_EST_DEVICE])
        fprintf(say, ", peak %.2f GB on the device (estimated %.2f GB for the bake)",
                bk_cmd_bake_gb(mem[MEM_PEAK_DEVICE]), bk_cmd_bake_gb(mem[MEM_EST_DEVICE]));
    fputc('\n', say);
    if (c->exposure_auto) fprintf(say, "  exposure %.4g (99th percentile of luminance to white)\n", c->exposure);
    if (c->preview) {
        const bk_view_result *v = &st->view;
        fprintf(say, "  preview %s: %dx%d, %s, %.1f%% of pixels on a surface, camera %g,%g,%g,%g,%g,%g,%g, %.3f s\n",
                c->preview, c->view.width, c->view.height, bk_view_show_name(c->view.show),
                v->rays ? 100.0 * (double)v->hits / (double)v->rays : 0.0, (double)v->eye[0], (double)v->eye[1],
                (double)v->eye[2], (double)v->target[0], (double)v->target[1], (double)v->target[2],
                (double)c->view.fov_deg, v->seconds);
    }
    /* every file the run writes: each -o's pages (a first .. last run beyond two), then the
     * others in the order they were planned (the mesh, its MTL, the preview, the stats) */
    fputs("  wrote", say);
    int n = 0;
    for (int k = 0; k < c->nouts; ++k) {
        const int np = c->pages_auto ? at->page_count : 1;
        char    **names = !c->pages_auto ? NULL : k ? st->x_names[k] : st->page_names;
        if (!names) fprintf(say, "%s %s", n++ ? "," : "", c->outs[k]);
        else if (np <= 2)
            for (int p = 0; p < np; ++p) fprintf(say, "%s %s", n++ ? "," : "", names[p]);
        else fprintf(say, "%s %s .. %s (%d pages)", n++ ? "," : "", names[0], names[np - 1], np);
    }
    for (int i = 0; i < st->io.n_out; ++i)
        if (!st->io.out[i].to_stdout && strcmp(st->io.out[i].what, "-o"))
            fprintf(say, "%s %s", n++ ? "," : "", st->io.out[i].path);
    fputc('\n', say);
    if (c->bin_rays) fprintf(say, "  ray binning: texels sorted in %.4f s\n", st->sort_seconds);
    if (job->size > 1)
        fprintf(say,
                "  job: %d ranks, granules of %u texels taken as asked for; rank 0 waited %.3f s for the others, "
                "then gathered %.1f MB in %.3f s\n",
                job->size, job->granule, job->wait_seconds, (double)job->gather_bytes / 1e6, job->gather_seconds);
}

/* The side of the smallest power-of-two page (at least 16) with room for twice the texels
 * baked and for the largest chart (its UV extent in texels, and the padding on both sides);
 * 0 when that is no smaller than the page. Only where charts keep their size at any --size
 * (--texels-per-unit, or voxels alone): else charts are scaled to fill the page. */
static int smaller_size(const bake_state *st, int *largest)
{
    const bk_cmd_bake_cli *c = &st->c;
    const bk_atlas        *at = &st->at;
    if (at->page_count != 1 || c->atlas.uv_from_file || !at->tri_chart || !at->chart_count ||
        !(c->atlas.texels_per_unit > 0 || (st->has_vox && st->vm.first_quad_tri == 0)))
        return 0;
    float *box = malloc(sizeof(float) * 4 * at->chart_count);
    if (!box) return 0;
    for (uint32_t k = 0; k < at->chart_count; ++k) { /* empty boxes: lo 2, hi -1 */
        box[4 * k] = box[4 * k + 1] = 2;
        box[4 * k + 2] = box[4 * k + 3] = -1;
    }
    for (uint32_t t = 0; t < at->tri_count; ++t) {
        uint32_t ch = at->tri_chart[t];
        if (ch >= at->chart_count) continue;
        for (int v = 0; v < 3; ++v) {
            float u = at->uv[6 * (size_t)t + 2 * v], w = at->uv[6 * (size_t)t + 2 * v + 1];
            box[4 * ch] = fminf(box[4 * ch], u), box[4 * ch + 1] = fminf(box[4 * ch + 1], w);
            box[4 * ch + 2] = fmaxf(box[4 * ch + 2], u), box[4 * ch + 3] = fmaxf(box[4 * ch + 3], w);
        }
    }
    double side = 0;
    for (uint32_t k = 0; k < at->chart_count; ++k)
        if (box[4 * k + 2] >= box[4 * k])
            side = fmax(
                side, fmax((box[4 * k + 2] - box[4 * k]) * at->width, (box[4 * k + 3] - box[4 * k + 1]) * at->height));
    free(box);
    *largest = (int)ceil(side);
    int s = 16;
    while (s < at->width && ((double)s * s < 2.0 * (double)at->covered || s < side + 2.0 * c->atlas.padding + 2))
        s *= 2;
    return s < at->width ? s : 0;
}

/* Hints on stderr after a bake (not with --quiet): a PNG that clips, a page mostly empty. */
static void print_hints(const bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    const bk_atlas        *at = &st->at;
    if (st->clip_share > 0.01) {
        fprintf(stderr,
                "baker: hint: %.1f%% of the baked texels clip in the 8-bit PNG (a channel over 1 at exposure %.4g): ",
                100.0 * st->clip_share, c->exposure);
        if (c->exposure_auto) fprintf(stderr, "--exposure %.3g would keep 99%% of them below 1", st->clip_fit);
        else
            fprintf(stderr, "try --exposure auto (or --exposure %.3g, which keeps 99%% of them below 1)", st->clip_fit);
        fputs(", or an .hdr / .exr output\n", stderr);
    }
    int largest = 0, smaller = at->utilisation < 0.10f ? smaller_size(st, &largest) : 0;
    if (smaller)
        fprintf(stderr,
                "baker: hint: the atlas uses %.1f%% of its %dx%d texels: --size %d has room for twice the %llu texels "
                "baked and for the largest chart (%d texels across)\n",
                100.0 * at->utilisation, at->width, at->height, smaller, (unsigned long long)at->covered, largest);
}

/* After the phases: the stats, the summary, the job's last agreement and the commit of every
 * output. Returns the exit status. */
static int bake_report(bake_state *st)
{
    const bk_cmd_bake_cli *c = &st->c;
    if (c->stats) {
        FILE *f = bk_outputs_open(&st->io, st->out_idx[OUT_STATS], st->err, sizeof st->err);
        if (!f) {
            bk_cmd_bake_error("%s\n", st->err);
            return 1;
        }
        bk_cmd_bake_write_stats(f, c, &st->io, &st->s, st->has_vox ? &st->vm : NULL, &st->at, st->page_names, st->ntx,
                                &st->res, st->ph, st->backend_name, st->mean_lum, st->sort_seconds, st->mem, &st->dres,
                                st->job, st->wr, st->bake_prep,
                                &(bk_cmd_bake_tex){ &st->pool, st->cut, st->tex_seconds }, &st->probe_stat);
    }
    if (!c->quiet) print_summary(st);
    if (!c->quiet) print_hints(st);
    /* every rank has done its share: the others, waiting since the gather, may end; should one
     * of them have failed, nothing is committed */
    if (st->job->size > 1 && bk_cmd_bake_job_agree(st->job, 1, 1)) return 1;
    /* the outputs replace their targets only once everything, standard output included, is
     * written (bk_outputs_commit checks the summary and --stats - first) */
    if (bk_outputs_commit(&st->io, st->err, sizeof st->err)) {
        bk_cmd_bake_error("%s\n", st->err);
        return 1;
    }
    for (int k = 0; c->pages_auto && k < c->nouts; ++k) bk_cmd_bake_note_stale_pages(c, c->outs[k], st->at.page_count);
    return 0;
}

/* The end of a bake, failed or not: the backend's thread joined, the temporary files of what
 * was not committed removed, and (unless the process ends with a successful bake) all freed. */
static int bake_end(bake_state *st, int rc)
{
    bk_cmd_bake_cli *c = &st->c;
    if (st->bs.running) { /* an error while the backend's thread was still at work */
        bk_cmd_bake_start_finish(&st->bs, NULL, NULL);
        if (!st->be) st->be = st->bs.be;
    }
    bk_cmd_bake_release_finish(&st->rel);
    if (st->bs_begun) {
        pthread_mutex_destroy(&st->bs.lock);
        pthread_cond_destroy(&st->bs.cv);
    }
    bk_outputs_free(&st->io);       /* what was not committed: temporary files only */
    if (rc == 0 && bake_end_fast) { /* the process ends: its memory goes with it */
        bk_gpu_ops_free(st->gpu);
        bk_backend_free(st->be);
        return rc;
    }
    for (int k = 0; k < c->noscale; ++k) free((char *)c->oscale_pat[k]);
    free(c->oscale_pat);
    free(c->oscale_f);
    free(st->tri_scale);
    free(st->rgb);
    free(st->tcol);
    free(st->tdir);
    free(st->mask[0]);
    free(st->mask[1]);
    bk_cmd_bake_dir_free(&st->dir);
    free(st->tx);
    free(st->refs);
    free(st->tsrc_n);
    free(st->cov);
    free(c->points);
    free(c->point_modes);
    free(c->scenes);
    free(c->devices);
    free(st->rects);
    free(st->mtl_path);
    free(st->page_idx);
    for (int p = 0; st->page_names && p < st->at.page_count; ++p) free(st->page_names[p]);
    free(st->page_names);
    for (int k = 0; k < BK_CMD_BAKE_MAX_OUTS; ++k) {
        free(st->lm_page0[k]);
        for (int p = 0; st->x_names[k] && p < st->at.page_count; ++p) free(st->x_names[k][p]);
        free(st->x_names[k]);
        free(st->x_idx[k]);
    }
    bk_gpu_ops_free(st->gpu);
    bk_bake_data_free(&st->bd);
    bk_probe_set_free(&st->probes);
    bk_atlas_free(&st->at);
    bk_accel_free(&st->a);
    bk_tex_pool_free(&st->pool);
    bk_voxmesh_free(&st->vm);
    bk_scene_free(&st->one);
    bk_scene_free(&st->s);
    bk_backend_free(st->be);
    return rc;
}

/* The phases, in BAKE_PHASES order: each returns 0 to go on, else the bake stops with st->rc. */
#define PHASE_FN(E, n) phase_##n,
static int (*const phase_run[PH_COUNT])(bake_state *) = { BAKE_PHASES(PHASE_FN) };
#undef PHASE_FN

static int bake_run(int argc, char **argv, bk_cmd_bake_job *job)
{
    bake_state st;
    memset(&st, 0, sizeof st);
    st.t_start = bk_time_now();
    st.argc = argc;
    st.argv = argv;
    st.job = job;
    for (int k = 0; k < PH_COUNT; ++k)
        if (phase_run[k](&st)) return bake_end(&st, st.rc);
    return bake_end(&st, bake_report(&st));
}

int bk_cmd_bake(int argc, char **argv)
{
    bk_cmd_bake_job job;
    memset(&job, 0, sizeof job);
    job.rank = bk_world_rank();
    job.size = bk_world_size();
    bake_error_quiet = job.size > 1 && job.rank != 0;
    bake_last_error[0] = 0;
    int rc = bake_run(argc, argv, &job);
    /* this rank stopped before an agreement the others are waiting at: it makes it, as a failure */
    if (job.size > 1 && !job.stopped) {
        bk_cmd_bake_job_agree(&job, 0, 1);
        if (!rc) rc = 1;
    }
    free(job.taken);
    return rc;
}
