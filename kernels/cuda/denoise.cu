/* denoise.cu - the lightmap denoiser's passes on the GPU: bk_denoise_pass() (kernels/bk_denoise.h)
 * for each texel of a page, one kernel per pass, ping-pong buffers.
 *
 * Compiled with --fmad=false like the bake (CMakeLists.txt), so the passes round as the CPU's do;
 * expf and powf still differ from the host's libm in the last bits, which the CPU twin's test
 * allows for.
 */
#include "backend.h"
#include "cuda_internal.cuh"

__global__ void __launch_bounds__(256)
    denoise_kernel(bk_denoise_params p, const bk_f4 *__restrict__ in, const bk_f4 *__restrict__ pos,
                   const bk_f4 *__restrict__ nrm, bk_f4 *__restrict__ out, const bk_f4 *__restrict__ band_in,
                   bk_f4 *__restrict__ band_out, int step)
{
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x), y = (int)(blockIdx.y * blockDim.y + threadIdx.y);
    if (x >= p.w || y >= p.h) return;
    const float  vc = bk_denoise_prefilter(&p, in, nrm, x, y);
    const size_t i = (size_t)y * (size_t)p.w + (size_t)x;
    out[i] = bk_denoise_pass_bands(&p, in, pos, nrm, vc, x, y, step, band_in, band_in ? band_out + 3 * i : NULL);
}

__global__ void denoise_scatter(const bk_texel *__restrict__ tx, const uint32_t *__restrict__ chart,
                                const bk_f4 *__restrict__ col, uint32_t n, uint64_t base, bk_f4 *pcol, bk_f4 *ppos,
                                bk_f4 *pnrm, const bk_f4 *__restrict__ band, bk_f4 *pband)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bk_denoise_scatter(tx, chart, col, i, base, pcol, ppos, pnrm, band, pband);
}

__global__ void denoise_gather(const bk_texel *__restrict__ tx, const uint32_t *__restrict__ chart,
                               const bk_f4 *__restrict__ pcol, uint32_t n, uint64_t base, bk_f4 *col,
                               const bk_f4 *__restrict__ pband, bk_f4 *band)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || chart[i] == BK_DN_NONE) return;
    const size_t k = (size_t)((uint64_t)tx[i].pixel - base);
    col[i] = pcol[k];
    for (int b = 0; band && b < 3; ++b) band[3 * (size_t)i + b] = pband[3 * k + b];
}

cudaError_t bk_cuda_denoise(const bk_denoise_params *p, int passes, const bk_texel *d_tx, const uint32_t *d_chart,
                            bk_f4 *d_col, bk_f4 *d_band, uint32_t n, uint64_t base, bk_f4 *d_page)
{
    const size_t px = (size_t)p->w * (size_t)p->h;
    bk_f4       *a = d_page, *b = d_page + px, *pos = d_page + 2 * px, *nrm = d_page + 3 * px;
    bk_f4       *ba = d_band ? d_page + 4 * px : NULL, *bb = d_band ? d_page + 7 * px : NULL;
    /* every chart BK_DN_NONE (all bits set), then the texels into place. The colours start at
     * zero too: a pixel without a chart passes its own colour through each pass (bk_denoise_pass),
     * which no texel reads, but compute-sanitizer's initcheck counted every such load (141k on
     * sponza 1024^2) */
    cudaError_t e = cudaMemsetAsync(nrm, 0xFF, sizeof(bk_f4) * px);
    if (e == cudaSuccess) e = cudaMemsetAsync(a, 0, sizeof(bk_f4) * px);
    if (e == cudaSuccess && ba) e = cudaMemsetAsync(ba, 0, 3 * sizeof(bk_f4) * px);
    if (e != cudaSuccess) return e;
    const unsigned tb = 256, tg = (unsigned)((n + tb - 1) / tb);
    if (n) denoise_scatter<<<tg, tb>>>(d_tx, d_chart, d_col, n, base, a, pos, nrm, d_band, ba);
    dim3 block(32, 8), grid((unsigned)((p->w + 31) / 32), (unsigned)((p->h + 7) / 8));
    for (int k = 0; k < passes; ++k) {
        denoise_kernel<<<grid, block>>>(*p, a, pos, nrm, b, ba, bb, 1 << k);
        bk_f4 *t = a;
        a = b;
        b = t;
        t = ba;
        ba = bb;
        bb = t;
    }
    if (n) denoise_gather<<<tg, tb>>>(d_tx, d_chart, a, n, base, d_col, ba, d_band);
    return cudaGetLastError();
}
