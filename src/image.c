/* image.c - dilation, PNG / HDR writing and reading (see image.h).
 *
 * PNG encoder and both decoders: stb_image_write and stb_image (Sean Barrett, public domain)
 * from Debian's libstb-dev, compiled here once, static. The Radiance RGBE encoder is our own:
 * stb_image_write truncates the mantissas, which darkens every channel by half a step on average
 * (up to 1.5 % for a channel 1/3 of the pixel's largest) in decoders that read byte * 2^(e-136)
 * (stb_image, and most others); ours rounds to nearest, so those decoders see no bias.
 * Writers write into bk_outfile's temporary file, so a failed write never leaves a half-written
 * image. Reference: G. Ward, "Real Pixels", Graphics Gems II (1991); the Radiance file format
 * (header, -Y H +X W, new-style run-length scanlines).
 */
#include "image.h"
#include "outputs.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(__GNUC__)
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wsign-compare"
#  pragma GCC diagnostic ignored "-Wunused-function"
#  pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
/* not STBI_WRITE_NO_STDIO: in libstb-dev 0.0~git20220908 it also hides stbi_write_hdr_to_func */
#include <stb/stb_image_write.h>
/* static, so a test that compiles its own stb_image links without clashes */
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_GIF
#define STBI_ONLY_PNG
#define STBI_ONLY_HDR
#include <stb/stb_image.h>
/* libstb-dev 0.0~git20220908 declares this but never defines it: a static declaration without a
 * definition warns, so give it one (unused). */
static void stbi_set_unpremultiply_on_load_thread(int flag) { (void)flag; }
#if defined(__GNUC__)
#  pragma GCC diagnostic pop
#endif

void bk_image_dilate(float *rgb, uint8_t *coverage, int w, int h, int iterations)
{
    for (int it = 0; it < iterations; ++it) {
        int filled = 0;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                size_t i = (size_t)y * w + x;
                if (coverage[i] != BK_COVER_NONE) continue;
                float sum[3] = { 0, 0, 0 };
                int n = 0;
                for (int dy = -1; dy <= 1; ++dy) {
                    int yy = y + dy;
                    if (yy < 0 || yy >= h) continue;
                    for (int dx = -1; dx <= 1; ++dx) {
                        int xx = x + dx;
                        if (xx < 0 || xx >= w || (dx == 0 && dy == 0)) continue;
                        size_t j = (size_t)yy * w + xx;
                        /* filled this round (marked 3 below) does not count until the next round */
                        if (coverage[j] != BK_COVER_TEXEL && coverage[j] != BK_COVER_DILATED) continue;
                        sum[0] += rgb[3 * j]; sum[1] += rgb[3 * j + 1]; sum[2] += rgb[3 * j + 2];
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

uint8_t bk_image_srgb8(float linear)
{
    double c = linear;
    if (!(c > 0)) c = 0;  /* negatives and NaN */
    if (c > 1) c = 1;
    double e = c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
    return (uint8_t)(e * 255.0 + 0.5);
}

static void to_file(void *ctx, void *data, int size) { fwrite(data, 1, (size_t)size, (FILE *)ctx); }

void bk_image_rgbe(const float rgb[3], uint8_t out[4])
{
    double c[3];
    for (int k = 0; k < 3; ++k) {
        double v = rgb[k];
        c[k] = v > 0 ? (isfinite(v) ? v : 3.0e38) : 0.0;   /* RGBE has no negatives; NaN -> 0, inf -> large */
    }
    double m = fmax(c[0], fmax(c[1], c[2]));
    if (!(m >= 1e-38)) { out[0] = out[1] = out[2] = out[3] = 0; return; }
    int e;
    frexp(m, &e);                       /* m = f 2^e, f in [0.5, 1): mantissa m 256 / 2^e in [128, 256) */
    if (e < -127) e = -127;             /* exponent byte 1: tinier values round towards 0 */
    for (;;) {
        if (e > 127) {                  /* beyond RGBE's range (~1.7e38): saturate */
            out[0] = out[1] = out[2] = 255; out[3] = 255;
            return;
        }
        double scale = ldexp(1.0, 8 - e);
        /* round to nearest; the largest channel may round up to 256: one exponent more */
        if (floor(m * scale + 0.5) >= 256.0) { e++; continue; }
        for (int k = 0; k < 3; ++k) out[k] = (uint8_t)floor(c[k] * scale + 0.5);
        out[3] = (uint8_t)(e + 128);
        return;
    }
}

/* One scanline of RGBE pixels, new-style run-length encoded: each of the 4 byte planes in turn,
 * runs of 3..127 equal bytes as (128 + n, byte), other stretches as (n, n bytes), n <= 128. */
static void write_rle_plane(FILE *f, const uint8_t *px, int w, int k, uint8_t *buf)
{
    int x = 0;
    while (x < w) {
        int run = 1;
        while (x + run < w && run < 127 && px[4 * (x + run) + k] == px[4 * x + k]) run++;
        if (run >= 3) {
            fputc(128 + run, f);
            fputc(px[4 * x + k], f);
            x += run;
            continue;
        }
        int n = 0;
        while (x < w && n < 128) {
            int r = 1;
            while (x + r < w && r < 3 && px[4 * (x + r) + k] == px[4 * x + k]) r++;
            if (r >= 3) break;
            buf[n++] = px[4 * x + k];
            x++;
        }
        fputc(n, f);
        fwrite(buf, 1, (size_t)n, f);
    }
}

static int write_hdr(FILE *f, const char *path, const float *rgb, int w, int h, char *err, size_t err_size)
{
    uint8_t *px = malloc((size_t)w * 4 + 128);
    if (!px) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, w, h);
    uint8_t *buf = px + (size_t)w * 4;
    fprintf(f, "#?RADIANCE\n# written by baker: RGBE rounded to nearest (decode byte * 2^(e-136))\n"
               "FORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n", h, w);
    int rle = w >= 8 && w < 32768;     /* the format's limits for run-length scanlines */
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) bk_image_rgbe(rgb + 3 * ((size_t)y * w + x), px + 4 * (size_t)x);
        if (!rle) { fwrite(px, 4, (size_t)w, f); continue; }
        uint8_t head[4] = { 2, 2, (uint8_t)(w >> 8), (uint8_t)(w & 255) };
        fwrite(head, 1, 4, f);
        for (int k = 0; k < 4; ++k) write_rle_plane(f, px, w, k, buf);
    }
    free(px);
    return ferror(f) ? bk_fail(err, err_size, "%s: write failed", path) : 0;
}

int bk_image_write_file(FILE *f, const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size)
{
    int png = bk_path_has_ext(path, ".png"), hdr = bk_path_has_ext(path, ".hdr");
    if (!png && !hdr) return bk_fail(err, err_size, "%s: unsupported image type: the name must end in .png (8-bit sRGB) or .hdr (Radiance, linear)", path);
    if (w <= 0 || h <= 0) return bk_fail(err, err_size, "%s: empty image (%dx%d)", path, w, h);
    if (hdr) return write_hdr(f, path, rgb, w, h, err, err_size);
    if (!(exposure >= 0 && isfinite(exposure)))
        return bk_fail(err, err_size, "%s: exposure %g: must be a finite number >= 0", path, (double)exposure);
    size_t n = (size_t)w * h * 3;
    uint8_t *b = malloc(n);
    if (!b) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, w, h);
    for (size_t i = 0; i < n; ++i) b[i] = bk_image_srgb8(rgb[i] * exposure);
    int ok = stbi_write_png_to_func(to_file, f, w, h, 3, b, w * 3);
    free(b);
    if (!ok) return bk_fail(err, err_size, "%s: image encoder failed (%dx%d)", path, w, h);
    return 0;
}

float bk_image_srgb_to_linear(float s)
{
    double c = s;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}

int bk_image_read(const char *path, float **rgb, int *w, int *h, char *err, size_t err_size)
{
    *rgb = NULL;
    *w = *h = 0;
    int png = bk_path_has_ext(path, ".png"), hdr = bk_path_has_ext(path, ".hdr");
    if (!png && !hdr) return bk_fail(err, err_size, "%s: unsupported image type: the name must end in .png (8-bit sRGB) or .hdr (Radiance, linear)", path);
    struct stat st;
    if (stat(path, &st) != 0) return bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return bk_fail(err, err_size, "%s: not a regular file", path);
    FILE *f = fopen(path, "rb");
    if (!f) return bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    int x, y, comp;
    float *out = NULL;
    if (hdr) {
        if (!stbi_is_hdr_from_file(f)) { fclose(f); return bk_fail(err, err_size, "%s: not a Radiance HDR file", path); }
        out = stbi_loadf_from_file(f, &x, &y, &comp, 3);
        fclose(f);
        if (!out) return bk_fail(err, err_size, "%s: cannot read the HDR image: %s", path, stbi_failure_reason());
    } else {
        stbi_uc *b = stbi_load_from_file(f, &x, &y, &comp, 3);
        fclose(f);
        if (!b) return bk_fail(err, err_size, "%s: cannot read the PNG image: %s", path, stbi_failure_reason());
        float lut[256];
        for (int i = 0; i < 256; ++i) lut[i] = bk_image_srgb_to_linear((float)i / 255.0f);
        size_t n = (size_t)x * y * 3;
        out = malloc(sizeof(float) * n);
        if (out) for (size_t i = 0; i < n; ++i) out[i] = lut[b[i]];
        stbi_image_free(b);
        if (!out) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, x, y);
    }
    /* stb's float buffer is malloc'ed (no STBI_MALLOC override): free() frees it */
    *rgb = out;
    *w = x;
    *h = y;
    return 0;
}

int bk_image_write(const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size)
{
    if (!bk_path_has_ext(path, ".png") && !bk_path_has_ext(path, ".hdr"))
        return bk_image_write_file(NULL, path, rgb, w, h, exposure, err, err_size);   /* the type error */
    bk_outfile of;
    if (bk_outfile_open(&of, path, err, err_size) != 0) return -1;
    if (bk_image_write_file(of.f, path, rgb, w, h, exposure, err, err_size)) { bk_outfile_abort(&of); return -1; }
    return bk_outfile_commit(&of, err, err_size);
}
