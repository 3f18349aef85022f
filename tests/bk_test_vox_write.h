/* bk_test_vox_write.h - a small MagicaVoxel .vox writer for tests (unit_vox.c, cpu_bake_vox.c).
 *
 * Chunks are appended to K (MAIN's children) with the c_* functions, each returning its offset in
 * the file (MAIN's children start at byte 20); vox_bytes(version) wraps K into "VOX " version
 * MAIN{K} in F and empties K for the next file. Everything is static: one copy per test program.
 */
#ifndef BK_TEST_VOX_WRITE_H
#define BK_TEST_VOX_WRITE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wbuf {
    uint8_t *p;
    size_t   n, cap;
} wbuf;

static inline void w_bytes(wbuf *b, const void *d, size_t n)
{
    if (n == 0) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->p = realloc(b->p, b->cap);
        if (!b->p) {
            perror("realloc");
            exit(1);
        }
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static inline void w_i32(wbuf *b, int32_t v)
{
    uint8_t q[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)((uint32_t)v >> 24) };
    w_bytes(b, q, 4);
}
static inline void w_str(wbuf *b, const char *s, size_t n)
{
    w_i32(b, (int32_t)n);
    w_bytes(b, s, n);
}

/* A DICT from "key=value;key=value" ("" = empty dictionary). */
static inline void w_dict(wbuf *b, const char *spec)
{
    int n = 0;
    for (const char *p = spec; *p; ++p) n += *p == '=';
    w_i32(b, n);
    const char *p = spec;
    while (*p) {
        const char *eq = strchr(p, '='), *end = strchr(p, ';');
        if (!end) end = p + strlen(p);
        w_str(b, p, (size_t)(eq - p));
        w_str(b, eq + 1, (size_t)(end - eq - 1));
        p = *end ? end + 1 : end;
    }
}

static wbuf K; /* the children of MAIN being written */
static wbuf F; /* the last file written */

/* Chunks: each returns its offset in the file (MAIN's children start at byte 20). */
static inline size_t chunk_begin(const char *id)
{
    size_t at = K.n;
    w_bytes(&K, id, 4);
    w_i32(&K, 0);
    w_i32(&K, 0);
    return at;
}
static inline size_t chunk_end(size_t at)
{
    uint32_t n = (uint32_t)(K.n - at - 12);
    for (int i = 0; i < 4; ++i) K.p[at + 4 + i] = (uint8_t)(n >> (8 * i));
    return 20 + at;
}
static inline size_t c_size(int x, int y, int z)
{
    size_t a = chunk_begin("SIZE");
    w_i32(&K, x);
    w_i32(&K, y);
    w_i32(&K, z);
    return chunk_end(a);
}
static inline size_t c_xyzi(int n, const uint8_t *v)
{
    size_t a = chunk_begin("XYZI");
    w_i32(&K, n);
    w_bytes(&K, v, 4 * (size_t)n);
    return chunk_end(a);
}
static inline size_t c_model(int x, int y, int z, int n, const uint8_t *v)
{
    size_t a = c_size(x, y, z);
    c_xyzi(n, v);
    return a;
}
static inline size_t c_rgba(const uint32_t pal[256])
{
    size_t a = chunk_begin("RGBA");
    for (int i = 0; i < 256; ++i) w_i32(&K, (int32_t)pal[i]);
    return chunk_end(a);
}
static inline size_t c_trn(int id, const char *attr, int child, int layer, int nframes, const char *const *frames)
{
    size_t a = chunk_begin("nTRN");
    w_i32(&K, id);
    w_dict(&K, attr);
    w_i32(&K, child);
    w_i32(&K, -1);
    w_i32(&K, layer);
    w_i32(&K, nframes);
    for (int f = 0; f < nframes; ++f) w_dict(&K, frames[f]);
    return chunk_end(a);
}
static inline size_t trn(int id, int child, const char *frame) { return c_trn(id, "", child, -1, 1, &frame); }
static inline size_t c_grp(int id, const char *attr, int n, const int *kids)
{
    size_t a = chunk_begin("nGRP");
    w_i32(&K, id);
    w_dict(&K, attr);
    w_i32(&K, n);
    for (int i = 0; i < n; ++i) w_i32(&K, kids[i]);
    return chunk_end(a);
}
static inline size_t c_shp(int id, int n, const int *models, const char *const *dicts)
{
    size_t a = chunk_begin("nSHP");
    w_i32(&K, id);
    w_dict(&K, "");
    w_i32(&K, n);
    for (int i = 0; i < n; ++i) {
        w_i32(&K, models[i]);
        w_dict(&K, dicts ? dicts[i] : "");
    }
    return chunk_end(a);
}
static inline size_t shp(int id, int model) { return c_shp(id, 1, &model, NULL); }
static inline size_t c_layr(int id, const char *attr)
{
    size_t a = chunk_begin("LAYR");
    w_i32(&K, id);
    w_dict(&K, attr);
    w_i32(&K, -1);
    return chunk_end(a);
}
static inline size_t c_matl(int id, const char *spec)
{
    size_t a = chunk_begin("MATL");
    w_i32(&K, id);
    w_dict(&K, spec);
    return chunk_end(a);
}
static inline size_t c_raw(const char *id, int n)
{
    size_t a = chunk_begin(id);
    for (int i = 0; i < n; ++i) w_bytes(&K, "\x5a", 1);
    return chunk_end(a);
}

/* "VOX " version MAIN{K} into F; K is emptied for the next file. */
static inline void vox_bytes(int version)
{
    F.n = 0;
    w_bytes(&F, "VOX ", 4);
    w_i32(&F, version);
    w_bytes(&F, "MAIN", 4);
    w_i32(&F, 0);
    w_i32(&F, (int32_t)K.n);
    w_bytes(&F, K.p, K.n);
    K.n = 0;
}

/* MATL chunks for ids 1..256, as MagicaVoxel writes them (256 stands for palette slot 0): every
 * one "_type" "_diffuse" but `emit_id`, "_type" "_emit" with "_emit" emit. */
static inline void c_matl_all(int emit_id, const char *emit)
{
    for (int id = 1; id <= 256; ++id) {
        char spec[96];
        if (id == emit_id) snprintf(spec, sizeof spec, "_type=_emit;_weight=1;_emit=%s", emit);
        else snprintf(spec, sizeof spec, "_type=_diffuse;_weight=1;_rough=0.1");
        c_matl(id, spec);
    }
}

#endif /* BK_TEST_VOX_WRITE_H */
