/* cpu_bake_open.c - an open scene: light from the sky reached after one and two bounces.
 *
 * The furnace (cpu_bake.c) is closed and the lone plane never bounces, so neither checks what a
 * path brings back from the sky after a bounce. Here a floor (y = 0, x in [0, W], albedo rho_f,
 * facing up) meets a wall (x = 0, height H, albedo rho_w, facing +x) along their common edge,
 * both of depth 2 Z, under a constant sky L and nothing else. For a point x on one of them (A),
 * the other one being B, what the texel holds after 0, 1 and 2 bounces is
 *
 *   T0(x) = L (1 - F_B(x))
 *   T1(x) = T0(x) + rho_B L  g1(x),  g1(x) = int_B K(x, y) (1 - F_A(y)) dy
 *   T2(x) = T1(x) + rho_B rho_A L  g2(x),  g2(x) = int_B K(x, y) int_A K(y, z) (1 - F_B(z)) dz dy
 *
 * with K(x, y) = cos_x cos_y / (pi |x - y|^2) and F_P(x) the view factor from x to the rectangle P,
 * exact by Lambert's formula for polygons (the sum over edges of the angle the edge subtends times
 * the cosine of its plane with the normal, over 2 pi). The integrals are done in double precision
 * with Gauss-Legendre rules on panels graded towards the common edge and the peaks of the kernel,
 * at two resolutions that must agree to 1e-5; the same rules integrate K alone to F_B (checked).
 * Dropping the path throughput where the sky is reached turns rho_B into 1 in T1 and rho_B rho_A
 * into 1 in T2, far outside the tolerance.
 *
 * The check is statistical, so it survives any correct change of sampling: N texels at the same
 * point with different pixel numbers are N independent estimates; the mean of (baked - T) over
 * them must lie within 5 standard errors (from their own spread) of 0, per channel, at three
 * points, for 0, 1 and 2 bounces, under three seeds and sample counts.
 */
#include "bk_test.h"
#include "bk_test_scenes.h"
#include "accel_build.h"
#include "bake.h"

#include <math.h>

#define BK_PI 3.14159265358979323846
enum { FLOOR = 0, WALL = 1 };
static const double W_ = 3.0, H_ = 1.0, Z_ = 1.5; /* floor width, wall height, half depth */
static const float  SKY[3] = { 1.0f, 0.8f, 0.6f };
static const float  RHO[2][3] = { { 0.3f, 0.6f, 0.9f },   /* floor */
                                  { 0.8f, 0.5f, 0.2f } }; /* wall */

/* ---- the analytic side, double precision -------------------------------------------------- */

typedef struct rect {
    double o[3], u[3], v[3], n[3];
} rect; /* o + s u + t v, s, t in [0, 1] */

static void rect_make(rect *r, double ox, double oy, double oz, double ux, double uy, double uz, double vx, double vy,
                      double vz, double nx, double ny, double nz)
{
    r->o[0] = ox;
    r->o[1] = oy;
    r->o[2] = oz;
    r->u[0] = ux;
    r->u[1] = uy;
    r->u[2] = uz;
    r->v[0] = vx;
    r->v[1] = vy;
    r->v[2] = vz;
    r->n[0] = nx;
    r->n[1] = ny;
    r->n[2] = nz;
}

/* The two surfaces, s = 0 along their common edge (x = y = 0), t along z. */
static void surfaces(rect *r)
{
    rect_make(&r[FLOOR], 0, 0, -Z_, W_, 0, 0, 0, 0, 2 * Z_, 0, 1, 0);
    rect_make(&r[WALL], 0, 0, -Z_, 0, H_, 0, 0, 0, 2 * Z_, 1, 0, 0);
}

static double dot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
static void   cross(const double *a, const double *b, double *c)
{
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* View factor from a point x with unit normal n to rectangle r lying on x's front side (Lambert:
 * F = 1/(2 pi) sum_i theta_i n . (R_i x R_i+1)/|R_i x R_i+1|). */
static double view_factor(const double *x, const double *n, const rect *r)
{
    double p[4][3];
    for (int k = 0; k < 3; ++k) {
        p[0][k] = r->o[k] - x[k];
        p[1][k] = p[0][k] + r->u[k];
        p[2][k] = p[1][k] + r->v[k];
        p[3][k] = p[0][k] + r->v[k];
    }
    double sum = 0.0;
    for (int i = 0; i < 4; ++i) {
        const double *a = p[i], *b = p[(i + 1) % 4];
        double        c[3];
        cross(a, b, c);
        double cl = sqrt(dot(c, c));
        if (cl == 0.0) continue; /* x on the edge's line: no solid angle */
        double theta = atan2(cl, dot(a, b));
        sum += theta * dot(n, c) / cl;
    }
    return fabs(sum) / (2.0 * BK_PI);
}

/* cos_x cos_y / (pi d^2) between points x, y with normals nx, ny (0 when they face away). */
static double kernel(const double *x, const double *nx, const double *y, const double *ny)
{
    double d[3] = { y[0] - x[0], y[1] - x[1], y[2] - x[2] }, d2 = dot(d, d);
    double cx = dot(nx, d), cy = -dot(ny, d);
    if (cx <= 0.0 || cy <= 0.0) return 0.0;
    return cx * cy / (BK_PI * d2 * d2);
}

/* A 1D rule on [0, 1]: panels between uniform breaks k / panels and geometric breaks c +- g^k
 * towards each centre c (k = 0..levels), npts-point Gauss-Legendre on each. */
typedef struct rule1 {
    int    n;
    double x[4096], w[4096];
} rule1;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void rule1_make(rule1 *r, int panels, const double *centres, int ncentres, int levels, double g)
{
    static const double gl_x[5] = { -0.906179845938664, -0.538469310105683, 0.0, 0.538469310105683, 0.906179845938664 };
    static const double gl_w[5] = { 0.236926885056189, 0.478628670499366, 0.568888888888889, 0.478628670499366,
                                    0.236926885056189 };
    double              br[1024];
    int                 nb = 0;
    for (int k = 0; k <= panels; ++k) br[nb++] = (double)k / panels;
    for (int c = 0; c < ncentres; ++c) {
        br[nb++] = centres[c];
        double step = 1.0;
        for (int k = 0; k <= levels; ++k, step *= g) {
            if (centres[c] - step > 0.0) br[nb++] = centres[c] - step;
            if (centres[c] + step < 1.0) br[nb++] = centres[c] + step;
        }
    }
    qsort(br, (size_t)nb, sizeof(double), cmp_double);
    r->n = 0;
    for (int i = 0; i + 1 < nb; ++i) {
        double a = br[i], b = br[i + 1];
        if (b - a < 1e-14) continue;
        for (int k = 0; k < 5; ++k) {
            r->x[r->n] = 0.5 * (a + b) + 0.5 * (b - a) * gl_x[k];
            r->w[r->n] = 0.5 * (b - a) * gl_w[k];
            r->n++;
        }
    }
}

/* Nodes of a 2D rule on rect r: positions and area weights. */
typedef struct rule2 {
    int n;
    double (*p)[3];
    double *w;
} rule2;

static void rule2_make(rule2 *q, const rect *r, const rule1 *rs, const rule1 *rt)
{
    double c[3];
    cross(r->u, r->v, c);
    double area = sqrt(dot(c, c));
    q->n = rs->n * rt->n;
    q->p = malloc(sizeof(double[3]) * (size_t)q->n);
    q->w = malloc(sizeof(double) * (size_t)q->n);
    int m = 0;
    for (int i = 0; i < rs->n; ++i)
        for (int j = 0; j < rt->n; ++j, ++m) {
            for (int k = 0; k < 3; ++k) q->p[m][k] = r->o[k] + rs->x[i] * r->u[k] + rt->x[j] * r->v[k];
            q->w[m] = rs->w[i] * rt->w[j] * area;
        }
}

static void rule2_free(rule2 *q)
{
    free(q->p);
    free(q->w);
}

typedef struct analytic {
    double f0, g1, g2, kint;
} analytic;

/* f0, g1, g2 (above) for point x on surface a; kint: the rule's integral of K alone, to match f0.
 * res scales the rules' resolution. */
static analytic analytic_at(const double *x, int a, int res)
{
    rect r[2];
    surfaces(r);
    int          b = 1 - a;
    static rule1 rs, rt;
    /* outer rule over B: graded towards the common edge (s = 0) and x's own z */
    double tc[3] = { (x[2] + Z_) / (2 * Z_), 0.0, 1.0 }, s0 = 0.0;
    rule1_make(&rs, 2 * res, &s0, 1, 3 + 2 * res, 0.3);
    rule1_make(&rt, 2 * res, tc, 1, 2 + 2 * res, 0.3);
    rule2 outer;
    rule2_make(&outer, &r[b], &rs, &rt);
    /* inner rule over A, shared by every outer node: graded towards the common edge and A's corners */
    rule1_make(&rs, 2 * res, &s0, 1, 5 + 2 * res, 0.3);
    rule1_make(&rt, 6 * res, tc + 1, 2, 2 + res, 0.3);
    rule2 inner;
    rule2_make(&inner, &r[a], &rs, &rt);
    if (getenv("BK_OPEN_VERBOSE")) printf("rules: outer %d nodes, inner %d\n", outer.n, inner.n);
    double *one_minus_fb = malloc(sizeof(double) * (size_t)inner.n);
    for (int j = 0; j < inner.n; ++j) one_minus_fb[j] = 1.0 - view_factor(inner.p[j], r[a].n, &r[b]);

    analytic res_;
    res_.f0 = view_factor(x, r[a].n, &r[b]);
    res_.kint = res_.g1 = res_.g2 = 0.0;
    for (int i = 0; i < outer.n; ++i) {
        double k = kernel(x, r[a].n, outer.p[i], r[b].n) * outer.w[i];
        if (k == 0.0) continue;
        res_.kint += k;
        res_.g1 += k * (1.0 - view_factor(outer.p[i], r[b].n, &r[a]));
        /* int_A K(y, z) (1 - F_B(z)) dz = c F_A(y) + int_A K(y, z) (1 - F_B(z) - c) dz with c = 1 - F_B(z*),
         * z* the point of A nearest y: the rule only sees the integrand where it is small and
         * smooth, not under the kernel's peak (sharp when y is near the common edge) */
        const double *y = outer.p[i];
        double        st[2];
        for (int m = 0; m < 2; ++m) {
            const double *e = m ? r[a].v : r[a].u;
            double        rel[3] = { y[0] - r[a].o[0], y[1] - r[a].o[1], y[2] - r[a].o[2] };
            st[m] = fmin(fmax(dot(rel, e) / dot(e, e), 1e-9), 1.0 - 1e-9);
        }
        double zs[3];
        for (int m = 0; m < 3; ++m) zs[m] = r[a].o[m] + st[0] * r[a].u[m] + st[1] * r[a].v[m];
        double c = 1.0 - view_factor(zs, r[a].n, &r[b]);
        double in = c * view_factor(y, r[b].n, &r[a]);
        for (int j = 0; j < inner.n; ++j)
            in += kernel(y, r[b].n, inner.p[j], r[a].n) * inner.w[j] * (one_minus_fb[j] - c);
        res_.g2 += k * in;
    }
    free(one_minus_fb);
    rule2_free(&outer);
    rule2_free(&inner);
    return res_;
}

/* ---- the bake ------------------------------------------------------------------------------ */

static void open_scene(bk_scene *s)
{
    bk_test_scene_alloc(s, 4);
    float z = (float)Z_, w = (float)W_, h = (float)H_;
    /* floor, facing +y */
    float f0[3] = { 0, 0, -z }, f1[3] = { 0, 0, z }, f2[3] = { w, 0, z }, f3[3] = { w, 0, -z };
    bk_test_set_tri(s, 0, f0, f1, f2);
    bk_test_set_tri(s, 1, f0, f2, f3);
    /* wall, facing +x */
    float w0[3] = { 0, 0, -z }, w1[3] = { 0, h, -z }, w2[3] = { 0, h, z }, w3[3] = { 0, 0, z };
    bk_test_set_tri(s, 2, w0, w1, w2);
    bk_test_set_tri(s, 3, w0, w2, w3);
    s->material_count = 2;
    s->materials = calloc(2, sizeof(bk_material));
    for (int m = 0; m < 2; ++m)
        for (int k = 0; k < 3; ++k) s->materials[m].kd[k] = RHO[m][k];
    s->tri_material = calloc(4, sizeof(uint32_t));
    s->tri_material[2] = s->tri_material[3] = WALL;
}

typedef struct probe {
    const char *name;
    double      x[3];
    int         surface;
    analytic    a;
} probe;

/* The texel values after `bounces` bounces at probe pr, channel c. */
static double expected(const probe *pr, uint32_t bounces, int c)
{
    int    a = pr->surface, b = 1 - a;
    double t = SKY[c] * (1.0 - pr->a.f0);
    if (bounces >= 1) t += RHO[b][c] * SKY[c] * pr->a.g1;
    if (bounces >= 2) t += RHO[b][c] * RHO[a][c] * SKY[c] * pr->a.g2;
    return t;
}

enum { NPROBES = 3 };

static void check_open(void)
{
    probe pr[NPROBES] = {
        { "floor near the wall", { 0.5, 0, 0 }, FLOOR, { 0, 0, 0, 0 } },
        { "floor off centre", { 1.2, 0, 0.7 }, FLOOR, { 0, 0, 0, 0 } },
        { "wall", { 0, 0.4, -0.3 }, WALL, { 0, 0, 0, 0 } },
    };
    rect r[2];
    surfaces(r);
    for (int i = 0; i < NPROBES; ++i) {
        pr[i].a = analytic_at(pr[i].x, pr[i].surface, 2);
        analytic fine = analytic_at(pr[i].x, pr[i].surface, 3);
        printf("%-20s F_B %.6f  g1 %.6f  g2 %.6f  (finer rules: %.1e %.1e %.1e; int K - F_B %.1e)\n", pr[i].name,
               pr[i].a.f0, pr[i].a.g1, pr[i].a.g2, fine.f0 - pr[i].a.f0, fine.g1 - pr[i].a.g1, fine.g2 - pr[i].a.g2,
               pr[i].a.kint - pr[i].a.f0);
        BK_EXPECTF(fabs(pr[i].a.kint - pr[i].a.f0) < 1e-6,
                   "%s: the rule integrates K to %.8f, Lambert's formula says %.8f", pr[i].name, pr[i].a.kint,
                   pr[i].a.f0);
        BK_EXPECTF(fabs(fine.g1 - pr[i].a.g1) < 1e-5 && fabs(fine.g2 - pr[i].a.g2) < 1e-5,
                   "%s: the integrals have not converged (g1 %.8f / %.8f, g2 %.8f / %.8f)", pr[i].name, pr[i].a.g1,
                   fine.g1, pr[i].a.g2, fine.g2);
        BK_EXPECT(pr[i].a.f0 > 0.05 && pr[i].a.g1 > 0.02 && pr[i].a.g2 > 0.005); /* every term matters */
    }
    /* Lambert's formula itself: a point far from a huge wall's edge sees half of it (an infinite
     * wall covers half the cosine-weighted hemisphere) */
    {
        rect big;
        rect_make(&big, 0, 0, -1e6, 0, 1e6, 0, 0, 0, 2e6, 1, 0, 0);
        double x[3] = { 1, 0, 0 }, n[3] = { 0, 1, 0 };
        double f = view_factor(x, n, &big);
        BK_EXPECTF(fabs(f - 0.5) < 1e-5, "view factor of a huge perpendicular wall: %.8f, expected 0.5", f);
    }

    bk_scene s;
    open_scene(&s);
    char          err[256];
    bk_accel      acc;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(&s, BK_ACCEL_BVH, &bo, &acc, err, sizeof err) == 0, "%s", err);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&acc);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view v = bk_bake_data_view(&d, &acc);

    /* another seed, another spp, another number of texels: the same answer within its error */
    static const struct {
        uint32_t seed, spp, per_probe;
    } sampling[] = { { 3, 64, 1024 }, { 12345, 7, 4096 }, { 99, 1, 16384 } };
    for (size_t sm = 0; sm < sizeof sampling / sizeof sampling[0]; ++sm) {
        uint32_t  n = sampling[sm].per_probe, total = NPROBES * n;
        bk_texel *tx = malloc(sizeof(bk_texel) * total);
        float    *out = malloc(sizeof(float) * 3 * total);
        uint8_t  *cov = malloc(total);
        for (uint32_t i = 0; i < total; ++i) {
            const probe *p = &pr[i / n];
            tx[i].px = (float)p->x[0];
            tx[i].py = (float)p->x[1];
            tx[i].pz = (float)p->x[2];
            tx[i].nx = (float)r[p->surface].n[0];
            tx[i].ny = (float)r[p->surface].n[1];
            tx[i].nz = (float)r[p->surface].n[2];
            tx[i].tri = p->surface == FLOOR ? 0 : 2;
            tx[i].pixel = i;
        }
        for (uint32_t bounces = 0; bounces <= 2; ++bounces) {
            bk_bake_run_opts o;
            memset(&o, 0, sizeof o);
            o.params.mode = BK_BAKE_LIGHT;
            o.params.spp = sampling[sm].spp;
            o.params.bounces = bounces;
            o.params.seed = sampling[sm].seed;
            o.params.eps = 1e-5f;
            o.params.texel_world = 0.01f;
            o.params.sun_cos = 1.0f;
            for (int c = 0; c < 3; ++c) o.params.sky[c] = SKY[c];
            o.trace = bk_trace_opts_default();
            o.max_launch_ms = 1e9;
            bk_bake_result res;
            BK_EXPECTF(bk_bake_texels(be, &v, tx, total, (int)total, 1, &o, out, cov, &res, err, sizeof err) == 0, "%s",
                       err);
            BK_EXPECTF(res.invalid == 0, "%u texels taken to be inside geometry", res.invalid);
            for (int i = 0; i < NPROBES; ++i)
                for (int c = 0; c < 3; ++c) {
                    double t = expected(&pr[i], bounces, c), sum = 0.0, sum2 = 0.0;
                    for (uint32_t k = 0; k < n; ++k) {
                        double e = out[3 * (i * n + k) + c] - t;
                        sum += e;
                        sum2 += e * e;
                    }
                    double mean = sum / n, var = (sum2 - n * mean * mean) / (n - 1), se = sqrt(var / n);
                    /* 5 standard errors, plus what the quadrature may be off by */
                    double tol = 5.0 * se + 2e-5;
                    if (c == 0)
                        printf("seed %5u spp %2u bounces %u %-20s expected %.5f, baked %.5f +- %.5f\n",
                               sampling[sm].seed, sampling[sm].spp, bounces, pr[i].name, t, t + mean, se);
                    BK_EXPECTF(se > 0.0 && fabs(mean) <= tol,
                               "seed %u, spp %u, %u bounces, %s, channel %d: baked mean %.6f, expected %.6f (off by "
                               "%.1f standard errors)",
                               sampling[sm].seed, sampling[sm].spp, bounces, pr[i].name, c, t + mean, t,
                               se > 0 ? fabs(mean) / se : 0.0);
                }
        }
        free(tx);
        free(out);
        free(cov);
    }
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_accel_free(&acc);
    bk_scene_free(&s);
}

int main(void)
{
    check_open();
    BK_TEST_DONE();
}
