/* unit_atlas_parts.c - the atlas's parts alone (src/atlas/atlas_internal.h), without bk_atlas_build:
 *   overlap search (atlas_overlap.c): bk_atlas_find_overlaps finds exactly the pairs that the
 *     all-pairs separating-axis test finds, on random soups of 10 to 3,000 triangles;
 *   packers (atlas_pack.c, atlas_pack_shapes.c): random blocks packed into a bin lie inside it and never overlap; the
 *     sphere's charts packed by their shapes (128^2 and 512^2, where some take the half turns)
 *     share no texel that bilinear lookups inside them read;
 *   charting (atlas_grow.c, atlas_refine.c): charts of a tessellated sphere cover every triangle once, each
 *     chart's layout lies in [0, w] x [0, h] and none overlaps itself; bk_atlas_charts_tidy moves
 *     a triangle poking into another chart (two edges on it) into it, congruent, and leaves it
 *     where the other chart's layout would stretch it too much; bk_atlas_charts_absorb moves a small
 *     strip folded up from a grid's edge into the grid's layout, laid on the shared edges as a
 *     similar copy of itself, and leaves it where that would shrink it beyond the cone, where it
 *     is not small, or where it is a smooth chart of small triangles (one of large ones moves); bk_atlas_charts_smooth
 * lets the few stretched triangles of a spike leave a curved sheet's chart (max_evict) instead of halving it;
 *     bk_atlas_charts_join unfolds a sheet's two halves as one chart, and leaves them when they
 *     are too many triangles or the union does not unfold whole.
 *   texel boxes (raster.c): bk_atlas_chart_ids and bk_atlas_reach_ids of a right triangle whose
 *     corners lie on texel edges (so squares touch it exactly on every side) mark exactly the
 *     texels whose square (half side 0.5, and BK_ATLAS_REACH) meets the closed triangle;
 *   sorting: bk_key_idx_sort gives qsort's order on arrays large enough for the pool's path
 *     (repeated keys, indices not in order) at 1, 2, 3 and 16 threads.
 */
#include "atlas_internal.h"
#include "bk_test.h"
#include "pool.h"
#include "raster.h"

#include <math.h>
#include <stdint.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double   rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static void test_overlap(void)
{
    const uint32_t sizes[] = { 10, 40, 200, 3000 };
    for (int si = 0; si < 4; ++si) {
        uint32_t n = sizes[si];
        double  *xy = malloc(sizeof(double) * 6 * n);
        for (uint32_t i = 0; i < n; ++i) {
            double cx = rnd() * 10, cy = rnd() * 10, r = 0.05 + 0.3 * rnd();
            for (int k = 0; k < 3; ++k) {
                double a = rnd() * 6.283185307179586;
                xy[6 * i + 2 * k] = cx + r * cos(a);
                xy[6 * i + 2 * k + 1] = cy + r * sin(a);
            }
        }
        pair_list got = { 0 };
        uint64_t  work = 0;
        BK_EXPECT(bk_atlas_find_overlaps(xy, n, 1e-9, &got, &work) == 0);
        size_t want = 0, k = 0, mismatch = 0;
        for (uint32_t i = 0; i < n; ++i)
            for (uint32_t j = i + 1; j < n; ++j) {
                if (!bk_atlas_tri2_overlap(xy + 6 * i, xy + 6 * j, 1e-9)) continue;
                want++;
                if (k < got.n && got.p[2 * k] == i && got.p[2 * k + 1] == j) k++;
                else mismatch++;
            }
        BK_EXPECTF(got.n == want && mismatch == 0, "n %u: %zu pairs found, %zu by all pairs, %zu missing", n, got.n,
                   want, mismatch);
        free(got.p);
        free(xy);
    }
}

static void test_pack(void)
{
    uint32_t n = 500;
    pk_item *it = malloc(sizeof(pk_item) * n);
    packer   P;
    BK_EXPECT(bk_atlas_packer_init(&P, n) == 0);
    double area = 0;
    for (uint32_t i = 0; i < n; ++i) {
        int a = 2 + (int)(rnd() * 30), b = 2 + (int)(rnd() * 30);
        it[i].w = a > b ? a : b;
        it[i].h = a > b ? b : a;
        area += (double)it[i].w * it[i].h;
    }
    int size = (int)ceil(sqrt(area / 0.7));
    int pad = 2;
    BK_EXPECTF(bk_atlas_pack_list(&P, it, NULL, n, pad, size) == 1, "500 blocks at 70 %% of %d^2 did not pack", size);
    uint8_t *occ = calloc((size_t)(size + pad) * (size + pad), 1);
    int      bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
        int w = it[i].rot ? it[i].h : it[i].w, h = it[i].rot ? it[i].w : it[i].h;
        if (it[i].x < 0 || it[i].y < 0 || it[i].x + w > size + pad || it[i].y + h > size + pad) {
            bad++;
            continue;
        }
        for (int y = it[i].y; y < it[i].y + h; ++y)
            for (int x = it[i].x; x < it[i].x + w; ++x) bad += occ[(size_t)y * (size + pad) + x]++ != 0;
    }
    BK_EXPECTF(bad == 0, "%d texels outside the bin or in two blocks", bad);
    free(occ);
    bk_atlas_packer_free(&P);
    free(it);
}

/* Pages of fixed-size items kept whole by group (voxel quads by instance): every item inside
 * its page, none on another's texels, a group on one page, pages in group order, and each page
 * but the last filled (the search stops within 1/64 of the most groups that pack; the skyline
 * and waste map pack such small blocks at over 95 %). Blocks of 2 to max_side texels, one to 40 a
 * group, some wider than tall. */
static void test_pack_pages(int max_side, int size)
{
    const uint32_t groups = 3000;
    const int      pad = 1, side = size + pad;
    uint32_t      *run = malloc(sizeof(uint32_t) * (groups + 1)), n = 0;
    for (uint32_t g = 0; g < groups; ++g) {
        run[g] = n;
        n += 1 + (uint32_t)(rnd() * 40);
    }
    run[groups] = n;
    pk_item  *it = calloc(n, sizeof(pk_item)), *best = calloc(n, sizeof(pk_item));
    uint32_t *seq = malloc(sizeof(uint32_t) * n), *page = malloc(sizeof(uint32_t) * n), bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
        seq[i] = i;
        it[i].w = 2 + (int)(rnd() * (max_side - 1));
        it[i].h = 2 + (int)(rnd() * (max_side - 1));
        page[i] = BK_NONE;
    }
    packer P;
    BK_EXPECT(bk_atlas_packer_init(&P, n) == 0);
    bk_atlas_waste_check = 1;
    bk_atlas_waste_checked = bk_atlas_waste_wrong = 0;
    uint32_t pages = bk_atlas_pack_pages(&P, it, best, page, seq, run, groups, size, pad, &bad);
    bk_atlas_waste_check = 0;
    BK_EXPECTF(pages >= 3, "%u pages", pages);
    /* the waste map's scan four rectangles at a time chose as the one-by-one scan does */
    BK_EXPECTF(bk_atlas_waste_checked > 10000 && bk_atlas_waste_wrong == 0,
               "%llu of %llu waste map scans chose another rectangle", (unsigned long long)bk_atlas_waste_wrong,
               (unsigned long long)bk_atlas_waste_checked);
    uint8_t *occ = calloc((size_t)pages * side * side, 1);
    double  *area = calloc(pages + 1, sizeof(double));
    uint32_t outside = 0, twice = 0, split = 0, order = 0;
    for (uint32_t g = 0; g < groups; ++g)
        for (uint32_t i = run[g]; i < run[g + 1]; ++i) {
            if (page[i] >= pages) {
                outside++;
                continue;
            }
            split += page[i] != page[run[g]];
            order += g > 0 && page[run[g]] < page[run[g - 1]];
            const pk_item *b = &best[i];
            int            w = b->rot ? it[i].h : it[i].w, h = b->rot ? it[i].w : it[i].h;
            area[page[i]] += (double)w * h;
            if (b->w != it[i].w || b->h != it[i].h || b->x < 0 || b->y < 0 || b->x + w > side || b->y + h > side) {
                outside++;
                continue;
            }
            for (int y = b->y; y < b->y + h; ++y)
                for (int x = b->x; x < b->x + w; ++x) twice += occ[((size_t)page[i] * side + y) * side + x]++ != 0;
        }
    BK_EXPECTF(outside == 0 && twice == 0, "%u blocks outside their page, %u texels in two blocks", outside, twice);
    BK_EXPECTF(split == 0 && order == 0, "%u blocks apart from their group, %u groups before an earlier one's page",
               split, order);
    for (uint32_t p = 0; p + 1 < pages; ++p)
        BK_EXPECTF(area[p] >= 0.95 * side * side, "page %u of %u filled %.1f %%", p, pages,
                   100.0 * area[p] / ((double)side * side));
    free(occ);
    free(area);
    bk_atlas_packer_free(&P);
    free(it);
    free(best);
    free(seq);
    free(page);
    free(run);
}

/* A test scene's geometry, weld and adjacency, as the atlas builds them. */
static void mesh_setup(const bk_scene *s, tri_geom *g, uint32_t **weld, adjacency *A)
{
    BK_EXPECT(bk_atlas_geom_init(s, g) == 0);
    BK_EXPECT((*weld = bk_atlas_weld(s)) != NULL);
    BK_EXPECT(bk_atlas_adjacency_build(s, *weld, g->degen, A) == 0);
}

static void test_charts(void)
{
    /* a UV sphere, 24 x 48 */
    const int nu = 48, nv = 24;
    bk_scene  s;
    memset(&s, 0, sizeof s);
    s.vertex_count = (uint32_t)((nv + 1) * nu);
    s.positions = malloc(sizeof(float) * 3 * s.vertex_count);
    s.tri_v = malloc(sizeof(uint32_t) * 6 * nu * nv);
    for (int j = 0; j <= nv; ++j)
        for (int i = 0; i < nu; ++i) {
            double th = 3.141592653589793 * j / nv, ph = 6.283185307179586 * i / nu;
            float *p = s.positions + 3 * (j * nu + i);
            p[0] = (float)(sin(th) * cos(ph));
            p[1] = (float)cos(th);
            p[2] = (float)(sin(th) * sin(ph));
        }
    for (int j = 0; j < nv; ++j)
        for (int i = 0; i < nu; ++i) {
            uint32_t a = (uint32_t)(j * nu + i), b = (uint32_t)(j * nu + (i + 1) % nu), c = a + (uint32_t)nu,
                     d = b + (uint32_t)nu;
            uint32_t *t = s.tri_v + 3 * s.tri_count;
            t[0] = a;
            t[1] = b;
            t[2] = d;
            s.tri_count++;
            t = s.tri_v + 3 * s.tri_count;
            t[0] = a;
            t[1] = d;
            t[2] = c;
            s.tri_count++;
        }
    tri_geom  g;
    adjacency A = { 0 };
    charting  C;
    memset(&C, 0, sizeof C);
    uint64_t  work = 0;
    uint32_t *weld = NULL;
    mesh_setup(&s, &g, &weld, &A);
    BK_EXPECT(bk_atlas_charts_make(&s, &g, &A, 20.0, &C, &work) == 0);
    uint32_t *seen = calloc(s.tri_count, sizeof(uint32_t));
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        double      *xy = malloc(sizeof(double) * 6 * (c->count + 1));
        int          outside = 0;
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C.chart_tris[c->first + i];
            seen[t]++;
            BK_EXPECT(C.tri_chart[t] == ci);
            memcpy(xy + 6 * i, C.loc + 6 * (size_t)t, 6 * sizeof(double));
            for (int k = 0; k < 3; ++k) {
                double x = xy[6 * i + 2 * k], y = xy[6 * i + 2 * k + 1], e = 1e-9 * (c->w + c->h);
                outside += x < -e || y < -e || x > c->w + e || y > c->h + e;
            }
        }
        BK_EXPECTF(outside == 0, "chart %u: %d corners outside its %g x %g rectangle", ci, outside, c->w, c->h);
        pair_list pl = { 0 };
        BK_EXPECT(bk_atlas_find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pl, &work) == 0);
        BK_EXPECTF(pl.n == 0, "chart %u overlaps itself (%zu pairs)", ci, pl.n);
        free(pl.p);
        free(xy);
    }
    uint32_t once = 0;
    for (uint32_t t = 0; t < s.tri_count; ++t) once += seen[t] == 1 || g.degen[t];
    BK_EXPECTF(once == s.tri_count, "%u of %u triangles in exactly one chart", once, s.tri_count);
    free(seen);

    /* the shape packer alone: the sphere's charts at a scale that needs about half of 128^2, then
     * every chart's triangles sampled densely where the packer put them: inside the bin, and no
     * texel that a bilinear lookup at a sample reads (the 2 x 2 centres around it, clamped to the
     * bin's edges) read from two charts */
    for (int Ni = 0; Ni < 2; ++Ni) {
        /* at 512 the larger masks are also tried turned half round: some must take those turns */
        const int N = Ni ? 512 : 128, pad = 2;
        double    area = 0;
        for (uint32_t ci = 0; ci < C.count; ++ci) area += C.charts[ci].w * C.charts[ci].h;
        double   sc = sqrt(0.5 * N * N / area);
        pk_item *it = calloc(C.count + 1, sizeof(pk_item));
        int      used = 0, ok = bk_atlas_pack_shapes(&C, C.count, sc, NULL, N, pad, it, &used);
        BK_EXPECTF(ok == 1 && used <= N, "shape packing: rc %d, %d rows of %d", ok, used, N);
        uint32_t *own = malloc(sizeof(uint32_t) * (size_t)(2 * N) * N);
        for (int i = 0; i < 2 * N * N; ++i) own[i] = BK_NONE;
        int outside = 0, close = 0;
        for (uint32_t ci = 0; ci < C.count; ++ci) {
            const chart *c = &C.charts[ci];
            for (uint32_t i = 0; i < c->count; ++i) {
                const double *L = C.loc + 6 * (size_t)C.chart_tris[c->first + i];
                double        P[3][2];
                for (int k = 0; k < 3; ++k) {
                    double lx = L[2 * k] * sc, ly = L[2 * k + 1] * sc;
                    bk_atlas_shape_place(c->w * sc, c->h * sc, it[ci].w, it[ci].h, lx, ly, it[ci].rot, &P[k][0],
                                         &P[k][1]);
                    P[k][0] += it[ci].x;
                    P[k][1] += it[ci].y;
                }
                for (int a = 0; a <= 16; ++a)
                    for (int b = 0; a + b <= 16; ++b) {
                        double u = a / 16.0, v = b / 16.0, w = 1 - u - v;
                        double x = w * P[0][0] + u * P[1][0] + v * P[2][0], y = w * P[0][1] + u * P[1][1] + v * P[2][1];
                        if (x < 0 || y < 0 || x > N || y > 2 * N) {
                            outside++;
                            continue;
                        }
                        int X0 = (int)floor(x - 0.5), Y0 = (int)floor(y - 0.5);
                        for (int dy = 0; dy <= 1; ++dy)
                            for (int dx = 0; dx <= 1; ++dx) {
                                int       X = X0 + dx < 0 ? 0 : X0 + dx >= N ? N - 1 : X0 + dx;
                                int       Y = Y0 + dy < 0 ? 0 : Y0 + dy >= 2 * N ? 2 * N - 1 : Y0 + dy;
                                uint32_t *q = &own[(size_t)Y * N + X];
                                close += *q != BK_NONE && *q != ci;
                                *q = ci;
                            }
                    }
            }
        }
        BK_EXPECTF(outside == 0 && close == 0,
                   "shape packing: %d samples outside the bin, %d bilinear reads of a texel another "
                   "chart reads",
                   outside, close);
        int turns[4] = { 0 };
        for (uint32_t ci = 0; ci < C.count; ++ci) turns[it[ci].rot & 3]++;
        printf("shape packing %d^2: %d, %d, %d, %d charts turned 0, 90, 180, 270 degrees\n", N, turns[0], turns[1],
               turns[2], turns[3]);
        if (Ni) BK_EXPECTF(turns[2] + turns[3] > 0, "shape packing %d^2: no chart turned half round", N);
        free(own);
        free(it);
    }
    bk_atlas_charts_free(&C);
    bk_atlas_adjacency_free(&A);
    bk_atlas_geom_free(&g);
    free(weld);
    free(s.positions);
    free(s.tri_v);
}

/* A flat 8 x 8 grid of quads in two charts: columns 0-3 (chart 0) plus one triangle of column 4
 * whose left edge is on column 3 and whose two other edges are on chart 1 (the rest). Both
 * layouts are the positions (x, y), chart 1's x scaled by xs. */
/* The tidy and absorb cases' common ground: the scene's geometry, weld and adjacency, and a
 * charting of two charts with room for every triangle (the caller fills them). */
static void two_chart_setup(const bk_scene *s, tri_geom *g, uint32_t **weld, adjacency *A, charting *C)
{
    uint32_t T = s->tri_count;
    mesh_setup(s, g, weld, A);
    memset(C, 0, sizeof *C);
    C->tri_chart = malloc(sizeof(uint32_t) * T);
    C->chart_tris = malloc(sizeof(uint32_t) * T);
    C->loc = malloc(sizeof(double) * 6 * T);
    C->charts = calloc(2, sizeof(chart));
    C->count = C->cap = 2;
}

static void two_chart_free(bk_scene *s, tri_geom *g, uint32_t *weld, adjacency *A, charting *C)
{
    bk_atlas_charts_free(C);
    bk_atlas_adjacency_free(A);
    bk_atlas_geom_free(g);
    free(weld);
    free(s->positions);
    free(s->tri_v);
}

static void tidy_case(double xs, int smooth1, uint32_t want_chart)
{
    const int n = 8;
    bk_scene  s;
    memset(&s, 0, sizeof s);
    s.vertex_count = (uint32_t)((n + 1) * (n + 1));
    s.positions = calloc(3 * (size_t)s.vertex_count, sizeof(float));
    s.tri_v = malloc(sizeof(uint32_t) * 6 * n * n);
    for (int j = 0; j <= n; ++j)
        for (int i = 0; i <= n; ++i) {
            s.positions[3 * (j * (n + 1) + i)] = (float)i;
            s.positions[3 * (j * (n + 1) + i) + 1] = (float)j;
        }
    uint32_t spike = BK_NONE;
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            uint32_t  a = (uint32_t)(j * (n + 1) + i), b = a + 1, c = a + (uint32_t)(n + 1), d = c + 1;
            uint32_t *t = s.tri_v + 3 * s.tri_count;
            t[0] = a;
            t[1] = b;
            t[2] = d;
            s.tri_count++;
            t = s.tri_v + 3 * s.tri_count;
            t[0] = a;
            t[1] = d;
            t[2] = c;
            if (i == 4 && j == 3) spike = s.tri_count;
            s.tri_count++;
        }
    uint32_t  T = s.tri_count;
    tri_geom  g;
    adjacency A = { 0 };
    uint32_t *weld = NULL;
    uint64_t  work = 0;
    charting  C;
    two_chart_setup(&s, &g, &weld, &A, &C);
    for (uint32_t t = 0; t < T; ++t) {
        int col = (int)(t / 2) % n;
        C.tri_chart[t] = col < 4 || t == spike ? 0 : 1;
    }
    for (uint32_t ci = 0, w = 0; ci < 2; ++ci) {
        C.charts[ci].first = w;
        C.charts[ci].n[2] = 1;
        C.charts[ci].smooth = (uint8_t)(ci == 1 && smooth1);
        for (uint32_t t = 0; t < T; ++t) {
            if (C.tri_chart[t] != ci) continue;
            C.chart_tris[w++] = t;
            for (int k = 0; k < 3; ++k) {
                const float *p = s.positions + 3 * s.tri_v[3 * t + k];
                C.loc[6 * t + 2 * k] = ci == 1 ? (p[0] - 4) * xs : p[0];
                C.loc[6 * t + 2 * k + 1] = p[1];
            }
        }
        C.charts[ci].count = w - C.charts[ci].first;
        C.charts[ci].w = ci ? 4 * xs : 5;
        C.charts[ci].h = n;
    }
    BK_EXPECT(bk_atlas_charts_tidy(&s, weld, &A, NULL, 20.0, 2.0, &C, &work) == 0);
    BK_EXPECTF(C.count == 2 && C.tri_chart[spike] == want_chart,
               "tidy (x scale %g): %u charts, the spike in chart %u, want %u", xs, C.count, C.tri_chart[spike],
               want_chart);
    uint32_t in1 = 0;
    for (uint32_t i = 0; i < C.count && i < 2; ++i) {
        const chart *c = &C.charts[i];
        for (uint32_t k = 0; k < c->count; ++k) BK_EXPECT(C.tri_chart[C.chart_tris[c->first + k]] == i);
        if (i == C.tri_chart[spike]) in1 = c->count;
    }
    BK_EXPECTF(C.charts[0].count + C.charts[1].count == T, "tidy: %u + %u triangles of %u", C.charts[0].count,
               C.charts[1].count, T);
    BK_EXPECTF(in1 == (want_chart ? 64u : 65u), "tidy: the spike's chart has %u triangles", in1);
    /* the layouts after the rectangle fit: inside [0, w] x [0, h], no overlap, and the spike's
     * edges as long as in the world times its chart's scale */
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        double      *xy = malloc(sizeof(double) * 6 * c->count);
        int          outside = 0;
        for (uint32_t k = 0; k < c->count; ++k) {
            memcpy(xy + 6 * k, C.loc + 6 * (size_t)C.chart_tris[c->first + k], 6 * sizeof(double));
            for (int q = 0; q < 3; ++q) {
                double x = xy[6 * k + 2 * q], y = xy[6 * k + 2 * q + 1], e = 1e-9 * (c->w + c->h);
                outside += x < -e || y < -e || x > c->w + e || y > c->h + e;
            }
        }
        pair_list pl = { 0 };
        BK_EXPECT(bk_atlas_find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pl, &work) == 0);
        BK_EXPECTF(outside == 0 && pl.n == 0,
                   "tidy: chart %u has %d corners outside its rectangle, %zu overlapping pairs", ci, outside, pl.n);
        free(pl.p);
        free(xy);
    }
    if (want_chart == 1 && xs == 1.0) {
        const double *L = C.loc + 6 * (size_t)spike;
        double        e01 = hypot(L[2] - L[0], L[3] - L[1]), e12 = hypot(L[4] - L[2], L[5] - L[3]),
               e20 = hypot(L[0] - L[4], L[1] - L[5]);
        BK_EXPECTF(fabs(e01 - sqrt(2.0)) < 1e-9 && fabs(e12 - 1) < 1e-9 && fabs(e20 - 1) < 1e-9,
                   "tidy: spike edges %g %g %g", e01, e12, e20);
    }
    two_chart_free(&s, &g, weld, &A, &C);
}

static void test_tidy(void)
{
    tidy_case(1.0, 0, 1); /* planar: moves, congruent */
    tidy_case(1.0, 1, 1); /* smooth, unstretched: moves */
    tidy_case(3.0, 1, 0); /* smooth layout 3 x the world area: stays */
    tidy_case(1.2, 0, 0); /* planar layout stretched (a planar chart only shortens): stays */
}

/* An n x n grid of quads in the plane z = 0 (chart 1, laid out as (xs x, y): a planar chart's
 * projection may shorten) and a strip of n quads folded up at 90 degrees along its edge y = n
 * (chart 0, laid out flat as (x, z)). The shared edges are xs long in chart 1's layout and 1 in the
 * world, so the unfolding merge cannot join them unless xs is 1. */
static void absorb_case(double xs, int smooth0, double max_cost, double pad_w, int want_moved) /* 2: the grid moves */
{
    const int n = 8;
    bk_scene  s;
    memset(&s, 0, sizeof s);
    s.vertex_count = (uint32_t)((n + 1) * (n + 2));
    s.positions = calloc(3 * (size_t)s.vertex_count, sizeof(float));
    s.tri_v = malloc(sizeof(uint32_t) * 6 * n * (n + 1));
    for (int j = 0; j <= n; ++j)
        for (int i = 0; i <= n; ++i) {
            s.positions[3 * (j * (n + 1) + i)] = (float)i;
            s.positions[3 * (j * (n + 1) + i) + 1] = (float)j;
        }
    uint32_t top = (uint32_t)((n + 1) * (n + 1)); /* the strip's upper row: (i, n, 1) */
    for (int i = 0; i <= n; ++i) {
        s.positions[3 * (top + i)] = (float)i;
        s.positions[3 * (top + i) + 1] = (float)n;
        s.positions[3 * (top + i) + 2] = 1.0f;
    }
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            uint32_t  a = (uint32_t)(j * (n + 1) + i), b = a + 1, c = a + (uint32_t)(n + 1), d = c + 1;
            uint32_t *t = s.tri_v + 3 * s.tri_count;
            t[0] = a;
            t[1] = b;
            t[2] = d;
            t[3] = a;
            t[4] = d;
            t[5] = c;
            s.tri_count += 2;
        }
    uint32_t T_grid = s.tri_count;
    for (int i = 0; i < n; ++i) {
        uint32_t  p = (uint32_t)(n * (n + 1) + i), q = p + 1, r = top + (uint32_t)i, u = r + 1;
        uint32_t *t = s.tri_v + 3 * s.tri_count;
        t[0] = p;
        t[1] = q;
        t[2] = u;
        t[3] = p;
        t[4] = u;
        t[5] = r;
        s.tri_count += 2;
    }
    uint32_t  T = s.tri_count;
    tri_geom  g;
    adjacency A = { 0 };
    uint32_t *weld = NULL;
    uint64_t  work = 0;
    charting  C;
    two_chart_setup(&s, &g, &weld, &A, &C);
    for (uint32_t t = 0; t < T; ++t) C.tri_chart[t] = t < T_grid ? 1 : 0;
    for (uint32_t ci = 0, w = 0; ci < 2; ++ci) {
        C.charts[ci].first = w;
        C.charts[ci].smooth = (uint8_t)(ci == 0 && smooth0);
        C.charts[ci].n[ci ? 2 : 1] = ci ? 1 : -1;
        for (uint32_t t = 0; t < T; ++t) {
            if (C.tri_chart[t] != ci) continue;
            C.chart_tris[w++] = t;
            for (int k = 0; k < 3; ++k) {
                const float *p = s.positions + 3 * s.tri_v[3 * t + k];
                C.loc[6 * t + 2 * k] = ci == 1 ? p[0] * xs : p[0];
                C.loc[6 * t + 2 * k + 1] = ci == 1 ? p[1] : p[2];
            }
        }
        C.charts[ci].count = w - C.charts[ci].first;
        C.charts[ci].w = ci ? n * xs : n;
        C.charts[ci].h = ci ? n : 1;
    }
    BK_EXPECT(bk_atlas_charts_absorb(&s, weld, &A, NULL, 20.0, 2.0, max_cost, pad_w, 0.6, &C, &work) == 0);
    BK_EXPECTF(C.count == (want_moved ? 1u : 2u),
               "absorb (x scale %g, smooth %d, max cost %g, padding %g): %u charts, want %d", xs, smooth0, max_cost,
               pad_w, C.count, want_moved ? 1 : 2);
    uint32_t total = 0;
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        total += c->count;
        double *xy = malloc(sizeof(double) * 6 * c->count);
        int     outside = 0, wrong = 0;
        for (uint32_t k = 0; k < c->count; ++k) {
            uint32_t t = C.chart_tris[c->first + k];
            wrong += C.tri_chart[t] != ci;
            memcpy(xy + 6 * k, C.loc + 6 * (size_t)t, 6 * sizeof(double));
            for (int q = 0; q < 3; ++q) {
                double x = xy[6 * k + 2 * q], y = xy[6 * k + 2 * q + 1], e = 1e-9 * (c->w + c->h);
                outside += x < -e || y < -e || x > c->w + e || y > c->h + e;
            }
        }
        pair_list pl = { 0 };
        BK_EXPECT(bk_atlas_find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pl, &work) == 0);
        BK_EXPECTF(outside == 0 && pl.n == 0 && wrong == 0,
                   "absorb: chart %u has %d corners outside its rectangle, %zu overlapping "
                   "pairs, %d triangles of another chart",
                   ci, outside, pl.n, wrong);
        free(pl.p);
        free(xy);
    }
    BK_EXPECTF(total == T, "absorb: %u triangles in charts of %u", total, T);
    if (want_moved == 1) {
        /* the strip's triangles are similar copies of themselves, scaled by the shared edges' xs */
        int bad = 0;
        for (uint32_t t = T_grid; t < T; ++t) {
            const double *L = C.loc + 6 * (size_t)t;
            for (int k = 0; k < 3; ++k) {
                const float *p = s.positions + 3 * s.tri_v[3 * t + k],
                            *q = s.positions + 3 * s.tri_v[3 * t + (k + 1) % 3];
                double lw = sqrt((double)(p[0] - q[0]) * (p[0] - q[0]) + (double)(p[1] - q[1]) * (p[1] - q[1]) +
                                 (double)(p[2] - q[2]) * (p[2] - q[2]));
                double ll = hypot(L[2 * ((k + 1) % 3)] - L[2 * k], L[2 * ((k + 1) % 3) + 1] - L[2 * k + 1]);
                bad += fabs(ll - xs * lw) > 1e-9;
            }
        }
        BK_EXPECTF(bad == 0, "absorb: %d strip edges not %g times their world length", bad, xs);
    }
    two_chart_free(&s, &g, weld, &A, &C);
}

static void test_absorb(void)
{
    /* with pad_w 1 the strip's padded rectangle is 9 x 2 = 18, the grid's about 8 x 9 = 72: a
     * max_cost of 32 lets only the strip move (a small grid would move into the strip instead) */
    absorb_case(0.98, 0, 32.0, 1.0, 1); /* moves: laid on the grid's edge, 0.98 of its size (0.96 of its area) */
    absorb_case(1.0, 0, 32.0, 1.0, 1);  /* moves, congruent */
    absorb_case(0.9, 0, 32.0, 1.0, 0);  /* 0.81 of its area: beyond the 20 degree cone's cos 20 = 0.94 */
    absorb_case(0.98, 0, 16.0, 1.0, 0); /* not small */
    absorb_case(0.98, 1, 32.0, 1.0, 0); /* a smooth chart of small triangles (0.5 padding squares, under 0.6) stays */
    /* with pad_w 0.5 the strip costs 8.5 x 1.5 / 0.25 = 51 padding squares, the grid 289: a
     * smooth strip of triangles of 2 padding squares moves */
    absorb_case(0.98, 1, 64.0, 0.5, 1);
    absorb_case(0.9, 0, 256.0, 1.0, 2); /* the grid is small too: it moves into the strip's layout instead */
}

/* A curved sheet (a 60 degree arc of a cylinder, 16 x 16 quads) with one vertex pulled out into
 * a spike: its triangles cannot keep their area in a flat map. The spike's triangles are the
 * largest, so the first chart grows from one of them. With max_evict 0 that chart is grown
 * again smaller until it unfolds, and the spike takes a patch of the sheet with it; with 5 % the
 * few stretched triangles leave and the rest of the sheet is one chart. Either way every smooth
 * chart's triangles keep their area within max_stretch, and no chart overlaps itself. */
/* The sheet: 16 x 16 unit quads bent into a 60 degree arc of a cylinder (an arc 16 long), the
 * vertex at its centre pulled out by spike; quad (i, j) is triangles 2 (16 j + i) and + 1. */
static void sheet_make(bk_scene *s, double spike)
{
    const int n = 16;
    memset(s, 0, sizeof *s);
    s->vertex_count = (uint32_t)((n + 1) * (n + 1));
    s->positions = malloc(sizeof(float) * 3 * s->vertex_count);
    s->tri_v = malloc(sizeof(uint32_t) * 6 * n * n);
    for (int j = 0; j <= n; ++j)
        for (int i = 0; i <= n; ++i) {
            double a = (i / (double)n - 0.5) * 1.0471975511965976, r = 16.0 / 1.0471975511965976;
            if (i == n / 2 && j == n / 2) r += spike;
            float *p = s->positions + 3 * (j * (n + 1) + i);
            p[0] = (float)(r * sin(a));
            p[1] = (float)j;
            p[2] = (float)(r * cos(a));
        }
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i) {
            uint32_t  a = (uint32_t)(j * (n + 1) + i), b = a + 1, c = a + (uint32_t)(n + 1), d = c + 1;
            uint32_t *t = s->tri_v + 3 * s->tri_count;
            t[0] = a;
            t[1] = d;
            t[2] = b;
            s->tri_count++;
            t = s->tri_v + 3 * s->tri_count;
            t[0] = a;
            t[1] = c;
            t[2] = d;
            s->tri_count++;
        }
}

static uint32_t smooth_evict_case(double max_evict)
{
    bk_scene s;
    sheet_make(&s, 2.0); /* the spike: 2 quads out */
    tri_geom  g;
    adjacency A = { 0 };
    charting  C;
    memset(&C, 0, sizeof C);
    uint64_t  work = 0;
    uint32_t *weld = NULL;
    mesh_setup(&s, &g, &weld, &A);
    bk_atlas_smooth_opts so;
    so.cone_deg = 75.0;
    so.crease_deg = 90.0;
    so.flat_deg = 20.0;
    so.max_stretch = 2.0;
    so.max_evict = max_evict;
    so.min_tris = 4;
    so.max_tris = 2000;
    so.max_iter = 60;
    BK_EXPECT(bk_atlas_charts_smooth(&s, &g, &A, weld, &so, &C, &work) == 0);
    uint32_t largest = 0, stretched = 0, overlapping = 0;
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        if (c->count > largest) largest = c->count;
        double *xy = malloc(sizeof(double) * 6 * (c->count + 1)), sum_uv = 0, sum_w = 0;
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = C.chart_tris[c->first + i];
            memcpy(xy + 6 * i, C.loc + 6 * (size_t)t, 6 * sizeof(double));
            sum_uv += bk_tri2_area(xy + 6 * i);
            sum_w += g.area[t];
        }
        for (uint32_t i = 0; i < c->count; ++i) {
            /* within the factor of the world area, the chart scaled to its world area (1e-6 slack:
             * the eviction leaves the others' scale as it was) */
            double r = bk_tri2_area(xy + 6 * i) / g.area[C.chart_tris[c->first + i]] * (sum_w / sum_uv);
            stretched += !(r <= 2.0 * 1.05 && r >= 0.5 / 1.05);
        }
        pair_list pl = { 0 };
        BK_EXPECT(bk_atlas_find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pl, &work) == 0);
        overlapping += pl.n > 0;
        free(pl.p);
        free(xy);
    }
    BK_EXPECTF(stretched == 0 && overlapping == 0,
               "smooth charts (max_evict %g): %u triangles stretched, %u charts overlap themselves", max_evict,
               stretched, overlapping);
    bk_atlas_charts_free(&C);
    bk_atlas_adjacency_free(&A);
    bk_atlas_geom_free(&g);
    free(weld);
    free(s.positions);
    free(s.tri_v);
    return largest;
}

static void test_smooth_evict(void)
{
    uint32_t none = smooth_evict_case(0.0), some = smooth_evict_case(0.05), T = 2 * 16 * 16;
    printf("smooth sheet with a spike: largest chart %u triangles with no eviction, %u with 5 %%, of %u\n", none, some,
           T);
    BK_EXPECTF(some >= T - 12 && some < T, "with 5 %% eviction the sheet is one chart less its spike: largest %u of %u",
               some, T);
    BK_EXPECTF(none + 16 <= some, "without eviction the spike's chart takes a patch of the sheet: largest %u of %u",
               none, T);
}

/* The sheet cut down the middle into two smooth charts, each laid out as its own unrolled half
 * (16 x 8): bk_atlas_charts_join unfolds them as one 16 x 16 chart (a cylinder unrolls without
 * stretch), every triangle keeping its area and nothing overlapping; not when the two together
 * have more than max_tris triangles, nor with a spike in the sheet (the union does not unfold
 * whole: its stretched triangles would have to leave). */
static void join_case(double spike, uint32_t max_tris, uint32_t want_charts)
{
    bk_scene s;
    sheet_make(&s, spike);
    uint32_t  T = s.tri_count;
    tri_geom  g;
    adjacency A = { 0 };
    uint32_t *weld = NULL;
    uint64_t  work = 0;
    charting  C;
    two_chart_setup(&s, &g, &weld, &A, &C);
    for (uint32_t ci = 0, w = 0; ci < 2; ++ci) {
        C.charts[ci].first = w;
        C.charts[ci].smooth = 1;
        C.charts[ci].n[2] = 1;
        for (uint32_t t = 0; t < T; ++t) {
            uint32_t i = (t / 2) % 16, j = (t / 2) / 16;
            if ((i >= 8) != (ci == 1)) continue;
            C.tri_chart[t] = ci;
            C.chart_tris[w++] = t;
            /* the unrolled half, 16 x 8: quad corner (i - 8 ci, j) at (j, i - 8 ci), which turns
             * the triangles counter-clockwise */
            static const int du[2][3] = { { 0, 1, 1 }, { 0, 0, 1 } }, dv[2][3] = { { 0, 1, 0 }, { 0, 1, 1 } };
            for (int k = 0; k < 3; ++k) {
                C.loc[6 * (size_t)t + 2 * k] = (double)j + dv[t & 1][k];
                C.loc[6 * (size_t)t + 2 * k + 1] = (double)i - 8.0 * ci + du[t & 1][k];
            }
        }
        C.charts[ci].count = w - C.charts[ci].first;
        C.charts[ci].w = 16;
        C.charts[ci].h = 8;
    }
    bk_atlas_smooth_opts so;
    so.cone_deg = 75.0;
    so.crease_deg = 90.0;
    so.flat_deg = 20.0;
    so.max_stretch = 2.0;
    so.max_evict = 0.05;
    so.min_tris = 4;
    so.max_tris = 2000;
    so.max_iter = 60;
    BK_EXPECT(bk_atlas_charts_join(&s, &g, &A, weld, NULL, &so, max_tris, 0.0, 1.0, &C, &work) == 0);
    BK_EXPECTF(C.count == want_charts, "join (spike %g, max_tris %u): %u charts, want %u", spike, max_tris, C.count,
               want_charts);
    uint32_t total = 0, wrong = 0, stretched = 0;
    size_t   overlaps = 0;
    for (uint32_t ci = 0; ci < C.count; ++ci) {
        const chart *c = &C.charts[ci];
        double      *xy = malloc(sizeof(double) * 6 * c->count);
        for (uint32_t k = 0; k < c->count; ++k) {
            uint32_t t = C.chart_tris[c->first + k];
            wrong += C.tri_chart[t] != ci;
            memcpy(xy + 6 * k, C.loc + 6 * (size_t)t, 6 * sizeof(double));
            double r = bk_tri2_area(xy + 6 * k) / g.area[t];
            stretched += !(r > 0.9 && r < 1.1);
        }
        total += c->count;
        pair_list pl = { 0 };
        BK_EXPECT(bk_atlas_find_overlaps(xy, c->count, 1e-9 * (c->w + c->h), &pl, &work) == 0);
        overlaps += pl.n;
        free(pl.p);
        free(xy);
    }
    BK_EXPECTF(total == T && wrong == 0, "join: %u triangles in charts of %u, %u in the wrong chart", total, T, wrong);
    if (want_charts == 1) {
        const chart *c = &C.charts[0];
        BK_EXPECTF(stretched == 0 && overlaps == 0 && fabs(c->w * c->h - 256.0) < 8.0,
                   "join: %u triangles stretched, %zu overlapping "
                   "pairs, a %g x %g chart (want 16 x 16)",
                   stretched, overlaps, c->w, c->h);
    }
    two_chart_free(&s, &g, weld, &A, &C);
}

static void test_join(void)
{
    join_case(0.0, 2000, 1); /* joined */
    join_case(0.0, 300, 2);  /* 512 triangles together: too many */
    join_case(2.0, 2000, 2); /* the spike's triangles cannot keep their area */
}

static void test_sort(void)
{
    const size_t     sizes[] = { 1000, 131072, 300001 };
    static const int threads[] = { 1, 2, 3, 16 };
    for (int si = 0; si < 3; ++si) {
        size_t   n = sizes[si];
        key_idx *in = malloc(sizeof(key_idx) * n), *ref = malloc(sizeof(key_idx) * n),
                *got = malloc(sizeof(key_idx) * n);
        for (size_t i = 0; i < n; ++i) {
            /* few distinct keys in the high bits, so ties are many and decided by the index */
            in[i].key = (uint64_t)(rnd() * 50) << 40 | (uint64_t)(rnd() * 4);
            in[i].idx = (uint32_t)(rnd() * 4294967295.0);
        }
        memcpy(ref, in, sizeof(key_idx) * n);
        qsort(ref, n, sizeof(key_idx), bk_key_idx_cmp);
        for (int ti = 0; ti < 4; ++ti) {
            bk_pool_set_threads(threads[ti]);
            memcpy(got, in, sizeof(key_idx) * n);
            bk_key_idx_sort(got, n);
            size_t bad = 0;
            for (size_t i = 0; i < n; ++i) bad += got[i].key != ref[i].key || got[i].idx != ref[i].idx;
            BK_EXPECTF(bad == 0, "bk_key_idx_sort, %zu items, %d threads: %zu places differ from qsort", n, threads[ti],
                       bad);
        }
        free(in);
        free(ref);
        free(got);
    }
    bk_pool_set_threads(0);
}

/* A right triangle with corners (3.5, 4.5), (8.5, 4.5), (3.5, 9.5) in texels of a 16^2 atlas:
 * every side lies on a texel edge, where squares of half side 0.5 and 1 touch it exactly. */
static void test_texel_boxes(void)
{
    float    uv[6] = { 3.5f / 16, 4.5f / 16, 8.5f / 16, 4.5f / 16, 3.5f / 16, 9.5f / 16 };
    uint32_t chart = 0;
    bk_atlas a;
    memset(&a, 0, sizeof a);
    a.width = a.height = 16;
    a.page_count = 1;
    a.tri_count = 1;
    a.rect_first_tri = 1;
    a.uv = uv;
    a.tri_chart = &chart;
    uint32_t ids[256];
    for (int pass = 0; pass < 2; ++pass) {
        const double half = pass ? BK_ATLAS_REACH : 0.5;
        if (pass) bk_atlas_reach_ids(&a, ids);
        else bk_atlas_chart_ids(&a, ids);
        int wrong = 0, first = -1;
        for (int y = 0; y < 16; ++y)
            for (int x = 0; x < 16; ++x) {
                double cx = x + 0.5, cy = y + 0.5;
                /* the closed square meets the closed triangle: the boxes meet and the square's
                 * lowest corner is on the inner side of the hypotenuse x + y = 13 */
                int meets = cx + half >= 3.5 && cx - half <= 8.5 && cy + half >= 4.5 && cy - half <= 9.5 &&
                            (cx - half) + (cy - half) <= 13.0;
                if (meets != (ids[y * 16 + x] == 0)) {
                    if (first < 0) first = y * 16 + x;
                    wrong++;
                }
            }
        BK_EXPECTF(wrong == 0,
                   "half %g: %d texels marked other than the squares that meet the triangle (first: %d, %d)", half,
                   wrong, first % 16, first / 16);
    }
}

int main(void)
{
    test_texel_boxes();
    test_sort();
    test_overlap();
    test_pack();
    test_pack_pages(9, 256);
    test_pack_pages(24, 1024);
    test_charts();
    test_tidy();
    test_absorb();
    test_smooth_evict();
    test_join();
    BK_TEST_DONE();
}
