/* cpu_view_golden.c - the textured demo scene's preview (`baker --preview`: albedo x lightmap seen
 * from the default camera) against assets/view_demo_golden.png, as tests/cpu_golden.c compares
 * lightmaps: RMSE at most 1.0 (8-bit units), at most 0.5 % of pixels off by more than 3. Skips
 * (77) until the demo scene (DEMO below, written by its generator under tools/) and the golden
 * image (tools/update_golden.sh, the same command) are in the tree. */
#include "bk_test.h"
#include "bk_test_image.h"

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb/stb_image.h>

#define DEMO "scenes/demo.obj"
/* the same options as tools/update_golden.sh's line for it */
#define ARGS "--backend cpu --size 256 --spp 16 --seed 1 --resolution 480,270"

static float *load(const char *path, int *w, int *h)
{
    int            c;
    unsigned char *px = stbi_load(path, w, h, &c, 3);
    if (!px) return NULL;
    float *f = malloc(sizeof(float) * 3 * (size_t)*w * (size_t)*h);
    for (size_t i = 0; i < 3 * (size_t)*w * (size_t)*h; ++i) f[i] = px[i];
    stbi_image_free(px);
    return f;
}

int main(void)
{
    char scene[1024], ref_path[1024], lm[256], out[256], cmd[4096];
    snprintf(scene, sizeof scene, "%s/%s", BK_SOURCE_DIR, DEMO);
    snprintf(ref_path, sizeof ref_path, "%s/assets/view_demo_golden.png", BK_SOURCE_DIR);
    if (access(scene, R_OK) != 0) BK_TEST_SKIP("the textured demo scene %s is not in the tree yet", scene);
    if (access(ref_path, R_OK) != 0) BK_TEST_SKIP("%s not made yet (tools/update_golden.sh)", ref_path);
    snprintf(lm, sizeof lm, "/tmp/bk_view_golden_lm_%d.png", (int)getpid());
    snprintf(out, sizeof out, "/tmp/bk_view_golden_%d.png", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' '%s' -o '%s' --preview '%s' " ARGS " --quiet", BK_BAKER, scene, lm, out);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    int    w, h, rw, rh;
    float *got = load(out, &w, &h), *ref = load(ref_path, &rw, &rh);
    BK_EXPECTF(got && ref, "cannot read %s or %s", out, ref_path);
    if (got && ref) {
        BK_EXPECTF(w == rw && h == rh, "size %dx%d, reference %dx%d", w, h, rw, rh);
        if (w == rw && h == rh) {
            bk_image_diff d = bk_image_compare(ref, got, (uint64_t)w * h, NULL, 3.0);
            printf("view golden: RMSE %.3f, max %.0f, %llu of %llu pixels off by > 3\n", d.rmse, d.max_abs,
                   (unsigned long long)d.differ, (unsigned long long)d.count);
            BK_EXPECTF(d.rmse <= 1.0, "RMSE %.3f against the golden view", d.rmse);
            BK_EXPECTF(d.differ * 200 <= d.count, "%llu pixels differ by more than 3", (unsigned long long)d.differ);
        }
    }
    free(got);
    free(ref);
    remove(lm);
    remove(out);
    BK_TEST_DONE();
}
