/* util.h - small host helpers: wall clock, checked allocation, error strings. */
#ifndef BK_UTIL_H
#define BK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The linear value of an 8-bit sRGB-encoded byte (IEC 61966-2-1), computed in double: the .vox
 * palette and the texture pool's decoding table. */
float bk_srgb8_to_linear(uint8_t v);

/* Monotonic wall clock in seconds. */
double bk_time_now(void);

/* An always-on invariant check for host code: prints the expression and aborts. */
#define BK_CHECK(x)                                                                 \
    do {                                                                            \
        if (!(x)) {                                                                 \
            fprintf(stderr, "%s:%d: internal error: %s\n", __FILE__, __LINE__, #x); \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* words[0 .. n) into buf, between sep and with last before the last one: (", ", " or ") gives
 * "a, b or c", ("|", "|") "a|b|c"; whole words only when buf is too small. Returns buf. */
const char *bk_join_words(char *buf, size_t size, const char *const *words, int n, const char *sep, const char *last);
/* snprintf into an error buffer that may be NULL; returns -1 so callers can `return bk_fail(...)`.
 * Control bytes in the message (an ESC in a file name, say) are written \xNN (bk_escape_controls),
 * so a message never drives the terminal it is printed on. */
int bk_fail(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Rewrites the string in buf (of cap bytes) with each byte below 0x20, and 0x7f, as \xNN; what
 * no longer fits is cut. */
void bk_escape_controls(char *buf, size_t cap);
/* 1 when paths a and b name one existing file (by device and inode: links and other spellings). */
int bk_same_file(const char *a, const char *b);
/* "PATH: write failed: REASON", REASON from errno (the call that failed), for every writer. */
int bk_fail_write(char *err, size_t err_size, const char *path);

/* 1 when path ends in ext (lower case, with its dot), ignoring the case of path. */
int bk_path_has_ext(const char *path, const char *ext);

/* Host memory in bytes: physical total, and available now (MemAvailable: free plus what the
 * kernel can reclaim); 0 when unknown. */
void bk_host_memory(uint64_t *total, uint64_t *available);
/* Resident memory of this process now, and its peak so far, in bytes (0 when unknown). */
uint64_t bk_current_rss(void);
uint64_t bk_peak_rss(void);

/* malloc for buffers of many megabytes that are written soon after (an atlas's texels and
 * per-texel arrays): asks the kernel for transparent huge pages where it gives them on request,
 * so the first touch faults once per 2 MB instead of once per 4 KB. Freed with free(). */
void *bk_malloc_large(size_t bytes);

/* Number of worker threads for host work: BK_THREADS, else the online CPU count. */
int bk_cpu_threads(void);

/* fstat(fd) of the file opened at path; refuses anything but a regular file (a directory, FIFO
 * or device) with one line naming path. On failure fd is closed. 0, or -1 with err. */
int bk_fd_regular(int fd, const char *path, uint64_t *size, char *err, size_t err_size);

#endif
