/* fuzz_common.h - what the libFuzzer targets share: a private temporary folder per process (the
 * readers under test take paths, not buffers), writing an input there, and a check that aborts
 * with a message, so libFuzzer saves the input that broke an invariant.
 *
 * Usage: call bk_fuzz_path("in.obj") for a path in the folder, bk_fuzz_write(path, data, n) to
 * (re)write a file there. The folder is made on first use and removed at exit.
 */
#ifndef BK_FUZZ_COMMON_H
#define BK_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#define BK_FUZZ_CHECK(x, ...)                               \
    do {                                                    \
        if (!(x)) {                                         \
            fprintf(stderr, "fuzz check failed: %s: ", #x); \
            fprintf(stderr, __VA_ARGS__);                   \
            fputc('\n', stderr);                            \
            abort();                                        \
        }                                                   \
    } while (0)

static char bk_fuzz_dir[512];

static inline void bk_fuzz_cleanup(void)
{
    if (!bk_fuzz_dir[0]) return;
    DIR *d = opendir(bk_fuzz_dir);
    if (d) {
        struct dirent *e;
        char           p[1024];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", bk_fuzz_dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(bk_fuzz_dir);
}

/* Path of `name` inside this process's folder (a static buffer per call site is the caller's). */
static inline const char *bk_fuzz_path(const char *name, char *buf, size_t n)
{
    if (!bk_fuzz_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(bk_fuzz_dir, sizeof bk_fuzz_dir, "%s/bk-fuzz-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
        if (!mkdtemp(bk_fuzz_dir)) {
            perror("mkdtemp");
            abort();
        }
        atexit(bk_fuzz_cleanup);
    }
    snprintf(buf, n, "%s/%s", bk_fuzz_dir, name);
    return buf;
}

static inline void bk_fuzz_write(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        abort();
    }
}

/* First occurrence of the separator sep in data[0, n), or NULL. */
static inline const uint8_t *bk_fuzz_find(const uint8_t *data, size_t n, const char *sep)
{
    size_t m = strlen(sep);
    for (size_t i = 0; i + m <= n; ++i)
        if (data[i] == (uint8_t)sep[0] && !memcmp(data + i, sep, m)) return data + i;
    return NULL;
}

#endif
