/* kd_split.c - the KD-tree builder's split-plane search (src/accel/kdtree.c builds, this file finds where
 * a node splits; kd_split_internal.h).
 *
 * Split search:
 *   - large nodes: binned min/max event counting (Shevtsov, Soupikov & Kapustin 2007, "Highly
 *     Parallel Fast KD-tree Construction for Interactive Ray Tracing of Dynamic Scenes"): per axis,
 *     histograms of the clipped box minima and maxima over the cell, one sweep gives N_below and
 *     N_above at every bin boundary.
 *   - small nodes (up to BK_KD_EXACT_MAX boxes): every event, exactly: the planes and counts of the
 *     sweep of Wald & Havran 2006 ("On building fast kd-Trees for Ray Tracing, and on doing that
 *     in O(N log N)"), found without sorting by comparing each candidate plane with every box,
 *     four or eight planes at a time (bk_kd_split_exact; n^2 compares, cheaper than sorting at n <= 32).
 *   Choosing among the planes (planes_pick): every plane's cost in float, eight or four at a time,
 *   then in double (sah_cost) only the planes within 1e-5 of the cheapest of all three axes. All
 *   terms are non-negative, so a float cost is within about ten float ulps of the double one and
 *   the winner is the one the double sweep picks: the least cost, then the lowest axis, then the
 *   lowest plane. The node stores that plane's float; a zero keeps the sign the sweep would meet
 *   first (zero_bits).
 *   Cost model (Wald & Havran / pbrt-v3): C = cost_node + (1 - bonus) (P_b N_b + P_a N_a), bonus =
 *   kd_empty_bonus when a side is empty, P = surface-area ratio of child cell to parent cell, one
 *   triangle test costs 1.
 *
 * The searches have SSE2 and AVX2 versions (the latter where the CPU has it; the variable
 * BK_KD_NO_AVX2 makes the tests take the former) and a plain reference, the sorted sweep in small
 * nodes and one double plane at a time in binned ones (bk_build_opts.kd_sweep): all give the same
 * tree, byte for byte, which unit_kdtree (generated scenes, 6000 small lattice scenes with +-0 and
 * margin-sized gaps) and unit_build_threads (corpus scenes) check.
 */
#include "kd_split_internal.h"
#include "bk_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* x86-64 with gcc or clang: AVX2 twins of the small-node search, chosen at run time. */
#if defined(__x86_64__) && defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#define KD_AVX2 1
#include <immintrin.h>
#define KD_TARGET_AVX2 __attribute__((target("avx2")))
#endif

/* planes of one search */
#define KD_PLANES_MAX (BK_KD_BINS_MAX > 4 * BK_KD_EXACT_MAX ? BK_KD_BINS_MAX : 4 * BK_KD_EXACT_MAX)

/* ---- split search -------------------------------------------------------------------------- */

static double sah_cost(const bk_kd_sah *c, int k, double below_len, double above_len, uint32_t nb, uint32_t na)
{
    int    k1 = k == 2 ? 0 : k + 1, k2 = k1 == 2 ? 0 : k1 + 1;
    double face = c->e[k1] * c->e[k2], ring = c->e[k1] + c->e[k2]; /* area = 2 (face + len * ring) */
    double pb = 2.0 * (face + below_len * ring) * c->inv_area;
    double pa = 2.0 * (face + above_len * ring) * c->inv_area;
    double eb = (nb == 0 || na == 0) ? c->bonus : 0.0;
    return c->cost_node + (1.0 - eb) * (pb * (double)nb + pa * (double)na);
}

static void consider(bk_kd_split *best, int k, float p, double cost)
{
    if (cost < best->cost) {
        best->axis = k;
        best->pos = p;
        best->cost = cost;
    }
}

void bk_kd_hist_add(bk_kd_hist *h, const bk_kd_ref *r, size_t begin, size_t end, const float lo[3],
                    const float scale[3], int nbins)
{
    const int top = nbins - 1;
#if defined(__SSE2__)
    /* The same bins, six at a time: lanes lo x y z, hi x, then hi x y z. Clamping the float before
     * truncating gives the clamped truncation (boxes lie in the cell: no value is out of int range). */
    const __m128 o1 = _mm_setr_ps(lo[0], lo[1], lo[2], lo[0]), s1 = _mm_setr_ps(scale[0], scale[1], scale[2], scale[0]);
    const __m128 o2 = _mm_setr_ps(lo[0], lo[1], lo[2], 0.0f), s2 = _mm_setr_ps(scale[0], scale[1], scale[2], 0.0f);
    const __m128 zero = _mm_setzero_ps(), ftop = _mm_set1_ps((float)top);
    int32_t      q[8];
    for (size_t i = begin; i < end; ++i) {
        __m128 a = _mm_loadu_ps(r[i].lo), b = _mm_loadu_ps(r[i].lo + 3); /* lo xyz hi x | hi xyz tri */
        a = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_sub_ps(a, o1), s1), zero), ftop);
        b = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_sub_ps(b, o2), s2), zero), ftop);
        _mm_storeu_si128((__m128i *)q, _mm_cvttps_epi32(a));
        _mm_storeu_si128((__m128i *)(q + 4), _mm_cvttps_epi32(b));
        h->minc[0][q[0]]++;
        h->minc[1][q[1]]++;
        h->minc[2][q[2]]++;
        h->maxc[0][q[3]]++;
        h->maxc[1][q[5]]++;
        h->maxc[2][q[6]]++;
    }
#else
    for (size_t i = begin; i < end; ++i) {
        for (int k = 0; k < 3; ++k) {
            int b0 = (int)((r[i].lo[k] - lo[k]) * scale[k]);
            int b1 = (int)((r[i].hi[k] - lo[k]) * scale[k]);
            b0 = b0 < 0 ? 0 : (b0 > top ? top : b0);
            b1 = b1 < 0 ? 0 : (b1 > top ? top : b1);
            h->minc[k][b0]++;
            h->maxc[k][b1]++;
        }
    }
#endif
}

/* The reference: Wald & Havran's sweep over sorted minima and maxima, one plane at a time in
 * increasing order (bk_build_opts.kd_sweep). bk_kd_split_exact() must give the same plane. */
static void sort_floats(float *a, uint32_t n) /* insertion sort (stable): n <= BK_KD_EXACT_MAX */
{
    for (uint32_t i = 1; i < n; ++i) {
        float    v = a[i];
        uint32_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = v;
    }
}

void bk_kd_split_sweep(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_sah *c, bk_kd_split *best)
{
    float mins[BK_KD_EXACT_MAX], maxs[BK_KD_EXACT_MAX];
    for (int k = 0; k < 3; ++k) {
        const float m = margin[k], plo = lo[k] + m, phi = hi[k] - m;
        if (!(plo <= phi)) continue;
        for (uint32_t i = 0; i < n; ++i) {
            mins[i] = r[i].lo[k];
            maxs[i] = r[i].hi[k];
        }
        sort_floats(mins, n);
        sort_floats(maxs, n);
        /* Candidates, as four sorted streams merged: min - margin (the box entirely above), min and
         * max (the box touches: both sides), max + margin (entirely below). */
        uint32_t h[4] = { 0, 0, 0, 0 }, ia = 0, im = 0;
        float    last = -BK_INF;
        for (;;) {
            float v = BK_INF;
            int   s = -1;
            if (h[0] < n && mins[h[0]] - m < v) {
                v = mins[h[0]] - m;
                s = 0;
            }
            if (h[1] < n && mins[h[1]] < v) {
                v = mins[h[1]];
                s = 1;
            }
            if (h[2] < n && maxs[h[2]] < v) {
                v = maxs[h[2]];
                s = 2;
            }
            if (h[3] < n && maxs[h[3]] + m < v) {
                v = maxs[h[3]] + m;
                s = 3;
            }
            if (s < 0) break;
            h[s]++;
            if (v == last || !(v >= plo && v <= phi && v > lo[k] && v < hi[k])) continue;
            last = v;
            while (ia < n && mins[ia] <= v) ++ia; /* below: min <= v */
            while (im < n && maxs[im] < v) ++im;  /* above: max >= v */
            consider(best, k, v, sah_cost(c, k, (double)v - lo[k], (double)hi[k] - v, ia, n - im));
        }
    }
}

/* nb[j] = #{ i : min_i <= cand[j] }, na[j] = #{ i : max_i >= cand[j] }, j < 4 n, where box i's
 * min and max are cand[4 i + 1] and cand[4 i + 2]: the counts the sweep keeps at plane cand[j]. */
#if defined(__SSE2__)
static void count_events(uint32_t n, const float *cand, int32_t *nb, int32_t *na)
{
    uint32_t g = 0;
    for (; g + 2 <= n; g += 2) { /* 8 candidates against every box */
        __m128  c0 = _mm_loadu_ps(cand + 4 * g), c1 = _mm_loadu_ps(cand + 4 * g + 4);
        __m128i b0 = _mm_setzero_si128(), b1 = b0, a0 = b0, a1 = b0;
        for (uint32_t i = 0; i < n; ++i) {
            __m128 lo = _mm_set1_ps(cand[4 * i + 1]), hi = _mm_set1_ps(cand[4 * i + 2]);
            b0 = _mm_sub_epi32(b0, _mm_castps_si128(_mm_cmple_ps(lo, c0)));
            b1 = _mm_sub_epi32(b1, _mm_castps_si128(_mm_cmple_ps(lo, c1)));
            a0 = _mm_sub_epi32(a0, _mm_castps_si128(_mm_cmpge_ps(hi, c0)));
            a1 = _mm_sub_epi32(a1, _mm_castps_si128(_mm_cmpge_ps(hi, c1)));
        }
        _mm_storeu_si128((__m128i *)(nb + 4 * g), b0);
        _mm_storeu_si128((__m128i *)(nb + 4 * g + 4), b1);
        _mm_storeu_si128((__m128i *)(na + 4 * g), a0);
        _mm_storeu_si128((__m128i *)(na + 4 * g + 4), a1);
    }
    for (; g < n; ++g) {
        __m128  c0 = _mm_loadu_ps(cand + 4 * g);
        __m128i b0 = _mm_setzero_si128(), a0 = b0;
        for (uint32_t i = 0; i < n; ++i) {
            b0 = _mm_sub_epi32(b0, _mm_castps_si128(_mm_cmple_ps(_mm_set1_ps(cand[4 * i + 1]), c0)));
            a0 = _mm_sub_epi32(a0, _mm_castps_si128(_mm_cmpge_ps(_mm_set1_ps(cand[4 * i + 2]), c0)));
        }
        _mm_storeu_si128((__m128i *)(nb + 4 * g), b0);
        _mm_storeu_si128((__m128i *)(na + 4 * g), a0);
    }
}
#else
static void count_events(uint32_t n, const float *cand, int32_t *nb, int32_t *na)
{
    for (uint32_t j = 0; j < 4 * n; ++j) {
        int32_t b = 0, a = 0;
        for (uint32_t i = 0; i < n; ++i) {
            b += cand[4 * i + 1] <= cand[j];
            a += cand[4 * i + 2] >= cand[j];
        }
        nb[j] = b;
        na[j] = a;
    }
}
#endif

/* ---- choosing among candidate planes ------------------------------------------------------
 *
 * Both searches end the same way: per axis a list of planes with the counts below and above each,
 * and the winner is the cheapest plane by sah_cost(), among equal costs the lowest axis, then the
 * lowest plane (what a sweep in increasing order with a strict "<" keeps). The reference costs
 * every plane in double. The fast path costs every plane in single precision, four or eight at a
 * time, and re-costs in double (sah_cost) only the planes within a relative KD_COST_TOL of the
 * cheapest of all three axes. Every term of the cost is non-negative, so a float cost is within
 * about ten float ulps (relative 1e-6) of the double one and the true winner is always among
 * those re-costed; an axis whose constants, or a node whose costs, leave the range where that
 * bound holds (extreme scales, free inner nodes) is costed in double throughout. */
#define KD_COST_TOL 1e-5f

typedef struct kd_planes {
    float    cand[3][KD_PLANES_MAX]; /* planes (NaN: no candidate), in groups of 8 */
    int32_t  nb[3][KD_PLANES_MAX], na[3][KD_PLANES_MAX];
    float    cf[3][KD_PLANES_MAX]; /* float costs (fast path) */
    uint32_t nc[3];                /* planes per axis, a multiple of 8; 0: axis not searched */
    float    plo[3], phi[3];       /* plane range of the axis ([-inf, inf]: cand is pre-filtered) */
    int      skip_equal;           /* equal planes have equal counts (exact search) */
    int      precosted;            /* fast[] and fm[] (and cf) are filled in already */
    int      fast[3];              /* cf holds the axis' float costs */
    float    fm[3];                /* the least of them */
} kd_planes;

/* The reference for one axis: every plane in double. */
static void axis_ref(const bk_kd_sah *c, int k, float lo, float hi, float plo, float phi, const float *cand,
                     const int32_t *nb, const int32_t *na, uint32_t nc, double *bc, float *bp, uint32_t *bi)
{
    for (uint32_t j = 0; j < nc; ++j) {
        const float v = cand[j];
        if (!(v >= plo && v <= phi && v > lo && v < hi)) continue;
        double cost = sah_cost(c, k, (double)v - lo, (double)hi - v, (uint32_t)nb[j], (uint32_t)na[j]);
        if (cost < *bc || (cost == *bc && v < *bp)) {
            *bc = cost;
            *bp = v;
            *bi = j;
        }
    }
}

/* Single-precision constants of one axis' cost; ok = 0 where the error bound may not hold: the
 * face and ring terms and 1 / area must be zero or well inside float's normal range, so neither
 * they nor (with the margin's minimum plane distance) the products in the cost overflow or lose
 * precision to underflow. Scenes of ordinary scale never leave it. */
#if defined(__SSE2__)
static int fc_range(double x) { return x >= 1e-15 && x <= 1e15; }
typedef struct kd_fcost {
    float face, ring, inv, cn, one_eb;
    int   ok;
} kd_fcost;
static kd_fcost fcost_init(const bk_kd_sah *c, int k)
{
    const int    k1 = k == 2 ? 0 : k + 1, k2 = k1 == 2 ? 0 : k1 + 1;
    const double face = c->e[k1] * c->e[k2], ring = c->e[k1] + c->e[k2];
    kd_fcost     f;
    f.face = (float)face;
    f.ring = (float)ring;
    f.inv = (float)c->inv_area;
    f.cn = (float)c->cost_node;
    f.one_eb = (float)(1.0 - c->bonus);
    f.ok = (face == 0.0 || fc_range(face)) && (ring == 0.0 || fc_range(ring)) && fc_range(c->inv_area);
    return f;
}

/* cf[j]: float cost of plane j (inf where no candidate); returns the least. nc: a multiple of 4. */
static float costs_sse2(const kd_fcost *F, float lo, float hi, float plo, float phi, const float *cand,
                        const int32_t *nb, const int32_t *na, uint32_t nc, float *cf)
{
    const __m128  face = _mm_set1_ps(F->face), ring = _mm_set1_ps(F->ring), inv = _mm_set1_ps(F->inv);
    const __m128  cn = _mm_set1_ps(F->cn), eb = _mm_set1_ps(F->one_eb), two = _mm_set1_ps(2.0f);
    const __m128  one = _mm_set1_ps(1.0f), inf = _mm_set1_ps(BK_INF);
    const __m128  flo = _mm_set1_ps(lo), fhi = _mm_set1_ps(hi), fplo = _mm_set1_ps(plo), fphi = _mm_set1_ps(phi);
    const __m128i zero = _mm_setzero_si128();
    __m128        mn = inf;
    for (uint32_t j = 0; j < nc; j += 4) {
        __m128  v = _mm_loadu_ps(cand + j);
        __m128  ok = _mm_and_ps(_mm_and_ps(_mm_cmpge_ps(v, fplo), _mm_cmple_ps(v, fphi)),
                                _mm_and_ps(_mm_cmpgt_ps(v, flo), _mm_cmplt_ps(v, fhi)));
        __m128i b = _mm_loadu_si128((const __m128i *)(nb + j)), a = _mm_loadu_si128((const __m128i *)(na + j));
        __m128  em = _mm_castsi128_ps(_mm_or_si128(_mm_cmpeq_epi32(b, zero), _mm_cmpeq_epi32(a, zero)));
        __m128  pb = _mm_mul_ps(_mm_mul_ps(two, _mm_add_ps(face, _mm_mul_ps(_mm_sub_ps(v, flo), ring))), inv);
        __m128  pa = _mm_mul_ps(_mm_mul_ps(two, _mm_add_ps(face, _mm_mul_ps(_mm_sub_ps(fhi, v), ring))), inv);
        __m128  f = _mm_or_ps(_mm_and_ps(em, eb), _mm_andnot_ps(em, one));
        __m128  cost = _mm_add_ps(
             cn, _mm_mul_ps(f, _mm_add_ps(_mm_mul_ps(pb, _mm_cvtepi32_ps(b)), _mm_mul_ps(pa, _mm_cvtepi32_ps(a)))));
        cost = _mm_or_ps(_mm_and_ps(ok, cost), _mm_andnot_ps(ok, inf));
        _mm_storeu_ps(cf + j, cost);
        mn = _mm_min_ps(mn, cost);
    }
    mn = _mm_min_ps(mn, _mm_shuffle_ps(mn, mn, 0x4E));
    mn = _mm_min_ps(mn, _mm_shuffle_ps(mn, mn, 0xB1));
    return _mm_cvtss_f32(mn);
}
#endif

#if defined(KD_AVX2)
/* Boxes with min <= c (b) and max >= c (a) for the planes c0, c1 (eight each) of n boxes (cand:
 * 4 floats a box, min and max at 1 and 2). */
KD_TARGET_AVX2 static inline void count16_avx2(uint32_t n, const float *cand, __m256 c0, __m256 c1, __m256i *b0,
                                               __m256i *b1, __m256i *a0, __m256i *a1)
{
    __m256i B0 = _mm256_setzero_si256(), B1 = B0, A0 = B0, A1 = B0;
    for (uint32_t i = 0; i < n; ++i) {
        __m256 lo = _mm256_broadcast_ss(cand + 4 * i + 1), hi = _mm256_broadcast_ss(cand + 4 * i + 2);
        B0 = _mm256_sub_epi32(B0, _mm256_castps_si256(_mm256_cmp_ps(lo, c0, _CMP_LE_OQ)));
        B1 = _mm256_sub_epi32(B1, _mm256_castps_si256(_mm256_cmp_ps(lo, c1, _CMP_LE_OQ)));
        A0 = _mm256_sub_epi32(A0, _mm256_castps_si256(_mm256_cmp_ps(hi, c0, _CMP_GE_OQ)));
        A1 = _mm256_sub_epi32(A1, _mm256_castps_si256(_mm256_cmp_ps(hi, c1, _CMP_GE_OQ)));
    }
    *b0 = B0;
    *b1 = B1;
    *a0 = A0;
    *a1 = A1;
}

/* count_events and costs_sse2 eight planes at a time (nc: a multiple of 8). Same counts. */
KD_TARGET_AVX2 static void count_events_avx2(uint32_t n, const float *cand, int32_t *nb, int32_t *na)
{
    for (uint32_t g = 0; g < 4 * n; g += 16) {
        const int two = g + 8 < 4 * n;
        __m256    c0 = _mm256_loadu_ps(cand + g), c1 = two ? _mm256_loadu_ps(cand + g + 8) : c0;
        __m256i   b0, b1, a0, a1;
        count16_avx2(n, cand, c0, c1, &b0, &b1, &a0, &a1);
        _mm256_storeu_si256((__m256i *)(nb + g), b0);
        _mm256_storeu_si256((__m256i *)(na + g), a0);
        if (two) {
            _mm256_storeu_si256((__m256i *)(nb + g + 8), b1);
            _mm256_storeu_si256((__m256i *)(na + g + 8), a1);
        }
    }
}

/* The float costs of eight planes v with counts b, a (inf where no candidate). */
typedef struct kd_fcost8 {
    __m256 face, ring, inv, cn, eb, flo, fhi, fplo, fphi;
} kd_fcost8;
KD_TARGET_AVX2 static inline kd_fcost8 fcost8_init(const kd_fcost *F, float lo, float hi, float plo, float phi)
{
    kd_fcost8 C;
    C.face = _mm256_set1_ps(F->face);
    C.ring = _mm256_set1_ps(F->ring);
    C.inv = _mm256_set1_ps(F->inv);
    C.cn = _mm256_set1_ps(F->cn);
    C.eb = _mm256_set1_ps(F->one_eb);
    C.flo = _mm256_set1_ps(lo);
    C.fhi = _mm256_set1_ps(hi);
    C.fplo = _mm256_set1_ps(plo);
    C.fphi = _mm256_set1_ps(phi);
    return C;
}
KD_TARGET_AVX2 static inline __m256 cost8(const kd_fcost8 *C, __m256 v, __m256i b, __m256i a)
{
    const __m256  two = _mm256_set1_ps(2.0f), one = _mm256_set1_ps(1.0f), inf = _mm256_set1_ps(BK_INF);
    const __m256i zero = _mm256_setzero_si256();
    __m256        ok =
        _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(v, C->fplo, _CMP_GE_OQ), _mm256_cmp_ps(v, C->fphi, _CMP_LE_OQ)),
                      _mm256_and_ps(_mm256_cmp_ps(v, C->flo, _CMP_GT_OQ), _mm256_cmp_ps(v, C->fhi, _CMP_LT_OQ)));
    __m256 em = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpeq_epi32(b, zero), _mm256_cmpeq_epi32(a, zero)));
    __m256 pb = _mm256_mul_ps(
        _mm256_mul_ps(two, _mm256_add_ps(C->face, _mm256_mul_ps(_mm256_sub_ps(v, C->flo), C->ring))), C->inv);
    __m256 pa = _mm256_mul_ps(
        _mm256_mul_ps(two, _mm256_add_ps(C->face, _mm256_mul_ps(_mm256_sub_ps(C->fhi, v), C->ring))), C->inv);
    __m256 f = _mm256_blendv_ps(one, C->eb, em);
    __m256 cost = _mm256_add_ps(C->cn, _mm256_mul_ps(f, _mm256_add_ps(_mm256_mul_ps(pb, _mm256_cvtepi32_ps(b)),
                                                                      _mm256_mul_ps(pa, _mm256_cvtepi32_ps(a)))));
    return _mm256_blendv_ps(inf, cost, ok);
}
KD_TARGET_AVX2 static inline float hmin8(__m256 mn)
{
    __m128 m4 = _mm_min_ps(_mm256_castps256_ps128(mn), _mm256_extractf128_ps(mn, 1));
    m4 = _mm_min_ps(m4, _mm_shuffle_ps(m4, m4, 0x4E));
    m4 = _mm_min_ps(m4, _mm_shuffle_ps(m4, m4, 0xB1));
    return _mm_cvtss_f32(m4);
}

KD_TARGET_AVX2 static float costs_avx2(const kd_fcost *F, float lo, float hi, float plo, float phi, const float *cand,
                                       const int32_t *nb, const int32_t *na, uint32_t nc, float *cf)
{
    const kd_fcost8 C = fcost8_init(F, lo, hi, plo, phi);
    __m256          mn = _mm256_set1_ps(BK_INF);
    for (uint32_t j = 0; j < nc; j += 8) {
        __m256 cost = cost8(&C, _mm256_loadu_ps(cand + j), _mm256_loadu_si256((const __m256i *)(nb + j)),
                            _mm256_loadu_si256((const __m256i *)(na + j)));
        _mm256_storeu_ps(cf + j, cost);
        mn = _mm256_min_ps(mn, cost);
    }
    return hmin8(mn);
}

/* count_events_avx2 and costs_avx2 in one pass: the counts go to the costs from registers. */
KD_TARGET_AVX2 static float count_costs_avx2(uint32_t n, const float *cand, int32_t *nb, int32_t *na, const kd_fcost *F,
                                             float lo, float hi, float plo, float phi, float *cf)
{
    const kd_fcost8 C = fcost8_init(F, lo, hi, plo, phi);
    __m256          mn = _mm256_set1_ps(BK_INF);
    for (uint32_t g = 0; g < 4 * n; g += 16) {
        const int two = g + 8 < 4 * n;
        __m256    c0 = _mm256_loadu_ps(cand + g), c1 = two ? _mm256_loadu_ps(cand + g + 8) : c0;
        __m256i   b0, b1, a0, a1;
        count16_avx2(n, cand, c0, c1, &b0, &b1, &a0, &a1);
        _mm256_storeu_si256((__m256i *)(nb + g), b0);
        _mm256_storeu_si256((__m256i *)(na + g), a0);
        __m256 k0 = cost8(&C, c0, b0, a0);
        _mm256_storeu_ps(cf + g, k0);
        mn = _mm256_min_ps(mn, k0);
        if (two) {
            _mm256_storeu_si256((__m256i *)(nb + g + 8), b1);
            _mm256_storeu_si256((__m256i *)(na + g + 8), a1);
            __m256 k1 = cost8(&C, c1, b1, a1);
            _mm256_storeu_ps(cf + g + 8, k1);
            mn = _mm256_min_ps(mn, k1);
        }
    }
    return hmin8(mn);
}
#endif

/* The winner among P's planes (see above) into best, if cheaper than what best holds. Returns the
 * winning axis, or -1. */
static int planes_pick(const bk_kd_sah *c, const float lo[3], const float hi[3], kd_planes *P, int how,
                       bk_kd_split *best)
{
    double   bc[3] = { BK_INF, BK_INF, BK_INF };
    float    bp[3] = { BK_INF, BK_INF, BK_INF };
    uint32_t bi[3] = { 0, 0, 0 };
    int      fast[3] = { 0, 0, 0 };
#if defined(__SSE2__)
    float fm[3] = { BK_INF, BK_INF, BK_INF }, fmin = BK_INF;
    if (P->precosted)
        for (int k = 0; k < 3; ++k) {
            fast[k] = P->fast[k];
            fm[k] = P->fm[k];
            if (fast[k]) fmin = fm[k] < fmin ? fm[k] : fmin;
        }
    for (int k = 0; k < 3 && how != BK_KD_SEARCH_REF && !P->precosted; ++k) {
        if (!P->nc[k]) continue;
        kd_fcost F = fcost_init(c, k);
        if (!F.ok) continue;
        fast[k] = 1;
#if defined(KD_AVX2)
        if (how == BK_KD_SEARCH_AVX2)
            fm[k] =
                costs_avx2(&F, lo[k], hi[k], P->plo[k], P->phi[k], P->cand[k], P->nb[k], P->na[k], P->nc[k], P->cf[k]);
        else
#endif
            fm[k] =
                costs_sse2(&F, lo[k], hi[k], P->plo[k], P->phi[k], P->cand[k], P->nb[k], P->na[k], P->nc[k], P->cf[k]);
        fmin = fm[k] < fmin ? fm[k] : fmin;
    }
    if (fmin != BK_INF && !(fmin >= 1e-30f && fmin <= 1e30f)) fast[0] = fast[1] = fast[2] = 0;
    const float th = fmin * (1.0f + KD_COST_TOL);
    for (int k = 0; k < 3; ++k) {
        if (!fast[k] || !(fm[k] <= th) || fmin == BK_INF) continue; /* inf: the axis has no candidate */
        const float *cf = P->cf[k];
        for (uint32_t j = 0; j < P->nc[k]; j += 4) {
            int near = _mm_movemask_ps(_mm_cmple_ps(_mm_loadu_ps(cf + j), _mm_set1_ps(th)));
            while (near) {
                const uint32_t i = j + (uint32_t)__builtin_ctz((unsigned)near);
                const float    v = P->cand[k][i];
                near &= near - 1;
                if (P->skip_equal && v == bp[k]) continue; /* same value, same counts: same cost */
                double cost =
                    sah_cost(c, k, (double)v - lo[k], (double)hi[k] - v, (uint32_t)P->nb[k][i], (uint32_t)P->na[k][i]);
                if (cost < bc[k] || (cost == bc[k] && v < bp[k])) {
                    bc[k] = cost;
                    bp[k] = v;
                    bi[k] = i;
                }
            }
        }
    }
#else
    (void)how;
#endif
    int win = -1;
    for (int k = 0; k < 3; ++k) {
        if (!P->nc[k]) continue;
        if (!fast[k])
            axis_ref(c, k, lo[k], hi[k], P->plo[k], P->phi[k], P->cand[k], P->nb[k], P->na[k], P->nc[k], &bc[k], &bp[k],
                     &bi[k]);
        if (bc[k] < best->cost) {
            best->axis = k;
            best->cost = bc[k];
            best->pos = bp[k];
            win = k;
        }
    }
    if (win >= 0 && P->skip_equal) { /* exact counts: what the split would count again */
        best->counted = 1;
        best->nb = (uint32_t)P->nb[win][bi[win]];
        best->na = (uint32_t)P->na[win][bi[win]];
    }
    return win;
}

void bk_kd_binned_setup(uint32_t n, const float lo[3], const float hi[3], const float margin[3], bk_kd_bins *B)
{
    B->nbins = n >= 16384 ? 256 : n >= 1024 ? 128 : 64;
    for (int k = 0; k < 3; ++k) {
        float w = hi[k] - lo[k], sc = (float)B->nbins / w;
        B->split_ok[k] = w >= 2.0f * margin[k] && isfinite(sc); /* also keeps the bin index finite */
        B->scale[k] = B->split_ok[k] ? sc : 0.0f;
    }
}

void bk_kd_hist_clear(bk_kd_hist *h, int nbins)
{
    for (int k = 0; k < 3; ++k) {
        memset(h->minc[k], 0, (size_t)nbins * sizeof(uint32_t));
        memset(h->maxc[k], 0, (size_t)nbins * sizeof(uint32_t));
    }
}

/* The split from a node's histogram h of its n entries (see bk_kd_split_binned). */
void bk_kd_binned_pick(const bk_kd_hist *h, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_bins *B, const bk_kd_sah *c, bk_kd_split *best, int how)
{
    const int  nbins = B->nbins;
    const int *split_ok = B->split_ok;
    const uint32_t(*minc)[BK_KD_BINS_MAX] = h->minc, (*maxc)[BK_KD_BINS_MAX] = h->maxc;
    if (how == BK_KD_SEARCH_REF) { /* the reference: one plane at a time */
        for (int k = 0; k < 3; ++k) {
            if (!split_ok[k]) continue;
            double   w = (double)hi[k] - lo[k];
            uint32_t nb = 0, na = n;
            for (int j = 1; j < nbins; ++j) {
                nb += minc[k][j - 1]; /* minima in lower bins: below the plane */
                na -= maxc[k][j - 1]; /* maxima in lower bins: not above it */
                float p = (float)((double)lo[k] + w * j / nbins);
                if (!(p - lo[k] >= margin[k] && hi[k] - p >= margin[k] && p > lo[k] && p < hi[k])) continue;
                consider(best, k, p, sah_cost(c, k, (double)p - lo[k], (double)hi[k] - p, nb, na));
            }
        }
        return;
    }
    /* The same planes and counts to planes_pick (a plane that is no candidate is NaN). Bin planes
     * that round to one float may have different counts: no skipping of equal planes. */
    kd_planes P;
    P.skip_equal = 0;
    P.precosted = 0;
    for (int k = 0; k < 3; ++k) {
        P.nc[k] = 0;
        if (!split_ok[k]) continue;
        double   w = (double)hi[k] - lo[k];
        uint32_t nb = 0, na = n, np = (uint32_t)nbins - 1, np8 = (np + 7) & ~7u;
        float   *cand = P.cand[k];
        for (int j = 1; j < nbins; ++j) {
            nb += minc[k][j - 1];
            na -= maxc[k][j - 1];
            float p = (float)((double)lo[k] + w * j / nbins);
            cand[j - 1] = p - lo[k] >= margin[k] && hi[k] - p >= margin[k] && p > lo[k] && p < hi[k] ? p : NAN;
            P.nb[k][j - 1] = (int32_t)nb;
            P.na[k][j - 1] = (int32_t)na;
        }
        for (uint32_t j = np; j < np8; ++j) {
            cand[j] = NAN;
            P.nb[k][j] = P.na[k][j] = 0;
        }
        P.nc[k] = np8;
        P.plo[k] = -BK_INF;
        P.phi[k] = BK_INF;
    }
    planes_pick(c, lo, hi, &P, how, best);
}

void bk_kd_split_binned(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                        const bk_kd_sah *c, bk_kd_split *best, int how)
{
    bk_kd_bins B;
    bk_kd_hist h;
    bk_kd_binned_setup(n, lo, hi, margin, &B);
    bk_kd_hist_clear(&h, B.nbins);
    bk_kd_hist_add(&h, r, 0, n, lo, B.scale, B.nbins);
    bk_kd_binned_pick(&h, n, lo, hi, margin, &B, c, best, how);
}

/* The exact sweep's answer, found without sorting: every candidate of every box (min - margin,
 * min, max, max + margin) gets its counts by comparing it with all n boxes (n <= BK_KD_EXACT_MAX,
 * four candidates a vector), and the cheapest wins, the lowest plane among equal costs: that is
 * the plane a sweep in increasing order keeps (Wald & Havran's sweep considers the same planes
 * with the same counts, so the tree is the one the sorted sweep gives). One detail of the sweep
 * survives: among planes equal to zero it keeps the first it meets, whose sign bit is stored in
 * the node, and zero_bits() names that one. */
static float zero_bits(const bk_kd_ref *r, uint32_t n, int k, float m)
{
    /* The sweep meets equal values stream by stream (min - margin, min, max, max + margin), each
     * stream in stable sorted (entry) order; x - m and x + m are +0 when zero. */
    for (uint32_t i = 0; i < n; ++i)
        if (r[i].lo[k] - m == 0.0f) return 0.0f;
    for (uint32_t i = 0; i < n; ++i)
        if (r[i].lo[k] == 0.0f) return r[i].lo[k];
    for (uint32_t i = 0; i < n; ++i)
        if (r[i].hi[k] == 0.0f) return r[i].hi[k];
    return 0.0f;
}

void bk_kd_split_exact(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_sah *c, bk_kd_split *best, int how)
{
    /* P.cand[k][4 i + s]: entry i's candidate of stream s (min - margin, min, max, max + margin),
     * then NaN to a whole group of 8 */
    kd_planes      P;
    const uint32_t nc = (4 * n + 7) & ~7u;
    int            axis_ok[3];
    float          plo[3], phi[3];
    for (int k = 0; k < 3; ++k) {
        plo[k] = lo[k] + margin[k];
        phi[k] = hi[k] - margin[k];
        axis_ok[k] = plo[k] <= phi[k];
    }
#if defined(__SSE2__)
    { /* every axis' candidates in one pass over the boxes: (min, min, max, max) + (-m, 0, 0, m).
       * x + 0 is x except that -0 becomes +0, which no count or cost tells apart; a zero plane's
       * sign is zero_bits' business. */
        const __m128 d0 = _mm_setr_ps(-margin[0], 0.0f, 0.0f, margin[0]),
                     d1 = _mm_setr_ps(-margin[1], 0.0f, 0.0f, margin[1]);
        const __m128 d2 = _mm_setr_ps(-margin[2], 0.0f, 0.0f, margin[2]);
        for (uint32_t i = 0; i < n; ++i) {
            __m128 a = _mm_loadu_ps(r[i].lo), b = _mm_loadu_ps(r[i].lo + 3); /* lo xyz hi x | hi xyz tri */
            __m128 u = _mm_unpacklo_ps(a, b), w = _mm_unpackhi_ps(a, b);     /* lo x hi x lo y hi y | lo z hi z . . */
            _mm_storeu_ps(P.cand[0] + 4 * i, _mm_add_ps(_mm_shuffle_ps(u, u, _MM_SHUFFLE(1, 1, 0, 0)), d0));
            _mm_storeu_ps(P.cand[1] + 4 * i, _mm_add_ps(_mm_shuffle_ps(u, u, _MM_SHUFFLE(3, 3, 2, 2)), d1));
            _mm_storeu_ps(P.cand[2] + 4 * i, _mm_add_ps(_mm_shuffle_ps(w, w, _MM_SHUFFLE(1, 1, 0, 0)), d2));
        }
    }
#else
    for (int k = 0; k < 3; ++k)
        for (uint32_t i = 0; i < n; ++i) {
            float *cand = P.cand[k];
            cand[4 * i] = r[i].lo[k] - margin[k];
            cand[4 * i + 1] = r[i].lo[k];
            cand[4 * i + 2] = r[i].hi[k];
            cand[4 * i + 3] = r[i].hi[k] + margin[k];
        }
#endif
    P.skip_equal = 1;
    P.precosted = how == BK_KD_SEARCH_AVX2;
    for (int k = 0; k < 3; ++k) {
        P.fast[k] = 0;
        P.fm[k] = BK_INF;
        P.nc[k] = 0;
        if (!axis_ok[k]) continue;
        float *cand = P.cand[k];
        for (uint32_t j = 4 * n; j < nc; ++j) {
            cand[j] = NAN;
            P.nb[k][j] = P.na[k][j] = 0;
        }
#if defined(KD_AVX2)
        if (how == BK_KD_SEARCH_AVX2) {
            kd_fcost F = fcost_init(c, k);
            if (F.ok) {
                P.fast[k] = 1;
                P.fm[k] = count_costs_avx2(n, cand, P.nb[k], P.na[k], &F, lo[k], hi[k], plo[k], phi[k], P.cf[k]);
            } else {
                count_events_avx2(n, cand, P.nb[k], P.na[k]);
            }
        } else
#endif
            count_events(n, cand, P.nb[k], P.na[k]);
        P.nc[k] = nc;
        P.plo[k] = plo[k];
        P.phi[k] = phi[k];
    }
    int k = planes_pick(c, lo, hi, &P, how, best);
    if (k >= 0 && best->pos == 0.0f) best->pos = zero_bits(r, n, k, margin[k]);
}

int bk_kd_search_default(void)
{
#if defined(KD_AVX2)
    return __builtin_cpu_supports("avx2") && !getenv("BK_KD_NO_AVX2") ? BK_KD_SEARCH_AVX2 : BK_KD_SEARCH_SSE2;
#else
    return BK_KD_SEARCH_SSE2; /* best_plane is the reference where there is no SSE2 */
#endif
}
