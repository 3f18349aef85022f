/* bk_voxel.h - voxels as a primitive of the ray engine: the walk through a model's bricks,
 * shared by CPU and CUDA.
 *
 * Two levels. The top level is the ordinary BVH or KD-tree (bk_traverse.h), built over a scene's
 * triangles and its voxel segments (src/accel/geom.h: the part of one instance's model inside one 8^3
 * block of its cells, with a box tight around its voxels); a leaf record (48 bytes, like a
 * triangle's, layout in bk_accel.h) names a segment. Inside it the ray walks the segment's cells
 * in world space with a 3D DDA (Amanatides & Woo 1987, "A Fast Voxel Traversal Algorithm for Ray
 * Tracing") that crosses an empty 4x4x4 brick in one step. The instance's transform is a signed
 * permutation and an integer translation, so its model's cells are world cells and its bricks are
 * blocks of them; only a brick's lookup moves the cell to model space (integers, exact: the leaf
 * record's box and translation are floats, and every cell and brick plane a walk can meet is an
 * integer within +-2^24, which a float holds, or bk_geom_init refuses the scene; beyond that they
 * rounded, and a cell mapped outside its model read bricks out of bounds). A model's
 * occupancy is a dense grid of bricks, each a 64-bit mask (bit x + 4 y + 16 z of the brick, model
 * axes) and the number of voxels before it in the model, so a voxel's rank (its index among the
 * model's voxels, in brick order) is that count plus a popcount. A voxel is a solid unit cube: a
 * ray hits the first occupied cell it enters at t >= tmin, on the face it enters through; a ray
 * that starts inside an occupied cell hits it at t = tmin, and one that starts on a cell's face
 * is in the cell it goes into (so a ray leaving a voxel's face does not hit that voxel, whatever
 * the instance's rotation). Walking world cells needs no copy of the ray permuted into the model
 * at each segment: the voxel kernels spill less.
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

typedef struct bk_u4 {
    uint32_t x, y, z, w;
} bk_u4;

BK_HD bk_u4 bk_load_brick(const bk_vox_brick *p)
{
#if BK_DEVICE_CODE
    uint4 v = __ldg((const uint4 *)p);
    bk_u4 r;
    r.x = v.x;
    r.y = v.y;
    r.z = v.z;
    r.w = v.w;
    return r;
#else
    bk_u4 r;
    r.x = p->mask_lo;
    r.y = p->mask_hi;
    r.z = p->rank;
    r.w = p->pad;
    return r;
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

/* The cell that a ray going along d (one direction component) is in at coordinate x: on a cell
 * boundary, the cell ahead of it, so a ray that leaves a voxel's face starts in the cell beyond
 * the face, whichever way it goes. Clamped to [lo, hi] (NaN gives lo); *past (when not NULL) gets
 * 1 when the cell lies beyond hi going up, or below lo going down: the ray is leaving the range. */
BK_HD int bk_vox_cell(float x, float d, int lo, int hi, int *past)
{
    float c = d < 0.0f ? ceilf(x) - 1.0f : floorf(x);
    if (past) *past |= (d > 0.0f && c > (float)hi) || (d < 0.0f && c < (float)lo);
    c = bk_minf(bk_maxf(c, (float)lo), (float)hi);
    return c == c ? (int)c : lo;
}

/* What a voxel hit gives the caller. */
typedef struct bk_vox_hit {
    float    t;
    uint32_t id;  /* the HITS id (see the top of the file) */
    uint32_t aux; /* BK_VOX_AUX | material << 3 | face */
} bk_vox_hit;

/* The instance whose leaf record is rec[0..2] (v0 = rec[0], which the caller has loaded; the rest
 * is loaded here, twice where that holds fewer registers through the walk) against the ray, for
 * hits whose cell the ray enters in [tlo, thi] (the caller's range: [tmin, nearest hit so far], or a KD-tree leaf's
 * cell within it, so an instance referenced by several leaves is walked once in all): returns 1 and fills *out for the
 * first occupied cell (with any_hit, aux has no material). `r` is the prepared world ray.
 *
 * The walk keeps, per axis, the distance at which the ray leaves the current cell (tn), stepped
 * by |1/d| (Amanatides & Woo); a brick whose mask is empty is crossed in one step to the cell
 * beyond it, and tn is then computed afresh. The current brick is reloaded only when a step
 * leaves it. The face of a hit is the axis of the last step (at the start, of the largest
 * near-plane distance), and its t is computed exactly in world space.
 * Long: the walk's state must stay in registers inside the traversal loops of the CPU and the CUDA
 * backend (see "load" below), and CUDA code split into helpers cannot be checked for spills here. */
BK_HDI int bk_vox_instance_hit(const bk_accel_view *a, const bk_ray_pre *r, const bk_f4 *rec, bk_f4 v0, float tlo,
                               float thi, int any_hit, bk_vox_hit *out)
{
    float t0;
    {
        const bk_f4 v1 = bk_load4(rec + 1);
        if (!bk_slab(r, v0.x, v1.x, v0.y, v1.y, v0.z, v1.z, tlo, thi, &t0)) return 0;
    }
    /* The walk is in world space, on the prepared ray itself: world cells are the model's cells
     * moved by the instance's signed permutation and integer translation, and the model's 4^3
     * bricks are world blocks too, starting where (w - T) % 4 == 0 along each axis (T is an
     * integer). Only a brick's lookup needs the model cell. The first cell: where the ray is at
     * t0, moved into the segment's box where rounding left an entry point outside it; a ray that
     * only touches the box there, going away from it (from a voxel's face, out of the solid),
     * has no cell to walk. (Unfused multiply and add, as everywhere a result must match between
     * CPU and GPU.) */
    int lx, ly, lz, hx, hy, hz, vx, vy, vz, ax;
    {
        const bk_f4 v1 = bk_load4(rec + 1);
        lx = (int)v0.x;
        ly = (int)v0.y;
        lz = (int)v0.z;
        hx = (int)v1.x;
        hy = (int)v1.y;
        hz = (int)v1.z;
        int past = 0;
        vx = bk_vox_cell(bk_add(r->o.x, bk_mul(r->d.x, t0)), r->d.x, lx, hx - 1, &past);
        vy = bk_vox_cell(bk_add(r->o.y, bk_mul(r->d.y, t0)), r->d.y, ly, hy - 1, &past);
        vz = bk_vox_cell(bk_add(r->o.z, bk_mul(r->d.z, t0)), r->d.z, lz, hz - 1, &past);
        if (past) return 0;
    }
    const unsigned lanes = BK_WARP_LANES(); /* those that walk: they meet again at the hit */
    const float    tmax = thi;
    uint32_t       steps;
    {
        const bk_f4 v2 = bk_load4(rec + 2);
        /* the axis the ray entered the cell along */
        const float tx = r->d.x != 0.0f ? ((float)(vx + (r->d.x < 0.0f)) - r->o.x) * r->inv.x : -BK_INF;
        const float ty = r->d.y != 0.0f ? ((float)(vy + (r->d.y < 0.0f)) - r->o.y) * r->inv.y : -BK_INF;
        const float tz = r->d.z != 0.0f ? ((float)(vz + (r->d.z < 0.0f)) - r->o.z) * r->inv.z : -BK_INF;
        ax = tx >= ty ? (tx >= tz ? 0 : 2) : (ty >= tz ? 1 : 2);
        /* per world axis k, bits 8k..8k+5: what a step along the ray adds to the cell's bit in
         * its brick, modulo 64 (world axis k is model axis c_k with sign g_k, so the move is
         * +-4^c_k; a step that stays in the brick never wraps), bits 8k+6..8k+7: T_k mod 4 (where
         * the world's bricks start), and bit 24 + k: the step is +1 */
        const uint32_t rot = bk_float_bits(v2.w) & 127u;
        const uint32_t c0 = rot & 3u, c1 = (rot >> 2) & 3u, c2 = 3u - c0 - c1;
        const int      ux = (r->d.x > 0.0f) != ((rot & 16u) != 0), uy = (r->d.y > 0.0f) != ((rot & 32u) != 0),
                  uz = (r->d.z > 0.0f) != ((rot & 64u) != 0); /* the step is +1 in the model */
        const uint32_t mx = (ux ? 1u << 2 * c0 : 64u - (1u << 2 * c0)) | ((uint32_t)(int)v2.x & 3u) << 6;
        const uint32_t my = (uy ? 1u << 2 * c1 : 64u - (1u << 2 * c1)) | ((uint32_t)(int)v2.y & 3u) << 6;
        const uint32_t mz = (uz ? 1u << 2 * c2 : 64u - (1u << 2 * c2)) | ((uint32_t)(int)v2.z & 3u) << 6;
        steps = mx | my << 8 | mz << 16 | (r->d.x > 0.0f ? 1u << 24 : 0u) | (r->d.y > 0.0f ? 1u << 25 : 0u) |
                (r->d.z > 0.0f ? 1u << 26 : 0u);
    }
    /* The walk's state besides the cell: load 2 = tn to be computed from the cell and its brick to
     * be loaded, 1 = the brick only (a step left it), 0 = nothing; bit is the cell's in the brick,
     * which a step inside the brick moves by 1, 4 or 16. What follows from the direction alone is
     * held in one word (steps) or taken where it is used (|1/d|): the walk runs inside the
     * traversal's loop, and registers held here were spills there. */
    float    tnx = 0, tny = 0, tnz = 0;
    int      load = 2, bit = 0, hit = 0;
    uint64_t mask = 0;
    uint32_t rank0 = 0;
    for (;;) {
        if (load) {
            if (load == 2) {
                tnx = r->d.x != 0.0f ? ((float)(vx + (r->d.x > 0.0f)) - r->o.x) * r->inv.x : BK_INF;
                tny = r->d.y != 0.0f ? ((float)(vy + (r->d.y > 0.0f)) - r->o.y) * r->inv.y : BK_INF;
                tnz = r->d.z != 0.0f ? ((float)(vz + (r->d.z > 0.0f)) - r->o.z) * r->inv.z : BK_INF;
            }
            /* the model cell: p[c_k] = g_k (w_k - T_k), the cell T_k - 1 - w_k where g_k < 0 */
            const bk_f4    v1 = bk_load4(rec + 1), v2 = bk_load4(rec + 2);
            const uint32_t bits = bk_float_bits(v2.w), rot = bits & 127u;
            const uint32_t c0 = rot & 3u, c1 = (rot >> 2) & 3u, c2 = 3u - c0 - c1;
            const int      px = (rot & 16u) ? (int)v2.x - 1 - vx : vx - (int)v2.x;
            const int      py = (rot & 32u) ? (int)v2.y - 1 - vy : vy - (int)v2.y;
            const int      pz = (rot & 64u) ? (int)v2.z - 1 - vz : vz - (int)v2.z;
            const uint32_t nbx = (bits >> 7) & 127u, nbxy = nbx * ((bits >> 14) & 127u);
            const uint32_t brick = (uint32_t)(px >> 2) * (c0 == 0 ? 1u : (c0 == 1 ? nbx : nbxy)) +
                                   (uint32_t)(py >> 2) * (c1 == 0 ? 1u : (c1 == 1 ? nbx : nbxy)) +
                                   (uint32_t)(pz >> 2) * (c2 == 0 ? 1u : (c2 == 1 ? nbx : nbxy));
            bk_u4 b = bk_load_brick(a->vox_bricks + bk_float_bits(v1.w) + brick);
            mask = (uint64_t)b.y << 32 | b.x;
            rank0 = b.z;
            bit = (px & 3) << (2 * c0) | (py & 3) << (2 * c1) | (pz & 3) << (2 * c2);
            load = 0;
        }
        if (mask == 0) {
            /* an empty brick: across the nearest of its far planes in one step, into the first
             * cell beyond it; the other coordinates from the crossing point, kept in the brick */
            const int bx = vx - ((vx - (int)(steps >> 6)) & 3), by = vy - ((vy - (int)(steps >> 14)) & 3),
                      bz = vz - ((vz - (int)(steps >> 22)) & 3);
            float tx = r->d.x != 0.0f ? ((float)(bx + (r->d.x > 0.0f ? 4 : 0)) - r->o.x) * r->inv.x : BK_INF;
            float ty = r->d.y != 0.0f ? ((float)(by + (r->d.y > 0.0f ? 4 : 0)) - r->o.y) * r->inv.y : BK_INF;
            float tz = r->d.z != 0.0f ? ((float)(bz + (r->d.z > 0.0f ? 4 : 0)) - r->o.z) * r->inv.z : BK_INF;
            ax = tx <= ty ? (tx <= tz ? 0 : 2) : (ty <= tz ? 1 : 2);
            float te = bk_minf(bk_minf(tx, ty), tz);
            if (!(te <= tmax)) break;
            int nx = bk_vox_cell(bk_add(r->o.x, bk_mul(r->d.x, te)), r->d.x, bx, bx + 3, NULL);
            int ny = bk_vox_cell(bk_add(r->o.y, bk_mul(r->d.y, te)), r->d.y, by, by + 3, NULL);
            int nz = bk_vox_cell(bk_add(r->o.z, bk_mul(r->d.z, te)), r->d.z, bz, bz + 3, NULL);
            if (ax == 0) nx = r->d.x > 0.0f ? bx + 4 : bx - 1;
            if (ax == 1) ny = r->d.y > 0.0f ? by + 4 : by - 1;
            if (ax == 2) nz = r->d.z > 0.0f ? bz + 4 : bz - 1;
            if (nx < lx || nx >= hx || ny < ly || ny >= hy || nz < lz || nz >= hz) break;
            vx = nx;
            vy = ny;
            vz = nz;
            load = 2;
            continue;
        }
        if ((mask >> bit) & 1u) {
            hit = 1;
            break;
        }
        /* one cell on, across the nearest far plane. Selects, not a branch per axis: the lanes
         * of a warp step along different axes, and three branches ran one after another. */
        const int sx = tnx <= tny && tnx <= tnz, sy = !sx && tny <= tnz, sz = !sx && !sy;
        if (!((sx ? tnx : (sy ? tny : tnz)) <= tmax)) break;
        ax = sx ? 0 : (sy ? 1 : 2);
        const uint32_t sa = steps >> (8 * ax);
        const int      pos = (int)(steps >> (24 + ax)) & 1, st = pos ? 1 : -1;
        vx += sx ? st : 0;
        vy += sy ? st : 0;
        vz += sz ? st : 0;
        if (vx < lx || vx >= hx || vy < ly || vy >= hy || vz < lz || vz >= hz) break;
        /* (|1/d| as fabsf: inv is never NaN or zero, where it and bk_absf could differ) */
        tnx = sx ? bk_add(tnx, bk_absf_fast(r->inv.x)) : tnx;
        tny = sy ? bk_add(tny, bk_absf_fast(r->inv.y)) : tny;
        tnz = sz ? bk_add(tnz, bk_absf_fast(r->inv.z)) : tnz;
        /* a step along +axis enters the next brick at (w - T) % 4 == 0, along -axis at 3 */
        if ((((sx ? vx : (sy ? vy : vz)) + 1 - pos - (int)(sa >> 6)) & 3) == 0) load = 1;
        else bit = (bit + (int)sa) & 63;
    }
    /* The hit, out of the walk's loop, once for all the lanes that found one: without the sync the
     * device code took it inside the loop, for each group of lanes that ended there together (two
     * lanes active on average, and about two groups per walk on the 54k-object world). */
    BK_WARP_SYNC(lanes);
    if (!hit) return 0;
    /* the face's plane, an integer, in world space: one subtraction (exact near the plane) and one
     * division, so t is within an ulp or two of exact */
    const float dw = bk_comp3(r->d, ax); /* the step was against the normal */
    const int   neg = dw < 0.0f;
    const float plane = (float)((ax == 0 ? vx : (ax == 1 ? vy : vz)) + neg);
    float       t = dw != 0.0f ? (plane - bk_comp3(r->o, ax)) / dw : r->tmin;
    if (t < r->tmin) t = r->tmin; /* starts inside the cell */
    if (t > tmax) return 0;
    const uint32_t rank = rank0 + (uint32_t)bk_popc64(mask & (((uint64_t)1 << bit) - 1u));
    const uint32_t inst = bk_float_bits(bk_load4(rec).w) & (BK_PRIM_VOX_BIT - 1u);
    const uint32_t face_base = bk_load_u32(a->vox_inst + 2 * inst);
    const uint32_t face = (uint32_t)(2 * ax + neg); /* the normal is along +axis when d is not */
    out->t = t;
    out->id = face_base + 6u * rank + face;
    out->aux = BK_VOX_AUX | face;
    if (!any_hit) { /* an occlusion query needs no material: two loads fewer */
        const uint32_t model = bk_load_u32(a->vox_inst + 2 * inst + 1);
        bk_u4          m1 = bk_load_brick((const bk_vox_brick *)(a->vox_models + model) + 1);
        const uint32_t colour = bk_load_u8(a->vox_colours + m1.x + rank); /* m1: colour, material base */
        out->aux |= (m1.y + colour) << 3;
    }
    return 1;
}

#endif /* BK_VOXEL_H */
