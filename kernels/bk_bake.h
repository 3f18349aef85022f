/* bk_bake.h - the lightmap bake's per-texel data, shared by CPU and CUDA.
 *
 * Pipeline: atlas (src/atlas.c: charts, packing, rasterization) -> bk_texel per covered texel ->
 * bake (one function per texel and sample, the same on both backends) -> linear RGB per texel ->
 * dilation -> PNG / HDR.
 */
#ifndef BK_BAKE_H
#define BK_BAKE_H

#include "bk_common.h"

/* One covered lightmap texel: where on the surface it sits and which way that surface faces. */
typedef struct bk_texel {
    float    px, py, pz;   /* world position (at the texel centre, clamped into the triangle)  12 B */
    float    nx, ny, nz;   /* unit shading normal (interpolated vn when the file has them)    12 B */
    uint32_t tri;          /* triangle (file numbering)                                        4 B */
    uint32_t pixel;        /* y * width + x in the atlas image                                 4 B */
} bk_texel;                /*                                                                 32 B */

#endif
