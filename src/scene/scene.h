/* scene.h - the in-memory triangle scene every loader produces and every builder reads.
 *
 * Pipeline: readers (loader.h: obj.c, vox.c) -> bk_scene (several appended: scene.c) -> builders
 * (bvh.c, kdtree.c, via geom.c) -> backends. This header is the scene stage: it knows no reader.
 * Triangles are numbered in file order after fan triangulation (docs/formats.md).
 */
#ifndef BK_SCENE_H
#define BK_SCENE_H

#include <stddef.h>
#include <stdint.h>
#include "outputs.h"
#include "vox.h"

#define BK_NONE 0xFFFFFFFFu /* absent index (no vt, no vn, no material) */

/* One use of an image by a material (a map line of an MTL, a glTF textureInfo). */
typedef struct bk_tex_ref {
    uint32_t image;     /* index in bk_scene.images; BK_NONE: no texture (no map, or its file could
                           not be read: the factor alone is used) */
    float    scale[2];  /* uv' = uv * scale + offset (MTL -s, -o; default 1 and 0) */
    float    offset[2]; /*   */
    uint8_t  clamp;     /* MTL -clamp on: clamp to the edge; else repeat (glTF's default too) */
    uint8_t  channel;   /* scalar maps (map_d): BK_TEX_CHANNEL_* */
    uint8_t  uv_set;    /* texture coordinate set (OBJ has one: 0; glTF texCoord) */
    uint32_t line;      /* the MTL line that named it, for messages (0: none) */
    char     path[512]; /* the file as written (relative to the MTL's folder, bk_scene_find_map) */
} bk_tex_ref;

/* bk_tex_ref.channel: which channel of the image a scalar map reads. */
enum bk_tex_channel {
    BK_TEX_CHANNEL_AUTO = 0, /* alpha when the image has one, else red (= grey) */
    BK_TEX_CHANNEL_ALPHA = 1,
    BK_TEX_CHANNEL_RED = 2 /* MTL -imfchan r, or l / m on a grey image */
};

/* A material as the light transport reads it (docs/materials.md has the rules per format):
 * albedo = kd x map_kd (rgb), emission = ke x map_ke, opacity = alpha x map_d (or the alpha of
 * map_kd where the format says so), all linear. */
typedef struct bk_material {
    char    name[128];
    float   kd[3];        /* diffuse albedo factor (MTL Kd, glTF baseColorFactor), default 0.8 grey */
    float   ke[3];        /* emitted radiance factor (MTL Ke, glTF emissiveFactor x strength), default 0 */
    float   alpha;        /* opacity factor (MTL d or 1 - Tr, glTF baseColorFactor.a), default 1 */
    float   alpha_cutoff; /* BK_ALPHA_MASK: a surface stands where opacity >= this (default 0.5) */
    uint8_t alpha_mode;   /* enum bk_alpha_mode (kernels/bk_material.h) */
    uint8_t double_sided; /* lit from both sides, never a back face (glTF doubleSided) */
    uint8_t kd_by_map;    /* map_kd replaces kd where it loads (an MTL Blender wrote: Blender writes
                             its unlinked Base Color default as Kd and shows the texture alone) */
    bk_tex_ref map_kd;    /* albedo texture (sRGB) */
    bk_tex_ref map_ke;    /* emission texture (sRGB, HDR images linear) */
    bk_tex_ref map_d;     /* opacity texture (linear) */
} bk_material;

/* A decoded image (src/io/texture.c): every texture of a scene once, by resolved file. */
typedef struct bk_image {
    char    *path;     /* the file read; for an image inside a scene file (embedded) a name that is
                          no file, "scene.glb:images[2]" */
    uint32_t w, h;     /* size in texels, each at most BK_IMAGE_TEX_MAX_SIDE */
    uint8_t  channels; /* in the file: 1 grey, 2 grey + alpha, 3 rgb, 4 rgba */
    uint8_t  embedded; /* 1: decoded from the scene file's own bytes (path names no input file) */
    uint8_t *rgba8;    /* w * h * 4 bytes, rows top to bottom; NULL for an HDR image */
    float   *rgbaf;    /* w * h * 4 floats, linear (Radiance .hdr); NULL for an 8-bit image */
} bk_image;
#define BK_IMAGE_TEX_MAX_SIDE 16384u

/* Input limits (docs/formats.md): larger files are refused with a message, not read. */
#define BK_SCENE_MAX_BYTES (4ull << 30)  /* OBJ text, after gunzip */
#define BK_MTL_MAX_BYTES   (64ull << 20) /* one MTL file */
#define BK_KE_MAX          1.0e6f        /* MTL Ke (emitted radiance) above this is clamped, with a warning */

/* An MTL file the OBJ names (mtllib), whether or not it could be read. */
typedef struct bk_scene_mtl {
    char *name; /* as written after mtllib, relative to the OBJ's folder unless absolute */
    char *path; /* the file the loader opened (the OBJ's folder joined to name) */
} bk_scene_mtl;

/* A camera the file defines (glTF cameras, placed by their nodes), for `baker view`. Scene
 * frame (Y up, docs/formats.md); dir and up are unit vectors, up orthogonal to dir. */
typedef struct bk_scene_camera {
    char  name[64];
    float pos[3], dir[3], up[3];
    float yfov;   /* vertical field of view in radians; 0: orthographic (ymag) */
    float ymag;   /* orthographic half height in scene units; 0 for a perspective camera */
    float aspect; /* width / height the file asks for; 0 where it says none */
} bk_scene_camera;

typedef struct bk_scene {
    uint32_t  vertex_count;
    float    *positions; /* 3 floats per vertex */
    uint32_t  texcoord_count;
    float    *texcoords; /* 2 floats per vt */
    uint32_t  normal_count;
    float    *normals; /* 3 floats per vn */
    uint32_t  tri_count;
    uint32_t *tri_v;        /* 3 position indices per triangle, 0-based */
    uint32_t *tri_vt;       /* 3 vt indices per triangle, BK_NONE where the face has none */
    uint32_t *tri_vn;       /* 3 vn indices per triangle, BK_NONE where the face has none */
    uint32_t *tri_material; /* material per triangle, BK_NONE for the default material */
    /* The file's own lightmap UVs where it has a set apart from its texture UVs (glTF
     * TEXCOORD_1), stored like texcoords (v up from the image's bottom, as OBJ's vt); --uv file
     * reads them, else tri_vt. NULL, 0 when the file has none. */
    uint32_t  lm_texcoord_count;
    float    *lm_texcoords; /* 2 floats per entry */
    uint32_t *tri_lmvt;     /* 3 lm_texcoords indices per triangle, BK_NONE where a corner has none */
    uint32_t *tri_object;   /* per triangle: its object in object_names (OBJ: its o / g line; glTF:
                               its node), BK_NONE for none; NULL when the file has none */
    uint32_t      object_count;
    char        **object_names; /* OBJ: the names of its o and g lines, one per line; glTF: one per
                                   node with a mesh; .vox: one per named instance (bk_vox_instance.object) */
    uint32_t      material_count;
    bk_material  *materials;
    uint32_t      mtl_count;
    bk_scene_mtl *mtls; /* each MTL file once, in the order the OBJ names them */
    uint32_t      image_count;
    bk_image     *images; /* the textures the materials name (bk_tex_ref.image), decoded */
    uint32_t         camera_count;
    bk_scene_camera *cameras; /* in file order */
    /* Voxels (vox.h), none in an OBJ scene. A .vox file adds 256 materials, one per palette
     * colour index (0 unused): kd the sRGB palette colour made linear, ke from MATL _emit. */
    uint32_t         vox_model_count;
    bk_vox_model    *vox_models;
    uint32_t         vox_instance_count;
    bk_vox_instance *vox_instances;
} bk_scene;

/* The files a loaded scene read besides itself, as inputs of the output policy (outputs.h; they
 * are known only once the OBJ is read): its MTL files and the textures its materials name (map_Kd,
 * bk_scene_find_map). 0, or the status of bk_outputs_input. */
int bk_outputs_scene_inputs(bk_outputs *o, const bk_scene *s, char *err, size_t err_size);

/* A material with the defaults of every format (kd 0.8 grey, no emission, opaque, alpha 1, cutoff
 * 0.5, no maps), and a texture reference to no image (scale 1, offset 0, repeat). */
void bk_material_init(bk_material *m);
/* Triangle t's corners' texture coordinates (u0 v0 u1 v1 u2 v2; 0 where a corner has no vt). */
void bk_scene_tri_uv(const bk_scene *s, uint32_t t, float uv[6]);
void bk_tex_ref_init(bk_tex_ref *r);

/* Frees every array of s (a loaded, appended or zeroed scene) and zeroes it. */
void bk_scene_free(bk_scene *s);
/* Appends a copy of src to dst (scene.c): triangles, vertices, vt, vn, materials (src's triangles
 * and voxel models re-indexed past dst's), MTL names, voxel models and instances. dst may be an
 * empty (zeroed) scene. Returns 0, or -1 with err (out of memory, too large together); dst is
 * then still safe to free. */
int bk_scene_append(bk_scene *dst, const bk_scene *src, char *err, size_t err_size);

/* The file a material's map_Kd names, resolved into out (PATH_MAX bytes): relative to the folder
 * of one of the scene's MTL files (the material does not record which; the first folder holding
 * a readable file wins), or absolute. Backslashes, as Windows exporters write them, are folder
 * separators. 0, or -1 when no such file is found. */
int bk_scene_find_map(const bk_scene *s, const char *map, char *out);

#endif /* BK_SCENE_H */
