/* sort.h - the one stable LSD radix sort of the host code (base stage: uses util.h and pool.h only).
 *
 * Sorts n records of any size by an unsigned key held in each of them (a uint32_t or uint64_t at
 * a byte offset), ties in input order, optionally carrying a second array of values alongside
 * (keys and values apart, as the GPU sort in gpu_ops.h takes them). A stable sort has one result
 * for given keys, so every caller gets what its own sort gave, whatever the digit width, the
 * passes skipped or the thread count.
 *
 * Digits of 8 bits below BK_SORT_WIDE_MIN records, 16 above; a pass whose digit is the same in
 * every key is skipped; at most 32 records by insertion. With parallel set and at least
 * BK_SORT_PAR_MIN records on a pool of two or more threads (pool.h), each pass counts and
 * scatters one slice per thread, the slices' counts laid out digit by digit so the scatter keeps
 * input order (the classic parallel LSD radix sort).
 *
 * Usage:
 *     bk_sort_spec sp = bk_sort_spec_of(sizeof(rec), offsetof(rec, key), sizeof(uint64_t));
 *     if (bk_sort_radix(recs, n, &sp)) ... out of memory: recs unchanged ...
 *     // keys with values beside them:
 *     sp = bk_sort_spec_of(4, 0, 4); sp.vals = vals; sp.val_size = 4; sp.end_bit = 24;
 */
#ifndef BK_SORT_H
#define BK_SORT_H

#include <stddef.h>
#include <stdint.h>

#define BK_SORT_COUNTS   65537  /* entries of bk_sort_spec.counts: a 16-bit digit's, plus one */
#define BK_SORT_WIDE_MIN 65536  /* records from which digits are 16 bits wide */
#define BK_SORT_PAR_MIN  131072 /* records from which a parallel sort uses the pool */

typedef struct bk_sort_spec {
    size_t  size;      /* bytes of one record */
    size_t  key_off;   /* the key's byte offset in a record */
    int     key_bytes; /* 4: the key is a uint32_t, 8: a uint64_t */
    int     end_bit;   /* sort on the key's bits [0, end_bit) only; 0: all of them */
    void   *vals;      /* NULL, or n values of val_size bytes moved with the records */
    size_t  val_size;
    int     parallel; /* 1: large sorts on the pool (callers not already inside a pool job) */
    void   *tmp;      /* NULL, or scratch for n records (for callers that sort often) */
    size_t *counts;   /* NULL, or BK_SORT_COUNTS entries of scratch (serial sorts only) */
} bk_sort_spec;

/* A spec for records of size bytes with a key of key_bytes at key_off: all bits, no values,
 * serial, scratch allocated by the sort. */
static inline bk_sort_spec bk_sort_spec_of(size_t size, size_t key_off, int key_bytes)
{
    bk_sort_spec sp;
    sp.size = size;
    sp.key_off = key_off;
    sp.key_bytes = key_bytes;
    sp.end_bit = 0;
    sp.vals = NULL;
    sp.val_size = 0;
    sp.parallel = 0;
    sp.tmp = NULL;
    sp.counts = NULL;
    return sp;
}

/* Sorts recs[0 .. n) (and sp->vals with them) stably by key. Returns 0, or -1 when the scratch
 * could not be allocated or the spec is wrong (key_bytes not 4 or 8, end_bit out of range),
 * with nothing moved. */
int bk_sort_radix(void *recs, size_t n, const bk_sort_spec *sp);

#endif /* BK_SORT_H */
