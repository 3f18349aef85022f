/* atlas_lscm.h - the smooth charts' least-squares conformal solve (atlas_smooth.c): its counters,
 * for atlas_bench and the tests. */
#ifndef BK_ATLAS_LSCM_H
#define BK_ATLAS_LSCM_H

#include <stddef.h>
#include <stdint.h>

/* A triangle of the least-squares problem: its complex residual is w sum_j (gx_j + i gy_j) z_j
 * over its corners' vertices v[j], z = u + i v (g: (gx, gy) per corner). */
typedef struct bk_lscm_tri {
    double   g[6], w;
    uint32_t v[3];
} bk_lscm_tri;

/* The direct solver's scratch (grown as needed; one per thread). */
typedef struct bk_lscm_direct bk_lscm_direct;
bk_lscm_direct               *bk_lscm_direct_new(void);
void                          bk_lscm_direct_free(bk_lscm_direct *S);
/* Minimises the chart's energy over the vertices of n not pinned (pin[2 j] set: vertex j stays at
 * x[2 j], x[2 j + 1]) exactly: x (u, v per vertex) gets the answer, its start giving the order.
 * 0, 1 when the system is singular (x as it was for the pinned, partly written for the rest),
 * -1 out of memory. */
int bk_lscm_direct_solve(bk_lscm_direct *S, const bk_lscm_tri *L, uint32_t nt, uint32_t n, const uint8_t *pin,
                         double *x);

/* Which solver the smooth charts use: 0 the conjugate gradients (CGLS), 1 the direct one. */
extern int bk_atlas_lscm_solver;

/* With bk_atlas_lscm_profile set, every solve adds to these: solves, their iterations, the
 * solves that stopped at the iteration cap, the solves' thread CPU time (nanoseconds) and
 * unknowns (vertices). */
typedef struct bk_atlas_lscm_counts {
    _Atomic uint64_t solves, iters, capped, ns, verts;
} bk_atlas_lscm_counts;
extern int                  bk_atlas_lscm_profile;
extern bk_atlas_lscm_counts bk_atlas_lscm_stats;

#endif /* BK_ATLAS_LSCM_H */
