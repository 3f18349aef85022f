/* image.c - dilation and PNG / HDR writing (see image.h).
 *
 * Encoders: stb_image_write (Sean Barrett, public domain) from Debian's libstb-dev; the
 * implementation is compiled here, once, and writes through a callback into bk_outfile's
 * temporary file so a failed write never leaves a half-written image.
 */
#include "image.h"
#include "outputs.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int bk_image_write_file(FILE *f, const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size)
{
    int png = bk_path_has_ext(path, ".png"), hdr = bk_path_has_ext(path, ".hdr");
    if (!png && !hdr) return bk_fail(err, err_size, "%s: unsupported image type: the name must end in .png (8-bit sRGB) or .hdr (Radiance, linear)", path);
    if (w <= 0 || h <= 0) return bk_fail(err, err_size, "%s: empty image (%dx%d)", path, w, h);
    if (png && !(exposure >= 0 && isfinite(exposure)))
        return bk_fail(err, err_size, "%s: exposure %g: must be a finite number >= 0", path, (double)exposure);
    size_t n = (size_t)w * h * 3;
    void *buf = png ? malloc(n) : malloc(n * sizeof(float));
    if (!buf) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, w, h);
    if (png) {
        uint8_t *b = buf;
        for (size_t i = 0; i < n; ++i) b[i] = bk_image_srgb8(rgb[i] * exposure);
    } else {
        float *fl = buf;
        for (size_t i = 0; i < n; ++i) {
            float v = rgb[i];
            fl[i] = v > 0 ? (isfinite(v) ? v : 3.0e38f) : 0.0f;  /* RGBE has no negatives; NaN -> 0 */
        }
    }
    int ok = png ? stbi_write_png_to_func(to_file, f, w, h, 3, buf, w * 3)
                 : stbi_write_hdr_to_func(to_file, f, w, h, 3, (const float *)buf);
    free(buf);
    if (!ok) return bk_fail(err, err_size, "%s: image encoder failed (%dx%d)", path, w, h);
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
