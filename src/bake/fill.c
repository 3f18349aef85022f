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
#include "pool.h"
#include "scene.h"
#include "util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* For each pixel (x, y) of the rectangle [x0, x0 + rw) x [y0, y0 + rh) of a w-wide image,
 * near[(y - y0) * rw + (x - x0)] = image index of the nearest seed inside the rectangle, BK_NONE
 * when it holds none. A seed is a pixel with chart `c` (any chart when c is BK_NONE) and coverage
 * BK_COVER_TEXEL; the chart is tested first, so a chart's search reads no coverage byte of another
 * chart (which that chart's fill, on another thread, may be writing).
 * Two passes: seed_cols for the columns [xa, xb) of the rectangle (row: rw ints of scratch,
 * indexed by column), then seed_rows for its rows [ya, yb) (row: rw ints, f: rw doubles, v: rw
 * ints, z: rw + 1 doubles). Each column, then each row, is computed on its own, so the passes can
 * be cut among threads. */
static void seed_cols(const uint8_t *cov, const uint32_t *chart, uint32_t c, int w, int x0, int y0, int rw, int rh,
                      uint32_t *near, int xa, int xb, int *row)
{
#define SEED(x, y)                                                                               \
    ((c == BK_NONE ? chart[(size_t)(y)*w + (x)] != BK_NONE : chart[(size_t)(y)*w + (x)] == c) && \
     cov[(size_t)(y)*w + (x)] == BK_COVER_TEXEL)
    /* near[] holds the nearest seed row of the column (relative), or BK_NONE; swept a row at a
     * time (row[] keeps each column's last seed) so memory is read in order */
    for (int x = xa; x < xb; ++x) row[x] = -1;
    for (int y = 0; y < rh; ++y) {
        uint32_t *nr = near + (size_t)y * rw;
        for (int x = xa; x < xb; ++x) {
            if (SEED(x0 + x, y0 + y)) row[x] = y;
            nr[x] = row[x] < 0 ? BK_NONE : (uint32_t)row[x];
        }
    }
    for (int x = xa; x < xb; ++x) row[x] = -1;
    for (int y = rh - 1; y >= 0; --y) {
        uint32_t *nr = near + (size_t)y * rw;
        for (int x = xa; x < xb; ++x) {
            if (nr[x] == (uint32_t)y) row[x] = y; /* a seed */
            else if (row[x] >= 0 && (nr[x] == BK_NONE || (uint32_t)(row[x] - y) < (uint32_t)y - nr[x]))
                nr[x] = (uint32_t)row[x];
        }
    }
#undef SEED
}

static void seed_rows(int w, int x0, int y0, int rw, uint32_t *near, int ya, int yb, int *row, double *f, int *v,
                      double *z)
{
    /* lower envelope of the parabolas of the columns that have a seed */
    for (int y = ya; y < yb; ++y) {
        uint32_t *nr = near + (size_t)y * rw;
        int       k = -1;
        for (int q = 0; q < rw; ++q) {
            row[q] = nr[q] == BK_NONE ? -1 : (int)nr[q];
            if (row[q] < 0) continue;
            double dy = (double)(row[q] - y);
            f[q] = dy * dy;
            if (k < 0) {
                k = 0;
                v[0] = q;
                z[0] = -1e300;
                z[1] = 1e300;
                continue;
            }
            double s;
            for (;;) { /* ends at k = 0 at the latest: z[0] is below every s */
                int p = v[k];
                s = ((f[q] + (double)q * q) - (f[p] + (double)p * p)) / (2.0 * (q - p));
                if (s > z[k]) break;
                --k;
            }
            ++k;
            v[k] = q;
            z[k] = s;
            z[k + 1] = 1e300;
        }
        if (k < 0) {
            for (int x = 0; x < rw; ++x) nr[x] = BK_NONE;
            continue;
        }
        for (int x = 0, j = 0; x < rw; ++x) {
            while (z[j + 1] < (double)x) ++j;
            int q = v[j];
            nr[x] = (uint32_t)((size_t)(y0 + row[q]) * w + (size_t)(x0 + q));
        }
    }
}

/* Scratch of seed_rows for one thread: rw + 2 of each. */
typedef struct seed_scratch {
    int    *row, *v;
    double *f, *z;
} seed_scratch;

static int scratch_alloc(seed_scratch *s, int rw)
{
    size_t n = (size_t)rw + 2;
    s->row = malloc(sizeof(int) * n);
    s->v = malloc(sizeof(int) * n);
    s->f = malloc(sizeof(double) * n);
    s->z = malloc(sizeof(double) * n);
    return s->row && s->v && s->f && s->z ? 0 : -1;
}
static void scratch_free(seed_scratch *s)
{
    free(s->row);
    free(s->v);
    free(s->f);
    free(s->z);
}

/* The whole image's nearest valid texels (any chart), both passes on the pool; with row_need,
 * only its rows are complete (the others hold the column pass's rows). */
typedef struct seed_job {
    const uint8_t  *cov;
    const uint32_t *chart;
    uint32_t       *near;
    int             w, h, *col_row;
    const uint8_t  *row_need; /* rows whose nearest seeds are asked for (NULL: all) */
    seed_scratch   *per_worker;
} seed_job;

#define SEED_COLS                                                                                      \
    256 /* columns per chunk: each sweeps every row, so wide enough to read whole cache lines in order \
         */
#define SEED_ROWS 16
static void seed_cols_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    const seed_job *j = ctx;
    for (size_t b = begin; b < end; ++b) {
        int xa = (int)b * SEED_COLS, xb = xa + SEED_COLS < j->w ? xa + SEED_COLS : j->w;
        seed_cols(j->cov, j->chart, BK_NONE, j->w, 0, 0, j->w, j->h, j->near, xa, xb, j->col_row);
    }
}
static void seed_rows_chunk(void *ctx, size_t begin, size_t end, int worker)
{
    const seed_job *j = ctx;
    seed_scratch   *s = &j->per_worker[worker];
    for (size_t y = begin; y < end; ++y)
        if (!j->row_need || j->row_need[y])
            seed_rows(j->w, 0, 0, j->w, j->near, (int)y, (int)y + 1, s->row, s->f, s->v, s->z);
}

static int nearest_seed_image(const uint8_t *cov, const uint32_t *chart, int w, int h, const uint8_t *row_need,
                              uint32_t *near)
{
    int      nt = bk_pool_threads(), rc = 0;
    seed_job j;
    j.cov = cov;
    j.chart = chart;
    j.near = near;
    j.w = w;
    j.h = h;
    j.row_need = row_need;
    j.col_row = malloc(sizeof(int) * (size_t)w);
    j.per_worker = calloc((size_t)nt, sizeof(seed_scratch));
    if (!j.col_row || !j.per_worker) rc = -1;
    for (int t = 0; !rc && t < nt; ++t) rc = scratch_alloc(&j.per_worker[t], w);
    if (!rc) {
        bk_parallel_for(((size_t)w + SEED_COLS - 1) / SEED_COLS, 1, seed_cols_chunk, &j);
        bk_parallel_for((size_t)h, SEED_ROWS, seed_rows_chunk, &j);
    }
    for (int t = 0; j.per_worker && t < nt; ++t) scratch_free(&j.per_worker[t]);
    free(j.per_worker);
    free(j.col_row);
    return rc;
}

typedef struct chart_box {
    atomic_int  x0, y0, x1, y1; /* inclusive pixel bounds */
    atomic_uint valid, hidden;
} chart_box;

static void atomic_min_int(atomic_int *a, int v)
{
    int cur = atomic_load_explicit(a, memory_order_relaxed);
    while (v < cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed)) {}
}
static void atomic_max_int(atomic_int *a, int v)
{
    int cur = atomic_load_explicit(a, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed)) {}
}

typedef struct fill_scratch {
    uint32_t    *near;
    size_t       near_cap;
    seed_scratch seed;
    int          seed_cap;
} fill_scratch;

static int fill_scratch_fit(fill_scratch *f, size_t area, int bw)
{
    if (area > f->near_cap) {
        free(f->near);
        f->near = malloc(sizeof(uint32_t) * area);
        f->near_cap = f->near ? area : 0;
        if (!f->near) return -1;
    }
    if (bw > f->seed_cap) {
        scratch_free(&f->seed);
        memset(&f->seed, 0, sizeof f->seed);
        f->seed_cap = 0;
        if (scratch_alloc(&f->seed, bw)) return -1;
        f->seed_cap = bw;
    }
    return 0;
}

/* The fill on the pool. Every step's result is independent of the order of its chunks: the
 * first scan reduces per chunk (max, sum), the boxes are minima, maxima and counts (atomics, once
 * per run of a chart along a row), and each chart reads only its own valid texels and writes
 * only its own hidden ones, its count in a slot of its own. */
#define FILL_GRAIN ((size_t)1 << 16) /* pixels per chunk of the scans */
#define FILL_ROWS  8                 /* rows per chunk of the box scan */
typedef struct fill_job {
    float          *rgb;
    uint8_t        *cov;
    const uint32_t *chart;
    int             w, h;
    uint32_t       *chunk_top;    /* first scan: per chunk, 1 + the largest chart (0: none) */
    uint64_t       *chunk_hidden; /*             per chunk, hidden texels */
    chart_box      *box;
    const uint32_t *todo;   /* charts to fill (hidden and valid texels) */
    uint32_t       *filled; /* per entry of todo */
    atomic_int      oom;
    uint8_t        *row_need;   /* per row: holds a texel of a chart without valid texels */
    fill_scratch   *per_worker; /* grown to the largest box each worker meets, kept for
                                   the call: fresh large blocks would be page-faulted in
                                   again for every chart */
} fill_job;

static void fill_scan(void *ctx, size_t begin, size_t end, int worker)
{
    fill_job *j = ctx;
    uint32_t  top = 0;
    uint64_t  hidden = 0;
    for (size_t i = begin; i < end; ++i) {
        uint32_t c = j->chart[i];
        if (c == BK_NONE) continue;
        if (c >= top) top = c + 1;
        hidden += j->cov[i] == BK_COVER_NONE;
    }
    j->chunk_top[begin / FILL_GRAIN] = top;
    j->chunk_hidden[begin / FILL_GRAIN] = hidden;
}

static void fill_boxes(void *ctx, size_t begin, size_t end, int worker)
{
    fill_job *j = ctx;
    const int w = j->w;
    for (int y = (int)begin; y < (int)end; ++y) {
        const uint32_t *ch = j->chart + (size_t)y * w;
        const uint8_t  *cv = j->cov + (size_t)y * w;
        for (int x = 0; x < w;) {
            uint32_t c = ch[x];
            int      xa = x;
            uint32_t valid = 0, hidden = 0;
            for (; x < w && ch[x] == c; ++x) {
                valid += cv[x] == BK_COVER_TEXEL;
                hidden += cv[x] == BK_COVER_NONE;
            }
            if (c == BK_NONE) continue;
            chart_box *b = &j->box[c];
            atomic_min_int(&b->x0, xa);
            atomic_max_int(&b->x1, x - 1);
            atomic_min_int(&b->y0, y);
            atomic_max_int(&b->y1, y);
            if (valid) atomic_fetch_add_explicit(&b->valid, valid, memory_order_relaxed);
            if (hidden) atomic_fetch_add_explicit(&b->hidden, hidden, memory_order_relaxed);
        }
    }
}

static void fill_need(void *ctx, size_t begin, size_t end, int worker)
{
    fill_job *j = ctx;
    for (size_t y = begin; y < end; ++y) {
        const uint32_t *ch = j->chart + y * (size_t)j->w;
        uint8_t         need = 0;
        for (int x = 0; x < j->w && !need; ++x) {
            uint32_t c = ch[x];
            need = c != BK_NONE && !atomic_load_explicit(&j->box[c].valid, memory_order_relaxed) &&
                   atomic_load_explicit(&j->box[c].hidden, memory_order_relaxed);
        }
        j->row_need[y] = need;
    }
}

static void fill_charts(void *ctx, size_t begin, size_t end, int worker)
{
    fill_job *j = ctx;
    const int w = j->w;
    for (size_t t = begin; t < end; ++t) {
        uint32_t         c = j->todo[t];
        const chart_box *b = &j->box[c];
        int              x0 = atomic_load(&b->x0), y0 = atomic_load(&b->y0);
        int              bw = atomic_load(&b->x1) - x0 + 1, bh = atomic_load(&b->y1) - y0 + 1;
        fill_scratch    *fs = &j->per_worker[worker];
        if (fill_scratch_fit(fs, (size_t)bw * (size_t)bh, bw)) {
            atomic_store(&j->oom, 1);
            return;
        }
        uint32_t    *near = fs->near;
        seed_scratch s = fs->seed;
        seed_cols(j->cov, j->chart, c, w, x0, y0, bw, bh, near, 0, bw, s.row);
        seed_rows(w, x0, y0, bw, near, 0, bh, s.row, s.f, s.v, s.z);
        uint32_t filled = 0;
        for (int y = 0; y < bh; ++y)
            for (int x = 0; x < bw; ++x) {
                size_t i = (size_t)(y0 + y) * w + (size_t)(x0 + x);
                if (j->chart[i] != c || j->cov[i] != BK_COVER_NONE) continue;
                size_t k = near[(size_t)y * bw + x]; /* never BK_NONE: the chart has a valid texel in its box */
                for (int q = 0; q < 3; ++q) j->rgb[3 * i + q] = j->rgb[3 * k + q];
                j->cov[i] = BK_COVER_DILATED;
                filled++;
            }
        j->filled[t] = filled;
    }
}

/* First scan: the number of charts that appear (top) and of hidden texels. */
static int fill_count(fill_job *j, size_t N, uint32_t *top_out, uint64_t *hidden_out, char *err, size_t err_size)
{
    size_t chunks = N ? (N - 1) / FILL_GRAIN + 1 : 0;
    j->chunk_top = malloc(sizeof(uint32_t) * (chunks ? chunks : 1));
    j->chunk_hidden = malloc(sizeof(uint64_t) * (chunks ? chunks : 1));
    if (!j->chunk_top || !j->chunk_hidden) {
        free(j->chunk_top);
        free(j->chunk_hidden);
        return bk_fail(err, err_size, "fill: out of memory");
    }
    bk_parallel_for(N, FILL_GRAIN, fill_scan, j);
    uint32_t top = 0; /* charts 0 .. top - 1 appear */
    uint64_t hidden = 0;
    for (size_t k = 0; k < chunks; ++k) {
        if (j->chunk_top[k] > top) top = j->chunk_top[k];
        hidden += j->chunk_hidden[k];
    }
    free(j->chunk_top);
    free(j->chunk_hidden);
    *top_out = top;
    *hidden_out = hidden;
    return 0;
}

/* Each chart's box and whether it has hidden and valid texels; the charts to fill (todo). */
static uint32_t fill_plan(fill_job *j, uint32_t top, chart_box *box, uint32_t *todo, int *any_empty_out)
{
    int w = j->w, h = j->h;
    for (uint32_t c = 0; c < top; ++c) {
        atomic_init(&box[c].x0, w);
        atomic_init(&box[c].y0, h);
        atomic_init(&box[c].x1, -1);
        atomic_init(&box[c].y1, -1);
        atomic_init(&box[c].valid, 0);
        atomic_init(&box[c].hidden, 0);
    }
    j->box = box;
    bk_parallel_for((size_t)h, FILL_ROWS, fill_boxes, j);
    /* the charts to fill, one chunk each (the pool's shared counter balances their sizes) */
    uint32_t ntodo = 0;
    int      any_empty = 0;
    for (uint32_t c = 0; c < top; ++c) {
        if (!atomic_load(&box[c].hidden)) continue;
        if (!atomic_load(&box[c].valid)) {
            any_empty = 1;
            continue;
        }
        todo[ntodo++] = c;
    }
    *any_empty_out = any_empty;
    return ntodo;
}

/* Charts with valid texels: each hidden texel takes the colour of the nearest valid one. */
static void fill_valid(fill_job *j, uint32_t ntodo)
{
    int nt = bk_pool_threads();
    j->per_worker = calloc((size_t)nt, sizeof(fill_scratch));
    if (j->per_worker) bk_parallel_for(ntodo, 1, fill_charts, j);
    else atomic_store(&j->oom, 1);
    for (int t = 0; j->per_worker && t < nt; ++t) {
        free(j->per_worker[t].near);
        scratch_free(&j->per_worker[t].seed);
    }
    free(j->per_worker);
}

/* charts without light of their own: one colour, the mean of the valid texels nearest to
 * their texels; seeds are the valid texels only (never a texel filled above), so this
 * does not depend on the order of the charts either. On failure frees j->box. */
static int fill_empty(fill_job *j, uint32_t top, size_t N, bk_fill_stats *st, char *err, size_t err_size)
{
    float          *rgb = j->rgb;
    uint8_t        *coverage = j->cov;
    const uint32_t *chart = j->chart;
    int             w = j->w, h = j->h;
    chart_box      *box = j->box;
    bk_fill_stats   s = *st;
    uint32_t       *near = malloc(sizeof(uint32_t) * (N ? N : 1));
    double         *sum = calloc((size_t)top * 3, sizeof(double));
    uint8_t        *need = malloc((size_t)h); /* rows that hold texels of such charts */
    if (need) {
        j->row_need = need;
        bk_parallel_for((size_t)h, FILL_ROWS, fill_need, j);
    }
    if (!near || !sum || !need || nearest_seed_image(coverage, chart, w, h, need, near)) {
        free(box);
        free(near);
        free(sum);
        free(need);
        return bk_fail(err, err_size, "fill: out of memory for a %dx%d image", w, h);
    }
    /* (only the rows that hold such texels: the others hold none of the pixels read or
     * written here, and the sums keep their order) */
    for (int y = 0; y < h; ++y) {
        if (!need[y]) continue;
        for (size_t i = (size_t)y * w, e = i + (size_t)w; i < e; ++i) {
            uint32_t c = chart[i];
            if (c == BK_NONE || atomic_load_explicit(&box[c].valid, memory_order_relaxed) ||
                !atomic_load_explicit(&box[c].hidden, memory_order_relaxed) || near[i] == BK_NONE)
                continue;
            for (int k = 0; k < 3; ++k) sum[3 * (size_t)c + k] += rgb[3 * (size_t)near[i] + k];
        }
    }
    for (int y = 0; y < h; ++y) {
        if (!need[y]) continue;
        for (size_t i = (size_t)y * w, e = i + (size_t)w; i < e; ++i) {
            uint32_t c = chart[i];
            if (c == BK_NONE || atomic_load_explicit(&box[c].valid, memory_order_relaxed) ||
                coverage[i] != BK_COVER_NONE)
                continue;
            if (near[i] == BK_NONE) {
                s.unfilled++;
                continue;
            } /* no valid texel anywhere */
            double n = (double)atomic_load_explicit(&box[c].hidden, memory_order_relaxed);
            for (int k = 0; k < 3; ++k) rgb[3 * i + k] = (float)(sum[3 * (size_t)c + k] / n);
            coverage[i] = BK_COVER_DILATED;
            s.empty_texels++;
        }
    }
    for (uint32_t c = 0; c < top; ++c) s.empty_charts += atomic_load(&box[c].hidden) && !atomic_load(&box[c].valid);
    free(sum);
    free(near);
    free(need);
    *st = s;
    return 0;
}

int bk_fill_hidden(float *rgb, uint8_t *coverage, const uint32_t *chart, int w, int h, bk_fill_stats *st, char *err,
                   size_t err_size)
{
    double        t0 = bk_time_now();
    bk_fill_stats s;
    memset(&s, 0, sizeof s);
    size_t   N = (size_t)w * (size_t)h;
    fill_job j;
    memset(&j, 0, sizeof j);
    j.rgb = rgb;
    j.cov = coverage;
    j.chart = chart;
    j.w = w;
    j.h = h;
    atomic_init(&j.oom, 0);
    uint32_t top = 0;
    uint64_t hidden = 0;
    if (fill_count(&j, N, &top, &hidden, err, err_size)) return -1;
    if (!hidden) {
        s.seconds = bk_time_now() - t0;
        if (st) *st = s;
        return 0;
    }
    chart_box *box = malloc(sizeof(chart_box) * (size_t)top);
    uint32_t  *todo = malloc(sizeof(uint32_t) * ((size_t)top + 1)),
             *filled = malloc(sizeof(uint32_t) * ((size_t)top + 1));
    if (!box || !todo || !filled) {
        free(box);
        free(todo);
        free(filled);
        return bk_fail(err, err_size, "fill: out of memory for %u charts", top);
    }
    int      any_empty;
    uint32_t ntodo = fill_plan(&j, top, box, todo, &any_empty);
    j.todo = todo;
    j.filled = filled;
    fill_valid(&j, ntodo);
    if (atomic_load(&j.oom)) {
        free(box);
        free(todo);
        free(filled);
        return bk_fail(err, err_size, "fill: out of memory for a %dx%d image", w, h);
    }
    for (uint32_t t = 0; t < ntodo; ++t) s.filled += filled[t];
    s.charts = ntodo;
    free(todo);
    free(filled);
    if (any_empty && fill_empty(&j, top, N, &s, err, err_size)) return -1;
    free(box);
    s.seconds = bk_time_now() - t0;
    if (st) *st = s;
    return 0;
}

/* The chart map of one page on the pool: cleared in chunks of pixels, then each texel writes
 * its own pixel (the rasterizer makes one texel per pixel), so no order matters. */
typedef struct map_job {
    uint32_t           *chart;
    const uint8_t      *cov;
    const bk_texel_ref *tx;
    const uint32_t     *tri_chart;
    size_t              first, page_px;
    atomic_int          page_hidden;
} map_job;

static void map_clear(void *ctx, size_t begin, size_t end, int worker)
{
    map_job *j = ctx;
    for (size_t i = begin; i < end; ++i) j->chart[i] = BK_NONE;
}

static void map_texels(void *ctx, size_t begin, size_t end, int worker)
{
    map_job *j = ctx;
    int      hidden = 0;
    for (size_t i = begin; i < end; ++i) {
        size_t px = j->tx[i].pixel;
        if (px < j->first || px - j->first >= j->page_px) continue;
        j->chart[px - j->first] = j->tri_chart ? j->tri_chart[j->tx[i].tri] : j->tx[i].tri;
        hidden |= j->cov[px] == BK_COVER_NONE;
    }
    if (hidden) atomic_store_explicit(&j->page_hidden, 1, memory_order_relaxed);
}

static void any_hidden(void *ctx, size_t begin, size_t end, int worker)
{
    map_job *j = ctx;
    for (size_t i = begin; i < end; ++i)
        if (j->cov[j->tx[i].pixel] == BK_COVER_NONE) {
            atomic_store_explicit(&j->page_hidden, 1, memory_order_relaxed);
            return;
        }
}

/* Both: own (NULL, or where tx came from) is freed once the last page's chart map is made. */
static int fill_texels(float *rgb, uint8_t *coverage, const bk_texel_ref *tx, bk_texel_ref **own, uint32_t n,
                       const uint32_t *tri_chart, int w, int h, int pages, bk_fill_stats *st, char *err,
                       size_t err_size)
{
    double        t0 = bk_time_now();
    bk_fill_stats total;
    memset(&total, 0, sizeof total);
    size_t  page_px = (size_t)w * (size_t)h;
    map_job j;
    j.cov = coverage;
    j.tx = tx;
    j.tri_chart = tri_chart;
    j.chart = NULL;
    atomic_init(&j.page_hidden, 0);
    bk_parallel_for(n, FILL_GRAIN, any_hidden, &j);
    if (!atomic_load(&j.page_hidden)) {
        if (own) {
            free(*own);
            *own = NULL;
        }
        total.seconds = bk_time_now() - t0;
        if (st) *st = total;
        return 0;
    }
    j.chart = malloc(sizeof(uint32_t) * (page_px ? page_px : 1));
    if (!j.chart) return bk_fail(err, err_size, "fill: out of memory for a %dx%d page", w, h);
    for (int p = 0; p < pages; ++p) {
        j.first = page_px * (size_t)p;
        j.page_px = page_px;
        atomic_store(&j.page_hidden, 0);
        bk_parallel_for(page_px, FILL_GRAIN, map_clear, &j);
        bk_parallel_for(n, FILL_GRAIN, map_texels, &j);
        if (own && p == pages - 1) {
            free(*own);
            *own = NULL;
            j.tx = NULL;
        } /* the last map made: not needed */
        if (!atomic_load(&j.page_hidden)) continue;
        bk_fill_stats s;
        if (bk_fill_hidden(rgb + 3 * j.first, coverage + j.first, j.chart, w, h, &s, err, err_size)) {
            free(j.chart);
            return -1;
        }
        total.filled += s.filled;
        total.charts += s.charts;
        total.empty_charts += s.empty_charts;
        total.empty_texels += s.empty_texels;
        total.unfilled += s.unfilled;
    }
    free(j.chart);
    total.seconds = bk_time_now() - t0;
    if (st) *st = total;
    return 0;
}

int bk_fill_hidden_texels(float *rgb, uint8_t *coverage, const bk_texel_ref *tx, uint32_t n, const uint32_t *tri_chart,
                          int w, int h, int pages, bk_fill_stats *st, char *err, size_t err_size)
{
    return fill_texels(rgb, coverage, tx, NULL, n, tri_chart, w, h, pages, st, err, err_size);
}

int bk_fill_hidden_refs(float *rgb, uint8_t *coverage, bk_texel_ref **refs, uint32_t n, const uint32_t *tri_chart,
                        int w, int h, int pages, bk_fill_stats *st, char *err, size_t err_size)
{
    int rc = fill_texels(rgb, coverage, *refs, refs, n, tri_chart, w, h, pages, st, err, err_size);
    free(*refs); /* when it failed before the last map */
    *refs = NULL;
    return rc;
}
