/* unit_gltf_read.c - the glTF 2.0 reader (src/io/gltf_read*.c).
 *
 * 1. Every .gltf / .glb of the assimp corpus (scenes/gltf-assimp, hostile files included) either
 *    loads, with the triangle count the file describes where the table below knows it, or fails
 *    with one line that names the file; files made to fail must fail.
 * 2. Synthetic documents, written here (data: URIs, a GLB, files in a temporary folder): strips
 *    and fans, quantized positions, sparse accessors, a mirroring node (winding), TRS composed
 *    with a parent, materials with an embedded image and a texture transform, TEXCOORD_1, a
 *    camera, a file without scenes, a percent-encoded external buffer, and the refusals: a cycle,
 *    a node with two parents, a hierarchy deeper than 256, a count x stride past its view, a
 *    truncated GLB, a buffer shorter than its view, an index out of range, a required unknown or
 *    Draco extension, absolute and http URIs, another file from the _mem entry, non-finite
 *    positions, bad JSON, glTF 1.0. An embedded image is no input of the output policy.
 * Skips (77) when built without cJSON.
 */
#include "bk_test.h"
#include "loader.h"
#include "outputs.h"
#include "scene.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/stat.h>

static char err[2048];

/* ---- the corpus ------------------------------------------------------------------------------ */

static const struct {
    const char *file;
    int         tris; /* expected triangles; -1 must fail, 0 loads with any count */
} expect[] = {
    { "BoxTextured-glTF/BoxTextured.gltf", 12 },
    { "BoxTextured-glTF-Binary/BoxTextured.glb", 12 },
    { "BoxTextured-glTF-Embedded/BoxTextured.gltf", 12 },
    { "BoxTexcoords-glTF/boxTexcoords.gltf", 12 },
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_00.gltf", -1 }, /* points */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_01.gltf", -1 }, /* lines */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_02.gltf", -1 },
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_03.gltf", -1 },
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_04.gltf", 2 }, /* strip, 4 vertices */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_05.gltf", 2 }, /* fan */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_06.gltf", 2 }, /* triangles */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_07.gltf", -1 },
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_10.gltf", -1 },
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_11.gltf", 2 }, /* indexed strip */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_12.gltf", 2 }, /* indexed fan */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_13.gltf", 2 }, /* ubyte indices */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_14.gltf", 2 }, /* ushort */
    { "glTF-Asset-Generator/Mesh_PrimitiveMode/Mesh_PrimitiveMode_15.gltf", 2 }, /* uint */
    { "IndexOutOfRange/IndexOutOfRange.gltf", -1 },
    { "IndexOutOfRange/AllIndicesOutOfRange.gltf", -1 },
    { "MissingBin/BoxTextured.gltf", -1 },
    { "RecursiveNodes/RecursiveNodes.gltf", -1 },
    { "BoxWithInfinites-glTF-Binary/BoxWithInfinites.glb", -1 },
    { "draco/2CylinderEngine.gltf", -1 },
    { "2CylinderEngine-glTF-Binary/2CylinderEngine.glb", 0 },
    { "cameras/Cameras.gltf", 0 },
};

static int corpus_files, corpus_loaded, corpus_checked;

static void corpus_one(const char *root, const char *path)
{
    bk_scene s;
    int      rc = bk_scene_load(path, &s, err, sizeof err);
    const char *rel = path + strlen(root) + 1;
    int      want = -2;
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; ++i)
        if (!strcmp(rel, expect[i].file)) want = expect[i].tris;
    corpus_files++;
    if (rc == 0) {
        corpus_loaded++;
        printf("  %-70s %u triangles\n", rel, s.tri_count);
        BK_EXPECTF(s.tri_count > 0, "%s: loaded with no triangles", rel);
        BK_EXPECTF(want != -1, "%s: loaded (%u triangles), should fail", rel, s.tri_count);
        if (want > 0) {
            corpus_checked++;
            BK_EXPECTF(s.tri_count == (uint32_t)want, "%s: %u triangles, expected %d", rel, s.tri_count, want);
        }
        for (uint32_t t = 0; t < 3 * s.tri_count; ++t) {
            if (s.tri_v[t] >= s.vertex_count) {
                BK_EXPECTF(0, "%s: corner %u names vertex %u of %u", rel, t, s.tri_v[t], s.vertex_count);
                break;
            }
            if (s.tri_vt[t] != BK_NONE && s.tri_vt[t] >= s.texcoord_count) {
                BK_EXPECTF(0, "%s: corner %u names vt %u of %u", rel, t, s.tri_vt[t], s.texcoord_count);
                break;
            }
        }
        for (size_t i = 0; i < 3 * (size_t)s.vertex_count; ++i)
            if (!isfinite(s.positions[i])) {
                BK_EXPECTF(0, "%s: position %zu not finite", rel, i / 3);
                break;
            }
    } else {
        printf("  %-70s fails: %s\n", rel, err);
        BK_EXPECTF(want < 0, "%s: failed: %s", rel, err);
        if (want == -1) corpus_checked++;
        BK_EXPECTF(err[0] && !strchr(err, '\n'), "%s: message not one line: '%s'", rel, err);
        BK_EXPECTF(!strncmp(err, path, strlen(path)), "%s: message does not start with the path: '%s'", rel, err);
        BK_EXPECT(s.tri_count == 0 && s.positions == NULL);
    }
    bk_scene_free(&s);
}

static void corpus_walk(const char *root, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char           names[256][256];
    int            n = 0;
    while ((e = readdir(d)) != NULL && n < 256)
        if (e->d_name[0] != '.') snprintf(names[n++], sizeof names[0], "%.255s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; ++i) {
        char        p[1400];
        struct stat st;
        snprintf(p, sizeof p, "%.1000s/%.299s", dir, names[i]);
        if (stat(p, &st)) continue;
        if (S_ISDIR(st.st_mode)) corpus_walk(root, p);
        else {
            size_t l = strlen(names[i]);
            if ((l > 5 && !strcmp(names[i] + l - 5, ".gltf")) || (l > 4 && !strcmp(names[i] + l - 4, ".glb")))
                corpus_one(root, p);
        }
    }
}

static void test_corpus(void)
{
    char root[512];
    snprintf(root, sizeof root, "%s/gltf-assimp", bk_test_scenes_dir());
    if (access(root, R_OK) != 0) {
        printf("corpus %s absent: skipped\n", root);
        return;
    }
    corpus_walk(root, root);
    printf("corpus: %d files, %d loaded, %d checked against the table\n", corpus_files, corpus_loaded, corpus_checked);
    BK_EXPECT(corpus_files >= 46);
    BK_EXPECT(corpus_checked >= 20);
}

/* ---- synthetic documents --------------------------------------------------------------------- */

/* A document whose buffer 0 is bytes (a data: URI of them); body: the rest, after "buffers". */
static char *doc(const void *bytes, size_t n, const char *fmt, ...)
{
    char   *uri = malloc(4 * n / 3 + 8), *body = malloc(16384), *out = malloc(4 * n / 3 + 16384 + 256);
    va_list ap;
    bk_test_b64_encode(bytes, n, uri);
    va_start(ap, fmt);
    vsnprintf(body, 16384, fmt, ap);
    va_end(ap);
    sprintf(out,
            "{\"asset\":{\"version\":\"2.0\"},\"buffers\":[{\"byteLength\":%zu,"
            "\"uri\":\"data:application/octet-stream;base64,%s\"}],%s}",
            n, uri, body);
    free(uri);
    free(body);
    return out;
}

/* With BK_GLTF_SEEDS set (tests/fuzz/run.sh), each document is also written there as a seed. */
static void seed(const void *d, size_t n, const char *ext)
{
    static int  k;
    const char *dir = getenv("BK_GLTF_SEEDS");
    char        p[600];
    if (!dir || !dir[0]) return;
    snprintf(p, sizeof p, "%.500s/unit-%02d.%s", dir, k++, ext);
    FILE *f = fopen(p, "wb");
    if (f) {
        fwrite(d, 1, n, f);
        fclose(f);
    }
}

static int load_str(const char *json, bk_scene *s)
{
    seed(json, strlen(json), "gltf");
    return bk_scene_load_gltf_mem(json, strlen(json), "t.gltf", s, err, sizeof err);
}

static void geo_normal(const bk_scene *s, uint32_t t, double n[3])
{
    const float *a = s->positions + 3 * s->tri_v[3 * t], *b = s->positions + 3 * s->tri_v[3 * t + 1],
                *c = s->positions + 3 * s->tri_v[3 * t + 2];
    double u[3] = { b[0] - a[0], b[1] - a[1], b[2] - a[2] }, v[3] = { c[0] - a[0], c[1] - a[1], c[2] - a[2] };
    n[0] = u[1] * v[2] - u[2] * v[1];
    n[1] = u[2] * v[0] - u[0] * v[2];
    n[2] = u[0] * v[1] - u[1] * v[0];
}

static const float quad[12] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0 };

#define ONE_MESH(mode, extra)                                                                          \
    "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"                                           \
    "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"}],"      \
    "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0},\"mode\":" #mode "}]}]," extra \
    "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]"

static void test_modes(void)
{
    bk_scene s;
    char    *j = doc(quad, sizeof quad, ONE_MESH(5, ""));
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err);
    BK_EXPECT(s.tri_count == 2);
    /* strip: (0 1 2), (1 3 2) -- odd triangles swap to keep the winding */
    static const uint32_t strip[6] = { 0, 1, 2, 1, 3, 2 }, fan[6] = { 1, 2, 0, 2, 3, 0 };
    BK_EXPECT(s.tri_count == 2 && !memcmp(s.tri_v, strip, sizeof strip));
    for (uint32_t t = 0; t < s.tri_count; ++t) {
        double n[3];
        geo_normal(&s, t, n);
        BK_EXPECTF(n[2] > 0, "strip triangle %u faces %g", t, n[2]);
    }
    BK_EXPECT(s.object_count == 1 && s.tri_object && s.tri_object[1] == 0 && !strcmp(s.object_names[0], "node 0"));
    bk_scene_free(&s);
    free(j);
    j = doc(quad, sizeof quad, ONE_MESH(6, ""));
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err);
    BK_EXPECT(s.tri_count == 2 && !memcmp(s.tri_v, fan, sizeof fan));
    bk_scene_free(&s);
    free(j);
    j = doc(quad, sizeof quad, ONE_MESH(1, ""));
    BK_EXPECT(load_str(j, &s) < 0 && strstr(err, "no triangles"));
    free(j);
}

static void test_quantized_sparse(void)
{
    /* positions: 3 x VEC3 BYTE normalized (4-byte stride), then sparse: vertex 1 replaced */
    uint8_t b[64] = { 0 };
    int8_t  p[12] = { 0, 0, 0, 0, 127, 0, 0, 0, 0, -128, 64, 0 }; /* (0,0,0) (127,0,0) (0,-128,64) */
    memcpy(b, p, 12);
    uint8_t idx[1] = { 1 };
    int8_t  val[3] = { 0, 127, 0 }; /* vertex 1 -> (0, 1, 0) */
    memcpy(b + 12, idx, 1);
    memcpy(b + 16, val, 3);
    char *j = doc(b, 20,
                  "\"extensionsRequired\":[\"KHR_mesh_quantization\"],\"extensionsUsed\":[\"KHR_mesh_quantization\"],"
                  "\"bufferViews\":[{\"buffer\":0,\"byteLength\":12,\"byteStride\":4},{\"buffer\":0,\"byteOffset\":12,"
                  "\"byteLength\":1},{\"buffer\":0,\"byteOffset\":16,\"byteLength\":3}],"
                  "\"accessors\":[{\"bufferView\":0,\"componentType\":5120,\"normalized\":true,\"count\":3,\"type\":"
                  "\"VEC3\",\"sparse\":{\"count\":1,\"indices\":{\"bufferView\":1,\"componentType\":5121},\"values\":{"
                  "\"bufferView\":2}}}],"
                  "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
                  "\"nodes\":[{\"mesh\":0,\"name\":\"q\"}],\"scenes\":[{\"nodes\":[0]}],\"scene\":0");
    bk_scene s;
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err);
    if (s.tri_count == 1) {
        const float *v = s.positions;
        BK_EXPECTF(v[3] == 0.0f && v[4] == 1.0f, "sparse vertex 1 = %g %g", v[3], v[4]);
        BK_EXPECTF(v[7] == -1.0f && v[8] == 64.0f / 127.0f, "vertex 2 = %g %g (max(-128/127, -1), 64/127)", v[7], v[8]);
        BK_EXPECT(!strcmp(s.object_names[0], "q"));
    } else BK_EXPECT(0);
    bk_scene_free(&s);
    free(j);
    /* a sparse index at count is refused */
    b[12] = 3;
    j = doc(b, 20,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":12,\"byteStride\":4},{\"buffer\":0,\"byteOffset\":12,"
            "\"byteLength\":1},{\"buffer\":0,\"byteOffset\":16,\"byteLength\":3}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5120,\"normalized\":true,\"count\":3,\"type\":"
            "\"VEC3\",\"sparse\":{\"count\":1,\"indices\":{\"bufferView\":1,\"componentType\":5121},\"values\":{"
            "\"bufferView\":2}}}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
            "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]");
    BK_EXPECT(load_str(j, &s) < 0 && strstr(err, "sparse index 3"));
    free(j);
}

static void test_transforms(void)
{
    /* a triangle facing +Z with NORMAL +Z, under a mirroring node (scale -1 x): still faces +Z */
    float b[18] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1 };
    char *j = doc(b, sizeof b,
                  "\"bufferViews\":[{\"buffer\":0,\"byteLength\":36},{\"buffer\":0,\"byteOffset\":36,\"byteLength\":36}],"
                  "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"},"
                  "{\"bufferView\":1,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"}],"
                  "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"NORMAL\":1}}]}],"
                  "\"nodes\":[{\"children\":[1],\"translation\":[10,0,0]},{\"mesh\":0,\"matrix\":[-1,0,0,0,0,1,0,0,0,0,"
                  "1,0,0,0,0,1]},{\"mesh\":0,\"scale\":[2,2,2]}],\"scenes\":[{\"nodes\":[0,2]}]");
    bk_scene s;
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err);
    BK_EXPECT(s.tri_count == 2);
    if (s.tri_count == 2) {
        double n[3];
        geo_normal(&s, 0, n);
        BK_EXPECTF(n[2] > 0, "mirrored triangle faces %g (winding not flipped)", n[2]);
        BK_EXPECT(s.tri_v[1] == 2 && s.tri_v[2] == 1);
        BK_EXPECT(s.tri_vn[0] != BK_NONE && s.normals[3 * s.tri_vn[0] + 2] == 1.0f);
        /* node 1: x -> 10 - x */
        BK_EXPECTF(s.positions[3] == 9.0f, "mirrored vertex x %g", s.positions[3]);
        geo_normal(&s, 1, n);
        BK_EXPECT(n[2] > 0 && s.positions[3 * s.tri_v[5] + 1] == 2.0f);
    }
    bk_scene_free(&s);
    free(j);
}

static char *material_doc; /* test_material's document, for test_files */

static void test_material(void)
{
    /* a 2 x 1 RGBA PNG would need an encoder: a 1 x 1 24-bit BMP in a bufferView instead */
    uint8_t bmp[58] = { 'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24 };
    bmp[34] = 4;
    bmp[54] = 255; /* blue */
    float   tri[15] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1 };
    uint8_t b[60 + 58];
    memcpy(b, tri, 60);
    memcpy(b + 60, bmp, 58);
    char *j = doc(b, sizeof b,
                  "\"extensionsUsed\":[\"KHR_texture_transform\"],"
                  "\"bufferViews\":[{\"buffer\":0,\"byteLength\":36},{\"buffer\":0,\"byteOffset\":36,\"byteLength\":24},"
                  "{\"buffer\":0,\"byteOffset\":60,\"byteLength\":58}],"
                  "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"},"
                  "{\"bufferView\":1,\"componentType\":5126,\"count\":3,\"type\":\"VEC2\"}],"
                  "\"images\":[{\"bufferView\":2,\"mimeType\":\"image/bmp\"}],\"samplers\":[{\"wrapS\":33071,\"wrapT\":"
                  "33071}],\"textures\":[{\"source\":0,\"sampler\":0}],"
                  "\"materials\":[{\"name\":\"m\",\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.5,0.25,1,0.5],"
                  "\"baseColorTexture\":{\"index\":0,\"extensions\":{\"KHR_texture_transform\":{\"offset\":[0.25,0.125],"
                  "\"scale\":[2,0.5]}}}},\"emissiveFactor\":[1,0.5,0],\"extensions\":{\"KHR_materials_emissive_strength\":"
                  "{\"emissiveStrength\":4}},\"alphaMode\":\"MASK\",\"alphaCutoff\":0.25,\"doubleSided\":true}],"
                  "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"TEXCOORD_0\":1},\"material\":0}]}],"
                  "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]");
    bk_scene s;
    material_doc = j;
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err);
    if (s.material_count == 1 && s.tri_count == 1) {
        const bk_material *m = &s.materials[0];
        BK_EXPECT(s.tri_material[0] == 0 && !strcmp(m->name, "m"));
        BK_EXPECT(m->kd[0] == 0.5f && m->kd[1] == 0.25f && m->kd[2] == 1.0f && m->alpha == 0.5f);
        BK_EXPECT(m->ke[0] == 4.0f && m->ke[1] == 2.0f && m->ke[2] == 0.0f);
        BK_EXPECT(m->alpha_mode == 1 && m->alpha_cutoff == 0.25f && m->double_sided == 1);
        BK_EXPECT(m->map_kd.image == 0 && m->map_kd.clamp == 1 && m->map_d.image == 0 &&
                  m->map_d.channel == BK_TEX_CHANNEL_ALPHA);
        BK_EXPECTF(m->map_kd.scale[0] == 2.0f && m->map_kd.scale[1] == 0.5f && m->map_kd.offset[0] == 0.25f &&
                       m->map_kd.offset[1] == 0.375f,
                   "transform %g %g %g %g", m->map_kd.scale[0], m->map_kd.scale[1], m->map_kd.offset[0],
                   m->map_kd.offset[1]);
        BK_EXPECT(s.image_count == 1 && s.images[0].w == 1 && s.images[0].embedded &&
                  !strcmp(s.images[0].path, "t.gltf:images[0]") && s.images[0].rgba8[2] == 255);
        /* TEXCOORD_0 (0, 0), (1, 0), (0, 1) stored v = 1 - v */
        BK_EXPECT(s.tri_vt[2] != BK_NONE && s.texcoords[2 * s.tri_vt[2] + 1] == 0.0f &&
                  s.texcoords[2 * s.tri_vt[0] + 1] == 1.0f);
    } else BK_EXPECT(0);
    bk_scene_free(&s);
}

static void expect_fail(const char *what, const char *json, const char *needle)
{
    bk_scene s;
    int      rc = load_str(json, &s);
    BK_EXPECTF(rc < 0, "%s: loaded", what);
    BK_EXPECTF(rc >= 0 || (strstr(err, needle) && !strchr(err, '\n') && !strncmp(err, "t.gltf: ", 8)),
               "%s: message '%s' lacks '%s'", what, err, needle);
    bk_scene_free(&s);
}

static void test_refusals(void)
{
    char *j;
    j = doc(quad, sizeof quad,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
            "\"nodes\":[{\"mesh\":0,\"children\":[1]},{\"children\":[0]}],\"scenes\":[{\"nodes\":[0]}]");
    expect_fail("cycle", j, "nodes[0]: is its own ancestor");
    free(j);
    j = doc(quad, sizeof quad,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
            "\"nodes\":[{\"children\":[2]},{\"children\":[2]},{\"mesh\":0}],\"scenes\":[{\"nodes\":[0,1]}]");
    expect_fail("two parents", j, "nodes[2]: is reached twice");
    free(j);
    j = doc(quad, sizeof quad, ONE_MESH(4, "\"extensionsRequired\":[\"KHR_future_thing\"],"));
    expect_fail("unknown extension", j, "extensionsRequired[0]: the file requires the extension 'KHR_future_thing'");
    free(j);
    j = doc(quad, sizeof quad, ONE_MESH(4, "\"extensionsRequired\":[\"KHR_draco_mesh_compression\"],"));
    expect_fail("draco", j, "requires KHR_draco_mesh_compression");
    free(j);
    j = doc(quad, 40, ONE_MESH(4, ""));
    expect_fail("buffer shorter than view", j, "bufferViews[0]: byteOffset 0 + byteLength 48 reach past the end of buffer 0 (40 bytes)");
    free(j);
    j = doc(quad, sizeof quad,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":5,\"type\":\"VEC3\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
            "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]");
    expect_fail("accessor past its view", j,
                "meshes[0].primitives[0].attributes.POSITION: accessor 0: reads past the end of bufferView 0");
    free(j);
    uint8_t ib[52];
    memcpy(ib, quad, 48);
    ib[48] = 0, ib[49] = 1, ib[50] = 4, ib[51] = 0;
    j = doc(ib, sizeof ib,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48},{\"buffer\":0,\"byteOffset\":48,\"byteLength\":3}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"},{\"bufferView\":1,"
            "\"componentType\":5121,\"count\":3,\"type\":\"SCALAR\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0},\"indices\":1}]}],"
            "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]");
    expect_fail("index out of range", j, "meshes[0].primitives[0].indices: accessor 1: index 4 (element 2)");
    free(j);
    float inf[12];
    memcpy(inf, quad, sizeof inf);
    inf[4] = INFINITY;
    j = doc(inf, sizeof inf, ONE_MESH(4, ""));
    expect_fail("infinite position", j, "vertex 1 is not finite");
    free(j);
    j = doc(quad, sizeof quad, ONE_MESH(4, "\"extra\":1,"));
    j[strlen(j) - 5] = 0; /* cut */
    expect_fail("bad JSON", j, "not valid JSON");
    free(j);
    const char *http = "{\"asset\":{\"version\":\"2.0\"},\"buffers\":[{\"byteLength\":4,\"uri\":\"http://x/a.bin\"}],"
                       "\"bufferViews\":[{\"buffer\":0,\"byteLength\":4}],\"accessors\":[{\"bufferView\":0,"
                       "\"componentType\":5126,\"count\":1,\"type\":\"VEC3\"}],\"meshes\":[{\"primitives\":[{"
                       "\"attributes\":{\"POSITION\":0}}]}],\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]}";
    expect_fail("http", http, "only data: and relative file URIs");
    expect_fail("glTF 1", "{\"asset\":{\"version\":\"1.0\"}}", "only glTF 2.x");
}


/* A chain of nodes deeper than the limit, an absurd count, TEXCOORD_1, a camera, no scenes. */
static void test_more(void)
{
    char *nodes = malloc(300 * 24 + 64), *j;
    size_t n = 0;
    for (int i = 0; i < 300; ++i) n += (size_t)sprintf(nodes + n, i < 299 ? "{\"children\":[%d]}," : "{\"mesh\":0}", i + 1);
    char *body = malloc(300 * 24 + 1024);
    sprintf(body,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],\"nodes\":[%s],\"scenes\":[{\"nodes\":[0]}]",
            nodes);
    j = doc(quad, sizeof quad, "%s", body);
    expect_fail("depth", j, "the node hierarchy is deeper than 256");
    free(j);
    free(body);
    free(nodes);
    j = doc(quad, sizeof quad,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48,\"byteStride\":252}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4294967294,\"type\":\"VEC3\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0}}]}],"
            "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]");
    expect_fail("count x stride", j, "reads past the end of bufferView 0 (byteOffset 0 + 4294967294 x stride 252");
    free(j);
    /* TEXCOORD_1 into lm_texcoords (v flipped); a camera 2 up, turned to look down -y */
    float b[15] = { 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0.25f, 0, 1 };
    j = doc(b, sizeof b,
            "\"bufferViews\":[{\"buffer\":0,\"byteLength\":36},{\"buffer\":0,\"byteOffset\":36,\"byteLength\":24}],"
            "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":3,\"type\":\"VEC3\"},"
            "{\"bufferView\":1,\"componentType\":5126,\"count\":3,\"type\":\"VEC2\"}],"
            "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0,\"TEXCOORD_1\":1}}]}],"
            "\"cameras\":[{\"type\":\"perspective\",\"name\":\"top\",\"perspective\":{\"yfov\":0.5,\"znear\":0.1}}],"
            "\"nodes\":[{\"mesh\":0},{\"camera\":0,\"translation\":[0,2,0],\"rotation\":[-0.70710678,0,0,0.70710678]}]");
    bk_scene s;
    BK_EXPECTF(load_str(j, &s) == 0, "%s", err); /* no scenes: both root nodes */
    BK_EXPECT(s.tri_count == 1 && s.tri_lmvt && s.lm_texcoord_count == 3 && s.tri_vt[0] == BK_NONE);
    if (s.tri_lmvt && s.lm_texcoord_count == 3)
        BK_EXPECTF(s.lm_texcoords[2 * s.tri_lmvt[1] + 1] == 0.75f, "lm v %g", s.lm_texcoords[2 * s.tri_lmvt[1] + 1]);
    BK_EXPECT(s.camera_count == 1);
    if (s.camera_count == 1) {
        const bk_scene_camera *c = &s.cameras[0];
        BK_EXPECT(!strcmp(c->name, "top") && c->yfov == 0.5f && c->pos[1] == 2.0f);
        BK_EXPECTF(fabsf(c->dir[1] + 1.0f) < 1e-6f && fabsf(c->up[2] + 1.0f) < 1e-6f, "dir %g %g %g up %g %g %g", c->dir[0],
                   c->dir[1], c->dir[2], c->up[0], c->up[1], c->up[2]);
    }
    bk_scene_free(&s);
    free(j);
}

/* ---- files: GLB, external URIs ----------------------------------------------------------------- */

static char tmp[256];

static void put(const char *name, const void *d, size_t n)
{
    char  p[512];
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    f = fopen(p, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        perror(p);
        exit(1);
    }
}

static size_t glb(uint8_t *out, const char *json, const void *bin, size_t bn)
{
    size_t jn = strlen(json), jp = (jn + 3) & ~(size_t)3, bp = (bn + 3) & ~(size_t)3, total = 12 + 8 + jp + 8 + bp;
    uint32_t h[3] = { 0x46546C67u, 2, (uint32_t)total }, cj[2] = { (uint32_t)jp, 0x4E4F534Au }, cb[2] = { (uint32_t)bp, 0x004E4942u };
    memcpy(out, h, 12);
    memcpy(out + 12, cj, 8);
    memset(out + 20, ' ', jp);
    memcpy(out + 20, json, jn);
    memcpy(out + 20 + jp, cb, 8);
    memset(out + 28 + jp, 0, bp);
    memcpy(out + 28 + jp, bin, bn);
    return total;
}

static void test_files(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/bk-gltf-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        exit(1);
    }
    static const char body[] =
        "\"bufferViews\":[{\"buffer\":0,\"byteLength\":48}],"
        "\"accessors\":[{\"bufferView\":0,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"}],"
        "\"meshes\":[{\"primitives\":[{\"attributes\":{\"POSITION\":0},\"mode\":5}]}],"
        "\"nodes\":[{\"mesh\":0}],\"scenes\":[{\"nodes\":[0]}]}";
    char json[2048], path[512];
    snprintf(json, sizeof json, "{\"asset\":{\"version\":\"2.0\"},\"buffers\":[{\"byteLength\":48,\"uri\":\"a%%20b.bin\"}],%s", body);
    put("a b.bin", quad, sizeof quad);
    put("ext.gltf", json, strlen(json));
    bk_scene s;
    snprintf(path, sizeof path, "%s/ext.gltf", tmp);
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(s.tri_count == 2);
    bk_scene_free(&s);
    /* the same document from memory reads no other file */
    BK_EXPECT(bk_scene_load_gltf_mem(json, strlen(json), "m.gltf", &s, err, sizeof err) < 0 &&
              strstr(err, "names another file"));
    snprintf(json, sizeof json, "{\"asset\":{\"version\":\"2.0\"},\"buffers\":[{\"byteLength\":48,\"uri\":\"%s/a%%20b.bin\"}],%s", tmp, body);
    put("abs.gltf", json, strlen(json));
    snprintf(path, sizeof path, "%s/abs.gltf", tmp);
    BK_EXPECT(bk_scene_load(path, &s, err, sizeof err) < 0 && strstr(err, "absolute path") && !strchr(err, '\n'));
    /* GLB: whole, then cut */
    snprintf(json, sizeof json, "{\"asset\":{\"version\":\"2.0\"},\"buffers\":[{\"byteLength\":48}],%s", body);
    uint8_t g[4096];
    size_t  n = glb(g, json, quad, sizeof quad);
    put("s.glb", g, n);
    seed(g, n, "glb");
    snprintf(path, sizeof path, "%s/s.glb", tmp);
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(s.tri_count == 2);
    bk_scene_free(&s);
    put("cut.glb", g, n - 10);
    snprintf(path, sizeof path, "%s/cut.glb", tmp);
    BK_EXPECT(bk_scene_load(path, &s, err, sizeof err) < 0 && strstr(err, "truncated") && strstr(err, "cut.glb: "));
    printf("truncated GLB: %s\n", err);
    uint32_t short_len = 100; /* the header's length 100: the JSON chunk then runs past it */
    memcpy(g + 8, &short_len, 4);
    put("len.glb", g, n);
    snprintf(path, sizeof path, "%s/len.glb", tmp);
    BK_EXPECT(bk_scene_load(path, &s, err, sizeof err) < 0 && !strchr(err, '\n'));
    printf("GLB chunk past its length: %s\n", err);
    /* an embedded image is named FILE:images[N], which is no input file even where a file of
     * that name exists: an output of that name is no clash (bk_outputs_scene_inputs) */
    {
        char name[512], img[600];
        snprintf(name, sizeof name, "%s/e.gltf", tmp);
        snprintf(img, sizeof img, "%s:images[0]", name);
        put("e.gltf:images[0]", "x", 1);
        bk_scene e;
        BK_EXPECTF(bk_scene_load_gltf_mem(material_doc, strlen(material_doc), name, &e, err, sizeof err) == 0, "%s", err);
        BK_EXPECT(e.image_count == 1 && e.images[0].embedded && !strcmp(e.images[0].path, img));
        bk_outputs o;
        bk_outputs_init(&o);
        BK_EXPECT(bk_outputs_add(&o, "-o", img, 0, err, sizeof err) >= 0);
        BK_EXPECTF(bk_outputs_scene_inputs(&o, &e, err, sizeof err) == 0, "an embedded image was taken for a file: %s", err);
        bk_outputs_free(&o);
        bk_scene_free(&e);
        unlink(img);
    }
    const char *names[] = { "a b.bin", "ext.gltf", "abs.gltf", "s.glb", "cut.glb", "len.glb" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
        snprintf(path, sizeof path, "%s/%s", tmp, names[i]);
        unlink(path);
    }
    rmdir(tmp);
}

int main(void)
{
#if !BK_HAVE_GLTF
    BK_TEST_SKIP("built without cJSON (libcjson-dev): no glTF input");
#endif
    test_corpus();
    test_modes();
    test_quantized_sparse();
    test_transforms();
    test_material();
    test_refusals();
    test_more();
    test_files();
    free(material_doc);
    BK_TEST_DONE();
}
