/* atlas_shelf.c - packing rectangles only (voxel quads) into pages by shelves, pages in parallel.
 *
 * Pipeline: atlas.c's pack_fixed_pages, for an atlas of rectangles alone (no mesh charts) ->
 * bk_atlas_pack_pages_shelf -> placements and pages, as bk_atlas_pack_pages (atlas_pack.c) gives
 * them for mixed atlases.
 *
 * A page's items are turned to landscape (the longer side along x), sorted by height, then width,
 * both decreasing (two counting passes: sides are small integers), and placed on shelves as wide
 * as the page: an item goes onto the last shelf that still has room for it (the lowest of the
 * shelves tall enough, since shelves open in order of decreasing height; a segment tree over the
 * shelves' free widths finds it), else it opens a shelf of its own height above the others.
 * Shelves of one height fill whole rows; a taller shelf's free end takes the next heights'
 * items. Packed that way a voxel world's quads fill a page to about 99.8 % (padded blocks).
 *
 * Pages: groups (voxel instances) stay whole on one page and in order. In rounds: the groups left
 * are cut into pages by their padded area (each page as full as the fill aimed at), every page
 * of the round is packed at once (on the pool), and the pages that fit, up to the first that
 * does not, are kept. That one takes fewer groups (its measured density says how many, then one
 * step down at a time; a page of few items is tried by the skyline first, page_sky) until it
 * fits; the next round starts after it. Every decision follows
 * from packings only, so the result does not depend on the thread count.
 */
#include "atlas_internal.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

/* The fill of a page's area a round aims at (padded blocks over (size + pad)^2). */
#define SHELF_FILL 0.997

typedef struct shelf_scratch {
    uint64_t *a, *b;        /* n: (shorter << 16 | longer) << 32 | place, sorted */
    uint32_t *cnt;          /* side + 2 */
    int      *sx, *sy, *sh; /* shelves: first free column (they all end at the strip's side), top row, height */
    int      *next;         /* shelves waiting to be as tall as the items: a list per height */
    int      *head;         /* side + 1 */
    int      *tree;         /* segment tree of the shelves' free widths (-1: none or waiting), 2 * leaves */
    int       leaves;
} shelf_scratch;

static void scratch_free(shelf_scratch *S)
{
    free(S->a);
    free(S->b);
    free(S->cnt);
    free(S->sx);
    free(S->sy);
    free(S->sh);
    free(S->next);
    free(S->head);
    free(S->tree);
    memset(S, 0, sizeof *S);
}

/* Room for n items on a strip side wide and at most max_rows tall (items at least min_h tall):
 * the strip's shelves and as many again from splits (more splits than that are not made). */
static int scratch_init(shelf_scratch *S, uint32_t n, int side, int max_rows, int min_h)
{
    memset(S, 0, sizeof *S);
    int shelves = 2 * (max_rows / (min_h > 0 ? min_h : 1) + 2);
    S->leaves = 1;
    while (S->leaves < shelves) S->leaves *= 2;
    size_t L = (size_t)S->leaves;
    S->a = malloc(sizeof(uint64_t) * ((size_t)n + 1));
    S->b = malloc(sizeof(uint64_t) * ((size_t)n + 1));
    S->cnt = malloc(sizeof(uint32_t) * ((size_t)side + 2));
    S->sx = malloc(sizeof(int) * L);
    S->sy = malloc(sizeof(int) * L);
    S->sh = malloc(sizeof(int) * L);
    S->next = malloc(sizeof(int) * L);
    S->head = malloc(sizeof(int) * ((size_t)side + 1));
    S->tree = malloc(sizeof(int) * 2 * L);
    if (S->a && S->b && S->cnt && S->sx && S->sy && S->sh && S->next && S->head && S->tree) return 0;
    scratch_free(S);
    return -1;
}

static inline int item_long(const pk_item *q) { return q->w > q->h ? q->w : q->h; }
static inline int item_short(const pk_item *q) { return q->w > q->h ? q->h : q->w; }

/* One stable counting pass: src[0 .. n) into dst by the 16-bit field at bit `shift`, decreasing
 * (values in [0, side]). */
static void count_pass(uint32_t *cnt, const uint64_t *src, uint64_t *dst, uint32_t n, int side, int shift)
{
    memset(cnt, 0, sizeof(uint32_t) * ((size_t)side + 2));
    for (uint32_t k = 0; k < n; ++k) cnt[side - (int)((src[k] >> shift) & 0xFFFF) + 1]++;
    for (int v = 0; v <= side; ++v) cnt[v + 1] += cnt[v];
    for (uint32_t k = 0; k < n; ++k) dst[cnt[side - (int)((src[k] >> shift) & 0xFFFF)]++] = src[k];
}

/* Shelf s's free width into the tree (-1: it takes nothing now). */
static inline void tree_set(int *tree, int L, int s, int v)
{
    int node = L + s;
    tree[node] = v;
    for (node /= 2; node >= 1; node /= 2) {
        int m = tree[2 * node] > tree[2 * node + 1] ? tree[2 * node] : tree[2 * node + 1];
        if (tree[node] == m) break;
        tree[node] = m;
    }
}

/* Packs items it[list[k]], k in [0, n), on shelves of a strip side wide, placements into res[k];
 * stops once the shelves pass max_rows. An item goes onto the last shelf (in the order they were
 * made) at least as tall as it with room for it, else onto a new shelf above the others. An item
 * on a taller shelf splits the shelf's free part at its foot: the item's row continues it, the
 * rows below become a shelf of their own (waiting, while taller than the items are, for them to
 * be short enough). Returns the rows the shelves take (> max_rows: not all fit), or -1 when an
 * item is longer than the strip. */
static int shelf_pack(shelf_scratch *S, const pk_item *it, const uint32_t *list, uint32_t n, int side, int max_rows,
                      int min_h, pk_item *best, uint32_t *page, uint32_t page_id)
{
    for (uint32_t k = 0; k < n; ++k) {
        const pk_item *q = &it[list[k]];
        if (item_long(q) > side) return -1;
        /* the place, with bit 31 set where the item turns (n < 2^31: two triangles per rectangle) */
        S->a[k] = (uint64_t)((uint32_t)item_short(q) << 16 | (uint32_t)item_long(q)) << 32 | k |
                  (uint64_t)(q->h > q->w) << 31;
    }
    /* by the longer side, then (stable) by the shorter: height, then width, decreasing; ties in
     * the list's order */
    count_pass(S->cnt, S->a, S->b, n, side, 32);
    count_pass(S->cnt, S->b, S->a, n, side, 48);
    const uint64_t *order = S->a;
    const int       L = S->leaves;
    int            *tree = S->tree, shelves = 0, rows = 0, cur_h = side;
    for (int i = 0; i < 2 * L; ++i) tree[i] = -1;
    for (int v = 0; v <= side; ++v) S->head[v] = -1;
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t pos = (uint32_t)order[k] & 0x7FFFFFFFu;
        const int      w = (int)((order[k] >> 32) & 0xFFFF), h = (int)(order[k] >> 48);
        /* shelves as tall as this item and no taller than the last start taking items */
        for (; cur_h > h; --cur_h)
            for (int s = S->head[cur_h - 1]; s >= 0; s = S->next[s]) tree_set(tree, L, s, side - S->sx[s]);
        int s;
        if (shelves > 0 && tree[L + shelves - 1] >= w) s = shelves - 1; /* the newest shelf: the last */
        else if (tree[1] >= w) { /* the last shelf with room: down the tree, right child first */ int node = 1;
            while (node < L) node = tree[2 * node + 1] >= w ? 2 * node + 1 : 2 * node;
            s = node - L;
        } else {
            if (rows + h > max_rows || shelves == L) return rows + h > max_rows ? rows + h : max_rows + 1;
            s = shelves++;
            S->sy[s] = rows;
            S->sh[s] = h;
            S->sx[s] = 0;
            rows += h;
        }
        const int rot = (int)((order[k] >> 31) & 1);
        pk_item  *r = &best[list[pos]];
        r->w = rot ? h : w;
        r->h = rot ? w : h;
        r->x = S->sx[s];
        r->y = S->sy[s];
        r->rot = rot;
        if (page) page[list[pos]] = page_id;
        if (S->sh[s] - h >= min_h && shelves < L) { /* the rows below the item: a shelf of their own */
            int b = shelves++;
            S->sx[b] = S->sx[s];
            S->sy[b] = S->sy[s] + h;
            S->sh[b] = S->sh[s] - h;
            S->sh[s] = h;
            S->next[b] = S->head[S->sh[b]];
            S->head[S->sh[b]] = b;
            if (S->sh[b] >= h) tree_set(tree, L, b, side - S->sx[b]);
        }
        S->sx[s] += w;
        tree_set(tree, L, s, side - S->sx[s]);
    }
    return rows;
}

/* A page of a round: groups g .. g + m - 1 (items list[0 .. n)), packed. */
typedef struct shelf_page {
    uint32_t g, m, n;
    uint32_t id;   /* the page it becomes if the pages before it fit */
    int      rows; /* -2: out of memory */
    double   area; /* the padded area of its items */
} shelf_page;

typedef struct shelf_job {
    const pk_item  *it;
    const uint32_t *seq, *run;
    pk_item        *best;
    uint32_t       *page;
    shelf_page     *pg;
    int             side, min_h;
} shelf_job;

static void page_pack(const shelf_job *J, shelf_page *p)
{
    shelf_scratch  S;
    const uint32_t lo = J->run[p->g];
    /* up to twice the page's rows: a page that does not fit says by how much. The placements go
     * straight to best (a page that does not fit is packed again later, over them) */
    if (scratch_init(&S, p->n, J->side, 2 * J->side, J->min_h)) {
        p->rows = -2;
        return;
    }
    p->rows = shelf_pack(&S, J->it, J->seq + lo, p->n, J->side, 2 * J->side, J->min_h, J->best, J->page, p->id);
    scratch_free(&S);
}

static void pages_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const shelf_job *J = ctx;
    for (size_t k = begin; k < end; ++k) page_pack(J, &J->pg[k]);
}

/* A page the shelves do not fit, of at most SKY_ITEMS items, packed by the skyline (atlas_pack.c),
 * which turns items either way and fills the gaps beside tall ones (a few blocks nearly as large
 * as the page); p->rows becomes side where that fits. Pages of many small items fit on shelves
 * (the voxel world's all do at once) and never come here. */
#define SKY_ITEMS 65536
static int page_sky(const shelf_job *J, shelf_page *p, packer *P, int pad)
{
    if (p->n > SKY_ITEMS || p->rows == -2) return 0;
    if (!P->nodes && bk_atlas_packer_init(P, SKY_ITEMS)) return -1;
    const uint32_t *list = J->seq + J->run[p->g];
    pk_item        *it = (pk_item *)J->it;
    if (!bk_atlas_pack_list(P, it, list, p->n, pad, J->side - pad)) return 0;
    for (uint32_t k = 0; k < p->n; ++k) {
        J->best[list[k]] = it[list[k]];
        J->page[list[k]] = p->id;
    }
    p->rows = J->side;
    return 0;
}

static double group_area(const pk_item *it, const uint32_t *seq, const uint32_t *run, uint32_t g)
{
    double a = 0;
    for (uint32_t i = run[g]; i < run[g + 1]; ++i) a += (double)it[seq[i]].w * it[seq[i]].h;
    return a;
}

/* Groups from g whose area is at most `area` (at least one, at most left). */
static uint32_t groups_in(const double *garea, uint32_t g, uint32_t left, double area, double *got)
{
    uint32_t m = 0;
    double   a = 0;
    while (m < left && (m == 0 || a + garea[g + m] <= area)) a += garea[g + m++];
    *got = a;
    return m;
}

/* The pages (see the file head): rounds of cutting by area, packing at once, keeping, stepping down. */
uint32_t bk_atlas_pack_pages_shelf(pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq, const uint32_t *run,
                                   uint32_t nrun, int size, int pad, uint32_t *bad)
{
    const int    side = size + pad;
    const double cap = (double)side * side;
    uint32_t     pages = 0, g = 0, rc = 0, npg = 0;
    double      *garea = malloc(sizeof(double) * ((size_t)nrun + 1));
    shelf_page  *pg = NULL;
    packer       sky; /* for page_sky */
    memset(&sky, 0, sizeof sky);
    if (!garea) {
        *bad = nrun;
        return 0;
    }
    double total = 0;
    int    min_h = side;
    for (uint32_t k = 0; k < nrun; ++k) {
        garea[k] = group_area(it, seq, run, k);
        total += garea[k];
        for (uint32_t i = run[k]; i < run[k + 1]; ++i) {
            if (item_short(&it[seq[i]]) < min_h) min_h = item_short(&it[seq[i]]);
            if (item_long(&it[seq[i]]) > side) { /* a group that fits no page, the first */
                *bad = k;
                free(garea);
                return 0;
            }
        }
    }
    /* pages a round may cut: all that the area left needs, and some */
    uint32_t pcap = (uint32_t)(total / (SHELF_FILL * 0.9 * cap)) + 2;
    if (pcap > nrun) pcap = nrun;
    pg = calloc(pcap + 1, sizeof(shelf_page));
    if (!pg) {
        *bad = nrun;
        goto done;
    }
    shelf_job J = { it, seq, run, best, page, pg, side, min_h };
    while (g < nrun) {
        /* cut the groups left into pages by area */
        npg = 0;
        for (uint32_t h = g; h < nrun && npg < pcap; ++npg) {
            shelf_page *p = &pg[npg];
            p->g = h;
            p->id = pages + npg;
            p->m = groups_in(garea, h, nrun - h, SHELF_FILL * cap, &p->area);
            p->n = run[h + p->m] - run[h];
            h += p->m;
        }
        bk_parallel_for(npg, 1, pages_fn, &J);
        /* keep the pages that fit, up to the first that does not */
        uint32_t k = 0;
        for (; k < npg; ++k) {
            shelf_page *p = &pg[k];
            if (p->rows == -2) {
                *bad = nrun;
                goto done;
            }
            if ((p->rows < 0 || p->rows > side) && page_sky(&J, p, &sky, pad)) p->rows = -2;
            if (p->rows == -2) {
                *bad = nrun;
                goto done;
            }
            if (p->rows < 0 || p->rows > side) break;
            pages++;
            g = p->g + p->m;
        }
        if (k == npg) continue;
        /* page k takes fewer groups until it fits: first as many as its density says, then
         * one at a time */
        shelf_page *p = &pg[k];
        uint32_t    ok = 0;
        for (int step = 0;; ++step) {
            uint32_t m = p->m - 1;
            if (step == 0 && p->rows > side && p->n > SKY_ITEMS) { /* (small pages: one at a time) */
                double   got, want = p->area * side / p->rows * 0.999;
                uint32_t e = groups_in(garea, p->g, p->m, want, &got);
                if (e < m) m = e;
            }
            if (m == 0) break;
            p->m = m;
            p->n = run[p->g + m] - run[p->g];
            p->area = 0;
            for (uint32_t q = 0; q < m; ++q) p->area += garea[p->g + q];
            page_pack(&J, p);
            if ((p->rows < 0 || p->rows > side) && page_sky(&J, p, &sky, pad)) p->rows = -2;
            if (p->rows == -2) {
                *bad = nrun;
                goto done;
            }
            if (p->rows >= 0 && p->rows <= side) {
                ok = m;
                break;
            }
        }
        if (!ok) {
            *bad = p->g;
            goto done;
        }
        pages++;
        g = p->g + p->m;
    }
    rc = pages;
done:
    bk_atlas_packer_free(&sky);
    free(pg);
    free(garea);
    return rc;
}

/* All n items it[0 .. n) on one page of size x size (placed in place): 1 when they fit, 0 when
 * not, -1 out of memory. */
int bk_atlas_pack_page_shelf(pk_item *it, uint32_t n, int size, int pad)
{
    const int     side = size + pad;
    int           min_h = side;
    shelf_scratch S;
    uint32_t     *list = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    pk_item      *res = malloc(sizeof(pk_item) * ((size_t)n + 1));
    for (uint32_t k = 0; k < n; ++k)
        if (item_short(&it[k]) < min_h) min_h = item_short(&it[k]);
    if (!list || !res || scratch_init(&S, n, side, side, min_h)) {
        free(list);
        free(res);
        return -1;
    }
    for (uint32_t k = 0; k < n; ++k) list[k] = k;
    int rows = shelf_pack(&S, it, list, n, side, side, min_h, res, NULL, 0);
    if (rows >= 0 && rows <= side) memcpy(it, res, sizeof(pk_item) * n);
    scratch_free(&S);
    free(list);
    free(res);
    return rows >= 0 && rows <= side;
}
