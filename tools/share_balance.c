/* share_balance.c - how evenly the static interleave of granules (bake.h: rank, ranks, granule)
 * shares a bake's work among ranks, measured in work rather than in time (a shared machine's
 * timings vary by 2x; the traversal's node and triangle visits do not):
 *     build/share_balance SCENE [--size N] [--spp S] [--bounces B]
 * Bakes the atlas's texels on the CPU (one thread) in chunks of 16384 (the smallest granule),
 * recording each chunk's node + triangle visits and seconds; then, for granules of 16384 ...
 * 262144 and 2 ... 256 ranks, the work of the busiest rank against the mean (1.00 = even): the
 * bake phase of a job lasts as long as its busiest rank. Also the mean cost per texel, from which
 * docs/scaling.md puts the gather's cost in proportion. Light with a white sky, as baker bakes
 * a scene without lights. */
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "loader.h"
#include "raster.h"
#include "scene.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *path = NULL;
    int         size = 1024, spp = 1, bounces = 1;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--spp") && i + 1 < argc) spp = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bounces") && i + 1 < argc) bounces = atoi(argv[++i]);
        else path = argv[i];
    }
    if (!path || size < 16 || spp < 1 || bounces < 0) {
        fprintf(stderr, "usage: share_balance SCENE [--size N] [--spp S] [--bounces B]\n");
        return 2;
    }
    char     err[1024];
    bk_scene s;
    if (bk_scene_load(path, &s, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    if (bk_accel_build(&s, BK_ACCEL_BVH, &bo, &a, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_atlas      at;
    bk_atlas_opts ao;
    bk_atlas_opts_default(&ao);
    ao.size = size;
    ao.scene_path = path;
    bk_texel *tx = NULL;
    uint32_t  n = 0;
    if (bk_atlas_build(&s, &ao, &at, err, sizeof err) || bk_atlas_rasterize(&s, &at, &tx, &n, NULL, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_bake_data d;
    if (bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&a);
    if (be->i->upload(be, &av, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    bk_bake_view v = bk_bake_data_view(&d, &a);

    float dx = a.hi.x - a.lo.x, dy = a.hi.y - a.lo.y, dz = a.hi.z - a.lo.z, diag = sqrtf(dx * dx + dy * dy + dz * dz);
    bk_bake_run_opts o;
    memset(&o, 0, sizeof o);
    o.params.mode = BK_BAKE_LIGHT;
    o.params.spp = (uint32_t)spp;
    o.params.bounces = (uint32_t)bounces;
    o.params.seed = 1;
    o.params.eps = 1e-4f * diag;
    o.params.texel_world = 1.0f / at.texels_per_unit;
    o.params.sun_cos = 1.0f;
    o.params.ao_distance = 0.1f * diag;
    o.params.sky[0] = o.params.sky[1] = o.params.sky[2] = 1.0f;
    o.trace = bk_trace_opts_default();
    o.trace.threads = 1;
    o.max_launch_ms = 1000;

    enum { CHUNK = 16384 };
    const uint32_t nc = (n + CHUNK - 1) / CHUNK;
    double        *work = calloc(nc, sizeof(double)), *secs = calloc(nc, sizeof(double));
    bk_f4         *col = malloc(sizeof(bk_f4) * CHUNK);
    double         total_work = 0, total_secs = 0;
    uint64_t       rays = 0;
    for (uint32_t c = 0; c < nc; ++c) {
        uint32_t         len = n - c * CHUNK < CHUNK ? n - c * CHUNK : CHUNK;
        bk_bake_run_opts oc = o;
        oc.texel_col = col;
        bk_bake_result r;
        /* a chunk alone (its texels numbered from 0: other random numbers, the same cost) */
        if (bk_bake_texels(be, &v, tx + (size_t)c * CHUNK, len, at.width, at.height * at.page_count, &oc, NULL, NULL,
                           &r, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        work[c] = (double)(r.totals.nodes + r.totals.tris);
        secs[c] = r.totals.seconds;
        total_work += work[c];
        total_secs += secs[c];
        rays += r.totals.rays;
    }
    printf("%s at %dx%d, %u texels, %u chunks of %u; %d spp, %d bounces: %.1f rays, %.0f node+triangle visits, %.2f us "
           "per texel "
           "(one thread)\n",
           path, at.width, at.height, n, nc, (unsigned)CHUNK, spp, bounces, (double)rays / n, total_work / n,
           1e6 * total_secs / n);
    printf("busiest rank / mean, by node+triangle visits (by seconds in brackets)\n%8s", "granule");
    const uint32_t ranks_list[] = { 2, 4, 8, 16, 64, 128, 256 };
    const int      nr = (int)(sizeof ranks_list / sizeof ranks_list[0]);
    for (int k = 0; k < nr; ++k) printf(" %16u", ranks_list[k]);
    printf("   <- ranks\n");
    for (uint32_t G = CHUNK; G <= (1u << 18); G *= 2) {
        printf("%8u", G);
        for (int k = 0; k < nr; ++k) {
            uint32_t R = ranks_list[k], per = G / CHUNK;
            double  *rw = calloc(R, sizeof(double)), *rs = calloc(R, sizeof(double)), mw = 0, ms = 0;
            for (uint32_t c = 0; c < nc; ++c) {
                rw[(c / per) % R] += work[c];
                rs[(c / per) % R] += secs[c];
            }
            for (uint32_t r = 0; r < R; ++r) {
                if (rw[r] > mw) mw = rw[r];
                if (rs[r] > ms) ms = rs[r];
            }
            char cell[64];
            snprintf(cell, sizeof cell, "%.2f (%.2f)%s", mw / (total_work / R), ms / (total_secs / R),
                     bk_bake_granule(n, R) == G ? "*" : " ");
            printf(" %16s", cell);
            free(rw);
            free(rs);
        }
        printf("\n");
    }
    printf("* the granule bk_bake_granule picks for these texels and ranks\n");
    free(work);
    free(secs);
    free(col);
    free(tx);
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_atlas_free(&at);
    bk_accel_free(&a);
    bk_scene_free(&s);
    return 0;
}
