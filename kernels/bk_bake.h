/* bk_bake.h - the lightmap bake's per-texel work, shared by CPU and CUDA.
 *
 * Pipeline: atlas (src/atlas/atlas.c: charts, packing, rasterization) -> bk_texel per covered texel ->
 * bk_bake_texel() (here: the same function in a CPU thread loop and in a CUDA kernel) -> linear
 * RGB per texel -> dilation -> PNG / HDR.
 *
 * What a texel stores: the incoming diffuse light at the texel divided by pi, i.e. the outgoing
 * radiance of a white Lambertian surface there (a game multiplies by its albedo). With cosine-
 * weighted directions that is simply the mean incoming radiance over the samples. Light comes
 * from a sun (a cone of directions: soft shadows), point lights, emissive triangles (MTL Ke,
 * emitting from their front side, the side their winding faces), a constant sky (reached by
 * rays that escape), and `bounces` of indirect light with MTL Kd as albedo. Next-event
 * estimation handles the sun and points at every path vertex (but the texel's own for a light
 * baked indirect, at none for one baked off: enum bk_light_mode); emitters are reached both by light
 * sampling and by the path's own rays, combined with the balance heuristic (Veach 1997), which
 * keeps small bright emitters and nearby large ones both low in noise; escaping rays add the sky.
 * Random numbers depend on (seed, texel pixel, sample, dimension) only, and the arithmetic is
 * the same on both sides (the CUDA bake is compiled without FMA contraction, and sin/cos are our
 * own), so a GPU bake matches the CPU bake texel for texel but for rare ties.
 * Rays that hit the back of a surface bring no light, unless the triangle is double-sided (its
 * material says so, or it has a coincident twin of opposite winding: BK_BTRI_DOUBLE_SIDED), whose
 * back is a front. Whether a texel lies inside geometry is decided once, by rays of its own that
 * depend on the texel's pixel only, never on the seed or the sample count (the inside step,
 * BK_INSIDE_RAYS): the host marks it invalid when more than --inside-share of them meet back
 * faces (bk_bake_inside_limit), and the fill covers it.
 */
#ifndef BK_BAKE_H
#define BK_BAKE_H

#include <math.h>
#include "bk_common.h"
#include "bk_material.h"
#include "bk_rng.h"
#include "bk_traverse.h"

/* One covered lightmap texel: where on the surface it sits and which way that surface faces. */
typedef struct bk_texel {
    float    px, py, pz; /* world position (at the texel centre, clamped into the triangle)  12 B */
    float    nx, ny, nz; /* unit shading normal (interpolated vn when the file has them)    12 B */
    uint32_t tri;        /* triangle (file numbering)                                        4 B */
    uint32_t pixel;      /* y * width + x in the atlas image                                 4 B */
} bk_texel;              /*                                                                 32 B */

/* What the host keeps of a texel once the backend holds its own copy of the texels (a GPU's,
 * caps().keeps_texels): its pixel and triangle, all that the image, the denoiser's charts and the
 * fill read (bk_texels_compact, atlas.h).                                               8 B */
typedef struct bk_texel_ref {
    uint32_t pixel; /* as bk_texel.pixel                                                4 B */
    uint32_t tri;   /* as bk_texel.tri                                                  4 B */
} bk_texel_ref;

enum bk_bake_mode { BK_BAKE_LIGHT = 0, BK_BAKE_AO = 1 };

/* How a light (the sun, a point light) is baked, as engines with mixed lighting ask for it (Unity's
 * Baked / Baked Indirect, Godot's Static / Dynamic bake modes): all of its light, only what it
 * brings by bounces (the engine draws its direct light in real time), or none of it. A point light's
 * mode sits in the w of its position (bk_bake_view.points). */
enum bk_light_mode { BK_LIGHT_BAKED = 0, BK_LIGHT_INDIRECT = 1, BK_LIGHT_OFF = 2 };

typedef struct bk_bake_params {
    uint32_t mode;    /* enum bk_bake_mode */
    uint32_t spp;     /* samples per texel */
    uint32_t bounces; /* indirect bounces after the direct light */
    uint32_t seed;
    float    ao_distance;    /* AO: occluders farther than this do not count */
    float    eps;            /* ray origin offset along the normal, world units */
    float    texel_world;    /* world size of one texel: how far the unocclude step looks */
    float    sky[3];         /* constant sky radiance */
    float    sun_dir[3];     /* unit vector towards the sun */
    float    sun_color[3];   /* irradiance on a surface facing the sun; 0 = no sun */
    float    sun_cos;        /* cosine of the sun's angular radius */
    uint32_t sun_mode;       /* enum bk_light_mode */
    uint32_t directional;    /* 1: each texel's L1 sums too (bk_bake_path.dir: the irradiance vector) */
    uint32_t mask_count;     /* --shadowmask: channels (0 to BK_MASK_MAX; bk_bake_path.mask) */
    uint32_t mask_vis[4];    /*   the BK_VIS_* bit of each channel's light (the sun, point lights) */
    float    inside_share;   /* inside: more than this share of the inside rays meet backs (0: BK_INSIDE_SHARE) */
    uint32_t sample_begin;   /* this launch bakes samples [sample_begin, sample_end) of each */
    uint32_t sample_end;     /*   texel, added to the sums of the earlier ones               */
    uint32_t open_tri_begin; /* texels of triangles [open_tri_begin, open_tri_end) lie on open */
    uint32_t open_tri_end;   /*   faces (visible voxel faces): never inside geometry, so they */
                             /*   skip the unocclude and inside steps (16 to 24 rays; one   */
                             /*   sample of two bounces traces 5)                           */
} bk_bake_params;

/* The random-dimension layout of one sample (the last argument of bk_rng_f). Path vertex b (the
 * texel is vertex 0, each bounce adds one) owns dimensions [b * BK_DIM_STRIDE, (b + 1) *
 * BK_DIM_STRIDE); inside it each use of random numbers has its own range, listed once here as
 * X(NAME, count): the enum below gives BK_DIM_NAME (its first offset) and BK_DIM_NAME_LAST, each
 * range starting where the one before ends, and tests/unit_bake_dims.c walks the same list. A new
 * use (a light that needs random numbers, say) is one more line: BK_DIM_END moves with it, and the
 * assertion below fails when the ranges outgrow the stride, before dimensions of one vertex could
 * alias those of the next. Changing the layout changes every baked texel (the golden images). */
#define BK_DIM_USES(X)                                                                          \
    X(BOUNCE, 2)     /* the cosine-weighted direction of the ray leaving the vertex (u1, u2) */ \
    X(SUN, 2)        /* bk_bake_direct: a direction in the sun's cone (cos theta, phi) */       \
    X(EMIT_PICK, 1)  /* bk_bake_direct: which emissive triangle, by power */                    \
    X(EMIT_POINT, 2) /* bk_bake_direct: a uniform point on it (sqrt u, v) */

#define BK_DIM_ENUM_(name, n) BK_DIM_##name, BK_DIM_##name##_LAST = BK_DIM_##name + (n)-1,
enum bk_dim {
    BK_DIM_USES(BK_DIM_ENUM_) BK_DIM_END, /* first offset no use takes */
    BK_DIM_STRIDE = 16,                   /* dimensions per path vertex: room to grow without changing the layout */
    BK_DIM_AO = 0,                        /* --mode ao: the one ray's direction (u1, u2); a sample of its own */
    BK_DIM_AO_LAST = 1
};
#undef BK_DIM_ENUM_
BK_STATIC_ASSERT(BK_DIM_END <= BK_DIM_STRIDE, "the random dimensions of one path vertex outgrow BK_DIM_STRIDE");
BK_STATIC_ASSERT(BK_DIM_AO_LAST < BK_DIM_STRIDE, "AO's random dimensions outgrow BK_DIM_STRIDE");

/* Whether a light of this mode (enum bk_light_mode) lights path vertex b directly: an indirect
 * light lights every vertex but the texel's own (b = 0), so its bounces stay in the map. */
BK_HD int bk_light_lights(uint32_t mode, uint32_t b)
{
    return mode == BK_LIGHT_BAKED || (mode == BK_LIGHT_INDIRECT && b > 0);
}

/* What a light does at path vertex b (the light functions' result, bk_bake_sun_light): nothing;
 * only its shadow ray, with no light (BK_USE_MASK: the texel's own vertex of a light on the
 * shadowmask that does not light it, baked indirect); its shadow ray and its light. */
enum bk_light_use { BK_USE_NONE = 0, BK_USE_MASK = 1, BK_USE_LIGHT = 2 };

/* Which of a sample's shadow rays at the texel's own vertex (b = 0) reached their light: the bits
 * of bk_bake_path.vis, which the directional sums, the probes and the shadowmask read. */
#define BK_VIS_SUN    1u
#define BK_VIS_EMIT   2u
#define BK_VIS_POINT0 2u  /* point light i: bit BK_VIS_POINT0 + i */
#define BK_DIR_POINTS 30u /* the most point lights with a bit: a directional bake's, a probe's, the mask's */

/* --shadowmask (bk_bake_params.mask_count, mask_vis): per texel and channel, how many samples' shadow
 * rays towards the channel's light at the texel's own vertex reached it (bk_bake_path.mask; the host
 * divides by spp). They are the rays the direct term of a baked light traces, with the same random
 * numbers, so the map is the same bits with or without the mask. */
#define BK_MASK_MAX 4u

/* Whether the light of BK_VIS_* bit `bit` is on the shadowmask. */
BK_HD int bk_bake_masked(const bk_bake_params *p, uint32_t bit)
{
    int m = 0;
    for (uint32_t c = 0; c < p->mask_count && c < BK_MASK_MAX; ++c) m |= p->mask_vis[c] == bit;
    return m;
}

/* The use of a light of this mode at vertex b; masked: it is on the shadowmask. */
BK_HD int bk_light_use(uint32_t mode, uint32_t b, int masked)
{
    return bk_light_lights(mode, b)                   ? BK_USE_LIGHT
           : b == 0 && masked && mode != BK_LIGHT_OFF ? BK_USE_MASK
                                                      : BK_USE_NONE;
}

/* The first random dimension of path vertex b. */
BK_HD uint32_t bk_dim_vertex(uint32_t b) { return (uint32_t)BK_DIM_STRIDE * b; }

/* Tests may define BK_BAKE_DIM_HOOK(texel, sample, dim) before the first include of this header
 * to see every random dimension the bake draws (tests/unit_bake_dims.c); elsewhere it is empty. */
#ifndef BK_BAKE_DIM_HOOK
#define BK_BAKE_DIM_HOOK(texel, sample, dim) ((void)0)
#endif

/* The bake's random number for (texel, sample, dimension): every draw goes through here. */
BK_HD float bk_bake_rng(const bk_bake_params *p, uint32_t texel, uint32_t sample, uint32_t dim)
{
    BK_BAKE_DIM_HOOK(texel, sample, dim);
    return bk_rng_f(p->seed, texel, sample, dim);
}

/* Bits of a shading triangle's v1.w (bk_bake_view.tris): lit from both sides, its back never
 * met as a back face (a double-sided material, or a coincident twin: src/bake/sides.h). */
#define BK_BTRI_DOUBLE_SIDED 1u
/* It has a coincident twin of opposite winding: the pair is one surface, which emits from the side
 * of each twin's front, so a hit on either side meets an emitting front (the tie of equal t picks
 * either twin). */
#define BK_BTRI_TWIN 2u

/* The inside step: closest-hit rays per texel, a 4 x 4 stratified cosine pattern over the
 * normal's hemisphere (bk_bake_inside_dir), and the fixed seed of its per-texel rotation: the
 * decision must not move with --seed or --spp. */
#define BK_INSIDE_RAYS 16u
#define BK_INSIDE_SEED 0x1D5EC7u

/* The default of bk_bake_params.inside_share (--inside-share): an open wall beside a texel meets
 * at most half of its inside rays however near it stands (bk_bake_inside_dir), a closed box over
 * it all of them; only a texel that sees backs in more than half its directions (under a box,
 * or under the back of an open roof) is taken for inside. */
#define BK_INSIDE_SHARE 0.5f

/* The most inside rays that may meet back faces in a texel outside geometry: more, and it is
 * inside (the host's rule; the inside step stops once either answer is certain). */
BK_HD uint32_t bk_bake_inside_limit(const bk_bake_params *p)
{
    const float s = p->inside_share > 0.0f ? p->inside_share : BK_INSIDE_SHARE;
    return s >= 1.0f ? BK_INSIDE_RAYS : (uint32_t)(s * (float)BK_INSIDE_RAYS);
}

/* Shading data, file-ordered triangles (device pointers on the GPU). */
typedef struct bk_bake_view {
    bk_accel_view   accel;
    const bk_f4    *tris;      /* 3 per triangle: v0 (w: material index bits), v1 (w: BK_BTRI_* bits), v2 */
    uint32_t        tri_count; /* shading triangles (a voxel scene's surface: not accel.tri_count) */
    const bk_f4    *materials; /* 2 per material: kd, ke (rgb in x y z) */
    uint32_t        material_count;
    const uint32_t *emit_tris; /* emissive triangles */
    const float    *emit_cdf;  /* their cumulative power, normalised to end at 1 */
    uint32_t        emit_count;
    float           emit_total; /* sum over emitters of area * (ke.r + ke.g + ke.b) */
    const bk_f4    *points;     /* 2 per point light: position (w: its enum bk_light_mode), intensity (rgb) */
    uint32_t        point_count;
    /* textures (the pool is accel.tex): */
    const bk_f4 *tri_uv;       /* 2 per triangle: its corners' texture coordinates (u0 v0 u1 v1) (u2 v2 . .);
                                  NULL when no material has a map */
    const uint32_t *emit_sub;  /* per emitter: 0 (the whole triangle) or 1 + its sub-triangle; NULL: all 0 */
    const uint32_t *emit_grid; /* per triangle with an emission map: its first emit_lum | n << BK_EMIT_GRID_SHIFT */
    const float    *emit_lum;  /* per sub-triangle: the mean emitted rgb sum over it (its sampling density) */
    uint32_t        emit_lum_count;
} bk_bake_view;

/* ---- emitters with an emission map --------------------------------------------------------
 * Such a triangle is cut into an n x n grid of sub-triangles in barycentric space (2 n^2 slots:
 * cell (i, j) has an upright and an inverted half; the inverted halves of the diagonal cells do not
 * exist and have power 0). Each slot's mean emitted power over it (src/bake/bake.c) is its weight
 * in the emitter CDF, so light sampling never picks a slot where the map is black, and a hit reads
 * its slot's density back for the balance heuristic. n grows with the map's texels under the
 * triangle, up to BK_EMIT_GRID_MAX. */
#define BK_EMIT_GRID_SHIFT 24
#define BK_EMIT_GRID_MAX   16u

/* Slot k of an n-grid: its corners' (b1, b2) as c[0..5]; c[0] = -1 for a slot that does not exist. */
BK_HD void bk_emit_sub_corners(uint32_t n, uint32_t k, float c[6])
{
    const uint32_t cell = k >> 1, i = cell % n, j = cell / n;
    const float    s = 1.0f / (float)n, x = (float)i * s, y = (float)j * s;
    if (!(k & 1u)) {
        c[0] = i + j <= n - 1 ? x : -1.0f, c[1] = y;
        c[2] = x + s, c[3] = y;
        c[4] = x, c[5] = y + s;
    } else {
        c[0] = i + j + 2 <= n ? x + s : -1.0f, c[1] = y + s;
        c[2] = x, c[3] = y + s;
        c[4] = x + s, c[5] = y;
    }
}

/* The point (b1, b2) of slot corners c for the triangle sample (su = sqrt(u1), sv = u2). */
BK_HD void bk_emit_sub_point(const float c[6], float su, float sv, float *b1, float *b2)
{
    const float w0 = 1.0f - su, w1 = su * (1.0f - sv), w2 = su * sv;
    *b1 = c[0] * w0 + c[2] * w1 + c[4] * w2;
    *b2 = c[1] * w0 + c[3] * w1 + c[5] * w2;
}

/* The slot of an n-grid that barycentrics (b1, b2) fall in. */
BK_HD uint32_t bk_emit_sub_slot(uint32_t n, float b1, float b2)
{
    const float fx = bk_maxf(b1, 0.0f) * (float)n, fy = bk_maxf(b2, 0.0f) * (float)n;
    uint32_t    i = fx >= (float)n ? n - 1 : (uint32_t)fx, j = fy >= (float)n ? n - 1 : (uint32_t)fy;
    if (i + j > n - 1) i = n - 1 - j;
    uint32_t down = (fx - (float)i) + (fy - (float)j) > 1.0f && i + j + 2 <= n;
    return 2 * (j * n + i) + down;
}

/* The texture coordinates of bake triangle t at barycentrics (b1, b2). */
BK_HD void bk_bake_tri_uv(const bk_bake_view *v, uint32_t t, float b1, float b2, float *u, float *w)
{
    bk_uv_at(bk_load4(v->tri_uv + 2 * (size_t)t), bk_load4(v->tri_uv + 2 * (size_t)t + 1), b1, b2, u, w);
}

/* Material m's emission at barycentrics (b1, b2) of triangle t (rgb), and in *lum the density light
 * sampling gave that point, over emit_total (the rgb sum of ke for a plain emitter; the slot's for
 * one with a map). */
BK_HD bk_vec3 bk_bake_emission(const bk_bake_view *v, uint32_t m, uint32_t t, float b1, float b2, float *lum)
{
    const bk_f4    kem = bk_load4(v->materials + 2 * m + 1);
    const uint32_t tex = bk_float_bits(kem.w);
    bk_vec3        ke = bk_f4_xyz(kem);
    *lum = ke.x + ke.y + ke.z;
    if (tex == BK_TEX_NONE || !v->tri_uv) return ke;
    float u, w;
    bk_bake_tri_uv(v, t, b1, b2, &u, &w);
    const bk_f4    c = bk_tex_sample(&v->accel.tex, tex, u, w);
    const uint32_t g = v->emit_grid ? v->emit_grid[t] : 0u, n = g >> BK_EMIT_GRID_SHIFT;
    *lum = n ? v->emit_lum[(g & ((1u << BK_EMIT_GRID_SHIFT) - 1u)) + bk_emit_sub_slot(n, b1, b2)] : 0.0f;
    return bk_v3(ke.x * c.x, ke.y * c.y, ke.z * c.z);
}

/* Material m's albedo at barycentrics (b1, b2) of triangle t. */
BK_HD bk_vec3 bk_bake_albedo(const bk_bake_view *v, uint32_t m, uint32_t t, float b1, float b2)
{
    const bk_f4    kdm = bk_load4(v->materials + 2 * m);
    const uint32_t tex = bk_float_bits(kdm.w);
    if (tex == BK_TEX_NONE || !v->tri_uv) return bk_f4_xyz(kdm);
    float u, w;
    bk_bake_tri_uv(v, t, b1, b2, &u, &w);
    const bk_f4 c = bk_tex_sample(&v->accel.tex, tex, u, w);
    return bk_v3(kdm.x * c.x, kdm.y * c.y, kdm.z * c.z);
}

/* Whether material m has a map the bake reads at a hit (albedo or emission). */
BK_HD int bk_bake_mat_mapped(const bk_bake_view *v, uint32_t m)
{
    return v->tri_uv && (bk_float_bits(bk_load4(v->materials + 2 * m).w) != BK_TEX_NONE ||
                         bk_float_bits(bk_load4(v->materials + 2 * m + 1).w) != BK_TEX_NONE);
}

/* The bake traces from several places; one function that is never inlined keeps a single copy
 * of each specialised traversal in the code of the file that bakes (src/backend/backend_cpu.c,
 * kernels/cuda/bake.cu). A host file may trace the bake's rays through a layout of its own: it
 * defines BK_BAKE_HOST_TRACE as a function with this signature before including this header
 * (src/backend/backend_cpu.c: the wide BVH, src/accel/bvh_wide.h). Device code never sees it. */
BK_HDN bk_hit bk_bake_trace(const bk_accel_view *a, const bk_ray *r, int any_hit, bk_stack *s, bk_trace_stats *st)
{
#if defined(BK_BAKE_HOST_TRACE) && !BK_DEVICE_CODE
    return BK_BAKE_HOST_TRACE(a, r, any_hit, s, st);
#else
    return bk_trace_dispatch(a, r, any_hit, s, st);
#endif
}

/* sin and cos of 2 pi u for u in [0, 1), with plain float operations only, so the CPU and the
 * GPU (whose libraries round cosf/sinf differently) compute the same directions bit for bit.
 * Quadrant reduction, then Taylor polynomials on [0, pi/2): error below 1e-7. */
BK_HD void bk_sincos_2pi(float u, float *s, float *c)
{
    float t = u * 4.0f;
    int   q = (int)t;
    float a = (t - (float)q) * 1.57079632679f, a2 = a * a;
    float sn =
        a * (1.0f - a2 / 6.0f * (1.0f - a2 / 20.0f * (1.0f - a2 / 42.0f * (1.0f - a2 / 72.0f * (1.0f - a2 / 110.0f)))));
    float cs =
        1.0f - a2 / 2.0f *
                   (1.0f - a2 / 12.0f *
                               (1.0f - a2 / 30.0f * (1.0f - a2 / 56.0f * (1.0f - a2 / 90.0f * (1.0f - a2 / 132.0f)))));
    q &= 3;
    *s = q == 0 ? sn : q == 1 ? cs : q == 2 ? -sn : -cs;
    *c = q == 0 ? cs : q == 1 ? -sn : q == 2 ? -cs : sn;
}

/* Rec. 709 luminance of linear rgb: what the sample variance and the denoiser measure. */
BK_HD float bk_luminance(bk_vec3 c) { return 0.2126f * c.x + 0.7152f * c.y + 0.0722f * c.z; }

BK_HD bk_vec3 bk_normalize3(bk_vec3 v)
{
    float l2 = bk_dot3(v, v);
    return l2 > 0.0f ? bk_mul3(v, 1.0f / sqrtf(l2)) : v;
}

/* Unit vectors b1, b2 completing unit n to an orthonormal frame (Duff et al. 2017). */
BK_HD void bk_frame(bk_vec3 n, bk_vec3 *b1, bk_vec3 *b2)
{
    float sign = n.z >= 0.0f ? 1.0f : -1.0f;
    float a = -1.0f / (sign + n.z), b = n.x * n.y * a;
    *b1 = bk_v3(1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x);
    *b2 = bk_v3(b, sign + n.y * n.y * a, -n.y);
}

BK_HD bk_vec3 bk_cosine_dir(bk_vec3 n, float u1, float u2)
{
    bk_vec3 b1, b2;
    bk_frame(n, &b1, &b2);
    float r = sqrtf(u1), sp, cp;
    bk_sincos_2pi(u2, &sp, &cp);
    float z = sqrtf(bk_maxf(0.0f, 1.0f - u1));
    return bk_add3(bk_add3(bk_mul3(b1, r * cp), bk_mul3(b2, r * sp)), bk_mul3(n, z));
}

#define BK_INV_4PI 0.0795774715f /* the density of a direction uniform over the sphere */

/* A direction uniform over the sphere for (u1, u2) in [0, 1)^2. */
BK_HD bk_vec3 bk_sphere_dir(float u1, float u2)
{
    float z = 1.0f - 2.0f * u1, r = sqrtf(bk_maxf(0.0f, 1.0f - z * z)), sp, cp;
    bk_sincos_2pi(u2, &sp, &cp);
    return bk_v3(r * cp, r * sp, z);
}

BK_HD bk_ray bk_make_ray(bk_vec3 o, bk_vec3 d, float tmin, float tmax)
{
    bk_ray r;
    r.ox = o.x;
    r.oy = o.y;
    r.oz = o.z;
    r.tmin = tmin;
    r.dx = d.x;
    r.dy = d.y;
    r.dz = d.z;
    r.tmax = tmax;
    return r;
}

/* Triangle t's three corners (file order). */
BK_HD void bk_bake_tri(const bk_bake_view *v, uint32_t t, bk_vec3 *p0, bk_vec3 *p1, bk_vec3 *p2, uint32_t *mat)
{
    bk_f4 a = bk_load4(v->tris + 3 * t), b = bk_load4(v->tris + 3 * t + 1), c = bk_load4(v->tris + 3 * t + 2);
    *p0 = bk_f4_xyz(a);
    *p1 = bk_f4_xyz(b);
    *p2 = bk_f4_xyz(c);
    if (mat) *mat = bk_float_bits(a.w);
}

/* The geometric normal (unit, facing the side the surface was made to be seen from) and the
 * material of what a ray hit: hit id `id`, and aux, what the traversal left for a voxel hit
 * (bk_voxel.h; 0 for a triangle). */
BK_HD void bk_bake_hit_surface(const bk_bake_view *v, uint32_t id, uint32_t aux, bk_vec3 *ng, uint32_t *mat)
{
    if (aux & BK_VOX_AUX) {
        uint32_t face = aux & 7u;
        float    sg = (face & 1u) ? 1.0f : -1.0f;
        *ng = bk_v3(face >> 1 == 0 ? sg : 0.0f, face >> 1 == 1 ? sg : 0.0f, face >> 1 == 2 ? sg : 0.0f);
        *mat = (aux & ~BK_VOX_AUX) >> 3;
        return;
    }
    bk_vec3 p0, p1, p2;
    bk_bake_tri(v, id, &p0, &p1, &p2, mat);
    *ng = bk_normalize3(bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0)));
}

/* Triangle t's BK_BTRI_* bits. */
BK_HD uint32_t bk_bake_tri_flags(const bk_bake_view *v, uint32_t t)
{
    return bk_float_bits(bk_load4(v->tris + 3 * t + 1).w);
}

/* As bk_bake_hit_surface, for a ray along d: a double-sided triangle's normal turns to face the
 * ray, so its back is lit like its front and no test counts it as a back face. */
BK_HD void bk_bake_hit_facing(const bk_bake_view *v, uint32_t id, uint32_t aux, bk_vec3 d, bk_vec3 *ng, uint32_t *mat)
{
    bk_bake_hit_surface(v, id, aux, ng, mat);
    if (!(aux & BK_VOX_AUX) && (bk_bake_tri_flags(v, id) & BK_BTRI_DOUBLE_SIDED) && bk_dot3(*ng, d) > 0.0f)
        *ng = bk_mul3(*ng, -1.0f);
}

/* Direction k of the inside step for the texel at pixel `texel` with normal n: row k / 4 of a
 * cosine-weighted pattern (u1 jittered in its quarter), four azimuths a quarter turn apart,
 * turned by an offset of the row's own. Any plane through n therefore leaves exactly two of a
 * row's four on each side: an open wall beside the texel, however near and large, meets at most
 * half of the rays (BK_INSIDE_RAYS / 2). Keyed on BK_INSIDE_SEED, not the bake's seed, and
 * drawn outside the samples' dimensions (BK_DIM_USES): it is no sample. */
BK_HD bk_vec3 bk_bake_inside_dir(bk_vec3 n, uint32_t texel, uint32_t k)
{
    const uint32_t row = k >> 2, col = k & 3u;
    float          u1 = ((float)row + bk_rng_f(BK_INSIDE_SEED, texel, k, 0)) * 0.25f;
    float          u2 = ((float)col + bk_rng_f(BK_INSIDE_SEED, texel, row, 1)) * 0.25f;
    return bk_cosine_dir(n, u1, u2);
}

/* Whether a ray along d met the front of what it hit (the side its winding faces; a voxel face
 * always; a twinned triangle either side, its twin's front being the other): the side an emitter
 * emits from, which is the side light sampling samples; a double-sided material's back does not
 * emit. */
BK_HD int bk_bake_hit_front(const bk_bake_view *v, uint32_t id, uint32_t aux, bk_vec3 d)
{
    if ((aux & BK_VOX_AUX) || (bk_bake_tri_flags(v, id) & BK_BTRI_TWIN)) return 1;
    bk_vec3 p0, p1, p2;
    bk_bake_tri(v, id, &p0, &p1, &p2, 0);
    return bk_dot3(bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0)), d) < 0.0f;
}

/* Next-event estimation at a path vertex b of sample smp of a texel, at o (the vertex moved off its
 * surface) with normal nrm: each gives the direction of its shadow ray (*d, or *w towards the light,
 * not normalised, whose ray ends at 0.9999) and the light it brings if unoccluded, and returns its
 * enum bk_light_use: BK_USE_NONE when there is no ray (the light below the horizon, off, or indirect
 * at the texel: bk_light_lights), BK_USE_MASK for a ray the shadowmask alone wants (*light 0).
 * At a probe's own vertex (probe: bk_path_at_probe) each brings its irradiance on a surface facing
 * it, whatever the normal (an emitter's weighed against the probe's uniform directions). The path steps,
 * bk_bake_dir_sample and bk_bake_probe_sample call them, so they all see the same bits. */
BK_HD int bk_bake_sun_light(const bk_bake_params *p, uint32_t texel, uint32_t smp, uint32_t b, bk_vec3 nrm, int probe,
                            bk_vec3 *d, bk_vec3 *light)
{
    const int use = bk_light_use(p->sun_mode, b, bk_bake_masked(p, BK_VIS_SUN));
    if (!(p->sun_color[0] > 0.0f || p->sun_color[1] > 0.0f || p->sun_color[2] > 0.0f) || !use) return BK_USE_NONE;
    /* a direction uniform in the sun's cone */
    const uint32_t base = bk_dim_vertex(b);
    bk_vec3        sd = bk_v3(p->sun_dir[0], p->sun_dir[1], p->sun_dir[2]), b1, b2;
    bk_frame(sd, &b1, &b2);
    float ct = 1.0f - bk_bake_rng(p, texel, smp, base + BK_DIM_SUN) * (1.0f - p->sun_cos);
    float sp, cp;
    bk_sincos_2pi(bk_bake_rng(p, texel, smp, base + BK_DIM_SUN + 1), &sp, &cp);
    float stt = sqrtf(bk_maxf(0.0f, 1.0f - ct * ct));
    *d = bk_add3(bk_add3(bk_mul3(b1, stt * cp), bk_mul3(b2, stt * sp)), bk_mul3(sd, ct));
    const bk_vec3 e = use == BK_USE_LIGHT ? bk_v3(p->sun_color[0], p->sun_color[1], p->sun_color[2]) : bk_v3(0, 0, 0);
    float         c = bk_dot3(nrm, *d);
    if (probe) { /* a probe's vertex: the irradiance itself (bk_bake_probe_sample) */
        *light = e;
        return use;
    }
    if (!(c > 0.0f)) return BK_USE_NONE;
    *light = bk_mul3(e, c * 0.318309886f);
    return use;
}

/* Point light i (see bk_bake_sun_light). */
BK_HD int bk_bake_point_light(const bk_bake_view *v, const bk_bake_params *p, uint32_t i, uint32_t b, bk_vec3 o,
                              bk_vec3 nrm, int probe, bk_vec3 *w, bk_vec3 *light)
{
    bk_f4     lp = bk_load4(v->points + 2 * i), li = bk_load4(v->points + 2 * i + 1);
    const int use = bk_light_use((uint32_t)lp.w, b, i < BK_DIR_POINTS && bk_bake_masked(p, 1u << (BK_VIS_POINT0 + i)));
    *w = bk_sub3(bk_f4_xyz(lp), o);
    float d2 = bk_dot3(*w, *w), c = bk_dot3(nrm, *w);
    if ((!probe && c <= 0.0f) || d2 <= 0.0f || !use) return BK_USE_NONE;
    /* cos / d^2 / pi, cos = c / |w|; at a probe's vertex the irradiance 1 / d^2 itself */
    float g = use != BK_USE_LIGHT ? 0.0f : probe ? 1.0f / d2 : c / (d2 * sqrtf(d2)) * 0.318309886f;
    *light = bk_mul3(bk_f4_xyz(li), g);
    return use;
}

/* One emissive-triangle sample: an emitter picked by power, then a uniform point on it, weighed
 * by the balance heuristic against the path's own cosine sampling (see bk_bake_sun_light). */
BK_HD int bk_bake_emit_light(const bk_bake_view *v, const bk_bake_params *p, uint32_t texel, uint32_t smp, uint32_t b,
                             bk_vec3 o, bk_vec3 nrm, int probe, bk_vec3 *w, bk_vec3 *light)
{
    if (!v->emit_count) return 0;
    const float    inv_pi = 0.318309886f;
    const uint32_t base = bk_dim_vertex(b);
    float          u = bk_bake_rng(p, texel, smp, base + BK_DIM_EMIT_PICK);
    uint32_t       lo = 0, hi = v->emit_count - 1;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        if (v->emit_cdf[m] > u) hi = m;
        else lo = m + 1;
    }
    uint32_t t = v->emit_tris[lo], mat, sub = v->emit_sub ? v->emit_sub[lo] : 0u;
    bk_vec3  p0, p1, p2, y, ke;
    bk_bake_tri(v, t, &p0, &p1, &p2, &mat);
    float su = sqrtf(bk_bake_rng(p, texel, smp, base + BK_DIM_EMIT_POINT));
    float sv = bk_bake_rng(p, texel, smp, base + BK_DIM_EMIT_POINT + 1), lum;
    if (!sub) { /* a uniform point of the triangle */
        y = bk_add3(bk_add3(bk_mul3(p0, 1.0f - su), bk_mul3(p1, su * (1.0f - sv))), bk_mul3(p2, su * sv));
        ke = bk_f4_xyz(bk_load4(v->materials + 2 * mat + 1));
        lum = ke.x + ke.y + ke.z;
    } else { /* a uniform point of the sub-triangle picked (emission map) */
        float c[6], b1, b2;
        bk_emit_sub_corners(v->emit_grid[t] >> BK_EMIT_GRID_SHIFT, sub - 1u, c);
        bk_emit_sub_point(c, su, sv, &b1, &b2);
        y = bk_add3(p0, bk_add3(bk_mul3(bk_sub3(p1, p0), b1), bk_mul3(bk_sub3(p2, p0), b2)));
        ke = bk_bake_emission(v, mat, t, b1, b2, &lum);
    }
    bk_vec3 cr = bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0));
    float   area2 = sqrtf(bk_dot3(cr, cr)); /* twice the area */
    *w = bk_sub3(y, o);
    float d2 = bk_dot3(*w, *w), c = bk_dot3(nrm, *w);
    float cos_y = -bk_dot3(cr, *w); /* front side only; scaled below */
    if (!((probe || c > 0.0f) && d2 > 0.0f && area2 > 0.0f && cos_y > 0.0f && ke.x + ke.y + ke.z > 0.0f)) return 0;
    float dist = sqrtf(d2), cos_x = c / dist;
    cos_y /= area2 * dist;
    /* solid-angle densities of this direction under light sampling and under the cosine sampling
     * of the path (a probe's: uniform over the sphere): the balance heuristic weighs the two */
    float pdf_light = lum / v->emit_total * d2 / cos_y;
    float pdf_bsdf = probe ? BK_INV_4PI : cos_x * inv_pi;
    /* (cos/pi / pdf_light) * w_light; at a probe (1 / pdf_light) * w_light: the irradiance of
     * bk_bake_probe_sample */
    float g = (probe ? 1.0f : cos_x * inv_pi) / (pdf_light + pdf_bsdf);
    *light = bk_mul3(ke, g);
    return 1;
}

/* The bake of one texel as a state machine (bk_bake_path): bk_bake_path_next() says which ray
 * the texel needs next (or that its samples are done), the caller traces it, and
 * bk_bake_path_hit() takes the result. Every ray of a texel (the unocclude step's 8 closest-hit
 * rays, per path vertex the sun's, each point light's and one emitter's shadow ray, the bounce)
 * goes through the caller, who chooses how rays are traced: bk_bake_texel() is the loop for one
 * texel that the CPU runs; the CUDA megakernel runs it over many texels per thread at one trace
 * call site; the wavefront bake keeps paths in device buffers and traces their rays in waves,
 * each query apart (kernels/cuda/bake.cu). All give the same texels.
 *
 * Per texel: the first launch (sample 0) of a light bake moves the position out of nearby
 * geometry (the unocclude step: 8 directions in the tangent plane, tilted slightly off the
 * surface, up to one texel away; if one meets the back of a surface, the texel centre lies inside
 * or under it, so the position moves to just past the nearest such hit), then counts into acc.w
 * how many of BK_INSIDE_RAYS rays from there meet a back face (the inside step: the host calls
 * the texel inside geometry when more than bk_bake_inside_limit do; the rays stop once the count
 * is past it, or can no longer get there, so an open texel traces about half of them). Then each
 * sample is a path: at every vertex next-event estimation (sun, points, one emitter picked by
 * power, combined with the path's own hits by the balance heuristic), then a cosine-weighted
 * bounce ray. */
enum bk_bake_step {
    BK_STEP_UNOCC,  /* next: unocclude ray k, or done with them */
    BK_STEP_INSIDE, /* next: inside ray k, or done with them */
    BK_STEP_SAMPLE, /* next: start sample smp (or the texel is done) */
    BK_STEP_SUN,    /* next: the sun at the path vertex (direct light starts at 0) */
    BK_STEP_POINT,  /* next: point light k */
    BK_STEP_EMIT,   /* next: one emissive-triangle sample */
    BK_STEP_BOUNCE, /* next: the bounce ray */
    BK_RAY_UNOCC,   /* in flight: unocclude ray k (closest hit, direction in pend) */
    BK_RAY_INSIDE,  /* in flight: inside ray k (closest hit, direction in pend) */
    BK_RAY_AO,      /* in flight: the AO ray (any hit) */
    BK_RAY_SHADOW,  /* in flight: a shadow ray; unoccluded, pend adds to direct; then step `after` */
    BK_RAY_BOUNCE   /* in flight: the bounce ray (closest hit, direction in pend) */
};

typedef struct bk_bake_path {
    bk_vec3  x, n;     /* the texel's position (moved by the unocclude step) and normal */
    bk_vec3  pos, nrm; /* the path's vertex */
    bk_vec3  L, thr;   /* the sample's radiance so far, the path throughput */
    bk_vec3  direct;   /* the vertex's direct light so far */
    bk_vec3  pend;     /* a shadow ray's light if unoccluded; a closest-hit ray's direction */
    bk_f4    acc;      /* the texel's sums (bk_bake_texel) */
    float    sq;
    bk_f4    dir[3];       /* with p->directional: the texel's L1 sums, bands x, y, z (rgb each; bk_bake_dir_sample) */
    bk_f4    mask;         /* with p->mask_count: the texel's shadowmask sums, channels in x y z w (BK_MASK_MAX) */
    uint32_t vis;          /* this sample's shadow rays at vertex 0 that reached their light: BK_VIS_* bits */
    float    best;         /* unocclude: the nearest back face so far */
    bk_vec3  best_d;       /*   and the direction it was met in */
    uint32_t texel, tri;   /* the texel's pixel (random numbers) and triangle */
    uint32_t smp, smp_end; /* the sample, and the end of the texel's run of samples */
    uint32_t b, k;         /* path vertex, unocclude or inside ray, or point light */
    uint32_t step, after;  /* enum bk_bake_step; after a shadow ray: the step that follows */
} bk_bake_path;

/* bk_texel.tri of a light probe's path (bk_bake_probe): a point in space, not on a surface. */
#define BK_TRI_PROBE 0xFFFFFFFEu

/* Whether the path is at a probe's own vertex (bk_bake_probe): no surface, no normal. */
BK_HD int bk_path_at_probe(const bk_bake_path *ps) { return ps->b == 0 && ps->tri == BK_TRI_PROBE; }

/* ---- directional sums (bk_bake_params.directional) -----------------------------------------
 * Per texel, beside the map M (the mean incoming radiance over cosine-distributed directions, =
 * E / pi), the bake sums the irradiance vector over pi: b = (1/pi) integral L(w) w dw, in world
 * space, for r, g and b apart (bands x, y, z: dir[0..2], rgb in each). Each part of a sample's
 * light, the value c it adds to M and the direction w it came from, adds c w / (w . n): the light
 * of a shadow ray that reached its light at the texel (vertex 0) along that ray, the rest of the
 * sample (sky, emitters and the later vertices' light) along the first bounce. So b . n = M for
 * every sample within rounding: evaluated at the texel's own normal the L1 map is the plain map,
 * and for light from one direction (a sun) b . n' is the exact diffuse light for any normal n'
 * the light reaches. b is the L1 band of the spherical harmonics of the incoming radiance up to
 * a constant (c_1m = 0.488603 pi b_m). Which shadow rays reached their light is kept in
 * bk_bake_path.vis as the path runs; the rays' directions and light are computed again when the
 * sample ends (the same functions, the same bits), so a wavefront path carries one word more. */
/* The cap of 1 / cos on the part along the surface of a bounce's light (bk_bake_dir_sample): a
 * direction's share there is tan(theta), unbounded at the horizon, which cosine sampling draws
 * rarely but with a variance that grows without limit (about 16 times M's per sample at float
 * precision); capped at 4 (light within 14 degrees of the horizon) it is 2.8 times, and b . n = M
 * still holds for every sample. The light of shadow rays needs no cap (it carries its cosine). */
#define BK_DIR_GRAZING 4.0f

/* The BK_VIS_* bit of a shadow ray that ends in step `after` with point counter k. */
BK_HD uint32_t bk_vis_bit(uint32_t after, uint32_t k)
{
    return after == BK_STEP_BOUNCE ? BK_VIS_EMIT
           : k == 0                ? BK_VIS_SUN
           : k <= BK_DIR_POINTS    ? 1u << (BK_VIS_POINT0 + k - 1u)
                                   : 0u;
}

/* d[0..2] += light * w / (w . n): light from direction w (not normalised), wn = w . n > 0. */
BK_HD void bk_dir_add(bk_f4 d[3], bk_vec3 light, bk_vec3 w, float wn)
{
    const float a[3] = { w.x / wn, w.y / wn, w.z / wn };
    for (int k = 0; k < 3; ++k) {
        d[k].x += light.x * a[k];
        d[k].y += light.y * a[k];
        d[k].z += light.z * a[k];
    }
}

/* The directional part of the sample that just ended (bk_bake_path_end_sample): its light at the
 * texel's own vertex by shadow ray, then the rest along its first bounce, into dir. */
BK_HD void bk_bake_dir_sample(const bk_bake_view *v, const bk_bake_params *p, bk_bake_path *ps)
{
    const bk_vec3 n = ps->n, o = bk_add3(ps->x, bk_mul3(n, p->eps));
    bk_vec3       direct = bk_v3(0, 0, 0), w, light;
    bk_f4         d[3];
    for (int k = 0; k < 3; ++k) d[k].x = d[k].y = d[k].z = d[k].w = 0.0f;
    /* the same order as the steps add them to the vertex's direct light */
    if ((ps->vis & BK_VIS_SUN) && bk_bake_sun_light(p, ps->texel, ps->smp, 0, n, 0, &w, &light) == BK_USE_LIGHT) {
        direct = bk_add3(direct, light);
        bk_dir_add(d, light, w, bk_dot3(n, w));
    }
    for (uint32_t i = 0; i < v->point_count && i < BK_DIR_POINTS; ++i)
        if ((ps->vis & (1u << (BK_VIS_POINT0 + i))) &&
            bk_bake_point_light(v, p, i, 0, o, n, 0, &w, &light) == BK_USE_LIGHT) {
            direct = bk_add3(direct, light);
            bk_dir_add(d, light, w, bk_dot3(n, w));
        }
    if ((ps->vis & BK_VIS_EMIT) && bk_bake_emit_light(v, p, ps->texel, ps->smp, 0, o, n, 0, &w, &light)) {
        direct = bk_add3(direct, light);
        bk_dir_add(d, light, w, bk_dot3(n, w));
    }
    /* L = direct + what came by the first bounce, along w = c n + t (t along the surface): it adds
     * rest (w / c) = rest (n + t / c), with 1 / c capped at BK_DIR_GRAZING */
    const bk_vec3 rest = bk_sub3(ps->L, direct);
    w = bk_cosine_dir(n, bk_bake_rng(p, ps->texel, ps->smp, BK_DIM_BOUNCE),
                      bk_bake_rng(p, ps->texel, ps->smp, BK_DIM_BOUNCE + 1));
    const float c = bk_dot3(n, w);
    bk_dir_add(d, rest,
               bk_add3(n, bk_mul3(bk_sub3(w, bk_mul3(n, c)), c > 1.0f / BK_DIR_GRAZING ? 1.0f / c : BK_DIR_GRAZING)),
               1.0f);
    for (int k = 0; k < 3; ++k) {
        ps->dir[k].x += d[k].x;
        ps->dir[k].y += d[k].y;
        ps->dir[k].z += d[k].z;
    }
}

/* A texel's extra sums beside acc and sq, as backends keep them: bk_bake_ext_count(p) float4s per
 * texel, with p->directional its three directional sums (bk_bake_path.dir), then with a shadowmask
 * its channels' (bk_bake_path.mask). */
BK_HD uint32_t bk_bake_ext_count(const bk_bake_params *p)
{
    return (p->directional ? 3u : 0u) + (p->mask_count ? 1u : 0u);
}

/* A texel's extra sums out of the path into ext (bk_bake_ext_count(p) float4s). */
BK_HD void bk_bake_path_ext_store(const bk_bake_params *p, const bk_bake_path *ps, bk_f4 *ext)
{
    const uint32_t nd = p->directional ? 3u : 0u;
    for (uint32_t k = 0; k < nd; ++k) ext[k] = ps->dir[k];
    if (p->mask_count) ext[nd] = ps->mask;
}

/* The shadowmask's sums += the sample's visibility of each channel's light (its bits vis). */
BK_HD void bk_mask_add(const bk_bake_params *p, uint32_t vis, bk_f4 *m)
{
    const uint32_t n = p->mask_count;
    m->x += n > 0 && (vis & p->mask_vis[0]) ? 1.0f : 0.0f;
    m->y += n > 1 && (vis & p->mask_vis[1]) ? 1.0f : 0.0f;
    m->z += n > 2 && (vis & p->mask_vis[2]) ? 1.0f : 0.0f;
    m->w += n > 3 && (vis & p->mask_vis[3]) ? 1.0f : 0.0f;
}

/* Starts a texel whose earlier samples summed to acc and sq (zero before sample 0), and to ext, its
 * extra sums (bk_bake_ext_count; NULL: zero). */
BK_HD void bk_bake_path_begin(const bk_bake_params *p, const bk_texel *tx, bk_f4 acc, float sq, const bk_f4 *ext,
                              bk_bake_path *ps)
{
    ps->x = bk_v3(tx->px, tx->py, tx->pz);
    ps->n = bk_v3(tx->nx, tx->ny, tx->nz);
    ps->texel = tx->pixel;
    ps->tri = tx->tri;
    ps->pos = ps->x;
    ps->nrm = ps->n;
    ps->L = ps->thr = ps->direct = ps->pend = bk_v3(0, 0, 0);
    ps->acc = acc;
    ps->sq = sq;
    const uint32_t nd = ext && p->directional ? 3u : 0u;
    for (uint32_t k = 0; k < 3; ++k) {
        if (k < nd) ps->dir[k] = ext[k];
        else ps->dir[k].x = ps->dir[k].y = ps->dir[k].z = ps->dir[k].w = 0.0f;
    }
    if (ext && p->mask_count) ps->mask = ext[nd];
    else ps->mask.x = ps->mask.y = ps->mask.z = ps->mask.w = 0.0f;
    ps->vis = 0;
    ps->smp = p->sample_begin;
    ps->smp_end = p->sample_end;
    ps->b = 0;
    ps->k = 0;
    ps->best = BK_INF;
    ps->best_d = ps->n;
    ps->after = BK_STEP_SAMPLE;
    ps->step = p->mode == BK_BAKE_LIGHT && p->sample_begin == 0 && tx->tri != BK_TRI_PROBE &&
                       !(tx->tri >= p->open_tri_begin && tx->tri < p->open_tri_end)
                   ? BK_STEP_UNOCC
                   : BK_STEP_SAMPLE;
}

/* A sample's end: its radiance (and directional sums) into the sums, the next sample next. */
BK_HD void bk_bake_path_end_sample(const bk_bake_view *v, const bk_bake_params *p, bk_bake_path *ps)
{
    if (p->directional) bk_bake_dir_sample(v, p, ps);
    if (p->mask_count) bk_mask_add(p, ps->vis, &ps->mask);
    ps->acc.x += ps->L.x;
    ps->acc.y += ps->L.y;
    ps->acc.z += ps->L.z;
    const float y = bk_luminance(ps->L);
    ps->sq += y * y;
    ps->smp++;
    ps->step = BK_STEP_SAMPLE;
}

/* A shadow ray from o along d up to tmax; unoccluded, it adds light to the vertex's direct light. */
BK_HD int bk_bake_path_shadow(bk_bake_path *ps, bk_vec3 o, bk_vec3 d, float tmax, bk_vec3 light, uint32_t after,
                              bk_ray *r, int *any_hit)
{
    *r = bk_make_ray(o, d, 0.0f, tmax);
    *any_hit = 1;
    ps->pend = light;
    ps->after = after;
    ps->step = BK_RAY_SHADOW;
    return 1;
}

/* The next ray the texel needs into *r (*any_hit: an occlusion query); 0 when its samples are
 * done. Steps that need no ray (a light behind the surface, the end of a path) are taken here. */
/* Long: one switch over the path steps, shared with the CUDA bake kernels, whose locals must stay in registers. */
BK_HD int bk_bake_path_next(const bk_bake_view *v, const bk_bake_params *p, bk_bake_path *ps, bk_ray *r, int *any_hit)
{
    for (;;) {
        switch (ps->step) {
        case BK_STEP_UNOCC:
            if (ps->k < 8) {
                bk_vec3 b1, b2;
                bk_frame(ps->n, &b1, &b2);
                float sa, ca;
                bk_sincos_2pi(0.125f * (float)ps->k, &sa, &ca);
                ps->pend = bk_add3(bk_add3(bk_mul3(b1, ca), bk_mul3(b2, sa)), bk_mul3(ps->n, 0.1f));
                *r = bk_make_ray(bk_add3(ps->x, bk_mul3(ps->n, p->eps)), ps->pend, 0.0f, p->texel_world);
                *any_hit = 0;
                ps->step = BK_RAY_UNOCC;
                return 1;
            }
            if (ps->best < BK_INF) ps->x = bk_add3(ps->x, bk_mul3(ps->best_d, ps->best + 2.0f * p->eps));
            ps->k = 0;
            ps->step = BK_STEP_INSIDE;
            break;
        case BK_STEP_INSIDE: {
            const uint32_t lim = bk_bake_inside_limit(p), back = (uint32_t)ps->acc.w;
            if (back <= lim && back + (BK_INSIDE_RAYS - ps->k) > lim) { /* the answer is not yet certain */
                ps->pend = bk_bake_inside_dir(ps->n, ps->texel, ps->k);
                *r = bk_make_ray(bk_add3(ps->x, bk_mul3(ps->n, p->eps)), ps->pend, 0.0f, BK_INF);
                *any_hit = 0;
                ps->step = BK_RAY_INSIDE;
                return 1;
            }
            ps->step = BK_STEP_SAMPLE;
            break;
        }
        case BK_STEP_SAMPLE:
            if (ps->smp >= ps->smp_end) return 0;
            if (p->mode == BK_BAKE_AO) {
                bk_vec3 d = bk_cosine_dir(ps->n, bk_bake_rng(p, ps->texel, ps->smp, BK_DIM_AO),
                                          bk_bake_rng(p, ps->texel, ps->smp, BK_DIM_AO + 1));
                *r = bk_make_ray(bk_add3(ps->x, bk_mul3(ps->n, p->eps)), d, 0.0f, p->ao_distance);
                *any_hit = 1;
                ps->step = BK_RAY_AO;
                return 1;
            }
            ps->L = bk_v3(0, 0, 0);
            ps->vis = 0;
            ps->thr = bk_v3(1, 1, 1);
            ps->pos = ps->x;
            ps->nrm = ps->n;
            ps->b = 0;
            ps->step = BK_STEP_SUN;
            break;
        case BK_STEP_SUN: {
            ps->direct = bk_v3(0, 0, 0);
            ps->k = 0;
            ps->step = BK_STEP_POINT;
            bk_vec3 d, light;
            if (bk_bake_sun_light(p, ps->texel, ps->smp, ps->b, ps->nrm, bk_path_at_probe(ps), &d, &light))
                return bk_bake_path_shadow(ps, bk_add3(ps->pos, bk_mul3(ps->nrm, p->eps)), d, BK_INF, light,
                                           BK_STEP_POINT, r, any_hit);
            break;
        }
        case BK_STEP_POINT:
            if (ps->k >= v->point_count) {
                ps->step = BK_STEP_EMIT;
                break;
            }
            {
                const bk_vec3 o = bk_add3(ps->pos, bk_mul3(ps->nrm, p->eps));
                bk_vec3       w, light;
                if (bk_bake_point_light(v, p, ps->k++, ps->b, o, ps->nrm, bk_path_at_probe(ps), &w, &light))
                    return bk_bake_path_shadow(ps, o, w, 0.9999f, light, BK_STEP_POINT, r, any_hit);
                break;
            }
        case BK_STEP_EMIT: {
            ps->step = BK_STEP_BOUNCE;
            const bk_vec3 o = bk_add3(ps->pos, bk_mul3(ps->nrm, p->eps));
            bk_vec3       w, light;
            if (bk_bake_emit_light(v, p, ps->texel, ps->smp, ps->b, o, ps->nrm, bk_path_at_probe(ps), &w, &light))
                return bk_bake_path_shadow(ps, o, w, 0.9999f, light, BK_STEP_BOUNCE, r, any_hit);
            break;
        }
        case BK_STEP_BOUNCE: {
            const uint32_t base = bk_dim_vertex(ps->b);
            ps->L = bk_add3(ps->L, bk_v3(ps->thr.x * ps->direct.x, ps->thr.y * ps->direct.y, ps->thr.z * ps->direct.z));
            const float u1 = bk_bake_rng(p, ps->texel, ps->smp, base + BK_DIM_BOUNCE);
            const float u2 = bk_bake_rng(p, ps->texel, ps->smp, base + BK_DIM_BOUNCE + 1);
            ps->pend = bk_path_at_probe(ps) ? bk_sphere_dir(u1, u2) : bk_cosine_dir(ps->nrm, u1, u2);
            *r = bk_make_ray(bk_add3(ps->pos, bk_mul3(ps->nrm, p->eps)), ps->pend, 0.0f, BK_INF);
            *any_hit = 0;
            ps->step = BK_RAY_BOUNCE;
            return 1;
        }
        default: return 0; /* a ray in flight: bk_bake_path_hit comes first */
        }
    }
}

/* Takes the result of the ray bk_bake_path_next gave: h, and aux, what the traversal left for a
 * voxel hit (bk_trace_stats.aux). */
BK_HD void bk_bake_path_hit(const bk_bake_view *v, const bk_bake_params *p, bk_bake_path *ps, bk_hit h, uint32_t aux)
{
    switch (ps->step) {
    case BK_RAY_UNOCC:
        ps->k++;
        ps->step = BK_STEP_UNOCC;
        if (h.tri != BK_NO_HIT && h.t < ps->best) {
            bk_vec3  ng;
            uint32_t mat;
            bk_bake_hit_facing(v, h.tri, aux, ps->pend, &ng, &mat);
            if (bk_dot3(ng, ps->pend) > 0.0f) {
                ps->best = h.t;
                ps->best_d = ps->pend;
            } /* the back of a surface */
        }
        return;
    case BK_RAY_INSIDE:
        ps->k++;
        ps->step = BK_STEP_INSIDE;
        if (h.tri != BK_NO_HIT) {
            bk_vec3  ng;
            uint32_t mat;
            bk_bake_hit_facing(v, h.tri, aux, ps->pend, &ng, &mat);
            if (bk_dot3(ng, ps->pend) > 0.0f) ps->acc.w += 1.0f; /* the back of a surface */
        }
        return;
    case BK_RAY_AO: {
        float open = h.tri == BK_NO_HIT ? 1.0f : 0.0f;
        ps->acc.x += open;
        ps->acc.y += open;
        ps->acc.z += open;
        ps->sq += open;
        ps->smp++;
        ps->step = BK_STEP_SAMPLE;
        return;
    }
    case BK_RAY_SHADOW:
        if (h.tri == BK_NO_HIT) {
            ps->direct = bk_add3(ps->direct, ps->pend);
            if (ps->b == 0) ps->vis |= bk_vis_bit(ps->after, ps->k);
        }
        ps->step = ps->after;
        return;
    case BK_RAY_BOUNCE: {
        const bk_vec3 d = ps->pend;
        if (h.tri == BK_NO_HIT) {
            ps->L = bk_add3(ps->L, bk_v3(ps->thr.x * p->sky[0], ps->thr.y * p->sky[1], ps->thr.z * p->sky[2]));
            bk_bake_path_end_sample(v, p, ps);
            return;
        }
        bk_vec3  ng;
        uint32_t mat;
        bk_bake_hit_facing(v, h.tri, aux, d, &ng, &mat);
        float cos_y = -bk_dot3(ng, d);
        if (cos_y < 0.0f) {                              /* the back of a surface: no light */
            if (bk_path_at_probe(ps)) ps->acc.w += 1.0f; /* a probe's validity (bk_bake_probe) */
            bk_bake_path_end_sample(v, p, ps);
            return;
        }
        const bk_vec3 y = bk_add3(bk_add3(ps->pos, bk_mul3(ps->nrm, p->eps)), bk_mul3(d, h.t));
        float         b1 = 0.0f, b2 = 0.0f, lum;
        const int     mapped = !(aux & BK_VOX_AUX) && bk_bake_mat_mapped(v, mat);
        if (mapped) {
            bk_vec3 p0, p1, p2;
            bk_bake_tri(v, h.tri, &p0, &p1, &p2, 0);
            bk_tri_bary(p0, p1, p2, y, &b1, &b2);
        }
        bk_vec3 ke =
            mapped ? bk_bake_emission(v, mat, h.tri, b1, b2, &lum) : bk_f4_xyz(bk_load4(v->materials + 2 * mat + 1));
        float ke_sum = ke.x + ke.y + ke.z;
        if (!mapped) lum = ke_sum;
        if (ke_sum > 0.0f && v->emit_total > 0.0f && bk_bake_hit_front(v, h.tri, aux, d)) {
            /* an emitter found by the path (from its front, the side light sampling samples, also
             * for a double-sided one): its share of the balance heuristic */
            float pdf_bsdf = bk_path_at_probe(ps) ? BK_INV_4PI : bk_dot3(ps->nrm, d) * 0.318309886f;
            float pdf_light = lum / v->emit_total * h.t * h.t / bk_maxf(cos_y, 1e-20f);
            float wb = pdf_bsdf / (pdf_bsdf + pdf_light);
            ps->L = bk_add3(ps->L, bk_v3(ps->thr.x * ke.x * wb, ps->thr.y * ke.y * wb, ps->thr.z * ke.z * wb));
        }
        if (ps->b == p->bounces) {
            bk_bake_path_end_sample(v, p, ps);
            return;
        }
        bk_vec3 kd = mapped ? bk_bake_albedo(v, mat, h.tri, b1, b2) : bk_f4_xyz(bk_load4(v->materials + 2 * mat));
        ps->thr = bk_v3(ps->thr.x * kd.x, ps->thr.y * kd.y, ps->thr.z * kd.z);
        if (ps->thr.x <= 0.0f && ps->thr.y <= 0.0f && ps->thr.z <= 0.0f) {
            bk_bake_path_end_sample(v, p, ps);
            return;
        }
        ps->pos = y;
        ps->nrm = ng;
        ps->b++;
        ps->step = BK_STEP_SUN;
        return;
    }
    default: return;
    }
}

/* Bakes samples [p->sample_begin, p->sample_end) of one texel and adds them to acc, the sums of
 * the texel's earlier samples (rgb; w: how many of the inside step's rays met a back face, set
 * by the launch with sample 0), and the squares of the samples' luminances (bk_luminance) to *sq, from which the host
 * gets the sample variance. The launch with sample 0 moves the texel out of nearby geometry and writes the position
 * back into *tx. Adding sample by sample in order makes a bake split over several launches equal to one made in a
 * single pass. The host divides by spp at the end and calls the texel inside geometry when w exceeds
 * bk_bake_inside_limit. ext (NULL when bk_bake_ext_count(p) is 0) holds the texel's extra sums the
 * same way (bk_bake_path_ext_store: directional, shadowmask). */
BK_HD bk_f4 bk_bake_texel(const bk_bake_view *v, const bk_bake_params *p, bk_texel *tx, bk_f4 acc, float *sq,
                          bk_f4 *ext, bk_stack *s, bk_trace_stats *st)
{
    bk_bake_path ps;
    bk_bake_path_begin(p, tx, acc, *sq, ext, &ps);
    bk_ray r;
    int    any_hit;
    while (bk_bake_path_next(v, p, &ps, &r, &any_hit)) {
        bk_hit h = bk_bake_trace(&v->accel, &r, any_hit, s, st);
        bk_bake_path_hit(v, p, &ps, h, st->aux);
    }
    tx->px = ps.x.x;
    tx->py = ps.x.y;
    tx->pz = ps.x.z;
    *sq = ps.sq;
    if (ext) bk_bake_path_ext_store(p, &ps, ext);
    return ps.acc;
}

/* ---- light probes (bk_bake_probe) -----------------------------------------------------------
 * A probe is a point in space: per sample, one ray leaves it in a direction uniform over the
 * sphere and its path goes on as a texel's does (the same bounces, lights and random numbers per
 * (key, sample, dimension), the key being BK_PROBE_KEY | probe); the sun, the point lights and an
 * emitter are met at the probe by shadow rays, as at a texel but with no cosine (bk_bake_sun_light).
 * Each sample's light goes into the 9 coefficients of the real spherical harmonics up to l = 2
 * of the incoming radiance, c_lm = integral L(w) Y_lm(w) dw (bk_sh9: the order and the constants
 * of Ramamoorthi and Hanrahan 2001), rgb each: a shadow ray's irradiance E from direction w adds
 * E Y(w), the rest of the sample (its ray's radiance L) 4 pi L Y(w). The probe's first rays that
 * meet the back of a surface are counted: a probe inside geometry or behind a wall sees backs. */
#define BK_PROBE_KEY   0x80000000u /* over every texel's pixel */
#define BK_PROBE_CHUNK 64u         /* samples of one probe summed apart, then added in order */
#define BK_PROBE_SUMS  28          /* per probe or chunk: 9 coefficients x rgb, then the backs */

/* The 9 real SH basis functions at unit d, in the order l = 0; l = 1: m = -1, 0, 1 (y, z, x);
 * l = 2: m = -2 .. 2 (xy, yz, 3z^2 - 1, xz, x^2 - y^2). */
BK_HD void bk_sh9(bk_vec3 d, float y[9])
{
    y[0] = 0.282095f;
    y[1] = 0.488603f * d.y;
    y[2] = 0.488603f * d.z;
    y[3] = 0.488603f * d.x;
    y[4] = 1.092548f * d.x * d.y;
    y[5] = 1.092548f * d.y * d.z;
    y[6] = 0.315392f * (3.0f * d.z * d.z - 1.0f);
    y[7] = 1.092548f * d.x * d.z;
    y[8] = 0.546274f * (d.x * d.x - d.y * d.y);
}

/* sh[0..27) += light x Y(d) (d unit). */
BK_HD void bk_sh9_add(float sh[BK_PROBE_SUMS], bk_vec3 light, bk_vec3 d)
{
    float y[9];
    bk_sh9(d, y);
    for (int k = 0; k < 9; ++k) {
        sh[3 * k] += light.x * y[k];
        sh[3 * k + 1] += light.y * y[k];
        sh[3 * k + 2] += light.z * y[k];
    }
}

/* The sample of a probe's path that just ended (ps->smp - 1) into sh. */
BK_HD void bk_bake_probe_sample(const bk_bake_view *v, const bk_bake_params *p, const bk_bake_path *ps,
                                float sh[BK_PROBE_SUMS])
{
    const uint32_t smp = ps->smp - 1u;
    bk_vec3        direct = bk_v3(0, 0, 0), w, light;
    if ((ps->vis & BK_VIS_SUN) && bk_bake_sun_light(p, ps->texel, smp, 0, ps->n, 1, &w, &light)) {
        direct = bk_add3(direct, light);
        bk_sh9_add(sh, light, w);
    }
    for (uint32_t i = 0; i < v->point_count && i < BK_DIR_POINTS; ++i)
        if ((ps->vis & (1u << (BK_VIS_POINT0 + i))) && bk_bake_point_light(v, p, i, 0, ps->x, ps->n, 1, &w, &light)) {
            direct = bk_add3(direct, light);
            bk_sh9_add(sh, light, bk_normalize3(w));
        }
    if ((ps->vis & BK_VIS_EMIT) && bk_bake_emit_light(v, p, ps->texel, smp, 0, ps->x, ps->n, 1, &w, &light)) {
        direct = bk_add3(direct, light);
        bk_sh9_add(sh, light, bk_normalize3(w));
    }
    w = bk_sphere_dir(bk_bake_rng(p, ps->texel, smp, BK_DIM_BOUNCE), bk_bake_rng(p, ps->texel, smp, BK_DIM_BOUNCE + 1));
    bk_sh9_add(sh, bk_mul3(bk_sub3(ps->L, direct), 12.5663706f), w);
}

/* Samples [smp_begin, smp_end) of probe `probe` at pos into sh (zeroed first): the 27 sums of
 * bk_bake_probe_sample, then in sh[27] how many of the samples' first rays met the back of a
 * surface. p->directional and p->mask_count must be 0. A probe has at most BK_DIR_POINTS point lights. */
BK_HD void bk_bake_probe(const bk_bake_view *v, const bk_bake_params *p, bk_vec3 pos, uint32_t probe,
                         uint32_t smp_begin, uint32_t smp_end, float sh[BK_PROBE_SUMS], bk_stack *s, bk_trace_stats *st)
{
    bk_texel tx;
    tx.px = pos.x, tx.py = pos.y, tx.pz = pos.z;
    tx.nx = tx.ny = tx.nz = 0.0f; /* rays leave the point itself (o + 0 eps) */
    tx.tri = BK_TRI_PROBE;
    tx.pixel = BK_PROBE_KEY | probe;
    bk_f4 zero;
    zero.x = zero.y = zero.z = zero.w = 0.0f;
    for (int k = 0; k < BK_PROBE_SUMS; ++k) sh[k] = 0.0f;
    bk_bake_path ps;
    bk_bake_path_begin(p, &tx, zero, 0.0f, NULL, &ps);
    ps.smp = smp_begin;
    ps.smp_end = smp_end;
    uint32_t done = smp_begin;
    bk_ray   r;
    int      any_hit;
    while (bk_bake_path_next(v, p, &ps, &r, &any_hit)) {
        bk_hit h = bk_bake_trace(&v->accel, &r, any_hit, s, st);
        bk_bake_path_hit(v, p, &ps, h, st->aux);
        if (ps.smp != done) { /* a sample ended */
            bk_bake_probe_sample(v, p, &ps, sh);
            done = ps.smp;
        }
    }
    sh[BK_PROBE_SUMS - 1] = ps.acc.w;
}

/* A probe's sums from its chunks' (part: chunks x BK_PROBE_SUMS, in sample order), added in that
 * order, so that every backend's probe is the same bits. */
BK_HD void bk_probe_chunks_sum(const float *part, uint32_t chunks, float *out)
{
    for (int k = 0; k < BK_PROBE_SUMS; ++k) {
        float t = 0.0f;
        for (uint32_t j = 0; j < chunks; ++j) t += part[(size_t)j * BK_PROBE_SUMS + k];
        out[k] = t;
    }
}

#endif
