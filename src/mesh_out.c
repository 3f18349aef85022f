/* mesh_out.c - --mesh-out: the scene as an OBJ whose vt are the lightmap UVs (see atlas.h).
 *
 * Pipeline: bk_scene + bk_atlas -> OBJ text -> an output of outputs.h (temporary file, then rename).
 * Triangles keep their file order, so triangle numbers (and a later --uv file bake of this mesh)
 * match. OBJ holds one vt per corner, so the mesh carries the lightmap UVs instead of the texture
 * ones; a game that needs both takes positions and texture UVs from the source and the second UV
 * set from here. vt are deduplicated by exact value, v counts upwards (vt.v = 1 - atlas v).
 */
#define _XOPEN_SOURCE 700   /* realpath */
#include "atlas.h"
#include "outputs.h"
#include "voxmesh.h"
#include "util.h"

#include <errno.h>
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

/* Writes an mtllib line for each MTL file the scene's OBJ files named (as the loader recorded
 * them, so comments and long lines in the source cannot leak in). MTL names are relative to their
 * OBJ's folder: when the output sits in another folder, each becomes the absolute path of the
 * file. Each MTL is judged on its own, so the scenes of several OBJ files in several folders
 * keep working. */
static void write_mtllib(FILE *f, const bk_scene *s, const char *out_path)
{
    char out_dir[4096];
    dir_of(out_path, out_dir, sizeof out_dir);
    struct stat b;
    int have_out = stat(out_dir, &b) == 0;
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        const bk_scene_mtl *m = &s->mtls[i];
        char real[PATH_MAX], cwd[4096], src_dir[4096];
        struct stat a;
        int same = have_out && mtl_base_dir(m, src_dir, sizeof src_dir) && stat(src_dir, &a) == 0 && a.st_dev == b.st_dev &&
                   a.st_ino == b.st_ino;
        if (same || m->path[0] == '/') fprintf(f, "mtllib %s\n", same ? m->name : m->path);
        else if (realpath(m->path, real)) fprintf(f, "mtllib %s\n", real);
        else if (getcwd(cwd, sizeof cwd)) fprintf(f, "mtllib %s/%s\n", cwd, m->path);   /* a missing MTL stays named */
    }
}

typedef struct vt_map { uint64_t *keys; uint32_t *vals; size_t cap; uint32_t count; } vt_map;

static uint32_t vt_index(vt_map *m, float u, float v, float *out_uv)
{
    uint64_t key = (uint64_t)bk_float_bits(u) << 32 | bk_float_bits(v);
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (m->cap - 1);
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

/* The writer behind both entry points; vm, mtl_f and mtl_path may be NULL (no voxels). */
static int write_obj(FILE *f, const char *path, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *a, int mtllib,
                     FILE *mtl_f, const char *mtl_path, char *err, size_t err_size)
{
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "%s: atlas built for %u triangles, scene has %u", path, a->tri_count, s->tri_count);
    if (vm && (vm->first_quad_tri + 2 * (uint64_t)vm->quad_count != s->tri_count || (vm->quad_count && (!mtl_f || !mtl_path))))
        return bk_fail(err, err_size, "%s: the voxel surface does not match the scene", path);
    uint32_t T = s->tri_count, T0 = vm ? vm->first_quad_tri : T;
    size_t corners = 3 * (size_t)T;
    vt_map m;
    m.cap = 16;
    while (m.cap < 2 * corners) m.cap <<= 1;
    m.keys = malloc(sizeof(uint64_t) * m.cap);
    m.vals = malloc(sizeof(uint32_t) * m.cap);
    m.count = 0;
    uint32_t *corner_vt = malloc(sizeof(uint32_t) * corners + 1);
    float *uvs = malloc(sizeof(float) * 2 * corners + 1);
    if (!m.keys || !m.vals || !corner_vt || !uvs) {
        free(m.keys); free(m.vals); free(corner_vt); free(uvs);
        return bk_fail(err, err_size, "%s: out of memory", path);
    }
    memset(m.vals, 0xFF, sizeof(uint32_t) * m.cap);
    for (size_t c = 0; c < corners; ++c) {
        float u = a->uv[2 * c], v = 1.0f - a->uv[2 * c + 1];
        corner_vt[c] = vt_index(&m, u == 0.0f ? 0.0f : u, v == 0.0f ? 0.0f : v, uvs);
    }
    int pages = a->page_count > 1 && a->tri_page;

    fprintf(f, "# written by baker: the scene with its lightmap UVs as vt (atlas %dx%d, %u charts)\n",
            a->width, a->height, a->chart_count);
    if (pages)
        fprintf(f, "# %d lightmap pages: vt are within a face's page; each face is in group page_K (K from 0) of its page\n",
                a->page_count);
    if (vm && vm->quad_count)
        fprintf(f, "# voxels: %u merged quads of visible faces in world units (voxels), group vox_instance_I per instance\n",
                vm->quad_count);
    if (mtllib) write_mtllib(f, s, path);
    if (vm && vm->quad_count) {
        const char *base = strrchr(mtl_path, '/');
        fprintf(f, "mtllib %s\n", base ? base + 1 : mtl_path);   /* written beside the OBJ */
    }
    for (uint32_t v = 0; v < s->vertex_count; ++v) {
        const float *p = s->positions + 3 * (size_t)v;
        fprintf(f, "v %.9g %.9g %.9g\n", (double)p[0], (double)p[1], (double)p[2]);
    }
    for (uint32_t i = 0; i < m.count; ++i) fprintf(f, "vt %.9g %.9g\n", (double)uvs[2 * i], (double)uvs[2 * i + 1]);
    int have_vn = s->tri_vn && s->normals && s->normal_count;
    if (have_vn)
        for (uint32_t i = 0; i < s->normal_count; ++i) {
            const float *n = s->normals + 3 * (size_t)i;
            fprintf(f, "vn %.9g %.9g %.9g\n", (double)n[0], (double)n[1], (double)n[2]);
        }
    uint32_t cur_mat = BK_NONE, cur_page = BK_NONE;
    for (uint32_t t = 0; t < T0; ++t) {
        if (pages && a->tri_page[t] != cur_page) { cur_page = a->tri_page[t]; fprintf(f, "g page_%u\n", cur_page); }
        if (s->tri_material && s->materials) {
            uint32_t mt = s->tri_material[t];
            if (mt != cur_mat && mt != BK_NONE && mt < s->material_count) fprintf(f, "usemtl %s\n", s->materials[mt].name);
            cur_mat = mt;
        }
        int vn = have_vn;
        for (int k = 0; k < 3 && vn; ++k) vn = s->tri_vn[3 * (size_t)t + k] != BK_NONE && s->tri_vn[3 * (size_t)t + k] < s->normal_count;
        fputc('f', f);
        for (int k = 0; k < 3; ++k) {
            size_t c = 3 * (size_t)t + k;
            if (vn) fprintf(f, " %u/%u/%u", s->tri_v[c] + 1, corner_vt[c] + 1, s->tri_vn[c] + 1);
            else fprintf(f, " %u/%u", s->tri_v[c] + 1, corner_vt[c] + 1);
        }
        fputc('\n', f);
    }
    /* quads: one 4-corner face each, c0 c1 c2 c3, which a loader fans into the same two
     * triangles (c0 c1 c2) (c0 c2 c3), so a --uv file bake numbers them alike */
    uint32_t cur_inst = BK_NONE;
    cur_mat = BK_NONE;
    for (uint32_t q = 0; vm && q < vm->quad_count; ++q) {
        const bk_vox_quad *Q = &vm->quads[q];
        size_t t = (size_t)T0 + 2 * (size_t)q;
        uint32_t pg = pages ? a->tri_page[t] : 0;
        if (Q->instance != cur_inst || (pages && pg != cur_page)) {
            cur_inst = Q->instance; cur_page = pg;
            if (pages) fprintf(f, "g vox_instance_%u page_%u\n", cur_inst, pg);
            else fprintf(f, "g vox_instance_%u\n", cur_inst);
        }
        if (Q->material != cur_mat) { cur_mat = Q->material; fprintf(f, "usemtl vox_%u\n", cur_mat); }
        size_t c[4] = { 3 * t, 3 * t + 1, 3 * t + 2, 3 * t + 5 };
        fprintf(f, "f %u/%u %u/%u %u/%u %u/%u\n", s->tri_v[c[0]] + 1, corner_vt[c[0]] + 1, s->tri_v[c[1]] + 1, corner_vt[c[1]] + 1,
                s->tri_v[c[2]] + 1, corner_vt[c[2]] + 1, s->tri_v[c[3]] + 1, corner_vt[c[3]] + 1);
    }
    free(m.keys); free(m.vals); free(corner_vt); free(uvs);
    if (vm && vm->quad_count) {
        /* the quads' materials: palette colours (linear, as the bake used them) */
        uint8_t *used = calloc((size_t)s->material_count + 1, 1);
        if (!used) return bk_fail(err, err_size, "%s: out of memory", mtl_path);
        for (uint32_t q = 0; q < vm->quad_count; ++q)
            if (vm->quads[q].material < s->material_count) used[vm->quads[q].material] = 1;
        fprintf(mtl_f, "# written by baker: the voxel palette colours of %s (Kd linear albedo, Ke emitted radiance)\n", path);
        for (uint32_t i = 0; i < s->material_count; ++i) {
            if (!used[i]) continue;
            const bk_material *mt = &s->materials[i];
            fprintf(mtl_f, "newmtl vox_%u\nKd %.9g %.9g %.9g\n", i, (double)mt->kd[0], (double)mt->kd[1], (double)mt->kd[2]);
            if (mt->ke[0] > 0 || mt->ke[1] > 0 || mt->ke[2] > 0)
                fprintf(mtl_f, "Ke %.9g %.9g %.9g\n", (double)mt->ke[0], (double)mt->ke[1], (double)mt->ke[2]);
        }
        free(used);
    }
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

int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                      char *err, size_t err_size)
{
    bk_outfile of;
    if (bk_outfile_open(&of, path, err, err_size) != 0) return -1;
    if (bk_mesh_write_obj_file(of.f, path, s, a, scene_path, err, err_size)) { bk_outfile_abort(&of); return -1; }
    return bk_outfile_commit(&of, err, err_size);
}
