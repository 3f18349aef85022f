/* bk_bake.h - the lightmap bake's per-texel work, shared by CPU and CUDA.
 *
 * Pipeline: atlas (src/atlas.c: charts, packing, rasterization) -> bk_texel per covered texel ->
 * bk_bake_texel() (here: the same function in a CPU thread loop and in a CUDA kernel) -> linear
 * RGB per texel -> dilation -> PNG / HDR.
 *
 * What a texel stores: the incoming diffuse light at the texel divided by pi, i.e. the outgoing
 * radiance of a white Lambertian surface there (a game multiplies by its albedo). With cosine-
 * weighted directions that is simply the mean incoming radiance over the samples. Light comes
 * from a sun (a cone of directions: soft shadows), point lights, emissive triangles (MTL Ke,
 * emitting from their front side, the side their winding faces), a constant sky (reached by
 * rays that escape), and `bounces` of indirect light with MTL Kd as albedo. Next-event
 * estimation handles the sun and points at every path vertex; emitters are reached both by light
 * sampling and by the path's own rays, combined with the balance heuristic (Veach 1997), which
 * keeps small bright emitters and nearby large ones both low in noise; escaping rays add the sky.
 * Random numbers depend on (seed, texel pixel, sample, dimension) only, and the arithmetic is
 * the same on both sides (the CUDA bake is compiled without FMA contraction, and sin/cos are our
 * own), so a GPU bake matches the CPU bake texel for texel but for rare ties.
 * Rays that hit the back of a surface bring no light: a texel whose first rays mostly see back
 * faces is inside geometry, and the host marks it invalid so dilation covers it.
 */
#ifndef BK_BAKE_H
#define BK_BAKE_H

#include <math.h>
#include "bk_common.h"
#include "bk_rng.h"
#include "bk_traverse.h"

/* One covered lightmap texel: where on the surface it sits and which way that surface faces. */
typedef struct bk_texel {
    float    px, py, pz;   /* world position (at the texel centre, clamped into the triangle)  12 B */
    float    nx, ny, nz;   /* unit shading normal (interpolated vn when the file has them)    12 B */
    uint32_t tri;          /* triangle (file numbering)                                        4 B */
    uint32_t pixel;        /* y * width + x in the atlas image                                 4 B */
} bk_texel;                /*                                                                 32 B */

/* What the host keeps of a texel once the backend holds its own copy of the texels (a GPU's,
 * caps().keeps_texels): its pixel and triangle, all that the image, the denoiser's charts and the
 * fill read (bk_texels_compact, atlas.h).                                               8 B */
typedef struct bk_texel_ref {
    uint32_t pixel;        /* as bk_texel.pixel                                                4 B */
    uint32_t tri;          /* as bk_texel.tri                                                  4 B */
} bk_texel_ref;

enum bk_bake_mode { BK_BAKE_LIGHT = 0, BK_BAKE_AO = 1 };

typedef struct bk_bake_params {
    uint32_t mode;          /* enum bk_bake_mode */
    uint32_t spp;           /* samples per texel */
    uint32_t bounces;       /* indirect bounces after the direct light */
    uint32_t seed;
    float    ao_distance;   /* AO: occluders farther than this do not count */
    float    eps;           /* ray origin offset along the normal, world units */
    float    texel_world;   /* world size of one texel: how far the unocclude step looks */
    float    sky[3];        /* constant sky radiance */
    float    sun_dir[3];    /* unit vector towards the sun */
    float    sun_color[3];  /* irradiance on a surface facing the sun; 0 = no sun */
    float    sun_cos;       /* cosine of the sun's angular radius */
    uint32_t sample_begin;  /* this launch bakes samples [sample_begin, sample_end) of each */
    uint32_t sample_end;    /*   texel, added to the sums of the earlier ones               */
    uint32_t open_tri_begin;/* texels of triangles [open_tri_begin, open_tri_end) lie on open */
    uint32_t open_tri_end;  /*   faces (visible voxel faces): never inside geometry, so they */
                            /*   skip the unocclude step (8 of the 13 rays of a 1-spp texel) */
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
    X(BOUNCE,     2)   /* the cosine-weighted direction of the ray leaving the vertex (u1, u2) */ \
    X(SUN,        2)   /* bk_bake_direct: a direction in the sun's cone (cos theta, phi) */       \
    X(EMIT_PICK,  1)   /* bk_bake_direct: which emissive triangle, by power */                    \
    X(EMIT_POINT, 2)   /* bk_bake_direct: a uniform point on it (sqrt u, v) */

#define BK_DIM_ENUM_(name, n) BK_DIM_##name, BK_DIM_##name##_LAST = BK_DIM_##name + (n) - 1,
enum bk_dim {
    BK_DIM_USES(BK_DIM_ENUM_)
    BK_DIM_END,                 /* first offset no use takes */
    BK_DIM_STRIDE = 16,         /* dimensions per path vertex: room to grow without changing the layout */
    BK_DIM_AO = 0,              /* --mode ao: the one ray's direction (u1, u2); a sample of its own */
    BK_DIM_AO_LAST = 1
};
#undef BK_DIM_ENUM_
BK_STATIC_ASSERT(BK_DIM_END <= BK_DIM_STRIDE, "the random dimensions of one path vertex outgrow BK_DIM_STRIDE");
BK_STATIC_ASSERT(BK_DIM_AO_LAST < BK_DIM_STRIDE, "AO's random dimensions outgrow BK_DIM_STRIDE");

/* The first random dimension of path vertex b. */
BK_HD uint32_t bk_dim_vertex(uint32_t b) { return (uint32_t)BK_DIM_STRIDE * b; }

/* Tests may define BK_BAKE_DIM_HOOK(texel, sample, dim) before the first include of this header
 * to see every random dimension the bake draws (tests/unit_bake_dims.c); elsewhere it is empty. */
#ifndef BK_BAKE_DIM_HOOK
#  define BK_BAKE_DIM_HOOK(texel, sample, dim) ((void)0)
#endif

/* The bake's random number for (texel, sample, dimension): every draw goes through here. */
BK_HD float bk_bake_rng(const bk_bake_params *p, uint32_t texel, uint32_t sample, uint32_t dim)
{
    BK_BAKE_DIM_HOOK(texel, sample, dim);
    return bk_rng_f(p->seed, texel, sample, dim);
}

/* Shading data, file-ordered triangles (device pointers on the GPU). */
typedef struct bk_bake_view {
    bk_accel_view   accel;
    const bk_f4    *tris;          /* 3 per triangle: v0 (w: material index bits), v1, v2 */
    uint32_t        tri_count;     /* shading triangles (a voxel scene's surface: not accel.tri_count) */
    const bk_f4    *materials;     /* 2 per material: kd, ke (rgb in x y z) */
    uint32_t        material_count;
    const uint32_t *emit_tris;     /* emissive triangles */
    const float    *emit_cdf;      /* their cumulative power, normalised to end at 1 */
    uint32_t        emit_count;
    float           emit_total;    /* sum over emitters of area * (ke.r + ke.g + ke.b) */
    const bk_f4    *points;        /* 2 per point light: position, intensity (rgb) */
    uint32_t        point_count;
} bk_bake_view;

/* The bake traces from several places; one function that is never inlined keeps a single copy
 * of each specialised traversal in the code of the file that bakes (src/backend_cpu.c,
 * kernels/bake.cu). A host file may trace the bake's rays through a layout of its own: it
 * defines BK_BAKE_HOST_TRACE as a function with this signature before including this header
 * (src/backend_cpu.c: the wide BVH, src/bvh_wide.h). Device code never sees it. */
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
    int q = (int)t;
    float a = (t - (float)q) * 1.57079632679f, a2 = a * a;
    float sn = a * (1.0f - a2 / 6.0f * (1.0f - a2 / 20.0f * (1.0f - a2 / 42.0f * (1.0f - a2 / 72.0f * (1.0f - a2 / 110.0f)))));
    float cs = 1.0f - a2 / 2.0f * (1.0f - a2 / 12.0f * (1.0f - a2 / 30.0f * (1.0f - a2 / 56.0f * (1.0f - a2 / 90.0f * (1.0f - a2 / 132.0f)))));
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

BK_HD bk_ray bk_make_ray(bk_vec3 o, bk_vec3 d, float tmin, float tmax)
{
    bk_ray r;
    r.ox = o.x; r.oy = o.y; r.oz = o.z; r.tmin = tmin; r.dx = d.x; r.dy = d.y; r.dz = d.z; r.tmax = tmax;
    return r;
}

/* Triangle t's three corners (file order). */
BK_HD void bk_bake_tri(const bk_bake_view *v, uint32_t t, bk_vec3 *p0, bk_vec3 *p1, bk_vec3 *p2, uint32_t *mat)
{
    bk_f4 a = bk_load4(v->tris + 3 * t), b = bk_load4(v->tris + 3 * t + 1), c = bk_load4(v->tris + 3 * t + 2);
    *p0 = bk_f4_xyz(a); *p1 = bk_f4_xyz(b); *p2 = bk_f4_xyz(c);
    if (mat) *mat = bk_float_bits(a.w);
}

/* The geometric normal (unit, facing the side the surface was made to be seen from) and the
 * material of what a ray hit: hit id `id`, and aux, what the traversal left for a voxel hit
 * (bk_voxel.h; 0 for a triangle). */
BK_HD void bk_bake_hit_surface(const bk_bake_view *v, uint32_t id, uint32_t aux, bk_vec3 *ng, uint32_t *mat)
{
    if (aux & BK_VOX_AUX) {
        uint32_t face = aux & 7u;
        float sg = (face & 1u) ? 1.0f : -1.0f;
        *ng = bk_v3(face >> 1 == 0 ? sg : 0.0f, face >> 1 == 1 ? sg : 0.0f, face >> 1 == 2 ? sg : 0.0f);
        *mat = (aux & ~BK_VOX_AUX) >> 3;
        return;
    }
    bk_vec3 p0, p1, p2;
    bk_bake_tri(v, id, &p0, &p1, &p2, mat);
    *ng = bk_normalize3(bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0)));
}

/* Sun, point lights and one emissive-triangle sample at a path vertex, as outgoing radiance of a
 * white Lambertian surface (irradiance / pi). base: the vertex's first random dimension
 * (bk_dim_vertex); the draws are base + BK_DIM_SUN, BK_DIM_EMIT_PICK, BK_DIM_EMIT_POINT. */
BK_HD bk_vec3 bk_bake_direct(const bk_bake_view *v, const bk_bake_params *p, bk_vec3 x, bk_vec3 n,
                             uint32_t texel, uint32_t sample, uint32_t base, bk_stack *s, bk_trace_stats *st)
{
    const float inv_pi = 0.318309886f;
    bk_vec3 L = bk_v3(0, 0, 0);
    bk_vec3 o = bk_add3(x, bk_mul3(n, p->eps));
    if (p->sun_color[0] > 0.0f || p->sun_color[1] > 0.0f || p->sun_color[2] > 0.0f) {
        /* a direction uniform in the sun's cone */
        bk_vec3 sd = bk_v3(p->sun_dir[0], p->sun_dir[1], p->sun_dir[2]), b1, b2;
        bk_frame(sd, &b1, &b2);
        float ct = 1.0f - bk_bake_rng(p, texel, sample, base + BK_DIM_SUN) * (1.0f - p->sun_cos);
        float sp, cp;
        bk_sincos_2pi(bk_bake_rng(p, texel, sample, base + BK_DIM_SUN + 1), &sp, &cp);
        float stt = sqrtf(bk_maxf(0.0f, 1.0f - ct * ct));
        bk_vec3 d = bk_add3(bk_add3(bk_mul3(b1, stt * cp), bk_mul3(b2, stt * sp)), bk_mul3(sd, ct));
        float c = bk_dot3(n, d);
        if (c > 0.0f) {
            bk_ray r = bk_make_ray(o, d, 0.0f, BK_INF);
            if (bk_bake_trace(&v->accel, &r, 1, s, st).tri == BK_NO_HIT)
                L = bk_add3(L, bk_mul3(bk_v3(p->sun_color[0], p->sun_color[1], p->sun_color[2]), c * inv_pi));
        }
    }
    for (uint32_t i = 0; i < v->point_count; ++i) {
        bk_f4 lp = bk_load4(v->points + 2 * i), li = bk_load4(v->points + 2 * i + 1);
        bk_vec3 w = bk_sub3(bk_f4_xyz(lp), o);
        float d2 = bk_dot3(w, w), c = bk_dot3(n, w);
        if (c <= 0.0f || d2 <= 0.0f) continue;
        bk_ray r = bk_make_ray(o, w, 0.0f, 0.9999f);
        if (bk_bake_trace(&v->accel, &r, 1, s, st).tri != BK_NO_HIT) continue;
        float g = c / (d2 * sqrtf(d2)) * inv_pi;              /* cos / d^2, cos = c / |w| */
        L = bk_add3(L, bk_mul3(bk_f4_xyz(li), g));
    }
    if (v->emit_count) {
        /* pick an emitter by power, then a uniform point on it */
        float u = bk_bake_rng(p, texel, sample, base + BK_DIM_EMIT_PICK);
        uint32_t lo = 0, hi = v->emit_count - 1;
        while (lo < hi) { uint32_t m = (lo + hi) / 2; if (v->emit_cdf[m] > u) hi = m; else lo = m + 1; }
        uint32_t t = v->emit_tris[lo], mat;
        bk_vec3 p0, p1, p2;
        bk_bake_tri(v, t, &p0, &p1, &p2, &mat);
        float su = sqrtf(bk_bake_rng(p, texel, sample, base + BK_DIM_EMIT_POINT));
        float sv = bk_bake_rng(p, texel, sample, base + BK_DIM_EMIT_POINT + 1);
        bk_vec3 y = bk_add3(bk_add3(bk_mul3(p0, 1.0f - su), bk_mul3(p1, su * (1.0f - sv))), bk_mul3(p2, su * sv));
        bk_vec3 cr = bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0));
        float area2 = sqrtf(bk_dot3(cr, cr));                  /* twice the area */
        bk_vec3 w = bk_sub3(y, o);
        float d2 = bk_dot3(w, w), c = bk_dot3(n, w);
        float cos_y = -bk_dot3(cr, w);                         /* front side only; scaled below */
        if (c > 0.0f && d2 > 0.0f && area2 > 0.0f && cos_y > 0.0f) {
            bk_ray r = bk_make_ray(o, w, 0.0f, 0.9999f);
            if (bk_bake_trace(&v->accel, &r, 1, s, st).tri == BK_NO_HIT) {
                bk_vec3 ke = bk_f4_xyz(bk_load4(v->materials + 2 * mat + 1));
                float dist = sqrtf(d2), cos_x = c / dist;
                cos_y /= area2 * dist;
                /* solid-angle densities of this direction under light sampling and under the
                 * cosine sampling of the path: the balance heuristic weighs the two */
                float pdf_light = (ke.x + ke.y + ke.z) / v->emit_total * d2 / cos_y;
                float pdf_bsdf = cos_x * inv_pi;
                float g = cos_x * inv_pi / (pdf_light + pdf_bsdf);   /* (cos/pi / pdf_light) * w_light */
                L = bk_add3(L, bk_mul3(ke, g));
            }
        }
    }
    return L;
}

/* Moves a texel's position out of nearby geometry: looks along 8 directions in the tangent plane
 * (tilted slightly off the surface) up to one texel away; if one meets the back of a surface,
 * the texel centre lies inside or under it, so the position moves to just past the nearest such
 * hit. */
BK_HD bk_vec3 bk_bake_unocclude(const bk_bake_view *v, const bk_bake_params *p, bk_vec3 x, bk_vec3 n,
                                bk_stack *s, bk_trace_stats *st)
{
    bk_vec3 b1, b2;
    bk_frame(n, &b1, &b2);
    float best = BK_INF;
    bk_vec3 best_d = n;
    for (int k = 0; k < 8; ++k) {
        float sa, ca;
        bk_sincos_2pi(0.125f * (float)k, &sa, &ca);
        bk_vec3 d = bk_add3(bk_add3(bk_mul3(b1, ca), bk_mul3(b2, sa)), bk_mul3(n, 0.1f));
        bk_ray r = bk_make_ray(bk_add3(x, bk_mul3(n, p->eps)), d, 0.0f, p->texel_world);
        bk_hit h = bk_bake_trace(&v->accel, &r, 0, s, st);
        if (h.tri == BK_NO_HIT || h.t >= best) continue;
        bk_vec3 ng;
        uint32_t mat;
        bk_bake_hit_surface(v, h.tri, st->aux, &ng, &mat);
        if (bk_dot3(ng, d) > 0.0f) { best = h.t; best_d = d; }    /* the back of a surface */
    }
    if (best < BK_INF) x = bk_add3(x, bk_mul3(best_d, best + 2.0f * p->eps));
    return x;
}

/* Bakes samples [p->sample_begin, p->sample_end) of one texel and adds them to acc, the sums of
 * the texel's earlier samples (rgb; w counts first rays that met a back face), and the squares of
 * the samples' luminances (bk_luminance) to *sq, from which the host gets the sample variance. The launch with
 * sample 0 moves the texel out of nearby geometry and writes the position back into *tx. Adding sample by
 * sample in order makes a bake split over several launches equal to one made in a single pass.
 * The host divides by spp at the end and treats a back-face share > 0.1 as inside geometry. */
BK_HD bk_f4 bk_bake_texel(const bk_bake_view *v, const bk_bake_params *p, bk_texel *tx, bk_f4 acc, float *sq,
                          bk_stack *s, bk_trace_stats *st)
{
    bk_vec3 x = bk_v3(tx->px, tx->py, tx->pz), n = bk_v3(tx->nx, tx->ny, tx->nz);
    uint32_t texel = tx->pixel;
    if (p->mode == BK_BAKE_LIGHT && p->sample_begin == 0 && !(tx->tri >= p->open_tri_begin && tx->tri < p->open_tri_end)) {
        /* once per texel: the first launch stores the moved position for the later ones */
        x = bk_bake_unocclude(v, p, x, n, s, st);
        tx->px = x.x; tx->py = x.y; tx->pz = x.z;
    }
    for (uint32_t smp = p->sample_begin; smp < p->sample_end; ++smp) {
        if (p->mode == BK_BAKE_AO) {
            bk_vec3 d = bk_cosine_dir(n, bk_bake_rng(p, texel, smp, BK_DIM_AO), bk_bake_rng(p, texel, smp, BK_DIM_AO + 1));
            bk_ray r = bk_make_ray(bk_add3(x, bk_mul3(n, p->eps)), d, 0.0f, p->ao_distance);
            float open = bk_bake_trace(&v->accel, &r, 1, s, st).tri == BK_NO_HIT ? 1.0f : 0.0f;
            acc.x += open; acc.y += open; acc.z += open;
            *sq += open;
            continue;
        }
        bk_vec3 L = bk_v3(0, 0, 0), thr = bk_v3(1, 1, 1), pos = x, nrm = n;
        for (uint32_t b = 0; b <= p->bounces; ++b) {
            uint32_t base = bk_dim_vertex(b);
            bk_vec3 direct = bk_bake_direct(v, p, pos, nrm, texel, smp, base, s, st);
            L = bk_add3(L, bk_v3(thr.x * direct.x, thr.y * direct.y, thr.z * direct.z));
            bk_vec3 d = bk_cosine_dir(nrm, bk_bake_rng(p, texel, smp, base + BK_DIM_BOUNCE),
                                      bk_bake_rng(p, texel, smp, base + BK_DIM_BOUNCE + 1));
            bk_ray r = bk_make_ray(bk_add3(pos, bk_mul3(nrm, p->eps)), d, 0.0f, BK_INF);
            bk_hit h = bk_bake_trace(&v->accel, &r, 0, s, st);
            if (h.tri == BK_NO_HIT) {
                L = bk_add3(L, bk_v3(thr.x * p->sky[0], thr.y * p->sky[1], thr.z * p->sky[2]));
                break;
            }
            bk_vec3 ng;
            uint32_t mat;
            bk_bake_hit_surface(v, h.tri, st->aux, &ng, &mat);
            float cos_y = -bk_dot3(ng, d);
            if (cos_y < 0.0f) {                         /* the back of a surface: no light */
                if (b == 0) acc.w += 1.0f;
                break;
            }
            bk_vec3 ke = bk_f4_xyz(bk_load4(v->materials + 2 * mat + 1));
            float ke_sum = ke.x + ke.y + ke.z;
            if (ke_sum > 0.0f && v->emit_total > 0.0f) {
                /* an emitter found by the path: its share of the balance heuristic */
                float pdf_bsdf = bk_dot3(nrm, d) * 0.318309886f;
                float pdf_light = ke_sum / v->emit_total * h.t * h.t / bk_maxf(cos_y, 1e-20f);
                float wb = pdf_bsdf / (pdf_bsdf + pdf_light);
                L = bk_add3(L, bk_v3(thr.x * ke.x * wb, thr.y * ke.y * wb, thr.z * ke.z * wb));
            }
            if (b == p->bounces) break;
            bk_vec3 kd = bk_f4_xyz(bk_load4(v->materials + 2 * mat));
            thr = bk_v3(thr.x * kd.x, thr.y * kd.y, thr.z * kd.z);
            if (thr.x <= 0.0f && thr.y <= 0.0f && thr.z <= 0.0f) break;
            pos = bk_add3(bk_add3(pos, bk_mul3(nrm, p->eps)), bk_mul3(d, h.t));
            nrm = ng;
        }
        acc.x += L.x; acc.y += L.y; acc.z += L.z;
        const float y = bk_luminance(L);
        *sq += y * y;
    }
    return acc;
}

#endif
