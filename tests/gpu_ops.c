/* gpu_ops.c - the GPU primitives (kernels/gpu_ops/gpu_ops.cu) against their CPU twins (src/gpu_ops/gpu_ops_cpu.c) on
 * seeded random data of awkward sizes: 0, 1, 2^k +- 1, tile sizes +- 1, primes, and 2^24 + 43.
 * Integers must match exactly; float sums lie within n * eps * sum|x| of the double sum. Sorts are
 * also checked on their own: the values (input positions) form a permutation, every key is the
 * input key at its value's position, keys are ordered by their low end_bit bits, and equal keys
 * keep input order. Outputs are poisoned before every GPU run; misaligned inputs run the head and
 * tail paths; every variant of every kernel runs. Skips (77) without a usable GPU. */
#include "bk_test.h"
#include "gpu_ops.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) /* splitmix64 */
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static char err[512];
static int  quick; /* BK_TEST_QUICK=1: sizes up to 70,000 only; =2: sorts up to 13,000 only (for compute-sanitizer) */
#define OK(call) BK_EXPECTF((call) == 0, "%s", err)

static const uint64_t sizes[] = { 0,
                                  1,
                                  2,
                                  3,
                                  4,
                                  5,
                                  7,
                                  31,
                                  32,
                                  33,
                                  255,
                                  256,
                                  257,
                                  1023,
                                  1024,
                                  1025,
                                  3071,
                                  3073,
                                  4095,
                                  4096,
                                  4097,
                                  4603,
                                  4608,
                                  4609,
                                  6143,
                                  6144,
                                  6145,
                                  6655,
                                  6657,
                                  8831,
                                  8833,
                                  11775,
                                  11777,
                                  65535,
                                  65536,
                                  65537,
                                  99991,
                                  1000003,
                                  (1u << 20) + 1,
                                  (1u << 22) - 1,
                                  16777259 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

/* ---- reductions ---- */

static void test_reduce(bk_gpu_ops *p, uint64_t n)
{
    if (quick && n > (quick > 1 ? 13000u : 70000u)) return;
    const uint64_t cap = n + 3;
    float         *f = malloc(4 * cap);
    uint32_t      *u = malloc(4 * cap);
    int32_t       *s = malloc(4 * cap);
    for (uint64_t i = 0; i < cap; ++i) {
        uint64_t r = rnd();
        /* signs mixed, magnitudes over 6 decades: cancellation is real */
        f[i] = (float)((double)(r >> 40) / (double)(1u << 24) - 0.5) * powf(10.0f, (float)(int)(r % 7) - 3.0f);
        u[i] = (uint32_t)(r >> 3);
        s[i] = (int32_t)(uint32_t)(r >> 17);
    }
    float    *d_f = bk_gpu_ops_dev_alloc(4 * cap, err, sizeof err);
    uint32_t *d_u = bk_gpu_ops_dev_alloc(4 * cap, err, sizeof err);
    int32_t  *d_s = bk_gpu_ops_dev_alloc(4 * cap, err, sizeof err);
    void     *d_out = bk_gpu_ops_dev_alloc(8, err, sizeof err);
    OK(bk_gpu_ops_to_dev(d_f, f, 4 * cap, err, sizeof err));
    OK(bk_gpu_ops_to_dev(d_u, u, 4 * cap, err, sizeof err));
    OK(bk_gpu_ops_to_dev(d_s, s, 4 * cap, err, sizeof err));
    /* Offsets 1..3 start off a 16-byte boundary: the unaligned head path. */
    const int offs = n <= 100000 ? 4 : 2;
    for (int off = 0; off < offs; ++off) {
        const float    *hf = f + off;
        const uint32_t *hu = u + off;
        const int32_t  *hs = s + off;
        double          abs_sum = 0;
        for (uint64_t i = 0; i < n; ++i) abs_sum += fabs((double)hf[i]);
        float    gf;
        uint64_t g64;
        uint32_t g32;
        int64_t  gi64;
        int32_t  gi32;
#define RUN(call, out)                                                    \
    do {                                                                  \
        OK(bk_gpu_ops_dev_fill(d_out, 0xAB, 8, err, sizeof err));         \
        OK(call);                                                         \
        OK(bk_gpu_ops_to_host(&out, d_out, sizeof out, err, sizeof err)); \
    } while (0)
        RUN(bk_gpu_ops_reduce_sum_f32(p, d_f + off, n, d_out, err, sizeof err), gf);
        double ref = bk_gpu_ops_cpu_sum_f32(hf, n);
        double bound = (double)(n ? n : 1) * FLT_EPSILON * abs_sum + 1e-30;
        BK_EXPECTF(fabs((double)gf - ref) <= bound, "sum_f32 n=%llu off=%d: gpu %.9g cpu %.17g bound %.3g",
                   (unsigned long long)n, off, gf, ref, bound);
        /* What the design promises, about n times tighter: float sums of 16 or 32 loaded values (a tree of
         * depth 4 or 5), a double accumulator, one rounding to float. */
        double tight = (6.0 + (double)n / 536870912.0) * FLT_EPSILON * abs_sum + FLT_EPSILON * fabs(ref) + 1e-30;
        BK_EXPECTF(fabs((double)gf - ref) <= tight,
                   "sum_f32 n=%llu off=%d: gpu %.9g cpu %.17g, over the design bound %.3g", (unsigned long long)n, off,
                   gf, ref, tight);
        RUN(bk_gpu_ops_reduce_min_f32(p, d_f + off, n, d_out, err, sizeof err), gf);
        BK_EXPECTF(gf == bk_gpu_ops_cpu_min_f32(hf, n), "min_f32 n=%llu off=%d: %g vs %g", (unsigned long long)n, off,
                   gf, bk_gpu_ops_cpu_min_f32(hf, n));
        RUN(bk_gpu_ops_reduce_max_f32(p, d_f + off, n, d_out, err, sizeof err), gf);
        BK_EXPECTF(gf == bk_gpu_ops_cpu_max_f32(hf, n), "max_f32 n=%llu off=%d: %g vs %g", (unsigned long long)n, off,
                   gf, bk_gpu_ops_cpu_max_f32(hf, n));
        RUN(bk_gpu_ops_reduce_sum_u32(p, d_u + off, n, d_out, err, sizeof err), g64);
        BK_EXPECTF(g64 == bk_gpu_ops_cpu_sum_u32(hu, n), "sum_u32 n=%llu off=%d", (unsigned long long)n, off);
        RUN(bk_gpu_ops_reduce_min_u32(p, d_u + off, n, d_out, err, sizeof err), g32);
        BK_EXPECTF(g32 == bk_gpu_ops_cpu_min_u32(hu, n), "min_u32 n=%llu off=%d", (unsigned long long)n, off);
        RUN(bk_gpu_ops_reduce_max_u32(p, d_u + off, n, d_out, err, sizeof err), g32);
        BK_EXPECTF(g32 == bk_gpu_ops_cpu_max_u32(hu, n), "max_u32 n=%llu off=%d", (unsigned long long)n, off);
        RUN(bk_gpu_ops_reduce_sum_i32(p, d_s + off, n, d_out, err, sizeof err), gi64);
        BK_EXPECTF(gi64 == bk_gpu_ops_cpu_sum_i32(hs, n), "sum_i32 n=%llu off=%d: %lld vs %lld", (unsigned long long)n,
                   off, (long long)gi64, (long long)bk_gpu_ops_cpu_sum_i32(hs, n));
        RUN(bk_gpu_ops_reduce_min_i32(p, d_s + off, n, d_out, err, sizeof err), gi32);
        BK_EXPECTF(gi32 == bk_gpu_ops_cpu_min_i32(hs, n), "min_i32 n=%llu off=%d", (unsigned long long)n, off);
        RUN(bk_gpu_ops_reduce_max_i32(p, d_s + off, n, d_out, err, sizeof err), gi32);
        BK_EXPECTF(gi32 == bk_gpu_ops_cpu_max_i32(hs, n), "max_i32 n=%llu off=%d", (unsigned long long)n, off);
#undef RUN
    }
    bk_gpu_ops_dev_free(d_f);
    bk_gpu_ops_dev_free(d_u);
    bk_gpu_ops_dev_free(d_s);
    bk_gpu_ops_dev_free(d_out);
    free(f);
    free(u);
    free(s);
}

/* ---- histogram ---- */

static void test_histogram(bk_gpu_ops *p, uint64_t n, uint32_t bins, int skewed, int off)
{
    if (quick && n > (quick > 1 ? 13000u : 70000u)) return;
    uint32_t      *keys = malloc(4 * (n + 4)), *ref = malloc(4 * (size_t)bins + 4), *got = malloc(4 * (size_t)bins + 4);
    const uint32_t range = bins + bins / 8 + 1; /* about 1 in 9 keys out of range: ignored */
    for (uint64_t i = 0; i < n + 4; ++i)
        keys[i] = skewed ? (i % 5 ? bins / 2 : (uint32_t)rnd()) : (uint32_t)(rnd() % range);
    bk_gpu_ops_cpu_histogram_u32(keys + off, n, bins, ref);
    uint32_t *d_keys = bk_gpu_ops_dev_alloc(4 * (n + 4), err, sizeof err);
    uint32_t *d_counts = bk_gpu_ops_dev_alloc(4 * (size_t)bins, err, sizeof err);
    OK(bk_gpu_ops_to_dev(d_keys, keys, 4 * (n + 4), err, sizeof err));
    for (int v = 0; v <= bk_gpu_ops_variant_count(BK_GPU_OP_HISTOGRAM); ++v) {
        OK(bk_gpu_ops_set_variant(p, BK_GPU_OP_HISTOGRAM, v, err, sizeof err));
        OK(bk_gpu_ops_dev_fill(d_counts, 0xAB, 4 * (size_t)bins, err, sizeof err));
        OK(bk_gpu_ops_histogram_u32(p, d_keys + off, n, bins, d_counts, err, sizeof err));
        OK(bk_gpu_ops_to_host(got, d_counts, 4 * (size_t)bins, err, sizeof err));
        uint64_t bad = 0;
        for (uint32_t b = 0; b < bins; ++b)
            if (got[b] != ref[b] && bad++ < 3)
                fprintf(stderr, "  histogram n=%llu bins=%u %s variant %d: bin %u gpu %u cpu %u\n",
                        (unsigned long long)n, bins, skewed ? "skewed" : "uniform", v, b, got[b], ref[b]);
        BK_EXPECTF(bad == 0, "histogram n=%llu bins=%u off=%d %s variant %s: %llu bins differ", (unsigned long long)n,
                   bins, off, skewed ? "skewed" : "uniform", bk_gpu_ops_variant_name(BK_GPU_OP_HISTOGRAM, v),
                   (unsigned long long)bad);
    }
    OK(bk_gpu_ops_set_variant(p, BK_GPU_OP_HISTOGRAM, 0, err, sizeof err));
    bk_gpu_ops_dev_free(d_keys);
    bk_gpu_ops_dev_free(d_counts);
    free(keys);
    free(ref);
    free(got);
}

/* ---- sort ---- */

/* Keys: full-width random, or few distinct values (long runs of equal keys: stability matters),
 * with random bits above end_bit that must travel along unsorted. */
static void make_keys(uint64_t *k, uint64_t n, int key_bits, int dup)
{
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t r = rnd();
        if (dup) r = (r & ~0xFFFFull) | ((r >> 7) % 13) * 0x1111ull; /* 13 distinct low 16-bit patterns */
        k[i] = key_bits == 32 ? (uint32_t)r : r;
    }
}

/* Checks that need no reference: permutation, keys follow values, order, stability. */
static uint64_t verify_sorted(const uint64_t *in, const uint64_t *out, const uint32_t *vals, uint64_t n, int end_bit)
{
    const uint64_t mask = end_bit >= 64 ? ~0ull : (1ull << end_bit) - 1;
    uint8_t       *seen = calloc(n ? n : 1, 1);
    uint64_t       bad = 0;
    for (uint64_t j = 0; j < n; ++j) {
        const uint32_t v = vals[j];
        if (v >= n || seen[v]) {
            bad++;
            continue;
        }
        seen[v] = 1;
        if (out[j] != in[v]) bad++;
        if (j > 0) {
            const uint64_t a = out[j - 1] & mask, b = out[j] & mask;
            if (a > b || (a == b && vals[j - 1] > v)) bad++;
        }
    }
    free(seen);
    return bad;
}

static void test_sort(bk_gpu_ops *p, uint64_t n, int key_bits, int end_bit, int dup, int variant, int in_place)
{
    if (quick && n > (quick > 1 ? 13000u : 70000u)) return;
    const size_t ks = key_bits / 8;
    uint64_t    *k64 = malloc(8 * (n + 1)), *out64 = calloc(n + 1, 8), *ref64 = malloc(8 * (n + 1));
    uint32_t    *vals = malloc(4 * (n + 1)), *ref_vals = malloc(4 * (n + 1)), *got_vals = malloc(4 * (n + 1));
    void        *host_keys = malloc(ks * (n + 1)), *got_keys = malloc(ks * (n + 1));
    make_keys(k64, n, key_bits, dup);
    for (uint64_t i = 0; i < n; ++i) {
        vals[i] = (uint32_t)i;
        if (key_bits == 32) ((uint32_t *)host_keys)[i] = (uint32_t)k64[i];
        else ((uint64_t *)host_keys)[i] = k64[i];
    }
    /* CPU twin */
    memcpy(ref_vals, vals, 4 * n);
    if (key_bits == 32) {
        uint32_t *rk = malloc(4 * (n + 1));
        memcpy(rk, host_keys, 4 * n);
        BK_EXPECT(bk_gpu_ops_cpu_sort_pairs_u32(rk, ref_vals, n, end_bit) == 0);
        for (uint64_t i = 0; i < n; ++i) ref64[i] = rk[i];
        free(rk);
    } else {
        memcpy(ref64, k64, 8 * n);
        BK_EXPECT(bk_gpu_ops_cpu_sort_pairs_u64(ref64, ref_vals, n, end_bit) == 0);
    }
    /* GPU */
    void *d_kin = bk_gpu_ops_dev_alloc(ks * (n + 1), err, sizeof err),
         *d_kout = bk_gpu_ops_dev_alloc(ks * (n + 1), err, sizeof err);
    uint32_t *d_vin = bk_gpu_ops_dev_alloc(4 * (n + 1), err, sizeof err),
             *d_vout = bk_gpu_ops_dev_alloc(4 * (n + 1), err, sizeof err);
    OK(bk_gpu_ops_to_dev(d_kin, host_keys, ks * n, err, sizeof err));
    OK(bk_gpu_ops_to_dev(d_vin, vals, 4 * n, err, sizeof err));
    if (!in_place) {
        OK(bk_gpu_ops_dev_fill(d_kout, 0xAB, ks * (n + 1), err, sizeof err));
        OK(bk_gpu_ops_dev_fill(d_vout, 0xAB, 4 * (n + 1), err, sizeof err));
    } else {
        /* the element past the end must survive */
        OK(bk_gpu_ops_dev_fill((char *)d_kin + ks * n, 0xAB, ks, err, sizeof err));
        OK(bk_gpu_ops_dev_fill(d_vin + n, 0xAB, 4, err, sizeof err));
    }
    void     *kout = in_place ? d_kin : d_kout;
    uint32_t *vout = in_place ? d_vin : d_vout;
    OK(bk_gpu_ops_set_variant(p, key_bits == 32 ? BK_GPU_OP_SORT32 : BK_GPU_OP_SORT64, variant, err, sizeof err));
    if (key_bits == 32) OK(bk_gpu_ops_sort_pairs_u32(p, d_kin, kout, d_vin, vout, n, end_bit, err, sizeof err));
    else OK(bk_gpu_ops_sort_pairs_u64(p, d_kin, kout, d_vin, vout, n, end_bit, err, sizeof err));
    OK(bk_gpu_ops_set_variant(p, key_bits == 32 ? BK_GPU_OP_SORT32 : BK_GPU_OP_SORT64, 0, err, sizeof err));
    OK(bk_gpu_ops_to_host(got_keys, kout, ks * (n + 1), err, sizeof err));
    OK(bk_gpu_ops_to_host(got_vals, vout, 4 * (n + 1), err, sizeof err));
    for (uint64_t i = 0; i < n; ++i) out64[i] = key_bits == 32 ? ((uint32_t *)got_keys)[i] : ((uint64_t *)got_keys)[i];
    uint64_t own = verify_sorted(k64, out64, got_vals, n, end_bit), diff = 0;
    for (uint64_t i = 0; i < n; ++i)
        if ((out64[i] != ref64[i] || got_vals[i] != ref_vals[i]) && diff++ < 3)
            fprintf(stderr, "  sort u%d n=%llu end_bit=%d: [%llu] gpu (%llx, %u) cpu (%llx, %u)\n", key_bits,
                    (unsigned long long)n, end_bit, (unsigned long long)i, (unsigned long long)out64[i], got_vals[i],
                    (unsigned long long)ref64[i], ref_vals[i]);
    const uint32_t past = ((uint32_t *)got_vals)[n];
    const char    *what = key_bits == 32 ? "u32" : "u64";
    BK_EXPECTF(own == 0 && diff == 0,
               "sort %s n=%llu end_bit=%d %s variant %d%s: %llu order/permutation/stability faults, %llu differ from "
               "the CPU twin",
               what, (unsigned long long)n, end_bit, dup ? "dup" : "rand", variant, in_place ? " in place" : "",
               (unsigned long long)own, (unsigned long long)diff);
    BK_EXPECTF(past == 0xABABABABu, "sort %s n=%llu wrote past the end", what, (unsigned long long)n);
    bk_gpu_ops_dev_free(d_kin);
    bk_gpu_ops_dev_free(d_kout);
    bk_gpu_ops_dev_free(d_vin);
    bk_gpu_ops_dev_free(d_vout);
    free(k64);
    free(out64);
    free(ref64);
    free(vals);
    free(ref_vals);
    free(got_vals);
    free(host_keys);
    free(got_keys);
}

int main(void)
{
    bk_gpu_ops *p = bk_gpu_ops_init(err, sizeof err);
    if (!p) BK_TEST_SKIP("%s", err);
    quick = getenv("BK_TEST_QUICK") ? atoi(getenv("BK_TEST_QUICK")) : 0;
    printf("%s\n", bk_gpu_ops_device_name(p));

    /* reductions: every size, every reduce variant at a few */
    if (quick > 1) goto sorts;
    for (size_t i = 0; i < NSIZES; ++i) test_reduce(p, sizes[i]);
    for (int v = 1; v <= bk_gpu_ops_variant_count(BK_GPU_OP_REDUCE); ++v) {
        OK(bk_gpu_ops_set_variant(p, BK_GPU_OP_REDUCE, v, err, sizeof err));
        test_reduce(p, 1000003);
        test_reduce(p, 4097);
        test_reduce(p, 7);
    }
    OK(bk_gpu_ops_set_variant(p, BK_GPU_OP_REDUCE, 0, err, sizeof err));
    BK_EXPECTF(!bk_test_failures, "reductions failed");
    fprintf(stderr, "reductions done\n");

    /* histogram: both paths, at the shared path's limit and just past it */
    const uint32_t smax = bk_gpu_ops_histogram_shared_max_bins(p);
    BK_EXPECTF(smax >= 1024 && smax < 65536, "shared histogram limit %u bins", smax);
    const uint32_t bins_list[] = { 1, 7, 256, 1000, 4096, 12289, smax, smax + 1, 65536, 1u << 20 };
    const uint64_t hsizes[] = { 0, 1, 3, 33, 1025, 4097, 65537, 1000003, 16777259 };
    for (size_t bi = 0; bi < sizeof bins_list / sizeof bins_list[0]; ++bi)
        for (size_t si = 0; si < sizeof hsizes / sizeof hsizes[0]; ++si) {
            if (hsizes[si] > 1000003 && bins_list[bi] != 256 && bins_list[bi] != 65536) continue;
            test_histogram(p, hsizes[si], bins_list[bi], 0, (int)(si % 4));
        }
    test_histogram(p, 1000003, 256, 1, 1);
    test_histogram(p, 1000003, 16, 1, 0);
    test_histogram(p, 1000003, 1u << 20, 1, 3);
    fprintf(stderr, "histograms done\n");

sorts:
    /* sorts: every size with full keys; shorter end_bits, duplicates, in place, every variant */
    for (size_t i = 0; i < NSIZES; ++i) {
        test_sort(p, sizes[i], 32, 32, i & 1, 0, 0);
        test_sort(p, sizes[i], 64, 64, !(i & 1), 0, 0);
    }
    static const int ends32[] = { 1, 8, 13, 20, 30 }, ends64[] = { 1, 8, 17, 32, 40, 63 };
    const uint64_t   some[] = { 2, 1025, 6145, 99991, 1000003 };
    for (size_t s = 0; s < sizeof some / sizeof some[0]; ++s) {
        for (size_t e = 0; e < sizeof ends32 / sizeof ends32[0]; ++e)
            test_sort(p, some[s], 32, ends32[e], (int)(e & 1), 0, 0);
        for (size_t e = 0; e < sizeof ends64 / sizeof ends64[0]; ++e)
            test_sort(p, some[s], 64, ends64[e], (int)(e & 1), 0, 0);
        test_sort(p, some[s], 32, 20, 1, 0, 1); /* 3 passes in place: ends in scratch, copied back */
        test_sort(p, some[s], 32, 32, 0, 0, 1);
        test_sort(p, some[s], 64, 24, 1, 0, 1);
        test_sort(p, some[s], 64, 64, 1, 0, 1);
    }
    for (int v = 1; v <= bk_gpu_ops_variant_count(BK_GPU_OP_SORT32); ++v) {
        const uint64_t vs[] = { 1, 3, 4097, 8833, 100003, 1000003 };
        for (size_t s = 0; s < sizeof vs / sizeof vs[0]; ++s) {
            test_sort(p, vs[s], 32, 32, (int)(s & 1), v, 0);
            test_sort(p, vs[s], 32, 30, 1, v, 0);
        }
    }
    for (int v = 1; v <= bk_gpu_ops_variant_count(BK_GPU_OP_SORT64); ++v) {
        const uint64_t vs[] = { 1, 3, 3073, 5761, 100003, 1000003 };
        for (size_t s = 0; s < sizeof vs / sizeof vs[0]; ++s) {
            test_sort(p, vs[s], 64, 64, (int)(s & 1), v, 0);
            test_sort(p, vs[s], 64, 36, 1, v, 0);
        }
    }
    fprintf(stderr, "sorts done\n");

    /* bad arguments are refused with a message, never a crash */
    BK_EXPECT(bk_gpu_ops_sort_pairs_u32(p, NULL, NULL, NULL, NULL, 10, 33, err, sizeof err) < 0);
    BK_EXPECT(bk_gpu_ops_sort_pairs_u64(p, NULL, NULL, NULL, NULL, 10, 0, err, sizeof err) < 0);
    BK_EXPECT(bk_gpu_ops_sort_pairs_u32(p, NULL, NULL, NULL, NULL, 1ull << 30, 32, err, sizeof err) < 0);
    BK_EXPECT(bk_gpu_ops_set_variant(p, BK_GPU_OP_SORT32, 99, err, sizeof err) < 0);
    bk_gpu_ops_free(p);
    BK_TEST_DONE();
}
