/* cpu_probes.c - light probes (kernels/bk_bake.h, bk_bake_probe) against answers known in closed
 * form, and their grid (src/bake/probes.h).
 *
 * - Furnace: inside a closed box whose walls all emit Le and have albedo a, a probe sees radiance
 *   L = Le (1 + a + ... + a^B) from every direction: c_00 = sqrt(4 pi) L (so E(n) = pi L), the other
 *   eight coefficients 0 within noise.
 * - A sun alone (no sky, nothing lit near): c_lm = E Y_lm(sun) within the sun's radius; a point light
 *   alone: c_lm = I / d^2 Y_lm(towards it), to rounding.
 * - A wall lit by a sun baked indirect (the engine draws the sun itself): the probe in front of it
 *   gets only the wall's light, so its L1 points at the wall; with the sun baked, at the sun.
 * - Validity: a probe inside a closed box sees only back faces, one under a floor half of them: both
 *   invalid; one in the open above the floor valid.
 * - The same bits with 1 or 3 threads; the grid's placement and its limit.
 */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "bake.h"
#include "probes.h"

#include <math.h>

static bk_bake_params params(uint32_t spp, uint32_t bounces)
{
    bk_bake_params p;
    memset(&p, 0, sizeof p);
    p.mode = BK_BAKE_LIGHT;
    p.spp = spp;
    p.sample_end = spp;
    p.bounces = bounces;
    p.seed = 5;
    p.eps = 1e-4f;
    p.texel_world = 0.01f;
    p.sun_cos = 1.0f;
    return p;
}

static int threads = 0; /* the CPU backend's: 0 = all cores */

/* The n probes at pos baked in s with p (and npoints point lights, 6 floats each) into set. */
static void bake_probes(const bk_scene *s, const float *pos, uint32_t n, const bk_bake_params *p, const float *points,
                        uint32_t npoints, bk_probe_set *set)
{
    char          err[256];
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(s, points, npoints, &d, err, sizeof err) == 0, "%s", err);
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view  v = bk_bake_data_view(&d, &a);
    bk_trace_opts o = bk_trace_opts_default();
    o.threads = threads;
    memset(set, 0, sizeof *set);
    set->n = n;
    set->pos = malloc(sizeof(float) * 3 * n);
    memcpy(set->pos, pos, sizeof(float) * 3 * n);
    bk_trace_totals t;
    BK_EXPECTF(bk_bake_probes(be, &v, p, &o, set, &t, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(t.rays >= (uint64_t)n * p->spp);
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
}

static const float sqrt_4pi = 3.5449077f;

static void check_furnace(void)
{
    const float le = 0.5f, alb = 0.6f;
    bk_scene    s;
    bk_test_scene_inward_box(&s, alb, le);
    const float pos[6] = { 0, 0, 0, 0.3f, -0.5f, 0.6f };
    for (uint32_t bounces = 0; bounces <= 3; bounces += 3) {
        bk_bake_params p = params(4096, bounces);
        bk_probe_set   set;
        bake_probes(&s, pos, 2, &p, NULL, 0, &set);
        double L = 0.0;
        for (uint32_t k = 0; k <= bounces; ++k) L += le * pow(alb, k);
        for (uint32_t i = 0; i < 2; ++i) {
            const float *c = set.sh + 27 * i;
            BK_EXPECTF(set.valid[i] && set.backs[i] == 0.0f, "furnace probe %u: backs %g", i, set.backs[i]);
            for (int ch = 0; ch < 3; ++ch) {
                BK_EXPECTF(fabs(c[ch] - sqrt_4pi * L) <= 0.01 * sqrt_4pi * L,
                           "furnace, %u bounces, probe %u channel %d: c00 %.5f, expected %.5f", bounces, i, ch, c[ch],
                           sqrt_4pi * L);
                for (int k = 1; k < 9; ++k)
                    BK_EXPECTF(fabs(c[3 * k + ch]) <= 0.06 * sqrt_4pi * L,
                               "furnace, %u bounces, probe %u: coefficient %d channel %d is %.5f, not 0", bounces, i, k,
                               ch, c[3 * k + ch]);
            }
        }
        bk_probe_set_free(&set);
    }
    bk_scene_free(&s);
}

/* |c_lm - e Y_lm(d)| within tol x |e| for every coefficient and channel of probe c. */
static void expect_delta(const char *what, const float *c, const float e[3], bk_vec3 d, float tol)
{
    float y[9];
    bk_sh9(bk_normalize3(d), y);
    for (int k = 0; k < 9; ++k)
        for (int ch = 0; ch < 3; ++ch)
            BK_EXPECTF(fabsf(c[3 * k + ch] - e[ch] * y[k]) <= tol * e[ch],
                       "%s: coefficient %d channel %d: %.6f, expected %.6f", what, k, ch, c[3 * k + ch], e[ch] * y[k]);
}

static void check_sun_and_point(void)
{
    bk_scene s;
    bk_test_scene_ground(&s, 2);
    const float pos[3] = { 0, 5, 0 };
    /* the sun lights the ground below, which a bounce would bring back: no bounces here */
    bk_bake_params p = params(256, 0);
    const float    sd[3] = { 0.48f, 0.6f, -0.64f }, e[3] = { 3, 2.9f, 2.7f };
    for (int k = 0; k < 3; ++k) p.sun_dir[k] = sd[k], p.sun_color[k] = e[k];
    p.sun_cos = cosf(0.5f * 3.14159265f / 180.0f);
    bk_probe_set set;
    bake_probes(&s, pos, 1, &p, NULL, 0, &set);
    /* Y moves by at most 2 x 1.09 x sin(0.5 degrees) = 0.019 of its scale across the cone */
    expect_delta("a sun alone", set.sh, e, bk_v3(sd[0], sd[1], sd[2]), 0.02f);
    BK_EXPECT(set.valid[0] && set.backs[0] == 0.0f); /* above the ground: no backs */
    bk_probe_set_free(&set);
    /* a point light of intensity I at distance 2: irradiance I / 4 */
    p = params(64, 0);
    const float pt[6] = { 1.2f, 6.6f, 0, 8, 4, 2 }, ei[3] = { 2, 1, 0.5f };
    bake_probes(&s, pos, 1, &p, pt, 1, &set);
    expect_delta("a point light alone", set.sh, ei, bk_v3(1.2f, 1.6f, 0), 1e-5f);
    bk_probe_set_free(&set);
    bk_scene_free(&s);
}

static void check_wall(void)
{
    /* a 6 x 6 wall at x = 1 facing -x, and the sun on the -x side shining on it; the probe between */
    bk_scene s;
    bk_test_scene_alloc(&s, 2);
    float wa[3] = { 1, -3, -3 }, wb[3] = { 1, -3, 3 }, wc[3] = { 1, 3, 3 }, wd[3] = { 1, 3, -3 };
    bk_test_set_tri(&s, 0, wa, wb, wc);
    bk_test_set_tri(&s, 1, wa, wc, wd);
    const float pos[3] = { 0, 0.2f, 0.3f };
    for (uint32_t mode = BK_LIGHT_BAKED; mode <= BK_LIGHT_INDIRECT; ++mode) {
        bk_bake_params p = params(1024, 1);
        p.sun_dir[0] = -1;
        p.sun_color[0] = p.sun_color[1] = p.sun_color[2] = 3;
        p.sun_cos = cosf(0.5f * 3.14159265f / 180.0f);
        p.sun_mode = mode;
        bk_probe_set set;
        bake_probes(&s, pos, 1, &p, NULL, 0, &set);
        /* L1 (green): (c11, c1-1, c10) is along the irradiance vector */
        const float *c = set.sh;
        bk_vec3      l1 = bk_normalize3(bk_v3(c[3 * 3 + 1], c[3 * 1 + 1], c[3 * 2 + 1]));
        const float  towards = mode == BK_LIGHT_BAKED ? -1.0f : 1.0f; /* the sun, or the wall */
        BK_EXPECTF(l1.x * towards > 0.9f, "sun %s: L1 (%.3f, %.3f, %.3f) does not point at the %s",
                   mode == BK_LIGHT_BAKED ? "baked" : "indirect", l1.x, l1.y, l1.z,
                   mode == BK_LIGHT_BAKED ? "sun" : "wall");
        BK_EXPECT(set.sh[1] > 0.0f && set.valid[0]);
        bk_probe_set_free(&set);
    }
    bk_scene_free(&s);
}

static void check_validity(void)
{
    bk_scene s;
    bk_test_scene_box(&s); /* outward-facing: from inside, all backs */
    const float    pos[9] = { 0.2f, 0.1f, -0.3f, 0, 3, 0, 0, -2, 0.5f };
    bk_bake_params p = params(256, 1);
    p.sky[0] = p.sky[1] = p.sky[2] = 1;
    bk_probe_set set;
    bake_probes(&s, pos, 3, &p, NULL, 0, &set);
    BK_EXPECTF(!set.valid[0] && set.backs[0] == 1.0f, "inside a box: backs %g, valid %d", set.backs[0], set.valid[0]);
    BK_EXPECTF(set.valid[1] && set.backs[1] == 0.0f, "above a box: backs %g, valid %d", set.backs[1], set.valid[1]);
    BK_EXPECTF(set.valid[2] && set.backs[2] == 0.0f, "below a box: backs %g", set.backs[2]);
    bk_probe_set_free(&set);
    bk_scene_free(&s);
    /* under a floor (facing up): about half the rays meet its back */
    bk_test_scene_ground(&s, 2);
    const float under[6] = { 0, -1, 0, 0, 1, 0 };
    bake_probes(&s, under, 2, &p, NULL, 0, &set);
    BK_EXPECTF(!set.valid[0] && set.backs[0] > 0.4f && set.backs[0] < 0.6f, "under a floor: backs %g, valid %d",
               set.backs[0], set.valid[0]);
    BK_EXPECTF(set.valid[1] && set.backs[1] == 0.0f, "over a floor: backs %g", set.backs[1]);
    bk_probe_set_free(&set);
    bk_scene_free(&s);
}

static void check_threads(void)
{
    bk_scene s;
    bk_test_scene_inward_box(&s, 0.6f, 0.5f);
    const float    pos[9] = { 0, 0, 0, 0.5f, 0.5f, 0.5f, -0.7f, 0.1f, 0.2f };
    bk_bake_params p = params(100, 2); /* one chunk and part of another */
    bk_probe_set   a, b;
    threads = 1;
    bake_probes(&s, pos, 3, &p, NULL, 0, &a);
    threads = 3;
    bake_probes(&s, pos, 3, &p, NULL, 0, &b);
    threads = 0;
    BK_EXPECT(memcmp(a.sh, b.sh, sizeof(float) * 27 * 3) == 0);
    bk_probe_set_free(&a);
    bk_probe_set_free(&b);
    bk_scene_free(&s);
}

static void check_grid(void)
{
    char         err[256];
    bk_probe_set g;
    const float  lo[3] = { -1, 0, 2 }, hi[3] = { 3.2f, 0, 2.9f };
    BK_EXPECTF(bk_probe_grid(lo, hi, 1.0f, &g, err, sizeof err) == 0, "%s", err);
    /* 4 cells across x (4.2 long: 0.6 margins), one probe across the flat y and the 0.9 of z */
    BK_EXPECT(g.n == 4 && g.grid_dims[0] == 4 && g.grid_dims[1] == 1 && g.grid_dims[2] == 1);
    BK_EXPECTF(fabsf(g.pos[0] - (-0.4f)) < 1e-6f && fabsf(g.pos[9] - 2.6f) < 1e-6f && g.pos[1] == 0.0f &&
                   fabsf(g.pos[2] - 2.45f) < 1e-6f,
               "grid: first probe (%g, %g, %g), last x %g", g.pos[0], g.pos[1], g.pos[2], g.pos[9]);
    bk_probe_set_free(&g);
    const float big[3] = { 1000, 1000, 1000 }, zero[3] = { 0, 0, 0 };
    BK_EXPECT(bk_probe_grid(zero, big, 1.0f, &g, err, sizeof err) != 0 && strstr(err, "probes, more than"));
    BK_EXPECT(bk_probe_grid(zero, big, 0.0f, &g, err, sizeof err) != 0);
}

int main(void)
{
    check_furnace();
    check_sun_and_point();
    check_wall();
    check_validity();
    check_threads();
    check_grid();
    BK_TEST_DONE();
}
