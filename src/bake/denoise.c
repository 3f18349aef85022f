/* denoise.c - the lightmap denoiser's driver: the texels' colours and charts, the passes on the
 * backend (denoise_cpu.c on the CPU), the charts scaled back to their sums (see denoise.h). */
#include "denoise.h"

#include "bake.h"
#include "image.h"
#include "pool.h"
#include "util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void bk_denoise_opts_default(bk_denoise_opts *o)
{
    o->passes = 5;
    o->sigma_l = 2.0f;
    o->sigma_n = 8.0f;
    o->sigma_x = 1.0f;
}

/* ---- the whole map ------------------------------------------------------------------------- */

/* A texel's pixel and triangle, from its refs when the caller has only those (denoise.h). */
static inline uint32_t dn_pixel(const bk_texel *t, const bk_texel_ref *r, size_t i)
{
    return r ? r[i].pixel : t[i].pixel;
}
static inline uint32_t dn_tri(const bk_texel *t, const bk_texel_ref *r, size_t i) { return r ? r[i].tri : t[i].tri; }

/* The per-texel parts around the filter, in fixed chunks of the texels on the pool. A chart's
 * sums are added up run by run: texels are sorted by pixel, so one chart's texels in a row of the
 * page are consecutive; each chunk sums its runs (in texel order) into a list of its own, and the
 * lists are added into the charts' sums in chunk order. The order of every addition is fixed by
 * the chunk cut alone, so the result never depends on the thread count. */
#define DN_CHUNK 32768u

typedef struct dn_run {
    uint32_t chart;
    float    s[3];
} dn_run; /* a run's partial sums: float,
              as a run is cut at 64 texels */
typedef struct dn_kept {
    uint32_t texel, chart;
} dn_kept;

typedef struct dn_map_job {
    int phase;              /* 0: charts in, runs of the colours; 1: runs of the filtered
                               colours; 2: each chart scaled back to its sum */
    const bk_texel *texels; /* one of the two (bk_denoise_texel_colours); the refs' tri */
    bk_texel_ref   *refs;   /*   fields hold the charts once phase 0 has run */
    const uint32_t *tri_chart;
    uint32_t        tri_count;
    const uint8_t  *coverage;
    bk_f4          *col;
    bk_f4          *band;  /* NULL, or 3 per texel: scaled as the colours are */
    uint32_t       *chart; /* NULL with refs: the charts are in the refs */
    const double   *sums;
    dn_run        **runs;       /* per chunk: its runs */
    uint32_t       *run_count;  /* per chunk */
    dn_kept       **kept;       /* per chunk, with refs: the texels left out for their coverage */
    uint32_t       *kept_count; /*   alone, with their charts (put back at the end) */
    uint32_t       *charted;    /* per chunk, phase 0: its texels in a chart */
    int             failed;     /* out of memory for some chunk's runs */
} dn_map_job;

static void dn_map_run(void *ctx, size_t b, size_t e, int worker)
{
    dn_map_job  *j = ctx;
    const size_t k = b / DN_CHUNK;
    dn_run      *runs = NULL;
    uint32_t     nr = 0, cap = 0, len = 0;
    if (j->phase <= 1) {
        free(j->runs[k]);
        j->runs[k] = NULL;
        j->run_count[k] = 0;
    }
    dn_kept *kept = NULL;
    uint32_t nk = 0, kcap = 0, charted = 0;
    for (size_t i = b; i < e; ++i) {
        if (j->phase == 0) {
            const size_t   px = dn_pixel(j->texels, j->refs, i);
            const uint32_t t = dn_tri(j->texels, j->refs, i);
            uint32_t       c = t < j->tri_count ? j->tri_chart[t] : BK_NONE;
            const uint32_t own = c;
            if (c == BK_NONE || (j->coverage && j->coverage[px] != BK_COVER_TEXEL)) c = BK_DN_NONE;
            if (j->chart) {
                j->chart[i] = c;
            } else {
                /* in the ref itself; a chart left out for its coverage alone is put back after */
                j->refs[i].tri = c;
                if (c != own) {
                    if (nk == kcap) {
                        kcap = kcap ? 2 * kcap : 256;
                        dn_kept *q = realloc(kept, sizeof(dn_kept) * kcap);
                        if (!q) {
                            j->failed = 1;
                            free(kept);
                            kept = NULL;
                            nk = kcap = 0;
                            continue;
                        }
                        kept = q;
                    }
                    kept[nk].texel = (uint32_t)i;
                    kept[nk].chart = own;
                    nk++;
                }
            }
        }
        const uint32_t c = j->chart ? j->chart[i] : j->refs[i].tri;
        if (c == BK_DN_NONE) continue;
        charted++;
        const bk_f4 v = j->col[i];
        if (j->phase <= 1) {
            if (nr == 0 || runs[nr - 1].chart != c || len == 64) {
                if (nr == cap) {
                    cap = cap ? 2 * cap : 256;
                    dn_run *r = realloc(runs, sizeof(dn_run) * cap);
                    if (!r) {
                        j->failed = 1;
                        free(runs);
                        return;
                    }
                    runs = r;
                }
                runs[nr].chart = c;
                runs[nr].s[0] = runs[nr].s[1] = runs[nr].s[2] = 0.0f;
                nr++;
                len = 0;
            }
            len++;
            runs[nr - 1].s[0] += v.x;
            runs[nr - 1].s[1] += v.y;
            runs[nr - 1].s[2] += v.z;
        } else {
            /* each chart back to its own sum, channel by channel: the filter moves light within
             * a chart, never into or out of it */
            const double *sm = j->sums + 6 * (size_t)c;
            j->col[i].x = sm[3] > 0.0 ? (float)(v.x * (sm[0] / sm[3])) : v.x;
            j->col[i].y = sm[4] > 0.0 ? (float)(v.y * (sm[1] / sm[4])) : v.y;
            j->col[i].z = sm[5] > 0.0 ? (float)(v.z * (sm[2] / sm[5])) : v.z;
            for (int b = 0; j->band && b < 3; ++b) { /* the bands by the same factors: b . n = M stays */
                bk_f4 *q = &j->band[3 * i + (size_t)b];
                q->x = sm[3] > 0.0 ? (float)(q->x * (sm[0] / sm[3])) : q->x;
                q->y = sm[4] > 0.0 ? (float)(q->y * (sm[1] / sm[4])) : q->y;
                q->z = sm[5] > 0.0 ? (float)(q->z * (sm[2] / sm[5])) : q->z;
            }
        }
    }
    if (j->phase <= 1) {
        j->runs[k] = runs;
        j->run_count[k] = nr;
    }
    if (j->phase == 0 && !j->chart) {
        j->kept[k] = kept;
        j->kept_count[k] = nk;
    }
    if (j->phase == 0) j->charted[k] = charted;
}

/* One phase over all texels; phases 0 and 1 then add their runs into sums[6 c + 3 * phase ..]. */
static int dn_map(dn_map_job *j, int phase, uint32_t n, double *sums)
{
    j->phase = phase;
    bk_parallel_for(n, DN_CHUNK, dn_map_run, j);
    if (phase > 1) return 0;
    if (j->failed) return -1;
    const size_t chunks = ((size_t)n + DN_CHUNK - 1) / DN_CHUNK;
    for (size_t k = 0; k < chunks; ++k)
        for (uint32_t r = 0; r < j->run_count[k]; ++r) {
            double *sm = sums + 6 * (size_t)j->runs[k][r].chart + 3 * phase;
            sm[0] += j->runs[k][r].s[0];
            sm[1] += j->runs[k][r].s[1];
            sm[2] += j->runs[k][r].s[2];
        }
    return 0;
}

int bk_denoise_texel_colours(bk_backend *be, bk_f4 *col, bk_texel_ref *refs, const bk_denoise_view *v,
                             const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size)
{
    return bk_denoise_texel_bands(be, col, NULL, refs, v, o, res, err, err_size);
}

int bk_denoise_texel_bands(bk_backend *be, bk_f4 *col, bk_f4 *band, bk_texel_ref *refs, const bk_denoise_view *v,
                           const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size)
{
    const uint8_t  *coverage = v->coverage;
    const bk_texel *texels = v->texels;
    const uint32_t  n = v->n, *tri_chart = v->tri_chart, tri_count = v->tri_count;
    const int       w = v->w, h = v->h;
    const float     texel_world = v->texel_world;
    memset(res, 0, sizeof *res);
    if (o->passes <= 0 || n == 0) return 0;
    if (!texels == !refs) return bk_fail(err, err_size, "denoiser: give the texels or their refs, one of the two");
    if (!texels && !(be && be->i->denoise))
        return bk_fail(err, err_size, "denoiser: the CPU passes need the whole texels");
    const double t0 = bk_time_now();
    const size_t page_px = (size_t)w * (size_t)h;
    uint32_t     charts = 0;
    for (uint32_t t = 0; t < tri_count; ++t)
        if (tri_chart[t] != BK_NONE && tri_chart[t] + 1 > charts) charts = tri_chart[t] + 1;
    const size_t chunks = ((size_t)n + DN_CHUNK - 1) / DN_CHUNK;
    /* with refs the charts go into the refs themselves (4 B per texel less): the backend reads
     * them there, every second word */
    uint32_t  *chart = refs ? NULL : malloc(sizeof(uint32_t) * n);
    double    *sums = calloc((size_t)charts * 6 + 1, sizeof(double));
    dn_run   **runs = calloc(chunks, sizeof *runs);
    uint32_t  *run_count = calloc(chunks, sizeof *run_count);
    dn_kept  **kept = refs ? calloc(chunks, sizeof *kept) : NULL;
    uint32_t  *kept_count = refs ? calloc(chunks, sizeof *kept_count) : NULL;
    uint32_t  *charted = calloc(chunks, sizeof *charted);
    int        rc = 0;
    dn_map_job mj;
    memset(&mj, 0, sizeof mj);
    mj.texels = texels;
    mj.refs = refs;
    mj.tri_chart = tri_chart;
    mj.tri_count = tri_count;
    mj.coverage = coverage;
    mj.col = col;
    mj.band = band;
    mj.chart = chart;
    mj.sums = sums;
    mj.runs = runs;
    mj.run_count = run_count;
    mj.kept = kept;
    mj.kept_count = kept_count;
    mj.charted = charted;
    const uint32_t *charts_at =
        refs ? (const uint32_t *)(const void *)refs + offsetof(bk_texel_ref, tri) / sizeof(uint32_t) : chart;
    const uint32_t    stride = refs ? (uint32_t)(sizeof(bk_texel_ref) / sizeof(uint32_t)) : 1;
    bk_denoise_params p;
    p.w = w;
    p.h = h;
    p.texel_world = texel_world;
    p.sigma_l = o->sigma_l;
    p.sigma_n = o->sigma_n;
    p.sigma_x = o->sigma_x;
    /* the texels' charts, and each chart's sums before the filter */
    if ((!refs && !chart) || !sums || !runs || !run_count || (refs && (!kept || !kept_count)) || !charted ||
        dn_map(&mj, 0, n, sums)) {
        rc = bk_fail(err, err_size, "out of memory for the denoiser");
        goto out;
    }
    for (size_t k = 0; k < chunks; ++k) res->texels += charted[k];
    /* texels are sorted by pixel, so each page's are one run: its end found by bisection */
    for (uint32_t first = 0; first < n && rc == 0;) {
        const uint64_t pg = dn_pixel(texels, refs, first) / page_px, base = pg * page_px;
        uint32_t       last = first + 1, hi = n; /* pixel(last - 1) in the page, pixel(hi) not */
        while (last < hi) {
            const uint32_t mid = last + (hi - last) / 2;
            if (dn_pixel(texels, refs, mid) < base + page_px) last = mid + 1;
            else hi = mid;
        }
        double tf = bk_time_now(), fs = 0.0;
        if (first == 0) res->prep_seconds = tf - t0;
        /* without the texels, the backend's own copy of them: texels [first, last) of its bake */
        if (be && be->i->denoise)
            rc = be->i->denoise(be, &p, o->passes, texels ? texels + first : NULL, first,
                                charts_at + (size_t)first * stride, stride, col + first,
                                band ? band + 3 * (size_t)first : NULL, last - first, base, &fs, err, err_size);
        else
            rc = bk_denoise_texels_cpu(&p, o->passes, texels + first, chart + first, col + first,
                                       band ? band + 3 * (size_t)first : NULL, last - first, base, err, err_size);
        res->filter_seconds += (be && be->i->denoise) ? fs : bk_time_now() - tf;
        res->backend_seconds += bk_time_now() - tf;
        first = last;
    }
    const double tb = bk_time_now();
    if (rc == 0) {
        if (dn_map(&mj, 1, n, sums)) {
            rc = bk_fail(err, err_size, "out of memory for the denoiser");
            goto out;
        }
        dn_map(&mj, 2, n, sums);
        for (uint32_t c = 0; c < charts; ++c)
            res->charts += sums[6 * (size_t)c] + sums[6 * (size_t)c + 1] + sums[6 * (size_t)c + 2] > 0.0;
    }
    res->finish_seconds = bk_time_now() - tb;
out:
    /* the refs' charts as the fill reads them: those left out for their coverage put back */
    for (size_t k = 0; kept && k < chunks; ++k) {
        for (uint32_t q = 0; q < kept_count[k]; ++q) refs[kept[k][q].texel].tri = kept[k][q].chart;
        free(kept[k]);
    }
    free(kept);
    free(kept_count);
    free(charted);
    for (size_t k = 0; runs && k < chunks; ++k) free(runs[k]);
    free(runs);
    free(run_count);
    free(chart);
    free(sums);
    res->seconds = bk_time_now() - t0;
    return rc;
}

/* The texels' colours out of (phase 0) and back into (phase 1) the image: only the texels the
 * denoiser filters go back (those of a chart, baked), the others' pixels are left as they are. */
typedef struct dn_image_job {
    int             phase;
    const bk_texel *texels;
    const uint32_t *tri_chart;
    uint32_t        tri_count;
    const uint8_t  *coverage;
    const float    *var;
    float          *rgb;
    bk_f4          *col;
} dn_image_job;

static void dn_image_run(void *ctx, size_t b, size_t e, int worker)
{
    const dn_image_job *j = ctx;
    for (size_t i = b; i < e; ++i) {
        const size_t   px = j->texels[i].pixel;
        const uint32_t t = j->texels[i].tri;
        if (j->phase == 0) {
            j->col[i].x = j->rgb[3 * px];
            j->col[i].y = j->rgb[3 * px + 1];
            j->col[i].z = j->rgb[3 * px + 2];
            j->col[i].w = j->var[px];
        } else if (t < j->tri_count && j->tri_chart[t] != BK_NONE &&
                   !(j->coverage && j->coverage[px] != BK_COVER_TEXEL)) {
            j->rgb[3 * px] = j->col[i].x;
            j->rgb[3 * px + 1] = j->col[i].y;
            j->rgb[3 * px + 2] = j->col[i].z;
        }
    }
}

int bk_denoise_lightmap(bk_backend *be, float *rgb, const float *var, const bk_denoise_view *v,
                        const bk_denoise_opts *o, bk_denoise_result *res, char *err, size_t err_size)
{
    memset(res, 0, sizeof *res);
    const uint32_t n = v->n; /* the texels' pixel numbers say which page */
    if (o->passes <= 0 || n == 0) return 0;
    const double t0 = bk_time_now();
    bk_f4       *col = malloc(sizeof(bk_f4) * n);
    if (!col) return bk_fail(err, err_size, "out of memory for the denoiser");
    dn_image_job ij;
    memset(&ij, 0, sizeof ij);
    ij.texels = v->texels;
    ij.tri_chart = v->tri_chart;
    ij.tri_count = v->tri_count;
    ij.coverage = v->coverage;
    ij.var = var;
    ij.rgb = rgb;
    ij.col = col;
    bk_parallel_for(n, DN_CHUNK, dn_image_run, &ij); /* texels own distinct pixels */
    const double t1 = bk_time_now();
    int          rc = bk_denoise_texel_colours(be, col, NULL, v, o, res, err, err_size);
    const double t2 = bk_time_now();
    if (rc == 0) {
        ij.phase = 1;
        bk_parallel_for(n, DN_CHUNK, dn_image_run, &ij);
    }
    free(col);
    res->prep_seconds += t1 - t0;
    res->finish_seconds += bk_time_now() - t2;
    res->seconds = bk_time_now() - t0;
    return rc;
}
