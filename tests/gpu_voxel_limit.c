/* gpu_voxel_limit.c - voxels at the .vox reader's translation limit (BK_VOX_MAX_COORD) on the
 * CUDA backend against the CPU one (issue 33; the CPU side is tests/cpu_voxel_limit.c).
 *
 * The 4x4x4 model of bk_test_vox_limit.h, written as a .vox at +limit, -limit and with two
 * mirroring rotations, loaded by the reader. For every accel (BVH, its compressed wide layout,
 * KD-tree) x stack strategy x closest / any hit: the rays along the axes get exactly the hit
 * computed in integers on both backends, and every CUDA hit equals the CPU's (the walk is the same
 * code, unfused: bk_voxel.h), all but 1 % of the rays at the model's middle bit for bit. Each
 * placement is also baked with --backend cuda into a non-empty, finite image whose mean is the
 * CPU bake's within 2 %. Skips (77) without a usable GPU.
 */
#include "accel_build.h"
#include "backend.h"
#include "registry.h"
#include "bk_test.h"
#include "bk_test_run.h"
#include "bk_test_stacks.h"
#include "bk_test_vox_limit.h"
#include "image.h"
#include "loader.h"
#include "rays.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

/* the sizes a sized stack strategy runs at (bk_test_stacks: every strategy) */
static const int stack_sizes[] = { 1, 2, 8 };

static void compare(const char *name, bk_backend *gpu, bk_backend *cpu, const bk_scene *s)
{
    char           err[512], why[300];
    uint32_t       n, n_exact;
    bk_hit        *want;
    bk_ray        *rays = bk_test_lim_rays(s, 4000, 23, &n, &n_exact, &want);
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
        int           brc = bk_accel_build(s, accel, &bo, &a, err, sizeof err);
        BK_EXPECTF(brc == 0, "%s: %s", name, err);
        if (brc) continue;
        bk_accel_view v = bk_accel_get_view(&a);
        BK_EXPECTF(gpu->i->upload(gpu, &v, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(cpu->i->upload(cpu, &v, err, sizeof err) == 0, "%s", err);
        for (int l = 0; l < nlay; ++l)
            for (int vi = 0; vi < nst && lay[l].build == accel; ++vi)
                for (int any = 0; any < 2; ++any) {
                    const int     layout = lay[l].width == 8;
                    bk_trace_opts o = bk_trace_opts_default();
                    o.bvh_width = lay[l].width;
                    o.stack_mode = st[vi].mode;
                    o.stack_size = bk_test_stack_size(st[vi]);
                    o.any_hit = any;
                    bk_trace_totals tc, tg;
                    memset(ref, 0xAB, sizeof(bk_hit) * n);
                    memset(got, 0xCD, sizeof(bk_hit) * n);
                    BK_EXPECTF(cpu->i->trace(cpu, rays, ref, n, &o, &tc, err, sizeof err) == 0, "%s", err);
                    BK_EXPECTF(gpu->i->trace(gpu, rays, got, n, &o, &tg, err, sizeof err) == 0, "%s", err);
                    uint32_t bad = 0, differ = 0;
                    for (uint32_t i = 0; i < n; ++i) {
                        int ok;
                        if (i < n_exact) {
                            /* exact on both sides: the same hit, and the one computed in integers */
                            ok = memcmp(&ref[i], &got[i], sizeof(bk_hit)) == 0 &&
                                 (got[i].tri == BK_NO_HIT) == (want[i].tri == BK_NO_HIT) &&
                                 (any || got[i].tri == BK_NO_HIT ||
                                  (got[i].tri == want[i].tri && got[i].t == want[i].t));
                            snprintf(why, sizeof why, "want t %.9g id %u", (double)want[i].t, want[i].tri);
                        } else {
                            ok = bk_test_lim_check_far(s, &rays[i], got[i], why, sizeof why);
                            if (memcmp(&ref[i], &got[i], sizeof(bk_hit)) != 0) {
                                differ++;
                                ok = ok && bk_hit_agree(ref[i], got[i], any, 1e-4f);
                            }
                        }
                        if (!ok && bad++ < 5)
                            fprintf(stderr, "  %s %s%s %s/%d %s ray %u: cpu (t %.9g, id %u) cuda (t %.9g, id %u): %s\n",
                                    name, bk_accel_type_name(accel), layout ? " cw" : "",
                                    bk_stack_mode_name(o.stack_mode), o.stack_size, any ? "any" : "closest", i,
                                    (double)ref[i].t, ref[i].tri, (double)got[i].t, got[i].tri, why);
                    }
                    BK_EXPECTF(bad == 0 && differ * 100 <= n - n_exact,
                               "%s %s%s %s/%d %s: %u of %u rays wrong, %u differ from the CPU's", name,
                               bk_accel_type_name(accel), layout ? " cw" : "", bk_stack_mode_name(o.stack_mode),
                               o.stack_size, any ? "any" : "closest", bad, n, differ);
                }
        bk_accel_free(&a);
    }
    free(rays);
    free(want);
    free(ref);
    free(got);
}

/* The mean of an image file's channels; -1 when it cannot be read or holds a non-finite texel. */
static double image_mean(const char *path, int *w, int *h)
{
    char   err[512];
    float *rgb = NULL;
    if (bk_image_read(path, &rgb, w, h, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1.0;
    }
    double   sum = 0.0;
    uint64_t n = 3ull * (uint64_t)*w * (uint64_t)*h;
    for (uint64_t i = 0; i < n; ++i) {
        if (!isfinite(rgb[i]) || rgb[i] < 0.0f) {
            free(rgb);
            return -1.0;
        }
        sum += rgb[i];
    }
    free(rgb);
    return n ? sum / (double)n : -1.0;
}

static void bake(const char *name, const char *vox, int k)
{
    char   args[2048], out[2][600], err[8192];
    double mean[2];
    for (int b = 0; b < 2; ++b) {
        snprintf(out[b], sizeof out[b], "%s/lim%d-%s.hdr", tmpdir, k, b ? "cuda" : "cpu");
        snprintf(args, sizeof args, "'%s' -o '%s' --size 64 --spp 16 --backend %s --quiet", vox, out[b],
                 b ? "cuda" : "cpu");
        int rc = bk_test_run_baker(tmpdir, err, sizeof err, args);
        BK_EXPECTF(rc == 0, "%s: baker --backend %s exited %d: %s", name, b ? "cuda" : "cpu", rc, err);
        int w = 0, h = 0;
        mean[b] = image_mean(out[b], &w, &h);
        BK_EXPECTF(w == 64 && h == 64 && mean[b] > 0.0, "%s (%s): %dx%d image, mean %g", name, b ? "cuda" : "cpu", w, h,
                   mean[b]);
        unlink(out[b]);
    }
    BK_EXPECTF(fabs(mean[1] - mean[0]) <= 0.02 * mean[0], "%s: cuda bake's mean %.6g, cpu's %.6g", name, mean[1],
               mean[0]);
}

int main(void)
{
    char        msg[512], err[1024], path[600];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("%s", msg);
    bk_backend *cpu = bk_backend_cpu_init();
    printf("%s\n", msg);
    snprintf(tmpdir, sizeof tmpdir, "%s/bk_gpu_voxlim_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    printf("model placed at +-%lld (BK_VOX_MAX_COORD %d)\n", (long long)BK_TEST_VOX_AT, BK_VOX_MAX_COORD);
    for (int k = 0; k < BK_TEST_LIM_PLACES; ++k) {
        const bk_test_lim_place *p = &bk_test_lim_places[k];
        snprintf(path, sizeof path, "%s/lim%d.vox", tmpdir, k);
        BK_EXPECT(bk_test_lim_write(path, p, BK_TEST_VOX_AT) == 0);
        bk_scene s;
        int      rc = bk_scene_load(path, &s, err, sizeof err);
        BK_EXPECTF(rc == 0, "%s: %s", p->name, err);
        if (rc) continue;
        compare(p->name, gpu, cpu, &s);
        bk_scene_free(&s);
        bake(p->name, path, k);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    bk_backend_free(gpu);
    bk_backend_free(cpu);
    BK_TEST_DONE();
}
