/* cuda_internal.cuh - what the CUDA files of the backend share: the statistics slots and the
 * bake kernel's launcher (kernels/bake.cu, compiled without FMA contraction). */
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

/* Blocks of `block` threads with `smem` bytes of stack that fit on one SM. */
cudaError_t bk_cuda_bake_occupancy(int stack_mode, int block, size_t smem, int *per_sm);
/* Bakes texels [begin, end) with a grid-stride loop over `blocks` blocks. */
cudaError_t bk_cuda_bake_launch(int stack_mode, unsigned blocks, int block, size_t smem, const bk_bake_view *v,
                                const bk_bake_params *p, bk_texel *tx, uint32_t begin, uint32_t end, int stack_size,
                                uint32_t *spill, bk_f4 *out, unsigned long long *stats);

#endif
