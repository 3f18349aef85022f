/* denoise.c - the lightmap denoiser's host side: guides, CPU passes, chart sums (see denoise.h). */
#include "denoise.h"

#include "bake.h"
#include "image.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void bk_denoise_opts_default(bk_denoise_opts *o)
{
    o->passes = 5;
    o->sigma_l = 2.0f;
    o->sigma_n = 8.0f;
    o->sigma_x = 1.0f;
}

/* ---- CPU passes --------------------------------------------------------------------------- */

typedef struct dn_job {
    const bk_denoise_params *p;
    const bk_f4 *in, *pos, *nrm;
    bk_f4 *out;
    int step, nthreads, index;
} dn_job;

static void *dn_rows(void *arg)
{
    const dn_job *j = arg;
    const bk_denoise_params *p = j->p;
    for (int y = j->index; y < p->h; y += j->nthreads) {
        for (int x = 0; x < p->w; ++x) {
            const float vc = bk_denoise_prefilter(p, j->in, j->nrm, x, y);
            j->out[(size_t)y * (size_t)p->w + (size_t)x] = bk_denoise_pass(p, j->in, j->pos, j->nrm, vc, x, y, j->step);
        }
    }
    return NULL;
}

int bk_denoise_page_cpu(const bk_denoise_params *p, int passes, bk_f4 *col, const bk_f4 *pos, const bk_f4 *nrm,
                        int nthreads, char *err, size_t err_size)
{
    if (passes <= 0) return 0;
    const size_t n = (size_t)p->w * (size_t)p->h;
    bk_f4 *tmp = malloc(sizeof(bk_f4) * (n ? n : 1));
    int nt = nthreads > 0 ? nthreads : bk_cpu_threads();
    if (nt > 64) nt = 64;
    if (!tmp) return bk_fail(err, err_size, "out of memory for the denoiser (%zu texels)", n);
    bk_f4 *a = col, *b = tmp;
    for (int k = 0; k < passes; ++k) {
        dn_job jobs[64];
        pthread_t th[64];
        int started[64] = { 0 };
        for (int i = 0; i < nt; ++i) {
            jobs[i].p = p; jobs[i].in = a; jobs[i].out = b; jobs[i].pos = pos; jobs[i].nrm = nrm;
            jobs[i].step = 1 << k; jobs[i].nthreads = nt; jobs[i].index = i;
        }
        for (int i = 1; i < nt; ++i) started[i] = pthread_create(&th[i], NULL, dn_rows, &jobs[i]) == 0;
        dn_rows(&jobs[0]);
        for (int i = 1; i < nt; ++i) {
            if (started[i]) pthread_join(th[i], NULL);
            else dn_rows(&jobs[i]);            /* no thread: its rows here */
        }
        bk_f4 *t = a; a = b; b = t;
    }
    if (a != col) memcpy(col, a, sizeof(bk_f4) * n);
    free(tmp);
    return 0;
}

int bk_denoise_texels_cpu(const bk_denoise_params *p, int passes, const bk_texel *tx, const uint32_t *chart, bk_f4 *col,
                          uint32_t n, uint64_t base, int nthreads, char *err, size_t err_size)
{
    const size_t page_px = (size_t)p->w * (size_t)p->h;
    bk_f4 *pcol = calloc(page_px ? page_px : 1, sizeof(bk_f4)), *ppos = calloc(page_px ? page_px : 1, sizeof(bk_f4));
    bk_f4 *pnrm = malloc(sizeof(bk_f4) * (page_px ? page_px : 1));
    int rc = 0;
    if (!pcol || !ppos || !pnrm) {
        rc = bk_fail(err, err_size, "out of memory for the denoiser (%zu texels)", page_px);
    } else {
        const bk_f4 none = { 0.0f, 0.0f, 0.0f, bk_bits_float(BK_DN_NONE) };
        for (size_t k = 0; k < page_px; ++k) pnrm[k] = none;
        for (uint32_t i = 0; i < n; ++i) bk_denoise_scatter(tx, chart, col, i, base, pcol, ppos, pnrm);
        rc = bk_denoise_page_cpu(p, passes, pcol, ppos, pnrm, nthreads, err, err_size);
        for (uint32_t i = 0; rc == 0 && i < n; ++i)
            if (chart[i] != BK_DN_NONE) col[i] = pcol[(size_t)((uint64_t)tx[i].pixel - base)];
    }
    free(pcol); free(ppos); free(pnrm);
    return rc;
}

/* ---- the whole map ------------------------------------------------------------------------- */

/* The per-texel parts around the filter, over a share of the texels each (the charts' sums stay
 * serial, so the result never depends on the thread count). */
typedef struct dn_map_job {
    int phase;                    /* 0: charts in; 1: each chart scaled back to its sum */
    const bk_texel *texels;
    const uint32_t *tri_chart;
    const uint8_t *coverage;
    bk_f4 *col;
    uint32_t *chart;
    const double *sums;
    uint32_t begin, end;
} dn_map_job;

static void *dn_map_run(void *arg)
{
    const dn_map_job *j = arg;
    for (uint32_t i = j->begin; i < j->end; ++i) {
        const size_t px = j->texels[i].pixel;
        if (j->phase == 0) {
            uint32_t c = j->tri_chart[j->texels[i].tri];
            if (c == BK_NONE || (j->coverage && j->coverage[px] != BK_COVER_TEXEL)) c = BK_DN_NONE;
            j->chart[i] = c;
        } else if (j->chart[i] != BK_DN_NONE) {
            /* each chart back to its own sum, channel by channel: the filter moves light within
             * a chart, never into or out of it */
            const double *sm = j->sums + 6 * (size_t)j->chart[i];
            const bk_f4 c = j->col[i];
            j->col[i].x = sm[3] > 0.0 ? (float)(c.x * (sm[0] / sm[3])) : c.x;
            j->col[i].y = sm[4] > 0.0 ? (float)(c.y * (sm[1] / sm[4])) : c.y;
            j->col[i].z = sm[5] > 0.0 ? (float)(c.z * (sm[2] / sm[5])) : c.z;
        }
    }
    return NULL;
}

/* fn over [0, n) in up to 16 threads (one below 65536 items) */
static void dn_threads(void *(*fn)(void *), dn_map_job proto, uint32_t n)
{
    enum { MAXT = 16 };
    int nt = bk_cpu_threads();
    nt = nt < 1 ? 1 : nt > MAXT ? MAXT : nt;
    if (n < 65536) nt = 1;
    dn_map_job j[MAXT];
    pthread_t th[MAXT];
    int started[MAXT] = { 0 };
    for (int t = 0; t < nt; ++t) {
        j[t] = proto;
        j[t].begin = (uint32_t)((uint64_t)n * (uint64_t)t / (uint64_t)nt);
        j[t].end = (uint32_t)((uint64_t)n * (uint64_t)(t + 1) / (uint64_t)nt);
        if (t) started[t] = pthread_create(&th[t], NULL, fn, &j[t]) == 0;
    }
    fn(&j[0]);
    for (int t = 1; t < nt; ++t) {
        if (started[t]) pthread_join(th[t], NULL);
        else fn(&j[t]);
    }
}

int bk_denoise_texel_colours(bk_backend *be, bk_f4 *col, const uint8_t *coverage, const bk_texel *texels, uint32_t n,
                             const uint32_t *tri_chart, int w, int h, float texel_world, const bk_denoise_opts *o,
                             bk_denoise_result *res, char *err, size_t err_size)
{
    memset(res, 0, sizeof *res);
    if (o->passes <= 0 || n == 0) return 0;
    const double t0 = bk_time_now();
    const size_t page_px = (size_t)w * (size_t)h;
    /* the charts named by the texels' triangles (the triangles are fewer than the texels) */
    uint32_t charts = 0, tri_end = 0;
    for (uint32_t i = 0; i < n; ++i) if (texels[i].tri + 1 > tri_end) tri_end = texels[i].tri + 1;
    for (uint32_t t = 0; t < tri_end; ++t) if (tri_chart[t] != BK_NONE && tri_chart[t] + 1 > charts) charts = tri_chart[t] + 1;
    uint32_t *chart = malloc(sizeof(uint32_t) * n);
    double *sums = calloc((size_t)charts * 6 + 1, sizeof(double));
    if (!chart || !sums) {
        free(chart); free(sums);
        return bk_fail(err, err_size, "out of memory for the denoiser");
    }
    bk_denoise_params p;
    p.w = w; p.h = h; p.texel_world = texel_world;
    p.sigma_l = o->sigma_l; p.sigma_n = o->sigma_n; p.sigma_x = o->sigma_x;
    /* the texels' charts, then each chart's sums before the filter */
    dn_map_job mj;
    memset(&mj, 0, sizeof mj);
    mj.texels = texels; mj.tri_chart = tri_chart; mj.coverage = coverage; mj.col = col; mj.chart = chart; mj.sums = sums;
    dn_threads(dn_map_run, mj, n);
    for (uint32_t i = 0; i < n; ++i) {
        if (chart[i] == BK_DN_NONE) continue;
        double *sm = sums + 6 * (size_t)chart[i];
        sm[0] += col[i].x; sm[1] += col[i].y; sm[2] += col[i].z;
        res->texels++;
    }
    /* texels are sorted by pixel, so each page's are one run */
    int rc = 0;
    for (uint32_t first = 0; first < n && rc == 0;) {
        const uint64_t pg = texels[first].pixel / page_px, base = pg * page_px;
        uint32_t last = first;
        while (last < n && texels[last].pixel < base + page_px) ++last;
        double tf = bk_time_now(), fs = 0.0;
        if (first == 0) res->prep_seconds = tf - t0;
        if (be && be->i->denoise)
            rc = be->i->denoise(be, &p, o->passes, texels + first, chart + first, col + first, last - first, base, &fs, err, err_size);
        else
            rc = bk_denoise_texels_cpu(&p, o->passes, texels + first, chart + first, col + first, last - first, base, 0, err, err_size);
        res->filter_seconds += (be && be->i->denoise) ? fs : bk_time_now() - tf;
        res->backend_seconds += bk_time_now() - tf;
        first = last;
    }
    const double tb = bk_time_now();
    if (rc == 0) {
        for (uint32_t i = 0; i < n; ++i) {
            if (chart[i] == BK_DN_NONE) continue;
            double *s = sums + 6 * (size_t)chart[i];
            s[3] += col[i].x; s[4] += col[i].y; s[5] += col[i].z;
        }
        mj.phase = 1;
        dn_threads(dn_map_run, mj, n);
        for (uint32_t c = 0; c < charts; ++c) res->charts += sums[6 * (size_t)c] + sums[6 * (size_t)c + 1] + sums[6 * (size_t)c + 2] > 0.0;
    }
    free(chart); free(sums);
    res->seconds = bk_time_now() - t0;
    res->finish_seconds = bk_time_now() - tb;
    return rc;
}

/* The texels' colours out of (phase 0) and back into (phase 1) the image: only the texels the
 * denoiser filters go back (those of a chart, baked), the others' pixels are left as they are. */
typedef struct dn_image_job {
    int phase;
    const bk_texel *texels;
    const uint32_t *tri_chart;
    const uint8_t *coverage;
    const float *var;
    float *rgb;
    bk_f4 *col;
    uint32_t begin, end;
} dn_image_job;

static void *dn_image_run(void *arg)
{
    const dn_image_job *j = arg;
    for (uint32_t i = j->begin; i < j->end; ++i) {
        const size_t px = j->texels[i].pixel;
        if (j->phase == 0) {
            j->col[i].x = j->rgb[3 * px]; j->col[i].y = j->rgb[3 * px + 1]; j->col[i].z = j->rgb[3 * px + 2];
            j->col[i].w = j->var[px];
        } else if (j->tri_chart[j->texels[i].tri] != BK_NONE && !(j->coverage && j->coverage[px] != BK_COVER_TEXEL)) {
            j->rgb[3 * px] = j->col[i].x; j->rgb[3 * px + 1] = j->col[i].y; j->rgb[3 * px + 2] = j->col[i].z;
        }
    }
    return NULL;
}

static void dn_image(dn_image_job proto, uint32_t n)
{
    enum { MAXT = 16 };
    int nt = bk_cpu_threads();
    nt = nt < 1 ? 1 : nt > MAXT ? MAXT : nt;
    if (n < 65536) nt = 1;
    dn_image_job j[MAXT];
    pthread_t th[MAXT];
    int started[MAXT] = { 0 };
    for (int t = 0; t < nt; ++t) {
        j[t] = proto;
        j[t].begin = (uint32_t)((uint64_t)n * (uint64_t)t / (uint64_t)nt);
        j[t].end = (uint32_t)((uint64_t)n * (uint64_t)(t + 1) / (uint64_t)nt);
        if (t) started[t] = pthread_create(&th[t], NULL, dn_image_run, &j[t]) == 0;
    }
    dn_image_run(&j[0]);
    for (int t = 1; t < nt; ++t) {
        if (started[t]) pthread_join(th[t], NULL);
        else dn_image_run(&j[t]);
    }
}

int bk_denoise_lightmap(bk_backend *be, float *rgb, const float *var, const uint8_t *coverage, const bk_texel *texels,
                        uint32_t n, const uint32_t *tri_chart, int w, int h, int pages, float texel_world,
                        const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size)
{
    memset(res, 0, sizeof *res);
    (void)pages;                              /* the texels' pixel numbers say which page */
    if (o->passes <= 0 || n == 0) return 0;
    const double t0 = bk_time_now();
    bk_f4 *col = malloc(sizeof(bk_f4) * n);
    if (!col) return bk_fail(err, err_size, "out of memory for the denoiser");
    dn_image_job ij;
    memset(&ij, 0, sizeof ij);
    ij.texels = texels; ij.tri_chart = tri_chart; ij.coverage = coverage; ij.var = var; ij.rgb = rgb; ij.col = col;
    dn_image(ij, n);
    const double t1 = bk_time_now();
    int rc = bk_denoise_texel_colours(be, col, coverage, texels, n, tri_chart, w, h, texel_world, o, res, err, err_size);
    const double t2 = bk_time_now();
    if (rc == 0) {
        ij.phase = 1;
        dn_image(ij, n);
    }
    free(col);
    res->prep_seconds += t1 - t0;
    res->finish_seconds += bk_time_now() - t2;
    res->seconds = bk_time_now() - t0;
    return rc;
}
