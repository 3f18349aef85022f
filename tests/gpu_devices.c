/* gpu_devices.c - a bake on two GPUs is the same file as a bake on one (--devices).
 *
 * Sponza (the demo scene when the corpus is absent) baked by the program with --devices 0, then
 * with --devices 0,1: the HDR lightmap (the bake's floats, exactly) and the PNG are the same
 * bytes, and the stats show both devices took texel blocks, as many texels in all as the atlas
 * holds. On a machine with one GPU the same is checked with --devices 0,0 (two bakers sharing it:
 * the multi-device path, not the speed-up) and the test then skips (77): two GPUs are what it is
 * for. Skips (77) without a usable GPU.
 */
#include "bk_test.h"
#include "bk_test_run.h"
#include "backend.h"
#include "registry.h"

#include <sys/stat.h>

/* The number after "key": in the stats JSON from p on, or -1 */
static double json_num(const char *p, const char *key)
{
    const char *q = p ? strstr(p, key) : NULL;
    return q ? atof(q + strlen(key)) : -1.0;
}

/* Bakes with --devices devs into DIR/devs.{hdr,png}; checks it against the one-device files
 * ref_hdr/ref_png when given (else keeps its own there). */
static void bake(const char *dir, const char *scene, const char *devs, int ndev, char **ref_hdr, size_t *ref_hn,
                 char **ref_png, size_t *ref_pn)
{
    char args[4096], err[8192], hdr[512], png[512], js[512];
    snprintf(hdr, sizeof hdr, "%s/%s.hdr", dir, devs);
    snprintf(png, sizeof png, "%s/%s.png", dir, devs);
    snprintf(js, sizeof js, "%s/%s.json", dir, devs);
    snprintf(args, sizeof args,
             "'%s' -o '%s' --size 1024 --spp 16 --bounces 2 --sun 0.3,1,0.2,3,2.9,2.7,0.5 --sky 0.4,0.5,0.7 "
             "--backend cuda --devices %s --stats '%s' --quiet",
             scene, hdr, devs, js);
    int rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "--devices %s: exit %d: %s", devs, rc, err);
    /* the PNG without the denoiser: its exposure then runs on the GPU primitives right after the
     * fetch from the last device (which left the thread on that device: an illegal address on
     * two H200s until bk_gpu_ops_use) */
    snprintf(args, sizeof args,
             "'%s' -o '%s' --size 1024 --spp 16 --bounces 2 --sun 0.3,1,0.2,3,2.9,2.7,0.5 --sky 0.4,0.5,0.7 "
             "--backend cuda --devices %s --denoise off --quiet",
             scene, png, devs);
    rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "--devices %s (PNG): exit %d: %s", devs, rc, err);
    size_t hn = 0, pn = 0, jn = 0;
    char  *h = bk_test_slurp(hdr, &hn), *p = bk_test_slurp(png, &pn), *j = bk_test_slurp(js, &jn);
    if (j) j = realloc(j, jn + 1), j[jn] = 0;
    BK_EXPECTF(h && p && j && hn > 0 && pn > 0, "--devices %s: no output", devs);
    /* the devices' shares */
    const char *d = j ? strstr(j, "\"devices\": [") : NULL;
    double      texels = json_num(j, "\"texels\": "), sum = 0;
    int         seen = 0;
    for (const char *q = d; q && (q = strstr(q, "{ \"device\": ")) != NULL; ++q) {
        double t = json_num(q, "\"texels\": "), b = json_num(q, "\"blocks\": ");
        printf("  --devices %s: device %d: %.0f texels in %.0f blocks, %.0f rays, busy %.3f s\n", devs, seen, t, b,
               json_num(q, "\"rays\": "), json_num(q, "\"busy_seconds\": "));
        BK_EXPECTF(t > 0 && b > 0, "--devices %s: device %d took no block", devs, seen);
        sum += t;
        seen++;
    }
    BK_EXPECTF(seen == ndev && sum == texels, "--devices %s: %d devices in the stats, %.0f of %.0f texels", devs, seen,
               sum, texels);
    if (!*ref_hdr) {
        *ref_hdr = h;
        *ref_hn = hn;
        *ref_png = p;
        *ref_pn = pn;
    } else {
        BK_EXPECTF(h && hn == *ref_hn && !memcmp(h, *ref_hdr, hn), "--devices %s: the HDR differs from one device's",
                   devs);
        BK_EXPECTF(p && pn == *ref_pn && !memcmp(p, *ref_png, pn), "--devices %s: the PNG differs from one device's",
                   devs);
        free(h);
        free(p);
    }
    free(j);
    remove(hdr);
    remove(png);
    remove(js);
}

int main(void)
{
    int n = bk_backend_device_count("cuda");
    if (n < 1) BK_TEST_SKIP("no CUDA device");
    char dir[256], scene[1024];
    snprintf(dir, sizeof dir, "/tmp/bk_gpu_devices_%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        return 1;
    }
    snprintf(scene, sizeof scene, "%s/sponza-dabrovic/sponza.obj", bk_test_scenes_dir());
    if (access(scene, R_OK) != 0) {
        fprintf(stderr, "note: %s absent: the demo scene instead\n", scene);
        snprintf(scene, sizeof scene, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    }
    char  *hdr = NULL, *png = NULL;
    size_t hn = 0, pn = 0;
    bake(dir, scene, "0", 1, &hdr, &hn, &png, &pn);
    bake(dir, scene, n >= 2 ? "0,1" : "0,0", 2, &hdr, &hn, &png, &pn);
    free(hdr);
    free(png);
    char f[512];
    snprintf(f, sizeof f, "%s/stderr.txt", dir);
    remove(f);
    rmdir(dir);
    if (!bk_test_failures && n < 2)
        BK_TEST_SKIP("one GPU: --devices 0,0 gave the same files as --devices 0; two GPUs are needed for 0,1");
    BK_TEST_DONE();
}
