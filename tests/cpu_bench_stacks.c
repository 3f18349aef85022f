/* cpu_bench_stacks.c - a smoke test of `baker bench stacks` on the CPU backend (CI has no GPU): the
 * real program on the demo scene, then its CSV and SVG are checked. Times are never checked.
 *
 * - The CSV has one row per accel x stack strategy x register cap (2 x 3 x 3) with the same number
 *   of fields as its header; uncapped rows ran ("ok", rays > 0, no texel unlike the reference);
 *   capped rows say "n/a: ..." (a register cap is a GPU kernel's, the CPU backend refuses it).
 * - The SVG starts with <svg, ends with </svg>, and its tags nest (a small well-formedness check:
 *   every opened element is closed in order; no parser needed).
 */
#include "bk_test.h"

#include <ctype.h>

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

static void check_svg(const char *path)
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
    BK_EXPECTF(strstr(t, "n/a") != NULL, "the capped bars are not marked n/a");
    free(t);
}

int main(void)
{
    char csv[256], svg[256], cmd[2048];
    snprintf(csv, sizeof csv, "/tmp/bk_bench_stacks_%d.csv", (int)getpid());
    snprintf(svg, sizeof svg, "/tmp/bk_bench_stacks_%d.svg", (int)getpid());
    snprintf(cmd, sizeof cmd,
             "'%s' bench stacks '%s/scenes/cornell.obj' --backend cpu --size 64 --spp 1 --reps 1 "
             "--csv '%s' --svg '%s'",
             BK_BAKER, BK_SOURCE_DIR, csv, svg);
    BK_EXPECTF(system(cmd) == 0, "%s failed", cmd);
    check_csv(csv);
    check_svg(svg);
    remove(csv);
    remove(svg);
    BK_TEST_DONE();
}
