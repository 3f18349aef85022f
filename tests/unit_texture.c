/* unit_texture.c - the MTL maps (src/io/obj.c) and the images they name (src/io/texture.c), on
 * files written here: images made with stb_image_write (Debian's libstb-dev) or, for what it
 * cannot write (16-bit, paletted PNG) or cannot write under UBSan (JPEG), bytes made once and kept
 * below.
 *
 * Checked (rules: docs/materials.md):
 *   map_Kd / map_Ke / map_d options -o -s -clamp -imfchan (others skipped), paths with spaces, the
 *     MTL line in ref.line; d and Tr into alpha; the alpha modes; Blender's kd_by_map rule.
 *   images: grey, grey + alpha, RGB, RGBA, 16-bit and paletted PNG, JPEG, BMP, TGA, Radiance HDR
 *     (values out of [0, 1e6] clamped with a note) decode to the texels expected; each file once.
 *   refused with one warning naming the MTL file and line, the factor used, the load going on: a
 *     missing file, a truncated PNG, a 65535 x 65535 header and a 16000 x 16000 one in small
 *     files (before stb allocates: the message says why), a text file named .png, an empty file,
 *     a folder, a FIFO (never opened), a JPEG Huffman table stb would overrun; more than a
 *     budget of texels (-2).
 *   the corpus's spider.obj (map_Kd .\name.jpg) gets its JPEG textures; each of the corpus's 22
 *     image files (glTF samples' textures among them) decodes or is refused with one line.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "bk_material.h"
#include "bk_test.h"
#include "loader.h"
#include "outputs.h"
#include "scene.h"
#include "texture.h"

#include <fcntl.h>
#include <ftw.h>
#include <strings.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bk_test_stb_write.h"

/* a 2x1 16-bit RGB PNG: (ffff 8000 0000) (1234 5678 9abc) */
static const unsigned char png16[78] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x10, 0x02, 0x00, 0x00, 0x00, 0x2b, 0xd0, 0x34,
    0x9e, 0x00, 0x00, 0x00, 0x15, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xff, 0xbf, 0x81,
    0x81, 0x81, 0x41, 0xc8, 0x24, 0xac, 0x62, 0xd6, 0x1e, 0x00, 0x22, 0x16, 0x04, 0xe9, 0xfe, 0x9c,
    0xb2, 0xb6, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};
/* a 2x2 paletted PNG (8-bit indices 0 1 / 2 3 into red green blue white; tRNS: red has alpha 0x40) */
static const unsigned char png_pal[108] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x03, 0x00, 0x00, 0x00, 0x45, 0x68, 0xfd, 0x16, 0x00, 0x00, 0x00,
    0x0c, 0x50, 0x4c, 0x54, 0x45, 0xff, 0x00, 0x00, 0x00, 0xff, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xfb,
    0x00, 0x60, 0xf6, 0x00, 0x00, 0x00, 0x01, 0x74, 0x52, 0x4e, 0x53, 0x40, 0x36, 0x3a, 0x99, 0xf6, 0x00, 0x00,
    0x00, 0x0e, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0x60, 0x60, 0x64, 0x60, 0x62, 0x06, 0x00, 0x00, 0x11,
    0x00, 0x07, 0x83, 0xca, 0x64, 0x64, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
};

/* a 16x16 JPEG of (200, 100, 50), stb_image_write quality 100 (its JPEG writer shifts
 * negative ints: UBSan stops it, so the bytes are kept here) */
static const unsigned char jpg_flat[622] = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xff, 0xdb, 0x00, 0x84, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x10, 0x00, 0x10, 0x03, 0x01, 0x11, 0x00, 0x02, 0x11, 0x01, 0x03,
    0x11, 0x01, 0xff, 0xc4, 0x01, 0xa2, 0x00, 0x00, 0x01, 0x05, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x10, 0x00, 0x02,
    0x01, 0x03, 0x03, 0x02, 0x04, 0x03, 0x05, 0x05, 0x04, 0x04, 0x00, 0x00, 0x01, 0x7d, 0x01, 0x02, 0x03, 0x00, 0x04,
    0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
    0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19,
    0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47,
    0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
    0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94,
    0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5,
    0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6,
    0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5,
    0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0x01, 0x00, 0x03, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x11, 0x00, 0x02, 0x01,
    0x02, 0x04, 0x04, 0x03, 0x04, 0x07, 0x05, 0x04, 0x04, 0x00, 0x01, 0x02, 0x77, 0x00, 0x01, 0x02, 0x03, 0x11, 0x04,
    0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1,
    0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17,
    0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47,
    0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a,
    0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93,
    0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
    0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5,
    0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6,
    0xf7, 0xf8, 0xf9, 0xfa, 0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00, 0xc1,
    0xaf, 0xf2, 0xc0, 0xff, 0x00, 0x6c, 0x42, 0x80, 0x0a, 0x00, 0x28, 0x03, 0xff, 0xd9,
};

static char tmpdir[256], warnings[16384];

static const char *at(const char *name)
{
    static char buf[8][512];
    static int  k;
    char       *p = buf[k++ & 7];
    snprintf(p, sizeof buf[0], "%s/%s", tmpdir, name);
    return p;
}

static void write_bytes(const char *name, const void *data, size_t n)
{
    FILE *f = fopen(at(name), "wb");
    if (!f) {
        perror(name);
        exit(1);
    }
    fwrite(data, 1, n, f);
    fclose(f);
}
static void write_str(const char *name, const char *text) { write_bytes(name, text, strlen(text)); }

/* Loads t.obj (one triangle, mtllib t.mtl) with t.mtl = mtl; the loader's stderr into warnings.
 * Returns the loader's status. */
static int load(const char *mtl, bk_scene *s, char *err, size_t err_size)
{
    write_str("t.mtl", mtl);
    write_str("t.obj", "mtllib t.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nf 1/1 2/2 3/3\n");
    fflush(stderr);
    int saved = dup(2), fd = open(at("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    int rc = bk_scene_load(at("t.obj"), s, err, err_size);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE  *f = fopen(at("stderr.txt"), "rb");
    size_t n = f ? fread(warnings, 1, sizeof warnings - 1, f) : 0;
    warnings[n] = 0;
    if (f) fclose(f);
    if (warnings[0]) fprintf(stderr, "(expected) %s", warnings);
    return rc;
}

static int count_lines(const char *text)
{
    int n = 0;
    for (; *text; ++text) n += *text == '\n';
    return n;
}

static const bk_material *find(const bk_scene *s, const char *name)
{
    for (uint32_t m = 0; m < s->material_count; ++m)
        if (!strcmp(s->materials[m].name, name)) return &s->materials[m];
    BK_EXPECTF(0, "no material %s", name);
    static bk_material none;
    bk_material_init(&none);
    return &none;
}

static const bk_image *image_of(const bk_scene *s, const bk_tex_ref *r)
{
    return r->image < s->image_count ? &s->images[r->image] : NULL;
}

/* texel (x, y) of an 8-bit image equals rgba within tol */
static int texel_is(const bk_image *im, uint32_t x, uint32_t y, int r, int g, int b, int a, int tol)
{
    if (!im || !im->rgba8 || x >= im->w || y >= im->h) return 0;
    const uint8_t *p = im->rgba8 + 4 * ((size_t)y * im->w + x);
    int            want[4] = { r, g, b, a };
    for (int k = 0; k < 4; ++k)
        if (abs(p[k] - want[k]) > tol) return 0;
    return 1;
}

static void test_options(void)
{
    bk_scene s;
    char     err[512];
    /* lines:            1            2      3 */
    int rc = load("newmtl opts\nKd 1 1 1\nmap_Kd -o 0.25 0.5 -s 2 -clamp on -bm 0.3 -mm 0 1 -blendu off -texres 512 "
                  "-boost 2 -cc on -t 0 0 0 -type sphere my tex.png\n"
                  "map_Ke -s 1 2 3 -clamp off glow.png\n"     /* 4 */
                  "map_d -imfchan m cut.png\n"                /* 5 */
                  "newmtl chans\nmap_d -imfchan r a.png\n"    /* 6, 7 */
                  "newmtl lum\nmap_d -imfchan l a.png\n"      /* 8, 9 */
                  "newmtl green\nmap_d -imfchan g  a.png  \n" /* 10, 11 */
                  "newmtl bad\nmap_Kd -s\nmap_Ke -clamp\n",   /* 12..14 */
                  &s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s", err);
    const bk_material *m = find(&s, "opts");
    BK_EXPECTF(!strcmp(m->map_kd.path, "my tex.png"), "map_Kd path '%s'", m->map_kd.path);
    BK_EXPECT(m->map_kd.offset[0] == 0.25f && m->map_kd.offset[1] == 0.5f);
    BK_EXPECT(m->map_kd.scale[0] == 2.0f && m->map_kd.scale[1] == 2.0f);
    BK_EXPECT(m->map_kd.clamp == 1 && m->map_kd.line == 3 && m->map_kd.image == BK_NONE);
    BK_EXPECTF(!strcmp(m->map_ke.path, "glow.png") && m->map_ke.scale[0] == 1.0f && m->map_ke.scale[1] == 2.0f &&
                   m->map_ke.clamp == 0 && m->map_ke.line == 4,
               "map_Ke '%s' line %u", m->map_ke.path, m->map_ke.line);
    BK_EXPECT(!strcmp(m->map_d.path, "cut.png") && m->map_d.channel == BK_TEX_CHANNEL_ALPHA && m->map_d.line == 5);
    BK_EXPECT(find(&s, "chans")->map_d.channel == BK_TEX_CHANNEL_RED);
    BK_EXPECT(find(&s, "lum")->map_d.channel == BK_TEX_CHANNEL_RED);
    m = find(&s, "green");
    BK_EXPECTF(m->map_d.channel == BK_TEX_CHANNEL_AUTO && !strcmp(m->map_d.path, "a.png"), "'%s'", m->map_d.path);
    BK_EXPECT(strstr(warnings, "t.mtl:11: warning: map_d -imfchan g"));
    m = find(&s, "bad");
    BK_EXPECT(!m->map_kd.path[0] && !m->map_ke.path[0]);
    BK_EXPECT(strstr(warnings, "t.mtl:13: warning: map_Kd -s: expected a finite number"));
    BK_EXPECT(strstr(warnings, "t.mtl:14: warning: map_Ke -clamp: expected a value"));
    /* every map file is missing: one warning each, at its own line */
    BK_EXPECT(strstr(warnings, "t.mtl:3: warning: map_Kd 'my tex.png': no such file; Kd used"));
    BK_EXPECT(strstr(warnings, "t.mtl:4: warning: map_Ke 'glow.png': no such file; Ke used"));
    BK_EXPECT(strstr(warnings, "t.mtl:5: warning: map_d 'cut.png': no such file; d used"));
    bk_scene_free(&s);
}

static void test_opacity(void)
{
    bk_scene s;
    char     err[512];
    uint8_t  px[4] = { 255, 255, 255, 128 };
    BK_EXPECT(stbi_write_png(at("cut.png"), 1, 1, 4, px, 4));
    int rc = load("newmtl d\nd 0.25\nnewmtl tr\nTr 0.25\nnewmtl both\nd 0.5\nTr 0.9\nnewmtl tr_first\nTr 0.9\nd 0.5\n"
                  "newmtl halo\nd -halo 0.75\nnewmtl plain\nKd 0.5 0.5 0.5\nnewmtl masked\nd 0.5\nmap_d cut.png\n"
                  "newmtl lost\nd 1\nmap_d nosuch.png\nnewmtl clamp\nd 1.5\n",
                  &s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s", err);
    const bk_material *m = find(&s, "d");
    BK_EXPECT(m->alpha == 0.25f && m->alpha_mode == BK_ALPHA_BLEND);
    m = find(&s, "tr");
    BK_EXPECT(m->alpha == 0.75f && m->alpha_mode == BK_ALPHA_BLEND);
    BK_EXPECT(find(&s, "both")->alpha == 0.5f && find(&s, "tr_first")->alpha == 0.5f);
    BK_EXPECT(find(&s, "halo")->alpha == 0.75f);
    m = find(&s, "plain");
    BK_EXPECT(m->alpha == 1.0f && m->alpha_mode == BK_ALPHA_OPAQUE);
    m = find(&s, "masked");
    BK_EXPECT(m->alpha == 0.5f && m->alpha_mode == BK_ALPHA_MASK && m->alpha_cutoff == 0.5f && image_of(&s, &m->map_d));
    m = find(&s, "lost"); /* a map_d that did not load cuts nothing out */
    BK_EXPECT(m->alpha_mode == BK_ALPHA_OPAQUE && m->map_d.image == BK_NONE);
    m = find(&s, "clamp");
    BK_EXPECT(m->alpha == 1.0f && strstr(warnings, "d 1.5: outside [0, 1], clamped to 1"));
    bk_scene_free(&s);
}

static void test_blender(void)
{
    bk_scene s;
    char     err[512];
    uint8_t  px[3] = { 10, 20, 30 };
    BK_EXPECT(stbi_write_png(at("wood.png"), 1, 1, 3, px, 3));
    const char *body = "newmtl tex\nKd 0.8 0.8 0.8\nmap_Kd wood.png\nnewmtl plain\nKd 0.8 0.8 0.8\n";
    char        mtl[512];
    snprintf(mtl, sizeof mtl, "# Blender 4.1.0 MTL File: 'room.blend'\n# www.blender.org\n%s", body);
    BK_EXPECTF(load(mtl, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(find(&s, "tex")->kd_by_map == 1 && find(&s, "plain")->kd_by_map == 0);
    BK_EXPECT(texel_is(image_of(&s, &find(&s, "tex")->map_kd), 0, 0, 10, 20, 30, 255, 0));
    bk_scene_free(&s);
    snprintf(mtl, sizeof mtl, "# Blender MTL File: 'old.blend'\n%s", body); /* the 2.7x exporter */
    BK_EXPECTF(load(mtl, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(find(&s, "tex")->kd_by_map == 1);
    bk_scene_free(&s);
    snprintf(mtl, sizeof mtl, "# made by hand, not # Blender\n%s", body);
    BK_EXPECTF(load(mtl, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECT(find(&s, "tex")->kd_by_map == 0);
    bk_scene_free(&s);
}

static void stbw_file(void *ctx, void *data, int size) { fwrite(data, 1, (size_t)size, (FILE *)ctx); }

static void test_images(void)
{
    uint8_t grey[2] = { 0, 200 }, ga[4] = { 50, 60, 70, 80 }, rgba[8] = { 1, 2, 3, 4, 250, 251, 252, 253 };
    BK_EXPECT(stbi_write_png(at("grey.png"), 2, 1, 1, grey, 2));
    BK_EXPECT(stbi_write_png(at("ga.png"), 2, 1, 2, ga, 4));
    BK_EXPECT(stbi_write_png(at("rgba.png"), 2, 1, 4, rgba, 8));
    BK_EXPECT(stbi_write_bmp(at("rgb.bmp"), 2, 1, 4, rgba));
    BK_EXPECT(stbi_write_tga(at("rgba.tga"), 2, 1, 4, rgba));
    write_bytes("flat.jpg", jpg_flat, sizeof jpg_flat);
    write_bytes("16.png", png16, sizeof png16);
    write_bytes("pal.png", png_pal, sizeof png_pal);
    /* a flat (width < 8: not run-length) Radiance file: 1.0 0.5 0.25, then a texel of 2^119 */
    static const char    hdr_head[] = "#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 1 +X 2\n";
    static const uint8_t hdr_px[8] = { 128, 64, 32, 129, 200, 200, 200, 255 };
    FILE                *f = fopen(at("sky.hdr"), "wb");
    if (f) {
        fwrite(hdr_head, 1, strlen(hdr_head), f);
        fwrite(hdr_px, 1, 8, f);
        fclose(f);
    }
    /* an RLE one from stb_image_write (width 8) */
    float hdr8[8 * 3];
    for (int i = 0; i < 24; ++i) hdr8[i] = 0.5f * (float)(i % 3);
    f = fopen(at("rle.hdr"), "wb");
    if (f) {
        stbi_write_hdr_to_func(stbw_file, f, 8, 1, 3, hdr8);
        fclose(f);
    }
    bk_scene s;
    char     err[512];
    int      rc = load("newmtl grey\nmap_Kd grey.png\nnewmtl ga\nmap_Kd ga.png\nnewmtl rgba\nmap_Kd rgba.png\n"
                            "newmtl bmp\nmap_Kd rgb.bmp\nnewmtl tga\nmap_Kd rgba.tga\nnewmtl jpg\nmap_Kd flat.jpg\n"
                            "newmtl 16\nmap_Kd 16.png\nnewmtl pal\nmap_Kd pal.png\nnewmtl hdr\nmap_Ke sky.hdr\n"
                            "newmtl rle\nmap_Ke rle.hdr\nnewmtl again\nmap_Kd ./grey.png\nmap_d grey.png\n",
                       &s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s", err);
    const bk_image *im = image_of(&s, &find(&s, "grey")->map_kd);
    BK_EXPECT(im && im->channels == 1 && im->w == 2 && im->h == 1);
    BK_EXPECT(texel_is(im, 0, 0, 0, 0, 0, 255, 0) && texel_is(im, 1, 0, 200, 200, 200, 255, 0));
    im = image_of(&s, &find(&s, "ga")->map_kd);
    BK_EXPECT(im && im->channels == 2 && texel_is(im, 0, 0, 50, 50, 50, 60, 0) &&
              texel_is(im, 1, 0, 70, 70, 70, 80, 0));
    im = image_of(&s, &find(&s, "rgba")->map_kd);
    BK_EXPECT(im && im->channels == 4 && texel_is(im, 0, 0, 1, 2, 3, 4, 0) &&
              texel_is(im, 1, 0, 250, 251, 252, 253, 0));
    im = image_of(&s, &find(&s, "bmp")->map_kd);
    BK_EXPECT(im && texel_is(im, 0, 0, 1, 2, 3, 4, 0) && texel_is(im, 1, 0, 250, 251, 252, 253, 0));
    im = image_of(&s, &find(&s, "tga")->map_kd);
    BK_EXPECT(im && im->channels == 4 && texel_is(im, 1, 0, 250, 251, 252, 253, 0));
    im = image_of(&s, &find(&s, "jpg")->map_kd);
    BK_EXPECT(im && im->channels == 3 && im->w == 16 && texel_is(im, 7, 7, 200, 100, 50, 255, 3));
    im = image_of(&s, &find(&s, "16")->map_kd);
    BK_EXPECT(im && im->channels == 3 && texel_is(im, 0, 0, 0xff, 0x80, 0, 255, 0) &&
              texel_is(im, 1, 0, 0x12, 0x56, 0x9a, 255, 0));
    im = image_of(&s, &find(&s, "pal")->map_kd);
    BK_EXPECTF(im && im->channels == 4, "paletted: %d channels", im ? im->channels : -1);
    BK_EXPECT(texel_is(im, 0, 0, 255, 0, 0, 0x40, 0) && texel_is(im, 1, 0, 0, 255, 0, 255, 0) &&
              texel_is(im, 0, 1, 0, 0, 255, 255, 0) && texel_is(im, 1, 1, 255, 255, 255, 255, 0));
    im = image_of(&s, &find(&s, "hdr")->map_ke);
    BK_EXPECT(im && im->rgbaf && !im->rgba8 && im->w == 2);
    if (im && im->rgbaf) {
        const float *p = im->rgbaf;
        BK_EXPECTF(p[0] == 1.0f && p[1] == 0.5f && p[2] == 0.25f && p[3] == 1.0f, "%g %g %g %g", p[0], p[1], p[2],
                   p[3]);
        BK_EXPECTF(p[4] == 1e6f && p[5] == 1e6f && p[6] == 1e6f, "%g: not clamped", p[4]);
    }
    BK_EXPECT(strstr(warnings, "t.mtl:18: warning: map_Ke 'sky.hdr': 3 HDR values") && strstr(warnings, "clamped"));
    im = image_of(&s, &find(&s, "rle")->map_ke);
    BK_EXPECT(im && im->rgbaf && im->w == 8 && fabsf(im->rgbaf[4 * 5 + 2] - 1.0f) < 1e-6f);
    /* each file once: ./grey.png and grey.png are one image, read once */
    const bk_material *m = find(&s, "again");
    BK_EXPECT(m->map_kd.image == find(&s, "grey")->map_kd.image && m->map_d.image == m->map_kd.image);
    BK_EXPECTF(s.image_count == 10, "%u images", s.image_count);
    BK_EXPECTF(count_lines(warnings) == 1, "warnings:\n%s", warnings);
    bk_scene_free(&s);
}

/* Each file that cannot be read: one warning at its line naming the file, no image, Kd used. */
static void test_refused(void)
{
    uint8_t rgb[64 * 64 * 3];
    for (size_t i = 0; i < sizeof rgb; ++i) rgb[i] = (uint8_t)(i * 7);
    BK_EXPECT(stbi_write_png(at("full.png"), 64, 64, 3, rgb, 64 * 3));
    size_t n = 0;
    char  *png = bk_test_slurp(at("full.png"), &n);
    BK_EXPECT(png && n > 100);
    if (png) write_bytes("cut.png", png, n / 2);
    free(png);
    /* IHDR 65535 x 65535 (and 16000 x 16000, within the sides) in a 100-byte file */
    uint8_t big[100];
    memset(big, 0, sizeof big);
    memcpy(big, png16, 33); /* signature + IHDR of a valid file; sides patched */
    uint8_t *wh = big + 16;
    wh[0] = wh[4] = 0;
    wh[1] = wh[5] = 0;
    wh[2] = wh[6] = 0xff;
    wh[3] = wh[7] = 0xff;
    write_bytes("huge.png", big, sizeof big);
    wh[2] = wh[6] = 16000 >> 8;
    wh[3] = wh[7] = 16000 & 0xff;
    write_bytes("large.png", big, sizeof big);
    write_str("text.png", "this is not a PNG\n");
    write_bytes("empty.png", "", 0);
    mkdir(at("folder.png"), 0700);
    BK_EXPECT(mkfifo(at("fifo.png"), 0600) == 0); /* opening it would wait for a writer for ever */
    bk_scene s;
    char     err[512];
    int      rc = load("newmtl a\nKd 0.5 0.5 0.5\nmap_Kd cut.png\n"               /* 3 */
                       "newmtl b\nmap_Kd huge.png\nnewmtl c\nmap_Kd large.png\n"  /* 5, 7 */
                       "newmtl d\nmap_Kd text.png\nnewmtl e\nmap_Kd empty.png\n"  /* 9, 11 */
                       "newmtl f\nmap_Kd folder.png\nnewmtl g\nmap_Kd text.png\n" /* 13, 15 */
                       "newmtl h\nmap_Kd fifo.png\n",                             /* 17 */
                       &s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s", err);
    for (uint32_t m = 0; m < s.material_count; ++m) BK_EXPECT(s.materials[m].map_kd.image == BK_NONE);
    BK_EXPECT(s.image_count == 0);
    BK_EXPECT(find(&s, "a")->kd[0] == 0.5f);
    BK_EXPECTF(count_lines(warnings) == 8, "warnings:\n%s", warnings);
    BK_EXPECT(strstr(warnings, "t.mtl:3: warning: map_Kd 'cut.png': PNG chunk") && strstr(warnings, "; Kd used"));
    BK_EXPECT(strstr(warnings, "t.mtl:5: warning: map_Kd 'huge.png': the image is 65535x65535: sides must be"));
    BK_EXPECT(strstr(warnings, "t.mtl:7: warning: map_Kd 'large.png': the header says 16000x16000, more than a "
                               "100-byte file can hold"));
    BK_EXPECT(strstr(warnings, "t.mtl:9: warning: map_Kd 'text.png': not an image (stb_image: "));
    BK_EXPECT(strstr(warnings, "t.mtl:11: warning: map_Kd 'empty.png': not an image"));
    BK_EXPECT(strstr(warnings, "t.mtl:13: warning: map_Kd 'folder.png': not a regular file"));
    BK_EXPECT(strstr(warnings, "t.mtl:17: warning: map_Kd 'fifo.png': not a regular file"));
    BK_EXPECT(strstr(warnings, "t.mtl:15: warning: map_Kd 'text.png': not an image")); /* read once, told twice */
    bk_scene_free(&s);
    /* a DHT of more than 256 codes: stb_image 2.27 writes past its table (fuzz_texture found it) */
    char jpg[512];
    snprintf(jpg, sizeof jpg, "%s/tests/fuzz/regress/fuzz_texture/jpeg-dht-over-256-codes.jpg", BK_SOURCE_DIR);
    bk_image bad;
    char     bad_why[256];
    BK_EXPECT(bk_texture_decode(jpg, BK_TEX_MAX_BYTES, &bad, bad_why, sizeof bad_why) == -1 && !bad.rgba8);
    BK_EXPECTF(strstr(bad_why, "Huffman table"), "%s", bad_why);
    /* a budget of texels: refused before decoding (-2) */
    bk_image im;
    char     why[256];
    BK_EXPECT(bk_texture_decode(at("full.png"), 64 * 64 * 4, &im, why, sizeof why) == 0 && im.w == 64);
    free(im.rgba8);
    free(im.path);
    BK_EXPECT(bk_texture_decode(at("full.png"), 64 * 64 * 4 - 1, &im, why, sizeof why) == -2 && !im.rgba8);
    BK_EXPECTF(strstr(why, "past"), "%s", why);
}

/* Every map's file is an input of the run (bk_outputs_scene_inputs): no output may replace it. */
static void test_outputs(void)
{
    uint8_t px[4] = { 1, 2, 3, 4 };
    BK_EXPECT(stbi_write_png(at("kd.png"), 1, 1, 4, px, 4) && stbi_write_png(at("glow.png"), 1, 1, 4, px, 4) &&
              stbi_write_png(at("mask.png"), 1, 1, 4, px, 4) && stbi_write_png(at("free.png"), 1, 1, 4, px, 4));
    bk_scene s;
    char     err[1024];
    BK_EXPECTF(
        load("newmtl a\nmap_Kd kd.png\nmap_Ke -s 2 glow.png\nmap_d -imfchan m mask.png\n", &s, err, sizeof err) == 0,
        "%s", err);
    const char *names[4] = { "kd.png", "glow.png", "mask.png", "free.png" };
    for (int k = 0; k < 4; ++k) {
        bk_outputs o;
        bk_outputs_init(&o);
        BK_EXPECTF(bk_outputs_scene_inputs(&o, &s, err, sizeof err) == 0, "%s", err);
        int r = bk_outputs_add(&o, "-o", at(names[k]), 0, err, sizeof err);
        BK_EXPECTF(k < 3 ? r == BK_OUT_CLASH : r >= 0, "-o %s: %d %s", names[k], r, err);
        bk_outputs_free(&o);
    }
    bk_scene_free(&s);
}

static int corpus_images, corpus_loaded;

static int decode_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    static const char *const ext[] = { ".png", ".jpg", ".jpeg", ".tga", ".bmp", ".gif", ".hdr" };
    int                      is_image = 0;
    for (size_t k = 0; k < sizeof ext / sizeof ext[0]; ++k) {
        size_t n = strlen(path), e = strlen(ext[k]);
        is_image |= n > e && !strcasecmp(path + n - e, ext[k]);
    }
    if (type != FTW_F || !is_image) return 0;
    bk_image im;
    char     why[512] = "";
    int      rc = bk_texture_decode(path, BK_TEX_MAX_BYTES, &im, why, sizeof why);
    corpus_images++;
    if (rc >= 0) {
        corpus_loaded++;
        BK_EXPECTF(im.w >= 1 && im.h >= 1 && (im.rgba8 || im.rgbaf) && im.channels >= 1 && im.channels <= 4, "%s",
                   path);
        free(im.rgba8);
        free(im.rgbaf);
        free(im.path);
    } else BK_EXPECTF(rc == -1 && why[0] && !strchr(why, '\n'), "%s: %d '%s'", path, rc, why);
    if (rc < 0) fprintf(stderr, "(refused, as it may be) %s: %s\n", path, why);
    return 0;
}

/* Every image of the corpus (the glTF samples' and the OBJ tests' textures, hostile ones among
 * them) decodes, or is refused with one line. */
static void test_corpus_images(void)
{
    nftw(bk_test_scenes_dir(), decode_one, 16, FTW_PHYS);
    fprintf(stderr, "corpus: %d images, %d decoded\n", corpus_images, corpus_loaded);
}

static void test_corpus(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/obj-tests-assimp/spider.obj", bk_test_scenes_dir());
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "corpus not found: spider.obj skipped\n");
        return;
    }
    bk_scene s;
    char     err[512];
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    const bk_material *m = find(&s, "HLeibTex"); /* map_Kd .\SpiderTex.jpg */
    const bk_image    *im = image_of(&s, &m->map_kd);
    BK_EXPECTF(im && im->rgba8 && im->w > 0 && strstr(im->path, "SpiderTex.jpg"), "SpiderTex.jpg not loaded");
    BK_EXPECTF(s.image_count >= 4, "%u images", s.image_count);
    bk_scene_free(&s);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bk_unit_texture_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_options();
    test_opacity();
    test_blender();
    test_images();
    test_refused();
    test_outputs();
    test_corpus();
    test_corpus_images();
    char        cmd[1024];
    const char *seeds = getenv("BK_TEXTURE_SEEDS"); /* tests/fuzz/run.sh: the images as fuzz seeds */
    if (seeds && seeds[0]) {
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && for f in *.png *.jpg *.bmp *.tga *.hdr; do [ -f \"$f\" ] && cp \"$f\" '%s'/unit-\"$f\"; "
                 "done; true",
                 tmpdir, seeds);
        if (system(cmd) != 0) fprintf(stderr, "cannot copy the images to %s\n", seeds);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", tmpdir);
    BK_TEST_DONE();
}
