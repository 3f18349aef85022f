/* sides.c - double-sided shading triangles: their materials, and coincident twins of opposite
 * winding found by a hash table on their sorted corners (sides.h). */
#include "sides.h"
#include "bk_bake.h"

#include <math.h>
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

static uint64_t key_hash(const uint32_t key[9])
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 9; ++i) {
        h ^= key[i];
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 29;
    }
    return h;
}

/* One entry per distinct corner set: its first triangle, the hash's top bits (a filter before
 * the corners are compared), and the parities seen (bit p: a triangle of parity p). */
typedef struct side_slot {
    uint32_t head, tag;
    uint8_t  parities;
} side_slot;

/* The slot of t's corner set: found, or made in the first empty slot. */
static side_slot *slot_of(const bk_scene *s, side_slot *tab, size_t mask, uint32_t t, const uint32_t key[9])
{
    const uint64_t h = key_hash(key);
    const uint32_t tag = (uint32_t)(h >> 32);
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        side_slot *e = &tab[i];
        if (e->head == BK_NONE) {
            e->head = t;
            e->tag = tag;
            return e;
        }
        uint32_t other[9];
        if (e->tag == tag && tri_key(s, e->head, other) >= 0 && !memcmp(other, key, sizeof other)) return e;
    }
}

int bk_bake_tri_sides(const bk_scene *s, uint32_t n, bk_f4 *tris, uint32_t *count)
{
    size_t cap = 16;
    while (cap < (size_t)n + n / 2) cap *= 2;
    side_slot *tab = cap <= BK_NONE ? malloc(sizeof(side_slot) * cap) : NULL;
    uint32_t  *slot = malloc(sizeof(uint32_t) * (n ? n : 1)); /* each triangle's, BK_NONE: no twin possible */
    if (!tab || !slot) {
        free(tab);
        free(slot);
        return -1;
    }
    for (size_t i = 0; i < cap; ++i) {
        tab[i].head = BK_NONE;
        tab[i].parities = 0;
    }
    uint32_t key[9];
    for (uint32_t t = 0; t < n; ++t) {
        int par = tri_key(s, t, key);
        slot[t] = BK_NONE;
        if (par < 0) continue;
        side_slot *e = slot_of(s, tab, cap - 1, t, key);
        e->parities |= (uint8_t)(1u << par);
        slot[t] = (uint32_t)(e - tab);
    }
    uint32_t ds = 0;
    for (uint32_t t = 0; t < n; ++t) {
        uint32_t m = s->tri_material ? s->tri_material[t] : BK_NONE, f = 0;
        if (m != BK_NONE && m < s->material_count && s->materials[m].double_sided) f |= BK_BTRI_DOUBLE_SIDED;
        if (slot[t] != BK_NONE && tab[slot[t]].parities == 3u) f |= BK_BTRI_DOUBLE_SIDED | BK_BTRI_TWIN;
        tris[3 * (size_t)t + 1].w = bk_bits_float(f);
        ds += f != 0;
    }
    free(tab);
    free(slot);
    if (count) *count = ds;
    return 0;
}
