/* texture.c - the images a scene's materials name: files -> bk_scene.images (texture.h).
 *
 * Pipeline: io stage; obj.c calls bk_scene_load_textures once an OBJ and its MTL files are read,
 * then src/scene/material.c makes the texture pool from s->images. Every map is resolved like
 * bk_outputs_scene_inputs resolves it (bk_scene_find_map), so the files read are the files the
 * output policy protects; each distinct file is decoded once. Decoding: stb_image (Sean Barrett,
 * public domain; Debian's libstb-dev, compiled once in stb_image_impl.c). stb_image allocates what
 * a header claims before it reads the data, so sizes are checked first against what a file of that
 * size can hold: deflate expands at most 1032:1 (RFC 1951's longest match per 2 bits), a JPEG
 * needs at least one bit per 8 x 8 block (its first DC scan), a GIF's 12-bit LZW codes stand for
 * at most 4096 pixels, the run-length codings of TGA, PSD and HDR at most 128 pixels per 2 bytes.
 */
#include "texture.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stb/stb_image.h>

#define HDR_MAX 1e6f /* HDR texels are clamped to [0, HDR_MAX]: a texture is not a light source */

static int say(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *why, size_t why_size, const char *fmt, ...)
{
    if (why && why_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* stb_image's reason as one printable line ("XXXX PNG chunk not known" quotes the file's bytes). */
static const char *stb_reason(char *line, size_t size)
{
    const char *msg = stbi_failure_reason();
    size_t      n = 0;
    for (const char *c = msg ? msg : "no reason given"; *c && n + 1 < size; ++c) {
        unsigned char u = (unsigned char)*c;
        line[n++] = u < 0x20 || u >= 0x7f ? '?' : (char)u;
    }
    line[n] = 0;
    return line;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int bk_stb_png_check(const uint8_t *buf, size_t size, char *why, size_t why_size)
{
    uint64_t pos = 8; /* the signature; stb checks its bytes */
    int      idat = 0;
    while (pos + 8 <= size) { /* a chunk header: length, type */
        const uint8_t *head = buf + pos;
        uint64_t       len = be32(head);
        if (len > 0x7fffffffu || pos + 12 + len > size)
            return say(why, why_size, "PNG chunk at byte %llu claims %llu bytes, past the end of the %llu-byte file",
                       (unsigned long long)pos, (unsigned long long)len, (unsigned long long)size);
        if (!memcmp(head + 4, "IDAT", 4)) {
            if (!idat && len == 0)
                return say(why, why_size, "PNG's first IDAT chunk (byte %llu) is empty: not read",
                           (unsigned long long)pos);
            idat = 1;
        }
        if (!memcmp(head + 4, "IEND", 4)) break;
        pos += 12 + len;
    }
    return 0;
}

/* One header line as stb_image's hdr_gettoken reads it: the pointer past its '\n'; *empty when
 * stb's token is empty (the line starts with '\n' or NUL, or the file has ended). */
static const uint8_t *hdr_line(const uint8_t *p, const uint8_t *end, int *empty)
{
    *empty = p >= end || *p == '\n' || *p == 0;
    while (p < end && *p != '\n') ++p;
    return p < end ? p + 1 : end;
}

/* The runs are walked as stb will read them: after the header's empty line and the resolution
 * line, each new-style scanline (2, 2, width) has for each of its 4 planes runs (128 + n, byte)
 * and dumps (n, n bytes) that must be non-empty and inside the file. A scanline stb does not take
 * as run-length encoded (or a width outside 8..32767) ends the walk: stb then reads flat pixels,
 * which always ends. */
int bk_stb_hdr_check(const uint8_t *buf, size_t size, int w, int h, char *why, size_t why_size)
{
    if (w < 8 || w >= 32768) return 0;
    const uint8_t *p = buf, *end = buf + size;
    int            empty = 0;
    p = hdr_line(p, end, &empty);
    do p = hdr_line(p, end, &empty);
    while (!empty && p < end);
    p = hdr_line(p, end, &empty);
    if (p >= end) return 0; /* stb says what is wrong */
    for (int y = 0; y < h; ++y) {
        if (end - p < 4 || p[0] != 2 || p[1] != 2 || (p[2] & 0x80) || (p[2] << 8 | p[3]) != w) return 0;
        p += 4;
        for (int k = 0; k < 4; ++k)
            for (int x = 0; x < w;) {
                if (p >= end) return say(why, why_size, "HDR scanline %d ends past the end of the file", y);
                int n = *p++;
                if (n > 128) {
                    n -= 128;
                    if (p >= end) return say(why, why_size, "HDR scanline %d ends past the end of the file", y);
                    p++;
                } else {
                    if (n == 0) return say(why, why_size, "HDR scanline %d has a run of length 0", y);
                    if (end - p < n) return say(why, why_size, "HDR scanline %d ends past the end of the file", y);
                    p += n;
                }
                if (n > w - x) return 0; /* stb refuses it */
                x += n;
            }
    }
    return 0;
}

/* stb_image 2.27 (Debian's) builds a Huffman table from a DHT segment's 16 counts without checking
 * that they add up to at most 256, the table's size: a larger sum writes past it (found by
 * fuzz_texture; stb_image 2.28 refuses it). The markers are walked as stb reads them: segments
 * with their lengths, and after a scan header (SOS) the entropy-coded data up to the first 0xFF
 * followed by neither 0 (a stuffed byte) nor a restart marker; other bytes between segments are
 * skipped, as stb skips them. stb consumes exactly a segment's length or fails, and takes the
 * first marker after the data it decoded or fails on it, so every DHT it builds is one this walk
 * sees. */
/* A scan's Huffman tables must have been defined by then: stb_image 2.27 mallocs its decoder state
 * without clearing it and decodes with whatever a missing table holds, indexing past its symbols
 * (found by fuzz_texture; 2.28 checks the index). Which tables a scan decodes with: a baseline
 * scan its components' DC and AC tables; a progressive one DC (first DC scan), none (DC
 * refinement) or AC (Ss > 0). */
static int jpeg_scan_tables(const uint8_t *buf, size_t size, size_t pos, int progressive, const uint8_t defined[2][4],
                            char *why, size_t why_size)
{
#define JPEG_BYTE(i) ((size_t)(i) < size ? buf[(size_t)(i)] : 0u)
    unsigned ns = JPEG_BYTE(pos + 4), ss = JPEG_BYTE(pos + 5 + 2 * ns), ah = JPEG_BYTE(pos + 7 + 2 * ns) >> 4;
    int      dc = !progressive || (ss == 0 && ah == 0), ac = !progressive || ss > 0;
    for (unsigned c = 0; c < ns && c < 4; ++c) {
        unsigned sel = JPEG_BYTE(pos + 6 + 2 * c), td = sel >> 4, ta = sel & 15;
        if (td > 3 || ta > 3) return 0; /* stb refuses it */
        if ((dc && !defined[0][td]) || (ac && !defined[1][ta]))
            return say(why, why_size, "JPEG scan at byte %zu decodes with a %s Huffman table no DHT defined", pos,
                       dc && !defined[0][td] ? "DC" : "AC");
    }
    return 0;
#undef JPEG_BYTE
}

/* Where a JPEG's data starts past its SOI marker, 0 when it is not one: stb_image skips 0xFF fill
 * bytes before a marker, the first one too. */
static size_t jpeg_start(const uint8_t *buf, size_t size)
{
    size_t p = 0;
    if (!size || buf[0] != 0xFF) return 0;
    while (p + 1 < size && buf[p + 1] == 0xFF) p++;
    return p + 1 < size && buf[p + 1] == 0xD8 ? p + 2 : 0;
}

int bk_stb_jpeg_check(const uint8_t *buf, size_t size, char *why, size_t why_size)
{
    size_t  pos = jpeg_start(buf, size);
    uint8_t defined[2][4] = { { 0 } };
    int     progressive = 0;
    if (!pos) return 0;
    while (pos + 4 <= size) {
        if (buf[pos] != 0xFF) { /* padding between segments: stb skips it byte by byte too */
            pos++;
            continue;
        }
        while (pos + 1 < size && buf[pos + 1] == 0xFF) pos++;
        if (pos + 4 > size) return 0;
        uint8_t m = buf[pos + 1];
        if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            pos += 2;
            continue;
        }
        if (m == 0xD9) return 0; /* EOI */
        size_t len = (size_t)buf[pos + 2] << 8 | buf[pos + 3], end = pos + 2 + len;
        if (len < 2) return 0;
        if (m == 0xC4) /* as stb reads it: while bytes of the length are left, bytes past the file 0 */
            for (long left = (long)len - 2, t = (long)pos + 4; left > 0;) {
                unsigned n = 0;
                for (long i = t + 1; i <= t + 16; ++i) n += (size_t)i < size ? buf[i] : 0u;
                if (n > 256)
                    return say(why, why_size, "JPEG Huffman table at byte %ld holds %u codes: at most 256", t, n);
                unsigned q = (size_t)t < size ? buf[t] : 0u;
                if ((q >> 4) <= 1 && (q & 15) <= 3) defined[q >> 4][q & 15] = 1;
                left -= 17 + (long)n;
                t += 17 + (long)n;
            }
        if (m == 0xC2) progressive = 1;
        if (m == 0xDA && jpeg_scan_tables(buf, size, pos, progressive, defined, why, why_size)) return -1;
        if (end > size) return 0;
        pos = end;
        if (m == 0xDA) /* the scan's data: to the next marker */
            for (; pos + 1 < size; ++pos) {
                if (buf[pos] != 0xFF) continue;
                size_t q = pos + 1;
                while (q < size && buf[q] == 0xFF) q++;
                if (q < size && buf[q] != 0 && !(buf[q] >= 0xD0 && buf[q] <= 0xD7)) {
                    pos = q - 1;
                    break;
                }
                pos = q;
            }
    }
    return 0;
}

/* The most texels a file of its size can describe (see the file's head), by its signature. */
static uint64_t texels_possible(const uint8_t *b, size_t size)
{
    uint64_t slack = 1u << 16;
    if (size >= 26 && !memcmp(b, "\x89PNG", 4)) {
        static const uint8_t chans[7] = { 1, 0, 3, 1, 2, 0, 4 };
        unsigned             bits = b[24] * (b[25] < 7 ? chans[b[25]] : 4u);
        if (!bits) bits = 1;
        return (1032ull * size * 8) / bits + slack;
    }
    if (jpeg_start(b, size)) return 1024ull * size + slack;
    if (size >= 4 && !memcmp(b, "GIF8", 4)) return 4096ull * size + slack;
    return 256ull * size + slack;
}

/* The file's bytes (at most BK_TEX_MAX_FILE) into a malloc'd buffer. */
static int read_file(const char *path, uint8_t **out, size_t *size, char *why, size_t why_size)
{
    struct stat st; /* a FIFO's open would wait for a writer: only regular files are opened */
    if (stat(path, &st) != 0) return say(why, why_size, "%s", errno == ENOENT ? "no such file" : strerror(errno));
    if (!S_ISREG(st.st_mode)) return say(why, why_size, "not a regular file");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return say(why, why_size, "%s", errno == ENOENT ? "no such file" : strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return say(why, why_size, "not a regular file");
    }
    if ((uint64_t)st.st_size > BK_TEX_MAX_FILE) {
        close(fd);
        return say(why, why_size, "%llu bytes: image files are read up to %u MB", (unsigned long long)st.st_size,
                   BK_TEX_MAX_FILE >> 20);
    }
    size_t   n = (size_t)st.st_size, got = 0;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) {
        close(fd);
        return say(why, why_size, "out of memory for %zu bytes", n);
    }
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(b);
        return say(why, why_size, "read failed");
    }
    *out = b;
    *size = n;
    return 0;
}

/* Non-finite or negative HDR values would poison every sum they enter: clamped, with a note. */
static int clamp_hdr(float *px, size_t n, char *why, size_t why_size)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
        float v = px[i];
        if (!(v >= 0.0f && v <= HDR_MAX)) {
            px[i] = v > HDR_MAX ? HDR_MAX : 0.0f; /* NaN and negatives to 0 */
            bad++;
        }
    }
    if (!bad) return 0;
    snprintf(why, why_size, "%zu HDR values non-finite, negative or above %g, clamped to [0, %g]", bad, (double)HDR_MAX,
             (double)HDR_MAX);
    return 1;
}

/* buf's image into im (path: the name it keeps); buf is the caller's. */
static int decode_buf(const uint8_t *buf, size_t size, const char *path, uint64_t budget, bk_image *im, char *why,
                      size_t why_size)
{
    char line[160];
    if ((uint64_t)size > BK_TEX_MAX_FILE)
        return say(why, why_size, "%zu bytes: images are read up to %u MB", size, BK_TEX_MAX_FILE >> 20);
    int rc = -1, w = 0, h = 0, comp = 0, x = 0, y = 0, c = 0;
    if (size >= 8 && !memcmp(buf, "\x89PNG", 4) && bk_stb_png_check(buf, size, why, why_size)) goto done;
    if (bk_stb_jpeg_check(buf, size, why, why_size)) goto done;
    /* stb_image refuses a PNG over 2^30 bytes decoded, then tries other formats: "unknown image type" */
    if (size >= 24 && !memcmp(buf, "\x89PNG", 4) && !memcmp(buf + 12, "IHDR", 4) &&
        (be32(buf + 16) > BK_IMAGE_TEX_MAX_SIDE || be32(buf + 20) > BK_IMAGE_TEX_MAX_SIDE)) {
        say(why, why_size, "the image is %ux%u: sides must be 1..%u", be32(buf + 16), be32(buf + 20),
            BK_IMAGE_TEX_MAX_SIDE);
        goto done;
    }
    if (!size || !stbi_info_from_memory(buf, (int)size, &w, &h, &comp)) {
        say(why, why_size, "not an image (stb_image: %s)", size ? stb_reason(line, sizeof line) : "empty file");
        goto done;
    }
    if (w < 1 || h < 1 || (uint32_t)w > BK_IMAGE_TEX_MAX_SIDE || (uint32_t)h > BK_IMAGE_TEX_MAX_SIDE) {
        say(why, why_size, "the image is %dx%d: sides must be 1..%u", w, h, BK_IMAGE_TEX_MAX_SIDE);
        goto done;
    }
    uint64_t texels = (uint64_t)w * (uint64_t)h;
    if (texels > texels_possible(buf, size)) {
        say(why, why_size, "the header says %dx%d, more than a %zu-byte file can hold (truncated or corrupt)", w, h,
            size);
        goto done;
    }
    int      hdr = stbi_is_hdr_from_memory(buf, (int)size);
    uint64_t bytes = texels * (hdr ? 16u : 4u);
    if (bytes > budget) {
        say(why, why_size, "%dx%d (%.0f MB decoded) takes the scene's textures past %.0f MB (docs/materials.md)", w, h,
            (double)bytes / (1 << 20), (double)BK_TEX_MAX_BYTES / (1 << 20));
        rc = -2;
        goto done;
    }
    if (hdr) {
        if (bk_stb_hdr_check(buf, size, w, h, why, why_size)) goto done;
        im->rgbaf = stbi_loadf_from_memory(buf, (int)size, &x, &y, &c, 4);
    } else im->rgba8 = stbi_load_from_memory(buf, (int)size, &x, &y, &c, 4);
    if (!im->rgbaf && !im->rgba8) {
        say(why, why_size, "not an image (stb_image: %s)", stb_reason(line, sizeof line));
        goto done;
    }
    if (x != w || y != h) {
        say(why, why_size, "stb_image decoded %dx%d from a %dx%d header", x, y, w, h);
        goto done;
    }
    im->path = strdup(path);
    if (!im->path) {
        say(why, why_size, "out of memory");
        goto done;
    }
    im->w = (uint32_t)w;
    im->h = (uint32_t)h;
    im->channels = (uint8_t)(comp >= 1 && comp <= 4 ? comp : 4);
    rc = hdr ? clamp_hdr(im->rgbaf, 4 * (size_t)texels, why, why_size) : 0;
done:
    if (rc < 0) { /* stb's buffers are malloc'ed (no STBI_MALLOC override): free() frees them */
        free(im->rgba8);
        free(im->rgbaf);
        free(im->path);
        memset(im, 0, sizeof *im);
    }
    return rc;
}

int bk_texture_decode(const char *path, uint64_t budget, bk_image *im, char *why, size_t why_size)
{
    memset(im, 0, sizeof *im);
    uint8_t *buf = NULL;
    size_t   size = 0;
    if (read_file(path, &buf, &size, why, why_size)) return -1;
    int rc = decode_buf(buf, size, path, budget, im, why, why_size);
    free(buf);
    return rc;
}

int bk_texture_decode_mem(const uint8_t *buf, size_t size, const char *name, uint64_t budget, bk_image *im, char *why,
                          size_t why_size)
{
    memset(im, 0, sizeof *im);
    return decode_buf(buf, size, name, budget, im, why, why_size);
}

typedef struct lost_file {
    char *path;
    char  why[512];
} lost_file;

static uint64_t image_bytes(const bk_image *im) { return (uint64_t)im->w * im->h * (im->rgbaf ? 16u : 4u); }

/* Long: one loop over the maps: resolve, find the decoded or lost file, else decode */
int bk_scene_load_textures(bk_scene *s, uint32_t first_material, bk_texture_report_fn report, void *ctx, char *err,
                           size_t err_size)
{
    uint64_t used = 0;
    for (uint32_t i = 0; i < s->image_count; ++i) used += image_bytes(&s->images[i]);
    lost_file *lost = NULL;
    size_t     lost_count = 0;
    int        rc = 0;
    char       real[PATH_MAX], why[512];
    for (uint32_t m = first_material; m < s->material_count && rc == 0; ++m) {
        bk_tex_ref *maps[3] = { &s->materials[m].map_kd, &s->materials[m].map_ke, &s->materials[m].map_d };
        for (int k = 0; k < 3 && rc == 0; ++k) {
            bk_tex_ref *ref = maps[k];
            ref->image = BK_NONE;
            if (!ref->path[0]) continue;
            if (bk_scene_find_map(s, ref->path, real)) {
                rc = report(ctx, m, k, BK_TEXTURE_LOST, "no such file");
                continue;
            }
            uint32_t found = BK_NONE;
            for (uint32_t i = 0; i < s->image_count && found == BK_NONE; ++i)
                if (s->images[i].path && !strcmp(s->images[i].path, real)) found = i;
            if (found != BK_NONE) {
                ref->image = found;
                continue;
            }
            size_t l = 0;
            while (l < lost_count && strcmp(lost[l].path, real)) l++;
            if (l < lost_count) {
                rc = report(ctx, m, k, BK_TEXTURE_LOST, lost[l].why);
                continue;
            }
            bk_image *grown = realloc(s->images, sizeof(bk_image) * ((size_t)s->image_count + 1));
            if (!grown) {
                rc = bk_fail(err, err_size, "out of memory for the scene's textures");
                break;
            }
            s->images = grown;
            bk_image im;
            int      r = bk_texture_decode(real, BK_TEX_MAX_BYTES - used, &im, why, sizeof why);
            if (r == -2) {
                rc = report(ctx, m, k, BK_TEXTURE_FATAL, why);
                if (rc >= 0) rc = -1;
                break;
            }
            if (r < 0) {
                lost_file *g = realloc(lost, sizeof *lost * (lost_count + 1));
                char      *p = strdup(real);
                if (!g || !p) {
                    free(p);
                    if (g) lost = g;
                    rc = bk_fail(err, err_size, "out of memory");
                    break;
                }
                lost = g;
                lost[lost_count].path = p;
                snprintf(lost[lost_count].why, sizeof lost[lost_count].why, "%s", why);
                lost_count++;
                rc = report(ctx, m, k, BK_TEXTURE_LOST, why);
                continue;
            }
            if (r == 1) rc = report(ctx, m, k, BK_TEXTURE_NOTE, why);
            used += image_bytes(&im);
            ref->image = s->image_count;
            s->images[s->image_count++] = im;
        }
    }
    for (size_t l = 0; l < lost_count; ++l) free(lost[l].path);
    free(lost);
    return rc < 0 ? rc : 0;
}
