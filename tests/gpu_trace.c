/* gpu_trace.c - the CUDA backend against the CPU backend for every accel x stack strategy x
 * counter mode x query, the rays in the default order (auto: binned, for rays as raygen makes
 * them) and in their own order, and with the first stack strategy the other orders (sorted,
 * through the indices and copied into order, binned by 8 bits), on a generated scene and corpus
 * scenes; and auto on rays sorted beforehand, which it traces as they come, as it does any rays
 * into a tree that fits in L1 (the voxel scene's, the Cornell box's). Hits are poisoned on
 * both sides before each run and every one is checked. The warp and block counter modes must give
 * identical statistics (same rays per warp; only how the sums are made differs). Skips (77)
 * without a usable GPU. */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "bk_test_stacks.h"
#include "bk_test_voxels.h"
#include "accel_build.h"
#include "backend.h"
#include "loader.h"
#include "rays.h"
#include "registry.h"

/* the sizes a sized stack strategy runs at (bk_test_stacks: every strategy) */
static const int stack_sizes[] = { 1, 2, 8 };
/* The runs of one variant: each counter mode in the default order (run k: counter mode k), then
 * warp counters in the other orders (the ones after the input order with the first stack only).
 * copy: bk_trace_opts.order_copy. */
static const struct {
    int         order, bits, copy, sorted;
    const char *what;
} runs[] = {
    { BK_RAY_ORDER_AUTO, 0, 0, 1, "" },
    { BK_RAY_ORDER_AUTO, 0, 0, 1, "" },
    { BK_RAY_ORDER_AUTO, 0, 0, 1, "" },
    { BK_RAY_ORDER_INPUT, 0, 0, 0, " input order" },
    { BK_RAY_ORDER_SORTED, 0, 1, 1, " sorted" },
    { BK_RAY_ORDER_SORTED, 0, 2, 1, " sorted, copied" },
    { BK_RAY_ORDER_BINNED, 0, 2, 1, " binned, copied" },
    { BK_RAY_ORDER_BINNED, 8, 1, 1, " binned by 8 bits" },
};
#define RUNS       (int)(sizeof runs / sizeof runs[0])
#define RUNS_FIRST (BK_COUNTERS_COUNT + 1) /* the runs of every stack variant */

/* Hit ids run up to the last voxel face (bk_voxel.h). */
static uint64_t id_limit(const bk_scene *s)
{
    uint64_t n = s->tri_count;
    for (uint32_t i = 0; i < s->vox_instance_count; ++i)
        n += 6ull * s->vox_models[s->vox_instances[i].model].voxel_count;
    return n;
}

static void compare_backends(const char *name, bk_backend *gpu, bk_backend *cpu, const bk_scene *s, const bk_ray *rays,
                             uint64_t n)
{
    char           err[512];
    bk_hit        *ref = malloc(sizeof(bk_hit) * n), *got = malloc(sizeof(bk_hit) * n);
    bk_test_stack  st[BK_TEST_STACKS_MAX];
    const int      nst = bk_test_stacks(stack_sizes, (int)(sizeof stack_sizes / sizeof stack_sizes[0]), st);
    bk_test_layout lay[BK_TEST_LAYOUTS_MAX];
    const int      nlay = bk_test_layouts(lay);
    for (int b = 0; b < nlay; ++b) {
        if (!bk_test_layout_first(lay, b)) continue; /* each accel built once, for all of its layouts */
        const int     accel = lay[b].build;
        bk_accel      a;
        bk_build_opts bo = bk_build_opts_default();
        BK_EXPECTF(bk_accel_build(s, accel, &bo, &a, err, sizeof err) == 0, "%s", err);
        bk_accel_view v = bk_accel_get_view(&a);
        const int     cached = bk_accel_view_bytes(&v) <= BK_RAY_ORDER_CACHED_BYTES;
        BK_EXPECTF(gpu->i->upload(gpu, &v, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(cpu->i->upload(cpu, &v, err, sizeof err) == 0, "%s", err);
        /* the BVH in both layouts the GPU traces, the binary one and the compressed wide one; the
         * CPU traces the same layout through the same code, so node counts compare */
        for (int l = 0; l < nlay; ++l)
            for (int vi = 0; vi < nst && lay[l].build == accel; ++vi)
                for (int any = 0; any < 2; ++any) {
                    const int     layout = lay[l].width == 8;
                    bk_trace_opts o = bk_trace_opts_default();
                    o.bvh_width = lay[l].width;
                    o.stack_mode = st[vi].mode;
                    o.stack_size = bk_test_stack_size(st[vi]);
                    o.any_hit = any;
                    bk_trace_totals tc, tg[RUNS];
                    const int       nruns = vi == 0 ? RUNS : RUNS_FIRST;
                    memset(ref, 0xAB, sizeof(bk_hit) * n);
                    BK_EXPECTF(cpu->i->trace(cpu, rays, ref, n, &o, &tc, err, sizeof err) == 0, "%s", err);
                    for (int run = 0; run < nruns; ++run) {
                        /* auto traces a tree that fits in L1 as it comes */
                        const int sorted =
                            runs[run].order == BK_RAY_ORDER_AUTO ? runs[run].sorted && !cached : runs[run].sorted;
                        const int   cnt = run < BK_COUNTERS_COUNT ? run : BK_COUNTERS_WARP;
                        const char *what = runs[run].what;
                        o.counters = cnt;
                        o.ray_order = runs[run].order;
                        o.order_bits = runs[run].bits;
                        o.order_copy = runs[run].copy;
                        memset(got, 0xCD, sizeof(bk_hit) * n); /* poison the host copy too */
                        BK_EXPECTF(gpu->i->trace(gpu, rays, got, n, &o, &tg[run], err, sizeof err) == 0, "%s", err);
                        BK_EXPECTF(tg[run].sorted == sorted, "%s: rays traced %s", name,
                                   tg[run].sorted ? "sorted" : "unsorted");
                        const int bits = runs[run].bits                           ? runs[run].bits
                                         : runs[run].order == BK_RAY_ORDER_SORTED ? BK_RAY_ORDER_KEY_BITS
                                                                                  : BK_RAY_ORDER_BINNED_BITS;
                        BK_EXPECTF(!sorted || tg[run].order_bits == bits, "%s%s: sorted by %d bits, not %d", name, what,
                                   tg[run].order_bits, bits);
                        uint64_t bad = 0, inexact = 0;
                        for (uint64_t i = 0; i < n; ++i) {
                            int ok = bk_hit_agree(ref[i], got[i], any, 1e-4f) &&
                                     (got[i].tri == BK_NO_HIT ? got[i].t == BK_INF : got[i].tri < id_limit(s));
                            if (memcmp(&ref[i], &got[i], sizeof(bk_hit)) != 0) inexact++;
                            if (!ok && bad++ < 5)
                                fprintf(
                                    stderr,
                                    "  %s %s%s %s/%d %s %s%s: ray %llu: cpu (t %.9g, tri %d) cuda (t %.9g, tri %d)\n",
                                    name, bk_accel_type_name(accel), layout ? " cw" : "",
                                    bk_stack_mode_name(o.stack_mode), o.stack_size, any ? "any" : "closest",
                                    bk_counters_name(cnt), what, (unsigned long long)i, ref[i].t, (int)ref[i].tri,
                                    got[i].t, (int)got[i].tri);
                        }
#if BK_EXACT_FP
                        BK_EXPECTF(inexact == 0, "%s: %llu hits not bit-identical with FMA contraction off", name,
                                   (unsigned long long)inexact);
#endif
                        /* FMA contraction on the GPU may decide a ray grazing an edge differently. */
                        BK_EXPECTF(bad <= n / 20000, "%s %s%s %s/%d %s %s%s: %llu of %llu rays disagree", name,
                                   bk_accel_type_name(accel), layout ? " cw" : "", bk_stack_mode_name(o.stack_mode),
                                   o.stack_size, any ? "any" : "closest", bk_counters_name(cnt), what,
                                   (unsigned long long)bad, (unsigned long long)n);
                    }
                    /* Warp and block mode give every warp the same 32 consecutive rays on every run, so
                     * their totals must match exactly; thread mode groups rays by arrival, and with
                     * postponed leaves a ray's node visits depend on its warp-mates (sponza: +26 %
                     * over the CPU's), so against the CPU only the order of magnitude is checked. */
                    const bk_trace_totals *tw = &tg[BK_COUNTERS_WARP], *tb = &tg[BK_COUNTERS_BLOCK];
                    BK_EXPECTF(tw->nodes == tb->nodes && tw->tris == tb->tris && tw->restarts == tb->restarts &&
                                   tw->spills == tb->spills,
                               "%s: warp and block counters give other totals: nodes %llu vs %llu", name,
                               (unsigned long long)tw->nodes, (unsigned long long)tb->nodes);
                    for (int run = 0; run < nruns; ++run) {
                        double dn = (double)tg[run].nodes - (double)tc.nodes;
                        BK_EXPECTF(dn * dn <= 0.25 * (double)tc.nodes * (double)tc.nodes,
                                   "%s: node visits too far apart: cpu %llu cuda %llu (run %d)", name,
                                   (unsigned long long)tc.nodes, (unsigned long long)tg[run].nodes, run);
                    }
                    /* (the compressed layout of a small scene is two levels deep: it may never need
                     * more than one entry, and then the CPU's traversal of it makes no restarts either) */
                    if (o.stack_mode == BK_STACK_SHORT && o.stack_size == 1 && !any && (!layout || tc.restarts > 0))
                        BK_EXPECTF(tg[0].restarts > 0, "%s: short stack of 1 made no restarts", name);
                    if (o.stack_mode == BK_STACK_SPILL && o.stack_size == 1 && !any && (!layout || tc.spills > 0))
                        BK_EXPECTF(tg[0].spills > 0, "%s: spill stack of 1 never spilled", name);
                }
        bk_accel_free(&a);
    }
    free(ref);
    free(got);
}

/* --ray-order auto: rays as they come are sampled incoherent and binned; the same rays sorted
 * beforehand (bk_rays_sort, as `baker rays --sort`) coherent, and traced as they come; both with
 * the CPU's hits. */
static void check_auto(const char *name, bk_backend *gpu, bk_backend *cpu, const bk_scene *s, const bk_ray *rays,
                       uint64_t n)
{
    char          err[512];
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_accel_view v = bk_accel_get_view(&a);
    /* a tree that fits in L1 is traced as it comes, unsampled (BK_RAY_ORDER_CACHED_BYTES) */
    const int cached = bk_accel_view_bytes(&v) <= BK_RAY_ORDER_CACHED_BYTES;
    BK_EXPECTF(gpu->i->upload(gpu, &v, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(cpu->i->upload(cpu, &v, err, sizeof err) == 0, "%s", err);
    bk_ray *sorted = malloc(sizeof(bk_ray) * n);
    bk_hit *ref = malloc(sizeof(bk_hit) * n), *got = malloc(sizeof(bk_hit) * n);
    memcpy(sorted, rays, sizeof(bk_ray) * n);
    BK_EXPECTF(bk_rays_sort(sorted, n, a.lo, a.hi, BK_RAY_ORDER_KEY_BITS, err, sizeof err) == 0, "%s", err);
    for (int file = 0; file < 2; ++file) {
        const bk_ray   *rs = file ? sorted : rays;
        bk_trace_opts   o = bk_trace_opts_default();
        bk_trace_totals tc, tg;
        o.ray_order = BK_RAY_ORDER_INPUT;
        BK_EXPECTF(cpu->i->trace(cpu, rs, ref, n, &o, &tc, err, sizeof err) == 0, "%s", err);
        o.ray_order = BK_RAY_ORDER_AUTO;
        memset(got, 0xCD, sizeof(bk_hit) * n);
        BK_EXPECTF(gpu->i->trace(gpu, rs, got, n, &o, &tg, err, sizeof err) == 0, "%s", err);
        printf("%s, %s: auto sampled %.3f coherent, traced %s\n", name, file ? "sorted beforehand" : "as made",
               tg.coherence, tg.sorted ? "sorted" : "as they come");
        BK_EXPECTF(cached ? tg.coherence < 0 && !tg.sorted
                   : file ? tg.coherence >= BK_RAY_ORDER_COHERENT && !tg.sorted
                          : tg.coherence >= 0 && tg.coherence < BK_RAY_ORDER_COHERENT && tg.sorted &&
                                tg.order_bits == BK_RAY_ORDER_BINNED_BITS,
                   "%s, %s: auto sampled %.3f and traced %s", name, file ? "sorted beforehand" : "as made",
                   tg.coherence, tg.sorted ? "sorted" : "as they come");
        uint64_t bad = 0;
        for (uint64_t i = 0; i < n; ++i) bad += !bk_hit_agree(ref[i], got[i], 0, 1e-4f);
        BK_EXPECTF(bad <= n / 20000, "%s: auto: %llu of %llu rays disagree", name, (unsigned long long)bad,
                   (unsigned long long)n);
    }
    free(sorted);
    free(ref);
    free(got);
    bk_accel_free(&a);
}

int main(void)
{
    char        msg[512], err[512];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("%s", msg);
    bk_backend *cpu = bk_backend_cpu_init();
    printf("%s\n", msg);

    bk_scene s;
    bk_test_scene_soup(&s, 5000, 0.06f, 2);
    bk_ray  *rays = NULL;
    uint64_t n = 100003; /* not a multiple of any block size */
    BK_EXPECT(bk_rays_random(&s, n, 3, &rays, err, sizeof err) == 0);
    compare_backends("soup/random", gpu, cpu, &s, rays, n);
    check_auto("soup/random", gpu, cpu, &s, rays, n);
    free(rays);
    bk_scene_free(&s);

    /* voxels: instances with every rotation, traced natively on both sides */
    bk_test_vox_scene(&s, 6, 200, 11, 0.4f, 9);
    {
        bk_scene  mesh;
        uint32_t *face_id;
        bk_test_vox_mesh(&s, &mesh, &face_id);
        n = 100003;
        rays = bk_test_vox_rays(&s, &mesh, (uint32_t)n, 10);
        compare_backends("voxels/random", gpu, cpu, &s, rays, n);
        free(rays);
        free(face_id);
        bk_scene_free(&mesh);
    }
    bk_scene_free(&s);

    static const char *const corpus[] = { "cornell-box/CornellBox-Original.obj", "sponza-dabrovic/sponza.obj",
                                          "dragon/dragon_vrip_res2.obj" };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; ++i) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", bk_test_scenes_dir(), corpus[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "note: %s absent, skipped\n", path);
            continue;
        }
        BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
        n = 200001;
        BK_EXPECT(bk_rays_diffuse(&s, n, 5, &rays, err, sizeof err) == 0);
        compare_backends(corpus[i], gpu, cpu, &s, rays, n);
        check_auto(corpus[i], gpu, cpu, &s, rays, n);
        free(rays);
        bk_scene_free(&s);
    }
    bk_backend_free(gpu);
    bk_backend_free(cpu);
    BK_TEST_DONE();
}
