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
    const bk_json *prims = bk_json_get(bk_json_at(bk_json_get(g->json, "meshes"), 0), "primitives");
    size_t         total = 0;
    for (size_t i = 0; i < bk_test_count(prims); ++i) {
        size_t n = 0;
        bk_test_gltf_indices(g, i, &n);
        total += n;
    }
    return total / 3;
}

static const char *lightmap_uri(const bk_test_gltf *g, size_t material)
{
    const bk_json *m = bk_json_at(bk_json_get(g->json, "materials"), material);
    return bk_json_str(bk_json_get(bk_json_get(m, "extras"), "baker_lightmap"), "uri");
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
            BK_EXPECTF(u && !strcmp(u, "../lm.png"), "lightmap named %s", u ? u : "nowhere");
            /* the light: Ke (17, 12, 4) */
            const bk_json *mats = bk_json_get(g.json, "materials");
            int            lamp = 0;
            for (size_t i = 0; i < bk_test_count(mats); ++i) {
                const bk_json *es =
                    bk_json_get(bk_json_get(&mats->items[i], "extensions"), "KHR_materials_emissive_strength");
                if (es) lamp += bk_json_num(es, "emissiveStrength", 0) == 17;
            }
            BK_EXPECTF(lamp == 1, "%d materials with emissive strength 17", lamp);
            for (uint32_t v = 0; v < g.nv; ++v)
                if (!(g.uv1[2 * v] >= 0 && g.uv1[2 * v] <= 1 && g.uv1[2 * v + 1] >= 0 && g.uv1[2 * v + 1] <= 1)) {
                    BK_EXPECTF(0, "TEXCOORD_1 of vertex %u outside [0,1]", v);
                    break;
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
