/* unit_sides.c - bk_bake_tri_sides (src/bake/sides.c) against a plain reference: triangles on a
 * coarse grid of corners (so many share corners by value), with twins of opposite winding, same
 * winding copies, sets of three, -0 beside 0, degenerate and NaN corners, and double-sided
 * materials; each triangle's bits must be what a qsort on the full sorted corners says, on 1 to 4
 * threads, for a scene of one chunk and of many. */
#include "bk_bake.h"
#include "bk_test.h"
#include "pool.h"
#include "scene.h"
#include "sides.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 7;
static uint32_t rnd(uint32_t n)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) % n);
}

/* the reference: a triangle's corners sorted lexicographically by their bits (-0 as 0), the sort's
 * parity; -1 for two equal corners or a NaN */
typedef struct ref {
    uint32_t key[9];
    int      par;
    uint32_t t;
} ref;
static int ref_of(const bk_scene *s, uint32_t t, ref *r)
{
    uint32_t c[3][3];
    for (int v = 0; v < 3; ++v)
        for (int k = 0; k < 3; ++k) {
            float f = s->positions[3 * s->tri_v[3 * t + v] + k];
            if (isnan(f)) return -1;
            memcpy(&c[v][k], &f, 4);
            if (f == 0.0f) c[v][k] = 0;
        }
    int o[3] = { 0, 1, 2 }, par = 0;
    for (int i = 0; i < 3; ++i)
        for (int j = i + 1; j < 3; ++j) {
            int cmp = memcmp(c[o[i]], c[o[j]], 12);
            if (!cmp) return -1;
            if (cmp > 0) {
                int x = o[i];
                o[i] = o[j];
                o[j] = x;
                par ^= 1;
            }
        }
    for (int v = 0; v < 3; ++v) memcpy(r->key + 3 * v, c[o[v]], 12);
    r->par = par;
    r->t = t;
    return 0;
}
static int ref_cmp(const void *a, const void *b) { return memcmp(((const ref *)a)->key, ((const ref *)b)->key, 36); }

static void check(uint32_t n, int threads)
{
    const uint32_t nv = 6 * 6 * 6 + 3;
    bk_scene       s;
    memset(&s, 0, sizeof s);
    s.vertex_count = nv;
    s.positions = malloc(sizeof(float) * 3 * nv);
    for (uint32_t v = 0; v < 6 * 6 * 6; ++v) { /* a 6^3 grid: random triangles meet often */
        s.positions[3 * v] = (float)(v % 6);
        s.positions[3 * v + 1] = (float)(v / 6 % 6);
        s.positions[3 * v + 2] = (float)(v / 36);
    }
    const uint32_t negz = 216, nan = 217, dup0 = 218; /* -0 (like vertex 0), a NaN, vertex 0 again */
    s.positions[3 * negz] = -0.0f, s.positions[3 * negz + 1] = -0.0f, s.positions[3 * negz + 2] = -0.0f;
    s.positions[3 * nan] = NAN, s.positions[3 * nan + 1] = 1, s.positions[3 * nan + 2] = 2;
    s.positions[3 * dup0] = 0.0f, s.positions[3 * dup0 + 1] = 0.0f, s.positions[3 * dup0 + 2] = 0.0f;
    s.tri_count = n;
    s.tri_v = malloc(sizeof(uint32_t) * 3 * n);
    s.tri_material = malloc(sizeof(uint32_t) * n);
    bk_material mats[2];
    memset(mats, 0, sizeof mats);
    mats[1].double_sided = 1;
    s.materials = mats;
    s.material_count = 2;
    for (uint32_t t = 0; t < n; ++t) {
        uint32_t *v = s.tri_v + 3 * t, kind = rnd(16);
        if (t > 0 && kind < 4) { /* a copy of an earlier triangle: reversed (a twin), or rotated */
            const uint32_t *u = s.tri_v + 3 * rnd(t);
            if (kind < 2) v[0] = u[0], v[1] = u[2], v[2] = u[1];
            else v[0] = u[1], v[1] = u[2], v[2] = u[0];
        } else
            for (int k = 0; k < 3; ++k) v[k] = rnd(kind == 15 ? nv : 216); /* some with the odd vertices */
        if (kind == 4 && v[0] == 0) v[0] = negz;
        s.tri_material[t] = kind == 5 ? 1 : kind == 6 ? BK_NONE : 0;
    }
    /* the reference */
    ref     *r = malloc(sizeof(ref) * n);
    uint32_t nr = 0, *want = calloc(n, sizeof(uint32_t)), want_ds = 0;
    for (uint32_t t = 0; t < n; ++t) {
        if (s.tri_material[t] == 1) want[t] = BK_BTRI_DOUBLE_SIDED;
        if (ref_of(&s, t, &r[nr]) == 0) nr++;
    }
    qsort(r, nr, sizeof(ref), ref_cmp);
    for (uint32_t i = 0, e; i < nr; i = e) {
        int par = 0;
        for (e = i; e < nr && !memcmp(r[e].key, r[i].key, 36); ++e) par |= 1 << r[e].par;
        if (par == 3)
            for (uint32_t m = i; m < e; ++m) want[r[m].t] |= BK_BTRI_DOUBLE_SIDED | BK_BTRI_TWIN;
    }
    uint32_t twins = 0;
    for (uint32_t t = 0; t < n; ++t) {
        want_ds += want[t] != 0;
        twins += (want[t] & BK_BTRI_TWIN) != 0;
    }
    bk_f4 *tris = malloc(sizeof(bk_f4) * 3 * n);
    for (uint32_t t = 0; t < n; ++t) tris[3 * t + 1].w = 12345.0f; /* poison: every bit must be written */
    bk_pool_set_threads(threads);
    uint32_t ds = 0;
    BK_EXPECT(bk_bake_tri_sides(&s, n, tris, &ds) == 0);
    uint32_t bad = 0;
    for (uint32_t t = 0; t < n; ++t) {
        uint32_t got;
        float    w = tris[3 * t + 1].w;
        memcpy(&got, &w, 4);
        if (got != want[t] && bad++ < 5)
            fprintf(stderr, "n %u, %d threads: triangle %u: %u, not %u\n", n, threads, t, got, want[t]);
    }
    BK_EXPECTF(bad == 0, "%u of %u triangles wrong", bad, n);
    BK_EXPECTF(ds == want_ds, "%u double-sided, not %u", ds, want_ds);
    BK_EXPECTF(n < 1000 || twins > n / 20, "only %u twins: the test makes too few", twins);
    free(tris);
    free(r);
    free(want);
    free(s.positions);
    free(s.tri_v);
    free(s.tri_material);
}

int main(void)
{
    const int threads[] = { 1, 2, 4 };
    for (int k = 0; k < 3; ++k) {
        check(1, threads[k]);
        check(3000, threads[k]);
        check(300000, threads[k]); /* many chunks, the parallel sort */
    }
    BK_TEST_DONE();
}
