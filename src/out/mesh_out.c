/* mesh_out.c - --mesh-out: the scene as an OBJ whose vt are the lightmap UVs, and its MTL (mesh_out.h).
 *
 * Pipeline: bk_scene + bk_atlas -> OBJ text -> an output of outputs.h (temporary file, then rename).
 * Triangles keep their file order, so triangle numbers (and a later --uv file bake of this mesh)
 * match. OBJ holds one vt per corner, so the mesh carries the lightmap UVs instead of the texture
 * ones; a game that needs both takes positions and texture UVs from the source and the second UV
 * set from here. vt are deduplicated by exact value, v counts upwards (vt.v = 1 - atlas v).
 */
#define _XOPEN_SOURCE 700 /* realpath, strtok_r, getline */
#include "atlas.h"
#include "loader.h"
#include "bk_common.h"
#include "mesh_out.h"
#include "outputs.h"
#include "voxmesh.h"
#include "util.h"

#include <errno.h>
#include <strings.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void dir_of(const char *path, char *buf, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, n, ".");
    else if (slash == path) snprintf(buf, n, "/");
    else snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

/* The folder an MTL name is relative to: the loader opened path = the OBJ's folder + name. */
static int mtl_base_dir(const bk_scene_mtl *m, char *buf, size_t n)
{
    size_t lp = strlen(m->path), ln = strlen(m->name);
    if (m->name[0] == '/' || ln > lp || strcmp(m->path + lp - ln, m->name) != 0) return 0;
    if (lp == ln) snprintf(buf, n, ".");
    else snprintf(buf, n, "%.*s", (int)(lp - ln), m->path);
    return 1;
}

/* Whether MTL m lies in the folder `out_dir` (same folder by identity: its name then works from
 * the output as written). */
static int mtl_in_dir(const bk_scene_mtl *m, const struct stat *out_st)
{
    char        src_dir[4096];
    struct stat a;
    return out_st && mtl_base_dir(m, src_dir, sizeof src_dir) && stat(src_dir, &a) == 0 && a.st_dev == out_st->st_dev &&
           a.st_ino == out_st->st_ino;
}

int bk_mesh_obj_copies_mtl(const bk_scene *s, const char *obj_path)
{
    char out_dir[4096];
    dir_of(obj_path, out_dir, sizeof out_dir);
    struct stat b;
    int         have_out = stat(out_dir, &b) == 0;
    for (uint32_t i = 0; i < s->mtl_count; ++i)
        if (!mtl_in_dir(&s->mtls[i], have_out ? &b : NULL)) return 1;
    return 0;
}

char *bk_mesh_mtl_name(const char *obj)
{
    size_t n = strlen(obj), cut = bk_path_has_ext(obj, ".obj") ? n - 4 : n;
    char  *p = malloc(cut + 5);
    if (p) snprintf(p, cut + 5, "%.*s.mtl", (int)cut, obj);
    return p;
}

#define BK_MTL_SIGNATURE "# written by baker"

int bk_mesh_mtl_check(const char *mtl_path, const char *obj_path, char *err, size_t err_size)
{
    struct stat st;
    /* absent, or not a regular file (a FIFO would block here; the output policy refuses it) */
    if (stat(mtl_path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    FILE *f = fopen(mtl_path, "rb");
    if (!f) return 0; /* unreadable: the output policy will say */
    char   head[64] = { 0 };
    size_t k = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[k] = 0;
    if (!strncmp(head, BK_MTL_SIGNATURE, strlen(BK_MTL_SIGNATURE))) return 0;
    return bk_fail(err, err_size,
                   "--mesh-out %s: its materials go to %s beside it, which exists and was not written by baker "
                   "(its first line is not \"" BK_MTL_SIGNATURE
                   "\"): refusing to replace it; move it away or choose another "
                   "--mesh-out name",
                   obj_path, mtl_path);
}

/* Lexically normalised absolute path: "." and ".." components resolved, slashes single. */
static void normalise(const char *in, char *out, size_t n)
{
    char tmp[8192];
    snprintf(tmp, sizeof tmp, "%s", in);
    size_t len = 0;
    out[0] = 0;
    char *save = NULL;
    for (char *c = strtok_r(tmp, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) {
            char *sl = strrchr(out, '/');
            if (sl) {
                *sl = 0;
                len = (size_t)(sl - out);
            }
            continue;
        }
        int w = snprintf(out + len, n - len, "/%s", c);
        if (w < 0 || (size_t)w >= n - len) {
            out[len] = 0;
            return;
        }
        len += (size_t)w;
    }
    if (!len) snprintf(out, n, "/");
}

/* The path of `to` (absolute, normalised) as seen from folder `from` (absolute, normalised):
 * relative ("../tex/a.png"), or `to` itself when the two share no folder but the root. */
static void relative_to(const char *from, const char *to, char *out, size_t n)
{
    size_t i = 0, common = 0;
    /* the longest common prefix ending at a component boundary */
    while (from[i] && to[i] && from[i] == to[i]) {
        i++;
        if (from[i] == '/' || from[i] == 0) {
            if (to[i] == '/' || to[i] == 0) common = i;
        }
    }
    if (!strcmp(from, "/")) common = 0;
    if (common == 0) {
        snprintf(out, n, "%s", to);
        return;
    } /* only the root shared: absolute is clearer */
    size_t len = 0;
    out[0] = 0;
    for (const char *p = from + common; *p; ++p)
        if (*p == '/') len += (size_t)snprintf(out + len, len < n ? n - len : 0, "../");
    const char *rest = to + common;
    if (*rest == '/') rest++;
    snprintf(out + (len < n ? len : n - 1), len < n ? n - len : 1, "%s", rest);
}

static int is_map_keyword(const char *k, size_t n)
{
    static const char *const kw[] = { "bump", "disp", "decal", "refl", "norm" };
    if (n > 4 && !strncasecmp(k, "map_", 4)) return 1;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; ++i)
        if (strlen(kw[i]) == n && !strncasecmp(k, kw[i], n)) return 1;
    return 0;
}

/* Copies MTL m into f, each texture path rewritten to work from folder out_real (a realpath):
 * relative to it, absolute when they share no folder but the root, and left as written when
 * absolute already or when the MTL's folder cannot be resolved. A texture written with
 * backslashes (Windows exporters) that exists only with slashes gets slashes. */
static int copy_mtl(FILE *f, const bk_scene_mtl *m, const char *out_real, char *err, size_t err_size)
{
    char mtl_dir[4096], mtl_real[PATH_MAX];
    dir_of(m->path, mtl_dir, sizeof mtl_dir);
    int   have_dir = realpath(mtl_dir, mtl_real) != NULL;
    FILE *in = fopen(m->path, "rb");
    if (!in) { /* the loader warned already; say so in the copy too */
        fprintf(f, "# %s: cannot be read (%s): its materials are missing\n", m->path, strerror(errno));
        return 0;
    }
    fprintf(f, "\n# copied from %s%s%s, texture paths rewritten for this folder\n", have_dir ? mtl_real : m->path,
            have_dir ? "/" : "", have_dir ? (strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path) : "");
    char   *line = NULL;
    size_t  cap = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, in)) >= 0) {
        size_t len = (size_t)got;
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (strlen(line) != len) len = strlen(line); /* a NUL inside the line ends it */
        const char *k = line;
        while (*k == ' ' || *k == '\t') k++;
        const char *ke = k;
        while (*ke && *ke != ' ' && *ke != '\t') ke++;
        if (!have_dir || !is_map_keyword(k, (size_t)(ke - k))) {
            fprintf(f, "%s\n", line);
            continue;
        }
        const char *name = bk_mtl_map_file(ke);
        size_t      nl = strlen(name);
        while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t')) nl--;
        if (!nl || name[0] == '/') {
            fprintf(f, "%s\n", line);
            continue;
        }
        char tex[4096], abs_path[8192], norm[8192], rel[8192];
        snprintf(tex, sizeof tex, "%.*s", (int)nl, name);
        snprintf(abs_path, sizeof abs_path, "%s/%s", mtl_real, tex);
        if (strchr(tex, '\\') && access(abs_path, F_OK) != 0) {
            char alt[8192];
            snprintf(alt, sizeof alt, "%s", abs_path);
            for (char *c = alt + strlen(mtl_real); *c; ++c)
                if (*c == '\\') *c = '/';
            if (access(alt, F_OK) == 0) snprintf(abs_path, sizeof abs_path, "%s", alt);
        }
        normalise(abs_path, norm, sizeof norm);
        relative_to(out_real, norm, rel, sizeof rel);
        fprintf(f, "%.*s%s\n", (int)(name - line), line, rel);
    }
    free(line);
    int bad = ferror(in);
    fclose(in);
    if (bad) return bk_fail(err, err_size, "%s: read error while copying it for --mesh-out", m->path);
    return 0;
}

/* Writes an mtllib line for each MTL file the scene's OBJ files named (as the loader recorded
 * them, so comments and long lines in the source cannot leak in). MTL names are relative to their
 * OBJ's folder: an MTL in the output's folder is named as is; every other one is copied into
 * mtl_f (the file mtl_path beside the output, named by one relative mtllib line written by the
 * caller) with its texture paths rewritten, so the OBJ names no absolute path (Blender's OBJ
 * importer drops materials named by one). Without mtl_f such an MTL is named by its absolute
 * path. Returns the number copied, or -1 with err. */
static int write_mtllib(FILE *f, const bk_scene *s, const char *out_path, FILE *mtl_f, char *err, size_t err_size)
{
    char out_dir[4096], out_real[PATH_MAX];
    dir_of(out_path, out_dir, sizeof out_dir);
    struct stat b;
    int         have_out = stat(out_dir, &b) == 0 && realpath(out_dir, out_real) != NULL, copied = 0;
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        const bk_scene_mtl *m = &s->mtls[i];
        char                real[PATH_MAX], cwd[4096];
        if (mtl_in_dir(m, have_out ? &b : NULL)) fprintf(f, "mtllib %s\n", m->name);
        else if (mtl_f && have_out) {
            if (copy_mtl(mtl_f, m, out_real, err, err_size)) return -1;
            copied++;
        } else if (m->path[0] == '/') fprintf(f, "mtllib %s\n", m->path);
        else if (realpath(m->path, real)) fprintf(f, "mtllib %s\n", real);
        else if (getcwd(cwd, sizeof cwd)) fprintf(f, "mtllib %s/%s\n", cwd, m->path); /* a missing MTL stays named */
    }
    return copied;
}

typedef struct vt_map {
    uint64_t *keys;
    uint32_t *vals;
    size_t    cap;
    uint32_t  count;
} vt_map;

static uint32_t vt_index(vt_map *m, float u, float v, float *out_uv)
{
    uint64_t key = (uint64_t)bk_float_bits(u) << 32 | bk_float_bits(v);
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t   i = (size_t)(h >> 20) & (m->cap - 1);
    for (;;) {
        if (m->vals[i] == BK_NONE) {
            m->keys[i] = key;
            m->vals[i] = m->count;
            out_uv[2 * m->count] = u;
            out_uv[2 * m->count + 1] = v;
            return m->count++;
        }
        if (m->keys[i] == key) return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
}

/* One vt per distinct corner UV (v flipped, -0 written as 0): m, corner_vt and uvs, or -1 with err. */
static int obj_vt_build(const bk_atlas *a, size_t corners, vt_map *mp, uint32_t **corner_vt_out, float **uvs_out,
                        const char *path, char *err, size_t err_size)
{
    vt_map m;
    m.cap = 16;
    while (m.cap < 2 * corners) m.cap <<= 1;
    m.keys = malloc(sizeof(uint64_t) * m.cap);
    m.vals = malloc(sizeof(uint32_t) * m.cap);
    m.count = 0;
    uint32_t *corner_vt = malloc(sizeof(uint32_t) * corners + 1);
    float    *uvs = malloc(sizeof(float) * 2 * corners + 1);
    if (!m.keys || !m.vals || !corner_vt || !uvs) {
        free(m.keys);
        free(m.vals);
        free(corner_vt);
        free(uvs);
        return bk_fail(err, err_size, "%s: out of memory", path);
    }
    memset(m.vals, 0xFF, sizeof(uint32_t) * m.cap);
    for (size_t c = 0; c < corners; ++c) {
        float u = a->uv[2 * c], v = 1.0f - a->uv[2 * c + 1];
        corner_vt[c] = vt_index(&m, u == 0.0f ? 0.0f : u, v == 0.0f ? 0.0f : v, uvs);
    }
    *mp = m;
    *corner_vt_out = corner_vt;
    *uvs_out = uvs;
    return 0;
}

/* The head comments, the MTL file's head and the mtllib lines; -1 with err. */
static int obj_write_head(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          int mtllib, FILE *mtl_f, const char *mtl_path, int pages, char *err, size_t err_size)
{
    fprintf(f, "# written by baker: the scene with its lightmap UVs as vt (atlas %dx%d, %u charts)\n", a->width,
            a->height, a->chart_count);
    if (pages)
        fprintf(
            f,
            "# %d lightmap pages: vt are within a face's page; each face is in group page_K (K from 0) of its page\n",
            a->page_count);
    if (vm && vm->quad_count)
        fprintf(
            f,
            "# voxels: %u merged quads of visible faces in world units (voxels), group vox_instance_I per instance\n",
            vm->quad_count);
    if (mtl_f) {
        const char *ob = strrchr(path, '/');
        fprintf(mtl_f, BK_MTL_SIGNATURE " for %s: the materials of its mtllib line\n", ob ? ob + 1 : path);
    }
    int copied = mtllib ? write_mtllib(f, s, path, mtl_f, err, err_size) : 0;
    if (copied < 0) return -1;
    if (mtl_f && (copied || (vm && vm->quad_count))) {
        const char *base = strrchr(mtl_path, '/');
        fprintf(f, "mtllib %s\n", base ? base + 1 : mtl_path); /* written beside the OBJ */
    }
    return 0;
}

/* v, vt and vn lines; returns whether the scene has normals to name. */
static int obj_write_verts(FILE *f, const bk_scene *s, const vt_map *m, const float *uvs)
{
    for (uint32_t v = 0; v < s->vertex_count; ++v) {
        const float *p = s->positions + 3 * (size_t)v;
        fprintf(f, "v %.9g %.9g %.9g\n", (double)p[0], (double)p[1], (double)p[2]);
    }
    for (uint32_t i = 0; i < m->count; ++i) fprintf(f, "vt %.9g %.9g\n", (double)uvs[2 * i], (double)uvs[2 * i + 1]);
    int have_vn = s->tri_vn && s->normals && s->normal_count;
    if (have_vn)
        for (uint32_t i = 0; i < s->normal_count; ++i) {
            const float *n = s->normals + 3 * (size_t)i;
            fprintf(f, "vn %.9g %.9g %.9g\n", (double)n[0], (double)n[1], (double)n[2]);
        }
    return have_vn;
}

/* The scene's own triangles 0 .. T0 - 1; returns the page of the last group written. */
static uint32_t obj_write_tris(FILE *f, const bk_scene *s, const bk_atlas *a, const uint32_t *corner_vt, uint32_t T0,
                               int pages, int have_vn)
{
    uint32_t cur_mat = BK_NONE, cur_page = BK_NONE;
    for (uint32_t t = 0; t < T0; ++t) {
        if (pages && a->tri_page[t] != cur_page) {
            cur_page = a->tri_page[t];
            fprintf(f, "g page_%u\n", cur_page);
        }
        if (s->tri_material && s->materials) {
            uint32_t mt = s->tri_material[t];
            if (mt != cur_mat && mt != BK_NONE && mt < s->material_count)
                fprintf(f, "usemtl %s\n", s->materials[mt].name);
            cur_mat = mt;
        }
        int vn = have_vn;
        for (int k = 0; k < 3 && vn; ++k)
            vn = s->tri_vn[3 * (size_t)t + k] != BK_NONE && s->tri_vn[3 * (size_t)t + k] < s->normal_count;
        fputc('f', f);
        for (int k = 0; k < 3; ++k) {
            size_t c = 3 * (size_t)t + k;
            if (vn) fprintf(f, " %u/%u/%u", s->tri_v[c] + 1, corner_vt[c] + 1, s->tri_vn[c] + 1);
            else fprintf(f, " %u/%u", s->tri_v[c] + 1, corner_vt[c] + 1);
        }
        fputc('\n', f);
    }
    return cur_page;
}

/* quads: one 4-corner face each, c0 c1 c2 c3, which a loader fans into the same two
 * triangles (c0 c1 c2) (c0 c2 c3), so a --uv file bake numbers them alike */
static void obj_write_quads(FILE *f, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                            const uint32_t *corner_vt, uint32_t T0, int pages, uint32_t cur_page)
{
    uint32_t cur_inst = BK_NONE;
    uint32_t cur_mat = BK_NONE;
    for (uint32_t q = 0; vm && q < vm->quad_count; ++q) {
        const bk_vox_quad *Q = &vm->quads[q];
        size_t             t = (size_t)T0 + 2 * (size_t)q;
        uint32_t           pg = pages ? a->tri_page[t] : 0;
        if (Q->instance != cur_inst || (pages && pg != cur_page)) {
            cur_inst = Q->instance;
            cur_page = pg;
            if (pages) fprintf(f, "g vox_instance_%u page_%u\n", cur_inst, pg);
            else fprintf(f, "g vox_instance_%u\n", cur_inst);
        }
        if (Q->material != cur_mat) {
            cur_mat = Q->material;
            fprintf(f, "usemtl vox_%u\n", cur_mat);
        }
        size_t c[4] = { 3 * t, 3 * t + 1, 3 * t + 2, 3 * t + 5 };
        fprintf(f, "f %u/%u %u/%u %u/%u %u/%u\n", s->tri_v[c[0]] + 1, corner_vt[c[0]] + 1, s->tri_v[c[1]] + 1,
                corner_vt[c[1]] + 1, s->tri_v[c[2]] + 1, corner_vt[c[2]] + 1, s->tri_v[c[3]] + 1, corner_vt[c[3]] + 1);
    }
}

/* the quads' materials: palette colours (linear, as the bake used them) */
static int obj_write_vox_mtl(FILE *mtl_f, const bk_scene *s, const bk_voxmesh *vm, const char *path,
                             const char *mtl_path, char *err, size_t err_size)
{
    uint8_t *used = calloc((size_t)s->material_count + 1, 1);
    if (!used) return bk_fail(err, err_size, "%s: out of memory", mtl_path);
    for (uint32_t q = 0; q < vm->quad_count; ++q)
        if (vm->quads[q].material < s->material_count) used[vm->quads[q].material] = 1;
    fprintf(mtl_f, "\n# the voxel palette colours of %s (Kd linear albedo, Ke emitted radiance)\n", path);
    for (uint32_t i = 0; i < s->material_count; ++i) {
        if (!used[i]) continue;
        const bk_material *mt = &s->materials[i];
        fprintf(mtl_f, "newmtl vox_%u\nKd %.9g %.9g %.9g\n", i, (double)mt->kd[0], (double)mt->kd[1],
                (double)mt->kd[2]);
        if (mt->ke[0] > 0 || mt->ke[1] > 0 || mt->ke[2] > 0)
            fprintf(mtl_f, "Ke %.9g %.9g %.9g\n", (double)mt->ke[0], (double)mt->ke[1], (double)mt->ke[2]);
    }
    free(used);
    return 0;
}

/* The writer behind the entry points; vm may be NULL (no voxels); mtl_f and mtl_path may be NULL
 * (no MTL beside the OBJ: MTL files of other folders are then named by absolute path). */
static int write_obj(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a, int mtllib,
                     FILE *mtl_f, const char *mtl_path, char *err, size_t err_size)
{
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "%s: atlas built for %u triangles, scene has %u", path, a->tri_count,
                       s->tri_count);
    if ((mtl_f != NULL) != (mtl_path != NULL)) return bk_fail(err, err_size, "%s: an MTL stream needs its path", path);
    if (vm && (vm->first_quad_tri + 2 * (uint64_t)vm->quad_count != s->tri_count ||
               (vm->quad_count && (!mtl_f || !mtl_path))))
        return bk_fail(err, err_size, "%s: the voxel surface does not match the scene", path);
    uint32_t  T = s->tri_count, T0 = vm ? vm->first_quad_tri : T;
    size_t    corners = 3 * (size_t)T;
    vt_map    m = { 0 };
    uint32_t *corner_vt = NULL;
    float    *uvs = NULL;
    if (obj_vt_build(a, corners, &m, &corner_vt, &uvs, path, err, err_size)) return -1;
    int pages = a->page_count > 1 && a->tri_page;

    if (obj_write_head(f, path, s, vm, a, mtllib, mtl_f, mtl_path, pages, err, err_size)) {
        free(m.keys);
        free(m.vals);
        free(corner_vt);
        free(uvs);
        return -1;
    }
    int      have_vn = obj_write_verts(f, s, &m, uvs);
    uint32_t cur_page = obj_write_tris(f, s, a, corner_vt, T0, pages, have_vn);
    obj_write_quads(f, s, vm, a, corner_vt, T0, pages, cur_page);
    free(m.keys);
    free(m.vals);
    free(corner_vt);
    free(uvs);
    if (vm && vm->quad_count) return obj_write_vox_mtl(mtl_f, s, vm, path, mtl_path, err, err_size);
    return 0;
}

int bk_mesh_write_obj_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                           char *err, size_t err_size)
{
    return write_obj(f, path, s, NULL, a, scene_path != NULL, NULL, NULL, err, err_size);
}

int bk_mesh_write_obj_vox(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          FILE *mtl_f, const char *mtl_path, char *err, size_t err_size)
{
    return write_obj(f, path, s, vm, a, 1, mtl_f, mtl_path, err, err_size);
}

int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path, char *err,
                      size_t err_size)
{
    bk_outputs o;
    bk_outputs_init(&o);
    char *mtl = scene_path && bk_mesh_obj_copies_mtl(s, path) ? bk_mesh_mtl_name(path) : NULL;
    int   oi, mi = -1, rc = -1;
    FILE *f, *mf = NULL;
    if (scene_path && bk_mesh_obj_copies_mtl(s, path) && !mtl) return bk_fail(err, err_size, "%s: out of memory", path);
    if (bk_outputs_scene_inputs(&o, s, err, err_size) ||
        (oi = bk_outputs_add(&o, "output", path, 0, err, err_size)) < 0)
        goto out;
    if (mtl && (bk_mesh_mtl_check(mtl, path, err, err_size) ||
                (mi = bk_outputs_add(&o, "output (its MTL)", mtl, 0, err, err_size)) < 0))
        goto out;
    if (!(f = bk_outputs_open(&o, oi, err, err_size)) || (mtl && !(mf = bk_outputs_open(&o, mi, err, err_size))) ||
        write_obj(f, path, s, NULL, a, scene_path != NULL, mf, mtl, err, err_size))
        goto out;
    rc = bk_outputs_commit(&o, err, err_size);
out:
    bk_outputs_free(&o);
    free(mtl);
    return rc;
}
