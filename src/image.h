/* image.h - lightmap images: dilation of the padding and PNG / Radiance HDR output.
 *
 * Pipeline: bake -> linear RGB per texel (3 floats, row-major, row 0 at the top) ->
 * bk_fill_hidden_texels (fill.h: texels inside geometry, from their own chart) ->
 * bk_image_dilate (fill the padding from chart edges so bilinear filtering shows no seams) ->
 * bk_image_write (.png: 8-bit sRGB; .hdr: Radiance RGBE, linear) through stb_image_write from
 * Debian's libstb-dev.
 *
 * Usage:
 *     bk_image_dilate(rgb, coverage, w, h, padding + 1);
 *     if (bk_image_write("lightmap.png", rgb, w, h, exposure, err, sizeof err) != 0) puts(err);
 */
#ifndef BK_IMAGE_H
#define BK_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* coverage values after dilation */
#define BK_COVER_NONE    0  /* no value yet */
#define BK_COVER_TEXEL   1  /* baked texel (what bk_atlas_rasterize marks) */
#define BK_COVER_DILATED 2  /* filled by bk_image_dilate */

/* Fills uncovered texels from their covered 8-neighbours: each of `iterations` rounds gives every
 * empty texel that has covered neighbours (covered before the round began) their average and marks
 * it BK_COVER_DILATED, so the padding takes the colours of the chart edges. Covered texels never
 * change. Stops early when a round fills nothing. */
void bk_image_dilate(float *rgb, uint8_t *coverage, int w, int h, int iterations);

/* Writes rgb (w * h * 3 linear floats, row 0 at the top) by the path's extension:
 *   .png  8-bit sRGB of rgb * exposure, clamped to [0, 1] (the exact sRGB transfer curve);
 *   .hdr  Radiance RGBE of the linear values; exposure is NOT applied (an HDR keeps the bake's
 *         radiometric values; the viewer or game chooses the exposure), negatives and NaN -> 0.
 * Case-insensitive extensions. Written to a temporary file and renamed: on failure no file is
 * left. Returns 0, or -1 with one line in err naming the file. */
int bk_image_write(const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size);
/* The same into an open stream (an output of bk_outputs); path gives the type and names the file
 * in messages. */
int bk_image_write_file(FILE *f, const char *path, const float *rgb, int w, int h, float exposure,
                        char *err, size_t err_size);

/* sRGB encoding of one linear value in [0, 1] (clamped) to 0..255, as bk_image_write does it. */
uint8_t bk_image_srgb8(float linear);

#endif /* BK_IMAGE_H */
