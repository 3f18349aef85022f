/* mesh_out.h - --mesh-out: the scene as an OBJ whose vt are the lightmap UVs, and its MTL (mesh_out.c).
 *
 * Pipeline: bk_scene (or a voxel surface, voxmesh.h) + bk_atlas (atlas.h) -> OBJ + MTL text ->
 * an output of outputs.h. glTF output is gltf.h's.
 */
#ifndef BK_MESH_OUT_H
#define BK_MESH_OUT_H

#include "atlas.h"
#include "scene.h"
#include "voxmesh.h"

#include <stddef.h>
#include <stdio.h>

/* Writes the scene as an OBJ with the lightmap UVs as vt (one per distinct corner UV), its
 * positions, its normals when it has them, and usemtl runs. scene_path (may be NULL: no mtllib)
 * is the OBJ the scene came from; its MTL files are named by relative mtllib lines only: one in
 * the output's folder by its name, the others copied into FILE.mtl beside FILE.obj
 * (bk_mesh_mtl_name) with their texture paths (map_*, bump, disp, decal, refl, norm) rewritten
 * relative to the output's folder. FILE.mtl is refused when it exists and baker did not write it
 * (bk_mesh_mtl_check) or when it is an MTL of the scene. Temporary files + rename, both or
 * neither; returns 0 or -1 with err. */
int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path, char *err,
                      size_t err_size);
/* The same into an open stream (an output of bk_outputs); path is where it will be. With no MTL
 * stream here, an MTL of another folder is named by its absolute path: baker itself uses
 * bk_mesh_write_obj_vox with an MTL stream. */
int bk_mesh_write_obj_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                           char *err, size_t err_size);

/* The same for a scene with a voxel surface (voxmesh.h; vm NULL: none): its own triangles as
 * above, then each merged quad as one 4-corner face (c0 c1 c2 c3: an OBJ loader fans it into the
 * surface's two triangles, so --uv file numbers them alike) with usemtl vox_M (M the scene
 * material) and group vox_instance_I, and mtl_f (to be the file mtl_path, beside the OBJ) gets
 * newmtl vox_M with Kd (and Ke when emissive) for each material the quads use. With several
 * pages, faces are also in group page_K of their page. MTL files of the scene's OBJ files are
 * named by relative mtllib lines or copied into mtl_f as for bk_mesh_write_obj; mtl_f (may be
 * NULL when there are no quads and bk_mesh_obj_copies_mtl is 0) starts "# written by baker". */
int bk_mesh_write_obj_vox(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          FILE *mtl_f, const char *mtl_path, char *err, size_t err_size);

/* FILE.obj -> FILE.mtl (malloc'ed): the MTL --mesh-out writes beside the OBJ. */
char *bk_mesh_mtl_name(const char *obj_path);
/* 1 when some MTL file of s lies outside obj_path's folder: bk_mesh_write_obj_vox then copies it
 * into the MTL stream, which must be given. */
int bk_mesh_obj_copies_mtl(const bk_scene *s, const char *obj_path);
/* 0 when mtl_path may be written: it does not exist, or its first line is baker's "# written by
 * baker" (an earlier --mesh-out). Else -1 with a line naming both files. */
int bk_mesh_mtl_check(const char *mtl_path, const char *obj_path, char *err, size_t err_size);

#endif /* BK_MESH_OUT_H */
