/* unit_vox.c - the MagicaVoxel .vox reader (src/io/vox.c) on files written here and on the corpus.
 *
 * Behaviour checked (see the comment at the top of src/io/vox.c):
 *   palette: colour index k is RGBA entry k-1; the default palette (rebuilt here from its rule:
 *     the 6x6x6 cube of {ff cc 99 66 33 00} without black, then red, green, blue, grey ramps).
 *   rotations: all 48 signed permutations, byte -> matrix -> byte, determinant -1 = mirror; every
 *     one placed on an odd-sized model, world boxes against the 8 transformed corners.
 *   graph: nested transforms (R = R_p R_c, t = R_p t_c + t_p), hidden nTRN / layer / nGRP, frame 0
 *     of animated nTRN and nSHP, shared shape nodes and models (stored once), legacy files.
 *   materials: MATL _emit -> ke = kd * _emit * 2^_flux; clamping above BK_KE_MAX.
 *   errors: every refusal names the file and the byte offset of the offending chunk or field, is
 *     one line, and leaves the scene empty.
 *   speed: a generated world of 54,000 instances of 200 models.
 *   corpus: every file under BK_SCENES_DIR/vox/ loads (slab6_vox_test.vox is refused), with the
 *     counts of ../shared/scenes/INDEX.md.
 * With BK_VOX_SEEDS=DIR in the environment, the files written here are kept in DIR (fuzz seeds).
 */
#include "loader.h"
#include "scene.h"
#include "util.h"
#include "bk_test.h"
#include "bk_test_vox_write.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[512];
static int  keep_files;
static char made[256][700];
static int  made_count;

static const char *write_bytes(const char *name, const void *d, size_t n)
{
    char *path = made[made_count++ % 256];
    snprintf(path, sizeof made[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

/* "VOX " version MAIN{K} into F, written as name; K is emptied for the next file. */
static const char *vox_write(const char *name, int version)
{
    vox_bytes(version);
    return write_bytes(name, F.p, F.n);
}

static const uint8_t one_voxel[4] = { 0, 0, 0, 1 };

/* ---- checks ----------------------------------------------------------------------------------- */

static void check_invariants(const char *what, const bk_scene *s)
{
    int bad = 0;
    for (uint32_t i = 0; i < s->vox_model_count; ++i) {
        const bk_vox_model *m = &s->vox_models[i];
        for (uint32_t v = 0; v < m->voxel_count; ++v) {
            const uint8_t *q = m->xyzi + 4 * (size_t)v;
            bad += q[0] >= m->size[0] || q[1] >= m->size[1] || q[2] >= m->size[2] || q[3] == 0;
        }
        bad += m->material_base + 256 > s->material_count;
    }
    for (uint32_t i = 0; i < s->vox_instance_count; ++i) {
        const bk_vox_instance *in = &s->vox_instances[i];
        int8_t                 m[9];
        bad += in->model >= s->vox_model_count;
        bad += !bk_vox_rot_matrix(in->rot, m) || memcmp(m, in->m, 9) != 0;
        for (int r = 0; r < 3; ++r) bad += in->lo[r] >= in->hi[r];
    }
    BK_EXPECTF(bad == 0, "%s: %d broken invariants", what, bad);
}

static int load_ok(const char *path, bk_scene *s)
{
    char err[512] = "";
    int  rc = bk_scene_load(path, s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s should load: %s", path, err);
    if (rc == 0) check_invariants(path, s);
    return rc == 0;
}

/* Fails with one line "path: byte N: ..." (N < 0: "path: ...") containing `what`, scene empty. */
static void load_fails(const char *path, long byte, const char *what)
{
    bk_scene s;
    char     err[512] = "", prefix[800];
    int      rc = bk_scene_load(path, &s, err, sizeof err);
    BK_EXPECTF(rc < 0, "%s should fail (%s)", path, what);
    if (rc >= 0) {
        bk_scene_free(&s);
        return;
    }
    BK_EXPECTF(!s.vox_models && !s.vox_instances && !s.materials && !s.vox_model_count && !s.vox_instance_count &&
                   !s.material_count,
               "%s: scene not left empty", path);
    if (byte >= 0) snprintf(prefix, sizeof prefix, "%s: byte %ld: ", path, byte);
    else snprintf(prefix, sizeof prefix, "%s: ", path);
    BK_EXPECTF(strncmp(err, prefix, strlen(prefix)) == 0, "message '%s' should start with '%s'", err, prefix);
    BK_EXPECTF(strstr(err, what) != NULL, "message '%s' should contain '%s'", err, what);
    BK_EXPECTF(strchr(err, '\n') == NULL, "message '%s' should be one line", err);
}

static float lin(uint8_t v)
{
    double c = v / 255.0;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}

static void mat_mul(const int8_t a[9], const int8_t b[9], int8_t out[9])
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            out[3 * r + c] = (int8_t)(a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c]);
}
static void mat_vec(const int8_t m[9], const int32_t v[3], int32_t out[3])
{
    for (int r = 0; r < 3; ++r) out[r] = m[3 * r] * v[0] + m[3 * r + 1] * v[1] + m[3 * r + 2] * v[2];
}
/* MagicaVoxel's Z-up frame to the world's Y-up one, by hand: (x, y, z) -> (x, z, -y) (vox.h) */
static const int8_t yup[9] = { 1, 0, 0, 0, 0, 1, 0, -1, 0 };
static void         to_world(const int8_t m[9], const int32_t t[3], int8_t wm[9], int32_t wt[3])
{
    mat_mul(yup, m, wm);
    mat_vec(yup, t, wt);
}
static int det3(const int8_t m[9])
{
    return m[0] * (m[4] * m[8] - m[5] * m[7]) - m[1] * (m[3] * m[8] - m[5] * m[6]) + m[2] * (m[3] * m[7] - m[4] * m[6]);
}

/* The box of world = M (p - floor(size/2)) + t over the 8 corners p of [0, size]. */
static void expect_box(const bk_vox_instance *in, const uint32_t size[3], const char *what)
{
    int32_t lo[3] = { INT32_MAX, INT32_MAX, INT32_MAX }, hi[3] = { INT32_MIN, INT32_MIN, INT32_MIN };
    for (int corner = 0; corner < 8; ++corner) {
        int32_t p[3], w[3];
        for (int a = 0; a < 3; ++a) p[a] = ((corner >> a) & 1 ? (int32_t)size[a] : 0) - (int32_t)(size[a] / 2);
        mat_vec(in->m, p, w);
        for (int a = 0; a < 3; ++a) {
            w[a] += in->t[a];
            if (w[a] < lo[a]) lo[a] = w[a];
            if (w[a] > hi[a]) hi[a] = w[a];
        }
    }
    BK_EXPECTF(memcmp(lo, in->lo, sizeof lo) == 0 && memcmp(hi, in->hi, sizeof hi) == 0,
               "%s: box (%d %d %d)-(%d %d %d), by hand (%d %d %d)-(%d %d %d)", what, in->lo[0], in->lo[1], in->lo[2],
               in->hi[0], in->hi[1], in->hi[2], lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]);
}

/* The default palette by its rule, 0xAABBGGRR. */
static void default_palette_rule(uint32_t pal[256])
{
    static const uint8_t lv[6] = { 0xff, 0xcc, 0x99, 0x66, 0x33, 0x00 };
    static const uint8_t ramp[10] = { 0xee, 0xdd, 0xbb, 0xaa, 0x88, 0x77, 0x55, 0x44, 0x22, 0x11 };
    int                  i = 0;
    pal[i++] = 0;
    for (int r = 0; r < 6; ++r)
        for (int g = 0; g < 6; ++g)
            for (int b = 0; b < 6; ++b)
                if (r < 5 || g < 5 || b < 5)
                    pal[i++] = 0xff000000u | (uint32_t)lv[b] << 16 | (uint32_t)lv[g] << 8 | lv[r];
    for (int c = 0; c < 4; ++c)
        for (int k = 0; k < 10; ++k)
            pal[i++] = 0xff000000u | (c == 3 ? 0x010101u * ramp[k] : (uint32_t)ramp[k] << (8 * c));
    BK_CHECK(i == 256);
}

static void expect_palette(const char *what, const bk_scene *s, const uint32_t pal[256], int shift)
{
    int      bad = 0;
    uint32_t base = s->vox_models[0].material_base;
    for (int k = 1; k < 256; ++k) {
        uint32_t           c = pal[shift ? k - 1 : k];
        const bk_material *m = &s->materials[base + k];
        char               name[16];
        snprintf(name, sizeof name, "vox_%d", k);
        bad += strcmp(m->name, name) != 0 || m->map_kd.path[0] != 0;
        for (int i = 0; i < 3; ++i) bad += fabsf(m->kd[i] - lin((uint8_t)(c >> (8 * i)))) > 1e-6f || m->ke[i] != 0;
    }
    BK_EXPECTF(bad == 0, "%s: %d palette materials differ", what, bad);
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_palette(void)
{
    uint32_t pal[256], rule[256];
    for (int i = 0; i < 256; ++i)
        pal[i] = 0xff000000u | (uint32_t)(i * 7 & 255) << 16 | (uint32_t)(255 - i) << 8 | (uint32_t)i;
    uint8_t v[4 * 255];
    for (int k = 1; k < 256; ++k) {
        v[4 * (k - 1)] = (uint8_t)(k % 16);
        v[4 * (k - 1) + 1] = (uint8_t)(k / 16);
        v[4 * (k - 1) + 2] = 0;
        v[4 * (k - 1) + 3] = (uint8_t)k;
    }
    c_model(16, 16, 1, 255, v);
    c_rgba(pal);
    bk_scene s;
    if (load_ok(vox_write("palette.vox", 150), &s)) {
        BK_EXPECT(s.material_count == 256 && s.vox_models[0].material_base == 0);
        expect_palette("RGBA shift", &s, pal, 1);
        /* colour index 1 is entry 0: (0, 255, 0) */
        BK_EXPECT(s.materials[1].kd[0] == 0.0f && s.materials[1].kd[1] == 1.0f && s.materials[1].kd[2] == 0.0f);
        bk_scene_free(&s);
    }
    default_palette_rule(rule);
    BK_EXPECT(memcmp(rule, bk_vox_default_palette, sizeof rule) == 0);
    BK_EXPECT(bk_vox_default_palette[1] == 0xffffffffu && bk_vox_default_palette[215] == 0xff330000u &&
              bk_vox_default_palette[216] == 0xff0000eeu && bk_vox_default_palette[255] == 0xff111111u);
    c_model(1, 1, 1, 1, one_voxel);
    if (load_ok(vox_write("default_palette.vox", 200), &s)) {
        expect_palette("default palette", &s, rule, 0);
        bk_scene_free(&s);
    }
}

static void test_rotations(void)
{
    int valid = 0, mirrors = 0, seen[128] = { 0 };
    for (int b = 0; b < 128; ++b) {
        int8_t m[9];
        if (!bk_vox_rot_matrix((uint8_t)b, m)) continue;
        valid++;
        int ok = 1;
        for (int r = 0; r < 3; ++r) {
            int nz = 0, cz = 0;
            for (int c = 0; c < 3; ++c) {
                nz += m[3 * r + c] != 0;
                cz += m[3 * c + r] != 0;
                ok &= m[3 * r + c] >= -1 && m[3 * r + c] <= 1;
            }
            ok &= nz == 1 && cz == 1;
        }
        BK_EXPECTF(ok, "byte %d: not a signed permutation", b);
        BK_EXPECTF(bk_vox_rot_byte(m) == b, "byte %d -> matrix -> byte %d", b, bk_vox_rot_byte(m));
        int neg = ((b >> 4) & 1) + ((b >> 5) & 1) + ((b >> 6) & 1);
        int col0 = b & 3, col1 = (b >> 2) & 3;
        int odd_perm = !(col0 == 0 && col1 == 1) && !(col0 == 1 && col1 == 2) && !(col0 == 2 && col1 == 0);
        int d = det3(m);
        BK_EXPECTF(d == ((neg + odd_perm) % 2 ? -1 : 1), "byte %d: determinant %d", b, d);
        mirrors += d < 0;
        seen[b] = 1;
    }
    BK_EXPECTF(valid == 48 && mirrors == 24, "%d valid bytes, %d mirrors", valid, mirrors);
    /* the spec's example: rows (0 1 0), (0 0 -1), (-1 0 0) */
    int8_t ex[9];
    BK_EXPECT(bk_vox_rot_matrix((uint8_t)(1 | 2 << 2 | 0 << 4 | 1 << 5 | 1 << 6), ex));
    static const int8_t want[9] = { 0, 1, 0, 0, 0, -1, -1, 0, 0 };
    BK_EXPECT(memcmp(ex, want, 9) == 0);

    /* every rotation placed on one 3x4x5 model (odd and even sides): one shared shape node */
    int     kids[48], n = 0;
    uint8_t v[8] = { 0, 0, 0, 1, 2, 3, 4, 2 };
    c_model(3, 4, 5, 2, v);
    for (int b = 0; b < 128; ++b) {
        if (!seen[b]) continue;
        char frame[64];
        snprintf(frame, sizeof frame, "_r=%d;_t=%d %d %d", b, 7 * n - 100, -3 + n, 11 - 2 * n);
        trn(2 + n, 1000, frame);
        kids[n] = 2 + n;
        n++;
    }
    trn(0, 1, "");
    c_grp(1, "", n, kids);
    shp(1000, 0);
    bk_scene s;
    if (load_ok(vox_write("rotations.vox", 200), &s)) {
        BK_EXPECT(s.vox_model_count == 1 && s.vox_instance_count == 48);
        n = 0;
        for (int b = 0; b < 128 && s.vox_instance_count == 48; ++b) {
            if (!seen[b]) continue;
            const bk_vox_instance *in = &s.vox_instances[n];
            char                   what[32];
            snprintf(what, sizeof what, "rotation %d", b);
            /* the file's (R, t), seen in the world's Y-up frame */
            int8_t  fm[9], wm[9];
            int32_t ft[3] = { 7 * n - 100, -3 + n, 11 - 2 * n }, wt[3];
            bk_vox_rot_matrix((uint8_t)b, fm);
            to_world(fm, ft, wm, wt);
            BK_EXPECTF(memcmp(in->m, wm, 9) == 0 && in->rot == bk_vox_rot_byte(wm) && in->model == 0, "%s: rot %d",
                       what, in->rot);
            BK_EXPECTF(det3(in->m) == det3(fm), "%s: the Y-up turn changed the determinant", what);
            BK_EXPECTF(memcmp(in->t, wt, sizeof wt) == 0 && in->t[1] == 11 - 2 * n && in->t[2] == 3 - n, "%s: t", what);
            expect_box(in, s.vox_models[0].size, what);
            /* a voxel cell lands inside the box */
            int32_t T[3], p[3] = { 2, 3, 4 }, w[3];
            bk_vox_instance_offset(in, s.vox_models[0].size, T);
            mat_vec(in->m, p, w);
            for (int a = 0; a < 3; ++a) BK_EXPECT(w[a] + T[a] >= in->lo[a] && w[a] + T[a] <= in->hi[a]);
            n++;
        }
        bk_scene_free(&s);
    }
}

static void test_nested(void)
{
    /* T0(_r A, t a) -> G1 -> T2(_r B, t b) -> G3 -> T4(_r C, t c) -> S5 */
    const int A = 1 | 2 << 2 | 1 << 5, B = 2 | 0 << 2 | 1 << 4 | 1 << 6, C = 0 | 2 << 2 | 1 << 5;
    char      f0[64], f2[64], f4[64];
    snprintf(f0, sizeof f0, "_r=%d;_t=10 20 30", A);
    snprintf(f2, sizeof f2, "_r=%d;_t=-4 5 7", B);
    snprintf(f4, sizeof f4, "_r=%d;_t=1 -2 3", C);
    c_model(5, 3, 7, 1, one_voxel);
    trn(0, 1, f0);
    int g1 = 2, g3 = 4;
    c_grp(1, "", 1, &g1);
    trn(2, 3, f2);
    c_grp(3, "", 1, &g3);
    trn(4, 5, f4);
    shp(5, 0);
    bk_scene s;
    if (!load_ok(vox_write("nested.vox", 200), &s)) return;
    int8_t a[9], b[9], c[9], ab[9], abc[9];
    bk_vox_rot_matrix((uint8_t)A, a);
    bk_vox_rot_matrix((uint8_t)B, b);
    bk_vox_rot_matrix((uint8_t)C, c);
    mat_mul(a, b, ab);
    mat_mul(ab, c, abc);
    int32_t tc[3] = { 1, -2, 3 }, tb[3] = { -4, 5, 7 }, ta[3] = { 10, 20, 30 }, x[3], y[3];
    mat_vec(b, tc, x); /* B c + b */
    for (int i = 0; i < 3; ++i) x[i] += tb[i];
    mat_vec(a, x, y); /* A (B c + b) + a */
    for (int i = 0; i < 3; ++i) y[i] += ta[i];
    BK_EXPECT(s.vox_instance_count == 1);
    if (s.vox_instance_count == 1) {
        const bk_vox_instance *in = &s.vox_instances[0];
        int8_t                 wm[9];
        int32_t                wt[3];
        to_world(abc, y, wm, wt);
        BK_EXPECT(memcmp(in->m, wm, 9) == 0 && in->rot == bk_vox_rot_byte(wm));
        BK_EXPECTF(memcmp(in->t, wt, sizeof wt) == 0, "t (%d %d %d), by hand (%d %d %d)", in->t[0], in->t[1], in->t[2],
                   wt[0], wt[1], wt[2]);
        expect_box(in, s.vox_models[0].size, "nested");
    }
    bk_scene_free(&s);
}

static void test_hidden_frames_shared(void)
{
    /* root T0 -> G1 { T2 hidden, T3 on hidden layer 5, T4 -> G9 hidden -> T10 -> S,
     *                 T5 on visible layer 6 -> S(model 1), T6 on undeclared layer 9 -> S(model 2),
     *                 T7 animated -> S11 animated, T8 -> S20 (model 1 again) } */
    uint8_t v[4] = { 0, 0, 0, 3 };
    for (int m = 0; m < 4; ++m) c_model(2 + m, 2, 2, 1, v);
    c_layr(5, "_name=off;_hidden=1");
    c_layr(6, "_hidden=0");
    trn(0, 1, "");
    int kids[7] = { 2, 3, 4, 5, 6, 7, 8 };
    c_grp(1, "", 7, kids);
    const char *plain = "";
    c_trn(2, "_hidden=1", 12, -1, 1, &plain);
    c_trn(3, "_name=x", 13, 5, 1, &plain);
    trn(4, 9, "");
    int k10 = 10;
    c_grp(9, "_hidden=1", 1, &k10);
    trn(10, 14, "");
    c_trn(5, "", 15, 6, 1, &plain);
    c_trn(6, "_hidden=0", 16, 9, 1, &plain);
    const char *frames[3] = { "_f=5;_t=100 0 0", "_t=1 2 3;_f=0", "_t=9 9 9" };
    c_trn(7, "", 11, -1, 3, frames);
    int         models[3] = { 3, 0, 2 };
    const char *mf[3] = { "_f=3", "_f=0", "" };
    c_shp(11, 3, models, mf);
    trn(8, 20, "_t=0 0 -5");
    for (int i = 12; i <= 14; ++i) shp(i, 3);
    shp(15, 1);
    shp(16, 2);
    shp(20, 1);
    bk_scene s;
    if (!load_ok(vox_write("hidden.vox", 200), &s)) return;
    BK_EXPECTF(s.vox_instance_count == 4, "%u instances", s.vox_instance_count);
    BK_EXPECT(s.vox_model_count == 4);
    if (s.vox_instance_count == 4) {
        BK_EXPECT(s.vox_instances[0].model == 1 && s.vox_instances[1].model == 2);
        /* _t 1 2 3 in the world's Y-up frame: (1, 3, -2) */
        BK_EXPECT(s.vox_instances[2].model == 0 && s.vox_instances[2].t[0] == 1 && s.vox_instances[2].t[1] == 3 &&
                  s.vox_instances[2].t[2] == -2);
        BK_EXPECT(s.vox_instances[3].model == 1 && s.vox_instances[3].t[1] == -5 && s.vox_instances[3].t[2] == 0);
    }
    bk_scene_free(&s);

    /* frames with no _f 0: the first */
    c_model(1, 1, 1, 1, one_voxel);
    c_model(1, 1, 1, 1, one_voxel);
    const char *fr2[2] = { "_f=2;_t=4 5 6", "_f=7;_t=1 1 1" };
    c_trn(0, "", 1, -1, 2, fr2);
    int         m2[2] = { 1, 0 };
    const char *mf2[2] = { "_f=4", "_f=9" };
    c_shp(1, 2, m2, mf2);
    if (load_ok(vox_write("frames.vox", 200), &s)) {
        BK_EXPECT(s.vox_instance_count == 1 && s.vox_instances[0].model == 1 && s.vox_instances[0].t[0] == 4);
        bk_scene_free(&s);
    }
}

static void test_legacy(void)
{
    uint8_t v[8] = { 0, 0, 0, 1, 4, 2, 0, 9 };
    c_raw("PACK", 4);
    c_model(5, 3, 2, 2, v);
    c_raw("MATT", 20);
    c_model(2, 2, 2, 1, one_voxel);
    c_raw("NOTE", 9);
    bk_scene s;
    if (!load_ok(vox_write("legacy.vox", 150), &s)) return;
    /* at the identity of the file's frame: the Y-up turn alone */
    BK_EXPECT(s.vox_model_count == 2 && s.vox_instance_count == 2);
    for (uint32_t i = 0; i < s.vox_instance_count; ++i) {
        const bk_vox_instance *in = &s.vox_instances[i];
        BK_EXPECT(in->model == i && memcmp(in->m, yup, 9) == 0 && in->rot == bk_vox_rot_byte(yup));
        BK_EXPECT(in->t[0] == 0 && in->t[1] == 0 && in->t[2] == 0);
        expect_box(in, s.vox_models[i].size, "legacy");
    }
    /* the 5x3x2 model: x -2..3, its z -1..1 up the world's y, its y -1..2 along the world's -z */
    const bk_vox_instance *in0 = &s.vox_instances[0];
    BK_EXPECTF(in0->lo[0] == -2 && in0->hi[0] == 3 && in0->lo[1] == -1 && in0->hi[1] == 1 && in0->lo[2] == -2 &&
                   in0->hi[2] == 1,
               "box (%d %d %d)-(%d %d %d)", in0->lo[0], in0->lo[1], in0->lo[2], in0->hi[0], in0->hi[1], in0->hi[2]);
    BK_EXPECT(s.vox_models[0].voxel_count == 2 && memcmp(s.vox_models[0].xyzi, v, 8) == 0);
    bk_scene_free(&s);
}

static void test_emission(void)
{
    uint32_t pal[256];
    for (int i = 0; i < 256; ++i) pal[i] = 0xff0080ffu; /* r 255, g 128, b 0 */
    c_model(1, 1, 1, 1, one_voxel);
    c_rgba(pal);
    c_matl(1, "_type=_diffuse;_emit=3");
    c_matl(2, "_type=_emit;_emit=0.5;_flux=2");
    c_matl(3, "_type=_emit;_emit=2");
    c_matl(4, "_type=_emit;_emit=1e20;_flux=4");
    c_matl(5, "_type=_emit;_emit=-1");
    bk_scene s;
    if (!load_ok(vox_write("emit.vox", 200), &s)) return;
    const bk_material *m = s.materials;
    for (int i = 0; i < 3; ++i) {
        BK_EXPECT(m[1].ke[i] == 0 && m[5].ke[i] == 0);
        BK_EXPECTF(fabsf(m[2].ke[i] - m[2].kd[i] * 2.0f) < 1e-6f, "ke %g kd %g", m[2].ke[i], m[2].kd[i]);
        BK_EXPECT(fabsf(m[3].ke[i] - m[3].kd[i] * 2.0f) < 1e-6f);
        BK_EXPECT(m[4].ke[i] <= BK_KE_MAX && (m[4].kd[i] == 0 || m[4].ke[i] == BK_KE_MAX));
    }
    BK_EXPECT(m[2].ke[0] == 2.0f && m[2].ke[2] == 0.0f);
    bk_scene_free(&s);

    /* MATL ids 1..256 as MagicaVoxel writes them: 256 is slot 0 (no voxel's, left black), the
     * others their own slot; ogt_vox reads them alike (id & 0xFF) */
    for (int em = 0; em < 2; ++em) {
        c_model(1, 1, 1, 1, one_voxel);
        c_rgba(pal);
        c_matl_all(em ? 255 : 256, "2");
        if (!load_ok(vox_write("matl256.vox", 200), &s)) continue;
        m = s.materials;
        BK_EXPECT(s.material_count == 256 && m[0].kd[0] == 0 && m[0].ke[0] == 0 && m[0].ke[1] == 0);
        for (int k = 1; k < 256; ++k)
            BK_EXPECTF(m[k].ke[0] == (em && k == 255 ? 2.0f * m[k].kd[0] : 0.0f), "matl256 %d: slot %d ke %g", em, k,
                       m[k].ke[0]);
        bk_scene_free(&s);
    }
}

static void test_errors(void)
{
    char   p[800];
    size_t at;
    load_fails(write_bytes("magic.vox", "VOX!\x96\0\0\0", 8), 0, "not a MagicaVoxel file");
    c_model(1, 1, 1, 1, one_voxel);
    load_fails(vox_write("version.vox", 151), 4, "version 151");
    /* first chunk not MAIN, MAIN past the end, a chunk past MAIN, the file cut short */
    c_model(1, 1, 1, 1, one_voxel);
    vox_write("tmp.vox", 150);
    memcpy(F.p + 8, "MAIX", 4);
    load_fails(write_bytes("notmain.vox", F.p, F.n), 8, "expected MAIN");
    memcpy(F.p + 8, "MAIN", 4);
    load_fails(write_bytes("cut.vox", F.p, F.n - 1), 8, "runs past the end of the file");
    load_fails(write_bytes("cut2.vox", F.p, 14), 8, "cut short");
    F.p[20 + 4] = 40; /* SIZE content 40 bytes */
    load_fails(write_bytes("chunkpast.vox", F.p, F.n), 20, "runs past the end of MAIN");
    F.p[20 + 4] = 8; /* SIZE content 8 bytes: z missing */
    load_fails(write_bytes("shortsize.vox", F.p, F.n), 20 + 12 + 8, "SIZE z: cut short");
    /* sizes */
    c_model(0, 1, 1, 0, NULL);
    load_fails(vox_write("size0.vox", 150), 32, "SIZE x = 0");
    c_model(1, 1, 257, 0, NULL);
    load_fails(vox_write("size257.vox", 150), 40, "SIZE z = 257");
    c_size(1, 1, 1);
    at = c_size(1, 1, 1);
    load_fails(vox_write("size2.vox", 150), 20, "SIZE chunk without the XYZI");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_size(2, 2, 2);
    load_fails(vox_write("sizeend.vox", 150), (long)at, "SIZE chunk without the XYZI");
    at = c_xyzi(1, one_voxel);
    load_fails(vox_write("xyzi.vox", 150), (long)at, "XYZI chunk without a SIZE");
    /* voxels */
    uint8_t v[8] = { 0, 0, 0, 1, 1, 2, 2, 5 };
    at = c_model(2, 2, 2, 2, v);
    load_fails(vox_write("outside.vox", 150), (long)at + 24 + 20, "voxel 1 at (1 2 2) is outside its 2x2x2 model");
    v[5] = 1;
    v[6] = 1;
    v[7] = 0;
    at = c_model(2, 2, 2, 2, v);
    load_fails(vox_write("index0.vox", 150), (long)at + 24 + 20, "colour index 0");
    at = c_size(2, 2, 2);
    {
        size_t a = chunk_begin("XYZI");
        w_i32(&K, 0x7fffffff);
        w_bytes(&K, v, 8);
        chunk_end(a);
    }
    load_fails(vox_write("count.vox", 150), (long)at + 24 + 12, "XYZI voxel count 2147483647 does not fit");
    /* palette, materials */
    c_model(1, 1, 1, 1, one_voxel);
    at = c_raw("RGBA", 1020);
    load_fails(vox_write("rgba.vox", 150), (long)at, "RGBA chunk of 1020 bytes");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_matl(300, "_type=_emit");
    load_fails(vox_write("matlid.vox", 200), (long)at + 12, "MATL id 300 outside 0..256");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_matl(257, "_type=_diffuse");
    load_fails(vox_write("matl257.vox", 200), (long)at + 12, "MATL id 257 outside 0..256");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_matl(-1, "_type=_diffuse");
    load_fails(vox_write("matlneg.vox", 200), (long)at + 12, "MATL id -1 outside 0..256");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_matl(7, "_type=_emit;_emit=nan");
    load_fails(vox_write("nan.vox", 200), (long)at + 12 + 4 + 4 + 4 + 5 + 4 + 5 + 4 + 5,
               "\"_emit\" \"nan\": not a finite number");
    c_model(1, 1, 1, 1, one_voxel);
    at = c_matl(7, "_flux=inf");
    load_fails(vox_write("inf.vox", 200), (long)at + 12 + 4 + 4 + 4 + 5, "\"_flux\" \"inf\"");
    c_model(1, 1, 1, 1, one_voxel);
    at = chunk_begin("MATL");
    w_i32(&K, 1);
    w_i32(&K, 1 << 30);
    chunk_end(at);
    load_fails(vox_write("dict.vox", 200), (long)at + 20 + 12 + 4, "MATL dictionary size 1073741824 does not fit");
    /* transforms */
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 1, "_r=3");
    shp(1, 0);
    load_fails(vox_write("rot3.vox", 200), (long)at + 40 + 6, "\"_r\" 3 is not a rotation");
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 1, "_r=12x");
    shp(1, 0);
    load_fails(vox_write("rotx.vox", 200), (long)at + 40 + 6, "\"_r\" \"12x\": expected 1 integer");
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 1, "_t=1 2");
    shp(1, 0);
    load_fails(vox_write("t2.vox", 200), (long)at + 40 + 6, "\"_t\" \"1 2\": expected 3 integers");
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 1, "_t=1\0012 3"); /* quoted bytes are escaped: one line */
    shp(1, 0);
    load_fails(vox_write("tnl.vox", 200), (long)at + 40 + 6, "\"_t\" \"1\\x012 3\": expected 3 integers");
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 1, "_t=1 300000000 2");
    shp(1, 0);
    load_fails(vox_write("tbig.vox", 200), (long)at + 40 + 6, "expected 3 integers in -8388608..8388608");
    c_model(1, 1, 1, 1, one_voxel);
    trn(0, 1, "_t=8388608 0 0");
    at = trn(1, 2, "_t=8388608 0 0");
    shp(2, 0);
    load_fails(vox_write("tsum.vox", 200), (long)at, "composed translation 16777216 beyond +-8388608 (2^23");
    /* graph structure */
    c_model(1, 1, 1, 1, one_voxel);
    trn(0, 1, "");
    shp(1, 0);
    at = shp(1, 0);
    load_fails(vox_write("twice.vox", 200), (long)at, "node id 1 defined twice (first at byte");
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(0, 7, "");
    shp(1, 0);
    load_fails(vox_write("nochild.vox", 200), (long)at + 20, "node 0 names child node 7, which does not exist");
    c_model(1, 1, 1, 1, one_voxel);
    trn(0, 1, "");
    at = shp(1, 1);
    load_fails(vox_write("nomodel.vox", 200), (long)at + 24, "nSHP node 1 uses model 1, but the file has 1 models");
    {
        c_model(1, 1, 1, 1, one_voxel);
        trn(0, 1, "");
        int kids[2] = { 2, 2 };
        at = c_grp(1, "", 2, kids);
        trn(2, 3, "");
        shp(3, 0);
        load_fails(vox_write("parents.vox", 200), (long)at + 28, "names child node 2, which already has a parent");
    }
    {
        c_model(1, 1, 1, 1, one_voxel);
        at = trn(0, 1, "");
        int k0 = 0;
        c_grp(1, "", 1, &k0);
        load_fails(vox_write("loop.vox", 200), (long)at, "the scene graph loops through node 0");
    }
    c_model(1, 1, 1, 1, one_voxel);
    at = trn(3, 1, "");
    shp(1, 0);
    load_fails(vox_write("noroot.vox", 200), (long)at, "no node 0");
    c_model(1, 1, 1, 1, one_voxel);
    for (int i = 0; i < BK_VOX_MAX_DEPTH + 5; ++i) {
        size_t a = trn(i, i + 1, "");
        if (i == BK_VOX_MAX_DEPTH) at = a;
    }
    shp(BK_VOX_MAX_DEPTH + 5, 0);
    load_fails(vox_write("deep.vox", 200), (long)at, "scene graph deeper than 1024");
    c_model(1, 1, 1, 1, one_voxel);
    trn(0, 1, "");
    at = c_shp(1, 0, NULL, NULL);
    load_fails(vox_write("shp0.vox", 200), (long)at + 20, "nSHP node 1 has no model");
    c_model(1, 1, 1, 1, one_voxel);
    {
        const char *f = "";
        c_trn(0, "_hidden=1", 1, -1, 1, &f);
    }
    shp(1, 0);
    load_fails(vox_write("allhidden.vox", 200), 8, "no visible instance");
    c_raw("RGBA", 1024);
    load_fails(vox_write("nomodel2.vox", 150), 8, "no model");
    /* the file itself: the SLAB6 format, not a regular file, over the size limit, missing */
    uint8_t slab[12] = { 39, 0, 0, 0, 13, 0, 0, 0, 43, 0, 0, 0 };
    load_fails(write_bytes("slab6.vox", slab, sizeof slab), 0, "not a MagicaVoxel file");
    load_fails(write_bytes("empty.vox", "", 0), 0, "not a MagicaVoxel file");
    load_fails(write_bytes("magic_only.vox", "VOX ", 4), 4, "ends before the version");
    snprintf(p, sizeof p, "%s/dir.vox", tmpdir);
    BK_EXPECT(mkdir(p, 0700) == 0);
    load_fails(p, -1, "is a directory, not a regular file");
    rmdir(p);
    snprintf(p, sizeof p, "%s/null.vox", tmpdir);
    BK_EXPECT(symlink("/dev/null", p) == 0);
    load_fails(p, -1, "is a device, not a regular file");
    unlink(p);
    snprintf(p, sizeof p, "%s/huge.vox", tmpdir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    BK_EXPECT(fd >= 0 && ftruncate(fd, (off_t)BK_VOX_MAX_BYTES + 1) == 0);
    if (fd >= 0) close(fd);
    load_fails(p, -1, "larger than the 2147 MB");
    unlink(p);
    snprintf(p, sizeof p, "%s/missing.vox", tmpdir);
    load_fails(p, -1, "cannot open");
}

/* More models than vox.h allows: 2^20 + 1 empty 1x1x1 models, 42 MB. */
static void test_model_limit(void)
{
    size_t at = 0;
    for (uint32_t i = 0; i <= BK_VOX_MAX_MODELS; ++i) {
        size_t a = c_size(1, 1, 1);
        c_xyzi(0, NULL);
        if (i == BK_VOX_MAX_MODELS) at = a;
    }
    const char *path = vox_write("models.vox", 150);
    load_fails(path, (long)at + 24, "more than 1048576 models");
    unlink(path);
}

/* A generated world: 54,000 placements of 200 models, each its own nTRN + nSHP. */
/* An instance is named by the nTRN right above its shape ("_name"), control bytes made '_';
 * a shape under an unnamed nTRN has none, whatever its ancestors are called. */
static void test_names(void)
{
    const int kids[2] = { 2, 4 };
    c_model(2, 2, 2, 1, one_voxel);
    c_trn(0, "_name=world", 1, -1, 1, (const char *const[]){ "" });
    c_grp(1, "", 2, kids);
    c_trn(2, "_name=lamp\tpost", 3, -1, 1, (const char *const[]){ "_t=4 0 0" });
    shp(3, 0);
    trn(4, 3, "_t=-4 0 0");
    bk_scene s;
    if (!load_ok(vox_write("names.vox", 200), &s)) return;
    BK_EXPECT(s.vox_instance_count == 2 && s.object_count == 1);
    uint32_t named = 0;
    for (uint32_t i = 0; i < s.vox_instance_count; ++i) {
        const bk_vox_instance *in = &s.vox_instances[i];
        if (in->object == BK_NONE) continue;
        named++;
        BK_EXPECTF(in->object < s.object_count && !strcmp(s.object_names[in->object], "lamp_post"),
                   "instance %u named \"%s\"", i, in->object < s.object_count ? s.object_names[in->object] : "?");
    }
    BK_EXPECT(named == 1);
    bk_scene_free(&s);
}

static void test_speed(void)
{
    enum { MODELS = 200, PLACED = 54000 };
    uint32_t seed = 12345;
    uint8_t  v[4 * 64];
    for (int m = 0; m < MODELS; ++m) {
        int n = 0;
        for (int z = 0; z < 4; ++z)
            for (int y = 0; y < 4; ++y)
                for (int x = 0; x < 4; ++x) {
                    seed = seed * 1664525u + 1013904223u;
                    if ((seed >> 28) & 1) {
                        v[4 * n] = (uint8_t)(x + m % 3);
                        v[4 * n + 1] = (uint8_t)y;
                        v[4 * n + 2] = (uint8_t)z;
                        v[4 * n + 3] = (uint8_t)(1 + m);
                        n++;
                    }
                }
        c_model(4 + m % 3, 4 + m % 5, 5, n, v);
    }
    trn(0, 1, "");
    int *kids = malloc(PLACED * sizeof *kids);
    for (int i = 0; i < PLACED; ++i) kids[i] = 2 + 2 * i;
    c_grp(1, "", PLACED, kids);
    free(kids);
    static const int rots[6] = { 4, 17, 33, 52, 6, 40 };
    for (int i = 0; i < PLACED; ++i) {
        char f[64];
        snprintf(f, sizeof f, "_r=%d;_t=%d %d %d", rots[i % 6], (i % 240) * 8, (i / 240) * 8, i % 7);
        trn(2 + 2 * i, 3 + 2 * i, f);
        shp(3 + 2 * i, i % MODELS);
    }
    const char *path = vox_write("world.vox", 200);
    bk_scene    s;
    double      t0 = bk_time_now();
    int         ok = load_ok(path, &s);
    double      dt = bk_time_now() - t0;
    /* the time is printed, not asserted: a loaded CI machine is no benchmark (CONVENTIONS.md) */
    printf("world of %d instances, %d models, %.1f MB: loaded in %.3f s\n", PLACED, MODELS, F.n / 1e6, dt);
    if (ok) {
        BK_EXPECT(s.vox_instance_count == PLACED && s.vox_model_count == MODELS);
        BK_EXPECT(s.vox_instances[PLACED - 1].model == (PLACED - 1) % MODELS);
        bk_scene_free(&s);
    }
    unlink(path); /* too large for a fuzz seed */
}

typedef struct corpus_entry {
    const char *name;
    uint32_t    models, instances;
    uint64_t    voxels;
    uint32_t    size[3];
} corpus_entry;

static void test_corpus(void)
{
    char dir[700], path[1400];
    snprintf(dir, sizeof dir, "%s/vox", bk_test_scenes_dir());
    DIR *d = opendir(dir);
    if (!d) BK_TEST_SKIP("corpus folder %s not found", dir);
    /* ../shared/scenes/INDEX.md; test_multiple_model_scene: node 1 (nGRP) has 104 nTRN children, each
     * over a shape node, none hidden, so 104 instances of its 41 models. */
    static const corpus_entry want[] = {
        { "chr_knight.vox", 1, 1, 398, { 20, 21, 20 } },
        { "menger.vox", 1, 1, 160000, { 81, 81, 81 } },
        { "monu1.vox", 1, 1, 156942, { 126, 126, 118 } },
        { "teapot.vox", 1, 1, 28411, { 126, 80, 61 } },
        { "T-Rex.vox", 8, 8, 10219, { 24, 24, 26 } },
        { "test_multiple_model_scene.vox", 41, 104, 6053, { 8, 8, 8 } },
    };
    int            found[6] = { 0 }, files = 0;
    double         slowest = 0;
    char           slowest_name[256] = "";
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!bk_path_has_ext(e->d_name, ".vox")) continue;
        files++;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (!strcmp(e->d_name, "slab6_vox_test.vox")) {
            load_fails(path, 0, "not a MagicaVoxel file");
            continue;
        }
        bk_scene s;
        double   t0 = bk_time_now();
        if (!load_ok(path, &s)) continue;
        double dt = bk_time_now() - t0;
        if (dt > slowest) {
            slowest = dt;
            snprintf(slowest_name, sizeof slowest_name, "%s", e->d_name);
        }
        uint64_t voxels = 0;
        for (uint32_t m = 0; m < s.vox_model_count; ++m) voxels += s.vox_models[m].voxel_count;
        for (int i = 0; i < 6; ++i) {
            if (strcmp(want[i].name, e->d_name)) continue;
            found[i] = 1;
            BK_EXPECTF(s.vox_model_count == want[i].models && s.vox_instance_count == want[i].instances &&
                           voxels == want[i].voxels,
                       "%s: %u models, %u instances, %llu voxels", e->d_name, s.vox_model_count, s.vox_instance_count,
                       (unsigned long long)voxels);
            BK_EXPECTF(memcmp(s.vox_models[0].size, want[i].size, sizeof want[i].size) == 0, "%s: size %ux%ux%u",
                       e->d_name, s.vox_models[0].size[0], s.vox_models[0].size[1], s.vox_models[0].size[2]);
        }
        if (!strcmp(e->d_name, "menger.vox")) {
            uint32_t rule[256];
            default_palette_rule(rule);
            expect_palette("menger.vox", &s, rule, 0);
        }
        bk_scene_free(&s);
    }
    closedir(d);
    for (int i = 0; i < 6; ++i) BK_EXPECTF(found[i], "%s missing from %s", want[i].name, dir);
    printf("corpus: %d .vox files; slowest load %s %.4f s\n", files, slowest_name, slowest);
}

/* A translation of exactly BK_VOX_MAX_COORD = 2^23 loads, on every axis and sign; one past it is
 * refused with one line naming the limit: an nTRN's own, and one composed down the graph (two
 * translations that add up, and a mirroring parent that turns -2^23 into 2^23 + 1). */
static void test_coord_limit(void)
{
    const long long L = BK_VOX_MAX_COORD;
    char            spec[128], err[512];
    BK_EXPECT(L == 8388608);
    for (int a = 0; a < 3; ++a)
        for (int sg = -1; sg <= 1; sg += 2) {
            long long t[3] = { 0, 0, 0 };
            t[a] = sg * L;
            c_model(4, 4, 4, 1, one_voxel);
            snprintf(spec, sizeof spec, "_t=%lld %lld %lld", t[0], t[1], t[2]);
            trn(0, 1, spec);
            shp(1, 0);
            const char *path = vox_write("tlimit.vox", 200);
            bk_scene    s;
            int         rc = bk_scene_load(path, &s, err, sizeof err);
            BK_EXPECTF(rc == 0, "%s: %s", spec, err);
            if (rc) continue;
            /* the file's axis a in the world: x stays, y goes to -z, z to y */
            const bk_vox_instance *in = &s.vox_instances[0];
            const int              w = a == 0 ? 0 : a == 1 ? 2 : 1;
            const long long        wt = a == 1 ? -t[a] : t[a];
            BK_EXPECTF(in->t[w] == wt && in->lo[w] == wt - 2 && in->hi[w] == wt + 2, "%s: t %d box %d..%d", spec,
                       in->t[w], in->lo[w], in->hi[w]);
            bk_scene_free(&s);
        }
    /* composed exactly to the limit through a mirroring parent: x = -(-(L - 1)) + 1 */
    c_model(4, 4, 4, 1, one_voxel);
    trn(0, 1, "_r=20;_t=1 0 0");
    snprintf(spec, sizeof spec, "_t=%lld 5 -7", -(L - 1));
    trn(1, 2, spec);
    shp(2, 0);
    {
        bk_scene s;
        int      rc = bk_scene_load(vox_write("tmirror.vox", 200), &s, err, sizeof err);
        BK_EXPECTF(rc == 0, "%s", err);
        if (rc == 0) {
            /* (L, 5, -7) in the file's frame, (L, -7, -5) in the world's */
            BK_EXPECTF(s.vox_instances[0].t[0] == L && s.vox_instances[0].t[1] == -7 && s.vox_instances[0].t[2] == -5 &&
                           s.vox_instances[0].m[0] == -1,
                       "t %d %d %d", s.vox_instances[0].t[0], s.vox_instances[0].t[1], s.vox_instances[0].t[2]);
            bk_scene_free(&s);
        }
    }
    /* one past, on one axis: the node's own _t (each sign) */
    for (int sg = -1; sg <= 1; sg += 2) {
        c_model(4, 4, 4, 1, one_voxel);
        snprintf(spec, sizeof spec, "_t=0 0 %lld", sg * (L + 1));
        size_t at = trn(0, 1, spec);
        shp(1, 0);
        load_fails(vox_write("tpast.vox", 200), (long)at + 40 + 6, "expected 3 integers in -8388608..8388608");
    }
    /* composed past it: two halves that add up to L + 1 */
    c_model(4, 4, 4, 1, one_voxel);
    snprintf(spec, sizeof spec, "_t=0 %lld 0", L / 2);
    trn(0, 1, spec);
    snprintf(spec, sizeof spec, "_t=0 %lld 0", L / 2 + 1);
    size_t at = trn(1, 2, spec);
    shp(2, 0);
    load_fails(vox_write("tsum1.vox", 200), (long)at, "node 1: composed translation 8388609 beyond +-8388608 (2^23");
    /* and through a mirroring parent, under a group */
    c_model(4, 4, 4, 1, one_voxel);
    trn(0, 1, "_r=20;_t=1 0 0");
    {
        int kid = 2;
        c_grp(1, "", 1, &kid);
    }
    snprintf(spec, sizeof spec, "_t=%lld 0 0", -L);
    at = trn(2, 3, spec);
    shp(3, 0);
    load_fails(vox_write("tmirror1.vox", 200), (long)at, "node 2: composed translation 8388609 beyond +-8388608 (2^23");
}

/* The files written here as fuzz seeds. */
int main(void)
{
    const char *seeds = getenv("BK_VOX_SEEDS");
    if (seeds && seeds[0]) {
        snprintf(tmpdir, sizeof tmpdir, "%s", seeds);
        mkdir(tmpdir, 0700);
        keep_files = 1;
    } else {
        snprintf(tmpdir, sizeof tmpdir, "%s/bk_unit_vox_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    test_palette();
    test_rotations();
    test_nested();
    test_names();
    test_hidden_frames_shared();
    test_legacy();
    test_emission();
    test_errors();
    test_coord_limit();
    test_speed();
    if (!keep_files) test_model_limit();
    {
        bk_scene s;
        memset(&s, 0, sizeof s);
        bk_scene_free(&s);
    }
    if (!keep_files) {
        for (int i = 0; i < made_count && i < 256; i++) unlink(made[i]);
        rmdir(tmpdir);
    }
    free(K.p);
    free(F.p);
    if (bk_test_failures) BK_TEST_DONE();
    test_corpus();
    BK_TEST_DONE();
}
