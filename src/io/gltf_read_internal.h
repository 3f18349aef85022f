/* gltf_read_internal.h - what the three files of the glTF 2.0 reader share (src/io only).
 *
 *   gltf_read.c        the container (GLB or JSON), buffers and their URIs (data:, relative files),
 *                      the document's checks (asset, extensionsRequired), JSON helpers, warnings;
 *   gltf_read_access.c accessors: bounds, component types, normalized integers, sparse;
 *   gltf_read_scene.c  the document -> bk_scene: nodes, meshes, primitives, materials, images,
 *                      cameras.
 * Every message is one line "FILE: JSON.PATH: reason" (gl_fail); warnings go to stderr as
 * "baker: warning: FILE: ...", once per kind (gl_warn).
 */
#ifndef BK_GLTF_READ_INTERNAL_H
#define BK_GLTF_READ_INTERNAL_H
#if BK_HAVE_GLTF /* without cJSON the reader is a stub (gltf_read.c) and this header is empty */

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scene.h"

#define GL_MAX_DEPTH       256          /* node hierarchy depth */
#define GL_MAX_NOVIEW      (1u << 24)   /* elements of an accessor without a bufferView (zeros) */
#define GL_MAX_ITEMS       (1u << 24)   /* entries of one top-level array (nodes, accessors, ...) */

/* One top-level array of the document, its items indexable in O(1). */
typedef struct gl_list {
    uint32_t n;
    cJSON  **it;
} gl_list;

typedef struct gl_buffer {
    int            state; /* 0 not read yet, 1 read, -1 failed (the error is written) */
    const uint8_t *data;
    uint64_t       size; /* byteLength */
    uint8_t       *owned;
} gl_buffer;

/* Warning kinds: each is printed once per file. */
enum gl_warn_kind {
    GL_W_MODE = 0,      /* points / lines skipped */
    GL_W_NOPOS,         /* primitive without POSITION */
    GL_W_NORMALS,       /* unusable normals dropped */
    GL_W_TEXCOORD,      /* unusable texture coordinates dropped */
    GL_W_ROTATION,      /* KHR_texture_transform rotation ignored */
    GL_W_TEXCOORD1,     /* a texture on texCoord 1 read with set 0 */
    GL_W_IMAGE,         /* an image that could not be read */
    GL_W_MIRROR,        /* MIRRORED_REPEAT read as repeat */
    GL_W_COUNT_MISMATCH,/* attribute counts differ from POSITION's */
    GL_W_NOSCENE,       /* no scenes: every root node */
    GL_W_KINDS
};

typedef struct gl_ctx {
    const char *name;   /* the file, for messages */
    const char *dir;    /* its folder for relative URIs; NULL: no other file may be read (_mem) */
    cJSON      *root;
    const uint8_t *bin; /* the GLB BIN chunk, NULL when none */
    uint64_t    bin_size;
    gl_list     buffers, views, accessors, meshes, nodes, scenes, materials, textures, images, samplers, cameras;
    gl_buffer  *buf;
    uint64_t    loaded;    /* bytes of buffers read so far (limit BK_SCENE_MAX_BYTES) */
    uint64_t    max_out;   /* bytes the scene's arrays may take */
    uint32_t   *image_map; /* glTF image -> s->images index, BK_NONE not yet, BK_NONE - 1 failed */
    bk_scene   *s;
    char       *err;
    size_t      err_size;
    unsigned    warned;
} gl_ctx;

/* A decoded view of an accessor (gltf_read_access.c). */
typedef struct gl_acc {
    uint32_t       index;
    uint32_t       count;
    int            comps;      /* 1 SCALAR .. 4 VEC4 */
    int            ctype;      /* 5120 .. 5126 */
    int            normalized;
    const uint8_t *base;       /* first element; NULL without a bufferView (all zeros) */
    uint64_t       stride;
    uint32_t       sparse_count;
    int            sparse_itype;
    const uint8_t *sparse_idx, *sparse_val;
} gl_acc;

/* "FILE: where: message" into c->err; returns -1. where may be NULL or "". */
int gl_fail(gl_ctx *c, const char *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "baker: warning: FILE: where: message" on stderr the first time kind is warned. */
void gl_warn(gl_ctx *c, int kind, const char *where, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* JSON helpers: an absent key gives the default (or 1 for an optional index), a key of the wrong
 * type or range an error (-1) naming where.key. */
const cJSON *gl_get(const cJSON *obj, const char *key);
int gl_index(gl_ctx *c, const cJSON *obj, const char *key, const char *where, uint32_t n, int required, uint32_t *out);
int gl_uint(gl_ctx *c, const cJSON *obj, const char *key, const char *where, uint64_t max, uint64_t def, uint64_t *out);
int gl_num(gl_ctx *c, const cJSON *obj, const char *key, const char *where, double def, double *out);
int gl_nums(gl_ctx *c, const cJSON *obj, const char *key, const char *where, int n, double *out);
int gl_bool(gl_ctx *c, const cJSON *obj, const char *key, const char *where, int def, int *out);
/* A string value or def (NULL); a non-string is an error. */
int gl_str(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const char **out);
/* An object (or absent: *out NULL); another type is an error. */
int gl_obj(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const cJSON **out);
/* An array (or absent: *out NULL, *n 0); another type is an error. */
int gl_arr(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const cJSON **out, uint32_t *n);

/* Buffer i's bytes (read on first use), byteLength of them. */
int gl_buffer_get(gl_ctx *c, uint32_t i, const char *where, const uint8_t **data, uint64_t *size);
/* bufferViews[i]: its first byte, byteLength and byteStride (0 when absent). */
int gl_view_get(gl_ctx *c, uint32_t i, const char *where, const uint8_t **data, uint64_t *len, uint64_t *stride);
/* The bytes of a URI: data: (base64) or a file relative to the glTF's folder. *owned is malloc'd. */
int gl_uri_read(gl_ctx *c, const char *uri, const char *where, uint64_t max, uint8_t **owned, uint64_t *size);
/* The file a relative URI names (percent-decoded, joined to c->dir) into out; -1 with the reason
 * in why (one line without the file's name). */
int gl_uri_path(gl_ctx *c, const char *uri, char *out, size_t out_size, char *why, size_t why_size);

/* Accessors (gltf_read_access.c). comps_mask: bit k set when a type of k components is accepted. */
int gl_acc_open(gl_ctx *c, uint32_t index, const char *where, unsigned comps_mask, gl_acc *a);
/* count * comps floats (normalized integers mapped to [0, 1] / [-1, 1]), malloc'd. */
int gl_acc_floats(gl_ctx *c, const gl_acc *a, const char *where, float **out);
/* count unsigned integers (SCALAR UNSIGNED_BYTE / SHORT / INT only), malloc'd. */
int gl_acc_uints(gl_ctx *c, const gl_acc *a, const char *where, uint32_t **out);

/* The document -> c->s (gltf_read_scene.c). */
int gl_build_scene(gl_ctx *c);

#endif /* BK_HAVE_GLTF */
#endif /* BK_GLTF_READ_INTERNAL_H */
