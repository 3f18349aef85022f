/* gltf.h - --mesh-out FILE.gltf | FILE.glb: the baked scene as glTF 2.0, lit, in one file.
 *
 * Pipeline: bk_scene (or a voxel surface's triangle scene, voxmesh.h) + bk_atlas + the bake's
 * linear pages + the lightmap files -> one glTF asset, written like every output (outputs.h:
 * temporary file, rename). Spec: https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html
 * What engines do with it and the recipes to use the lightmap as one: docs/engines.md.
 *
 * What the asset holds:
 *   - one node per object, each with its own mesh: an OBJ's o / g group, a glTF input's node,
 *     a voxel instance (named by its object, else vox_instance_I); triangles of no object go to
 *     one node named after the scene (opts.name). Nodes in order of first appearance.
 *   - per node, one primitive per (material, lightmap page), each with its own vertex accessors
 *     (its corners deduplicated by their attributes within it) and uint32 indices; triangles
 *     keep their file order within a primitive.
 *   - POSITION (with min/max), NORMAL (the file's vn where a triangle has all three, else its
 *     flat normal; always unit length), TEXCOORD_0 = the file's own vt with v flipped (glTF
 *     counts v down from the top of the image, OBJ up from the bottom), (0, 0) where a face has
 *     no vt: glTF wants TEXCOORD_n consecutive from 0, so the lightmap UVs can only be
 *     TEXCOORD_1 if TEXCOORD_0 exists. TEXCOORD_1 = the lightmap UVs as the atlas holds them (u
 *     along image columns, v down image rows from the PNG's first row: glTF's own convention,
 *     so no flip).
 *   - materials, one per (material, page): pbrMetallicRoughness with baseColorFactor = Kd (1
 *     where map_Kd replaces Kd), metallic 0, roughness 1, baseColorTexture (TEXCOORD_0) where
 *     the map_Kd loaded, doubleSided (OBJ has no culling).
 *   - the baked look: glTF has no lightmap slot, and the engines' occlusion slots multiply only
 *     their own ambient light. So each page gets a *lit* image (lit.h: albedo x light + emission,
 *     the bake's exposure, sRGB), the material's emissiveTexture on TEXCOORD_1 with
 *     emissiveFactor [1,1,1]: Blender wires it straight to Emission, three.js honours texCoord,
 *     and every viewer shows the lit scene with no lights of its own. No occlusionTexture.
 *   - the raw lightmap: each PNG page is an image + texture (clamp, linear) no material slot
 *     uses, named in the material's extras "baker_lightmap" {texCoord 1, page, scale, image,
 *     texture} and in the asset's extras.baker.lightmaps: decoded linear x scale (1/exposure) is
 *     a texel (light / pi), for an engine's lightmap slot (docs/engines.md). An .hdr or .exr page
 *     is no glTF image type: named by "file", and "uri" when it lies in the glTF's folder.
 *     extras.baker_lit names the lit texture, baker_emission the material's Ke.
 * Self-contained: every image (lit pages, lightmap pages as their files' bytes, each map_Kd as
 * its PNG or JPEG file's bytes, or its decoded texels as PNG) is a bufferView of the one buffer,
 * with its mimeType, in a .glb and in a .gltf alike (whose buffer is a base64 data: URI). So the
 * file names no path of the baking machine, and copying it alone loses nothing.
 *
 * Usage:
 *     const char *pages[1] = { "lm.png" };
 *     bk_gltf_opts go; bk_gltf_opts_default(&go);
 *     go.lightmaps = pages; go.rgb = linear_pages; go.exposure = 1.0f; go.name = "scene";
 *     if (bk_gltf_write("scene.glb", &scene, &atlas, &go, err, sizeof err)) puts(err);
 */
#ifndef BK_GLTF_H
#define BK_GLTF_H

#include "atlas.h"
#include "material.h"
#include "scene.h"
#include "voxmesh.h"

#include <stddef.h>
#include <stdio.h>

typedef struct bk_gltf_opts {
    const char *const *lightmaps;      /* the lightmap file of each atlas page as the run names it
                                          (page_count of them), NULL for none */
    const char *const *lightmap_files; /* where each PNG page's bytes are now (the run's temporary
                                          files, outputs.h), NULL: the names above */
    const float *rgb;                  /* the bake's linear RGB pages (BK_ATLAS_PIXELS x 3, after fill
                                          and dilation): makes the lit pages; NULL for none */
    float              exposure;       /* the PNG's --exposure: the lit pages' too, in the extras */
    const bk_tex_pool *pool;           /* the scene's textures for the lit pages; NULL: built here */
    const bk_voxmesh  *vm;             /* s is vm->scene: its quads name their voxel instances */
    const bk_scene    *src;            /* the scene vm was made from (its vox_instances), or NULL */
    const char        *name;           /* the node of triangles without an object, and the scene */
    /* --directional's files beside the lightmap (file names, NULL for none): named in the asset's
       extras.baker.directional with what they hold (docs/baking.md, Directional maps) */
    const char        *directional_mode; /* "sh" or "dominant" */
    const char *const *directional;      /* directional_count file names */
    int                directional_count;
    /* --probes' file (NULL for none): named in the asset's extras.baker.probes, with its count */
    const char *probes;
    uint32_t    probe_count;
    /* --shadowmask's file (NULL for none): named in extras.baker.shadowmask with its channels'
       lights, mask_count of them: mask_point -1 the sun (mask_at its direction), else that point
       light (mask_at its position) */
    const char *shadowmask;
    int         mask_count;
    int         mask_point[4];
    float       mask_at[4][3];
} bk_gltf_opts;

void bk_gltf_opts_default(bk_gltf_opts *o);

/* 1 when path names a glTF output (.gltf or .glb, any case). */
int bk_gltf_path(const char *path);

/* Writes s (with the lightmap UVs of a, built for s) as glTF into f, which will become path:
 * binary (GLB) when path ends in .glb, else JSON with an embedded buffer. path's folder must
 * exist (a URI of an .hdr / .exr page is relative to it). The PNG pages must be readable
 * (o->lightmap_files or o->lightmaps). Returns 0 or -1 with one line in err. */
int bk_gltf_write_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o,
                       char *err, size_t err_size);
/* The same with its own temporary file + rename (outputs.h), for tests and tools. */
int bk_gltf_write(const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o, char *err,
                  size_t err_size);

#endif /* BK_GLTF_H */
