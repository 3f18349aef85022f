/* unit_atlas_lscm.c - the smooth charts' direct conformal solve (src/atlas/atlas_lscm.c):
 *   on a curved grid patch (a bump, 30 x 30 vertices, so the nested dissection cuts it several
 *     times) and on a small one (no cut), bk_lscm_direct_solve leaves the pinned vertices where
 *     they were and its answer is the energy's minimum: the gradient at every free vertex is zero
 *     to rounding (against the gradient at the start), and moving any free vertex a little
 *     raises the energy;
 *   a flat patch unfolds to itself (the projection is conformal): every vertex where it was;
 *   two patches that share no vertex, both pins in one, are singular (the other moves freely):
 *     the solve says so (1).
 */
#include "atlas_lscm.h"
#include "bk_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An N x N grid of vertices z = f(x, y) (two triangles per cell, counter-clockwise), as
 * atlas_smooth.c lays a triangle into the problem: each in its own plane, corner 0 at the
 * origin, corner 1 on the x axis; w the square root of its area. pos gets the 3D positions. */
static uint32_t grid(int N, double bump, double off, uint32_t v0, bk_lscm_tri *T, double *pos)
{
    for (int j = 0; j < N; ++j)
        for (int i = 0; i < N; ++i) {
            double *p = pos + 3 * (size_t)(j * N + i);
            double  x = (double)i / (N - 1), y = (double)j / (N - 1);
            p[0] = x + off;
            p[1] = y;
            p[2] = bump * exp(-8 * ((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5)));
        }
    uint32_t nt = 0;
    for (int j = 0; j + 1 < N; ++j)
        for (int i = 0; i + 1 < N; ++i) {
            uint32_t a = (uint32_t)(j * N + i), b = a + 1, c = a + (uint32_t)N, d = c + 1;
            uint32_t tv[2][3] = { { a, b, d }, { a, d, c } };
            for (int h = 0; h < 2; ++h) {
                bk_lscm_tri *q = &T[nt++];
                double *P[3] = { pos + 3 * (size_t)tv[h][0], pos + 3 * (size_t)tv[h][1], pos + 3 * (size_t)tv[h][2] };
                double  e1[3], e2[3], cr[3];
                for (int k = 0; k < 3; ++k) {
                    e1[k] = P[1][k] - P[0][k];
                    e2[k] = P[2][k] - P[0][k];
                }
                cr[0] = e1[1] * e2[2] - e1[2] * e2[1];
                cr[1] = e1[2] * e2[0] - e1[0] * e2[2];
                cr[2] = e1[0] * e2[1] - e1[1] * e2[0];
                double dd = sqrt(cr[0] * cr[0] + cr[1] * cr[1] + cr[2] * cr[2]);
                double l1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
                double x2 = (e2[0] * e1[0] + e2[1] * e1[1] + e2[2] * e1[2]) / l1, y2 = dd / l1;
                double X[3] = { 0, l1, x2 }, Y[3] = { 0, 0, y2 };
                for (int k = 0; k < 3; ++k) {
                    int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
                    q->g[2 * k] = -(Y[k2] - Y[k1]) / dd;
                    q->g[2 * k + 1] = (X[k2] - X[k1]) / dd;
                    q->v[k] = v0 + tv[h][k];
                }
                q->w = sqrt(0.5 * dd);
            }
        }
    return nt;
}

/* the energy, and its gradient's largest modulus over the free vertices (grad: 2 per vertex) */
static double energy(const bk_lscm_tri *T, uint32_t nt, uint32_t n, const uint8_t *pin, const double *x, double *gmax,
                     double *grad)
{
    double e = 0;
    memset(grad, 0, sizeof(double) * 2 * n);
    for (uint32_t t = 0; t < nt; ++t) {
        const bk_lscm_tri *q = &T[t];
        double             a = 0, b = 0;
        for (int k = 0; k < 3; ++k) {
            double u = x[2 * (size_t)q->v[k]], v = x[2 * (size_t)q->v[k] + 1], gx = q->g[2 * k], gy = q->g[2 * k + 1];
            a += gx * u - gy * v;
            b += gy * u + gx * v;
        }
        a *= q->w;
        b *= q->w;
        e += a * a + b * b;
        for (int k = 0; k < 3; ++k) { /* d/du, d/dv of a^2 + b^2 */
            double gx = q->g[2 * k], gy = q->g[2 * k + 1];
            grad[2 * (size_t)q->v[k]] += 2 * q->w * (a * gx + b * gy);
            grad[2 * (size_t)q->v[k] + 1] += 2 * q->w * (-a * gy + b * gx);
        }
    }
    *gmax = 0;
    for (uint32_t j = 0; j < n; ++j)
        if (!pin[2 * (size_t)j]) *gmax = fmax(*gmax, hypot(grad[2 * (size_t)j], grad[2 * (size_t)j + 1]));
    return e;
}

static void test_minimum(int N, double bump)
{
    uint32_t     n = (uint32_t)(N * N), ntmax = 2 * (uint32_t)(N - 1) * (uint32_t)(N - 1);
    bk_lscm_tri *T = malloc(sizeof(bk_lscm_tri) * ntmax);
    double      *pos = malloc(sizeof(double) * 3 * n), *x = malloc(sizeof(double) * 2 * n),
           *x0 = malloc(sizeof(double) * 2 * n), *grad = malloc(sizeof(double) * 2 * n);
    uint8_t        *pin = calloc(2 * (size_t)n, 1);
    bk_lscm_direct *S = bk_lscm_direct_new();
    BK_EXPECT(T && pos && x && x0 && grad && pin && S);
    if (!T || !pos || !x || !x0 || !grad || !pin || !S) return;
    uint32_t nt = grid(N, bump, 0, 0, T, pos);
    /* the start: the projection along z, a little disturbed; pins at two opposite corners */
    for (uint32_t j = 0; j < n; ++j) {
        x[2 * (size_t)j] = pos[3 * (size_t)j] + 0.01 * sin(7.0 * j);
        x[2 * (size_t)j + 1] = pos[3 * (size_t)j + 1] + 0.01 * cos(5.0 * j);
    }
    uint32_t p0 = 0, p1 = n - 1;
    pin[2 * p0] = pin[2 * p0 + 1] = pin[2 * p1] = pin[2 * p1 + 1] = 1;
    for (int c = 0; c < 2; ++c) { /* the pins where the patch has them: a flat one maps to itself */
        x[2 * p0 + c] = pos[3 * p0 + c];
        x[2 * p1 + c] = pos[3 * p1 + c];
    }
    memcpy(x0, x, sizeof(double) * 2 * n);
    double g0, g1;
    double e0 = energy(T, nt, n, pin, x, &g0, grad);
    BK_EXPECT(bk_lscm_direct_solve(S, T, nt, n, pin, x) == 0);
    double e1 = energy(T, nt, n, pin, x, &g1, grad);
    BK_EXPECTF(e1 < e0 && g1 < 1e-9 * g0, "N %d bump %g: energy %g -> %g, gradient %g -> %g", N, bump, e0, e1, g0, g1);
    BK_EXPECT(x[2 * p0] == x0[2 * p0] && x[2 * p0 + 1] == x0[2 * p0 + 1] && x[2 * p1] == x0[2 * p1] &&
              x[2 * p1 + 1] == x0[2 * p1 + 1]);
    /* any free vertex moved a little: the energy rises */
    for (uint32_t j = 1; j < n - 1; j += 37)
        for (int c = 0; c < 2; ++c) {
            double keep = x[2 * (size_t)j + c], e2;
            x[2 * (size_t)j + c] = keep + 1e-3;
            e2 = energy(T, nt, n, pin, x, &g1, grad);
            BK_EXPECTF(e2 > e1, "vertex %u moved: energy %g -> %g", j, e1, e2);
            x[2 * (size_t)j + c] = keep;
        }
    if (bump == 0) /* flat: the projection itself */
        for (uint32_t j = 0, f0 = bk_test_failures; j < n && bk_test_failures == (int)f0; ++j)
            BK_EXPECTF(fabs(x[2 * (size_t)j] - pos[3 * (size_t)j]) < 1e-9 &&
                           fabs(x[2 * (size_t)j + 1] - pos[3 * (size_t)j + 1]) < 1e-9,
                       "flat vertex %u at (%g, %g), not (%g, %g)", j, x[2 * (size_t)j], x[2 * (size_t)j + 1],
                       pos[3 * (size_t)j], pos[3 * (size_t)j + 1]);
    bk_lscm_direct_free(S);
    free(T);
    free(pos);
    free(x);
    free(x0);
    free(grad);
    free(pin);
}

static void test_singular(void)
{
    const int    N = 4;
    uint32_t     n = 2 * N * N, ntmax = 4 * (N - 1) * (N - 1);
    bk_lscm_tri *T = malloc(sizeof(bk_lscm_tri) * ntmax);
    double      *pos = malloc(sizeof(double) * 3 * n), *x = calloc(2 * (size_t)n, sizeof(double));
    uint8_t     *pin = calloc(2 * (size_t)n, 1);
    BK_EXPECT(T && pos && x && pin);
    if (!T || !pos || !x || !pin) return;
    uint32_t nt = grid(N, 0.3, 0, 0, T, pos);
    nt += grid(N, 0.3, 2, (uint32_t)(N * N), T + nt, pos + 3 * N * N);
    for (uint32_t j = 0; j < n; ++j) {
        x[2 * (size_t)j] = pos[3 * (size_t)j];
        x[2 * (size_t)j + 1] = pos[3 * (size_t)j + 1];
    }
    /* both pins in the first patch: the second one may move as a whole (its energy does not
     * change), so the system is singular */
    pin[0] = pin[1] = pin[2 * (N * N - 1)] = pin[2 * (N * N - 1) + 1] = 1;
    bk_lscm_direct *S = bk_lscm_direct_new();
    int             rc = S ? bk_lscm_direct_solve(S, T, nt, n, pin, x) : -2;
    BK_EXPECTF(rc == 1, "two patches, one with no pin: %d", rc);
    bk_lscm_direct_free(S);
    free(T);
    free(pos);
    free(x);
    free(pin);
}

int main(void)
{
    test_minimum(30, 0.4);
    test_minimum(4, 0.3);
    test_minimum(12, 0);
    test_singular();
    BK_TEST_DONE();
}
