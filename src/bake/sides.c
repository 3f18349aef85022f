/* sides.c - double-sided shading triangles: their materials, and coincident twins of opposite
 * winding found by sorting the triangles on a hash of their sorted corners (sides.h). */
#include "sides.h"
#include "bk_bake.h"
#include "pool.h"
#include "sort.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A triangle's corners as 9 position words in a canonical order (corners sorted by their bits),
 * and the parity of the sort: two triangles with the same words are the same three points, with
 * the same winding when their parities agree. -1: no twin possible (two equal corners, a NaN). */
static int tri_key(const bk_scene *s, uint32_t t, uint32_t key[9])
{
    uint32_t c[3][3];
    for (int v = 0; v < 3; ++v)
        for (int k = 0; k < 3; ++k) {
            float f = s->positions[3 * (size_t)s->tri_v[3 * (size_t)t + v] + k];
            if (isnan(f)) return -1;
            c[v][k] = f == 0.0f ? 0u : bk_float_bits(f); /* -0 is 0 */
        }
    int o[3] = { 0, 1, 2 }, parity = 0;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2 - i; ++j) {
            int cmp = memcmp(c[o[j]], c[o[j + 1]], sizeof c[0]);
            if (cmp == 0) return -1;
            if (cmp > 0) {
                int x = o[j];
                o[j] = o[j + 1];
                o[j + 1] = x;
                parity ^= 1;
            }
        }
    for (int v = 0; v < 3; ++v) memcpy(key + 3 * v, c[o[v]], sizeof c[0]);
    return parity;
}

static uint32_t key_hash(const uint32_t key[9])
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 9; ++i) {
        h ^= key[i];
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
    }
    return (uint32_t)(h >> 32);
}

/* A triangle in the sort: its key's hash, itself, and its parity (bit 31 of t; t < 2^31 since
 * bk_scene counts triangles in 32 bits and needs 3 words each). Invalid triangles stay out. */
typedef struct side_rec {
    uint32_t hash, t;
} side_rec;

typedef struct sides_job {
    const bk_scene  *s;
    uint32_t         n;
    bk_f4           *tris;
    side_rec        *rec;
    uint32_t        *at; /* per chunk of SIDES_CHUNK triangles: its records' count, then its first */
    uint32_t         nrec;
    _Atomic uint32_t ds;
    atomic_int       failed;
} sides_job;

#define SIDES_CHUNK 16384u

/* Each triangle's material bit, its key's hash and parity, into its chunk's records. */
static void sides_key_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sides_job      *j = ctx;
    const bk_scene *s = j->s;
    for (size_t c = begin; c < end; ++c) {
        const uint32_t t0 = (uint32_t)c * SIDES_CHUNK, t1 = j->n - t0 < SIDES_CHUNK ? j->n : t0 + SIDES_CHUNK;
        uint32_t       k = 0, key[9];
        side_rec      *r = j->rec + t0;
        for (uint32_t t = t0; t < t1; ++t) {
            uint32_t m = s->tri_material ? s->tri_material[t] : BK_NONE, f = 0;
            if (m != BK_NONE && m < s->material_count && s->materials[m].double_sided) f = BK_BTRI_DOUBLE_SIDED;
            j->tris[3 * (size_t)t + 1].w = bk_bits_float(f);
            int par = tri_key(s, t, key);
            if (par < 0) continue;
            r[k].hash = key_hash(key);
            r[k++].t = t | (uint32_t)par << 31;
        }
        j->at[c] = k;
    }
}

/* Chunk c's records moved down to their place in the compacted list (chunks in order). */
static void sides_pack_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sides_job *j = ctx;
    for (size_t c = begin; c < end; ++c) {
        const uint32_t from = (uint32_t)c * SIDES_CHUNK, to = j->at[c], k = j->at[c + 1] - to;
        if (to != from) memmove(j->rec + to, j->rec + from, sizeof(side_rec) * k);
    }
}

/* The triangles of one set (the same corners) in the run r[i, e) whose head is r[a]: marked
 * done, and made twins when the set holds both windings. */
static void sides_set(sides_job *j, const side_rec *r, size_t a, size_t e, uint8_t *done, size_t i)
{
    uint32_t ka[9], km[9], par = 0;
    tri_key(j->s, r[a].t & 0x7fffffffu, ka);
    for (size_t m = a; m < e; ++m) {
        if (done[m - i]) continue;
        if (m > a) {
            tri_key(j->s, r[m].t & 0x7fffffffu, km);
            if (memcmp(km, ka, sizeof km)) continue;
        }
        done[m - i] = 1 + (uint8_t)(r[m].t >> 31); /* 1, 2: in this set, its parity */
        par |= 1u << (r[m].t >> 31);
    }
    if (par != 3u) {
        for (size_t m = a; m < e; ++m) done[m - i] = done[m - i] ? 3 : 0; /* 3: done, no twin */
        return;
    }
    for (size_t m = a; m < e; ++m) {
        if (done[m - i] == 3 || !done[m - i]) continue;
        bk_f4 *w = &j->tris[3 * (size_t)(r[m].t & 0x7fffffffu) + 1];
        w->w = bk_bits_float(bk_float_bits(w->w) | BK_BTRI_DOUBLE_SIDED | BK_BTRI_TWIN);
        done[m - i] = 3;
    }
}

/* The runs of equal hash that start in [begin, end) of the sorted records: in each, the
 * triangles with the same corners (compared word by word: different corners may share a hash)
 * form a set, and a set with both parities is a set of twins. Most runs are one triangle, a
 * twin's two. */
static void sides_run_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sides_job      *j = ctx;
    const side_rec *r = j->rec;
    const uint32_t  n = j->nrec;
    size_t          i = begin;
    uint8_t         small[64], *done = small;
    size_t          cap = sizeof small;
    while (i > 0 && i < n && r[i].hash == r[i - 1].hash) ++i; /* that run is the chunk before's */
    while (i < end && i < n) {
        size_t e = i + 1;
        while (e < n && r[e].hash == r[i].hash) ++e;
        if (e - i > 1) {
            if (e - i > cap) {
                uint8_t *d = malloc(e - i);
                if (!d) {
                    atomic_store(&j->failed, 1);
                    break;
                }
                if (done != small) free(done);
                done = d;
                cap = e - i;
            }
            memset(done, 0, e - i);
            for (size_t a = i; a < e; ++a)
                if (!done[a - i]) sides_set(j, r, a, e, done, i);
        }
        i = e;
    }
    if (done != small) free(done);
}

/* How many triangles of [begin, end) are double-sided. */
static void sides_count_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    sides_job *j = ctx;
    uint32_t   k = 0;
    for (size_t t = begin; t < end; ++t) k += bk_float_bits(j->tris[3 * t + 1].w) != 0;
    atomic_fetch_add(&j->ds, k);
}

int bk_bake_tri_sides(const bk_scene *s, uint32_t n, bk_f4 *tris, uint32_t *count)
{
    sides_job j;
    memset(&j, 0, sizeof j);
    j.s = s;
    j.n = n;
    j.tris = tris;
    const size_t chunks = ((size_t)n + SIDES_CHUNK - 1) / SIDES_CHUNK;
    j.rec = malloc(sizeof(side_rec) * (n ? n : 1));
    j.at = malloc(sizeof(uint32_t) * (chunks + 1));
    atomic_init(&j.ds, 0);
    atomic_init(&j.failed, 0);
    if (!j.rec || !j.at || n > 0x7fffffffu) {
        free(j.rec);
        free(j.at);
        return -1;
    }
    bk_parallel_for(chunks, 1, sides_key_fn, &j);
    uint32_t sum = 0; /* each chunk's count -> its first record in the compacted list */
    for (size_t c = 0; c < chunks; ++c) {
        uint32_t k = j.at[c];
        j.at[c] = sum;
        sum += k;
    }
    j.at[chunks] = sum;
    j.nrec = sum;
    /* (in place and in order: chunk c's records only move down, past those of chunks before it,
     * which are already in place; so the chunks go one after another) */
    sides_pack_fn(&j, 0, chunks, 0);
    bk_sort_spec sp = bk_sort_spec_of(sizeof(side_rec), offsetof(side_rec, hash), 4);
    sp.parallel = 1;
    int rc = bk_sort_radix(j.rec, j.nrec, &sp);
    if (!rc) bk_parallel_for(j.nrec, 65536, sides_run_fn, &j);
    if (!rc && atomic_load(&j.failed)) rc = -1;
    if (!rc && count) {
        bk_parallel_for(n, 65536, sides_count_fn, &j);
        *count = atomic_load(&j.ds);
    }
    free(j.rec);
    free(j.at);
    return rc;
}
