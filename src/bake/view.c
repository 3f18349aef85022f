/* view.c - a preview of a baked scene (view.h): camera rays made here, traced by the backend,
 * shaded here with the albedo and the lightmap through the atlas's UVs.
 *
 * Pipeline: bake stage, above the backends (it traces through one) and the atlas; below the
 * commands (src/cmd/cmd_view.c: `baker view`, and `baker --preview`).
 */
#include "view.h"
#include "bk_texel.h"
#include "bk_material.h"
#include "material.h"
#include "pool.h"
#include "util.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_NAME_(N, S, D)  S,
#define SHOW_ABOUT_(N, S, D) D,
static const char *const show_names[BK_VIEW_SHOW_COUNT] = { BK_VIEW_SHOWS(SHOW_NAME_) };
static const char *const show_about[BK_VIEW_SHOW_COUNT] = { BK_VIEW_SHOWS(SHOW_ABOUT_) };
#undef SHOW_NAME_
#undef SHOW_ABOUT_

void bk_view_opts_default(bk_view_opts *o)
{
    memset(o, 0, sizeof *o);
    o->width = 960;
    o->height = 540;
    o->fov_deg = 50.0f;
    o->show = BK_VIEW_LIT;
}

const char *bk_view_show_name(int show) { return show >= 0 && show < BK_VIEW_SHOW_COUNT ? show_names[show] : "?"; }

const char *bk_view_show_about(int show) { return show >= 0 && show < BK_VIEW_SHOW_COUNT ? show_about[show] : ""; }

int bk_view_show_parse(const char *s)
{
    for (int k = 0; k < BK_VIEW_SHOW_COUNT; ++k)
        if (!strcmp(s, show_names[k])) return k;
    return -1;
}

const char *bk_view_show_names(char *buf, size_t size, const char *sep)
{
    size_t len = 0;
    buf[0] = 0;
    for (int k = 0; k < BK_VIEW_SHOW_COUNT && len < size; ++k) {
        int n = snprintf(buf + len, size - len, "%s%s", k ? sep : "", show_names[k]);
        if (n < 0) break;
        len += (size_t)n;
    }
    return buf;
}

void bk_view_default_camera(const float lo[3], const float hi[3], float eye[3], float target[3])
{
    static const float corner[3] = { 0.9f, 0.6f, 1.1f };
    for (int k = 0; k < 3; ++k) {
        target[k] = 0.5f * (lo[k] + hi[k]);
        eye[k] = target[k] + corner[k] * (hi[k] - lo[k]);
    }
}

/* The camera's frame: forward, right and up scaled to the image plane at distance 1. */
typedef struct view_cam {
    bk_vec3 eye, fwd, right, up;
    int     w, h;
} view_cam;

static bk_vec3 norm3(bk_vec3 a)
{
    float l = sqrtf(bk_dot3(a, a));
    return l > 0 ? bk_mul3(a, 1.0f / l) : a;
}

static int make_cam(const bk_view_opts *o, const float eye[3], const float target[3], view_cam *c, char *err,
                    size_t err_size)
{
    c->eye = bk_v3(eye[0], eye[1], eye[2]);
    bk_vec3 d = bk_sub3(bk_v3(target[0], target[1], target[2]), c->eye);
    if (!(bk_dot3(d, d) > 0) || !isfinite(bk_dot3(d, d)))
        return bk_fail(err, err_size, "the camera's eye and target must be two distinct finite points");
    c->fwd = norm3(d);
    /* y is up, unless the camera looks straight along it */
    bk_vec3 up = fabsf(c->fwd.y) > 0.999f ? bk_v3(0, 0, -1) : bk_v3(0, 1, 0);
    c->right = norm3(bk_cross3(c->fwd, up));
    c->up = bk_cross3(c->right, c->fwd);
    const float th = tanf(o->fov_deg * 0.5f * 3.14159265358979f / 180.0f);
    c->up = bk_mul3(c->up, th);
    c->right = bk_mul3(c->right, th * (float)o->width / (float)o->height);
    c->w = o->width;
    c->h = o->height;
    return 0;
}

/* What the pixel jobs share. */
typedef struct view_job {
    const view_cam         *cam;
    bk_ray                 *rays;
    const bk_hit           *hits;
    const bk_scene         *s;
    const bk_atlas         *at;
    const bk_view_lightmap *lm;
    const bk_tex_pool      *pool;
    bk_tex_view             tv;
    const bk_view_opts     *o;
    float                  *out;
} view_job;

static void rays_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const view_job *j = ctx;
    const view_cam *c = j->cam;
    for (size_t i = begin; i < end; ++i) {
        const int   x = (int)(i % (size_t)c->w), y = (int)(i / (size_t)c->w);
        const float sx = 2.0f * ((float)x + 0.5f) / (float)c->w - 1.0f;
        const float sy = 1.0f - 2.0f * ((float)y + 0.5f) / (float)c->h;
        bk_vec3     d = norm3(bk_add3(c->fwd, bk_add3(bk_mul3(c->right, sx), bk_mul3(c->up, sy))));
        bk_ray     *r = &j->rays[i];
        r->ox = c->eye.x;
        r->oy = c->eye.y;
        r->oz = c->eye.z;
        r->dx = d.x;
        r->dy = d.y;
        r->dz = d.z;
        r->tmin = 0.0f;
        r->tmax = FLT_MAX;
    }
}

static bk_vec3 vertex(const bk_scene *s, uint32_t t, int k)
{
    const float *p = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)t + k];
    return bk_v3(p[0], p[1], p[2]);
}

/* The lightmap at atlas (u, v) of page p: bilinear between texel centres, clamped to the page. */
static bk_vec3 lightmap_at(const bk_view_lightmap *lm, const float *img, int page, float u, float v)
{
    float   fx = u * (float)lm->w - 0.5f, fy = v * (float)lm->h - 0.5f;
    float   x0f = floorf(fx), y0f = floorf(fy);
    float   ax = fx - x0f, ay = fy - y0f;
    int     x0 = (int)x0f, y0 = (int)y0f, x1 = x0 + 1, y1 = y0 + 1;
    int     xs[2] = { x0, x1 }, ys[2] = { y0, y1 };
    float   wx[2] = { 1.0f - ax, ax }, wy[2] = { 1.0f - ay, ay };
    bk_vec3 c = bk_v3(0, 0, 0);
    for (int b = 0; b < 2; ++b)
        for (int a = 0; a < 2; ++a) {
            int          x = xs[a] < 0 ? 0 : xs[a] >= lm->w ? lm->w - 1 : xs[a];
            int          y = ys[b] < 0 ? 0 : ys[b] >= lm->h ? lm->h - 1 : ys[b];
            const float *px = img + 3 * (((size_t)page * (size_t)lm->h + (size_t)y) * (size_t)lm->w + (size_t)x);
            float        wgt = wx[a] * wy[b];
            c = bk_add3(c, bk_mul3(bk_v3(px[0], px[1], px[2]), wgt));
        }
    return c;
}

/* Where ray r meets the plane of triangle p0 p1 p2 (the hit's t where that fails). The point is
 * found again here from the triangle, not from the backend's t, whose last bits may differ
 * between backends (the CUDA trace kernel contracts multiply-adds; the triangle is the same), so
 * that both give the same image. */
static bk_vec3 hit_point(const bk_ray *r, bk_vec3 p0, bk_vec3 p1, bk_vec3 p2, float t_hit)
{
    const double e1[3] = { (double)p1.x - p0.x, (double)p1.y - p0.y, (double)p1.z - p0.z };
    const double e2[3] = { (double)p2.x - p0.x, (double)p2.y - p0.y, (double)p2.z - p0.z };
    const double n[3] = { e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0] };
    const double w[3] = { (double)p0.x - r->ox, (double)p0.y - r->oy, (double)p0.z - r->oz };
    const double den = n[0] * r->dx + n[1] * r->dy + n[2] * r->dz;
    double       t = den != 0 ? (n[0] * w[0] + n[1] * w[1] + n[2] * w[2]) / den : (double)t_hit;
    if (!(t >= 0 && t < 1e30)) t = (double)t_hit;
    return bk_v3((float)(r->ox + t * r->dx), (float)(r->oy + t * r->dy), (float)(r->oz + t * r->dz));
}

/* The normal at y of a surface of unit normal n under bumps `period` apart: the gradient of the
 * world's height field (sx sy + sy sz + sz sx) / 2k, s_a = sin(k a + phase_a), taken along the
 * surface (so curved surfaces get the bumps flat ones do, and planes of any axis get them too),
 * tilts n by up to about 45 degrees. */
static bk_vec3 bumped(bk_vec3 n, bk_vec3 y, float period)
{
    const float   k = 6.28318531f / period, ax = k * y.x + 0.7f, ay = k * y.y + 1.9f, az = k * y.z + 0.3f;
    const float   sx = sinf(ax), sy = sinf(ay), sz = sinf(az);
    const bk_vec3 g = bk_mul3(bk_v3(cosf(ax) * (sy + sz), cosf(ay) * (sx + sz), cosf(az) * (sx + sy)), 0.5f);
    return bk_normalize3(bk_sub3(n, bk_sub3(g, bk_mul3(n, bk_dot3(g, n)))));
}

static void shade_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const view_job *j = ctx;
    const int       show = j->o->show;
    for (size_t i = begin; i < end; ++i) {
        float         *px = j->out + 3 * i;
        const bk_hit  *h = &j->hits[i];
        const uint32_t t = h->tri;
        if (t == BK_NO_HIT || t >= j->s->tri_count) {
            px[0] = j->o->background[0];
            px[1] = j->o->background[1];
            px[2] = j->o->background[2];
            continue;
        }
        const bk_vec3 p0 = vertex(j->s, t, 0), p1 = vertex(j->s, t, 1), p2 = vertex(j->s, t, 2);
        bk_vec3       y = hit_point(&j->rays[i], p0, p1, p2, h->t);
        float         b1, b2;
        bk_tri_bary(p0, p1, p2, y, &b1, &b2);
        float alb[3], em[3];
        bk_tex_pool_surface(j->pool, &j->tv, j->s, t, b1, b2, alb, em);
        bk_vec3 c = bk_v3(1, 1, 1);
        if (show != BK_VIEW_LIGHTMAP) c = bk_v3(alb[0], alb[1], alb[2]);
        if (show != BK_VIEW_ALBEDO) {
            const float *uv = j->at->uv + 6 * (size_t)t;
            const float  b0 = 1.0f - b1 - b2;
            const float  u = b0 * uv[0] + b1 * uv[2] + b2 * uv[4], v = b0 * uv[1] + b1 * uv[3] + b2 * uv[5];
            const int    page = j->at->tri_page ? (int)j->at->tri_page[t] : 0;
            bk_vec3      l = lightmap_at(j->lm, j->lm->rgb, page, u, v);
            if (j->o->bumps > 0.0f && j->lm->band[0] && j->lm->band[1] && j->lm->band[2]) {
                /* the directional bands against the bumps' normal: l + dot(b, n' - n) per channel, n
                 * the texel's normal as the bake made it (the file's vn interpolated) */
                const float *P[3], *N[3] = { NULL, NULL, NULL };
                int          have_vn = j->s->tri_vn && j->s->normals;
                for (int c = 0; c < 3; ++c) {
                    P[c] = j->s->positions + 3 * (size_t)j->s->tri_v[3 * (size_t)t + c];
                    const uint32_t vn = have_vn ? j->s->tri_vn[3 * (size_t)t + c] : BK_NONE;
                    if (vn == BK_NONE || vn >= j->s->normal_count) have_vn = 0;
                    else N[c] = j->s->normals + 3 * (size_t)vn;
                }
                const double wb[3] = { b0, b1, b2 };
                bk_texel     tn;
                bk_texel_fill(P[0], P[1], P[2], have_vn ? N[0] : NULL, N[1], N[2], wb, t, 0, &tn);
                const bk_vec3 n = bk_v3(tn.nx, tn.ny, tn.nz);
                const bk_vec3 dn = bk_sub3(bumped(n, y, j->o->bumps), n);
                const bk_vec3 bx = lightmap_at(j->lm, j->lm->band[0], page, u, v);
                const bk_vec3 by = lightmap_at(j->lm, j->lm->band[1], page, u, v);
                const bk_vec3 bz = lightmap_at(j->lm, j->lm->band[2], page, u, v);
                l.x = bk_maxf(0.0f, l.x + bx.x * dn.x + by.x * dn.y + bz.x * dn.z);
                l.y = bk_maxf(0.0f, l.y + bx.y * dn.x + by.y * dn.y + bz.y * dn.z);
                l.z = bk_maxf(0.0f, l.z + bx.z * dn.x + by.z * dn.y + bz.z * dn.z);
            }
            c = bk_v3(c.x * l.x, c.y * l.y, c.z * l.z);
        }
        if (show == BK_VIEW_LIT) c = bk_add3(c, bk_v3(em[0], em[1], em[2]));
        px[0] = c.x;
        px[1] = c.y;
        px[2] = c.z;
    }
}

static int check_inputs(const bk_scene *s, const bk_atlas *at, const bk_view_lightmap *lm, const bk_view_opts *o,
                        char *err, size_t err_size)
{
    if (o->width < 1 || o->height < 1 || o->width > BK_VIEW_MAX_SIDE || o->height > BK_VIEW_MAX_SIDE)
        return bk_fail(err, err_size, "the view's size must be 1..%d pixels on each side, not %dx%d", BK_VIEW_MAX_SIDE,
                       o->width, o->height);
    if (!(o->fov_deg > 0 && o->fov_deg < 180))
        return bk_fail(err, err_size, "the field of view must be in (0, 180) degrees, not %g", (double)o->fov_deg);
    if (o->show < 0 || o->show >= BK_VIEW_SHOW_COUNT) return bk_fail(err, err_size, "unknown view mode %d", o->show);
    if (at->tri_count != s->tri_count)
        return bk_fail(err, err_size, "the atlas holds %u triangles, the scene %u", at->tri_count, s->tri_count);
    if (o->show != BK_VIEW_ALBEDO &&
        (!lm || !lm->rgb || lm->w != at->width || lm->h != at->height || lm->pages != at->page_count))
        return bk_fail(err, err_size,
                       "the lightmap is %dx%d (%d pages) but the atlas is %dx%d (%d pages): was it baked with other "
                       "atlas options (--size, --texels-per-unit, --padding, --uv, --pages)?",
                       lm ? lm->w : 0, lm ? lm->h : 0, lm ? lm->pages : 0, at->width, at->height, at->page_count);
    return 0;
}

/* The box of the vertices the triangles use. */
static void scene_box(const bk_scene *s, float lo[3], float hi[3])
{
    for (int k = 0; k < 3; ++k) lo[k] = FLT_MAX, hi[k] = -FLT_MAX;
    for (size_t i = 0; i < 3 * (size_t)s->tri_count; ++i) {
        const float *p = s->positions + 3 * (size_t)s->tri_v[i];
        for (int k = 0; k < 3; ++k) {
            lo[k] = fminf(lo[k], p[k]);
            hi[k] = fmaxf(hi[k], p[k]);
        }
    }
    if (!s->tri_count)
        for (int k = 0; k < 3; ++k) lo[k] = -1, hi[k] = 1;
}

int bk_view_render(bk_backend *be, const bk_trace_opts *t, const bk_scene *s, const bk_atlas *at,
                   const bk_view_lightmap *lm, const bk_view_opts *o, float *out, bk_view_result *r, char *err,
                   size_t err_size)
{
    const double t0 = bk_time_now();
    memset(r, 0, sizeof *r);
    if (check_inputs(s, at, lm, o, err, err_size)) return -1;
    float eye[3], target[3];
    if (o->camera_given) {
        memcpy(eye, o->eye, sizeof eye);
        memcpy(target, o->target, sizeof target);
    } else {
        float lo[3], hi[3];
        scene_box(s, lo, hi);
        bk_view_default_camera(lo, hi, eye, target);
    }
    memcpy(r->eye, eye, sizeof eye);
    memcpy(r->target, target, sizeof target);
    view_cam cam;
    if (make_cam(o, eye, target, &cam, err, err_size)) return -1;
    const size_t n = (size_t)o->width * (size_t)o->height;
    bk_tex_pool  pool;
    memset(&pool, 0, sizeof pool);
    view_job j;
    memset(&j, 0, sizeof j);
    j.rays = malloc(sizeof(bk_ray) * n);
    bk_hit *hits = malloc(sizeof(bk_hit) * n);
    int     rc = -1;
    if (!j.rays || !hits) {
        bk_fail(err, err_size, "out of memory for the view's %zu rays", n);
        goto done;
    }
    if (o->show != BK_VIEW_LIGHTMAP && bk_tex_pool_build(s, &pool, err, err_size)) goto done;
    j.cam = &cam;
    j.hits = hits;
    j.s = s;
    j.at = at;
    j.lm = lm;
    j.pool = &pool;
    j.tv = bk_tex_pool_view(&pool);
    j.o = o;
    j.out = out;
    bk_parallel_for(n, 4096, rays_fn, &j);
    bk_trace_opts   to = *t;
    bk_trace_totals tot;
    memset(&tot, 0, sizeof tot);
    to.any_hit = 0;
    to.ray_stats = NULL;
    const double tt = bk_time_now();
    if (be->i->trace(be, j.rays, hits, n, &to, &tot, err, err_size)) goto done;
    r->trace_seconds = bk_time_now() - tt;
    bk_parallel_for(n, 1024, shade_fn, &j);
    r->rays = n;
    for (size_t i = 0; i < n; ++i) r->hits += hits[i].tri != BK_NO_HIT;
    rc = 0;
done:
    bk_tex_pool_free(&pool);
    free(j.rays);
    free(hits);
    r->seconds = bk_time_now() - t0;
    return rc;
}
