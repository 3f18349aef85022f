/* fuzz_texture.c - libFuzzer target for the texture decoder (bk_texture_decode, src/io/texture.c):
 * every stb_image format the program reads (PNG, JPEG, TGA, BMP, PSD, GIF, Radiance HDR).
 *
 * The decoder picks the format by the bytes, not the name, so each input is written as one file
 * in.tex in a private temporary folder. The texel budget is 64 MiB (the scene's own is 2 GiB),
 * so one input never asks stb_image for more than a few hundred MB. On success the image must
 * keep texture.h's promises: sides 1..BK_IMAGE_TEX_MAX_SIDE, within the budget, rgba8 or rgbaf
 * (not both), channels 1..4, the path kept, HDR values in [0, 1e6]. A failure must leave a
 * non-empty one-line reason and a zeroed image; ASan reports anything left allocated. Any broken
 * promise aborts.
 */
#include "fuzz_common.h"
#include "texture.h"

#include <math.h>

#define FUZZ_TEX_BUDGET ((uint64_t)64 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    if (!path[0]) bk_fuzz_path("in.tex", path, sizeof path);
    bk_fuzz_write(path, data, size);

    bk_image im;
    char     why[512];
    why[0] = 'x';
    why[1] = 0;
    int rc = bk_texture_decode(path, FUZZ_TEX_BUDGET, &im, why, sizeof why);
    if (rc >= 0) {
        BK_FUZZ_CHECK(rc <= 1, "status %d", rc);
        BK_FUZZ_CHECK(im.w >= 1 && im.h >= 1 && im.w <= BK_IMAGE_TEX_MAX_SIDE && im.h <= BK_IMAGE_TEX_MAX_SIDE, "%ux%u",
                      im.w, im.h);
        BK_FUZZ_CHECK(!im.rgba8 != !im.rgbaf, "rgba8 %p rgbaf %p", (void *)im.rgba8, (void *)im.rgbaf);
        BK_FUZZ_CHECK(im.channels >= 1 && im.channels <= 4, "%u channels", im.channels);
        BK_FUZZ_CHECK(im.path && !strcmp(im.path, path), "path '%s'", im.path ? im.path : "(null)");
        size_t n = 4 * (size_t)im.w * im.h;
        BK_FUZZ_CHECK(n * (im.rgbaf ? 4 : 1) <= FUZZ_TEX_BUDGET, "%ux%u over the budget", im.w, im.h);
        if (im.rgbaf)
            for (size_t i = 0; i < n; ++i)
                BK_FUZZ_CHECK(im.rgbaf[i] >= 0.0f && im.rgbaf[i] <= 1e6f, "value %zu is %g", i, (double)im.rgbaf[i]);
        else {
            unsigned sum = 0; /* every byte read: uninitialised texels show under MSan, and here under ASan's reads */
            for (size_t i = 0; i < n; ++i) sum += im.rgba8[i];
            (void)sum;
        }
        if (rc == 1) BK_FUZZ_CHECK(why[0] && strcmp(why, "x") && !strchr(why, '\n'), "note '%s'", why);
        free(im.rgba8);
        free(im.rgbaf);
        free(im.path);
    } else {
        BK_FUZZ_CHECK(rc == -1 || rc == -2, "status %d", rc);
        BK_FUZZ_CHECK(!im.rgba8 && !im.rgbaf && !im.path && !im.w && !im.h, "failure left an image behind");
        BK_FUZZ_CHECK(why[0] && strcmp(why, "x") != 0 && !strchr(why, '\n'), "failure without a one-line reason: '%s'",
                      why);
    }
    return 0;
}
