/* gltf.c - the glTF 2.0 writer behind --mesh-out FILE.gltf | FILE.glb (gltf.h says what the
 * asset holds and why).
 *
 * Pipeline: bk_scene + bk_atlas -> vertices deduplicated over (position, normal, uv0, uv1) ->
 * one binary buffer [positions | normals | uv0 | uv1 | indices of every primitive] -> JSON
 * (built in memory: a GLB states its chunk lengths first) -> GLB container or .gltf with the
 * buffer as a base64 data: URI.
 * Spec: https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html (GLB: section 4.4; accessor
 * bounds: 3.6.2.5; TEXCOORD_n numbering: 3.7.2.1; KHR_materials_emissive_strength).
 */
#define _XOPEN_SOURCE 700 /* realpath, open_memstream */
#include "bk_common.h"
#include "gltf.h"
#include "outputs.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GLB_MAGIC        0x46546C67u /* "glTF" little-endian */
#define GLB_CHUNK_JSON   0x4E4F534Au /* "JSON" */
#define GLB_CHUNK_BIN    0x004E4942u /* "BIN\0" */
#define GL_FLOAT         5126
#define GL_UNSIGNED_INT  5125
#define GL_ARRAY_BUFFER  34962
#define GL_ELEMENT_ARRAY 34963
#define GL_LINEAR        9729
#define GL_CLAMP_TO_EDGE 33071

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
    uint32_t material; /* scene material, or material_count for the default one */
    uint32_t page;
    uint32_t tris;
    size_t   first; /* first index in the index section */
} prim;

/* The section offsets of the buffer, in bytes (each a multiple of 4). */
typedef struct layout {
    size_t pos, nrm, uv0, uv1, idx, total;
} layout;

static layout buffer_layout(uint32_t nv, size_t indices)
{
    layout l;
    l.pos = 0;
    l.nrm = l.pos + 12 * (size_t)nv;
    l.uv0 = l.nrm + 12 * (size_t)nv;
    l.uv1 = l.uv0 + 8 * (size_t)nv;
    l.idx = l.uv1 + 8 * (size_t)nv;
    l.total = l.idx + 4 * indices;
    return l;
}

/* The writer's state, filled phase by phase (bk_gltf_write_file lists the phases). */
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
    /* primitives and vertices */
    vtx_map   vm;
    uint32_t *prim_of; /* (material_count + 1) * pages -> primitive or BK_NONE */
    prim     *prims;
    uint32_t  prim_count;
    uint32_t *tri_prim;         /* primitive of each triangle, while the indices are made */
    uint32_t *idx;              /* 3 per triangle, grouped by primitive */
    float     pmin[3], pmax[3]; /* POSITION bounds */
    /* the binary buffer */
    layout   L;
    uint8_t *bin;
    /* images: the lightmap pages, then each map_Kd file once */
    int lm_png;                    /* the lightmaps are PNGs: textures, not only named */
    char (*lm_uri)[PATH_MAX * 3];  /* per page, NULL without lightmaps */
    char (*map_uri)[PATH_MAX * 3]; /* n_map of them */
    int *map_tex;                  /* per scene material: its texture, or -1 */
    int  n_map, tex_base;
    /* the JSON, written into memory */
    FILE  *jf;
    char  *json;
    size_t json_size;
} gltf_job;

static void job_free(gltf_job *j)
{
    if (j->jf) fclose(j->jf);
    free(j->vm.v);
    free(j->vm.slot);
    free(j->prim_of);
    free(j->prims);
    free(j->tri_prim);
    free(j->idx);
    free(j->bin);
    free(j->lm_uri);
    free(j->map_tex);
    free(j->map_uri);
    free(j->json);
}

static int job_oom(gltf_job *J) { return bk_fail(J->err, J->err_size, "%s: out of memory", J->path); }

static void write_material(FILE *j, const bk_scene *s, const prim *p, int pages, int lm_tex, const char *lm_uri,
                           int map_tex)
{
    bk_material def;
    memset(&def, 0, sizeof def);
    snprintf(def.name, sizeof def.name, "default");
    def.kd[0] = def.kd[1] = def.kd[2] = 0.8f; /* the loader's default material */
    const bk_material *m = p->material < s->material_count ? &s->materials[p->material] : &def;
    char               name[200];
    if (pages > 1) snprintf(name, sizeof name, "%s (page %u)", m->name[0] ? m->name : "material", p->page);
    else snprintf(name, sizeof name, "%s", m->name[0] ? m->name : "material");
    fputs("{\"name\":", j);
    json_str(j, name);
    float base[4];
    for (int k = 0; k < 3; ++k) base[k] = m->kd[k] < 0.0f ? 0.0f : m->kd[k] > 1.0f ? 1.0f : m->kd[k];
    base[3] = 1.0f;
    fputs(",\"pbrMetallicRoughness\":{\"baseColorFactor\":", j);
    json_floats(j, base, 4);
    if (map_tex >= 0) fprintf(j, ",\"baseColorTexture\":{\"index\":%d,\"texCoord\":0}", map_tex);
    fputs(",\"metallicFactor\":0,\"roughnessFactor\":1}", j);
    float ke[3], top = 0.0f;
    for (int k = 0; k < 3; ++k) {
        ke[k] = m->ke[k] > 0.0f ? m->ke[k] : 0.0f;
        if (ke[k] > top) top = ke[k];
    }
    if (top > 0.0f) {
        if (top > 1.0f)
            for (int k = 0; k < 3; ++k) ke[k] = ke[k] >= top ? 1.0f : ke[k] / top;
        fputs(",\"emissiveFactor\":", j);
        json_floats(j, ke, 3);
        if (top > 1.0f)
            fprintf(j, ",\"extensions\":{\"KHR_materials_emissive_strength\":{\"emissiveStrength\":%.9g}}",
                    (double)top);
    } else if (lm_tex >= 0) {
        /* the baked look: Kd x the lightmap (sRGB, as glTF's emissive textures are) is the light
         * the surface sends out, so a viewer shows the lit scene with no lights of its own */
        fputs(",\"emissiveFactor\":", j);
        json_floats(j, base, 3);
        fprintf(j, ",\"emissiveTexture\":{\"index\":%d,\"texCoord\":1}", lm_tex);
    }
    if (lm_tex >= 0) fprintf(j, ",\"occlusionTexture\":{\"index\":%d,\"texCoord\":1}", lm_tex);
    fputs(",\"doubleSided\":true", j);
    int lost_map = m->map_kd.path[0] && map_tex < 0;
    if (lm_uri || lost_map) {
        fputs(",\"extras\":{", j);
        if (lm_uri) {
            fputs("\"baker_lightmap\":{", j);
            if (lm_tex >= 0) fprintf(j, "\"texture\":%d,", lm_tex);
            fprintf(j, "\"texCoord\":1,\"page\":%u,\"uri\":", p->page);
            json_str(j, lm_uri);
            fputs("}", j);
        }
        /* a texture glTF cannot reference (not PNG or JPEG, or not found), named for the record */
        if (lost_map) {
            fputs(lm_uri ? ",\"baker_map_Kd\":" : "\"baker_map_Kd\":", j);
            json_str(j, m->map_kd.path);
        }
        fputs("}", j);
    }
    fputs("}", j);
}

/* Primitives: one per (material, page), in order of first appearance; the arrays every later
 * phase fills. */
static int job_primitives(gltf_job *J)
{
    const bk_scene *s = J->s;
    uint32_t        T = s->tri_count, pages = J->pages, M = J->M;
    J->prim_of = malloc(sizeof(uint32_t) * (size_t)M * pages);
    J->prims = malloc(sizeof(prim) * ((size_t)M * pages < T ? (size_t)M * pages : T));
    J->idx = malloc(sizeof(uint32_t) * J->corners);
    J->vm.cap = 16;
    while (J->vm.cap < 2 * J->corners) J->vm.cap <<= 1;
    J->vm.slot = malloc(sizeof(uint32_t) * J->vm.cap);
    J->vm.v = malloc(sizeof(float) * VTX_FLOATS * J->corners);
    if (!J->prim_of || !J->prims || !J->idx || !J->vm.slot || !J->vm.v) return job_oom(J);
    memset(J->prim_of, 0xFF, sizeof(uint32_t) * (size_t)M * pages);
    memset(J->vm.slot, 0xFF, sizeof(uint32_t) * J->vm.cap);
    uint32_t *tri_prim = J->tri_prim = malloc(sizeof(uint32_t) * T);
    if (!tri_prim) return job_oom(J);
    for (uint32_t t = 0; t < T; ++t) {
        uint32_t m = s->tri_material && s->tri_material[t] < s->material_count ? s->tri_material[t] : s->material_count;
        uint32_t pg = pages > 1 ? J->a->tri_page[t] : 0;
        if (pg >= pages) return bk_fail(J->err, J->err_size, "%s: triangle %u on page %u of %u", J->path, t, pg, pages);
        size_t key = (size_t)m * pages + pg;
        if (J->prim_of[key] == BK_NONE) {
            prim *p = &J->prims[J->prim_count];
            p->material = m;
            p->page = pg;
            p->tris = 0;
            p->first = 0;
            J->prim_of[key] = J->prim_count++;
        }
        tri_prim[t] = J->prim_of[key];
        J->prims[tri_prim[t]].tris++;
    }
    size_t at = 0;
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        J->prims[i].first = at;
        at += 3 * (size_t)J->prims[i].tris;
    }
    return 0;
}

/* Vertices deduplicated over their attributes, the indices of each primitive, POSITION bounds. */
static int job_vertices(gltf_job *J)
{
    const bk_scene *s = J->s;
    uint32_t        T = s->tri_count, *tri_prim = J->tri_prim;
    size_t         *fill = calloc(J->prim_count, sizeof(size_t));
    if (!fill) return job_oom(J);
    float *pmin = J->pmin, *pmax = J->pmax;
    for (int d = 0; d < 3; ++d) {
        pmin[d] = INFINITY;
        pmax[d] = -INFINITY;
    }
    for (uint32_t t = 0; t < T; ++t) {
        float flat[3], key[VTX_FLOATS];
        flat_normal(s, t, flat);
        prim *p = &J->prims[tri_prim[t]];
        for (int k = 0; k < 3; ++k) {
            corner_key(s, J->a, t, k, flat, key);
            for (int d = 0; d < 3; ++d) {
                if (key[d] < pmin[d]) pmin[d] = key[d];
                if (key[d] > pmax[d]) pmax[d] = key[d];
            }
            J->idx[p->first + fill[tri_prim[t]]++] = vtx_add(&J->vm, key);
        }
    }
    free(fill);
    free(J->tri_prim);
    J->tri_prim = NULL;
    return 0;
}

/* The binary buffer: the four vertex sections, then the indices. */
static int job_buffer(gltf_job *J)
{
    uint32_t nv = J->vm.count;
    layout   L = J->L = buffer_layout(nv, J->corners);
    if (J->glb && L.total > 0xFFFFFFFFull - (64u << 20))
        return bk_fail(J->err, J->err_size, "%s: %zu bytes of geometry do not fit a GLB file (4 GiB)", J->path,
                       L.total);
    if (!(J->bin = malloc(L.total))) return job_oom(J);
    for (uint32_t v = 0; v < nv; ++v) {
        const float *x = J->vm.v + (size_t)VTX_FLOATS * v;
        memcpy(J->bin + L.pos + 12 * (size_t)v, x, 12);
        memcpy(J->bin + L.nrm + 12 * (size_t)v, x + 3, 12);
        memcpy(J->bin + L.uv0 + 8 * (size_t)v, x + 6, 8);
        memcpy(J->bin + L.uv1 + 8 * (size_t)v, x + 8, 8);
    }
    memcpy(J->bin + L.idx, J->idx, 4 * J->corners); /* little-endian hosts only (x86-64, aarch64) */
    return 0;
}

/* Images: the lightmap pages (PNG: a texture; HDR and EXR: named only), then each map_Kd file
 * once, as URIs relative to the output's folder. A map_Kd glTF cannot reference is a warning. */
static int job_images(gltf_job *J)
{
    const bk_scene     *s = J->s;
    const bk_gltf_opts *o = J->o;
    uint32_t            pages = J->pages;
    J->lm_png = o && o->lightmaps && bk_path_has_ext(o->lightmaps[0], ".png");
    if (o && o->lightmaps) {
        J->lm_uri = malloc(sizeof *J->lm_uri * pages);
        int ok = J->lm_uri != NULL;
        for (uint32_t p = 0; ok && p < pages; ++p) {
            char real[PATH_MAX + 256], rel[PATH_MAX * 2];
            if (resolve_new(o->lightmaps[p], real, sizeof real)) {
                ok = 0;
                break;
            }
            relative_path(J->out_dir, real, rel, sizeof rel);
            uri_encode(rel, J->lm_uri[p], sizeof J->lm_uri[p]);
        }
        if (!ok) return bk_fail(J->err, J->err_size, "%s: cannot resolve the lightmap's path", J->path);
    }
    J->map_tex = malloc(sizeof(int) * J->M);
    J->map_uri = malloc(sizeof *J->map_uri * J->M);
    if (!J->map_tex || !J->map_uri) return job_oom(J);
    J->tex_base = J->lm_png ? (int)pages : 0;
    for (uint32_t m = 0; m < s->material_count; ++m) {
        J->map_tex[m] = -1;
        const char *mk = s->materials[m].map_kd.path;
        int         used = 0;
        for (uint32_t p = 0; p < pages && !used; ++p) used = J->prim_of[(size_t)m * pages + p] != BK_NONE;
        if (!used || !mk[0]) continue;
        char real[PATH_MAX], rel[PATH_MAX * 2], uri[PATH_MAX * 3];
        if (!(bk_path_has_ext(mk, ".png") || bk_path_has_ext(mk, ".jpg") || bk_path_has_ext(mk, ".jpeg"))) {
            fprintf(stderr,
                    "baker: warning: %s: material %s: map_Kd %s is not a PNG or JPEG (glTF's image types), left out\n",
                    J->path, s->materials[m].name, mk);
            continue;
        }
        if (bk_scene_find_map(s, mk, real)) {
            fprintf(stderr, "baker: warning: %s: material %s: map_Kd %s not found beside the MTL files, left out\n",
                    J->path, s->materials[m].name, mk);
            continue;
        }
        relative_path(J->out_dir, real, rel, sizeof rel);
        uri_encode(rel, uri, sizeof uri);
        int k = 0;
        while (k < J->n_map && strcmp(J->map_uri[k], uri)) ++k;
        if (k == J->n_map) snprintf(J->map_uri[J->n_map++], sizeof J->map_uri[0], "%s", uri);
        J->map_tex[m] = J->tex_base + k;
    }
    return 0;
}

/* JSON: the asset with baker's notes on the lightmap, the extensions used, the scene and its node. */
static void json_asset(gltf_job *J)
{
    FILE               *j = J->jf;
    const bk_scene     *s = J->s;
    const bk_gltf_opts *o = J->o;
    int                 emissive_strength = 0;
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        uint32_t m = J->prims[i].material;
        if (m < s->material_count)
            for (int k = 0; k < 3; ++k) emissive_strength |= s->materials[m].ke[k] > 1.0f;
    }

    fputs("{\"asset\":{\"version\":\"2.0\",\"generator\":\"baker\",\"extras\":{\"baker\":{", j);
    fputs("\"lightmap\":\"each material's extras.baker_lightmap (also its occlusionTexture, and emissiveTexture = Kd x "
          "lightmap on surfaces that do not emit): sampled with TEXCOORD_1, "
          "a texel holds the incoming diffuse light divided by pi (the radiance of a white Lambertian surface); "
          "multiply by the base colour\",",
          j);
    fputs("\"texcoord_0\":\"the source file's own vt with v flipped; (0, 0) where a face has none\"", j);
    if (o && o->lightmaps) {
        fprintf(j, ",\"lightmap_encoding\":\"%s\",\"exposure\":%.9g,\"lightmaps\":[",
                J->lm_png                                  ? "8-bit sRGB after multiplying by exposure"
                : bk_path_has_ext(o->lightmaps[0], ".exr") ? "linear half-float RGB (OpenEXR .exr)"
                                                           : "linear RGBE (Radiance .hdr)",
                (double)o->exposure);
        for (uint32_t p = 0; p < J->pages; ++p) {
            if (p) fputc(',', j);
            json_str(j, J->lm_uri[p]);
        }
        fputc(']', j);
    }
    fputs("}}},", j);
    if (emissive_strength) fputs("\"extensionsUsed\":[\"KHR_materials_emissive_strength\"],", j);
    fputs("\"scene\":0,\"scenes\":[{\"name\":\"baker\",\"nodes\":[0]}],\"nodes\":[{\"name\":\"baker\",\"mesh\":0}],",
          j);
}

/* JSON: the mesh's primitives, their materials, then the images, textures and the sampler. */
static void json_mesh(gltf_job *J)
{
    FILE           *j = J->jf;
    const bk_scene *s = J->s;
    uint32_t        pages = J->pages;
    int             lm_png = J->lm_png;
    /* accessors: 0 POSITION, 1 NORMAL, 2 TEXCOORD_0, 3 TEXCOORD_1, 4 + i indices of primitive i */
    fputs("\"meshes\":[{\"name\":\"baker\",\"primitives\":[", j);
    for (uint32_t i = 0; i < J->prim_count; ++i)
        fprintf(j,
                "%s{\"attributes\":{\"POSITION\":0,\"NORMAL\":1,\"TEXCOORD_0\":2,\"TEXCOORD_1\":3},\"indices\":%u,"
                "\"material\":%u,\"mode\":4}",
                i ? "," : "", 4 + i, i);
    fputs("]}],\"materials\":[", j);
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        const prim *p = &J->prims[i];
        if (i) fputc(',', j);
        write_material(j, s, p, (int)pages, lm_png ? (int)p->page : -1, J->lm_uri ? J->lm_uri[p->page] : NULL,
                       p->material < s->material_count ? J->map_tex[p->material] : -1);
    }
    fputc(']', j);
    int n_img = (lm_png ? (int)pages : 0) + J->n_map;
    if (n_img) {
        fputs(",\"images\":[", j);
        for (int i = 0; i < n_img; ++i) {
            if (i) fputc(',', j);
            if (lm_png && i < (int)pages) {
                char nm[64];
                snprintf(nm, sizeof nm, "baker_lightmap_page_%d", i);
                fputs("{\"name\":", j);
                json_str(j, nm);
                fputs(",\"uri\":", j);
                json_str(j, J->lm_uri[i]);
            } else {
                fputs("{\"uri\":", j);
                json_str(j, J->map_uri[i - J->tex_base]);
            }
            fputc('}', j);
        }
        fputs("],\"textures\":[", j);
        for (int i = 0; i < n_img; ++i)
            fprintf(j, "%s{\"source\":%d%s}", i ? "," : "", i, lm_png && i < (int)pages ? ",\"sampler\":0" : "");
        fputc(']', j);
        if (lm_png)
            fprintf(j, ",\"samplers\":[{\"magFilter\":%d,\"minFilter\":%d,\"wrapS\":%d,\"wrapT\":%d}]", GL_LINEAR,
                    GL_LINEAR, GL_CLAMP_TO_EDGE, GL_CLAMP_TO_EDGE);
    }
}

/* JSON: accessors, buffer views and the buffer (inline as base64 in a .gltf), closing the text. */
static void json_buffers(gltf_job *J)
{
    FILE    *j = J->jf;
    uint32_t nv = J->vm.count;
    layout   L = J->L;
    fprintf(j,
            ",\"accessors\":[{\"bufferView\":0,\"componentType\":%d,\"count\":%u,\"type\":\"VEC3\",\"min\":", GL_FLOAT,
            nv);
    json_floats(j, J->pmin, 3);
    fputs(",\"max\":", j);
    json_floats(j, J->pmax, 3);
    fprintf(j, "},{\"bufferView\":1,\"componentType\":%d,\"count\":%u,\"type\":\"VEC3\"}", GL_FLOAT, nv);
    fprintf(j, ",{\"bufferView\":2,\"componentType\":%d,\"count\":%u,\"type\":\"VEC2\"}", GL_FLOAT, nv);
    fprintf(j, ",{\"bufferView\":3,\"componentType\":%d,\"count\":%u,\"type\":\"VEC2\"}", GL_FLOAT, nv);
    for (uint32_t i = 0; i < J->prim_count; ++i) {
        /* index bounds are optional; the validator checks them against the data when present */
        uint32_t lo = BK_NONE, hi = 0;
        for (size_t k = 0; k < 3 * (size_t)J->prims[i].tris; ++k) {
            uint32_t x = J->idx[J->prims[i].first + k];
            if (x < lo) lo = x;
            if (x > hi) hi = x;
        }
        fprintf(j,
                ",{\"bufferView\":4,\"byteOffset\":%zu,\"componentType\":%d,\"count\":%zu,\"type\":\"SCALAR\",\"min\":["
                "%u],\"max\":[%u]}",
                4 * J->prims[i].first, GL_UNSIGNED_INT, 3 * (size_t)J->prims[i].tris, lo, hi);
    }
    fputs("],\"bufferViews\":[", j);
    size_t off[5] = { L.pos, L.nrm, L.uv0, L.uv1, L.idx }, end[5] = { L.nrm, L.uv0, L.uv1, L.idx, L.total };
    for (int v = 0; v < 5; ++v)
        fprintf(j, "%s{\"buffer\":0,\"byteOffset\":%zu,\"byteLength\":%zu,\"target\":%d}", v ? "," : "", off[v],
                end[v] - off[v], v < 4 ? GL_ARRAY_BUFFER : GL_ELEMENT_ARRAY);
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
    if (job_primitives(J) || job_vertices(J) || job_buffer(J)) return -1;
    if (!(J->jf = open_memstream(&J->json, &J->json_size))) return job_oom(J);
    if (job_images(J)) return -1;
    json_asset(J);
    json_mesh(J);
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
