/* probes.c - the probes' grid and their bake (probes.h). */
#include "probes.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bk_probe_grid(const float lo[3], const float hi[3], float spacing, bk_probe_set *s, char *err, size_t err_size)
{
    memset(s, 0, sizeof *s);
    if (!(spacing > 0.0f) || !isfinite(spacing)) return bk_fail(err, err_size, "probe spacing %g is not > 0", spacing);
    double n = 1;
    for (int k = 0; k < 3; ++k) {
        const double ext = hi[k] > lo[k] ? (double)hi[k] - lo[k] : 0.0, cells = floor(ext / spacing);
        s->grid_dims[k] = cells < 1 ? 1u : cells > BK_PROBES_MAX ? BK_PROBES_MAX : (uint32_t)cells;
        s->grid_min[k] = (float)(lo[k] + 0.5 * (ext - (double)(s->grid_dims[k] - 1) * spacing));
        n *= s->grid_dims[k];
    }
    if (n > BK_PROBES_MAX)
        return bk_fail(err, err_size, "a probe every %g units makes %u x %u x %u = %.0f probes, more than %u", spacing,
                       s->grid_dims[0], s->grid_dims[1], s->grid_dims[2], n, BK_PROBES_MAX);
    s->n = (uint32_t)n;
    s->grid = 1;
    s->spacing = spacing;
    if (!(s->pos = malloc(sizeof(float) * 3 * s->n)))
        return bk_fail(err, err_size, "out of memory for %u probes", s->n);
    uint32_t i = 0;
    for (uint32_t z = 0; z < s->grid_dims[2]; ++z)
        for (uint32_t y = 0; y < s->grid_dims[1]; ++y)
            for (uint32_t x = 0; x < s->grid_dims[0]; ++x, ++i) {
                s->pos[3 * i] = s->grid_min[0] + (float)x * spacing;
                s->pos[3 * i + 1] = s->grid_min[1] + (float)y * spacing;
                s->pos[3 * i + 2] = s->grid_min[2] + (float)z * spacing;
            }
    return 0;
}

int bk_bake_probes(bk_backend *be, const bk_bake_view *v, const bk_bake_params *p, const bk_trace_opts *o,
                   bk_probe_set *s, bk_trace_totals *totals, char *err, size_t err_size)
{
    bk_backend *m = bk_backend_member(be, 0);
    memset(totals, 0, sizeof *totals);
    if (!m->i->bake_probes) return bk_fail(err, err_size, "the %s backend bakes no probes", m->i->name(m));
    float *sums = malloc(sizeof(float) * BK_PROBE_SUMS * (s->n ? s->n : 1));
    s->sh = malloc(sizeof(float) * 27 * (s->n ? s->n : 1));
    s->backs = malloc(sizeof(float) * (s->n ? s->n : 1));
    s->valid = malloc(s->n ? s->n : 1);
    s->spp = p->spp;
    s->back_limit = BK_PROBE_BACK_LIMIT;
    int rc = !sums || !s->sh || !s->backs || !s->valid ? bk_fail(err, err_size, "out of memory for %u probes", s->n)
                                                       : m->i->bake_begin(m, v, NULL, 0, err, err_size);
    if (!rc) {
        bk_bake_params q = *p;
        q.directional = q.mask_count = 0; /* the texels' sums only (backend.h) */
        rc = m->i->bake_probes(m, s->pos, s->n, &q, o, sums, err, err_size);
        char e2[512];
        if (m->i->bake_end(m, NULL, NULL, totals, e2, sizeof e2) && !rc) rc = bk_fail(err, err_size, "%s", e2);
    }
    const float inv = p->spp ? 1.0f / (float)p->spp : 0.0f;
    for (uint32_t i = 0; !rc && i < s->n; ++i) {
        const float *t = sums + (size_t)i * BK_PROBE_SUMS;
        for (int k = 0; k < 27; ++k) s->sh[27 * (size_t)i + k] = t[k] * inv;
        s->backs[i] = t[27] * inv;
        s->valid[i] = s->backs[i] <= s->back_limit;
    }
    free(sums);
    return rc;
}
