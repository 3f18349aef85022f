/* bk_material.h - textures and materials as the traversal and the bake read them, shared by CPU and
 * CUDA: the texture pool (one flat array of texels per format, one record per texture use), its
 * bilinear fetch, the alpha-tested cut-out filter at a triangle hit, and the emitters' sub-triangle
 * grid that lets light sampling follow an emission texture.
 *
 * Pipeline: readers (src/io: MTL maps, images through stb_image) -> bk_scene images and material
 * texture references (src/scene/scene.h) -> bk_tex_pool (src/scene/material.c: pool, records) ->
 * bk_tex_view in bk_accel_view (uploaded once per scene) -> bk_tex_sample here, at a bounce hit
 * (albedo, emission), at a candidate hit on an alpha-tested triangle (bk_alpha_keep), at a texel
 * (its own cut-out). The fetch is ours, not a CUDA texture object's: the hardware filter weighs
 * with 8-bit fractions, and the CPU and GPU must give the same texel bit for bit.
 *
 * Texture coordinates: (u, v) as the file writes them with v up (OBJ; a glTF reader flips its v
 * when it loads), so texel row 0, the image's top row, is at v = 1. The record's scale and offset
 * apply first (MTL -s, -o: uv' = uv * s + o), then the wrap (repeat, or clamp to the edge).
 */
#ifndef BK_MATERIAL_H
#define BK_MATERIAL_H

#include <math.h>
#include <stddef.h>
#include "bk_common.h"
#include "bk_rng.h"

/* How a material's alpha decides what a ray sees (glTF alphaMode; MTL: MASK where it has map_d
 * or d < 1, see docs/materials.md). */
enum bk_alpha_mode {
    BK_ALPHA_OPAQUE = 0, /* every hit counts */
    BK_ALPHA_MASK = 1,   /* a hit counts where alpha >= the cutoff */
    BK_ALPHA_BLEND = 2   /* stochastic: a hit counts with probability alpha (bk_alpha_hash) */
};

/* No texture record (a material record's w without a map): BK_NONE's value. */
#define BK_TEX_NONE 0xFFFFFFFFu

/* Texture record flags (bk_tex_rec.flags). */
enum bk_tex_flag {
    BK_TEX_FLOAT = 1u,    /* texels in the float pool (HDR images), else RGBA8 */
    BK_TEX_CLAMP = 2u,    /* clamp to the edge (MTL -clamp on), else repeat */
    BK_TEX_SRGB = 4u,     /* rgb is sRGB-encoded (colour maps), else linear (alpha maps, HDR) */
    BK_TEX_CHAN_RED = 8u, /* a scalar fetch (bk_tex_scalar) reads red (a map without alpha), else alpha */
    BK_TEX_FLAGS_MASK = 15u
};

/* One texture use (an image with the wrap, transform and encoding of the material map that names
 * it): two bk_f4 in bk_tex_view.recs. */
typedef struct bk_tex_rec {
    BK_ALIGN16 uint32_t offset; /* first texel of the image in its pool                      4 B */
    uint32_t            w, h;   /* size in texels                                            8 B */
    uint32_t            flags;  /* enum bk_tex_flag                                          4 B */
    float               su, sv; /* uv' = uv * s + o                                          8 B */
    float               ou, ov; /*                                                           8 B */
} bk_tex_rec;                   /*                                                          32 B */

/* The pool a traversal and a bake read: host pointers on the CPU, device pointers after upload. */
typedef struct bk_tex_view {
    const bk_tex_rec *recs; /* texture uses */
    uint32_t          rec_count;
    const uint32_t   *texels8; /* RGBA8 texels, r in the low byte, rows top to bottom */
    const bk_f4      *texelsf; /* RGBA float texels (linear) */
    uint64_t          texel8_count, texelf_count;
    const float      *srgb; /* 256 entries: an sRGB byte's linear value (bk_tex_pool builds it) */
} bk_tex_view;

/* One texel of record t at integer coordinates (already wrapped), linear RGBA. */
BK_HD bk_f4 bk_tex_texel(const bk_tex_view *tv, const bk_tex_rec *t, uint32_t x, uint32_t y)
{
    const size_t i = (size_t)t->offset + (size_t)y * t->w + x;
    if (t->flags & BK_TEX_FLOAT) return bk_load4(tv->texelsf + i);
    const uint32_t p = tv->texels8[i];
    bk_f4          c;
    if (t->flags & BK_TEX_SRGB) {
        c.x = tv->srgb[p & 0xFFu];
        c.y = tv->srgb[(p >> 8) & 0xFFu];
        c.z = tv->srgb[(p >> 16) & 0xFFu];
    } else {
        c.x = (float)(p & 0xFFu) * (1.0f / 255.0f);
        c.y = (float)((p >> 8) & 0xFFu) * (1.0f / 255.0f);
        c.z = (float)((p >> 16) & 0xFFu) * (1.0f / 255.0f);
    }
    c.w = (float)(p >> 24) * (1.0f / 255.0f);
    return c;
}

/* A coordinate along one axis of n texels: the two texels a bilinear fetch blends and the weight of
 * the second. u is in texture space (0..1 across the image); NaN reads as 0. */
BK_HD void bk_tex_axis(float u, uint32_t n, int clamp, uint32_t *i0, uint32_t *i1, float *f)
{
    if (!(u == u)) u = 0.0f;
    if (clamp) u = bk_minf(bk_maxf(u, 0.0f), 1.0f);
    else u = bk_sub(u, floorf(u)); /* into [0, 1]: keeps large coordinates from overflowing */
    const float x = bk_sub(bk_mul(u, (float)n), 0.5f), x0 = floorf(x);
    *f = bk_sub(x, x0);
    int a = (int)x0, b = a + 1, m = (int)n;
    if (clamp) {
        a = a < 0 ? 0 : a >= m ? m - 1 : a;
        b = b < 0 ? 0 : b >= m ? m - 1 : b;
    } else {
        a = a < 0 ? a + m : a >= m ? a - m : a;
        b = b < 0 ? b + m : b >= m ? b - m : b;
    }
    *i0 = (uint32_t)a;
    *i1 = (uint32_t)b;
}

BK_HD bk_f4 bk_f4_lerp(bk_f4 a, bk_f4 b, float t)
{
    bk_f4 r;
    r.x = bk_add(a.x, bk_mul(bk_sub(b.x, a.x), t));
    r.y = bk_add(a.y, bk_mul(bk_sub(b.y, a.y), t));
    r.z = bk_add(a.z, bk_mul(bk_sub(b.z, a.z), t));
    r.w = bk_add(a.w, bk_mul(bk_sub(b.w, a.w), t));
    return r;
}

/* Texture use `ref` (an index of tv->recs) at (u, v): bilinear, linear RGBA. Unfused arithmetic on
 * both sides, so the CPU and the GPU fetch the same value. */
BK_HD bk_f4 bk_tex_sample(const bk_tex_view *tv, uint32_t ref, float u, float v)
{
    const bk_tex_rec *t = tv->recs + ref;
    const int         clamp = (t->flags & BK_TEX_CLAMP) != 0;
    uint32_t          x0, x1, y0, y1;
    float             fx, fy;
    bk_tex_axis(bk_add(bk_mul(u, t->su), t->ou), t->w, clamp, &x0, &x1, &fx);
    bk_tex_axis(bk_sub(1.0f, bk_add(bk_mul(v, t->sv), t->ov)), t->h, clamp, &y0, &y1, &fy);
    bk_f4 top = bk_f4_lerp(bk_tex_texel(tv, t, x0, y0), bk_tex_texel(tv, t, x1, y0), fx);
    bk_f4 bot = bk_f4_lerp(bk_tex_texel(tv, t, x0, y1), bk_tex_texel(tv, t, x1, y1), fx);
    return bk_f4_lerp(top, bot, fy);
}

/* The scalar a map such as MTL map_d stands for: its alpha, or its red channel for an image
 * without alpha (BK_TEX_CHAN_RED). */
BK_HD float bk_tex_scalar(const bk_tex_view *tv, uint32_t ref, float u, float v)
{
    bk_f4 c = bk_tex_sample(tv, ref, u, v);
    return (tv->recs[ref].flags & BK_TEX_CHAN_RED) ? c.x : c.w;
}

/* Barycentric weights (b1, b2) of point y for triangle p0 p1 p2 (y = p0 + b1 (p1 - p0) + b2 (p2 -
 * p0), projected onto the plane), unfused. A degenerate triangle gives (0, 0). */
BK_HD void bk_tri_bary(bk_vec3 p0, bk_vec3 p1, bk_vec3 p2, bk_vec3 y, float *b1, float *b2)
{
    const bk_vec3 e1 = bk_sub3(p1, p0), e2 = bk_sub3(p2, p0), w = bk_sub3(y, p0);
#define BK_DOT_(a, b) bk_add(bk_add(bk_mul(a.x, b.x), bk_mul(a.y, b.y)), bk_mul(a.z, b.z))
    const float d00 = BK_DOT_(e1, e1), d01 = BK_DOT_(e1, e2), d11 = BK_DOT_(e2, e2);
    const float d20 = BK_DOT_(w, e1), d21 = BK_DOT_(w, e2);
#undef BK_DOT_
    const float den = bk_sub(bk_mul(d00, d11), bk_mul(d01, d01));
    if (!(den > 0.0f)) {
        *b1 = *b2 = 0.0f;
        return;
    }
    *b1 = bk_sub(bk_mul(d11, d20), bk_mul(d01, d21)) / den;
    *b2 = bk_sub(bk_mul(d00, d21), bk_mul(d01, d20)) / den;
}

/* The texture coordinates at barycentrics (b1, b2) of a triangle whose corners' coordinates are
 * uv[0] = (u0 v0 u1 v1), uv[1] = (u2 v2 . .). */
BK_HD void bk_uv_at(bk_f4 uv01, bk_f4 uv2, float b1, float b2, float *u, float *v)
{
    const float b0 = bk_sub(bk_sub(1.0f, b1), b2);
    *u = bk_add(bk_add(bk_mul(uv01.x, b0), bk_mul(uv01.z, b1)), bk_mul(uv2.x, b2));
    *v = bk_add(bk_add(bk_mul(uv01.y, b0), bk_mul(uv01.w, b1)), bk_mul(uv2.y, b2));
}

/* ---- alpha-tested triangles -----------------------------------------------------------------
 * A triangle whose material is not opaque carries, in its leaf record's v1.w (bits), 1 + the index
 * of its alpha record in bk_accel_view.alpha; an opaque one carries 0, which the traversal tests
 * only after a hit, so a scene without cut-outs pays one compare per hit. An alpha record is two
 * bk_f4: the corners' texture coordinates (u0 v0 u1 v1), (u2 v2, param, bits: texture use |
 * mode << 28) with texture use BK_ALPHA_NO_TEX for a material without an alpha map, param the
 * cutoff divided by the material's alpha factor (MASK) or that factor (BLEND). */
#define BK_ALPHA_NO_TEX 0x0FFFFFFFu

/* The BLEND coin of a ray and a triangle: a pure function of the ray's origin and direction bits
 * and the triangle's id, so the CPU and the GPU, and two traversal orders, see the same surface. */
BK_HD float bk_alpha_hash(bk_vec3 o, bk_vec3 d, uint32_t id)
{
    uint32_t h = bk_mix32(bk_float_bits(o.x) ^ 0x68e31da4u);
    h = bk_mix32(h ^ bk_float_bits(o.y));
    h = bk_mix32(h ^ bk_float_bits(o.z));
    h = bk_mix32(h ^ bk_float_bits(d.x));
    h = bk_mix32(h ^ bk_float_bits(d.y));
    h = bk_mix32(h ^ bk_float_bits(d.z));
    h = bk_mix32(h ^ id);
    return (float)(h >> 8) * (1.0f / 16777216.0f);
}

/* Whether a surface with alpha record (a0, a1) stands at barycentrics (b1, b2): for a ray (coin from
 * bk_alpha_hash), or for a texel (coin < 0: BLEND surfaces stand wherever alpha > 0). */
BK_HD int bk_alpha_stands(const bk_tex_view *tv, bk_f4 a0, bk_f4 a1, float b1, float b2, float coin)
{
    const uint32_t bits = bk_float_bits(a1.w), ref = bits & BK_ALPHA_NO_TEX, mode = bits >> 28;
    float          alpha = 1.0f;
    if (ref != BK_ALPHA_NO_TEX) {
        float u, v;
        bk_uv_at(a0, a1, b1, b2, &u, &v);
        alpha = bk_tex_scalar(tv, ref, u, v);
    }
    if (mode == BK_ALPHA_MASK) return alpha >= a1.z;
    const float p = bk_mul(alpha, a1.z);
    return coin < 0.0f ? p > 0.0f : coin < p;
}

#endif /* BK_MATERIAL_H */
