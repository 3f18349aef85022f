/* unit_cli.c - the baker program itself: bad input gives one clear line and a non-zero exit and
 * leaves no output file; good input round-trips through `baker rays` and `baker trace`, and the
 * stack strategy never changes a hit. */
#include "bk_test.h"
#include "bk_test_run.h"

#include <sys/stat.h>
#include <sys/wait.h>

static char tmpdir[256];

/* Runs baker with args (a shell fragment); captures stderr into buf; returns the exit status. */
static int run(char *buf, size_t n, const char *args)
{
    char a[8192];
    snprintf(a, sizeof a, "%s%s", args, "");
    return bk_test_run_baker(tmpdir, buf, n, a);
}

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static int same_file(const char *a, const char *b)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

/* No file in tmpdir other than those named (the harness's own stderr.txt excluded). */
static int leftovers(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -v -e stderr.txt -e '^ok' | grep -q .", tmpdir);
    return system(cmd) == 0;
}

/* The colour type of the PNG at path (6: RGBA), from its IHDR; -1 when it cannot be read. */
static int png_colour_type(const char *path)
{
    FILE         *f = fopen(path, "rb");
    unsigned char head[26];
    int           t = f && fread(head, 1, 26, f) == 26 ? head[25] : -1;
    if (f) fclose(f);
    return t;
}

/* Each of the n option sets (opts[k][0], with %s for tmpdir, given twice) is refused with exit
 * status 2 and a message naming `name` and opts[k][1]. */
static void expect_refused(const char *scene, const char *tmpdir, const char *name, const char *const (*opts)[2], int n)
{
    char err[4096], args[4096];
    for (int k = 0; k < n; ++k) {
        char opt[1400];
        snprintf(opt, sizeof opt, opts[k][0], tmpdir, tmpdir);
        snprintf(args, sizeof args, "'%s' %s --backend cpu --size 32 --spp 2 --quiet", scene, opt);
        BK_EXPECTF(run(err, sizeof err, args) == 2 && strstr(err, name) && strstr(err, opts[k][1]), "%s: %s", opt, err);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_cli_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    char        err[8192], args[4096], rays[512], hits[512], hits2[512];
    const char *scene = BK_SOURCE_DIR "/scenes/cornell.obj";
    snprintf(rays, sizeof rays, "%s/ok.rays", tmpdir);
    snprintf(hits, sizeof hits, "%s/ok.hits", tmpdir);
    snprintf(hits2, sizeof hits2, "%s/ok2.hits", tmpdir);

    /* usage errors name the offending argument */
    BK_EXPECT(run(err, sizeof err, "") == 2);
    BK_EXPECT(run(err, sizeof err, "frobnicate") == 2 && strstr(err, "frobnicate"));
    snprintf(args, sizeof args, "rays '%s' -o '%s/x.rays' --diffuse 12x", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--diffuse") && strstr(err, "12x"));
    snprintf(args, sizeof args, "trace '%s' --rays r --hits h --stack sideways", scene);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--stack") && strstr(err, "sideways"));
    snprintf(args, sizeof args, "trace '%s' --rays r --hits h --stack-size 0", scene);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--stack-size"));
    snprintf(args, sizeof args, "trace '%s' --rays r --hits h --backend quantum", scene);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "quantum"));
    snprintf(args, sizeof args, "trace '%s' --rays", scene);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--rays"));
    BK_EXPECT(run(err, sizeof err, "trace --help") == 0);

    /* missing scene, unwritable output: an error naming the file, no output */
    snprintf(args, sizeof args, "rays '%s/nope.obj' -o '%s/x.rays' --diffuse 10", tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "nope.obj"));
    snprintf(args, sizeof args, "rays '%s' -o '%s/no/such/dir/x.rays' --diffuse 10", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "x.rays"));
    BK_EXPECT(!leftovers());

    /* every malformed corpus file: one line naming the file, exit 1 */
    static const char *const bad[] = { "obj-tests-assimp/invalid/empty.obj", "obj-tests-assimp/invalid/malformed.obj",
                                       "obj-tests-assimp/invalid/malformed2.obj", "obj-tests-assimp/testpoints.obj",
                                       "obj-tests-assimp/testline.obj" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", bk_test_scenes_dir(), bad[i]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "note: %s absent\n", path);
            continue;
        }
        snprintf(args, sizeof args, "rays '%s' -o '%s/bad.rays' --diffuse 10", path, tmpdir);
        int rc = run(err, sizeof err, args);
        /* warnings (an unknown material, say) may come first; the error is the last line */
        char *last = err + strlen(err);
        while (last > err && last[-1] == '\n') *--last = 0;
        while (last > err && last[-1] != '\n') --last;
        BK_EXPECTF(rc == 1 && !strncmp(last, "baker: ", 7) && strstr(last, bad[i]), "%s: rc %d, stderr '%s'", bad[i],
                   rc, err);
        BK_EXPECT(!leftovers());
    }

    /* round trip: rays, then trace with two stack strategies: identical hit files */
    snprintf(args, sizeof args, "rays '%s' -o '%s' --diffuse 20000 --seed 4", scene, rays);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    BK_EXPECT(file_size(rays) == 16 + 32 * 20000);
    snprintf(args, sizeof args, "trace '%s' --rays '%s' --hits '%s' --backend cpu", scene, rays, hits);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    BK_EXPECT(file_size(hits) == 16 + 8 * 20000);
    snprintf(args, sizeof args,
             "trace '%s' --rays '%s' --hits '%s' --backend cpu --accel kdtree --stack short --stack-size 1", scene,
             rays, hits2);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    BK_EXPECTF(same_file(hits, hits2), "bvh/global and kdtree/short-1 wrote different hits");

    /* a truncated RAYS file is refused and no HITS file appears */
    char cut[512], cmd[2048];
    snprintf(cut, sizeof cut, "%s/cut.rays", tmpdir);
    snprintf(cmd, sizeof cmd, "head -c 1000 '%s' > '%s'", rays, cut);
    BK_EXPECT(system(cmd) == 0);
    snprintf(args, sizeof args, "trace '%s' --rays '%s' --hits '%s/cut.hits' --backend cpu", scene, cut, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "cut.rays"));
    snprintf(cmd, sizeof cmd, "%s/cut.hits", tmpdir);
    BK_EXPECT(!exists(cmd));
    remove(cut);

    /* the bake: bad options name themselves; bad scenes and unwritable outputs leave no file */
    snprintf(args, sizeof args, "'%s' -o '%s/map.jpg'", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "map.jpg"));
    snprintf(args, sizeof args, "'%s'", scene);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "-o"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --spp many", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--spp") && strstr(err, "many"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --sun 0,1,0", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--sun"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --sun 0,1,0,1,1,1,0.5,dimmed", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--sun") && strstr(err, "dimmed"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --point 0,1,0,1,1,1,Baked", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--point") && strstr(err, "Baked"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --point 0,1,0,1,1,off", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--point") && strstr(err, "6 comma"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --mode bright", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "bright"));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --devices 0,,1", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--devices") && strstr(err, "0,,1"));
    /* devices a backend does not have: one line, a non-zero exit, no output */
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --size 32 --spp 1 --backend cpu --devices 0,1", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "--devices"));
    snprintf(args, sizeof args, "%s/map.png", tmpdir);
    BK_EXPECT(!exists(args));
    snprintf(args, sizeof args, "'%s' -o '%s/map.png' --padding 1", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, "--padding"));
    snprintf(args, sizeof args, "'%s/none.obj' -o '%s/map.png' --backend cpu", tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "none.obj"));
    snprintf(args, sizeof args, "'%s' -o '%s/no/dir/map.png' --backend cpu --size 32 --spp 1 --quiet", scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "map.png"));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", bk_test_scenes_dir(), bad[i]);
        if (access(path, R_OK) != 0) continue;
        snprintf(args, sizeof args, "'%s' -o '%s/bad.png' --backend cpu --quiet", path, tmpdir);
        BK_EXPECTF(run(err, sizeof err, args) == 1 && strstr(err, bad[i]), "bake of %s: '%s'", bad[i], err);
    }
    /* an unwritable statistics file fails the whole bake: no map, no mesh either */
    snprintf(args, sizeof args,
             "'%s' -o '%s/st.png' --mesh-out '%s/st.obj' --stats '%s/no/dir/st.json' --backend cpu "
             "--size 32 --spp 1 --quiet",
             scene, tmpdir, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 1 && strstr(err, "st.json"));
    BK_EXPECT(!leftovers());
    /* a good bake writes the map, the mesh and the statistics */
    snprintf(args, sizeof args,
             "'%s' -o '%s/ok.png' --mesh-out '%s/ok_mesh.obj' --stats '%s/ok.json' --backend cpu "
             "--size 32 --spp 2 --quiet",
             scene, tmpdir, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(cmd, sizeof cmd, "%s/ok.png", tmpdir);
    BK_EXPECT(file_size(cmd) > 100);
    snprintf(cmd, sizeof cmd, "%s/ok_mesh.obj", tmpdir);
    BK_EXPECT(file_size(cmd) > 100);
    snprintf(cmd, sizeof cmd, "%s/ok.json", tmpdir);
    BK_EXPECT(file_size(cmd) > 100);
    /* two runs give identical files */
    snprintf(args, sizeof args, "'%s' -o '%s/ok2.png' --backend cpu --size 32 --spp 2 --quiet --threads 1", scene,
             tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    char a2[600], b2[600];
    snprintf(a2, sizeof a2, "%s/ok.png", tmpdir);
    snprintf(b2, sizeof b2, "%s/ok2.png", tmpdir);
    BK_EXPECTF(same_file(a2, b2), "two bakes with the same options wrote different maps");
    /* sorting texels by their rays' key changes the order of work, not the map */
    snprintf(args, sizeof args, "'%s' -o '%s/ok3.png' --backend cpu --size 32 --spp 2 --quiet --bin-rays on", scene,
             tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(b2, sizeof b2, "%s/ok3.png", tmpdir);
    BK_EXPECTF(same_file(a2, b2), "--bin-rays on wrote another map");
    /* lights baked "off" take no random numbers and bring no light: the map without them; an
     * "indirect" sun brings some */
    const char *lights[] = { "--sun 0.3,1,0.2,3,2.9,2.7,0.5,off --point 0,1,0,5,5,5,off",
                             "--sun 0.3,1,0.2,3,2.9,2.7,0.5,indirect" };
    for (int k = 0; k < 2; ++k) {
        snprintf(args, sizeof args, "'%s' -o '%s/ok4.png' --backend cpu --size 32 --spp 2 --quiet --threads 1 %s",
                 scene, tmpdir, lights[k]);
        BK_EXPECT(run(err, sizeof err, args) == 0);
        snprintf(b2, sizeof b2, "%s/ok4.png", tmpdir);
        BK_EXPECTF(same_file(a2, b2) == !k, "%s: %s the map without them", lights[k], k ? "the same as" : "not");
    }
    /* --directional: the map the same bytes; the bands beside the .png, none beside the .hdr (RGBE
     * has no sign); dominant: one RGBA page (PNG colour type 6); what it refuses, it names */
    snprintf(
        args, sizeof args,
        "'%s' -o '%s/ok5.png' -o '%s/ok5.hdr' --backend cpu --size 32 --spp 2 --quiet --threads 1 --directional sh",
        scene, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(b2, sizeof b2, "%s/ok5.png", tmpdir);
    BK_EXPECTF(same_file(a2, b2), "--directional sh changed the map");
    for (int k = 0; k < 3; ++k) {
        snprintf(cmd, sizeof cmd, "%s/ok5_L1%c.png", tmpdir, "xyz"[k]);
        BK_EXPECTF(file_size(cmd) > 100, "%s not written", cmd);
        snprintf(cmd, sizeof cmd, "%s/ok5_L1%c.hdr", tmpdir, "xyz"[k]);
        BK_EXPECTF(!exists(cmd), "%s written", cmd);
    }
    snprintf(args, sizeof args, "'%s' -o '%s/ok6.png' --backend cpu --size 32 --spp 2 --quiet --directional dominant",
             scene, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(cmd, sizeof cmd, "%s/ok6_dir.png", tmpdir);
    BK_EXPECTF(png_colour_type(cmd) == 6, "%s: no RGBA PNG (colour type %d)", cmd, png_colour_type(cmd));
    const char *refused[][2] = { { "-o '%s/no.png' --directional maybe", "maybe" },
                                 { "-o '%s/no.png' --directional sh --mode ao", "AO" },
                                 { "-o '%s/no.hdr' --directional dominant", ".exr" } };
    expect_refused(scene, tmpdir, "--directional", refused, 3);
    /* --shadowmask: the map the same bytes as with the sun indirect alone (ok4.png, the last of
     * the loop above), NAME_shadowmask.png beside it (RGBA), named in the glTF; what it refuses,
     * it names */
    snprintf(args, sizeof args,
             "'%s' -o '%s/ok8.png' --mesh-out '%s/ok8.gltf' --backend cpu --size 32 --spp 2 --quiet --threads 1 "
             "--sun 0.3,1,0.2,3,2.9,2.7,0.5,indirect --shadowmask",
             scene, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(cmd, sizeof cmd, "%s/ok4.png", tmpdir);
    snprintf(b2, sizeof b2, "%s/ok8.png", tmpdir);
    BK_EXPECTF(same_file(cmd, b2), "--shadowmask changed the map");
    snprintf(cmd, sizeof cmd, "%s/ok8_shadowmask.png", tmpdir);
    BK_EXPECTF(png_colour_type(cmd) == 6, "%s: no RGBA PNG (colour type %d)", cmd, png_colour_type(cmd));
    snprintf(cmd, sizeof cmd,
             "grep -q '\"shadowmask\":{\"uri\":\"ok8_shadowmask.png\".*\"channel\":\"r\",\"light\":\"sun\"' "
             "'%s/ok8.gltf'",
             tmpdir);
    BK_EXPECTF(system(cmd) == 0, "%s/ok8.gltf does not name the shadowmask and its sun", tmpdir);
    const char *mrefused[][2] = {
        { "-o '%s/no.png' --shadowmask", "no light is baked indirect" },
        { "-o '%s/no.png' --sun 0,1,0,1,1,1,1,indirect --shadowmask --mode ao", "AO" },
        { "-o '%s/no.png' --sun 0,1,0,1,1,1,1,indirect --point 0,1,0,1,1,1,indirect --point 0,2,0,1,1,1,indirect "
          "--point 0,3,0,1,1,1,indirect --point 0,4,0,1,1,1,indirect --shadowmask",
          "at most 4" }
    };
    expect_refused(scene, tmpdir, "--shadowmask", mrefused, 3);
    snprintf(cmd, sizeof cmd, "%s/no_shadowmask.png", tmpdir);
    BK_EXPECTF(!exists(cmd), "%s written by a refused run", cmd);
    /* --probes: the map the same bytes, NAME_probes.json beside it, named in the glTF; what it
     * refuses, it names */
    snprintf(args, sizeof args,
             "'%s' -o '%s/ok7.png' --mesh-out '%s/ok7.gltf' --backend cpu --size 32 --spp 2 --quiet --threads 1 "
             "--probes 0.7 --probe-spp 16",
             scene, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 0);
    snprintf(b2, sizeof b2, "%s/ok7.png", tmpdir);
    BK_EXPECTF(same_file(a2, b2), "--probes changed the map");
    snprintf(cmd, sizeof cmd, "%s/ok7_probes.json", tmpdir);
    BK_EXPECTF(file_size(cmd) > 100, "%s not written", cmd);
    snprintf(cmd, sizeof cmd, "grep -q '\"probes\":{\"uri\":\"ok7_probes.json\"' '%s/ok7.gltf'", tmpdir);
    BK_EXPECTF(system(cmd) == 0, "%s/ok7.gltf names no probes", tmpdir);
    const char *no_probes[][2] = { { "-o '%s/no.png' --probes 0", "spacing" },
                                   { "-o '%s/no.png' --probes 0.5 --mode ao", "AO" },
                                   { "-o '%s/no.png' --probes-out '%s/p.json'", "--probes SPACING" } };
    expect_refused(scene, tmpdir, "--probes", no_probes, 3);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "note: could not remove %s\n", tmpdir);
    BK_TEST_DONE();
}
