/* unit_vox_pack.c - the builders' voxel inputs (src/accel/geom.c), made on the pool: a model's
 * bricks, ranks and colours (bk_vox_pack_build) and its segments and the segment primitives
 * (bk_geom_init), against a serial brute force on random scenes (duplicate voxels included: the
 * last colour of a cell wins), with 1 thread and with 5; both must give the same bytes.
 */
#include "geom.h"
#include "pool.h"
#include "util.h"
#include "bk_test.h"
#include "bk_test_voxels.h"

/* Some models get duplicates of earlier voxels with another colour (room: one per empty cell). */
static void add_duplicates(bk_scene *s)
{
    for (uint32_t m = 0; m < s->vox_model_count; m += 3) {
        bk_vox_model *vm = &s->vox_models[m];
        uint32_t      cells = vm->size[0] * vm->size[1] * vm->size[2], n = vm->voxel_count;
        for (uint32_t k = 0; k < n && vm->voxel_count < cells; k += 2) {
            uint8_t *q = vm->xyzi + 4 * (size_t)vm->voxel_count++;
            memcpy(q, vm->xyzi + 4 * (size_t)k, 4);
            q[3] = (uint8_t)(1 + (q[3] + 77) % 255);
        }
    }
}

/* The pack and the segments of s against a model-by-model brute force. */
static void check_pack(const char *name, const bk_scene *s, const bk_vox_pack *p, const bk_geom *g)
{
    uint32_t brick_next = 0, colour_next = 0, seg_next = 0;
    uint64_t prim = 0;
    BK_EXPECTF(p->model_count == s->vox_model_count, "%s", name);
    for (uint32_t m = 0; m < s->vox_model_count; ++m) {
        const bk_vox_model *vm = &s->vox_models[m];
        uint32_t            nb[3] = { (vm->size[0] + 3) / 4, (vm->size[1] + 3) / 4, (vm->size[2] + 3) / 4 };
        uint32_t            cells = vm->size[0] * vm->size[1] * vm->size[2];
        uint8_t            *grid = calloc(cells, 1);
        for (uint32_t v = 0; v < vm->voxel_count; ++v) {
            const uint8_t *q = vm->xyzi + 4 * (size_t)v;
            grid[q[0] + vm->size[0] * (q[1] + vm->size[1] * q[2])] = q[3];
        }
        const bk_vox_model_rec *r = &p->models[m];
        BK_EXPECTF(r->brick_base == brick_next && r->colour_base == colour_next && g->brick_base[m] == brick_next,
                   "%s: model %u bases", name, m);
        uint32_t rank = 0;
        for (uint32_t bz = 0; bz < nb[2]; ++bz)
            for (uint32_t by = 0; by < nb[1]; ++by)
                for (uint32_t bx = 0; bx < nb[0]; ++bx) {
                    const bk_vox_brick *br = &p->bricks[brick_next++];
                    uint64_t            mask = 0;
                    BK_EXPECTF(br->rank == rank && br->pad == 0, "%s: model %u brick rank", name, m);
                    for (int bit = 0; bit < 64; ++bit) {
                        uint32_t x = 4 * bx + (bit & 3), y = 4 * by + (bit >> 2 & 3), z = 4 * bz + (bit >> 4);
                        if (x >= vm->size[0] || y >= vm->size[1] || z >= vm->size[2]) continue;
                        uint8_t c = grid[x + vm->size[0] * (y + vm->size[1] * z)];
                        if (!c) continue;
                        mask |= 1ull << bit;
                        BK_EXPECTF(p->colours[colour_next + rank] == c, "%s: model %u colour %u", name, m, rank);
                        rank++;
                    }
                    BK_EXPECTF(br->mask_lo == (uint32_t)mask && br->mask_hi == (uint32_t)(mask >> 32),
                               "%s: model %u brick mask", name, m);
                }
        BK_EXPECTF(r->voxel_count == rank, "%s: model %u: %u voxels, expected %u", name, m, r->voxel_count, rank);
        colour_next += rank;
        /* segments: each BK_VOX_SEG^3 block with voxels, in block order, the box of its voxels */
        const uint32_t S = BK_VOX_SEG,
                       ns[3] = { (vm->size[0] + S - 1) / S, (vm->size[1] + S - 1) / S, (vm->size[2] + S - 1) / S };
        BK_EXPECTF(g->mseg_first[m] == seg_next, "%s: model %u first segment", name, m);
        for (uint32_t sz = 0; sz < ns[2]; ++sz)
            for (uint32_t sy = 0; sy < ns[1]; ++sy)
                for (uint32_t sx = 0; sx < ns[0]; ++sx) {
                    uint32_t lo[3] = { 0xFFFF, 0xFFFF, 0xFFFF }, hi[3] = { 0, 0, 0 },
                             c0[3] = { sx * S, sy * S, sz * S };
                    for (uint32_t z = c0[2]; z < c0[2] + S && z < vm->size[2]; ++z)
                        for (uint32_t y = c0[1]; y < c0[1] + S && y < vm->size[1]; ++y)
                            for (uint32_t x = c0[0]; x < c0[0] + S && x < vm->size[0]; ++x) {
                                if (!grid[x + vm->size[0] * (y + vm->size[1] * z)]) continue;
                                uint32_t c[3] = { x, y, z };
                                for (int k = 0; k < 3; ++k) {
                                    if (c[k] < lo[k]) lo[k] = c[k];
                                    if (c[k] + 1 > hi[k]) hi[k] = c[k] + 1;
                                }
                            }
                    if (!hi[0]) continue;
                    const bk_vox_mseg *ms = &g->msegs[seg_next++];
                    for (int k = 0; k < 3; ++k)
                        BK_EXPECTF(ms->lo[k] == lo[k] && ms->hi[k] == hi[k], "%s: model %u segment %u", name, m,
                                   seg_next - 1);
                }
        free(grid);
    }
    BK_EXPECTF(g->mseg_first[s->vox_model_count] == seg_next, "%s: segments", name);
    BK_EXPECTF(p->brick_count == brick_next && p->colour_count == colour_next, "%s: totals", name);
    uint64_t base = s->tri_count;
    for (uint32_t j = 0; j < s->vox_instance_count; ++j) {
        uint32_t m = s->vox_instances[j].model;
        BK_EXPECTF(p->inst[2 * j] == base && p->inst[2 * j + 1] == m, "%s: instance %u", name, j);
        base += 6ull * p->models[m].voxel_count;
        for (uint32_t k = g->mseg_first[m]; k < g->mseg_first[m + 1]; ++k, ++prim)
            BK_EXPECTF(g->prim_inst[prim] == j && g->prim_mseg[prim] == k, "%s: primitive %llu", name,
                       (unsigned long long)prim);
    }
    BK_EXPECTF(g->count == s->tri_count + prim, "%s: %u primitives, expected %llu", name, g->count,
               (unsigned long long)(s->tri_count + prim));
}

static int same_pack(const bk_vox_pack *a, const bk_vox_pack *b, const bk_geom *ga, const bk_geom *gb, uint32_t nm)
{
    return a->brick_count == b->brick_count && a->colour_count == b->colour_count && ga->count == gb->count &&
           !memcmp(a->models, b->models, sizeof *a->models * nm) &&
           !memcmp(a->bricks, b->bricks, sizeof *a->bricks * a->brick_count) &&
           !memcmp(a->colours, b->colours, a->colour_count) &&
           !memcmp(ga->msegs, gb->msegs, sizeof *ga->msegs * ga->mseg_first[nm]) &&
           !memcmp(ga->prim_mseg, gb->prim_mseg, sizeof(uint32_t) * (ga->count - ga->s->tri_count)) &&
           !memcmp(ga->prim_inst, gb->prim_inst, sizeof(uint32_t) * (ga->count - ga->s->tri_count));
}

int main(void)
{
    static const struct {
        uint32_t models, instances;
        int      side;
        float    fill;
    } cases[] = { { 1, 1, 1, 1.0f }, { 7, 40, 9, 0.3f }, { 60, 500, 19, 0.1f }, { 200, 300, 33, 0.02f } };
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        bk_scene s;
        char     name[64], err[256];
        bk_test_vox_scene(&s, cases[c].models, cases[c].instances, cases[c].side, cases[c].fill, 11 + c);
        add_duplicates(&s);
        bk_vox_pack p[2];
        bk_geom     g[2];
        for (int k = 0; k < 2; ++k) {
            bk_pool_set_threads(k ? 5 : 1);
            snprintf(name, sizeof name, "case %u, %d threads", c, k ? 5 : 1);
            BK_EXPECT(bk_vox_pack_build(&s, &p[k], err, sizeof err) == 0);
            BK_EXPECT(bk_geom_init(&g[k], &s, err, sizeof err) == 0);
            check_pack(name, &s, &p[k], &g[k]);
        }
        BK_EXPECTF(same_pack(&p[0], &p[1], &g[0], &g[1], s.vox_model_count), "case %u: 1 and 5 threads differ", c);
        for (int k = 0; k < 2; ++k) {
            bk_vox_pack_free(&p[k]);
            bk_geom_free(&g[k]);
        }
        bk_scene_free(&s);
    }
    bk_pool_set_threads(0);
    BK_TEST_DONE();
}
