/* bk_test_run.h - runs the baker program from a test: `baker ARGS` (a shell fragment) with its
 * standard output dropped and its standard error captured. */
#ifndef BK_TEST_RUN_H
#define BK_TEST_RUN_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* Runs BK_BAKER with args; stderr goes to DIR/stderr.txt and then into buf (n bytes); returns
 * the exit status (128 when it did not exit). */
static inline int bk_test_run_baker(const char *dir, char *buf, size_t n, const char *args)
{
    char cmd[16384], errf[512];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>'%s'", BK_BAKER, args, errf);
    int st = system(cmd);
    buf[0] = 0;
    FILE *f = fopen(errf, "r");
    if (f) {
        size_t k = fread(buf, 1, n - 1, f);
        buf[k] = 0;
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}
#endif
