/* unit_lists.c - the generated lists (kernels/bk_traverse.h, backend.h) and the backend registry
 * (src/registry/registry.h): every traversal's index and fields agree, the names of the stack strategies
 * and counter modes are exactly the strings --stack and --counters take, and the registry makes
 * and refuses backends with the messages the factory has always given. */
#include "bk_test.h"
#include "accel.h"
#include "backend.h"
#include "registry.h"

#include <string.h>

static void check_traversals(void)
{
    int seen[BK_TRAVERSAL_COUNT] = { 0 };
    BK_EXPECT(BK_TRAVERSAL_COUNT > 0);
    for (int i = 0; i < BK_TRAVERSAL_COUNT; ++i) {
        bk_traversal_variant v = bk_traversal_get(i);
        int                  j = bk_traversal_index(v.accel, v.stack_mode, v.any_hit, v.prim);
        BK_EXPECTF(j == i, "traversal %d: its fields index %d", i, j);
        BK_EXPECTF(bk_traversal_index(v.accel, v.stack_mode, v.any_hit ? 7 : 0, v.prim) == i, "traversal %d: any 7", i);
        if (j >= 0 && j < BK_TRAVERSAL_COUNT) seen[j]++;
    }
    for (int i = 0; i < BK_TRAVERSAL_COUNT; ++i) BK_EXPECTF(seen[i] == 1, "traversal %d indexed %d times", i, seen[i]);
    /* the product: every accel x strategy x query, voxels on the binary layouts only */
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m)
        for (int q = 0; q < 2; ++q) {
            BK_EXPECT(bk_traversal_index(BK_ACCEL_BVH, m, q, BK_PRIM_VOX) >= 0);
            BK_EXPECT(bk_traversal_index(BK_ACCEL_KDTREE, m, q, BK_PRIM_TRI) >= 0);
            BK_EXPECT(bk_traversal_index(BK_ACCEL_CWBVH, m, q, BK_PRIM_TRI) >= 0);
            BK_EXPECT(bk_traversal_index(BK_ACCEL_CWBVH, m, q, BK_PRIM_VOX) < 0);
        }
    BK_EXPECT(bk_traversal_index(BK_ACCEL_BVH, BK_STACK_MODE_COUNT, 0, BK_PRIM_TRI) < 0);
    BK_EXPECT(bk_traversal_get(-1).accel == -1 && bk_traversal_get(BK_TRAVERSAL_COUNT).stack_mode == -1);
}

/* The --accel words (BK_ACCEL_WORDS): what the parsers take and print, and the bench's labels. */
static void check_accel_words(void)
{
    char buf[128];
    int  type = -1, layout = -1;
    BK_EXPECT(!strcmp(bk_accel_words(buf, sizeof buf, "|", "|", 0), "bvh|bvh2|cwbvh|kdtree"));
    BK_EXPECT(!strcmp(bk_accel_words(buf, sizeof buf, ", ", " or ", 1), "bvh or kdtree"));
    BK_EXPECT(bk_accel_word_parse("cwbvh", 0, &type, &layout) == 0 && type == BK_ACCEL_BVH && layout == 8);
    BK_EXPECT(bk_accel_word_parse("kd", 0, &type, &layout) == 0 && type == BK_ACCEL_KDTREE && layout == 0);
    BK_EXPECT(bk_accel_word_parse("kd", 1, &type, &layout) < 0);   /* an alias is no type name */
    BK_EXPECT(bk_accel_word_parse("bvh2", 1, &type, &layout) < 0); /* a layout is no type */
    BK_EXPECT(bk_accel_word_parse("octree", 0, &type, &layout) < 0);
    BK_EXPECT(!strcmp(bk_accel_type_name(BK_ACCEL_KDTREE), "kdtree") &&
              !strcmp(bk_accel_type_name(BK_ACCEL_BVH), "bvh"));
    BK_EXPECT(!strcmp(bk_accel_layout_name(BK_ACCEL_BVH, 2), "bvh2") &&
              !strcmp(bk_accel_layout_name(BK_ACCEL_BVH, 4), "?"));
}

static void check_names(void)
{
    static const char *const stacks[] = { "global", "short", "spill" };
    static const char *const counters[] = { "thread", "warp", "block" };
    BK_EXPECT(BK_STACK_MODE_COUNT == 3 && BK_COUNTERS_COUNT == 3);
    for (int m = 0; m < 3; ++m) {
        BK_EXPECTF(!strcmp(bk_stack_mode_name(m), stacks[m]), "stack %d named %s", m, bk_stack_mode_name(m));
        BK_EXPECT(bk_stack_mode_parse(stacks[m]) == m);
        BK_EXPECT(bk_stack_mode_about(m)[0] != 0);
        BK_EXPECTF(!strcmp(bk_counters_name(m), counters[m]), "counters %d named %s", m, bk_counters_name(m));
        BK_EXPECT(bk_counters_parse(counters[m]) == m);
        BK_EXPECT(bk_counters_about(m)[0] != 0);
    }
    BK_EXPECT(BK_STACK_GLOBAL == 0 && BK_STACK_SHORT == 1 && BK_STACK_SPILL == 2);
    BK_EXPECT(BK_COUNTERS_THREAD == 0 && BK_COUNTERS_WARP == 1 && BK_COUNTERS_BLOCK == 2);
    BK_EXPECT(!bk_stack_sized(BK_STACK_GLOBAL) && bk_stack_sized(BK_STACK_SHORT) && bk_stack_sized(BK_STACK_SPILL));
    BK_EXPECT(!bk_stack_spills(BK_STACK_GLOBAL) && !bk_stack_spills(BK_STACK_SHORT) && bk_stack_spills(BK_STACK_SPILL));
    BK_EXPECT(bk_stack_cap(BK_STACK_GLOBAL, 2) == BK_STACK_ENTRIES && bk_stack_cap(BK_STACK_SHORT, 2) == 2);
    BK_EXPECT(bk_stack_shared_bytes(BK_STACK_GLOBAL, 8, 3, 128) == 0);
    BK_EXPECT(bk_stack_shared_bytes(BK_STACK_SPILL, 8, 3, 128) == 12288);
    BK_EXPECT(!strcmp(bk_stack_mode_name(-1), "?") && !strcmp(bk_counters_name(3), "?"));
    BK_EXPECT(bk_stack_mode_parse("Global") == -1 && bk_counters_parse("") == -1);
    char buf[64];
    BK_EXPECT(!strcmp(bk_stack_mode_names(buf, sizeof buf, ", ", " or "), "global, short or spill"));
    BK_EXPECT(!strcmp(bk_stack_mode_names(buf, sizeof buf, "|", "|"), "global|short|spill"));
    BK_EXPECT(!strcmp(bk_counters_names(buf, sizeof buf, ", ", " or "), "thread, warp or block"));
    BK_EXPECT(!strcmp(bk_stack_mode_names(buf, 10, "|", "|"), "global")); /* what fits, whole names */
}

static void check_registry(void)
{
    char msg[512], names[128];
    BK_EXPECT(!strcmp(bk_backend_names(names, sizeof names, ", ", " or "), "cpu, cuda or auto"));
    BK_EXPECT(!strcmp(bk_backend_names(names, sizeof names, "|", "|"), "cpu|cuda|auto"));
    BK_EXPECT(!strcmp(bk_backend_names(names, 10, "|", "|"), "cpu|cuda"));
    BK_EXPECT(bk_backend_known("cpu") && bk_backend_known("cuda") && bk_backend_known("auto"));
    BK_EXPECT(!bk_backend_known("gpu") && !bk_backend_known("CPU"));
    BK_EXPECT(bk_backend_reg_find("auto") == NULL && bk_backend_reg_find("cpu") == bk_backend_reg_get(0));
    BK_EXPECT(bk_backend_starts_device("cpu") == 0 && bk_backend_starts_device("cuda") == 1);
    BK_EXPECT(bk_backend_starts_device("auto") == 1);
    BK_EXPECT(bk_backend_device_count("cpu") == 1 && bk_backend_device_count("auto") >= 1);

    BK_EXPECT(bk_backend_init("gpu", msg, sizeof msg) == NULL);
    BK_EXPECTF(!strcmp(msg, "unknown backend 'gpu' (expected cpu, cuda or auto)"), "unknown: '%s'", msg);
    bk_backend *be = bk_backend_init("cpu", msg, sizeof msg);
    BK_EXPECT(be && !strcmp(be->i->name(be), "cpu") && msg[0] == 0);
    bk_backend_free_last(be);
    be = bk_backend_init("auto", msg, sizeof msg);
    BK_EXPECTF(be && !strncmp(msg, "auto backend: ", 14), "auto: '%s'", msg);
    bk_backend_free(be);
    const int dev1[] = { 1 }, dev01[] = { 0, 1 };
    BK_EXPECT(bk_backend_init_devices("cpu", dev1, 1, msg, sizeof msg) == NULL);
    BK_EXPECTF(!strcmp(msg, "--devices: the CPU backend has one device, 0 (all its cores)"), "cpu devices: '%s'", msg);
    be = bk_backend_init_devices("cpu", dev01, 0, msg, sizeof msg); /* no devices named: the default */
    BK_EXPECT(be != NULL);
    bk_backend_free(be);
    if (bk_backend_device_count("cuda") == 0) {
        BK_EXPECT(bk_backend_init_devices("cuda", dev01, 2, msg, sizeof msg) == NULL);
        BK_EXPECTF(!strcmp(msg, "--backend cuda: no usable CUDA device"), "cuda devices: '%s'", msg);
        BK_EXPECT(bk_backend_init_devices("auto", dev01, 2, msg, sizeof msg) == NULL);
        BK_EXPECTF(!strcmp(msg, "--devices: the CPU backend has one device, 0 (all its cores)"), "auto devices: '%s'",
                   msg);
    }
#if !BK_HAVE_CUDA
    static const char why[] = "baker was built without CUDA (nvcc was not found at configure time)";
    char              want[512];
    BK_EXPECT(bk_backend_init("cuda", msg, sizeof msg) == NULL);
    snprintf(want, sizeof want, "--backend cuda: %s", why);
    BK_EXPECTF(!strcmp(msg, want), "cuda: '%s'", msg);
    be = bk_backend_init("auto", msg, sizeof msg);
    snprintf(want, sizeof want, "auto backend: no usable GPU (%s); using the CPU", why);
    BK_EXPECTF(be && !strcmp(msg, want), "auto: '%s'", msg);
    bk_backend_free(be);
#endif
}

int main(void)
{
    check_traversals();
    check_names();
    check_accel_words();
    check_registry();
    BK_TEST_DONE();
}
