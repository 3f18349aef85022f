/* bk_ray.h - rays and the primitive tests of the traversal, shared by CPU and CUDA: ray set-up,
 * the ray/box slab test and the watertight ray/triangle test (see bk_traverse.h for how they are
 * used, bk_voxel.h for the voxel primitive).
 */
#ifndef BK_RAY_H
#define BK_RAY_H

#include "bk_common.h"

#if !BK_DEVICE_CODE && defined(__SSE2__)
#include <emmintrin.h>
#define BK_HOST_SSE 1
#else
#define BK_HOST_SSE 0
#endif

/* A RAYS record and a HITS record (docs/formats.md). */
typedef struct bk_ray {
    float ox, oy, oz, tmin, dx, dy, dz, tmax;
} bk_ray; /* 32 B */
typedef struct bk_hit {
    float    t;
    uint32_t tri;
} bk_hit; /*  8 B */

/* ---- ray order ------------------------------------------------------------------------------
 * Tracing rays in a coherent order (--ray-order sorted): a warp's rays then start near each other
 * and run the same way, so they visit the same nodes. The key is the direction octant (bits 21-23)
 * above the Morton code of the origin on a 128^3 grid over the scene box (bits 0-20); an origin
 * outside the box (or not finite) takes the nearest cell. scale = 128 / extent per axis (0 for a
 * flat axis). Sponza, 4M diffuse rays sorted beforehand and traced on an H100: 1707 Mrays/s
 * closest hit as they come, 2621 with the octant above a 2^21-cell grid per axis, 2607 with 64
 * cells, 2396 with 16, 2007 with 4; the origin's code alone gave 2136, the octant below it 2106.
 * 24 bits: three passes of the radix sort (--ray-order sorted). */
/* Bits 0-9 of x to bits 0, 3, .., 27: one axis of a 30-bit Morton code (also the texel order of
 * --bin-rays, src/cmd/cmd_bake.c). */
BK_HD uint32_t bk_morton_spread10(uint32_t x)
{
    x &= 0x3FFu;
    x = (x | x << 16) & 0x030000FFu;
    x = (x | x << 8) & 0x0300F00Fu;
    x = (x | x << 4) & 0x030C30C3u;
    x = (x | x << 2) & 0x09249249u;
    return x;
}

BK_HD uint32_t bk_ray_order_cell(float o, float lo, float scale)
{
    const float c = (o - lo) * scale;
    return c >= 127.0f ? 127u : c >= 0.0f ? (uint32_t)c : 0u; /* NaN: cell 0 */
}

BK_HD uint32_t bk_ray_order_key(const bk_ray *r, bk_vec3 lo, bk_vec3 scale)
{
    const uint32_t oct = (r->dx < 0.0f ? 1u : 0u) | (r->dy < 0.0f ? 2u : 0u) | (r->dz < 0.0f ? 4u : 0u);
    return oct << 21 | bk_morton_spread10(bk_ray_order_cell(r->ox, lo.x, scale.x)) |
           bk_morton_spread10(bk_ray_order_cell(r->oy, lo.y, scale.y)) << 1 |
           bk_morton_spread10(bk_ray_order_cell(r->oz, lo.z, scale.z)) << 2;
}

/* The key's grid over the box lo..hi: 128 cells per axis. */
BK_HD bk_vec3 bk_ray_order_scale(bk_vec3 lo, bk_vec3 hi)
{
    const float ex = hi.x - lo.x, ey = hi.y - lo.y, ez = hi.z - lo.z;
    return bk_v3(ex > 0.0f ? 128.0f / ex : 0.0f, ey > 0.0f ? 128.0f / ey : 0.0f, ez > 0.0f ? 128.0f / ez : 0.0f);
}

#define BK_RAY_ORDER_KEY_BITS 24

/* A cheaper order (--ray-order binned): the key's top BK_RAY_ORDER_BINNED_BITS bits, the octant
 * above a 13-bit Morton code (16 x 16 x 32 cells in x, y, z), so that the radix sort makes two
 * passes of 8 bits instead of three. The sort is stable: within a bin the rays keep the file's
 * order. Sponza on the H100, sorted beforehand: 16 cells per axis (15 bits) traced at 2396
 * Mrays/s against 2621 with the full key (above). */
#define BK_RAY_ORDER_BINNED_BITS 16

/* --ray-order auto on a GPU: fewer than BK_RAY_ORDER_AUTO_MIN rays are traced as they come (the
 * sort's launches cost more than a trace that short), and so are rays already in a coherent order:
 * when at least BK_RAY_ORDER_COHERENT of the neighbouring pairs sampled by bk_ray_order_coherence
 * share their coarse bin (the key's top BK_RAY_ORDER_COARSE_BITS: octant, then 8 cells per axis). A
 * file sorted by the key has nearly all its neighbours in one bin, diffuse rays made in the order
 * raygen makes them a few in a hundred (a bin's share of the rays). */
#define BK_RAY_ORDER_AUTO_MIN    65536u
/* ... and so are rays into a scene whose whole tree (nodes and leaf records) is at most this many
 * bytes: it stays in every SM's L1 cache (256 KB on Hopper, shared with the block's shared memory)
 * whatever the order, so a sort only costs. The Cornell box's short rays on an H200 (4 M, 0.05 of
 * the scene's diagonal, raygen's order): 9372 Mrays/s as they come, 7725 binned. */
#define BK_RAY_ORDER_CACHED_BYTES (64u << 10)
#define BK_RAY_ORDER_COHERENT    0.5
#define BK_RAY_ORDER_COARSE_BITS 12
#define BK_RAY_ORDER_RUNS        8u  /* runs of consecutive rays sampled, evenly spread */
#define BK_RAY_ORDER_RUN         32u /* neighbouring pairs per run */

/* The share of sampled neighbouring pairs (ray i, ray i + 1) whose keys agree in their top
 * BK_RAY_ORDER_COARSE_BITS: BK_RAY_ORDER_RUNS runs of BK_RAY_ORDER_RUN pairs spread evenly over the
 * rays (all pairs of fewer), 256 pairs read from 8 places: on an H200's host 32 places cost
 * 17-24 us, a tenth of the fastest 4 M-ray trace, each place a cache and TLB miss. 1 for
 * fewer than two rays. */
BK_HD double bk_ray_order_coherence(const bk_ray *rays, uint64_t n, bk_vec3 lo, bk_vec3 scale)
{
    if (n < 2) return 1.0;
    const uint64_t pairs = n - 1, per = BK_RAY_ORDER_RUN;
    const uint64_t runs = pairs <= (uint64_t)BK_RAY_ORDER_RUNS * per ? 1 : BK_RAY_ORDER_RUNS;
    const uint64_t len = runs == 1 ? pairs : per;
    const int      shift = BK_RAY_ORDER_KEY_BITS - BK_RAY_ORDER_COARSE_BITS;
    uint64_t       same = 0;
    for (uint64_t r = 0; r < runs; ++r) {
        const uint64_t start = runs == 1 ? 0 : (pairs - len) * r / (runs - 1);
        uint32_t       prev = bk_ray_order_key(&rays[start], lo, scale) >> shift;
        for (uint64_t i = start + 1; i <= start + len; ++i) {
            const uint32_t k = bk_ray_order_key(&rays[i], lo, scale) >> shift;
            same += k == prev;
            prev = k;
        }
    }
    return (double)same / (double)(runs * len);
}

/* ---- ray set-up and primitive tests ------------------------------------------------------- */

typedef struct bk_ray_pre {
    bk_vec3 o, d, inv; /* origin, direction (parallel components zeroed: par), safe inverse */
    float   tmin, tmax;
    int     kx, ky, kz; /* watertight test: kz is the dominant axis */
    float   sx, sy, sz; /* shear constants */
    int     valid;      /* 0 for a zero direction (every |d_k| < 1e-30), a non-finite origin
                           or a NaN/empty t range: misses everything */
    int par;            /* bit k: the ray is parallel to axis k's slabs (|d_k| < 1e-30, or < 1e-30 max|d|) */
} bk_ray_pre;

BK_HD float bk_safe_inv(float d)
{
    /* 1e-30 keeps 1/d finite, so slabs never compute 0 * inf; the box stays conservative. */
    if (bk_absf(d) < 1e-30f) return d < 0.0f || (d == 0.0f && bk_float_bits(d) >> 31) ? -1e30f : 1e30f;
    return 1.0f / d;
}

BK_HDI bk_ray_pre bk_ray_prepare(const bk_ray *r)
{
    bk_ray_pre p;
    p.o = bk_v3(r->ox, r->oy, r->oz);
    p.inv = bk_v3(bk_safe_inv(r->dx), bk_safe_inv(r->dy), bk_safe_inv(r->dz));
    p.tmin = r->tmin;
    p.tmax = r->tmax;
    float ax = bk_absf(r->dx), ay = bk_absf(r->dy), az = bk_absf(r->dz);
    /* Parallel: below 1e-30, or below 1e-30 of the largest component, whose shear factor in the
     * triangle test (d_k / d_max) would underflow to 0 while the slab test still saw the ray
     * leave a box it starts on (d = (-6e32, -3e-14, 4e-20) met a face at t = 6e-34 that its box
     * test had ruled out: found by fuzzing). */
    const float lim = bk_maxf(1e-30f, bk_maxf(ax, bk_maxf(ay, az)) * 1e-30f);
    p.par = (ax < lim) | (ay < lim) << 1 | (az < lim) << 2;
    /* A component the slab tests take as parallel is zero for the triangle test too, so both
     * trace the same ray: with d_z = 8e-33 a ray 1e-32 below a face met it at t = 2 in the
     * triangle test, but never passed the face's box (found by fuzzing). */
    p.d = bk_v3((p.par & 1) ? 0.0f : r->dx, (p.par & 2) ? 0.0f : r->dy, (p.par & 4) ? 0.0f : r->dz);
    p.kz = ax >= ay ? (ax >= az ? 0 : 2) : (ay >= az ? 1 : 2);
    p.kx = p.kz == 2 ? 0 : p.kz + 1;
    p.ky = p.kx == 2 ? 0 : p.kx + 1;
    float dz = bk_comp3(p.d, p.kz);
    if (dz < 0.0f) {
        int t = p.kx;
        p.kx = p.ky;
        p.ky = t;
    } /* keep the winding */
    /* false for NaN too; a non-finite origin would make NaN distances, on which the slab tests'
     * min and max differ between host and device (bk_slab) */
    p.valid = dz != 0.0f && r->tmin <= r->tmax && bk_absf(r->ox) <= 3.40282347e38f &&
              bk_absf(r->oy) <= 3.40282347e38f && bk_absf(r->oz) <= 3.40282347e38f;
    float idz = p.valid ? 1.0f / dz : 0.0f;
    p.sx = bk_comp3(p.d, p.kx) * idz;
    p.sy = bk_comp3(p.d, p.ky) * idz;
    p.sz = idz;
    return p;
}

/* The far distance nodes are culled with when the nearest hit so far is at t: t widened by 2^-10
 * of |t|, past the amount by which a triangle test's t may fall short of the entry distance of a
 * box around the triangle, so that no node holding a hit at or before t is culled, whichever order
 * a traversal meets the hits in; the closest hit is then the least (t, id) of all hits
 * (bk_hit_better) on every layout, stack and warp. (Infinity stays infinity.)
 * The test's t errs relative to the vertices' distances from the origin, not to t: a ray that
 * starts 1e-4 of a large triangle's size away from it meets it (and another triangle on the same
 * surface) with t a few 1e-4 off, in either direction. With 2^-16 here, such a pair was culled or
 * not depending on which triangle came first, so the layouts, and on the GPU a ray's warp-mates
 * (postponed leaves), chose different triangles: one texel of a sponza 4096^2 bake differed in one
 * run of five (tests/cpu_traverse.c, check_near_ties: rays from 1e-4 to 1e-2 of a triangle's size
 * off it; its rays pass from 2^-13 on). Rays that start closer still, within about 1e-5 of the
 * size, can again depend on the order: only a distance good to the margin (made again in double
 * for every hit) would settle them, and that cost 11 % of the closest-hit rays per second on the
 * H100 (sponza, global stack), which the margin does not. */
BK_HD float bk_cull_far(float t) { return t + bk_absf(t) * 0x1p-10f; }

/* Slab test of one box against [tmin, tmax]. Writes the entry distance (clamped to tmin) even on a
 * miss, so child order never depends on tmax.
 * The min and max are single FMNMX instructions on the device (a comparison and a select each,
 * twice the instructions, with bk_minf: 24 fewer per binary node visited). Both forms give the
 * same value unless an operand is NaN, and none is: the origin is finite (bk_ray_prepare), the
 * inverse direction too (bk_safe_inv), and boxes hold finite or infinite planes, never NaN; a
 * product 0 * 1e30 is 0. (A zero's sign may differ, which no comparison sees.) */
BK_HDI int bk_slab(const bk_ray_pre *r, float lox, float hix, float loy, float hiy, float loz, float hiz, float tmin,
                   float tmax, float *tnear)
{
    float tx0 = (lox - r->o.x) * r->inv.x, tx1 = (hix - r->o.x) * r->inv.x;
    float ty0 = (loy - r->o.y) * r->inv.y, ty1 = (hiy - r->o.y) * r->inv.y;
    float tz0 = (loz - r->o.z) * r->inv.z, tz1 = (hiz - r->o.z) * r->inv.z;
    float nx = bk_minf_fast(tx0, tx1), fx = bk_maxf_fast(tx0, tx1);
    float ny = bk_minf_fast(ty0, ty1), fy = bk_maxf_fast(ty0, ty1);
    float nz = bk_minf_fast(tz0, tz1), fz = bk_maxf_fast(tz0, tz1);
    if (r->par) {
        /* Parallel to a slab: inside it for every t, or never. (On a face, 0 * 1e30 gives a
         * signed zero and the slab would shrink to one side of t = 0.) */
        if (r->par & 1) {
            int in = lox <= r->o.x && r->o.x <= hix;
            nx = in ? -BK_INF : BK_INF;
            fx = -nx;
        }
        if (r->par & 2) {
            int in = loy <= r->o.y && r->o.y <= hiy;
            ny = in ? -BK_INF : BK_INF;
            fy = -ny;
        }
        if (r->par & 4) {
            int in = loz <= r->o.z && r->o.z <= hiz;
            nz = in ? -BK_INF : BK_INF;
            fz = -nz;
        }
    }
    float tn = bk_maxf_fast(bk_maxf_fast(nx, ny), bk_maxf_fast(nz, tmin));
    float tf = bk_minf_fast(bk_minf_fast(fx, fy), bk_minf_fast(fz, tmax));
    *tnear = tn;
    return tn <= tf * 1.0000004f || tn <= tf; /* widened far distance: 1 + 2 gamma(3) */
}

/* Both boxes of a BVH node. The host computes them four lanes at a time with SSE; the results
 * are bit-identical to two bk_slab calls (same IEEE operations, min/max with the same operand
 * order), so the CPU and GPU traversals still visit the same nodes. */
BK_HDI int bk_slab2(const bk_ray_pre *r, bk_f4 xy0, bk_f4 xy1, bk_f4 z01, float tmin, float tmax, float *t0, float *t1)
{
#if BK_HOST_SSE
    if (r->par) { /* rare: the scalar test handles rays parallel to a slab */
        int h0 = bk_slab(r, xy0.x, xy0.y, xy0.z, xy0.w, z01.x, z01.y, tmin, tmax, t0);
        int h1 = bk_slab(r, xy1.x, xy1.y, xy1.z, xy1.w, z01.z, z01.w, tmin, tmax, t1);
        return h0 | (h1 << 1);
    }
    __m128 oxy = _mm_setr_ps(r->o.x, r->o.x, r->o.y, r->o.y), ixy = _mm_setr_ps(r->inv.x, r->inv.x, r->inv.y, r->inv.y);
    __m128 a = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(&xy0.x), oxy), ixy); /* tx0 tx1 ty0 ty1, child 0 */
    __m128 b = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(&xy1.x), oxy), ixy); /* child 1 */
    __m128 c = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(&z01.x), _mm_set1_ps(r->o.z)), _mm_set1_ps(r->inv.z));
    __m128 lo = _mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)), hi = _mm_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
    __m128 zlo = _mm_shuffle_ps(c, c, _MM_SHUFFLE(2, 0, 2, 0)), zhi = _mm_shuffle_ps(c, c, _MM_SHUFFLE(3, 1, 3, 1));
    __m128 mn = _mm_min_ps(lo, hi), mx = _mm_max_ps(lo, hi);       /* x0 y0 x1 y1 */
    __m128 zmn = _mm_min_ps(zlo, zhi), zmx = _mm_max_ps(zlo, zhi); /* z0 z1 z0 z1 */
    zmn = _mm_shuffle_ps(zmn, zmn, _MM_SHUFFLE(1, 1, 0, 0));
    zmx = _mm_shuffle_ps(zmx, zmx, _MM_SHUFFLE(1, 1, 0, 0));
    __m128 tn =
        _mm_max_ps(_mm_max_ps(mn, _mm_shuffle_ps(mn, mn, _MM_SHUFFLE(2, 3, 0, 1))), _mm_max_ps(zmn, _mm_set1_ps(tmin)));
    __m128 tf =
        _mm_min_ps(_mm_min_ps(mx, _mm_shuffle_ps(mx, mx, _MM_SHUFFLE(2, 3, 0, 1))), _mm_min_ps(zmx, _mm_set1_ps(tmax)));
    __m128           ok = _mm_or_ps(_mm_cmple_ps(tn, _mm_mul_ps(tf, _mm_set1_ps(1.0000004f))), _mm_cmple_ps(tn, tf));
    BK_ALIGN16 float t[4];
    _mm_store_ps(t, tn);
    *t0 = t[0];
    *t1 = t[2];
    int m = _mm_movemask_ps(ok);
    return (m & 1) | ((m >> 1) & 2);
#else
    int h0 = bk_slab(r, xy0.x, xy0.y, xy0.z, xy0.w, z01.x, z01.y, tmin, tmax, t0);
    int h1 = bk_slab(r, xy1.x, xy1.y, xy1.z, xy1.w, z01.z, z01.w, tmin, tmax, t1);
    return h0 | (h1 << 1);
#endif
}

/* Watertight ray/triangle test. Hit when tmin <= t <= tmax; writes t. */
BK_HDI int bk_tri_intersect(const bk_ray_pre *r, bk_vec3 v0, bk_vec3 v1, bk_vec3 v2, float tmax, float *t_out)
{
    bk_vec3 a = bk_sub3(v0, r->o), b = bk_sub3(v1, r->o), c = bk_sub3(v2, r->o);
    float   az = bk_comp3(a, r->kz), bz = bk_comp3(b, r->kz), cz = bk_comp3(c, r->kz);
    /* unfused on both sides, so CPU and GPU decide every hit and t identically */
    float ax = bk_sub(bk_comp3(a, r->kx), bk_mul(r->sx, az)), ay = bk_sub(bk_comp3(a, r->ky), bk_mul(r->sy, az));
    float bx = bk_sub(bk_comp3(b, r->kx), bk_mul(r->sx, bz)), by = bk_sub(bk_comp3(b, r->ky), bk_mul(r->sy, bz));
    float cx = bk_sub(bk_comp3(c, r->kx), bk_mul(r->sx, cz)), cy = bk_sub(bk_comp3(c, r->ky), bk_mul(r->sy, cz));
    float u = bk_sub(bk_mul(cx, by), bk_mul(cy, bx));
    float v = bk_sub(bk_mul(ax, cy), bk_mul(ay, cx));
    float w = bk_sub(bk_mul(bx, ay), bk_mul(by, ax));
    if (u == 0.0f || v == 0.0f || w == 0.0f) { /* on an edge: decide in double, as the paper does */
        u = (float)((double)cx * (double)by - (double)cy * (double)bx);
        v = (float)((double)ax * (double)cy - (double)ay * (double)cx);
        w = (float)((double)bx * (double)ay - (double)by * (double)ax);
    }
    if ((u < 0.0f || v < 0.0f || w < 0.0f) && (u > 0.0f || v > 0.0f || w > 0.0f)) return 0;
    float det = bk_add(bk_add(u, v), w);
    if (det == 0.0f) return 0;
    az = bk_mul(az, r->sz);
    bz = bk_mul(bz, r->sz);
    cz = bk_mul(cz, r->sz);
    float tt = bk_add(bk_add(bk_mul(u, az), bk_mul(v, bz)), bk_mul(w, cz));
    float t = tt / det;
    if (!(t >= r->tmin && t <= tmax)) return 0;
    *t_out = t;
    return 1;
}

/* The distance of a closest hit once more, precisely, for the triangle the traversal settled on:
 * t = n.(v0 - o) / n.d with n = (v1 - v0) x (v2 - v0), in double. The float vertices and ray make
 * every difference exact in double and the products good to 2^-53, so t is the exact distance to
 * the float triangle's plane to about 1e-15 before it is rounded to float (tests/cpu_traverse.c:
 * within 1e-6 relative, on long triangles at coordinates near 1,000, from rays 0.01 to 1,000
 * long). In float, v0 - o alone loses an ulp of the coordinates (6e-5 at 1,000): 2e-4 of a ray 0.2
 * long, and t from the scaled barycentrics is no better (off by 2x for rays that graze a face at
 * 1/1000 of a radian). Kept when in the ray's range (a hit at t ~ 0 of a ray that starts on a
 * surface may come out just below tmin: t stays; a degenerate triangle's n = 0 gives NaN, which is
 * not in range; a sliver's n is still good to 1e-10 of itself in double). A hit at t = 0 stays 0:
 * the ray starts on the face, and the rounding of n would only tell the faces around a vertex it
 * starts on apart by 1e-17. It takes the ray as given, not its set-up (bk_ray_pre): the trace
 * kernel passes the ray in global memory, so the direction is loaded again here instead of
 * held in registers through the traversal (1-2 % of the rays per second). Once per ray, after
 * the traversal: inside bk_tri_intersect it kept the vertices alive and cost the trace kernels 20
 * registers (KD-tree: 20 % of the rays per second). */
BK_HD float bk_tri_refine_t(const bk_ray *r, bk_vec3 v0, bk_vec3 v1, bk_vec3 v2, float t)
{
    const double e1x = (double)v1.x - v0.x, e1y = (double)v1.y - v0.y, e1z = (double)v1.z - v0.z;
    const double e2x = (double)v2.x - v0.x, e2y = (double)v2.y - v0.y, e2z = (double)v2.z - v0.z;
    /* unfused (bk_dmul, bk_dadd), so CPU and GPU agree to the bit */
    const double nx = bk_dadd(bk_dmul(e1y, e2z), -bk_dmul(e1z, e2y)),
                 ny = bk_dadd(bk_dmul(e1z, e2x), -bk_dmul(e1x, e2z));
    const double nz = bk_dadd(bk_dmul(e1x, e2y), -bk_dmul(e1y, e2x));
    const double num = bk_dadd(bk_dadd(bk_dmul(nx, (double)v0.x - r->ox), bk_dmul(ny, (double)v0.y - r->oy)),
                               bk_dmul(nz, (double)v0.z - r->oz));
    const double den = bk_dadd(bk_dadd(bk_dmul(nx, r->dx), bk_dmul(ny, r->dy)), bk_dmul(nz, r->dz));
    /* the cancellation is over once num and den are made: their quotient in float is within
     * 2e-7 of the exact one, and costs a tenth of a double division */
    const float tf = (float)num / (float)den;
    return t != 0.0f && tf >= r->tmin && tf <= r->tmax && bk_absf(tf) < BK_INF
               ? tf
               : t; /* (num or den out of float's range: no) */
}

#endif /* BK_RAY_H */
