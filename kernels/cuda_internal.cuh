/* cuda_internal.cuh - what the CUDA files of the backend share: the statistics slots, the block
 * size, and the bake kernel's launcher and facts (kernels/bake.cu, compiled without FMA
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
    unsigned long long start, end;   /* 16 B */
    unsigned smid, pad;              /*  8 B */
} bk_warp_rec;                       /* 24 B */

/* Bake kernels exist for each stack strategy and each register cap of BK_REG_CAPS (backend.h);
 * the functions below return cudaErrorInvalidDeviceFunction for any other pair. */
int         bk_cuda_bake_has(int stack_mode, int reg_cap);
cudaError_t bk_cuda_bake_attributes(int stack_mode, int reg_cap, cudaFuncAttributes *a);
/* Blocks of `block` threads with `smem` bytes of stack that fit on one SM. */
cudaError_t bk_cuda_bake_occupancy(int stack_mode, int reg_cap, int block, size_t smem, int *per_sm);
/* Bakes texels [begin, end) with a grid-stride loop over `blocks` blocks; pos: 3 floats per texel,
 * where the launch of sample 0 leaves each texel's unoccluded position for the later ones (tx is
 * only read); rec: NULL, or one record per warp of the grid. */
cudaError_t bk_cuda_bake_launch(int stack_mode, int reg_cap, unsigned blocks, int block, size_t smem,
                                const bk_bake_view *v, const bk_bake_params *p, const bk_texel *tx, float *pos, uint32_t begin,
                                uint32_t end, int stack_size, uint32_t *spill, bk_f4 *out, float *sq, unsigned long long *stats,
                                bk_warp_rec *rec);

/* The denoiser over one page given as its n texels, charts and colours on the device (backend.h,
 * denoise()): scattered into d_page (4 x w x h bk_f4 of scratch), filtered, and gathered back
 * into d_col. Asynchronous on the default stream. */
cudaError_t bk_cuda_denoise(const bk_denoise_params *p, int passes, const bk_texel *d_tx, const uint32_t *d_chart,
                            bk_f4 *d_col, uint32_t n, uint64_t base, bk_f4 *d_page);

#endif
