/* atlas_bench.c - times bk_atlas_build and bk_atlas_rasterize on scenes and prints charts,
 * utilisation and stretch:
 *     build/atlas_bench [--size N] [--png DIR] [--reps R] [--threads T] [--stages] [--sim P] [--waste]
 *                       [--pages-auto] [--texels-per-voxel N] [--refs] [--raster-general] [--lscm]
 *                       [--solver 0|1] [--spec 0|1] SCENE...
 * Best of --reps builds (and rasterizations), wall clock and CPU time of all threads (--threads:
 * the pool's threads, 0 all cores; on a shared machine the CPU time of a one-thread run is what
 * an idle one would take). --stages: the best build's time per stage (bk_atlas_stage_names).
 * --sim P (with --threads 1): also the best build's time and stages as P threads would take them
 * (bk_pool_sim: the serial parts and the chunks as measured, no cost for waking threads), for a
 * machine with more cores than this one. "atlas" is the two together, as baker's --stats
 * seconds.atlas. With --png, each atlas is also written as DIR/atlas_NAME.png, one random colour
 * per chart. The line ends with hashes of the atlas (UVs and charts) and of its raster (texels
 * and coverage). --waste: where the texels that bake nothing are (the padding ring around charts,
 * gaps, rows left below them), the ring by chart size, and the charts' boundary length (which the
 * ring follows). A .vox scene is charted as a bake charts it: its voxel surface's quads as
 * rectangles of --texels-per-voxel (default 2) texels a voxel; --pages-auto packs pages of --size
 * as baker's --pages auto does, and each page's fill (the share of its texels charts cover) is
 * printed. --refs: "raster" times bk_atlas_rasterize_refs (what a GPU bake calls) instead of
 * bk_atlas_rasterize; --raster-general: an atlas of rectangles alone rasterized by the general pass
 * (bk_atlas_raster_general), which must print the same texels hash. --lscm: the smooth charts'
 * conformal solves per build (atlas_lscm.h): their count, iterations, those stopped at the cap,
 * unknowns and thread CPU time; --solver 1: the direct solve instead of CG. --spec 0: the chart
 * passes' speculation off (bk_atlas_spec: the same atlas, each pass's looks in its serial loop). */
#include "atlas.h"
#include "atlas_internal.h"
#include "atlas_lscm.h"
#include "image.h"
#include "pool.h"
#include "loader.h"
#include "raster.h"
#include "scene.h"
#include "util.h"
#include "voxmesh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Where the texels that bake nothing are: within `pad` texels (Chebyshev) of a chart (the padding
 * ring, which grows with the charts' boundary), in the rows below the lowest chart texel (the
 * scale search's shortfall), or elsewhere (gaps the packing left between charts). */
static void waste_report(const bk_atlas *a, int pad)
{
    int       W = a->width, H = a->height * a->page_count;
    uint32_t *ids = malloc(sizeof(uint32_t) * (size_t)W * H);
    uint8_t  *near = calloc((size_t)W * H, 1);
    if (!ids || !near) {
        free(ids);
        free(near);
        return;
    }
    bk_atlas_chart_ids(a, ids);
    int last_row = -1;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            if (ids[(size_t)y * W + x] == BK_NONE) continue;
            if (y > last_row) last_row = y;
            for (int dy = -pad; dy <= pad; ++dy)
                for (int dx = -pad; dx <= pad; ++dx) {
                    int xx = x + dx, yy = y + dy;
                    if (xx >= 0 && yy >= 0 && xx < W && yy < H) near[(size_t)yy * W + xx] = 1;
                }
        }
    uint64_t cov = 0, ring = 0, below = 0, gap = 0;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            size_t p = (size_t)y * W + x;
            if (ids[p] != BK_NONE) cov++;
            else if (near[p]) ring++;
            else if (y > last_row) below++;
            else gap++;
        }
    /* the charts' boundary (texel edges between a chart texel and an empty one): a ring
     * close to it means the charts interlock, a larger one means slivers the packing left */
    uint64_t edges = 0;
    for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
            size_t p = (size_t)y * W + x;
            if (ids[p] == BK_NONE) continue;
            edges += (x > 0 && ids[p - 1] == BK_NONE) + (x + 1 < W && ids[p + 1] == BK_NONE) +
                     (y > 0 && ids[p - W] == BK_NONE) + (y + 1 < H && ids[p + W] == BK_NONE);
        }
    /* per chart: its texels and the empty texels within pad of it (a texel near two charts
     * counts for both), summed by the chart's size */
    uint32_t  nc = a->chart_count + 1;
    uint64_t *tex = calloc(nc, sizeof(uint64_t)), *rng = calloc(nc, sizeof(uint64_t));
    uint32_t *seen = malloc(sizeof(uint32_t) * nc);
    if (tex && rng && seen) {
        for (uint32_t c = 0; c < nc; ++c) seen[c] = UINT32_MAX;
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) {
                size_t p = (size_t)y * W + x;
                if (ids[p] != BK_NONE) {
                    if (ids[p] < nc) tex[ids[p]]++;
                    continue;
                }
                for (int dy = -pad; dy <= pad; ++dy)
                    for (int dx = -pad; dx <= pad; ++dx) {
                        int xx = x + dx, yy = y + dy;
                        if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
                        uint32_t c = ids[(size_t)yy * W + xx];
                        if (c >= nc || seen[c] == (uint32_t)p) continue;
                        seen[c] = (uint32_t)p;
                        rng[c]++;
                    }
            }
        printf("  by chart size (texels): charts, their texels %% and ring %% of the atlas:");
        for (uint64_t lo = 1, hi = 16; lo < (uint64_t)W * H; lo = hi, hi *= 4) {
            uint64_t n = 0, t = 0, r = 0;
            for (uint32_t c = 0; c < nc; ++c)
                if (tex[c] >= lo && tex[c] < hi) {
                    n++;
                    t += tex[c];
                    r += rng[c];
                }
            if (n)
                printf(" [%llu, %llu) %llu %.1f %.1f;", (unsigned long long)lo, (unsigned long long)hi,
                       (unsigned long long)n, 100.0 * t / ((double)W * H), 100.0 * r / ((double)W * H));
        }
        printf("\n");
    }
    free(tex);
    free(rng);
    free(seen);
    printf("  chart boundary: %llu texel edges (%.1f %% of the atlas)\n", (unsigned long long)edges,
           100.0 * edges / ((double)W * H));
    double n = (double)W * H / 100.0;
    printf("  texels: charts %.1f %%, padding ring %.1f %%, gaps %.1f %%, rows below the charts %.1f %% (%d rows)\n",
           cov / n, ring / n, gap / n, below / n, H - 1 - last_row);
    free(ids);
    free(near);
}

int main(int argc, char **argv)
{
    int         size = 1024, reps = 3, show_stages = 0, show_waste = 0, sim = 0, pages_auto = 0, tpv = 2, refs = 0;
    int         show_lscm = 0;
    const char *png = NULL;
    char        err[512];
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            size = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--png") && i + 1 < argc) {
            png = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--stages")) {
            show_stages = 1;
            continue;
        }
        if (!strcmp(argv[i], "--pages-auto")) {
            pages_auto = 1;
            continue;
        }
        if (!strcmp(argv[i], "--raster-general")) {
            bk_atlas_raster_general = 1;
            continue;
        }
        if (!strcmp(argv[i], "--refs")) {
            refs = 1;
            continue;
        }
        if (!strcmp(argv[i], "--texels-per-voxel") && i + 1 < argc) {
            tpv = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--lscm")) {
            show_lscm = bk_atlas_lscm_profile = 1;
            continue;
        }
        if (!strcmp(argv[i], "--solver") && i + 1 < argc) {
            bk_atlas_lscm_solver = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--spec") && i + 1 < argc) {
            bk_atlas_spec = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--waste")) {
            show_waste = 1;
            continue;
        }
        if (!strcmp(argv[i], "--sim") && i + 1 < argc) {
            sim = atoi(argv[++i]);
            bk_pool_sim(sim);
            continue;
        }
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            reps = atoi(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            bk_pool_set_threads(atoi(argv[++i]));
            continue;
        }
        bk_scene s;
        if (bk_scene_load(argv[i], &s, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        bk_atlas_opts o;
        bk_atlas_opts_default(&o);
        o.size = size;
        o.scene_path = argv[i];
        o.pages_auto = pages_auto;
        /* a .vox scene: its voxel surface, the quads as rectangles (as baker's load_voxels) */
        bk_voxmesh     vm;
        bk_atlas_rect *rects = NULL;
        memset(&vm, 0, sizeof vm);
        if (s.vox_instance_count > 0) {
            if (bk_voxmesh_build(&s, &vm, err, sizeof err) || !(rects = bk_voxmesh_rects(&vm, tpv, &o))) {
                fprintf(stderr, "%s: %s\n", argv[i], rects ? err : "out of memory");
                return 1;
            }
            bk_scene_free(&s);
            s = vm.scene;
            memset(&vm.scene, 0, sizeof vm.scene);
            if (pages_auto && vm.first_quad_tri > 0) o.texels_per_unit = (float)tpv;
        }
        bk_atlas a;
        double   best = 1e30, best_cpu = 1e30, best_r = 1e30, best_rcpu = 1e30, stages[BK_ATLAS_STAGES],
               stages_sim[BK_ATLAS_STAGES];
        uint64_t tx_hash = 0;
        memset(&bk_atlas_lscm_stats, 0, sizeof bk_atlas_lscm_stats);
        for (int r = 0; r < reps; ++r) {
            double  t0 = bk_time_now();
            clock_t c0 = clock();
            if (bk_atlas_build(&s, &o, &a, err, sizeof err) != 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            double t = bk_time_now() - t0, tc = (double)(clock() - c0) / CLOCKS_PER_SEC;
            if (t < best) {
                best = t;
                memcpy(stages, a.stage_seconds, sizeof stages);
                memcpy(stages_sim, a.stage_seconds_sim, sizeof stages);
            }
            if (tc < best_cpu) best_cpu = tc;
            bk_texel     *tx = NULL;
            bk_texel_ref *rf = NULL;
            uint32_t      ntx = 0;
            uint8_t      *cov = NULL;
            t0 = bk_time_now();
            c0 = clock();
            if ((refs ? bk_atlas_rasterize_refs(&s, &a, &rf, &ntx, &cov, err, sizeof err)
                      : bk_atlas_rasterize(&s, &a, &tx, &ntx, &cov, err, sizeof err)) != 0) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            t = bk_time_now() - t0;
            tc = (double)(clock() - c0) / CLOCKS_PER_SEC;
            if (t < best_r) best_r = t;
            if (tc < best_rcpu) best_rcpu = tc;
            /* FNV-1a of the texels and the coverage: the same raster prints the same hash */
            tx_hash = 1469598103934665603ull;
            const unsigned char *tb[2] = { refs ? (const unsigned char *)rf : (const unsigned char *)tx, cov };
            size_t tn[2] = { (refs ? sizeof(bk_texel_ref) : sizeof(bk_texel)) * (size_t)ntx, BK_ATLAS_PIXELS(&a) };
            for (int k = 0; k < 2; ++k)
                for (size_t b = 0; b < tn[k]; ++b) tx_hash = (tx_hash ^ tb[k][b]) * 1099511628211ull;
            if (r + 1 == reps && a.page_count > 1 && cov) {
                size_t pp = (size_t)a.width * a.height;
                printf("  %d pages of %dx%d, fill:", a.page_count, a.width, a.height);
                for (int p = 0; p < a.page_count; ++p) {
                    uint64_t nc = 0;
                    for (size_t k = 0; k < pp; ++k) nc += cov[p * pp + k];
                    printf(" %.2f %%", 100.0 * nc / pp);
                }
                /* the rectangles' blocks with their padding, as the packer fills a page of size + pad */
                if (o.rect_count && a.tri_page) {
                    double *pa = calloc((size_t)a.page_count, sizeof(double)), side = a.width + o.padding;
                    for (uint32_t q = 0; pa && q < o.rect_count; ++q)
                        pa[a.tri_page[a.rect_first_tri + 2 * (size_t)q]] +=
                            (double)(o.rects[q].w + o.padding) * (o.rects[q].h + o.padding);
                    printf("; padded blocks:");
                    for (int p = 0; pa && p < a.page_count; ++p) printf(" %.2f %%", 100.0 * pa[p] / (side * side));
                    free(pa);
                }
                printf("\n");
            }
            free(tx);
            free(rf);
            free(cov);
            if (r + 1 < reps) bk_atlas_free(&a);
        }
        /* FNV-1a of the UVs and charts: the same atlas prints the same hash */
        uint64_t             hash = 1469598103934665603ull;
        const unsigned char *bytes[2] = { (const unsigned char *)a.uv, (const unsigned char *)a.tri_chart };
        size_t nbytes[2] = { sizeof(float) * 6 * (size_t)a.tri_count, sizeof(uint32_t) * (size_t)a.tri_count };
        for (int k = 0; k < 2; ++k)
            for (size_t b = 0; b < nbytes[k]; ++b) hash = (hash ^ bytes[k][b]) * 1099511628211ull;
        const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
        printf("%-24s %7u tris %6u charts (%u smooth)  util %5.1f %%  area %5.1f %%  stretch L2 %.3f, area %.2f..%.2f  "
               "build %.3f s (cpu %.3f)  raster %.3f s (cpu %.3f)  T%d  %016llx  texels %016llx\n",
               name, s.tri_count, a.chart_count, a.smooth_charts, 100.0 * a.utilisation, 100.0 * a.area_utilisation,
               (double)a.stretch_l2, (double)a.stretch_min, (double)a.stretch_max, best, best_cpu, best_r, best_rcpu,
               bk_pool_threads(), (unsigned long long)hash, (unsigned long long)tx_hash);
        if (show_stages) {
            printf("  stages of the best build:");
            for (int k = 0; k < BK_ATLAS_STAGES; ++k) printf(" %s %.3f", bk_atlas_stage_names[k], stages[k]);
            printf("\n");
        }
        if (sim) {
            double tot = 0;
            for (int k = 0; k < BK_ATLAS_STAGES; ++k) tot += stages_sim[k];
            printf("  on %d threads (simulated): stages %.3f s:", sim, tot);
            for (int k = 0; k < BK_ATLAS_STAGES; ++k) printf(" %s %.3f", bk_atlas_stage_names[k], stages_sim[k]);
            printf("\n");
        }
        if (show_lscm) {
            const bk_atlas_lscm_counts *L = &bk_atlas_lscm_stats;
            printf("  lscm per build: %.0f solves, %.0f iterations, %.0f at the cap, %.0f vertices, %.3f s cpu\n",
                   (double)L->solves / reps, (double)L->iters / reps, (double)L->capped / reps, (double)L->verts / reps,
                   1e-9 * (double)L->ns / reps);
        }
        if (show_waste) waste_report(&a, o.padding);
        if (png) {
            char path[1024];
            snprintf(path, sizeof path, "%s/atlas_%s.png", png, name);
            float *rgb = malloc(sizeof(float) * 3 * BK_ATLAS_PIXELS(&a));
            bk_atlas_debug_rgb(&a, rgb);
            if (bk_image_write(path, rgb, a.width, a.height * a.page_count, 1.0f, err, sizeof err))
                fprintf(stderr, "%s\n", err);
            free(rgb);
        }
        bk_atlas_free(&a);
        bk_scene_free(&s);
        bk_voxmesh_free(&vm);
        free(rects);
    }
    return 0;
}
