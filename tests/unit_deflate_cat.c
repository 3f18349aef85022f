/* unit_deflate_cat.c - bk_deflate_unfinal (src/out/deflate_cat.c): libdeflate's streams made to
 * follow one another.
 *
 * Pieces of data of every kind libdeflate encodes differently (random bytes: stored blocks; a few
 * bytes: fixed Huffman codes; long smooth ramps with noise: several dynamic blocks; nothing: an
 * empty final block), each compressed on its own at levels 1, 2, 6 and 12, each but the last made
 * non-final: the concatenation is one raw deflate stream that zlib inflates to the pieces one
 * after another, to its end (Z_STREAM_END, no byte left over), and each piece but the last ends
 * in the empty stored block (00 00 ff ff). A stream cut short, or with a byte changed in its
 * header, is refused and left as it was. */
#include "bk_test.h"
#include "deflate_cat.h"

#include <zlib.h>
#if BK_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#if BK_HAVE_LIBDEFLATE
static uint32_t rng = 2024u;
static uint32_t rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return rng >> 8;
}

/* piece kinds: 0 random, 1 a few bytes, 2 ramps with noise (large), 3 empty, 4 runs */
static size_t make_piece(uint8_t *p, int kind)
{
    size_t n = kind == 0   ? 5000 + rnd() % 70000
               : kind == 1 ? 1 + rnd() % 40
               : kind == 2 ? 200000 + rnd() % 600000
               : kind == 3 ? 0
                           : 1000 + rnd() % 100000;
    for (size_t i = 0; i < n; ++i)
        p[i] = kind == 0   ? (uint8_t)rnd()
               : kind == 1 ? (uint8_t)('a' + rnd() % 3)
               : kind == 2 ? (uint8_t)((i % 3071) / 13 + (rnd() % 5))
                           : (uint8_t)((i / 97) & 0xff);
    return n;
}

int main(void)
{
    static const int levels[4] = { 1, 2, 6, 12 };
    enum { PIECES = 7, MAXP = 900000 };
    uint8_t *in = malloc((size_t)PIECES * MAXP), *out = malloc((size_t)PIECES * (MAXP + 4096)),
            *back = malloc((size_t)PIECES * MAXP + 1), *tmp = malloc(MAXP + 4096);
    for (int round = 0; round < 12; ++round) {
        const int                     level = levels[round % 4];
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(level);
        size_t                        nin = 0, nout = 0;
        for (int k = 0; k < PIECES; ++k) {
            const int kind = (round + k * 3) % 5;
            size_t    n = make_piece(in + nin, kind);
            size_t    cap = libdeflate_deflate_compress_bound(c, n) + 5;
            size_t    m = libdeflate_deflate_compress(c, in + nin, n, tmp, cap - 5);
            BK_EXPECTF(m > 0, "level %d kind %d: libdeflate failed", level, kind);
            if (k + 1 < PIECES) {
                size_t m0 = m;
                BK_EXPECTF(bk_deflate_unfinal(tmp, &m, cap) == 0, "level %d kind %d (%zu bytes): refused", level, kind,
                           n);
                BK_EXPECTF(m >= m0 + 4 && m <= m0 + 5 && !memcmp(tmp + m - 4, "\0\0\xff\xff", 4),
                           "level %d kind %d: %zu -> %zu bytes, no empty stored block at the end", level, kind, m0, m);
            }
            memcpy(out + nout, tmp, m);
            nout += m;
            nin += n;
        }
        libdeflate_free_compressor(c);
        z_stream z;
        memset(&z, 0, sizeof z);
        BK_EXPECT(inflateInit2(&z, -15) == Z_OK);
        z.next_in = out;
        z.avail_in = (uInt)nout;
        z.next_out = back;
        z.avail_out = (uInt)(nin + 1);
        int rc = inflate(&z, Z_FINISH);
        BK_EXPECTF(rc == Z_STREAM_END && z.avail_in == 0 && z.total_out == nin && !memcmp(back, in, nin),
                   "round %d (level %d): inflate %d, %lu of %zu bytes, %u left over, same %d", round, level, rc,
                   (unsigned long)z.total_out, nin, z.avail_in, z.total_out == nin && !memcmp(back, in, nin));
        inflateEnd(&z);
    }
    /* refused and untouched: cut short, and a block type 3 */
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(6);
    size_t                        n = make_piece(in, 2), cap = libdeflate_deflate_compress_bound(c, n) + 5;
    size_t                        m = libdeflate_deflate_compress(c, in, n, tmp, cap - 5);
    libdeflate_free_compressor(c);
    memcpy(back, tmp, m);
    size_t cut = m - 3;
    BK_EXPECT(bk_deflate_unfinal(tmp, &cut, cap) == -1 && cut == m - 3 && !memcmp(tmp, back, m));
    tmp[0] |= 6; /* BTYPE 3 */
    memcpy(back, tmp, m);
    size_t m2 = m;
    BK_EXPECT(bk_deflate_unfinal(tmp, &m2, cap) == -1 && m2 == m && !memcmp(tmp, back, m));
    free(in);
    free(out);
    free(back);
    free(tmp);
    BK_TEST_DONE();
}
#else
int main(void) { BK_TEST_SKIP("built without libdeflate"); }
#endif
