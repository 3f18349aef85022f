/* unit_object_scale.c - per-object texel density (--object-scale, bk_atlas_opts.tri_scale) and the
 * OBJ o / g names it matches:
 *   the loader names each triangle's o / g line (tri_object, object_names), BK_NONE before the
 *   first, and bk_scene_append keeps the names of both scenes;
 *   two equal boxes, the second at factor 2: its triangles get 4 times the texels per world area
 *   of the first (exactly, up to float UVs), no chart mixes the two, and the reported stretch
 *   leaves the factor out (1 on boxes);
 *   a factor outside (0, 1000] is refused with a message.
 */
#include "atlas.h"
#include "loader.h"
#include "scene.h"
#include "util.h"
#include "bk_test.h"

#include <math.h>
#include <stdio.h>

static double tri_area3(const bk_scene *s, uint32_t t)
{
    const float *p[3];
    for (int k = 0; k < 3; ++k) p[k] = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + k];
    double e1[3], e2[3];
    for (int d = 0; d < 3; ++d) {
        e1[d] = p[1][d] - p[0][d];
        e2[d] = p[2][d] - p[0][d];
    }
    double c0 = e1[1] * e2[2] - e1[2] * e2[1], c1 = e1[2] * e2[0] - e1[0] * e2[2], c2 = e1[0] * e2[1] - e1[1] * e2[0];
    return 0.5 * sqrt(c0 * c0 + c1 * c1 + c2 * c2);
}

static double tri_area_uv(const bk_atlas *a, uint32_t t)
{
    const float *u = a->uv + 6 * (size_t)t;
    return 0.5 * fabs(((double)u[2] - u[0]) * ((double)u[5] - u[1]) - ((double)u[3] - u[1]) * ((double)u[4] - u[0])) *
           a->width * a->height;
}

int main(void)
{
    char dir[] = "/tmp/bk_unit_oscale_XXXXXX", path[512], err[512];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/two_boxes.obj", dir);
    FILE *f = fopen(path, "w");
    BK_EXPECT(f != NULL);
    if (!f) BK_TEST_DONE();
    /* a stray triangle before any name, then box "small" and group "big statue" (spaces kept) */
    fprintf(f, "v 5 0 0\nv 6 0 0\nv 5 1 0\nf 1 2 3\n");
    for (int b = 0; b < 2; ++b) {
        fprintf(f, b ? "g big statue  \n" : "o small\n");
        double x0 = b * 3.0;
        int    base = 3 + 8 * b;
        for (int i = 0; i < 8; ++i) fprintf(f, "v %g %d %d\n", x0 + (i & 1), (i >> 1) & 1, (i >> 2) & 1);
        static const int q[6][4] = { { 0, 2, 3, 1 }, { 4, 5, 7, 6 }, { 0, 1, 5, 4 },
                                     { 2, 6, 7, 3 }, { 0, 4, 6, 2 }, { 1, 3, 7, 5 } };
        for (int k = 0; k < 6; ++k)
            fprintf(f, "f %d %d %d %d\n", base + q[k][0] + 1, base + q[k][1] + 1, base + q[k][2] + 1,
                    base + q[k][3] + 1);
    }
    fclose(f);
    bk_scene s;
    BK_EXPECTF(bk_scene_load(path, &s, err, sizeof err) == 0, "%s", err);
    BK_EXPECTF(s.object_count == 2 && s.tri_object, "%u object names", s.object_count);
    if (s.object_count == 2 && s.tri_object) {
        BK_EXPECTF(!strcmp(s.object_names[0], "small") && !strcmp(s.object_names[1], "big statue"), "names '%s' '%s'",
                   s.object_names[0], s.object_names[1]);
        BK_EXPECT(s.tri_object[0] == BK_NONE && s.tri_object[1] == 0 && s.tri_object[12] == 0 &&
                  s.tri_object[13] == 1 && s.tri_object[24] == 1);
        /* appended scenes keep their names, numbered after the first scene's */
        bk_scene two;
        memset(&two, 0, sizeof two);
        BK_EXPECT(bk_scene_append(&two, &s, err, sizeof err) == 0 && bk_scene_append(&two, &s, err, sizeof err) == 0);
        BK_EXPECT(two.object_count == 4 && two.tri_object && two.tri_object[s.tri_count + 13] == 3 &&
                  two.tri_object[s.tri_count] == BK_NONE && !strcmp(two.object_names[3], "big statue"));
        bk_scene_free(&two);
    }
    float *scale = malloc(sizeof(float) * s.tri_count);
    for (uint32_t t = 0; t < s.tri_count; ++t) scale[t] = s.tri_object && s.tri_object[t] == 1 ? 2.0f : 1.0f;
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = 256;
    o.tri_scale = scale;
    o.no_fill = 1; /* the fill pass would grow some charts further */
    bk_atlas a;
    BK_EXPECTF(bk_atlas_build(&s, &o, &a, err, sizeof err) == 0, "%s", err);
    if (a.uv) {
        double r1 = 0, r2 = 0, tpu2 = (double)a.texels_per_unit * a.texels_per_unit;
        int    bad = 0;
        for (uint32_t t = 1; t < s.tri_count; ++t) {
            double r = tri_area_uv(&a, t) / (tri_area3(&s, t) * tpu2);
            double want = scale[t] * scale[t];
            bad += fabs(r - want) > 1e-3 * want;
            if (scale[t] > 1) r2 = r;
            else r1 = r;
        }
        BK_EXPECTF(bad == 0, "%d triangles off their asked density (small %.4f, big %.4f of tpu^2)", bad, r1, r2);
        for (uint32_t t = 0; t < s.tri_count; ++t)
            for (uint32_t u = 0; u < s.tri_count; ++u)
                if (a.tri_chart[t] == a.tri_chart[u] && a.tri_chart[t] != BK_NONE) BK_EXPECT(scale[t] == scale[u]);
        BK_EXPECTF(fabs(a.stretch_l2 - 1) < 1e-3 && fabs(a.stretch_min - 1) < 1e-3 && fabs(a.stretch_max - 1) < 1e-3,
                   "stretch %.4f %.4f..%.4f", (double)a.stretch_l2, (double)a.stretch_min, (double)a.stretch_max);
        printf("density small %.4f, big %.4f (x tpu^2), %u charts, utilisation %.3f\n", r1, r2, a.chart_count,
               (double)a.utilisation);
        bk_atlas_free(&a);
    }
    scale[5] = 0.0f;
    BK_EXPECT(bk_atlas_build(&s, &o, &a, err, sizeof err) != 0 && strstr(err, "density factor"));
    free(scale);
    bk_scene_free(&s);
    remove(path);
    rmdir(dir);
    BK_TEST_DONE();
}
