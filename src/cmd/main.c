/* main.c - the baker command line: subcommands trace, rays, build, bench and diff.
 *
 * Every error is one line naming the file or the option, followed by a non-zero exit; every
 * command checks the files it reads and writes before any work (outputs.h) and writes through
 * temporary files renamed at the end.
 */
#include "accel_build.h"
#include "backend.h"
#include "registry.h"
#include "bench.h"
#include "bench_common.h"
#include "cli.h"
#include "cmd_bake.h"
#include "diff.h"
#include "cmd_view.h"
#include "outputs.h"
#include "rays.h"
#include "loader.h"
#include "scene.h"
#include "stats.h"
#include "util.h"
#include "voxmesh.h"
#include "world.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Built with AddressSanitizer (gcc says so with a macro, clang through __has_feature): its leak
 * check runs at exit, so everything is freed first there. */
#if defined(__SANITIZE_ADDRESS__)
#define BK_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define BK_LEAK_CHECKED 1
#endif
#endif
#ifndef BK_LEAK_CHECKED
#define BK_LEAK_CHECKED 0
#endif

static const char usage[] =
    "baker - GPU lightmap baker\n"
    "\n"
    "usage:\n"
    "  baker SCENE [SCENE...] -o LIGHTMAP.png [options]      bake a lightmap (baker help bake)\n"
    "  baker trace SCENE --rays RAYS --hits HITS [options]   trace a RAYS file, write a HITS file\n"
    "  baker rays SCENE -o RAYS (--diffuse N | --primary N | --random N) [--seed S]\n"
    "                                                        write a standard ray set\n"
    "  baker build SCENE [--accel bvh|kdtree]                build and report the tree\n"
    "  baker bench load [FILE...]                            OBJ loading speed\n"
    "  baker bench trace [--scenes A,B,..] [--rays N] [--backend B] [--stack-size K]\n"
    "                                                        Mrays/s of every accel x stack\n"
    "  baker bench stacks [SCENE...] [--csv F] [--svg F]     the bake under every accel x stack\n"
    "                                                        x register cap, with occupancy\n"
    "  baker bench bake [--scenes A,B] [--sizes 1024,4096] [--csv F] [-- BAKE OPTIONS]\n"
    "                                                        the whole bake command, phase by phase\n"
    "  baker diff A B [-o DIFF.png] [--mask M.png] [--json]  compare two lightmaps: RMSE, PSNR\n"
    "                                                        (linear, sRGB), bias, difference image\n"
    "  baker view SCENE --lightmap LM -o VIEW.png [options]  the baked scene seen from a camera,\n"
    "                                                        albedo x lightmap (baker help view)\n"
    "  baker help COMMAND                                    options of one command\n"
    "\n"
    "SCENE is a Wavefront OBJ (with its MTL files), a gzip-compressed .obj.gz, a MagicaVoxel\n"
    ".vox or a glTF 2.0 .gltf / .glb; a bake takes several, baked together.\n"
    "RAYS and HITS files are specified in docs/formats.md (beside this program's source).\n"
    "No output may name an input or another output; outputs are written to a temporary file\n"
    "beside their target and renamed only when the run succeeds.\n"
    "\n"
    "examples:\n"
    "  baker scenes/cornell.obj -o cornell.png\n"
    "  baker scenes/cornell.vox -o cornell_vox.png --texels-per-voxel 4 --size 512\n"
    "  baker rays scenes/cornell.obj -o cornell.rays --diffuse 1M\n"
    "  baker trace scenes/cornell.obj --rays cornell.rays --hits cornell.hits --stack short --stats\n"
    "  baker bench trace --scenes sponza.obj,sibenik.obj --rays 4M\n";

static const char trace_usage[] =
    "usage: baker trace SCENE --rays RAYS --hits HITS [options]\n"
    "\n"
    "Loads SCENE, builds the acceleration structure, traces every ray of RAYS and writes the\n"
    "nearest hit (or, with --any-hit, any hit) of each to HITS. Prints load, build and trace\n"
    "times separately, and Mrays/s for the trace alone.\n"
    "\n"
    "options:\n"; /* then trace_opts */

static const char rays_usage[] = "usage: baker rays SCENE -o RAYS (--diffuse N | --primary N | --random N) [--seed S]\n"
                                 "                  [--length F] [--sort]\n"
                                 "\n"; /* then rays_opts */

static const char build_usage[] =
    "usage: baker build SCENE [--accel bvh|kdtree]\n"
    "\n"
    "Loads SCENE and builds the BVH and the KD-tree (or the one named), printing the time, the\n"
    "nodes, leaves, depth, references and SAH cost of each, and the time of each stage of the\n"
    "build (prep, top, subtrees, join, flatten; a stage the builder has not stays 0). Uses all\n"
    "cores, or BK_THREADS of them. Writes nothing.\n";

static int load_scene(const char *path, bk_scene *s, double *seconds)
{
    char   err[1024];
    double t0 = bk_time_now();
    if (bk_scene_load(path, s, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        return -1;
    }
    *seconds = bk_time_now() - t0;
    return 0;
}

/* "load  0.012 s  N triangles, M vertices[, K voxel instances of L models (V voxels placed)]" */
static void print_load(const bk_scene *s, double seconds)
{
    printf("load            %8.3f s  %u triangles, %u vertices", seconds, s->tri_count, s->vertex_count);
    if (s->vox_instance_count) {
        uint64_t placed = 0;
        for (uint32_t i = 0; i < s->vox_instance_count; ++i)
            placed += s->vox_models[s->vox_instances[i].model].voxel_count;
        printf(", %u voxel instances of %u models (%llu voxels placed)", s->vox_instance_count, s->vox_model_count,
               (unsigned long long)placed);
    }
    printf("\n");
}

/* The files a command reads (the scene, a RAYS file) and the one it writes, checked before any
 * work (outputs.h). Returns 0, or the exit status after printing why. */
static int plan_files(bk_outputs *io, const char *scene, const char *rays, const char *out_opt, const char *out,
                      int *out_idx)
{
    char err[1024];
    bk_outputs_init(io);
    int r = bk_outputs_input(io, "the scene", scene, err, sizeof err);
    if (!r && rays) r = bk_outputs_input(io, "--rays", rays, err, sizeof err);
    if (!r && (r = *out_idx = bk_outputs_add(io, out_opt, out, 0, err, sizeof err)) >= 0) r = 0;
    if (!r) return 0;
    fprintf(stderr, "baker: %s\n", err);
    bk_outputs_free(io);
    return r == BK_OUT_CLASH ? 2 : 1;
}

/* The scene's MTL files are inputs too: known once it is loaded, still before any output.
 * Returns 0 or the exit status. */
static int check_mtls(bk_outputs *io, const bk_scene *s)
{
    char err[1024];
    int  r = bk_outputs_scene_inputs(io, s, err, sizeof err);
    if (r) fprintf(stderr, "baker: %s\n", err);
    return r == BK_OUT_CLASH ? 2 : r ? 1 : 0;
}

static void print_build(const bk_accel *a)
{
    const bk_build_info *b = &a->info;
    printf("build   %-7s %8.3f s  %u nodes, %u leaves, depth %u, %u refs (max leaf %u), SAH cost %.2f, %.1f MB\n",
           bk_accel_type_name(a->type), b->seconds, b->nodes, b->leaves, b->depth, b->refs, b->max_leaf, b->sah_cost,
           (double)b->bytes / 1e6);
    printf("        stages ");
    for (int i = 0; i < BK_BUILD_STAGES; ++i) printf(" %s %.3f", bk_build_stage_names[i], b->stage_seconds[i]);
    printf("\n");
}

static int set_build_accel(void *dst, const char *opt, const char *v)
{
    int *accel = dst, layout;
    (void)opt;
    if (bk_accel_word_parse(v, 1, accel, &layout)) {
        char words[128];
        fprintf(stderr, "baker: --accel: expected %s, got '%s'\n", bk_accel_words(words, sizeof words, ", ", " or ", 1),
                v);
        return -1;
    }
    return 0;
}
static const char *build_accel_arg(void)
{
    static char buf[128];
    return bk_accel_words(buf, sizeof buf, "|", "|", 1);
}
/* `baker build`'s option table (its one option is told in the usage line). */
static const bk_cli_opt build_opts[] = {
    { .help = build_usage },
    { .name = "--accel", .arg_of = build_accel_arg, .set = set_build_accel },
    { 0 },
};

static int cmd_build(int argc, char **argv)
{
    const char *scene_path = NULL;
    int         accel = -1, operands = 0;
    for (int i = 0; i < argc; ++i) {
        char m[1024];
        if (!operands && !strcmp(argv[i], "--")) {
            operands = 1;
            continue;
        }
        if (operands) {
            if (scene_path) {
                fprintf(stderr, "baker build: unexpected argument '%s'\n", argv[i]);
                return 2;
            }
            scene_path = argv[i];
            continue;
        }
        int r = bk_cli_table_option(build_opts, &accel, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bk_cli_table_help(stdout, build_opts);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "baker build: %s\n", bk_cli_unknown(argv[i], "baker help build", m, sizeof m));
            return 2;
        } else if (!scene_path) {
            scene_path = argv[i];
        } else {
            fprintf(stderr, "baker build: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!scene_path) {
        fprintf(stderr, "baker build: no SCENE given\n");
        return 2;
    }
    bk_scene s;
    double   tl;
    if (load_scene(scene_path, &s, &tl)) return 1;
    print_load(&s, tl);
    bk_build_opts bo = bk_build_opts_default();
    for (int t = 0; t < 2; ++t) {
        if (accel >= 0 && accel != t) continue;
        bk_accel a;
        char     err[512];
        if (bk_accel_build(&s, t, &bo, &a, err, sizeof err)) {
            fprintf(stderr, "baker: %s: %s\n", scene_path, err);
            bk_scene_free(&s);
            return 1;
        }
        print_build(&a);
        bk_accel_free(&a);
    }
    bk_scene_free(&s);
    return 0;
}

/* `baker rays`'s arguments. */
typedef struct rays_cli {
    const char *scene, *out, *kind; /* kind: the option that names the ray set, as written */
    uint64_t    n, seed;
    double      length; /* > 0: tmax at most length x the box diagonal */
    int         sort;   /* write them in the trace's sorted order */
} rays_cli;

static int set_rays_length(void *dst, const char *opt, const char *v)
{
    return bk_cli_f64(opt, v, 1e-9, 1e9, &((rays_cli *)dst)->length);
}

static int set_rays_sort(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((rays_cli *)dst)->sort = 1;
    return 0;
}

static int set_rays_out(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((rays_cli *)dst)->out = v;
    return 0;
}

static int set_rays_kind(void *dst, const char *opt, const char *v)
{
    rays_cli *c = dst;
    c->kind = opt;
    return bk_cli_u64(c->kind, v, 1, 1ull << 32, &c->n);
}

static int set_rays_seed(void *dst, const char *opt, const char *v)
{
    (void)opt;
    return bk_cli_u64("--seed", v, 0, 0xFFFFFFFFu, &((rays_cli *)dst)->seed);
}

/* `baker rays`'s option table, from which its help (text from column 16) and its parser are made. */
static const bk_cli_opt rays_opts[] = {
    { .help = rays_usage },
    { .name = "-o", .alias = "--output", .arg = "RAYS", .set = set_rays_out },
    { .name = "--diffuse",
      .arg = "N",
      .set = set_rays_kind,
      .help = "rays leaving the surfaces: a triangle chosen by area, a uniform point on it,\n"
              "either side, origin pushed 1e-4 of the box diagonal off the surface,\n"
              "cosine-distributed directions, tmin 0, tmax infinite" },
    { .name = "--primary",
      .arg = "N",
      .set = set_rays_kind,
      .help = "a pinhole camera at the centre of the scene box (60 degree field of view)" },
    { .name = "--random",
      .arg = "N",
      .set = set_rays_kind,
      .help = "random origins around the scene and random directions (tests)" },
    { .name = "--seed",
      .arg = "S",
      .set = set_rays_seed,
      .help = "random seed (default 1); the same seed gives the same file" },
    { .name = "--length",
      .arg = "F",
      .set = set_rays_length,
      .help = "rays that end soon: tmax at most F times the scene box's diagonal\n"
              "(ambient-occlusion style rays, e.g. 0.05)" },
    { .name = "--sort",
      .set = set_rays_sort,
      .help = "write the rays in the order `baker trace --ray-order sorted` traces\n"
              "them: direction octant, then origin along a Morton curve over the\n"
              "box of the scene's BVH (stable: equal keys keep their order), so\n"
              "other tracers can be run on rays sorted as baker sorts them and\n"
              "baker's --ray-order input on a sorted file" },
    { .help = "N may be written 4M or 64k.\n" },
    { 0 },
};

static void rays_help(FILE *f) { bk_cli_table_help_col(f, rays_opts, 16); }

/* The arguments into c: -1 to go on, else the exit status (0 after --help). */
static int rays_parse(rays_cli *c, int argc, char **argv)
{
    int operands = 0;
    memset(c, 0, sizeof *c);
    c->seed = 1;
    for (int i = 0; i < argc; ++i) {
        char        m[1024];
        const char *a = argv[i];
        if (!operands && !strcmp(a, "--")) {
            operands = 1;
            continue;
        }
        if (operands) {
            if (c->scene) {
                fprintf(stderr, "baker rays: unexpected argument '%s'\n", a);
                return 2;
            }
            c->scene = a;
            continue;
        }
        /* one ray set, said before its value is read */
        if (c->kind && (!strcmp(a, "--diffuse") || !strcmp(a, "--primary") || !strcmp(a, "--random"))) {
            fprintf(stderr, "baker rays: give only one of --diffuse, --primary, --random\n");
            return 2;
        }
        int r = bk_cli_table_option(rays_opts, c, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            rays_help(stdout);
            return 0;
        } else if (a[0] == '-') {
            fprintf(stderr, "baker rays: %s\n", bk_cli_unknown(a, "baker help rays", m, sizeof m));
            return 2;
        } else if (!c->scene) c->scene = a;
        else {
            fprintf(stderr, "baker rays: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!c->scene || !c->out || !c->kind) {
        fprintf(stderr, "baker rays: need SCENE, -o RAYS and one of --diffuse/--primary/--random N\n");
        rays_help(stderr);
        return 2;
    }
    return -1;
}

static int cmd_rays(int argc, char **argv)
{
    rays_cli c;
    int      pr = rays_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    const char    *scene_path = c.scene, *out = c.out, *kind = c.kind;
    const uint64_t n = c.n, seed = c.seed;
    bk_outputs     io;
    int            oi, prc = plan_files(&io, scene_path, NULL, "-o", out, &oi);
    if (prc) return prc;
    bk_scene s;
    double   tl;
    if (load_scene(scene_path, &s, &tl)) {
        bk_outputs_free(&io);
        return 1;
    }
    if ((prc = check_mtls(&io, &s))) {
        bk_scene_free(&s);
        bk_outputs_free(&io);
        return prc;
    }
    bk_ray *rays = NULL;
    char    err[512];
    FILE   *f;
    /* A voxel scene's rays come from its surface (the quads of its visible faces), diffuse ones
     * outwards only (a ray that starts inside a voxel hits it at once). */
    bk_voxmesh vm;
    memset(&vm, 0, sizeof vm);
    int             vox = s.vox_instance_count > 0, rc = vox ? bk_voxmesh_build(&s, &vm, err, sizeof err) : 0;
    const bk_scene *src = vox ? &vm.scene : &s;
    if (!rc)
        rc = !strcmp(kind, "--diffuse")
                 ? (vox ? bk_rays_diffuse_front : bk_rays_diffuse)(src, n, (uint32_t)seed, &rays, err, sizeof err)
             : !strcmp(kind, "--primary") ? bk_rays_primary(src, n, (uint32_t)seed, &rays, err, sizeof err)
                                          : bk_rays_random(src, n, (uint32_t)seed, &rays, err, sizeof err);
    if (!rc && c.length > 0) bk_rays_limit(rays, n, src, (float)c.length);
    bk_voxmesh_free(&vm);
    if (!rc && c.sort) { /* the box the trace's key is made over: its accel's (the BVH of the scene as loaded) */
        bk_accel      a;
        bk_build_opts bo = bk_build_opts_default();
        rc = bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err);
        if (!rc) {
            rc = bk_rays_sort(rays, n, a.lo, a.hi, BK_RAY_ORDER_KEY_BITS, err, sizeof err);
            bk_accel_free(&a);
        }
    }
    if (!rc)
        rc = !(f = bk_outputs_open(&io, oi, err, sizeof err)) || bk_rays_write_file(f, out, rays, n, err, sizeof err) ||
             bk_outputs_commit(&io, err, sizeof err);
    if (rc) fprintf(stderr, "baker: %s\n", err);
    else
        printf("wrote %llu %s rays%s%s to %s\n", (unsigned long long)n, kind + 2, c.length > 0 ? ", short" : "",
               c.sort ? ", sorted" : "", out);
    bk_outputs_free(&io);
    free(rays);
    bk_scene_free(&s);
    return rc ? 1 : 0;
}

/* --stats: histograms of nodes visited and of stack depth per ray, with the primitives (on the
 * GPU for the cuda backend). The depth histogram says which short-stack size would hold most
 * rays without a restart. */
static int print_ray_stats(bk_backend *be, const uint32_t *ray_stats, uint64_t n, int stack_mode, char *err,
                           size_t err_size)
{
    enum { NB = 512, DB = 256 };
    uint32_t       *nodes = malloc(sizeof(uint32_t) * (n ? n : 1)), *depth = malloc(sizeof(uint32_t) * (n ? n : 1));
    uint32_t        hn[NB], hd[DB], maxn = 0;
    uint64_t        sum = 0;
    char            msg[256];
    bk_backend_caps caps;
    be->i->caps(be, &caps);
    bk_gpu_ops *gpu = caps.gpu_primitives ? bk_gpu_ops_init(msg, sizeof msg) : NULL;
    int         rc = 0;
    if (!nodes || !depth) {
        rc = bk_fail(err, err_size, "out of memory");
        goto out;
    }
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t nv = ray_stats[i] & 0xFFFFFFu;
        nodes[i] = nv;
        depth[i] = ray_stats[i] >> 24;
    }
    if (bk_stats_sum_u32(gpu, nodes, n, &sum, err, err_size) || bk_stats_max_u32(gpu, nodes, n, &maxn, err, err_size)) {
        rc = -1;
        goto out;
    }
    for (uint64_t i = 0; i < n; ++i) nodes[i] = nodes[i] < NB - 1 ? nodes[i] : NB - 1;
    if (bk_stats_histogram(gpu, nodes, n, NB, hn, err, err_size) ||
        bk_stats_histogram(gpu, depth, n, DB, hd, err, err_size)) {
        rc = -1;
        goto out;
    }
    printf("per ray (%s): nodes mean %.1f, median %u, p90 %u, p99 %u, max %u\n", gpu ? "GPU primitives" : "CPU twins",
           n ? (double)sum / (double)n : 0.0, bk_stats_percentile_bin(hn, NB, 0.5),
           bk_stats_percentile_bin(hn, NB, 0.9), bk_stats_percentile_bin(hn, NB, 0.99), maxn);
    printf(
        "stack depth%s: median %u, p90 %u, p99 %u, p99.9 %u, max %u: a short stack of %u entries holds 99.9%% of rays "
        "without a restart\n",
        stack_mode == BK_STACK_SHORT ? " (capped by the short stack)" : "", bk_stats_percentile_bin(hd, DB, 0.5),
        bk_stats_percentile_bin(hd, DB, 0.9), bk_stats_percentile_bin(hd, DB, 0.99),
        bk_stats_percentile_bin(hd, DB, 0.999), bk_stats_percentile_bin(hd, DB, 1.0),
        bk_stats_percentile_bin(hd, DB, 0.999));
out:
    free(nodes);
    free(depth);
    bk_gpu_ops_free(gpu);
    return rc;
}

/* `baker trace`'s arguments: the scene, the two files and the tracing options. */
typedef struct trace_cli {
    const char  *scene, *rays, *hits;
    bk_cli_trace t;
} trace_cli;

static int set_rays(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((trace_cli *)dst)->rays = v;
    return 0;
}
static int set_hits(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((trace_cli *)dst)->hits = v;
    return 0;
}

/* `baker trace`'s option table, from which its help and its parser are made. */
static const bk_cli_opt trace_file_opts[] = {
    { .name = "--rays", .arg = "FILE", .set = set_rays, .help = "input rays (RAYS0001)" },
    { .name = "--hits",
      .arg = "FILE",
      .set = set_hits,
      .help = "output hits (HITS0001), written to a temporary file and renamed" },
    { 0 },
};
static const bk_cli_opt trace_opts[] = {
    { .help = trace_usage },
    { .sub = trace_file_opts },
    { .sub = bk_cli_trace_opts, .sub_offset = offsetof(trace_cli, t) },
    { 0 },
};

/* The arguments into c: -1 to go on, else the exit status (0 after --help). */
static int trace_parse(trace_cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    bk_cli_trace_default(&c->t);
    int operands = 0;
    for (int i = 0; i < argc; ++i) {
        char m[1024];
        if (!operands && !strcmp(argv[i], "--")) {
            operands = 1;
            continue;
        }
        if (operands) {
            if (c->scene) {
                fprintf(stderr, "baker trace: unexpected argument '%s'\n", argv[i]);
                return 2;
            }
            c->scene = argv[i];
            continue;
        }
        int r = bk_cli_table_option(trace_opts, c, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bk_cli_table_help(stdout, trace_opts);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "baker trace: %s\n", bk_cli_unknown(argv[i], "baker help trace", m, sizeof m));
            return 2;
        } else if (!c->scene) c->scene = argv[i];
        else {
            fprintf(stderr, "baker trace: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!c->scene || !c->rays || !c->hits) {
        fprintf(stderr, "baker trace: need SCENE, --rays RAYS and --hits HITS\n%s", trace_usage);
        bk_cli_table_help(stderr, trace_file_opts);
        return 2;
    }
    return -1;
}

/* The trace's line of figures, and with --stats its counters and histograms. */
static void print_trace(bk_backend *be, const bk_cli_trace *t, const bk_accel *a, const bk_hit *hits, uint64_t n,
                        const bk_trace_totals *tot, const uint32_t *ray_stats)
{
    char     err[1024];
    uint64_t hit_count = 0;
    for (uint64_t i = 0; i < n; ++i) hit_count += hits[i].tri != BK_NO_HIT;
    printf("trace   %-7s %8.3f s  %llu rays, %.1f%% hit, %.2f Mrays/s (%s backend, %s stack",
           bk_accel_type_name(a->type), tot->seconds, (unsigned long long)n,
           n ? 100.0 * (double)hit_count / (double)n : 0.0, tot->seconds > 0 ? (double)n / tot->seconds / 1e6 : 0.0,
           be->i->name(be), bk_stack_mode_name(t->opts.stack_mode));
    if (bk_stack_sized(t->opts.stack_mode)) printf(" of %d", t->opts.stack_size);
    if (tot->sorted)
        printf(", %s, sorted by %d key bits)\n", t->opts.any_hit ? "any hit" : "closest hit", tot->order_bits);
    else printf(", %s, input order)\n", t->opts.any_hit ? "any hit" : "closest hit");
    if (tot->coherence >= 0)
        printf("  order auto: %.1f%% of sampled neighbouring rays share a coarse bin (%s %.0f%%)\n",
               100.0 * tot->coherence, tot->sorted ? "sorted: below" : "as they come: at least",
               100.0 * BK_RAY_ORDER_COHERENT);
    if (tot->sorted || tot->coherence >= 0)
        printf("  of which sort   %8.4f s  the rays' keys and their sort%s\n", tot->sort_seconds,
               tot->coherence >= 0 ? ", with the sampling" : "");
    if (tot->upload_seconds > 0)
        printf("transfer        %8.3f s  rays to the device, hits back\n", tot->upload_seconds);
    if (t->stats) {
        double dn = n ? (double)n : 1.0;
        printf("stats   nodes %llu (%.1f/ray)  triangles %llu (%.1f/ray)  restarts %llu (%.3f/ray)  spills %llu "
               "(%.3f/ray)\n",
               (unsigned long long)tot->nodes, (double)tot->nodes / dn, (unsigned long long)tot->tris,
               (double)tot->tris / dn, (unsigned long long)tot->restarts, (double)tot->restarts / dn,
               (unsigned long long)tot->spills, (double)tot->spills / dn);
        if (ray_stats && print_ray_stats(be, ray_stats, n, t->opts.stack_mode, err, sizeof err))
            fprintf(stderr, "baker: %s\n", err);
    }
}

static int cmd_trace(int argc, char **argv)
{
    trace_cli c;
    int       pr = trace_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    const char  *scene_path = c.scene, *rays_path = c.rays, *hits_path = c.hits;
    bk_cli_trace t = c.t;
    bk_outputs   io;
    int          oi, prc = plan_files(&io, scene_path, rays_path, "--hits", hits_path, &oi);
    if (prc) return prc;
    char        err[1024], msg[512];
    FILE       *f;
    bk_backend *be = bk_backend_init(t.backend, msg, sizeof msg);
    if (!be) {
        fprintf(stderr, "baker: %s\n", msg);
        bk_outputs_free(&io);
        return 1;
    }
    if (msg[0]) fprintf(stderr, "baker: %s\n", msg);
    if (!be->i->supports(be, &t.opts, err, sizeof err)) {
        fprintf(stderr, "baker: the %s backend cannot trace with these options: %s\n", be->i->name(be), err);
        bk_backend_free(be);
        bk_outputs_free(&io);
        return 1;
    }
    bk_ray  *rays = NULL;
    uint64_t n = 0;
    if (bk_rays_read(rays_path, &rays, &n, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        bk_backend_free(be);
        bk_outputs_free(&io);
        return 1;
    }
    bk_scene s;
    double   tl;
    if (load_scene(scene_path, &s, &tl) || (prc = check_mtls(&io, &s))) {
        bk_scene_free(&s);
        free(rays);
        bk_backend_free(be);
        bk_outputs_free(&io);
        return prc ? prc : 1;
    }
    print_load(&s, tl);
    bk_build_opts bo = bk_build_opts_default();
    bk_accel      a;
    int           rc = 1;
    bk_hit       *hits = malloc((n ? n : 1) * sizeof *hits);
    uint32_t     *ray_stats = t.stats ? malloc((n ? n : 1) * sizeof(uint32_t)) : NULL;
    t.opts.ray_stats = ray_stats;
    bk_trace_totals tot;
    if (!hits) {
        fprintf(stderr, "baker: out of memory for %llu hits\n", (unsigned long long)n);
        goto done_scene;
    }
    if (bk_accel_build(&s, t.accel, &bo, &a, err, sizeof err)) {
        fprintf(stderr, "baker: %s: %s\n", scene_path, err);
        goto done_scene;
    }
    print_build(&a);
    bk_accel_view view = bk_accel_get_view(&a);
    if (be->i->upload(be, &view, err, sizeof err) || be->i->trace(be, rays, hits, n, &t.opts, &tot, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        goto done_accel;
    }
    print_trace(be, &t, &a, hits, n, &tot, ray_stats);
    if (!(f = bk_outputs_open(&io, oi, err, sizeof err)) ||
        bk_hits_write_file(f, hits_path, hits, n, err, sizeof err) || bk_outputs_commit(&io, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        goto done_accel;
    }
    rc = 0;
done_accel:
    bk_accel_free(&a);
done_scene:
    free(hits);
    free(ray_stats);
    free(rays);
    bk_scene_free(&s);
    bk_backend_free(be);
    bk_outputs_free(&io);
    return rc;
}

static int run(int argc, char **argv);

/* Under mpirun (world.h) every process runs main: the bake splits its texels over them; other
 * commands refuse, rather than running N times over. */
int main(int argc, char **argv)
{
    char err[512];
    if (bk_world_init(err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        return 1;
    }
    int rc;
#if !BK_LEAK_CHECKED
    bk_cmd_bake_end_fast(1);
#endif
    bk_cmd_bake_last(1);
    const char *cmd = argc > 1 ? argv[1] : "";
    int         bake =
        argc > 1 && (!strcmp(cmd, "bake") || (strcmp(cmd, "trace") && strcmp(cmd, "rays") && strcmp(cmd, "build") &&
                                              strcmp(cmd, "bench") && strcmp(cmd, "diff") && strcmp(cmd, "view") &&
                                              strcmp(cmd, "help") && (cmd[0] != '-' || !strcmp(cmd, "--"))));
    if (bk_world_size() > 1 && !bake) {
        if (bk_world_rank() == 0)
            fprintf(stderr, "baker: under mpirun (%d processes) only the bake runs: 'baker %s' runs as one process\n",
                    bk_world_size(), cmd);
        rc = 2;
    } else {
        rc = run(argc, argv);
    }
    bk_world_finalize();
    return rc;
}

static void trace_help(FILE *f) { bk_cli_table_help(f, trace_opts); }
static void build_help(FILE *f) { bk_cli_table_help(f, build_opts); }
static void bench_help(FILE *f) { fputs(bk_bench_usage, f); }

/* baker's commands, in the order the messages name them: the word, what runs it and its help
 * (baker help WORD). The default one also runs when the first argument is a scene. */
typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*help)(FILE *f);
    int is_default;
} command;
static const command commands[] = {
    { .name = "bake", .run = bk_cmd_bake, .help = bk_cmd_bake_help, .is_default = 1 },
    { .name = "trace", .run = cmd_trace, .help = trace_help },
    { .name = "rays", .run = cmd_rays, .help = rays_help },
    { .name = "build", .run = cmd_build, .help = build_help },
    { .name = "bench", .run = bk_bench_main, .help = bench_help },
    { .name = "diff", .run = bk_cmd_diff, .help = bk_diff_help },
    { .name = "view", .run = bk_cmd_view, .help = bk_cmd_view_help },
};
#define COMMAND_COUNT (int)(sizeof commands / sizeof commands[0])

static const command *command_find(const char *name)
{
    for (int k = 0; k < COMMAND_COUNT; ++k)
        if (!strcmp(name, commands[k].name)) return &commands[k];
    return NULL;
}

/* The commands' names into buf, between sep and with last before the last; the default one left
 * out unless with_default. */
static const char *command_names(char *buf, size_t size, const char *sep, const char *last, int with_default)
{
    const char *words[COMMAND_COUNT];
    int         n = 0;
    for (int k = 0; k < COMMAND_COUNT; ++k)
        if (with_default || !commands[k].is_default) words[n++] = commands[k].name;
    return bk_join_words(buf, size, words, n, sep, last);
}

static int run(int argc, char **argv)
{
    char names[256];
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (argc >= 3 && !strcmp(argv[1], "help")) {
            const command *c = command_find(argv[2]);
            if (c) {
                c->help(stdout);
                return 0;
            }
            fprintf(stderr, "baker: no help for '%s': commands are %s\n", argv[2],
                    command_names(names, sizeof names, ", ", " and ", 1));
            return 2;
        }
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char    *cmd = argv[1];
    const command *c = command_find(cmd);
    if (c) return c->run(argc - 2, argv + 2);
    if (cmd[0] != '-' && !strchr(cmd, '.') && access(cmd, F_OK) != 0) {
        fprintf(stderr, "baker: '%s' is neither a command (%s) nor a scene file; baker --help lists both\n", cmd,
                command_names(names, sizeof names, ", ", ", ", 0));
        return 2;
    }
    return bk_cmd_bake(argc - 1, argv + 1);
}
