/* bk_voxel.h - voxels as a primitive of the ray engine: the walk through a model's bricks,
 * shared by CPU and CUDA.
 *
 * Two levels. The top level is the ordinary BVH or KD-tree (bk_traverse.h), built over a scene's
 * triangles and its voxel segments (src/geom.h: the part of one instance's model inside one 8^3
 * block of its cells, with a box tight around its voxels); a leaf record (48 bytes, like a
 * triangle's, layout in bk_accel.h) names a segment. Inside it the ray moves to model space exactly
 * (the instance's transform is a signed permutation and an integer translation: a coordinate is
 * negated and shifted by an integer, a direction's components are only permuted and negated) and
 * walks the segment's cells with a 3D DDA (Amanatides & Woo 1987, "A Fast Voxel Traversal
 * Algorithm for Ray Tracing") that crosses an empty 4x4x4 brick in one step: a model's occupancy
 * is a dense grid of bricks, each a 64-bit mask (bit x + 4 y + 16 z of the brick) and the number of
 * voxels before it in the model, so a voxel's rank (its index among the model's voxels, in brick
 * order) is that count plus a popcount. A voxel is a solid unit cube: a ray hits the first
 * occupied cell it enters at t >= tmin, on the face it enters through; a ray that starts inside an
 * occupied cell hits it at t = tmin.
 *
 * Hit ids (HITS files, docs/formats.md): triangles keep their numbers 0 .. T-1; the faces of the
 * voxels of instance i follow as base(i) + 6 * rank + face (vox_inst[2 i]; vox_inst[2 i + 1] is
 * its model), face = 2 * axis + (normal along +axis), axes in world space. base(0) = T, and each
 * instance adds 6 * its model's voxel count. For a voxel hit the traversal also leaves
 * BK_VOX_AUX | material << 3 | face in the ray's statistics (aux), so the bake needs no lookup for
 * a hit's normal and material.
 */
#ifndef BK_VOXEL_H
#define BK_VOXEL_H

#include "bk_common.h"
#include "bk_accel.h"
#include "bk_ray.h"
#include <math.h>

typedef struct bk_u4 { uint32_t x, y, z, w; } bk_u4;

BK_HD bk_u4 bk_load_brick(const bk_vox_brick *p)
{
#if BK_DEVICE_CODE
    uint4 v = __ldg((const uint4 *)p);
    bk_u4 r; r.x = v.x; r.y = v.y; r.z = v.z; r.w = v.w; return r;
#else
    bk_u4 r; r.x = p->mask_lo; r.y = p->mask_hi; r.z = p->rank; r.w = p->pad; return r;
#endif
}

BK_HD uint32_t bk_load_u8(const uint8_t *p)
{
#if BK_DEVICE_CODE
    return __ldg(p);
#else
    return *p;
#endif
}

BK_HD int bk_popc64(uint64_t v)
{
#if BK_DEVICE_CODE
    return __popcll((unsigned long long)v);
#else
    return __builtin_popcountll(v);
#endif
}

/* v with component k replaced (selects, no indexed local array on the GPU) */
BK_HD bk_vec3 bk_set3(bk_vec3 v, int k, float x) { return bk_v3(k == 0 ? x : v.x, k == 1 ? x : v.y, k == 2 ? x : v.z); }

/* The cell of coordinate x, clamped to [lo, hi] before the conversion (NaN gives lo). */
BK_HD int bk_vox_cell(float x, int lo, int hi)
{
    float c = bk_minf(bk_maxf(floorf(x), (float)lo), (float)hi);
    return c == c ? (int)c : lo;
}

/* What a voxel hit gives the caller. */
typedef struct bk_vox_hit {
    float    t;
    uint32_t id;     /* the HITS id (see the top of the file) */
    uint32_t aux;    /* BK_VOX_AUX | material << 3 | face */
} bk_vox_hit;

/* The instance whose leaf record is rec[0..2] (v0 = rec[0], which the caller has loaded; the rest
 * is loaded here, twice where that holds fewer registers through the walk) against the ray, for
 * hits whose cell the ray enters in [tlo, thi] (the caller's range: [tmin, nearest hit so far], or a KD-tree leaf's cell
 * within it, so an instance referenced by several leaves is walked once in all): returns 1 and
 * fills *out for the first occupied cell (with any_hit, aux has no material). `r` is the prepared
 * world ray.
 *
 * The walk keeps, per axis, the distance at which the ray leaves the current cell (tn), stepped
 * by |1/d| (Amanatides & Woo); a brick whose mask is empty is crossed in one step to the cell
 * beyond it, and tn is then computed afresh. The current brick is reloaded only when a step
 * leaves it. The face of a hit is the axis of the last step (at the start, of the largest
 * near-plane distance), and its t is computed exactly in world space. */
BK_HDI int bk_vox_instance_hit(const bk_accel_view *a, const bk_ray_pre *r, const bk_f4 *rec, bk_f4 v0, float tlo,
                               float thi, int any_hit, bk_vox_hit *out)
{
    float t0;
    {
        const bk_f4 v1 = bk_load4(rec + 1);
        if (!bk_slab(r, v0.x, v1.x, v0.y, v1.y, v0.z, v1.z, tlo, thi, &t0)) return 0;
    }
    const unsigned lanes = BK_WARP_LANES();          /* those that walk: they meet again at the hit */
    const float tmax = thi;
    int lx, ly, lz, hx, hy, hz, vx, vy, vz, ax;
    bk_vec3 o, d, inv;
    uint32_t bits, brick_base;
    {
        const bk_f4 v1 = bk_load4(rec + 1), v2 = bk_load4(rec + 2);
        bits = bk_float_bits(v2.w);
        brick_base = bk_float_bits(v1.w);
        /* World axis k is model axis c_k, with sign g_k: p[c_k] = g_k (x[k] - T[k]). The
         * model-space inverse direction is the world one permuted and negated: no division. */
        const uint32_t rot = bits & 127u;
        const int c0 = (int)(rot & 3u), c1 = (int)((rot >> 2) & 3u), c2 = 3 - c0 - c1;
        const float g0 = (rot & 16u) ? -1.0f : 1.0f, g1 = (rot & 32u) ? -1.0f : 1.0f, g2 = (rot & 64u) ? -1.0f : 1.0f;
        bk_vec3 mlo = bk_v3(0, 0, 0), mhi = mlo;
        o = mlo; d = mlo; inv = mlo;
        o = bk_set3(o, c0, g0 * (r->o.x - v2.x)); d = bk_set3(d, c0, g0 * r->d.x); inv = bk_set3(inv, c0, g0 * r->inv.x);
        o = bk_set3(o, c1, g1 * (r->o.y - v2.y)); d = bk_set3(d, c1, g1 * r->d.y); inv = bk_set3(inv, c1, g1 * r->inv.y);
        o = bk_set3(o, c2, g2 * (r->o.z - v2.z)); d = bk_set3(d, c2, g2 * r->d.z); inv = bk_set3(inv, c2, g2 * r->inv.z);
        /* the segment's cells in model space: its world box moved back (integers, exact) */
        mlo = bk_set3(mlo, c0, bk_minf(g0 * (v0.x - v2.x), g0 * (v1.x - v2.x))); mhi = bk_set3(mhi, c0, bk_maxf(g0 * (v0.x - v2.x), g0 * (v1.x - v2.x)));
        mlo = bk_set3(mlo, c1, bk_minf(g1 * (v0.y - v2.y), g1 * (v1.y - v2.y))); mhi = bk_set3(mhi, c1, bk_maxf(g1 * (v0.y - v2.y), g1 * (v1.y - v2.y)));
        mlo = bk_set3(mlo, c2, bk_minf(g2 * (v0.z - v2.z), g2 * (v1.z - v2.z))); mhi = bk_set3(mhi, c2, bk_maxf(g2 * (v0.z - v2.z), g2 * (v1.z - v2.z)));
        lx = (int)mlo.x; ly = (int)mlo.y; lz = (int)mlo.z; hx = (int)mhi.x; hy = (int)mhi.y; hz = (int)mhi.z;
        /* the first cell: where the ray is at t0, clamped into the model
         * (unfused multiply and add, as everywhere a result must match between CPU and GPU) */
        vx = bk_vox_cell(bk_add(o.x, bk_mul(d.x, t0)), lx, hx - 1); vy = bk_vox_cell(bk_add(o.y, bk_mul(d.y, t0)), ly, hy - 1);
        vz = bk_vox_cell(bk_add(o.z, bk_mul(d.z, t0)), lz, hz - 1);
        /* the axis the ray entered the cell along */
        const float tx = d.x != 0.0f ? ((float)(vx + (d.x < 0.0f)) - o.x) * inv.x : -BK_INF;
        const float ty = d.y != 0.0f ? ((float)(vy + (d.y < 0.0f)) - o.y) * inv.y : -BK_INF;
        const float tz = d.z != 0.0f ? ((float)(vz + (d.z < 0.0f)) - o.z) * inv.z : -BK_INF;
        ax = tx >= ty ? (tx >= tz ? 0 : 2) : (ty >= tz ? 1 : 2);
    }
    /* The walk's state besides the cell: load 2 = tn to be computed from the cell and its brick to
     * be loaded, 1 = the brick only (a step left it), 0 = nothing; bit is the cell's in the brick,
     * which a step inside the brick moves by 1, 4 or 16. What follows from the direction alone is
     * held in one word (the steps' signs and their moves of bit) or taken where it is used (|1/d|):
     * the walk runs inside the traversal's loop, and registers held here were spills there. */
    float tnx = 0, tny = 0, tnz = 0;
    int load = 2, bit = 0, hit = 0;
    /* per axis k, bits 8k..8k+5: what a step adds to bit, modulo 64 (+-1, +-4, +-16; a step that
     * stays in the brick never wraps), and bit 24 + k: the step is +1 */
    const uint32_t steps = (d.x > 0.0f ? 1u | 1u << 24 : 63u) | (d.y > 0.0f ? 4u << 8 | 1u << 25 : 60u << 8) |
                           (d.z > 0.0f ? 16u << 16 | 1u << 26 : 48u << 16);
    uint64_t mask = 0;
    uint32_t rank0 = 0;
    for (;;) {
        if (load) {
            if (load == 2) {
                tnx = d.x != 0.0f ? ((float)(vx + (d.x > 0.0f)) - o.x) * inv.x : BK_INF;
                tny = d.y != 0.0f ? ((float)(vy + (d.y > 0.0f)) - o.y) * inv.y : BK_INF;
                tnz = d.z != 0.0f ? ((float)(vz + (d.z > 0.0f)) - o.z) * inv.z : BK_INF;
            }
            const int nbx = (int)((bits >> 7) & 127u), nby = (int)((bits >> 14) & 127u);
            bk_u4 b = bk_load_brick(a->vox_bricks + brick_base + (uint32_t)((vx >> 2) + nbx * ((vy >> 2) + nby * (vz >> 2))));
            mask = (uint64_t)b.y << 32 | b.x;
            rank0 = b.z;
            bit = (vx & 3) | (vy & 3) << 2 | (vz & 3) << 4;
            load = 0;
        }
        if (mask == 0) {
            /* an empty brick: across the nearest of its far planes in one step, into the first
             * cell beyond it; the other coordinates from the crossing point, kept in the brick */
            const int bx = vx & ~3, by = vy & ~3, bz = vz & ~3;
            float tx = d.x != 0.0f ? ((float)(bx + (d.x > 0.0f ? 4 : 0)) - o.x) * inv.x : BK_INF;
            float ty = d.y != 0.0f ? ((float)(by + (d.y > 0.0f ? 4 : 0)) - o.y) * inv.y : BK_INF;
            float tz = d.z != 0.0f ? ((float)(bz + (d.z > 0.0f ? 4 : 0)) - o.z) * inv.z : BK_INF;
            ax = tx <= ty ? (tx <= tz ? 0 : 2) : (ty <= tz ? 1 : 2);
            float te = bk_minf(bk_minf(tx, ty), tz);
            if (!(te <= tmax)) break;
            int nx = bk_vox_cell(bk_add(o.x, bk_mul(d.x, te)), bx, bx + 3);
            int ny = bk_vox_cell(bk_add(o.y, bk_mul(d.y, te)), by, by + 3);
            int nz = bk_vox_cell(bk_add(o.z, bk_mul(d.z, te)), bz, bz + 3);
            if (ax == 0) nx = d.x > 0.0f ? bx + 4 : bx - 1;
            if (ax == 1) ny = d.y > 0.0f ? by + 4 : by - 1;
            if (ax == 2) nz = d.z > 0.0f ? bz + 4 : bz - 1;
            if (nx < lx || nx >= hx || ny < ly || ny >= hy || nz < lz || nz >= hz) break;
            vx = nx; vy = ny; vz = nz;
            load = 2;
            continue;
        }
        if ((mask >> bit) & 1u) { hit = 1; break; }
        /* one cell on, across the nearest far plane. Selects, not a branch per axis: the lanes
         * of a warp step along different axes, and three branches ran one after another. */
        const int sx = tnx <= tny && tnx <= tnz, sy = !sx && tny <= tnz, sz = !sx && !sy;
        if (!((sx ? tnx : (sy ? tny : tnz)) <= tmax)) break;
        ax = sx ? 0 : (sy ? 1 : 2);
        const int pos = (int)(steps >> (24 + ax)) & 1, st = pos ? 1 : -1;
        vx += sx ? st : 0; vy += sy ? st : 0; vz += sz ? st : 0;
        if (vx < lx || vx >= hx || vy < ly || vy >= hy || vz < lz || vz >= hz) break;
        /* (|1/d| as fabsf: inv is never NaN or zero, where it and bk_absf could differ) */
        tnx = sx ? bk_add(tnx, bk_absf_fast(inv.x)) : tnx;
        tny = sy ? bk_add(tny, bk_absf_fast(inv.y)) : tny;
        tnz = sz ? bk_add(tnz, bk_absf_fast(inv.z)) : tnz;
        /* a step along +axis enters the next brick at low bits 0, along -axis at 3 */
        if ((((sx ? vx : (sy ? vy : vz)) + 1 - pos) & 3) == 0) load = 1;
        else bit = (bit + (int)(steps >> (8 * ax))) & 63;
    }
    /* The hit, out of the walk's loop, once for all the lanes that found one: without the sync the
     * device code took it inside the loop, for each group of lanes that ended there together (two
     * lanes active on average, and about two groups per walk on the 54k-object world). */
    BK_WARP_SYNC(lanes);
    if (!hit) return 0;
    const bk_f4 v2 = bk_load4(rec + 2);
    const uint32_t rot = bits & 127u;
    const int c0 = (int)(rot & 3u), c1 = (int)((rot >> 2) & 3u);
    const int wk = c0 == ax ? 0 : (c1 == ax ? 1 : 2);    /* the face's world axis */
    const float g = (rot & (16u << wk)) ? -1.0f : 1.0f;
    const float dm = bk_comp3(d, ax);                      /* the step was against its sign */
    const int neg = dm < 0.0f;
    /* t in world space, where the face's plane is an integer: one subtraction (exact near the
     * plane) and one division, so t is within an ulp or two of exact */
    const float plane = bk_add(bk_comp3(bk_f4_xyz(v2), wk), bk_mul(g, (float)((ax == 0 ? vx : (ax == 1 ? vy : vz)) + neg)));
    const float dw = bk_comp3(r->d, wk);
    float t = dw != 0.0f ? (plane - bk_comp3(r->o, wk)) / dw : r->tmin;
    if (t < r->tmin) t = r->tmin;                 /* starts inside the cell */
    if (t > tmax) return 0;
    const uint32_t rank = rank0 + (uint32_t)bk_popc64(mask & (((uint64_t)1 << bit) - 1u));
    const uint32_t inst = bk_float_bits(v0.w) & (BK_PRIM_VOX_BIT - 1u);
    const uint32_t face_base = bk_load_u32(a->vox_inst + 2 * inst);
    /* the face's normal in model space is -step along ax; in the world, row wk of M applied to it */
    const uint32_t face = (uint32_t)(2 * wk) + (g * (neg ? 1.0f : -1.0f) > 0.0f ? 1u : 0u);
    out->t = t;
    out->id = face_base + 6u * rank + face;
    out->aux = BK_VOX_AUX | face;
    if (!any_hit) {           /* an occlusion query needs no material: two loads fewer */
        const uint32_t model = bk_load_u32(a->vox_inst + 2 * inst + 1);
        bk_u4 m1 = bk_load_brick((const bk_vox_brick *)(a->vox_models + model) + 1);
        const uint32_t colour = bk_load_u8(a->vox_colours + m1.x + rank);   /* m1: colour, material base */
        out->aux |= (m1.y + colour) << 3;
    }
    return 1;
}

#endif /* BK_VOXEL_H */
