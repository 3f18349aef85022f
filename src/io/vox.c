/* vox.c - MagicaVoxel .vox reader: file bytes -> bk_scene voxel models, instances, 256 materials.
 *
 * Pipeline: io stage, beside obj.c. bk_scene_load (loader.c) picks this reader for a name ending in
 * .vox; the voxel surface builder and the top-level builders read what it fills in (vox.h), and
 * instances are placed with vox_instance.c.
 * References: ephtracy/voxel-model, MagicaVoxel-file-format-vox.txt (chunks, RGBA, default palette)
 * and MagicaVoxel-file-format-vox-extension.txt (STRING, DICT, ROTATION, nTRN nGRP nSHP MATL LAYR).
 *
 * Behaviour (also checked by tests/unit_vox.c and tests/fuzz/fuzz_vox.c):
 *   file: "VOX ", version 150 or 200, then one MAIN chunk whose children are read in order. A chunk
 *     is id(4) content bytes(4) children bytes(4); every chunk not listed below (PACK, MATT, rOBJ,
 *     rCAM, NOTE, IMAP, unknown ones) and the children of every chunk but MAIN are skipped by these
 *     sizes. Bytes after the MAIN chunk are ignored.
 *   models: each SIZE (x y z, each 1..256) followed by its XYZI (count, then x y z colour index per
 *     voxel) is model number i in file order. Voxels must lie inside their model and have a colour
 *     index 1..255: index 0 means "empty" in MagicaVoxel and no MagicaVoxel writes it, so a voxel
 *     with index 0 is an error rather than a guess. Duplicate voxels are kept as written.
 *   palette: colour index k (1..255) is entry k-1 of the RGBA chunk (alpha ignored); without an
 *     RGBA chunk, MagicaVoxel's default palette (the table below). 256 materials are appended,
 *     named "vox_K": kd the palette colour converted from sRGB to linear, map_kd "". Index 0 is
 *     never used by a voxel; its material is black.
 *   emission: a MATL chunk for index k with "_type" "_emit" gives ke = kd * _emit * 2^_flux
 *     (_emit absent = 0, _flux absent = 0; _emit below 0 counts as 0). Other material types and
 *     keys are ignored. MagicaVoxel writes MATL ids 1..256, 256 standing for slot 0 (read as 0,
 *     which no voxel uses); 0 is read as itself. A ke channel above BK_KE_MAX is clamped with one
 *     warning on stderr.
 *   scene graph (nTRN nGRP nSHP, either version): the walk starts at node 0. Transforms compose
 *     down the tree: R = R_parent R_child, t = R_parent t_child + t_parent; a shape placed with
 *     (R, t) becomes one instance with world = Y R (p - floor(size / 2)) + Y t, Y = BK_VOX_YUP
 *     taking MagicaVoxel's Z-up frame to the world's Y-up one (vox.h). Each node uses
 *     its frame 0: the frame (nTRN) or model (nSHP) whose "_f" is 0 or absent, else the first.
 *     "_r" is a MagicaVoxel rotation byte (a signed permutation, mirrors included); "_t" is three
 *     integers. An nTRN with "_hidden" "1", or whose layer id names a LAYR with "_hidden" "1", and
 *     an nGRP with "_hidden" "1" are left out with everything under them. A layer id that names no
 *     LAYR is visible. A shape node may be the child of several nodes (MagicaVoxel writes that for
 *     copies); a transform or group node may have one parent only. A model placed several times
 *     is stored once.
 *   legacy files (no nTRN/nGRP/nSHP): one instance per model, at R = identity (M = Y) with t = 0.
 *   errors (negative status, the scene left empty, one line "path: byte N: reason" where N is the
 *     offset of the offending chunk or field): not "VOX " (e.g. a SLAB6 .vox), another version,
 *     first chunk not MAIN, a chunk or field running past its parent or the file, a size of 0 or
 *     over 256, XYZI without SIZE or SIZE without XYZI, a voxel outside its model or of colour
 *     index 0, an RGBA chunk under 1024 bytes, a MATL id outside 0..256, a number that does not
 *     parse or is not finite, an invalid "_r" byte, a node id defined twice, a child or root node
 *     or model id that does not exist, a transform or group node with two parents, a loop, a
 *     graph deeper than MAX_DEPTH, a translation (an nTRN's own, or composed down the graph, in
 *     int64) beyond BK_VOX_MAX_COORD = 2^23 (so that every cell is an integer a float holds
 *     exactly, vox.h), more models or instances
 *     than vox.h allows, no model, no visible instance, out of memory. "path: reason" (no byte)
 *     for a file that cannot be opened, is not a regular file or is over BK_VOX_MAX_BYTES.
 * Speed: the file is read into memory once; node and layer ids go through hash tables and the
 * graph is walked with an explicit stack, so loading is linear in the file size.
 */
#include "loader.h"
#include "scene.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH BK_VOX_MAX_DEPTH

const uint32_t bk_vox_default_palette[256] = {
    0x00000000, 0xffffffff, 0xffccffff, 0xff99ffff, 0xff66ffff, 0xff33ffff, 0xff00ffff, 0xffffccff, 0xffccccff,
    0xff99ccff, 0xff66ccff, 0xff33ccff, 0xff00ccff, 0xffff99ff, 0xffcc99ff, 0xff9999ff, 0xff6699ff, 0xff3399ff,
    0xff0099ff, 0xffff66ff, 0xffcc66ff, 0xff9966ff, 0xff6666ff, 0xff3366ff, 0xff0066ff, 0xffff33ff, 0xffcc33ff,
    0xff9933ff, 0xff6633ff, 0xff3333ff, 0xff0033ff, 0xffff00ff, 0xffcc00ff, 0xff9900ff, 0xff6600ff, 0xff3300ff,
    0xff0000ff, 0xffffffcc, 0xffccffcc, 0xff99ffcc, 0xff66ffcc, 0xff33ffcc, 0xff00ffcc, 0xffffcccc, 0xffcccccc,
    0xff99cccc, 0xff66cccc, 0xff33cccc, 0xff00cccc, 0xffff99cc, 0xffcc99cc, 0xff9999cc, 0xff6699cc, 0xff3399cc,
    0xff0099cc, 0xffff66cc, 0xffcc66cc, 0xff9966cc, 0xff6666cc, 0xff3366cc, 0xff0066cc, 0xffff33cc, 0xffcc33cc,
    0xff9933cc, 0xff6633cc, 0xff3333cc, 0xff0033cc, 0xffff00cc, 0xffcc00cc, 0xff9900cc, 0xff6600cc, 0xff3300cc,
    0xff0000cc, 0xffffff99, 0xffccff99, 0xff99ff99, 0xff66ff99, 0xff33ff99, 0xff00ff99, 0xffffcc99, 0xffcccc99,
    0xff99cc99, 0xff66cc99, 0xff33cc99, 0xff00cc99, 0xffff9999, 0xffcc9999, 0xff999999, 0xff669999, 0xff339999,
    0xff009999, 0xffff6699, 0xffcc6699, 0xff996699, 0xff666699, 0xff336699, 0xff006699, 0xffff3399, 0xffcc3399,
    0xff993399, 0xff663399, 0xff333399, 0xff003399, 0xffff0099, 0xffcc0099, 0xff990099, 0xff660099, 0xff330099,
    0xff000099, 0xffffff66, 0xffccff66, 0xff99ff66, 0xff66ff66, 0xff33ff66, 0xff00ff66, 0xffffcc66, 0xffcccc66,
    0xff99cc66, 0xff66cc66, 0xff33cc66, 0xff00cc66, 0xffff9966, 0xffcc9966, 0xff999966, 0xff669966, 0xff339966,
    0xff009966, 0xffff6666, 0xffcc6666, 0xff996666, 0xff666666, 0xff336666, 0xff006666, 0xffff3366, 0xffcc3366,
    0xff993366, 0xff663366, 0xff333366, 0xff003366, 0xffff0066, 0xffcc0066, 0xff990066, 0xff660066, 0xff330066,
    0xff000066, 0xffffff33, 0xffccff33, 0xff99ff33, 0xff66ff33, 0xff33ff33, 0xff00ff33, 0xffffcc33, 0xffcccc33,
    0xff99cc33, 0xff66cc33, 0xff33cc33, 0xff00cc33, 0xffff9933, 0xffcc9933, 0xff999933, 0xff669933, 0xff339933,
    0xff009933, 0xffff6633, 0xffcc6633, 0xff996633, 0xff666633, 0xff336633, 0xff006633, 0xffff3333, 0xffcc3333,
    0xff993333, 0xff663333, 0xff333333, 0xff003333, 0xffff0033, 0xffcc0033, 0xff990033, 0xff660033, 0xff330033,
    0xff000033, 0xffffff00, 0xffccff00, 0xff99ff00, 0xff66ff00, 0xff33ff00, 0xff00ff00, 0xffffcc00, 0xffcccc00,
    0xff99cc00, 0xff66cc00, 0xff33cc00, 0xff00cc00, 0xffff9900, 0xffcc9900, 0xff999900, 0xff669900, 0xff339900,
    0xff009900, 0xffff6600, 0xffcc6600, 0xff996600, 0xff666600, 0xff336600, 0xff006600, 0xffff3300, 0xffcc3300,
    0xff993300, 0xff663300, 0xff333300, 0xff003300, 0xffff0000, 0xffcc0000, 0xff990000, 0xff660000, 0xff330000,
    0xff0000ee, 0xff0000dd, 0xff0000bb, 0xff0000aa, 0xff000088, 0xff000077, 0xff000055, 0xff000044, 0xff000022,
    0xff000011, 0xff00ee00, 0xff00dd00, 0xff00bb00, 0xff00aa00, 0xff008800, 0xff007700, 0xff005500, 0xff004400,
    0xff002200, 0xff001100, 0xffee0000, 0xffdd0000, 0xffbb0000, 0xffaa0000, 0xff880000, 0xff770000, 0xff550000,
    0xff440000, 0xff220000, 0xff110000, 0xffeeeeee, 0xffdddddd, 0xffbbbbbb, 0xffaaaaaa, 0xff888888, 0xff777777,
    0xff555555, 0xff444444, 0xff222222, 0xff111111,
};

/* ---- reading context, errors, byte spans ------------------------------------------------------ */

enum { NODE_TRN, NODE_GRP, NODE_SHP };

typedef struct vox_node {
    int32_t  id;
    uint8_t  kind;      /* NODE_* */
    uint8_t  hidden;    /* "_hidden" "1" (nTRN, nGRP) */
    uint8_t  visited;   /* reached by the walk (loops) */
    uint8_t  parents;   /* references from nTRN/nGRP children, saturating */
    int8_t   m[9];      /* nTRN frame 0 rotation */
    int32_t  t[3];      /* nTRN frame 0 translation */
    int32_t  layer;     /* nTRN layer id */
    int32_t  child;     /* nTRN child id; nGRP first index into ctx.kids; nSHP model id */
    uint32_t kid_count; /* nGRP children */
    size_t   off;       /* chunk offset, for messages */
    size_t   field;     /* offset of the child / model id field, for messages */
    size_t   name_off;  /* nTRN "_name": its bytes in the file (name_len 0: none) */
    uint32_t name_len;
} vox_node;

typedef struct vox_matl {
    uint8_t emit;         /* _type _emit */
    float   amount, flux; /* _emit, _flux */
} vox_matl;

typedef struct vox_ref {
    int32_t id;
    size_t  off;
} vox_ref; /* a child id and where it is written */
typedef struct vox_layer {
    int32_t id;
    uint8_t hidden;
} vox_layer;

/* id -> index, open addressing; slots hold index + 1 (0 = empty). */
typedef struct idmap {
    int32_t  *key;
    uint32_t *val;
    uint32_t  mask;
} idmap;

typedef struct vox_ctx {
    const char    *path;
    char          *err;
    size_t         err_size;
    const uint8_t *b; /* the file */
    size_t         len;
    bk_scene      *out;
    uint32_t       model_cap;
    vox_node      *nodes;
    uint32_t       node_count, node_cap;
    vox_ref       *kids; /* nGRP children */
    uint32_t       kid_count, kid_cap;
    vox_layer     *layers; /* LAYR chunks */
    uint32_t       layer_count, layer_cap;
    idmap          node_map, layer_map;
    uint32_t       inst_cap;
    const uint8_t *rgba; /* the RGBA chunk's content, NULL for the default palette */
    vox_matl       matl[256];
} vox_ctx;

typedef struct span {
    size_t pos, end;
} span; /* a window of the file: [pos, end) */

static int fail_at(vox_ctx *c, size_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(vox_ctx *c, size_t off, const char *fmt, ...)
{
    char    why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    bk_fail(c->err, c->err_size, "%s: byte %zu: %s", c->path, off, why);
    return -1;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A chunk id for a message: printable bytes as they are, others as \xNN. */
static const char *id_text(const uint8_t *id, char out[20])
{
    char *o = out;
    for (int i = 0; i < 4; ++i) {
        if (id[i] >= 0x20 && id[i] < 0x7f && id[i] != '\\') *o++ = (char)id[i];
        else o += sprintf(o, "\\x%02x", id[i]);
    }
    *o = 0;
    return out;
}

static int rd_i32(vox_ctx *c, span *s, int32_t *v, const char *what)
{
    *v = 0;
    if (s->end - s->pos < 4)
        return fail_at(c, s->pos, "%s: cut short (%zu of 4 bytes left in the chunk)", what, s->end - s->pos);
    *v = (int32_t)le32(c->b + s->pos);
    s->pos += 4;
    return 0;
}

/* A count of elements of at least `each` bytes that must fit in what is left of the span. */
static int rd_count(vox_ctx *c, span *s, uint32_t *n, size_t each, const char *what)
{
    size_t  at = s->pos;
    int32_t v = 0;
    if (rd_i32(c, s, &v, what)) return -1;
    if (v < 0) return fail_at(c, at, "%s %d is negative", what, v);
    if ((uint64_t)(uint32_t)v * each > s->end - s->pos)
        return fail_at(c, at, "%s %d does not fit in the %zu bytes left in the chunk", what, v, s->end - s->pos);
    *n = (uint32_t)v;
    return 0;
}

/* DICT: the keys wanted are looked for; the last value of a repeated key wins. */
typedef struct kv {
    const char    *key;
    const uint8_t *val; /* NULL when absent */
    uint32_t       len;
    size_t         off; /* offset of the value's length field */
} kv;

static int rd_dict(vox_ctx *c, span *s, kv *want, int nwant, const char *what)
{
    for (int i = 0; i < nwant; ++i) want[i].val = NULL;
    uint32_t n;
    if (rd_count(c, s, &n, 8, what)) return -1;
    for (uint32_t p = 0; p < n; ++p) {
        uint32_t klen = 0, vlen = 0;
        if (rd_count(c, s, &klen, 1, "dictionary key length")) return -1;
        const uint8_t *key = c->b + s->pos;
        s->pos += klen;
        size_t voff = s->pos;
        if (rd_count(c, s, &vlen, 1, "dictionary value length")) return -1;
        for (int i = 0; i < nwant; ++i)
            if (strlen(want[i].key) == klen && memcmp(want[i].key, key, klen) == 0) {
                want[i].val = c->b + s->pos;
                want[i].len = vlen;
                want[i].off = voff;
            }
        s->pos += vlen;
    }
    return 0;
}

/* A dictionary value as a C string in buf; values longer than any number are refused. */
static int kv_text(vox_ctx *c, const kv *k, char *buf, size_t n)
{
    if (k->len >= n) return fail_at(c, k->off, "value of \"%s\" is %u bytes long: not a number", k->key, k->len);
    memcpy(buf, k->val, k->len);
    buf[k->len] = 0;
    for (uint32_t i = 0; i < k->len; ++i)
        if (buf[i] == 0) return fail_at(c, k->off, "value of \"%s\" holds a NUL byte", k->key);
    return 0;
}

/* A value for a message: control bytes, non-ASCII bytes, quotes and backslashes as \xNN. */
static const char *quoted(const char *v, char *out, size_t n)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)v; *p && o + 5 < n; ++p) {
        if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') out[o++] = (char)*p;
        else o += (size_t)snprintf(out + o, n - o, "\\x%02x", *p);
    }
    out[o] = 0;
    return out;
}

/* Up to `want` integers separated by blanks (exactly `want` of them), each in [lo, hi]. */
static int kv_ints(vox_ctx *c, const kv *k, long long *v, int want, long long lo, long long hi)
{
    char buf[96], q[4 * sizeof buf + 8], *p = buf, *e;
    if (kv_text(c, k, buf, sizeof buf)) return -1;
    for (int i = 0; i < want; ++i) {
        errno = 0;
        v[i] = strtoll(p, &e, 10);
        if (e == p || errno || v[i] < lo || v[i] > hi)
            return fail_at(c, k->off, "\"%s\" \"%s\": expected %d integer%s in %lld..%lld", k->key,
                           quoted(buf, q, sizeof q), want, want > 1 ? "s" : "", lo, hi);
        p = e;
    }
    while (*p == ' ' || *p == '\t') ++p;
    if (*p)
        return fail_at(c, k->off, "\"%s\" \"%s\": expected %d integer%s", k->key, quoted(buf, q, sizeof q), want,
                       want > 1 ? "s" : "");
    return 0;
}

static int kv_float(vox_ctx *c, const kv *k, float *v)
{
    char buf[64], q[4 * sizeof buf + 8], *e;
    if (kv_text(c, k, buf, sizeof buf)) return -1;
    double d = strtod(buf, &e);
    while (*e == ' ' || *e == '\t') ++e;
    if (e == buf || *e || !isfinite(d) || fabs(d) > 1e30)
        return fail_at(c, k->off, "\"%s\" \"%s\": not a finite number", k->key, quoted(buf, q, sizeof q));
    *v = (float)d;
    return 0;
}

static int kv_is_one(const kv *k) { return k->val && k->len == 1 && k->val[0] == '1'; }

/* Frame 0 of a list: the entry whose "_f" is 0 or absent, else the first. */
static int is_frame0(vox_ctx *c, const kv *f, int *yes)
{
    long long v = 0;
    if (f->val && kv_ints(c, f, &v, 1, INT32_MIN, INT32_MAX)) return -1;
    *yes = v == 0;
    return 0;
}

/* Grows *p (n used of *cap elements of `size` bytes) to room for one more; 0 or -1. */
static int grow(void **p, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap) return 0;
    uint64_t nc = *cap ? (uint64_t)*cap * 2 : 16;
    if (nc > UINT32_MAX) nc = UINT32_MAX;
    if (nc <= n) return -1;
    void *q = realloc(*p, (size_t)nc * size);
    if (!q) return -1;
    *p = q;
    *cap = (uint32_t)nc;
    return 0;
}

/* ---- id maps ---------------------------------------------------------------------------------- */

static uint32_t id_hash(int32_t id)
{
    uint32_t h = (uint32_t)id * 0x9E3779B1u;
    return h ^ (h >> 15);
}

static int idmap_init(idmap *m, uint32_t n)
{
    uint32_t cap = 16;
    while (cap < 2u * n + 2u) cap *= 2; /* n < 2^30: bounded by the file size */
    m->key = malloc((size_t)cap * sizeof *m->key);
    m->val = calloc(cap, sizeof *m->val);
    m->mask = cap - 1;
    return m->key && m->val ? 0 : -1;
}

static void idmap_free(idmap *m)
{
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* Index of id, or BK_NONE. */
static uint32_t idmap_find(const idmap *m, int32_t id)
{
    if (!m->val) return BK_NONE;
    for (uint32_t h = id_hash(id) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) return BK_NONE;
        if (m->key[h] == id) return m->val[h] - 1;
    }
}

/* Adds id -> index; returns the index already there, or BK_NONE when id is new. */
static uint32_t idmap_add(idmap *m, int32_t id, uint32_t index)
{
    for (uint32_t h = id_hash(id) & m->mask;; h = (h + 1) & m->mask) {
        if (!m->val[h]) {
            m->key[h] = id;
            m->val[h] = index + 1;
            return BK_NONE;
        }
        if (m->key[h] == id) return m->val[h] - 1;
    }
}

/* ---- chunks ----------------------------------------------------------------------------------- */

static int oom(vox_ctx *c, size_t off) { return fail_at(c, off, "out of memory"); }

static int read_size(vox_ctx *c, span *s, size_t off, uint32_t size[3])
{
    static const char *axis[3] = { "SIZE x", "SIZE y", "SIZE z" };
    for (int a = 0; a < 3; ++a) {
        size_t  at = s->pos;
        int32_t v = 0;
        if (rd_i32(c, s, &v, axis[a])) return -1;
        if (v < 1 || v > BK_VOX_MAX_SIZE)
            return fail_at(c, at, "%s = %d: a model side must be 1..%d", axis[a], v, BK_VOX_MAX_SIZE);
        size[a] = (uint32_t)v;
    }
    (void)off;
    return 0;
}

static int read_xyzi(vox_ctx *c, span *s, size_t off, const uint32_t size[3])
{
    bk_scene *o = c->out;
    if (o->vox_model_count >= BK_VOX_MAX_MODELS)
        return fail_at(c, off, "more than %u models", (unsigned)BK_VOX_MAX_MODELS);
    uint32_t n;
    if (rd_count(c, s, &n, 4, "XYZI voxel count")) return -1;
    const uint8_t *v = c->b + s->pos;
    for (uint32_t i = 0; i < n; ++i) {
        const uint8_t *q = v + 4 * (size_t)i;
        if (q[0] >= size[0] || q[1] >= size[1] || q[2] >= size[2])
            return fail_at(c, s->pos + 4 * (size_t)i, "voxel %u at (%u %u %u) is outside its %ux%ux%u model", i, q[0],
                           q[1], q[2], size[0], size[1], size[2]);
        if (q[3] == 0)
            return fail_at(c, s->pos + 4 * (size_t)i,
                           "voxel %u at (%u %u %u) has colour index 0 (empty in MagicaVoxel)", i, q[0], q[1], q[2]);
    }
    if (grow((void **)&o->vox_models, o->vox_model_count, &c->model_cap, sizeof *o->vox_models)) return oom(c, off);
    bk_vox_model *m = &o->vox_models[o->vox_model_count];
    memset(m, 0, sizeof *m);
    m->xyzi = malloc(n ? 4 * (size_t)n : 1);
    if (!m->xyzi) return oom(c, off);
    memcpy(m->xyzi, v, 4 * (size_t)n);
    memcpy(m->size, size, sizeof m->size);
    m->voxel_count = n;
    o->vox_model_count++;
    return 0;
}

static int read_matl(vox_ctx *c, span *s)
{
    size_t  at = s->pos;
    int32_t id;
    if (rd_i32(c, s, &id, "MATL id")) return -1;
    /* MagicaVoxel writes ids 1..256, 256 for palette slot 0 (which no voxel uses; ogt_vox reads id & 0xFF) */
    if (id < 0 || id > 256) return fail_at(c, at, "MATL id %d outside 0..256", id);
    id &= 0xFF;
    kv k[3] = { { "_type", NULL, 0, 0 }, { "_emit", NULL, 0, 0 }, { "_flux", NULL, 0, 0 } };
    if (rd_dict(c, s, k, 3, "MATL dictionary size")) return -1;
    vox_matl *m = &c->matl[id];
    memset(m, 0, sizeof *m);
    m->emit = k[0].val && k[0].len == 5 && memcmp(k[0].val, "_emit", 5) == 0;
    if (k[1].val && kv_float(c, &k[1], &m->amount)) return -1;
    if (k[2].val && kv_float(c, &k[2], &m->flux)) return -1;
    return 0;
}

static int read_layr(vox_ctx *c, span *s, size_t off)
{
    int32_t id;
    if (rd_i32(c, s, &id, "LAYR id")) return -1;
    kv k[1] = { { "_hidden", NULL, 0, 0 } };
    if (rd_dict(c, s, k, 1, "LAYR dictionary size")) return -1;
    if (grow((void **)&c->layers, c->layer_count, &c->layer_cap, sizeof *c->layers)) return oom(c, off);
    c->layers[c->layer_count].id = id;
    c->layers[c->layer_count].hidden = (uint8_t)kv_is_one(&k[0]);
    c->layer_count++;
    return 0;
}

static vox_node *new_node(vox_ctx *c, span *s, size_t off, int kind, kv *attr, int nattr)
{
    int32_t id;
    if (rd_i32(c, s, &id, "node id")) return NULL;
    if (rd_dict(c, s, attr, nattr, "node attribute count")) return NULL;
    if (c->node_count >= BK_VOX_MAX_INSTANCES * 4u) {
        fail_at(c, off, "more than %u scene graph nodes", BK_VOX_MAX_INSTANCES * 4u);
        return NULL;
    }
    if (grow((void **)&c->nodes, c->node_count, &c->node_cap, sizeof *c->nodes)) {
        oom(c, off);
        return NULL;
    }
    vox_node *n = &c->nodes[c->node_count++];
    memset(n, 0, sizeof *n);
    n->id = id;
    n->kind = (uint8_t)kind;
    n->off = off;
    n->m[0] = n->m[4] = n->m[8] = 1;
    return n;
}

static int read_ntrn(vox_ctx *c, span *s, size_t off)
{
    kv        attr[2] = { { "_hidden", NULL, 0, 0 }, { "_name", NULL, 0, 0 } };
    vox_node *n = new_node(c, s, off, NODE_TRN, attr, 2);
    if (!n) return -1;
    n->hidden = (uint8_t)kv_is_one(&attr[0]);
    if (attr[1].val && attr[1].len) {
        n->name_off = (size_t)(attr[1].val - c->b);
        n->name_len = attr[1].len;
    }
    int32_t reserved;
    n->field = s->pos;
    if (rd_i32(c, s, &n->child, "nTRN child id") || rd_i32(c, s, &reserved, "nTRN reserved id") ||
        rd_i32(c, s, &n->layer, "nTRN layer id"))
        return -1;
    uint32_t frames;
    if (rd_count(c, s, &frames, 4, "nTRN frame count")) return -1;
    int chosen = 0;
    for (uint32_t f = 0; f < frames; ++f) {
        kv k[3] = { { "_r", NULL, 0, 0 }, { "_t", NULL, 0, 0 }, { "_f", NULL, 0, 0 } };
        if (rd_dict(c, s, k, 3, "nTRN frame dictionary size")) return -1;
        int zero;
        if (is_frame0(c, &k[2], &zero)) return -1;
        if (chosen == 2 || (chosen == 1 && !zero)) continue;
        chosen = zero ? 2 : 1;
        long long v[3] = { 0, 0, 0 };
        n->m[0] = n->m[4] = n->m[8] = 1;
        n->m[1] = n->m[2] = n->m[3] = n->m[5] = n->m[6] = n->m[7] = 0;
        if (k[0].val) {
            if (kv_ints(c, &k[0], v, 1, 0, 255)) return -1;
            if (!bk_vox_rot_matrix((uint8_t)v[0], n->m))
                return fail_at(c, k[0].off, "\"_r\" %lld is not a rotation (two rows share a column)", v[0]);
        }
        v[0] = 0;
        if (k[1].val && kv_ints(c, &k[1], v, 3, -BK_VOX_MAX_COORD, BK_VOX_MAX_COORD)) return -1;
        for (int a = 0; a < 3; ++a) n->t[a] = (int32_t)v[a];
    }
    return 0;
}

static int read_ngrp(vox_ctx *c, span *s, size_t off)
{
    kv        attr[1] = { { "_hidden", NULL, 0, 0 } };
    vox_node *n = new_node(c, s, off, NODE_GRP, attr, 1);
    if (!n) return -1;
    n->hidden = (uint8_t)kv_is_one(&attr[0]);
    uint32_t k;
    if (rd_count(c, s, &k, 4, "nGRP child count")) return -1;
    n->child = (int32_t)c->kid_count;
    n->kid_count = k;
    for (uint32_t i = 0; i < k; ++i) {
        if (grow((void **)&c->kids, c->kid_count, &c->kid_cap, sizeof *c->kids)) return oom(c, off);
        c->kids[c->kid_count].off = s->pos;
        rd_i32(c, s, &c->kids[c->kid_count++].id, "nGRP child id"); /* fits: counted above */
    }
    return 0;
}

static int read_nshp(vox_ctx *c, span *s, size_t off)
{
    kv        attr[1] = { { "_hidden", NULL, 0, 0 } };
    vox_node *n = new_node(c, s, off, NODE_SHP, attr, 1);
    if (!n) return -1;
    uint32_t k;
    size_t   at = s->pos;
    if (rd_count(c, s, &k, 8, "nSHP model count")) return -1;
    if (k == 0) return fail_at(c, at, "nSHP node %d has no model", n->id);
    int chosen = 0;
    for (uint32_t i = 0; i < k; ++i) {
        size_t  mo = s->pos;
        int32_t model;
        kv      f[1] = { { "_f", NULL, 0, 0 } };
        if (rd_i32(c, s, &model, "nSHP model id") || rd_dict(c, s, f, 1, "nSHP model dictionary size")) return -1;
        int zero;
        if (is_frame0(c, &f[0], &zero)) return -1;
        if (chosen == 2 || (chosen == 1 && !zero)) continue;
        chosen = zero ? 2 : 1;
        n->child = model;
        n->field = mo;
    }
    return 0;
}

/* ---- the file --------------------------------------------------------------------------------- */

static int read_chunks(vox_ctx *c)
{
    char idt[20];
    if (c->len < 4 || memcmp(c->b, "VOX ", 4) != 0)
        return fail_at(c, 0, "not a MagicaVoxel file (no \"VOX \" magic; a SLAB6/Build .vox is another format)");
    if (c->len < 8) return fail_at(c, 4, "the file ends before the version number");
    uint32_t version = le32(c->b + 4);
    if (version != 150 && version != 200)
        return fail_at(c, 4, "MagicaVoxel version %u: baker reads versions 150 and 200", version);
    if (c->len - 8 < 12) return fail_at(c, 8, "the MAIN chunk header is cut short");
    if (memcmp(c->b + 8, "MAIN", 4) != 0)
        return fail_at(c, 8, "first chunk is '%s', expected MAIN", id_text(c->b + 8, idt));
    uint64_t mn = le32(c->b + 12), mm = le32(c->b + 16);
    if (mn + mm > c->len - 20)
        return fail_at(c, 8, "MAIN chunk of %llu + %llu bytes runs past the end of the file (%zu bytes)",
                       (unsigned long long)mn, (unsigned long long)mm, c->len);
    span     top = { 20 + (size_t)mn, 20 + (size_t)(mn + mm) };
    uint32_t size[3];
    size_t   size_off = 0;
    int      have_size = 0;
    while (top.pos < top.end) {
        size_t off = top.pos;
        if (top.end - off < 12)
            return fail_at(c, off, "chunk header cut short (%zu of 12 bytes left in MAIN)", top.end - off);
        const uint8_t *id = c->b + off;
        uint64_t       n = le32(id + 4), m = le32(id + 8);
        if (n + m > top.end - off - 12)
            return fail_at(c, off, "chunk '%s' of %llu + %llu bytes runs past the end of MAIN (%zu bytes left)",
                           id_text(id, idt), (unsigned long long)n, (unsigned long long)m, top.end - off - 12);
        span s = { off + 12, off + 12 + (size_t)n };
        top.pos = s.end + (size_t)m;
        if (have_size && memcmp(id, "XYZI", 4) != 0)
            return fail_at(c, size_off, "SIZE chunk without the XYZI chunk that should follow it");
        int rc = 0;
        if (!memcmp(id, "SIZE", 4)) {
            rc = read_size(c, &s, off, size);
            have_size = 1;
            size_off = off;
        } else if (!memcmp(id, "XYZI", 4)) {
            if (!have_size) return fail_at(c, off, "XYZI chunk without a SIZE chunk before it");
            rc = read_xyzi(c, &s, off, size);
            have_size = 0;
        } else if (!memcmp(id, "RGBA", 4)) {
            if (n < 1024) return fail_at(c, off, "RGBA chunk of %llu bytes, expected 1024", (unsigned long long)n);
            c->rgba = c->b + s.pos;
        } else if (!memcmp(id, "MATL", 4)) rc = read_matl(c, &s);
        else if (!memcmp(id, "LAYR", 4)) rc = read_layr(c, &s, off);
        else if (!memcmp(id, "nTRN", 4)) rc = read_ntrn(c, &s, off);
        else if (!memcmp(id, "nGRP", 4)) rc = read_ngrp(c, &s, off);
        else if (!memcmp(id, "nSHP", 4)) rc = read_nshp(c, &s, off);
        if (rc) return rc;
    }
    if (have_size) return fail_at(c, size_off, "SIZE chunk without the XYZI chunk that should follow it");
    if (c->out->vox_model_count == 0) return fail_at(c, 8, "no model (no SIZE and XYZI chunks)");
    return 0;
}

/* ---- the scene graph -------------------------------------------------------------------------- */

typedef struct walk_item {
    uint32_t node, depth;
    uint32_t named; /* the nTRN right above it when that has a "_name", else BK_NONE */
    int8_t   m[9];
    int32_t  t[3];
} walk_item;

/* The instance's name (its nTRN's "_name", node named), as object_names entry: control and
 * non-ASCII bytes become '_' so every output can carry it; at most 127 bytes. */
static int name_instance(vox_ctx *c, bk_vox_instance *in, uint32_t named)
{
    bk_scene *o = c->out;
    if (named == BK_NONE) return 0;
    const vox_node *t = &c->nodes[named];
    uint32_t        len = t->name_len < 127 ? t->name_len : 127;
    char           *name = malloc(len + 1);
    char          **names = realloc(o->object_names, sizeof(char *) * ((size_t)o->object_count + 1));
    if (!name || !names) {
        free(name);
        if (names) o->object_names = names;
        return oom(c, t->off);
    }
    o->object_names = names;
    for (uint32_t i = 0; i < len; ++i) {
        uint8_t ch = c->b[t->name_off + i];
        name[i] = ch < 0x20 || ch >= 0x7F ? '_' : (char)ch;
    }
    name[len] = 0;
    in->object = o->object_count;
    names[o->object_count++] = name;
    return 0;
}

static int add_instance(vox_ctx *c, const vox_node *n, const int8_t m[9], const int32_t t[3], uint32_t named)
{
    bk_scene *o = c->out;
    if (o->vox_instance_count >= BK_VOX_MAX_INSTANCES)
        return fail_at(c, n->off, "more than %u instances", (unsigned)BK_VOX_MAX_INSTANCES);
    if (grow((void **)&o->vox_instances, o->vox_instance_count, &c->inst_cap, sizeof *o->vox_instances))
        return oom(c, n->off);
    bk_vox_instance *in = &o->vox_instances[o->vox_instance_count++];
    memset(in, 0, sizeof *in);
    in->object = BK_NONE;
    in->model = (uint32_t)n->child;
    /* the file's Z-up frame to the world's Y-up one (vox.h): M = Y m, t = Y t_file */
    static const int8_t Y[9] = BK_VOX_YUP;
    for (int r = 0; r < 3; ++r) {
        int32_t tr = 0;
        for (int k = 0; k < 3; ++k) {
            int v = 0;
            for (int j = 0; j < 3; ++j) v += Y[3 * r + j] * m[3 * j + k];
            in->m[3 * r + k] = (int8_t)v;
            tr += Y[3 * r + k] * t[k]; /* |t| <= 2^23: Y only permutes and negates */
        }
        in->t[r] = tr;
    }
    in->rot = bk_vox_rot_byte(in->m);
    bk_vox_instance_place(in, o->vox_models[in->model].size);
    return name_instance(c, in, named);
}

/* Resolves every reference to a node index, checks parents, then walks from node 0. */
static int walk_graph(vox_ctx *c)
{
    bk_scene *o = c->out;
    if (idmap_init(&c->node_map, c->node_count) || idmap_init(&c->layer_map, c->layer_count)) return oom(c, 8);
    for (uint32_t i = 0; i < c->node_count; ++i) {
        uint32_t prev = idmap_add(&c->node_map, c->nodes[i].id, i);
        if (prev != BK_NONE)
            return fail_at(c, c->nodes[i].off, "node id %d defined twice (first at byte %zu)", c->nodes[i].id,
                           c->nodes[prev].off);
    }
    for (uint32_t i = 0; i < c->layer_count; ++i) idmap_add(&c->layer_map, c->layers[i].id, i); /* the first wins */
    /* children: ids -> indices, in place; parents counted */
    for (uint32_t i = 0; i < c->node_count; ++i) {
        vox_node *n = &c->nodes[i];
        uint32_t  k = n->kind == NODE_TRN ? 1 : n->kind == NODE_GRP ? n->kid_count : 0;
        if (n->kind == NODE_SHP && ((uint32_t)n->child >= o->vox_model_count || n->child < 0))
            return fail_at(c, n->field, "nSHP node %d uses model %d, but the file has %u models", n->id, n->child,
                           o->vox_model_count);
        for (uint32_t j = 0; j < k; ++j) {
            int32_t *ref = n->kind == NODE_TRN ? &n->child : &c->kids[n->child + j].id;
            size_t   at = n->kind == NODE_TRN ? n->field : c->kids[n->child + j].off;
            uint32_t x = idmap_find(&c->node_map, *ref);
            if (x == BK_NONE) return fail_at(c, at, "node %d names child node %d, which does not exist", n->id, *ref);
            vox_node *ch = &c->nodes[x];
            if (ch->kind != NODE_SHP && ch->parents)
                return fail_at(c, at, "node %d names child node %d, which already has a parent", n->id, *ref);
            if (ch->parents < 255) ch->parents++;
            *ref = (int32_t)x;
        }
    }
    uint32_t root = idmap_find(&c->node_map, 0);
    if (root == BK_NONE) return fail_at(c, c->nodes[0].off, "scene graph without a root (no node 0)");
    walk_item *stack = NULL;
    uint32_t   sp = 0, scap = 0;
    int        rc = 0;
    if (grow((void **)&stack, 0, &scap, sizeof *stack)) return oom(c, 8);
    memset(&stack[0], 0, sizeof stack[0]);
    stack[0].node = root;
    stack[0].named = BK_NONE;
    stack[0].m[0] = stack[0].m[4] = stack[0].m[8] = 1;
    sp = 1;
    while (sp && !rc) {
        walk_item it = stack[--sp];
        vox_node *n = &c->nodes[it.node];
        if (n->kind != NODE_SHP) {
            if (n->visited) {
                rc = fail_at(c, n->off, "the scene graph loops through node %d", n->id);
                break;
            }
            n->visited = 1;
        }
        if (it.depth >= MAX_DEPTH) {
            rc = fail_at(c, n->off, "scene graph deeper than %d nodes", MAX_DEPTH);
            break;
        }
        if (n->kind == NODE_SHP) {
            rc = add_instance(c, n, it.m, it.t, it.named);
            continue;
        }
        if (n->hidden) continue;
        if (n->kind == NODE_TRN) {
            uint32_t l = idmap_find(&c->layer_map, n->layer);
            if (l != BK_NONE && c->layers[l].hidden) continue;
            walk_item ch;
            ch.node = (uint32_t)n->child;
            ch.depth = it.depth + 1;
            ch.named = n->name_len ? it.node : BK_NONE;
            for (int r = 0; r < 3; ++r) {
                int64_t t = it.t[r];
                for (int k = 0; k < 3; ++k) {
                    int v = 0;
                    for (int j = 0; j < 3; ++j) v += it.m[3 * r + j] * n->m[3 * j + k];
                    ch.m[3 * r + k] = (int8_t)v;
                    t += (int64_t)it.m[3 * r + k] * n->t[k];
                }
                if (t < -BK_VOX_MAX_COORD || t > BK_VOX_MAX_COORD) {
                    rc = fail_at(c, n->off,
                                 "node %d: composed translation %lld beyond +-%d (2^%d, the limit of voxel positions)",
                                 n->id, (long long)t, BK_VOX_MAX_COORD, BK_VOX_MAX_COORD_LOG2);
                    break;
                }
                ch.t[r] = (int32_t)t;
            }
            if (rc) break;
            if (grow((void **)&stack, sp, &scap, sizeof *stack)) {
                rc = oom(c, n->off);
                break;
            }
            stack[sp++] = ch;
        } else {
            /* children pushed last first, so instances come out in file order */
            for (uint32_t j = n->kid_count; j-- > 0;) {
                if (grow((void **)&stack, sp, &scap, sizeof *stack)) {
                    rc = oom(c, n->off);
                    break;
                }
                walk_item ch = it;
                ch.node = (uint32_t)c->kids[n->child + j].id;
                ch.depth = it.depth + 1;
                ch.named = BK_NONE;
                stack[sp++] = ch;
            }
        }
    }
    free(stack);
    return rc;
}

/* ---- materials -------------------------------------------------------------------------------- */


static int make_materials(vox_ctx *c)
{
    bk_scene    *o = c->out;
    bk_material *mt = realloc(o->materials, ((size_t)o->material_count + 256) * sizeof *mt);
    if (!mt) return oom(c, 8);
    o->materials = mt;
    uint32_t base = o->material_count;
    int      clamped = 0;
    for (int k = 0; k < 256; ++k) {
        bk_material *m = &mt[base + k];
        bk_material_init(m);
        snprintf(m->name, sizeof m->name, "vox_%d", k);
        if (k == 0) {
            m->kd[0] = m->kd[1] = m->kd[2] = 0.0f; /* unused: no voxel has index 0 */
            continue;
        }
        uint8_t rgb[3];
        if (c->rgba) memcpy(rgb, c->rgba + 4 * (k - 1), 3);
        else
            for (int i = 0; i < 3; ++i) rgb[i] = (uint8_t)(bk_vox_default_palette[k] >> (8 * i));
        const vox_matl *e = &c->matl[k];
        double          scale = e->emit && e->amount > 0 ? e->amount * exp2(e->flux) : 0.0;
        for (int i = 0; i < 3; ++i) {
            m->kd[i] = bk_srgb8_to_linear(rgb[i]);
            /* a black channel emits nothing, whatever _flux says (not 0 * inf = NaN: _flux 1e20) */
            double ke = m->kd[i] > 0.0f ? m->kd[i] * scale : 0.0;
            if (ke > BK_KE_MAX) {
                ke = BK_KE_MAX;
                clamped++;
            }
            m->ke[i] = (float)ke;
        }
    }
    if (clamped)
        fprintf(stderr, "%s: warning: %d emission value(s) above %g clamped (ke = kd * _emit * 2^_flux)\n", c->path,
                clamped, (double)BK_KE_MAX);
    for (uint32_t i = 0; i < o->vox_model_count; ++i) o->vox_models[i].material_base = base;
    o->material_count = base + 256;
    return 0;
}

/* ---- loading ---------------------------------------------------------------------------------- */

/* The whole file into memory; regular files of at most BK_VOX_MAX_BYTES only. */
static int read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t err_size)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bk_fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    uint64_t st_size;
    if (bk_fd_regular(fd, path, &st_size, err, err_size)) return -1;
    if (st_size > BK_VOX_MAX_BYTES) {
        close(fd);
        return bk_fail(err, err_size, "%s: %.0f MB: larger than the %.0f MB baker reads in a .vox (docs/formats.md)",
                       path, (double)st_size / 1e6, (double)BK_VOX_MAX_BYTES / 1e6);
    }
    size_t   cap = (size_t)st_size, n = 0;
    uint8_t *b = bk_malloc_large(cap ? cap : 1); /* tens of MB, written at once by read() */
    if (!b) {
        close(fd);
        return bk_fail(err, err_size, "%s: out of memory reading %zu bytes", path, cap);
    }
    while (n < cap) { /* a file that shrinks meanwhile is read as it is; one that grows, to its old size */
        ssize_t r = read(fd, b + n, cap - n < (1u << 30) ? cap - n : (1u << 30));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return bk_fail(err, err_size, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = n;
    return 0;
}

int bk_scene_load_vox(const char *path, bk_scene *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    vox_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.err = err;
    c.err_size = err_size;
    c.out = out;
    uint8_t *buf;
    if (read_file(path, &buf, &c.len, err, err_size)) return -1;
    c.b = buf;
    int rc = read_chunks(&c);
    if (!rc && c.node_count) rc = walk_graph(&c);
    else if (!rc) {
        /* legacy: every model once, at the identity */
        static const int8_t  id[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
        static const int32_t zero[3] = { 0, 0, 0 };
        vox_node             n;
        memset(&n, 0, sizeof n);
        n.off = 8;
        for (uint32_t i = 0; i < out->vox_model_count && !rc; ++i) {
            n.child = (int32_t)i;
            rc = add_instance(&c, &n, id, zero, BK_NONE);
        }
    }
    if (!rc && out->vox_instance_count == 0) rc = fail_at(&c, 8, "no visible instance (every shape is hidden)");
    if (!rc) rc = make_materials(&c);
    free(buf);
    free(c.nodes);
    free(c.kids);
    free(c.layers);
    idmap_free(&c.node_map);
    idmap_free(&c.layer_map);
    if (rc) {
        bk_scene_free(out);
        return -1;
    }
    return 0;
}
