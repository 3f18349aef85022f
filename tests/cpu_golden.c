/* cpu_golden.c - the real program bakes the demo scene on the CPU and the result is compared
 * with assets/cornell_golden.png, and the voxel demo scene with assets/cornell_vox_golden.png (the
 * Embree tutorials' way): RMSE at most 1.0 (8-bit units) and
 * at most 0.5 % of texels off by more than 3. tools/update_golden.sh regenerates the reference;
 * a test run never does. */
#include "bk_test.h"
#include "bk_test_image.h"

#include "bk_test_stb_image.h"

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

/* Bakes `scene` with `args` and compares with assets/`golden`. */
static void golden(const char *scene, const char *args, const char *golden_name)
{
    char out[256], cmd[2048], ref_path[1024];
    snprintf(out, sizeof out, "/tmp/bk_golden_%d.png", (int)getpid());
    /* the same commands as tools/update_golden.sh */
    snprintf(cmd, sizeof cmd, "'%s' '%s/scenes/%s' -o '%s' %s --quiet", BK_BAKER, BK_SOURCE_DIR, scene, out, args);
    snprintf(ref_path, sizeof ref_path, "%s/assets/%s", BK_SOURCE_DIR, golden_name);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    int    w, h, rw, rh;
    float *got = load(out, &w, &h), *ref = load(ref_path, &rw, &rh);
    BK_EXPECTF(got, "cannot read the baked %s", out);
    BK_EXPECTF(ref, "cannot read %s (tools/update_golden.sh makes it)", ref_path);
    if (got && ref) {
        BK_EXPECTF(w == rw && h == rh, "%s: size %dx%d, reference %dx%d", scene, w, h, rw, rh);
        if (w == rw && h == rh) {
            bk_image_diff d = bk_image_compare(ref, got, (uint64_t)w * h, NULL, 3.0);
            printf("golden %s: RMSE %.3f, max %.0f, %llu of %llu texels off by > 3\n", scene, d.rmse, d.max_abs,
                   (unsigned long long)d.differ, (unsigned long long)d.count);
            BK_EXPECTF(d.rmse <= 1.0, "%s: RMSE %.3f against the golden image", scene, d.rmse);
            BK_EXPECTF(d.differ * 200 <= d.count, "%s: %llu texels differ by more than 3", scene,
                       (unsigned long long)d.differ);
        }
    }
    free(got);
    free(ref);
    remove(out);
}

int main(void)
{
    /* the light transport alone (the denoiser off), and the map as users get it (denoised) */
    golden("cornell.obj", "--backend cpu --size 128 --spp 64 --seed 1 --denoise off", "cornell_golden.png");
    golden("cornell.obj", "--backend cpu --size 128 --spp 16 --seed 1", "cornell_denoised_golden.png");
    /* voxels traced natively, one rotated and one mirrored instance, an emissive panel */
    golden("cornell.vox", "--backend cpu --size 192 --spp 32 --seed 1 --texels-per-voxel 1 --denoise off",
           "cornell_vox_golden.png");
    BK_TEST_DONE();
}
