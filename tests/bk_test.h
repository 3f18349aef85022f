/* bk_test.h - tiny test harness: plain executables that return 0 pass, 1 fail, 77 skip. */
#ifndef BK_TEST_H
#define BK_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

static int bk_test_failures = 0;

#define BK_EXPECT(cond)                                                        \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
            bk_test_failures++;                                                \
        }                                                                      \
    } while (0)
#define BK_EXPECTF(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: FAILED: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            bk_test_failures++;                                                \
        }                                                                      \
    } while (0)
#define BK_TEST_SKIP(...)             \
    do {                              \
        fprintf(stderr, "SKIP: ");    \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr);          \
        exit(77);                     \
    } while (0)
#define BK_TEST_DONE()                                                 \
    do {                                                               \
        if (bk_test_failures) {                                        \
            fprintf(stderr, "%d check(s) failed\n", bk_test_failures); \
            return 1;                                                  \
        }                                                              \
        printf("ok\n");                                                \
        return 0;                                                      \
    } while (0)

/* The scene corpus: $BK_SCENES_DIR when set (e.g. a copy carried to the GPU machine), else the
 * ../shared/scenes beside the checkout. */
static inline const char *bk_test_scenes_dir(void)
{
    const char *env = getenv("BK_SCENES_DIR");
    return env && env[0] ? env : BK_SCENES_DIR;
}

/* Path of a corpus scene; skips the test when the corpus is absent. */
static inline const char *bk_test_scene(const char *rel, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", bk_test_scenes_dir(), rel);
    if (access(buf, R_OK) != 0) BK_TEST_SKIP("corpus scene %s not found", buf);
    return buf;
}

/* Entries in folder dir, "." and ".." not counted (0 when it cannot be read). */
static inline int bk_test_count_files(const char *dir)
{
    DIR           *d = opendir(dir);
    int            n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    if (d) closedir(d);
    return n;
}

/* The whole file, NUL-terminated (so text can be searched), its length in *n; NULL when it
 * cannot be read. The caller frees it. */
static inline char *bk_test_slurp(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char  *buf = NULL;
    size_t cap = 0, len = 0, r;
    do {
        if (len + 65536 + 1 > cap) {
            cap = cap ? 2 * cap : 1 << 17;
            char *nb = (char *)realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        r = fread(buf + len, 1, cap - len - 1, f);
        len += r;
    } while (r > 0);
    fclose(f);
    buf[len] = 0;
    *n = len;
    return buf;
}

/* Whether two files hold the same bytes (0 when either cannot be read). */
static inline int bk_test_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char  *x = bk_test_slurp(a, &na), *y = bk_test_slurp(b, &nb);
    int    same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* n bytes of d as base64 (RFC 4648, padded) into out, which holds 4 * ((n + 2) / 3) + 1 chars:
 * for the data: URIs of the glTF tests. */
static inline void bk_test_b64_encode(const uint8_t *d, size_t n, char *out)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t            o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        out[o++] = al[v >> 18 & 63];
        out[o++] = al[v >> 12 & 63];
        out[o++] = i + 1 < n ? al[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? al[v & 63] : '=';
    }
    out[o] = 0;
}

#endif
