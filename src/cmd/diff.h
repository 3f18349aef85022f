/* diff.h - baker diff: how far one lightmap is from another (a reference bake, a denoised map).
 *
 * Pipeline: two lightmaps (PNG decoded to linear, HDR linear; image.h) -> bk_diff_compute over
 * the covered texels -> numbers (text or JSON) and, with -o, a difference image written through
 * the output policy (outputs.h).
 *
 * Covered texels: with a mask, those where the mask is non-zero in any channel; without, those
 * where A or B is non-zero in any channel (a lightmap's unused atlas space is black in both, and
 * would only flatter the comparison).
 *
 * Usage:
 *     bk_diff_stats st;
 *     bk_diff_compute(a, b, mask_or_NULL, w, h, 1.0f, &st);
 *     printf("%.2f dB\n", st.psnr_srgb);
 */
#ifndef BK_DIFF_H
#define BK_DIFF_H

#include <stdio.h>

#include <stddef.h>
#include <stdint.h>

/* Rec. 709 / sRGB luminance weights (linear RGB). */
#define BK_DIFF_LUM_R 0.2126
#define BK_DIFF_LUM_G 0.7152
#define BK_DIFF_LUM_B 0.0722

typedef struct bk_diff_stats {
    uint64_t texels;  /* w * h */
    uint64_t covered; /* texels compared (see the file comment) */
    /* everything below over the covered texels, values multiplied by the exposure first */
    double rmse;        /* linear, over the 3 channels of every covered texel */
    double psnr_linear; /* 20 log10(1 / rmse), dB: peak 1.0, values not clamped; INFINITY when equal */
    double rmse_srgb;   /* of the sRGB encodings in [0, 1] (values clamped to [0, 1] first, not quantised) */
    double psnr_srgb;   /* 20 log10(1 / rmse_srgb), dB; INFINITY when equal */
    double mean_a[4];   /* R, G, B, luminance (linear) */
    double mean_b[4];
    double bias[4]; /* (mean B - mean A) / mean A; NAN where mean A is 0 */
    double max_abs; /* largest |A - B| of a covered texel's channel (linear) */
} bk_diff_stats;

/* Compares a and b (w * h * 3 linear floats each); mask (w * h bytes, non-zero = covered) may be
 * NULL for the rule above. All zero (covered 0, means 0, bias NAN) when nothing is covered. */
void bk_diff_compute(const float *a, const float *b, const uint8_t *mask, int w, int h, float exposure,
                     bk_diff_stats *out);

/* The difference image: rgb[i] = |a - b| * exposure at covered texels, 0 elsewhere (w * h * 3). */
void bk_diff_image(const float *a, const float *b, const uint8_t *mask, int w, int h, float exposure, float *rgb);

/* baker diff A B [-o DIFF.png|.hdr] [--mask M] [--exposure E] [--json]: argv without "diff".
 * Returns the exit status (0, 1 for a file problem, 2 for usage). */
int bk_cmd_diff(int argc, char **argv);
/* `baker help diff`: the help made from the command's option table. */
void bk_diff_help(FILE *f);

#endif /* BK_DIFF_H */
