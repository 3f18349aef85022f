/* gltf.h - --mesh-out FILE.gltf | FILE.glb: the baked scene as glTF 2.0, lightmap attached.
 *
 * Pipeline: bk_scene (or a voxel surface's triangle scene, voxmesh.h) + bk_atlas + the lightmap
 * file names -> one glTF asset, written like every output (outputs.h: temporary file, rename).
 * Spec: https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html
 *
 * What the asset holds:
 *   - one node, one mesh, one primitive per (material, lightmap page); all primitives share one
 *     set of vertex accessors (vertices deduplicated by their attributes) and have their own
 *     uint32 index accessor. Triangles keep their file order within a primitive.
 *   - POSITION (with min/max), NORMAL (the file's vn where a triangle has all three, else its
 *     flat normal; always unit length), TEXCOORD_0 = the file's own vt with v flipped (glTF
 *     counts v down from the top of the image, OBJ up from the bottom), (0, 0) where a face has
 *     no vt: glTF wants TEXCOORD_n consecutive from 0, so the lightmap UVs can only be
 *     TEXCOORD_1 if TEXCOORD_0 exists. TEXCOORD_1 = the lightmap UVs as the atlas holds them (u
 *     along image columns, v down image rows from the PNG's first row: glTF's own convention,
 *     so no flip).
 *   - materials: pbrMetallicRoughness with baseColorFactor = Kd, metallic 0, roughness 1 (a
 *     diffuse surface, as the bake assumed), baseColorTexture (TEXCOORD_0) when the MTL has a
 *     map_Kd that is a PNG or JPEG found from one of the scene's MTL folders, emissiveFactor = Ke
 *     (divided by its largest component when that is above 1, which then becomes
 *     KHR_materials_emissive_strength's emissiveStrength), doubleSided (OBJ has no culling).
 *   - the lightmap: glTF has no lightmap slot. Each page's PNG is an image + texture (clamp to
 *     edge, linear filtering), attached to the material as occlusionTexture with texCoord 1 (the
 *     one standard slot that multiplies the lighting and takes a second UV set: Blender, three.js
 *     and Godot import it with its UV set), as emissiveTexture (texCoord 1) with emissiveFactor
 *     = Kd on materials that do not emit (albedo x lightmap: the baked look in any viewer;
 *     Blender wires it to Emission), and named in the material's extras as
 *     "baker_lightmap" { texture, texCoord, page, uri } so an engine can wire it as the lightmap
 *     it is. The asset's extras.baker says what a texel holds. An .hdr or .exr lightmap is not a
 *     glTF image type: it is named in the extras only (uri), no texture.
 * Image URIs are relative to the glTF file's folder (percent-encoded). A .gltf embeds its buffer
 * as a base64 data: URI, so it is one file like a .glb; a .glb holds the JSON and BIN chunks.
 *
 * Usage:
 *     const char *pages[1] = { "lm.png" };
 *     bk_gltf_opts go; bk_gltf_opts_default(&go); go.lightmaps = pages; go.exposure = 1.0f;
 *     if (bk_gltf_write("scene.glb", &scene, &atlas, &go, err, sizeof err)) puts(err);
 */
#ifndef BK_GLTF_H
#define BK_GLTF_H

#include "atlas.h"
#include "scene.h"

#include <stddef.h>
#include <stdio.h>

typedef struct bk_gltf_opts {
    const char *const *lightmaps; /* the lightmap file of each atlas page as the run names it
                                     (page_count of them), NULL for none */
    float exposure;               /* the PNG's --exposure, recorded in the extras */
} bk_gltf_opts;

void bk_gltf_opts_default(bk_gltf_opts *o);

/* 1 when path names a glTF output (.gltf or .glb, any case). */
int bk_gltf_path(const char *path);

/* Writes s (with the lightmap UVs of a, built for s) as glTF into f, which will become path:
 * binary (GLB) when path ends in .glb, else JSON with an embedded buffer. Image URIs are made
 * relative to path's folder, which must exist. Returns 0 or -1 with one line in err. */
int bk_gltf_write_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o,
                       char *err, size_t err_size);
/* The same with its own temporary file + rename (outputs.h), for tests and tools. */
int bk_gltf_write(const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o, char *err,
                  size_t err_size);

#endif /* BK_GLTF_H */
