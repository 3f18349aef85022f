/* util.c - small host helpers (see util.h). */
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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
    }
    return -1;
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

int bk_cpu_threads(void)
{
    const char *env = getenv("BK_THREADS");
    if (env && atoi(env) > 0) return atoi(env);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int bk_outfile_open(bk_outfile *o, const char *path, char *err, size_t err_size)
{
    memset(o, 0, sizeof *o);
    if (strlen(path) >= sizeof o->path) return bk_fail(err, err_size, "%s: path too long", path);
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld", path, (long)getpid());
    o->f = fopen(o->tmp, "wb");
    if (!o->f) return bk_fail(err, err_size, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

int bk_outfile_commit(bk_outfile *o, char *err, size_t err_size)
{
    int bad = ferror(o->f);
    if (fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    if (bad) { remove(o->tmp); return bk_fail(err, err_size, "%s: write failed: %s", o->path, strerror(errno)); }
    if (rename(o->tmp, o->path) != 0) {
        int e = errno;
        remove(o->tmp);
        return bk_fail(err, err_size, "%s: cannot rename into place: %s", o->path, strerror(e));
    }
    return 0;
}

void bk_outfile_abort(bk_outfile *o)
{
    if (o->f) { fclose(o->f); o->f = NULL; }
    if (o->tmp[0]) remove(o->tmp);
}
