/* bvh_wide.c - collapses the binary BVH layout into the 8-wide one (src/accel/bvh_wide.h), and the tie
 * table that lets the wide traversal keep the binary traversal's choice between equal-t hits.
 *
 * Pipeline: bk_bvh_build (src/accel/bvh.c) -> bk_accel_view (binary) -> bk_wbvh_build -> bk_wbvh_trace
 * (src/accel/trace_wide.c). Works from the flat binary layout alone, so any binary BVH the backends can
 * trace (the builder's, or a hand-made one in a test) collapses the same way.
 */
#include "bvh_wide.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A binary subtree of at most this many records becomes one wide leaf (two blocks). The blocks
 * test 4 triangles for about the price of one, and every node skipped is a dependent memory
 * access skipped. One thread, 1M diffuse rays, Mrays/s closest / any (the same run):
 *   dragon_vrip_res2:  0: 1.21 / 1.63   4: 1.53 / 1.92   8: 1.70 / 2.12   16: 1.57 / 2.06
 *   sponza:            0: 3.81 / 6.46   4: 3.82 / 6.54   8: 3.81 / 6.32   16: 3.64 / 6.49 */
#ifndef BK_WBVH_MERGE
#define BK_WBVH_MERGE 8
#endif

typedef bk_bvh_child wchild;

typedef struct collapse {
    const bk_accel_view *bin;
    bk_wbvh_node        *nodes;
    uint32_t             count, cap;
    uint32_t             depth;
    bk_wbvh_tri4        *tri4;
    uint32_t             tri4_count, tri4_cap;
    uint32_t            *size;    /* per binary inner node: records under it */
    uint32_t            *scratch; /* the records of the leaf being emitted */
    uint32_t             scratch_count;
} collapse;

static float child_area(const wchild *c)
{
    float dx = c->hi[0] - c->lo[0], dy = c->hi[1] - c->lo[1], dz = c->hi[2] - c->lo[2];
    return dx * dy + dy * dz + dz * dx;
}

/* The two children of binary node n, boxes and refs, as the node stores them. */
static void binary_children(const bk_accel_view *bin, int32_t n, wchild *c0, wchild *c1)
{
    const bk_bvh_node *b = bin->bvh_nodes + n;
    c0->lo[0] = b->xy0.x;
    c0->hi[0] = b->xy0.y;
    c0->lo[1] = b->xy0.z;
    c0->hi[1] = b->xy0.w;
    c0->lo[2] = b->z01.x;
    c0->hi[2] = b->z01.y;
    c1->lo[0] = b->xy1.x;
    c1->hi[0] = b->xy1.y;
    c1->lo[1] = b->xy1.z;
    c1->hi[1] = b->xy1.w;
    c1->lo[2] = b->z01.z;
    c1->hi[2] = b->z01.w;
    c0->ref = (int32_t)bk_float_bits(b->refs.x);
    c1->ref = (int32_t)bk_float_bits(b->refs.y);
}

uint32_t bk_bvh_subtree_sizes(const bk_accel_view *bin, int32_t ref, uint32_t level, uint32_t *size)
{
    if (level > BK_MAX_DEPTH + 1) return 0xFFFFFFFFu;
    if (ref < 0) {
        uint32_t n = 0;
        for (uint32_t r = (uint32_t)~ref; r < bin->tri_count; ++r) {
            ++n;
            if (bk_float_bits(bin->tris[3 * (size_t)r].w) & BK_TRI_LAST) break;
        }
        return n;
    }
    if ((uint32_t)ref >= bin->bvh_node_count) return 0xFFFFFFFFu;
    const bk_bvh_node *b = bin->bvh_nodes + ref;
    uint32_t           a = bk_bvh_subtree_sizes(bin, (int32_t)bk_float_bits(b->refs.x), level + 1, size);
    uint32_t           c = bk_bvh_subtree_sizes(bin, (int32_t)bk_float_bits(b->refs.y), level + 1, size);
    uint32_t           n = a > 0xFFFFFFFFu - c ? 0xFFFFFFFFu : a + c;
    size[ref] = n;
    return n;
}

int bk_bvh_child_is_leaf(const bk_bvh_child *c, const uint32_t *size, uint32_t merge)
{
    return c->ref < 0 || size[c->ref] <= merge;
}

int bk_bvh_wide_children(const bk_accel_view *bin, const uint32_t *size, uint32_t merge, int32_t n, int width,
                         bk_bvh_child *c)
{
    int k = 2;
    binary_children(bin, n, &c[0], &c[1]);
    while (k < width) { /* pull up the inner child of largest area (first on equal areas) */
        int   pick = -1;
        float best = -1.0f;
        for (int i = 0; i < k; ++i)
            if (!bk_bvh_child_is_leaf(&c[i], size, merge) && child_area(&c[i]) > best) {
                best = child_area(&c[i]);
                pick = i;
            }
        if (pick < 0) break;
        int32_t r = c[pick].ref;
        if ((uint32_t)r >= bin->bvh_node_count) return -1;
        for (int i = k; i > pick + 1; --i) c[i] = c[i - 1];
        binary_children(bin, r, &c[pick], &c[pick + 1]);
        ++k;
    }
    return k;
}

int bk_bvh_gather_records(const bk_accel_view *bin, int32_t ref, uint32_t level, uint32_t *out, uint32_t *count)
{
    if (level > BK_MAX_DEPTH + 1) return -1;
    if (ref >= 0) {
        if ((uint32_t)ref >= bin->bvh_node_count) return -1;
        const bk_bvh_node *b = bin->bvh_nodes + ref;
        if (bk_bvh_gather_records(bin, (int32_t)bk_float_bits(b->refs.x), level + 1, out, count)) return -1;
        return bk_bvh_gather_records(bin, (int32_t)bk_float_bits(b->refs.y), level + 1, out, count);
    }
    for (uint32_t r = (uint32_t)~ref;; ++r) {
        if (r >= bin->tri_count || *count >= bin->tri_count) return -1;
        out[(*count)++] = r;
        if (bk_float_bits(bin->tris[3 * (size_t)r].w) & BK_TRI_LAST) return 0;
    }
}

/* The blocks of a wide leaf: binary leaf ref, or a binary subtree of at most BK_WBVH_MERGE records
 * (ref >= 0) made one leaf. Returns the wide leaf ref (~first block), or 0 on a malformed tree. */
static int32_t emit_blocks(collapse *C, int32_t ref)
{
    C->scratch_count = 0;
    if (bk_bvh_gather_records(C->bin, ref, 0, C->scratch, &C->scratch_count)) return 0;
    uint32_t first = C->tri4_count, n = C->scratch_count;
    for (uint32_t i = 0; i < n; i += 4) {
        if (C->tri4_count >= C->tri4_cap) return 0;
        bk_wbvh_tri4 *b = &C->tri4[C->tri4_count++];
        memset(b, 0, sizeof *b);
        int k = 0;
        for (; k < 4 && i + (uint32_t)k < n; ++k) {
            uint32_t     r = C->scratch[i + (uint32_t)k];
            const bk_f4 *q = C->bin->tris + 3 * (size_t)r;
            for (int v = 0; v < 3; ++v) {
                b->v[3 * v + 0][k] = q[v].x;
                b->v[3 * v + 1][k] = q[v].y;
                b->v[3 * v + 2][k] = q[v].z;
            }
            b->rec[k] = r;
            b->id[k] = bk_float_bits(q[0].w) & BK_TRI_ID;
        }
        for (int j = k; j < 4; ++j) { /* unused lanes: copies of the last triangle */
            for (int c = 0; c < 9; ++c) b->v[c][j] = b->v[c][k - 1];
            b->rec[j] = b->rec[k - 1] | BK_WBVH_LANE_UNUSED;
            b->id[j] = b->id[k - 1];
        }
        if (i + 4 >= n) b->rec[0] |= BK_WBVH_BLOCK_LAST;
    }
    return ~(int32_t)first;
}

/* A child the collapse treats as a leaf: a binary leaf, or a subtree of at most BK_WBVH_MERGE
 * records (visiting its nodes costs more than testing its triangles 4 at a time). */
static int is_leaf(const collapse *C, const wchild *c) { return bk_bvh_child_is_leaf(c, C->size, BK_WBVH_MERGE); }

/* Fills wide node w from binary inner node n and, depth first, the wide nodes below it. The
 * children's wide nodes are allocated together, next to each other. Returns 0, or -1 when the
 * binary layout is malformed (a ref out of range, a tree deeper than BK_MAX_DEPTH). */
static int collapse_node(collapse *C, uint32_t w, int32_t n, uint32_t level)
{
    if (level > BK_MAX_DEPTH) return -1;
    if (level + 1 > C->depth) C->depth = level + 1;
    wchild c[BK_WBVH_WIDTH];
    int    k = bk_bvh_wide_children(C->bin, C->size, BK_WBVH_MERGE, n, BK_WBVH_WIDTH, c);
    if (k < 0) return -1;
    uint32_t first = C->count;
    for (int i = 0; i < k; ++i)
        if (!is_leaf(C, &c[i])) {
            if (C->count >= C->cap) return -1;
            C->count++;
        }
    bk_wbvh_node *o = &C->nodes[w];
    memset(o, 0, sizeof *o);
    uint32_t next = first;
    for (int i = 0; i < BK_WBVH_WIDTH; ++i) {
        /* unused slots: an empty box (the traversal masks them out by count anyway) */
        o->lo_x[i] = o->lo_y[i] = o->lo_z[i] = BK_INF;
        o->hi_x[i] = o->hi_y[i] = o->hi_z[i] = -BK_INF;
        o->child[i] = BK_REF_NONE;
        if (i >= k) continue;
        o->lo_x[i] = c[i].lo[0];
        o->hi_x[i] = c[i].hi[0];
        o->lo_y[i] = c[i].lo[1];
        o->hi_y[i] = c[i].hi[1];
        o->lo_z[i] = c[i].lo[2];
        o->hi_z[i] = c[i].hi[2];
        if (!is_leaf(C, &c[i])) o->child[i] = (int32_t)next++;
        else if (!(o->child[i] = emit_blocks(C, c[i].ref))) return -1;
    }
    o->count = (uint32_t)k;
    next = first;
    for (int i = 0; i < k; ++i)
        if (!is_leaf(C, &c[i]) && collapse_node(C, next++, c[i].ref, level + 1)) return -1;
    return 0;
}

int bk_wbvh_build(const bk_accel_view *bin, bk_wbvh *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (bin->type != BK_ACCEL_BVH || bin->prim == BK_PRIM_VOX || !bin->bvh_node_count || !bin->tri_count)
        return bk_fail(err, err_size, "wide BVH: needs a binary BVH of triangles");
    if (bin->tri_count > BK_WBVH_REC) return bk_fail(err, err_size, "wide BVH: more than 2^30 triangles");
    collapse C;
    memset(&C, 0, sizeof C);
    C.bin = bin;
    /* a binary tree of m inner nodes collapses into at most m wide nodes */
    C.cap = bin->bvh_node_count;
    C.nodes = aligned_alloc(64, sizeof(bk_wbvh_node) * C.cap);
    /* a leaf of n records takes ceil(n / 4) blocks: at most one more per leaf than n / 4, and a
     * binary tree has one leaf more than inner nodes */
    C.tri4_cap = bin->tri_count / 4 + bin->bvh_node_count + 1;
    C.tri4 = aligned_alloc(64, (sizeof(bk_wbvh_tri4) * C.tri4_cap + 63) / 64 * 64);
    C.size = malloc(sizeof(uint32_t) * bin->bvh_node_count);
    C.scratch = malloc(sizeof(uint32_t) * bin->tri_count);
    if (!C.nodes || !C.tri4 || !C.size || !C.scratch) {
        free(C.nodes);
        free(C.tri4);
        free(C.size);
        free(C.scratch);
        return bk_fail(err, err_size, "wide BVH: out of memory");
    }
    C.count = 1;
    int bad = bk_bvh_subtree_sizes(bin, 0, 0, C.size) > bin->tri_count || collapse_node(&C, 0, 0, 0);
    free(C.size);
    free(C.scratch);
    if (bad) {
        free(C.nodes);
        free(C.tri4);
        return bk_fail(err, err_size, "wide BVH: the binary layout is not a depth-first tree of %u nodes",
                       bin->bvh_node_count);
    }
    out->nodes = C.nodes;
    out->node_count = C.count;
    out->depth = C.depth;
    out->tri4 = C.tri4;
    out->tri4_count = C.tri4_count;
    out->bin = *bin;
    return 0;
}

void bk_wbvh_free(bk_wbvh *w)
{
    free(w->nodes);
    free(w->tri4);
    memset(w, 0, sizeof *w);
}
