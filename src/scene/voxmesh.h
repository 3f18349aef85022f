/* voxmesh.h - the voxel surface: visible voxel faces merged into quads, as triangles for the atlas.
 *
 * Pipeline: bk_scene with voxels (vox.h) -> bk_voxmesh_build -> a triangle bk_scene (the source's
 * own triangles first, numbered as in the source, then 2 triangles per quad) + one bk_vox_quad per
 * quad -> atlas (one rectangular chart per quad: bk_voxmesh_rects, atlas.h), texels, bake data,
 * --mesh-out. Tracing does not need it (the voxels are traced directly once that lands).
 *
 * Visible face: a face of an instance's voxel whose neighbour cell (across the face) is empty in
 * its own model and in every other instance. Faces between two instances' voxels are hidden;
 * faces of two instances whose voxels occupy the same cell are both kept.
 *
 * Merging: per instance, world face direction and model slice, coplanar visible faces of one
 * colour index are merged greedily into rectangles (scan rows, widest run first, then as many
 * rows down as the run allows: the classic greedy mesher).
 *
 * Order (deterministic, the triangle numbers follow it): instances in scene order; within one,
 * world face directions +x, -x, +y, -y, +z, -z; within a direction, the model slices across the
 * model axis that direction maps to, in increasing model coordinate; within a slice the greedy
 * scan order: rows along the model axis (a + 2) % 3, then columns along (a + 1) % 3, a quad
 * emitted at its first face.
 *
 * Quads are in world space (world units are voxels, corners integer), wound counter-clockwise
 * seen from outside: the triangles' winding normal (c1 - c0) x (c2 - c0) points out of the solid,
 * also for mirrored instances (det M = -1 reverses the order). material = model.material_base +
 * colour index.
 *
 * Usage:
 *     bk_voxmesh vm;
 *     if (bk_voxmesh_build(&scene, &vm, err, sizeof err)) { puts(err); ... }
 *     ... vm.scene is a triangle scene; quad q is triangles vm.first_quad_tri + 2 q and + 2 q + 1,
 *         corners c0 c1 c2 and c0 c2 c3 of o, o + w du, o + w du + h dv, o + h dv ...
 *     bk_voxmesh_free(&vm);
 */
#ifndef BK_VOXMESH_H
#define BK_VOXMESH_H

#include "scene.h"

#include <stddef.h>
#include <stdint.h>

typedef struct bk_vox_quad {
    int32_t  o[3];         /* corner c0, world units (voxels)                          12 B */
    int8_t   du[3], dv[3]; /* unit world vectors of the edges c0 -> c1 and c0 -> c3     6 B */
    uint8_t  dir;          /* outward normal: 0 +x, 1 -x, 2 +y, 3 -y, 4 +z, 5 -z        1 B */
    uint8_t  colour;       /* palette index 1..255                                      1 B */
    uint16_t w, h;         /* faces along du and along dv                               4 B */
    uint32_t instance;     /* index into the source scene's vox_instances               4 B */
    uint32_t material;     /* scene material: model.material_base + colour              4 B */
} bk_vox_quad;             /*                                                          32 B */

typedef struct bk_voxmesh {
    bk_scene     scene;          /* the source's triangles, then 2 per quad; no voxels */
    uint32_t     first_quad_tri; /* the source's triangle count */
    uint32_t     quad_count;
    bk_vox_quad *quads;
    uint64_t     face_count;   /* visible voxel faces: the sum of w * h */
    uint64_t     hidden_faces; /* faces visible in their own model but hidden by another
                                  instance's voxel */
    uint64_t voxel_count;      /* instanced voxels (each instance counts its model's voxels) */
    uint64_t hide_steps;       /* work of finding hidden faces: hash cells visited, instances
                                  compared, occupancy bits set and looked up (the thread count
                                  does not change it; tests bound it) */
    double seconds;            /* time bk_voxmesh_build took */
} bk_voxmesh;

/* Builds the surface of s's voxels (s may have none: then the copy of its triangles alone).
 * Returns 0, or -1 with one line in err (an instance naming a missing model, out of memory,
 * more than 2^32 triangles). */
int  bk_voxmesh_build(const bk_scene *s, bk_voxmesh *out, char *err, size_t err_size);
void bk_voxmesh_free(bk_voxmesh *m);

#endif /* BK_VOXMESH_H */
