/* fuzz_rays.c - libFuzzer target for the RAYS / HITS readers (bk_rays_read, bk_hits_read in
 * src/io/rays.c; format: ../shared/formats/rays.md).
 *
 * Each input is written to a temporary file and read as RAYS and as HITS (the magic decides
 * which reader accepts it). Promises checked: on success the count is the header's and matches
 * the file size exactly, and the records are the file's bytes; writing them back gives the
 * same file. On failure: a message, a NULL array and a zero count.
 */
#include "fuzz_common.h"
#include "rays.h"

static void check_reader(const char *path, const uint8_t *data, size_t size, const char *magic, size_t rec, int rc,
                         void *arr, uint64_t n, const char *err)
{
    if (rc != 0) {
        BK_FUZZ_CHECK(rc < 0 && err[0], "%s: status %d, message '%s'", magic, rc, err);
        BK_FUZZ_CHECK(arr == NULL && n == 0, "%s: failure left %llu records", magic, (unsigned long long)n);
        return;
    }
    uint64_t count;
    BK_FUZZ_CHECK(size >= 16 && !memcmp(data, magic, 8), "%s accepted without its magic", magic);
    memcpy(&count, data + 8, 8);
    BK_FUZZ_CHECK(n == count && 16 + n * rec == size, "%s: %llu records from a %zu-byte file saying %llu", magic,
                  (unsigned long long)n, size, (unsigned long long)count);
    BK_FUZZ_CHECK(arr != NULL && (n == 0 || !memcmp(arr, data + 16, n * rec)), "%s: records differ from the file",
                  magic);
    (void)path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char in[600], out[600];
    bk_fuzz_path("in.rays", in, sizeof in);
    bk_fuzz_path("out.rays", out, sizeof out);
    bk_fuzz_write(in, data, size);
    char err[1024];

    bk_ray  *rays = (bk_ray *)1; /* poison: the reader must set it */
    uint64_t n = 7;
    err[0] = 0;
    int rc = bk_rays_read(in, &rays, &n, err, sizeof err);
    check_reader(in, data, size, "RAYS0001", sizeof(bk_ray), rc, rays, n, err);
    if (rc == 0) {
        BK_FUZZ_CHECK(bk_rays_write(out, rays, n, err, sizeof err) == 0, "write: %s", err);
        bk_ray  *back = NULL;
        uint64_t m = 0;
        BK_FUZZ_CHECK(bk_rays_read(out, &back, &m, err, sizeof err) == 0, "read back: %s", err);
        BK_FUZZ_CHECK(m == n && (n == 0 || !memcmp(back, rays, n * sizeof(bk_ray))), "round trip changed the rays");
        free(back);
        free(rays);
    }

    bk_hit *hits = (bk_hit *)1;
    n = 7;
    err[0] = 0;
    rc = bk_hits_read(in, &hits, &n, err, sizeof err);
    check_reader(in, data, size, "HITS0001", sizeof(bk_hit), rc, hits, n, err);
    if (rc == 0) {
        BK_FUZZ_CHECK(bk_hits_write(out, hits, n, err, sizeof err) == 0, "write: %s", err);
        bk_hit  *back = NULL;
        uint64_t m = 0;
        BK_FUZZ_CHECK(bk_hits_read(out, &back, &m, err, sizeof err) == 0, "read back: %s", err);
        BK_FUZZ_CHECK(m == n && (n == 0 || !memcmp(back, hits, n * sizeof(bk_hit))), "round trip changed the hits");
        free(back);
        free(hits);
    }
    return 0;
}
