/* unit_gpu_ops.c - the CPU twins of the GPU primitives (src/gpu_ops/gpu_ops_cpu.c) on their own, so CI checks
 * the reference that tests/gpu_ops.c trusts: identities at n = 0, exact integer results, float
 * sums in double, histograms against a naive count, and the radix sort against a stable
 * insertion-free reference (qsort on (masked key, input position)) for every end_bit. */
#include "bk_test.h"
#include "gpu_ops.h"

#include <math.h>
#include <stdint.h>

static uint64_t rng = 12345;
static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

typedef struct item {
    uint64_t key;
    uint32_t val;
    uint32_t pos;
} item;
static uint64_t cmp_mask;
static int      cmp_item(const void *a, const void *b)
{
    const item *x = a, *y = b;
    uint64_t    kx = x->key & cmp_mask, ky = y->key & cmp_mask;
    if (kx != ky) return kx < ky ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void check_sort(uint64_t n, int key_bits, int end_bit, int dup)
{
    item     *it = malloc(sizeof(item) * (n + 1));
    uint64_t *k64 = malloc(8 * (n + 1));
    uint32_t *k32 = malloc(4 * (n + 1)), *vals = malloc(4 * (n + 1));
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t r = rnd();
        if (dup) r = (r & ~0xFFull) | (r >> 9) % 5;
        if (key_bits == 32) r = (uint32_t)r;
        it[i].key = r;
        it[i].val = (uint32_t)rnd();
        it[i].pos = (uint32_t)i;
        k64[i] = r;
        k32[i] = (uint32_t)r;
        vals[i] = it[i].val;
    }
    cmp_mask = end_bit >= 64 ? ~0ull : (1ull << end_bit) - 1;
    qsort(it, n, sizeof(item), cmp_item);
    int rc = key_bits == 32 ? bk_gpu_ops_cpu_sort_pairs_u32(k32, vals, n, end_bit)
                            : bk_gpu_ops_cpu_sort_pairs_u64(k64, vals, n, end_bit);
    BK_EXPECT(rc == 0);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t k = key_bits == 32 ? k32[i] : k64[i];
        if (k != it[i].key || vals[i] != it[i].val) bad++;
    }
    BK_EXPECTF(bad == 0, "cpu sort u%d n=%llu end_bit=%d dup=%d: %llu pairs differ from the stable reference", key_bits,
               (unsigned long long)n, end_bit, dup, (unsigned long long)bad);
    free(it);
    free(k64);
    free(k32);
    free(vals);
}

int main(void)
{
    /* identities */
    BK_EXPECT(bk_gpu_ops_cpu_sum_f32(NULL, 0) == 0.0);
    BK_EXPECT(isinf(bk_gpu_ops_cpu_min_f32(NULL, 0)) && bk_gpu_ops_cpu_min_f32(NULL, 0) > 0);
    BK_EXPECT(isinf(bk_gpu_ops_cpu_max_f32(NULL, 0)) && bk_gpu_ops_cpu_max_f32(NULL, 0) < 0);
    BK_EXPECT(bk_gpu_ops_cpu_sum_u32(NULL, 0) == 0 && bk_gpu_ops_cpu_min_u32(NULL, 0) == UINT32_MAX &&
              bk_gpu_ops_cpu_max_u32(NULL, 0) == 0);
    BK_EXPECT(bk_gpu_ops_cpu_min_i32(NULL, 0) == INT32_MAX && bk_gpu_ops_cpu_max_i32(NULL, 0) == INT32_MIN);

    /* exact results */
    enum { N = 100003 };
    uint32_t *u = malloc(4 * N);
    int32_t  *s = malloc(4 * N);
    float    *f = malloc(4 * N);
    for (uint32_t i = 0; i < N; ++i) {
        u[i] = 0xFFFFFFFFu - i;
        s[i] = (i & 1) ? -(int32_t)i : (int32_t)i;
        f[i] = 0.1f;
    }
    BK_EXPECT(bk_gpu_ops_cpu_sum_u32(u, N) == (uint64_t)N * 0xFFFFFFFFull - (uint64_t)N * (N - 1) / 2); /* past 2^32 */
    BK_EXPECT(bk_gpu_ops_cpu_min_u32(u, N) == 0xFFFFFFFFu - (N - 1) && bk_gpu_ops_cpu_max_u32(u, N) == 0xFFFFFFFFu);
    BK_EXPECT(bk_gpu_ops_cpu_sum_i32(s, N) == 50001); /* 0 - 1 + 2 - ... - 100001 + 100002 */
    BK_EXPECT(bk_gpu_ops_cpu_min_i32(s, N) == -100001 && bk_gpu_ops_cpu_max_i32(s, N) == 100002);
    double fs = bk_gpu_ops_cpu_sum_f32(f, N);
    BK_EXPECTF(fabs(fs - N * (double)0.1f) < 1e-6, "sum of 0.1f: %.12f", fs); /* float accumulation would drift ~1e-2 */
    f[777] = -3.5f;
    f[778] = NAN;
    f[9000] = 7.25f;
    BK_EXPECT(bk_gpu_ops_cpu_min_f32(f, N) == -3.5f && bk_gpu_ops_cpu_max_f32(f, N) == 7.25f); /* NaN ignored */

    /* histogram */
    uint32_t counts[300], naive[300];
    for (uint32_t i = 0; i < N; ++i) u[i] = (uint32_t)(rnd() % 320);
    bk_gpu_ops_cpu_histogram_u32(u, N, 300, counts);
    memset(naive, 0, sizeof naive);
    uint64_t total = 0;
    for (uint32_t i = 0; i < N; ++i)
        if (u[i] < 300) naive[u[i]]++;
    for (int b = 0; b < 300; ++b) {
        BK_EXPECT(counts[b] == naive[b]);
        total += counts[b];
    }
    BK_EXPECT(total < N && total > N * 9 / 10); /* keys >= bins ignored */
    bk_gpu_ops_cpu_histogram_u32(u, 0, 300, counts);
    BK_EXPECT(counts[0] == 0 && counts[299] == 0);
    free(u);
    free(s);
    free(f);

    /* sort */
    static const uint64_t sizes[] = { 0, 1, 2, 3, 17, 256, 257, 4099, 65537 };
    static const int      ends32[] = { 1, 7, 8, 9, 16, 30, 32 }, ends64[] = { 1, 8, 33, 40, 63, 64 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        for (size_t e = 0; e < sizeof ends32 / sizeof ends32[0]; ++e)
            for (int dup = 0; dup < 2; ++dup) check_sort(sizes[i], 32, ends32[e], dup);
        for (size_t e = 0; e < sizeof ends64 / sizeof ends64[0]; ++e)
            for (int dup = 0; dup < 2; ++dup) check_sort(sizes[i], 64, ends64[e], dup);
    }
    uint32_t k = 5, v = 6;
    BK_EXPECT(bk_gpu_ops_cpu_sort_pairs_u32(&k, &v, 1, 0) < 0 && bk_gpu_ops_cpu_sort_pairs_u32(&k, &v, 1, 33) < 0);
    BK_TEST_DONE();
}
