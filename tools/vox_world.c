/* vox_world.c - a generator of large MagicaVoxel worlds: the benchmark scene for the voxel path.
 *
 *   vox_world [--objects N] [--seed S] [--props DIR] [--terrain-chunk C] [--voxels V] -o OUT.vox
 *   vox_world --check FILE.vox
 *
 * Sits beside the baker, not in its pipeline: it writes a .vox file (version 200, with a scene
 * graph) that the baker's .vox reader (src/io/vox.c) loads. Standalone C11 + POSIX, no bkcore.
 *
 * What it makes: a value-noise heightfield of voxels, a few layers thick (not solid to the bottom),
 * cut into unique chunk models, and N props from DIR (default: the CC BY "Mini Mike's Metro Minis"
 * of ../shared/scenes/vox-mmmm, "Additional Artwork by Mike Judge") standing on it, each stored once
 * and placed many times with a random rotation about z and, for half of them, a mirror (a signed
 * permutation of determinant -1). Props are drawn with weights size^-alpha; the world side is set
 * so that the props' boxes cover COVERAGE of the ground, and alpha so that the instanced voxel
 * count (terrain included) lands near V (default 15e6 * N / 54000). A coarse occupancy grid moves
 * a prop elsewhere (up to PLACE_TRIES times) when a quarter of its footprint is taken. The colours
 * of every prop go into one shared palette (exact when they fit, else median cut); bright saturated
 * colours of light props (name has light/lamp/candle/fire/torch/lantern) get palette entries of
 * their own with an emissive MATL, so the world has small area lights and nothing else glows.
 *
 * Placement follows MagicaVoxel's pivot rule, world = R (p - floor(size / 2)) + t, as in src/scene/vox.h.
 * The same options always give the same bytes (one splitmix64 stream; no time or directory order
 * in the output). The file is built in memory, re-read with the reader below and compared with what
 * was generated (--check runs that reader alone on any v200 file), written to OUT.tmp.XXXXXX beside
 * OUT and renamed over it: a failed run leaves OUT as it was.
 *
 * File layout (github.com/ephtracy/voxel-model, MagicaVoxel-file-format-vox(-extension).txt):
 *   'VOX ' 200, MAIN { SIZE XYZI per model, nTRN 0 -> nGRP 1 -> (nTRN 2k+2 -> nSHP 2k+3)*,
 *   LAYR 0, RGBA, MATL per emissive colour }.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef VOX_WORLD_PROPS
#define DEFAULT_PROPS VOX_WORLD_PROPS "/vox-mmmm"
#else
#define DEFAULT_PROPS "../shared/scenes/vox-mmmm"
#endif

#define CREDIT "Props: \"Mini Mike's Metro Minis\" by Mike Judge, CC BY 4.0 - \"Additional Artwork by Mike Judge\""

#define MAX_SIDE                  256          /* a model side, as MagicaVoxel */
#define MAX_PROP_BYTES            (64u << 20)  /* one prop file */
#define MAX_CHECK_BYTES           (1ull << 31) /* a file given to --check */
#define MAX_PROPS                 4096         /* prop models (files x models per file) */
#define MAX_EMISSIVE              32           /* palette entries of their own for lamp colours */
#define COVERAGE                  0.7          /* share of the ground under prop boxes: sets the world side */
#define TERRAIN_LAYERS            2            /* voxels under and including the surface (plus slope fill) */
#define TERRAIN_HMIN              4
#define TERRAIN_HAMP              40 /* heights TERRAIN_HMIN .. TERRAIN_HMIN + TERRAIN_HAMP */
#define OCC_CELL                  2  /* occupancy grid cell, in voxels */
#define PLACE_TRIES               32
#define VOXELS_DEFAULT_PER_OBJECT (15e6 / 54000.0)

/* ---- errors: one line, exit 1, and no temporary file left behind ------------------------------ */

static char g_tmp_path[4096];

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("vox_world: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (g_tmp_path[0]) unlink(g_tmp_path);
    exit(1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

static void *xcalloc(size_t n, size_t k)
{
    void *p = calloc(n ? n : 1, k ? k : 1);
    if (!p) die("out of memory (%zu x %zu bytes)", n, k);
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) die("out of memory (%zu bytes)", n);
    return p;
}

/* ---- random numbers: splitmix64 (Steele, Lea, Flood 2014) ------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct rng {
    uint64_t s;
} rng;
static uint64_t rng_u64(rng *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}
static double   rng_unit(rng *r) { return (double)(rng_u64(r) >> 11) * 0x1p-53; }
static uint32_t rng_below(rng *r, uint32_t n) { return (uint32_t)(((rng_u64(r) >> 32) * (uint64_t)n) >> 32); }

/* ---- colours: 0xAABBGGRR as the bytes R G B A of an RGBA chunk -------------------------------- */

static uint32_t col_r(uint32_t c) { return c & 255; }
static uint32_t col_g(uint32_t c) { return (c >> 8) & 255; }
static uint32_t col_b(uint32_t c) { return (c >> 16) & 255; }
static uint32_t col_rgb(uint32_t r, uint32_t g, uint32_t b) { return 0xff000000u | b << 16 | g << 8 | r; }

/* MagicaVoxel's palette for files without RGBA, by colour index (index 0 unused): the 6^3 cube
 * without black, then ramps of red, green, blue and grey. */
static void default_palette(uint32_t pal[256])
{
    static const uint8_t ramp[10] = { 0xee, 0xdd, 0xbb, 0xaa, 0x88, 0x77, 0x55, 0x44, 0x22, 0x11 };
    pal[0] = 0;
    for (int k = 0; k < 215; ++k)
        pal[1 + k] = col_rgb(255 - 51 * (k / 36), 255 - 51 * ((k / 6) % 6), 255 - 51 * (k % 6));
    for (int k = 0; k < 10; ++k) {
        pal[216 + k] = col_rgb(ramp[k], 0, 0);
        pal[226 + k] = col_rgb(0, ramp[k], 0);
        pal[236 + k] = col_rgb(0, 0, ramp[k]);
        pal[246 + k] = col_rgb(ramp[k], ramp[k], ramp[k]);
    }
}

/* ---- rotations: MagicaVoxel's _r byte <-> a row-major signed permutation ---------------------- */

static int rot_matrix(uint8_t rot, int m[9])
{
    int c0 = rot & 3, c1 = (rot >> 2) & 3;
    if (c0 == 3 || c1 == 3 || c0 == c1) return 0;
    int col[3] = { c0, c1, 3 - c0 - c1 };
    for (int i = 0; i < 9; ++i) m[i] = 0;
    for (int r = 0; r < 3; ++r) m[3 * r + col[r]] = (rot >> (4 + r)) & 1 ? -1 : 1;
    return 1;
}

static uint8_t rot_byte(const int m[9])
{
    int col[3] = { 0, 0, 0 }, neg[3] = { 0, 0, 0 };
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            if (m[3 * r + c]) {
                col[r] = c;
                neg[r] = m[3 * r + c] < 0;
            }
    return (uint8_t)(col[0] | col[1] << 2 | neg[0] << 4 | neg[1] << 5 | neg[2] << 6);
}

static void mat_mul(const int a[9], const int b[9], int out[9])
{
    int o[9];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) o[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
    memcpy(out, o, sizeof o);
}

/* The world box [lo, hi) of a model's cells under world = M (p - floor(size / 2)) + t. */
static void place_box(const int m[9], const int64_t t[3], const uint32_t size[3], int64_t lo[3], int64_t hi[3])
{
    for (int r = 0; r < 3; ++r) {
        int64_t a = t[r], b;
        for (int c = 0; c < 3; ++c) a -= m[3 * r + c] * (int64_t)(size[c] / 2);
        b = a;
        for (int c = 0; c < 3; ++c) b += m[3 * r + c] * (int64_t)size[c];
        lo[r] = a < b ? a : b;
        hi[r] = a < b ? b : a;
    }
}

/* ---- a minimal .vox reader: MAIN, SIZE, XYZI, RGBA, MATL, nTRN, nGRP, nSHP, LAYR ------------- */

typedef struct vox_model {
    uint32_t size[3];
    uint32_t count;
    uint8_t *xyzi; /* x y z colour-index, 4 bytes per voxel */
} vox_model;

enum { NODE_TRN = 1, NODE_GRP, NODE_SHP };

typedef struct vox_node {
    int32_t  id, type;
    int32_t  child, layer; /* nTRN */
    uint8_t  rot;          /* nTRN frame 0 _r (identity 4 when absent) */
    int32_t  t[3];         /* nTRN frame 0 _t */
    uint32_t first, count; /* nGRP children / nSHP models: a range of vox_file.refs */
} vox_node;

typedef struct vox_file {
    uint32_t   version;
    vox_model *models;
    uint32_t   nmodels, capmodels;
    uint32_t   pal[256]; /* colour of each index; the default palette without RGBA */
    int        has_rgba;
    uint8_t    emissive[256]; /* MATL _type _emit by index */
    uint32_t   nmatl, nlayers;
    vox_node  *nodes;
    uint32_t   nnodes, capnodes;
    int32_t   *refs;
    uint32_t   nrefs, caprefs;
} vox_file;

typedef struct rd {
    const uint8_t *p, *end;
    int            bad;
} rd;
static uint32_t rd_u32(rd *r)
{
    if (r->end - r->p < 4) {
        r->bad = 1;
        r->p = r->end;
        return 0;
    }
    uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
    r->p += 4;
    return v;
}
/* A string into out (cut to cap - 1 characters); a length past the chunk marks the reader bad. */
static void rd_str(rd *r, char *out, size_t cap)
{
    uint32_t n = rd_u32(r);
    if (r->bad || n > (uint32_t)(r->end - r->p)) {
        r->bad = 1;
        r->p = r->end;
        out[0] = 0;
        return;
    }
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(out, r->p, k);
    out[k] = 0;
    r->p += n;
}

static const char *node_dict(rd *r, uint8_t *rot, int32_t t[3], char *type, size_t type_cap)
{
    uint32_t n = rd_u32(r);
    if (r->bad || n > (uint32_t)(r->end - r->p) / 8) return "dictionary count past the chunk";
    for (uint32_t i = 0; i < n && !r->bad; ++i) {
        char key[64], val[128];
        rd_str(r, key, sizeof key);
        rd_str(r, val, sizeof val);
        if (rot && !strcmp(key, "_r")) {
            char *e;
            long  v = strtol(val, &e, 10);
            if (*e || v < 0 || v > 127) return "bad _r";
            *rot = (uint8_t)v;
        } else if (t && !strcmp(key, "_t")) {
            const char *q = val;
            for (int k = 0; k < 3; ++k) {
                char *e;
                errno = 0;
                long long v = strtoll(q, &e, 10);
                if (e == q || errno || v < INT32_MIN || v > INT32_MAX) return "bad _t";
                t[k] = (int32_t)v;
                q = e;
            }
            while (*q == ' ') ++q;
            if (*q) return "bad _t";
        } else if (type && !strcmp(key, "_type")) {
            size_t l = strlen(val) < type_cap - 1 ? strlen(val) : type_cap - 1; /* cut, on purpose */
            memcpy(type, val, l);
            type[l] = 0;
        }
    }
    return r->bad ? "dictionary past the chunk" : NULL;
}

static void vox_file_free(vox_file *f)
{
    for (uint32_t i = 0; i < f->nmodels; ++i) free(f->models[i].xyzi);
    free(f->models);
    free(f->nodes);
    free(f->refs);
    memset(f, 0, sizeof *f);
}

static void push_ref(vox_file *f, int32_t v)
{
    if (f->nrefs == f->caprefs) {
        f->caprefs = f->caprefs ? 2 * f->caprefs : 1024;
        f->refs = xrealloc(f->refs, f->caprefs * sizeof *f->refs);
    }
    f->refs[f->nrefs++] = v;
}

/* Parses a whole file in memory. Returns NULL or what was wrong (err holds the offset). */
static const char *vox_parse(const uint8_t *data, size_t len, vox_file *f, size_t *err_at)
{
    memset(f, 0, sizeof *f);
    default_palette(f->pal);
    *err_at = 0;
    if (len < 20 || memcmp(data, "VOX ", 4)) return "not a .vox file (no 'VOX ' header)";
    rd h = { data + 4, data + len, 0 };
    f->version = rd_u32(&h);
    if (memcmp(data + 8, "MAIN", 4)) {
        *err_at = 8;
        return "no MAIN chunk";
    }
    h.p = data + 12;
    uint32_t main_n = rd_u32(&h), main_m = rd_u32(&h);
    if ((uint64_t)main_n + main_m > len - 20) {
        *err_at = 8;
        return "MAIN chunk past the end of the file";
    }
    const uint8_t *p = data + 20 + main_n, *end = p + main_m;
    int            pending_size = 0;
    uint32_t       size[3] = { 0, 0, 0 };
    while (p < end) {
        *err_at = (size_t)(p - data);
        if (end - p < 12) return "truncated chunk header";
        rd       c = { p + 4, end, 0 };
        uint32_t n = rd_u32(&c), m = rd_u32(&c);
        if ((uint64_t)n + m > (uint64_t)(end - p - 12)) return "chunk past the end of MAIN";
        rd          b = { p + 12, p + 12 + n, 0 };
        const char *e = NULL;
        if (!memcmp(p, "SIZE", 4)) {
            for (int k = 0; k < 3; ++k) size[k] = rd_u32(&b);
            if (b.bad) return "SIZE chunk too short";
            for (int k = 0; k < 3; ++k)
                if (size[k] < 1 || size[k] > MAX_SIDE) return "SIZE out of 1..256";
            pending_size = 1;
        } else if (!memcmp(p, "XYZI", 4)) {
            if (!pending_size) return "XYZI without a SIZE before it";
            pending_size = 0;
            uint32_t k = rd_u32(&b);
            if (b.bad || k > (n - 4) / 4) return "XYZI voxel count past the chunk";
            if (f->nmodels == f->capmodels) {
                f->capmodels = f->capmodels ? 2 * f->capmodels : 64;
                f->models = xrealloc(f->models, f->capmodels * sizeof *f->models);
            }
            vox_model *md = &f->models[f->nmodels++];
            memcpy(md->size, size, sizeof size);
            md->xyzi = xmalloc((size_t)k * 4);
            md->count = 0;
            for (uint32_t i = 0; i < k; ++i) {
                const uint8_t *v = b.p + 4 * (size_t)i;
                if (v[0] >= size[0] || v[1] >= size[1] || v[2] >= size[2]) return "voxel outside its model's SIZE";
                if (v[3] == 0) continue; /* index 0 is empty */
                memcpy(md->xyzi + 4 * (size_t)md->count++, v, 4);
            }
        } else if (!memcmp(p, "RGBA", 4)) {
            if (n < 1024) return "RGBA chunk shorter than 256 colours";
            /* colour k of the chunk is colour index k + 1 */
            for (int k = 0; k < 255; ++k) f->pal[k + 1] = rd_u32(&b);
            f->has_rgba = 1;
        } else if (!memcmp(p, "MATL", 4)) {
            uint32_t id = rd_u32(&b);
            char     type[32] = "";
            if ((e = node_dict(&b, NULL, NULL, type, sizeof type))) return e;
            if (id < 256 && !strcmp(type, "_emit")) f->emissive[id] = 1;
            f->nmatl++;
        } else if (!memcmp(p, "LAYR", 4)) {
            rd_u32(&b);
            if ((e = node_dict(&b, NULL, NULL, NULL, 0))) return e;
            f->nlayers++;
        } else if (!memcmp(p, "nTRN", 4) || !memcmp(p, "nGRP", 4) || !memcmp(p, "nSHP", 4)) {
            if (f->nnodes == f->capnodes) {
                f->capnodes = f->capnodes ? 2 * f->capnodes : 1024;
                f->nodes = xrealloc(f->nodes, f->capnodes * sizeof *f->nodes);
            }
            vox_node *nd = &f->nodes[f->nnodes];
            memset(nd, 0, sizeof *nd);
            nd->id = (int32_t)rd_u32(&b);
            nd->rot = 4;
            if ((e = node_dict(&b, NULL, NULL, NULL, 0))) return e;
            if (!memcmp(p, "nTRN", 4)) {
                nd->type = NODE_TRN;
                nd->child = (int32_t)rd_u32(&b);
                rd_u32(&b); /* reserved id */
                nd->layer = (int32_t)rd_u32(&b);
                uint32_t frames = rd_u32(&b);
                if (b.bad || frames < 1 || frames > (uint32_t)(b.end - b.p) / 4) return "nTRN frame count";
                for (uint32_t k = 0; k < frames; ++k) {
                    uint8_t rot = 4;
                    int32_t t[3] = { 0, 0, 0 };
                    if ((e = node_dict(&b, &rot, t, NULL, 0))) return e;
                    if (k == 0) {
                        nd->rot = rot;
                        memcpy(nd->t, t, sizeof t);
                    }
                }
                int mm[9];
                if (!rot_matrix(nd->rot, mm)) return "_r is not a signed permutation";
            } else if (!memcmp(p, "nGRP", 4)) {
                nd->type = NODE_GRP;
                uint32_t k = rd_u32(&b);
                if (b.bad || k > (uint32_t)(b.end - b.p) / 4) return "nGRP child count past the chunk";
                nd->first = f->nrefs;
                nd->count = k;
                for (uint32_t i = 0; i < k; ++i) push_ref(f, (int32_t)rd_u32(&b));
            } else {
                nd->type = NODE_SHP;
                uint32_t k = rd_u32(&b);
                if (b.bad || k < 1 || k > (uint32_t)(b.end - b.p) / 8) return "nSHP model count";
                nd->first = f->nrefs;
                nd->count = k;
                for (uint32_t i = 0; i < k && !b.bad; ++i) {
                    push_ref(f, (int32_t)rd_u32(&b));
                    if ((e = node_dict(&b, NULL, NULL, NULL, 0))) return e;
                }
            }
            if (b.bad) return "node chunk too short";
            f->nnodes++;
        }
        p += 12 + (size_t)n + m; /* other chunks, and the children of any chunk, are skipped */
    }
    *err_at = 0;
    return NULL;
}

/* ---- what a file places: the scene graph walked from node 0 ----------------------------------- */

typedef struct world_stats {
    uint64_t instances, voxels, emissive_voxels;
    uint32_t models, shapes_bad;
    int64_t  lo[3], hi[3];
    uint32_t mirrored; /* instances whose rotation has determinant -1 */
} world_stats;

typedef struct walk {
    const vox_file *f;
    int32_t        *index;
    int32_t         maxid;
    uint64_t       *model_emissive;
    world_stats    *s;
} walk;

static const char *walk_node(walk *w, int32_t id, const int m[9], const int64_t t[3], int depth)
{
    if (depth > 64) return "scene graph deeper than 64 (a cycle?)";
    if (id < 0 || id > w->maxid || w->index[id] < 0) return "scene graph names a missing node";
    const vox_node *nd = &w->f->nodes[w->index[id]];
    if (nd->type == NODE_TRN) {
        int     r[9], mm[9];
        int64_t tt[3];
        rot_matrix(nd->rot, r);
        mat_mul(m, r, mm);
        for (int i = 0; i < 3; ++i)
            tt[i] = t[i] + m[3 * i] * (int64_t)nd->t[0] + m[3 * i + 1] * (int64_t)nd->t[1] +
                    m[3 * i + 2] * (int64_t)nd->t[2];
        if (nd->layer >= 0 && (uint32_t)nd->layer >= w->f->nlayers && depth > 0) return "nTRN names a missing layer";
        return walk_node(w, nd->child, mm, tt, depth + 1);
    }
    if (nd->type == NODE_GRP) {
        for (uint32_t i = 0; i < nd->count; ++i) {
            const char *e = walk_node(w, w->f->refs[nd->first + i], m, t, depth + 1);
            if (e) return e;
        }
        return NULL;
    }
    int32_t mid = w->f->refs[nd->first]; /* frame 0's model */
    if (mid < 0 || (uint32_t)mid >= w->f->nmodels) return "nSHP names a missing model";
    const vox_model *md = &w->f->models[mid];
    int64_t          lo[3], hi[3];
    place_box(m, t, md->size, lo, hi);
    world_stats *s = w->s;
    for (int i = 0; i < 3; ++i) {
        if (s->instances == 0 || lo[i] < s->lo[i]) s->lo[i] = lo[i];
        if (s->instances == 0 || hi[i] > s->hi[i]) s->hi[i] = hi[i];
    }
    int det =
        m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
    s->mirrored += det < 0;
    s->instances++;
    s->voxels += md->count;
    s->emissive_voxels += w->model_emissive[mid];
    return NULL;
}

static const char *vox_walk(const vox_file *f, world_stats *s)
{
    memset(s, 0, sizeof *s);
    s->models = f->nmodels;
    if (f->nnodes == 0) return "no scene graph";
    int32_t maxid = 0;
    for (uint32_t i = 0; i < f->nnodes; ++i) {
        if (f->nodes[i].id < 0 || f->nodes[i].id > (int32_t)(4 * f->nnodes + 16)) return "node ids out of range";
        if (f->nodes[i].id > maxid) maxid = f->nodes[i].id;
    }
    walk w;
    w.f = f;
    w.s = s;
    w.maxid = maxid;
    w.index = xmalloc(((size_t)maxid + 1) * sizeof *w.index);
    for (int32_t i = 0; i <= maxid; ++i) w.index[i] = -1;
    for (uint32_t i = 0; i < f->nnodes; ++i) {
        if (w.index[f->nodes[i].id] >= 0) {
            free(w.index);
            return "two nodes with one id";
        }
        w.index[f->nodes[i].id] = (int32_t)i;
    }
    w.model_emissive = xcalloc(f->nmodels, sizeof *w.model_emissive);
    for (uint32_t k = 0; k < f->nmodels; ++k)
        for (uint32_t v = 0; v < f->models[k].count; ++v)
            w.model_emissive[k] += f->emissive[f->models[k].xyzi[4 * (size_t)v + 3]];
    int         m[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
    int64_t     t[3] = { 0, 0, 0 };
    const char *e = NULL;
    if (w.index[0] < 0 || f->nodes[w.index[0]].type != NODE_TRN) e = "node 0 is not an nTRN";
    else e = walk_node(&w, 0, m, t, 0);
    free(w.index);
    free(w.model_emissive);
    return e;
}

static uint8_t *read_file(const char *path, size_t max, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) die("%s: %s", path, strerror(errno));
    if (fseek(fp, 0, SEEK_END)) die("%s: cannot seek", path);
    long n = ftell(fp);
    if (n < 0) die("%s: cannot tell its size", path);
    if ((unsigned long)n > max) die("%s: larger than %zu bytes", path, max);
    rewind(fp);
    uint8_t *d = xmalloc((size_t)n);
    if (fread(d, 1, (size_t)n, fp) != (size_t)n) die("%s: read error", path);
    fclose(fp);
    *len = (size_t)n;
    return d;
}

static void print_stats(const world_stats *s, const vox_file *f, uint64_t file_bytes)
{
    printf("objects:            %llu instances (%u mirrored) of %u models\n", (unsigned long long)s->instances,
           s->mirrored, s->models);
    printf("instanced voxels:   %llu (%.1f per object), emissive %llu (%.3f %%)\n", (unsigned long long)s->voxels,
           s->instances ? (double)s->voxels / (double)s->instances : 0.0, (unsigned long long)s->emissive_voxels,
           s->voxels ? 100.0 * (double)s->emissive_voxels / (double)s->voxels : 0.0);
    printf("world extent:       x %lld..%lld  y %lld..%lld  z %lld..%lld  (%lld x %lld x %lld voxels)\n",
           (long long)s->lo[0], (long long)s->hi[0], (long long)s->lo[1], (long long)s->hi[1], (long long)s->lo[2],
           (long long)s->hi[2], (long long)(s->hi[0] - s->lo[0]), (long long)(s->hi[1] - s->lo[1]),
           (long long)(s->hi[2] - s->lo[2]));
    uint32_t nemit = 0;
    for (int i = 0; i < 256; ++i) nemit += f->emissive[i];
    printf(
        "file:               %llu bytes (%.1f MB), version %u, %u nodes, %u layer(s), RGBA %s, %u MATL (%u emissive)\n",
        (unsigned long long)file_bytes, (double)file_bytes / 1e6, f->version, f->nnodes, f->nlayers,
        f->has_rgba ? "yes" : "no", f->nmatl, nemit);
}

static int cmd_check(const char *path)
{
    size_t      len, at;
    uint8_t    *d = read_file(path, MAX_CHECK_BYTES, &len);
    vox_file    f;
    const char *e = vox_parse(d, len, &f, &at);
    if (e) die("%s: offset %zu: %s", path, at, e);
    world_stats s;
    if ((e = vox_walk(&f, &s))) die("%s: %s", path, e);
    printf("%s\n", path);
    print_stats(&s, &f, len);
    vox_file_free(&f);
    free(d);
    return 0;
}

/* ---- props: every SIZE/XYZI model of every .vox in DIR, sorted by file name ------------------- */

typedef struct prop {
    char     name[128]; /* file name, with #k for the k-th model of a file */
    uint32_t size[3];
    uint32_t count;
    uint8_t *xyzi;     /* cropped to the voxels' bounds; index remapped to the shared palette */
    uint32_t pal[256]; /* the file's colours by index */
    int      lamp;     /* name says light/lamp/...: bright saturated colours glow */
    uint32_t emissive; /* voxels of emissive colours, after the remap */
    double   weight;
} prop;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_lamp_name(const char *n)
{
    static const char *w[] = { "light", "lamp", "candle", "fire", "torch", "lantern" };
    for (size_t i = 0; i < sizeof w / sizeof *w; ++i)
        if (strstr(n, w[i])) return 1;
    return 0;
}

/* A lamp colour: bright and saturated (greys of the metal posts stay diffuse). */
static int is_glow_colour(uint32_t c)
{
    uint32_t r = col_r(c), g = col_g(c), b = col_b(c);
    uint32_t mx = r > g ? (r > b ? r : b) : (g > b ? g : b), mn = r < g ? (r < b ? r : b) : (g < b ? g : b);
    return mx >= 150 && mx - mn >= 40;
}

static prop *load_props(const char *dir, uint32_t *nprops, const char *out_path)
{
    DIR *d = opendir(dir);
    if (!d) die("%s: %s (give the props folder with --props)", dir, strerror(errno));
    char         **names = NULL;
    size_t         nn = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".vox")) continue;
        if (nn == cap) {
            cap = cap ? 2 * cap : 256;
            names = xrealloc(names, cap * sizeof *names);
        }
        names[nn] = xmalloc(l + 1);
        memcpy(names[nn++], de->d_name, l + 1);
    }
    closedir(d);
    if (nn == 0) die("%s: no .vox files", dir);
    qsort(names, nn, sizeof *names, cmp_str); /* directory order must not reach the output */

    struct stat so;
    int         have_out = stat(out_path, &so) == 0;
    prop       *props = xcalloc(MAX_PROPS, sizeof *props);
    uint32_t    np = 0;
    for (size_t i = 0; i < nn; ++i) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path)
            die("%s/%s: path too long", dir, names[i]);
        struct stat sp;
        if (have_out && stat(path, &sp) == 0 && sp.st_dev == so.st_dev && sp.st_ino == so.st_ino)
            die("%s: the output is one of the prop files; refusing to overwrite it", out_path);
        size_t      len, at;
        uint8_t    *data = read_file(path, MAX_PROP_BYTES, &len);
        vox_file    f;
        const char *e = vox_parse(data, len, &f, &at);
        if (e) die("%s: offset %zu: %s", path, at, e);
        for (uint32_t k = 0; k < f.nmodels; ++k) {
            vox_model *m = &f.models[k];
            if (m->count == 0) continue;
            if (np == MAX_PROPS) die("%s: more than %d prop models", dir, MAX_PROPS);
            prop *p = &props[np++];
            if (f.nmodels > 1) snprintf(p->name, sizeof p->name, "%.100s#%u", names[i], k);
            else snprintf(p->name, sizeof p->name, "%.120s", names[i]);
            memcpy(p->pal, f.pal, sizeof p->pal);
            p->lamp = is_lamp_name(names[i]);
            /* Crop to the voxels' bounds: the pivot and the footprint then follow what is drawn. */
            uint32_t lo[3] = { 255, 255, 255 }, hi[3] = { 0, 0, 0 };
            for (uint32_t v = 0; v < m->count; ++v)
                for (int a = 0; a < 3; ++a) {
                    uint32_t c = m->xyzi[4 * (size_t)v + a];
                    if (c < lo[a]) lo[a] = c;
                    if (c > hi[a]) hi[a] = c;
                }
            for (int a = 0; a < 3; ++a) p->size[a] = hi[a] - lo[a] + 1;
            p->count = m->count;
            p->xyzi = m->xyzi;
            m->xyzi = NULL;
            for (uint32_t v = 0; v < p->count; ++v)
                for (int a = 0; a < 3; ++a) p->xyzi[4 * (size_t)v + a] = (uint8_t)(p->xyzi[4 * (size_t)v + a] - lo[a]);
        }
        vox_file_free(&f);
        free(data);
        free(names[i]);
    }
    free(names);
    if (np == 0) die("%s: no voxels in any .vox file", dir);
    *nprops = np;
    return props;
}

/* ---- the shared palette: exact colours when they fit, else median cut (Heckbert 1982) --------- */

typedef struct pcol {
    uint32_t key;
    uint64_t count;
    uint32_t box;
} pcol; /* key: 0xRRGGBB | emissive << 24 */

static int      g_cut_axis;
static uint32_t key_chan(uint32_t key, int a) { return (key >> (16 - 8 * a)) & 255; }
static int      cmp_pcol_key(const void *a, const void *b)
{
    uint32_t x = ((const pcol *)a)->key, y = ((const pcol *)b)->key;
    return x < y ? -1 : x > y;
}
static int cmp_pcol_axis(const void *a, const void *b)
{
    uint32_t x = key_chan(((const pcol *)a)->key, g_cut_axis), y = key_chan(((const pcol *)b)->key, g_cut_axis);
    if (x != y) return x < y ? -1 : 1;
    return cmp_pcol_key(a, b);
}

typedef struct pbox {
    uint32_t begin, end;
} pbox;

/* Splits cols (sorted by key) into at most cap boxes; writes each colour's box and each box's
 * count-weighted mean colour. Returns the number of boxes. */
static uint32_t median_cut(pcol *cols, uint32_t n, uint32_t cap, uint32_t *box_colour)
{
    pbox    *boxes = xmalloc(cap * sizeof *boxes);
    uint32_t nb = 1;
    boxes[0].begin = 0;
    boxes[0].end = n;
    while (nb < cap) {
        int      best = -1, best_axis = 0;
        uint32_t best_range = 0;
        for (uint32_t b = 0; b < nb; ++b) {
            if (boxes[b].end - boxes[b].begin < 2) continue;
            for (int a = 0; a < 3; ++a) {
                uint32_t lo = 255, hi = 0;
                for (uint32_t i = boxes[b].begin; i < boxes[b].end; ++i) {
                    uint32_t v = key_chan(cols[i].key, a);
                    if (v < lo) lo = v;
                    if (v > hi) hi = v;
                }
                if (hi - lo > best_range) {
                    best_range = hi - lo;
                    best = (int)b;
                    best_axis = a;
                }
            }
        }
        if (best < 0) break;
        pbox *bx = &boxes[best];
        g_cut_axis = best_axis;
        qsort(cols + bx->begin, bx->end - bx->begin, sizeof *cols, cmp_pcol_axis);
        uint64_t total = 0, run = 0;
        for (uint32_t i = bx->begin; i < bx->end; ++i) total += cols[i].count;
        uint32_t split = bx->begin + 1;
        for (uint32_t i = bx->begin; i < bx->end - 1; ++i) {
            run += cols[i].count;
            split = i + 1;
            if (2 * run >= total) break;
        }
        /* never split between two equal values of the axis: move to the nearest change */
        while (split < bx->end && key_chan(cols[split].key, best_axis) == key_chan(cols[split - 1].key, best_axis))
            split++;
        if (split == bx->end) {
            split = bx->begin + 1;
            while (key_chan(cols[split].key, best_axis) == key_chan(cols[split - 1].key, best_axis)) split++;
        }
        boxes[nb].begin = split;
        boxes[nb].end = bx->end;
        bx->end = split;
        nb++;
    }
    for (uint32_t b = 0; b < nb; ++b) {
        double s[3] = { 0, 0, 0 }, w = 0;
        for (uint32_t i = boxes[b].begin; i < boxes[b].end; ++i) {
            double c = (double)(cols[i].count ? cols[i].count : 1);
            for (int a = 0; a < 3; ++a) s[a] += c * key_chan(cols[i].key, a);
            w += c;
            cols[i].box = b;
        }
        box_colour[b] = col_rgb((uint32_t)lround(s[0] / w), (uint32_t)lround(s[1] / w), (uint32_t)lround(s[2] / w));
    }
    free(boxes);
    qsort(cols, n, sizeof *cols, cmp_pcol_key);
    return nb;
}

static const uint32_t TERRAIN_COLOURS[] = {
    0xff3a8c4c, /* grass    (R 4c G 8c B 3a) */
    0xff2f7a40, /* grass, darker */
    0xff3a5a7a, /* dirt */
    0xff6e7478, /* rock */
};
#define NTERRAIN_COLOURS (sizeof TERRAIN_COLOURS / sizeof *TERRAIN_COLOURS)

typedef struct palette {
    uint32_t rgba[256]; /* by colour index; [0] unused */
    uint8_t  emissive[256];
    uint8_t  terrain[NTERRAIN_COLOURS];
    uint32_t ncolours, nemissive, quantised_from;
} palette;

static uint32_t key_of(uint32_t c, int glow)
{
    return col_r(c) << 16 | col_g(c) << 8 | col_b(c) | (uint32_t)glow << 24;
}

/* The lamp colours that glow: the MAX_EMISSIVE with the most voxels (ties by colour), sorted keys. */
static uint32_t g_glow[MAX_EMISSIVE], g_nglow;
static int      cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}
static int cmp_pcol_count(const void *a, const void *b)
{
    const pcol *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return cmp_pcol_key(a, b);
}
static int prop_glows(const prop *p, int idx)
{
    if (!p->lamp || !is_glow_colour(p->pal[idx])) return 0;
    uint32_t k = key_of(p->pal[idx], 0);
    return bsearch(&k, g_glow, g_nglow, sizeof k, cmp_u32) != NULL;
}

/* Builds the palette and rewrites every prop's colour indices into it. */
static void build_palette(prop *props, uint32_t np, palette *pl)
{
    memset(pl, 0, sizeof *pl);
    uint64_t(*hist)[256] = xcalloc(np, sizeof *hist);
    for (uint32_t k = 0; k < np; ++k)
        for (uint32_t v = 0; v < props[k].count; ++v) hist[k][props[k].xyzi[4 * (size_t)v + 3]]++;
    /* the distinct colours, emissive ones apart (they keep entries of their own) */
    pcol    *cols = xmalloc((size_t)np * 256 * sizeof *cols);
    uint32_t nc = 0;
    /* lamp colours first: past MAX_EMISSIVE, those with the fewest voxels stay diffuse */
    for (uint32_t k = 0; k < np; ++k)
        for (int i = 1; i < 256; ++i)
            if (hist[k][i] && props[k].lamp && is_glow_colour(props[k].pal[i])) {
                cols[nc].key = key_of(props[k].pal[i], 0);
                cols[nc].count = hist[k][i];
                nc++;
            }
    qsort(cols, nc, sizeof *cols, cmp_pcol_key);
    uint32_t nu = 0;
    for (uint32_t i = 0; i < nc; ++i) {
        if (nu && cols[nu - 1].key == cols[i].key) cols[nu - 1].count += cols[i].count;
        else cols[nu++] = cols[i];
    }
    qsort(cols, nu, sizeof *cols, cmp_pcol_count);
    g_nglow = nu < MAX_EMISSIVE ? nu : MAX_EMISSIVE;
    for (uint32_t i = 0; i < g_nglow; ++i) g_glow[i] = cols[i].key;
    qsort(g_glow, g_nglow, sizeof *g_glow, cmp_u32);
    nc = 0;
    for (uint32_t k = 0; k < np; ++k)
        for (int i = 1; i < 256; ++i)
            if (hist[k][i]) {
                cols[nc].key = key_of(props[k].pal[i], prop_glows(&props[k], i));
                cols[nc].count = hist[k][i];
                nc++;
            }
    qsort(cols, nc, sizeof *cols, cmp_pcol_key);
    nu = 0;
    for (uint32_t i = 0; i < nc; ++i) {
        if (nu && cols[nu - 1].key == cols[i].key) cols[nu - 1].count += cols[i].count;
        else cols[nu++] = cols[i];
    }
    uint32_t  nglow = g_nglow;
    uint32_t  nplain = nu - nglow; /* plain colours sort first: their keys are below 1 << 24 */
    uint32_t  cap = 255 - (uint32_t)NTERRAIN_COLOURS - nglow;
    uint32_t  idx = 1;
    uint32_t *box_colour = xmalloc((nplain ? nplain : 1) * sizeof *box_colour);
    uint32_t  nbox;
    if (nplain <= cap) {
        for (uint32_t i = 0; i < nplain; ++i) {
            cols[i].box = i;
            box_colour[i] = col_rgb(cols[i].key >> 16 & 255, cols[i].key >> 8 & 255, cols[i].key & 255);
        }
        nbox = nplain;
    } else {
        nbox = median_cut(cols, nplain, cap, box_colour);
        pl->quantised_from = nplain;
    }
    for (uint32_t b = 0; b < nbox; ++b) pl->rgba[idx + b] = box_colour[b];
    idx += nbox;
    for (uint32_t i = nplain; i < nu; ++i) {
        pl->rgba[idx] = col_rgb(cols[i].key >> 16 & 255, cols[i].key >> 8 & 255, cols[i].key & 255);
        pl->emissive[idx] = 1;
        cols[i].box = idx - 1; /* palette index 1 + box, like the plain boxes */
        idx++;
        pl->nemissive++;
    }
    for (uint32_t i = 0; i < NTERRAIN_COLOURS; ++i) {
        pl->rgba[idx] = TERRAIN_COLOURS[i];
        pl->terrain[i] = (uint8_t)idx++;
    }
    pl->ncolours = idx - 1;
    free(box_colour);
    /* remap: look each prop colour up by key */
    for (uint32_t k = 0; k < np; ++k) {
        uint8_t lut[256] = { 0 };
        for (int i = 1; i < 256; ++i) {
            if (!hist[k][i]) continue;
            pcol q;
            q.key = key_of(props[k].pal[i], prop_glows(&props[k], i));
            pcol *hit = bsearch(&q, cols, nu, sizeof *cols, cmp_pcol_key);
            if (!hit) die("internal: colour %06x not in the palette", q.key);
            lut[i] = (uint8_t)(1 + hit->box);
        }
        props[k].emissive = 0;
        for (uint32_t v = 0; v < props[k].count; ++v) {
            uint8_t *c = &props[k].xyzi[4 * (size_t)v + 3];
            *c = lut[*c];
            props[k].emissive += pl->emissive[*c];
        }
    }
    free(cols);
    free(hist);
}

/* ---- terrain: value-noise heightfield, TERRAIN_LAYERS thick, cut into chunk models ------------ */

static double lattice(uint64_t seed, int oct, int64_t ix, int64_t iy)
{
    uint64_t h = mix64(seed ^ mix64((uint64_t)oct * 0x632be59bd9b4e019ull ^
                                    mix64((uint64_t)ix * 0x9e3779b97f4a7c15ull ^ (uint64_t)iy)));
    return (double)(h >> 11) * 0x1p-53;
}

static double value_noise(uint64_t seed, int oct, double x, double y)
{
    double  fx = floor(x), fy = floor(y);
    int64_t ix = (int64_t)fx, iy = (int64_t)fy;
    double  u = x - fx, v = y - fy;
    u = u * u * (3 - 2 * u);
    v = v * v * (3 - 2 * v);
    double a = lattice(seed, oct, ix, iy), b = lattice(seed, oct, ix + 1, iy);
    double c = lattice(seed, oct, ix, iy + 1), d = lattice(seed, oct, ix + 1, iy + 1);
    return (a + (b - a) * u) * (1 - v) + (c + (d - c) * u) * v;
}

static int32_t terrain_height(uint64_t seed, int64_t x, int64_t y)
{
    static const double scale[5] = { 320, 160, 80, 40, 20 }, amp[5] = { 1, 0.5, 0.25, 0.125, 0.0625 };
    double              s = 0, w = 0;
    for (int o = 0; o < 5; ++o) {
        s += amp[o] * value_noise(seed, o, (double)x / scale[o], (double)y / scale[o]);
        w += amp[o];
    }
    return TERRAIN_HMIN + (int32_t)lround(TERRAIN_HAMP * s / w);
}

typedef struct out_model {
    uint32_t size[3];
    uint32_t count;
    uint8_t *xyzi;
    int      owned;
} out_model;
typedef struct instance {
    uint32_t model;
    uint8_t  rot;
    int32_t  t[3];
} instance;

/* ---- prop weights: (voxels / fewest voxels)^-alpha, mostly small props, a few big ones -------- */

static double prop_weight(const prop *p, double vmin, double alpha) { return pow((double)p->count / vmin, -alpha); }

/* The weighted mean of a prop's voxels plus terrain_per_foot times its footprint (x * y). */
static double prop_mean(const prop *props, uint32_t np, double vmin, double alpha, double terrain_per_foot)
{
    double sw = 0, s = 0;
    for (uint32_t k = 0; k < np; ++k) {
        double w = prop_weight(&props[k], vmin, alpha);
        sw += w;
        s += w * ((double)props[k].count + terrain_per_foot * (double)props[k].size[0] * (double)props[k].size[1]);
    }
    return s / sw;
}

/* The alpha in [-8, 8] whose prop_mean is want (the mean falls as alpha grows; saturates at the ends). */
static double solve_alpha(const prop *props, uint32_t np, double vmin, double terrain_per_foot, double want)
{
    double lo = -8, hi = 8;
    for (int it = 0; it < 100; ++it) {
        double mid = 0.5 * (lo + hi);
        if (prop_mean(props, np, vmin, mid, terrain_per_foot) > want) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* ---- the writer ------------------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t   n, cap;
} buf;
static void buf_need(buf *b, size_t k)
{
    if (b->n + k <= b->cap) return;
    size_t c = b->cap ? b->cap : (1u << 20);
    while (c < b->n + k) c *= 2;
    b->p = xrealloc(b->p, c);
    b->cap = c;
}
static void put_bytes(buf *b, const void *p, size_t k)
{
    buf_need(b, k);
    memcpy(b->p + b->n, p, k);
    b->n += k;
}
static void put_u32(buf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    put_bytes(b, x, 4);
}
static void put_str(buf *b, const char *s)
{
    size_t l = strlen(s);
    put_u32(b, (uint32_t)l);
    put_bytes(b, s, l);
}
static size_t chunk_begin(buf *b, const char *id)
{
    put_bytes(b, id, 4);
    put_u32(b, 0);
    put_u32(b, 0);
    return b->n;
}
static void chunk_end(buf *b, size_t start)
{
    uint32_t n = (uint32_t)(b->n - start);
    uint8_t *p = b->p + start - 8;
    p[0] = (uint8_t)n;
    p[1] = (uint8_t)(n >> 8);
    p[2] = (uint8_t)(n >> 16);
    p[3] = (uint8_t)(n >> 24);
}

static void write_vox(buf *b, const out_model *models, uint32_t nmodels, const instance *inst, uint32_t ninst,
                      const palette *pl)
{
    put_bytes(b, "VOX ", 4);
    put_u32(b, 200);
    put_bytes(b, "MAIN", 4);
    put_u32(b, 0);
    put_u32(b, 0);
    size_t main_children = b->n;
    for (uint32_t k = 0; k < nmodels; ++k) {
        size_t c = chunk_begin(b, "SIZE");
        for (int a = 0; a < 3; ++a) put_u32(b, models[k].size[a]);
        chunk_end(b, c);
        c = chunk_begin(b, "XYZI");
        put_u32(b, models[k].count);
        put_bytes(b, models[k].xyzi, 4 * (size_t)models[k].count);
        chunk_end(b, c);
    }
    size_t c = chunk_begin(b, "nTRN"); /* root */
    put_u32(b, 0);
    put_u32(b, 0);
    put_u32(b, 1);
    put_u32(b, UINT32_MAX);
    put_u32(b, UINT32_MAX);
    put_u32(b, 1);
    put_u32(b, 0);
    chunk_end(b, c);
    c = chunk_begin(b, "nGRP");
    put_u32(b, 1);
    put_u32(b, 0);
    put_u32(b, ninst);
    for (uint32_t i = 0; i < ninst; ++i) put_u32(b, 2 + 2 * i);
    chunk_end(b, c);
    for (uint32_t i = 0; i < ninst; ++i) {
        char r[8], t[48];
        snprintf(r, sizeof r, "%u", inst[i].rot);
        snprintf(t, sizeof t, "%d %d %d", inst[i].t[0], inst[i].t[1], inst[i].t[2]);
        c = chunk_begin(b, "nTRN");
        put_u32(b, 2 + 2 * i);
        put_u32(b, 0); /* id, attributes */
        put_u32(b, 3 + 2 * i);
        put_u32(b, UINT32_MAX); /* child, reserved */
        put_u32(b, 0);
        put_u32(b, 1); /* layer, frames */
        put_u32(b, 2);
        put_str(b, "_r");
        put_str(b, r);
        put_str(b, "_t");
        put_str(b, t);
        chunk_end(b, c);
        c = chunk_begin(b, "nSHP");
        put_u32(b, 3 + 2 * i);
        put_u32(b, 0); /* id, attributes */
        put_u32(b, 1);
        put_u32(b, inst[i].model);
        put_u32(b, 0);
        chunk_end(b, c);
    }
    c = chunk_begin(b, "LAYR");
    put_u32(b, 0);
    put_u32(b, 1);
    put_str(b, "_name");
    put_str(b, "world");
    put_u32(b, UINT32_MAX);
    chunk_end(b, c);
    c = chunk_begin(b, "RGBA");
    for (int i = 1; i < 256; ++i) put_u32(b, pl->rgba[i] ? pl->rgba[i] : 0xff000000u);
    put_u32(b, 0);
    chunk_end(b, c);
    for (int i = 1; i < 256; ++i) {
        if (!pl->emissive[i]) continue;
        c = chunk_begin(b, "MATL");
        put_u32(b, (uint32_t)i);
        put_u32(b, 3);
        put_str(b, "_type");
        put_str(b, "_emit");
        put_str(b, "_emit");
        put_str(b, "1");
        put_str(b, "_flux");
        put_str(b, "1");
        chunk_end(b, c);
    }
    uint32_t m = (uint32_t)(b->n - main_children);
    uint8_t *p = b->p + main_children - 4;
    p[0] = (uint8_t)m;
    p[1] = (uint8_t)(m >> 8);
    p[2] = (uint8_t)(m >> 16);
    p[3] = (uint8_t)(m >> 24);
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: vox_world [--objects N] [--seed S] [--props DIR] [--terrain-chunk C] [--voxels V] -o OUT.vox\n"
            "       vox_world --check FILE.vox\n"
            "  --objects N        props to place (default 54000)\n"
            "  --seed S           random seed (default 1); the same options give the same bytes\n"
            "  --props DIR        folder of prop .vox files (default %s)\n"
            "  --terrain-chunk C  terrain chunk side, 8..256 (default 64)\n"
            "  --voxels V         target instanced voxels, terrain included (default 15e6 * N / 54000)\n"
            "  --check FILE       re-read a v200 .vox and print what its scene graph places\n"
            "%s\n",
            DEFAULT_PROPS, CREDIT);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
    char *e;
    errno = 0;
    if (!s) die("%s needs a value", opt);
    double v = strtod(s, &e);
    if (errno || *e || e == s || v != floor(v) || v < (double)lo || v > (double)hi)
        die("%s %s: expected an integer in %llu..%llu", opt, s, (unsigned long long)lo, (unsigned long long)hi);
    if (v > 9007199254740992.0) { /* beyond doubles: take the digits as they are */
        unsigned long long u = strtoull(s, &e, 10);
        if (*e) die("%s %s: expected an integer", opt, s);
        return u;
    }
    return (uint64_t)v;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    uint64_t    nobj = 54000, seed = 1, chunk = 64, target = 0;
    const char *props_dir = DEFAULT_PROPS, *out = NULL;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--objects")) {
            nobj = parse_u64(a, v, 1, 10000000);
            ++i;
        } else if (!strcmp(a, "--seed")) {
            seed = parse_u64(a, v, 0, UINT64_MAX);
            ++i;
        } else if (!strcmp(a, "--terrain-chunk")) {
            chunk = parse_u64(a, v, 8, 256);
            ++i;
        } else if (!strcmp(a, "--voxels")) {
            target = parse_u64(a, v, 1, 1ull << 40);
            ++i;
        } else if (!strcmp(a, "--props")) {
            if (!v) die("--props needs a folder");
            props_dir = v;
            ++i;
        } else if (!strcmp(a, "-o")) {
            if (!v) die("-o needs a file name");
            out = v;
            ++i;
        } else if (!strcmp(a, "--check")) {
            if (!v) die("--check needs a file");
            return cmd_check(v);
        } else die("unknown option %s (see --help)", a);
    }
    if (!out) die("no output file: give -o OUT.vox (see --help)");
    if (!target) target = (uint64_t)llround(VOXELS_DEFAULT_PER_OBJECT * (double)nobj);
    double t0 = now_s();

    /* props and the palette */
    uint32_t np;
    prop    *props = load_props(props_dir, &np, out);
    palette  pl;
    build_palette(props, np, &pl);

    /* The world side: the props' boxes cover COVERAGE of the ground, and props plus terrain (about
     * TERRAIN_LAYERS voxels a column) make the target. Solved once with that estimate of the terrain,
     * and again for the props alone once the terrain is made. */
    double vmin = 1e300;
    for (uint32_t k = 0; k < np; ++k)
        if (props[k].count < vmin) vmin = props[k].count;
    double   tpf = (TERRAIN_LAYERS + 0.1) / COVERAGE;
    double   alpha = solve_alpha(props, np, vmin, tpf, (double)target / (double)nobj);
    double   foot = (prop_mean(props, np, vmin, alpha, 1.0) - prop_mean(props, np, vmin, alpha, 0.0)) / COVERAGE;
    uint32_t side = 8 * (uint32_t)ceil(sqrt((double)nobj * foot) / 8.0);
    if (side > 65536) die("--objects %llu: world side %u is too large", (unsigned long long)nobj, side);
    uint32_t nch = (side + (uint32_t)chunk - 1) / (uint32_t)chunk; /* the last row and column may be narrower */
    uint64_t terrain_seed = mix64(seed ^ 0x7465727261696eull);
    int32_t *hmap = xmalloc((size_t)(side + 2) * (side + 2) * sizeof *hmap); /* with a one-column border */
#define H(x, y) hmap[(size_t)((y) + 1) * (side + 2) + (size_t)((x) + 1)]
    for (int64_t y = -1; y <= (int64_t)side; ++y)
        for (int64_t x = -1; x <= (int64_t)side; ++x) H(x, y) = terrain_height(terrain_seed, x, y);

    uint32_t   nmodels_max = np + nch * nch;
    out_model *models = xcalloc(nmodels_max, sizeof *models);
    for (uint32_t k = 0; k < np; ++k) {
        memcpy(models[k].size, props[k].size, sizeof props[k].size);
        models[k].count = props[k].count;
        models[k].xyzi = props[k].xyzi;
    }
    uint32_t  nmodels = np;
    instance *inst = xmalloc(((size_t)nch * nch + nobj) * sizeof *inst);
    uint32_t  ninst = 0;
    uint64_t  terrain_voxels = 0, emissive_voxels = 0;
    for (uint32_t cy = 0; cy < nch; ++cy)
        for (uint32_t cx = 0; cx < nch; ++cx) {
            int32_t  zlo = INT32_MAX, zhi = INT32_MIN;
            uint32_t x0 = cx * (uint32_t)chunk, y0 = cy * (uint32_t)chunk, count = 0;
            uint32_t x1 = x0 + (uint32_t)chunk < side ? x0 + (uint32_t)chunk : side;
            uint32_t y1 = y0 + (uint32_t)chunk < side ? y0 + (uint32_t)chunk : side;
            for (uint32_t y = y0; y < y1; ++y)
                for (uint32_t x = x0; x < x1; ++x) {
                    int32_t h = H(x, y), lo = h - TERRAIN_LAYERS;
                    int32_t nb[4] = { H(x - 1, y), H(x + 1, y), H(x, y - 1), H(x, y + 1) };
                    for (int k = 0; k < 4; ++k)
                        if (nb[k] < lo) lo = nb[k]; /* close the sides of steps */
                    if (lo < 0) lo = 0;
                    if (lo < zlo) zlo = lo;
                    if (h - 1 > zhi) zhi = h - 1;
                    count += (uint32_t)(h - lo);
                }
            if (zhi - zlo + 1 > MAX_SIDE) die("internal: terrain chunk taller than %d", MAX_SIDE);
            out_model *m = &models[nmodels];
            m->size[0] = x1 - x0;
            m->size[1] = y1 - y0;
            m->size[2] = (uint32_t)(zhi - zlo + 1);
            m->count = count;
            m->xyzi = xmalloc(4 * (size_t)count);
            m->owned = 1;
            uint8_t *w = m->xyzi;
            for (uint32_t y = y0; y < y1; ++y)
                for (uint32_t x = x0; x < x1; ++x) {
                    int32_t h = H(x, y), lo = h - TERRAIN_LAYERS;
                    int32_t nb[4] = { H(x - 1, y), H(x + 1, y), H(x, y - 1), H(x, y + 1) };
                    for (int k = 0; k < 4; ++k)
                        if (nb[k] < lo) lo = nb[k];
                    if (lo < 0) lo = 0;
                    uint8_t grass = pl.terrain[value_noise(terrain_seed, 7, x / 6.0, y / 6.0) < 0.5 ? 0 : 1];
                    for (int32_t z = lo; z < h; ++z) {
                        w[0] = (uint8_t)(x - x0);
                        w[1] = (uint8_t)(y - y0);
                        w[2] = (uint8_t)(z - zlo);
                        w[3] = z == h - 1 ? grass : z >= h - 1 - TERRAIN_LAYERS ? pl.terrain[2] : pl.terrain[3];
                        w += 4;
                    }
                }
            /* identity rotation: t = lower corner + floor(size / 2) */
            instance *in = &inst[ninst++];
            in->model = nmodels;
            in->rot = 4;
            in->t[0] = (int32_t)(x0 + m->size[0] / 2);
            in->t[1] = (int32_t)(y0 + m->size[1] / 2);
            in->t[2] = zlo + (int32_t)(m->size[2] / 2);
            terrain_voxels += count;
            nmodels++;
        }

    /* the props' share of the target, now that the terrain is known */
    alpha = solve_alpha(props, np, vmin, 0.0, ((double)target - (double)terrain_voxels) / (double)nobj);
    double *cdf = xmalloc(np * sizeof *cdf), acc = 0;
    for (uint32_t k = 0; k < np; ++k) {
        props[k].weight = prop_weight(&props[k], vmin, alpha);
        acc += props[k].weight;
        cdf[k] = acc;
    }

    /* the eight rotations about z: four turns, each with and without a mirror of x */
    int rots[8][9];
    for (int k = 0; k < 8; ++k) {
        static const int cs[4][2] = { { 1, 0 }, { 0, 1 }, { -1, 0 }, { 0, -1 } };
        int              c = cs[k & 3][0], s = cs[k & 3][1], mx = k & 4 ? -1 : 1;
        int              r[9] = { c, -s, 0, s, c, 0, 0, 0, 1 }, mm[9] = { mx, 0, 0, 0, 1, 0, 0, 0, 1 };
        mat_mul(r, mm, rots[k]);
    }

    /* placement: a coarse occupancy grid keeps gross overlaps out */
    uint32_t og = (side + OCC_CELL - 1) / OCC_CELL;
    uint8_t *occ = xcalloc((size_t)og * og, 1);
    rng      r;
    r.s = mix64(seed);
    uint64_t  prop_voxels = 0, overlapped = 0;
    uint32_t *uses = xcalloc(np, sizeof *uses), mirrored = 0;
    for (uint64_t i = 0; i < nobj; ++i) {
        double   u = rng_unit(&r) * acc;
        uint32_t lo = 0, hi = np - 1;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (cdf[mid] > u) hi = mid;
            else lo = mid + 1;
        }
        const prop *p = &props[lo];
        int         k = (int)rng_below(&r, 8);
        const int  *m = rots[k];
        /* footprint in x, y after the rotation */
        uint32_t fx = 0, fy = 0;
        for (int c = 0; c < 3; ++c) {
            fx += (uint32_t)abs(m[c]) * p->size[c];
            fy += (uint32_t)abs(m[3 + c]) * p->size[c];
        }
        uint32_t best_x = 0, best_y = 0, best_hit = UINT32_MAX;
        for (int tr = 0; tr < PLACE_TRIES && best_hit; ++tr) {
            uint32_t x0 = fx < side ? rng_below(&r, side - fx + 1) : 0,
                     y0 = fy < side ? rng_below(&r, side - fy + 1) : 0;
            uint32_t gx0 = x0 / OCC_CELL, gy0 = y0 / OCC_CELL;
            uint32_t gx1 = (x0 + fx - 1) / OCC_CELL, gy1 = (y0 + fy - 1) / OCC_CELL, hit = 0, cells = 0;
            if (gx1 >= og) gx1 = og - 1;
            if (gy1 >= og) gy1 = og - 1;
            for (uint32_t gy = gy0; gy <= gy1; ++gy)
                for (uint32_t gx = gx0; gx <= gx1; ++gx) {
                    hit += occ[(size_t)gy * og + gx];
                    cells++;
                }
            if (4 * hit <= cells) hit = 0; /* a quarter of the cells taken is a small overlap */
            if (hit < best_hit) {
                best_hit = hit;
                best_x = x0;
                best_y = y0;
            }
        }
        overlapped += best_hit > 0;
        {
            uint32_t gx1 = (best_x + fx - 1) / OCC_CELL, gy1 = (best_y + fy - 1) / OCC_CELL;
            if (gx1 >= og) gx1 = og - 1;
            if (gy1 >= og) gy1 = og - 1;
            for (uint32_t gy = best_y / OCC_CELL; gy <= gy1; ++gy)
                for (uint32_t gx = best_x / OCC_CELL; gx <= gx1; ++gx) occ[(size_t)gy * og + gx] = 1;
        }
        /* bottom on the lowest surface under the footprint: sunk a little on slopes, never floating */
        int32_t zb = INT32_MAX;
        for (uint32_t y = best_y; y < best_y + fy && y < side; ++y)
            for (uint32_t x = best_x; x < best_x + fx && x < side; ++x)
                if (H(x, y) < zb) zb = H(x, y);
        /* world = M (p - h) + t: choose t so that the box's lower corner is (x0, y0, zb) */
        int64_t   low[3] = { best_x, best_y, zb };
        instance *in = &inst[ninst++];
        in->model = lo;
        in->rot = rot_byte(m);
        for (int rr = 0; rr < 3; ++rr) {
            int64_t mh = 0, mins = 0;
            for (int c = 0; c < 3; ++c) {
                mh += m[3 * rr + c] * (int64_t)(p->size[c] / 2);
                if (m[3 * rr + c] < 0) mins -= (int64_t)p->size[c];
            }
            in->t[rr] = (int32_t)(low[rr] - mins + mh);
        }
        mirrored += k >= 4;
        prop_voxels += p->count;
        emissive_voxels += p->emissive;
        uses[lo]++;
    }
#undef H
    double t_gen = now_s() - t0;

    /* write, re-read, compare, rename */
    buf b = { NULL, 0, 0 };
    write_vox(&b, models, nmodels, inst, ninst, &pl);
    vox_file    f;
    size_t      at;
    const char *e = vox_parse(b.p, b.n, &f, &at);
    if (e) die("internal: the written file does not parse: offset %zu: %s", at, e);
    world_stats s;
    if ((e = vox_walk(&f, &s))) die("internal: the written scene graph: %s", e);
    if (s.instances != ninst || s.voxels != terrain_voxels + prop_voxels || s.emissive_voxels != emissive_voxels ||
        s.mirrored != mirrored || s.lo[0] != 0 || s.lo[1] != 0)
        die("internal: the re-read file places other things than were generated");

    size_t ol = strlen(out);
    if (ol + 16 > sizeof g_tmp_path) die("%s: path too long", out);
    snprintf(g_tmp_path, sizeof g_tmp_path, "%s.tmp.XXXXXX", out);
    int fd = mkstemp(g_tmp_path);
    if (fd < 0) {
        g_tmp_path[0] = 0;
        die("%s: cannot create a temporary file beside it: %s", out, strerror(errno));
    }
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um)) die("%s: chmod: %s", g_tmp_path, strerror(errno));
    for (size_t off = 0; off < b.n;) {
        ssize_t k = write(fd, b.p + off, b.n - off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) die("%s: write failed: %s", g_tmp_path, strerror(errno));
        off += (size_t)k;
    }
    if (fsync(fd) || close(fd)) die("%s: write failed: %s", g_tmp_path, strerror(errno));
    if (rename(g_tmp_path, out)) die("%s: cannot rename %s to it: %s", out, g_tmp_path, strerror(errno));
    g_tmp_path[0] = 0;
    double t_all = now_s() - t0;

    uint32_t used = 0;
    for (uint32_t k = 0; k < np; ++k) used += uses[k] > 0;
    printf("%s\n", out);
    printf("props:              %u models from %s, %u placed at least once; weights size^-%.3f\n", np, props_dir, used,
           alpha);
    printf("palette:            %u colours (%u emissive, %u terrain)%s\n", pl.ncolours, pl.nemissive,
           (unsigned)NTERRAIN_COLOURS, pl.quantised_from ? " - median cut" : " - exact");
    if (pl.quantised_from) printf("                    quantised from %u colours\n", pl.quantised_from);
    printf("terrain:            %u x %u voxels, %u x %u chunk models of up to %llu, %llu voxels\n", side, side, nch,
           nch, (unsigned long long)chunk, (unsigned long long)terrain_voxels);
    printf(
        "placed props:       %llu (%llu voxels, %.1f per prop; %llu with overlap past a quarter of their footprint)\n",
        (unsigned long long)nobj, (unsigned long long)prop_voxels, (double)prop_voxels / (double)nobj,
        (unsigned long long)overlapped);
    printf("target voxels:      %llu\n", (unsigned long long)target);
    print_stats(&s, &f, b.n);
    printf("time:               %.2f s generating, %.2f s in all\n", t_gen, t_all);
    printf("%s\n", CREDIT);

    vox_file_free(&f);
    free(b.p);
    for (uint32_t k = 0; k < nmodels; ++k) free(models[k].xyzi);
    free(models);
    free(props);
    free(inst);
    free(hmap);
    free(cdf);
    free(occ);
    free(uses);
    return 0;
}
