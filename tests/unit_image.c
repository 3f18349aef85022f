/* unit_image.c - lightmap image output and dilation (src/out/image.c).
 *
 * Checked: PNG round trip read back with stb_image (Debian libstb-dev) gives exactly the sRGB
 * encoding of rgb * exposure (values computed here independently, plus fixed anchors); HDR round
 * trip within RGBE precision (half a step: max/256 of the decoded maximum, max/255.5 of the
 * original one when it rounds up to the next power of two) and without exposure, run-length and flat
 * scanlines; bk_image_rgbe rounds to nearest (a carry to 256 bumps the exponent) and, on 300k
 * seeded random channels, is unbiased for the byte * 2^(E-136) decoder (stb_image's) where
 * stb_image_write's truncating encoder is half a step dark, with a smaller worst error per
 * channel (both decoders measured and printed); unknown extensions and unwritable paths fail
 * with the path in the message and leave no file (nor a temporary one); the reader refuses a PNG
 * chunk longer than the file, an HDR run of length 0 or past the end, sides over 16384 and images
 * over a pixel budget; dilation fills only uncovered texels, from covered 8-neighbours, one ring
 * per iteration, marks them BK_COVER_DILATED, never touches covered texels, and after one ring
 * around a rasterized atlas every texel a bilinear lookup inside a chart can reach holds a value.
 * The PNG writer's 64-row bands: see test_png_bands.
 */
#include "atlas.h"
#include "image.h"
#include "pool.h"
#include "bk_test.h"
#include "raster.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "bk_test_stb_image.h"
/* the old .hdr encoder (truncating), to compare with */
#include "bk_test_stb_write.h"

static char tmpdir[256];

static int files_in_tmpdir(void) { return bk_test_count_files(tmpdir); }

/* sRGB by the IEC 61966-2-1 formula, independently of image.c. */
static int srgb_ref(double linear)
{
    if (!(linear > 0)) return 0;
    if (linear >= 1) return 255;
    double e = linear <= 0.0031308 ? 12.92 * linear : 1.055 * pow(linear, 1 / 2.4) - 0.055;
    return (int)floor(e * 255 + 0.5);
}

static void test_png(void)
{
    /* fixed anchors */
    BK_EXPECT(bk_image_srgb8(0.0f) == 0);
    BK_EXPECT(bk_image_srgb8(1.0f) == 255);
    BK_EXPECT(bk_image_srgb8(2.0f) == 255);
    BK_EXPECT(bk_image_srgb8(-1.0f) == 0);
    BK_EXPECT(bk_image_srgb8(NAN) == 0);
    BK_EXPECTF(bk_image_srgb8(0.5f) == 188, "0.5 -> %d", bk_image_srgb8(0.5f));             /* 0.7354 * 255 */
    BK_EXPECTF(bk_image_srgb8(0.21586f) == 128, "0.21586 -> %d", bk_image_srgb8(0.21586f)); /* sRGB 128/255 */
    BK_EXPECTF(bk_image_srgb8(0.001f) == 3, "0.001 -> %d", bk_image_srgb8(0.001f));         /* linear segment */

    int    w = 37, h = 11;
    float *rgb = malloc(sizeof(float) * 3 * w * h);
    for (int i = 0; i < 3 * w * h; ++i) rgb[i] = (float)i / (3 * w * h - 1) * 0.6f; /* 0 .. 0.6 */
    rgb[0] = -0.5f;
    rgb[1] = NAN;
    rgb[2] = 100.0f;
    char path[600], err[700];
    snprintf(path, sizeof path, "%s/out.png", tmpdir);
    float exposure = 1.5f;
    BK_EXPECTF(bk_image_write(path, rgb, w, h, exposure, err, sizeof err) == 0, "%s", err);
    int            rw, rh, rc;
    unsigned char *back = stbi_load(path, &rw, &rh, &rc, 3);
    BK_EXPECTF(back != NULL, "stb_image cannot read %s", path);
    if (back) {
        BK_EXPECT(rw == w && rh == h && rc == 3);
        int diff = 0, first = -1;
        for (int i = 0; i < 3 * w * h; ++i) {
            int want = srgb_ref((double)(rgb[i] * exposure));
            if (back[i] != want) {
                diff++;
                if (first < 0) first = i;
            }
        }
        BK_EXPECTF(diff == 0, "%d PNG values differ from the sRGB encoding (first at %d: %d, want %d)", diff, first,
                   first >= 0 ? back[first] : 0, first >= 0 ? srgb_ref((double)(rgb[first] * exposure)) : 0);
        BK_EXPECT(back[0] == 0 && back[1] == 0 && back[2] == 255);
        stbi_image_free(back);
    }
    /* upper-case extension */
    snprintf(path, sizeof path, "%s/OUT2.PNG", tmpdir);
    BK_EXPECTF(bk_image_write(path, rgb, w, h, 1.0f, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(files_in_tmpdir() == 2);
    remove(path);
    snprintf(path, sizeof path, "%s/out.png", tmpdir);
    remove(path);
    free(rgb);
}

static void test_hdr(void)
{
    int      w = 16, h = 9;
    float   *rgb = malloc(sizeof(float) * 3 * w * h);
    uint32_t st = 7;
    for (int i = 0; i < 3 * w * h; ++i) {
        st = st * 1664525u + 1013904223u;
        rgb[i] = (float)pow(10.0, -3.0 + 6.0 * (st >> 8) / 16777216.0); /* 1e-3 .. 1e3 */
    }
    char path[600], err[700];
    snprintf(path, sizeof path, "%s/out.hdr", tmpdir);
    BK_EXPECTF(bk_image_write(path, rgb, w, h, 4.0f, err, sizeof err) == 0, "%s", err);
    int    rw, rh, rc;
    float *back = stbi_loadf(path, &rw, &rh, &rc, 3);
    BK_EXPECTF(back != NULL, "stb_image cannot read %s", path);
    if (back) {
        BK_EXPECT(rw == w && rh == h);
        int    bad = 0;
        double worst = 0;
        for (int p = 0; p < w * h; ++p) {
            float m = fmaxf(rgb[3 * p], fmaxf(rgb[3 * p + 1], rgb[3 * p + 2]));
            for (int k = 0; k < 3; ++k) {
                /* RGBE: 8 mantissa bits under the pixel's largest channel; exposure not applied */
                double e = fabs((double)back[3 * p + k] - rgb[3 * p + k]) / m;
                worst = fmax(worst, e);
                bad += e > 1.0 / 255.5; /* half a step (see test_hdr_rounding) */
            }
        }
        BK_EXPECTF(bad == 0, "%d HDR values beyond RGBE precision (worst %.4f of the pixel maximum)", bad, worst);
        stbi_image_free(back);
    }
    remove(path);
    free(rgb);
}

static void stbw_to_mem(void *ctx, void *data, int size)
{
    struct {
        unsigned char *p;
        size_t         n, cap;
    } *m = ctx;
    if (m->n + (size_t)size > m->cap) return;
    memcpy(m->p + m->n, data, (size_t)size);
    m->n += (size_t)size;
}

/* The decoders: stb_image (and most loaders) read byte * 2^(E-136); Radiance's colr_color reads
 * (byte + 0.5) * 2^(E-136). */
static double rgbe_dec(const uint8_t *p, int k, double half)
{
    return p[3] ? ((double)p[k] + half) * ldexp(1.0, p[3] - 136) : 0.0;
}

static void test_hdr_rounding(void)
{
    /* fixed cases */
    uint8_t q[4];
    float   v1[3] = { 0.999f, 0.5f, 0.0f }; /* 0.999 * 256 = 255.74 rounds to 256: exponent + 1 */
    bk_image_rgbe(v1, q);
    BK_EXPECTF(q[0] == 128 && q[1] == 64 && q[2] == 0 && q[3] == 129, "0.999,0.5,0 -> %d %d %d %d", q[0], q[1], q[2],
               q[3]);
    float v2[3] = { 1.0f, 0.25f, 0.126f }; /* exact: 128 at E 129; 0.126 * 128 = 16.13 -> 16 */
    bk_image_rgbe(v2, q);
    BK_EXPECTF(q[0] == 128 && q[1] == 32 && q[2] == 16 && q[3] == 129, "1,0.25,0.126 -> %d %d %d %d", q[0], q[1], q[2],
               q[3]);
    float v3[3] = { 0.75f, 0.7f, 0.002f }; /* 0.7 * 256 = 179.2 -> 179, 0.002 * 256 = 0.512 -> 1 */
    bk_image_rgbe(v3, q);
    BK_EXPECTF(q[0] == 192 && q[1] == 179 && q[2] == 1 && q[3] == 128, "0.75,0.7,0.002 -> %d %d %d %d", q[0], q[1],
               q[2], q[3]);
    float v4[3] = { -1.0f, NAN, 0.0f };
    bk_image_rgbe(v4, q);
    BK_EXPECT(q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0);
    float v5[3] = { INFINITY, 1.0f, 0.0f };
    bk_image_rgbe(v5, q);
    BK_EXPECTF(q[3] == 255 && q[0] == 255, "inf -> %d %d %d %d", q[0], q[1], q[2], q[3]);

    /* random pixels: the largest channel 1e-3..1e3, the others a random fraction of it */
    enum { N = 100000 };
    float   *px = malloc(sizeof(float) * 3 * N);
    uint8_t *nw = malloc(4 * (size_t)N);
    struct {
        unsigned char *p;
        size_t         n, cap;
    } mem = { malloc(4 * (size_t)N + 4096), 0, 4 * (size_t)N + 4096 };
    uint64_t st = 12345;
    for (int i = 0; i < N; ++i) {
        double r[4];
        for (int k = 0; k < 4; ++k) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            r[k] = (double)(st >> 11) / 9007199254740992.0;
        }
        double m = pow(10.0, -3.0 + 6.0 * r[0]);
        int    big = i % 3;
        for (int k = 0; k < 3; ++k) px[3 * i + k] = (float)(k == big ? m : m * r[1 + k]);
        bk_image_rgbe(px + 3 * i, nw + 4 * (size_t)i);
    }
    /* the old encoder's bytes: a 1-pixel-wide image is written flat (no run-length) */
    BK_EXPECT(stbi_write_hdr_to_func(stbw_to_mem, &mem, 1, N, 3, px));
    const uint8_t *old = NULL;
    char           head[64];
    snprintf(head, sizeof head, "-Y %d +X 1\n", N);
    for (size_t i = 0; i + strlen(head) <= mem.n; ++i)
        if (!memcmp(mem.p + i, head, strlen(head))) {
            old = mem.p + i + strlen(head);
            break;
        }
    BK_EXPECT(old && (size_t)(old - mem.p) + 4 * (size_t)N == mem.n);
    if (old) {
        /* relative error of every channel at least 1/8 of its pixel's largest (mantissa >= 16) */
        double sum[2][2] = { { 0 } }, worst[2][2][3] = { { { 0 } } }, half_step_bad = 0;
        long   cnt = 0;
        for (int i = 0; i < N; ++i) {
            const float *p = px + 3 * i;
            double       m = fmax(p[0], fmax(p[1], p[2]));
            for (int k = 0; k < 3; ++k) {
                double v = p[k];
                /* half a step of the rounded encoding: everything it writes is within it */
                double dn = rgbe_dec(nw + 4 * (size_t)i, k, 0.0);
                /* max/256 of the decoded maximum; of the original m that is m/255.5 at worst (m
                 * rounded up to 2^e: the step doubled, a half step is 2^(e-8) and m >= 255.5 2^(e-8)) */
                double dm = fmax(rgbe_dec(nw + 4 * (size_t)i, 0, 0.0),
                                 fmax(rgbe_dec(nw + 4 * (size_t)i, 1, 0.0), rgbe_dec(nw + 4 * (size_t)i, 2, 0.0)));
                if (fabs(dn - v) > 0.5 * ldexp(1.0, nw[4 * (size_t)i + 3] - 136) * (1 + 1e-6) ||
                    fabs(dn - v) > dm / 256 * (1 + 1e-6) || fabs(dn - v) > m / 255.5)
                    half_step_bad++;
                if (v < m / 8) continue;
                cnt++;
                for (int enc = 0; enc < 2; ++enc)
                    for (int dec = 0; dec < 2; ++dec) {
                        const uint8_t *b = enc ? old + 4 * (size_t)i : nw + 4 * (size_t)i;
                        double         e = (rgbe_dec(b, k, dec ? 0.5 : 0.0) - v) / v;
                        sum[enc][dec] += e;
                        worst[enc][dec][k] = fmax(worst[enc][dec][k], fabs(e));
                    }
            }
        }
        const char *en[2] = { "rounded (baker)", "truncated (stb_image_write)" }, *dn[2] = { "byte", "byte+0.5" };
        for (int enc = 0; enc < 2; ++enc)
            for (int dec = 0; dec < 2; ++dec)
                printf("hdr %-28s decoded %-8s: mean relative error %+.5f%%, max |error| R %.3f%% G %.3f%% B %.3f%% "
                       "(%ld channels >= max/8)\n",
                       en[enc], dn[dec], 100 * sum[enc][dec] / (double)cnt, 100 * worst[enc][dec][0],
                       100 * worst[enc][dec][1], 100 * worst[enc][dec][2], cnt);
        BK_EXPECTF(half_step_bad == 0, "%.0f channels beyond half a step (or max/256) of the rounded encoding",
                   half_step_bad);
        /* unbiased for stb_image's decoder: the statistical error of the mean is ~2e-5 here */
        BK_EXPECTF(fabs(sum[0][0] / (double)cnt) < 2e-4, "rounded RGBE bias %+g with the byte decoder",
                   sum[0][0] / (double)cnt);
        /* the old encoder is dark there by half a step on average; with +0.5 it is the unbiased one */
        BK_EXPECTF(sum[1][0] / (double)cnt < -2e-3, "truncated RGBE bias %+g: expected clearly negative",
                   sum[1][0] / (double)cnt);
        BK_EXPECTF(fabs(sum[1][1] / (double)cnt) < 2e-4, "truncated RGBE + 0.5 decoder bias %+g",
                   sum[1][1] / (double)cnt);
        for (int k = 0; k < 3; ++k)
            BK_EXPECTF(worst[0][0][k] < worst[1][0][k] && worst[0][0][k] <= 0.5 / 16 + 1e-9,
                       "channel %d: max relative error %g (old %g)", k, worst[0][0][k], worst[1][0][k]);
    }

    /* the file: what stb_image reads back is exactly the byte decoder of bk_image_rgbe, for a
     * run-length image (w >= 8, with runs of zeros and equal pixels) and a flat one (w < 8) */
    int sizes[2][2] = { { 300, 7 }, { 5, 9 } };
    for (int t = 0; t < 2; ++t) {
        int    w = sizes[t][0], h = sizes[t][1];
        float *img = malloc(sizeof(float) * 3 * w * h);
        for (int i = 0; i < w * h; ++i)
            for (int k = 0; k < 3; ++k) {
                int x = i % w;
                img[3 * i + k] = x < 40 ? 0.0f : x < 90 ? 0.5f : px[(3 * (size_t)i + k) % (3 * N)];
            }
        char path[600], err[700];
        snprintf(path, sizeof path, "%s/round.hdr", tmpdir);
        BK_EXPECTF(bk_image_write(path, img, w, h, 1.0f, err, sizeof err) == 0, "%s", err);
        int    rw, rh, rc;
        float *back = stbi_loadf(path, &rw, &rh, &rc, 3);
        BK_EXPECTF(back && rw == w && rh == h, "stb_image cannot read %s (%dx%d)", path, w, h);
        int bad = 0;
        for (int i = 0; back && i < w * h; ++i) {
            uint8_t b[4];
            bk_image_rgbe(img + 3 * i, b);
            float m = fmaxf(img[3 * i], fmaxf(img[3 * i + 1], img[3 * i + 2]));
            for (int k = 0; k < 3; ++k)
                bad += back[3 * i + k] != (float)rgbe_dec(b, k, 0.0) ||
                       fabsf(back[3 * i + k] - img[3 * i + k]) > m / 255.5f;
        }
        BK_EXPECTF(bad == 0, "%dx%d: %d channels read back differently from bk_image_rgbe or beyond max/255.5", w, h,
                   bad);
        if (back) stbi_image_free(back);
        /* the image's own words are read back by baker's reader too */
        float *mine = NULL;
        int    mw, mh;
        BK_EXPECTF(bk_image_read(path, &mine, &mw, &mh, err, sizeof err) == 0 && mw == w && mh == h, "%s", err);
        free(mine);
        remove(path);
        free(img);
    }
    free(px);
    free(nw);
    free(mem.p);
}

static void test_errors(void)
{
    float rgb[12] = { 0 };
    char  path[600], err[700];
    snprintf(path, sizeof path, "%s/out.jpg", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) != 0);
    BK_EXPECTF(strstr(err, path) && strstr(err, ".png") && strstr(err, ".hdr"), "message: %s", err);
    snprintf(path, sizeof path, "%s/noext", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) != 0);
    snprintf(path, sizeof path, "%s/missing/dir/out.png", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) != 0);
    BK_EXPECTF(strstr(err, path) && strstr(err, "cannot write"), "message: %s", err);
    snprintf(path, sizeof path, "%s/missing/dir/out.hdr", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) != 0);
    BK_EXPECTF(files_in_tmpdir() == 0, "%d files left behind by failed writes", files_in_tmpdir());
    /* a failed write does not clobber an existing image */
    snprintf(path, sizeof path, "%s/keep.png", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) == 0);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, NAN, err, sizeof err) != 0);
    struct stat st;
    BK_EXPECT(stat(path, &st) == 0 && st.st_size > 0);
    BK_EXPECT(files_in_tmpdir() == 1);
    remove(path);

    /* reading: a PNG chunk whose length runs past the end is refused before stb_image allocates
     * for it (fuzz_image found a 1 GB IDAT claim in a 100-byte file); sides over the limit and
     * over a pixel budget are refused before decoding */
    static const uint8_t sig_ihdr[] = { 0x89, 'P',  'N',  'G',  13, 10, 26,   10,  0,   0,   0,   13,  'I',  'H', 'D',
                                        'R',  0,    0,    0,    16, 0,  0,    0,   16,  8,   2,   0,   0,    0,   0x90,
                                        0x91, 0x68, 0x32, 0x40, 0,  3,  0x1b, 'I', 'D', 'A', 'T', 'x', 0x5e, 1 };
    snprintf(path, sizeof path, "%s/claims.png", tmpdir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(sig_ihdr, 1, sizeof sig_ihdr, f);
        fclose(f);
    }
    float *got = (float *)1;
    int    w = 3, h = 3;
    BK_EXPECT(bk_image_read(path, &got, &w, &h, err, sizeof err) != 0 && !got && !w && !h);
    BK_EXPECTF(strstr(err, path) && strstr(err, "past the end"), "message: %s", err);
    remove(path);
    /* an HDR run-length scanline with a run of length 0, or cut short: stb_image would loop for
     * ever (fuzz_image found it); refused first */
    const char *runs[2] = { "\x02\x02\x00\x08\x00", "\x02\x02\x00\x08\x88" };
    const char *why[2] = { "run of length 0", "past the end" };
    snprintf(path, sizeof path, "%s/runs.hdr", tmpdir);
    for (int k = 0; k < 2; ++k) {
        f = fopen(path, "wb");
        if (f) {
            fputs("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 8\n", f);
            fwrite(runs[k], 1, 5, f);
            fclose(f);
        }
        BK_EXPECT(bk_image_read(path, &got, &w, &h, err, sizeof err) != 0 && !got);
        BK_EXPECTF(strstr(err, path) && strstr(err, why[k]), "message: %s", err);
    }
    remove(path);
    snprintf(path, sizeof path, "%s/big.hdr", tmpdir);
    f = fopen(path, "wb");
    if (f) {
        fputs("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 16385 +X 4\n", f);
        fclose(f);
    }
    BK_EXPECT(bk_image_read(path, &got, &w, &h, err, sizeof err) != 0 && !got);
    BK_EXPECTF(strstr(err, path) && strstr(err, "4x16385") && strstr(err, "1..16384"), "message: %s", err);
    remove(path);
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) == 0);
    BK_EXPECT(bk_image_read_max(path, 3, &got, &w, &h, err, sizeof err) != 0 && !got);
    BK_EXPECTF(strstr(err, path) && strstr(err, "more than the 3 pixels"), "message: %s", err);
    BK_EXPECT(bk_image_read_max(path, 4, &got, &w, &h, err, sizeof err) == 0 && got && w == 2 && h == 2);
    free(got);
    remove(path);
}

static void test_dilate_small(void)
{
    int     w = 9, h = 7;
    float   rgb[9 * 7 * 3], orig[9 * 7 * 3];
    uint8_t cov[9 * 7];
    memset(cov, 0, sizeof cov);
    for (int i = 0; i < w * h * 3; ++i) rgb[i] = -7.0f; /* garbage in uncovered texels */
    /* covered: a 2x2 block at (3..4, 2..3) with distinct colours */
    for (int y = 2; y <= 3; ++y)
        for (int x = 3; x <= 4; ++x) {
            int i = y * w + x;
            cov[i] = BK_COVER_TEXEL;
            for (int k = 0; k < 3; ++k) rgb[3 * i + k] = (float)(x * 10 + y + k);
        }
    memcpy(orig, rgb, sizeof rgb);
    bk_image_dilate(rgb, cov, w, h, 1);
    /* covered texels unchanged, bit for bit */
    for (int i = 0; i < w * h; ++i)
        if (orig[3 * i] != -7.0f) BK_EXPECT(memcmp(rgb + 3 * i, orig + 3 * i, 12) == 0 && cov[i] == BK_COVER_TEXEL);
    /* (2,1) touches only (3,2): its colour */
    int i = 1 * w + 2;
    BK_EXPECT(cov[i] == BK_COVER_DILATED && rgb[3 * i] == 32.0f && rgb[3 * i + 2] == 34.0f);
    /* (3,1) touches (3,2) and (4,2): their average */
    i = 1 * w + 3;
    BK_EXPECT(cov[i] == BK_COVER_DILATED && rgb[3 * i] == 0.5f * (32.0f + 42.0f));
    /* (5,2) touches (4,2) and (4,3) */
    i = 2 * w + 5;
    BK_EXPECT(cov[i] == BK_COVER_DILATED && rgb[3 * i] == 0.5f * (42.0f + 43.0f));
    /* one ring only */
    int ring1 = 0;
    for (int j = 0; j < w * h; ++j) ring1 += cov[j] == BK_COVER_DILATED;
    BK_EXPECTF(ring1 == 16 - 4, "first ring: %d texels", ring1);
    i = 0 * w + 3;
    BK_EXPECT(cov[i] == BK_COVER_NONE && rgb[3 * i] == -7.0f);
    /* more rounds fill everything, from dilated texels too; covered still unchanged */
    bk_image_dilate(rgb, cov, w, h, 100);
    int empty = 0, changed = 0;
    for (int j = 0; j < w * h; ++j) {
        empty += cov[j] == BK_COVER_NONE;
        if (orig[3 * j] != -7.0f) changed += memcmp(rgb + 3 * j, orig + 3 * j, 12) != 0;
        BK_EXPECT(rgb[3 * j] >= 32.0f && rgb[3 * j] <= 43.0f);
    }
    BK_EXPECT(empty == 0 && changed == 0);
    /* nothing covered: nothing happens */
    memset(cov, 0, sizeof cov);
    for (int j = 0; j < w * h * 3; ++j) rgb[j] = 1.0f;
    bk_image_dilate(rgb, cov, w, h, 5);
    for (int j = 0; j < w * h; ++j) BK_EXPECT(cov[j] == BK_COVER_NONE && rgb[3 * j] == 1.0f);
}

/* A rasterized atlas of a box: after padding+1 rounds every 8-neighbour of a covered texel has a
 * value (bilinear lookups inside charts never see black), and no chart's colour crossed into
 * another chart's covered texels. */
static void test_dilate_atlas(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    float P[8][3];
    for (int i = 0; i < 8; ++i) {
        P[i][0] = (float)(i & 1);
        P[i][1] = (float)((i >> 1) & 1);
        P[i][2] = (float)((i >> 2) & 1);
    }
    static const uint32_t q[6][4] = { { 0, 2, 3, 1 }, { 4, 5, 7, 6 }, { 0, 1, 5, 4 },
                                      { 2, 6, 7, 3 }, { 0, 4, 6, 2 }, { 1, 3, 7, 5 } };
    s.vertex_count = 8;
    s.positions = &P[0][0];
    s.tri_count = 12;
    uint32_t tv[36];
    for (int f = 0; f < 6; ++f) {
        tv[6 * f] = q[f][0];
        tv[6 * f + 1] = q[f][1];
        tv[6 * f + 2] = q[f][2];
        tv[6 * f + 3] = q[f][0];
        tv[6 * f + 4] = q[f][2];
        tv[6 * f + 5] = q[f][3];
    }
    s.tri_v = tv;
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = 48;
    o.padding = 3;
    bk_atlas a;
    char     err[256];
    if (bk_atlas_build(&s, &o, &a, err, sizeof err) != 0) {
        BK_EXPECTF(0, "%s", err);
        return;
    }
    bk_texel *tx;
    uint32_t  n;
    uint8_t  *cov;
    if (bk_atlas_rasterize(&s, &a, &tx, &n, &cov, err, sizeof err) != 0) {
        BK_EXPECTF(0, "%s", err);
        bk_atlas_free(&a);
        return;
    }
    int    W = a.width, H = a.height;
    float *rgb = calloc((size_t)3 * W * H, sizeof(float));
    for (uint32_t i = 0; i < n; ++i) {
        rgb[3 * tx[i].pixel] = tx[i].px + 1;
        rgb[3 * tx[i].pixel + 1] = tx[i].py + 1;
        rgb[3 * tx[i].pixel + 2] = tx[i].pz + 1;
    }
    float *before = malloc(sizeof(float) * 3 * W * H);
    memcpy(before, rgb, sizeof(float) * 3 * W * H);
    uint8_t *cov0 = malloc((size_t)W * H);
    memcpy(cov0, cov, (size_t)W * H);
    bk_image_dilate(rgb, cov, W, H, o.padding + 1);
    int holes = 0, changed = 0, dark = 0;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            size_t i = (size_t)y * W + x;
            if (cov0[i]) {
                changed += memcmp(rgb + 3 * i, before + 3 * i, 12) != 0 || cov[i] != BK_COVER_TEXEL;
                for (int dy = -1; dy <= 1; ++dy)
                    for (int dx = -1; dx <= 1; ++dx) {
                        int xx = x + dx, yy = y + dy;
                        if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
                        holes += cov[(size_t)yy * W + xx] == BK_COVER_NONE;
                    }
            } else if (cov[i]) dark += !(rgb[3 * i] >= 1.0f); /* filled with a real colour (>= 1) */
        }
    BK_EXPECTF(holes == 0, "%d unfilled texels next to covered ones after dilation", holes);
    BK_EXPECTF(changed == 0, "%d covered texels changed by dilation", changed);
    BK_EXPECTF(dark == 0, "%d dilated texels without a colour", dark);
    free(rgb);
    free(before);
    free(cov0);
    free(tx);
    free(cov);
    bk_atlas_free(&a);
}

/* The PNG writer's bands (64 rows, deflated on the pool, see write_png): for sizes around the
 * band height and odd widths, with 1, 2 and 16 threads the files are the same bytes; every chunk's
 * CRC-32 is right; the IDAT data is one zlib stream that zlib's uncompress accepts (it checks the
 * Adler-32, and a stream with the Adler-32 changed is refused: the check is live) and that holds
 * exactly h rows of filter byte 1 (Sub) + the Sub-filtered sRGB bytes; stb_image decodes it to
 * bk_image_srgb8(value * exposure) of every channel. */
static uint32_t png_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int png_encode(const float *rgb, int w, int h, float exposure, char **out, size_t *n)
{
    char err[256];
    *out = NULL;
    *n = 0;
    FILE *f = open_memstream(out, n);
    if (!f) return -1;
    int rc = bk_image_write_file(f, "bands.png", rgb, w, h, exposure, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    fclose(f);
    return rc;
}

static void check_png_file(const uint8_t *p, size_t n, const float *rgb, int w, int h, float exposure)
{
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    BK_EXPECT(n > 8 + 25 + 12 && memcmp(p, sig, 8) == 0);
    uint8_t *z = malloc(n);
    size_t   zn = 0, at = 8;
    int      idat = 0, iend = 0, bad_crc = 0;
    while (at + 12 <= n && !iend) {
        uint32_t len = png_be32(p + at);
        if (at + 12 + len > n) break;
        if (crc32(0, p + at + 4, len + 4) != png_be32(p + at + 8 + len)) bad_crc++;
        if (at == 8)
            BK_EXPECT(len == 13 && memcmp(p + at + 4, "IHDR", 4) == 0 && png_be32(p + at + 8) == (uint32_t)w &&
                      png_be32(p + at + 12) == (uint32_t)h && p[at + 16] == 8 && p[at + 17] == 2);
        if (memcmp(p + at + 4, "IDAT", 4) == 0) {
            memcpy(z + zn, p + at + 8, len);
            zn += len;
            idat++;
        }
        if (memcmp(p + at + 4, "IEND", 4) == 0) iend = 1;
        at += 12 + len;
    }
    BK_EXPECTF(bad_crc == 0, "%dx%d: %d chunks with a wrong CRC-32", w, h, bad_crc);
    BK_EXPECTF(iend && at == n, "%dx%d: IEND missing or not at the end", w, h);
    BK_EXPECTF(idat == (h + 63) / 64, "%dx%d: %d IDAT chunks, one per 64-row band expected", w, h, idat);
    const size_t stride = (size_t)w * 3 + 1, raw = stride * h;
    uint8_t     *f = malloc(raw + 1);
    uLongf       got = raw + 1;
    int          zrc = uncompress(f, &got, z, zn);
    BK_EXPECTF(zrc == Z_OK && got == raw, "%dx%d: uncompress %d, %lu bytes of %zu", w, h, zrc, (unsigned long)got, raw);
    if (zrc == Z_OK && got == raw) {
        int wrong = 0;
        for (int y = 0; y < h; ++y) {
            const uint8_t *row = f + stride * y;
            if (row[0] != 1) {
                wrong++;
                continue;
            }
            uint8_t prev[3] = { 0, 0, 0 };
            for (int x = 0; x < w; ++x)
                for (int c = 0; c < 3; ++c) {
                    uint8_t v = (uint8_t)(row[1 + 3 * x + c] + prev[c]);
                    prev[c] = v;
                    if (v != bk_image_srgb8(rgb[((size_t)y * w + x) * 3 + c] * exposure)) wrong++;
                }
        }
        BK_EXPECTF(wrong == 0, "%dx%d: %d filter bytes or channels wrong after uncompress", w, h, wrong);
        z[zn - 1] ^= 0x5a; /* the Adler-32's last byte */
        got = raw + 1;
        BK_EXPECTF(uncompress(f, &got, z, zn) == Z_DATA_ERROR, "%dx%d: a wrong Adler-32 was not noticed", w, h);
    }
    int      x, y, comp;
    stbi_uc *d = stbi_load_from_memory(p, (int)n, &x, &y, &comp, 3);
    BK_EXPECTF(d && x == w && y == h, "%dx%d: stb_image cannot decode it: %s", w, h, stbi_failure_reason());
    if (d && x == w && y == h) {
        int wrong = 0;
        for (size_t i = 0; i < (size_t)w * h * 3; ++i) wrong += d[i] != bk_image_srgb8(rgb[i] * exposure);
        BK_EXPECTF(wrong == 0, "%dx%d: %d channels decode wrong (stb_image)", w, h, wrong);
    }
    stbi_image_free(d);
    free(f);
    free(z);
}

static void test_png_bands(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 7, 3 }, { 333, 63 }, { 17, 64 }, { 5, 65 }, { 1031, 130 }, { 2, 200 } };
    static const int threads[3] = { 1, 2, 16 };
    uint32_t         s = 12345u;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        const int w = sizes[k][0], h = sizes[k][1];
        float    *rgb = malloc(sizeof(float) * 3 * w * h);
        for (size_t i = 0; i < (size_t)w * h * 3; ++i) {
            s = s * 1664525u + 1013904223u;
            /* smooth ramps with noise, some values out of [0, 1] */
            rgb[i] = (float)((i / 3) % (size_t)w) / (float)w * 0.8f + (float)((s >> 8) & 0xff) / 255.0f * 0.4f - 0.1f;
        }
        char  *first = NULL;
        size_t first_n = 0;
        for (int t = 0; t < 3; ++t) {
            bk_pool_set_threads(threads[t]);
            char  *p;
            size_t n;
            BK_EXPECT(png_encode(rgb, w, h, 1.5f, &p, &n) == 0);
            if (!t) {
                first = p;
                first_n = n;
                check_png_file((const uint8_t *)p, n, rgb, w, h, 1.5f);
                continue;
            }
            BK_EXPECTF(n == first_n && memcmp(p, first, n) == 0, "%dx%d: %d threads give other bytes than 1", w, h,
                       threads[t]);
            free(p);
        }
        free(first);
        free(rgb);
    }
    bk_pool_set_threads(0);
}

/* bk_image_srgb8_fast with bk_image_srgb8_thresholds gives bk_image_srgb8's byte: on every 97th
 * float of [0, 1], on the 4096 floats either side of each threshold (where a threshold one ulp
 * off would show), and on values outside [0, 1], infinities, NaNs and subnormals. */
static void test_srgb8_fast(void)
{
    float t[256];
    bk_image_srgb8_thresholds(t);
    size_t bad = 0, n = 0;
    for (uint32_t b = 0; b <= 0x3f800000u; b += 97) {
        float x;
        memcpy(&x, &b, sizeof x);
        bad += bk_image_srgb8_fast(t, x) != bk_image_srgb8(x);
        n++;
    }
    for (int k = 1; k < 256; ++k) {
        BK_EXPECTF(k == 1 || t[k] > t[k - 1], "thresholds %d, %d not increasing", k - 1, k);
        uint32_t c;
        memcpy(&c, &t[k], sizeof c);
        for (uint32_t b = c > 4096 ? c - 4096 : 0; b <= c + 4096; ++b) {
            float x;
            memcpy(&x, &b, sizeof x);
            bad += bk_image_srgb8_fast(t, x) != bk_image_srgb8(x);
            n++;
        }
    }
    static const float odd[] = { -0.0f,      -1e-30f, -1.0f,   -INFINITY, INFINITY,       NAN,        -NAN, 1.0f,
                                 1.0000001f, 2.0f,    3.4e38f, 1e-45f,    1.1754942e-38f, 0.0031308f, 0.5f };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; ++i) {
        bad += bk_image_srgb8_fast(t, odd[i]) != bk_image_srgb8(odd[i]);
        n++;
    }
    BK_EXPECTF(bad == 0, "%zu of %zu floats: the threshold search differs from bk_image_srgb8", bad, n);
}

/* The dilation as a full scan of every texel each round (with ids as bk_image_dilate_charts
 * takes them): what the windowed rounds must equal. */
static void ref_dilate_ids(float *rgb, uint8_t *cov, const uint32_t *ids, int w, int h, int iterations)
{
    for (int it = 0; it < iterations; ++it) {
        int filled = 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                size_t i = (size_t)y * w + x;
                if (cov[i] != BK_COVER_NONE) continue;
                const uint32_t own = ids ? ids[i] : BK_DILATE_ANY;
                float          sum[3] = { 0, 0, 0 };
                int            n = 0;
                for (int dy = -1; dy <= 1; ++dy)
                    for (int dx = -1; dx <= 1; ++dx) {
                        int yy = y + dy, xx = x + dx;
                        if (yy < 0 || yy >= h || xx < 0 || xx >= w || (dx == 0 && dy == 0)) continue;
                        size_t k = (size_t)yy * w + xx;
                        if (cov[k] != BK_COVER_TEXEL && cov[k] != BK_COVER_DILATED) continue;
                        if (own != BK_DILATE_ANY && ids[k] != own) continue;
                        for (int c = 0; c < 3; ++c) sum[c] += rgb[3 * k + c];
                        n++;
                    }
                if (!n) continue;
                for (int c = 0; c < 3; ++c) rgb[3 * i + c] = sum[c] / (float)n;
                cov[i] = 3;
                filled++;
            }
        if (!filled) break;
        for (size_t i = 0; i < (size_t)w * h; ++i)
            if (cov[i] == 3) cov[i] = BK_COVER_DILATED;
    }
}

/* bk_image_dilate_pages on 3 pages of odd sizes side by side: scattered small charts (gaps that
 * close in a round or two), a large empty part (fronts that move for many rounds), a page with
 * no texel at all, ids on some pixels (two charts one texel apart), cut texels: with 1, 2 and 16
 * threads the floats and coverage bytes equal ref_dilate_ids on each page alone, for several
 * round counts (a round cap that stops the fronts half-way included). */
static void test_dilate_pages(void)
{
    static const int sizes[][2] = { { 1, 1 }, { 37, 5 }, { 203, 131 } };
    static const int threads[3] = { 1, 2, 16 }, rounds[3] = { 1, 3, 40 };
    uint32_t         s = 4242u;
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; ++z)
        for (int with_ids = 0; with_ids < 2; ++with_ids)
            for (int r = 0; r < 3; ++r) {
                const int    w = sizes[z][0], h = sizes[z][1], P = 3;
                const size_t px = (size_t)w * h, N = px * P;
                float       *rgb0 = malloc(sizeof(float) * 3 * N), *rgb = malloc(sizeof(float) * 3 * N),
                      *ref = malloc(sizeof(float) * 3 * N);
                uint8_t  *cov0 = malloc(N), *cov = malloc(N), *rcov = malloc(N);
                uint32_t *ids = with_ids ? malloc(sizeof(uint32_t) * N) : NULL;
                for (size_t i = 0; i < N; ++i) {
                    s = s * 1664525u + 1013904223u;
                    const size_t p = i / px, y = (i % px) / (size_t)w;
                    /* page 0: charts everywhere; page 1: charts in the top third only; page 2: none */
                    int on = p == 0 ? (s >> 24) < 90 : p == 1 ? y < (size_t)h / 3 && (s >> 24) < 140 : 0;
                    cov0[i] = on ? ((s >> 8 & 31) == 0 ? BK_COVER_CUT : BK_COVER_TEXEL) : BK_COVER_NONE;
                    for (int c = 0; c < 3; ++c)
                        rgb0[3 * i + c] = on ? (float)((s >> (4 + 5 * c)) & 1023) / 97.0f : 0.0f;
                    if (ids) ids[i] = (s >> 20 & 3) == 0 ? BK_DILATE_ANY : (uint32_t)((i % (size_t)w) / 9);
                }
                memcpy(ref, rgb0, sizeof(float) * 3 * N);
                memcpy(rcov, cov0, N);
                for (int p = 0; p < P; ++p)
                    ref_dilate_ids(ref + 3 * px * p, rcov + px * p, ids ? ids + px * p : NULL, w, h, rounds[r]);
                for (int t = 0; t < 3; ++t) {
                    bk_pool_set_threads(threads[t]);
                    memcpy(rgb, rgb0, sizeof(float) * 3 * N);
                    memcpy(cov, cov0, N);
                    bk_image_dilate_pages(rgb, cov, ids, w, h, P, rounds[r]);
                    size_t bad = 0;
                    for (size_t i = 0; i < N; ++i)
                        bad += cov[i] != rcov[i] || memcmp(rgb + 3 * i, ref + 3 * i, sizeof(float) * 3) != 0;
                    BK_EXPECTF(bad == 0,
                               "%dx%d x %d pages, ids %d, %d rounds, %d threads: %zu texels differ from "
                               "the full scan",
                               w, h, P, with_ids, rounds[r], threads[t], bad);
                }
                if (P > 1) { /* and one page through bk_image_dilate_charts */
                    memcpy(rgb, rgb0, sizeof(float) * 3 * px);
                    memcpy(cov, cov0, px);
                    bk_image_dilate_charts(rgb, cov, ids, w, h, rounds[r]);
                    BK_EXPECTF(!memcmp(cov, rcov, px) && !memcmp(rgb, ref, sizeof(float) * 3 * px),
                               "%dx%d: bk_image_dilate_charts differs from the full scan", w, h);
                }
                free(rgb0), free(rgb), free(ref), free(cov0), free(cov), free(rcov), free(ids);
            }
    bk_pool_set_threads(0);
}

/* bk_image_write_files on 3 PNG pages: each file the same bytes as bk_image_write_file gives it
 * alone, with 1, 2 and 16 threads, and each a valid PNG of its own pixels (check_png_file). */
static void test_png_pages(void)
{
    static const int threads[3] = { 1, 2, 16 };
    const int        w = 301, h = 200, P = 3;
    float           *rgb = malloc(sizeof(float) * 3 * (size_t)w * h * P);
    uint32_t         s = 99u;
    for (size_t i = 0; i < (size_t)w * h * 3 * P; ++i) {
        s = s * 1664525u + 1013904223u;
        rgb[i] = (float)((i / 3) % (size_t)w) / (float)w * 0.7f + (float)((s >> 8) & 0xff) / 255.0f * 0.5f - 0.1f;
    }
    char  *one[3];
    size_t one_n[3];
    for (int p = 0; p < P; ++p) {
        BK_EXPECT(png_encode(rgb + 3 * (size_t)w * h * p, w, h, 1.25f, &one[p], &one_n[p]) == 0);
        check_png_file((const uint8_t *)one[p], one_n[p], rgb + 3 * (size_t)w * h * p, w, h, 1.25f);
    }
    for (int t = 0; t < 3; ++t) {
        bk_pool_set_threads(threads[t]);
        char        *buf[3], err[256];
        size_t       n[3];
        FILE        *f[3];
        const char  *name[3] = { "a.png", "b.png", "c.png" };
        const float *page[3];
        for (int p = 0; p < P; ++p) {
            f[p] = open_memstream(&buf[p], &n[p]);
            page[p] = rgb + 3 * (size_t)w * h * p;
        }
        int rc = bk_image_write_files(f, name, page, P, w, h, 1.25f, err, sizeof err);
        BK_EXPECTF(rc == 0, "bk_image_write_files: %s", err);
        for (int p = 0; p < P; ++p) {
            fclose(f[p]);
            BK_EXPECTF(n[p] == one_n[p] && !memcmp(buf[p], one[p], n[p]),
                       "%d threads: page %d of bk_image_write_files differs from bk_image_write_file's", threads[t], p);
            free(buf[p]);
        }
    }
    for (int p = 0; p < P; ++p) free(one[p]);
    free(rgb);
    bk_pool_set_threads(0);
}

/* The PNG writer's table (bk_image_srgb8_lut) gives bk_image_srgb8's byte: on every 61st float of
 * [0, 1], every float either side of each threshold and each bucket edge of the table, and odd
 * values (negatives, NaN, infinities, subnormals, 1 and above). */
static void test_srgb8_lut(void)
{
    float t[256];
    bk_image_srgb8_thresholds(t);
    size_t bad = 0, n = 0;
    for (uint32_t b = 0; b <= 0x3f800000u; b += 61) {
        float x;
        memcpy(&x, &b, sizeof x);
        bad += bk_image_srgb8_lut(x) != bk_image_srgb8(x);
        n++;
    }
    for (int k = 1; k < 256; ++k) {
        uint32_t c;
        memcpy(&c, &t[k], sizeof c);
        for (uint32_t b = c > 2048 ? c - 2048 : 0; b <= c + 2048; ++b) {
            float x;
            memcpy(&x, &b, sizeof x);
            bad += bk_image_srgb8_lut(x) != bk_image_srgb8(x);
            n++;
        }
    }
    for (uint32_t e = 0; e <= 0x3f800000u; e += 1u << 15) /* each bucket's first and last floats */
        for (uint32_t b = e > 2 ? e - 2 : 0; b <= e + 2; ++b) {
            float x;
            memcpy(&x, &b, sizeof x);
            bad += bk_image_srgb8_lut(x) != bk_image_srgb8(x);
            n++;
        }
    static const float odd[] = { -0.0f,      -1e-30f, -1.0f,   -INFINITY, INFINITY,       NAN,        -NAN, 1.0f,
                                 1.0000001f, 2.0f,    3.4e38f, 1e-45f,    1.1754942e-38f, 0.0031308f, 0.5f };
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; ++i) {
        bad += bk_image_srgb8_lut(odd[i]) != bk_image_srgb8(odd[i]);
        n++;
    }
    BK_EXPECTF(bad == 0, "%zu of %zu floats: the table differs from bk_image_srgb8", bad, n);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_unit_image_%ld", (long)getpid());
    if (mkdir(tmpdir, 0700) != 0) {
        perror(tmpdir);
        return 1;
    }
    test_png();
    test_srgb8_fast();
    test_srgb8_lut();
    test_png_pages();
    test_png_bands();
    test_hdr();
    test_hdr_rounding();
    test_errors();
    test_dilate_small();
    test_dilate_atlas();
    test_dilate_pages();
    BK_EXPECTF(files_in_tmpdir() == 0, "files left in %s", tmpdir);
    rmdir(tmpdir);
    BK_TEST_DONE();
}
