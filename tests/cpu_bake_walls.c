/* cpu_bake_walls.c - open and double-sided geometry baked the same at any sample count (issue 35).
 *
 * A 4 x 4 ground (y = 0) with a wall across it (x = 0, 2 high, 4 wide, facing +x) under a sun from
 * +x, in a 128^2 atlas, the wall made four ways: single-sided, two-faced (two coincident faces of
 * opposite winding, as OBJ exporters write double-sided cards), a closed thin box (0.05 thick),
 * and, for a texel that is inside geometry, the ground with a closed 1 x 1 x 1 cube standing on it.
 *
 * - Sides: only the two-faced wall's four triangles are double-sided (src/bake/sides.h).
 * - The inside step (kernels/bk_bake.h) from probe texels on the ground just behind each wall:
 *   the single-sided wall's back meets some but at most half of its rays (it is an open wall,
 *   however near), the two-faced wall's and the box's none, the cube's more than half under it.
 * - Each scene baked at 16 spp (seed 3) and at 2048 spp (seed 5): the same texels are called
 *   inside geometry (none beside the walls, some under the cube), and the ground's mean luminance
 *   over the texels kept agrees within 5 standard errors (from the bake's own per-texel
 *   variances: texels are independent estimates). The old rule (a texel is inside when more than
 *   0.1 of its samples' first rays meet back faces) fails both: its count and so its ground move
 *   with the sample count.
 */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "raster.h"

#include <math.h>

enum { SINGLE, TWOFACED, BOX, CUBE, KINDS };
static const char *const KIND_NAMES[KINDS] = { "single-sided wall", "two-faced wall", "thin box", "cube" };
enum { LO_SPP = 16, HI_SPP = 2048 };

/* Quad a b c d (counter-clockwise seen from its front) as triangles t, t + 1. */
static void quad(bk_scene *s, uint32_t t, const float *a, const float *b, const float *c, const float *d)
{
    bk_test_set_tri(s, t, a, b, c);
    bk_test_set_tri(s, t + 1, a, c, d);
}

/* A closed box [lo, hi], faces outwards, as triangles t .. t + 11. */
static void box(bk_scene *s, uint32_t t, const float *lo, const float *hi)
{
    float c[8][3];
    for (int i = 0; i < 8; ++i) {
        c[i][0] = (i & 1) ? hi[0] : lo[0];
        c[i][1] = (i & 2) ? hi[1] : lo[1];
        c[i][2] = (i & 4) ? hi[2] : lo[2];
    }
    quad(s, t, c[1], c[3], c[7], c[5]);      /* +x */
    quad(s, t + 2, c[0], c[4], c[6], c[2]);  /* -x */
    quad(s, t + 4, c[2], c[6], c[7], c[3]);  /* +y */
    quad(s, t + 6, c[0], c[1], c[5], c[4]);  /* -y */
    quad(s, t + 8, c[4], c[5], c[7], c[6]);  /* +z */
    quad(s, t + 10, c[0], c[2], c[3], c[1]); /* -z */
}

/* The scene of one kind; the ground is triangles 0 and 1. */
static void scene(bk_scene *s, int kind)
{
    static const uint32_t tris[KINDS] = { 4, 6, 14, 14 };
    bk_test_scene_alloc(s, tris[kind]);
    float g0[3] = { -2, 0, -2 }, g1[3] = { -2, 0, 2 }, g2[3] = { 2, 0, 2 }, g3[3] = { 2, 0, -2 };
    quad(s, 0, g0, g1, g2, g3);
    float w0[3] = { 0, 0, -2 }, w1[3] = { 0, 2, -2 }, w2[3] = { 0, 2, 2 }, w3[3] = { 0, 0, 2 };
    if (kind == SINGLE || kind == TWOFACED) quad(s, 2, w0, w1, w2, w3);
    if (kind == TWOFACED) quad(s, 4, w0, w3, w2, w1);
    if (kind == BOX) {
        float lo[3] = { -0.025f, 0, -2 }, hi[3] = { 0.025f, 2, 2 };
        box(s, 2, lo, hi);
    }
    if (kind == CUBE) {
        float lo[3] = { -1.5f, 0, -0.5f }, hi[3] = { -0.5f, 1, 0.5f };
        box(s, 2, lo, hi);
    }
}

static bk_bake_params params(uint32_t spp, uint32_t seed, float texel_world)
{
    bk_bake_params p;
    memset(&p, 0, sizeof p);
    p.mode = BK_BAKE_LIGHT;
    p.spp = spp;
    p.bounces = 1;
    p.seed = seed;
    p.eps = 1e-4f * 6.0f; /* the command's 1e-4 of the scene's diagonal */
    p.texel_world = texel_world;
    float d[3] = { 1.0f, 0.6f, 0.3f }, l = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    for (int k = 0; k < 3; ++k) {
        p.sun_dir[k] = d[k] / l;
        p.sun_color[k] = 3.0f;
    }
    p.sun_cos = cosf(0.5f * 3.14159265f / 180.0f);
    return p;
}

/* The inside step's back-face count of a texel on the ground at (x, 0, z), facing up. */
static float inside_count(const bk_bake_view *v, float x, float z, uint32_t pixel)
{
    bk_bake_params p = params(1, 1, 0.01f);
    p.sample_end = 0; /* the unocclude and inside steps only */
    bk_texel t;
    t.px = x;
    t.py = 0;
    t.pz = z;
    t.nx = t.nz = 0;
    t.ny = 1;
    t.tri = 0;
    t.pixel = pixel;
    static uint32_t fast[BK_STACK_ENTRIES * BK_STACK_WIDTH], spill[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    bk_stack        st = bk_stack_make(BK_STACK_GLOBAL, fast, 1, BK_STACK_ENTRIES, spill, 1);
    bk_trace_stats  ts;
    memset(&ts, 0, sizeof ts);
    bk_f4 acc;
    acc.x = acc.y = acc.z = acc.w = 0.0f;
    float sq = 0.0f;
    return bk_bake_texel(v, &p, &t, acc, &sq, NULL, &st, &ts).w;
}

typedef struct ground {
    double   mean, se; /* the ground's mean luminance over its texels kept, and its standard error */
    uint32_t inside;   /* texels of the scene called inside geometry */
    uint8_t *cov;      /* coverage after the bake */
} ground;

static ground bake(bk_backend *be, const bk_bake_view *v, const bk_atlas *at, const bk_texel *tx, uint32_t n,
                   const uint8_t *cov0, uint32_t spp, uint32_t seed)
{
    const size_t     npx = BK_ATLAS_PIXELS(at);
    float           *rgb = calloc(3 * npx, sizeof(float)), *var = calloc(npx, sizeof(float));
    ground           g;
    bk_bake_run_opts o;
    memset(&o, 0, sizeof o);
    o.params = params(spp, seed, 1.0f / at->texels_per_unit);
    o.trace = bk_trace_opts_default();
    o.max_launch_ms = 1e9;
    o.variance = var;
    g.cov = malloc(npx);
    memcpy(g.cov, cov0, npx);
    bk_bake_result res;
    char           err[256];
    BK_EXPECTF(bk_bake_texels(be, v, tx, n, at->width, at->height * at->page_count, &o, rgb, g.cov, &res, err,
                              sizeof err) == 0,
               "%s", err);
    g.inside = res.invalid;
    double   sum = 0.0, vsum = 0.0;
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t px = tx[i].pixel;
        if (tx[i].tri > 1 || !g.cov[px]) continue;
        sum += bk_luminance(bk_v3(rgb[3 * px], rgb[3 * px + 1], rgb[3 * px + 2]));
        vsum += var[px];
        m++;
    }
    g.mean = m ? sum / m : 0.0;
    g.se = m ? sqrt(vsum) / m : 0.0;
    free(rgb);
    free(var);
    return g;
}

static void check_kind(bk_backend *be, int kind)
{
    const char *name = KIND_NAMES[kind];
    char        err[256];
    bk_scene    s;
    scene(&s, kind);
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    bk_bake_view v = bk_bake_data_view(&d, &a);
    uint32_t     ds = 0;
    for (uint32_t t = 0; t < d.tri_count; ++t) ds += (bk_bake_tri_flags(&v, t) & BK_BTRI_DOUBLE_SIDED) != 0;
    BK_EXPECTF(ds == (kind == TWOFACED ? 4u : 0u), "%s: %u double-sided triangles", name, ds);

    /* the inside step from the ground just behind the wall (and under the cube) */
    float behind = 0.0f, most = 0.0f;
    for (uint32_t k = 0; k < 64; ++k) {
        float c = inside_count(&v, -0.05f - 0.01f * (float)(k % 8), -1.5f + 0.4f * (float)(k / 8), 1000 + k);
        behind += c;
        most = fmaxf(most, c);
    }
    float under = inside_count(&v, -1.0f, 0.0f, 7);
    printf("%-18s inside step behind the wall: mean %.2f, most %.0f of %u rays met back faces; under the cube %.0f\n",
           name, behind / 64.0f, most, BK_INSIDE_RAYS, under);
    if (kind == SINGLE) BK_EXPECTF(behind > 0.0f && most <= 0.5f * BK_INSIDE_RAYS, "%s: most %.0f", name, most);
    else if (kind != CUBE) BK_EXPECTF(most == 0.0f, "%s: %.0f inside rays met a back face", name, most);
    else BK_EXPECTF(under > 0.5f * BK_INSIDE_RAYS, "under the cube: %.0f inside rays met back faces", under);

    bk_atlas      at;
    bk_atlas_opts ao;
    bk_atlas_opts_default(&ao);
    ao.size = 128;
    BK_EXPECTF(bk_atlas_build(&s, &ao, &at, err, sizeof err) == 0, "%s", err);
    bk_texel *tx;
    uint32_t  n;
    uint8_t  *cov;
    BK_EXPECTF(bk_atlas_rasterize(&s, &at, &tx, &n, &cov, err, sizeof err) == 0, "%s", err);
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECTF(be->i->upload(be, &av, err, sizeof err) == 0, "%s", err);
    ground lo = bake(be, &v, &at, tx, n, cov, LO_SPP, 3), hi = bake(be, &v, &at, tx, n, cov, HI_SPP, 5);
    double diff = lo.mean - hi.mean, se = sqrt(lo.se * lo.se + hi.se * hi.se);
    printf("%-18s ground %.5f +- %.5f at %u spp, %.5f +- %.5f at %u (%+.2f %%, %.1f standard errors); inside %u "
           "and %u of %u texels\n",
           name, lo.mean, lo.se, LO_SPP, hi.mean, hi.se, HI_SPP, 100.0 * diff / hi.mean, fabs(diff) / se, lo.inside,
           hi.inside, n);
    BK_EXPECTF(lo.inside == hi.inside, "%s: %u texels inside geometry at %u spp, %u at %u", name, lo.inside, LO_SPP,
               hi.inside, HI_SPP);
    BK_EXPECTF(!memcmp(lo.cov, hi.cov, BK_ATLAS_PIXELS(&at)), "%s: other texels inside geometry at %u and %u spp", name,
               LO_SPP, HI_SPP);
    if (kind == CUBE) BK_EXPECTF(hi.inside > 0, "%s: no texel under the cube is inside geometry", name);
    else BK_EXPECTF(hi.inside == 0, "%s: %u texels beside the wall called inside geometry", name, hi.inside);
    BK_EXPECTF(se > 0.0 && fabs(diff) <= 5.0 * se, "%s: the ground's mean moves by %.1f standard errors", name,
               se > 0.0 ? fabs(diff) / se : 0.0);
    free(lo.cov);
    free(hi.cov);
    free(tx);
    free(cov);
    bk_atlas_free(&at);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
    bk_scene_free(&s);
}

/* A material's double_sided flag alone makes a lone face double-sided. */
static void check_material(void)
{
    bk_scene s;
    scene(&s, SINGLE);
    s.material_count = 2;
    s.materials = calloc(2, sizeof(bk_material));
    for (int m = 0; m < 2; ++m) bk_material_init(&s.materials[m]);
    s.materials[1].double_sided = 1;
    s.tri_material = calloc(4, sizeof(uint32_t));
    s.tri_material[2] = s.tri_material[3] = 1;
    bk_bake_data d;
    char         err[256];
    BK_EXPECTF(bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    for (uint32_t t = 0; t < 4; ++t)
        BK_EXPECTF((bk_float_bits(d.tris[3 * t + 1].w) & BK_BTRI_DOUBLE_SIDED) == (t >= 2 ? BK_BTRI_DOUBLE_SIDED : 0u),
                   "triangle %u: sides %u", t, bk_float_bits(d.tris[3 * t + 1].w));
    bk_bake_data_free(&d);
    bk_scene_free(&s);
}

int main(void)
{
    check_material();
    bk_backend *be = bk_backend_cpu_init();
    for (int k = 0; k < KINDS; ++k) check_kind(be, k);
    bk_backend_free(be);
    BK_TEST_DONE();
}
