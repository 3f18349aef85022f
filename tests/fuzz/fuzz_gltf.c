/* fuzz_gltf.c - libFuzzer target for the glTF 2.0 reader (bk_scene_load_gltf_mem, src/io/gltf_read*.c).
 *
 * The input is the file's bytes, JSON or GLB (the reader tells them apart by the GLB magic); the
 * _mem entry point reads no other file, so buffers come from the GLB BIN chunk or data: URIs.
 * The scene's arrays are limited to 256 MB (bk_gltf_set_output_limit) so that node instancing
 * never asks for more than libFuzzer's malloc limit. On success the scene must keep the reader's
 * promises (gltf_read_scene.c): at least one triangle; every corner's vertex, vt, vn and lmvt
 * index inside its array or BK_NONE; every material index inside or BK_NONE; finite positions,
 * normals and texture coordinates; every object index inside object_names; texture references
 * inside images; cameras with finite unit directions. A failure must leave one non-empty line
 * naming the input and an empty scene. Any broken promise aborts.
 */
#include "fuzz_common.h"
#include "loader.h"
#include "scene.h"

#include <math.h>

static void check_scene(const bk_scene *s)
{
    BK_FUZZ_CHECK(s->tri_count > 0 && s->tri_v && s->tri_vt && s->tri_vn && s->tri_material, "%u triangles",
                  s->tri_count);
    for (size_t i = 0; i < 3 * (size_t)s->vertex_count; ++i)
        BK_FUZZ_CHECK(isfinite(s->positions[i]), "position %zu", i);
    for (size_t i = 0; i < 3 * (size_t)s->normal_count; ++i) BK_FUZZ_CHECK(isfinite(s->normals[i]), "normal %zu", i);
    for (size_t i = 0; i < 2 * (size_t)s->texcoord_count; ++i) BK_FUZZ_CHECK(isfinite(s->texcoords[i]), "vt %zu", i);
    for (size_t i = 0; i < 2 * (size_t)s->lm_texcoord_count; ++i)
        BK_FUZZ_CHECK(isfinite(s->lm_texcoords[i]), "lm vt %zu", i);
    for (size_t c = 0; c < 3 * (size_t)s->tri_count; ++c) {
        BK_FUZZ_CHECK(s->tri_v[c] < s->vertex_count, "corner %zu vertex %u of %u", c, s->tri_v[c], s->vertex_count);
        BK_FUZZ_CHECK(s->tri_vt[c] == BK_NONE || s->tri_vt[c] < s->texcoord_count, "corner %zu vt", c);
        BK_FUZZ_CHECK(s->tri_vn[c] == BK_NONE || s->tri_vn[c] < s->normal_count, "corner %zu vn", c);
        if (s->tri_lmvt)
            BK_FUZZ_CHECK(s->tri_lmvt[c] == BK_NONE || s->tri_lmvt[c] < s->lm_texcoord_count, "corner %zu lmvt", c);
    }
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        BK_FUZZ_CHECK(s->tri_material[t] == BK_NONE || s->tri_material[t] < s->material_count, "tri %u material", t);
        BK_FUZZ_CHECK(s->tri_object && s->tri_object[t] < s->object_count, "tri %u object", t);
    }
    for (uint32_t o = 0; o < s->object_count; ++o) BK_FUZZ_CHECK(s->object_names[o] != NULL, "object %u", o);
    for (uint32_t m = 0; m < s->material_count; ++m) {
        const bk_material *mt = &s->materials[m];
        const bk_tex_ref  *r[3] = { &mt->map_kd, &mt->map_ke, &mt->map_d };
        for (int k = 0; k < 3; ++k) BK_FUZZ_CHECK(r[k]->image == BK_NONE || r[k]->image < s->image_count, "map");
        for (int k = 0; k < 3; ++k)
            BK_FUZZ_CHECK(mt->kd[k] >= 0 && mt->kd[k] <= 1 && mt->ke[k] >= 0 && mt->ke[k] <= BK_KE_MAX, "factors");
        BK_FUZZ_CHECK(mt->alpha >= 0 && mt->alpha <= 1 && mt->alpha_mode <= 2, "alpha");
    }
    for (uint32_t i = 0; i < s->image_count; ++i)
        BK_FUZZ_CHECK(s->images[i].w >= 1 && s->images[i].h >= 1 && (s->images[i].rgba8 || s->images[i].rgbaf) &&
                          s->images[i].path,
                      "image %u", i);
    for (uint32_t i = 0; i < s->camera_count; ++i) {
        const bk_scene_camera *c = &s->cameras[i];
        double                 d = c->dir[0] * c->dir[0] + c->dir[1] * c->dir[1] + c->dir[2] * c->dir[2];
        BK_FUZZ_CHECK(isfinite(c->pos[0] + c->pos[1] + c->pos[2]) && isfinite(d), "camera %u", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int once;
    if (!once) {
        bk_gltf_set_output_limit((uint64_t)256 << 20);
        once = 1;
    }
    bk_scene s;
    char     err[1024];
    err[0] = 'x';
    err[1] = 0;
    int rc = bk_scene_load_gltf_mem(data, size, "in.gltf", &s, err, sizeof err);
    if (rc == 0) check_scene(&s);
    else {
        BK_FUZZ_CHECK(!strncmp(err, "in.gltf: ", 9) && !strchr(err, '\n'), "failure without a one-line message: '%s'",
                      err);
        BK_FUZZ_CHECK(!s.tri_count && !s.positions && !s.materials && !s.images, "failure left a scene behind");
    }
    bk_scene_free(&s);
    return 0;
}
