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

/* Writes an mtllib line for each MTL file the scene's OBJ named (as the loader recorded them, so
 * comments and long lines in the source cannot leak in). MTL names are relative to the OBJ's
 * folder: when the output sits in another folder, each becomes the absolute path of the file. */
static void write_mtllib(FILE *f, const bk_scene *s, const char *scene_path, const char *out_path)
{
    char src_dir[4096], out_dir[4096];
    dir_of(scene_path, src_dir, sizeof src_dir);
    dir_of(out_path, out_dir, sizeof out_dir);
    struct stat a, b;
    int same = stat(src_dir, &a) == 0 && stat(out_dir, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        const bk_scene_mtl *m = &s->mtls[i];
        char real[PATH_MAX], cwd[4096];
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

int bk_mesh_write_obj_file(FILE *f, const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                           char *err, size_t err_size)
{
    if (a->tri_count != s->tri_count)
        return bk_fail(err, err_size, "%s: atlas built for %u triangles, scene has %u", path, a->tri_count, s->tri_count);
    uint32_t T = s->tri_count;
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

    fprintf(f, "# written by baker: the scene with its lightmap UVs as vt (atlas %dx%d, %u charts)\n",
            a->width, a->height, a->chart_count);
    if (scene_path) write_mtllib(f, s, scene_path, path);
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
    uint32_t cur_mat = BK_NONE;
    for (uint32_t t = 0; t < T; ++t) {
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
    free(m.keys); free(m.vals); free(corner_vt); free(uvs);
    return 0;
}

int bk_mesh_write_obj(const char *path, const bk_scene *s, const bk_atlas *a, const char *scene_path,
                      char *err, size_t err_size)
{
    bk_outfile of;
    if (bk_outfile_open(&of, path, err, err_size) != 0) return -1;
    if (bk_mesh_write_obj_file(of.f, path, s, a, scene_path, err, err_size)) { bk_outfile_abort(&of); return -1; }
    return bk_outfile_commit(&of, err, err_size);
}
