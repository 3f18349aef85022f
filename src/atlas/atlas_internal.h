/* atlas_internal.h - the atlas module's parts and what they share (private to src/atlas*.c and
 * the unit tests that test each part alone).
 *
 *   atlas_topology.c  triangle geometry, welding, adjacency
 *   atlas_rect.c      convex hulls and minimal-area rectangles
 *   atlas_grow.c      planar charts: region growing, projection, self-overlaps evicted
 *   atlas_smooth.c    smooth charts unfolded by least-squares conformal maps; smooth charts joined
 *                     with a neighbour across their seam
 *   atlas_split.c     charts that fill their rectangle poorly split into compact parts
 *   atlas_merge.c     neighbouring charts merged by unfolding
 *   atlas_refine.c    ragged borders tidied, small charts absorbed into their neighbours
 *   atlas_overlap.c   which 2D triangles overlap (a chart's self-overlap, two charts' overlap,
 *                     --uv file), in time about linear in the triangles
 *   atlas_pack.c      blocks (charts, rectangles) into a bin: skyline + waste map, pages
 *   atlas_pack_shapes.c  charts packed by their rasterized shapes
 *   atlas_voxels.c    the voxel surface's quads as rectangles
 *   atlas.c           bk_atlas_build: options, the stages, the scale search, UVs, --uv file,
 *                     statistics
 *
 * Arrows point down: atlas.c uses the others; the chart passes use atlas_topology.c,
 * atlas_rect.c, atlas_grow.c's shared helpers and atlas_overlap.c.
 */
#ifndef BK_ATLAS_INTERNAL_H
#define BK_ATLAS_INTERNAL_H

#include "atlas.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define BK_ATLAS_PI 3.14159265358979323846

/* ---- small shared helpers ------------------------------------------------------------------ */

static inline double bk_dmin(double a, double b) { return a < b ? a : b; }
static inline double bk_dmax(double a, double b) { return a > b ? a : b; }

/* Bounding box (xmin, ymin, xmax, ymax) of a 2D triangle given as 6 doubles. */
static inline void bk_box_of_tri(const double *L, double *b)
{
    b[0] = bk_dmin(L[0], bk_dmin(L[2], L[4]));
    b[1] = bk_dmin(L[1], bk_dmin(L[3], L[5]));
    b[2] = bk_dmax(L[0], bk_dmax(L[2], L[4]));
    b[3] = bk_dmax(L[1], bk_dmax(L[3], L[5]));
}

static inline double bk_tri2_area(const double *L)
{
    return 0.5 * fabs((L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]));
}

/* Sorting by a 64-bit key without a global context (C11 qsort has none): (key, index) pairs. */
typedef struct key_idx {
    uint64_t key;
    uint32_t idx;
} key_idx;
static inline int bk_key_idx_cmp(const void *pa, const void *pb)
{
    const key_idx *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}
/* Sorts a[0 .. n) as qsort with bk_key_idx_cmp does (a total order: the same result), by the
 * radix sort of sort.h, on the pool when n is large (atlas_grow.c). */
void bk_key_idx_sort(key_idx *a, size_t n);

/* ---- atlas_topology.c: geometry, welding, adjacency ---------------------------------------- */

/* Triangle geometry (double precision: normals of tiny or thin triangles stay meaningful). */
typedef struct tri_geom {
    double  *n;     /* 3 per triangle: unit geometric normal (0 for degenerate) */
    double  *area;  /* world area */
    uint8_t *degen; /* 1: zero area (or too small to matter), gets no chart */
    uint32_t degen_count;
    double   diag; /* scene bounding-box diagonal */
} tri_geom;

int  bk_atlas_geom_init(const bk_scene *s, tri_geom *g);
void bk_atlas_geom_free(tri_geom *g);

/* weld[v]: the smallest vertex index with v's exact position (malloc'ed; NULL out of memory). */
uint32_t *bk_atlas_weld(const bk_scene *s);

/* Neighbours across shared edges: adj[start[t] .. start[t+1]). Two triangles are neighbours when
 * they share an edge traversed in opposite directions (consistent winding); triangles marked in
 * skip (degenerate ones) have none. */
typedef struct adjacency {
    uint32_t *start, *adj;
} adjacency;

int  bk_atlas_adjacency_build(const bk_scene *s, const uint32_t *weld, const uint8_t *skip, adjacency *A);
void bk_atlas_adjacency_free(adjacency *A);

/* Corner k of triangle t, in double. */
static inline void bk_atlas_pos_of(const bk_scene *s, uint32_t t, int k, double p[3])
{
    const float *f = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + k];
    p[0] = f[0];
    p[1] = f[1];
    p[2] = f[2];
}

static inline const double *bk_atlas_tri_n(const tri_geom *g, uint32_t t) { return g->n + 3 * (size_t)t; }
static inline double bk_dot3d(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }


/* ---- atlas_rect.c: minimal-area rectangles -------------------------------------------------- */

typedef struct bk_hpt {
    double x, y;
} bk_hpt;

/* Convex hull (Andrew's monotone chain) of p[0..n) (sorted in place) into h, which needs room
 * for 2 n points; returns the hull size. */
int bk_atlas_convex_hull(bk_hpt *p, int n, bk_hpt *h);
/* The rotation (cs, sn) that turns a convex polygon (counter-clockwise, no collinear points, as
 * bk_atlas_convex_hull makes it) into its minimal-area bounding rectangle, and that rectangle's
 * sides w, h. */
void bk_atlas_rect_from_hull(const bk_hpt *H, int hn, double *out_cs, double *out_sn, double *out_w, double *out_h);
/* Rotates the corners of tris[0..n) (their loc) and the hull H by (cs, sn), shifts them to the
 * origin and turns them landscape (w >= h). Rotations only, never a mirror: triangles keep
 * their counter-clockwise orientation. */
void bk_atlas_apply_rect(double *loc, const uint32_t *tris, uint32_t n, bk_hpt *H, int hn, double cs, double sn,
                         double *out_w, double *out_h);
/* bk_atlas_rect_from_hull + bk_atlas_apply_rect for a set of triangles; *pts (*pts_cap points)
 * is scratch it grows. 0, or -1 out of memory. */
int bk_atlas_fit_rect(double *loc, const uint32_t *tris, uint32_t n, double *out_w, double *out_h, bk_hpt **pts,
                      size_t *pts_cap);

/* ---- charts (atlas_grow.c and the passes after it) ----------------------------------------- */

typedef struct chart {
    uint32_t first, count; /* triangles chart_tris[first .. first+count) in growth order */
    double   n[3];         /* projection axis (unit) */
    double   w, h;         /* extent of the rotated projection, world units, w >= h */
    uint8_t  smooth;       /* 1: unfolded by bk_atlas_charts_smooth (loc is its map, not a
                              projection along n) */
} chart;

typedef struct charting {
    uint32_t *tri_chart; /* per triangle, BK_NONE for degenerate */
    uint32_t *chart_tris;
    chart    *charts;
    uint32_t  count, cap;
    double   *loc; /* 6 per triangle: corner positions in the chart's rotated frame,
                      world units, inside [0, w] x [0, h] */
} charting;

/* Charts by region growing within cone_deg, projected, self-overlaps evicted and re-charted
 * (atlas_grow.c). *work grows by the overlap searches' steps. 0, or -1 out of memory. */
int bk_atlas_charts_make(const bk_scene *s, const tri_geom *g, const adjacency *A, double cone_deg, charting *C,
                         uint64_t *work);
/* Charts that fill their rectangle poorly re-grown into compact parts (atlas_split.c; pad_w: the
 * padding in world units at the expected scale); queue, kt, part need tri_count entries. */
int bk_atlas_charts_split(const bk_scene *s, const adjacency *A, charting *C, double pad_w, uint32_t *queue,
                          key_idx *kt, uint32_t *part);
/* Neighbouring charts unfolded into one another where the union's padded rectangle costs less
 * (atlas_merge.c). */
int bk_atlas_charts_merge(const bk_scene *s, const uint32_t *weld, const adjacency *A, charting *C, double pad_w,
                          uint64_t *work);
/* Ragged borders tidied: a triangle with two edges on another chart moves into it where that
 * chart's layout takes it as it is (see atlas_refine.c). tri_scale (NULL: none) is the density
 * factor each chart's layout was scaled by. */
int bk_atlas_charts_tidy(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale,
                         double cone_deg, double max_stretch, charting *C, uint64_t *work);
/* Small planar charts (rectangle grown by pad_w at most max_cost pad_w^2) moved whole into a
 * neighbouring chart, laid triangle by triangle on its layout by similarity (see atlas_refine.c);
 * small smooth charts too when their triangles' mean area is at least smooth_min_tri pad_w^2
 * (0: never). */
int  bk_atlas_charts_absorb(const bk_scene *s, const uint32_t *weld, const adjacency *A, const float *tri_scale,
                            double cone_deg, double max_stretch, double max_cost, double pad_w, double smooth_min_tri,
                            charting *C, uint64_t *work);
void bk_atlas_charts_free(charting *C);

/* Shared by the chart passes: atlas_grow.c's. */
/* An empty charting for T triangles: its arrays allocated (NULL where out of memory). */
void bk_atlas_charting_alloc(charting *C, uint32_t T);
/* Appends chart c; 0, or -1 out of memory. */
int bk_atlas_chart_push(charting *C, chart c);
/* Projects chart ci along its axis into its plane and fits its rectangle (bk_atlas_fit_rect). */
int bk_atlas_chart_project(const bk_scene *s, charting *C, uint32_t ci, bk_hpt **pts, size_t *pts_cap);
/* Triangles by decreasing area (ties by index): positive doubles order like their bit patterns. */
void bk_atlas_sort_by_area_desc(uint32_t *t, uint32_t n, const double *area, key_idx *tmp);
/* A frame of the plane normal to unit n: t1 is the axis least aligned with n crossed with n,
 * normalised; t2 = n x t1, so (t1, t2, n) is right-handed. */
void bk_atlas_plane_frame(const double *n, double *t1, double *t2);
/* atlas_merge.c's. */
/* Chart ci's triangles as a list linked through next, in chart order: head[ci], and where given
 * tail[ci], cnt[ci] and prev (the merge, tidy, absorb and join passes keep charts so while they
 * move triangles between them). */
void bk_atlas_chart_link(const charting *C, uint32_t ci, uint32_t *head, uint32_t *tail, uint32_t *cnt, uint32_t *next,
                         uint32_t *prev);
/* atlas_refine.c's. */
/* Drops the charts of n whose triangle count cnt[] fell to 0 and makes the others' triangle lists
 * (linked through head[] and next[]) contiguous in C->chart_tris again, in chart order; changed[]
 * (when given) moves with its chart. The lists are walked on the pool, each chart's into its own
 * places. The charts left, or BK_NONE out of memory. */
uint32_t bk_atlas_compact_charts(charting *C, uint32_t n, uint32_t T, const uint32_t *cnt, const uint32_t *head,
                                 const uint32_t *next, uint8_t *changed);
/* The edge shared by triangles t and u: corners kt -> kt+1 of t are ku+1 -> ku of u; 0 or -1. */
int bk_atlas_shared_edge(const bk_scene *s, const uint32_t *weld, uint32_t t, uint32_t u, int *kt, int *ku);

/* ---- atlas_smooth.c: smooth charts, unfolded by least-squares conformal maps --------------- */

typedef struct bk_atlas_smooth_opts {
    double cone_deg;    /* a triangle's normal within this of the chart's mean normal */
    double crease_deg;  /* charts never grow across edges with a sharper dihedral angle */
    double flat_deg;    /* charts whose triangles all lie within this are left planar */
    double max_stretch; /* each triangle's area within this factor of its world area */
    double max_evict;   /* triangles past max_stretch leave the chart when at most this
                           fraction of it (0: none may; the chart is grown smaller) */
    uint32_t min_tris;  /* smaller charts are left to the planar charts */
    uint32_t max_tris;  /* charts stop growing here (the solve's cost) */
    int      max_iter;  /* conjugate-gradient iterations */
} bk_atlas_smooth_opts;

/* Fills C (which it allocates, as bk_atlas_charts_make does) with the smooth charts that unfold
 * without flips, overlaps or more than max_stretch; the other triangles stay BK_NONE for
 * bk_atlas_charts_make, which keeps these charts and adds its own. */
int bk_atlas_charts_smooth(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld,
                           const bk_atlas_smooth_opts *so, charting *C, uint64_t *work);

/* A smooth chart and the neighbour it shares the most seam with (smooth or planar), when the two
 * have at most max_tris triangles and the first's padding ring (pad_w wide) is at least min_ring
 * of its padded rectangle, unfolded again as one smooth chart where it unfolds whole by so's rules
 * and its rectangle grown by pad_w costs less than theirs (see atlas_smooth.c). */
int bk_atlas_charts_join(const bk_scene *s, const tri_geom *g, const adjacency *A, const uint32_t *weld,
                         const float *tri_scale, const bk_atlas_smooth_opts *so, uint32_t max_tris, double min_ring,
                         double pad_w, charting *C, uint64_t *work);

/* ---- atlas_overlap.c ------------------------------------------------------------------------ */

typedef struct pair_list {
    uint32_t *p;
    size_t    n, cap;
} pair_list;

/* Do the interiors of 2D triangles a and b (6 doubles each) overlap? tol (in the coordinates'
 * units) lets shared edges and vertices touch. */
int bk_atlas_tri2_overlap(const double *a, const double *b, double tol);
/* All pairs (i < j) of the n triangles xy[6 i ..] whose interiors overlap, appended to out in
 * (i, j) order; *work grows by the search's steps. 0, or -1 out of memory. */
int bk_atlas_find_overlaps(const double *xy, uint32_t n, double tol, pair_list *out, uint64_t *work);

typedef struct overlap_scratch {
    uint32_t *sel, *selb;
    double   *box, *xy;
    uint8_t  *grp;
    size_t    cap;
} overlap_scratch;
/* Does any triangle of xa[0..na) overlap one of xb[0..nb)? 1 yes, 0 no, -1 out of memory. */
int  bk_atlas_sets_overlap(const double *xa, uint32_t na, const double *xb, uint32_t nb, double tol, overlap_scratch *o,
                           uint64_t *work);
void bk_atlas_overlap_scratch_free(overlap_scratch *o);

/* ---- atlas_pack.c --------------------------------------------------------------------------- */

typedef struct pk_item {
    int w, h;      /* block size in texels, before rotation (w >= h for charts) */
    int x, y, rot; /* placement of the block's top-left texel; rot: turned 90 degrees */
} pk_item;

typedef struct sky_node {
    int x, y, w;
} sky_node;

typedef struct waste_rect {
    int x, y, w, h;
} waste_rect;

typedef struct packer {
    sky_node   *nodes; /* cap entries: at least items + 4 */
    int         count, cap;
    uint32_t   *order; /* as many as items */
    key_idx    *keys;  /* as many as items */
    key_idx    *keys2; /* radix sort scratch (as many as keys); may be NULL */
    size_t     *cnt;   /* radix sort counts, BK_SORT_COUNTS; may be NULL */
    waste_rect *waste; /* free rectangles left under the skyline (Jylanki's waste map) */
    int         nwaste, wcap;
    int         min_side; /* smallest item side: thinner waste is dropped */
} packer;

/* 0: the chart passes' speculation off (the smooth charts' levels, the joins', merges' and tidy
 * moves' looks made side by side, the shape packer's searches ahead): each looks in its serial
 * loop instead. The atlas is the same either way; for atlas_bench --spec 0, to measure what the
 * speculation costs and saves on a machine (default 1). */
extern int bk_atlas_spec;

/* ---- raster.c ------------------------------------------------------------------------------ */

/* 1: an atlas of rectangles alone is rasterized by the general pass too, not quad by quad (for
 * tests and atlas_bench: the two give the same bits). */
extern int bk_atlas_raster_general;

/* ---- atlas_shelf.c: rectangles alone, by shelves, pages at once ------------------------------- */

/* As bk_atlas_pack_pages (same arguments and result), for items that are rectangles alone. */
uint32_t bk_atlas_pack_pages_shelf(pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq, const uint32_t *run,
                                   uint32_t nrun, int size, int pad, uint32_t *bad);
/* it[0 .. n) on one size x size page, placed in place: 1 they fit, 0 not, -1 out of memory. */
int bk_atlas_pack_page_shelf(pk_item *it, uint32_t n, int size, int pad);

/* A packer for up to n items (0, or -1 out of memory); bk_atlas_packer_free releases it. */
int  bk_atlas_packer_init(packer *P, uint32_t n);
void bk_atlas_packer_free(packer *P);

/* Block sizes of the n_mesh mesh items (charts at scale s, then the degenerate triangles' texel)
 * and the rectangles of o, each plus pad. */
void bk_atlas_items_at_scale(const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad,
                             pk_item *it);
/* Packs items list[0..n) (all n when list is NULL) into size x size; 1 when all fit. */
int bk_atlas_pack_list(packer *P, pk_item *it, const uint32_t *list, uint32_t n, int pad, int size);
/* Every chart at scale s into one size x size atlas. */
int bk_atlas_pack_at(packer *P, const charting *C, uint32_t n_mesh, const bk_atlas_opts *o, double s, int pad, int size,
                     pk_item *it);
/* Pages of size x size for fixed-size items, groups kept whole (see atlas_pack.c); 0 pages when
 * group *bad alone does not fit one, or with *bad = nrun when memory ran out. */
uint32_t bk_atlas_pack_pages(packer *P, pk_item *it, pk_item *best, uint32_t *page, const uint32_t *seq,
                             const uint32_t *run, uint32_t nrun, int size, int pad, uint32_t *bad);

/* ---- atlas_pack_shapes.c -------------------------------------------------------------------- */

/* Where a point (lx, ly) of a w x h chart (texels) lands in its shape mask of mw x mh texels
 * turned by rot quarter turns (never a mirror): 0 as it is, 1 as (h - ly, lx), each 0.51 texel
 * from the mask's top-left corner (half a texel and a margin: see the shape packing in
 * atlas_pack_shapes.c); 2 and 3 are 0 and 1 turned half round within the mask
 * (bk_atlas_pack_shapes makes their masks by reversing those of 0 and 1). */
#define BK_ATLAS_SHAPE_MARGIN 0.51
static inline void bk_atlas_shape_place(double w, double h, int mw, int mh, double lx, double ly, int rot, double *x,
                                        double *y)
{
    const double m = BK_ATLAS_SHAPE_MARGIN;
    switch (rot & 3) {
    case 0:
        *x = lx + m;
        *y = ly + m;
        break;
    case 1:
        *x = h - ly + m;
        *y = lx + m;
        break;
    case 2:
        *x = mw - m - lx;
        *y = mh - m - ly;
        break;
    default:
        *x = mw - m - h + ly;
        *y = mh - m - lx;
        break;
    }
}

/* Packs the n_mesh mesh items (charts at scale s, then the degenerate triangles' texel) by their
 * rasterized shapes (their bilinear footprints, pad - 2 texels apart) into a strip N texels wide
 * and unbounded below; *used_rows gets the rows down to the lowest footprint texel, so they fit
 * an N x N atlas when *used_rows <= N. it[i] gets the position of item i's mask (x, y), its
 * rotation and its mask's size (w, h, no padding): a chart's corner (lx, ly) (C->loc times s)
 * lands at (x + lx + 0.51, y + ly + 0.51) unrotated, (x + h_c - ly + 0.51, y + lx + 0.51) turned (h_c the
 * chart's height times s). fill (NULL: all 1) multiplies chart i's scale by fill[i]. Returns 1, 0
 * when a chart is wider than N, -1 out of memory. */
int bk_atlas_pack_shapes(const charting *C, uint32_t n_mesh, double s, const double *fill, int N, int pad, pk_item *it,
                         int *used_rows);
/* Tests: with bk_atlas_ahead_check set, every placement that bk_atlas_pack_shapes derives from a
 * search ahead is searched again from scratch (shape_find); bk_atlas_ahead_checked counts them and
 * bk_atlas_ahead_wrong those whose answers differ. */
extern int              bk_atlas_ahead_check;
extern _Atomic uint64_t bk_atlas_ahead_checked, bk_atlas_ahead_wrong;
/* Tests: with bk_atlas_waste_check set, the skyline packer's waste map is also scanned one
 * rectangle at a time for each block where it holds 8 or more (bk_atlas_waste_checked counts
 * them), and bk_atlas_waste_wrong counts those where the four-at-a-time scan chose another. */
extern int              bk_atlas_waste_check;
extern _Atomic uint64_t bk_atlas_waste_checked, bk_atlas_waste_wrong;

#endif /* BK_ATLAS_INTERNAL_H */
