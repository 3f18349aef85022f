/* unit_image.c - lightmap image output and dilation (src/image.c).
 *
 * Checked: PNG round trip read back with stb_image (Debian libstb-dev) gives exactly the sRGB
 * encoding of rgb * exposure (values computed here independently, plus fixed anchors); HDR round
 * trip within RGBE precision and without exposure; unknown extensions and unwritable paths fail
 * with the path in the message and leave no file (nor a temporary one); dilation fills only
 * uncovered texels, from covered 8-neighbours, one ring per iteration, marks them
 * BK_COVER_DILATED, never touches covered texels, and after one ring around a rasterized atlas
 * every texel a bilinear lookup inside a chart can reach holds a value.
 */
#include "atlas.h"
#include "image.h"
#include "bk_test.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wsign-compare"
#  pragma GCC diagnostic ignored "-Wunused-function"
#  pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

static char tmpdir[256];

static int files_in_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

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
    BK_EXPECTF(bk_image_srgb8(0.5f) == 188, "0.5 -> %d", bk_image_srgb8(0.5f));     /* 0.7354 * 255 */
    BK_EXPECTF(bk_image_srgb8(0.21586f) == 128, "0.21586 -> %d", bk_image_srgb8(0.21586f)); /* sRGB 128/255 */
    BK_EXPECTF(bk_image_srgb8(0.001f) == 3, "0.001 -> %d", bk_image_srgb8(0.001f));   /* linear segment */

    int w = 37, h = 11;
    float *rgb = malloc(sizeof(float) * 3 * w * h);
    for (int i = 0; i < 3 * w * h; ++i) rgb[i] = (float)i / (3 * w * h - 1) * 0.6f;  /* 0 .. 0.6 */
    rgb[0] = -0.5f; rgb[1] = NAN; rgb[2] = 100.0f;
    char path[600], err[700];
    snprintf(path, sizeof path, "%s/out.png", tmpdir);
    float exposure = 1.5f;
    BK_EXPECTF(bk_image_write(path, rgb, w, h, exposure, err, sizeof err) == 0, "%s", err);
    int rw, rh, rc;
    unsigned char *back = stbi_load(path, &rw, &rh, &rc, 3);
    BK_EXPECTF(back != NULL, "stb_image cannot read %s", path);
    if (back) {
        BK_EXPECT(rw == w && rh == h && rc == 3);
        int diff = 0, first = -1;
        for (int i = 0; i < 3 * w * h; ++i) {
            int want = srgb_ref((double)(rgb[i] * exposure));
            if (back[i] != want) { diff++; if (first < 0) first = i; }
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
    int w = 16, h = 9;
    float *rgb = malloc(sizeof(float) * 3 * w * h);
    uint32_t st = 7;
    for (int i = 0; i < 3 * w * h; ++i) {
        st = st * 1664525u + 1013904223u;
        rgb[i] = (float)pow(10.0, -3.0 + 6.0 * (st >> 8) / 16777216.0);  /* 1e-3 .. 1e3 */
    }
    char path[600], err[700];
    snprintf(path, sizeof path, "%s/out.hdr", tmpdir);
    BK_EXPECTF(bk_image_write(path, rgb, w, h, 4.0f, err, sizeof err) == 0, "%s", err);
    int rw, rh, rc;
    float *back = stbi_loadf(path, &rw, &rh, &rc, 3);
    BK_EXPECTF(back != NULL, "stb_image cannot read %s", path);
    if (back) {
        BK_EXPECT(rw == w && rh == h);
        int bad = 0;
        double worst = 0;
        for (int p = 0; p < w * h; ++p) {
            float m = fmaxf(rgb[3 * p], fmaxf(rgb[3 * p + 1], rgb[3 * p + 2]));
            for (int k = 0; k < 3; ++k) {
                /* RGBE: 8 mantissa bits under the pixel's largest channel; exposure not applied */
                double e = fabs((double)back[3 * p + k] - rgb[3 * p + k]) / m;
                worst = fmax(worst, e);
                bad += e > 1.0 / 128;
            }
        }
        BK_EXPECTF(bad == 0, "%d HDR values beyond RGBE precision (worst %.4f of the pixel maximum)", bad, worst);
        stbi_image_free(back);
    }
    remove(path);
    free(rgb);
}

static void test_errors(void)
{
    float rgb[12] = { 0 };
    char path[600], err[700];
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
}

static void test_dilate_small(void)
{
    int w = 9, h = 7;
    float rgb[9 * 7 * 3], orig[9 * 7 * 3];
    uint8_t cov[9 * 7];
    memset(cov, 0, sizeof cov);
    for (int i = 0; i < w * h * 3; ++i) rgb[i] = -7.0f;  /* garbage in uncovered texels */
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
    for (int i = 0; i < 8; ++i) { P[i][0] = (float)(i & 1); P[i][1] = (float)((i >> 1) & 1); P[i][2] = (float)((i >> 2) & 1); }
    static const uint32_t q[6][4] = { {0,2,3,1}, {4,5,7,6}, {0,1,5,4}, {2,6,7,3}, {0,4,6,2}, {1,3,7,5} };
    s.vertex_count = 8;
    s.positions = &P[0][0];
    s.tri_count = 12;
    uint32_t tv[36];
    for (int f = 0; f < 6; ++f) {
        tv[6 * f] = q[f][0]; tv[6 * f + 1] = q[f][1]; tv[6 * f + 2] = q[f][2];
        tv[6 * f + 3] = q[f][0]; tv[6 * f + 4] = q[f][2]; tv[6 * f + 5] = q[f][3];
    }
    s.tri_v = tv;
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = 48;
    o.padding = 3;
    bk_atlas a;
    char err[256];
    if (bk_atlas_build(&s, &o, &a, err, sizeof err) != 0) { BK_EXPECTF(0, "%s", err); return; }
    bk_texel *tx; uint32_t n; uint8_t *cov;
    if (bk_atlas_rasterize(&s, &a, &tx, &n, &cov, err, sizeof err) != 0) { BK_EXPECTF(0, "%s", err); bk_atlas_free(&a); return; }
    int W = a.width, H = a.height;
    float *rgb = calloc((size_t)3 * W * H, sizeof(float));
    for (uint32_t i = 0; i < n; ++i) {
        rgb[3 * tx[i].pixel] = tx[i].px + 1; rgb[3 * tx[i].pixel + 1] = tx[i].py + 1; rgb[3 * tx[i].pixel + 2] = tx[i].pz + 1;
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
            } else if (cov[i]) dark += !(rgb[3 * i] >= 1.0f);  /* filled with a real colour (>= 1) */
        }
    BK_EXPECTF(holes == 0, "%d unfilled texels next to covered ones after dilation", holes);
    BK_EXPECTF(changed == 0, "%d covered texels changed by dilation", changed);
    BK_EXPECTF(dark == 0, "%d dilated texels without a colour", dark);
    free(rgb); free(before); free(cov0); free(tx); free(cov);
    bk_atlas_free(&a);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_unit_image_%ld", (long)getpid());
    if (mkdir(tmpdir, 0700) != 0) { perror(tmpdir); return 1; }
    test_png();
    test_hdr();
    test_errors();
    test_dilate_small();
    test_dilate_atlas();
    BK_EXPECTF(files_in_tmpdir() == 0, "files left in %s", tmpdir);
    rmdir(tmpdir);
    BK_TEST_DONE();
}
