/* bk_test_scenes.h - scenes and ray sets that tests build in memory, and the brute-force
 * reference every traversal test compares against. */
#ifndef BK_TEST_SCENES_H
#define BK_TEST_SCENES_H

#include "accel.h"
#include "bk_rng.h"
#include "bk_traverse.h"
#include "rays.h"
#include "scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A scene of n triangles from 3n positions (each triangle owns its vertices). */
static inline void bk_test_scene_alloc(bk_scene *s, uint32_t n)
{
    memset(s, 0, sizeof *s);
    s->vertex_count = 3 * n;
    s->tri_count = n;
    s->positions = calloc(9 * (size_t)n + 1, sizeof(float));
    s->tri_v = calloc(3 * (size_t)n + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < 3 * n; ++i) s->tri_v[i] = i;
}

static inline void bk_test_set_tri(bk_scene *s, uint32_t t, const float *a, const float *b, const float *c)
{
    memcpy(s->positions + 9 * (size_t)t, a, 12);
    memcpy(s->positions + 9 * (size_t)t + 3, b, 12);
    memcpy(s->positions + 9 * (size_t)t + 6, c, 12);
}

/* n random triangles of size up to `size` in the unit cube, seeded. */
static inline void bk_test_scene_soup(bk_scene *s, uint32_t n, float size, uint32_t seed)
{
    bk_test_scene_alloc(s, n);
    for (uint32_t t = 0; t < n; ++t) {
        float c[3], p[3][3];
        for (int k = 0; k < 3; ++k) c[k] = bk_rng_f(seed, t, 0, (uint32_t)k);
        for (int v = 0; v < 3; ++v)
            for (int k = 0; k < 3; ++k) p[v][k] = c[k] + size * (bk_rng_f(seed, t, 1, (uint32_t)(3 * v + k)) - 0.5f);
        bk_test_set_tri(s, t, p[0], p[1], p[2]);
    }
}

/* A closed axis-aligned box of 12 triangles with shared vertices (watertightness). */
static inline void bk_test_scene_box(bk_scene *s)
{
    memset(s, 0, sizeof *s);
    static const uint32_t q[6][4] = { { 0, 1, 3, 2 }, { 4, 6, 7, 5 }, { 0, 4, 5, 1 },
                                      { 2, 3, 7, 6 }, { 0, 2, 6, 4 }, { 1, 5, 7, 3 } };
    s->vertex_count = 8;
    s->positions = malloc(24 * sizeof(float));
    for (int i = 0; i < 8; ++i) {
        s->positions[3 * i] = (i & 4) ? 1.0f : -1.0f;
        s->positions[3 * i + 1] = (i & 2) ? 1.0f : -1.0f;
        s->positions[3 * i + 2] = (i & 1) ? 1.0f : -1.0f;
    }
    s->tri_count = 12;
    s->tri_v = malloc(36 * sizeof(uint32_t));
    for (int f = 0; f < 6; ++f) {
        uint32_t *t = s->tri_v + 6 * f;
        t[0] = q[f][0];
        t[1] = q[f][1];
        t[2] = q[f][2];
        t[3] = q[f][0];
        t[4] = q[f][2];
        t[5] = q[f][3];
    }
}

/* A closed box [-1,1]^3 whose 12 triangles face inwards, all of material 0: albedo kd, emitting
 * ke (the furnace: no path escapes). */
static inline void bk_test_scene_inward_box(bk_scene *s, float kd, float ke)
{
    bk_test_scene_box(s);
    for (uint32_t t = 0; t < 12; ++t) { /* flip the outward winding */
        uint32_t tmp = s->tri_v[3 * t + 1];
        s->tri_v[3 * t + 1] = s->tri_v[3 * t + 2];
        s->tri_v[3 * t + 2] = tmp;
    }
    s->material_count = 1;
    s->materials = (bk_material *)calloc(1, sizeof(bk_material));
    for (int k = 0; k < 3; ++k) {
        s->materials[0].kd[k] = kd;
        s->materials[0].ke[k] = ke;
    }
    s->tri_material = (uint32_t *)calloc(12, sizeof(uint32_t));
}

/* A scene of n triangles whose first two are the ground plane y = 0 (200 x 200, facing up). */
static inline void bk_test_scene_ground(bk_scene *s, uint32_t n)
{
    bk_test_scene_alloc(s, n);
    float a[3] = { -100, 0, -100 }, b[3] = { -100, 0, 100 }, c[3] = { 100, 0, 100 }, d[3] = { 100, 0, -100 };
    bk_test_set_tri(s, 0, a, b, c);
    bk_test_set_tri(s, 1, a, c, d);
}

/* Closest hit by testing every triangle of the scene with the traversal's own triangle test. */
static inline bk_hit bk_test_brute(const bk_scene *s, const bk_ray *ray, int any_hit)
{
    bk_hit h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
    float best = r.tmax;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        const float *p0 = s->positions + 3 * (size_t)s->tri_v[3 * t],
                    *p1 = s->positions + 3 * (size_t)s->tri_v[3 * t + 1],
                    *p2 = s->positions + 3 * (size_t)s->tri_v[3 * t + 2];
        float tt;
        /* the traversals' rule: the nearest, and at equal t the lowest id (the first met here) */
        if (bk_tri_intersect(&r, bk_v3(p0[0], p0[1], p0[2]), bk_v3(p1[0], p1[1], p1[2]), bk_v3(p2[0], p2[1], p2[2]),
                             best, &tt) &&
            bk_hit_better(tt, t, best, h.tri)) {
            best = tt;
            h.t = tt;
            h.tri = t;
            if (any_hit) break;
        }
    }
    if (!any_hit && h.tri != BK_NO_HIT) { /* the winner's precise distance, as the traversal */
        const float *p0 = s->positions + 3 * (size_t)s->tri_v[3 * h.tri],
                    *p1 = s->positions + 3 * (size_t)s->tri_v[3 * h.tri + 1],
                    *p2 = s->positions + 3 * (size_t)s->tri_v[3 * h.tri + 2];
        h.t = bk_tri_refine_t(ray, bk_v3(p0[0], p0[1], p0[2]), bk_v3(p1[0], p1[1], p1[2]), bk_v3(p2[0], p2[1], p2[2]),
                              h.t);
    }
    return h;
}

/* Rays that start exactly on triangle vertices and edge midpoints, plus rays whose t range is a
 * single point (tmax == tmin), some of them at the exact distance of a surface. */
static inline bk_ray *bk_test_rays_degenerate(const bk_scene *s, uint32_t n, uint32_t seed)
{
    bk_ray *rays = malloc(sizeof(bk_ray) * n);
    for (uint32_t i = 0; i < n; ++i) {
        uint32_t     t = bk_rng_u32(seed, i, 2, 0) % s->tri_count;
        const float *p0 = s->positions + 3 * (size_t)s->tri_v[3 * t],
                    *p1 = s->positions + 3 * (size_t)s->tri_v[3 * t + 1];
        float o[3];
        int   kind = (int)(i % 4);
        for (int k = 0; k < 3; ++k) o[k] = kind == 0 ? p0[k] : 0.5f * (p0[k] + p1[k]);
        float  z = 1.0f - 2.0f * bk_rng_f(seed, i, 2, 1), phi = 6.2831853f * bk_rng_f(seed, i, 2, 2);
        float  rr = sqrtf(fmaxf(0.0f, 1.0f - z * z));
        bk_ray r;
        r.ox = o[0];
        r.oy = o[1];
        r.oz = o[2];
        r.dx = rr * cosf(phi);
        r.dy = rr * sinf(phi);
        r.dz = z;
        r.tmin = 0.0f;
        r.tmax = INFINITY;
        if (kind == 2) r.tmax = 0.0f; /* tmax == tmin at the surface */
        if (kind == 3) {              /* back off, then tmin == tmax */
            r.ox -= r.dx;
            r.oy -= r.dy;
            r.oz -= r.dz;
            r.tmin = r.tmax = 1.0f;
        }
        rays[i] = r;
    }
    return rays;
}

#endif
