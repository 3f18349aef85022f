/* bvh_cw.c - collapses the binary BVH layout into the compressed 8-wide one (src/accel/bvh_cw.h).
 *
 * Works from the flat binary layout alone (as src/accel/bvh_wide.c), so any binary BVH the backends can
 * trace collapses the same way. Single-threaded: a few tens of ms for a million triangles.
 */
#include "bvh_cw.h"
#include "bvh_wide.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A binary subtree of at most this many records becomes one leaf (Ylitie et al. use 3). H100,
 * bench trace, 4M diffuse rays, global stack, closest hit, Mrays/s, sponza / dragon_vrip_res2:
 * 1: 868 / 498, 3: (not printed) / 498, 6: 804 / 454 (an earlier version of the node test, same
 * run). */
#ifndef BK_CW_MERGE
#define BK_CW_MERGE 3
#endif

typedef bk_bvh_child cchild;

typedef struct cw_build {
    const bk_accel_view *bin;
    bk_cw_node          *nodes;
    uint32_t             count, cap;
    bk_f4               *recs;
    uint32_t             rec_count;
    uint32_t             depth;
    uint32_t            *size;    /* per binary inner node: records under it */
    uint32_t            *scratch; /* the records of the leaf being copied */
} cw_build;

static int is_leaf(const cw_build *B, const cchild *c) { return bk_bvh_child_is_leaf(c, B->size, BK_CW_MERGE); }

/* Copies the records under binary ref (a leaf's run, or a small subtree's leaves depth first) to
 * the end of B->recs, the last one marked BK_TRI_LAST. */
static int copy_records(cw_build *B, int32_t ref)
{
    uint32_t n = 0;
    if (bk_bvh_gather_records(B->bin, ref, 0, B->scratch, &n) || B->rec_count + n > B->bin->tri_count) return -1;
    for (uint32_t i = 0; i < n; ++i) {
        bk_f4 *d = B->recs + 3 * (size_t)B->rec_count++;
        memcpy(d, B->bin->tris + 3 * (size_t)B->scratch[i], 3 * sizeof(bk_f4));
        d[0].w = bk_bits_float((bk_float_bits(d[0].w) & ~BK_TRI_LAST) | (i + 1 == n ? BK_TRI_LAST : 0u));
    }
    return 0;
}

/* Child i goes to the slot of the octant whose rays meet it first: the pairs (child, octant) in
 * increasing order of the child centroid's projection on the octant's diagonal, greedily. */
static void assign_slots(const cchild *c, int k, int slot_of[8])
{
    float cx = 0, cy = 0, cz = 0;
    for (int i = 0; i < k; ++i) {
        cx += c[i].lo[0] + c[i].hi[0];
        cy += c[i].lo[1] + c[i].hi[1];
        cz += c[i].lo[2] + c[i].hi[2];
    }
    cx /= (float)k;
    cy /= (float)k;
    cz /= (float)k;
    float cost[8][8];
    for (int i = 0; i < k; ++i)
        for (int s = 0; s < 8; ++s) {
            float dx = (s & 1) ? -1.0f : 1.0f, dy = (s & 2) ? -1.0f : 1.0f, dz = (s & 4) ? -1.0f : 1.0f;
            cost[i][s] = dx * (c[i].lo[0] + c[i].hi[0] - cx) + dy * (c[i].lo[1] + c[i].hi[1] - cy) +
                         dz * (c[i].lo[2] + c[i].hi[2] - cz);
        }
    int used = 0;
    for (int i = 0; i < k; ++i) slot_of[i] = -1;
    for (int round = 0; round < k; ++round) {
        int bi = -1, bs = -1;
        for (int i = 0; i < k; ++i) {
            if (slot_of[i] >= 0) continue;
            for (int s = 0; s < 8; ++s)
                if (!(used >> s & 1) && (bi < 0 || cost[i][s] < cost[bi][bs])) {
                    bi = i;
                    bs = s;
                }
        }
        slot_of[bi] = bs;
        used |= 1 << bs;
    }
}

/* Grid exponent of one axis: the smallest step 2^e with lo + 255 * 2^e >= hi. */
static int grid_exponent(float lo, float hi)
{
    double ext = (double)hi - (double)lo;
    int    e = -126;
    if (ext > 0) {
        int x;
        (void)frexp(ext / 255.0, &x); /* ext / 255 < 2^x */
        e = x < -126 ? -126 : x;
        while (e > -126 && (double)lo + 255.0 * ldexp(1.0, e - 1) >= (double)hi) --e;
        while ((double)lo + 255.0 * ldexp(1.0, e) < (double)hi) ++e;
    }
    return e;
}

static int collapse_node(cw_build *B, uint32_t w, int32_t n, uint32_t level)
{
    if (level >= BK_CW_MAX_DEPTH) return -1;
    if (level + 1 > B->depth) B->depth = level + 1;
    cchild c[8];
    int    k = bk_bvh_wide_children(B->bin, B->size, BK_CW_MERGE, n, 8, c);
    if (k < 0) return -1;
    int slot_of[8], child_at[8];
    assign_slots(c, k, slot_of);
    for (int s = 0; s < 8; ++s) child_at[s] = -1;
    for (int i = 0; i < k; ++i) child_at[slot_of[i]] = i;

    bk_cw_node *o = &B->nodes[w];
    memset(o, 0, sizeof *o);
    float lo[3] = { BK_INF, BK_INF, BK_INF }, hi[3] = { -BK_INF, -BK_INF, -BK_INF };
    for (int i = 0; i < k; ++i)
        for (int a = 0; a < 3; ++a) {
            if (c[i].lo[a] < lo[a]) lo[a] = c[i].lo[a];
            if (c[i].hi[a] > hi[a]) hi[a] = c[i].hi[a];
        }
    double step[3];
    for (int a = 0; a < 3; ++a) {
        if (!(lo[a] <= hi[a]) || !isfinite(lo[a]) || !isfinite(hi[a])) return -1;
        int e = grid_exponent(lo[a], hi[a]);
        if (e > 127) return -1;
        o->origin[a] = lo[a];
        o->exp[a] = (uint8_t)(e + 127);
        step[a] = ldexp(1.0, e);
    }
    o->child_base = B->count;
    o->rec_base = B->rec_count;
    for (int s = 0; s < 8; ++s) {
        int i = child_at[s];
        if (i < 0) {
            o->meta[s] = BK_CW_EMPTY;
            for (int a = 0; a < 3; ++a) {
                o->qlo[a][s] = 0xFF;
                o->qhi[a][s] = 0;
            }
            continue;
        }
        for (int a = 0; a < 3; ++a) { /* outwards: the grid box contains the child's */
            double ql = floor(((double)c[i].lo[a] - (double)lo[a]) / step[a]);
            double qh = ceil(((double)c[i].hi[a] - (double)lo[a]) / step[a]);
            if (ql < 0) ql = 0;
            while (ql > 0 && (double)lo[a] + ql * step[a] > (double)c[i].lo[a]) ql -= 1;
            while (qh < 255 && (double)lo[a] + qh * step[a] < (double)c[i].hi[a]) qh += 1;
            if (qh > 255 || (double)lo[a] + qh * step[a] < (double)c[i].hi[a]) return -1;
            o->qlo[a][s] = (uint8_t)ql;
            o->qhi[a][s] = (uint8_t)qh;
        }
        if (!is_leaf(B, &c[i])) {
            o->imask |= (uint8_t)(1u << s);
            o->meta[s] = 0;
            if (B->count >= B->cap) return -1;
            B->count++;
        } else {
            uint32_t off = B->rec_count - o->rec_base;
            if (off >= BK_CW_EMPTY) return -1;
            o->meta[s] = (uint8_t)off;
            if (copy_records(B, c[i].ref)) return -1;
        }
    }
    uint32_t next = o->child_base;
    for (int s = 0; s < 8; ++s) {
        int i = child_at[s];
        if (i >= 0 && !is_leaf(B, &c[i]) && collapse_node(B, next++, c[i].ref, level + 1)) return -1;
    }
    return 0;
}

int bk_cwbvh_build(const bk_accel_view *bin, bk_cwbvh *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (bin->type != BK_ACCEL_BVH || bin->prim == BK_PRIM_VOX || !bin->bvh_node_count || !bin->tri_count)
        return bk_fail(err, err_size, "compressed BVH: needs a binary BVH of triangles");
    if (bin->tri_count > BK_TRI_ID) return bk_fail(err, err_size, "compressed BVH: too many triangles");
    cw_build B;
    memset(&B, 0, sizeof B);
    B.bin = bin;
    B.cap = bin->bvh_node_count;
    B.nodes = malloc(sizeof(bk_cw_node) * B.cap);
    B.recs = malloc(3 * sizeof(bk_f4) * (size_t)bin->tri_count);
    B.size = malloc(sizeof(uint32_t) * bin->bvh_node_count);
    B.scratch = malloc(sizeof(uint32_t) * bin->tri_count);
    if (!B.nodes || !B.recs || !B.size || !B.scratch) {
        free(B.nodes);
        free(B.recs);
        free(B.size);
        free(B.scratch);
        memset(out, 0, sizeof *out);
        return bk_fail(err, err_size, "compressed BVH: out of memory");
    }
    B.count = 1;
    int bad = bk_bvh_subtree_sizes(bin, 0, 0, B.size) > bin->tri_count || collapse_node(&B, 0, 0, 0) ||
              B.rec_count != bin->tri_count;
    free(B.size);
    free(B.scratch);
    if (bad) {
        free(B.nodes);
        free(B.recs);
        memset(out, 0, sizeof *out);
        return bk_fail(err, err_size,
                       "compressed BVH: the binary tree is too deep or its leaves too long for the layout");
    }
    out->nodes = B.nodes;
    out->node_count = B.count;
    out->recs = B.recs;
    out->rec_count = B.rec_count;
    out->depth = B.depth;
    return 0;
}

void bk_cwbvh_free(bk_cwbvh *cw)
{
    free(cw->nodes);
    free(cw->recs);
    memset(cw, 0, sizeof *cw);
}

bk_accel_view bk_cwbvh_view(const bk_cwbvh *cw, const bk_accel_view *bin)
{
    bk_accel_view v = *bin;
    v.type = BK_ACCEL_CWBVH;
    v.depth = cw->depth;
    v.tris = cw->recs;
    v.tri_count = cw->rec_count;
    v.cw_nodes = cw->nodes;
    v.cw_node_count = cw->node_count;
    return v;
}
