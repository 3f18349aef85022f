/* embree_build.c - builds a scene's triangles with Embree 3 (rtcCommitScene, RTC_BUILD_QUALITY_HIGH)
 * and with bk_bvh_build / bk_kd_build on the same thread count, and prints the best of N times of
 * each, so "as fast as Embree" is measured side by side. Not part of baker; built only when CMake
 * finds Embree 3 (Debian: libembree-dev).
 *
 *   embree_build SCENE [--threads N] [--reps N]
 */
#include "bvh.h"
#include "kdtree.h"
#include "pool.h"
#include "loader.h"
#include "scene.h"
#include "util.h"

#include <embree3/rtcore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double embree_build_ms(RTCDevice dev, const bk_scene *s)
{
    RTCScene sc = rtcNewScene(dev);
    rtcSetSceneBuildQuality(sc, RTC_BUILD_QUALITY_HIGH);
    RTCGeometry g = rtcNewGeometry(dev, RTC_GEOMETRY_TYPE_TRIANGLE);
    rtcSetGeometryBuildQuality(g, RTC_BUILD_QUALITY_HIGH);
    float *v =
        rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_VERTEX, 0, RTC_FORMAT_FLOAT3, 3 * sizeof(float), s->vertex_count);
    unsigned *t =
        rtcSetNewGeometryBuffer(g, RTC_BUFFER_TYPE_INDEX, 0, RTC_FORMAT_UINT3, 3 * sizeof(unsigned), s->tri_count);
    memcpy(v, s->positions, 3 * sizeof(float) * s->vertex_count);
    memcpy(t, s->tri_v, 3 * sizeof(unsigned) * s->tri_count);
    rtcCommitGeometry(g);
    rtcAttachGeometry(sc, g);
    rtcReleaseGeometry(g);
    double t0 = bk_time_now();
    rtcCommitScene(sc); /* the build */
    double ms = (bk_time_now() - t0) * 1e3;
    rtcReleaseScene(sc);
    return ms;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    int         threads = 0, reps = 5;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: embree_build SCENE [--threads N] [--reps N]\n");
            return 2;
        }
    }
    if (!path || reps < 1) {
        fprintf(stderr, "usage: embree_build SCENE [--threads N] [--reps N]\n");
        return 2;
    }
    bk_scene s;
    char     err[512];
    if (bk_scene_load(path, &s, err, sizeof err)) {
        fprintf(stderr, "embree_build: %s: %s\n", path, err);
        return 1;
    }
    if (s.vox_instance_count) fprintf(stderr, "embree_build: %s: voxels are left out of the Embree build\n", path);
    bk_pool_set_threads(threads);
    threads = bk_pool_threads();
    char cfg[64];
    snprintf(cfg, sizeof cfg, "threads=%d", threads);
    RTCDevice dev = rtcNewDevice(cfg);
    if (!dev) {
        fprintf(stderr, "embree_build: rtcNewDevice failed\n");
        return 1;
    }

    double e = 1e30, b = 1e30, k = 1e30, sah_b = 0, sah_k = 0;
    embree_build_ms(dev, &s); /* starts Embree's threads, as bk_pool starts on its first call */
    for (int r = 0; r < reps; ++r) {
        double ms = embree_build_ms(dev, &s);
        if (ms < e) e = ms;
        bk_build_opts o = bk_build_opts_default();
        bk_accel      a;
        if (bk_bvh_build(&s, &o, &a, err, sizeof err)) {
            fprintf(stderr, "embree_build: %s\n", err);
            return 1;
        }
        if (a.info.seconds * 1e3 < b) b = a.info.seconds * 1e3;
        sah_b = a.info.sah_cost;
        bk_accel_free(&a);
        if (bk_kd_build(&s, &o, &a, err, sizeof err)) {
            fprintf(stderr, "embree_build: %s\n", err);
            return 1;
        }
        if (a.info.seconds * 1e3 < k) k = a.info.seconds * 1e3;
        sah_k = a.info.sah_cost;
        bk_accel_free(&a);
    }
    printf("%s: %u triangles, %d threads, best of %d: embree3 HIGH %.1f ms, bk bvh %.1f ms (SAH %.2f), bk kdtree %.1f "
           "ms (SAH %.2f)\n",
           path, s.tri_count, threads, reps, e, b, sah_b, k, sah_k);
    rtcReleaseDevice(dev);
    bk_scene_free(&s);
    bk_pool_shutdown();
    return 0;
}
