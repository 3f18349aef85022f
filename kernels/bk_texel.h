/* bk_texel.h - a lightmap texel made from its ref (pixel and triangle), shared by CPU and CUDA.
 *
 * Pipeline: atlas rasterization (src/atlas/raster.c) picks each texel's triangle -> here: the
 * triangle's corners in texel units, its edge functions, the point of it nearest the texel centre
 * and the texel (position, normal) at that point. The host's rasterizer and bk_texels_make call
 * these functions; a GPU that keeps its own texels (kernels/cuda/texels.cu) calls the same ones on
 * refs uploaded instead of whole texels, with the same double arithmetic (no FMA contraction on
 * either side), so both make the same bits.
 *
 * Usage (one texel; see bk_texel_make):
 *     bk_uvtri r; bk_uvtri_corners(uv + 6 * t, width, height, page * height, r.p); bk_uvtri_edges(&r);
 *     double w[3]; bk_uvtri_nearest(&r, x + 0.5, y + 0.5, w);
 *     bk_texel_fill(P0, P1, P2, N0, N1, N2, w, t, pixel, &texel);
 */
#ifndef BK_TEXEL_H
#define BK_TEXEL_H

#include <math.h>
#include "bk_bake.h"

/* A triangle in the atlas, in texel units, with its edge functions. */
typedef struct bk_uvtri {
    double p[3][2];          /* corners in texel units (x right, y down the stacked pages) */
    double a[3], b[3], c[3]; /* edge functions a x + b y + c, positive inside */
    int    flat;             /* 1: zero area in UV: edge 0 is its longest segment */
    int    point;            /* 1: all corners in one spot */
} bk_uvtri;

/* Corners of a triangle whose atlas UVs are uv[0..6) ([0,1]^2 of its page), on a page width x
 * height whose first row is ylo. */
BK_HD void bk_uvtri_corners(const float *uv, double width, double height, int ylo, double p[3][2])
{
    for (int k = 0; k < 3; ++k) {
        p[k][0] = uv[2 * k] * width;
        p[k][1] = uv[2 * k + 1] * height + ylo;
    }
}

/* The edge functions of r->p (flat and point too). */
BK_HD void bk_uvtri_edges(bk_uvtri *r)
{
    double lo0 = r->p[0][0], hi0 = r->p[0][0], lo1 = r->p[0][1], hi1 = r->p[0][1];
    for (int k = 1; k < 3; ++k) {
        lo0 = r->p[k][0] < lo0 ? r->p[k][0] : lo0;
        hi0 = r->p[k][0] > hi0 ? r->p[k][0] : hi0;
        lo1 = r->p[k][1] < lo1 ? r->p[k][1] : lo1;
        hi1 = r->p[k][1] > hi1 ? r->p[k][1] : hi1;
    }
    double a2 =
        (r->p[1][0] - r->p[0][0]) * (r->p[2][1] - r->p[0][1]) - (r->p[1][1] - r->p[0][1]) * (r->p[2][0] - r->p[0][0]);
    double ext = (hi0 - lo0) + (hi1 - lo1);
    r->flat = !(fabs(a2) > 1e-12 * ext * ext) || !(fabs(a2) > 1e-18);
    r->point = 0;
    if (!r->flat) {
        double sgn = a2 > 0 ? 1.0 : -1.0;
        for (int i = 0; i < 3; ++i) {
            const double *P = r->p[i], *Q = r->p[(i + 1) % 3];
            r->a[i] = -(Q[1] - P[1]) * sgn;
            r->b[i] = (Q[0] - P[0]) * sgn;
            r->c[i] = -(r->a[i] * P[0] + r->b[i] * P[1]);
        }
    } else {
        int    best = 0;
        double bl = -1;
        for (int i = 0; i < 3; ++i) {
            const double *P = r->p[i], *Q = r->p[(i + 1) % 3];
            double        l = (Q[0] - P[0]) * (Q[0] - P[0]) + (Q[1] - P[1]) * (Q[1] - P[1]);
            if (l > bl) {
                bl = l;
                best = i;
            }
        }
        const double *P = r->p[best], *Q = r->p[(best + 1) % 3];
        r->a[0] = -(Q[1] - P[1]);
        r->b[0] = Q[0] - P[0];
        r->c[0] = -(r->a[0] * P[0] + r->b[0] * P[1]);
        r->point = !(bl > 0);
    }
}

/* The barycentric weights w of the point of r nearest (qx, qy); returns its squared distance
 * (0 inside). */
BK_HD double bk_uvtri_nearest(const bk_uvtri *r, double qx, double qy, double w[3])
{
    if (!r->flat) {
        double e[3];
        int    inside = 1;
        for (int i = 0; i < 3; ++i) {
            e[i] = r->a[i] * qx + r->b[i] * qy + r->c[i];
            if (e[i] < 0) inside = 0;
        }
        if (inside) {
            /* edge i runs from corner i to i+1: its function is the weight of the opposite corner */
            double sum = e[0] + e[1] + e[2];
            w[2] = e[0] / sum;
            w[0] = e[1] / sum;
            w[1] = e[2] / sum;
            return 0.0;
        }
    }
    double best = 1.0e300;
    w[0] = 1.0; /* (a NaN corner: no edge is nearer) */
    w[1] = w[2] = 0.0;
    for (int i = 0; i < 3; ++i) {
        const double *P = r->p[i], *Q = r->p[(i + 1) % 3];
        double        dx = Q[0] - P[0], dy = Q[1] - P[1], l = dx * dx + dy * dy;
        double        s = l > 0 ? ((qx - P[0]) * dx + (qy - P[1]) * dy) / l : 0.0;
        if (s < 0) s = 0;
        if (s > 1) s = 1;
        double px = P[0] + s * dx - qx, py = P[1] + s * dy - qy, d = px * px + py * py;
        if (d < best) {
            best = d;
            w[i] = 1.0 - s;
            w[(i + 1) % 3] = s;
            w[(i + 2) % 3] = 0.0;
        }
    }
    return best;
}

/* The texel at weights w of triangle t with corners P0..P2 (3 floats each) and vertex normals
 * N0..N2 (NULL: none; the geometric normal then, as for normals that cancel out). */
BK_HD void bk_texel_fill(const float *P0, const float *P1, const float *P2, const float *N0, const float *N1,
                         const float *N2, const double w[3], uint32_t t, uint32_t pixel, bk_texel *o)
{
    const float *Pc[3] = { P0, P1, P2 }, *Nc[3] = { N0, N1, N2 };
    double       P[3][3];
    for (int c = 0; c < 3; ++c)
        for (int d = 0; d < 3; ++d) P[c][d] = Pc[c][d];
    o->px = (float)(w[0] * P[0][0] + w[1] * P[1][0] + w[2] * P[2][0]);
    o->py = (float)(w[0] * P[0][1] + w[1] * P[1][1] + w[2] * P[2][1]);
    o->pz = (float)(w[0] * P[0][2] + w[1] * P[1][2] + w[2] * P[2][2]);
    double e1[3], e2[3], g[3], nrm[3];
    for (int d = 0; d < 3; ++d) {
        e1[d] = P[1][d] - P[0][d];
        e2[d] = P[2][d] - P[0][d];
    }
    g[0] = e1[1] * e2[2] - e1[2] * e2[1];
    g[1] = e1[2] * e2[0] - e1[0] * e2[2];
    g[2] = e1[0] * e2[1] - e1[1] * e2[0];
    double l = 0;
    if (N0) {
        for (int d = 0; d < 3; ++d) {
            nrm[d] = 0;
            for (int c = 0; c < 3; ++c) nrm[d] += w[c] * Nc[c][d];
        }
        l = sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
    }
    if (!(l > 1e-12)) { /* no vn, or vn that cancel out: the geometric normal */
        for (int d = 0; d < 3; ++d) nrm[d] = g[d];
        l = sqrt(nrm[0] * nrm[0] + nrm[1] * nrm[1] + nrm[2] * nrm[2]);
    }
    if (!(l > 0)) {
        nrm[0] = 0;
        nrm[1] = 0;
        nrm[2] = 1;
        l = 1;
    }
    o->nx = (float)(nrm[0] / l);
    o->ny = (float)(nrm[1] / l);
    o->nz = (float)(nrm[2] / l);
    o->tri = t;
    o->pixel = pixel;
}

/* What a device needs beside the bake's shading triangles (bk_bake_view.tris: their corners) to
 * make texels from refs: the atlas's UVs and pages and the vertex normals. Host arrays when handed
 * to a backend (backend.h: bake_refs); device copies inside it. */
typedef struct bk_texel_src {
    const float    *uv;       /* 6 per triangle: the atlas UVs of its corners (bk_atlas.uv) */
    const uint32_t *tri_page; /* per triangle: its page; NULL: all on page 0 */
    const float    *tri_n;    /* 9 per triangle: its corners' vertex normals; NULL: none has any; a
                                 triangle without them has NaN in its first */
    uint32_t tri_count;       /* triangles (the shading triangles': bk_bake_view.tri_count) */
    int      width, height;   /* a page's texels */
} bk_texel_src;

/* The texel of ref (pixel, t), the corners of t being tris[3 t .. 3 t + 2].xyz. */
BK_HD void bk_texel_make(const bk_texel_src *s, const bk_f4 *tris, uint32_t pixel, uint32_t t, bk_texel *o)
{
    bk_uvtri r;
    int      page = s->tri_page ? (int)s->tri_page[t] : 0;
    bk_uvtri_corners(s->uv + 6 * (size_t)t, s->width, s->height, page * s->height, r.p);
    bk_uvtri_edges(&r);
    double w[3];
    bk_uvtri_nearest(&r, (double)(pixel % (uint32_t)s->width) + 0.5, (double)(pixel / (uint32_t)s->width) + 0.5, w);
    const float *n = s->tri_n && s->tri_n[9 * (size_t)t] == s->tri_n[9 * (size_t)t] ? s->tri_n + 9 * (size_t)t : NULL;
    bk_texel_fill(&tris[3 * (size_t)t].x, &tris[3 * (size_t)t + 1].x, &tris[3 * (size_t)t + 2].x, n, n ? n + 3 : NULL,
                  n ? n + 6 : NULL, w, t, pixel, o);
}

#endif /* BK_TEXEL_H */
