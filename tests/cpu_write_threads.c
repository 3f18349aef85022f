/* cpu_write_threads.c - the whole write phase of the program does not depend on the thread count.
 *
 * The demo scene baked on the CPU with --exposure auto and --stats under BK_THREADS=1, 2 and 16:
 * the chosen exposure and mean luminance (auto_exposure in cmd_bake.c), and the PNG, HDR and (when
 * built with it) EXR files, after the hidden-texel fill and the dilation, are the same bytes. And
 * the voxel Cornell box on 8 pages (--pages auto, whose pages are dilated and encoded side by
 * side: bk_image_dilate_pages, bk_image_write_files): every page the same bytes.
 * (unit_write_threads checks the same pieces on a synthetic atlas, in process.)
 */
#include "bk_test.h"
#include "bk_test_run.h"
#include "image.h"

#include <sys/stat.h>

/* The line of the stats JSON that starts with key (after blanks), or "" */
static void json_line(const char *json, const char *key, char *out, size_t n)
{
    out[0] = 0;
    const char *p = json ? strstr(json, key) : NULL;
    if (!p) return;
    size_t k = 0;
    while (p[k] && p[k] != '\n' && k + 1 < n) {
        out[k] = p[k];
        k++;
    }
    out[k] = 0;
}

int main(void)
{
    char dir[256], args[4096], err[8192], path[512];
    snprintf(dir, sizeof dir, "/tmp/bk_cpu_write_threads_%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        perror(dir);
        return 1;
    }
    const char    *ext[3] = { "png", "hdr", "exr" };
    const char    *threads[3] = { "1", "2", "16" };
    unsigned char *first[3] = { NULL, NULL, NULL };
    size_t         first_n[3] = { 0, 0, 0 };
    char           expo0[256] = "", lum0[256] = "";
    for (int t = 0; t < 3; ++t)
        for (int k = 0; k < 3; ++k) {
            if (k == 2 && !bk_image_exr_supported()) continue;
            setenv("BK_THREADS", threads[t], 1);
            snprintf(path, sizeof path, "%s/lm.%s", dir, ext[k]);
            snprintf(args, sizeof args,
                     "'%s/scenes/cornell.obj' -o '%s' --size 200 --backend cpu --spp 2 --bounces 1 --exposure auto "
                     "--stats '%s/s.json' --quiet",
                     BK_SOURCE_DIR, path, dir);
            int rc = bk_test_run_baker(dir, err, sizeof err, args);
            BK_EXPECTF(rc == 0, "BK_THREADS=%s %s: exit %d: %s", threads[t], ext[k], rc, err);
            size_t         n, jn;
            unsigned char *b = (unsigned char *)bk_test_slurp(path, &n);
            snprintf(args, sizeof args, "%s/s.json", dir);
            char *json = bk_test_slurp(args, &jn);
            if (json) json = realloc(json, jn + 1), json[jn] = 0;
            char expo[256], lum[256];
            json_line(json, "\"exposure\"", expo, sizeof expo);
            json_line(json, "\"mean_luminance\"", lum, sizeof lum);
            BK_EXPECTF(b && n > 0 && expo[0] && lum[0], "BK_THREADS=%s: no %s or no stats", threads[t], ext[k]);
            if (t == 0 && k == 0) {
                snprintf(expo0, sizeof expo0, "%s", expo);
                snprintf(lum0, sizeof lum0, "%s", lum);
            }
            BK_EXPECTF(!strcmp(expo, expo0) && !strcmp(lum, lum0), "BK_THREADS=%s: %s %s, 1 thread: %s %s", threads[t],
                       expo, lum, expo0, lum0);
            if (t == 0) {
                first[k] = b;
                first_n[k] = n;
                b = NULL;
            } else
                BK_EXPECTF(b && n == first_n[k] && !memcmp(b, first[k], n),
                           "BK_THREADS=%s: the %s differs from 1 thread's", threads[t], ext[k]);
            free(b);
            free(json);
            remove(path);
            remove(args);
        }
    /* the pages side by side */
    enum { PAGES = 8 };
    unsigned char *page0[PAGES] = { 0 };
    size_t         page0_n[PAGES] = { 0 };
    for (int t = 0; t < 3; ++t) {
        setenv("BK_THREADS", threads[t], 1);
        snprintf(args, sizeof args,
                 "'%s/scenes/cornell.vox' -o '%s/vp.png' --size 128 --texels-per-voxel 2 --pages auto --backend cpu "
                 "--spp 2 --bounces 1 --quiet",
                 BK_SOURCE_DIR, dir);
        int rc = bk_test_run_baker(dir, err, sizeof err, args);
        BK_EXPECTF(rc == 0, "BK_THREADS=%s pages: exit %d: %s", threads[t], rc, err);
        for (int p = 0; p < PAGES; ++p) {
            size_t n;
            snprintf(path, sizeof path, "%s/vp-%d.png", dir, p);
            unsigned char *b = (unsigned char *)bk_test_slurp(path, &n);
            BK_EXPECTF(b && n > 0, "BK_THREADS=%s: no page %d", threads[t], p);
            if (t == 0) {
                page0[p] = b;
                page0_n[p] = n;
                b = NULL;
            } else
                BK_EXPECTF(b && n == page0_n[p] && !memcmp(b, page0[p], n),
                           "BK_THREADS=%s: page %d differs from 1 thread's", threads[t], p);
            free(b);
            remove(path);
        }
        snprintf(path, sizeof path, "%s/vp-%d.png", dir, PAGES);
        BK_EXPECTF(access(path, F_OK) != 0, "more than %d pages", PAGES);
    }
    for (int p = 0; p < PAGES; ++p) free(page0[p]);
    unsetenv("BK_THREADS");
    for (int k = 0; k < 3; ++k) free(first[k]);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    remove(path);
    BK_EXPECTF(bk_test_count_files(dir) == 0, "files left in %s", dir);
    rmdir(dir);
    BK_TEST_DONE();
}
