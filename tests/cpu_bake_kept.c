/* cpu_bake_kept.c - a backend that keeps its own copy of the texels (caps().keeps_texels, what the
 * CUDA backend does) lets the host give the texels back once every device has begun
 * (bk_bake_run_opts.texels_kept -> bk_texels_compact) and go on with their refs alone: the bake's
 * image and coverage, its texel colours, the denoiser (its passes on the backend's copy, tx NULL)
 * and the fill must give the same bits as the CPU backend reading the whole texels in place.
 * Without a GPU: the keeping backend here is the CPU backend behind a wrapper that copies the
 * texels at bake_begin, alone and as a group of two (the hook must then run once, after both
 * began). The same when only the refs are rasterized (bk_atlas_rasterize_refs) and the driver
 * makes the texels a slice at a time (bk_bake_run_opts.make_texels, slices of 5000 texels) and
 * hands them to each device (bake_texels, which copies each slice only at its next call, as the
 * CUDA backend's copies may finish late: a driver that reused a slice too soon, or ran the bake
 * with a copy still pending, fails here): every texel handed over, the same bits; the texels
 * made from refs are the rasterizer's own, and a backend that reads the texels in place is
 * refused. The driver's slices of sums and made texels come from the first device's host_alloc
 * hook (tagged here) and all go back through its host_free. Also bk_texels_compact itself: refs
 * in texel order, the texels' pointer NULL. */
#include "bk_test.h"
#include "bk_test_bake.h"
#include "accel.h"
#include "atlas.h"
#include "bake.h"
#include "denoise.h"
#include "fill.h"
#include "raster.h"
#include "scene.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* ---- the keeping backend: the CPU backend baking from a copy of the texels of its own ------- */

typedef struct keep_ctx {
    bk_backend     *cpu;
    bk_texel       *copy; /* the last bake's texels, kept until the next bake or free */
    uint32_t        n;
    int             begins;
    uint64_t        made;      /* texels handed over by bake_texels */
    uint64_t        from_refs; /* texels made here from refs (bake_refs) */
    const bk_f4    *tris;      /* the bake's shading triangles (bake_begin's view) */
    const bk_texel *pend;      /* the last bake_texels call's slice, copied at the next */
    uint32_t        pend_first, pend_count;
    int             slices, slice_frees, bad_frees; /* host_alloc / host_free calls; frees of
                                                       pointers host_alloc did not give */
} keep_ctx;

#define K(be) ((keep_ctx *)(be)->ctx)

static const char *keep_name(bk_backend *be)
{
    (void)be;
    return "keep";
}
static int keep_supports(bk_backend *be, const bk_trace_opts *o, char *why, size_t ws)
{
    return K(be)->cpu->i->supports(K(be)->cpu, o, why, ws);
}
static int keep_upload(bk_backend *be, const bk_accel_view *v, char *err, size_t es)
{
    return K(be)->cpu->i->upload(K(be)->cpu, v, err, es);
}
static int keep_trace(bk_backend *be, const bk_ray *r, bk_hit *h, uint64_t n, const bk_trace_opts *o,
                      bk_trace_totals *t, char *err, size_t es)
{
    return K(be)->cpu->i->trace(K(be)->cpu, r, h, n, o, t, err, es);
}
static int keep_bake_begin(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, char *err,
                           size_t es)
{
    keep_ctx *k = K(be);
    free(k->copy);
    k->copy = malloc(sizeof(bk_texel) * (n ? n : 1));
    if (!k->copy) return bk_fail(err, es, "out of memory");
    if (texels) memcpy(k->copy, texels, sizeof(bk_texel) * n);
    else memset(k->copy, 0xEE, sizeof(bk_texel) * n); /* garbage until bake_texels fills it */
    k->n = n;
    k->tris = v->tris;
    k->pend_count = 0;
    k->begins++;
    return k->cpu->i->bake_begin(k->cpu, v, k->copy, n, err, es);
}
static int keep_bake_texels(bk_backend *be, uint32_t first, uint32_t count, const bk_texel *t, char *err, size_t es)
{
    keep_ctx *k = K(be);
    if (!k->copy || first > k->n || count > k->n - first)
        return bk_fail(err, es, "texels %u..%u of %u", first, first + count, k->n);
    /* as the CUDA backend may: the copy happens later, here at the next call (backend.h), so a
     * driver that changed a slice before then would hand over the wrong texels */
    if (k->pend_count) memcpy(k->copy + k->pend_first, k->pend, sizeof(bk_texel) * k->pend_count);
    k->pend = t;
    k->pend_first = first;
    k->pend_count = count;
    k->made += count;
    return 0;
}
/* What the CUDA backend does on its device (kernels/cuda/texels.cu): bk_texel_make per ref. */
static int keep_bake_refs(bk_backend *be, const bk_texel_src *src, uint32_t first, uint32_t count,
                          const bk_texel_ref *r, char *err, size_t es)
{
    keep_ctx *k = K(be);
    if (!k->copy || first > k->n || count > k->n - first)
        return bk_fail(err, es, "texels %u..%u of %u", first, first + count, k->n);
    for (uint32_t i = 0; i < count; ++i) bk_texel_make(src, k->tris, r[i].pixel, r[i].tri, &k->copy[first + i]);
    k->from_refs += count;
    return 0;
}
static int keep_bake_run(bk_backend *be, uint32_t b, uint32_t e, const bk_bake_params *p, const bk_trace_opts *o,
                         char *err, size_t es)
{
    if (K(be)->pend_count) return bk_fail(err, es, "a bake_run with a slice of texels not yet copied");
    return K(be)->cpu->i->bake_run(K(be)->cpu, b, e, p, o, err, es);
}
static int keep_bake_fetch(bk_backend *be, uint32_t b, uint32_t e, bk_f4 *out, float *sq, char *err, size_t es)
{
    return K(be)->cpu->i->bake_fetch(K(be)->cpu, b, e, out, sq, err, es);
}
static int keep_bake_fetch_ext(bk_backend *be, uint32_t b, uint32_t e, bk_f4 *out, char *err, size_t es)
{
    return K(be)->cpu->i->bake_fetch_ext(K(be)->cpu, b, e, out, err, es);
}
static int keep_bake_end(bk_backend *be, bk_f4 *out, float *sq, bk_trace_totals *t, char *err, size_t es)
{
    return K(be)->cpu->i->bake_end(K(be)->cpu, out, sq, t, err, es);
}
static void keep_memory(bk_backend *be, uint64_t *f, uint64_t *t)
{
    (void)be;
    *f = *t = 0;
}
static uint64_t keep_memory_peak(bk_backend *be)
{
    (void)be;
    return 0;
}
static int keep_kernel_info(bk_backend *be, const bk_trace_opts *o, bk_kernel_info *out, char *err, size_t es)
{
    return K(be)->cpu->i->kernel_info(K(be)->cpu, o, out, err, es);
}
static int keep_denoise(bk_backend *be, const bk_denoise_params *p, int passes, const bk_texel *tx, uint32_t first,
                        const uint32_t *chart, uint32_t chart_stride, bk_f4 *col, bk_f4 *band, uint32_t n,
                        uint64_t base, double *seconds, char *err, size_t es)
{
    keep_ctx *k = K(be);
    if (!tx) { /* the kept copy, as the CUDA backend does */
        if (!k->copy || first > k->n || n > k->n - first)
            return bk_fail(err, es, "texels %u..%u of %u kept", first, first + n, k->n);
        tx = k->copy + first;
    }
    return k->cpu->i->denoise(k->cpu, p, passes, tx, first, chart, chart_stride, col, band, n, base, seconds, err, es);
}
static void keep_free(bk_backend *be)
{
    bk_backend_free(K(be)->cpu);
    free(K(be)->copy);
    free(be->ctx);
    free(be);
}
static void keep_caps(bk_backend *be, bk_backend_caps *out)
{
    K(be)->cpu->i->caps(K(be)->cpu, out);
    out->keeps_texels = 1;
}
/* The bake's slices through the hooks (a GPU's page-locked memory): each behind a tag, so a
 * slice given back with free() breaks the heap, and one given back here that host_alloc did not
 * give is counted. */
#define KEEP_TAG 0x6b656570736c6963ull
static void *keep_host_alloc(bk_backend *be, size_t bytes)
{
    uint64_t *p = malloc(bytes + 2 * sizeof(uint64_t));
    if (!p) return NULL;
    p[0] = KEEP_TAG;
    K(be)->slices++;
    return p + 2;
}
static void keep_host_free(bk_backend *be, void *q)
{
    uint64_t *p = (uint64_t *)q - 2;
    if (p[0] != KEEP_TAG) {
        K(be)->bad_frees++;
        return;
    }
    p[0] = 0;
    K(be)->slice_frees++;
    free(p);
}
static const struct bk_backend_i keep_iface = {
    keep_name,       keep_supports,       keep_upload, keep_trace,       keep_bake_begin,  keep_bake_run,
    keep_bake_fetch, keep_bake_end,       keep_memory, keep_memory_peak, keep_kernel_info, keep_denoise,
    keep_free,       keep_caps,           NULL,        keep_bake_texels, keep_bake_refs,   keep_host_alloc,
    keep_host_free,  keep_bake_fetch_ext, NULL
};

static bk_backend *keep_init(void)
{
    bk_backend *be = calloc(1, sizeof *be);
    keep_ctx   *k = calloc(1, sizeof *k);
    if (!be || !k || !(k->cpu = bk_backend_cpu_init())) {
        free(be);
        free(k);
        return NULL;
    }
    be->i = &keep_iface;
    be->ctx = k;
    return be;
}

/* ---- the hook ---------------------------------------------------------------------------- */

typedef struct hook_ctx {
    bk_texel     **tx;
    bk_texel_ref **refs;
    uint32_t       n;
    int            calls;
} hook_ctx;

static const bk_texel_ref *hook(void *ctx)
{
    hook_ctx *h = ctx;
    h->calls++;
    *h->refs = bk_texels_compact(h->tx, h->n);
    return *h->refs;
}

/* ---- one pipeline: bake (image or texel colours), denoise, image, fill -------------------- */

typedef struct outcome {
    float   *rgb; /* after the fill */
    uint8_t *cov;
    bk_f4   *col; /* texel colours after the denoiser (colour runs only) */
    uint32_t invalid;
    uint64_t dn_texels;
    int      hook_calls;
} outcome;

typedef struct make_ctx {
    const bk_scene     *s;
    const bk_atlas     *a;
    const bk_texel_ref *refs;
    int                 calls;
} make_ctx;

static void make(void *ctx, uint32_t first, uint32_t count, bk_texel *out)
{
    make_ctx *m = ctx;
    m->calls++;
    bk_texels_make(m->s, m->a, m->refs + first, count, out);
}

/* made: only the refs are rasterized, and the bake makes the texels a slice at a time (slices
 * of 5000 texels, so several); 2: the devices make them from the refs (texel_src, bake_refs);
 * else the whole texels, with the hook offered. */
static void pipeline(bk_backend *be, int made, int colours, const bk_scene *s, const bk_atlas *at, const bk_accel *a,
                     const bk_bake_data *d, const bk_bake_run_opts *o0, outcome *out)
{
    char err[1024];
    memset(out, 0, sizeof *out);
    bk_texel     *tx = NULL;
    bk_texel_ref *refs = NULL;
    uint32_t      n = 0;
    if (made) BK_EXPECTF(bk_atlas_rasterize_refs(s, at, &refs, &n, &out->cov, err, sizeof err) == 0, "%s", err);
    else BK_EXPECTF(bk_atlas_rasterize(s, at, &tx, &n, &out->cov, err, sizeof err) == 0, "%s", err);
    make_ctx mc;
    mc.s = s;
    mc.a = at;
    mc.refs = refs;
    mc.calls = 0;
    const size_t  npx = BK_ATLAS_PIXELS(at);
    bk_accel_view av = bk_accel_get_view(a);
    BK_EXPECTF(be->i->upload(be, &av, err, sizeof err) == 0, "%s", err);
    bk_bake_view     v = bk_bake_data_view(d, a);
    bk_bake_run_opts o = *o0;
    hook_ctx         hc;
    hc.tx = &tx;
    hc.refs = &refs;
    hc.n = n;
    hc.calls = 0;
    o.texels_kept = hook;
    o.texels_kept_ctx = &hc;
    bk_texel_src src;
    float       *tri_n = NULL;
    if (made) {
        o.make_texels = make;
        o.make_texels_ctx = &mc;
        o.texel_refs = refs;
        o.make_slice = 5000;
    }
    if (made == 2) {
        BK_EXPECT(bk_texel_src_make(s, at, &src, &tri_n) == 0);
        o.texel_src = &src;
    }
    out->rgb = calloc(3 * npx, sizeof(float));
    if (colours) {
        out->col = malloc(sizeof(bk_f4) * n);
        o.texel_col = out->col;
    }
    bk_bake_result res;
    BK_EXPECTF(bk_bake_texels(be, &v, tx, n, at->width, at->height * at->page_count, &o, colours ? NULL : out->rgb,
                              out->cov, &res, err, sizeof err) == 0,
               "%s", err);
    out->invalid = res.invalid;
    out->hook_calls = hc.calls;
    bk_backend_caps caps;
    be->i->caps(be, &caps);
    free(tri_n);
    if (made == 2)
        BK_EXPECTF(hc.calls == 0 && mc.calls == 0, "made on the device: hook called %d times, %d slices made", hc.calls,
                   mc.calls);
    else if (made)
        BK_EXPECTF(hc.calls == 0 && mc.calls == (int)((n + 4999) / 5000),
                   "made: hook called %d times, %d slices made for %u texels", hc.calls, mc.calls, n);
    else if (caps.keeps_texels)
        BK_EXPECTF(hc.calls == 1 && !tx && refs, "hook called %d times; texels %p, refs %p", hc.calls, (void *)tx,
                   (void *)refs);
    else
        BK_EXPECTF(hc.calls == 0 && tx && !refs, "a backend that reads the texels in place: hook called %d times",
                   hc.calls);
    int refs_charts = 0; /* the denoiser given refs leaves charts in their tri fields */
    if (colours) {
        refs_charts = refs != NULL;
        bk_denoise_opts dno;
        bk_denoise_opts_default(&dno);
        bk_denoise_result     dres;
        const bk_denoise_view dv = { .coverage = out->cov,
                                     .texels = refs ? NULL : tx,
                                     .n = n,
                                     .tri_chart = at->tri_chart,
                                     .tri_count = at->tri_count,
                                     .w = at->width,
                                     .h = at->height,
                                     .pages = 1,
                                     .texel_world = o.params.texel_world };
        BK_EXPECTF(bk_denoise_texel_colours(be, out->col, refs, &dv, &dno, &dres, err, sizeof err) == 0, "%s", err);
        out->dn_texels = dres.texels;
        /* every ref's tri field now holds its triangle's chart, those left out for coverage too */
        if (refs) {
            bk_texel_ref *fresh = NULL;
            uint32_t      nf = 0;
            BK_EXPECTF(bk_atlas_rasterize_refs(s, at, &fresh, &nf, NULL, err, sizeof err) == 0 && nf == n, "%s", err);
            uint32_t bad = 0;
            for (uint32_t i = 0; fresh && i < n; ++i)
                bad += refs[i].pixel != fresh[i].pixel || refs[i].tri != at->tri_chart[fresh[i].tri];
            BK_EXPECTF(bad == 0, "%u refs hold another chart than their triangle's after the denoiser", bad);
            free(fresh);
        }
    }
    if (!refs) refs = bk_texels_compact(&tx, n);
    if (colours)
        for (uint32_t i = 0; i < n; ++i) {
            size_t px = refs[i].pixel;
            out->rgb[3 * px] = out->col[i].x;
            out->rgb[3 * px + 1] = out->col[i].y;
            out->rgb[3 * px + 2] = out->col[i].z;
        }
    /* made: the fill that gives the refs back once its chart map is made (what baker runs) */
    if (made) {
        BK_EXPECTF(bk_fill_hidden_refs(out->rgb, out->cov, &refs, n, refs_charts ? NULL : at->tri_chart, at->width,
                                       at->height, at->page_count, NULL, err, sizeof err) == 0,
                   "%s", err);
        BK_EXPECT(refs == NULL);
    } else {
        BK_EXPECTF(bk_fill_hidden_texels(out->rgb, out->cov, refs, n, refs_charts ? NULL : at->tri_chart, at->width,
                                         at->height, at->page_count, NULL, err, sizeof err) == 0,
                   "%s", err);
    }
    free(refs);
    free(tx);
}

static void outcome_free(outcome *o)
{
    free(o->rgb);
    free(o->cov);
    free(o->col);
}

static void check_compact(void)
{
    enum { N = 1000 };
    bk_texel *tx = malloc(sizeof(bk_texel) * N);
    for (uint32_t i = 0; i < N; ++i) {
        tx[i].px = (float)i;
        tx[i].py = -1.0f;
        tx[i].pz = 2.0f;
        tx[i].nx = 0.0f;
        tx[i].ny = 1.0f;
        tx[i].nz = 0.0f;
        tx[i].tri = 3 * i + 1;
        tx[i].pixel = 7 * i + 5;
    }
    bk_texel_ref *r = bk_texels_compact(&tx, N);
    BK_EXPECT(tx == NULL && r != NULL);
    for (uint32_t i = 0; r && i < N; ++i)
        BK_EXPECTF(r[i].pixel == 7 * i + 5 && r[i].tri == 3 * i + 1, "ref %u: pixel %u tri %u", i, r[i].pixel,
                   r[i].tri);
    free(r);
    bk_texel *none = NULL;
    BK_EXPECT(bk_texels_compact(&none, 0) == NULL);
}

int main(void)
{
    check_compact();

    char     err[1024];
    bk_scene s;
    bk_accel a;
    bk_atlas at;
    bk_test_cornell_atlas(&s, &a, &at);
    bk_bake_data d;
    BK_EXPECTF(bk_bake_data_build(&s, NULL, 0, &d, err, sizeof err) == 0, "%s", err);
    if (bk_test_failures) BK_TEST_DONE();

    bk_bake_run_opts o;
    bk_test_bake_opts(&o);
    o.max_launch_ms = 5;

    const size_t npx = BK_ATLAS_PIXELS(&at);
    /* the refs and the texels made from them are the rasterizer's texels, bit for bit */
    {
        bk_texel     *tx = NULL, *mk = NULL;
        bk_texel_ref *refs = NULL;
        uint8_t      *c1 = NULL, *c2 = NULL;
        uint32_t      n1 = 0, n2 = 0;
        BK_EXPECTF(bk_atlas_rasterize(&s, &at, &tx, &n1, &c1, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(bk_atlas_rasterize_refs(&s, &at, &refs, &n2, &c2, err, sizeof err) == 0, "%s", err);
        BK_EXPECTF(n1 == n2 && n1 > 1000, "%u texels, %u refs", n1, n2);
        BK_EXPECT(memcmp(c1, c2, npx) == 0);
        mk = malloc(sizeof(bk_texel) * n2);
        bk_texels_make(&s, &at, refs, n2, mk);
        BK_EXPECT(n1 != n2 || memcmp(tx, mk, sizeof(bk_texel) * n1) == 0);
        /* the driver refuses to make texels for a backend that reads them in place */
        bk_backend   *cpu = bk_backend_cpu_init();
        bk_accel_view av = bk_accel_get_view(&a);
        BK_EXPECT(cpu->i->upload(cpu, &av, err, sizeof err) == 0);
        bk_bake_view v = bk_bake_data_view(&d, &a);
        make_ctx     mc;
        mc.s = &s;
        mc.a = &at;
        mc.refs = refs;
        mc.calls = 0;
        bk_bake_run_opts om = o;
        om.make_texels = make;
        om.make_texels_ctx = &mc;
        om.texel_refs = refs;
        float         *rgb = malloc(sizeof(float) * 3 * npx);
        bk_bake_result res;
        BK_EXPECT(bk_bake_texels(cpu, &v, NULL, n2, at.width, at.height, &om, rgb, c2, &res, err, sizeof err) != 0 &&
                  mc.calls == 0);
        bk_backend_free(cpu);
        free(rgb);
        free(tx);
        free(mk);
        free(refs);
        free(c1);
        free(c2);
    }
    for (int colours = 0; colours < 2; ++colours) {
        /* the reference: the CPU backend, whole texels throughout */
        bk_backend *cpu = bk_backend_cpu_init();
        outcome     ref;
        pipeline(cpu, 0, colours, &s, &at, &a, &d, &o, &ref); /* the hook is offered, and not taken */
        BK_EXPECTF(ref.invalid > 0, "no texel inside geometry: the fill would not be tested");
        if (colours) BK_EXPECTF(ref.dn_texels > 0, "the denoiser filtered nothing");
        bk_backend_free(cpu);
        for (int run = 0; run < 6; ++run) {
            const int   members = 1 + run % 2, made = run / 2;
            bk_backend *be = keep_init();
            if (members == 2) {
                bk_backend *m[2] = { be, keep_init() };
                be = bk_backend_group(m, 2);
            }
            BK_EXPECT(be != NULL);
            if (!be) continue;
            outcome got;
            pipeline(be, made, colours, &s, &at, &a, &d, &o, &got);
            BK_EXPECTF(got.invalid == ref.invalid,
                       "%s, %d device(s)%s: %u texels inside geometry, %u with whole texels",
                       colours ? "colours" : "image", members, made ? ", made" : "", got.invalid, ref.invalid);
            BK_EXPECTF(memcmp(got.cov, ref.cov, npx) == 0, "%s, %d device(s)%s: coverage differs",
                       colours ? "colours" : "image", members, made ? ", made" : "");
            BK_EXPECTF(memcmp(got.rgb, ref.rgb, sizeof(float) * 3 * npx) == 0,
                       "%s, %d device(s)%s: the filled image differs", colours ? "colours" : "image", members,
                       made ? ", made" : "");
            if (colours)
                BK_EXPECTF(got.dn_texels == ref.dn_texels,
                           "%d device(s), made %d: %llu texels denoised, %llu with whole texels", members, made,
                           (unsigned long long)got.dn_texels, (unsigned long long)ref.dn_texels);
            for (int k = 0; k < members; ++k) {
                bk_backend *m = bk_backend_member(be, k);
                BK_EXPECTF(K(m)->begins == 1, "member %d began %d times", k, K(m)->begins);
                BK_EXPECTF(K(m)->made == (made == 1 ? K(m)->n : 0),
                           "member %d: %llu texels handed over by bake_texels, of %u", k,
                           (unsigned long long)K(m)->made, K(m)->n);
                BK_EXPECTF(K(m)->from_refs == (made == 2 ? K(m)->n : 0),
                           "member %d: %llu texels made from refs (bake_refs), of %u", k,
                           (unsigned long long)K(m)->from_refs, K(m)->n);
                /* the driver's slices (sums, and the made texels) come from the first device's hooks,
                 * and all go back there */
                BK_EXPECTF(k == 0 ? K(m)->slices >= 1 + colours + (made == 1) : K(m)->slices == 0,
                           "member %d: %d slices from its host_alloc", k, K(m)->slices);
                BK_EXPECTF(K(m)->slice_frees == K(m)->slices && K(m)->bad_frees == 0,
                           "member %d: %d slices, %d given back, %d foreign", k, K(m)->slices, K(m)->slice_frees,
                           K(m)->bad_frees);
            }
            outcome_free(&got);
            bk_backend_free(be);
        }
        outcome_free(&ref);
    }

    /* the denoiser refuses refs without a backend that kept the texels */
    {
        bk_texel_ref    r1 = { 0, 0 };
        bk_f4           c1 = { 1.0f, 1.0f, 1.0f, 0.1f };
        bk_denoise_opts dno;
        bk_denoise_opts_default(&dno);
        bk_denoise_result     dres;
        const bk_denoise_view dv = { .n = 1,
                                     .tri_chart = at.tri_chart,
                                     .tri_count = at.tri_count,
                                     .w = at.width,
                                     .h = at.height,
                                     .pages = 1,
                                     .texel_world = 0.01f };
        BK_EXPECT(bk_denoise_texel_colours(NULL, &c1, &r1, &dv, &dno, &dres, err, sizeof err) != 0);
    }
    bk_bake_data_free(&d);
    bk_atlas_free(&at);
    bk_accel_free(&a);
    bk_scene_free(&s);
    BK_TEST_DONE();
}
