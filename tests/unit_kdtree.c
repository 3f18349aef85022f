/* unit_kdtree.c - KD-tree builder invariants and KD traversal against brute force.
 *
 * Generated scenes (no corpus needed): a seeded random soup, one and two triangles, a flat z = 0
 * grid, 500 identical triangles, long thin triangles, axis-aligned walls, a "staircase" that asks
 * for depth, degenerate and non-finite triangles, and depth / reference limits. For each:
 *   - builder invariants: node indices, depth-first layout (below child = i + 1), split planes
 *     strictly inside their cells, packed leaf references, every triangle in exactly the leaves its
 *     box overlaps (the property bk_kd_trace relies on), the info block recomputed from the tree;
 *   - 10,000 seeded rays through bk_kd_trace with every stack strategy (global; short with 1 and 2
 *     entries, which forces kd-restart; spill with 2) against a loop over all triangles with the
 *     same bk_tri_intersect: closest hits agree in t, any-hit agrees in hit/miss.
 * Also: building with 1, 2, 3 and 8 threads (BK_THREADS) gives bit-identical trees.
 */
#include "kdtree.h"
#include "accel.h"
#include "backend.h"
#include "bk_traverse.h"
#include "bk_test.h"
#include "bk_test_stacks.h"
#include "util.h"

#include <math.h>
#include <stdint.h>

/* ---- scenes ---------------------------------------------------------------------------------- */

typedef struct gen {
    float    *pos;
    uint32_t  nv, cap_v;
    uint32_t *tri;
    uint32_t  nt, cap_t;
} gen;

static uint64_t rng_state;
static uint32_t rng_u32(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull; /* PCG32 */
    uint32_t x = (uint32_t)(((rng_state >> 18) ^ rng_state) >> 27), r = (uint32_t)(rng_state >> 59);
    return (x >> r) | (x << ((32 - r) & 31));
}
static float rng_f(void) { return (float)(rng_u32() >> 8) * (1.0f / 16777216.0f); } /* [0, 1) */
static float rng_range(float a, float b) { return a + (b - a) * rng_f(); }

static uint32_t gen_vertex(gen *g, float x, float y, float z)
{
    if (g->nv == g->cap_v) {
        g->cap_v = g->cap_v ? 2 * g->cap_v : 256;
        g->pos = realloc(g->pos, 3 * sizeof(float) * g->cap_v);
    }
    BK_CHECK(g->pos);
    g->pos[3 * g->nv] = x;
    g->pos[3 * g->nv + 1] = y;
    g->pos[3 * g->nv + 2] = z;
    return g->nv++;
}
static void gen_tri_idx(gen *g, uint32_t a, uint32_t b, uint32_t c)
{
    if (g->nt == g->cap_t) {
        g->cap_t = g->cap_t ? 2 * g->cap_t : 256;
        g->tri = realloc(g->tri, 3 * sizeof(uint32_t) * g->cap_t);
    }
    BK_CHECK(g->tri);
    g->tri[3 * g->nt] = a;
    g->tri[3 * g->nt + 1] = b;
    g->tri[3 * g->nt + 2] = c;
    g->nt++;
}
static void gen_tri(gen *g, const float *a, const float *b, const float *c)
{
    uint32_t i = gen_vertex(g, a[0], a[1], a[2]), j = gen_vertex(g, b[0], b[1], b[2]),
             k = gen_vertex(g, c[0], c[1], c[2]);
    gen_tri_idx(g, i, j, k);
}
static void gen_quad(gen *g, const float *a, const float *b, const float *c, const float *d)
{
    gen_tri(g, a, b, c);
    gen_tri(g, a, c, d);
}
static bk_scene gen_scene(gen *g)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    s.vertex_count = g->nv;
    s.positions = g->pos;
    s.tri_count = g->nt;
    s.tri_v = g->tri;
    return s;
}

static void scene_soup(gen *g, uint32_t n, float size)
{
    for (uint32_t i = 0; i < n; ++i) {
        float c[3] = { rng_f(), rng_f(), rng_f() }, v[3][3];
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k) v[j][k] = c[k] + rng_range(-size, size);
        gen_tri(g, v[0], v[1], v[2]);
    }
}
static void scene_grid(gen *g, int n) /* flat z = 0, shared vertices */
{
    uint32_t base = g->nv;
    for (int y = 0; y <= n; ++y)
        for (int x = 0; x <= n; ++x) gen_vertex(g, (float)x / n, (float)y / n, 0.0f);
    for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x) {
            uint32_t a = base + (uint32_t)(y * (n + 1) + x), b = a + 1, c = a + (uint32_t)n + 2,
                     d = a + (uint32_t)n + 1;
            gen_tri_idx(g, a, b, c);
            gen_tri_idx(g, a, c, d);
        }
}
static void scene_identical(gen *g, uint32_t n)
{
    float a[3] = { 0.1f, 0.2f, 0.3f }, b[3] = { 0.9f, 0.25f, 0.5f }, c[3] = { 0.4f, 0.8f, 0.7f };
    for (uint32_t i = 0; i < n; ++i) gen_tri(g, a, b, c);
}
static void scene_thin(gen *g, uint32_t n) /* long slivers across the box along every axis */
{
    for (uint32_t i = 0; i < n; ++i) {
        int   k = (int)(i % 3);
        float a[3] = { rng_f(), rng_f(), rng_f() }, b[3], c[3];
        memcpy(b, a, sizeof a);
        memcpy(c, a, sizeof a);
        a[k] = 0.0f;
        b[k] = 1.0f;
        c[k] = rng_f();
        c[(k + 1) % 3] += 0.002f;
        gen_tri(g, a, b, c);
    }
    scene_soup(g, n / 4, 0.02f);
}
static void scene_walls(gen *g) /* a closed axis-aligned box split in 4x4 quads per face, plus a block */
{
    for (int face = 0; face < 6; ++face) {
        int   k = face / 2, u = (k + 1) % 3, v = (k + 2) % 3;
        float w = (float)(face & 1);
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
                float p[4][3];
                for (int q = 0; q < 4; ++q) {
                    p[q][k] = w;
                    p[q][u] = (float)(i + (q == 1 || q == 2)) / 4.0f;
                    p[q][v] = (float)(j + (q >= 2)) / 4.0f;
                }
                gen_quad(g, p[0], p[1], p[2], p[3]);
            }
    }
    float lo[3] = { 0.25f, 0.0f, 0.25f }, hi[3] = { 0.5f, 0.5f, 0.75f };
    for (int face = 0; face < 6; ++face) {
        int   k = face / 2, u = (k + 1) % 3, v = (k + 2) % 3;
        float p[4][3];
        for (int q = 0; q < 4; ++q) {
            p[q][k] = (face & 1) ? hi[k] : lo[k];
            p[q][u] = (q == 1 || q == 2) ? hi[u] : lo[u];
            p[q][v] = q >= 2 ? hi[v] : lo[v];
        }
        gen_quad(g, p[0], p[1], p[2], p[3]);
    }
}
static void scene_staircase(gen *g, int n) /* ever smaller triangles towards the origin */
{
    /* Down to 0.85^80 = 2e-6: smaller than that, bk_tri_intersect's products underflow (a triangle
     * of size 1e-23 at the origin is "hit" at t = -0 by a ray leaving it) and brute force is no
     * reference any more. */
    float s = 1.0f;
    for (int i = 0; i < n; ++i, s *= 0.85f) {
        float a[3] = { s, s, s }, b[3] = { 0.75f * s, s, s }, c[3] = { s, 0.75f * s, 0.8f * s };
        gen_tri(g, a, b, c);
    }
}
/* Triangles on a coarse lattice through the origin, with coordinates +0 and -0 mixed: many
 * candidate planes coincide (equal costs, where the lowest plane must win) and some are zeros of
 * either sign, whose sign bit the sweep keeps from the first it meets. */
static void scene_lattice(gen *g, uint32_t n, float scale)
{
    for (uint32_t i = 0; i < n; ++i) {
        float v[3][3];
        for (int j = 0; j < 3; ++j)
            for (int k = 0; k < 3; ++k) {
                int q = (int)(rng_u32() % 9) - 4;
                v[j][k] = q == 0 ? ((rng_u32() & 1) ? -0.0f : 0.0f) : scale * (float)q;
            }
        gen_tri(g, v[0], v[1], v[2]);
    }
}

/* n triangles across y and z, each in a plane x = const, the planes within `ulps` floats of x = 1:
 * binned planes across the slab round onto the same floats with different counts. */
static void scene_slab(gen *g, uint32_t n, int ulps)
{
    for (uint32_t i = 0; i < n; ++i) {
        float v[3][3], x = 1.0f;
        for (uint32_t j = rng_u32() % (uint32_t)ulps; j > 0; --j) x = nextafterf(x, 2.0f);
        v[0][0] = x;
        v[0][1] = 0;
        v[0][2] = 0;
        v[1][0] = x;
        v[1][1] = 1;
        v[1][2] = 0.5f;
        v[2][0] = x;
        v[2][1] = 0.5f;
        v[2][2] = 1;
        gen_tri(g, v[0], v[1], v[2]);
    }
}

static void scene_bad(gen *g) /* degenerate (points, lines) and non-finite triangles among real ones */
{
    scene_soup(g, 200, 0.1f);
    float p[3] = { 0.5f, 0.5f, 0.5f }, q[3] = { 0.7f, 0.5f, 0.5f }, r[3] = { 0.9f, 0.5f, 0.5f };
    float nan_v[3] = { NAN, 0.5f, 0.5f }, inf_v[3] = { 0.5f, INFINITY, 0.5f };
    gen_tri(g, p, p, p);
    gen_tri(g, p, q, r);
    gen_tri(g, p, q, nan_v);
    gen_tri(g, inf_v, q, r);
    scene_soup(g, 50, 0.1f);
}

/* ---- builder invariants ---------------------------------------------------------------------- */

static int tri_box(const bk_scene *s, uint32_t t, float lo[3], float hi[3])
{
    int finite = 1;
    for (int k = 0; k < 3; ++k) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    for (int c = 0; c < 3; ++c) {
        const float *p = s->positions + 3 * s->tri_v[3 * t + c];
        for (int k = 0; k < 3; ++k) {
            finite &= isfinite(p[k]) != 0;
            lo[k] = fminf(lo[k], p[k]);
            hi[k] = fmaxf(hi[k], p[k]);
        }
    }
    return finite;
}

static double area3(const float lo[3], const float hi[3])
{
    double dx = (double)hi[0] - lo[0], dy = (double)hi[1] - lo[1], dz = (double)hi[2] - lo[2];
    return 2.0 * (dx * dy + dy * dz + dz * dx);
}

typedef struct walk {
    uint32_t node;
    int      depth;
    float    lo[3], hi[3];
} walk;

static int pbrt_depth(uint32_t n)
{
    int l = 0;
    while (l < 31 && ((uint32_t)1 << (l + 1)) <= n) ++l;
    return (int)lround(8.0 + 1.3 * l);
}

static void check_tree(const char *name, const bk_scene *s, const bk_accel *a, const bk_build_opts *o)
{
    const uint32_t nn = a->kd_node_count;
    BK_EXPECTF(a->type == BK_ACCEL_KDTREE, "%s", name);
    BK_EXPECTF(nn >= 1 && a->kd_nodes, "%s: %u nodes", name, nn);
    BK_EXPECTF(a->tri_count == s->tri_count && a->tris, "%s", name);
    BK_EXPECTF(a->info.nodes == nn, "%s: info.nodes %u, %u nodes", name, a->info.nodes, nn);
    BK_EXPECTF(a->info.refs == a->kd_ref_count, "%s: info.refs %u, %u refs", name, a->info.refs, a->kd_ref_count);
    if (nn == 0 || !a->kd_nodes) return;

    /* tris: file order, id in v0.w, scene bounds over the finite triangles */
    float    slo[3] = { INFINITY, INFINITY, INFINITY }, shi[3] = { -INFINITY, -INFINITY, -INFINITY };
    uint32_t valid = 0;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        for (int c = 0; c < 3; ++c) {
            const bk_f4  v = a->tris[3 * t + c];
            const float *p = s->positions + 3 * s->tri_v[3 * t + c];
            int same = (v.x == p[0] || (isnan(v.x) && isnan(p[0]))) && (v.y == p[1] || (isnan(v.y) && isnan(p[1]))) &&
                       (v.z == p[2] || (isnan(v.z) && isnan(p[2])));
            BK_EXPECTF(same, "%s: tri %u vertex %d", name, t, c);
            BK_EXPECTF(bk_float_bits(v.w) == (c == 0 ? t : 0u), "%s: tri %u vertex %d w bits %08x", name, t, c,
                       bk_float_bits(v.w));
        }
        float lo[3], hi[3];
        if (!tri_box(s, t, lo, hi)) continue;
        valid++;
        for (int k = 0; k < 3; ++k) {
            slo[k] = fminf(slo[k], lo[k]);
            shi[k] = fmaxf(shi[k], hi[k]);
        }
    }
    if (valid) {
        BK_EXPECTF(a->lo.x == slo[0] && a->lo.y == slo[1] && a->lo.z == slo[2], "%s: lo", name);
        BK_EXPECTF(a->hi.x == shi[0] && a->hi.y == shi[1] && a->hi.z == shi[2], "%s: hi", name);
    }

    /* Walk the tree: layout, planes, packed references, stats, SAH. */
    uint8_t *seen = calloc(nn, 1);
    walk    *stack = malloc(sizeof(walk) * (BK_MAX_DEPTH + 4));
    BK_CHECK(seen && stack);
    int      sp = 0, bad = 0;
    uint32_t leaves = 0, max_leaf = 0, expect_first = 0, visited = 0, depth = 0;
    double   sah = 0.0;
    stack[sp].node = 0;
    stack[sp].depth = 0;
    stack[sp].lo[0] = a->lo.x;
    stack[sp].lo[1] = a->lo.y;
    stack[sp].lo[2] = a->lo.z;
    stack[sp].hi[0] = a->hi.x;
    stack[sp].hi[1] = a->hi.y;
    stack[sp].hi[2] = a->hi.z;
    sp++;
    while (sp > 0 && bad < 5) {
        walk w = stack[--sp];
        if (w.node >= nn || seen[w.node]) {
            BK_EXPECTF(0, "%s: node %u out of range or reached twice", name, w.node);
            bad++;
            continue;
        }
        seen[w.node] = 1;
        visited++;
        bk_kd_node n = a->kd_nodes[w.node];
        if ((n.flags & 3u) == BK_KD_LEAF) {
            uint32_t count = n.flags >> 2;
            leaves++;
            if (count > max_leaf) max_leaf = count;
            if ((uint32_t)w.depth > depth) depth = (uint32_t)w.depth;
            sah += area3(w.lo, w.hi) * count;
            /* Leaves appear in node order, so their reference ranges are packed in that order. */
            if (n.data != expect_first) {
                BK_EXPECTF(0, "%s: leaf %u first %u, expected %u", name, w.node, n.data, expect_first);
                bad++;
            }
            expect_first = n.data + count;
            if ((uint64_t)n.data + count > a->kd_ref_count) {
                BK_EXPECTF(0, "%s: leaf %u past the references", name, w.node);
                bad++;
                continue;
            }
            for (uint32_t i = 0; i < count; ++i) {
                uint32_t t = a->kd_refs[n.data + i];
                float    lo[3], hi[3];
                if (t >= s->tri_count) {
                    BK_EXPECTF(0, "%s: ref %u out of range", name, t);
                    bad++;
                    break;
                }
                int fin = tri_box(s, t, lo, hi), overlap = fin;
                for (int k = 0; k < 3; ++k) overlap &= lo[k] <= w.hi[k] && hi[k] >= w.lo[k];
                if (!overlap) {
                    BK_EXPECTF(0, "%s: leaf %u holds tri %u, whose box misses its cell", name, w.node, t);
                    bad++;
                    break;
                }
            }
            continue;
        }
        int      k = (int)(n.flags & 3u);
        float    p = bk_bits_float(n.data);
        uint32_t above = n.flags >> 2;
        sah += area3(w.lo, w.hi) * o->cost_node;
        if (!(p > w.lo[k] && p < w.hi[k])) {
            BK_EXPECTF(0, "%s: node %u plane %g not inside [%g, %g] on axis %d", name, w.node, p, w.lo[k], w.hi[k], k);
            bad++;
        }
        if (!(w.node + 1 < nn && above > w.node + 1 && above < nn)) {
            BK_EXPECTF(0, "%s: node %u children %u, %u", name, w.node, w.node + 1, above);
            bad++;
            continue;
        }
        if (sp + 2 > BK_MAX_DEPTH + 4) {
            BK_EXPECTF(0, "%s: deeper than BK_MAX_DEPTH", name);
            bad++;
            continue;
        }
        walk ab = w, be = w;
        ab.node = above;
        ab.lo[k] = p;
        ab.depth = w.depth + 1;
        be.node = w.node + 1;
        be.hi[k] = p;
        be.depth = w.depth + 1;
        stack[sp++] = ab;
        stack[sp++] = be; /* below first: depth-first order */
    }
    BK_EXPECTF(bad || visited == nn, "%s: %u of %u nodes reachable", name, visited, nn);
    BK_EXPECTF(bad || expect_first == a->kd_ref_count, "%s: leaves hold %u of %u references", name, expect_first,
               a->kd_ref_count);
    BK_EXPECTF(a->info.leaves == leaves, "%s: info.leaves %u, counted %u", name, a->info.leaves, leaves);
    BK_EXPECTF(a->info.max_leaf == max_leaf, "%s: info.max_leaf %u, counted %u", name, a->info.max_leaf, max_leaf);
    BK_EXPECTF(a->info.depth == depth, "%s: info.depth %u, counted %u", name, a->info.depth, depth);
    BK_EXPECTF((int)depth <= o->max_depth && (int)depth <= pbrt_depth(valid ? valid : 1) && depth <= BK_MAX_DEPTH,
               "%s: depth %u over the limit (%d)", name, depth, o->max_depth);
    BK_EXPECTF((double)a->kd_ref_count <= fmax(1.0, (double)o->kd_max_refs_per_tri) * valid + 0.5,
               "%s: %u references for %u triangles, at most %d each", name, a->kd_ref_count, valid,
               o->kd_max_refs_per_tri);
    double root = area3(slo, shi), want = valid && root > 0.0 ? sah / root : (double)valid;
    BK_EXPECTF(fabs(a->info.sah_cost - want) <= 1e-6 * fmax(1.0, want), "%s: info.sah_cost %g, recomputed %g", name,
               a->info.sah_cost, want);
    BK_EXPECTF(a->info.bytes == (size_t)nn * 8 + (size_t)a->kd_ref_count * 4 + (size_t)s->tri_count * 48,
               "%s: info.bytes", name);

    /* Every finite triangle sits in every leaf its box overlaps (closed boxes). */
    uint32_t missing = 0;
    for (uint32_t t = 0; t < s->tri_count && !bad; ++t) {
        float lo[3], hi[3];
        if (!tri_box(s, t, lo, hi)) continue;
        sp = 0;
        stack[sp++].node = 0;
        while (sp > 0) {
            uint32_t   i = stack[--sp].node;
            bk_kd_node n = a->kd_nodes[i];
            if ((n.flags & 3u) != BK_KD_LEAF) {
                int   k = (int)(n.flags & 3u);
                float p = bk_bits_float(n.data);
                if (hi[k] >= p) stack[sp++].node = n.flags >> 2;
                if (lo[k] <= p) stack[sp++].node = i + 1;
                continue;
            }
            uint32_t count = n.flags >> 2, found = 0;
            for (uint32_t j = 0; j < count && !found; ++j) found = a->kd_refs[n.data + j] == t;
            if (!found && missing++ < 5) BK_EXPECTF(0, "%s: tri %u overlaps leaf %u but is not in it", name, t, i);
        }
    }
    free(seen);
    free(stack);
}

/* ---- traversal against brute force ------------------------------------------------------------ */

static bk_hit brute(const bk_accel_view *v, const bk_ray *ray, int any_hit)
{
    bk_hit h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
    float best = r.tmax;
    for (uint32_t t = 0; t < v->tri_count; ++t) {
        float tt;
        if (bk_tri_intersect(&r, bk_tri_vertex(v, t, 0, 0), bk_tri_vertex(v, t, 1, 0), bk_tri_vertex(v, t, 2, 0), best,
                             &tt)) {
            best = tt;
            h.t = tt;
            h.tri = t;
            if (any_hit) return h;
        }
    }
    if (h.tri != BK_NO_HIT) /* the winner's precise distance, as the traversal */
        h.t = bk_tri_refine_t(ray, bk_tri_vertex(v, h.tri, 0, 0), bk_tri_vertex(v, h.tri, 1, 0),
                              bk_tri_vertex(v, h.tri, 2, 0), h.t);
    return h;
}

static float pick_coord(const bk_scene *s, int k, float lo, float hi)
{
    /* Half the time a vertex coordinate, so rays run exactly along edges, planes and vertices. */
    if (rng_u32() & 1) {
        float c = s->positions[3 * (rng_u32() % s->vertex_count) + k];
        if (isfinite(c)) return c;
    }
    return rng_range(lo, hi);
}

static bk_ray make_ray(const bk_scene *s, const bk_accel *a)
{
    float lo[3] = { a->lo.x, a->lo.y, a->lo.z }, hi[3] = { a->hi.x, a->hi.y, a->hi.z }, ext[3];
    float diag = 0.0f;
    for (int k = 0; k < 3; ++k) {
        ext[k] = hi[k] - lo[k];
        diag += ext[k] * ext[k];
    }
    diag = sqrtf(diag);
    if (diag == 0.0f) diag = 1.0f;
    float    o[3], d[3];
    uint32_t kind = rng_u32() % 10;
    if (kind < 3) { /* inside (mostly), random direction */
        for (int k = 0; k < 3; ++k) o[k] = rng_range(lo[k] - 0.1f * ext[k], hi[k] + 0.1f * ext[k]);
        float len;
        do {
            for (int k = 0; k < 3; ++k) d[k] = rng_range(-1.0f, 1.0f);
            len = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        } while (len > 1.0f || len < 1e-4f);
    } else if (kind < 5) { /* outside, towards a point in the box */
        for (int k = 0; k < 3; ++k) {
            o[k] = rng_range(lo[k] - ext[k] - 0.5f * diag, hi[k] + ext[k] + 0.5f * diag);
            d[k] = rng_range(lo[k], hi[k]) - o[k];
        }
    } else if (kind < 7) { /* towards a point on a random triangle */
        uint32_t t = rng_u32() % s->tri_count;
        float    u = rng_f(), v = rng_f();
        if (u + v > 1.0f) {
            u = 1.0f - u;
            v = 1.0f - v;
        }
        for (int k = 0; k < 3; ++k) {
            float p0 = s->positions[3 * s->tri_v[3 * t] + k], p1 = s->positions[3 * s->tri_v[3 * t + 1] + k],
                  p2 = s->positions[3 * s->tri_v[3 * t + 2] + k];
            float p = p0 + u * (p1 - p0) + v * (p2 - p0);
            if (!isfinite(p)) p = 0.5f * (lo[k] + hi[k]);
            o[k] = rng_range(lo[k] - 0.5f * ext[k], hi[k] + 0.5f * ext[k]);
            d[k] = p - o[k];
        }
    } else { /* axis-parallel: two zero components (some -0), exact coordinates */
        int k = (int)(rng_u32() % 3);
        for (int j = 0; j < 3; ++j) {
            o[j] = pick_coord(s, j, lo[j] - 0.1f * ext[j], hi[j] + 0.1f * ext[j]);
            d[j] = (rng_u32() & 1) ? 0.0f : -0.0f;
        }
        d[k] = (rng_u32() & 1) ? 1.0f : -1.0f;
        o[k] = rng_range(lo[k] - ext[k], hi[k] + ext[k]);
    }
    bk_ray r;
    r.ox = o[0];
    r.oy = o[1];
    r.oz = o[2];
    r.dx = d[0];
    r.dy = d[1];
    r.dz = d[2];
    r.tmin = 0.0f;
    r.tmax = BK_INF;
    uint32_t lim = rng_u32() % 8;
    float    dl = sqrtf(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (dl == 0.0f) dl = 1.0f;
    if (lim == 0) r.tmax = rng_range(0.0f, 2.0f * diag / dl);
    if (lim == 1) {
        r.tmin = rng_range(0.0f, 0.5f * diag / dl);
        r.tmax = r.tmin + rng_range(0.0f, 2.0f * diag / dl);
    }
    return r;
}

#define NRAYS 10000

/* A ray parallel to an axis whose origin lies on the scene box's face on that axis: the case a slab
 * test with a huge finite 1/d gets wrong (0 * +-1e30 is +-0 on the face), labelled in failures. */
static int on_root_face(const bk_accel *a, const bk_ray *r)
{
    float o[3] = { r->ox, r->oy, r->oz }, d[3] = { r->dx, r->dy, r->dz };
    float lo[3] = { a->lo.x, a->lo.y, a->lo.z }, hi[3] = { a->hi.x, a->hi.y, a->hi.z };
    for (int k = 0; k < 3; ++k)
        if (fabsf(d[k]) < 1e-30f && (o[k] == lo[k] || o[k] == hi[k])) return 1;
    return 0;
}

static void check_rays(const char *name, const bk_scene *s, const bk_accel *a, uint64_t seed, int nrays)
{
    bk_accel_view v = bk_accel_get_view(a);
    enum { CAP = BK_MAX_DEPTH + 4 };
    static uint32_t slot[3 * CAP], spill[3 * CAP];
    /* every stack strategy (bk_test_stacks.h), a sized one with 1 and 2 entries */
    static const int sizes[] = { 1, 2 };
    bk_test_stack    ts[BK_TEST_STACKS_MAX];
    const int        ncfg = bk_test_stacks(sizes, 2, ts);
    struct {
        int  mode, cap;
        char label[32];
    } cfg[BK_TEST_STACKS_MAX];
    for (int c = 0; c < ncfg; ++c) {
        cfg[c].mode = ts[c].mode;
        cfg[c].cap = bk_stack_cap(ts[c].mode, ts[c].size); /* CAP where it holds the deepest tree */
        if (ts[c].size) snprintf(cfg[c].label, sizeof cfg[c].label, "%s%d", bk_stack_mode_name(ts[c].mode), ts[c].size);
        else snprintf(cfg[c].label, sizeof cfg[c].label, "%s", bk_stack_mode_name(ts[c].mode));
    }
    rng_state = seed;
    uint32_t fails = 0, face_fails = 0, hits = 0, restarts = 0, spills = 0;
    for (int i = 0; i < nrays; ++i) {
        bk_ray ray = make_ray(s, a);
        bk_hit ref = brute(&v, &ray, 0), ref_any = brute(&v, &ray, 1);
        hits += ref.tri != BK_NO_HIT;
        for (int c = 0; c < ncfg; ++c) {
            for (int any = 0; any < 2; ++any) {
                bk_trace_stats st;
                memset(&st, 0, sizeof st);
                bk_stack stk = bk_stack_make(cfg[c].mode, slot, 1, cfg[c].cap, spill, 1);
                bk_hit   h = bk_kd_trace(&v, &ray, any, BK_PRIM_TRI, &stk, &st);
                restarts += st.restarts;
                spills += st.spills;
                int ok;
                if (any) {
                    ok = (h.tri == BK_NO_HIT) == (ref_any.tri == BK_NO_HIT);
                } else {
                    float tol = 1e-4f * fmaxf(fabsf(h.t), fabsf(ref.t)) + 1e-30f;
                    ok = (h.tri == BK_NO_HIT && ref.tri == BK_NO_HIT) ||
                         (h.tri != BK_NO_HIT && ref.tri != BK_NO_HIT && fabsf(h.t - ref.t) <= tol);
                }
                if (ok && h.tri != BK_NO_HIT) { /* the reported triangle is hit at the reported t */
                    bk_ray_pre r = bk_ray_prepare(&ray);
                    float      t2;
                    ok = h.tri < s->tri_count &&
                         bk_tri_intersect(&r, bk_tri_vertex(&v, h.tri, 0, 0), bk_tri_vertex(&v, h.tri, 1, 0),
                                          bk_tri_vertex(&v, h.tri, 2, 0), ray.tmax, &t2) &&
                         (any || bk_tri_refine_t(&ray, bk_tri_vertex(&v, h.tri, 0, 0), bk_tri_vertex(&v, h.tri, 1, 0),
                                                 bk_tri_vertex(&v, h.tri, 2, 0), t2) == h.t);
                }
                if (!ok) face_fails += on_root_face(a, &ray);
                if (!ok && fails++ < 8)
                    BK_EXPECTF(
                        0, "%s: ray %d%s (%a %a %a -> %a %a %a, t %a..%a) %s %s: kd t %g tri %u, brute t %g tri %u",
                        name, i, on_root_face(a, &ray) ? " [parallel, on a root face]" : "", ray.ox, ray.oy, ray.oz,
                        ray.dx, ray.dy, ray.dz, ray.tmin, ray.tmax, cfg[c].label, any ? "any" : "closest", h.t, h.tri,
                        any ? ref_any.t : ref.t, any ? ref_any.tri : ref.tri);
            }
        }
    }
    BK_EXPECTF(fails == 0, "%s: %u ray mismatches (%u of them parallel rays on a root face)", name, fails, face_fails);
    printf("  %-10s %5u tris  %6u nodes  depth %2u  %6u refs  sah %7.2f  %5d/%d rays hit  %u restarts  %u spills\n",
           name, a->tri_count, a->kd_node_count, a->info.depth, a->kd_ref_count, a->info.sah_cost, hits, nrays,
           restarts, spills);
}

/* The default split search of small nodes must choose the planes of the plain sorted sweep
 * (bk_build_opts.kd_sweep, the reference): the same bytes. */
static void check_sweep(const char *name, const bk_scene *s, const bk_accel *a, const bk_build_opts *o)
{
    bk_build_opts q = *o;
    q.kd_sweep = 1;
    bk_accel r;
    char     err[256] = "";
    if (bk_kd_build(s, &q, &r, err, sizeof err)) {
        BK_EXPECTF(0, "%s: sweep build: %s", name, err);
        return;
    }
    int same = a->kd_node_count == r.kd_node_count && a->kd_ref_count == r.kd_ref_count &&
               !memcmp(a->kd_nodes, r.kd_nodes, sizeof(bk_kd_node) * a->kd_node_count) &&
               !memcmp(a->kd_refs, r.kd_refs, sizeof(uint32_t) * a->kd_ref_count) &&
               a->info.sah_cost == r.info.sah_cost;
    if (!same) {
        uint32_t i = 0, nc = a->kd_node_count < r.kd_node_count ? a->kd_node_count : r.kd_node_count;
        while (i < nc && !memcmp(&a->kd_nodes[i], &r.kd_nodes[i], sizeof(bk_kd_node))) ++i;
        BK_EXPECTF(0, "%s: tree differs from the sorted sweep's (%u vs %u nodes, first difference at node %u)", name,
                   a->kd_node_count, r.kd_node_count, i);
    }
    bk_accel_free(&r);
}

static void run_scene_n(const char *name, gen *g, const bk_build_opts *o, uint64_t seed, int nrays)
{
    bk_scene s = gen_scene(g);
    bk_accel a;
    char     err[256] = "";
    int      rc = bk_kd_build(&s, o, &a, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s: %s", name, err);
    if (rc == 0) {
        check_tree(name, &s, &a, o);
        check_rays(name, &s, &a, seed, nrays);
        check_sweep(name, &s, &a, o);
        bk_accel_free(&a);
    }
    free(g->pos);
    free(g->tri);
    memset(g, 0, sizeof *g);
}

static void run_scene(const char *name, gen *g, const bk_build_opts *o, uint64_t seed)
{
    run_scene_n(name, g, o, seed, NRAYS);
}

/* Many small scenes (one exact split search at the root and below) whose coordinates come from a
 * few values: +0 and -0, and half a robustness margin (2^-21: the margin is 2^-20 of the
 * magnitude, 1 here) and a whole one either side of zero. Planes coincide, costs tie, zeros of both signs compete,
 * margin planes fall on box faces: each tree must be the sorted sweep's, byte for byte. */
static void check_sweep_small(const bk_build_opts *o, int trials)
{
    const float hm = ldexpf(1.0f, -21);
    /* two value sets, alternating: each catches kinds of mistakes the other rarely does */
    const float    vals[2][8] = { { -1.0f, -hm, -0.0f, 0.0f, hm, 1.0f },
                                  { -1.0f, -2 * hm, -hm, -0.0f, 0.0f, hm, 2 * hm, 1.0f } };
    const uint32_t nvals[2] = { 6, 8 };
    int            before = bk_test_failures;
    rng_state = 40;
    for (int t = 0; t < trials && bk_test_failures == before; ++t) {
        gen g;
        memset(&g, 0, sizeof g);
        uint32_t n = 2 + rng_u32() % 31;
        for (uint32_t i = 0; i < n; ++i) {
            float v[3][3];
            for (int j = 0; j < 3; ++j)
                for (int k = 0; k < 3; ++k) v[j][k] = vals[t & 1][rng_u32() % nvals[t & 1]];
            gen_tri(&g, v[0], v[1], v[2]);
        }
        bk_scene s = gen_scene(&g);
        bk_accel a;
        char     err[256] = "", name[64];
        snprintf(name, sizeof name, "small scene %d", t);
        if (bk_kd_build(&s, o, &a, err, sizeof err) == 0) {
            check_sweep(name, &s, &a, o);
            bk_accel_free(&a);
        } else {
            BK_EXPECTF(0, "%s: %s", name, err);
        }
        free(g.pos);
        free(g.tri);
    }
    printf("  %d small scenes: trees equal to the sorted sweep's\n", trials);
}

/* Subtrees are built on worker threads and spliced in: the tree must not depend on the count. */
static void check_threads(const bk_build_opts *o)
{
    gen g;
    memset(&g, 0, sizeof g);
    rng_state = 7;
    scene_soup(&g, 20000, 0.02f);
    scene_grid(&g, 40);
    bk_scene s = gen_scene(&g);
    bk_accel ref, a;
    char     err[256] = "";
    setenv("BK_THREADS", "1", 1);
    BK_CHECK(bk_kd_build(&s, o, &ref, err, sizeof err) == 0);
    const char *counts[] = { "2", "3", "8" };
    for (int i = 0; i < 3; ++i) {
        setenv("BK_THREADS", counts[i], 1);
        BK_CHECK(bk_kd_build(&s, o, &a, err, sizeof err) == 0);
        int same = a.kd_node_count == ref.kd_node_count && a.kd_ref_count == ref.kd_ref_count &&
                   !memcmp(a.kd_nodes, ref.kd_nodes, sizeof(bk_kd_node) * a.kd_node_count) &&
                   !memcmp(a.kd_refs, ref.kd_refs, sizeof(uint32_t) * a.kd_ref_count) &&
                   a.info.depth == ref.info.depth && a.info.leaves == ref.info.leaves &&
                   a.info.max_leaf == ref.info.max_leaf &&
                   fabs(a.info.sah_cost - ref.info.sah_cost) <= 1e-9 * ref.info.sah_cost;
        BK_EXPECTF(same, "tree built with %s threads differs from the one built with 1", counts[i]);
        bk_accel_free(&a);
    }
    unsetenv("BK_THREADS");
    bk_accel_free(&ref);
    run_scene_n("threads", &g, o, 25, 2000); /* frees g */
}

/* A subtree handed to a worker starts with an empty scratch buffer; when its first split cuts off
 * empty space below (nothing below the plane) the builder copied zero entries from a NULL scratch
 * (UBSan: memcpy from NULL). Clusters of 200 triangles, each alone in a tall column of the scene,
 * become such subtrees. Two threads, so subtrees are made at all. */
static void check_sub_empty_below(const bk_build_opts *o)
{
    gen g;
    memset(&g, 0, sizeof g);
    rng_state = 8;
    for (int c = 0; c < 24; ++c) {
        float base[3] = { 3.0f * (float)c, (c & 1) ? 10.0f : 0.0f, (c & 2) ? 10.0f : 0.0f };
        for (int i = 0; i < 200; ++i) {
            float ctr[3] = { rng_f(), rng_f(), rng_f() }, v[3][3];
            for (int j = 0; j < 3; ++j)
                for (int k = 0; k < 3; ++k) v[j][k] = base[k] + ctr[k] + rng_range(-0.05f, 0.05f);
            gen_tri(&g, v[0], v[1], v[2]);
        }
    }
    setenv("BK_THREADS", "2", 1);
    run_scene_n("sub-empty", &g, o, 27, 4000); /* frees g */
    unsetenv("BK_THREADS");
}

int main(void)
{
    bk_build_opts o = bk_build_opts_default();
    gen           g;
    memset(&g, 0, sizeof g);

    /* No triangles is an error, and leaves nothing to free. */
    {
        bk_scene s;
        memset(&s, 0, sizeof s);
        bk_accel a;
        char     err[128] = "";
        BK_EXPECT(bk_kd_build(&s, &o, &a, err, sizeof err) < 0);
        BK_EXPECTF(strstr(err, "no triangles") != NULL, "%s", err);
        BK_EXPECT(a.kd_nodes == NULL && a.kd_refs == NULL && a.tris == NULL);
        bk_accel_free(&a);
    }

    rng_state = 1;
    scene_soup(&g, 1000, 0.05f);
    run_scene("soup", &g, &o, 11);
    { /* one triangle, two triangles sharing an edge */
        float p[4][3] = { { 0, 0, 0 }, { 1, 0, 0 }, { 1, 1, 0.5f }, { 0, 1, 0.25f } };
        gen_tri(&g, p[0], p[1], p[2]);
        run_scene("one", &g, &o, 12);
        gen_tri(&g, p[0], p[1], p[2]);
        gen_tri(&g, p[0], p[2], p[3]);
        run_scene("two", &g, &o, 13);
    }
    scene_grid(&g, 24);
    run_scene("flat-grid", &g, &o, 14);
    scene_identical(&g, 500);
    run_scene("identical", &g, &o, 15);
    rng_state = 2;
    scene_thin(&g, 400);
    run_scene("thin", &g, &o, 16);
    scene_walls(&g);
    run_scene("walls", &g, &o, 17);
    scene_staircase(&g, 80);
    run_scene("staircase", &g, &o, 18);
    rng_state = 3;
    scene_bad(&g);
    run_scene("bad-tris", &g, &o, 19);
    rng_state = 9;
    scene_lattice(&g, 300, 1.0f);
    run_scene("lattice", &g, &o, 28);
    rng_state = 10;
    scene_lattice(&g, 60, 1.0f);
    run_scene("lattice60", &g, &o, 29);
    for (int w = 20; w <= 60; w += 8) {
        rng_state = 50 + (uint64_t)w;
        scene_slab(&g, 200, w);
        run_scene_n("slab", &g, &o, 33, 500);
    }
    /* extreme scales: float costs out of the range where the fast search trusts them */
    rng_state = 11;
    scene_lattice(&g, 200, 1e-25f);
    run_scene("tiny", &g, &o, 30);
    rng_state = 12;
    scene_lattice(&g, 200, 1e18f);
    run_scene_n("huge", &g, &o, 31, 0); /* rays overflow */
    {                                   /* nothing finite: an empty root leaf, and every ray misses */
        float p[3] = { 0.0f, 1.0f, NAN }, q[3] = { 1.0f, 0.0f, 0.0f }, r[3] = { 0.0f, 0.0f, 1.0f };
        gen_tri(&g, p, q, r);
        run_scene("all-nan", &g, &o, 26);
    }

    /* Limits: a shallow depth limit, no depth at all, and tight reference budgets. */
    {
        bk_build_opts q = o;
        q.max_depth = 6;
        scene_staircase(&g, 80);
        run_scene("depth6", &g, &q, 20);
        q.max_depth = 0;
        rng_state = 4;
        scene_soup(&g, 300, 0.05f);
        run_scene("depth0", &g, &q, 21);
        q = o;
        q.kd_max_refs_per_tri = 1;
        rng_state = 5;
        scene_thin(&g, 400);
        run_scene("refs1", &g, &q, 22);
        q = o;
        q.kd_max_refs_per_tri = 2;
        rng_state = 5;
        scene_thin(&g, 400);
        run_scene("refs2", &g, &q, 23);
        q = o;
        q.cost_node = 0.0f;
        q.kd_empty_bonus = 1.0f;
        rng_state = 6;
        scene_soup(&g, 1000, 0.05f);
        run_scene("cheap-node", &g, &q, 24);
    }
    check_sweep_small(&o, 3000);
    setenv("BK_KD_NO_AVX2", "1", 1); /* the SSE2 search where the CPU has AVX2 (else the same again) */
    check_sweep_small(&o, 3000);
    rng_state = 1;
    scene_soup(&g, 1000, 0.05f);
    run_scene("soup-sse2", &g, &o, 11);
    unsetenv("BK_KD_NO_AVX2");
    check_threads(&o);
    check_sub_empty_below(&o);
    BK_TEST_DONE();
}
