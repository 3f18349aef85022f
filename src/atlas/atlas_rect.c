/* atlas_rect.c - a chart's minimal-area rectangle: the convex hull of its corners (Andrew's
 * monotone chain), the hull's minimal-area bounding rectangle by rotating calipers (Freeman &
 * Shapira 1975, Toussaint 1983), and the chart's layout turned into it, landscape.
 *
 * Pipeline: every chart pass (atlas_grow.c, atlas_split.c, atlas_merge.c, ...) fits its charts'
 * rectangles here; the packer (atlas_pack.c) pays for those rectangles.
 */
#include "atlas_internal.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double hcross(bk_hpt o, bk_hpt a, bk_hpt b) { return (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x); }

static int hpt_less(bk_hpt a, bk_hpt b) { return a.x < b.x || (a.x == b.x && a.y < b.y); }

/* Sorts p[0..n) by (x, y): quicksort on the median of three, insertion sort below 24 points, the
 * smaller side first (log n stack). qsort's indirect calls cost a chart's hull as much again. */
static void hpt_sort(bk_hpt *p, int n)
{
    while (n > 24) {
        bk_hpt a = p[0], b = p[n / 2], c = p[n - 1], piv;
        if (hpt_less(a, b)) piv = hpt_less(b, c) ? b : (hpt_less(a, c) ? c : a);
        else piv = hpt_less(a, c) ? a : (hpt_less(b, c) ? c : b);
        int i = 0, j = n - 1;
        for (;;) {
            while (hpt_less(p[i], piv)) i++;
            while (hpt_less(piv, p[j])) j--;
            if (i >= j) break;
            bk_hpt x = p[i];
            p[i] = p[j];
            p[j] = x;
            i++;
            j--;
        }
        /* [0, j] <= piv <= [j + 1, n) */
        int left = j + 1;
        if (left < n - left) {
            hpt_sort(p, left);
            p += left;
            n -= left;
        } else {
            hpt_sort(p + left, n - left);
            n = left;
        }
    }
    for (int i = 1; i < n; ++i) {
        bk_hpt x = p[i];
        int    j = i - 1;
        while (j >= 0 && hpt_less(x, p[j])) {
            p[j + 1] = p[j];
            j--;
        }
        p[j + 1] = x;
    }
}

/* Convex hull (Andrew's monotone chain) of p[0..n) (sorted in place) into h, which needs room
 * for 2 n points; returns the hull size. */
int bk_atlas_convex_hull(bk_hpt *p, int n, bk_hpt *h)
{
    if (n < 3) {
        for (int i = 0; i < n; ++i) h[i] = p[i];
        return n;
    }
    if (n <= 48) { /* merging two small hulls: insertion sort beats qsort's indirect calls */
        for (int i = 1; i < n; ++i) {
            bk_hpt x = p[i];
            int    j = i - 1;
            while (j >= 0 && (p[j].x > x.x || (p[j].x == x.x && p[j].y > x.y))) {
                p[j + 1] = p[j];
                j--;
            }
            p[j + 1] = x;
        }
    } else {
        /* Akl-Toussaint: points strictly inside the octagon of the extreme points in x, y, x + y
         * and x - y are no hull vertices; a chart's interior vertices (most of its corners) go
         * before the sort */
        int ex[8] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        for (int i = 1; i < n; ++i) {
            bk_hpt q = p[i];
            if (q.x > p[ex[0]].x) ex[0] = i;
            if (q.x + q.y > p[ex[1]].x + p[ex[1]].y) ex[1] = i;
            if (q.y > p[ex[2]].y) ex[2] = i;
            if (q.y - q.x > p[ex[3]].y - p[ex[3]].x) ex[3] = i;
            if (q.x < p[ex[4]].x) ex[4] = i;
            if (q.x + q.y < p[ex[5]].x + p[ex[5]].y) ex[5] = i;
            if (q.y < p[ex[6]].y) ex[6] = i;
            if (q.x - q.y > p[ex[7]].x - p[ex[7]].y) ex[7] = i;
        }
        bk_hpt oct[8];
        int    no = 0;
        for (int k = 0; k < 8; ++k) {
            bk_hpt q = p[ex[k]];
            if (no && oct[no - 1].x == q.x && oct[no - 1].y == q.y) continue;
            oct[no++] = q;
        }
        if (no > 1 && oct[no - 1].x == oct[0].x && oct[no - 1].y == oct[0].y) no--;
        if (no >= 3) {
            int m = 0;
            for (int i = 0; i < n; ++i) {
                int inside = 1;
                for (int k = 0; k < no && inside; ++k) inside = hcross(oct[k], oct[(k + 1) % no], p[i]) > 0;
                if (!inside) p[m++] = p[i];
            }
            n = m;
        }
        hpt_sort(p, n);
    }
    int k = 0;
    for (int i = 0; i < n; ++i) {
        while (k >= 2 && hcross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    for (int i = n - 2, t = k + 1; i >= 0; --i) {
        while (k >= t && hcross(h[k - 2], h[k - 1], p[i]) <= 0) k--;
        h[k++] = p[i];
    }
    return k - 1;
}

/* The rotation (cs, sn) that turns a convex polygon (counter-clockwise, no collinear points, as
 * bk_atlas_convex_hull makes it) into its minimal-area bounding rectangle: that rectangle has a side along
 * a hull edge (Freeman & Shapira 1975); rotating calipers (Toussaint 1983) find the extreme points
 * for every edge in O(hn) altogether. */
static double hdot(bk_hpt a, double ex, double ey) { return a.x * ex + a.y * ey; }

void bk_atlas_rect_from_hull(const bk_hpt *H, int hn, double *out_cs, double *out_sn, double *out_w, double *out_h)
{
    *out_cs = 1;
    *out_sn = 0;
    *out_w = 0;
    *out_h = 0;
    if (hn <= 0) return;
    if (hn < 3) {
        double dx = H[hn - 1].x - H[0].x, dy = H[hn - 1].y - H[0].y, len = sqrt(dx * dx + dy * dy);
        if (len > 0) {
            *out_cs = dx / len;
            *out_sn = dy / len;
            *out_w = len;
        }
        return;
    }
    double best = DBL_MAX;
    int    r = 0, t = 0, l = 0;
    for (int i = 0; i < hn; ++i) {
        bk_hpt a = H[i], b = H[(i + 1) % hn];
        double dx = b.x - a.x, dy = b.y - a.y, len = sqrt(dx * dx + dy * dy);
        if (!(len > 0)) continue;
        double ex = dx / len, ey = dy / len, nx = -ey, ny = ex;
        if (i == 0) {
            for (int j = 1; j < hn; ++j) {
                if (hdot(H[j], ex, ey) > hdot(H[r], ex, ey)) r = j;
                if (hdot(H[j], nx, ny) > hdot(H[t], nx, ny)) t = j;
                if (hdot(H[j], ex, ey) < hdot(H[l], ex, ey)) l = j;
            }
        } else {
            for (int k = 0; k < hn && hdot(H[(r + 1) % hn], ex, ey) >= hdot(H[r], ex, ey); ++k) r = (r + 1) % hn;
            for (int k = 0; k < hn && hdot(H[(t + 1) % hn], nx, ny) >= hdot(H[t], nx, ny); ++k) t = (t + 1) % hn;
            for (int k = 0; k < hn && hdot(H[(l + 1) % hn], ex, ey) <= hdot(H[l], ex, ey); ++k) l = (l + 1) % hn;
        }
        double w = hdot(H[r], ex, ey) - hdot(H[l], ex, ey), h = hdot(H[t], nx, ny) - hdot(a, nx, ny);
        if (w * h < best) {
            best = w * h;
            *out_cs = ex;
            *out_sn = ey;
            *out_w = w;
            *out_h = h;
        }
    }
}

/* Rotates the corners of tris[0..n) (their loc) and the hull H by (cs, sn), shifts them to the
 * origin and turns them landscape (w >= h). Rotations only, never a mirror: triangles keep
 * their counter-clockwise orientation. */
void bk_atlas_apply_rect(double *loc, const uint32_t *tris, uint32_t n, bk_hpt *H, int hn, double cs, double sn,
                         double *out_w, double *out_h)
{
    double x0 = DBL_MAX, x1 = -DBL_MAX, y0 = DBL_MAX, y1 = -DBL_MAX;
    for (int j = 0; j < hn; ++j) {
        double x = H[j].x * cs + H[j].y * sn, y = -H[j].x * sn + H[j].y * cs;
        H[j].x = x;
        H[j].y = y;
        if (x < x0) x0 = x;
        if (x > x1) x1 = x;
        if (y < y0) y0 = y;
        if (y > y1) y1 = y;
    }
    int    swap = (y1 - y0) > (x1 - x0);
    double hh = y1 - y0;
    for (uint32_t i = 0; i < n; ++i) {
        double *L = loc + 6 * (size_t)tris[i];
        for (int k = 0; k < 3; ++k) {
            double x = L[2 * k] * cs + L[2 * k + 1] * sn - x0, y = -L[2 * k] * sn + L[2 * k + 1] * cs - y0;
            /* (x, y) -> (h - y, x) is a rotation, not a mirror */
            if (swap) {
                L[2 * k] = hh - y;
                L[2 * k + 1] = x;
            } else {
                L[2 * k] = x;
                L[2 * k + 1] = y;
            }
        }
    }
    for (int j = 0; j < hn; ++j) {
        double x = H[j].x - x0, y = H[j].y - y0;
        if (swap) {
            H[j].x = hh - y;
            H[j].y = x;
        } else {
            H[j].x = x;
            H[j].y = y;
        }
    }
    *out_w = swap ? y1 - y0 : x1 - x0;
    *out_h = swap ? x1 - x0 : y1 - y0;
}

/* bk_atlas_fit_rect: bk_atlas_rect_from_hull + bk_atlas_apply_rect for a set of triangles. */
int bk_atlas_fit_rect(double *loc, const uint32_t *tris, uint32_t n, double *out_w, double *out_h, bk_hpt **pts,
                      size_t *pts_cap)
{
    size_t np = 3 * (size_t)n;
    if (np * 3 + 1 > *pts_cap) { /* points, then up to 2 np hull slots (monotone chain) */
        bk_hpt *p = realloc(*pts, sizeof(bk_hpt) * (np * 3 + 1));
        if (!p) return -1;
        *pts = p;
        *pts_cap = np * 3 + 1;
    }
    bk_hpt *P = *pts, *H = *pts + np;
    for (uint32_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            P[3 * i + k].x = loc[6 * (size_t)tris[i] + 2 * k];
            P[3 * i + k].y = loc[6 * (size_t)tris[i] + 2 * k + 1];
        }
    int    hn = bk_atlas_convex_hull(P, (int)np, H);
    double cs, sn, w, h;
    bk_atlas_rect_from_hull(H, hn, &cs, &sn, &w, &h);
    bk_atlas_apply_rect(loc, tris, n, H, hn, cs, sn, out_w, out_h);
    return 0;
}
