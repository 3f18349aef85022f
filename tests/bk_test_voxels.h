/* bk_test_voxels.h - voxel scenes built in memory for tests, the same surface as triangles, and
 * rays that start outside the solid.
 *
 * The reference mesh is made here independently of src/accel/geom.c and kernels/bk_voxel.h: every face
 * of a voxel whose neighbour in its model is empty becomes two triangles in world space, and each
 * triangle knows the HITS id the voxel path must report for that face (bk_voxel.h): the face base
 * of its instance + 6 * rank + face, rank counted here from sorted brick keys.
 */
#ifndef BK_TEST_VOXELS_H
#define BK_TEST_VOXELS_H

#include "bk_rng.h"
#include "bk_traverse.h"
#include "scene.h"

#include <stdlib.h>
#include <string.h>

/* Appends a model of n voxels (xyzi: 4 bytes each) to s; returns its index. */
static inline uint32_t bk_test_add_model(bk_scene *s, uint32_t sx, uint32_t sy, uint32_t sz, const uint8_t *xyzi,
                                         uint32_t n)
{
    s->vox_models = realloc(s->vox_models, sizeof(bk_vox_model) * (s->vox_model_count + 1));
    bk_vox_model *m = &s->vox_models[s->vox_model_count];
    m->size[0] = sx;
    m->size[1] = sy;
    m->size[2] = sz;
    m->voxel_count = n;
    m->xyzi = malloc(4 * (size_t)n + 1);
    memcpy(m->xyzi, xyzi, 4 * (size_t)n);
    m->material_base = 0;
    return s->vox_model_count++;
}

/* Places model with rotation m (row-major signed permutation) and translation t. */
static inline void bk_test_add_instance(bk_scene *s, uint32_t model, const int8_t m[9], int32_t tx, int32_t ty,
                                        int32_t tz)
{
    s->vox_instances = realloc(s->vox_instances, sizeof(bk_vox_instance) * (s->vox_instance_count + 1));
    bk_vox_instance *in = &s->vox_instances[s->vox_instance_count++];
    memset(in, 0, sizeof *in);
    in->model = model;
    memcpy(in->m, m, 9);
    in->rot = bk_vox_rot_byte(m);
    in->t[0] = tx;
    in->t[1] = ty;
    in->t[2] = tz;
    bk_vox_instance_place(in, s->vox_models[model].size);
}

/* The 48 valid rotation bytes. */
static inline int bk_test_rot_bytes(uint8_t out[48])
{
    int n = 0;
    for (int b = 0; b < 128; ++b) {
        int8_t m[9];
        if (bk_vox_rot_matrix((uint8_t)b, m)) out[n++] = (uint8_t)b;
    }
    return n;
}

/* A scene of `models` random models (sides 1..max_side, occupancy `fill`) placed `instances`
 * times with random rotations on a grid whose cells are 2 voxels wider than any model, so no two
 * instances touch. Seeded. */
static inline void bk_test_vox_scene(bk_scene *s, uint32_t models, uint32_t instances, int max_side, float fill,
                                     uint32_t seed)
{
    memset(s, 0, sizeof *s);
    uint8_t rots[48];
    bk_test_rot_bytes(rots);
    s->vox_model_count = models;
    s->vox_models = calloc(models, sizeof *s->vox_models);
    s->material_count = 256;
    s->materials = calloc(256, sizeof *s->materials);
    for (int k = 0; k < 256; ++k) {
        s->materials[k].kd[0] = s->materials[k].kd[1] = s->materials[k].kd[2] = 0.5f + 0.5f * (float)(k % 2);
    }
    for (uint32_t m = 0; m < models; ++m) {
        bk_vox_model *vm = &s->vox_models[m];
        for (int k = 0; k < 3; ++k)
            vm->size[k] = 1 + (uint32_t)(bk_rng_f(seed, m, 0, (uint32_t)k) * (float)max_side) % (uint32_t)max_side;
        uint32_t cells = vm->size[0] * vm->size[1] * vm->size[2];
        vm->xyzi = malloc(4 * (size_t)cells + 4);
        for (uint32_t c = 0; c < cells; ++c) {
            if (bk_rng_f(seed, m, 1 + c, 3) >= fill && !(c == 0 && vm->voxel_count == 0 && m % 2)) continue;
            uint8_t *q = vm->xyzi + 4 * (size_t)vm->voxel_count++;
            q[0] = (uint8_t)(c % vm->size[0]);
            q[1] = (uint8_t)(c / vm->size[0] % vm->size[1]);
            q[2] = (uint8_t)(c / (vm->size[0] * vm->size[1]));
            q[3] = (uint8_t)(1 + (uint32_t)(bk_rng_f(seed, m, 1 + c, 4) * 254.0f));
        }
    }
    s->vox_instance_count = instances;
    s->vox_instances = calloc(instances, sizeof *s->vox_instances);
    int cell = max_side + 2, side = 1;
    while ((uint32_t)(side * side * side) < instances) side++;
    for (uint32_t i = 0; i < instances; ++i) {
        bk_vox_instance *in = &s->vox_instances[i];
        in->model = (uint32_t)(bk_rng_f(seed, 1000 + i, 0, 0) * (float)models) % models;
        in->rot = rots[(uint32_t)(bk_rng_f(seed, 1000 + i, 0, 1) * 48.0f) % 48];
        bk_vox_rot_matrix(in->rot, in->m);
        int g[3] = { (int)i % side, (int)i / side % side, (int)i / (side * side) };
        /* the box centre near the grid cell's centre: t is where floor(size / 2) lands */
        for (int k = 0; k < 3; ++k) in->t[k] = g[k] * cell + cell / 2 - 40;
        bk_vox_instance_place(in, s->vox_models[in->model].size);
    }
}

/* Is world cell (x, y, z) (the unit cube with that lower corner) occupied in some instance?
 * Each model's cells are looked up in a dense grid made on first use (one scene at a time). */
static const bk_scene *bk_test_occ_scene;
static uint8_t       **bk_test_occ_grid;

static uint32_t bk_test_occ_models;

/* Forgets the grids (call before asking about another scene: a scene at the same address may be
 * another one). */
static inline void bk_test_vox_occ_reset(void)
{
    for (uint32_t m = 0; bk_test_occ_grid && m < bk_test_occ_models; ++m) free(bk_test_occ_grid[m]);
    free(bk_test_occ_grid);
    bk_test_occ_grid = NULL;
    bk_test_occ_scene = NULL;
    bk_test_occ_models = 0;
}

static inline int bk_test_vox_occupied(const bk_scene *s, int x, int y, int z)
{
    if (bk_test_occ_scene != s) {
        bk_test_vox_occ_reset();
        bk_test_occ_scene = s;
        bk_test_occ_models = s->vox_model_count;
        bk_test_occ_grid = calloc(s->vox_model_count + 1, sizeof(uint8_t *));
        for (uint32_t m = 0; m < s->vox_model_count; ++m) {
            const bk_vox_model *vm = &s->vox_models[m];
            uint8_t            *g = calloc((size_t)vm->size[0] * vm->size[1] * vm->size[2] + 1, 1);
            for (uint32_t v = 0; v < vm->voxel_count; ++v) {
                const uint8_t *q = vm->xyzi + 4 * (size_t)v;
                g[q[0] + vm->size[0] * (q[1] + (size_t)vm->size[1] * q[2])] = 1;
            }
            bk_test_occ_grid[m] = g;
        }
    }
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_instance *in = &s->vox_instances[i];
        if (x < in->lo[0] || x >= in->hi[0] || y < in->lo[1] || y >= in->hi[1] || z < in->lo[2] || z >= in->hi[2])
            continue;
        const bk_vox_model *vm = &s->vox_models[in->model];
        int32_t             T[3];
        bk_vox_instance_offset(in, vm->size, T);
        /* the cell's centre back to model space: p = M^T (w - T) */
        float w[3] = { (float)x + 0.5f - (float)T[0], (float)y + 0.5f - (float)T[1], (float)z + 0.5f - (float)T[2] };
        int   p[3];
        for (int c = 0; c < 3; ++c) {
            float v = 0;
            for (int r = 0; r < 3; ++r) v += (float)in->m[3 * r + c] * w[r];
            p[c] = (int)floorf(v);
        }
        if (p[0] < 0 || p[1] < 0 || p[2] < 0 || p[0] >= (int)vm->size[0] || p[1] >= (int)vm->size[1] ||
            p[2] >= (int)vm->size[2])
            continue;
        if (bk_test_occ_grid[in->model][p[0] + vm->size[0] * (p[1] + (size_t)vm->size[1] * p[2])]) return 1;
    }
    return 0;
}

static int bk_test_u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The surface as triangles (2 per visible-in-model face, world space) in *mesh, and per triangle
 * the HITS id of its voxel face in face_id (malloc'ed). */
static inline void bk_test_vox_mesh(const bk_scene *s, bk_scene *mesh, uint32_t **face_id)
{
    memset(mesh, 0, sizeof *mesh);
    size_t    cap = 64, n = 0;
    float    *pos = malloc(cap * 9 * sizeof(float));
    uint32_t *ids = malloc(cap * sizeof(uint32_t));
    uint32_t  base = s->tri_count;
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_instance *in = &s->vox_instances[i];
        const bk_vox_model    *vm = &s->vox_models[in->model];
        const uint32_t        *sz = vm->size;
        uint32_t               nbx = (sz[0] + 3) / 4, nby = (sz[1] + 3) / 4;
        int32_t                T[3];
        bk_vox_instance_offset(in, sz, T);
        uint8_t  *occ = calloc((size_t)sz[0] * sz[1] * sz[2], 1);
        uint64_t *keys = malloc(sizeof(uint64_t) * (vm->voxel_count + 1));
        for (uint32_t v = 0; v < vm->voxel_count; ++v) {
            const uint8_t *q = vm->xyzi + 4 * (size_t)v;
            occ[q[0] + sz[0] * (q[1] + (size_t)sz[1] * q[2])] = 1;
            uint64_t brick = q[0] / 4 + nbx * (q[1] / 4 + (uint64_t)nby * (q[2] / 4));
            keys[v] = brick * 64 + (q[0] & 3) + 4 * (q[1] & 3) + 16 * (q[2] & 3);
        }
        qsort(keys, vm->voxel_count, sizeof *keys, bk_test_u64_cmp);
        for (uint32_t v = 0; v < vm->voxel_count; ++v) {
            const uint8_t *q = vm->xyzi + 4 * (size_t)v;
            uint64_t       key = (q[0] / 4 + nbx * (q[1] / 4 + (uint64_t)nby * (q[2] / 4))) * 64 + (q[0] & 3) +
                           4 * (q[1] & 3) + 16 * (q[2] & 3);
            uint32_t lo = 0, hi = vm->voxel_count;
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (keys[mid] < key) lo = mid + 1;
                else hi = mid;
            }
            uint32_t rank = lo;
            for (int ax = 0; ax < 3; ++ax)
                for (int sg = 0; sg < 2; ++sg) {
                    int nb[3] = { q[0], q[1], q[2] };
                    nb[ax] += sg ? 1 : -1;
                    if (nb[ax] >= 0 && nb[ax] < (int)sz[ax] && occ[nb[0] + sz[0] * (nb[1] + (size_t)sz[1] * nb[2])])
                        continue;
                    /* the face's 4 corners in model space, then world = M p + T */
                    int   u = (ax + 1) % 3, w = (ax + 2) % 3;
                    float c[4][3];
                    for (int k = 0; k < 4; ++k) {
                        float p[3] = { q[0], q[1], q[2] };
                        p[ax] += sg ? 1.0f : 0.0f;
                        p[u] += (k == 1 || k == 2) ? 1.0f : 0.0f;
                        p[w] += (k >= 2) ? 1.0f : 0.0f;
                        for (int r = 0; r < 3; ++r) {
                            c[k][r] = (float)T[r];
                            for (int cc = 0; cc < 3; ++cc) c[k][r] += (float)in->m[3 * r + cc] * p[cc];
                        }
                    }
                    int wr = 0;
                    for (int r = 0; r < 3; ++r)
                        if (in->m[3 * r + ax]) wr = r;
                    int      wsign = in->m[3 * wr + ax] * (sg ? 1 : -1);
                    uint32_t id = base + 6 * rank + (uint32_t)(2 * wr + (wsign > 0));
                    if (n + 2 > cap) {
                        cap *= 2;
                        pos = realloc(pos, cap * 9 * sizeof(float));
                        ids = realloc(ids, cap * sizeof(uint32_t));
                    }
                    const int tri[2][3] = { { 0, 1, 2 }, { 0, 2, 3 } };
                    for (int t = 0; t < 2; ++t) {
                        for (int k = 0; k < 3; ++k) memcpy(pos + 9 * n + 3 * k, c[tri[t][k]], 12);
                        ids[n++] = id;
                    }
                }
        }
        base += 6 * vm->voxel_count;
        free(occ);
        free(keys);
    }
    mesh->tri_count = (uint32_t)n;
    mesh->vertex_count = (uint32_t)(3 * n);
    mesh->positions = pos;
    mesh->tri_v = malloc(sizeof(uint32_t) * 3 * (n + 1));
    for (size_t i = 0; i < 3 * n; ++i) mesh->tri_v[i] = (uint32_t)i;
    *face_id = ids;
}

/* n rays: half from random points outside the solid within the scene's box grown by 3, in
 * random directions (a quarter of them with a random finite tmax); half from random points of
 * the surface's faces, 1e-3 off the face, into the hemisphere it faces. */
static inline bk_ray *bk_test_vox_rays(const bk_scene *s, const bk_scene *mesh, uint32_t n, uint32_t seed)
{
    bk_ray *r = malloc(sizeof(bk_ray) * n);
    bk_test_vox_occ_reset();
    float lo[3] = { 1e30f, 1e30f, 1e30f }, hi[3] = { -1e30f, -1e30f, -1e30f };
    for (uint32_t i = 0; i < s->vox_instance_count; ++i)
        for (int k = 0; k < 3; ++k) {
            lo[k] = fminf(lo[k], (float)s->vox_instances[i].lo[k] - 3.0f);
            hi[k] = fmaxf(hi[k], (float)s->vox_instances[i].hi[k] + 3.0f);
        }
    for (uint32_t i = 0; i < n; ++i) {
        bk_ray *q = &r[i];
        float   o[3], d[3];
        if (i % 2 == 0) {
            for (uint32_t tries = 0;; ++tries) {
                for (int k = 0; k < 3; ++k) o[k] = lo[k] + (hi[k] - lo[k]) * bk_rng_f(seed, i, tries, (uint32_t)k);
                if (!bk_test_vox_occupied(s, (int)floorf(o[0]), (int)floorf(o[1]), (int)floorf(o[2]))) break;
            }
            float z = 2.0f * bk_rng_f(seed, i, 999, 0) - 1.0f, a = 6.2831853f * bk_rng_f(seed, i, 999, 1);
            float rr = sqrtf(fmaxf(0.0f, 1.0f - z * z));
            d[0] = rr * cosf(a);
            d[1] = rr * sinf(a);
            d[2] = z;
        } else {
            float e1[3], e2[3], nrm[3], c[3], probe[3];
            for (uint32_t tries = 0;; ++tries) {
                uint32_t t =
                    (uint32_t)(bk_rng_f(seed, i, tries, 0) * (float)(mesh->tri_count / 2)) % (mesh->tri_count / 2) * 2;
                const float *p = mesh->positions + 9 * (size_t)t; /* corners 0 1 2 of the face's first triangle */
                for (int k = 0; k < 3; ++k) {
                    e1[k] = p[3 + k] - p[k];
                    e2[k] = p[6 + k] - p[3 + k];
                }
                nrm[0] = e1[1] * e2[2] - e1[2] * e2[1];
                nrm[1] = e1[2] * e2[0] - e1[0] * e2[2];
                nrm[2] = e1[0] * e2[1] - e1[1] * e2[0];
                float a = 0.02f + 0.96f * bk_rng_f(seed, i, tries, 1), b = 0.02f + 0.96f * bk_rng_f(seed, i, tries, 2);
                for (int k = 0; k < 3; ++k) {
                    c[k] = p[k] + a * e1[k] + b * e2[k];
                    probe[k] = c[k] + 0.5f * nrm[k];
                }
                /* outward: the cell on the other side is empty (a face between two instances' voxels
                 * has no outside: another face) */
                if (!bk_test_vox_occupied(s, (int)floorf(probe[0]), (int)floorf(probe[1]), (int)floorf(probe[2])))
                    break;
                for (int k = 0; k < 3; ++k) probe[k] = c[k] - 0.5f * nrm[k];
                if (!bk_test_vox_occupied(s, (int)floorf(probe[0]), (int)floorf(probe[1]), (int)floorf(probe[2]))) {
                    for (int k = 0; k < 3; ++k) nrm[k] = -nrm[k];
                    break;
                }
            }
            for (int k = 0; k < 3; ++k) o[k] = c[k] + 1e-3f * nrm[k];
            float z = sqrtf(bk_rng_f(seed, i, 0, 3)), ang = 6.2831853f * bk_rng_f(seed, i, 0, 4),
                  rr = sqrtf(1.0f - z * z);
            int ax = fabsf(nrm[0]) > 0.5f ? 0 : (fabsf(nrm[1]) > 0.5f ? 1 : 2);
            d[ax] = z * nrm[ax];
            d[(ax + 1) % 3] = rr * cosf(ang);
            d[(ax + 2) % 3] = rr * sinf(ang);
        }
        q->ox = o[0];
        q->oy = o[1];
        q->oz = o[2];
        q->dx = d[0];
        q->dy = d[1];
        q->dz = d[2];
        q->tmin = 0.0f;
        q->tmax = i % 8 == 2 ? 30.0f * bk_rng_f(seed, i, 5, 5) : BK_INF;
    }
    bk_test_vox_occ_reset();
    return r;
}

#endif /* BK_TEST_VOXELS_H */
