/* unit_gltf.c - the glTF writer (gltf.h) on a small OBJ scene with both UV sets, normals on some
 * faces only, emissive, white and textured materials, two `o` groups and faces before them: the
 * .glb and the .gltf are read back and checked against the spec and baker's rules
 * (bk_test_gltf.h: own, deduplicated vertices per primitive, no URI leaving the folder) and
 * against the scene: one node per object (names), every triangle's positions, lightmap UVs
 * (TEXCOORD_1 = the atlas's, unflipped), texture UVs (TEXCOORD_0 = vt with v flipped, zeros
 * without vt) and normals; materials (Kd, the lit page as emissiveTexture on TEXCOORD_1 with
 * factor 1, no occlusionTexture, extras.baker_lightmap); every image inside the file and
 * decodable, the lightmap pages byte for byte; the lit page of the white material equal to the
 * lightmap (within one level) and of the red one to Kd x the lightmap; pages as separate
 * materials; an .hdr lightmap named by file only; a cut-out as alphaMode with its alpha in the base
 * colour texture; a refused write that leaves nothing behind. */
#include "bk_test.h"
#include "bk_test_gltf.h"
#include "bk_test_stb_image.h"
#include "bk_test_stb_write.h"

#include "atlas.h"
#include "gltf.h"
#include "image.h"
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
                              "vn 0 0 2\n" /* not unit: the writer normalises it */
                              "f 4 5 6\n"  /* before any usemtl and o: the default material, the scene's node */
                              "o first\n"
                              "usemtl red\nf 1/1/1 2/2/1 3/3/1 4/4/1\n" /* vt and vn: a quad, two triangles */
                              "usemtl lamp\nf 1 2 6 5\n"                /* neither: flat normals, TEXCOORD_0 zeros */
                              "o second\n"
                              "usemtl tex\nf 2/2 3/3 6/4\n" /* vt only */
                              "usemtl tga\nf 3 4 5\n"
                              "usemtl white\nf 1 4 6\nf 2 4 5\n"
                              "usemtl red\nf 1 3 5\n"; /* red again: same primitive, file order kept */

static const char *mtl_text = "newmtl red\nKd 0.8 0.1 0.1\n"
                              "newmtl lamp\nKd 0.5 0.5 0.5\nKe 4 2 1\n"
                              "newmtl tex\nKd 1 1 1\nmap_Kd tex a.png\n"
                              "newmtl tga\nKd 0.3 0.3 0.3\nmap_Kd wood.tga\n"
                              "newmtl white\nKd 1 1 1\n"
                              "newmtl dim\nKd 0.2 0.2 0.2\nKe 0.5 0.25 0\n"; /* unused: not written */

static int find_material(const bk_test_gltf *g, const char *name)
{
    const bk_json *m = bk_json_get(g->json, "materials");
    for (size_t i = 0; i < bk_test_count(m); ++i)
        if (bk_json_str(&m->items[i], "name") && !strcmp(bk_json_str(&m->items[i], "name"), name)) return (int)i;
    return -1;
}

/* The node of a triangle: its o group's name, or the scene's. */
static const char *object_of(const bk_scene *s, uint32_t t)
{
    uint32_t o = s->tri_object ? s->tri_object[t] : BK_NONE;
    return o < s->object_count ? s->object_names[o] : "s";
}

/* Every triangle of s, in file order, against the primitives (found by node and material name). */
static void check_geometry(const bk_test_gltf *g, const bk_scene *s, const bk_atlas *a, int pages)
{
    size_t np = g->n_prims, *cursor = calloc(np, sizeof(size_t)), total = 0;
    for (size_t i = 0; i < np; ++i) total += g->prims[i].n_idx;
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
            if (g->prims[i].material == mi && !strcmp(bk_test_gltf_node_name(g, g->prims[i].node), object_of(s, t)))
                pi = i;
        BK_EXPECTF(mi >= 0 && pi < np, "triangle %u: no primitive for %s in node %s", t, name, object_of(s, t));
        if (mi < 0 || pi >= np) continue;
        const bk_test_prim *q = &g->prims[pi];
        BK_EXPECT(q->idx && cursor[pi] + 3 <= q->n_idx);
        if (!q->idx || cursor[pi] + 3 > q->n_idx) continue;
        const uint32_t *c = q->idx + cursor[pi];
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
            BK_EXPECTF(!memcmp(q->pos + 3 * (size_t)v, sp, 12), "triangle %u corner %d: position", t, k);
            BK_EXPECTF(q->uv1[2 * (size_t)v] == a->uv[2 * cn] && q->uv1[2 * (size_t)v + 1] == a->uv[2 * cn + 1],
                       "triangle %u corner %d: TEXCOORD_1 (%g, %g), atlas (%g, %g)", t, k,
                       (double)q->uv1[2 * (size_t)v], (double)q->uv1[2 * (size_t)v + 1], (double)a->uv[2 * cn],
                       (double)a->uv[2 * cn + 1]);
            uint32_t vt = s->tri_vt ? s->tri_vt[cn] : BK_NONE;
            float    u0 = vt != BK_NONE ? s->texcoords[2 * (size_t)vt] : 0.0f,
                  v0 = vt != BK_NONE ? 1.0f - s->texcoords[2 * (size_t)vt + 1] : 0.0f;
            BK_EXPECTF(q->uv0[2 * (size_t)v] == u0 && q->uv0[2 * (size_t)v + 1] == v0,
                       "triangle %u corner %d: TEXCOORD_0 (%g, %g), want (%g, %g)", t, k, (double)q->uv0[2 * (size_t)v],
                       (double)q->uv0[2 * (size_t)v + 1], (double)u0, (double)v0);
            const float *n = q->nrm + 3 * (size_t)v;
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
    for (size_t i = 0; i < np; ++i)
        BK_EXPECTF(cursor[i] == g->prims[i].n_idx, "primitive %zu: %zu of %zu indices matched", i, cursor[i],
                   g->prims[i].n_idx);
    free(cursor);
}

/* Nodes: the scene's (faces before any o), then first and second, each its own mesh. */
static void check_nodes(const bk_test_gltf *g)
{
    const bk_json *nodes = bk_json_get(g->json, "nodes");
    const char    *want[3] = { "s", "first", "second" };
    BK_EXPECTF(bk_test_count(nodes) == 3, "%zu nodes", bk_test_count(nodes));
    for (size_t n = 0; n < 3 && n < bk_test_count(nodes); ++n)
        BK_EXPECTF(bk_test_gltf_node_name(g, n) && !strcmp(bk_test_gltf_node_name(g, n), want[n]),
                   "node %zu is %s, want %s", n, bk_test_gltf_node_name(g, n), want[n]);
    /* first: red, lamp; second: tex, tga, white, red */
    size_t per[3] = { 0, 0, 0 };
    for (size_t i = 0; i < g->n_prims; ++i)
        if (g->prims[i].node < 3) per[g->prims[i].node]++;
    BK_EXPECTF(per[0] == 1 && per[1] == 2 && per[2] == 4, "primitives per node %zu %zu %zu", per[0], per[1], per[2]);
}

/* The decoded image i (stb_image, RGB), NULL when it is not in the buffer or does not decode. */
static uint8_t *decode_image(const bk_test_gltf *g, double i, int *w, int *h)
{
    size_t         n = 0;
    const uint8_t *d = i >= 0 ? bk_test_gltf_image(g, (size_t)i, &n) : NULL;
    int            c;
    return d ? stbi_load_from_memory(d, (int)n, w, h, &c, 3) : NULL;
}

static void check_materials(const bk_test_gltf *g, int pages, int atlas_side)
{
    const bk_json *mats = bk_json_get(g->json, "materials");
    const char    *want[6] = { "default", "red", "lamp", "tex", "tga", "white" };
    float          kd[6][3] = { { 0.8f, 0.8f, 0.8f }, { 0.8f, 0.1f, 0.1f }, { 0.5f, 0.5f, 0.5f },
                                { 1, 1, 1 },          { 0.3f, 0.3f, 0.3f }, { 1, 1, 1 } };
    size_t         used = 0;
    for (int p = 0; p < pages; ++p)
        for (int k = 0; k < 6; ++k) {
            char name[64];
            if (pages > 1) snprintf(name, sizeof name, "%s (page %d)", want[k], p);
            else snprintf(name, sizeof name, "%s", want[k]);
            int mi = find_material(g, name);
            if (pages > 1 && mi < 0) continue; /* no triangles on that page */
            BK_EXPECTF(mi >= 0, "material %s missing", name);
            if (mi < 0) continue;
            used++;
            const bk_json *m = &mats->items[mi], *pbr = bk_json_get(m, "pbrMetallicRoughness");
            const bk_json *bc = bk_json_get(pbr, "baseColorFactor");
            BK_EXPECT(bk_test_count(bc) == 4);
            for (int c = 0; c < 3 && bk_test_count(bc) == 4; ++c)
                BK_EXPECTF((float)bc->items[c].num == kd[k][c], "%s: Kd[%d] %g", name, c, bc->items[c].num);
            /* no occlusionTexture (the engines multiply it into the wrong light); the lit page on
             * TEXCOORD_1 with factor 1; the raw lightmap named in extras, in the file */
            BK_EXPECTF(!bk_json_get(m, "occlusionTexture"), "%s: an occlusionTexture", name);
            const bk_json *et = bk_json_get(m, "emissiveTexture"), *ef = bk_json_get(m, "emissiveFactor");
            const bk_json *ex = bk_json_get(bk_json_get(m, "extras"), "baker_lightmap");
            const bk_json *lt = bk_json_get(bk_json_get(m, "extras"), "baker_lit");
            BK_EXPECTF(et && bk_json_num(et, "texCoord", -1) == 1 && lt &&
                           bk_json_num(et, "index", -1) == bk_json_num(lt, "texture", -2),
                       "%s: emissiveTexture is not the lit page on TEXCOORD_1", name);
            BK_EXPECTF(bk_test_count(ef) == 3 && ef->items[0].num == 1 && ef->items[1].num == 1 &&
                           ef->items[2].num == 1,
                       "%s: emissiveFactor is not [1,1,1]", name);
            BK_EXPECTF(ex && bk_json_num(ex, "texCoord", -1) == 1 && bk_json_num(ex, "page", -1) == p &&
                           bk_json_num(ex, "scale", -1) == 1 && bk_json_num(ex, "texture", -1) >= 0 &&
                           !bk_json_str(ex, "uri"), /* ../lm.png would leave the folder */
                       "%s: extras.baker_lightmap", name);
            int      w = 0, h = 0;
            uint8_t *lit = decode_image(g, bk_json_num(et, "index", -1), &w, &h);
            BK_EXPECTF(lit && w == atlas_side && h == atlas_side, "%s: lit page %dx%d does not decode", name, w, h);
            stbi_image_free(lit);
            const bk_json *bt = bk_json_get(pbr, "baseColorTexture");
            if (k == 3) {
                BK_EXPECTF(bt && bk_json_num(bt, "texCoord", -1) == 0, "%s: baseColorTexture", name);
                uint8_t *tx = bt ? decode_image(g, bk_json_num(bt, "index", -1), &w, &h) : NULL;
                BK_EXPECTF(tx && w == 4 && h == 2, "%s: its texture, %dx%d, does not decode", name, w, h);
                stbi_image_free(tx);
            } else BK_EXPECTF(!bt, "%s: unexpected baseColorTexture", name);
            if (k == 4) {
                const char *lost = bk_json_str(bk_json_get(m, "extras"), "baker_map_Kd");
                BK_EXPECTF(lost && !strcmp(lost, "wood.tga"), "%s: the TGA map that did not load is named", name);
            }
            const bk_json *em = bk_json_get(bk_json_get(m, "extras"), "baker_emission");
            BK_EXPECTF((k == 2) == (bk_test_count(em) == 3), "%s: baker_emission", name);
        }
    BK_EXPECTF(bk_test_count(mats) == used, "%zu materials, %zu expected", bk_test_count(mats), used);
    /* images: the lit pages, the lightmap pages, the PNG map; the TGA did not load */
    BK_EXPECTF(bk_test_count(bk_json_get(g->json, "images")) == 2 * (size_t)pages + 1, "%zu images",
               bk_test_count(bk_json_get(g->json, "images")));
}

/* The lightmap page in the file is the PNG written, byte for byte; the lit page of the white
 * material equals it (within one level) where a white triangle covers the texel, and the red
 * one's Kd x it. */
static void check_lit(const bk_test_gltf *g, const bk_scene *s, const bk_atlas *a, const char *lm_path)
{
    int            mw = find_material(g, "white");
    const bk_json *m = bk_json_at(bk_json_get(g->json, "materials"), (size_t)mw);
    double         lmi = bk_json_num(bk_json_get(bk_json_get(m, "extras"), "baker_lightmap"), "image", -1);
    size_t         n = 0;
    const uint8_t *d = lmi >= 0 ? bk_test_gltf_image(g, (size_t)lmi, &n) : NULL;
    FILE          *f = fopen(lm_path, "rb");
    uint8_t       *want = malloc(1 << 20);
    size_t         wn = f && want ? fread(want, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    BK_EXPECTF(d && n == wn && !memcmp(d, want, n), "the lightmap image is not %s byte for byte", lm_path);
    free(want);
    int      w, h, lw, lh;
    uint8_t *lit = decode_image(g, bk_json_num(bk_json_get(m, "emissiveTexture"), "index", -1), &w, &h);
    uint8_t *lm = decode_image(g, lmi, &lw, &lh);
    BK_EXPECT(lit && lm && w == lw && h == lh && w == a->width);
    size_t checked[2] = { 0, 0 }, off[2] = { 0, 0 };
    for (uint32_t t = 0; lit && lm && w == a->width && t < s->tri_count; ++t) {
        uint32_t mt = s->tri_material[t];
        int      white = mt < s->material_count && !strcmp(s->materials[mt].name, "white");
        int      red = mt < s->material_count && !strcmp(s->materials[mt].name, "red");
        if (!white && !red) continue;
        const float *uv = a->uv + 6 * (size_t)t;
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x) {
                /* texel centres well inside the triangle (half a texel from each edge) */
                double px = (x + 0.5) / w, py = (y + 0.5) / h, in = 1;
                for (int k = 0; k < 3; ++k) {
                    const float *p0 = uv + 2 * k, *p1 = uv + 2 * ((k + 1) % 3), *p2 = uv + 2 * ((k + 2) % 3);
                    double       ex = p1[0] - p0[0], ey = p1[1] - p0[1], len = hypot(ex * w, ey * h);
                    double       side = ex * (py - p0[1]) - ey * (px - p0[0]),
                           ref = ex * (p2[1] - p0[1]) - ey * (p2[0] - p0[0]);
                    if (!(len > 0) || side * ref <= 0 || fabs(side) * w * h / len < 0.5) in = 0;
                }
                if (!in) continue;
                size_t i = 3 * ((size_t)y * w + x);
                int    bad = 0;
                for (int c = 0; c < 3; ++c) {
                    double l = bk_image_srgb_to_linear(lm[i + c] / 255.0f);
                    int    e = white ? lm[i + c] : bk_image_srgb8((float)(l * s->materials[mt].kd[c]));
                    /* red: Kd x the unrounded light, so up to the rounding of one sRGB level of it */
                    int tol = white ? 1 : 2;
                    bad |= abs(lit[i + c] - e) > tol;
                }
                off[red] += bad;
                checked[red]++;
            }
    }
    BK_EXPECTF(checked[0] > 0 && checked[1] > 0, "no covered texels checked (%zu white, %zu red)", checked[0],
               checked[1]);
    BK_EXPECTF(off[0] == 0 && off[1] == 0, "lit page off: %zu of %zu white texels, %zu of %zu red", off[0], checked[0],
               off[1], checked[1]);
    stbi_image_free(lit);
    stbi_image_free(lm);
}

/* A smooth lightmap of n pages (w x w), values in 0.05..0.95, seeded. */
static float *lightmap_rgb(int w, int pages)
{
    float   *rgb = malloc(sizeof(float) * 3 * (size_t)w * w * pages);
    unsigned seed = 12345u;
    for (int c = 0; c < 3; ++c) {
        seed = seed * 1103515245u + 12345u;
        double ph = (seed >> 8) % 1000 / 159.0;
        for (size_t i = 0; i < (size_t)w * w * pages; ++i) {
            int x = (int)(i % w), y = (int)(i / w % w);
            rgb[3 * i + c] = (float)(0.5 + 0.45 * sin(0.37 * x + 0.23 * y + ph + c));
        }
    }
    return rgb;
}

/* A cut-out (map_d): its material gets alphaMode MASK and a base colour texture of Kd with the
 * map's alpha, factor 1 (glTF takes opacity from the base colour's alpha only). */
static void test_cutout(const char *dir)
{
    char p[1200], err[1024];
    put(dir, "c.obj",
        "mtllib c.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n"
        "usemtl cut\nf 1/1 2/2 3/3 4/4\n");
    put(dir, "c.mtl", "newmtl cut\nKd 0.5 0.25 1\nmap_d cut.png\n");
    const uint8_t px[4 * 2 * 4] = { 9, 9, 9, 255, 9, 9, 9, 0,   9, 9, 9, 255, 9, 9, 9, 0,
                                    9, 9, 9, 0,   9, 9, 9, 255, 9, 9, 9, 0,   9, 9, 9, 200 };
    snprintf(p, sizeof p, "%s/cut.png", dir);
    if (!stbi_write_png(p, 4, 2, 4, px, 16)) return;
    bk_scene s;
    snprintf(p, sizeof p, "%s/c.obj", dir);
    BK_EXPECTF(bk_scene_load_obj(p, &s, err, sizeof err) == 0, "%s", err);
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = 32;
    bk_atlas a;
    BK_EXPECTF(bk_atlas_build(&s, &o, &a, err, sizeof err) == 0, "%s", err);
    bk_gltf_opts go;
    bk_gltf_opts_default(&go);
    snprintf(p, sizeof p, "%s/c.glb", dir);
    BK_EXPECTF(bk_gltf_write(p, &s, &a, &go, err, sizeof err) == 0, "%s", err);
    bk_test_gltf g;
    if (bk_test_gltf_load(p, &g) == 0) {
        const bk_json *m = bk_json_at(bk_json_get(g.json, "materials"), 0),
                      *pbr = bk_json_get(m, "pbrMetallicRoughness");
        const bk_json *bc = bk_json_get(pbr, "baseColorFactor");
        BK_EXPECTF(bk_json_str(m, "alphaMode") && !strcmp(bk_json_str(m, "alphaMode"), "MASK") &&
                       bk_json_num(m, "alphaCutoff", -1) == 0.5,
                   "cut: alphaMode MASK, cutoff 0.5");
        BK_EXPECTF(bk_test_count(bc) == 4 && bc->items[0].num == 1 && bc->items[1].num == 1 && bc->items[2].num == 1,
                   "cut: Kd belongs in the texture, factor 1");
        size_t         n = 0;
        double         ti = bk_json_num(bk_json_get(pbr, "baseColorTexture"), "index", -1);
        double         ii = bk_json_num(bk_json_at(bk_json_get(g.json, "textures"), (size_t)ti), "source", -1);
        const uint8_t *d = ii >= 0 ? bk_test_gltf_image(&g, (size_t)ii, &n) : NULL;
        int            w = 0, h = 0, c;
        uint8_t       *t = d ? stbi_load_from_memory(d, (int)n, &w, &h, &c, 4) : NULL;
        BK_EXPECTF(t && w == 4 && h == 2, "cut: its base colour texture does not decode");
        for (int i = 0; t && i < 8; ++i)
            BK_EXPECTF(t[4 * i + 3] == px[4 * i + 3] && t[4 * i] == bk_image_srgb8(0.5f) &&
                           t[4 * i + 1] == bk_image_srgb8(0.25f) && t[4 * i + 2] == 255,
                       "cut: texel %d is %u %u %u %u", i, t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]);
        stbi_image_free(t);
    }
    bk_test_gltf_free(&g);
    bk_atlas_free(&a);
    bk_scene_free(&s);
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
    const uint8_t texels[4 * 2 * 4] = { 255, 0,  0,  255, 0,  255, 0,  255, 0,  0,  255, 255, 255, 255, 255, 128,
                                        10,  20, 30, 255, 40, 50,  60, 255, 70, 80, 90,  255, 0,   0,   0,   0 };
    snprintf(p, sizeof p, "%s/tex a.png", sub);
    if (!stbi_write_png(p, 4, 2, 4, texels, 16)) return 1;
    put(sub, "wood.tga", "x"); /* does not decode: its factor alone, named in the extras */

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
    float      *rgb = lightmap_rgb(a.width, 2);
    snprintf(lm0, sizeof lm0, "%s/lm.png", dir);
    BK_EXPECTF(bk_image_write(lm0, rgb, a.width, a.height, 1.0f, err, sizeof err) == 0, "%s", err);
    lm[0] = lm0;
    bk_gltf_opts go;
    bk_gltf_opts_default(&go);
    go.lightmaps = lm;
    go.rgb = rgb;
    go.name = "s";
    const char *ext[2] = { "glb", "gltf" };
    for (int e = 0; e < 2; ++e) {
        snprintf(p, sizeof p, "%s/s.%s", out, ext[e]);
        BK_EXPECTF(bk_gltf_write(p, &s, &a, &go, err, sizeof err) == 0, "%s", err);
        bk_test_gltf g;
        if (bk_test_gltf_load(p, &g) == 0) {
            BK_EXPECT(g.glb == (e == 0));
            check_nodes(&g);
            check_geometry(&g, &s, &a, 1);
            check_materials(&g, 1, a.width);
            check_lit(&g, &s, &a, lm0);
            /* self-contained: no image names a file (a .gltf holds them in its data: buffer too) */
            const bk_json *ims = bk_json_get(g.json, "images");
            for (size_t i = 0; i < bk_test_count(ims); ++i)
                BK_EXPECTF(!bk_json_str(&ims->items[i], "uri"), "image %zu names a file", i);
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
    BK_EXPECT(bk_image_write(lm0, rgb, a.width, a.height, 1.0f, err, sizeof err) == 0);
    BK_EXPECT(bk_image_write(lm1, rgb + 3 * (size_t)a.width * a.height, a.width, a.height, 1.0f, err, sizeof err) == 0);
    lm[0] = lm0;
    lm[1] = lm1;
    snprintf(p, sizeof p, "%s/pages.glb", out);
    BK_EXPECTF(bk_gltf_write(p, &s, &two, &go, err, sizeof err) == 0, "%s", err);
    bk_test_gltf g;
    if (bk_test_gltf_load(p, &g) == 0) {
        check_geometry(&g, &s, &two, 2);
        check_materials(&g, 2, a.width);
    }
    bk_test_gltf_free(&g);
    free(tp);

    /* an .hdr lightmap is no glTF image: named in the extras only, by its file name when the
     * path would leave the folder, by a relative URI beside the glTF; the lit page still shows it */
    snprintf(lm0, sizeof lm0, "%s/lm.hdr", dir);
    lm[0] = lm0;
    for (int beside = 0; beside < 2; ++beside) {
        snprintf(p, sizeof p, "%s/hdr.gltf", beside ? dir : out);
        BK_EXPECTF(bk_gltf_write(p, &s, &a, &go, err, sizeof err) == 0, "%s", err);
        if (bk_test_gltf_load(p, &g) == 0) {
            const bk_json *m0 = bk_json_at(bk_json_get(g.json, "materials"), 0);
            const char    *u = bk_json_str(bk_json_get(bk_json_get(m0, "extras"), "baker_lightmap"), "uri");
            BK_EXPECTF(beside ? u && !strcmp(u, "lm.hdr") : !u, "hdr lightmap named %s", u ? u : "nowhere");
            const bk_json *l0 =
                bk_json_at(bk_json_get(bk_json_get(bk_json_get(g.json, "asset"), "extras"), "baker"), 0);
            (void)l0;
            BK_EXPECTF(bk_test_count(bk_json_get(g.json, "images")) == 2, "the lit page and the PNG map, not %zu",
                       bk_test_count(bk_json_get(g.json, "images")));
            BK_EXPECT(bk_json_get(m0, "emissiveTexture") != NULL);
        }
        bk_test_gltf_free(&g);
    }

    /* an atlas of another scene is refused and nothing is written */
    bk_atlas bad = a;
    bad.tri_count = a.tri_count + 1;
    snprintf(p, sizeof p, "%s/bad.glb", out);
    err[0] = 0;
    BK_EXPECT(bk_gltf_write(p, &s, &bad, &go, err, sizeof err) != 0 && strstr(err, "atlas built for"));
    BK_EXPECT(access(p, F_OK) != 0);
    BK_EXPECT(bk_gltf_path("x.GLB") && bk_gltf_path("a/b.gltf") && !bk_gltf_path("x.obj") && !bk_gltf_path("glb"));

    test_cutout(sub);
    free(rgb);
    bk_atlas_free(&a);
    bk_scene_free(&s);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    BK_TEST_DONE();
}
