/* probe_file.c - the light probes' JSON (probe_file.h). Numbers with 9 significant digits: a
 * float read back is the float written. */
#include "probe_file.h"

#include <stdlib.h>

void bk_probe_set_free(bk_probe_set *s)
{
    free(s->pos);
    free(s->sh);
    free(s->backs);
    free(s->valid);
    s->pos = s->sh = s->backs = NULL;
    s->valid = NULL;
    s->n = 0;
}

/* n floats of a, as a JSON array's items, line by line of `per`. */
static void floats(FILE *f, const float *a, size_t n, size_t per)
{
    for (size_t i = 0; i < n; ++i) fprintf(f, "%s%.9g", i == 0 ? "" : i % per ? "," : ",\n", a[i]);
}

int bk_probe_file_write(FILE *f, const bk_probe_set *s)
{
    fprintf(f,
            "{\"format\":\"baker light probes\",\"version\":1,\n"
            "\"basis\":\"real spherical harmonics to l = 2 of the incoming radiance, c_lm = integral L(w) Y_lm(w) "
            "dw, world space, in the order Y00; Y1-1 (y), Y10 (z), Y11 (x); Y2-2 (xy), Y2-1 (yz), Y20 (3z^2 - 1), "
            "Y21 (xz), Y22 (x^2 - y^2), with the constants 0.282095, 0.488603, 1.092548, 0.315392, 0.546274; the "
            "irradiance at normal n is E(n) = sum over l, m of A_l c_lm Y_lm(n) with A_0 = pi, A_1 = 2 pi / 3, A_2 = "
            "pi / 4, and E(n) / pi is the lightmap's value for a surface facing n (docs/baking.md, Light probes)\",\n"
            "\"count\":%u,\"samples\":%u,\"back_limit\":%.9g,\n",
            s->n, s->spp, s->back_limit);
    if (s->grid)
        fprintf(f, "\"grid\":{\"min\":[%.9g,%.9g,%.9g],\"spacing\":%.9g,\"dims\":[%u,%u,%u]},\n", s->grid_min[0],
                s->grid_min[1], s->grid_min[2], s->spacing, s->grid_dims[0], s->grid_dims[1], s->grid_dims[2]);
    fputs("\"positions\":[\n", f);
    floats(f, s->pos, 3 * (size_t)s->n, 3);
    fputs("],\n\"valid\":[", f);
    for (uint32_t i = 0; i < s->n; ++i) fprintf(f, "%s%s", i ? "," : "", s->valid[i] ? "true" : "false");
    fputs("],\n\"backs\":[\n", f);
    floats(f, s->backs, s->n, 16);
    fputs("],\n\"sh\":[\n", f);
    floats(f, s->sh, 27 * (size_t)s->n, 27);
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
