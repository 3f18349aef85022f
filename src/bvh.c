/* bvh.c - binned SAH BVH builder on the host, flattened into the 64-byte two-box node layout.
 *
 * Pipeline: bk_scene -> triangle boxes -> binned SAH top-down build (Wald 2007, "On fast
 * Construction of SAH-based Bounding Volume Hierarchies": 32 bins per axis over the centroid
 * bounds) -> build nodes -> depth-first flattening into bk_bvh_node (kernels/bk_accel.h), with
 * the triangles reordered by leaf so a leaf is one contiguous run.
 */
#include "accel.h"
#include "geom.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NBINS 32

typedef struct box { float lo[3], hi[3]; } box;

typedef struct bnode {
    box      b;
    int32_t  left;        /* child build nodes (right = left + 1); -1 for a leaf */
    uint32_t first, count;
    uint32_t depth;
} bnode;

static box box_empty(void)
{
    box b;
    for (int k = 0; k < 3; ++k) { b.lo[k] = FLT_MAX; b.hi[k] = -FLT_MAX; }
    return b;
}
static void box_grow(box *b, const box *o)
{
    for (int k = 0; k < 3; ++k) {
        if (o->lo[k] < b->lo[k]) b->lo[k] = o->lo[k];
        if (o->hi[k] > b->hi[k]) b->hi[k] = o->hi[k];
    }
}
static float box_area(const box *b)
{
    float dx = b->hi[0] - b->lo[0], dy = b->hi[1] - b->lo[1], dz = b->hi[2] - b->lo[2];
    if (dx < 0 || dy < 0 || dz < 0) return 0.0f;
    return 2.0f * (dx * dy + dy * dz + dz * dx);
}

typedef struct builder {
    const bk_build_opts *o;
    box      *tb;     /* triangle boxes */
    float    *cen;    /* 3 per triangle */
    uint32_t *idx;
    bnode    *nodes;
    uint32_t  node_count;
    const bk_geom *g;       /* the primitives (geom.h) */
} builder;

/* Bin of a centroid coordinate, with scale = NBINS / extent (times 1 - 1e-6). Computed in double:
 * below an extent of about 1e-37 the float scale overflows to inf, and (c - lo) * inf is inf or
 * NaN, whose conversion to int is undefined. Clamped before the conversion. */
static int bin_of(float c, float lo, double scale)
{
    double f = ((double)c - (double)lo) * scale;
    if (!(f > 0.0)) return 0;                     /* also NaN */
    return f < (double)(NBINS - 1) ? (int)f : NBINS - 1;
}

/* Splits node n if the SAH (or the leaf size limit) says so; returns 1 when it made children. */
static int split_node(builder *B, uint32_t ni, int force)
{
    bnode *n = &B->nodes[ni];
    uint32_t first = n->first, count = n->count;
    if (count <= 1 || (int)n->depth >= B->o->max_depth) return 0;

    float clo[3] = { FLT_MAX, FLT_MAX, FLT_MAX }, chi[3] = { -FLT_MAX, -FLT_MAX, -FLT_MAX };
    /* A leaf with a voxel segment holds only it: a segment's walk costs a dozen triangle tests,
     * and a warp's lanes wait for the longest (H100, world54k: 1.54 -> 1.71 Grays/s closest hit
     * with 8^3 segments) */
    uint32_t max_leaf = (uint32_t)B->o->max_leaf;
    for (uint32_t i = first; i < first + count; ++i) {
        const float *c = B->cen + 3 * B->idx[i];
        for (int k = 0; k < 3; ++k) { if (c[k] < clo[k]) clo[k] = c[k]; if (c[k] > chi[k]) chi[k] = c[k]; }
        if (B->idx[i] >= B->g->s->tri_count) max_leaf = 1;
    }

    int best_axis = -1, best_bin = 0;
    float best_cost = FLT_MAX;
    double scale[3];
    box bin_box[3][NBINS];
    uint32_t bin_n[3][NBINS];
    for (int k = 0; k < 3; ++k) {
        double ext = (double)chi[k] - (double)clo[k];    /* finite even for -FLT_MAX .. FLT_MAX */
        scale[k] = ext > 0.0 ? (double)NBINS * (1.0 - 1e-6) / ext : 0.0;
        for (int b = 0; b < NBINS; ++b) { bin_box[k][b] = box_empty(); bin_n[k][b] = 0; }
    }
    for (uint32_t i = first; i < first + count; ++i) {
        uint32_t t = B->idx[i];
        const float *c = B->cen + 3 * t;
        for (int k = 0; k < 3; ++k) {
            if (scale[k] == 0.0) continue;
            int b = bin_of(c[k], clo[k], scale[k]);
            bin_n[k][b]++;
            box_grow(&bin_box[k][b], &B->tb[t]);
        }
    }
    float parent_area = box_area(&n->b);
    if (parent_area <= 0) parent_area = 1.0f;
    for (int k = 0; k < 3; ++k) {
        if (scale[k] == 0.0) continue;
        float right_cost[NBINS];
        box acc = box_empty();
        uint32_t cnt = 0;
        for (int b = NBINS - 1; b > 0; --b) {
            box_grow(&acc, &bin_box[k][b]); cnt += bin_n[k][b];
            right_cost[b] = box_area(&acc) * (float)cnt;
        }
        acc = box_empty(); cnt = 0;
        for (int b = 0; b < NBINS - 1; ++b) {
            box_grow(&acc, &bin_box[k][b]); cnt += bin_n[k][b];
            if (cnt == 0 || cnt == count) continue;
            float cost = B->o->cost_node + (box_area(&acc) * (float)cnt + right_cost[b + 1]) / parent_area;
            if (cost < best_cost) { best_cost = cost; best_axis = k; best_bin = b; }
        }
    }

    uint32_t mid;
    if (best_axis < 0) {
        /* All centroids coincide: only an object-median split can bound the leaf size. */
        if (count <= max_leaf && !force) return 0;
        mid = first + count / 2;
    } else {
        if (best_cost >= (float)count && count <= max_leaf && !force) return 0;
        uint32_t i = first, j = first + count;
        while (i < j) {
            const float *c = B->cen + 3 * B->idx[i];
            int b = bin_of(c[best_axis], clo[best_axis], scale[best_axis]);
            if (b <= best_bin) { ++i; } else { uint32_t t = B->idx[i]; B->idx[i] = B->idx[--j]; B->idx[j] = t; }
        }
        mid = i;
        if (mid == first || mid == first + count) mid = first + count / 2;
    }

    uint32_t l = B->node_count;
    B->node_count += 2;
    n = &B->nodes[ni];     /* nodes never reallocate (2N - 1 reserved), but keep it obvious */
    n->left = (int32_t)l;
    for (int c = 0; c < 2; ++c) {
        bnode *ch = &B->nodes[l + c];
        ch->first = c == 0 ? first : mid;
        ch->count = c == 0 ? mid - first : first + count - mid;
        ch->left = -1;
        ch->depth = n->depth + 1;
        ch->b = box_empty();
        for (uint32_t i = ch->first; i < ch->first + ch->count; ++i) box_grow(&ch->b, &B->tb[B->idx[i]]);
    }
    return 1;
}

static void set_child(bk_bvh_node *ln, int c, const box *b, int32_t ref)
{
    bk_f4 *xy = c == 0 ? &ln->xy0 : &ln->xy1;
    xy->x = b->lo[0]; xy->y = b->hi[0]; xy->z = b->lo[1]; xy->w = b->hi[1];
    if (c == 0) { ln->z01.x = b->lo[2]; ln->z01.y = b->hi[2]; ln->refs.x = bk_bits_float((uint32_t)ref); }
    else        { ln->z01.z = b->lo[2]; ln->z01.w = b->hi[2]; ln->refs.y = bk_bits_float((uint32_t)ref); }
}

/* Flattening state: triangles are emitted leaf by leaf. */
typedef struct flat {
    bk_f4   *tris;
    uint32_t tri_next, leaves, max_leaf;
    double   sah, root_area;
} flat;

/* Emits leaf build node c's triangles; returns its child reference. */
static int32_t emit_leaf(const builder *B, flat *F, const bk_scene *s, uint32_t c)
{
    const bnode *lf = &B->nodes[c];
    int32_t ref = ~(int32_t)F->tri_next;
    for (uint32_t i = 0; i < lf->count; ++i) {
        uint32_t t = B->idx[lf->first + i];
        bk_f4 *q = &F->tris[3 * (size_t)F->tri_next];
        bk_geom_record(B->g, t, q);
        q[0].w = bk_bits_float(bk_float_bits(q[0].w) | (i + 1 == lf->count ? BK_TRI_LAST : 0u));
        F->tri_next++;
    }
    F->leaves++;
    if (lf->count > F->max_leaf) F->max_leaf = lf->count;
    F->sah += box_area(&lf->b) / F->root_area * lf->count;
    return ref;
}

int bk_bvh_build(const bk_scene *s, const bk_build_opts *opts, bk_accel *out, char *err, size_t err_size)
{
    double t0 = bk_time_now();
    memset(out, 0, sizeof *out);
    bk_geom g;
    if (bk_geom_init(&g, s, err, err_size)) return -1;
    uint32_t n = g.count;              /* primitives: triangles, then voxel segments */
    bk_build_opts o = *opts;
    if (o.max_depth > BK_MAX_DEPTH || o.max_depth < 1) o.max_depth = BK_MAX_DEPTH;
    if (o.max_leaf < 1) o.max_leaf = 1;

    builder B;
    memset(&B, 0, sizeof B);
    B.o = &o;
    B.tb = malloc(sizeof(box) * n);
    B.cen = malloc(sizeof(float) * 3 * n);
    B.idx = malloc(sizeof(uint32_t) * n);
    B.nodes = malloc(sizeof(bnode) * (2 * (size_t)n));
    B.g = &g;
    uint32_t *stack = malloc(sizeof(uint32_t) * (2 * (size_t)n));
    if (!B.tb || !B.cen || !B.idx || !B.nodes || !stack) {
        free(B.tb); free(B.cen); free(B.idx); free(B.nodes); free(stack); bk_geom_free(&g);
        return bk_fail(err, err_size, "out of memory building the BVH (%u triangles)", n);
    }
    box root = box_empty();
    for (uint32_t t = 0; t < n; ++t) {
        box b;
        bk_geom_box(&g, t, b.lo, b.hi);
        B.tb[t] = b;
        for (int k = 0; k < 3; ++k) B.cen[3 * t + k] = 0.5f * (b.lo[k] + b.hi[k]);
        B.idx[t] = t;
        box_grow(&root, &b);
    }
    B.nodes[0].b = root; B.nodes[0].left = -1; B.nodes[0].first = 0; B.nodes[0].count = n; B.nodes[0].depth = 0;
    B.node_count = 1;

    /* Top-down build with an explicit stack; the root always splits when it can, so the layout's
     * root is an inner node. */
    uint32_t sp = 0;
    stack[sp++] = 0;
    while (sp) {
        uint32_t ni = stack[--sp];
        if (split_node(&B, ni, ni == 0)) {
            stack[sp++] = (uint32_t)B.nodes[ni].left + 1;
            stack[sp++] = (uint32_t)B.nodes[ni].left;
        }
    }

    /* Flatten: inner build nodes get layout indices in depth-first order; leaves' triangles are
     * emitted in the order their parents are visited. */
    uint32_t inner = 0;
    for (uint32_t i = 0; i < B.node_count; ++i) inner += B.nodes[i].left >= 0;
    uint32_t layout_count = inner ? inner : 1;
    int32_t *lindex = malloc(sizeof(int32_t) * B.node_count);
    /* 64-byte aligned: one node is exactly one cache line */
    bk_bvh_node *ln = aligned_alloc(64, sizeof(bk_bvh_node) * layout_count);
    if (ln) memset(ln, 0, sizeof(bk_bvh_node) * layout_count);
    bk_f4 *tris = aligned_alloc(64, (sizeof(bk_f4) * 3 * (size_t)n + 63) / 64 * 64);
    if (!lindex || !ln || !tris) {
        free(lindex); free(ln); free(tris); free(B.tb); free(B.cen); free(B.idx); free(B.nodes); free(stack); bk_geom_free(&g);
        return bk_fail(err, err_size, "out of memory flattening the BVH");
    }
    uint32_t next = 0, depth = 0;
    flat F;
    memset(&F, 0, sizeof F);
    F.tris = tris;
    F.root_area = box_area(&root) > 0 ? box_area(&root) : 1.0;
    if (B.nodes[0].left < 0) {
        /* A single triangle: both children of the layout root are that one leaf. */
        int32_t r = emit_leaf(&B, &F, s, 0);
        set_child(&ln[0], 0, &root, r);
        set_child(&ln[0], 1, &root, r);
        next = 1; depth = 1;
    } else {
        sp = 0;
        stack[sp++] = 0;
        while (sp) {
            uint32_t bi = stack[--sp];
            lindex[bi] = (int32_t)next++;
            const bnode *bn = &B.nodes[bi];
            if (bn->depth + 1 > depth) depth = bn->depth + 1;
            F.sah += box_area(&bn->b) / F.root_area * o.cost_node;
            uint32_t l = (uint32_t)bn->left;
            if (B.nodes[l + 1].left >= 0) stack[sp++] = l + 1;
            if (B.nodes[l].left >= 0) stack[sp++] = l;
        }
        for (uint32_t bi = 0; bi < B.node_count; ++bi) {
            const bnode *bn = &B.nodes[bi];
            if (bn->left < 0) continue;
            bk_bvh_node *dst = &ln[lindex[bi]];
            for (int c = 0; c < 2; ++c) {
                uint32_t ci = (uint32_t)bn->left + (uint32_t)c;
                int32_t r = B.nodes[ci].left >= 0 ? lindex[ci] : emit_leaf(&B, &F, s, ci);
                set_child(dst, c, &B.nodes[ci].b, r);
            }
        }
    }
    BK_CHECK(F.tri_next == n);
    free(lindex); free(B.tb); free(B.cen); free(B.idx); free(B.nodes); free(stack); bk_geom_free(&g);

    out->type = BK_ACCEL_BVH;
    if (bk_vox_pack_build(s, &out->vox, err, err_size)) { free(ln); free(tris); return -1; }
    out->bvh_nodes = ln;
    out->bvh_node_count = next;
    out->tris = tris;
    out->tri_count = n;
    out->lo = bk_v3(root.lo[0], root.lo[1], root.lo[2]);
    out->hi = bk_v3(root.hi[0], root.hi[1], root.hi[2]);
    out->info.nodes = next;
    out->info.leaves = F.leaves;
    out->info.depth = depth;
    out->info.refs = n;
    out->info.max_leaf = F.max_leaf;
    out->info.sah_cost = F.sah;
    out->info.bytes = sizeof(bk_bvh_node) * (size_t)next + sizeof(bk_f4) * 3 * (size_t)n + bk_vox_pack_bytes(&out->vox);
    out->info.seconds = bk_time_now() - t0;
    return 0;
}
