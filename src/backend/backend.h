/* backend.h - the tracing backends behind one interface (the ggml habit: a struct of function
 * pointers plus a context; a backend says what it cannot do instead of failing).
 *
 * Pipeline: bk_accel -> backend upload -> backend trace(rays) -> hits + counter totals.
 * "cpu" runs kernels/bk_traverse.h in threads; "cuda" (kernels/cuda/cuda_backend.cu) runs the same code in a
 * persistent-threads kernel. The registry (src/registry/registry.h) makes them by name.
 */
#ifndef BK_BACKEND_H
#define BK_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "bk_traverse.h"
#include "bk_bake.h"
#include "bk_denoise.h"
#include "bk_texel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How the CUDA trace kernel aggregates its counters' atomics (--counters), one row each:
 * X(NAME, "name", "what it is"); the enum, the names and the kernels expand it. */
#define BK_COUNTER_MODES(X)                                           \
    X(THREAD, "thread", "one atomic per thread")                      \
    X(WARP, "warp", "one atomic per warp: the leader adds the count") \
    X(BLOCK, "block", "one atomic per block, summed in shared memory")
#define BK_COUNTERS_ENUM_(N, S, D) BK_COUNTERS_##N,
enum bk_counters { BK_COUNTER_MODES(BK_COUNTERS_ENUM_) BK_COUNTERS_COUNT };
#undef BK_COUNTERS_ENUM_

typedef struct bk_trace_opts {
    int       any_hit;              /* 0: closest hit; 1: any hit (occlusion) */
    int       stack_mode;           /* enum bk_stack_mode */
    int       stack_size;           /* short / spill: entries in the fast part (1..BK_STACK_ENTRIES) */
    int       counters;             /* enum bk_counters: how the CUDA kernel aggregates its atomics */
    int       threads;              /* cpu: worker threads, 0 = all cores */
    uint32_t *ray_stats;            /* trace: NULL, or n words out: (deepest stack << 24) | nodes visited,
                                       each saturated, per ray (host memory) */
    int reg_cap;                    /* bake kernel: registers per thread, 0 = the default launch bounds; one
                                       of BK_REG_CAPS (cuda); the CPU backend supports only 0 */
    struct bk_occupancy *occupancy; /* bake: NULL (the normal bake), or sums each launch adds to,
                                       from per-warp SM ids and timestamps (benchmarks only) */
    int bvh_width;                  /* BVH layout traced: 0 = the backend's fastest (cpu: the 8-wide BVH of
                                       src/accel/bvh_wide.h for triangles with the global stack; cuda: the binary
                                       one, see kernels/cuda/cuda_backend.cu), 2 = the binary one (--accel bvh2), 8 = the
                                       compressed 8-wide BVH of src/accel/bvh_cw.h on either backend (--accel
                                       cwbvh); all return the same hits */
    int wavefront;                  /* bake: 0 = one kernel walks whole paths (megakernel), 1 = paths in
                                       buffers, traced in waves (cuda, kernels/cuda/bake.cu); the cpu bakes one
                                       texel at a time either way, with the same result */
    int cpu_isa;                    /* cpu, wide BVH: enum bk_wbvh_isa (0 = the best the CPU has,
                                       1 = scalar: tests and comparisons) */
    int ray_order;                  /* trace: enum bk_ray_order. Sorted: the rays are traced in the order
                                       of bk_ray_order_key (kernels/bk_ray.h), each hit still lands at its
                                       ray's index; the sort counts in the trace time. Closest hits are the
                                       same in either order; an any hit may name another triangle. */
    int order_bits;                 /* trace, sorted or binned: the key's top bits sorted by (1..24), 0 = the
                                       order's own (24, BK_RAY_ORDER_BINNED_BITS); benchmarks */
    int order_copy;                 /* cuda trace, sorted or binned: 0 = the backend's choice, 1 = each thread
                                       fetches its ray through the sorted indices, 2 = the rays are copied
                                       into order first and the hits scattered back (both timed) */
} bk_trace_opts;

/* auto: the backend's faster order (cuda: input for few rays or rays already coherent in their
 * own order, else binned (kernels/bk_ray.h); cpu: input, where the sort costs about what the
 * coherence saves). binned: sorted by the key's top BK_RAY_ORDER_BINNED_BITS, fewer passes. */
enum bk_ray_order { BK_RAY_ORDER_AUTO = 0, BK_RAY_ORDER_INPUT = 1, BK_RAY_ORDER_SORTED = 2, BK_RAY_ORDER_BINNED = 3 };
/* The key bits a sorted trace with o sorts the rays by: o->order_bits when set, else
 * BK_RAY_ORDER_KEY_BITS for sorted and BK_RAY_ORDER_BINNED_BITS for binned (and auto's sort). */
int bk_ray_order_bits(const bk_trace_opts *o);

/* The register caps the bake kernel is compiled for: 0 (launch bounds (128, 4): at most 128
 * registers), 32 (launch bounds (128, 16): 65536 registers / (128 x 16) threads = 32 each, the
 * cap a GTX 1060-era engine used for occupancy) and 48 (launch bounds (128, 10)), the best for the
 * short and spill stacks (src/cmd/cmd_bake.c). One list: kernels/cuda/bake.cu instantiates it,
 * cuda_supports checks it, `baker bench stacks` walks it. */
#define BK_REG_CAPS(X) X(0) X(32) X(48)

/* What a GPU backend's bake kernel is, for the options given (CUDA: cudaFuncGetAttributes and the
 * occupancy calculator). Per-thread and per-block figures, not totals. */
typedef struct bk_kernel_info {
    int      registers;        /* per thread (numRegs) */
    uint32_t local_bytes;      /* per thread: local memory (localSizeBytes): register spills,
                                  the call stack and the global strategy's stack array */
    uint32_t shared_static;    /* per block: __shared__ variables (sharedSizeBytes) */
    uint32_t shared_dynamic;   /* per block: the short/spill stack, stack_size x width x block x 4 */
    int      max_threads;      /* per block the kernel can be launched with (maxThreadsPerBlock) */
    int      block;            /* threads per block the backend launches */
    int      blocks_per_sm;    /* resident at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor) */
    int      max_warps_per_sm; /* the device's maxThreadsPerMultiProcessor / 32 */
    int      sm_count;
    double   occupancy; /* theoretical: blocks_per_sm x block / 32 / max_warps_per_sm */
} bk_kernel_info;

/* Achieved occupancy of bake launches (bk_trace_opts.occupancy). Each warp of each launch records
 * its SM (%smid) and globaltimer at its start and its end; after each launch the backend adds
 *   warp_ns     sum over warps of (end - start)                      active warp-nanoseconds
 *   block_ns    sum over blocks of (last end - first start) x warps   the same, counting a block's
 *                                                                    warps until its last one ends
 *   capacity_ns SMs x (last end - first start of the launch) x max warps per SM
 * so achieved occupancy = warp_ns / capacity_ns: the mean share of the GPU's warp slots holding a
 * running warp while the kernel ran (what Nsight's sm__warps_active ratio approximates). */
typedef struct bk_occupancy {
    double   warp_ns, block_ns, capacity_ns;
    uint32_t launches;
    uint32_t sms_used; /* most distinct SMs one launch ran on */
} bk_occupancy;

typedef struct bk_trace_totals {
    uint64_t rays, nodes, tris, restarts, spills; /* rays: traced (bake: all rays of all paths) */
    double   seconds;                             /* the trace alone (cuda: kernel time from events) */
    double   upload_seconds;                      /* cuda: rays to the device and hits back */
    double   sort_seconds;                        /* rays traced sorted (bk_trace_opts.ray_order): the keys and
                                                     their sort, the copies of order_copy, and auto's
                                                     sampling (part of seconds) */
    int    sorted;                                /* 1: the rays were traced sorted */
    int    order_bits;                            /* sorted: by the key's top order_bits bits */
    double coherence; /* --ray-order auto on the cuda backend: bk_ray_order_coherence of the rays,
                         which chose the order; -1 when no rays were sampled (fewer than
                         BK_RAY_ORDER_AUTO_MIN, another order, the cpu backend) */
} bk_trace_totals;

/* What a backend is, so that callers never test its name (CONVENTIONS: Backends). */
typedef struct bk_backend_caps {
    int devices;        /* devices it bakes on (the CPU: 1, all its cores) */
    int gpu_primitives; /* 1: statistics and ray binning run through bk_gpu_ops (gpu_ops.h) on
                           the same kind of device; 0: on the host */
    /* The bake's launch policy (bk_bake_texels): a launch lasts about launch_budgets times
     * --max-launch-ms (a GPU: 1, its watchdog's budget; the CPU has none: 5, only pacing the
     * progress bar), and the first block holds first_block texels unless kernel_info() says how
     * many the device holds at once. */
    double   launch_budgets;
    uint32_t first_block;
    /* 1: bake_begin copies the texels into memory of its own (a GPU's) and keeps that copy
     * after bake_end for denoise() (tx NULL): the caller's texels may go once every device has
     * begun (bk_bake_run_opts.texels_kept). 0: it reads the caller's texels in place (the CPU). */
    int keeps_texels;
    /* the device's number (CUDA's) for a backend of one GPU, for bk_backend_free_last; -1 for
       the host and for a group (its members say theirs) */
    int device;
} bk_backend_caps;

typedef struct bk_backend bk_backend;
struct bk_backend_i {
    const char *(*name)(bk_backend *be);
    /* 1 when the options can run; else 0 and a reason in why */
    int (*supports)(bk_backend *be, const bk_trace_opts *o, char *why, size_t why_size);
    /* scene's host arrays stay the caller's and must live until the next upload or free: the CPU
     * traces them in place, and a GPU may collapse them into another layout on first use */
    int (*upload)(bk_backend *be, const bk_accel_view *scene, char *err, size_t err_size);
    int (*trace)(bk_backend *be, const bk_ray *rays, bk_hit *hits, uint64_t n, const bk_trace_opts *o,
                 bk_trace_totals *totals, char *err, size_t err_size);
    /* The bake: begin uploads the shading data and the texels (after upload() of the accel) and
     * zeroes the per-texel sums; the texels stay the caller's and must live until end (a host
     * backend reads them in place, without a copy); run adds samples [p->sample_begin,
     * p->sample_end) of texels [begin, end) and returns when done (one bounded GPU launch); fetch
     * copies the sums of texels [begin, end) into out[0 .. end - begin): rgb and, in w, the count
     * of the inside step's rays that met a back face (kernels/bk_bake.h); and into sq (unless
     * NULL) the sums of the samples' squared luminances; end releases the bake, after fetching
     * every texel's sums into out and sq as fetch would, unless out is NULL (the caller fetched
     * them in slices: a slice at a time needs no host copy of all the sums). */
    int (*bake_begin)(bk_backend *be, const bk_bake_view *v, const bk_texel *texels, uint32_t n, char *err,
                      size_t err_size);
    int (*bake_run)(bk_backend *be, uint32_t begin, uint32_t end, const bk_bake_params *p, const bk_trace_opts *o,
                    char *err, size_t err_size);
    int (*bake_fetch)(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, float *sq, char *err, size_t err_size);
    int (*bake_end)(bk_backend *be, bk_f4 *out, float *sq, bk_trace_totals *totals, char *err, size_t err_size);
    /* Memory of its own the backend works in (a GPU's): free and total bytes now; both 0 when it
     * works in host memory. What a bake needs there is bk_bake_estimate()'s device figure. */
    void (*memory)(bk_backend *be, uint64_t *free_bytes, uint64_t *total_bytes);
    /* The most memory of its own the backend has seen in use since it was made, in bytes (CUDA:
     * the device's total - free, sampled after each of the backend's allocations: its context,
     * its buffers, and whatever else holds the device); 0 when it works in host memory. */
    uint64_t (*memory_peak)(bk_backend *be);
    /* Facts about the bake kernel the options select (registers, local and shared memory,
     * theoretical occupancy). 0, or -1 with the reason in err: the CPU backend has no kernel. */
    int (*kernel_info)(bk_backend *be, const bk_trace_opts *o, bk_kernel_info *out, char *err, size_t err_size);
    /* The denoiser's passes over one page, given as its n texels (pixel - base: the texel's place
     * in the page), their charts (texel i's is chart[i * chart_stride]: 1 for an array of charts,
     * 2 for the tri fields of bk_texel_refs that hold charts; BK_DN_NONE: left out) and colours
     * (rgb, variance), which are replaced by the filtered ones (kernels/bk_denoise.h), as are band's
     * (NULL, or 3 per texel: a directional bake's bands, filtered with the colours' weights); *seconds
     * gets the time of the filtering itself (a GPU's: its kernels). tx NULL: the page's texels
     * are texels [first, first + n) of the last bake, whose copy the backend kept
     * (caps().keeps_texels; else an error); otherwise first is not used. */
    int (*denoise)(bk_backend *be, const bk_denoise_params *p, int passes, const bk_texel *tx, uint32_t first,
                   const uint32_t *chart, uint32_t chart_stride, bk_f4 *col, bk_f4 *band, uint32_t n, uint64_t base,
                   double *seconds, char *err, size_t err_size);
    void (*free)(bk_backend *be);
    void (*caps)(bk_backend *be, bk_backend_caps *out);
    /* A backend over several devices (bk_backend_group; caps().devices > 1): its k-th member, a
     * backend of one device, for k in [0, devices). NULL in a one-device backend. The bake driver
     * (bk_bake_texels) runs each member's bake on a thread of its own; the group's own bake_*
     * functions only refuse. */
    bk_backend *(*member)(bk_backend *be, int k);
    /* A backend that keeps its own copy of the texels (caps().keeps_texels) may begin a bake with
     * texels NULL: its copy is then filled by these calls, texels [first, first + count) each,
     * before the first bake_run, so that the host never holds every texel at once (the bake
     * driver makes them a slice at a time: bk_bake_run_opts.make_texels). A call may return before
     * its copy is done: the caller keeps that slice of texels as it is until the next call returns,
     * which waits for it (count 0: only that wait), so two slices in turns let the host make one
     * while the other goes up. NULL elsewhere. */
    int (*bake_texels)(bk_backend *be, uint32_t first, uint32_t count, const bk_texel *texels, char *err,
                       size_t err_size);
    /* Instead of bake_texels: the backend makes texels [first, first + count) itself from their
     * refs (pixel and triangle), with src's atlas UVs, pages and normals and the bake's shading
     * triangles (bk_texel_make, kernels/bk_texel.h: the same bits as bk_texels_make), so the host
     * neither makes them nor hands over 32 B each. src (host arrays) is the same for every call of
     * one bake and is read at the first. NULL where the backend cannot. */
    int (*bake_refs)(bk_backend *be, const bk_texel_src *src, uint32_t first, uint32_t count, const bk_texel_ref *refs,
                     char *err, size_t err_size);
    /* Host memory the backend's transfers read and write fastest (CUDA: page-locked, usable by
     * every device of the process), for the bake's slices of texels and sums; NULL hooks: plain
     * malloc and free (a host backend's memory is all alike). host_alloc returns NULL when out of
     * memory. */
    void *(*host_alloc)(bk_backend *be, size_t bytes);
    void (*host_free)(bk_backend *be, void *p);
    /* The extra sums of texels [begin, end) (kernels/bk_bake.h, bk_bake_ext_count(p) per texel for
     * the bake_run's params p: a directional bake's three bands, rgb in each, bk_bake_dir_sample;
     * then a shadowmask's channels, bk_bake_path.mask) into out, like bake_fetch; valid until
     * bake_end. Every bake_run of one bake has the same count. NULL where the backend cannot bake them. */
    int (*bake_fetch_ext)(bk_backend *be, uint32_t begin, uint32_t end, bk_f4 *out, char *err, size_t err_size);
    /* Light probes (kernels/bk_bake.h, bk_bake_probe), between bake_begin and bake_end (which
     * counts their rays and time): samples [0, p->spp) of each of the n probes at pos (3 floats
     * each) into sums, BK_PROBE_SUMS per probe, as chunks of BK_PROBE_CHUNK samples added in order
     * (bk_probe_chunks_sum), so every backend gives the same bits. p->directional and
     * p->mask_count must be 0 (bk_bake_probes sees to it). NULL where the backend cannot. */
    int (*bake_probes)(bk_backend *be, const float *pos, uint32_t n, const bk_bake_params *p, const bk_trace_opts *o,
                       float *sums, char *err, size_t err_size);
};
struct bk_backend {
    const struct bk_backend_i *i;
    void                      *ctx;
};

bk_trace_opts bk_trace_opts_default(void);
/* Making a backend by name ("cpu", "cuda", "auto") is the registry's (src/registry/registry.h). */
void bk_backend_free(bk_backend *be);

/* A backend over members[0 .. n) (n >= 2, backends of one device each), which it owns from then on
 * (also on failure): upload goes to every member in parallel, trace, kernel_info and denoise run
 * on member 0, supports() asks all, memory_peak is the largest member's. NULL when out of memory. */
bk_backend *bk_backend_group(bk_backend **members, int n);
/* be's k-th member (backend.h: member), or be itself for k = 0 in a one-device backend. */
bk_backend *bk_backend_member(bk_backend *be, int k);
bk_backend *bk_backend_cpu_init(void);

/* The compressed 8-wide BVH (src/accel/bvh_cw.h) of a binary BVH of triangles, for a backend that traces
 * it (bk_trace_opts.bvh_width): NULL when bin has none (a KD-tree, voxels, a tree too deep for the
 * layout, out of memory: the backend traces bin). *view gets its view, host pointers. */
struct bk_cwbvh *bk_backend_cw_layout(const bk_accel_view *bin, bk_accel_view *view);
void             bk_backend_cw_free(struct bk_cwbvh *cw);

/* The names of BK_STACK_MODES and BK_COUNTER_MODES ("?" for a value out of range), the value of a
 * name (-1 when unknown), and a line saying what each is (for help text; "" out of range). */
const char *bk_stack_mode_name(int mode);
int         bk_stack_mode_parse(const char *s);
const char *bk_stack_mode_about(int mode);
const char *bk_counters_name(int c);
int         bk_counters_parse(const char *s);
const char *bk_counters_about(int c);
/* All the names into buf, between sep with last before the last one: (", ", " or ") gives
 * "global, short or spill", ("|", "|") "global|short|spill". Returns buf. */
const char *bk_stack_mode_names(char *buf, size_t size, const char *sep, const char *last);
const char *bk_counters_names(char *buf, size_t size, const char *sep, const char *last);

#ifdef __cplusplus
}
#endif
#endif
