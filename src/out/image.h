/* image.h - lightmap images: dilation of the padding and PNG / Radiance HDR / OpenEXR output.
 *
 * Pipeline: bake -> linear RGB per texel (3 floats, row-major, row 0 at the top) ->
 * bk_fill_hidden_texels (fill.h: texels inside geometry, from their own chart) ->
 * bk_image_dilate (fill the padding from chart edges so bilinear filtering shows no seams) ->
 * bk_image_write (.png: 8-bit sRGB, our own writer, deflate on the pool (libdeflate or zlib); .hdr:
 * Radiance RGBE, linear, our own encoder rounding to nearest; .exr: RGB half-float, linear,
 * through Debian's tinyexr, only when built with it: BK_HAVE_EXR). bk_image_read reads all
 * three back (baker diff).
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
#define BK_COVER_NONE    0 /* no value yet */
#define BK_COVER_TEXEL   1 /* baked texel (what bk_atlas_rasterize marks) */
#define BK_COVER_DILATED 2 /* filled by bk_image_dilate */
#define BK_COVER_CUT                                                       \
    4 /* where an alpha-tested surface is cut away: never baked, filled or \
         read (3 is the dilation's own mark) */

/* Fills uncovered texels from their covered 8-neighbours: each of `iterations` rounds gives every
 * empty texel that has covered neighbours (covered before the round began) their average and marks
 * it BK_COVER_DILATED, so the padding takes the colours of the chart edges. Covered texels never
 * change. Stops early when a round fills nothing. */
void bk_image_dilate(float *rgb, uint8_t *coverage, int w, int h, int iterations);
/* The same where charts lie closer than two texels: ids (w * h, bk_atlas_reach_ids) gives each
 * texel the chart whose colours it takes; an empty texel with a chart averages only its
 * neighbours of that chart, one with BK_DILATE_ANY all of them. Charts packed one texel apart
 * keep their bilinear lookups their own that way: the texel between them belongs to the one
 * that reads it. */
#define BK_DILATE_ANY 0xFFFFFFFFu /* BK_NONE */
void bk_image_dilate_charts(float *rgb, uint8_t *coverage, const uint32_t *ids, int w, int h, int iterations);
/* The same for `pages` images of w x h one after another (an atlas's pages; ids NULL or for all
 * of them), the pages' rounds side by side on the pool: each page as bk_image_dilate_charts makes
 * it on its own. */
void bk_image_dilate_pages(float *rgb, uint8_t *coverage, const uint32_t *ids, int w, int h, int pages, int iterations);

/* Image types, by the path's extension (case-insensitive). */
typedef enum bk_image_type {
    BK_IMAGE_TYPE_NONE = 0, /* none of the below */
    BK_IMAGE_TYPE_PNG,      /* .png: 8-bit sRGB */
    BK_IMAGE_TYPE_HDR,      /* .hdr: Radiance RGBE, linear */
    BK_IMAGE_TYPE_EXR       /* .exr: OpenEXR RGB half-float, linear (needs BK_HAVE_EXR) */
} bk_image_type;

bk_image_type bk_image_type_of(const char *path);
/* 1 when this build reads and writes .exr (configured with Debian's libtinyexr-dev). */
int bk_image_exr_supported(void);
/* 0 when path names an image type this build reads and writes; else -1 with one line in err,
 * naming path and the types (`what` prefixes it, e.g. "-o"): an unknown extension, or .exr in a
 * build without tinyexr ("built without EXR support: install libtinyexr-dev and rebuild"). */
int bk_image_type_check(const char *what, const char *path, char *err, size_t err_size);

/* What bk_image_read accepts: sides of at most BK_IMAGE_MAX_SIDE (the largest atlas page) and
 * files of at most BK_IMAGE_MAX_FILE bytes (checked before anything is decoded); an EXR may have
 * at most BK_IMAGE_EXR_MAX_CHANNELS channels (tinyexr decodes all of them). */
#define BK_IMAGE_MAX_SIDE         16384
#define BK_IMAGE_MAX_FILE         ((uint64_t)4 << 30)
#define BK_IMAGE_EXR_MAX_CHANNELS 16

/* Writes rgb (w * h * 3 linear floats, row 0 at the top) by the path's extension:
 *   .png  8-bit sRGB of rgb * exposure, clamped to [0, 1] (the exact sRGB transfer curve);
 *   .hdr  Radiance RGBE of the linear values (bk_image_rgbe, run-length encoded scanlines when
 *         8 <= w < 32768); exposure is NOT applied (an HDR keeps the bake's radiometric values;
 *         the viewer or game chooses the exposure), negatives and NaN -> 0.
 *   .exr  OpenEXR, channels R, G, B as half floats (rounded to nearest even), ZIP-compressed
 *         scanlines, linear like .hdr (no exposure); negatives and NaN -> 0, values beyond the
 *         largest half (65504, +inf included) -> 65504. Only with BK_HAVE_EXR (else an error).
 *         tinyexr encodes into memory, which is then written into the stream like the others.
 * Case-insensitive extensions. Written to a temporary file and renamed: on failure no file is
 * left. Returns 0, or -1 with one line in err naming the file. */
int bk_image_write(const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size);
/* The same into an open stream (an output of bk_outputs); path gives the type and names the file
 * in messages. */
int bk_image_write_file(FILE *f, const char *path, const float *rgb, int w, int h, float exposure, char *err,
                        size_t err_size);
/* n images of w x h, rgb[p] into f[p] (named path[p]; by its extension, as above): the PNG ones
 * encoded side by side on the pool (their bands all at once), the others one after another. Each
 * file as bk_image_write_file writes it. Returns 0, or -1 with one line in err naming the file. */
int bk_image_write_files(FILE *const *f, const char *const *path, const float *const *rgb, int n, int w, int h,
                         float exposure, char *err, size_t err_size);
/* A data image (directional bands, direction maps: numbers, not colours) of ch = 3 or 4 channels
 * (px: w * h * ch floats), by the path's extension: .png 8-bit RGB or RGBA of round(255 x), x
 * clamped to [0, 1], no sRGB curve and no exposure (the PNG carries no gamma chunk: readers that
 * take it for sRGB must be told it is linear data); .exr half floats R, G, B (, A) that keep their
 * sign (beyond +-65504 clamped; NaN 0); .hdr refused. Returns 0, or -1 with one line in err. */
int bk_image_write_data(FILE *f, const char *path, const float *px, int ch, int w, int h, char *err, size_t err_size);
/* The PNG writer's sRGB byte of x (a table and one threshold): bk_image_srgb8_fast's. For tests. */
uint8_t bk_image_srgb8_lut(float x);

/* One pixel as Radiance RGBE, mantissas rounded to nearest: with e the frexp exponent of the
 * largest channel m (m = f 2^e, f in [0.5, 1)), byte = floor(c 2^(8-e) + 0.5); when m rounds to
 * 256 the exponent goes up by one. Unbiased for decoders that read byte * 2^(E-136) (E the fourth
 * byte; stb_image, Blender's and most loaders); the error is at most half a step, 2^(e-9) <=
 * m / 256. (Radiance's own colr_color reads (byte + 0.5) 2^(E-136), unbiased for truncated
 * mantissas; it sees ours half a step bright.) Negatives and NaN -> 0, +inf and values beyond
 * ~1.7e38 saturate, values under 2^-128 round towards zero. */
void bk_image_rgbe(const float rgb[3], uint8_t out[4]);

/* Reads a lightmap by its extension: .png (8-bit sRGB, decoded exactly to linear; alpha and
 * grey are expanded to RGB), .hdr (Radiance, linear as stb_image decodes it: byte * 2^(E-136))
 * or .exr (BK_HAVE_EXR only: a single-part scanline OpenEXR with half or float channels R, G, B,
 * or Y alone as grey; every value must be finite and >= 0, as a lightmap's are).
 * *rgb gets w * h * 3 floats (malloc'ed, row 0 at the top), all finite and >= 0. Sizes and
 * dimensions are checked before decoding (the limits above). 0, or -1 with one line naming path,
 * *rgb NULL and *w = *h = 0. */
int bk_image_read(const char *path, float **rgb, int *w, int *h, char *err, size_t err_size);
/* The same with a smaller pixel budget: images of more than max_pixels pixels are refused before
 * decoding (the fuzz target keeps each input's memory small with it). */
int bk_image_read_max(const char *path, uint64_t max_pixels, float **rgb, int *w, int *h, char *err, size_t err_size);
/* As bk_image_read for a data image (bk_image_write_data's 3 channels): an EXR's negative values
 * are kept (a PNG's bytes come back as bk_image_read gives them). */
int bk_image_read_data(const char *path, float **rgb, int *w, int *h, char *err, size_t err_size);
int bk_image_read_data_max(const char *path, uint64_t max_pixels, float **rgb, int *w, int *h, char *err,
                           size_t err_size);

/* The sRGB decoding of s in [0, 1] (the IEC 61966-2-1 curve). */
float bk_image_srgb_to_linear(float s);

/* sRGB encoding of one linear value in [0, 1] (clamped) to 0..255, as bk_image_write does it. */
uint8_t bk_image_srgb8(float linear);

/* The same without a pow: bk_image_srgb8 never decreases as its argument grows, so its value at x
 * is the number of k in 1..255 whose threshold t[k] (the least float it maps to k or more) is at
 * or below x; a branch-free binary search of 8 steps finds it (NaN: 0). t from
 * bk_image_srgb8_thresholds (t[0] unused), which bisects bk_image_srgb8 itself. tests/unit_image.c
 * compares the two on every 97th float of [0, 1], around every threshold and on odd values. */
void                  bk_image_srgb8_thresholds(float t[256]);
static inline uint8_t bk_image_srgb8_fast(const float t[256], float x)
{
    unsigned i = 0;
    for (unsigned step = 128; step; step >>= 1) i += t[i + step] <= x ? step : 0;
    return (uint8_t)i;
}

#endif /* BK_IMAGE_H */
