/* bench_load.c - `baker bench load`: how fast the OBJ loader (obj.c) turns files into a bk_scene.
 *
 * Each file is loaded --runs times (default 5) in this process; the table gives the file size, the
 * triangle count, the median and fastest wall time, the throughput, and for the full Stanford dragon
 * as plain text (871,414 triangles) the speed-up over assimp, which needs 1.32 s for the same 33 MB
 * file on the team's 2-core machine (the reference number given in the loader's brief).
 */
#include "bench.h"
#include "loader.h"
#include "scene.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define ASSIMP_DRAGON_S 1.32 /* assimp, full dragon, same machine */
#define DRAGON_TRIS     871414u
#define MAX_RUNS        64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* gunzip src into dst; 0 or -1 with a message on stderr. */
static int gunzip_to(const char *src, const char *dst)
{
    gzFile in = gzopen(src, "rb");
    if (!in) {
        fprintf(stderr, "bench load: %s: cannot open\n", src);
        return -1;
    }
    FILE *out = fopen(dst, "wb");
    if (!out) {
        gzclose(in);
        fprintf(stderr, "bench load: %s: cannot create\n", dst);
        return -1;
    }
    static char chunk[1 << 16];
    int         n, rc = 0;
    while ((n = gzread(in, chunk, sizeof chunk)) > 0)
        if (fwrite(chunk, 1, (size_t)n, out) != (size_t)n) {
            rc = -1;
            break;
        }
    if (n < 0) rc = -1;
    gzclose(in);
    if (fclose(out) != 0) rc = -1;
    if (rc) fprintf(stderr, "bench load: gunzip %s -> %s failed\n", src, dst);
    return rc;
}

static int bench_file(const char *path, int runs)
{
    struct stat st;
    double      mb = stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0;
    double      t[MAX_RUNS];
    uint32_t    tris = 0;
    for (int r = 0; r < runs; r++) {
        bk_scene s;
        char     err[1024];
        double   t0 = bk_time_now();
        int      rc = bk_scene_load(path, &s, err, sizeof err);
        t[r] = bk_time_now() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench load: %s\n", err);
            return 1;
        }
        tris = s.tri_count;
        bk_scene_free(&s);
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    double      med = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    printf("%-28s %8.1f %10u %9.4f %9.4f %8.0f", name, mb, tris, med, t[0], med > 0 ? mb / med : 0.0);
    size_t n = strlen(path);
    int    gz = n > 3 && strcmp(path + n - 3, ".gz") == 0;
    if (tris == DRAGON_TRIS && !gz)
        printf("   %5.1fx faster than assimp (%.2f s)", ASSIMP_DRAGON_S / med, ASSIMP_DRAGON_S);
    printf("\n");
    return 0;
}

int bk_bench_load(int argc, char **argv)
{
    int runs = 5, nfiles = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1 || runs > MAX_RUNS) {
                fprintf(stderr, "bench load: --runs must be 1..%d\n", MAX_RUNS);
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "usage: baker bench load [--runs N] [FILE...]\n");
            return 2;
        } else nfiles++;
    }

    printf("bench load: %d loads per file; MB = 10^6 bytes as stored (a .gz is timed with its decompression)\n", runs);
    printf("%-28s %8s %10s %9s %9s %8s\n", "file", "MB", "triangles", "median s", "min s", "MB/s");
    int rc = 0;
    if (nfiles) {
        for (int i = 0; i < argc; i++) {
            if (!strcmp(argv[i], "--runs")) {
                i++;
                continue;
            }
            rc |= bench_file(argv[i], runs);
        }
        return rc;
    }

    const char *dir = getenv("BK_SCENES_DIR");
    if (!dir || !*dir) dir = "../shared/scenes";
    char gz[1024], tmpdir[512], dragon[600], path[1024];
    snprintf(gz, sizeof gz, "%s/dragon/dragon_vrip.obj.gz", dir);
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/bk_bench_load_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (access(gz, R_OK) != 0) {
        fprintf(stderr, "bench load: %s not found (set BK_SCENES_DIR or run from the repository root)\n", gz);
        rc = 1;
    } else if (!mkdtemp(tmpdir)) {
        perror("bench load: mkdtemp");
        rc = 1;
    } else {
        snprintf(dragon, sizeof dragon, "%s/dragon_vrip.obj", tmpdir);
        if (gunzip_to(gz, dragon) == 0) rc |= bench_file(dragon, runs);
        else rc = 1;
        unlink(dragon);
        rmdir(tmpdir);
    }
    static const char *const rest[] = { "sponza-dabrovic/sponza.obj", "sibenik/sibenik.obj" };
    for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, rest[i]);
        rc |= bench_file(path, runs);
    }
    return rc;
}
