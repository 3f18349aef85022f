/* bk_test_gltf.h - reads back a glTF 2.0 file baker wrote and checks it against the spec's rules
 * (https://registry.khronos.org/glTF/specs/2.0/glTF-2.0.html) that a loader relies on: the GLB
 * container (magic, version, total length, chunk types, 4-byte padding), the JSON, buffers and
 * buffer views inside them, accessors inside their views and aligned, POSITION's min/max present
 * and equal to the data, unit normals, indices inside the vertex range, TEXCOORD_n consecutive,
 * every index reference (node, mesh, material, texture, image, sampler, bufferView) in range;
 * and baker's own rules: one mesh per node, each primitive with accessors of its own whose
 * vertices it all uses and holds once (no two equal), and no image URI that leaves the file's
 * folder (no "..", no absolute path; a .glb has none at all).
 *
 *     bk_test_gltf g;
 *     if (bk_test_gltf_load(path, &g) == 0) { ... g.json, g.prims[i].pos, .uv1, .idx ... }
 *     bk_test_gltf_free(&g);
 * Failures are counted with BK_EXPECT (bk_test.h); load returns -1 when nothing further can be read.
 */
#ifndef BK_TEST_GLTF_H
#define BK_TEST_GLTF_H

#include "bk_test.h"
#include "bk_test_json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One primitive as read back. */
typedef struct bk_test_prim {
    size_t          node, mesh, index; /* its node, mesh, and place in the mesh's primitives */
    int             material;
    uint32_t        nv; /* its vertices */
    const float    *pos, *nrm, *uv0, *uv1;
    const uint32_t *idx;
    size_t          n_idx;
} bk_test_prim;

typedef struct bk_test_gltf {
    bk_json      *json;
    uint8_t      *file; /* the whole file */
    size_t        file_size;
    uint8_t      *bin; /* buffer 0 (inside file for GLB, decoded for a data: URI) */
    size_t        bin_size;
    int           glb;
    bk_test_prim *prims; /* every primitive of every node's mesh, node by node */
    size_t        n_prims;
} bk_test_gltf;

static inline void bk_test_gltf_free(bk_test_gltf *g)
{
    bk_json_free(g->json);
    if (!g->glb) free(g->bin);
    free(g->file);
    free(g->prims);
    memset(g, 0, sizeof *g);
}

static inline int bk_test_b64(int c)
{
    return c >= 'A' && c <= 'Z'   ? c - 'A'
           : c >= 'a' && c <= 'z' ? c - 'a' + 26
           : c >= '0' && c <= '9' ? c - '0' + 52
           : c == '+'             ? 62
           : c == '/'             ? 63
                                  : -1;
}

static inline uint8_t *bk_test_b64_decode(const char *s, size_t *n)
{
    size_t len = strlen(s);
    if (len % 4) return NULL;
    uint8_t *out = malloc(len / 4 * 3 + 1);
    size_t   o = 0;
    for (size_t i = 0; out && i < len; i += 4) {
        int v[4];
        for (int k = 0; k < 4; ++k) v[k] = s[i + k] == '=' && i + 4 == len && k >= 2 ? 0 : bk_test_b64(s[i + k]);
        if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0) {
            free(out);
            return NULL;
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(x >> 16);
        if (s[i + 2] != '=') out[o++] = (uint8_t)(x >> 8);
        if (s[i + 3] != '=') out[o++] = (uint8_t)x;
    }
    *n = o;
    return out;
}

static inline uint32_t bk_test_rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline size_t bk_test_count(const bk_json *a) { return a && a->type == BK_JSON_ARR ? a->n : 0; }

/* Components and bytes of an accessor's element. */
static inline int bk_test_acc_size(const bk_json *acc, int *comps)
{
    const char *t = bk_json_str(acc, "type");
    int         ct = (int)bk_json_num(acc, "componentType", 0);
    int         c = !t                     ? 0
                    : !strcmp(t, "SCALAR") ? 1
                    : !strcmp(t, "VEC2")   ? 2
                    : !strcmp(t, "VEC3")   ? 3
                    : !strcmp(t, "VEC4")   ? 4
                                           : 0;
    int         b = ct == 5126 || ct == 5125 ? 4 : ct == 5123 || ct == 5122 ? 2 : ct == 5121 || ct == 5120 ? 1 : 0;
    *comps = c;
    return b;
}

/* The data of accessor i (checked inside its view and buffer), NULL when it is not valid. */
static inline const uint8_t *bk_test_acc_data(const bk_test_gltf *g, size_t i, size_t *count)
{
    const bk_json *acc = bk_json_at(bk_json_get(g->json, "accessors"), i);
    BK_EXPECTF(acc, "accessor %zu missing", i);
    if (!acc) return NULL;
    int    comps, b = bk_test_acc_size(acc, &comps);
    double cnt = bk_json_num(acc, "count", -1), bv = bk_json_num(acc, "bufferView", -1),
           off = bk_json_num(acc, "byteOffset", 0);
    const bk_json *view = bk_json_at(bk_json_get(g->json, "bufferViews"), (size_t)bv);
    BK_EXPECTF(b && comps && cnt >= 1 && view, "accessor %zu: bad type, count or bufferView", i);
    if (!b || !comps || cnt < 1 || !view) return NULL;
    double voff = bk_json_num(view, "byteOffset", 0), vlen = bk_json_num(view, "byteLength", -1);
    BK_EXPECTF(fmod(off, b) == 0 && fmod(voff + off, b) == 0, "accessor %zu: offset %g not aligned to %d", i, off, b);
    BK_EXPECTF(!bk_json_get(view, "byteStride"), "accessor %zu: unexpected byteStride", i);
    BK_EXPECTF(off + cnt * comps * b <= vlen, "accessor %zu: %g elements overrun its view", i, cnt);
    if (off + cnt * comps * b > vlen) return NULL;
    *count = (size_t)cnt;
    return g->bin + (size_t)voff + (size_t)off;
}

static inline int bk_test_gltf_load(const char *path, bk_test_gltf *g)
{
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    BK_EXPECTF(f, "%s: cannot open", path);
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    g->file = malloc((size_t)sz + 1);
    g->file_size = g->file && fread(g->file, 1, (size_t)sz, f) == (size_t)sz ? (size_t)sz : 0;
    fclose(f);
    BK_EXPECTF(g->file_size > 0, "%s: empty or unreadable", path);
    if (!g->file_size) return -1;
    const char *text;
    size_t      text_len;
    g->glb = g->file_size >= 4 && bk_test_rd32(g->file) == 0x46546C67u;
    if (g->glb) {
        BK_EXPECT(g->file_size >= 28);
        if (g->file_size < 28) return -1;
        BK_EXPECTF(bk_test_rd32(g->file + 4) == 2, "GLB version %u", bk_test_rd32(g->file + 4));
        BK_EXPECTF(bk_test_rd32(g->file + 8) == g->file_size, "GLB length %u, file %zu bytes",
                   bk_test_rd32(g->file + 8), g->file_size);
        uint32_t jl = bk_test_rd32(g->file + 12);
        BK_EXPECTF(bk_test_rd32(g->file + 16) == 0x4E4F534Au, "first chunk is not JSON");
        BK_EXPECTF(jl % 4 == 0, "JSON chunk length %u not a multiple of 4", jl);
        BK_EXPECT(20 + (size_t)jl + 8 <= g->file_size);
        if (20 + (size_t)jl + 8 > g->file_size) return -1;
        text = (const char *)g->file + 20;
        text_len = jl;
        uint32_t bl = bk_test_rd32(g->file + 20 + jl);
        BK_EXPECTF(bk_test_rd32(g->file + 24 + jl) == 0x004E4942u, "second chunk is not BIN");
        BK_EXPECTF(bl % 4 == 0, "BIN chunk length %u not a multiple of 4", bl);
        BK_EXPECTF(28 + (size_t)jl + bl == g->file_size, "chunks do not end the file");
        if (28 + (size_t)jl + bl > g->file_size) return -1;
        g->bin = g->file + 28 + jl;
        g->bin_size = bl;
    } else {
        text = (const char *)g->file;
        text_len = g->file_size;
    }
    g->json = bk_json_parse(text, text_len);
    BK_EXPECTF(g->json && g->json->type == BK_JSON_OBJ, "%s: not a JSON object", path);
    if (!g->json || g->json->type != BK_JSON_OBJ) return -1;
    const bk_json *asset = bk_json_get(g->json, "asset");
    BK_EXPECT(bk_json_str(asset, "version") && !strcmp(bk_json_str(asset, "version"), "2.0"));
    const bk_json *buffers = bk_json_get(g->json, "buffers");
    BK_EXPECT(bk_test_count(buffers) == 1);
    const bk_json *b0 = bk_json_at(buffers, 0);
    double         blen = bk_json_num(b0, "byteLength", -1);
    const char    *uri = bk_json_str(b0, "uri");
    if (g->glb) {
        BK_EXPECTF(!uri, "GLB buffer 0 must not have a uri");
        BK_EXPECTF(blen >= 1 && blen <= g->bin_size && g->bin_size - blen < 4, "buffer byteLength %g, BIN chunk %zu",
                   blen, g->bin_size);
    } else {
        const char *pre = "data:application/octet-stream;base64,";
        BK_EXPECTF(uri && !strncmp(uri, pre, strlen(pre)), "buffer 0 is not an embedded data: URI");
        if (!uri || strncmp(uri, pre, strlen(pre))) return -1;
        g->bin = bk_test_b64_decode(uri + strlen(pre), &g->bin_size);
        BK_EXPECTF(g->bin && g->bin_size == blen, "data: URI decodes to %zu bytes, byteLength %g", g->bin_size, blen);
        if (!g->bin) return -1;
    }
    if (blen < 0 || blen > g->bin_size) return -1;
    /* buffer views inside the buffer, 4-byte aligned (every accessor here has 4-byte components) */
    const bk_json *views = bk_json_get(g->json, "bufferViews");
    for (size_t i = 0; i < bk_test_count(views); ++i) {
        const bk_json *v = bk_json_at(views, i);
        double         off = bk_json_num(v, "byteOffset", 0), len = bk_json_num(v, "byteLength", -1);
        BK_EXPECTF(bk_json_num(v, "buffer", -1) == 0 && len >= 1 && off + len <= blen && fmod(off, 4) == 0,
                   "bufferView %zu: offset %g length %g in a buffer of %g", i, off, len, blen);
        if (!(off + len <= blen)) return -1;
    }
    /* nodes: each with a mesh of its own; the scene lists them all */
    const bk_json *nodes = bk_json_get(g->json, "nodes"), *meshes = bk_json_get(g->json, "meshes");
    size_t         n_nodes = bk_test_count(nodes), n_meshes = bk_test_count(meshes);
    BK_EXPECTF(n_nodes >= 1 && n_nodes == n_meshes, "%zu nodes, %zu meshes", n_nodes, n_meshes);
    BK_EXPECT(bk_test_count(bk_json_get(bk_json_at(bk_json_get(g->json, "scenes"), 0), "nodes")) == n_nodes);
    size_t total = 0;
    for (size_t n = 0; n < n_nodes; ++n) {
        BK_EXPECTF(bk_json_num(&nodes->items[n], "mesh", -1) == (double)n, "node %zu: mesh %g", n,
                   bk_json_num(&nodes->items[n], "mesh", -1));
        BK_EXPECTF(bk_json_str(&nodes->items[n], "name"), "node %zu has no name", n);
        total += bk_test_count(bk_json_get(bk_json_at(meshes, n), "primitives"));
    }
    g->prims = calloc(total ? total : 1, sizeof(bk_test_prim));
    if (!g->prims) return -1;
    size_t n_mat = bk_test_count(bk_json_get(g->json, "materials")),
           n_tex = bk_test_count(bk_json_get(g->json, "textures"));
    size_t n_img = bk_test_count(bk_json_get(g->json, "images")),
           n_smp = bk_test_count(bk_json_get(g->json, "samplers"));
    size_t n_acc = bk_test_count(bk_json_get(g->json, "accessors"));
    int   *acc_user = malloc(sizeof(int) * (n_acc ? n_acc : 1));
    for (size_t k = 0; acc_user && k < n_acc; ++k) acc_user[k] = -1;
    const char *names[4] = { "POSITION", "NORMAL", "TEXCOORD_0", "TEXCOORD_1" };
    int         want_comps[4] = { 3, 3, 2, 2 };
    for (size_t n = 0; n < n_meshes && n < n_nodes; ++n) {
        const bk_json *prims = bk_json_get(bk_json_at(meshes, n), "primitives");
        BK_EXPECTF(bk_test_count(prims) >= 1, "mesh %zu has no primitives", n);
        for (size_t i = 0; i < bk_test_count(prims); ++i) {
            bk_test_prim  *q = &g->prims[g->n_prims++];
            const bk_json *p = bk_json_at(prims, i), *at = bk_json_get(p, "attributes");
            q->node = q->mesh = n;
            q->index = i;
            BK_EXPECTF(at && at->n == 4, "mesh %zu primitive %zu: %zu attributes", n, i, at ? at->n : 0);
            BK_EXPECT(bk_json_num(p, "mode", 4) == 4);
            double m = bk_json_num(p, "material", -1);
            BK_EXPECTF(m >= 0 && m < n_mat, "mesh %zu primitive %zu: material %g of %zu", n, i, m, n_mat);
            q->material = (int)m;
            const float **dst[4] = { &q->pos, &q->nrm, &q->uv0, &q->uv1 };
            for (int k = 0; k < 5; ++k) { /* accessors of its own */
                double a = k < 4 ? bk_json_num(at, names[k], -1) : bk_json_num(p, "indices", -1);
                if (acc_user && a >= 0 && a < n_acc) {
                    BK_EXPECTF(acc_user[(size_t)a] < 0, "accessor %g used by two primitives", a);
                    acc_user[(size_t)a] = (int)(g->n_prims - 1);
                }
            }
            for (int k = 0; k < 4; ++k) {
                double a = bk_json_num(at, names[k], -1);
                BK_EXPECTF(a >= 0, "attribute %s missing", names[k]);
                if (a < 0) continue;
                size_t         cnt = 0;
                const uint8_t *d = bk_test_acc_data(g, (size_t)a, &cnt);
                const bk_json *acc = bk_json_at(bk_json_get(g->json, "accessors"), (size_t)a);
                int            comps;
                BK_EXPECTF(bk_json_num(acc, "componentType", 0) == 5126 && bk_test_acc_size(acc, &comps) &&
                               comps == want_comps[k],
                           "%s: not float VEC%d", names[k], want_comps[k]);
                if (!d) continue;
                if (k == 0) q->nv = (uint32_t)cnt;
                BK_EXPECTF(cnt == q->nv, "%s has %zu elements, POSITION %u", names[k], cnt, q->nv);
                *dst[k] = (const float *)d;
            }
            if (!q->pos || !q->nrm || !q->uv0 || !q->uv1) continue;
            /* POSITION: min and max required, equal to the data's */
            const bk_json *pacc = bk_json_at(bk_json_get(g->json, "accessors"), (size_t)bk_json_num(at, "POSITION", 0));
            const bk_json *mn = bk_json_get(pacc, "min"), *mx = bk_json_get(pacc, "max");
            BK_EXPECTF(bk_test_count(mn) == 3 && bk_test_count(mx) == 3, "POSITION needs min and max of 3 numbers");
            for (int d = 0; d < 3 && bk_test_count(mn) == 3 && bk_test_count(mx) == 3; ++d) {
                float lo = INFINITY, hi = -INFINITY;
                for (uint32_t v = 0; v < q->nv; ++v) {
                    float x = q->pos[3 * v + d];
                    if (x < lo) lo = x;
                    if (x > hi) hi = x;
                }
                BK_EXPECTF((float)mn->items[d].num == lo && (float)mx->items[d].num == hi,
                           "POSITION bounds[%d] %g..%g, data %g..%g", d, mn->items[d].num, mx->items[d].num, (double)lo,
                           (double)hi);
            }
            for (uint32_t v = 0; v < q->nv; ++v) {
                const float *nn = q->nrm + 3 * (size_t)v;
                double       l = sqrt((double)nn[0] * nn[0] + (double)nn[1] * nn[1] + (double)nn[2] * nn[2]);
                if (fabs(l - 1.0) > 5e-4) {
                    BK_EXPECTF(0, "normal %u has length %g", v, l);
                    break;
                }
            }
            size_t         cnt = 0;
            const uint8_t *d = bk_test_acc_data(g, (size_t)bk_json_num(p, "indices", 1e9), &cnt);
            const bk_json *iacc = bk_json_at(bk_json_get(g->json, "accessors"), (size_t)bk_json_num(p, "indices", 1e9));
            BK_EXPECT(bk_json_num(iacc, "componentType", 0) == 5125 && bk_json_str(iacc, "type") &&
                      !strcmp(bk_json_str(iacc, "type"), "SCALAR"));
            BK_EXPECTF(cnt % 3 == 0, "primitive %zu: %zu indices", i, cnt);
            q->idx = (const uint32_t *)d;
            q->n_idx = d ? cnt : 0;
            /* every vertex used, each held once: the primitive's own, deduplicated */
            uint8_t *used = calloc(q->nv + 1, 1);
            for (size_t k = 0; d && used && k < cnt; ++k) {
                uint32_t x = bk_test_rd32(d + 4 * k);
                if (x >= q->nv) {
                    BK_EXPECTF(0, "primitive %zu: index %u of %u vertices", i, x, q->nv);
                    break;
                }
                used[x] = 1;
            }
            for (uint32_t v = 0; used && v < q->nv; ++v)
                if (!used[v]) {
                    BK_EXPECTF(0, "mesh %zu primitive %zu: vertex %u is not used", n, i, v);
                    break;
                }
            free(used);
            for (uint32_t v = 1; v < q->nv && q->nv < 4096; ++v)
                for (uint32_t w = 0; w < v; ++w)
                    if (!memcmp(q->pos + 3 * v, q->pos + 3 * w, 12) && !memcmp(q->nrm + 3 * v, q->nrm + 3 * w, 12) &&
                        !memcmp(q->uv0 + 2 * v, q->uv0 + 2 * w, 8) && !memcmp(q->uv1 + 2 * v, q->uv1 + 2 * w, 8)) {
                        BK_EXPECTF(0, "mesh %zu primitive %zu: vertices %u and %u are equal", n, i, w, v);
                        v = q->nv;
                        break;
                    }
            BK_EXPECTF(
                bk_json_get(bk_json_get(g->json, "bufferViews")->items + (size_t)bk_json_num(iacc, "bufferView", 0),
                            "target") &&
                    bk_json_num(&bk_json_get(g->json, "bufferViews")->items[(size_t)bk_json_num(iacc, "bufferView", 0)],
                                "target", 0) == 34963,
                "index view target");
        }
    }
    free(acc_user);
    /* images: in the buffer (a bufferView and a mimeType), or a relative URI inside the folder */
    for (size_t i = 0; i < n_img; ++i) {
        const bk_json *im = bk_json_at(bk_json_get(g->json, "images"), i);
        const char    *u = bk_json_str(im, "uri");
        if (g->glb) BK_EXPECTF(!u, "GLB image %zu has a uri", i);
        if (u) {
            BK_EXPECTF(!strstr(u, "..") && u[0] != '/' && !strstr(u, "://") && !strchr(u, '\\'),
                       "image %zu: uri %s leaves the folder", i, u);
        } else {
            const char *mt = bk_json_str(im, "mimeType");
            BK_EXPECTF(bk_json_num(im, "bufferView", -1) >= 0 && mt &&
                           (!strcmp(mt, "image/png") || !strcmp(mt, "image/jpeg")),
                       "image %zu: neither a uri nor a bufferView with a PNG or JPEG mimeType", i);
        }
    }
    for (size_t i = 0; i < n_tex; ++i) {
        const bk_json *t = bk_json_at(bk_json_get(g->json, "textures"), i);
        BK_EXPECT(bk_json_num(t, "source", -1) >= 0 && bk_json_num(t, "source", -1) < n_img);
        BK_EXPECT(!bk_json_get(t, "sampler") || bk_json_num(t, "sampler", -1) < n_smp);
    }
    for (size_t i = 0; i < n_mat; ++i) {
        const bk_json *m = bk_json_at(bk_json_get(g->json, "materials"), i),
                      *pbr = bk_json_get(m, "pbrMetallicRoughness");
        const bk_json *bt = bk_json_get(pbr, "baseColorTexture"), *oc = bk_json_get(m, "occlusionTexture");
        if (bt) BK_EXPECT(bk_json_num(bt, "index", -1) >= 0 && bk_json_num(bt, "index", -1) < n_tex);
        if (oc) BK_EXPECT(bk_json_num(oc, "index", -1) >= 0 && bk_json_num(oc, "index", -1) < n_tex);
        const bk_json *bc = bk_json_get(pbr, "baseColorFactor"), *ef = bk_json_get(m, "emissiveFactor");
        for (size_t k = 0; k < bk_test_count(bc); ++k) BK_EXPECT(bc->items[k].num >= 0 && bc->items[k].num <= 1);
        for (size_t k = 0; k < bk_test_count(ef); ++k) BK_EXPECT(ef->items[k].num >= 0 && ef->items[k].num <= 1);
        BK_EXPECT(bk_json_num(pbr, "metallicFactor", 1) == 0);
        const bk_json *ext = bk_json_get(bk_json_get(m, "extensions"), "KHR_materials_emissive_strength");
        if (ext) {
            const bk_json *used = bk_json_get(g->json, "extensionsUsed");
            int            listed = 0;
            for (size_t k = 0; k < bk_test_count(used); ++k)
                listed |= used->items[k].type == BK_JSON_STR &&
                          !strcmp(used->items[k].str, "KHR_materials_emissive_strength");
            BK_EXPECTF(listed, "material %zu uses KHR_materials_emissive_strength, not in extensionsUsed", i);
        }
    }
    return 0;
}

/* The bytes of image i when it lies in the buffer (count in *n), else NULL. */
static inline const uint8_t *bk_test_gltf_image(const bk_test_gltf *g, size_t i, size_t *n)
{
    const bk_json *im = bk_json_at(bk_json_get(g->json, "images"), i);
    double         bv = bk_json_num(im, "bufferView", -1);
    const bk_json *v = bk_json_at(bk_json_get(g->json, "bufferViews"), (size_t)bv);
    if (!im || bv < 0 || !v) return NULL;
    *n = (size_t)bk_json_num(v, "byteLength", 0);
    return g->bin + (size_t)bk_json_num(v, "byteOffset", 0);
}

/* The node's name of primitive i. */
static inline const char *bk_test_gltf_node_name(const bk_test_gltf *g, size_t node)
{
    return bk_json_str(bk_json_at(bk_json_get(g->json, "nodes"), node), "name");
}

#endif
