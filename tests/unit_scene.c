/* unit_scene.c - bk_scene_append (src/scene/scene.c): two scenes, one with vt, vn, materials and an
 * MTL name, the other with voxels and none of those, appended both ways; every index re-based
 * (vertices, vt, vn, materials, voxel models' material_base, instances' model), BK_NONE kept,
 * the per-triangle arrays one side lacked filled with BK_NONE, and the copies independent of the
 * sources (freed separately). */
#include "scene.h"
#include "bk_test.h"

static void tri_scene(bk_scene *s)
{
    memset(s, 0, sizeof *s);
    s->vertex_count = 3;
    s->positions = calloc(9, sizeof(float));
    s->positions[3] = 1;
    s->positions[7] = 1;
    s->texcoord_count = 3;
    s->texcoords = calloc(6, sizeof(float));
    s->normal_count = 1;
    s->normals = calloc(3, sizeof(float));
    s->normals[2] = 1;
    s->tri_count = 2;
    s->tri_v = malloc(sizeof(uint32_t) * 6);
    s->tri_vt = malloc(sizeof(uint32_t) * 6);
    s->tri_vn = malloc(sizeof(uint32_t) * 6);
    s->tri_material = malloc(sizeof(uint32_t) * 2);
    for (int k = 0; k < 6; ++k) {
        s->tri_v[k] = (uint32_t)(k % 3);
        s->tri_vt[k] = (uint32_t)(k % 3);
        s->tri_vn[k] = k < 3 ? 0 : BK_NONE;
    }
    s->tri_material[0] = 1;
    s->tri_material[1] = BK_NONE;
    s->material_count = 2;
    s->materials = calloc(2, sizeof(bk_material));
    strcpy(s->materials[0].name, "a");
    strcpy(s->materials[1].name, "b");
    s->mtl_count = 1;
    s->mtls = malloc(sizeof(bk_scene_mtl));
    s->mtls[0].name = strdup("m.mtl");
    s->mtls[0].path = strdup("dir/m.mtl");
}

static void vox_scene(bk_scene *s)
{
    memset(s, 0, sizeof *s);
    s->vertex_count = 3;
    s->positions = calloc(9, sizeof(float));
    s->tri_count = 1;
    s->tri_v = malloc(sizeof(uint32_t) * 3);
    s->tri_v[0] = 0;
    s->tri_v[1] = 1;
    s->tri_v[2] = 2;
    s->material_count = 256;
    s->materials = calloc(256, sizeof(bk_material));
    s->vox_model_count = 2;
    s->vox_models = calloc(2, sizeof(bk_vox_model));
    for (int m = 0; m < 2; ++m) {
        s->vox_models[m].size[0] = s->vox_models[m].size[1] = s->vox_models[m].size[2] = 1;
        s->vox_models[m].voxel_count = 1;
        s->vox_models[m].xyzi = calloc(4, 1);
        s->vox_models[m].xyzi[3] = (uint8_t)(5 + m);
    }
    s->vox_instance_count = 3;
    s->vox_instances = calloc(3, sizeof(bk_vox_instance));
    for (int i = 0; i < 3; ++i) s->vox_instances[i].model = (uint32_t)(i % 2);
}

int main(void)
{
    char     err[256];
    bk_scene a, v, d;
    tri_scene(&a);
    vox_scene(&v);
    memset(&d, 0, sizeof d);
    BK_EXPECTF(bk_scene_append(&d, &a, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(bk_scene_append(&d, &v, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(d.tri_count == 3 && d.vertex_count == 6 && d.material_count == 258 && d.mtl_count == 1);
    BK_EXPECT(d.tri_v[6] == 3 && d.tri_v[8] == 5);
    BK_EXPECT(d.tri_vt[6] == BK_NONE && d.tri_vn[3] == BK_NONE && d.tri_vn[0] == 0 && d.tri_material[2] == BK_NONE);
    BK_EXPECT(d.tri_material[0] == 1 && d.tri_material[1] == BK_NONE);
    BK_EXPECT(d.vox_model_count == 2 && d.vox_models[0].material_base == 2 && d.vox_models[1].xyzi[3] == 6);
    BK_EXPECT(d.vox_models[0].xyzi != v.vox_models[0].xyzi);
    BK_EXPECT(d.vox_instance_count == 3 && d.vox_instances[1].model == 1);
    BK_EXPECT(!strcmp(d.mtls[0].path, "dir/m.mtl") && d.mtls[0].path != a.mtls[0].path);
    /* the other way round: a's triangles, vt, vn and materials after v's */
    bk_scene e;
    memset(&e, 0, sizeof e);
    BK_EXPECTF(bk_scene_append(&e, &v, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(bk_scene_append(&e, &a, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(e.tri_count == 3 && e.tri_v[3] == 3 && e.tri_vt[0] == BK_NONE && e.tri_vt[3] == 0 && e.tri_vn[3] == 0);
    BK_EXPECT(e.tri_material[0] == BK_NONE && e.tri_material[1] == 257 && e.tri_material[2] == BK_NONE);
    BK_EXPECT(e.vox_models[0].material_base == 0 && !strcmp(e.materials[256].name, "a"));
    /* and a voxel scene twice: models and bases re-based again */
    BK_EXPECTF(bk_scene_append(&e, &v, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(e.vox_model_count == 4 && e.vox_models[2].material_base == 258 && e.vox_instances[4].model == 3);
    bk_scene_free(&a);
    bk_scene_free(&v);
    BK_EXPECT(d.vox_models[1].xyzi[3] == 6 && !strcmp(d.materials[1].name, "b"));
    bk_scene_free(&d);
    bk_scene_free(&e);
    BK_TEST_DONE();
}
