/* bake.c - the bake driver (see bake.h): shading data, slices sized to the launch budget,
 * progress bar, and the texels-inside-geometry rule. */
#include "bake.h"
#include "pool.h"
#include "sides.h"
#include "util.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int bk_bake_data_build(const bk_scene *s, const float *points, uint32_t point_count, bk_bake_data *out, char *err,
                       size_t err_size)
{
    return bk_bake_data_build_hit(s, NULL, s->tri_count, points, point_count, out, err, err_size);
}

static uint32_t data_material(const bk_scene *s, uint32_t t, uint32_t nm)
{
    return s->tri_material && s->tri_material[t] != BK_NONE && s->tri_material[t] < s->material_count
               ? s->tri_material[t]
               : nm - 1;
}

/* The material records: kd (w: its albedo map's texture record, bits, or BK_NONE), ke (w: its
 * emission map's); the last one is the default material. */
static void data_materials(const bk_scene *s, const bk_tex_pool *pool, bk_bake_data *out)
{
    for (uint32_t m = 0; m < out->material_count; ++m) {
        const bk_material *mt = m < s->material_count ? &s->materials[m] : NULL;
        uint32_t           kd_tex = mt ? bk_tex_pool_map(pool, m, BK_MAT_MAP_KD) : BK_NONE;
        uint32_t           ke_tex = mt ? bk_tex_pool_map(pool, m, BK_MAT_MAP_KE) : BK_NONE;
        int                by_map = mt && mt->kd_by_map && kd_tex != BK_NONE;
        bk_f4             *d = &out->materials[2 * m];
        d[0].x = by_map ? 1.0f : mt ? mt->kd[0] : 0.8f;
        d[0].y = by_map ? 1.0f : mt ? mt->kd[1] : 0.8f;
        d[0].z = by_map ? 1.0f : mt ? mt->kd[2] : 0.8f;
        d[0].w = bk_bits_float(kd_tex);
        d[1].x = mt ? mt->ke[0] : 0.0f;
        d[1].y = mt ? mt->ke[1] : 0.0f;
        d[1].z = mt ? mt->ke[2] : 0.0f;
        d[1].w = bk_bits_float(ke_tex);
    }
}

/* Grows an array of item size sz to hold n items. */
static int grow_to(void **p, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap : 256;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * sz);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

typedef struct emit_build {
    double   total;
    uint32_t ne;
    size_t   cap, lum_cap; /* entries the emitter arrays hold; floats emit_lum holds */
    int      with_sub;     /* the scene has emission maps: emit_sub is kept */
    float   *cdf;
    uint32_t lum_count;
} emit_build;

static int emit_add(bk_bake_data *out, emit_build *e, uint32_t slot, uint32_t sub, double power)
{
    if (e->ne == e->cap) {
        size_t    c = e->cap ? 2 * e->cap : 1024;
        uint32_t *t = realloc(out->emit_tris, c * sizeof *t);
        if (t) out->emit_tris = t;
        float *f = realloc(e->cdf, c * sizeof *f);
        if (f) e->cdf = f;
        uint32_t *u = e->with_sub ? realloc(out->emit_sub, c * sizeof *u) : NULL;
        if (u) out->emit_sub = u;
        if (!t || !f || (e->with_sub && !u)) return -1;
        e->cap = c;
    }
    e->total += power;
    out->emit_tris[e->ne] = slot;
    if (e->with_sub) out->emit_sub[e->ne] = sub;
    e->cdf[e->ne++] = (float)e->total;
    return 0;
}

/* The emitters of one triangle with an emission map: its sub-triangles (bk_bake.h, BK_EMIT_GRID),
 * each with the mean emitted power of the map over it (16 points), so light sampling never picks
 * one where the map is black; uniform emitters stay one entry each. */
static int emit_textured(bk_bake_data *out, emit_build *e, const bk_tex_view *tv, uint32_t slot, const bk_f4 *ke,
                         const float uv[6], double area)
{
    const bk_tex_rec *r = &tv->recs[bk_float_bits(ke->w)];
    double            du1 = (uv[2] - uv[0]) * r->su * r->w, dv1 = (uv[3] - uv[1]) * r->sv * r->h;
    double            du2 = (uv[4] - uv[0]) * r->su * r->w, dv2 = (uv[5] - uv[1]) * r->sv * r->h;
    double            texels = 0.5 * fabs(du1 * dv2 - du2 * dv1);
    uint32_t          n = (uint32_t)ceil(sqrt(texels / 4.0));
    n = n < 1 ? 1 : n > BK_EMIT_GRID_MAX ? BK_EMIT_GRID_MAX : n;
    if (grow_to((void **)&out->emit_lum, &e->lum_cap, (size_t)e->lum_count + 2 * n * n, sizeof(float))) return -1;
    out->emit_grid[slot] = e->lum_count | n << BK_EMIT_GRID_SHIFT;
    const bk_f4 uv01 = { uv[0], uv[1], uv[2], uv[3] }, uv2 = { uv[4], uv[5], 0, 0 };
    for (uint32_t k = 0; k < 2 * n * n; ++k) {
        float c[6], sum = 0.0f;
        bk_emit_sub_corners(n, k, c);
        if (c[0] < 0.0f) {
            out->emit_lum[e->lum_count + k] = 0.0f;
            continue;
        }
        for (int q = 0; q < 16; ++q) { /* a 4 x 4 grid of points in the sub-triangle */
            float su = sqrtf(((float)(q / 4) + 0.5f) / 4.0f), sv = ((float)(q % 4) + 0.5f) / 4.0f, b1, b2, u, v;
            bk_emit_sub_point(c, su, sv, &b1, &b2);
            bk_uv_at(uv01, uv2, b1, b2, &u, &v);
            bk_f4 t = bk_tex_sample(tv, bk_float_bits(ke->w), u, v);
            sum += ke->x * t.x + ke->y * t.y + ke->z * t.z;
        }
        float lum = sum / 16.0f;
        out->emit_lum[e->lum_count + k] = lum;
        if (lum > 0.0f && emit_add(out, e, slot, k + 1, area / ((double)n * n) * lum)) return -1;
    }
    e->lum_count += 2 * n * n;
    return 0;
}

/* The shading triangles and the emitters. */
static int data_tris(const bk_scene *s, const bk_tex_pool *pool, uint32_t hit_tris, bk_bake_data *out)
{
    const bk_tex_view tv = bk_tex_pool_view(pool);
    emit_build        e;
    memset(&e, 0, sizeof e);
    e.with_sub = out->emit_grid != NULL;
    uint32_t n = s->tri_count, nm = out->material_count, kept = 0; /* stored: [0, hit_tris), then the emitters */
    int      rc = 0;
    for (uint32_t t = 0; t < n && !rc; ++t) {
        uint32_t     m = data_material(s, t, nm);
        const bk_f4 *kd = &out->materials[2 * m], *ke = &out->materials[2 * m + 1];
        float        lum = ke->x + ke->y + ke->z;
        if (t >= hit_tris && !(lum > 0)) continue;
        float p[3][3], uv[6] = { 0 };
        for (int v = 0; v < 3; ++v) {
            const float *q = s->positions + 3 * (size_t)s->tri_v[3 * t + v];
            bk_f4       *d = &out->tris[3 * (size_t)kept + v];
            d->x = p[v][0] = q[0];
            d->y = p[v][1] = q[1];
            d->z = p[v][2] = q[2];
            d->w = 0;
        }
        out->tris[3 * (size_t)kept].w = bk_bits_float(m);
        uint32_t slot = kept++;
        int      textured = bk_float_bits(kd->w) != BK_NONE || bk_float_bits(ke->w) != BK_NONE;
        if (textured) bk_scene_tri_uv(s, t, uv);
        if (textured && out->tri_uv) {
            bk_f4 *d = &out->tri_uv[2 * (size_t)slot];
            d[0].x = uv[0], d[0].y = uv[1], d[0].z = uv[2], d[0].w = uv[3];
            d[1].x = uv[4], d[1].y = uv[5], d[1].z = 0.0f, d[1].w = 0.0f;
        }
        if (!(lum > 0)) continue;
        double e1[3], e2[3];
        for (int k = 0; k < 3; ++k) {
            e1[k] = p[1][k] - p[0][k];
            e2[k] = p[2][k] - p[0][k];
        }
        double cx = e1[1] * e2[2] - e1[2] * e2[1], cy = e1[2] * e2[0] - e1[0] * e2[2],
               cz = e1[0] * e2[1] - e1[1] * e2[0];
        double area = 0.5 * sqrt(cx * cx + cy * cy + cz * cz);
        if (!(area > 0)) continue;
        if (bk_float_bits(ke->w) != BK_NONE && out->emit_grid) rc = emit_textured(out, &e, &tv, slot, ke, uv, area);
        else rc = emit_add(out, &e, slot, 0, area * lum);
    }
    out->tri_count = kept;
    for (uint32_t i = 0; i < e.ne; ++i) e.cdf[i] = (float)(e.cdf[i] / e.total);
    if (e.ne) e.cdf[e.ne - 1] = 1.0f;
    out->emit_cdf = e.cdf;
    out->emit_count = e.ne;
    out->emit_total = (float)e.total;
    out->emit_lum_count = e.lum_count;
    return rc;
}

int bk_bake_data_build_hit(const bk_scene *s, const bk_tex_pool *pool, uint32_t hit_tris, const float *points,
                           uint32_t point_count, bk_bake_data *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    uint32_t n = s->tri_count, nm = s->material_count + 1;
    int      tex = pool && pool->rec_count, emit_tex = 0;
    out->tris = malloc(sizeof(bk_f4) * 3 * (size_t)(n ? n : 1));
    out->materials = malloc(sizeof(bk_f4) * 2 * nm);
    out->points = malloc(sizeof(bk_f4) * 2 * (point_count ? point_count : 1));
    out->material_count = nm;
    if (out->materials) data_materials(s, pool, out);
    for (uint32_t m = 0; out->materials && m < nm; ++m)
        emit_tex |= bk_float_bits(out->materials[2 * m + 1].w) != BK_NONE;
    if (tex) out->tri_uv = calloc((size_t)(n ? n : 1), 2 * sizeof(bk_f4));
    if (emit_tex) out->emit_grid = calloc((size_t)(n ? n : 1), sizeof(uint32_t));
    if (!out->tris || !out->materials || !out->points || (tex && !out->tri_uv) || (emit_tex && !out->emit_grid) ||
        data_tris(s, pool, hit_tris, out)) {
        bk_bake_data_free(out);
        return bk_fail(err, err_size, "out of memory for the shading data");
    }
    if (bk_bake_tri_sides(s, hit_tris < n ? hit_tris : n, out->tris, NULL) < 0) { /* v1.w: BK_BTRI_* (sides.h) */
        bk_bake_data_free(out);
        return bk_fail(err, err_size, "out of memory for the triangles' sides");
    }
    for (uint32_t i = 0; i < point_count; ++i) {
        bk_f4 *d = &out->points[2 * i];
        d[0].x = points[6 * i];
        d[0].y = points[6 * i + 1];
        d[0].z = points[6 * i + 2];
        d[0].w = 0;
        d[1].x = points[6 * i + 3];
        d[1].y = points[6 * i + 4];
        d[1].z = points[6 * i + 5];
        d[1].w = 0;
    }
    out->point_count = point_count;
    return 0;
}

void bk_bake_data_point_mode(bk_bake_data *d, uint32_t i, uint32_t mode)
{
    if (i < d->point_count) d->points[2 * i].w = (float)mode; /* read back by bk_bake_path_next */
}

void bk_bake_data_free(bk_bake_data *d)
{
    free(d->tris);
    free(d->materials);
    free(d->emit_tris);
    free(d->emit_cdf);
    free(d->emit_sub);
    free(d->emit_grid);
    free(d->emit_lum);
    free(d->tri_uv);
    free(d->points);
    memset(d, 0, sizeof *d);
}

bk_bake_view bk_bake_data_view(const bk_bake_data *d, const bk_accel *a)
{
    bk_bake_view v;
    memset(&v, 0, sizeof v);
    v.accel = bk_accel_get_view(a);
    v.tris = d->tris;
    v.tri_count = d->tri_count;
    v.materials = d->materials;
    v.material_count = d->material_count;
    v.emit_tris = d->emit_tris;
    v.emit_cdf = d->emit_cdf;
    v.emit_count = d->emit_count;
    v.emit_total = d->emit_total;
    v.emit_sub = d->emit_sub;
    v.emit_grid = d->emit_grid;
    v.emit_lum = d->emit_lum;
    v.emit_lum_count = d->emit_lum_count;
    v.tri_uv = d->tri_uv;
    v.points = d->points;
    v.point_count = d->point_count;
    return v;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

void bk_bake_estimate(uint64_t pixels, uint64_t texels, int on_device, uint64_t *host, uint64_t *device)
{
    /* The host's largest moment, P pixels and T texels; the texels are whole (32 B) on the CPU,
     * which reads them in place, and only refs (8 B: pixel, triangle) for a device, which keeps
     * its own copy (the whole texels are made from the refs 8 MB at a time as they are uploaded:
     * bk_bake_run_opts.make_texels). The CPU compacts its texels to refs after the bake.
     *   raster   each pixel's best distance and triangle (8 B); then the triangles, coverage
     *            (1 B) and the texels                               max(8 P, 5 P + tex T)
     *   bake     coverage, the texels, and the result: the float image (12 B per pixel) or,
     *            when denoising, each texel's colour and variance (16 B); on the CPU the
     *            backend's sums (20 B) and moved positions (12 B)   P + tex T + max(12 P, 16 T)
     *                                                                 (+ 32 T on the CPU)
     *   denoise  coverage, the texels, the colours, and on the CPU a chart per texel (4 B; a
     *            device's are put in the refs) and four float4 layouts of a page (64 B per pixel
     *            of one page: not counted, the page count is not known here)
     *                                                               P + tex T + 16 T (+ 4 T)
     *   image    from the colours, slice by slice as they shrink: at most what the denoiser held
     *   fill     the image, coverage, a chart per pixel of a page (4 B), made from the refs, which
     *            then go (bk_fill_hidden_refs); then the fill's scratch (about 4 B per pixel;
     *            64 MB measured at 4096^2)                          max(8 T + 17 P, 21 P)
     *   write    the image, coverage, the 8-bit or float copy and the encoder's buffers
     *            (about 12 B per pixel; the refs are gone)         25 P
     * The scene and the trees are not counted (in memory already when this is asked). */
    const uint64_t P = pixels, T = texels;
    const uint64_t tex = on_device ? (uint64_t)sizeof(bk_texel_ref) : (uint64_t)sizeof(bk_texel);
    const uint64_t sums = (uint64_t)sizeof(bk_f4) + sizeof(float);
    const uint64_t ref = (uint64_t)sizeof(bk_texel_ref);
    uint64_t       h = max_u64(8 * P, 5 * P + tex * T);                                        /* raster */
    h = max_u64(h, P + tex * T + max_u64(12 * P, 16 * T) + (on_device ? 0 : (sums + 12) * T)); /* bake */
    h = max_u64(h, P + tex * T + 16 * T + (on_device ? 0 : 4 * T));                            /* denoise */
    h = max_u64(h, max_u64(ref * T + 17 * P, 21 * P));                                         /* fill */
    h = max_u64(h, 25 * P);                                                                    /* write */
    *host = h;
    /* + the moved positions; + the wavefront bake's buffers (kernels/cuda/cuda_backend.cu, WAVE_*), sized
     * by the texels at 64 samples: their results (20 B each, at most 8M), as many path slots of
     * about 160 B (at most 32 per thread of its trace grid: 4.3M on an H100) and a whole path
     * (164 B) per texel (at most 4 per thread): about 1 GB for a large bake */
    const uint64_t pairs = min_u64(64 * T, 8ull << 20);
    const uint64_t wave = 20 * pairs + 160 * min_u64(pairs, 4500000) + 164 * min_u64(T, 600000);
    *device = on_device ? T * ((uint64_t)sizeof(bk_texel) + sums + 12) + wave : 0;
}

void bk_bake_estimate_dir(uint64_t pixels, uint64_t texels, int on_device, uint64_t *host, uint64_t *device)
{
    /* host: the bands' images (3 x 12 B per pixel, from the bake to the write), with the texels'
     * bands for the denoiser (48 B) or the CPU backend's sums (48 B); device: the sums and the
     * wavefront's per pair results (48 B each, as many pairs as bk_bake_estimate counts) */
    const uint64_t T = texels, pairs = min_u64(64 * T, 8ull << 20);
    *host = 36 * pixels + 48 * T + (on_device ? 0 : 48 * T);
    *device = on_device ? 48 * T + 48 * pairs : 0;
}

void bk_bake_estimate_mask(uint64_t pixels, uint64_t texels, int on_device, uint32_t channels, uint64_t *host,
                           uint64_t *device)
{
    /* host: the mask's images (12 B per pixel for every 3 channels, from the bake to the write) and
     * the CPU backend's sums (16 B per texel); device: the sums and the wavefront's per pair
     * visibility word (4 B each) */
    const uint64_t T = texels, pairs = min_u64(64 * T, 8ull << 20), images = (channels + 2) / 3;
    *host = 12 * images * pixels + (on_device ? 0 : 16 * T);
    *device = on_device ? 16 * T + 4 * pairs : 0;
}

/* Where stderr is not a terminal (a log, a CI job), a line every 10 % of the work or 10 s once the
 * bake has run for a second, and one at the end. */
static void progress_line(double frac, double elapsed, double *next_frac, double *next_time)
{
    if ((frac < *next_frac && elapsed < *next_time) || frac >= 1.0 || elapsed < 1.0) return;
    double eta = frac > 0 ? elapsed * (1.0 - frac) / frac : 0.0;
    fprintf(stderr, "bake %3d%%  %.1f s, about %.1f s to go\n", (int)(frac * 100.0), elapsed, eta);
    fflush(stderr);
    while (*next_frac <= frac) *next_frac += 0.1;
    *next_time = elapsed + 10.0;
}

static void progress_draw(double frac, double elapsed, int done)
{
    int  width = 30, fill = (int)(frac * width + 0.5);
    char bar[64];
    for (int i = 0; i < width; ++i) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[width] = 0;
    double eta = frac > 0 ? elapsed * (1.0 - frac) / frac : 0.0;
    if (done) fprintf(stderr, "\rbake  [%s] 100%%  %.1f s          \n", bar, elapsed);
    else fprintf(stderr, "\rbake  [%s] %3d%%  ETA %.1f s   ", bar, (int)(frac * 100.0), eta);
    fflush(stderr);
}

/* Zeroing two buffers on background threads (each thread one slice of each). */
#define ZERO_THREADS 8
typedef struct zero_slice {
    char     *a;
    size_t    na;
    char     *b;
    size_t    nb;
    pthread_t th;
    int       started;
} zero_slice;
typedef struct zero_job {
    zero_slice s[ZERO_THREADS];
    int        n;
} zero_job;

static void *zero_run(void *arg)
{
    zero_slice *z = arg;
    if (z->na) memset(z->a, 0, z->na);
    if (z->nb) memset(z->b, 0, z->nb);
    return NULL;
}

static void zero_start(zero_job *j, void *a, size_t na, void *b, size_t nb)
{
    int cpus = bk_cpu_threads();
    j->n = cpus < 2 ? 1 : (cpus > ZERO_THREADS ? ZERO_THREADS : cpus);
    if (!na && !nb) j->n = 0; /* nothing to zero */
    for (int i = 0; i < j->n; ++i) {
        zero_slice *z = &j->s[i];
        size_t      a0 = na * (size_t)i / (size_t)j->n, a1 = na * (size_t)(i + 1) / (size_t)j->n;
        size_t      b0 = nb * (size_t)i / (size_t)j->n, b1 = nb * (size_t)(i + 1) / (size_t)j->n;
        z->a = a ? (char *)a + a0 : NULL;
        z->na = a1 - a0;
        z->b = b ? (char *)b + b0 : NULL;
        z->nb = b1 - b0;
        z->started = j->n > 1 && pthread_create(&z->th, NULL, zero_run, z) == 0;
        if (!z->started) zero_run(z); /* one core, or no thread: do it here */
    }
}

static void zero_join(zero_job *j)
{
    for (int i = 0; i < j->n; ++i)
        if (j->s[i].started) {
            pthread_join(j->s[i].th, NULL);
            j->s[i].started = 0;
        }
}

uint32_t bk_bake_granule(uint32_t n, uint32_t ranks)
{
    uint32_t g = BK_BAKE_GRANULE;
    while (ranks > 1 && g > 16384 && (uint64_t)n < (uint64_t)g * 8 * ranks) g /= 2;
    return g;
}

uint32_t bk_bake_share_count(uint32_t n, uint32_t rank, uint32_t ranks, uint32_t granule)
{
    if (ranks <= 1) return n;
    uint64_t G = granule ? granule : BK_BAKE_GRANULE, count = 0;
    for (uint64_t g = rank; g * G < n; g += ranks) count += (g + 1) * G < n ? G : n - g * G;
    return (uint32_t)count;
}

/* A bake on one or several devices (bk_bake_texels). The devices share the hand-out of blocks
 * and the progress; each has its own block size and launch pacing. */
typedef struct bake_range {
    uint32_t begin, end;
    int      dev;
} bake_range;

typedef struct bake_share {
    const bk_bake_view     *v;
    const bk_texel         *texels;
    uint32_t                n;
    const bk_bake_run_opts *o;
    uint32_t                rank, ranks, G; /* this process's share (bake.h): granules of G */
    pthread_mutex_t         lock;           /* everything below */
    uint32_t                next;           /* the first texel not yet handed out */
    uint32_t                stop;           /* the end of the granule it is in (n: no split) */
    bake_range             *ranges;         /* blocks handed out, in texel order */
    uint32_t                nranges, cap;
    int                     failed; /* a device failed: the others stop at their next block */
    double                  done, work, t0, next_frac, next_time;
    int                     show, lines;
    /* the caller's texels given back once every device holds its own copy (bk_bake_run_opts:
     * texels_kept); then the zeroing starts */
    int                 nd, begun, keeps;
    int                 made; /* the driver began every device and made its texels */
    const bk_texel_ref *refs; /* what the hook returned: pixels are read here */
    struct zero_job    *zj;
    void               *img, *var_img;
    size_t              img_bytes, var_bytes;
} bake_share;

typedef struct bake_dev {
    bake_share *S;
    bk_backend *be;
    int         k;
    int         begun; /* bake_begin succeeded: bake_end is owed */
    int         rc;
    char        err[1024];
    uint32_t    launches;
    double      longest_ms;
    pthread_t   th;
    int         started;
} bake_dev;

/* The next block of at most `want` texels for device k: 0 and [*b, *e), or -1 when none is left
 * (or a device failed). */
static int take_block(bake_share *S, int k, uint32_t want, uint32_t *b, uint32_t *e)
{
    int rc = -1;
    pthread_mutex_lock(&S->lock);
    /* this process's share: at the end of a granule, the next granule of its own */
    if (S->ranks > 1 && S->next >= S->stop && S->next < S->n && !S->failed) {
        const bk_bake_run_opts *o = S->o;
        uint64_t                g;
        if (o->next_granule) {
            g = o->next_granule(o->granule_ctx);
        } else {
            g = ((uint64_t)S->next + S->G - 1) / S->G;
            g += (S->rank + S->ranks - g % S->ranks) % S->ranks;
        }
        S->next = g * S->G < S->n ? (uint32_t)(g * S->G) : S->n;
        S->stop = (g + 1) * S->G < S->n ? (uint32_t)((g + 1) * S->G) : S->n;
    }
    if (!S->failed && S->next < S->n) {
        if (S->nranges == S->cap) {
            uint32_t    cap = S->cap ? 2 * S->cap : 64;
            bake_range *r = realloc(S->ranges, sizeof *r * cap);
            if (!r) {
                S->failed = 1;
                pthread_mutex_unlock(&S->lock);
                return -1;
            }
            S->ranges = r;
            S->cap = cap;
        }
        /* blocks stop at the end of a granule */
        *b = S->next;
        *e = S->stop - S->next > want ? S->next + want : S->stop;
        S->next = *e;
        bake_range *r = &S->ranges[S->nranges++];
        r->begin = *b;
        r->end = *e;
        r->dev = k;
        rc = 0;
    }
    pthread_mutex_unlock(&S->lock);
    return rc;
}

static void add_progress(bake_share *S, double work)
{
    pthread_mutex_lock(&S->lock);
    S->done += work;
    const double f = S->done < S->work ? S->done / S->work : 1.0;
    if (S->show) progress_draw(f, bk_time_now() - S->t0, 0);
    if (S->lines) progress_line(f, bk_time_now() - S->t0, &S->next_frac, &S->next_time);
    pthread_mutex_unlock(&S->lock);
}

/* One device's bake: begin (its copy of the texels), then blocks until none is left. Launches
 * cover a block of texels and a run of samples of each. A launch lasts at least as long as its
 * slowest texel's run, and a block smaller than the GPU wastes it, so blocks hold what the GPU
 * runs at once (65536 texels) and the runs are sized to the budget: each block starts with a
 * one-sample run (cheap, and it times the block's texels), then runs as many samples as fit in
 * 60 % of the budget at that rate (a block's samples all cost about the same). The next block
 * grows when all samples fitted with room to spare, and shrinks when one sample did not. The CPU
 * has no watchdog; its launches (5 budgets, 0.25 s by default) only pace the progress bar. */
static void *bake_device(void *arg)
{
    bake_dev               *d = arg;
    bake_share             *S = d->S;
    const bk_bake_run_opts *o = S->o;
    bk_backend             *be = d->be;
    if (!S->made) { /* else the driver began it (bk_bake_texels) */
        if (be->i->bake_begin(be, S->v, S->texels, S->n, d->err, sizeof d->err)) goto fail;
        d->begun = 1;
    }
    if (S->keeps) {
        /* the last device to begin: every one has its copy, the caller's texels may go */
        pthread_mutex_lock(&S->lock);
        if (++S->begun == S->nd) {
            S->refs = o->texels_kept(o->texels_kept_ctx);
            zero_start(S->zj, S->img, S->img_bytes, S->var_img, S->var_bytes);
        }
        pthread_mutex_unlock(&S->lock);
    }
    bk_backend_caps caps;
    be->i->caps(be, &caps);
    double         target = 0.6 * o->max_launch_ms * 1e-3 * caps.launch_budgets;
    uint32_t       spp = o->params.spp, block = caps.first_block ? caps.first_block : 1024;
    bk_kernel_info ki;
    char           why[256];
    /* a GPU's first block: what its bake kernel holds at once with these options (a kernel capped
     * at 32 registers holds 4 times the 65536 of the uncapped one on an H100); the CPU has no
     * kernel to ask */
    if (be->i->kernel_info && be->i->kernel_info(be, &o->trace, &ki, why, sizeof why) == 0 && ki.blocks_per_sm > 0) {
        uint64_t resident = (uint64_t)ki.blocks_per_sm * (uint64_t)ki.sm_count * (uint64_t)ki.block;
        if (resident > block && resident < (1u << 30)) block = (uint32_t)resident;
    }
    /* The wavefront bake (--kernel wavefront) keeps paths of a texel's samples in flight, up to
     * 32 per thread of its trace kernels, and wastes the tail of every launch: its blocks start
     * 4 times that size (sponza 1024^2, 64 spp, 2 bounces, H100: 1206-1218, 1258-1277 and
     * 1289-1297 Mrays/s with first blocks 1, 2 and 4 times the megakernel's); with several
     * devices, no larger than a quarter of each one's share, so that every device gets blocks */
    if (o->trace.wavefront && block < (1u << 28)) {
        uint32_t b4 = block * 4, share = S->nd > 1 ? S->n / (4u * (uint32_t)S->nd) : UINT32_MAX;
        block = b4 < share ? b4 : share > block ? share : block;
    }
    bk_bake_params p = o->params;
    uint32_t       begin, end;
    while (take_block(S, d->k, block, &begin, &end) == 0) {
        uint32_t chunk = 1;
        double   per = 0.0; /* seconds per sample for this block */
        for (uint32_t s0 = 0; s0 < spp;) {
            p.sample_begin = s0;
            p.sample_end = spp - s0 > chunk ? s0 + chunk : spp;
            double ts = bk_time_now();
            if (be->i->bake_run(be, begin, end, &p, &o->trace, d->err, sizeof d->err)) goto fail;
            double dt = bk_time_now() - ts;
            d->launches++;
            if (dt * 1e3 > d->longest_ms) d->longest_ms = dt * 1e3;
            /* the first run also moves texels out of geometry: count that as a sample */
            double r = dt / (double)(p.sample_end - s0 + (s0 == 0));
            if (r > per) per = r;
            add_progress(S, (double)(end - begin) * (double)(p.sample_end - s0));
            s0 = p.sample_end;
            double fit = per > 0 ? target / per : (double)spp;
            chunk = fit < 1.0 ? 1 : fit > (double)spp ? spp : (uint32_t)fit;
        }
        if (per * spp < 0.5 * target) block = block < S->n / 2 ? block * 2 : S->n;
        else if (per > target && block > 256) block /= 2;
    }
    return NULL;
fail:
    d->rc = -1;
    pthread_mutex_lock(&S->lock);
    S->failed = 1;
    pthread_mutex_unlock(&S->lock);
    return NULL;
}

/* A fetched slice of sums (texels first.., out[i - first]) into colours: the texel's own pixel of
 * rgb (and variance), or its texel_col; a texel inside geometry (more than `inside` of its
 * inside rays met back faces: bk_bake_inside_limit) loses its coverage and counts in invalid. */
typedef struct fetch_job {
    const bk_f4        *out;
    const float        *sq;
    const bk_texel_ref *refs;
    const bk_texel     *texels;
    uint32_t            first, spp;
    float               inv;
    float               inside; /* back-face hits above which a texel is inside geometry */
    uint8_t            *coverage;
    float              *rgb, *variance;
    bk_f4              *texel_col;
    const bk_f4        *ext;       /* the slice's extra sums (ne per texel: bk_bake_ext_count), or NULL */
    uint32_t            ne;        /*   */
    int                 has_dir;   /* of them the first 3: the directional sums */
    float *const       *dir;       /* where their means go: bk_bake_run_opts.dir */
    bk_f4              *texel_dir; /*   or texel_dir */
    int                 has_mask;  /* the last: the shadowmask's sums */
    uint32_t            mask_count;
    float *const       *mask; /* where its means go: bk_bake_run_opts.mask */
    atomic_uint         invalid;
} fetch_job;

/* Texel k of the slice's directional means into its pixel of the band images or its texel_dir;
 * zero for a texel inside geometry. */
static void fetch_dir(const fetch_job *j, size_t k, uint32_t i, uint32_t px, int inside)
{
    for (int a = 0; a < 3; ++a) {
        const bk_f4 d = j->ext[j->ne * k + (size_t)a];
        const float m = inside ? 0.0f : j->inv;
        if (j->texel_dir) {
            bk_f4 c = { d.x * m, d.y * m, d.z * m, 0.0f };
            j->texel_dir[3 * (size_t)i + (size_t)a] = c;
        } else if (j->dir[a]) {
            j->dir[a][3 * (size_t)px] = d.x * m;
            j->dir[a][3 * (size_t)px + 1] = d.y * m;
            j->dir[a][3 * (size_t)px + 2] = d.z * m;
        }
    }
}

/* Texel k of the slice's shadowmask into its pixel of the mask images; zero inside geometry. */
static void fetch_mask(const fetch_job *j, size_t k, uint32_t px, int inside)
{
    const bk_f4 d = j->ext[j->ne * k + j->ne - 1];
    const float m = inside ? 0.0f : j->inv, v[4] = { d.x * m, d.y * m, d.z * m, d.w * m };
    for (uint32_t c = 0; c < j->mask_count && c < BK_MASK_MAX; ++c)
        if (j->mask[c / 3]) j->mask[c / 3][3 * (size_t)px + c % 3] = v[c];
}

static void fetch_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    fetch_job     *j = ctx;
    const float    inv = j->inv;
    const uint32_t spp = j->spp;
    unsigned       invalid = 0;
    for (size_t k = begin; k < end; ++k) {
        const uint32_t i = j->first + (uint32_t)k;
        const bk_f4    s = j->out[k];
        uint32_t       px = j->refs ? j->refs[i].pixel : j->texels[i].pixel;
        if (j->has_dir) fetch_dir(j, k, i, px, !(s.w <= j->inside));
        if (j->has_mask) fetch_mask(j, k, px, !(s.w <= j->inside));
        if (!(s.w <= j->inside)) { /* its inside rays mostly met back faces: inside geometry */
            invalid++;
            if (j->coverage) j->coverage[px] = 0;
            if (j->texel_col) {
                bk_f4 z = { 0.0f, 0.0f, 0.0f, 0.0f };
                j->texel_col[i] = z;
            }
            continue;
        }
        float var = 0.0f;
        if (j->sq && spp > 1) {
            /* unbiased sample variance of the luminance, then that of the mean of spp samples */
            double m2 = (double)bk_luminance(bk_v3(s.x, s.y, s.z)) * inv;
            double vs = ((double)j->sq[k] * inv - m2 * m2) * (double)spp / (double)(spp - 1);
            var = vs > 0.0 ? (float)(vs * inv) : 0.0f;
        }
        if (j->texel_col) {
            bk_f4 c = { s.x * inv, s.y * inv, s.z * inv, var };
            j->texel_col[i] = c;
            continue;
        }
        j->rgb[3 * (size_t)px] = s.x * inv;
        j->rgb[3 * (size_t)px + 1] = s.y * inv;
        j->rgb[3 * (size_t)px + 2] = s.z * inv;
        if (j->variance && spp > 1) j->variance[px] = var;
    }
    if (invalid) atomic_fetch_add(&j->invalid, invalid);
}

/* The bake's slices in the host memory be's transfers like best (bk_backend_i.host_alloc). */
static void *slice_alloc(bk_backend *be, size_t bytes)
{
    return be->i->host_alloc ? be->i->host_alloc(be, bytes) : malloc(bytes);
}
static void slice_free(bk_backend *be, void *p)
{
    if (!p) return;
    if (be->i->host_free) be->i->host_free(be, p);
    else free(p);
}

/* bk_bake_texels's state, filled phase by phase (bk_bake_texels lists the phases). */
typedef struct bake_run {
    bk_backend     *be;
    bk_backend     *hb; /* the member whose host memory the slices are in */
    bk_backend_caps caps;
    int             nd;  /* devices, at least 1 */
    uint32_t        nf;  /* texels per fetched slice */
    bk_f4          *out; /* a slice of sums */
    float          *sq;  /* a slice of squared luminances (variance or texel colours), or NULL */
    bk_f4          *ext; /* a slice of extra sums (ne per texel: bk_bake_ext_count), or NULL */
    uint32_t        ne;
    bake_dev       *dv;  /* nd */
    bake_share      S;
    zero_job        zj;
    double          t0;
    bk_bake_result *res;
} bake_run;

static void run_free_slices(bake_run *R)
{
    slice_free(R->hb, R->out);
    slice_free(R->hb, R->sq);
    slice_free(R->hb, R->ext);
    free(R->dv);
}

/* The slices the sums come back in, and one record per device. */
static int run_alloc(bake_run *R, uint32_t n, const bk_bake_run_opts *o, char *err, size_t err_size)
{
    bk_backend *be = R->be;
    be->i->caps(be, &R->caps);
    const int nd = R->nd = R->caps.devices > 1 ? R->caps.devices : 1;
    /* The sums come back a slice at a time (FETCH texels, 5 MB), straight into the image: the
     * host never holds a copy of every texel's sums (20 B per texel) beside the image. (Slices of
     * 16384 texels, turned into colours on one thread, took 0.37 s of a sponza 4096^2 bake's 2.9
     * on the GPU machine.) */
    enum { FETCH = 1 << 18 };
    const uint32_t nf = R->nf = n < FETCH ? (n ? n : 1) : FETCH;
    /* (the slices in the memory the first device's transfers like best: page-locked on a GPU,
     * where a copy from plain memory is staged through the driver's own buffer at about half
     * the speed) */
    bk_backend *hb = bk_backend_member(be, 0);
    if (!hb) hb = be;
    R->hb = hb;
    R->out = slice_alloc(hb, sizeof(bk_f4) * nf);
    const int want_var = o->variance || o->texel_col;
    R->sq = want_var ? slice_alloc(hb, sizeof(float) * nf) : NULL;
    /* the extra sums, fetched whenever the bake has them (bk_bake_ext_count) */
    R->ne = bk_bake_ext_count(&o->params);
    R->ext = R->ne ? slice_alloc(hb, R->ne * sizeof(bk_f4) * nf) : NULL;
    R->dv = calloc((size_t)nd, sizeof *R->dv);
    if (!R->out || (want_var && !R->sq) || (R->ne && !R->ext) || !R->dv) {
        run_free_slices(R);
        return bk_fail(err, err_size, "out of memory for %u texels", n);
    }
    return 0;
}

/* The share of the work this process bakes, the zeroing of the image it fills, the progress. */
static int run_share(bake_run *R, const bk_bake_view *v, const bk_texel *texels, uint32_t n, int w, int h,
                     const bk_bake_run_opts *o, float *rgb)
{
    /* The image and its variance are zeroed (and their fresh pages faulted in) by threads while
     * the backend bakes: on a 4-page 4096^2 atlas that is 1.1 GB, 0.57 s on one core, more than
     * the GPU's whole bake. A bake into texel colours (a denoised one) has those instead, which
     * the fetch writes: their pages are faulted in the same way (sponza 4096^2: 245 MB), unless
     * the bake is a share of a job's, which leaves the other shares' colours as they are. */
    zero_job *zj = &R->zj;
    zj->n = 0;
    const size_t img_px = (size_t)w * (size_t)h;
    bake_share  *S = &R->S;
    memset(S, 0, sizeof *S);
    S->zj = zj;
    if (!o->texel_col) {
        S->img = rgb;
        S->img_bytes = rgb ? sizeof(float) * 3 * img_px : 0;
        S->var_img = o->variance;
        S->var_bytes = o->variance ? sizeof(float) * img_px : 0;
    } else if (o->ranks <= 1) {
        S->img = o->texel_col;
        S->img_bytes = sizeof(bk_f4) * (size_t)n;
    }
    /* a backend that keeps its own texels: the caller's go first (texels_kept), then the zeroing */
    S->keeps = texels && o->texels_kept && R->caps.keeps_texels;
    S->nd = R->nd;
    if (!S->keeps) zero_start(zj, S->img, S->img_bytes, S->var_img, S->var_bytes);

    S->v = v;
    S->texels = texels;
    S->n = n;
    S->o = o;
    S->ranks = o->ranks > 1 ? o->ranks : 1;
    S->rank = o->rank;
    S->G = o->granule ? o->granule : BK_BAKE_GRANULE;
    if (S->ranks > 1 && S->rank >= S->ranks) return -1;
    pthread_mutex_init(&S->lock, NULL);
    S->stop = S->ranks > 1 ? 0 : n; /* a share: the first granule is taken first */
    /* the progress counts this process's share: as dealt, or (taken as asked for) an even one */
    S->work =
        (double)(o->next_granule ? (n + S->ranks - 1) / S->ranks : bk_bake_share_count(n, S->rank, S->ranks, S->G)) *
        (double)o->params.spp;
    S->t0 = R->t0;
    S->show = o->progress && isatty(2);
    S->lines = o->progress && !S->show;
    S->next_frac = 0.1;
    S->next_time = 10.0;
    /* one thread per device; the first runs here */
    bake_dev *dv = R->dv;
    for (int k = 0; k < R->nd; ++k) {
        dv[k].S = S;
        dv[k].k = k;
        dv[k].be = bk_backend_member(R->be, k);
        if (!dv[k].be) {
            dv[k].rc = -1;
            snprintf(dv[k].err, sizeof dv[k].err, "the backend has no device %d", k);
            S->failed = 1;
        }
    }
    return 0;
}

/* No texels given: every device begins here, then gets them a slice at a time, each slice made
 * once for all of them (bk_bake_run_opts.make_texels), or only their refs when every device makes
 * the texels itself (texel_src, bake_refs). */
static void run_make_texels(bake_run *R)
{
    bake_share             *S = &R->S;
    bake_dev               *dv = R->dv;
    const bk_bake_run_opts *o = S->o;
    const uint32_t          n = S->n;
    const int               nd = R->nd;
    S->made = 1;
    S->refs = o->texel_refs;
    int on_device = o->texel_src != NULL, ok = o->make_texels != NULL;
    for (int k = 0; k < nd; ++k) {
        on_device = on_device && dv[k].be->i->bake_refs != NULL;
        ok = ok && dv[k].be->i->bake_texels != NULL;
    }
    ok = (ok || on_device) && o->texel_refs && R->caps.keeps_texels;
    if (!ok) {
        dv[0].rc = -1;
        snprintf(dv[0].err, sizeof dv[0].err, "the bake needs the whole texels: the backend reads them in place");
        S->failed = 1;
    }
    const double tb = bk_time_now();
    for (int k = 0; k < nd && !S->failed; ++k) {
        if (dv[k].be->i->bake_begin(dv[k].be, S->v, NULL, n, dv[k].err, sizeof dv[k].err)) {
            dv[k].rc = -1;
            S->failed = 1;
        } else dv[k].begun = 1;
    }
    R->res->begin_seconds = bk_time_now() - tb;
    R->res->texels_made = on_device ? 2 : 1;
    const uint32_t slice = o->make_slice ? o->make_slice : BK_BAKE_MAKE, nm = n < slice ? n : slice;
    if (on_device) { /* the devices make them: the refs go in slices as large as the texels' */
        const uint32_t nr = 4 * nm;
        for (uint32_t first = 0; first < n && !S->failed; first += nr) {
            const uint32_t count = n - first < nr ? n - first : nr;
            for (int k = 0; k < nd; ++k)
                if (dv[k].be->i->bake_refs(dv[k].be, o->texel_src, first, count, o->texel_refs + first, dv[k].err,
                                           sizeof dv[k].err)) {
                    dv[k].rc = -1;
                    S->failed = 1;
                    break;
                }
        }
        return;
    }
    /* two slices in turns: one is made while the devices copy the other (backend.h, bake_texels) */
    const int nbuf = n > nm ? 2 : 1;
    bk_texel *made[2] = { NULL, NULL };
    for (int b = 0; b < nbuf && !S->failed && nm; ++b)
        if (!(made[b] = slice_alloc(R->hb, sizeof(bk_texel) * nm))) {
            dv[0].rc = -1;
            snprintf(dv[0].err, sizeof dv[0].err, "out of memory for %u texels", nm);
            S->failed = 1;
        }
    int turn = 0;
    for (uint32_t first = 0; first < n && !S->failed; first += nm, turn ^= nbuf - 1) {
        const uint32_t count = n - first < nm ? n - first : nm;
        o->make_texels(o->make_texels_ctx, first, count, made[turn]);
        for (int k = 0; k < nd; ++k)
            if (dv[k].be->i->bake_texels(dv[k].be, first, count, made[turn], dv[k].err, sizeof dv[k].err)) {
                dv[k].rc = -1;
                S->failed = 1;
                break;
            }
    }
    for (int k = 0; k < nd; ++k) /* the last copies done before their slices go */
        if (dv[k].begun && dv[k].be->i->bake_texels(dv[k].be, n, 0, NULL, dv[k].err, sizeof dv[k].err) && !S->failed) {
            dv[k].rc = -1;
            S->failed = 1;
        }
    for (int b = 0; b < 2; ++b) slice_free(R->hb, made[b]);
}

/* The bake itself: one thread per device beyond the first, which runs here. 0 or -1 with err. */
static int run_devices(bake_run *R, char *err, size_t err_size)
{
    bake_share     *S = &R->S;
    bake_dev       *dv = R->dv;
    const int       nd = R->nd;
    bk_bake_result *res = R->res;
    for (int k = 1; k < nd; ++k) {
        if (!dv[k].be) continue;
        dv[k].started = pthread_create(&dv[k].th, NULL, bake_device, &dv[k]) == 0;
        if (!dv[k].started) {
            dv[k].rc = -1;
            snprintf(dv[k].err, sizeof dv[k].err, "no thread for device %d", k);
            S->failed = 1;
        }
    }
    if (dv[0].be) bake_device(&dv[0]);
    for (int k = 1; k < nd; ++k)
        if (dv[k].started) pthread_join(dv[k].th, NULL);
    zero_join(&R->zj);
    if (S->show) progress_draw(1.0, bk_time_now() - R->t0, 1);
    if (S->lines && !S->failed) fprintf(stderr, "bake 100%%  %.1f s\n", bk_time_now() - R->t0);
    int rc = 0;
    for (int k = 0; k < nd && !rc; ++k)
        if (dv[k].rc)
            rc = nd > 1 ? bk_fail(err, err_size, "device %d: %s", k, dv[k].err)
                        : bk_fail(err, err_size, "%s", dv[k].err);
    if (!rc && S->failed) rc = bk_fail(err, err_size, "out of memory for the bake's blocks");
    for (int k = 0; k < nd; ++k) {
        res->launches += dv[k].launches;
        if (dv[k].longest_ms > res->longest_launch_ms) res->longest_launch_ms = dv[k].longest_ms;
    }
    return rc;
}

/* The blocks baked (this process's texels only), a slice at a time from the device that baked
 * each, each slice's texels turned into colours on the pool. rc: the status so far (nothing is
 * fetched after a failure); returns the new one. */
static int run_fetch(bake_run *R, int rc, float *rgb, uint8_t *coverage, char *err, size_t err_size)
{
    bake_share             *S = &R->S;
    const bk_bake_run_opts *o = S->o;
    const uint32_t          nf = R->nf;
    fetch_job               fj;
    fj.out = R->out;
    fj.sq = R->sq;
    fj.refs = S->refs;
    fj.texels = S->texels;
    fj.spp = o->params.spp;
    fj.inv = fj.spp ? 1.0f / (float)fj.spp : 0.0f;
    fj.inside = (float)bk_bake_inside_limit(&o->params);
    fj.coverage = coverage;
    fj.rgb = rgb;
    fj.variance = o->variance;
    fj.texel_col = o->texel_col;
    fj.ext = R->ext;
    fj.ne = R->ne;
    fj.has_dir = R->ext && o->params.directional;
    fj.dir = o->dir;
    fj.texel_dir = o->texel_col ? o->texel_dir : NULL;
    fj.has_mask = R->ext && o->params.mask_count;
    fj.mask_count = o->params.mask_count;
    fj.mask = o->mask;
    atomic_init(&fj.invalid, 0);
    for (uint32_t r = 0; r < S->nranges && !rc; ++r) {
        bk_backend *m = R->dv[S->ranges[r].dev].be;
        for (uint32_t b = S->ranges[r].begin; b < S->ranges[r].end && !rc; b += nf) {
            uint32_t e = S->ranges[r].end - b > nf ? b + nf : S->ranges[r].end;
            if ((rc = m->i->bake_fetch(m, b, e, R->out, R->sq, err, err_size))) break;
            if (R->ext && !m->i->bake_fetch_ext)
                rc = bk_fail(err, err_size, "this backend bakes no directional maps or shadowmasks");
            if (R->ext && !rc) rc = m->i->bake_fetch_ext(m, b, e, R->ext, err, err_size);
            if (rc) break;
            fj.first = b;
            bk_parallel_for(e - b, 4096, fetch_fn, &fj);
        }
    }
    R->res->invalid = atomic_load(&fj.invalid);
    return rc;
}

/* Every device that began ends (releasing its buffers), whatever happened; its counters add up.
 * Returns rc, or the first failure of a bake_end when rc is 0. */
static int run_end(bake_run *R, int rc, char *err, size_t err_size)
{
    bake_share     *S = &R->S;
    bake_dev       *dv = R->dv;
    const int       nd = R->nd;
    bk_bake_result *res = R->res;
    res->devices = nd;
    for (uint32_t r = 0; r < S->nranges; ++r)
        if (S->ranges[r].dev < BK_BAKE_MAX_DEVICES) {
            res->dev[S->ranges[r].dev].texels += S->ranges[r].end - S->ranges[r].begin;
            res->dev[S->ranges[r].dev].blocks++;
        }
    for (int k = 0; k < nd; ++k) {
        if (!dv[k].begun) continue;
        bk_trace_totals t;
        char            e2[512];
        if (dv[k].be->i->bake_end(dv[k].be, NULL, NULL, &t, e2, sizeof e2)) {
            if (!rc) rc = nd > 1 ? bk_fail(err, err_size, "device %d: %s", k, e2) : bk_fail(err, err_size, "%s", e2);
            continue;
        }
        res->totals.rays += t.rays;
        res->totals.nodes += t.nodes;
        res->totals.tris += t.tris;
        res->totals.restarts += t.restarts;
        res->totals.spills += t.spills;
        res->totals.upload_seconds += t.upload_seconds;
        if (t.seconds > res->totals.seconds) res->totals.seconds = t.seconds;
        if (k < BK_BAKE_MAX_DEVICES) {
            res->dev[k].rays = t.rays;
            res->dev[k].busy_seconds = t.seconds;
        }
    }
    return rc;
}

int bk_bake_texels(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, int w, int h,
                   const bk_bake_run_opts *o, float *rgb, uint8_t *coverage, bk_bake_result *res, char *err,
                   size_t err_size)
{
    memset(res, 0, sizeof *res);
    bake_run R;
    memset(&R, 0, sizeof R);
    R.be = be;
    R.res = res;
    R.t0 = bk_time_now();
    if (run_alloc(&R, n, o, err, err_size)) return -1;
    if (run_share(&R, v, texels, n, w, h, o, rgb)) {
        zero_join(&R.zj);
        run_free_slices(&R);
        return bk_fail(err, err_size, "rank %u of %u", R.S.rank, R.S.ranks);
    }
    const double t_made = bk_time_now();
    if (!texels && !R.S.failed) run_make_texels(&R);
    res->texels_seconds = bk_time_now() - t_made;
    int          rc = run_devices(&R, err, err_size);
    const double t_fetch = bk_time_now();
    rc = run_fetch(&R, rc, rgb, coverage, err, err_size);
    res->fetch_seconds = bk_time_now() - t_fetch;
    rc = run_end(&R, rc, err, err_size);
    pthread_mutex_destroy(&R.S.lock);
    free(R.S.ranges);
    run_free_slices(&R);
    if (rc) return -1;
    res->wall_seconds = bk_time_now() - R.t0;
    return 0;
}
