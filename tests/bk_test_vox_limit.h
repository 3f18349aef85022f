/* bk_test_vox_limit.h - a 4x4x4 voxel model placed at the .vox reader's translation limit
 * (BK_VOX_MAX_COORD, vox.h), for the cpu and gpu tests of issue 33's far translations.
 *
 * Usage: bk_test_lim_write(path, &bk_test_lim_places[i], at) writes a .vox of the model placed at
 * the signs of place i times `at` (BK_TEST_VOX_AT: the limit, unless a build says otherwise);
 * bk_test_lim_rays() makes rays for a loaded scene of it and, for the axis-aligned ones, the hit
 * they must get, computed here in integers: at 2^23 a float holds no fraction, so a ray can only
 * be aimed exactly along an axis, at a cell boundary (d = 0 on that axis: the cell above it, as
 * bk_vox_cell takes it) or, below 2^23, at a cell's middle.
 */
#ifndef BK_TEST_VOX_LIMIT_H
#define BK_TEST_VOX_LIMIT_H

#include "bk_test.h"
#include "bk_rng.h"
#include "scene.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BK_TEST_VOX_AT
#define BK_TEST_VOX_AT BK_VOX_MAX_COORD
#endif

/* Where and how the model is placed: t = at * (sx, sy, sz), rotation byte rot (4 = identity). */
typedef struct bk_test_lim_place {
    const char *name;
    uint8_t     rot;
    int         sx, sy, sz;
} bk_test_lim_place;
static const bk_test_lim_place bk_test_lim_places[] = {
    { "+limit", 4, 1, 1, 1 },
    { "-limit", 4, -1, -1, -1 },
    { "x mirrored at (+,-,+)", 4 | 16, 1, -1, 1 },                     /* diag(-1, 1, 1) */
    { "permuted, x mirrored at (-,+,-)", 1 | 2 << 2 | 16, -1, 1, -1 }, /* rows: -y, z, x */
};
#define BK_TEST_LIM_PLACES (int)(sizeof bk_test_lim_places / sizeof bk_test_lim_places[0])

/* The model: a 4x4x4 block with holes, so that columns differ, the corners and the middle 2x2x2
 * solid (the segment's box is the whole block, and a ray at the middle hits). */
static inline int bk_test_lim_solid(int x, int y, int z)
{
    int edge = (x == 0 || x == 3) + (y == 0 || y == 3) + (z == 0 || z == 3);
    if (edge == 0 || edge == 3) return 1;
    return (x + 2 * y + 3 * z) % 3 != 1;
}

/* The model's voxels (4 bytes each, colour index 1 + their number); returns the count. */
static inline uint32_t bk_test_lim_voxels(uint8_t xyzi[4 * 64])
{
    uint32_t n = 0;
    for (int z = 0; z < 4; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x)
                if (bk_test_lim_solid(x, y, z)) {
                    uint8_t *q = xyzi + 4 * n;
                    q[0] = (uint8_t)x;
                    q[1] = (uint8_t)y;
                    q[2] = (uint8_t)z;
                    q[3] = (uint8_t)(1 + n);
                    n++;
                }
    return n;
}

static inline void bk_test_lim_u32(FILE *f, uint32_t v)
{
    uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    fwrite(b, 1, 4, f);
}
static inline void bk_test_lim_str(FILE *f, const char *s)
{
    bk_test_lim_u32(f, (uint32_t)strlen(s));
    fputs(s, f);
}

/* A .vox (version 200): SIZE, XYZI, nTRN 0 (frame _r, _t) -> nSHP 1 -> model 0. 0 or -1. */
static inline int bk_test_lim_write_t(const char *path, uint8_t rot, long long tx, long long ty, long long tz)
{
    uint8_t  xyzi[4 * 64];
    uint32_t n = bk_test_lim_voxels(xyzi);
    char     r[16], t[80];
    snprintf(r, sizeof r, "%u", rot);
    snprintf(t, sizeof t, "%lld %lld %lld", tx, ty, tz);
    const uint32_t size_c = 12, xyzi_c = 4 + 4 * n;
    const uint32_t trn_c =
        4 + 4 + 4 + 4 + 4 + 4 + 4 + (4 + 2 + 4 + (uint32_t)strlen(r)) + (4 + 2 + 4 + (uint32_t)strlen(t));
    const uint32_t shp_c = 4 + 4 + 4 + 4 + 4;
    const uint32_t kids = 12 + size_c + 12 + xyzi_c + 12 + trn_c + 12 + shp_c;
    FILE          *f = fopen(path, "wb");
    if (!f) return -1;
    fputs("VOX ", f);
    bk_test_lim_u32(f, 200);
    fputs("MAIN", f);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, kids);
    fputs("SIZE", f);
    bk_test_lim_u32(f, size_c);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 4);
    bk_test_lim_u32(f, 4);
    bk_test_lim_u32(f, 4);
    fputs("XYZI", f);
    bk_test_lim_u32(f, xyzi_c);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, n);
    fwrite(xyzi, 4, n, f);
    fputs("nTRN", f);
    bk_test_lim_u32(f, trn_c);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 0); /* id 0, no attributes */
    bk_test_lim_u32(f, 1);
    bk_test_lim_u32(f, 0xFFFFFFFFu);
    bk_test_lim_u32(f, 0xFFFFFFFFu); /* child, reserved, layer */
    bk_test_lim_u32(f, 1);
    bk_test_lim_u32(f, 2); /* one frame of two keys */
    bk_test_lim_str(f, "_r");
    bk_test_lim_str(f, r);
    bk_test_lim_str(f, "_t");
    bk_test_lim_str(f, t);
    fputs("nSHP", f);
    bk_test_lim_u32(f, shp_c);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 1);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 1);
    bk_test_lim_u32(f, 0);
    bk_test_lim_u32(f, 0);
    return fclose(f) == 0 ? 0 : -1;
}

static inline int bk_test_lim_write(const char *path, const bk_test_lim_place *p, long long at)
{
    return bk_test_lim_write_t(path, p->rot, at * p->sx, at * p->sy, at * p->sz);
}

/* World cell w of instance `in` (model side 4) -> model cell p, in integers: p[c_r] = g_r (w_r - T_r),
 * or T_r - 1 - w_r where g_r < 0. 0 when w is outside the model. */
static inline int bk_test_lim_model_cell(const bk_vox_instance *in, const int64_t w[3], int p[3])
{
    int32_t        T[3];
    const uint32_t sz[3] = { 4, 4, 4 };
    bk_vox_instance_offset(in, sz, T);
    for (int r = 0; r < 3; ++r) {
        int     c = in->m[3 * r] ? 0 : (in->m[3 * r + 1] ? 1 : 2);
        int64_t v = in->m[3 * r + c] > 0 ? w[r] - T[r] : (int64_t)T[r] - 1 - w[r];
        if (v < 0 || v > 3) return 0;
        p[c] = (int)v;
    }
    return 1;
}

/* The inverse: model cell p -> the world cell's lower corner. */
static inline void bk_test_lim_world_cell(const bk_vox_instance *in, const int p[3], int64_t w[3])
{
    int32_t        T[3];
    const uint32_t sz[3] = { 4, 4, 4 };
    bk_vox_instance_offset(in, sz, T);
    for (int r = 0; r < 3; ++r) {
        int c = in->m[3 * r] ? 0 : (in->m[3 * r + 1] ? 1 : 2);
        w[r] = in->m[3 * r + c] > 0 ? (int64_t)T[r] + p[c] : (int64_t)T[r] - 1 - p[c];
    }
}

/* A voxel's rank among the model's (one brick: the order of bit x + 4 y + 16 z). */
static inline uint32_t bk_test_lim_rank(const int p[3])
{
    uint32_t r = 0;
    for (int b = 0; b < p[0] + 4 * p[1] + 16 * p[2]; ++b) r += (uint32_t)bk_test_lim_solid(b & 3, (b >> 2) & 3, b >> 4);
    return r;
}

/* Rays for a scene that is the model placed once (instance 0, no triangles). The first
 * *n_exact get the hit in want[] (t exact, HITS id, BK_NO_HIT for a miss); the rest, from a
 * sphere of radius 10 around the model at random points of its middle, must mostly hit, each hit
 * a voxel near the ray (bk_test_lim_check_far). malloc'ed; *n the count. */
static inline bk_ray *bk_test_lim_rays(const bk_scene *s, uint32_t n_far, uint32_t seed, uint32_t *n, uint32_t *n_exact,
                                       bk_hit **want)
{
    const bk_vox_instance *in = &s->vox_instances[0];
    const uint32_t         cap = 6 * 16 * 2 + n_far;
    bk_ray                *r = (bk_ray *)malloc(sizeof(bk_ray) * cap);
    bk_hit                *w = (bk_hit *)malloc(sizeof(bk_hit) * cap);
    uint32_t               k = 0;
    for (int a = 0; a < 3; ++a)
        for (int sg = 0; sg < 2; ++sg) {
            const int u = (a + 1) % 3, v = (a + 2) % 3;
            for (int cu = in->lo[u]; cu < in->hi[u]; ++cu)
                for (int cv = in->lo[v]; cv < in->hi[v]; ++cv)
                    for (int half = 0; half < 2; ++half) {
                        /* a cell's middle only where a float holds it */
                        double ou = cu + 0.5 * half, ov = cv + 0.5 * half;
                        if ((double)(float)ou != ou || (double)(float)ov != ov) continue;
                        float o[3], d[3] = { 0, 0, 0 };
                        o[u] = (float)ou;
                        o[v] = (float)ov;
                        o[a] = sg ? (float)(in->hi[a] + 3) : (float)(in->lo[a] - 3);
                        d[a] = sg ? -1.0f : 1.0f;
                        bk_ray *q = &r[k];
                        q->ox = o[0];
                        q->oy = o[1];
                        q->oz = o[2];
                        q->dx = d[0];
                        q->dy = d[1];
                        q->dz = d[2];
                        q->tmin = 0.0f;
                        q->tmax = BK_INF;
                        /* the first solid cell of the column, from the ray's side */
                        w[k].tri = BK_NO_HIT;
                        w[k].t = BK_INF;
                        for (int step = 0; step < in->hi[a] - in->lo[a]; ++step) {
                            int64_t c[3];
                            c[u] = cu;
                            c[v] = cv;
                            c[a] = sg ? in->hi[a] - 1 - step : in->lo[a] + step;
                            int p[3];
                            if (!bk_test_lim_model_cell(in, c, p) || !bk_test_lim_solid(p[0], p[1], p[2])) continue;
                            double plane = sg ? (double)(c[a] + 1) : (double)c[a];
                            w[k].t = (float)fabs(plane - (double)o[a]);
                            w[k].tri = s->tri_count + 6u * bk_test_lim_rank(p) + (uint32_t)(2 * a + sg);
                            break;
                        }
                        k++;
                    }
        }
    *n_exact = k;
    const double cx = 0.5 * (in->lo[0] + in->hi[0]), cy = 0.5 * (in->lo[1] + in->hi[1]),
                 cz = 0.5 * (in->lo[2] + in->hi[2]);
    for (uint32_t i = 0; i < n_far; ++i, ++k) {
        double z = 2.0 * bk_rng_f(seed, i, 0, 0) - 1.0, ang = 6.283185307179586 * bk_rng_f(seed, i, 0, 1);
        double rr = sqrt(fmax(0.0, 1.0 - z * z));
        double aim[3] = { cx + bk_rng_f(seed, i, 1, 0) - 0.5, cy + bk_rng_f(seed, i, 1, 1) - 0.5,
                          cz + bk_rng_f(seed, i, 1, 2) - 0.5 };
        float o[3] = { (float)(cx + 10.0 * rr * cos(ang)), (float)(cy + 10.0 * rr * sin(ang)), (float)(cz + 10.0 * z) };
        double  d[3] = { aim[0] - o[0], aim[1] - o[1], aim[2] - o[2] };
        double  len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        bk_ray *q = &r[k];
        q->ox = o[0];
        q->oy = o[1];
        q->oz = o[2];
        q->dx = (float)(d[0] / len);
        q->dy = (float)(d[1] / len);
        q->dz = (float)(d[2] / len);
        q->tmin = 0.0f;
        q->tmax = BK_INF;
        w[k].tri = BK_NO_HIT;
        w[k].t = -1.0f;
    }
    *n = k;
    *want = w;
    return r;
}

/* A ray at the model's middle, where floats hold no fraction of a cell: the entry point into the
 * segment rounds to a whole cell, so the walk may start a cell off and name a voxel next to the
 * path, at the t of another face (ray 165 at +2^23 met the face 5 units later, past the segment,
 * where a KD-tree leaf's range ended: a miss). What must hold: a hit names a solid voxel of the
 * model on a face the ray goes into, at t in [tmin, tmax], and the ray (in double) passes within
 * 2 cells of that voxel before t. 1 when it does; else says why. (Misses are counted by the caller.) */
static inline int bk_test_lim_check_far(const bk_scene *s, const bk_ray *r, bk_hit h, char *why, size_t why_size)
{
    const bk_vox_instance *in = &s->vox_instances[0];
    if (h.tri == BK_NO_HIT) {
        snprintf(why, why_size, "a miss");
        return 1;
    }
    if (!(h.t >= r->tmin && h.t <= r->tmax)) {
        snprintf(why, why_size, "t %.9g outside [tmin, tmax]", (double)h.t);
        return 0;
    }
    uint32_t id = h.tri - s->tri_count, face = id % 6, rank = id / 6;
    int      p[3] = { -1, -1, -1 };
    for (int b = 0, k = 0; b < 64; ++b)
        if (bk_test_lim_solid(b & 3, (b >> 2) & 3, b >> 4) && (uint32_t)k++ == rank) {
            p[0] = b & 3;
            p[1] = (b >> 2) & 3;
            p[2] = b >> 4;
        }
    if (h.tri < s->tri_count || p[0] < 0) {
        snprintf(why, why_size, "id %u names no voxel", h.tri);
        return 0;
    }
    int64_t w[3];
    bk_test_lim_world_cell(in, p, w);
    const double o[3] = { r->ox, r->oy, r->oz }, d[3] = { r->dx, r->dy, r->dz };
    const int    a = (int)face / 2;
    if ((d[a] < 0) != (int)(face & 1)) {
        snprintf(why, why_size, "face %u of a ray going %+g along it", face, d[a]);
        return 0;
    }
    double t0 = 0.0, t1 = (double)h.t;
    for (int k = 0; k < 3; ++k) {
        double lo = (double)w[k] - 2.0, hi = (double)w[k] + 3.0;
        if (d[k] == 0.0) {
            if (o[k] < lo || o[k] > hi) t0 = INFINITY;
            continue;
        }
        double ta = (lo - o[k]) / d[k], tb = (hi - o[k]) / d[k];
        t0 = fmax(t0, fmin(ta, tb));
        t1 = fmin(t1, fmax(ta, tb));
    }
    if (!(t0 <= t1)) {
        snprintf(why, why_size,
                 "id %u (voxel %d %d %d, world %lld %lld %lld, face %u): the ray passes no nearer than 2 cells", h.tri,
                 p[0], p[1], p[2], (long long)w[0], (long long)w[1], (long long)w[2], face);
        return 0;
    }
    return 1;
}

#endif /* BK_TEST_VOX_LIMIT_H */
