/* unit_write_threads.c - the write phase does not depend on the thread count (src/bake/fill.c,
 * src/out/image.c on the pool of src/base/pool.h).
 *
 * A synthetic two-page atlas (odd sizes, so bands and chunks end short): rectangular charts with
 * random values, holes of hidden texels inside them, a chart with no valid texel, empty padding.
 * With 1, 2 and 16 threads (bk_pool_set_threads): bk_fill_hidden_texels then bk_image_dilate give
 * the same floats and coverage bytes; the dilation equals the serial one it replaced (copied here
 * as ref_dilate); the PNG, HDR (and EXR when built with it) files are the same bytes; the PNG
 * decodes (stb_image) to exactly bk_image_srgb8(value * exposure) of every pixel, which is what
 * the serial writer gave before, and the HDR to bk_image_rgbe's bytes of every pixel.
 */
#include "bk_test.h"
#include "bk_test_stb_image.h"
#include "fill.h"
#include "image.h"
#include "pool.h"
#include "scene.h"

#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#define W     1031
#define H     517
#define PAGES 2

static uint32_t rng_state = 777u;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}
static float rndf(void) { return (float)(rnd() & 0xffff) / 65535.0f; }

/* The dilation as it was before it ran on the pool (serial, one pass per round). */
static void ref_dilate(float *rgb, uint8_t *coverage, int w, int h, int iterations)
{
    for (int it = 0; it < iterations; ++it) {
        int filled = 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                size_t i = (size_t)y * w + x;
                if (coverage[i] != BK_COVER_NONE) continue;
                float sum[3] = { 0, 0, 0 };
                int   n = 0;
                for (int dy = -1; dy <= 1; ++dy) {
                    int yy = y + dy;
                    if (yy < 0 || yy >= h) continue;
                    for (int dx = -1; dx <= 1; ++dx) {
                        int xx = x + dx;
                        if (xx < 0 || xx >= w || (dx == 0 && dy == 0)) continue;
                        size_t j = (size_t)yy * w + xx;
                        if (coverage[j] != BK_COVER_TEXEL && coverage[j] != BK_COVER_DILATED) continue;
                        sum[0] += rgb[3 * j];
                        sum[1] += rgb[3 * j + 1];
                        sum[2] += rgb[3 * j + 2];
                        n++;
                    }
                }
                if (!n) continue;
                for (int k = 0; k < 3; ++k) rgb[3 * i + k] = sum[k] / (float)n;
                coverage[i] = 3;
                filled++;
            }
        if (!filled) break;
        for (size_t i = 0; i < (size_t)w * h; ++i)
            if (coverage[i] == 3) coverage[i] = BK_COVER_DILATED;
    }
}

/* Charts as rectangles on each page; tx lists their pixels with tri = chart (tri_chart identity). */
static uint32_t make_atlas(float *rgb, uint8_t *cov, bk_texel_ref *tx, uint32_t *tri_chart, uint32_t max_charts)
{
    size_t    page_px = (size_t)W * H, N = page_px * PAGES;
    uint32_t *owner = malloc(sizeof(uint32_t) * N);
    for (size_t i = 0; i < N; ++i) {
        owner[i] = BK_NONE;
        cov[i] = BK_COVER_NONE;
        rgb[3 * i] = rgb[3 * i + 1] = rgb[3 * i + 2] = 0;
    }
    uint32_t charts = 0, ntx = 0;
    for (int p = 0; p < PAGES; ++p)
        for (int tries = 0; tries < 4000 && charts < max_charts; ++tries) {
            int cw = 3 + (int)(rnd() % 90), ch = 3 + (int)(rnd() % 70);
            int x0 = (int)(rnd() % (W - cw)), y0 = (int)(rnd() % (H - ch));
            int clear = 1; /* two texels of padding around each chart */
            for (int y = y0 - 2; y < y0 + ch + 2 && clear; ++y)
                for (int x = x0 - 2; x < x0 + cw + 2; ++x)
                    if (x >= 0 && y >= 0 && x < W && y < H && owner[page_px * p + (size_t)y * W + x] != BK_NONE) {
                        clear = 0;
                        break;
                    }
            if (!clear) continue;
            uint32_t c = charts++;
            tri_chart[c] = c;
            int   empty = c % 97 == 5; /* now and then a chart without a valid texel */
            int   hx = x0 + cw / 3, hy = y0 + ch / 3, hw = cw / 3, hh = ch / 3; /* a hole of hidden texels */
            float base[3] = { rndf(), rndf(), rndf() };
            for (int y = y0; y < y0 + ch; ++y)
                for (int x = x0; x < x0 + cw; ++x) {
                    size_t i = page_px * p + (size_t)y * W + x;
                    owner[i] = c;
                    tx[ntx].tri = c;
                    tx[ntx].pixel = (uint32_t)i;
                    ntx++;
                    int hidden = empty || (x >= hx && x < hx + hw && y >= hy && y < hy + hh) || rnd() % 50 == 0;
                    if (hidden) continue;
                    cov[i] = BK_COVER_TEXEL;
                    for (int k = 0; k < 3; ++k) rgb[3 * i + k] = base[k] * (0.5f + rndf()) * 1.5f;
                }
        }
    free(owner);
    BK_EXPECTF(charts > 100, "%u charts", charts);
    return ntx;
}

static char tmpdir[256];

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_unit_write_threads_%ld", (long)getpid());
    if (mkdir(tmpdir, 0700) != 0) {
        perror(tmpdir);
        return 1;
    }
    const size_t page_px = (size_t)W * H, N = page_px * PAGES;
    const int    iterations = 16;
    const float  exposure = 0.8f;
    float       *rgb0 = malloc(sizeof(float) * 3 * N), *rgb = malloc(sizeof(float) * 3 * N),
          *first = malloc(sizeof(float) * 3 * N);
    uint8_t       *cov0 = malloc(N), *cov = malloc(N), *cov_first = malloc(N);
    bk_texel_ref  *tx = calloc(N, sizeof(bk_texel_ref));
    uint32_t      *tri_chart = malloc(sizeof(uint32_t) * 4096);
    uint32_t       ntx = make_atlas(rgb0, cov0, tx, tri_chart, 4096);
    const char    *ext[3] = { "png", "hdr", "exr" };
    unsigned char *file_first[3] = { NULL, NULL, NULL };
    size_t         size_first[3] = { 0, 0, 0 };
    const int      threads[3] = { 1, 2, 16 };
    char           err[256], path[512];
    for (int t = 0; t < 3; ++t) {
        bk_pool_set_threads(threads[t]);
        memcpy(rgb, rgb0, sizeof(float) * 3 * N);
        memcpy(cov, cov0, N);
        bk_fill_stats st;
        BK_EXPECTF(bk_fill_hidden_texels(rgb, cov, tx, ntx, tri_chart, W, H, PAGES, &st, err, sizeof err) == 0, "%s",
                   err);
        BK_EXPECT(st.filled > 1000 && st.empty_charts > 0);
        if (t == 0) {
            /* the serial dilation of the filled image: what the pool's must give */
            memcpy(first, rgb, sizeof(float) * 3 * N);
            memcpy(cov_first, cov, N);
            for (int p = 0; p < PAGES; ++p)
                ref_dilate(first + 3 * page_px * p, cov_first + page_px * p, W, H, iterations);
        }
        for (int p = 0; p < PAGES; ++p) bk_image_dilate(rgb + 3 * page_px * p, cov + page_px * p, W, H, iterations);
        BK_EXPECTF(!memcmp(rgb, first, sizeof(float) * 3 * N),
                   "%d threads: fill + dilation differ from 1 thread's fill + the serial dilation", threads[t]);
        BK_EXPECTF(!memcmp(cov, cov_first, N), "%d threads: coverage differs", threads[t]);
        size_t dilated = 0;
        for (size_t i = 0; i < N; ++i) dilated += cov[i] == BK_COVER_DILATED;
        BK_EXPECT(dilated > N / 4);
        for (int k = 0; k < 3; ++k) {
            if (k == 2 && !bk_image_exr_supported()) continue;
            snprintf(path, sizeof path, "%s/t%d.%s", tmpdir, threads[t], ext[k]);
            BK_EXPECTF(bk_image_write(path, rgb, W, H * PAGES, exposure, err, sizeof err) == 0, "%s", err);
            size_t         n = 0;
            unsigned char *b = (unsigned char *)bk_test_slurp(path, &n);
            BK_EXPECTF(b && n > 0, "%s not written", path);
            if (t == 0) {
                file_first[k] = b;
                size_first[k] = n;
            } else {
                BK_EXPECTF(n == size_first[k] && !memcmp(b, file_first[k], n),
                           "%d threads: the %s file differs from 1 thread's", threads[t], ext[k]);
                free(b);
            }
            if (t == 0 && k == 0) { /* PNG: exactly the 8-bit sRGB of every value */
                int      x, y, comp;
                stbi_uc *px = stbi_load(path, &x, &y, &comp, 3);
                BK_EXPECT(px && x == W && y == H * PAGES);
                size_t bad = 0;
                for (size_t i = 0; px && i < 3 * N; ++i) bad += px[i] != bk_image_srgb8(rgb[i] * exposure);
                BK_EXPECTF(bad == 0, "%zu PNG values differ from bk_image_srgb8", bad);
                stbi_image_free(px);
            }
            if (t == 0 && k == 1) { /* HDR: every pixel's RGBE bytes, as stb_image decodes them */
                int    x, y, comp;
                float *px = stbi_loadf(path, &x, &y, &comp, 3);
                BK_EXPECT(px && x == W && y == H * PAGES);
                size_t bad = 0;
                for (size_t i = 0; px && i < N; ++i) {
                    uint8_t e[4];
                    bk_image_rgbe(rgb + 3 * i, e);
                    for (int c = 0; c < 3; ++c)
                        bad += px[3 * i + c] != (e[3] ? (float)ldexp((double)e[c], e[3] - 136) : 0.0f);
                }
                BK_EXPECTF(bad == 0, "%zu HDR values differ from bk_image_rgbe", bad);
                stbi_image_free(px);
            }
            remove(path);
        }
    }
    bk_pool_shutdown();
    for (int k = 0; k < 3; ++k) free(file_first[k]);
    free(rgb0);
    free(rgb);
    free(first);
    free(cov0);
    free(cov);
    free(cov_first);
    free(tx);
    free(tri_chart);
    BK_EXPECTF(bk_test_count_files(tmpdir) == 0, "files left in %s", tmpdir);
    rmdir(tmpdir);
    BK_TEST_DONE();
}
