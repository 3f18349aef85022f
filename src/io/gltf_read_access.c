/* gltf_read_access.c - glTF 2.0 reader, part 2: accessors -> arrays of floats or indices.
 *
 * Pipeline: io stage; gltf_read_scene.c asks for the accessors a primitive names, gltf_read.c
 * gives the bufferViews' bytes. What is checked before a byte is read (glTF 2.0, section 3.6):
 * the type is one the attribute allows, the component type is one of the six, a float is not
 * normalized, the stride holds an element, byteOffset + (count - 1) x stride + element size fits
 * the bufferView (64-bit arithmetic: counts are below 2^32, strides below 256), sparse indices and
 * values fit their views and every sparse index is below count. An accessor without a bufferView
 * is zeros (then sparse), at most GL_MAX_NOVIEW elements. Normalized integers follow the spec's
 * equations: c / 255, c / 65535, max(c / 127, -1), max(c / 32767, -1) (KHR_mesh_quantization).
 * Bytes are read with memcpy: nothing relies on the spec's alignment rules.
 */
#include "gltf_read_internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if BK_HAVE_GLTF

enum { GL_BYTE = 5120, GL_UBYTE = 5121, GL_SHORT = 5122, GL_USHORT = 5123, GL_UINT = 5125, GL_FLOAT = 5126 };

static int comp_size(int t)
{
    return t == GL_BYTE || t == GL_UBYTE ? 1 : t == GL_SHORT || t == GL_USHORT ? 2 : t == GL_UINT || t == GL_FLOAT ? 4 : 0;
}

static int type_comps(const char *t)
{
    static const char *const names[] = { "SCALAR", "VEC2", "VEC3", "VEC4" };
    for (int i = 0; i < 4; ++i)
        if (!strcmp(t, names[i])) return i + 1;
    if (!strcmp(t, "MAT2") || !strcmp(t, "MAT3") || !strcmp(t, "MAT4")) return -1;
    return 0;
}

static int sparse_open(gl_ctx *c, const cJSON *sp, const char *w, gl_acc *a, uint64_t esize)
{
    char         ws[160];
    const cJSON *ix, *vals;
    uint64_t     n = 0, ioff = 0, voff = 0, ilen = 0, vlen = 0, ist = 0, vst = 0, it = 0;
    uint32_t     iv, vv;
    const uint8_t *id, *vd;
    snprintf(ws, sizeof ws, "%.140s.sparse", w);
    if (!gl_get(sp, "count")) return gl_fail(c, ws, "'count' is missing");
    if (gl_uint(c, sp, "count", ws, a->count, 0, &n) || gl_obj(c, sp, "indices", ws, &ix) ||
        gl_obj(c, sp, "values", ws, &vals))
        return -1;
    if (!ix || !vals) return gl_fail(c, ws, "'indices' and 'values' are required");
    if (n == 0) return gl_fail(c, ws, "'count' must be at least 1");
    snprintf(ws, sizeof ws, "%.140s.sparse.indices", w);
    if (gl_index(c, ix, "bufferView", ws, c->views.n, 1, &iv) || gl_uint(c, ix, "byteOffset", ws, UINT32_MAX, 0, &ioff))
        return -1;
    if (!gl_get(ix, "componentType")) return gl_fail(c, ws, "'componentType' is missing");
    if (gl_uint(c, ix, "componentType", ws, 65535, 0, &it)) return -1;
    if (it != GL_UBYTE && it != GL_USHORT && it != GL_UINT)
        return gl_fail(c, ws, "componentType %llu: sparse indices are UNSIGNED_BYTE, _SHORT or _INT",
                       (unsigned long long)it);
    if (gl_view_get(c, iv, ws, &id, &ilen, &ist)) return -1;
    if (ioff + n * (uint64_t)comp_size((int)it) > ilen)
        return gl_fail(c, ws, "accessor %u's %llu sparse indices read past the end of bufferView %u (%llu bytes)",
                       a->index, (unsigned long long)n, iv, (unsigned long long)ilen);
    snprintf(ws, sizeof ws, "%.140s.sparse.values", w);
    if (gl_index(c, vals, "bufferView", ws, c->views.n, 1, &vv) ||
        gl_uint(c, vals, "byteOffset", ws, UINT32_MAX, 0, &voff))
        return -1;
    if (gl_view_get(c, vv, ws, &vd, &vlen, &vst)) return -1;
    if (voff + n * esize > vlen)
        return gl_fail(c, ws, "accessor %u's %llu sparse values read past the end of bufferView %u (%llu bytes)",
                       a->index, (unsigned long long)n, vv, (unsigned long long)vlen);
    a->sparse_count = (uint32_t)n;
    a->sparse_itype = (int)it;
    a->sparse_idx = id + ioff;
    a->sparse_val = vd + voff;
    return 0;
}

/* Long: every field of an accessor, checked in the order the spec lists them */
int gl_acc_open(gl_ctx *c, uint32_t index, const char *where, unsigned comps_mask, gl_acc *a)
{
    char w[160];
    snprintf(w, sizeof w, "%s: accessor %u", where, index);
    memset(a, 0, sizeof *a);
    a->index = index;
    if (index >= c->accessors.n) return gl_fail(c, where, "accessor %u does not exist (%u accessors)", index, c->accessors.n);
    const cJSON *o = c->accessors.it[index];
    const char  *type;
    uint64_t     ct, count, off;
    uint32_t     view;
    int          norm;
    const cJSON *sp;
    if (!gl_get(o, "componentType")) return gl_fail(c, w, "'componentType' is missing");
    if (!gl_get(o, "count")) return gl_fail(c, w, "'count' is missing");
    if (gl_uint(c, o, "componentType", w, 65535, 0, &ct) || gl_uint(c, o, "count", w, BK_NONE - 1, 0, &count) ||
        gl_str(c, o, "type", w, &type) || gl_bool(c, o, "normalized", w, 0, &norm) ||
        gl_uint(c, o, "byteOffset", w, UINT32_MAX, 0, &off) || gl_obj(c, o, "sparse", w, &sp))
        return -1;
    int r = gl_index(c, o, "bufferView", w, c->views.n, 0, &view);
    if (r < 0) return -1;
    if (!type) return gl_fail(c, w, "'type' is missing");
    int comps = type_comps(type);
    if (comps <= 0 || !(comps_mask & (1u << comps)))
        return gl_fail(c, w, "type '%.16s' is not one this attribute takes", type);
    int cs = comp_size((int)ct);
    if (!cs) return gl_fail(c, w, "componentType %llu is not a glTF component type", (unsigned long long)ct);
    if (norm && (ct == GL_FLOAT || ct == GL_UINT)) return gl_fail(c, w, "a FLOAT or UNSIGNED_INT accessor cannot be normalized");
    if (count == 0) return gl_fail(c, w, "'count' must be at least 1");
    a->count = (uint32_t)count;
    a->comps = comps;
    a->ctype = (int)ct;
    a->normalized = norm;
    uint64_t esize = (uint64_t)cs * (uint64_t)comps;
    if (view != BK_NONE) {
        const uint8_t *vd;
        uint64_t       vlen, vst;
        if (gl_view_get(c, view, w, &vd, &vlen, &vst)) return -1;
        uint64_t stride = vst ? vst : esize;
        if (stride < esize)
            return gl_fail(c, w, "bufferView %u's byteStride %llu is smaller than an element (%llu bytes)", view,
                           (unsigned long long)stride, (unsigned long long)esize);
        uint64_t need = off + (count - 1) * stride + esize;
        if (need > vlen)
            return gl_fail(c, w,
                           "reads past the end of bufferView %u (byteOffset %llu + %llu x stride %llu = %llu > byteLength "
                           "%llu)",
                           view, (unsigned long long)off, (unsigned long long)count, (unsigned long long)stride,
                           (unsigned long long)need, (unsigned long long)vlen);
        a->base = vd + off;
        a->stride = stride;
    } else {
        if (count > GL_MAX_NOVIEW)
            return gl_fail(c, w, "%llu elements without a bufferView: at most %u are read", (unsigned long long)count,
                           GL_MAX_NOVIEW);
        a->stride = esize;
    }
    if (sp && sparse_open(c, sp, w, a, esize)) return -1;
    return 0;
}

static float comp_float(const uint8_t *p, int t, int norm)
{
    switch (t) {
    case GL_BYTE: {
        int8_t v = (int8_t)p[0];
        if (!norm) return (float)v;
        float f = (float)v / 127.0f;
        return f < -1.0f ? -1.0f : f;
    }
    case GL_UBYTE: return norm ? (float)p[0] / 255.0f : (float)p[0];
    case GL_SHORT: {
        int16_t v;
        memcpy(&v, p, 2);
        if (!norm) return (float)v;
        float f = (float)v / 32767.0f;
        return f < -1.0f ? -1.0f : f;
    }
    case GL_USHORT: {
        uint16_t v;
        memcpy(&v, p, 2);
        return norm ? (float)v / 65535.0f : (float)v;
    }
    case GL_UINT: {
        uint32_t v;
        memcpy(&v, p, 4);
        return (float)v;
    }
    default: {
        float v;
        memcpy(&v, p, 4);
        return v;
    }
    }
}

static uint32_t read_uint(const uint8_t *p, int t)
{
    if (t == GL_UBYTE) return p[0];
    if (t == GL_USHORT) {
        uint16_t v;
        memcpy(&v, p, 2);
        return v;
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The sparse entries: index k of the substitution, checked below count. */
static int sparse_index(gl_ctx *c, const gl_acc *a, const char *where, uint32_t k, uint32_t *out)
{
    uint32_t i = read_uint(a->sparse_idx + (size_t)k * comp_size(a->sparse_itype), a->sparse_itype);
    if (i >= a->count)
        return gl_fail(c, where, "accessor %u: sparse index %u (entry %u) is not below its count %u", a->index, i, k,
                       a->count);
    *out = i;
    return 0;
}

int gl_acc_floats(gl_ctx *c, const gl_acc *a, const char *where, float **out)
{
    size_t n = (size_t)a->count * (size_t)a->comps, cs = (size_t)comp_size(a->ctype);
    if ((uint64_t)n * 4 > c->max_out) return gl_fail(c, where, "accessor %u: %u elements, over the limit", a->index, a->count);
    float *f = malloc(n * sizeof(float));
    if (!f) return gl_fail(c, where, "out of memory for accessor %u (%u elements)", a->index, a->count);
    if (!a->base) memset(f, 0, n * sizeof(float));
    else
        for (uint32_t i = 0; i < a->count; ++i) {
            const uint8_t *p = a->base + (size_t)i * a->stride;
            for (int k = 0; k < a->comps; ++k) f[(size_t)i * a->comps + k] = comp_float(p + k * cs, a->ctype, a->normalized);
        }
    for (uint32_t k = 0; k < a->sparse_count; ++k) {
        uint32_t i = 0;
        if (sparse_index(c, a, where, k, &i)) {
            free(f);
            return -1;
        }
        const uint8_t *p = a->sparse_val + (size_t)k * cs * a->comps;
        for (int j = 0; j < a->comps; ++j) f[(size_t)i * a->comps + j] = comp_float(p + j * cs, a->ctype, a->normalized);
    }
    *out = f;
    return 0;
}

int gl_acc_uints(gl_ctx *c, const gl_acc *a, const char *where, uint32_t **out)
{
    if (a->comps != 1 || (a->ctype != GL_UBYTE && a->ctype != GL_USHORT && a->ctype != GL_UINT) || a->normalized)
        return gl_fail(c, where, "accessor %u: indices must be SCALAR UNSIGNED_BYTE, _SHORT or _INT, not normalized",
                       a->index);
    if ((uint64_t)a->count * 4 > c->max_out) return gl_fail(c, where, "accessor %u: %u indices, over the limit", a->index, a->count);
    uint32_t *u = malloc(sizeof(uint32_t) * a->count);
    if (!u) return gl_fail(c, where, "out of memory for accessor %u (%u indices)", a->index, a->count);
    if (!a->base) memset(u, 0, sizeof(uint32_t) * a->count);
    else
        for (uint32_t i = 0; i < a->count; ++i) u[i] = read_uint(a->base + (size_t)i * a->stride, a->ctype);
    for (uint32_t k = 0; k < a->sparse_count; ++k) {
        uint32_t i = 0;
        if (sparse_index(c, a, where, k, &i)) {
            free(u);
            return -1;
        }
        u[i] = read_uint(a->sparse_val + (size_t)k * comp_size(a->ctype), a->ctype);
    }
    *out = u;
    return 0;
}

#endif /* BK_HAVE_GLTF */
