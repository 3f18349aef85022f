/* fuzz_image.c - libFuzzer target for the lightmap reader of `baker diff` (bk_image_read_max,
 * src/out/image.c): PNG and Radiance HDR through stb_image, OpenEXR through tinyexr in builds with it.
 *
 * The reader takes a path and chooses the decoder by its extension, so each input is written as
 * in.png, in.hdr or in.exr in a private temporary folder: by its magic bytes when it has one
 * (PNG "\x89PNG", HDR "#?", EXR "v/1\x01"), else by its first byte, so a file of one type under
 * another's name is tried too. The pixel budget is 2^20 (the reader's own limit, made small so
 * one input never asks for more than a few tens of MB). On success the image must keep the
 * reader's promises (image.h): sides 1..BK_IMAGE_MAX_SIDE, at most the budget, every value
 * finite and >= 0. A failure must leave a one-line message naming the file, no image and
 * w = h = 0; ASan reports anything left allocated. Any broken promise aborts. The data reader
 * (bk_image_read_data_max: directional bands, whose EXR values may be negative) reads each input
 * too, with the same promises but the sign.
 */
#include "fuzz_common.h"
#include "image.h"

#include <math.h>

#define FUZZ_IMAGE_MAX_PIXELS ((uint64_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char        path[3][600];
    static const char *names[3] = { "in.png", "in.hdr", "in.exr" };
    int                t;
    if (size >= 4 && !memcmp(data, "\x89PNG", 4)) t = 0;
    else if (size >= 2 && !memcmp(data, "#?", 2)) t = 1;
    else if (size >= 4 && !memcmp(data, "v/1\x01", 4)) t = 2;
    else t = size ? data[0] % 3 : 0;
    if (!path[t][0]) bk_fuzz_path(names[t], path[t], sizeof path[t]);
    bk_fuzz_write(path[t], data, size);

    float *rgb = (float *)&t; /* must be overwritten either way */
    int    w = -1, h = -1;
    char   err[1024];
    err[0] = 'x';
    err[1] = 0;
    int rc = bk_image_read_max(path[t], FUZZ_IMAGE_MAX_PIXELS, &rgb, &w, &h, err, sizeof err);
    if (rc == 0) {
        BK_FUZZ_CHECK(rgb != NULL, "success without pixels");
        BK_FUZZ_CHECK(w >= 1 && h >= 1 && w <= BK_IMAGE_MAX_SIDE && h <= BK_IMAGE_MAX_SIDE, "%dx%d", w, h);
        BK_FUZZ_CHECK((uint64_t)w * (uint64_t)h <= FUZZ_IMAGE_MAX_PIXELS, "%dx%d over the budget", w, h);
        size_t n = (size_t)w * (size_t)h * 3;
        for (size_t i = 0; i < n; ++i)
            BK_FUZZ_CHECK(isfinite(rgb[i]) && rgb[i] >= 0, "value %zu of %dx%d is %g", i, w, h, (double)rgb[i]);
        free(rgb);
    } else {
        BK_FUZZ_CHECK(rc < 0, "status %d", rc);
        BK_FUZZ_CHECK(rgb == NULL && w == 0 && h == 0, "failure left an image behind (%dx%d)", w, h);
        BK_FUZZ_CHECK(err[0] && strcmp(err, "x") != 0 && !strchr(err, '\n') && strstr(err, path[t]),
                      "failure without a one-line message naming the file: '%s'", err);
    }
    /* the data reader (directional bands: an EXR's negatives kept): the same promises, but any
     * finite value, and where the lightmap reader succeeded, it succeeds at the same size */
    float *d = (float *)&t;
    int    dw = -1, dh = -1;
    err[0] = 'x';
    err[1] = 0;
    int rd = bk_image_read_data_max(path[t], FUZZ_IMAGE_MAX_PIXELS, &d, &dw, &dh, err, sizeof err);
    BK_FUZZ_CHECK(rc != 0 || (rd == 0 && dw == w && dh == h), "the data reader refused what the map reader read");
    if (rd == 0) {
        BK_FUZZ_CHECK(d != NULL && (uint64_t)dw * (uint64_t)dh <= FUZZ_IMAGE_MAX_PIXELS, "data %dx%d", dw, dh);
        for (size_t i = 0; i < (size_t)dw * (size_t)dh * 3; ++i)
            BK_FUZZ_CHECK(isfinite(d[i]), "data value %zu of %dx%d is %g", i, dw, dh, (double)d[i]);
        free(d);
    } else {
        BK_FUZZ_CHECK(rd < 0 && d == NULL && dw == 0 && dh == 0, "data: failure left an image behind");
        BK_FUZZ_CHECK(err[0] && strcmp(err, "x") != 0 && !strchr(err, '\n') && strstr(err, path[t]),
                      "data: failure without a one-line message naming the file: '%s'", err);
    }
    return 0;
}
