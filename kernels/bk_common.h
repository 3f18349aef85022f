/* bk_common.h - the few definitions every shared host/device header needs.
 *
 * Compiled by gcc (C11) and by nvcc (CUDA C++): no compound literals, no designated initialisers,
 * no VLAs, no allocation, no I/O, no globals. BK_HD marks a function that runs on both sides
 * (the pbrt-v4 idea); small vector helpers follow the stb style, one line each.
 */
#ifndef BK_COMMON_H
#define BK_COMMON_H

#include <stdint.h>
#include <float.h>

/* BK_HDI: always inlined, for the traversal's pieces, so each call site with constant stack
 * mode and query gets its own specialised copy on both sides. BK_HDN: never inlined, one copy
 * per file that calls it (none in a file that does not). */
#if defined(__CUDACC__)
#define BK_HD      static inline __host__ __device__
#define BK_HDI     static __forceinline__ __host__ __device__
#define BK_HDN     static __noinline__ __host__ __device__
#define BK_ALIGN16 alignas(16)
#else
#define BK_HD      static inline
#define BK_HDI     static inline __attribute__((always_inline))
#define BK_HDN     static __attribute__((noinline, unused))
#define BK_ALIGN16 _Alignas(16)
#endif

#if defined(__CUDA_ARCH__)
#define BK_DEVICE_CODE 1
#else
#define BK_DEVICE_CODE 0
#endif

/* A compile-time check, in C11 and in CUDA C++ alike. */
#if defined(__cplusplus)
#define BK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define BK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define BK_INF    (__builtin_inff())
#define BK_NO_HIT 0xFFFFFFFFu

typedef struct bk_vec3 {
    float x, y, z;
} bk_vec3;
/* 16-byte vector: one coalesced load on the GPU. */
typedef struct bk_f4 {
    BK_ALIGN16 float x;
    float            y, z, w;
} bk_f4;

BK_HD bk_vec3 bk_v3(float x, float y, float z)
{
    bk_vec3 r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
BK_HD bk_vec3 bk_add3(bk_vec3 a, bk_vec3 b) { return bk_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
BK_HD bk_vec3 bk_sub3(bk_vec3 a, bk_vec3 b) { return bk_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
BK_HD bk_vec3 bk_mul3(bk_vec3 a, float s) { return bk_v3(a.x * s, a.y * s, a.z * s); }
BK_HD bk_vec3 bk_min3(bk_vec3 a, bk_vec3 b)
{
    return bk_v3(a.x < b.x ? a.x : b.x, a.y < b.y ? a.y : b.y, a.z < b.z ? a.z : b.z);
}
BK_HD bk_vec3 bk_max3(bk_vec3 a, bk_vec3 b)
{
    return bk_v3(a.x > b.x ? a.x : b.x, a.y > b.y ? a.y : b.y, a.z > b.z ? a.z : b.z);
}
BK_HD float   bk_dot3(bk_vec3 a, bk_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
BK_HD bk_vec3 bk_cross3(bk_vec3 a, bk_vec3 b)
{
    return bk_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
BK_HD float   bk_comp3(bk_vec3 a, int k) { return k == 0 ? a.x : (k == 1 ? a.y : a.z); }
BK_HD float   bk_minf(float a, float b) { return a < b ? a : b; }
BK_HD float   bk_maxf(float a, float b) { return a > b ? a : b; }
BK_HD float   bk_absf(float a) { return a < 0.0f ? -a : a; }
BK_HD bk_vec3 bk_f4_xyz(bk_f4 a) { return bk_v3(a.x, a.y, a.z); }

/* Multiply and add that the compiler may not fuse into an FMA. gcc builds the host code with
 * -ffp-contract=off; nvcc contracts by default, so the device side says so explicitly where a
 * result must match the CPU bit for bit (the ray/triangle test decides hits and their t). */
#if BK_DEVICE_CODE
BK_HD float  bk_mul(float a, float b) { return __fmul_rn(a, b); }
BK_HD float  bk_add(float a, float b) { return __fadd_rn(a, b); }
BK_HD float  bk_sub(float a, float b) { return __fsub_rn(a, b); }
BK_HD double bk_dmul(double a, double b) { return __dmul_rn(a, b); }
BK_HD double bk_dadd(double a, double b) { return __dadd_rn(a, b); }
#else
BK_HD float  bk_mul(float a, float b) { return a * b; }
BK_HD float  bk_add(float a, float b) { return a + b; }
BK_HD float  bk_sub(float a, float b) { return a - b; }
BK_HD double bk_dmul(double a, double b) { return a * b; }
BK_HD double bk_dadd(double a, double b) { return a + b; }
#endif

/* A 16-byte load; on the device through the read-only path. */
BK_HD bk_f4 bk_load4(const bk_f4 *p)
{
#if BK_DEVICE_CODE
    float4 v = __ldg((const float4 *)p);
    bk_f4  r;
    r.x = v.x;
    r.y = v.y;
    r.z = v.z;
    r.w = v.w;
    return r;
#else
    return *p;
#endif
}

BK_HD uint32_t bk_load_u32(const uint32_t *p)
{
#if BK_DEVICE_CODE
    return __ldg(p);
#else
    return *p;
#endif
}

BK_HD uint32_t bk_float_bits(float f)
{
    union {
        float    f;
        uint32_t u;
    } c;
    c.f = f;
    return c.u;
}
BK_HD float bk_bits_float(uint32_t u)
{
    union {
        float    f;
        uint32_t u;
    } c;
    c.u = u;
    return c.f;
}

/* True when pred holds on every lane of the warp still running this code (the host has one). */
#if BK_DEVICE_CODE
#define BK_WARP_ALL(pred) __all_sync(__activemask(), (pred))
#else
#define BK_WARP_ALL(pred) (pred)
#endif

/* The lanes of the warp running this code now, and a point at which those lanes wait for each
 * other, so that the code after it runs once for all of them rather than once per group of lanes
 * that got there together (a no-op on the host, whose warp is one lane). Every lane of the mask
 * must reach the sync. */
#if BK_DEVICE_CODE
#define BK_WARP_LANES() __activemask()
#define BK_WARP_SYNC(m) __syncwarp(m)
#else
#define BK_WARP_LANES() 0u
#define BK_WARP_SYNC(m) ((void)(m))
#endif

/* Makes the int x opaque to the device compiler's optimiser, at no cost in code: x then stays in
 * a register instead of being recomputed inside a loop from the values it came from. */
#if BK_DEVICE_CODE
#define BK_OPAQUE_INT(x) asm volatile("" : "+r"(x))
#else
#define BK_OPAQUE_INT(x) ((void)0)
#endif

/* Index of the highest set bit of a non-zero 64-bit value. */
BK_HD int bk_msb64(uint64_t v)
{
#if BK_DEVICE_CODE
    return 63 - __clzll((long long)v);
#else
    return 63 - __builtin_clzll(v);
#endif
}

/* Index of the lowest set bit of a non-zero value. */
BK_HD int bk_ctz64(uint64_t v)
{
#if BK_DEVICE_CODE
    return __ffsll((long long)v) - 1;
#else
    return __builtin_ctzll(v);
#endif
}
BK_HD int bk_ctz32(uint32_t v)
{
#if BK_DEVICE_CODE
    return __ffs((int)v) - 1;
#else
    return __builtin_ctz(v);
#endif
}
BK_HD int bk_popc32(uint32_t v)
{
#if BK_DEVICE_CODE
    return __popc(v);
#else
    return __builtin_popcount(v);
#endif
}

/* a * b + c: fused on the device (one instruction), unfused on the host (no FMA instruction is
 * assumed there). For results that need not agree bit for bit between the two. */
BK_HD float bk_fma_fast(float a, float b, float c)
{
#if BK_DEVICE_CODE
    return fmaf(a, b, c);
#else
    return a * b + c;
#endif
}

/* min, max and |x| as single instructions on the device (FMNMX: a NaN operand yields the other
 * one); comparisons on the host. For results that need not agree bit for bit, as bk_fma_fast. */
BK_HD float bk_minf_fast(float a, float b)
{
#if BK_DEVICE_CODE
    return fminf(a, b);
#else
    return a < b ? a : b;
#endif
}
BK_HD float bk_maxf_fast(float a, float b)
{
#if BK_DEVICE_CODE
    return fmaxf(a, b);
#else
    return a > b ? a : b;
#endif
}
BK_HD float bk_absf_fast(float a)
{
#if BK_DEVICE_CODE
    return fabsf(a);
#else
    return a < 0.0f ? -a : a;
#endif
}

#endif /* BK_COMMON_H */
