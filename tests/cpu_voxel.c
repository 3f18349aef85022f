/* cpu_voxel.c - the voxel path against the triangle path on the same surface (CPU backend).
 *
 * Random voxel scenes (all 48 rotations among the instances, odd and even sizes, sparse and
 * dense models) are traced natively (instances in a BVH or KD-tree, a brick DDA inside) and, as
 * the reference, as the triangles of their faces (bk_test_voxels.h) in a BVH. For every accel and
 * stack strategy, closest and any hit, on rays from outside the solid and rays leaving the faces:
 * the same hit or miss, t within 1e-6 relative, and the same face id (in a scene whose instances
 * overlap, two instances' coincident faces may tie: counted, not failed). The same for every
 * corpus .vox. Statistics say the DDA skipped work (fewer leaf tests than the triangle path).
 */
#include "bvh.h"
#include "kdtree.h"
#include "backend.h"
#include "loader.h"
#include "bk_test.h"
#include "bk_test_voxels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static double worst_vox, worst_tri;

/* t of the ray at the plane of voxel face `id` (a world plane at an integer), in double: the
 * plane is found from the ray's voxel-path hit point rounded to the nearest integer on the face's
 * axis. */
static double exact_t(const bk_ray *r, uint32_t id, float t)
{
    int    axis = (int)(id % 6) / 2;
    double o[3] = { r->ox, r->oy, r->oz }, d[3] = { r->dx, r->dy, r->dz };
    double plane = floor(o[axis] + (double)t * d[axis] + 0.5);
    return (plane - o[axis]) / d[axis];
}

static void trace(const bk_accel *a, const bk_ray *rays, bk_hit *hits, uint32_t n, int mode, int any, int size,
                  bk_trace_totals *t)
{
    char          err[256];
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view v = bk_accel_get_view(a);
    BK_EXPECT(be->i->upload(be, &v, err, sizeof err) == 0);
    bk_trace_opts o = bk_trace_opts_default();
    o.stack_mode = mode;
    o.any_hit = any;
    o.stack_size = size;
    for (uint32_t i = 0; i < n; ++i) {
        hits[i].t = -1.0f;
        hits[i].tri = 0xDEADBEEFu;
    } /* poison */
    BK_EXPECTF(be->i->trace(be, rays, hits, n, &o, t, err, sizeof err) == 0, "%s", err);
    bk_backend_free(be);
}

/* 1 when two instances' boxes overlap (coplanar faces of two instances may then tie) */
static int instances_overlap(const bk_scene *s)
{
    for (uint32_t i = 0; i < s->vox_instance_count; ++i)
        for (uint32_t j = i + 1; j < s->vox_instance_count; ++j) {
            const bk_vox_instance *a = &s->vox_instances[i], *b = &s->vox_instances[j];
            int                    o = 1;
            for (int k = 0; k < 3; ++k) o &= a->lo[k] < b->hi[k] && b->lo[k] < a->hi[k];
            if (o) return 1;
        }
    return 0;
}

static void check(bk_scene *sp, const char *name, uint32_t seed, uint32_t nrays, float fill);

static void check_scene(uint32_t models, uint32_t instances, int side, float fill, uint32_t seed, uint32_t nrays)
{
    bk_scene s;
    bk_test_vox_scene(&s, models, instances, side, fill, seed);
    check(&s, "random", seed, nrays, fill);
    bk_scene_free(&s);
}

static void check(bk_scene *sp, const char *name, uint32_t seed, uint32_t nrays, float fill)
{
    char      err[256];
    bk_scene  s = *sp, mesh;
    uint32_t *face_id;
    const int ties = instances_overlap(&s);
    bk_test_vox_mesh(&s, &mesh, &face_id);
    bk_ray       *rays = bk_test_vox_rays(&s, &mesh, nrays, seed + 7);
    bk_build_opts bo = bk_build_opts_default();
    bk_accel      ref;
    BK_EXPECTF(bk_bvh_build(&mesh, &bo, &ref, err, sizeof err) == 0, "%s", err);
    bk_hit *want = malloc(sizeof(bk_hit) * nrays), *got = malloc(sizeof(bk_hit) * nrays);
    for (int any = 0; any < 2; ++any) {
        bk_trace_totals tr;
        trace(&ref, rays, want, nrays, BK_STACK_GLOBAL, any, 0, &tr);
        uint32_t hits = 0;
        for (uint32_t i = 0; i < nrays; ++i) hits += want[i].tri != BK_NO_HIT;
        BK_EXPECTF(hits > nrays / 40 && hits < nrays, "seed %u: %u of %u rays hit the mesh", seed, hits, nrays);
        for (int accel = 0; accel < 2; ++accel) {
            bk_accel va;
            int      rc =
                accel == 0 ? bk_bvh_build(&s, &bo, &va, err, sizeof err) : bk_kd_build(&s, &bo, &va, err, sizeof err);
            BK_EXPECTF(rc == 0, "%s", err);
            BK_EXPECT(bk_accel_get_view(&va).prim == BK_PRIM_VOX);
            for (int mode = 0; mode < BK_STACK_MODE_COUNT; ++mode) {
                for (int size = 1; size <= (bk_stack_sized(mode) ? 4 : 1); size += 3) {
                    bk_trace_totals tv;
                    trace(&va, rays, got, nrays, mode, any, size, &tv);
                    uint32_t bad = 0, tied = 0;
                    for (uint32_t i = 0; i < nrays; ++i) {
                        int hw = want[i].tri != BK_NO_HIT, hg = got[i].tri != BK_NO_HIT;
                        int ok = hw == hg;
                        if (ok && hw && !any) {
                            float tw = want[i].t, tg = got[i].t;
                            ok = fabsf(tw - tg) <= 1e-6f * fabsf(tw) && face_id[want[i].tri] == got[i].tri;
                            /* overlapping instances: coincident faces of two of them tie */
                            if (!ok && ties && fabsf(tw - tg) <= 1e-6f * fabsf(tw)) {
                                ok = 1;
                                tied++;
                            }
                            double te = exact_t(&rays[i], got[i].tri, tg);
                            double ev = fabs(tg - te) / te, et = fabs(tw - te) / te;
                            if (ev > worst_vox) worst_vox = ev;
                            if (et > worst_tri) worst_tri = et;
                        }
                        if (ok && hg && any) ok = got[i].t >= rays[i].tmin && got[i].t <= rays[i].tmax;
                        if (!ok && bad++ < 5)
                            fprintf(stderr, "seed %u %s %s %s ray %u: mesh %s t %.9g face %u, voxels t %.9g id %u\n",
                                    seed, accel ? "kdtree" : "bvh", bk_stack_mode_name(mode), any ? "any" : "closest",
                                    i, hw ? "hit" : "miss", (double)want[i].t, hw ? face_id[want[i].tri] : 0u,
                                    (double)got[i].t, got[i].tri);
                    }
                    BK_EXPECTF(bad == 0, "%s: %u of %u rays differ (seed %u, %s, %s, %s, stack size %d)", name, bad,
                               nrays, seed, accel ? "kdtree" : "bvh", bk_stack_mode_name(mode), any ? "any" : "closest",
                               size);
                    /* T-Rex.vox: 8 animation frames placed on one spot, 11 % of rays tie */
                    BK_EXPECTF(tied * 4 <= nrays, "%s: %u of %u rays name another instance's coincident face", name,
                               tied, nrays);
                    if (!any && mode == 0 && accel == 0 && fill > 0.3f)
                        BK_EXPECTF(tv.tris < tr.tris, "voxel leaf tests %llu, triangle tests %llu",
                                   (unsigned long long)tv.tris, (unsigned long long)tr.tris);
                }
            }
            bk_accel_free(&va);
        }
    }
    free(want);
    free(got);
    free(rays);
    free(face_id);
    bk_accel_free(&ref);
    bk_scene_free(&mesh);
}

/* Rays that start exactly on a visible face and go out of the solid start in the cell ahead of
 * them: each gets the hit of the same ray started 1e-3 further along it, 1e-3 later, and never
 * its own voxel at t = 0 (the walk once took the cell on the plane's model-space positive side,
 * inside the voxel for faces that face away from it). On every rotation, BVH and KD-tree. */
static void check_face_starts(uint32_t seed, uint32_t nrays)
{
    char      err[256];
    bk_scene  s, mesh;
    uint32_t *face_id;
    bk_test_vox_scene(&s, 6, 60, 9, 0.45f, seed);
    bk_test_vox_mesh(&s, &mesh, &face_id);
    bk_ray *faces = bk_test_vox_rays(&s, &mesh, 2 * nrays, seed + 7);
    bk_ray *on = malloc(sizeof(bk_ray) * nrays), *ahead = malloc(sizeof(bk_ray) * nrays);
    for (uint32_t i = 0; i < nrays; ++i) {
        bk_ray r = faces[2 * i + 1]; /* odd rays leave a face, 1e-3 off its plane */
        float *o = &r.ox;
        int    snapped = 0;
        for (int k = 0; k < 3; ++k)
            if (fabsf(o[k] - roundf(o[k])) < 2e-3f) {
                o[k] = roundf(o[k]);
                snapped++;
            }
        BK_EXPECTF(snapped == 1, "ray %u: %d coordinates near a cell plane", i, snapped);
        r.tmax = BK_INF;
        on[i] = r;
        r.ox += 1e-3f * r.dx;
        r.oy += 1e-3f * r.dy;
        r.oz += 1e-3f * r.dz;
        ahead[i] = r;
    }
    bk_build_opts bo = bk_build_opts_default();
    bk_hit       *h_on = malloc(sizeof(bk_hit) * nrays), *h_ahead = malloc(sizeof(bk_hit) * nrays);
    for (int accel = 0; accel < 2; ++accel) {
        bk_accel va;
        int rc = accel == 0 ? bk_bvh_build(&s, &bo, &va, err, sizeof err) : bk_kd_build(&s, &bo, &va, err, sizeof err);
        BK_EXPECTF(rc == 0, "%s", err);
        bk_trace_totals t;
        trace(&va, on, h_on, nrays, BK_STACK_GLOBAL, 0, 0, &t);
        trace(&va, ahead, h_ahead, nrays, BK_STACK_GLOBAL, 0, 0, &t);
        uint32_t bad = 0, hits = 0;
        for (uint32_t i = 0; i < nrays; ++i) {
            int ok = h_on[i].tri == h_ahead[i].tri;
            if (ok && h_on[i].tri != BK_NO_HIT) {
                hits++;
                /* (the shifted origin is rounded: its t is off by up to an ulp of the origin over
                 * the direction's component along the face's axis, a few 1e-5 here) */
                ok = h_on[i].t > 0.0f && fabsf(h_on[i].t - (h_ahead[i].t + 1e-3f)) <= 5e-4f;
            }
            if (!ok && bad++ < 5)
                fprintf(
                    stderr,
                    "%s ray %u from (%.9g %.9g %.9g) along (%.6g %.6g %.6g): t %.9g id %u; 1e-3 ahead t %.9g id %u\n",
                    accel ? "kdtree" : "bvh", i, (double)on[i].ox, (double)on[i].oy, (double)on[i].oz, (double)on[i].dx,
                    (double)on[i].dy, (double)on[i].dz, (double)h_on[i].t, h_on[i].tri, (double)h_ahead[i].t,
                    h_ahead[i].tri);
        }
        BK_EXPECTF(bad == 0, "%u of %u rays from a face plane differ from the same rays 1e-3 ahead (%s)", bad, nrays,
                   accel ? "kdtree" : "bvh");
        BK_EXPECTF(hits > nrays / 10, "only %u of %u rays from faces hit", hits, nrays);
        bk_accel_free(&va);
    }
    free(h_on);
    free(h_ahead);
    free(on);
    free(ahead);
    free(faces);
    free(face_id);
    bk_scene_free(&mesh);
    bk_scene_free(&s);
}

int main(void)
{
    check_face_starts(5, 10000);
    check_scene(6, 60, 9, 0.45f, 1, 20000);  /* odd and even sizes, every rotation somewhere */
    check_scene(3, 27, 17, 0.08f, 2, 20000); /* sparse: empty bricks skipped */
    check_scene(2, 8, 12, 0.97f, 3, 10000);  /* nearly solid blocks */
    check_scene(4, 5, 1, 1.0f, 4, 5000);     /* single voxels */
    /* every corpus .vox (the SLAB6 file is not MagicaVoxel) */
    static const char *const corpus[] = { "chr_knight.vox", "menger.vox", "monu1.vox",
                                          "teapot.vox",     "T-Rex.vox",  "test_multiple_model_scene.vox" };
    for (size_t k = 0; k < sizeof corpus / sizeof corpus[0]; ++k) {
        char path[1024], err[512];
        snprintf(path, sizeof path, "%s/vox/%s", bk_test_scenes_dir(), corpus[k]);
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "note: %s absent, skipped\n", path);
            continue;
        }
        bk_scene s;
        BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
        check(&s, corpus[k], 11 + (uint32_t)k, 4000, 0.0f);
        bk_scene_free(&s);
    }
    printf("largest relative error of t against the exact plane distance: voxels %.3g, triangles %.3g\n", worst_vox,
           worst_tri);
    BK_EXPECTF(worst_vox <= 1e-6, "voxel t off by %.3g relative", worst_vox);
    BK_TEST_DONE();
}
