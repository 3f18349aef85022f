/* cmd_bake_write.c - the write phase's statistics of the baked texels on the pool: the histogram
 * and mean luminance of --exposure auto (and --stats) when no GPU holds them, and the PNG clip
 * hint's share and fitting exposure.
 *
 * Both read every pixel of every page once (the world's 4 pages of 4096^2: 67 M pixels, a
 * quarter of them baked). Each chunk of the pixels (a fixed cut, CHUNK of them) makes its own
 * histogram and sums; they are added up in chunk order afterwards: counts exactly, the mean's
 * double sum per chunk and then over the chunks, so neither result depends on the thread count. */
#include "cmd_bake_internal.h"
#include "image.h"
#include "pool.h"
#include "stats.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK ((size_t)1 << 18)

/* --exposure auto: 512 bins of log2 luminance, 1/8 stop each (bk_cmd_bake_auto_exposure's) */
enum { EXPO_BINS = 512 };
typedef struct expo_job {
    const float   *rgb;
    const uint8_t *cov;
    uint32_t      *hist; /* per chunk EXPO_BINS */
    double        *sum;  /* per chunk */
    uint64_t      *n;    /* per chunk */
} expo_job;

static void expo_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    expo_job    *j = ctx;
    const size_t k = begin / CHUNK;
    uint32_t    *h = j->hist + (size_t)EXPO_BINS * k;
    double       s = 0;
    uint64_t     n = 0;
    memset(h, 0, sizeof(uint32_t) * EXPO_BINS);
    for (size_t i = begin; i < end; ++i) {
        if (j->cov && j->cov[i] != BK_COVER_TEXEL) continue;
        float l;
        h[bk_cmd_bake_lum_bin(j->rgb + 3 * i, &l)]++;
        s += (double)l;
        n++;
    }
    j->sum[k] = s;
    j->n[k] = n;
}

float bk_cmd_bake_auto_exposure_cpu(const float *rgb, const uint8_t *cov, size_t npx, double *mean_lum, char *err,
                                    size_t err_size)
{
    const size_t chunks = npx ? (npx - 1) / CHUNK + 1 : 0;
    expo_job     j = { rgb, cov, malloc(sizeof(uint32_t) * EXPO_BINS * (chunks ? chunks : 1)),
                       malloc(sizeof(double) * (chunks ? chunks : 1)), malloc(sizeof(uint64_t) * (chunks ? chunks : 1)) };
    if (!j.hist || !j.sum || !j.n) {
        free(j.hist);
        free(j.sum);
        free(j.n);
        bk_fail(err, err_size, "out of memory");
        return -1.0f;
    }
    bk_parallel_for(npx, CHUNK, expo_chunk, &j);
    uint32_t counts[EXPO_BINS];
    memset(counts, 0, sizeof counts);
    double   sum = 0;
    uint64_t total = 0;
    for (size_t k = 0; k < chunks; ++k) {
        for (int b = 0; b < EXPO_BINS; ++b) counts[b] += j.hist[(size_t)EXPO_BINS * k + b];
        sum += j.sum[k];
        total += j.n[k];
    }
    free(j.hist);
    free(j.sum);
    free(j.n);
    *mean_lum = total ? sum / (double)total : 0.0;
    return bk_cmd_bake_exposure_of(counts);
}

float bk_cmd_bake_exposure_of(const uint32_t counts[512])
{
    uint32_t b = bk_stats_percentile_bin(counts, 512, 0.99);
    if (b == 0) return 1.0f;                      /* a black map: nothing to expose */
    float white = exp2f((float)b / 8.0f - 20.0f); /* the bin's upper edge */
    return 1.0f / white;
}

/* The clip hint: 1/16-octave bins of the brightest channel, 2^-32 .. 2^32 */
enum { CLIP_BINS = 1024, CLIP_PER_OCTAVE = 16, CLIP_LOW = 32 };
typedef struct clip_job {
    const float   *rgb;
    const uint8_t *cov;
    float          e;
    uint32_t      *hist;     /* per chunk CLIP_BINS */
    uint64_t      *n, *over; /* per chunk */
} clip_job;

static void clip_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    clip_job    *j = ctx;
    const size_t k = begin / CHUNK;
    uint32_t    *h = j->hist + (size_t)CLIP_BINS * k;
    uint64_t     n = 0, over = 0;
    const float  e = j->e;
    memset(h, 0, sizeof(uint32_t) * CLIP_BINS);
    for (size_t i = begin; i < end; ++i) {
        if (j->cov[i] != BK_COVER_TEXEL) continue;
        const float *c = j->rgb + 3 * i;
        const float  m = fmaxf(c[0], fmaxf(c[1], c[2]));
        n++;
        over += c[0] * e > 1.0f || c[1] * e > 1.0f || c[2] * e > 1.0f;
        int b = m > 0 && isfinite(m) ? (int)floorf((log2f(m) + CLIP_LOW) * CLIP_PER_OCTAVE) : 0;
        h[b < 0 ? 0 : b >= CLIP_BINS ? CLIP_BINS - 1 : b]++;
    }
    j->n[k] = n;
    j->over[k] = over;
}

void bk_cmd_bake_clip_stats(const float *rgb, const uint8_t *cov, size_t npx, float exposure, double *share, float *fit)
{
    const size_t chunks = npx ? (npx - 1) / CHUNK + 1 : 0;
    clip_job     j = { rgb,
                       cov,
                       exposure,
                       malloc(sizeof(uint32_t) * CLIP_BINS * (chunks ? chunks : 1)),
                       malloc(sizeof(uint64_t) * (chunks ? chunks : 1)),
                       malloc(sizeof(uint64_t) * (chunks ? chunks : 1)) };
    *share = 0;
    *fit = 0;
    if (j.hist && j.n && j.over) {
        bk_parallel_for(npx, CHUNK, clip_chunk, &j);
        uint64_t hist[CLIP_BINS], n = 0, over = 0;
        memset(hist, 0, sizeof hist);
        for (size_t k = 0; k < chunks; ++k) {
            for (int b = 0; b < CLIP_BINS; ++b) hist[b] += j.hist[(size_t)CLIP_BINS * k + b];
            n += j.n[k];
            over += j.over[k];
        }
        if (n) {
            uint64_t want = (uint64_t)ceil(0.99 * (double)n), sum = 0;
            int      b = 0;
            while (b < CLIP_BINS - 1 && (sum += hist[b]) < want) b++;
            *share = (double)over / (double)n;
            *fit = (float)exp2((double)CLIP_LOW - (double)(b + 1) / CLIP_PER_OCTAVE);
        }
    }
    free(j.hist);
    free(j.n);
    free(j.over);
}
