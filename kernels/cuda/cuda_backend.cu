/* cuda_backend.cu - the CUDA backend: kernels/bk_traverse.h in a persistent-threads kernel.
 *
 * Pipeline: upload (nodes, triangles, references to the device) -> trace (rays in, hits out).
 * A persistent grid (as many blocks as fit at once) fetches rays from one global work counter
 * until none are left (Aila & Laine 2009), and tallies traversal statistics in registers.
 * --counters picks how both counters reach global memory: one atomic per thread, one per warp
 * (ballot + popc: the leader adds the warp's count and broadcasts the base), or one per block
 * (the block fetches blockDim rays at a time; statistics meet in a shared-memory tally). The stack strategy picks where
 * bk_stack points: a per-thread local array (global), or shared memory with stride blockDim.x so a warp's pushes fall
 * in 32 different banks (short, spill), the latter spilling to an interleaved per-thread region of a global buffer.
 * Each (accel, stack, query, counters) combination is its own template instance, so the shared
 * traversal is specialised at compile time.
 */
#include "backend.h"
#include "cuda_backend.h"
#include "bk_traverse.h"
#include "gpu_ops.h"
#include "cuda_internal.cuh"
#include "pool.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK BK_CUDA_BLOCK

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CUDA_TRY(expr)                                                                                       \
    do {                                                                                                     \
        cudaError_t e_ = (expr);                                                                             \
        if (e_ != cudaSuccess) {                                                                             \
            snprintf(err, err_size, "CUDA error in %s: %s (%s:%d)", #expr, cudaGetErrorString(e_), __FILE__, \
                     __LINE__);                                                                              \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)


typedef struct cuda_ctx {
    int           device; /* the CUDA device; every entry point makes it the thread's own */
    int           sm_count;
    int           max_warps_per_sm;
    char          device_name[256];
    bk_accel_view view; /* device pointers */
    void         *d_nodes, *d_tris, *d_refs;
    /* the compressed wide BVH of a BVH of triangles (bk_backend_cw_layout), made and traced when
       the options ask for it (cuda_view); cw_view.type is BK_ACCEL_CWBVH once there is one */
    bk_accel_view cw_view;
    void         *d_cw_nodes, *d_cw_recs;
    bk_accel_view host_bin; /* the uploaded BVH's host view (backend.h: alive until the next
                               upload), or type KD-tree: nothing to collapse */
    int                 cw_tried;
    void               *d_vox_models, *d_vox_bricks, *d_vox_colours, *d_vox_inst;
    void               *d_alpha, *d_tex_recs, *d_texels8, *d_texelsf, *d_srgb; /* the scene's surface */
    uint64_t            tex_bytes;
    double              tex_seconds; /* their upload */
    bk_ray             *d_rays;
    bk_hit             *d_hits;
    uint64_t            ray_cap;
    uint32_t           *d_spill;
    size_t              spill_words;
    unsigned long long *d_stats;
    cudaEvent_t         ev0, ev1, ev_sorted, ev_traced;
    cudaEvent_t         ev_up; /* the last bake_texels copy, in flight until up_pending is 0 */
    int                 up_pending;
    /* --ray-order sorted or binned: the rays' keys and indices (d_order_keys, d_order: i), sorted by
       the project's radix sort into d_sorted_keys, d_sorted (distinct arrays: no copy back after an
       odd number of passes); with the rays copied into order (bk_trace_opts.order_copy), the rays,
       their hits and statistics in sorted order */
    bk_gpu_ops *prim;
    uint32_t   *d_order_keys, *d_order, *d_sorted_keys, *d_sorted;
    uint64_t    order_cap;
    bk_ray     *d_rays_sorted;
    bk_hit     *d_hits_sorted;
    uint64_t    copy_cap;
    int         key_blocks; /* ray_key_kernel's blocks per SM */
    /* bake */
    bk_bake_view bake; /* device pointers */
    void        *d_btris, *d_mats, *d_emit_tris, *d_emit_cdf, *d_points;
    void        *d_tri_uv, *d_emit_sub, *d_emit_grid, *d_emit_lum;
    bk_texel    *d_texels; /* the last bake's texels, kept after bake_end for the denoiser
                              until the next bake or the end (backend.h: keeps_texels) */
    /* texels made here from their refs (bake_refs): the atlas's arrays, uploaded at the first call of
       a bake (tsrc: device pointers; tsrc_ready), and a slice of refs */
    bk_texel_src  tsrc;
    int           tsrc_ready;
    void         *d_tsrc_uv, *d_tsrc_page, *d_tsrc_n;
    bk_texel_ref *d_trefs;
    uint32_t      refs_cap;
    float        *d_pos; /* 3 per texel: where sample 0 moved it (out of nearby geometry) */
    bk_f4        *d_out;
    float        *d_sq;  /* sums of squared sample luminances */
    bk_f4        *d_ext; /* the texels' extra sums, ext_n per texel (bk_bake_ext_count); made at the first bake_run */
    uint32_t      ext_n;
    uint32_t      texel_count;
    double        bake_seconds;
    /* achieved occupancy (bk_trace_opts.occupancy): one record per warp of a launch */
    bk_warp_rec *d_rec, *h_rec;
    size_t       rec_cap;
    bk_cuda_wave wave;     /* the wavefront bake's buffers (--kernel wavefront) */
    uint64_t     mem_peak; /* most device memory seen in use (total - free), bytes */
} cuda_ctx;

/* Samples the device's memory in use after an allocation: its high-water mark is what
 * memory_peak reports (cudaMemGetInfo counts the context and other processes' memory too). */
static void note_memory(cuda_ctx *c)
{
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) == cudaSuccess && t >= f && (uint64_t)(t - f) > c->mem_peak)
        c->mem_peak = (uint64_t)(t - f);
}

/* The context of be, with its device made the calling thread's current one: the entry points
 * run on whichever thread calls them (a bake on several devices runs one thread per device). */
static cuda_ctx *ctx_of(bk_backend *be)
{
    cuda_ctx *c = (cuda_ctx *)be->ctx;
    int       cur = -1;
    if (c && (cudaGetDevice(&cur) != cudaSuccess || cur != c->device)) cudaSetDevice(c->device);
    return c;
}

/* Voxel kernels are held to BK_VOX_MIN_BLOCKS blocks of 128 per SM: 8, 64 registers (50 %
 * occupancy), though they spill (the BVH closest-hit one 120 bytes). On the H100, 54k-object
 * world, 4M sorted rays, Mrays/s closest / any hit with the global stack (f1d97c4): 8 blocks
 * 2034 / 2323, 7 (72 registers, 64 bytes spilled) 2011 / 2287, 6 (80 registers, 20 bytes) 1915 /
 * 2211; the short and spill stacks lose more. A minimum of 0 leaves triangle kernels as they were
 * (a minimum of 1 made ptxas take 64 registers instead of 48-56, 20 % slower on the KD-tree). The
 * binary BVH's short-stack any-hit kernel is held to 64 as well (it took 72: 7 blocks); its
 * closest-hit kernel gained nothing from it (71 -> 64 registers, sponza 1843 -> 1823 Mrays/s). */
#ifndef BK_VOX_MIN_BLOCKS
#define BK_VOX_MIN_BLOCKS 8
#endif
#define TRACE_MIN_BLOCKS(ACCEL, MODE, ANY, PRIM) \
    ((PRIM) == BK_PRIM_VOX ? BK_VOX_MIN_BLOCKS : ((ACCEL) == BK_ACCEL_BVH && (MODE) == BK_STACK_SHORT && (ANY)) ? 8 : 0)
template <int ACCEL, int MODE, int ANY, int PRIM, int CNT>
__global__ void __launch_bounds__(BLOCK, TRACE_MIN_BLOCKS(ACCEL, MODE, ANY, PRIM))
    trace_kernel(bk_accel_view v, const bk_ray *__restrict__ rays, bk_hit *__restrict__ hits, uint64_t n,
                 int stack_size, uint32_t *spill, unsigned long long *stats, uint32_t *ray_stats,
                 const uint32_t *__restrict__ order)
{
    extern __shared__ uint32_t    smem[];
    __shared__ unsigned long long block_base;
    __shared__ unsigned long long tally[STAT_COUNT];
    uint32_t                      local[BK_STACK_LOCAL_WORDS(ACCEL, MODE)];
    const uint32_t                nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    bk_stack s = bk_stack_thread(MODE, local, smem + threadIdx.x, blockDim.x, stack_size, spill + gtid, (int)nthreads);
    uint32_t nodes = 0, tris = 0, restarts = 0, spills = 0;
    if (CNT == BK_COUNTERS_BLOCK && threadIdx.x < STAT_COUNT) tally[threadIdx.x] = 0;
    /* Work is handed out warp-uniformly: the lanes of a warp start their next rays together.
     * (Measured: letting each lane fetch as soon as it is done changed nothing, +-0.5 %, now that
     * the traversal's control flow is structured.) In warp and block mode a warp always gets 32
     * consecutive rays, so the postponed-leaf traversal does the same work on every run. Lanes
     * whose index is past n sit the round out. */
    const unsigned lane = threadIdx.x & 31u;
    for (;;) {
        uint64_t i;
        if (CNT == BK_COUNTERS_BLOCK) { /* one atomic per block and round */
            __syncthreads();
            if (threadIdx.x == 0) block_base = atomicAdd(&stats[STAT_WORK], (unsigned long long)blockDim.x);
            __syncthreads();
            if (block_base >= n) break;
            i = block_base + threadIdx.x;
        } else if (CNT == BK_COUNTERS_WARP) { /* one atomic per warp: the leader adds the count */
            unsigned           mask = __ballot_sync(0xffffffffu, 1);
            unsigned long long base = 0;
            if (lane == 0) base = atomicAdd(&stats[STAT_WORK], (unsigned long long)__popc(mask));
            base = __shfl_sync(0xffffffffu, base, 0);
            if (base >= n) break;
            i = base + __popc(mask & ((1u << lane) - 1u));
        } else { /* one atomic per thread */
            i = atomicAdd(&stats[STAT_WORK], 1ull);
            if (!__any_sync(0xffffffffu, i < n)) break;
        }
        if (i < n) {
            /* the ray straight from global memory: read once for the set-up, and the direction
             * again for a closest hit's precise distance (bk_tri_refine_t), rather than held in
             * registers through the traversal (1-2 % of the rays per second). With a ray order,
             * the i-th ray of the order (one 32-byte sector either way). */
            if (order) i = order[i];
            bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
            bk_hit         h = bk_trace_one(&v, rays + i, ACCEL, MODE, ANY, PRIM, &s, &st);
            *(uint2 *)(hits + i) = make_uint2(__float_as_uint(h.t), h.tri);
            if (ray_stats) ray_stats[i] = bk_ray_stat_word(&st);
            nodes += st.nodes;
            tris += st.tris;
            restarts += st.restarts;
            spills += st.spills;
        }
        __syncwarp();
    }
    if (CNT == BK_COUNTERS_THREAD) {
        atomicAdd(&stats[STAT_NODES], (unsigned long long)nodes);
        atomicAdd(&stats[STAT_TRIS], (unsigned long long)tris);
        atomicAdd(&stats[STAT_RESTARTS], (unsigned long long)restarts);
        atomicAdd(&stats[STAT_SPILLS], (unsigned long long)spills);
    } else if (CNT == BK_COUNTERS_WARP) {
        bk_warp_flush_stats(stats, nodes, tris, restarts, spills, 0);
    } else {
        atomicAdd(&tally[STAT_NODES], (unsigned long long)nodes);
        atomicAdd(&tally[STAT_TRIS], (unsigned long long)tris);
        atomicAdd(&tally[STAT_RESTARTS], (unsigned long long)restarts);
        atomicAdd(&tally[STAT_SPILLS], (unsigned long long)spills);
        __syncthreads();
        if (threadIdx.x > 0 && threadIdx.x < STAT_COUNT) atomicAdd(&stats[threadIdx.x], tally[threadIdx.x]);
    }
}

typedef void (*kernel_fn)(bk_accel_view, const bk_ray *, bk_hit *, uint64_t, int, uint32_t *, unsigned long long *,
                          uint32_t *, const uint32_t *);

/* --ray-order sorted or binned: each ray's key (the top bits of bk_ray_order_key: the key shifted
 * right by shift) and its index, for the sort. */
__global__ void __launch_bounds__(BLOCK)
    ray_key_kernel(const bk_ray *__restrict__ rays, uint64_t n, bk_vec3 lo, bk_vec3 scale, int shift,
                   uint32_t *__restrict__ keys, uint32_t *__restrict__ idx)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const bk_ray r = rays[i];
        keys[i] = bk_ray_order_key(&r, lo, scale) >> shift;
        idx[i] = (uint32_t)i;
    }
}

/* The rays copied into their sorted order (order_copy 2): out[i] = rays[order[i]], two 16-byte
 * loads and stores per ray (a ray is one 32-byte sector, at a multiple of 32 bytes). */
__global__ void __launch_bounds__(BLOCK)
    ray_gather_kernel(const bk_ray *__restrict__ rays, const uint32_t *__restrict__ order, uint64_t n,
                      bk_ray *__restrict__ out)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const float4 *src = (const float4 *)(rays + order[i]);
        float4       *dst = (float4 *)(out + i);
        const float4  a = src[0], b = src[1];
        dst[0] = a;
        dst[1] = b;
    }
}

/* ... and the hits (and per-ray statistics) of the sorted rays back to their rays' indices. */
__global__ void __launch_bounds__(BLOCK)
    hit_scatter_kernel(const bk_hit *__restrict__ sorted_hits, const uint32_t *__restrict__ sorted_stats,
                       const uint32_t *__restrict__ order, uint64_t n, bk_hit *__restrict__ hits,
                       uint32_t *__restrict__ ray_stats)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t j = order[i];
        *(uint2 *)(hits + j) = *(const uint2 *)(sorted_hits + i);
        if (ray_stats) ray_stats[j] = sorted_stats[i];
    }
}

/* The kernel of one traversal for counter mode cnt (BK_COUNTER_MODES in backend.h); NULL for an
 * unknown mode. */
template <int ACCEL, int MODE, int ANY, int PRIM> static kernel_fn pick_counters(int cnt)
{
    switch (cnt) {
#define PICK_CNT(N, S, D) \
    case BK_COUNTERS_##N: return trace_kernel<ACCEL, MODE, ANY, PRIM, BK_COUNTERS_##N>;
        BK_COUNTER_MODES(PICK_CNT)
#undef PICK_CNT
    default: return NULL;
    }
}
/* One kernel per traversal of BK_TRAVERSALS (kernels/bk_traverse.h) and counter mode. */
static kernel_fn pick_kernel(const bk_accel_view *v, const bk_trace_opts *o)
{
    switch (bk_traversal_index(v->type, o->stack_mode, o->any_hit, v->prim)) {
#define PICK(A, S, Q, P) \
    case BK_TRAVERSAL_ID(A, S, Q, P): return pick_counters<BK_ACCEL_##A, BK_STACK_##S, Q, BK_PRIM_##P>(o->counters);
        BK_TRAVERSALS(PICK)
#undef PICK
    default: return NULL;
    }
}

static const char *cuda_name(bk_backend *be) { return "cuda"; }

#define CAP_NAME(C) " " #C
static const char reg_cap_names[] = BK_REG_CAPS(CAP_NAME);
#undef CAP_NAME

static int cuda_supports(bk_backend *be, const bk_trace_opts *o, char *why, size_t why_size)
{
    if (o->stack_mode < 0 || o->stack_mode >= BK_STACK_MODE_COUNT || o->counters < 0 ||
        o->counters >= BK_COUNTERS_COUNT) {
        snprintf(why, why_size, "unknown stack strategy or counter mode");
        return 0;
    }
    if (bk_stack_sized(o->stack_mode) && (o->stack_size < 1 || o->stack_size > BK_STACK_ENTRIES)) {
        snprintf(why, why_size, "--stack-size must be 1..%d", BK_STACK_ENTRIES);
        return 0;
    }
    if (!bk_cuda_bake_has(o->stack_mode, o->reg_cap)) {
        snprintf(why, why_size, "no bake kernel with a cap of %d registers (compiled caps:%s)", o->reg_cap,
                 reg_cap_names);
        return 0;
    }
    return 1;
}

static void release_scene(cuda_ctx *c)
{
    cudaFree(c->d_nodes);
    cudaFree(c->d_tris);
    cudaFree(c->d_refs);
    c->d_nodes = c->d_tris = c->d_refs = NULL;
    cudaFree(c->d_cw_nodes);
    cudaFree(c->d_cw_recs);
    c->d_cw_nodes = c->d_cw_recs = NULL;
    memset(&c->cw_view, 0, sizeof c->cw_view);
    c->host_bin.type = BK_ACCEL_KDTREE;
    c->cw_tried = 0;
    cudaFree(c->d_vox_models);
    cudaFree(c->d_vox_bricks);
    cudaFree(c->d_vox_colours);
    cudaFree(c->d_vox_inst);
    c->d_vox_models = c->d_vox_bricks = c->d_vox_colours = c->d_vox_inst = NULL;
    cudaFree(c->d_alpha);
    cudaFree(c->d_tex_recs);
    cudaFree(c->d_texels8);
    cudaFree(c->d_texelsf);
    cudaFree(c->d_srgb);
    c->d_alpha = c->d_tex_recs = c->d_texels8 = c->d_texelsf = c->d_srgb = NULL;
    c->tex_bytes = 0;
    c->tex_seconds = 0;
}

/* The spill region: one interleaved slot array per resident thread, grown on demand. */
static int ensure_spill(cuda_ctx *c, size_t words, char *err, size_t err_size)
{
    if (words <= c->spill_words) return 0;
    cudaFree(c->d_spill);
    c->d_spill = NULL;
    c->spill_words = 0;
    CUDA_TRY(cudaMalloc((void **)&c->d_spill, words * sizeof(uint32_t)));
    c->spill_words = words;
    note_memory(c);
    return 0;
}

static int copy_up(void **dst, const void *src, size_t bytes, char *err, size_t err_size)
{
    if (!bytes) {
        *dst = NULL;
        return 0;
    }
    CUDA_TRY(cudaMalloc(dst, bytes));
    CUDA_TRY(cudaMemcpy(*dst, src, bytes, cudaMemcpyHostToDevice));
    return 0;
}

/* The scene's cut-out records and texture pool (bk_material.h): once per scene, read by the
 * traversal (alpha-tested leaves) and the bake (albedo and emission maps) alike. Our own bilinear
 * fetch on plain device memory, not texture objects: the hardware filter's 8-bit weights would
 * make a GPU texel differ from the CPU's. */
static int upload_surface(cuda_ctx *c, const bk_accel_view *scene, char *err, size_t err_size)
{
    const bk_tex_view *t = &scene->tex;
    const double       t0 = now_seconds();
    const uint64_t     need = sizeof(bk_f4) * 2 * (uint64_t)scene->alpha_count +
                          sizeof(bk_tex_rec) * (uint64_t)t->rec_count + 4 * t->texel8_count +
                          sizeof(bk_f4) * t->texelf_count;
    size_t dfree = 0, dtotal = 0;
    if (need && cudaMemGetInfo(&dfree, &dtotal) == cudaSuccess && need > dfree) {
        snprintf(err, err_size,
                 "the scene's textures need %.2f GB of GPU memory, %.2f GB are free: use smaller textures or "
                 "--backend cpu",
                 need / 1e9, dfree / 1e9);
        return -1;
    }
    if (copy_up(&c->d_alpha, scene->alpha, sizeof(bk_f4) * 2 * (size_t)scene->alpha_count, err, err_size) ||
        copy_up(&c->d_tex_recs, t->recs, sizeof(bk_tex_rec) * (size_t)t->rec_count, err, err_size) ||
        copy_up(&c->d_texels8, t->texels8, sizeof(uint32_t) * (size_t)t->texel8_count, err, err_size) ||
        copy_up(&c->d_texelsf, t->texelsf, sizeof(bk_f4) * (size_t)t->texelf_count, err, err_size) ||
        copy_up(&c->d_srgb, t->srgb, t->rec_count ? sizeof(float) * 256 : 0, err, err_size))
        return -1;
    CUDA_TRY(cudaDeviceSynchronize());
    c->tex_seconds = now_seconds() - t0;
    c->tex_bytes = need;
    c->view.alpha = (const bk_f4 *)c->d_alpha;
    c->view.tex.recs = (const bk_tex_rec *)c->d_tex_recs;
    c->view.tex.texels8 = (const uint32_t *)c->d_texels8;
    c->view.tex.texelsf = (const bk_f4 *)c->d_texelsf;
    c->view.tex.srgb = (const float *)c->d_srgb;
    return 0;
}

static int cuda_upload(bk_backend *be, const bk_accel_view *scene, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    release_scene(c);
    c->view = *scene;
    if (copy_up(&c->d_tris, scene->tris, sizeof(bk_f4) * 3 * (size_t)scene->tri_count, err, err_size)) return -1;
    c->view.tris = (const bk_f4 *)c->d_tris;
    if (copy_up(&c->d_vox_models, scene->vox_models, sizeof(bk_vox_model_rec) * (size_t)scene->vox_model_count, err,
                err_size) ||
        copy_up(&c->d_vox_bricks, scene->vox_bricks, sizeof(bk_vox_brick) * (size_t)scene->vox_brick_count, err,
                err_size) ||
        copy_up(&c->d_vox_colours, scene->vox_colours, (size_t)scene->vox_colour_count, err, err_size) ||
        copy_up(&c->d_vox_inst, scene->vox_inst, 2 * sizeof(uint32_t) * (size_t)scene->vox_instance_count, err,
                err_size))
        return -1;
    c->view.vox_models = (const bk_vox_model_rec *)c->d_vox_models;
    c->view.vox_bricks = (const bk_vox_brick *)c->d_vox_bricks;
    c->view.vox_colours = (const uint8_t *)c->d_vox_colours;
    c->view.vox_inst = (const uint32_t *)c->d_vox_inst;
    if (upload_surface(c, scene, err, err_size)) return -1;
    if (scene->type == BK_ACCEL_BVH) {
        if (copy_up(&c->d_nodes, scene->bvh_nodes, sizeof(bk_bvh_node) * (size_t)scene->bvh_node_count, err, err_size))
            return -1;
        c->view.bvh_nodes = (const bk_bvh_node *)c->d_nodes;
        c->host_bin = *scene; /* collapsed into the compressed layout when first asked for */
    } else {
        if (copy_up(&c->d_nodes, scene->kd_nodes, sizeof(bk_kd_node) * (size_t)scene->kd_node_count, err, err_size) ||
            copy_up(&c->d_refs, scene->kd_refs, sizeof(uint32_t) * (size_t)scene->kd_ref_count, err, err_size))
            return -1;
        c->view.kd_nodes = (const bk_kd_node *)c->d_nodes;
        c->view.kd_refs = (const uint32_t *)c->d_refs;
    }
    note_memory(c);
    return 0;
}

/* The view traced with options o: the compressed wide BVH when they ask for it (--accel cwbvh),
 * else the binary layout, which is the faster one on the H100 (bench trace, 4M diffuse rays,
 * global stack, Mrays/s closest / any, same run; gpu-pack/run23.sh):
 *   sponza            binary 1396 / 2691   compressed 979 / 1611
 *   dragon_vrip_res2  binary  935 / 1041   compressed 570 /  784
 * The compressed layout visits a third of the nodes, but its 8-child test costs about 250
 * instructions where the binary node's costs about 40, and the binary tree of these scenes sits in
 * the H100's caches (87 % L1 and 91 % L2 hits), so the bandwidth it saves buys nothing here. */
static const bk_accel_view *cuda_view(cuda_ctx *c, const bk_trace_opts *o, char *err, size_t err_size)
{
    if (o->bvh_width != 8) return &c->view;
    if (!c->cw_tried) {
        c->cw_tried = 1;
        bk_accel_view    hv;
        struct bk_cwbvh *cw = c->host_bin.type == BK_ACCEL_BVH ? bk_backend_cw_layout(&c->host_bin, &hv) : NULL;
        if (cw) {
            int bad =
                copy_up(&c->d_cw_nodes, hv.cw_nodes, sizeof(bk_cw_node) * (size_t)hv.cw_node_count, err, err_size) ||
                copy_up(&c->d_cw_recs, hv.tris, sizeof(bk_f4) * 3 * (size_t)hv.tri_count, err, err_size);
            bk_backend_cw_free(cw);
            if (bad) return NULL;
            note_memory(c);
            c->cw_view = c->view;
            c->cw_view.type = BK_ACCEL_CWBVH;
            c->cw_view.depth = hv.depth;
            c->cw_view.tris = (const bk_f4 *)c->d_cw_recs;
            c->cw_view.cw_nodes = (const bk_cw_node *)c->d_cw_nodes;
            c->cw_view.cw_node_count = hv.cw_node_count;
        }
    }
    /* a scene the layout does not take (voxels, a KD-tree, a degenerate tree) keeps its own */
    return c->cw_view.type == BK_ACCEL_CWBVH ? &c->cw_view : &c->view;
}

/* Room for n rays' keys and indices and their sort, and the sort's context (made on first use,
 * with a first sort of two keys: the kernels' modules load at their first launch, which would
 * otherwise be timed); with copy, room for the rays and hits in sorted order too (and a first
 * launch of the copying kernels, with nothing to copy). */
static int order_reserve(cuda_ctx *c, uint64_t n, int copy, char *err, size_t err_size)
{
    int fresh = 0;
    if (!c->prim) {
        CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c->key_blocks, ray_key_kernel, BLOCK, 0));
        if (c->key_blocks < 1) c->key_blocks = 1;
        if (!(c->prim = bk_gpu_ops_init_device(c->device, err, err_size))) return -1;
        fresh = 1;
    }
    if (n > c->order_cap) {
        cudaFree(c->d_order_keys);
        cudaFree(c->d_order);
        cudaFree(c->d_sorted_keys);
        cudaFree(c->d_sorted);
        c->d_order_keys = c->d_order = c->d_sorted_keys = c->d_sorted = NULL;
        c->order_cap = 0;
        CUDA_TRY(cudaMalloc((void **)&c->d_order_keys, n * sizeof(uint32_t)));
        CUDA_TRY(cudaMalloc((void **)&c->d_order, n * sizeof(uint32_t)));
        CUDA_TRY(cudaMalloc((void **)&c->d_sorted_keys, n * sizeof(uint32_t)));
        CUDA_TRY(cudaMalloc((void **)&c->d_sorted, n * sizeof(uint32_t)));
        if (bk_gpu_ops_sort_reserve_u32(c->prim, n, err, err_size)) return -1;
        c->order_cap = n;
        note_memory(c);
    }
    if (fresh && n >= 2) {
        bk_vec3 zero = bk_v3(0.0f, 0.0f, 0.0f);
        ray_key_kernel<<<1, BLOCK>>>(c->d_rays, 2, zero, zero, 0, c->d_order_keys, c->d_order);
        CUDA_TRY(cudaGetLastError());
        if (bk_gpu_ops_sort_pairs_u32(c->prim, c->d_order_keys, c->d_sorted_keys, c->d_order, c->d_sorted, 2,
                                      BK_RAY_ORDER_KEY_BITS, err, err_size))
            return -1;
    }
    if (copy && n > c->copy_cap) {
        const int first = c->copy_cap == 0;
        cudaFree(c->d_rays_sorted);
        cudaFree(c->d_hits_sorted);
        c->d_rays_sorted = NULL;
        c->d_hits_sorted = NULL;
        c->copy_cap = 0;
        CUDA_TRY(cudaMalloc((void **)&c->d_rays_sorted, n * sizeof(bk_ray)));
        CUDA_TRY(cudaMalloc((void **)&c->d_hits_sorted, n * sizeof(bk_hit)));
        c->copy_cap = n;
        note_memory(c);
        if (first) {
            ray_gather_kernel<<<1, BLOCK>>>(c->d_rays, c->d_sorted, 0, c->d_rays_sorted);
            CUDA_TRY(cudaGetLastError());
            hit_scatter_kernel<<<1, BLOCK>>>(c->d_hits_sorted, NULL, c->d_sorted, 0, c->d_hits, NULL);
            CUDA_TRY(cudaGetLastError());
        }
    }
    return 0;
}

/* Copy the rays into order (order_copy 2) unless told otherwise: each thread then reads its ray
 * from where the one before it ended, as in a file sorted beforehand, at the price of a copy of the
 * rays and a scatter of the hits; 0 = through the indices (1). */
#ifndef BK_CUDA_ORDER_COPY
#define BK_CUDA_ORDER_COPY 0
#endif

/* The order cuda_trace traces n rays in: o->ray_order, or for auto input when they are few, or
 * the scene's tree fits in an SM's cache (BK_RAY_ORDER_CACHED_BYTES), or sampled neighbours mostly
 * share their coarse bin (the file is coherent already: a sort would cost and save nothing), else
 * binned; the sampling (on the host, which holds the rays) is timed
 * into *sample_s, its share into totals->coherence. The sort takes fewer than 2^30 pairs: a
 * larger batch is traced as it comes. */
static int pick_order(const cuda_ctx *c, const bk_trace_opts *o, const bk_ray *rays, uint64_t n, bk_vec3 scale,
                      bk_trace_totals *totals, double *sample_s)
{
    if (n >= (1ull << 30) || o->ray_order == BK_RAY_ORDER_INPUT) return BK_RAY_ORDER_INPUT;
    if (o->ray_order != BK_RAY_ORDER_AUTO) return o->ray_order;
    if (n < BK_RAY_ORDER_AUTO_MIN || bk_accel_view_bytes(&c->view) <= BK_RAY_ORDER_CACHED_BYTES)
        return BK_RAY_ORDER_INPUT;
    const double s0 = now_seconds();
    totals->coherence = bk_ray_order_coherence(rays, n, c->view.lo, scale);
    *sample_s = now_seconds() - s0;
    return totals->coherence < BK_RAY_ORDER_COHERENT ? BK_RAY_ORDER_BINNED : BK_RAY_ORDER_INPUT;
}

/* The rays' keys (the top bits of bk_ray_order_key) and their sort into c->d_sorted, and with copy
 * the rays copied into that order, queued on the default stream. */
static int order_launch(cuda_ctx *c, uint64_t n, bk_vec3 scale, int bits, int copy, unsigned blocks, char *err,
                        size_t err_size)
{
    ray_key_kernel<<<blocks, BLOCK>>>(c->d_rays, n, c->view.lo, scale, BK_RAY_ORDER_KEY_BITS - bits, c->d_order_keys,
                                      c->d_order);
    CUDA_TRY(cudaGetLastError());
    if (bk_gpu_ops_sort_pairs_u32(c->prim, c->d_order_keys, c->d_sorted_keys, c->d_order, c->d_sorted, n, bits, err,
                                  err_size))
        return -1;
    if (copy) {
        ray_gather_kernel<<<blocks, BLOCK>>>(c->d_rays, c->d_sorted, n, c->d_rays_sorted);
        CUDA_TRY(cudaGetLastError());
    }
    return 0;
}

static int cuda_trace(bk_backend *be, const bk_ray *rays, bk_hit *hits, uint64_t n, const bk_trace_opts *o,
                      bk_trace_totals *totals, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    memset(totals, 0, sizeof *totals);
    totals->rays = n;
    totals->coherence = -1.0;
    if (!cuda_supports(be, o, err, err_size)) return -1;
    if (o->reg_cap) {
        snprintf(err, err_size, "register caps apply to the bake kernel only, not to trace");
        return -1;
    }
    if (!c->d_tris) {
        snprintf(err, err_size, "cuda trace before upload");
        return -1;
    }
    if (n == 0) return 0;
    if (n > c->ray_cap) {
        cudaFree(c->d_rays);
        cudaFree(c->d_hits);
        c->d_rays = NULL;
        c->d_hits = NULL;
        c->ray_cap = 0;
        CUDA_TRY(cudaMalloc((void **)&c->d_rays, n * sizeof(bk_ray)));
        CUDA_TRY(cudaMalloc((void **)&c->d_hits, n * sizeof(bk_hit)));
        c->ray_cap = n;
        note_memory(c);
    }
    const bk_accel_view *view = cuda_view(c, o, err, err_size);
    if (!view) return -1;
    kernel_fn k = pick_kernel(view, o);
    if (!k) {
        snprintf(err, err_size, "no trace kernel for this accel, stack and primitive type");
        return -1;
    }
    int    width = bk_stack_width(view->type, o->stack_mode);
    size_t smem = bk_stack_shared_bytes(o->stack_mode, o->stack_size, width, BLOCK);
    if (smem > 48 * 1024) CUDA_TRY(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, BLOCK, smem));
    if (per_sm < 1) {
        snprintf(err, err_size, "the trace kernel does not fit on the GPU with --stack-size %d", o->stack_size);
        return -1;
    }
    uint64_t blocks = (uint64_t)per_sm * (uint64_t)c->sm_count;
    uint64_t need = (n + BLOCK - 1) / BLOCK;
    if (blocks > need) blocks = need;
    size_t nthreads = (size_t)blocks * BLOCK;
    if (bk_stack_spills(o->stack_mode) && ensure_spill(c, nthreads * BK_STACK_ENTRIES * (size_t)width, err, err_size))
        return -1;
    double t0 = now_seconds();
    CUDA_TRY(cudaMemcpy(c->d_rays, rays, n * sizeof(bk_ray), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemset(c->d_hits, 0xAB, n * sizeof(bk_hit))); /* poison: unwritten hits show */
    CUDA_TRY(cudaMemset(c->d_stats, 0, STAT_COUNT * sizeof(unsigned long long)));
    const bk_vec3 order_scale = bk_ray_order_scale(c->view.lo, c->view.hi);
    double        sample_s = 0.0;
    const int     order = pick_order(c, o, rays, n, order_scale, totals, &sample_s);
    const int     sorted = order != BK_RAY_ORDER_INPUT, bits = bk_ray_order_bits(o);
    const int     copy = sorted && (o->order_copy ? o->order_copy == 2 : BK_CUDA_ORDER_COPY);
    if (sorted && order_reserve(c, n, copy, err, err_size)) return -1;
    uint32_t *d_ray_stats = NULL, *d_stats_sorted = NULL;
    if (o->ray_stats) {
        CUDA_TRY(cudaMalloc((void **)&d_ray_stats, n * sizeof(uint32_t)));
        if (copy) {
            cudaError_t e = cudaMalloc((void **)&d_stats_sorted, n * sizeof(uint32_t));
            if (e != cudaSuccess) cudaFree(d_ray_stats);
            CUDA_TRY(e);
        }
        note_memory(c);
    }
    if (copy) CUDA_TRY(cudaMemset(c->d_hits_sorted, 0xAB, n * sizeof(bk_hit))); /* poison these too */
    double t1 = now_seconds();
    CUDA_TRY(cudaEventRecord(c->ev0));
    uint64_t kblocks = (uint64_t)(c->key_blocks > 0 ? c->key_blocks : 1) * (uint64_t)c->sm_count;
    if (kblocks > need) kblocks = need;
    if (sorted && order_launch(c, n, order_scale, bits, copy, (unsigned)kblocks, err, err_size)) return -1;
    CUDA_TRY(cudaEventRecord(c->ev_sorted));
    k<<<(unsigned)blocks, BLOCK, smem>>>(*view, copy ? c->d_rays_sorted : c->d_rays,
                                         copy ? c->d_hits_sorted : c->d_hits, n, o->stack_size, c->d_spill, c->d_stats,
                                         copy ? d_stats_sorted : d_ray_stats, sorted && !copy ? c->d_sorted : NULL);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaEventRecord(c->ev_traced));
    if (copy) {
        hit_scatter_kernel<<<(unsigned)kblocks, BLOCK>>>(c->d_hits_sorted, d_stats_sorted, c->d_sorted, n, c->d_hits,
                                                         d_ray_stats);
        CUDA_TRY(cudaGetLastError());
    }
    CUDA_TRY(cudaEventRecord(c->ev1));
    CUDA_TRY(cudaEventSynchronize(c->ev1));
    float ms = 0, sort_ms = 0, back_ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, c->ev0, c->ev1));
    CUDA_TRY(cudaEventElapsedTime(&sort_ms, c->ev0, c->ev_sorted));
    CUDA_TRY(cudaEventElapsedTime(&back_ms, c->ev_traced, c->ev1));
    cudaFree(d_stats_sorted);
    double             t2 = now_seconds();
    unsigned long long st[STAT_COUNT];
    CUDA_TRY(cudaMemcpy(hits, c->d_hits, n * sizeof(bk_hit), cudaMemcpyDeviceToHost));
    CUDA_TRY(cudaMemcpy(st, c->d_stats, sizeof st, cudaMemcpyDeviceToHost));
    if (d_ray_stats) {
        cudaError_t e = cudaMemcpy(o->ray_stats, d_ray_stats, n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
        cudaFree(d_ray_stats);
        CUDA_TRY(e);
    }
    double t3 = now_seconds();
    totals->seconds = ms * 1e-3 + sample_s;
    totals->sort_seconds = sample_s + (sorted ? (sort_ms + back_ms) * 1e-3 : 0.0);
    totals->sorted = sorted;
    totals->order_bits = sorted ? bits : 0;
    totals->upload_seconds = (t1 - t0 - sample_s) + (t3 - t2); /* (the sampling counts in seconds) */
    totals->nodes = st[STAT_NODES];
    totals->tris = st[STAT_TRIS];
    totals->restarts = st[STAT_RESTARTS];
    totals->spills = st[STAT_SPILLS];
    return 0;
}

/* ---- bake ------------------------------------------------------------------------------------ */

/* The bake's buffers but its texels, which the denoiser may use after bake_end (cuda_denoise). */
static void release_bake_data(cuda_ctx *c)
{
    cudaFree(c->d_btris);
    cudaFree(c->d_mats);
    cudaFree(c->d_emit_tris);
    cudaFree(c->d_emit_cdf);
    cudaFree(c->d_points);
    cudaFree(c->d_out);
    cudaFree(c->d_sq);
    cudaFree(c->d_ext);
    c->d_ext = NULL;
    c->ext_n = 0;
    cudaFree(c->d_pos);
    c->d_btris = c->d_mats = c->d_emit_tris = c->d_emit_cdf = c->d_points = NULL;
    cudaFree(c->d_tri_uv);
    cudaFree(c->d_emit_sub);
    cudaFree(c->d_emit_grid);
    cudaFree(c->d_emit_lum);
    c->d_tri_uv = c->d_emit_sub = c->d_emit_grid = c->d_emit_lum = NULL;
    cudaFree(c->d_tsrc_uv);
    cudaFree(c->d_tsrc_page);
    cudaFree(c->d_tsrc_n);
    cudaFree(c->d_trefs);
    c->d_tsrc_uv = c->d_tsrc_page = c->d_tsrc_n = NULL;
    c->d_trefs = NULL;
    c->refs_cap = 0;
    c->tsrc_ready = 0;
    c->d_out = NULL;
    c->d_sq = NULL;
    c->d_pos = NULL;
}

static void release_bake(cuda_ctx *c)
{
    if (c->up_pending) { /* (a copy in flight writes d_texels and reads the caller's slice) */
        c->up_pending = 0;
        (void)cudaEventSynchronize(c->ev_up);
    }
    release_bake_data(c);
    cudaFree(c->d_texels);
    c->d_texels = NULL;
    c->texel_count = 0;
}

static int cuda_bake_begin(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, char *err,
                           size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    release_bake(c);
    c->bake = *v;
    c->bake.accel = c->view;
    if (copy_up(&c->d_btris, v->tris, sizeof(bk_f4) * 3 * (size_t)v->tri_count, err, err_size) ||
        copy_up(&c->d_mats, v->materials, sizeof(bk_f4) * 2 * (size_t)v->material_count, err, err_size) ||
        copy_up(&c->d_emit_tris, v->emit_tris, sizeof(uint32_t) * (size_t)v->emit_count, err, err_size) ||
        copy_up(&c->d_emit_cdf, v->emit_cdf, sizeof(float) * (size_t)v->emit_count, err, err_size) ||
        copy_up(&c->d_points, v->points, sizeof(bk_f4) * 2 * (size_t)v->point_count, err, err_size) ||
        copy_up(&c->d_tri_uv, v->tri_uv, v->tri_uv ? sizeof(bk_f4) * 2 * (size_t)v->tri_count : 0, err, err_size) ||
        copy_up(&c->d_emit_sub, v->emit_sub, v->emit_sub ? sizeof(uint32_t) * (size_t)v->emit_count : 0, err,
                err_size) ||
        copy_up(&c->d_emit_grid, v->emit_grid, v->emit_grid ? sizeof(uint32_t) * (size_t)v->tri_count : 0, err,
                err_size) ||
        copy_up(&c->d_emit_lum, v->emit_lum, v->emit_lum ? sizeof(float) * (size_t)v->emit_lum_count : 0, err,
                err_size))
        return -1;
    if (texels) {
        if (copy_up((void **)&c->d_texels, texels, sizeof(bk_texel) * (size_t)n, err, err_size)) return -1;
    } else if (n) {
        CUDA_TRY(cudaMalloc((void **)&c->d_texels, sizeof(bk_texel) * (size_t)n)); /* filled by cuda_bake_texels */
    }
    c->bake.tris = (const bk_f4 *)c->d_btris;
    c->bake.materials = (const bk_f4 *)c->d_mats;
    c->bake.emit_tris = (const uint32_t *)c->d_emit_tris;
    c->bake.emit_cdf = (const float *)c->d_emit_cdf;
    c->bake.points = (const bk_f4 *)c->d_points;
    c->bake.tri_uv = (const bk_f4 *)c->d_tri_uv;
    c->bake.emit_sub = (const uint32_t *)c->d_emit_sub;
    c->bake.emit_grid = (const uint32_t *)c->d_emit_grid;
    c->bake.emit_lum = (const float *)c->d_emit_lum;
    CUDA_TRY(cudaMalloc((void **)&c->d_out, sizeof(bk_f4) * (n ? n : 1)));
    CUDA_TRY(cudaMemset(c->d_out, 0, sizeof(bk_f4) * (n ? n : 1))); /* the sums start at zero */
    CUDA_TRY(cudaMalloc((void **)&c->d_sq, sizeof(float) * (n ? n : 1)));
    CUDA_TRY(cudaMemset(c->d_sq, 0, sizeof(float) * (n ? n : 1)));
    CUDA_TRY(cudaMalloc((void **)&c->d_pos, sizeof(float) * 3 * (n ? n : 1)));
    note_memory(c); /* the bake's largest moment: scene, shading data, texels, sums */
    CUDA_TRY(cudaMemset(c->d_stats, 0, STAT_COUNT * sizeof(unsigned long long)));
    c->texel_count = n;
    c->bake_seconds = 0;
    return 0;
}

/* Dynamic shared memory of a bake block: the short/spill stack's fast part, its entries as wide as
 * the traced accel's (the layout in use: `c->view` or the compressed one). Shared memory a block
 * does not use is taken from the SM's L1 cache, which holds the nodes. */
static size_t bake_smem(const cuda_ctx *c, const bk_trace_opts *o)
{
    const int accel = o->bvh_width == 8 && c->view.type == BK_ACCEL_BVH ? BK_ACCEL_CWBVH : c->view.type;
    return bk_stack_shared_bytes(o->stack_mode, o->stack_size, bk_stack_width(accel, o->stack_mode), BLOCK);
}

/* After a launch of `blocks` blocks with recording on: adds its warps' records to *occ (the
 * formula is in backend.h, bk_occupancy). */
static int add_occupancy(cuda_ctx *c, unsigned blocks, bk_occupancy *occ, char *err, size_t err_size)
{
    const unsigned wpb = BLOCK / 32;
    size_t         warps = (size_t)blocks * wpb;
    CUDA_TRY(cudaMemcpy(c->h_rec, c->d_rec, warps * sizeof(bk_warp_rec), cudaMemcpyDeviceToHost));
    unsigned long long lo = ~0ull, hi = 0;
    double             warp_ns = 0, block_ns = 0;
    unsigned char      seen[4096];
    memset(seen, 0, sizeof seen);
    uint32_t sms = 0;
    for (unsigned b = 0; b < blocks; ++b) {
        unsigned long long blo = ~0ull, bhi = 0;
        for (unsigned w = 0; w < wpb; ++w) {
            const bk_warp_rec *r = &c->h_rec[(size_t)b * wpb + w];
            if (r->end < r->start || r->end == 0) continue; /* not written: cannot happen, but never trust it */
            warp_ns += (double)(r->end - r->start);
            if (r->start < blo) blo = r->start;
            if (r->end > bhi) bhi = r->end;
            if (r->smid < sizeof seen && !seen[r->smid]) {
                seen[r->smid] = 1;
                sms++;
            }
        }
        if (bhi > blo) block_ns += (double)(bhi - blo) * wpb;
        if (blo < lo) lo = blo;
        if (bhi > hi) hi = bhi;
    }
    if (hi <= lo) return 0;
    occ->warp_ns += warp_ns;
    occ->block_ns += block_ns;
    occ->capacity_ns += (double)c->sm_count * (double)(hi - lo) * (double)c->max_warps_per_sm;
    occ->launches++;
    if (sms > occ->sms_used) occ->sms_used = sms;
    return 0;
}

static int cuda_bake_texels(bk_backend *be, uint32_t first, uint32_t count, const bk_texel *texels, char *err,
                            size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (!c->d_out) {
        snprintf(err, err_size, "bake_texels without bake_begin");
        return -1;
    }
    if (first > c->texel_count || count > c->texel_count - first) {
        snprintf(err, err_size, "texels %u..%u out of %u", first, first + count, c->texel_count);
        return -1;
    }
    /* the copy of the call before is done before this one returns (backend.h): its slice is the
     * caller's again; this one's goes up while the host makes the next (page-locked: asynchronous) */
    if (c->up_pending) {
        c->up_pending = 0;
        CUDA_TRY(cudaEventSynchronize(c->ev_up));
    }
    if (count) {
        CUDA_TRY(
            cudaMemcpyAsync(c->d_texels + first, texels, sizeof(bk_texel) * (size_t)count, cudaMemcpyHostToDevice, 0));
        CUDA_TRY(cudaEventRecord(c->ev_up, 0));
        c->up_pending = 1;
    }
    return 0;
}

/* Texels [first, first + count) made here from their refs (backend.h, bake_refs): src's arrays go
 * up at the first call of a bake, then each call's refs, 8 B a texel instead of 32. */
static int cuda_bake_refs(bk_backend *be, const bk_texel_src *src, uint32_t first, uint32_t count,
                          const bk_texel_ref *refs, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (!c->d_out) {
        snprintf(err, err_size, "bake_refs without bake_begin");
        return -1;
    }
    if (first > c->texel_count || count > c->texel_count - first) {
        snprintf(err, err_size, "texels %u..%u out of %u", first, first + count, c->texel_count);
        return -1;
    }
    if (src->tri_count != c->bake.tri_count || src->width <= 0 || src->height <= 0) {
        snprintf(err, err_size, "texel refs over %u triangles of %dx%d pages, the bake has %u triangles",
                 src->tri_count, src->width, src->height, c->bake.tri_count);
        return -1;
    }
    if (!c->tsrc_ready) {
        const size_t nt = src->tri_count;
        if (copy_up(&c->d_tsrc_uv, src->uv, sizeof(float) * 6 * nt, err, err_size) ||
            copy_up(&c->d_tsrc_page, src->tri_page, src->tri_page ? sizeof(uint32_t) * nt : 0, err, err_size) ||
            copy_up(&c->d_tsrc_n, src->tri_n, src->tri_n ? sizeof(float) * 9 * nt : 0, err, err_size))
            return -1;
        c->tsrc = *src;
        c->tsrc.uv = (const float *)c->d_tsrc_uv;
        c->tsrc.tri_page = (const uint32_t *)c->d_tsrc_page;
        c->tsrc.tri_n = (const float *)c->d_tsrc_n;
        c->tsrc_ready = 1;
    }
    if (!count) return 0;
    if (count > c->refs_cap) {
        cudaFree(c->d_trefs);
        c->d_trefs = NULL;
        c->refs_cap = 0;
        CUDA_TRY(cudaMalloc((void **)&c->d_trefs, sizeof(bk_texel_ref) * (size_t)count));
        c->refs_cap = count;
        note_memory(c);
    }
    CUDA_TRY(cudaMemcpy(c->d_trefs, refs, sizeof(bk_texel_ref) * (size_t)count, cudaMemcpyHostToDevice));
    CUDA_TRY(bk_cuda_make_texels(&c->tsrc, (const bk_f4 *)c->d_btris, c->d_trefs, count, c->d_texels + first));
    CUDA_TRY(cudaDeviceSynchronize()); /* the next slice's refs go where this one's are read */
    return 0;
}

/* The wavefront bake's path slots per thread of its trace kernels' grid: sponza 1024^2, 64 spp,
 * 2 bounces, on an H100 with 4, 8, 16 and 32 of them: 960, 1047, 1131 and 1194 Mrays/s (each
 * slot costs about 170 B of device memory). WAVE_WHOLE: the unocclude pass's (164 B each), which
 * traces 8 + BK_INSIDE_RAYS rays per texel of a launch's first sample only. */
#define WAVE_RAYS_PER_THREAD  32
#define WAVE_WHOLE_PER_THREAD 4
/* Results (20 B each) of texel samples kept at once: a launch's samples beyond it run in turns. */
#define WAVE_PAIRS (8u << 20)

static int cuda_bake_run(bk_backend *be, uint32_t begin, uint32_t end, const bk_bake_params *p, const bk_trace_opts *o,
                         char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (!cuda_supports(be, o, err, err_size)) return -1;
    if (!c->d_out) {
        snprintf(err, err_size, "bake_run without bake_begin");
        return -1;
    } /* texels stay after bake_end */
    if (end > c->texel_count || begin > end) {
        snprintf(err, err_size, "bake range %u..%u out of %u texels", begin, end, c->texel_count);
        return -1;
    }
    if (begin == end) return 0;
    const uint32_t ne = bk_bake_ext_count(p);
    if (c->d_ext && ne != c->ext_n) {
        snprintf(err, err_size, "bake_run with %u extra sums after %u", ne, c->ext_n);
        return -1;
    }
    if (ne && !c->d_ext) {
        const size_t bytes = ne * sizeof(bk_f4) * (c->texel_count ? c->texel_count : 1);
        CUDA_TRY(cudaMalloc((void **)&c->d_ext, bytes));
        CUDA_TRY(cudaMemset(c->d_ext, 0, bytes)); /* the sums start at zero */
        c->ext_n = ne;
        note_memory(c);
    }
    size_t smem = bake_smem(c, o);
    int    per_sm = 0;
    CUDA_TRY(bk_cuda_bake_occupancy(o->stack_mode, o->reg_cap, BLOCK, smem, &per_sm));
    if (per_sm < 1) {
        snprintf(err, err_size, "the bake kernel does not fit on the GPU with --stack-size %d", o->stack_size);
        return -1;
    }
    uint64_t blocks = (uint64_t)per_sm * (uint64_t)c->sm_count, need = ((uint64_t)(end - begin) + BLOCK - 1) / BLOCK;
    if (blocks > need) blocks = need;
    size_t nthreads = (size_t)blocks * BLOCK;
    if (bk_stack_spills(o->stack_mode) &&
        ensure_spill(c, nthreads * BK_STACK_ENTRIES * (size_t)BK_STACK_WIDTH, err, err_size))
        return -1;
    bk_warp_rec *rec = NULL;
    if (o->occupancy) {
        size_t warps = nthreads / 32;
        if (warps > c->rec_cap) {
            cudaFree(c->d_rec);
            free(c->h_rec);
            c->d_rec = NULL;
            c->rec_cap = 0;
            c->h_rec = (bk_warp_rec *)malloc(warps * sizeof(bk_warp_rec));
            if (!c->h_rec) {
                snprintf(err, err_size, "out of memory for %zu warp records", warps);
                return -1;
            }
            CUDA_TRY(cudaMalloc((void **)&c->d_rec, warps * sizeof(bk_warp_rec)));
            c->rec_cap = warps;
            note_memory(c);
        }
        CUDA_TRY(cudaMemset(c->d_rec, 0, warps * sizeof(bk_warp_rec)));
        rec = c->d_rec;
    }
    CUDA_TRY(cudaEventRecord(c->ev0));
    bk_bake_view         bv = c->bake;
    const bk_accel_view *view = cuda_view(c, o, err, err_size);
    if (!view) return -1;
    bv.accel = *view;
    if (o->wavefront) {
        /* as many trace blocks as fit at once (the two groups' trace kernels run side by side,
           each with a spill region of its own) */
        CUDA_TRY(bk_cuda_wave_occupancy(view, o->stack_mode, smem, &per_sm));
        if (per_sm < 1) {
            snprintf(err, err_size, "the wavefront trace kernel does not fit on the GPU with --stack-size %d",
                     o->stack_size);
            return -1;
        }
        blocks = (uint64_t)per_sm * (uint64_t)c->sm_count;
        if (bk_stack_spills(o->stack_mode) &&
            ensure_spill(c, 2 * (size_t)blocks * BLOCK * BK_STACK_ENTRIES * (size_t)BK_STACK_WIDTH, err, err_size))
            return -1;
        /* path slots: what keeps the trace kernels' threads busy for several rays per wave
           (measured: with one ray per thread a wave is mostly its slowest rays). Sized once for
           the bake (its texels at 64 samples, at most WAVE_PAIRS) rather than for this launch:
           a launch that reallocates is timed slower, and the driver then sizes the later
           launches smaller (sponza 1024^2, 64 spp, four runs each: 1299-1305 Mrays/s against
           1279-1303 sized per launch, where one earlier run took 22 launches instead of 12) */
        uint64_t pairs = (uint64_t)c->texel_count * 64;
        if (pairs > WAVE_PAIRS) pairs = WAVE_PAIRS;
        if (pairs < end - begin) pairs = end - begin; /* one sample at a time at least */
        const uint64_t threads = (uint64_t)blocks * BLOCK, want = threads * WAVE_RAYS_PER_THREAD;
        const uint64_t slots = want < pairs ? want : pairs, whole_want = threads * WAVE_WHOLE_PER_THREAD;
        const uint64_t whole = whole_want < c->texel_count ? whole_want : (c->texel_count ? c->texel_count : 1);
        CUDA_TRY(bk_cuda_wave_reserve(&c->wave, (uint32_t)(slots ? slots : 1), (uint32_t)whole, (uint32_t)pairs));
        note_memory(c);
        CUDA_TRY(bk_cuda_bake_wave(&c->wave, o->stack_mode, (unsigned)blocks, smem, &bv, p, c->d_texels, c->d_pos,
                                   begin, end, o->stack_size, c->d_spill, c->d_out, c->d_sq, c->d_ext, c->d_stats,
                                   o->ray_order == BK_RAY_ORDER_SORTED));
        rec = NULL; /* occupancy is measured for the megakernel only */
    } else {
        CUDA_TRY(bk_cuda_bake_launch(o->stack_mode, o->reg_cap, (unsigned)blocks, BLOCK, smem, &bv, p, c->d_texels,
                                     c->d_pos, begin, end, o->stack_size, c->d_spill, c->d_out, c->d_sq, c->d_ext,
                                     c->d_stats, rec));
    }
    CUDA_TRY(cudaEventRecord(c->ev1));
    CUDA_TRY(cudaEventSynchronize(c->ev1));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, c->ev0, c->ev1));
    c->bake_seconds += ms * 1e-3;
    if (rec && add_occupancy(c, (unsigned)blocks, o->occupancy, err, err_size)) return -1;
    return 0;
}

static int cuda_kernel_info(bk_backend *be, const bk_trace_opts *o, bk_kernel_info *out, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    memset(out, 0, sizeof *out);
    if (!cuda_supports(be, o, err, err_size)) return -1;
    cudaFuncAttributes fa;
    CUDA_TRY(bk_cuda_bake_attributes(o->stack_mode, o->reg_cap, &fa));
    size_t smem = bake_smem(c, o);
    int    per_sm = 0;
    CUDA_TRY(bk_cuda_bake_occupancy(o->stack_mode, o->reg_cap, BLOCK, smem, &per_sm));
    out->registers = fa.numRegs;
    out->local_bytes = (uint32_t)fa.localSizeBytes;
    out->shared_static = (uint32_t)fa.sharedSizeBytes;
    out->shared_dynamic = (uint32_t)smem;
    out->max_threads = fa.maxThreadsPerBlock;
    out->block = BLOCK;
    out->blocks_per_sm = per_sm;
    out->max_warps_per_sm = c->max_warps_per_sm;
    out->sm_count = c->sm_count;
    out->occupancy = c->max_warps_per_sm ? (double)per_sm * (BLOCK / 32) / (double)c->max_warps_per_sm : 0.0;
    return 0;
}

/* A fetch of texels [begin, end) from sums `have` (NULL: `none` says why): 0 when it may go on. */
static int fetch_check(const cuda_ctx *c, const void *have, const char *none, uint32_t begin, uint32_t end, char *err,
                       size_t err_size)
{
    if (!have) snprintf(err, err_size, "%s", none);
    else if (end > c->texel_count || begin > end)
        snprintf(err, err_size, "fetch range %u..%u out of %u texels", begin, end, c->texel_count);
    else return 0;
    return -1;
}

static int cuda_bake_fetch(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, float *sq, char *err,
                           size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (fetch_check(c, c->d_out, "bake_fetch without bake_begin", begin, end, err, err_size)) return -1;
    if (begin == end) return 0;
    CUDA_TRY(cudaMemcpy(out, c->d_out + begin, sizeof(bk_f4) * (end - begin), cudaMemcpyDeviceToHost));
    if (sq) CUDA_TRY(cudaMemcpy(sq, c->d_sq + begin, sizeof(float) * (end - begin), cudaMemcpyDeviceToHost));
    return 0;
}

static int cuda_bake_fetch_ext(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (fetch_check(c, c->d_ext, "bake_fetch_ext without a bake_run that has extra sums", begin, end, err, err_size))
        return -1;
    if (begin == end) return 0;
    CUDA_TRY(cudaMemcpy(out, c->d_ext + c->ext_n * (size_t)begin, c->ext_n * sizeof(bk_f4) * (end - begin),
                        cudaMemcpyDeviceToHost));
    return 0;
}

/* Probes whose chunks' sums are held at once (28 floats each per chunk): at 16 chunks, 29 MB. */
#define PROBES_PER_PASS (1u << 14)

/* The buffers of one bake_probes call, given back on every way out. */
typedef struct probe_bufs {
    void *pos, *part, *sums;
} probe_bufs;

static int probes_run(cuda_ctx *c, probe_bufs *b, const float *pos, uint32_t n, const bk_bake_params *p,
                      const bk_trace_opts *o, float *sums, char *err, size_t err_size)
{
    const uint32_t chunks = (p->spp + BK_PROBE_CHUNK - 1) / BK_PROBE_CHUNK;
    const uint32_t pass = n < PROBES_PER_PASS ? n : PROBES_PER_PASS;
    if (copy_up(&b->pos, pos, sizeof(float) * 3 * (size_t)n, err, err_size)) return -1;
    CUDA_TRY(cudaMalloc(&b->part, sizeof(float) * BK_PROBE_SUMS * (size_t)pass * chunks));
    CUDA_TRY(cudaMalloc(&b->sums, sizeof(float) * BK_PROBE_SUMS * (size_t)n));
    note_memory(c);
    bk_bake_view         bv = c->bake;
    const bk_accel_view *view = cuda_view(c, o, err, err_size);
    if (!view) return -1;
    bv.accel = *view;
    CUDA_TRY(cudaEventRecord(c->ev0));
    CUDA_TRY(
        bk_cuda_bake_probes(&bv, p, (const float *)b->pos, n, (float *)b->part, pass, (float *)b->sums, c->d_stats));
    CUDA_TRY(cudaEventRecord(c->ev1));
    CUDA_TRY(cudaEventSynchronize(c->ev1));
    float ms = 0;
    CUDA_TRY(cudaEventElapsedTime(&ms, c->ev0, c->ev1));
    c->bake_seconds += ms * 1e-3;
    CUDA_TRY(cudaMemcpy(sums, b->sums, sizeof(float) * BK_PROBE_SUMS * (size_t)n, cudaMemcpyDeviceToHost));
    return 0;
}

static int cuda_bake_probes(bk_backend *be, const float *pos, uint32_t n, const bk_bake_params *p,
                            const bk_trace_opts *o, float *sums, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    if (!cuda_supports(be, o, err, err_size)) return -1;
    if (!c->d_out) {
        snprintf(err, err_size, "bake_probes without bake_begin");
        return -1;
    }
    if (!n || !p->spp) return 0;
    probe_bufs b = { NULL, NULL, NULL };
    int        rc = probes_run(c, &b, pos, n, p, o, sums, err, err_size);
    cudaFree(b.pos);
    cudaFree(b.part);
    cudaFree(b.sums);
    return rc;
}

static int cuda_bake_end(bk_backend *be, bk_f4 *out, float *sq, bk_trace_totals *totals, char *err, size_t err_size)
{
    cuda_ctx *c = ctx_of(be);
    memset(totals, 0, sizeof *totals);
    unsigned long long st[STAT_COUNT];
    if (out && cuda_bake_fetch(be, 0, c->texel_count, out, sq, err, err_size)) return -1;
    CUDA_TRY(cudaMemcpy(st, c->d_stats, sizeof st, cudaMemcpyDeviceToHost));
    totals->seconds = c->bake_seconds;
    totals->nodes = st[STAT_NODES];
    totals->tris = st[STAT_TRIS];
    totals->restarts = st[STAT_RESTARTS];
    totals->spills = st[STAT_SPILLS];
    totals->rays = st[STAT_RAYS];
    release_bake_data(c);
    return 0;
}

/* Charts every stride-th word (bk_texel_ref.tri holding charts) into the device array d, through
 * a host slice of 1M charts (4 MB) at a time, gathered on the pool (on one thread the gather of
 * sponza 4096^2's 15M charts took about 30 ms of the GPU machine's slow cores). */
struct charts_gather {
    uint32_t       *h;
    const uint32_t *chart;
    uint32_t        stride, first;
};

static void charts_gather_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const charts_gather *g = (const charts_gather *)ctx;
    for (size_t i = begin; i < end; ++i) g->h[i] = g->chart[((size_t)g->first + i) * g->stride];
}

static cudaError_t charts_up(uint32_t *d, const uint32_t *chart, uint32_t stride, uint32_t n)
{
    if (stride == 1) return cudaMemcpy(d, chart, sizeof(uint32_t) * (size_t)n, cudaMemcpyHostToDevice);
    const uint32_t slice = n < (1u << 20) ? n : (1u << 20);
    uint32_t      *h = (uint32_t *)malloc(sizeof(uint32_t) * (slice ? slice : 1));
    if (!h) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaSuccess;
    for (uint32_t b = 0; b < n && e == cudaSuccess; b += slice) {
        const uint32_t m = n - b < slice ? n - b : slice;
        charts_gather  g = { h, chart, stride, b };
        bk_parallel_for(m, 65536, charts_gather_fn, &g);
        e = cudaMemcpy(d + b, h, sizeof(uint32_t) * (size_t)m, cudaMemcpyHostToDevice);
    }
    free(h);
    return e;
}

static int cuda_denoise(bk_backend *be, const bk_denoise_params *p, int passes, const bk_texel *tx, uint32_t first,
                        const uint32_t *chart, uint32_t chart_stride, bk_f4 *col, bk_f4 *band, uint32_t n,
                        uint64_t base, double *seconds, char *err, size_t err_size)
{
    cuda_ctx    *c = ctx_of(be);
    const size_t px = (size_t)p->w * (size_t)p->h;
    *seconds = 0.0;
    if (passes <= 0 || n == 0) return 0;
    /* tx NULL: the texels of the last bake, on the device already (cuda_bake_end keeps them) */
    const int kept = !tx;
    if (kept && (!c->d_texels || first > c->texel_count || n > c->texel_count - first)) {
        snprintf(err, err_size, "denoiser: texels %u..%u of a bake of %u kept", first, first + n,
                 c->d_texels ? c->texel_count : 0);
        return -1;
    }
    /* one allocation: the page's four layouts (and two of 3 bands), then the texels (unless kept),
       their charts, colours and bands */
    const size_t page_b = (band ? 10 : 4) * sizeof(bk_f4) * px, tx_b = kept ? 0 : sizeof(bk_texel) * n;
    const size_t ch_b = sizeof(uint32_t) * n, ch_o = page_b + tx_b, col_o = (ch_o + ch_b + 15) & ~(size_t)15;
    const size_t col_b = sizeof(bk_f4) * n, band_b = band ? 3 * col_b : 0;
    char        *d = NULL;
    CUDA_TRY(cudaMalloc((void **)&d, col_o + col_b + band_b));
    note_memory(c);
    bk_texel   *d_tx = kept ? c->d_texels + first : (bk_texel *)(d + page_b);
    uint32_t   *d_chart = (uint32_t *)(d + ch_o);
    bk_f4      *d_col = (bk_f4 *)(d + col_o), *d_band = band ? d_col + n : NULL;
    cudaError_t e = kept ? cudaSuccess : cudaMemcpy(d_tx, tx, tx_b, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = charts_up(d_chart, chart, chart_stride, n);
    if (e == cudaSuccess) e = cudaMemcpy(d_col, col, col_b, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && band) e = cudaMemcpy(d_band, band, band_b, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaEventRecord(c->ev0);
    if (e == cudaSuccess) e = bk_cuda_denoise(p, passes, d_tx, d_chart, d_col, d_band, n, base, (bk_f4 *)d);
    if (e == cudaSuccess) e = cudaEventRecord(c->ev1);
    if (e == cudaSuccess) e = cudaEventSynchronize(c->ev1);
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, c->ev0, c->ev1);
    if (e == cudaSuccess) e = cudaMemcpy(col, d_col, col_b, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess && band) e = cudaMemcpy(band, d_band, band_b, cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess) {
        snprintf(err, err_size, "CUDA: denoiser: %s", cudaGetErrorString(e));
        return -1;
    }
    *seconds = ms * 1e-3;
    return 0;
}

static void cuda_free(bk_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    if (c) {
        release_scene(c);
        release_bake(c);
        cudaFree(c->d_rays);
        cudaFree(c->d_hits);
        cudaFree(c->d_spill);
        cudaFree(c->d_stats);
        cudaFree(c->d_rec);
        free(c->h_rec);
        bk_cuda_wave_free(&c->wave);
        cudaEventDestroy(c->ev0);
        cudaEventDestroy(c->ev1);
        cudaEventDestroy(c->ev_sorted);
        cudaEventDestroy(c->ev_traced);
        cudaEventDestroy(c->ev_up);
        cudaFree(c->d_order_keys);
        cudaFree(c->d_order);
        cudaFree(c->d_sorted_keys);
        cudaFree(c->d_sorted);
        cudaFree(c->d_rays_sorted);
        cudaFree(c->d_hits_sorted);
        bk_gpu_ops_free(c->prim);
        free(c);
    }
    free(be);
}

static void cuda_memory(bk_backend *be, uint64_t *free_bytes, uint64_t *total_bytes)
{
    ctx_of(be);
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) f = t = 0;
    *free_bytes = f;
    *total_bytes = t;
}

static void cuda_caps(bk_backend *be, bk_backend_caps *out)
{
    out->device = ((cuda_ctx *)be->ctx)->device;
    out->devices = 1;
    out->gpu_primitives = 1;
    out->launch_budgets = 1.0;
    out->first_block = 65536; /* what a GPU runs at once, when kernel_info() cannot say */
    out->keeps_texels = 1;    /* d_texels, until the next bake */
}

static uint64_t cuda_memory_peak(bk_backend *be) { return ((cuda_ctx *)be->ctx)->mem_peak; }

/* Page-locked host memory, portable (every device's transfers read it directly): the bake's
 * slices of texels and sums. Plain memory is staged through the driver's own buffers, at about
 * half the speed (sponza 4096^2: 0.5 GB of texels up and 0.3 GB of sums down). malloc'ed, then
 * registered: where the driver cannot lock it, it stays plain memory and only slower. */
static void *cuda_host_alloc(bk_backend *be, size_t bytes)
{
    (void)ctx_of(be);
    const size_t n = bytes ? bytes : 1;
    void        *p = malloc(n);
    if (p && cudaHostRegister(p, n, cudaHostRegisterPortable) != cudaSuccess)
        (void)cudaGetLastError(); /* not sticky: clear it for the launches' checks */
    return p;
}

static void cuda_host_free(bk_backend *be, void *p)
{
    (void)ctx_of(be);
    if (p && cudaHostUnregister(p) != cudaSuccess) (void)cudaGetLastError(); /* it was never locked */
    free(p);
}

static const struct bk_backend_i cuda_iface = {
    .name = cuda_name,
    .supports = cuda_supports,
    .upload = cuda_upload,
    .trace = cuda_trace,
    .bake_begin = cuda_bake_begin,
    .bake_run = cuda_bake_run,
    .bake_fetch = cuda_bake_fetch,
    .bake_end = cuda_bake_end,
    .memory = cuda_memory,
    .memory_peak = cuda_memory_peak,
    .kernel_info = cuda_kernel_info,
    .denoise = cuda_denoise,
    .free = cuda_free,
    .caps = cuda_caps,
    .member = NULL, /* one device */
    .bake_texels = cuda_bake_texels,
    .bake_refs = cuda_bake_refs,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .bake_fetch_ext = cuda_bake_fetch_ext,
    .bake_probes = cuda_bake_probes,
};

extern "C" int bk_cuda_device_count(void)
{
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

extern "C" void bk_cuda_device_release(int device)
{
    if (cudaSetDevice(device) == cudaSuccess) cudaDeviceReset();
}

extern "C" bk_backend *bk_backend_cuda_init_device(int device, char *msg, size_t msg_size)
{
    int         count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(msg, msg_size, "no CUDA device (%s)", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return NULL;
    }
    if (device < 0 || device >= count) {
        snprintf(msg, msg_size, "no CUDA device %d (this machine has %d: 0..%d)", device, count, count - 1);
        return NULL;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
        snprintf(msg, msg_size, "cannot use CUDA device %d", device);
        return NULL;
    }
    cuda_ctx   *c = (cuda_ctx *)calloc(1, sizeof(cuda_ctx));
    bk_backend *be = (bk_backend *)calloc(1, sizeof(bk_backend));
    if (!c || !be) {
        free(c);
        free(be);
        snprintf(msg, msg_size, "out of memory");
        return NULL;
    }
    c->device = device;
    c->sm_count = p.multiProcessorCount;
    c->max_warps_per_sm = p.maxThreadsPerMultiProcessor / p.warpSize;
    snprintf(c->device_name, sizeof c->device_name, "%s", p.name);
    if (cudaMalloc((void **)&c->d_stats, STAT_COUNT * sizeof(unsigned long long)) != cudaSuccess ||
        cudaEventCreate(&c->ev0) != cudaSuccess || cudaEventCreate(&c->ev1) != cudaSuccess ||
        cudaEventCreate(&c->ev_sorted) != cudaSuccess || cudaEventCreate(&c->ev_traced) != cudaSuccess ||
        cudaEventCreateWithFlags(&c->ev_up, cudaEventDisableTiming) != cudaSuccess) {
        snprintf(msg, msg_size, "CUDA device %d (%s) is not usable: %s", device, p.name,
                 cudaGetErrorString(cudaGetLastError()));
        free(c);
        free(be);
        return NULL;
    }
    be->i = &cuda_iface;
    be->ctx = c;
    note_memory(c); /* the context and the counters */
    snprintf(msg, msg_size, "%s, %d SMs", p.name, p.multiProcessorCount);
    return be;
}

extern "C" bk_backend *bk_backend_cuda_init(char *msg, size_t msg_size)
{
    return bk_backend_cuda_init_device(0, msg, msg_size);
}
