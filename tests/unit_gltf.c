/* unit_gltf.c - the glTF writer (gltf.h) on a small OBJ scene with both UV sets, normals on some
 * faces only, emissive and textured materials: the .glb and the .gltf are read back and checked
 * against the spec (bk_test_gltf.h) and against the scene: every triangle's positions, lightmap
 * UVs (TEXCOORD_1 = the atlas's, unflipped), texture UVs (TEXCOORD_0 = vt with v flipped, zeros
 * without vt) and normals, materials (Kd, Ke with emissive strength), image URIs relative to the
 * output (percent-encoded), the lightmap as occlusionTexture + extras, pages as separate
 * materials, and a refused write that leaves nothing behind. */
#include "bk_test.h"
#include "bk_test_gltf.h"

#include "atlas.h"
#include "gltf.h"
#include "loader.h"
#include "scene.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void put(const char *dir, const char *name, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

static const char *obj_text = "mtllib m.mtl\n"
                              "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\n"
                              "vt 0 0\nvt 1 0\nvt 1 1\nvt 0.25 0.75\n"
                              "vn 0 0 2\n"                              /* not unit: the writer normalises it */
                              "f 4 5 6\n"                               /* before any usemtl: the default material */
                              "usemtl red\nf 1/1/1 2/2/1 3/3/1 4/4/1\n" /* vt and vn: a quad, two triangles */
                              "usemtl lamp\nf 1 2 6 5\n"                /* neither: flat normals, TEXCOORD_0 zeros */
                              "usemtl tex\nf 2/2 3/3 6/4\n"             /* vt only */
                              "usemtl tga\nf 3 4 5\n"
                              "usemtl red\nf 1 3 5\n"; /* red again: same primitive, file order kept */

static const char *mtl_text = "newmtl red\nKd 0.8 0.1 0.1\n"
                              "newmtl lamp\nKd 0.5 0.5 0.5\nKe 4 2 1\n"
                              "newmtl tex\nKd 1 1 1\nmap_Kd tex a.png\n"
                              "newmtl tga\nKd 0.3 0.3 0.3\nmap_Kd wood.tga\n"
                              "newmtl dim\nKd 0.2 0.2 0.2\nKe 0.5 0.25 0\n"; /* unused: not written */

static int find_material(const bk_test_gltf *g, const char *name)
{
    const bk_json *m = bk_json_get(g->json, "materials");
    for (size_t i = 0; i < bk_test_count(m); ++i)
        if (bk_json_str(&m->items[i], "name") && !strcmp(bk_json_str(&m->items[i], "name"), name)) return (int)i;
    return -1;
}

/* The image URI a texture index names. */
static const char *tex_uri(const bk_test_gltf *g, double tex)
{
    const bk_json *t = bk_json_at(bk_json_get(g->json, "textures"), (size_t)tex);
    return bk_json_str(bk_json_at(bk_json_get(g->json, "images"), (size_t)bk_json_num(t, "source", -1)), "uri");
}

/* Every triangle of s, in file order, against the primitives (found by material name). */
static void check_geometry(const bk_test_gltf *g, const bk_scene *s, const bk_atlas *a, int pages)
{
    const bk_json *prims = bk_json_get(bk_json_at(bk_json_get(g->json, "meshes"), 0), "primitives");
    size_t         np = bk_test_count(prims), *cursor = calloc(np, sizeof(size_t)), total = 0;
    for (size_t i = 0; i < np; ++i) {
        size_t n = 0;
        bk_test_gltf_indices(g, i, &n);
        total += n;
    }
    BK_EXPECTF(total == 3 * (size_t)s->tri_count, "%zu indices for %u triangles", total, s->tri_count);
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        uint32_t    m = s->tri_material ? s->tri_material[t] : BK_NONE;
        char        name[200];
        const char *base = m < s->material_count ? s->materials[m].name : "default";
        if (pages > 1) snprintf(name, sizeof name, "%s (page %u)", base, a->tri_page[t]);
        else snprintf(name, sizeof name, "%s", base);
        int    mi = find_material(g, name);
        size_t pi = np;
        for (size_t i = 0; i < np; ++i)
            if (bk_json_num(&prims->items[i], "material", -1) == mi) pi = i;
        BK_EXPECTF(mi >= 0 && pi < np, "triangle %u: no primitive for material %s", t, name);
        if (mi < 0 || pi >= np) continue;
        size_t          n = 0;
        const uint32_t *idx = bk_test_gltf_indices(g, pi, &n);
        BK_EXPECT(idx && cursor[pi] + 3 <= n);
        if (!idx || cursor[pi] + 3 > n) continue;
        const uint32_t *c = idx + cursor[pi];
        cursor[pi] += 3;
        const float *p0 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t];
        const float *p1 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + 1];
        const float *p2 = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + 2];
        float        e1[3] = { p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2] },
              e2[3] = { p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2] };
        float fn[3] = { e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0] };
        float fl = sqrtf(fn[0] * fn[0] + fn[1] * fn[1] + fn[2] * fn[2]);
        int   has_vn = s->tri_vn && s->tri_vn[3 * (size_t)t] != BK_NONE;
        for (int k = 0; k < 3; ++k) {
            size_t       cn = 3 * (size_t)t + k;
            uint32_t     v = c[k];
            const float *sp = s->positions + 3 * (size_t)s->tri_v[cn];
            BK_EXPECTF(!memcmp(g->pos + 3 * (size_t)v, sp, 12), "triangle %u corner %d: position", t, k);
            BK_EXPECTF(g->uv1[2 * (size_t)v] == a->uv[2 * cn] && g->uv1[2 * (size_t)v + 1] == a->uv[2 * cn + 1],
                       "triangle %u corner %d: TEXCOORD_1 (%g, %g), atlas (%g, %g)", t, k,
                       (double)g->uv1[2 * (size_t)v], (double)g->uv1[2 * (size_t)v + 1], (double)a->uv[2 * cn],
                       (double)a->uv[2 * cn + 1]);
            uint32_t vt = s->tri_vt ? s->tri_vt[cn] : BK_NONE;
            float    u0 = vt != BK_NONE ? s->texcoords[2 * (size_t)vt] : 0.0f,
                  v0 = vt != BK_NONE ? 1.0f - s->texcoords[2 * (size_t)vt + 1] : 0.0f;
            BK_EXPECTF(g->uv0[2 * (size_t)v] == u0 && g->uv0[2 * (size_t)v + 1] == v0,
                       "triangle %u corner %d: TEXCOORD_0 (%g, %g), want (%g, %g)", t, k, (double)g->uv0[2 * (size_t)v],
                       (double)g->uv0[2 * (size_t)v + 1], (double)u0, (double)v0);
            const float *n = g->nrm + 3 * (size_t)v;
            if (has_vn) {
                const float *sn = s->normals + 3 * (size_t)s->tri_vn[cn];
                float        sl = sqrtf(sn[0] * sn[0] + sn[1] * sn[1] + sn[2] * sn[2]);
                BK_EXPECTF(fabsf(n[0] - sn[0] / sl) < 1e-6f && fabsf(n[1] - sn[1] / sl) < 1e-6f &&
                               fabsf(n[2] - sn[2] / sl) < 1e-6f,
                           "triangle %u corner %d: NORMAL is not the file's vn", t, k);
            } else {
                float d = (n[0] * fn[0] + n[1] * fn[1] + n[2] * fn[2]) / fl;
                BK_EXPECTF(d > 0.99999f, "triangle %u corner %d: flat NORMAL off by cos %g", t, k, (double)d);
            }
        }
    }
    for (size_t i = 0; i < np; ++i) {
        size_t n = 0;
        bk_test_gltf_indices(g, i, &n);
        BK_EXPECTF(cursor[i] == n, "primitive %zu: %zu of %zu indices matched", i, cursor[i], n);
    }
    free(cursor);
}

static void check_materials(const bk_test_gltf *g, int pages)
{
    const bk_json *mats = bk_json_get(g->json, "materials");
    const char    *want[5] = { "default", "red", "lamp", "tex", "tga" };
    /* with the test's two pages (triangle t on page t % 2) default and tga are on page 0 only,
     * tex on page 1 only */
    BK_EXPECTF(bk_test_count(mats) == (size_t)(pages > 1 ? 7 : 5), "%zu materials", bk_test_count(mats));
    for (int p = 0; p < pages; ++p)
        for (int k = 0; k < 5; ++k) {
            char name[64];
            if (pages > 1) snprintf(name, sizeof name, "%s (page %d)", want[k], p);
            else snprintf(name, sizeof name, "%s", want[k]);
            int mi = find_material(g, name);
            if (pages > 1 && ((p == 1 && (k == 0 || k == 4)) || (p == 0 && k == 3))) {
                BK_EXPECTF(mi < 0, "%s: no triangles", name);
                continue;
            }
            BK_EXPECTF(mi >= 0, "material %s missing", name);
            if (mi < 0) continue;
            const bk_json *m = &mats->items[mi], *pbr = bk_json_get(m, "pbrMetallicRoughness");
            const bk_json *bc = bk_json_get(pbr, "baseColorFactor");
            float          kd[5][3] = {
                         { 0.8f, 0.8f, 0.8f }, { 0.8f, 0.1f, 0.1f }, { 0.5f, 0.5f, 0.5f }, { 1, 1, 1 }, { 0.3f, 0.3f, 0.3f }
            };
            BK_EXPECT(bk_test_count(bc) == 4);
            for (int c = 0; c < 3 && bk_test_count(bc) == 4; ++c)
                BK_EXPECTF((float)bc->items[c].num == kd[k][c], "%s: Kd[%d] %g", name, c, bc->items[c].num);
            /* the lightmap: occlusionTexture on TEXCOORD_1 and the extras, both naming this page's PNG */
            char lm[32];
            if (pages > 1) snprintf(lm, sizeof lm, "../lm-%d.png", p);
            else snprintf(lm, sizeof lm, "../lm.png");
            const bk_json *oc = bk_json_get(m, "occlusionTexture"),
                          *ex = bk_json_get(bk_json_get(m, "extras"), "baker_lightmap");
            BK_EXPECTF(oc && bk_json_num(oc, "texCoord", -1) == 1, "%s: occlusionTexture on TEXCOORD_1", name);
            BK_EXPECTF(oc && tex_uri(g, bk_json_num(oc, "index", -1)) &&
                           !strcmp(tex_uri(g, bk_json_num(oc, "index", -1)), lm),
                       "%s: lightmap texture is %s, want %s", name,
                       oc ? tex_uri(g, bk_json_num(oc, "index", -1)) : "none", lm);
            BK_EXPECTF(ex && bk_json_num(ex, "texCoord", -1) == 1 && bk_json_num(ex, "page", -1) == p &&
                           bk_json_str(ex, "uri") && !strcmp(bk_json_str(ex, "uri"), lm) &&
                           bk_json_num(ex, "texture", -1) == bk_json_num(oc, "index", -2),
                       "%s: extras.baker_lightmap", name);
            /* surfaces that do not emit show the baked light: emissive = Kd x the lightmap */
            const bk_json *et = bk_json_get(m, "emissiveTexture"), *ef = bk_json_get(m, "emissiveFactor");
            BK_EXPECTF((et != NULL) == (k != 2), "%s: emissiveTexture %s", name, et ? "on the lamp" : "missing");
            if (et) {
                BK_EXPECTF(bk_json_num(et, "texCoord", -1) == 1 &&
                               bk_json_num(et, "index", -1) == bk_json_num(oc, "index", -2),
                           "%s: emissiveTexture is not the lightmap on TEXCOORD_1", name);
                BK_EXPECT(bk_test_count(ef) == 3);
                for (int c = 0; c < 3 && bk_test_count(ef) == 3; ++c)
                    BK_EXPECTF((float)ef->items[c].num == (float)bc->items[c].num,
                               "%s: emissiveFactor[%d] %g is not Kd", name, c, ef->items[c].num);
            }
            const bk_json *bt = bk_json_get(pbr, "baseColorTexture");
            if (k == 3) {
                BK_EXPECTF(bt && bk_json_num(bt, "texCoord", -1) == 0 && tex_uri(g, bk_json_num(bt, "index", -1)) &&
                               !strcmp(tex_uri(g, bk_json_num(bt, "index", -1)), "../scene/tex%20a.png"),
                           "%s: baseColorTexture %s", name, bt ? tex_uri(g, bk_json_num(bt, "index", -1)) : "none");
            } else BK_EXPECTF(!bt, "%s: unexpected baseColorTexture", name);
            if (k == 4) {
                const char *lost = bk_json_str(bk_json_get(m, "extras"), "baker_map_Kd");
                BK_EXPECTF(lost && !strcmp(lost, "wood.tga"), "%s: the TGA map is named in extras", name);
            }
            const bk_json *es = bk_json_get(bk_json_get(m, "extensions"), "KHR_materials_emissive_strength");
            if (k == 2) {
                BK_EXPECTF(bk_test_count(ef) == 3 && ef->items[0].num == 1 && ef->items[1].num == 0.5 &&
                               ef->items[2].num == 0.25 && bk_json_num(es, "emissiveStrength", -1) == 4,
                           "%s: Ke (4, 2, 1) as (1, 0.5, 0.25) x 4", name);
            } else BK_EXPECTF(!es, "%s: not emissive", name);
        }
    /* images: each lightmap page once, the PNG map once; the TGA is not a glTF image */
    BK_EXPECTF(bk_test_count(bk_json_get(g->json, "images")) == (size_t)pages + 1, "%zu images",
               bk_test_count(bk_json_get(g->json, "images")));
}

int main(void)
{
    char dir[] = "/tmp/bk_gltf_XXXXXX", sub[1100], out[1100], p[1200], err[1024];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(sub, sizeof sub, "%s/scene", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    mkdir(sub, 0755);
    mkdir(out, 0755);
    put(sub, "s.obj", obj_text);
    put(sub, "m.mtl", mtl_text);
    put(sub, "tex a.png", "not read: only its name matters");
    put(sub, "wood.tga", "x");

    bk_scene s;
    snprintf(p, sizeof p, "%s/s.obj", sub);
    if (bk_scene_load_obj(p, &s, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = 64;
    bk_atlas a;
    if (bk_atlas_build(&s, &o, &a, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }

    const char *lm[2] = { NULL, NULL };
    char        lm0[1100], lm1[1100];
    snprintf(lm0, sizeof lm0, "%s/lm.png", dir); /* needs not exist yet: written with the mesh */
    lm[0] = lm0;
    bk_gltf_opts go;
    bk_gltf_opts_default(&go);
    go.lightmaps = lm;
    const char *ext[2] = { "glb", "gltf" };
    for (int e = 0; e < 2; ++e) {
        snprintf(p, sizeof p, "%s/s.%s", out, ext[e]);
        BK_EXPECTF(bk_gltf_write(p, &s, &a, &go, err, sizeof err) == 0, "%s", err);
        bk_test_gltf g;
        if (bk_test_gltf_load(p, &g) == 0) {
            BK_EXPECT(g.glb == (e == 0));
            check_geometry(&g, &s, &a, 1);
            check_materials(&g, 1);
            /* vertices are shared: 10 triangles, far fewer than 30 vertices */
            BK_EXPECTF(g.nv < 3 * s.tri_count, "%u vertices", g.nv);
            const bk_json *sm = bk_json_at(bk_json_get(g.json, "samplers"), 0);
            BK_EXPECT(bk_json_num(sm, "wrapS", 0) == 33071 && bk_json_num(sm, "wrapT", 0) == 33071);
        }
        bk_test_gltf_free(&g);
    }

    /* two pages: materials split per page, each naming its own page's lightmap */
    bk_atlas  two = a;
    uint32_t *tp = malloc(sizeof(uint32_t) * s.tri_count);
    for (uint32_t t = 0; t < s.tri_count; ++t) tp[t] = t % 2;
    two.page_count = 2;
    two.tri_page = tp;
    snprintf(lm0, sizeof lm0, "%s/lm-0.png", dir);
    snprintf(lm1, sizeof lm1, "%s/lm-1.png", dir);
    lm[0] = lm0;
    lm[1] = lm1;
    snprintf(p, sizeof p, "%s/pages.glb", out);
    BK_EXPECTF(bk_gltf_write(p, &s, &two, &go, err, sizeof err) == 0, "%s", err);
    bk_test_gltf g;
    if (bk_test_gltf_load(p, &g) == 0) {
        check_geometry(&g, &s, &two, 2);
        check_materials(&g, 2);
    }
    bk_test_gltf_free(&g);
    free(tp);

    /* an .hdr lightmap is no glTF image: named in the extras only */
    snprintf(lm0, sizeof lm0, "%s/lm.hdr", dir);
    lm[0] = lm0;
    snprintf(p, sizeof p, "%s/hdr.gltf", out);
    BK_EXPECTF(bk_gltf_write(p, &s, &a, &go, err, sizeof err) == 0, "%s", err);
    if (bk_test_gltf_load(p, &g) == 0) {
        const bk_json *m0 = bk_json_at(bk_json_get(g.json, "materials"), 0);
        BK_EXPECT(!bk_json_get(m0, "occlusionTexture"));
        const char *u = bk_json_str(bk_json_get(bk_json_get(m0, "extras"), "baker_lightmap"), "uri");
        BK_EXPECTF(u && !strcmp(u, "../lm.hdr"), "hdr lightmap named %s", u ? u : "nowhere");
        BK_EXPECTF(bk_test_count(bk_json_get(g.json, "images")) == 1, "only the PNG map is an image");
    }
    bk_test_gltf_free(&g);

    /* an atlas of another scene is refused and nothing is written */
    bk_atlas bad = a;
    bad.tri_count = a.tri_count + 1;
    snprintf(p, sizeof p, "%s/bad.glb", out);
    err[0] = 0;
    BK_EXPECT(bk_gltf_write(p, &s, &bad, &go, err, sizeof err) != 0 && strstr(err, "atlas built for"));
    BK_EXPECT(access(p, F_OK) != 0);
    BK_EXPECT(bk_gltf_path("x.GLB") && bk_gltf_path("a/b.gltf") && !bk_gltf_path("x.obj") && !bk_gltf_path("glb"));

    bk_atlas_free(&a);
    bk_scene_free(&s);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    BK_TEST_DONE();
}
