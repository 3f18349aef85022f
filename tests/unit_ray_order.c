/* unit_ray_order.c - the ray orders on the host: bk_rays_sort (`baker rays --sort`) puts rays in
 * the order of the trace's key (kernels/bk_ray.h), stably, and moves nothing but the rays;
 * bk_ray_order_coherence tells rays as raygen makes them (few neighbours share a coarse bin) from
 * the same rays sorted (nearly all do), which is what --ray-order auto decides by on the GPU;
 * bk_rays_limit shortens rays; and the CPU backend's sorted and binned orders give the hits of the
 * input order, bit for bit (closest hit), saying how many key bits they sorted by. */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "backend.h"
#include "rays.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int ray_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(bk_ray)); }

/* sorted: the same multiset of rays as orig, in non-decreasing key order (top bits), with rays of
 * equal keys in their original order (the tmin of ray i is i * 1e-9, unique and increasing). */
static void check_sorted(const bk_ray *orig, const bk_ray *sorted, uint64_t n, bk_vec3 lo, bk_vec3 hi, int bits)
{
    const bk_vec3 scale = bk_ray_order_scale(lo, hi);
    uint64_t      bad_order = 0, bad_ties = 0;
    for (uint64_t i = 1; i < n; ++i) {
        const uint32_t a = bk_ray_order_key(&sorted[i - 1], lo, scale) >> (BK_RAY_ORDER_KEY_BITS - bits);
        const uint32_t b = bk_ray_order_key(&sorted[i], lo, scale) >> (BK_RAY_ORDER_KEY_BITS - bits);
        bad_order += a > b;
        bad_ties += a == b && !(sorted[i - 1].tmin < sorted[i].tmin);
    }
    BK_EXPECTF(bad_order == 0, "%d bits: %llu neighbours out of key order", bits, (unsigned long long)bad_order);
    BK_EXPECTF(bad_ties == 0, "%d bits: %llu equal keys out of file order", bits, (unsigned long long)bad_ties);
    bk_ray *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    memcpy(x, orig, n * sizeof *x);
    memcpy(y, sorted, n * sizeof *y);
    qsort(x, n, sizeof *x, ray_cmp);
    qsort(y, n, sizeof *y, ray_cmp);
    BK_EXPECTF(memcmp(x, y, n * sizeof *x) == 0, "%d bits: the sorted rays are not the same rays", bits);
    free(x);
    free(y);
}

int main(void)
{
    char     err[512];
    bk_scene s;
    bk_test_scene_soup(&s, 3000, 0.05f, 4);
    const uint64_t n = 150001;
    bk_ray        *rays = NULL;
    BK_EXPECT(bk_rays_diffuse(&s, n, 3, &rays, err, sizeof err) == 0);
    for (uint64_t i = 0; i < n; ++i) rays[i].tmin = (float)i * 1e-9f; /* a tie-breaker to check stability */

    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_ray *sorted = malloc(n * sizeof *sorted), *binned = malloc(n * sizeof *binned);
    memcpy(sorted, rays, n * sizeof *sorted);
    memcpy(binned, rays, n * sizeof *binned);
    BK_EXPECTF(bk_rays_sort(sorted, n, a.lo, a.hi, BK_RAY_ORDER_KEY_BITS, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(bk_rays_sort(binned, n, a.lo, a.hi, BK_RAY_ORDER_BINNED_BITS, err, sizeof err) == 0, "%s", err);
    check_sorted(rays, sorted, n, a.lo, a.hi, BK_RAY_ORDER_KEY_BITS);
    check_sorted(rays, binned, n, a.lo, a.hi, BK_RAY_ORDER_BINNED_BITS);
    BK_EXPECT(bk_rays_sort(sorted, n, a.lo, a.hi, 0, err, sizeof err) < 0);
    BK_EXPECT(bk_rays_sort(sorted, n, a.lo, a.hi, 25, err, sizeof err) < 0);

    /* auto's test: raygen's order is incoherent, a sorted file coherent (either sort) */
    const bk_vec3 scale = bk_ray_order_scale(a.lo, a.hi);
    const double  c_raw = bk_ray_order_coherence(rays, n, a.lo, scale);
    const double  c_sorted = bk_ray_order_coherence(sorted, n, a.lo, scale);
    const double  c_binned = bk_ray_order_coherence(binned, n, a.lo, scale);
    printf("coherence: raygen %.3f, sorted %.3f, binned %.3f (auto sorts below %.2f)\n", c_raw, c_sorted, c_binned,
           BK_RAY_ORDER_COHERENT);
    BK_EXPECTF(c_raw < 0.2, "raygen's order: %.3f of neighbours share a bin", c_raw);
    BK_EXPECTF(c_sorted > 0.9 && c_binned > 0.9, "sorted: %.3f, binned %.3f", c_sorted, c_binned);
    BK_EXPECT(bk_ray_order_coherence(rays, 1, a.lo, scale) == 1.0);
    BK_EXPECT(bk_ray_order_coherence(sorted, 100, a.lo, scale) > 0.9); /* fewer rays than the runs: all pairs */
    BK_EXPECT(bk_ray_order_coherence(rays, 100, a.lo, scale) < 0.5);
    BK_EXPECT(BK_RAY_ORDER_AUTO_MIN > BK_RAY_ORDER_RUNS * (BK_RAY_ORDER_RUN + 1)); /* runs never overlap */

    /* the CPU backend: sorted and binned trace the input order's hits, and say by how many bits */
    bk_backend   *cpu = bk_backend_cpu_init();
    bk_accel_view v = bk_accel_get_view(&a);
    BK_EXPECTF(cpu->i->upload(cpu, &v, err, sizeof err) == 0, "%s", err);
    bk_hit *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    static const struct {
        int order, bits, want_bits;
    } orders[] = { { BK_RAY_ORDER_SORTED, 0, 24 },
                   { BK_RAY_ORDER_BINNED, 0, 16 },
                   { BK_RAY_ORDER_BINNED, 8, 8 },
                   { BK_RAY_ORDER_AUTO, 0, 0 } };
    for (int any = 0; any < 2; ++any) {
        bk_trace_opts   o = bk_trace_opts_default();
        bk_trace_totals t;
        o.any_hit = any;
        o.ray_order = BK_RAY_ORDER_INPUT;
        BK_EXPECTF(cpu->i->trace(cpu, rays, ref, n, &o, &t, err, sizeof err) == 0, "%s", err);
        BK_EXPECT(!t.sorted && t.coherence == -1.0);
        for (size_t k = 0; k < sizeof orders / sizeof orders[0]; ++k) {
            o.ray_order = orders[k].order;
            o.order_bits = orders[k].bits;
            memset(got, 0xCD, n * sizeof *got);
            BK_EXPECTF(cpu->i->trace(cpu, rays, got, n, &o, &t, err, sizeof err) == 0, "%s", err);
            BK_EXPECTF(t.sorted == (orders[k].want_bits > 0) && t.order_bits == orders[k].want_bits,
                       "order %d: sorted %d by %d bits", orders[k].order, t.sorted, t.order_bits);
            uint64_t bad = 0;
            for (uint64_t i = 0; i < n; ++i)
                bad += any ? !bk_hit_agree(ref[i], got[i], 1, 0.0f) : memcmp(&ref[i], &got[i], sizeof ref[i]) != 0;
            BK_EXPECTF(bad == 0, "order %d bits %d %s: %llu hits differ from the input order's", orders[k].order,
                       orders[k].bits, any ? "any" : "closest", (unsigned long long)bad);
        }
    }

    /* short rays: every tmax at most the fraction of the diagonal, shorter ones kept */
    float lo[3], hi[3];
    bk_scene_bounds(&s, lo, hi);
    const float diag = sqrtf((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                             (hi[2] - lo[2]) * (hi[2] - lo[2]));
    rays[0].tmax = 1e-3f * diag;
    bk_rays_limit(rays, n, &s, 0.05f);
    uint64_t longer = 0;
    for (uint64_t i = 0; i < n; ++i) longer += !(rays[i].tmax <= 0.05f * diag * 1.000001f);
    BK_EXPECTF(longer == 0, "%llu rays longer than 0.05 x the diagonal", (unsigned long long)longer);
    BK_EXPECT(rays[0].tmax == 1e-3f * diag && fabsf(rays[1].tmax - 0.05f * diag) <= 1e-6f * diag);

    free(ref);
    free(got);
    bk_backend_free(cpu);
    bk_accel_free(&a);
    free(sorted);
    free(binned);
    free(rays);
    bk_scene_free(&s);
    BK_TEST_DONE();
}
