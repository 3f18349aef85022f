/* cpu_voxmesh_roundtrip.c - --mesh-out of a voxel scene, baked again with --uv file, gives the
 * same lightmap.
 *
 * A voxel scene made here (a 12 x 12 ground slab, a mirrored L-shaped wall in two colours, an
 * emissive voxel) goes through the voxel surface, an atlas of one chart per quad at 2 texels per
 * voxel, and a CPU bake. Its OBJ + MTL (bk_mesh_write_obj_vox) are read back by the OBJ loader and
 * baked with the file's UVs at the same size. Every texel of the first bake must be a texel of
 * the second, at the same pixel, and (same pixel, same random numbers, the same point up to the
 * UVs' float rounding) agree to 1e-3 relative; the mean over the map within 0.1 %. The second
 * map has more texels (--uv file rasterizes conservatively: a ring around each quad, which the
 * first bake fills by dilation); they are not compared. The materials read back equal the ones
 * baked (Kd, Ke), and the quads come back as the same triangles in the same order. Each
 * instance is an object of the OBJ, named as the scene names it (vox_instance_I where it has no
 * name), and the MTL's vox_M materials name the lightmap by map_Ka, by its path from the OBJ's
 * folder.
 */
#include "accel_build.h"
#include "atlas.h"
#include "bake.h"
#include "loader.h"
#include "voxmesh.h"
#include "util.h"
#include "bk_test.h"
#include "bk_test_voxels.h"
#include "bk_test_image.h"
#include "mesh_out.h"
#include "raster.h"

#include <math.h>
#include <sys/stat.h>


static void make_scene(bk_scene *s)
{
    memset(s, 0, sizeof *s);
    s->material_count = 256;
    s->materials = calloc(256, sizeof(bk_material));
    for (int k = 0; k < 256; ++k) {
        snprintf(s->materials[k].name, sizeof s->materials[k].name, "palette_%d", k);
        for (int c = 0; c < 3; ++c) s->materials[k].kd[c] = 0.8f;
    }
    s->materials[1].kd[0] = 0.7f;
    s->materials[1].kd[1] = 0.5f;
    s->materials[1].kd[2] = 0.3f;
    s->materials[2].kd[0] = 0.2f;
    s->materials[2].kd[1] = 0.6f;
    s->materials[2].kd[2] = 0.9f;
    for (int c = 0; c < 3; ++c) s->materials[3].ke[c] = 20.0f;
    static const int8_t ID[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 }, MX[9] = { -1, 0, 0, 0, 1, 0, 0, 0, 1 };
    uint8_t            *g = malloc(4 * 144);
    for (int i = 0; i < 144; ++i) {
        g[4 * i] = (uint8_t)(i % 12);
        g[4 * i + 1] = (uint8_t)(i / 12);
        g[4 * i + 2] = 0;
        g[4 * i + 3] = 1;
    }
    bk_test_add_instance(s, bk_test_add_model(s, 12, 12, 1, g, 144), ID, 0, 0, 0);
    free(g);
    /* an L-shaped wall 5 long, 4 high, two colours, mirrored */
    uint8_t  w[4 * 40];
    uint32_t n = 0;
    for (int z = 0; z < 4; ++z)
        for (int x = 0; x < 5; ++x) {
            w[4 * n] = (uint8_t)x;
            w[4 * n + 1] = 0;
            w[4 * n + 2] = (uint8_t)z;
            w[4 * n + 3] = (uint8_t)(z < 2 ? 1 : 2);
            n++;
            if (x == 4 && z < 3) {
                w[4 * n] = 4;
                w[4 * n + 1] = 1;
                w[4 * n + 2] = (uint8_t)z;
                w[4 * n + 3] = 2;
                n++;
            }
        }
    bk_test_add_instance(s, bk_test_add_model(s, 5, 2, 4, w, n), MX, 1, 2, 3);
    /* the wall has a name (MagicaVoxel's _name), the others none */
    s->object_count = 1;
    s->object_names = malloc(sizeof(char *));
    s->object_names[0] = malloc(16);
    snprintf(s->object_names[0], 16, "wall piece");
    uint8_t e[4] = { 0, 0, 0, 3 };
    bk_test_add_instance(s, bk_test_add_model(s, 1, 1, 1, e, 1), ID, -3, 3, 5);
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) s->vox_instances[i].object = i == 1 ? 0 : BK_NONE;
}

/* Atlas, texels and a CPU bake of s at size x size; rgb and cov are returned (malloc'ed). */
static int bake(const bk_scene *s, const bk_atlas_opts *o, float **rgb, uint8_t **cov, bk_atlas *at, uint32_t *ntx)
{
    char      err[512];
    bk_texel *tx = NULL;
    if (bk_atlas_build(s, o, at, err, sizeof err)) {
        fprintf(stderr, "atlas: %s\n", err);
        return -1;
    }
    if (bk_atlas_rasterize(s, at, &tx, ntx, cov, err, sizeof err)) {
        fprintf(stderr, "raster: %s\n", err);
        return -1;
    }
    bk_accel      a;
    bk_build_opts bo = bk_build_opts_default();
    BK_EXPECTF(bk_accel_build(s, BK_ACCEL_BVH, &bo, &a, err, sizeof err) == 0, "%s", err);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    bk_backend   *be = bk_backend_cpu_init();
    bk_accel_view av = bk_accel_get_view(&a);
    BK_EXPECT(be->i->upload(be, &av, err, sizeof err) == 0);
    bk_bake_view     v = bk_bake_data_view(&d, &a);
    bk_bake_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.params.mode = BK_BAKE_LIGHT;
    ro.params.spp = 64;
    ro.params.bounces = 2;
    ro.params.seed = 7;
    ro.params.sun_cos = 1.0f;
    ro.params.sky[0] = 0.3f;
    ro.params.sky[1] = 0.4f;
    ro.params.sky[2] = 0.5f;
    ro.params.eps = 1e-4f * 20;
    ro.params.texel_world = 0.5f;
    ro.params.ao_distance = 2.0f;
    ro.trace = bk_trace_opts_default();
    ro.max_launch_ms = 50;
    size_t npx = BK_ATLAS_PIXELS(at);
    *rgb = malloc(sizeof(float) * 3 * npx);
    bk_bake_result r;
    BK_EXPECTF(bk_bake_texels(be, &v, tx, *ntx, at->width, at->height, &ro, *rgb, *cov, &r, err, sizeof err) == 0, "%s",
               err);
    free(tx);
    bk_backend_free(be);
    bk_bake_data_free(&d);
    bk_accel_free(&a);
    return 0;
}

int main(void)
{
    bk_scene s;
    make_scene(&s);
    char       err[512];
    bk_voxmesh vm;
    if (bk_voxmesh_build(&s, &vm, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const int      N = 2, size = 128;
    bk_atlas_rect *rects = malloc(sizeof(bk_atlas_rect) * vm.quad_count);
    for (uint32_t q = 0; q < vm.quad_count; ++q) {
        rects[q].w = vm.quads[q].w * N;
        rects[q].h = vm.quads[q].h * N;
        rects[q].group = vm.quads[q].instance;
    }
    bk_atlas_opts o;
    bk_atlas_opts_default(&o);
    o.size = size;
    o.rects = rects;
    o.rect_count = vm.quad_count;
    o.rect_first_tri = vm.first_quad_tri;
    o.rect_texels_per_unit = (float)N;
    bk_atlas at1, at2;
    float   *rgb1 = NULL, *rgb2 = NULL;
    uint8_t *cov1 = NULL, *cov2 = NULL;
    uint32_t n1 = 0, n2 = 0;
    if (bake(&vm.scene, &o, &rgb1, &cov1, &at1, &n1)) return 1;
    BK_EXPECT(n1 == vm.face_count * N * N);

    /* --mesh-out: OBJ + MTL beside it */
    char dir[256], obj[300], mtl[300];
    snprintf(dir, sizeof dir, "/tmp/bk_cpu_voxmesh_%ld", (long)getpid());
    mkdir(dir, 0700);
    snprintf(obj, sizeof obj, "%s/vox.obj", dir);
    snprintf(mtl, sizeof mtl, "%s/vox.mtl", dir);
    FILE *f = fopen(obj, "w"), *mf = fopen(mtl, "w");
    BK_EXPECT(f && mf);
    char lm[300];
    snprintf(lm, sizeof lm, "%s/lm.png", dir);
    const char      *lms[1] = { lm };
    bk_mesh_obj_opts mo;
    memset(&mo, 0, sizeof mo);
    mo.lightmap = lms;
    mo.vox_instances = s.vox_instances;
    mo.vox_instance_count = s.vox_instance_count;
    BK_EXPECTF(bk_mesh_write_obj_vox(f, obj, &vm.scene, &vm, &at1, mf, mtl, &mo, err, sizeof err) == 0, "%s", err);
    fclose(f);
    fclose(mf);
    {
        FILE  *rf = fopen(obj, "rb"), *rm = fopen(mtl, "rb");
        char   text[1 << 16], mtext[1 << 14];
        size_t k = rf ? fread(text, 1, sizeof text - 1, rf) : 0, km = rm ? fread(mtext, 1, sizeof mtext - 1, rm) : 0;
        text[k] = 0;
        mtext[km] = 0;
        if (rf) fclose(rf);
        if (rm) fclose(rm);
        BK_EXPECTF(strstr(text, "\no vox_instance_0\ng vox_instance_0\n") &&
                       strstr(text, "\no wall piece\ng vox_instance_1\n") && strstr(text, "\no vox_instance_2\n") &&
                       !strstr(text, dir),
                   "%s", strstr(text, "\no ") ? strstr(text, "\no ") : text);
        BK_EXPECTF(strstr(mtext, "newmtl vox_1\nKd ") && strstr(mtext, "\nmap_Ka lm.png\n") && !strstr(mtext, dir),
                   "%s", mtext);
    }

    bk_scene s2;
    if (bk_scene_load_obj(obj, &s2, err, sizeof err)) {
        fprintf(stderr, "reading back: %s\n", err);
        return 1;
    }
    BK_EXPECTF(s2.tri_count == vm.scene.tri_count, "%u triangles read back, %u written", s2.tri_count,
               vm.scene.tri_count);
    for (uint32_t t = 0; t < s2.tri_count && t < vm.scene.tri_count; ++t) {
        const bk_material *a = &vm.scene.materials[vm.scene.tri_material[t]], *b = &s2.materials[s2.tri_material[t]];
        int                same = 1;
        for (int k = 0; k < 3; ++k) same &= a->kd[k] == b->kd[k] && a->ke[k] == b->ke[k];
        for (int k = 0; k < 3; ++k) {
            const float *p = vm.scene.positions + 3 * (size_t)vm.scene.tri_v[3 * t + k],
                        *q = s2.positions + 3 * (size_t)s2.tri_v[3 * t + k];
            same &= p[0] == q[0] && p[1] == q[1] && p[2] == q[2];
        }
        if (!same) {
            BK_EXPECTF(0, "triangle %u read back differs (corners or material)", t);
            break;
        }
    }
    bk_atlas_opts o2;
    bk_atlas_opts_default(&o2);
    o2.size = size;
    o2.uv_from_file = 1;
    if (bake(&s2, &o2, &rgb2, &cov2, &at2, &n2)) return 1;
    BK_EXPECT(at2.width == at1.width && at2.height == at1.height);
    size_t   npx = (size_t)at1.width * at1.height;
    uint64_t missing = 0;
    for (size_t i = 0; i < npx; ++i) missing += cov1[i] && !cov2[i];
    BK_EXPECTF(missing == 0, "%llu texels of the voxel bake have none in the --uv file bake",
               (unsigned long long)missing);
    /* per texel: relative to the map's mean */
    double m1 = 0, m2 = 0;
    for (size_t i = 0; i < npx; ++i)
        if (cov1[i])
            for (int k = 0; k < 3; ++k) {
                m1 += rgb1[3 * i + k];
                m2 += rgb2[3 * i + k];
            }
    m1 /= 3.0 * n1;
    m2 /= 3.0 * n1;
    uint8_t *mask = malloc(npx);
    for (size_t i = 0; i < npx; ++i) mask[i] = cov1[i] != 0;
    bk_image_diff d = bk_image_compare(rgb1, rgb2, npx, mask, 1e-3 * m1);
    printf("round trip: %u quads, %u texels (%u with --uv file), mean %.6g vs %.6g, rmse %.3g, max %.3g, %llu of %llu "
           "texels off by > 1e-3 mean\n",
           vm.quad_count, n1, n2, m1, m2, d.rmse, d.max_abs, (unsigned long long)d.differ, (unsigned long long)d.count);
    BK_EXPECT(m1 > 0);
    BK_EXPECTF(fabs(m2 - m1) <= 1e-3 * m1, "means %g vs %g", m1, m2);
    BK_EXPECTF(d.differ <= d.count / 200, "%llu of %llu texels differ", (unsigned long long)d.differ,
               (unsigned long long)d.count);
    free(mask);
    remove(obj);
    remove(mtl);
    rmdir(dir);
    free(rgb1);
    free(rgb2);
    free(cov1);
    free(cov2);
    free(rects);
    bk_atlas_free(&at1);
    bk_atlas_free(&at2);
    bk_scene_free(&s2);
    bk_voxmesh_free(&vm);
    bk_scene_free(&s);
    BK_TEST_DONE();
}
