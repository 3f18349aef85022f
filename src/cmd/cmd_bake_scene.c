/* cmd_bake_scene.c - the way from the SCENE arguments to the atlas, shared by the bake
 * (cmd_bake.c) and `baker view` (cmd_view.c), so that a view rebuilds the very atlas its
 * lightmap was baked in: the scenes loaded and appended, then --object-scale and the atlas. */
#include "cmd_bake_internal.h"
#include "loader.h"

#include <fnmatch.h>
#include <stdlib.h>

int bk_cmd_bake_load_scenes(const bk_cmd_bake_cli *c, bk_outputs *io, bk_scene *s, bk_scene *one)
{
    char err[1024];
    for (int k = 0; k < c->nscenes; ++k) {
        bk_scene *dst = k == 0 ? s : one;
        if (bk_scene_load(c->scenes[k], dst, err, sizeof err)) {
            bk_cmd_bake_error("%s\n", err);
            return 1;
        }
        int r = bk_outputs_scene_inputs(io, dst, err, sizeof err);
        if (r) {
            bk_cmd_bake_error("%s\n", err);
            return r == BK_OUT_CLASH ? 2 : 1;
        }
        if (k == 0) continue;
        r = bk_scene_append(s, one, err, sizeof err);
        bk_scene_free(one);
        if (r) {
            bk_cmd_bake_error("%s: %s\n", c->scenes[k], err);
            return 1;
        }
    }
    return 0;
}

/* --object-scale: each triangle gets the factor of the last pattern matching its o/g name. */
static int object_scales(bk_cmd_bake_cli *c, const bk_scene *s, const bk_scene *surf, float **tri_scale)
{
    float *f = malloc(sizeof(float) * ((size_t)surf->tri_count + 1));
    if (!f) {
        bk_cmd_bake_error("out of memory\n");
        return 1;
    }
    *tri_scale = f;
    for (uint32_t t = 0; t < surf->tri_count; ++t) f[t] = 1.0f;
    for (int k = 0; k < c->noscale; ++k) {
        uint32_t hits = 0;
        for (uint32_t ob = 0; ob < s->object_count; ++ob) {
            if (fnmatch(c->oscale_pat[k], s->object_names[ob], 0) != 0) continue;
            hits++;
            for (uint32_t t = 0; t < s->tri_count; ++t)
                if (s->tri_object[t] == ob) f[t] = c->oscale_f[k];
        }
        if (!hits) {
            bk_cmd_bake_error("%s: --object-scale %s=%g: the pattern matches none of the scene's %u o/g names\n",
                              c->scene, c->oscale_pat[k], (double)c->oscale_f[k], s->object_count);
            return 1;
        }
    }
    c->atlas.tri_scale = f;
    return 0;
}

int bk_cmd_bake_make_atlas(bk_cmd_bake_cli *c, const bk_scene *s, const bk_scene *surf, float **tri_scale, bk_atlas *at)
{
    char err[1024];
    if (c->noscale && object_scales(c, s, surf, tri_scale)) return 1;
    if (bk_atlas_build(surf, &c->atlas, at, err, sizeof err)) {
        bk_cmd_bake_error("%s\n", err);
        return 1;
    }
    return 0;
}
