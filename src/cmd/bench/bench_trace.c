/* bench_trace.c - `baker bench trace`: Mrays/s of every accel x stack strategy x query on a set
 * of scenes, on one backend, with the same seeded diffuse rays. Every variant is checked against
 * the global-stack result of the same run before it is timed (the llm.c habit); the table says
 * how many rays disagreed. With --orders: the ray orders instead (bench_orders), on the rays as
 * raygen makes them and on a copy sorted beforehand as the trace sorts them. */
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

/* --orders: the ray orders of the trace, each a column of bench_orders' table. copy: bk_trace_opts.order_copy. */
typedef struct order_variant {
    const char *name;
    int         order, bits, copy;
} order_variant;
static const order_variant order_variants[] = {
    { "input", BK_RAY_ORDER_INPUT, 0, 0 },        { "sorted", BK_RAY_ORDER_SORTED, 0, 1 },
    { "sorted+copy", BK_RAY_ORDER_SORTED, 0, 2 }, { "binned", BK_RAY_ORDER_BINNED, 0, 1 },
    { "binned+copy", BK_RAY_ORDER_BINNED, 0, 2 }, { "binned12", BK_RAY_ORDER_BINNED, 12, 1 },
    { "binned8", BK_RAY_ORDER_BINNED, 8, 1 },     { "auto", BK_RAY_ORDER_AUTO, 0, 0 },
};
#define ORDER_VARIANTS (int)(sizeof order_variants / sizeof order_variants[0])

/* The options of a bench run. */
typedef struct bench_cfg {
    uint64_t nrays;
    int      reps;
    int      orders; /* --orders: bench_orders instead of bench_rows */
    double   length; /* --length: > 0, tmax at most length x the box diagonal */
} bench_cfg;

/* --orders, one scene's accel uploaded: for the rays as they come (raygen's order) and the same
 * rays sorted beforehand (bk_rays_sort, the full key: as --ray-order sorted orders them), each
 * query, each order of order_variants: Mrays/s (median of reps; the sort, the copies and auto's
 * sampling count in it), of which the sort in ms, the trace kernel's ms, what auto chose, and the
 * rays whose hit disagrees with the input order's on the same file. Then the target: auto against
 * input on the same file. */
static int bench_orders(const bk_accel *a, bk_backend *be, const bk_cli_trace *t, const bk_ray *rays, uint64_t nrays,
                        int reps, bk_hit *ref, bk_hit *hits)
{
    char    err[1024];
    bk_ray *sorted = malloc(nrays * sizeof *sorted);
    if (!sorted) {
        fprintf(stderr, "baker: out of memory\n");
        return -1;
    }
    memcpy(sorted, rays, nrays * sizeof *sorted);
    if (bk_rays_sort(sorted, nrays, a->lo, a->hi, BK_RAY_ORDER_KEY_BITS, err, sizeof err)) {
        fprintf(stderr, "baker: %s\n", err);
        free(sorted);
        return -1;
    }
    printf("  %-9s %-7s %-12s %9s %8s %8s %-14s %9s\n", "file", "query", "order", "Mrays/s", "sort ms", "trace ms",
           "traced", "disagree");
    const double dn = (double)nrays;
    int          rc = 0;
    for (int file = 0; file < 2 && !rc; ++file) {
        const bk_ray *rs = file ? sorted : rays;
        for (int any = 0; any < 2 && !rc; ++any) {
            double mr[ORDER_VARIANTS];
            for (int v = 0; v < ORDER_VARIANTS && !rc; ++v) {
                const order_variant *ov = &order_variants[v];
                bk_trace_opts        o = t->opts;
                o.any_hit = any;
                o.ray_order = ov->order;
                o.order_bits = ov->bits;
                o.order_copy = ov->copy;
                bk_trace_totals tot;
                bk_hit         *dst = v == 0 ? ref : hits;
                if (be->i->trace(be, rs, dst, nrays, &o, &tot, err, sizeof err)) {
                    fprintf(stderr, "baker: %s\n", err);
                    rc = -1;
                    break;
                }
                uint64_t bad = 0;
                for (uint64_t i = 0; i < nrays; ++i) bad += !bk_hit_agree(ref[i], dst[i], any, 1e-4f);
                double times[64], sorts[64];
                int    r = reps < 64 ? reps : 64;
                for (int k = 0; k < r && !rc; ++k) {
                    if (be->i->trace(be, rs, hits, nrays, &o, &tot, err, sizeof err)) {
                        fprintf(stderr, "baker: %s\n", err);
                        rc = -1;
                    }
                    times[k] = tot.seconds;
                    sorts[k] = tot.sort_seconds;
                }
                if (rc) break;
                qsort(times, (size_t)r, sizeof(double), cmp_double);
                qsort(sorts, (size_t)r, sizeof(double), cmp_double);
                mr[v] = dn / times[r / 2] / 1e6;
                char traced[32];
                if (tot.sorted) snprintf(traced, sizeof traced, "sorted/%d", tot.order_bits);
                else snprintf(traced, sizeof traced, "input");
                if (tot.coherence >= 0)
                    snprintf(traced + strlen(traced), sizeof traced - strlen(traced), " c%.2f", tot.coherence);
                printf("  %-9s %-7s %-12s %9.1f %8.3f %8.3f %-14s %9llu\n", file ? "presorted" : "raygen",
                       any ? "any" : "closest", ov->name, mr[v], sorts[r / 2] * 1e3,
                       (times[r / 2] - sorts[r / 2]) * 1e3, traced, (unsigned long long)bad);
                fflush(stdout);
            }
            if (rc) break;
            double best = 0;
            int    bi = 0;
            for (int v = 1; v < ORDER_VARIANTS - 1; ++v)
                if (mr[v] > best) best = mr[v], bi = v;
            printf("  %-9s %-7s auto / input %.2fx (target >= 1.00: %s); best sort %s %.2fx input\n",
                   file ? "presorted" : "raygen", any ? "any" : "closest", mr[ORDER_VARIANTS - 1] / mr[0],
                   mr[ORDER_VARIANTS - 1] >= mr[0] ? "met" : "not met", order_variants[bi].name, best / mr[0]);
        }
    }
    free(sorted);
    return rc;
}

static int bench_scene(const char *path, bk_backend *be, const bk_cli_trace *t, const bench_cfg *cfg)
{
    const uint64_t nrays = cfg->nrays;
    const int      reps = cfg->reps;
    char           err[1024];
    bk_scene       s;
    bk_voxmesh     vm;
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
    if (cfg->length > 0) bk_rays_limit(rays, nrays, surf, (float)cfg->length);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("\n%s: %u triangles", name, s.tri_count);
    if (vox)
        printf(", %u voxel instances (%llu voxels; surface: %u quads)", s.vox_instance_count,
               (unsigned long long)vm.voxel_count, vm.quad_count);
    printf(", loaded in %.3f s, %llu diffuse rays (seed 1", tl, (unsigned long long)nrays);
    if (cfg->length > 0) printf(", at most %g x the box diagonal long", cfg->length);
    printf("), %s backend\n", be->i->name(be));
    if (cfg->orders) { /* the orders on the default accel and stack only */
        bk_accel      a;
        bk_build_opts bo = bk_build_opts_default();
        if (bk_accel_build(&s, t->accel, &bo, &a, err, sizeof err)) {
            fprintf(stderr, "baker: %s: %s\n", path, err);
            goto out;
        }
        printf("  %s, %s stack, build %.3f s\n",
               bk_accel_layout_name(a.type, a.type == BK_ACCEL_BVH ? t->opts.bvh_width : 0),
               bk_stack_mode_name(t->opts.stack_mode), a.info.seconds);
        bk_accel_view v = bk_accel_get_view(&a);
        int           r = be->i->upload(be, &v, err, sizeof err);
        if (r) fprintf(stderr, "baker: %s\n", err);
        else r = bench_orders(&a, be, t, rays, nrays, reps, ref[0], hits);
        bk_accel_free(&a);
        rc = r ? -1 : 0;
        goto out;
    }
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
    bench_cfg   cfg = { 0, 0, 0, 0.0 };
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
        } else if (!strcmp(argv[i], "--orders")) {
            cfg.orders = 1;
        } else if (!strcmp(argv[i], "--length")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_f64("--length", v, 1e-9, 1e9, &cfg.length)) return 2;
        } else {
            fprintf(stderr, "baker bench trace: unknown argument '%s'\n%s", argv[i], bk_bench_usage);
            return 2;
        }
    }
    cfg.nrays = nrays;
    cfg.reps = (int)reps;
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
        if (bench_scene(p, be, &t, &cfg)) rc = 1;
    free(list);
    bk_backend_free(be);
    return rc;
}
