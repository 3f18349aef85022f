/* bake.h - the bake driver: shading data for the kernels, bounded launches, progress.
 *
 * Pipeline: bk_scene + bk_accel + texels (atlas.h) -> bk_bake_data (file-ordered triangles,
 * materials, emitter CDF, point lights) -> backend bake in slices, each one launch of at most
 * max_launch_ms (a desktop GPU's watchdog resets the device after ~2 s) -> rgb per texel.
 */
#ifndef BK_BAKE_HOST_H
#define BK_BAKE_HOST_H

#include "accel.h"
#include "backend.h"
#include "bk_bake.h"
#include "material.h"
#include "scene.h"

typedef struct bk_bake_data {
    bk_f4    *tris;      /* 3 per triangle, file order (see bk_bake_data_build_hit); v0.w = material index */
    uint32_t  tri_count; /* the shading triangles (a voxel scene's: its surface's, not the accel's) */
    bk_f4    *materials; /* 2 per material (kd, ke); the last one is the default material */
    uint32_t  material_count;
    uint32_t *emit_tris;
    float    *emit_cdf;
    uint32_t  emit_count;
    float     emit_total;
    uint32_t *emit_sub;       /* per emitter: 0, or 1 + its sub-triangle (NULL: no emission map) */
    uint32_t *emit_grid;      /* per triangle: its sub-triangles' first emit_lum | n << BK_EMIT_GRID_SHIFT */
    float    *emit_lum;       /* per sub-triangle: mean emitted rgb sum */
    uint32_t  emit_lum_count; /*   */
    bk_f4    *tri_uv;         /* 2 per triangle: texture coordinates (NULL: no maps) */
    bk_f4    *points;         /* 2 per point light */
    uint32_t  point_count;
} bk_bake_data;

/* points: 6 floats per light (x y z, r g b intensity). pool: the scene's texture pool
 * (material.h; NULL for none), the one the accel's view carries (bk_accel_set_surface). */
/* The same when only triangles [0, hit_tris) can be hit (a voxel scene's surface: its own
 * triangles come first, its quads are traced as voxels): the others are kept only when they emit,
 * and emit_tris names them by their place in tris. The GPU then holds a few emitters instead of
 * millions of quads. */
int  bk_bake_data_build_hit(const bk_scene *s, const bk_tex_pool *pool, uint32_t hit_tris, const float *points,
                            uint32_t point_count, bk_bake_data *out, char *err, size_t err_size);
int  bk_bake_data_build(const bk_scene *s, const float *points, uint32_t point_count, bk_bake_data *out, char *err,
                        size_t err_size);
void bk_bake_data_free(bk_bake_data *d);
bk_bake_view bk_bake_data_view(const bk_bake_data *d, const bk_accel *a);

/* Point light i's mode (enum bk_light_mode; BK_LIGHT_BAKED once built). */
void bk_bake_data_point_mode(bk_bake_data *d, uint32_t i, uint32_t mode);

typedef struct bk_bake_run_opts {
    bk_bake_params params;
    bk_trace_opts  trace;
    double         max_launch_ms; /* GPU: longest single launch */
    int            progress;      /* progress on stderr: a bar on a terminal, else a line every
                                     10 % or 10 s */
    float *variance;              /* NULL, or w * h floats that get each baked pixel's variance
                                     of its mean luminance (the sample variance / spp; 0 where
                                     nothing was baked): what the denoiser weighs by */
    /* With params.directional: each texel's directional means (bk_bake_dir_sample, bands x, y, z)
     * into dir[0..2], images of 3 floats per pixel (as rgb; a NULL one is not written), or, with
     * texel_col, into texel_dir (3 float4s per texel, rgb in each; w 0). Zero inside geometry. */
    float *dir[3];
    bk_f4 *texel_dir;
    /* With params.mask_count: each texel's shadowmask (bk_bake_path.mask over spp: per channel the
     * share of its samples' shadow rays that reached the channel's light), channel c into
     * mask[c / 3] (images of 3 floats per pixel; a NULL one is not written), also in a bake into
     * texel_col (the mask is not denoised). Zero inside geometry. */
    float *mask[2];
    bk_f4 *texel_col; /* NULL, or n float4s that get each texel's mean rgb and, in w,
                         the variance of its mean luminance (as variance; all 0 for a
                         texel inside geometry) instead of the image: rgb and
                         variance are then not written (rgb may be NULL) */
    /* A share of the bake (several processes of an mpirun job, world.h): the texels are cut into
     * granules of `granule` texels (0: BK_BAKE_GRANULE), and only this process's granules are
     * baked; the other texels are left alone (their texel_col and coverage untouched, their
     * pixels of rgb and variance 0 as the zeroed image has them, not counted in the result).
     * ranks 0 or 1: all of them. Which granules are this process's:
     *   - next_granule NULL: a static interleave, the granules g with g % ranks == rank;
     *   - else as they are asked for: next_granule(granule_ctx) returns the number of the next
     *     granule of the whole job (the processes' calls together count 0, 1, 2, ...; it keeps
     *     the numbers for the gather), so a faster process takes more of them.
     * A texel's result never depends on the split (random numbers are keyed on texel and
     * sample, and a block of texels never crosses a granule). */
    uint32_t rank, ranks, granule;
    uint64_t (*next_granule)(void *ctx);
    void *granule_ctx;
    /* NULL, or called once (with texels_kept_ctx) when the backend keeps its own copy of the
     * texels (caps().keeps_texels) and every device has begun the bake, from the thread of the
     * last one to begin: the caller may then give the texels' memory back, keeping their refs
     * (bk_texels_compact), and returns those refs (pixel and triangle, in texel order), from
     * which the driver reads the pixels from then on; or NULL, and the texels stay. The image
     * and its variance are zeroed only after it (not beside all the texels). */
    const bk_texel_ref *(*texels_kept)(void *ctx);
    void *texels_kept_ctx;
    /* For bk_bake_texels with texels NULL, on a backend that keeps its own copy of the texels
     * (caps().keeps_texels) only: the texels are made a slice at a time (BK_BAKE_MAKE of them),
     * make_texels(make_texels_ctx, first, count, out) writing texels [first, first + count) into
     * out, and handed to every device (bake_texels), so the host never holds them all (32 B
     * each); texel_refs (n) gives their pixels. make_slice: texels per slice (0: BK_BAKE_MAKE). */
    void (*make_texels)(void *ctx, uint32_t first, uint32_t count, bk_texel *out);
    void               *make_texels_ctx;
    const bk_texel_ref *texel_refs;
    uint32_t            make_slice;
    /* With texel_refs: where every device has bake_refs, the devices make the texels themselves
     * from the refs and this (make_texels is then not called). NULL: the host makes them. */
    const bk_texel_src *texel_src;
} bk_bake_run_opts;

/* Texels made at once when the bake makes them (bk_bake_run_opts.make_texels): 8 MB. */
#define BK_BAKE_MAKE (1u << 18)

/* One device's share of a bake on several (--devices; bk_bake_result.dev). */
#define BK_BAKE_MAX_DEVICES 64
typedef struct bk_bake_device {
    uint64_t texels; /* texels it baked (every sample of each) */
    uint64_t rays;
    uint32_t blocks;       /* blocks of texels it took */
    double   busy_seconds; /* its time in bake launches (a GPU's: kernel time) */
} bk_bake_device;

/* The largest granule (bk_bake_granule): what the capped CUDA bake kernel holds at once on an
 * H100 (262144 texels), so a granule never cuts a GPU's block short. */
#define BK_BAKE_GRANULE (1u << 18)

/* The granule for n texels over ranks processes: BK_BAKE_GRANULE, halved (down to 16384, the
 * fetch slice) until every rank gets at least 8 granules, so that a static interleave evens out
 * the texels' different costs. The same on every rank (it depends on n and ranks only). */
uint32_t bk_bake_granule(uint32_t n, uint32_t ranks);

/* 1 when texel i belongs to rank's share (bk_bake_run_opts: rank, ranks, granule). */
static inline int bk_bake_share_has(uint32_t i, uint32_t rank, uint32_t ranks, uint32_t granule)
{
    return ranks <= 1 || (i / (granule ? granule : BK_BAKE_GRANULE)) % ranks == rank;
}
/* The number of texels of [0, n) in rank's share. */
uint32_t bk_bake_share_count(uint32_t n, uint32_t rank, uint32_t ranks, uint32_t granule);

typedef struct bk_bake_result {
    bk_trace_totals totals; /* rays, nodes...: the sums over the devices; seconds = time
                               in bake launches, on the busiest device */
    int devices;            /* the backend's devices (caps().devices), the first
                               BK_BAKE_MAX_DEVICES of them in dev */
    bk_bake_device dev[BK_BAKE_MAX_DEVICES];
    double         wall_seconds;   /* the whole bake phase */
    double         texels_seconds; /* of it: texels made from their refs and handed to the
                                      devices before the launches (make_texels) */
    double begin_seconds;          /* of texels_seconds: the devices' bake_begin (the shading data
                                      uploaded, the sums zeroed) */
    int texels_made;               /* where the texels were made: 0 given whole, 1 on the host
                                      from their refs (make_texels), 2 by the devices (bake_refs) */
    double   fetch_seconds;        /* of it: the sums fetched and turned into colours */
    uint32_t launches;
    double   longest_launch_ms;
    uint32_t invalid; /* texels inside geometry, left to dilation */
} bk_bake_result;

/* Memory the rest of a bake needs once the atlas is known (pixels in the image, texels covered),
 * in bytes: on the host, its largest moment (rasterizer, bake, denoiser, fill or write: the
 * texels or, on_device, only their refs; the float image or the texels' colours; coverage; the
 * CPU backend's sums; the encoder's buffers) and, when the backend has memory of its own
 * (on_device: it keeps its own copy of the texels), there (texels and sums). The scene and the
 * trees are already in memory when it is asked, and not counted. */
void bk_bake_estimate(uint64_t pixels, uint64_t texels, int on_device, uint64_t *host, uint64_t *device);
/* What a directional bake (bk_bake_params.directional) needs on top of it. */
void bk_bake_estimate_dir(uint64_t pixels, uint64_t texels, int on_device, uint64_t *host, uint64_t *device);
/* What a shadowmask of `channels` channels (bk_bake_params.mask_count) needs on top of it. */
void bk_bake_estimate_mask(uint64_t pixels, uint64_t texels, int on_device, uint32_t channels, uint64_t *host,
                           uint64_t *device);

/* Bakes n texels (sorted by pixel; NULL: made here, see bk_bake_run_opts.make_texels) into rgb
 * (3 floats per pixel of a w x h image, which it zeroes first); coverage (w * h) loses the texels found inside
 * geometry. The accel must already be uploaded to be. A backend over several devices (caps().devices > 1) bakes on all
 * of them at once, a thread each, every device taking the next block of texels as it finishes one (so a slower device
 * takes fewer); a block's samples all run on one device, and the result is the same bytes as on one. */
int bk_bake_texels(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, int w, int h,
                   const bk_bake_run_opts *o, float *rgb, uint8_t *coverage, bk_bake_result *res, char *err,
                   size_t err_size);

#endif
