/* backend_cpu.c - the reference backend: kernels/bk_traverse.h in a loop, threads over all cores.
 *
 * A BVH of triangles traced (or baked) with the global stack goes through the 8-wide BVH collapsed
 * from the binary one at upload (src/accel/bvh_wide.h; AVX2 or SSE4.1 where the CPU has them): the same
 * hits, 2-2.5x the rays per second. bk_trace_opts.bvh_width = 2 (--accel bvh2) keeps the binary
 * traversal, bvh_width = 8 (--accel cwbvh) the compressed 8-wide layout the GPU traces, through the
 * same shared traversal code as the GPU (every stack strategy), for tests and comparisons.
 *
 * The "shared-memory" stack of the short and spill strategies is an ordinary small array here
 * (stride 1), so every strategy runs, and is tested, on the CPU too. Rays are handed out in
 * chunks from one atomic counter.
 */
#include "bk_traverse.h"
#include "bvh_wide.h"

/* The bake's rays go through the wide BVH too (kernels/bk_bake.h: BK_BAKE_HOST_TRACE). */
static bk_hit cpu_bake_trace(const bk_accel_view *a, const bk_ray *r, int any_hit, bk_stack *s, bk_trace_stats *st);
#define BK_BAKE_HOST_TRACE cpu_bake_trace
#include "backend.h"
#include "gpu_ops.h"
#include "denoise_cpu.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024

typedef struct cpu_ctx {
    bk_accel_view view;
    bk_wbvh       wide;  /* collapsed from view at upload (nodes NULL when not a BVH of
                            triangles) */
    struct bk_cwbvh *cw; /* bvh_width 8: collapsed from view on first use */
    bk_accel_view    cw_view;
    int              cw_tried;
    /* bake */
    bk_bake_view    bake;
    const bk_texel *texels; /* the caller's (backend.h), read in place */
    float          *pos;    /* 3 per texel: the position sample 0 moved the texel to (out of
                               nearby geometry), for the later samples; 12 B where a copy
                               of the texels took 32 */
    uint32_t        texel_count;
    bk_f4          *out;
    float          *sq;  /* sums of squared sample luminances */
    bk_f4          *ext; /* the texels' extra sums, ext_n per texel (bk_bake_ext_count); NULL before */
    uint32_t        ext_n; /*   */
    bk_trace_totals bake_totals;
} cpu_ctx;

typedef struct cpu_job {
    const bk_accel_view *view;
    const bk_wbvh       *wide; /* trace through the wide BVH, or NULL */
    const bk_ray        *rays;
    bk_hit              *hits;
    uint64_t             n;
    const bk_trace_opts *o;
    atomic_uint_fast64_t next;
} cpu_job;

/* A worker thread of either job (trace or bake) and its counter sums. */
typedef struct cpu_worker {
    void           *job;
    bk_trace_totals totals; /* nodes, tris, restarts, spills, rays */
    pthread_t       thread;
} cpu_worker;

/* Runs fn on nt workers over one job, the calling thread being worker 0, and adds their counters
 * to *sum (seconds: the wall time). Returns -1 when the worker array cannot be had. */
static int run_workers(int nt, void *job, void *(*fn)(void *), bk_trace_totals *sum)
{
    cpu_worker *w = calloc((size_t)nt, sizeof *w);
    if (!w) return -1;
    double t0 = bk_time_now();
    int    started = 1;
    for (int i = 0; i < nt; ++i) w[i].job = job;
    for (int i = 1; i < nt && pthread_create(&w[i].thread, NULL, fn, &w[i]) == 0; ++i) started = i + 1;
    fn(&w[0]);
    for (int i = 1; i < started; ++i) pthread_join(w[i].thread, NULL);
    sum->seconds += bk_time_now() - t0;
    for (int i = 0; i < started; ++i) {
        sum->nodes += w[i].totals.nodes;
        sum->tris += w[i].totals.tris;
        sum->restarts += w[i].totals.restarts;
        sum->spills += w[i].totals.spills;
        sum->rays += w[i].totals.rays;
    }
    free(w);
    return 0;
}

/* One loop per traversal of BK_TRAVERSALS (accel, stack mode, query, primitive type), so the
 * always-inlined traversal is specialised for constants, as the CUDA templates are. */
typedef void (*cpu_loop_fn)(const cpu_job *j, const bk_stack *s, uint64_t begin, uint64_t end, uint64_t acc[4]);

#define CPU_LOOP(A, S, Q, P)                                                                                        \
    static void cpu_loop_##A##_##S##_##Q##_##P(const cpu_job *j, const bk_stack *s, uint64_t begin, uint64_t end,   \
                                               uint64_t acc[4])                                                     \
    {                                                                                                               \
        bk_stack stk = *s;                                                                                          \
        for (uint64_t i = begin; i < end; ++i) {                                                                    \
            bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };                                                            \
            j->hits[i] = bk_trace_one(j->view, &j->rays[i], BK_ACCEL_##A, BK_STACK_##S, Q, BK_PRIM_##P, &stk, &st); \
            if (j->o->ray_stats) j->o->ray_stats[i] = bk_ray_stat_word(&st);                                        \
            acc[0] += st.nodes;                                                                                     \
            acc[1] += st.tris;                                                                                      \
            acc[2] += st.restarts;                                                                                  \
            acc[3] += st.spills;                                                                                    \
        }                                                                                                           \
    }
BK_TRAVERSALS(CPU_LOOP)
#undef CPU_LOOP

/* The loops indexed by enum bk_traversal (bk_traversal_index). */
static const cpu_loop_fn cpu_loops[BK_TRAVERSAL_COUNT] = {
#define CPU_PICK(A, S, Q, P) [BK_TRAVERSAL_ID(A, S, Q, P)] = cpu_loop_##A##_##S##_##Q##_##P,
    BK_TRAVERSALS(CPU_PICK)
#undef CPU_PICK
};

static cpu_loop_fn cpu_loop_pick(int accel, int mode, int any, int prim)
{
    int i = bk_traversal_index(accel, mode, any, prim);
    return i < 0 ? NULL : cpu_loops[i];
}

/* A worker's stack: the "shared-memory" part is an ordinary array here (stride 1). */
static bk_stack cpu_stack(const bk_trace_opts *o, uint32_t *fast, uint32_t *spill)
{
    return bk_stack_make(o->stack_mode, fast, 1, bk_stack_cap(o->stack_mode, o->stack_size), spill, 1);
}

static void *cpu_worker_run(void *arg)
{
    cpu_worker *w = arg;
    cpu_job    *j = w->job;
    uint32_t    fast[BK_STACK_ENTRIES * BK_STACK_WIDTH], spill[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    bk_stack    s = cpu_stack(j->o, fast, spill);
    cpu_loop_fn loop = cpu_loop_pick(j->view->type, j->o->stack_mode, j->o->any_hit != 0, j->view->prim);
    uint64_t    acc[4] = { 0, 0, 0, 0 };
    for (;;) {
        uint64_t begin = atomic_fetch_add(&j->next, CHUNK);
        if (begin >= j->n) break;
        uint64_t end = begin + CHUNK < j->n ? begin + CHUNK : j->n;
        if (j->wide)
            bk_wbvh_trace(j->wide, j->rays, j->hits, begin, end, j->o->any_hit != 0, j->o->cpu_isa, j->o->ray_stats,
                          acc);
        else loop(j, &s, begin, end, acc);
    }
    w->totals.nodes = acc[0];
    w->totals.tris = acc[1];
    w->totals.restarts = acc[2];
    w->totals.spills = acc[3];
    return NULL;
}

/* The wide BVH where it wins: not with --accel bvh2, and not when the CPU has neither SSE4.1 nor
 * AVX2 unless asked for (its scalar code tests whole 4-triangle blocks one triangle at a time:
 * sponza, one thread, 1.3 Mrays/s closest where the binary traversal does 1.6; any hit 3.1 and 2.9). */
static int cpu_use_wide(const cpu_ctx *c, const bk_trace_opts *o)
{
    if (!c->wide.nodes || o->bvh_width == 2 || o->bvh_width == 8) return 0;
    return o->cpu_isa != BK_WBVH_ISA_AUTO || bk_wbvh_isa_best() != BK_WBVH_ISA_SCALAR;
}

/* The view a trace or bake with options o walks: the compressed wide BVH's for bvh_width 8 (built
 * on first use; a scene it does not take, voxels or a KD-tree, keeps its own), else the upload's. */
static const bk_accel_view *cpu_view(cpu_ctx *c, const bk_trace_opts *o)
{
    if (o->bvh_width != 8) return &c->view;
    if (!c->cw_tried) {
        c->cw_tried = 1;
        c->cw = bk_backend_cw_layout(&c->view, &c->cw_view);
    }
    return c->cw ? &c->cw_view : &c->view;
}

static const char *cpu_name(bk_backend *be) { return "cpu"; }

static int cpu_supports(bk_backend *be, const bk_trace_opts *o, char *why, size_t why_size)
{
    if (o->stack_mode < 0 || o->stack_mode >= BK_STACK_MODE_COUNT) {
        bk_fail(why, why_size, "unknown stack strategy");
        return 0;
    }
    if (bk_stack_sized(o->stack_mode) && (o->stack_size < 1 || o->stack_size > BK_STACK_ENTRIES)) {
        bk_fail(why, why_size, "--stack-size must be 1..%d", BK_STACK_ENTRIES);
        return 0;
    }
    /* A register cap is a property of a compiled GPU kernel; the CPU says so rather than
     * running the same loop again under a name that would mean nothing. */
    if (o->reg_cap != 0) {
        bk_fail(why, why_size, "register caps apply to GPU kernels only (cpu backend)");
        return 0;
    }
    return 1;
}

static int cpu_upload(bk_backend *be, const bk_accel_view *scene, char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    c->view = *scene;
    bk_wbvh_free(&c->wide);
    bk_backend_cw_free(c->cw);
    c->cw = NULL;
    c->cw_tried = 0;
    /* A BVH the collapse does not take (more than 2^30 triangles, out of memory) is traced in its
     * binary layout: the same hits, slower. */
    if (scene->type == BK_ACCEL_BVH && scene->prim != BK_PRIM_VOX && scene->bvh_node_count)
        (void)bk_wbvh_build(scene, &c->wide, NULL, 0);
    return 0;
}

static int cpu_trace(bk_backend *be, const bk_ray *rays, bk_hit *hits, uint64_t n, const bk_trace_opts *o,
                     bk_trace_totals *totals, char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!cpu_supports(be, o, err, err_size)) return -1;
    int nt = o->threads > 0 ? o->threads : bk_cpu_threads();
    memset(totals, 0, sizeof *totals);
    /* --ray-order sorted: the rays gathered in key order, traced, their hits (and statistics)
     * scattered back; sorting and moving count in the trace time */
    const int sorted =
        (o->ray_order == BK_RAY_ORDER_SORTED || o->ray_order == BK_RAY_ORDER_BINNED) && n > 1 && n < (1ull << 32);
    const int     bits = bk_ray_order_bits(o);
    bk_trace_opts os = *o;
    bk_ray       *sr = NULL;
    bk_hit       *sh = NULL;
    uint32_t     *keys = NULL, *idx = NULL, *sst = NULL;
    double        t0 = bk_time_now();
    if (sorted) {
        sr = malloc(n * sizeof *sr);
        sh = malloc(n * sizeof *sh);
        keys = malloc(n * sizeof *keys);
        idx = malloc(n * sizeof *idx);
        sst = o->ray_stats ? malloc(n * sizeof *sst) : NULL;
        if (!sr || !sh || !keys || !idx || (o->ray_stats && !sst)) {
            free(sr);
            free(sh);
            free(keys);
            free(idx);
            free(sst);
            return bk_fail(err, err_size, "out of memory");
        }
        const bk_vec3 scale = bk_ray_order_scale(c->view.lo, c->view.hi);
        for (uint64_t i = 0; i < n; ++i) {
            keys[i] = bk_ray_order_key(&rays[i], c->view.lo, scale) >> (BK_RAY_ORDER_KEY_BITS - bits);
            idx[i] = (uint32_t)i;
        }
        if (bk_gpu_ops_cpu_sort_pairs_u32(keys, idx, n, bits)) {
            free(sr);
            free(sh);
            free(keys);
            free(idx);
            free(sst);
            return bk_fail(err, err_size, "out of memory");
        }
        for (uint64_t i = 0; i < n; ++i) sr[i] = rays[idx[i]];
        os.ray_stats = sst;
    }
    double  t1 = bk_time_now();
    cpu_job job;
    job.view = cpu_view(c, o);
    job.rays = sorted ? sr : rays;
    job.hits = sorted ? sh : hits;
    job.n = n;
    job.o = &os;
    job.wide = cpu_use_wide(c, o) && o->stack_mode == BK_STACK_GLOBAL ? &c->wide : NULL;
    atomic_init(&job.next, 0);
    int rc = run_workers(nt, &job, cpu_worker_run, totals);
    if (sorted) {
        double t2 = bk_time_now();
        for (uint64_t i = 0; i < n; ++i) hits[idx[i]] = sh[i];
        if (sst)
            for (uint64_t i = 0; i < n; ++i) o->ray_stats[idx[i]] = sst[i];
        totals->sort_seconds = t1 - t0;
        totals->sorted = 1;
        totals->order_bits = bits;
        totals->seconds += (t1 - t0) + (bk_time_now() - t2);
        free(sr);
        free(sh);
        free(keys);
        free(idx);
        free(sst);
    }
    if (rc) return bk_fail(err, err_size, "out of memory");
    totals->rays = n;
    totals->coherence = -1.0;
    return 0;
}

/* The wide BVH and ISA of this thread's bake, or NULL (bake_worker_run sets them). */
static _Thread_local const bk_wbvh *bake_wide;
static _Thread_local int            bake_isa;

static bk_hit cpu_bake_trace(const bk_accel_view *a, const bk_ray *r, int any_hit, bk_stack *s, bk_trace_stats *st)
{
    if (bake_wide && s->mode == BK_STACK_GLOBAL) {
        st->rays++;
        return bk_wbvh_trace_one(bake_wide, r, any_hit != 0, bake_isa, st);
    }
    return bk_trace_dispatch(a, r, any_hit, s, st);
}

/* One texel's or probe's traversal counters into a worker's totals. */
static void add_stats(bk_trace_totals *t, const bk_trace_stats *st)
{
    t->nodes += st->nodes;
    t->tris += st->tris;
    t->restarts += st->restarts;
    t->spills += st->spills;
    t->rays += st->rays;
}

typedef struct bake_job {
    cpu_ctx              *c;
    bk_bake_view          bake; /* the bake's view, walking the layout the options ask for */
    uint32_t              end;
    const bk_bake_params *p;
    const bk_trace_opts  *o;
    atomic_uint_fast64_t  next;
} bake_job;

static void *bake_worker_run(void *arg)
{
    cpu_worker *w = arg;
    bake_job   *j = w->job;
    uint32_t    fast[BK_STACK_ENTRIES * BK_STACK_WIDTH], spill[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    bk_stack    s = cpu_stack(j->o, fast, spill);
    bake_wide = cpu_use_wide(j->c, j->o) ? &j->c->wide : NULL;
    bake_isa = bk_wbvh_isa_resolve(j->o->cpu_isa);
    for (;;) {
        uint64_t begin = atomic_fetch_add(&j->next, 16);
        if (begin >= j->end) break;
        uint64_t end = begin + 16 < j->end ? begin + 16 : j->end;
        for (uint64_t i = begin; i < end; ++i) {
            bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
            bk_texel       t = j->c->texels[i];
            float         *pos = j->c->pos + 3 * i;
            if (j->p->sample_begin > 0) {
                t.px = pos[0];
                t.py = pos[1];
                t.pz = pos[2];
            }
            j->c->out[i] = bk_bake_texel(&j->bake, j->p, &t, j->c->out[i], &j->c->sq[i],
                                         j->c->ext ? j->c->ext + j->c->ext_n * i : NULL, &s, &st);
            if (j->p->sample_begin == 0) {
                pos[0] = t.px;
                pos[1] = t.py;
                pos[2] = t.pz;
            }
            add_stats(&w->totals, &st);
        }
    }
    return NULL;
}

typedef struct probe_job {
    cpu_ctx              *c;
    bk_bake_view          bake;
    const float          *pos;
    uint32_t              n;
    const bk_bake_params *p;
    const bk_trace_opts  *o;
    float                *sums;
    atomic_uint_fast64_t  next;
    atomic_int            failed; /* a worker had no memory for its chunks */
} probe_job;

/* One probe at a time, its chunks in order (bk_bake_probe, bk_probe_chunks_sum). */
static void *probe_worker_run(void *arg)
{
    cpu_worker *w = arg;
    probe_job  *j = w->job;
    uint32_t    fast[BK_STACK_ENTRIES * BK_STACK_WIDTH], spill[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    bk_stack    s = cpu_stack(j->o, fast, spill);
    bake_wide = cpu_use_wide(j->c, j->o) ? &j->c->wide : NULL;
    bake_isa = bk_wbvh_isa_resolve(j->o->cpu_isa);
    const uint32_t chunks = (j->p->spp + BK_PROBE_CHUNK - 1) / BK_PROBE_CHUNK;
    float         *part = malloc(sizeof(float) * BK_PROBE_SUMS * (chunks ? chunks : 1));
    if (!part) {
        atomic_store(&j->failed, 1);
        return NULL;
    }
    for (uint64_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
        const bk_vec3  pos = bk_v3(j->pos[3 * i], j->pos[3 * i + 1], j->pos[3 * i + 2]);
        for (uint32_t k = 0; k < chunks; ++k) {
            const uint32_t e = (k + 1) * BK_PROBE_CHUNK < j->p->spp ? (k + 1) * BK_PROBE_CHUNK : j->p->spp;
            bk_bake_probe(&j->bake, j->p, pos, (uint32_t)i, k * BK_PROBE_CHUNK, e, part + (size_t)k * BK_PROBE_SUMS, &s,
                          &st);
        }
        bk_probe_chunks_sum(part, chunks, j->sums + (size_t)i * BK_PROBE_SUMS);
        add_stats(&w->totals, &st);
    }
    free(part);
    return NULL;
}

static int cpu_bake_probes(bk_backend *be, const float *pos, uint32_t n, const bk_bake_params *p,
                           const bk_trace_opts *o, float *sums, char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!cpu_supports(be, o, err, err_size)) return -1;
    if (!c->out) return bk_fail(err, err_size, "bake_probes without bake_begin");
    probe_job job;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.bake = c->bake;
    job.bake.accel = *cpu_view(c, o);
    job.pos = pos;
    job.n = n;
    job.p = p;
    job.o = o;
    job.sums = sums;
    atomic_init(&job.next, 0);
    atomic_init(&job.failed, 0);
    int nt = o->threads > 0 ? o->threads : bk_cpu_threads();
    int rc = run_workers(nt, &job, probe_worker_run, &c->bake_totals);
    bake_wide = NULL;
    if (rc || atomic_load(&job.failed)) return bk_fail(err, err_size, "out of memory");
    return 0;
}

static int cpu_bake_begin(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, char *err,
                          size_t err_size)
{
    cpu_ctx *c = be->ctx;
    free(c->out);
    free(c->sq);
    free(c->ext);
    c->ext = NULL;
    c->ext_n = 0;
    c->bake = *v;
    c->bake.accel = c->view;
    free(c->pos);
    c->texels = texels; /* the caller's, alive until bake_end (backend.h): no copy */
    c->pos = malloc(sizeof(float) * 3 * (n ? n : 1));
    c->texel_count = n;
    c->out = calloc(n ? n : 1, sizeof(bk_f4)); /* the sums start at zero */
    c->sq = calloc(n ? n : 1, sizeof(float));
    memset(&c->bake_totals, 0, sizeof c->bake_totals);
    if (!c->out || !c->sq || !c->pos) return bk_fail(err, err_size, "out of memory for %u texels", n);
    return 0;
}

static int cpu_bake_run(bk_backend *be, uint32_t begin, uint32_t end, const bk_bake_params *p, const bk_trace_opts *o,
                        char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!cpu_supports(be, o, err, err_size)) return -1;
    if (end > c->texel_count || begin > end)
        return bk_fail(err, err_size, "bake range %u..%u out of %u texels", begin, end, c->texel_count);
    const uint32_t ne = bk_bake_ext_count(p);
    if (c->ext && ne != c->ext_n) return bk_fail(err, err_size, "bake_run with %u extra sums after %u", ne, c->ext_n);
    if (ne && !c->ext) {
        if (!(c->ext = calloc(ne * (size_t)(c->texel_count ? c->texel_count : 1), sizeof(bk_f4))))
            return bk_fail(err, err_size, "out of memory for %u texels' directional and shadowmask sums",
                           c->texel_count);
        c->ext_n = ne;
    }
    int      nt = o->threads > 0 ? o->threads : bk_cpu_threads();
    bake_job job;
    memset(&job, 0, sizeof job);
    job.c = c;
    job.end = end;
    job.p = p;
    job.o = o;
    job.bake = c->bake;
    job.bake.accel = *cpu_view(c, o);
    atomic_init(&job.next, begin);
    int rc = run_workers(nt, &job, bake_worker_run, &c->bake_totals);
    bake_wide = NULL; /* the calling thread was worker 0 */
    if (rc) return bk_fail(err, err_size, "out of memory");
    return 0;
}

static int cpu_bake_fetch(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, float *sq, char *err,
                          size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!c->out) return bk_fail(err, err_size, "bake_fetch without bake_begin");
    if (end > c->texel_count || begin > end)
        return bk_fail(err, err_size, "fetch range %u..%u out of %u texels", begin, end, c->texel_count);
    memcpy(out, c->out + begin, sizeof(bk_f4) * (end - begin));
    if (sq) memcpy(sq, c->sq + begin, sizeof(float) * (end - begin));
    return 0;
}

static int cpu_bake_fetch_ext(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!c->ext) return bk_fail(err, err_size, "bake_fetch_ext without a bake_run that has extra sums");
    if (end > c->texel_count || begin > end)
        return bk_fail(err, err_size, "fetch range %u..%u out of %u texels", begin, end, c->texel_count);
    memcpy(out, c->ext + c->ext_n * (size_t)begin, c->ext_n * sizeof(bk_f4) * (end - begin));
    return 0;
}

static int cpu_bake_end(bk_backend *be, bk_f4 *out, float *sq, bk_trace_totals *totals, char *err, size_t err_size)
{
    cpu_ctx *c = be->ctx;
    if (!c->out) return bk_fail(err, err_size, "bake_end without bake_begin");
    if (out && cpu_bake_fetch(be, 0, c->texel_count, out, sq, err, err_size)) return -1;
    *totals = c->bake_totals;
    free(c->out);
    free(c->sq);
    free(c->ext);
    free(c->pos);
    c->pos = NULL;
    c->out = NULL;
    c->sq = NULL;
    c->ext = NULL;
    c->ext_n = 0;
    c->texels = NULL;
    return 0;
}

static void cpu_free(bk_backend *be)
{
    bk_wbvh_free(&((cpu_ctx *)be->ctx)->wide);
    bk_backend_cw_free(((cpu_ctx *)be->ctx)->cw);
    free(((cpu_ctx *)be->ctx)->out);
    free(((cpu_ctx *)be->ctx)->sq);
    free(((cpu_ctx *)be->ctx)->ext);
    free(((cpu_ctx *)be->ctx)->pos);
    free(be->ctx);
    free(be);
}

static void cpu_memory(bk_backend *be, uint64_t *free_bytes, uint64_t *total_bytes) { *free_bytes = *total_bytes = 0; }
static uint64_t cpu_memory_peak(bk_backend *be)
{
    (void)be;
    return 0;
} /* host memory: see bk_peak_rss */

static int cpu_kernel_info(bk_backend *be, const bk_trace_opts *o, bk_kernel_info *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    return bk_fail(err, err_size, "not a GPU backend: no kernel to describe (cpu)");
}

static int cpu_denoise(bk_backend *be, const bk_denoise_params *p, int passes, const bk_texel *tx, uint32_t first,
                       const uint32_t *chart, uint32_t chart_stride, bk_f4 *col, bk_f4 *band, uint32_t n, uint64_t base,
                       double *seconds, char *err, size_t err_size)
{
    (void)be;
    (void)first;
    *seconds = 0.0;
    if (!tx && n) return bk_fail(err, err_size, "the cpu backend keeps no texels: the denoiser needs them (backend.h)");
    double    t0 = bk_time_now();
    uint32_t *own = NULL;
    if (chart_stride != 1) { /* charts in refs: an array of their own */
        if (!(own = malloc(sizeof(uint32_t) * (n ? n : 1))))
            return bk_fail(err, err_size, "out of memory for %u charts", n);
        for (uint32_t i = 0; i < n; ++i) own[i] = chart[(size_t)i * chart_stride];
        chart = own;
    }
    int rc = bk_denoise_texels_cpu(p, passes, tx, chart, col, band, n, base, err, err_size);
    free(own);
    *seconds = bk_time_now() - t0;
    return rc;
}

static void cpu_caps(bk_backend *be, bk_backend_caps *out)
{
    (void)be;
    out->devices = 1;
    out->gpu_primitives = 0;
    out->launch_budgets = 5.0;
    out->first_block = 1024;
    out->keeps_texels = 0; /* it reads the caller's texels in place */
    out->device = -1;
}

static const struct bk_backend_i cpu_iface = {
    .name = cpu_name,
    .supports = cpu_supports,
    .upload = cpu_upload,
    .trace = cpu_trace,
    .bake_begin = cpu_bake_begin,
    .bake_run = cpu_bake_run,
    .bake_fetch = cpu_bake_fetch,
    .bake_end = cpu_bake_end,
    .memory = cpu_memory,
    .memory_peak = cpu_memory_peak,
    .kernel_info = cpu_kernel_info,
    .denoise = cpu_denoise,
    .free = cpu_free,
    .caps = cpu_caps,
    .member = NULL,      /* one device */
    .bake_texels = NULL, /* it reads the caller's texels in place */
    .bake_refs = NULL,   /* nor makes any */
    .host_alloc = NULL,  /* host memory: malloc's */
    .host_free = NULL,
    .bake_fetch_ext = cpu_bake_fetch_ext,
    .bake_probes = cpu_bake_probes,
};

bk_backend *bk_backend_cpu_init(void)
{
    bk_backend *be = calloc(1, sizeof *be);
    cpu_ctx    *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return NULL;
    }
    be->i = &cpu_iface;
    be->ctx = c;
    return be;
}
