/* deflate_cat.h - raw deflate streams made to concatenate (the pigz method, for libdeflate).
 *
 *   size_t n = libdeflate_deflate_compress(c, in, len, out, cap - 5);
 *   if (n && bk_deflate_unfinal(out, &n, cap) == 0) ... out[0..n) is a non-final stream ending
 *                                                       byte-aligned: the next one may follow
 *
 * libdeflate compresses a whole buffer into one stream whose last block is final (BFINAL set) and
 * whose last byte may be partly used; it has no flush. To put streams one after another (each
 * strip of a PNG compressed on its own thread, the strips one zlib stream), each one's final block
 * must become non-final and its end be padded to a byte boundary, which is what zlib's
 * Z_SYNC_FLUSH leaves: an empty stored block (3 header bits, zeros to the byte boundary, then
 * LEN 0000 and NLEN ffff). Where the last block starts and where its end-of-block code ends is
 * known only by walking the stream: bk_deflate_unfinal decodes its blocks' Huffman codes (no
 * output made; about a tenth of the cost of inflating), clears the final block's BFINAL bit and
 * appends the empty stored block (4 or 5 bytes). Reference: RFC 1951 (deflate), 3.2.3-3.2.7.
 */
#ifndef BK_DEFLATE_CAT_H
#define BK_DEFLATE_CAT_H

#include <stddef.h>
#include <stdint.h>

/* buf[0..*n): one complete raw deflate stream (its last block final), cap >= *n + 5 bytes of
 * room. Returns 0 with the stream made non-final and byte-aligned (*n grown by 4 or 5), or -1
 * (buf unchanged) when the stream does not parse or ends before its final block does. */
int bk_deflate_unfinal(uint8_t *buf, size_t *n, size_t cap);

#endif /* BK_DEFLATE_CAT_H */
