/* denoise_cpu.c - the denoiser's passes on the CPU, on the host thread pool: the same per-texel
 * code as the GPU's (kernels/bk_denoise.h); see denoise_cpu.h. */
#include "denoise_cpu.h"

#include "pool.h"
#include "util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct dn_job {
    const bk_denoise_params *p;
    const bk_f4             *in, *pos, *nrm, *band_in; /* band_in: 3 per pixel, or NULL */
    bk_f4                   *out, *band_out;
    int                      step;
} dn_job;

static void dn_rows(void *ctx, size_t y0, size_t y1, int worker)
{
    const dn_job            *j = ctx;
    const bk_denoise_params *p = j->p;
    for (int y = (int)y0; y < (int)y1; ++y) {
        for (int x = 0; x < p->w; ++x) {
            const float  vc = bk_denoise_prefilter(p, j->in, j->nrm, x, y);
            const size_t i = (size_t)y * (size_t)p->w + (size_t)x;
            j->out[i] = bk_denoise_pass_bands(p, j->in, j->pos, j->nrm, vc, x, y, j->step, j->band_in,
                                              j->band_in ? j->band_out + 3 * i : NULL);
        }
    }
}

int bk_denoise_page_cpu(const bk_denoise_params *p, int passes, bk_f4 *col, const bk_f4 *pos, const bk_f4 *nrm,
                        bk_f4 *band, char *err, size_t err_size)
{
    if (passes <= 0) return 0;
    const size_t n = (size_t)p->w * (size_t)p->h;
    bk_f4 *tmp = malloc(sizeof(bk_f4) * (n ? n : 1)), *btmp = band ? malloc(3 * sizeof(bk_f4) * (n ? n : 1)) : NULL;
    if (!tmp || (band && !btmp)) {
        free(tmp);
        return bk_fail(err, err_size, "out of memory for the denoiser (%zu texels)", n);
    }
    bk_f4 *a = col, *b = tmp, *ba = band, *bb = btmp;
    for (int k = 0; k < passes; ++k) {
        dn_job j;
        j.p = p;
        j.in = a;
        j.out = b;
        j.pos = pos;
        j.nrm = nrm;
        j.band_in = ba;
        j.band_out = bb;
        j.step = 1 << k;
        bk_parallel_for((size_t)p->h, 4, dn_rows, &j); /* each pixel written once: any order */
        bk_f4 *t = a;
        a = b;
        b = t;
        t = ba;
        ba = bb;
        bb = t;
    }
    if (a != col) memcpy(col, a, sizeof(bk_f4) * n);
    if (band && ba != band) memcpy(band, ba, 3 * sizeof(bk_f4) * n);
    free(tmp);
    free(btmp);
    return 0;
}

typedef struct dn_texels_job {
    const bk_texel *tx;
    const uint32_t *chart;
    bk_f4          *col, *pcol, *ppos, *pnrm, *band, *pband; /* band, pband: 3 per texel, per pixel; or NULL */
    uint64_t        base;
    int             gather;
} dn_texels_job;

static void dn_texels_run(void *ctx, size_t b, size_t e, int worker)
{
    const dn_texels_job *j = ctx;
    for (size_t i = b; i < e; ++i) {
        if (!j->gather)
            bk_denoise_scatter(j->tx, j->chart, j->col, (uint32_t)i, j->base, j->pcol, j->ppos, j->pnrm, j->band,
                               j->pband);
        else if (j->chart[i] != BK_DN_NONE) {
            const size_t k = (size_t)((uint64_t)j->tx[i].pixel - j->base);
            j->col[i] = j->pcol[k];
            for (int b = 0; j->band && b < 3; ++b) j->band[3 * i + (size_t)b] = j->pband[3 * k + (size_t)b];
        }
    }
}

int bk_denoise_texels_cpu(const bk_denoise_params *p, int passes, const bk_texel *tx, const uint32_t *chart, bk_f4 *col,
                          bk_f4 *band, uint32_t n, uint64_t base, char *err, size_t err_size)
{
    const size_t page_px = (size_t)p->w * (size_t)p->h;
    bk_f4 *pcol = calloc(page_px ? page_px : 1, sizeof(bk_f4)), *ppos = calloc(page_px ? page_px : 1, sizeof(bk_f4));
    bk_f4 *pnrm = malloc(sizeof(bk_f4) * (page_px ? page_px : 1));
    bk_f4 *pband = band ? calloc(3 * (page_px ? page_px : 1), sizeof(bk_f4)) : NULL;
    int    rc = 0;
    if (!pcol || !ppos || !pnrm || (band && !pband)) {
        rc = bk_fail(err, err_size, "out of memory for the denoiser (%zu texels)", page_px);
    } else {
        const bk_f4 none = { 0.0f, 0.0f, 0.0f, bk_bits_float(BK_DN_NONE) };
        for (size_t k = 0; k < page_px; ++k) pnrm[k] = none;
        /* texels own distinct pixels: scatter and gather in any order */
        dn_texels_job j;
        j.tx = tx;
        j.chart = chart;
        j.col = col;
        j.pcol = pcol;
        j.ppos = ppos;
        j.pnrm = pnrm;
        j.band = band;
        j.pband = pband;
        j.base = base;
        j.gather = 0;
        bk_parallel_for(n, 16384, dn_texels_run, &j);
        rc = bk_denoise_page_cpu(p, passes, pcol, ppos, pnrm, pband, err, err_size);
        j.gather = 1;
        if (rc == 0) bk_parallel_for(n, 16384, dn_texels_run, &j);
    }
    free(pcol);
    free(ppos);
    free(pnrm);
    free(pband);
    return rc;
}
