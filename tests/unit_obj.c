/* unit_obj.c - the OBJ/MTL loader (src/io/obj.c) on small files written here and on the scene corpus.
 *
 * Behaviour checked (see the comment at the top of src/io/obj.c):
 *   loads:  v/vt/vn, faces of any size (fan order), index forms v v/vt v//vn v/vt/vn, negative
 *           indices, CRLF, no final newline, '\' continuations, comments after values, .obj.gz,
 *           MTL Kd/Ke/map_Kd (with options), usemtl before mtllib.
 *   fails with "path:line: reason": index 0, index out of range or not yet defined, bad number,
 *           non-finite position, face with < 3 vertices; "path: ..." for missing files, no faces,
 *           a truncated .vox (by extension: the .vox reader) and unknown extensions.
 *   warns:  missing MTL file, unknown material name (triangles get BK_NONE), Kd/Ke out of range
 *           (clamped).
 *   hostile inputs (issue 7): a device or FIFO as the scene or as an MTL, files over the size
 *           limits, a truncated .gz, UTF-16 / binary text, a UTF-8 BOM, control bytes in quoted
 *           tokens, huge indices, non-finite vt/vn/Kd/Ke.
 * Corpus scenes are under BK_SCENES_DIR; without the corpus the test skips (77) after the local checks.
 */
#include "loader.h"
#include "scene.h"
#include "bk_test.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];
static char made[128][700];
static int  made_count;

static const char *write_file(const char *name, const char *text, size_t len)
{
    char *path = made[made_count++];
    snprintf(path, sizeof made[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fwrite(text, 1, len, f);
    fclose(f);
    return path;
}
static const char *write_str(const char *name, const char *text) { return write_file(name, text, strlen(text)); }

/* Every index is in range: what a builder relies on. */
static void check_invariants(const char *what, const bk_scene *s)
{
    int bad = 0;
    for (size_t i = 0; i < 3 * (size_t)s->tri_count; i++) {
        bad += s->tri_v[i] >= s->vertex_count;
        bad += s->tri_vt[i] != BK_NONE && s->tri_vt[i] >= s->texcoord_count;
        bad += s->tri_vn[i] != BK_NONE && s->tri_vn[i] >= s->normal_count;
    }
    for (uint32_t t = 0; t < s->tri_count; t++)
        bad += s->tri_material[t] != BK_NONE && s->tri_material[t] >= s->material_count;
    BK_EXPECTF(bad == 0, "%s: %d indices out of range", what, bad);
}

static int load_ok(const char *path, bk_scene *s)
{
    char err[512] = "";
    int  rc = bk_scene_load(path, s, err, sizeof err);
    BK_EXPECTF(rc == 0, "%s should load: %s", path, err);
    if (rc == 0) check_invariants(path, s);
    return rc == 0;
}

/* Fails with a message that starts with the path, names `line` (when > 0) and contains `what`. */
static void load_fails(const char *path, int line, const char *what)
{
    bk_scene s;
    char     err[512] = "", prefix[600];
    int      rc = bk_scene_load(path, &s, err, sizeof err);
    BK_EXPECTF(rc < 0, "%s should fail (%s)", path, what);
    if (rc >= 0) {
        bk_scene_free(&s);
        return;
    }
    BK_EXPECTF(s.tri_count == 0 && s.tri_v == NULL && s.positions == NULL, "%s: scene not left empty", path);
    if (line > 0) snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    else snprintf(prefix, sizeof prefix, "%s: ", path);
    BK_EXPECTF(strncmp(err, prefix, strlen(prefix)) == 0, "message '%s' should start with '%s'", err, prefix);
    BK_EXPECTF(strstr(err, what) != NULL, "message '%s' should contain '%s'", err, what);
    BK_EXPECTF(strchr(err, '\n') == NULL, "message '%s' should be one line", err);
}

static int tri_is(const uint32_t *a, uint32_t t, uint32_t x, uint32_t y, uint32_t z)
{
    return a[3 * t] == x && a[3 * t + 1] == y && a[3 * t + 2] == z;
}
#define N BK_NONE

static int mat_index(const bk_scene *s, const char *name)
{
    for (uint32_t i = 0; i < s->material_count; i++)
        if (strcmp(s->materials[i].name, name) == 0) return (int)i;
    return -1;
}

static int near(float a, float b, float tol) { return fabsf(a - b) <= tol; }

static void check_bbox(const char *what, const bk_scene *s, const float lo[3], const float hi[3], float tol)
{
    float mn[3] = { INFINITY, INFINITY, INFINITY }, mx[3] = { -INFINITY, -INFINITY, -INFINITY };
    for (uint32_t i = 0; i < s->vertex_count; i++)
        for (int k = 0; k < 3; k++) {
            float v = s->positions[3 * i + k];
            if (v < mn[k]) mn[k] = v;
            if (v > mx[k]) mx[k] = v;
        }
    for (int k = 0; k < 3; k++) {
        float t = tol * fmaxf(1.0f, fmaxf(fabsf(lo[k]), fabsf(hi[k])));
        BK_EXPECTF(near(mn[k], lo[k], t) && near(mx[k], hi[k], t), "%s: bbox axis %d is %g..%g, expected %g..%g", what,
                   k, mn[k], mx[k], lo[k], hi[k]);
    }
}

/* ---- small files written by the test ---------------------------------------------------------- */

static void test_faces_and_indices(void)
{
    bk_scene s;
    /* negative indices count back from the last vertex defined so far */
    if (load_ok(write_str("neg.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\nv 0 0 1\nf -4 -1 -2\n"), &s)) {
        BK_EXPECT(s.vertex_count == 4 && s.tri_count == 2);
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 1, 2));
        BK_EXPECT(tri_is(s.tri_v, 1, 0, 3, 2));
        BK_EXPECT(tri_is(s.tri_vt, 0, N, N, N) && tri_is(s.tri_vn, 1, N, N, N));
        BK_EXPECT(s.tri_material[0] == BK_NONE && s.material_count == 0);
        bk_scene_free(&s);
    }
    /* n-gons: fan (v0, vi, vi+1), triangles in file order */
    if (load_ok(write_str("ngon.obj", "v 0 0 0\nv 1 0 0\nv 2 1 0\nv 1 2 0\nv 0 1 0\nv 5 5 5\n"
                                      "f 1 2 3 4 5\nf 6 1 2 3\nf 2 3 4\n"),
                &s)) {
        BK_EXPECT(s.tri_count == 3 + 2 + 1);
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 1, 2));
        BK_EXPECT(tri_is(s.tri_v, 1, 0, 2, 3));
        BK_EXPECT(tri_is(s.tri_v, 2, 0, 3, 4));
        BK_EXPECT(tri_is(s.tri_v, 3, 5, 0, 1));
        BK_EXPECT(tri_is(s.tri_v, 4, 5, 1, 2));
        BK_EXPECT(tri_is(s.tri_v, 5, 1, 2, 3));
        bk_scene_free(&s);
    }
    /* v//vn, v/vt, v/vt/vn, mixed within one face, negative vt/vn; vt with 1, 2 and 3 numbers */
    const char *forms = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\n"
                        "vt 0.25\nvt 1 0\nvt 1 1 7\n"
                        "vn 0 0 1\nvn 0 1 0\n"
                        "f 1//1 2//1 3//2\n"
                        "f 1/1 2/2 3/3\n"
                        "f 1/1/2 2/2/1 4/3/2\n"
                        "f 1 2/2 3//1\n"
                        "f -4/-3/-2 -3/-2/-1 -1/-1/-1\n";
    if (load_ok(write_str("forms.obj", forms), &s)) {
        BK_EXPECT(s.tri_count == 5 && s.texcoord_count == 3 && s.normal_count == 2);
        BK_EXPECT(s.texcoords[0] == 0.25f && s.texcoords[1] == 0.0f && s.texcoords[4] == 1.0f &&
                  s.texcoords[5] == 1.0f);
        BK_EXPECT(s.normals[2] == 1.0f && s.normals[4] == 1.0f);
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 1, 2) && tri_is(s.tri_vt, 0, N, N, N) && tri_is(s.tri_vn, 0, 0, 0, 1));
        BK_EXPECT(tri_is(s.tri_v, 1, 0, 1, 2) && tri_is(s.tri_vt, 1, 0, 1, 2) && tri_is(s.tri_vn, 1, N, N, N));
        BK_EXPECT(tri_is(s.tri_v, 2, 0, 1, 3) && tri_is(s.tri_vt, 2, 0, 1, 2) && tri_is(s.tri_vn, 2, 1, 0, 1));
        BK_EXPECT(tri_is(s.tri_v, 3, 0, 1, 2) && tri_is(s.tri_vt, 3, N, 1, N) && tri_is(s.tri_vn, 3, N, N, 0));
        BK_EXPECT(tri_is(s.tri_v, 4, 0, 1, 3) && tri_is(s.tri_vt, 4, 0, 1, 2) && tri_is(s.tri_vn, 4, 0, 1, 1));
        bk_scene_free(&s);
    }
    /* a face of 10000 vertices: no fixed-size face buffer */
    {
        size_t cap = 200000, n = 0;
        char  *t = malloc(cap);
        for (int i = 0; i < 10000; i++) n += (size_t)snprintf(t + n, cap - n, "v %d 0 %d\n", i % 7, i);
        n += (size_t)snprintf(t + n, cap - n, "f");
        for (int i = 1; i <= 10000; i++) n += (size_t)snprintf(t + n, cap - n, " %d", i);
        if (load_ok(write_file("big_face.obj", t, n), &s)) {
            BK_EXPECT(s.tri_count == 9998 && tri_is(s.tri_v, 9997, 0, 9998, 9999));
            bk_scene_free(&s);
        }
        free(t);
    }
}

static void test_text_forms(void)
{
    bk_scene s;
    /* CRLF, blank and whitespace-only lines, tabs, comments after values, extra v components (w, colour),
     * ignored keywords (o g s l p vp), '\' continuations, no final newline */
    const char *crlf = "# box\r\n\r\n  \t\r\no thing\r\ng a b\r\ns off\r\n"
                       "v 0 0 0\r\nv\t1 0 0 1.0\r\nv 1 1 0 0.5 0.5 0.5\r\nv 0 1 0 # corner\r\n"
                       "vp 0.5\r\nl 1 2\r\np 3\r\n"
                       "f 1 2 3 # first\r\nf 1 \\\r\n 3 4\r\n";
    if (load_ok(write_str("crlf.obj", crlf), &s)) {
        BK_EXPECT(s.vertex_count == 4 && s.tri_count == 2);
        BK_EXPECT(s.positions[3] == 1.0f && s.positions[7] == 1.0f && s.positions[11] == 0.0f);
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 1, 2) && tri_is(s.tri_v, 1, 0, 2, 3));
        bk_scene_free(&s);
    }
    if (load_ok(write_str("no_newline.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3"), &s)) {
        BK_EXPECT(s.tri_count == 1);
        bk_scene_free(&s);
    }
    /* exactly 1 MiB (a whole number of pages; large files are mapped) ending in a number, no newline:
     * the loader must see a zero after the last byte, not the next page */
    {
        size_t      n = 1u << 20;
        char       *t = malloc(n);
        const char *head = "v 0 0 0\nv 1 0 0\nv 0 1 0\n#", *tail = "\nf 1 2 3";
        memset(t, 'x', n);
        memcpy(t, head, strlen(head));
        memcpy(t + n - strlen(tail), tail, strlen(tail));
        if (load_ok(write_file("page.obj", t, n), &s)) {
            BK_EXPECT(s.tri_count == 1 && tri_is(s.tri_v, 0, 0, 1, 2));
            bk_scene_free(&s);
        }
        t[n - 1] = '4'; /* f 1 2 4: the error names the last line */
        load_fails(write_file("page_err.obj", t, n), 5, "vertex index 4 out of range");
        free(t);
    }
    /* indices are checked against the vertices defined so far: vertex 3 comes after the face */
    load_fails(write_str("forward.obj", "v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 1 -2.5e1"), 3, "out of range");
    /* the line number after a continuation still counts physical lines */
    load_fails(write_str("cont_err.obj", "v 0 0 0\nv 1 \\\n 0 0\nv 0 1 0\nf 1 2 \\\n3 4\n"), 5, "out of range");
    /* numbers: signs, no integer or fraction part, exponents, hex and long mantissas (strtod path) */
    const char *nums =
        "v -.5 +2. 1E+2\nv 1e-3 -0 0x1p-2\nv 0.1234567890123456789012345 123456789012345678901234 1e-40\n"
        "vn 0 0 1\nf 1 2 3\n";
    if (load_ok(write_str("nums.obj", nums), &s)) {
        const float *p = s.positions;
        BK_EXPECT(p[0] == -0.5f && p[1] == 2.0f && p[2] == 100.0f);
        BK_EXPECT(p[3] == 1e-3f && p[4] == 0.0f && signbit(p[4]) && p[5] == 0.25f);
        BK_EXPECT(p[6] == 0.1234567890123456789f && p[7] == 123456789012345678901234.0f && p[8] == 1e-40f);
        bk_scene_free(&s);
    }
}

/* Many random decimals in the forms exporters write: each must equal strtof's correctly rounded value
 * (the fast paths and the midpoint check in parse_float make every result correctly rounded). */
static void test_float_accuracy(void)
{
    enum { COUNT = 30000 };
    size_t      cap = (size_t)COUNT * 48 + 64, n = 0;
    char       *t = malloc(cap);
    static char strs[COUNT][40];
    uint32_t    r = 12345;
    for (int i = 0; i < COUNT; i++) {
        r = r * 1664525u + 1013904223u;
        double mag = pow(10.0, (double)((int)(r >> 8) % 16 - 8));
        r = r * 1664525u + 1013904223u;
        double v = mag * ((double)(r >> 8) / 16777216.0) * ((r & 1) ? -1 : 1);
        int    prec = 1 + (int)((r >> 4) % 10);
        switch ((r >> 12) % 4) {
        case 0: snprintf(strs[i], sizeof strs[i], "%.*f", prec, v); break;
        case 1: snprintf(strs[i], sizeof strs[i], "%.*e", prec, v); break;
        case 2: snprintf(strs[i], sizeof strs[i], "%.*g", prec + 7, v); break;
        default: snprintf(strs[i], sizeof strs[i], "%.9g", (float)v); break; /* float round trip */
        }
    }
    for (int i = 0; i < COUNT; i += 3)
        n += (size_t)snprintf(t + n, cap - n, "v %s %s %s\n", strs[i], strs[i + 1], strs[i + 2]);
    n += (size_t)snprintf(t + n, cap - n, "f 1 2 3\n");
    bk_scene s;
    if (load_ok(write_file("floats.obj", t, n), &s)) {
        int inexact = 0, far = 0;
        for (int i = 0; i < COUNT; i++) {
            float want = strtof(strs[i], NULL), got = s.positions[i];
            if (got != want) {
                inexact++;
                far += nextafterf(want, INFINITY) != got && nextafterf(want, -INFINITY) != got;
                if (inexact <= 5) fprintf(stderr, "float '%s': got %.9g, want %.9g\n", strs[i], got, want);
            }
        }
        BK_EXPECTF(inexact == 0, "%d of %d numbers not correctly rounded (%d more than 1 ulp off)", inexact, COUNT,
                   far);
        bk_scene_free(&s);
    }
    free(t);
}

static void test_errors(void)
{
    load_fails(write_str("idx0.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 0 3\n"), 5, "index 0");
    load_fails(write_str("range.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n"), 4, "out of range");
    load_fails(write_str("range_neg.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 -4\n"), 4, "out of range");
    load_fails(write_str("range_vt.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/2 3/1\n"), 5,
               "texcoord index 2 out of range");
    load_fails(write_str("range_vn.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1//1 2//1 3//1\n"), 4,
               "normal index 1 out of range");
    load_fails(write_str("huge_idx.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999999\n"), 4,
               "out of range");
    load_fails(write_str("garbage.obj", "v 0 0 0\nv 1 abc 0\nv 0 1 0\nf 1 2 3\n"), 2, "bad number 'abc'");
    load_fails(write_str("garbage2.obj", "v 0 0 0\nv 1.0.0 1 0\nv 0 1 0\nf 1 2 3\n"), 2, "bad number");
    load_fails(write_str("garbage3.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3x\n"), 4, "bad vertex reference '3x'");
    load_fails(write_str("garbage4.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2/a 3\n"), 4, "bad texcoord index");
    load_fails(write_str("short_v.obj", "v 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n"), 2, "expected 3 coordinates");
    load_fails(write_str("inf.obj", "v 0 0 0\nv inf 0 0\nv 0 1 0\nf 1 2 3\n"), 2, "not a finite");
    load_fails(write_str("overflow.obj", "v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n"), 2, "not a finite");
    load_fails(write_str("face2.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nf 1 2\n"), 5, "face with 2 vertices");
    load_fails(write_str("face0.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf\nf 1 2 3\n"), 4, "face with 0 vertices");
    load_fails(write_str("lines.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nl 1 2 3\np 1\n"), 0, "no faces");
    load_fails(write_str("blank.obj", "\n\n# nothing\n"), 0, "no faces");
    char path[600];
    snprintf(path, sizeof path, "%s/does_not_exist.obj", tmpdir);
    load_fails(path, 0, "cannot open");
    snprintf(path, sizeof path, "%s/does_not_exist.obj.gz", tmpdir);
    load_fails(path, 0, "cannot open");
    load_fails(write_str("scene.vox", "VOX "), 0,
               "byte 4: the file ends before the version number"); /* vox.c reads it */
    load_fails(write_str("scene.ply", "ply\n"), 0, "supported: .obj, .obj.gz, .vox");
    load_fails(tmpdir, 0, "supported"); /* a folder: no extension */
    snprintf(path, sizeof path, "%s/dir.obj", tmpdir);
    mkdir(path, 0700);
    load_fails(path, 0, "directory");
    rmdir(path);
}

static void test_gzip(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/box.obj.gz", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    gzFile gz = gzopen(path, "wb");
    BK_EXPECT(gz != NULL);
    if (!gz) return;
    gzputs(gz, "v -1 -2 -3\nv 4 0 0\nv 0 5 0\nv 0 0 6\nf 1 2 3 4\n");
    gzclose(gz);
    bk_scene s;
    if (load_ok(path, &s)) {
        static const float lo[3] = { -1, -2, -3 }, hi[3] = { 4, 5, 6 };
        BK_EXPECT(s.tri_count == 2 && tri_is(s.tri_v, 1, 0, 2, 3));
        check_bbox("box.obj.gz", &s, lo, hi, 0);
        bk_scene_free(&s);
    }
    /* a corrupt .gz is an error, not a crash */
    static const char bad[] = "\x1f\x8b\x08\x00"
                              "garbage-garbage-garbage";
    load_fails(write_file("bad.obj.gz", bad, sizeof bad - 1), 0, "gzip");
    /* two gzip members read as their texts one after the other (gzip -c a b > ab.gz) */
    snprintf(path, sizeof path, "%s/two.obj.gz", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    for (int m = 0; m < 2; ++m) {
        gz = gzopen(path, m ? "ab" : "wb");
        BK_EXPECT(gz != NULL);
        if (!gz) return;
        gzputs(gz, m ? "v 0 0 6\nf 1 2 3 4\n" : "v -1 -2 -3\nv 4 0 0\nv 0 5 0\n");
        gzclose(gz);
    }
    if (load_ok(path, &s)) {
        BK_EXPECT(s.tri_count == 2 && tri_is(s.tri_v, 1, 0, 2, 3));
        bk_scene_free(&s);
    }
    /* plain text named .gz reads as it is (zlib's transparent read) */
    if (load_ok(write_str("plain.obj.gz", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), &s)) {
        BK_EXPECT(s.tri_count == 1);
        bk_scene_free(&s);
    }
    /* a .gz cut short is an error naming the truncation, whichever inflater read it */
    snprintf(path, sizeof path, "%s/cut.obj.gz", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    gz = gzopen(path, "wb");
    BK_EXPECT(gz != NULL);
    if (!gz) return;
    for (int i = 0; i < 2000; ++i) gzprintf(gz, "v %d %d %d\n", i, 2 * i, 3 * i);
    gzclose(gz);
    FILE       *f = fopen(path, "rb");
    static char whole[1 << 16];
    size_t      n = f ? fread(whole, 1, sizeof whole, f) : 0;
    if (f) fclose(f);
    BK_EXPECT(n > 100 && n < sizeof whole);
    load_fails(write_file("cut.obj.gz", whole, n / 2), 0, "truncated");
}

static void test_materials(void)
{
    write_str("a.mtl", "# first\nKd 1 1 1\nnewmtl red\nKd 1 0 0 # comment\nKe 0.5\n"
                       "newmtl lamp\r\nKd 0.5 0.5 0.5\r\nKe 10 9 8\r\nmap_Kd -s 1 1 1 -bm 0.5 -clamp on tex/a b.png\r\n"
                       "newmtl spectral\nKd spectral foo.rfl\n");
    const char *obj = "usemtl red\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
                      "mtllib a.mtl missing.mtl\n"
                      "usemtl lamp\nf 1 2 3\nusemtl nosuch\nf 1 2 3\nusemtl spectral\nusemtl red\nf 1 2 3\n"
                      "usemtl\nf 1 2 3\n";
    bk_scene    s;
    fprintf(stderr, "(expected: warnings about Kd before newmtl, spectral Kd, missing.mtl, nosuch)\n");
    if (load_ok(write_str("mat.obj", obj), &s)) {
        int red = mat_index(&s, "red"), lamp = mat_index(&s, "lamp");
        BK_EXPECT(s.material_count == 3 && red == 0 && lamp == 1);
        BK_EXPECT(s.tri_count == 5);
        BK_EXPECT(s.tri_material[0] == (uint32_t)red); /* usemtl before mtllib still resolves */
        BK_EXPECT(s.tri_material[1] == (uint32_t)lamp);
        BK_EXPECT(s.tri_material[2] == BK_NONE); /* unknown name: default material */
        BK_EXPECT(s.tri_material[3] == (uint32_t)red);
        BK_EXPECT(s.tri_material[4] == BK_NONE); /* bare usemtl: back to default */
        if (red == 0 && lamp == 1) {
            const bk_material *m = s.materials;
            BK_EXPECT(m[0].kd[0] == 1 && m[0].kd[1] == 0 && m[0].kd[2] == 0);
            BK_EXPECT(m[0].ke[0] == 0.5f && m[0].ke[1] == 0.5f && m[0].ke[2] == 0.5f); /* 1 number: grey */
            BK_EXPECT(m[0].map_kd.path[0] == '\0');
            BK_EXPECT(m[1].ke[0] == 10 && m[1].ke[1] == 9 && m[1].ke[2] == 8);
            BK_EXPECTF(strcmp(m[1].map_kd.path, "tex/a b.png") == 0, "map_Kd '%s'", m[1].map_kd.path);
            BK_EXPECT(m[2].kd[0] == 0.8f && m[2].ke[0] == 0); /* defaults kept */
        }
        bk_scene_free(&s);
    }
}

/* Issue 7: inputs a hostile or unlucky user gives. Each of these was accepted silently, hung, or
 * gave a misleading message before. */
static void test_hostile(void)
{
    char     path[700], target[700];
    bk_scene s;
    /* the scene and its MTL must be regular files: a device never ends (mtllib /dev/zero read forever) */
    snprintf(path, sizeof path, "%s/null.obj", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    BK_EXPECT(symlink("/dev/null", path) == 0);
    load_fails(path, 0, "not a regular file");
    snprintf(target, sizeof target, "%s/zero.mtl", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", target);
    BK_EXPECT(symlink("/dev/zero", target) == 0);
    load_fails(write_str("devmtl.obj", "mtllib zero.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), 1,
               "not a regular file");
    /* size limits, checked before reading (sparse files: no disk used) */
    snprintf(path, sizeof path, "%s/huge.obj", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    FILE *f = fopen(path, "wb");
    BK_EXPECT(f && ftruncate(fileno(f), (off_t)BK_SCENE_MAX_BYTES + 1) == 0);
    if (f) fclose(f);
    load_fails(path, 0, "larger than");
    snprintf(path, sizeof path, "%s/huge.mtl", tmpdir);
    snprintf(made[made_count++], sizeof made[0], "%s", path);
    f = fopen(path, "wb");
    BK_EXPECT(f && ftruncate(fileno(f), (off_t)BK_MTL_MAX_BYTES + 1) == 0);
    if (f) fclose(f);
    load_fails(write_str("hugemtl.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nmtllib huge.mtl\nf 1 2 3\n"), 4, "larger than");
    /* a .obj.gz cut short is an error naming the truncation, at 50, 90 and 99 % */
    {
        char  *txt = malloc(1 << 20);
        size_t n = 0;
        for (int i = 0; i < 20000; ++i)
            n += (size_t)snprintf(txt + n, (1 << 20) - n, "v %d.125 %d.5 0.25\n", i, i % 97);
        for (int i = 1; i + 2 <= 20000; i += 2)
            n += (size_t)snprintf(txt + n, (1 << 20) - n, "f %d %d %d\n", i, i + 1, i + 2);
        uLongf         zn = compressBound((uLong)n) + 64;
        unsigned char *z = malloc(zn);
        char           full[700];
        snprintf(full, sizeof full, "%s/full.obj.gz", tmpdir);
        snprintf(made[made_count++], sizeof made[0], "%s", full);
        gzFile gz = gzopen(full, "wb");
        gzwrite(gz, txt, (unsigned)n);
        gzclose(gz);
        FILE *in = fopen(full, "rb");
        zn = (uLongf)fread(z, 1, zn, in);
        fclose(in);
        if (load_ok(full, &s)) {
            BK_EXPECT(s.tri_count == 9999);
            bk_scene_free(&s);
        }
        static const int pct[] = { 50, 90, 99 };
        for (int k = 0; k < 3; ++k) {
            char name[64];
            snprintf(name, sizeof name, "cut%d.obj.gz", pct[k]);
            load_fails(write_file(name, (const char *)z, (size_t)zn * (size_t)pct[k] / 100), 0, "truncated");
        }
        free(txt);
        free(z);
    }
    /* text encodings: a UTF-8 byte-order mark is fine; UTF-16 and binary files are named */
    if (load_ok(write_str("bom.obj", "\xEF\xBB\xBFv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"), &s)) {
        BK_EXPECT(s.vertex_count == 3 && s.tri_count == 1);
        bk_scene_free(&s);
    }
    load_fails(write_file("utf16.obj",
                          "\xFF\xFEv\0 \0"
                          "0\0 \0"
                          "0\0 \0"
                          "0\0\n\0",
                          18),
               0, "UTF-16");
    load_fails(write_file("bin.obj", "v 0\0\0\x01\x02\x03 0 0\n", 14), 0, "binary");
    /* quoted tokens: control bytes are escaped; huge indices are quoted as written */
    {
        char err[512] = "";
        int  rc =
            bk_scene_load(write_str("esc.obj", "v 0 0 0\nv 1 \x1b[31mred 0\nv 0 1 0\nf 1 2 3\n"), &s, err, sizeof err);
        BK_EXPECTF(rc < 0 && !strchr(err, 0x1b) && strstr(err, "\\x1B[31mred"), "escaped token: '%s'", err);
    }
    load_fails(write_str("huge_idx2.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99999999999999999999999\n"), 4,
               "index 99999999999999999999999 out of range");
    load_fails(write_str("nan_vn.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn nan 0 1\nf 1//1 2//1 3//1\n"), 4, "not a finite");
    load_fails(write_str("inf_vt.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 inf\nf 1/1 2/1 3/1\n"), 4, "not a finite");
    /* material values: non-finite is an error naming the MTL line; out of range is clamped */
    write_str("bad.mtl", "newmtl a\nKd 0.5 0.5 0.5\nKe inf 1 1\n");
    write_str("nan.mtl", "newmtl a\nKd nan 0.5 0.5\n");
    static const char *const bad_mtl[2][3] = { { "badmtl.obj", "bad.mtl", "bad.mtl:3: Ke: 'inf' is not a finite" },
                                               { "nanmtl.obj", "nan.mtl", "nan.mtl:2: Kd: 'nan' is not a finite" } };
    for (int k = 0; k < 2; ++k) { /* the message names the MTL file and its line */
        char obj[200], err[512] = "";
        snprintf(obj, sizeof obj, "mtllib %s\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl a\nf 1 2 3\n", bad_mtl[k][1]);
        int rc = bk_scene_load(write_str(bad_mtl[k][0], obj), &s, err, sizeof err);
        BK_EXPECTF(rc < 0 && strstr(err, bad_mtl[k][2]), "%s: '%s'", bad_mtl[k][0], err);
    }
    write_str("clamp.mtl", "newmtl a\nKd 1.5 -0.25 0.5\nKe 1e38 -1 7\n");
    fprintf(stderr, "(expected: two warnings about clamped Kd and Ke)\n");
    if (load_ok(write_str("clamp.obj",
                          "mtllib clamp.mtl\nmtllib clamp.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl a\nf 1 2 3\n"),
                &s)) {
        BK_EXPECT(s.material_count == 1); /* the same MTL named twice is read once */
        BK_EXPECT(s.mtl_count == 1 && !strcmp(s.mtls[0].name, "clamp.mtl"));
        if (s.material_count == 1) {
            const bk_material *m = s.materials;
            BK_EXPECT(m->kd[0] == 1.0f && m->kd[1] == 0.0f && m->kd[2] == 0.5f);
            BK_EXPECT(m->ke[0] == BK_KE_MAX && m->ke[1] == 0.0f && m->ke[2] == 7.0f);
        }
        bk_scene_free(&s);
    }
}

/* ---- corpus ----------------------------------------------------------------------------------- */

typedef struct expect {
    const char *rel;  /* path under BK_SCENES_DIR */
    uint32_t    tris; /* 0: must fail */
    int         line; /* failures: line in the message, 0 when none applies */
    const char *what; /* failures: text the message contains */
} expect;

static const expect corpus[] = {
    { "obj-tests-assimp/box.obj", 12, 0, NULL }, /* usemtl Default, no mtllib: warns */
    { "obj-tests-assimp/box_without_lineending.obj", 12, 0, NULL },
    { "obj-tests-assimp/concave_polygon.obj", 64, 0, NULL },
    { "obj-tests-assimp/cube_usemtl.obj", 12, 0, NULL }, /* usemtl mtl3 not in the MTL: warns */
    { "obj-tests-assimp/spider.obj", 1368, 0, NULL },
    { "obj-tests-assimp/WusonOBJ.obj", 3732, 0, NULL },
    { "obj-tests-assimp/testline.obj", 0, 0, "no faces" },
    { "obj-tests-assimp/testpoints.obj", 0, 0, "no faces" },
    { "obj-tests-assimp/invalid/empty.obj", 0, 0, "no faces" },
    { "obj-tests-assimp/invalid/malformed.obj", 0, 23, "vertex index 12 out of range" },
    { "obj-tests-assimp/invalid/malformed2.obj", 0, 23, "face with 0 vertices" },
    { "cornell-box/CornellBox-Original.obj", 36, 0, NULL },
    { "bunny/bunny.obj", 3674, 0, NULL },
    { "sponza-dabrovic/sponza.obj", 66454, 0, NULL },
    { "sibenik/sibenik.obj", 75284, 0, NULL },
    { "dragon/dragon_vrip_res2.obj", 202520, 0, NULL },
    { "dragon/dragon_vrip.obj.gz", 871414, 0, NULL },
};
#define CORPUS_COUNT (sizeof corpus / sizeof corpus[0])

static void test_corpus_table(void)
{
    char path[1024];
    for (size_t i = 0; i < CORPUS_COUNT; i++) {
        bk_test_scene(corpus[i].rel, path, sizeof path);
        if (corpus[i].tris == 0) {
            load_fails(path, corpus[i].line, corpus[i].what);
            continue;
        }
        bk_scene s;
        if (load_ok(path, &s)) {
            BK_EXPECTF(s.tri_count == corpus[i].tris, "%s: %u triangles, expected %u", path, s.tri_count,
                       corpus[i].tris);
            bk_scene_free(&s);
        }
    }
}

/* Every .obj in the assimp test folders must be listed above: a new file gets an explicit expectation. */
static void test_corpus_listed(const char *rel_dir)
{
    char dir[1024];
    bk_test_scene(rel_dir, dir, sizeof dir);
    DIR *d = opendir(dir);
    BK_EXPECT(d != NULL);
    if (!d) return;
    struct dirent *e;
    int            seen = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 4, ".obj") != 0) continue;
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", rel_dir, e->d_name);
        int listed = 0;
        for (size_t i = 0; i < CORPUS_COUNT; i++) listed |= strcmp(corpus[i].rel, rel) == 0;
        BK_EXPECTF(listed, "%s has no expected outcome in the table", rel);
        seen++;
    }
    closedir(d);
    BK_EXPECT(seen > 0);
}

static void test_corpus_details(void)
{
    char     path[1024];
    bk_scene s;

    bk_test_scene("cornell-box/CornellBox-Original.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        static const float lo[3] = { -1.02f, 0, -1.04f }, hi[3] = { 1, 1.99f, 0.99f };
        check_bbox("cornell", &s, lo, hi, 1e-6f);
        BK_EXPECT(s.vertex_count == 72 && s.material_count == 8);
        int light = mat_index(&s, "light"), left = mat_index(&s, "leftWall"), floor_ = mat_index(&s, "floor");
        BK_EXPECT(light >= 0 && left >= 0 && floor_ >= 0);
        if (light >= 0 && left >= 0) {
            const bk_material *l = &s.materials[light], *w = &s.materials[left];
            BK_EXPECT(l->ke[0] == 17 && l->ke[1] == 12 && l->ke[2] == 4);
            BK_EXPECT(l->kd[0] == 0.78f && l->kd[2] == 0.78f);
            BK_EXPECT(w->kd[0] == 0.63f && w->kd[1] == 0.065f && w->kd[2] == 0.05f); /* "# Red" after Ka only */
            BK_EXPECT(w->ke[0] == 0 && w->ke[1] == 0 && w->ke[2] == 0);
            int lit = 0, none = 0;
            for (uint32_t t = 0; t < s.tri_count; t++) {
                lit += s.tri_material[t] == (uint32_t)light;
                none += s.tri_material[t] == BK_NONE;
            }
            BK_EXPECT(lit == 2 && none == 0);
            BK_EXPECT(s.tri_material[0] == (uint32_t)floor_);
        }
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 1, 2) && tri_is(s.tri_v, 1, 0, 2, 3)); /* f -4 -3 -2 -1 */
        bk_scene_free(&s);
    }

    bk_test_scene("bunny/bunny.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        static const float lo[3] = { -4.958f, -0.003149f, -3.73f }, hi[3] = { 4.949f, 9.655f, 3.811f };
        check_bbox("bunny", &s, lo, hi, 1e-3f);
        BK_EXPECT(s.vertex_count == 1839 && s.texcoord_count == 0 && s.normal_count == 0);
        bk_scene_free(&s);
    }

    bk_test_scene("dragon/dragon_vrip_res2.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        static const float lo[3] = { -0.1082f, 0.05274f, -0.05035f }, hi[3] = { 0.09641f, 0.1971f, 0.04114f };
        check_bbox("dragon res2", &s, lo, hi, 1e-4f);
        BK_EXPECT(s.vertex_count == 100250);
        bk_scene_free(&s);
    }

    bk_test_scene("obj-tests-assimp/cube_usemtl.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        int m = mat_index(&s, "mtl"), m2 = mat_index(&s, "mtl2");
        BK_EXPECT(s.material_count == 2 && m >= 0 && m2 >= 0);
        BK_EXPECT(s.tri_material[0] == BK_NONE && s.tri_material[1] == BK_NONE); /* mtl3 is not defined */
        BK_EXPECT(s.tri_material[2] == (uint32_t)m && s.tri_material[5] == (uint32_t)m2);
        BK_EXPECT(s.normal_count == 6 && tri_is(s.tri_vn, 0, 1, 1, 1) && tri_is(s.tri_vt, 0, N, N, N));
        BK_EXPECT(tri_is(s.tri_v, 0, 0, 6, 4));
        bk_scene_free(&s);
    }

    bk_test_scene("obj-tests-assimp/spider.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        int skin = mat_index(&s, "Skin"), eyes = mat_index(&s, "Augentex");
        BK_EXPECT(s.material_count == 5 && skin >= 0 && eyes >= 0);
        if (skin >= 0)
            BK_EXPECTF(strcmp(s.materials[skin].map_kd.path, ".\\wal67ar_small.jpg") == 0, "'%s'",
                       s.materials[skin].map_kd.path);
        if (eyes >= 0)
            BK_EXPECT(strcmp(s.materials[eyes].map_kd.path, ".\\engineflare1.jpg") == 0); /* last line, no newline */
        if (skin >= 0) BK_EXPECT(s.materials[skin].kd[0] == 0.827451f);
        BK_EXPECT(s.texcoord_count > 0 && s.normal_count > 0 && s.tri_vt[0] != BK_NONE && s.tri_vn[0] != BK_NONE);
        bk_scene_free(&s);
    }

    bk_test_scene("obj-tests-assimp/concave_polygon.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        BK_EXPECT(s.material_count == 1 && s.tri_material[0] == 0 && s.materials[0].kd[0] == 0.141176f);
        bk_scene_free(&s);
    }

    bk_test_scene("sponza-dabrovic/sponza.obj", path, sizeof path);
    if (load_ok(path, &s)) {
        int missing = 0;
        for (size_t i = 0; i < 3 * (size_t)s.tri_count; i++)
            missing += s.tri_vt[i] == BK_NONE || s.tri_vn[i] == BK_NONE;
        BK_EXPECT(missing == 0 && tri_is(s.tri_v, 0, 0, 1, 2) && tri_is(s.tri_vt, 1, 2, 3, 0));
        bk_scene_free(&s);
    }
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/bk_unit_obj_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }

    test_faces_and_indices();
    test_text_forms();
    test_float_accuracy();
    test_errors();
    test_gzip();
    test_materials();
    test_hostile();
    {
        bk_scene s;
        memset(&s, 0, sizeof s);
        bk_scene_free(&s); /* freeing an empty scene, twice, is fine */
        bk_scene_free(&s);
        bk_scene_free(NULL);
    }

    for (int i = 0; i < made_count; i++) unlink(made[i]);
    rmdir(tmpdir);

    /* The corpus last: bk_test_scene skips (77) when it is absent, after the local checks ran. */
    if (bk_test_failures) BK_TEST_DONE();
    test_corpus_listed("obj-tests-assimp");
    test_corpus_listed("obj-tests-assimp/invalid");
    test_corpus_table();
    test_corpus_details();
    BK_TEST_DONE();
}
