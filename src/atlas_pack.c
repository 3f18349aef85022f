/* atlas_pack.c - packing the atlas's blocks (charts' rectangles, voxel quads) into square bins.
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
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Skyline packing. */

int bk_atlas_packer_init(packer *P, uint32_t n)
{
    memset(P, 0, sizeof *P);
    P->cap = (int)n + 4;
    P->nodes = malloc(sizeof(sky_node) * (size_t)P->cap);
    P->order = malloc(sizeof(uint32_t) * ((size_t)n + 1));
    P->keys = malloc(sizeof(key_idx) * ((size_t)n + 1));
    if (n > 4096) {   /* radix scratch: without it bk_atlas_pack_list falls back to qsort */
        P->keys2 = malloc(sizeof(key_idx) * n);
        P->cnt = malloc(sizeof(size_t) * 65537);
    }
    return P->nodes && P->order && P->keys ? 0 : -1;
}

void bk_atlas_packer_free(packer *P)
{
    free(P->nodes); free(P->order); free(P->keys); free(P->keys2); free(P->cnt); free(P->waste);
    memset(P, 0, sizeof *P);
}


static void waste_add(packer *P, int x, int y, int w, int h)
{
    if (w < P->min_side || h < P->min_side) return;
    if (P->nwaste == P->wcap) {
        int cap = P->wcap ? 2 * P->wcap : 256;
        waste_rect *r = realloc(P->waste, sizeof(waste_rect) * (size_t)cap);
        if (!r) return;  /* losing a waste rectangle only loses space */
        P->waste = r; P->wcap = cap;
    }
    waste_rect *r = &P->waste[P->nwaste++];
    r->x = x; r->y = y; r->w = w; r->h = h;
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
        if (nend <= end) { j++; continue; }
        P->nodes[j].w = nend - end;  /* partly covered: keep the right part */
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
    P->nodes[i].x = x; P->nodes[i].y = y + h; P->nodes[i].w = w;
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

/* Packs items (sizes include the padding) into bin_w x bin_h; returns 1 when all fit. An item
 * goes into the waste rectangle it fits most tightly (best short side fit, guillotine split of
 * the rest), else onto the skyline where its top ends lowest (bottom-left). */
static int pack_items(packer *P, pk_item *it, uint32_t n, int bin_w, int bin_h)
{
    P->count = 1;
    P->nodes[0].x = 0; P->nodes[0].y = 0; P->nodes[0].w = bin_w;
    P->nwaste = 0;
    P->min_side = INT32_MAX;
    for (uint32_t k = 0; k < n; ++k) {
        const pk_item *q = &it[P->order[k]];
        int m = q->w < q->h ? q->w : q->h;
        if (m < P->min_side) P->min_side = m;
    }
    for (uint32_t k = 0; k < n; ++k) {
        pk_item *r = &it[P->order[k]];
        /* waste map first */
        int best_fit = INT32_MAX, best_wi = -1, best_wrot = 0;
        for (int wi = 0; wi < P->nwaste; ++wi) {
            const waste_rect *f = &P->waste[wi];
            for (int rot = 0; rot < 2; ++rot) {
                int w = rot ? r->h : r->w, h = rot ? r->w : r->h;
                if (w > f->w || h > f->h) continue;
                int fit = f->w - w < f->h - h ? f->w - w : f->h - h;
                if (fit < best_fit) { best_fit = fit; best_wi = wi; best_wrot = rot; }
            }
        }
        if (best_wi >= 0) {
            waste_rect f = P->waste[best_wi];
            P->waste[best_wi] = P->waste[--P->nwaste];
            int w = best_wrot ? r->h : r->w, h = best_wrot ? r->w : r->h;
            r->x = f.x; r->y = f.y; r->rot = best_wrot;
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
                    best_top = top; best_i = i; best_rot = rot; best_y = y; best_x = P->nodes[i].x;
                }
            }
        }
        if (best_i < 0) return 0;
        r->x = best_x; r->y = best_y; r->rot = best_rot;
        if (P->count + 2 > P->cap) return 0;  /* cannot happen: each placement adds at most one node */
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

/* Packs the items list[0..n) (all n items when list is NULL) into a size x size atlas. Order:
 * tallest first, where height is the shorter side, then the longer side (sorting by area or by
 * the longer side first packed no better on the corpus). */
int bk_atlas_pack_list(packer *P, pk_item *it, const uint32_t *list, uint32_t n, int pad, int size)
{
    for (uint32_t k = 0; k < n; ++k) {
        uint32_t i = list ? list[k] : k;
        uint64_t lo = (uint64_t)(it[i].w < it[i].h ? it[i].w : it[i].h), hi = (uint64_t)(it[i].w < it[i].h ? it[i].h : it[i].w);
        if (hi > (uint64_t)(size + pad)) return 0;
        P->keys[k].key = ~(lo << 32 | hi);  /* largest first */
        P->keys[k].idx = i;
    }
    if (n > 4096 && P->keys2 && P->cnt) {
        /* many items (voxel quads): LSD radix, 16 bits a pass, passes where every digit agrees
         * skipped (block sides fit 15 bits: two passes). Stable, so ties keep the list's order,
         * as qsort's index tie-break does for the whole list. */
        uint64_t all_or = 0, all_and = ~0ull;
        for (uint32_t k = 0; k < n; ++k) { all_or |= P->keys[k].key; all_and &= P->keys[k].key; }
        key_idx *src = P->keys, *dst = P->keys2;
        for (int shift = 0; shift < 64; shift += 16) {
            if ((((all_or ^ all_and) >> shift) & 0xFFFF) == 0) continue;
            memset(P->cnt, 0, sizeof(size_t) * 65537);
            for (uint32_t k = 0; k < n; ++k) P->cnt[((src[k].key >> shift) & 0xFFFF) + 1]++;
            for (int d = 0; d < 65536; ++d) P->cnt[d + 1] += P->cnt[d];
            for (uint32_t k = 0; k < n; ++k) dst[P->cnt[(src[k].key >> shift) & 0xFFFF]++] = src[k];
            key_idx *x = src; src = dst; dst = x;
        }
        for (uint32_t k = 0; k < n; ++k) P->order[k] = src[k].idx;
    } else {
        qsort(P->keys, n, sizeof(key_idx), bk_key_idx_cmp);
        for (uint32_t k = 0; k < n; ++k) P->order[k] = P->keys[k].idx;
    }
    return pack_items(P, it, n, size + pad, size + pad);
}

/* Packs every chart at scale s into one size x size atlas. */
int bk_atlas_pack_at(packer *P, const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, int size, pk_item *it)
{
    bk_atlas_items_at_scale(C, n_mesh, o, s, pad, it);
    return bk_atlas_pack_list(P, it, NULL, n_mesh + o->rect_count, pad, size);
}

/* Pages of size x size for items of fixed size, groups kept whole and in order (seq lists the
 * items group by group, group g being seq[run[g] .. run[g + 1])). Each page takes as many of the
 * next groups as pack: a first count from their area, grown while it packs, then bisected to
 * within 1/64 of the most that pack (a page may stay a little emptier than it could be, for a
 * bounded number of packings). best[i] gets item i's placement, page[i] its page. Returns the
 * number of pages, 0 when one group alone does not fit a page (*bad = its group). */
uint32_t bk_atlas_pack_pages(packer *P, pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq, const uint32_t *run,
                           uint32_t nrun, int size, int pad, uint32_t *bad)
{
    uint32_t g = 0, pages = 0;
    double cap = (double)(size + pad) * (size + pad);
    while (g < nrun) {
        uint32_t left = nrun - g, m = 0;
        double a = 0;
        while (m < left) {
            double ga = 0;
            for (uint32_t k = run[g + m]; k < run[g + m + 1]; ++k) ga += (double)it[seq[k]].w * it[seq[k]].h;
            if (m > 0 && a + ga > 0.85 * cap) break;
            a += ga;
            m++;
        }
        uint32_t ok = 0, fail = left + 1;
        for (;;) {
            const uint32_t *list = seq + run[g];
            uint32_t n = run[g + m] - run[g];
            if (bk_atlas_pack_list(P, it, list, n, pad, size)) {
                ok = m;
                for (uint32_t k = 0; k < n; ++k) best[list[k]] = it[list[k]];
            } else {
                fail = m;
            }
            if (ok == left || fail - ok <= (ok / 64 > 1 ? ok / 64 : 1)) break;
            if (fail == left + 1) { m = ok + (ok / 4 > 1 ? ok / 4 : 1); if (m > left) m = left; }
            else m = ok + (fail - ok) / 2;
        }
        if (ok == 0) { *bad = g; return 0; }
        for (uint32_t k = run[g]; k < run[g + ok]; ++k) page[seq[k]] = pages;
        pages++;
        g += ok;
    }
    return pages;
}
