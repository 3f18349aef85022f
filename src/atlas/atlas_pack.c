/* atlas_pack.c - packing the atlas's blocks (charts' rectangles, voxel quads) into square bins:
 * the skyline packer and the pages. Packing by the charts' shapes is atlas_pack_shapes.c's.
 *
 * Packing: each chart becomes a block of floor(L + 0.02) + 1 texels per side (L its extent in
 * texels) with the chart centred in it (at least 0.01 texel from the block's edges), so
 * conservative rasterization never leaves the block; blocks carry `padding` empty texels to
 * their right and bottom. Blocks are sorted by their shorter side and placed with the skyline
 * bottom-left heuristic plus a waste map (Jylanki 2010, "A Thousand Ways to Pack the Bin"): the
 * gaps a block leaves under the skyline are kept as free rectangles and filled first. With a fixed
 * atlas size the scale is bisected (in log space, to 0.1 %) to the largest one that packs; with
 * texels_per_unit the side is the smallest multiple of 4 that packs.
 * (The scale search around it lives in atlas.c.) With --pages auto, bk_atlas_pack_pages fills
 * pages group by group.
 */
#include "atlas_internal.h"
#include "pool.h"
#include "sort.h"
#include "util.h"

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------------------------------------------
 * Skyline packing. */

int bk_atlas_packer_init(packer *P, uint32_t n)
{
    memset(P, 0, sizeof *P);
    P->cap = (int)n + 4;
    P->nodes = malloc(sizeof(sky_node) * (size_t)P->cap);
    P->order = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    P->keys = malloc(sizeof(key_idx) * ((size_t)n + 1));
    P->keys2 = malloc(sizeof(key_idx) * ((size_t)n + 1)); /* sort scratch: without it the sort */
    P->cnt = malloc(sizeof(size_t) * BK_SORT_COUNTS);     /* allocates its own */
    return P->nodes && P->order && P->keys ? 0 : -1;
}

void bk_atlas_packer_free(packer *P)
{
    free(P->nodes);
    free(P->order);
    free(P->keys);
    free(P->keys2);
    free(P->cnt);
    free(P->waste);
    memset(P, 0, sizeof *P);
}


static void waste_add(packer *P, int x, int y, int w, int h)
{
    if (w < P->min_side || h < P->min_side) return;
    if (P->nwaste == P->wcap) {
        int         cap = P->wcap ? 2 * P->wcap : 256;
        waste_rect *r = realloc(P->waste, sizeof(waste_rect) * (size_t)cap);
        if (!r) return; /* losing a waste rectangle only loses space */
        P->waste = r;
        P->wcap = cap;
    }
    waste_rect *r = &P->waste[P->nwaste++];
    r->x = x;
    r->y = y;
    r->w = w;
    r->h = h;
}

/* Lowest top over the nodes a rectangle of width w starting at node i would rest on; -1 if it
 * runs past the bin. */
static int sky_fit(const packer *P, int i, int w, int bin_w)
{
    int x = P->nodes[i].x;
    if (x + w > bin_w) return -1;
    int y = 0, left = w;
    for (int j = i; left > 0; ++j) {
        if (P->nodes[j].y > y) y = P->nodes[j].y;
        left -= P->nodes[j].w;
    }
    return y;
}

static void sky_place(packer *P, int i, int x, int y, int w, int h)
{
    /* new node [x, x + w) at height y + h replaces what it covers; the gaps between the old
     * nodes and the rectangle's top become waste rectangles */
    int end = x + w, j = i;
    while (j < P->count && P->nodes[j].x < end) {
        int nend = P->nodes[j].x + P->nodes[j].w;
        if (P->nodes[j].y < y) {
            int wx0 = P->nodes[j].x, wx1 = nend < end ? nend : end;
            waste_add(P, wx0, P->nodes[j].y, wx1 - wx0, y - P->nodes[j].y);
        }
        if (nend <= end) {
            j++;
            continue;
        }
        P->nodes[j].w = nend - end; /* partly covered: keep the right part */
        P->nodes[j].x = end;
        break;
    }
    /* nodes i .. j-1 are replaced by one */
    int removed = j - i;
    if (removed == 0) {
        memmove(P->nodes + i + 1, P->nodes + i, sizeof(sky_node) * (size_t)(P->count - i));
        P->count++;
    } else if (removed > 1) {
        memmove(P->nodes + i + 1, P->nodes + j, sizeof(sky_node) * (size_t)(P->count - j));
        P->count -= removed - 1;
    }
    P->nodes[i].x = x;
    P->nodes[i].y = y + h;
    P->nodes[i].w = w;
    /* merge equal heights with the neighbours */
    if (i + 1 < P->count && P->nodes[i + 1].y == P->nodes[i].y) {
        P->nodes[i].w += P->nodes[i + 1].w;
        memmove(P->nodes + i + 1, P->nodes + i + 2, sizeof(sky_node) * (size_t)(P->count - i - 2));
        P->count--;
    }
    if (i > 0 && P->nodes[i - 1].y == P->nodes[i].y) {
        P->nodes[i - 1].w += P->nodes[i].w;
        memmove(P->nodes + i, P->nodes + i + 1, sizeof(sky_node) * (size_t)(P->count - i - 1));
        P->count--;
    }
}

/* Waste rectangle wi against an item of w x h, unturned then turned: the better fit into *best
 * (the first of equal ones kept). */
static void waste_try(const packer *P, int wi, int w, int h, int *best_fit, int *best_wi, int *best_rot)
{
    const waste_rect *f = &P->waste[wi];
    for (int rot = 0; rot < 2; ++rot) {
        int rw = rot ? h : w, rh = rot ? w : h;
        if (rw > f->w || rh > f->h) continue;
        int fit = f->w - rw < f->h - rh ? f->w - rw : f->h - rh;
        if (fit < *best_fit) {
            *best_fit = fit;
            *best_wi = wi;
            *best_rot = rot;
        }
    }
}

#if defined(__SSE2__)
/* Four rectangles' short side fits for an item of w x h (INT32_MAX where it does not fit), SSE2. */
static inline __m128i waste_fit4(__m128i fw, __m128i fh, __m128i w, __m128i h)
{
    __m128i dw = _mm_sub_epi32(fw, w), dh = _mm_sub_epi32(fh, h);
    __m128i bad = _mm_srai_epi32(_mm_or_si128(dw, dh), 31), lt = _mm_cmplt_epi32(dw, dh);
    __m128i fit = _mm_or_si128(_mm_and_si128(lt, dw), _mm_andnot_si128(lt, dh));
    return _mm_or_si128(_mm_andnot_si128(bad, fit), _mm_and_si128(bad, _mm_set1_epi32(INT32_MAX)));
}
#endif

int              bk_atlas_waste_check;
_Atomic uint64_t bk_atlas_waste_checked, bk_atlas_waste_wrong; /* (bk_atlas_pack_pages runs two packings at once) */

/* The waste rectangle an item of w x h fits most tightly (best short side fit; of equal fits the
 * first in the waste map's order, unturned before turned), or -1 with *rot untouched. The scan
 * is most of a voxel world's packing (about 100 rectangles for each of 3.7 M quads): with SSE2
 * it takes four rectangles at a time and looks at them one by one only where one beats the best
 * fit so far, which only falls; the same rectangle as the one-by-one scan (bk_atlas_waste_check). */
static int waste_best(const packer *P, int w, int h, int *rot)
{
    int best_fit = INT32_MAX, best_wi = -1, best_rot = 0, wi = 0;
#if defined(__SSE2__)
    const __m128i vw = _mm_set1_epi32(w), vh = _mm_set1_epi32(h);
    for (; wi + 4 <= P->nwaste; wi += 4) {
        const __m128i *q = (const __m128i *)(P->waste + wi);                                   /* x y w h, four times */
        __m128i        a = _mm_unpackhi_epi32(_mm_loadu_si128(q), _mm_loadu_si128(q + 1));     /* w0 w1 h0 h1 */
        __m128i        b = _mm_unpackhi_epi32(_mm_loadu_si128(q + 2), _mm_loadu_si128(q + 3)); /* w2 w3 h2 h3 */
        __m128i        fw = _mm_unpacklo_epi64(a, b), fh = _mm_unpackhi_epi64(a, b);
        __m128i        f0 = waste_fit4(fw, fh, vw, vh), f1 = waste_fit4(fw, fh, vh, vw);
        __m128i        lt = _mm_cmplt_epi32(f1, f0), m = _mm_or_si128(_mm_and_si128(lt, f1), _mm_andnot_si128(lt, f0));
        if (!_mm_movemask_epi8(_mm_cmplt_epi32(m, _mm_set1_epi32(best_fit)))) continue;
        for (int k = wi; k < wi + 4; ++k) waste_try(P, k, w, h, &best_fit, &best_wi, &best_rot);
    }
#endif
    for (; wi < P->nwaste; ++wi) waste_try(P, wi, w, h, &best_fit, &best_wi, &best_rot);
    if (bk_atlas_waste_check && P->nwaste >= 8) {
        int f1 = INT32_MAX, w1 = -1, r1 = 0;
        for (int k = 0; k < P->nwaste; ++k) waste_try(P, k, w, h, &f1, &w1, &r1);
        bk_atlas_waste_checked++;
        bk_atlas_waste_wrong += w1 != best_wi || (w1 >= 0 && r1 != best_rot);
    }
    if (best_wi >= 0) *rot = best_rot;
    return best_wi;
}

/* Packs items it[list[pos]] (it[pos] when list is NULL) in the order P->order gives their places
 * pos (sizes include the padding) into bin_w x bin_h, each placed in res[pos], or in place when
 * res is NULL; returns 1 when all fit, and *top gets the highest item top. An item goes into the
 * waste rectangle it fits most tightly (best short side fit, guillotine split of the rest), else
 * onto the skyline where its top ends lowest (bottom-left). Where the items fit in a shorter bin,
 * they are placed there as here (a top beyond the shorter bin is taken only where no position
 * ends lower). */
static int pack_items(packer *P, pk_item *it, const uint32_t *list, pk_item *res, uint32_t n, int bin_w, int bin_h,
                      int *top)
{
    *top = 0;
    P->count = 1;
    P->nodes[0].x = 0;
    P->nodes[0].y = 0;
    P->nodes[0].w = bin_w;
    P->nwaste = 0;
    P->min_side = INT32_MAX;
    for (uint32_t k = 0; k < n; ++k) {
        const pk_item *q = &it[list ? list[k] : k];
        int            m = q->w < q->h ? q->w : q->h;
        if (m < P->min_side) P->min_side = m;
    }
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t pos = P->order[k];
        pk_item       *r = &it[list ? list[pos] : pos];
        if (res) {
            res[pos] = *r;
            r = &res[pos];
        }
        /* (items lie in their own order, not the packing's: a voxel world's 3.7 M quads span 74 MB,
         * a cache miss each that the scans cannot hide; its packings 1.28 -> 1.18 s here) */
        if (k + 16 < n) __builtin_prefetch(&it[list ? list[P->order[k + 16]] : P->order[k + 16]]);
        /* waste map first */
        int best_wrot = 0, best_wi = waste_best(P, r->w, r->h, &best_wrot);
        if (best_wi >= 0) {
            waste_rect f = P->waste[best_wi];
            P->waste[best_wi] = P->waste[--P->nwaste];
            int w = best_wrot ? r->h : r->w, h = best_wrot ? r->w : r->h;
            r->x = f.x;
            r->y = f.y;
            r->rot = best_wrot;
            /* split the rest along the longer leftover side */
            if (f.w - w > f.h - h) {
                waste_add(P, f.x + w, f.y, f.w - w, f.h);
                waste_add(P, f.x, f.y + h, w, f.h - h);
            } else {
                waste_add(P, f.x + w, f.y, f.w - w, h);
                waste_add(P, f.x, f.y + h, f.w, f.h - h);
            }
            continue;
        }
        int best_top = INT32_MAX, best_i = -1, best_rot = 0, best_y = 0, best_x = INT32_MAX;
        for (int rot = 0; rot < 2; ++rot) {
            if (rot && r->w == r->h) break;
            int w = rot ? r->h : r->w, h = rot ? r->w : r->h;
            for (int i = 0; i < P->count; ++i) {
                int y = sky_fit(P, i, w, bin_w);
                if (y < 0) break;
                int top = y + h;
                if (top > bin_h) continue;
                if (top < best_top || (top == best_top && P->nodes[i].x < best_x)) {
                    best_top = top;
                    best_i = i;
                    best_rot = rot;
                    best_y = y;
                    best_x = P->nodes[i].x;
                }
            }
        }
        if (best_i < 0) return 0;
        if (best_top > *top) *top = best_top;
        r->x = best_x;
        r->y = best_y;
        r->rot = best_rot;
        if (P->count + 2 > P->cap) return 0; /* cannot happen: each placement adds at most one node */
        sky_place(P, best_i, best_x, best_y, best_rot ? r->h : r->w, best_rot ? r->w : r->h);
    }
    return 1;
}

/* A chart extent in texels as a block side, without the padding: a chart longer than the largest
 * atlas becomes BK_ATLAS_MAX_SIZE + 2, too long for any atlas, before the conversion to int can
 * overflow (--texels-per-unit 1e30). */
static int block_side(double texels)
{
    double f = floor(texels + 0.02);
    return f <= BK_ATLAS_MAX_SIZE ? (int)f + 1 : BK_ATLAS_MAX_SIZE + 2;
}

/* Block sizes of every item at scale s (texels per world unit) plus padding: the n_mesh mesh
 * items (charts, then the degenerate triangles' texel) scaled, then the given rectangles as they
 * are (exactly their texels: they are rasterized by texel centre). */
void bk_atlas_items_at_scale(const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, pk_item *it)
{
    for (uint32_t i = 0; i < n_mesh; ++i) {
        double w = i < C->count ? C->charts[i].w * s : 0.0, h = i < C->count ? C->charts[i].h * s : 0.0;
        it[i].w = block_side(w) + pad;
        it[i].h = block_side(h) + pad;
    }
    for (uint32_t i = 0; i < o->rect_count; ++i) {
        it[n_mesh + i].w = (int)o->rects[i].w + pad;
        it[n_mesh + i].h = (int)o->rects[i].h + pad;
    }
}

/* Packs the items list[0..n) (all n items when list is NULL) into a bin size + pad wide and
 * bin_h tall; *top gets the rows they take. Order: tallest first, where height is the shorter
 * side, then the longer side (sorting by area or by the longer side first packed no better on the
 * corpus). */
static int pack_list_in(packer *P, pk_item *it, const uint32_t *list, uint32_t n, int pad, int size, int bin_h,
                        int *top, pk_item *res)
{
    *top = 0;
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t i = list ? list[k] : k;
        uint64_t lo = (uint64_t)(it[i].w < it[i].h ? it[i].w : it[i].h),
                 hi = (uint64_t)(it[i].w < it[i].h ? it[i].h : it[i].w);
        if (hi > (uint64_t)(size + pad)) return 0;
        P->keys[k].key = ~(lo << 32 | hi); /* largest first */
        P->keys[k].idx = k;                /* the place in the list: ties keep the list's order */
    }
    /* stable (sort.h), so ties keep the list's order, as qsort's tie-break by place does when
     * the sort's scratch cannot be had */
    bk_sort_spec sp = bk_sort_spec_of(sizeof(key_idx), offsetof(key_idx, key), 8);
    sp.tmp = P->keys2;
    sp.counts = P->cnt;
    if (bk_sort_radix(P->keys, n, &sp)) qsort(P->keys, n, sizeof(key_idx), bk_key_idx_cmp);
    for (uint32_t k = 0; k < n; ++k) P->order[k] = P->keys[k].idx;
    return pack_items(P, it, list, res, n, size + pad, bin_h, top);
}

/* Packs the items list[0..n) (all n items when list is NULL) into a size x size atlas. */
int bk_atlas_pack_list(packer *P, pk_item *it, const uint32_t *list, uint32_t n, int pad, int size)
{
    int top;
    return pack_list_in(P, it, list, n, pad, size, size + pad, &top, NULL);
}

/* Packs every chart at scale s into one size x size atlas. */
int bk_atlas_pack_at(packer *P, const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, int size,
                     pk_item *it)
{
    bk_atlas_items_at_scale(C, n_mesh, o, s, pad, it);
    return bk_atlas_pack_list(P, it, NULL, n_mesh + o->rect_count, pad, size);
}

/* The padded area of items it[list[0 .. n)]. */
static double items_area(const pk_item *it, const uint32_t *list, uint32_t n)
{
    double a = 0;
    for (uint32_t k = 0; k < n; ++k) a += (double)it[list[k]].w * it[list[k]].h;
    return a;
}

/* Groups g .. g + m - 1 whose padded area is at most `area`: the largest such m (at least 1,
 * at most left). */
static uint32_t groups_in_area(const pk_item *it, const uint32_t *seq, const uint32_t *run, uint32_t g, uint32_t left,
                               double area)
{
    uint32_t m = 0;
    double   a = 0;
    while (m < left) {
        double ga = items_area(it, seq + run[g + m], run[g + m + 1] - run[g + m]);
        if (m > 0 && a + ga > area) break;
        a += ga;
        m++;
    }
    return m;
}

/* A trial of bk_atlas_pack_pages: the first m groups of the page (n items) packed by its own
 * packer into its own placements, so that two trials run side by side. */
typedef struct page_trial {
    packer  *P;
    pk_item *res; /* n placements, by place in the page's list */
    uint32_t m, n;
    int      packed, top;
} page_trial;

typedef struct trials_job {
    page_trial     *t;
    pk_item        *it;
    const uint32_t *list;
    int             pad, size, bin_h;
} trials_job;

static void trials_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const trials_job *J = ctx;
    for (size_t k = begin; k < end; ++k) {
        page_trial *t = &J->t[k];
        t->packed = pack_list_in(t->P, J->it, J->list, t->n, J->pad, J->size, J->bin_h, &t->top, t->res);
    }
}

/* Placements for n items, and with own_packer a packer for them too (grown, never shrunk); -1
 * out of memory. */
static int trial_reserve(page_trial *t, uint32_t n, uint32_t *cap, int own_packer)
{
    if (n <= *cap) return 0;
    if (own_packer) bk_atlas_packer_free(t->P);
    free(t->res);
    t->res = malloc(sizeof(pk_item) * ((size_t)n + 1));
    if (!t->res || (own_packer && bk_atlas_packer_init(t->P, n))) {
        *cap = 0;
        return -1;
    }
    *cap = n;
    return 0;
}

/* Pages of size x size for items of fixed size, groups kept whole and in order (seq lists the
 * items group by group, group g being seq[run[g] .. run[g + 1])). Each page takes as many of the
 * next groups as pack, to within 1/64 of the most that pack (a page may stay a little emptier
 * than it could be, for a bounded number of packings). A packing goes into a strip as wide as the
 * page and twice as tall, so that it also says how many rows those groups take, and the search
 * goes in rounds of two packings side by side (on the pool):
 *   - first, counts whose areas fill 85 % and 97 % of the page, or, after a page, the count that
 *     fills this one as full as that one (less 0.2 %) and the count 1/64 above it;
 *   - then the count that fills the page at the density the nearest packing measured (aiming
 *     1 % under while none is known to fit, 0.2 % after) and the count 1/64 above it, so that the
 *     bracket closes when the first fits and the second does not; one packing at the known fit
 *     plus 1/64 when the bracket is within two such steps; thirds of the bracket where the guess
 *     falls outside it.
 * The rounds and their counts depend on packings only, not on the thread count. On the 54k-object
 * voxel world (3.7 M quads, 4 pages of 4096^2, 1 texel per voxel), the search that only knew fit
 * or not (grow by a quarter, bisect) took 20 packings one after another (3.95 s on this project's
 * 2-core machines), packings that said their rows one at a time 10 (1.16-1.19 s), these rounds 5
 * (0.91 s), with pages 99.1-99.6 % full (99.3-99.6 % with the first search). best[i] gets item
 * i's placement, page[i] its page. Returns the number of pages, 0 when one group alone does not
 * fit a page (*bad = its group), or when memory runs out (*bad = nrun). */
uint32_t bk_atlas_pack_pages(packer *P, pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq,
                             const uint32_t *run, uint32_t nrun, int size, int pad, uint32_t *bad)
{
    uint32_t     g = 0, pages = 0, cap[2] = { 0, 0 };
    const int    side = size + pad;
    const double area_cap = (double)side * side;
    packer       P2;
    memset(&P2, 0, sizeof P2);
    page_trial t[2];
    memset(t, 0, sizeof t);
    t[0].P = P; /* (P holds every item already: its arrays are big enough) */
    t[1].P = &P2;
    double   fill = 0; /* the last page's share of its area taken; 0 before the first */
    uint32_t rc = 0;
    while (g < nrun) {
        const uint32_t left = nrun - g, *list = seq + run[g];
        uint32_t       ok = 0, fail = left + 1, c[2], nc = 2;
        if (fill > 0) {
            c[0] = groups_in_area(it, seq, run, g, left, 0.998 * fill * area_cap);
            c[1] = c[0] + (c[0] / 64 > 1 ? c[0] / 64 : 1);
        } else {
            c[0] = groups_in_area(it, seq, run, g, left, 0.85 * area_cap);
            c[1] = groups_in_area(it, seq, run, g, left, 0.97 * area_cap);
        }
        for (;;) {
            if (nc == 2 && (c[1] > left || c[1] <= c[0])) nc = 1;
            trials_job J = { t, it, list, pad, size, 2 * side };
            for (uint32_t k = 0; k < nc; ++k) {
                t[k].m = c[k];
                t[k].n = run[g + c[k]] - run[g];
                if (trial_reserve(&t[k], t[k].n, &cap[k], k == 1)) {
                    *bad = nrun;
                    goto done;
                }
            }
            bk_parallel_for(nc, 1, trials_fn, &J);
            /* the results in order of count: the most that fits, the fewest above it that do not */
            int near = -1; /* the packing whose density guides the next guess */
            for (uint32_t k = 0; k < nc; ++k) {
                const page_trial *q = &t[k];
                if (q->packed && q->top <= side) {
                    if (q->m > ok) {
                        ok = q->m;
                        for (uint32_t i = 0; i < q->n; ++i) best[list[i]] = q->res[i];
                        if (fail <= ok) fail = left + 1;
                    }
                    if (q->top > 0) near = (int)k;
                } else if (q->m > ok && q->m < fail) {
                    fail = q->m;
                    if (near < 0 && q->packed && q->top > 0) near = (int)k;
                }
            }
            const uint32_t tol = ok / 64 > 1 ? ok / 64 : 1;
            if (ok == left || fail - ok <= tol) break;
            uint32_t e = 0;
            if (near >= 0) {
                const page_trial *q = &t[near];
                e = groups_in_area(it, seq, run, g, left,
                                   items_area(it, list, q->n) * side / q->top * (ok ? 0.998 : 0.99));
            }
            nc = 2;
            if (fail <= left && fail - ok <= 2 * tol) {
                c[0] = ok + tol;
                nc = 1;
            } else if (e > ok && e < fail) {
                c[0] = e;
                c[1] = e + (e / 64 > 1 ? e / 64 : 1);
                if (c[1] >= fail) nc = 1;
            } else if (fail == left + 1) {
                c[0] = ok + (ok / 4 > 1 ? ok / 4 : 1);
                if (c[0] > left) c[0] = left;
                nc = 1;
            } else {
                c[0] = ok + (fail - ok) / 3;
                c[1] = ok + 2 * (fail - ok) / 3;
                if (c[0] <= ok) c[0] = ok + 1;
            }
        }
        if (ok == 0) {
            *bad = g;
            goto done;
        }
        const uint32_t nok = run[g + ok] - run[g];
        for (uint32_t k = 0; k < nok; ++k) page[list[k]] = pages;
        fill = items_area(it, list, nok) / area_cap;
        pages++;
        g += ok;
    }
    rc = pages;
done:
    bk_atlas_packer_free(&P2);
    free(t[0].res);
    free(t[1].res);
    return rc;
}
