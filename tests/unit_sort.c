/* unit_sort.c - the host's one radix sort (src/base/sort.c) against a stable reference (qsort on
 * (masked key, input position)): records of 4, 12 and 16 bytes with 32- and 64-bit keys at
 * different offsets, values carried beside them, the caller's scratch, every path (insertion,
 * 8- and 16-bit digits, the pool's slices for 1 to 4 threads) and bad specs refused. */
#include "bk_test.h"
#include "pool.h"
#include "sort.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 99;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct ref {
    uint64_t key;
    uint32_t pos;
} ref;
static int ref_cmp(const void *pa, const void *pb)
{
    const ref *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* n records of size bytes (each byte random, the record's position in its last 4 bytes when
 * they are not the key's), sorted by the key_bytes key at key_off on its bits [0, end_bit). */
static void check(size_t n, size_t size, size_t key_off, int key_bytes, int end_bit, int vals, int par, int dup)
{
    unsigned char *a = malloc(size * n + 1), *orig = malloc(size * n + 1);
    uint32_t      *v = vals ? malloc(4 * n + 1) : NULL;
    ref           *r = malloc(sizeof(ref) * n + 1);
    int            bits = end_bit ? end_bit : 8 * key_bytes;
    uint64_t       mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    for (size_t i = 0; i < size * n; ++i) a[i] = (unsigned char)rnd();
    for (size_t i = 0; i < n; ++i) {
        if (dup) {
            uint64_t k = rnd() % 7;
            memcpy(a + i * size + key_off, &k, (size_t)key_bytes);
        }
        uint64_t k = 0;
        memcpy(&k, a + i * size + key_off, (size_t)key_bytes);
        r[i].key = k & mask;
        r[i].pos = (uint32_t)i;
        if (v) v[i] = (uint32_t)i;
    }
    memcpy(orig, a, size * n);
    qsort(r, n, sizeof(ref), ref_cmp);
    bk_sort_spec sp = bk_sort_spec_of(size, key_off, key_bytes);
    sp.end_bit = end_bit;
    sp.parallel = par;
    if (v) {
        sp.vals = v;
        sp.val_size = 4;
    }
    size_t        *cnt = !par ? malloc(sizeof(size_t) * BK_SORT_COUNTS) : NULL;
    unsigned char *tmp = n % 2 ? malloc(size * n + 1) : NULL;
    sp.counts = cnt;
    sp.tmp = tmp;
    BK_EXPECT(bk_sort_radix(a, n, &sp) == 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        if (memcmp(a + i * size, orig + (size_t)r[i].pos * size, size) != 0) bad++;
        else if (v && v[i] != r[i].pos) bad++;
    }
    BK_EXPECTF(bad == 0, "n=%zu size=%zu key %d B at %zu end_bit=%d vals=%d par=%d dup=%d threads=%d: %zu differ", n,
               size, key_bytes, key_off, end_bit, vals, par, dup, bk_pool_threads(), bad);
    free(a);
    free(orig);
    free(v);
    free(r);
    free(cnt);
    free(tmp);
}

int main(void)
{
    static const size_t sizes[] = { 0, 1, 5, 32, 33, 300, 4099, 65536, 140001 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        for (int dup = 0; dup < 2; ++dup) {
            size_t n = sizes[i];
            check(n, 16, 0, 8, 0, 0, 0, dup);
            check(n, 16, 8, 4, 0, 1, 0, dup);
            check(n, 12, 4, 8, 40, 0, 0, dup);
            check(n, 4, 0, 4, 20, 1, 0, dup);
        }
    static const int threads[] = { 1, 2, 3, 4 };
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; ++t) {
        bk_pool_set_threads(threads[t]);
        for (int dup = 0; dup < 2; ++dup) {
            check(200003, 16, 0, 8, 0, 0, 1, dup);
            check(140000, 16, 8, 4, 0, 1, 1, dup);
            check(150001, 8, 0, 8, 37, 1, 1, dup);
        }
    }
    bk_sort_spec sp = bk_sort_spec_of(8, 0, 2);
    uint64_t     k[2] = { 2, 1 };
    BK_EXPECT(bk_sort_radix(k, 2, &sp) < 0);
    sp = bk_sort_spec_of(8, 0, 4);
    sp.end_bit = 33;
    BK_EXPECT(bk_sort_radix(k, 2, &sp) < 0 && k[0] == 2);
    BK_TEST_DONE();
}
