/* fuzz_vox.c - libFuzzer target for the MagicaVoxel .vox reader (bk_scene_load_vox, src/io/vox.c).
 *
 * The reader takes a path, so each input is written as in.vox in a private temporary folder and
 * loaded. On success the scene must keep the reader's promises (vox.h, the comment atop vox.c):
 * model sides 1..256, every voxel inside its model with a colour index 1..255, 256 materials per
 * file with finite kd in [0, 1] and finite ke in [0, BK_KE_MAX], at least one instance, each naming
 * a model, with a valid rotation byte matching its matrix, the box bk_vox_instance_place gives and
 * |t| within BK_VOX_MAX_COORD. A failure must leave a one-line message and an empty scene. Any
 * broken promise aborts.
 *
 * What loads is also traced, so that crashes past the reader show up (issue 33: a translation the
 * reader let through made the voxel walk read bricks out of bounds): the accel the bake builds
 * (a BVH, or a KD-tree for one input in four, by a hash of the input) and 32 rays on the CPU
 * backend, aimed at points of instance boxes from all sides, half of them along an axis; every
 * hit must name a voxel face (its id below the scene's face count) at t in [tmin, tmax]. Scenes
 * of over 50,000 segments or 2^20 bricks (16 MB) are only loaded: each execution stays fast.
 */
#include "fuzz_common.h"
#include "accel_build.h"
#include "backend.h"
#include "bk_rng.h"
#include "loader.h"
#include "scene.h"

#include <math.h>

#define TRACE_RAYS       32
#define TRACE_MAX_SEGS   50000
#define TRACE_MAX_BRICKS (1u << 20) /* 16 MB of bricks */

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
    return h;
}

static void trace_scene(const bk_scene *s, uint32_t seed)
{
    uint64_t segs = 0, faces = 0, bricks = 0;
    for (uint32_t m = 0; m < s->vox_model_count; ++m) {
        const uint32_t *z = s->vox_models[m].size;
        bricks += (uint64_t)((z[0] + 3) / 4) * ((z[1] + 3) / 4) * ((z[2] + 3) / 4);
    }
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_model *m = &s->vox_models[s->vox_instances[i].model];
        uint64_t            blocks = (uint64_t)((m->size[0] + 7) / 8) * ((m->size[1] + 7) / 8) * ((m->size[2] + 7) / 8);
        segs += m->voxel_count < blocks ? m->voxel_count : blocks;
        faces += 6ull * m->voxel_count;
    }
    if (segs > TRACE_MAX_SEGS || bricks > TRACE_MAX_BRICKS) return;
    char          err[512];
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    const int     type = seed % 4 == 3 ? BK_ACCEL_KDTREE : BK_ACCEL_BVH;
    if (bk_accel_build(s, type, &bo, &a, err, sizeof err) != 0) {
        BK_FUZZ_CHECK(err[0] && !strchr(err, '\n'), "build failed without a one-line message");
        return;
    }
    bk_ray rays[TRACE_RAYS];
    bk_hit hits[TRACE_RAYS];
    for (uint32_t i = 0; i < TRACE_RAYS; ++i) {
        const bk_vox_instance *in =
            &s->vox_instances[(uint32_t)(bk_rng_f(seed, i, 0, 0) * (float)s->vox_instance_count) %
                              s->vox_instance_count];
        double aim[3], d[3], len = 0.0;
        for (int k = 0; k < 3; ++k)
            aim[k] = in->lo[k] + (in->hi[k] - in->lo[k]) * (double)bk_rng_f(seed, i, 1, (uint32_t)k);
        if (i % 2) {
            for (int k = 0; k < 3; ++k) d[k] = 0.0;
            d[i / 2 % 3] = i / 6 % 2 ? 1.0 : -1.0;
            len = 1.0;
        } else {
            for (int k = 0; k < 3; ++k) {
                d[k] = 2.0 * bk_rng_f(seed, i, 2, (uint32_t)k) - 1.0;
                len += d[k] * d[k];
            }
            len = sqrt(len) + 1e-9;
        }
        const double back = 4.0 + (in->hi[0] - in->lo[0]) + (in->hi[1] - in->lo[1]) + (in->hi[2] - in->lo[2]);
        bk_ray      *r = &rays[i];
        r->ox = (float)(aim[0] - back * d[0] / len);
        r->oy = (float)(aim[1] - back * d[1] / len);
        r->oz = (float)(aim[2] - back * d[2] / len);
        r->dx = (float)(d[0] / len);
        r->dy = (float)(d[1] / len);
        r->dz = (float)(d[2] / len);
        r->tmin = 0.0f;
        r->tmax = i % 8 == 4 ? (float)back : BK_INF;
    }
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view v = bk_accel_get_view(&a);
    BK_FUZZ_CHECK(be->i->upload(be, &v, err, sizeof err) == 0, "upload: %s", err);
    bk_trace_opts o = bk_trace_opts_default();
    o.any_hit = (int)(seed >> 8) % 2;
    o.stack_mode = (int)(seed >> 9) % 3;
    o.stack_size = 1 + (int)(seed >> 11) % 8;
    bk_trace_totals tt;
    BK_FUZZ_CHECK(be->i->trace(be, rays, hits, TRACE_RAYS, &o, &tt, err, sizeof err) == 0, "trace: %s", err);
    for (uint32_t i = 0; i < TRACE_RAYS; ++i)
        if (hits[i].tri != BK_NO_HIT)
            BK_FUZZ_CHECK(hits[i].tri < faces && hits[i].t >= rays[i].tmin && hits[i].t <= rays[i].tmax,
                          "ray %u: hit id %u (of %llu faces) at t %g", i, hits[i].tri, (unsigned long long)faces,
                          (double)hits[i].t);
    bk_backend_free(be);
    bk_accel_free(&a);
}

static void check_scene(const bk_scene *s)
{
    BK_FUZZ_CHECK(s->vox_model_count > 0 && s->vox_models, "no models");
    BK_FUZZ_CHECK(s->vox_instance_count > 0 && s->vox_instances, "no instances");
    BK_FUZZ_CHECK(s->material_count >= 256 && s->materials, "%u materials", s->material_count);
    for (uint32_t i = 0; i < s->vox_model_count; ++i) {
        const bk_vox_model *m = &s->vox_models[i];
        for (int a = 0; a < 3; ++a)
            BK_FUZZ_CHECK(m->size[a] >= 1 && m->size[a] <= BK_VOX_MAX_SIZE, "model %u size %u", i, m->size[a]);
        BK_FUZZ_CHECK(m->material_base + 256 <= s->material_count, "model %u material_base %u", i, m->material_base);
        for (uint32_t v = 0; v < m->voxel_count; ++v) {
            const uint8_t *q = m->xyzi + 4 * (size_t)v;
            BK_FUZZ_CHECK(q[0] < m->size[0] && q[1] < m->size[1] && q[2] < m->size[2], "model %u voxel %u outside", i,
                          v);
            BK_FUZZ_CHECK(q[3] != 0, "model %u voxel %u colour 0", i, v);
        }
    }
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_instance *in = &s->vox_instances[i];
        BK_FUZZ_CHECK(in->model < s->vox_model_count, "instance %u model %u", i, in->model);
        int8_t m[9];
        BK_FUZZ_CHECK(bk_vox_rot_matrix(in->rot, m) && !memcmp(m, in->m, 9), "instance %u rot %u", i, in->rot);
        bk_vox_instance box = *in;
        bk_vox_instance_place(&box, s->vox_models[in->model].size);
        for (int a = 0; a < 3; ++a) {
            BK_FUZZ_CHECK(in->t[a] >= -BK_VOX_MAX_COORD && in->t[a] <= BK_VOX_MAX_COORD, "instance %u t %d", i,
                          in->t[a]);
            BK_FUZZ_CHECK(in->lo[a] < in->hi[a] && in->lo[a] == box.lo[a] && in->hi[a] == box.hi[a], "instance %u box",
                          i);
        }
    }
    for (uint32_t k = 0; k < s->material_count; ++k) {
        const bk_material *mt = &s->materials[k];
        BK_FUZZ_CHECK(memchr(mt->name, 0, sizeof mt->name) != NULL && mt->map_kd.path[0] == 0, "material %u name", k);
        for (int i = 0; i < 3; ++i) {
            BK_FUZZ_CHECK(isfinite(mt->kd[i]) && mt->kd[i] >= 0 && mt->kd[i] <= 1, "material %u kd %g", k, mt->kd[i]);
            BK_FUZZ_CHECK(isfinite(mt->ke[i]) && mt->ke[i] >= 0 && mt->ke[i] <= BK_KE_MAX, "material %u ke %g", k,
                          mt->ke[i]);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    bk_fuzz_path("in.vox", path, sizeof path);
    bk_fuzz_write(path, data, size);
    bk_scene s;
    char     err[1024];
    err[0] = 'x';
    err[1] = 0;
    int rc = bk_scene_load(path, &s, err, sizeof err);
    if (rc == 0) {
        check_scene(&s);
        trace_scene(&s, fnv1a(data, size));
        bk_scene_free(&s);
    } else {
        BK_FUZZ_CHECK(rc < 0, "status %d", rc);
        BK_FUZZ_CHECK(err[0] && strcmp(err, "x") != 0 && !strchr(err, '\n'), "failure without a one-line message");
        BK_FUZZ_CHECK(!s.vox_models && !s.vox_instances && !s.materials && !s.vox_model_count && !s.vox_instance_count,
                      "failure left a scene behind");
    }
    return 0;
}
