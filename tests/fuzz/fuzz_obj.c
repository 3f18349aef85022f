/* fuzz_obj.c - libFuzzer target for the OBJ/MTL loader (bk_scene_load, src/io/obj.c).
 *
 * The loader reads paths, so each input is written to a private temporary folder first:
 *   - input starting with the gzip magic (1f 8b): written as in.obj.gz (the gzip path, truncated
 *     and corrupt streams included);
 *   - input holding the line "#@MTL@": the part before it is the OBJ, written as in.obj behind a
 *     first line "mtllib in.mtl"; the part after it is in.mtl (the MTL parser);
 *   - anything else: in.obj alone.
 * On success the scene must keep the loader's promises (scene.h, the comment atop obj.c): at
 * least one triangle, every index in range or BK_NONE, finite positions, terminated names. A
 * failure must leave a message and an empty scene. Any broken promise aborts.
 */
#include "fuzz_common.h"
#include "loader.h"
#include "scene.h"

#include <math.h>

#define MTL_SEP "\n#@MTL@\n"

static void check_indices(const uint32_t *idx, uint32_t n3, uint32_t count, int none_ok, const char *what)
{
    for (uint32_t i = 0; i < n3; ++i)
        BK_FUZZ_CHECK(idx[i] < count || (none_ok && idx[i] == BK_NONE), "%s[%u] = %u of %u", what, i, idx[i], count);
}

static void check_scene(const bk_scene *s)
{
    BK_FUZZ_CHECK(s->tri_count > 0, "a scene with no triangles loaded");
    BK_FUZZ_CHECK(s->positions && s->tri_v && s->tri_vt && s->tri_vn, "missing arrays");
    for (size_t i = 0; i < 3 * (size_t)s->vertex_count; ++i)
        BK_FUZZ_CHECK(isfinite(s->positions[i]), "position %zu is %g", i / 3, s->positions[i]);
    uint32_t n3 = 3 * s->tri_count;
    check_indices(s->tri_v, n3, s->vertex_count, 0, "tri_v");
    check_indices(s->tri_vt, n3, s->texcoord_count, 1, "tri_vt");
    check_indices(s->tri_vn, n3, s->normal_count, 1, "tri_vn");
    if (s->tri_material) check_indices(s->tri_material, s->tri_count, s->material_count, 1, "tri_material");
    for (uint32_t m = 0; m < s->material_count; ++m) {
        const bk_material *mt = &s->materials[m];
        BK_FUZZ_CHECK(memchr(mt->name, 0, sizeof mt->name) != NULL, "material %u name not terminated", m);
        BK_FUZZ_CHECK(memchr(mt->map_kd.path, 0, sizeof mt->map_kd.path) != NULL, "material %u map_kd not terminated", m);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char obj[600], gz[600], mtl[600];
    bk_fuzz_path("in.obj", obj, sizeof obj);
    bk_fuzz_path("in.obj.gz", gz, sizeof gz);
    bk_fuzz_path("in.mtl", mtl, sizeof mtl);
    unlink(mtl); /* no stale MTL from an earlier input */
    const char *path = obj;
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        bk_fuzz_write(gz, data, size);
        path = gz;
    } else {
        const uint8_t *sep = bk_fuzz_find(data, size, MTL_SEP);
        if (sep) {
            size_t            head = (size_t)(sep - data), sl = strlen(MTL_SEP);
            static const char line[] = "mtllib in.mtl\n";
            uint8_t          *buf = malloc(sizeof line - 1 + head + 1);
            if (!buf) return 0;
            memcpy(buf, line, sizeof line - 1);
            memcpy(buf + sizeof line - 1, data, head);
            bk_fuzz_write(obj, buf, sizeof line - 1 + head);
            free(buf);
            bk_fuzz_write(mtl, sep + sl, size - head - sl);
        } else {
            bk_fuzz_write(obj, data, size);
        }
    }
    bk_scene s;
    char     err[1024];
    err[0] = 'x';
    err[1] = 0;
    int rc = bk_scene_load(path, &s, err, sizeof err);
    if (rc == 0) {
        check_scene(&s);
        bk_scene_free(&s);
    } else {
        BK_FUZZ_CHECK(rc < 0, "status %d", rc);
        BK_FUZZ_CHECK(err[0] && strcmp(err, "x") != 0, "failure without a message");
        BK_FUZZ_CHECK(s.tri_count == 0 && !s.positions && !s.tri_v && !s.materials, "failure left a scene behind");
    }
    return 0;
}
