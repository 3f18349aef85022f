/* bk_test_materials.h - the scenes the texture and cut-out tests write (OBJ, MTL and PNG files in
 * a folder of their own) and bake through the real program: tests/cpu_materials.c checks what they
 * bake, tests/gpu_materials.c that the GPU bakes them as the CPU does.
 */
#ifndef BK_TEST_MATERIALS_H
#define BK_TEST_MATERIALS_H

#include "bk_test.h"
#include "bk_test_run.h"
#include "bk_test_stb_image.h"
#include "bake.h"
#include "loader.h"
#include "material.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bk_test_stb_write.h"

static char dir[256]; /* the folder the scenes are written in */

static void put(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    BK_EXPECTF(f != NULL, "cannot write %s", path);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void png(const char *name, int w, int h, const unsigned char *rgba)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    BK_EXPECTF(stbi_write_png(path, w, h, 4, rgba, 4 * w) != 0, "cannot write %s", path);
}

/* A w x h PNG of one colour. */
static void png_solid(const char *name, int w, int h, unsigned r, unsigned g, unsigned b, unsigned a)
{
    unsigned char *px = malloc(4 * (size_t)w * h);
    for (int i = 0; i < w * h; ++i) {
        px[4 * i] = (unsigned char)r;
        px[4 * i + 1] = (unsigned char)g;
        px[4 * i + 2] = (unsigned char)b;
        px[4 * i + 3] = (unsigned char)a;
    }
    png(name, w, h, px);
    free(px);
}

/* Bakes dir/scene into dir/out with args on the CPU (args may name another --backend); returns
 * the exit status. */
static int bake(const char *scene, const char *out, const char *args)
{
    char a[4096], msg[8192];
    snprintf(a, sizeof a, "'%s/%s' -o '%s/%s' --backend cpu --quiet %s", dir, scene, dir, out, args);
    int rc = bk_test_run_baker(dir, msg, sizeof msg, a);
    BK_EXPECTF(rc == 0, "baker %s: exit %d: %s", a, rc, msg);
    return rc;
}

/* Whether dir/a and dir/b hold the same bytes. */
static int same_file(const char *a, const char *b)
{
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/%s", dir, a);
    snprintf(pb, sizeof pb, "%s/%s", dir, b);
    return bk_test_same_file(pa, pb);
}

static float *hdr(const char *name, int *w, int *h)
{
    char path[512];
    int  c;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    float *f = stbi_loadf(path, w, h, &c, 3);
    BK_EXPECTF(f != NULL, "cannot read %s", path);
    return f;
}

/* ---- the fence ------------------------------------------------------------------------------
 * Ground y = 0, x and z in [-2, 2] (vt u in [0, 0.5]); a fence at z = 0, x in [-1, 1], y in
 * [0.25, 1.25], facing +z (vt u in [0.5, 1], v in [0, 0.25]); the sun towards (0, 1, 1) puts its
 * shadow on the ground at z in [-1.25, -0.25]. */
static const char *GROUND = "v -2 0 -2\nv -2 0 2\nv 2 0 2\nv 2 0 -2\nvt 0 0\nvt 0 1\nvt 0.5 1\nvt 0.5 0\n"
                            "usemtl ground\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n";

/* The fence as one quad (material fence), or as stripe k of 8 (the opaque ones: k even). */
static size_t fence_quad(char *b, size_t n, int vbase, float x0, float x1)
{
    float u0 = 0.5f + (x0 + 1.0f) / 4.0f, u1 = 0.5f + (x1 + 1.0f) / 4.0f;
    return (size_t)snprintf(b, n,
                            "v %g 0.25 0\nv %g 0.25 0\nv %g 1.25 0\nv %g 1.25 0\nvt %g 0\nvt %g 0\nvt %g 0.25\n"
                            "vt %g 0.25\nf %d/%d %d/%d %d/%d\nf %d/%d %d/%d %d/%d\n",
                            x0, x1, x1, x0, u0, u1, u1, u0, vbase, vbase, vbase + 1, vbase + 1, vbase + 2, vbase + 2,
                            vbase, vbase, vbase + 2, vbase + 2, vbase + 3, vbase + 3);
}

static void fence_scene(const char *name, const char *mtl_name, int stripes)
{
    char   b[8192];
    size_t at = (size_t)snprintf(b, sizeof b, "mtllib %s\n%susemtl fence\n", mtl_name, GROUND);
    if (!stripes) at += fence_quad(b + at, sizeof b - at, 5, -1.0f, 1.0f);
    for (int k = 0; stripes && k < 8; k += 2)
        at += fence_quad(b + at, sizeof b - at, 5 + 2 * k, -1.0f + 0.25f * k, -1.0f + 0.25f * (k + 1));
    put(name, b);
}


/* ---- an emission map black on one half ---------------------------------------------------------
 * Floor y = 0, x and z in [-1, 1] (vt u in [0, 0.5]) under an emitter at y = 1 facing down, x and
 * z in [-0.5, 0.5] (vt u in [0.5, 1]; the map's u' = 2u - 1): black where u' < 0.5 (x < 0). */
static const char *FLOOR = "v -1 0 -1\nv -1 0 1\nv 1 0 1\nv 1 0 -1\nvt 0 0\nvt 0 1\nvt 0.5 1\nvt 0.5 0\n"
                           "usemtl floor\nf 1/1 2/2 3/3\nf 1/1 3/3 4/4\n";

static void lamp_scene(const char *name, const char *mtl, float x0)
{
    char  b[4096];
    float u0 = 0.5f + (x0 + 0.5f) * 0.5f;
    snprintf(b, sizeof b,
             "mtllib %s\n%sv %g 1 -0.5\nv 0.5 1 -0.5\nv 0.5 1 0.5\nv %g 1 0.5\nvt %g 0\nvt 1 0\nvt 1 1\nvt %g 1\n"
             "usemtl lamp\nf 5/5 6/6 7/7\nf 5/5 7/7 8/8\n",
             mtl, FLOOR, x0, x0, u0, u0);
    put(name, b);
}

/* The fence cut into 4 stripes by map_d (64 x 1 texels, 8 opaque, 8 cut, ...: bilinear at 0.5 puts
 * each edge at a multiple of 1/8, where the geometry's are), placed by -s, -o and -clamp. */
static void write_fence_cut(void)
{
    unsigned char st[64 * 4];
    for (int i = 0; i < 64; ++i) {
        st[4 * i] = st[4 * i + 1] = st[4 * i + 2] = 200;
        st[4 * i + 3] = (i / 8) % 2 ? 0 : 255;
    }
    png("stripes.png", 64, 1, st);
    put("cut.mtl", "newmtl ground\nKd 0.7 0.7 0.7\n\nnewmtl fence\nKd 0.5 0.5 0.5\n"
                   "map_d -s 2 1 1 -o -1 0 0 -clamp on stripes.png\n");
    fence_scene("fence_cut.obj", "cut.mtl", 0);
}

/* The fence of opacity 0.5 (BLEND: d < 1 without map_d). */
static void write_blend(void)
{
    put("blend.mtl", "newmtl ground\nKd 0.7 0.7 0.7\n\nnewmtl fence\nKd 0.5 0.5 0.5\nd 0.5\n");
    fence_scene("fence_blend.obj", "blend.mtl", 0);
}

/* The lamp whose emission map is black where u' < 0.5, on a floor with a checkered albedo map. */
static void write_lamp_tex(void)
{
    unsigned char px[64 * 64 * 4];
    for (int i = 0; i < 64 * 64; ++i) {
        unsigned char c = (i % 64) < 32 ? 0 : 255;
        px[4 * i] = px[4 * i + 1] = px[4 * i + 2] = c;
        px[4 * i + 3] = 255;
    }
    png("half.png", 64, 64, px);
    put("lamp_tex.mtl", "newmtl floor\nKd 0.5 0.5 0.5\n\nnewmtl lamp\nKd 0 0 0\nKe 4 4 4\n"
                        "map_Ke -s 2 1 1 -o -1 0 0 -clamp on half.png\n");
    lamp_scene("lamp_tex.obj", "lamp_tex.mtl", -0.5f);
}

#endif /* BK_TEST_MATERIALS_H */
