/* unit_exr.c - OpenEXR output and input (src/out/image.c through Debian's tinyexr), and what a build
 * without it says.
 *
 * Checked in every build: bk_image_exr_supported() agrees with the BK_HAVE_EXR the build was
 * configured with; .exr is a known type by name.
 * Without tinyexr: writing or reading an .exr fails with "built without EXR support: install
 * libtinyexr-dev and rebuild" and the path, leaving no file; the EXR round trip is skipped (said).
 * With tinyexr: a known image (values from 0 through half subnormals to 60000, plus negatives,
 * NaN, +inf and 1e6) written with bk_image_write is read back by bk_image_read and by tinyexr's
 * own LoadEXR, and every value is exactly the nearest-even half of the input computed here
 * (negatives and NaN as 0, beyond 65504 as 65504), row 0 at the top; the file's header says
 * channels B, G, R, all HALF, ZIP-compressed scanlines; a written EXR goes through a temporary
 * file (a failed write leaves nothing, an unwritable folder names the path). The reader refuses,
 * with one line naming the file and nothing returned: an EXR with NaN or a negative value
 * (written with tinyexr's SaveEXR), one without R, G, B or Y channels, a truncated file, a file
 * that is not an EXR, an image over the pixel budget (bk_image_read_max), and reads a float
 * (not half) RGB EXR exactly.
 */
#include "image.h"
#include "bk_test.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#if BK_HAVE_EXR
#include <tinyexr.h>
#endif

static char tmpdir[256];

static int files_in_tmpdir(void) { return bk_test_count_files(tmpdir); }

static void test_common(void)
{
    BK_EXPECT(bk_image_exr_supported() == BK_HAVE_EXR);
    BK_EXPECT(bk_image_type_of("a/b.EXR") == BK_IMAGE_TYPE_EXR && bk_image_type_of("x.exr.png") == BK_IMAGE_TYPE_PNG);
    BK_EXPECT(bk_image_type_of("x.hdr") == BK_IMAGE_TYPE_HDR && bk_image_type_of("exr") == BK_IMAGE_TYPE_NONE);
    char err[700];
    BK_EXPECT(bk_image_type_check("-o", "x.tiff", err, sizeof err) != 0 && strstr(err, "-o x.tiff") &&
              strstr(err, ".exr"));
    BK_EXPECT(bk_image_type_check("-o", "x.png", err, sizeof err) == 0);
}

#if !BK_HAVE_EXR
static void test_without(void)
{
    float       rgb[12] = { 0 };
    char        path[600], err[900];
    const char *want = "built without EXR support: install libtinyexr-dev and rebuild";
    snprintf(path, sizeof path, "%s/lm.exr", tmpdir);
    BK_EXPECT(bk_image_type_check("-o", path, err, sizeof err) != 0 && strstr(err, want) && strstr(err, path));
    err[0] = 0;
    BK_EXPECT(bk_image_write(path, rgb, 2, 2, 1.0f, err, sizeof err) != 0);
    BK_EXPECTF(strstr(err, want) && strstr(err, path), "message: %s", err);
    BK_EXPECTF(files_in_tmpdir() == 0, "%d files left by a refused write", files_in_tmpdir());
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs("v/1\001 not read", f);
        fclose(f);
    }
    float *got = (float *)1;
    int    w = 7, h = 7;
    BK_EXPECT(bk_image_read(path, &got, &w, &h, err, sizeof err) != 0 && !got && !w && !h);
    BK_EXPECTF(strstr(err, want) && strstr(err, path), "message: %s", err);
    remove(path);
    fprintf(stderr, "EXR round trip skipped: built without tinyexr (BK_HAVE_EXR 0)\n");
}
#else

/* The half nearest to v (ties to even), as a float; v finite, >= 0, <= 65504. Independent of
 * tinyexr: normal halves have 11 significant bits, subnormals are multiples of 2^-24. */
static float half_ref(double v)
{
    if (v <= 0) return 0.0f;
    int e;
    frexp(v, &e); /* v = m 2^e, m in [0.5, 1) */
    double q = v < ldexp(1.0, -14) ? ldexp(1.0, -24) : ldexp(1.0, e - 11);
    return (float)(nearbyint(v / q) * q);
}

static float expected(float v)
{
    if (!(v > 0)) return 0.0f;
    if (v >= 65504.0f) return 65504.0f;
    return half_ref(v);
}

static void test_roundtrip(void)
{
    enum { W = 37, H = 23 };
    static float rgb[W * H * 3];
    uint32_t     st = 12345;
    for (int i = 0; i < W * H * 3; ++i) {
        st = st * 1664525u + 1013904223u;
        rgb[i] = (float)pow(10.0, -7.5 + 12.2 * (st >> 8) / 16777216.0); /* 3e-8 .. 5e4: subnormals to large */
    }
    float special[] = { 0.0f,    -1.0f, NAN, INFINITY, 1e6f, 65504.0f, 65519.0f, 1.0f, 0.5f + 1.0f / 4096.0f,
                        6.1e-5f, -0.0f };
    for (size_t k = 0; k < sizeof special / sizeof special[0]; ++k) rgb[k] = special[k];
    rgb[3 * (W * (H - 1) + 1) + 2] = 2.0f; /* bottom row: row order */
    char path[600], err[900];
    snprintf(path, sizeof path, "%s/lm.exr", tmpdir);
    BK_EXPECTF(bk_image_write(path, rgb, W, H, 5.0f /* ignored: linear */, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(files_in_tmpdir() == 1, "%d files after one write", files_in_tmpdir());

    float *got = NULL;
    int    w = 0, h = 0;
    BK_EXPECTF(bk_image_read(path, &got, &w, &h, err, sizeof err) == 0 && w == W && h == H, "%s", err);
    int bad = 0;
    for (int i = 0; got && i < W * H * 3; ++i)
        if (got[i] != expected(rgb[i]) && bad++ < 5)
            fprintf(stderr, "value %d: wrote %.9g, read %.9g, nearest half %.9g\n", i, (double)rgb[i], (double)got[i],
                    (double)expected(rgb[i]));
    BK_EXPECTF(!bad, "%d of %d values are not the nearest half", bad, W * H * 3);
    if (got) BK_EXPECT(got[3 * (W * (H - 1) + 1) + 2] == 2.0f);
    free(got);

    /* tinyexr's own reader (RGBA) agrees */
    float      *rgba = NULL;
    const char *msg = NULL;
    int         lw = 0, lh = 0;
    BK_EXPECTF(LoadEXR(&rgba, &lw, &lh, path, &msg) == TINYEXR_SUCCESS && lw == W && lh == H, "LoadEXR: %s",
               msg ? msg : "");
    if (msg) FreeEXRErrorMessage(msg);
    bad = 0;
    for (int i = 0; rgba && i < W * H; ++i)
        for (int k = 0; k < 3; ++k) bad += rgba[4 * i + k] != expected(rgb[3 * i + k]);
    BK_EXPECTF(!bad, "LoadEXR: %d values differ", bad);
    free(rgba);

    /* the header: B, G, R in half, ZIP scanlines */
    EXRVersion ver;
    EXRHeader  hd;
    InitEXRHeader(&hd);
    BK_EXPECT(ParseEXRVersionFromFile(&ver, path) == TINYEXR_SUCCESS && !ver.tiled && !ver.multipart);
    msg = NULL;
    if (ParseEXRHeaderFromFile(&hd, &ver, path, &msg) == TINYEXR_SUCCESS) {
        BK_EXPECT(hd.num_channels == 3 && hd.compression_type == TINYEXR_COMPRESSIONTYPE_ZIP);
        for (int c = 0; c < hd.num_channels && c < 3; ++c) {
            BK_EXPECTF(hd.channels[c].name[0] == "BGR"[c] && !hd.channels[c].name[1], "channel %d is %s", c,
                       hd.channels[c].name);
            BK_EXPECTF(hd.pixel_types[c] == TINYEXR_PIXELTYPE_HALF, "channel %d type %d", c, hd.pixel_types[c]);
        }
        BK_EXPECT(hd.data_window.min_x == 0 && hd.data_window.max_x == W - 1 && hd.data_window.max_y == H - 1);
    } else {
        BK_EXPECTF(0, "header: %s", msg ? msg : "");
        if (msg) FreeEXRErrorMessage(msg);
    }
    FreeEXRHeader(&hd);
    remove(path);

    /* a failed write leaves nothing behind */
    snprintf(path, sizeof path, "%s/missing/lm.exr", tmpdir);
    BK_EXPECT(bk_image_write(path, rgb, W, H, 1.0f, err, sizeof err) != 0 && strstr(err, path));
    BK_EXPECTF(files_in_tmpdir() == 0, "%d files left", files_in_tmpdir());
}

/* An EXR written by tinyexr's SaveEXR: components 1 (channel A) or 3 (B, G, R), float or half. */
static void save(const char *path, const float *px, int w, int h, int comps, int fp16)
{
    const char *msg = NULL;
    if (SaveEXR(px, w, h, comps, fp16, path, &msg) != TINYEXR_SUCCESS) {
        BK_EXPECTF(0, "SaveEXR %s: %s", path, msg ? msg : "");
        if (msg) FreeEXRErrorMessage(msg);
    }
}

static void expect_refused(const char *path, uint64_t max_pixels, const char *want)
{
    float *got = (float *)1;
    int    w = 9, h = 9;
    char   err[900];
    err[0] = 0;
    int rc = bk_image_read_max(path, max_pixels, &got, &w, &h, err, sizeof err);
    BK_EXPECTF(rc != 0 && !got && !w && !h, "%s was read", path);
    BK_EXPECTF(strstr(err, path) && strstr(err, want) && !strchr(err, '\n'), "%s: message '%s', wanted '%s'", path, err,
               want);
    if (!rc) free(got);
}

static void test_reader(void)
{
    char  path[600];
    float px[4 * 3 * 2];
    for (int i = 0; i < 24; ++i) px[i] = 0.125f * (float)i;
    /* float channels are read as they are */
    snprintf(path, sizeof path, "%s/f.exr", tmpdir);
    save(path, px, 4, 2, 3, 0);
    float *got = NULL;
    int    w, h;
    char   err[900];
    BK_EXPECTF(bk_image_read(path, &got, &w, &h, err, sizeof err) == 0 && w == 4 && h == 2, "%s", err);
    for (int i = 0; got && i < 24; ++i) BK_EXPECTF(got[i] == px[i], "float EXR value %d: %g", i, (double)got[i]);
    free(got);
    expect_refused(path, 7, "more than the 7 pixels");

    /* non-finite and negative values */
    px[5] = NAN;
    save(path, px, 4, 2, 3, 0);
    expect_refused(path, 1 << 20, "finite values >= 0");
    px[5] = -0.5f;
    save(path, px, 4, 2, 3, 1);
    expect_refused(path, 1 << 20, "finite values >= 0");
    px[5] = INFINITY;
    save(path, px, 4, 2, 3, 0);
    expect_refused(path, 1 << 20, "finite values >= 0");

    /* one channel named A: no colour to read */
    save(path, px, 4, 2, 1, 1);
    expect_refused(path, 1 << 20, "no channels R, G and B");

    /* truncated, and not an EXR at all */
    px[5] = 1.0f;
    save(path, px, 4, 2, 3, 1);
    FILE         *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t        n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    BK_EXPECT(n > 40 && n < sizeof buf);
    for (size_t cut = 0; cut + 1 < n; cut += cut < 64 ? 1 : 17) {
        f = fopen(path, "wb");
        if (f) {
            fwrite(buf, 1, cut, f);
            fclose(f);
        }
        float *g = (float *)1;
        int    gw = 9, gh = 9;
        int    rc = bk_image_read(path, &g, &gw, &gh, err, sizeof err);
        BK_EXPECTF(rc != 0 && !g && !gw && !gh && strstr(err, path), "a cut at %zu of %zu bytes was read", cut, n);
        if (!rc) free(g);
    }
    f = fopen(path, "wb");
    if (f) {
        fputs("#?RADIANCE\n", f);
        fclose(f);
    }
    expect_refused(path, 1 << 20, "not an OpenEXR file");
    remove(path);
}
#endif

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_unit_exr_%ld", (long)getpid());
    if (mkdir(tmpdir, 0700) != 0) {
        perror(tmpdir);
        return 1;
    }
    test_common();
#if BK_HAVE_EXR
    test_roundtrip();
    test_reader();
#else
    test_without();
#endif
    BK_EXPECTF(files_in_tmpdir() == 0, "files left in %s", tmpdir);
    rmdir(tmpdir);
    BK_TEST_DONE();
}
