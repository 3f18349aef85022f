/* bk_test_files.h - runs the baker program in a folder of its own, as a user would, and checks
 * what it leaves there: files byte for byte as they were, nothing left behind. One test file per
 * executable includes it (its state is static), after #define _XOPEN_SOURCE 700 (S_IFMT). */
#ifndef BK_TEST_FILES_H
#define BK_TEST_FILES_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char dir[256], errbuf[16384];

/* After system(): dir/err.txt into errbuf; the exit status (128 when it did not exit). */
static int run_finish(int st)
{
    char path[512];
    snprintf(path, sizeof path, "%s/err.txt", dir);
    errbuf[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        size_t k = fread(errbuf, 1, sizeof errbuf - 1, f);
        errbuf[k] = 0;
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Runs `sh -c "PREFIX baker ARGS"` in dir; stderr into errbuf; returns the exit status. */
static int run_in(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_in(const char *prefix, const char *fmt, ...)
{
    char    args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && %s '%s' %s >out.txt 2>err.txt", dir, prefix, BK_BAKER, args);
    return run_finish(system(cmd));
}
#define RUN(...) run_in("", __VA_ARGS__)

/* Runs the shell command in dir with $B set to the baker program (the command chooses where
 * standard output goes); stderr into errbuf; returns the exit status of the command. */
static int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int run_sh(const char *fmt, ...)
{
    char    body[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && B='%s' && { %s ; } 2>err.txt", dir, BK_BAKER, body);
    return run_finish(system(cmd));
}

typedef struct snap {
    char  *data;
    long   size;
    int    exists;
    mode_t mode;
} snap;

static snap take(const char *name)
{
    snap s = { NULL, -1, 0, 0 };
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    if (lstat(path, &st) != 0) return s;
    s.exists = 1;
    s.mode = st.st_mode;
    if (!S_ISREG(st.st_mode)) return s;
    FILE *f = fopen(path, "rb");
    if (!f) return s;
    s.size = st.st_size;
    s.data = malloc((size_t)s.size + 1);
    s.size = (long)fread(s.data, 1, (size_t)s.size, f);
    s.data[s.size] = 0; /* so tests may strstr it */
    fclose(f);
    return s;
}

/* The file is exactly as it was (type, and bytes for regular files). */
static int same(const char *name, snap before)
{
    snap now = take(name);
    int  ok = now.exists == before.exists &&
             (!now.exists || ((now.mode & S_IFMT) == (before.mode & S_IFMT) && now.size == before.size &&
                              (now.size <= 0 || !memcmp(now.data, before.data, (size_t)now.size))));
    free(now.data);
    return ok;
}

static int exists(const char *name)
{
    snap s = take(name);
    free(s.data);
    return s.exists;
}
__attribute__((unused)) static mode_t mode_of(const char *name)
{
    snap s = take(name);
    free(s.data);
    return s.mode;
}

/* Nothing in dir but the files named (space-separated, each surrounded by spaces) and the
 * harness's out.txt / err.txt: no temporary file left behind. */
static int only(const char *names)
{
    char cmd[1024], path[512], line[512];
    snprintf(cmd, sizeof cmd, "ls -A '%s' > '%s/../bk_files_ls.txt'", dir, dir);
    if (system(cmd) != 0) return 0;
    snprintf(path, sizeof path, "%s/../bk_files_ls.txt", dir);
    FILE *f = fopen(path, "r");
    int   ok = f != NULL;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char key[520];
        snprintf(key, sizeof key, " %s ", line);
        if (strcmp(line, "out.txt") && strcmp(line, "err.txt") && !strstr(names, key)) {
            fprintf(stderr, "unexpected file left: %s\n", line);
            ok = 0;
        }
    }
    if (f) fclose(f);
    remove(path);
    return ok;
}

static void write_text(const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

#endif
