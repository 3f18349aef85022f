/* cpu_materials.c - textures and cut-outs in the light transport, through the real program on
 * scenes this test writes (OBJ, MTL and PNG files in a temporary folder):
 *   - the Cornell box whose wall colours come from solid-colour textures bakes the same file, byte
 *     for byte, as the box with those colours in Kd; so does Kd x a white texture;
 *   - a fence whose stripes are cut out by map_d (-s, -o and -clamp place the map) casts the shadow
 *     of the same stripes modelled as geometry: the ground's mean within 0.5 %, and nearly every
 *     texel within 2 %;
 *   - map_d of alpha 0 everywhere bakes the ground of no fence at all, bit for bit; alpha 1
 *     everywhere the whole file of a solid fence;
 *   - BLEND (d 0.5) passes half the sun: the shadow over the lit ground within 5 standard errors
 *     of 0.5;
 *   - a quad whose emission map is black on one half lights the floor as the lit half alone does
 *     (means within 5 standard errors), and light sampling never picks a sub-triangle that lies
 *     a texel or more inside the black half (the emitter table, through the library).
 * Each comparison bakes with --uv file, so the ground keeps its texels whatever else the scene
 * holds, and reads the .hdr outputs back.
 */
#include "bk_test_materials.h"

/* ---- the Cornell box through textures ------------------------------------------------------ */

static float srgb_linear(unsigned b)
{
    double c = b / 255.0;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}

static unsigned linear_srgb_byte(double l)
{
    double s = l <= 0.0031308 ? 12.92 * l : 1.055 * pow(l, 1 / 2.4) - 0.055;
    return (unsigned)lround(s * 255.0);
}

static void check_cornell(void)
{
    char src[1024], cmd[2048];
    snprintf(src, sizeof src, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/box.obj'", src, dir);
    BK_EXPECT(system(cmd) == 0);
    /* the box's colours, made the linear values of sRGB bytes, so a texture can hold them exactly */
    static const char  *names[4] = { "white", "red", "green", "light" };
    static const double kd[4][3] = {
        { 0.73, 0.73, 0.73 }, { 0.65, 0.05, 0.05 }, { 0.12, 0.45, 0.15 }, { 0.78, 0.78, 0.78 }
    };
    char   mtl[3][4096];
    size_t at[3] = { 0, 0, 0 };
    for (int m = 0; m < 4; ++m) {
        unsigned b[3];
        float    l[3];
        for (int k = 0; k < 3; ++k) l[k] = srgb_linear(b[k] = linear_srgb_byte(kd[m][k]));
        char tex[64];
        snprintf(tex, sizeof tex, "%s.png", names[m]);
        png_solid(tex, 4, 4, b[0], b[1], b[2], 255);
        const char *ke = m == 3 ? "Ke 17 12 4\n" : "";
        at[0] += (size_t)snprintf(mtl[0] + at[0], sizeof mtl[0] - at[0], "newmtl %s\nKd %.9g %.9g %.9g\n%s\n", names[m],
                                  l[0], l[1], l[2], ke);
        at[1] += (size_t)snprintf(mtl[1] + at[1], sizeof mtl[1] - at[1], "newmtl %s\nKd 1 1 1\nmap_Kd %s\n%s\n",
                                  names[m], tex, ke);
        at[2] += (size_t)snprintf(mtl[2] + at[2], sizeof mtl[2] - at[2],
                                  "newmtl %s\nKd %.9g %.9g %.9g\nmap_Kd white_tex.png\n%s\n", names[m], l[0], l[1],
                                  l[2], ke);
    }
    png_solid("white_tex.png", 2, 2, 255, 255, 255, 255);
    const char *outs[3] = { "box_kd.hdr", "box_map.hdr", "box_kd_white.hdr" };
    for (int v = 0; v < 3; ++v) {
        put("cornell.mtl", mtl[v]);
        bake("box.obj", outs[v], "--size 96 --spp 16 --bounces 2");
    }
    BK_EXPECTF(same_file(outs[0], outs[1]),
               "the box with its colours in textures differs from the box with them in Kd");
    BK_EXPECTF(same_file(outs[0], outs[2]), "the box with Kd x a white texture differs from the box with Kd");
    /* and the textures are read at all: a green wall texture where the white one was changes the map */
    put("cornell.mtl", "newmtl white\nKd 1 1 1\nmap_Kd green.png\n\nnewmtl red\nKd 0.65 0.05 0.05\n\n"
                       "newmtl green\nKd 0.12 0.45 0.15\n\nnewmtl light\nKd 0.78 0.78 0.78\nKe 17 12 4\n");
    bake("box.obj", "box_green.hdr", "--size 96 --spp 16 --bounces 2");
    BK_EXPECTF(!same_file(outs[0], "box_green.hdr"), "a green texture on the white walls changed nothing");
}

static const char *SUN = "--uv file --size 128 --spp 32 --bounces 1 --sun 0,1,1,3,3,3,0.5 --sky 0.1,0.1,0.1 "
                         "--denoise off";

/* Mean luminance over the ground's texels (pixels x < 60 of the 128-wide map: u < 0.47). */
static double ground_mean(const float *f, int w, int h, int *n)
{
    double s = 0;
    *n = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < 60 && x < w; ++x) {
            const float *p = f + 3 * ((size_t)y * w + x);
            s += 0.2126 * p[0] + 0.7152 * p[1] + 0.0722 * p[2];
            (*n)++;
        }
    return *n ? s / *n : 0;
}

static void check_fence(void)
{
    /* 64 x 1 stripes: 8 texels opaque, 8 cut away, four times; bilinear at 0.5 puts each edge on
     * the geometry's, at multiples of 1/8 */
    write_fence_cut();
    png_solid("clear.png", 4, 4, 200, 200, 200, 0);
    png_solid("opaque.png", 4, 4, 200, 200, 200, 255);
    const char *plain = "newmtl ground\nKd 0.7 0.7 0.7\n\nnewmtl fence\nKd 0.5 0.5 0.5\n";
    char        m[1024];
    snprintf(m, sizeof m, "%smap_d clear.png\n", plain);
    put("clear.mtl", m);
    snprintf(m, sizeof m, "%smap_d opaque.png\n", plain);
    put("opaque.mtl", m);
    put("plain.mtl", plain);
    fence_scene("fence_geom.obj", "plain.mtl", 1);
    fence_scene("fence_clear.obj", "clear.mtl", 0);
    fence_scene("fence_opaque.obj", "opaque.mtl", 0);
    fence_scene("fence_solid.obj", "plain.mtl", 0);
    char none[2048];
    snprintf(none, sizeof none, "mtllib plain.mtl\n%s", GROUND);
    put("fence_none.obj", none);
    const char *scenes[6] = { "fence_cut.obj",    "fence_geom.obj",  "fence_clear.obj",
                              "fence_opaque.obj", "fence_solid.obj", "fence_none.obj" };
    const char *outs[6] = { "cut.hdr", "geom.hdr", "clear.hdr", "opaque.hdr", "solid.hdr", "none.hdr" };
    for (int k = 0; k < 6; ++k) bake(scenes[k], outs[k], SUN);
    int    w[6], h[6], n;
    float *f[6];
    for (int k = 0; k < 6; ++k) f[k] = hdr(outs[k], &w[k], &h[k]);
    if (f[0] && f[1] && w[0] == w[1] && h[0] == h[1]) {
        double a = ground_mean(f[0], w[0], h[0], &n), g = ground_mean(f[1], w[1], h[1], &n);
        size_t off = 0;
        for (int y = 0; y < h[0]; ++y)
            for (int x = 0; x < 60; ++x) {
                const float *p = f[0] + 3 * ((size_t)y * w[0] + x), *q = f[1] + 3 * ((size_t)y * w[0] + x);
                off += fabsf(p[1] - q[1]) > 0.02f * fmaxf(q[1], 0.05f);
            }
        printf("fence: ground mean %.5f cut out, %.5f as geometry (%+.3f %%); %zu of %d texels differ by > 2 %%\n", a,
               g, 100.0 * (a / g - 1.0), off, n);
        BK_EXPECTF(fabs(a / g - 1.0) < 0.005, "cut-out fence shadow mean %.5f, geometry %.5f", a, g);
        BK_EXPECTF(off < (size_t)(0.02 * n), "%zu of %d ground texels differ by more than 2 %%", off, n);
        /* the striped shadow is there: the shadow band is far darker where a stripe stands */
        BK_EXPECTF(a < 0.97 * ground_mean(f[5], w[5], h[5], &n), "the fence casts no shadow (%.5f)", a);
    }
    if (f[2] && f[5] && w[2] == w[5] && h[2] == h[5]) {
        size_t diff = 0;
        for (int y = 0; y < h[2]; ++y)
            for (int x = 0; x < 60; ++x)
                for (int c = 0; c < 3; ++c)
                    diff += f[2][3 * ((size_t)y * w[2] + x) + c] != f[5][3 * ((size_t)y * w[5] + x) + c];
        BK_EXPECTF(diff == 0, "alpha 0 everywhere: %zu ground values differ from no fence", diff);
    }
    BK_EXPECTF(same_file("opaque.hdr", "solid.hdr"), "alpha 1 everywhere differs from a solid fence");
    for (int k = 0; k < 6; ++k) free(f[k]);
}

/* BLEND at 0.5, sun only: the shadow holds half the lit ground's light. */
static void check_blend(void)
{
    write_blend();
    bake("fence_blend.obj", "blend.hdr",
         "--uv file --size 128 --spp 64 --bounces 0 --sun 0,1,1,3,3,3,0.5 --sky 0,0,0 "
         "--denoise off");
    int    w, h;
    float *f = hdr("blend.hdr", &w, &h);
    if (!f) return;
    /* pixel (x, y) of the map is at vt (x + 0.5, h - y - 0.5) / size (the atlas's v runs down):
     * ground x = 8 u - 2, z = 4 v - 2 */
    double a = 0, a2 = 0, l = 0;
    int    na = 0, nl = 0;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < 60; ++x) {
            double u = (x + 0.5) / w, v = 1.0 - (y + 0.5) / h, wx = 8 * u - 2, wz = 4 * v - 2;
            double L = f[3 * ((size_t)y * w + x) + 1];
            if (fabs(wx) < 0.8 && wz > -1.1 && wz < -0.4) a += L, a2 += L * L, na++;
            if (fabs(wx) < 1.5 && wz > 0.3 && wz < 1.8) l += L, nl++;
        }
    double sm = na ? a / na : 0, lm = nl ? l / nl : 1, var = na > 1 ? (a2 / na - sm * sm) * na / (na - 1) : 0;
    double ratio = sm / lm, se = sqrt(var / (na ? na : 1)) / lm;
    printf("blend 0.5: shadow %.5f of lit %.5f: %.4f (se %.4f, %d texels)\n", sm, lm, ratio, se, na);
    BK_EXPECTF(na > 100 && nl > 100, "the shadow and lit regions hold %d and %d texels", na, nl);
    BK_EXPECTF(fabs(ratio - 0.5) < 5 * se + 0.01, "BLEND 0.5 passes %.4f of the light (se %.4f)", ratio, se);
    free(f);
}

static void check_emission(void)
{
    write_lamp_tex();
    put("lamp_half.mtl", "newmtl floor\nKd 0.5 0.5 0.5\n\nnewmtl lamp\nKd 0 0 0\nKe 4 4 4\n");
    lamp_scene("lamp_half.obj", "lamp_half.mtl", 0.0f);
    const char *args = "--uv file --size 128 --spp 64 --bounces 0 --sky 0,0,0 --denoise off";
    bake("lamp_tex.obj", "lamp_tex.hdr", args);
    bake("lamp_half.obj", "lamp_half.hdr", args);
    int    w[2], h[2], n;
    float *f[2] = { hdr("lamp_tex.hdr", &w[0], &h[0]), hdr("lamp_half.hdr", &w[1], &h[1]) };
    if (f[0] && f[1] && w[0] == w[1] && h[0] == h[1]) {
        double m[2], v = 0;
        for (int k = 0; k < 2; ++k) m[k] = ground_mean(f[k], w[k], h[k], &n);
        for (int y = 0; y < h[0]; ++y) /* the spread of the per-texel difference: its standard error */
            for (int x = 0; x < 60; ++x) {
                double d = f[0][3 * ((size_t)y * w[0] + x) + 1] - f[1][3 * ((size_t)y * w[0] + x) + 1];
                v += d * d;
            }
        double se = sqrt(v / n / n);
        printf("emission map half black: floor %.5f, lit half alone %.5f (se %.5f)\n", m[0], m[1], se);
        BK_EXPECTF(fabs(m[0] - m[1]) < 5 * se + 1e-4 * m[1], "floor %.5f under the half-black map, %.5f under the half",
                   m[0], m[1]);
        BK_EXPECTF(m[1] > 0.01, "the lamp lights nothing (%.5f)", m[1]);
    }
    free(f[0]);
    free(f[1]);
    /* the emitter table: no sub-triangle more than a texel inside the black half has weight */
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/lamp_tex.obj", dir);
    bk_scene s;
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    bk_tex_pool  pool;
    bk_bake_data d;
    BK_EXPECTF(bk_tex_pool_build(&s, &pool, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(bk_bake_data_build_hit(&s, &pool, s.tri_count, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(d.emit_sub != NULL && d.emit_count > 2, "the mapped lamp has %u emitters, no grid", d.emit_count);
    uint32_t dark = 0;
    for (uint32_t e = 0; d.emit_sub && e < d.emit_count; ++e) {
        uint32_t t = d.emit_tris[e], g = d.emit_grid[t], nn = g >> BK_EMIT_GRID_SHIFT;
        float    c[6], prev = e ? d.emit_cdf[e - 1] : 0.0f;
        if (!(d.emit_cdf[e] > prev) || !d.emit_sub[e]) continue;
        bk_emit_sub_corners(nn, d.emit_sub[e] - 1, c);
        const bk_f4 *uv = d.tri_uv + 2 * (size_t)t;
        int          in = 0;
        for (int k = 0; k < 3; ++k) {
            float u, vv;
            bk_uv_at(uv[0], uv[1], c[2 * k], c[2 * k + 1], &u, &vv);
            in += 2.0f * u - 1.0f <= 0.5f - 1.0f / 64.0f; /* a corner a texel or more inside the black half */
        }
        dark += in == 3;
    }
    BK_EXPECTF(dark == 0, "%u sub-triangles inside the black half are sampled", dark);
    bk_bake_data_free(&d);
    bk_tex_pool_free(&pool);
    bk_scene_free(&s);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/bk_materials_%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return 1;
    check_cornell();
    check_fence();
    check_blend();
    check_emission();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures) BK_EXPECT(system(cmd) == 0);
    BK_TEST_DONE();
}
