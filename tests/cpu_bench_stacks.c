/* cpu_bench_stacks.c - a smoke test of `baker bench stacks` on the CPU backend (CI has no GPU): the
 * real program on the demo scene, then its CSV and SVG are checked. Times are never checked.
 *
 * - The CSV has one row per accel x stack strategy x register cap (2 x 3 x 3) with the same number
 *   of fields as its header; uncapped rows ran ("ok", rays > 0, no texel unlike the reference);
 *   capped rows say "n/a: ..." (a register cap is a GPU kernel's, the CPU backend refuses it).
 * - The SVG starts with <svg, ends with </svg>, and its tags nest (a small well-formedness check:
 *   every opened element is closed in order; no parser needed).
 * - The plot fits its canvas: every rectangle and line inside it, every text's extent (0.6 em a
 *   character, what the layout allows) too; the legend names every stack x cap series of the
 *   CSV; no <pattern> or opacity (rasterizers drew those as solid black).
 * - --plot FILE.png decodes (stb_image), is twice the SVG's size, white at the edges (nothing
 *   runs off), and shows each stack's colour and its hatch lines (half as bright), not black.
 * - The same for `--from-csv docs/bench/stacks_world54k.csv` (the 9-series legend that once ran
 *   off the canvas), and where rsvg-convert or ImageMagick's convert is installed, the SVG
 *   rasterized by them shows the hatched bars' colour too.
 */
#include "bk_test.h"
#include "bk_test_stb_image.h"

#include <ctype.h>
#include <sys/wait.h>

/* Fields of one CSV line (no quoted newlines in ours), quotes honoured. */
static int split_csv(char *line, char **field, int max)
{
    int   n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *w = ++p;
            field[n++] = w;
            for (; *p; ++p) {
                if (*p == '"' && p[1] == '"') {
                    *w++ = '"';
                    ++p;
                } else if (*p == '"') {
                    ++p;
                    break;
                } else *w++ = *p;
            }
            *w = 0;
            if (*p == ',') {
                ++p;
                continue;
            }
            break;
        }
        field[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int column(char **head, int n, const char *name)
{
    for (int i = 0; i < n; ++i)
        if (!strcmp(head[i], name)) return i;
    return -1;
}

static void check_csv(const char *path)
{
    size_t len;
    char  *text = bk_test_slurp(path, &len);
    BK_EXPECTF(text, "cannot read %s", path);
    if (!text) return;
    char *lines[64], *save = NULL;
    int   nl = 0;
    for (char *l = strtok_r(text, "\n", &save); l && nl < 64; l = strtok_r(NULL, "\n", &save)) lines[nl++] = l;
    BK_EXPECTF(nl == 1 + 2 * 3 * 3, "%d lines in the CSV, expected a header and 18 rows", nl);
    char *head[64];
    int   nh = nl ? split_csv(lines[0], head, 64) : 0;
    int   c_accel = column(head, nh, "accel"), c_stack = column(head, nh, "stack"), c_cap = column(head, nh, "reg_cap"),
        c_status = column(head, nh, "status"), c_rays = column(head, nh, "rays"),
        c_diff = column(head, nh, "texels_differ");
    BK_EXPECTF(c_accel >= 0 && c_stack >= 0 && c_cap >= 0 && c_status >= 0 && c_rays >= 0 && c_diff >= 0,
               "a column is missing from the header");
    if (c_accel < 0 || c_stack < 0 || c_cap < 0 || c_status < 0 || c_rays < 0 || c_diff < 0) {
        free(text);
        return;
    }
    int seen[2][3][3];
    memset(seen, 0, sizeof seen);
    for (int i = 1; i < nl; ++i) {
        char *f[64];
        int   nf = split_csv(lines[i], f, 64);
        BK_EXPECTF(nf == nh, "row %d has %d fields, the header %d", i, nf, nh);
        if (nf != nh) continue;
        int a = !strcmp(f[c_accel], "bvh") ? 0 : !strcmp(f[c_accel], "kdtree") ? 1 : -1;
        int s = !strcmp(f[c_stack], "global")  ? 0
                : !strcmp(f[c_stack], "short") ? 1
                : !strcmp(f[c_stack], "spill") ? 2
                                               : -1;
        int k = !strcmp(f[c_cap], "0") ? 0 : !strcmp(f[c_cap], "32") ? 1 : !strcmp(f[c_cap], "48") ? 2 : -1;
        BK_EXPECTF(a >= 0 && s >= 0 && k >= 0, "row %d: unexpected accel/stack/cap '%s' '%s' '%s'", i, f[c_accel],
                   f[c_stack], f[c_cap]);
        if (a < 0 || s < 0 || k < 0) continue;
        seen[a][s][k]++;
        if (k == 0) {
            BK_EXPECTF(!strcmp(f[c_status], "ok"), "row %d: status '%s'", i, f[c_status]);
            BK_EXPECTF(strtoull(f[c_rays], NULL, 10) > 0, "row %d: no rays", i);
            BK_EXPECTF(!strcmp(f[c_diff], "0"), "row %d: %s texels unlike the global-stack bake", i, f[c_diff]);
        } else {
            BK_EXPECTF(!strncmp(f[c_status], "n/a", 3), "row %d: a capped row on the CPU says '%s'", i, f[c_status]);
        }
    }
    for (int a = 0; a < 2; ++a)
        for (int s = 0; s < 3; ++s)
            for (int k = 0; k < 3; ++k)
                BK_EXPECTF(seen[a][s][k] == 1, "accel %d stack %d cap %d: %d rows", a, s, k, seen[a][s][k]);
    free(text);
}

/* The number of attribute name="..." in the tag starting at p (before its '>'), or def. */
static double attr(const char *p, const char *name, double def)
{
    const char *end = strchr(p, '>');
    char        pat[40];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *a = strstr(p, pat);
    return a && end && a < end ? atof(a + strlen(pat)) : def;
}

/* Every element inside the canvas; every series of the CSV in the legend. */
static void check_fit(const char *svg, const char *csv_path, int *w_out, int *h_out)
{
    const char *root = strstr(svg, "<svg");
    double      W = root ? attr(root, "width", -1) : -1, H = root ? attr(root, "height", -1) : -1;
    *w_out = (int)W;
    *h_out = (int)H;
    BK_EXPECTF(W > 0 && H > 0, "no width and height on <svg>");
    BK_EXPECTF(!strstr(svg, "<pattern") && !strstr(svg, "opacity"), "a pattern or an opacity in the SVG");
    int bad = 0, texts = 0;
    for (const char *p = strchr(svg + 1, '<'); p && bad < 5; p = strchr(p + 1, '<')) {
        double x0, x1, y0, y1;
        if (!strncmp(p, "<rect ", 6)) {
            x0 = attr(p, "x", 0), y0 = attr(p, "y", 0);
            x1 = x0 + attr(p, "width", 0), y1 = y0 + attr(p, "height", 0);
        } else if (!strncmp(p, "<line ", 6)) {
            x0 = attr(p, "x1", 0), x1 = attr(p, "x2", 0), y0 = attr(p, "y1", 0), y1 = attr(p, "y2", 0);
        } else if (!strncmp(p, "<text ", 6) && !strstr(p, "<text transform")) {
            const char *gt = strchr(p, '>'), *lt = gt ? strchr(gt, '<') : NULL;
            if (!gt || !lt) continue;
            double      size = attr(p, "font-size", 12), len = 0.6 * size * (double)(lt - gt - 1), x = attr(p, "x", 0);
            const char *anchor = strstr(p, "text-anchor=\"");
            int         mid = anchor && anchor < gt && !strncmp(anchor + 13, "middle", 6),
                end = anchor && anchor < gt && !strncmp(anchor + 13, "end", 3);
            x0 = mid ? x - len / 2 : end ? x - len : x;
            x1 = x0 + len;
            y0 = attr(p, "y", 0) - size;
            y1 = attr(p, "y", 0);
            texts++;
        } else continue;
        if (x0 < 0 || y0 < 0 || x1 > W || y1 > H) {
            BK_EXPECTF(0, "outside the %gx%g canvas (x %g..%g, y %g..%g): %.80s", W, H, x0, x1, y0, y1, p);
            bad++;
        }
    }
    BK_EXPECTF(texts > 10, "%d texts", texts);
    /* the legend: "STACK, cap CAP" for each (stack, cap) of the CSV */
    size_t len;
    char  *text = bk_test_slurp(csv_path, &len), *save = NULL, *f[64];
    BK_EXPECTF(text, "cannot read %s", csv_path);
    if (!text) return;
    int c_stack = -1, c_cap = -1, series = 0;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        int nf = split_csv(l, f, 64);
        if (c_stack < 0) {
            c_stack = column(f, nf, "stack");
            c_cap = column(f, nf, "reg_cap");
            if (c_stack < 0 || c_cap < 0) break;
            continue;
        }
        if (nf <= c_stack || nf <= c_cap) continue;
        char want[96];
        snprintf(want, sizeof want, ">%s, cap %s</text>", f[c_stack], strcmp(f[c_cap], "0") ? f[c_cap] : "none");
        BK_EXPECTF(strstr(svg, want) != NULL, "the legend has no '%s'", want);
        series++;
    }
    BK_EXPECTF(series > 0, "no rows in %s", csv_path);
    free(text);
}

/* The colour of pixel (x, y) as 0xRRGGBB. */
static uint32_t pixel(const unsigned char *px, int w, int x, int y)
{
    const unsigned char *q = px + 3 * ((size_t)y * (size_t)w + (size_t)x);
    return (uint32_t)q[0] << 16 | (uint32_t)q[1] << 8 | q[2];
}

static int near(uint32_t a, uint32_t b, int tol)
{
    for (int s = 0; s < 24; s += 8) {
        int d = (int)(a >> s & 0xff) - (int)(b >> s & 0xff);
        if (d > tol || d < -tol) return 0;
    }
    return 1;
}

/* A raster of the plot (ours or a rasterizer's): w x h (scale times the SVG's), the stacks'
 * colours and their hatch lines present and dark pixels rare; with edges white when strict. */
static void check_raster(const char *png, int w, int h, int scale, int exact, int strict, int hatched)
{
    int            pw, ph, comp;
    unsigned char *px = stbi_load(png, &pw, &ph, &comp, 3);
    BK_EXPECTF(px, "%s does not decode: %s", png, stbi_failure_reason());
    if (!px) return;
    BK_EXPECTF(pw == w * scale && ph == h * scale, "%s is %dx%d, expected %dx%d", png, pw, ph, w * scale, h * scale);
    if (pw != w * scale || ph != h * scale) {
        stbi_image_free(px);
        return;
    }
    static const uint32_t colour[3] = { 0x4e79a7, 0xf28e2b, 0x59a14f }, hatch[3] = { 0x273c53, 0x794715, 0x2c5027 };
    uint64_t              nc[3] = { 0 }, nh[3] = { 0 }, black = 0, edge = 0, tol = exact ? 0 : 24;
    for (int y = 0; y < ph; ++y)
        for (int x = 0; x < pw; ++x) {
            uint32_t c = pixel(px, pw, x, y);
            for (int k = 0; k < 3; ++k) {
                nc[k] += (uint64_t)near(c, colour[k], (int)tol);
                nh[k] += (uint64_t)near(c, hatch[k], (int)tol + 16);
            }
            black += (uint64_t)near(c, 0, 40);
            /* the right margin (20 px) and the bottom 4 px hold nothing */
            if (x >= pw - 16 * scale || y >= ph - 4 * scale) edge += c != 0xffffff;
        }
    for (int k = 0; k < 3; ++k) {
        BK_EXPECTF(nc[k] > 100, "%s: %llu pixels of the colour %06x", png, (unsigned long long)nc[k], colour[k]);
        if (hatched)
            BK_EXPECTF(nh[k] > 100, "%s: %llu pixels of hatching %06x", png, (unsigned long long)nh[k], hatch[k]);
    }
    BK_EXPECTF(black < (uint64_t)pw * ph / 10, "%s: %llu of %d pixels black", png, (unsigned long long)black, pw * ph);
    if (strict) BK_EXPECTF(edge == 0, "%s: %llu pixels drawn in the margins", png, (unsigned long long)edge);
    stbi_image_free(px);
}

/* The plots of one run: the SVG's checks, its fit, our PNG, and outside rasterizers if present. */
static void check_plots(const char *svg, const char *png, const char *csv)
{
    size_t len;
    char  *t = bk_test_slurp(svg, &len);
    BK_EXPECTF(t, "cannot read %s", svg);
    if (!t) return;
    int w = 0, h = 0;
    check_fit(t, csv, &w, &h);
    free(t);
    if (w <= 0 || h <= 0) return;
    check_raster(png, w, h, 2, 1, 1, 1);
    static const char *const tools[2][2] = { { "rsvg-convert", "rsvg-convert '%s' -o '%s'" },
                                             { "convert", "convert '%s' '%s'" } };
    for (int k = 0; k < 2; ++k) {
        char cmd[1024], out[300];
        snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tools[k][0]);
        if (system(cmd) != 0) {
            printf("note: %s is not installed, not checked\n", tools[k][0]);
            continue;
        }
        snprintf(out, sizeof out, "%s.%s.png", svg, tools[k][0]);
        snprintf(cmd, sizeof cmd, tools[k][1], svg, out);
        BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
        check_raster(out, w, h, 1, 0, 0, 1); /* their anti-aliasing and fonts: loose */
        remove(out);
    }
}

static void check_svg(const char *path, int cpu)
{
    size_t len;
    char  *t = bk_test_slurp(path, &len);
    BK_EXPECTF(t, "cannot read %s", path);
    if (!t) return;
    while (len && isspace((unsigned char)t[len - 1])) t[--len] = 0;
    BK_EXPECTF(!strncmp(t, "<svg", 4), "the SVG starts with '%.20s'", t);
    BK_EXPECTF(len >= 6 && !strcmp(t + len - 6, "</svg>"), "the SVG does not end with </svg>");
    /* tags nest: a stack of open element names */
    char stack[64][32];
    int  depth = 0, ok = 1, elements = 0;
    for (char *p = strchr(t, '<'); p && ok; p = strchr(p + 1, '<')) {
        char *end = strchr(p, '>');
        if (!end) {
            ok = 0;
            break;
        }
        int         closing = p[1] == '/', self = end[-1] == '/';
        const char *name = p + 1 + closing;
        size_t      nlen = strcspn(name, " \t\n/>");
        if (nlen == 0 || nlen >= 32) {
            ok = 0;
            break;
        }
        if (closing) {
            ok = depth > 0 && strlen(stack[depth - 1]) == nlen && !strncmp(stack[depth - 1], name, nlen);
            depth--;
        } else if (!self) {
            if (depth == 64) {
                ok = 0;
                break;
            }
            memcpy(stack[depth], name, nlen);
            stack[depth++][nlen] = 0;
        }
        elements += !closing;
        p = end;
    }
    BK_EXPECTF(ok && depth == 0, "the SVG's tags do not nest (depth %d at the end)", depth);
    BK_EXPECTF(elements > 20, "only %d elements in the SVG", elements);
    if (cpu) BK_EXPECTF(strstr(t, "n/a") != NULL, "the capped bars are not marked n/a");
    free(t);
}

int main(void)
{
    char csv[256], svg[256], png[256], cmd[2048];
    snprintf(csv, sizeof csv, "/tmp/bk_bench_stacks_%d.csv", (int)getpid());
    snprintf(svg, sizeof svg, "/tmp/bk_bench_stacks_%d.svg", (int)getpid());
    snprintf(png, sizeof png, "/tmp/bk_bench_stacks_%d.png", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "'%s' bench stacks '%s/scenes/cornell.obj' --backend cpu --size 64 --spp 1 --reps 1 "
             "--csv '%s' --svg '%s' --plot '%s'",
             BK_BAKER, BK_SOURCE_DIR, csv, svg, png);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    check_csv(csv);
    check_svg(svg, 1);
    /* the CPU run has only the uncapped bars: the colours, not the hatching, are checked there */
    size_t len;
    char  *t = bk_test_slurp(svg, &len);
    if (t) {
        int w, h;
        check_fit(t, csv, &w, &h);
        free(t);
        if (w > 0 && h > 0) check_raster(png, w, h, 2, 1, 1, 0);
    }
    remove(csv);
    remove(svg);
    remove(png);

    /* re-plotted from the GPU run's CSV in docs/bench: 3 stacks x 3 caps */
    char docs_csv[512];
    snprintf(docs_csv, sizeof docs_csv, "%s/docs/bench/stacks_world54k.csv", BK_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "'%s' bench stacks --from-csv '%s' --plot '%s' --plot '%s'", BK_BAKER, docs_csv, svg,
             png);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    check_svg(svg, 0);
    check_plots(svg, png, docs_csv);
    remove(svg);
    remove(png);

    /* bad input: a file that is not such a CSV is one line and exit 1; no output is left */
    snprintf(cmd, sizeof cmd, "'%s' bench stacks --from-csv '%s/scenes/cornell.obj' --plot '%s' 2>/dev/null", BK_BAKER,
             BK_SOURCE_DIR, svg);
    int st = system(cmd);
    BK_EXPECTF(WIFEXITED(st) && WEXITSTATUS(st) == 1, "an OBJ as --from-csv: status %d", st);
    BK_EXPECTF(access(svg, F_OK) != 0, "a failed re-plot left %s", svg);
    BK_TEST_DONE();
}
