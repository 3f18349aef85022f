/* probes.h - light probes for what moves through a baked level: where they go (a grid over the
 * scene's box) and their bake (kernels/bk_bake.h, bk_bake_probe) on a backend, into the set the
 * probe file holds (probe_file.h).
 */
#ifndef BK_PROBES_H
#define BK_PROBES_H

#include "backend.h"
#include "probe_file.h"

/* The most probes of one bake (28 floats of sums each). */
#define BK_PROBES_MAX (1u << 22)
/* A probe more than this share of whose rays meet the back of a surface is invalid: inside
 * geometry (all of them), under a floor or behind a wall seen from outside (about half). */
#define BK_PROBE_BACK_LIMIT 0.25f

/* The grid of probes `spacing` apart over the box lo..hi, at the centres of its cells (so at
 * least spacing / 2 inside it; one probe across an axis shorter than spacing) into s (pos, the
 * grid fields, n). 0, or -1 with err (too many probes, out of memory). */
int bk_probe_grid(const float lo[3], const float hi[3], float spacing, bk_probe_set *s, char *err, size_t err_size);

/* s's probes baked with p (its spp: rays per probe; bounces and lights as the map's) on be (a
 * group's first member), in a bake of their own (bake_begin with no texels, bake_end): sh, backs
 * and valid filled; *totals gets the bake's rays and time. 0, or -1 with err. */
int bk_bake_probes(bk_backend *be, const bk_bake_view *v, const bk_bake_params *p, const bk_trace_opts *o,
                   bk_probe_set *s, bk_trace_totals *totals, char *err, size_t err_size);

#endif
