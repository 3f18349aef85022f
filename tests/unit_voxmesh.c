/* unit_voxmesh.c - the voxel surface (src/scene/voxmesh.c) on voxel scenes made here.
 *
 * Small cases with known answers: a single voxel (6 quads), a 2x1x1 bar (merged to 6 quads), a
 * colour boundary (splits quads), two instances touching (the shared faces hidden), a mirrored
 * instance (normals still out). Then random scenes of several models under all 48 signed
 * permutations, overlapping and touching, checked against brute force over a dense world grid:
 * every quad face lies on a voxel of its instance and colour with an empty cell outside, the
 * triangles' winding normals point along the quad's direction, the faces are exactly the visible
 * ones (counted), and two builds give the same quads, with 1 thread or 5. Instances sharing cells
 * (thousands of copies of one voxel in one place; thousands of small models overlapping) against a
 * brute force that lets cells be shared. Also a timing of a large generated world (printed, not
 * checked).
 */
#include "atlas.h"
#include "voxmesh.h"
#include "util.h"
#include "bk_test.h"
#include "bk_test_voxels.h"
#include "raster.h"

#include <math.h>
#include <stdint.h>

/* ---- building scenes ----------------------------------------------------------------------- */


static const int8_t ID[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };

/* ---- brute force --------------------------------------------------------------------------- */

typedef struct world {
    int32_t  lo[3], n[3];
    int32_t *inst; /* instance filling the cell, -1 empty; -2 two instances */
    uint8_t *colour;
} world;

static void world_cell_of(const bk_scene *s, uint32_t i, const uint8_t *p, int32_t c[3])
{
    const bk_vox_instance *in = &s->vox_instances[i];
    int32_t                T[3];
    bk_vox_instance_offset(in, s->vox_models[in->model].size, T);
    for (int r = 0; r < 3; ++r) {
        int32_t a = T[r], b = T[r];
        for (int k = 0; k < 3; ++k) {
            a += in->m[3 * r + k] * p[k];
            b += in->m[3 * r + k] * (p[k] + 1);
        }
        c[r] = a < b ? a : b;
    }
}

static void world_build(const bk_scene *s, world *W)
{
    for (int r = 0; r < 3; ++r) {
        int32_t lo = INT32_MAX, hi = INT32_MIN;
        for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
            if (s->vox_instances[i].lo[r] < lo) lo = s->vox_instances[i].lo[r];
            if (s->vox_instances[i].hi[r] > hi) hi = s->vox_instances[i].hi[r];
        }
        W->lo[r] = lo - 1;
        W->n[r] = hi - lo + 2;
    }
    size_t N = (size_t)W->n[0] * W->n[1] * W->n[2];
    W->inst = malloc(sizeof(int32_t) * N);
    W->colour = calloc(N, 1);
    for (size_t k = 0; k < N; ++k) W->inst[k] = -1;
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_model *m = &s->vox_models[s->vox_instances[i].model];
        for (uint32_t v = 0; v < m->voxel_count; ++v) {
            int32_t c[3];
            world_cell_of(s, i, m->xyzi + 4 * v, c);
            size_t k =
                (size_t)(c[0] - W->lo[0]) + W->n[0] * ((size_t)(c[1] - W->lo[1]) + W->n[1] * (size_t)(c[2] - W->lo[2]));
            W->inst[k] = W->inst[k] == -1 || W->inst[k] == (int32_t)i ? (int32_t)i : -2;
            W->colour[k] = m->xyzi[4 * v + 3];
        }
    }
}

static int32_t world_at(const world *W, const int32_t c[3], uint8_t *colour)
{
    for (int r = 0; r < 3; ++r)
        if (c[r] < W->lo[r] || c[r] >= W->lo[r] + W->n[r]) {
            if (colour) *colour = 0;
            return -1;
        }
    size_t k = (size_t)(c[0] - W->lo[0]) + W->n[0] * ((size_t)(c[1] - W->lo[1]) + W->n[1] * (size_t)(c[2] - W->lo[2]));
    if (colour) *colour = W->colour[k];
    return W->inst[k];
}

/* Checks the surface of s against brute force; returns the number of visible faces found. */
static uint64_t check_surface(const char *name, const bk_scene *s, const bk_voxmesh *vm)
{
    world W;
    world_build(s, &W);
    static const int D[6][3] = { { 1, 0, 0 }, { -1, 0, 0 }, { 0, 1, 0 }, { 0, -1, 0 }, { 0, 0, 1 }, { 0, 0, -1 } };
    /* expected visible faces: a filled cell (one instance) next to an empty one */
    uint64_t expect = 0;
    for (int32_t z = W.lo[2]; z < W.lo[2] + W.n[2]; ++z)
        for (int32_t y = W.lo[1]; y < W.lo[1] + W.n[1]; ++y)
            for (int32_t x = W.lo[0]; x < W.lo[0] + W.n[0]; ++x) {
                int32_t c[3] = { x, y, z };
                if (world_at(&W, c, NULL) < 0) continue;
                for (int d = 0; d < 6; ++d) {
                    int32_t e[3] = { x + D[d][0], y + D[d][1], z + D[d][2] };
                    expect += world_at(&W, e, NULL) == -1;
                }
            }
    BK_EXPECTF(vm->face_count == expect, "%s: %llu faces, brute force %llu", name, (unsigned long long)vm->face_count,
               (unsigned long long)expect);
    BK_EXPECT(vm->scene.tri_count == vm->first_quad_tri + 2 * vm->quad_count);
    int bad = 0;
    for (uint32_t q = 0; q < vm->quad_count && bad < 5; ++q) {
        const bk_vox_quad *Q = &vm->quads[q];
        /* winding normal of both triangles along the direction */
        for (int t = 0; t < 2; ++t) {
            const uint32_t *f = vm->scene.tri_v + 3 * ((size_t)vm->first_quad_tri + 2 * q + t);
            const float    *a = vm->scene.positions + 3 * (size_t)f[0], *b = vm->scene.positions + 3 * (size_t)f[1],
                        *c = vm->scene.positions + 3 * (size_t)f[2];
            double e1[3] = { b[0] - a[0], b[1] - a[1], b[2] - a[2] }, e2[3] = { c[0] - a[0], c[1] - a[1], c[2] - a[2] };
            double n[3] = { e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                            e1[0] * e2[1] - e1[1] * e2[0] };
            double dot = n[0] * D[Q->dir][0] + n[1] * D[Q->dir][1] + n[2] * D[Q->dir][2];
            double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (!(dot > 0.999 * len && fabs(len - (double)Q->w * Q->h) < 1e-9)) {
                fprintf(stderr, "%s: quad %u triangle %d: winding normal (%g %g %g) for direction %d\n", name, q, t,
                        n[0], n[1], n[2], Q->dir);
                bk_test_failures++;
                bad++;
            }
            BK_EXPECT(vm->scene.tri_material[vm->first_quad_tri + 2 * q + t] == Q->material);
        }
        /* every face: inside this instance's voxel of this colour, outside empty */
        for (int j = 0; j < Q->h; ++j)
            for (int i = 0; i < Q->w; ++i) {
                double cen[3];
                for (int r = 0; r < 3; ++r) cen[r] = Q->o[r] + Q->du[r] * (i + 0.5) + Q->dv[r] * (j + 0.5);
                int32_t in[3], out[3];
                for (int r = 0; r < 3; ++r) {
                    in[r] = (int32_t)floor(cen[r] - 0.5 * D[Q->dir][r]);
                    out[r] = (int32_t)floor(cen[r] + 0.5 * D[Q->dir][r]);
                }
                uint8_t col;
                int32_t who = world_at(&W, in, &col), other = world_at(&W, out, NULL);
                if (who != (int32_t)Q->instance || col != Q->colour || other != -1) {
                    fprintf(stderr,
                            "%s: quad %u face (%d,%d): inside instance %d colour %u (want %u, %u), outside %d\n", name,
                            q, i, j, who, col, Q->instance, Q->colour, other);
                    bk_test_failures++;
                    bad++;
                    i = Q->w;
                    j = Q->h;
                }
            }
    }
    free(W.inst);
    free(W.colour);
    return expect;
}

static bk_voxmesh build(const char *name, const bk_scene *s)
{
    bk_voxmesh vm;
    char       err[256];
    int        rc = bk_voxmesh_build(s, &vm, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s: %s", name, err);
    return vm;
}

/* ---- cases --------------------------------------------------------------------------------- */

static void test_single(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t v[4] = { 0, 0, 0, 7 };
    bk_test_add_instance(&s, bk_test_add_model(&s, 1, 1, 1, v, 1), ID, 5, -3, 2);
    bk_voxmesh vm = build("single", &s);
    BK_EXPECT(vm.quad_count == 6);
    BK_EXPECT(vm.face_count == 6);
    for (uint32_t q = 0; q < vm.quad_count; ++q) {
        BK_EXPECT(vm.quads[q].dir == q);
        BK_EXPECT(vm.quads[q].material == 7);
    }
    check_surface("single", &s, &vm);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

static void test_bar(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t v[8] = { 0, 0, 0, 3, 1, 0, 0, 3 };
    bk_test_add_instance(&s, bk_test_add_model(&s, 2, 1, 1, v, 2), ID, 0, 0, 0);
    bk_voxmesh vm = build("bar", &s);
    BK_EXPECT(vm.quad_count == 6);
    BK_EXPECT(vm.face_count == 10);
    check_surface("bar", &s, &vm);
    bk_voxmesh_free(&vm);
    /* a colour boundary splits the four long sides */
    s.vox_models[0].xyzi[7] = 4;
    vm = build("bar2", &s);
    BK_EXPECT(vm.quad_count == 10);
    BK_EXPECT(vm.face_count == 10);
    check_surface("bar2", &s, &vm);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

static void test_touching(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t  v[4] = { 0, 0, 0, 1 };
    uint32_t m = bk_test_add_model(&s, 1, 1, 1, v, 1);
    bk_test_add_instance(&s, m, ID, 0, 0, 0);
    bk_test_add_instance(&s, m, ID, 1, 0, 0);
    bk_voxmesh vm = build("touching", &s);
    BK_EXPECT(vm.quad_count == 10); /* per instance: faces are not merged across instances */
    BK_EXPECT(vm.face_count == 10);
    BK_EXPECT(vm.hidden_faces == 2);
    check_surface("touching", &s, &vm);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

static void test_mirrored(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    /* an L of three voxels, two colours */
    uint8_t             v[12] = { 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 2 };
    uint32_t            m = bk_test_add_model(&s, 2, 2, 1, v, 3);
    static const int8_t MX[9] = { -1, 0, 0, 0, 1, 0, 0, 0, 1 }, SW[9] = { 0, 1, 0, 1, 0, 0, 0, 0, 1 };
    bk_test_add_instance(&s, m, MX, 0, 0, 0);
    bk_test_add_instance(&s, m, SW, 10, 0, 0);
    bk_voxmesh vm = build("mirrored", &s);
    check_surface("mirrored", &s, &vm);
    BK_EXPECT(vm.face_count == 2 * 14);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

static uint32_t rng(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*st >> 33);
}

/* Random models under every signed permutation, overlapping and touching. */
static void test_random(void)
{
    uint64_t st = 12345;
    for (int round = 0; round < 6; ++round) {
        bk_scene s;
        memset(&s, 0, sizeof s);
        static uint8_t occ[64 * 64 * 64];
        memset(occ, 0, sizeof occ);
        for (int mi = 0; mi < 3; ++mi) {
            uint32_t sz[3] = { 1 + rng(&st) % 7, 1 + rng(&st) % 7, 1 + rng(&st) % 7 };
            uint8_t *xyzi = malloc(4 * sz[0] * sz[1] * sz[2]);
            uint32_t n = 0;
            for (uint32_t z = 0; z < sz[2]; ++z)
                for (uint32_t y = 0; y < sz[1]; ++y)
                    for (uint32_t x = 0; x < sz[0]; ++x)
                        if (rng(&st) % 100 < 55) {
                            uint8_t *p = xyzi + 4 * n++;
                            p[0] = (uint8_t)x;
                            p[1] = (uint8_t)y;
                            p[2] = (uint8_t)z;
                            p[3] = (uint8_t)(1 + rng(&st) % 2);
                        }
            bk_test_add_model(&s, sz[0], sz[1], sz[2], xyzi, n);
            s.vox_models[mi].material_base = 256u * (uint32_t)mi;
            free(xyzi);
        }
        for (int k = 0; k < 48; ++k) {
            /* rotation byte: column choice (6 permutations) and signs (8) */
            static const int perm[6][2] = { { 0, 1 }, { 0, 2 }, { 1, 0 }, { 1, 2 }, { 2, 0 }, { 2, 1 } };
            uint8_t          rot = (uint8_t)(perm[k % 6][0] | perm[k % 6][1] << 2 | (k / 6) << 4);
            int8_t           m[9];
            BK_EXPECT(bk_vox_rot_matrix(rot, m));
            /* instances may overlap in their boxes, not in their voxels (two voxels in one cell
             * keep both their faces; brute force here counts a cell once) */
            for (int tries = 0; tries < 100; ++tries) {
                bk_test_add_instance(&s, rng(&st) % 3, m, (int32_t)(rng(&st) % 24) - 12, (int32_t)(rng(&st) % 24) - 12,
                                     (int32_t)(rng(&st) % 12) - 6);
                uint32_t            i = s.vox_instance_count - 1;
                const bk_vox_model *md = &s.vox_models[s.vox_instances[i].model];
                int                 clash = 0;
                for (uint32_t v = 0; v < md->voxel_count && !clash; ++v) {
                    int32_t c[3];
                    world_cell_of(&s, i, md->xyzi + 4 * v, c);
                    clash = occ[(c[0] + 32) + 64 * ((c[1] + 32) + 64 * (c[2] + 32))];
                }
                if (clash) {
                    s.vox_instance_count--;
                    continue;
                }
                for (uint32_t v = 0; v < md->voxel_count; ++v) {
                    int32_t c[3];
                    world_cell_of(&s, i, md->xyzi + 4 * v, c);
                    occ[(c[0] + 32) + 64 * ((c[1] + 32) + 64 * (c[2] + 32))] = 1;
                }
                break;
            }
        }
        char name[32];
        snprintf(name, sizeof name, "random %d", round);
        bk_voxmesh vm = build(name, &s);
        uint64_t   f = check_surface(name, &s, &vm);
        BK_EXPECT(f > 0);
        BK_EXPECT(vm.hidden_faces > 0);
        /* determinism */
        bk_voxmesh vm2 = build(name, &s);
        BK_EXPECT(vm2.quad_count == vm.quad_count && !memcmp(vm2.quads, vm.quads, sizeof(bk_vox_quad) * vm.quad_count));
        bk_voxmesh_free(&vm2);
        bk_voxmesh_free(&vm);
        bk_scene_free(&s);
    }
}


/* ---- instances sharing cells ---------------------------------------------------------------- */

/* Brute force that lets instances share cells: a face of instance i is visible when no instance
 * fills the cell outside it (i itself cannot: the face is visible in i's model). Checks the face
 * count and every quad face (inside: its instance's voxel of its colour; outside: no instance). */
static void check_shared(const char *name, const bk_scene *s, const bk_voxmesh *vm)
{
    int32_t lo[3], n[3];
    for (int r = 0; r < 3; ++r) {
        int32_t a = INT32_MAX, b = INT32_MIN;
        for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
            if (s->vox_instances[i].lo[r] < a) a = s->vox_instances[i].lo[r];
            if (s->vox_instances[i].hi[r] > b) b = s->vox_instances[i].hi[r];
        }
        lo[r] = a - 1;
        n[r] = b - a + 2;
    }
    size_t    N = (size_t)n[0] * n[1] * n[2];
    uint32_t *count = calloc(N, sizeof(uint32_t)); /* instances filling the cell */
    /* per model a dense colour grid (a cell listed twice counts once, its last colour) */
    uint8_t **grid = calloc(s->vox_model_count, sizeof(uint8_t *));
    for (uint32_t mi = 0; mi < s->vox_model_count; ++mi) {
        const bk_vox_model *m = &s->vox_models[mi];
        grid[mi] = calloc((size_t)m->size[0] * m->size[1] * m->size[2], 1);
        for (uint32_t v = 0; v < m->voxel_count; ++v) {
            const uint8_t *p = m->xyzi + 4 * v;
            grid[mi][p[0] + m->size[0] * (p[1] + m->size[1] * p[2])] = p[3];
        }
    }
#define CELL(c) ((size_t)((c)[0] - lo[0]) + n[0] * ((size_t)((c)[1] - lo[1]) + n[1] * (size_t)((c)[2] - lo[2])))
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_model *m = &s->vox_models[s->vox_instances[i].model];
        const uint8_t      *g = grid[s->vox_instances[i].model];
        for (uint32_t z = 0; z < m->size[2]; ++z)
            for (uint32_t y = 0; y < m->size[1]; ++y)
                for (uint32_t x = 0; x < m->size[0]; ++x) {
                    if (!g[x + m->size[0] * (y + m->size[1] * z)]) continue;
                    uint8_t p[3] = { (uint8_t)x, (uint8_t)y, (uint8_t)z };
                    int32_t c[3];
                    world_cell_of(s, i, p, c);
                    count[CELL(c)]++;
                }
    }
    static const int D[6][3] = { { 1, 0, 0 }, { -1, 0, 0 }, { 0, 1, 0 }, { 0, -1, 0 }, { 0, 0, 1 }, { 0, 0, -1 } };
    uint64_t         expect = 0;
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_model *m = &s->vox_models[s->vox_instances[i].model];
        const uint8_t      *g = grid[s->vox_instances[i].model];
        for (uint32_t z = 0; z < m->size[2]; ++z)
            for (uint32_t y = 0; y < m->size[1]; ++y)
                for (uint32_t x = 0; x < m->size[0]; ++x) {
                    if (!g[x + m->size[0] * (y + m->size[1] * z)]) continue;
                    uint8_t p[3] = { (uint8_t)x, (uint8_t)y, (uint8_t)z };
                    int32_t c[3];
                    world_cell_of(s, i, p, c);
                    for (int d = 0; d < 6; ++d) {
                        int32_t e[3] = { c[0] + D[d][0], c[1] + D[d][1], c[2] + D[d][2] };
                        expect += count[CELL(e)] == 0;
                    }
                }
    }
    BK_EXPECTF(vm->face_count == expect, "%s: %llu faces, brute force %llu", name, (unsigned long long)vm->face_count,
               (unsigned long long)expect);
    int bad = 0;
    for (uint32_t q = 0; q < vm->quad_count && bad < 5; ++q) {
        const bk_vox_quad     *Q = &vm->quads[q];
        const bk_vox_instance *in = &s->vox_instances[Q->instance];
        const bk_vox_model    *m = &s->vox_models[in->model];
        int32_t                T[3];
        bk_vox_instance_offset(in, m->size, T);
        for (int j = 0; j < Q->h; ++j)
            for (int i = 0; i < Q->w; ++i) {
                int32_t cin[3], cout[3], p[3] = { 0, 0, 0 };
                for (int r = 0; r < 3; ++r) {
                    double cen = Q->o[r] + Q->du[r] * (i + 0.5) + Q->dv[r] * (j + 0.5);
                    cin[r] = (int32_t)floor(cen - 0.5 * D[Q->dir][r]);
                    cout[r] = (int32_t)floor(cen + 0.5 * D[Q->dir][r]);
                }
                /* the model cell of cin in Q's instance: invert world = M p + T per row */
                int inside = 1;
                for (int r = 0; r < 3; ++r)
                    for (int k = 0; k < 3; ++k)
                        if (in->m[3 * r + k]) p[k] = in->m[3 * r + k] > 0 ? cin[r] - T[r] : T[r] - cin[r] - 1;
                for (int k = 0; k < 3; ++k) inside = inside && p[k] >= 0 && p[k] < (int32_t)m->size[k];
                uint8_t col = inside ? grid[in->model][p[0] + m->size[0] * (p[1] + m->size[1] * p[2])] : 0;
                if (col != Q->colour || count[CELL(cout)] != 0) {
                    fprintf(stderr, "%s: quad %u face (%d,%d): colour %u inside (want %u), %u instances outside\n",
                            name, q, i, j, col, Q->colour, count[CELL(cout)]);
                    bk_test_failures++;
                    bad++;
                    i = Q->w;
                    j = Q->h;
                }
            }
    }
#undef CELL
    for (uint32_t mi = 0; mi < s->vox_model_count; ++mi) free(grid[mi]);
    free(grid);
    free(count);
}

/* n copies of one 1-voxel model in one cell (issue 33: the face-hiding test compared every pair):
 * each copy keeps its 6 faces, as a lone voxel does, in instance order. Returns hide_steps. */
static uint64_t coincident(uint32_t n, int32_t x, int32_t y, int32_t z)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t  v[4] = { 0, 0, 0, 5 };
    uint32_t m = bk_test_add_model(&s, 1, 1, 1, v, 1);
    bk_test_add_instance(&s, m, ID, x, y, z);
    bk_voxmesh one = build("coincident 1", &s);
    for (uint32_t i = 1; i < n; ++i) bk_test_add_instance(&s, m, ID, x, y, z);
    char name[48];
    snprintf(name, sizeof name, "coincident %u at (%d,%d,%d)", n, x, y, z);
    bk_voxmesh vm = build(name, &s);
    BK_EXPECTF(vm.quad_count == 6 * n && vm.face_count == 6ull * n && vm.hidden_faces == 0,
               "%s: %u quads, %llu faces, %llu hidden", name, vm.quad_count, (unsigned long long)vm.face_count,
               (unsigned long long)vm.hidden_faces);
    int bad = 0;
    for (uint32_t q = 0; q < vm.quad_count && q < 6 * n && !bad; ++q) {
        bk_vox_quad want = one.quads[q % 6];
        want.instance = q / 6;
        bad = memcmp(&want, &vm.quads[q], sizeof want) != 0;
        BK_EXPECTF(!bad, "%s: quad %u differs from the lone voxel's", name, q);
    }
    uint64_t steps = vm.hide_steps;
    bk_voxmesh_free(&one);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
    return steps;
}

/* The face-hiding work grows linearly with instances that share cells, whatever they are: n
 * copies of one voxel (in one hash cell, and across a corner of 8), and n different small models
 * under random rotations all overlapping one place (checked against brute force). */
static void test_coincident(void)
{
    uint64_t a = coincident(2000, 5, 5, 5), b = coincident(4000, 5, 5, 5), c = coincident(4000, 0, 0, 0);
    printf("coincident: hide_steps %llu for 2000, %llu for 4000, %llu for 4000 at a corner\n", (unsigned long long)a,
           (unsigned long long)b, (unsigned long long)c);
    BK_EXPECTF(a <= 64 * 2000ull && b <= 64 * 4000ull && c <= 64 * 4000ull,
               "hide_steps %llu, %llu, %llu: more than 64 per instance", (unsigned long long)a, (unsigned long long)b,
               (unsigned long long)c);
    BK_EXPECTF(b <= 2 * a + 64, "hide_steps %llu for 4000 instances, %llu for 2000: faster than linear",
               (unsigned long long)b, (unsigned long long)a);
    uint64_t st = 99;
    uint64_t steps[2], vox[2];
    for (int round = 0; round < 2; ++round) {
        uint32_t n = round ? 3000 : 1500;
        bk_scene s;
        memset(&s, 0, sizeof s);
        vox[round] = 0;
        for (uint32_t i = 0; i < n; ++i) {
            uint32_t sz[3]; /* one rng call per statement: the same scene from every compiler */
            for (int r = 0; r < 3; ++r) sz[r] = 1 + rng(&st) % 4;
            uint8_t  xyzi[4 * 64];
            uint32_t k = 0;
            for (uint32_t z = 0; z < sz[2]; ++z)
                for (uint32_t y = 0; y < sz[1]; ++y)
                    for (uint32_t x = 0; x < sz[0]; ++x)
                        if (rng(&st) % 100 < 30) {
                            uint8_t *p = xyzi + 4 * k++;
                            p[0] = (uint8_t)x;
                            p[1] = (uint8_t)y;
                            p[2] = (uint8_t)z;
                            p[3] = (uint8_t)(1 + rng(&st) % 3);
                        }
            uint32_t mi = bk_test_add_model(&s, sz[0], sz[1], sz[2], xyzi, k);
            uint8_t  rots[48];
            bk_test_rot_bytes(rots);
            int8_t m[9];
            bk_vox_rot_matrix(rots[rng(&st) % 48], m);
            /* spread over 12^3 voxels around a hash cell's corner: every box overlaps many */
            int32_t t[3];
            for (int r = 0; r < 3; ++r) t[r] = 10 + (int32_t)(rng(&st) % 12);
            bk_test_add_instance(&s, mi, m, t[0], t[1], t[2]);
            vox[round] += k;
        }
        char name[32];
        snprintf(name, sizeof name, "overlapping %u", n);
        bk_voxmesh vm = build(name, &s);
        check_shared(name, &s, &vm);
        BK_EXPECT(vm.hidden_faces > 0 && vm.quad_count > 0);
        setenv("BK_THREADS", "1", 1);
        bk_voxmesh v1 = build(name, &s);
        unsetenv("BK_THREADS");
        BK_EXPECT(v1.quad_count == vm.quad_count && !memcmp(v1.quads, vm.quads, sizeof(bk_vox_quad) * vm.quad_count));
        BK_EXPECT(v1.hide_steps == vm.hide_steps);
        steps[round] = vm.hide_steps;
        printf("%s: %llu voxels, %u quads, %llu hidden faces, hide_steps %llu\n", name, (unsigned long long)vox[round],
               vm.quad_count, (unsigned long long)vm.hidden_faces, (unsigned long long)vm.hide_steps);
        bk_voxmesh_free(&v1);
        bk_voxmesh_free(&vm);
        bk_scene_free(&s);
    }
    /* per instance at most its box's hash cells (27 here, grown by one) and per voxel a bit set
     * and its faces' lookups */
    for (int round = 0; round < 2; ++round)
        BK_EXPECTF(steps[round] <= 8 * vox[round] + 64 * (round ? 3000ull : 1500ull),
                   "overlapping: hide_steps %llu for %llu voxels", (unsigned long long)steps[round],
                   (unsigned long long)vox[round]);
}

/* ---- atlas: one rectangular chart per quad --------------------------------------------------- */

static int atlas_for(const bk_voxmesh *vm, int n, int size, int pages_auto, bk_atlas *at, char *err, size_t err_size)
{
    bk_atlas_rect *r = malloc(sizeof(bk_atlas_rect) * (vm->quad_count + 1));
    for (uint32_t q = 0; q < vm->quad_count; ++q) {
        r[q].w = vm->quads[q].w * (uint32_t)n;
        r[q].h = vm->quads[q].h * (uint32_t)n;
        r[q].group = vm->quads[q].instance;
    }
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = size;
    o.rects = r;
    o.rect_count = vm->quad_count;
    o.rect_first_tri = vm->first_quad_tri;
    o.rect_texels_per_unit = (float)n;
    o.pages_auto = pages_auto;
    o.scene_path = "test";
    int rc = bk_atlas_build(&vm->scene, &o, at, err, err_size);
    free(r);
    return rc;
}

/* Texels: exactly n^2 per visible face, each on its face; charts apart by the padding; pages
 * numbered page * width * height + y * width + x. */
static void check_texels(const char *name, const bk_voxmesh *vm, const bk_atlas *at, int n)
{
    bk_texel *tx;
    uint32_t  ntx;
    uint8_t  *cov;
    char      err[256];
    BK_EXPECTF(bk_atlas_rasterize(&vm->scene, at, &tx, &ntx, &cov, err, sizeof err) == 0, "%s: %s", name, err);
    BK_EXPECTF(ntx == vm->face_count * (uint64_t)n * n, "%s: %u texels for %llu faces at %d per side", name, ntx,
               (unsigned long long)vm->face_count, n);
    size_t WH = (size_t)at->width * at->height;
    /* per quad face: count its texels */
    uint64_t *first = malloc(sizeof(uint64_t) * (vm->quad_count + 1));
    uint64_t  f = 0;
    for (uint32_t q = 0; q < vm->quad_count; ++q) {
        first[q] = f;
        f += (uint64_t)vm->quads[q].w * vm->quads[q].h;
    }
    uint32_t *per_face = calloc(f + 1, sizeof(uint32_t));
    int       bad = 0;
    for (uint32_t i = 0; i < ntx && bad < 5; ++i) {
        uint32_t t = tx[i].tri;
        if (t < vm->first_quad_tri) continue;
        uint32_t           q = (t - vm->first_quad_tri) / 2;
        const bk_vox_quad *Q = &vm->quads[q];
        double             d[3] = { tx[i].px - Q->o[0], tx[i].py - Q->o[1], tx[i].pz - Q->o[2] };
        double             a = d[0] * Q->du[0] + d[1] * Q->du[1] + d[2] * Q->du[2],
               b = d[0] * Q->dv[0] + d[1] * Q->dv[1] + d[2] * Q->dv[2];
        int fa = (int)floor(a), fb = (int)floor(b);
        /* the texel centre of sub-square (i, j) of an n x n face sits at (i + 0.5) / n */
        double sa = (a - fa) * n - 0.5, sb = (b - fb) * n - 0.5;
        if (fa < 0 || fb < 0 || fa >= Q->w || fb >= Q->h || fabs(sa - floor(sa + 0.5)) > 1e-3 ||
            fabs(sb - floor(sb + 0.5)) > 1e-3) {
            fprintf(stderr, "%s: texel %u at (%g, %g) of quad %u (%ux%u) is not a sub-square centre\n", name, i, a, b,
                    q, Q->w, Q->h);
            bk_test_failures++;
            bad++;
            continue;
        }
        per_face[first[q] + (uint64_t)fb * Q->w + fa]++;
        uint32_t page = at->tri_page ? at->tri_page[t] : 0;
        if (tx[i].pixel / WH != page) {
            fprintf(stderr, "%s: texel %u pixel %u not on page %u\n", name, i, tx[i].pixel, page);
            bk_test_failures++;
            bad++;
        }
        double nn = tx[i].nx * (Q->dir == 0   ? 1
                                : Q->dir == 1 ? -1
                                              : 0) +
                    tx[i].ny * (Q->dir == 2   ? 1
                                : Q->dir == 3 ? -1
                                              : 0) +
                    tx[i].nz * (Q->dir == 4   ? 1
                                : Q->dir == 5 ? -1
                                              : 0);
        if (nn < 0.999) {
            fprintf(stderr, "%s: texel %u normal against direction %d\n", name, i, Q->dir);
            bk_test_failures++;
            bad++;
        }
    }
    for (uint64_t k = 0; k < f && bad < 10; ++k)
        if (per_face[k] != (uint32_t)(n * n)) {
            fprintf(stderr, "%s: face %llu has %u texels\n", name, (unsigned long long)k, per_face[k]);
            bk_test_failures++;
            bad++;
        }
    /* charts apart: no texel of one chart within padding of another's (chart ids, page by page) */
    size_t    NP = BK_ATLAS_PIXELS(at);
    uint32_t *ids = malloc(sizeof(uint32_t) * NP);
    bk_atlas_chart_ids(at, ids);
    int pad = 2, close = 0;
    for (int p = 0; p < at->page_count; ++p)
        for (int y = 0; y < at->height; ++y)
            for (int x = 0; x < at->width; ++x) {
                uint32_t c = ids[p * WH + (size_t)y * at->width + x];
                if (c == BK_NONE) continue;
                for (int dy = -pad; dy <= pad; ++dy)
                    for (int dx = -pad; dx <= pad; ++dx) {
                        int X = x + dx, Y = y + dy;
                        if (X < 0 || Y < 0 || X >= at->width || Y >= at->height) continue;
                        uint32_t c2 = ids[p * WH + (size_t)Y * at->width + X];
                        if (c2 != BK_NONE && c2 != c) close++;
                    }
            }
    BK_EXPECTF(close == 0, "%s: %d texel pairs of different charts closer than the padding", name, close);
    /* coverage agrees with the texels */
    uint64_t ncov = 0;
    for (size_t i = 0; i < NP; ++i) ncov += cov[i];
    BK_EXPECT(ncov == ntx);
    BK_EXPECTF(at->covered == ntx, "%s: atlas says %llu texels covered, raster made %u", name,
               (unsigned long long)at->covered, ntx);
    free(ids);
    free(per_face);
    free(first);
    free(tx);
    free(cov);
}

static void test_atlas(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t             v[12] = { 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 2 };
    uint32_t            m = bk_test_add_model(&s, 2, 2, 1, v, 3);
    static const int8_t MX[9] = { -1, 0, 0, 0, 1, 0, 0, 0, 1 };
    bk_test_add_instance(&s, m, ID, 0, 0, 0);
    bk_test_add_instance(&s, m, MX, 1, 3, 0);
    bk_test_add_instance(&s, m, ID, 2, 0, 0); /* touches the first */
    bk_voxmesh vm = build("atlas", &s);
    char       err[256];
    for (int n = 1; n <= 3; ++n) {
        bk_atlas at;
        BK_EXPECTF(atlas_for(&vm, n, 64, 0, &at, err, sizeof err) == 0, "%s", err);
        BK_EXPECT(at.page_count == 1 && at.width == 64 && at.chart_count == vm.quad_count);
        check_texels("atlas", &vm, &at, n);
        bk_atlas_free(&at);
    }
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

/* Pages: a scene that needs several pages of 64 x 64; one page refuses with the count. */
static void test_pages(void)
{
    uint64_t st = 99;
    bk_scene s;
    memset(&s, 0, sizeof s);
    uint8_t *xyzi = malloc(4 * 4 * 4 * 4);
    uint32_t nv = 0;
    for (int z = 0; z < 4; ++z)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x)
                if (rng(&st) % 100 < 60) {
                    uint8_t *p = xyzi + 4 * nv++;
                    p[0] = (uint8_t)x;
                    p[1] = (uint8_t)y;
                    p[2] = (uint8_t)z;
                    p[3] = (uint8_t)(1 + rng(&st) % 3);
                }
    uint32_t m = bk_test_add_model(&s, 4, 4, 4, xyzi, nv);
    free(xyzi);
    for (int i = 0; i < 40; ++i) {
        int8_t mm[9];
        bk_vox_rot_matrix((uint8_t)(0x04 | (i % 8) << 4), mm);
        bk_test_add_instance(&s, m, mm, 6 * i, 0, 0);
    }
    bk_voxmesh vm = build("pages", &s);
    bk_atlas   at;
    char       err[256];
    BK_EXPECT(atlas_for(&vm, 2, 64, 0, &at, err, sizeof err) != 0);
    unsigned need = 0;
    BK_EXPECTF(strstr(err, "needs ") &&
                   sscanf(strstr(err, "needs "), "needs %u pages of 64x64 at 2 texels per voxel; use --pages auto",
                          &need) == 1 &&
                   need > 2 && strstr(err, "use --pages auto or a larger --size"),
               "message: %s", err);
    if (atlas_for(&vm, 2, 64, 1, &at, err, sizeof err)) {
        BK_EXPECTF(0, "%s", err);
        return;
    }
    BK_EXPECTF(at.page_count == (int)need, "%d pages, the refusal said %u", at.page_count, need);
    BK_EXPECT(at.tri_page != NULL);
    /* instances whole on one page, pages in instance order */
    for (uint32_t q = 1; q < vm.quad_count; ++q) {
        uint32_t t = vm.first_quad_tri + 2 * q, tp = t - 2;
        if (vm.quads[q].instance == vm.quads[q - 1].instance) BK_EXPECT(at.tri_page[t] == at.tri_page[tp]);
        else BK_EXPECT(at.tri_page[t] >= at.tri_page[tp]);
    }
    check_texels("pages", &vm, &at, 2);
    bk_atlas_free(&at);
    /* instances larger than a page: refused on one page (naming --pages auto); with --pages auto
     * each spreads over consecutive pages, quads in order, every texel where it belongs */
    BK_EXPECT(atlas_for(&vm, 2, 16, 0, &at, err, sizeof err) != 0);
    BK_EXPECTF(strstr(err, "voxel instance 0 do not fit one 16x16 page") != NULL && strstr(err, "use --pages auto"),
               "message: %s", err);
    if (atlas_for(&vm, 2, 16, 1, &at, err, sizeof err) == 0) {
        uint32_t spread = 0, p0 = at.tri_page[vm.first_quad_tri];
        for (uint32_t q = 1; q < vm.quad_count; ++q) {
            uint32_t t = vm.first_quad_tri + 2 * q, tp = t - 2;
            BK_EXPECT(at.tri_page[t] >= at.tri_page[tp] && at.tri_page[t + 1] == at.tri_page[t]);
            if (vm.quads[q].instance != vm.quads[q - 1].instance) p0 = at.tri_page[t];
            else if (at.tri_page[t] != p0 &&
                     (q + 1 == vm.quad_count || vm.quads[q + 1].instance != vm.quads[q].instance))
                spread++;
        }
        BK_EXPECTF(spread == 40 && at.page_count > (int)need, "%u of 40 instances over several pages, %d pages", spread,
                   at.page_count);
        check_texels("pages spread", &vm, &at, 2);
        bk_atlas_free(&at);
    } else BK_EXPECTF(0, "pages auto at 16x16: %s", err);
    /* a quad larger than a page */
    BK_EXPECT(atlas_for(&vm, 2, 4, 1, &at, err, sizeof err) != 0);
    BK_EXPECTF(strstr(err, "a quad of voxel instance 0 (") && strstr(err, "does not fit one 4x4 page"), "message: %s",
               err);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);

    /* an instance smaller than a page that still does not pack on one: a 5x5x1 plate at 2 texels is
     * two 12x12 padded blocks and four 12x4 (480 texels) against a 22x22 bin (484), where two
     * 12x12 blocks never fit side by side: split when the packing fails, over 2 pages */
    memset(&s, 0, sizeof s);
    uint8_t plate[4 * 25];
    for (int i = 0; i < 25; ++i)
        plate[4 * i] = (uint8_t)(i % 5), plate[4 * i + 1] = (uint8_t)(i / 5), plate[4 * i + 2] = 0,
                  plate[4 * i + 3] = 1;
    static const int8_t id[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
    bk_test_add_instance(&s, bk_test_add_model(&s, 5, 5, 1, plate, 25), id, 0, 0, 0);
    vm = build("plate", &s);
    BK_EXPECT(vm.quad_count == 6);
    BK_EXPECT(atlas_for(&vm, 2, 20, 0, &at, err, sizeof err) != 0 &&
              strstr(err, "voxel instance 0 do not fit one 20x20 page"));
    if (atlas_for(&vm, 2, 20, 1, &at, err, sizeof err) == 0) {
        BK_EXPECTF(at.page_count == 2 && at.tri_page[vm.first_quad_tri] == 0 &&
                       at.tri_page[vm.first_quad_tri + 2 * (vm.quad_count - 1)] == 1,
                   "plate: %d pages", at.page_count);
        check_texels("plate", &vm, &at, 2);
        bk_atlas_free(&at);
    } else BK_EXPECTF(0, "plate, pages auto: %s", err);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}


/* The thread count changes nothing: 400 instances (7 chunks of work), 1 and 5 threads. */
static void test_threads(void)
{
    uint64_t st = 4242;
    bk_scene s;
    memset(&s, 0, sizeof s);
    for (int mi = 0; mi < 4; ++mi) {
        uint32_t sz[3] = { 2 + rng(&st) % 5, 2 + rng(&st) % 5, 2 + rng(&st) % 5 };
        uint8_t *xyzi = malloc(4 * sz[0] * sz[1] * sz[2]);
        uint32_t n = 0;
        for (uint32_t z = 0; z < sz[2]; ++z)
            for (uint32_t y = 0; y < sz[1]; ++y)
                for (uint32_t x = 0; x < sz[0]; ++x)
                    if (rng(&st) % 100 < 70) {
                        uint8_t *p = xyzi + 4 * n++;
                        p[0] = (uint8_t)x;
                        p[1] = (uint8_t)y;
                        p[2] = (uint8_t)z;
                        p[3] = (uint8_t)(1 + rng(&st) % 3);
                    }
        bk_test_add_model(&s, sz[0], sz[1], sz[2], xyzi, n);
        free(xyzi);
    }
    for (int i = 0; i < 400; ++i) {
        int8_t m[9];
        bk_vox_rot_matrix((uint8_t)(0x04 | (rng(&st) % 8) << 4), m);
        bk_test_add_instance(&s, rng(&st) % 4, m, (int32_t)(rng(&st) % 60), (int32_t)(rng(&st) % 60),
                             (int32_t)(rng(&st) % 4));
    }
    setenv("BK_THREADS", "1", 1);
    bk_voxmesh a = build("threads 1", &s);
    setenv("BK_THREADS", "5", 1);
    bk_voxmesh b = build("threads 5", &s);
    unsetenv("BK_THREADS");
    BK_EXPECT(a.quad_count > 1000 && a.quad_count == b.quad_count && a.hidden_faces == b.hidden_faces &&
              a.hidden_faces > 0);
    BK_EXPECT(!memcmp(a.quads, b.quads, sizeof(bk_vox_quad) * a.quad_count));
    BK_EXPECT(a.scene.tri_count == b.scene.tri_count &&
              !memcmp(a.scene.positions, b.scene.positions, sizeof(float) * 3 * a.scene.vertex_count));
    bk_voxmesh_free(&a);
    bk_voxmesh_free(&b);
    bk_scene_free(&s);
}

/* A scene's own triangles come first and keep their numbers. */
static void test_with_triangles(void)
{
    bk_scene s;
    memset(&s, 0, sizeof s);
    s.vertex_count = 3;
    s.positions = malloc(sizeof(float) * 9);
    for (int i = 0; i < 9; ++i) s.positions[i] = (float)(i % 4);
    s.tri_count = 1;
    s.tri_v = malloc(sizeof(uint32_t) * 3);
    s.tri_v[0] = 0;
    s.tri_v[1] = 1;
    s.tri_v[2] = 2;
    uint8_t v[4] = { 0, 0, 0, 1 };
    bk_test_add_instance(&s, bk_test_add_model(&s, 1, 1, 1, v, 1), ID, 0, 0, 0);
    bk_voxmesh vm = build("with triangles", &s);
    BK_EXPECT(vm.first_quad_tri == 1);
    BK_EXPECT(vm.scene.tri_count == 13);
    BK_EXPECT(vm.scene.tri_v[0] == 0 && vm.scene.tri_v[2] == 2 && vm.scene.tri_material[0] == BK_NONE);
    BK_EXPECT(vm.scene.vox_instance_count == 0);
    check_surface("with triangles", &s, &vm);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

/* A large world: 54,000 instances (56 ground tiles of 240 x 240 x 1 and props of 40 models, 21 M
 * instanced voxels) in rows, touching the ground and each other. Timed, not checked against brute
 * force. BK_VOXMESH_BENCH=0 skips it; =atlas also times its atlas (pages of 8192^2, 2 texels per
 * voxel). */
static void bench_world(void)
{
    const char *e = getenv("BK_VOXMESH_BENCH");
    if (e && !strcmp(e, "0")) return;
    uint64_t st = 777;
    bk_scene s;
    memset(&s, 0, sizeof s);
    int nm = 40;
    for (int mi = 0; mi < nm; ++mi) {
        uint32_t sz[3] = { 4 + rng(&st) % 6, 4 + rng(&st) % 6, 6 + rng(&st) % 8 };
        uint8_t *xyzi = malloc(4 * sz[0] * sz[1] * sz[2]);
        uint32_t n = 0;
        double   cx = sz[0] / 2.0, cy = sz[1] / 2.0;
        for (uint32_t z = 0; z < sz[2]; ++z)
            for (uint32_t y = 0; y < sz[1]; ++y)
                for (uint32_t x = 0; x < sz[0]; ++x) {
                    double dx = (x + 0.5 - cx) / cx, dy = (y + 0.5 - cy) / cy;
                    if (dx * dx + dy * dy > 1.0 || rng(&st) % 100 < 3) continue; /* a cylinder with holes */
                    uint8_t *p = xyzi + 4 * n++;
                    p[0] = (uint8_t)x;
                    p[1] = (uint8_t)y;
                    p[2] = (uint8_t)z;
                    p[3] = (uint8_t)(1 + (z / 3) % 4 + (rng(&st) % 20 == 0));
                }
        bk_test_add_model(&s, sz[0], sz[1], sz[2], xyzi, n);
        free(xyzi);
    }
    uint64_t vox = 0;
    /* ground tiles of 240 x 240 x 1 under the props */
    {
        uint8_t *xyzi = malloc(4 * 240 * 240);
        for (uint32_t i = 0; i < 240 * 240; ++i) {
            xyzi[4 * i] = (uint8_t)(i % 240);
            xyzi[4 * i + 1] = (uint8_t)(i / 240);
            xyzi[4 * i + 2] = 0;
            xyzi[4 * i + 3] = 9;
        }
        uint32_t g = bk_test_add_model(&s, 240, 240, 1, xyzi, 240 * 240);
        free(xyzi);
        for (int ty = 0; ty < 7; ++ty)
            for (int tx = 0; tx < 8; ++tx) {
                bk_test_add_instance(&s, g, ID, tx * 240 + 120, ty * 240 + 120, -1);
                vox += 240 * 240;
            }
    }
    for (int k = 0; s.vox_instance_count < 54000; ++k) {
        uint32_t mi = rng(&st) % (uint32_t)nm;
        int8_t   m[9];
        bk_vox_rot_matrix((uint8_t)((rng(&st) % 2 ? 0x04 : 0x01) | (rng(&st) % 2) << 4 | (rng(&st) % 2) << 5), m);
        int32_t gx = (k % 240) * 7 + 4, gy = (k / 240) * 7 + 4;
        bk_test_add_instance(&s, mi, m, gx, gy, 0);
        /* stand it on z = 0 */
        bk_vox_instance *in = &s.vox_instances[s.vox_instance_count - 1];
        in->t[2] -= in->lo[2];
        bk_vox_instance_place(in, s.vox_models[mi].size);
        vox += s.vox_models[mi].voxel_count;
    }
    double     t0 = bk_time_now();
    bk_voxmesh vm = build("world", &s);
    double     t = bk_time_now() - t0;
    printf("world: %u instances, %llu voxels -> %u quads, %llu faces (%llu hidden by other instances) in %.3f s\n",
           s.vox_instance_count, (unsigned long long)vox, vm.quad_count, (unsigned long long)vm.face_count,
           (unsigned long long)vm.hidden_faces, t);
    BK_EXPECT(vm.voxel_count == vox);
    bk_atlas at;
    char     err[256];
    t0 = bk_time_now();
    int rc = e && !strcmp(e, "atlas") ? atlas_for(&vm, 2, 8192, 1, &at, err, sizeof err) : -2;
    if (rc == -2) {
        bk_voxmesh_free(&vm);
        bk_scene_free(&s);
        return;
    }
    BK_EXPECTF(rc == 0, "%s", err);
    if (rc == 0) {
        printf("world atlas: %d pages of %dx%d at 2 texels per voxel, utilisation %.1f%%, in %.3f s\n", at.page_count,
               at.width, at.height, 100.0 * at.utilisation, bk_time_now() - t0);
        bk_atlas_free(&at);
    }
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
}

int main(void)
{
    test_single();
    test_bar();
    test_touching();
    test_mirrored();
    test_random();
    test_coincident();
    test_with_triangles();
    test_threads();
    test_atlas();
    test_pages();
    bench_world();
    BK_TEST_DONE();
}
