/* cpu_bake_vox.c - the baker program on voxel scenes (corpus .vox files; skipped without them):
 * a .vox bake with --mesh-out (OBJ + MTL) and --stats, that OBJ baked again with --uv file, an
 * OBJ and a .vox baked together (the OBJ's MTL, from another folder, copied into the MTL), output clashes with the
 * second scene and with an input MTL (refused before any work, files untouched), the refusal that counts pages, and
 * --pages auto writing NAME-K.png with the pages in --stats and --mesh-out. */
#include "bk_test.h"
#include "bk_test_run.h"

#include <sys/stat.h>
#include <sys/wait.h>

static char tmpdir[256];

/* Runs baker with args (a shell fragment); captures stderr into buf; returns the exit status. */
static int run(char *buf, size_t n, const char *args)
{
    char a[8192];
    snprintf(a, sizeof a, "%s%s", args, " --quiet");
    return bk_test_run_baker(tmpdir, buf, n, a);
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
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char  *b = malloc((size_t)n + 1);
    size_t k = fread(b, 1, (size_t)n, f);
    b[k] = 0;
    fclose(f);
    return b;
}

static int contains(const char *path, const char *what)
{
    char *b = slurp(path);
    int   r = b && strstr(b, what) != NULL;
    free(b);
    return r;
}

static int same_file(const char *a, const char *b)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
    return system(cmd) == 0;
}

int main(void)
{
    char knight[512], multi[512], cb_obj[512], cb_mtl[512];
    bk_test_scene("vox/chr_knight.vox", knight, sizeof knight);
    bk_test_scene("vox/test_multiple_model_scene.vox", multi, sizeof multi);
    bk_test_scene("cornell-box/CornellBox-Original.obj", cb_obj, sizeof cb_obj);
    bk_test_scene("cornell-box/CornellBox-Original.mtl", cb_mtl, sizeof cb_mtl);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_cpu_vox_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    const char *T = tmpdir;
    char        err[8192], args[4096], p1[600], p2[600], p3[600];

    /* a .vox: lightmap, OBJ + MTL, stats */
    snprintf(args, sizeof args, "'%s' -o '%s/k.png' --spp 4 --mesh-out '%s/k.obj' --stats '%s/k.json'", knight, T, T,
             T);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);
    snprintf(p1, sizeof p1, "%s/k.obj", T);
    snprintf(p2, sizeof p2, "%s/k.mtl", T);
    snprintf(p3, sizeof p3, "%s/k.json", T);
    BK_EXPECT(exists(p1) && exists(p2));
    BK_EXPECT(contains(p1, "mtllib k.mtl") && contains(p1, "usemtl vox_") && contains(p1, "g vox_instance_0"));
    BK_EXPECT(contains(p2, "newmtl vox_") && contains(p2, "Kd "));
    /* chr_knight: 398 voxels, 730 visible faces, 4 texels each at the default 2 per voxel */
    BK_EXPECTF(contains(p3, "\"visible_faces\": 730") && contains(p3, "\"texels\": 2920"), "stats: %s", p3);
    /* ... and its OBJ with the file's UVs */
    snprintf(args, sizeof args, "'%s/k.obj' --uv file -o '%s/k2.png' --spp 4", T, T);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);

    /* an OBJ and a .vox together */
    snprintf(args, sizeof args, "'%s' '%s' -o '%s/m.png' --spp 2 --mesh-out '%s/m.obj' --stats '%s/m.json'", cb_obj,
             knight, T, T, T);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);
    snprintf(p1, sizeof p1, "%s/m.obj", T);
    snprintf(p3, sizeof p3, "%s/m.json", T);
    /* the room's MTL lives in the corpus folder: copied into m.mtl, the OBJ names m.mtl only */
    snprintf(p2, sizeof p2, "%s/m.mtl", T);
    BK_EXPECT(!contains(p1, "CornellBox-Original.mtl") && !contains(p1, "mtllib /") && contains(p1, "mtllib m.mtl") &&
              contains(p1, "usemtl vox_"));
    BK_EXPECT(contains(p2, "CornellBox-Original.mtl") && contains(p2, "newmtl leftWall") &&
              contains(p2, "newmtl vox_"));
    BK_EXPECT(contains(p3, "\"scenes\": [") && contains(p3, "chr_knight.vox\"]"));

    /* --mesh-out naming the second scene: refused before any work, the scene untouched */
    snprintf(p1, sizeof p1, "%s/room.obj", T);
    snprintf(args, sizeof args, "cp '%s' '%s' && cp '%s' '%s/'", cb_obj, p1, cb_mtl, T);
    BK_EXPECT(system(args) == 0);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s/x.png' --mesh-out '%s'", knight, p1, T, p1);
    BK_EXPECTF(run(err, sizeof err, args) == 2 && strstr(err, "input"), "%s", err);
    BK_EXPECT(same_file(p1, cb_obj));
    snprintf(p2, sizeof p2, "%s/x.png", T);
    BK_EXPECT(!exists(p2));
    /* --mesh-out whose MTL would replace the room's MTL */
    snprintf(p3, sizeof p3, "%s/CornellBox-Original.mtl", T);
    snprintf(args, sizeof args, "'%s' '%s' -o '%s/x.png' --mesh-out '%s/CornellBox-Original.obj'", p1, knight, T, T);
    BK_EXPECTF(run(err, sizeof err, args) == 2 && strstr(err, "CornellBox-Original.mtl"), "%s", err);
    BK_EXPECT(same_file(p3, cb_mtl));
    BK_EXPECT(!exists(p2));

    /* pages: one page refuses with the count; --pages auto writes that many */
    snprintf(args, sizeof args, "'%s' -o '%s/p.png' --size 256 --spp 2", multi, T);
    BK_EXPECT(run(err, sizeof err, args) != 0);
    unsigned    need = 0;
    const char *m = strstr(err, "needs ");
    BK_EXPECTF(m && sscanf(m, "needs %u pages of 256x256", &need) == 1 && need > 1 &&
                   strstr(err, "at 2 texels per voxel; use --pages auto or a larger --size"),
               "%s", err);
    snprintf(args, sizeof args,
             "'%s' -o '%s/p.png' --size 256 --spp 2 --pages auto --stats '%s/p.json' --mesh-out '%s/p.obj'", multi, T,
             T, T);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);
    for (unsigned k = 0; k < need; ++k) {
        snprintf(p1, sizeof p1, "%s/p-%u.png", T, k);
        BK_EXPECTF(exists(p1), "%s missing", p1);
    }
    snprintf(p1, sizeof p1, "%s/p-%u.png", T, need);
    snprintf(p2, sizeof p2, "%s/p.png", T);
    BK_EXPECT(!exists(p1) && !exists(p2));
    snprintf(p1, sizeof p1, "%s/p.json", T);
    char want[64];
    snprintf(want, sizeof want, "\"pages\": { \"count\": %u", need);
    BK_EXPECTF(contains(p1, want) && contains(p1, "\"voxel_instances\": [") && contains(p1, "\"page\": 1 }"), "%s", p1);
    BK_EXPECTF(!contains(p1, "}\n      {") && !contains(p1, "} {"), "%s: list items without commas", p1);
    snprintf(p1, sizeof p1, "%s/p.obj", T);
    BK_EXPECT(contains(p1, " page_0\n") && contains(p1, " page_1\n"));

    snprintf(args, sizeof args, "rm -rf '%s'", T);
    if (!bk_test_failures) BK_EXPECT(system(args) == 0);
    BK_TEST_DONE();
}
