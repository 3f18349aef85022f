/* fuzz_trace.c - libFuzzer target for loader + builders + CPU traversal against brute force.
 *
 * Input: OBJ text, optionally followed by the line "#@RAYS@" and raw 32-byte RAYS records
 * (ox oy oz tmin dx dy dz tmax, at most 64 are used). The scene is loaded (bk_scene_load), built
 * as a BVH and as a KD-tree (bk_accel_build, with one of a few option sets picked by a hash of
 * the input: default, tiny leaves, shallow depth, tight reference budget), and rays are traced
 * on the CPU backend with every stack strategy (global; short and spill with 1, 2 and 8 entries,
 * so restarts and spills happen), closest and any hit, the BVH also in its compressed wide layout
 * (src/accel/bvh_cw.h). Rays: the input's own, seeded random,
 * diffuse and degenerate ones (tests/bk_test_scenes.h), and rays aimed at triangle centroids so
 * that most of them hit. Every result is checked against brute force over all triangles with the
 * same triangle test; a disagreement aborts with the ray.
 *
 * The oracle. Float hits come in two kinds. A hit is "exact" when the ray (direction components
 * the traversal takes as parallel set to zero), recomputed in double, meets the triangle's plane
 * at t_d in [tmin, tmax], |t - t_d| <= 1e-5 |t_d|, at a point inside the triangle's box (slack
 * 1e-12 of the coordinates), and a slab test in double finds the ray inside that box for some t
 * in [tmin, tmax]: there the traversal's conservative box tests must let the triangle be tested. Otherwise the hit is
 * rounding noise: a ray starting within rounding of a large triangle's plane, or coordinates so small that t underflows
 * to 0, can make the float test report a hit the box tests rightly reject. Then:
 *   - a hit returned must be the triangle's own float hit (same t, recomputed), within [tmin, tmax];
 *   - a miss is wrong when any exact hit exists;
 *   - closest hit: not nearer than brute force's nearest, and not farther than the nearest exact
 *     hit (rays.md's rule: relative t difference under 1e-4).
 * Without noise hits this is plain agreement with brute force.
 *
 * One more allowance, for the KD-tree only: it orders cells by the float t at which the ray
 * crosses their planes, and its builder keeps cells at least 2^-20 of the coordinate magnitude M
 * thick (kdtree.c). A ray whose origin is more than 4 M away along an axis (t |d_k| > 4 M_k)
 * crosses such a cell in under 2 ulps of t, and a plane crossed a hair after the cell's entry
 * rounds to the entry itself. For those "far" rays (found by fuzzing: origins 1e20 away,
 * directions of 1e37) a KD-tree miss of an exact hit is not reported; its hits are still checked.
 *
 * Scenes over 3000 triangles are skipped: brute force is O(rays x triangles) per input.
 */
#include "fuzz_common.h"
#include "accel_build.h"
#include "backend.h"
#include "bk_test_scenes.h"
#include "bk_test_stacks.h"
#include "rays.h"
#include "loader.h"
#include "scene.h"

#include <float.h>
#include <math.h>

#define RAYS_SEP       "\n#@RAYS@\n"
#define MAX_TRIS       3000
#define MAX_INPUT_RAYS 64

/* Every stack strategy (a sized one at each of stack_sizes) on every layout of each accel
 * (tests/bk_test_stacks.h): the binary layouts traced as the backend does by default (width 0: a
 * BVH of triangles with the global stack in the CPU's wide layout), the compressed wide BVH the
 * GPU may trace by its bvh_width, 8. */
static const int stack_sizes[] = { 1, 2, 8 };

/* How often the oracle's allowances apply, printed at exit. */
static struct {
    uint64_t scenes, rays, exact, noise, far;
} stats;
static void print_stats(void)
{
    fprintf(stderr,
            "fuzz_trace: %llu scenes traced, %llu rays: %llu with an exact hit, %llu with noise hits, "
            "%llu far (KD misses allowed)\n",
            (unsigned long long)stats.scenes, (unsigned long long)stats.rays, (unsigned long long)stats.exact,
            (unsigned long long)stats.noise, (unsigned long long)stats.far);
}

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
    return h;
}

static bk_build_opts pick_opts(uint32_t h)
{
    bk_build_opts o = bk_build_opts_default();
    switch (h % 4) {
    case 1:
        o.max_leaf = 1;
        o.cost_node = 0.0f;
        o.kd_empty_bonus = 1.0f;
        break;
    case 2:
        o.max_depth = 3;
        o.max_leaf = 2;
        break;
    case 3:
        o.kd_max_refs_per_tri = 1;
        o.max_leaf = 16;
        break;
    default: break;
    }
    return o;
}

/* What brute force knows about one ray. */
typedef struct truth {
    bk_hit   nearest; /* nearest float hit of any kind */
    bk_hit   exact;   /* nearest exact hit (see the top of the file) */
    uint32_t noise;   /* float hits that are rounding noise */
} truth;

/* The ray's direction as the traversal sees it: components it takes as parallel are zero
 * (bk_ray_prepare). */
static void ray_dir(const bk_ray *r, double d[3])
{
    bk_ray_pre p = bk_ray_prepare(r);
    d[0] = p.d.x;
    d[1] = p.d.y;
    d[2] = p.d.z;
}

static int hit_is_exact(const bk_ray *r, const float *p0, const float *p1, const float *p2, float t)
{
    double o[3] = { r->ox, r->oy, r->oz }, d[3], a[3], b[3], n[3], q[3];
    ray_dir(r, d);
    for (int k = 0; k < 3; ++k) {
        a[k] = (double)p1[k] - p0[k];
        b[k] = (double)p2[k] - p0[k];
        q[k] = (double)p0[k] - o[k];
    }
    n[0] = a[1] * b[2] - a[2] * b[1];
    n[1] = a[2] * b[0] - a[0] * b[2];
    n[2] = a[0] * b[1] - a[1] * b[0];
    double den = n[0] * d[0] + n[1] * d[1] + n[2] * d[2];
    if (!(den != 0.0)) return 0;
    double td = (n[0] * q[0] + n[1] * q[1] + n[2] * q[2]) / den;
    if (!(td >= (double)r->tmin && td <= (double)r->tmax)) return 0;
    if (!(fabs((double)t - td) <= 1e-5 * fabs(td))) return 0;
    /* The ray must reach the triangle's box within [tmin, tmax]: a slab test in double, exact up
     * to a few ulps, so no slack in the coordinates is needed. td alone is not enough: the
     * products in n.q round away whatever is below 2^-53 of the vertices, and a ray 4e-21 below a
     * face spanning y in [0, 1] and moving away from it got td = 0 and a hit point "inside" the
     * box by 1e-12 of the coordinates (found by fuzzing). */
    double t0 = r->tmin, t1 = r->tmax;
    for (int k = 0; k < 3; ++k) {
        double lo = fmin(fmin(p0[k], p1[k]), p2[k]), hi = fmax(fmax(p0[k], p1[k]), p2[k]);
        if (d[k] == 0.0) {
            if (!(o[k] >= lo && o[k] <= hi)) return 0;
            continue;
        }
        double ta = (lo - o[k]) / d[k], tb = (hi - o[k]) / d[k];
        t0 = fmax(t0, fmin(ta, tb));
        t1 = fmin(t1, fmax(ta, tb));
        double x = o[k] + td * d[k], slack = 1e-12 * (fabs(o[k]) + fabs(lo) + fabs(hi)) + 1e-300;
        if (!(x >= lo - slack && x <= hi + slack)) return 0;
    }
    return t0 <= t1 + 1e-12 * fmax(fabs(t0), fabs(t1));
}

static const float *tri_pos(const bk_scene *s, uint32_t t, int v)
{
    return s->positions + 3 * (size_t)s->tri_v[3 * t + v];
}

static truth brute(const bk_scene *s, const bk_ray *ray)
{
    truth tr;
    tr.nearest.t = tr.exact.t = BK_INF;
    tr.nearest.tri = tr.exact.tri = BK_NO_HIT;
    tr.noise = 0;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return tr;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        const float *p0 = tri_pos(s, t, 0), *p1 = tri_pos(s, t, 1), *p2 = tri_pos(s, t, 2);
        float        tt;
        if (!bk_tri_intersect(&r, bk_v3(p0[0], p0[1], p0[2]), bk_v3(p1[0], p1[1], p1[2]), bk_v3(p2[0], p2[1], p2[2]),
                              r.tmax, &tt))
            continue;
        if (tt < tr.nearest.t || tr.nearest.tri == BK_NO_HIT) {
            tr.nearest.t = tt;
            tr.nearest.tri = t;
        }
        if (hit_is_exact(ray, p0, p1, p2, tt)) {
            if (tt < tr.exact.t || tr.exact.tri == BK_NO_HIT) {
                tr.exact.t = tt;
                tr.exact.tri = t;
            }
        } else {
            tr.noise++;
        }
    }
    return tr;
}

/* 1 when the ray reaches the scene box from more than 4 M_k away along some axis k (see the top). */
static int ray_is_far(const bk_scene *s, const bk_ray *r)
{
    float lo[3], hi[3];
    bk_scene_bounds(s, lo, hi);
    double o[3] = { r->ox, r->oy, r->oz }, d[3], t0 = r->tmin, t1 = r->tmax;
    ray_dir(r, d);
    for (int k = 0; k < 3; ++k) {
        if (d[k] == 0.0) continue;
        double a = ((double)lo[k] - o[k]) / d[k], b = ((double)hi[k] - o[k]) / d[k];
        t0 = fmax(t0, fmin(a, b));
        t1 = fmin(t1, fmax(a, b));
    }
    if (!(t0 <= t1)) return 0; /* misses the box (or NaN): no exact hit to miss */
    double T = fmax(fabs(t0), fabs(t1));
    for (int k = 0; k < 3; ++k) {
        double m = fmax(fmax(fabs((double)lo[k]), fabs((double)hi[k])), 0x1p20 * (double)FLT_MIN);
        if (T * fabs(d[k]) > 4.0 * m) return 1;
    }
    return 0;
}

static int near_rel(float a, float b)
{
    float d = fabsf(a - b), m = fmaxf(fabsf(a), fabsf(b));
    return d <= 1e-4f * m || d == 0.0f;
}

/* NULL when got is acceptable for this ray, else what is wrong. */
static const char *judge(const bk_scene *s, const bk_ray *ray, const truth *tr, bk_hit got, int any_hit, int far_kd)
{
    if (got.tri == BK_NO_HIT) {
        if (got.t != BK_INF) return "a miss must be (inf, ~0)";
        return tr->exact.tri != BK_NO_HIT && !far_kd ? "missed an exact hit" : NULL;
    }
    if (got.tri >= s->tri_count) return "triangle index out of range";
    if (!(got.t >= ray->tmin && got.t <= ray->tmax)) return "t outside [tmin, tmax]";
    bk_ray_pre   r = bk_ray_prepare(ray);
    const float *p0 = tri_pos(s, got.tri, 0), *p1 = tri_pos(s, got.tri, 1), *p2 = tri_pos(s, got.tri, 2);
    float        tt;
    if (!r.valid ||
        !bk_tri_intersect(&r, bk_v3(p0[0], p0[1], p0[2]), bk_v3(p1[0], p1[1], p1[2]), bk_v3(p2[0], p2[1], p2[2]),
                          r.tmax, &tt) ||
        bk_float_bits(any_hit ? tt
                              : bk_tri_refine_t(ray, bk_v3(p0[0], p0[1], p0[2]), bk_v3(p1[0], p1[1], p1[2]),
                                                bk_v3(p2[0], p2[1], p2[2]), tt)) != bk_float_bits(got.t))
        return "the hit is not that triangle's own hit";
    if (any_hit) return NULL;
    /* which hit is nearest is decided on the float test's t (tt); a closest hit's t is then
     * refined (bk_tri_refine_t), by far more than 1e-4 for a ray grazing a face */
    if (tt < tr->nearest.t && !near_rel(tt, tr->nearest.t)) return "nearer than brute force's nearest hit";
    if (tr->exact.tri != BK_NO_HIT && !far_kd && tt > tr->exact.t && !near_rel(tt, tr->exact.t))
        return "farther than the nearest exact hit";
    return NULL;
}

static void report(const char *what, const char *why, const bk_ray *r, const truth *tr, bk_hit got)
{
    fprintf(stderr,
            "%s: %s\n  ray o (%a %a %a) d (%a %a %a) t [%a %a]\n"
            "  brute force: nearest (t %.9g tri %d), nearest exact (t %.9g tri %d), %u noise hits; traversal (t %.9g "
            "tri %d)\n",
            what, why, r->ox, r->oy, r->oz, r->dx, r->dy, r->dz, r->tmin, r->tmax, tr->nearest.t, (int)tr->nearest.tri,
            tr->exact.t, (int)tr->exact.tri, tr->noise, got.t, (int)got.tri);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char obj[600];
    bk_fuzz_path("in.obj", obj, sizeof obj);
    const uint8_t *sep = bk_fuzz_find(data, size, RAYS_SEP);
    size_t         head = sep ? (size_t)(sep - data) : size;
    bk_fuzz_write(obj, data, head);

    bk_scene s;
    char     err[1024];
    if (bk_scene_load(obj, &s, err, sizeof err) != 0) return 0;
    if (s.tri_count > MAX_TRIS) {
        bk_scene_free(&s);
        return 0;
    }
    if (stats.scenes++ == 0) atexit(print_stats);
    uint32_t h = fnv1a(data, head);

    /* rays: the input's, random, diffuse, degenerate, aimed at centroids */
    size_t nin = 0;
    if (sep) {
        size_t tail = size - head - strlen(RAYS_SEP);
        nin = tail / sizeof(bk_ray);
        if (nin > MAX_INPUT_RAYS) nin = MAX_INPUT_RAYS;
    }
    enum { NRAND = 96, NDIFF = 48, NDEG = 32, NAIM = 64 };
    size_t  cap = nin + NRAND + NDIFF + NDEG + NAIM, n = 0;
    bk_ray *rays = malloc(sizeof(bk_ray) * cap);
    if (!rays) {
        bk_scene_free(&s);
        return 0;
    }
    if (nin) memcpy(rays, sep + strlen(RAYS_SEP), nin * sizeof(bk_ray));
    n = nin;
    bk_ray *gen = NULL;
    if (bk_rays_random(&s, NRAND, h, &gen, err, sizeof err) == 0) {
        memcpy(rays + n, gen, sizeof(bk_ray) * NRAND);
        n += NRAND;
    }
    free(gen);
    gen = NULL;
    if (bk_rays_diffuse(&s, NDIFF, h + 1, &gen, err, sizeof err) == 0) {
        memcpy(rays + n, gen, sizeof(bk_ray) * NDIFF);
        n += NDIFF;
    }
    free(gen);
    gen = bk_test_rays_degenerate(&s, NDEG, h + 2);
    memcpy(rays + n, gen, sizeof(bk_ray) * NDEG);
    n += NDEG;
    free(gen);
    {
        float lo[3], hi[3];
        bk_scene_bounds(&s, lo, hi);
        for (uint32_t i = 0; i < NAIM; ++i) {
            uint32_t t = bk_rng_u32(h, i, 3, 0) % s.tri_count;
            float    c[3], o[3];
            for (int k = 0; k < 3; ++k) {
                c[k] = (s.positions[3 * (size_t)s.tri_v[3 * t] + k] + s.positions[3 * (size_t)s.tri_v[3 * t + 1] + k] +
                        s.positions[3 * (size_t)s.tri_v[3 * t + 2] + k]) /
                       3.0f;
                float ext = hi[k] - lo[k];
                o[k] = lo[k] - 0.5f * ext + 2.0f * ext * bk_rng_f(h, i, 3, 1 + (uint32_t)k);
            }
            bk_ray r;
            r.ox = o[0];
            r.oy = o[1];
            r.oz = o[2];
            r.dx = c[0] - o[0];
            r.dy = c[1] - o[1];
            r.dz = c[2] - o[2];
            r.tmin = 0.0f;
            r.tmax = i % 5 == 4 ? 1.0f : BK_INF; /* some end exactly at the centroid */
            rays[n++] = r;
        }
    }

    truth   *ref = malloc(sizeof(truth) * n);
    bk_hit  *got = malloc(sizeof(bk_hit) * n);
    uint8_t *far = malloc(n);
    if (!ref || !got || !far) {
        free(ref);
        free(got);
        free(far);
        free(rays);
        bk_scene_free(&s);
        return 0;
    }
    for (size_t i = 0; i < n; ++i) {
        ref[i] = brute(&s, &rays[i]);
        far[i] = (uint8_t)ray_is_far(&s, &rays[i]);
        stats.rays++;
        stats.far += far[i];
        stats.noise += ref[i].noise != 0;
        stats.exact += ref[i].exact.tri != BK_NO_HIT;
    }

    bk_build_opts bo = pick_opts(h);
    bk_backend   *be = bk_backend_cpu_init();
    BK_FUZZ_CHECK(be != NULL, "no CPU backend");
    bk_test_stack  st[BK_TEST_STACKS_MAX];
    const int      nst = bk_test_stacks(stack_sizes, (int)(sizeof stack_sizes / sizeof stack_sizes[0]), st);
    bk_test_layout lay[BK_TEST_LAYOUTS_MAX];
    const int      nlay = bk_test_layouts(lay);
    for (int b = 0; b < nlay; ++b) {
        if (!bk_test_layout_first(lay, b)) continue; /* each accel built once, for all of its layouts */
        const int accel = lay[b].build;
        bk_accel  a;
        int       rc = bk_accel_build(&s, accel, &bo, &a, err, sizeof err);
        BK_FUZZ_CHECK(rc == 0, "%s build failed on a loaded scene: %s", bk_accel_type_name(accel), err);
        bk_accel_view view = bk_accel_get_view(&a);
        BK_FUZZ_CHECK(be->i->upload(be, &view, err, sizeof err) == 0, "upload: %s", err);
        for (int v = 0; v < nlay * nst; ++v)
            for (int any = 0; any < 2; ++any) {
                const bk_test_layout *l = &lay[v / nst];
                if (l->build != accel) continue;
                bk_trace_opts o = bk_trace_opts_default();
                o.stack_mode = st[v % nst].mode;
                o.stack_size = st[v % nst].size;
                o.bvh_width = l->width == 8 ? 8 : 0;
                o.any_hit = any;
                o.threads = 1;
                bk_trace_totals tot;
                BK_FUZZ_CHECK(be->i->trace(be, rays, got, n, &o, &tot, err, sizeof err) == 0, "trace: %s", err);
                for (size_t i = 0; i < n; ++i) {
                    const char *why = judge(&s, &rays[i], &ref[i], got[i], any, accel == BK_ACCEL_KDTREE && far[i]);
                    if (why) {
                        char what[200];
                        snprintf(what, sizeof what, "%s%s %s/%d %s, options %u, ray %zu of %zu (%zu from the input)",
                                 bk_accel_type_name(accel), o.bvh_width == 8 ? " (compressed)" : "",
                                 bk_stack_mode_name(o.stack_mode), o.stack_size, any ? "any" : "closest", h % 4, i, n,
                                 nin);
                        report(what, why, &rays[i], &ref[i], got[i]);
                    }
                }
            }
        bk_accel_free(&a);
    }
    bk_backend_free(be);
    free(ref);
    free(got);
    free(far);
    free(rays);
    bk_scene_free(&s);
    return 0;
}
