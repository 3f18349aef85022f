/* bk_test_golden.h - the golden-image check of tests/cpu_golden*.c: the real program bakes a scene
 * of scenes/ on the CPU and the PNG is compared with one of assets/ (the Embree tutorials' way):
 * RMSE at most 1.0 (8-bit units) and at most 0.5 % of texels off by more than 3.
 * tools/update_golden.sh regenerates the references with the same commands; a test run never does.
 * Include once per test, after bk_test.h. */
#ifndef BK_TEST_GOLDEN_H
#define BK_TEST_GOLDEN_H

#include "bk_test_image.h"

#include "bk_test_stb_image.h"

static inline float *golden_load(const char *path, int *w, int *h)
{
    int            c;
    unsigned char *px = stbi_load(path, w, h, &c, 3);
    if (!px) return NULL;
    float *f = malloc(sizeof(float) * 3 * (size_t)*w * (size_t)*h);
    for (size_t i = 0; i < 3 * (size_t)*w * (size_t)*h; ++i) f[i] = px[i];
    stbi_image_free(px);
    return f;
}

/* Whether assets/`golden_name` exists (a test of a reference not made yet skips). */
static inline int golden_exists(const char *golden_name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/assets/%s", BK_SOURCE_DIR, golden_name);
    FILE *f = fopen(path, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Bakes scenes/`scene` with `args` and compares with assets/`golden_name`: the lightmap, or with
 * preview the --preview image of the bake. */
static inline void golden_run(const char *scene, const char *args, const char *golden_name, int preview)
{
    char out[256], lm[256], cmd[4096], ref_path[1024];
    snprintf(out, sizeof out, "/tmp/bk_golden_%d.png", (int)getpid());
    snprintf(lm, sizeof lm, "/tmp/bk_golden_lm_%d.png", (int)getpid());
    /* the same commands as tools/update_golden.sh */
    if (preview)
        snprintf(cmd, sizeof cmd, "'%s' '%s/scenes/%s' -o '%s' --preview '%s' %s --quiet", BK_BAKER, BK_SOURCE_DIR,
                 scene, lm, out, args);
    else snprintf(cmd, sizeof cmd, "'%s' '%s/scenes/%s' -o '%s' %s --quiet", BK_BAKER, BK_SOURCE_DIR, scene, out, args);
    snprintf(ref_path, sizeof ref_path, "%s/assets/%s", BK_SOURCE_DIR, golden_name);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    int    w, h, rw, rh;
    float *got = golden_load(out, &w, &h), *ref = golden_load(ref_path, &rw, &rh);
    BK_EXPECTF(got, "cannot read the baked %s", out);
    BK_EXPECTF(ref, "cannot read %s (tools/update_golden.sh makes it)", ref_path);
    if (got && ref) {
        BK_EXPECTF(w == rw && h == rh, "%s: size %dx%d, reference %dx%d", golden_name, w, h, rw, rh);
        if (w == rw && h == rh) {
            bk_image_diff d = bk_image_compare(ref, got, (uint64_t)w * h, NULL, 3.0);
            printf("golden %s: RMSE %.3f, max %.0f, %llu of %llu pixels off by > 3\n", golden_name, d.rmse, d.max_abs,
                   (unsigned long long)d.differ, (unsigned long long)d.count);
            BK_EXPECTF(d.rmse <= 1.0, "%s: RMSE %.3f against the golden image", golden_name, d.rmse);
            BK_EXPECTF(d.differ * 200 <= d.count, "%s: %llu pixels differ by more than 3", golden_name,
                       (unsigned long long)d.differ);
        }
    }
    free(got);
    free(ref);
    remove(out);
    remove(lm);
}

static inline void golden(const char *scene, const char *args, const char *golden_name)
{
    golden_run(scene, args, golden_name, 0);
}

#endif /* BK_TEST_GOLDEN_H */
