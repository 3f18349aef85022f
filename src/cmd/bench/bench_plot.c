/* bench_plot.c - the bench commands' chart canvas (bench_plot.h): shapes kept as a list, then
 * written as SVG text or drawn into pixels for a PNG. The PNG's text is a 5x7 bitmap font of
 * printable ASCII drawn for this file (rows 7 and 8 hold descenders). */
#include "bench_plot.h"
#include "image.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum op_kind { OP_RECT, OP_HATCH, OP_LINE, OP_TEXT } op_kind;

typedef struct plot_op {
    op_kind  kind;
    int      x, y, w, h; /* OP_LINE: x1, y1, x2, y2 */
    uint32_t rgb;
    int      size, flags; /* OP_TEXT: font size, BK_PLOT_*; OP_HATCH: size = the style */
    char    *s;           /* OP_TEXT: the text; OP_RECT: its tooltip or NULL */
} plot_op;

struct bk_plot {
    plot_op *op;
    size_t   n, cap;
    int      w, h;
    int      oom; /* a shape was lost for want of memory: writing fails */
};

#define HATCH_STEP  6.0 /* logical pixels between hatch lines */
#define HATCH_WIDTH 1.2 /* their width */

/* Glyphs of ' ' to '~': 9 rows of 5 bits, row r in bits 5r..5r+4, bit 4 the leftmost column;
 * rows 0-6 stand on the baseline, 7-8 hang below it. */
static const uint64_t font5x7[95] = {
    0x00000000000ull, 0x00100421084ull, 0x0000000014aull,  0x00295f57d4aull, 0x0013c5751e4ull, 0x000e6820b38ull,
    0x0036554524cull, 0x00000002084ull, 0x00088842082ull,  0x00208210888ull, 0x00009575480ull, 0x000084f9080ull,
    0x82318000000ull, 0x000000f8000ull, 0x00318000000ull,  0x00020820820ull, 0x003a39ace2eull, 0x00388421184ull,
    0x007d041062eull, 0x003a211105full, 0x00085f928c2ull,  0x003a210fa1full, 0x003a31f4106ull, 0x0021082083full,
    0x003a317462eull, 0x0030417c62eull, 0x00018c03180ull,  0x04118c03180ull, 0x00088882082ull, 0x00001f07c00ull,
    0x00208208888ull, 0x0010041062eull, 0x003e17ade2eull,  0x004631fc62eull, 0x007a31f463eull, 0x003a308422eull,
    0x0072518c65cull, 0x007e10f421full, 0x004210f421full,  0x003e31bc22eull, 0x004631fc631ull, 0x0038842108eull,
    0x00324210847ull, 0x004654c5251ull, 0x007e1084210ull,  0x004631ad771ull, 0x004633ae631ull, 0x003a318c62eull,
    0x004210f463eull, 0x0036558c62eull, 0x004654f463eull,  0x0078217420full, 0x0010842109full, 0x003a318c631ull,
    0x0011518c631ull, 0x002ab5ac631ull, 0x00462a22a31ull,  0x00108422a31ull, 0x007e082083full, 0x0039084210eull,
    0x00002222200ull, 0x0038421084eull, 0x00000004544ull,  0x0f800000000ull, 0x00000000888ull, 0x003e2f0b800ull,
    0x007a31cda10ull, 0x003a3083800ull, 0x003e319b421ull,  0x003a1f8b800ull, 0x002108e2126ull, 0xe0be318bc00ull,
    0x004631cda10ull, 0x00388423004ull, 0xc9084211802ull,  0x004a98a4a10ull, 0x0038842108cull, 0x0056b5ae800ull,
    0x004631cd800ull, 0x003a318b800ull, 0x1087a318f800ull, 0x10be318bc00ull, 0x004210cd800ull, 0x00782e83c00ull,
    0x00192847108ull, 0x0036718c400ull, 0x0011518c400ull,  0x002ab58c400ull, 0x00454454400ull, 0xe0be318c400ull,
    0x007d0417c00ull, 0x000c8441083ull, 0x02108421084ull,  0x00608411098ull, 0x000002aa000ull,
};

bk_plot *bk_plot_new(void) { return calloc(1, sizeof(bk_plot)); }

void bk_plot_free(bk_plot *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; ++i) free(p->op[i].s);
    free(p->op);
    free(p);
}

void bk_plot_size(bk_plot *p, int w, int h)
{
    p->w = w;
    p->h = h;
}

static plot_op *push(bk_plot *p, op_kind k, const char *s)
{
    if (p->n == p->cap) {
        size_t   cap = p->cap ? 2 * p->cap : 256;
        plot_op *o = realloc(p->op, cap * sizeof *o);
        if (!o) {
            p->oom = 1;
            return NULL;
        }
        p->op = o;
        p->cap = cap;
    }
    plot_op *o = &p->op[p->n];
    memset(o, 0, sizeof *o);
    o->kind = k;
    if (s && !(o->s = strdup(s))) {
        p->oom = 1;
        return NULL;
    }
    p->n++;
    return o;
}

void bk_plot_rect(bk_plot *p, int x, int y, int w, int h, uint32_t rgb, const char *title)
{
    plot_op *o = push(p, OP_RECT, title);
    if (!o) return;
    o->x = x;
    o->y = y;
    o->w = w;
    o->h = h;
    o->rgb = rgb;
}

void bk_plot_hatch(bk_plot *p, int x, int y, int w, int h, uint32_t rgb, bk_plot_hatch_style style)
{
    if (style == BK_PLOT_HATCH_NONE) return;
    plot_op *o = push(p, OP_HATCH, NULL);
    if (!o) return;
    o->x = x;
    o->y = y;
    o->w = w;
    o->h = h;
    o->rgb = rgb;
    o->size = (int)style;
}

void bk_plot_line(bk_plot *p, int x1, int y1, int x2, int y2, uint32_t rgb)
{
    plot_op *o = push(p, OP_LINE, NULL);
    if (!o) return;
    o->x = x1;
    o->y = y1;
    o->w = x2;
    o->h = y2;
    o->rgb = rgb;
}

void bk_plot_text(bk_plot *p, int x, int y, int size, int flags, uint32_t rgb, const char *s)
{
    plot_op *o = push(p, OP_TEXT, s);
    if (!o) return;
    o->x = x;
    o->y = y;
    o->size = size;
    o->flags = flags;
    o->rgb = rgb;
}

/* ---- the bitmap font ---------------------------------------------------------------------- */

/* device pixels per font pixel for a font size: 10-14 -> 2, 15-20 -> 3 at scale 2 */
static int font_px(int size)
{
    int f = (size * BK_PLOT_PNG_SCALE + 6) / 12;
    return f < 1 ? 1 : f;
}

static int bold_px(int size) { return font_px(size) / 2 > 0 ? font_px(size) / 2 : 1; }

/* width in device pixels of s drawn by draw_text */
static int text_device_width(int size, int flags, const char *s)
{
    int n = (int)strlen(s), f = font_px(size);
    if (!n) return 0;
    return n * 6 * f - f + ((flags & BK_PLOT_BOLD) ? bold_px(size) : 0);
}

int bk_plot_text_width(int size, int flags, const char *s)
{
    double em = (flags & BK_PLOT_BOLD) ? 0.65 : 0.6;
    int    svg = (int)ceil(em * size * (double)strlen(s));
    int    png = (text_device_width(size, flags, s) + BK_PLOT_PNG_SCALE - 1) / BK_PLOT_PNG_SCALE;
    return svg > png ? svg : png;
}

/* ---- extent ------------------------------------------------------------------------------- */

int bk_plot_overflows(const bk_plot *p, char *why, size_t why_size)
{
    for (size_t i = 0; i < p->n; ++i) {
        const plot_op *o = &p->op[i];
        int            x0 = o->x, y0 = o->y, x1 = o->x + o->w, y1 = o->y + o->h;
        if (o->kind == OP_LINE) {
            x0 = o->x < o->w ? o->x : o->w;
            x1 = o->x < o->w ? o->w : o->x;
            y0 = o->y < o->h ? o->y : o->h;
            y1 = o->y < o->h ? o->h : o->y;
        } else if (o->kind == OP_TEXT) {
            int len = bk_plot_text_width(o->size, o->flags, o->s), a = o->flags & 3;
            int u0 = a == BK_PLOT_MIDDLE ? -len / 2 : a == BK_PLOT_END ? -len : 0;
            int up = o->size, down = (o->size * 3 + 9) / 10; /* ascent and descent */
            if (o->flags & BK_PLOT_UP) {                     /* u along -y, the ascent towards -x */
                x0 = o->x - up;
                x1 = o->x + down;
                y0 = o->y - (u0 + len);
                y1 = o->y - u0;
            } else {
                x0 = o->x + u0;
                x1 = o->x + u0 + len;
                y0 = o->y - up;
                y1 = o->y + down;
            }
        }
        if (x0 < 0 || y0 < 0 || x1 > p->w || y1 > p->h) {
            snprintf(why, why_size, "%s '%s' spans x %d..%d, y %d..%d on a %d x %d canvas",
                     o->kind == OP_TEXT   ? "text"
                     : o->kind == OP_LINE ? "a line"
                                          : "a rectangle",
                     o->s ? o->s : "", x0, x1, y0, y1, p->w, p->h);
            return 1;
        }
    }
    return 0;
}

/* ---- SVG ---------------------------------------------------------------------------------- */

static void xml_str(FILE *f, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
        }
    }
}

/* One direction of hatching as path segments clipped to the rectangle: lines a.(x, y) = c for c
 * a multiple of the step (the phase fixed in canvas space, as a userSpaceOnUse pattern). */
static void svg_hatch_dir(FILE *f, const plot_op *o, int dir)
{
    double x0 = o->x, y0 = o->y, x1 = o->x + o->w, y1 = o->y + o->h;
    if (dir == 2) { /* horizontal */
        for (double c = ceil(y0 / HATCH_STEP) * HATCH_STEP; c <= y1; c += HATCH_STEP)
            fprintf(f, "M%g,%gH%g", x0, c, x1);
        return;
    }
    /* dir 0: x + y = c ("/"), dir 1: x - y = c ("\") */
    double lo = dir == 0 ? x0 + y0 : x0 - y1, hi = dir == 0 ? x1 + y1 : x1 - y0;
    for (double c = ceil(lo / HATCH_STEP) * HATCH_STEP; c <= hi; c += HATCH_STEP) {
        double xa, xb;
        if (dir == 0) {
            xa = fmax(x0, c - y1);
            xb = fmin(x1, c - y0);
        } else {
            xa = fmax(x0, c + y0);
            xb = fmin(x1, c + y1);
        }
        if (xb - xa < 1e-9) continue;
        double ya = dir == 0 ? c - xa : xa - c, yb = dir == 0 ? c - xb : xb - c;
        fprintf(f, "M%g,%gL%g,%g", xa, ya, xb, yb);
    }
}

static void write_svg(const bk_plot *p, FILE *f)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
            p->w, p->h, p->w, p->h);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", p->w, p->h);
    for (size_t i = 0; i < p->n; ++i) {
        const plot_op *o = &p->op[i];
        switch (o->kind) {
        case OP_RECT:
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\"", o->x, o->y, o->w, o->h,
                    (unsigned)o->rgb);
            if (o->s) {
                fputs("><title>", f);
                xml_str(f, o->s);
                fputs("</title></rect>\n", f);
            } else fputs("/>\n", f);
            break;
        case OP_HATCH:
            fputs("<path d=\"", f);
            if (o->size == BK_PLOT_HATCH_UP || o->size == BK_PLOT_HATCH_CROSS) svg_hatch_dir(f, o, 0);
            if (o->size == BK_PLOT_HATCH_DOWN || o->size == BK_PLOT_HATCH_CROSS) svg_hatch_dir(f, o, 1);
            if (o->size == BK_PLOT_HATCH_FLAT) svg_hatch_dir(f, o, 2);
            fprintf(f, "\" fill=\"none\" stroke=\"#%06x\" stroke-width=\"%g\"/>\n", (unsigned)o->rgb, HATCH_WIDTH);
            break;
        case OP_LINE:
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#%06x\"/>\n", o->x, o->y, o->w, o->h,
                    (unsigned)o->rgb);
            break;
        case OP_TEXT: {
            int a = o->flags & 3;
            if (o->flags & BK_PLOT_UP) fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\"", o->x, o->y);
            else fprintf(f, "<text x=\"%d\" y=\"%d\"", o->x, o->y);
            if (o->size != 12) fprintf(f, " font-size=\"%d\"", o->size);
            if (o->rgb) fprintf(f, " fill=\"#%06x\"", (unsigned)o->rgb);
            if (a) fprintf(f, " text-anchor=\"%s\"", a == BK_PLOT_MIDDLE ? "middle" : "end");
            if (o->flags & BK_PLOT_BOLD) fputs(" font-weight=\"bold\"", f);
            fputc('>', f);
            xml_str(f, o->s);
            fputs("</text>\n", f);
            break;
        }
        }
    }
    fputs("</svg>\n", f);
}

/* ---- PNG ---------------------------------------------------------------------------------- */

typedef struct canvas {
    uint8_t *px; /* w * h * 3, sRGB */
    int      w, h;
} canvas;

static void fill(canvas *c, int x0, int y0, int x1, int y1, uint32_t rgb)
{
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 > c->w) x1 = c->w;
    if (y1 > c->h) y1 = c->h;
    for (int y = y0; y < y1; ++y)
        for (int x = x0; x < x1; ++x) {
            uint8_t *q = c->px + 3 * ((size_t)y * (size_t)c->w + (size_t)x);
            q[0] = (uint8_t)(rgb >> 16);
            q[1] = (uint8_t)(rgb >> 8);
            q[2] = (uint8_t)rgb;
        }
}

/* distance from t to the nearest multiple of the hatch step */
static double step_dist(double t)
{
    double d = fmod(t, HATCH_STEP);
    if (d < 0) d += HATCH_STEP;
    return d < HATCH_STEP - d ? d : HATCH_STEP - d;
}

/* The hatch lines of svg_hatch_dir, by pixel centre: within half a line width of one. */
static void draw_hatch(canvas *c, const plot_op *o)
{
    const int    s = BK_PLOT_PNG_SCALE;
    const double half = 0.5 * HATCH_WIDTH, r2 = sqrt(2.0);
    int          st = o->size;
    for (int y = o->y * s; y < (o->y + o->h) * s; ++y)
        for (int x = o->x * s; x < (o->x + o->w) * s; ++x) {
            double lx = (x + 0.5) / s, ly = (y + 0.5) / s;
            int    on = 0;
            if (st == BK_PLOT_HATCH_UP || st == BK_PLOT_HATCH_CROSS) on |= step_dist(lx + ly) / r2 < half;
            if (st == BK_PLOT_HATCH_DOWN || st == BK_PLOT_HATCH_CROSS) on |= step_dist(lx - ly) / r2 < half;
            if (st == BK_PLOT_HATCH_FLAT) on |= step_dist(ly) < half;
            if (on) fill(c, x, y, x + 1, y + 1, o->rgb);
        }
}

/* A line one logical pixel wide, as SVG strokes it (centred on the segment). */
static void draw_line(canvas *c, const plot_op *o)
{
    const int s = BK_PLOT_PNG_SCALE;
    double    x0 = o->x * s, y0 = o->y * s, x1 = o->w * s, y1 = o->h * s;
    int       n = (int)(2 * fmax(fabs(x1 - x0), fabs(y1 - y0))) + 1;
    for (int k = 0; k <= n; ++k) {
        double t = (double)k / n;
        int    cx = (int)floor(x0 + t * (x1 - x0) - 0.5 * s + 0.5), cy = (int)floor(y0 + t * (y1 - y0) - 0.5 * s + 0.5);
        fill(c, cx, cy, cx + s, cy + s, o->rgb);
    }
}

static void draw_text(canvas *c, const plot_op *o)
{
    const int s = BK_PLOT_PNG_SCALE, f = font_px(o->size), a = o->flags & 3;
    int       wd = text_device_width(o->size, o->flags, o->s);
    int       u0 = a == BK_PLOT_MIDDLE ? -wd / 2 : a == BK_PLOT_END ? -wd : 0, X = o->x * s, Y = o->y * s;
    int       passes = (o->flags & BK_PLOT_BOLD) ? 2 : 1;
    for (int i = 0; o->s[i]; ++i) {
        unsigned ch = (unsigned char)o->s[i];
        uint64_t g = font5x7[(ch >= 32 && ch < 127 ? ch : '?') - 32];
        for (int row = 0; row < 9; ++row)
            for (int col = 0; col < 5; ++col) {
                if (!((g >> (5 * row + 4 - col)) & 1)) continue;
                for (int b = 0; b < passes; ++b) {
                    int u = u0 + i * 6 * f + col * f + b * bold_px(o->size), v = (row - 7) * f;
                    if (o->flags & BK_PLOT_UP) fill(c, X + v, Y - u - f, X + v + f, Y - u, o->rgb);
                    else fill(c, X + u, Y + v, X + u + f, Y + v + f, o->rgb);
                }
            }
    }
}

static int write_png(const bk_plot *p, FILE *f, const char *path, char *err, size_t err_size)
{
    const int s = BK_PLOT_PNG_SCALE;
    canvas    c;
    c.w = p->w * s;
    c.h = p->h * s;
    size_t n = (size_t)c.w * (size_t)c.h;
    c.px = malloc(3 * n);
    float *rgb = malloc(sizeof(float) * 3 * n);
    if (!c.px || !rgb) {
        free(c.px);
        free(rgb);
        return bk_fail(err, err_size, "%s: out of memory for a %d x %d plot", path, c.w, c.h);
    }
    fill(&c, 0, 0, c.w, c.h, 0xffffff);
    for (size_t i = 0; i < p->n; ++i) {
        const plot_op *o = &p->op[i];
        switch (o->kind) {
        case OP_RECT: fill(&c, o->x * s, o->y * s, (o->x + o->w) * s, (o->y + o->h) * s, o->rgb); break;
        case OP_HATCH: draw_hatch(&c, o); break;
        case OP_LINE: draw_line(&c, o); break;
        case OP_TEXT: draw_text(&c, o); break;
        }
    }
    /* the PNG writer takes linear light and encodes sRGB exactly: the bytes come back */
    float lin[256];
    for (int k = 0; k < 256; ++k) lin[k] = bk_srgb8_to_linear((uint8_t)k);
    for (size_t i = 0; i < 3 * n; ++i) rgb[i] = lin[c.px[i]];
    free(c.px);
    int rc = bk_image_write_file(f, path, rgb, c.w, c.h, 1.0f, err, err_size);
    free(rgb);
    return rc;
}

int bk_plot_type_ok(const char *path) { return bk_path_has_ext(path, ".svg") || bk_path_has_ext(path, ".png"); }

int bk_plot_write(const bk_plot *p, FILE *f, const char *path, char *err, size_t err_size)
{
    if (p->oom) return bk_fail(err, err_size, "%s: out of memory while drawing the plot", path);
    if (bk_path_has_ext(path, ".png")) return write_png(p, f, path, err, err_size);
    if (!bk_path_has_ext(path, ".svg")) return bk_fail(err, err_size, "%s: a plot's name ends in .svg or .png", path);
    write_svg(p, f);
    return 0;
}
