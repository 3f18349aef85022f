/* texels.cu - the bake's texels made on the GPU from their refs (pixel and triangle):
 * bk_texel_make() (kernels/bk_texel.h) per ref, the function the host's rasterizer uses.
 *
 * Compiled with --fmad=false like the bake (CMakeLists.txt): the double arithmetic rounds as the
 * host's does, so the texels are the host's bit for bit.
 */
#include "backend.h"
#include "cuda_internal.cuh"

__global__ void __launch_bounds__(256)
    make_texels_kernel(bk_texel_src s, const bk_f4 *__restrict__ tris, const bk_texel_ref *__restrict__ refs,
                       uint32_t     n, bk_texel *__restrict__ out)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const bk_texel_ref r = refs[i];
    bk_texel           t;
    if (r.tri < s.tri_count) bk_texel_make(&s, tris, r.pixel, r.tri, &t);
    else { /* a ref the host never makes: a texel that bakes nothing, never a read out of bounds */
        t.px = t.py = t.pz = 0;
        t.nx = t.ny = 0;
        t.nz = 1;
        t.tri = r.tri;
        t.pixel = r.pixel;
    }
    out[i] = t;
}

cudaError_t bk_cuda_make_texels(const bk_texel_src *d_src, const bk_f4 *d_tris, const bk_texel_ref *d_refs, uint32_t n,
                                bk_texel *d_out)
{
    if (!n) return cudaSuccess;
    make_texels_kernel<<<(n + 255) / 256, 256>>>(*d_src, d_tris, d_refs, n, d_out);
    return cudaGetLastError();
}
