/* cpu_gltf_bake.c - the baker program with --mesh-out FILE.glb|.gltf on corpus scenes (skipped
 * without them): the Cornell box as .glb and .gltf (read back and checked by bk_test_gltf.h: one
 * primitive per material, 36 triangles, the lightmap PNG named relative to the mesh, Ke above 1
 * as emissive strength), a voxel model as .glb (no MTL written beside it, every quad's two
 * triangles present), --pages auto (a 41-model scene) naming each page's PNG, and an unknown extension refused
 * before any work with exit status 2. */
#include "bk_test.h"
#include "bk_test_run.h"
#include "bk_test_gltf.h"

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

static size_t triangles(const bk_test_gltf *g)
{
    size_t total = 0;
    for (size_t i = 0; i < g->n_prims; ++i) total += g->prims[i].n_idx;
    return total / 3;
}

static const char *lightmap_uri(const bk_test_gltf *g, size_t material)
{
    const bk_json *m = bk_json_at(bk_json_get(g->json, "materials"), material);
    return bk_json_str(bk_json_get(bk_json_get(m, "extras"), "baker_lightmap"), "uri");
}

/* The lightmap image material 0 names holds the bytes of the PNG file the bake wrote. */
static int lightmap_embedded(const bk_test_gltf *g, const char *png)
{
    const bk_json *m = bk_json_at(bk_json_get(g->json, "materials"), 0);
    double         i = bk_json_num(bk_json_get(bk_json_get(m, "extras"), "baker_lightmap"), "image", -1);
    size_t         n = 0;
    const uint8_t *d = i >= 0 ? bk_test_gltf_image(g, (size_t)i, &n) : NULL;
    FILE          *f = fopen(png, "rb");
    uint8_t       *want = malloc(n + 1);
    size_t         wn = f && want ? fread(want, 1, n + 1, f) : 0;
    if (f) fclose(f);
    int same = d && wn == n && !memcmp(d, want, n);
    free(want);
    return same;
}

/* Whether a node of that name exists. */
static int has_node(const bk_test_gltf *g, const char *name)
{
    const bk_json *nodes = bk_json_get(g->json, "nodes");
    for (size_t n = 0; n < bk_test_count(nodes); ++n)
        if (bk_test_gltf_node_name(g, n) && !strcmp(bk_test_gltf_node_name(g, n), name)) return 1;
    return 0;
}

int main(void)
{
    char cornell[1024], knight[1024], multi[1024], args[4096], err[4096], p[600];
    bk_test_scene("cornell-box/CornellBox-Original.obj", cornell, sizeof cornell);
    bk_test_scene("vox/chr_knight.vox", knight, sizeof knight);
    bk_test_scene("vox/test_multiple_model_scene.vox", multi, sizeof multi);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_gltf_bake_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(p, sizeof p, "%s/mesh", tmpdir);
    mkdir(p, 0755);

    const char *ext[2] = { "glb", "gltf" };
    for (int e = 0; e < 2; ++e) {
        snprintf(args, sizeof args, "'%s' -o '%s/lm.png' --mesh-out '%s/mesh/c.%s' --backend cpu --size 64 --spp 1",
                 cornell, tmpdir, tmpdir, ext[e]);
        BK_EXPECTF(run(err, sizeof err, args) == 0, "cornell -> .%s: %s", ext[e], err);
        snprintf(p, sizeof p, "%s/mesh/c.%s", tmpdir, ext[e]);
        bk_test_gltf g;
        if (bk_test_gltf_load(p, &g) == 0) {
            BK_EXPECT(g.glb == (e == 0));
            BK_EXPECTF(triangles(&g) == 36, "%zu triangles", triangles(&g));
            BK_EXPECTF(bk_test_count(bk_json_get(g.json, "materials")) == 8, "%zu materials",
                       bk_test_count(bk_json_get(g.json, "materials")));
            const char *u = lightmap_uri(&g, 0);
            BK_EXPECTF(!u, "lightmap named %s: a path out of the glTF's folder", u);
            snprintf(p, sizeof p, "%s/lm.png", tmpdir);
            BK_EXPECTF(lightmap_embedded(&g, p), "the lightmap in the file is not lm.png");
            /* one node per o group of the Cornell box (floor, ceiling, ... light) */
            BK_EXPECTF(bk_test_count(bk_json_get(g.json, "nodes")) > 1 && has_node(&g, "light"), "%zu nodes",
                       bk_test_count(bk_json_get(g.json, "nodes")));
            /* the light: Ke (17, 12, 4), recorded; its lit page shows it */
            const bk_json *mats = bk_json_get(g.json, "materials");
            int            lamp = 0;
            for (size_t i = 0; i < bk_test_count(mats); ++i) {
                const bk_json *em = bk_json_get(bk_json_get(&mats->items[i], "extras"), "baker_emission");
                if (bk_test_count(em) == 3) lamp += em->items[0].num == 17;
            }
            BK_EXPECTF(lamp == 1, "%d materials with emission 17", lamp);
            for (size_t i = 0; i < g.n_prims; ++i)
                for (uint32_t v = 0; v < g.prims[i].nv; ++v) {
                    const float *uv1 = g.prims[i].uv1;
                    if (!(uv1[2 * v] >= 0 && uv1[2 * v] <= 1 && uv1[2 * v + 1] >= 0 && uv1[2 * v + 1] <= 1)) {
                        BK_EXPECTF(0, "TEXCOORD_1 of vertex %u outside [0,1]", v);
                        break;
                    }
                }
        }
        bk_test_gltf_free(&g);
    }

    /* voxels: the merged quads, no MTL beside the .glb */
    snprintf(args, sizeof args, "'%s' -o '%s/k.png' --mesh-out '%s/k.glb' --backend cpu --texels-per-voxel 1 --spp 1",
             knight, tmpdir, tmpdir);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "knight -> .glb: %s", err);
    snprintf(p, sizeof p, "%s/k.mtl", tmpdir);
    BK_EXPECT(!exists(p));
    snprintf(p, sizeof p, "%s/k.glb", tmpdir);
    bk_test_gltf g;
    if (bk_test_gltf_load(p, &g) == 0) {
        BK_EXPECTF(triangles(&g) > 100 && triangles(&g) % 2 == 0, "%zu triangles", triangles(&g));
        const char *u = lightmap_uri(&g, 0);
        BK_EXPECTF(u && !strcmp(u, "k.png"), "lightmap named %s", u ? u : "nowhere");
        snprintf(p, sizeof p, "%s/k.png", tmpdir);
        BK_EXPECTF(lightmap_embedded(&g, p), "the lightmap in the file is not k.png");
        BK_EXPECTF(has_node(&g, "vox_instance_0"), "no node for the knight's voxel instance");
    }
    bk_test_gltf_free(&g);

    /* pages: each material names its own page's PNG */
    snprintf(args, sizeof args,
             "'%s' -o '%s/pg.png' --mesh-out '%s/pg.glb' --backend cpu --size 256 --pages auto --spp 1", multi, tmpdir,
             tmpdir);
    BK_EXPECTF(run(err, sizeof err, args) == 0, "knight, pages -> .glb: %s", err);
    snprintf(p, sizeof p, "%s/pg.glb", tmpdir);
    if (bk_test_gltf_load(p, &g) == 0) {
        const bk_json *mats = bk_json_get(g.json, "materials");
        int            page_max = -1, named = 1;
        for (size_t i = 0; i < bk_test_count(mats); ++i) {
            const bk_json *ex = bk_json_get(bk_json_get(&mats->items[i], "extras"), "baker_lightmap");
            int            pg = (int)bk_json_num(ex, "page", -1);
            char           want[32];
            snprintf(want, sizeof want, "pg-%d.png", pg);
            named &= pg >= 0 && bk_json_str(ex, "uri") && !strcmp(bk_json_str(ex, "uri"), want);
            if (pg > page_max) page_max = pg;
        }
        BK_EXPECTF(named, "a material names another page's lightmap");
        BK_EXPECTF(page_max >= 1, "expected several pages, last page %d", page_max);
        snprintf(p, sizeof p, "%s/pg-%d.png", tmpdir, page_max);
        BK_EXPECT(exists(p));
    }
    bk_test_gltf_free(&g);

    /* an unknown mesh format: refused before any work */
    snprintf(args, sizeof args, "'%s' -o '%s/x.png' --mesh-out '%s/x.fbx' --backend cpu", cornell, tmpdir, tmpdir);
    BK_EXPECT(run(err, sizeof err, args) == 2 && strstr(err, ".gltf or .glb"));
    snprintf(p, sizeof p, "%s/x.png", tmpdir);
    BK_EXPECT(!exists(p));

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    BK_TEST_DONE();
}
