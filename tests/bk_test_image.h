/* bk_test_image.h - image comparison for the bake tests: read a PNG (stb_image from Debian's
 * libstb-dev) and compare two images by RMSE, PSNR and the count of texels that differ. */
#ifndef BK_TEST_IMAGE_H
#define BK_TEST_IMAGE_H

#include <math.h>
#include <stdint.h>

typedef struct bk_image_diff {
    double   rmse; /* over all channels, in the images' units */
    double   psnr; /* dB against the reference's peak */
    double   max_abs;
    uint64_t differ; /* texels with some channel off by more than the tolerance */
    uint64_t count;  /* texels compared */
} bk_image_diff;

/* Compares n texels of c channels (ref is the reference); mask (may be NULL) picks texels. */
static inline bk_image_diff bk_image_compare_n(const float *ref, const float *got, uint64_t n, int c,
                                               const uint8_t *mask, double tol)
{
    bk_image_diff d;
    double        se = 0.0, peak = 0.0;
    d.max_abs = 0;
    d.differ = 0;
    d.count = 0;
    for (uint64_t i = 0; i < n; ++i) {
        if (mask && !mask[i]) continue;
        int off = 0;
        for (int k = 0; k < c; ++k) {
            double e = (double)got[(uint64_t)c * i + k] - (double)ref[(uint64_t)c * i + k];
            se += e * e;
            if (fabs(e) > d.max_abs) d.max_abs = fabs(e);
            if (fabs(e) > tol) off = 1;
            if (ref[(uint64_t)c * i + k] > peak) peak = ref[(uint64_t)c * i + k];
        }
        d.differ += off;
        d.count++;
    }
    double mse = d.count ? se / ((double)c * (double)d.count) : 0.0;
    d.rmse = sqrt(mse);
    d.psnr = mse > 0 ? 10.0 * log10(peak * peak / mse) : INFINITY;
    return d;
}

/* The same for rgb images (3 channels). */
static inline bk_image_diff bk_image_compare(const float *ref, const float *got, uint64_t n, const uint8_t *mask,
                                             double tol)
{
    return bk_image_compare_n(ref, got, n, 3, mask, tol);
}

#endif
