/* atlas.c - lightmap UVs: bk_atlas_build, which runs the parts (atlas_internal.h lists them):
 * charts by region growing, planar projection, unfolding merges (atlas_grow.c and the chart
 * passes after it, with the overlap searches of atlas_overlap.c) and skyline packing
 * (atlas_pack.c); and --uv file.
 *
 * Pipeline (see atlas.h): weld vertices by position -> edge adjacency -> charts -> split charts
 * that fill their rectangle poorly -> join small smooth charts with a neighbour -> merge
 * neighbouring charts by unfolding -> tidy borders and
 * absorb small charts into their neighbours -> every chart
 * rotated to its minimal-area rectangle -> one uniform scale for all charts -> skyline packing
 * -> UVs -> conservative coverage (raster.c) for the utilisation.
 *
 * Charts: seeds in order of decreasing area; a chart grows breadth-first over shared edges
 * (welded positions, consistently oriented neighbours only) while a triangle's normal stays
 * within cone_deg of both the seed's and the chart's running area-weighted normal. The chart is
 * projected along that mean normal; triangles the drifting mean left more than cone_deg away
 * leave again, so every triangle keeps at least cos(cone_deg) of its area (uniform texel density
 * within that factor) and none folds over its neighbours. Surfaces that come back over
 * themselves (spirals, sheets touching at a vertex) can still overlap in projection; an exact
 * separating-axis test finds such pairs (ov_search: wedges at shared corners, a grid of the cells
 * each triangle touches), a triangle that overlaps an earlier one that stays leaves the chart,
 * and the evicted triangles are charted again among themselves until nothing overlaps.
 *
 * Then passes on what the packer pays for, each chart's rectangle grown by the padding:
 * rings and frames are re-grown into compact parts (bk_atlas_charts_split), small smooth charts
 * are unfolded again together with the neighbour across their longest seam where the union
 * unfolds whole (bk_atlas_charts_join), and neighbouring charts are
 * unfolded into one another across a shared edge when their union's rectangle costs less than
 * the two apart and nothing overlaps (bk_atlas_charts_merge): a small box's six faces become one cross.
 * The split and the merge keep every triangle's projection, so its texel density. Then ragged borders are tidied
 * (bk_atlas_charts_tidy): a triangle with two edges on another chart moves into that chart's
 * layout, where its three corners already are. Last, small planar charts (and smooth ones of
 * large triangles) move whole into a neighbour (bk_atlas_charts_absorb), each triangle laid on the shared edges as a
 * similar copy of itself, where the two layouts disagree on those edges' lengths and the merge cannot join them.
 *
 * Packing: each chart becomes a block of floor(L + 0.02) + 1 texels per side (L its extent in
 * texels) with the chart centred in it (at least 0.01 texel from the block's edges), so
 * conservative rasterization never leaves the block; blocks carry `padding` empty texels to
 * their right and bottom. Blocks are sorted by their shorter side and placed with the skyline
 * bottom-left heuristic plus a waste map (Jylanki 2010, "A Thousand Ways to Pack the Bin"): the
 * gaps a block leaves under the skyline are kept as free rectangles and filled first. With a fixed
 * atlas size the scale is bisected (in log space, to 0.1 %) to the largest one that packs; with
 * texels_per_unit the side is the smallest multiple of 4 that packs.
 */
#include "atlas_internal.h"
#include "pool.h"
#include "raster.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_CONE_DEG 20.0f
/* Smooth charts (bk_atlas_charts_smooth): grown within 75 degrees of their mean normal, up to 4,000
 * triangles, each triangle's area kept within a factor 2. Up to 4,000 from 2,000 since stretched
 * triangles may leave a chart (SMOOTH_MAX_EVICT), measured at 960, 1024 and 1088 texels (mean
 * utilisation): dragon_vrip_res2 75.9 -> 78.0 %, sponza 87.1 -> 87.2, sibenik 76.9 (the same);
 * dragon_vrip at 1024^2 69.5 -> 72.9 % at 2.94 -> 3.58 s one-thread CPU; 5,000: dragon_vrip_res2
 * 77.2; 6,000: 79.0, but dragon_vrip 5.0 s. Earlier, at 2,000, measured at 1024^2 against 60 degrees:
 * sponza 1,825 -> 1,657 charts, 84.1 -> 85.2 %, sibenik 74.0 -> 74.6 %, dragon_vrip_res2 73.1 ->
 * 71.5 % (which prefers 60 degrees and 4,000 triangles: 75.3 %, at twice the time); a factor 3
 * or fewer triangles a chart changed little. Conjugate gradients stop after 60
 * iterations: the projection they start from is close, every map is checked anyway, and on the
 * corpus more iterations (600: ~500 to converge on 2,000 dragon triangles) changed the charts
 * and the utilisation by under 1 % at twice the time. */
/* The fill pass: up to 16 charts (each of its packings repacks them all), each grown by at most
 * sqrt(2) along each axis (twice the texels), one at a time, in two rounds of 6 packings each.
 * (The code also takes groups of 1, 2, 4 ... for more charts: on the 52 charts of the bunny that
 * cost 0.3 s and gained nothing.) */
#define FILL_CHARTS        16
#define FILL_MAX           1.41421356237
#define SMOOTH_CONE_DEG    75.0
#define SMOOTH_CREASE_DEG  90.0
#define SMOOTH_MAX_STRETCH 2.0
#define SMOOTH_MAX_TRIS    4000
#define SMOOTH_MAX_ITER    60
/* Up to 1 % of a smooth chart's triangles may leave it for their stretch (instead of the chart
 * halving). Measured at 960, 1024 and 1088 texels (mean utilisation) against none: sibenik
 * 77.0 -> 76.9 %, dragon_vrip_res2 75.3 -> 75.9, sponza 86.1 -> 87.1 (and less time: fewer
 * charts grown again); 2 %: 77.2, 74.4, 87.7 (the triangles that leave become charts of a few
 * texels, each with its ring); 0.5 %: 76.8, 75.6, 86.5. */
#define SMOOTH_MAX_EVICT 0.01
/* Smooth charts joined with their neighbour across the seam (bk_atlas_charts_join) when the two
 * have at most 256 triangles. Measured at 960, 1024 and 1088 texels (mean utilisation): sibenik
 * 77.4 -> 78.7 %, sponza 87.4 -> 87.5, dragon_vrip_res2 77.9 -> 77.6 (its charts are large);
 * with smooth neighbours only: 78.3, 87.5, 77.8; up to 128 triangles: 78.6, 87.4, 77.9; 512:
 * 78.7, 87.3, 77.3; any union that unfolds, whatever its rectangle: 78.2, 86.9, 77.3; the union
 * joining again up to 4 times: 78.2, 87.2, 77.5. Then the next neighbours by seam where the first
 * does not join (JOIN_TRIES, atlas_smooth.c): 3 in all 79.0, 87.6, 77.9; 2: 78.9, 87.3, 77.8; 6:
 * 79.0, 87.4, 77.6. Sponza's atlas costs 0.1 s more (0.27 -> 0.37 s one-thread CPU). Small
 * scenes at 640, 768, 1024 and 1536 texels: WusonOBJ (a character of 3,732 triangles) loses
 * 79.4, 80.6, 80.9, 82.4 -> 76.6, 80.2, 80.5, 81.8 %; spider and bunny change by under a point. */
#define JOIN_MAX_TRIS 256
/* ... and only charts whose padding ring is at least half their padded rectangle: at 4096^2 the
 * join cost sponza's atlas 0.02 -> 0.14 s of its merge stage (2 threads here; 0.35 s more of the
 * whole atlas on the H100 machine's 16 cores) and gained nothing (92.9 -> 92.7 %). At 1024^2,
 * 2 threads here, utilisation sponza / sibenik / dragon_vrip_res2 and merge-stage seconds, and
 * at 4096^2 sponza: all charts 87.7 / 79.2 / 78.2 % (0.095 / 0.200 / 0.065 s), 92.7 % (0.140 s);
 * ring >= 0.3: 86.7 / 78.8 / 77.1, 93.0 (0.079 s); >= 0.5: 87.5 / 78.4 / 78.0 (0.062 / 0.153 /
 * 0.042 s), 92.8 % (0.061 s); >= 0.7: 86.9 / 78.1 / 77.4, 93.1 (0.051 s). */
#define JOIN_MIN_RING 0.5
/* Small planar charts moved into a neighbour (bk_atlas_charts_absorb): those whose rectangle,
 * grown by the padding, is at most 256 padding squares (48 x 48 texels with 2 texels of padding
 * at the expected scale). */
#define ABSORB_MAX_COST 256.0
/* Small smooth charts move too when their triangles' mean area is at least 0.6 padding squares
 * (atlas_refine.c says why and what it was measured against). */
#define ABSORB_SMOOTH_MIN_TRI 0.6

#define STAGE_NAME(n) #n,
const char *const bk_atlas_stage_names[BK_ATLAS_STAGES] = { BK_ATLAS_STAGE_LIST(STAGE_NAME) };
#undef STAGE_NAME

int bk_atlas_spec = 1;

/* the time since *t goes to stage k (and, less what bk_pool_sim's threads would have saved
 * since, to its simulated time) */
static void stage_done(bk_atlas *a, int k, double *t, double *saved)
{
    double now = bk_time_now(), sv = bk_pool_sim_saved();
    a->stage_seconds[k] += now - *t;
    a->stage_seconds_sim[k] += now - *t - (sv - *saved);
    *t = now;
    *saved = sv;
}

void bk_atlas_opts_default(bk_atlas_opts *o)
{
    memset(o, 0, sizeof *o);
    o->size = 1024;
    o->padding = 2;
    o->cone_deg = DEFAULT_CONE_DEG;
}

void bk_atlas_free(bk_atlas *a)
{
    if (!a) return;
    free(a->uv);
    free(a->tri_chart);
    free(a->tri_page);
    memset(a, 0, sizeof *a);
}

static const char *scene_name(const bk_atlas_opts *o)
{
    return o->scene_path && o->scene_path[0] ? o->scene_path : "scene";
}

/* ---------------------------------------------------------------------------------------------
 * Build. */

static void finish_stats(bk_atlas *a)
{
    size_t N = BK_ATLAS_PIXELS(a);
    double uva = 0, rect_texels = 0;
    for (uint32_t t = 0; t < a->tri_count; ++t) {
        if (a->tri_chart[t] == BK_NONE) continue;
        const float *u = a->uv + 6 * (size_t)t;
        double       ar = 0.5 * fabs((double)(u[2] - u[0]) * (u[5] - u[1]) - (double)(u[3] - u[1]) * (u[4] - u[0]));
        uva += ar;
        if (t >= a->rect_first_tri) rect_texels += ar * a->width * a->height;
    }
    if (a->rect_first_tri == 0) {
        /* rectangles alone: each covers exactly its w x h texels (no raster needed) */
        a->covered = (uint64_t)llround(rect_texels);
    } else {
        uint8_t *mask = bk_malloc_large(N ? N : 1);
        if (mask) {
            a->covered = bk_atlas_coverage(a, mask);
            free(mask);
        }
    }
    a->utilisation = N ? (float)((double)a->covered / (double)N) : 0.0f;
    a->area_utilisation = (float)(uva / a->page_count);
}

/* --uv file: each triangle's lightmap UVs (a glTF TEXCOORD_1, tri_lmvt) where all three corners
 * have them, else its vt; they must lie in [0,1]^2; into a->uv */
static int file_uv_read(const bk_scene *s, bk_atlas *a, const char *name, char *err, size_t err_size)
{
    uint32_t T = s->tri_count;
    for (uint32_t t = 0; t < T; ++t) {
        const uint32_t *lm = s->tri_lmvt && s->lm_texcoords ? s->tri_lmvt + 3 * (size_t)t : NULL;
        int             use_lm = lm && lm[0] < s->lm_texcoord_count && lm[1] < s->lm_texcoord_count &&
                     lm[2] < s->lm_texcoord_count;
        const float    *tc = use_lm ? s->lm_texcoords : s->texcoords;
        for (int k = 0; k < 3; ++k) {
            uint32_t vi = use_lm ? lm[k] : s->tri_vt ? s->tri_vt[3 * (size_t)t + k] : BK_NONE;
            if (!use_lm && (vi == BK_NONE || vi >= s->texcoord_count))
                return bk_fail(err, err_size, "%s: --uv file: triangle %u (corner %d) has no vt; use --uv auto", name,
                               t, k);
            float       u = tc[2 * (size_t)vi], v = tc[2 * (size_t)vi + 1];
            const float e = 1e-6f;
            if (!(u >= -e && u <= 1 + e && v >= -e && v <= 1 + e))
                return bk_fail(err, err_size,
                               "%s: --uv file: triangle %u has vt (%g, %g) outside [0,1]^2 "
                               "(tiled or unnormalised UVs); use --uv auto",
                               name, t, (double)u, (double)v);
            a->uv[6 * (size_t)t + 2 * k] = fminf(fmaxf(u, 0.0f), 1.0f);
            a->uv[6 * (size_t)t + 2 * k + 1] = 1.0f - fminf(fmaxf(v, 0.0f), 1.0f); /* OBJ v points up */
        }
    }
    return 0;
}

static int file_uv_area(const bk_scene *s, const tri_geom *g, const bk_atlas *a, const char *name, char *err,
                        size_t err_size)
{
    uint32_t T = s->tri_count;
    /* every surface needs texels of its own: no vt collapsed to a point or a line */
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        const float *u = a->uv + 6 * (size_t)t;
        double       e1x = (double)u[2] - u[0], e1y = (double)u[3] - u[1], e2x = (double)u[4] - u[0],
               e2y = (double)u[5] - u[1];
        double e3x = (double)u[4] - u[2], e3y = (double)u[5] - u[3];
        double m = bk_dmax(e1x * e1x + e1y * e1y, bk_dmax(e2x * e2x + e2y * e2y, e3x * e3x + e3y * e3y));
        if (!(fabs(e1x * e2y - e1y * e2x) > 1e-9 * m) || m == 0)
            return bk_fail(err, err_size,
                           "%s: --uv file: the vt of triangle %u have no area (its corners map to one point "
                           "or line), so it would get no texels; use --uv auto",
                           name, t);
    }
    return 0;
}

/* the atlas size: --size, or from --texels-per-unit and the vt's area */
static int file_uv_size(const bk_scene *s, const bk_atlas_opts *o, const tri_geom *g, bk_atlas *a, const char *name,
                        char *err, size_t err_size)
{
    uint32_t T = s->tri_count;
    /* size */
    double wa = 0, ua = 0;
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        const float *u = a->uv + 6 * (size_t)t;
        wa += g->area[t];
        ua += 0.5 * fabs((double)(u[2] - u[0]) * (u[5] - u[1]) - (double)(u[3] - u[1]) * (u[4] - u[0]));
    }
    int N = o->size;
    if (o->texels_per_unit > 0) {
        if (!(ua > 0)) return bk_fail(err, err_size, "%s: --uv file: the vt have no area", name);
        double side = o->texels_per_unit * sqrt(wa / ua);
        if (side > BK_ATLAS_MAX_SIZE)
            return bk_fail(err, err_size,
                           "%s: --texels-per-unit %g needs a %.0f texel atlas with these vt (at most %d)", name,
                           (double)o->texels_per_unit, side, BK_ATLAS_MAX_SIZE);
        N = ((int)ceil(side) + 3) / 4 * 4;
        if (N < 4) N = 4;
    }
    a->width = a->height = N;
    a->texels_per_unit = wa > 0 ? (float)(N * sqrt(ua / wa)) : 0.0f;
    return 0;
}

static int file_uv_overlaps(const bk_scene *s, const tri_geom *g, bk_atlas *a, const char *name, char *err,
                            size_t err_size)
{
    uint32_t T = s->tri_count;
    int      N = a->width;
    /* overlaps: interiors of two triangles that share more than an edge or a vertex */
    double   *xy = malloc(sizeof(double) * 6 * (size_t)T + 1);
    uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)T + 1);
    pair_list pairs = { 0 };
    if (!xy || !ids) {
        free(xy);
        free(ids);
        return bk_fail(err, err_size, "%s: out of memory", name);
    }
    uint32_t n = 0;
    for (uint32_t t = 0; t < T; ++t) {
        if (g->degen[t]) continue;
        for (int k = 0; k < 6; ++k) xy[6 * (size_t)n + k] = a->uv[6 * (size_t)t + k];
        ids[n++] = t;
    }
    int rc = bk_atlas_find_overlaps(xy, n, 1e-3 / N, &pairs, &a->overlap_work);
    if (rc == 0 && pairs.n) {
        size_t best = 0;
        for (size_t p = 1; p < pairs.n; ++p)
            if (pairs.p[2 * p] < pairs.p[2 * best] ||
                (pairs.p[2 * p] == pairs.p[2 * best] && pairs.p[2 * p + 1] < pairs.p[2 * best + 1]))
                best = p;
        uint32_t     i = ids[pairs.p[2 * best]], j = ids[pairs.p[2 * best + 1]];
        const float *u = a->uv + 6 * (size_t)i;
        rc = bk_fail(err, err_size,
                     "%s: --uv file: the vt of triangles %u and %u overlap (near u=%.4f v=%.4f; "
                     "%zu overlapping pairs); lightmap UVs must not overlap: use --uv auto",
                     name, i, j, (u[0] + u[2] + u[4]) / 3.0, 1.0 - (u[1] + u[3] + u[5]) / 3.0, pairs.n);
    } else if (rc) rc = bk_fail(err, err_size, "%s: out of memory", name);
    free(xy);
    free(ids);
    free(pairs.p);
    return rc;
}

static int file_uv_charts(const bk_scene *s, const tri_geom *g, const uint32_t *weld, bk_atlas *a, const char *name,
                          char *err, size_t err_size)
{
    uint32_t T = s->tri_count;
    /* charts for reporting: triangles joined by edges with the same UVs on both sides */
    adjacency A;
    if (bk_atlas_adjacency_build(s, weld, g->degen, &A)) {
        bk_atlas_adjacency_free(&A);
        return bk_fail(err, err_size, "%s: out of memory", name);
    }
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)T + 1);
    if (!queue) {
        bk_atlas_adjacency_free(&A);
        return bk_fail(err, err_size, "%s: out of memory", name);
    }
    for (uint32_t t = 0; t < T; ++t) a->tri_chart[t] = BK_NONE;
    uint32_t charts = 0;
    for (uint32_t t0 = 0; t0 < T; ++t0) {
        if (g->degen[t0] || a->tri_chart[t0] != BK_NONE) continue;
        uint32_t qh = 0, qt = 0;
        queue[qt++] = t0;
        a->tri_chart[t0] = charts;
        while (qh < qt) {
            uint32_t t = queue[qh++];
            for (uint32_t p = A.start[t]; p < A.start[t + 1]; ++p) {
                uint32_t u = A.adj[p];
                if (a->tri_chart[u] != BK_NONE) continue;
                /* same UV at both welded ends of the shared edge? */
                int same = 0;
                for (int k = 0; k < 3; ++k)
                    for (int m = 0; m < 3; ++m)
                        if (weld[s->tri_v[3 * (size_t)t + k]] == weld[s->tri_v[3 * (size_t)u + m]] &&
                            a->uv[6 * (size_t)t + 2 * k] == a->uv[6 * (size_t)u + 2 * m] &&
                            a->uv[6 * (size_t)t + 2 * k + 1] == a->uv[6 * (size_t)u + 2 * m + 1])
                            same++;
                if (same < 2) continue;
                a->tri_chart[u] = charts;
                queue[qt++] = u;
            }
        }
        charts++;
    }
    free(queue);
    bk_atlas_adjacency_free(&A);
    a->chart_count = charts;
    return 0;
}

static int build_from_file(const bk_scene *s, const bk_atlas_opts *o, const tri_geom *g, const uint32_t *weld,
                           bk_atlas *a, char *err, size_t err_size)
{
    const char *name = scene_name(o);
    int         rc;
    if ((!s->tri_vt || !s->texcoords) && (!s->tri_lmvt || !s->lm_texcoords))
        return bk_fail(err, err_size, "%s: --uv file: the file has no texture coordinates (vt); use --uv auto", name);
    if ((rc = file_uv_read(s, a, name, err, err_size))) return rc;
    if ((rc = file_uv_area(s, g, a, name, err, err_size))) return rc;
    if ((rc = file_uv_size(s, o, g, a, name, err, err_size))) return rc;
    if ((rc = file_uv_overlaps(s, g, a, name, err, err_size))) return rc;
    return file_uv_charts(s, g, weld, a, name, err, err_size);
}

/* Rectangles [begin, end) (voxel quads: 3.7 M in the 54k-object world) as two triangles each,
 * MT + 2 i and MT + 2 i + 1, of chart first_chart + i: corners on texel corners, c0 -> c1 along
 * w, c0 -> c3 along h. On the pool: every rectangle writes its own triangles. */
typedef struct rect_ctx {
    const bk_atlas_opts *o;
    const pk_item       *b;    /* the rectangles' placements */
    const uint32_t      *page; /* and pages */
    uint32_t             MT, first_chart;
    int                  N;
    bk_atlas            *out;
} rect_ctx;

static void rect_uv_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const rect_ctx  *c = ctx;
    bk_atlas        *out = c->out;
    static const int corner[2][3] = { { 0, 1, 2 }, { 0, 2, 3 } };
    for (size_t i = begin; i < end; ++i) {
        const pk_item *b = &c->b[i];
        double         W = c->o->rects[i].w, H = c->o->rects[i].h;
        const double   cx[4] = { 0, W, W, 0 }, cy[4] = { 0, 0, H, H };
        for (int h = 0; h < 2; ++h) {
            size_t t = c->MT + 2 * i + (size_t)h;
            out->tri_chart[t] = c->first_chart + (uint32_t)i;
            if (out->tri_page) out->tri_page[t] = c->page[i];
            for (int k = 0; k < 3; ++k) {
                double lx = cx[corner[h][k]], ly = cy[corner[h][k]];
                double x = b->rot ? H - ly : lx, y = b->rot ? lx : ly;
                out->uv[6 * t + 2 * k] = (float)((b->x + x) / c->N);
                out->uv[6 * t + 2 * k + 1] = (float)((b->y + y) / c->N);
            }
        }
    }
}

/* The groups of the items for bk_atlas_pack_pages: each mesh item alone, in order, then the rectangles by
 * group (stable). seq and run need n_items and n_items + 1 entries; returns the group count. */
static uint32_t item_groups(uint32_t n_mesh, const bk_atlas_opts *o, key_idx *tmp, uint32_t *seq, uint32_t *run)
{
    uint32_t nrun = 0;
    for (uint32_t i = 0; i < n_mesh; ++i) {
        run[nrun++] = i;
        seq[i] = i;
    }
    int sorted = 1;
    for (uint32_t i = 0; i < o->rect_count; ++i) {
        tmp[i].key = o->rects[i].group;
        tmp[i].idx = i;
        sorted &= i == 0 || o->rects[i].group >= o->rects[i - 1].group;
    }
    /* (on the pool: qsort took 0.4 s of one thread for the 54k-object world's quads; voxel quads
     * come in instance order, sorted already) */
    if (!sorted) bk_key_idx_sort(tmp, o->rect_count);
    for (uint32_t k = 0; k < o->rect_count; ++k) {
        if (k == 0 || tmp[k].key != tmp[k - 1].key) run[nrun++] = n_mesh + k;
        seq[n_mesh + k] = n_mesh + tmp[k].idx;
    }
    run[nrun] = n_mesh + o->rect_count;
    return nrun;
}

/* The density a page-count message quotes. */
static void density_words(const bk_atlas_opts *o, uint32_t n_mesh, char *buf, size_t n)
{
    if (o->rect_count && (n_mesh == 0 || !(o->texels_per_unit > 0)))
        snprintf(buf, n, "%g texels per voxel", (double)sqrtf(o->rect_texels_per_unit * o->rect_texels_per_unit));
    else snprintf(buf, n, "%g texels per unit", (double)o->texels_per_unit);
}

/* Drops the neighbours of another density factor: no chart spans two --object-scale values. */
static void adjacency_split_scales(adjacency *A, uint32_t T, const float *f)
{
    uint32_t w = 0;
    for (uint32_t t = 0; t < T; ++t) {
        uint32_t a = A->start[t], b = A->start[t + 1];
        A->start[t] = w;
        for (uint32_t p = a; p < b; ++p)
            if (f[A->adj[p]] == f[t]) A->adj[w++] = A->adj[p];
    }
    A->start[T] = w;
}

/* UVs of charts [begin, end): each writes its own triangles only. */
typedef struct place_ctx {
    const charting *C;
    const pk_item  *best_items;
    const uint32_t *item_page;
    const double   *fill;
    double          scale0;
    int             pad, shaped, N;
    bk_atlas       *out;
} place_ctx;

static void place_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const place_ctx *pc = ctx;
    const charting  *Cp = pc->C;
    bk_atlas        *out = pc->out;
    int              pad = pc->pad, N = pc->N;
    for (size_t ci = begin; ci < end; ++ci) {
        const chart   *c = &Cp->charts[ci];
        const pk_item *b = &pc->best_items[ci];
        double         scale = pc->fill ? pc->scale0 * pc->fill[ci] : pc->scale0;
        int            bw = b->w - pad, bh = b->h - pad;
        double         ox = 0.5 * (bw - c->w * scale), oy = 0.5 * (bh - c->h * scale);
        for (uint32_t i = 0; i < c->count; ++i) {
            uint32_t t = Cp->chart_tris[c->first + i];
            if (out->tri_page) out->tri_page[t] = pc->item_page[ci];
            for (int k = 0; k < 3; ++k) {
                double lx = Cp->loc[6 * (size_t)t + 2 * k] * scale + ox,
                       ly = Cp->loc[6 * (size_t)t + 2 * k + 1] * scale + oy;
                double x = b->rot ? bh - ly : lx, y = b->rot ? lx : ly;
                if (pc->shaped) { /* masks: the turned chart 0.51 texel from the mask's top-left corner */
                    bk_atlas_shape_place(c->w * scale, c->h * scale, b->w, b->h, Cp->loc[6 * (size_t)t + 2 * k] * scale,
                                         Cp->loc[6 * (size_t)t + 2 * k + 1] * scale, b->rot, &x, &y);
                }
                out->uv[6 * (size_t)t + 2 * k] = (float)((b->x + x) / N);
                out->uv[6 * (size_t)t + 2 * k + 1] = (float)((b->y + y) / N);
            }
        }
    }
}

/* Per mesh triangle: term[2t] its area ratio (chart over world, the density factor asked for
 * taken out), term[2t + 1] its L2 stretch term times its area (-1 for a chart triangle of no
 * area); summed in triangle order by the caller. */
typedef struct stretch_ctx {
    const bk_scene *ms;
    const tri_geom *g;
    const charting *C;
    const float    *tri_scale;
    double         *term;
} stretch_ctx;

static void stretch_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const stretch_ctx *sc = ctx;
    for (size_t t = begin; t < end; ++t) {
        if (sc->g->degen[t]) continue;
        const double *L = sc->C->loc + 6 * t;
        double        f = sc->tri_scale ? sc->tri_scale[t] : 1.0; /* asked for: not stretch */
        sc->term[2 * t] = bk_tri2_area(L) / (sc->g->area[t] * f * f);
        sc->term[2 * t + 1] = -1;
        /* the map's Jacobian from the chart's plane (world units) to the surface */
        double q[3][3], a2 = (L[2] - L[0]) * (L[5] - L[1]) - (L[3] - L[1]) * (L[4] - L[0]), Ss[3], St[3];
        for (int k = 0; k < 3; ++k) {
            const float *p = sc->ms->positions + 3 * (size_t)sc->ms->tri_v[3 * t + k];
            q[k][0] = p[0];
            q[k][1] = p[1];
            q[k][2] = p[2];
        }
        if (!(fabs(a2) > 0)) continue;
        for (int d = 0; d < 3; ++d) {
            Ss[d] = (q[0][d] * (L[3] - L[5]) + q[1][d] * (L[5] - L[1]) + q[2][d] * (L[1] - L[3])) / a2;
            St[d] = (q[0][d] * (L[4] - L[2]) + q[1][d] * (L[0] - L[4]) + q[2][d] * (L[2] - L[0])) / a2;
        }
        sc->term[2 * t + 1] =
            0.5 * (Ss[0] * Ss[0] + Ss[1] * Ss[1] + Ss[2] * Ss[2] + St[0] * St[0] + St[1] * St[1] + St[2] * St[2]) * f *
            f * sc->g->area[t];
    }
}

/* The shape packing's scale search. Each packing goes into a strip as wide as the atlas and says
 * how many rows it needs; the scale whose area would fill the atlas at that density is the next
 * guess. The first packing is at the rectangles' scale, on all threads. Then rounds of
 * SHAPE_TRIALS packings run at once (bk_parallel_teams): one packing scales poorly past 4-5
 * threads (sponza 4096^2 on the GPU machine: 0.23-0.26 s on 1 thread, 0.10-0.11 on 5, 0.09-0.10
 * on 16), so a round of three on 5 threads each takes 1.5-2x one packing on 16. A round tries
 * the guess from the largest packing that fit (or, when none did, 0.3 % under the one from the
 * smallest that did not) and a step either side of it, each above the largest scale known to fit
 * (by 0.2 %) and below the smallest known not to; where fewer than three are left and that
 * bracket is closed, its quarter points. The step is 0.35 %, or in later rounds as far as the
 * last guess was off (up to 5 %: a few charts pack in steps; the bunny's 20 needed 5 rounds).
 * The search ends when the bracket is within 0.4 %, when the largest fit leaves no room to grow
 * by 0.2 %, or after SHAPE_ROUNDS in all. It depends on the packings' results only, never on the
 * thread count. Before, one packing at a time by the same guesses and stopping rules, it took 2
 * (sponza 1024^2) to 4 (sponza 4096^2) packings in a row; now one and one round for sponza,
 * sibenik and the dragons. */
#define SHAPE_TRIALS 3
#define SHAPE_ROUNDS 6
typedef struct shape_trial {
    double   s;
    int      ok, used;
    pk_item *it;
} shape_trial;
typedef struct shape_round {
    const charting *C;
    uint32_t        n_mesh;
    int             N, pad;
    shape_trial    *t;
} shape_round;

static void shape_trial_fn(void *ctx, int team, int k)
{
    const shape_round *r = ctx;
    (void)k;
    shape_trial *t = &r->t[team];
    t->used = 0;
    t->ok = bk_atlas_pack_shapes(r->C, r->n_mesh, t->s, NULL, r->N, r->pad, t->it, &t->used);
}

/* *lo: the largest scale that packed (0: none), its items in best; 0, or -1 out of memory */
static int shape_search(const charting *C, uint32_t n_mesh, double scale, int N, int pad, pk_item *best, double *lo_out)
{
    shape_trial t[SHAPE_TRIALS];
    shape_round r = { C, n_mesh, N, pad, t };
    int         rc = 0;
    memset(t, 0, sizeof t);
    for (int k = 0; k < SHAPE_TRIALS; ++k)
        if (!(t[k].it = malloc(sizeof(pk_item) * ((size_t)n_mesh + 1)))) rc = -1;
    double lo = 0, hi = DBL_MAX, est_fit = 0, est_fail = 0, miss = 0;
    for (int round = 0; rc == 0 && round < SHAPE_ROUNDS; ++round) {
        double c[SHAPE_TRIALS];
        int    nc = 0;
        if (round == 0) {
            c[nc++] = scale;
        } else {
            double est = est_fit > 0 ? est_fit : est_fail;
            if (lo > 0 && est <= lo * 1.002) break; /* the largest fit leaves no room to grow */
            /* the spacing: 0.35 %, or as far as the last guess was off (few charts pack in steps) */
            const double step = round == 1 ? 0.0035 : fmin(fmax(miss, 0.0035), 0.05);
            /* est and a step either side (after the first packing est, one and two steps more:
             * its smaller scale has more of its area in padding, which does not grow with the
             * scale, so its guess falls short), within the bracket; where that leaves fewer,
             * points a quarter, a half and three quarters of the way up a closed bracket */
            for (int k = 0; k < 2 * SHAPE_TRIALS && nc < SHAPE_TRIALS; ++k) {
                double v = k < SHAPE_TRIALS         ? est * (1.0 + step * ((round == 1) + 1 - k))
                           : lo > 0 && hi < DBL_MAX ? lo * pow(hi / lo, 0.25 * (k - SHAPE_TRIALS + 1))
                                                    : 0.0;
                int    dup = !(v > (lo > 0 ? lo * 1.002 : 0.0) && v < hi);
                for (int q = 0; q < nc; ++q) dup |= fabs(c[q] / v - 1.0) < 1e-4;
                if (!dup) c[nc++] = v;
            }
        }
        if (nc == 0) break;
        for (int k = 0; k < nc; ++k) t[k].s = c[k];
        bk_parallel_teams(nc, shape_trial_fn, &r);
        est_fit = est_fail = 0;
        double best_fit = 0, least_fail = DBL_MAX;
        for (int k = 0; k < nc; ++k) {
            if (t[k].ok < 0) {
                rc = -1;
                break;
            }
            int    fits = t[k].ok && t[k].used <= N;
            double est = t[k].s * sqrt((double)N / (t[k].used > 0 ? t[k].used : 1));
            if (fits && t[k].s > lo) {
                lo = t[k].s;
                memcpy(best, t[k].it, sizeof(pk_item) * n_mesh);
            }
            if (!fits && t[k].s < hi) hi = t[k].s;
            if (fits && t[k].s > best_fit) {
                best_fit = t[k].s;
                est_fit = est;
            }
            if (!fits && t[k].s < least_fail) {
                least_fail = t[k].s;
                est_fail = est * 0.997;
            }
        }
        miss = fabs((est_fit > 0 ? est_fit / best_fit : est_fail / least_fail) - 1.0);
        if (lo > 0 && hi < lo * 1.004) break;
    }
    for (int k = 0; k < SHAPE_TRIALS; ++k) free(t[k].it);
    *lo_out = lo;
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * bk_atlas_build: one function per stage of BK_ATLAS_STAGE_LIST (atlas.h), in order, on one
 * state; each returns 0, or -1 with err set. */

typedef struct atlas_build {
    const bk_scene      *s;
    const bk_atlas_opts *o;
    bk_atlas            *out;
    char                *err;
    size_t               err_size;
    const char          *name;
    int                  pad;
    double               cone;
    uint32_t             R, T, MT; /* rectangles, triangles, the mesh's triangles (before
                                      the rectangles') */
    bk_scene ms;                   /* the mesh part: s up to triangle MT */
    int      finished;             /* 1: no stage left to run (--uv file) */
    int      rc;                   /* the result of a finished build */
    /* charts */
    tri_geom             g;
    uint32_t            *weld;
    adjacency            A;
    charting             C;
    bk_atlas_smooth_opts so;
    double               pad_w; /* the padding in world units at the expected scale */
    /* packing */
    packer    P;
    pk_item  *items, *best_items, *shape_items;
    uint32_t *item_page, *seq, *run;
    key_idx  *gtmp;
    uint32_t  n_mesh, n_items; /* items: charts and the degenerate texel, then rects */
    double    sum_wh, max_w;   /* the charts' rectangles: their area, the widest */
    double    scale;
    int       shaped; /* 1: best_items are shape masks (bk_atlas_pack_shapes), not
                         padded blocks */
    int     N, fixed;
    char    dens[64];
    double *fill;    /* per chart: its scale over the uniform one (the fill pass),
                        or NULL */
    double shape_lo; /* the largest uniform scale the shapes packed at (0: none) */
} atlas_build;

static int oom(atlas_build *b) { return bk_fail(b->err, b->err_size, "%s: out of memory", b->name); }

/* The options and the scene checked before anything is allocated. */
static int check_opts(const atlas_build *b)
{
    const bk_scene      *s = b->s;
    const bk_atlas_opts *o = b->o;
    const char          *name = b->name;
    char                *err = b->err;
    size_t               err_size = b->err_size;
    int                  pad = b->pad;
    double               cone = b->cone;
    uint32_t             R = b->R, T = b->T;
    if (pad < 2 || pad > 64)
        return bk_fail(err, err_size, "%s: padding %d: must be between 2 and 64 texels", name, pad);
    if (!(cone > 0 && cone < 80))
        return bk_fail(err, err_size, "%s: chart cone %g degrees: must be in (0, 80)", name, cone);
    if (!(o->texels_per_unit >= 0) || !isfinite(o->texels_per_unit))
        return bk_fail(err, err_size, "%s: texels per unit %g: must be a positive number", name,
                       (double)o->texels_per_unit);
    if ((o->texels_per_unit == 0 || o->pages_auto) && (o->size < 4 || o->size > BK_ATLAS_MAX_SIZE))
        return bk_fail(err, err_size, "%s: atlas size %d: must be between 4 and %d", name, o->size, BK_ATLAS_MAX_SIZE);
    if (s->tri_count == 0) return bk_fail(err, err_size, "%s: no triangles to map", name);
    if (R && (!o->rects || (uint64_t)o->rect_first_tri + 2 * (uint64_t)R != T))
        return bk_fail(err, err_size, "%s: %u rectangles from triangle %u do not end the scene's %u triangles", name, R,
                       o->rect_first_tri, T);
    if (o->tri_scale)
        for (uint32_t t = 0; t < (R ? o->rect_first_tri : T); ++t)
            if (!(o->tri_scale[t] > 0 && o->tri_scale[t] <= 1e3f))
                return bk_fail(err, err_size,
                               "%s: triangle %u: density factor %g (--object-scale): must be in (0, 1000]", name, t,
                               (double)o->tri_scale[t]);
    if (R && o->uv_from_file)
        return bk_fail(err, err_size,
                       "%s: --uv file: voxel charts are made from their quads; bake the --mesh-out OBJ for file UVs",
                       name);
    for (uint32_t i = 0; i < R; ++i)
        if (o->rects[i].w < 1 || o->rects[i].h < 1 || o->rects[i].w > BK_ATLAS_MAX_SIZE ||
            o->rects[i].h > BK_ATLAS_MAX_SIZE)
            return bk_fail(err, err_size, "%s: rectangle %u is %ux%u texels (1 to %d a side)", name, i, o->rects[i].w,
                           o->rects[i].h, BK_ATLAS_MAX_SIZE);
    return 0;
}

/* prep: the output's arrays, triangle geometry, welding, adjacency (or --uv file, which
 * finishes the build here). */
static int stage_prep(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    bk_atlas            *out = b->out;
    uint32_t             T = b->T, MT = b->MT, R = b->R;
    out->tri_count = T;
    out->page_count = 1;
    out->density_max = 1.0f;
    out->rect_first_tri = R ? MT : T;
    out->uv = calloc(6 * (size_t)T, sizeof(float));
    out->tri_chart = malloc(sizeof(uint32_t) * (size_t)T);
    if (!out->uv || !out->tri_chart ||
        (MT && (bk_atlas_geom_init(&b->ms, &b->g) || !(b->weld = bk_atlas_weld(&b->ms)))))
        return oom(b);
    out->degenerate_count = b->g.degen_count;
    if (MT && b->g.degen_count == MT && !R)
        return bk_fail(b->err, b->err_size, "%s: every triangle has zero area", b->name);

    if (o->uv_from_file) {
        b->rc = build_from_file(b->s, o, &b->g, b->weld, out, b->err, b->err_size);
        b->finished = 1;
        return b->rc;
    }

    bk_atlas_smooth_opts *so = &b->so;
    so->cone_deg = SMOOTH_CONE_DEG;
    so->crease_deg = SMOOTH_CREASE_DEG;
    so->flat_deg = b->cone;
    so->max_stretch = SMOOTH_MAX_STRETCH;
    so->max_evict = SMOOTH_MAX_EVICT;
    so->min_tris = 4;
    so->max_tris = SMOOTH_MAX_TRIS;
    so->max_iter = SMOOTH_MAX_ITER;
    if (MT && bk_atlas_adjacency_build(&b->ms, b->weld, b->g.degen, &b->A)) return oom(b);
    if (MT && o->tri_scale) adjacency_split_scales(&b->A, MT, o->tri_scale);
    return 0;
}

/* smooth: the curved regions unfolded by least-squares conformal maps. */
static int stage_smooth(atlas_build *b)
{
    if (b->MT && !b->o->planar_only &&
        bk_atlas_charts_smooth(&b->ms, &b->g, &b->A, b->weld, &b->so, &b->C, &b->out->overlap_work))
        return oom(b);
    return 0;
}

/* planar: the other triangles by region growing within the cone, projected; then each chart
 * scaled by its object's density factor and the scale to expect (pad_w). */
static int stage_planar(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    uint32_t             MT = b->MT;
    charting            *C = &b->C;
    if (MT && bk_atlas_charts_make(&b->ms, &b->g, &b->A, b->cone, C, &b->out->overlap_work)) return oom(b);
    if (!MT) return 0;
    if (o->tri_scale) /* per-object density (--object-scale): each chart, of one object, grows by its factor */
        for (uint32_t ci = 0; ci < C->count; ++ci) {
            chart *c = &C->charts[ci];
            double f = o->tri_scale[C->chart_tris[c->first]];
            for (uint32_t i = 0; i < c->count; ++i)
                for (int k = 0; k < 6; ++k) C->loc[6 * (size_t)C->chart_tris[c->first + i] + k] *= f;
            c->w *= f;
            c->h *= f;
        }
    /* the scale to expect: charts filling ~60 % of the atlas, or the one asked for */
    double area = 0;
    for (uint32_t t = 0; t < MT; ++t)
        area += b->g.area[t] * (o->tri_scale ? (double)o->tri_scale[t] * o->tri_scale[t] : 1.0);
    double s_est = o->texels_per_unit > 0 ? o->texels_per_unit : o->size * sqrt(0.6 / fmax(area, 1e-300));
    b->pad_w = (b->pad + 1) / s_est;
    return 0;
}

/* split: charts that fill their rectangle poorly re-grown into compact parts. */
static int stage_split(atlas_build *b)
{
    uint32_t MT = b->MT;
    if (!MT) return 0;
    uint32_t *queue = malloc(sizeof(uint32_t) * (size_t)MT + 1), *part = malloc(sizeof(uint32_t) * (size_t)MT + 1);
    key_idx  *kt = malloc(sizeof(key_idx) * (size_t)MT + 1);
    int       bad = !queue || !part || !kt || bk_atlas_charts_split(&b->ms, &b->A, &b->C, b->pad_w, queue, kt, part);
    free(queue);
    free(part);
    free(kt);
    return bad ? oom(b) : 0;
}

/* merge: smooth charts joined with a neighbour, then neighbours unfolded into one another. */
static int stage_merge(atlas_build *b)
{
    if (!b->MT) return 0;
    uint64_t *work = &b->out->overlap_work;
    int       bad = 0;
    if (!b->o->planar_only)
        bad = bk_atlas_charts_join(&b->ms, &b->g, &b->A, b->weld, b->o->tri_scale, &b->so, JOIN_MAX_TRIS, JOIN_MIN_RING,
                                   b->pad_w, &b->C, work);
    bad = bad || bk_atlas_charts_merge(&b->ms, b->weld, &b->A, &b->C, b->pad_w, work);
    return bad ? oom(b) : 0;
}

/* tidy: ragged borders tidied, small charts absorbed into their neighbours. */
static int stage_tidy(atlas_build *b)
{
    if (!b->MT) return 0;
    const float *ts = b->o->tri_scale;
    uint64_t    *work = &b->out->overlap_work;
    int          bad = bk_atlas_charts_tidy(&b->ms, b->weld, &b->A, ts, b->cone, SMOOTH_MAX_STRETCH, &b->C, work);
    bad = bad || bk_atlas_charts_absorb(&b->ms, b->weld, &b->A, ts, b->cone, SMOOTH_MAX_STRETCH, ABSORB_MAX_COST,
                                        b->pad_w, ABSORB_SMOOTH_MIN_TRI, &b->C, work);
    return bad ? oom(b) : 0;
}

/* Splits group g of run (nrun groups) into one group per item; run has room for one entry per item
 * and the end. */
static void split_group(uint32_t *run, uint32_t *nrun, uint32_t g)
{
    uint32_t k = run[g + 1] - run[g];
    if (k < 2) return;
    memmove(&run[g + k], &run[g + 1], sizeof(uint32_t) * (*nrun - g)); /* run[g + 1 .. nrun], the end too */
    for (uint32_t j = 1; j < k; ++j) run[g + j] = run[g] + j;
    *nrun += k - 1;
}

/* Fixed chart sizes on pages of --size: one when they fit it, else (--pages auto) as many as
 * they need, groups kept whole. With --pages auto a voxel instance's group that does not fit one
 * page (a model larger than a page) is spread instead: each of its quads becomes a group of its
 * own, in order, so the instance takes consecutive pages. Groups larger than a page are split
 * before packing; one that is smaller but does not pack alone on a page, when packing says so. */
static int pack_fixed_pages(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    const char          *name = b->name;
    int                  N = b->N = o->size;
    uint32_t             n_items = b->n_items, n_mesh = b->n_mesh, R = b->R;
    /* rectangles alone (voxel quads): by shelves, pages at once (atlas_shelf.c); on one page the
     * skyline where the shelves do not fit */
    const int shelf = n_mesh == 0;
    if (!o->pages_auto && shelf) {
        int ok = bk_atlas_pack_page_shelf(b->items, n_items, N, b->pad);
        if (ok < 0) return oom(b);
        if (ok) {
            memcpy(b->best_items, b->items, sizeof(pk_item) * n_items);
            return 0;
        }
    }
    if (!o->pages_auto && bk_atlas_pack_list(&b->P, b->items, NULL, n_items, b->pad, N)) {
        memcpy(b->best_items, b->items, sizeof(pk_item) * n_items);
        return 0;
    }
    uint32_t bad_group = 0;
    b->seq = malloc(sizeof(uint32_t) * n_items);
    b->run = malloc(sizeof(uint32_t) * (n_items + 1));
    b->gtmp = malloc(sizeof(key_idx) * (R ? R : 1));
    if (!b->seq || !b->run || !b->gtmp) return oom(b);
    uint32_t nrun = item_groups(n_mesh, o, b->gtmp, b->seq, b->run), pages;
    if (o->pages_auto) {
        /* every rectangle group larger than a page split at once, in place from the end (an entry
         * only moves up): pass 0 counts the entries the splits add, pass 1 writes them */
        const double page_area = (double)(N + b->pad) * (N + b->pad);
        uint32_t    *run = b->run, more = 0;
        for (int pass = 0; pass < 2; ++pass) {
            uint32_t end = run[nrun], add = more; /* add: entries the groups before g add */
            if (pass == 1) run[nrun + more] = end;
            for (uint32_t g = nrun; g-- > 0;) {
                uint32_t lo = run[g];
                double   area = 0;
                for (uint32_t i = lo; i < end; ++i) area += (double)b->items[b->seq[i]].w * b->items[b->seq[i]].h;
                uint32_t parts = b->seq[lo] >= n_mesh && area > page_area ? end - lo : 1;
                if (pass == 0) more += parts - 1;
                else {
                    add -= parts - 1;
                    for (uint32_t j = 0; j < parts; ++j) run[g + add + j] = lo + j;
                }
                end = lo;
            }
        }
        nrun += more;
    }
    for (;;) {
        pages = shelf ? bk_atlas_pack_pages_shelf(b->items, b->best_items, b->item_page, b->seq, b->run, nrun, N,
                                                  b->pad, &bad_group)
                      : bk_atlas_pack_pages(&b->P, b->items, b->best_items, b->item_page, b->seq, b->run, nrun, N,
                                            b->pad, &bad_group);
        if (pages || bad_group == nrun || !o->pages_auto) break;
        if (b->seq[b->run[bad_group]] < n_mesh || b->run[bad_group + 1] - b->run[bad_group] < 2) break;
        split_group(b->run, &nrun, bad_group);
    }
    if (!pages && bad_group == nrun) return oom(b);
    if (!pages) {
        uint32_t first = b->seq[b->run[bad_group]];
        if (first >= n_mesh && o->pages_auto) {
            const bk_atlas_rect *r = &o->rects[first - n_mesh];
            return bk_fail(b->err, b->err_size,
                           "%s: a quad of voxel instance %u (%ux%u texels) does not fit one %dx%d page at %s; use a "
                           "larger --size or fewer --texels-per-voxel",
                           name, r->group, r->w, r->h, N, N, b->dens);
        }
        if (first >= n_mesh)
            return bk_fail(b->err, b->err_size,
                           "%s: the charts of voxel instance %u do not fit one %dx%d page at %s; use --pages auto, "
                           "a larger --size or fewer --texels-per-voxel",
                           name, o->rects[first - n_mesh].group, N, N, b->dens);
        return bk_fail(b->err, b->err_size,
                       "%s: chart %u does not fit one %dx%d page at %s; use a larger --size or a smaller "
                       "--texels-per-unit",
                       name, first, N, N, b->dens);
    }
    if (!o->pages_auto)
        return bk_fail(b->err, b->err_size, "%s: needs %u pages of %dx%d at %s; use --pages auto or a larger --size",
                       name, pages, N, N, b->dens);
    if ((uint64_t)N * N * pages > 0x100000000ull)
        return bk_fail(b->err, b->err_size,
                       "%s: needs %u pages of %dx%d at %s: more than 2^32 texels, which a bake cannot number; "
                       "use fewer texels per voxel or unit",
                       name, pages, N, N, b->dens);
    b->out->page_count = (int)pages;
    return 0;
}

/* A mesh at a fixed --texels-per-unit on one page: the smallest side (a multiple of 4) that
 * holds it. */
static int pack_fixed_size(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    const pk_item       *items = b->items;
    uint32_t             n_items = b->n_items;
    int                  pad = b->pad;
    double               need = 0;
    int                  longest = 0;
    for (uint32_t i = 0; i < n_items; ++i) {
        need += (double)items[i].w * items[i].h;
        if (items[i].w - pad > longest) longest = items[i].w - pad;
        if (items[i].h - pad > longest) longest = items[i].h - pad;
    }
    /* the side the blocks' area alone needs, bounded before it becomes an int */
    double lo_d = bk_dmax(floor(sqrt(need)) - pad, (double)longest);
    int    lo = lo_d <= BK_ATLAS_MAX_SIZE ? ((int)lo_d + 3) / 4 * 4 : BK_ATLAS_MAX_SIZE + 1;
    if (lo < 4) lo = 4;
    if (lo > BK_ATLAS_MAX_SIZE)
        return bk_fail(b->err, b->err_size, "%s: --texels-per-unit %g needs an atlas larger than %d texels%s", b->name,
                       (double)o->texels_per_unit, BK_ATLAS_MAX_SIZE, b->R ? "; use --pages auto" : "");
    /* grow geometrically until it packs, then bisect down on multiples of 4 */
    int hi = lo, ok_hi = 0;
    for (;;) {
        if (bk_atlas_pack_list(&b->P, b->items, NULL, n_items, pad, hi)) {
            ok_hi = 1;
            memcpy(b->best_items, items, sizeof(pk_item) * n_items);
            break;
        }
        if (hi >= BK_ATLAS_MAX_SIZE) break;
        lo = hi + 4;
        hi = ((int)(hi * 1.125) + 3) / 4 * 4;
        if (hi < lo) hi = lo;
        if (hi > BK_ATLAS_MAX_SIZE) hi = BK_ATLAS_MAX_SIZE;
    }
    if (!ok_hi)
        return bk_fail(b->err, b->err_size,
                       "%s: --texels-per-unit %g needs an atlas larger than %d texels; use --pages auto", b->name,
                       (double)o->texels_per_unit, BK_ATLAS_MAX_SIZE);
    while (lo < hi) {
        int mid = (lo + hi) / 8 * 4, ok = 0;
        if (mid < lo) mid = lo;
        ok = bk_atlas_pack_list(&b->P, b->items, NULL, n_items, pad, mid);
        if (ok) {
            hi = mid;
            memcpy(b->best_items, items, sizeof(pk_item) * n_items);
        } else lo = mid + 4;
    }
    b->N = hi;
    return 0;
}

/* Charts of free size into one --size page: the largest uniform scale at which their padded
 * rectangles pack, by halving then bisecting log(scale). */
static int pack_uniform_scale(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    int                  N = b->N = o->size, pad = b->pad;
    uint32_t             n_items = b->n_items;
    /* Upper bound: the charts' rectangles alone fill the atlas, or the longest one spans it. */
    double s_hi = fmin((N + pad) / sqrt(fmax(b->sum_wh, 1e-300)), N / fmax(b->max_w, 1e-300));
    double s_lo = s_hi;
    int    found = 0;
    for (int i = 0; i < 60; ++i) {
        if (bk_atlas_pack_at(&b->P, &b->C, b->n_mesh, o, s_lo, pad, N, b->items)) {
            found = 1;
            break;
        }
        s_hi = s_lo;
        s_lo *= 0.5;
    }
    if (!found && bk_atlas_pack_at(&b->P, &b->C, b->n_mesh, o, 0.0, pad, N, b->items)) found = 1, s_lo = 0.0;
    if (!found)
        return bk_fail(b->err, b->err_size,
                       "%s: %u charts do not fit a %dx%d atlas even at one texel each with %d texels of "
                       "padding; use a larger --size%s",
                       b->name, b->C.count + b->R, N, N, pad, b->R ? ", or --pages auto" : " or --uv file");
    memcpy(b->best_items, b->items, sizeof(pk_item) * n_items);
    if (s_lo < s_hi) {
        /* bisect log(scale) to 0.1 % */
        double lo = s_lo, hi = s_hi;
        while (hi > lo * 1.001) {
            double mid = sqrt(lo * hi);
            if (bk_atlas_pack_at(&b->P, &b->C, b->n_mesh, o, mid, pad, N, b->items)) {
                lo = mid;
                memcpy(b->best_items, b->items, sizeof(pk_item) * n_items);
            } else hi = mid;
        }
        s_lo = lo;
    }
    b->scale = s_lo;
    return 0;
}

/* rects: the items (one per chart, one texel for all degenerate triangles, then the rectangles)
 * packed as padded blocks: at their fixed sizes, or at the largest uniform scale. */
static int stage_rects(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    charting            *C = &b->C;
    uint32_t n_mesh = b->n_mesh = C->count + (b->g.degen_count ? 1 : 0), n_items = b->n_items = n_mesh + b->R;
    b->items = malloc(sizeof(pk_item) * n_items);
    b->best_items = malloc(sizeof(pk_item) * n_items);
    b->shape_items = malloc(sizeof(pk_item) * n_items);
    b->item_page = calloc(n_items, sizeof(uint32_t));
    if (!b->items || !b->best_items || !b->shape_items || !b->item_page || bk_atlas_packer_init(&b->P, n_items))
        return oom(b);
    b->sum_wh = 0, b->max_w = 0;
    for (uint32_t i = 0; i < C->count; ++i) {
        b->sum_wh += C->charts[i].w * C->charts[i].h;
        if (C->charts[i].w > b->max_w) b->max_w = C->charts[i].w;
    }
    b->scale = 0;
    b->shaped = 0;
    b->fixed = o->texels_per_unit > 0 || n_mesh == 0;
    density_words(o, n_mesh, b->dens, sizeof b->dens);
    if (b->fixed) {
        b->scale = o->texels_per_unit;
        bk_atlas_items_at_scale(C, n_mesh, o, b->scale, b->pad, b->items);
    }
    /* Fixed chart sizes: pages of --size (one, or as many as needed), except that a mesh at a
     * given --texels-per-unit on one page grows the page to fit, as it always did. */
    if (b->fixed && (o->pages_auto || !(o->texels_per_unit > 0) || n_mesh == 0)) return pack_fixed_pages(b);
    if (b->fixed) return pack_fixed_size(b);
    return pack_uniform_scale(b);
}

/* Charts scaled to fill the page: with few charts the uniform scale leaves a page partly empty
 * (five equal walls fit three to a row, whatever the scale), so charts, largest first
 * (FILL_CHARTS), grow by up to FILL_MAX along each axis while the page still holds everything. A
 * chart never gets fewer texels than the uniform scale gives; bk_atlas.density_max says how many
 * more the fill gave. */
static int fill_pass(atlas_build *b)
{
    const charting *C = &b->C;
    uint32_t        n_mesh = b->n_mesh, n_items = b->n_items;
    int             N = b->N, pad = b->pad;
    double         *fill = b->fill = malloc(sizeof(double) * C->count);
    key_idx        *ord = malloc(sizeof(key_idx) * (C->count + 1));
    if (!fill || !ord) {
        free(ord);
        return oom(b);
    }
    for (uint32_t i = 0; i < C->count; ++i) {
        fill[i] = 1.0;
        double   a = C->charts[i].w * C->charts[i].h;
        uint64_t bits;
        memcpy(&bits, &a, 8);
        ord[i].key = ~bits;
        ord[i].idx = i;
    }
    qsort(ord, C->count, sizeof(key_idx), bk_key_idx_cmp);
    /* from the shapes' uniform packing (its items are in shape_items) */
    int fill_ok = 1;
    if (!b->shaped) {
        int used = 0, ok = bk_atlas_pack_shapes(C, n_mesh, b->shape_lo, NULL, N, pad, b->shape_items, &used);
        if (ok < 0) {
            free(ord);
            return oom(b);
        }
        fill_ok = ok && used <= N;
    }
    uint32_t rounds = C->count <= 16 ? 2 : 1;
    for (uint32_t round = 0, start = 0, size = 1; fill_ok && round < rounds;
         start += size, size = C->count <= 16 ? 1 : 2 * size) {
        if (start >= C->count) {
            round++;
            start = 0;
            size = 1;
            if (round == rounds) break;
        }
        uint32_t end = start + size < C->count ? start + size : C->count;
        double   flo = fill[ord[start].idx], fhi = FILL_MAX;
        if (fhi <= flo * 1.004) continue;
        for (int it = 0; it < (C->count <= 16 ? 6 : 3) && fhi > flo * 1.004; ++it) {
            double mid = it == 0 ? fhi : sqrt(flo * fhi);
            for (uint32_t k = start; k < end; ++k) fill[ord[k].idx] = mid;
            int used = 0, ok = bk_atlas_pack_shapes(C, n_mesh, b->scale, fill, N, pad, b->items, &used);
            if (ok < 0) {
                free(ord);
                return oom(b);
            }
            if (ok && used <= N) {
                flo = mid;
                memcpy(b->shape_items, b->items, sizeof(pk_item) * n_items);
            } else fhi = mid;
        }
        for (uint32_t k = start; k < end; ++k) fill[ord[k].idx] = flo;
    }
    free(ord);
    /* kept when its charts cover more world area times density than the uniform packing */
    double a_fill = 0, a_uni = 0;
    for (uint32_t i = 0; i < C->count; ++i) {
        a_fill += C->charts[i].w * C->charts[i].h * b->shape_lo * b->shape_lo * fill[i] * fill[i];
        a_uni += C->charts[i].w * C->charts[i].h * b->scale * b->scale;
    }
    if (fill_ok && a_fill > a_uni * 1.0001) {
        b->scale = b->shape_lo;
        b->shaped = 1;
        memcpy(b->best_items, b->shape_items, sizeof(pk_item) * n_items);
    } else {
        free(fill);
        b->fill = NULL;
    }
    return 0;
}

/* shapes: charts of free size packed again by their shapes, into a strip as wide as the atlas
 * (shape_search), then the fill pass. */
static int stage_shapes(atlas_build *b)
{
    if (b->fixed) return 0;
    if (!b->R && b->MT && b->scale > 0) {
        double lo = 0;
        if (shape_search(&b->C, b->n_mesh, b->scale, b->N, b->pad, b->shape_items, &lo)) return oom(b);
        if (lo >= b->scale) {
            b->scale = lo;
            b->shaped = 1;
            memcpy(b->best_items, b->shape_items, sizeof(pk_item) * b->n_items);
        }
        b->shape_lo = lo;
    }
    if (b->shape_lo > 0 && b->C.count <= FILL_CHARTS && !b->o->no_fill) return fill_pass(b);
    return 0;
}

/* The UVs of the degenerate triangles: all on the one texel of their item. */
static void place_degenerate(atlas_build *b)
{
    const pk_item *bi = &b->best_items[b->C.count];
    bk_atlas      *out = b->out;
    int            N = b->N;
    for (uint32_t t = 0; t < b->MT; ++t) {
        if (!b->g.degen[t]) continue;
        if (out->tri_page) out->tri_page[t] = b->item_page[b->C.count];
        for (int k = 0; k < 3; ++k) {
            out->uv[6 * (size_t)t + 2 * k] = (float)((bi->x + 0.5) / N);
            out->uv[6 * (size_t)t + 2 * k + 1] = (float)((bi->y + 0.5) / N);
        }
    }
}

/* The largest tilt actually reached on planar charts (each triangle keeps cos(tilt) of its
 * area), and the stretch of every chart. */
static int place_stats(atlas_build *b)
{
    const charting *C = &b->C;
    bk_atlas       *out = b->out;
    uint32_t        MT = b->MT;
    double          min_ratio = 1.0, smin = DBL_MAX, smax = 0, l2 = 0, wsum = 0;
    stretch_ctx     sc = { &b->ms, &b->g, C, b->o->tri_scale, malloc(sizeof(double) * 2 * ((size_t)MT + 1)) };
    if (!sc.term) return oom(b);
    bk_parallel_for(MT, 16384, stretch_fn, &sc);
    /* in triangle order, as one loop sums them (the same bits whatever the thread count) */
    for (uint32_t t = 0; t < MT; ++t) {
        if (b->g.degen[t]) continue;
        double ratio = sc.term[2 * (size_t)t];
        if (!C->charts[C->tri_chart[t]].smooth) min_ratio = fmin(min_ratio, ratio);
        smin = fmin(smin, ratio);
        smax = fmax(smax, ratio);
        if (sc.term[2 * (size_t)t + 1] == -1.0) continue; /* no area in the chart */
        l2 += sc.term[2 * (size_t)t + 1];
        wsum += b->g.area[t];
    }
    free(sc.term);
    out->max_cone_deg = (float)(acos(fmin(1.0, min_ratio)) * 180.0 / BK_ATLAS_PI);
    out->density_max = 1.0f;
    for (uint32_t ci = 0; b->fill && ci < C->count; ++ci)
        out->density_max = fmaxf(out->density_max, (float)(b->fill[ci] * b->fill[ci]));
    out->stretch_min = smin < DBL_MAX ? (float)smin : 1.0f;
    out->stretch_max = smin < DBL_MAX ? (float)smax : 1.0f;
    out->stretch_l2 = wsum > 0 ? (float)sqrt(l2 / wsum) : 1.0f;
    for (uint32_t ci = 0; ci < C->count; ++ci) out->smooth_charts += C->charts[ci].smooth;
    return 0;
}

/* place: every triangle's UVs from its item's placement, then the statistics. */
static int stage_place(atlas_build *b)
{
    const bk_atlas_opts *o = b->o;
    bk_atlas            *out = b->out;
    charting            *C = &b->C;
    uint32_t             MT = b->MT;
    int                  N = b->N;
    const double         scale0 = b->scale;
    out->width = out->height = N;
    out->texels_per_unit = (float)(MT ? b->scale : o->rect_texels_per_unit);
    out->chart_count = C->count + b->R;
    if (out->page_count > 1 && !(out->tri_page = malloc(sizeof(uint32_t) * (size_t)b->T))) return oom(b);
    out->close_charts = b->shaped;
    place_ctx pc = { C, b->best_items, b->item_page, b->fill, scale0, b->pad, b->shaped, N, out };
    bk_parallel_for(C->count, 8, place_fn, &pc); /* small chunks: a few charts hold most triangles */
    for (uint32_t t = 0; t < MT; ++t) out->tri_chart[t] = C->tri_chart[t];
    if (b->g.degen_count) place_degenerate(b);
    rect_ctx rc_ = { o, b->best_items + b->n_mesh, b->item_page + b->n_mesh, MT, C->count, N, out };
    bk_parallel_for(b->R, 16384, rect_uv_fn, &rc_);
    return place_stats(b);
}

typedef int (*stage_fn)(atlas_build *b);
#define STAGE_FN(n) stage_##n,
static const stage_fn stage_fns[BK_ATLAS_STAGES] = { BK_ATLAS_STAGE_LIST(STAGE_FN) };
#undef STAGE_FN

static void build_free(atlas_build *b)
{
    bk_atlas_geom_free(&b->g);
    free(b->weld);
    bk_atlas_adjacency_free(&b->A);
    bk_atlas_charts_free(&b->C);
    free(b->items);
    free(b->best_items);
    free(b->shape_items);
    free(b->fill);
    free(b->item_page);
    free(b->seq);
    free(b->run);
    free(b->gtmp);
    bk_atlas_packer_free(&b->P);
}

int bk_atlas_build(const bk_scene *s, const bk_atlas_opts *o, bk_atlas *out, char *err, size_t err_size)
{
    double t0 = bk_time_now(), ts = t0, sim_saved = bk_pool_sim_saved();
    memset(out, 0, sizeof *out);
    atlas_build b;
    memset(&b, 0, sizeof b);
    b.s = s;
    b.o = o;
    b.out = out;
    b.err = err;
    b.err_size = err_size;
    b.name = scene_name(o);
    b.pad = o->padding;
    b.cone = o->cone_deg > 0 ? o->cone_deg : DEFAULT_CONE_DEG;
    b.R = o->rect_count;
    b.T = s->tri_count;
    if (check_opts(&b)) return -1;
    b.MT = b.R ? o->rect_first_tri : b.T;
    b.ms = *s;
    b.ms.tri_count = b.MT;
    int rc = 0;
    for (int k = 0; k < BK_ATLAS_STAGES && rc == 0 && !b.finished; ++k) {
        rc = stage_fns[k](&b);
        stage_done(out, k, &ts, &sim_saved);
    }
    if (rc == 0) finish_stats(out);
    else bk_atlas_free(out);
    out->seconds = bk_time_now() - t0;
    build_free(&b);
    return rc;
}
