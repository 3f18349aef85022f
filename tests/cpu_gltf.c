/* cpu_gltf.c - a glTF scene bakes as the same scene written as OBJ + MTL, byte for byte.
 *
 * A small textured room (a floor with a checker PNG, a grey blocker, an emissive ceiling quad)
 * is written twice in a temporary folder: room.obj + room.mtl, and room.gltf with its positions,
 * normals and UVs in a data: URI and the PNG as an external file. The triangles come in the same
 * order with the same float positions, normals and UVs (v written 1 - v in glTF, exact for the
 * quarters used here), the materials are the same (Kd 1 x map_Kd, Kd 0.5, Ke 4 = emissiveFactor
 * 1 x KHR_materials_emissive_strength 4). Both are baked by the real program on the CPU backend,
 * with --uv auto and with --uv file, and the PNGs must be identical; a glTF whose floor texture
 * is another PNG must differ (the texture is read at all). Then the glTF and the OBJ baked
 * together must bake as the OBJ twice (bk_scene_append across formats).
 * Skips (77) when built without cJSON.
 */
#include "bk_test_materials.h"

/* floor (y 0), blocker (z 0, facing +z), light (y 1.5, facing down): 4 corners each */
static const float P[12][3] = { { -1, 0, -1 }, { -1, 0, 1 }, { 1, 0, 1 }, { 1, 0, -1 },
                                { -0.5f, 0, 0 }, { 0.5f, 0, 0 }, { 0.5f, 0.75f, 0 }, { -0.5f, 0.75f, 0 },
                                { -0.25f, 1.5f, -0.25f }, { 0.25f, 1.5f, -0.25f }, { 0.25f, 1.5f, 0.25f },
                                { -0.25f, 1.5f, 0.25f } };
static const float N[3][3] = { { 0, 1, 0 }, { 0, 0, 1 }, { 0, -1, 0 } };
static const float UV[12][2] = { { 0, 0 },    { 0, 0.5f },    { 0.5f, 0.5f },  { 0.5f, 0 },
                                 { 0.5f, 0 }, { 1, 0 },       { 1, 0.25f },    { 0.5f, 0.25f },
                                 { 0.5f, 0.5f }, { 0.75f, 0.5f }, { 0.75f, 0.75f }, { 0.5f, 0.75f } };
static const char *MAT[3] = { "floor", "grey", "light" };

static void write_obj(const char *name, const char *mtl)
{
    char   b[8192];
    size_t n = (size_t)snprintf(b, sizeof b, "mtllib %s\n", mtl);
    for (int i = 0; i < 12; ++i) n += (size_t)snprintf(b + n, sizeof b - n, "v %.9g %.9g %.9g\n", P[i][0], P[i][1], P[i][2]);
    for (int i = 0; i < 12; ++i) n += (size_t)snprintf(b + n, sizeof b - n, "vt %.9g %.9g\n", UV[i][0], UV[i][1]);
    for (int i = 0; i < 12; ++i)
        n += (size_t)snprintf(b + n, sizeof b - n, "vn %.9g %.9g %.9g\n", N[i / 4][0], N[i / 4][1], N[i / 4][2]);
    for (int q = 0; q < 3; ++q) {
        int a = 4 * q + 1;
        n += (size_t)snprintf(b + n, sizeof b - n, "usemtl %s\nf %d/%d/%d %d/%d/%d %d/%d/%d\nf %d/%d/%d %d/%d/%d %d/%d/%d\n",
                              MAT[q], a, a, a, a + 1, a + 1, a + 1, a + 2, a + 2, a + 2, a, a, a, a + 2, a + 2, a + 2,
                              a + 3, a + 3, a + 3);
    }
    put(name, b);
}

/* One primitive per quad (its 4 vertices; indices 0 1 2, 0 2 3 as the OBJ's faces). lm: the
 * file's lightmap set case, with the UVs in TEXCOORD_1, TEXCOORD_0 one point (0.9, 0.9) and an
 * untextured floor. Accessors per quad q: 4q positions, 4q+1 normals, 4q+2 UVs, 4q+3 the point. */
static void write_gltf(const char *name, const char *png_name, int lm)
{
    enum { NV = 12 };
    uint8_t buf[NV * 12 * 2 + NV * 8 * 2 + 12];
    size_t  o = 0;
    memcpy(buf + o, P, sizeof P), o += sizeof P;
    for (int i = 0; i < NV; ++i) memcpy(buf + o, N[i / 4], 12), o += 12;
    for (int i = 0; i < NV; ++i) {
        float uv[2] = { UV[i][0], 1.0f - UV[i][1] };
        memcpy(buf + o, uv, 8), o += 8;
    }
    static const uint16_t idx[6] = { 0, 1, 2, 0, 2, 3 };
    memcpy(buf + o, idx, sizeof idx), o += sizeof idx;
    for (int i = 0; i < NV; ++i) {
        float pt[2] = { 0.9f, 0.9f };
        memcpy(buf + o, pt, 8), o += 8;
    }
    char uri[2048], j[12288];
    bk_test_b64_encode(buf, o, uri);
    size_t n = (size_t)snprintf(j, sizeof j,
                                "{\"asset\":{\"version\":\"2.0\"},\"extensionsUsed\":[\"KHR_materials_emissive_strength\"],"
                                "\"buffers\":[{\"byteLength\":%zu,\"uri\":\"data:application/octet-stream;base64,%s\"}],"
                                "\"bufferViews\":[{\"buffer\":0,\"byteLength\":%d},{\"buffer\":0,\"byteOffset\":%d,"
                                "\"byteLength\":%d},{\"buffer\":0,\"byteOffset\":%d,\"byteLength\":%d},{\"buffer\":0,"
                                "\"byteOffset\":%d,\"byteLength\":12},{\"buffer\":0,\"byteOffset\":%d,\"byteLength\":%d}],"
                                "\"accessors\":[",
                                o, uri, NV * 12, NV * 12, NV * 12, NV * 24, NV * 8, NV * 32, NV * 32 + 12, NV * 8);
    for (int q = 0; q < 3; ++q)
        n += (size_t)snprintf(j + n, sizeof j - n,
                              "{\"bufferView\":0,\"byteOffset\":%d,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"},"
                              "{\"bufferView\":1,\"byteOffset\":%d,\"componentType\":5126,\"count\":4,\"type\":\"VEC3\"},"
                              "{\"bufferView\":2,\"byteOffset\":%d,\"componentType\":5126,\"count\":4,\"type\":\"VEC2\"},"
                              "{\"bufferView\":4,\"byteOffset\":%d,\"componentType\":5126,\"count\":4,\"type\":\"VEC2\"},",
                              48 * q, 48 * q, 32 * q, 32 * q);
    n += (size_t)snprintf(j + n, sizeof j - n,
                          "{\"bufferView\":3,\"componentType\":5123,\"count\":6,\"type\":\"SCALAR\"}],"
                          "\"images\":[{\"uri\":\"%s\"}],\"textures\":[{\"source\":0}],\"materials\":[%s"
                          "{\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.5,0.5,0.5,1]}},"
                          "{\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.5,0.5,0.5,1]},\"emissiveFactor\":[1,1,1],"
                          "\"extensions\":{\"KHR_materials_emissive_strength\":{\"emissiveStrength\":4}}}],"
                          "\"meshes\":[{\"primitives\":[",
                          png_name,
                          lm ? "{\"pbrMetallicRoughness\":{\"baseColorFactor\":[0.75,0.75,0.75,1]}},"
                             : "{\"pbrMetallicRoughness\":{\"baseColorTexture\":{\"index\":0}}},");
    for (int q = 0; q < 3; ++q) {
        char attrs[160];
        if (lm) snprintf(attrs, sizeof attrs, "\"TEXCOORD_0\":%d,\"TEXCOORD_1\":%d", 4 * q + 3, 4 * q + 2);
        else snprintf(attrs, sizeof attrs, "\"TEXCOORD_0\":%d", 4 * q + 2);
        n += (size_t)snprintf(j + n, sizeof j - n,
                              "%s{\"attributes\":{\"POSITION\":%d,\"NORMAL\":%d,%s},\"indices\":12,\"material\":%d}",
                              q ? "," : "", 4 * q, 4 * q + 1, attrs, q);
    }
    snprintf(j + n, sizeof j - n, "]}],\"nodes\":[{\"mesh\":0,\"name\":\"room\"}],\"scenes\":[{\"nodes\":[0]}]}");
    put(name, j);
}

int main(void)
{
#if !BK_HAVE_GLTF
    BK_TEST_SKIP("built without cJSON (libcjson-dev): no glTF input");
#endif
    snprintf(dir, sizeof dir, "/tmp/bk_cpu_gltf_%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return 1;
    unsigned char px[4 * 16];
    for (int i = 0; i < 16; ++i) {
        int on = ((i & 3) + (i >> 2)) & 1;
        px[4 * i] = on ? 230 : 40, px[4 * i + 1] = on ? 200 : 90, px[4 * i + 2] = on ? 60 : 180, px[4 * i + 3] = 255;
    }
    png("checker.png", 4, 4, px);
    png_solid("flat.png", 4, 4, 128, 128, 128, 255);
    put("room.mtl", "newmtl floor\nKd 1 1 1\nmap_Kd checker.png\n\nnewmtl grey\nKd 0.5 0.5 0.5\n\n"
                    "newmtl light\nKd 0.5 0.5 0.5\nKe 4 4 4\n");
    write_obj("room.obj", "room.mtl");
    write_gltf("room.gltf", "checker.png", 0);
    write_gltf("flat.gltf", "flat.png", 0);
    write_gltf("lm.gltf", "flat.png", 1);
    const char *args = "--size 64 --spp 8 --bounces 2 --seed 3";
    bake("room.obj", "obj.png", args);
    bake("room.gltf", "gltf.png", args);
    bake("flat.gltf", "flat_out.png", args);
    BK_EXPECTF(same_file("obj.png", "gltf.png"), "the glTF room bakes another lightmap than the OBJ room (--uv auto)");
    BK_EXPECTF(!same_file("obj.png", "flat_out.png"), "another floor texture in the glTF changed nothing");
    const char *fargs = "--uv file --size 64 --spp 8 --bounces 2 --seed 3";
    bake("room.obj", "obj_uv.png", fargs);
    bake("room.gltf", "gltf_uv.png", fargs);
    BK_EXPECTF(same_file("obj_uv.png", "gltf_uv.png"), "the glTF room bakes another lightmap than the OBJ room (--uv file)");
    /* --uv file reads TEXCOORD_1 where the file has it: an untextured room whose TEXCOORD_0 is
     * one point and whose TEXCOORD_1 holds the UVs bakes as the OBJ with those UVs as vt */
    put("grey.mtl", "newmtl floor\nKd 0.75 0.75 0.75\n\nnewmtl grey\nKd 0.5 0.5 0.5\n\n"
                    "newmtl light\nKd 0.5 0.5 0.5\nKe 4 4 4\n");
    write_obj("grey.obj", "grey.mtl");
    bake("grey.obj", "grey_uv.png", fargs);
    bake("lm.gltf", "lm_uv.png", fargs);
    BK_EXPECTF(same_file("grey_uv.png", "lm_uv.png"), "--uv file did not bake the glTF's TEXCOORD_1 as the OBJ's vt");
    /* the two formats in one bake: as the OBJ twice */
    char a[4096], msg[8192];
    snprintf(a, sizeof a, "'%s/room.obj' '%s/room.gltf' -o '%s/mix.png' --backend cpu --quiet %s", dir, dir, dir, args);
    BK_EXPECTF(bk_test_run_baker(dir, msg, sizeof msg, a) == 0, "%s", msg);
    write_obj("room2.obj", "room.mtl");
    snprintf(a, sizeof a, "'%s/room.obj' '%s/room2.obj' -o '%s/twice.png' --backend cpu --quiet %s", dir, dir, dir, args);
    BK_EXPECTF(bk_test_run_baker(dir, msg, sizeof msg, a) == 0, "%s", msg);
    BK_EXPECTF(same_file("mix.png", "twice.png"), "OBJ + glTF in one bake differs from the OBJ twice");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures) BK_EXPECT(system(cmd) == 0);
    BK_TEST_DONE();
}
