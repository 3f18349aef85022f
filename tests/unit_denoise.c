/* unit_denoise.c - the lightmap denoiser (kernels/bk_denoise.h, src/bake/denoise.c) on synthetic
 * pages whose truth is known: noise goes, edges stay, charts never mix, means never move.
 *
 * Each page is built from a true value per texel plus seeded Gaussian noise of a known variance
 * (what the bake would report); the checks compare the filtered texels with the truth.
 */
#include "bk_test.h"
#include "bk_rng.h"
#include "denoise.h"
#include "image.h"
#include "pool.h"
#include "scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W  96
#define H  64
#define TW 0.01f /* texel world size */

typedef struct page {
    bk_f4 col[W * H], pos[W * H], nrm[W * H];
    float truth[W * H];
} page;

static float gauss(uint32_t i, uint32_t k)
{
    float u1 = bk_rng_f(7, i, k, 0), u2 = bk_rng_f(7, i, k, 1);
    return sqrtf(-2.0f * logf(u1 + 1e-12f)) * cosf(6.2831853f * u2);
}

/* A flat page in the z = 0 plane facing +z, chart id `chart` everywhere, value truth(x, y) plus
 * noise of standard deviation sd (grey: r = g = b). */
static void make(page *pg, float (*truth)(int x, int y), float sd, uint32_t seed)
{
    for (int y = 0; y < H; ++y) {
        for (int x = 0; x < W; ++x) {
            int   i = y * W + x;
            float t = truth(x, y), v = t + sd * gauss((uint32_t)i, seed);
            pg->truth[i] = t;
            pg->col[i].x = pg->col[i].y = pg->col[i].z = v;
            pg->col[i].w = sd * sd;
            pg->pos[i].x = (float)x * TW;
            pg->pos[i].y = (float)y * TW;
            pg->pos[i].z = 0;
            pg->pos[i].w = 0;
            pg->nrm[i].x = 0;
            pg->nrm[i].y = 0;
            pg->nrm[i].z = 1;
            pg->nrm[i].w = bk_bits_float(0);
        }
    }
}

static float flat(int x, int y)
{
    (void)x;
    (void)y;
    return 0.5f;
}
static float step_edge(int x, int y)
{
    (void)y;
    return x < W / 2 ? 0.1f : 1.0f;
}

static bk_denoise_params params(void)
{
    bk_denoise_opts o;
    bk_denoise_opts_default(&o);
    bk_denoise_params p;
    p.w = W;
    p.h = H;
    p.texel_world = TW;
    p.sigma_l = o.sigma_l;
    p.sigma_n = o.sigma_n;
    p.sigma_x = o.sigma_x;
    return p;
}

static double rmse(const page *pg, int x0, int x1)
{
    double e = 0;
    int    n = 0;
    for (int y = 0; y < H; ++y)
        for (int x = x0; x < x1; ++x) {
            double d = pg->col[y * W + x].x - pg->truth[y * W + x];
            e += d * d;
            n++;
        }
    return sqrt(e / n);
}

static int run(page *pg)
{
    char              err[256];
    bk_denoise_params p = params();
    bk_denoise_opts   o;
    bk_denoise_opts_default(&o);
    int rc = bk_denoise_page_cpu(&p, o.passes, pg->col, pg->pos, pg->nrm, NULL, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s", err);
    return rc;
}

static page A, B;

/* The whole map over `pages` pages of W x H, denoised with `threads` pool threads; the result and
 * the input (orig) are returned, and the checks on means and untouched texels made. */
static float *whole_map(int pages, int threads, float **orig_out)
{
    bk_pool_set_threads(threads);
    size_t    npx = (size_t)W * H * pages;
    float    *rgb = malloc(sizeof(float) * 3 * npx), *var = malloc(sizeof(float) * npx);
    uint8_t  *cov = malloc(npx);
    bk_texel *tx = malloc(sizeof(bk_texel) * npx);
    uint32_t  tri_chart[3] = { 0, 1, BK_NONE }, n = 0;
    for (size_t px = 0; px < npx; ++px) {
        int   x = (int)(px % W), y = (int)((px / W) % H);
        float v = 0.2f + 0.1f * gauss((uint32_t)px, 9);
        rgb[3 * px] = v;
        rgb[3 * px + 1] = 2 * v;
        rgb[3 * px + 2] = 0.5f * v;
        var[px] = 0.01f;
        cov[px] = (x % 17 == 3) ? 0 : BK_COVER_TEXEL; /* some texels inside geometry */
        if (y == 0) continue;                         /* a row with no texels */
        bk_texel *t = &tx[n++];
        t->px = (float)x * TW;
        t->py = (float)y * TW;
        t->pz = 0;
        t->nx = 0;
        t->ny = 0;
        t->nz = 1;
        /* left third: a degenerate triangle; the first page chart 0, the others chart 1 */
        t->tri = x < W / 3 ? 2u : (px < (size_t)W * H ? 0u : 1u);
        t->pixel = (uint32_t)px;
    }
    float *orig = malloc(sizeof(float) * 3 * npx);
    memcpy(orig, rgb, sizeof(float) * 3 * npx);
    bk_denoise_opts o;
    bk_denoise_opts_default(&o);
    bk_denoise_result     res;
    char                  err[256];
    const bk_denoise_view dv = { .coverage = cov,
                                 .texels = tx,
                                 .n = n,
                                 .tri_chart = tri_chart,
                                 .tri_count = 3,
                                 .w = W,
                                 .h = H,
                                 .pages = pages,
                                 .texel_world = TW };
    BK_EXPECTF(bk_denoise_lightmap(NULL, rgb, var, &dv, &o, &res, err, sizeof err) == 0, "%s", err);
    double s0[2][3] = { { 0 } }, s1[2][3] = { { 0 } };
    int    untouched = 1, changed = 0;
    for (size_t px = 0; px < npx; ++px) {
        int x = (int)(px % W), y = (int)((px / W) % H), c = px < (size_t)W * H ? 0 : 1;
        int filtered = y > 0 && x >= W / 3 && cov[px] == BK_COVER_TEXEL;
        for (int k = 0; k < 3; ++k) {
            if (!filtered) untouched &= rgb[3 * px + k] == orig[3 * px + k];
            else {
                s0[c][k] += orig[3 * px + k];
                s1[c][k] += rgb[3 * px + k];
                changed += rgb[3 * px + k] != orig[3 * px + k];
            }
        }
    }
    BK_EXPECT(untouched);
    BK_EXPECT(changed > 1000);
    BK_EXPECTF(res.charts == 2 && res.texels > 0, "charts %u texels %llu", res.charts, (unsigned long long)res.texels);
    for (int c = 0; c < 2; ++c)
        for (int k = 0; k < 3; ++k)
            BK_EXPECTF(fabs(s1[c][k] / s0[c][k] - 1.0) < 1e-5, "%d pages, chart %d channel %d: sum %.6f -> %.6f", pages,
                       c, k, s0[c][k], s1[c][k]);
    free(var);
    free(cov);
    free(tx);
    *orig_out = orig;
    return rgb;
}

int main(void)
{
    /* noise on a flat chart: the error shrinks several times */
    make(&A, flat, 0.1f, 1);
    double before = rmse(&A, 0, W);
    run(&A);
    double after = rmse(&A, 0, W);
    BK_EXPECTF(after < before / 4, "flat: rmse %.4f -> %.4f", before, after);
    printf("flat chart, sd 0.1: rmse %.4f -> %.4f\n", before, after);

    /* a shadow edge the variance does not explain stays sharp: texels 2 away from it keep their
     * side's value, while the noise on each side still goes */
    make(&A, step_edge, 0.03f, 2);
    double before_l = rmse(&A, 0, W / 2 - 2);
    run(&A);
    double worst = 0;
    for (int y = 0; y < H; ++y) {
        double l = fabs(A.col[y * W + W / 2 - 2].x - 0.1), r = fabs(A.col[y * W + W / 2 + 1].x - 1.0);
        if (l > worst) worst = l;
        if (r > worst) worst = r;
    }
    BK_EXPECTF(worst < 0.1, "edge blurred: a texel near it is off by %.3f", worst);
    BK_EXPECTF(rmse(&A, 0, W / 2 - 2) < before_l / 2, "edge: noise beside it stays (%.4f -> %.4f)", before_l,
               rmse(&A, 0, W / 2 - 2));

    /* a directional bake's bands go through the passes with the colours' weights: bands made as
     * multiples of the colours (k + 1, -0.5 (k + 1)) stay those multiples of the filtered colours */
    {
        make(&A, step_edge, 0.05f, 6);
        bk_f4 *band = malloc(3 * sizeof(bk_f4) * W * H);
        for (int i = 0; i < W * H; ++i)
            for (int k = 0; k < 3; ++k) {
                const float m = (float)(k + 1);
                band[3 * i + k].x = m * A.col[i].x;
                band[3 * i + k].y = -0.5f * m * A.col[i].y;
                band[3 * i + k].z = m * A.col[i].z;
                band[3 * i + k].w = 0.0f;
            }
        char              err[256];
        bk_denoise_params p = params();
        bk_denoise_opts   o;
        bk_denoise_opts_default(&o);
        BK_EXPECTF(bk_denoise_page_cpu(&p, o.passes, A.col, A.pos, A.nrm, band, err, sizeof err) == 0, "%s", err);
        double worst = 0;
        for (int i = 0; i < W * H; ++i)
            for (int k = 0; k < 3; ++k) {
                const float  m = (float)(k + 1);
                const double e[3] = { band[3 * i + k].x - m * A.col[i].x, band[3 * i + k].y + 0.5f * m * A.col[i].y,
                                      band[3 * i + k].z - m * A.col[i].z };
                for (int c = 0; c < 3; ++c)
                    if (fabs(e[c]) > worst) worst = fabs(e[c]);
            }
        BK_EXPECTF(worst < 1e-5, "the bands were not filtered with the colours' weights: off by %.3g", worst);
        free(band);
    }

    /* zero variance and identical values: nothing changes */
    make(&A, flat, 0.0f, 3);
    run(&A);
    int same = 1;
    for (int i = 0; i < W * H; ++i) same &= fabsf(A.col[i].x - 0.5f) < 1e-6f;
    BK_EXPECT(same);

    /* two charts side by side never mix: the left chart's result does not depend on the right's */
    make(&A, flat, 0.1f, 4);
    make(&B, flat, 0.1f, 4);
    for (int y = 0; y < H; ++y)
        for (int x = W / 2; x < W; ++x) {
            A.nrm[y * W + x].w = bk_bits_float(1);
            B.nrm[y * W + x].w = bk_bits_float(1);
            B.col[y * W + x].x = B.col[y * W + x].y = B.col[y * W + x].z = 50.0f; /* a bright neighbour */
        }
    run(&A);
    run(&B);
    int independent = 1;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W / 2; ++x) independent &= memcmp(&A.col[y * W + x], &B.col[y * W + x], sizeof(bk_f4)) == 0;
    BK_EXPECT(independent);

    /* a crease inside a chart (the right half faces +x) and a step out of the plane (the bottom
     * rows lie 5 texels below it): no light crosses either */
    make(&A, flat, 0.02f, 5);
    for (int y = 0; y < H; ++y)
        for (int x = W / 2; x < W; ++x) {
            A.nrm[y * W + x].x = 1;
            A.nrm[y * W + x].z = 0;
            A.col[y * W + x].x = A.col[y * W + x].y = A.col[y * W + x].z = 3.0f;
        }
    for (int y = H - 8; y < H; ++y)
        for (int x = 0; x < W / 2; ++x) {
            A.pos[y * W + x].z = -5 * TW;
            A.col[y * W + x].x = A.col[y * W + x].y = A.col[y * W + x].z = 2.0f;
        }
    run(&A);
    double leak = 0;
    for (int y = 0; y < H - 8; ++y) {
        double d = fabs(A.col[y * W + W / 2 - 1].x - 0.5);
        if (d > leak) leak = d;
    }
    for (int x = 0; x < W / 2; ++x) {
        double d = fabs(A.col[(H - 9) * W + x].x - 0.5);
        if (d > leak) leak = d;
    }
    BK_EXPECTF(leak < 0.1, "light crossed a crease or a step: %.3f", leak);

    /* the whole map: each chart keeps its mean (per channel), texels without a baked value and
     * other pages are untouched; 2 pages, then 12 (73,000 texels: several chunks of the chart
     * sums), where 1, 2 and 16 threads must give the same bytes */
    {
        float *orig, *a = whole_map(2, 0, &orig);
        free(a);
        free(orig);
        const size_t nb = sizeof(float) * 3 * (size_t)W * H * 12;
        float       *o1, *o2, *o16;
        float       *r1 = whole_map(12, 1, &o1), *r2 = whole_map(12, 2, &o2), *r16 = whole_map(12, 16, &o16);
        BK_EXPECT(memcmp(o1, o2, nb) == 0 && memcmp(o1, o16, nb) == 0);
        BK_EXPECTF(memcmp(r1, r2, nb) == 0 && memcmp(r1, r16, nb) == 0, "the denoised map depends on the thread count");
        free(r1);
        free(r2);
        free(r16);
        free(o1);
        free(o2);
        free(o16);
        bk_pool_set_threads(0);
    }
    BK_TEST_DONE();
}
