/* image.c - dilation, PNG / HDR / EXR writing and reading (see image.h).
 *
 * PNG encoder: our own (RGB8, deflate on the pool through libdeflate or zlib, see write_pngs). Decoders: stb_image
 * (Sean Barrett, public domain) from Debian's libstb-dev, compiled here once, static. OpenEXR: Debian's tinyexr
 * (libtinyexr-dev, a C++ library whose header declares a C API in extern "C", so C calls it directly), when the build
 * found it (BK_HAVE_EXR); it encodes to memory and decodes from memory, so the EXR writer goes through bk_outfile's
 * stream like the others. The Radiance RGBE encoder is our own: stb_image_write truncates the mantissas, which darkens
 * every channel by half a step on average (up to 1.5 % for a channel 1/3 of the pixel's largest) in decoders that read
 * byte * 2^(e-136) (stb_image, and most others); ours rounds to nearest, so those decoders see no bias. Writers write
 * into bk_outfile's temporary file, so a failed write never leaves a half-written image. Reference: G. Ward, "Real
 * Pixels", Graphics Gems II (1991); the Radiance file format (header, -Y H +X W, new-style run-length scanlines).
 */
#include "image.h"
#include "deflate_cat.h"
#include "texture.h"
#include "outputs.h"
#include "pool.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#if BK_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

/* stb_image is compiled once, in the io stage (src/io/stb_image_impl.c); its hazards are checked
 * there too (texture.h) */
#include <stb/stb_image.h>
#if BK_HAVE_EXR
#include <tinyexr.h>
#endif

#define EXR_MISSING "built without EXR support: install libtinyexr-dev and rebuild"
#define TYPE_LIST   "the name must end in .png (8-bit sRGB), .hdr (Radiance, linear) or .exr (OpenEXR half-float, linear)"

bk_image_type bk_image_type_of(const char *path)
{
    if (bk_path_has_ext(path, ".png")) return BK_IMAGE_TYPE_PNG;
    if (bk_path_has_ext(path, ".hdr")) return BK_IMAGE_TYPE_HDR;
    if (bk_path_has_ext(path, ".exr")) return BK_IMAGE_TYPE_EXR;
    return BK_IMAGE_TYPE_NONE;
}

int bk_image_exr_supported(void) { return BK_HAVE_EXR; }

int bk_image_type_check(const char *what, const char *path, char *err, size_t err_size)
{
    const char *sep = what && what[0] ? " " : "";
    switch (bk_image_type_of(path)) {
    case BK_IMAGE_TYPE_PNG:
    case BK_IMAGE_TYPE_HDR: return 0;
    case BK_IMAGE_TYPE_EXR:
        if (bk_image_exr_supported()) return 0;
        return bk_fail(err, err_size, "%s%s%s: " EXR_MISSING, what ? what : "", sep, path);
    default: return bk_fail(err, err_size, "%s%s%s: unsupported image type: " TYPE_LIST, what ? what : "", sep, path);
    }
}

/* Dilation on the pool, several pages side by side. A round reads only texels covered before it
 * began (BK_COVER_TEXEL or BK_COVER_DILATED), whose values it never writes, and writes only empty
 * ones, marking them DILATE_NEW, which the round does not count: so each texel's value is a
 * function of the state before the round, whatever order the texels are visited in, and the
 * image does not depend on the thread count. The rows are cut into bands of DILATE_ROWS; a round
 * does the even bands of every page in parallel, then the odd ones, so no band reads a coverage
 * byte (of its neighbours' edge rows) while another thread writes it; then DILATE_NEW becomes
 * BK_COVER_DILATED.
 * Only where the last round filled something can this one: a texel none of whose 8 neighbours
 * changed in the last round was looked at then (or could fill nothing then either) and has the
 * same neighbours now. So each row keeps the span [lo, hi] of columns it filled in the last round
 * and a round visits in row y only the columns lo - 1 .. hi + 1 of the spans of rows y - 1 .. y + 1
 * (the first round: every column): the same texels are filled as by visiting all of them, at the
 * cost of the fronts, not of the page, once the gaps between charts are closed. Inside the span,
 * byte loops (which vectorize) first mark the empty texels with a covered one among their 8
 * neighbours, and only those are looked at one by one: most empty texels of a page lie far from
 * any chart. */
#define DILATE_NEW  3
#define DILATE_ROWS 8
typedef struct dilate_job {
    float          *rgb;
    uint8_t        *cov;
    const uint32_t *ids;               /* NULL, or per texel the chart whose colours it takes (BK_NONE: any) */
    int             w, h, parity;      /* parity: the bands 2k + parity */
    size_t          page_px, per_page; /* per_page: bands of this parity in a page */
    int            *lo, *hi;           /* per row of all pages: the last round's span (hi < lo: none) */
    int            *nlo, *nhi;         /* this round's */
    atomic_int      filled;
} dilate_job;

static void dilate_bands(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    dilate_job *j = ctx;
    const int   w = j->w, h = j->h;
    int         filled = 0;
    uint8_t    *col = malloc(2 * (size_t)w + 3), *cand = col ? col + w + 3 : NULL; /* NULL: no filter */
    for (size_t chunk = begin; chunk < end; ++chunk) {
        const size_t    page = chunk / j->per_page, band = chunk % j->per_page;
        float          *rgb = j->rgb + 3 * j->page_px * page;
        uint8_t        *cov = j->cov + j->page_px * page;
        const uint32_t *ids = j->ids ? j->ids + j->page_px * page : NULL;
        const int      *plo = j->lo ? j->lo + (size_t)h * page : NULL, *phi = j->lo ? j->hi + (size_t)h * page : NULL;
        int            *nlo = j->lo ? j->nlo + (size_t)h * page : NULL, *nhi = j->lo ? j->nhi + (size_t)h * page : NULL;
        int y0 = (int)(2 * band + (size_t)j->parity) * DILATE_ROWS, y1 = y0 + DILATE_ROWS < h ? y0 + DILATE_ROWS : h;
        for (int y = y0; y < y1; ++y) {
            int lo = j->lo ? w : 0, hi = j->lo ? -1 : w - 1; /* the columns to visit (no spans: all) */
            for (int yy = y > 0 ? y - 1 : 0; j->lo && yy <= y + 1 && yy < h; ++yy)
                if (phi[yy] >= plo[yy]) {
                    lo = plo[yy] - 1 < lo ? plo[yy] - 1 : lo;
                    hi = phi[yy] + 1 > hi ? phi[yy] + 1 : hi;
                }
            lo = lo < 0 ? 0 : lo;
            hi = hi >= w ? w - 1 : hi;
            int      flo = w, fhi = -1;
            uint8_t *row = cov + (size_t)y * w;
            if (col && lo <= hi) { /* the candidates: empty, a covered texel among the 8 (byte loops) */
                const uint8_t *up = y > 0 ? row - w : row, *dn = y + 1 < h ? row + w : row;
                const int      a = lo > 0 ? lo - 1 : 0, b = hi + 1 < w ? hi + 1 : w - 1;
                col[a] = col[b + 2] = 0; /* col[x + 1]: a covered texel in column x, rows y-1..y+1 */
                for (int x = a; x <= b; ++x)
                    col[x + 1] = (uint8_t)(((uint8_t)(row[x] - 1) < 2) | ((uint8_t)(up[x] - 1) < 2) |
                                           ((uint8_t)(dn[x] - 1) < 2));
                for (int x = lo; x <= hi; ++x)
                    cand[x] = (uint8_t)((row[x] == BK_COVER_NONE) & (col[x] | col[x + 1] | col[x + 2]));
            }
            for (int x = lo; x <= hi; ++x) {
                const uint8_t *scan = col ? cand : row; /* without scratch: every empty texel */
                const uint8_t *next = memchr(scan + x, col ? 1 : BK_COVER_NONE, (size_t)(hi + 1 - x));
                if (!next) break;
                x = (int)(next - scan);
                size_t         i = (size_t)y * w + x;
                float          sum[3] = { 0, 0, 0 };
                int            n = 0;
                const uint32_t own = ids ? ids[i] : BK_DILATE_ANY;
                for (int dy = -1; dy <= 1; ++dy) {
                    int yy = y + dy;
                    if (yy < 0 || yy >= h) continue;
                    for (int dx = -1; dx <= 1; ++dx) {
                        int xx = x + dx;
                        if (xx < 0 || xx >= w || (dx == 0 && dy == 0)) continue;
                        size_t k = (size_t)yy * w + xx;
                        if (cov[k] != BK_COVER_TEXEL && cov[k] != BK_COVER_DILATED) continue;
                        if (own != BK_DILATE_ANY && ids[k] != own) continue;
                        sum[0] += rgb[3 * k];
                        sum[1] += rgb[3 * k + 1];
                        sum[2] += rgb[3 * k + 2];
                        n++;
                    }
                }
                if (!n) continue;
                for (int c = 0; c < 3; ++c) rgb[3 * i + c] = sum[c] / (float)n;
                cov[i] = DILATE_NEW;
                flo = x < flo ? x : flo;
                fhi = x;
                filled = 1;
            }
            if (j->lo) nlo[y] = flo, nhi[y] = fhi;
        }
    }
    free(col);
    if (filled) atomic_store_explicit(&j->filled, 1, memory_order_relaxed);
}

/* rows [begin, end) of all pages: the round's marks made final, its spans the last round's */
static void dilate_commit(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    dilate_job *j = ctx;
    for (size_t r = begin; r < end; ++r) {
        const size_t page = r / (size_t)j->h, y = r % (size_t)j->h;
        uint8_t     *row = j->cov + j->page_px * page + y * (size_t)j->w;
        const int    lo = j->lo ? j->nlo[r] : 0, hi = j->lo ? j->nhi[r] : j->w - 1;
        for (int x = lo; x <= hi; ++x) /* branch-free, so it vectorizes */
            row[x] = (uint8_t)(row[x] == DILATE_NEW ? BK_COVER_DILATED : row[x]);
        if (j->lo) j->lo[r] = lo, j->hi[r] = hi;
    }
}

void bk_image_dilate(float *rgb, uint8_t *coverage, int w, int h, int iterations)
{
    bk_image_dilate_pages(rgb, coverage, NULL, w, h, 1, iterations);
}

void bk_image_dilate_charts(float *rgb, uint8_t *coverage, const uint32_t *ids, int w, int h, int iterations)
{
    bk_image_dilate_pages(rgb, coverage, ids, w, h, 1, iterations);
}

void bk_image_dilate_pages(float *rgb, uint8_t *coverage, const uint32_t *ids, int w, int h, int pages, int iterations)
{
    if (w <= 0 || h <= 0 || pages <= 0 || iterations <= 0) return;
    const size_t rows = (size_t)h * (size_t)pages;
    int         *span = malloc(sizeof(int) * 4 * rows); /* NULL: every column of every row, each round */
    dilate_job   j;
    j.rgb = rgb;
    j.cov = coverage;
    j.ids = ids;
    j.w = w;
    j.h = h;
    j.page_px = (size_t)w * (size_t)h;
    j.lo = span;
    j.hi = span ? span + rows : NULL;
    j.nlo = span ? span + 2 * rows : NULL;
    j.nhi = span ? span + 3 * rows : NULL;
    for (size_t r = 0; span && r < rows; ++r) j.lo[r] = 0, j.hi[r] = w - 1; /* the first round: every column */
    const size_t bands = ((size_t)h + DILATE_ROWS - 1) / DILATE_ROWS;
    for (int it = 0; it < iterations; ++it) {
        atomic_init(&j.filled, 0);
        for (int parity = 0; parity < 2; ++parity) {
            j.parity = parity;
            j.per_page = (bands + 1 - (size_t)parity) / 2;
            bk_parallel_for(j.per_page * (size_t)pages, 4, dilate_bands, &j);
        }
        if (!atomic_load(&j.filled)) break;
        bk_parallel_for(rows, 64, dilate_commit, &j);
    }
    free(span);
}

uint8_t bk_image_srgb8(float linear)
{
    double c = linear;
    if (!(c > 0)) c = 0; /* negatives and NaN */
    if (c > 1) c = 1;
    double e = c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
    return (uint8_t)(e * 255.0 + 0.5);
}

void bk_image_srgb8_thresholds(float t[256])
{
    t[0] = -INFINITY;
    for (int k = 1; k < 256; ++k) {
        /* bit patterns of non-negative floats order as the floats: code(lo) < k <= code(hi) */
        uint32_t lo = 0, hi = 0x3f800000u; /* 0.0f, 1.0f */
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            float    x;
            memcpy(&x, &mid, sizeof x);
            if (bk_image_srgb8(x) >= k) hi = mid;
            else lo = mid;
        }
        memcpy(&t[k], &hi, sizeof hi);
    }
}

/* PNG: our own writer of 8-bit RGB, so the deflate runs on the pool. The scanlines (filter byte 1
 * + the Sub-filtered row) are cut into bands of PNG_BAND_ROWS rows, a fixed cut so the file never
 * depends on the thread count; the bands of all the pages of a call (bk_image_write_files: an
 * atlas's pages) go on the pool at once. Each band, on the pool: sRGB bytes of its rows (a table,
 * png_srgb8), Sub filter, the Adler-32 of its filtered bytes, then a raw deflate stream that ends
 * byte-aligned and not final (the last band's final), then the CRC-32 of its own IDAT chunk. The
 * bands' outputs concatenate into one zlib stream (the 2-byte header goes before band 0, the
 * Adler-32 of all the filtered data, combined from the bands' with adler32_combine, after the
 * last), each band one IDAT chunk: the pigz method. A band starts with an empty window (no
 * dictionary from the band above), which costs little on 64-row bands.
 * The deflate: libdeflate at level 2 when the build has it, its stream (which always ends in a
 * final block) made non-final and byte-aligned by bk_deflate_unfinal (deflate_cat.h: a walk over
 * its codes, then an empty stored block, what zlib's Z_SYNC_FLUSH writes); else zlib's deflate at
 * level 3 ending in Z_SYNC_FLUSH (the last band Z_FINISH). Either way the same pixels; the bytes
 * differ between the two.
 *
 * Bytes and one-core seconds of the 64-row bands of one page (page 2 of the 54k-object voxel world,
 * 4096^2, 50.3 MB filtered; quiet-less 2-core machine, so the seconds are rough), then of a
 * sponza 512^2 lightmap (--spp 4):
 *   zlib 3 (the writer before): 17248027 B / 0.80 s; 199316 B. zlib 1: 17738308 / 0.61; 222739.
 *   libdeflate 1: 17405152 / 0.33 (+ 0.12 s for bk_deflate_unfinal); 234691 (+18 %: its hash
 *   table misses the matches one row up). libdeflate 2: 17093239 / 0.38 (+ 0.15); 202044.
 *   libdeflate 6: 16632837 / 0.73.
 * Level 2 is within 2 % of zlib 3 on both (smaller on the world) at about 0.65 of its time, walk
 * included; the sRGB table takes the 8-step threshold search (bk_image_srgb8_fast) out of every
 * channel. Reference: PNG (Third Edition), W3C; RFC 1950 (zlib), RFC 1951 (deflate). */
#define PNG_BAND_ROWS 64
#define PNG_LEVEL     3 /* zlib's */
#define PNG_LD_LEVEL  2 /* libdeflate's */
#if BK_HAVE_LIBDEFLATE
static uint32_t png_adler32(uint32_t a, const uint8_t *p, size_t n) { return libdeflate_adler32(a, p, n); }
static uint32_t png_crc32(uint32_t c, const uint8_t *p, size_t n) { return libdeflate_crc32(c, p, n); }
#else
static uint32_t png_adler32(uint32_t a, const uint8_t *p, size_t n)
{
    for (size_t k = 0; k < n; k += 1u << 30)
        a = (uint32_t)adler32(a, p + k, (uInt)(n - k < (1u << 30) ? n - k : 1u << 30));
    return a;
}
static uint32_t png_crc32(uint32_t c, const uint8_t *p, size_t n)
{
    for (size_t k = 0; k < n; k += 1u << 30)
        c = (uint32_t)crc32(c, p + k, (uInt)(n - k < (1u << 30) ? n - k : 1u << 30));
    return c;
}
#endif

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The sRGB byte of a linear value without a search: PNG_LUT_SHIFT drops all but the top 8
 * mantissa bits of a float in (0, 1), and within such a bucket (its values a factor below 1 +
 * 2^-8 apart) the sRGB curve rises less than half a step (at most 0.45 of one, where its slope
 * is steepest, just above 0.0031308), so at most one threshold lies inside it: the byte is the
 * bucket's first one, or one more. bk_image_srgb8_fast's byte for every value (unit_image checks
 * it against the thresholds). */
#define PNG_LUT_SHIFT 15
#define PNG_LUT       ((0x3f800000u >> PNG_LUT_SHIFT) + 1)
typedef struct png_srgb {
    float   t[256]; /* bk_image_srgb8_thresholds */
    uint8_t first[PNG_LUT];
} png_srgb;

static void png_srgb_init(png_srgb *s)
{
    bk_image_srgb8_thresholds(s->t);
    for (uint32_t b = 0; b < PNG_LUT; ++b) {
        uint32_t bits = b << PNG_LUT_SHIFT;
        float    x;
        memcpy(&x, &bits, sizeof x);
        s->first[b] = bk_image_srgb8_fast(s->t, x);
    }
}

static inline uint8_t png_srgb8(const png_srgb *s, float x)
{
    if (!(x > 0.0f)) return 0; /* negatives, 0 and NaN */
    if (x >= 1.0f) return 255; /* t[255] <= 1 */
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    const uint8_t c = s->first[bits >> PNG_LUT_SHIFT];
    return (uint8_t)(c + (c < 255 && s->t[c + 1] <= x));
}

uint8_t bk_image_srgb8_lut(float x)
{
    static png_srgb   s;
    static atomic_int made;
    if (!atomic_load(&made)) { /* (tests only: a race would write the same bytes) */
        png_srgb_init(&s);
        atomic_store(&made, 1);
    }
    return png_srgb8(&s, x);
}

/* One band's IDAT chunk: out[0..8) length and "IDAT", then the deflate bytes (len of them), then
 * room for the 4-byte CRC (and, in the last band, the 4-byte Adler-32 before it). */
typedef struct png_band {
    uint8_t *out;
    size_t   len;
    uint32_t adler, crc;
    size_t   raw;
} png_band;
/* Per thread: the filtered rows of a band, and the compressor (kept for the call). */
typedef struct png_scratch {
    uint8_t *rows;
#if BK_HAVE_LIBDEFLATE
    struct libdeflate_compressor *ld;
#endif
} png_scratch;
typedef struct png_job {
    const float *const *rgb; /* per page */
    float               exposure;
    int                 w, h;
    int                 ch;    /* channels: 3 (RGB) or 4 (RGBA) */
    int                 data;  /* 1: bytes of the values themselves (round(255 x), clamped), no sRGB, no exposure */
    size_t              bands; /* per page */
    png_band           *band;  /* pages x bands */
    png_scratch        *per_worker;
    const png_srgb     *srgb;
    atomic_int          failed;
} png_job;

/* raw bytes at f deflated into out (cap bytes): a stream ending byte-aligned and not final, or
 * (last) the final one. libdeflate when the build has it, its stream made non-final by
 * bk_deflate_unfinal; zlib (level PNG_LEVEL, Z_SYNC_FLUSH / Z_FINISH) without it or should that
 * fail. Returns the bytes, 0 on failure. */
static size_t png_deflate(png_scratch *s, const uint8_t *f, size_t raw, uint8_t *out, size_t cap, int last)
{
#if BK_HAVE_LIBDEFLATE
    if (!s->ld) s->ld = libdeflate_alloc_compressor(PNG_LD_LEVEL);
    if (s->ld) {
        size_t n = libdeflate_deflate_compress(s->ld, f, raw, out, cap - 5);
        if (n && (last || bk_deflate_unfinal(out, &n, cap) == 0)) return n;
    }
#else
    (void)s;
#endif
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, PNG_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) return 0;
    z.next_in = (uint8_t *)f;
    z.avail_in = (uInt)raw;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int       rc = deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH);
    const int ok = (last ? rc == Z_STREAM_END : rc == Z_OK && z.avail_out > 0) && z.avail_in == 0;
    size_t    n = cap - z.avail_out;
    deflateEnd(&z);
    return ok ? n : 0;
}

static size_t png_cap(size_t raw)
{
    /* zlib's deflateBound and libdeflate's, whichever is larger, + the empty stored block */
    z_stream z;
    memset(&z, 0, sizeof z);
    size_t zb = raw + raw / 1000 + 64;
    if (deflateInit2(&z, PNG_LEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        zb = deflateBound(&z, (uLong)raw);
        deflateEnd(&z);
    }
#if BK_HAVE_LIBDEFLATE
    size_t lb = libdeflate_deflate_compress_bound(NULL, raw);
    zb = lb > zb ? lb : zb;
#endif
    return zb + 16;
}

static void png_bands(void *ctx, size_t begin, size_t end, int worker)
{
    png_job     *j = ctx;
    const size_t ch = (size_t)j->ch, stride = (size_t)j->w * ch + 1;
    png_scratch *s = &j->per_worker[worker];
    for (size_t c = begin; c < end; ++c) {
        const size_t page = c / j->bands, b = c % j->bands;
        png_band    *pb = &j->band[c];
        const int    y0 = (int)(b * PNG_BAND_ROWS), y1 = y0 + PNG_BAND_ROWS < j->h ? y0 + PNG_BAND_ROWS : j->h;
        const size_t raw = stride * (size_t)(y1 - y0);
        const int    last = b + 1 == j->bands;
        if (!s->rows) s->rows = malloc(stride * PNG_BAND_ROWS);
        uint8_t *f = s->rows;
        if (!f) {
            atomic_store(&j->failed, 1);
            continue;
        }
        for (int y = y0; y < y1; ++y) {
            uint8_t     *row = f + stride * (size_t)(y - y0);
            const float *src = j->rgb[page] + (size_t)y * j->w * ch;
            row[0] = 1; /* Sub */
            uint8_t prev[4] = { 0, 0, 0, 0 };
            for (size_t i = 0; i < (size_t)j->w * ch; i += ch)
                for (size_t k = 0; k < ch; ++k) {
                    const float x = src[i + k];
                    uint8_t     v = !j->data    ? png_srgb8(j->srgb, x * j->exposure)
                                    : x >= 1.0f ? 255
                                    : x > 0.0f  ? (uint8_t)(x * 255.0f + 0.5f)
                                                : 0;
                    row[1 + i + k] = (uint8_t)(v - prev[k]);
                    prev[k] = v;
                }
        }
        pb->raw = raw;
        pb->adler = png_adler32(1, f, raw);
        const size_t cap = png_cap(raw);
        pb->out = malloc(8 + cap + 8);
        pb->len = pb->out ? png_deflate(s, f, raw, pb->out + 8, cap, last) : 0;
        if (!pb->len) {
            atomic_store(&j->failed, 1);
            continue;
        }
        uint8_t *small = realloc(pb->out, 8 + pb->len + 8); /* the bands of every page are held at once */
        if (small) pb->out = small;
        memcpy(pb->out + 4, "IDAT", 4);
        pb->crc = png_crc32(0, pb->out + 4, 4 + pb->len); /* the last band's goes on over the Adler-32 */
    }
}

/* One page's file from its bands. */
static int png_put(FILE *f, const char *path, const png_band *band, size_t bands, int w, int h, int ch, char *err,
                   size_t err_size)
{
    /* zlib header: CM 8, 32 KB window; FLEVEL 1 ("fast"), FCHECK makes it a multiple of 31 */
    static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    uint8_t ihdr[25], zhdr[2] = { 0x78, 0x5e }, iend[12] = { 0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82 };
    put_be32(ihdr, 13);
    memcpy(ihdr + 4, "IHDR", 4);
    put_be32(ihdr + 8, (uint32_t)w);
    put_be32(ihdr + 12, (uint32_t)h);
    ihdr[16] = 8;
    ihdr[17] = ch == 4 ? 6 : 2;
    ihdr[18] = ihdr[19] = ihdr[20] = 0; /* 8-bit RGB (or RGBA), deflate, adaptive filters, no interlace */
    put_be32(ihdr + 21, png_crc32(0, ihdr + 4, 17));
    int      bad = fwrite(sig, 1, 8, f) != 8 || fwrite(ihdr, 1, 25, f) != 25;
    uint32_t adler = 1;
    for (size_t b = 0; b < bands && !bad; ++b) {
        const png_band *pb = &band[b];
        adler = b ? (uint32_t)adler32_combine(adler, pb->adler, (z_off_t)pb->raw) : pb->adler;
        size_t  n = pb->len, crc = pb->crc;
        uint8_t tail[8];
        size_t  nt = 0;
        if (b == 0) {
            n += 2;
            crc = png_crc32(png_crc32(0, (const uint8_t *)"IDAT", 4), zhdr, 2);
            crc = png_crc32((uint32_t)crc, pb->out + 8, pb->len);
        }
        if (b + 1 == bands) {
            put_be32(tail, adler);
            crc = png_crc32((uint32_t)crc, tail, 4);
            nt = 4;
            n += 4;
        }
        put_be32(tail + nt, (uint32_t)crc);
        uint8_t head[8];
        put_be32(head, (uint32_t)n);
        memcpy(head + 4, "IDAT", 4);
        bad = fwrite(head, 1, 8, f) != 8 || (b == 0 && fwrite(zhdr, 1, 2, f) != 2) ||
              fwrite(pb->out + 8, 1, pb->len, f) != pb->len || fwrite(tail, 1, nt + 4, f) != nt + 4;
    }
    if (!bad) bad = fwrite(iend, 1, 12, f) != 12;
    return bad || ferror(f) ? bk_fail_write(err, err_size, path) : 0;
}

/* n PNG pages of w x h, rgb[p] to f[p]: the bands of all of them on the pool at once, then each
 * file written in turn. */
static int write_pngs(FILE *const *f, const char *const *path, const float *const *rgb, int n, int w, int h,
                      float exposure, int ch, int data, char *err, size_t err_size)
{
    if ((size_t)w * (size_t)ch + 1 > 0x7fffffffu / PNG_BAND_ROWS)
        return bk_fail(err, err_size, "%s: %d pixels wide: too wide for a PNG", path[0], w);
    png_job   j;
    png_srgb *srgb = malloc(sizeof *srgb);
    const int nt = bk_pool_threads();
    j.rgb = rgb;
    j.exposure = exposure;
    j.w = w;
    j.h = h;
    j.ch = ch;
    j.data = data;
    j.bands = ((size_t)h + PNG_BAND_ROWS - 1) / PNG_BAND_ROWS;
    j.band = calloc(j.bands * (size_t)n, sizeof *j.band);
    j.per_worker = calloc((size_t)nt, sizeof *j.per_worker);
    j.srgb = srgb;
    atomic_init(&j.failed, 0);
    int rc = 0;
    if (!j.band || !srgb || !j.per_worker)
        rc = bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path[0], w, h);
    if (!rc) {
        png_srgb_init(srgb);
        bk_parallel_for(j.bands * (size_t)n, 1, png_bands, &j);
        if (atomic_load(&j.failed))
            rc = bk_fail(err, err_size, "%s: PNG encoder failed (%dx%d): out of memory?", path[0], w, h);
    }
    for (int p = 0; !rc && p < n; ++p)
        rc = png_put(f[p], path[p], j.band + j.bands * (size_t)p, j.bands, w, h, ch, err, err_size);
    for (size_t b = 0; j.band && b < j.bands * (size_t)n; ++b) free(j.band[b].out);
    for (int t = 0; j.per_worker && t < nt; ++t) {
        free(j.per_worker[t].rows);
#if BK_HAVE_LIBDEFLATE
        libdeflate_free_compressor(j.per_worker[t].ld);
#endif
    }
    free(j.per_worker);
    free(j.band);
    free(srgb);
    return rc;
}

void bk_image_rgbe(const float rgb[3], uint8_t out[4])
{
    double c[3];
    for (int k = 0; k < 3; ++k) {
        double v = rgb[k];
        c[k] = v > 0 ? (isfinite(v) ? v : 3.0e38) : 0.0; /* RGBE has no negatives; NaN -> 0, inf -> large */
    }
    double m = fmax(c[0], fmax(c[1], c[2]));
    if (!(m >= 1e-38)) {
        out[0] = out[1] = out[2] = out[3] = 0;
        return;
    }
    int e;
    frexp(m, &e);           /* m = f 2^e, f in [0.5, 1): mantissa m 256 / 2^e in [128, 256) */
    if (e < -127) e = -127; /* exponent byte 1: tinier values round towards 0 */
    for (;;) {
        if (e > 127) { /* beyond RGBE's range (~1.7e38): saturate */
            out[0] = out[1] = out[2] = 255;
            out[3] = 255;
            return;
        }
        double scale = ldexp(1.0, 8 - e);
        /* round to nearest; the largest channel may round up to 256: one exponent more */
        if (floor(m * scale + 0.5) >= 256.0) {
            e++;
            continue;
        }
        for (int k = 0; k < 3; ++k) out[k] = (uint8_t)floor(c[k] * scale + 0.5);
        out[3] = (uint8_t)(e + 128);
        return;
    }
}

/* One plane k of a scanline of RGBE pixels, new-style run-length encoded into out: runs of
 * 3..127 equal bytes as (128 + n, byte), other stretches as (n, n bytes), n <= 128. At most
 * w + w / 128 + 1 bytes; returns the count. */
static size_t rle_plane(uint8_t *out, const uint8_t *px, int w, int k)
{
    size_t o = 0;
    int    x = 0;
    while (x < w) {
        int run = 1;
        while (x + run < w && run < 127 && px[4 * (x + run) + k] == px[4 * x + k]) run++;
        if (run >= 3) {
            out[o++] = (uint8_t)(128 + run);
            out[o++] = px[4 * x + k];
            x += run;
            continue;
        }
        size_t head = o++;
        int    n = 0;
        while (x < w && n < 128) {
            int r = 1;
            while (x + r < w && r < 3 && px[4 * (x + r) + k] == px[4 * x + k]) r++;
            if (r >= 3) break;
            out[o++] = px[4 * x + k];
            n++;
            x++;
        }
        out[head] = (uint8_t)n;
    }
    return o;
}

/* Scanlines are encoded on the pool, HDR_BAND rows at a time, each into its own slot (its RGBE
 * pixels, then its encoding), and written in order: the file does not depend on the thread count. */
#define HDR_BAND 256
typedef struct hdr_job {
    const float *rgb;
    int          w, y0, rle;
    uint8_t     *slots;
    size_t       slot, *len;
} hdr_job;

static void hdr_rows(void *ctx, size_t begin, size_t end, int worker)
{
    const hdr_job *j = ctx;
    const int      w = j->w;
    for (size_t r = begin; r < end; ++r) {
        uint8_t     *px = j->slots + r * j->slot, *out = px + (size_t)w * 4;
        const float *src = j->rgb + 3 * (size_t)(j->y0 + (int)r) * w;
        for (int x = 0; x < w; ++x) bk_image_rgbe(src + 3 * (size_t)x, px + 4 * (size_t)x);
        if (!j->rle) {
            j->len[r] = 0;
            continue;
        } /* flat: the pixels themselves */
        out[0] = 2;
        out[1] = 2;
        out[2] = (uint8_t)(w >> 8);
        out[3] = (uint8_t)(w & 255);
        size_t n = 4;
        for (int k = 0; k < 4; ++k) n += rle_plane(out + n, px, w, k);
        j->len[r] = n;
    }
}

static int write_hdr(FILE *f, const char *path, const float *rgb, int w, int h, char *err, size_t err_size)
{
    hdr_job j;
    j.rgb = rgb;
    j.w = w;
    j.rle = w >= 8 && w < 32768; /* the format's limits for run-length scanlines */
    j.slot = (size_t)w * 4 + (j.rle ? 4 + 4 * ((size_t)w + (size_t)w / 128 + 1) : 0);
    int band = h < HDR_BAND ? h : HDR_BAND;
    j.slots = malloc(j.slot * (size_t)band);
    j.len = malloc(sizeof(size_t) * (size_t)band);
    if (!j.slots || !j.len) {
        free(j.slots);
        free(j.len);
        return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, w, h);
    }
    fprintf(f,
            "#?RADIANCE\n# written by baker: RGBE rounded to nearest (decode byte * 2^(e-136))\n"
            "FORMAT=32-bit_rle_rgbe\n\n-Y %d +X %d\n",
            h, w);
    int bad = ferror(f) != 0, e = 0;
    for (j.y0 = 0; j.y0 < h && !bad; j.y0 += band) {
        int rows = h - j.y0 < band ? h - j.y0 : band;
        bk_parallel_for((size_t)rows, 4, hdr_rows, &j);
        for (int r = 0; r < rows && !bad; ++r) {
            const uint8_t *px = j.slots + (size_t)r * j.slot;
            bad = j.rle ? fwrite(px + (size_t)w * 4, 1, j.len[r], f) != j.len[r]
                        : fwrite(px, 4, (size_t)w, f) != (size_t)w;
            if (bad) e = errno; /* the reason, before anything else can change errno */
        }
    }
    free(j.slots);
    free(j.len);
    errno = e;
    return bad || ferror(f) ? bk_fail_write(err, err_size, path) : 0;
}

#if BK_HAVE_EXR
/* v (finite, in [0, 65504]) as the nearest half float, ties to even (nearbyint in the default
 * rounding mode). Our own rather than tinyexr's float conversion, which rounds ties upwards. */
static uint16_t half_bits(double v)
{
    if (v < ldexp(1.0, -14)) return (uint16_t)nearbyint(v * 16777216.0); /* subnormal; 1024 is the smallest normal */
    int e;
    frexp(v, &e);                             /* v = m 2^e, m in [0.5, 1): exponent e - 1, biased e + 14 */
    double sig = nearbyint(ldexp(v, 11 - e)); /* 11 significant bits: 1024..2048 */
    if (sig >= 2048.0) {
        sig = 1024.0;
        e++;
    }
    return (uint16_t)(((e + 14) << 10) | ((int)sig - 1024));
}

/* R, G, B as half floats (pixel_types HALF: tinyexr writes the planes as given); values past
 * 65504 (the largest half) are clamped to it, negatives and NaN are 0. EXR readers expect
 * channels sorted by name: B, G, R. */
static int write_exr(FILE *f, const char *path, const float *rgb, int nc, int sign, int w, int h, char *err,
                     size_t err_size)
{
    size_t    n = (size_t)w * h;
    uint16_t *plane = malloc(sizeof(uint16_t) * n * (size_t)nc);
    if (!plane) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, w, h);
    /* planes sorted by channel name: (A,) B, G, R */
    for (size_t i = 0; i < n; ++i)
        for (int k = 0; k < nc; ++k) {
            float          v = rgb[(size_t)nc * i + (size_t)k];
            const uint16_t neg = sign && v < 0.0f ? 0x8000u : 0u; /* a data image keeps its sign */
            v = neg ? -v : v > 0 ? v : 0.0f;                      /* negatives (light) and NaN */
            plane[(size_t)(k == 3 ? 0 : nc - 1 - k) * n + i] = (uint16_t)(neg | half_bits(v < 65504.0f ? v : 65504.0f));
        }
    EXRHeader hd;
    EXRImage  im;
    InitEXRHeader(&hd);
    InitEXRImage(&im);
    EXRChannelInfo ch[4];
    int types[4] = { TINYEXR_PIXELTYPE_HALF, TINYEXR_PIXELTYPE_HALF, TINYEXR_PIXELTYPE_HALF, TINYEXR_PIXELTYPE_HALF };
    unsigned char *planes[4];
    memset(ch, 0, sizeof ch);
    for (int c = 0; c < nc; ++c) {
        ch[c].name[0] = (nc == 4 ? "ABGR" : "BGR")[c];
        ch[c].x_sampling = ch[c].y_sampling = 1;
        planes[c] = (unsigned char *)(plane + (size_t)c * n);
    }
    hd.num_channels = nc;
    hd.channels = ch;
    hd.pixel_types = types;
    hd.requested_pixel_types = types;
    hd.compression_type = TINYEXR_COMPRESSIONTYPE_ZIP;
    im.num_channels = nc;
    im.images = planes;
    im.width = w;
    im.height = h;
    unsigned char *mem = NULL;
    const char    *msg = NULL;
    size_t         size = SaveEXRImageToMemory(&im, &hd, &mem, &msg);
    free(plane);
    if (!size) {
        bk_fail(err, err_size, "%s: EXR encoder failed (%dx%d): %s", path, w, h, msg ? msg : "no reason given");
        if (msg) FreeEXRErrorMessage(msg);
        free(mem);
        return -1;
    }
    size_t put = fwrite(mem, 1, size, f);
    free(mem); /* tinyexr malloc()s the encoded file */
    return put != size || ferror(f) ? bk_fail_write(err, err_size, path) : 0;
}
#endif

int bk_image_write_file(FILE *f, const char *path, const float *rgb, int w, int h, float exposure, char *err,
                        size_t err_size)
{
    if (bk_image_type_check(NULL, path, err, err_size)) return -1;
    int hdr = bk_image_type_of(path) == BK_IMAGE_TYPE_HDR;
    if (w <= 0 || h <= 0) return bk_fail(err, err_size, "%s: empty image (%dx%d)", path, w, h);
    if (hdr) return write_hdr(f, path, rgb, w, h, err, err_size);
#if BK_HAVE_EXR
    if (bk_image_type_of(path) == BK_IMAGE_TYPE_EXR) return write_exr(f, path, rgb, 3, 0, w, h, err, err_size);
#endif
    if (!(exposure >= 0 && isfinite(exposure)))
        return bk_fail(err, err_size, "%s: exposure %g: must be a finite number >= 0", path, (double)exposure);
    return write_pngs(&f, &path, &rgb, 1, w, h, exposure, 3, 0, err, err_size);
}

int bk_image_write_files(FILE *const *f, const char *const *path, const float *const *rgb, int n, int w, int h,
                         float exposure, char *err, size_t err_size)
{
    int png = n > 0;
    for (int p = 0; p < n; ++p) png &= bk_image_type_of(path[p]) == BK_IMAGE_TYPE_PNG;
    if (!png || n == 1 || w <= 0 || h <= 0 || !(exposure >= 0 && isfinite(exposure))) {
        for (int p = 0; p < n; ++p)
            if (bk_image_write_file(f[p], path[p], rgb[p], w, h, exposure, err, err_size)) return -1;
        return 0;
    }
    return write_pngs(f, path, rgb, n, w, h, exposure, 3, 0, err, err_size);
}

int bk_image_write_data(FILE *f, const char *path, const float *px, int ch, int w, int h, char *err, size_t err_size)
{
    if (bk_image_type_check(NULL, path, err, err_size)) return -1;
    if (w <= 0 || h <= 0) return bk_fail(err, err_size, "%s: empty image (%dx%d)", path, w, h);
    if (ch != 3 && ch != 4) return bk_fail(err, err_size, "%s: %d channels: a data image has 3 or 4", path, ch);
    if (bk_image_type_of(path) == BK_IMAGE_TYPE_HDR)
        return bk_fail(err, err_size, "%s: a Radiance HDR holds no signed or RGBA data: write it as .png or .exr",
                       path);
#if BK_HAVE_EXR
    if (bk_image_type_of(path) == BK_IMAGE_TYPE_EXR) return write_exr(f, path, px, ch, 1, w, h, err, err_size);
#endif
    return write_pngs(&f, &path, &px, 1, w, h, 1.0f, ch, 1, err, err_size);
}

float bk_image_srgb_to_linear(float s)
{
    double c = s;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}

/* A decoder's message as one printable line: tinyexr's may span lines (several joined by "\n"),
 * stb_image's "XXXX PNG chunk not known" carries the file's raw chunk type bytes. Control
 * characters become blanks (collapsed), other bytes outside ASCII '?'. */
static const char *one_line(const char *msg, char *line, size_t size)
{
    size_t n = 0;
    for (const char *c = msg ? msg : "no reason given"; *c && n + 1 < size; ++c) {
        unsigned char u = (unsigned char)*c;
        char          ch = u < 0x20 ? ' ' : u >= 0x7f ? '?' : (char)u;
        if (ch == ' ' && (n == 0 || line[n - 1] == ' ')) continue;
        line[n++] = ch;
    }
    while (n && line[n - 1] == ' ') n--;
    line[n] = 0;
    return n ? line : "no reason given";
}

/* w x h within the limits: sides 1..BK_IMAGE_MAX_SIDE, at most max_pixels in all. */
static int check_dims(const char *path, const char *kind, int64_t w, int64_t h, uint64_t max_pixels, char *err,
                      size_t err_size)
{
    if (w < 1 || h < 1 || w > BK_IMAGE_MAX_SIDE || h > BK_IMAGE_MAX_SIDE)
        return bk_fail(err, err_size, "%s: the %s image is %lldx%lld: sides must be 1..%d", path, kind, (long long)w,
                       (long long)h, BK_IMAGE_MAX_SIDE);
    if ((uint64_t)w * (uint64_t)h > max_pixels)
        return bk_fail(err, err_size, "%s: the %s image is %lldx%lld: more than the %llu pixels allowed here", path,
                       kind, (long long)w, (long long)h, (unsigned long long)max_pixels);
    return 0;
}

#if BK_HAVE_EXR
static int exr_fail(const char *path, const char *what, const char *msg, char *err, size_t err_size)
{
    char line[512];
    bk_fail(err, err_size, "%s: %s: %s", path, what, one_line(msg, line, sizeof line));
    if (msg) FreeEXRErrorMessage(msg);
    return -1;
}

/* A single-part scanline EXR from memory: R, G, B (or Y as grey), half or float, all finite >= 0. */
static int read_exr(const char *path, const unsigned char *buf, size_t size, uint64_t max_pixels, float **rgb, int *w,
                    int *h, char *err, size_t err_size, int sign)
{
    EXRVersion ver;
    if (ParseEXRVersionFromMemory(&ver, buf, size) != TINYEXR_SUCCESS)
        return bk_fail(err, err_size, "%s: not an OpenEXR file", path);
    if (ver.multipart || ver.non_image)
        return bk_fail(err, err_size, "%s: a multi-part or deep EXR: only single-part scanline images are read", path);
    if (ver.tiled) return bk_fail(err, err_size, "%s: a tiled EXR: only scanline images are read", path);
    EXRHeader hd;
    InitEXRHeader(&hd);
    const char *msg = NULL;
    if (ParseEXRHeaderFromMemory(&hd, &ver, buf, size, &msg) != TINYEXR_SUCCESS) {
        FreeEXRHeader(&hd);
        return exr_fail(path, "cannot read the EXR header", msg, err, err_size);
    }
    int      rc = -1, chan[3] = { -1, -1, -1 }, grey = -1;
    float   *out = NULL;
    EXRImage im;
    InitEXRImage(&im);
    int64_t iw = (int64_t)hd.data_window.max_x - hd.data_window.min_x + 1;
    int64_t ih = (int64_t)hd.data_window.max_y - hd.data_window.min_y + 1;
    if (hd.tiled) {
        bk_fail(err, err_size, "%s: a tiled EXR: only scanline images are read", path);
        goto done;
    }
    if (check_dims(path, "EXR", iw, ih, max_pixels, err, err_size)) goto done;
    if (hd.num_channels < 1 || hd.num_channels > BK_IMAGE_EXR_MAX_CHANNELS) {
        bk_fail(err, err_size, "%s: %d channels: an EXR lightmap has 1..%d", path, hd.num_channels,
                BK_IMAGE_EXR_MAX_CHANNELS);
        goto done;
    }
    for (int c = 0; c < hd.num_channels; ++c) {
        const char *name = hd.channels[c].name;
        if (!strcmp(name, "R")) chan[0] = c;
        else if (!strcmp(name, "G")) chan[1] = c;
        else if (!strcmp(name, "B")) chan[2] = c;
        else if (!strcmp(name, "Y")) grey = c;
        if (hd.pixel_types[c] == TINYEXR_PIXELTYPE_HALF) hd.requested_pixel_types[c] = TINYEXR_PIXELTYPE_FLOAT;
    }
    if (chan[0] < 0 && chan[1] < 0 && chan[2] < 0 && grey >= 0) chan[0] = chan[1] = chan[2] = grey;
    if (chan[0] < 0 || chan[1] < 0 || chan[2] < 0) {
        bk_fail(err, err_size, "%s: the EXR has no channels R, G and B (nor Y)", path);
        goto done;
    }
    for (int k = 0; k < 3; ++k) {
        const EXRChannelInfo *ci = &hd.channels[chan[k]];
        if (hd.pixel_types[chan[k]] == TINYEXR_PIXELTYPE_UINT) {
            bk_fail(err, err_size, "%s: EXR channel %s holds integers: a lightmap's are half or float", path, ci->name);
            goto done;
        }
        if (ci->x_sampling != 1 || ci->y_sampling != 1) {
            bk_fail(err, err_size, "%s: EXR channel %s is subsampled (%dx%d): not read", path, ci->name, ci->x_sampling,
                    ci->y_sampling);
            goto done;
        }
    }
    /* tinyexr 1.0.1, on pixels it cannot decode, frees the image through FreeEXRImage before it
     * has set im.num_channels, so the channel planes would leak (found by fuzz_image): give the
     * count first. It frees on failure but leaves the pointers: forget them afterwards. */
    im.num_channels = hd.num_channels;
    if (LoadEXRImageFromMemory(&im, &hd, buf, size, &msg) != TINYEXR_SUCCESS) {
        InitEXRImage(&im);
        exr_fail(path, "cannot read the EXR image", msg, err, err_size);
        goto done;
    }
    if ((int64_t)im.width != iw || (int64_t)im.height != ih || !im.images || im.num_channels != hd.num_channels) {
        bk_fail(err, err_size, "%s: the EXR decoder returned a %dx%d image for a %lldx%lld data window", path, im.width,
                im.height, (long long)iw, (long long)ih);
        goto done;
    }
    size_t n = (size_t)iw * (size_t)ih;
    out = malloc(sizeof(float) * n * 3);
    if (!out) {
        bk_fail(err, err_size, "%s: out of memory for a %lldx%lld image", path, (long long)iw, (long long)ih);
        goto done;
    }
    for (int k = 0; k < 3; ++k) {
        const float *src = (const float *)im.images[chan[k]];
        for (size_t i = 0; i < n; ++i) {
            float v = src[i];
            if (!(isfinite(v) && (v >= 0 || sign))) {
                bk_fail(err, err_size, "%s: EXR pixel (%zu, %zu) channel %s is %g: a lightmap holds finite values >= 0",
                        path, i % (size_t)iw, i / (size_t)iw, hd.channels[chan[k]].name, (double)v);
                goto done;
            }
            out[3 * i + k] = v;
        }
    }
    *rgb = out;
    out = NULL;
    *w = (int)iw;
    *h = (int)ih;
    rc = 0;
done:
    free(out);
    FreeEXRImage(&im);
    FreeEXRHeader(&hd);
    return rc;
}
#endif

/* A PNG or Radiance HDR file's bytes through stb_image, after the checks of texture.h. */
static int read_stb(const char *path, bk_image_type type, const unsigned char *buf, size_t size, uint64_t max_pixels,
                    float **rgb, int *w, int *h, char *err, size_t err_size)
{
    int    x, y, comp;
    float *out = NULL;
    char   line[256];
    if (type == BK_IMAGE_TYPE_EXR) return 0;
    if (size > INT_MAX)
        return bk_fail(err, err_size, "%s: %zu bytes: PNG and HDR files are read up to %d bytes", path, size, INT_MAX);
    if (type == BK_IMAGE_TYPE_PNG && bk_stb_png_check(buf, size, line, sizeof line))
        return bk_fail(err, err_size, "%s: %s", path, line);
    if (!stbi_info_from_memory(buf, (int)size, &x, &y, &comp))
        return bk_fail(err, err_size, "%s: not a %s image: %s", path,
                       type == BK_IMAGE_TYPE_HDR ? "Radiance HDR" : "PNG",
                       one_line(stbi_failure_reason(), line, sizeof line));
    const char *kind = type == BK_IMAGE_TYPE_HDR ? "HDR" : "PNG";
    if (check_dims(path, kind, x, y, max_pixels, err, err_size)) return -1;
    if (type == BK_IMAGE_TYPE_HDR) {
        if (!stbi_is_hdr_from_memory(buf, (int)size))
            return bk_fail(err, err_size, "%s: not a Radiance HDR file", path);
        if (bk_stb_hdr_check(buf, size, x, y, line, sizeof line)) return bk_fail(err, err_size, "%s: %s", path, line);
        out = stbi_loadf_from_memory(buf, (int)size, &x, &y, &comp, 3);
        if (!out)
            return bk_fail(err, err_size, "%s: cannot read the HDR image: %s", path,
                           one_line(stbi_failure_reason(), line, sizeof line));
    } else {
        if (stbi_is_hdr_from_memory(buf, (int)size))
            return bk_fail(err, err_size, "%s: a Radiance HDR file named .png", path);
        if (size < 8 || memcmp(buf, "\x89PNG", 4))
            return bk_fail(err, err_size, "%s: not a PNG image: no PNG signature", path);
        stbi_uc *b = stbi_load_from_memory(buf, (int)size, &x, &y, &comp, 3);
        if (!b)
            return bk_fail(err, err_size, "%s: cannot read the PNG image: %s", path,
                           one_line(stbi_failure_reason(), line, sizeof line));
        float lut[256];
        for (int i = 0; i < 256; ++i) lut[i] = bk_image_srgb_to_linear((float)i / 255.0f);
        size_t n = (size_t)x * y * 3;
        out = malloc(sizeof(float) * n);
        if (out)
            for (size_t i = 0; i < n; ++i) out[i] = lut[b[i]];
        stbi_image_free(b);
        if (!out) return bk_fail(err, err_size, "%s: out of memory for a %dx%d image", path, x, y);
    }
    /* stb's float buffer is malloc'ed (no STBI_MALLOC override): free() frees it */
    *rgb = out;
    *w = x;
    *h = y;
    return 0;
}

int bk_image_read(const char *path, float **rgb, int *w, int *h, char *err, size_t err_size)
{
    return bk_image_read_max(path, (uint64_t)BK_IMAGE_MAX_SIDE * BK_IMAGE_MAX_SIDE, rgb, w, h, err, err_size);
}

static int read_any(const char *path, uint64_t max_pixels, int sign, float **rgb, int *w, int *h, char *err,
                    size_t err_size);

int bk_image_read_max(const char *path, uint64_t max_pixels, float **rgb, int *w, int *h, char *err, size_t err_size)
{
    return read_any(path, max_pixels, 0, rgb, w, h, err, err_size);
}

int bk_image_read_data(const char *path, float **rgb, int *w, int *h, char *err, size_t err_size)
{
    return bk_image_read_data_max(path, (uint64_t)BK_IMAGE_MAX_SIDE * BK_IMAGE_MAX_SIDE, rgb, w, h, err, err_size);
}

int bk_image_read_data_max(const char *path, uint64_t max_pixels, float **rgb, int *w, int *h, char *err,
                           size_t err_size)
{
    return read_any(path, max_pixels, 1, rgb, w, h, err, err_size);
}

static int read_any(const char *path, uint64_t max_pixels, int sign, float **rgb, int *w, int *h, char *err,
                    size_t err_size)
{
    *rgb = NULL;
    *w = *h = 0;
    if (bk_image_type_check(NULL, path, err, err_size)) return -1;
    bk_image_type type = bk_image_type_of(path);
    struct stat   st;
    if (stat(path, &st) != 0) return bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return bk_fail(err, err_size, "%s: not a regular file", path);
    if ((uint64_t)st.st_size > BK_IMAGE_MAX_FILE)
        return bk_fail(err, err_size, "%s: %llu bytes: image files are read up to %llu bytes", path,
                       (unsigned long long)st.st_size, (unsigned long long)BK_IMAGE_MAX_FILE);
    FILE *f = fopen(path, "rb");
    if (!f) return bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    size_t         size = (size_t)st.st_size;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fclose(f);
        return bk_fail(err, err_size, "%s: out of memory for %zu bytes", path, size);
    }
    size_t got = fread(buf, 1, size, f);
    int    bad = ferror(f);
    fclose(f);
    if (bad || got != size) {
        free(buf);
        return bk_fail(err, err_size, "%s: read failed", path);
    }
    int rc = read_stb(path, type, buf, size, max_pixels, rgb, w, h, err, err_size);
#if BK_HAVE_EXR
    if (type == BK_IMAGE_TYPE_EXR) rc = read_exr(path, buf, size, max_pixels, rgb, w, h, err, err_size, sign);
#endif
    free(buf);
    return rc;
}


int bk_image_write(const char *path, const float *rgb, int w, int h, float exposure, char *err, size_t err_size)
{
    if (bk_image_type_check(NULL, path, err, err_size)) return -1; /* before any file is made */
    bk_outfile of;
    if (bk_outfile_open(&of, path, err, err_size) != 0) return -1;
    if (bk_image_write_file(of.f, path, rgb, w, h, exposure, err, err_size)) {
        bk_outfile_abort(&of);
        return -1;
    }
    return bk_outfile_commit(&of, err, err_size);
}
