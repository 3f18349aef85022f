/* bake.cu - the bake kernel: bk_bake_texel() (kernels/bk_bake.h) for each texel.
 *
 * Compiled with --fmad=false (CMakeLists.txt): together with the bake's own sin/cos this makes
 * the GPU's arithmetic the CPU's, so the CUDA bake reproduces the CPU bake texel for texel.
 * One thread per texel over a grid-stride loop (the grid is what fits at once, so the spill
 * buffer stays small); stack storage as in trace.cu's kernel; statistics summed per warp.
 */
#include "cuda_internal.cuh"

/* One thread per texel over a grid-stride loop (the grid is what fits at once, so the spill
 * buffer stays small); stack storage as in trace.cu's kernel; statistics summed per warp. */
template <int MODE>
__global__ void __launch_bounds__(128, 4) bake_kernel(bk_bake_view v, bk_bake_params p, bk_texel *__restrict__ tx,
                                                      uint32_t begin, uint32_t end, int stack_size, uint32_t *spill,
                                                      bk_f4 *__restrict__ out, unsigned long long *stats)
{
    extern __shared__ uint32_t smem[];
    uint32_t local[MODE == BK_STACK_GLOBAL ? BK_STACK_ENTRIES * BK_STACK_WIDTH : 1];
    const uint32_t nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    bk_stack s = MODE == BK_STACK_GLOBAL ? bk_stack_make(MODE, local, 1, BK_STACK_ENTRIES, 0, 0)
                                         : bk_stack_make(MODE, smem + threadIdx.x, blockDim.x, stack_size, spill + gtid,
                                                         (int)nthreads);
    uint32_t nodes = 0, tris = 0, restarts = 0, spills = 0, rays = 0;
    for (uint32_t i = begin + gtid; i < end; i += nthreads) {
        bk_texel t = tx[i];
        bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
        out[i] = bk_bake_texel(&v, &p, &t, out[i], &s, &st);
        if (p.sample_begin == 0) tx[i] = t;          /* the unoccluded position, for later launches */
        nodes += st.nodes; tris += st.tris; restarts += st.restarts; spills += st.spills; rays += st.rays;
    }
    bk_warp_flush_stats(stats, nodes, tris, restarts, spills, rays);
}


typedef void (*bake_fn)(bk_bake_view, bk_bake_params, bk_texel *, uint32_t, uint32_t, int, uint32_t *, bk_f4 *,
                        unsigned long long *);

static bake_fn pick(int mode)
{
    return mode == BK_STACK_GLOBAL ? bake_kernel<BK_STACK_GLOBAL>
         : mode == BK_STACK_SHORT  ? bake_kernel<BK_STACK_SHORT> : bake_kernel<BK_STACK_SPILL>;
}

cudaError_t bk_cuda_bake_occupancy(int stack_mode, int block, size_t smem, int *per_sm)
{
    bake_fn k = pick(stack_mode);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, block, smem);
}

cudaError_t bk_cuda_bake_launch(int stack_mode, unsigned blocks, int block, size_t smem, const bk_bake_view *v,
                                const bk_bake_params *p, bk_texel *tx, uint32_t begin, uint32_t end, int stack_size,
                                uint32_t *spill, bk_f4 *out, unsigned long long *stats)
{
    pick(stack_mode)<<<blocks, block, smem>>>(*v, *p, tx, begin, end, stack_size, spill, out, stats);
    return cudaGetLastError();
}
