/* deflate_cat.c - a raw deflate stream made non-final and byte-aligned (see deflate_cat.h).
 *
 * The walk decodes every Huffman code of every block without making any output: a 10-bit table
 * for the short codes (nearly all of them), and for the longer ones the canonical decode bit by
 * bit of Mark Adler's puff.c (zlib's contrib/puff, the reference inflater of RFC 1951). */
#include "deflate_cat.h"

#include <string.h>

#define FAST 11 /* bits of the first-level table */

/* LSB-first bits: buf holds cnt of them (at least 56 after a refill while input lasts; zeros
 * past the end), the next one lowest; pos = 8 (p - start) - cnt. */
typedef struct bits {
    const uint8_t *start, *p, *end;
    uint64_t       buf;
    int            cnt;
} bits;

static inline void refill(bits *b)
{
    if (b->end - b->p >= 8) {
        uint64_t v = 0;
        for (int q = 7; q >= 0; --q) v = v << 8 | b->p[q]; /* one 8-byte load (compilers merge it) */
        b->buf |= v << b->cnt;
        b->p += (63 - b->cnt) >> 3;
        b->cnt |= 56;
        return;
    }
    while (b->cnt <= 56) {
        b->buf |= (uint64_t)(b->p < b->end ? *b->p : 0u) << b->cnt;
        b->p++; /* past the end too: pos then says how far */
        b->cnt += 8;
    }
}
static size_t bit_pos(const bits *b) { return 8 * (size_t)(b->p - b->start) - (size_t)b->cnt; }
/* k <= 32 bits; refills when fewer are held */
static uint32_t take(bits *b, int k)
{
    if (b->cnt < k) refill(b);
    uint32_t v = (uint32_t)(b->buf & (((uint64_t)1 << k) - 1));
    b->buf >>= k;
    b->cnt -= k;
    return v;
}

typedef struct huff {
    uint16_t count[16];       /* codes of each length */
    uint16_t symbol[320];     /* symbols in canonical order */
    uint32_t fast[1 << FAST]; /* next FAST bits -> symbol | length << 16 (0: a longer code) */
} huff;

/* Returns 0, or -1 for an over-subscribed set of lengths (incomplete sets are allowed: a single
 * distance code, or none). */
static int huff_build(huff *h, const uint8_t *len, int n)
{
    uint16_t offs[16];
    memset(h->count, 0, sizeof h->count);
    for (int s = 0; s < n; ++s) h->count[len[s]]++;
    int left = 1;
    for (int l = 1; l < 16; ++l) {
        left = (left << 1) - h->count[l];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (int l = 1; l < 15; ++l) offs[l + 1] = (uint16_t)(offs[l] + h->count[l]);
    for (int s = 0; s < n; ++s)
        if (len[s]) h->symbol[offs[len[s]]++] = (uint16_t)s;
    memset(h->fast, 0, sizeof h->fast);
    uint32_t code = 0;
    int      idx = 0;
    for (int l = 1; l <= FAST; ++l) {
        for (int k = 0; k < h->count[l]; ++k, ++code, ++idx) {
            uint32_t r = 0; /* the code reversed: the stream holds it from its first bit */
            for (int q = 0; q < l; ++q) r |= ((code >> q) & 1u) << (l - 1 - q);
            for (uint32_t t = r; t < (1u << FAST); t += 1u << l) h->fast[t] = h->symbol[idx] | (uint32_t)l << 16;
        }
        code <<= 1;
    }
    return 0;
}

/* The next symbol, or -1; needs 15 bits held */
static inline int huff_decode(bits *b, const huff *h)
{
    uint32_t e = h->fast[b->buf & ((1u << FAST) - 1)];
    if (e) {
        b->buf >>= e >> 16;
        b->cnt -= (int)(e >> 16);
        return (int)(e & 0xffff);
    }
    int code = 0, first = 0, index = 0; /* puff.c's slow decode */
    for (int l = 1; l < 16; ++l) {
        code |= (int)(b->buf & 1);
        b->buf >>= 1;
        b->cnt--;
        int count = h->count[l];
        if (code - count < first) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1;
}

static const uint8_t len_extra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                       2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
static const uint8_t dist_extra[30] = { 0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                        6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };

/* One compressed block's codes, to its end-of-block code. */
static int skip_codes(bits *b, const huff *lit, const huff *dist)
{
    for (;;) {
        if (b->cnt < 48) { /* a length, a distance and their extra bits: 15 + 5 + 15 + 13 */
            refill(b);
            if (b->p > b->end + 8) return -1;
        }
        int s = huff_decode(b, lit);
        if (s < 256) {
            if (s < 0) return -1;
            continue;
        }
        if (s == 256) return 0;
        s -= 257;
        if (s >= 29) return -1;
        b->buf >>= len_extra[s];
        b->cnt -= len_extra[s];
        int d = huff_decode(b, dist);
        if (d < 0 || d >= 30) return -1;
        b->buf >>= dist_extra[d];
        b->cnt -= dist_extra[d];
    }
}

static int dynamic_tables(bits *b, huff *lit, huff *dist)
{
    static const uint8_t order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    uint8_t              len[320];
    int                  nlen = (int)take(b, 5) + 257, ndist = (int)take(b, 5) + 1, ncode = (int)take(b, 4) + 4;
    if (nlen > 286 || ndist > 30) return -1;
    memset(len, 0, sizeof len);
    for (int k = 0; k < ncode; ++k) len[order[k]] = (uint8_t)take(b, 3);
    huff *cl = dist; /* the code-length code, in the distance table's room until it is built */
    if (huff_build(cl, len, 19)) return -1;
    for (int k = 0; k < nlen + ndist;) {
        if (b->cnt < 16) refill(b);
        int s = huff_decode(b, cl);
        if (s < 0) return -1;
        if (s < 16) {
            len[k++] = (uint8_t)s;
            continue;
        }
        int     rep;
        uint8_t v = 0;
        if (s == 16) {
            if (k == 0) return -1;
            v = len[k - 1];
            rep = 3 + (int)take(b, 2);
        } else if (s == 17) rep = 3 + (int)take(b, 3);
        else rep = 11 + (int)take(b, 7);
        if (k + rep > nlen + ndist) return -1;
        while (rep--) len[k++] = v;
    }
    if (len[256] == 0) return -1; /* no end-of-block code */
    uint8_t dl[30];
    memcpy(dl, len + nlen, (size_t)ndist);
    return huff_build(lit, len, nlen) || huff_build(dist, dl, ndist) ? -1 : 0;
}

int bk_deflate_unfinal(uint8_t *buf, size_t *n, size_t cap)
{
    huff   lit, dist;
    bits   b = { buf, buf, buf + *n, 0, 0 };
    size_t last = 0;
    for (int final = 0; !final;) {
        refill(&b);
        if (bit_pos(&b) + 3 > 8 * *n) return -1;
        last = bit_pos(&b);
        final = (int)take(&b, 1);
        int type = (int)take(&b, 2);
        if (type == 0) { /* stored: to the byte boundary, LEN, NLEN, the bytes */
            take(&b, b.cnt & 7);
            uint32_t ln = take(&b, 16), nl = take(&b, 16);
            size_t   at = bit_pos(&b) / 8;
            if ((ln ^ 0xffffu) != nl || at + ln > *n) return -1;
            b.p = buf + at + ln; /* the buffer emptied: it held whole bytes only */
            b.buf = 0;
            b.cnt = 0;
        } else if (type == 1) {
            uint8_t len[288];
            for (int s = 0; s < 288; ++s) len[s] = s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
            huff_build(&lit, len, 288);
            for (int s = 0; s < 30; ++s) len[s] = 5;
            huff_build(&dist, len, 30);
            if (skip_codes(&b, &lit, &dist)) return -1;
        } else if (type == 2) {
            if (dynamic_tables(&b, &lit, &dist) || skip_codes(&b, &lit, &dist)) return -1;
        } else return -1;
    }
    const size_t end = bit_pos(&b), used = (end + 7) / 8;
    if (used != *n) return -1; /* the stream ends elsewhere than the buffer */
    /* its end padded with zeros (the encoder's flush left them so; made sure), then the empty
     * stored block: 3 zero header bits, to the byte boundary, LEN 0 and NLEN ffff */
    size_t o = end / 8;
    if (end & 7) buf[o] &= (uint8_t)((1u << (end & 7)) - 1);
    o = (end & 7) == 0 ? o + 1 : (end & 7) <= 5 ? o + 1 : o + 2;
    if (o + 4 > cap) return -1;
    for (size_t k = used; k < o; ++k) buf[k] = 0;
    buf[o] = buf[o + 1] = 0;
    buf[o + 2] = buf[o + 3] = 0xff;
    buf[last / 8] &= (uint8_t) ~(1u << (last & 7));
    *n = o + 4;
    return 0;
}
