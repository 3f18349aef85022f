/* gltf_read_scene.c - glTF 2.0 reader, part 3: the document -> bk_scene.
 *
 * Pipeline: io stage; gltf_read.c has parsed and checked the document, gltf_read_access.c
 * decodes accessors; this file walks the scene's nodes and emits triangles, materials, images
 * and cameras (scene.h; docs/formats.md "glTF 2.0", docs/materials.md).
 *
 *   scene: `scene`, else scenes[0], else (no scenes at all) every node that is no node's child,
 *     with a warning. Nodes: matrix, or translation x rotation x scale, composed from the root;
 *     a node reached twice (a glTF node has one parent) or its own ancestor is refused, as is a
 *     hierarchy deeper than GL_MAX_DEPTH. Y up, as the scene frame: no axis change.
 *   meshes: one object (tri_object, object_names) per node with a mesh, named by the node's name,
 *     else "node N". TRIANGLES, TRIANGLE_STRIP and TRIANGLE_FAN become triangles in the spec's
 *     vertex order; POINTS and LINES* are skipped with one note. A transform of negative
 *     determinant swaps each triangle's corners 1 and 2 (front faces stay front); normals go by
 *     the inverse transpose. Positions must be finite after the transform (else an error);
 *     normals that are not finite or zero, texture coordinates that are not finite, and
 *     attributes whose count is not POSITION's are dropped for that primitive (a warning).
 *     Indices must be below the vertex count (an error). TEXCOORD_0 -> texcoords, TEXCOORD_1 ->
 *     lm_texcoords, both stored v = 1 - v (as OBJ's vt). Morph targets and skins are ignored.
 *   materials: every materials[] entry in order; a primitive without one gets BK_NONE (the
 *     program's default material, as an OBJ face without usemtl). Images are decoded once each,
 *     when a material first uses them; an image that cannot be read is a warning (the factor is
 *     used), one that takes the textures past BK_TEX_MAX_BYTES an error.
 *   cameras: one per node with a camera, placed by it (it looks down its -Z, up +Y).
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "bk_material.h"
#include "gltf_read_internal.h"
#include "texture.h"
#include "util.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if BK_HAVE_GLTF

#define IMG_FAILED (BK_NONE - 1u)

/* A double as a float, out-of-range values made +-FLT_MAX (a plain cast of them is undefined). */
static float to_f(double d) { return d > FLT_MAX ? FLT_MAX : d < -FLT_MAX ? -FLT_MAX : (float)d; }

typedef struct gl_builder {
    size_t   cap_v, cap_t, cap_n, cap_lm, cap_obj, cap_cam;
    size_t   cap_tv, cap_tvt, cap_tvn, cap_tm, cap_to, cap_tl; /* per-triangle arrays, in uint32s */
    uint64_t bytes; /* of the scene's arrays so far */
    uint8_t *state; /* per node: 0 not seen, 1 on the path from the root, 2 done */
} gl_builder;

/* ---- growing the scene's arrays ----------------------------------------------------------------- */

static int grow(gl_ctx *c, gl_builder *b, void **p, size_t *cap, size_t need, size_t item)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    if (need >= BK_NONE / 3 || (b->bytes - *cap * item) + n * item > c->max_out) {
        n = need;
        if (need >= BK_NONE / 3 || (b->bytes - *cap * item) + n * item > c->max_out)
            return gl_fail(c, NULL, "the scene takes more than %llu bytes (%zu elements of one kind): refused",
                           (unsigned long long)c->max_out, need);
    }
    void *q = realloc(*p, n * item);
    if (!q) return gl_fail(c, NULL, "out of memory for %zu elements", need);
    b->bytes = b->bytes - *cap * item + n * item;
    *p = q;
    *cap = n;
    return 0;
}

/* ---- images and materials ---------------------------------------------------------------------- */

static uint64_t images_bytes(const bk_scene *s)
{
    uint64_t u = 0;
    for (uint32_t i = 0; i < s->image_count; ++i) u += (uint64_t)s->images[i].w * s->images[i].h * (s->images[i].rgbaf ? 16u : 4u);
    return u;
}

/* images[i] decoded into s->images (once): *out its index, BK_NONE when it could not be read. */
static int image_get(gl_ctx *c, uint32_t i, const char *where, uint32_t *out)
{
    *out = BK_NONE;
    if (c->image_map[i] == IMG_FAILED) return 0;
    if (c->image_map[i] != BK_NONE) {
        *out = c->image_map[i];
        return 0;
    }
    c->image_map[i] = IMG_FAILED;
    char         w[64], why[600], name[PATH_MAX + 64];
    const cJSON *o = c->images.it[i];
    const char  *uri;
    uint32_t     view;
    snprintf(w, sizeof w, "images[%u]", i);
    if (gl_str(c, o, "uri", w, &uri)) return -1;
    int r = gl_index(c, o, "bufferView", w, c->views.n, 0, &view);
    if (r < 0) return -1;
    bk_image *g = realloc(c->s->images, sizeof(bk_image) * ((size_t)c->s->image_count + 1));
    if (!g) return gl_fail(c, w, "out of memory");
    c->s->images = g;
    bk_image im;
    uint64_t budget = BK_TEX_MAX_BYTES - images_bytes(c->s);
    int      rc;
    snprintf(name, sizeof name, "%s:images[%u]", c->name, i);
    if (view != BK_NONE) {
        const uint8_t *d;
        uint64_t       len, st;
        if (gl_view_get(c, view, w, &d, &len, &st)) return -1;
        rc = bk_texture_decode_mem(d, (size_t)len, name, budget, &im, why, sizeof why);
        im.embedded = 1;
    } else if (uri && !strncmp(uri, "data:", 5)) {
        uint8_t *d = NULL;
        uint64_t len = 0;
        char    *save = c->err, e2[1024];
        size_t   save_n = c->err_size, nl = strlen(c->name);
        c->err = e2;
        c->err_size = sizeof e2;
        int ur = gl_uri_read(c, uri, w, BK_TEX_MAX_FILE, &d, &len);
        c->err = save;
        c->err_size = save_n;
        if (ur) { /* "NAME: images[i]: reason": the warning names them itself */
            const char *why2 = strncmp(e2, c->name, nl) || strncmp(e2 + nl, ": ", 2) ? e2 : e2 + nl + 2;
            gl_warn(c, GL_W_IMAGE, NULL, "%s; the material's factor is used", why2);
            return 0;
        }
        rc = bk_texture_decode_mem(d, (size_t)len, name, budget, &im, why, sizeof why);
        im.embedded = 1;
        free(d);
    } else if (uri) {
        char path[PATH_MAX + 256];
        if (gl_uri_path(c, uri, path, sizeof path, why, sizeof why)) {
            gl_warn(c, GL_W_IMAGE, w, "%s; the material's factor is used", why);
            return 0;
        }
        rc = bk_texture_decode(path, budget, &im, why, sizeof why);
    } else {
        gl_warn(c, GL_W_IMAGE, w, "neither uri nor bufferView; the material's factor is used");
        return 0;
    }
    if (rc == -2) return gl_fail(c, w, "%s", why);
    if (rc < 0) {
        gl_warn(c, GL_W_IMAGE, w, "%s%s%s; the material's factor is used", uri && strncmp(uri, "data:", 5) ? uri : "",
                uri && strncmp(uri, "data:", 5) ? ": " : "", why);
        return 0;
    }
    if (rc == 1) gl_warn(c, GL_W_IMAGE, w, "%s", why);
    c->image_map[i] = c->s->image_count;
    c->s->images[c->s->image_count++] = im;
    *out = c->image_map[i];
    return 0;
}

/* A textureInfo (index, texCoord, KHR_texture_transform) into ref. */
static int texture_ref(gl_ctx *c, const cJSON *info, const char *where, bk_tex_ref *ref)
{
    uint32_t     t, src, smp;
    uint64_t     set;
    const cJSON *ext, *tt = NULL;
    if (!cJSON_IsObject(info)) return gl_fail(c, where, "must be an object");
    if (gl_index(c, info, "index", where, c->textures.n, 1, &t) || gl_uint(c, info, "texCoord", where, 255, 0, &set) ||
        gl_obj(c, info, "extensions", where, &ext) || (ext && gl_obj(c, ext, "KHR_texture_transform", where, &tt)))
        return -1;
    char tw[48];
    snprintf(tw, sizeof tw, "textures[%u]", t);
    const cJSON *tex = c->textures.it[t];
    int          r = gl_index(c, tex, "source", tw, c->images.n, 0, &src);
    if (r < 0) return -1;
    int rs = gl_index(c, tex, "sampler", tw, c->samplers.n, 0, &smp);
    if (rs < 0) return -1;
    if (tt) {
        double off[2] = { 0, 0 }, sc[2] = { 1, 1 }, rot = 0;
        uint64_t tset;
        char     ww[200];
        snprintf(ww, sizeof ww, "%s.extensions.KHR_texture_transform", where);
        if (gl_nums(c, tt, "offset", ww, 2, off) < 0 || gl_nums(c, tt, "scale", ww, 2, sc) < 0 ||
            gl_num(c, tt, "rotation", ww, 0.0, &rot) || gl_uint(c, tt, "texCoord", ww, 255, set, &tset))
            return -1;
        if (rot != 0.0) gl_warn(c, GL_W_ROTATION, ww, "rotation is not supported: ignored (offset and scale are read)");
        set = tset;
        ref->scale[0] = to_f(sc[0]);
        ref->scale[1] = to_f(sc[1]);
        ref->offset[0] = to_f(off[0]);
        ref->offset[1] = to_f(1.0 - sc[1] - off[1]); /* the scene's v is 1 - glTF's */
    }
    if (set != 0) gl_warn(c, GL_W_TEXCOORD1, where, "texCoord %llu: textures are read with TEXCOORD_0", (unsigned long long)set);
    ref->uv_set = 0;
    if (rs == 0) {
        char     sw[48];
        uint64_t ws, wt;
        snprintf(sw, sizeof sw, "samplers[%u]", smp);
        if (gl_uint(c, c->samplers.it[smp], "wrapS", sw, 65535, 10497, &ws) ||
            gl_uint(c, c->samplers.it[smp], "wrapT", sw, 65535, 10497, &wt))
            return -1;
        ref->clamp = ws == 33071 && wt == 33071;
        if (ws == 33648 || wt == 33648) gl_warn(c, GL_W_MIRROR, sw, "MIRRORED_REPEAT is read as REPEAT");
    }
    if (r == 0) {
        if (image_get(c, src, where, &ref->image)) return -1;
        /* a file's image keeps its absolute path, as an MTL map's resolves (mesh writers name it) */
        char real[PATH_MAX];
        if (ref->image != BK_NONE && !c->s->images[ref->image].embedded &&
            realpath(c->s->images[ref->image].path, real) && strlen(real) < sizeof ref->path)
            snprintf(ref->path, sizeof ref->path, "%s", real);
    }
    return 0;
}

static float clamp01(double v) { return v < 0.0 ? 0.0f : v > 1.0 ? 1.0f : (float)v; }

/* Long: one field of the material after the other, as docs/materials.md lists them */
static int read_material(gl_ctx *c, uint32_t i, bk_material *m)
{
    char         w[48], ww[96];
    const cJSON *o = c->materials.it[i], *pbr, *ext, *es = NULL, *info;
    const char  *name, *mode;
    double       base[4] = { 1, 1, 1, 1 }, em[3] = { 0, 0, 0 }, strength = 1.0, cutoff;
    int          ds;
    bk_material_init(m);
    snprintf(w, sizeof w, "materials[%u]", i);
    if (gl_str(c, o, "name", w, &name) || gl_obj(c, o, "pbrMetallicRoughness", w, &pbr) ||
        gl_obj(c, o, "extensions", w, &ext) || gl_str(c, o, "alphaMode", w, &mode) ||
        gl_num(c, o, "alphaCutoff", w, 0.5, &cutoff) || gl_bool(c, o, "doubleSided", w, 0, &ds) ||
        gl_nums(c, o, "emissiveFactor", w, 3, em) < 0)
        return -1;
    if (ext && gl_obj(c, ext, "KHR_materials_emissive_strength", w, &es)) return -1;
    if (es && gl_num(c, es, "emissiveStrength", w, 1.0, &strength)) return -1;
    if (strength < 0) return gl_fail(c, w, "emissiveStrength %g is negative", strength);
    if (cutoff < 0) return gl_fail(c, w, "alphaCutoff %g is negative", cutoff);
    if (name) snprintf(m->name, sizeof m->name, "%s", name);
    else snprintf(m->name, sizeof m->name, "material %u", i);
    snprintf(ww, sizeof ww, "%s.pbrMetallicRoughness", w);
    if (pbr && gl_nums(c, pbr, "baseColorFactor", ww, 4, base) < 0) return -1;
    for (int k = 0; k < 3; ++k) {
        m->kd[k] = clamp01(base[k]);
        double e = em[k] * strength;
        m->ke[k] = e < 0 ? 0.0f : e > BK_KE_MAX ? BK_KE_MAX : (float)e;
    }
    m->alpha = clamp01(base[3]);
    m->alpha_cutoff = to_f(cutoff);
    m->double_sided = (uint8_t)ds;
    m->alpha_mode = BK_ALPHA_OPAQUE;
    if (mode) {
        if (!strcmp(mode, "MASK")) m->alpha_mode = BK_ALPHA_MASK;
        else if (!strcmp(mode, "BLEND")) m->alpha_mode = BK_ALPHA_BLEND;
        else if (strcmp(mode, "OPAQUE")) return gl_fail(c, w, "alphaMode '%.20s': OPAQUE, MASK or BLEND", mode);
    }
    if (pbr && (info = gl_get(pbr, "baseColorTexture")) != NULL) {
        snprintf(ww, sizeof ww, "%s.pbrMetallicRoughness.baseColorTexture", w);
        if (texture_ref(c, info, ww, &m->map_kd)) return -1;
        if (m->alpha_mode != BK_ALPHA_OPAQUE) {
            m->map_d = m->map_kd;
            m->map_d.channel = BK_TEX_CHANNEL_ALPHA;
        }
    }
    if ((info = gl_get(o, "emissiveTexture")) != NULL) {
        snprintf(ww, sizeof ww, "%s.emissiveTexture", w);
        if (texture_ref(c, info, ww, &m->map_ke)) return -1;
    }
    return 0;
}

/* ---- matrices --------------------------------------------------------------------------------- */

/* 4 x 4, column-major as glTF: m[col * 4 + row]. */
static void mat_mul(const double a[16], const double b[16], double r[16])
{
    for (int col = 0; col < 4; ++col)
        for (int row = 0; row < 4; ++row) {
            double s = 0;
            for (int k = 0; k < 4; ++k) s += a[k * 4 + row] * b[col * 4 + k];
            r[col * 4 + row] = s;
        }
}

static int local_matrix(gl_ctx *c, const cJSON *node, const char *w, double m[16])
{
    int r = gl_nums(c, node, "matrix", w, 16, m);
    if (r <= 0) return r;
    double t[3] = { 0, 0, 0 }, q[4] = { 0, 0, 0, 1 }, s[3] = { 1, 1, 1 };
    if (gl_nums(c, node, "translation", w, 3, t) < 0 || gl_nums(c, node, "rotation", w, 4, q) < 0 ||
        gl_nums(c, node, "scale", w, 3, s) < 0)
        return -1;
    double len = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(len > 0)) return gl_fail(c, w, "'rotation' is not a unit quaternion (length 0)");
    double x = q[0] / len, y = q[1] / len, z = q[2] / len, ww = q[3] / len;
    double rm[9] = { 1 - 2 * (y * y + z * z), 2 * (x * y + z * ww),     2 * (x * z - y * ww),
                    2 * (x * y - z * ww),     1 - 2 * (x * x + z * z), 2 * (y * z + x * ww),
                    2 * (x * z + y * ww),     2 * (y * z - x * ww),     1 - 2 * (x * x + y * y) }; /* columns */
    for (int col = 0; col < 3; ++col) {
        for (int row = 0; row < 3; ++row) m[col * 4 + row] = rm[col * 3 + row] * s[col];
        m[col * 4 + 3] = 0;
    }
    m[12] = t[0];
    m[13] = t[1];
    m[14] = t[2];
    m[15] = 1;
    return 0;
}

static int is_identity(const double m[16])
{
    for (int i = 0; i < 16; ++i)
        if (m[i] != (i % 5 == 0 ? 1.0 : 0.0)) return 0;
    return 1;
}

/* ---- primitives ------------------------------------------------------------------------------ */

typedef struct gl_prim {
    uint32_t  vcount;
    float    *pos, *nrm, *uv0, *uv1;
    uint32_t *idx;
    uint32_t  icount;
} gl_prim;

static void prim_free(gl_prim *p)
{
    free(p->pos);
    free(p->nrm);
    free(p->uv0);
    free(p->uv1);
    free(p->idx);
}

/* An optional attribute of comps components and POSITION's count; 1 when absent or dropped. */
static int attribute(gl_ctx *c, const cJSON *attrs, const char *key, const char *w, int comps, unsigned mask,
                     uint32_t vcount, float **out)
{
    uint32_t a;
    char     aw[200];
    snprintf(aw, sizeof aw, "%.160s.attributes.%.20s", w, key);
    int r = gl_index(c, attrs, key, aw, c->accessors.n, 0, &a);
    if (r) return r < 0 ? -1 : 1;
    gl_acc acc;
    if (gl_acc_open(c, a, aw, mask, &acc)) return -1;
    if (acc.count != vcount) {
        gl_warn(c, GL_W_COUNT_MISMATCH, aw, "accessor %u has %u elements, POSITION %u: the attribute is dropped", a,
                acc.count, vcount);
        return 1;
    }
    if (gl_acc_floats(c, &acc, aw, out)) return -1;
    for (size_t i = 0; i < (size_t)vcount * comps; ++i)
        if (!isfinite((*out)[i])) {
            gl_warn(c, comps == 3 ? GL_W_NORMALS : GL_W_TEXCOORD, aw, "accessor %u: element %zu is not finite: dropped", a,
                    i / comps);
            free(*out);
            *out = NULL;
            return 1;
        }
    return 0;
}

/* Long: the attributes, then the indices, each checked */
static int prim_read(gl_ctx *c, const cJSON *prim, const char *w, gl_prim *p, int *skip)
{
    const cJSON *attrs;
    uint32_t     pa, ia;
    memset(p, 0, sizeof *p);
    *skip = 0;
    if (gl_obj(c, prim, "attributes", w, &attrs)) return -1;
    if (!attrs) return gl_fail(c, w, "'attributes' is missing");
    char aw[200];
    snprintf(aw, sizeof aw, "%.160s.attributes.POSITION", w);
    int r = gl_index(c, attrs, "POSITION", aw, c->accessors.n, 0, &pa);
    if (r < 0) return -1;
    if (r) {
        gl_warn(c, GL_W_NOPOS, w, "no POSITION attribute: the primitive is skipped");
        *skip = 1;
        return 0;
    }
    gl_acc acc;
    if (gl_acc_open(c, pa, aw, 1u << 3, &acc) || gl_acc_floats(c, &acc, aw, &p->pos)) return -1;
    p->vcount = acc.count;
    for (size_t i = 0; i < 3 * (size_t)p->vcount; ++i)
        if (!isfinite(p->pos[i]))
            return gl_fail(c, aw, "accessor %u: vertex %zu is not finite (%g)", pa, i / 3, (double)p->pos[i]);
    if (attribute(c, attrs, "NORMAL", w, 3, 1u << 3, p->vcount, &p->nrm) < 0 ||
        attribute(c, attrs, "TEXCOORD_0", w, 2, 1u << 2, p->vcount, &p->uv0) < 0 ||
        attribute(c, attrs, "TEXCOORD_1", w, 2, 1u << 2, p->vcount, &p->uv1) < 0)
        return -1;
    char iw[200];
    snprintf(iw, sizeof iw, "%.160s.indices", w);
    r = gl_index(c, prim, "indices", iw, c->accessors.n, 0, &ia);
    if (r < 0) return -1;
    if (r == 0) {
        if (gl_acc_open(c, ia, iw, 1u << 1, &acc) || gl_acc_uints(c, &acc, iw, &p->idx)) return -1;
        p->icount = acc.count;
        for (uint32_t i = 0; i < p->icount; ++i)
            if (p->idx[i] >= p->vcount)
                return gl_fail(c, iw, "accessor %u: index %u (element %u) is not below the %u vertices of POSITION", ia,
                               p->idx[i], i, p->vcount);
    } else p->icount = p->vcount;
    return 0;
}

static uint32_t corner(const gl_prim *p, uint32_t i) { return p->idx ? p->idx[i] : i; }

/* Triangle t of a primitive of the mode (4, 5, 6) in the spec's vertex order. */
static void tri_corners(const gl_prim *p, int mode, uint32_t t, uint32_t v[3])
{
    if (mode == 4) {
        v[0] = corner(p, 3 * t);
        v[1] = corner(p, 3 * t + 1);
        v[2] = corner(p, 3 * t + 2);
    } else if (mode == 5) {
        v[0] = corner(p, t);
        v[1] = corner(p, t + 1 + t % 2);
        v[2] = corner(p, t + 2 - t % 2);
    } else {
        v[0] = corner(p, t + 1);
        v[1] = corner(p, t + 2);
        v[2] = corner(p, 0);
    }
}

/* Long: the vertices (transformed), then the triangles (corners swapped where mirrored) */
static int prim_emit(gl_ctx *c, gl_builder *b, const gl_prim *p, int mode, const double m[16], uint32_t material,
                     uint32_t object, const char *w)
{
    bk_scene *s = c->s;
    int       ident = is_identity(m);
    double    det = m[0] * (m[5] * m[10] - m[9] * m[6]) - m[4] * (m[1] * m[10] - m[9] * m[2]) +
                 m[8] * (m[1] * m[6] - m[5] * m[2]);
    int       flip = det < 0;
    uint32_t  ntri = mode == 4 ? p->icount / 3 : p->icount >= 3 ? p->icount - 2 : 0;
    uint32_t  v0 = s->vertex_count, t0 = s->texcoord_count, n0 = s->normal_count, l0 = s->lm_texcoord_count;
    int       use_n = p->nrm && (ident || det != 0.0);
    if ((uint64_t)v0 + p->vcount >= BK_NONE || (uint64_t)s->tri_count + ntri >= BK_NONE / 3)
        return gl_fail(c, w, "the scene has more than %u vertices or triangles", BK_NONE - 1);
    if (grow(c, b, (void **)&s->positions, &b->cap_v, 3 * ((size_t)v0 + p->vcount), sizeof(float))) return -1;
    for (uint32_t i = 0; i < p->vcount; ++i) {
        const float *q = p->pos + 3 * (size_t)i;
        float       *o = s->positions + 3 * ((size_t)v0 + i);
        if (ident) memcpy(o, q, 3 * sizeof(float));
        else
            for (int k = 0; k < 3; ++k) {
                double x = m[k] * q[0] + m[4 + k] * q[1] + m[8 + k] * q[2] + m[12 + k];
                if (!(fabs(x) <= FLT_MAX))
                    return gl_fail(c, w, "vertex %u is not finite after its node's transform", i);
                o[k] = (float)x;
            }
    }
    s->vertex_count += p->vcount;
    if (use_n) {
        /* the cofactor matrix is det x the inverse transpose; its sign is det's */
        double cf[9] = { m[5] * m[10] - m[6] * m[9], m[6] * m[8] - m[4] * m[10], m[4] * m[9] - m[5] * m[8],
                         m[2] * m[9] - m[1] * m[10], m[0] * m[10] - m[2] * m[8], m[1] * m[8] - m[0] * m[9],
                         m[1] * m[6] - m[2] * m[5],  m[2] * m[4] - m[0] * m[6], m[0] * m[5] - m[1] * m[4] };
        double sg = det < 0 ? -1.0 : 1.0;
        float *tmp = malloc(3 * sizeof(float) * p->vcount);
        if (!tmp) return gl_fail(c, w, "out of memory");
        for (uint32_t i = 0; i < p->vcount && use_n; ++i) {
            const float *q = p->nrm + 3 * (size_t)i;
            float       *o = tmp + 3 * (size_t)i;
            if (ident) memcpy(o, q, 3 * sizeof(float));
            else {
                double x = sg * (cf[0] * q[0] + cf[1] * q[1] + cf[2] * q[2]);
                double y = sg * (cf[3] * q[0] + cf[4] * q[1] + cf[5] * q[2]);
                double z = sg * (cf[6] * q[0] + cf[7] * q[1] + cf[8] * q[2]);
                double l = sqrt(x * x + y * y + z * z);
                o[0] = to_f(x / l);
                o[1] = to_f(y / l);
                o[2] = to_f(z / l);
            }
            if (!isfinite(o[0]) || !isfinite(o[1]) || !isfinite(o[2]) || (o[0] == 0 && o[1] == 0 && o[2] == 0)) {
                gl_warn(c, GL_W_NORMALS, w, "normal %u is zero or not finite: the primitive's normals are dropped", i);
                use_n = 0;
            }
        }
        if (use_n) {
            if (grow(c, b, (void **)&s->normals, &b->cap_n, 3 * ((size_t)n0 + p->vcount), sizeof(float))) {
                free(tmp);
                return -1;
            }
            memcpy(s->normals + 3 * (size_t)n0, tmp, 3 * sizeof(float) * p->vcount);
            s->normal_count += p->vcount;
        }
        free(tmp);
    }
    const float *uvs[2] = { p->uv0, p->uv1 };
    float      **dst[2] = { &s->texcoords, &s->lm_texcoords };
    uint32_t    *cnt[2] = { &s->texcoord_count, &s->lm_texcoord_count };
    size_t      *cap[2] = { &b->cap_t, &b->cap_lm };
    for (int k = 0; k < 2; ++k) {
        if (!uvs[k]) continue;
        if (grow(c, b, (void **)dst[k], cap[k], 2 * ((size_t)*cnt[k] + p->vcount), sizeof(float))) return -1;
        float *o = *dst[k] + 2 * (size_t)*cnt[k];
        for (uint32_t i = 0; i < p->vcount; ++i) {
            o[2 * i] = uvs[k][2 * i];
            o[2 * i + 1] = 1.0f - uvs[k][2 * i + 1];
        }
        *cnt[k] += p->vcount;
    }
    if (!ntri) return 0;
    size_t T0 = s->tri_count, need = T0 + ntri;
    if (grow(c, b, (void **)&s->tri_v, &b->cap_tv, 3 * need, sizeof(uint32_t)) ||
        grow(c, b, (void **)&s->tri_vt, &b->cap_tvt, 3 * need, sizeof(uint32_t)) ||
        grow(c, b, (void **)&s->tri_vn, &b->cap_tvn, 3 * need, sizeof(uint32_t)) ||
        grow(c, b, (void **)&s->tri_material, &b->cap_tm, need, sizeof(uint32_t)) ||
        grow(c, b, (void **)&s->tri_object, &b->cap_to, need, sizeof(uint32_t)))
        return -1;
    if (p->uv1 || s->tri_lmvt) {
        int fresh = !s->tri_lmvt;
        if (grow(c, b, (void **)&s->tri_lmvt, &b->cap_tl, 3 * need, sizeof(uint32_t))) return -1;
        if (fresh) memset(s->tri_lmvt, 0xFF, sizeof(uint32_t) * 3 * T0);
    }
    for (uint32_t t = 0; t < ntri; ++t) {
        uint32_t v[3];
        tri_corners(p, mode, t, v);
        if (flip) {
            uint32_t x = v[1];
            v[1] = v[2];
            v[2] = x;
        }
        size_t at = 3 * (T0 + t);
        for (int k = 0; k < 3; ++k) {
            s->tri_v[at + k] = v0 + v[k];
            s->tri_vt[at + k] = p->uv0 ? t0 + v[k] : BK_NONE;
            s->tri_vn[at + k] = use_n ? n0 + v[k] : BK_NONE;
            if (s->tri_lmvt) s->tri_lmvt[at + k] = p->uv1 ? l0 + v[k] : BK_NONE;
        }
        s->tri_material[T0 + t] = material;
        s->tri_object[T0 + t] = object;
    }
    s->tri_count += ntri;
    return 0;
}

/* Every primitive of meshes[mi], placed by m, as one object named after node ni. */
static int mesh_emit(gl_ctx *c, gl_builder *b, uint32_t mi, uint32_t ni, const double m[16])
{
    char         w[160];
    const cJSON *prims, *e;
    uint32_t     np;
    const char  *nname;
    snprintf(w, sizeof w, "meshes[%u]", mi);
    if (gl_arr(c, c->meshes.it[mi], "primitives", w, &prims, &np)) return -1;
    if (!prims) return gl_fail(c, w, "'primitives' is missing");
    char nw[48];
    snprintf(nw, sizeof nw, "nodes[%u]", ni);
    if (gl_str(c, c->nodes.it[ni], "name", nw, &nname)) return -1;
    if (grow(c, b, (void **)&c->s->object_names, &b->cap_obj, (size_t)c->s->object_count + 1, sizeof(char *))) return -1;
    char name[256];
    if (nname) snprintf(name, sizeof name, "%s", nname);
    else snprintf(name, sizeof name, "node %u", ni);
    if (!(c->s->object_names[c->s->object_count] = strdup(name))) return gl_fail(c, nw, "out of memory");
    uint32_t object = c->s->object_count++;
    uint32_t k = 0;
    cJSON_ArrayForEach(e, prims)
    {
        char     pw[200];
        uint64_t mode;
        uint32_t mat;
        snprintf(pw, sizeof pw, "meshes[%u].primitives[%u]", mi, k++);
        if (!cJSON_IsObject(e)) return gl_fail(c, pw, "must be an object");
        if (gl_uint(c, e, "mode", pw, 6, 4, &mode)) return -1;
        if (gl_index(c, e, "material", pw, c->materials.n, 0, &mat) < 0) return -1;
        if (mode < 4) {
            gl_warn(c, GL_W_MODE, pw, "%s primitives are skipped: a lightmap needs triangles",
                    mode == 0 ? "POINTS" : "LINES, LINE_LOOP and LINE_STRIP");
            continue;
        }
        gl_prim p;
        int     skip, rc = prim_read(c, e, pw, &p, &skip);
        if (!rc && !skip) rc = prim_emit(c, b, &p, (int)mode, m, mat, object, pw);
        prim_free(&p);
        if (rc) return -1;
    }
    return 0;
}

/* ---- nodes and cameras ----------------------------------------------------------------------- */

static void normalize3(double v[3])
{
    double l = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (l > 0)
        for (int k = 0; k < 3; ++k) v[k] /= l;
}

static int camera_emit(gl_ctx *c, gl_builder *b, uint32_t ci, uint32_t ni, const double m[16])
{
    char         w[48];
    const cJSON *cam = c->cameras.it[ci], *per, *ort;
    const char  *type, *name;
    snprintf(w, sizeof w, "cameras[%u]", ci);
    if (gl_str(c, cam, "type", w, &type) || gl_str(c, cam, "name", w, &name) ||
        gl_obj(c, cam, "perspective", w, &per) || gl_obj(c, cam, "orthographic", w, &ort))
        return -1;
    bk_scene_camera k;
    memset(&k, 0, sizeof k);
    double yfov = 0, aspect = 0, ymag = 0;
    if (per) {
        if (gl_num(c, per, "yfov", w, 0.8, &yfov) || gl_num(c, per, "aspectRatio", w, 0.0, &aspect)) return -1;
        if (!(yfov > 0 && yfov < 3.14159)) return gl_fail(c, w, "yfov %g: must be in (0, pi)", yfov);
    } else if (ort) {
        if (gl_num(c, ort, "ymag", w, 1.0, &ymag)) return -1;
        if (!(ymag != 0)) return gl_fail(c, w, "ymag must not be 0");
    } else return gl_fail(c, w, "neither 'perspective' nor 'orthographic'");
    const char *nname = NULL;
    char        nw[48];
    snprintf(nw, sizeof nw, "nodes[%u]", ni);
    if (gl_str(c, c->nodes.it[ni], "name", nw, &nname)) return -1;
    snprintf(k.name, sizeof k.name, "%s", name ? name : nname ? nname : nw);
    double d[3] = { -m[8], -m[9], -m[10] }, u[3] = { m[4], m[5], m[6] };
    normalize3(d);
    double du = d[0] * u[0] + d[1] * u[1] + d[2] * u[2];
    for (int j = 0; j < 3; ++j) u[j] -= du * d[j];
    normalize3(u);
    for (int j = 0; j < 3; ++j) {
        k.pos[j] = to_f(m[12 + j]);
        k.dir[j] = to_f(d[j]);
        k.up[j] = to_f(u[j]);
    }
    for (int j = 0; j < 3; ++j)
        if (!isfinite(k.pos[j]) || !isfinite(k.dir[j]) || !isfinite(k.up[j])) return gl_fail(c, nw, "the camera's placement is not finite");
    k.yfov = (float)yfov;
    k.ymag = to_f(fabs(ymag));
    k.aspect = aspect > 0 ? to_f(aspect) : 0.0f;
    if (grow(c, b, (void **)&c->s->cameras, &b->cap_cam, (size_t)c->s->camera_count + 1, sizeof k)) return -1;
    c->s->cameras[c->s->camera_count++] = k;
    return 0;
}

static int walk(gl_ctx *c, gl_builder *b, uint32_t ni, const double parent[16], int depth)
{
    char w[48];
    snprintf(w, sizeof w, "nodes[%u]", ni);
    if (b->state[ni] == 1) return gl_fail(c, w, "is its own ancestor (the node hierarchy has a cycle)");
    if (b->state[ni] == 2) return gl_fail(c, w, "is reached twice (a node has at most one parent)");
    if (depth > GL_MAX_DEPTH) return gl_fail(c, w, "the node hierarchy is deeper than %d", GL_MAX_DEPTH);
    b->state[ni] = 1;
    const cJSON *node = c->nodes.it[ni], *kids, *e;
    double       local[16], m[16];
    uint32_t     mesh, cam, nk;
    if (local_matrix(c, node, w, local)) return -1;
    mat_mul(parent, local, m);
    int rm = gl_index(c, node, "mesh", w, c->meshes.n, 0, &mesh), rc = gl_index(c, node, "camera", w, c->cameras.n, 0, &cam);
    if (rm < 0 || rc < 0 || gl_arr(c, node, "children", w, &kids, &nk)) return -1;
    if (rm == 0 && mesh_emit(c, b, mesh, ni, m)) return -1;
    if (rc == 0 && camera_emit(c, b, cam, ni, m)) return -1;
    int k = 0;
    cJSON_ArrayForEach(e, kids)
    {
        char kw[96];
        snprintf(kw, sizeof kw, "%s.children[%d]", w, k++);
        if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < c->nodes.n) ||
            e->valuedouble != (double)(uint32_t)e->valuedouble)
            return gl_fail(c, kw, "must be the index of a node (there are %u)", c->nodes.n);
        if (walk(c, b, (uint32_t)e->valuedouble, m, depth + 1)) return -1;
    }
    b->state[ni] = 2;
    return 0;
}

/* The roots to walk: the scene's nodes, or (no scenes) every node no node names as a child. */
static int walk_roots(gl_ctx *c, gl_builder *b)
{
    static const double id[16] = { 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1 };
    uint32_t            si;
    int                 r = gl_index(c, c->root, "scene", "scene", c->scenes.n, 0, &si);
    if (r < 0) return -1;
    if (r && c->scenes.n) si = 0;
    if (si != BK_NONE) {
        char         w[48];
        const cJSON *nodes, *e;
        uint32_t     n;
        snprintf(w, sizeof w, "scenes[%u]", si);
        if (gl_arr(c, c->scenes.it[si], "nodes", w, &nodes, &n)) return -1;
        int k = 0;
        cJSON_ArrayForEach(e, nodes)
        {
            char kw[96];
            snprintf(kw, sizeof kw, "%s.nodes[%d]", w, k++);
            if (!cJSON_IsNumber(e) || !(e->valuedouble >= 0 && e->valuedouble < c->nodes.n) ||
                e->valuedouble != (double)(uint32_t)e->valuedouble)
                return gl_fail(c, kw, "must be the index of a node (there are %u)", c->nodes.n);
            if (walk(c, b, (uint32_t)e->valuedouble, id, 0)) return -1;
        }
        return 0;
    }
    if (!c->nodes.n) return 0;
    uint8_t *child = calloc(c->nodes.n, 1);
    if (!child) return gl_fail(c, NULL, "out of memory");
    for (uint32_t i = 0; i < c->nodes.n; ++i) {
        const cJSON *kids = gl_get(c->nodes.it[i], "children"), *e;
        if (!cJSON_IsArray(kids)) continue;
        cJSON_ArrayForEach(e, kids) if (cJSON_IsNumber(e) && e->valuedouble >= 0 && e->valuedouble < c->nodes.n)
            child[(uint32_t)e->valuedouble] = 1;
    }
    gl_warn(c, GL_W_NOSCENE, NULL, "no scenes: every root node is read");
    int rc = 0;
    for (uint32_t i = 0; i < c->nodes.n && !rc; ++i)
        if (!child[i] && b->state[i] == 0) rc = walk(c, b, i, id, 0);
    if (!rc)
        for (uint32_t i = 0; i < c->nodes.n && !rc; ++i)
            if (b->state[i] == 0) rc = gl_fail(c, NULL, "nodes[%u] is its own ancestor (the node hierarchy has a cycle)", i);
    free(child);
    return rc;
}

int gl_build_scene(gl_ctx *c)
{
    bk_scene  *s = c->s;
    gl_builder b;
    memset(&b, 0, sizeof b);
    if (c->materials.n) {
        if (!(s->materials = calloc(c->materials.n, sizeof(bk_material)))) return gl_fail(c, NULL, "out of memory");
        for (uint32_t i = 0; i < c->materials.n; ++i) {
            if (read_material(c, i, &s->materials[i])) return -1;
            s->material_count = i + 1;
        }
    }
    if (c->nodes.n && !(b.state = calloc(c->nodes.n, 1))) return gl_fail(c, NULL, "out of memory");
    int rc = walk_roots(c, &b);
    free(b.state);
    if (rc) return -1;
    if (!s->tri_count)
        return gl_fail(c, NULL, "no triangles (%u vertices, %u objects): a scene needs triangles", s->vertex_count,
                       s->object_count);
    return 0;
}

#endif /* BK_HAVE_GLTF */
