/* outputs.c - the output policy every command uses (see outputs.h). */
#define _XOPEN_SOURCE 700 /* realpath, sigaction */
#include "outputs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the process's temporary files, for the signal handlers --------------------------------
 * Every temporary file (an output being written, a backup link during the commit) has an entry
 * in one list that only grows; the handler walks it without a lock and removes each live entry's
 * file (unlink is async-signal-safe). Entries are reused through a free list under a mutex that
 * the handler never takes. */
typedef struct tmp_entry {
    struct tmp_entry *_Atomic next;      /* every entry ever made, newest first */
    struct tmp_entry         *free_next; /* the free list (under tmp_lock) */
    atomic_int                live;      /* name is a file of this process's, to remove */
    char                      name[4240];
} tmp_entry;

static tmp_entry *_Atomic tmp_all;
static tmp_entry         *tmp_free;
static pthread_mutex_t    tmp_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int         committing; /* renames under way: a signal waits for them (pending_sig) */
static atomic_int         pending_sig;
static const int          handled_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGXFSZ };

/* The file `name` (just created by this process) is removed should a signal end the run. NULL
 * when no entry could be made: the file is then only removed by the run itself. */
static void *tmp_register(const char *name)
{
    pthread_mutex_lock(&tmp_lock);
    tmp_entry *e = tmp_free;
    if (e) tmp_free = e->free_next;
    else if ((e = calloc(1, sizeof *e))) {
        atomic_init(&e->live, 0);
        atomic_store(&e->next, atomic_load(&tmp_all));
        atomic_store(&tmp_all, e);
    }
    pthread_mutex_unlock(&tmp_lock);
    if (!e) return NULL;
    snprintf(e->name, sizeof e->name, "%s", name);
    atomic_store(&e->live, 1);
    return e;
}

/* Before the file is renamed or removed by the run itself. */
static void tmp_unregister(void **reg)
{
    tmp_entry *e = *reg;
    if (!e) return;
    *reg = NULL;
    atomic_store(&e->live, 0);
    pthread_mutex_lock(&tmp_lock);
    e->free_next = tmp_free;
    tmp_free = e;
    pthread_mutex_unlock(&tmp_lock);
}

static void tmp_remove_all(void)
{
    for (tmp_entry *e = atomic_load(&tmp_all); e; e = atomic_load(&e->next))
        if (atomic_load(&e->live)) unlink(e->name);
}

/* Ends the process as sig would, once its temporary files are gone. */
static void die_of(int sig)
{
    tmp_remove_all();
    signal(sig, SIG_DFL);
    raise(sig); /* blocked while a handler for it runs: taken when it returns */
}

static void on_signal(int sig)
{
    int e = errno;
    if (atomic_load(&committing)) atomic_store(&pending_sig, sig);
    else die_of(sig);
    errno = e;
}

/* Once per process: the handlers, for the signals that still have their default action (one the
 * user ignores, as nohup does SIGHUP, stays ignored; one with a handler of its own keeps it). */
static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t k = 0; k < sizeof handled_sigs / sizeof handled_sigs[0]; ++k) sigaddset(&sa.sa_mask, handled_sigs[k]);
    sa.sa_flags = SA_RESTART;
    for (size_t k = 0; k < sizeof handled_sigs / sizeof handled_sigs[0]; ++k) {
        struct sigaction old;
        if (sigaction(handled_sigs[k], NULL, &old) != 0) continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        sigaction(handled_sigs[k], &sa, NULL);
    }
}

static void handlers_once(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_handlers);
}

/* A stream's write error, as strerror says it (errno of the failed call, when it still holds one). */
static const char *write_reason(int e) { return e ? strerror(e) : "an earlier write failed"; }

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* Fills f->target (and exists, dev, ino, mode) from f->path. */
static int resolve(bk_outfile *f, char *err, size_t err_size)
{
    const char *path = f->path, *what = f->what;
    size_t      len = strlen(path);
    if (!len) return bk_fail(err, err_size, "%s: empty file name", what);
    if (path[len - 1] == '/') return bk_fail(err, err_size, "%s %s: names a folder, not a file", what, path);
    char        real[PATH_MAX];
    struct stat st;
    if (realpath(path, real)) {
        if (stat(real, &st) != 0) return bk_fail(err, err_size, "%s %s: %s", what, path, strerror(errno));
        if (!S_ISREG(st.st_mode))
            return bk_fail(err, err_size, "%s %s: is %s: outputs are regular files, refusing to replace it", what, path,
                           kind_of(st.st_mode));
        if (strlen(real) >= sizeof f->target) return bk_fail(err, err_size, "%s %s: path too long", what, path);
        snprintf(f->target, sizeof f->target, "%s", real);
        f->exists = 1;
        f->dev = st.st_dev;
        f->ino = st.st_ino;
        f->mode = st.st_mode & 07777;
        return 0;
    }
    if (errno != ENOENT) return bk_fail(err, err_size, "%s %s: %s", what, path, strerror(errno));
    if (lstat(path, &st) == 0)
        return bk_fail(err, err_size, "%s %s: is a symbolic link to a missing file: refusing to write through it", what,
                       path);
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    char        dir[PATH_MAX], rdir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else if ((size_t)(slash - path) >= sizeof dir) return bk_fail(err, err_size, "%s %s: path too long", what, path);
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (!strcmp(base, ".") || !strcmp(base, ".."))
        return bk_fail(err, err_size, "%s %s: names a folder, not a file", what, path);
    if (!realpath(dir, rdir) || stat(rdir, &st) != 0)
        return bk_fail(err, err_size, "%s %s: cannot write into folder %s: %s", what, path, dir,
                       errno == ENOENT ? "it does not exist" : strerror(errno));
    if (!S_ISDIR(st.st_mode)) return bk_fail(err, err_size, "%s %s: %s is not a folder", what, path, dir);
    int n = snprintf(f->target, sizeof f->target, "%s/%s", strcmp(rdir, "/") ? rdir : "", base);
    if (n < 0 || (size_t)n >= sizeof f->target) return bk_fail(err, err_size, "%s %s: path too long", what, path);
    f->exists = 0;
    f->mode = 0666; /* less the umask */
    return 0;
}

/* The temporary file of f is to go (remove: it is removed now) or was renamed: forget it. It is
 * removed before it leaves the signal handlers' list, so no signal finds it there unlisted. */
static void tmp_drop(bk_outfile *f, int remove)
{
    if (remove && f->tmp[0]) unlink(f->tmp);
    tmp_unregister(&f->reg);
    f->tmp[0] = 0;
}

/* Creates f->tmp beside f->target with O_EXCL; keep = 0 only probes (creates and removes it). */
static int make_tmp(bk_outfile *f, int keep, char *err, size_t err_size)
{
    static unsigned counter;
    const char     *slash = strrchr(f->target, '/');
    int             dir_len = (int)(slash - f->target) + 1;
    const char     *base = slash + 1;
    for (int tries = 0; tries < 100; ++tries) {
        /* names stay under NAME_MAX: long names are shortened in the temporary one */
        snprintf(f->tmp, sizeof f->tmp, "%.*s.%.200s.tmp-%ld-%u", dir_len, f->target, base, (long)getpid(), counter++);
        /* listed before it exists, so that no signal finds it made and unlisted (a file of this
         * name that is not ours can only be a stale one of an earlier process with our PID) */
        f->reg = tmp_register(f->tmp);
        int fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) {
            int e = errno;
            tmp_unregister(&f->reg);
            if (e == EEXIST) continue;
            f->tmp[0] = 0;
            return bk_fail(err, err_size,
                           "%s %s: cannot create a file in %.*s (outputs are written beside their target, "
                           "then renamed): %s",
                           f->what, f->path, dir_len > 1 ? dir_len - 1 : 1, f->target, strerror(e));
        }
        if (f->exists) (void)fchmod(fd, f->mode);
        if (!keep) {
            close(fd);
            tmp_drop(f, 1);
            return 0;
        }
        f->f = fdopen(fd, "wb");
        if (!f->f) {
            int e = errno;
            close(fd);
            tmp_drop(f, 1);
            return bk_fail(err, err_size, "%s %s: %s", f->what, f->path, strerror(e));
        }
        return 0;
    }
    return bk_fail(err, err_size, "%s %s: cannot find a free temporary file name", f->what, f->path);
}

void bk_outputs_init(bk_outputs *o)
{
    memset(o, 0, sizeof *o);
    handlers_once();
}

static int out_is_in(const bk_outfile *f, const char *real, dev_t dev, ino_t ino)
{
    return !f->to_stdout && (!strcmp(f->target, real) || (f->exists && f->dev == dev && f->ino == ino));
}

static int clash_in(const bk_outfile *f, const char *in_what, const char *in_path, char *err, size_t err_size)
{
    bk_fail(err, err_size, "%s %s is %s (%s): refusing to overwrite an input; choose another name", f->what, f->path,
            in_what, in_path);
    return BK_OUT_CLASH;
}

int bk_outputs_input(bk_outputs *o, const char *what, const char *path, char *err, size_t err_size)
{
    char        real[PATH_MAX];
    struct stat st;
    if (!realpath(path, real) || stat(real, &st) != 0) return 0; /* the reader will say what is wrong */
    for (int i = 0; i < o->n_in; ++i)
        if (o->in[i].dev == st.st_dev && o->in[i].ino == st.st_ino) return 0;
    for (int i = 0; i < o->n_out; ++i)
        if (out_is_in(&o->out[i], real, st.st_dev, st.st_ino)) return clash_in(&o->out[i], what, path, err, err_size);
    if (o->n_in == o->cap_in) {
        int        cap = o->cap_in ? 2 * o->cap_in : 16;
        bk_infile *p = cap > 0 ? realloc(o->in, sizeof(bk_infile) * (size_t)cap) : NULL;
        if (!p) return bk_fail(err, err_size, "%s %s: out of memory for the list of inputs", what, path);
        o->in = p;
        o->cap_in = cap;
    }
    bk_infile *in = &o->in[o->n_in];
    if (!(in->real = strdup(real)))
        return bk_fail(err, err_size, "%s %s: out of memory for the list of inputs", what, path);
    in->what = what;
    in->dev = st.st_dev;
    in->ino = st.st_ino;
    o->n_in++;
    return 0;
}

int bk_outputs_add(bk_outputs *o, const char *what, const char *path, unsigned flags, char *err, size_t err_size)
{
    if (o->n_out == BK_OUTPUTS_MAX) return bk_fail(err, err_size, "%s: too many outputs", what);
    if (o->n_out == o->cap_out) {
        int         cap = o->cap_out ? 2 * o->cap_out : 8;
        bk_outfile *p = realloc(o->out, sizeof(bk_outfile) * (size_t)cap);
        if (!p) return bk_fail(err, err_size, "%s: out of memory", what);
        o->out = p;
        o->cap_out = cap;
    }
    bk_outfile *f = &o->out[o->n_out];
    memset(f, 0, sizeof *f);
    f->what = what;
    f->path = path;
    if (!strcmp(path, "-")) {
        if (!(flags & BK_OUT_ALLOW_STDOUT))
            return bk_fail(err, err_size, "%s -: this output cannot go to standard output; give a file name", what);
        f->to_stdout = 1;
        for (int i = 0; i < o->n_out; ++i)
            if (o->out[i].to_stdout) {
                bk_fail(err, err_size, "%s - and %s - both write to standard output", what, o->out[i].what);
                return BK_OUT_CLASH;
            }
        return o->n_out++;
    }
    if (resolve(f, err, err_size)) return -1;
    for (int i = 0; i < o->n_in; ++i)
        if (out_is_in(f, o->in[i].real, o->in[i].dev, o->in[i].ino))
            return clash_in(f, o->in[i].what, o->in[i].real, err, err_size);
    for (int i = 0; i < o->n_out; ++i) {
        const bk_outfile *g = &o->out[i];
        if (!g->to_stdout &&
            (!strcmp(g->target, f->target) || (f->exists && g->exists && f->dev == g->dev && f->ino == g->ino))) {
            bk_fail(err, err_size, "%s %s and %s %s name the same file", g->what, g->path, what, path);
            return BK_OUT_CLASH;
        }
    }
    if (make_tmp(f, 0, err, err_size)) return -1;
    return o->n_out++;
}

FILE *bk_outputs_open(bk_outputs *o, int i, char *err, size_t err_size)
{
    bk_outfile *f = &o->out[i];
    if (f->to_stdout) return stdout;
    if (f->f) return f->f;
    if (f->done) {
        bk_fail(err, err_size, "%s %s: written twice", f->what, f->path);
        return NULL;
    }
    return make_tmp(f, 1, err, err_size) ? NULL : f->f;
}

int bk_outputs_close(bk_outputs *o, int i, char *err, size_t err_size)
{
    bk_outfile *f = &o->out[i];
    if (f->to_stdout) {
        f->done = 1;
        errno = 0;
        if (fflush(stdout) != 0 || ferror(stdout))
            return bk_fail(err, err_size, "%s -: write to standard output failed: %s", f->what, write_reason(errno));
        return 0;
    }
    if (!f->f) return 0;
    int bad = ferror(f->f) != 0;
    errno = 0;
    if (fflush(f->f) != 0) bad = 1;
    int e = errno ? errno : EIO;
    if (fclose(f->f) != 0) {
        if (!bad) e = errno;
        bad = 1;
    }
    f->f = NULL;
    if (bad) {
        tmp_drop(f, 1);
        return bk_fail(err, err_size, "%s %s: write failed: %s", f->what, f->path, strerror(e));
    }
    f->done = 1;
    return 0;
}

int bk_outputs_commit(bk_outputs *o, char *err, size_t err_size)
{
    for (int i = 0; i < o->n_out; ++i)
        if ((o->out[i].f || (o->out[i].to_stdout && !o->out[i].done)) && bk_outputs_close(o, i, err, err_size)) {
            bk_outputs_free(o);
            return -1;
        }
    /* what the run printed (its report, its summary) is part of it: a full disk or a closed
     * pipe behind standard output fails the run before any file is replaced */
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        bk_outputs_free(o);
        return bk_fail(err, err_size, "write to standard output failed: %s: no file was written", write_reason(e));
    }
    /* Backups first: a hard link keeps each existing target's data should a later rename fail. */
    typedef char bak_name[4232]; /* a tmp name + ".bak" */
    bak_name    *bak = malloc(sizeof(bak_name) * (size_t)(o->n_out + 1));
    int         *had = malloc(sizeof(int) * (size_t)(o->n_out + 1));
    void       **bak_reg = calloc((size_t)(o->n_out + 1), sizeof(void *));
    if (!bak || !had || !bak_reg) {
        free(bak);
        free(had);
        free(bak_reg);
        bk_outputs_free(o);
        return bk_fail(err, err_size, "out of memory");
    }
    /* from here a signal waits until the renames are undone, or all made (on_signal) */
    atomic_fetch_add(&committing, 1);
    for (int i = 0; i < o->n_out; ++i) {
        bk_outfile *f = &o->out[i];
        bak[i][0] = 0;
        had[i] = 0;
        if (f->to_stdout || !f->done) continue;
        struct stat st;
        had[i] = lstat(f->target, &st) == 0;
        if (!had[i]) continue;
        snprintf(bak[i], sizeof bak[i], "%s.bak", f->tmp);
        if (link(f->target, bak[i]) != 0) bak[i][0] = 0; /* no hard links here: rename without a net */
        else bak_reg[i] = tmp_register(bak[i]);
    }
    int rc = 0;
    for (int i = 0; i < o->n_out && !rc; ++i) {
        bk_outfile *f = &o->out[i];
        if (f->to_stdout || !f->done) continue;
        /* a signal before the last rename undoes the others: a run it ends has written nothing */
        const int sig = atomic_load(&pending_sig);
        if (sig || rename(f->tmp, f->target) != 0) {
            rc = sig ? bk_fail(err, err_size, "%s %s: not renamed into place: the run was interrupted by signal %d",
                               f->what, f->path, sig)
                     : bk_fail(err, err_size, "%s %s: cannot rename into place: %s", f->what, f->path, strerror(errno));
            for (int j = 0; j < i; ++j) { /* undo the renames already made */
                bk_outfile *g = &o->out[j];
                if (g->to_stdout || !g->done) continue;
                if (bak[j][0] && rename(bak[j], g->target) == 0) {
                    tmp_unregister(&bak_reg[j]);
                    bak[j][0] = 0;
                } else if (!had[j]) unlink(g->target);
            }
            break;
        }
        tmp_drop(f, 0);
    }
    for (int i = 0; i < o->n_out; ++i) {
        if (bak[i][0]) unlink(bak[i]);
        tmp_unregister(&bak_reg[i]);
    }
    free(bak);
    free(had);
    free(bak_reg);
    bk_outputs_free(o);
    /* a signal that came during the renames ends the run now, as it would have then */
    if (atomic_fetch_sub(&committing, 1) == 1) {
        const int sig = atomic_exchange(&pending_sig, 0);
        if (sig) die_of(sig);
    }
    return rc;
}

void bk_outputs_free(bk_outputs *o)
{
    for (int i = 0; i < o->n_out; ++i) {
        bk_outfile *f = &o->out[i];
        if (f->f) {
            fclose(f->f);
            f->f = NULL;
        }
        tmp_drop(f, 1);
    }
    free(o->out);
    o->out = NULL;
    o->n_out = o->cap_out = 0;
    for (int i = 0; i < o->n_in; ++i) free(o->in[i].real);
    free(o->in);
    o->in = NULL;
    o->n_in = o->cap_in = 0;
}

int bk_outfile_open(bk_outfile *f, const char *path, char *err, size_t err_size)
{
    memset(f, 0, sizeof *f);
    f->what = "output";
    f->path = path;
    handlers_once();
    if (resolve(f, err, err_size) || make_tmp(f, 1, err, err_size)) return -1;
    return 0;
}

int bk_outfile_commit(bk_outfile *f, char *err, size_t err_size)
{
    bk_outputs o;
    bk_outputs_init(&o);
    o.out = malloc(sizeof(bk_outfile));
    if (!o.out) {
        bk_outfile_abort(f);
        return bk_fail(err, err_size, "%s: out of memory", f->path);
    }
    o.out[0] = *f;
    o.n_out = o.cap_out = 1;
    memset(f, 0, sizeof *f);
    return bk_outputs_commit(&o, err, err_size);
}

void bk_outfile_abort(bk_outfile *f)
{
    if (f->f) {
        fclose(f->f);
        f->f = NULL;
    }
    tmp_drop(f, 1);
}
