/* embree_trace.c - traces the rays of `baker bench trace` (N seeded diffuse rays, seed 1) with
 * baker's CPU backend, binary BVH and 4-wide BVH, and with Embree 3 single rays (rtcIntersect1 /
 * rtcOccluded1) on the same threads, and prints Mrays/s side by side with the ratio. Runs are
 * alternated (baker wide, baker binary, Embree, per repetition) and the best of N is kept, so a
 * noisy shared machine slows all three alike. Not part of baker; built only when CMake finds
 * Embree 3 (Debian: libembree-dev).
 *
 *   embree_trace SCENE [--rays N] [--threads N] [--reps N] [--quality low|medium|high]
 *                      [--isa auto|scalar|sse4.1|avx2]   (the wide traversal's code; default auto)
 *
 * Two rates: wall clock (the best of N), and rays per CPU second times the thread count (the best
 * of N: what the threads trace while they hold a core, steadier when others load the machine).
 * It also says how many rays agree: wide against binary exactly (t and triangle, closest; hit or
 * miss, any), and baker against Embree by hit or miss and t within 1e-4 relative.
 */
#include "bvh.h"
#include "backend.h"
#include "bvh_wide.h"
#include "rays.h"
#include "loader.h"
#include "scene.h"
#include "util.h"

#include <embree3/rtcore.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Seconds of CPU time the whole process has used: on a shared machine, where other work takes the
 * cores away, n / (CPU seconds / threads) is steadier than the wall-clock rate. */
static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct ejob {
    RTCScene             scene;
    const bk_ray        *rays;
    bk_hit              *hits;
    uint64_t             n;
    int                  any;
    atomic_uint_fast64_t next;
} ejob;

static void *embree_worker(void *arg)
{
    ejob                      *j = arg;
    struct RTCIntersectContext ctx;
    rtcInitIntersectContext(&ctx);
    for (;;) {
        uint64_t b = atomic_fetch_add(&j->next, 1024);
        if (b >= j->n) break;
        uint64_t e = b + 1024 < j->n ? b + 1024 : j->n;
        for (uint64_t i = b; i < e; ++i) {
            const bk_ray *r = &j->rays[i];
            if (j->any) {
                struct RTCRay ray;
                ray.org_x = r->ox;
                ray.org_y = r->oy;
                ray.org_z = r->oz;
                ray.tnear = r->tmin;
                ray.dir_x = r->dx;
                ray.dir_y = r->dy;
                ray.dir_z = r->dz;
                ray.time = 0.0f;
                ray.tfar = r->tmax;
                ray.mask = 0xFFFFFFFFu;
                ray.id = 0;
                ray.flags = 0;
                rtcOccluded1(j->scene, &ctx, &ray);
                j->hits[i].t = ray.tfar < 0.0f ? 0.0f : BK_INF; /* occluded: tfar = -inf */
                j->hits[i].tri = ray.tfar < 0.0f ? 0u : BK_NO_HIT;
            } else {
                struct RTCRayHit rh;
                rh.ray.org_x = r->ox;
                rh.ray.org_y = r->oy;
                rh.ray.org_z = r->oz;
                rh.ray.tnear = r->tmin;
                rh.ray.dir_x = r->dx;
                rh.ray.dir_y = r->dy;
                rh.ray.dir_z = r->dz;
                rh.ray.time = 0.0f;
                rh.ray.tfar = r->tmax;
                rh.ray.mask = 0xFFFFFFFFu;
                rh.ray.id = 0;
                rh.ray.flags = 0;
                rh.hit.geomID = RTC_INVALID_GEOMETRY_ID;
                rh.hit.instID[0] = RTC_INVALID_GEOMETRY_ID;
                rtcIntersect1(j->scene, &ctx, &rh);
                int hit = rh.hit.geomID != RTC_INVALID_GEOMETRY_ID;
                j->hits[i].t = hit ? rh.ray.tfar : BK_INF;
                j->hits[i].tri = hit ? rh.hit.primID : BK_NO_HIT;
            }
        }
    }
    return NULL;
}

static double embree_trace(RTCScene sc, const bk_ray *rays, bk_hit *hits, uint64_t n, int any, int threads)
{
    ejob j;
    j.scene = sc;
    j.rays = rays;
    j.hits = hits;
    j.n = n;
    j.any = any;
    atomic_init(&j.next, 0);
    pthread_t th[256];
    double    t0 = bk_time_now();
    int       started = 1;
    for (int i = 1; i < threads && i < 256 && pthread_create(&th[i], NULL, embree_worker, &j) == 0; ++i)
        started = i + 1;
    embree_worker(&j);
    for (int i = 1; i < started; ++i) pthread_join(th[i], NULL);
    return bk_time_now() - t0;
}

static int isa = BK_WBVH_ISA_AUTO;

static double baker_trace(bk_backend *be, const bk_ray *rays, bk_hit *hits, uint64_t n, int any, int width, int threads,
                          bk_trace_totals *tot)
{
    bk_trace_opts o = bk_trace_opts_default();
    o.any_hit = any;
    o.bvh_width = width;
    o.threads = threads;
    o.cpu_isa = isa;
    char err[256];
    if (be->i->trace(be, rays, hits, n, &o, tot, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s\n", err);
        exit(1);
    }
    return tot->seconds;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *quality = "medium"; /* Embree's default */
    uint64_t    nrays = 1000000;
    int         threads = 0, reps = 5;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rays") && i + 1 < argc) nrays = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--quality") && i + 1 < argc) quality = argv[++i];
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            ++i;
            isa = !strcmp(argv[i], "scalar")   ? BK_WBVH_ISA_SCALAR
                  : !strcmp(argv[i], "sse4.1") ? BK_WBVH_ISA_SSE41
                  : !strcmp(argv[i], "avx2")   ? BK_WBVH_ISA_AVX2
                                               : BK_WBVH_ISA_AUTO;
        } else if (argv[i][0] != '-' && !path) path = argv[i];
        else path = NULL, i = argc;
    }
    if (!path || reps < 1 || nrays < 1) {
        fprintf(stderr, "usage: embree_trace SCENE [--rays N] [--threads N] [--reps N] [--quality low|medium|high] "
                        "[--isa auto|scalar|sse4.1|avx2]\n");
        return 2;
    }
    if (threads < 1) threads = bk_cpu_threads();
    bk_scene s;
    char     err[512];
    if (bk_scene_load(path, &s, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s: %s\n", path, err);
        return 1;
    }
    if (s.vox_instance_count) {
        fprintf(stderr, "embree_trace: %s: voxel scenes are not compared\n", path);
        return 1;
    }
    bk_ray *rays = NULL;
    if (bk_rays_diffuse(&s, nrays, 1, &rays, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s\n", err);
        return 1;
    }

    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    if (bk_bvh_build(&s, &bo, &a, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s\n", err);
        return 1;
    }
    bk_accel_view v = bk_accel_get_view(&a);
    bk_backend   *be = bk_backend_cpu_init();
    if (!be || be->i->upload(be, &v, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s\n", err);
        return 1;
    }
    bk_wbvh w; /* only for its size and depth in the header line */
    if (bk_wbvh_build(&v, &w, err, sizeof err)) {
        fprintf(stderr, "embree_trace: %s\n", err);
        return 1;
    }

    char cfg[64];
    snprintf(cfg, sizeof cfg, "threads=%d", threads);
    RTCDevice dev = rtcNewDevice(cfg);
    if (!dev) {
        fprintf(stderr, "embree_trace: rtcNewDevice failed\n");
        return 1;
    }
    RTCScene             sc = rtcNewScene(dev);
    enum RTCBuildQuality q = !strcmp(quality, "low")      ? RTC_BUILD_QUALITY_LOW
                             : !strcmp(quality, "medium") ? RTC_BUILD_QUALITY_MEDIUM
                                                          : RTC_BUILD_QUALITY_HIGH;
    rtcSetSceneBuildQuality(sc, q);
    RTCGeometry g = rtcNewGeometry(dev, RTC_GEOMETRY_TYPE_TRIANGLE);
    rtcSetGeometryBuildQuality(g, q);
    float *vb =
        rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3, 3 * sizeof(float), s.vertex_count);
    unsigned *ib =
        rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, 3 * sizeof(unsigned), s.tri_count);
    memcpy(vb, s.positions, 3 * sizeof(float) * s.vertex_count);
    memcpy(ib, s.tri_v, 3 * sizeof(unsigned) * s.tri_count);
    rtcCommitGeometry(g);
    rtcAttachGeometry(sc, g);
    rtcReleaseGeometry(g);
    rtcCommitScene(sc);

    bk_hit *hw = malloc(sizeof(bk_hit) * nrays), *hb = malloc(sizeof(bk_hit) * nrays),
           *he = malloc(sizeof(bk_hit) * nrays);
    if (!hw || !hb || !he) {
        fprintf(stderr, "embree_trace: out of memory\n");
        return 1;
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%s: %u triangles, %llu diffuse rays (seed 1, as baker bench trace), %d threads, best of %d, embree3 %s, "
           "baker %d-wide BVH %s (%u nodes, depth %u; binary %u nodes, depth %u)\n",
           name, s.tri_count, (unsigned long long)nrays, threads, reps, quality, BK_WBVH_WIDTH,
           bk_wbvh_isa_name(isa ? (isa < bk_wbvh_isa_best() ? isa : bk_wbvh_isa_best()) : bk_wbvh_isa_best()),
           w.node_count, w.depth, v.bvh_node_count, v.depth);
    printf("  %-7s %12s %12s %12s %9s %9s %9s %9s %12s %12s\n", "query", "bkW Mrays/s", "bk2 Mrays/s", "emb Mrays/s",
           "bkW/emb", "bk2/emb", "bkW/bk2", "nodes/r", "bkW!=bk2", "bkW!=emb");
    for (int any = 0; any < 2; ++any) {
        double          best[3] = { 1e30, 1e30, 1e30 }, cbest[3] = { 1e30, 1e30, 1e30 };
        bk_trace_totals tw, tb;
        for (int r = 0; r < reps; ++r) {
            for (int k = 0; k < 3; ++k) {
                double c0 = cpu_now(), t;
                if (k < 2) t = baker_trace(be, rays, k ? hb : hw, nrays, any, k ? 2 : 0, threads, k ? &tb : &tw);
                else t = embree_trace(sc, rays, he, nrays, any, threads);
                double c = (cpu_now() - c0) / threads;
                if (t < best[k]) best[k] = t;
                if (c < cbest[k]) cbest[k] = c;
            }
        }
        uint64_t bad_bin = 0, bad_emb = 0;
        for (uint64_t i = 0; i < nrays; ++i) {
            int hit_w = hw[i].tri != BK_NO_HIT, hit_b = hb[i].tri != BK_NO_HIT, hit_e = he[i].tri != BK_NO_HIT;
            int diff =
                any ? hit_w != hit_b : hw[i].tri != hb[i].tri || bk_float_bits(hw[i].t) != bk_float_bits(hb[i].t);
            if (diff && bad_bin++ < 3)
                fprintf(stderr,
                        "  %s: ray %llu (%.9g %.9g %.9g %.9g, %.9g %.9g %.9g %.9g): wide (t %.9g, tri %d), binary (t "
                        "%.9g, tri %d)\n",
                        any ? "any" : "closest", (unsigned long long)i, rays[i].ox, rays[i].oy, rays[i].oz,
                        rays[i].tmin, rays[i].dx, rays[i].dy, rays[i].dz, rays[i].tmax, hw[i].t, (int)hw[i].tri,
                        hb[i].t, (int)hb[i].tri);
            if (hit_w != hit_e) bad_emb++;
            else if (!any && hit_w && !(fabsf(hw[i].t - he[i].t) <= 1e-4f * fmaxf(1.0f, fabsf(he[i].t)))) bad_emb++;
        }
        double m[3];
        for (int k = 0; k < 3; ++k) m[k] = (double)nrays / best[k] / 1e6;
        printf("  %-7s %12.2f %12.2f %12.2f %8.2fx %8.2fx %8.2fx %9.1f %12llu %12llu\n", any ? "any" : "closest", m[0],
               m[1], m[2], m[0] / m[2], m[1] / m[2], m[0] / m[1], (double)tw.nodes / (double)nrays,
               (unsigned long long)bad_bin, (unsigned long long)bad_emb);
        for (int k = 0; k < 3; ++k) m[k] = (double)nrays / cbest[k] / 1e6;
        printf("  %-7s %12.2f %12.2f %12.2f %8.2fx %8.2fx %8.2fx   (per CPU second x threads)\n",
               any ? "any" : "closest", m[0], m[1], m[2], m[0] / m[2], m[1] / m[2], m[0] / m[1]);
        fflush(stdout);
    }
    rtcReleaseScene(sc);
    rtcReleaseDevice(dev);
    bk_wbvh_free(&w);
    bk_backend_free(be);
    bk_accel_free(&a);
    free(rays);
    free(hw);
    free(hb);
    free(he);
    bk_scene_free(&s);
    return 0;
}
