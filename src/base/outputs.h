/* outputs.h - where a run may write, decided in one place for every command.
 *
 * A user's files are sacred: no run may overwrite or delete an input, or an earlier output, unless
 * it succeeds and that file is one of its named outputs. So, before any work:
 *   - every input (scene, its MTL files, a RAYS file) is registered with its resolved path and
 *     file identity;
 *   - every output is resolved (realpath of its folder + its name; an existing symbolic link is
 *     followed, so the link stays and its target is replaced), refused when it is an existing
 *     non-regular file (a device, a FIFO, a directory), refused when it is an input or another
 *     output (by resolved path, and by device + inode when it exists), and probed: a temporary
 *     file is created beside the target and removed again, so an unwritable folder fails now and
 *     not after a long bake.
 * Then each output is written to its own temporary file beside its target ("." + name +
 * ".tmp-PID-N", created with O_EXCL so it never replaces anything), and bk_outputs_commit renames
 * them all into place only once every one is complete and standard output (a report, --stats -)
 * has been written without an error. Should a rename fail half-way, the targets already replaced
 * are put back from hard-link backups taken just before. A run that fails at any point leaves
 * every pre-existing file as it was; one ended by SIGINT, SIGTERM, SIGHUP, SIGPIPE or SIGXFSZ
 * removes its temporary files first and then ends as that signal would (one that arrives during
 * the renames has them undone first, unless it came after the last), unless the signal was ignored or had a handler
 * of its own when the first bk_outputs_init ran.
 *
 * Usage:
 *     bk_outputs o; bk_outputs_init(&o);
 *     bk_outputs_input(&o, "the scene", scene, err, n);
 *     int png = bk_outputs_add(&o, "-o", out, 0, err, n);              // < 0: refused, err says why
 *     ... work ...
 *     FILE *f = bk_outputs_open(&o, png, err, n); ... write ...
 *     if (bk_outputs_commit(&o, err, n)) ...;                           // all or nothing
 *     bk_outputs_free(&o);                                              // removes what was not committed
 */
#ifndef BK_OUTPUTS_H
#define BK_OUTPUTS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#define BK_OUTPUTS_MAX 65536 /* outputs of one run (a lightmap of many pages is one per page) */

/* bk_outputs_add and bk_outputs_input return BK_OUT_CLASH when a path names a file that is also
 * an input or another output (a usage error: exit 2), -1 for other problems (exit 1). */
#define BK_OUT_CLASH (-2)

/* bk_outputs_add flag: "-" means standard output (no temporary file, nothing to rename). */
#define BK_OUT_ALLOW_STDOUT 1u

typedef struct bk_outfile {
    const char *what;         /* the option that named it ("-o", "--stats"), for messages */
    const char *path;         /* as the user gave it */
    char        target[4096]; /* the file the rename replaces */
    char        tmp[4224];    /* the temporary file while it is written */
    int         to_stdout;    /* "-" */
    int         exists;       /* target existed when the run began */
    dev_t       dev;          /* ... and its identity */
    ino_t       ino;
    mode_t      mode; /* permissions a new file gets (an existing target keeps its own) */
    FILE       *f;    /* open while written */
    int         done; /* written completely, waiting for the commit */
    void       *reg;  /* tmp's entry in the signal handlers' list of temporary files */
} bk_outfile;

/* A file the run reads: no output may be it. */
typedef struct bk_infile {
    const char *what; /* what it is ("a scene", "an MTL file of the scene"), for messages */
    char       *real; /* its resolved path */
    dev_t       dev;
    ino_t       ino;
} bk_infile;

typedef struct bk_outputs {
    bk_outfile *out; /* n_out of them, grown as outputs are added */
    int         n_out, cap_out;
    bk_infile  *in; /* n_in of them, every input of the run, however many */
    int         n_in, cap_in;
} bk_outputs;

void bk_outputs_init(bk_outputs *o);
/* Registers an input; paths that do not exist are ignored (the reader reports them). Checks it
 * against the outputs registered so far (every output added later is checked against it). */
int bk_outputs_input(bk_outputs *o, const char *what, const char *path, char *err, size_t err_size);
/* Registers an output (see the file comment); returns its index, or BK_OUT_CLASH / -1. */
int bk_outputs_add(bk_outputs *o, const char *what, const char *path, unsigned flags, char *err, size_t err_size);
/* The stream to write output i to (its temporary file, or stdout). */
FILE *bk_outputs_open(bk_outputs *o, int i, char *err, size_t err_size);
/* Closes output i's stream, checking every write; 0 or -1 (its temporary file is then removed). */
int bk_outputs_close(bk_outputs *o, int i, char *err, size_t err_size);
/* Closes what is still open and flushes standard output, checking both, then renames every
 * written output into place, all or nothing. */
int bk_outputs_commit(bk_outputs *o, char *err, size_t err_size);
/* Removes every temporary file not committed and frees the lists (may be called again). */
void bk_outputs_free(bk_outputs *o);

/* A single output, for writers called on their own (tests, tools): the same checks and the
 * temporary file + rename, without inputs to compare with. */
int  bk_outfile_open(bk_outfile *f, const char *path, char *err, size_t err_size);
int  bk_outfile_commit(bk_outfile *f, char *err, size_t err_size);
void bk_outfile_abort(bk_outfile *f);

#endif /* BK_OUTPUTS_H */
