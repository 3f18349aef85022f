/* kd_split_internal.h - the KD-tree builder's split search (src/accel/kd_split.c), for src/accel/kdtree.c only:
 * the entries and search results the two share, and the searches kdtree.c calls. */
#ifndef BK_KD_SPLIT_INTERNAL_H
#define BK_KD_SPLIT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#define BK_KD_BINS_MAX  256 /* binned sweep: 64 bins, 128 from 1024 entries, 256 from 16384 */
#define BK_KD_EXACT_MAX 32  /* nodes up to this size use the exact event sweep */

/* A triangle's bounding box clipped to the current node's cell, 28 B. */
typedef struct bk_kd_ref {
    float    lo[3], hi[3];
    uint32_t tri;
} bk_kd_ref;

/* Binned event counts of one node (or one chunk of it), per axis: box minima and maxima per bin. */
typedef struct bk_kd_hist {
    uint32_t minc[3][BK_KD_BINS_MAX], maxc[3][BK_KD_BINS_MAX];
} bk_kd_hist;

/* How split planes are searched; all give the same tree. */
enum bk_kd_search {
    BK_KD_SEARCH_REF = 0,  /* the reference: sorted sweep in small nodes, one plane at a time in binned ones */
    BK_KD_SEARCH_SSE2 = 1, /* float costs four at a time, the few near the cheapest re-costed in double */
    BK_KD_SEARCH_AVX2 = 2  /* the same, eight at a time */
};

typedef struct bk_kd_split {
    int      axis; /* -1: none */
    float    pos;
    double   cost;
    int      counted; /* nb, na are the counts at pos (exact search); else the split counts them */
    uint32_t nb, na;
} bk_kd_split;

typedef struct bk_kd_sah {
    double inv_area, cost_node, bonus;
    double e[3]; /* cell extents */
} bk_kd_sah;

/* A binned search's bins: how many, and per axis the scale from coordinates to bins (0 where the
 * axis cannot be split). */
typedef struct bk_kd_bins {
    int   nbins;
    float scale[3];
    int   split_ok[3];
} bk_kd_bins;

/* The search kdtree.c uses unless bk_build_opts.kd_sweep asks for the reference: AVX2 where the
 * CPU has it (and BK_KD_NO_AVX2 is not set), else SSE2. enum bk_kd_search. */
int bk_kd_search_default(void);

void bk_kd_hist_add(bk_kd_hist *h, const bk_kd_ref *r, size_t begin, size_t end, const float lo[3],
                    const float scale[3], int nbins);
void bk_kd_hist_clear(bk_kd_hist *h, int nbins);
void bk_kd_binned_setup(uint32_t n, const float lo[3], const float hi[3], const float margin[3], bk_kd_bins *B);
void bk_kd_binned_pick(const bk_kd_hist *h, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_bins *B, const bk_kd_sah *c, bk_kd_split *best, int how);
void bk_kd_split_binned(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                        const bk_kd_sah *c, bk_kd_split *best, int how);
void bk_kd_split_sweep(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_sah *c, bk_kd_split *best);
void bk_kd_split_exact(const bk_kd_ref *r, uint32_t n, const float lo[3], const float hi[3], const float margin[3],
                       const bk_kd_sah *c, bk_kd_split *best, int how);

#endif /* BK_KD_SPLIT_INTERNAL_H */
