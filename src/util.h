/* util.h - small host helpers: wall clock, checked allocation, error strings. */
#ifndef BK_UTIL_H
#define BK_UTIL_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* Monotonic wall clock in seconds. */
double bk_time_now(void);

/* An always-on invariant check for host code: prints the expression and aborts. */
#define BK_CHECK(x) do { if (!(x)) { fprintf(stderr, "%s:%d: internal error: %s\n", __FILE__, __LINE__, #x); abort(); } } while (0)

/* snprintf into an error buffer that may be NULL; returns -1 so callers can `return bk_fail(...)`. */
int bk_fail(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* 1 when path ends in ext (lower case, with its dot), ignoring the case of path. */
int bk_path_has_ext(const char *path, const char *ext);

/* Number of worker threads for host work: BK_THREADS, else the online CPU count. */
int bk_cpu_threads(void);

/* Outputs are written to "<path>.tmp-<pid>" and renamed over path only when complete, so a failed
 * run never leaves a half-written file. */
typedef struct bk_outfile { FILE *f; char tmp[4200]; char path[4096]; } bk_outfile;
int  bk_outfile_open(bk_outfile *o, const char *path, char *err, size_t err_size);
int  bk_outfile_commit(bk_outfile *o, char *err, size_t err_size);
void bk_outfile_abort(bk_outfile *o);

#endif
