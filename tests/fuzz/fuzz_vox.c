/* fuzz_vox.c - libFuzzer target for the MagicaVoxel .vox reader (bk_scene_load_vox, src/vox.c).
 *
 * The reader takes a path, so each input is written as in.vox in a private temporary folder and
 * loaded. On success the scene must keep the reader's promises (vox.h, the comment atop vox.c):
 * model sides 1..256, every voxel inside its model with a colour index 1..255, 256 materials per
 * file with finite kd in [0, 1] and finite ke in [0, BK_KE_MAX], at least one instance, each naming
 * a model, with a valid rotation byte matching its matrix, the box bk_vox_instance_place gives and
 * |t| within BK_VOX_MAX_COORD. A failure must leave a one-line message and an empty scene. Any
 * broken promise aborts.
 */
#include "fuzz_common.h"
#include "scene.h"

#include <math.h>

static void check_scene(const bk_scene *s)
{
    BK_FUZZ_CHECK(s->vox_model_count > 0 && s->vox_models, "no models");
    BK_FUZZ_CHECK(s->vox_instance_count > 0 && s->vox_instances, "no instances");
    BK_FUZZ_CHECK(s->material_count >= 256 && s->materials, "%u materials", s->material_count);
    for (uint32_t i = 0; i < s->vox_model_count; ++i) {
        const bk_vox_model *m = &s->vox_models[i];
        for (int a = 0; a < 3; ++a) BK_FUZZ_CHECK(m->size[a] >= 1 && m->size[a] <= BK_VOX_MAX_SIZE, "model %u size %u", i, m->size[a]);
        BK_FUZZ_CHECK(m->material_base + 256 <= s->material_count, "model %u material_base %u", i, m->material_base);
        for (uint32_t v = 0; v < m->voxel_count; ++v) {
            const uint8_t *q = m->xyzi + 4 * (size_t)v;
            BK_FUZZ_CHECK(q[0] < m->size[0] && q[1] < m->size[1] && q[2] < m->size[2], "model %u voxel %u outside", i, v);
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
            BK_FUZZ_CHECK(in->t[a] >= -BK_VOX_MAX_COORD && in->t[a] <= BK_VOX_MAX_COORD, "instance %u t %d", i, in->t[a]);
            BK_FUZZ_CHECK(in->lo[a] < in->hi[a] && in->lo[a] == box.lo[a] && in->hi[a] == box.hi[a], "instance %u box", i);
        }
    }
    for (uint32_t k = 0; k < s->material_count; ++k) {
        const bk_material *mt = &s->materials[k];
        BK_FUZZ_CHECK(memchr(mt->name, 0, sizeof mt->name) != NULL && mt->map_kd[0] == 0, "material %u name", k);
        for (int i = 0; i < 3; ++i) {
            BK_FUZZ_CHECK(isfinite(mt->kd[i]) && mt->kd[i] >= 0 && mt->kd[i] <= 1, "material %u kd %g", k, mt->kd[i]);
            BK_FUZZ_CHECK(isfinite(mt->ke[i]) && mt->ke[i] >= 0 && mt->ke[i] <= BK_KE_MAX, "material %u ke %g", k, mt->ke[i]);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[600];
    bk_fuzz_path("in.vox", path, sizeof path);
    bk_fuzz_write(path, data, size);
    bk_scene s;
    char err[1024];
    err[0] = 'x'; err[1] = 0;
    int rc = bk_scene_load(path, &s, err, sizeof err);
    if (rc == 0) {
        check_scene(&s);
        bk_scene_free(&s);
    } else {
        BK_FUZZ_CHECK(rc < 0, "status %d", rc);
        BK_FUZZ_CHECK(err[0] && strcmp(err, "x") != 0 && !strchr(err, '\n'), "failure without a one-line message");
        BK_FUZZ_CHECK(!s.vox_models && !s.vox_instances && !s.materials && !s.vox_model_count && !s.vox_instance_count,
                      "failure left a scene behind");
    }
    return 0;
}
