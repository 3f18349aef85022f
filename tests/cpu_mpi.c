/* cpu_mpi.c - a bake split over the ranks of an mpirun job (world.h) gives the files of a bake in
 * one process, byte for byte: the demo scene on the CPU backend, with and without the denoiser,
 * as PNG and as HDR, over 2 and 3 ranks, triangles and voxels, several pages and a glTF mesh
 * naming them; the summed counters match too.
 * And a rank that fails stops the job: rank 0 names the failed rank and its error, mpirun exits
 * non-zero, and nothing is written (an existing output keeps its bytes, no temporary file is
 * left). The failures are made with mpirun's MPMD form (`-np 1 baker A : -np 1 baker B`), which
 * gives one rank other arguments: a scene that does not exist (a failure at load), a memory limit
 * it cannot meet (after load, build and atlas, while the others go on to bake), another atlas
 * size (the ranks disagree on the texels). These are real failures of the rank, not a hook
 * compiled into baker; what they do not reach is a failure inside a rank's bake launches, which
 * takes the same path (an error return, then the same agreement).
 * Skips (77) when baker is built without MPI or mpirun is not found. */
#include "bk_test.h"
#include "world.h"

#include <sys/stat.h>
#include <sys/wait.h>

static char dir[256];
static char mpirun[1200]; /* BK_MPIEXEC and its options */

/* Runs cmd with stderr into dir/err.txt (kept in err); the exit status. */
static int run(const char *cmd, char *err, size_t n)
{
    char full[16384], path[512];
    snprintf(path, sizeof path, "%s/err.txt", dir);
    snprintf(full, sizeof full, "%s >/dev/null 2>'%s'", cmd, path);
    int    st = system(full);
    size_t k = 0;
    err[0] = 0;
    char *t = bk_test_slurp(path, &k);
    if (t) {
        snprintf(err, n, "%s", t);
        free(t);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* "rays": N of a --stats file (0 when absent). */
static unsigned long long stats_rays(const char *path)
{
    size_t             n = 0;
    char              *t = bk_test_slurp(path, &n);
    const char        *p = t ? strstr(t, "\"rays\": ") : NULL;
    unsigned long long r = p ? strtoull(p + 8, NULL, 10) : 0;
    free(t);
    return r;
}

/* One process, then `mpirun -np ranks`, the same arguments; the outputs compared byte for byte. */
static void same_as_one(int ranks, const char *scene, const char *ext, const char *args)
{
    char one[512], many[512], s1[512], s2[512], cmd[8192], err[4096];
    snprintf(one, sizeof one, "%s/one%s", dir, ext);
    snprintf(many, sizeof many, "%s/many%s", dir, ext);
    snprintf(s1, sizeof s1, "%s/one.json", dir);
    snprintf(s2, sizeof s2, "%s/many.json", dir);
    snprintf(cmd, sizeof cmd, "'%s' '%s/scenes/%s' -o '%s' --stats '%s' --backend cpu --quiet %s", BK_BAKER,
             BK_SOURCE_DIR, scene, one, s1, args);
    int rc = run(cmd, err, sizeof err);
    BK_EXPECTF(rc == 0, "one process: %s: exit %d: %s", cmd, rc, err);
    snprintf(cmd, sizeof cmd, "%s -np %d '%s' '%s/scenes/%s' -o '%s' --stats '%s' --backend cpu --quiet %s", mpirun,
             ranks, BK_BAKER, BK_SOURCE_DIR, scene, many, s2, args);
    rc = run(cmd, err, sizeof err);
    BK_EXPECTF(rc == 0, "%d ranks: %s: exit %d: %s", ranks, cmd, rc, err);
    BK_EXPECTF(bk_test_same_file(one, many), "%s %s: %d ranks wrote another file than one process", scene, args, ranks);
    unsigned long long r1 = stats_rays(s1), r2 = stats_rays(s2);
    BK_EXPECTF(r1 > 0 && r1 == r2, "%s %s: rays %llu in one process, %llu summed over %d ranks", scene, args, r1, r2,
               ranks);
    printf("%d ranks, %s %s -> %s: identical, %llu rays\n", ranks, scene, args, ext, r2);
    remove(one);
    remove(many);
    remove(s1);
    remove(s2);
}

/* Several outputs (--pages auto: NAME-0.png, NAME-1.png; --mesh-out: a glTF naming them), each
 * written by rank 0 alone, into two folders, compared file by file. */
static void pages_same_as_one(void)
{
    char a[512], b[512], cmd[8192], err[4096];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    BK_EXPECT(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0);
    const char *args = "--pages auto --size 128 --texels-per-voxel 1 --spp 4 --backend cpu --quiet";
    snprintf(cmd, sizeof cmd, "'%s' '%s/scenes/cornell.vox' -o '%s/p.png' --mesh-out '%s/m.gltf' %s", BK_BAKER,
             BK_SOURCE_DIR, a, a, args);
    int rc = run(cmd, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s: exit %d: %s", cmd, rc, err);
    snprintf(cmd, sizeof cmd, "%s -np 2 '%s' '%s/scenes/cornell.vox' -o '%s/p.png' --mesh-out '%s/m.gltf' %s", mpirun,
             BK_BAKER, BK_SOURCE_DIR, b, b, args);
    rc = run(cmd, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s: exit %d: %s", cmd, rc, err);
    const char *files[] = { "p-0.png", "p-1.png", "m.gltf" };
    for (int k = 0; k < 3; ++k) {
        char fa[600], fb[600];
        snprintf(fa, sizeof fa, "%s/%s", a, files[k]);
        snprintf(fb, sizeof fb, "%s/%s", b, files[k]);
        BK_EXPECTF(access(fa, R_OK) == 0, "one process wrote no %s", fa);
        BK_EXPECTF(bk_test_same_file(fa, fb), "--pages auto --mesh-out: %s differs between 2 ranks and one process", files[k]);
    }
    BK_EXPECTF(bk_test_count_files(a) == 3 && bk_test_count_files(b) == 3, "%d and %d files, expected 3 each",
               bk_test_count_files(a), bk_test_count_files(b));
    printf("2 ranks, cornell.vox %s -> 2 pages and a glTF: identical\n", args);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", a, b);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s, %s\n", a, b);
}

/* A job whose rank 0 runs args0 and rank 1 args1 (scene and options after BK_BAKER) must fail,
 * with want in rank 0's message, and leave out.png as it was. */
static void job_fails(const char *what, const char *args0, const char *args1, const char *want)
{
    char out[512], cmd[8192], err[8192];
    snprintf(out, sizeof out, "%s/out.png", dir);
    FILE *f = fopen(out, "wb");
    if (f) {
        fputs("an earlier output", f);
        fclose(f);
    }
    snprintf(cmd, sizeof cmd, "%s -np 1 '%s' %s -o '%s' --backend cpu : -np 1 '%s' %s -o '%s' --backend cpu", mpirun,
             BK_BAKER, args0, out, BK_BAKER, args1, out);
    int rc = run(cmd, err, sizeof err);
    BK_EXPECTF(rc != 0, "%s: the job exited 0", what);
    BK_EXPECTF(strstr(err, want) != NULL, "%s: no '%s' in its messages:\n%s", what, want, err);
    size_t n = 0;
    char  *t = bk_test_slurp(out, &n);
    BK_EXPECTF(t && !strcmp(t, "an earlier output"), "%s: the existing output was changed", what);
    free(t);
    /* out.png and err.txt: no temporary file left beside them */
    BK_EXPECTF(bk_test_count_files(dir) == 2, "%s: %d files in %s, expected 2", what, bk_test_count_files(dir), dir);
    printf("%s: stopped (exit %d), nothing written\n", what, rc);
    remove(out);
}

int main(void)
{
    if (!bk_world_built()) BK_TEST_SKIP("baker is built without MPI (apt-get install libopenmpi-dev openmpi-bin)");
    const char *exe = BK_MPIEXEC;
    if (!exe[0] || access(exe, X_OK) != 0) BK_TEST_SKIP("no mpirun found by CMake");
    /* OpenMPI refuses root without these (CI containers run as root) */
    if (geteuid() == 0) {
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    /* more ranks than cores (CI has 2): OpenMPI wants --oversubscribe; other MPIs take it as is */
    char cmd[1400], ver[4096];
    snprintf(dir, sizeof dir, "/tmp/bk_cpu_mpi_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(cmd, sizeof cmd, "sh -c \"'%s' --version 1>&2\"", exe);
    run(cmd, ver, sizeof ver);
    snprintf(mpirun, sizeof mpirun, "'%s'%s", exe,
             strstr(ver, "Open MPI") || strstr(ver, "OpenRTE") ? " --oversubscribe" : "");

    same_as_one(2, "cornell.obj", ".png", "--size 256 --spp 16 --denoise off");
    same_as_one(2, "cornell.obj", ".png", "--size 256 --spp 16 --denoise on");
    same_as_one(2, "cornell.obj", ".hdr", "--size 256 --spp 16 --denoise on");
    same_as_one(3, "cornell.obj", ".hdr", "--size 256 --spp 8 --mode ao");
    same_as_one(2, "cornell.vox", ".png", "--size 192 --spp 8 --texels-per-voxel 1 --denoise off");
    pages_same_as_one();

    char good[1024], missing[1024], tight[1024], other[1024];
    snprintf(good, sizeof good, "'%s/scenes/cornell.obj' --size 128 --spp 4", BK_SOURCE_DIR);
    snprintf(missing, sizeof missing, "'%s/no_such_scene.obj' --size 128 --spp 4", dir);
    snprintf(tight, sizeof tight, "'%s/scenes/cornell.obj' --size 128 --spp 4 --max-memory 0.000001", BK_SOURCE_DIR);
    snprintf(other, sizeof other, "'%s/scenes/cornell.obj' --size 96 --spp 4", BK_SOURCE_DIR);
    job_fails("rank 1 cannot load its scene", good, missing, "rank 1 of 2");
    job_fails("rank 1 cannot load its scene (its error)", good, missing, "no_such_scene.obj");
    job_fails("rank 1 over its memory limit", good, tight, "rank 1 of 2");
    job_fails("rank 0 over its memory limit", tight, good, "needs about");
    job_fails("rank 1 baked another atlas", good, other, "rank 1 of 2 has another atlas");

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    BK_TEST_DONE();
}
