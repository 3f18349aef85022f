/* cuda_internal.cuh - what the CUDA files of the backend share: the statistics slots, the block
 * size, and the bake kernel's launcher and facts (kernels/cuda/bake.cu, compiled without FMA
 * contraction). */
#ifndef BK_CUDA_INTERNAL_CUH
#define BK_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>
#include "bk_bake.h"

/* Slots of the device counter array: the work counter, then the traversal statistics. */
enum { STAT_WORK = 0, STAT_NODES, STAT_TRIS, STAT_RESTARTS, STAT_SPILLS, STAT_RAYS, STAT_COUNT };

/* One warp's statistics to global memory: a warp reduction, then one atomic per counter from
 * lane 0. Every lane of the warp must call it. */
static __device__ __forceinline__ void bk_warp_flush_stats(unsigned long long *stats, uint32_t nodes, uint32_t tris,
                                                           uint32_t restarts, uint32_t spills, uint32_t rays)
{
    __syncwarp();
    nodes = __reduce_add_sync(0xffffffffu, nodes);
    tris = __reduce_add_sync(0xffffffffu, tris);
    restarts = __reduce_add_sync(0xffffffffu, restarts);
    spills = __reduce_add_sync(0xffffffffu, spills);
    rays = __reduce_add_sync(0xffffffffu, rays);
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(&stats[STAT_NODES], (unsigned long long)nodes);
        atomicAdd(&stats[STAT_TRIS], (unsigned long long)tris);
        atomicAdd(&stats[STAT_RESTARTS], (unsigned long long)restarts);
        atomicAdd(&stats[STAT_SPILLS], (unsigned long long)spills);
        if (rays) atomicAdd(&stats[STAT_RAYS], (unsigned long long)rays);
    }
}

/* Threads per block of the trace and bake kernels (their __launch_bounds__). */
#define BK_CUDA_BLOCK 128

/* One warp of a bake launch, when achieved occupancy is measured (bk_occupancy in backend.h):
 * globaltimer (ns, one clock for all SMs, unlike clock64) at the warp's start and end, and its SM. */
typedef struct bk_warp_rec {
    unsigned long long start, end; /* 16 B */
    unsigned           smid, pad;  /*  8 B */
} bk_warp_rec;                     /* 24 B */

/* Bake kernels exist for each stack strategy and each register cap of BK_REG_CAPS (backend.h);
 * the functions below return cudaErrorInvalidDeviceFunction for any other pair. */
int         bk_cuda_bake_has(int stack_mode, int reg_cap);
cudaError_t bk_cuda_bake_attributes(int stack_mode, int reg_cap, cudaFuncAttributes *a);
/* Blocks of `block` threads with `smem` bytes of stack that fit on one SM. */
cudaError_t bk_cuda_bake_occupancy(int stack_mode, int reg_cap, int block, size_t smem, int *per_sm);
/* Bakes texels [begin, end) with a grid-stride loop over `blocks` blocks; pos: 3 floats per texel,
 * where the launch of sample 0 leaves each texel's unoccluded position for the later ones (tx is
 * only read); ext: the texels' extra sums (bk_bake_ext_count(p) per texel; directional, shadowmask); rec: NULL, or
 * one record per warp of the grid. */
cudaError_t bk_cuda_bake_launch(int stack_mode, int reg_cap, unsigned blocks, int block, size_t smem,
                                const bk_bake_view *v, const bk_bake_params *p, const bk_texel *tx, float *pos,
                                uint32_t begin, uint32_t end, int stack_size, uint32_t *spill, bk_f4 *out, float *sq,
                                bk_f4 *ext, unsigned long long *stats, bk_warp_rec *rec);

/* Light probes (backend.h, bake_probes) on the device: n probes at d_pos (3 floats each) into
 * d_sums (BK_PROBE_SUMS each), part_probes probes at a time through d_part (their chunks' sums:
 * part_probes x chunks x BK_PROBE_SUMS floats). Asynchronous on the default stream. */
cudaError_t bk_cuda_bake_probes(const bk_bake_view *v, const bk_bake_params *p, const float *d_pos, uint32_t n,
                                float *d_part, uint32_t part_probes, float *d_sums, unsigned long long *stats);

/* The wavefront bake's buffers (kernels/cuda/bake.cu): per path slot its state, its pair (texel x
 * sample), its ray and the ray's hit; the slots in two groups, each with four queues of its slots
 * (two wave parities x occlusion / closest hit), their lengths and its trace kernels' fetch
 * counters; then the next pair to start (device memory; the counters also in pinned host
 * memory); per pair its result (the sums of one sample). */
typedef struct bk_cuda_wave {
    bk_bake_path *paths; /* the unocclude pass's paths, whole */
    float4       *hot;   /* a sample path's state between waves: 6 per slot (bake.cu) */
    uint32_t     *pair;
    bk_ray       *rays;
    bk_hit       *hits;
    uint32_t     *aux;      /* bk_trace_stats.aux of each hit */
    uint32_t     *queue[4]; /* [2 parity + (0 occlusion, 1 closest hit)], each group's part
                               starting at its first slot */
    uint32_t *count;        /* per group (8 words): 4 lengths, as queue, and 4 fetch counters
                               of the trace kernels; then next */
    uint32_t    *next;
    uint32_t    *h_count;
    uint32_t     cap;       /* path slots (hot, pair, rays, hits, aux, queues) */
    uint32_t     whole_cap; /* path slots of the unocclude pass (paths) */
    bk_f4       *res;       /* per pair: rgb and the back-face count */
    float       *res_sq;    /* per pair: the squared luminance */
    bk_f4       *res_dir;   /* per pair, a directional bake's: its directional sums (3), made at its first use */
    uint32_t     *res_vis;   /* per pair, a shadowmask's: the sample's bk_bake_path.vis, made at its first use */
    uint64_t     res_cap;   /* pairs */
    cudaStream_t stream[2]; /* the two groups of slots wave on streams of their own */
    /* --bin-rays: each wave's rays binned before they are traced (bake.cu: wave_bin_*) */
    uint32_t   *bin_keys;     /* per slot: its ray's bin */
    uint32_t   *bin_order[2]; /* per query (0 occlusion, 1 closest hit): paths in bin order */
    uint32_t   *bin_hist;     /* per group and query: WAVE_BINS counts, then offsets */
    cudaEvent_t ev[2];
} bk_cuda_wave;

/* Room for `slots` sample paths, `whole` unocclude paths and `pairs` results (what is there
 * already is kept when it is enough); bk_cuda_wave_free gives it all back. */
cudaError_t bk_cuda_wave_reserve(bk_cuda_wave *w, uint32_t slots, uint32_t whole, uint32_t pairs);
void        bk_cuda_wave_free(bk_cuda_wave *w);
/* Blocks of the wavefront's trace kernels that fit on one SM (the fewer of the two queries). */
cudaError_t bk_cuda_wave_occupancy(const bk_accel_view *a, int stack_mode, size_t smem, int *per_sm);
/* Bakes texels [begin, end) as bk_cuda_bake_launch does, in waves of at most w->cap paths
 * (bake.cu; the samples in runs of res_cap / (end - begin), at least one; spill holds two regions
 * of `blocks` blocks: the two groups' trace kernels run side by side); returns when all are done. */
/* bin: trace each wave's rays of a query in the order of their bins (direction octant, then the
 * origin's cell of 16^3 over the scene box) rather than as their paths asked for them. */
cudaError_t bk_cuda_bake_wave(bk_cuda_wave *w, int stack_mode, unsigned blocks, size_t smem, const bk_bake_view *v,
                              const bk_bake_params *p, const bk_texel *tx, float *pos, uint32_t begin, uint32_t end,
                              int stack_size, uint32_t *spill, bk_f4 *out, float *sq, bk_f4 *ext,
                              unsigned long long *stats, int bin);

/* The denoiser over one page given as its n texels, charts and colours on the device (backend.h,
 * denoise()): scattered into d_page (4 x w x h bk_f4 of scratch), filtered, and gathered back
 * into d_col; d_band (NULL, or 3 per texel: a directional bake's bands) the same ways, with the
 * colours' weights, through 6 more x w x h bk_f4 of d_page. Asynchronous on the default stream. */
cudaError_t bk_cuda_denoise(const bk_denoise_params *p, int passes, const bk_texel *d_tx, const uint32_t *d_chart,
                            bk_f4 *d_col, bk_f4 *d_band, uint32_t n, uint64_t base, bk_f4 *d_page);

/* Texels [0, n) of d_out made from the refs d_refs (bk_texel_make), d_src's arrays and the shading
 * triangles d_tris all on the device. Asynchronous on the default stream. */
cudaError_t bk_cuda_make_texels(const bk_texel_src *d_src, const bk_f4 *d_tris, const bk_texel_ref *d_refs, uint32_t n,
                                bk_texel *d_out);

#endif
