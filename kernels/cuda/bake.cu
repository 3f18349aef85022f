/* bake.cu - the bake's kernels: the steps of bk_bake_texel() (kernels/bk_bake.h) for each texel,
 * in one kernel (--kernel megakernel) or in waves (--kernel wavefront, the default; below).
 *
 * Compiled with --fmad=false (CMakeLists.txt): together with the bake's own sin/cos this makes
 * the GPU's arithmetic the CPU's, so the CUDA bake reproduces the CPU bake texel for texel.
 * The megakernel: texels over a grid-stride loop (the grid is what fits at once, so the spill
 * buffer stays small), each baked through the path state machine with one trace call site;
 * stack storage as in cuda_backend.cu's kernel; statistics summed per warp. One instance per stack
 * strategy x register cap (BK_REG_CAPS in backend.h): the cap is a __launch_bounds__ minimum of
 * resident blocks, which is how ptxas is told a register budget.
 */
#include "backend.h"
#include "cuda_internal.cuh"

#include <string.h>

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

/* Starts texel i: as the atlas made it, but for a launch after sample 0, at the unoccluded
 * position sample 0 found (the texels stay as they came: the denoiser reads them). */
static __device__ __forceinline__ void bake_start(const bk_bake_params *p, const bk_texel *__restrict__ tx,
                                                  const float *pos, const bk_f4 *out, const float *sq, const bk_f4 *ext,
                                                  uint32_t i, bk_bake_path *ps)
{
    bk_texel t = tx[i];
    if (p->sample_begin > 0) {
        t.px = pos[3 * (size_t)i];
        t.py = pos[3 * (size_t)i + 1];
        t.pz = pos[3 * (size_t)i + 2];
    }
    const uint32_t ne = bk_bake_ext_count(p);
    bk_bake_path_begin(p, &t, out[i], sq[i], ne ? ext + ne * (size_t)i : NULL, ps);
}

/* rec: NULL for a normal bake. Otherwise lane 0 of each warp writes its SM and start time at once
 * and its end time after the warp's last texel: nothing stays live across the loop, so the
 * recording costs the normal bake only the test of a kernel parameter. */
template <int MODE, int CAP>
__global__ void __launch_bounds__(BK_CUDA_BLOCK, BAKE_MIN_BLOCKS(CAP))
    bake_kernel(bk_bake_view v, bk_bake_params p, const bk_texel *__restrict__ tx, float *__restrict__ pos,
                uint32_t begin, uint32_t end, int stack_size, uint32_t *spill, bk_f4 *__restrict__ out,
                float *__restrict__ sq, bk_f4 *__restrict__ ext, unsigned long long *stats, bk_warp_rec *rec)
{
    extern __shared__ uint32_t smem[];
    uint32_t       local[BK_STACK_SIZED_OF(MODE) ? 1 : BK_STACK_ENTRIES * BK_STACK_WIDTH]; /* any accel's entries */
    const uint32_t nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    if (rec && (threadIdx.x & 31) == 0) {
        rec[gtid >> 5].start = bk_globaltimer();
        rec[gtid >> 5].smid = bk_smid();
    }
    bk_stack s = bk_stack_thread(MODE, local, smem + threadIdx.x, blockDim.x, stack_size, spill + gtid, (int)nthreads);
    bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
    /* Each thread bakes texels begin + gtid, + nthreads, ... one after the other through the
     * path state machine (bk_bake_path, kernels/bk_bake.h): every iteration gets the thread's next
     * ray (starting its next texel when one is done) and the lanes trace at the one call below.
     * A lane whose sample has ended waits until every lane of its warp is at a sample's end, so
     * the warp's lanes walk their samples side by side and trace the same kind of ray at once
     * (towards the sun together, then the bounce together). Measured on sponza (1024^2, 64 spp,
     * 2 bounces, H100): 588 Mrays/s, against 550 with each lane running ahead; the earlier
     * megakernel, whose structured loops kept its lanes in step at five trace call sites, made
     * 785, and the wavefront bake below 1169. */
    uint32_t     i = begin + gtid;
    bk_bake_path ps;
    if (i < end) bake_start(&p, tx, pos, out, sq, ext, i, &ps);
    for (;;) {
        const int live = i < end;
        if (!__any_sync(0xffffffffu, live)) break;
        const int at_end = !live || ps.step == BK_STEP_SAMPLE;
        const int wait = __any_sync(0xffffffffu, !at_end) && at_end;
        bk_ray    r;
        int       any_hit = 0, have = 0;
        if (live && !wait) {
            while (!(have = bk_bake_path_next(&v, &p, &ps, &r, &any_hit))) {
                /* the texel's samples are done: its sums out, its moved position for the later launches */
                out[i] = ps.acc;
                sq[i] = ps.sq;
                if (bk_bake_ext_count(&p)) bk_bake_path_ext_store(&p, &ps, ext + bk_bake_ext_count(&p) * (size_t)i);
                if (p.sample_begin == 0) {
                    pos[3 * (size_t)i] = ps.x.x;
                    pos[3 * (size_t)i + 1] = ps.x.y;
                    pos[3 * (size_t)i + 2] = ps.x.z;
                }
                i += nthreads;
                if (i >= end) break;
                bake_start(&p, tx, pos, out, sq, ext, i, &ps);
            }
        }
        if (have) {
            bk_hit h = bk_bake_trace(&v.accel, &r, any_hit, &s, &st);
            bk_bake_path_hit(&v, &p, &ps, h, st.aux);
        }
        __syncwarp();
    }
    bk_warp_flush_stats(stats, st.nodes, st.tris, st.restarts, st.spills, st.rays);
    if (rec && (threadIdx.x & 31) == 0) rec[gtid >> 5].end = bk_globaltimer();
}

typedef void (*bake_fn)(bk_bake_view, bk_bake_params, const bk_texel *, float *, uint32_t, uint32_t, int, uint32_t *,
                        bk_f4 *, float *, bk_f4 *, unsigned long long *, bk_warp_rec *);

/* The instance for (stack strategy, register cap); NULL for a pair that was not compiled. */
static bake_fn pick(int mode, int cap)
{
#define BAKE_PICK_MODE(C, N, ...) \
    if (mode == BK_STACK_##N) return bake_kernel<BK_STACK_##N, C>;
#define BAKE_PICK(C) \
    if (cap == (C)) { BK_STACK_MODES_U(BAKE_PICK_MODE, C) return NULL; }
    BK_REG_CAPS(BAKE_PICK)
#undef BAKE_PICK
#undef BAKE_PICK_MODE
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
                                const bk_bake_view *v, const bk_bake_params *p, const bk_texel *tx, float *pos,
                                uint32_t begin, uint32_t end, int stack_size, uint32_t *spill, bk_f4 *out, float *sq,
                                bk_f4 *ext, unsigned long long *stats, bk_warp_rec *rec)
{
    bake_fn k = pick(stack_mode, reg_cap);
    if (!k) return cudaErrorInvalidDeviceFunction;
    k<<<blocks, block, smem>>>(*v, *p, tx, pos, begin, end, stack_size, spill, out, sq, ext, stats, rec);
    return cudaGetLastError();
}

/* ---- light probes ----------------------------------------------------------------------------
 * One thread per (probe, chunk of BK_PROBE_CHUNK samples): bk_bake_probe into its part, then one
 * thread per probe adds its chunks in order (bk_probe_chunks_sum), as the CPU backend does. A
 * warp's threads are chunks of one or two probes: their rays start at one point. The global stack
 * (probes are few beside texels: the stack strategies are the texels' concern). */
__global__ void __launch_bounds__(BK_CUDA_BLOCK)
    probe_kernel(bk_bake_view v, bk_bake_params p, const float *__restrict__ pos, uint32_t first, uint32_t items,
                 uint32_t chunks, float *__restrict__ part, unsigned long long *stats)
{
    uint32_t       local[BK_STACK_ENTRIES * BK_STACK_WIDTH];
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    bk_stack       s = bk_stack_thread(BK_STACK_GLOBAL, local, NULL, 0, 0, NULL, 0);
    bk_trace_stats st = { 0, 0, 0, 0, 0, 0, 0 };
    if (t < items) {
        const uint32_t item = first + t, probe = item / chunks, k = item % chunks;
        const uint32_t e = (k + 1) * BK_PROBE_CHUNK < p.spp ? (k + 1) * BK_PROBE_CHUNK : p.spp;
        float          sh[BK_PROBE_SUMS];
        bk_bake_probe(&v, &p, bk_v3(pos[3 * (size_t)probe], pos[3 * (size_t)probe + 1], pos[3 * (size_t)probe + 2]),
                      probe, k * BK_PROBE_CHUNK, e, sh, &s, &st);
        for (int c = 0; c < BK_PROBE_SUMS; ++c) part[(size_t)t * BK_PROBE_SUMS + c] = sh[c];
    }
    bk_warp_flush_stats(stats, st.nodes, st.tris, st.restarts, st.spills, st.rays);
}

/* Probes [first, first + n), whose chunks are part's from its start, into sums. */
__global__ void __launch_bounds__(BK_CUDA_BLOCK)
    probe_sum(const float *__restrict__ part, uint32_t n, uint32_t chunks, float *__restrict__ sums)
{
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) bk_probe_chunks_sum(part + (size_t)i * chunks * BK_PROBE_SUMS, chunks, sums + (size_t)i * BK_PROBE_SUMS);
}

cudaError_t bk_cuda_bake_probes(const bk_bake_view *v, const bk_bake_params *p, const float *d_pos, uint32_t n,
                                float *d_part, uint32_t part_probes, float *d_sums, unsigned long long *stats)
{
    const uint32_t chunks = (p->spp + BK_PROBE_CHUNK - 1) / BK_PROBE_CHUNK;
    for (uint32_t first = 0; first < n; first += part_probes) {
        const uint32_t np = n - first < part_probes ? n - first : part_probes, items = np * chunks;
        probe_kernel<<<(items + BK_CUDA_BLOCK - 1) / BK_CUDA_BLOCK, BK_CUDA_BLOCK>>>(*v, *p, d_pos, first * chunks,
                                                                                     items, chunks, d_part, stats);
        probe_sum<<<(np + BK_CUDA_BLOCK - 1) / BK_CUDA_BLOCK, BK_CUDA_BLOCK>>>(d_part, np, chunks,
                                                                               d_sums + (size_t)first * BK_PROBE_SUMS);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

/* ---- the wavefront bake ---------------------------------------------------------------------
 * The same steps as the kernel above (bk_bake_path), with the paths' state in buffers instead of
 * registers. Per wave, a step kernel (each path that traced takes its hit and says which ray it
 * needs next) and one trace kernel per query over the rays of its own queue: occlusion rays
 * (towards the sun, points, emitters) and closest-hit rays (bounces, the unocclude and inside
 * steps) are traced apart, each by a traversal specialised for its query, so a warp never mixes
 * them.
 *
 * A path is one sample of one texel (a "pair"), so a launch has (texels x samples) of them, many
 * more than texels: a wave holds up to cap paths, and a path that ends takes the next pair
 * (consecutive pairs are samples of one texel: their rays start at one point). Each pair's
 * result is kept apart and a last kernel adds them to the texel's sums in sample order, as the
 * CPU adds them, so the texels are the CPU's bit for bit. Before the samples, a launch that
 * starts at sample 0 runs the unocclude and inside steps the same way with one path per texel
 * (the inside step's back-face count goes into the texel's sums there, w).
 * The rays are traced in the order their paths asked for them: sorting each wave's closest-hit
 * rays by direction octant first (a counting sort, one more kernel per wave) baked sponza,
 * sibenik and dragon_vrip_res2 at 1186-1199, 1101 and 834 Mrays/s against 1280-1288, 1187 and
 * 881 unsorted. Neighbouring paths are samples of one texel, whose rays start at one point.
 * --bin-rays sorts both queues of each wave by octant and a 16^3 origin cell (wave_bin_*): slower
 * still, sponza 0.290-0.303 s of bake against 0.198-0.204 (docs/bench/bake_gpu.md).
 * Waves are launched in batches without waiting; a kernel reads its queue's length on the device,
 * so waves past the last ray cost one empty launch each. The kernels keep their registers
 * (step 94, BVH traces 56-64): capping the step at 64 and the traces at 40 or 32 for occupancy
 * baked sponza at 1143, 1069 and 1051 Mrays/s against 1185 uncapped. */

/* Queues of wave parity par: [2 par] occlusion, [2 par + 1] closest hit; a group's queues start
 * at its first slot (off) and its lengths at cnt. */
static __device__ __forceinline__ void wave_push(const bk_cuda_wave *w, uint32_t *cnt, uint32_t off, int par,
                                                 uint32_t path, int any_hit)
{
    /* warp-aggregated: one atomic per queue and warp, the leader's base broadcast */
    const unsigned act = __activemask(), lane = threadIdx.x & 31u;
    for (int q = 0; q < 2; ++q) {
        const unsigned m = __ballot_sync(act, (q == 0) == (any_hit != 0));
        if (!m) continue;
        const int leader = __ffs(m) - 1;
        uint32_t  base = 0;
        if ((int)lane == leader) base = atomicAdd(&cnt[2 * par + q], (uint32_t)__popc(m));
        base = __shfl_sync(act, base, leader);
        if ((q == 0) == (any_hit != 0)) w->queue[2 * par + q][off + base + __popc(m & ((1u << lane) - 1u))] = path;
    }
}

/* A sample path's state between waves: what its later steps read (96 B as 6 x 16 B; step and
 * after share a word, vis has the other). The rest of bk_bake_path is the texel's (its position
 * and normal, read when the sample starts and, in a directional bake, again from the texel by
 * wave_step for the sample's end; the unocclude step's nearest hit) or the sample's sums, which
 * start at zero and change only in the step that ends it. The unocclude pass keeps whole paths. */
static __device__ __forceinline__ void wave_store_hot(float4 *h, const bk_bake_path *ps)
{
    h[0] = make_float4(ps->pos.x, ps->pos.y, ps->pos.z, ps->nrm.x);
    h[1] = make_float4(ps->nrm.y, ps->nrm.z, ps->L.x, ps->L.y);
    h[2] = make_float4(ps->L.z, ps->thr.x, ps->thr.y, ps->thr.z);
    h[3] = make_float4(ps->direct.x, ps->direct.y, ps->direct.z, ps->pend.x);
    h[4] = make_float4(ps->pend.y, ps->pend.z, __uint_as_float(ps->texel), __uint_as_float(ps->smp));
    h[5] = make_float4(__uint_as_float(ps->b), __uint_as_float(ps->k), __uint_as_float(ps->step | ps->after << 8),
                       __uint_as_float(ps->vis));
}

static __device__ __forceinline__ void wave_load_hot(const float4 *h, bk_bake_path *ps)
{
    const float4 a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5];
    ps->pos = bk_v3(a.x, a.y, a.z);
    ps->nrm = bk_v3(a.w, b.x, b.y);
    ps->L = bk_v3(b.z, b.w, c.x);
    ps->thr = bk_v3(c.y, c.z, c.w);
    ps->direct = bk_v3(d.x, d.y, d.z);
    ps->pend = bk_v3(d.w, e.x, e.y);
    ps->texel = __float_as_uint(e.z);
    ps->smp = __float_as_uint(e.w);
    ps->smp_end = ps->smp + 1;
    ps->b = __float_as_uint(f.x);
    ps->k = __float_as_uint(f.y);
    ps->step = __float_as_uint(f.z) & 0xFFu;
    ps->after = __float_as_uint(f.z) >> 8;
    ps->vis = __float_as_uint(f.w);
    ps->x = ps->pos;
    ps->n = ps->nrm; /* not read again: the sample has begun */
    ps->acc.x = ps->acc.y = ps->acc.z = ps->acc.w = 0.0f;
    ps->sq = 0.0f;
    for (int k = 0; k < 3; ++k) ps->dir[k] = ps->acc;
    ps->mask = ps->acc;
    ps->best = BK_INF;
    ps->best_d = ps->nrm;
    ps->tri = 0;
}

/* What a launch's waves work through (bk_cuda_bake_wave). */
typedef struct wave_job {
    const bk_texel *tx;
    float          *pos;
    bk_f4          *out; /* the texels' sums (unocclude pass) */
    float          *sq;
    bk_f4          *ext;   /* the texels' extra sums, ne per texel (bk_bake_ext_count); NULL without */
    uint32_t        ne;    /*   */
    uint32_t        begin; /* first texel */
    uint32_t        ns;    /* samples per texel in this launch; 0: the unocclude pass */
    uint32_t        total; /* pairs (or texels, unocclude pass) */
    uint32_t        slots; /* paths in flight at once: at most total, and the buffers' room */
} wave_job;

/* Starts pair q of the job in path slot `path`: its texel at the position sample 0 left (the
 * unocclude pass: as the atlas made it), one sample with sums from zero. */
static __device__ __forceinline__ void wave_start(const bk_bake_params *p, const wave_job *J, uint32_t q,
                                                  bk_bake_path *ps)
{
    const uint32_t i = J->begin + (J->ns ? q / J->ns : q);
    bk_texel       t = J->tx[i];
    if (J->ns) {
        t.px = J->pos[3 * (size_t)i];
        t.py = J->pos[3 * (size_t)i + 1];
        t.pz = J->pos[3 * (size_t)i + 2];
        bk_f4 zero;
        zero.x = zero.y = zero.z = zero.w = 0.0f;
        bk_bake_path_begin(p, &t, zero, 0.0f, NULL, ps);
        ps->smp = p->sample_begin + q % J->ns;
        ps->smp_end = ps->smp + 1;
        ps->step = BK_STEP_SAMPLE;
    } else {
        bk_bake_params p0 = *p;
        p0.sample_end = p0.sample_begin; /* the unocclude and inside steps only */
        bk_bake_path_begin(&p0, &t, J->out[i], J->sq[i], NULL, ps);
    }
}

/* The step of group g (slots [off, off + n0)): with first, slot off + j starts pair off + j;
 * else each path in the group's queues of parity 1 - par takes its hit. Then each asks for its
 * next ray (into the group's queues of parity par); a path that needs none writes its result and
 * takes the next pair. */
__global__ void __launch_bounds__(BK_CUDA_BLOCK) wave_step(bk_cuda_wave w, bk_bake_view v, bk_bake_params p, wave_job J,
                                                           int first, int par, int g, uint32_t off, uint32_t n0)
{
    const uint32_t nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    uint32_t      *cnt = w.count + 8 * g;
    const uint32_t n_any = first ? 0 : cnt[2 * (1 - par)];
    const uint32_t n = first ? n0 : n_any + cnt[2 * (1 - par) + 1];
    for (uint32_t j = gtid; j < n; j += nthreads) {
        const uint32_t path = first       ? off + j
                              : j < n_any ? w.queue[2 * (1 - par)][off + j]
                                          : w.queue[2 * (1 - par) + 1][off + j - n_any];
        bk_bake_path   ps;
        uint32_t       q;
        if (first) {
            q = path;
            wave_start(&p, &J, q, &ps);
        } else {
            q = w.pair[path];
            if (J.ns) {
                wave_load_hot(w.hot + 6 * (size_t)path, &ps);
                if (p.directional) { /* the sample's end reads the texel's own vertex */
                    const uint32_t i = J.begin + q / J.ns;
                    ps.x = bk_v3(J.pos[3 * (size_t)i], J.pos[3 * (size_t)i + 1], J.pos[3 * (size_t)i + 2]);
                    ps.n = bk_v3(J.tx[i].nx, J.tx[i].ny, J.tx[i].nz);
                }
            } else ps = w.paths[path];
            bk_bake_path_hit(&v, &p, &ps, w.hits[path], w.aux[path]);
        }
        bk_ray r;
        int    any_hit, have;
        while (!(have = bk_bake_path_next(&v, &p, &ps, &r, &any_hit))) {
            if (J.ns) {
                w.res[q] = ps.acc;
                w.res_sq[q] = ps.sq;
                if (p.directional)
                    for (int k = 0; k < 3; ++k) w.res_dir[3 * (size_t)q + k] = ps.dir[k];
                if (p.mask_count) w.res_vis[q] = ps.vis; /* the sample's, for the mask (wave_sum) */
            } else {
                const uint32_t i = J.begin + q;
                J.out[i] = ps.acc;
                J.sq[i] = ps.sq;
                J.pos[3 * (size_t)i] = ps.x.x;
                J.pos[3 * (size_t)i + 1] = ps.x.y;
                J.pos[3 * (size_t)i + 2] = ps.x.z;
            }
            q = atomicAdd(w.next, 1u);
            if (q >= J.total) break;
            wave_start(&p, &J, q, &ps);
        }
        if (have) {
            if (J.ns) wave_store_hot(w.hot + 6 * (size_t)path, &ps);
            else w.paths[path] = ps;
            w.pair[path] = q;
            w.rays[path] = r;
            wave_push(&w, cnt, off, par, path, any_hit);
        }
    }
}

/* The pairs' results into their texels' sums, in sample order. */
__global__ void __launch_bounds__(BK_CUDA_BLOCK) wave_sum(bk_cuda_wave w, wave_job J, bk_bake_params p)
{
    const uint32_t nt = J.total / J.ns;
    for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < nt; k += gridDim.x * blockDim.x) {
        const uint32_t i = J.begin + k;
        bk_f4          a = J.out[i];
        float          s2 = J.sq[i];
        for (uint32_t s = 0; s < J.ns; ++s) {
            const bk_f4 r = w.res[(size_t)k * J.ns + s];
            a.x += r.x;
            a.y += r.y;
            a.z += r.z;
            a.w += r.w;
            s2 += w.res_sq[(size_t)k * J.ns + s];
        }
        J.out[i] = a;
        J.sq[i] = s2;
        for (int d = 0; p.directional && d < 3; ++d) { /* the directional sums, in the same order */
            bk_f4 b = J.ext[J.ne * (size_t)i + d];
            for (uint32_t s = 0; s < J.ns; ++s) {
                const bk_f4 r = w.res_dir[3 * ((size_t)k * J.ns + s) + d];
                b.x += r.x;
                b.y += r.y;
                b.z += r.z;
            }
            J.ext[J.ne * (size_t)i + d] = b;
        }
        if (p.mask_count) { /* the shadowmask's, from the samples' visibility bits, in the same order */
            bk_f4 m = J.ext[J.ne * (size_t)i + J.ne - 1];
            for (uint32_t s = 0; s < J.ns; ++s) bk_mask_add(&p, w.res_vis[(size_t)k * J.ns + s], &m);
            J.ext[J.ne * (size_t)i + J.ne - 1] = m;
        }
    }
}

/* One query's rays of wave parity par, traced by one traversal of BK_TRAVERSALS. */
template <int ACCEL, int MODE, int ANY, int PRIM>
__global__ void __launch_bounds__(BK_CUDA_BLOCK)
    wave_trace(bk_cuda_wave w, bk_accel_view a, int par, int g, uint32_t off, int stack_size, uint32_t *spill,
               unsigned long long *stats, int binned)
{
    extern __shared__ uint32_t smem[];
    uint32_t                   local[BK_STACK_LOCAL_WORDS(ACCEL, MODE)];
    const uint32_t             nthreads = gridDim.x * blockDim.x, gtid = blockIdx.x * blockDim.x + threadIdx.x;
    bk_stack s = bk_stack_thread(MODE, local, smem + threadIdx.x, blockDim.x, stack_size, spill + gtid, (int)nthreads);
    bk_trace_stats  st = { 0, 0, 0, 0, 0, 0, 0 };
    const uint32_t *q = (binned ? w.bin_order[ANY ? 0 : 1] : w.queue[2 * par + (ANY ? 0 : 1)]) + off;
    const uint32_t  n = w.count[8 * g + 2 * par + (ANY ? 0 : 1)];
    uint32_t       *fetch = w.count + 8 * g + 4 + 2 * par + (ANY ? 0 : 1);
    /* warps fetch 32 rays at a time: a wave's rays differ in cost, and a static share would
     * leave the wave waiting for its unluckiest threads */
    const unsigned lane = threadIdx.x & 31u;
    for (;;) {
        uint32_t base = 0;
        if (lane == 0) base = atomicAdd(fetch, 32u);
        base = __shfl_sync(0xffffffffu, base, 0);
        if (base >= n) break;
        const uint32_t j = base + lane;
        if (j < n) {
            const uint32_t path = q[j];
            const bk_ray   r = w.rays[path];
            w.hits[path] = bk_trace_one(&a, &r, ACCEL, MODE, ANY, PRIM, &s, &st);
            w.aux[path] = st.aux;
            st.rays++;
        }
    }
    bk_warp_flush_stats(stats, st.nodes, st.tris, st.restarts, st.spills, st.rays);
}

typedef void (*wave_trace_fn)(bk_cuda_wave, bk_accel_view, int, int, uint32_t, int, uint32_t *, unsigned long long *,
                              int);

/* --bin-rays: a counting sort of one query's queue of one group by the rays' bins, the top
 * WAVE_BIN_BITS of bk_ray_order_key (octant, then 16 cells per axis): count, scan, scatter.
 * Sorting 4M random diffuse rays of sponza beforehand by such bins traced them at 2396 Mrays/s
 * against 1707 as they came (kernels/bk_ray.h). Within a bin the order is the atomics' (the
 * hits do not depend on it). */
#define WAVE_BIN_BITS 15
#define WAVE_BINS     (1u << WAVE_BIN_BITS)

static __device__ __forceinline__ uint32_t *wave_hist(const bk_cuda_wave *w, int g, int qi)
{
    return w->bin_hist + (size_t)(2 * g + qi) * WAVE_BINS;
}

__global__ void __launch_bounds__(BK_CUDA_BLOCK)
    wave_bin_count(bk_cuda_wave w, int par, int g, int qi, uint32_t off, bk_vec3 lo, bk_vec3 scale)
{
    const uint32_t  n = w.count[8 * g + 2 * par + qi], nthreads = gridDim.x * blockDim.x;
    const uint32_t *q = w.queue[2 * par + qi] + off;
    uint32_t       *hist = wave_hist(&w, g, qi);
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += nthreads) {
        const bk_ray   r = w.rays[q[j]];
        const uint32_t k = bk_ray_order_key(&r, lo, scale) >> (BK_RAY_ORDER_KEY_BITS - WAVE_BIN_BITS);
        w.bin_keys[off + j] = k;
        atomicAdd(&hist[k], 1u);
    }
}

/* One block of 1024 threads: the counts become exclusive offsets. */
__global__ void __launch_bounds__(1024) wave_bin_scan(bk_cuda_wave w, int g, int qi)
{
    __shared__ uint32_t part[1024];
    const uint32_t      per = WAVE_BINS / 1024, t = threadIdx.x;
    uint32_t           *hist = wave_hist(&w, g, qi) + t * per;
    uint32_t            sum = 0;
    for (uint32_t k = 0; k < per; ++k) sum += hist[k];
    part[t] = sum;
    __syncthreads();
    for (uint32_t d = 1; d < 1024; d <<= 1) { /* inclusive scan of the parts */
        const uint32_t v = t >= d ? part[t - d] : 0u;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    uint32_t base = part[t] - sum;
    for (uint32_t k = 0; k < per; ++k) {
        const uint32_t c = hist[k];
        hist[k] = base;
        base += c;
    }
}

__global__ void __launch_bounds__(BK_CUDA_BLOCK) wave_bin_scatter(bk_cuda_wave w, int par, int g, int qi, uint32_t off)
{
    const uint32_t  n = w.count[8 * g + 2 * par + qi], nthreads = gridDim.x * blockDim.x;
    const uint32_t *q = w.queue[2 * par + qi] + off;
    uint32_t       *hist = wave_hist(&w, g, qi);
    for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += nthreads)
        w.bin_order[qi][off + atomicAdd(&hist[w.bin_keys[off + j]], 1u)] = q[j];
}

static wave_trace_fn wave_pick(const bk_accel_view *a, int mode, int any)
{
    switch (bk_traversal_index(a->type, mode, any, a->prim)) {
#define WAVE_PICK(A, S, Q, P) \
    case BK_TRAVERSAL_ID(A, S, Q, P): return wave_trace<BK_ACCEL_##A, BK_STACK_##S, Q, BK_PRIM_##P>;
        BK_TRAVERSALS(WAVE_PICK)
#undef WAVE_PICK
    default: return NULL;
    }
}

cudaError_t bk_cuda_wave_reserve(bk_cuda_wave *w, uint32_t slots, uint32_t whole, uint32_t pairs)
{
    cudaError_t e;
#define WAVE_ALLOC(ptr, bytes)                                       \
    if ((e = cudaMalloc((void **)&(ptr), (bytes))) != cudaSuccess) { \
        bk_cuda_wave_free(w);                                        \
        return e;                                                    \
    }
    if (slots > w->cap) {
        cudaFree(w->hot);
        cudaFree(w->pair);
        cudaFree(w->rays);
        cudaFree(w->hits);
        cudaFree(w->aux);
        for (int k = 0; k < 4; ++k) cudaFree(w->queue[k]);
        cudaFree(w->bin_keys);
        cudaFree(w->bin_order[0]);
        cudaFree(w->bin_order[1]);
        w->bin_keys = w->bin_order[0] = w->bin_order[1] = NULL;
        w->hot = NULL;
        w->pair = NULL;
        w->rays = NULL;
        w->hits = NULL;
        w->aux = NULL;
        for (int k = 0; k < 4; ++k) w->queue[k] = NULL;
        w->cap = 0;
        WAVE_ALLOC(w->hot, sizeof(float4) * 6 * (size_t)slots);
        WAVE_ALLOC(w->pair, sizeof(uint32_t) * (size_t)slots);
        WAVE_ALLOC(w->rays, sizeof(bk_ray) * (size_t)slots);
        WAVE_ALLOC(w->hits, sizeof(bk_hit) * (size_t)slots);
        WAVE_ALLOC(w->aux, sizeof(uint32_t) * (size_t)slots);
        for (int k = 0; k < 4; ++k) WAVE_ALLOC(w->queue[k], sizeof(uint32_t) * (size_t)slots);
        w->cap = slots;
    }
    if (whole > w->whole_cap) {
        cudaFree(w->paths);
        w->paths = NULL;
        w->whole_cap = 0;
        WAVE_ALLOC(w->paths, sizeof(bk_bake_path) * (size_t)whole);
        w->whole_cap = whole;
    }
    if (pairs > w->res_cap) {
        cudaFree(w->res);
        cudaFree(w->res_sq);
        cudaFree(w->res_dir);
        cudaFree(w->res_vis);
        w->res = NULL;
        w->res_sq = NULL;
        w->res_dir = NULL;
        w->res_vis = NULL;
        w->res_cap = 0;
        WAVE_ALLOC(w->res, sizeof(bk_f4) * (size_t)pairs);
        WAVE_ALLOC(w->res_sq, sizeof(float) * (size_t)pairs);
        w->res_cap = pairs;
    }
    if (!w->count) {
        WAVE_ALLOC(w->count, sizeof(uint32_t) * 17);
        w->next = w->count + 16;
        if ((e = cudaMallocHost((void **)&w->h_count, sizeof(uint32_t) * 16)) != cudaSuccess) {
            bk_cuda_wave_free(w);
            return e;
        }
        for (int g = 0; g < 2; ++g)
            if ((e = cudaStreamCreateWithFlags(&w->stream[g], cudaStreamNonBlocking)) != cudaSuccess ||
                (e = cudaEventCreateWithFlags(&w->ev[g], cudaEventDisableTiming)) != cudaSuccess) {
                bk_cuda_wave_free(w);
                return e;
            }
    }
#undef WAVE_ALLOC
    return cudaSuccess;
}

void bk_cuda_wave_free(bk_cuda_wave *w)
{
    cudaFree(w->paths);
    cudaFree(w->hot);
    cudaFree(w->pair);
    cudaFree(w->rays);
    cudaFree(w->hits);
    cudaFree(w->aux);
    for (int k = 0; k < 4; ++k) cudaFree(w->queue[k]);
    cudaFree(w->bin_keys);
    cudaFree(w->bin_order[0]);
    cudaFree(w->bin_order[1]);
    cudaFree(w->bin_hist);
    for (int g = 0; g < 2; ++g) {
        if (w->stream[g]) cudaStreamDestroy(w->stream[g]);
        if (w->ev[g]) cudaEventDestroy(w->ev[g]);
    }
    cudaFree(w->res);
    cudaFree(w->res_sq);
    cudaFree(w->res_dir);
    cudaFree(w->res_vis);
    cudaFree(w->count);
    cudaFreeHost(w->h_count);
    memset(w, 0, sizeof *w);
}

cudaError_t bk_cuda_wave_occupancy(const bk_accel_view *a, int stack_mode, size_t smem, int *per_sm)
{
    *per_sm = 0;
    for (int any = 0; any < 2; ++any) {
        wave_trace_fn k = wave_pick(a, stack_mode, any);
        if (!k) return cudaErrorInvalidDeviceFunction;
        int b = 0;
        if (smem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (e != cudaSuccess) return e;
        }
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k, BK_CUDA_BLOCK, smem);
        if (e != cudaSuccess) return e;
        if (!any || b < *per_sm) *per_sm = b;
    }
    return cudaSuccess;
}

/* The waves of one job, until no path needs a ray. The slots form two groups, each waving on a
 * stream of its own, so one group's step kernel runs beside the other's traces (the step is a
 * fifth of the work and waits on memory, the traces on the SM's pipes); they share only the
 * counter of the next pair. A group's trace kernels run one after the other and spill to the
 * group's own spill region. */
static cudaError_t wave_run(bk_cuda_wave *w, wave_trace_fn tr[2], unsigned blocks, size_t smem, const bk_bake_view *v,
                            const bk_bake_params *p, const wave_job *J, int stack_size, uint32_t *spill,
                            unsigned long long *stats, int bin)
{
    const bk_vec3  scale = bk_ray_order_scale(v->accel.lo, v->accel.hi);
    const int      batch = 8; /* waves launched between two looks at the queues */
    const size_t   spill_group = (size_t)blocks * BK_CUDA_BLOCK * BK_STACK_ENTRIES * BK_STACK_WIDTH;
    const uint32_t first = J->slots, half = J->slots / 2, off[2] = { 0, half }, n0[2] = { half, J->slots - half };
    cudaError_t    e;
    if ((e = cudaMemsetAsync(w->count, 0, sizeof(uint32_t) * 16, w->stream[0])) != cudaSuccess ||
        (e = cudaMemcpyAsync(w->next, &first, sizeof first, cudaMemcpyHostToDevice, w->stream[0])) != cudaSuccess ||
        (e = cudaEventRecord(w->ev[0], w->stream[0])) != cudaSuccess ||
        (e = cudaStreamWaitEvent(w->stream[1], w->ev[0], 0)) != cudaSuccess)
        return e;
    for (int g = 0; g < 2; ++g)
        wave_step<<<blocks, BK_CUDA_BLOCK, 0, w->stream[g]>>>(*w, *v, *p, *J, 1, 0, g, off[g], n0[g]);
    for (int par = 0;;) {
        for (int k = 0; k < batch; ++k) {
            for (int g = 0; g < 2; ++g) {
                cudaStream_t st = w->stream[g];
                for (int q = 0; q < 2; ++q) {
                    if (bin) {
                        if ((e = cudaMemsetAsync(w->bin_hist + (size_t)(2 * g + q) * WAVE_BINS, 0,
                                                 sizeof(uint32_t) * WAVE_BINS, st)) != cudaSuccess)
                            return e;
                        wave_bin_count<<<blocks, BK_CUDA_BLOCK, 0, st>>>(*w, par, g, q, off[g], v->accel.lo, scale);
                        wave_bin_scan<<<1, 1024, 0, st>>>(*w, g, q);
                        wave_bin_scatter<<<blocks, BK_CUDA_BLOCK, 0, st>>>(*w, par, g, q, off[g]);
                    }
                    tr[q]<<<blocks, BK_CUDA_BLOCK, smem, st>>>(*w, v->accel, par, g, off[g], stack_size,
                                                               spill ? spill + g * spill_group : NULL, stats, bin);
                }
                /* the next wave's queue lengths and fetch counters */
                if ((e = cudaMemsetAsync(w->count + 8 * g + 2 * (par ^ 1), 0, sizeof(uint32_t) * 2, st)) !=
                        cudaSuccess ||
                    (e = cudaMemsetAsync(w->count + 8 * g + 4 + 2 * (par ^ 1), 0, sizeof(uint32_t) * 2, st)) !=
                        cudaSuccess)
                    return e;
                wave_step<<<blocks, BK_CUDA_BLOCK, 0, st>>>(*w, *v, *p, *J, 0, par ^ 1, g, off[g], n0[g]);
            }
            par ^= 1;
        }
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
        if ((e = cudaEventRecord(w->ev[1], w->stream[1])) != cudaSuccess ||
            (e = cudaStreamWaitEvent(w->stream[0], w->ev[1], 0)) != cudaSuccess ||
            (e = cudaMemcpyAsync(w->h_count, w->count, sizeof(uint32_t) * 16, cudaMemcpyDeviceToHost, w->stream[0])) !=
                cudaSuccess ||
            (e = cudaStreamSynchronize(w->stream[0])) != cudaSuccess)
            return e;
        if (!w->h_count[2 * par] && !w->h_count[2 * par + 1] && !w->h_count[8 + 2 * par] &&
            !w->h_count[8 + 2 * par + 1])
            return cudaSuccess;
    }
}

cudaError_t bk_cuda_bake_wave(bk_cuda_wave *w, int stack_mode, unsigned blocks, size_t smem, const bk_bake_view *v,
                              const bk_bake_params *p, const bk_texel *tx, float *pos, uint32_t begin, uint32_t end,
                              int stack_size, uint32_t *spill, bk_f4 *out, float *sq, bk_f4 *ext,
                              unsigned long long *stats, int bin)
{
    wave_trace_fn tr[2] = { wave_pick(&v->accel, stack_mode, 1), wave_pick(&v->accel, stack_mode, 0) };
    if (bin && !w->bin_keys) {
        cudaError_t e;
        if ((e = cudaMalloc((void **)&w->bin_keys, sizeof(uint32_t) * (size_t)w->cap)) != cudaSuccess ||
            (e = cudaMalloc((void **)&w->bin_order[0], sizeof(uint32_t) * (size_t)w->cap)) != cudaSuccess ||
            (e = cudaMalloc((void **)&w->bin_order[1], sizeof(uint32_t) * (size_t)w->cap)) != cudaSuccess)
            return e;
        if (!w->bin_hist && (e = cudaMalloc((void **)&w->bin_hist, sizeof(uint32_t) * 4 * WAVE_BINS)) != cudaSuccess)
            return e;
    }
    if (!tr[0] || !tr[1]) return cudaErrorInvalidDeviceFunction;
    const uint32_t nt = end - begin;
    const uint32_t ne = bk_bake_ext_count(p);
    if (nt > w->res_cap || !w->cap || !w->whole_cap || (ne && !ext)) return cudaErrorInvalidValue;
    wave_job    J = { tx, pos, out, sq, ne ? ext : NULL, ne, begin, 0, nt, nt < w->whole_cap ? nt : w->whole_cap };
    cudaError_t e;
    if (p->directional && !w->res_dir &&
        (e = cudaMalloc((void **)&w->res_dir, 3 * sizeof(bk_f4) * (size_t)w->res_cap)) != cudaSuccess)
        return e;
    if (p->mask_count && !w->res_vis &&
        (e = cudaMalloc((void **)&w->res_vis, sizeof(uint32_t) * (size_t)w->res_cap)) != cudaSuccess)
        return e;
    /* the groups' streams start after what the default stream has queued, and it waits for them */
    if ((e = cudaEventRecord(w->ev[0], 0)) != cudaSuccess ||
        (e = cudaStreamWaitEvent(w->stream[0], w->ev[0], 0)) != cudaSuccess)
        return e;
    if (p->sample_begin == 0 &&
        (e = wave_run(w, tr, blocks, smem, v, p, &J, stack_size, spill, stats, bin)) != cudaSuccess)
        return e;
    /* the samples, as many at a time as the results have room for */
    const uint32_t run = (uint32_t)(w->res_cap / nt);
    for (uint32_t s0 = p->sample_begin; s0 < p->sample_end; s0 += run) {
        bk_bake_params ps = *p;
        ps.sample_begin = s0;
        ps.sample_end = p->sample_end - s0 > run ? s0 + run : p->sample_end;
        J.ns = ps.sample_end - s0;
        J.total = nt * J.ns;
        J.slots = J.total < w->cap ? J.total : w->cap;
        if ((e = wave_run(w, tr, blocks, smem, v, &ps, &J, stack_size, spill, stats, bin)) != cudaSuccess) return e;
        wave_sum<<<blocks, BK_CUDA_BLOCK, 0, w->stream[0]>>>(*w, J, ps);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    if ((e = cudaEventRecord(w->ev[0], w->stream[0])) != cudaSuccess) return e;
    return cudaStreamWaitEvent(0, w->ev[0], 0);
}
