/* cmd_bake.c - `baker SCENE -o lightmap.png [options]`: the whole bake from the command line.
 *
 * Phases, each timed: load (every SCENE, appended into one scene; a scene with voxels also gets
 * its voxel surface, voxmesh.h) -> build (BVH or KD-tree) -> atlas (charts, packing, texels) ->
 * bake (backend, bounded launches) -> write (dilation, PNG/HDR, optional mesh with lightmap UVs).
 * Options and every file named are checked before any work (outputs.h: no output may be an input
 * or another output); outputs are written to temporary files and renamed together at the end, so a
 * failed bake leaves every existing file as it was. The memory the bake needs is estimated before
 * the texels are made, and a bake that cannot fit is refused.
 */
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "registry.h"
#include "cli.h"
#include "cmd_bake.h"
#include "denoise.h"
#include "fill.h"
#include "image.h"
#include "loader.h"
#include "outputs.h"
#include "pool.h"
#include "stats.h"
#include "util.h"
#include "voxmesh.h"
#include "gltf.h"
#include "world.h"

#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char bk_bake_usage[] =
    "usage: baker SCENE [SCENE...] -o LIGHTMAP.png|.hdr|.exr [options]\n"
    "\n"
    "Bakes a lightmap for SCENE (Wavefront .obj with its .mtl, .obj.gz, or MagicaVoxel .vox):\n"
    "direct light, soft shadows and bounced light for every texel of an automatically packed UV\n"
    "atlas. Several SCENEs are baked together into one atlas, as one scene (a file named twice,\n"
    "even by two different paths, is refused: it would bake as two coincident copies at half the\n"
    "texel density). A SCENE whose name starts with '-' is written ./-NAME, or after --, which\n"
    "ends the options. Each texel\n"
    "holds the incoming diffuse light divided by pi (the outgoing radiance of a white Lambertian\n"
    "surface: multiply by the albedo in the game), linear in .hdr and .exr, sRGB after --exposure\n"
    "in .png.\n"
    "\n"
    "output:\n"
    "  -o FILE                  .png (8-bit sRGB), .hdr (Radiance RGBE, linear, rounded) or .exr\n"
    "                           (OpenEXR RGB half-float, linear; builds with libtinyexr-dev only)\n"
    "  --exposure E|auto        PNG scale before sRGB encoding (default 1); auto maps the 99th\n"
    "                           percentile of the texels' luminance to white\n"
    "  --mesh-out FILE.obj      also write the mesh with its lightmap UVs (as vt); with voxels,\n"
    "                           their merged quads too and FILE.mtl (materials vox_M, M the\n"
    "                           scene material: the palette index for a lone .vox). mtllib\n"
    "                           paths are relative: MTL files of another folder are copied into\n"
    "                           FILE.mtl, texture paths rewritten; an existing FILE.mtl that\n"
    "                           baker did not write is never replaced (the run is refused)\n"
    "  --mesh-out FILE.gltf|.glb  or as glTF 2.0 (one file; .gltf embeds its buffer): the file's\n"
    "                           own UVs as TEXCOORD_0, the lightmap UVs as TEXCOORD_1, materials\n"
    "                           (Kd, Ke, map_Kd) and the lightmap PNG as each material's\n"
    "                           occlusionTexture (texCoord 1), its emissiveTexture (x Kd, where it\n"
    "                           does not emit: the lit look) and extras.baker_lightmap; voxels too\n"
    "  --stats FILE.json        write timings, rays, atlas and memory figures as JSON (- for\n"
    "                           standard output; the summary then goes to stderr)\n"
    "  --quiet                  no progress bar, no summary\n"
    "atlas:\n"
    "  --size N                 atlas side in texels (default 1024)\n"
    "  --texels-per-unit T      texel density instead of --size; the atlas grows to fit\n"
    "  --object-scale PATTERN=F texel density of the OBJ objects (o / g names, a shell glob:\n"
    "                           'statue*=2') times F along each axis (F^2 texels per area),\n"
    "                           like Unity's scale in lightmap; repeatable, the last match wins\n"
    "  --padding P              the texels bilinear lookups in two charts read stay P - 2 apart\n"
    "                           (default 2: never one texel for both; raise it for mipmaps)\n"
    "  --uv auto|file           make charts (default), or use the OBJ's own vt (must be in [0,1]\n"
    "                           and must not overlap; not for voxels)\n"
    "  --texels-per-voxel N     voxels: N x N texels per voxel face (default 2, at most 64); each\n"
    "                           merged quad of visible faces is one chart. World units are voxels,\n"
    "                           so an OBJ baked with a .vox is charted at --texels-per-unit (with\n"
    "                           --pages auto: N when not given, the voxels' density), else at the\n"
    "                           largest scale that fits the page beside the voxel charts\n"
    "  --pages 1|auto           one atlas page (default; too many charts: an error saying how many\n"
    "                           pages are needed), or as many pages of --size as needed, written\n"
    "                           as NAME-0.png, NAME-1.png ... (a voxel instance stays on one page;\n"
    "                           needs fixed chart sizes: voxels, or --texels-per-unit)\n"
    "lighting:\n"
    "  --mode light|ao          full lighting (default) or ambient occlusion\n"
    "  --spp N                  samples per texel (default 64)\n"
    "  --bounces N              bounces of indirect light using MTL Kd as albedo (default 2)\n"
    "  --sun X,Y,Z,R,G,B,DEG    a sun: direction towards it, irradiance, angular radius in degrees\n"
    "                           (soft shadows), e.g. --sun 0.3,1,0.2,3,2.9,2.7,0.5\n"
    "  --point X,Y,Z,R,G,B      a point light of intensity R,G,B (repeatable)\n"
    "  --sky R,G,B              constant sky radiance (default 0; 1,1,1 when the scene has no\n"
    "                           other light)\n"
    "  --ao-distance D          AO: occluders beyond D do not count (default: 10%% of the scene size)\n"
    "  --seed S                 random seed (default 1): same seed, same map\n"
    "  --denoise on|off         filter the noise out of the map (default: on for light, off for\n"
    "                           ao), in the atlas, each chart on its own: texels mix only with\n"
    "                           texels of their chart that face the same way, lie in the same\n"
    "                           plane and differ by no more than their baked variance explains;\n"
    "                           each chart keeps its mean (docs/baking.md: Denoising)\n"
    "  --denoise-passes N       filter passes, each twice as wide as the last (default 5: about\n"
    "                           120 texels across; 0 = off)\n"
    "  --denoise-sigma L,N,X    luminance (in standard deviations), normal (cosine exponent) and\n"
    "                           plane (texels) tolerances (default 2,8,1)\n"
    "  Emissive triangles (MTL Ke) are area lights.\n"
    "engine:\n"
    "%s"
    "  --kernel wavefront|megakernel\n"
    "                           GPU bake: paths wait in buffers and each wave traces its\n"
    "                           occlusion and closest-hit rays apart (default), or one kernel\n"
    "                           walks whole paths per texel; same texels either way (the CPU\n"
    "                           bakes one texel at a time for both)\n"
    "  --bin-rays on|off        trace texels in the order of their rays' key (normal octant,\n"
    "                           then a Morton code of the position) instead of atlas order, and\n"
    "                           (GPU wavefront) each wave's rays in bins of direction octant and\n"
    "                           origin cell (default off: slower on an H100: docs/bench/bake_gpu.md)\n"
    "  --max-launch-ms MS       longest single GPU launch (default 50), so a desktop GPU's\n"
    "                           watchdog never resets the device (on each GPU)\n"
    "  --devices all|LIST       the GPUs to bake on (default all): a comma list of CUDA device\n"
    "                           numbers (0,1); each takes the next block of texels when done\n"
    "                           with one, and the lightmap is the same bytes as on one GPU\n"
    "  --max-memory GB          refuse a bake whose estimated host memory exceeds GB (default:\n"
    "                           the memory available when the bake starts); the estimate is\n"
    "                           made once the atlas is packed, before its texels are made\n"
    "\n"
    "examples:\n"
    "  baker scenes/cornell.obj -o cornell.png\n"
    "  baker sponza.obj -o sponza.hdr --size 2048 --sun 0.2,1,0.3,4,3.8,3.5,0.3 --sky 0.3,0.4,0.6\n"
    "  baker sponza.obj -o sponza_ao.png --mode ao --ao-distance 2 --spp 128\n"
    "  baker chr_knight.vox -o knight.png --texels-per-voxel 4 --mesh-out knight.obj\n"
    "  baker level.obj props.vox -o lm.png --texels-per-unit 2 --pages auto\n";

/* Every error of the bake goes through here: one line on stderr, kept for the job's agreement
 * (world.h) when several processes bake together. In such a job only rank 0 prints: another
 * rank's error reaches it through bk_world_agree and is printed once, naming the rank. */
static char bake_last_error[1024];
static int  bake_error_quiet;           /* a rank other than 0 of a job */
static int  bake_end_fast;              /* bk_cmd_bake_end_fast */

void bk_cmd_bake_end_fast(int on) { bake_end_fast = on; }

static int  bake_last;                  /* bk_cmd_bake_last */

void bk_cmd_bake_last(int on) { bake_last = on; }

static void bake_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bake_error(const char *fmt, ...)
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

/* Parses n comma-separated floats of option opt into out. */
static int parse_floats(const char *opt, const char *val, int n, float *out)
{
    const char *p = val;
    for (int i = 0; i < n; ++i) {
        char *end;
        errno = 0;
        double d = strtod(p, &end);
        if (end == p || errno || !isfinite(d) || (i + 1 < n ? *end != ',' : *end != 0)) {
            bake_error("%s: expected %d comma-separated numbers, got '%s'\n", opt, n, val);
            return -1;
        }
        out[i] = (float)d;
        p = end + 1;
    }
    return 0;
}

typedef struct bake_cli {
    const char  **scenes;        /* nscenes SCENE arguments, baked together */
    int           nscenes;
    const char   *scene;         /* names the scene(s) in messages: the path, or "A + B ..." */
    char          scene_label[1024];
    const char   *out, *mesh_out, *stats;
    int           texels_per_voxel, pages_auto;
    int           writer;        /* this process writes the outputs: a lone one, or rank 0 of a job */
    bk_cli_trace  t;
    bk_atlas_opts atlas;
    bk_bake_params p;
    float         exposure, max_launch_ms, max_memory_gb;
    int           quiet, sky_given, ao_given, exposure_auto, bin_rays;
    int           denoise;       /* -1: by --mode (on for light), 0 off, 1 on */
    bk_denoise_opts dn;
    float        *points;
    uint32_t      point_count;
    const char  **oscale_pat;    /* --object-scale PATTERN=F, in the order given */
    float        *oscale_f;
    int           noscale;
    int          *devices;       /* --devices LIST, ndevices of them; NULL: all */
    int           ndevices;
} bake_cli;

/* A job of several processes (world.h: mpirun), as the bake sees it. Its ranks make the same
 * collective calls in the same order: two agreements (job_agree: after the bake, before the
 * gather; at the end, once rank 0 has written), unless one fails, when every rank stops. A rank
 * that fails anywhere else makes the agreement it was heading for as a failure (bk_cmd_bake). */
typedef struct bake_job {
    int      rank, size;     /* size 1: a lone process */
    int      stopped;        /* no agreement is left to make: one failed, or the last one passed */
    uint32_t granule;        /* texels per granule of the split (bake.h) */
    uint32_t granules;       /* granules of the texels in all */
    uint32_t *taken;         /* the granules this rank took (job_next_granule), in that order */
    uint32_t ntaken;
    uint64_t gather_bytes;   /* what rank 0 received */
    double   wait_seconds;   /* in the agreement after the bake: for the slowest rank */
    double   gather_seconds; /* the check, the counters' sums and the gather */
    int      own_threads;    /* the threads are the job's choice (no --threads) */
} bake_job;

/* The phases of a bake, in order; every second of the command from its start to the stats
 * belongs to one of them (`baker bench bake` reports the wall time no phase accounts for):
 * startup = options and files checked, plus any wait for the backend's start (a CUDA context,
 * made on a thread while loading, building and the atlas run: be_start); upload = any wait for
 * the tree's upload that the atlas did not hide; free = the big buffers and the backend released
 * before the stats are written, or the wait for the backend's release on its thread that the
 * write did not hide (be_release). */
#define BAKE_PHASES(X) X(PH_STARTUP, startup) X(PH_LOAD, load) X(PH_BUILD, build) X(PH_UPLOAD, upload) \
                       X(PH_ATLAS, atlas) X(PH_BAKE, bake) X(PH_DENOISE, denoise) X(PH_WRITE, write) X(PH_FREE, free)
/* The write phase's steps, timed apart for the stats ("write"): the exposure's statistics, the
 * fill of texels inside geometry, the dilation of the padding, the images' encoding and the mesh. */
#define WRITE_STEPS(X) X(WR_EXPOSURE, exposure) X(WR_FILL, fill) X(WR_DILATE, dilate) X(WR_IMAGES, images) X(WR_MESH, mesh)
/* each list as an enum and as the names the stats print */
#define STEP_ENUM(E, n) E,
#define STEP_NAME(E, n) #n,
enum bake_phase { BAKE_PHASES(STEP_ENUM) PH_COUNT };
static const char *const phase_names[PH_COUNT] = { BAKE_PHASES(STEP_NAME) };
enum write_step { WRITE_STEPS(STEP_ENUM) WR_COUNT };
static const char *const write_step_names[WR_COUNT] = { WRITE_STEPS(STEP_NAME) };
#undef STEP_ENUM
#undef STEP_NAME

/* The GPU let go on a thread of its own once the bake no longer needs it (bk_backend_free_last):
 * its teardown runs beside the write instead of in the process's exit. */
typedef struct be_release { bk_prim *gpu; bk_backend *be; pthread_t th; int running; } be_release;

static void *be_release_run(void *arg)
{
    be_release *r = arg;
    bk_prim_free(r->gpu);
    bk_backend_free_last(r->be);
    return NULL;
}

/* Waits for it, if it runs. */
static void be_release_finish(be_release *r)
{
    if (r->running) pthread_join(r->th, NULL);
    r->running = 0;
}

/* Seconds since *t, which moves on to now. */
static double lap(double *t)
{
    double now = bk_time_now(), d = now - *t;
    *t = now;
    return d;
}

/* The image from the texels' colours: each texel writes its own pixel. */
typedef struct image_job { const bk_texel_ref *refs; const bk_f4 *col; float *rgb; } image_job;

static void image_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const image_job *j = ctx;
    for (size_t i = begin; i < end; ++i) {
        size_t px = j->refs[i].pixel;
        j->rgb[3 * px] = j->col[i].x; j->rgb[3 * px + 1] = j->col[i].y; j->rgb[3 * px + 2] = j->col[i].z;
    }
}

/* memory figures (bytes): estimates made before the texels, and the peaks */
enum bake_mem { MEM_EST_HOST, MEM_EST_DEVICE, MEM_PEAK_HOST, MEM_PEAK_DEVICE, MEM_COUNT };

/* --devices LIST: comma-separated device numbers 0..BK_BAKE_MAX_DEVICES-1 (whether they exist is
 * the backend's to say). */
static int parse_devices(const char *v, int **out, int *n)
{
    int cap = 1;
    for (const char *q = v; *q; ++q) cap += *q == ',';
    int *d = malloc(sizeof(int) * (size_t)cap), k = 0;
    if (!d) { bake_error("out of memory\n"); return -1; }
    for (const char *q = v;;) {
        char *end;
        long x = strtol(q, &end, 10);
        if (end == q || x < 0 || x >= BK_BAKE_MAX_DEVICES || (*end && *end != ',')) {
            bake_error("--devices: expected all or a comma list of device numbers (0,1,...), got '%s'\n", v);
            free(d);
            return -1;
        }
        d[k++] = (int)x;
        if (!*end) break;
        q = end + 1;
    }
    *out = d; *n = k;
    return 0;
}

static int parse(bake_cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->scenes = malloc(sizeof(char *) * (size_t)(argc + 1));
    if (!c->scenes) { bake_error("out of memory\n"); return -1; }
    c->texels_per_voxel = 2;
    bk_cli_trace_default(&c->t);
    c->t.opts.wavefront = 1;   /* measured faster on the H100: see --kernel */
    bk_atlas_opts_default(&c->atlas);
    c->p.mode = BK_BAKE_LIGHT; c->p.spp = 64; c->p.bounces = 2; c->p.seed = 1; c->p.sun_cos = 1.0f;
    c->exposure = 1.0f; c->max_launch_ms = 50.0f;
    c->denoise = -1;
    bk_denoise_opts_default(&c->dn);
    int operands = 0;           /* after --: every argument is a SCENE */
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v;
        uint64_t u;
        if (operands || !strcmp(a, "--")) {
            if (operands++) c->scenes[c->nscenes++] = a;
            continue;
        }
        int r = bk_cli_trace_option(&c->t, argc, argv, &i);
        if (r < 0) return -1;
        if (r > 0) {
            if (!strcmp(a, "--any-hit")) { bake_error("--any-hit is an option of baker trace\n"); return -1; }
            continue;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) { if (bk_cli_value(argc, argv, &i, &c->out)) return -1; }
        else if (!strcmp(a, "--mesh-out")) { if (bk_cli_value(argc, argv, &i, &c->mesh_out)) return -1; }
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) c->quiet = 1;
        else if (!strcmp(a, "--size")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 4, BK_ATLAS_MAX_SIZE, &u)) return -1;
            c->atlas.size = (int)u;
        } else if (!strcmp(a, "--texels-per-unit")) {
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 1, &c->atlas.texels_per_unit)) return -1;
            if (!(c->atlas.texels_per_unit > 0)) { bake_error("--texels-per-unit must be positive\n"); return -1; }
        } else if (!strcmp(a, "--object-scale")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            const char *eq = strrchr(v, '=');
            float f = 0;
            if (!eq || eq == v || parse_floats(a, eq + 1, 1, &f) || !(f > 0 && f <= 1000)) {
                bake_error("--object-scale %s: expected PATTERN=F with F in (0, 1000], e.g. 'statue*=2'\n", v);
                return -1;
            }
            const char **np = realloc(c->oscale_pat, sizeof(char *) * (size_t)(c->noscale + 1));
            if (np) c->oscale_pat = np;
            float *nf = np ? realloc(c->oscale_f, sizeof(float) * (size_t)(c->noscale + 1)) : NULL;
            char *pat = nf ? malloc((size_t)(eq - v) + 1) : NULL;
            if (nf) c->oscale_f = nf;
            if (!pat) { bake_error("out of memory\n"); return -1; }
            memcpy(pat, v, (size_t)(eq - v));
            pat[eq - v] = 0;
            c->oscale_pat[c->noscale] = pat;
            c->oscale_f[c->noscale++] = f;
        } else if (!strcmp(a, "--texels-per-voxel")) {
            /* a model side of 256 voxels at 64 texels each is the largest atlas side */
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, BK_ATLAS_MAX_SIZE / BK_VOX_MAX_SIZE, &u)) return -1;
            c->texels_per_voxel = (int)u;
        } else if (!strcmp(a, "--pages")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "auto")) c->pages_auto = 1;
            else if (!strcmp(v, "1")) c->pages_auto = 0;
            else { bake_error("--pages: expected 1 or auto, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--padding")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 2, 64, &u)) return -1;
            c->atlas.padding = (int)u;
        } else if (!strcmp(a, "--uv")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "auto")) c->atlas.uv_from_file = 0;
            else if (!strcmp(v, "file")) c->atlas.uv_from_file = 1;
            else { bake_error("--uv: expected auto or file, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--mode")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "light")) c->p.mode = BK_BAKE_LIGHT;
            else if (!strcmp(v, "ao")) c->p.mode = BK_BAKE_AO;
            else { bake_error("--mode: expected light or ao, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--spp")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 1u << 20, &u)) return -1;
            c->p.spp = (uint32_t)u;
        } else if (!strcmp(a, "--bounces")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 0, 64, &u)) return -1;
            c->p.bounces = (uint32_t)u;
        } else if (!strcmp(a, "--seed")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 0, 0xFFFFFFFFu, &u)) return -1;
            c->p.seed = (uint32_t)u;
        } else if (!strcmp(a, "--sun")) {
            float f[7];
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 7, f)) return -1;
            float l = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
            if (!(l > 0) || f[3] < 0 || f[4] < 0 || f[5] < 0 || f[6] < 0 || f[6] >= 90) {
                bake_error("--sun: need a non-zero direction, colours >= 0 and an angle in [0, 90) degrees\n");
                return -1;
            }
            for (int k = 0; k < 3; ++k) { c->p.sun_dir[k] = f[k] / l; c->p.sun_color[k] = f[3 + k]; }
            c->p.sun_cos = cosf(f[6] * 3.14159265f / 180.0f);
        } else if (!strcmp(a, "--point")) {
            float f[6];
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 6, f)) return -1;
            float *np = realloc(c->points, sizeof(float) * 6 * (c->point_count + 1));
            if (!np) { bake_error("out of memory\n"); return -1; }
            c->points = np;
            memcpy(c->points + 6 * c->point_count++, f, sizeof f);
        } else if (!strcmp(a, "--sky")) {
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 3, c->p.sky)) return -1;
            c->sky_given = 1;
        } else if (!strcmp(a, "--ao-distance")) {
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 1, &c->p.ao_distance)) return -1;
            if (!(c->p.ao_distance > 0)) { bake_error("--ao-distance must be positive\n"); return -1; }
            c->ao_given = 1;
        } else if (!strcmp(a, "--exposure")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "auto")) { c->exposure_auto = 1; continue; }
            if (parse_floats(a, v, 1, &c->exposure)) return -1;
            if (!(c->exposure >= 0)) { bake_error("--exposure must be >= 0\n"); return -1; }
        } else if (!strcmp(a, "--kernel")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "megakernel")) c->t.opts.wavefront = 0;
            else if (!strcmp(v, "wavefront")) c->t.opts.wavefront = 1;
            else { bake_error("--kernel: expected megakernel or wavefront, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--bin-rays")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "on")) { c->bin_rays = 1; c->t.opts.ray_order = BK_RAY_ORDER_SORTED; }
            else if (!strcmp(v, "off")) { c->bin_rays = 0; c->t.opts.ray_order = BK_RAY_ORDER_AUTO; }
            else { bake_error("--bin-rays: expected on or off, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--denoise")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            if (!strcmp(v, "on")) c->denoise = 1;
            else if (!strcmp(v, "off")) c->denoise = 0;
            else { bake_error("--denoise: expected on or off, got '%s'\n", v); return -1; }
        } else if (!strcmp(a, "--denoise-passes")) {
            float f;
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 1, &f)) return -1;
            if (!(f >= 0 && f <= 10 && f == (float)(int)f)) { bake_error("--denoise-passes must be an integer in 0..10\n"); return -1; }
            c->dn.passes = (int)f;
        } else if (!strcmp(a, "--denoise-sigma")) {
            float f[3];
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 3, f)) return -1;
            if (!(f[0] > 0 && f[1] >= 0 && f[2] > 0)) { bake_error("--denoise-sigma: L and X must be positive, N >= 0\n"); return -1; }
            c->dn.sigma_l = f[0]; c->dn.sigma_n = f[1]; c->dn.sigma_x = f[2];
        } else if (!strcmp(a, "--max-memory")) {
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 1, &c->max_memory_gb)) return -1;
            if (!(c->max_memory_gb > 0)) { bake_error("--max-memory must be a positive number of GB\n"); return -1; }
        } else if (!strcmp(a, "--devices")) {
            if (bk_cli_value(argc, argv, &i, &v)) return -1;
            free(c->devices);
            c->devices = NULL; c->ndevices = 0;
            if (strcmp(v, "all") && parse_devices(v, &c->devices, &c->ndevices)) return -1;
        } else if (!strcmp(a, "--max-launch-ms")) {
            if (bk_cli_value(argc, argv, &i, &v) || parse_floats(a, v, 1, &c->max_launch_ms)) return -1;
            if (!(c->max_launch_ms > 0)) { bake_error("--max-launch-ms must be positive\n"); return -1; }
        } else if (a[0] == '-') {
            char m[1024];
            bake_error("%s\n", bk_cli_unknown(a, "baker --help", m, sizeof m));
            return -1;
        } else {
            c->scenes[c->nscenes++] = a;
        }
    }
    if (!c->nscenes) { bake_error("no SCENE given\n"); return -1; }
    /* messages name the scene, or the scenes joined by " + " */
    size_t len = 0;
    c->scene_label[0] = 0;
    for (int k = 0; k < c->nscenes && len + 8 < sizeof c->scene_label; ++k) {
        int n = snprintf(c->scene_label + len, sizeof c->scene_label - len, "%s%s", k ? " + " : "", c->scenes[k]);
        if (n < 0 || (size_t)n >= sizeof c->scene_label - len) { snprintf(c->scene_label + sizeof c->scene_label - 5, 5, "..."); break; }
        len += (size_t)n;
    }
    c->scene = c->nscenes == 1 ? c->scenes[0] : c->scene_label;
    if (!c->out) { bake_error("no output given: add -o lightmap.png (or .hdr)\n"); return -1; }
    char terr[1024];
    if (bk_image_type_check("-o", c->out, terr, sizeof terr)) {
        bake_error("%s\n", terr);
        return -1;
    }
    if (c->mesh_out && !bk_path_has_ext(c->mesh_out, ".obj") && !bk_gltf_path(c->mesh_out)) {
        bake_error("--mesh-out %s: the mesh is written as a .obj, .gltf or .glb file\n", c->mesh_out);
        return -1;
    }
    if (c->pages_auto && c->atlas.uv_from_file) {
        bake_error("--pages auto: --uv file bakes the file's own UVs, which are one page\n");
        return -1;
    }
    c->atlas.scene_path = c->scene;
    c->atlas.pages_auto = c->pages_auto;
    return 0;
}

/* Reorders texels by the key of their rays: the octant of the normal (the hemisphere their
 * directions fill), then a 30-bit Morton code of the position in the scene box (Aila & Laine's
 * octant-then-origin order). Texels keep their pixel, so the map is the same either way. */
static int bin_texels(bk_prim *gpu, bk_texel *tx, uint32_t n, const bk_accel *a, double *sort_seconds, char *err, size_t err_size)
{
    uint64_t *keys = malloc(sizeof(uint64_t) * (n ? n : 1));
    uint32_t *vals = malloc(sizeof(uint32_t) * (n ? n : 1));
    bk_texel *tmp = malloc(sizeof(bk_texel) * (n ? n : 1));
    if (!keys || !vals || !tmp) { free(keys); free(vals); free(tmp); return bk_fail(err, err_size, "out of memory"); }
    float ext[3] = { a->hi.x - a->lo.x, a->hi.y - a->lo.y, a->hi.z - a->lo.z };
    for (uint32_t i = 0; i < n; ++i) {
        float p[3] = { tx[i].px - a->lo.x, tx[i].py - a->lo.y, tx[i].pz - a->lo.z };
        uint64_t m = 0;
        for (int k = 0; k < 3; ++k) {
            float f = ext[k] > 0 ? p[k] / ext[k] : 0.0f;
            uint32_t q = f <= 0 ? 0 : f >= 1 ? 1023 : (uint32_t)(f * 1023.0f);
            m |= (uint64_t)bk_morton_spread10(q) << (2 - k);
        }
        uint64_t oct = (uint64_t)((tx[i].nx < 0) | (tx[i].ny < 0) << 1 | (tx[i].nz < 0) << 2);
        keys[i] = oct << 30 | m;
        vals[i] = i;
    }
    int rc = bk_stats_sort_pairs_u64(gpu, keys, vals, n, 33, sort_seconds, err, err_size);
    if (!rc) {
        for (uint32_t i = 0; i < n; ++i) tmp[i] = tx[vals[i]];
        memcpy(tx, tmp, sizeof(bk_texel) * n);
    }
    free(keys); free(vals); free(tmp);
    return rc;
}

/* --exposure auto: a 512-bin histogram of log2 luminance (1/8 stop per bin, 2^-20 to 2^44) over
 * the baked texels; the 99th percentile maps to white. */
/* The baked texels' keys and luminances, in texel order, on the pool: each chunk counts its
 * texels, then writes them from its place in the running total (the same arrays as one loop). */
#define EXPOSURE_GRAIN ((size_t)1 << 16)
typedef struct exposure_job {
    const float   *rgb;
    const uint8_t *cov;
    uint32_t      *keys;
    float         *lum;
    size_t        *base;     /* per chunk: its texels, then where they start */
} exposure_job;

static void exposure_count(void *ctx, size_t begin, size_t end, int worker)
{
    exposure_job *j = ctx;
    size_t n = 0;
    for (size_t i = begin; i < end; ++i) n += !j->cov || j->cov[i] == 1;
    j->base[begin / EXPOSURE_GRAIN] = n;
}

static void exposure_keys(void *ctx, size_t begin, size_t end, int worker)
{
    exposure_job *j = ctx;
    size_t m = j->base[begin / EXPOSURE_GRAIN];
    for (size_t i = begin; i < end; ++i) {
        if (j->cov && j->cov[i] != 1) continue;
        const float *c = j->rgb + 3 * i;
        float l = 0.2126f * c[0] + 0.7152f * c[1] + 0.0722f * c[2];
        int b = l > 0 ? (int)floorf((log2f(l) + 20.0f) * 8.0f) + 1 : 0;
        j->keys[m] = b < 0 ? 0 : b > 511 ? 511 : (uint32_t)b;
        j->lum[m++] = l;
    }
}

static float auto_exposure(bk_prim *gpu, const float *rgb, const uint8_t *cov, size_t npx, double *mean_lum,
                           char *err, size_t err_size)
{
    /* in slices of 4M pixels (at most 32 MB of keys and luminances, not 8 B per pixel of the
     * map), each on the pool in texel order; the histogram's counts add up exactly, the mean's
     * sums in double */
    enum { SLICE = 1 << 22 };                        /* a multiple of EXPOSURE_GRAIN */
    const size_t cap = npx < SLICE ? (npx ? npx : 1) : SLICE, max_chunks = (cap - 1) / EXPOSURE_GRAIN + 1;
    uint32_t *keys = malloc(sizeof(uint32_t) * cap), counts[512], part[512];
    float *lum = malloc(sizeof(float) * cap);
    size_t *base = malloc(sizeof(size_t) * max_chunks);
    if (!keys || !lum || !base) { free(keys); free(lum); free(base); bk_fail(err, err_size, "out of memory"); return -1.0f; }
    memset(counts, 0, sizeof counts);
    uint64_t total = 0;
    double sum = 0;
    for (size_t s0 = 0; s0 < npx; s0 += SLICE) {
        const size_t n = npx - s0 < SLICE ? npx - s0 : SLICE, chunks = (n - 1) / EXPOSURE_GRAIN + 1;
        exposure_job j;
        j.rgb = rgb + 3 * s0; j.cov = cov ? cov + s0 : NULL; j.keys = keys; j.lum = lum; j.base = base;
        bk_parallel_for(n, EXPOSURE_GRAIN, exposure_count, &j);
        size_t m = 0;
        for (size_t k = 0; k < chunks; ++k) { size_t c = base[k]; base[k] = m; m += c; }
        bk_parallel_for(n, EXPOSURE_GRAIN, exposure_keys, &j);
        double sl = 0;
        if (bk_stats_histogram(gpu, keys, m, 512, part, err, err_size) || bk_stats_sum_f32(gpu, lum, m, &sl, err, err_size)) {
            free(keys); free(lum); free(base);
            return -1.0f;
        }
        for (int k = 0; k < 512; ++k) counts[k] += part[k];
        sum += sl;
        total += m;
    }
    free(keys); free(lum); free(base);
    *mean_lum = total ? sum / (double)total : 0.0;
    uint32_t b = bk_stats_percentile_bin(counts, 512, 0.99);
    if (b == 0) return 1.0f;                       /* a black map: nothing to expose */
    float white = exp2f((float)b / 8.0f - 20.0f);  /* the bin's upper edge */
    return 1.0f / white;
}

/* A JSON string: quotes, backslashes and control characters escaped (paths may hold any byte). */
static void json_str(FILE *f, const char *v)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)v; *p; ++p) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7F) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* "pages": which page each object lies on: per material of the scene's own triangles (the pages
 * its triangles use) and per voxel instance (one page each). */
static void write_pages_json(FILE *f, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *at, char **page_names, const char *out)
{
    fputs("  \"pages\": { \"count\": ", f);
    fprintf(f, "%d, \"files\": [", at->page_count);
    for (int p = 0; page_names && p < at->page_count; ++p) { if (p) fputs(", ", f); json_str(f, page_names[p]); }
    if (!page_names) json_str(f, out);
    fputs("],\n    \"materials\": [", f);
    uint32_t T0 = vm ? vm->first_quad_tri : at->tri_count, nm = s->material_count + 1;
    /* a bit set of pages per material (the default material last) */
    size_t words = ((size_t)at->page_count + 63) / 64;
    uint64_t *bits = calloc((size_t)nm * words, sizeof(uint64_t));
    if (bits) {
        for (uint32_t t = 0; t < T0; ++t) {
            uint32_t m = s->tri_material && s->tri_material[t] < s->material_count ? s->tri_material[t] : nm - 1;
            uint32_t p = at->tri_page ? at->tri_page[t] : 0;
            bits[(size_t)m * words + p / 64] |= 1ull << (p % 64);
        }
        int first = 1;
        for (uint32_t m = 0; m < nm; ++m) {
            int any = 0;
            for (size_t w = 0; w < words; ++w) any |= bits[(size_t)m * words + w] != 0;
            if (!any) continue;
            fputs(first ? "\n      { \"material\": " : ",\n      { \"material\": ", f);
            first = 0;
            json_str(f, m + 1 < nm ? s->materials[m].name : "(default)");
            fputs(", \"pages\": [", f);
            int fp = 1;
            for (int p = 0; p < at->page_count; ++p)
                if (bits[(size_t)m * words + p / 64] >> (p % 64) & 1) { fprintf(f, fp ? "%d" : ", %d", p); fp = 0; }
            fputs("] }", f);
        }
        free(bits);
    }
    fputs("],\n    \"voxel_instances\": [", f);
    /* quads are in instance order: one entry per instance that has quads */
    for (uint32_t q = 0, n = 0; vm && q < vm->quad_count; ++q) {
        if (q && vm->quads[q].instance == vm->quads[q - 1].instance) continue;
        uint32_t t = vm->first_quad_tri + 2 * q;
        fprintf(f, "%s{ \"instance\": %u, \"page\": %u }", n == 0 ? "\n      " : n % 4 ? ", " : ",\n      ", vm->quads[q].instance,
                at->tri_page ? at->tri_page[t] : 0);
        n++;
    }
    fputs("] },\n", f);
}

static void write_stats_json(FILE *f, const bake_cli *c, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *at,
                             char **page_names, uint32_t texels, const bk_bake_result *r, const double ph[PH_COUNT], const char *backend,
                             double mean_lum, double sort_seconds, const uint64_t mem[MEM_COUNT], const bk_denoise_result *dn,
                             const bake_job *job, const double wr[WR_COUNT], double bake_prep)
{
    double mrays = r->totals.seconds > 0 ? (double)r->totals.rays / r->totals.seconds / 1e6 : 0.0;
    fputs("{\n  \"scene\": ", f);
    json_str(f, c->scene);
    fputs(",\n  \"scenes\": [", f);
    for (int k = 0; k < c->nscenes; ++k) { if (k) fputs(", ", f); json_str(f, c->scenes[k]); }
    fputs("],\n  \"output\": ", f);
    json_str(f, c->out);
    fprintf(f, ",\n  \"backend\": \"%s\",\n", backend);
    fprintf(f, "  \"triangles\": %u,\n  \"atlas\": { \"width\": %d, \"height\": %d, \"pages\": %d, \"charts\": %u, \"texels\": %u, "
               "\"utilisation\": %.4f, \"texels_per_unit\": %.6g, \"smooth_charts\": %u, \"stretch_l2\": %.5f, "
               "\"stretch_min\": %.4f, \"stretch_max\": %.4f, \"density_max\": %.4f, \"seconds\": %.6f,\n    \"stages\": { ",
            s->tri_count, at->width, at->height, at->page_count, at->chart_count, texels, at->utilisation, at->texels_per_unit,
            at->smooth_charts, (double)at->stretch_l2, (double)at->stretch_min, (double)at->stretch_max, (double)at->density_max,
            at->seconds);
    /* where the atlas phase went: bk_atlas_build's stages, then the texels (the rest of the phase) */
    for (int k = 0; k < BK_ATLAS_STAGES; ++k) fprintf(f, "\"%s\": %.6f, ", bk_atlas_stage_names[k], at->stage_seconds[k]);
    fprintf(f, "\"texels\": %.6f } },\n", fmax(0.0, ph[PH_ATLAS] - at->seconds));
    if (vm && vm->quad_count)
        fprintf(f, "  \"voxels\": { \"instances\": %u, \"instanced_voxels\": %llu, \"visible_faces\": %llu, \"hidden_faces\": %llu, "
                   "\"quads\": %u, \"texels_per_voxel\": %d, \"surface_seconds\": %.6f },\n",
                s->vox_instance_count, (unsigned long long)vm->voxel_count, (unsigned long long)vm->face_count,
                (unsigned long long)vm->hidden_faces, vm->quad_count, c->texels_per_voxel, vm->seconds);
    write_pages_json(f, vm ? &vm->scene : s, vm, at, page_names, c->out);
    fputs("  \"seconds\": { ", f);
    double total = 0.0;
    for (int k = 0; k < PH_COUNT; ++k) { fprintf(f, "\"%s\": %.6f, ", phase_names[k], ph[k]); total += ph[k]; }
    fprintf(f, "\"total\": %.6f },\n", total);
    fputs("  \"write\": { ", f);
    for (int k = 0; k < WR_COUNT; ++k) fprintf(f, "%s\"%s_seconds\": %.6f", k ? ", " : "", write_step_names[k], wr[k]);
    fputs(" },\n", f);
    fprintf(f, "  \"bake\": { \"spp\": %u, \"bounces\": %u, \"mode\": \"%s\", \"rays\": %llu, \"trace_seconds\": %.6f, "
               "\"mrays_per_s\": %.2f, \"launches\": %u, \"longest_launch_ms\": %.3f, \"inside_geometry\": %u,\n"
               "    \"prep_seconds\": %.6f, \"texels_seconds\": %.6f, \"fetch_seconds\": %.6f,\n"
               "    \"devices\": [",
            c->p.spp, c->p.bounces, c->p.mode == BK_BAKE_AO ? "ao" : "light", (unsigned long long)r->totals.rays,
            r->totals.seconds, mrays, r->launches, r->longest_launch_ms, r->invalid, bake_prep, r->texels_seconds, r->fetch_seconds);
    /* each device's share (one entry per device; a bake on one device has one) */
    for (int k = 0; k < r->devices && k < BK_BAKE_MAX_DEVICES; ++k)
        fprintf(f, "%s{ \"device\": %d, \"texels\": %llu, \"blocks\": %u, \"rays\": %llu, \"busy_seconds\": %.6f }", k ? ", " : "",
                k, (unsigned long long)r->dev[k].texels, r->dev[k].blocks, (unsigned long long)r->dev[k].rays, r->dev[k].busy_seconds);
    fputs("] },\n", f);
    fprintf(f, "  \"job\": { \"ranks\": %d, \"granule\": %u, \"wait_seconds\": %.6f, \"gather_bytes\": %llu, "
               "\"gather_seconds\": %.6f },\n",
            job->size, job->size > 1 ? job->granule : texels, job->wait_seconds, (unsigned long long)job->gather_bytes,
            job->gather_seconds);
    fprintf(f, "  \"denoise\": { \"on\": %s, \"passes\": %d, \"sigma\": [%.6g, %.6g, %.6g], \"seconds\": %.6f, "
               "\"filter_seconds\": %.6f, \"prep_seconds\": %.6f, \"backend_seconds\": %.6f, \"finish_seconds\": %.6f, "
               "\"texels\": %llu, \"charts\": %u },\n",
            dn->texels ? "true" : "false", c->dn.passes, c->dn.sigma_l, c->dn.sigma_n, c->dn.sigma_x, dn->seconds,
            dn->filter_seconds, dn->prep_seconds, dn->backend_seconds, dn->finish_seconds, (unsigned long long)dn->texels,
            dn->charts);
    uint64_t px = (uint64_t)BK_ATLAS_PIXELS(at);
    fprintf(f, "  \"memory\": { \"estimate_host_bytes\": %llu, \"estimate_device_bytes\": %llu, \"peak_host_bytes\": %llu, "
               "\"peak_device_bytes\": %llu, \"atlas_texels\": %llu, \"peak_host_bytes_per_texel\": %.2f },\n",
            (unsigned long long)mem[MEM_EST_HOST], (unsigned long long)mem[MEM_EST_DEVICE], (unsigned long long)mem[MEM_PEAK_HOST],
            (unsigned long long)mem[MEM_PEAK_DEVICE], (unsigned long long)px, px ? (double)mem[MEM_PEAK_HOST] / (double)px : 0.0);
    fprintf(f, "  \"exposure\": %.6g,\n  \"mean_luminance\": %.6g,\n  \"bin_rays\": { \"on\": %s, \"sort_seconds\": %.6f },\n"
            "  \"gpu_kernel\": \"%s\",\n",
            c->exposure, mean_lum, c->bin_rays ? "true" : "false", sort_seconds, c->t.opts.wavefront ? "wavefront" : "megakernel");
    fprintf(f, "  \"traversal\": { \"nodes\": %llu, \"triangles\": %llu, \"restarts\": %llu, \"spills\": %llu }\n}\n",
            (unsigned long long)r->totals.nodes, (unsigned long long)r->totals.tris,
            (unsigned long long)r->totals.restarts, (unsigned long long)r->totals.spills);
}

/* Every file the bake reads and writes, checked before any work (outputs.h). Returns 0, or the
 * exit status after printing why: 2 when two names clash, 1 when an output cannot be written.
 * With --pages auto -o itself names no file: page 0 (NAME-0.png, there is always one) is
 * checked here, the other pages once the atlas is packed, before the bake. */
static int plan_files(const bake_cli *c, bk_outputs *io, int idx[3], const char *page0)
{
    char err[1024];
    int r = 0;
    /* a scene named twice would be baked as two coincident copies, each at half the density */
    for (int k = 1; k < c->nscenes; ++k)
        for (int j = 0; j < k; ++j)
            if (bk_same_file(c->scenes[j], c->scenes[k])) {
                bake_error("SCENE %s and %s are the same file: name each scene once (two copies would bake as coincident "
                           "geometry at half the texel density)\n", c->scenes[j], c->scenes[k]);
                return 2;
            }
    for (int k = 0; k < c->nscenes && !r; ++k) r = bk_outputs_input(io, "a scene", c->scenes[k], err, sizeof err);
    /* another rank of a job writes nothing: it neither checks nor probes the outputs (their folder
     * may exist only where rank 0 runs) */
    if (!r && c->writer && (r = idx[0] = bk_outputs_add(io, "-o", page0 ? page0 : c->out, 0, err, sizeof err)) >= 0) r = 0;
    if (!r && c->writer && c->mesh_out && (r = idx[1] = bk_outputs_add(io, "--mesh-out", c->mesh_out, 0, err, sizeof err)) >= 0) r = 0;
    if (!r && c->stats && (r = idx[2] = bk_outputs_add(io, "--stats", c->stats, BK_OUT_ALLOW_STDOUT, err, sizeof err)) >= 0) r = 0;
    if (!r) return 0;
    bake_error("%s\n", err);
    return r == BK_OUT_CLASH ? 2 : 1;
}

/* NAME.ext -> NAME-K.ext (ext is .png, .hdr or .exr, 4 characters). */
static char *page_name(const char *out, int k)
{
    size_t n = strlen(out), cut = n >= 4 ? n - 4 : n;
    char *p = malloc(cut + 16 + (n - cut));
    if (p) snprintf(p, cut + 16 + (n - cut), "%.*s-%d%s", (int)cut, out, k, out + cut);
    return p;
}

/* --pages auto: pages NAME-K.png of an earlier bake with more pages stay (they are no output of
 * this run, so they are not removed); say which files are this bake's. */
static void note_stale_pages(const bake_cli *c, int pages)
{
    int last = pages;
    for (;; ++last) {
        char *p = page_name(c->out, last);
        int there = p && access(p, F_OK) == 0;
        free(p);
        if (!there) break;
    }
    if (last == pages) return;
    char *first = page_name(c->out, pages), *final = page_name(c->out, last - 1), *mine = page_name(c->out, pages - 1);
    char m[4096];
    if (first && final && mine) {
        if (last - 1 > pages)
            snprintf(m, sizeof m, "note: %s .. %s are from an earlier bake: this one wrote %d page%s, up to %s", first, final, pages,
                     pages > 1 ? "s" : "", mine);
        else
            snprintf(m, sizeof m, "note: %s is from an earlier bake: this one wrote %d page%s, up to %s", first, pages,
                     pages > 1 ? "s" : "", mine);
        bk_escape_controls(m, sizeof m);
        if (!c->quiet) fprintf(stderr, "baker: %s\n", m);
    }
    free(first); free(final); free(mine);
}

/* --mesh-out FILE.gltf|.glb: the surface (a voxel scene's quads included) with the lightmap
 * pages it is baked into (gltf.h). */
static int write_gltf(FILE *f, const bake_cli *c, const bk_scene *surf, const bk_atlas *at, char **page_names,
                      char *err, size_t err_size)
{
    bk_gltf_opts go;
    bk_gltf_opts_default(&go);
    const char *one[1] = { c->out };
    go.lightmaps = page_names ? (const char *const *)page_names : one;
    go.exposure = c->exposure;
    return bk_gltf_write_file(f, c->mesh_out, surf, at, &go, err, err_size);
}

static double gb(uint64_t bytes) { return (double)bytes / 1e9; }

/* The memory the rest of the bake needs (bk_bake_estimate) against what the machine has: a bake
 * that cannot fit is refused before it starts, with the numbers and what to change. est[0] gets
 * the host peak to expect (what the process holds now plus the estimate), est[1] the device's. */
static int check_memory(const bake_cli *c, bk_backend *be, const bk_atlas *at, uint64_t est[MEM_COUNT])
{
    uint64_t total, avail, dfree, dtotal;
    bk_host_memory(&total, &avail);
    if (c->max_memory_gb > 0 && (avail == 0 || c->max_memory_gb * 1e9 < (double)avail)) avail = (uint64_t)(c->max_memory_gb * 1e9);
    be->i->memory(be, &dfree, &dtotal);
    bk_bake_estimate((uint64_t)BK_ATLAS_PIXELS(at), at->covered, dtotal > 0, &est[0], &est[1]);
    /* --bin-rays sorts the whole texels before the bake, also for a device: the rasterizer then
     * holds them whole (32 B each beside 5 B per pixel), as on the CPU */
    const uint64_t whole = 5 * (uint64_t)BK_ATLAS_PIXELS(at) + sizeof(bk_texel) * at->covered;
    if (c->bin_rays && dtotal > 0 && whole > est[0]) est[0] = whole;
    uint64_t base = bk_current_rss();     /* the scene and trees, already held (and already not available) */
    int host_bad = avail > 0 && est[0] > avail, dev_bad = dtotal > 0 && est[1] > dfree;
    if (host_bad || dev_bad) {
        bake_error("a %dx%d atlas (%llu texels) needs about %.1f GB of %s memory, %.1f GB "
                        "%s: bake a smaller atlas (--size, --texels-per-unit)%s\n",
                at->width, at->height, (unsigned long long)at->covered, gb(host_bad ? est[0] : est[1]),
                host_bad ? "host" : "GPU", gb(host_bad ? avail : dfree),
                host_bad ? (c->max_memory_gb > 0 ? "allowed by --max-memory" : "available") : "free",
                dev_bad && !host_bad ? " or use --backend cpu" : "");
        return -1;
    }
    est[0] += base;                       /* reported as the whole process's expected peak */
    if (!c->quiet && est[0] - base > avail / 2)
        fprintf(stderr, "baker: this bake needs about %.1f GB of host memory (%.1f GB available)\n", gb(est[0] - base), gb(avail));
    if (!c->quiet && dtotal && est[1] > dfree / 2)
        fprintf(stderr, "baker: this bake needs about %.1f GB of GPU memory (%.1f GB free)\n", gb(est[1]), gb(dfree));
    return 0;
}

/* --max-memory before the atlas, where the texels are known already: a voxel scene's are its
 * visible faces times texels_per_voxel^2, and its atlas has at least that many pixels. The bake's
 * estimate for so many (a lower bound: on a device where the backend may use one) over the limit
 * is refused now, not after the atlas (whose packing holds memory of its own) has been made.
 * check_memory repeats the check on the atlas itself. */
static int check_memory_early(const bake_cli *c, uint64_t texels)
{
    if (!(c->max_memory_gb > 0)) return 0;
    uint64_t host, dev;
    bk_bake_estimate(texels, texels, bk_backend_starts_device(c->t.backend), &host, &dev);
    const double limit = c->max_memory_gb * 1e9;
    if ((double)host <= limit) return 0;
    bake_error("%s: its %llu voxel-face texels need at least %.2f GB of host memory to bake, %.2f GB allowed by --max-memory "
               "(refused before the atlas): bake fewer --texels-per-voxel\n", c->scene, (unsigned long long)texels, gb(host),
               c->max_memory_gb);
    return -1;
}

/* The backend's start on a thread of its own, while the main thread loads, builds and makes the
 * atlas: init and supports() (a CUDA context: about 0.25 s), then, once the main thread hands
 * over the accel (be_start_give), upload(). The main thread learns of a failed start as soon as
 * it hands the accel over, if the start is done by then, and else at be_start_finish, before it
 * first touches the backend. */
typedef struct be_start {
    const char          *name;
    const int           *devices;   /* --devices, ndevices of them; NULL: all the backend has, or
                                       in a job, this rank's share of the host's (local_rank of
                                       local_size ranks on the host) */
    int                  ndevices, local_rank, local_size;
    const bk_trace_opts *opts;
    pthread_mutex_t      lock;
    pthread_cond_t       cv;
    const bk_accel_view *view;      /* the upload's scene, once handed over */
    int                  stop;      /* the main thread gave up: no upload */
    int                  started;   /* init and supports() are done (ok says how) */
    double               t_started; /* when */
    bk_backend          *be;
    int                  ok;        /* 0: msg says why */
    int                  running;   /* the thread is to be joined */
    pthread_t            th;
    char                 note[512]; /* e.g. "auto" falling back to the CPU */
    char                 msg[1024];
} be_start;

static void *be_start_run(void *arg)
{
    be_start *b = (be_start *)arg;
    /* --devices, or all the devices there are (the CPU: one); in a job of several ranks on this
     * host, the ones numbered local_rank modulo local_size, or device local_rank modulo the count */
    int all[BK_BAKE_MAX_DEVICES], m = 0;
    if (!b->devices) {
        int n = bk_backend_device_count(b->name);
        if (n > BK_BAKE_MAX_DEVICES) n = BK_BAKE_MAX_DEVICES;
        for (int k = 0; k < n; ++k)
            if (b->local_size <= 1 || k % b->local_size == b->local_rank) all[m++] = k;
        if (!m && n > 0) all[m++] = b->local_rank % n;
    }
    bk_backend *be = b->devices ? bk_backend_init_devices(b->name, b->devices, b->ndevices, b->note, sizeof b->note)
                                : bk_backend_init_devices(b->name, all, m, b->note, sizeof b->note);
    int ok = be != NULL;
    if (!be) { snprintf(b->msg, sizeof b->msg, "%s", b->note); b->note[0] = 0; }
    else ok = be->i->supports(be, b->opts, b->msg, sizeof b->msg);
    pthread_mutex_lock(&b->lock);
    b->be = be; b->ok = ok; b->started = 1; b->t_started = bk_time_now();
    pthread_cond_broadcast(&b->cv);
    while (ok && !b->view && !b->stop) pthread_cond_wait(&b->cv, &b->lock);
    const bk_accel_view *v = b->stop ? NULL : b->view;
    pthread_mutex_unlock(&b->lock);
    if (ok && v) b->ok = be->i->upload(be, v, b->msg, sizeof b->msg) == 0;
    return NULL;
}

static void be_start_begin(be_start *b, const char *name, const int *devices, int ndevices, int local_rank, int local_size,
                           const bk_trace_opts *opts)
{
    memset(b, 0, sizeof *b);
    b->name = name; b->opts = opts; b->devices = devices; b->ndevices = ndevices;
    b->local_rank = local_rank; b->local_size = local_size;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->running = pthread_create(&b->th, NULL, be_start_run, b) == 0;
    if (!b->running) b->stop = 1, be_start_run(b);   /* no thread: the start here and now */
}

/* Hands the accel over for upload; 0, or -1 when the start is known to have failed. */
static int be_start_give(be_start *b, const bk_accel_view *v)
{
    if (!b->running) {                    /* started here: upload here */
        if (b->ok) b->ok = b->be->i->upload(b->be, v, b->msg, sizeof b->msg) == 0;
        return b->ok ? 0 : -1;
    }
    pthread_mutex_lock(&b->lock);
    int failed = b->started && !b->ok;
    b->view = v;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->lock);
    return failed ? -1 : 0;
}

/* Waits for the thread (giving up on the upload when the accel was never handed over); the
 * backend, or NULL. *start_wait and *upload_wait (may be NULL) get the time spent waiting before
 * and after the start was done. */
static bk_backend *be_start_finish(be_start *b, double *start_wait, double *upload_wait)
{
    const double t0 = bk_time_now();
    if (b->running) {
        pthread_mutex_lock(&b->lock);
        if (!b->view) b->stop = 1;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->th, NULL);
        b->running = 0;
    }
    const double t1 = bk_time_now();
    double s = b->t_started > t0 ? b->t_started - t0 : 0.0;
    if (s > t1 - t0) s = t1 - t0;
    if (start_wait) *start_wait += s;
    if (upload_wait) *upload_wait += (t1 - t0) - s;
    return b->be;
}

/* One agreement of a job (bake_job): 0 when every rank succeeded; else -1 on every rank, and rank
 * 0 prints the lowest failed rank's error (its own error it printed already). last: no agreement
 * follows this one. */
static int job_agree(bake_job *job, int ok, int last)
{
    char msg[1600];
    int who = -1;
    if (bk_world_agree(ok, bake_last_error, msg, sizeof msg, &who) == 0) {
        if (last) job->stopped = 1;
        return 0;
    }
    job->stopped = 1;
    if (job->rank == 0 && who != 0) fprintf(stderr, "baker: %s; the job stops, nothing was written\n", msg);
    return -1;
}

/* A texel's pixel, from its refs once the whole texels are gone. */
static inline uint32_t pixel_of(const bk_texel *tx, const bk_texel_ref *refs, size_t i) { return refs ? refs[i].pixel : tx[i].pixel; }

/* bk_bake_run_opts.next_granule in a job: the job's next granule (world.h's counter), kept in
 * job->taken for the gather (called under the bake's lock, one at a time; taken has room for
 * every granule). */
static uint64_t job_next_granule(void *ctx)
{
    bake_job *job = ctx;
    const uint64_t g = bk_world_counter_next();
    if (g < job->granules) job->taken[job->ntaken++] = (uint32_t)g;
    return g;
}

/* The granules' texel count (the last one may be short). */
static uint32_t granule_texels(uint32_t g, uint32_t G, uint32_t n) { return (uint64_t)(g + 1) * G < n ? G : n - g * G; }

/* What rank 0 unpacks (job_unpack): first every rank's list of granules, then the other ranks'
 * texel colours, granule after granule in the order of their lists. */
typedef struct job_recv {
    bk_f4          *tcol;
    uint8_t        *cov;
    const bk_texel *tx;              /* the texels, or (tx NULL) their refs */
    const bk_texel_ref *refs;
    uint32_t        n, granule, granules;
    uint32_t      **lists;           /* per rank: its granules, counts[rank] of them */
    uint32_t       *counts;
    uint8_t        *seen;            /* per granule: some rank's list named it */
} job_recv;

/* A gather's pieces, dropped (after a failure on rank 0). */
static int job_ignore(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err, size_t err_size)
{
    (void)ctx; (void)rank; (void)offset; (void)data; (void)bytes; (void)err; (void)err_size;
    return 0;
}

/* A piece of rank r's list of granules: each a granule no other rank took. */
static int job_unpack_list(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err, size_t err_size)
{
    job_recv *j = ctx;
    if (offset % sizeof(uint32_t) || bytes % sizeof(uint32_t)) return bk_fail(err, err_size, "rank %d sent a list of %zu bytes", rank, bytes);
    const uint64_t k0 = offset / sizeof(uint32_t), m = bytes / sizeof(uint32_t);
    if (k0 + m > j->granules) return bk_fail(err, err_size, "rank %d took more than the %u granules", rank, j->granules);
    uint32_t *l = j->lists[rank];
    if (!l && !(l = j->lists[rank] = malloc(sizeof(uint32_t) * j->granules)))
        return bk_fail(err, err_size, "out of memory for the granules of rank %d", rank);
    memcpy(l + k0, data, bytes);
    for (uint64_t k = k0; k < k0 + m; ++k) {
        if (l[k] >= j->granules || j->seen[l[k]])
            return bk_fail(err, err_size, "rank %d took granule %u, which is out of range or another rank's", rank, l[k]);
        j->seen[l[k]] = 1;
    }
    j->counts[rank] = (uint32_t)(k0 + m);
    return 0;
}

/* A piece of rank r's colours: its granules' texels in the order of its list; a colour with
 * w < 0 (a variance never is) marks a texel found inside geometry, as the bake left it: colour 0
 * and its pixel's coverage cleared. */
static int job_unpack(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err, size_t err_size)
{
    job_recv *j = ctx;
    if (rank == 0) return 0;                         /* rank 0's share is in place */
    if (offset % sizeof(bk_f4) || bytes % sizeof(bk_f4)) return bk_fail(err, err_size, "rank %d sent a piece of %zu bytes", rank, bytes);
    const uint64_t k0 = offset / sizeof(bk_f4), m = bytes / sizeof(bk_f4), G = j->granule;
    const unsigned char *p = data;
    /* the granule that colour k0 falls in: every granule but the job's last holds G texels */
    uint64_t at = 0;
    uint32_t gi = 0;
    while (gi < j->counts[rank] && at + granule_texels(j->lists[rank][gi], j->granule, j->n) <= k0)
        at += granule_texels(j->lists[rank][gi++], j->granule, j->n);
    for (uint64_t k = k0; k < k0 + m; ++k) {
        while (gi < j->counts[rank] && k >= at + granule_texels(j->lists[rank][gi], j->granule, j->n))
            at += granule_texels(j->lists[rank][gi++], j->granule, j->n);
        if (gi >= j->counts[rank])
            return bk_fail(err, err_size, "rank %d sent more than the texels of its %u granules", rank, j->counts[rank]);
        const uint64_t t = (uint64_t)j->lists[rank][gi] * G + (k - at);
        bk_f4 c;
        memcpy(&c, p + (k - k0) * sizeof(bk_f4), sizeof c);
        if (c.w < 0) { c.x = c.y = c.z = c.w = 0.0f; j->cov[pixel_of(j->tx, j->refs, t)] = 0; }
        j->tcol[t] = c;
    }
    return 0;
}

/* bk_bake_run_opts.make_texels: the texels of refs, made as the rasterizer would have. */
typedef struct made_texels { const bk_scene *s; const bk_atlas *a; const bk_texel_ref *refs; } made_texels;

static void make_texels(void *ctx, uint32_t first, uint32_t count, bk_texel *out)
{
    const made_texels *m = ctx;
    bk_texels_make(m->s, m->a, m->refs + first, count, out);
}

/* What a job's ranks compare (job_share): the same command on the same files gives every rank
 * the same atlas; a rank that got another one (another file, another option) would send colours
 * for the wrong texels. FNV-1a over the texel count, the image height, the granule, the bake's
 * parameters and 64 whole texels spread over the array (tx, or made from their refs by mt when
 * the host holds only those), taken before the bake. */
static uint64_t job_key(const bake_job *job, const bake_cli *c, const bk_texel *tx, const made_texels *mt, uint32_t ntx, int img_h)
{
    const uint32_t G = job->granule;
    uint64_t key = 1469598103934665603ull;
    const uint64_t facts[3] = { ntx, (uint64_t)img_h, G };
    const unsigned char *b = (const unsigned char *)facts;
    for (size_t k = 0; k < sizeof facts; ++k) key = (key ^ b[k]) * 1099511628211ull;
    b = (const unsigned char *)&c->p;
    for (size_t k = 0; k < sizeof c->p; ++k) key = (key ^ b[k]) * 1099511628211ull;
    for (uint32_t k = 0; ntx && k < 64; ++k) {
        const uint32_t i = (uint32_t)((uint64_t)ntx * k / 64);
        bk_texel t;
        if (tx) t = tx[i];
        else make_texels((void *)mt, i, 1, &t);       /* only their refs are held: the same bits */
        b = (const unsigned char *)&t;
        for (size_t q = 0; q < sizeof t; ++q) key = (key ^ b[q]) * 1099511628211ull;
    }
    return key;
}

/* The end of a job's bake, on every rank: the agreement that every rank baked its share; a check
 * that they baked the same thing (key: job_key); the counters summed (the seconds: the longest
 * rank's); then the other ranks' shares to rank 0, into tcol and cov, as if it had baked every
 * texel itself. */
static int job_share(bake_job *job, const bake_cli *c, uint64_t key, const bk_texel *tx, const bk_texel_ref *refs, uint32_t ntx,
                     uint8_t *cov, bk_f4 *tcol, bk_bake_result *res)
{
    const double t0 = bk_time_now();
    const uint32_t ranks = (uint32_t)job->size, rank = (uint32_t)job->rank, G = job->granule;
    uint32_t mine = 0;                               /* the texels of the granules this rank took */
    for (uint32_t i = 0; i < job->ntaken; ++i) mine += granule_texels(job->taken[i], G, ntx);
    const uint32_t own = rank ? mine : 0;            /* what it sends (rank 0's stay in place) */
    bk_f4 *send = own ? malloc(sizeof(bk_f4) * own) : NULL;
    if (own && !send) bake_error("out of memory for the colours of %u texels to send to rank 0", own);
    if (job_agree(job, !own || send, 0)) { free(send); return -1; }
    const double t1 = bk_time_now();
    job->wait_seconds = t1 - t0;
    int other = -1;
    if (bk_world_same_u64(key, &other)) {
        job->stopped = 1;
        if (rank == 0)
            fprintf(stderr, "baker: rank %d of %d has another atlas or other options than rank 0 (%u texels, %u spp here): every rank "
                            "must run the same command on the same files; the job stops, nothing was written\n", other, job->size, ntx,
                    c->p.spp);
        free(send);
        return -1;
    }
    uint64_t u[7] = { res->totals.rays, res->totals.nodes, res->totals.tris, res->totals.restarts, res->totals.spills, res->launches,
                      res->invalid };
    bk_world_sum_u64(u, 7);
    res->totals.rays = u[0]; res->totals.nodes = u[1]; res->totals.tris = u[2]; res->totals.restarts = u[3];
    res->totals.spills = u[4]; res->launches = (uint32_t)u[5]; res->invalid = (uint32_t)u[6];
    double d[4] = { res->totals.seconds, res->totals.upload_seconds, res->longest_launch_ms, res->wall_seconds };
    bk_world_max_f64(d, 4);
    res->totals.seconds = d[0]; res->totals.upload_seconds = d[1]; res->longest_launch_ms = d[2]; res->wall_seconds = d[3];
    /* the share, packed: the granules in the order taken; inside geometry marked by w = -1 (a
     * texel has one pixel of its own, cleared in cov by the bake when it was found inside) */
    uint64_t k = 0;
    for (uint32_t i = 0; rank && i < job->ntaken; ++i)
        for (uint64_t t = (uint64_t)job->taken[i] * G, e = t + granule_texels(job->taken[i], G, ntx); t < e; ++t) {
            bk_f4 v = tcol[t];
            if (!cov[pixel_of(tx, refs, t)]) v.w = -1.0f;
            send[k++] = v;
        }
    BK_CHECK(k == own);
    job_recv jr;
    memset(&jr, 0, sizeof jr);
    jr.tcol = tcol; jr.cov = cov; jr.tx = tx; jr.refs = refs; jr.n = ntx; jr.granule = G; jr.granules = job->granules;
    char err[1024];
    err[0] = 0;
    int rc = 0;
    if (rank == 0) {
        jr.lists = calloc(ranks, sizeof *jr.lists);
        jr.counts = calloc(ranks, sizeof *jr.counts);
        jr.seen = calloc(job->granules ? job->granules : 1, 1);
        if (!jr.lists || !jr.counts || !jr.seen) rc = bk_fail(err, sizeof err, "out of memory for the job's lists of granules");
    }
    /* which granules each rank took, then their colours (a failure on rank 0 still takes both
     * gathers' bytes: the other ranks send them either way) */
    if (bk_world_gather(job->taken, sizeof(uint32_t) * (uint64_t)job->ntaken, rc ? job_ignore : job_unpack_list, &jr, err, sizeof err))
        rc = -1;
    for (uint32_t g = 0; rank == 0 && !rc && g < job->granules; ++g)
        if (!jr.seen[g]) rc = bk_fail(err, sizeof err, "no rank baked granule %u of %u", g, job->granules);
    if (bk_world_gather(send, sizeof(bk_f4) * (uint64_t)own, rc ? job_ignore : job_unpack, &jr, err, sizeof err)) rc = -1;
    free(send);
    for (uint32_t r = 0; jr.lists && r < ranks; ++r) free(jr.lists[r]);
    free(jr.lists); free(jr.counts); free(jr.seen);
    if (rc) { bake_error("%s", err); return -1; }
    if (rank == 0) job->gather_bytes = sizeof(bk_f4) * (uint64_t)(ntx - mine);
    job->gather_seconds = bk_time_now() - t1;
    return 0;
}

/* bk_bake_run_opts.texels_kept: the backend has its own copy of the texels, so the host keeps
 * only their refs (8 B each of 32) through the fetch, the denoiser, the image and the fill. */
typedef struct kept_texels { bk_texel **tx; bk_texel_ref **refs; uint32_t n; } kept_texels;

static const bk_texel_ref *texels_kept(void *ctx)
{
    kept_texels *k = ctx;
    *k->refs = bk_texels_compact(k->tx, k->n);
    return *k->refs;
}

/* Everything one bake holds from its start to its end, handed from phase to phase. */
typedef struct bake_state {
    int              argc;
    char           **argv;
    bake_job        *job;
    int              rc;             /* the exit status when a phase stops the bake */
    bake_cli         c;
    FILE            *say;            /* the summary's stream: stderr with --stats - */
    bk_outputs       io;
    int              out_idx[3], mtl_idx, *page_idx;
    char           **page_names, *mtl_path, *page0;
    char             err[1024], msg[512];
    double           t_start, t0;    /* the command's start; the running phase's */
    double           ph[PH_COUNT], wr[WR_COUNT], bake_prep;
    bk_scene         s, one;
    bk_voxmesh       vm;
    const bk_scene  *surf;           /* the scene's triangles, then the voxel quads' (voxmesh.h) */
    int              has_vox;
    bk_atlas_rect   *rects;
    bk_accel         a;
    bk_accel_view    av;             /* the upload's view of a: held until the backend is done */
    bk_atlas         at;
    bk_bake_data     bd;
    bk_texel        *tx;
    bk_texel_ref    *refs;           /* the texels' pixel and triangle, once the whole texels are gone */
    int              refs_hold_charts; /* their tri fields hold charts (bk_denoise_texel_colours) */
    uint8_t         *cov;
    float           *rgb, *tri_scale;
    bk_f4           *tcol;
    bk_denoise_result dres;
    uint32_t         ntx;
    size_t           page_px, npx;   /* pixels of a page, of all pages */
    int              img_h;          /* pages are stacked vertically into one image (atlas.h) */
    int              filter;         /* the texels' colours go through the denoiser */
    bk_prim         *gpu;
    be_release       rel;
    double           mean_lum, sort_seconds;
    uint64_t         mem[MEM_COUNT];
    char             backend_name[64];
    bk_backend      *be;
    be_start         bs;
    int              bs_begun;
    int              lend_core;      /* the host phases left the backend's start a core */
    bk_bake_view     bv;
    bk_bake_run_opts ro;
    kept_texels      kt;
    made_texels      mt;
    bk_bake_result   res;
} bake_state;

/* Stops the bake with exit status 2 for a clash of names, else 1, after printing msg. */
static int bake_stop(bake_state *st, int clash, const char *msg)
{
    bake_error("%s\n", msg);
    st->rc = clash ? 2 : 1;
    return 1;
}

/* The options, with --stats FILE pulled out first: it belongs to the bake, and
 * bk_cli_trace_option would take a bare --stats as the trace counters flag. Returns 0, or 1 with
 * st->rc the exit status (0 after --help). */
static int startup_options(bake_state *st)
{
    const char *stats_path = NULL;
    char **args = malloc(sizeof(char *) * (size_t)(st->argc + 1));
    int nargs = 0;
    if (!args) return 1;
    for (int i = 0; i < st->argc; ++i) {
        if (!strcmp(st->argv[i], "--")) {            /* SCENEs only from here (parse) */
            while (i < st->argc) args[nargs++] = st->argv[i++];
            break;
        }
        if (!strcmp(st->argv[i], "--stats")) {
            if (i + 1 >= st->argc) {
                bake_error("--stats needs a FILE.json (or - for standard output)\n");
                free(args);
                st->rc = 2;
                return 1;
            }
            stats_path = st->argv[++i];
            continue;
        }
        if (!strcmp(st->argv[i], "--help") || !strcmp(st->argv[i], "-h")) {
            if (st->job->rank == 0) printf(bk_bake_usage, bk_cli_trace_help);
            free(args);
            st->rc = 0;
            return 1;
        }
        args[nargs++] = st->argv[i];
    }
    int pr = parse(&st->c, nargs, args);
    free(args);
    if (pr) { st->rc = 2; return 1; }
    st->c.stats = stats_path;
    return 0;
}

/* startup: the options, every file named (plan_files), and the backend's start on its thread. */
static int phase_startup(bake_state *st)
{
    bake_cli *c = &st->c;
    bake_job *job = st->job;
    st->rc = 1;
    if (startup_options(st)) return 1;
    /* a job (world.h): every rank bakes its share of the texels; rank 0 alone writes and speaks */
    c->writer = job->rank == 0;
    if (!c->writer) { c->quiet = 1; c->stats = NULL; }
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
    st->out_idx[0] = st->out_idx[1] = st->out_idx[2] = -1;
    st->mtl_idx = -1;
    st->page0 = c->pages_auto ? page_name(c->out, 0) : NULL;
    if (c->pages_auto && !st->page0) { bake_error("out of memory\n"); return 1; }
    st->rc = plan_files(c, &st->io, st->out_idx, st->page0);
    if (st->rc) return 1;
    st->rc = 1;

    /* The backend starts (a CUDA context: about 0.25 s) on a thread of its own while the scene
     * loads, its accel builds and the atlas is made, and takes the accel as soon as it is built
     * (be_start). The phases startup and upload count only the waits for it that loading,
     * building and the atlas did not hide. */
    /* In a job each rank takes its own GPUs by default: those whose number modulo the host's
     * ranks is its local rank (world.h), or one of them when there are more ranks than GPUs. */
    be_start_begin(&st->bs, c->t.backend, c->devices, c->ndevices, bk_world_local_rank(), bk_world_local_size(), &c->t.opts);
    st->bs_begun = 1;
    /* A device's start (its context, then the upload) keeps a core busy while the host phases
     * run: their pool leaves it that core until the backend is there (the phases' results do not
     * depend on the thread count). On the GPU machine's 16 cores, sponza 1024^2: the atlas
     * 0.49 -> 0.39 s, the whole command 1.01 -> 0.87 s (`baker bench bake`, BK_THREADS=15). */
    st->lend_core = st->bs.running && bk_backend_starts_device(c->t.backend) && c->t.opts.threads == 0 && !getenv("BK_THREADS") &&
                    bk_cpu_threads() > 2;
    if (st->lend_core) bk_pool_set_threads(bk_cpu_threads() - 1);

    st->t0 = bk_time_now();
    st->ph[PH_STARTUP] = st->t0 - st->t_start;
    return 0;
}

/* A scene with voxels: its voxel surface, checked against --max-memory, and its quads' charts. */
static int load_voxels(bake_state *st)
{
    bake_cli *c = &st->c;
    char *err = st->err;
    if (c->atlas.uv_from_file) {
        bake_error("%s: --uv file: voxels get their charts from their quads; bake the --mesh-out OBJ for file UVs\n", c->scene);
        return 1;
    }
    if (bk_voxmesh_build(&st->s, &st->vm, err, sizeof st->err)) { bake_error("%s: %s\n", c->scene, err); return 1; }
    if (check_memory_early(c, st->vm.face_count * (uint64_t)(c->texels_per_voxel * c->texels_per_voxel))) return 1;
    st->surf = &st->vm.scene;
    if (!(st->rects = bk_voxmesh_rects(&st->vm, c->texels_per_voxel, &c->atlas))) {
        bake_error("out of memory for %u voxel quads\n", st->vm.quad_count);
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
    bake_cli *c = &st->c;
    char *err = st->err;
    for (int k = 0; k < c->nscenes; ++k) {
        bk_scene *dst = k == 0 ? &st->s : &st->one;
        if (bk_scene_load(c->scenes[k], dst, err, sizeof st->err)) { bake_error("%s\n", err); return 1; }
        int r = bk_outputs_scene_inputs(&st->io, dst, err, sizeof st->err);
        if (r) return bake_stop(st, r == BK_OUT_CLASH, err);
        if (k == 0) continue;
        r = bk_scene_append(&st->s, &st->one, err, sizeof st->err);
        bk_scene_free(&st->one);
        if (r) { bake_error("%s: %s\n", c->scenes[k], err); return 1; }
    }
    /* The surface the atlas, the texels, the bake data and --mesh-out use: the scene's own
     * triangles, then two per merged quad of visible voxel faces (voxmesh.h). */
    st->surf = &st->s;
    st->has_vox = st->s.vox_instance_count > 0;
    if (st->has_vox && load_voxels(st)) return 1;
    /* FILE.mtl beside the --mesh-out OBJ: the voxel palette, and copies of the scene's MTL files
     * of other folders (so the OBJ names no absolute path); never replacing a user's own file */
    if (c->writer && c->mesh_out && !bk_gltf_path(c->mesh_out) && (st->has_vox || bk_mesh_obj_copies_mtl(&st->s, c->mesh_out))) {
        int r = -1;
        if (!(st->mtl_path = bk_mesh_mtl_name(c->mesh_out)) ||
            (r = bk_mesh_mtl_check(st->mtl_path, c->mesh_out, err, sizeof st->err) ? BK_OUT_CLASH : 0) ||
            (r = st->mtl_idx = bk_outputs_add(&st->io, "--mesh-out (its MTL)", st->mtl_path, 0, err, sizeof st->err)) < 0)
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
    bk_build_opts bo = bk_build_opts_default();
    const bk_scene *trace_scene = &st->s;
    if (bk_accel_build(trace_scene, st->c.t.accel, &bo, &st->a, st->err, sizeof st->err)) {
        bake_error("%s: %s\n", st->c.scene, st->err);
        return 1;
    }
    st->ph[PH_BUILD] = bk_time_now() - st->t0;
    return 0;
}

/* upload: the accel handed over to the backend's start, which uploads it on its thread; the phase's
 * time is the wait for that upload which the atlas did not hide (be_start_finish, in the atlas). */
static int phase_upload(bake_state *st)
{
    st->t0 = bk_time_now();
    st->av = bk_accel_get_view(&st->a);
    if (be_start_give(&st->bs, &st->av)) {
        st->be = be_start_finish(&st->bs, NULL, NULL);
        bake_error("%s\n", st->bs.msg);
        return 1;
    }
    return 0;
}

/* --object-scale: each triangle gets the factor of the last pattern matching its o/g name. */
static int object_scales(bake_state *st)
{
    bake_cli *c = &st->c;
    const bk_scene *s = &st->s;
    if (!(st->tri_scale = malloc(sizeof(float) * ((size_t)st->surf->tri_count + 1)))) { bake_error("out of memory\n"); return 1; }
    for (uint32_t t = 0; t < st->surf->tri_count; ++t) st->tri_scale[t] = 1.0f;
    for (int k = 0; k < c->noscale; ++k) {
        uint32_t hits = 0;
        for (uint32_t ob = 0; ob < s->object_count; ++ob) {
            if (fnmatch(c->oscale_pat[k], s->object_names[ob], 0) != 0) continue;
            hits++;
            for (uint32_t t = 0; t < s->tri_count; ++t)
                if (s->tri_object[t] == ob) st->tri_scale[t] = c->oscale_f[k];
        }
        if (!hits) {
            bake_error("%s: --object-scale %s=%g: the pattern matches none of the scene's %u o/g names\n", c->scene,
                    c->oscale_pat[k], (double)c->oscale_f[k], s->object_count);
            return 1;
        }
    }
    c->atlas.tri_scale = st->tri_scale;
    return 0;
}

/* --pages auto: the pages are known now: name them, with the same checks as every output,
 * before the bake. */
static int name_pages(bake_state *st)
{
    const int n = st->at.page_count;
    st->page_names = calloc((size_t)n, sizeof(char *));
    st->page_idx = malloc(sizeof(int) * (size_t)n);
    if (!st->page_names || !st->page_idx) { bake_error("out of memory\n"); return 1; }
    st->page_names[0] = st->page0;
    st->page0 = NULL;
    st->page_idx[0] = st->out_idx[0];
    for (int p = 1; p < n; ++p) {
        int r = -1;
        if (!(st->page_names[p] = page_name(st->c.out, p)) ||
            (r = st->page_idx[p] = bk_outputs_add(&st->io, "-o", st->page_names[p], 0, st->err, sizeof st->err)) < 0)
            return bake_stop(st, r == BK_OUT_CLASH, st->page_names[p] ? st->err : "out of memory");
    }
    return 0;
}

/* The backend, once its start and upload are done; the wait is startup and upload, not atlas. */
static int await_backend(bake_state *st)
{
    const double tw = bk_time_now();
    st->be = be_start_finish(&st->bs, &st->ph[PH_STARTUP], &st->ph[PH_UPLOAD]);
    if (st->lend_core) bk_pool_set_threads(0);
    if (!st->be || !st->bs.ok) { bake_error("%s\n", st->bs.msg); return 1; }
    if (st->bs.note[0] && !st->c.quiet) fprintf(stderr, "baker: %s\n", st->bs.note);
    snprintf(st->backend_name, sizeof st->backend_name, "%s", st->be->i->name(st->be));
    st->t0 += bk_time_now() - tw;
    return 0;
}

/* atlas: charts and packing (bk_atlas_build), the pages' names, the memory check, the texels. */
static int phase_atlas(bake_state *st)
{
    bake_cli *c = &st->c;
    st->t0 = bk_time_now();
    if (c->noscale && object_scales(st)) return 1;
    if (bk_atlas_build(st->surf, &c->atlas, &st->at, st->err, sizeof st->err)) { bake_error("%s\n", st->err); return 1; }
    if (c->pages_auto && c->writer && name_pages(st)) return 1;
    if (await_backend(st)) return 1;
    if (check_memory(c, st->be, &st->at, st->mem)) return 1;
    /* A backend with its own copy of the texels (a GPU) gets them a slice at a time, made from
     * their refs during the bake (bk_bake_run_opts.make_texels): the host never holds them whole
     * (32 B each, 8 for a ref). The CPU reads them in place; --bin-rays sorts them whole first. */
    bk_backend_caps caps0;
    st->be->i->caps(st->be, &caps0);
    const int make_later = caps0.keeps_texels && !c->bin_rays;
    if (make_later ? bk_atlas_rasterize_refs(st->surf, &st->at, &st->refs, &st->ntx, &st->cov, st->err, sizeof st->err)
                   : bk_atlas_rasterize(st->surf, &st->at, &st->tx, &st->ntx, &st->cov, st->err, sizeof st->err)) {
        bake_error("%s\n", st->err);
        return 1;
    }
    st->ph[PH_ATLAS] = bk_time_now() - st->t0;
    return 0;
}

/* The shading data and the lighting defaults that depend on the scene. */
static int bake_lighting(bake_state *st)
{
    bake_cli *c = &st->c;
    const bk_accel *a = &st->a;
    const bk_scene *surf = st->surf;
    float diag = sqrtf((a->hi.x - a->lo.x) * (a->hi.x - a->lo.x) + (a->hi.y - a->lo.y) * (a->hi.y - a->lo.y) +
                       (a->hi.z - a->lo.z) * (a->hi.z - a->lo.z));
    if (bk_bake_data_build_hit(surf, st->has_vox ? st->vm.first_quad_tri : surf->tri_count, c->points, c->point_count, &st->bd,
                               st->err, sizeof st->err)) {
        bake_error("%s\n", st->err);
        return 1;
    }
    int has_sun = c->p.sun_color[0] > 0 || c->p.sun_color[1] > 0 || c->p.sun_color[2] > 0;
    if (c->p.mode == BK_BAKE_LIGHT && !has_sun && !c->sky_given && !st->bd.point_count && !st->bd.emit_count) {
        c->p.sky[0] = c->p.sky[1] = c->p.sky[2] = 1.0f;
        if (!c->quiet) fprintf(stderr, "baker: %s has no emissive materials and no --sun, --point or --sky was given: "
                                       "lighting it with a white sky (--sky 1,1,1)\n", c->scene);
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
    bake_cli *c = &st->c;
    bk_bake_run_opts *ro = &st->ro;
    memset(ro, 0, sizeof *ro);
    ro->params = c->p; ro->trace = c->t.opts; ro->max_launch_ms = c->max_launch_ms; ro->progress = !c->quiet;
    /* (For --kernel megakernel; the wavefront's kernels keep their registers, kernels/bake.cu.)
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

/* Where the bake's colours go: this rank's share of a job (granules of the texels, taken from
 * the job's counter as the rank's devices ask for work, bake.h, so a faster rank takes more);
 * texel colours for the denoiser or the gather, else the image itself. */
static int bake_targets(bake_state *st)
{
    bake_job *job = st->job;
    const bk_atlas *at = &st->at;
    const uint32_t ntx = st->ntx;
    if (job->size > 1) {
        job->granule = bk_bake_granule(ntx, (uint32_t)job->size);
        job->granules = (uint32_t)(((uint64_t)ntx + job->granule - 1) / job->granule);
        job->taken = malloc(sizeof(uint32_t) * (job->granules ? job->granules : 1));
        if (!job->taken) { bake_error("out of memory for the list of %u granules\n", job->granules); return 1; }
        st->ro.rank = (uint32_t)job->rank; st->ro.ranks = (uint32_t)job->size; st->ro.granule = job->granule;
        st->ro.next_granule = job_next_granule; st->ro.granule_ctx = job;
    }
    /* a job's ranks bake into texel colours too: what rank 0 gathers (job_share) */
    if (st->filter || job->size > 1) {
        st->tcol = malloc(sizeof(bk_f4) * (ntx ? ntx : 1));
        if (!st->tcol) { bake_error("out of memory for the colours of %u texels\n", ntx); return 1; }
        st->ro.texel_col = st->tcol;
    } else {
        st->rgb = malloc(sizeof(float) * 3 * st->npx);
        if (!st->rgb) {
            bake_error("out of memory for a %dx%d lightmap (%d pages)\n", at->width, at->height, at->page_count);
            return 1;
        }
    }
    return 0;
}

/* bake: shading data, lighting defaults, the texels' order, then the bake itself, and in a job
 * the gather of every rank's share at rank 0. */
static int phase_bake(bake_state *st)
{
    bake_cli *c = &st->c;
    bake_job *job = st->job;
    st->t0 = bk_time_now();
    if (bake_lighting(st)) return 1;
    /* statistics and the ray order run through the primitives, on the GPU with the cuda backend */
    bk_backend_caps caps;
    st->be->i->caps(st->be, &caps);
    if (caps.gpu_primitives && (c->bin_rays || c->exposure_auto || c->stats)) st->gpu = bk_prim_init(st->msg, sizeof st->msg);
    if (c->bin_rays && bin_texels(st->gpu, st->tx, st->ntx, &st->a, &st->sort_seconds, st->err, sizeof st->err)) {
        bake_error("%s\n", st->err);
        return 1;
    }
    /* pages are stacked vertically into one image of at.height * page_count rows (atlas.h) */
    st->page_px = (size_t)st->at.width * (size_t)st->at.height;
    st->npx = BK_ATLAS_PIXELS(&st->at);
    st->img_h = st->at.height * st->at.page_count;
    st->bv = bk_bake_data_view(&st->bd, &st->a);
    st->bake_prep = bk_time_now() - st->t0;
    bake_launch_opts(st);
    const int denoise = c->denoise >= 0 ? c->denoise : c->p.mode == BK_BAKE_LIGHT;
    /* A bake that denoises keeps each texel's colour and variance (16 B per texel) until the
     * denoiser is done and only then makes the image (12 B per pixel): never both at once with
     * the texels (32 B), nor a variance per pixel. */
    st->filter = denoise && c->dn.passes > 0 && c->p.spp > 1;
    if (bake_targets(st)) return 1;
    /* a backend with its own copy of the texels (a GPU) lets the host keep only their refs from
     * the moment every device has begun (texels_kept); the CPU reads them in place, through the
     * denoiser's passes too, and they are compacted after those */
    st->kt.tx = &st->tx; st->kt.refs = &st->refs; st->kt.n = st->ntx;
    st->ro.texels_kept = texels_kept; st->ro.texels_kept_ctx = &st->kt;
    st->mt.s = st->surf; st->mt.a = &st->at; st->mt.refs = st->refs;
    if (!st->tx) { st->ro.make_texels = make_texels; st->ro.make_texels_ctx = &st->mt; st->ro.texel_refs = st->refs; }
    const uint64_t key = job->size > 1 ? job_key(job, c, st->tx, &st->mt, st->ntx, st->img_h) : 0;
    if (bk_bake_texels(st->be, &st->bv, st->tx, st->ntx, st->at.width, st->img_h, &st->ro, st->rgb, st->cov, &st->res, st->err,
                       sizeof st->err)) {
        bake_error("%s\n", st->err);
        return 1;
    }
    if (job->size > 1) {
        if (job_share(job, c, key, st->tx, st->refs, st->ntx, st->cov, st->tcol, &st->res)) return 1;
        if (job->rank != 0) {           /* its share is with rank 0: wait for its word, and stop */
            st->rc = job_agree(job, 1, 1) ? 1 : 0;
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
        bake_error("out of memory for a %dx%d lightmap (%d pages)\n", st->at.width, st->at.height, st->at.page_count);
        return 1;
    }
    enum { SLICE = 1 << 20 };
    for (uint32_t end = st->ntx; end > 0;) {
        uint32_t begin = end > SLICE ? end - SLICE : 0;
        image_job ij = { st->refs + begin, st->tcol + begin, st->rgb };
        bk_parallel_for(end - begin, 16384, image_fn, &ij);   /* each texel its own pixel */
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
        if (st->filter && bk_denoise_texel_colours(st->be, st->tcol, st->cov, st->refs ? NULL : st->tx, st->refs, st->ntx,
                                                   at->tri_chart, at->tri_count, at->width, at->height, st->c.p.texel_world,
                                                   &st->c.dn, &st->dres, st->err, sizeof st->err)) {
            bake_error("%s\n", st->err);
            return 1;
        }
        if (st->filter && st->refs) st->refs_hold_charts = 1;
    }
    /* from here on a texel's pixel and triangle are all that is read: 8 B of its 32 */
    if (!st->refs) st->refs = bk_texels_compact(&st->tx, st->ntx);
    if (st->tcol && image_from_colours(st)) return 1;
    st->ph[PH_DENOISE] = bk_time_now() - st->t0;
    return 0;
}

/* Where charts may lie less than two texels apart, each texel that bilinear lookups inside a
 * chart read takes that chart's colours only (bk_atlas_reach_ids); then the padding, page by page. */
static int dilate_pages(bake_state *st)
{
    const bk_atlas *at = &st->at;
    uint32_t *reach = at->close_charts ? malloc(sizeof(uint32_t) * (st->npx ? st->npx : 1)) : NULL;
    if (at->close_charts && !reach) { bake_error("out of memory\n"); return 1; }
    if (reach) bk_atlas_reach_ids(at, reach);
    for (int p = 0; p < at->page_count; ++p)
        bk_image_dilate_charts(st->rgb + 3 * st->page_px * (size_t)p, st->cov + st->page_px * (size_t)p,
                               reach ? reach + st->page_px * (size_t)p : NULL, at->width, at->height, st->c.atlas.padding + 14);
    free(reach);
    return 0;
}

/* Each page's image to its temporary file (they replace their targets together at the end). */
static int write_images(bake_state *st)
{
    const bake_cli *c = &st->c;
    char *err = st->err;
    FILE *f;
    for (int p = 0; p < st->at.page_count; ++p) {
        int oi = c->pages_auto ? st->page_idx[p] : st->out_idx[0];
        const char *name = c->pages_auto ? st->page_names[p] : c->out;
        if (!(f = bk_outputs_open(&st->io, oi, err, sizeof st->err)) ||
            bk_image_write_file(f, name, st->rgb + 3 * st->page_px * (size_t)p, st->at.width, st->at.height, c->exposure, err,
                                sizeof st->err) ||
            bk_outputs_close(&st->io, oi, err, sizeof st->err)) {
            bake_error("%s\n", err);
            return 1;
        }
    }
    return 0;
}

/* --mesh-out: the OBJ (with its MTL file) or the glTF, to its temporary file. */
static int write_mesh(bake_state *st)
{
    const bake_cli *c = &st->c;
    char *err = st->err;
    const size_t es = sizeof st->err;
    FILE *f, *mf = NULL;
    if (!(f = bk_outputs_open(&st->io, st->out_idx[1], err, es)) ||
        (st->mtl_idx >= 0 && !(mf = bk_outputs_open(&st->io, st->mtl_idx, err, es))) ||
        (bk_gltf_path(c->mesh_out) ? write_gltf(f, c, st->surf, &st->at, st->page_names, err, es)
                                   : bk_mesh_write_obj_vox(f, c->mesh_out, st->surf, st->has_vox ? &st->vm : NULL, &st->at, mf,
                                                           st->mtl_path, err, es)) ||
        bk_outputs_close(&st->io, st->out_idx[1], err, es) || (st->mtl_idx >= 0 && bk_outputs_close(&st->io, st->mtl_idx, err, es))) {
        bake_error("%s\n", err);
        return 1;
    }
    return 0;
}

/* write: the exposure, the fill of texels inside geometry, the dilation, the images, the mesh
 * (WRITE_STEPS, each timed). */
static int phase_write(bake_state *st)
{
    bake_cli *c = &st->c;
    const bk_atlas *at = &st->at;
    st->t0 = bk_time_now();
    double wt = st->t0;
    if (c->exposure_auto || c->stats) {
        float e = auto_exposure(st->gpu, st->rgb, st->cov, st->npx, &st->mean_lum, st->err, sizeof st->err);
        if (e < 0) { bake_error("%s\n", st->err); return 1; }
        if (c->exposure_auto) c->exposure = e;
    }
    /* texels found inside geometry take the nearest valid texel of their own chart (fill.h);
     * then the padding, page by page */
    /* the refs go as soon as the fill has its chart map: not held through the fill nor the write */
    st->wr[WR_EXPOSURE] = lap(&wt);
    /* the devices' last use: when the process ends with this bake, they go now, on a thread,
     * while the host fills, dilates and writes (bk_cmd_bake_last) */
    st->mem[MEM_PEAK_DEVICE] = st->be->i->memory_peak(st->be);
    if (bake_last) {
        st->rel.gpu = st->gpu; st->rel.be = st->be;
        st->rel.running = pthread_create(&st->rel.th, NULL, be_release_run, &st->rel) == 0;
        if (st->rel.running) st->gpu = NULL, st->be = NULL;
    }
    if (bk_fill_hidden_refs(st->rgb, st->cov, &st->refs, st->ntx, st->refs_hold_charts ? NULL : at->tri_chart, at->width, at->height,
                            at->page_count, NULL, st->err, sizeof st->err)) {
        bake_error("%s\n", st->err);
        return 1;
    }
    st->wr[WR_FILL] = lap(&wt);
    if (dilate_pages(st)) return 1;
    st->wr[WR_DILATE] = lap(&wt);
    if (write_images(st)) return 1;
    st->wr[WR_IMAGES] = lap(&wt);
    if (c->mesh_out && write_mesh(st)) return 1;
    st->wr[WR_MESH] = lap(&wt);
    st->ph[PH_WRITE] = bk_time_now() - st->t0;
    return 0;
}

/* free: what the stats and the summary no longer need goes before they are written, so that its
 * time is a phase too (the scene and the atlas stay: the stats name pages and materials). */
static int phase_free(bake_state *st)
{
    st->t0 = bk_time_now();
    if (!bake_end_fast) {       /* else the process end takes the host memory (see bk_cmd_bake_end_fast) */
        free(st->rgb); st->rgb = NULL;
        free(st->tx); st->tx = NULL;
        free(st->refs); st->refs = NULL;
        free(st->cov); st->cov = NULL;
        bk_bake_data_free(&st->bd);
        bk_accel_free(&st->a);
        memset(&st->a, 0, sizeof st->a);
    }
    bk_prim_free(st->gpu); st->gpu = NULL;
    bk_backend_free(st->be); st->be = NULL;
    be_release_finish(&st->rel);    /* what the devices' teardown did not hide behind the write */
    st->ph[PH_FREE] = bk_time_now() - st->t0;
    st->mem[MEM_PEAK_HOST] = bk_peak_rss();
    return 0;
}

/* The summary of a bake, unless --quiet. */
static void print_summary(const bake_state *st)
{
    const bake_cli *c = &st->c;
    const bake_job *job = st->job;
    const bk_atlas *at = &st->at;
    const bk_voxmesh *vm = &st->vm;
    const bk_bake_result *res = &st->res;
    const bk_denoise_result *dres = &st->dres;
    const uint64_t *mem = st->mem;
    FILE *say = st->say;
    double mrays = res->totals.seconds > 0 ? (double)res->totals.rays / res->totals.seconds / 1e6 : 0.0;
    if (at->page_count > 1 || c->pages_auto)
        fprintf(say, "baked %s -> %s ... %s (%d pages of %dx%d, %u charts, %u texels, utilisation %.1f%%, %s backend)\n", c->scene,
                st->page_names[0], st->page_names[at->page_count - 1], at->page_count, at->width, at->height, at->chart_count, st->ntx,
                100.0 * at->utilisation, st->backend_name);
    else
        fprintf(say, "baked %s -> %s (%dx%d, %u charts, %u texels, utilisation %.1f%%, stretch %.3f, %s backend)\n", c->scene, c->out,
                at->width, at->height, at->chart_count, st->ntx, 100.0 * at->utilisation, (double)at->stretch_l2, st->backend_name);
    if (st->has_vox)
        fprintf(say, "  voxels: %u instances, %llu voxels -> %llu visible faces (%llu hidden between instances) -> %u quads = %u charts, "
                     "%llu texels at %d per voxel; surface %.3f s\n", st->s.vox_instance_count, (unsigned long long)vm->voxel_count,
                (unsigned long long)vm->face_count, (unsigned long long)vm->hidden_faces, vm->quad_count, vm->quad_count,
                (unsigned long long)vm->face_count * (uint64_t)(c->texels_per_voxel * c->texels_per_voxel), c->texels_per_voxel,
                vm->seconds);
    fprintf(say, " ");
    for (int k = 0; k < PH_COUNT; ++k) fprintf(say, "%s %s %.3f s", k ? " |" : "", phase_names[k], st->ph[k]);
    fputc('\n', say);
    fprintf(say, "  %llu rays in %.3f s of tracing%s: %.1f Mrays/s; %u launches, longest %.1f ms; %u texels inside geometry\n",
            (unsigned long long)res->totals.rays, res->totals.seconds, res->devices > 1 ? " (busiest device)" : "", mrays, res->launches,
            res->longest_launch_ms, res->invalid);
    for (int k = 0; res->devices > 1 && k < res->devices && k < BK_BAKE_MAX_DEVICES; ++k)
        fprintf(say, "    device %d: %llu texels in %u blocks, %llu rays, busy %.3f s\n", k, (unsigned long long)res->dev[k].texels,
                res->dev[k].blocks, (unsigned long long)res->dev[k].rays, res->dev[k].busy_seconds);
    if (dres->texels)
        fprintf(say, "  denoise %.3f s (passes %.3f s on %s): %llu texels in %u charts, each chart's mean kept\n", dres->seconds,
                dres->filter_seconds, st->backend_name, (unsigned long long)dres->texels, dres->charts);
    uint64_t px = (uint64_t)BK_ATLAS_PIXELS(at);
    fprintf(say, "  memory: peak %.2f GB host (estimated %.2f GB; %.1f bytes per atlas texel)", gb(mem[MEM_PEAK_HOST]),
            gb(mem[MEM_EST_HOST]), px ? (double)mem[MEM_PEAK_HOST] / (double)px : 0.0);
    if (mem[MEM_PEAK_DEVICE] || mem[MEM_EST_DEVICE])
        fprintf(say, ", peak %.2f GB on the device (estimated %.2f GB for the bake)", gb(mem[MEM_PEAK_DEVICE]), gb(mem[MEM_EST_DEVICE]));
    fputc('\n', say);
    if (c->exposure_auto) fprintf(say, "  exposure %.4g (99th percentile of luminance to white)\n", c->exposure);
    if (c->bin_rays) fprintf(say, "  ray binning: texels sorted in %.4f s\n", st->sort_seconds);
    if (job->size > 1)
        fprintf(say, "  job: %d ranks, granules of %u texels taken as asked for; rank 0 waited %.3f s for the others, "
                     "then gathered %.1f MB in %.3f s\n", job->size, job->granule, job->wait_seconds,
                (double)job->gather_bytes / 1e6, job->gather_seconds);
}

/* After the phases: the stats, the summary, the job's last agreement and the commit of every
 * output. Returns the exit status. */
static int bake_report(bake_state *st)
{
    const bake_cli *c = &st->c;
    if (c->stats) {
        FILE *f = bk_outputs_open(&st->io, st->out_idx[2], st->err, sizeof st->err);
        if (!f) { bake_error("%s\n", st->err); return 1; }
        write_stats_json(f, c, &st->s, st->has_vox ? &st->vm : NULL, &st->at, st->page_names, st->ntx, &st->res, st->ph,
                         st->backend_name, st->mean_lum, st->sort_seconds, st->mem, &st->dres, st->job, st->wr, st->bake_prep);
    }
    if (!c->quiet) print_summary(st);
    /* every rank has done its share: the others, waiting since the gather, may end; should one
     * of them have failed, nothing is committed */
    if (st->job->size > 1 && job_agree(st->job, 1, 1)) return 1;
    /* the outputs replace their targets only once everything, standard output included, is
     * written (bk_outputs_commit checks the summary and --stats - first) */
    if (bk_outputs_commit(&st->io, st->err, sizeof st->err)) { bake_error("%s\n", st->err); return 1; }
    if (c->pages_auto) note_stale_pages(c, st->at.page_count);
    return 0;
}

/* The end of a bake, failed or not: the backend's thread joined, the temporary files of what
 * was not committed removed, and (unless the process ends with a successful bake) all freed. */
static int bake_end(bake_state *st, int rc)
{
    bake_cli *c = &st->c;
    if (st->bs.running) {           /* an error while the backend's thread was still at work */
        be_start_finish(&st->bs, NULL, NULL);
        if (!st->be) st->be = st->bs.be;
    }
    be_release_finish(&st->rel);
    if (st->bs_begun) {
        pthread_mutex_destroy(&st->bs.lock);
        pthread_cond_destroy(&st->bs.cv);
    }
    bk_outputs_free(&st->io);       /* what was not committed: temporary files only */
    if (rc == 0 && bake_end_fast) {   /* the process ends: its memory goes with it */
        bk_prim_free(st->gpu);
        bk_backend_free(st->be);
        return rc;
    }
    for (int k = 0; k < c->noscale; ++k) free((char *)c->oscale_pat[k]);
    free(c->oscale_pat); free(c->oscale_f); free(st->tri_scale);
    free(st->rgb); free(st->tcol); free(st->tx); free(st->refs); free(st->cov); free(c->points); free(c->scenes); free(c->devices);
    free(st->rects); free(st->mtl_path); free(st->page_idx); free(st->page0);
    for (int p = 0; st->page_names && p < st->at.page_count; ++p) free(st->page_names[p]);
    free(st->page_names);
    bk_prim_free(st->gpu);
    bk_bake_data_free(&st->bd);
    bk_atlas_free(&st->at);
    bk_accel_free(&st->a);
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

static int bake_run(int argc, char **argv, bake_job *job)
{
    bake_state st;
    memset(&st, 0, sizeof st);
    st.t_start = bk_time_now();
    st.argc = argc; st.argv = argv; st.job = job;
    for (int k = 0; k < PH_COUNT; ++k)
        if (phase_run[k](&st)) return bake_end(&st, st.rc);
    return bake_end(&st, bake_report(&st));
}

int bk_cmd_bake(int argc, char **argv)
{
    bake_job job;
    memset(&job, 0, sizeof job);
    job.rank = bk_world_rank();
    job.size = bk_world_size();
    bake_error_quiet = job.size > 1 && job.rank != 0;
    bake_last_error[0] = 0;
    int rc = bake_run(argc, argv, &job);
    /* this rank stopped before an agreement the others are waiting at: it makes it, as a failure */
    if (job.size > 1 && !job.stopped) {
        job_agree(&job, 0, 1);
        if (!rc) rc = 1;
    }
    free(job.taken);
    return rc;
}
