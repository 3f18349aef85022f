/* fill.c - hidden texels (inside geometry) filled from the nearest valid texel of their own chart
 * (see fill.h).
 *
 * Pipeline: bake -> bk_fill_hidden_texels (here) -> bk_image_dilate (padding) -> bk_image_write.
 *
 * The nearest seed of every pixel of a rectangle comes from the separable exact Euclidean
 * distance transform of Felzenszwalb & Huttenlocher (2012): a pass down each column finds the
 * nearest seed row of that column, then a pass along each row takes the lower envelope of the
 * parabolas (x - q)^2 + dy(q)^2 of the row's columns q. Both passes are linear, so a chart costs
 * the area of its bounding box; charts without hidden texels cost nothing beyond one scan.
 *
 * Why the nearest texel and not a smooth (push-pull) average: a hidden texel then holds exactly
 * the light of the closest surface point that was baked, never more or less than its valid
 * neighbours, and a push-pull pyramid would have to be kept per chart to stop neighbouring charts
 * from mixing at its coarse levels.
 */
#include "fill.h"
#include "image.h"
#include "scene.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* For each pixel (x, y) of the rectangle [x0, x0 + rw) x [y0, y0 + rh) of a w-wide image,
 * near[(y - y0) * rw + (x - x0)] = image index of the nearest seed inside the rectangle, BK_NONE
 * when it holds none. A seed is a pixel with coverage BK_COVER_TEXEL and chart `c` (any chart when
 * c is BK_NONE). row: rw ints, f: rw doubles, v: rw ints, z: rw + 1 doubles of scratch. */
static void nearest_seed(const uint8_t *cov, const uint32_t *chart, uint32_t c, int w, int x0, int y0, int rw, int rh,
                         uint32_t *near, int *row, double *f, int *v, double *z)
{
#define SEED(x, y) (cov[(size_t)(y) * w + (x)] == BK_COVER_TEXEL && \
                    (c == BK_NONE ? chart[(size_t)(y) * w + (x)] != BK_NONE : chart[(size_t)(y) * w + (x)] == c))
    /* columns: near[] holds the nearest seed row of the column (relative), or BK_NONE; swept a
     * row at a time (row[] keeps each column's last seed) so memory is read in order */
    for (int x = 0; x < rw; ++x) row[x] = -1;
    for (int y = 0; y < rh; ++y) {
        uint32_t *nr = near + (size_t)y * rw;
        for (int x = 0; x < rw; ++x) {
            if (SEED(x0 + x, y0 + y)) row[x] = y;
            nr[x] = row[x] < 0 ? BK_NONE : (uint32_t)row[x];
        }
    }
    for (int x = 0; x < rw; ++x) row[x] = -1;
    for (int y = rh - 1; y >= 0; --y) {
        uint32_t *nr = near + (size_t)y * rw;
        for (int x = 0; x < rw; ++x) {
            if (nr[x] == (uint32_t)y) row[x] = y;   /* a seed */
            else if (row[x] >= 0 && (nr[x] == BK_NONE || (uint32_t)(row[x] - y) < (uint32_t)y - nr[x])) nr[x] = (uint32_t)row[x];
        }
    }
#undef SEED
    /* rows: lower envelope of the parabolas of the columns that have a seed */
    for (int y = 0; y < rh; ++y) {
        uint32_t *nr = near + (size_t)y * rw;
        int k = -1;
        for (int q = 0; q < rw; ++q) {
            row[q] = nr[q] == BK_NONE ? -1 : (int)nr[q];
            if (row[q] < 0) continue;
            double dy = (double)(row[q] - y);
            f[q] = dy * dy;
            if (k < 0) { k = 0; v[0] = q; z[0] = -1e300; z[1] = 1e300; continue; }
            double s;
            for (;;) {   /* ends at k = 0 at the latest: z[0] is below every s */
                int p = v[k];
                s = ((f[q] + (double)q * q) - (f[p] + (double)p * p)) / (2.0 * (q - p));
                if (s > z[k]) break;
                --k;
            }
            ++k;
            v[k] = q; z[k] = s; z[k + 1] = 1e300;
        }
        if (k < 0) { for (int x = 0; x < rw; ++x) nr[x] = BK_NONE; continue; }
        for (int x = 0, j = 0; x < rw; ++x) {
            while (z[j + 1] < (double)x) ++j;
            int q = v[j];
            nr[x] = (uint32_t)((size_t)(y0 + row[q]) * w + (size_t)(x0 + q));
        }
    }
}

typedef struct chart_box {
    int      x0, y0, x1, y1;  /* inclusive pixel bounds */
    uint32_t valid, hidden;
} chart_box;

int bk_fill_hidden(float *rgb, uint8_t *coverage, const uint32_t *chart, int w, int h, bk_fill_stats *st,
                   char *err, size_t err_size)
{
    double t0 = bk_time_now();
    bk_fill_stats s;
    memset(&s, 0, sizeof s);
    size_t N = (size_t)w * (size_t)h;
    uint32_t top = 0;   /* charts 0 .. top - 1 appear */
    uint64_t hidden = 0;
    for (size_t i = 0; i < N; ++i) {
        if (chart[i] == BK_NONE) continue;
        if (chart[i] >= top) top = chart[i] + 1;
        hidden += coverage[i] == BK_COVER_NONE;
    }
    if (!hidden) { s.seconds = bk_time_now() - t0; if (st) *st = s; return 0; }
    chart_box *box = malloc(sizeof(chart_box) * (size_t)top);
    if (!box) return bk_fail(err, err_size, "fill: out of memory for %u charts", top);
    for (uint32_t c = 0; c < top; ++c) { box[c].x0 = w; box[c].y0 = h; box[c].x1 = -1; box[c].y1 = -1; box[c].valid = box[c].hidden = 0; }
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x) {
            size_t i = (size_t)y * w + x;
            uint32_t c = chart[i];
            if (c == BK_NONE) continue;
            chart_box *b = &box[c];
            if (x < b->x0) b->x0 = x;
            if (x > b->x1) b->x1 = x;
            if (y < b->y0) b->y0 = y;
            if (y > b->y1) b->y1 = y;
            if (coverage[i] == BK_COVER_TEXEL) b->valid++;
            else if (coverage[i] == BK_COVER_NONE) b->hidden++;
        }
    /* scratch for the largest box that needs it (the whole image for charts without valid texels) */
    size_t cap = 0;
    int wmax = 0, any_empty = 0;
    for (uint32_t c = 0; c < top; ++c) {
        if (!box[c].hidden) continue;
        if (!box[c].valid) { any_empty = 1; continue; }
        int bw = box[c].x1 - box[c].x0 + 1, bh = box[c].y1 - box[c].y0 + 1;
        if ((size_t)bw * bh > cap) cap = (size_t)bw * bh;
        if (bw > wmax) wmax = bw;
    }
    if (any_empty) { cap = N; wmax = w; }
    uint32_t *near = malloc(sizeof(uint32_t) * (cap ? cap : 1));
    int *row = malloc(sizeof(int) * (size_t)(wmax + 1)), *v = malloc(sizeof(int) * (size_t)(wmax + 1));
    double *f = malloc(sizeof(double) * (size_t)(wmax + 1)), *z = malloc(sizeof(double) * (size_t)(wmax + 2));
    if (!near || !row || !v || !f || !z) {
        free(box); free(near); free(row); free(v); free(f); free(z);
        return bk_fail(err, err_size, "fill: out of memory for a %dx%d image", w, h);
    }
    for (uint32_t c = 0; c < top; ++c) {
        chart_box *b = &box[c];
        if (!b->hidden || !b->valid) continue;
        int bw = b->x1 - b->x0 + 1, bh = b->y1 - b->y0 + 1;
        nearest_seed(coverage, chart, c, w, b->x0, b->y0, bw, bh, near, row, f, v, z);
        for (int y = 0; y < bh; ++y)
            for (int x = 0; x < bw; ++x) {
                size_t i = (size_t)(b->y0 + y) * w + (size_t)(b->x0 + x);
                if (chart[i] != c || coverage[i] != BK_COVER_NONE) continue;
                size_t j = near[(size_t)y * bw + x];   /* never BK_NONE: the chart has a valid texel in its box */
                for (int k = 0; k < 3; ++k) rgb[3 * i + k] = rgb[3 * j + k];
                coverage[i] = BK_COVER_DILATED;
                s.filled++;
            }
        s.charts++;
    }
    if (any_empty) {
        /* charts without light of their own: one colour, the mean of the valid texels nearest to
         * their texels; seeds are the valid texels only (never a texel filled above), so this
         * does not depend on the order of the charts either */
        nearest_seed(coverage, chart, BK_NONE, w, 0, 0, w, h, near, row, f, v, z);
        double *sum = calloc((size_t)top * 3, sizeof(double));
        if (!sum) {
            free(box); free(near); free(row); free(v); free(f); free(z);
            return bk_fail(err, err_size, "fill: out of memory for %u charts", top);
        }
        for (size_t i = 0; i < N; ++i) {
            uint32_t c = chart[i];
            if (c == BK_NONE || box[c].valid || !box[c].hidden || near[i] == BK_NONE) continue;
            for (int k = 0; k < 3; ++k) sum[3 * (size_t)c + k] += rgb[3 * (size_t)near[i] + k];
        }
        for (size_t i = 0; i < N; ++i) {
            uint32_t c = chart[i];
            if (c == BK_NONE || box[c].valid || coverage[i] != BK_COVER_NONE) continue;
            if (near[i] == BK_NONE) { s.unfilled++; continue; }   /* no valid texel anywhere */
            double n = (double)box[c].hidden;
            for (int k = 0; k < 3; ++k) rgb[3 * i + k] = (float)(sum[3 * (size_t)c + k] / n);
            coverage[i] = BK_COVER_DILATED;
            s.empty_texels++;
        }
        for (uint32_t c = 0; c < top; ++c) s.empty_charts += box[c].hidden && !box[c].valid;
        free(sum);
    }
    free(box); free(near); free(row); free(v); free(f); free(z);
    s.seconds = bk_time_now() - t0;
    if (st) *st = s;
    return 0;
}

int bk_fill_hidden_texels(float *rgb, uint8_t *coverage, const bk_texel *tx, uint32_t n, const uint32_t *tri_chart,
                          int w, int h, int pages, bk_fill_stats *st, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    bk_fill_stats total;
    memset(&total, 0, sizeof total);
    uint32_t hidden = 0;
    for (uint32_t i = 0; i < n; ++i) hidden += coverage[tx[i].pixel] == BK_COVER_NONE;
    if (!hidden) { total.seconds = bk_time_now() - t0; if (st) *st = total; return 0; }
    size_t page_px = (size_t)w * (size_t)h;
    uint32_t *chart = malloc(sizeof(uint32_t) * (page_px ? page_px : 1));
    if (!chart) return bk_fail(err, err_size, "fill: out of memory for a %dx%d page", w, h);
    for (int p = 0; p < pages; ++p) {
        size_t first = page_px * (size_t)p;
        int page_hidden = 0;
        for (size_t i = 0; i < page_px; ++i) chart[i] = BK_NONE;
        for (uint32_t i = 0; i < n; ++i) {
            size_t px = tx[i].pixel;
            if (px < first || px - first >= page_px) continue;
            chart[px - first] = tri_chart[tx[i].tri];
            page_hidden |= coverage[px] == BK_COVER_NONE;
        }
        if (!page_hidden) continue;
        bk_fill_stats s;
        if (bk_fill_hidden(rgb + 3 * first, coverage + first, chart, w, h, &s, err, err_size)) { free(chart); return -1; }
        total.filled += s.filled; total.charts += s.charts; total.empty_charts += s.empty_charts;
        total.empty_texels += s.empty_texels; total.unfilled += s.unfilled;
    }
    free(chart);
    total.seconds = bk_time_now() - t0;
    if (st) *st = total;
    return 0;
}
