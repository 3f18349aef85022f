/* cpu_bake.c - the bake against answers known in closed form, and its determinism.
 *
 * - Furnace: inside a closed box whose walls all emit Le and have albedo a, every texel sees
 *   radiance Le (1 + a + ... + a^B) after B bounces. Checked within 1 %.
 * - A plane under a sun of angular radius r: the texel holds E / pi with
 *   E = sun * (1 + cos r) / 2 (the mean cosine over the cone); under a constant sky L it holds L.
 * - AO: an open plane is fully open (1), the inside of a closed box fully occluded (0).
 * - The furnace again in a room of voxels (a hollow 8^3 model): traced natively, lit by its own
 *   surface's emissive quads.
 * - Mixed lighting: a sun or point light baked `indirect` leaves out exactly its direct term (the
 *   full bake minus the bake without bounces, from the same samples; bit for bit in its shadow),
 *   `off` all of its light.
 * - Directional sums: the same map bits; b . n = M at every texel; one sun: b points at it; a
 *   constant sky over an open plane: b along the normal only.
 * - Determinism: stack strategy, thread count, launch slicing and baking on several devices (a
 *   group of CPU backends) change no texel (mesh and voxels).
 */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "bk_test_stacks.h"
#include "bake.h"
#include "loader.h"
#include "voxmesh.h"

#include <math.h>

/* Texels at the centres of faces of the box / points of a plane, with the given normal. */
static bk_texel texel(float x, float y, float z, float nx, float ny, float nz, uint32_t pixel)
{
    bk_texel t;
    t.px = x;
    t.py = y;
    t.pz = z;
    t.nx = nx;
    t.ny = ny;
    t.nz = nz;
    t.tri = 0;
    t.pixel = pixel;
    return t;
}

static bk_bake_run_opts opts(uint32_t spp, uint32_t bounces, int mode)
{
    bk_bake_run_opts o;
    memset(&o, 0, sizeof o);
    o.params.mode = (uint32_t)mode;
    o.params.spp = spp;
    o.params.bounces = bounces;
    o.params.seed = 3;
    o.params.eps = 1e-4f;
    o.params.texel_world = 0.01f;
    o.params.sun_cos = 1.0f;
    o.params.ao_distance = 10.0f;
    o.trace = bk_trace_opts_default();
    o.max_launch_ms = 50;
    return o;
}

/* The CPU backends bake2 bakes on: 1, or a group of that many (each a "device" of its own, as
 * GPUs are with --devices), and what its last bake gave. */
static int            devices = 1;
static bk_bake_result last;
static uint32_t       point_mode = BK_LIGHT_BAKED; /* the mode of bake2's point lights */

/* Bakes n texels on the CPU into out[3 * n] (pixel i = texel i): traced in s, shaded with the
 * triangles of surf (a voxel scene's surface; s itself for a mesh). */
static void bake2(const bk_scene *s, const bk_scene *surf, const bk_texel *tx, uint32_t n, const bk_bake_run_opts *o,
                  const float *points, uint32_t npoints, float *out, int allow_inside)
{
    char          err[256];
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(surf, points, npoints, &d, err, sizeof err) == 0, "%s", err);
    for (uint32_t i = 0; i < npoints; ++i) bk_bake_data_point_mode(&d, i, point_mode);
    bk_backend *be = bk_backend_cpu_init();
    if (devices > 1) {
        bk_backend *m[8] = { be };
        for (int k = 1; k < devices; ++k) m[k] = bk_backend_cpu_init();
        BK_EXPECT((be = bk_backend_group(m, devices)) != NULL);
    }
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view   v = bk_bake_data_view(&d, &a);
    uint8_t       *cov = calloc(n, 1);
    bk_bake_result r;
    BK_EXPECTF(bk_bake_texels(be, &v, tx, n, (int)n, 1, o, out, cov, &r, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(allow_inside || r.invalid == 0, "%u texels were taken to be inside geometry", r.invalid);
    BK_EXPECT(r.totals.rays > 0);
    last = r;
    free(cov);
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
}

static void bake(const bk_scene *s, const bk_texel *tx, uint32_t n, const bk_bake_run_opts *o, const float *points,
                 uint32_t npoints, float *out, int allow_inside)
{
    bake2(s, s, tx, n, o, points, npoints, out, allow_inside);
}

static void check_furnace(void)
{
    const float le = 0.5f, alb = 0.6f;
    bk_scene    s;
    bk_test_scene_inward_box(&s, alb, le);
    bk_texel tx[6] = {
        texel(-1, 0.1f, 0.2f, 1, 0, 0, 0),  texel(1, -0.3f, 0.1f, -1, 0, 0, 1), texel(0.2f, -1, 0.1f, 0, 1, 0, 2),
        texel(-0.1f, 1, 0.3f, 0, -1, 0, 3), texel(0.3f, 0.2f, -1, 0, 0, 1, 4),  texel(0, 0, 1, 0, 0, -1, 5),
    };
    for (uint32_t bounces = 0; bounces <= 3; bounces += 3) {
        bk_bake_run_opts o = opts(4096, bounces, BK_BAKE_LIGHT);
        float            out[18];
        bake(&s, tx, 6, &o, NULL, 0, out, 0);
        double expect = 0.0;
        for (uint32_t k = 0; k <= bounces; ++k) expect += le * pow(alb, k);
        for (int i = 0; i < 18; ++i)
            BK_EXPECTF(fabs(out[i] - expect) <= 0.01 * expect,
                       "furnace, %u bounces: texel %d channel %d: %.5f, expected %.5f", bounces, i / 3, i % 3, out[i],
                       expect);
    }
    /* AO inside the closed box: every ray is blocked */
    bk_bake_run_opts o = opts(256, 0, BK_BAKE_AO);
    float            out[18];
    bake(&s, tx, 6, &o, NULL, 0, out, 0);
    for (int i = 0; i < 18; ++i) BK_EXPECTF(out[i] == 0.0f, "AO inside a closed box: %g", out[i]);
    bk_scene_free(&s);
}

/* A hollow model of side 8 (walls one voxel thick) of palette index 1, placed so world = model,
 * whose material 1 has albedo alb and emits le. */
static void voxel_room(bk_scene *s, float alb, float le)
{
    memset(s, 0, sizeof *s);
    s->vox_model_count = 1;
    s->vox_models = calloc(1, sizeof(bk_vox_model));
    bk_vox_model *m = &s->vox_models[0];
    m->size[0] = m->size[1] = m->size[2] = 8;
    m->xyzi = malloc(4 * 512);
    for (int z = 0; z < 8; ++z)
        for (int y = 0; y < 8; ++y)
            for (int x = 0; x < 8; ++x) {
                if (x > 0 && x < 7 && y > 0 && y < 7 && z > 0 && z < 7) continue;
                uint8_t *q = m->xyzi + 4 * (size_t)m->voxel_count++;
                q[0] = (uint8_t)x;
                q[1] = (uint8_t)y;
                q[2] = (uint8_t)z;
                q[3] = 1;
            }
    s->material_count = 256;
    s->materials = calloc(256, sizeof(bk_material));
    for (int k = 0; k < 3; ++k) {
        s->materials[1].kd[k] = alb;
        s->materials[1].ke[k] = le;
    }
    s->vox_instance_count = 1;
    s->vox_instances = calloc(1, sizeof(bk_vox_instance));
    bk_vox_instance *in = &s->vox_instances[0];
    in->object = BK_NONE;
    bk_vox_rot_matrix(bk_vox_rot_byte((const int8_t[9]){ 1, 0, 0, 0, 1, 0, 0, 0, 1 }), in->m);
    for (int k = 0; k < 3; ++k) in->t[k] = 4; /* world = p - floor(8 / 2) + 4 = p */
    bk_vox_instance_place(in, m->size);
}

static void check_voxel_furnace(void)
{
    const float le = 0.5f, alb = 0.6f;
    char        err[256];
    bk_scene    s;
    voxel_room(&s, alb, le);
    bk_voxmesh vm;
    BK_EXPECTF(bk_voxmesh_build(&s, &vm, err, sizeof err) == 0, "%s", err);
    /* texels on the six inner walls (the interior is the cells 1..6) */
    bk_texel tx[6] = {
        texel(1, 3.1f, 4.2f, 1, 0, 0, 0),  texel(7, 2.3f, 5.1f, -1, 0, 0, 1), texel(4.2f, 1, 3.1f, 0, 1, 0, 2),
        texel(2.9f, 7, 3.3f, 0, -1, 0, 3), texel(3.3f, 4.2f, 1, 0, 0, 1, 4),  texel(5, 4, 7, 0, 0, -1, 5),
    };
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(bk_accel_get_view(&a).prim == BK_PRIM_VOX);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&vm.scene, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(d.emit_count > 0);
    bk_backend *be = bk_backend_cpu_init();
    if (devices > 1) {
        bk_backend *m[8] = { be };
        for (int k = 1; k < devices; ++k) m[k] = bk_backend_cpu_init();
        BK_EXPECT((be = bk_backend_group(m, devices)) != NULL);
    }
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view v = bk_bake_data_view(&d, &a);
    for (uint32_t bounces = 0; bounces <= 3; bounces += 3) {
        bk_bake_run_opts o = opts(4096, bounces, BK_BAKE_LIGHT);
        o.params.texel_world = 0.5f;
        float          out[18];
        uint8_t        cov[6];
        bk_bake_result r;
        BK_EXPECTF(bk_bake_texels(be, &v, tx, 6, 6, 1, &o, out, cov, &r, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(r.invalid == 0, "%u texels taken to be inside geometry", r.invalid);
        double expect = 0.0;
        for (uint32_t k = 0; k <= bounces; ++k) expect += le * pow(alb, k);
        for (int i = 0; i < 18; ++i)
            BK_EXPECTF(fabs(out[i] - expect) <= 0.01 * expect,
                       "voxel furnace, %u bounces: texel %d channel %d: %.5f, expected %.5f", bounces, i / 3, i % 3,
                       out[i], expect);
    }
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

static void check_plane(void)
{
    bk_scene s;
    bk_test_scene_ground(&s, 2);
    bk_texel tx[4] = { texel(0, 0, 0, 0, 1, 0, 0), texel(3, 0, -2, 0, 1, 0, 1), texel(-10, 0, 5, 0, 1, 0, 2),
                       texel(0.5f, 0, 0.5f, 0, 1, 0, 3) };
    float    out[12];
    /* a sun straight above, 10 degrees in radius */
    bk_bake_run_opts o = opts(4096, 2, BK_BAKE_LIGHT);
    o.params.sun_dir[1] = 1;
    o.params.sun_color[0] = 2;
    o.params.sun_color[1] = 3;
    o.params.sun_color[2] = 4;
    float r = 10.0f * 3.14159265f / 180.0f;
    o.params.sun_cos = cosf(r);
    bake(&s, tx, 4, &o, NULL, 0, out, 0);
    for (int i = 0; i < 12; ++i) {
        double expect = o.params.sun_color[i % 3] * 0.5 * (1.0 + cos(r)) / 3.14159265358979;
        BK_EXPECTF(fabs(out[i] - expect) <= 0.005 * expect, "sun on a plane: %.6f, expected %.6f", out[i], expect);
    }
    /* a constant sky: every ray escapes */
    o = opts(64, 2, BK_BAKE_LIGHT);
    o.params.sky[0] = 0.25f;
    o.params.sky[1] = 0.5f;
    o.params.sky[2] = 1.0f;
    bake(&s, tx, 4, &o, NULL, 0, out, 0);
    for (int i = 0; i < 12; ++i) BK_EXPECTF(out[i] == o.params.sky[i % 3], "sky on a plane: %g", out[i]);
    /* a point light 2 above: E = I cos / d^2, straight below: I / 4 / pi */
    float pt[6] = { 0, 2, 0, 8, 8, 8 };
    o = opts(16, 0, BK_BAKE_LIGHT);
    bake(&s, tx, 1, &o, pt, 1, out, 0);
    BK_EXPECTF(fabsf(out[0] - 8.0f / 4.0f / 3.14159265f) < 1e-4f, "point light: %g", out[0]);
    /* AO on an open plane */
    o = opts(64, 0, BK_BAKE_AO);
    bake(&s, tx, 4, &o, NULL, 0, out, 0);
    for (int i = 0; i < 12; ++i) BK_EXPECTF(out[i] == 1.0f, "AO on an open plane: %g", out[i]);
    bk_scene_free(&s);
}

/* A scene of n triangles: ground's plane and two 6 x 3 walls standing on it at x = 1 and x = 4,
 * facing -x (triangles 2 to 5). */
static void walls(bk_scene *s, uint32_t n)
{
    bk_test_scene_ground(s, n);
    float wa[3] = { 1, 0, -3 }, wb[3] = { 1, 0, 3 }, wc[3] = { 1, 3, 3 }, wd[3] = { 1, 3, -3 }; /* facing -x */
    bk_test_set_tri(s, 2, wa, wb, wc);
    bk_test_set_tri(s, 3, wa, wc, wd);
    for (int k = 0; k < 4; ++k) {
        float *q[4] = { wa, wb, wc, wd };
        q[k][0] = 4;
    }
    bk_test_set_tri(s, 4, wa, wb, wc);
    bk_test_set_tri(s, 5, wa, wc, wd);
}

/* A sun of irradiance (3, 2.9, 2.7), 0.5 degrees in radius, towards unit (x, y, 0). */
static void sun_at(bk_bake_run_opts *o, float x, float y)
{
    o->params.sun_dir[0] = x;
    o->params.sun_dir[1] = y;
    o->params.sun_color[0] = 3;
    o->params.sun_color[1] = 2.9f;
    o->params.sun_color[2] = 2.7f;
    o->params.sun_cos = cosf(0.5f * 3.14159265f / 180.0f);
}

/* A plane with two walls standing on it, facing -x, lit by one light (a sun, or a point light) of
 * each mode: the light reaches the second wall over the first, not the plane between them. */
static void check_light_modes(void)
{
    bk_scene s;
    walls(&s, 6);
    enum { N = 4, SHADOW = 1 };
    bk_texel tx[N] = { texel(0, 0, 0.5f, 0, 1, 0, 0), texel(2.5f, 0, 0.5f, 0, 1, 0, 1),
                       texel(0.9999f, 1.5f, 0, -1, 0, 0, 2), texel(-3, 0, 1, 0, 1, 0, 3) };
    for (int point = 0; point < 2; ++point) {
        float  pt[6] = { -2, 6, 0, 100, 90, 80 }, full[3 * N], direct[3 * N], ind[3 * N], ind0[3 * N], off[3 * N];
        float *outs[5] = { full, direct, ind, ind0, off };
        for (int k = 0; k < 5; ++k) {
            const uint32_t   mode = k < 2 ? BK_LIGHT_BAKED : k < 4 ? BK_LIGHT_INDIRECT : BK_LIGHT_OFF;
            bk_bake_run_opts o = opts(64, k == 1 || k == 3 ? 0 : 2, BK_BAKE_LIGHT);
            if (!point) {
                sun_at(&o, -0.70710678f, 0.70710678f);
                o.params.sun_mode = mode;
            }
            point_mode = mode;
            bake(&s, tx, N, &o, point ? pt : NULL, point ? 1 : 0, outs[k], 0);
            point_mode = BK_LIGHT_BAKED;
        }
        const char *what = point ? "point light" : "sun";
        float       most = 0.0f;
        for (int i = 0; i < 3 * N; ++i) {
            BK_EXPECTF(fabsf(full[i] - direct[i] - ind[i]) <= 1e-4f * full[i],
                       "%s, texel %d: full %.6f - direct %.6f != indirect %.6f", what, i / 3, full[i], direct[i],
                       ind[i]);
            BK_EXPECTF(ind0[i] == 0.0f && off[i] == 0.0f, "%s, texel %d: indirect without bounces %g, off %g", what,
                       i / 3, ind0[i], off[i]);
            if (ind[i] > most) most = ind[i];
        }
        for (int k = 0; k < 3; ++k)
            BK_EXPECTF(direct[3 * SHADOW + k] == 0.0f && full[3 * SHADOW + k] == ind[3 * SHADOW + k] &&
                           ind[3 * SHADOW + k] > 0.0f && direct[k] > 0.0f,
                       "%s: in the wall's shadow direct %g, full %g, indirect %g; in the light direct %g", what,
                       direct[3 * SHADOW + k], full[3 * SHADOW + k], ind[3 * SHADOW + k], direct[k]);
        BK_EXPECTF(most > 0.01f * full[0], "%s: no bounced light to test with (%g)", what, most);
        printf("%s: texel 0 full %.4f = direct %.4f + indirect %.4f; in the shadow %.4f\n", what, full[0], direct[0],
               ind[0], ind[3 * SHADOW]);
    }
    bk_scene_free(&s);
}

/* b . n of texel i's channel c: b the bands' images of the directional sums (bk_bake_dir_sample),
 * n[3 * i ..] the texel's normal. */
static float dir_dot(float *const b[3], const float *n, uint32_t i, int c)
{
    return b[0][3 * i + c] * n[3 * i] + b[1][3 * i + c] * n[3 * i + 1] + b[2][3 * i + c] * n[3 * i + 2];
}

/* --directional's sums: the map is the same bits with them; b . n = M at every texel (a sun, a
 * point light and an emitter, two bounces); one sun alone: b points at it; a constant sky over
 * an open plane: no part of b along the plane. */
static void check_directional(void)
{
    bk_scene s;
    walls(&s, 7);
    float ea[3] = { -3, 4, 1.5f }, eb[3] = { -3, 4, 2.5f }, ec[3] = { -1, 4, 2.5f }; /* an emitter facing down */
    bk_test_set_tri(&s, 6, ea, ec, eb);
    s.material_count = 2;
    s.materials = calloc(2, sizeof(bk_material));
    s.tri_material = calloc(7, sizeof(uint32_t));
    s.tri_material[6] = 1;
    for (int k = 0; k < 3; ++k) {
        s.materials[0].kd[k] = 0.7f;
        s.materials[1].ke[k] = 4.0f + (float)k;
    }
    enum { N = 6 };
    const bk_texel tx[N] = { texel(0, 0, 0.5f, 0, 1, 0, 0),         texel(2.5f, 0, 0.5f, 0, 1, 0, 1),
                             texel(0.9999f, 1.5f, 0, -1, 0, 0, 2),  texel(-3, 0, 1, 0, 1, 0, 3),
                             texel(3.9999f, 2.5f, -1, -1, 0, 0, 4), texel(-1.5f, 0, -2, 0, 1, 0, 5) };
    float          nrm[3 * N], plain[3 * N], map[3 * N], band[3][3 * N], *b[3] = { band[0], band[1], band[2] };
    for (int i = 0; i < N; ++i) nrm[3 * i] = tx[i].nx, nrm[3 * i + 1] = tx[i].ny, nrm[3 * i + 2] = tx[i].nz;
    float            pt[6] = { -2, 6, 0, 100, 90, 80 };
    bk_bake_run_opts o = opts(64, 2, BK_BAKE_LIGHT);
    sun_at(&o, -0.6f, 0.8f);
    o.params.sky[2] = 0.2f;
    bake(&s, tx, N, &o, pt, 1, plain, 0);
    o.params.directional = 1;
    for (int k = 0; k < 3; ++k) o.dir[k] = b[k];
    bake(&s, tx, N, &o, pt, 1, map, 0);
    BK_EXPECTF(!memcmp(plain, map, sizeof map), "the map changed with --directional (texel 0: %.9g against %.9g)",
               map[0], plain[0]);
    for (uint32_t i = 0; i < N; ++i)
        for (int c = 0; c < 3; ++c)
            BK_EXPECTF(fabsf(dir_dot(b, nrm, i, c) - map[3 * i + c]) <= 1e-5f * map[3 * i + c] + 1e-7f,
                       "texel %u channel %d: b . n = %.7g, the map %.7g", i, c, dir_dot(b, nrm, i, c), map[3 * i + c]);
    /* the sun alone, no bounces: b is the sun's direction times its light over pi */
    o.params.bounces = 0;
    o.params.sky[2] = 0.0f;
    for (int k = 0; k < 3; ++k) s.materials[1].ke[k] = 0.0f;
    bake(&s, tx, N, &o, NULL, 0, map, 0);
    for (uint32_t i = 0; i < N; ++i) {
        if (!(map[3 * i] > 0.0f)) continue; /* in the walls' shadows */
        float l = sqrtf(b[0][3 * i] * b[0][3 * i] + b[1][3 * i] * b[1][3 * i] + b[2][3 * i] * b[2][3 * i]);
        float cosd = (b[0][3 * i] * o.params.sun_dir[0] + b[1][3 * i] * o.params.sun_dir[1]) / l;
        BK_EXPECTF(cosd >= o.params.sun_cos - 1e-6f, "texel %u: b is %.4f degrees off the sun (radius 0.5)", i,
                   acos(cosd > 1 ? 1 : cosd) * 180 / 3.14159265358979);
        BK_EXPECTF(fabsf(dir_dot(b, nrm, i, 0) - map[3 * i]) <= 1e-5f * map[3 * i], "texel %u: b . n %.7g, map %.7g", i,
                   dir_dot(b, nrm, i, 0), map[3 * i]);
    }
    BK_EXPECTF(map[0] > 0.0f && map[3] == 0.0f, "the sun: texel 0 %g lit, texel 1 %g in the first wall's shadow",
               map[0], map[3]);
    /* the point light alone: b points at it; the emitter alone: b's ray from the texel meets it */
    memset(o.params.sun_color, 0, sizeof o.params.sun_color);
    for (int light = 0; light < 2; ++light) {
        for (int k = 0; k < 3; ++k) s.materials[1].ke[k] = light ? 4.0f + (float)k : 0.0f;
        bake(&s, tx, N, &o, light ? NULL : pt, light ? 0 : 1, map, 0);
        const uint32_t on_ground[3] = { 0, 3, 5 };
        for (int q = 0; q < 3; ++q) {
            const uint32_t i = on_ground[q];
            float          d[3] = { b[0][3 * i + 1], b[1][3 * i + 1], b[2][3 * i + 1] }, t = (4.0f - tx[i].py) / d[1];
            float          w[3] = { pt[0] - tx[i].px, pt[1] - tx[i].py, pt[2] - tx[i].pz };
            float          dl = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            float          wl = sqrtf(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
            float          cw = (d[0] * w[0] + d[1] * w[1] + d[2] * w[2]) / (dl * wl);
            float          x = tx[i].px + t * d[0], z = tx[i].pz + t * d[2];
            if (!light)
                BK_EXPECTF(cw > 0.99999f, "texel %u: b is %.4f degrees off the point light", i,
                           acos(cw > 1 ? 1 : cw) * 180 / 3.14159265358979);
            else
                BK_EXPECTF(d[1] > 0 && x >= -3.01f && x <= -0.99f && z >= 1.49f && z <= 2.51f,
                           "texel %u: b's ray meets y = 4 at (%.3f, %.3f), off the emitter", i, x, z);
        }
    }
    bk_scene_free(&s);
    /* a constant sky over an open plane: b = (0, L, 0) within noise */
    bk_test_scene_ground(&s, 2);
    bk_texel open[16];
    for (uint32_t i = 0; i < 16; ++i) open[i] = texel((float)(i % 4) * 7.0f, 0, (float)(i / 4) * 7.0f, 0, 1, 0, i);
    float ob[3][48], *obp[3] = { ob[0], ob[1], ob[2] }, om[48], tang[2] = { 0, 0 };
    o = opts(1024, 0, BK_BAKE_LIGHT);
    o.params.sky[0] = o.params.sky[1] = o.params.sky[2] = 1.0f;
    o.params.directional = 1;
    for (int k = 0; k < 3; ++k) o.dir[k] = obp[k];
    bake(&s, open, 16, &o, NULL, 0, om, 0);
    for (uint32_t i = 0; i < 16; ++i) {
        BK_EXPECTF(fabsf(ob[1][3 * i] - 1.0f) <= 1e-5f, "sky: texel %u b.y %.7g, not 1", i, ob[1][3 * i]);
        tang[0] += ob[0][3 * i] / 16.0f;
        tang[1] += ob[2][3 * i] / 16.0f;
    }
    /* (one sample's part along the plane has a standard deviation of about 2.8, its tangent:
       the mean of 16 x 1024 samples, 0.022) */
    BK_EXPECTF(fabsf(tang[0]) < 0.1f && fabsf(tang[1]) < 0.1f, "sky: b along the plane (%.4f, %.4f), not 0", tang[0],
               tang[1]);
    printf("directional: sky b along the plane (%.4f, %.4f)\n", tang[0], tang[1]);
    bk_scene_free(&s);
}

/* --shadowmask: a box [-1, 1] x [0, 2] x [-1, 1] standing on the ground, a sun of 3 degrees
 * and a point light, both baked indirect, over texels on the ground beside it. The mask's channels
 * are, per texel, the share of the samples whose shadow ray towards each light reaches it, traced
 * here again by brute force with the direct term's own directions (bk_bake_sun_light); the map
 * is the same bits with the mask or without. */
static void check_shadowmask(void)
{
    bk_scene s, box;
    bk_test_scene_ground(&s, 14);
    bk_test_scene_box(&box);
    for (uint32_t t = 0; t < 12; ++t) {
        float p[3][3];
        for (int v = 0; v < 3; ++v)
            for (int k = 0; k < 3; ++k) p[v][k] = box.positions[3 * box.tri_v[3 * t + v] + k] + (k == 1 ? 1.0f : 0.0f);
        bk_test_set_tri(&s, 2 + t, p[0], p[1], p[2]);
    }
    bk_scene_free(&box);
    enum { N = 100, SPP = 64 };
    bk_texel tx[N];
    for (uint32_t i = 0; i < N; ++i) tx[i] = texel(1.05f + 0.02f * (float)i, 0, 0.3f, 0, 1, 0, i);
    float            pt[6] = { 0, 6, 0.2f, 50, 50, 50 }, plain[3 * N], map[3 * N], m0[3 * N];
    bk_bake_run_opts o = opts(SPP, 2, BK_BAKE_LIGHT);
    sun_at(&o, -0.4472136f, 0.8944272f);
    o.params.sun_cos = cosf(3.0f * 3.14159265f / 180.0f);
    o.params.sun_mode = BK_LIGHT_INDIRECT;
    o.params.sky[1] = 0.1f;
    point_mode = BK_LIGHT_INDIRECT;
    bake(&s, tx, N, &o, pt, 1, plain, 0);
    o.params.mask_count = 2;
    o.params.mask_vis[0] = BK_VIS_SUN;
    o.params.mask_vis[1] = 1u << BK_VIS_POINT0;
    for (int k = 0; k < 3 * N; ++k) m0[k] = -1.0f; /* poisoned: every channel is written */
    o.mask[0] = m0;
    bake(&s, tx, N, &o, pt, 1, map, 0);
    point_mode = BK_LIGHT_BAKED;
    BK_EXPECTF(!memcmp(plain, map, sizeof map), "the map changed with --shadowmask (texel 0: %.9g against %.9g)",
               map[0], plain[0]);
    uint32_t part = 0, lit[2] = { 0, 0 }, dark[2] = { 0, 0 };
    for (uint32_t i = 0; i < N; ++i) {
        const bk_vec3 n = bk_v3(0, 1, 0), x = bk_v3(tx[i].px, tx[i].py + o.params.eps, tx[i].pz);
        uint32_t      got[2] = { 0, 0 };
        for (uint32_t smp = 0; smp < SPP; ++smp) {
            bk_vec3 d, light;
            if (bk_bake_sun_light(&o.params, i, smp, 0, n, 0, &d, &light) == BK_USE_MASK) {
                bk_ray r = bk_make_ray(x, d, 0.0f, BK_INF);
                got[0] += bk_test_brute(&s, &r, 1).tri == BK_NO_HIT;
            }
            bk_vec3 w = bk_sub3(bk_v3(pt[0], pt[1], pt[2]), x);
            bk_ray  r = bk_make_ray(x, w, 0.0f, 0.9999f);
            got[1] += bk_test_brute(&s, &r, 1).tri == BK_NO_HIT;
        }
        for (int c = 0; c < 2; ++c) {
            const float want = (float)got[c] * (1.0f / (float)SPP), have = m0[3 * i + (uint32_t)c];
            BK_EXPECTF(have == want, "texel %u (x %.2f), channel %d: the mask %.6f, its shadow rays %.6f", i, tx[i].px,
                       c, have, want);
            lit[c] += have == 1.0f;
            dark[c] += have == 0.0f;
        }
        part += m0[3 * i] > 0.0f && m0[3 * i] < 1.0f;
        BK_EXPECTF(m0[3 * i + 2] == -1.0f, "texel %u: a third channel was written (%g)", i, m0[3 * i + 2]);
    }
    BK_EXPECTF(part >= 2 && lit[0] && dark[0] && lit[1] && dark[1],
               "the scene tests too little: %u texels in the sun's penumbra; sun %u lit %u dark, point %u lit %u dark",
               part, lit[0], dark[0], lit[1], dark[1]);
    printf("shadowmask: %u texels in the penumbra; sun %u lit, %u dark; point %u lit, %u dark\n", part, lit[0], dark[0],
           lit[1], dark[1]);
    bk_scene_free(&s);
}

/* Stack strategy and thread count must not change a texel (closest hits do not depend on them). */
static void check_determinism(void)
{
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    bk_scene s;
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    enum { N = 400 };
    bk_texel tx[N];
    for (uint32_t i = 0; i < N; ++i) /* floor points, some under the boxes */
        tx[i] = texel(1.8f * bk_rng_f(9, i, 0, 0) - 0.9f, 0.0f, 1.8f * bk_rng_f(9, i, 0, 1) - 0.9f, 0, 1, 0, i);
    float           *ref = malloc(sizeof(float) * 3 * N), *got = malloc(sizeof(float) * 3 * N);
    bk_bake_run_opts o = opts(8, 2, BK_BAKE_LIGHT);
    o.trace.threads = 1;
    bake(&s, tx, N, &o, NULL, 0, ref, 1);
    /* every stack strategy (a sized one at 1 and 2 entries: restarts and spills happen) */
    static const int stack_sizes[] = { 1, 2 };
    bk_test_stack    modes[BK_TEST_STACKS_MAX];
    const int        nmodes = bk_test_stacks(stack_sizes, 2, modes);
    for (int m = 0; m < nmodes; ++m) {
        o.trace.stack_mode = modes[m].mode;
        o.trace.stack_size = bk_test_stack_size(modes[m]);
        o.trace.threads = 2;
        bake(&s, tx, N, &o, NULL, 0, got, 1);
        BK_EXPECTF(memcmp(ref, got, sizeof(float) * 3 * N) == 0, "stack %s/%d, 2 threads: other texels",
                   bk_stack_mode_name(modes[m].mode), o.trace.stack_size);
    }
    /* launches of one sample and a few texels each add up to the same sums as long launches */
    o.trace = bk_trace_opts_default();
    o.max_launch_ms = 1e-4;
    bake(&s, tx, N, &o, NULL, 0, got, 1);
    BK_EXPECTF(memcmp(ref, got, sizeof(float) * 3 * N) == 0, "tiny launches: other texels");
    /* several devices (CPU backends standing in for GPUs), each taking blocks as it finishes one
     * (tiny launches: blocks of 256 texels, so each gets some): the same bytes */
    enum { ND = 8192 };
    bk_texel *txd = malloc(sizeof(bk_texel) * ND);
    float    *refd = malloc(sizeof(float) * 3 * ND), *gotd = malloc(sizeof(float) * 3 * ND);
    for (uint32_t i = 0; i < ND; ++i)
        txd[i] = texel(1.8f * bk_rng_f(10, i, 0, 0) - 0.9f, 0.0f, 1.8f * bk_rng_f(10, i, 0, 1) - 0.9f, 0, 1, 0, i);
    o = opts(2, 1, BK_BAKE_LIGHT);
    o.trace.threads = 1;
    bake(&s, txd, ND, &o, NULL, 0, refd, 1);
    o.max_launch_ms = 1e-4;
    for (devices = 2; devices <= 3; ++devices) {
        /* Blocks go to whichever device asks first, so on a loaded machine a device thread the OS
         * starts late can find them all taken (seen twice under heavy load): a bake where some
         * device took none is tried again, up to 5 times; every one must give the same bytes. */
        int idle = -1;
        for (int attempt = 0; attempt < 5 && idle != 0; ++attempt) {
            memset(gotd, 0xff, sizeof(float) * 3 * ND); /* poisoned: every texel must be written */
            bake(&s, txd, ND, &o, NULL, 0, gotd, 1);
            BK_EXPECTF(memcmp(refd, gotd, sizeof(float) * 3 * ND) == 0, "%d devices: other texels", devices);
            uint64_t texels = 0, rays = 0;
            BK_EXPECTF(last.devices == devices, "%d devices reported, %d baked on", last.devices, devices);
            idle = 0;
            for (int k = 0; k < devices; ++k) {
                texels += last.dev[k].texels;
                rays += last.dev[k].rays;
                idle += !(last.dev[k].blocks > 0 && last.dev[k].rays > 0);
            }
            BK_EXPECTF(texels == ND && rays == last.totals.rays, "%d devices: %llu texels, %llu of %llu rays", devices,
                       (unsigned long long)texels, (unsigned long long)rays, (unsigned long long)last.totals.rays);
        }
        BK_EXPECTF(idle == 0, "%d devices: %d of them took no block in 5 bakes", devices, idle);
    }
    devices = 1;
    free(txd);
    free(refd);
    free(gotd);
    bk_scene_free(&s);

    /* the same for voxels: the demo voxel room, texels on its floor (some under the blocks) */
    snprintf(path, sizeof path, "%s/scenes/cornell.vox", BK_SOURCE_DIR);
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    bk_voxmesh vm;
    BK_EXPECTF(bk_voxmesh_build(&s, &vm, err, sizeof err) == 0, "%s", err);
    /* the floor is MagicaVoxel's z = 0, x and y in 0..32: in the Y-up scene frame y = 0, z in -32..0 */
    for (uint32_t i = 0; i < N; ++i)
        tx[i] = texel(32.0f * bk_rng_f(9, i, 0, 0), 0.0f, -32.0f * bk_rng_f(9, i, 0, 1), 0, 1, 0, i);
    o = opts(8, 2, BK_BAKE_LIGHT);
    o.params.eps = 1e-3f;
    o.params.texel_world = 0.5f;
    o.trace.threads = 1;
    bake2(&s, &vm.scene, tx, N, &o, NULL, 0, ref, 1);
    for (int m = 0; m < nmodes; ++m) {
        o.trace.stack_mode = modes[m].mode;
        o.trace.stack_size = bk_test_stack_size(modes[m]);
        o.trace.threads = 2;
        bake2(&s, &vm.scene, tx, N, &o, NULL, 0, got, 1);
        BK_EXPECTF(memcmp(ref, got, sizeof(float) * 3 * N) == 0, "voxels: stack %s/%d, 2 threads: other texels",
                   bk_stack_mode_name(modes[m].mode), o.trace.stack_size);
    }
    o.trace = bk_trace_opts_default();
    o.max_launch_ms = 1e-4;
    bake2(&s, &vm.scene, tx, N, &o, NULL, 0, got, 1);
    BK_EXPECTF(memcmp(ref, got, sizeof(float) * 3 * N) == 0, "voxels: tiny launches: other texels");
    float lo = 1e30f, hi = 0.0f;
    for (int i = 0; i < 3 * N; ++i) {
        lo = fminf(lo, ref[i]);
        hi = fmaxf(hi, ref[i]);
    }
    BK_EXPECTF(hi > 0.0f && lo < hi, "voxel room floor: texels from %g to %g (lit, with shadows)", lo, hi);
    bk_voxmesh_free(&vm);
    free(ref);
    free(got);
    bk_scene_free(&s);
}

int main(void)
{
    check_furnace();
    check_voxel_furnace();
    check_plane();
    check_light_modes();
    check_directional();
    check_shadowmask();
    check_determinism();
    BK_TEST_DONE();
}
