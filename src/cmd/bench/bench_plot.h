/* bench_plot.h - a small chart canvas for the bench commands: filled and hatched rectangles, lines
 * and text in logical pixels, written as SVG or as PNG.
 *
 * The SVG draws every shape explicitly (hatching as line segments already clipped to their
 * rectangle, opaque colours, no patterns, masks or opacity), so a browser, rsvg-convert and
 * ImageMagick's own renderer draw the same picture. The PNG is drawn here at BK_PLOT_PNG_SCALE
 * device pixels per logical pixel, text in a built-in 5x7 bitmap font, and written by the
 * project's PNG writer (bk_image_write_file); no outside program.
 *
 * Usage:
 *     bk_plot *p = bk_plot_new();
 *     bk_plot_rect(p, 10, 10, 40, 80, 0x4e79a7, "a tooltip");   // colours are 0xRRGGBB
 *     bk_plot_hatch(p, 10, 10, 40, 80, 0x2b435c, BK_PLOT_HATCH_UP);
 *     bk_plot_text(p, 30, 100, 12, BK_PLOT_MIDDLE, 0x000000, "bvh");
 *     bk_plot_size(p, 900, 400);
 *     if (bk_plot_write(p, f, "chart.png", err, sizeof err)) puts(err);  // by the extension
 *     bk_plot_free(p);
 */
#ifndef BK_BENCH_PLOT_H
#define BK_BENCH_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BK_PLOT_PNG_SCALE 2 /* device pixels per logical pixel in a PNG */

/* text anchor (SVG's text-anchor) and style flags, or-ed */
#define BK_PLOT_START  0
#define BK_PLOT_MIDDLE 1
#define BK_PLOT_END    2
#define BK_PLOT_BOLD   4
#define BK_PLOT_UP     8 /* rotated -90 degrees about (x, y): reads bottom to top */

/* hatching: lines 6 logical pixels apart, 1.2 wide */
typedef enum bk_plot_hatch_style {
    BK_PLOT_HATCH_NONE = 0,
    BK_PLOT_HATCH_UP,    /* "/" */
    BK_PLOT_HATCH_DOWN,  /* "\" */
    BK_PLOT_HATCH_CROSS, /* both */
    BK_PLOT_HATCH_FLAT,  /* "-" */
    BK_PLOT_HATCH_COUNT
} bk_plot_hatch_style;

typedef struct bk_plot bk_plot;

/* An empty canvas of size 0 x 0 (set it with bk_plot_size before writing); NULL when out of memory. */
bk_plot *bk_plot_new(void);
void     bk_plot_free(bk_plot *p);
/* The canvas size in logical pixels (a white background). */
void bk_plot_size(bk_plot *p, int w, int h);
/* Shapes, drawn in the order given. title: an SVG tooltip (not drawn in a PNG), or NULL. */
void bk_plot_rect(bk_plot *p, int x, int y, int w, int h, uint32_t rgb, const char *title);
void bk_plot_hatch(bk_plot *p, int x, int y, int w, int h, uint32_t rgb, bk_plot_hatch_style style);
void bk_plot_line(bk_plot *p, int x1, int y1, int x2, int y2, uint32_t rgb);
/* Text with its baseline at y; size in logical pixels (SVG font-size); flags BK_PLOT_*. Bytes
 * outside printable ASCII draw as '?' in a PNG. */
void bk_plot_text(bk_plot *p, int x, int y, int size, int flags, uint32_t rgb, const char *s);
/* How wide text of that size may be, in logical pixels: the larger of the PNG font's width and
 * 0.6 em per character (a generous average for a browser's sans-serif). Layouts use it. */
int bk_plot_text_width(int size, int flags, const char *s);
/* The extent of everything drawn: 1 when some shape or text (by bk_plot_text_width) reaches
 * outside the canvas, with the first such in why. */
int bk_plot_overflows(const bk_plot *p, char *why, size_t why_size);
/* Writes the canvas by path's extension: .svg or .png (case-insensitive). 0, or -1 with one
 * line in err naming path (out of memory while drawing, or a write error). */
int bk_plot_write(const bk_plot *p, FILE *f, const char *path, char *err, size_t err_size);
/* 1 when path ends in .svg or .png. */
int bk_plot_type_ok(const char *path);

#endif
