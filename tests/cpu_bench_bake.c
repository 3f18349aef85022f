/* cpu_bench_bake.c - `baker bench bake` on the demo scene with the CPU backend, and the memory and
 * phase fields of a bake's --stats JSON. Times are never compared with a number, only with each
 * other:
 * - the CSV has a header and one row with as many fields; wall > 0 and wall >= the sum of the
 *   phases (rest >= 0: the wall time is the whole child process); peak host memory > 0; the
 *   temporary folder of the child's outputs is gone (TMPDIR is a fresh folder);
 * - the stats JSON: every phase under "seconds" with their "total", memory.peak_host_bytes > 0,
 *   peak_device_bytes 0 on the CPU, atlas_texels = size^2, bytes per texel = peak / texels.
 * - the voxel world (scene "world"): with tools/vox_world beside the baker its row is there with
 *   the same checks (a small world: --world-objects, --world-size), and TMPDIR is empty again
 *   (the generated world removed too); a copy of the baker alone in a folder skips the world
 *   with a note, exits 0 and writes only the CSV's header.
 */
#define _DEFAULT_SOURCE
#include "bk_test.h"
#include "bk_test_json.h"
#include "bk_test_run.h"

#include <math.h>
#include <sys/stat.h>

static int split(char *line, char **field, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        field[n++] = p;
        if (*p == '"') { /* the path column: no quotes inside ours */
            char *q = strchr(p + 1, '"');
            p = q ? q + 1 : p + strlen(p);
        }
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int column(char **head, int n, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(head[i], name)) return i;
    return -1;
}

static const char *const phases[] = {
    "startup", "load", "build", "upload", "atlas", "bake", "denoise", "write", "free"
};
#define NPH (int)(sizeof phases / sizeof phases[0])

static void check_csv(const char *path, const char *scene, int size)
{
    size_t len;
    char  *text = bk_test_slurp(path, &len);
    BK_EXPECTF(text && len > 0, "cannot read %s", path);
    if (!text) return;
    char *nl = strchr(text, '\n'), *row = nl ? nl + 1 : NULL, *end = row ? strchr(row, '\n') : NULL;
    BK_EXPECTF(row && end && end[1] == 0, "expected a header and exactly one row:\n%s", text);
    if (!row || !end) {
        free(text);
        return;
    }
    *nl = 0;
    *end = 0;
    char *head[64], *f[64];
    int   nh = split(text, head, 64), nf = split(row, f, 64);
    BK_EXPECTF(nh == nf, "%d header fields, %d in the row", nh, nf);
    int cw = column(head, nh, "wall"), cr = column(head, nh, "rest"), ch = column(head, nh, "peak_host_mb"),
        cs = column(head, nh, "size"), cb = column(head, nh, "host_bytes_per_texel");
    BK_EXPECT(cw >= 0 && cr >= 0 && ch >= 0 && cs >= 0 && cb >= 0);
    if (cw < 0 || cr < 0 || ch < 0 || cs < 0 || cb < 0 || nf != nh) {
        free(text);
        return;
    }
    double sum = 0, wall = atof(f[cw]);
    for (int k = 0; k < NPH; ++k) {
        int c = column(head, nh, phases[k]);
        BK_EXPECTF(c >= 0, "no column %s", phases[k]);
        if (c < 0) continue;
        double v = atof(f[c]);
        BK_EXPECTF(v >= 0, "%s = %g", phases[k], v);
        sum += v;
    }
    BK_EXPECTF(wall > 0, "wall %g", wall);
    BK_EXPECTF(wall + 1e-6 >= sum, "wall %g < the sum of the phases %g", wall, sum);
    BK_EXPECTF(fabs(atof(f[cr]) - (wall - sum)) < 1e-4, "rest %s, wall - phases %g", f[cr], wall - sum);
    BK_EXPECTF(atof(f[ch]) > 0, "peak host memory %s MB", f[ch]);
    BK_EXPECTF(atoi(f[cs]) == size, "size %s, expected %d", f[cs], size);
    BK_EXPECTF(atof(f[cb]) > 0, "bytes per texel %s", f[cb]);
    BK_EXPECTF(!strcmp(f[0], scene), "scene %s, expected %s", f[0], scene);
    free(text);
}

static void check_stats(const char *path)
{
    size_t len;
    char  *text = bk_test_slurp(path, &len);
    BK_EXPECTF(text, "cannot read %s", path);
    if (!text) return;
    bk_json *root = bk_json_parse(text, len);
    BK_EXPECTF(root, "%s is not JSON", path);
    const bk_json *sec = bk_json_get(root, "seconds"), *mem = bk_json_get(root, "memory");
    BK_EXPECT(sec && mem);
    if (sec && mem) {
        double sum = 0;
        for (int k = 0; k < NPH; ++k) {
            double v = bk_json_num(sec, phases[k], -1);
            BK_EXPECTF(v >= 0, "seconds.%s = %g", phases[k], v);
            sum += v;
        }
        BK_EXPECTF(fabs(bk_json_num(sec, "total", -1) - sum) < 1e-4, "seconds.total %g, sum %g",
                   bk_json_num(sec, "total", -1), sum);
        double peak = bk_json_num(mem, "peak_host_bytes", -1), tex = bk_json_num(mem, "atlas_texels", -1);
        BK_EXPECTF(peak > 1e6, "memory.peak_host_bytes %g", peak);
        BK_EXPECTF(bk_json_num(mem, "peak_device_bytes", -1) == 0, "memory.peak_device_bytes %g on the CPU",
                   bk_json_num(mem, "peak_device_bytes", -1));
        BK_EXPECTF(tex == 128 * 128, "memory.atlas_texels %g", tex);
        double bpt = bk_json_num(mem, "peak_host_bytes_per_texel", -1);
        BK_EXPECTF(tex > 0 && fabs(bpt - peak / tex) < 0.01, "memory.peak_host_bytes_per_texel %g, peak / texels %g",
                   bpt, peak / tex);
        BK_EXPECT(bk_json_num(mem, "estimate_host_bytes", -1) > 0);
    }
    bk_json_free(root);
    free(text);
}

/* The world's row, where vox_world is built beside the baker; then its skip, where it is not. */
static void check_world(const char *dir, const char *tmp, const char *csv)
{
    char gen[4096], args[4096], buf[8192];
    snprintf(gen, sizeof gen, "%s", BK_BAKER);
    char *slash = strrchr(gen, '/');
    snprintf(slash ? slash + 1 : gen, sizeof gen - (size_t)(slash ? slash + 1 - gen : 0), "vox_world");
    char props[4096];
    snprintf(props, sizeof props, "%s/vox-mmmm", bk_test_scenes_dir());
    setenv("BK_SCENES_DIR", bk_test_scenes_dir(), 1); /* where the bench looks for the props */
    if (access(gen, X_OK) == 0) {
        snprintf(args, sizeof args,
                 "bench bake --scenes world --world-objects 200 --world-size 256 --backend cpu --csv '%s'", csv);
        int st = bk_test_run_baker(dir, buf, sizeof buf, args);
        BK_EXPECTF(st == 0, "baker %s: exit %d: %s", args, st, buf);
        if (access(props, R_OK) == 0) check_csv(csv, "world200", 256);
        else { /* no props (a clone without the shared scenes): the row skipped, the CSV its header alone */ size_t len;
            char *text = bk_test_slurp(csv, &len);
            BK_EXPECTF(text && strchr(text, '\n') && strchr(text, '\n')[1] == 0,
                       "no props (%s), yet the CSV has rows: %s", props, text ? text : "");
            free(text);
        }
        BK_EXPECTF(bk_test_count_files(tmp) == 0, "%d files left in TMPDIR after the world", bk_test_count_files(tmp));
    } else printf("note: no %s (target vox_world not built): the world's row is not checked\n", gen);
    /* a baker with no vox_world beside it */
    char cmd[8192], out[4096];
    snprintf(cmd, sizeof cmd, "mkdir '%s/alone' && cp '%s' '%s/alone/baker'", dir, BK_BAKER, dir);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    snprintf(out, sizeof out, "%s/alone.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s/alone/baker' bench bake --scenes world --backend cpu --csv '%s' > '%s' 2>&1", dir,
             csv, out);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    size_t len;
    char  *said = bk_test_slurp(out, &len), *text = bk_test_slurp(csv, &len);
    BK_EXPECTF(said && strstr(said, "world54k") && strstr(said, "skipped"), "no note of the skipped world: %s",
               said ? said : "(nothing)");
    BK_EXPECTF(text && strchr(text, '\n') && strchr(text, '\n')[1] == 0, "the CSV has rows: %s", text ? text : "");
    free(said);
    free(text);
    BK_EXPECTF(bk_test_count_files(tmp) == 0, "%d files left in TMPDIR after the skip", bk_test_count_files(tmp));
}

int main(void)
{
    char dir[] = "/tmp/bk_bench_bake_XXXXXX", tmp[256], csv[256], json[256], args[4096], buf[8192];
    BK_EXPECT(mkdtemp(dir) != NULL);
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    BK_EXPECT(mkdir(tmp, 0700) == 0);
    snprintf(csv, sizeof csv, "%s/b.csv", dir);
    snprintf(json, sizeof json, "%s/s.json", dir);
    /* the child's folder goes under TMPDIR: tmp must be empty again afterwards */
    snprintf(args, sizeof args,
             "bench bake --scenes '%s/scenes/cornell.obj' --sizes 128 --spp 4 --reps 1 --backend cpu --csv '%s'",
             BK_SOURCE_DIR, csv);
    setenv("TMPDIR", tmp, 1);
    int st = bk_test_run_baker(dir, buf, sizeof buf, args);
    BK_EXPECTF(st == 0, "baker %s: exit %d: %s", args, st, buf);
    check_csv(csv, "cornell", 128);
    BK_EXPECTF(bk_test_count_files(tmp) == 0, "%d files left in TMPDIR", bk_test_count_files(tmp));
    check_world(dir, tmp, csv);
    unsetenv("TMPDIR");

    snprintf(args, sizeof args, "'%s/scenes/cornell.obj' -o '%s/c.png' --size 128 --spp 4 --backend cpu --stats '%s'",
             BK_SOURCE_DIR, dir, json);
    st = bk_test_run_baker(dir, buf, sizeof buf, args);
    BK_EXPECTF(st == 0, "baker %s: exit %d: %s", args, st, buf);
    check_stats(json);

    /* bad usage is refused before any work */
    st = bk_test_run_baker(dir, buf, sizeof buf, "bench bake --sizes 0");
    BK_EXPECTF(st == 2, "--sizes 0: exit %d", st);
    st = bk_test_run_baker(dir, buf, sizeof buf, "bench bake --scenes /nonexistent.obj");
    BK_EXPECTF(st == 2, "a missing scene: exit %d", st);

    char rm[512];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    if (system(rm) != 0) fprintf(stderr, "cannot remove %s\n", dir);
    BK_TEST_DONE();
}
