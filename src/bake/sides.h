/* sides.h - which shading triangles are lit from both sides (kernels/bk_bake.h: BK_BTRI_DOUBLE_SIDED).
 *
 * Pipeline: bk_scene -> bk_bake_data_build_hit (bake.c) -> here: v1.w of each triangle's record
 * -> the bake (bk_bake_hit_facing turns a double-sided triangle's normal towards the ray).
 * A triangle is double-sided when its material says so (bk_material.double_sided, glTF's
 * doubleSided) or when another triangle has the same three corner positions, by value, in the
 * opposite winding: that is how OBJ exporters write a double-sided card, and without the flag a
 * ray meets whichever of the two coincident faces the traversal takes, half of the time a back.
 */
#ifndef BK_BAKE_SIDES_H
#define BK_BAKE_SIDES_H

#include "bk_common.h"
#include "scene.h"

/* Sets BK_BTRI_* in v1.w of tris[3 t + 1] for s's triangles t in [0, n) (the bake data keeps
 * them at their own index), clearing the other bits of v1.w. Twins are found with a hash table on
 * the sorted corners' position bits (-0 taken as 0; triangles with two equal corners or a NaN have
 * no twin). *count (unless NULL) gets how many are double-sided. 0, or -1 when out of memory. */
int bk_bake_tri_sides(const bk_scene *s, uint32_t n, bk_f4 *tris, uint32_t *count);

#endif
