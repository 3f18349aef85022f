/* cpu_exr.c - the baker program with -o LIGHTMAP.exr on the demo scene (scenes/cornell.obj).
 *
 * With tinyexr (BK_HAVE_EXR, from CMake): the bake writes a 32x32 .exr that bk_image_read reads
 * back, within half-float precision of the same bake written as .hdr (baker diff --json: PSNR and
 * bias; .hdr's RGBE step is the coarser one); `--mesh-out x.glb` with an .exr lightmap names it
 * in the extras only (by file name in the asset's extras: a uri would leave the mesh's folder;
 * the asset's lightmap_encoding says OpenEXR), no occlusion texture, one image: the lit page;
 * `baker diff` reads .exr and writes an .exr difference image; --pages is not needed for these.
 * Without tinyexr: `-o x.exr` is refused before any work with "built without EXR support:
 * install libtinyexr-dev and rebuild", exit status non-zero, an existing x.exr left as it was and
 * no other file made; `baker diff a.exr b.exr` says the same. The other half is skipped (said).
 */
#include "bk_test.h"
#include "bk_test_gltf.h"
#include "image.h"

#include <sys/stat.h>
#include <sys/wait.h>

static char tmpdir[256];

static int run(char *buf, size_t n, const char *args, const char *out)
{
    char cmd[8192], errf[512];
    snprintf(errf, sizeof errf, "%s/stderr.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", BK_BAKER, args, out ? out : "/dev/null", errf);
    int st = system(cmd);
    buf[0] = 0;
    FILE *f = fopen(errf, "r");
    if (f) {
        size_t k = fread(buf, 1, n - 1, f);
        buf[k] = 0;
        fclose(f);
    }
    remove(errf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 1 << 16);
    if (b) b[fread(b, 1, (1 << 16) - 1, f)] = 0;
    fclose(f);
    return b;
}

static const char *demo = BK_SOURCE_DIR "/scenes/cornell.obj";

#if BK_HAVE_EXR
static void test_with(void)
{
    char args[4096], err[4096], p[600], q[600];
    snprintf(p, sizeof p, "%s/mesh", tmpdir);
    mkdir(p, 0755);
    snprintf(args, sizeof args,
             "'%s' -o '%s/lm.exr' --mesh-out '%s/mesh/c.glb' --backend cpu --size 32 --spp 2 --quiet", demo, tmpdir,
             tmpdir);
    BK_EXPECTF(run(err, sizeof err, args, NULL) == 0, "cornell -> .exr: %s", err);
    snprintf(args, sizeof args, "'%s' -o '%s/lm.hdr' --backend cpu --size 32 --spp 2 --quiet", demo, tmpdir);
    BK_EXPECTF(run(err, sizeof err, args, NULL) == 0, "cornell -> .hdr: %s", err);

    snprintf(p, sizeof p, "%s/lm.exr", tmpdir);
    float *rgb = NULL;
    int    w = 0, h = 0;
    BK_EXPECTF(bk_image_read(p, &rgb, &w, &h, err, sizeof err) == 0 && w == 32 && h == 32, "%s", err);
    double sum = 0;
    for (int i = 0; rgb && i < w * h * 3; ++i) sum += rgb[i];
    BK_EXPECTF(sum > 0, "the EXR lightmap is black");
    free(rgb);

    /* the same bake as .hdr: equal within RGBE's step (2^-8 relative) and half's (2^-11) */
    snprintf(args, sizeof args, "diff '%s/lm.hdr' '%s/lm.exr' --json -o '%s/d.exr'", tmpdir, tmpdir, tmpdir);
    snprintf(q, sizeof q, "%s/diff.json", tmpdir);
    BK_EXPECTF(run(err, sizeof err, args, q) == 0, "baker diff: %s", err);
    char    *js = slurp(q);
    bk_json *j = js ? bk_json_parse(js, strlen(js)) : NULL;
    BK_EXPECTF(j, "diff --json output unreadable: %s", js ? js : "(none)");
    if (j) {
        double psnr = bk_json_num(j, "psnr_srgb", 0), bias = bk_json_num(bk_json_get(j, "bias"), "luminance", 1);
        BK_EXPECTF(psnr > 50, "hdr vs exr: sRGB PSNR %.2f dB", psnr);
        BK_EXPECTF(fabs(bias) < 2e-3, "hdr vs exr: luminance bias %g", bias);
    }
    bk_json_free(j);
    free(js);
    snprintf(p, sizeof p, "%s/d.exr", tmpdir);
    BK_EXPECT(exists(p));
    remove(q);

    /* the mesh names the .exr in its extras only */
    snprintf(p, sizeof p, "%s/mesh/c.glb", tmpdir);
    bk_test_gltf g;
    if (bk_test_gltf_load(p, &g) == 0) {
        const bk_json *mats = bk_json_get(g.json, "materials");
        BK_EXPECT(bk_test_count(mats) > 0);
        for (size_t i = 0; i < bk_test_count(mats); ++i) {
            const bk_json *m = &mats->items[i];
            const bk_json *ex = bk_json_get(bk_json_get(m, "extras"), "baker_lightmap");
            /* ../lm.exr would name a folder out of the glTF's: the asset's extras give the file */
            BK_EXPECTF(ex && !bk_json_str(ex, "uri") && !bk_json_get(ex, "image"), "material %zu: baker_lightmap", i);
            BK_EXPECTF(!bk_json_get(m, "occlusionTexture"), "material %zu has an occlusionTexture", i);
        }
        /* the one image: the lit page (albedo x light), which every glTF gets */
        BK_EXPECTF(bk_test_count(bk_json_get(g.json, "images")) == 1, "%zu images: an .exr is no glTF image",
                   bk_test_count(bk_json_get(g.json, "images")));
        const bk_json *l0 = bk_json_at(
            bk_json_get(bk_json_get(bk_json_get(bk_json_get(g.json, "asset"), "extras"), "baker"), "lightmaps"), 0);
        BK_EXPECTF(bk_json_str(l0, "file") && !strcmp(bk_json_str(l0, "file"), "lm.exr"), "the EXR is not named");
        const char *enc =
            bk_json_str(bk_json_get(bk_json_get(bk_json_get(g.json, "asset"), "extras"), "baker"), "lightmap_encoding");
        BK_EXPECTF(enc && strstr(enc, "OpenEXR"), "lightmap_encoding %s", enc ? enc : "missing");
    }
    bk_test_gltf_free(&g);
}
#else
static void test_without(void)
{
    char        args[4096], err[4096], p[600];
    const char *want = "built without EXR support: install libtinyexr-dev and rebuild";
    snprintf(p, sizeof p, "%s/lm.exr", tmpdir);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("an earlier lightmap", f);
        fclose(f);
    }
    snprintf(args, sizeof args, "'%s' -o '%s' --mesh-out '%s/c.glb' --backend cpu --size 32 --spp 1 --quiet", demo, p,
             tmpdir);
    int rc = run(err, sizeof err, args, NULL);
    BK_EXPECTF(rc != 0 && strstr(err, want) && strstr(err, "-o"), "exit %d, message: %s", rc, err);
    char *kept = slurp(p);
    BK_EXPECTF(kept && !strcmp(kept, "an earlier lightmap"), "the existing .exr was changed");
    free(kept);
    snprintf(p, sizeof p, "%s/c.glb", tmpdir);
    BK_EXPECT(!exists(p));
    snprintf(args, sizeof args, "diff '%s/lm.exr' '%s/lm.exr'", tmpdir, tmpdir);
    rc = run(err, sizeof err, args, NULL);
    BK_EXPECTF(rc != 0 && strstr(err, want), "diff: exit %d, message: %s", rc, err);
    snprintf(p, sizeof p, "%s/lm.exr", tmpdir);
    remove(p);
    fprintf(stderr, "EXR bake skipped: built without tinyexr (BK_HAVE_EXR 0)\n");
}
#endif

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_cpu_exr_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
#if BK_HAVE_EXR
    test_with();
#else
    test_without();
#endif
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    BK_TEST_DONE();
}
