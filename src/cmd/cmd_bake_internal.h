/* cmd_bake_internal.h - what the files of the bake command (cmd_bake*.c, only those) share: its
 * options, its job of several processes, its phases, and what each file does for the driver:
 *   cmd_bake.c          the driver: one function per phase on a state, the summary, the error line
 *   cmd_bake_opts.c     the options and the help text
 *   cmd_bake_backend.c  the backend's start and release, each on a thread of its own
 *   cmd_bake_texels.c   the texels' ray order, their refs and the exposure
 *   cmd_bake_job.c      a job of several processes: the agreements, the split and the gather
 *   cmd_bake_out.c      the files: their plan, page names, the glTF and the stats JSON
 *   cmd_bake_dir.c      --directional: the bands' files and encodings
 *   cmd_bake_mem.c      the memory estimate against what the machine has
 *   cmd_bake_scene.c    the scenes and the atlas, the way `baker view` (cmd_view.c) takes too
 */
#ifndef BK_CMD_BAKE_INTERNAL_H
#define BK_CMD_BAKE_INTERNAL_H

#include "atlas.h"
#include "bake.h"
#include "cli.h"
#include "denoise.h"
#include "material.h"
#include "outputs.h"
#include "gpu_ops.h"
#include "view.h"
#include "voxmesh.h"

#include <pthread.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

/* Every error of the bake goes through here (cmd_bake.c): one line on stderr, kept for the job's
 * agreement (world.h) when several processes bake together; bk_cmd_bake_error_text is the last. */
void        bk_cmd_bake_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *bk_cmd_bake_error_text(void);

typedef struct bk_cmd_bake_cli {
    const char **scenes; /* nscenes SCENE arguments, baked together */
    int          nscenes;
    const char  *scene; /* names the scene(s) in messages: the path, or "A + B ..." */
    char         scene_label[1024];
    /* -o: every lightmap file, one of each image type (.png, .hdr, .exr), the PNG first when
     * there is one; out is outs[0], the one the glTF, --preview and the messages name */
#define BK_CMD_BAKE_MAX_OUTS 3
    const char *outs[BK_CMD_BAKE_MAX_OUTS];
    int         nouts;
    const char *out;
    /* --mesh-out: at most one OBJ (mesh_obj) and one glTF (mesh_gltf: .gltf or .glb); mesh_out
     * is the glTF's when there is one (bk_cmd_bake_write_gltf writes it), else the OBJ's */
    const char     *mesh_obj, *mesh_gltf, *mesh_out;
    const char     *stats;
    const char     *preview; /* --preview FILE: the baked scene seen by view's camera (view.h) */
    bk_view_opts    view;    /* its camera, size and mode (bk_cmd_view_opts, cmd_view.h) */
    int             texels_per_voxel, pages_auto;
    int             writer; /* this process writes the outputs: a lone one, or rank 0 of a job */
    bk_cli_trace    t;
    bk_atlas_opts   atlas;
    bk_bake_params  p;
    float           exposure, max_launch_ms, max_memory_gb;
    int             quiet, sky_given, ao_given, exposure_auto, bin_rays;
    int             denoise;       /* -1: by --mode (on for light), 0 off, 1 on */
    int             directional;   /* --directional: enum bk_cmd_dir */
    float           probe_spacing; /* --probes SPACING (0: none) */
    uint32_t        probe_spp;     /* --probe-spp */
    const char     *probes_out;    /* --probes-out, or probes_name: NAME_probes.json beside out */
    char            probes_name[4096];
    int             shadowmask;      /* --shadowmask */
    const char     *mask_out;        /*   its file: NAME_shadowmask.png beside out */
    char            mask_name[4096]; /*   */
    int             mask_point[4];   /*   its channels' lights: -1 the sun, else a point light */
    bk_denoise_opts dn;
    float          *points;      /* --point: 6 floats each */
    uint8_t        *point_modes; /* and its mode (enum bk_light_mode) */
    uint32_t        point_count;
    const char    **oscale_pat; /* --object-scale PATTERN=F, in the order given */
    float          *oscale_f;
    int             noscale;
    int            *devices; /* --devices LIST, ndevices of them; NULL: all */
    int             ndevices;
} bk_cmd_bake_cli;


/* A job of several processes (world.h: mpirun), as the bake sees it. Its ranks make the same
 * collective calls in the same order: two agreements (bk_cmd_bake_job_agree: after the bake, before the
 * gather; at the end, once rank 0 has written), unless one fails, when every rank stops. A rank
 * that fails anywhere else makes the agreement it was heading for as a failure (bk_cmd_bake). */
typedef struct bk_cmd_bake_job {
    int       rank, size; /* size 1: a lone process */
    int       stopped;    /* no agreement is left to make: one failed, or the last one passed */
    uint32_t  granule;    /* texels per granule of the split (bake.h) */
    uint32_t  granules;   /* granules of the texels in all */
    uint32_t *taken;      /* the granules this rank took (bk_cmd_bake_job_next_granule), in that order */
    uint32_t  ntaken;
    uint64_t  gather_bytes;   /* what rank 0 received */
    double    wait_seconds;   /* in the agreement after the bake: for the slowest rank */
    double    gather_seconds; /* the check, the counters' sums and the gather */
    int       own_threads;    /* the threads are the job's choice (no --threads) */
} bk_cmd_bake_job;


/* The phases of a bake, in order; every second of the command from its start to the stats
 * belongs to one of them (`baker bench bake` reports the wall time no phase accounts for):
 * startup = options and files checked, plus any wait for the backend's start (a CUDA context,
 * made on a thread while loading, building and the atlas run: bk_cmd_bake_start); upload = any wait for
 * the tree's upload that the atlas did not hide; free = the big buffers and the backend released
 * before the stats are written, or the wait for the backend's release on its thread that the
 * write did not hide (bk_cmd_bake_release). */
#define BAKE_PHASES(X)                                                                                 \
    X(PH_STARTUP, startup)                                                                             \
    X(PH_LOAD, load)                                                                                   \
    X(PH_BUILD, build)                                                                                 \
    X(PH_UPLOAD, upload) X(PH_ATLAS, atlas) X(PH_BAKE, bake) X(PH_DENOISE, denoise) X(PH_WRITE, write) \
        X(PH_FREE, free)
/* The write phase's steps, timed apart for the stats ("write"): the exposure's statistics, the
 * fill of texels inside geometry, the dilation of the padding, the images' encoding, the mesh and
 * the --preview image (its render and encoding). */
#define WRITE_STEPS(X)       \
    X(WR_EXPOSURE, exposure) \
    X(WR_FILL, fill) X(WR_DILATE, dilate) X(WR_IMAGES, images) X(WR_MESH, mesh) X(WR_PREVIEW, preview)
/* each list as an enum, and the names the stats print (cmd_bake.c) */
#define STEP_ENUM(E, n) E,
enum bk_cmd_bake_phase { BAKE_PHASES(STEP_ENUM) PH_COUNT };
extern const char *const bk_cmd_bake_phase_names[PH_COUNT];
enum bk_cmd_bake_write_step { WRITE_STEPS(STEP_ENUM) WR_COUNT };
extern const char *const bk_cmd_bake_write_step_names[WR_COUNT];
#undef STEP_ENUM


/* memory figures (bytes): estimates made before the texels, and the peaks */
enum bk_cmd_bake_mem { MEM_EST_HOST, MEM_EST_DEVICE, MEM_PEAK_HOST, MEM_PEAK_DEVICE, MEM_COUNT };


static inline double bk_cmd_bake_gb(uint64_t bytes) { return (double)bytes / 1e9; }

/* cmd_bake_opts.c: the options into c; 0, or -1 after printing why. */
int bk_cmd_bake_parse(bk_cmd_bake_cli *c, int argc, char **argv);
/* The defaults of every option, before the parse. */
void bk_cmd_bake_defaults(bk_cmd_bake_cli *c);
/* The atlas's options (--size, --texels-per-unit, --object-scale, --padding, --uv,
 * --texels-per-voxel, --pages), rows setting a bk_cmd_bake_cli: `baker view` takes them too, so
 * that it rebuilds the bake's atlas. */
extern const bk_cli_opt bk_cmd_bake_atlas_opts[];
/* After the parse: a SCENE was given, its label for messages (c->scene), and the atlas options
 * that go together; 0, or -1 after printing why. */
int bk_cmd_bake_check_scenes(bk_cmd_bake_cli *c);

/* cmd_bake_scene.c: what the bake and `baker view` share of the way to the atlas. */
/* Every SCENE of c loaded and appended into s (one a scratch scene), the files each read
 * registered with io as inputs. 0, or the exit status (2: an input clashes with an output; 1)
 * after printing why. */
int bk_cmd_bake_load_scenes(const bk_cmd_bake_cli *c, bk_outputs *io, bk_scene *s, bk_scene *one);
/* The atlas of surf (s's triangles, then any voxel quads: --object-scale names s's objects):
 * --object-scale into *tri_scale (malloc'ed, the caller frees it), then bk_atlas_build with
 * c->atlas. 0, or 1 after printing why. */
int bk_cmd_bake_make_atlas(bk_cmd_bake_cli *c, const bk_scene *s, const bk_scene *surf, float **tri_scale,
                           bk_atlas *at);

/* cmd_bake_backend.c */
/* The backend's start on a thread of its own, while the main thread loads, builds and makes the
 * atlas: init and supports() (a CUDA context: about 0.25 s), then, once the main thread hands
 * over the accel (bk_cmd_bake_start_give), upload(). The main thread learns of a failed start as soon as
 * it hands the accel over, if the start is done by then, and else at bk_cmd_bake_start_finish, before it
 * first touches the backend. */
typedef struct bk_cmd_bake_start {
    const char *name;
    const int  *devices; /* --devices, ndevices of them; NULL: all the backend has, or
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
    int                  ok;      /* 0: msg says why */
    int                  running; /* the thread is to be joined */
    pthread_t            th;
    char                 note[512]; /* e.g. "auto" falling back to the CPU */
    char                 msg[1024];
} bk_cmd_bake_start;

void bk_cmd_bake_start_begin(bk_cmd_bake_start *b, const char *name, const int *devices, int ndevices, int local_rank,
                             int local_size, const bk_trace_opts *opts);
int  bk_cmd_bake_start_give(bk_cmd_bake_start *b, const bk_accel_view *v);
bk_backend *bk_cmd_bake_start_finish(bk_cmd_bake_start *b, double *start_wait, double *upload_wait);
/* The GPU let go on a thread of its own once the bake no longer needs it (bk_backend_free_last):
 * its teardown runs beside the write instead of in the process's exit. */
typedef struct bk_cmd_bake_release {
    bk_gpu_ops *gpu;
    bk_backend *be;
    pthread_t   th;
    int         running;
} bk_cmd_bake_release;
void *bk_cmd_bake_release_run(void *arg); /* a pthread start routine */
void  bk_cmd_bake_release_finish(bk_cmd_bake_release *r);

/* cmd_bake_texels.c */
/* The texels of alpha-tested triangles where the surface is cut away leave the bake: removed
 * from tx (or refs, whichever is not NULL; *n shrinks, the order stays) and marked BK_COVER_CUT
 * in cov, so neither the bake, the denoiser, the dilation nor the fill reaches them. Returns how
 * many, or BK_NONE with err (out of memory). */
uint32_t bk_cmd_bake_cut_texels(const bk_tex_pool *pool, const bk_scene *s, const bk_atlas *a, bk_texel *tx,
                                bk_texel_ref *refs, uint32_t *n, uint8_t *cov, char *err, size_t err_size);
int      bk_cmd_bake_bin_texels(bk_gpu_ops *gpu, bk_texel *tx, uint32_t n, const bk_accel *a, double *sort_seconds,
                                char *err, size_t err_size);
float    bk_cmd_bake_auto_exposure(bk_gpu_ops *gpu, const float *rgb, const uint8_t *cov, size_t npx, double *mean_lum,
                                   char *err, size_t err_size);
/* cmd_bake_write.c: bk_cmd_bake_auto_exposure's result without a GPU, on the pool; the PNG clip
 * hint (the share of baked texels with a channel over 1 at exposure, and the exposure that keeps
 * 99 % of them below 1), on the pool. */
/* --exposure auto's bin of a colour (1/8 stop, 2^-20 to 2^44; 0 black) and its luminance in *lum,
 * and the exposure that maps the 99th percentile of such bins' counts[512] to white: the one rule
 * of the CPU and GPU paths. */
static inline uint32_t bk_cmd_bake_lum_bin(const float *c, float *lum)
{
    float l = 0.2126f * c[0] + 0.7152f * c[1] + 0.0722f * c[2];
    int   b = l > 0 ? (int)floorf((log2f(l) + 20.0f) * 8.0f) + 1 : 0;
    *lum = l;
    return b < 0 ? 0 : b > 511 ? 511 : (uint32_t)b;
}
float bk_cmd_bake_exposure_of(const uint32_t counts[512]);
float bk_cmd_bake_auto_exposure_cpu(const float *rgb, const uint8_t *cov, size_t npx, double *mean_lum, char *err,
                                    size_t err_size);
void  bk_cmd_bake_clip_stats(const float *rgb, const uint8_t *cov, size_t npx, float exposure, double *share,
                             float *fit);
/* bk_bake_run_opts.make_texels: the texels of refs, made as the rasterizer would have. */
typedef struct bk_cmd_bake_made_texels {
    const bk_scene     *s;
    const bk_atlas     *a;
    const bk_texel_ref *refs;
} bk_cmd_bake_made_texels;
void bk_cmd_bake_make_texels(void *ctx, uint32_t first, uint32_t count, bk_texel *out);
/* bk_bake_run_opts.texels_kept: the backend has its own copy of the texels, so the host keeps
 * only their refs (8 B each of 32) through the fetch, the denoiser, the image and the fill. */
typedef struct bk_cmd_bake_kept_texels {
    bk_texel     **tx;
    bk_texel_ref **refs;
    uint32_t       n;
} bk_cmd_bake_kept_texels;
const bk_texel_ref *bk_cmd_bake_texels_kept(void *ctx);

/* cmd_bake_job.c */
int      bk_cmd_bake_job_agree(bk_cmd_bake_job *job, int ok, int last);
uint64_t bk_cmd_bake_job_next_granule(void *ctx);
uint64_t bk_cmd_bake_job_key(const bk_cmd_bake_job *job, const bk_cmd_bake_cli *c, const bk_texel *tx,
                             const bk_cmd_bake_made_texels *mt, uint32_t ntx, int img_h);
int      bk_cmd_bake_job_share(bk_cmd_bake_job *job, const bk_cmd_bake_cli *c, uint64_t key, const bk_texel *tx,
                               const bk_texel_ref *refs, uint32_t ntx, uint8_t *cov, bk_f4 *tcol, bk_bake_result *res);

/* cmd_bake_out.c */
/* The bake's outputs as bk_cmd_bake_plan_files registers them: their indices in the bk_outputs,
 * -1 where not asked for. */
enum bk_cmd_bake_out {
    OUT_LIGHTMAP,
    OUT_MESH_OBJ,
    OUT_STATS,
    OUT_PREVIEW,
    OUT_MESH_GLTF,
    OUT_PROBES,
    OUT_MASK,
    OUT_COUNT
};
/* idx[OUT_LIGHTMAP] is -o outs[0]'s (its first page); lm_idx[k] each -o outs[k]'s (its first
 * page: page0[k] with --pages auto, NULL otherwise), lm_idx[0] == idx[OUT_LIGHTMAP]. */
int   bk_cmd_bake_plan_files(const bk_cmd_bake_cli *c, bk_outputs *io, int idx[OUT_COUNT], int *lm_idx,
                             char *const *page0);
char *bk_cmd_bake_page_name(const char *out, int k);
/* for -o out: the pages NAME-K of an earlier bake beyond this one's */
void bk_cmd_bake_note_stale_pages(const bk_cmd_bake_cli *c, const char *out, int pages);
int  bk_cmd_bake_write_gltf(FILE *f, const bk_cmd_bake_cli *c, const bk_scene *src, const bk_scene *surf,
                            const bk_voxmesh *vm, const bk_atlas *at, char **page_names, const char *const *files,
                            const float *rgb, const bk_tex_pool *pool, uint32_t probe_count, char *err, size_t err_size);
/* n comma-separated finite floats of option opt's value val into out: 0, or -1 after a message. */
int bk_cmd_bake_parse_floats(const char *opt, const char *val, int n, float *out);

/* What --stats says of the scene's textures and cut-outs. */
typedef struct bk_cmd_bake_tex {
    const bk_tex_pool *pool;
    uint32_t           cut;           /* texels cut away */
    double             build_seconds; /* the pool made from the decoded images */
} bk_cmd_bake_tex;
/* --probes, as the stats see them: n probes (0: none), invalid of them, spp rays each; seconds
 * of the whole step (the grid, the bake, its start and end) and its trace (totals). */
typedef struct bk_cmd_bake_probes {
    uint32_t        n, invalid, spp;
    double          seconds;
    bk_trace_totals totals;
} bk_cmd_bake_probes;
/* io: every file of the run, listed as "outputs" */
void bk_cmd_bake_write_stats(FILE *f, const bk_cmd_bake_cli *c, const bk_outputs *io, const bk_scene *s,
                             const bk_voxmesh *vm, const bk_atlas *at, char **page_names, uint32_t texels,
                             const bk_bake_result *r, const double ph[PH_COUNT], const char *backend, double mean_lum,
                             double sort_seconds, const uint64_t mem[MEM_COUNT], const bk_denoise_result *dn,
                             const bk_cmd_bake_job *job, const double wr[WR_COUNT], double bake_prep,
                             const bk_cmd_bake_tex *tex, const bk_cmd_bake_probes *probes);

/* cmd_view.c: the scene s (its accel on be) seen through view's camera, with the lightmap lm
 * (linear, atlas at's layout), written to output idx of io as `path`. 0, or 1 after printing. */
int bk_cmd_view_write(bk_backend *be, const bk_trace_opts *t, const bk_scene *s, const bk_atlas *at,
                      const bk_view_lightmap *lm, const bk_view_opts *view, bk_outputs *io, int idx, const char *path,
                      bk_view_result *r);

/* cmd_bake_dir.c: --directional's files, beside each -o but an .hdr (whose RGBE has no sign). */
enum bk_cmd_dir { BK_CMD_DIR_OFF = 0, BK_CMD_DIR_SH, BK_CMD_DIR_DOMINANT };
typedef struct bk_cmd_bake_dir {
    int    mode;    /* enum bk_cmd_dir */
    float *band[3]; /* the bands x, y, z: an image each (3 floats per pixel, the bake's layout) */
    char  *names[BK_CMD_BAKE_MAX_OUTS][3]; /* per -o: its files (sh: 3, dominant: 1) */
    int    idx[BK_CMD_BAKE_MAX_OUTS][3];   /*   and their outputs; -1: none */
} bk_cmd_bake_dir;
/* Files per -o: 3 for sh, 1 for dominant; file b's name beside the lightmap out for mode (enum
 * bk_cmd_dir; malloc'ed, NULL when out of memory): what the bake writes and `baker view` reads. */
int   bk_cmd_bake_dir_files(const bk_cmd_bake_cli *c);
char *bk_cmd_bake_dir_name(int mode, const char *out, int b);
/* The files named and registered as outputs (a writer only); 0, else the exit status after
 * printing why (2: a clash with an input). */
int bk_cmd_bake_dir_plan(const bk_cmd_bake_cli *c, bk_outputs *io, bk_cmd_bake_dir *d);
/* The bands' images (zeroed): 0, or 1 after printing why. */
int bk_cmd_bake_dir_alloc(bk_cmd_bake_dir *d, size_t npx);
/* The texels' bands (3 per texel, as the denoiser left them: bk_denoise_texel_bands) into the
 * bands' images at their pixels (refs). */
void bk_cmd_bake_dir_from_texels(bk_cmd_bake_dir *d, const bk_texel_ref *refs, const bk_f4 *band, uint32_t n);
/* Every file, encoded from the bands and the map rgb (w x h, the bake's linear values): 0, or -1
 * with one line in err. */
int  bk_cmd_bake_dir_write(const bk_cmd_bake_dir *d, const bk_cmd_bake_cli *c, bk_outputs *io, const float *rgb, int w,
                           int h, char *err, size_t err_size);
void bk_cmd_bake_dir_free(bk_cmd_bake_dir *d);

/* cmd_bake_mem.c */
int bk_cmd_bake_check_memory(const bk_cmd_bake_cli *c, bk_backend *be, const bk_atlas *at, uint64_t est[MEM_COUNT]);
int bk_cmd_bake_check_memory_early(const bk_cmd_bake_cli *c, uint64_t texels);

#endif
