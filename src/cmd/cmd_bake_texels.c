/* cmd_bake_texels.c - the bake's texels: those a cut-out removes, their ray order (--bin-rays),
 * their refs once the backend holds them, and the exposure (--exposure auto) from their colours. */
#include "cmd_bake_internal.h"
#include "image.h"
#include "material.h"
#include "raster.h"
#include "pool.h"
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Reorders texels by the key of their rays: the octant of the normal (the hemisphere their
 * directions fill), then a 30-bit Morton code of the position in the scene box (Aila & Laine's
 * octant-then-origin order). Texels keep their pixel, so the map is the same either way. */
int bk_cmd_bake_bin_texels(bk_gpu_ops *gpu, bk_texel *tx, uint32_t n, const bk_accel *a, double *sort_seconds,
                           char *err, size_t err_size)
{
    uint64_t *keys = malloc(sizeof(uint64_t) * (n ? n : 1));
    uint32_t *vals = malloc(sizeof(uint32_t) * (n ? n : 1));
    bk_texel *tmp = malloc(sizeof(bk_texel) * (n ? n : 1));
    if (!keys || !vals || !tmp) {
        free(keys);
        free(vals);
        free(tmp);
        return bk_fail(err, err_size, "out of memory");
    }
    float ext[3] = { a->hi.x - a->lo.x, a->hi.y - a->lo.y, a->hi.z - a->lo.z };
    for (uint32_t i = 0; i < n; ++i) {
        float    p[3] = { tx[i].px - a->lo.x, tx[i].py - a->lo.y, tx[i].pz - a->lo.z };
        uint64_t m = 0;
        for (int k = 0; k < 3; ++k) {
            float    f = ext[k] > 0 ? p[k] / ext[k] : 0.0f;
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
    free(keys);
    free(vals);
    free(tmp);
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
    size_t        *base; /* per chunk: its texels, then where they start */
} exposure_job;

static void exposure_count(void *ctx, size_t begin, size_t end, int worker)
{
    exposure_job *j = ctx;
    size_t        n = 0;
    for (size_t i = begin; i < end; ++i) n += !j->cov || j->cov[i] == 1;
    j->base[begin / EXPOSURE_GRAIN] = n;
}

static void exposure_keys(void *ctx, size_t begin, size_t end, int worker)
{
    exposure_job *j = ctx;
    size_t        m = j->base[begin / EXPOSURE_GRAIN];
    for (size_t i = begin; i < end; ++i) {
        if (j->cov && j->cov[i] != 1) continue;
        j->keys[m] = bk_cmd_bake_lum_bin(j->rgb + 3 * i, &j->lum[m]);
        m++;
    }
}

float bk_cmd_bake_auto_exposure(bk_gpu_ops *gpu, const float *rgb, const uint8_t *cov, size_t npx, double *mean_lum,
                                char *err, size_t err_size)
{
    /* in slices of 4M pixels (at most 32 MB of keys and luminances, not 8 B per pixel of the
     * map), each on the pool in texel order; the histogram's counts add up exactly, the mean's
     * sums in double */
    if (!gpu) return bk_cmd_bake_auto_exposure_cpu(rgb, cov, npx, mean_lum, err, err_size); /* on the pool */
    enum { SLICE = 1 << 22 }; /* a multiple of EXPOSURE_GRAIN */
    const size_t cap = npx < SLICE ? (npx ? npx : 1) : SLICE, max_chunks = (cap - 1) / EXPOSURE_GRAIN + 1;
    uint32_t    *keys = malloc(sizeof(uint32_t) * cap), counts[512], part[512];
    float       *lum = malloc(sizeof(float) * cap);
    size_t      *base = malloc(sizeof(size_t) * max_chunks);
    if (!keys || !lum || !base) {
        free(keys);
        free(lum);
        free(base);
        bk_fail(err, err_size, "out of memory");
        return -1.0f;
    }
    memset(counts, 0, sizeof counts);
    uint64_t total = 0;
    double   sum = 0;
    for (size_t s0 = 0; s0 < npx; s0 += SLICE) {
        const size_t n = npx - s0 < SLICE ? npx - s0 : SLICE, chunks = (n - 1) / EXPOSURE_GRAIN + 1;
        exposure_job j;
        j.rgb = rgb + 3 * s0;
        j.cov = cov ? cov + s0 : NULL;
        j.keys = keys;
        j.lum = lum;
        j.base = base;
        bk_parallel_for(n, EXPOSURE_GRAIN, exposure_count, &j);
        size_t m = 0;
        for (size_t k = 0; k < chunks; ++k) {
            size_t c = base[k];
            base[k] = m;
            m += c;
        }
        bk_parallel_for(n, EXPOSURE_GRAIN, exposure_keys, &j);
        double sl = 0;
        if (bk_stats_histogram(gpu, keys, m, 512, part, err, err_size) ||
            bk_stats_sum_f32(gpu, lum, m, &sl, err, err_size)) {
            free(keys);
            free(lum);
            free(base);
            return -1.0f;
        }
        for (int k = 0; k < 512; ++k) counts[k] += part[k];
        sum += sl;
        total += m;
    }
    free(keys);
    free(lum);
    free(base);
    *mean_lum = total ? sum / (double)total : 0.0;
    return bk_cmd_bake_exposure_of(counts);
}


void bk_cmd_bake_make_texels(void *ctx, uint32_t first, uint32_t count, bk_texel *out)
{
    const bk_cmd_bake_made_texels *m = ctx;
    bk_texels_make(m->s, m->a, m->refs + first, count, out);
}


const bk_texel_ref *bk_cmd_bake_texels_kept(void *ctx)
{
    bk_cmd_bake_kept_texels *k = ctx;
    *k->refs = bk_texels_compact(k->tx, k->n);
    return *k->refs;
}

/* Whether texel t (of a triangle with a cut-out) lies where its surface stands. */
static int texel_stands(const bk_tex_pool *pool, const bk_scene *s, const bk_texel *t)
{
    bk_vec3 p[3];
    for (int v = 0; v < 3; ++v) {
        const float *q = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t->tri + v];
        p[v] = bk_v3(q[0], q[1], q[2]);
    }
    float b1, b2;
    bk_tri_bary(p[0], p[1], p[2], bk_v3(t->px, t->py, t->pz), &b1, &b2);
    return bk_tex_pool_texel_stands(pool, t->tri, b1, b2);
}

uint32_t bk_cmd_bake_cut_texels(const bk_tex_pool *pool, const bk_scene *s, const bk_atlas *a, bk_texel *tx,
                                bk_texel_ref *refs, uint32_t *n, uint8_t *cov, char *err, size_t err_size)
{
    if (!pool->tri_alpha) return 0;
    uint32_t m = 0; /* texels of alpha-tested triangles: made whole from their refs when only refs exist */
    for (uint32_t i = 0; i < *n; ++i) {
        uint32_t tri = tx ? tx[i].tri : refs[i].tri;
        m += tri < pool->tri_count && pool->tri_alpha[tri];
    }
    if (!m) return 0;
    bk_texel_ref *sel = refs ? malloc(sizeof *sel * m) : NULL;
    bk_texel     *made = refs ? malloc(sizeof *made * m) : NULL;
    if (refs && (!sel || !made)) {
        free(sel);
        free(made);
        bk_fail(err, err_size, "out of memory for the cut-out texels");
        return BK_NONE;
    }
    if (refs) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < *n; ++i)
            if (refs[i].tri < pool->tri_count && pool->tri_alpha[refs[i].tri]) sel[k++] = refs[i];
        bk_texels_make(s, a, sel, m, made);
    }
    uint32_t w = 0, k = 0, cut = 0;
    for (uint32_t i = 0; i < *n; ++i) {
        uint32_t tri = tx ? tx[i].tri : refs[i].tri;
        if (tri < pool->tri_count && pool->tri_alpha[tri] && !texel_stands(pool, s, tx ? &tx[i] : &made[k++])) {
            cov[tx ? tx[i].pixel : refs[i].pixel] = BK_COVER_CUT;
            cut++;
            continue;
        }
        if (tx) tx[w++] = tx[i];
        else refs[w++] = refs[i];
    }
    *n = w;
    free(sel);
    free(made);
    return cut;
}
