/* cpu_fill.c - the baker program on a box standing on a floor (written here, in a temporary
 * folder): the floor texels under the box lie inside geometry and must come out filled from the
 * floor's own valid texels next to the box, not black and not in the box's colours.
 *
 * The box (red, sides reaching 0.05 below the floor, no bottom) covers the middle 2 x 2 of a 4 x 4
 * blue floor, under a white sky with one bounce: valid floor texels next to the box are reddish
 * (light the box reflects), the box's sides bluish (light the floor reflects). Baked on the CPU
 * at 128^2 as .hdr with --mesh-out; the test reads that mesh back with --uv file (the same
 * texels, atlas.h) to know each texel's position. The box's footprint is about 40 texels wide,
 * so its middle lies beyond the dilation's reach (padding + 14 rounds): before hidden texels
 * were filled from their own chart it stayed black.
 */
#include "atlas.h"
#include "bk_test.h"
#include "loader.h"
#include "raster.h"
#include "scene.h"

#include <math.h>
#include <sys/stat.h>

#include "bk_test_stb_image.h"

static const char *OBJ = "mtllib scene.mtl\n"
                         "usemtl floor\n"
                         "v -2 0 -2\nv -2 0 2\nv 2 0 2\nv 2 0 -2\n"
                         "f 1 2 3 4\n"
                         "usemtl box\n"
                         "v -1 1 -1\nv -1 1 1\nv 1 1 1\nv 1 1 -1\n"
                         "f 5 6 7 8\n" /* top, +y */
                         "v -1 -0.05 -1\nv -1 -0.05 1\nv -1 1 1\nv -1 1 -1\n"
                         "f 9 10 11 12\n" /* -x */
                         "v 1 -0.05 -1\nv 1 1 -1\nv 1 1 1\nv 1 -0.05 1\n"
                         "f 13 14 15 16\n" /* +x */
                         "v -1 -0.05 -1\nv -1 1 -1\nv 1 1 -1\nv 1 -0.05 -1\n"
                         "f 17 18 19 20\n" /* -z */
                         "v -1 -0.05 1\nv 1 -0.05 1\nv 1 1 1\nv -1 1 1\n"
                         "f 21 22 23 24\n"; /* +z */
static const char *MTL = "newmtl floor\nKd 0.1 0.1 0.9\nnewmtl box\nKd 0.9 0.1 0.1\n";

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

static float maxf(float a, float b) { return a > b ? a : b; }

int main(void)
{
    char dir[256], obj[512], mtl[512], hdr[512], mesh[512], cmd[4096], err[512];
    snprintf(dir, sizeof dir, "/tmp/bk_cpu_fill_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(obj, sizeof obj, "%s/scene.obj", dir);
    snprintf(mtl, sizeof mtl, "%s/scene.mtl", dir);
    snprintf(hdr, sizeof hdr, "%s/lm.hdr", dir);
    snprintf(mesh, sizeof mesh, "%s/mesh.obj", dir);
    BK_EXPECT(write_file(obj, OBJ) == 0 && write_file(mtl, MTL) == 0);
    snprintf(cmd, sizeof cmd,
             "'%s' '%s' -o '%s' --mesh-out '%s' --backend cpu --size 128 --spp 16 --bounces 1 "
             "--sky 1,1,1 --seed 1 --quiet",
             BK_BAKER, obj, hdr, mesh);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);

    int    w = 0, h = 0, ch = 0;
    float *img = stbi_loadf(hdr, &w, &h, &ch, 3);
    BK_EXPECTF(img, "cannot read %s", hdr);
    bk_scene s;
    memset(&s, 0, sizeof s);
    bk_atlas a;
    memset(&a, 0, sizeof a);
    bk_texel *tx = NULL;
    uint32_t  n = 0;
    int       ok = img && bk_scene_load_obj(mesh, &s, err, sizeof err) == 0;
    BK_EXPECTF(ok, "%s: %s", mesh, err);
    if (ok) {
        bk_atlas_opts o;
        bk_atlas_opts_default(&o);
        o.size = w;
        o.uv_from_file = 1;
        o.scene_path = mesh;
        ok = bk_atlas_build(&s, &o, &a, err, sizeof err) == 0 &&
             bk_atlas_rasterize(&s, &a, &tx, &n, NULL, err, sizeof err) == 0;
        BK_EXPECTF(ok, "%s: %s", mesh, err);
        ok = ok && a.width == w && a.height == h && a.page_count == 1;
    }
    if (ok) {
        /* the floor's valid texels next to the box: centres outside its footprint, within 0.15 (3 texels) */
        float    lo[3] = { 1e30f, 1e30f, 1e30f }, hi[3] = { 0, 0, 0 }, rmin = 1, bmax = 0;
        double   band_mean = 0, under_mean = 0;
        uint32_t band = 0, under = 0, black = 0, floor_chart = BK_NONE;
        for (uint32_t i = 0; i < n; ++i) {
            const bk_texel *t = &tx[i];
            const float    *c = img + 3 * (size_t)t->pixel;
            if (!(maxf(c[0], maxf(c[1], c[2])) > 0.02f)) black++;
            if (!(fabsf(t->py) < 1e-4f && t->ny > 0.9f)) continue;
            floor_chart = a.tri_chart[t->tri];
            float d = maxf(fabsf(t->px), fabsf(t->pz));
            if (d > 1.0f && d < 1.15f) {
                float sum = c[0] + c[1] + c[2];
                for (int k = 0; k < 3; ++k) {
                    lo[k] = fminf(lo[k], c[k]);
                    hi[k] = fmaxf(hi[k], c[k]);
                }
                rmin = fminf(rmin, c[0] / sum);
                bmax = maxf(bmax, c[2] / sum);
                band_mean += sum;
                band++;
            }
        }
        printf("%u texels, %u of them darker than 0.02; floor band next to the box: %u texels, "
               "R %.3f..%.3f G %.3f..%.3f B %.3f..%.3f, chromaticity r >= %.3f, b <= %.3f\n",
               n, black, band, lo[0], hi[0], lo[1], hi[1], lo[2], hi[2], rmin, bmax);
        BK_EXPECTF(black == 0, "%u texels of charts are (nearly) black", black);
        BK_EXPECT(band > 100 && floor_chart != BK_NONE);
        int bad = 0;
        for (uint32_t i = 0; i < n; ++i) {
            const bk_texel *t = &tx[i];
            if (!(fabsf(t->py) < 1e-4f && t->ny > 0.9f)) continue;
            BK_EXPECT(a.tri_chart[t->tri] == floor_chart); /* one chart: the test's premise */
            if (!(maxf(fabsf(t->px), fabsf(t->pz)) < 0.9f)) continue;
            under++;
            const float *c = img + 3 * (size_t)t->pixel;
            float        sum = c[0] + c[1] + c[2];
            under_mean += sum;
            int near = 1;
            for (int k = 0; k < 3; ++k) near &= c[k] >= 0.9f * lo[k] - 0.01f && c[k] <= 1.1f * hi[k] + 0.01f;
            /* not the box's colour: no bluer and no less red than the floor next to the box */
            int own = sum > 0 && c[0] / sum >= rmin - 0.02f && c[2] / sum <= bmax + 0.02f;
            if ((!near || !own) && bad++ < 5)
                BK_EXPECTF(0, "floor texel under the box at (%.2f, %.2f), pixel %u: %g %g %g, %s", t->px, t->pz,
                           t->pixel, c[0], c[1], c[2],
                           !near ? "outside the range of its valid neighbours" : "in the box's colours");
        }
        band_mean /= band ? band : 1;
        under_mean /= under ? under : 1;
        printf("%u floor texels under the box, %d not like the floor next to it; mean R+G+B %.3f under the box, "
               "%.3f next to it\n",
               under, bad, under_mean, band_mean);
        /* as dark as the floor along the box, not as bright as the open floor or the box's top */
        BK_EXPECTF(fabs(under_mean - band_mean) <= 0.25 * band_mean, "under the box %.3f, next to it %.3f", under_mean,
                   band_mean);
        BK_EXPECT(under > 900);
        BK_EXPECT(bad == 0);
    }
    free(tx);
    bk_atlas_free(&a);
    bk_scene_free(&s);
    stbi_image_free(img);
    const char *files[] = { "scene.obj", "scene.mtl", "lm.hdr", "mesh.obj" };
    for (int i = 0; i < 4; ++i) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    rmdir(dir);
    BK_TEST_DONE();
}
