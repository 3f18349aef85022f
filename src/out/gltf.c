/* gltf.c - the glTF 2.0 writer behind --mesh-out FILE.gltf | FILE.glb (gltf.h says what the
 * asset holds and why).
 *
 * Pipeline: bk_scene + bk_atlas -> nodes (objects) and primitives (node, material, page) ->
 * each primitive's vertices deduplicated over (position, normal, uv0, uv1) -> images (lit pages
 * from lit.c, lightmap and texture files' bytes) -> one binary buffer [positions | normals | uv0
 * | uv1 | indices | images] -> JSON (built in memory: a GLB states its chunk lengths first) ->
 * GLB container or .gltf with the buffer as a base64 data: URI.
 * Spec: https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html (GLB: section 4.4; accessor
 * bounds: 3.6.2.5; TEXCOORD_n numbering: 3.7.2.1; KHR_materials_emissive_strength).
 */
#define _XOPEN_SOURCE 700 /* realpath, open_memstream */
#include "bk_common.h"
#include "bk_material.h"
#include "gltf.h"
#include "image.h"
#include "lit.h"
#include "outputs.h"
#include "util.h"

/* stb_image_write (Debian's libstb-dev) for scene textures that are no PNG or JPEG file: a static
 * copy, its own warnings not ours */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#endif
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GLB_MAGIC               0x46546C67u /* "glTF" little-endian */
#define GLB_CHUNK_JSON          0x4E4F534Au /* "JSON" */
#define GLB_CHUNK_BIN           0x004E4942u /* "BIN\0" */
#define GL_FLOAT                5126
#define GL_UNSIGNED_INT         5125
#define GL_ARRAY_BUFFER         34962
#define GL_ELEMENT_ARRAY        34963
#define GL_LINEAR               9729
#define GL_LINEAR_MIPMAP_LINEAR 9987
#define GL_CLAMP_TO_EDGE        33071

void bk_gltf_opts_default(bk_gltf_opts *o)
{
    memset(o, 0, sizeof *o);
    o->exposure = 1.0f;
}

int bk_gltf_path(const char *path) { return bk_path_has_ext(path, ".gltf") || bk_path_has_ext(path, ".glb"); }

/* ---- paths and URIs ------------------------------------------------------------------------ */

static void dir_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == path) snprintf(buf, n, "/");
    else snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* The absolute, resolved path of a file that may not exist yet (an output): realpath of its
 * folder + its name. 0 or -1. */
static int resolve_new(const char *path, char *out, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    dir_of(path, dir, sizeof dir);
    if (!realpath(dir, real)) return -1;
    int k = snprintf(out, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base_of(path));
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* to, relative to the folder from (both absolute and resolved). */
static void relative_path(const char *from, const char *to, char *out, size_t n)
{
    if (!strcmp(from, "/")) {
        snprintf(out, n, "%s", to + 1);
        return;
    }
    /* common: the end of the longest run of whole components both start with */
    size_t common = 0;
    for (size_t i = 0;; ++i) {
        char a = from[i], b = to[i];
        if ((a == '/' || a == 0) && (b == '/' || b == 0)) common = i;
        if (a == 0 || b == 0 || a != b) break;
    }
    size_t o = 0;
    out[0] = 0;
    for (const char *p = from + common; *p; ++p)
        if (*p == '/' && o + 4 < n) {
            memcpy(out + o, "../", 4);
            o += 3;
        }
    snprintf(out + o, n - o, "%s", to + common + (to[common] == '/'));
}

/* A relative reference (RFC 3986) for a relative path: unreserved characters and '/' stay, every
 * other byte becomes %XX. */
static void uri_encode(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t            o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < n; ++p) {
        unsigned c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || c == '/')
            out[o++] = (char)c;
        else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped; bytes that are not valid
 * UTF-8 (JSON text must be) become '?'. */
static void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', f);
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            ++p;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            ++p;
        } else if (c < 0x80) {
            fputc((int)c, f);
            ++p;
        } else {
            int len = c >= 0xF0 && c < 0xF5 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
            int ok = len > 0;
            for (int k = 1; ok && k < len; ++k) ok = (p[k] & 0xC0) == 0x80;
            /* no overlong 3/4-byte forms, no surrogates, nothing above U+10FFFF */
            if (ok && len == 3) ok = !(c == 0xE0 && p[1] < 0xA0) && !(c == 0xED && p[1] >= 0xA0);
            if (ok && len == 4) ok = !(c == 0xF0 && p[1] < 0x90) && !(c == 0xF4 && p[1] >= 0x90);
            if (ok) {
                fwrite(p, 1, (size_t)len, f);
                p += len;
            } else {
                fputc('?', f);
                ++p;
            }
        }
    }
    fputc('"', f);
}

static void json_floats(FILE *f, const float *v, int n)
{
    fputc('[', f);
    for (int i = 0; i < n; ++i) fprintf(f, "%s%.9g", i ? "," : "", (double)v[i]);
    fputc(']', f);
}

static void base64(FILE *f, const uint8_t *d, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t            i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        fputc(t[v >> 18], f);
        fputc(t[v >> 12 & 63], f);
        fputc(t[v >> 6 & 63], f);
        fputc(t[v & 63], f);
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)d[i] << 16;
        fputc(t[v >> 18], f);
        fputc(t[v >> 12 & 63], f);
        fputs("==", f);
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
        fputc(t[v >> 18], f);
        fputc(t[v >> 12 & 63], f);
        fputc(t[v >> 6 & 63], f);
        fputc('=', f);
    }
}

/* ---- geometry ------------------------------------------------------------------------------ */

#define VTX_FLOATS 10 /* position 3, normal 3, uv0 2, uv1 2 */

typedef struct vtx_map {
    float    *v; /* VTX_FLOATS per vertex */
    uint32_t  count;
    uint32_t *slot; /* open addressing: vertex index or BK_NONE */
    size_t    cap;  /* power of two */
} vtx_map;

static uint32_t vtx_add(vtx_map *m, const float *key)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (int k = 0; k < VTX_FLOATS; ++k) h = (h ^ bk_float_bits(key[k])) * 0x100000001B3ull;
    size_t i = (size_t)(h ^ h >> 29) & (m->cap - 1);
    for (;;) {
        uint32_t s = m->slot[i];
        if (s == BK_NONE) {
            memcpy(m->v + (size_t)VTX_FLOATS * m->count, key, sizeof(float) * VTX_FLOATS);
            return m->slot[i] = m->count++;
        }
        if (!memcmp(m->v + (size_t)VTX_FLOATS * s, key, sizeof(float) * VTX_FLOATS)) return s;
        i = (i + 1) & (m->cap - 1);
    }
}

static int normalize3(float *n)
{
    double l = sqrt((double)n[0] * n[0] + (double)n[1] * n[1] + (double)n[2] * n[2]);
    if (!(l > 1e-30) || !isfinite(l)) return 0;
    for (int k = 0; k < 3; ++k) n[k] = (float)(n[k] / l);
    return 1;
}

/* The attributes of corner k of triangle t, -0 made +0 so equal vertices compare equal. */
static void corner_key(const bk_scene *s, const bk_atlas *a, uint32_t t, int k, const float *flat, float *key)
{
    size_t c = 3 * (size_t)t + k;
    memcpy(key, s->positions + 3 * (size_t)s->tri_v[c], sizeof(float) * 3);
    int vn = s->tri_vn && s->normals;
    for (int j = 0; j < 3 && vn; ++j) vn = s->tri_vn[3 * (size_t)t + j] < s->normal_count;
    if (vn) memcpy(key + 3, s->normals + 3 * (size_t)s->tri_vn[c], sizeof(float) * 3);
    if (!vn || !normalize3(key + 3)) memcpy(key + 3, flat, sizeof(float) * 3);
    uint32_t vt = s->tri_vt && s->texcoords ? s->tri_vt[c] : BK_NONE;
    if (vt < s->texcoord_count) {
        key[6] = s->texcoords[2 * (size_t)vt];
        key[7] = 1.0f - s->texcoords[2 * (size_t)vt + 1];
    } else key[6] = key[7] = 0.0f;
    key[8] = a->uv[2 * c];
    key[9] = a->uv[2 * c + 1];
    for (int j = 0; j < VTX_FLOATS; ++j) key[j] += 0.0f;
}

static void flat_normal(const bk_scene *s, uint32_t t, float *n)
{
    const float *p0 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t];
    const float *p1 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + 1];
    const float *p2 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + 2];
    double       e1[3], e2[3];
    for (int k = 0; k < 3; ++k) {
        e1[k] = (double)p1[k] - p0[k];
        e2[k] = (double)p2[k] - p0[k];
    }
    n[0] = (float)(e1[1] * e2[2] - e1[2] * e2[1]);
    n[1] = (float)(e1[2] * e2[0] - e1[0] * e2[2]);
    n[2] = (float)(e1[0] * e2[1] - e1[1] * e2[0]);
    if (!normalize3(n)) {
        n[0] = 0.0f;
        n[1] = 0.0f;
        n[2] = 1.0f;
    } /* zero area: any unit vector */
}

/* ---- the writer ---------------------------------------------------------------------------- */

typedef struct prim {
    uint32_t node;     /* its node (one mesh each) */
    uint32_t material; /* scene material, or material_count for the default one */
    uint32_t page;
    uint32_t gmat;   /* its glTF material: one per (material, page) */
    uint32_t tris;   /* triangles, listed from first in tri_order */
    size_t   first;  /* first triangle in tri_order; then, for its indices, 3 x that */
    uint32_t vfirst; /* its vertices in the vertex sections */
    uint32_t vcount;
    float    pmin[3], pmax[3]; /* POSITION bounds */
} prim;

typedef struct node {
    uint32_t key;   /* object index, object_count + voxel instance, or BK_NONE (no object) */
    uint32_t first; /* first primitive (primitives are grouped by node) */
    uint32_t count; /* primitives */
} node;

/* An image of the asset, its bytes in the buffer. */
typedef struct image {
    uint8_t    *data;
    size_t      size, offset; /* offset in the buffer */
    const char *mime;
    char        name[96];
} image;

/* The section offsets of the buffer, in bytes (each a multiple of 4). */
typedef struct layout {
    size_t pos, nrm, uv0, uv1, idx, img, total;
} layout;

/* The writer's state, filled phase by phase (job_run lists the phases). */
typedef struct gltf_job {
    /* the call */
    const char         *path;
    const bk_scene     *s;
    const bk_atlas     *a;
    const bk_gltf_opts *o;
    char               *err;
    size_t              err_size;
    int                 glb;                     /* a .glb container, else .gltf with a data: URI */
    uint32_t            pages;                   /* atlas pages the primitives are split by (1 without tri_page) */
    uint32_t            M;                       /* scene materials + the default one */
    size_t              corners;                 /* 3 per triangle */
    char                out_dir[PATH_MAX + 256]; /* the output's resolved folder, URIs are relative to it */
    /* nodes, primitives, vertices */
    node     *nodes;
    uint32_t  node_count;
    prim     *prims;
    uint32_t  prim_count;
    uint32_t *tri_order; /* triangles grouped by primitive, file order within one */
    uint32_t *gmat_of;   /* M * pages -> glTF material or BK_NONE */
    uint32_t *gmat_prim; /* per glTF material: a primitive that uses it (its material and page) */
    uint32_t  gmat_count;
    float    *vtx; /* VTX_FLOATS per vertex, every primitive's own after the last's */
    uint32_t  nv;
    uint32_t *idx; /* 3 per triangle, grouped by primitive, local to its primitive */
    /* images: the lit pages, the lightmap pages (PNG), then each scene texture once */
    image *img;
    int    n_img;
    int    lit_base, lm_base, map_base; /* their first image (= texture); -1: none */
    int    lm_png;                      /* the lightmaps are PNGs: images, not only named */
    int   *map_img;                     /* per scene image: its glTF image, or -1 */
    int   *cut_img;                     /* per scene material: its colour + map_d alpha image, or -1 */
    char (*lm_uri)[PATH_MAX * 3];       /* per page: relative URI, "" when it would leave the folder */
    /* the binary buffer */
    layout   L;
    uint8_t *bin;
    /* the JSON, written into memory */
    FILE  *jf;
    char  *json;
    size_t json_size;
} gltf_job;

static void job_free(gltf_job *j)
{
    if (j->jf) fclose(j->jf);
    free(j->nodes);
    free(j->prims);
    free(j->tri_order);
    free(j->gmat_of);
    free(j->gmat_prim);
    free(j->vtx);
    free(j->idx);
    for (int i = 0; j->img && i < j->n_img; ++i) free(j->img[i].data);
    free(j->img);
    free(j->map_img);
    free(j->cut_img);
    free(j->lm_uri);
    free(j->bin);
    free(j->json);
}

static int job_oom(gltf_job *J) { return bk_fail(J->err, J->err_size, "%s: out of memory", J->path); }

/* The object of triangle t: an index of object_names, object_count + a voxel instance, or BK_NONE. */
static uint32_t tri_key(const gltf_job *J, uint32_t t)
{
    const bk_scene   *s = J->s;
    const bk_voxmesh *vm = J->o ? J->o->vm : NULL;
    if (vm && t >= vm->first_quad_tri) {
        uint32_t q = (t - vm->first_quad_tri) / 2;
        return q < vm->quad_count ? s->object_count + vm->quads[q].instance : BK_NONE;
    }
    uint32_t k = s->tri_object ? s->tri_object[t] : BK_NONE;
    return k < s->object_count ? k : BK_NONE;
}

/* A node's name: its object's, its voxel instance's object's or vox_instance_I, or the scene's. */
static void node_name(const gltf_job *J, uint32_t key, char *out, size_t n)
{
    const bk_scene *s = J->s;
    const bk_scene *src = J->o && J->o->src ? J->o->src : s;
    if (key == BK_NONE) snprintf(out, n, "%s", J->o && J->o->name && J->o->name[0] ? J->o->name : "scene");
    else if (key < s->object_count) snprintf(out, n, "%s", s->object_names[key]);
    else {
        uint32_t i = key - s->object_count;
        uint32_t ob = i < src->vox_instance_count ? src->vox_instances[i].object : BK_NONE;
        if (ob < src->object_count) snprintf(out, n, "%s", src->object_names[ob]);
        else snprintf(out, n, "vox_instance_%u", i);
    }
}

/* A small open-addressing map from 64-bit keys to indices. */
typedef struct key_map {
    uint64_t *key;
    uint32_t *val;
    size_t    cap;
} key_map;

static int key_map_init(key_map *m, size_t n)
{
    m->cap = 16;
    while (m->cap < 2 * n) m->cap <<= 1;
    m->key = malloc(sizeof(uint64_t) * m->cap);
    m->val = malloc(sizeof(uint32_t) * m->cap);
    if (!m->key || !m->val) return -1;
    memset(m->val, 0xFF, sizeof(uint32_t) * m->cap);
    return 0;
}

static void key_map_free(key_map *m)
{
    free(m->key);
    free(m->val);
}

/* The slot of k: val[slot] is BK_NONE when k is new. */
static size_t key_map_slot(const key_map *m, uint64_t k)
{
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    size_t   i = (size_t)(h ^ h >> 31) & (m->cap - 1);
    while (m->val[i] != BK_NONE && m->key[i] != k) i = (i + 1) & (m->cap - 1);
    return i;
}

/* The value of k, or v (the count of keys so far, the next index) stored for it when k is new;
 * *added says which. BK_NONE when out of memory. */
static uint32_t key_map_get(key_map *m, uint64_t k, uint32_t v, int *added)
{
    size_t i = key_map_slot(m, k);
    *added = m->val[i] == BK_NONE;
    if (!*added) return m->val[i];
    if (2 * ((size_t)v + 1) > m->cap) { /* grow: rehash into twice the size */
        key_map g;
        if (key_map_init(&g, m->cap)) {
            key_map_free(&g);
            return BK_NONE;
        }
        for (size_t j = 0; j < m->cap; ++j)
            if (m->val[j] != BK_NONE) {
                size_t gs = key_map_slot(&g, m->key[j]);
                g.key[gs] = m->key[j];
                g.val[gs] = m->val[j];
            }
        key_map_free(m);
        *m = g;
        i = key_map_slot(m, k);
    }
    m->key[i] = k;
    return m->val[i] = v;
}

/* Nodes (one per object, in order of first appearance) and their primitives, one per (material,
 * page) of the node's triangles, grouped by node; the triangles in primitive order. */
static int job_primitives(gltf_job *J)
{
    const bk_scene *s = J->s;
    uint32_t        T = s->tri_count, pages = J->pages, M = J->M;
    uint32_t       *tri_prim = malloc(sizeof(uint32_t) * T);
    prim           *first = malloc(sizeof(prim) * T); /* primitives in order of first appearance */
    uint32_t       *node_of_prim = malloc(sizeof(uint32_t) * T);
    J->nodes = malloc(sizeof(node) * T);
    J->gmat_of = malloc(sizeof(uint32_t) * (size_t)M * pages);
    J->gmat_prim = malloc(sizeof(uint32_t) * T);
    J->tri_order = malloc(sizeof(uint32_t) * T);
    key_map nm, pm;
    memset(&nm, 0, sizeof nm);
    memset(&pm, 0, sizeof pm);
    int rc = 0;
    if (!tri_prim || !first || !node_of_prim || !J->nodes || !J->gmat_of || !J->gmat_prim || !J->tri_order ||
        key_map_init(&nm, 64) || key_map_init(&pm, T < 4096 ? T : 4096))
        rc = job_oom(J);
    if (!rc) memset(J->gmat_of, 0xFF, sizeof(uint32_t) * (size_t)M * pages);
    uint32_t np = 0;
    for (uint32_t t = 0; !rc && t < T; ++t) {
        uint32_t m = s->tri_material && s->tri_material[t] < s->material_count ? s->tri_material[t] : s->material_count;
        uint32_t pg = pages > 1 ? J->a->tri_page[t] : 0;
        if (pg >= pages) {
            rc = bk_fail(J->err, J->err_size, "%s: triangle %u on page %u of %u", J->path, t, pg, pages);
            break;
        }
        uint32_t key = tri_key(J, t);
        int      added;
        uint32_t nd = key_map_get(&nm, key, J->node_count, &added);
        if (nd == BK_NONE) {
            rc = job_oom(J);
            break;
        }
        if (added) {
            J->nodes[nd].key = key;
            J->nodes[nd].first = J->nodes[nd].count = 0;
            J->node_count++;
        }
        uint32_t pi = key_map_get(&pm, ((uint64_t)nd * M + m) * pages + pg, np, &added);
        if (pi == BK_NONE) {
            rc = job_oom(J);
            break;
        }
        if (added) {
            memset(&first[np], 0, sizeof(prim));
            first[np].node = nd;
            first[np].material = m;
            first[np].page = pg;
            size_t gk = (size_t)m * pages + pg;
            if (J->gmat_of[gk] == BK_NONE) {
                J->gmat_prim[J->gmat_count] = np;
                J->gmat_of[gk] = J->gmat_count++;
            }
            first[np].gmat = J->gmat_of[gk];
            np++;
        }
        tri_prim[t] = pi;
        first[tri_prim[t]].tris++;
    }
    if (!rc) {
        /* primitives grouped by node (stable): rank = node's first + order within the node */
        J->prims = malloc(sizeof(prim) * (np ? np : 1));
        if (!J->prims) rc = job_oom(J);
    }
    if (!rc) {
        for (uint32_t i = 0; i < np; ++i) J->nodes[first[i].node].count++;
        uint32_t at = 0;
        for (uint32_t n = 0; n < J->node_count; ++n) {
            J->nodes[n].first = at;
            at += J->nodes[n].count;
            J->nodes[n].count = 0;
        }
        for (uint32_t i = 0; i < np; ++i) {
            node *n = &J->nodes[first[i].node];
            node_of_prim[i] = n->first + n->count++;
            J->prims[node_of_prim[i]] = first[i];
        }
        for (uint32_t g = 0; g < J->gmat_count; ++g) J->gmat_prim[g] = node_of_prim[J->gmat_prim[g]];
        J->prim_count = np;
        size_t acc = 0;
        for (uint32_t i = 0; i < np; ++i) {
            J->prims[i].first = acc;
            acc += J->prims[i].tris;
            J->prims[i].tris = 0;
        }
        for (uint32_t t = 0; t < T; ++t) {
            prim *p = &J->prims[node_of_prim[tri_prim[t]]];
            J->tri_order[p->first + p->tris++] = t;
        }
    }
    key_map_free(&nm);
    key_map_free(&pm);
    free(tri_prim);
    free(first);
    free(node_of_prim);
    return rc;
}

/* Each primitive's own vertices, deduplicated over their attributes within it, its indices
 * (local to it) and POSITION bounds. */
static int job_vertices(gltf_job *J)
{
    const bk_scene *s = J->s;
    size_t          most = 0;
    for (uint32_t i = 0; i < J->prim_count; ++i)
        if (J->prims[i].tris > most) most = J->prims[i].tris;
    vtx_map vm;
    vm.cap = 16;
    while (vm.cap < 6 * most) vm.cap <<= 1;
    vm.slot = malloc(sizeof(uint32_t) * vm.cap);
    J->vtx = malloc(sizeof(float) * VTX_FLOATS * (J->corners ? J->corners : 1));
    J->idx = malloc(sizeof(uint32_t) * (J->corners ? J->corners : 1));
    if (!vm.slot || !J->vtx || !J->idx) {
        free(vm.slot);
        return job_oom(J);
    }
    uint32_t nv = 0;
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        prim *p = &J->prims[i];
        /* a table of its own size: clearing the largest one for every small primitive would cost
         * primitives x the largest */
        size_t cap = 16;
        while (cap < 6 * (size_t)p->tris) cap <<= 1;
        vm.cap = cap;
        memset(vm.slot, 0xFF, sizeof(uint32_t) * cap);
        vm.v = J->vtx + (size_t)VTX_FLOATS * nv;
        vm.count = 0;
        for (int d = 0; d < 3; ++d) {
            p->pmin[d] = INFINITY;
            p->pmax[d] = -INFINITY;
        }
        for (uint32_t k = 0; k < p->tris; ++k) {
            uint32_t t = J->tri_order[p->first + k];
            float    flat[3], key[VTX_FLOATS];
            flat_normal(s, t, flat);
            for (int c = 0; c < 3; ++c) {
                corner_key(s, J->a, t, c, flat, key);
                for (int d = 0; d < 3; ++d) {
                    if (key[d] < p->pmin[d]) p->pmin[d] = key[d];
                    if (key[d] > p->pmax[d]) p->pmax[d] = key[d];
                }
                J->idx[3 * (p->first + k) + c] = vtx_add(&vm, key);
            }
        }
        p->vfirst = nv;
        p->vcount = vm.count;
        nv += vm.count;
    }
    J->nv = nv;
    free(vm.slot);
    return 0;
}

/* ---- images -------------------------------------------------------------------------------- */

/* The bytes of a file, NULL when it cannot be read. */
static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *d = NULL;
    long     sz = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (sz > 0 && sz < (1l << 31) && fseek(f, 0, SEEK_SET) == 0 && (d = malloc((size_t)sz)) &&
        fread(d, 1, (size_t)sz, f) != (size_t)sz) {
        free(d);
        d = NULL;
    }
    fclose(f);
    *n = d ? (size_t)sz : 0;
    return d;
}

static const char *image_mime(const uint8_t *d, size_t n)
{
    static const uint8_t png[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (n >= 8 && !memcmp(d, png, 8)) return "image/png";
    if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return "image/jpeg";
    return NULL;
}

static void png_sink(void *ctx, void *data, int size) { fwrite(data, 1, (size_t)size, (FILE *)ctx); }

/* A decoded 8-bit texture as PNG bytes (stb_image_write: RGBA kept). */
static uint8_t *encode_rgba8(const bk_image *im, size_t *n)
{
    char  *buf = NULL;
    size_t len = 0;
    FILE  *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int ok = stbi_write_png_to_func(png_sink, f, (int)im->w, (int)im->h, 4, im->rgba8, (int)im->w * 4);
    if (fclose(f) != 0 || !ok) {
        free(buf);
        return NULL;
    }
    *n = len;
    return (uint8_t *)buf;
}

/* linear RGB pages (w x h x 3 floats) as the PNG writer makes lightmaps (image.h). */
static uint8_t *encode_page(const gltf_job *J, const float *rgb, float exposure, size_t *n)
{
    char  *buf = NULL;
    size_t len = 0;
    FILE  *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = bk_image_write_file(f, "lit.png", rgb, J->a->width, J->a->height, exposure, NULL, 0); /* PNG by its name */
    if (fclose(f) != 0 || rc) {
        free(buf);
        return NULL;
    }
    *n = len;
    return (uint8_t *)buf;
}

static image *add_image(gltf_job *J, uint8_t *data, size_t size, const char *mime, const char *name)
{
    image *im = &J->img[J->n_img++];
    im->data = data;
    im->size = size;
    im->mime = mime;
    snprintf(im->name, sizeof im->name, "%.95s", name);
    return im;
}

/* A base colour texture with the cut-outs of material m: Kd x map_Kd's colour (resampled to
 * map_d's size when they differ; Kd alone without map_Kd) and map_d's opacity as alpha, as PNG
 * bytes; its factor is then 1 (no Mix node in Blender's import). glTF takes opacity only from the base colour's alpha.
 * NULL when map_d is not an 8-bit image that loaded. */
static uint8_t *cutout_png(const bk_scene *s, const bk_material *mt, size_t *n)
{
    if (mt->map_d.image >= s->image_count) return NULL;
    const bk_image *d = &s->images[mt->map_d.image];
    const bk_image *c = mt->map_kd.image < s->image_count ? &s->images[mt->map_kd.image] : NULL;
    if (!d->rgba8 || (c && !c->rgba8)) return NULL;
    bk_image out;
    memset(&out, 0, sizeof out);
    out.w = d->w;
    out.h = d->h;
    if (!(out.rgba8 = malloc(4 * (size_t)d->w * d->h))) return NULL;
    int from_alpha = mt->map_d.channel == BK_TEX_CHANNEL_ALPHA ||
                     (mt->map_d.channel == BK_TEX_CHANNEL_AUTO && (d->channels == 2 || d->channels == 4));
    for (uint32_t y = 0; y < d->h; ++y)
        for (uint32_t x = 0; x < d->w; ++x) {
            uint8_t       *o = out.rgba8 + 4 * ((size_t)y * d->w + x);
            const uint8_t *a = d->rgba8 + 4 * ((size_t)y * d->w + x);
            for (int ch = 0; ch < 3; ++ch) {
                float v = mt->kd[ch];
                if (c) {
                    uint32_t cx = (uint32_t)((uint64_t)x * c->w / d->w), cy = (uint32_t)((uint64_t)y * c->h / d->h);
                    float    t = bk_image_srgb_to_linear(c->rgba8[4 * ((size_t)cy * c->w + cx) + ch] / 255.0f);
                    v = mt->kd_by_map ? t : v * t;
                }
                o[ch] = bk_image_srgb8(v);
            }
            o[3] = from_alpha ? a[3] : a[0];
        }
    uint8_t *png = encode_rgba8(&out, n);
    free(out.rgba8);
    return png;
}

/* The images, each a texture: the lit pages (when the bake's RGB is given), the lightmap pages
 * (PNG: the file's bytes), then every scene texture a material's map_Kd uses (the file's bytes
 * when it is a PNG or JPEG, else the decoded texels as PNG). All go into the buffer. */
static int job_images(gltf_job *J)
{
    const bk_scene     *s = J->s;
    const bk_gltf_opts *o = J->o;
    uint32_t            pages = J->pages;
    size_t              page_px = (size_t)J->a->width * J->a->height;
    J->lm_png = o && o->lightmaps && bk_path_has_ext(o->lightmaps[0], ".png");
    J->img = calloc(2 * (size_t)pages + s->image_count + s->material_count + 1, sizeof(image));
    J->map_img = malloc(sizeof(int) * (s->image_count + 1));
    J->cut_img = malloc(sizeof(int) * (s->material_count + 1));
    J->lm_uri = o && o->lightmaps ? calloc(pages, sizeof *J->lm_uri) : NULL;
    if (!J->img || !J->map_img || !J->cut_img || (o && o->lightmaps && !J->lm_uri)) return job_oom(J);
    for (uint32_t m = 0; m < s->material_count; ++m) J->cut_img[m] = -1;
    J->lit_base = J->lm_base = -1;
    if (o && o->rgb) {
        size_t npx = BK_ATLAS_PIXELS(J->a);
        float *lit = malloc(sizeof(float) * 3 * (npx ? npx : 1));
        if (!lit) return job_oom(J);
        if (bk_lit_pages(s, J->a, o->rgb, o->pool, lit, J->err, J->err_size)) {
            free(lit);
            return -1;
        }
        J->lit_base = J->n_img;
        for (uint32_t p = 0; p < pages; ++p) {
            size_t   n = 0;
            uint8_t *d = encode_page(J, lit + 3 * page_px * p, o->exposure, &n);
            char     nm[64];
            if (!d) {
                free(lit);
                return bk_fail(J->err, J->err_size, "%s: cannot encode lit page %u as PNG", J->path, p);
            }
            snprintf(nm, sizeof nm, "baker_lit_page_%u", p);
            add_image(J, d, n, "image/png", nm);
        }
        free(lit);
    }
    for (uint32_t p = 0; o && o->lightmaps && p < pages; ++p) {
        char real[PATH_MAX + 256], rel[PATH_MAX * 2];
        if (resolve_new(o->lightmaps[p], real, sizeof real))
            return bk_fail(J->err, J->err_size, "%s: cannot resolve the lightmap's path %s", J->path, o->lightmaps[p]);
        relative_path(J->out_dir, real, rel, sizeof rel);
        /* a URI that leaves the glTF's folder would name the baking machine's folders */
        if (strncmp(rel, "../", 3)) uri_encode(rel, J->lm_uri[p], sizeof J->lm_uri[p]);
        if (!J->lm_png) continue;
        const char *from = o->lightmap_files ? o->lightmap_files[p] : o->lightmaps[p];
        size_t      n = 0;
        uint8_t    *d = read_all(from, &n);
        const char *mime = d ? image_mime(d, n) : NULL;
        if (!mime || strcmp(mime, "image/png")) {
            free(d);
            return bk_fail(J->err, J->err_size, "%s: cannot read the lightmap page %s", J->path, from);
        }
        char nm[64];
        snprintf(nm, sizeof nm, "baker_lightmap_page_%u", p);
        if (J->lm_base < 0) J->lm_base = J->n_img;
        add_image(J, d, n, "image/png", nm);
    }
    J->map_base = J->n_img;
    for (uint32_t i = 0; i < s->image_count; ++i) J->map_img[i] = -1;
    for (uint32_t g = 0; g < J->gmat_count; ++g) {
        uint32_t m = J->prims[J->gmat_prim[g]].material;
        if (m >= s->material_count) continue;
        const bk_material *mt = &s->materials[m];
        uint32_t           ii = mt->map_kd.image;
        if (ii >= s->image_count) {
            if (mt->map_kd.path[0])
                fprintf(stderr, "baker: warning: %s: material %s: map_Kd %s did not load, left out\n", J->path,
                        mt->name, mt->map_kd.path);
            continue;
        }
        if (J->map_img[ii] >= 0) continue;
        const bk_image *im = &s->images[ii];
        size_t          n = 0;
        uint8_t        *d = im->path ? read_all(im->path, &n) : NULL;
        const char     *mime = d ? image_mime(d, n) : NULL;
        if (!mime) { /* not a PNG or JPEG file (TGA, BMP, an image inside a .glb...): its texels */
            free(d);
            d = im->rgba8 ? encode_rgba8(im, &n) : NULL;
            mime = "image/png";
        }
        if (!d) {
            fprintf(stderr, "baker: warning: %s: material %s: map_Kd %s is not an 8-bit image, left out\n", J->path,
                    mt->name, mt->map_kd.path);
            continue;
        }
        const char *base = im->path ? base_of(im->path) : mt->map_kd.path;
        J->map_img[ii] = J->n_img;
        add_image(J, d, n, mime, base);
    }
    for (uint32_t g = 0; g < J->gmat_count; ++g) {
        uint32_t m = J->prims[J->gmat_prim[g]].material;
        if (m >= s->material_count || s->materials[m].alpha_mode == BK_ALPHA_OPAQUE || J->cut_img[m] >= 0) continue;
        size_t   n = 0;
        uint8_t *d = cutout_png(s, &s->materials[m], &n);
        char     nm[160];
        if (!d) continue;
        snprintf(nm, sizeof nm, "baker_cutout_%.128s", s->materials[m].name);
        J->cut_img[m] = J->n_img;
        add_image(J, d, n, "image/png", nm);
    }
    return 0;
}

/* The binary buffer: the four vertex sections, the indices, then the images. */
static int job_buffer(gltf_job *J)
{
    uint32_t nv = J->nv;
    layout   L;
    L.pos = 0;
    L.nrm = L.pos + 12 * (size_t)nv;
    L.uv0 = L.nrm + 12 * (size_t)nv;
    L.uv1 = L.uv0 + 8 * (size_t)nv;
    L.idx = L.uv1 + 8 * (size_t)nv;
    L.img = L.idx + 4 * J->corners;
    size_t at = L.img;
    for (int i = 0; i < J->n_img; ++i) {
        J->img[i].offset = at;
        at += (J->img[i].size + 3) & ~(size_t)3;
    }
    L.total = at;
    J->L = L;
    if (J->glb && L.total > 0xFFFFFFFFull - (64u << 20))
        return bk_fail(J->err, J->err_size, "%s: %zu bytes of geometry and images do not fit a GLB file (4 GiB)",
                       J->path, L.total);
    if (!(J->bin = calloc(L.total ? L.total : 1, 1))) return job_oom(J);
    for (uint32_t v = 0; v < nv; ++v) {
        const float *x = J->vtx + (size_t)VTX_FLOATS * v;
        memcpy(J->bin + L.pos + 12 * (size_t)v, x, 12);
        memcpy(J->bin + L.nrm + 12 * (size_t)v, x + 3, 12);
        memcpy(J->bin + L.uv0 + 8 * (size_t)v, x + 6, 8);
        memcpy(J->bin + L.uv1 + 8 * (size_t)v, x + 8, 8);
    }
    memcpy(J->bin + L.idx, J->idx, 4 * J->corners); /* little-endian hosts only (x86-64, aarch64) */
    for (int i = 0; i < J->n_img; ++i) memcpy(J->bin + J->img[i].offset, J->img[i].data, J->img[i].size);
    return 0;
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static double lm_scale(const gltf_job *J)
{
    return J->lm_png && J->o->exposure > 0 ? 1.0 / (double)J->o->exposure : 1.0;
}

static void write_material(gltf_job *J, uint32_t g)
{
    FILE           *j = J->jf;
    const bk_scene *s = J->s;
    const prim     *p = &J->prims[J->gmat_prim[g]];
    bk_material     def;
    memset(&def, 0, sizeof def);
    snprintf(def.name, sizeof def.name, "default");
    def.kd[0] = def.kd[1] = def.kd[2] = 0.8f; /* the loader's default material */
    def.map_kd.image = BK_NONE;
    const bk_material *m = p->material < s->material_count ? &s->materials[p->material] : &def;
    int                map = m->map_kd.image < s->image_count ? J->map_img[m->map_kd.image] : -1;
    int                cut = p->material < s->material_count ? J->cut_img[p->material] : -1;
    int                lit = J->lit_base >= 0 ? J->lit_base + (int)p->page : -1;
    char               name[200];
    if (J->pages > 1) snprintf(name, sizeof name, "%s (page %u)", m->name[0] ? m->name : "material", p->page);
    else snprintf(name, sizeof name, "%s", m->name[0] ? m->name : "material");
    fputs("{\"name\":", j);
    json_str(j, name);
    float base[4];
    for (int k = 0; k < 3; ++k) {
        float v = map >= 0 && m->kd_by_map ? 1.0f : m->kd[k];
        base[k] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    if (cut >= 0)
        for (int k = 0; k < 3; ++k) base[k] = 1.0f; /* Kd is in the cut-out texture */
    base[3] = m->alpha_mode == BK_ALPHA_OPAQUE ? 1.0f : m->alpha < 0.0f ? 0.0f : m->alpha > 1.0f ? 1.0f : m->alpha;
    fputs(",\"pbrMetallicRoughness\":{\"baseColorFactor\":", j);
    json_floats(j, base, 4);
    if (cut >= 0 || map >= 0) fprintf(j, ",\"baseColorTexture\":{\"index\":%d,\"texCoord\":0}", cut >= 0 ? cut : map);
    fputs(",\"metallicFactor\":0,\"roughnessFactor\":1}", j);
    float ke[3], top = 0.0f;
    for (int k = 0; k < 3; ++k) {
        ke[k] = m->ke[k] > 0.0f ? m->ke[k] : 0.0f;
        if (ke[k] > top) top = ke[k];
    }
    if (lit >= 0)
        /* the baked look (albedo x light + emission, exposed, sRGB) as the light the surface sends
         * out: every viewer shows it with no lights of its own, and factor 1 needs no Mix node */
        fprintf(j, ",\"emissiveFactor\":[1,1,1],\"emissiveTexture\":{\"index\":%d,\"texCoord\":1}", lit);
    else if (top > 0.0f) {
        if (top > 1.0f)
            for (int k = 0; k < 3; ++k) ke[k] = ke[k] >= top ? 1.0f : ke[k] / top;
        fputs(",\"emissiveFactor\":", j);
        json_floats(j, ke, 3);
        if (top > 1.0f)
            fprintf(j, ",\"extensions\":{\"KHR_materials_emissive_strength\":{\"emissiveStrength\":%.9g}}",
                    (double)top);
    }
    /* cut-outs: glTF's MASK is baker's; baker's BLEND (a stochastic cut) is closest to glTF's blend */
    if (m->alpha_mode == BK_ALPHA_MASK)
        fprintf(j, ",\"alphaMode\":\"MASK\",\"alphaCutoff\":%.9g", (double)m->alpha_cutoff);
    else if (m->alpha_mode == BK_ALPHA_BLEND) fputs(",\"alphaMode\":\"BLEND\"", j);
    fputs(",\"doubleSided\":true,\"extras\":{", j);
    int comma = 0;
    if (J->lm_uri) {
        fprintf(j, "\"baker_lightmap\":{\"texCoord\":1,\"page\":%u,\"scale\":%.9g", p->page, lm_scale(J));
        if (J->lm_base >= 0)
            fprintf(j, ",\"image\":%d,\"texture\":%d", J->lm_base + (int)p->page, J->lm_base + (int)p->page);
        if (J->lm_uri[p->page][0]) {
            fputs(",\"uri\":", j);
            json_str(j, J->lm_uri[p->page]);
        }
        fputc('}', j);
        comma = 1;
    }
    if (lit >= 0) {
        fprintf(j, "%s\"baker_lit\":{\"texture\":%d,\"texCoord\":1}", comma ? "," : "", lit);
        comma = 1;
    }
    if (top > 0.0f) {
        fprintf(j, "%s\"baker_emission\":", comma ? "," : "");
        float e[3] = { m->ke[0], m->ke[1], m->ke[2] };
        json_floats(j, e, 3);
        comma = 1;
    }
    if (m->map_kd.path[0] && map < 0) { /* a texture glTF cannot hold, named for the record */
        fprintf(j, "%s\"baker_map_Kd\":", comma ? "," : "");
        json_str(j, m->map_kd.path);
    }
    fputs("}}", j);
}

/* JSON: the asset with baker's notes on the lightmap, the extensions used, the scene, its nodes. */
static void json_asset(gltf_job *J)
{
    FILE               *j = J->jf;
    const bk_scene     *s = J->s;
    const bk_gltf_opts *o = J->o;
    int                 emissive_strength = 0;
    for (uint32_t g = 0; J->lit_base < 0 && g < J->gmat_count; ++g) {
        uint32_t m = J->prims[J->gmat_prim[g]].material;
        if (m < s->material_count)
            for (int k = 0; k < 3; ++k) emissive_strength |= s->materials[m].ke[k] > 1.0f;
    }
    fputs("{\"asset\":{\"version\":\"2.0\",\"generator\":\"baker\",\"extras\":{\"baker\":{", j);
    fputs("\"lit\":\"each material's emissiveTexture (extras.baker_lit, TEXCOORD_1) is the baked look: albedo x "
          "light + emission, with the exposure, sRGB; shown by any viewer with no lights\",",
          j);
    fputs("\"lightmap\":\"each material's extras.baker_lightmap: sampled with TEXCOORD_1, a texel decoded to "
          "linear and multiplied by scale holds the incoming diffuse light divided by pi (the radiance of a white "
          "Lambertian surface); multiply by the base colour. An engine's lightmap slot wants it times pi "
          "(docs/engines.md)\",",
          j);
    fputs("\"texcoord_0\":\"the source file's own vt with v flipped; (0, 0) where a face has none\"", j);
    if (o && o->lightmaps) {
        fprintf(j, ",\"lightmap_encoding\":\"%s\",\"exposure\":%.9g,\"lightmaps\":[",
                J->lm_png                                  ? "8-bit sRGB after multiplying by exposure"
                : bk_path_has_ext(o->lightmaps[0], ".exr") ? "linear half-float RGB (OpenEXR .exr)"
                                                           : "linear RGBE (Radiance .hdr)",
                (double)o->exposure);
        for (uint32_t p = 0; p < J->pages; ++p) {
            fprintf(j, "%s{\"page\":%u,\"scale\":%.9g,\"file\":", p ? "," : "", p, lm_scale(J));
            json_str(j, base_of(o->lightmaps[p]));
            if (J->lm_base >= 0) fprintf(j, ",\"image\":%d,\"texture\":%d", J->lm_base + (int)p, J->lm_base + (int)p);
            if (J->lm_uri[p][0]) {
                fputs(",\"uri\":", j);
                json_str(j, J->lm_uri[p]);
            }
            fputc('}', j);
        }
        fputc(']', j);
    }
    if (o && o->directional_count > 0 && o->directional_mode) {
        const int sh = !strcmp(o->directional_mode, "sh");
        fprintf(j, ",\"directional\":{\"mode\":\"%s\",\"encoding\":\"%s\",\"files\":[", o->directional_mode,
                sh ? "L1 bands x, y, z of the light, rgb each: lightmap(n') = lightmap + dot(L1, n' - n) for a normal n' "
                     "at a surface of normal n (.exr: the bands; .png: 0.5 + L1 / (4 lightmap), as bytes)"
                   : "Unity's directional map: rgb 0.5 + 0.5 d (d the dominant direction, world space), alpha the "
                     "rebalancing 0.5 + 0.5 dot(d, n): lightmap(n') = lightmap (0.5 dot(d, n') + 0.5) / alpha");
        for (int k = 0; k < o->directional_count; ++k) {
            if (k) fputc(',', j);
            json_str(j, base_of(o->directional[k]));
        }
        fputs("]}", j);
    }
    if (o && o->probes) {
        fputs(",\"probes\":{\"uri\":", j);
        json_str(j, base_of(o->probes));
        fprintf(j,
                ",\"count\":%u,\"encoding\":\"JSON: positions, validity and the L2 spherical harmonics of the "
                "incoming radiance per probe (docs/formats.md, Light probes)\"}",
                o->probe_count);
    }
    if (o && o->shadowmask) {
        fputs(",\"shadowmask\":{\"uri\":", j);
        json_str(j, base_of(o->shadowmask));
        fputs(",\"encoding\":\"RGBA8 PNG, linear: per texel and channel the share of the light's shadow rays that "
              "reach it (1 lit, 0 shadowed), on the lightmap's UVs; the channels' lights below\",\"channels\":[",
              j);
        for (int k = 0; k < o->mask_count && k < 4; ++k) {
            const float *a = o->mask_at[k];
            if (o->mask_point[k] < 0)
                fprintf(j, "%s{\"channel\":\"%c\",\"light\":\"sun\",\"direction\":[%.9g,%.9g,%.9g]}", k ? "," : "",
                        "rgba"[k], (double)a[0], (double)a[1], (double)a[2]);
            else
                fprintf(j, "%s{\"channel\":\"%c\",\"light\":\"point\",\"index\":%d,\"position\":[%.9g,%.9g,%.9g]}",
                        k ? "," : "", "rgba"[k], o -> mask_point[k], (double)a[0], (double)a[1], (double)a[2]);
        }
        fputs("]}", j);
    }
    fputs("}}},", j);
    if (emissive_strength) fputs("\"extensionsUsed\":[\"KHR_materials_emissive_strength\"],", j);
    fputs("\"scene\":0,\"scenes\":[{\"name\":", j);
    json_str(j, o && o->name && o->name[0] ? o->name : "baker");
    fputs(",\"nodes\":[", j);
    for (uint32_t n = 0; n < J->node_count; ++n) fprintf(j, "%s%u", n ? "," : "", n);
    fputs("]}],\"nodes\":[", j);
    for (uint32_t n = 0; n < J->node_count; ++n) {
        char nm[512];
        node_name(J, J->nodes[n].key, nm, sizeof nm);
        fputs(n ? ",{\"name\":" : "{\"name\":", j);
        json_str(j, nm);
        fprintf(j, ",\"mesh\":%u}", n);
    }
    fputs("],", j);
}

/* JSON: each node's mesh and its primitives, the materials, images, textures and samplers. */
static void json_meshes(gltf_job *J)
{
    FILE *j = J->jf;
    /* accessors: 5 per primitive i: 5i POSITION, +1 NORMAL, +2 TEXCOORD_0, +3 TEXCOORD_1, +4 indices */
    fputs("\"meshes\":[", j);
    for (uint32_t n = 0; n < J->node_count; ++n) {
        char nm[512];
        node_name(J, J->nodes[n].key, nm, sizeof nm);
        fputs(n ? ",{\"name\":" : "{\"name\":", j);
        json_str(j, nm);
        fputs(",\"primitives\":[", j);
        for (uint32_t k = 0; k < J->nodes[n].count; ++k) {
            uint32_t i = J->nodes[n].first + k, a = 5 * i;
            fprintf(j,
                    "%s{\"attributes\":{\"POSITION\":%u,\"NORMAL\":%u,\"TEXCOORD_0\":%u,\"TEXCOORD_1\":%u},"
                    "\"indices\":%u,\"material\":%u,\"mode\":4}",
                    k ? "," : "", a, a + 1, a + 2, a + 3, a + 4, J->prims[i].gmat);
        }
        fputs("]}", j);
    }
    fputs("],\"materials\":[", j);
    for (uint32_t g = 0; g < J->gmat_count; ++g) {
        if (g) fputc(',', j);
        write_material(J, g);
    }
    fputc(']', j);
    if (!J->n_img) return;
    fputs(",\"images\":[", j);
    for (int i = 0; i < J->n_img; ++i) {
        fputs(i ? ",{\"name\":" : "{\"name\":", j);
        json_str(j, J->img[i].name);
        fprintf(j, ",\"mimeType\":\"%s\",\"bufferView\":%d}", J->img[i].mime, 5 + i);
    }
    /* sampler 0: the baked pages (clamp, linear); 1: scene textures (repeat, glTF's default) */
    fputs("],\"textures\":[", j);
    for (int i = 0; i < J->n_img; ++i)
        fprintf(j, "%s{\"source\":%d,\"sampler\":%d}", i ? "," : "", i, i < J->map_base ? 0 : 1);
    fprintf(j,
            "],\"samplers\":[{\"magFilter\":%d,\"minFilter\":%d,\"wrapS\":%d,\"wrapT\":%d},{\"magFilter\":%d,"
            "\"minFilter\":%d}]",
            GL_LINEAR, GL_LINEAR, GL_CLAMP_TO_EDGE, GL_CLAMP_TO_EDGE, GL_LINEAR, GL_LINEAR_MIPMAP_LINEAR);
}

/* JSON: accessors, buffer views and the buffer (inline as base64 in a .gltf), closing the text. */
static void json_buffers(gltf_job *J)
{
    FILE  *j = J->jf;
    layout L = J->L;
    fputs(",\"accessors\":[", j);
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        const prim *p = &J->prims[i];
        size_t      v = p->vfirst;
        fprintf(j,
                "%s{\"bufferView\":0,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%u,\"type\":\"VEC3\",\"min\":",
                i ? "," : "", 12 * v, GL_FLOAT, p->vcount);
        json_floats(j, p->pmin, 3);
        fputs(",\"max\":", j);
        json_floats(j, p->pmax, 3);
        fprintf(j, "},{\"bufferView\":1,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%u,\"type\":\"VEC3\"}",
                12 * v, GL_FLOAT, p->vcount);
        fprintf(j, ",{\"bufferView\":2,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%u,\"type\":\"VEC2\"}", 8 * v,
                GL_FLOAT, p->vcount);
        fprintf(j, ",{\"bufferView\":3,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%u,\"type\":\"VEC2\"}", 8 * v,
                GL_FLOAT, p->vcount);
        fprintf(j,
                ",{\"bufferView\":4,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%zu,\"type\":\"SCALAR\","
                "\"min\":[0],\"max\":[%u]}",
                12 * p->first, GL_UNSIGNED_INT, 3 * (size_t)p->tris, p->vcount - 1);
    }
    fputs("],\"bufferViews\":[", j);
    size_t off[5] = { L.pos, L.nrm, L.uv0, L.uv1, L.idx }, end[5] = { L.nrm, L.uv0, L.uv1, L.idx, L.img };
    for (int v = 0; v < 5; ++v)
        fprintf(j, "%s{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu,\"target\":%d}", v ? "," : "", off[v],
                end[v] - off[v], v < 4 ? GL_ARRAY_BUFFER : GL_ELEMENT_ARRAY);
    for (int i = 0; i < J->n_img; ++i)
        fprintf(j, ",{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu}", J->img[i].offset, J->img[i].size);
    fprintf(j, "],\"buffers\":[{\"byteLength\":%zu", L.total);
    if (!J->glb) {
        fputs(",\"uri\":\"data:application/octet-stream;base64,", j);
        base64(j, J->bin, L.total);
        fputc('"', j);
    }
    fputs("}]}", j);
}

/* The file: the JSON text of a .gltf, or the GLB container around the JSON and the buffer. */
static int job_container(gltf_job *J, FILE *f)
{
    if (!J->glb) {
        fwrite(J->json, 1, J->json_size, f);
        fputc('\n', f);
        return 0;
    }
    /* GLB: 12-byte header, JSON chunk padded with spaces, BIN chunk padded with zeros, every
     * chunk starting on a 4-byte boundary */
    layout   L = J->L;
    size_t   jpad = (4 - J->json_size % 4) % 4, bpad = (4 - L.total % 4) % 4;
    uint64_t total = 12 + 8 + J->json_size + jpad + 8 + L.total + bpad;
    if (total > 0xFFFFFFFFull)
        return bk_fail(J->err, J->err_size, "%s: %llu bytes do not fit a GLB file (4 GiB)", J->path,
                       (unsigned long long)total);
    uint32_t h[3] = { GLB_MAGIC, 2u, (uint32_t)total };
    uint32_t cj[2] = { (uint32_t)(J->json_size + jpad), GLB_CHUNK_JSON },
             cb[2] = { (uint32_t)(L.total + bpad), GLB_CHUNK_BIN };
    static const char spaces[4] = { ' ', ' ', ' ', ' ' }, zeros[4] = { 0, 0, 0, 0 };
    fwrite(h, 4, 3, f);
    fwrite(cj, 4, 2, f);
    fwrite(J->json, 1, J->json_size, f);
    fwrite(spaces, 1, jpad, f);
    fwrite(cb, 4, 2, f);
    fwrite(J->bin, 1, L.total, f);
    fwrite(zeros, 1, bpad, f);
    return 0;
}

/* The phases in order: each returns 0 or fails with err set; the state is freed once at the end. */
static int job_run(gltf_job *J, FILE *f)
{
    if (job_primitives(J) || job_vertices(J) || job_images(J) || job_buffer(J)) return -1;
    if (!(J->jf = open_memstream(&J->json, &J->json_size))) return job_oom(J);
    json_asset(J);
    json_meshes(J);
    json_buffers(J);
    int rc = fclose(J->jf);
    J->jf = NULL;
    if (rc != 0 || !J->json) return job_oom(J);
    return job_container(J, f);
}

int bk_gltf_write_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o,
                       char *err, size_t err_size)
{
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "%s: atlas built for %u triangles, scene has %u", path, a->tri_count,
                       s->tri_count);
    if (!s->tri_count) return bk_fail(err, err_size, "%s: the scene has no triangles to write", path);
    gltf_job job, *J = &job;
    memset(J, 0, sizeof *J);
    J->path = path;
    J->s = s;
    J->a = a;
    J->o = o;
    J->err = err;
    J->err_size = err_size;
    J->glb = bk_path_has_ext(path, ".glb");
    J->pages = a->page_count > 1 && a->tri_page ? (uint32_t)a->page_count : 1u;
    J->M = s->material_count + 1;
    J->corners = 3 * (size_t)s->tri_count;
    char out_real[PATH_MAX + 256];
    int  rc;
    if (resolve_new(path, out_real, sizeof out_real))
        rc = bk_fail(err, err_size, "%s: its folder cannot be resolved", path);
    else {
        dir_of(out_real, J->out_dir, sizeof J->out_dir);
        rc = job_run(J, f);
    }
    job_free(J);
    if (rc) return -1;
    if (ferror(f)) return bk_fail_write(err, err_size, path);
    return 0;
}

int bk_gltf_write(const char *path, const bk_scene *s, const bk_atlas *a, const bk_gltf_opts *o, char *err,
                  size_t err_size)
{
    bk_outfile of;
    if (bk_outfile_open(&of, path, err, err_size) != 0) return -1;
    if (bk_gltf_write_file(of.f, path, s, a, o, err, err_size)) {
        bk_outfile_abort(&of);
        return -1;
    }
    return bk_outfile_commit(&of, err, err_size);
}
