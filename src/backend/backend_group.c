/* backend_group.c - one backend over several devices (backend.h: bk_backend_group).
 *
 * The group is what the rest of baker holds when a bake runs on several GPUs: the scene goes to
 * every member once (in parallel, a thread per member), and the bake driver (src/bake/bake.c) takes the
 * members out (member()) and hands each texel blocks on a thread of its own. Everything that runs
 * once (trace, kernel facts, the denoiser) runs on member 0, which also keeps the texels of the
 * last bake for the denoiser, as every member does.
 */
#include "backend.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct group_ctx {
    int          n;
    bk_backend **m;
} group_ctx;

static group_ctx *G(bk_backend *be) { return (group_ctx *)be->ctx; }

static const char *group_name(bk_backend *be) { return G(be)->m[0]->i->name(G(be)->m[0]); }

static int group_supports(bk_backend *be, const bk_trace_opts *o, char *why, size_t why_size)
{
    for (int k = 0; k < G(be)->n; ++k)
        if (!G(be)->m[k]->i->supports(G(be)->m[k], o, why, why_size)) return 0;
    return 1;
}

typedef struct upload_job {
    bk_backend          *be;
    const bk_accel_view *v;
    int                  rc;
    char                 err[512];
    pthread_t            th;
    int                  started;
} upload_job;

static void *upload_run(void *arg)
{
    upload_job *j = arg;
    j->rc = j->be->i->upload(j->be, j->v, j->err, sizeof j->err);
    return NULL;
}

static int group_upload(bk_backend *be, const bk_accel_view *v, char *err, size_t err_size)
{
    group_ctx  *g = G(be);
    upload_job *j = calloc((size_t)g->n, sizeof *j);
    if (!j) return bk_fail(err, err_size, "out of memory");
    for (int k = 0; k < g->n; ++k) {
        j[k].be = g->m[k];
        j[k].v = v;
        j[k].started = k > 0 && pthread_create(&j[k].th, NULL, upload_run, &j[k]) == 0;
        if (k > 0 && !j[k].started) upload_run(&j[k]);
    }
    upload_run(&j[0]);
    int rc = 0;
    for (int k = 0; k < g->n; ++k) {
        if (j[k].started) pthread_join(j[k].th, NULL);
        if (j[k].rc && !rc) rc = bk_fail(err, err_size, "device %d of %d: %s", k, g->n, j[k].err);
    }
    free(j);
    return rc;
}

static int group_trace(bk_backend *be, const bk_ray *rays, bk_hit *hits, uint64_t n, const bk_trace_opts *o,
                       bk_trace_totals *totals, char *err, size_t err_size)
{
    return G(be)->m[0]->i->trace(G(be)->m[0], rays, hits, n, o, totals, err, err_size);
}

/* The bake runs on the members (src/bake/bake.c): the group's own bake entry points refuse. */
static int group_refuse(char *err, size_t err_size)
{
    return bk_fail(err, err_size, "a backend over several devices bakes through its members (bk_bake_texels)");
}
static int group_bake_begin(bk_backend *be, const bk_bake_view *v, const bk_texel *t, uint32_t n, char *err,
                            size_t err_size)
{
    (void)be;
    (void)v;
    (void)t;
    (void)n;
    return group_refuse(err, err_size);
}
static int group_bake_run(bk_backend *be, uint32_t b, uint32_t e, const bk_bake_params *p, const bk_trace_opts *o,
                          char *err, size_t err_size)
{
    (void)be;
    (void)b;
    (void)e;
    (void)p;
    (void)o;
    return group_refuse(err, err_size);
}
static int group_bake_fetch(bk_backend *be, uint32_t b, uint32_t e, bk_f4 *out, float *sq, char *err, size_t err_size)
{
    (void)be;
    (void)b;
    (void)e;
    (void)out;
    (void)sq;
    return group_refuse(err, err_size);
}
static int group_bake_end(bk_backend *be, bk_f4 *out, float *sq, bk_trace_totals *totals, char *err, size_t err_size)
{
    (void)be;
    (void)out;
    (void)sq;
    memset(totals, 0, sizeof *totals);
    return group_refuse(err, err_size);
}

static int group_bake_texels(bk_backend *be, uint32_t first, uint32_t count, const bk_texel *t, char *err,
                             size_t err_size)
{
    (void)be;
    (void)first;
    (void)count;
    (void)t;
    return group_refuse(err, err_size);
}

static void group_memory(bk_backend *be, uint64_t *free_bytes, uint64_t *total_bytes)
{
    /* what a bake must fit in: the member with the least free memory (each holds the whole bake) */
    group_ctx *g = G(be);
    *free_bytes = *total_bytes = 0;
    for (int k = 0; k < g->n; ++k) {
        uint64_t f = 0, t = 0;
        g->m[k]->i->memory(g->m[k], &f, &t);
        if (k == 0 || f < *free_bytes) {
            *free_bytes = f;
            *total_bytes = t;
        }
    }
}

static uint64_t group_memory_peak(bk_backend *be)
{
    uint64_t most = 0;
    for (int k = 0; k < G(be)->n; ++k) {
        uint64_t p = G(be)->m[k]->i->memory_peak(G(be)->m[k]);
        if (p > most) most = p;
    }
    return most;
}

static int group_kernel_info(bk_backend *be, const bk_trace_opts *o, bk_kernel_info *out, char *err, size_t err_size)
{
    bk_backend *m = G(be)->m[0];
    return m->i->kernel_info ? m->i->kernel_info(m, o, out, err, err_size) : bk_fail(err, err_size, "no kernel");
}

static int group_denoise(bk_backend *be, const bk_denoise_params *p, int passes, const bk_texel *tx, uint32_t first,
                         const uint32_t *chart, uint32_t chart_stride, bk_f4 *col, bk_f4 *band, uint32_t n,
                         uint64_t base, double *seconds, char *err, size_t err_size)
{
    /* every member began the last bake with all the texels: the first one's copy serves */
    bk_backend *m = G(be)->m[0];
    return m->i->denoise(m, p, passes, tx, first, chart, chart_stride, col, band, n, base, seconds, err, err_size);
}

static void group_free(bk_backend *be)
{
    group_ctx *g = G(be);
    if (g) {
        for (int k = 0; k < g->n; ++k) bk_backend_free(g->m[k]);
        free(g->m);
        free(g);
    }
    free(be);
}

static void group_caps(bk_backend *be, bk_backend_caps *out)
{
    G(be)->m[0]->i->caps(G(be)->m[0], out);
    out->devices = G(be)->n;
    out->device = -1;
}

static bk_backend *group_member(bk_backend *be, int k) { return k >= 0 && k < G(be)->n ? G(be)->m[k] : NULL; }

static const struct bk_backend_i group_iface = {
    .name = group_name,
    .supports = group_supports,
    .upload = group_upload,
    .trace = group_trace,
    .bake_begin = group_bake_begin,
    .bake_run = group_bake_run,
    .bake_fetch = group_bake_fetch,
    .bake_end = group_bake_end,
    .memory = group_memory,
    .memory_peak = group_memory_peak,
    .kernel_info = group_kernel_info,
    .denoise = group_denoise,
    .free = group_free,
    .caps = group_caps,
    .member = group_member,
    .bake_texels = group_bake_texels,
    .bake_refs = NULL,  /* its members make them (bk_bake_texels) */
    .host_alloc = NULL, /* host memory: the bake asks the first member */
    .host_free = NULL,
};

bk_backend *bk_backend_group(bk_backend **members, int n)
{
    bk_backend  *be = calloc(1, sizeof *be);
    group_ctx   *g = calloc(1, sizeof *g);
    bk_backend **m = malloc(sizeof(bk_backend *) * (size_t)(n > 0 ? n : 1));
    if (!be || !g || !m || n < 1) {
        for (int k = 0; k < n; ++k) bk_backend_free(members[k]);
        free(be);
        free(g);
        free(m);
        return NULL;
    }
    memcpy(m, members, sizeof(bk_backend *) * (size_t)n);
    g->n = n;
    g->m = m;
    be->i = &group_iface;
    be->ctx = g;
    return be;
}

bk_backend *bk_backend_member(bk_backend *be, int k)
{
    if (be->i->member) return be->i->member(be, k);
    return k == 0 ? be : NULL;
}
