/* loader.c - the one scene loader: picks the reader (obj.c, vox.c, gltf_read.c) by the file name.
 *
 * Pipeline: io stage, above the readers; its callers (the commands, benches, tests) see one entry
 * point, and a new format is one line here plus its reader.
 */
#include "loader.h"
#include "util.h"

#include <string.h>

int bk_scene_load(const char *path, bk_scene *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (bk_path_has_ext(path, ".obj") || bk_path_has_ext(path, ".obj.gz"))
        return bk_scene_load_obj(path, out, err, err_size);
    if (bk_path_has_ext(path, ".vox")) return bk_scene_load_vox(path, out, err, err_size);
    if (bk_path_has_ext(path, ".gltf") || bk_path_has_ext(path, ".glb"))
        return bk_scene_load_gltf(path, out, err, err_size);
    return bk_fail(err, err_size, "%s: unknown scene format (supported: .obj, .obj.gz, .vox, .gltf, .glb)", path);
}
