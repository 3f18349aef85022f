/* cpu_bake_vox.c - the baker program on voxel scenes.
 * Files written here (bk_test_vox_write.h), always: a .vox with MATL chunks for ids 1..256 (as
 * MagicaVoxel writes them) and a model whose charts exceed a --size 512 page, refused on one page
 * with the message naming --pages auto and baked on several with it (OBJ groups page_K, --stats
 * pages [first, last]); a 3x5x9 block baked to .glb stands upright (POSITION's extent along Y is
 * the model's z size: the scene frame is Y-up).
 * Corpus .vox files (skipped without them): chr_knight upright the same way; every .vox of vox/
 * and vox-mmmm/ bakes (slab6_vox_test.vox refused); a .vox bake with --mesh-out (OBJ + MTL) and
 * --stats, that OBJ baked again with --uv file, an OBJ and a .vox baked together (the OBJ's MTL,
 * from another folder, copied into the MTL), output clashes with the second scene and with an
 * input MTL (refused before any work, files untouched), the refusal that counts pages, and
 * --pages auto writing NAME-K.png with the pages in --stats and --mesh-out. */
#include "loader.h"
#include "scene.h"
#include "bk_test.h"
#include "bk_test_gltf.h"
#include "bk_test_run.h"
#include "bk_test_vox_write.h"

#include <dirent.h>

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

/* F (bk_test_vox_write.h) into DIR/name; returns the path (static). */
static const char *write_vox(const char *name, int version)
{
    static char path[600];
    vox_bytes(version);
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(F.p, 1, F.n, f) != F.n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

/* Bakes the .vox at path (one model, placed unrotated) to DIR/up.glb; expects POSITION's extent
 * (x, y, z) = (sx, sz, sy) for voxels spanning (sx, sy, sz) in MagicaVoxel's frame: z up in the
 * file, Y up in the scene. */
static void expect_upright(const char *path)
{
    char     err[8192], args[2048], glb[600];
    bk_scene s;
    int      size[3] = { 0, 0, 0 };
    if (bk_scene_load(path, &s, err, sizeof err) != 0) {
        BK_EXPECTF(0, "%s", err);
        return;
    }
    static const int8_t yup[9] = { 1, 0, 0, 0, 0, 1, 0, -1, 0 }; /* the file's identity, seen Y-up */
    BK_EXPECTF(s.vox_instance_count == 1 && memcmp(s.vox_instances[0].m, yup, 9) == 0, "%s: not one unrotated model",
               path);
    const bk_vox_model *md = &s.vox_models[0];
    for (int a = 0; a < 3; ++a) {
        int lo = 256, hi = -1;
        for (uint32_t i = 0; i < md->voxel_count; ++i) {
            int c = md->xyzi[4 * i + a];
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        size[a] = hi - lo + 1;
    }
    bk_scene_free(&s);
    snprintf(glb, sizeof glb, "%s/up.glb", tmpdir);
    snprintf(args, sizeof args, "'%s' -o '%s/up.png' --mesh-out '%s' --texels-per-voxel 1 --spp 1 --backend cpu", path,
             tmpdir, glb);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);
    bk_test_gltf g;
    if (bk_test_gltf_load(glb, &g) != 0) return;
    float lo[3] = { 1e30f, 1e30f, 1e30f }, hi[3] = { -1e30f, -1e30f, -1e30f };
    uint32_t nv = 0;
    for (size_t i = 0; i < g.n_prims; ++i)
        for (uint32_t v = 0; g.prims[i].pos && v < g.prims[i].nv; ++v, ++nv)
            for (int a = 0; a < 3; ++a) {
                lo[a] = fminf(lo[a], g.prims[i].pos[3 * v + a]);
                hi[a] = fmaxf(hi[a], g.prims[i].pos[3 * v + a]);
            }
    const float want[3] = { (float)size[0], (float)size[2], (float)size[1] };
    BK_EXPECTF(nv > 0 && hi[0] - lo[0] == want[0] && hi[1] - lo[1] == want[1] && hi[2] - lo[2] == want[2],
               "%s: glTF extent %g x %g x %g, want %g x %g x %g (Y up = the model's z)", path, (double)(hi[0] - lo[0]),
               (double)(hi[1] - lo[1]), (double)(hi[2] - lo[2]), (double)want[0], (double)want[1], (double)want[2]);
    printf("upright: %s: voxels %d x %d x %d (x y z), glTF extent %g x %g x %g (y = MagicaVoxel z %d)\n", path, size[0],
           size[1], size[2], (double)(hi[0] - lo[0]), (double)(hi[1] - lo[1]), (double)(hi[2] - lo[2]), size[2]);
    bk_test_gltf_free(&g);
}

/* The written files: MATL 1..256 with a model larger than a page; a block standing up. */
static void test_written(void)
{
    const char *T = tmpdir;
    char        err[8192], args[4096], p1[600];
    /* a 96 x 96 checkerboard one voxel high: 4,608 voxels touching only at edges, 27,648 quads of
     * 2 x 2 texels, more than a 512 x 512 page holds with their padding */
    enum { SIDE = 96 };
    uint8_t *v = malloc(4 * SIDE * SIDE / 2);
    int      n = 0;
    for (int y = 0; y < SIDE; ++y)
        for (int x = 0; x < SIDE; ++x)
            if ((x + y) % 2 == 0) {
                uint8_t *q = v + 4 * n++;
                q[0] = (uint8_t)x, q[1] = (uint8_t)y, q[2] = 0, q[3] = (uint8_t)(1 + (x / 8 + y / 8) % 200);
            }
    uint32_t pal[256];
    for (int i = 0; i < 256; ++i)
        pal[i] = 0xff000000u | (uint32_t)(i * 37 & 255) << 16 | (uint32_t)(i * 91 & 255) << 8 | 0x80;
    c_model(SIDE, SIDE, 1, n, v);
    free(v);
    c_rgba(pal);
    c_matl_all(7, "1");
    char big[600];
    snprintf(big, sizeof big, "%s", write_vox("big.vox", 200));
    /* one page: refused, naming the instance and --pages auto */
    snprintf(args, sizeof args, "'%s' -o '%s/b.png' --size 512 --spp 1 --backend cpu", big, T);
    BK_EXPECTF(run(err, sizeof err, args) == 1 &&
                   strstr(err, "the charts of voxel instance 0 do not fit one 512x512 page at 2 texels per voxel") &&
                   strstr(err, "use --pages auto"),
               "%s", err);
    snprintf(p1, sizeof p1, "%s/b.png", T);
    BK_EXPECT(!exists(p1));
    /* --pages auto: the instance over consecutive pages */
    snprintf(args, sizeof args,
             "'%s' -o '%s/b.png' --size 512 --spp 1 --bounces 1 --backend cpu --pages auto --stats '%s/b.json' "
             "--mesh-out '%s/b.obj'",
             big, T, T, T);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "%s", err);
    snprintf(p1, sizeof p1, "%s/b.json", T);
    char       *js = slurp(p1);
    unsigned    pages = 0, first = 9, last = 0;
    const char *m = js ? strstr(js, "\"pages\": { \"count\": ") : NULL;
    BK_EXPECTF(m && sscanf(m, "\"pages\": { \"count\": %u", &pages) == 1 && pages > 1, "%s: %u pages", p1, pages);
    m = js ? strstr(js, "{ \"instance\": 0, \"page\": ") : NULL;
    BK_EXPECTF(m && sscanf(m, "{ \"instance\": 0, \"page\": %u, \"pages\": [%u, %u]", &first, &first, &last) == 3 &&
                   first == 0 && last + 1 == pages,
               "%s: instance 0 on pages %u..%u of %u", p1, first, last, pages);
    free(js);
    for (unsigned k = 0; k < pages; ++k) {
        char g[64];
        snprintf(p1, sizeof p1, "%s/b-%u.png", T, k);
        BK_EXPECTF(exists(p1), "%s missing", p1);
        snprintf(p1, sizeof p1, "%s/b.obj", T);
        snprintf(g, sizeof g, "g vox_instance_0 page_%u\n", k);
        BK_EXPECTF(contains(p1, g), "%s: no '%s'", p1, g);
    }
    printf("big.vox: 96x96 checkerboard, %d voxels: %u pages of 512x512 with --pages auto\n", n, pages);

    /* a 3 x 5 x 9 block (z the longest) stands up along Y */
    v = malloc(4 * 3 * 5 * 9);
    n = 0;
    for (int z = 0; z < 9; ++z)
        for (int y = 0; y < 5; ++y)
            for (int x = 0; x < 3; ++x) {
                uint8_t *q = v + 4 * n++;
                q[0] = (uint8_t)x, q[1] = (uint8_t)y, q[2] = (uint8_t)z, q[3] = 1;
            }
    c_model(3, 5, 9, n, v);
    free(v);
    expect_upright(write_vox("block.vox", 150));
}

/* Every .vox of a corpus folder bakes (one page or as many as it needs). */
static void bake_folder(const char *rel)
{
    char dir[700], path[1400], err[8192], args[4096];
    snprintf(dir, sizeof dir, "%s/%s", bk_test_scenes_dir(), rel);
    DIR *d = opendir(dir);
    if (!d) {
        printf("%s: not found, not baked\n", dir);
        return;
    }
    int            files = 0, baked = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 4, ".vox")) continue;
        files++;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        snprintf(args, sizeof args,
                 "'%s' -o '%s/all.png' --texels-per-voxel 1 --size 512 --pages auto --spp 1 --bounces 1 --backend cpu",
                 path, tmpdir);
        int rc = run(err, sizeof err, args);
        if (!strcmp(e->d_name, "slab6_vox_test.vox")) {
            BK_EXPECTF(rc == 1 && strstr(err, "not a MagicaVoxel file"), "%s: %s", path, err);
            continue;
        }
        BK_EXPECTF(rc == 0, "%s: %s", path, err);
        baked += rc == 0;
    }
    closedir(d);
    BK_EXPECTF(files > 0, "%s: no .vox", dir);
    printf("%s: %d .vox files, %d baked\n", dir, files, baked);
}

int main(void)
{
    char knight[512], multi[512], cb_obj[512], cb_mtl[512];
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_cpu_vox_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_written();
    free(K.p);
    free(F.p);
    snprintf(knight, sizeof knight, "%s/vox/chr_knight.vox", bk_test_scenes_dir());
    if (access(knight, R_OK) != 0) {
        if (bk_test_failures) BK_TEST_DONE();
        BK_TEST_SKIP("corpus scene %s not found (the written files passed)", knight);
    }
    bk_test_scene("vox/test_multiple_model_scene.vox", multi, sizeof multi);
    bk_test_scene("cornell-box/CornellBox-Original.obj", cb_obj, sizeof cb_obj);
    bk_test_scene("cornell-box/CornellBox-Original.mtl", cb_mtl, sizeof cb_mtl);
    const char *T = tmpdir;
    char        err[8192], args[4096], p1[600], p2[600], p3[600];

    /* chr_knight (voxels 18 x 8 x 15 in its 20 x 21 x 20 model, z up in the file) stands 15 tall */
    expect_upright(knight);
    bake_folder("vox");
    bake_folder("vox-mmmm");

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
