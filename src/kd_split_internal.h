/* kd_split_internal.h - the KD-tree builder's split search (src/kd_split.c), for src/kdtree.c only:
 * the entries and search results the two share, and the searches kdtree.c calls. */
#ifndef BK_KD_SPLIT_INTERNAL_H
#define BK_KD_SPLIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define KD_BINS_MAX     256          /* binned sweep: 64 bins, 128 from 1024 entries, 256 from 16384 */
#define KD_EXACT_MAX    32           /* nodes up to this size use the exact event sweep */

/* A triangle's bounding box clipped to the current node's cell, 28 B. */
typedef struct kd_ref {
    float    lo[3], hi[3];
    uint32_t tri;
} kd_ref;

/* Binned event counts of one node (or one chunk of it), per axis: box minima and maxima per bin. */
typedef struct kd_hist { uint32_t minc[3][KD_BINS_MAX], maxc[3][KD_BINS_MAX]; } kd_hist;

/* How split planes are searched; all give the same tree. */
enum kd_search {
    KD_SEARCH_REF  = 0,  /* the reference: sorted sweep in small nodes, one plane at a time in binned ones */
    KD_SEARCH_SSE2 = 1,  /* float costs four at a time, the few near the cheapest re-costed in double */
    KD_SEARCH_AVX2 = 2   /* the same, eight at a time */
};

typedef struct kd_split {
    int      axis;       /* -1: none */
    float    pos;
    double   cost;
    int      counted;    /* nb, na are the counts at pos (exact search); else the split counts them */
    uint32_t nb, na;
} kd_split;

typedef struct sah_ctx {
    double inv_area, cost_node, bonus;
    double e[3];         /* cell extents */
} sah_ctx;

/* A binned search's bins: how many, and per axis the scale from coordinates to bins (0 where the
 * axis cannot be split). */
typedef struct kd_bins { int nbins; float scale[3]; int split_ok[3]; } kd_bins;

/* The search kdtree.c uses unless bk_build_opts.kd_sweep asks for the reference: AVX2 where the
 * CPU has it (and BK_KD_NO_AVX2 is not set), else SSE2. enum kd_search. */
int kd_search_default(void);

void hist_add(kd_hist *h, const kd_ref *r, size_t begin, size_t end, const float lo[3], const float scale[3], int nbins);
void hist_clear(kd_hist *h, int nbins);
void binned_setup(uint32_t n, const float lo[3], const float hi[3], const float margin[3], kd_bins *B);
void binned_pick(const kd_hist *h, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                 const kd_bins *B, const sah_ctx *c, kd_split *best, int how);
void split_binned(const kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                  const sah_ctx *c, kd_split *best, int how);
void split_sweep(const kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                 const sah_ctx *c, kd_split *best);
void split_exact(const kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                 const sah_ctx *c, kd_split *best, int how);

#endif /* BK_KD_SPLIT_INTERNAL_H */
