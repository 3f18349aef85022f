/* atlas_lscm.c - the least-squares conformal map of a smooth chart solved directly: the normal
 * equations of atlas_smooth.c's least-squares problem, a complex Hermitian positive definite
 * system in the vertices' z = u + i v, factored as L D L^H (up-looking, Davis's LDL) in a nested
 * dissection order made from the chart's starting layout, then solved.
 *
 * Each triangle t gives one complex residual r_t = w_t sum_j c_tj z_j (c_tj = gx + i gy of its
 * corner j, atlas_lscm.h), so the energy sum_t |r_t|^2 is z^H M z with M = A^H A,
 * M_jk = sum_t w_t^2 conj(c_tj) c_tk. With the pinned vertices fixed, the free ones solve
 * M_ff z_f = -M_fp z_p. A chart is a disc-like patch of a surface: ordered by nested dissection
 * (median cuts of its starting layout, each cut's separator last) its factor has about n log n
 * entries and costs about n^1.5, against the conjugate gradients' 60 passes over every triangle.
 */
#include "atlas_lscm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


typedef struct cplx {
    double re, im;
} cplx;

struct bk_lscm_direct {
    size_t    vcap, ecap, lcap;
    uint32_t *col;      /* free index of each vertex (BK_LSCM_PINNED: pinned); vcap */
    uint32_t *Ap, *Ai;  /* M_ff, full CSC by free index (vcap + 1, ecap) */
    cplx     *Ax;       /* ecap */
    uint32_t *P, *Pinv; /* the order: P[k] the free index eliminated k-th */
    uint32_t *parent, *lnz, *flag, *pattern, *Lp;
    uint32_t *Li; /* lcap */
    cplx     *Lx; /* lcap */
    double   *D;
    cplx     *Y, *b;
    uint32_t *cnt, *mark, *stk; /* scratch: counts, markers, the dissection's stack */
    uint32_t *idx, *tmp;        /* scratch: vertex lists */
    double   *key;
};

#define BK_LSCM_PINNED 0xFFFFFFFFu
#define ND_LEAF        24    /* parts this small are eliminated as they are */
#define SINGULAR       1e-12 /* a pivot below this part of its diagonal entry: singular */

static int grow(void **p, size_t need, size_t elem)
{
    void *q = realloc(*p, elem * (need ? need : 1));
    if (!q) return -1;
    *p = q;
    return 0;
}

static int reserve(bk_lscm_direct *S, size_t nv, size_t ne)
{
    if (nv > S->vcap) {
        size_t c = 2 * nv;
        int    bad = 0;
        bad |= grow((void **)&S->col, c, sizeof(uint32_t));
        bad |= grow((void **)&S->Ap, c + 1, sizeof(uint32_t));
        bad |= grow((void **)&S->P, c, sizeof(uint32_t));
        bad |= grow((void **)&S->Pinv, c, sizeof(uint32_t));
        bad |= grow((void **)&S->parent, c, sizeof(uint32_t));
        bad |= grow((void **)&S->lnz, c, sizeof(uint32_t));
        bad |= grow((void **)&S->flag, c, sizeof(uint32_t));
        bad |= grow((void **)&S->pattern, c, sizeof(uint32_t));
        bad |= grow((void **)&S->Lp, c + 1, sizeof(uint32_t));
        bad |= grow((void **)&S->D, c, sizeof(double));
        bad |= grow((void **)&S->Y, c, sizeof(cplx));
        bad |= grow((void **)&S->b, c, sizeof(cplx));
        bad |= grow((void **)&S->cnt, c + 1, sizeof(uint32_t));
        bad |= grow((void **)&S->mark, c, sizeof(uint32_t));
        bad |= grow((void **)&S->stk, 4 * c + 4, sizeof(uint32_t));
        bad |= grow((void **)&S->idx, c, sizeof(uint32_t));
        bad |= grow((void **)&S->tmp, c, sizeof(uint32_t));
        bad |= grow((void **)&S->key, c, sizeof(double));
        if (bad) return -1;
        S->vcap = c;
    }
    if (ne > S->ecap) {
        size_t c = 2 * ne;
        if (grow((void **)&S->Ai, c, sizeof(uint32_t)) || grow((void **)&S->Ax, c, sizeof(cplx))) return -1;
        S->ecap = c;
    }
    return 0;
}

static int reserve_l(bk_lscm_direct *S, size_t nl)
{
    if (nl <= S->lcap) return 0;
    size_t c = 2 * nl;
    if (grow((void **)&S->Li, c, sizeof(uint32_t)) || grow((void **)&S->Lx, c, sizeof(cplx))) return -1;
    S->lcap = c;
    return 0;
}

bk_lscm_direct *bk_lscm_direct_new(void) { return calloc(1, sizeof(bk_lscm_direct)); }

void bk_lscm_direct_free(bk_lscm_direct *S)
{
    if (!S) return;
    void *p[] = { S->col, S->Ap, S->Ai, S->Ax, S->P, S->Pinv, S->parent, S->lnz, S->flag, S->pattern, S->Lp,
                  S->Li,  S->Lx, S->D,  S->Y,  S->b, S->cnt,  S->mark,   S->stk, S->idx,  S->tmp,     S->key };
    for (size_t k = 0; k < sizeof p / sizeof p[0]; ++k) free(p[k]);
    free(S);
}

static inline cplx cmul(cplx a, cplx b) { return (cplx){ a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re }; }
/* conj(a) b */
static inline cplx cmulc(cplx a, cplx b) { return (cplx){ a.re * b.re + a.im * b.im, a.re * b.im - a.im * b.re }; }

/* M_ff in full CSC by free index (m of them), and b = -M_fp z_p; returns the entries, or
 * (size_t)-1 out of memory. */
static size_t assemble(bk_lscm_direct *S, const bk_lscm_tri *L, uint32_t nt, uint32_t m, const double *x)
{
    uint32_t *col = S->col, *cnt = S->cnt, *Ap = S->Ap, *mark = S->mark;
    memset(cnt, 0, sizeof(uint32_t) * ((size_t)m + 1));
    for (uint32_t i = 0; i < m; ++i) S->b[i] = (cplx){ 0, 0 };
    for (uint32_t t = 0; t < nt; ++t) {
        const bk_lscm_tri *q = &L[t];
        uint32_t           f[3] = { col[q->v[0]], col[q->v[1]], col[q->v[2]] };
        for (int j = 0; j < 3; ++j)
            if (f[j] != BK_LSCM_PINNED)
                for (int k = 0; k < 3; ++k) cnt[f[j]] += f[k] != BK_LSCM_PINNED;
    }
    size_t ne = 0;
    for (uint32_t j = 0; j < m; ++j) {
        Ap[j] = (uint32_t)ne;
        ne += cnt[j];
    }
    Ap[m] = (uint32_t)ne;
    if (reserve(S, 0, ne)) return (size_t)-1;
    uint32_t *Ai = S->Ai;
    cplx     *Ax = S->Ax;
    for (uint32_t j = 0; j < m; ++j) cnt[j] = Ap[j];
    for (uint32_t t = 0; t < nt; ++t) {
        const bk_lscm_tri *q = &L[t];
        uint32_t           f[3] = { col[q->v[0]], col[q->v[1]], col[q->v[2]] };
        double             w2 = q->w * q->w;
        cplx               c[3], rp = { 0, 0 };
        for (int j = 0; j < 3; ++j) {
            c[j] = (cplx){ q->g[2 * j], q->g[2 * j + 1] };
            if (f[j] == BK_LSCM_PINNED) {
                cplx z = { x[2 * (size_t)q->v[j]], x[2 * (size_t)q->v[j] + 1] };
                cplx cz = cmul(c[j], z);
                rp.re += cz.re;
                rp.im += cz.im;
            }
        }
        for (int j = 0; j < 3; ++j) {
            if (f[j] == BK_LSCM_PINNED) continue;
            /* column f[j]: rows f[k], value M[f[k], f[j]] = w^2 conj(c_k) c_j */
            for (int k = 0; k < 3; ++k) {
                if (f[k] == BK_LSCM_PINNED) continue;
                cplx v = cmulc(c[k], c[j]);
                Ai[cnt[f[j]]] = f[k];
                Ax[cnt[f[j]]++] = (cplx){ w2 * v.re, w2 * v.im };
            }
            /* b[f[j]] -= w^2 conj(c_j) rp */
            cplx v = cmulc(c[j], rp);
            S->b[f[j]].re -= w2 * v.re;
            S->b[f[j]].im -= w2 * v.im;
        }
    }
    /* duplicates summed, in place */
    for (uint32_t i = 0; i < m; ++i) mark[i] = BK_LSCM_PINNED;
    size_t out = 0;
    for (uint32_t j = 0; j < m; ++j) {
        size_t start = out, e = cnt[j];
        for (size_t p = Ap[j]; p < e; ++p) {
            uint32_t i = Ai[p];
            if (mark[i] != BK_LSCM_PINNED && mark[i] >= start) {
                Ax[mark[i]].re += Ax[p].re;
                Ax[mark[i]].im += Ax[p].im;
                continue;
            }
            mark[i] = (uint32_t)out;
            Ai[out] = i;
            Ax[out++] = Ax[p];
        }
        Ap[j] = (uint32_t)start;
    }
    Ap[m] = (uint32_t)out;
    return out;
}

/* Nested dissection of the m free vertices by their starting layout (x): a part larger than
 * ND_LEAF is cut at the median of its longer side; the vertices of the lower half with a
 * neighbour in the upper one are the separator, ordered after both halves. P gets the order. */
static void dissect(bk_lscm_direct *S, uint32_t m, const double *xy)
{
    uint32_t *P = S->P, *idx = S->idx, *mark = S->mark, *stk = S->stk, *tmp = S->tmp;
    uint32_t  np = m; /* P filled from the back: separators first */
    for (uint32_t i = 0; i < m; ++i) {
        idx[i] = i;
        mark[i] = 0;
    }
    /* a stack of ranges [lo, hi) of idx; each is cut or written out */
    uint32_t top = 0;
    stk[top++] = 0;
    stk[top++] = m;
    /* separators and leaves come off in reverse elimination order: a range's separator is
     * written before its halves are (they are pushed after it), so filling P from the back
     * orders each separator after its halves */
    while (top) {
        uint32_t hi = stk[--top], lo = stk[--top], n = hi - lo;
        if (n <= ND_LEAF) {
            for (uint32_t i = hi; i-- > lo;) P[--np] = idx[i];
            continue;
        }
        double bx0 = 1e300, by0 = 1e300, bx1 = -1e300, by1 = -1e300;
        for (uint32_t i = lo; i < hi; ++i) {
            const double *p = xy + 2 * (size_t)idx[i];
            bx0 = p[0] < bx0 ? p[0] : bx0;
            bx1 = p[0] > bx1 ? p[0] : bx1;
            by0 = p[1] < by0 ? p[1] : by0;
            by1 = p[1] > by1 ? p[1] : by1;
        }
        int axis = by1 - by0 > bx1 - bx0;
        /* the median by quickselect on the coordinate */
        uint32_t a = lo, b = hi - 1, mid = lo + n / 2;
        while (a < b) {
            double   pv = xy[2 * (size_t)idx[(a + b) / 2] + axis];
            uint32_t i = a, j = b;
            while (i <= j) {
                while (xy[2 * (size_t)idx[i] + axis] < pv) i++;
                while (xy[2 * (size_t)idx[j] + axis] > pv) j--;
                if (i <= j) {
                    uint32_t s = idx[i];
                    idx[i] = idx[j];
                    idx[j] = s;
                    i++;
                    if (j == 0) break;
                    j--;
                }
            }
            if (mid <= j) b = j;
            else if (mid >= i) a = i;
            else break;
        }
        /* upper half marked; the lower half's vertices beside it are the separator */
        for (uint32_t i = lo; i < hi; ++i) mark[idx[i]] = i >= mid ? 2 : 1;
        uint32_t nl = 0, ns = 0;
        for (uint32_t i = lo; i < mid; ++i) {
            uint32_t v = idx[i];
            int      sep = 0;
            for (uint32_t p = S->Ap[v]; p < S->Ap[v + 1] && !sep; ++p) sep = mark[S->Ai[p]] == 2;
            if (sep) tmp[ns++] = v;
            else idx[lo + nl++] = v;
        }
        for (uint32_t i = lo; i < hi; ++i) mark[idx[i]] = 0;
        for (uint32_t i = 0; i < ns; ++i) mark[tmp[i]] = 0;
        /* idx: [lo, lo + nl) lower, then the separator, then [mid, hi) upper */
        for (uint32_t i = 0; i < ns; ++i) idx[lo + nl + i] = tmp[i];
        for (uint32_t i = ns; i-- > 0;) P[--np] = tmp[i];
        /* the halves: pushed so both come off before anything below them */
        stk[top++] = lo;
        stk[top++] = lo + nl;
        stk[top++] = mid;
        stk[top++] = hi;
    }
}

/* L D L^H of M_ff permuted by P (Davis's LDL, up-looking); 0, 1 when a pivot is not positive,
 * -1 out of memory. */
static int factor(bk_lscm_direct *S, uint32_t m)
{
    uint32_t *P = S->P, *Pinv = S->Pinv, *parent = S->parent, *lnz = S->lnz, *flag = S->flag, *Lp = S->Lp;
    uint32_t *Ap = S->Ap, *Ai = S->Ai, *pattern = S->pattern;
    for (uint32_t k = 0; k < m; ++k) Pinv[P[k]] = k;
    /* symbolic: the elimination tree and the column counts */
    for (uint32_t k = 0; k < m; ++k) {
        parent[k] = BK_LSCM_PINNED;
        flag[k] = k;
        lnz[k] = 0;
        uint32_t kk = P[k];
        for (uint32_t p = Ap[kk]; p < Ap[kk + 1]; ++p) {
            uint32_t i = Pinv[Ai[p]];
            if (i >= k) continue;
            for (; flag[i] != k; i = parent[i]) {
                if (parent[i] == BK_LSCM_PINNED) parent[i] = k;
                lnz[i]++;
                flag[i] = k;
            }
        }
    }
    Lp[0] = 0;
    for (uint32_t k = 0; k < m; ++k) Lp[k + 1] = Lp[k] + lnz[k];
    if (reserve_l(S, Lp[m])) return -1;
    uint32_t *Li = S->Li;
    cplx     *Lx = S->Lx, *Y = S->Y, *Ax = S->Ax;
    double   *D = S->D;
    /* numeric: row k of L from the sparse triangular solve L y = M[0..k), k] */
    for (uint32_t k = 0; k < m; ++k) {
        Y[k] = (cplx){ 0, 0 };
        uint32_t top = m, kk = P[k];
        flag[k] = k;
        lnz[k] = 0;
        for (uint32_t p = Ap[kk]; p < Ap[kk + 1]; ++p) {
            uint32_t i = Pinv[Ai[p]];
            if (i > k) continue;
            Y[i].re += Ax[p].re;
            Y[i].im += Ax[p].im;
            uint32_t len = 0;
            for (; flag[i] != k; i = parent[i]) {
                pattern[len++] = i;
                flag[i] = k;
            }
            while (len > 0) pattern[--top] = pattern[--len];
        }
        double dk = Y[k].re, akk = dk;
        Y[k] = (cplx){ 0, 0 };
        for (; top < m; ++top) {
            uint32_t i = pattern[top];
            cplx     yi = Y[i];
            Y[i] = (cplx){ 0, 0 };
            uint32_t p2 = Lp[i] + lnz[i];
            for (uint32_t p = Lp[i]; p < p2; ++p) {
                cplx l = Lx[p];
                Y[Li[p]].re -= l.re * yi.re - l.im * yi.im;
                Y[Li[p]].im -= l.re * yi.im + l.im * yi.re;
            }
            /* L[k, i] = conj(y_i) / D_i; D_k -= |y_i|^2 / D_i */
            cplx lki = { yi.re / D[i], -yi.im / D[i] };
            dk -= (yi.re * yi.re + yi.im * yi.im) / D[i];
            Li[p2] = k;
            Lx[p2] = lki;
            lnz[i]++;
        }
        if (!(dk > SINGULAR * akk)) return 1; /* what is left of the pivot is rounding: singular */
        D[k] = dk;
    }
    return 0;
}

int bk_lscm_direct_solve(bk_lscm_direct *S, const bk_lscm_tri *L, uint32_t nt, uint32_t n, const uint8_t *pin,
                         double *x)
{
    if (reserve(S, n, 0)) return -1;
    uint32_t m = 0;
    for (uint32_t j = 0; j < n; ++j) S->col[j] = pin[2 * (size_t)j] ? BK_LSCM_PINNED : m++;
    if (!m) return 0;
    if (assemble(S, L, nt, m, x) == (size_t)-1) return -1;
    /* the free vertices' starting layout, by free index, for the dissection */
    double *xy = (double *)S->Y; /* m complex = 2 m doubles, free until the factor */
    for (uint32_t j = 0; j < n; ++j)
        if (S->col[j] != BK_LSCM_PINNED) {
            xy[2 * (size_t)S->col[j]] = x[2 * (size_t)j];
            xy[2 * (size_t)S->col[j] + 1] = x[2 * (size_t)j + 1];
        }
    dissect(S, m, xy);
    int rc = factor(S, m);
    if (rc) return rc;
    /* L D L^H z = b, in the order P */
    cplx     *y = S->Y, *Lx = S->Lx;
    uint32_t *Lp = S->Lp, *Li = S->Li;
    for (uint32_t k = 0; k < m; ++k) y[k] = S->b[S->P[k]];
    for (uint32_t j = 0; j < m; ++j) {
        cplx yj = y[j];
        for (uint32_t p = Lp[j]; p < Lp[j + 1]; ++p) {
            cplx v = cmul(Lx[p], yj);
            y[Li[p]].re -= v.re;
            y[Li[p]].im -= v.im;
        }
    }
    for (uint32_t j = 0; j < m; ++j) {
        y[j].re /= S->D[j];
        y[j].im /= S->D[j];
    }
    for (uint32_t j = m; j-- > 0;) {
        cplx yj = y[j];
        for (uint32_t p = Lp[j]; p < Lp[j + 1]; ++p) {
            cplx v = cmulc(Lx[p], y[Li[p]]);
            yj.re -= v.re;
            yj.im -= v.im;
        }
        y[j] = yj;
    }
    for (uint32_t j = 0; j < n; ++j) {
        uint32_t f = S->col[j];
        if (f == BK_LSCM_PINNED) continue;
        cplx z = y[S->Pinv[f]];
        x[2 * (size_t)j] = z.re;
        x[2 * (size_t)j + 1] = z.im;
    }
    return 0;
}

size_t bk_lscm_direct_fill(const bk_lscm_direct *S) { return S ? S->lcap : 0; }
