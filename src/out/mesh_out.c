/* mesh_out.c - --mesh-out: the scene as an OBJ whose vt are the lightmap UVs, and its MTL (mesh_out.h).
 *
 * Pipeline: bk_scene + bk_atlas -> OBJ text -> an output of outputs.h (temporary file, then rename).
 * Triangles keep their file order, so triangle numbers (and a later --uv file bake of this mesh)
 * match. OBJ holds one vt per corner, so the mesh carries the lightmap UVs instead of the texture
 * ones; a game that needs both takes positions and texture UVs from the source and the second UV
 * set from here. vt are deduplicated by exact value, v counts upwards (vt.v = 1 - atlas v).
 * Because the vt are the lightmap's, the MTL beside the OBJ keeps the scene's texture statements
 * only as comments (an importer would lay the albedo over the atlas) and names the lightmap with
 * map_Ka: Blender 3.4's OBJ importer leaves map_Ka out ("MTL texture map type not supported"),
 * the least harm of the texture statements; others read it as an ambient map, which a lightmap is.
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

int bk_mesh_obj_writes_mtl(const bk_scene *s, const bk_voxmesh *vm)
{
    return s->mtl_count > 0 || (vm && vm->quad_count > 0);
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

/* How the OBJ and its MTL name a file at `abs_path` (absolute, normalised) from the output's
 * folder out_real (a realpath): by its path below that folder ("tex/a.png"), or, when it lies
 * elsewhere, by its file name alone (no line baker writes names a folder of the baking machine
 * or climbs out with "../"; the MTL then says to copy the file beside it). Returns 1 when the
 * name finds the file from the output's folder. */
static int name_from(const char *out_real, const char *abs_path, char *out, size_t n)
{
    size_t lo = strlen(out_real);
    if (!strcmp(out_real, "/")) lo = 0;
    if (!strncmp(abs_path, out_real, lo) && abs_path[lo] == '/' && abs_path[lo + 1]) {
        snprintf(out, n, "%s", abs_path + lo + 1);
        return 1;
    }
    const char *base = strrchr(abs_path, '/');
    snprintf(out, n, "%s", base ? base + 1 : abs_path);
    return 0;
}

/* A file named as the user gave it (relative to the working folder, or absolute) as name_from
 * names it; its folder must exist (the output policy probed it). */
static int name_user_file(const char *out_real, const char *path, char *out, size_t n)
{
    char dir[4096], real[PATH_MAX], joined[8192], norm[8192];
    dir_of(path, dir, sizeof dir);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!realpath(dir, real)) {
        snprintf(out, n, "%s", base);
        return 0;
    }
    snprintf(joined, sizeof joined, "%s/%s", real, base);
    normalise(joined, norm, sizeof norm);
    return name_from(out_real, norm, out, n);
}

static int is_map_keyword(const char *k, size_t n)
{
    static const char *const kw[] = { "bump", "disp", "decal", "refl", "norm" };
    if (n > 4 && !strncasecmp(k, "map_", 4)) return 1;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; ++i)
        if (strlen(kw[i]) == n && !strncasecmp(k, kw[i], n)) return 1;
    return 0;
}

/* What the MTL beside the OBJ says of the lightmap: the file map_Ka names for each page (as
 * the OBJ's folder sees it, name_from), and the pages each material's faces lie on. */
#define PAGE_SEVERAL (BK_NONE - 1u)
typedef struct mtl_ctx {
    const bk_scene *s;
    const char     *out_real;
    char          **page_name; /* page_count names, NULL: no lightmap named */
    int            *page_here; /* the name finds the file (name_from) */
    int             page_count;
    uint32_t       *tri_page;  /* per material of the scene's own triangles: its page, BK_NONE (none), PAGE_SEVERAL */
    uint32_t       *quad_page; /* the same for the quads' materials vox_M */
} mtl_ctx;

/* map_Ka naming the lightmap page of the material whose faces use page pg (mtl_ctx.tri_page). */
static void write_map_ka(FILE *f, const mtl_ctx *x, uint32_t pg)
{
    if (!x->page_name) return;
    if (x->page_count == 1) pg = 0;
    if (pg == PAGE_SEVERAL) {
        fputs("# its faces lie on several lightmap pages (groups page_K): no map_Ka, see the head of this file\n", f);
        return;
    }
    if (pg == BK_NONE || (int)pg >= x->page_count) return;
    fprintf(f, "map_Ka %s\n", x->page_name[pg]);
}

/* The scene material named `name` (the first of that name), or BK_NONE. */
static uint32_t material_named(const bk_scene *s, const char *name)
{
    for (uint32_t i = 0; s->materials && i < s->material_count; ++i)
        if (!strcmp(s->materials[i].name, name)) return i;
    return BK_NONE;
}

/* Copies MTL m into f. The OBJ's vt are the lightmap UVs, so every texture statement (map_*,
 * bump, disp, decal, refl, norm: each would read them) is copied commented out ("# map_Kd ..."),
 * its options kept and its file named from the output's folder (name_from: a path below it, or
 * the file name alone after a line saying to copy the file there). A texture written with
 * backslashes (Windows exporters) that exists only with slashes gets slashes. After each newmtl
 * comes map_Ka naming the lightmap page of its faces (write_map_ka). */
static int copy_mtl(FILE *f, const bk_scene_mtl *m, const mtl_ctx *x, char *err, size_t err_size)
{
    char        mtl_dir[4096], mtl_real[PATH_MAX];
    const char *mbase = strrchr(m->name, '/');
    mbase = mbase ? mbase + 1 : m->name;
    dir_of(m->path, mtl_dir, sizeof mtl_dir);
    int   have_dir = realpath(mtl_dir, mtl_real) != NULL;
    FILE *in = fopen(m->path, "rb");
    if (!in) { /* the loader warned already; say so in the copy too */
        fprintf(f, "\n# %s (an MTL file of the scene): cannot be read (%s): its materials are missing\n", mbase,
                strerror(errno));
        return 0;
    }
    fprintf(f, "\n# copied from the scene's %s: texture statements commented out (the vt are lightmap UVs)\n", mbase);
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
        if (ke - k == 6 && !strncasecmp(k, "newmtl", 6)) {
            const char *nm = ke;
            while (*nm == ' ' || *nm == '\t') nm++;
            char   name[1024];
            size_t nl = strlen(nm);
            while (nl && (nm[nl - 1] == ' ' || nm[nl - 1] == '\t')) nl--;
            snprintf(name, sizeof name, "%.*s", (int)nl, nm);
            fprintf(f, "%s\n", line);
            uint32_t mi = material_named(x->s, name);
            write_map_ka(f, x, mi == BK_NONE || !x->tri_page ? BK_NONE : x->tri_page[mi]);
            continue;
        }
        if (!is_map_keyword(k, (size_t)(ke - k))) {
            fprintf(f, "%s\n", line);
            continue;
        }
        const char *name = bk_mtl_map_file(ke);
        size_t      nl = strlen(name);
        while (nl && (name[nl - 1] == ' ' || name[nl - 1] == '\t')) nl--;
        if (!nl) {
            fprintf(f, "# %s\n", line);
            continue;
        }
        char tex[4096], abs_path[8192], norm[8192], shown[8192];
        snprintf(tex, sizeof tex, "%.*s", (int)nl, name);
        int here = 0;
        if (tex[0] == '/' || have_dir) {
            if (tex[0] == '/') snprintf(abs_path, sizeof abs_path, "%s", tex);
            else snprintf(abs_path, sizeof abs_path, "%s/%s", mtl_real, tex);
            if (strchr(tex, '\\') && access(abs_path, F_OK) != 0) {
                char alt[8192];
                snprintf(alt, sizeof alt, "%s", abs_path);
                for (char *c = alt + (tex[0] == '/' ? 0 : strlen(mtl_real)); *c; ++c)
                    if (*c == '\\') *c = '/';
                if (access(alt, F_OK) == 0) snprintf(abs_path, sizeof abs_path, "%s", alt);
            }
            normalise(abs_path, norm, sizeof norm);
            here = name_from(x->out_real, norm, shown, sizeof shown);
        } else {
            const char *b = strrchr(tex, '/');
            snprintf(shown, sizeof shown, "%s", b ? b + 1 : tex);
        }
        if (!here) fprintf(f, "# (%s is not in this folder: copy it here for the statement below)\n", shown);
        fprintf(f, "# %.*s%s\n", (int)(name - line), line, shown);
    }
    free(line);
    int bad = ferror(in);
    fclose(in);
    if (bad) return bk_fail(err, err_size, "%s: read error while copying it for --mesh-out", m->path);
    return 0;
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

/* The pages each material's faces lie on (mtl_ctx.tri_page, .quad_page); -1 when out of memory. */
static int material_pages(mtl_ctx *x, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a, uint32_t T0)
{
    size_t nm = (size_t)s->material_count + 1;
    x->tri_page = malloc(sizeof(uint32_t) * nm);
    x->quad_page = malloc(sizeof(uint32_t) * nm);
    if (!x->tri_page || !x->quad_page) return -1;
    memset(x->tri_page, 0xFF, sizeof(uint32_t) * nm);
    memset(x->quad_page, 0xFF, sizeof(uint32_t) * nm);
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        int      quad = t >= T0;
        uint32_t m = quad ? vm->quads[(t - T0) / 2].material : s->tri_material ? s->tri_material[t] : BK_NONE;
        if (m >= s->material_count) continue;
        uint32_t pg = a->tri_page ? a->tri_page[t] : 0, *slot = quad ? &x->quad_page[m] : &x->tri_page[m];
        if (*slot == BK_NONE) *slot = pg;
        else if (*slot != pg) *slot = PAGE_SEVERAL;
    }
    return 0;
}

/* The lightmap's files as the OBJ's folder names them (name_from), into x; -1 when out of memory. */
static int lightmap_names(mtl_ctx *x, const bk_mesh_obj_opts *o, const bk_atlas *a)
{
    if (!o || !o->lightmap) return 0;
    x->page_count = a->page_count;
    x->page_name = calloc((size_t)a->page_count, sizeof(char *));
    x->page_here = calloc((size_t)a->page_count, sizeof(int));
    if (!x->page_name || !x->page_here) return -1;
    for (int p = 0; p < a->page_count; ++p) {
        char buf[8192];
        x->page_here[p] = name_user_file(x->out_real, o->lightmap[p], buf, sizeof buf);
        if (!(x->page_name[p] = malloc(strlen(buf) + 1))) return -1;
        strcpy(x->page_name[p], buf);
    }
    return 0;
}

static void mtl_ctx_free(mtl_ctx *x)
{
    for (int p = 0; x->page_name && p < x->page_count; ++p) free(x->page_name[p]);
    free(x->page_name);
    free(x->page_here);
    free(x->tri_page);
    free(x->quad_page);
}

/* What the vt are and which files hold the lightmap, as comments of the OBJ (f) or of its MTL. */
static void say_lightmap(FILE *f, const mtl_ctx *x, const bk_mesh_obj_opts *o, const bk_atlas *a)
{
    fprintf(f, "# The vt are the lightmap UVs (atlas %dx%d%s), not texture UVs", a->width, a->height,
            a->page_count > 1 ? " per page" : "");
    if (!x->page_name) {
        fputs(".\n", f);
        return;
    }
    fputs(a->page_count > 1 ? "; the lightmap pages (faces in group page_K read page K):\n" : "; the lightmap:\n", f);
    for (int p = 0; p < x->page_count; ++p) {
        if (a->page_count > 1)
            fprintf(f, "#   page %d: %s%s\n", p, x->page_name[p], x->page_here[p] ? "" : " (copy it beside this file)");
        else fprintf(f, "#   %s%s\n", x->page_name[0], x->page_here[0] ? "" : " (copy it beside this file)");
    }
    for (int k = 0; k < o->also_count; ++k) {
        char buf[8192];
        int  here = name_user_file(x->out_real, o->also[k], buf, sizeof buf);
        fprintf(f, "#   the same light as %s%s%s\n", buf, a->page_count > 1 ? " (page 0; the others likewise)" : "",
                here ? "" : " (copy it beside this file)");
    }
}

/* The head comments of the OBJ, the MTL file's head, its copies of the scene's MTL files, and the
 * OBJ's mtllib line; -1 with err. */
static int obj_write_head(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          FILE *mtl_f, const char *mtl_path, int pages, const mtl_ctx *x, const bk_mesh_obj_opts *o,
                          char *err, size_t err_size)
{
    const char *ob = strrchr(path, '/');
    fprintf(f, "# written by baker: the scene with its lightmap UVs as vt (atlas %dx%d, %u charts)\n", a->width,
            a->height, a->chart_count);
    say_lightmap(f, x, o, a);
    if (pages)
        fprintf(
            f,
            "# %d lightmap pages: vt are within a face's page; each face is in group page_K (K from 0) of its page\n",
            a->page_count);
    if (vm && vm->quad_count)
        fprintf(f,
                "# voxels: %u merged quads of visible faces in world units (voxels), object and group "
                "vox_instance_I per instance (the object takes the instance's name where it has one)\n",
                vm->quad_count);
    if (!mtl_f) return 0;
    fprintf(mtl_f, BK_MTL_SIGNATURE " for %s: the materials of its mtllib line\n", ob ? ob + 1 : path);
    say_lightmap(mtl_f, x, o, a);
    fputs("# Texture statements (map_Kd, map_d, bump ...) would read those UVs: they are copied commented out\n"
          "# (\"# map_Kd ...\"); take them, with the texture UVs, from the scene. map_Ka names the lightmap page\n"
          "# of a material's faces (Blender's OBJ importer leaves it out; multiply it with the albedo).\n",
          mtl_f);
    for (uint32_t i = 0; i < s->mtl_count; ++i)
        if (copy_mtl(mtl_f, &s->mtls[i], x, err, err_size)) return -1;
    const char *base = strrchr(mtl_path, '/');
    fprintf(f, "mtllib %s\n", base ? base + 1 : mtl_path); /* written beside the OBJ */
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

/* "o NAME" (a name of the scene's o / g lines or of a voxel instance; no line break can be in it) */
static void write_o(FILE *f, const bk_scene *s, uint32_t obj, const char *fallback, uint32_t k)
{
    if (obj < s->object_count && s->object_names && s->object_names[obj] && s->object_names[obj][0])
        fprintf(f, "o %s\n", s->object_names[obj]);
    else fprintf(f, "o %s%u\n", fallback, k);
}

/* The scene's own triangles 0 .. T0 - 1, in runs of their object (o), page group (g page_K) and
 * material; returns the page of the last group written. */
static uint32_t obj_write_tris(FILE *f, const bk_scene *s, const bk_atlas *a, const uint32_t *corner_vt, uint32_t T0,
                               int pages, int have_vn)
{
    uint32_t cur_mat = BK_NONE, cur_page = BK_NONE, cur_obj = BK_NONE, unnamed = 0;
    int      fresh = 1; /* a new object: its page group and material are said again */
    for (uint32_t t = 0; t < T0; ++t) {
        uint32_t ob = s->tri_object ? s->tri_object[t] : BK_NONE;
        if (ob != cur_obj) {
            cur_obj = ob;
            write_o(f, s, ob, "unnamed_", unnamed++);
            fresh = 1;
        }
        if (pages && (fresh || a->tri_page[t] != cur_page)) {
            cur_page = a->tri_page[t];
            fprintf(f, "g page_%u\n", cur_page);
        }
        if (s->tri_material && s->materials) {
            uint32_t mt = s->tri_material[t];
            if ((fresh || mt != cur_mat) && mt != BK_NONE && mt < s->material_count)
                fprintf(f, "usemtl %s\n", s->materials[mt].name);
            cur_mat = mt;
        }
        fresh = 0;
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
 * triangles (c0 c1 c2) (c0 c2 c3), so a --uv file bake numbers them alike; each instance an
 * object of its name (vox_instance_I where it has none) and group vox_instance_I */
static void obj_write_quads(FILE *f, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                            const uint32_t *corner_vt, uint32_t T0, int pages, uint32_t cur_page,
                            const bk_mesh_obj_opts *o)
{
    uint32_t cur_inst = BK_NONE;
    uint32_t cur_mat = BK_NONE;
    for (uint32_t q = 0; vm && q < vm->quad_count; ++q) {
        const bk_vox_quad *Q = &vm->quads[q];
        size_t             t = (size_t)T0 + 2 * (size_t)q;
        uint32_t           pg = pages ? a->tri_page[t] : 0;
        if (Q->instance != cur_inst) {
            uint32_t ob = o && o->vox_instances && Q->instance < o->vox_instance_count
                              ? o->vox_instances[Q->instance].object
                              : BK_NONE;
            write_o(f, s, ob, "vox_instance_", Q->instance);
            cur_mat = BK_NONE; /* said again in the new object */
        }
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

/* the quads' materials: palette colours (linear, as the bake used them), each with map_Ka */
static int obj_write_vox_mtl(FILE *mtl_f, const bk_scene *s, const bk_voxmesh *vm, const mtl_ctx *x,
                             const char *mtl_path, char *err, size_t err_size)
{
    uint8_t *used = calloc((size_t)s->material_count + 1, 1);
    if (!used) return bk_fail(err, err_size, "%s: out of memory", mtl_path);
    for (uint32_t q = 0; q < vm->quad_count; ++q)
        if (vm->quads[q].material < s->material_count) used[vm->quads[q].material] = 1;
    fputs("\n# the voxel palette colours (Kd linear albedo, Ke emitted radiance)\n", mtl_f);
    for (uint32_t i = 0; i < s->material_count; ++i) {
        if (!used[i]) continue;
        const bk_material *mt = &s->materials[i];
        fprintf(mtl_f, "newmtl vox_%u\nKd %.9g %.9g %.9g\n", i, (double)mt->kd[0], (double)mt->kd[1],
                (double)mt->kd[2]);
        if (mt->ke[0] > 0 || mt->ke[1] > 0 || mt->ke[2] > 0)
            fprintf(mtl_f, "Ke %.9g %.9g %.9g\n", (double)mt->ke[0], (double)mt->ke[1], (double)mt->ke[2]);
        write_map_ka(mtl_f, x, x->quad_page ? x->quad_page[i] : BK_NONE);
    }
    free(used);
    return 0;
}

/* The writer behind the entry points; vm may be NULL (no voxels); mtl_f and mtl_path may be NULL
 * (no MTL beside the OBJ: then no mtllib line). */
static int write_obj(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a, FILE *mtl_f,
                     const char *mtl_path, const bk_mesh_obj_opts *o, char *err, size_t err_size)
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
    mtl_ctx   x;
    char      out_dir[4096], out_real[PATH_MAX];
    memset(&x, 0, sizeof x);
    dir_of(path, out_dir, sizeof out_dir);
    if (!realpath(out_dir, out_real)) snprintf(out_real, sizeof out_real, "/nonexistent-folder"); /* names only */
    x.s = s;
    x.out_real = out_real;
    int rc = -1;
    if (lightmap_names(&x, o, a) || (mtl_f && material_pages(&x, s, vm, a, T0))) {
        bk_fail(err, err_size, "%s: out of memory", path);
        goto out;
    }
    if (obj_vt_build(a, corners, &m, &corner_vt, &uvs, path, err, err_size)) goto out;
    int pages = a->page_count > 1 && a->tri_page;
    if (obj_write_head(f, path, s, vm, a, mtl_f, mtl_path, pages, &x, o, err, err_size)) goto out;
    int      have_vn = obj_write_verts(f, s, &m, uvs);
    uint32_t cur_page = obj_write_tris(f, s, a, corner_vt, T0, pages, have_vn);
    obj_write_quads(f, s, vm, a, corner_vt, T0, pages, cur_page, o);
    rc = vm && vm->quad_count ? obj_write_vox_mtl(mtl_f, s, vm, &x, mtl_path, err, err_size) : 0;
out:
    free(m.keys);
    free(m.vals);
    free(corner_vt);
    free(uvs);
    mtl_ctx_free(&x);
    return rc;
}

int bk_mesh_write_obj_vox(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a,
                          FILE *mtl_f, const char *mtl_path, const bk_mesh_obj_opts *o, char *err, size_t err_size)
{
    return write_obj(f, path, s, vm, a, mtl_f, mtl_path, o, err, err_size);
}

int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                      const bk_mesh_obj_opts *o, char *err, size_t err_size)
{
    bk_outputs o_;
    bk_outputs_init(&o_);
    const int writes_mtl = scene_path && bk_mesh_obj_writes_mtl(s, NULL);
    char     *mtl = writes_mtl ? bk_mesh_mtl_name(path) : NULL;
    int       oi, mi = -1, rc = -1;
    FILE     *f, *mf = NULL;
    if (writes_mtl && !mtl) return bk_fail(err, err_size, "%s: out of memory", path);
    if (bk_outputs_scene_inputs(&o_, s, err, err_size) ||
        (oi = bk_outputs_add(&o_, "output", path, 0, err, err_size)) < 0)
        goto out;
    if (mtl && (bk_mesh_mtl_check(mtl, path, err, err_size) ||
                (mi = bk_outputs_add(&o_, "output (its MTL)", mtl, 0, err, err_size)) < 0))
        goto out;
    if (!(f = bk_outputs_open(&o_, oi, err, err_size)) || (mtl && !(mf = bk_outputs_open(&o_, mi, err, err_size))) ||
        write_obj(f, path, s, NULL, a, mf, mtl, o, err, err_size))
        goto out;
    rc = bk_outputs_commit(&o_, err, err_size);
out:
    bk_outputs_free(&o_);
    free(mtl);
    return rc;
}
