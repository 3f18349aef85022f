/* material.c - the texture pool and alpha records of a scene (material.h).
 *
 * Pipeline: bk_scene materials and images -> here -> accel (records' v1.w) and bake data. Each image
 * goes into the pool once, however many maps name it; each loaded map gets its own record (its
 * wrap, transform, encoding and channel). sRGB bytes are decoded through a table made here in
 * double, which both sides then read, so the GPU needs no pow of its own.
 */
#include "material.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t tri_material(const bk_scene *s, uint32_t t)
{
    uint32_t m = s->tri_material ? s->tri_material[t] : BK_NONE;
    return m < s->material_count ? m : BK_NONE;
}

/* The record of one map: colour (sRGB unless HDR) or scalar (linear, alpha or red). */
static bk_tex_rec make_rec(const bk_image *im, const bk_tex_ref *r, uint32_t offset, int colour)
{
    bk_tex_rec t;
    memset(&t, 0, sizeof t);
    t.offset = offset;
    t.w = im->w;
    t.h = im->h;
    t.flags = (im->rgbaf ? BK_TEX_FLOAT : 0u) | (r->clamp ? BK_TEX_CLAMP : 0u);
    if (colour && !im->rgbaf) t.flags |= BK_TEX_SRGB;
    int red = r->channel == BK_TEX_CHANNEL_RED ||
              (r->channel == BK_TEX_CHANNEL_AUTO && (im->channels == 1 || im->channels == 3));
    if (!colour && red) t.flags |= BK_TEX_CHAN_RED;
    t.su = r->scale[0];
    t.sv = r->scale[1];
    t.ou = r->offset[0];
    t.ov = r->offset[1];
    return t;
}

static int build_images(const bk_scene *s, bk_tex_pool *p, size_t *offset, char *err, size_t err_size)
{
    for (uint32_t i = 0; i < s->image_count; ++i) {
        const bk_image *im = &s->images[i];
        size_t          n = (size_t)im->w * im->h;
        if (im->rgbaf) {
            offset[i] = p->texelf_count;
            p->texelf_count += n;
        } else {
            offset[i] = p->texel8_count;
            p->texel8_count += n;
        }
    }
    if (p->texel8_count > 0xFFFFFFFFu || p->texelf_count > 0xFFFFFFFFu)
        return bk_fail(err, err_size, "the scene's textures hold more than 2^32 texels");
    p->texels8 = malloc(sizeof(uint32_t) * (p->texel8_count ? p->texel8_count : 1));
    p->texelsf = malloc(sizeof(bk_f4) * (p->texelf_count ? p->texelf_count : 1));
    if (!p->texels8 || !p->texelsf) return bk_fail(err, err_size, "out of memory for the scene's textures");
    for (uint32_t i = 0; i < s->image_count; ++i) {
        const bk_image *im = &s->images[i];
        size_t          n = (size_t)im->w * im->h;
        if (im->rgbaf) {
            for (size_t k = 0; k < n; ++k) {
                bk_f4 *d = &p->texelsf[offset[i] + k];
                d->x = im->rgbaf[4 * k];
                d->y = im->rgbaf[4 * k + 1];
                d->z = im->rgbaf[4 * k + 2];
                d->w = im->rgbaf[4 * k + 3];
            }
        } else if (im->rgba8) {
            for (size_t k = 0; k < n; ++k) {
                const uint8_t *c = im->rgba8 + 4 * k;
                p->texels8[offset[i] + k] =
                    (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
            }
        }
    }
    return 0;
}

static int build_recs(const bk_scene *s, bk_tex_pool *p, const size_t *offset, char *err, size_t err_size)
{
    p->material_count = s->material_count;
    p->mat_tex = malloc(sizeof(uint32_t) * BK_MAT_MAPS * (s->material_count ? s->material_count : 1));
    p->recs = malloc(sizeof(bk_tex_rec) * BK_MAT_MAPS * (s->material_count ? s->material_count : 1));
    if (!p->mat_tex || !p->recs) return bk_fail(err, err_size, "out of memory for the texture records");
    for (uint32_t m = 0; m < s->material_count; ++m) {
        const bk_material *mt = &s->materials[m];
        const bk_tex_ref  *maps[BK_MAT_MAPS] = { &mt->map_kd, &mt->map_ke, &mt->map_d };
        for (int k = 0; k < BK_MAT_MAPS; ++k) {
            uint32_t im = maps[k]->image;
            if (im >= s->image_count || !(s->images[im].rgba8 || s->images[im].rgbaf)) {
                p->mat_tex[BK_MAT_MAPS * m + k] = BK_NONE;
                continue;
            }
            p->mat_tex[BK_MAT_MAPS * m + k] = p->rec_count;
            p->recs[p->rec_count++] = make_rec(&s->images[im], maps[k], (uint32_t)offset[im], k != BK_MAT_MAP_D);
        }
    }
    return 0;
}

static int build_alpha(const bk_scene *s, bk_tex_pool *p, char *err, size_t err_size)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        uint32_t m = tri_material(s, t);
        if (m != BK_NONE && s->materials[m].alpha_mode != BK_ALPHA_OPAQUE) n++;
        if (m != BK_NONE && (p->mat_tex[BK_MAT_MAPS * m + BK_MAT_MAP_KD] != BK_NONE ||
                             p->mat_tex[BK_MAT_MAPS * m + BK_MAT_MAP_KE] != BK_NONE))
            p->textured_tris++;
    }
    if (!n) return 0;
    p->tri_count = s->tri_count;
    p->tri_alpha = calloc(s->tri_count, sizeof(uint32_t));
    p->alpha = malloc(sizeof(bk_f4) * 2 * (size_t)n);
    if (!p->tri_alpha || !p->alpha) return bk_fail(err, err_size, "out of memory for the cut-out records");
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        uint32_t m = tri_material(s, t);
        if (m == BK_NONE || s->materials[m].alpha_mode == BK_ALPHA_OPAQUE) continue;
        const bk_material *mt = &s->materials[m];
        float              uv[6];
        bk_scene_tri_uv(s, t, uv);
        uint32_t ref = p->mat_tex[BK_MAT_MAPS * m + BK_MAT_MAP_D];
        float    param =
            mt->alpha_mode == BK_ALPHA_MASK ? (mt->alpha > 0.0f ? mt->alpha_cutoff / mt->alpha : INFINITY) : mt->alpha;
        bk_f4 *a = &p->alpha[2 * (size_t)p->alpha_count];
        a[0].x = uv[0];
        a[0].y = uv[1];
        a[0].z = uv[2];
        a[0].w = uv[3];
        a[1].x = uv[4];
        a[1].y = uv[5];
        a[1].z = param;
        a[1].w = bk_bits_float((ref == BK_NONE ? BK_ALPHA_NO_TEX : ref) | (uint32_t)mt->alpha_mode << 28);
        p->tri_alpha[t] = ++p->alpha_count;
    }
    return 0;
}

int bk_tex_pool_build(const bk_scene *s, bk_tex_pool *p, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    for (int i = 0; i < 256; ++i) p->srgb[i] = bk_srgb8_to_linear((uint8_t)i);
    size_t *offset = malloc(sizeof(size_t) * (s->image_count ? s->image_count : 1));
    if (!offset) return bk_fail(err, err_size, "out of memory for the scene's textures");
    int rc = build_images(s, p, offset, err, err_size);
    if (!rc) rc = build_recs(s, p, offset, err, err_size);
    free(offset);
    if (!rc) rc = build_alpha(s, p, err, err_size);
    if (rc) bk_tex_pool_free(p);
    return rc;
}

void bk_tex_pool_free(bk_tex_pool *p)
{
    free(p->recs);
    free(p->texels8);
    free(p->texelsf);
    free(p->mat_tex);
    free(p->tri_alpha);
    free(p->alpha);
    memset(p, 0, sizeof *p);
}

bk_tex_view bk_tex_pool_view(const bk_tex_pool *p)
{
    bk_tex_view v;
    memset(&v, 0, sizeof v);
    if (!p) return v;
    v.recs = p->recs;
    v.rec_count = p->rec_count;
    v.texels8 = p->texels8;
    v.texelsf = p->texelsf;
    v.texel8_count = p->texel8_count;
    v.texelf_count = p->texelf_count;
    v.srgb = p->srgb;
    return v;
}

uint32_t bk_tex_pool_map(const bk_tex_pool *p, uint32_t m, int k)
{
    return p && p->mat_tex && m < p->material_count ? p->mat_tex[BK_MAT_MAPS * (size_t)m + k] : BK_NONE;
}

uint64_t bk_tex_pool_bytes(const bk_tex_pool *p)
{
    return 4ull * p->texel8_count + sizeof(bk_f4) * (uint64_t)p->texelf_count + sizeof(bk_tex_rec) * p->rec_count +
           sizeof(bk_f4) * 2ull * p->alpha_count + sizeof p->srgb;
}

int bk_tex_pool_texel_stands(const bk_tex_pool *p, uint32_t t, float b1, float b2)
{
    if (!p->tri_alpha || t >= p->tri_count || !p->tri_alpha[t]) return 1;
    const bk_tex_view tv = bk_tex_pool_view(p);
    const bk_f4      *a = &p->alpha[2 * (size_t)(p->tri_alpha[t] - 1)];
    return bk_alpha_stands(&tv, a[0], a[1], b1, b2, -1.0f);
}

/* Map k of material m on triangle t at (b1, b2): its texel's rgb, or 1 1 1 and *has 0 where the
 * material has no such map that loaded. */
static void map_texel(const bk_tex_pool *p, const bk_tex_view *tv, const bk_scene *s, uint32_t t, uint32_t m, int k,
                      float b1, float b2, float c[3], int *has)
{
    uint32_t rec = bk_tex_pool_map(p, m, k);
    *has = rec != BK_NONE;
    c[0] = c[1] = c[2] = 1.0f;
    if (rec == BK_NONE) return;
    float uv[6];
    bk_scene_tri_uv(s, t, uv);
    bk_f4 uv01, uv2;
    uv01.x = uv[0], uv01.y = uv[1], uv01.z = uv[2], uv01.w = uv[3];
    uv2.x = uv[4], uv2.y = uv[5], uv2.z = 0, uv2.w = 0;
    float u, v;
    bk_uv_at(uv01, uv2, b1, b2, &u, &v);
    bk_f4 x = bk_tex_sample(tv, rec, u, v);
    c[0] = x.x, c[1] = x.y, c[2] = x.z;
}

void bk_tex_pool_surface(const bk_tex_pool *p, const bk_tex_view *tv, const bk_scene *s, uint32_t t, float b1, float b2,
                         float albedo[3], float emission[3])
{
    uint32_t m = s->tri_material ? s->tri_material[t] : BK_NONE;
    emission[0] = emission[1] = emission[2] = 0.0f;
    if (m >= s->material_count) { /* the default material (scene.h) */
        albedo[0] = albedo[1] = albedo[2] = 0.8f;
        return;
    }
    const bk_material *mt = &s->materials[m];
    float              c[3];
    int                has;
    map_texel(p, tv, s, t, m, BK_MAT_MAP_KD, b1, b2, c, &has);
    for (int k = 0; k < 3; ++k) albedo[k] = has && mt->kd_by_map ? c[k] : mt->kd[k] * c[k];
    if (mt->ke[0] > 0 || mt->ke[1] > 0 || mt->ke[2] > 0) {
        map_texel(p, tv, s, t, m, BK_MAT_MAP_KE, b1, b2, c, &has);
        for (int k = 0; k < 3; ++k) emission[k] = mt->ke[k] * c[k];
    }
}
