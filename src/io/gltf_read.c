/* gltf_read.c - glTF 2.0 reader, part 1: the container, buffers and URIs, the document's checks.
 *
 * Pipeline: io stage, beside obj.c and vox.c. bk_scene_load (loader.c) picks it for .gltf and .glb;
 * gltf_read_access.c decodes accessors, gltf_read_scene.c turns the document into the bk_scene.
 * JSON is parsed by cJSON (Debian's libcjson-dev); the glTF layer is ours, in C like the rest of
 * the program: accessors must be decoded here anyway (a glTF library hands over raw buffers),
 * every bound, limit and message is ours, and the fuzz target (tests/fuzz/fuzz_gltf.c) stays C.
 * Without libcjson (-DBK_GLTF=OFF or not installed) the entry points fail with a line saying
 * how to get it.
 *
 * Behaviour (docs/formats.md, "glTF 2.0"; tests/unit_gltf_read.c):
 *   container: a GLB (magic, version 2, length, a JSON chunk, an optional BIN chunk, lengths
 *     checked) or JSON text (a UTF-8 byte-order mark skipped); at most BK_SCENE_MAX_BYTES.
 *   asset.version must be 2.x; extensionsRequired may name only what the reader supports
 *     (KHR_mesh_quantization, KHR_texture_transform, KHR_materials_emissive_strength); Draco,
 *     meshopt, BasisU and WebP are refused by name, as is any other required extension.
 *   buffers: the GLB BIN chunk (a buffer without uri), data: URIs (base64), relative file URIs
 *     (percent-decoded, from the glTF's folder); absolute paths and other schemes are refused;
 *     the _mem entry point reads no other file. Each is read once, on first use, and must hold
 *     its byteLength; bufferViews must lie inside their buffer.
 *   errors: one line "FILE: JSON.PATH: reason" and a negative status; the scene is then empty.
 */
#include "gltf_read_internal.h"
#include "loader.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if BK_HAVE_GLTF

static uint64_t gl_out_limit = BK_SCENE_MAX_BYTES;

void bk_gltf_set_output_limit(uint64_t bytes) { gl_out_limit = bytes ? bytes : BK_SCENE_MAX_BYTES; }

/* ---- messages -------------------------------------------------------------------------------- */

int gl_fail(gl_ctx *c, const char *where, const char *fmt, ...)
{
    char    msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (where && where[0]) return bk_fail(c->err, c->err_size, "%s: %s: %s", c->name, where, msg);
    return bk_fail(c->err, c->err_size, "%s: %s", c->name, msg);
}

void gl_warn(gl_ctx *c, int kind, const char *where, const char *fmt, ...)
{
    if (kind >= 0 && kind < GL_W_KINDS) {
        if (c->warned & (1u << kind)) return;
        c->warned |= 1u << kind;
    }
    char    msg[768], line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (where && where[0]) snprintf(line, sizeof line, "baker: warning: %s: %s: %s", c->name, where, msg);
    else snprintf(line, sizeof line, "baker: warning: %s: %s", c->name, msg);
    bk_escape_controls(line, sizeof line);
    fprintf(stderr, "%s\n", line);
}

/* ---- JSON helpers ---------------------------------------------------------------------------- */

const cJSON *gl_get(const cJSON *obj, const char *key)
{
    return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

static int is_uint(const cJSON *v, uint64_t max)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    return d >= 0.0 && d <= (double)max && d == (double)(uint64_t)d;
}

int gl_index(gl_ctx *c, const cJSON *obj, const char *key, const char *where, uint32_t n, int required, uint32_t *out)
{
    const cJSON *v = gl_get(obj, key);
    if (!v) {
        *out = BK_NONE;
        if (!required) return 1;
        return gl_fail(c, where, "'%s' is missing", key);
    }
    if (!is_uint(v, UINT32_MAX)) return gl_fail(c, where, "'%s' must be an index (a non-negative integer)", key);
    if (v->valuedouble >= (double)n)
        return gl_fail(c, where, "'%s' is %.0f, but there are %u of what it names", key, v->valuedouble, n);
    *out = (uint32_t)v->valuedouble;
    return 0;
}

int gl_uint(gl_ctx *c, const cJSON *obj, const char *key, const char *where, uint64_t max, uint64_t def, uint64_t *out)
{
    const cJSON *v = gl_get(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!is_uint(v, max))
        return gl_fail(c, where, "'%s' must be an integer in 0..%llu", key, (unsigned long long)max);
    *out = (uint64_t)v->valuedouble;
    return 0;
}

int gl_num(gl_ctx *c, const cJSON *obj, const char *key, const char *where, double def, double *out)
{
    const cJSON *v = gl_get(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble - v->valuedouble == 0.0))
        return gl_fail(c, where, "'%s' must be a finite number", key);
    *out = v->valuedouble;
    return 0;
}

int gl_nums(gl_ctx *c, const cJSON *obj, const char *key, const char *where, int n, double *out)
{
    const cJSON *v = gl_get(obj, key);
    if (!v) return 1;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
        return gl_fail(c, where, "'%s' must be an array of %d numbers", key, n);
    int          k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v)
    {
        if (!cJSON_IsNumber(e) || !(e->valuedouble - e->valuedouble == 0.0))
            return gl_fail(c, where, "'%s'[%d] must be a finite number", key, k);
        out[k++] = e->valuedouble;
    }
    return 0;
}

int gl_bool(gl_ctx *c, const cJSON *obj, const char *key, const char *where, int def, int *out)
{
    const cJSON *v = gl_get(obj, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsBool(v)) return gl_fail(c, where, "'%s' must be true or false", key);
    *out = cJSON_IsTrue(v);
    return 0;
}

int gl_str(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const char **out)
{
    const cJSON *v = gl_get(obj, key);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsString(v) || !v->valuestring) return gl_fail(c, where, "'%s' must be a string", key);
    *out = v->valuestring;
    return 0;
}

int gl_obj(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const cJSON **out)
{
    const cJSON *v = gl_get(obj, key);
    *out = NULL;
    if (!v) return 0;
    if (!cJSON_IsObject(v)) return gl_fail(c, where, "'%s' must be an object", key);
    *out = v;
    return 0;
}

int gl_arr(gl_ctx *c, const cJSON *obj, const char *key, const char *where, const cJSON **out, uint32_t *n)
{
    const cJSON *v = gl_get(obj, key);
    *out = NULL;
    *n = 0;
    if (!v) return 0;
    if (!cJSON_IsArray(v)) return gl_fail(c, where, "'%s' must be an array", key);
    int k = cJSON_GetArraySize(v);
    if (k < 0 || (uint32_t)k > GL_MAX_ITEMS) return gl_fail(c, where, "'%s' has more than %u entries", key, GL_MAX_ITEMS);
    *out = v;
    *n = (uint32_t)k;
    return 0;
}

/* A top-level array: every entry must be an object. */
static int list_make(gl_ctx *c, const char *key, gl_list *l)
{
    const cJSON *a;
    uint32_t     n;
    if (gl_arr(c, c->root, key, "", &a, &n)) return -1;
    l->n = 0;
    l->it = NULL;
    if (!n) return 0;
    if (!(l->it = malloc(sizeof(cJSON *) * n))) return gl_fail(c, key, "out of memory");
    cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        if (!cJSON_IsObject(e)) return gl_fail(c, NULL, "%s[%u] must be an object", key, l->n);
        l->it[l->n++] = e;
    }
    return 0;
}

/* ---- URIs and buffers -------------------------------------------------------------------------- */

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+' || ch == '-') return 62;
    if (ch == '/' || ch == '_') return 63;
    return -1;
}

/* data:[MIME][;base64],DATA: the decoded bytes (at most max). */
static int data_uri(gl_ctx *c, const char *uri, const char *where, uint64_t max, uint8_t **out, uint64_t *size)
{
    const char *comma = strchr(uri, ',');
    if (!comma || comma - uri < 12 || strncmp(comma - 7, ";base64", 7))
        return gl_fail(c, where, "a data: URI must be base64 (data:...;base64,...)");
    const char *p = comma + 1;
    size_t      len = strlen(p);
    while (len && p[len - 1] == '=') len--;
    uint64_t n = (uint64_t)len / 4 * 3 + (len % 4 == 3 ? 2 : len % 4 == 2 ? 1 : 0);
    if (len % 4 == 1) return gl_fail(c, where, "the data: URI's base64 is cut short (%zu characters)", len);
    if (n > max) return gl_fail(c, where, "the data: URI holds %llu bytes, over the limit", (unsigned long long)n);
    uint8_t *b = malloc(n ? n : 1);
    if (!b) return gl_fail(c, where, "out of memory for %llu bytes", (unsigned long long)n);
    uint64_t o = 0;
    uint32_t acc = 0;
    int      bits = 0;
    for (size_t i = 0; i < len; ++i) {
        int v = b64_value((unsigned char)p[i]);
        if (v < 0) {
            free(b);
            return gl_fail(c, where, "the data: URI's base64 has a bad character at offset %zu",
                           (size_t)(p - uri) + i);
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            b[o++] = (uint8_t)(acc >> bits);
        }
    }
    *out = b;
    *size = o;
    return 0;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

int gl_uri_path(gl_ctx *c, const char *uri, char *out, size_t out_size, char *why, size_t why_size)
{
    /* a scheme (RFC 3986: a letter, then letters, digits, + - .) before ':' */
    const char *q = uri;
    if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) {
        while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '+' ||
               *q == '-' || *q == '.')
            q++;
        if (*q == ':') return bk_fail(why, why_size, "URI '%.80s': only data: and relative file URIs are read", uri);
    }
    if (uri[0] == '/' || uri[0] == '\\')
        return bk_fail(why, why_size, "URI '%.80s' is an absolute path: only relative ones are read", uri);
    if (!c->dir) return bk_fail(why, why_size, "URI '%.80s' names another file, which is not read here", uri);
    char   dec[PATH_MAX];
    size_t n = 0;
    for (const char *p = uri; *p; ++p) {
        int ch = (unsigned char)*p;
        if (*p == '%') {
            int h = hexval(p[1]), l = h < 0 ? -1 : hexval(p[2]);
            if (h < 0 || l < 0 || (h == 0 && l == 0))
                return bk_fail(why, why_size, "URI '%.80s': bad percent escape", uri);
            ch = h << 4 | l;
            p += 2;
        }
        if (n + 1 >= sizeof dec) return bk_fail(why, why_size, "URI '%.80s...' is too long", uri);
        dec[n++] = (char)ch;
    }
    dec[n] = 0;
    int w = c->dir[0] ? snprintf(out, out_size, "%s/%s", c->dir, dec) : snprintf(out, out_size, "%s", dec);
    if (w < 0 || (size_t)w >= out_size) return bk_fail(why, why_size, "URI '%.80s...' is too long", uri);
    return 0;
}

/* A regular file's bytes, at most max (malloc'd). */
static int read_file(const char *path, uint64_t max, uint8_t **out, uint64_t *size, char *err, size_t err_size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return bk_fail(err, err_size, "%s: %s", path, errno == ENOENT ? "no such file" : strerror(errno));
    uint64_t n = 0;
    if (bk_fd_regular(fd, path, &n, err, err_size)) return -1;
    if (n > max) {
        close(fd);
        return bk_fail(err, err_size, "%s: %llu bytes, over the limit of %llu", path, (unsigned long long)n,
                       (unsigned long long)max);
    }
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        close(fd);
        return bk_fail(err, err_size, "%s: out of memory for %llu bytes", path, (unsigned long long)n);
    }
    uint64_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (uint64_t)r;
    }
    close(fd);
    if (got != n) {
        free(b);
        return bk_fail(err, err_size, "%s: read failed", path);
    }
    *out = b;
    *size = n;
    return 0;
}

int gl_uri_read(gl_ctx *c, const char *uri, const char *where, uint64_t max, uint8_t **owned, uint64_t *size)
{
    if (!strncmp(uri, "data:", 5)) return data_uri(c, uri, where, max, owned, size);
    char path[PATH_MAX + 256], why[PATH_MAX + 512];
    if (gl_uri_path(c, uri, path, sizeof path, why, sizeof why)) return gl_fail(c, where, "%s", why);
    if (read_file(path, max, owned, size, why, sizeof why)) return gl_fail(c, where, "%s", why);
    return 0;
}

int gl_buffer_get(gl_ctx *c, uint32_t i, const char *where, const uint8_t **data, uint64_t *size)
{
    gl_buffer *b = &c->buf[i];
    if (b->state < 0) return -1;
    if (b->state == 0) {
        char         w[64];
        const cJSON *o = c->buffers.it[i];
        const char  *uri;
        uint64_t     len = 0, got = 0;
        b->state = -1;
        snprintf(w, sizeof w, "buffers[%u]", i);
        if (gl_str(c, o, "uri", w, &uri)) return -1;
        if (!gl_get(o, "byteLength")) return gl_fail(c, w, "'byteLength' is missing");
        if (gl_uint(c, o, "byteLength", w, BK_SCENE_MAX_BYTES, 0, &len)) return -1;
        if (!uri) {
            if (!c->bin) return gl_fail(c, w, "no uri, and the file has no GLB BIN chunk");
            if (i != 0) return gl_fail(c, w, "no uri: only buffers[0] may be the GLB BIN chunk");
            b->data = c->bin;
            got = c->bin_size;
        } else {
            if (c->loaded + len > BK_SCENE_MAX_BYTES)
                return gl_fail(c, w, "the buffers take more than %llu bytes", (unsigned long long)BK_SCENE_MAX_BYTES);
            if (gl_uri_read(c, uri, w, BK_SCENE_MAX_BYTES - c->loaded, &b->owned, &got)) return -1;
            b->data = b->owned;
            c->loaded += got;
        }
        if (got < len)
            return gl_fail(c, w, "holds %llu bytes, shorter than its byteLength %llu", (unsigned long long)got,
                           (unsigned long long)len);
        b->size = len;
        b->state = 1;
    }
    *data = b->data;
    *size = b->size;
    (void)where;
    return 0;
}

int gl_view_get(gl_ctx *c, uint32_t i, const char *where, const uint8_t **data, uint64_t *len, uint64_t *stride)
{
    char         w[64];
    const cJSON *v = c->views.it[i];
    uint32_t     buf;
    uint64_t     off = 0, bl = 0, st = 0;
    snprintf(w, sizeof w, "bufferViews[%u]", i);
    if (gl_index(c, v, "buffer", w, c->buffers.n, 1, &buf) || gl_uint(c, v, "byteOffset", w, UINT64_MAX >> 12, 0, &off))
        return -1;
    if (!gl_get(v, "byteLength")) return gl_fail(c, w, "'byteLength' is missing");
    if (gl_uint(c, v, "byteLength", w, UINT64_MAX >> 12, 0, &bl) || gl_uint(c, v, "byteStride", w, 252, 0, &st))
        return -1;
    if (st && st < 4) return gl_fail(c, w, "'byteStride' %llu: must be 4..252", (unsigned long long)st);
    const uint8_t *bd;
    uint64_t       bs;
    if (gl_buffer_get(c, buf, where, &bd, &bs)) return -1;
    if (off + bl > bs)
        return gl_fail(c, w, "byteOffset %llu + byteLength %llu reach past the end of buffer %u (%llu bytes)",
                       (unsigned long long)off, (unsigned long long)bl, buf, (unsigned long long)bs);
    *data = bd + off;
    *len = bl;
    *stride = st;
    return 0;
}

/* ---- the document ---------------------------------------------------------------------------- */

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The JSON text and BIN chunk of a GLB (binary glTF 2.0, section 4.4 of the spec). */
static int glb_chunks(gl_ctx *c, const uint8_t *d, uint64_t n, const uint8_t **json, uint64_t *json_len)
{
    if (n < 12) return gl_fail(c, NULL, "GLB header cut short (%llu bytes of 12)", (unsigned long long)n);
    uint32_t version = le32(d + 4), length = le32(d + 8);
    if (version != 2) return gl_fail(c, NULL, "GLB version %u: only glTF 2.0 (version 2) is read", version);
    if (length > n)
        return gl_fail(c, NULL, "GLB header says %u bytes, the file has %llu (truncated)", length,
                       (unsigned long long)n);
    if (length < 20) return gl_fail(c, NULL, "GLB length %u leaves no room for the JSON chunk", length);
    uint64_t pos = 12;
    *json = NULL;
    for (int k = 0; pos + 8 <= length; ++k) {
        uint32_t cl = le32(d + pos), type = le32(d + pos + 4);
        if (cl > length - pos - 8)
            return gl_fail(c, NULL, "GLB chunk %d at byte %llu claims %u bytes, past the end of the file (%u)", k,
                           (unsigned long long)pos, cl, length);
        if (k == 0) {
            if (type != 0x4E4F534Au) return gl_fail(c, NULL, "GLB's first chunk is not JSON (byte 16)");
            *json = d + pos + 8;
            *json_len = cl;
        } else if (type == 0x004E4942u && !c->bin) {
            c->bin = d + pos + 8;
            c->bin_size = cl;
        }
        pos += 8 + (uint64_t)cl;
        pos = (pos + 3) & ~(uint64_t)3;
    }
    if (!*json) return gl_fail(c, NULL, "GLB has no JSON chunk");
    return 0;
}

/* Extensions the reader supports when required; those it refuses by name say why. */
static int check_extensions(gl_ctx *c)
{
    static const char *const ok[] = { "KHR_mesh_quantization", "KHR_texture_transform",
                                      "KHR_materials_emissive_strength" };
    static const char *const known[][2] = {
        { "KHR_draco_mesh_compression", "Draco-compressed meshes" },
        { "EXT_meshopt_compression", "meshopt-compressed buffers" },
        { "KHR_texture_basisu", "KTX2 / Basis Universal textures" },
        { "EXT_texture_webp", "WebP textures" },
    };
    const cJSON *a;
    uint32_t     n;
    if (gl_arr(c, c->root, "extensionsRequired", "", &a, &n)) return -1;
    int          k = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a)
    {
        char w[48];
        snprintf(w, sizeof w, "extensionsRequired[%d]", k++);
        if (!cJSON_IsString(e) || !e->valuestring) return gl_fail(c, w, "must be a string");
        int good = 0;
        for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) good |= !strcmp(e->valuestring, ok[i]);
        if (good) continue;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; ++i)
            if (!strcmp(e->valuestring, known[i][0]))
                return gl_fail(c, w, "the file requires %s (%s), which baker does not read", known[i][0], known[i][1]);
        return gl_fail(c, w, "the file requires the extension '%.100s', which baker does not know", e->valuestring);
    }
    return 0;
}

static int check_asset(gl_ctx *c)
{
    const cJSON *asset;
    const char  *v = NULL, *minv = NULL;
    if (gl_obj(c, c->root, "asset", "", &asset)) return -1;
    if (!asset) return gl_fail(c, NULL, "no 'asset' object: not a glTF 2.0 file");
    if (gl_str(c, asset, "version", "asset", &v) || gl_str(c, asset, "minVersion", "asset", &minv)) return -1;
    if (!v) return gl_fail(c, "asset", "'version' is missing");
    if (strncmp(v, "2.", 2))
        return gl_fail(c, "asset", "version '%.20s': only glTF 2.x is read (convert glTF 1.0 files first)", v);
    if (minv && strcmp(minv, "2.0"))
        return gl_fail(c, "asset", "minVersion '%.20s': this reader knows glTF 2.0", minv);
    return 0;
}

static void ctx_free(gl_ctx *c)
{
    gl_list *l[] = { &c->buffers, &c->views,    &c->accessors, &c->meshes,   &c->nodes,  &c->scenes,
                     &c->materials, &c->textures, &c->images,  &c->samplers, &c->cameras };
    for (size_t i = 0; i < sizeof l / sizeof l[0]; ++i) free(l[i]->it);
    if (c->buf)
        for (uint32_t i = 0; i < c->buffers.n; ++i) free(c->buf[i].owned);
    free(c->buf);
    free(c->image_map);
    cJSON_Delete(c->root);
}

/* Long: one pass over the container, then each top-level list, then the scene */
static int load_doc(const char *name, const char *dir, const uint8_t *d, uint64_t n, bk_scene *out, char *err,
                    size_t err_size)
{
    gl_ctx c;
    memset(&c, 0, sizeof c);
    c.name = name;
    c.dir = dir;
    c.s = out;
    c.err = err;
    c.err_size = err_size;
    c.max_out = gl_out_limit;
    const uint8_t *json = d;
    uint64_t       json_len = n;
    int            rc = 0;
    if (n >= 4 && !memcmp(d, "glTF", 4)) rc = glb_chunks(&c, d, n, &json, &json_len);
    if (!rc && json_len >= 3 && !memcmp(json, "\xEF\xBB\xBF", 3)) {
        json += 3;
        json_len -= 3;
    }
    if (!rc) {
        const char *end = NULL;
        c.root = cJSON_ParseWithLengthOpts((const char *)json, (size_t)json_len, &end, 0);
        if (!c.root) {
            uint64_t at = end && end >= (const char *)json ? (uint64_t)(end - (const char *)json) : 0;
            rc = gl_fail(&c, NULL, "not valid JSON (at byte %llu of the JSON text%s)", (unsigned long long)at,
                         json == d ? "" : ", in the GLB's JSON chunk");
        } else if (!cJSON_IsObject(c.root)) rc = gl_fail(&c, NULL, "the JSON text is not an object: not a glTF file");
    }
    if (!rc) rc = check_asset(&c);
    if (!rc) rc = check_extensions(&c);
    struct {
        const char *key;
        gl_list    *l;
    } lists[] = { { "buffers", &c.buffers },     { "bufferViews", &c.views }, { "accessors", &c.accessors },
                  { "meshes", &c.meshes },       { "nodes", &c.nodes },       { "scenes", &c.scenes },
                  { "materials", &c.materials }, { "textures", &c.textures }, { "images", &c.images },
                  { "samplers", &c.samplers },   { "cameras", &c.cameras } };
    for (size_t i = 0; !rc && i < sizeof lists / sizeof lists[0]; ++i) rc = list_make(&c, lists[i].key, lists[i].l);
    if (!rc && c.buffers.n && !(c.buf = calloc(c.buffers.n, sizeof *c.buf))) rc = gl_fail(&c, NULL, "out of memory");
    if (!rc && c.images.n) {
        if (!(c.image_map = malloc(sizeof(uint32_t) * c.images.n))) rc = gl_fail(&c, NULL, "out of memory");
        else memset(c.image_map, 0xFF, sizeof(uint32_t) * c.images.n);
    }
    if (!rc) rc = gl_build_scene(&c);
    ctx_free(&c);
    if (rc) {
        bk_scene_free(out);
        return -1;
    }
    return 0;
}

int bk_scene_load_gltf_mem(const void *data, size_t size, const char *name, bk_scene *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (err && err_size) err[0] = 0;
    if ((uint64_t)size > BK_SCENE_MAX_BYTES)
        return bk_fail(err, err_size, "%s: %zu bytes: glTF files are read up to %llu", name, size,
                       (unsigned long long)BK_SCENE_MAX_BYTES);
    return load_doc(name, NULL, data, size, out, err, err_size);
}

int bk_scene_load_gltf(const char *path, bk_scene *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (err && err_size) err[0] = 0;
    uint8_t *d = NULL;
    uint64_t n = 0;
    if (read_file(path, BK_SCENE_MAX_BYTES, &d, &n, err, err_size)) return -1;
    char        dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) dir[0] = 0;
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int rc = load_doc(path, dir, d, n, out, err, err_size);
    free(d);
    return rc;
}

#else /* !BK_HAVE_GLTF */

void bk_gltf_set_output_limit(uint64_t bytes) { (void)bytes; }

int bk_scene_load_gltf_mem(const void *data, size_t size, const char *name, bk_scene *out, char *err, size_t err_size)
{
    (void)data;
    (void)size;
    memset(out, 0, sizeof *out);
    return bk_fail(err, err_size, "%s: glTF input needs cJSON: apt-get install libcjson-dev, then configure again",
                   name);
}

int bk_scene_load_gltf(const char *path, bk_scene *out, char *err, size_t err_size)
{
    return bk_scene_load_gltf_mem(NULL, 0, path, out, err, err_size);
}

#endif
