/* diff.c - baker diff: RMSE, PSNR (linear and sRGB), bias and a difference image of two
 * lightmaps (see diff.h). */
#include "diff.h"
#include "cli.h"
#include "image.h"
#include "outputs.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char diff_intro[] =
    "usage: baker diff A B [-o DIFF.png|.hdr|.exr] [--mask M.png] [--exposure E] [--json]\n"
    "\n"
    "Compares lightmap B with lightmap A (the reference), texel by texel. A, B and the mask are\n"
    ".png (8-bit sRGB, decoded to linear), .hdr (Radiance, linear) or .exr (OpenEXR, linear; in\n"
    "builds with libtinyexr-dev); their sizes must match.\n"
    "\n"
    "Covered texels, the only ones compared: with --mask, those where the mask is non-zero (in\n"
    "any channel); without, those where A or B is non-zero (in any channel), so the black unused\n"
    "space of an atlas does not flatter the numbers.\n"
    "\n"
    "Printed, over the covered texels, after multiplying both by the exposure:\n"
    "  RMSE           root mean square of B - A over every channel, linear\n"
    "  PSNR linear    20 log10(1 / RMSE): peak 1.0 after exposure, values not clamped\n"
    "  PSNR sRGB      the same on the sRGB encodings in [0, 1] (values clamped to [0, 1], not\n"
    "                 quantised), peak 1: what an 8-bit PNG of the maps shows\n"
    "  bias           (mean B - mean A) / mean A per channel and for the luminance\n"
    "                 (0.2126 R + 0.7152 G + 0.0722 B)\n"
    "  covered        the number of covered texels\n"
    "\n"
    "options:\n";
static const char diff_outro[] =
    "Exit status: 0, 1 when a file cannot be read or written (or nothing is covered), 2 for usage.\n";

static double srgb_enc(double c)
{
    if (!(c > 0)) c = 0;
    if (c > 1) c = 1;
    return c <= 0.0031308 ? 12.92 * c : 1.055 * pow(c, 1.0 / 2.4) - 0.055;
}

static int is_covered(const float *a, const float *b, const uint8_t *mask, size_t i)
{
    if (mask) return mask[i] != 0;
    return a[3 * i] != 0 || a[3 * i + 1] != 0 || a[3 * i + 2] != 0 || b[3 * i] != 0 || b[3 * i + 1] != 0 ||
           b[3 * i + 2] != 0;
}

void bk_diff_compute(const float *a, const float *b, const uint8_t *mask, int w, int h, float exposure,
                     bk_diff_stats *out)
{
    memset(out, 0, sizeof *out);
    size_t   n = (size_t)w * h;
    double   e = exposure, se = 0, se_srgb = 0, sa[3] = { 0, 0, 0 }, sb[3] = { 0, 0, 0 }, mx = 0;
    uint64_t cov = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!is_covered(a, b, mask, i)) continue;
        cov++;
        for (int k = 0; k < 3; ++k) {
            double x = a[3 * i + k] * e, y = b[3 * i + k] * e, d = y - x, ds = srgb_enc(y) - srgb_enc(x);
            se += d * d;
            se_srgb += ds * ds;
            sa[k] += x;
            sb[k] += y;
            if (fabs(d) > mx) mx = fabs(d);
        }
    }
    out->texels = n;
    out->covered = cov;
    for (int k = 0; k < 4; ++k) out->bias[k] = NAN;
    if (!cov) return;
    out->rmse = sqrt(se / (3.0 * (double)cov));
    out->rmse_srgb = sqrt(se_srgb / (3.0 * (double)cov));
    out->psnr_linear = out->rmse > 0 ? -20.0 * log10(out->rmse) : INFINITY;
    out->psnr_srgb = out->rmse_srgb > 0 ? -20.0 * log10(out->rmse_srgb) : INFINITY;
    out->max_abs = mx;
    for (int k = 0; k < 3; ++k) {
        out->mean_a[k] = sa[k] / (double)cov;
        out->mean_b[k] = sb[k] / (double)cov;
    }
    out->mean_a[3] = BK_DIFF_LUM_R * out->mean_a[0] + BK_DIFF_LUM_G * out->mean_a[1] + BK_DIFF_LUM_B * out->mean_a[2];
    out->mean_b[3] = BK_DIFF_LUM_R * out->mean_b[0] + BK_DIFF_LUM_G * out->mean_b[1] + BK_DIFF_LUM_B * out->mean_b[2];
    for (int k = 0; k < 4; ++k)
        out->bias[k] = out->mean_a[k] != 0 ? (out->mean_b[k] - out->mean_a[k]) / out->mean_a[k] : NAN;
}

void bk_diff_image(const float *a, const float *b, const uint8_t *mask, int w, int h, float exposure, float *rgb)
{
    size_t n = (size_t)w * h;
    for (size_t i = 0; i < n; ++i) {
        int c = is_covered(a, b, mask, i);
        for (int k = 0; k < 3; ++k) rgb[3 * i + k] = c ? fabsf(b[3 * i + k] - a[3 * i + k]) * exposure : 0.0f;
    }
}

/* ---- the command ---- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

static const char *kind_of(const char *path)
{
    switch (bk_image_type_of(path)) {
    case BK_IMAGE_TYPE_HDR: return "HDR, linear";
    case BK_IMAGE_TYPE_EXR: return "EXR, linear";
    default: return "PNG, 8-bit sRGB";
    }
}

static int check_ext(const char *opt, const char *path)
{
    char err[1024];
    if (!bk_image_type_check(opt, path, err, sizeof err)) return 0;
    fprintf(stderr, "baker diff: %s\n", err);
    return -1;
}

static void print_pct(const char *name, double v)
{
    if (isfinite(v)) printf("  %s %+.3f %%", name, 100.0 * v);
    else printf("  %s n/a", name);
}

/* The command's arguments. */
typedef struct diff_cli {
    const char *pa, *pb, *out, *pm; /* A, B, -o and --mask */
    float       exposure;
    int         json;
} diff_cli;

static int set_out(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((diff_cli *)dst)->out = v;
    return 0;
}
static int set_mask(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((diff_cli *)dst)->pm = v;
    return 0;
}
static int set_json(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((diff_cli *)dst)->json = 1;
    return 0;
}

static int set_exposure(void *dst, const char *opt, const char *v)
{
    diff_cli *c = dst;
    char     *end = NULL;
    (void)opt;
    c->exposure = strtof(v, &end);
    if (!end || *end || end == v || !(c->exposure > 0) || !isfinite(c->exposure)) {
        fprintf(stderr, "baker diff: --exposure: expected a finite number > 0, got '%s'\n", v);
        return -1;
    }
    return 0;
}

/* The option table of `baker diff`, from which its help and its parser are made (text from
 * column 17). */
static const bk_cli_opt diff_opts[] = {
    { .help = diff_intro },
    { .name = "-o",
      .alias = "--output",
      .arg = "FILE",
      .set = set_out,
      .help = "also write the difference image: .png: |A - B| per channel divided by its\n"
              "largest value over the covered texels (white = the largest difference),\n"
              "sRGB-encoded like a lightmap; .hdr or .exr: |A - B| * exposure, unscaled,\n"
              "linear.\n"
              "Texels not covered are black. Never an input; temporary file + rename." },
    { .name = "--mask",
      .arg = "FILE",
      .set = set_mask,
      .help = "the covered texels (non-zero), e.g. a coverage map of the atlas" },
    { .name = "--exposure",
      .arg = "E",
      .set = set_exposure,
      .help = "multiply both maps by E > 0 first (default 1): the PSNRs' peak is 1.0 after it" },
    { .name = "--json",
      .set = set_json,
      .help = "print the numbers as one JSON object on standard output instead (infinite\n"
              "PSNR and undefined bias as null)" },
    { .help = diff_outro },
    { 0 },
};

void bk_diff_help(FILE *f) { bk_cli_table_help_col(f, diff_opts, 17); }

/* The arguments into c: -1 to go on, else the exit status (0 after --help). */
static int diff_parse(diff_cli *c, int argc, char **argv)
{
    int operands = 0;
    memset(c, 0, sizeof *c);
    c->exposure = 1.0f;
    for (int i = 0; i < argc; ++i) {
        char msg[1024];
        if (!operands && !strcmp(argv[i], "--")) {
            operands = 1;
            continue;
        }
        if (operands || (argv[i][0] != '-' || !argv[i][1])) {
            if (!c->pa) c->pa = argv[i];
            else if (!c->pb) c->pb = argv[i];
            else {
                fprintf(stderr, "baker diff: unexpected argument '%s'\n", argv[i]);
                return 2;
            }
            continue;
        }
        int r = bk_cli_table_option(diff_opts, c, argc, argv, &i);
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bk_diff_help(stdout);
            return 0;
        }
        fprintf(stderr, "baker diff: %s\n", bk_cli_unknown(argv[i], "baker help diff", msg, sizeof msg));
        return 2;
    }
    if (!c->pa || !c->pb) {
        fprintf(stderr, "baker diff: need two lightmaps A and B\n");
        bk_diff_help(stderr);
        return 2;
    }
    if (check_ext("A", c->pa) || check_ext("B", c->pb) || (c->pm && check_ext("--mask", c->pm)) ||
        (c->out && check_ext("-o", c->out)))
        return 2;
    return -1;
}

/* --json: the report as one JSON object on standard output. */
static void print_json(const diff_cli *c, int w, int h, const bk_diff_stats *st, const char *rule)
{
    printf("{\n  \"a\": ");
    json_str(stdout, c->pa);
    printf(",\n  \"b\": ");
    json_str(stdout, c->pb);
    printf(",\n  \"width\": %d,\n  \"height\": %d,\n  \"exposure\": %.9g,\n  \"texels\": %llu,\n  \"covered\": %llu,\n"
           "  \"covered_rule\": \"%s\",\n  \"rmse\": ",
           w, h, (double)c->exposure, (unsigned long long)st->texels, (unsigned long long)st->covered, rule);
    json_num(stdout, st->rmse);
    printf(",\n  \"psnr_linear\": ");
    json_num(stdout, st->psnr_linear);
    printf(",\n  \"rmse_srgb\": ");
    json_num(stdout, st->rmse_srgb);
    printf(",\n  \"psnr_srgb\": ");
    json_num(stdout, st->psnr_srgb);
    const char   *names[4] = { "r", "g", "b", "luminance" };
    const double *arr[3] = { st->mean_a, st->mean_b, st->bias };
    const char   *arr_names[3] = { "mean_a", "mean_b", "bias" };
    for (int t = 0; t < 3; ++t) {
        printf(",\n  \"%s\": {", arr_names[t]);
        for (int k = 0; k < 4; ++k) {
            printf("%s\"%s\": ", k ? ", " : " ", names[k]);
            json_num(stdout, arr[t][k]);
        }
        printf(" }");
    }
    printf(",\n  \"max_abs_diff\": ");
    json_num(stdout, st->max_abs);
    printf(",\n  \"diff_image\": ");
    if (c->out) json_str(stdout, c->out);
    else printf("null");
    printf("\n}\n");
}

/* The report as text on standard output. */
static void print_text(const diff_cli *c, int w, int h, const bk_diff_stats *st, const char *rule)
{
    printf("A               %s (%s)\nB               %s (%s)\nsize            %dx%d, exposure %g\n", c->pa,
           kind_of(c->pa), c->pb, kind_of(c->pb), w, h, (double)c->exposure);
    printf("covered texels  %llu of %llu (%s)\n", (unsigned long long)st->covered, (unsigned long long)st->texels,
           rule);
    printf("RMSE            %.6g (linear)\n", st->rmse);
    printf("PSNR linear     %.2f dB (peak 1.0 after exposure, values not clamped)\n", st->psnr_linear);
    printf("PSNR sRGB       %.2f dB (sRGB encodings in [0, 1], peak 1)\n", st->psnr_srgb);
    printf("bias           ");
    print_pct("R", st->bias[0]);
    print_pct("G", st->bias[1]);
    print_pct("B", st->bias[2]);
    print_pct("luminance", st->bias[3]);
    printf("  ((mean B - mean A) / mean A)\n");
    printf("mean            A %.6g, B %.6g (luminance, linear)\n", st->mean_a[3], st->mean_b[3]);
    printf("max |A - B|     %.6g (linear)\n", st->max_abs);
    if (c->out) {
        if (bk_image_type_of(c->out) != BK_IMAGE_TYPE_PNG) printf("wrote %s (|A - B| * exposure, linear)\n", c->out);
        else
            printf("wrote %s (|A - B| / %.6g: white = the largest difference)\n", c->out,
                   st->max_abs > 0 ? st->max_abs : 1.0);
    }
}

int bk_cmd_diff(int argc, char **argv)
{
    diff_cli c;
    int      pr = diff_parse(&c, argc, argv);
    if (pr >= 0) return pr;
    const char *pa = c.pa, *pb = c.pb, *out = c.out, *pm = c.pm;
    const float exposure = c.exposure;

    /* the files, before any work (outputs.h) */
    char       err[1024];
    bk_outputs io;
    bk_outputs_init(&io);
    int oi = -1, r = bk_outputs_input(&io, "A", pa, err, sizeof err);
    if (!r) r = bk_outputs_input(&io, "B", pb, err, sizeof err);
    if (!r && pm) r = bk_outputs_input(&io, "--mask", pm, err, sizeof err);
    if (!r && out && (r = oi = bk_outputs_add(&io, "-o", out, 0, err, sizeof err)) >= 0) r = 0;
    if (r) {
        fprintf(stderr, "baker: %s\n", err);
        bk_outputs_free(&io);
        return r == BK_OUT_CLASH ? 2 : 1;
    }

    float   *a = NULL, *b = NULL, *m = NULL, *d = NULL;
    uint8_t *mask = NULL;
    int      wa = 0, ha = 0, wb = 0, hb = 0, wm = 0, hm = 0, rc = 1;
    if (bk_image_read(pa, &a, &wa, &ha, err, sizeof err) || bk_image_read(pb, &b, &wb, &hb, err, sizeof err) ||
        (pm && bk_image_read(pm, &m, &wm, &hm, err, sizeof err))) {
        fprintf(stderr, "baker diff: %s\n", err);
        goto done;
    }
    if (wa != wb || ha != hb) {
        fprintf(stderr, "baker diff: %s is %dx%d but %s is %dx%d: the sizes must match\n", pa, wa, ha, pb, wb, hb);
        goto done;
    }
    size_t n = (size_t)wa * ha;
    if (pm) {
        if (wm != wa || hm != ha) {
            fprintf(stderr, "baker diff: --mask %s is %dx%d but %s and %s are %dx%d: the sizes must match\n", pm, wm,
                    hm, pa, pb, wa, ha);
            goto done;
        }
        if (!(mask = calloc(n, 1))) {
            fprintf(stderr, "baker diff: out of memory\n");
            goto done;
        }
        for (size_t i = 0; i < n; ++i) mask[i] = m[3 * i] != 0 || m[3 * i + 1] != 0 || m[3 * i + 2] != 0;
    }
    bk_diff_stats st;
    bk_diff_compute(a, b, mask, wa, ha, exposure, &st);
    if (!st.covered) {
        fprintf(stderr, "baker diff: %s and %s: no covered texels (%s): nothing to compare\n", pa, pb,
                pm ? "the mask is zero everywhere" : "both are black everywhere");
        goto done;
    }
    if (out) {
        FILE *f;
        if (!(d = malloc(sizeof(float) * 3 * n))) {
            fprintf(stderr, "baker diff: out of memory\n");
            goto done;
        }
        bk_diff_image(a, b, mask, wa, ha, exposure, d);
        float scale = st.max_abs > 0 ? (float)(1.0 / st.max_abs) : 1.0f; /* .png only: white = the largest */
        if (!(f = bk_outputs_open(&io, oi, err, sizeof err)) ||
            bk_image_write_file(f, out, d, wa, ha, scale, err, sizeof err) ||
            bk_outputs_close(&io, oi, err, sizeof err)) {
            fprintf(stderr, "baker diff: %s\n", err);
            goto done;
        }
    }
    const char *rule = pm ? "mask non-zero" : "A or B non-zero";
    if (c.json) print_json(&c, wa, ha, &st, rule);
    else print_text(&c, wa, ha, &st, rule);
    /* the image replaces -o only once the report is out too (the commit checks standard output) */
    if (bk_outputs_commit(&io, err, sizeof err)) {
        fprintf(stderr, "baker diff: %s\n", err);
        goto done;
    }
    rc = 0;
done:
    bk_outputs_free(&io);
    free(a);
    free(b);
    free(m);
    free(mask);
    free(d);
    return rc;
}
