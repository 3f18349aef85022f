/* cmd_bake_dir.c - --directional: the bands' files (their names, beside each -o), the bands kept
 * consistent with a denoised map, and their encodings (docs/baking.md, "Directional maps").
 *
 * The bake gives each texel, beside its map value M (rgb), the irradiance vector over pi, b
 * (kernels/bk_bake.h, bk_bake_dir_sample: bands x, y, z, rgb in each, with b . n = M at the
 * texel's normal n). The files:
 *   sh        NAME_L1x, NAME_L1y, NAME_L1z: in an .exr the bands themselves (signed half
 *             floats); in a .png each channel's ratio to the map, 0.5 + b_c / (4 M_c), as bytes;
 *   dominant  NAME_dir: Unity's encoding, rgb 0.5 + 0.5 d (d the unit direction of the bands'
 *             luminance), alpha its rebalancing, 0.5 + 0.5 d . n, which b . n = M gives as
 *             0.5 + 0.5 M_lum / |b_lum| without the normal.
 */
#include "cmd_bake_internal.h"
#include "image.h"
#include "pool.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const band_suffix[3] = { "_L1x", "_L1y", "_L1z" };

/* NAME.ext -> NAME<suffix>.ext (ext: the last 4 characters, as bk_cmd_bake_page_name). */
static char *band_name(const char *out, const char *suffix)
{
    size_t n = strlen(out), cut = n >= 4 ? n - 4 : n, len = n + strlen(suffix) + 1;
    char  *p = malloc(len);
    if (p) snprintf(p, len, "%.*s%s%s", (int)cut, out, suffix, out + cut);
    return p;
}

int bk_cmd_bake_dir_files(const bk_cmd_bake_cli *c) { return c->directional == BK_CMD_DIR_SH ? 3 : 1; }

char *bk_cmd_bake_dir_name(int mode, const char *out, int b)
{
    return band_name(out, mode == BK_CMD_DIR_SH ? band_suffix[b] : "_dir");
}

int bk_cmd_bake_dir_plan(const bk_cmd_bake_cli *c, bk_outputs *io, bk_cmd_bake_dir *d)
{
    memset(d, 0, sizeof *d);
    for (int k = 0; k < BK_CMD_BAKE_MAX_OUTS; ++k)
        for (int b = 0; b < 3; ++b) d->idx[k][b] = -1;
    d->mode = c->directional;
    if (!d->mode || !c->writer) return 0;
    char err[1024];
    for (int k = 0; k < c->nouts; ++k) {
        if (bk_image_type_of(c->outs[k]) == BK_IMAGE_TYPE_HDR) continue; /* RGBE holds no signed data */
        for (int b = 0; b < bk_cmd_bake_dir_files(c); ++b) {
            if (!(d->names[k][b] = bk_cmd_bake_dir_name(c->directional, c->outs[k], b))) {
                bk_cmd_bake_error("out of memory\n");
                return 1;
            }
            int r = bk_outputs_add(io, "--directional", d->names[k][b], 0, err, sizeof err);
            if (r < 0) {
                bk_cmd_bake_error("%s\n", err);
                return r == BK_OUT_CLASH ? 2 : 1;
            }
            d->idx[k][b] = r;
        }
    }
    return 0;
}

int bk_cmd_bake_dir_alloc(bk_cmd_bake_dir *d, size_t npx)
{
    for (int b = 0; d->mode && b < 3; ++b)
        if (!(d->band[b] = calloc(3 * (npx ? npx : 1), sizeof(float)))) {
            bk_cmd_bake_error("out of memory for the directional bands (%zu pixels)\n", npx);
            return 1;
        }
    return 0;
}

/* Each texel's bands at its pixel. */
typedef struct texels_job {
    bk_cmd_bake_dir    *d;
    const bk_texel_ref *refs;
    const bk_f4        *band;
} texels_job;

static void texels_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const texels_job *j = ctx;
    for (size_t i = begin; i < end; ++i) {
        const size_t px = j->refs[i].pixel;
        for (int b = 0; b < 3; ++b) {
            const bk_f4 v = j->band[3 * i + (size_t)b];
            float      *o = j->d->band[b] + 3 * px;
            o[0] = v.x, o[1] = v.y, o[2] = v.z;
        }
    }
}

void bk_cmd_bake_dir_from_texels(bk_cmd_bake_dir *d, const bk_texel_ref *refs, const bk_f4 *band, uint32_t n)
{
    texels_job j = { d, refs, band };
    if (d->mode) bk_parallel_for(n, 16384, texels_fn, &j);
}

/* One file's pixels: a band (as it is, or as its ratio to the map), or the dominant direction. */
typedef struct encode_job {
    const bk_cmd_bake_dir *d;
    const float           *rgb;
    float                 *out;
    int                    band, ratio, ch;
} encode_job;

static void encode_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const encode_job *j = ctx;
    for (size_t i = begin; i < end; ++i) {
        const float *m = j->rgb + 3 * i;
        float       *o = j->out + (size_t)j->ch * i;
        if (j->ch == 3) {
            const float *b = j->d->band[j->band] + 3 * i;
            for (int k = 0; k < 3; ++k) o[k] = !j->ratio ? b[k] : m[k] > 0.0f ? 0.5f + 0.25f * b[k] / m[k] : 0.5f;
            continue;
        }
        float v[3], ml = 0.2126f * m[0] + 0.7152f * m[1] + 0.0722f * m[2];
        for (int a = 0; a < 3; ++a) {
            const float *b = j->d->band[a] + 3 * i;
            v[a] = 0.2126f * b[0] + 0.7152f * b[1] + 0.0722f * b[2];
        }
        float len = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), s = len > 0.0f ? 1.0f / len : 0.0f;
        for (int a = 0; a < 3; ++a) o[a] = 0.5f + 0.5f * v[a] * s;
        float dn = len > 0.0f ? ml / len : 0.0f; /* d . n, from b . n = M */
        o[3] = 0.5f + 0.5f * (dn > 1.0f ? 1.0f : dn > 0.0f ? dn : 0.0f);
    }
}

int bk_cmd_bake_dir_write(const bk_cmd_bake_dir *d, const bk_cmd_bake_cli *c, bk_outputs *io, const float *rgb, int w,
                          int h, char *err, size_t err_size)
{
    const size_t npx = (size_t)w * (size_t)h;
    const int    ch = d->mode == BK_CMD_DIR_SH ? 3 : 4;
    float       *px = d->mode ? malloc(sizeof(float) * (size_t)ch * (npx ? npx : 1)) : NULL;
    int          rc = d->mode && !px ? bk_fail(err, err_size, "out of memory for a %dx%d directional page", w, h) : 0;
    for (int k = 0; !rc && d->mode && k < c->nouts; ++k)
        for (int b = 0; !rc && b < bk_cmd_bake_dir_files(c) && d->idx[k][b] >= 0; ++b) {
            encode_job j = { d, rgb, px, b, bk_image_type_of(c->outs[k]) == BK_IMAGE_TYPE_PNG, ch };
            bk_parallel_for(npx, 65536, encode_fn, &j);
            FILE *f = bk_outputs_open(io, d->idx[k][b], err, err_size);
            rc = !f || bk_image_write_data(f, d->names[k][b], px, ch, w, h, err, err_size) ||
                 bk_outputs_close(io, d->idx[k][b], err, err_size);
        }
    free(px);
    return rc ? -1 : 0;
}

void bk_cmd_bake_dir_free(bk_cmd_bake_dir *d)
{
    for (int b = 0; b < 3; ++b) {
        free(d->band[b]);
        d->band[b] = NULL;
        for (int k = 0; k < BK_CMD_BAKE_MAX_OUTS; ++k) {
            free(d->names[k][b]);
            d->names[k][b] = NULL;
        }
    }
}
