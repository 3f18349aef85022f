/* bake.cu - the bake kernel: bk_bake_texel() (kernels/bk_bake.h) for each texel.
 *
 * Compiled with --fmad=false (CMakeLists.txt): together with the bake's own sin/cos this makes
 * the GPU's arithmetic the CPU's, so the CUDA bake reproduces the CPU bake texel for texel.
 * One thread per texel over a grid-stride loop (the grid is what fits at once, so the spill
 * buffer stays small); stack storage as in trace.cu's kernel; statistics summed per warp.
 * One instance per stack strategy x register cap (BK_REG_CAPS in backend.h): the cap is a
 * __launch_bounds__ minimum of resident blocks, which is how ptxas is told a register budget.
 */
#include "backend.h"
#include "cuda_internal.cuh"

/* Blocks per SM the launch bounds ask for: the 64K-register file shared by 128-thread blocks of
 * C registers each gives 65536 / (128 C): 16 for a cap of 32; without a cap, C = 128 (4 blocks,
 * the bounds the kernel always had). */
#define BAKE_MIN_BLOCKS(CAP) (65536 / (BK_CUDA_BLOCK * ((CAP) ? (CAP) : 128)))

static __device__ __forceinline__ unsigned long long bk_globaltimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ unsigned bk_smid(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}

/* rec: NULL for a normal bake. Otherwise lane 0 of each warp writes its SM and start time at once
 * and its end time after the warp's last texel: nothing stays live across the loop, so the
 * recording costs the normal bake only the test of a kernel parameter. */
template <int MODE, int CAP>
__global__ void __launch_bounds__(BK_CUDA_BLOCK, BAKE_MIN_BLOCKS(CAP))
bake_kernel(bk_bake_view v, bk_bake_params p, const bk_texel *__restrict__ tx, float *__restrict__ pos, uint32_t begin, uint32_t end,
            int stack_size, uint32_t *spill, bk_f4 *__restrict__ out, float *__restrict__ sq, unsigned long long *stats, bk_warp_rec *rec)
{
    extern __shared__ uint32_t smem[];
    uint32_t local[MODE == BK_STACK_GLOBAL ? BK_STACK_ENTRIES * BK_STACK_WIDTH : 1];
    const uint32_t nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    if (rec && (threadIdx.x & 31) == 0) { rec[gtid >> 5].start = bk_globaltimer(); rec[gtid >> 5].smid = bk_smid(); }
    bk_stack s = MODE == BK_STACK_GLOBAL ? bk_stack_make(MODE, local, 1, BK_STACK_ENTRIES, 0, 0)
                                         : bk_stack_make(MODE, smem + threadIdx.x, blockDim.x, stack_size, spill + gtid,
                                                         (int)nthreads);
    uint32_t nodes = 0, tris = 0, restarts = 0, spills = 0, rays = 0;
    for (uint32_t i = begin + gtid; i < end; i += nthreads) {
        bk_texel t = tx[i];
        /* the unoccluded position sample 0 found, for the later launches (the texels stay as they
         * came: the denoiser reads them) */
        if (p.sample_begin > 0) { t.px = pos[3 * (size_t)i]; t.py = pos[3 * (size_t)i + 1]; t.pz = pos[3 * (size_t)i + 2]; }
        bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
        float q = sq[i];
        out[i] = bk_bake_texel(&v, &p, &t, out[i], &q, &s, &st);
        sq[i] = q;
        if (p.sample_begin == 0) { pos[3 * (size_t)i] = t.px; pos[3 * (size_t)i + 1] = t.py; pos[3 * (size_t)i + 2] = t.pz; }
        nodes += st.nodes; tris += st.tris; restarts += st.restarts; spills += st.spills; rays += st.rays;
    }
    bk_warp_flush_stats(stats, nodes, tris, restarts, spills, rays);
    if (rec && (threadIdx.x & 31) == 0) rec[gtid >> 5].end = bk_globaltimer();
}

typedef void (*bake_fn)(bk_bake_view, bk_bake_params, const bk_texel *, float *, uint32_t, uint32_t, int, uint32_t *, bk_f4 *,
                        float *, unsigned long long *, bk_warp_rec *);

/* The instance for (stack strategy, register cap); NULL for a pair that was not compiled. */
static bake_fn pick(int mode, int cap)
{
    if (mode < 0 || mode > 2) return NULL;
#define BAKE_PICK(C)                                                                                       \
    if (cap == (C))                                                                                        \
        return mode == BK_STACK_GLOBAL ? bake_kernel<BK_STACK_GLOBAL, C>                                   \
             : mode == BK_STACK_SHORT  ? bake_kernel<BK_STACK_SHORT, C> : bake_kernel<BK_STACK_SPILL, C>;
    BK_REG_CAPS(BAKE_PICK)
#undef BAKE_PICK
    return NULL;
}

int bk_cuda_bake_has(int stack_mode, int reg_cap) { return pick(stack_mode, reg_cap) != NULL; }

cudaError_t bk_cuda_bake_attributes(int stack_mode, int reg_cap, cudaFuncAttributes *a)
{
    bake_fn k = pick(stack_mode, reg_cap);
    return k ? cudaFuncGetAttributes(a, k) : cudaErrorInvalidDeviceFunction;
}

cudaError_t bk_cuda_bake_occupancy(int stack_mode, int reg_cap, int block, size_t smem, int *per_sm)
{
    bake_fn k = pick(stack_mode, reg_cap);
    if (!k) return cudaErrorInvalidDeviceFunction;
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, block, smem);
}

cudaError_t bk_cuda_bake_launch(int stack_mode, int reg_cap, unsigned blocks, int block, size_t smem,
                                const bk_bake_view *v, const bk_bake_params *p, const bk_texel *tx, float *pos, uint32_t begin,
                                uint32_t end, int stack_size, uint32_t *spill, bk_f4 *out, float *sq,
                                unsigned long long *stats, bk_warp_rec *rec)
{
    bake_fn k = pick(stack_mode, reg_cap);
    if (!k) return cudaErrorInvalidDeviceFunction;
    k<<<blocks, block, smem>>>(*v, *p, tx, pos, begin, end, stack_size, spill, out, sq, stats, rec);
    return cudaGetLastError();
}
