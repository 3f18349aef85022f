/* unit_atlas_threads.c - the atlas does not depend on the thread count.
 *
 * Builds and rasterizes the atlas of the demo scene, a generated seeded mesh (a noisy sphere with
 * welded vertices: smooth charts; boxes: planar charts and merges; a triangle soup: many small
 * charts; degenerate triangles) and corpus scenes (sponza, dragon_vrip_res2: each skipped when
 * absent) with the pool at 1, 2 and 16 threads, and compares every result byte for byte with the
 * one-thread result: charts of each triangle, UVs, statistics, the texel list and the coverage.
 * Also at 4096^2 for sponza (the packer's and rasterizer's large-page paths), and the generated
 * mesh with the smooth charts solved directly (atlas_lscm.h's solver 1) and with the chart
 * passes' speculation off (bk_atlas_spec 0). A voxel scene (monu1.vox, skipped when absent) as
 * rectangles alone, on one page and on --pages auto pages:
 * the shelf packer (atlas_shelf.c) with 1, 2 and 16 threads, its pages checked (every quad on a
 * page, none overlapping another's block), and the quad-by-quad raster against the general pass
 * (bk_atlas_raster_general), texels, refs and coverage byte for byte.
 */
#include "atlas.h"
#include "atlas_internal.h"
#include "atlas_lscm.h"
#include "pool.h"
#include "loader.h"
#include "scene.h"
#include "bk_test.h"
#include "raster.h"
#include "voxmesh.h"

#include <math.h>
#include <stdint.h>

typedef struct result {
    bk_atlas  a;
    bk_texel *tx;
    uint32_t  ntx;
    uint8_t  *cov;
} result;

static const bk_atlas_opts *run_opts; /* a voxel scene's (rectangles), else NULL: the defaults */

static int run(const bk_scene *s, int size, int threads, result *r)
{
    char          err[512];
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    if (run_opts) o = *run_opts;
    o.size = size;
    memset(r, 0, sizeof *r);
    bk_pool_set_threads(threads);
    if (bk_atlas_build(s, &o, &r->a, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    if (bk_atlas_rasterize(s, &r->a, &r->tx, &r->ntx, &r->cov, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    return 0;
}

static void result_free(result *r)
{
    bk_atlas_free(&r->a);
    free(r->tx);
    free(r->cov);
}

/* Byte-for-byte equal to the reference; names what differs first. */
static void compare(const char *name, int threads, const result *ref, const result *r)
{
    const bk_atlas *a = &ref->a, *b = &r->a;
    BK_EXPECTF(a->width == b->width && a->height == b->height && a->page_count == b->page_count,
               "%s, %d threads: size %dx%d vs %dx%d", name, threads, b->width, b->height, a->width, a->height);
    BK_EXPECTF(a->chart_count == b->chart_count && a->smooth_charts == b->smooth_charts,
               "%s, %d threads: %u charts (%u smooth) vs %u (%u)", name, threads, b->chart_count, b->smooth_charts,
               a->chart_count, a->smooth_charts);
    BK_EXPECTF(a->covered == b->covered && a->utilisation == b->utilisation &&
                   a->texels_per_unit == b->texels_per_unit && a->stretch_l2 == b->stretch_l2 &&
                   a->density_max == b->density_max,
               "%s, %d threads: statistics differ (covered %llu vs %llu)", name, threads,
               (unsigned long long)b->covered, (unsigned long long)a->covered);
    if (a->width != b->width || a->height != b->height || a->tri_count != b->tri_count) return;
    uint32_t T = a->tri_count, bad = 0, first = 0;
    for (uint32_t t = 0; t < T; ++t)
        if (a->tri_chart[t] != b->tri_chart[t] ||
            memcmp(a->uv + 6 * (size_t)t, b->uv + 6 * (size_t)t, 6 * sizeof(float))) {
            if (!bad++) first = t;
        }
    BK_EXPECTF(bad == 0, "%s, %d threads: %u triangles with another chart or UVs, the first %u", name, threads, bad,
               first);
    BK_EXPECTF(r->ntx == ref->ntx, "%s, %d threads: %u texels vs %u", name, threads, r->ntx, ref->ntx);
    if (r->ntx == ref->ntx && ref->ntx) {
        uint32_t nb = 0, fb = 0;
        for (uint32_t i = 0; i < ref->ntx; ++i)
            if (memcmp(&ref->tx[i], &r->tx[i], sizeof(bk_texel))) {
                if (!nb++) fb = i;
            }
        BK_EXPECTF(nb == 0, "%s, %d threads: %u texels differ, the first %u (pixel %u vs %u)", name, threads, nb, fb,
                   r->tx[fb].pixel, ref->tx[fb].pixel);
    }
    BK_EXPECTF(!memcmp(ref->cov, r->cov, BK_ATLAS_PIXELS(a)), "%s, %d threads: coverage differs", name, threads);
}

static void check_scene(const char *name, const bk_scene *s, int size, int shapes)
{
    static const int threads[] = { 2, 16, 1 };
    result           ref, r;
    const int        failures = bk_test_failures;
    /* every placement the shape packer takes from a search ahead, searched again from scratch */
    bk_atlas_ahead_check = 1;
    bk_atlas_ahead_checked = bk_atlas_ahead_wrong = 0;
    if (run(s, size, 1, &ref)) {
        BK_EXPECTF(0, "%s: no atlas", name);
        return;
    }
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; ++i) {
        if (run(s, size, threads[i], &r)) {
            BK_EXPECTF(0, "%s, %d threads: no atlas", name, threads[i]);
            result_free(&r);
            continue;
        }
        compare(name, threads[i], &ref, &r);
        result_free(&r);
    }
    BK_EXPECTF(bk_atlas_ahead_wrong == 0 && (bk_atlas_ahead_checked > 0 || !shapes),
               "%s: %llu of %llu placements from the shape packer's "
               "search ahead differ from a search from scratch",
               name, (unsigned long long)bk_atlas_ahead_wrong, (unsigned long long)bk_atlas_ahead_checked);
    bk_atlas_ahead_check = 0;
    printf("%-28s %4d^2  %6u tris  %5u charts  %8u texels: %s with 1, 2, 16 threads; %llu placements searched ahead, "
           "as from "
           "scratch\n",
           name, size, s->tri_count, ref.a.chart_count, ref.ntx, bk_test_failures == failures ? "same" : "NOT the same",
           (unsigned long long)bk_atlas_ahead_checked);
    result_free(&ref);
}

/* ---- a generated mesh ---------------------------------------------------------------------- */

typedef struct mesh {
    bk_scene s;
    uint32_t vcap, tcap;
} mesh;

static uint32_t m_vertex(mesh *m, double x, double y, double z)
{
    if (m->s.vertex_count == m->vcap) {
        m->vcap = m->vcap ? 2 * m->vcap : 256;
        m->s.positions = realloc(m->s.positions, sizeof(float) * 3 * m->vcap);
    }
    float *p = m->s.positions + 3 * (size_t)m->s.vertex_count;
    p[0] = (float)x;
    p[1] = (float)y;
    p[2] = (float)z;
    return m->s.vertex_count++;
}

static void m_tri(mesh *m, uint32_t i, uint32_t j, uint32_t k)
{
    if (m->s.tri_count == m->tcap) {
        m->tcap = m->tcap ? 2 * m->tcap : 256;
        m->s.tri_v = realloc(m->s.tri_v, sizeof(uint32_t) * 3 * m->tcap);
    }
    uint32_t *t = m->s.tri_v + 3 * (size_t)m->s.tri_count++;
    t[0] = i;
    t[1] = j;
    t[2] = k;
}

static double rnd(uint32_t *st)
{
    *st = *st * 1664525u + 1013904223u;
    return (*st >> 8) / 16777216.0;
}

/* A sphere with seeded bumps (shared vertices: smooth charts), boxes of varied sizes (planar
 * charts, merges), a seeded triangle soup and a few degenerate triangles. */
static bk_scene generated(uint32_t seed)
{
    mesh m;
    memset(&m, 0, sizeof m);
    uint32_t  st = seed;
    const int n = 96, k = 48;
    double    amp[6], frq[6];
    for (int i = 0; i < 6; ++i) {
        amp[i] = 0.02 + 0.08 * rnd(&st);
        frq[i] = 1 + (int)(6 * rnd(&st));
    }
    uint32_t base = m.s.vertex_count;
    for (int j = 0; j <= k; ++j)
        for (int i = 0; i < n; ++i) {
            double th = 3.14159265358979 * j / k, ph = 2 * 3.14159265358979 * i / n, r = 1;
            for (int q = 0; q < 3; ++q) r += amp[q] * sin(frq[q] * ph + q) * sin(frq[q + 3] * th);
            m_vertex(&m, r * sin(th) * cos(ph), r * cos(th), r * sin(th) * sin(ph));
        }
    for (int j = 0; j < k; ++j)
        for (int i = 0; i < n; ++i) {
            uint32_t v00 = base + (uint32_t)(j * n + i), v01 = base + (uint32_t)(j * n + (i + 1) % n);
            uint32_t v10 = v00 + (uint32_t)n, v11 = v01 + (uint32_t)n;
            m_tri(&m, v00, v01, v11);
            m_tri(&m, v00, v11, v10);
        }
    for (int b = 0; b < 40; ++b) {
        double o[3], sz[3];
        for (int d = 0; d < 3; ++d) {
            o[d] = 3 + 6 * rnd(&st);
            sz[d] = 0.05 + 0.6 * rnd(&st);
        }
        static const int q[6][4] = { { 0, 1, 3, 2 }, { 4, 6, 7, 5 }, { 0, 4, 5, 1 },
                                     { 2, 3, 7, 6 }, { 0, 2, 6, 4 }, { 1, 5, 7, 3 } };
        for (int f = 0; f < 6; ++f) {
            uint32_t v[4];
            for (int c = 0; c < 4; ++c) {
                int i = q[f][c];
                v[c] = m_vertex(&m, o[0] + ((i & 4) ? sz[0] : 0), o[1] + ((i & 2) ? sz[1] : 0),
                                o[2] + ((i & 1) ? sz[2] : 0));
            }
            m_tri(&m, v[0], v[1], v[2]);
            m_tri(&m, v[0], v[2], v[3]);
        }
    }
    for (int t = 0; t < 1500; ++t) {
        double c[3];
        for (int d = 0; d < 3; ++d) c[d] = -8 + 4 * rnd(&st);
        uint32_t v[3];
        for (int i = 0; i < 3; ++i)
            v[i] = m_vertex(&m, c[0] + 0.4 * (rnd(&st) - 0.5), c[1] + 0.4 * (rnd(&st) - 0.5),
                            c[2] + 0.4 * (rnd(&st) - 0.5));
        m_tri(&m, v[0], v[1], v[2]);
    }
    uint32_t d0 = m_vertex(&m, 0, 5, 0), d1 = m_vertex(&m, 1, 5, 0);
    m_tri(&m, d0, d0, d1);
    m_tri(&m, d0, d1, d1);
    return m.s;
}

/* ---- a voxel scene: rectangles alone ---------------------------------------------------------- */

/* Every quad on a page, inside it, its padded block overlapping no other's (a bitmap per page). */
static void check_pages(const char *name, const bk_atlas *a, const bk_atlas_opts *o)
{
    int      N = a->width, pad = o->padding, side = N + pad;
    size_t   pp = (size_t)side * side;
    uint8_t *used = calloc(pp * (size_t)a->page_count, 1);
    uint32_t bad = 0, first = 0;
    for (uint32_t q = 0; used && q < o->rect_count; ++q) {
        const float *u = a->uv + 12 * (size_t)q;
        int          page = a->tri_page ? (int)a->tri_page[2 * (size_t)q] : 0;
        double       x0 = 1e30, y0 = 1e30, x1 = -1e30, y1 = -1e30;
        for (int k = 0; k < 6; ++k) {
            double x = u[2 * k] * (double)N, y = u[2 * k + 1] * (double)N;
            x0 = x < x0 ? x : x0, x1 = x > x1 ? x : x1, y0 = y < y0 ? y : y0, y1 = y > y1 ? y : y1;
        }
        int bx = (int)floor(x0 + 0.5), by = (int)floor(y0 + 0.5), bw = (int)floor(x1 - x0 + 0.5) + pad,
            bh = (int)floor(y1 - y0 + 0.5) + pad;
        int ok = page >= 0 && page < a->page_count && bx >= 0 && by >= 0 && x1 <= N + 1e-3 && y1 <= N + 1e-3 &&
                 ((uint32_t)(bw - pad) == o->rects[q].w || (uint32_t)(bw - pad) == o->rects[q].h);
        for (int y = by; ok && y < by + bh && y < side; ++y)
            for (int x = bx; ok && x < bx + bw && x < side; ++x) {
                uint8_t *c = &used[(size_t)page * pp + (size_t)y * side + x];
                if (*c) ok = 0;
                *c = 1;
            }
        if (!ok && !bad++) first = q;
    }
    BK_EXPECTF(used && bad == 0, "%s: %u quads off their page or overlapping another's block, the first %u", name, bad,
               first);
    free(used);
}

/* The quad-by-quad raster against the general pass: texels, refs and coverage. */
static void check_raster(const char *name, const bk_scene *s, const bk_atlas *a)
{
    char          err[512];
    bk_texel     *t0 = NULL, *t1 = NULL;
    bk_texel_ref *r0 = NULL, *r1 = NULL;
    uint8_t      *c0 = NULL, *c1 = NULL, *c2 = NULL, *c3 = NULL;
    uint32_t      n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    bk_atlas_raster_general = 1;
    int rc = bk_atlas_rasterize(s, a, &t0, &n0, &c0, err, sizeof err) ||
             bk_atlas_rasterize_refs(s, a, &r0, &n2, &c2, err, sizeof err);
    bk_atlas_raster_general = 0;
    rc = rc || bk_atlas_rasterize(s, a, &t1, &n1, &c1, err, sizeof err) ||
         bk_atlas_rasterize_refs(s, a, &r1, &n3, &c3, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s: %s", name, err);
    if (rc == 0) {
        size_t N = BK_ATLAS_PIXELS(a);
        BK_EXPECTF(n0 == n1 && n2 == n3 && n0 == n2, "%s: %u texels quad by quad vs %u", name, n1, n0);
        BK_EXPECTF(n0 == n1 && !memcmp(t0, t1, sizeof(bk_texel) * n0), "%s: texels differ quad by quad", name);
        BK_EXPECTF(n2 == n3 && !memcmp(r0, r1, sizeof(bk_texel_ref) * n2), "%s: refs differ quad by quad", name);
        BK_EXPECTF(!memcmp(c0, c1, N) && !memcmp(c2, c3, N), "%s: coverage differs quad by quad", name);
        printf("%-28s %u texels: the same quad by quad as by the general pass\n", name, n0);
    }
    free(t0);
    free(t1);
    free(r0);
    free(r1);
    free(c0);
    free(c1);
    free(c2);
    free(c3);
}

static void check_vox(const char *path)
{
    char       err[512];
    bk_scene   s;
    bk_voxmesh vm;
    if (access(path, R_OK) != 0) {
        printf("%s: not found, skipped\n", path);
        return;
    }
    if (bk_scene_load(path, &s, err, sizeof err) != 0 || bk_voxmesh_build(&s, &vm, err, sizeof err) != 0) {
        BK_EXPECTF(0, "%s", err);
        return;
    }
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    bk_atlas_rect *rects = bk_voxmesh_rects(&vm, 2, &o);
    static const struct {
        int size, pages_auto;
    } cases[] = { { 1024, 0 }, { 256, 1 }, { 200, 1 } }; /* (200: UVs off texel corners: the general raster) */
    for (size_t i = 0; rects && i < sizeof cases / sizeof cases[0]; ++i) {
        char name[64];
        snprintf(name, sizeof name, "monu1.vox%s", cases[i].pages_auto ? ", pages" : "");
        o.pages_auto = cases[i].pages_auto;
        run_opts = &o;
        check_scene(name, &vm.scene, cases[i].size, 0);
        result r;
        if (run(&vm.scene, cases[i].size, 2, &r) == 0) {
            check_pages(name, &r.a, &o);
            check_raster(name, &vm.scene, &r.a);
            printf("%-28s %4d^2  %d pages\n", name, cases[i].size, r.a.page_count);
        } else BK_EXPECTF(0, "%s: no atlas", name);
        result_free(&r);
        run_opts = NULL;
    }
    free(rects);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

int main(void)
{
    char     err[512], buf[1024];
    bk_scene s;
    if (bk_scene_load(BK_SOURCE_DIR "/scenes/cornell.obj", &s, err, sizeof err) == 0) {
        check_scene("demo cornell", &s, 1024, 1);
        check_scene("demo cornell", &s, 128, 1);
        bk_scene_free(&s);
    } else BK_EXPECTF(0, "%s", err);

    s = generated(20261123u);
    check_scene("generated (seed 20261123)", &s, 1024, 1);
    check_scene("generated (seed 20261123)", &s, 256, 1);
    free(s.positions);
    free(s.tri_v);
    /* the smooth charts by the direct solve (atlas_bench --solver 1) */
    bk_atlas_lscm_solver = 1;
    s = generated(20261123u);
    check_scene("generated, direct LSCM", &s, 1024, 1);
    free(s.positions);
    free(s.tri_v);
    bk_atlas_lscm_solver = 0;
    /* the chart passes' speculation off (atlas_bench --spec 0): the same atlas */
    bk_atlas_spec = 0;
    s = generated(20261123u);
    check_scene("generated, no speculation", &s, 1024, 1);
    free(s.positions);
    free(s.tri_v);
    bk_atlas_spec = 1;

    static const struct {
        const char *rel;
        int         size;
    } corpus[] = {
        { "sponza-dabrovic/sponza.obj", 1024 },
        { "sponza-dabrovic/sponza.obj", 4096 },
        { "dragon/dragon_vrip_res2.obj", 1024 },
    };
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; ++i) {
        snprintf(buf, sizeof buf, "%s/%s", bk_test_scenes_dir(), corpus[i].rel);
        if (access(buf, R_OK) != 0) {
            printf("%s: not found, skipped\n", buf);
            continue;
        }
        if (bk_scene_load(buf, &s, err, sizeof err) != 0) {
            BK_EXPECTF(0, "%s", err);
            continue;
        }
        check_scene(corpus[i].rel, &s, corpus[i].size, 1);
        bk_scene_free(&s);
    }
    snprintf(buf, sizeof buf, "%s/vox/monu1.vox", bk_test_scenes_dir());
    check_vox(buf);
    bk_pool_shutdown();
    BK_TEST_DONE();
}
