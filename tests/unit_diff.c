/* unit_diff.c - baker diff (src/cmd/diff.c): the statistics on images whose answers are known, and
 * the command on PNG and HDR files written by baker's own writer.
 *
 * Checked: RMSE / linear PSNR of a constant offset (0.01 -> 40 dB; exposure 10 -> 20 dB),
 * sRGB PSNR of a known sRGB step (0.1 -> 20 dB), per-channel and luminance bias of B = A *
 * (1.1, 1, 0.9), the covered-texel rule (A or B non-zero; a mask overrides it), the difference
 * image (|A - B|, black outside the covered texels); the command: --json numbers equal to
 * bk_diff_compute on the decoded files (PNG 8-bit codes 128 vs 138 -> 28.13 dB sRGB; HDR values
 * exact in RGBE), a size mismatch names both files and fails, a mask of the wrong size fails,
 * -o naming an input is refused (exit 2) leaving it untouched, -o writes a PNG whose largest
 * difference is white, unknown extensions and missing files fail with the name in the message
 * (and .exr in a build without tinyexr says so; cpu_exr.c diffs .exr files).
 */
#include "diff.h"
#include "image.h"
#include "bk_test.h"

#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "bk_test_stb_image.h"

static char dir[256], outbuf[16384], errbuf[16384];

static void slurp(const char *name, char *buf, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t k = fread(buf, 1, n - 1, f);
        buf[k] = 0;
        fclose(f);
    }
}

/* Runs baker ARGS in dir; stdout into outbuf, stderr into errbuf; returns the exit status. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char    args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >out.txt 2>err.txt", dir, BK_BAKER, args);
    int st = system(cmd);
    slurp("out.txt", outbuf, sizeof outbuf);
    slurp("err.txt", errbuf, sizeof errbuf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The number after "key": in a JSON text; NAN when absent or null. */
static double json_get(const char *json, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(json, pat);
    if (!p) return NAN;
    p += strlen(pat);
    if (!strncmp(p, "null", 4)) return INFINITY;
    char  *end;
    double v = strtod(p, &end);
    return end == p ? NAN : v;
}

static int near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static void write_img(const char *name, const float *rgb, int w, int h)
{
    char path[512], err[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    BK_EXPECTF(bk_image_write(path, rgb, w, h, 1.0f, err, sizeof err) == 0, "%s", err);
}

static void test_stats(void)
{
    enum { W = 8, H = 4, N = W * H };
    float         a[3 * N], b[3 * N];
    bk_diff_stats st;

    /* a constant offset of 0.01: RMSE 0.01, 40 dB; bias 0.02 everywhere */
    for (int i = 0; i < 3 * N; ++i) {
        a[i] = 0.5f;
        b[i] = 0.51f;
    }
    bk_diff_compute(a, b, NULL, W, H, 1.0f, &st);
    BK_EXPECT(st.covered == N && st.texels == N);
    BK_EXPECTF(near(st.rmse, 0.01, 1e-6) && near(st.psnr_linear, 40.0, 1e-3), "rmse %g psnr %g", st.rmse,
               st.psnr_linear);
    for (int k = 0; k < 4; ++k) BK_EXPECTF(near(st.bias[k], 0.02, 1e-6), "bias[%d] %g", k, st.bias[k]);
    BK_EXPECTF(near(st.max_abs, 0.01, 1e-6), "max %g", st.max_abs);
    /* exposure 10 scales the error: 20 dB less; the bias does not change */
    bk_diff_compute(a, b, NULL, W, H, 10.0f, &st);
    BK_EXPECTF(near(st.psnr_linear, 20.0, 1e-3) && near(st.bias[3], 0.02, 1e-6), "psnr %g bias %g", st.psnr_linear,
               st.bias[3]);
    /* equal images: infinite PSNR, zero bias */
    bk_diff_compute(a, a, NULL, W, H, 1.0f, &st);
    BK_EXPECT(isinf(st.psnr_linear) && isinf(st.psnr_srgb) && st.rmse == 0 && st.bias[3] == 0);

    /* sRGB: A is sRGB 0.5, B sRGB 0.6 everywhere: the sRGB RMSE is 0.1, 20 dB */
    for (int i = 0; i < 3 * N; ++i) {
        a[i] = bk_image_srgb_to_linear(0.5f);
        b[i] = bk_image_srgb_to_linear(0.6f);
    }
    bk_diff_compute(a, b, NULL, W, H, 1.0f, &st);
    BK_EXPECTF(near(st.psnr_srgb, 20.0, 1e-3), "sRGB psnr %g", st.psnr_srgb);
    /* values above 1 are clamped for sRGB, not for linear */
    for (int i = 0; i < 3 * N; ++i) {
        a[i] = 2.0f;
        b[i] = 3.0f;
    }
    bk_diff_compute(a, b, NULL, W, H, 1.0f, &st);
    BK_EXPECTF(isinf(st.psnr_srgb) && near(st.psnr_linear, 0.0, 1e-6), "clamped: sRGB %g linear %g", st.psnr_srgb,
               st.psnr_linear);

    /* per channel bias: B = A * (1.1, 1, 0.9); luminance (0.2126 * 0.1 - 0.0722 * 0.1) / 1 */
    for (int i = 0; i < N; ++i) {
        a[3 * i] = a[3 * i + 1] = a[3 * i + 2] = 0.25f + 0.5f * (float)i / N;
        b[3 * i] = a[3 * i] * 1.1f;
        b[3 * i + 1] = a[3 * i + 1];
        b[3 * i + 2] = a[3 * i + 2] * 0.9f;
    }
    bk_diff_compute(a, b, NULL, W, H, 1.0f, &st);
    BK_EXPECTF(near(st.bias[0], 0.1, 1e-6) && near(st.bias[1], 0.0, 1e-7) && near(st.bias[2], -0.1, 1e-6) &&
                   near(st.bias[3], 0.2126 * 0.1 - 0.0722 * 0.1, 1e-6),
               "bias %g %g %g lum %g", st.bias[0], st.bias[1], st.bias[2], st.bias[3]);

    /* covered texels: A or B non-zero. Texel 0 black in both (not counted), texel 1 only B lit
     * (counted), the rest equal */
    for (int i = 0; i < 3 * N; ++i) a[i] = b[i] = 0.3f;
    for (int k = 0; k < 3; ++k) {
        a[k] = b[k] = 0.0f;
        a[3 + k] = 0.0f;
        b[3 + k] = 0.0f;
    }
    b[3 + 1] = 0.6f; /* texel 1: green only in B */
    bk_diff_compute(a, b, NULL, W, H, 1.0f, &st);
    BK_EXPECTF(st.covered == N - 1, "covered %llu, expected %d", (unsigned long long)st.covered, N - 1);
    BK_EXPECTF(near(st.rmse, sqrt(0.36 / (3.0 * (N - 1))), 1e-7), "rmse %g", st.rmse);
    /* a mask overrides it: only texels 2 and 3 (equal there) */
    uint8_t mask[N];
    memset(mask, 0, sizeof mask);
    mask[2] = mask[3] = 255;
    bk_diff_compute(a, b, mask, W, H, 1.0f, &st);
    BK_EXPECT(st.covered == 2 && st.rmse == 0);
    /* nothing covered */
    memset(mask, 0, sizeof mask);
    bk_diff_compute(a, b, mask, W, H, 1.0f, &st);
    BK_EXPECT(st.covered == 0 && isnan(st.bias[3]));

    /* the difference image: |A - B| * exposure where covered, black elsewhere */
    float d[3 * N];
    mask[1] = 1;
    bk_diff_image(a, b, mask, W, H, 2.0f, d);
    BK_EXPECTF(near(d[3 + 1], 1.2, 1e-6) && d[3] == 0, "diff texel 1: %g %g", d[3], d[4]);
    b[3 * 5] = 1.0f; /* differs, but outside the mask */
    bk_diff_image(a, b, mask, W, H, 1.0f, d);
    BK_EXPECT(d[3 * 5] == 0);
}

static void test_command(void)
{
    enum { W = 16, H = 8, N = W * H };
    static float a[3 * N], b[3 * N], m[3 * N];
    char         err[700];

    /* PNG: 8-bit sRGB codes 128 and 138 everywhere: sRGB RMSE 10/255, 28.13 dB */
    for (int i = 0; i < 3 * N; ++i) {
        a[i] = bk_image_srgb_to_linear(128 / 255.0f);
        b[i] = bk_image_srgb_to_linear(138 / 255.0f);
    }
    write_img("a.png", a, W, H);
    write_img("b.png", b, W, H);
    BK_EXPECTF(run("diff a.png b.png --json") == 0, "%s", errbuf);
    double want = 20 * log10(255.0 / 10.0);
    BK_EXPECTF(near(json_get(outbuf, "psnr_srgb"), want, 1e-3), "PNG sRGB psnr %g, expected %g\n%s",
               json_get(outbuf, "psnr_srgb"), want, outbuf);
    BK_EXPECTF(json_get(outbuf, "covered") == N && json_get(outbuf, "width") == W, "%s", outbuf);
    {
        float *da, *db;
        int    w, h;
        char   pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/a.png", dir);
        snprintf(pb, sizeof pb, "%s/b.png", dir);
        BK_EXPECT(bk_image_read(pa, &da, &w, &h, err, sizeof err) == 0 && w == W && h == H);
        BK_EXPECT(bk_image_read(pb, &db, &w, &h, err, sizeof err) == 0);
        bk_diff_stats st;
        bk_diff_compute(da, db, NULL, W, H, 1.0f, &st);
        BK_EXPECTF(near(json_get(outbuf, "rmse"), st.rmse, 1e-8) &&
                       near(json_get(outbuf, "luminance"), st.mean_a[3], 1e-8),
                   "json rmse %g vs %g", json_get(outbuf, "rmse"), st.rmse);
        free(da);
        free(db);
    }
    /* the text form says what the numbers are */
    BK_EXPECT(run("diff a.png b.png") == 0);
    BK_EXPECTF(strstr(outbuf, "PSNR sRGB       28.13 dB") && strstr(outbuf, "peak 1.0 after exposure") &&
                   strstr(outbuf, "A or B non-zero"),
               "%s", outbuf);

    /* HDR: values exact in RGBE (powers of two and small multiples) -> exact numbers. A 0.5
     * everywhere, B 0.5 with every 4th texel's red 0.625; two texels black in both */
    for (int i = 0; i < 3 * N; ++i) a[i] = b[i] = 0.5f;
    for (int i = 0; i < N; i += 4) b[3 * i] = 0.625f;
    for (int k = 0; k < 6; ++k) a[k] = b[k] = 0.0f;
    write_img("a.hdr", a, W, H);
    write_img("b.hdr", b, W, H);
    BK_EXPECTF(run("diff a.hdr b.hdr --json") == 0, "%s", errbuf);
    /* covered: N - 2; differing: texels 4, 8, ..., one channel each by 0.125 */
    double nd = N / 4 - 1, cov = N - 2, rmse = sqrt(nd * 0.125 * 0.125 / (3 * cov));
    BK_EXPECTF(json_get(outbuf, "covered") == cov && near(json_get(outbuf, "rmse"), rmse, 1e-7) &&
                   near(json_get(outbuf, "psnr_linear"), -20 * log10(rmse), 1e-4),
               "HDR: %s (rmse expected %g)", outbuf, rmse);
    double      bias_r = nd * 0.125 / (cov * 0.5);
    const char *bp = strstr(outbuf, "\"bias\"");
    BK_EXPECTF(bp && near(json_get(bp, "r"), bias_r, 1e-7) && json_get(bp, "g") == 0 &&
                   near(json_get(bp, "luminance"), 0.2126 * bias_r, 1e-7),
               "HDR bias: %s", bp ? bp : outbuf);
    /* mixed PNG and HDR: compared in linear */
    BK_EXPECTF(run("diff a.hdr b.png --json") == 0, "%s", errbuf);

    /* a mask: only the first row */
    for (int i = 0; i < N; ++i) m[3 * i] = m[3 * i + 1] = m[3 * i + 2] = i < W ? 1.0f : 0.0f;
    write_img("mask.png", m, W, H);
    BK_EXPECTF(run("diff a.hdr b.hdr --mask mask.png --json") == 0 && json_get(outbuf, "covered") == W, "%s%s", outbuf,
               errbuf);
    BK_EXPECT(strstr(outbuf, "\"covered_rule\": \"mask non-zero\""));

    /* -o: the difference image, white at the largest difference, black where equal */
    BK_EXPECTF(run("diff a.hdr b.hdr -o d.png") == 0, "%s", errbuf);
    {
        char p[512];
        snprintf(p, sizeof p, "%s/d.png", dir);
        int            w, h, c;
        unsigned char *px = stbi_load(p, &w, &h, &c, 3);
        BK_EXPECTF(px && w == W && h == H, "no difference image %s", p);
        if (px) {
            BK_EXPECTF(px[3 * 4] == 255 && px[3 * 4 + 1] == 0 && px[3 * 5] == 0, "texel 4: %d %d, texel 5: %d", px[12],
                       px[13], px[15]);
            stbi_image_free(px);
        }
    }

    /* sizes must match: both files named, non-zero exit */
    float small[3 * 4] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f };
    write_img("small.png", small, 2, 2);
    BK_EXPECT(run("diff a.png small.png") == 1);
    BK_EXPECTF(strstr(errbuf, "a.png") && strstr(errbuf, "small.png") && strstr(errbuf, "16x8") &&
                   strstr(errbuf, "2x2"),
               "%s", errbuf);
    BK_EXPECT(run("diff a.png b.png --mask small.png") == 1);
    BK_EXPECTF(strstr(errbuf, "small.png") && strstr(errbuf, "--mask"), "%s", errbuf);

    /* -o naming an input: refused before any work, the input untouched */
    struct stat before, after;
    char        pa[512];
    snprintf(pa, sizeof pa, "%s/a.png", dir);
    stat(pa, &before);
    BK_EXPECT(run("diff a.png b.png -o a.png") == 2);
    BK_EXPECTF(strstr(errbuf, "a.png") && strstr(errbuf, "input"), "%s", errbuf);
    BK_EXPECT(stat(pa, &after) == 0 && after.st_size == before.st_size && after.st_mtime == before.st_mtime);

    /* bad names */
    BK_EXPECT(run("diff a.png missing.png") == 1 && strstr(errbuf, "missing.png"));
    BK_EXPECT(run("diff a.png b.jpg") == 2 && strstr(errbuf, "b.jpg"));
    BK_EXPECT(run("diff a.png b.png -o d.tif") == 2 && strstr(errbuf, "d.tif") && strstr(errbuf, ".exr"));
#if !BK_HAVE_EXR
    BK_EXPECT(run("diff a.png b.png -o d.exr") == 2 && strstr(errbuf, "d.exr") &&
              strstr(errbuf, "built without EXR support"));
#endif
    BK_EXPECT(run("diff a.png") == 2);
    BK_EXPECT(run("diff a.png b.png --exposure -1") == 2);
    /* black against black: nothing to compare */
    float black[3 * 4] = { 0 };
    write_img("black.png", black, 2, 2);
    BK_EXPECT(run("diff black.png black.png") == 1 && strstr(errbuf, "no covered texels"));
    BK_EXPECT(run("help diff") == 0 && strstr(outbuf, "A or B is non-zero"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bk_unit_diff_%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        return 1;
    }
    test_stats();
    test_command();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    BK_TEST_DONE();
}
