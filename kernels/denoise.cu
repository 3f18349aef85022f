/* denoise.cu - the lightmap denoiser's passes on the GPU: bk_denoise_pass() (kernels/bk_denoise.h)
 * for each texel of a page, one kernel per pass, ping-pong buffers.
 *
 * Compiled with --fmad=false like the bake (CMakeLists.txt), so the passes round as the CPU's do;
 * expf and powf still differ from the host's libm in the last bits, which the CPU twin's test
 * allows for.
 */
#include "backend.h"
#include "cuda_internal.cuh"

__global__ void __launch_bounds__(256) denoise_kernel(bk_denoise_params p, const bk_f4 *__restrict__ in,
                                                      const bk_f4 *__restrict__ pos, const bk_f4 *__restrict__ nrm,
                                                      bk_f4 *__restrict__ out, int step)
{
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x), y = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= p.w || y >= p.h) return;
    const float vc = bk_denoise_prefilter(&p, in, nrm, x, y);
    out[(size_t)y * (size_t)p.w + (size_t)x] = bk_denoise_pass(&p, in, pos, nrm, vc, x, y, step);
}

cudaError_t bk_cuda_denoise(const bk_denoise_params *p, int passes, bk_f4 *d_a, bk_f4 *d_b, const bk_f4 *d_pos,
                            const bk_f4 *d_nrm, bk_f4 **d_result)
{
    dim3 block(32, 8), grid((unsigned)((p->w + 31) / 32), (unsigned)((p->h + 7) / 8));
    bk_f4 *a = d_a, *b = d_b;
    for (int k = 0; k < passes; ++k) {
        denoise_kernel<<<grid, block>>>(*p, a, d_pos, d_nrm, b, 1 << k);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
        bk_f4 *t = a; a = b; b = t;
    }
    *d_result = a;
    return cudaSuccess;
}
