/* unit_build_threads.c - both builders give the same bytes whatever the pool's thread count.
 *
 * For a seeded random soup of 200,000 triangles, a scene whose centroids all coincide (object-median
 * splits), a voxel scene, and corpus scenes when present (sponza, sibenik, dragon_vrip_res2):
 * builds the BVH and the KD-tree with bk_pool_set_threads(1), then 2 and 16, and compares the node,
 * reference and leaf-record arrays with memcmp, and the build info (time aside); the KD-tree also
 * against one built with the plain sorted sweep in small nodes (bk_build_opts.kd_sweep). One thread
 * builds the KD-tree's top tree depth-first in one piece, 2 and 16 threads level by level down to
 * a size that follows the thread count, then in depth-first parts: the comparison covers both
 * ways, and the coincident scene a top node that stays a leaf. The BVH's subtree tasks are cut
 * at a size that follows the thread count too (the soup: 16,384 primitives with 1 and 2 threads,
 * 4,096 with 16). Building is
 * where thread-count dependence would come from (chunked binning, subtree tasks spliced back), so
 * nothing here traces rays; cpu_traverse and unit_kdtree check the trees themselves. The wide BVH
 * the CPU backend collapses from a BVH of triangles (src/accel/bvh_wide.c) is compared the same way.
 */
#include "accel_build.h"
#include "bvh_wide.h"
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "pool.h"
#include "loader.h"
#include "scene.h"

#include <stdint.h>

static int same_info(const bk_build_info *a, const bk_build_info *b)
{
    return a->sah_cost == b->sah_cost && a->nodes == b->nodes && a->leaves == b->leaves && a->depth == b->depth &&
           a->refs == b->refs && a->max_leaf == b->max_leaf && a->bytes == b->bytes;
}

/* 0 when a and b hold the same bytes; else names the first array that differs. */
static const char *accel_diff(const bk_accel *a, const bk_accel *b)
{
    if (a->type != b->type) return "type";
    if (a->bvh_node_count != b->bvh_node_count) return "BVH node count";
    if (a->bvh_node_count && memcmp(a->bvh_nodes, b->bvh_nodes, sizeof(bk_bvh_node) * a->bvh_node_count))
        return "BVH nodes";
    if (a->kd_node_count != b->kd_node_count) return "KD node count";
    if (a->kd_node_count && memcmp(a->kd_nodes, b->kd_nodes, sizeof(bk_kd_node) * a->kd_node_count)) return "KD nodes";
    if (a->kd_ref_count != b->kd_ref_count) return "KD reference count";
    if (a->kd_ref_count && memcmp(a->kd_refs, b->kd_refs, sizeof(uint32_t) * a->kd_ref_count)) return "KD references";
    if (a->tri_count != b->tri_count) return "record count";
    if (a->tri_count && memcmp(a->tris, b->tris, sizeof(bk_f4) * 3 * (size_t)a->tri_count)) return "leaf records";
    if (memcmp(&a->lo, &b->lo, sizeof a->lo) || memcmp(&a->hi, &b->hi, sizeof a->hi)) return "bounds";
    if (!same_info(&a->info, &b->info)) return "build info";
    bk_accel_view va = bk_accel_get_view(a), vb = bk_accel_get_view(b);
    if (va.type == BK_ACCEL_BVH && va.prim == BK_PRIM_TRI) {
        bk_wbvh wa, wb;
        char    err[256];
        if (bk_wbvh_build(&va, &wa, err, sizeof err) || bk_wbvh_build(&vb, &wb, err, sizeof err))
            return "wide BVH build";
        const char *d = NULL;
        if (wa.node_count != wb.node_count || wa.depth != wb.depth) d = "wide node count";
        else if (memcmp(wa.nodes, wb.nodes, sizeof(bk_wbvh_node) * wa.node_count)) d = "wide nodes";
        else if (wa.tri4_count != wb.tri4_count || memcmp(wa.tri4, wb.tri4, sizeof(bk_wbvh_tri4) * wa.tri4_count))
            d = "wide leaf blocks";
        bk_wbvh_free(&wa);
        bk_wbvh_free(&wb);
        if (d) return d;
    }
    return NULL;
}

static void check_scene(const char *name, const bk_scene *s)
{
    static const int threads[] = { 2, 16 };
    bk_build_opts    o = bk_build_opts_default();
    for (int type = 0; type < 2; ++type) {
        bk_accel ref, a;
        char     err[256] = "";
        bk_pool_set_threads(1);
        if (bk_accel_build(s, type, &o, &ref, err, sizeof err)) {
            BK_EXPECTF(0, "%s: %s build failed: %s", name, bk_accel_type_name(type), err);
            continue;
        }
        for (int i = 0; i < 2; ++i) {
            bk_pool_set_threads(threads[i]);
            if (bk_accel_build(s, type, &o, &a, err, sizeof err)) {
                BK_EXPECTF(0, "%s: %s build with %d threads failed: %s", name, bk_accel_type_name(type), threads[i],
                           err);
                continue;
            }
            const char *d = accel_diff(&ref, &a);
            BK_EXPECTF(!d, "%s: %s built with %d threads differs from 1 thread in its %s", name,
                       bk_accel_type_name(type), threads[i], d);
            bk_accel_free(&a);
        }
        if (type == BK_ACCEL_KDTREE) { /* and with the plain sorted sweep of small nodes (the reference) */
            bk_build_opts q = o;
            q.kd_sweep = 1;
            if (bk_accel_build(s, type, &q, &a, err, sizeof err)) {
                BK_EXPECTF(0, "%s: kdtree build with the sorted sweep failed: %s", name, err);
            } else {
                const char *d = accel_diff(&ref, &a);
                BK_EXPECTF(!d, "%s: kdtree built with the sorted sweep differs in its %s", name, d);
                bk_accel_free(&a);
            }
        }
        printf("%-18s %-6s %u nodes, SAH %.3f: compared with 2 and 16 threads%s\n", name, bk_accel_type_name(type),
               ref.info.nodes, ref.info.sah_cost, type == BK_ACCEL_KDTREE ? " and the sorted sweep" : "");
        bk_accel_free(&ref);
    }
    bk_pool_set_threads(0);
}

static void free_test_scene(bk_scene *s)
{
    free(s->positions);
    free(s->tri_v);
    memset(s, 0, sizeof *s);
}

static void check_corpus(const char *rel)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", bk_test_scenes_dir(), rel);
    if (access(path, R_OK) != 0) {
        printf("%-18s skipped: %s not found\n", rel, path);
        return;
    }
    bk_scene s;
    char     err[512];
    if (bk_scene_load(path, &s, err, sizeof err)) {
        BK_EXPECTF(0, "%s: %s", path, err);
        return;
    }
    check_scene(rel, &s);
    bk_scene_free(&s);
}

int main(void)
{
    bk_scene s;

    /* Large enough for chunked top levels (16,384 primitives a chunk) and many subtree tasks. */
    bk_test_scene_soup(&s, 200000, 0.01f, 1234);
    check_scene("soup 200k", &s);
    free_test_scene(&s);

    /* 20,000 copies of one triangle: no SAH split exists, object-median splits all the way down. */
    bk_test_scene_alloc(&s, 20000);
    {
        const float a[3] = { 0, 0, 0 }, b[3] = { 1, 0, 0 }, c[3] = { 0, 1, 0 };
        for (uint32_t t = 0; t < s.tri_count; ++t) bk_test_set_tri(&s, t, a, b, c);
    }
    check_scene("coincident 20k", &s);
    free_test_scene(&s);

    check_corpus("vox/monu1.vox");
    check_corpus("sponza-dabrovic/sponza.obj");
    check_corpus("sibenik/sibenik.obj");
    check_corpus("dragon/dragon_vrip_res2.obj");
    bk_pool_shutdown();
    BK_TEST_DONE();
}
