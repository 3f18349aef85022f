/* cpu_voxel_limit.c - voxels at the .vox reader's translation limit (BK_VOX_MAX_COORD, vox.h)
 * on the CPU backend (issue 33: past 2^24 the leaf record's floats rounded the segment's box and
 * the translation, and the walk read bricks out of bounds).
 *
 * A 4x4x4 model (bk_test_vox_limit.h) is written as a .vox placed at +limit, -limit and with two
 * mirroring rotations, and loaded by the reader. For every accel (BVH, its compressed wide
 * layout, KD-tree) and stack strategy, closest and any hit: rays along each axis through every
 * column of cells get exactly the hit computed in integers (id, face and t), and rays from all
 * around at the model's middle mostly hit, each a voxel near the ray (at 2^23 a float holds no
 * fraction of a cell: see bk_test_lim_check_far). Each placement is also baked
 * by the baker program (CPU, a small atlas) into a non-empty, finite image. One past the limit the
 * reader refuses the file; an instance made in memory whose cells reach past what a float holds
 * exactly is refused by the builders (bk_geom_init), while one that stays just inside is traced
 * exactly. Build with -DBK_TEST_VOX_AT=... to place the model elsewhere.
 */
#include "accel_build.h"
#include "backend.h"
#include "bk_test.h"
#include "bk_test_run.h"
#include "bk_test_stacks.h"
#include "bk_test_vox_limit.h"
#include "bk_test_voxels.h"
#include "image.h"
#include "loader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char     tmpdir[256];
static uint32_t worst_miss;

/* the sizes a sized stack strategy runs at (bk_test_stacks: every strategy, on every layout) */
static const int stack_sizes[] = { 1, 8 };

/* Every variant on the scene's rays; the exact ones against want, the rest near the model. */
static void trace_all(const char *name, const bk_scene *s)
{
    char     err[512], why[300];
    uint32_t n, n_exact;
    bk_hit  *want;
    bk_ray  *rays = bk_test_lim_rays(s, 2000, 17, &n, &n_exact, &want);
    bk_hit  *got = malloc(sizeof(bk_hit) * n);
    uint32_t exact_hits = 0;
    for (uint32_t i = 0; i < n_exact; ++i) exact_hits += want[i].tri != BK_NO_HIT;
    BK_EXPECTF(n_exact >= 6 * 16 && exact_hits * 2 > n_exact, "%s: %u of %u axis rays hit", name, exact_hits, n_exact);
    bk_backend    *be = bk_backend_cpu_init();
    bk_test_stack  st[BK_TEST_STACKS_MAX];
    const int      nst = bk_test_stacks(stack_sizes, (int)(sizeof stack_sizes / sizeof stack_sizes[0]), st);
    bk_test_layout lay[BK_TEST_LAYOUTS_MAX];
    const int      nlay = bk_test_layouts(lay);
    for (int b = 0; b < nlay; ++b) {
        if (!bk_test_layout_first(lay, b)) continue; /* each accel built once, for all of its layouts */
        bk_accel      a;
        bk_build_opts bo = bk_build_opts_default();
        int           brc = bk_accel_build(s, lay[b].build, &bo, &a, err, sizeof err);
        BK_EXPECTF(brc == 0, "%s: %s", name, err);
        if (brc) continue;
        bk_accel_view v = bk_accel_get_view(&a);
        BK_EXPECTF(be->i->upload(be, &v, err, sizeof err) == 0, "%s", err);
        for (int vi = 0; vi < nlay * nst; ++vi) {
            /* (a layout of triangles only, the compressed BVH, traces the binary one here) */
            const bk_test_layout *la = &lay[vi / nst];
            const bk_test_stack  *sv = &st[vi % nst];
            const struct {
                int accel, width, mode;
            } vv = { la->build, la->width, sv->mode }, *va = &vv;
            if (la->build != lay[b].build) continue;
            for (int any = 0; any < 2; ++any) {
                bk_trace_opts o = bk_trace_opts_default();
                o.bvh_width = va->width;
                o.stack_mode = va->mode;
                o.stack_size = bk_test_stack_size(*sv);
                o.any_hit = any;
                bk_trace_totals tt;
                memset(got, 0xAB, sizeof(bk_hit) * n);
                BK_EXPECTF(be->i->trace(be, rays, got, n, &o, &tt, err, sizeof err) == 0, "%s", err);
                uint32_t bad = 0, far_miss = 0;
                for (uint32_t i = 0; i < n; ++i) {
                    int ok;
                    if (i < n_exact) {
                        ok = (got[i].tri == BK_NO_HIT) == (want[i].tri == BK_NO_HIT);
                        if (ok && want[i].tri != BK_NO_HIT && !any)
                            ok = got[i].tri == want[i].tri && got[i].t == want[i].t;
                        if (ok && want[i].tri != BK_NO_HIT && any)
                            ok = got[i].t >= 0.0f && got[i].t <= want[i].t + 4.0f;
                        snprintf(why, sizeof why, "want t %.9g id %u", (double)want[i].t, want[i].tri);
                    } else {
                        ok = bk_test_lim_check_far(s, &rays[i], got[i], why, sizeof why);
                        far_miss += got[i].tri == BK_NO_HIT;
                    }
                    if (!ok && bad++ < 5)
                        fprintf(
                            stderr,
                            "  %s %s%s %s/%d %s ray %u (%.9g %.9g %.9g) along (%.6g %.6g %.6g): got t %.9g id %u: %s\n",
                            name, bk_accel_type_name(va->accel), va->width == 8 ? " cw" : "",
                            bk_stack_mode_name(va->mode), o.stack_size, any ? "any" : "closest", i, (double)rays[i].ox,
                            (double)rays[i].oy, (double)rays[i].oz, (double)rays[i].dx, (double)rays[i].dy,
                            (double)rays[i].dz, (double)got[i].t, got[i].tri, why);
                }
                BK_EXPECTF(bad == 0, "%s %s%s %s/%d %s: %u of %u rays wrong", name, bk_accel_type_name(va->accel),
                           va->width == 8 ? " cw" : "", bk_stack_mode_name(va->mode), o.stack_size,
                           any ? "any" : "closest", bad, n);
                /* (+-2^23: 0 to 4 % of them, where the walk started a cell off) */
                BK_EXPECTF(far_miss * 10 <= n - n_exact, "%s %s%s %s/%d %s: %u of %u rays at the model's middle missed",
                           name, bk_accel_type_name(va->accel), va->width == 8 ? " cw" : "",
                           bk_stack_mode_name(va->mode), o.stack_size, any ? "any" : "closest", far_miss, n - n_exact);
                if (far_miss > worst_miss) worst_miss = far_miss;
            }
        }
        bk_accel_free(&a);
    }
    bk_backend_free(be);
    free(rays);
    free(want);
    free(got);
}

/* The baker program on the file: exit 0, an image of finite texels, some of them lit. */
static void bake(const char *name, const char *vox, int k)
{
    char args[2048], out[600], err[8192];
    snprintf(out, sizeof out, "%s/lim%d.hdr", tmpdir, k);
    snprintf(args, sizeof args, "'%s' -o '%s' --size 64 --spp 4 --backend cpu --quiet", vox, out);
    int rc = bk_test_run_baker(tmpdir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "%s: baker exited %d: %s", name, rc, err);
    float *rgb = NULL;
    int    w = 0, h = 0;
    BK_EXPECTF(bk_image_read(out, &rgb, &w, &h, err, sizeof err) == 0, "%s: %s", name, err);
    uint64_t lit = 0, bad = 0;
    for (uint64_t i = 0; rgb && i < 3ull * (uint64_t)w * (uint64_t)h; ++i) {
        lit += rgb[i] > 0.0f;
        bad += !isfinite(rgb[i]) || rgb[i] < 0.0f;
    }
    BK_EXPECTF(w == 64 && h == 64 && lit > 100 && bad == 0, "%s: %dx%d image, %llu channels lit, %llu not finite", name,
               w, h, (unsigned long long)lit, (unsigned long long)bad);
    free(rgb);
    unlink(out);
}

/* The builders' own bound: cells and the bricks around them must be integers a float holds. */
static void check_geom_bound(void)
{
    char                err[512];
    uint8_t             xyzi[4 * 64];
    uint32_t            nv = bk_test_lim_voxels(xyzi);
    static const int8_t id[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 }, mir[9] = { 0, -1, 0, 0, 0, 1, 1, 0, 0 };
    /* just inside (the box reaches BK_VOX_MAX_WORLD - 4, on both sides): traced exactly */
    const int32_t in_t = BK_VOX_MAX_WORLD - 6;
    for (int k = 0; k < 2; ++k) {
        bk_scene s;
        memset(&s, 0, sizeof s);
        bk_test_add_model(&s, 4, 4, 4, xyzi, nv);
        bk_test_add_instance(&s, 0, k ? mir : id, k ? -in_t : in_t, in_t, k ? -in_t : in_t);
        trace_all(k ? "in memory, -(2^24 - 6), mirrored" : "in memory, 2^24 - 6", &s);
        bk_scene_free(&s);
    }
    /* past it: refused with one line naming the bound, never traced */
    const int32_t past[] = { BK_VOX_MAX_WORLD - 5, 1 << 25, 268435000 };
    for (size_t k = 0; k < sizeof past / sizeof past[0]; ++k) {
        bk_scene s;
        memset(&s, 0, sizeof s);
        bk_test_add_model(&s, 4, 4, 4, xyzi, nv);
        bk_test_add_instance(&s, 0, id, 0, k == 1 ? -past[k] : 0, past[k]);
        for (int accel = 0; accel < 2; ++accel) {
            bk_accel      a;
            bk_build_opts bo = bk_build_opts_default();
            err[0] = 0;
            int rc = bk_accel_build(&s, accel ? BK_ACCEL_KDTREE : BK_ACCEL_BVH, &bo, &a, err, sizeof err);
            BK_EXPECTF(rc != 0, "an instance at %d was built", past[k]);
            if (rc == 0) {
                bk_accel_free(&a);
                continue;
            }
            BK_EXPECTF(strstr(err, "voxel instance 0") && strstr(err, "16777216") && !strchr(err, '\n'), "message: %s",
                       err);
        }
        bk_scene_free(&s);
    }
}

int main(void)
{
    char path[600], err[1024];
    snprintf(tmpdir, sizeof tmpdir, "%s/bk_cpu_voxlim_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    const long long at = BK_TEST_VOX_AT;
    printf("model placed at +-%lld (BK_VOX_MAX_COORD %d)\n", at, BK_VOX_MAX_COORD);
    for (int k = 0; k < BK_TEST_LIM_PLACES; ++k) {
        const bk_test_lim_place *p = &bk_test_lim_places[k];
        snprintf(path, sizeof path, "%s/lim%d.vox", tmpdir, k);
        BK_EXPECT(bk_test_lim_write(path, p, at) == 0);
        bk_scene s;
        int      rc = bk_scene_load(path, &s, err, sizeof err);
        BK_EXPECTF(rc == 0, "%s: %s", p->name, err);
        if (rc) continue;
        /* the file's t in the world's Y-up frame: (x, z, -y) */
        BK_EXPECT(s.vox_instance_count == 1 && s.vox_instances[0].t[0] == at * p->sx &&
                  s.vox_instances[0].t[1] == at * p->sz && s.vox_instances[0].t[2] == -at * p->sy);
        trace_all(p->name, &s);
        bk_scene_free(&s);
        bake(p->name, path, k);
        unlink(path);
    }
    /* one past the limit on one axis: refused, naming the limit */
    char lim[32];
    snprintf(lim, sizeof lim, "%d", BK_VOX_MAX_COORD);
    for (int sg = -1; sg <= 1; sg += 2) {
        snprintf(path, sizeof path, "%s/past.vox", tmpdir);
        BK_EXPECT(bk_test_lim_write_t(path, 4, 0, sg * (BK_VOX_MAX_COORD + 1ll), 0) == 0);
        bk_scene s;
        err[0] = 0;
        int rc = bk_scene_load(path, &s, err, sizeof err);
        BK_EXPECTF(rc != 0, "a translation of %lld was read", sg * (BK_VOX_MAX_COORD + 1ll));
        if (rc == 0) bk_scene_free(&s);
        else BK_EXPECTF(strstr(err, lim) && !strchr(err, '\n'), "message: %s", err);
        unlink(path);
    }
    check_geom_bound();
    printf("rays at the model's middle that missed: at most %u of 2000 in one run\n", worst_miss);
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    BK_TEST_DONE();
}
