/* gpu_view.c - `baker view` traces its camera rays with --backend cuda as with --backend cpu, and
 * shades them on the host: the two images must be the same file, byte for byte (the demo scene
 * with a lightmap baked on the CPU; and, when the corpus is there, sponza inside, with a
 * gradient over the atlas, for every --accel word). Skips (77) without a usable GPU. */
#include "bk_test.h"
#include "bk_test_run.h"
#include "accel.h"
#include "image.h"
#include "registry.h"

#include <sys/stat.h>


/* `baker view ARGS -o X --backend B` for cpu and cuda: the same file. */
static void both(const char *dir, const char *args)
{
    char a[600], b[600], cmd[8192], err[8192];
    snprintf(a, sizeof a, "%s/cpu.png", dir);
    snprintf(b, sizeof b, "%s/cuda.png", dir);
    snprintf(cmd, sizeof cmd, "view %s -o '%s' --backend cpu -q", args, a);
    int rc = bk_test_run_baker(dir, err, sizeof err, cmd);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", cmd, rc, err);
    snprintf(cmd, sizeof cmd, "view %s -o '%s' --backend cuda -q", args, b);
    rc = bk_test_run_baker(dir, err, sizeof err, cmd);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", cmd, rc, err);
    BK_EXPECTF(bk_test_same_file(a, b), "baker view %s: --backend cpu and cuda differ (%s, %s kept)", args, a, b);
    printf("view %s: cpu and cuda the same file\n", args);
}

int main(void)
{
    char        msg[512];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("%s", msg);
    bk_backend_free(gpu);
    char dir[] = "/tmp/bk_gpu_view_XXXXXX", err[8192], args[4096], lm[600], scene[1024];
    BK_EXPECT(mkdtemp(dir) != NULL);
    snprintf(lm, sizeof lm, "%s/lm.png", dir);
    snprintf(scene, sizeof scene, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    snprintf(args, sizeof args, "'%s' -o '%s' --size 128 --spp 16 --backend cpu -q", scene, lm);
    int rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", args, rc, err);
    /* every shown --accel word (accel.h), so a new layout cannot go untested */
#define ACCEL_WORD(w, type, layout, shown) shown ? w : NULL,
    static const char *const accels[] = { BK_ACCEL_WORDS(ACCEL_WORD) };
#undef ACCEL_WORD
    const int naccels = (int)(sizeof accels / sizeof accels[0]);
    for (int k = 0; k < naccels; ++k) {
        if (!accels[k]) continue;
        snprintf(args, sizeof args, "'%s' --size 128 --lightmap '%s' --accel %s", scene, lm, accels[k]);
        both(dir, args);
    }
    snprintf(args, sizeof args, "'%s' --size 128 --lightmap '%s' --show albedo --camera 0,1,3.5,0,1,0,40", scene, lm);
    both(dir, args);

    char sponza[1024];
    snprintf(sponza, sizeof sponza, "%s/sponza-dabrovic/sponza.obj", bk_test_scenes_dir());
    if (access(sponza, R_OK) == 0) {
        /* a gradient over the atlas: each pixel's value follows its hit's barycentrics */
        float *c = malloc(sizeof(float) * 3 * 256 * 256);
        for (int i = 0; i < 256 * 256; ++i) {
            c[3 * i] = (float)(i % 256) / 255.0f;
            c[3 * i + 1] = (float)(i / 256) / 255.0f;
            c[3 * i + 2] = 0.5f;
        }
        BK_EXPECTF(bk_image_write(lm, c, 256, 256, 1.0f, err, sizeof err) == 0, "%s", err);
        free(c);
        for (int k = 0; k < naccels; ++k) {
            if (!accels[k]) continue;
            snprintf(args, sizeof args,
                     "'%s' --size 256 --lightmap '%s' --resolution 640,360 --camera -12,3,0,10,5,0,60 --accel %s",
                     sponza, lm, accels[k]);
            both(dir, args);
        }
    } else {
        printf("corpus scene %s not found: sponza not compared\n", sponza);
    }
    if (!bk_test_failures) {
        char        f[700];
        const char *names[] = { "lm.png", "cpu.png", "cuda.png", "stderr.txt" };
        for (int k = 0; k < naccels; ++k) {
            if (!accels[k]) continue;
            snprintf(f, sizeof f, "%s/%s", dir, names[k]);
            remove(f);
        }
        rmdir(dir);
    }
    BK_TEST_DONE();
}
