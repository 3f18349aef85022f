/* probe_file.h - the light probes' file (docs/formats.md, "Light probes"): JSON, one object.
 *
 * Per probe its position, the 9 L2 spherical-harmonic coefficients of the incoming radiance (rgb
 * each: kernels/bk_bake.h, bk_sh9), the share of its rays that met the back of a surface, and
 * whether it is valid (that share at most the file's back_limit). Written through the caller's
 * stream (outputs.h: a temporary file renamed into place).
 */
#ifndef BK_PROBE_FILE_H
#define BK_PROBE_FILE_H

#include <stdint.h>
#include <stdio.h>

typedef struct bk_probe_set {
    uint32_t n;
    float   *pos;   /* 3 per probe (world space) */
    float   *sh;    /* 27 per probe: coefficient k's r g b at 3 k .. 3 k + 2 */
    float   *backs; /* per probe: the share of its first rays that met a back face */
    uint8_t *valid; /* per probe: backs <= back_limit */
    float    back_limit;
    uint32_t spp;          /* rays per probe */
    int      grid;         /* 1: the probes are a grid (below), x fastest */
    float    grid_min[3];  /*   its first probe */
    float    spacing;      /*   between neighbours */
    uint32_t grid_dims[3]; /*   probes along x, y, z */
} bk_probe_set;

void bk_probe_set_free(bk_probe_set *s);

/* The file into f; 0, or -1 when a write failed. */
int bk_probe_file_write(FILE *f, const bk_probe_set *s);

#endif
