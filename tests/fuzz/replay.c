/* replay.c - a libFuzzer target's LLVMFuzzerTestOneInput run over files, without libFuzzer, so
 * the inputs that once broke something (tests/fuzz/regress/TARGET/) are replayed by every build
 * and compiler as a plain test. A target aborts on a broken invariant, which fails the test.
 *
 * Usage: unit_fuzz_trace_replay FILE_OR_DIR...    (files of a directory in name order)
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t   cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else buf = nb;
        }
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return -1;
    }
    fprintf(stderr, "replay %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; ++i) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i])) return 1;
            count++;
            continue;
        }
        struct dirent **list;
        int             n = scandir(argv[i], &list, NULL, by_name);
        if (n < 0) {
            perror(argv[i]);
            return 1;
        }
        for (int k = 0; k < n; ++k) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], list[k]->d_name);
            if (list[k]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (replay_file(path)) return 1;
                count++;
            }
            free(list[k]);
        }
        free(list);
    }
    printf("ok: %d inputs replayed\n", count);
    return count ? 0 : 1;
}
