/* rays.c - RAYS/HITS file I/O and the seeded standard ray sets (see rays.h). */
#include "rays.h"
#include "outputs.h"
#include "util.h"
#include "bk_rng.h"
#include "sort.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(bk_ray) == 32, "RAYS record is 8 float32");
_Static_assert(sizeof(bk_hit) == 8, "HITS record is float32 + u32");
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the RAYS/HITS readers assume a little-endian host"
#endif

static int read_records(const char *path, const char *magic, size_t rec, void **out, uint64_t *n, char *err,
                        size_t err_size)
{
    *out = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return bk_fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return bk_fail(err, err_size,
                       "%s: not a regular file (a device, FIFO or folder): a %.8s file is read from a file", path,
                       magic);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return bk_fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    }
    unsigned char head[16];
    size_t        got = fread(head, 1, 16, f);
    if (got < 8 ? memcmp(head, magic, got) != 0 || got == 0 : memcmp(head, magic, 8) != 0) {
        fclose(f);
        return bk_fail(err, err_size, "%s: not a %.8s file (it does not start with '%.8s')", path, magic, magic);
    }
    if (got < 16) {
        fclose(f);
        return bk_fail(err, err_size, "%s: truncated %.8s header: %zu of its 16 bytes", path, magic, got);
    }
    uint64_t count;
    memcpy(&count, head + 8, 8);
    uint64_t size = (uint64_t)st.st_size;
    if ((size - 16) / rec != count || (size - 16) % rec != 0) {
        fclose(f);
        return bk_fail(err, err_size,
                       "%s: header says %llu records but the file holds %llu bytes of records (%zu bytes each)", path,
                       (unsigned long long)count, (unsigned long long)(size - 16), rec);
    }
    if (count > BK_RAYS_MAX) {
        fclose(f);
        return bk_fail(err, err_size, "%s: %llu records: more than the %llu baker reads at once", path,
                       (unsigned long long)count, (unsigned long long)BK_RAYS_MAX);
    }
    void *buf = malloc(count ? count * rec : 1);
    if (!buf) {
        fclose(f);
        return bk_fail(err, err_size, "%s: out of memory for %llu records", path, (unsigned long long)count);
    }
    if (count && fread(buf, rec, count, f) != count) {
        free(buf);
        fclose(f);
        return bk_fail(err, err_size, "%s: short read", path);
    }
    fclose(f);
    *out = buf;
    *n = count;
    return 0;
}

static int write_records(FILE *f, const char *path, const char *magic, const void *data, size_t rec, uint64_t n,
                         char *err, size_t err_size)
{
    if (fwrite(magic, 1, 8, f) != 8 || fwrite(&n, 8, 1, f) != 1 || (n && fwrite(data, rec, n, f) != n))
        return bk_fail(err, err_size, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

static int write_records_path(const char *path, const char *magic, const void *data, size_t rec, uint64_t n, char *err,
                              size_t err_size)
{
    bk_outfile o;
    if (bk_outfile_open(&o, path, err, err_size)) return -1;
    if (write_records(o.f, path, magic, data, rec, n, err, err_size)) {
        bk_outfile_abort(&o);
        return -1;
    }
    return bk_outfile_commit(&o, err, err_size);
}

int bk_rays_read(const char *path, bk_ray **rays, uint64_t *n, char *err, size_t err_size)
{
    return read_records(path, "RAYS0001", sizeof(bk_ray), (void **)rays, n, err, err_size);
}
int bk_rays_write(const char *path, const bk_ray *rays, uint64_t n, char *err, size_t err_size)
{
    return write_records_path(path, "RAYS0001", rays, sizeof(bk_ray), n, err, err_size);
}
int bk_rays_write_file(FILE *f, const char *path, const bk_ray *rays, uint64_t n, char *err, size_t err_size)
{
    return write_records(f, path, "RAYS0001", rays, sizeof(bk_ray), n, err, err_size);
}
int bk_hits_read(const char *path, bk_hit **hits, uint64_t *n, char *err, size_t err_size)
{
    return read_records(path, "HITS0001", sizeof(bk_hit), (void **)hits, n, err, err_size);
}
int bk_hits_write(const char *path, const bk_hit *hits, uint64_t n, char *err, size_t err_size)
{
    return write_records_path(path, "HITS0001", hits, sizeof(bk_hit), n, err, err_size);
}
int bk_hits_write_file(FILE *f, const char *path, const bk_hit *hits, uint64_t n, char *err, size_t err_size)
{
    return write_records(f, path, "HITS0001", hits, sizeof(bk_hit), n, err, err_size);
}

void bk_scene_bounds(const bk_scene *s, float lo[3], float hi[3])
{
    for (int k = 0; k < 3; ++k) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    for (uint32_t t = 0; t < s->tri_count; ++t)
        for (int v = 0; v < 3; ++v) {
            const float *p = s->positions + 3 * (size_t)s->tri_v[3 * t + v];
            for (int k = 0; k < 3; ++k) {
                lo[k] = fminf(lo[k], p[k]);
                hi[k] = fmaxf(hi[k], p[k]);
            }
        }
}

static bk_vec3 tri_pos(const bk_scene *s, uint32_t t, int v)
{
    const float *p = s->positions + 3 * (size_t)s->tri_v[3 * t + v];
    return bk_v3(p[0], p[1], p[2]);
}

static bk_vec3 normalize3(bk_vec3 v)
{
    float l = sqrtf(bk_dot3(v, v));
    return l > 0 ? bk_mul3(v, 1.0f / l) : v;
}

/* Two unit vectors perpendicular to unit n (the branch-free basis of Duff et al. 2017). */
static void basis(bk_vec3 n, bk_vec3 *b1, bk_vec3 *b2)
{
    float sign = copysignf(1.0f, n.z);
    float a = -1.0f / (sign + n.z), b = n.x * n.y * a;
    *b1 = bk_v3(1.0f + sign * n.x * n.x * a, sign * b, -sign * n.x);
    *b2 = bk_v3(b, sign + n.y * n.y * a, -n.y);
}

static bk_ray make_ray(bk_vec3 o, bk_vec3 d, float tmin, float tmax)
{
    bk_ray r;
    r.ox = o.x;
    r.oy = o.y;
    r.oz = o.z;
    r.tmin = tmin;
    r.dx = d.x;
    r.dy = d.y;
    r.dz = d.z;
    r.tmax = tmax;
    return r;
}

static int alloc_rays(uint64_t n, bk_ray **out, char *err, size_t err_size)
{
    *out = malloc(n ? n * sizeof(bk_ray) : 1);
    if (!*out) return bk_fail(err, err_size, "out of memory for %llu rays", (unsigned long long)n);
    return 0;
}

static int rays_diffuse(const bk_scene *s, uint64_t n, uint32_t seed, int front_only, bk_ray **out, char *err,
                        size_t err_size)
{
    if (s->tri_count == 0) return bk_fail(err, err_size, "scene has no triangles");
    double *cdf = malloc(sizeof(double) * s->tri_count);
    if (!cdf) return bk_fail(err, err_size, "out of memory");
    double total = 0.0;
    for (uint32_t t = 0; t < s->tri_count; ++t) {
        bk_vec3 c = bk_cross3(bk_sub3(tri_pos(s, t, 1), tri_pos(s, t, 0)), bk_sub3(tri_pos(s, t, 2), tri_pos(s, t, 0)));
        total += 0.5 * sqrt((double)bk_dot3(c, c));
        cdf[t] = total;
    }
    if (!(total > 0.0)) {
        free(cdf);
        return bk_fail(err, err_size, "scene has no triangle with positive area");
    }
    if (alloc_rays(n, out, err, err_size)) {
        free(cdf);
        return -1;
    }
    float lo[3], hi[3];
    bk_scene_bounds(s, lo, hi);
    float diag = sqrtf((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    float eps = 1e-4f * diag;
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t key = (uint32_t)i, hi32 = (uint32_t)(i >> 32);
        double   x = (double)bk_rng_u32(seed, key, hi32, 0) * (1.0 / 4294967296.0) * total;
        uint32_t a = 0, b = s->tri_count - 1; /* first t with cdf[t] > x */
        while (a < b) {
            uint32_t m = a + (b - a) / 2;
            if (cdf[m] > x) b = m;
            else a = m + 1;
        }
        bk_vec3 p0 = tri_pos(s, a, 0), p1 = tri_pos(s, a, 1), p2 = tri_pos(s, a, 2);
        float   su = sqrtf(bk_rng_f(seed, key, hi32, 1)), v = bk_rng_f(seed, key, hi32, 2);
        float   w0 = 1.0f - su, w1 = su * (1.0f - v), w2 = su * v;
        bk_vec3 p = bk_add3(bk_add3(bk_mul3(p0, w0), bk_mul3(p1, w1)), bk_mul3(p2, w2));
        bk_vec3 nrm = normalize3(bk_cross3(bk_sub3(p1, p0), bk_sub3(p2, p0)));
        if (!front_only && bk_rng_f(seed, key, hi32, 3) < 0.5f) nrm = bk_mul3(nrm, -1.0f);
        float   r1 = bk_rng_f(seed, key, hi32, 4), r2 = bk_rng_f(seed, key, hi32, 5);
        float   rad = sqrtf(r1), phi = 6.28318530718f * r2;
        bk_vec3 b1, b2;
        basis(nrm, &b1, &b2);
        bk_vec3 d = bk_add3(bk_add3(bk_mul3(b1, rad * cosf(phi)), bk_mul3(b2, rad * sinf(phi))),
                            bk_mul3(nrm, sqrtf(fmaxf(0.0f, 1.0f - r1))));
        (*out)[i] = make_ray(bk_add3(p, bk_mul3(nrm, eps)), d, 0.0f, INFINITY);
    }
    free(cdf);
    return 0;
}

int bk_rays_diffuse(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size)
{
    return rays_diffuse(s, n, seed, 0, out, err, err_size);
}

int bk_rays_diffuse_front(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size)
{
    return rays_diffuse(s, n, seed, 1, out, err, err_size);
}

int bk_rays_primary(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size)
{
    if (s->tri_count == 0) return bk_fail(err, err_size, "scene has no triangles");
    if (alloc_rays(n, out, err, err_size)) return -1;
    float lo[3], hi[3];
    bk_scene_bounds(s, lo, hi);
    bk_vec3  eye = bk_v3(0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2]));
    bk_vec3  fwd = hi[0] - lo[0] >= hi[2] - lo[2] ? bk_v3(1, 0, 0) : bk_v3(0, 0, 1);
    bk_vec3  up = bk_v3(0, 1, 0), right = bk_cross3(fwd, up);
    uint64_t side = (uint64_t)ceil(sqrt((double)n));
    if (side == 0) side = 1;
    float h = tanf(0.5f * 60.0f * 3.14159265f / 180.0f);
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t key = (uint32_t)i, hi32 = (uint32_t)(i >> 32);
        float    px = ((float)(i % side) + bk_rng_f(seed, key, hi32, 0)) / (float)side * 2.0f - 1.0f;
        float    py = ((float)(i / side) + bk_rng_f(seed, key, hi32, 1)) / (float)side * 2.0f - 1.0f;
        bk_vec3  d = bk_add3(fwd, bk_add3(bk_mul3(right, px * h), bk_mul3(up, -py * h)));
        (*out)[i] = make_ray(eye, normalize3(d), 0.0f, INFINITY);
    }
    return 0;
}

int bk_rays_random(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size)
{
    if (alloc_rays(n, out, err, err_size)) return -1;
    float lo[3], hi[3];
    bk_scene_bounds(s, lo, hi);
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t key = (uint32_t)i;
        float    o[3];
        for (int k = 0; k < 3; ++k) {
            float ext = hi[k] - lo[k];
            o[k] = lo[k] - 0.2f * ext + 1.4f * ext * bk_rng_f(seed, key, 1, (uint32_t)k);
        }
        float   z = 1.0f - 2.0f * bk_rng_f(seed, key, 1, 3), phi = 6.28318530718f * bk_rng_f(seed, key, 1, 4);
        float   r = sqrtf(fmaxf(0.0f, 1.0f - z * z));
        bk_vec3 d = bk_v3(r * cosf(phi), r * sinf(phi), z);
        if (i % 7 == 3) {
            int   axis = (int)(bk_rng_u32(seed, key, 1, 5) % 3);
            float sg = bk_rng_f(seed, key, 1, 6) < 0.5f ? -1.0f : 1.0f;
            d = bk_v3(axis == 0 ? sg : 0.0f, axis == 1 ? sg : 0.0f, axis == 2 ? sg : 0.0f);
        }
        float tmax = INFINITY;
        if (i % 11 == 5) {
            float diag = sqrtf((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                               (hi[2] - lo[2]) * (hi[2] - lo[2]));
            tmax = diag * bk_rng_f(seed, key, 1, 7);
        }
        (*out)[i] = make_ray(bk_v3(o[0], o[1], o[2]), d, 0.0f, tmax);
    }
    return 0;
}

int bk_hit_agree(bk_hit a, bk_hit b, int any_hit, float rel)
{
    int ha = a.tri != BK_NO_HIT, hb = b.tri != BK_NO_HIT;
    if (ha != hb) return 0;
    if (!ha || any_hit) return 1;
    float d = fabsf(a.t - b.t), m = fmaxf(fabsf(a.t), fabsf(b.t));
    return d <= rel * m || d == 0.0f;
}

int bk_rays_sort(bk_ray *rays, uint64_t n, bk_vec3 lo, bk_vec3 hi, int bits, char *err, size_t err_size)
{
    if (bits < 1 || bits > BK_RAY_ORDER_KEY_BITS)
        return bk_fail(err, err_size, "ray sort: %d key bits, expected 1..%d", bits, BK_RAY_ORDER_KEY_BITS);
    if (n < 2) return 0;
    uint32_t *key = malloc(n * sizeof *key);
    if (!key) return bk_fail(err, err_size, "ray sort: out of memory for %llu rays", (unsigned long long)n);
    const bk_vec3 scale = bk_ray_order_scale(lo, hi);
    for (uint64_t i = 0; i < n; ++i) key[i] = bk_ray_order_key(&rays[i], lo, scale) >> (BK_RAY_ORDER_KEY_BITS - bits);
    /* the host's stable radix sort, the rays carried beside their keys: the order of the trace's
     * stable GPU sort of the same keys */
    bk_sort_spec sp = bk_sort_spec_of(sizeof *key, 0, 4);
    sp.end_bit = bits;
    sp.vals = rays;
    sp.val_size = sizeof *rays;
    sp.parallel = 1;
    const int rc = bk_sort_radix(key, (size_t)n, &sp);
    free(key);
    return rc ? bk_fail(err, err_size, "ray sort: out of memory for %llu rays", (unsigned long long)n) : 0;
}

void bk_rays_limit(bk_ray *rays, uint64_t n, const bk_scene *s, float fraction)
{
    float lo[3], hi[3];
    bk_scene_bounds(s, lo, hi);
    const float dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    const float len = fraction * sqrtf(dx * dx + dy * dy + dz * dz);
    for (uint64_t i = 0; i < n; ++i)
        if (!(rays[i].tmax <= len)) rays[i].tmax = len;
}
