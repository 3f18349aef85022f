/* atlas_voxels.c - the voxel surface's quads (voxmesh.h) as the atlas's rectangular charts.
 *
 * Pipeline: bk_voxmesh (scene stage) -> bk_voxmesh_rects -> bk_atlas_opts.rects -> bk_atlas_build.
 * The scene stage knows nothing of the atlas; this is where the two meet.
 */
#include "atlas.h"
#include "voxmesh.h"

#include <stdlib.h>

bk_atlas_rect *bk_voxmesh_rects(const bk_voxmesh *m, int texels_per_voxel, bk_atlas_opts *o)
{
    bk_atlas_rect *rects = malloc(sizeof(bk_atlas_rect) * ((size_t)m->quad_count + 1));
    if (!rects) return NULL;
    for (uint32_t q = 0; q < m->quad_count; ++q) {
        rects[q].w = m->quads[q].w * (uint32_t)texels_per_voxel;
        rects[q].h = m->quads[q].h * (uint32_t)texels_per_voxel;
        rects[q].group = m->quads[q].instance;
    }
    o->rects = rects;
    o->rect_count = m->quad_count;
    o->rect_first_tri = m->first_quad_tri;
    o->rect_texels_per_unit = (float)texels_per_voxel;
    return rects;
}
