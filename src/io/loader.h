/* loader.h - the scene readers: a file name -> a bk_scene (scene.h).
 *
 * Pipeline: io stage, the first that touches a file. bk_scene_load (loader.c) picks the reader by
 * the file name: obj.c for .obj and .obj.gz, vox.c for .vox, gltf_read*.c for .gltf and .glb. The readers know the scene stage only
 * (scene.h, vox.h, util.h); neither calls the other. Formats and limits: docs/formats.md.
 */
#ifndef BK_LOADER_H
#define BK_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include "scene.h"

/* Picks the reader by file name (.obj, .obj.gz, .vox, .gltf, .glb). Returns 0, or a negative status with one
 * line in err naming the file; out is then empty (safe to free). */
int bk_scene_load(const char *path, bk_scene *out, char *err, size_t err_size);

/* Loads an OBJ (and the MTL files it names) or a gzip-compressed OBJ (name ends in .gz) (obj.c).
 * Returns 0, or a negative status with one line in err: "path:line: reason". The OBJ and its MTL
 * files must be regular files within the limits of scene.h; Kd and Ke must be finite (Kd outside
 * [0, 1], Ke below 0 or above BK_KE_MAX are clamped with a warning). */
int bk_scene_load_obj(const char *path, bk_scene *out, char *err, size_t err_size);
/* In an MTL texture statement (map_Kd, bump, ...), given the text after the keyword: where the
 * file name starts, past the options of the MTL spec (-s u v w, -bm b, -clamp on, ...). The name
 * is the rest of the line, trailing blanks excepted (--mesh-out rewrites it; obj.c reads map_Kd). */
const char *bk_mtl_map_file(const char *args);

/* Loads a MagicaVoxel .vox file (vox.c). Errors: one line "path: byte N: reason". */
int bk_scene_load_vox(const char *path, bk_scene *out, char *err, size_t err_size);
/* MagicaVoxel's palette for files without an RGBA chunk, indexed by colour index (entry 0 unused),
 * each colour stored as in the file: 0xAABBGGRR (vox.c). */
extern const uint32_t bk_vox_default_palette[256];

/* Loads a glTF 2.0 file, JSON (.gltf) or binary (.glb) (gltf_read.c, gltf_read_access.c,
 * gltf_read_scene.c): the default scene's meshes, materials, textures and cameras, buffers and
 * images from the GLB BIN chunk, data: URIs and files relative to the glTF's folder. Errors: one
 * line "path: JSON.PATH: reason" (e.g. "a.gltf: meshes[0].primitives[1].indices: accessor 3
 * reads past the end of bufferView 2 (...)"); warnings on stderr, once per kind. Without cJSON
 * (BK_GLTF off) it fails with a line saying how to get it. docs/formats.md has the rules. */
int bk_scene_load_gltf(const char *path, bk_scene *out, char *err, size_t err_size);
/* The same for a glTF held in memory (JSON text or GLB bytes) under the name name (messages,
 * image names): it reads no other file, only the GLB BIN chunk and data: URIs (tests/fuzz). */
int bk_scene_load_gltf_mem(const void *data, size_t size, const char *name, bk_scene *out, char *err,
                           size_t err_size);
/* The most bytes a glTF load may put in the scene's arrays (0: the default, BK_SCENE_MAX_BYTES):
 * node instancing multiplies a small file's vertices. The fuzz target lowers it; per process. */
void bk_gltf_set_output_limit(uint64_t bytes);

#endif /* BK_LOADER_H */
