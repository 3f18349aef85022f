/* bk_rng.h - counter-based random numbers, shared by CPU and CUDA.
 *
 * A number is a pure function of (seed, a, b, dimension) - for the bake (seed, texel, sample,
 * dimension), for ray generation (seed, ray, 0, dimension) - never of a thread or batch index, so
 * backend, stack strategy and batch size cannot change a result. The mixer is a 32-bit
 * xorshift-multiply finaliser in the style of MurmurHash3's fmix32, with constants from
 * Chris Wellons' hash-prospector search ("lowbias32").
 */
#ifndef BK_RNG_H
#define BK_RNG_H

#include "bk_common.h"

BK_HD uint32_t bk_mix32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

BK_HD uint32_t bk_rng_u32(uint32_t seed, uint32_t a, uint32_t b, uint32_t dim)
{
    uint32_t h = bk_mix32(seed ^ 0x9e3779b9u);
    h = bk_mix32(h ^ a);
    h = bk_mix32(h ^ b);
    return bk_mix32(h ^ dim);
}

/* Uniform in [0, 1): the top 24 bits. */
BK_HD float bk_rng_f(uint32_t seed, uint32_t a, uint32_t b, uint32_t dim)
{
    return (float)(bk_rng_u32(seed, a, b, dim) >> 8) * (1.0f / 16777216.0f);
}

#endif
