/* courtyard.c - the textured demo scene: a walled courtyard open to the sky, written as OBJ + MTL
 * with texture coordinates and PNG textures, for the bake's texture paths (issue 35).
 *
 *   courtyard [-o DIR]      (default scenes/courtyard; writes DIR/courtyard.obj, courtyard.mtl,
 *                            floor_checker.png, cloth.png, lattice_alpha.png, sign_emit.png)
 *
 * Sits beside the baker, not in its pipeline: baker reads what it writes (src/io/obj.c). Standalone
 * C11, no bkcore; PNGs through Debian's stb_image_write.h (libstb-dev), the sign's letters through
 * stb_easy_font.h. The same program always writes the same bytes (no time, no randomness).
 *
 * What it makes (y up, metres; about 500 triangles, every face a triangle so every tool numbers
 * faces alike): a 10 m x 10 m floor of 1 m cells with a checkered map_Kd; four 4 m walls facing
 * inwards, seen only from the front; on the west wall a red and gold cloth (map_Kd, for colour
 * bleeding onto the sunlit floor), on the shaded east wall an emissive sign (map_Ke: bright letters
 * on black, Ke 4); a lattice roof of slats at the walls' height (map_d alpha 0 / 1: a striped
 * shadow on the floor), facing down, so that no texel sees its back (a free-standing cut-out seen
 * from both sides would show back faces through its holes, which bring no light and make floor
 * texels look inside geometry); two stone columns whose floor cells are left out (no texel lies
 * under them). The MTL is not Blender-marked, so albedo = Kd x map_Kd (Kd 1 1 1 under textures).
 *
 * Recommended bake (also in scenes/courtyard/README.md):
 *   baker scenes/courtyard/courtyard.obj -o courtyard.png --size 512 --spp 256
 *         --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky 0.25,0.3,0.4
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#include <stb/stb_easy_font.h>

/* ---- OBJ writing ---------------------------------------------------------------------------- */

typedef struct cy_out {
    FILE *f;
    int   nv, nvt, nf; /* counts so far: OBJ indices are 1-based and global */
} cy_out;

typedef struct cy_v3 {
    double x, y, z;
} cy_v3;

static cy_v3 v3(double x, double y, double z)
{
    cy_v3 r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
static cy_v3 v3_axpy(cy_v3 o, double a, cy_v3 u, double b, cy_v3 v)
{
    return v3(o.x + a * u.x + b * v.x, o.y + a * u.y + b * v.y, o.z + a * u.z + b * v.z);
}

/* What a cell of a surface is: its material and its texture coordinates' frame (the block of
 * cells the material's texture spans: cells i0..i0+ni, j0..j0+nj map to u, v in 0..1). */
typedef struct cy_cell {
    const char *mtl;
    int         i0, j0, ni, nj;
} cy_cell;

typedef cy_cell (*cy_cell_fn)(int i, int j, int nu, int nv);

/* A planar grid of nu x nv cells from origin o along u and v (cell size su, sv): the front is u x v
 * (counter-clockwise seen from the front). Vertices are shared over the grid; each cell is two
 * triangles (c00 c10 c11), (c00 c11 c01); a cell whose material is NULL is left out. Cells are
 * written grouped by material (one usemtl each), row by row inside a group. */
static void grid(cy_out *w, const char *name, cy_v3 o, cy_v3 u, cy_v3 v, int nu, int nv, double su, double sv,
                 cy_cell_fn cell)
{
    fprintf(w->f, "o %s\n", name);
    const int base = w->nv;
    for (int j = 0; j <= nv; ++j)
        for (int i = 0; i <= nu; ++i) {
            cy_v3 p = v3_axpy(o, i * su, u, j * sv, v);
            fprintf(w->f, "v %.4f %.4f %.4f\n", p.x + 0.0, p.y + 0.0, p.z + 0.0);
            w->nv++;
        }
    /* materials in order of first use */
    const char *seen[16];
    int         nseen = 0;
    for (int j = 0; j < nv; ++j)
        for (int i = 0; i < nu; ++i) {
            const char *m = cell(i, j, nu, nv).mtl;
            int         k = 0;
            while (m && k < nseen && strcmp(seen[k], m)) k++;
            if (m && k == nseen && nseen < 16) seen[nseen++] = m;
        }
    for (int k = 0; k < nseen; ++k) {
        fprintf(w->f, "usemtl %s\n", seen[k]);
        for (int j = 0; j < nv; ++j)
            for (int i = 0; i < nu; ++i) {
                cy_cell c = cell(i, j, nu, nv);
                if (!c.mtl || strcmp(c.mtl, seen[k])) continue;
                const int t = w->nvt;
                for (int dj = 0; dj <= 1; ++dj)
                    for (int di = 0; di <= 1; ++di)
                        fprintf(w->f, "vt %.6f %.6f\n", (double)(i + di - c.i0) / c.ni, (double)(j + dj - c.j0) / c.nj);
                w->nvt += 4;
                const int v00 = base + j * (nu + 1) + i + 1, v10 = v00 + 1, v01 = v00 + nu + 1, v11 = v01 + 1;
                fprintf(w->f, "f %d/%d %d/%d %d/%d\n", v00, t + 1, v10, t + 2, v11, t + 4);
                fprintf(w->f, "f %d/%d %d/%d %d/%d\n", v00, t + 1, v11, t + 4, v01, t + 3);
                w->nf += 2;
            }
    }
}

/* The floor: 10 x 10 cells, x from -5 to 5 along u, z from 5 to -5 along v (front +y); the
 * checker spans the floor. The columns' cells are left out. */
static int is_column_cell(int i, int j)
{
    return (i == 1 && j == 8) || (i == 8 && j == 1); /* x -4..-3 z -4..-3, x 3..4 z 3..4 */
}
static cy_cell floor_cell(int i, int j, int nu, int nv)
{
    cy_cell c = { is_column_cell(i, j) ? NULL : "floor_checker", 0, 0, nu, nv };
    return c;
}
static cy_cell stone_cell(int i, int j, int nu, int nv)
{
    (void)i, (void)j;
    cy_cell c = { "stone", 0, 0, nu, nv };
    return c;
}
/* West wall (u: z from 5 to -5): the cloth on cells u 4..5, v 1..3 (z 1..-1, y 1..4). */
static cy_cell west_cell(int i, int j, int nu, int nv)
{
    if (i >= 4 && i < 6 && j >= 1 && j < 4) {
        cy_cell c = { "cloth", 4, 1, 2, 3 };
        return c;
    }
    return stone_cell(i, j, nu, nv);
}
/* East wall (u: z from -5 to 5): the sign on cells u 3..6, v 2 (z -2..2, y 2..3). */
static cy_cell east_cell(int i, int j, int nu, int nv)
{
    if (i >= 3 && i < 7 && j == 2) {
        cy_cell c = { "sign", 3, 2, 4, 1 };
        return c;
    }
    return stone_cell(i, j, nu, nv);
}
static cy_cell lattice_cell(int i, int j, int nu, int nv)
{
    (void)i, (void)j;
    cy_cell c = { "lattice", 0, 0, nu, nv };
    return c;
}

static int write_obj(const char *path)
{
    cy_out w = { fopen(path, "wb"), 0, 0, 0 };
    if (!w.f) return -1;
    fprintf(w.f, "# baker textured demo scene: a courtyard open to the sky. Written by tools/courtyard.c;\n"
                 "# y is up, units are metres, every face a triangle. Bake (scenes/courtyard/README.md):\n"
                 "#   baker scenes/courtyard/courtyard.obj -o courtyard.png --size 512 --spp 256 \\\n"
                 "#     --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky 0.25,0.3,0.4\n"
                 "mtllib courtyard.mtl\n");
    const cy_v3 X = v3(1, 0, 0), Y = v3(0, 1, 0), Z = v3(0, 0, 1), nX = v3(-1, 0, 0), nZ = v3(0, 0, -1);
    grid(&w, "floor", v3(-5, 0, 5), X, nZ, 10, 10, 1, 1, floor_cell);
    grid(&w, "wall_north", v3(-5, 0, -5), X, Y, 10, 4, 1, 1, stone_cell);
    grid(&w, "wall_south", v3(5, 0, 5), nX, Y, 10, 4, 1, 1, stone_cell);
    grid(&w, "wall_west", v3(-5, 0, 5), nZ, Y, 10, 4, 1, 1, west_cell);
    grid(&w, "wall_east", v3(5, 0, -5), Z, Y, 10, 4, 1, 1, east_cell);
    /* the lattice: a roof of slats over x 0..3, z -1..2 at the walls' height, its front facing
     * down: nothing stands above it, so no texel ever sees its back */
    grid(&w, "lattice", v3(0, 4, -1), X, Z, 3, 3, 1, 1, lattice_cell);
    /* the columns: 1 m x 1 m x 2.5 m, four sides facing out and a top */
    const double cx[2] = { -4, 3 }, cz[2] = { -4, 3 };
    for (int k = 0; k < 2; ++k) {
        char         name[32];
        const double x0 = cx[k], x1 = cx[k] + 1, z0 = cz[k], z1 = cz[k] + 1;
        snprintf(name, sizeof name, "column%d_north", k);
        grid(&w, name, v3(x1, 0, z0), nX, Y, 1, 1, 1, 2.5, stone_cell);
        snprintf(name, sizeof name, "column%d_south", k);
        grid(&w, name, v3(x0, 0, z1), X, Y, 1, 1, 1, 2.5, stone_cell);
        snprintf(name, sizeof name, "column%d_west", k);
        grid(&w, name, v3(x0, 0, z0), Z, Y, 1, 1, 1, 2.5, stone_cell);
        snprintf(name, sizeof name, "column%d_east", k);
        grid(&w, name, v3(x1, 0, z1), nZ, Y, 1, 1, 1, 2.5, stone_cell);
        snprintf(name, sizeof name, "column%d_top", k);
        grid(&w, name, v3(x0, 2.5, z1), X, nZ, 1, 1, 1, 1, stone_cell);
    }
    fprintf(w.f, "# %d vertices, %d texture coordinates, %d triangles\n", w.nv, w.nvt, w.nf);
    return fclose(w.f) == 0 ? w.nf : -1;
}

static int write_mtl(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fprintf(f, "# baker textured demo scene materials (tools/courtyard.c). Not Blender-marked:\n"
               "# albedo = Kd x map_Kd, emission = Ke x map_Ke, map_d a cut-out (alpha 0 / 1).\n"
               "newmtl floor_checker\nKd 1 1 1\nKe 0 0 0\nmap_Kd floor_checker.png\n\n"
               "newmtl stone\nKd 0.62 0.58 0.52\nKe 0 0 0\n\n"
               "newmtl cloth\nKd 1 1 1\nKe 0 0 0\nmap_Kd cloth.png\n\n"
               "newmtl sign\nKd 0.05 0.05 0.05\nKe 4 4 4\nmap_Ke sign_emit.png\n\n"
               "newmtl lattice\nKd 0.45 0.3 0.18\nKe 0 0 0\nmap_d lattice_alpha.png\n");
    return fclose(f);
}

/* ---- textures ---------------------------------------------------------------------------- */

static void px(unsigned char *img, int w, int x, int y, int c, unsigned r, unsigned g, unsigned b, unsigned a)
{
    unsigned char *p = img + ((size_t)y * w + x) * c;
    p[0] = (unsigned char)r;
    p[1] = (unsigned char)g;
    p[2] = (unsigned char)b;
    if (c == 4) p[3] = (unsigned char)a;
}

/* 10 x 10 squares of 32 texels, one per floor cell: cream and slate. */
static int write_checker(const char *path)
{
    enum { S = 32, N = 10, W = S * N };
    static unsigned char img[W * W * 3];
    for (int y = 0; y < W; ++y)
        for (int x = 0; x < W; ++x) {
            int dark = ((x / S) + (y / S)) & 1;
            if (dark) px(img, W, x, y, 3, 60, 70, 88, 255);
            else px(img, W, x, y, 3, 232, 224, 205, 255);
        }
    return stbi_write_png(path, W, W, 3, img, W * 3) ? 0 : -1;
}

/* Deep red cloth with gold chevrons and a gold hem: 128 x 192 (the 2 m x 3 m banner). */
static int write_cloth(const char *path)
{
    enum { W = 128, H = 192 };
    static unsigned char img[W * H * 3];
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int dx = x < W / 2 ? x : W - 1 - x, band = (y + dx) % 48;
            int gold = x < 6 || x >= W - 6 || y < 6 || y >= H - 6 || (band >= 20 && band < 28);
            if (gold) px(img, W, x, y, 3, 240, 180, 30, 255);
            else px(img, W, x, y, 3, 190, 12, 24, 255);
        }
    return stbi_write_png(path, W, H, 3, img, W * 3) ? 0 : -1;
}

/* Slats and two cross beams: alpha 255 where wood, 0 in the gaps; rgb = alpha, so a reader that
 * takes the grey value of map_d sees the same cut-out as one that takes alpha. 192 x 192 (3 m). */
static int write_lattice(const char *path)
{
    enum { W = 192 };
    static unsigned char img[W * W * 4];
    for (int y = 0; y < W; ++y)
        for (int x = 0; x < W; ++x) {
            int      slat = (x % 16) < 9, beam = (y >= 40 && y < 50) || (y >= 142 && y < 152);
            unsigned a = (slat || beam) ? 255u : 0u;
            px(img, W, x, y, 4, a, a, a, a);
        }
    return stbi_write_png(path, W, W, 4, img, W * 4) ? 0 : -1;
}

/* "BAKER" in orange and a cyan frame on black, 512 x 128 (the 4 m x 1 m sign). stb_easy_font
 * gives the letters as quads of a 1-unit pixel grid; each unit is drawn as a 12-texel square. */
static int write_sign(const char *path)
{
    enum { W = 512, H = 128, U = 12 };
    static unsigned char img[W * H * 3];
    memset(img, 0, sizeof img);
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            int frame =
                (x >= 6 && x < 14) || (x >= W - 14 && x < W - 6) || (y >= 6 && y < 14) || (y >= H - 14 && y < H - 6);
            int inside = x >= 6 && x < W - 6 && y >= 6 && y < H - 6;
            if (frame && inside) px(img, W, x, y, 3, 40, 220, 255, 255);
        }
    static char vbuf[16 * 4 * 400]; /* 16 bytes a vertex, 4 a quad */
    char        text[] = "BAKER";
    int         quads = stb_easy_font_print(0, 0, text, NULL, vbuf, sizeof vbuf);
    int         tw = stb_easy_font_width(text) * U, th = 7 * U; /* capitals span rows 0..7 */
    int         ox = (W - tw) / 2, oy = (H - th) / 2;
    for (int q = 0; q < quads; ++q) {
        const float *v0 = (const float *)(vbuf + (size_t)q * 64), *v2 = (const float *)(vbuf + (size_t)q * 64 + 32);
        int          x0 = ox + (int)(v0[0] * U), y0 = oy + (int)(v0[1] * U), x1 = ox + (int)(v2[0] * U),
            y1 = oy + (int)(v2[1] * U);
        for (int y = y0; y < y1; ++y)
            for (int x = x0; x < x1; ++x)
                if (x >= 0 && x < W && y >= 0 && y < H) px(img, W, x, y, 3, 255, 150, 30, 255);
    }
    return stbi_write_png(path, W, H, 3, img, W * 3) ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *dir = "scenes/courtyard";
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) dir = argv[++i];
        else {
            fprintf(stderr, "usage: courtyard [-o DIR]   (default scenes/courtyard)\n");
            return 2;
        }
    }
    char path[4096];
    int  tris = 0, rc = 0;
#define CY_FILE(name, call)                                        \
    do {                                                           \
        snprintf(path, sizeof path, "%s/%s", dir, name);           \
        int r_ = call;                                             \
        if (r_ < 0) {                                              \
            fprintf(stderr, "courtyard: cannot write %s\n", path); \
            rc = 1;                                                \
        }                                                          \
    } while (0)
    stbi_write_png_compression_level = 9;
    CY_FILE("courtyard.obj", (tris = write_obj(path)));
    CY_FILE("courtyard.mtl", write_mtl(path));
    CY_FILE("floor_checker.png", write_checker(path));
    CY_FILE("cloth.png", write_cloth(path));
    CY_FILE("lattice_alpha.png", write_lattice(path));
    CY_FILE("sign_emit.png", write_sign(path));
#undef CY_FILE
    if (!rc) printf("courtyard: wrote %s (%d triangles, 4 textures)\n", dir, tris);
    return rc;
}
