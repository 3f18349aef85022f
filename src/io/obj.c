/* obj.c - Wavefront OBJ + MTL loader: text (plain or gzip) -> bk_scene (scene.h).
 *
 * Pipeline: io stage, beside vox.c. bk_scene_load (loader.c) picks this reader for .obj and .obj.gz;
 * builders read the bk_scene.
 * Speed matters (the 33 MB Stanford dragon is a benchmark, see bench_load.c): the whole file is read
 * into one zero-padded buffer (mapped when large), numbers are parsed by hand (Clinger's exact fast
 * path, strtof for the rest: every float correctly rounded), arrays grow geometrically, nothing is
 * allocated per line, and line numbers are counted only when a message needs one.
 *
 * Behaviour (also documented in tests/unit_obj.c):
 *   errors (negative status, one line "path:line: reason" in err): unreadable file, a file (OBJ or
 *     MTL) that is not a regular file or is larger than its limit (scene.h), a truncated .gz, UTF-16
 *     or binary text, index 0, index out of range (against the vertices defined so far), unparsable
 *     number, non-finite v/vt/vn or MTL Kd/Ke, v with < 3 or vn with < 3 or vt with < 1 numbers,
 *     face with < 3 vertices, no faces at all, more than 2^32-2 elements, out of memory. Bytes of
 *     the file quoted in a message have their control characters escaped.
 *   o and g lines name the triangles after them (tri_object, for --object-scale)
 *   warnings (one line on stderr, loading goes on): mtllib file missing, usemtl name that no MTL
 *     defines (those triangles get BK_NONE = default material), MTL lines that cannot be parsed,
 *     Kd outside [0, 1], Ke outside [0, BK_KE_MAX] or d / Tr outside [0, 1] (clamped), a map
 *     option without its arguments, a map file that cannot be read (texture.c; its factor used).
 *   materials: Kd Ke d Tr map_Kd map_Ke map_d with -o -s -clamp -imfchan (docs/materials.md).
 *   accepted: a UTF-8 byte-order mark.
 *   ignored: o g s l p vp cstype ... comments and unknown keywords; extra numbers (v x y z w, colours).
 * References: Wavefront OBJ and MTL specs (Advanced Visualizer manual, appendices B1/B2);
 *   W. D. Clinger, "How to read floating point numbers accurately", PLDI 1990.
 */
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS (POSIX only from 2024) */
#include "bk_material.h"
#include "loader.h"
#include "scene.h"
#include "texture.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#if BK_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#define PAD          64          /* zero bytes after every text buffer: parsers may look ahead */
#define MAX_ELEMS    0xFFFFFFFEu /* largest count we store: indices are uint32 and BK_NONE is taken */
#define MAX_WARNINGS 10

#if defined(__GNUC__)
#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define LIKELY(x)   (x)
#define UNLIKELY(x) (x)
#endif

/* ---- file reading ---------------------------------------------------------------------------- */

/* A file's text followed by at least PAD zero bytes, so parsers may look ahead without length checks. */
typedef struct text {
    char  *buf;
    size_t len;
    size_t map_len; /* bytes mapped, 0 when buf is malloc'd */
} text;

static void text_free(text *t)
{
    if (t->map_len) munmap(t->buf, t->map_len);
    else free(t->buf);
    memset(t, 0, sizeof *t);
}

#define READ_MISSING (-2) /* read_text: the file does not exist */

/* Reads a stream to its end into t (plus PAD zero bytes), starting from a guessed capacity and
 * doubling it: the size is only a guess (compressed files, files that grow). rd returns the bytes
 * read, 0 at the end, or < 0 with the reason in why. More than limit bytes is an error. */
typedef long (*chunk_reader)(void *src, char *dst, size_t want, char *why, size_t why_size);

static int read_all(const char *path, size_t cap, uint64_t limit, chunk_reader rd, void *src, text *t, char *err,
                    size_t err_size)
{
    size_t n = 0;
    if ((uint64_t)cap > limit + 1) cap = (size_t)limit + 1;
    char *b = malloc(cap + PAD);
    for (;;) {
        if (b && n == cap) {
            if ((uint64_t)n > limit) {
                free(b);
                return bk_fail(err, err_size,
                               "%s: more than %.0f MB of text: larger than baker reads (docs/formats.md)", path,
                               (double)limit / 1e6);
            }
            size_t c = (uint64_t)cap * 2 > limit + 1 ? (size_t)limit + 1 : cap * 2;
            char  *nb = realloc(b, c + PAD);
            if (!nb) {
                free(b);
                b = NULL;
            } else {
                b = nb;
                cap = c;
            }
        }
        if (!b) return bk_fail(err, err_size, "%s: out of memory reading the file", path);
        char   why[160] = "";
        size_t want = cap - n < (1u << 30) ? cap - n : (1u << 30);
        long   got = rd(src, b + n, want, why, sizeof why);
        if (got < 0) {
            free(b);
            return bk_fail(err, err_size, "%s: %s", path, why);
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    memset(b + n, 0, PAD);
    t->buf = b;
    t->len = n;
    return 0;
}

/* zlib reports a stream cut short as Z_BUF_ERROR and gzread then returns what it had, so the end
 * of the data is checked here: a truncated .gz is an error, not a shorter scene. */
static long gz_chunk(void *src, char *dst, size_t want, char *why, size_t why_size)
{
    int         got = gzread((gzFile)src, dst, (unsigned)want);
    int         code = Z_OK;
    const char *msg = got <= 0 ? gzerror((gzFile)src, &code) : NULL;
    if (got < 0) snprintf(why, why_size, "gzip read error: %s", code == Z_ERRNO ? strerror(errno) : msg);
    else if (got == 0 && code == Z_BUF_ERROR) {
        snprintf(why, why_size, "the gzip stream ends early (the file is truncated)");
        return -1;
    }
    return got;
}

static long fd_chunk(void *src, char *dst, size_t want, char *why, size_t why_size)
{
    for (;;) {
        ssize_t r = read(*(int *)src, dst, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) snprintf(why, why_size, "read error: %s", strerror(errno));
        return (long)r;
    }
}

/* Large regular files are mapped rather than read: no copy, and page-cache pages come in several at a
 * time instead of one zeroed page per fault (about 10 ms less on the 33 MB dragon). An anonymous
 * mapping one page longer than the file is reserved first and the file mapped over its start, so the
 * bytes after the end read as zeros (mmap zero-fills the tail of the last file page). A file truncated
 * by another process while it is parsed would raise SIGBUS; we accept that for the speed. */
static int map_file(int fd, size_t size, text *t)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t total = (size + page - 1) / page * page + page;
    void  *base = mmap(NULL, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return -1;
    if (mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) != base) {
        munmap(base, total);
        return -1;
    }
    posix_madvise(base, size, POSIX_MADV_SEQUENTIAL);
    t->buf = base;
    t->len = size;
    t->map_len = total;
    return 0;
}

#if BK_HAVE_LIBDEFLATE
/* A .gz through libdeflate: the compressed file read whole, then each gzip member inflated in one
 * call into a buffer sized by the member's trailer (its length mod 2^32), doubled while too small.
 * About three times zlib's streaming inflate (the 33 MB dragon_vrip.obj.gz: 0.15 s -> 0.05 s).
 * Returns 0; 1 when libdeflate cannot read the file (the caller reads it again through zlib, whose
 * errors say what is wrong: a truncated stream, not gzip data); -1 with err set. */
static int gz_read_fast(const char *path, int fd, uint64_t st_size, uint64_t limit, text *t, char *err, size_t err_size)
{
    if (st_size < 18 || st_size > limit) return 1; /* not one whole member, or zlib's limit message */
    text in;
    memset(&in, 0, sizeof in);
    if (read_all(path, (size_t)st_size + 1, limit, fd_chunk, &fd, &in, err, err_size)) return -1;
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    const unsigned char            *p = (const unsigned char *)in.buf;
    uint32_t isize = (uint32_t)p[in.len - 4] | (uint32_t)p[in.len - 3] << 8 | (uint32_t)p[in.len - 2] << 16 |
                     (uint32_t)p[in.len - 1] << 24;
    /* (a trailer claiming far more than text compresses to is not taken at its word) */
    uint64_t guess = (uint64_t)isize + 1 < 16 * st_size + (1u << 20) ? (uint64_t)isize + 1 : 16 * st_size + (1u << 20);
    size_t   cap = guess <= limit + 1 ? (size_t)guess : (size_t)limit + 1, n = 0, used = 0;
    char    *out = malloc(cap + PAD);
    int      rc = d && out ? 0 : -1;
    while (rc == 0 && used < in.len) {
        size_t                 in_n = 0, out_n = 0;
        enum libdeflate_result r =
            libdeflate_gzip_decompress_ex(d, in.buf + used, in.len - used, out + n, cap - n, &in_n, &out_n);
        if (r == LIBDEFLATE_SUCCESS) {
            used += in_n;
            n += out_n;
            continue;
        }
        if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
            rc = 1;
            break;
        }
        if ((uint64_t)cap > limit) {
            rc = bk_fail(err, err_size, "%s: more than %.0f MB of text: larger than baker reads (docs/formats.md)",
                         path, (double)limit / 1e6);
            break;
        }
        size_t c = (uint64_t)cap * 2 > limit + 1 ? (size_t)limit + 1 : cap * 2;
        char  *q = realloc(out, c + PAD);
        if (!q) {
            rc = -1;
            break;
        }
        out = q;
        cap = c;
    }
    if (rc == 0 && (uint64_t)n > limit)
        rc = bk_fail(err, err_size, "%s: more than %.0f MB of text: larger than baker reads (docs/formats.md)", path,
                     (double)limit / 1e6);
    if (rc < 0 && !err[0]) bk_fail(err, err_size, "%s: out of memory reading the file", path);
    if (d) libdeflate_free_decompressor(d);
    text_free(&in);
    if (rc != 0) {
        free(out);
        return rc;
    }
    memset(out + n, 0, PAD);
    t->buf = out;
    t->len = n;
    return 0;
}
#endif

/* The whole file into t: gunzipped when the name ends in .gz, mapped when large, else read. Only
 * regular files (a device or a FIFO may never end), of at most limit bytes of text. Returns 0,
 * READ_MISSING when the file does not exist, or -1; err names the file either way. */
static int read_text(const char *path, uint64_t limit, text *t, char *err, size_t err_size)
{
    memset(t, 0, sizeof *t);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        bk_fail(err, err_size, "%s: cannot open: %s", path, strerror(e));
        return e == ENOENT ? READ_MISSING : -1;
    }
    uint64_t st_size;
    if (bk_fd_regular(fd, path, &st_size, err, err_size)) return -1;
    int rc;
    if (bk_path_has_ext(path, ".gz")) {
#if BK_HAVE_LIBDEFLATE
        err[0] = 0;
        rc = gz_read_fast(path, fd, st_size, limit, t, err, err_size);
        if (rc <= 0) {
            close(fd);
            return rc;
        }
        if (lseek(fd, 0, SEEK_SET) != 0) {
            int e = errno;
            close(fd);
            return bk_fail(err, err_size, "%s: cannot read: %s", path, strerror(e));
        }
#endif
        gzFile gz = gzdopen(fd, "rb");
        if (!gz) {
            close(fd);
            return bk_fail(err, err_size, "%s: cannot open: gzdopen failed", path);
        }
        gzbuffer(gz, 1u << 18);
        size_t cap = st_size > 0 && (uint64_t)st_size < limit / 5 ? (size_t)st_size * 5 : (1u << 20);
        rc = read_all(path, cap, limit, gz_chunk, gz, t, err, err_size);
        gzclose(gz);
        return rc;
    }
    if ((uint64_t)st_size > limit) {
        close(fd);
        return bk_fail(err, err_size, "%s: %.0f MB: larger than the %.0f MB baker reads (docs/formats.md)", path,
                       (double)st_size / 1e6, (double)limit / 1e6);
    }
    if (st_size >= (1 << 20) && map_file(fd, (size_t)st_size, t) == 0) {
        close(fd);
        return 0;
    }
    rc = read_all(path, (size_t)st_size + 1, limit, fd_chunk, &fd, t, err, err_size);
    close(fd);
    return rc;
}

/* What the text is, before parsing: a UTF-8 byte-order mark is skipped; UTF-16 and binary files
 * are named as such instead of failing on their first line. */
static int check_text(const char *path, text *t, const char **start, char *err, size_t err_size)
{
    const unsigned char *b = (const unsigned char *)t->buf;
    *start = t->buf;
    if (t->len >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) {
        *start += 3;
        return 0;
    }
    if (t->len >= 2 && ((b[0] == 0xFF && b[1] == 0xFE) || (b[0] == 0xFE && b[1] == 0xFF)))
        return bk_fail(err, err_size, "%s: is UTF-16 text: baker reads OBJ and MTL as ASCII or UTF-8; save it as UTF-8",
                       path);
    size_t look = t->len < 256 ? t->len : 256;
    if (memchr(b, 0, look))
        return bk_fail(err, err_size,
                       "%s: holds NUL bytes near its start: a binary file (or UTF-16 without a byte-order "
                       "mark), not OBJ/MTL text",
                       path);
    return 0;
}

/* ---- character classes and numbers ------------------------------------------------------------ */

/* Blank: separates tokens inside a line ('\r' too, so CRLF files need nothing special). */
static inline int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
/* End of a statement: newline, comment, or the terminating zero (a NUL inside a file ends the line). */
static inline int is_eol(char c) { return c == '\n' || c == '#' || c == '\0'; }
static inline int is_digit(char c) { return (unsigned)(c - '0') < 10u; }

/* Skips blanks and '\' line continuations. */
static inline const char *skip_blank(const char *p)
{
    for (;;) {
        while (is_blank(*p)) p++;
        if (LIKELY(*p != '\\')) return p;
        const char *q = p + 1;
        while (*q == '\r') q++;
        if (*q != '\n') return p;
        p = q + 1;
    }
}

/* Start of the next line (or end when there is none). */
static inline const char *next_line(const char *p, const char *end)
{
    if (p >= end) return end;
    const char *q = memchr(p, '\n', (size_t)(end - p));
    return q ? q + 1 : end;
}

static const double pow10_d[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
static const float  pow10_f[11] = { 1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f, 1e6f, 1e7f, 1e8f, 1e9f, 1e10f };

static inline int is_num_end(char c) { return is_blank(c) || is_eol(c) || c == '\\'; }

/* Parses a decimal float at p into *out; returns the position after it, or NULL when p does not hold a
 * number followed by a blank or the end of the statement. Decimal digits with an optional exponent go
 * through Clinger's fast path, exact whenever the digits fit the float (or double) mantissa and the
 * power of ten is exact: correctly rounded in float, or in double and then rounded to float (exact
 * except when the double is a float midpoint, which goes to strtof). Longer digit strings, large
 * exponents, inf/nan and hex go to strtof. So every result is the correctly rounded float. */
static const char *parse_float(const char *p, float *out)
{
    const char *s = p;
    int         neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    } else if (*p == '+') p++;
    uint64_t m = 0;
    int      nd = 0, e10 = 0, any = 0, exact = 1;
    while (is_digit(*p)) {
        any = 1;
        if (nd < 19) {
            m = m * 10 + (uint64_t)(*p - '0');
            nd += (m != 0);
        } else {
            e10++;
            if (*p != '0') exact = 0;
        }
        p++;
    }
    if (*p == '.') {
        p++;
        while (is_digit(*p)) {
            any = 1;
            if (nd < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                nd += (m != 0);
                e10--;
            } else if (*p != '0') exact = 0;
            p++;
        }
    }
    if (!any) goto slow;
    if (*p == 'e' || *p == 'E') {
        p++;
        int eneg = 0, ev = 0;
        if (*p == '-') {
            eneg = 1;
            p++;
        } else if (*p == '+') p++;
        if (!is_digit(*p)) goto slow;
        while (is_digit(*p)) {
            if (ev < 100000) ev = ev * 10 + (*p - '0');
            p++;
        }
        e10 += eneg ? -ev : ev;
    }
    if (UNLIKELY(!is_num_end(*p))) goto slow;
    if (m == 0) {
        *out = neg ? -0.0f : 0.0f;
        return p;
    }
    if (LIKELY(exact)) {
        if (m <= (1u << 24) && e10 >= -10 && e10 <= 10) {
            float f = (float)m;
            f = e10 < 0 ? f / pow10_f[-e10] : f * pow10_f[e10];
            *out = neg ? -f : f;
            return p;
        }
        if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
            double d = (double)m;
            d = e10 < 0 ? d / pow10_d[-e10] : d * pow10_d[e10];
            /* d is the correctly rounded double; rounding it to float is right unless d lies exactly
             * halfway between two floats (the low 29 mantissa bits are 1000...0): then ask strtof. */
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            if (LIKELY((bits & 0x1FFFFFFFu) != 0x10000000u)) {
                *out = (float)(neg ? -d : d);
                return p;
            }
        }
    }
slow : {
    char *q;
    float f = strtof(s, &q); /* correctly rounded to float directly, no double rounding */
    if (q == s || !is_num_end(*q)) return NULL;
    *out = f;
    return q;
}
}

/* Parses an optionally signed integer; |value| saturates at 2^40 (anything that large is out of range). */
static inline const char *parse_int(const char *p, int64_t *out)
{
    int neg = 0;
    if (*p == '-') {
        neg = 1;
        p++;
    } else if (*p == '+') p++;
    if (!is_digit(*p)) return NULL;
    int64_t v = 0;
    while (is_digit(*p)) {
        if (v < (INT64_C(1) << 40)) v = v * 10 + (*p - '0');
        p++;
    }
    *out = neg ? -v : v;
    return p;
}

/* ---- growable arrays -------------------------------------------------------------------------- */

/* Makes room for `need` elements, growing by 1.5x-2x; 0 or -1 (out of memory, old block kept). */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t c = *cap < 1024 ? 1024 : *cap * 2;
    if (c < need) c = need;
    if (c > SIZE_MAX / elem) return -1;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- names ------------------------------------------------------------------------------------ */

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* Open-addressing index over names stored at base + i * stride (bk_material and used_name both start
 * with char name[128]), so usemtl lookups stay O(1) with thousands of materials. */
typedef struct name_index {
    uint32_t *slot; /* item index, BK_NONE when empty */
    size_t    cap;  /* power of two, kept at least twice the item count */
} name_index;

static uint32_t index_find(const name_index *ix, const char *base, size_t stride, const char *name, uint32_t h)
{
    if (!ix->cap) return BK_NONE;
    for (size_t i = h & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        uint32_t k = ix->slot[i];
        if (k == BK_NONE || strcmp(base + k * stride, name) == 0) return k;
    }
}

/* Adds item `item` (the newest; items 0..item-1 are already in) unless its name is there: first wins. */
static int index_add(name_index *ix, const char *base, size_t stride, uint32_t item)
{
    if (2 * ((size_t)item + 1) > ix->cap) {
        size_t cap = ix->cap ? ix->cap : 32;
        while (cap < 2 * ((size_t)item + 1)) cap *= 2;
        uint32_t *slot = malloc(cap * sizeof(uint32_t));
        if (!slot) return -1;
        memset(slot, 0xFF, cap * sizeof(uint32_t));
        free(ix->slot);
        ix->slot = slot;
        ix->cap = cap;
        for (uint32_t k = 0; k < item; k++)
            if (index_add(ix, base, stride, k) != 0) return -1;
    }
    const char *name = base + item * stride;
    for (size_t i = hash_name(name) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        uint32_t k = ix->slot[i];
        if (k == BK_NONE) {
            ix->slot[i] = item;
            return 0;
        }
        if (strcmp(base + k * stride, name) == 0) return 0;
    }
}

/* ---- loader state ----------------------------------------------------------------------------- */

typedef struct used_name { /* a name given to usemtl, resolved after the whole file is read */
    char        name[128]; /* first member: see name_index */
    const char *first_use; /* where it first appears (for the warning's line number) */
} used_name;

typedef struct mat_run {
    uint32_t first_tri, name_id;
} mat_run; /* name_id BK_NONE: default */

typedef struct loader {
    const char *path;      /* the OBJ file, as given */
    const char *buf, *end; /* its text; *end == 0 */
    char       *err;
    size_t      err_size;
    int         warnings;
    bk_scene   *s;
    size_t      pos_cap, tc_cap, nrm_cap, tri_cap, mat_cap;
    used_name  *names;
    size_t      name_count, name_cap;
    name_index  name_ix; /* over names */
    mat_run    *runs;
    size_t      run_count, run_cap;
    int         mtllibs;   /* mtllib lines seen */
    uint32_t   *obj_start; /* per o/g line: the triangles counted before it */
    size_t      obj_cap;
    uint32_t   *mat_mtl; /* per material: the index in s->mtls of the MTL that defines it */
    size_t      mat_mtl_cap;
} loader;


static int line_of(const char *buf, const char *at)
{
    int         line = 1;
    const char *p = buf;
    while (p < at) {
        const char *q = memchr(p, '\n', (size_t)(at - p));
        if (!q) break;
        line++;
        p = q + 1;
    }
    return line;
}

/* Messages quote the file's own bytes (tokens, names): control bytes are shown as \xNN so a hostile
 * file cannot drive the terminal. */
static void printable(const char *in, char *out, size_t out_size)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 5 < out_size; ++p) {
        if (*p < 0x20 || *p == 0x7F) o += (size_t)snprintf(out + o, out_size - o, "\\x%02X", *p);
        else out[o++] = (char)*p;
    }
    out[o] = '\0';
}

/* One error line "file:line: reason" into L->err, the line counted in buf up to at. */
static int fail_in(loader *L, const char *file, const char *buf, const char *at, const char *fmt, va_list ap)
{
    if (L->err && L->err_size) {
        char msg[1024];
        int  n = snprintf(msg, sizeof msg, "%s:%d: ", file, line_of(buf, at));
        if (n >= 0 && (size_t)n < sizeof msg) vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
        printable(msg, L->err, L->err_size);
    }
    return -1;
}

static int fail_at(loader *L, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(loader *L, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_in(L, L->path, L->buf, at, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_mtl(loader *L, const char *file, const char *buf, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail_mtl(loader *L, const char *file, const char *buf, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_in(L, file, buf, at, fmt, ap);
    va_end(ap);
    return -1;
}

/* One warning line on stderr, "file:line: warning: ...". At most MAX_WARNINGS per load, counted
 * before anything is formatted (a line count scans the file): line < 0 counts the lines in buf up
 * to at, only then. */
static void warn_in(loader *L, const char *file, int line, const char *buf, const char *at, const char *fmt, va_list ap)
{
    L->warnings++;
    if (L->warnings > MAX_WARNINGS) {
        if (L->warnings == MAX_WARNINGS + 1) fprintf(stderr, "%s: warning: further warnings not shown\n", L->path);
        return;
    }
    char msg[1024], out[4096];
    int  n = snprintf(msg, sizeof msg, "%s:%d: warning: ", file, line < 0 ? line_of(buf, at) : line);
    if (n >= 0 && (size_t)n < sizeof msg) vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    printable(msg, out, sizeof out);
    fprintf(stderr, "%s\n", out);
}

static void warn(loader *L, const char *file, const char *buf, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void warn(loader *L, const char *file, const char *buf, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    warn_in(L, file, -1, buf, at, fmt, ap);
    va_end(ap);
}

static void warn_line(loader *L, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void warn_line(loader *L, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    warn_in(L, file, line, NULL, NULL, fmt, ap);
    va_end(ap);
}

/* Copies the rest of a line (blanks trimmed at both ends) into dst; returns its full length. */
static size_t rest_of_line(const char *p, const char *end, char *dst, size_t dst_size)
{
    while (is_blank(*p)) p++;
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\0') e++;
    while (e > p && is_blank(e[-1])) e--;
    size_t n = (size_t)(e - p);
    size_t k = n < dst_size - 1 ? n : dst_size - 1;
    memcpy(dst, p, k);
    dst[k] = '\0';
    return n;
}

/* ---- MTL -------------------------------------------------------------------------------------- */

/* Kd r [g b] or Ke r [g b]. Returns -1 (an error) for a non-finite number: Ke inf made every texel
 * inf - inf = NaN, a black map. Values out of range are clamped with a warning: Kd to [0, 1] (a
 * surface cannot reflect more than it receives), Ke to [0, BK_KE_MAX]. */
static int mtl_color(loader *L, const char *mpath, const char *mbuf, const char *at, const char *p, const char *key,
                     float rgb[3])
{
    float v[3];
    int   n = 0;
    p = skip_blank(p);
    while (n < 3 && !is_eol(*p)) {
        const char *q = parse_float(p, &v[n]);
        if (!q) break;
        if (!isfinite(v[n]))
            return fail_mtl(L, mpath, mbuf, at, "%s: '%.*s' is not a finite number", key, (int)(q - p), p);
        n++;
        p = skip_blank(q);
    }
    /* 1 number means grey; "Kd spectral file" and "Kd xyz x y z" are valid MTL we do not support. */
    if (!(n == 3 || (n == 1 && is_eol(*p)))) {
        warn(L, mpath, mbuf, at,
             "%s: expected 1 or 3 numbers (spectral and xyz forms are not supported); "
             "kept %g %g %g",
             key, rgb[0], rgb[1], rgb[2]);
        return 0;
    }
    if (n == 1) v[1] = v[2] = v[0];
    float hi = key[1] == 'd' ? 1.0f : BK_KE_MAX, c[3];
    int   clamped = 0;
    for (int k = 0; k < 3; ++k) {
        c[k] = v[k] < 0.0f ? 0.0f : v[k] > hi ? hi : v[k];
        clamped |= c[k] != v[k];
    }
    if (clamped)
        warn(L, mpath, mbuf, at, "%s %g %g %g: outside [0, %g], clamped to %g %g %g", key, v[0], v[1], v[2], hi, c[0],
             c[1], c[2]);
    rgb[0] = c[0];
    rgb[1] = c[1];
    rgb[2] = c[2];
    return 0;
}

/* The options of the MTL spec's texture statements, and how many arguments each takes: numbers
 * (-o, -s, -t: 1 to 3; -bm, -boost, -texres: 1; -mm: 2) or words (-clamp, -blendu, -blendv, -cc:
 * on|off; -imfchan: r|g|b|m|l|z; -type: a word). 0: not an option. */
static int map_option(const char *p, size_t n, int *numeric)
{
    static const struct {
        const char *name;
        int         args, numeric;
    } opts[] = { { "-o", 3, 1 },      { "-s", 3, 1 },      { "-t", 3, 1 },  { "-bm", 1, 1 },
                 { "-boost", 1, 1 },  { "-texres", 1, 1 }, { "-mm", 2, 1 }, { "-clamp", 1, 0 },
                 { "-blendu", 1, 0 }, { "-blendv", 1, 0 }, { "-cc", 1, 0 }, { "-imfchan", 1, 0 },
                 { "-type", 1, 0 } };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (strlen(opts[i].name) == n && memcmp(p, opts[i].name, n) == 0) {
            *numeric = opts[i].numeric;
            return opts[i].args;
        }
    return 0;
}

static const char *word_end(const char *p)
{
    while (*p && !is_blank(*p) && *p != '\n') p++;
    return p;
}

/* map_Kd [options] file: skips the options of the MTL spec, keeps the rest of the line as the path. */
static const char *skip_map_options(const char *p)
{
    for (;;) {
        p = skip_blank(p);
        if (*p != '-') return p;
        const char *e = word_end(p);
        int         numeric = 0, args = map_option(p, (size_t)(e - p), &numeric);
        if (!args) return p; /* not an option we know: treat it as the start of the file name */
        p = e;
        for (int i = 0; i < args; i++) {
            const char *q = skip_blank(p);
            if (numeric) {
                float       f;
                const char *r = parse_float(q, &f);
                if (!r) break;
                p = r;
            } else {
                if (is_eol(*q)) break;
                p = word_end(q);
            }
        }
    }
}

const char *bk_mtl_map_file(const char *args) { return skip_map_options(args); }

/* -imfchan for a scalar map (map_d): r and l (luminance: the red channel of a grey image) read red,
 * m (matte) reads alpha; g, b and z are not supported (a warning; the default channel stands). */
static int map_channel(char c, uint8_t *ch)
{
    if (c == 'r' || c == 'l') *ch = BK_TEX_CHANNEL_RED;
    else if (c == 'm') *ch = BK_TEX_CHANNEL_ALPHA;
    else return -1;
    return 0;
}

/* map_Kd, map_Ke, map_d [options] file into ref: -o and -s (u [v [w]]: v defaults to u, w is
 * ignored: OBJ textures are 2D), -clamp on|off, -imfchan (map_channel); every other option of the
 * spec is skipped with its arguments. The path is the rest of the line (names with spaces exist).
 * An option without its arguments, or an empty path, is a warning and leaves ref without a file. */
static void parse_map(loader *L, const char *mpath, const char *mbuf, const char *at, const char *p, const char *end,
                      const char *key, uint32_t line, bk_tex_ref *ref)
{
    bk_tex_ref_init(ref);
    ref->line = line;
    for (;;) {
        p = skip_blank(p);
        if (*p != '-') break;
        const char *e = word_end(p);
        size_t      n = (size_t)(e - p);
        int         numeric = 0, args = map_option(p, n, &numeric);
        if (!args) break; /* the file name starts with '-' */
        const char *opt = p;
        p = e;
        if (numeric) {
            float v[3];
            int   got = 0;
            while (got < args) {
                const char *r = parse_float(skip_blank(p), &v[got]);
                if (!r || !isfinite(v[got])) break;
                p = r;
                got++;
            }
            if (!got) {
                warn(L, mpath, mbuf, at, "%s %.*s: expected a finite number; map ignored", key, (int)n, opt);
                return;
            }
            float *dst = n == 2 && opt[1] == 'o' ? ref->offset : n == 2 && opt[1] == 's' ? ref->scale : NULL;
            if (dst) {
                dst[0] = v[0];
                dst[1] = got > 1 ? v[1] : v[0];
            }
        } else {
            const char *q = skip_blank(p);
            if (is_eol(*q)) {
                warn(L, mpath, mbuf, at, "%s %.*s: expected a value; map ignored", key, (int)n, opt);
                return;
            }
            const char *qe = word_end(q);
            size_t      qn = (size_t)(qe - q);
            p = qe;
            if (n == 6 && memcmp(opt, "-clamp", 6) == 0) {
                if (qn == 2 && memcmp(q, "on", 2) == 0) ref->clamp = 1;
                else if (qn == 3 && memcmp(q, "off", 3) == 0) ref->clamp = 0;
                else warn(L, mpath, mbuf, at, "%s -clamp %.*s: expected on or off; off used", key, (int)qn, q);
            } else if (n == 8 && memcmp(opt, "-imfchan", 8) == 0) {
                if (qn != 1 || map_channel(q[0], &ref->channel))
                    warn(L, mpath, mbuf, at, "%s -imfchan %.*s: baker reads r, l (as r) and m; %s used", key, (int)qn,
                         q, "the alpha channel if the image has one, else red,");
            }
        }
    }
    size_t len = rest_of_line(p, end, ref->path, sizeof ref->path);
    if (len >= sizeof ref->path) {
        warn(L, mpath, mbuf, at, "%s path longer than %zu bytes, ignored", key, sizeof ref->path - 1);
        ref->path[0] = '\0';
    } else if (!len) warn(L, mpath, mbuf, at, "%s: no file name, ignored", key);
}

/* The newlines in [from, to). */
static uint32_t count_lines(const char *from, const char *to)
{
    uint32_t n = 0;
    for (const char *q; from < to && (q = memchr(from, '\n', (size_t)(to - from))) != NULL; from = q + 1) n++;
    return n;
}

/* d a (opacity) or Tr t (transparency, 1 - d), a number in [0, 1]: "d -halo a" reads a; other
 * forms are a warning. Out of range is clamped with a warning. Returns 1 when *alpha was set. */
static int parse_opacity(loader *L, const char *mpath, const char *mbuf, const char *at, const char *p, int tr,
                         float *alpha)
{
    const char *key = tr ? "Tr" : "d";
    p = skip_blank(p);
    if (!tr && strncmp(p, "-halo", 5) == 0 && is_blank(p[5])) p = skip_blank(p + 5);
    float       v;
    const char *q = parse_float(p, &v);
    if (!q || !isfinite(v) || !is_eol(*skip_blank(q))) {
        warn(L, mpath, mbuf, at, "%s: expected one finite number; ignored", key);
        return 0;
    }
    float c = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    if (c != v) warn(L, mpath, mbuf, at, "%s %g: outside [0, 1], clamped to %g", key, v, c);
    *alpha = tr ? 1.0f - c : c;
    return 1;
}

/* Parses one MTL file into s->materials. A missing file or a line we cannot use is a warning (the
 * default material stands in); an MTL that is not a regular text file within BK_MTL_MAX_BYTES, or
 * a colour that is not finite, is an error. An MTL whose first line starts with "# Blender" (both
 * of Blender's exporters write one) gets kd_by_map on its textured materials (docs/materials.md). */
/* Long: one loop over the MTL's statements, one branch per keyword */
static int load_mtl(loader *L, const char *mpath, const char *obj_at)
{
    text mt;
    char e[512];
    int  r = read_text(mpath, BK_MTL_MAX_BYTES, &mt, e, sizeof e);
    if (r == READ_MISSING) {
        warn(L, L->path, L->buf, obj_at, "mtllib: %s; default material used", e);
        return 0;
    }
    if (r != 0) return fail_at(L, obj_at, "mtllib: %s", e);
    bk_scene   *s = L->s;
    const char *mbuf, *p, *end = mt.buf + mt.len;
    if (check_text(mpath, &mt, &mbuf, e, sizeof e)) {
        text_free(&mt);
        return fail_at(L, obj_at, "mtllib: %s", e);
    }
    p = mbuf;
    int          blender = strncmp(mbuf, "# Blender", 9) == 0;
    uint32_t     first = s->material_count, mtl = s->mtl_count - 1, line_no = 1;
    bk_material *cur = NULL;
    uint8_t      has_d = 0;      /* cur has a d line: d wins over Tr, whichever comes first */
    const char  *counted = mbuf; /* line_no is the line of counted (lines counted as maps need them) */
    while (p < end) {
        const char *line = p;
        p = skip_blank(p);
        const char *k = p;
        while (*p && !is_blank(*p) && *p != '\n') p++;
        size_t kn = (size_t)(p - k);
        if (kn == 6 && memcmp(k, "newmtl", 6) == 0) {
            if (s->material_count >= MAX_ELEMS ||
                grow((void **)&s->materials, &L->mat_cap, (size_t)s->material_count + 1, sizeof(bk_material)) != 0 ||
                grow((void **)&L->mat_mtl, &L->mat_mtl_cap, (size_t)s->material_count + 1, sizeof(uint32_t)) != 0) {
                text_free(&mt);
                return bk_fail(L->err, L->err_size, "%s: out of memory reading materials", mpath);
            }
            L->mat_mtl[s->material_count] = mtl;
            cur = &s->materials[s->material_count++];
            bk_material_init(cur);
            has_d = 0;
            size_t n = rest_of_line(p, end, cur->name, sizeof cur->name);
            if (n >= sizeof cur->name)
                warn(L, mpath, mbuf, line, "material name longer than %zu bytes, truncated", sizeof cur->name - 1);
        } else if (kn == 2 && (memcmp(k, "Kd", 2) == 0 || memcmp(k, "Ke", 2) == 0)) {
            if (!cur) warn(L, mpath, mbuf, line, "%.2s before any newmtl, ignored", k);
            else if (mtl_color(L, mpath, mbuf, line, p, k[1] == 'd' ? "Kd" : "Ke", k[1] == 'd' ? cur->kd : cur->ke)) {
                text_free(&mt);
                return -1;
            }
        } else if ((kn == 1 && k[0] == 'd') || (kn == 2 && memcmp(k, "Tr", 2) == 0)) {
            int tr = kn == 2;
            if (!cur) warn(L, mpath, mbuf, line, "%.*s before any newmtl, ignored", (int)kn, k);
            else if (!(tr && has_d) && parse_opacity(L, mpath, mbuf, line, p, tr, &cur->alpha)) has_d |= !tr;
        } else if ((kn == 6 && (memcmp(k, "map_Kd", 6) == 0 || memcmp(k, "map_Ke", 6) == 0)) ||
                   (kn == 5 && memcmp(k, "map_d", 5) == 0)) {
            char key[8];
            snprintf(key, sizeof key, "%.*s", (int)kn, k);
            line_no += count_lines(counted, line);
            counted = line;
            if (!cur) warn(L, mpath, mbuf, line, "%s before any newmtl, ignored", key);
            else
                parse_map(L, mpath, mbuf, line, p, end, key, line_no,
                          kn == 5       ? &cur->map_d
                          : k[5] == 'd' ? &cur->map_kd
                                        : &cur->map_ke);
        }
        p = next_line(p, end);
    }
    for (uint32_t m = first; m < s->material_count; ++m)
        if (blender && s->materials[m].map_kd.path[0]) s->materials[m].kd_by_map = 1;
    text_free(&mt);
    return 0;
}

/* Records an MTL file the OBJ names (for --mesh-out and the output checks) and loads it, once. */
static int add_mtl(loader *L, const char *name, const char *full, const char *at)
{
    bk_scene *s = L->s;
    for (uint32_t i = 0; i < s->mtl_count; ++i)
        if (strcmp(s->mtls[i].path, full) == 0) return 0;
    if (s->mtl_count >= 4096) return fail_at(L, at, "mtllib: more than 4096 MTL files");
    bk_scene_mtl *m = realloc(s->mtls, sizeof *m * (s->mtl_count + 1));
    if (!m) return fail_at(L, at, "out of memory");
    s->mtls = m;
    m += s->mtl_count;
    m->name = strdup(name);
    m->path = strdup(full);
    if (!m->name || !m->path) {
        free(m->name);
        free(m->path);
        return fail_at(L, at, "out of memory");
    }
    s->mtl_count++;
    return load_mtl(L, full, at);
}

/* mtllib a.mtl [b.mtl ...]: names are relative to the OBJ's folder. The whole rest of the line is
 * tried first (names with spaces), then each blank-separated name. */
static int load_mtllib(loader *L, const char *p, const char *at)
{
    char rest[1024];
    if (rest_of_line(p, L->end, rest, sizeof rest) >= sizeof rest) {
        warn(L, L->path, L->buf, at, "mtllib line too long, ignored");
        return 0;
    }
    const char *slash = strrchr(L->path, '/');
    int         dir_len = slash ? (int)(slash - L->path + 1) : 0;
    char        full[4096];
    if (strchr(rest, ' ') || strchr(rest, '\t')) {
        snprintf(full, sizeof full, "%.*s%s", rest[0] == '/' ? 0 : dir_len, L->path, rest);
        if (access(full, F_OK) == 0) return add_mtl(L, rest, full, at);
    }
    char *save = rest;
    while (*save) {
        while (is_blank(*save)) save++;
        if (!*save) break;
        char *name = save;
        while (*save && !is_blank(*save)) save++;
        if (*save) *save++ = '\0';
        snprintf(full, sizeof full, "%.*s%s", name[0] == '/' ? 0 : dir_len, L->path, name);
        if (access(full, F_OK) != 0 && strchr(full, '\\')) { /* exporters on Windows */
            char alt[4096];
            snprintf(alt, sizeof alt, "%s", full);
            for (char *c = alt; *c; c++)
                if (*c == '\\') *c = '/';
            if (access(alt, F_OK) == 0) {
                snprintf(full, sizeof full, "%s", alt);
                for (char *c = name; *c; c++)
                    if (*c == '\\') *c = '/';
            }
        }
        if (add_mtl(L, name, full, at) != 0) return -1;
    }
    return 0;
}

static int use_material(loader *L, const char *p, const char *at)
{
    char   name[128];
    size_t n = rest_of_line(p, L->end, name, sizeof name);
    if (n >= sizeof name)
        warn(L, L->path, L->buf, at, "material name longer than %zu bytes, truncated", sizeof name - 1);
    uint32_t id = BK_NONE;
    if (name[0]) {
        id = index_find(&L->name_ix, (const char *)L->names, sizeof(used_name), name, hash_name(name));
        if (id == BK_NONE) {
            if (L->name_count >= MAX_ELEMS ||
                grow((void **)&L->names, &L->name_cap, L->name_count + 1, sizeof(used_name)) != 0)
                return fail_at(L, at, "out of memory");
            used_name *u = &L->names[L->name_count];
            memcpy(u->name, name, sizeof name);
            u->first_use = at;
            id = (uint32_t)L->name_count++;
            /* names may have moved: the index holds item numbers, not pointers */
            if (index_add(&L->name_ix, (const char *)L->names, sizeof(used_name), id) != 0)
                return fail_at(L, at, "out of memory");
        }
    }
    uint32_t t = L->s->tri_count;
    if (L->run_count && L->runs[L->run_count - 1].first_tri == t) {
        L->runs[L->run_count - 1].name_id = id;
        return 0;
    }
    if (grow((void **)&L->runs, &L->run_cap, L->run_count + 1, sizeof(mat_run)) != 0)
        return fail_at(L, at, "out of memory");
    L->runs[L->run_count].first_tri = t;
    L->runs[L->run_count].name_id = id;
    L->run_count++;
    return 0;
}

/* ---- OBJ statements --------------------------------------------------------------------------- */

/* v x y z [w | r g b]: 3 floats kept. Returns the next line, or NULL after an error. */
static const char *parse_v(loader *L, const char *p, const char *at)
{
    bk_scene *s = L->s;
    if (UNLIKELY(s->vertex_count >= L->pos_cap)) {
        if (s->vertex_count >= MAX_ELEMS) {
            fail_at(L, at, "too many vertices");
            return NULL;
        }
        if (grow((void **)&s->positions, &L->pos_cap, (size_t)s->vertex_count + 1, 3 * sizeof(float)) != 0) {
            fail_at(L, at, "out of memory (%u vertices)", s->vertex_count);
            return NULL;
        }
    }
    float *v = s->positions + 3 * (size_t)s->vertex_count;
    for (int i = 0; i < 3; i++) {
        p = skip_blank(p);
        if (UNLIKELY(is_eol(*p))) {
            fail_at(L, at, "v: expected 3 coordinates, found %d", i);
            return NULL;
        }
        const char *q = parse_float(p, &v[i]);
        if (UNLIKELY(!q)) {
            fail_at(L, p, "v: bad number '%.*s'", (int)strcspn(p, " \t\r\n#"), p);
            return NULL;
        }
        if (UNLIKELY(!isfinite(v[i]))) {
            fail_at(L, p, "v: coordinate '%.*s' is not a finite float", (int)strcspn(p, " \t\r\n#"), p);
            return NULL;
        }
        p = q;
    }
    s->vertex_count++;
    p = skip_blank(p);
    if (LIKELY(*p == '\n')) return p + 1;
    return next_line(p, L->end);
}

/* vt u [v [w]] (v defaults to 0) and vn x y z. */
static const char *parse_vt_vn(loader *L, const char *p, const char *at, int normal)
{
    bk_scene   *s = L->s;
    uint32_t   *count = normal ? &s->normal_count : &s->texcoord_count;
    float     **arr = normal ? &s->normals : &s->texcoords;
    size_t     *cap = normal ? &L->nrm_cap : &L->tc_cap;
    int         dim = normal ? 3 : 2, need = normal ? 3 : 1;
    const char *key = normal ? "vn" : "vt";
    if (UNLIKELY(*count >= *cap)) {
        if (*count >= MAX_ELEMS) {
            fail_at(L, at, "too many %s", key);
            return NULL;
        }
        if (grow((void **)arr, cap, (size_t)*count + 1, (size_t)dim * sizeof(float)) != 0) {
            fail_at(L, at, "out of memory");
            return NULL;
        }
    }
    float *v = *arr + (size_t)dim * *count;
    v[1] = 0.0f;
    for (int i = 0; i < dim; i++) {
        p = skip_blank(p);
        if (is_eol(*p)) {
            if (i >= need) break;
            fail_at(L, at, "%s: expected %d numbers, found %d", key, need, i);
            return NULL;
        }
        const char *q = parse_float(p, &v[i]);
        if (!q) {
            fail_at(L, p, "%s: bad number '%.*s'", key, (int)strcspn(p, " \t\r\n#"), p);
            return NULL;
        }
        if (!isfinite(v[i])) {
            fail_at(L, p, "%s: '%.*s' is not a finite float", key, (int)(q - p), p);
            return NULL;
        }
        p = q;
    }
    (*count)++;
    p = skip_blank(p);
    if (LIKELY(*p == '\n')) return p + 1;
    return next_line(p, L->end);
}

typedef struct corner {
    uint32_t v, vt, vn;
} corner;

/* OBJ index i (1-based, or negative: relative to the end) of count elements; tok..tok_end is the
 * index as written, quoted when it is out of range (parse_int saturates huge values). */
static int resolve(loader *L, const char *at, int64_t i, const char *tok, const char *tok_end, uint32_t count,
                   const char *what, uint32_t *out)
{
    if (LIKELY(i > 0 && i <= (int64_t)count)) {
        *out = (uint32_t)(i - 1);
        return 0;
    }
    if (i < 0 && -i <= (int64_t)count) {
        *out = (uint32_t)((int64_t)count + i);
        return 0;
    }
    if (i == 0) return fail_at(L, at, "%s index 0 (OBJ indices start at 1)", what);
    int len = (int)(tok_end - tok);
    return fail_at(L, at, "%s index %.*s%s out of range (%u defined so far)", what, len > 40 ? 40 : len, tok,
                   len > 40 ? "..." : "", count);
}

/* Makes tri_vt or tri_vn exist (BK_NONE for the triangles already read) once a face uses it. */
static int start_attr(loader *L, uint32_t **arr)
{
    *arr = malloc(L->tri_cap * 3 * sizeof(uint32_t));
    if (!*arr) return -1;
    memset(*arr, 0xFF, (size_t)L->s->tri_count * 3 * sizeof(uint32_t));
    return 0;
}

static int grow_tris(loader *L)
{
    bk_scene *s = L->s;
    size_t    need = (size_t)s->tri_count + 1, cap = L->tri_cap;
    if (s->tri_count >= MAX_ELEMS) return -1;
    if (grow((void **)&s->tri_v, &cap, need, 3 * sizeof(uint32_t)) != 0) return -1;
    if (s->tri_vt) {
        size_t c = L->tri_cap;
        if (grow((void **)&s->tri_vt, &c, need, 3 * sizeof(uint32_t)) != 0) return -1;
    }
    if (s->tri_vn) {
        size_t c = L->tri_cap;
        if (grow((void **)&s->tri_vn, &c, need, 3 * sizeof(uint32_t)) != 0) return -1;
    }
    L->tri_cap = cap; /* all arrays now hold at least cap (grow() computes the same size for each) */
    return 0;
}

/* f a b c ...: fan triangulation (a, b_i, b_i+1); forms v, v/vt, v//vn, v/vt/vn, negative indices. */
static const char *parse_f(loader *L, const char *p, const char *at)
{
    bk_scene *s = L->s;
    corner    first = { 0, 0, 0 }, prev = { 0, 0, 0 }, c = { 0, 0, 0 };
    int       n = 0, has_vt = 0, has_vn = 0;
    for (;;) {
        p = skip_blank(p);
        if (is_eol(*p)) break;
        const char *ref = p;
        int64_t     i;
        p = parse_int(p, &i);
        if (UNLIKELY(!p)) {
            fail_at(L, ref, "f: bad vertex reference '%.*s'", (int)strcspn(ref, " \t\r\n#"), ref);
            return NULL;
        }
        if (UNLIKELY(resolve(L, at, i, ref, p, s->vertex_count, "vertex", &c.v) != 0)) return NULL;
        c.vt = c.vn = BK_NONE;
        if (*p == '/') {
            p++;
            if (*p != '/' && !is_num_end(*p)) {
                const char *tok = p;
                p = parse_int(p, &i);
                if (!p) {
                    fail_at(L, ref, "f: bad texcoord index in '%.*s'", (int)strcspn(ref, " \t\r\n#"), ref);
                    return NULL;
                }
                if (resolve(L, at, i, tok, p, s->texcoord_count, "texcoord", &c.vt) != 0) return NULL;
                has_vt = 1;
            }
            if (*p == '/') {
                p++;
                if (!is_num_end(*p)) {
                    const char *tok = p;
                    p = parse_int(p, &i);
                    if (!p) {
                        fail_at(L, ref, "f: bad normal index in '%.*s'", (int)strcspn(ref, " \t\r\n#"), ref);
                        return NULL;
                    }
                    if (resolve(L, at, i, tok, p, s->normal_count, "normal", &c.vn) != 0) return NULL;
                    has_vn = 1;
                }
            }
        }
        if (UNLIKELY(!is_num_end(*p))) {
            fail_at(L, ref, "f: bad vertex reference '%.*s'", (int)strcspn(ref, " \t\r\n#"), ref);
            return NULL;
        }
        if (n == 0) first = c;
        else if (n >= 2) {
            if (UNLIKELY(s->tri_count >= L->tri_cap) && grow_tris(L) != 0) {
                fail_at(L, at, s->tri_count >= MAX_ELEMS ? "too many triangles" : "out of memory (%u triangles)",
                        s->tri_count);
                return NULL;
            }
            if (UNLIKELY(has_vt && !s->tri_vt) && start_attr(L, &s->tri_vt) != 0) {
                fail_at(L, at, "out of memory");
                return NULL;
            }
            if (UNLIKELY(has_vn && !s->tri_vn) && start_attr(L, &s->tri_vn) != 0) {
                fail_at(L, at, "out of memory");
                return NULL;
            }
            size_t t = 3 * (size_t)s->tri_count++;
            s->tri_v[t] = first.v;
            s->tri_v[t + 1] = prev.v;
            s->tri_v[t + 2] = c.v;
            if (s->tri_vt) {
                s->tri_vt[t] = first.vt;
                s->tri_vt[t + 1] = prev.vt;
                s->tri_vt[t + 2] = c.vt;
            }
            if (s->tri_vn) {
                s->tri_vn[t] = first.vn;
                s->tri_vn[t + 1] = prev.vn;
                s->tri_vn[t + 2] = c.vn;
            }
        }
        prev = c;
        n++;
    }
    if (UNLIKELY(n < 3)) {
        fail_at(L, at, "face with %d %s (at least 3 needed)", n, n == 1 ? "vertex" : "vertices");
        return NULL;
    }
    if (LIKELY(*p == '\n')) return p + 1;
    return next_line(p, L->end);
}

/* o NAME / g NAME: the name (the rest of the line, blanks trimmed) starts a run of triangles. */
static int use_object(loader *L, const char *p, const char *at)
{
    bk_scene *s = L->s;
    while (is_blank(*p)) p++;
    const char *e = p;
    while (!is_eol(*e)) e++;
    while (e > p && (is_blank(e[-1]) || e[-1] == '\r')) e--;
    if (s->object_count == L->obj_cap) {
        size_t c = L->obj_cap ? 2 * L->obj_cap : 16;
        char **n = realloc(s->object_names, sizeof(char *) * c);
        if (n) s->object_names = n;
        uint32_t *st = n ? realloc(L->obj_start, sizeof(uint32_t) * c) : NULL;
        if (!st) return fail_at(L, at, "out of memory (%u object names)", s->object_count);
        L->obj_start = st;
        L->obj_cap = c;
    }
    char *name = malloc((size_t)(e - p) + 1);
    if (!name) return fail_at(L, at, "out of memory");
    memcpy(name, p, (size_t)(e - p));
    name[e - p] = 0;
    L->obj_start[s->object_count] = s->tri_count;
    s->object_names[s->object_count++] = name;
    return 0;
}

/* tri_object from the o/g runs (triangles before the first: BK_NONE). */
static int finish_objects(loader *L)
{
    bk_scene *s = L->s;
    if (!s->object_count) return 0;
    s->tri_object = malloc(sizeof(uint32_t) * ((size_t)s->tri_count + 1));
    if (!s->tri_object) return bk_fail(L->err, L->err_size, "%s: out of memory", L->path);
    uint32_t cur = BK_NONE, k = 0;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        while (k < s->object_count && L->obj_start[k] <= t) cur = k++;
        s->tri_object[t] = cur;
    }
    return 0;
}

/* ---- driver ----------------------------------------------------------------------------------- */

static int parse_obj(loader *L)
{
    const char *p = L->buf, *end = L->end;
    while (p < end) {
        while (*p == ' ' || *p == '\t') p++;
        const char *at = p;
        char        c = *p;
        int         follow = c != '#'; /* follow '\' continuations of the skipped line */
        if (c == 'v') {
            if (is_num_end(p[1])) {
                p = parse_v(L, p + 1, at);
                if (!p) return -1;
                continue;
            }
            if ((p[1] == 't' || p[1] == 'n') && is_num_end(p[2])) {
                p = parse_vt_vn(L, p + 2, at, p[1] == 'n');
                if (!p) return -1;
                continue;
            }
        } else if (c == 'f') {
            if (is_num_end(p[1])) {
                p = parse_f(L, p + 1, at);
                if (!p) return -1;
                continue;
            }
        } else if (c == 'u') {
            if (strncmp(p, "usemtl", 6) == 0 && (is_blank(p[6]) || is_eol(p[6]))) {
                if (use_material(L, p + 6, at) != 0) return -1;
                follow = 0;
            }
        } else if (c == 'o' || c == 'g') {
            if (is_blank(p[1]) || is_eol(p[1])) {
                if (use_object(L, p + 1, at) != 0) return -1;
            }
        } else if (c == 'm') {
            if (strncmp(p, "mtllib", 6) == 0 && (is_blank(p[6]) || is_eol(p[6]))) {
                L->mtllibs++;
                if (load_mtllib(L, p + 6, at) != 0) return -1;
                follow = 0;
            }
        }
        /* Everything else (o g s l p, unknown keywords, blank lines, comments) is skipped, continuation
         * lines included; not after comments and material lines, which may end in a Windows path. */
        const char *q = next_line(p, end);
        if (follow)
            while (q < end && q - 2 >= p && (q[-2] == '\\' || (q[-2] == '\r' && q - 3 >= p && q[-3] == '\\')))
                q = next_line(q, end);
        p = q;
    }
    return 0;
}

/* Per-triangle materials from the usemtl runs; unknown names warn once and map to BK_NONE. */
static int finish_materials(loader *L)
{
    bk_scene *s = L->s;
    uint32_t *map = NULL;
    if (L->name_count) {
        name_index  mx = { NULL, 0 };
        const char *mbase = (const char *)s->materials;
        map = malloc(L->name_count * sizeof(uint32_t));
        int bad = !map;
        for (uint32_t m = 0; m < s->material_count && !bad; m++)
            bad = index_add(&mx, mbase, sizeof(bk_material), m) != 0;
        if (bad) {
            free(map);
            free(mx.slot);
            return bk_fail(L->err, L->err_size, "%s: out of memory", L->path);
        }
        for (size_t i = 0; i < L->name_count; i++) {
            map[i] = index_find(&mx, mbase, sizeof(bk_material), L->names[i].name, hash_name(L->names[i].name));
            if (map[i] == BK_NONE) {
                char why[64];
                if (L->mtllibs) snprintf(why, sizeof why, "not in the mtllib files (%u materials)", s->material_count);
                else snprintf(why, sizeof why, "the file names no mtllib");
                warn(L, L->path, L->buf, L->names[i].first_use, "usemtl %s: %s; default material used",
                     L->names[i].name, why);
            }
        }
        free(mx.slot);
    }
    s->tri_material = malloc((size_t)s->tri_count * sizeof(uint32_t));
    if (!s->tri_material) {
        free(map);
        return bk_fail(L->err, L->err_size, "%s: out of memory", L->path);
    }
    uint32_t t = 0, cur = BK_NONE;
    for (size_t r = 0; r <= L->run_count; r++) {
        uint32_t stop = r < L->run_count ? L->runs[r].first_tri : s->tri_count;
        for (; t < stop; t++) s->tri_material[t] = cur;
        if (r < L->run_count) cur = L->runs[r].name_id == BK_NONE ? BK_NONE : map[L->runs[r].name_id];
    }
    free(map);
    return 0;
}

static void *shrink(void *p, size_t bytes)
{
    if (!p || !bytes) return p;
    void *q = realloc(p, bytes);
    return q ? q : p;
}

/* bk_scene_load_textures' reports as the MTL's own lines: "room.mtl:12: warning: map_Kd 'wood.png':
 * no such file; Kd used", or the load's error when the textures take too much memory. */
static int texture_report(void *ctx, uint32_t material, int map, int what, const char *why)
{
    loader                  *L = ctx;
    const bk_material       *m = &L->s->materials[material];
    const bk_tex_ref        *r = map == 0 ? &m->map_kd : map == 1 ? &m->map_ke : &m->map_d;
    static const char *const key[3] = { "map_Kd", "map_Ke", "map_d" }, *factor[3] = { "Kd", "Ke", "d" };
    uint32_t                 mi = L->mat_mtl ? L->mat_mtl[material] : BK_NONE;
    const char              *file = mi < L->s->mtl_count ? L->s->mtls[mi].path : L->path;
    if (what == BK_TEXTURE_FATAL) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s:%u: %s '%s': %s", file, r->line, key[map], r->path, why);
        printable(msg, L->err, L->err_size);
        return -1;
    }
    if (what == BK_TEXTURE_NOTE) warn_line(L, file, (int)r->line, "%s '%s': %s", key[map], r->path, why);
    else warn_line(L, file, (int)r->line, "%s '%s': %s; %s used", key[map], r->path, why, factor[map]);
    return 0;
}

/* MTL has no alpha mode: a map_d that loaded cuts out (MASK at alpha_cutoff 0.5), a d below 1
 * alone blends, anything else is opaque (docs/materials.md). */
static void set_alpha_modes(bk_scene *s)
{
    for (uint32_t m = 0; m < s->material_count; ++m) {
        bk_material *mt = &s->materials[m];
        mt->alpha_mode = mt->map_d.image != BK_NONE ? BK_ALPHA_MASK
                         : mt->alpha < 1.0f         ? BK_ALPHA_BLEND
                                                    : BK_ALPHA_OPAQUE;
    }
}

int bk_scene_load_obj(const char *path, bk_scene *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (err && err_size) err[0] = '\0';
    text txt;
    if (read_text(path, BK_SCENE_MAX_BYTES, &txt, err, err_size) != 0) return -1;
    const char *start;
    if (check_text(path, &txt, &start, err, err_size)) {
        text_free(&txt);
        return -1;
    }

    loader L;
    memset(&L, 0, sizeof L);
    L.path = path;
    L.buf = start;
    L.end = txt.buf + txt.len;
    L.err = err;
    L.err_size = err_size;
    L.s = out;

    int rc = parse_obj(&L);
    if (rc == 0 && out->tri_count == 0)
        rc = bk_fail(err, err_size,
                     "%s: no faces (%u vertices, no f lines with 3 or more vertices): a scene needs triangles", path,
                     out->vertex_count);
    if (rc == 0) rc = finish_materials(&L);
    if (rc == 0) rc = finish_objects(&L);
    if (rc == 0) rc = bk_scene_load_textures(out, 0, texture_report, &L, err, err_size);
    if (rc == 0) set_alpha_modes(out);
    if (rc == 0) {
        size_t t3 = 3 * (size_t)out->tri_count * sizeof(uint32_t);
        if (!out->tri_vt && (out->tri_vt = malloc(t3)) != NULL) memset(out->tri_vt, 0xFF, t3);
        if (!out->tri_vn && (out->tri_vn = malloc(t3)) != NULL) memset(out->tri_vn, 0xFF, t3);
        if (!out->tri_vt || !out->tri_vn) rc = bk_fail(err, err_size, "%s: out of memory", path);
    }
    free(L.names);
    free(L.name_ix.slot);
    free(L.runs);
    free(L.obj_start);
    free(L.mat_mtl);
    text_free(&txt);
    if (rc != 0) {
        bk_scene_free(out);
        return -1;
    }
    out->positions = shrink(out->positions, (size_t)out->vertex_count * 3 * sizeof(float));
    out->texcoords = shrink(out->texcoords, (size_t)out->texcoord_count * 2 * sizeof(float));
    out->normals = shrink(out->normals, (size_t)out->normal_count * 3 * sizeof(float));
    out->tri_v = shrink(out->tri_v, 3 * (size_t)out->tri_count * sizeof(uint32_t));
    out->tri_vt = shrink(out->tri_vt, 3 * (size_t)out->tri_count * sizeof(uint32_t));
    out->tri_vn = shrink(out->tri_vn, 3 * (size_t)out->tri_count * sizeof(uint32_t));
    out->materials = shrink(out->materials, (size_t)out->material_count * sizeof(bk_material));
    return 0;
}
