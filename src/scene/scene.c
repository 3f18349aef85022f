/* scene.c - operations on a loaded bk_scene: concatenating scenes (several SCENE arguments),
 * finding a material's texture file, registering the files a scene read with the output policy
 * (outputs.h), freeing a scene.
 *
 * Pipeline: readers (loader.h) -> bk_scene per file -> bk_scene_append into one scene -> the
 * voxel surface (voxmesh.c), builders, atlas. Triangles, vertices, materials, MTL names, voxel
 * models and instances of src follow those of dst, so the triangles of the first file keep their
 * numbers and the others follow in argument order.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "outputs.h"
#include "scene.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Grows *p from n_old to n_old + n_add items of size sz and copies src's n_add items after. */
static int cat(void **p, size_t n_old, const void *src, size_t n_add, size_t sz)
{
    if (n_add == 0) return 0;
    void *q = realloc(*p, (n_old + n_add) * sz);
    if (!q) return -1;
    memcpy((char *)q + n_old * sz, src, n_add * sz);
    *p = q;
    return 0;
}

/* Adds off to the n indices from a[first..), keeping BK_NONE. */
static void shift(uint32_t *a, size_t first, size_t n, uint32_t off)
{
    for (size_t i = first; i < first + n; ++i)
        if (a[i] != BK_NONE) a[i] += off;
}

static char *dup_str(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char  *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* src's images after dst's, and src's materials (already appended after dst's) re-indexed to them. */
static int append_images(bk_scene *dst, const bk_scene *src)
{
    if (src->image_count) {
        bk_image *im = realloc(dst->images, sizeof(bk_image) * ((size_t)dst->image_count + src->image_count));
        if (!im) return -1;
        dst->images = im;
        for (uint32_t i = 0; i < src->image_count; ++i) {
            const bk_image *e = &src->images[i];
            bk_image       *d = &im[dst->image_count];
            size_t          n = 4 * (size_t)e->w * e->h;
            *d = *e;
            d->path = dup_str(e->path);
            d->rgba8 = e->rgba8 ? malloc(n) : NULL;
            d->rgbaf = e->rgbaf ? malloc(n * sizeof(float)) : NULL;
            if ((e->path && !d->path) || (e->rgba8 && !d->rgba8) || (e->rgbaf && !d->rgbaf)) {
                free(d->path);
                free(d->rgba8);
                free(d->rgbaf);
                return -1;
            }
            if (e->rgba8) memcpy(d->rgba8, e->rgba8, n);
            if (e->rgbaf) memcpy(d->rgbaf, e->rgbaf, n * sizeof(float));
            dst->image_count++;
        }
        for (size_t m = dst->material_count; m < dst->material_count + (size_t)src->material_count; ++m) {
            bk_tex_ref *r[3] = { &dst->materials[m].map_kd, &dst->materials[m].map_ke, &dst->materials[m].map_d };
            for (int k = 0; k < 3; ++k)
                if (r[k]->image != BK_NONE) r[k]->image += dst->image_count - src->image_count;
        }
    }
    return 0;
}

/* Objects: src's triangle objects and voxel instance names re-indexed past dst's names, then
 * src's names (appended before src's instances are counted into dst). 0 or -1 (out of memory). */
static int append_objects(bk_scene *dst, const bk_scene *src, size_t T0, size_t T)
{
    if (src->tri_object || dst->tri_object) {
        uint32_t *a = realloc(dst->tri_object, sizeof(uint32_t) * (T0 + T + 1));
        if (!a) return -1;
        if (!dst->tri_object) memset(a, 0xFF, sizeof(uint32_t) * T0);
        for (size_t i = 0; i < T; ++i)
            a[T0 + i] =
                src->tri_object && src->tri_object[i] != BK_NONE ? src->tri_object[i] + dst->object_count : BK_NONE;
        dst->tri_object = a;
    }
    for (uint32_t i = 0; i < src->vox_instance_count; ++i) {
        bk_vox_instance *in = &dst->vox_instances[dst->vox_instance_count + i];
        in->object = in->object < src->object_count ? in->object + dst->object_count : BK_NONE;
    }
    if (!src->object_count) return 0;
    char **n = realloc(dst->object_names, sizeof(char *) * (dst->object_count + src->object_count));
    if (!n) return -1;
    dst->object_names = n;
    for (uint32_t i = 0; i < src->object_count; ++i) {
        if (!(n[dst->object_count] = dup_str(src->object_names[i]))) return -1;
        dst->object_count++;
    }
    return 0;
}

/* The files' own lightmap UV sets (tri_lmvt), BK_NONE for the triangles of a scene without one. */
static int append_lightmap_uvs(bk_scene *dst, const bk_scene *src, size_t T0, size_t T)
{
    if (!src->tri_lmvt && !dst->tri_lmvt) return 0;
    uint32_t *a = realloc(dst->tri_lmvt, sizeof(uint32_t) * 3 * (T0 + T) + 1);
    if (!a) return -1;
    if (!dst->tri_lmvt) memset(a, 0xFF, sizeof(uint32_t) * 3 * T0);
    if (src->tri_lmvt) memcpy(a + 3 * T0, src->tri_lmvt, sizeof(uint32_t) * 3 * T);
    else memset(a + 3 * T0, 0xFF, sizeof(uint32_t) * 3 * T);
    dst->tri_lmvt = a;
    if (src->tri_lmvt) shift(dst->tri_lmvt, 3 * T0, 3 * T, dst->lm_texcoord_count);
    if (cat((void **)&dst->lm_texcoords, 2 * (size_t)dst->lm_texcoord_count, src->lm_texcoords,
            2 * (size_t)src->lm_texcoord_count, sizeof(float)))
        return -1;
    dst->lm_texcoord_count += src->lm_texcoord_count;
    return 0;
}

int bk_scene_append(bk_scene *dst, const bk_scene *src, char *err, size_t err_size)
{
    uint64_t v = (uint64_t)dst->vertex_count + src->vertex_count, t = (uint64_t)dst->tri_count + src->tri_count;
    uint64_t m = (uint64_t)dst->material_count + src->material_count;
    uint64_t vm = (uint64_t)dst->vox_model_count + src->vox_model_count;
    uint64_t vi = (uint64_t)dst->vox_instance_count + src->vox_instance_count;
    if (v >= BK_NONE || t >= BK_NONE / 3 || m >= BK_NONE || vm > BK_VOX_MAX_MODELS || vi > BK_VOX_MAX_INSTANCES ||
        (uint64_t)dst->texcoord_count + src->texcoord_count >= BK_NONE ||
        (uint64_t)dst->normal_count + src->normal_count >= BK_NONE ||
        (uint64_t)dst->lm_texcoord_count + src->lm_texcoord_count >= BK_NONE)
        return bk_fail(err, err_size,
                       "the scenes together are too large (%llu triangles, %llu vertices, %llu voxel instances)",
                       (unsigned long long)t, (unsigned long long)v, (unsigned long long)vi);
    size_t T0 = dst->tri_count, T = src->tri_count;
    int    has_vt = dst->tri_vt || src->tri_vt, has_vn = dst->tri_vn || src->tri_vn,
        has_mat = dst->tri_material || src->tri_material;
    /* per-triangle arrays one side lacks are made (BK_NONE) before concatenating */
    uint32_t      **arr[3] = { &dst->tri_vt, &dst->tri_vn, &dst->tri_material };
    const uint32_t *sarr[3] = { src->tri_vt, src->tri_vn, src->tri_material };
    int             want[3] = { has_vt, has_vn, has_mat }, per[3] = { 3, 3, 1 };
    for (int k = 0; k < 3; ++k) {
        if (!want[k]) continue;
        size_t    n = per[k] * (T0 + T);
        uint32_t *a = realloc(*arr[k], sizeof(uint32_t) * (n ? n : 1));
        if (!a) return bk_fail(err, err_size, "out of memory");
        if (!*arr[k]) memset(a, 0xFF, sizeof(uint32_t) * per[k] * T0);
        if (sarr[k]) memcpy(a + per[k] * T0, sarr[k], sizeof(uint32_t) * per[k] * T);
        else memset(a + per[k] * T0, 0xFF, sizeof(uint32_t) * per[k] * T);
        *arr[k] = a;
    }
    if (cat((void **)&dst->tri_v, 3 * T0, src->tri_v, 3 * T, sizeof(uint32_t)) ||
        cat((void **)&dst->positions, 3 * (size_t)dst->vertex_count, src->positions, 3 * (size_t)src->vertex_count,
            sizeof(float)) ||
        cat((void **)&dst->texcoords, 2 * (size_t)dst->texcoord_count, src->texcoords, 2 * (size_t)src->texcoord_count,
            sizeof(float)) ||
        cat((void **)&dst->normals, 3 * (size_t)dst->normal_count, src->normals, 3 * (size_t)src->normal_count,
            sizeof(float)) ||
        cat((void **)&dst->materials, dst->material_count, src->materials, src->material_count, sizeof(bk_material)) ||
        cat((void **)&dst->vox_instances, dst->vox_instance_count, src->vox_instances, src->vox_instance_count,
            sizeof(bk_vox_instance)))
        return bk_fail(err, err_size, "out of memory");
    shift(dst->tri_v, 3 * T0, 3 * T, dst->vertex_count);
    if (src->tri_vt) shift(dst->tri_vt, 3 * T0, 3 * T, dst->texcoord_count);
    if (src->tri_vn) shift(dst->tri_vn, 3 * T0, 3 * T, dst->normal_count);
    if (src->tri_material) shift(dst->tri_material, T0, T, dst->material_count);
    for (uint32_t i = 0; i < src->vox_instance_count; ++i)
        dst->vox_instances[dst->vox_instance_count + i].model += dst->vox_model_count;
    if (src->mtl_count) {
        bk_scene_mtl *mt = realloc(dst->mtls, sizeof(bk_scene_mtl) * (dst->mtl_count + src->mtl_count));
        if (!mt) return bk_fail(err, err_size, "out of memory");
        dst->mtls = mt;
        for (uint32_t i = 0; i < src->mtl_count; ++i) {
            bk_scene_mtl *d = &mt[dst->mtl_count];
            d->name = dup_str(src->mtls[i].name);
            d->path = dup_str(src->mtls[i].path);
            if ((src->mtls[i].name && !d->name) || (src->mtls[i].path && !d->path)) {
                free(d->name);
                free(d->path);
                return bk_fail(err, err_size, "out of memory");
            }
            dst->mtl_count++;
        }
    }
    if (append_images(dst, src)) return bk_fail(err, err_size, "out of memory");
    if (src->vox_model_count) {
        bk_vox_model *vm2 =
            realloc(dst->vox_models, sizeof(bk_vox_model) * (dst->vox_model_count + src->vox_model_count));
        if (!vm2) return bk_fail(err, err_size, "out of memory");
        dst->vox_models = vm2;
        for (uint32_t i = 0; i < src->vox_model_count; ++i) {
            bk_vox_model *d = &vm2[dst->vox_model_count];
            *d = src->vox_models[i];
            d->material_base += dst->material_count;
            d->xyzi = malloc(4 * (size_t)d->voxel_count + 1);
            if (!d->xyzi) return bk_fail(err, err_size, "out of memory");
            memcpy(d->xyzi, src->vox_models[i].xyzi, 4 * (size_t)d->voxel_count);
            dst->vox_model_count++;
        }
    }
    if (append_objects(dst, src, T0, T) || append_lightmap_uvs(dst, src, T0, T) ||
        cat((void **)&dst->cameras, dst->camera_count, src->cameras, src->camera_count, sizeof(bk_scene_camera)))
        return bk_fail(err, err_size, "out of memory");
    dst->camera_count += src->camera_count;
    dst->vertex_count += src->vertex_count;
    dst->texcoord_count += src->texcoord_count;
    dst->normal_count += src->normal_count;
    dst->tri_count += src->tri_count;
    dst->material_count += src->material_count;
    dst->vox_instance_count += src->vox_instance_count;
    return 0;
}

int bk_scene_find_map(const bk_scene *s, const char *map, char *out)
{
    char name[512], cand[PATH_MAX + 600];
    snprintf(name, sizeof name, "%s", map);
    for (char *p = name; *p; ++p)
        if (*p == '\\') *p = '/';
    if (name[0] == '/') return realpath(name, out) && access(out, R_OK) == 0 ? 0 : -1;
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        const char *path = s->mtls[i].path ? s->mtls[i].path : "", *slash = strrchr(path, '/');
        if (!slash) snprintf(cand, sizeof cand, "%s", name);
        else snprintf(cand, sizeof cand, "%.*s/%s", (int)(slash - path), path, name);
        if (realpath(cand, out) && access(out, R_OK) == 0) return 0;
    }
    return -1;
}

int bk_outputs_scene_inputs(bk_outputs *o, const bk_scene *s, char *err, size_t err_size)
{
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        int r = bk_outputs_input(o, "an MTL file of the scene", s->mtls[i].path, err, err_size);
        if (r) return r;
    }
    char real[PATH_MAX];
    for (uint32_t m = 0; m < s->material_count; ++m) {
        const bk_tex_ref *maps[3] = { &s->materials[m].map_kd, &s->materials[m].map_ke, &s->materials[m].map_d };
        for (int k = 0; k < 3; ++k) {
            if (!maps[k]->path[0] || bk_scene_find_map(s, maps[k]->path, real)) continue;
            int r = bk_outputs_input(o, "a texture of the scene", real, err, err_size);
            if (r) return r;
        }
    }
    for (uint32_t i = 0; i < s->image_count; ++i) {
        if (!s->images[i].path || s->images[i].embedded) continue;
        int r = bk_outputs_input(o, "a texture of the scene", s->images[i].path, err, err_size);
        if (r) return r;
    }
    return 0;
}

void bk_scene_tri_uv(const bk_scene *s, uint32_t t, float uv[6])
{
    for (int v = 0; v < 3; ++v) {
        uint32_t i = s->tri_vt ? s->tri_vt[3 * (size_t)t + v] : BK_NONE;
        uv[2 * v] = i < s->texcoord_count ? s->texcoords[2 * (size_t)i] : 0.0f;
        uv[2 * v + 1] = i < s->texcoord_count ? s->texcoords[2 * (size_t)i + 1] : 0.0f;
    }
}

void bk_tex_ref_init(bk_tex_ref *r)
{
    memset(r, 0, sizeof *r);
    r->image = BK_NONE;
    r->scale[0] = r->scale[1] = 1.0f;
}

void bk_material_init(bk_material *m)
{
    memset(m, 0, sizeof *m);
    m->kd[0] = m->kd[1] = m->kd[2] = 0.8f;
    m->alpha = 1.0f;
    m->alpha_cutoff = 0.5f;
    bk_tex_ref_init(&m->map_kd);
    bk_tex_ref_init(&m->map_ke);
    bk_tex_ref_init(&m->map_d);
}

void bk_scene_free(bk_scene *s)
{
    if (!s) return;
    free(s->positions);
    free(s->texcoords);
    free(s->normals);
    free(s->tri_v);
    free(s->tri_vt);
    free(s->tri_vn);
    free(s->tri_material);
    free(s->tri_object);
    free(s->tri_lmvt);
    free(s->lm_texcoords);
    free(s->cameras);
    for (uint32_t i = 0; i < s->object_count; ++i) free(s->object_names[i]);
    free(s->object_names);
    free(s->materials);
    for (uint32_t i = 0; i < s->image_count; ++i) {
        free(s->images[i].path);
        free(s->images[i].rgba8);
        free(s->images[i].rgbaf);
    }
    free(s->images);
    for (uint32_t i = 0; i < s->mtl_count; ++i) {
        free(s->mtls[i].name);
        free(s->mtls[i].path);
    }
    free(s->mtls);
    for (uint32_t i = 0; i < s->vox_model_count; ++i) free(s->vox_models[i].xyzi);
    free(s->vox_models);
    free(s->vox_instances);
    memset(s, 0, sizeof *s);
}
