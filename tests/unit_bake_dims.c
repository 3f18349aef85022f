/* unit_bake_dims.c - the bake's random-dimension layout (kernels/bk_bake.h, BK_DIM_USES).
 *
 * - On paper: every range of the list, at every path vertex of a 16-bounce path, lies inside its
 *   vertex's BK_DIM_STRIDE dimensions, and no dimension belongs to two ranges (two lights, or a
 *   light and a bounce, or two vertices). The ranges follow each other from 0 to BK_DIM_END.
 * - In the code: every draw of bk_bake_texel is recorded (BK_BAKE_DIM_HOOK) while it bakes a
 *   closed emissive box under a sun, with a point light, at 0..5 bounces, so every path reaches
 *   its last vertex and every light draws its numbers. Within one sample each dimension is drawn
 *   once, lies in a named range of a vertex the path has, and every named dimension of every
 *   vertex is drawn: a light that draws one more number than the list says, or a draw at a
 *   hard-coded offset, fails here even when it still fits the stride. AO draws only BK_DIM_AO's.
 */
#include <stdint.h>

/* what the hook saw during one sample */
enum { MAX_DRAWS = 1024 };
static uint32_t g_draws[MAX_DRAWS], g_draw_count;
static void     record_draw(uint32_t dim)
{
    if (g_draw_count < MAX_DRAWS) g_draws[g_draw_count] = dim;
    g_draw_count++;
}
#define BK_BAKE_DIM_HOOK(texel, sample, dim) record_draw(dim)

#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "bake.h"

typedef struct dim_use {
    const char *name;
    int         first, count;
} dim_use;
#define USE_ROW_(name, n) { #name, BK_DIM_##name, (n) },
static const dim_use g_uses[] = { BK_DIM_USES(USE_ROW_) };
#undef USE_ROW_
enum { USE_COUNT = sizeof g_uses / sizeof g_uses[0], MAX_VERTICES = 17 };

static void check_layout(void)
{
    /* the ranges tile [0, BK_DIM_END) in list order */
    int next = 0;
    for (int u = 0; u < USE_COUNT; ++u) {
        BK_EXPECTF(g_uses[u].count > 0, "%s takes no dimension", g_uses[u].name);
        BK_EXPECTF(g_uses[u].first == next, "%s starts at %d, the range before ends at %d", g_uses[u].name,
                   g_uses[u].first, next);
        next = g_uses[u].first + g_uses[u].count;
    }
    BK_EXPECTF(next == BK_DIM_END, "the ranges end at %d, BK_DIM_END is %d", next, (int)BK_DIM_END);
    BK_EXPECTF(BK_DIM_END <= BK_DIM_STRIDE, "BK_DIM_END %d > BK_DIM_STRIDE %d", (int)BK_DIM_END, (int)BK_DIM_STRIDE);
    BK_EXPECT(BK_DIM_AO_LAST < BK_DIM_STRIDE && BK_DIM_AO <= BK_DIM_AO_LAST);

    /* every dimension of a 16-bounce path, with its owner: no two owners */
    static int owner[MAX_VERTICES * BK_DIM_STRIDE];
    for (int i = 0; i < MAX_VERTICES * BK_DIM_STRIDE; ++i) owner[i] = -1;
    for (uint32_t b = 0; b < MAX_VERTICES; ++b)
        for (int u = 0; u < USE_COUNT; ++u)
            for (int k = 0; k < g_uses[u].count; ++k) {
                uint32_t d = bk_dim_vertex(b) + (uint32_t)(g_uses[u].first + k);
                BK_EXPECTF(d >= bk_dim_vertex(b) && d < bk_dim_vertex(b + 1),
                           "vertex %u: %s + %d = dimension %u leaves the vertex's range", b, g_uses[u].name, k, d);
                if (d >= MAX_VERTICES * BK_DIM_STRIDE) continue;
                int me = (int)b * USE_COUNT + u;
                BK_EXPECTF(owner[d] < 0, "dimension %u: vertex %u %s and vertex %d %s", d, b, g_uses[u].name,
                           owner[d] / USE_COUNT, g_uses[owner[d] % USE_COUNT].name);
                owner[d] = me;
            }
}

/* Checks the draws of one sample of a path with vertices 0..last (AO: ao set). */
static int check_sample_draws(uint32_t last, int ao, uint32_t texel, uint32_t smp)
{
    static uint8_t seen[MAX_VERTICES * BK_DIM_STRIDE];
    memset(seen, 0, sizeof seen);
    int bad = 0;
    if (g_draw_count > MAX_DRAWS) {
        fprintf(stderr, "%u draws in one sample\n", g_draw_count);
        return 1;
    }
    for (uint32_t i = 0; i < g_draw_count; ++i) {
        uint32_t d = g_draws[i], b = d / BK_DIM_STRIDE, off = d % BK_DIM_STRIDE;
        int      named = ao ? ((int)off >= (int)BK_DIM_AO && (int)off <= (int)BK_DIM_AO_LAST && b == 0)
                            : (off < BK_DIM_END && b <= last);
        if (!named) {
            fprintf(stderr, "texel %u sample %u: dimension %u (vertex %u offset %u) is in no named range\n", texel, smp,
                    d, b, off);
            bad = 1;
            continue;
        }
        if (seen[d]++) {
            fprintf(stderr, "texel %u sample %u: dimension %u drawn twice\n", texel, smp, d);
            bad = 1;
        }
    }
    /* every named dimension is drawn (the scene makes every light and every vertex draw) */
    uint32_t want = ao ? BK_DIM_AO_LAST - BK_DIM_AO + 1 : (last + 1) * BK_DIM_END;
    uint32_t got = 0;
    for (uint32_t d = 0; d < MAX_VERTICES * BK_DIM_STRIDE; ++d) got += seen[d] != 0;
    if (got != want) {
        fprintf(stderr, "texel %u sample %u: %u distinct dimensions drawn, the layout names %u\n", texel, smp, got,
                want);
        bad = 1;
    }
    return bad;
}

static void check_draws(void)
{
    char     err[256];
    bk_scene s;
    bk_test_scene_inward_box(&s, 0.5f, 0.5f);
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    const float  point[6] = { 0.2f, 0.3f, -0.1f, 1, 1, 1 };
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&s, point, 1, &d, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(d.emit_count == 12 && d.point_count == 1);
    bk_bake_view    v = bk_bake_data_view(&d, &a);
    static uint32_t fast[BK_STACK_ENTRIES * BK_STACK_WIDTH], spill[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    int             failures = 0;
    for (int ao = 0; ao <= 1; ++ao)
        for (uint32_t bounces = 0; bounces <= (ao ? 0u : 5u); ++bounces) {
            bk_bake_params p;
            memset(&p, 0, sizeof p);
            p.mode = ao ? BK_BAKE_AO : BK_BAKE_LIGHT;
            p.spp = 8;
            p.bounces = bounces;
            p.seed = 7;
            p.eps = 1e-4f;
            p.texel_world = 0.01f;
            p.ao_distance = 1.0f;
            p.sky[0] = p.sky[1] = p.sky[2] = 1.0f;
            p.sun_dir[1] = 1.0f;
            p.sun_color[0] = 1.0f;
            p.sun_cos = 0.99f; /* drawn for, though the box hides it */
            for (uint32_t texel = 0; texel < 16 && failures < 5; ++texel) {
                bk_texel t;
                t.px = -1.0f;
                t.py = 0.8f * bk_rng_f(1, texel, 0, 0) - 0.4f;
                t.pz = 0.8f * bk_rng_f(1, texel, 0, 1) - 0.4f;
                t.nx = 1.0f;
                t.ny = 0.0f;
                t.nz = 0.0f;
                t.tri = 0;
                t.pixel = texel;
                bk_f4 acc;
                acc.x = acc.y = acc.z = acc.w = 0.0f;
                for (uint32_t smp = 0; smp < p.spp; ++smp) {
                    p.sample_begin = smp;
                    p.sample_end = smp + 1;
                    bk_stack       st = bk_stack_make(BK_STACK_GLOBAL, fast, 1, BK_STACK_ENTRIES, spill, 1);
                    bk_trace_stats ts;
                    memset(&ts, 0, sizeof ts);
                    g_draw_count = 0;
                    float sq = 0.0f;
                    acc = bk_bake_texel(&v, &p, &t, acc, &sq, NULL, &st, &ts);
                    failures += check_sample_draws(bounces, ao, texel, smp);
                }
                BK_EXPECTF(acc.w == 0.0f, "a texel on the box's wall met back faces");
            }
        }
    BK_EXPECTF(failures == 0, "%d samples drew dimensions outside the layout", failures);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
    bk_scene_free(&s);
}

int main(void)
{
    check_layout();
    check_draws();
    BK_TEST_DONE();
}
