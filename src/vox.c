/* vox.c - the MagicaVoxel .vox reader (placeholder until the reader lands). */
#include "scene.h"
#include "util.h"

int bk_scene_load_vox(const char *path, bk_scene *out, char *err, size_t err_size)
{
    (void)out;
    return bk_fail(err, err_size, "%s: .vox scenes are not supported yet", path);
}
