/* util.c - small host helpers (see util.h). */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "util.h"
#include <math.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double bk_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int bk_fail(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
        bk_escape_controls(err, err_size);
    }
    return -1;
}

static int is_control(unsigned char c) { return c < 0x20 || c == 0x7f; }

void bk_escape_controls(char *buf, size_t cap)
{
    size_t n = strlen(buf), extra = 0;
    for (size_t i = 0; i < n; ++i) extra += is_control((unsigned char)buf[i]) ? 3 : 0;
    char *src = extra ? malloc(n + 1) : NULL;
    if (!src) return;
    memcpy(src, buf, n + 1);
    static const char hex[] = "0123456789abcdef";
    size_t            w = 0;
    for (size_t i = 0; i < n; ++i) {
        const unsigned char c = (unsigned char)src[i];
        if (!is_control(c)) {
            if (w + 1 >= cap) break;
            buf[w++] = (char)c;
        } else {
            if (w + 4 >= cap) break;
            buf[w++] = '\\';
            buf[w++] = 'x';
            buf[w++] = hex[c >> 4];
            buf[w++] = hex[c & 15];
        }
    }
    buf[w] = 0;
    free(src);
}

int bk_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int bk_fail_write(char *err, size_t err_size, const char *path)
{
    const int e = errno;
    return bk_fail(err, err_size, "%s: write failed: %s", path, e ? strerror(e) : "an earlier write failed");
}

int bk_path_has_ext(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    if (m > n) return 0;
    for (size_t i = 0; i < m; ++i) {
        char a = path[n - m + i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != ext[i]) return 0;
    }
    return 1;
}

void *bk_malloc_large(size_t bytes)
{
    void *p = malloc(bytes);
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (p && bytes >= 4 * huge) {
        uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + bytes) & ~(huge - 1);
        if (e > a) madvise((void *)a, e - a, MADV_HUGEPAGE); /* a hint: failure changes nothing */
    }
#endif
    return p;
}

int bk_cpu_threads(void)
{
    const char *env = getenv("BK_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void bk_host_memory(uint64_t *total, uint64_t *available)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    *available = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char               line[256];
    unsigned long long kb;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            *available = (uint64_t)kb * 1024u;
            break;
        }
    fclose(f);
}

uint64_t bk_current_rss(void)
{
    unsigned long long size, resident;
    FILE              *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    int ok = fscanf(f, "%llu %llu", &size, &resident) == 2;
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return ok && page > 0 ? (uint64_t)resident * (uint64_t)page : 0;
}

uint64_t bk_peak_rss(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024u : 0;
}

int bk_fd_regular(int fd, const char *path, uint64_t *size, char *err, size_t err_size)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return bk_fail(err, err_size, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return bk_fail(err, err_size, "%s: is %s, not a regular file", path,
                       S_ISDIR(st.st_mode)                          ? "a directory"
                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a file");
    }
    *size = (uint64_t)st.st_size;
    return 0;
}

const char *bk_join_words(char *buf, size_t size, const char *const *words, int n, const char *sep, const char *last)
{
    size_t at = 0;
    if (!size) return buf;
    buf[0] = 0;
    for (int i = 0; i < n; ++i) {
        int w = snprintf(buf + at, size - at, "%s%s", i == 0 ? "" : i == n - 1 ? last : sep, words[i]);
        if (w < 0 || (size_t)w >= size - at) { /* whole words only */
            buf[at] = 0;
            break;
        }
        at += (size_t)w;
    }
    return buf;
}

float bk_srgb8_to_linear(uint8_t v)
{
    double c = v / 255.0;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}
