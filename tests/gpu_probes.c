/* gpu_probes.c - the CUDA backend's light probes (backend.h, bake_probes) against the CPU's: a
 * grid of probes over the demo scene, its voxel twin and sponza, with a sun, a sky, emitters and
 * two bounces. The same random numbers and arithmetic on both sides, so the sums are the same
 * bits but for rare traversal ties: at most 2 % of the probes may differ at all, and none by more
 * than 2 % of its scale. The GPU's sums are poisoned first and each checked. Skips (77) without a
 * usable GPU. */
#include "bk_test.h"
#include "accel_build.h"
#include "bake.h"
#include "loader.h"
#include "probes.h"
#include "registry.h"
#include "voxmesh.h"

#include <math.h>

/* The probes' sums on be into sums (BK_PROBE_SUMS each). */
static void probes_on(bk_backend *be, const bk_accel *a, const bk_bake_view *v, const bk_bake_params *p,
                      const bk_probe_set *g, float *sums, double *seconds)
{
    char          err[512];
    bk_accel_view av = bk_accel_get_view(a);
    BK_EXPECTF(be->i->upload(be, &av, err, sizeof err) == 0, "%s", err);
    bk_trace_opts   o = bk_trace_opts_default();
    bk_trace_totals t;
    BK_EXPECTF(be->i->bake_begin(be, v, NULL, 0, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(be->i->bake_probes(be, g->pos, g->n, p, &o, sums, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(be->i->bake_end(be, NULL, NULL, &t, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(t.rays >= (uint64_t)g->n * p->spp);
    *seconds = t.seconds;
}

static void compare(const char *path, float cells, uint32_t spp, bk_backend *gpu)
{
    char     err[512];
    bk_scene s;
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_voxmesh vm;
    memset(&vm, 0, sizeof vm);
    const bk_scene *surf = &s;
    if (s.vox_instance_count) {
        BK_EXPECTF(bk_voxmesh_build(&s, &vm, err, sizeof err) == 0, "%s", err);
        surf = &vm.scene;
    }
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build_hit(surf, NULL, s.vox_instance_count ? vm.first_quad_tri : surf->tri_count, NULL, 0,
                                      &d, err, sizeof err) == 0,
               "%s", err);
    bk_bake_view   v = bk_bake_data_view(&d, &a);
    const float    lo[3] = { a.lo.x, a.lo.y, a.lo.z }, hi[3] = { a.hi.x, a.hi.y, a.hi.z };
    const float    ext = fmaxf(fmaxf(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
    bk_bake_params p;
    memset(&p, 0, sizeof p);
    p.mode = BK_BAKE_LIGHT;
    p.spp = p.sample_end = spp;
    p.bounces = 2;
    p.seed = 11;
    p.eps = s.vox_instance_count ? 1e-3f : 1e-4f * ext;
    p.sky[0] = 0.6f, p.sky[1] = 0.7f, p.sky[2] = 0.9f;
    p.sun_dir[0] = 0.3f, p.sun_dir[1] = 0.9f, p.sun_dir[2] = 0.3f;
    p.sun_color[0] = 3, p.sun_color[1] = 2.8f, p.sun_color[2] = 2.5f;
    p.sun_cos = 0.9999f;
    bk_probe_set g;
    BK_EXPECTF(bk_probe_grid(lo, hi, ext / cells, &g, err, sizeof err) == 0, "%s", err);
    float *ref = malloc(sizeof(float) * BK_PROBE_SUMS * g.n), *got = malloc(sizeof(float) * BK_PROBE_SUMS * g.n);
    for (size_t i = 0; i < (size_t)BK_PROBE_SUMS * g.n; ++i) got[i] = NAN; /* poison */
    bk_backend *cpu = bk_backend_cpu_init();
    double      tc = 0, tg = 0;
    probes_on(cpu, &a, &v, &p, &g, ref, &tc);
    probes_on(gpu, &a, &v, &p, &g, got, &tg);
    uint32_t differ = 0, invalid = 0;
    float    worst = 0;
    for (uint32_t i = 0; i < g.n; ++i) {
        const float *c = ref + (size_t)i * BK_PROBE_SUMS, *u = got + (size_t)i * BK_PROBE_SUMS;
        const float  scale = fmaxf(fmaxf(fabsf(c[0]), fabsf(c[1])), fmaxf(fabsf(c[2]), 1e-3f * spp));
        int          same = 1;
        for (int k = 0; k < BK_PROBE_SUMS; ++k) {
            if (!isfinite(u[k])) {
                BK_EXPECTF(0, "%s: probe %u sum %d is %g (unwritten?)", path, i, k, u[k]);
                break;
            }
            same &= u[k] == c[k];
            if (k < 27 && fabsf(u[k] - c[k]) / scale > worst) worst = fabsf(u[k] - c[k]) / scale;
        }
        differ += !same;
        invalid += c[27] > BK_PROBE_BACK_LIMIT * spp;
    }
    printf("%s: %u probes x %u rays, %u invalid: cpu %.3f s, cuda %.4f s; %u differ, by at most %.2g of a probe's "
           "scale\n",
           path, g.n, spp, invalid, tc, tg, differ, worst);
    BK_EXPECTF(differ <= g.n / 50, "%s: %u of %u probes differ between CUDA and the CPU", path, differ, g.n);
    BK_EXPECTF(worst <= 0.02f, "%s: a probe differs by %.3g of its scale between CUDA and the CPU", path, worst);
    free(ref);
    free(got);
    bk_backend_free(cpu);
    bk_probe_set_free(&g);
    bk_bake_data_free(&d);
    bk_voxmesh_free(&vm);
    bk_accel_free(&a);
    bk_scene_free(&s);
}

int main(void)
{
    char        msg[512], path[1024];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("%s", msg);
    snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    compare(path, 8, 256, gpu);
    snprintf(path, sizeof path, "%s/scenes/cornell.vox", BK_SOURCE_DIR);
    compare(path, 8, 128, gpu);
    snprintf(path, sizeof path, "%s/sponza-dabrovic/sponza.obj", bk_test_scenes_dir());
    if (access(path, R_OK) == 0) compare(path, 12, 64, gpu);
    else fprintf(stderr, "note: %s absent\n", path);
    bk_backend_free(gpu);
    BK_TEST_DONE();
}
