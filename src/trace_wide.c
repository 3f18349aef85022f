/* trace_wide.c - the CPU traversal of the wide BVH (src/bvh_wide.h): AVX2 (one 8-lane slab test
 * per node) or SSE4.1 (two 4-lane ones), chosen at run time with __builtin_cpu_supports and
 * compiled with per-function target attributes (the rest of baker keeps the baseline x86-64 ISA,
 * never -march=native), and a scalar fallback that visits the same nodes and gives the same hits.
 * Measured on sponza (1M diffuse rays, one thread, AVX2): 8 children 3.2 / 5.5 Mrays/s closest /
 * any, 4 children 2.9 / 4.7; any hit pushes children in slot order, unsorted, as Embree's
 * occlusion rays do (4.5 -> 5.8 Mrays/s, and fewer nodes: 4.4 per ray instead of 5.2). The loop itself is src/trace_wide_body.h, included
 * once per instruction set.
 *
 * Pipeline: backend_cpu.c (trace, --accel bvh, global stack) -> bk_wbvh_trace -> hits.
 */
#include "bvh_wide.h"
#include "bk_traverse.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#  include <immintrin.h>
#  define WIDE_HAVE_X86 1
#else
#  define WIDE_HAVE_X86 0
#endif

/* Entries pending at most: up to 3 per wide level, and a wide tree is no deeper than its binary
 * one (bk_wbvh_build refuses deeper than BK_MAX_DEPTH). */
#define WIDE_STACK ((BK_WBVH_WIDTH - 1) * (BK_MAX_DEPTH + 2))

static inline __attribute__((always_inline)) void wide_prefetch(const bk_wbvh *w, int32_t ref)
{
    if (ref >= 0) {
        const char *p = (const char *)(w->nodes + ref);
        for (size_t k = 0; k < sizeof(bk_wbvh_node); k += 64) __builtin_prefetch(p + k);
    } else {
        __builtin_prefetch(w->bin.tris + 3 * (size_t)(uint32_t)~ref);
    }
}

#define WIDE_SIMD 0
#define WIDE_ATTR
#define WIDE_NAME wide_trace_scalar
#include "trace_wide_body.h"
#undef WIDE_SIMD
#undef WIDE_ATTR
#undef WIDE_NAME

static __attribute__((noinline)) bk_hit wide_trace_scalar_closest(const bk_wbvh *w, const bk_ray *ray, bk_trace_stats *st)
{
    return wide_trace_scalar(w, ray, 0, st);
}
static __attribute__((noinline)) bk_hit wide_trace_scalar_any(const bk_wbvh *w, const bk_ray *ray, bk_trace_stats *st)
{
    return wide_trace_scalar(w, ray, 1, st);
}

#if WIDE_HAVE_X86
#  define WIDE_SIMD 1
#  define WIDE_ATTR __attribute__((target("sse4.1")))
#  define WIDE_NAME wide_trace_sse41
#  include "trace_wide_body.h"
#  undef WIDE_SIMD
#  undef WIDE_ATTR
#  undef WIDE_NAME
#  define WIDE_SIMD 2
#  define WIDE_ATTR __attribute__((target("avx2")))
#  define WIDE_NAME wide_trace_avx2
#  include "trace_wide_body.h"
#  undef WIDE_SIMD
#  undef WIDE_ATTR
#  undef WIDE_NAME
#endif

/* One loop per ISA x query, so the traversal is specialised for a constant any_hit. */
#define WIDE_LOOP(NAME, ATTR, FN, ANY)                                                                        \
    ATTR static void NAME(const bk_wbvh *w, const bk_ray *rays, bk_hit *hits, uint64_t begin, uint64_t end,    \
                          uint32_t *ray_stats, uint64_t acc[2])                                              \
    {                                                                                                        \
        for (uint64_t i = begin; i < end; ++i) {                                                             \
            bk_trace_stats st;                                                                               \
            memset(&st, 0, sizeof st);                                                                       \
            hits[i] = FN(w, &rays[i], ANY, &st);                                                             \
            if (ray_stats) ray_stats[i] = bk_ray_stat_word(&st);                                             \
            acc[0] += st.nodes; acc[1] += st.tris;                                                           \
        }                                                                                                    \
    }
WIDE_LOOP(loop_scalar_0, , wide_trace_scalar, 0)
WIDE_LOOP(loop_scalar_1, , wide_trace_scalar, 1)
#if WIDE_HAVE_X86
WIDE_LOOP(loop_sse41_0, __attribute__((target("sse4.1"))), wide_trace_sse41, 0)
WIDE_LOOP(loop_sse41_1, __attribute__((target("sse4.1"))), wide_trace_sse41, 1)
WIDE_LOOP(loop_avx2_0, __attribute__((target("avx2"))), wide_trace_avx2, 0)
WIDE_LOOP(loop_avx2_1, __attribute__((target("avx2"))), wide_trace_avx2, 1)
#endif

int bk_wbvh_isa_best(void)
{
#if WIDE_HAVE_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) return BK_WBVH_ISA_AVX2;
    if (__builtin_cpu_supports("sse4.1")) return BK_WBVH_ISA_SSE41;
#endif
    return BK_WBVH_ISA_SCALAR;
}

const char *bk_wbvh_isa_name(int isa)
{
    return isa == BK_WBVH_ISA_AVX2 ? "avx2" : isa == BK_WBVH_ISA_SSE41 ? "sse4.1" : isa == BK_WBVH_ISA_SCALAR ? "scalar" : "auto";
}

void bk_wbvh_trace(const bk_wbvh *w, const bk_ray *rays, bk_hit *hits, uint64_t begin, uint64_t end, int any_hit,
                   int isa, uint32_t *ray_stats, uint64_t acc[2])
{
    int best = bk_wbvh_isa_best();
    if (isa == BK_WBVH_ISA_AUTO || isa > best) isa = best;      /* never more than the CPU has */
#if WIDE_HAVE_X86
    if (isa == BK_WBVH_ISA_AVX2) {
        (any_hit ? loop_avx2_1 : loop_avx2_0)(w, rays, hits, begin, end, ray_stats, acc);
        return;
    }
    if (isa == BK_WBVH_ISA_SSE41) {
        (any_hit ? loop_sse41_1 : loop_sse41_0)(w, rays, hits, begin, end, ray_stats, acc);
        return;
    }
#endif
    (any_hit ? loop_scalar_1 : loop_scalar_0)(w, rays, hits, begin, end, ray_stats, acc);
}
