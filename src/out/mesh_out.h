/* mesh_out.h - --mesh-out: the scene as an OBJ whose vt are the lightmap UVs, and its MTL (mesh_out.c).
 *
 * Pipeline: bk_scene (or a voxel surface, voxmesh.h) + bk_atlas (atlas.h) + the lightmap's file
 * names -> OBJ + MTL text -> outputs of outputs.h. glTF output is gltf.h's.
 */
#ifndef BK_MESH_OUT_H
#define BK_MESH_OUT_H

#include "atlas.h"
#include "scene.h"
#include "voxmesh.h"

#include <stddef.h>
#include <stdio.h>

/* What the OBJ and its MTL name besides the mesh (all may be NULL / 0). */
typedef struct bk_mesh_obj_opts {
    const char *const *lightmap; /* the lightmap file of each page (the atlas's page_count), as the user
                                    named it: the MTL's map_Ka (a material on one page) and comments */
    const char *const *also;     /* further files of the same lightmap (another type: .exr, .hdr), page
                                    0's name each, named in comments */
    int                    also_count;
    const bk_vox_instance *vox_instances; /* the source scene's, so that a voxel instance's object line
                                             takes its name (bk_vox_instance.object) */
    uint32_t               vox_instance_count;
} bk_mesh_obj_opts;

/* The OBJ: the lightmap UVs as vt (one per distinct corner UV), its positions, its normals when
 * it has them, o lines for the scene's objects (bk_scene.object_names, one o per o / g line of
 * the source: the loader keeps no difference), g page_K lines with several pages, and usemtl
 * runs. No line or comment names a folder of the baking machine: files are named by their path
 * below the OBJ's folder, or by their file name with a note to copy them there.
 *
 * bk_mesh_write_obj: the scene alone; with scene_path given (it only says "the scene came from a
 * file") and MTL files in the scene, FILE.mtl beside FILE.obj (bk_mesh_mtl_name) holds a copy of
 * each, named by one relative mtllib line. FILE.mtl is refused when it exists and baker did not
 * write it (bk_mesh_mtl_check) or when it is an MTL of the scene. Temporary files + rename, both
 * or neither; returns 0 or -1 with err. */
int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                      const bk_mesh_obj_opts *o, char *err, size_t err_size);

/* The same into open streams for a scene with a voxel surface (voxmesh.h; vm NULL: none): its own
 * triangles as above, then each merged quad as one 4-corner face (c0 c1 c2 c3: an OBJ loader fans
 * it into the surface's two triangles, so --uv file numbers them alike) with usemtl vox_M (M the
 * scene material), object o of the instance's name (vox_instance_I where it has none) and group
 * vox_instance_I (and page_K with several pages). mtl_f (to be the file mtl_path, beside the OBJ;
 * needed when bk_mesh_obj_writes_mtl) starts "# written by baker", says what the vt are and names
 * the lightmap, then holds each MTL file of the scene copied with its texture statements
 * commented out (they would read the lightmap UVs over the atlas) and map_Ka naming the lightmap
 * page of each material that lies on one, then newmtl vox_M with Kd (and Ke when emissive) and
 * map_Ka for each material the quads use. */
int bk_mesh_write_obj_vox(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          FILE *mtl_f, const char *mtl_path, const bk_mesh_obj_opts *o, char *err, size_t err_size);

/* FILE.obj -> FILE.mtl (malloc'ed): the MTL --mesh-out writes beside the OBJ. */
char *bk_mesh_mtl_name(const char *obj_path);
/* 1 when the OBJ of s (and vm, may be NULL) has an MTL beside it: s has MTL files or vm quads. */
int bk_mesh_obj_writes_mtl(const bk_scene *s, const bk_voxmesh *vm);
/* 0 when mtl_path may be written: it does not exist, or its first line is baker's "# written by
 * baker" (an earlier --mesh-out). Else -1 with a line naming both files. */
int bk_mesh_mtl_check(const char *mtl_path, const char *obj_path, char *err, size_t err_size);

#endif /* BK_MESH_OUT_H */
