/* cpu_view.c - the preview of a baked scene (src/bake/view.h, `baker view`, `baker --preview`) on
 * the demo Cornell box, with things that can fail:
 *   - with a constant lightmap L, --show lit is albedo x L at every pixel on a surface, and a
 *     pixel on the red and the green wall is L x their Kd (linear; through the command, within
 *     the PNGs' rounding); --show lightmap is L, --show albedo the Kd colours;
 *   - a texture multiplies Kd (replaces it with kd_by_map), at the triangle's own vt;
 *   - a miss is the background; the default camera sees the box;
 *   - the bake's --preview is `baker view` of the lightmap it wrote (within 8-bit rounding),
 *     on one page and on several; every --accel gives the same file;
 *   - -o naming the lightmap is refused and the lightmap left as it was;
 *   - directional bands under --bumps: zero ones change nothing, others move the pixels. */
#include "bk_test.h"
#include "bk_test_run.h"
#include "accel.h"
#include "accel_build.h"
#include "atlas.h"
#include "image.h"
#include "loader.h"
#include "material.h"
#include "view.h"

#include <math.h>
#include <string.h>

enum { W = 960, H = 540, RED_X = 288, GREEN_X = 672, ROW = 270 };
static const float L[3] = { 0.5f, 0.7f, 0.9f };
static const float BG[3] = { 0.1f, 0.2f, 0.3f };

static uint32_t material(const bk_scene *s, const char *name)
{
    for (uint32_t m = 0; m < s->material_count; ++m)
        if (!strcmp(s->materials[m].name, name)) return m;
    return BK_NONE;
}

static int near3(const float *a, const float *b, float tol)
{
    for (int k = 0; k < 3; ++k)
        if (!(fabsf(a[k] - b[k]) <= tol * fmaxf(1.0f, fabsf(b[k])))) return 0;
    return 1;
}

/* A camera in front of the open side, looking in: the walls at RED_X / GREEN_X of row ROW. */
static void front_camera(bk_view_opts *o)
{
    bk_view_opts_default(o);
    o->width = W;
    o->height = H;
    o->camera_given = 1;
    o->eye[0] = 0, o->eye[1] = 1, o->eye[2] = 3.5f;
    o->target[0] = 0, o->target[1] = 1, o->target[2] = 0;
    memcpy(o->background, BG, sizeof BG);
}

typedef struct fixture {
    bk_scene    s;
    bk_accel    a;
    bk_atlas    at;
    bk_backend *be;
    float      *lm;
    float      *img[BK_VIEW_SHOW_COUNT];
} fixture;

static void render_all(fixture *f, const bk_view_opts *base)
{
    char             err[512];
    bk_trace_opts    t = bk_trace_opts_default();
    bk_view_lightmap lm = { f->lm, f->at.width, f->at.height, f->at.page_count, { NULL, NULL, NULL } };
    for (int k = 0; k < BK_VIEW_SHOW_COUNT; ++k) {
        bk_view_opts o = *base;
        o.show = k;
        bk_view_result r;
        if (!f->img[k]) f->img[k] = malloc(sizeof(float) * 3 * W * H);
        BK_EXPECTF(bk_view_render(f->be, &t, &f->s, &f->at, &lm, &o, f->img[k], &r, err, sizeof err) == 0, "%s", err);
        BK_EXPECT(r.rays == (uint64_t)W * H);
    }
}

/* With a constant lightmap: lit = albedo x L + the material's Ke wherever there is a surface,
 * lightmap = L, albedo one of the Kd colours, misses the background. */
static void check_constant(fixture *f)
{
    const float *lit = f->img[BK_VIEW_LIT], *lmv = f->img[BK_VIEW_LIGHTMAP], *alb = f->img[BK_VIEW_ALBEDO];
    uint64_t     surface = 0, bad_lit = 0, bad_lm = 0, bad_kd = 0;
    for (size_t i = 0; i < (size_t)W * H; ++i) {
        const float *a = alb + 3 * i;
        if (near3(a, BG, 0) && near3(lit + 3 * i, BG, 0)) continue; /* a miss */
        surface++;
        int      kd = 0;
        uint32_t mat = 0;
        for (uint32_t m = 0; m < f->s.material_count; ++m)
            if (near3(a, f->s.materials[m].kd, 1e-6f)) kd = 1, mat = m;
        bad_kd += !kd;
        const float *ke = f->s.materials[mat].ke; /* the lamp's emission, added as an engine adds it */
        float        want[3] = { a[0] * L[0] + ke[0], a[1] * L[1] + ke[1], a[2] * L[2] + ke[2] };
        bad_lit += !near3(lit + 3 * i, want, 1e-5f);
        bad_lm += !near3(lmv + 3 * i, L, 1e-5f);
    }
    BK_EXPECTF(surface > (uint64_t)W * H / 3, "%llu pixels on a surface", (unsigned long long)surface);
    BK_EXPECTF(!bad_lit && !bad_lm && !bad_kd,
               "of %llu surface pixels: lit != albedo x L at %llu, lightmap != L at "
               "%llu, albedo no Kd at %llu",
               (unsigned long long)surface, (unsigned long long)bad_lit, (unsigned long long)bad_lm,
               (unsigned long long)bad_kd);
    const float *red = f->s.materials[material(&f->s, "red")].kd, *green = f->s.materials[material(&f->s, "green")].kd;
    const size_t pr = (size_t)ROW * W + RED_X, pg = (size_t)ROW * W + GREEN_X;
    float        lr[3] = { red[0] * L[0], red[1] * L[1], red[2] * L[2] };
    BK_EXPECTF(near3(alb + 3 * pr, red, 1e-6f), "red wall pixel albedo %g %g %g", alb[3 * pr], alb[3 * pr + 1],
               alb[3 * pr + 2]);
    BK_EXPECT(near3(alb + 3 * pg, green, 1e-6f));
    BK_EXPECT(near3(lit + 3 * pr, lr, 1e-5f));
    for (int k = 0; k < BK_VIEW_SHOW_COUNT; ++k) BK_EXPECT(near3(f->img[k], BG, 0)); /* pixel (0, 0): a miss */
}

/* map_kd: a 1x1 texture on the red material multiplies its Kd; a 2x1 one on the green material,
 * with kd_by_map, replaces Kd by its texel at the triangles' vt (u = 0.75: the second texel). */
static void check_textures(fixture *f, const bk_view_opts *o)
{
    bk_scene *s = &f->s;
    s->images = calloc(2, sizeof(bk_image));
    s->image_count = 2;
    static const uint8_t one[4] = { 128, 64, 255, 255 }, two[8] = { 255, 0, 0, 255, 0, 0, 255, 255 };
    s->images[0].w = s->images[0].h = 1;
    s->images[0].channels = 4;
    s->images[0].rgba8 = malloc(4);
    memcpy(s->images[0].rgba8, one, 4);
    s->images[1].w = 2;
    s->images[1].h = 1;
    s->images[1].channels = 4;
    s->images[1].rgba8 = malloc(8);
    memcpy(s->images[1].rgba8, two, 8);
    const uint32_t red = material(s, "red"), green = material(s, "green");
    s->materials[red].map_kd.image = 0;
    s->materials[green].map_kd.image = 1;
    s->materials[green].kd_by_map = 1;
    free(s->texcoords);
    s->texcoords = malloc(sizeof(float) * 4);
    s->texcoord_count = 2;
    s->texcoords[0] = 0.25f, s->texcoords[1] = 0.5f, s->texcoords[2] = 0.75f, s->texcoords[3] = 0.5f;
    if (!s->tri_vt) s->tri_vt = malloc(sizeof(uint32_t) * 3 * s->tri_count);
    for (uint32_t t = 0; t < s->tri_count; ++t)
        for (int k = 0; k < 3; ++k) s->tri_vt[3 * t + k] = s->tri_material[t] == green ? 1 : 0;
    render_all(f, o);
    const float *alb = f->img[BK_VIEW_ALBEDO], *lit = f->img[BK_VIEW_LIT];
    const float *kr = s->materials[red].kd;
    float want_r[3] = { kr[0] * bk_image_srgb_to_linear(128 / 255.0f), kr[1] * bk_image_srgb_to_linear(64 / 255.0f),
                        kr[2] };
    float want_g[3] = { 0, 0, 1 };
    const size_t pr = (size_t)ROW * W + RED_X, pg = (size_t)ROW * W + GREEN_X;
    BK_EXPECTF(near3(alb + 3 * pr, want_r, 1e-5f), "textured red %g %g %g, want %g %g %g", alb[3 * pr], alb[3 * pr + 1],
               alb[3 * pr + 2], want_r[0], want_r[1], want_r[2]);
    BK_EXPECTF(near3(alb + 3 * pg, want_g, 1e-5f), "kd_by_map green %g %g %g", alb[3 * pg], alb[3 * pg + 1],
               alb[3 * pg + 2]);
    float lg[3] = { 0, 0, L[2] };
    BK_EXPECT(near3(lit + 3 * pg, lg, 1e-5f));
}

static void library_checks(void)
{
    char    err[512];
    fixture f;
    char    path[1024];
    memset(&f, 0, sizeof f);
    snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    BK_EXPECTF(bk_scene_load(path, &f.s, err, sizeof err) == 0, "%s", err);
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&f.s, BK_ACCEL_BVH, &bo, &f.a, err, sizeof err) == 0, "%s", err);
    bk_atlas_opts ao;
    bk_atlas_opts_default(&ao);
    ao.size = 64;
    BK_EXPECTF(bk_atlas_build(&f.s, &ao, &f.at, err, sizeof err) == 0, "%s", err);
    f.be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&f.a);
    BK_EXPECTF(f.be->i->upload(f.be, &av, err, sizeof err) == 0, "%s", err);
    const size_t n = (size_t)f.at.width * f.at.height;
    f.lm = malloc(sizeof(float) * 3 * n);
    for (size_t i = 0; i < n; ++i) memcpy(f.lm + 3 * i, L, sizeof L);
    bk_view_opts o;
    front_camera(&o);
    render_all(&f, &o);
    check_constant(&f);

    /* the default camera frames the box: a good share of the pixels, the centre one among them */
    bk_view_opts   d;
    bk_view_result r;
    bk_trace_opts  t = bk_trace_opts_default();
    bk_view_opts_default(&d);
    bk_view_lightmap lm = { f.lm, f.at.width, f.at.height, 1, { NULL, NULL, NULL } };
    float           *img = malloc(sizeof(float) * 3 * (size_t)d.width * d.height);
    BK_EXPECTF(bk_view_render(f.be, &t, &f.s, &f.at, &lm, &d, img, &r, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(r.hits > r.rays * 2 / 5, "the default camera sees the box at %llu of %llu pixels",
               (unsigned long long)r.hits, (unsigned long long)r.rays);
    const float *c = img + 3 * ((size_t)(d.height / 2) * d.width + d.width / 2);
    BK_EXPECT(c[0] > 0 || c[1] > 0 || c[2] > 0);
    /* a lightmap of another size is refused, naming the atlas options */
    bk_view_lightmap bad = { f.lm, f.at.width / 2, f.at.height, 1, { NULL, NULL, NULL } };
    BK_EXPECT(bk_view_render(f.be, &t, &f.s, &f.at, &bad, &d, img, &r, err, sizeof err) != 0 && strstr(err, "--size"));
    /* --directional sh under --bumps: zero bands show the plain map bit for bit; bands of the
     * map's size move most pixels on a surface (the bumps' normals), none of them below 0 */
    {
        const size_t n3 = 3 * (size_t)f.at.width * f.at.height, np = 3 * (size_t)d.width * d.height;
        float       *zero = calloc(n3, sizeof(float)), *one = malloc(sizeof(float) * n3);
        float       *plain = malloc(sizeof(float) * np);
        for (size_t i = 0; i < n3; ++i) one[i] = f.lm[i];
        bk_view_opts ob = d;
        ob.show = BK_VIEW_LIGHTMAP;
        ob.bumps = 0.1f;
        BK_EXPECTF(bk_view_render(f.be, &t, &f.s, &f.at, &lm, &ob, plain, &r, err, sizeof err) == 0, "%s", err);
        bk_view_lightmap lz = lm, l1 = lm;
        for (int k = 0; k < 3; ++k) lz.band[k] = zero, l1.band[k] = one;
        BK_EXPECTF(bk_view_render(f.be, &t, &f.s, &f.at, &lz, &ob, img, &r, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(!memcmp(img, plain, sizeof(float) * np), "zero directional bands changed the view");
        BK_EXPECTF(bk_view_render(f.be, &t, &f.s, &f.at, &l1, &ob, img, &r, err, sizeof err) == 0, "%s", err);
        size_t moved = 0, neg = 0;
        for (size_t i = 0; i < np; ++i) {
            moved += fabsf(img[i] - plain[i]) > 0.01f * plain[i];
            neg += img[i] < 0.0f;
        }
        BK_EXPECTF(moved > (size_t)r.hits && neg == 0, "bands under bumps: %zu of %llu pixels' channels moved, %zu < 0",
                   moved, (unsigned long long)(3 * r.hits), neg);
        free(zero);
        free(one);
        free(plain);
    }
    free(img);

    check_textures(&f, &o);
    for (int k = 0; k < BK_VIEW_SHOW_COUNT; ++k) free(f.img[k]);
    free(f.lm);
    bk_backend_free(f.be);
    bk_atlas_free(&f.at);
    bk_accel_free(&f.a);
    bk_scene_free(&f.s);
}

/* The byte of pixel (x, y) channel k of a PNG read back (bk_image_read decodes sRGB exactly). */
static int byte_at(const float *rgb, int w, int x, int y, int k)
{
    return bk_image_srgb8(rgb[3 * ((size_t)y * w + x) + k]);
}


/* Every --accel word traces the view into the same file (the hit point is found again from the
 * hit triangle, so only the triangle matters): what tests/gpu_view.c asks of the two backends. */
static void accels_agree(const char *dir, const char *scene, const char *lm, const char *a, const char *b)
{
#define ACCEL_WORD(w, type, layout, shown) shown ? w : NULL,
    static const char *const words[] = { BK_ACCEL_WORDS(ACCEL_WORD) };
#undef ACCEL_WORD
    char args[4096], err[8192];
    for (size_t k = 0; k < sizeof words / sizeof words[0]; ++k) {
        if (!words[k]) continue;
        snprintf(args, sizeof args, "view '%s' --size 64 --lightmap '%s' -o '%s' --accel %s --backend cpu -q", scene,
                 lm, k ? b : a, words[k]);
        int rc = bk_test_run_baker(dir, err, sizeof err, args);
        BK_EXPECTF(rc == 0, "baker %s: %d: %s", args, rc, err);
        if (k) BK_EXPECTF(bk_test_same_file(a, b), "--accel %s and %s give different views", words[0], words[k]);
    }
}

/* `baker SCENE -o LM --preview PREV ATLAS` and `baker view SCENE --lightmap LM -o VIEW ATLAS` give
 * the same image but for the PNG's rounding (--pages auto: LM names pages LM-0.png ...). */
static void preview_is_view(const char *dir, const char *scene, const char *lm, const char *prev, const char *view,
                            const char *atlas)
{
    char args[4096], err[8192];
    snprintf(args, sizeof args, "'%s' -o '%s' %s --spp 4 --backend cpu --preview '%s' --resolution 320,180 -q", scene,
             lm, atlas, prev);
    int rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", args, rc, err);
    snprintf(args, sizeof args, "view '%s' %s --lightmap '%s' -o '%s' --resolution 320,180 --backend cpu -q", scene,
             atlas, lm, view);
    rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", args, rc, err);
    float *a = NULL, *b = NULL;
    int    wa = 0, ha = 0, wb = 0, hb = 0;
    BK_EXPECT(bk_image_read(prev, &a, &wa, &ha, err, sizeof err) == 0);
    BK_EXPECT(bk_image_read(view, &b, &wb, &hb, err, sizeof err) == 0);
    if (a && b && wa == 320 && ha == 180 && wb == wa && hb == ha) {
        int worst = 0, lit = 0;
        for (int i = 0; i < 3 * 320 * 180; ++i) {
            int d = abs(bk_image_srgb8(a[i]) - bk_image_srgb8(b[i]));
            worst = d > worst ? d : worst;
            lit += a[i] > 0;
        }
        BK_EXPECTF(worst <= 3, "%s: --preview and baker view differ by %d in a byte", atlas, worst);
        BK_EXPECTF(lit > 3 * 320 * 180 / 4, "%s: the preview is dark: %d lit channels", atlas, lit);
    } else {
        BK_EXPECTF(0, "%s: preview %dx%d, view %dx%d", atlas, wa, ha, wb, hb);
    }
    free(a);
    free(b);
}

static void command_checks(void)
{
    char dir[] = "/tmp/bk_cpu_view_XXXXXX", err[8192], args[4096], p[4][600];
    BK_EXPECT(mkdtemp(dir) != NULL);
    const char *names[4] = { "lm.png", "view.png", "baked.png", "preview.png" };
    for (int k = 0; k < 4; ++k) snprintf(p[k], sizeof p[k], "%s/%s", dir, names[k]);
    char scene[1024];
    snprintf(scene, sizeof scene, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    /* a constant lightmap of the atlas's size (--size 64) */
    float *lm = malloc(sizeof(float) * 3 * 64 * 64);
    for (int i = 0; i < 64 * 64; ++i) memcpy(lm + 3 * i, L, sizeof L);
    BK_EXPECTF(bk_image_write(p[0], lm, 64, 64, 1.0f, err, sizeof err) == 0, "%s", err);
    free(lm);
    snprintf(args, sizeof args,
             "view '%s' --size 64 --lightmap '%s' -o '%s' --camera 0,1,3.5,0,1,0,50 --background 0.1,0.2,0.3 "
             "--backend cpu",
             scene, p[0], p[1]);
    int rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 0, "baker %s: %d: %s", args, rc, err);
    float *v = NULL;
    int    w = 0, h = 0;
    BK_EXPECTF(bk_image_read(p[1], &v, &w, &h, err, sizeof err) == 0, "%s", err);
    if (v && w == W && h == H) {
        const float kr[3] = { 0.65f, 0.05f, 0.05f };
        for (int k = 0; k < 3; ++k) {
            /* L as the PNG holds it, back in linear, times Kd */
            float l = bk_image_srgb_to_linear(bk_image_srgb8(L[k]) / 255.0f);
            int   want = bk_image_srgb8(l * kr[k]), got = byte_at(v, w, RED_X, ROW, k);
            BK_EXPECTF(abs(got - want) <= 1, "red wall channel %d: byte %d, want %d", k, got, want);
            BK_EXPECT(byte_at(v, w, 0, 0, k) == bk_image_srgb8(BG[k]));
        }
    }
    free(v);
    /* -o naming the lightmap: refused (exit 2) before any work, the lightmap as it was */
    snprintf(args, sizeof args, "view '%s' --size 64 --lightmap '%s' -o '%s'", scene, p[0], p[0]);
    float *before = NULL, *after = NULL;
    BK_EXPECT(bk_image_read(p[0], &before, &w, &h, err, sizeof err) == 0);
    rc = bk_test_run_baker(dir, err, sizeof err, args);
    BK_EXPECTF(rc == 2, "-o = --lightmap: exit %d: %s", rc, err);
    BK_EXPECT(bk_image_read(p[0], &after, &w, &h, err, sizeof err) == 0 && before && after &&
              !memcmp(before, after, sizeof(float) * 3 * 64 * 64));
    free(before);
    free(after);

    /* the bake's --preview is `baker view` of what it wrote, on one page and on several */
    preview_is_view(dir, scene, p[2], p[3], p[1], "--size 64");
    accels_agree(dir, scene, p[2], p[1], p[3]); /* on the lightmap that wrote, --size 64 */
    preview_is_view(dir, scene, p[2], p[3], p[1], "--size 256 --texels-per-unit 100 --pages auto");
    for (int k = 0; k < 4; ++k) remove(p[k]);
    for (int k = 0; k < 64; ++k) { /* the pages of --pages auto */
        snprintf(args, sizeof args, "%s/baked-%d.png", dir, k);
        remove(args);
    }
    snprintf(args, sizeof args, "%s/stderr.txt", dir);
    remove(args);
    rmdir(dir);
}

int main(void)
{
    library_checks();
    command_checks();
    BK_TEST_DONE();
}
