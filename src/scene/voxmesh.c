/* voxmesh.c - the voxel surface (voxmesh.h): visible faces, greedy quads, triangles.
 *
 * Cost: linear in the models' voxels (once per model; clearing a dense grid of each model's
 * volume aside), plus per instance the hash cells of its box and the quads emitted, plus the
 * instanced voxels that lie in hash cells two instances share, plus the faces of slices whose
 * outer layer meets a hash cell holding another instance (those alone are tested, one lookup a
 * face). However the instances are placed: a million copies of one voxel in one place cost what
 * a million apart do.
 *   1. Per model, once: a dense colour grid (temporary), a 1-bit occupancy grid (kept), and per
 *      model direction and slice the faces visible within the model (found from the voxel list,
 *      bucketed by direction and slice) and their greedy quads.
 *   2. Instance boxes in a hash of 16^3-voxel cells; each cell that two or more boxes share gets
 *      a 4096-bit bitmap, the union of the voxels its instances place there (set from each such
 *      instance's voxel list). Whether another instance fills a world cell is then one bit (or,
 *      in a cell of one instance, one test of that instance's model grid).
 *   3. Per instance, direction and slice: when the layer of cells just outside the slice meets no
 *      hash cell that lists another instance, the model's quads are copied (transformed);
 *      otherwise each face's outer cell is looked up, and if some are filled the rest are merged
 *      again by the same greedy function, so the result is what a greedy mesher gives on the
 *      visible faces.
 * No allocation per voxel or per quad: arrays grow by doubling. Steps 1, 2's bitmaps and 3 run on
 * bk_cpu_threads() workers taking models, then chunks of 64 instances, from a counter (bits are
 * gathered per instance in the worker's own words, then set with one atomic or a word, so the
 * bitmaps do not depend on who set them); each chunk's
 * quads are put back in instance order (on the thread pool, as the quads' triangles are made), so
 * the result does not depend on the thread count.
 */
#include "voxmesh.h"
#include "pool.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CELL_SHIFT 4 /* the instance hash's cells: 16 voxels a side */

typedef struct vm_face {
    uint8_t u, v, c, pad;
} vm_face;
typedef struct vm_quad {
    uint8_t  u, v, c, pad;
    uint16_t w, h;
} vm_quad;

typedef struct vm_model {
    uint64_t *occ;     /* 1 bit per cell, index x + sx (y + sy z) */
    uint32_t  base[7]; /* slices of model direction md: base[md] .. base[md + 1] */
    uint32_t *face_at; /* base[6] + 1 offsets into faces, per (direction, slice) */
    uint32_t *quad_at; /* the same into quads */
    vm_face  *faces;
    vm_quad  *quads;
} vm_model;

typedef struct vm_xf {
    int     col[3], sgn[3]; /* world row r = sgn[r] * model axis col[r] */
    int32_t T[3];           /* world point = M p + T */
    int     det;            /* +1 or -1 */
    int32_t lo[3], hi[3];   /* world cell box */
} vm_xf;

typedef struct vm_hash {
    int32_t          *keys;  /* 3 per slot */
    uint32_t         *start; /* per slot: first list entry; BK_NONE = empty slot */
    uint32_t         *count;
    uint32_t         *list;    /* instance ids, per cell in instance order */
    uint32_t         *bits_at; /* per slot listing >= 2 instances: its occupancy bitmap; else BK_NONE */
    _Atomic uint64_t *bits;    /* bitmaps: the union of the listed instances' voxels, 4096 bits
                                  (64 words) per cell, bit x + 16 (y + 16 z) of the cell's corner */
    size_t cap;
} vm_hash;

typedef struct vm_ctx {
    const bk_scene *s;
    vm_model       *models;
    vm_xf          *xf;
    vm_hash         H;
    const uint8_t  *used;                       /* per model: placed at least once */
    atomic_uint     next;                       /* the next chunk of work (models, then instances) */
    atomic_int      failed;                     /* out of memory in some worker */
    uint32_t       *chunk_worker, *chunk_count; /* per instance chunk: who made its quads, how many */
    size_t         *chunk_first;                /* ... and where they start in that worker's list */
} vm_ctx;

/* One worker's scratch and output; workers take chunks from vm_ctx.next. */
typedef struct vm_work {
    vm_ctx      *C;
    int          id;
    bk_vox_quad *quads; /* quads of the chunks this worker made, chunk after chunk */
    size_t       nq, qcap;
    uint8_t     *mask;    /* 256 x 256 greedy mask, all zero between uses */
    vm_quad     *scratch; /* quads of one re-merged slice */
    uint32_t    *ctab;    /* an instance box's hash cells: bitmap index or BK_NONE */
    uint64_t    *lbits;   /* 64 words per ctab cell: one instance's bits, all zero between uses */
    uint8_t     *hid;     /* per face of one slice: hidden by another instance */
    uint8_t     *grid;    /* a model's dense colour grid */
    size_t       grid_cap;
    uint64_t     hidden;
    uint64_t     steps; /* bk_voxmesh.hide_steps of the instances this worker made */
    pthread_t    thread;
} vm_work;

#define INST_CHUNK 64 /* instances per chunk: fine enough to balance, coarse enough to be cheap */
#define BOX_CELLS  (BK_VOX_MAX_SIZE / 16 + 2) /* hash cells along a model box grown by 1 */

/* ---- models ------------------------------------------------------------------------------- */

static size_t cell_index(const uint32_t *sz, int x, int y, int z)
{
    return (size_t)x + sz[0] * ((size_t)y + sz[1] * (size_t)z);
}

/* Greedy merge of mask rows [v0, v1] (nu wide): emits rectangles of one colour in scan order and
 * leaves the mask zero. Returns the number written to out. */
static uint32_t greedy(uint8_t *mask, int nu, int v0, int v1, vm_quad *out)
{
    uint32_t n = 0;
    for (int v = v0; v <= v1; ++v) {
        uint8_t *row = mask + (size_t)v * nu;
        for (int u = 0; u < nu; ++u) {
            uint8_t c = row[u];
            if (!c) continue;
            int w = 1;
            while (u + w < nu && row[u + w] == c) ++w;
            int h = 1;
            for (; v + h <= v1; ++h) {
                const uint8_t *r2 = mask + (size_t)(v + h) * nu + u;
                int            k = 0;
                while (k < w && r2[k] == c) ++k;
                if (k < w) break;
            }
            for (int j = 0; j < h; ++j) memset(mask + (size_t)(v + j) * nu + u, 0, (size_t)w);
            vm_quad *q = &out[n++];
            q->u = (uint8_t)u;
            q->v = (uint8_t)v;
            q->c = c;
            q->pad = 0;
            q->w = (uint16_t)w;
            q->h = (uint16_t)h;
            u += w - 1;
        }
    }
    return n;
}

static int model_build(vm_work *W, uint32_t mi)
{
    vm_ctx             *C = W->C;
    uint8_t           **grid = &W->grid;
    size_t             *grid_cap = &W->grid_cap;
    const bk_vox_model *m = &C->s->vox_models[mi];
    vm_model           *M = &C->models[mi];
    const uint32_t     *sz = m->size;
    size_t              vol = (size_t)sz[0] * sz[1] * sz[2];
    if (vol > *grid_cap) {
        free(*grid);
        *grid = malloc(vol);
        if (!*grid) {
            *grid_cap = 0;
            return -1;
        }
        *grid_cap = vol;
    }
    uint8_t *g = *grid;
    memset(g, 0, vol);
    M->occ = calloc((vol + 63) / 64, sizeof(uint64_t));
    uint32_t *cells = malloc(sizeof(uint32_t) * (m->voxel_count + 1)); /* each filled cell once */
    if (!M->occ || !cells) {
        free(cells);
        return -1;
    }
    uint32_t nc = 0;
    for (uint32_t i = 0; i < m->voxel_count; ++i) {
        const uint8_t *p = m->xyzi + 4 * (size_t)i;
        if (p[0] >= sz[0] || p[1] >= sz[1] || p[2] >= sz[2] || !p[3]) continue;
        size_t k = cell_index(sz, p[0], p[1], p[2]);
        if (!g[k]) cells[nc++] = (uint32_t)k;
        g[k] = p[3]; /* a cell listed twice takes its last colour */
        M->occ[k >> 6] |= 1ull << (k & 63);
    }
    M->base[0] = 0;
    for (int md = 0; md < 6; ++md) M->base[md + 1] = M->base[md] + sz[md >> 1];
    uint32_t ns = M->base[6];
    M->face_at = calloc(ns + 1, sizeof(uint32_t));
    M->quad_at = malloc(sizeof(uint32_t) * (ns + 1));
    if (!M->face_at || !M->quad_at) {
        free(cells);
        return -1;
    }
    /* faces by (direction, slice): count, then fill; O(voxels), not O(volume). Within a slice the
     * faces are in cell order, which the greedy mask does not depend on. */
    const size_t stride[3] = { 1, sz[0], (size_t)sz[0] * sz[1] };
    size_t       nf = 0;
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t i = 0; i < nc; ++i) {
            size_t k = cells[i];
            int    p[3] = { (int)(k % sz[0]), (int)(k / sz[0] % sz[1]), (int)(k / stride[2]) };
            for (int md = 0; md < 6; ++md) {
                int a = md >> 1, sg = md & 1 ? -1 : 1, n = p[a] + sg;
                if (n >= 0 && n < (int)sz[a] && g[sg > 0 ? k + stride[a] : k - stride[a]]) continue;
                uint32_t *slot = &M->face_at[M->base[md] + (uint32_t)p[a]];
                if (!pass) {
                    ++*slot;
                    continue;
                }
                vm_face *f = &M->faces[(*slot)++];
                f->u = (uint8_t)p[(a + 1) % 3];
                f->v = (uint8_t)p[(a + 2) % 3];
                f->c = g[k];
                f->pad = 0;
            }
        }
        if (!pass) {
            /* counts -> starts */
            for (uint32_t j = 0; j < ns; ++j) {
                uint32_t c = M->face_at[j];
                M->face_at[j] = (uint32_t)nf;
                nf += c;
            }
            M->faces = malloc(sizeof(vm_face) * (nf ? nf : 1));
            M->quads = malloc(sizeof(vm_quad) * (nf ? nf : 1));
            if (!M->faces || !M->quads) {
                free(cells);
                return -1;
            }
        }
    }
    free(cells);
    /* the fill moved each start to the next slice's: shift back */
    for (uint32_t j = ns; j > 0; --j) M->face_at[j] = M->face_at[j - 1];
    M->face_at[0] = 0;
    BK_CHECK(M->face_at[ns] == nf);
    /* quads per slice, by the same greedy function the instances use */
    uint32_t nq = 0;
    for (int md = 0; md < 6; ++md) {
        int a = md >> 1, nu = (int)sz[(a + 1) % 3];
        for (uint32_t s = 0; s < sz[a]; ++s) {
            uint32_t k = M->base[md] + s, f0 = M->face_at[k], f1 = M->face_at[k + 1];
            M->quad_at[k] = nq;
            if (f0 == f1) continue;
            int vmin = 255, vmax = 0;
            for (uint32_t f = f0; f < f1; ++f) {
                const vm_face *F = &M->faces[f];
                W->mask[(size_t)F->v * nu + F->u] = F->c;
                if (F->v < vmin) vmin = F->v;
                if (F->v > vmax) vmax = F->v;
            }
            nq += greedy(W->mask, nu, vmin, vmax, M->quads + nq);
        }
    }
    M->quad_at[ns] = nq;
    return 0;
}

static void model_free(vm_model *M)
{
    free(M->occ);
    free(M->face_at);
    free(M->quad_at);
    free(M->faces);
    free(M->quads);
}

/* ---- instances ---------------------------------------------------------------------------- */

static void xf_init(const bk_scene *s, const bk_vox_instance *in, vm_xf *X)
{
    const uint32_t *sz = s->vox_models[in->model].size;
    bk_vox_instance_offset(in, sz, X->T);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            if (in->m[3 * r + c]) {
                X->col[r] = c;
                X->sgn[r] = in->m[3 * r + c] > 0 ? 1 : -1;
            }
    /* det of a signed permutation: the product of the signs times the permutation's parity */
    int even =
        (X->col[0] == 0 && X->col[1] == 1) || (X->col[0] == 1 && X->col[1] == 2) || (X->col[0] == 2 && X->col[1] == 0);
    X->det = (even ? 1 : -1) * X->sgn[0] * X->sgn[1] * X->sgn[2];
    for (int r = 0; r < 3; ++r) {
        int32_t a = X->T[r], b = X->T[r] + X->sgn[r] * (int32_t)sz[X->col[r]];
        X->lo[r] = a < b ? a : b;
        X->hi[r] = a < b ? b : a;
    }
}

/* Is world cell w a voxel of instance j? */
static int inst_has(const vm_ctx *C, uint32_t j, const int32_t *w)
{
    const vm_xf *X = &C->xf[j];
    for (int r = 0; r < 3; ++r)
        if (w[r] < X->lo[r] || w[r] >= X->hi[r]) return 0;
    int p[3];
    for (int r = 0; r < 3; ++r) p[X->col[r]] = X->sgn[r] > 0 ? w[r] - X->T[r] : X->T[r] - w[r] - 1;
    const bk_vox_model *m = &C->s->vox_models[C->s->vox_instances[j].model];
    size_t              k = cell_index(m->size, p[0], p[1], p[2]);
    return (int)(C->models[C->s->vox_instances[j].model].occ[k >> 6] >> (k & 63) & 1);
}

static size_t hash3(int32_t x, int32_t y, int32_t z)
{
    uint64_t h = (uint64_t)(uint32_t)x * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uint32_t)y * 0xC2B2AE3D27D4EB4Full ^
                 (uint64_t)(uint32_t)z * 0x165667B19E3779F9ull;
    return (size_t)(h ^ h >> 29);
}

/* The slot of coarse cell (x, y, z): its own, or the empty one where it would go. */
static size_t hash_slot(const vm_hash *H, int32_t x, int32_t y, int32_t z)
{
    size_t i = hash3(x, y, z) & (H->cap - 1);
    while (H->start[i] != BK_NONE && (H->keys[3 * i] != x || H->keys[3 * i + 1] != y || H->keys[3 * i + 2] != z))
        i = (i + 1) & (H->cap - 1);
    return i;
}

static int hash_build(vm_ctx *C)
{
    uint32_t n = C->s->vox_instance_count;
    size_t   total = 0;
    for (uint32_t i = 0; i < n; ++i) {
        size_t k = 1;
        for (int r = 0; r < 3; ++r)
            k *= (size_t)(((C->xf[i].hi[r] - 1) >> CELL_SHIFT) - (C->xf[i].lo[r] >> CELL_SHIFT) + 1);
        total += k;
    }
    vm_hash *H = &C->H;
    H->cap = 16;
    while (H->cap < 2 * total) H->cap <<= 1;
    H->keys = malloc(sizeof(int32_t) * 3 * H->cap);
    H->start = malloc(sizeof(uint32_t) * H->cap);
    H->count = calloc(H->cap, sizeof(uint32_t));
    H->list = malloc(sizeof(uint32_t) * (total ? total : 1));
    if (!H->keys || !H->start || !H->count || !H->list || total >= BK_NONE) return -1;
    memset(H->start, 0xFF, sizeof(uint32_t) * H->cap);
    for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t i = 0; i < n; ++i) {
            const vm_xf *X = &C->xf[i];
            for (int32_t z = X->lo[2] >> CELL_SHIFT; z <= (X->hi[2] - 1) >> CELL_SHIFT; ++z)
                for (int32_t y = X->lo[1] >> CELL_SHIFT; y <= (X->hi[1] - 1) >> CELL_SHIFT; ++y)
                    for (int32_t x = X->lo[0] >> CELL_SHIFT; x <= (X->hi[0] - 1) >> CELL_SHIFT; ++x) {
                        size_t sl = hash_slot(H, x, y, z);
                        if (!pass) {
                            if (H->start[sl] == BK_NONE) {
                                H->start[sl] = 0;
                                H->keys[3 * sl] = x;
                                H->keys[3 * sl + 1] = y;
                                H->keys[3 * sl + 2] = z;
                            }
                            H->count[sl]++;
                        } else {
                            H->list[H->start[sl] + H->count[sl]++] = i;
                        }
                    }
        }
        if (!pass) {
            uint32_t off = 0;
            for (size_t sl = 0; sl < H->cap; ++sl)
                if (H->start[sl] != BK_NONE) {
                    H->start[sl] = off;
                    off += H->count[sl];
                    H->count[sl] = 0;
                }
        }
    }
    /* a bitmap per cell that two or more instances share, numbered in slot order */
    H->bits_at = malloc(sizeof(uint32_t) * H->cap);
    if (!H->bits_at) return -1;
    size_t nb = 0;
    for (size_t sl = 0; sl < H->cap; ++sl)
        H->bits_at[sl] = H->start[sl] != BK_NONE && H->count[sl] >= 2 ? (uint32_t)nb++ : BK_NONE;
    H->bits = calloc(64 * nb + 1, sizeof(uint64_t));
    return H->bits ? 0 : -1;
}

/* The hash cells of X's box grown by `grow`, as indices into W->ctab: their count along each axis
 * in n, the first one in c0. */
static void box_cells(const vm_xf *X, int grow, int32_t c0[3], int n[3])
{
    for (int r = 0; r < 3; ++r) {
        c0[r] = (X->lo[r] - grow) >> CELL_SHIFT;
        n[r] = ((X->hi[r] - 1 + grow) >> CELL_SHIFT) - c0[r] + 1;
        BK_CHECK(n[r] <= BOX_CELLS);
    }
}

/* Sets instance j's voxels in the bitmaps of the shared cells it is listed in. */
static void instance_raster(const vm_ctx *C, vm_work *W, uint32_t j)
{
    const vm_hash      *H = &C->H;
    const vm_xf        *X = &C->xf[j];
    const bk_vox_model *m = &C->s->vox_models[C->s->vox_instances[j].model];
    int32_t             c0[3];
    int                 n[3], any = 0;
    box_cells(X, 0, c0, n);
    for (int z = 0; z < n[2]; ++z)
        for (int y = 0; y < n[1]; ++y)
            for (int x = 0; x < n[0]; ++x) {
                uint32_t b = H->bits_at[hash_slot(H, c0[0] + x, c0[1] + y, c0[2] + z)];
                W->ctab[x + n[0] * (y + n[1] * z)] = b;
                any |= b != BK_NONE;
                W->steps++;
            }
    if (!any) return;
    /* the bits go to the worker's own copy of the box's cells first (plain stores, many cache
     * misses in flight), then each non-zero word to the shared bitmaps with one atomic or: an
     * atomic per voxel stalls on each miss and makes the workers fight over the lines */
    uint64_t       *L = W->lbits;
    const uint32_t *sz = m->size;
    for (uint32_t i = 0; i < m->voxel_count; ++i) {
        const uint8_t *p = m->xyzi + 4 * (size_t)i;
        if (p[0] >= sz[0] || p[1] >= sz[1] || p[2] >= sz[2] || !p[3]) continue;
        int32_t w[3], k[3];
        for (int r = 0; r < 3; ++r) {
            int c = X->col[r];
            w[r] = X->sgn[r] > 0 ? X->T[r] + p[c] : X->T[r] - p[c] - 1;
            k[r] = (w[r] >> CELL_SHIFT) - c0[r];
        }
        size_t ci = (size_t)k[0] + (size_t)n[0] * ((size_t)k[1] + (size_t)n[1] * (size_t)k[2]);
        if (W->ctab[ci] == BK_NONE) continue;
        uint32_t bit = (uint32_t)(w[0] & 15) | (uint32_t)(w[1] & 15) << 4 | (uint32_t)(w[2] & 15) << 8;
        L[64 * ci + (bit >> 6)] |= 1ull << (bit & 63);
        W->steps++;
    }
    for (size_t ci = 0; ci < (size_t)n[0] * n[1] * n[2]; ++ci) {
        uint32_t b = W->ctab[ci];
        if (b == BK_NONE) continue;
        for (int k = 0; k < 64; ++k) {
            uint64_t v = L[64 * ci + k];
            if (!v) continue;
            L[64 * ci + k] = 0; /* zero again for the next instance */
            _Atomic uint64_t *word = &H->bits[64 * (size_t)b + k];
            if ((atomic_load_explicit(word, memory_order_relaxed) & v) != v)
                atomic_fetch_or_explicit(word, v, memory_order_relaxed);
        }
    }
}

/* Is world cell w, the cell outside a face of self that is visible in self's model, filled by
 * another instance? A shared cell's bitmap holds self's voxels too, but never at w: the instance's
 * transform maps model cells one to one onto world cells, and w's model cell is empty (or outside
 * the model). */
static int world_filled(const vm_ctx *C, vm_work *W, uint32_t self, const int32_t *w)
{
    const vm_hash *H = &C->H;
    size_t         sl = hash_slot(H, w[0] >> CELL_SHIFT, w[1] >> CELL_SHIFT, w[2] >> CELL_SHIFT);
    W->steps++;
    if (H->start[sl] == BK_NONE) return 0;
    uint32_t b = H->bits_at[sl];
    if (b == BK_NONE) {
        uint32_t j = H->list[H->start[sl]];
        return j != self && inst_has(C, j, w);
    }
    uint32_t bit = (uint32_t)(w[0] & 15) | (uint32_t)(w[1] & 15) << 4 | (uint32_t)(w[2] & 15) << 8;
    return (int)(atomic_load_explicit(&H->bits[64 * (size_t)b + (bit >> 6)], memory_order_relaxed) >> (bit & 63) & 1);
}

/* Per world axis A, which hash-cell layers across A (bit: cell coordinate - c0[A]) hold a cell
 * that lists another instance and meets i's box grown by one along A: a face of i can only be
 * hidden where its outer cell lies in such a layer. */
static void foreign_layers(const vm_ctx *C, vm_work *W, uint32_t i, int32_t c0[3], uint64_t layers[3])
{
    const vm_hash *H = &C->H;
    const vm_xf   *X = &C->xf[i];
    int            n[3];
    int32_t        b0[3], b1[3]; /* the box's own (ungrown) cells */
    box_cells(X, 1, c0, n);
    for (int r = 0; r < 3; ++r) {
        b0[r] = X->lo[r] >> CELL_SHIFT;
        b1[r] = (X->hi[r] - 1) >> CELL_SHIFT;
        layers[r] = 0;
    }
    for (int z = 0; z < n[2]; ++z)
        for (int y = 0; y < n[1]; ++y)
            for (int x = 0; x < n[0]; ++x) {
                int32_t c[3] = { c0[0] + x, c0[1] + y, c0[2] + z };
                size_t  sl = hash_slot(H, c[0], c[1], c[2]);
                W->steps++;
                if (H->start[sl] == BK_NONE || (H->count[sl] == 1 && H->list[H->start[sl]] == i)) continue;
                for (int A = 0; A < 3; ++A) {
                    int B = (A + 1) % 3, D = (A + 2) % 3;
                    if (c[B] >= b0[B] && c[B] <= b1[B] && c[D] >= b0[D] && c[D] <= b1[D])
                        layers[A] |= 1ull << (c[A] - c0[A]);
                }
            }
}

static int quad_push(vm_work *W, uint32_t inst, const vm_xf *X, int md, uint32_t s, const vm_quad *q, int wd,
                     uint32_t mbase)
{
    if (W->nq == W->qcap) {
        size_t       cap = W->qcap ? 2 * W->qcap : 4096;
        bk_vox_quad *p = realloc(W->quads, sizeof(bk_vox_quad) * cap);
        if (!p) return -1;
        W->quads = p;
        W->qcap = cap;
    }
    int a = md >> 1, u = (a + 1) % 3, v = (a + 2) % 3, out = !(md & 1);
    int P[3], eu[3] = { 0, 0, 0 }, ev[3] = { 0, 0, 0 };
    P[a] = (int)s + out;
    P[u] = q->u;
    P[v] = q->v;
    eu[u] = 1;
    ev[v] = 1;
    int        len1 = q->w, len2 = q->h;
    const int *e1 = eu, *e2 = ev;
    /* (u, v, a) is right-handed: u then v turns counter-clockwise seen from +a. Seen from -a, or
     * through a mirror, the order reverses; both: it does not. */
    if ((!out) != (X->det < 0)) {
        e1 = ev;
        e2 = eu;
        len1 = q->h;
        len2 = q->w;
    }
    bk_vox_quad *o = &W->quads[W->nq++];
    for (int r = 0; r < 3; ++r) {
        int c = X->col[r];
        o->o[r] = X->T[r] + X->sgn[r] * P[c];
        o->du[r] = (int8_t)(X->sgn[r] * e1[c]);
        o->dv[r] = (int8_t)(X->sgn[r] * e2[c]);
    }
    o->dir = (uint8_t)wd;
    o->colour = q->c;
    o->w = (uint16_t)len1;
    o->h = (uint16_t)len2;
    o->instance = inst;
    o->material = mbase + q->c;
    return 0;
}

static int instance_mesh(const vm_ctx *C, vm_work *W, uint32_t i)
{
    const bk_vox_instance *in = &C->s->vox_instances[i];
    const bk_vox_model    *m = &C->s->vox_models[in->model];
    const vm_model        *M = &C->models[in->model];
    const vm_xf           *X = &C->xf[i];
    int32_t                c0[3];
    uint64_t               layers[3];
    foreign_layers(C, W, i, c0, layers);
    for (int wd = 0; wd < 6; ++wd) {
        int A = wd >> 1, ws = wd & 1 ? -1 : 1;
        int a = X->col[A], ms = ws * X->sgn[A], md = 2 * a + (ms < 0);
        int u = (a + 1) % 3, v = (a + 2) % 3, nu = (int)m->size[u];
        for (uint32_t s = 0; s < m->size[a]; ++s) {
            uint32_t k = M->base[md] + s, f0 = M->face_at[k], f1 = M->face_at[k + 1];
            if (f0 == f1) continue;
            /* the world layer of cells just outside this slice, along A */
            int32_t  L = X->sgn[A] > 0 ? X->T[A] + (int32_t)s + ms : X->T[A] - ((int32_t)s + ms) - 1;
            uint32_t nh = 0;
            if (layers[A] >> ((L >> CELL_SHIFT) - c0[A]) & 1) {
                for (uint32_t f = f0; f < f1; ++f) {
                    const vm_face *F = &M->faces[f];
                    int            p[3];
                    p[a] = (int)s + ms;
                    p[u] = F->u;
                    p[v] = F->v;
                    int32_t w[3];
                    for (int r = 0; r < 3; ++r) {
                        int c = X->col[r];
                        w[r] = X->sgn[r] > 0 ? X->T[r] + p[c] : X->T[r] - p[c] - 1;
                    }
                    nh += W->hid[f - f0] = (uint8_t)world_filled(C, W, i, w);
                }
            }
            if (!nh) {
                /* all its faces visible: the model's own quads (the greedy merge of the same faces) */
                for (uint32_t q = M->quad_at[k]; q < M->quad_at[k + 1]; ++q)
                    if (quad_push(W, i, X, md, s, &M->quads[q], wd, m->material_base)) return -1;
                continue;
            }
            W->hidden += nh;
            int vmin = -1, vmax = -1;
            for (uint32_t f = f0; f < f1; ++f) {
                const vm_face *F = &M->faces[f];
                if (W->hid[f - f0]) continue;
                W->mask[(size_t)F->v * nu + F->u] = F->c;
                if (vmin < 0 || F->v < vmin) vmin = F->v;
                if (F->v > vmax) vmax = F->v;
            }
            if (vmin < 0) continue;
            uint32_t nq = greedy(W->mask, nu, vmin, vmax, W->scratch);
            for (uint32_t q = 0; q < nq; ++q)
                if (quad_push(W, i, X, md, s, &W->scratch[q], wd, m->material_base)) return -1;
        }
    }
    return 0;
}

/* ---- triangles ---------------------------------------------------------------------------- */

/* Quads [begin, end) as triangles: four vertices and two triangles each, from vertex v0 and
 * triangle t0 on (on the pool: every quad writes its own slots). */
typedef struct quads_job {
    bk_voxmesh *out;
    uint32_t    v0, t0;
} quads_job;

static void quads_to_tris(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const quads_job *J = ctx;
    bk_scene        *s = &J->out->scene;
    for (size_t q = begin; q < end; ++q) {
        const bk_vox_quad *Q = &J->out->quads[q];
        float             *p = s->positions + 3 * ((size_t)J->v0 + 4 * q);
        for (int r = 0; r < 3; ++r) {
            int32_t o = Q->o[r], a = Q->du[r] * Q->w, b = Q->dv[r] * Q->h;
            p[r] = (float)o;
            p[3 + r] = (float)(o + a);
            p[6 + r] = (float)(o + a + b);
            p[9 + r] = (float)(o + b);
        }
        uint32_t  b = J->v0 + 4 * (uint32_t)q, t = J->t0 + 2 * (uint32_t)q;
        uint32_t *f = s->tri_v + 3 * (size_t)t;
        f[0] = b;
        f[1] = b + 1;
        f[2] = b + 2;
        f[3] = b;
        f[4] = b + 2;
        f[5] = b + 3;
        s->tri_material[t] = s->tri_material[t + 1] = Q->material;
        if (s->tri_vt) memset(s->tri_vt + 3 * (size_t)t, 0xFF, sizeof(uint32_t) * 6);
        if (s->tri_vn) memset(s->tri_vn + 3 * (size_t)t, 0xFF, sizeof(uint32_t) * 6);
    }
}

/* The chunks' quads into their places in instance order (on the pool), and their faces. */
typedef struct gather_job {
    const vm_ctx  *C;
    const vm_work *W;
    bk_vox_quad   *dst;
    const size_t  *at;
    uint64_t      *faces;
} gather_job;

static void gather_chunks(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const gather_job *J = ctx;
    for (size_t c = begin; c < end; ++c) {
        const bk_vox_quad *src = J->W[J->C->chunk_worker[c]].quads + J->C->chunk_first[c];
        uint32_t           n = J->C->chunk_count[c];
        uint64_t           f = 0;
        memcpy(J->dst + J->at[c], src, sizeof(bk_vox_quad) * n);
        for (uint32_t q = 0; q < n; ++q) f += (uint64_t)src[q].w * src[q].h;
        J->faces[c] = f;
    }
}

/* p (old bytes of it kept) grown to `bytes`: the surface's arrays are hundreds of MB, first
 * touched on the pool (quads_to_tris), so they are asked for as transparent huge pages
 * (bk_malloc_large): a 2 MB fault instead of 512 small ones, which serialise in the kernel. The old
 * block is freed once copied; NULL (p kept) when out of memory. */
static void *grow_large(void *p, size_t old, size_t bytes)
{
    void *q = bk_malloc_large(bytes);
    if (!q) return NULL;
    if (old) memcpy(q, p, old);
    free(p);
    return q;
}

static int make_scene(const bk_scene *src, bk_voxmesh *out, char *err, size_t err_size)
{
    bk_scene tris = *src; /* the triangles alone: voxels are not copied */
    tris.vox_model_count = 0;
    tris.vox_models = NULL;
    tris.vox_instance_count = 0;
    tris.vox_instances = NULL;
    if (bk_scene_append(&out->scene, &tris, err, err_size)) return -1;
    bk_scene *s = &out->scene;
    uint64_t  T = (uint64_t)s->tri_count + 2 * (uint64_t)out->quad_count,
             V = (uint64_t)s->vertex_count + 4 * (uint64_t)out->quad_count;
    if (T >= BK_NONE / 3 || V >= BK_NONE)
        return bk_fail(err, err_size, "voxel surface: %u quads make too many triangles", out->quad_count);
    const size_t nv = s->vertex_count, nt = s->tri_count;
    float       *pos = grow_large(s->positions, sizeof(float) * 3 * nv, sizeof(float) * 3 * (size_t)V + 1);
    if (pos) s->positions = pos;
    uint32_t *tv = grow_large(s->tri_v, sizeof(uint32_t) * 3 * nt, sizeof(uint32_t) * 3 * (size_t)T + 1);
    if (tv) s->tri_v = tv;
    uint32_t *tm =
        grow_large(s->tri_material, s->tri_material ? sizeof(uint32_t) * nt : 0, sizeof(uint32_t) * (size_t)T + 1);
    if (tm) {
        if (!s->tri_material) memset(tm, 0xFF, sizeof(uint32_t) * nt);
        s->tri_material = tm;
    }
    uint32_t *tvt =
        s->tri_vt ? grow_large(s->tri_vt, sizeof(uint32_t) * 3 * nt, sizeof(uint32_t) * 3 * (size_t)T + 1) : NULL;
    if (tvt) s->tri_vt = tvt;
    uint32_t *tvn =
        s->tri_vn ? grow_large(s->tri_vn, sizeof(uint32_t) * 3 * nt, sizeof(uint32_t) * 3 * (size_t)T + 1) : NULL;
    if (tvn) s->tri_vn = tvn;
    if (!pos || !tv || !tm || (s->tri_vt && !tvt) || (s->tri_vn && !tvn))
        return bk_fail(err, err_size, "voxel surface: out of memory");
    quads_job J = { out, s->vertex_count, s->tri_count };
    bk_parallel_for(out->quad_count, 16384, quads_to_tris, &J);
    s->vertex_count = (uint32_t)V;
    s->tri_count = (uint32_t)T;
    return 0;
}

/* Phase 1 (models) and phase 2 (instances) of a worker; the caller's thread is worker 0. */
static void *work_models(void *arg)
{
    vm_work *W = arg;
    vm_ctx  *C = W->C;
    uint32_t n = C->s->vox_model_count;
    for (;;) {
        uint32_t mi = atomic_fetch_add(&C->next, 1u);
        if (mi >= n || atomic_load(&C->failed)) break;
        if (C->used[mi] && model_build(W, mi)) atomic_store(&C->failed, 1);
    }
    return NULL;
}

static void *work_instances(void *arg)
{
    vm_work *W = arg;
    vm_ctx  *C = W->C;
    uint32_t n = C->s->vox_instance_count, chunks = (n + INST_CHUNK - 1) / INST_CHUNK;
    for (;;) {
        uint32_t c = atomic_fetch_add(&C->next, 1u);
        if (c >= chunks || atomic_load(&C->failed)) break;
        size_t   before = W->nq;
        uint32_t end = (c + 1) * INST_CHUNK < n ? (c + 1) * INST_CHUNK : n;
        for (uint32_t i = c * INST_CHUNK; i < end; ++i)
            if (instance_mesh(C, W, i)) {
                atomic_store(&C->failed, 1);
                break;
            }
        C->chunk_worker[c] = (uint32_t)W->id;
        C->chunk_first[c] = before;
        C->chunk_count[c] = (uint32_t)(W->nq - before);
    }
    return NULL;
}

static void *work_raster(void *arg)
{
    vm_work *W = arg;
    vm_ctx  *C = W->C;
    uint32_t n = C->s->vox_instance_count, chunks = (n + INST_CHUNK - 1) / INST_CHUNK;
    for (;;) {
        uint32_t c = atomic_fetch_add(&C->next, 1u);
        if (c >= chunks) break;
        uint32_t end = (c + 1) * INST_CHUNK < n ? (c + 1) * INST_CHUNK : n;
        for (uint32_t i = c * INST_CHUNK; i < end; ++i) instance_raster(C, W, i);
    }
    return NULL;
}

/* Runs fn on nt workers (the calling thread is worker 0); returns the number that ran. */
static int run_workers(vm_work *W, int nt, void *(*fn)(void *))
{
    int started = 1;
    for (int i = 1; i < nt && pthread_create(&W[i].thread, NULL, fn, &W[i]) == 0; ++i) started = i + 1;
    fn(&W[0]);
    for (int i = 1; i < started; ++i) pthread_join(W[i].thread, NULL);
    return started;
}

/* The state bk_voxmesh_build's steps share. */
typedef struct vm_build {
    const bk_scene *s;
    bk_voxmesh     *out;
    char           *err;
    size_t          err_size;
    vm_ctx          C;
    uint8_t        *used;
    vm_work        *W;
    int             nt;
    uint32_t        NI, NM, chunks;
} vm_build;

/* Every instance names a model and a signed-permutation rotation; every model size is in range. */
static int build_check(vm_build *B)
{
    const bk_scene *s = B->s;
    char           *err = B->err;
    size_t          err_size = B->err_size;
    uint32_t        NI = B->NI, NM = B->NM;
    for (uint32_t i = 0; i < NI; ++i) {
        const bk_vox_instance *in = &s->vox_instances[i];
        int8_t                 chk[9];
        if (in->model >= NM) {
            bk_fail(err, err_size, "voxel instance %u: model %u of %u", i, in->model, NM);
            return -1;
        }
        if (!bk_vox_rot_matrix(bk_vox_rot_byte(in->m), chk) || memcmp(chk, in->m, 9)) {
            bk_fail(err, err_size, "voxel instance %u: rotation is not a signed permutation", i);
            return -1;
        }
    }
    for (uint32_t mi = 0; mi < NM; ++mi)
        for (int r = 0; r < 3; ++r)
            if (s->vox_models[mi].size[r] < 1 || s->vox_models[mi].size[r] > BK_VOX_MAX_SIZE) {
                bk_fail(err, err_size, "voxel model %u: size %u out of 1..%d", mi, s->vox_models[mi].size[r],
                        BK_VOX_MAX_SIZE);
                return -1;
            }
    return 0;
}

/* The worker count, the per-model, per-instance and per-chunk arrays, and each worker's scratch. */
static int build_alloc(vm_build *B)
{
    vm_ctx  *C = &B->C;
    uint32_t NI = B->NI, NM = B->NM, chunks = B->chunks;
    char    *err = B->err;
    size_t   err_size = B->err_size;
    int      nt;
    /* threads: never more than there are chunks of work (a lone prop runs on the caller's thread) */
    nt = bk_cpu_threads();
    if (nt < 1) nt = 1;
    if ((uint32_t)nt > chunks) nt = chunks ? (int)chunks : 1;
    if (nt > 64) nt = 64;
    B->nt = nt;
    C->models = calloc(NM ? NM : 1, sizeof(vm_model));
    C->xf = malloc(sizeof(vm_xf) * (NI ? NI : 1));
    C->chunk_worker = malloc(sizeof(uint32_t) * (chunks + 1));
    C->chunk_count = calloc(chunks + 1, sizeof(uint32_t));
    C->chunk_first = malloc(sizeof(size_t) * (chunks + 1));
    B->used = calloc(NM ? NM : 1, 1);
    B->W = calloc((size_t)nt, sizeof(vm_work));
    if (!C->models || !C->xf || !C->chunk_worker || !C->chunk_count || !C->chunk_first || !B->used || !B->W) {
        bk_fail(err, err_size, "voxel surface: out of memory");
        return -1;
    }
    for (int k = 0; k < nt; ++k) {
        vm_work *w = &B->W[k];
        w->C = C;
        w->id = k;
        w->ctab = malloc(sizeof(uint32_t) * BOX_CELLS * BOX_CELLS * BOX_CELLS);
        w->lbits = calloc((size_t)64 * BOX_CELLS * BOX_CELLS * BOX_CELLS, sizeof(uint64_t));
        w->hid = malloc((size_t)BK_VOX_MAX_SIZE * BK_VOX_MAX_SIZE);
        w->mask = calloc((size_t)BK_VOX_MAX_SIZE * BK_VOX_MAX_SIZE, 1);
        w->scratch = malloc(sizeof(vm_quad) * BK_VOX_MAX_SIZE * BK_VOX_MAX_SIZE);
        if (!w->ctab || !w->lbits || !w->hid || !w->mask || !w->scratch) {
            bk_fail(err, err_size, "voxel surface: out of memory");
            return -1;
        }
    }
    return 0;
}

/* Steps 1 to 3 on the workers: the models, the instance transforms and hash, the shared-cell
 * bitmaps, then each instance's quads. */
static int build_passes(vm_build *B)
{
    const bk_scene *s = B->s;
    bk_voxmesh     *out = B->out;
    vm_ctx         *C = &B->C;
    vm_work        *W = B->W;
    int             nt = B->nt;
    uint32_t        NI = B->NI;
    char           *err = B->err;
    size_t          err_size = B->err_size;
    /* models placed at least once */
    for (uint32_t i = 0; i < NI; ++i) B->used[s->vox_instances[i].model] = 1;
    C->used = B->used;
    run_workers(W, nt, work_models);
    if (atomic_load(&C->failed)) {
        bk_fail(err, err_size, "voxel surface: out of memory");
        return -1;
    }
    for (int k = 0; k < nt; ++k) {
        free(W[k].grid);
        W[k].grid = NULL;
        W[k].grid_cap = 0;
    }
    for (uint32_t i = 0; i < NI; ++i) {
        xf_init(s, &s->vox_instances[i], &C->xf[i]);
        out->voxel_count += s->vox_models[s->vox_instances[i].model].voxel_count;
    }
    if (NI && hash_build(C)) {
        bk_fail(err, err_size, "voxel surface: out of memory (%u instances)", NI);
        return -1;
    }
    atomic_store(&C->next, 0u);
    if (NI) run_workers(W, nt, work_raster);
    atomic_store(&C->next, 0u);
    run_workers(W, nt, work_instances);
    if (atomic_load(&C->failed)) {
        bk_fail(err, err_size, "voxel surface: out of memory");
        return -1;
    }
    return 0;
}

/* The quads in instance order: chunk after chunk, from whichever worker made each. */
static int build_gather(vm_build *B)
{
    bk_voxmesh *out = B->out;
    vm_ctx     *C = &B->C;
    vm_work    *W = B->W;
    int         nt = B->nt;
    uint32_t    chunks = B->chunks;
    char       *err = B->err;
    size_t      err_size = B->err_size;
    size_t      total = 0;
    for (uint32_t c = 0; c < chunks; ++c) total += C->chunk_count[c];
    for (int k = 0; k < nt; ++k) {
        out->hidden_faces += W[k].hidden;
        out->hide_steps += W[k].steps;
    }
    if (total >= BK_NONE / 2) {
        bk_fail(err, err_size, "voxel surface: %zu quads, more than a scene holds", total);
        return -1;
    }
    out->quads = bk_malloc_large(sizeof(bk_vox_quad) * (total + 1)); /* first touched by gather_chunks */
    size_t   *at = malloc(sizeof(size_t) * (chunks + 1));
    uint64_t *faces = malloc(sizeof(uint64_t) * (chunks + 1));
    if (!out->quads || !at || !faces) {
        free(at);
        free(faces);
        bk_fail(err, err_size, "voxel surface: out of memory for %zu quads", total);
        return -1;
    }
    at[0] = 0;
    for (uint32_t c = 0; c < chunks; ++c) at[c + 1] = at[c] + C->chunk_count[c];
    gather_job G = { C, W, out->quads, at, faces };
    bk_parallel_for(chunks, 16, gather_chunks, &G);
    for (uint32_t c = 0; c < chunks; ++c) out->face_count += faces[c];
    free(at);
    free(faces);
    out->quad_count = (uint32_t)total;
    for (int k = 0; k < nt; ++k) {
        free(W[k].quads);
        W[k].quads = NULL;
    }
    return 0;
}

static void build_free(vm_build *B)
{
    vm_ctx  *C = &B->C;
    vm_work *W = B->W;
    for (uint32_t mi = 0; C->models && mi < B->NM; ++mi) model_free(&C->models[mi]);
    for (int k = 0; W && k < B->nt; ++k) {
        free(W[k].quads);
        free(W[k].mask);
        free(W[k].scratch);
        free(W[k].ctab);
        free(W[k].lbits);
        free(W[k].hid);
        free(W[k].grid);
    }
    free(W);
    free(B->used);
    free(C->models);
    free(C->xf);
    free(C->chunk_worker);
    free(C->chunk_count);
    free(C->chunk_first);
    free(C->H.keys);
    free(C->H.start);
    free(C->H.count);
    free(C->H.list);
    free(C->H.bits_at);
    free((void *)C->H.bits);
}

int bk_voxmesh_build(const bk_scene *s, bk_voxmesh *out, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    memset(out, 0, sizeof *out);
    out->first_quad_tri = s->tri_count;
    vm_build B;
    memset(&B, 0, sizeof B);
    B.s = s;
    B.out = out;
    B.err = err;
    B.err_size = err_size;
    B.C.s = s;
    atomic_init(&B.C.next, 0u);
    atomic_init(&B.C.failed, 0);
    int rc = -1;
    B.NI = s->vox_instance_count;
    B.NM = s->vox_model_count;
    B.chunks = (B.NI + INST_CHUNK - 1) / INST_CHUNK;
    if (!build_check(&B) && !build_alloc(&B) && !build_passes(&B) && !build_gather(&B) &&
        !make_scene(s, out, err, err_size))
        rc = 0;
    build_free(&B);
    if (rc) bk_voxmesh_free(out);
    out->seconds = bk_time_now() - t0;
    return rc;
}

void bk_voxmesh_free(bk_voxmesh *m)
{
    if (!m) return;
    bk_scene_free(&m->scene);
    free(m->quads);
    memset(m, 0, sizeof *m);
}
