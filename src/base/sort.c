/* sort.c - the stable LSD radix sort of sort.h: serial passes, the pool's slice-parallel passes,
 * and insertion for a few records.
 *
 * Each pass moves every record from src to dst by one digit of its key: count the digits, turn
 * the counts into starting places, then scatter in input order (so ties keep their order, and
 * after the last pass the records are sorted by every digit). Parallel passes give each of T
 * slices of the input its own counts; the starting place of digit d in slice t is the number of
 * records with a smaller digit, plus those with digit d in slices before t, so the scatter is
 * the serial one cut into T pieces.
 */
#include "sort.h"
#include "pool.h"

#include <stdlib.h>
#include <string.h>

#define INSERTION_MAX 32

static inline uint64_t key_at(const unsigned char *rec, const bk_sort_spec *sp)
{
    if (sp->key_bytes == 8) {
        uint64_t k;
        memcpy(&k, rec + sp->key_off, 8);
        return k;
    }
    uint32_t k;
    memcpy(&k, rec + sp->key_off, 4);
    return k;
}

/* Fixed sizes copy as moves of their width. */
static inline void copy_item(unsigned char *d, const unsigned char *s, size_t size)
{
    switch (size) {
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    case 16: memcpy(d, s, 16); break;
    default: memcpy(d, s, size); break;
    }
}

/* One pass's arrays: records and values, read from src, written to dst. */
typedef struct pass_io {
    const bk_sort_spec  *sp;
    const unsigned char *src, *vsrc;
    unsigned char       *dst, *vdst;
    int                  shift;
    uint64_t             mask; /* the digit's bits, after the shift */
} pass_io;

static inline size_t digit_of(const pass_io *io, size_t i)
{
    return (size_t)((key_at(io->src + i * io->sp->size, io->sp) >> io->shift) & io->mask);
}

static void count_range(const pass_io *io, size_t b, size_t e, size_t *cnt)
{
    for (size_t i = b; i < e; ++i) cnt[digit_of(io, i)]++;
}

/* Records [b, e) to their places; at[d] is where the next record of digit d goes. */
static void scatter_range(const pass_io *io, size_t b, size_t e, size_t *at)
{
    size_t size = io->sp->size, vsize = io->sp->val_size;
    for (size_t i = b; i < e; ++i) {
        size_t to = at[digit_of(io, i)]++;
        copy_item(io->dst + to * size, io->src + i * size, size);
        if (io->vsrc) copy_item(io->vdst + to * vsize, io->vsrc + i * vsize, vsize);
    }
}

static void serial_pass(const pass_io *io, size_t n, size_t *cnt)
{
    size_t R = (size_t)io->mask + 1;
    memset(cnt, 0, sizeof(size_t) * (R + 1));
    count_range(io, 0, n, cnt + 1);
    for (size_t d = 0; d < R; ++d) cnt[d + 1] += cnt[d];
    scatter_range(io, 0, n, cnt);
}

typedef struct par_pass {
    const pass_io *io;
    size_t         n, slices, slice; /* slices of slice records (the last shorter) */
    size_t        *cnt;              /* slices x R counts, then starting places */
    size_t         R;
} par_pass;

static void par_count_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const par_pass *p = ctx;
    for (size_t t = begin; t < end; ++t) {
        size_t b = t * p->slice, e = b + p->slice < p->n ? b + p->slice : p->n;
        memset(p->cnt + t * p->R, 0, sizeof(size_t) * p->R);
        count_range(p->io, b, e, p->cnt + t * p->R);
    }
}

static void par_scatter_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const par_pass *p = ctx;
    for (size_t t = begin; t < end; ++t) {
        size_t b = t * p->slice, e = b + p->slice < p->n ? b + p->slice : p->n;
        scatter_range(p->io, b, e, p->cnt + t * p->R);
    }
}

static void parallel_pass(const pass_io *io, size_t n, size_t slices, size_t *cnt)
{
    par_pass p = { io, n, slices, (n + slices - 1) / slices, cnt, (size_t)io->mask + 1 };
    bk_parallel_for(slices, 1, par_count_fn, &p);
    size_t run = 0;
    for (size_t d = 0; d < p.R; ++d)
        for (size_t t = 0; t < slices; ++t) {
            size_t c = cnt[t * p.R + d];
            cnt[t * p.R + d] = run;
            run += c;
        }
    bk_parallel_for(slices, 1, par_scatter_fn, &p);
}

/* Few records: insertion, moving a record only past larger keys (stable). */
static void insertion_sort(unsigned char *a, size_t n, const bk_sort_spec *sp, uint64_t kmask)
{
    unsigned char  rec[256], val[256];
    unsigned char *v = sp->vals;
    size_t         size = sp->size, vsize = sp->val_size;
    for (size_t i = 1; i < n; ++i) {
        uint64_t k = key_at(a + i * size, sp) & kmask;
        size_t   j = i;
        while (j > 0 && (key_at(a + (j - 1) * size, sp) & kmask) > k) j--;
        if (j == i) continue;
        memcpy(rec, a + i * size, size);
        memmove(a + (j + 1) * size, a + j * size, (i - j) * size);
        memcpy(a + j * size, rec, size);
        if (v) {
            memcpy(val, v + i * vsize, vsize);
            memmove(v + (j + 1) * vsize, v + j * vsize, (i - j) * vsize);
            memcpy(v + j * vsize, val, vsize);
        }
    }
}

int bk_sort_radix(void *recs, size_t n, const bk_sort_spec *sp)
{
    int key_bits = 8 * sp->key_bytes;
    if ((sp->key_bytes != 4 && sp->key_bytes != 8) || sp->end_bit < 0 || sp->end_bit > key_bits) return -1;
    int      end_bit = sp->end_bit ? sp->end_bit : key_bits;
    uint64_t kmask = end_bit == 64 ? ~0ull : (1ull << end_bit) - 1;
    if (n < 2) return 0;
    unsigned char *a = recs;
    if (n <= INSERTION_MAX && sp->size <= 256 && sp->val_size <= 256) {
        insertion_sort(a, n, sp, kmask);
        return 0;
    }
    uint64_t kor = 0, kand = ~0ull;
    for (size_t i = 0; i < n; ++i) {
        uint64_t k = key_at(a + i * sp->size, sp);
        kor |= k;
        kand &= k;
    }
    uint64_t diff = (kor ^ kand) & kmask;
    if (!diff) return 0;
    int            bits = n >= BK_SORT_WIDE_MIN ? 16 : 8;
    int            threads = sp->parallel && n >= BK_SORT_PAR_MIN ? bk_pool_threads() : 1;
    size_t         slices = threads > 1 ? (size_t)threads : 1;
    size_t         ncnt = slices > 1 ? slices * ((size_t)1 << bits) : ((size_t)1 << bits) + 1;
    unsigned char *tmp = sp->tmp ? sp->tmp : malloc(sp->size * n);
    unsigned char *vtmp = sp->vals ? malloc(sp->val_size * n) : NULL;
    size_t        *cnt = sp->counts && slices == 1 ? sp->counts : malloc(sizeof(size_t) * ncnt);
    int            rc = -1;
    if (!tmp || (sp->vals && !vtmp) || !cnt) goto done;
    pass_io io = { sp, a, sp->vals, tmp, vtmp, 0, 0 };
    for (int shift = 0; shift < end_bit; shift += bits) {
        int w = end_bit - shift < bits ? end_bit - shift : bits;
        io.shift = shift;
        io.mask = ((uint64_t)1 << w) - 1;
        if (((diff >> shift) & io.mask) == 0) continue;
        if (slices > 1) parallel_pass(&io, n, slices, cnt);
        else serial_pass(&io, n, cnt);
        const unsigned char *s = io.src, *vs = io.vsrc;
        io.src = io.dst;
        io.vsrc = io.vdst;
        io.dst = (unsigned char *)s;
        io.vdst = (unsigned char *)vs;
    }
    if (io.src != a) {
        memcpy(a, io.src, sp->size * n);
        if (sp->vals) memcpy(sp->vals, io.vsrc, sp->val_size * n);
    }
    rc = 0;
done:
    if (tmp != sp->tmp) free(tmp);
    free(vtmp);
    if (cnt != sp->counts) free(cnt);
    return rc;
}
