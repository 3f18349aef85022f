/* bk_test_bake.h - what the bake driver's tests start from: the project's Cornell box
 * (scenes/cornell.obj) with its BVH and a 160x160 atlas, and their bake's settings. Failures are
 * counted (bk_test.h). */
#ifndef BK_TEST_BAKE_H
#define BK_TEST_BAKE_H

#include "bk_test.h"
#include "accel_build.h"
#include "atlas.h"
#include "backend.h"
#include "bake.h"
#include "loader.h"
#include "scene.h"

#include <stdio.h>
#include <string.h>

static inline void bk_test_cornell_atlas(bk_scene *s, bk_accel *a, bk_atlas *at)
{
    static char path[1024];
    char        err[1024];
    snprintf(path, sizeof path, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    BK_EXPECTF(bk_scene_load(path, s, err, sizeof err) == 0, "%s", err);
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(s, BK_ACCEL_BVH, &bo, a, err, sizeof err) == 0, "%s", err);
    bk_atlas_opts ao;
    bk_atlas_opts_default(&ao);
    ao.size = 160;
    ao.scene_path = path;
    BK_EXPECTF(bk_atlas_build(s, &ao, at, err, sizeof err) == 0, "%s", err);
}

/* Their bake: light, 8 spp, 1 bounce, seed 7, a grey sky; the caller sets the launch budget. */
static inline void bk_test_bake_opts(bk_bake_run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->params.mode = BK_BAKE_LIGHT;
    o->params.spp = 8;
    o->params.bounces = 1;
    o->params.seed = 7;
    o->params.eps = 1e-4f;
    o->params.texel_world = 0.01f;
    o->params.sun_cos = 1.0f;
    o->params.ao_distance = 1.0f;
    o->params.sky[0] = o->params.sky[1] = o->params.sky[2] = 0.5f;
    o->trace = bk_trace_opts_default();
}

#endif /* BK_TEST_BAKE_H */
