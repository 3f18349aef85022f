/* gpu_bake.c - the CUDA bake against the CPU bake: the demo scene and a corpus scene must agree
 * (and the demo voxel scene, traced natively) within 50 dB PSNR (the same random numbers on both
 * sides, and the same arithmetic: they are equal but for rare traversal ties). The CUDA bake's two
 * kernels (--kernel wavefront, its rays binned or not, and megakernel) must give the same texels
 * bit for bit. The GPU outputs are poisoned before the run and every texel checked. One of the
 * runs bakes its sun `indirect` (bk_light_mode); three bake the directional bands too, which must
 * agree the same ways. Skips (77) without a usable GPU. */
#include "bk_test.h"
#include "bk_test_image.h"
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "registry.h"
#include "denoise.h"
#include "loader.h"
#include "raster.h"
#include "voxmesh.h"

static void bake_on(bk_backend *be, const bk_scene *s, const bk_accel *a, const bk_texel *tx, uint32_t n, int w, int h,
                    const bk_bake_run_opts *o, float *rgb, bk_bake_result *r)
{
    char         err[512];
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    bk_accel_view av = bk_accel_get_view(a);
    BK_EXPECTF(be->i->upload(be, &av, err, sizeof err) == 0, "%s", err);
    bk_bake_view v = bk_bake_data_view(&d, a);
    BK_EXPECTF(bk_bake_texels(be, &v, tx, n, w, h, o, rgb, NULL, r, err, sizeof err) == 0, "%s", err);
    bk_bake_data_free(&d);
}

/* The same bake with only the texels' refs given: the GPU makes the texels itself (bake_refs). */
static void bake_refs_on(bk_backend *be, const bk_scene *s, const bk_accel *a, const bk_atlas *at,
                         const bk_texel_ref *refs, uint32_t n, const bk_bake_run_opts *o0, float *rgb,
                         bk_bake_result *r)
{
    bk_texel_src     src;
    float           *tri_n = NULL;
    bk_bake_run_opts o = *o0;
    BK_EXPECT(bk_texel_src_make(s, at, &src, &tri_n) == 0);
    o.texel_refs = refs;
    o.texel_src = &src;
    o.make_texels = NULL; /* never called: the device makes them */
    bake_on(be, s, a, NULL, n, at->width, at->height, &o, rgb, r);
    free(tri_n);
}

/* dir: bake the directional sums too (bk_bake_dir_sample), the same on both sides. */
static void compare(const char *path, int size, uint32_t spp, int accel, int stack, uint32_t sun_mode, int dir,
                    bk_backend *gpu)
{
    char     err[512];
    bk_scene s;
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, accel, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_atlas_opts ao;
    bk_atlas_opts_default(&ao);
    ao.size = size;
    /* voxels are traced natively; their surface's quads give the charts, texels and emitters */
    bk_voxmesh vm;
    memset(&vm, 0, sizeof vm);
    bk_atlas_rect  *rects = NULL;
    const bk_scene *surf = &s;
    if (s.vox_instance_count) {
        BK_EXPECTF(bk_voxmesh_build(&s, &vm, err, sizeof err) == 0, "%s", err);
        rects = bk_voxmesh_rects(&vm, 1, &ao);
        surf = &vm.scene;
    }
    bk_atlas  at;
    bk_texel *tx;
    uint32_t  n;
    uint8_t  *cov;
    BK_EXPECTF(bk_atlas_build(surf, &ao, &at, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(bk_atlas_rasterize(surf, &at, &tx, &n, &cov, err, sizeof err) == 0, "%s", err);
    float            diag = sqrtf((a.hi.x - a.lo.x) * (a.hi.x - a.lo.x) + (a.hi.y - a.lo.y) * (a.hi.y - a.lo.y) +
                                  (a.hi.z - a.lo.z) * (a.hi.z - a.lo.z));
    bk_bake_run_opts o;
    memset(&o, 0, sizeof o);
    o.params.mode = BK_BAKE_LIGHT;
    o.params.spp = spp;
    o.params.bounces = 2;
    o.params.seed = 7;
    o.params.eps = 1e-4f * diag;
    o.params.texel_world = 1.0f / at.texels_per_unit;
    o.params.sky[0] = 0.6f;
    o.params.sky[1] = 0.7f;
    o.params.sky[2] = 0.9f;
    o.params.sun_dir[0] = 0.3f;
    o.params.sun_dir[1] = 0.9f;
    o.params.sun_dir[2] = 0.3f;
    o.params.sun_color[0] = 3;
    o.params.sun_color[1] = 2.8f;
    o.params.sun_color[2] = 2.5f;
    o.params.sun_cos = 0.9999f;
    o.params.sun_mode = sun_mode;
    if (s.vox_instance_count) {
        o.params.eps = 1e-3f;
        o.params.texel_world = 1.0f;
        o.params.open_tri_begin = vm.first_quad_tri;
        o.params.open_tri_end = vm.scene.tri_count;
    }
    o.trace = bk_trace_opts_default();
    o.trace.stack_mode = stack;
    o.trace.stack_size = 4;
    o.max_launch_ms = 20;
    size_t np = (size_t)at.width * at.height;
    float *ref = malloc(sizeof(float) * 3 * np), *got = malloc(sizeof(float) * 3 * np),
          *wave = malloc(sizeof(float) * 3 * np);
    for (size_t i = 0; i < 3 * np; ++i) got[i] = wave[i] = -1.0f; /* poison */
    float *vref = malloc(sizeof(float) * np), *vgot = malloc(sizeof(float) * np);
    for (size_t i = 0; i < np; ++i) vgot[i] = -1.0f; /* poison: every texel is written */
    bk_bake_result   rc, rg;
    bk_backend      *cpu = bk_backend_cpu_init();
    bk_bake_run_opts oc = o, og = o;
    oc.variance = vref;
    og.variance = vgot;
    /* the directional bands: cpu, megakernel, wavefront (the GPU's poisoned: NaN) */
    float *band[3][3] = { { NULL } };
    o.params.directional = oc.params.directional = og.params.directional = (uint32_t)dir;
    for (int k = 0; dir && k < 3; ++k)
        for (int j = 0; j < 3; ++j) {
            band[j][k] = malloc(sizeof(float) * 3 * np);
            memset(band[j][k], 0xFF, sizeof(float) * 3 * np);
        }
    for (int k = 0; k < 3; ++k) oc.dir[k] = band[0][k], og.dir[k] = band[1][k];
    /* the sun indirect: its shadowmask too (cpu, megakernel, wavefront; poisoned) */
    const int mask = sun_mode == BK_LIGHT_INDIRECT;
    float    *mk[3] = { NULL, NULL, NULL };
    o.params.mask_count = oc.params.mask_count = og.params.mask_count = (uint32_t)mask;
    o.params.mask_vis[0] = oc.params.mask_vis[0] = og.params.mask_vis[0] = BK_VIS_SUN;
    for (int j = 0; mask && j < 3; ++j) {
        mk[j] = malloc(sizeof(float) * 3 * np);
        memset(mk[j], 0xFF, sizeof(float) * 3 * np);
    }
    oc.mask[0] = mk[0];
    og.mask[0] = mk[1];
    bake_on(cpu, surf, &a, tx, n, at.width, at.height, &oc, ref, &rc);
    bake_on(gpu, surf, &a, tx, n, at.width, at.height, &og, got, &rg);
    /* texels made on the GPU from their refs: the same bake bit for bit */
    {
        bk_texel_ref *refs = NULL;
        uint32_t      nr = 0;
        char          rerr[256];
        BK_EXPECTF(bk_atlas_rasterize_refs(surf, &at, &refs, &nr, NULL, rerr, sizeof rerr) == 0 && nr == n, "%s", rerr);
        bk_bake_result rr;
        memset(wave, 0xFF, sizeof(float) * 3 * np); /* poison */
        bake_refs_on(gpu, surf, &a, &at, refs, nr, &o, wave, &rr);
        size_t same = 0;
        for (size_t i = 0; i < 3 * np; ++i) same += memcmp(&got[i], &wave[i], sizeof(float)) == 0;
        printf("  texels made on the GPU from refs: %zu of %zu values equal\n", same, 3 * np);
        BK_EXPECTF(same == 3 * np, "%s: the bake from refs differs in %zu values", path, 3 * np - same);
        free(refs);
    }
    /* the wavefront bake: the megakernel's texels exactly (each sample's sums added in order),
     * with each wave's rays traced as they come and binned (--bin-rays) */
    for (int binned = 0; binned < 2; ++binned) {
        bk_bake_run_opts ow = o;
        bk_bake_result   rw;
        ow.trace.wavefront = 1;
        ow.trace.ray_order = binned ? BK_RAY_ORDER_SORTED : BK_RAY_ORDER_AUTO;
        memset(wave, 0xFF, sizeof(float) * 3 * np); /* poison: NaN where nothing was written */
        for (int k = 0; dir && k < 3; ++k) memset(band[2][k], 0xFF, sizeof(float) * 3 * np);
        for (int k = 0; k < 3; ++k) ow.dir[k] = band[2][k];
        if (mask) memset(mk[2], 0xFF, sizeof(float) * 3 * np);
        ow.mask[0] = mk[2];
        bake_on(gpu, surf, &a, tx, n, at.width, at.height, &ow, wave, &rw);
        size_t same = 0, dsame = 0;
        for (size_t i = 0; i < 3 * np; ++i) same += memcmp(&got[i], &wave[i], sizeof(float)) == 0;
        for (size_t i = 0; dir && i < 3 * np; ++i)
            for (int k = 0; k < 3; ++k) dsame += memcmp(&band[1][k][i], &band[2][k][i], sizeof(float)) == 0;
        size_t msame = 0;
        for (size_t i = 0; mask && i < np; ++i) msame += memcmp(&mk[1][3 * i], &mk[2][3 * i], sizeof(float)) == 0;
        BK_EXPECTF(msame == (mask ? np : 0),
                   "%s: the wavefront's shadowmask differs from the megakernel's in %zu texels", path, np - msame);
        BK_EXPECTF(dsame == (dir ? 9 * np : 0),
                   "%s: the wavefront's directional bands differ from the megakernel's in %zu values", path,
                   9 * np - dsame);
        printf("  wavefront%s: %.3f s, %zu of %zu values equal to the megakernel's, %llu rays (megakernel %llu)\n",
               binned ? " binned" : "", rw.totals.seconds, same, 3 * np, (unsigned long long)rw.totals.rays,
               (unsigned long long)rg.totals.rays);
        BK_EXPECTF(same == 3 * np, "%s: the wavefront bake%s differs from the megakernel in %zu values", path,
                   binned ? " (rays binned)" : "", 3 * np - same);
        BK_EXPECTF(rw.totals.rays == rg.totals.rays && rw.invalid == rg.invalid,
                   "%s: wavefront rays %llu, inside %u; megakernel %llu, %u", path, (unsigned long long)rw.totals.rays,
                   rw.invalid, (unsigned long long)rg.totals.rays, rg.invalid);
    }
    /* the variance the denoiser weighs by: the same on both sides, never negative */
    {
        bk_image_diff dv = bk_image_compare_n(vref, vgot, np, 1, cov, 1e-6);
        BK_EXPECTF(dv.psnr >= 40.0, "%s: CUDA and CPU variances differ: PSNR %.1f dB", path, dv.psnr);
        for (size_t i = 0; i < np; ++i)
            if (!(vgot[i] >= 0.0f)) {
                BK_EXPECTF(0, "%s: variance %g at %zu", path, vgot[i], i);
                break;
            }
    }
    /* the denoiser's passes on the GPU against its CPU twin, on the same input (the CPU bake) */
    {
        float *dc = malloc(sizeof(float) * 3 * np), *dg = malloc(sizeof(float) * 3 * np);
        memcpy(dc, ref, sizeof(float) * 3 * np);
        memcpy(dg, ref, sizeof(float) * 3 * np);
        bk_denoise_opts dno;
        bk_denoise_opts_default(&dno);
        bk_denoise_result     r1, r2;
        const bk_denoise_view dv = { .coverage = cov,
                                     .texels = tx,
                                     .n = n,
                                     .tri_chart = at.tri_chart,
                                     .tri_count = at.tri_count,
                                     .w = at.width,
                                     .h = at.height,
                                     .pages = 1,
                                     .texel_world = o.params.texel_world };
        BK_EXPECTF(bk_denoise_lightmap(cpu, dc, vref, &dv, &dno, &r1, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(bk_denoise_lightmap(gpu, dg, vref, &dv, &dno, &r2, err, sizeof err) == 0, "%s", err);
        bk_image_diff dd = bk_image_compare(dc, dg, np, cov, 1e-4);
        bk_image_diff dr = bk_image_compare(ref, dc, np, cov, 1e-4);
        printf("  denoiser: cuda against cpu PSNR %.1f dB (%llu texels differ by > 1e-4), %llu texels changed; cpu "
               "%.4f s, cuda %.4f s "
               "(passes %.4f s)\n",
               dd.psnr, (unsigned long long)dd.differ, (unsigned long long)dr.differ, r1.seconds, r2.seconds,
               r2.filter_seconds);
        BK_EXPECTF(dd.psnr >= 60.0, "%s: CUDA and CPU denoisers differ: PSNR %.1f dB", path, dd.psnr);
        BK_EXPECTF(dr.differ > 0 && r2.texels == r1.texels && r1.texels > 0, "%s: the denoiser changed nothing", path);
        free(dc);
        free(dg);
    }
    free(vref);
    free(vgot);
    bk_image_diff d = bk_image_compare(ref, got, np, cov, 1e-3);
    printf("%s %s/%s%s %dx%d %u spp: cpu %.3f s, cuda %.3f s in %u launches (longest %.1f ms), PSNR %.1f dB, %llu of "
           "%llu texels "
           "differ by > 1e-3\n",
           path, bk_accel_type_name(accel), bk_stack_mode_name(stack), sun_mode ? " (sun indirect)" : "", at.width,
           at.height, spp, rc.totals.seconds, rg.totals.seconds, rg.launches, rg.longest_launch_ms, d.psnr,
           (unsigned long long)d.differ, (unsigned long long)d.count);
    BK_EXPECTF(d.psnr >= 50.0, "%s: CUDA and CPU bakes differ: PSNR %.1f dB", path, d.psnr);
    for (int k = 0; dir && k < 3; ++k) { /* the bands: CUDA = CPU, every covered texel written */
        bk_image_diff db = bk_image_compare(band[0][k], band[1][k], np, cov, 1e-3);
        printf("  directional band %c: CUDA against CPU PSNR %.1f dB, %llu of %llu texels differ by > 1e-3\n", "xyz"[k],
               db.psnr, (unsigned long long)db.differ, (unsigned long long)db.count);
        BK_EXPECTF(db.psnr >= 50.0, "%s: CUDA and CPU directional band %d differ: PSNR %.1f dB", path, k, db.psnr);
        for (size_t i = 0; i < np; ++i)
            if (cov[i] && !(fabsf(band[1][k][3 * i]) < 1e6f)) {
                BK_EXPECTF(0, "%s: band %d value %g at %zu (unwritten?)", path, k, band[1][k][3 * i], i);
                break;
            }
    }
    if (mask) { /* the shadowmask: CUDA = CPU, every covered texel written, in [0, 1] */
        size_t lit = 0, part = 0, bad = 0, differ = 0, covered = 0;
        for (size_t i = 0; i < np; ++i) {
            if (!cov[i]) continue;
            const float g = mk[1][3 * i];
            covered++;
            bad += !(g >= 0.0f && g <= 1.0f);
            lit += g > 0.0f;
            part += g > 0.0f && g < 1.0f;
            differ += memcmp(&g, &mk[0][3 * i], sizeof g) != 0;
        }
        printf("  shadowmask: %zu of %zu texels see the sun (%zu in part), %zu differ from the CPU's\n", lit, covered,
               part, differ);
        BK_EXPECTF(!bad, "%s: %zu texels of the shadowmask unwritten or outside [0, 1]", path, bad);
        BK_EXPECTF(differ <= covered / 100, "%s: the shadowmask differs from the CPU's in %zu of %zu texels", path,
                   differ, covered);
    }
    for (int j = 0; j < 3; ++j) free(mk[j]);
    for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 3; ++k) free(band[j][k]);
    BK_EXPECTF(rc.invalid == rg.invalid, "%s: texels inside geometry: cpu %u cuda %u", path, rc.invalid, rg.invalid);
    for (size_t i = 0; i < 3 * np; ++i)
        if (!(got[i] >= 0.0f && got[i] < 1e6f)) {
            BK_EXPECTF(0, "%s: texel value %g at %zu (unwritten?)", path, got[i], i / 3);
            break;
        }
    free(ref);
    free(got);
    free(wave);
    free(tx);
    free(cov);
    bk_backend_free(cpu);
    bk_atlas_free(&at);
    free(rects);
    bk_voxmesh_free(&vm);
    bk_accel_free(&a);
    bk_scene_free(&s);
}

int main(void)
{
    char        msg[512], path[1024];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("%s", msg);
    /* every stack strategy of BK_STACK_MODES on each small scene: the first (global) on the BVH,
     * the others on the KD-tree, at half the samples */
    snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m)
        compare(path, 128, m ? 16 : 32, m ? BK_ACCEL_KDTREE : BK_ACCEL_BVH, m, BK_LIGHT_BAKED, 0, gpu);
    compare(path, 96, 8, BK_ACCEL_BVH, BK_STACK_GLOBAL, BK_LIGHT_INDIRECT, 0, gpu); /* mixed lighting */
    compare(path, 128, 16, BK_ACCEL_BVH, BK_STACK_GLOBAL, BK_LIGHT_BAKED, 1, gpu);  /* directional */
    /* voxels: native voxel traversal in the bake, emissive voxel quads as lights */
    snprintf(path, sizeof path, "%s/scenes/cornell.vox", BK_SOURCE_DIR);
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m)
        compare(path, 192, m ? 8 : 16, m ? BK_ACCEL_KDTREE : BK_ACCEL_BVH, m, BK_LIGHT_BAKED, m == BK_STACK_SHORT, gpu);
    snprintf(path, sizeof path, "%s/sponza-dabrovic/sponza.obj", bk_test_scenes_dir());
    if (access(path, R_OK) == 0) /* the sun indirect: its shadowmask beside the directional bands */
        compare(path, 256, 4, BK_ACCEL_BVH, BK_STACK_SPILL, BK_LIGHT_INDIRECT, 1, gpu);
    else fprintf(stderr, "note: %s absent\n", path);
    /* the device let go as a bake's last use of it does (its context destroyed: cmd_bake.c's
     * be_release), then taken again: a fresh context bakes as before */
    bk_backend_caps caps;
    gpu->i->caps(gpu, &caps);
    BK_EXPECTF(caps.device == 0, "the default CUDA backend says it is on device %d, not 0", caps.device);
    bk_backend_free_last(gpu);
    gpu = bk_backend_init("cuda", msg, sizeof msg);
    BK_EXPECTF(gpu != NULL, "no CUDA backend after the device was let go: %s", msg);
    if (gpu) {
        snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
        compare(path, 96, 8, BK_ACCEL_BVH, BK_STACK_GLOBAL, BK_LIGHT_BAKED, 0, gpu);
    }
    bk_backend_free(gpu);
    BK_TEST_DONE();
}
