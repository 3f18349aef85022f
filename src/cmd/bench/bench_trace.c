/* bench_trace.c - `baker bench trace`: Mrays/s of every accel x stack strategy x query on a set
 * of scenes, on one backend, with the same seeded diffuse rays. Every variant is checked against
 * the global-stack result of the same run before it is timed (the llm.c habit); the table says
 * how many rays disagreed. */
#include "accel_build.h"
#include "backend.h"
#include "registry.h"
#include "voxmesh.h"
#include "bench.h"
#include "bench_common.h"
#include "cli.h"
#include "rays.h"
#include "loader.h"
#include "scene.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Relative to $BK_SCENES_DIR, else ../shared/scenes (run from the repository root). */
static const char *const default_scenes[] = {
    "sponza-dabrovic/sponza.obj",
    "sibenik/sibenik.obj",
    "dragon/dragon_vrip_res2.obj",
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Rows for one uploaded-to-be accel: every stack strategy x query, Mrays/s (median of reps) into
 * mrays[stack][any]. The global stack's hits become ref[any] unless check_only (then they are
 * compared with ref[any] too, by hit or miss and t: ids differ between voxels and their quads). */
static int bench_rows(const char *label, const bk_accel *a, int bvh_width, bk_backend *be, const bk_cli_trace *t,
                      const bk_ray *rays, uint64_t nrays, int reps, bk_hit *ref[2], bk_hit *hits, int check_only,
                      double mrays[3][2])
{
    char err[1024];
    printf("  %-6s %-6s %-6s %-7s %9s %8s %8s %9s %9s %9s %9s %8s\n", "prims", "accel", "stack", "query", "Mrays/s",
           "nodes/r", "prims/r", "restart/r", "spill/r", "disagree", "sorted", "nodes/r");
    for (int stack = 0; stack < 3; ++stack) {
        for (int any = 0; any < 2; ++any) {
            bk_trace_opts o = t->opts;
            o.stack_mode = stack;
            o.any_hit = any;
            o.bvh_width = bvh_width;
            /* the rays in their own order (the row's reference hits), then sorted (--ray-order;
             * the sort counts in its time), the same hits */
            bk_trace_totals tot, tot_s;
            double          med[2], dn = (double)nrays;
            uint64_t        bad = 0;
            for (int order = 0; order < 2; ++order) {
                o.ray_order = order ? BK_RAY_ORDER_SORTED : BK_RAY_ORDER_INPUT;
                bk_trace_totals *tt = order ? &tot_s : &tot;
                bk_hit          *dst = stack == 0 && !check_only && !order ? ref[any] : hits;
                if (be->i->trace(be, rays, dst, nrays, &o, tt, err, sizeof err)) {
                    fprintf(stderr, "baker: %s\n", err);
                    return -1;
                }
                for (uint64_t i = 0; i < nrays; ++i) bad += !bk_hit_agree(ref[any][i], dst[i], any, 1e-4f);
                double times[64];
                int    r = reps < 64 ? reps : 64;
                for (int k = 0; k < r; ++k) {
                    if (be->i->trace(be, rays, hits, nrays, &o, tt, err, sizeof err)) {
                        fprintf(stderr, "baker: %s\n", err);
                        return -1;
                    }
                    times[k] = tt->seconds;
                }
                qsort(times, (size_t)r, sizeof(double), cmp_double);
                med[order] = times[r / 2];
            }
            mrays[stack][any] = dn / med[0] / 1e6;
            printf("  %-6s %-6s %-6s %-7s %9.1f %8.1f %8.1f %9.4f %9.4f %9llu %9.1f %8.1f\n", label,
                   bk_accel_layout_name(a->type, a->type == BK_ACCEL_BVH ? bvh_width : 0), bk_stack_mode_name(stack),
                   any ? "any" : "closest", dn / med[0] / 1e6, (double)tot.nodes / dn, (double)tot.tris / dn,
                   (double)tot.restarts / dn, (double)tot.spills / dn, (unsigned long long)bad, dn / med[1] / 1e6,
                   (double)tot_s.nodes / dn);
            fflush(stdout);
        }
    }
    return 0;
}

static int bench_scene(const char *path, bk_backend *be, const bk_cli_trace *t, uint64_t nrays, int reps)
{
    char       err[1024];
    bk_scene   s;
    bk_voxmesh vm;
    memset(&vm, 0, sizeof vm);
    double t0 = bk_time_now();
    if (bk_scene_load(path, &s, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        return -1;
    }
    double  tl = bk_time_now() - t0;
    bk_ray *rays = NULL;
    bk_hit *ref[2] = { NULL, NULL }, *hits = malloc(nrays * sizeof(bk_hit));
    ref[0] = malloc(nrays * sizeof(bk_hit));
    ref[1] = malloc(nrays * sizeof(bk_hit));
    int rc = -1, vox = s.vox_instance_count > 0;
    if (!hits || !ref[0] || !ref[1]) {
        fprintf(stderr, "baker: out of memory\n");
        goto out;
    }
    /* Voxel scenes: rays leave their surface (the quads of visible faces) outwards, and the same
     * rays are traced against the voxels and against the quads as triangles. */
    if (vox && bk_voxmesh_build(&s, &vm, err, sizeof err)) {
        fprintf(stderr, "baker: %s: %s\n", path, err);
        goto out;
    }
    const bk_scene *surf = vox ? &vm.scene : &s;
    if ((vox ? bk_rays_diffuse_front : bk_rays_diffuse)(surf, nrays, 1, &rays, err, sizeof err)) {
        fprintf(stderr, "baker: %s: %s\n", path, err);
        goto out;
    }
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("\n%s: %u triangles", name, s.tri_count);
    if (vox)
        printf(", %u voxel instances (%llu voxels; surface: %u quads)", s.vox_instance_count,
               (unsigned long long)vm.voxel_count, vm.quad_count);
    printf(", loaded in %.3f s, %llu diffuse rays (seed 1), %s backend\n", tl, (unsigned long long)nrays,
           be->i->name(be));
    for (int accel = 0; accel < 2; ++accel) {
        double mr[2][3][2], mb[2][3][2]; /* default layout, binary layout (BVH) */
        for (int k = 0; k < 1 + vox; ++k) {
            bk_accel      a;
            bk_build_opts bo = bk_build_opts_default();
            if (bk_accel_build(k ? surf : &s, accel, &bo, &a, err, sizeof err)) {
                fprintf(stderr, "baker: %s: %s\n", path, err);
                goto out;
            }
            const char *label = vox ? (k ? "quads" : "voxels") : "tris";
            printf("  %-6s %-6s build %.3f s, %u nodes, depth %u, SAH %.2f, %.1f MB\n", label,
                   bk_accel_type_name(accel), a.info.seconds, a.info.nodes, a.info.depth, a.info.sah_cost,
                   (double)a.info.bytes / 1e6);
            bk_accel_view v = bk_accel_get_view(&a);
            if (be->i->upload(be, &v, err, sizeof err)) {
                fprintf(stderr, "baker: %s\n", err);
                bk_accel_free(&a);
                goto out;
            }
            int r = bench_rows(label, &a, t->opts.bvh_width, be, t, rays, nrays, reps, ref, hits, k, mr[k]);
            /* the BVH's default layout (each backend's fastest), then the binary and the compressed
             * wide ones beside it, their hits checked against the first's */
            memcpy(mb[k], mr[k], sizeof mb[k]);
            for (int w = 2; !r && accel == BK_ACCEL_BVH && w <= 8; w += 6) {
                double other[3][2];
                if (w == t->opts.bvh_width || (w == 8 && vox && !k)) continue; /* (no compressed layout of voxels) */
                r = bench_rows(label, &a, w, be, t, rays, nrays, reps, ref, hits, 1, w == 2 ? mb[k] : other);
            }
            bk_accel_free(&a);
            if (r) goto out;
        }
        if (vox)
            for (int stack = 0; stack < 3; ++stack)
                printf("  voxels / quads  %-6s %-6s closest %.2fx, any %.2fx; against the quads' binary layout %.2fx, "
                       "%.2fx\n",
                       bk_accel_type_name(accel), bk_stack_mode_name(stack), mr[0][stack][0] / mr[1][stack][0],
                       mr[0][stack][1] / mr[1][stack][1], mb[0][stack][0] / mb[1][stack][0],
                       mb[0][stack][1] / mb[1][stack][1]);
    }
    rc = 0;
out:
    free(rays);
    free(hits);
    free(ref[0]);
    free(ref[1]);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
    return rc;
}

int bk_bench_trace(int argc, char **argv)
{
    bk_cli_trace t;
    bk_cli_trace_default(&t);
    const char *scenes = NULL, *v;
    uint64_t    nrays = 4000000, reps = 3;
    for (int i = 0; i < argc; ++i) {
        int r = bk_cli_trace_option(&t, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--scenes")) {
            if (bk_cli_value(argc, argv, &i, &scenes)) return 2;
        } else if (!strcmp(argv[i], "--rays")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64("--rays", v, 1, 1ull << 30, &nrays)) return 2;
        } else if (!strcmp(argv[i], "--reps")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64("--reps", v, 1, 64, &reps)) return 2;
        } else {
            fprintf(stderr, "baker bench trace: unknown argument '%s'\n%s", argv[i], bk_bench_usage);
            return 2;
        }
    }
    char        msg[512];
    bk_backend *be = bk_backend_init(t.backend, msg, sizeof msg);
    if (!be) {
        fprintf(stderr, "baker: %s\n", msg);
        return 1;
    }
    if (msg[0]) fprintf(stderr, "baker: %s\n", msg);
    printf("bench trace: stack size %d for short/spill, counters %s\n", t.opts.stack_size,
           bk_counters_name(t.opts.counters));
    char defaults[4096] = "";
    if (!scenes) {
        const char *dir = getenv("BK_SCENES_DIR") ? getenv("BK_SCENES_DIR") : "../shared/scenes";
        for (size_t k = 0; k < sizeof default_scenes / sizeof default_scenes[0]; ++k)
            snprintf(defaults + strlen(defaults), sizeof defaults - strlen(defaults), "%s%s/%s", k ? "," : "", dir,
                     default_scenes[k]);
        scenes = defaults;
    }
    char *list = strdup(scenes);
    int   rc = 0;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save))
        if (bench_scene(p, be, &t, nrays, (int)reps)) rc = 1;
    free(list);
    bk_backend_free(be);
    return rc;
}
