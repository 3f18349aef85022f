/* cli.c - option parsing shared by baker's subcommands (see cli.h). */
#include "cli.h"
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The tracing options' setters: dst is a bk_cli_trace. */
static int set_accel(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    (void)opt;
    int type, layout;
    if (bk_accel_word_parse(v, 0, &type, &layout)) {
        char words[256];
        fprintf(stderr, "baker: --accel: expected %s, got '%s'\n", bk_accel_words(words, sizeof words, ", ", " or ", 0),
                v);
        return -1;
    }
    t->accel = type;
    if (type == BK_ACCEL_BVH) t->opts.bvh_width = layout;
    return 0;
}

static int set_stack(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    (void)opt;
    int m = bk_stack_mode_parse(v);
    if (m < 0) {
        char names[256];
        fprintf(stderr, "baker: --stack: expected %s, got '%s'\n",
                bk_stack_mode_names(names, sizeof names, ", ", " or "), v);
        return -1;
    }
    t->opts.stack_mode = m;
    return 0;
}

static int set_stack_size(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    uint64_t      u;
    if (bk_cli_u64(opt, v, 1, BK_STACK_ENTRIES, &u)) return -1;
    t->opts.stack_size = (int)u;
    return 0;
}

static int set_counters(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    (void)opt;
    int c = bk_counters_parse(v);
    if (c < 0) {
        char names[256];
        fprintf(stderr, "baker: --counters: expected %s, got '%s'\n",
                bk_counters_names(names, sizeof names, ", ", " or "), v);
        return -1;
    }
    t->opts.counters = c;
    return 0;
}

static int set_backend(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    (void)opt;
    if (!bk_backend_known(v)) {
        char names[256];
        fprintf(stderr, "baker: --backend: expected %s, got '%s'\n",
                bk_backend_names(names, sizeof names, ", ", " or "), v);
        return -1;
    }
    t->backend = v;
    return 0;
}

static int set_threads(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    uint64_t      u;
    if (bk_cli_u64(opt, v, 1, 1024, &u)) return -1;
    t->opts.threads = (int)u;
    return 0;
}

static int set_ray_order(void *dst, const char *opt, const char *v)
{
    bk_cli_trace *t = dst;
    (void)opt;
    if (!strcmp(v, "auto")) t->opts.ray_order = BK_RAY_ORDER_AUTO;
    else if (!strcmp(v, "sorted")) t->opts.ray_order = BK_RAY_ORDER_SORTED;
    else if (!strcmp(v, "binned")) t->opts.ray_order = BK_RAY_ORDER_BINNED;
    else if (!strcmp(v, "input")) t->opts.ray_order = BK_RAY_ORDER_INPUT;
    else {
        fprintf(stderr, "baker: --ray-order: expected auto, sorted, binned or input, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_any_hit(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((bk_cli_trace *)dst)->opts.any_hit = 1;
    return 0;
}
static int set_stats(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((bk_cli_trace *)dst)->stats = 1;
    return 0;
}

/* The choices of --stack, --counters and --backend, and --stack's help, from their lists
 * (BK_STACK_MODES, BK_COUNTER_MODES, the backend registry). */
static const char *accel_arg(void)
{
    static char buf[256];
    return bk_accel_words(buf, sizeof buf, "|", "|", 0);
}
static const char *stack_arg(void)
{
    static char buf[256];
    return bk_stack_mode_names(buf, sizeof buf, "|", "|");
}
static const char *counters_arg(void)
{
    static char buf[256];
    return bk_counters_names(buf, sizeof buf, "|", "|");
}
static const char *backend_arg(void)
{
    static char buf[256];
    return bk_backend_names(buf, sizeof buf, "|", "|");
}
/* printf into buf at *at, never past size (a full buffer keeps what fitted) */
static void add(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *at < size ? vsnprintf(buf + *at, size - *at, fmt, ap) : 0;
    va_end(ap);
    if (n > 0) *at = *at + (size_t)n < size ? *at + (size_t)n : size - 1;
}

/* A line per strategy, "  NAME  help", the names padded to the longest and the help's further
 * lines under its first. */
static const char *stack_help(void)
{
    static char buf[2048];
    int         w = 0;
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m) {
        int l = (int)strlen(bk_stack_mode_name(m));
        if (l > w) w = l;
    }
    size_t at = 0;
    add(buf, sizeof buf, &at,
        "where the traversal stack lives (default %s):", bk_stack_mode_name(bk_trace_opts_default().stack_mode));
    for (int m = 0; m < BK_STACK_MODE_COUNT; ++m) {
        add(buf, sizeof buf, &at, "\n  %-*s  ", w, bk_stack_mode_name(m));
        for (const char *p = bk_stack_mode_about(m); *p; ++p) {
            if (*p == '\n') add(buf, sizeof buf, &at, "\n%*s", w + 4, "");
            else add(buf, sizeof buf, &at, "%c", *p);
        }
    }
    return buf;
}

const bk_cli_opt bk_cli_trace_opts[] = {
    { .name = "--accel",
      .arg_of = accel_arg,
      .set = set_accel,
      .help = "acceleration structure (default bvh: each backend traces its\n"
              "fastest layout of the BVH, the cpu an 8-wide BVH with SIMD, the\n"
              "cuda the binary one; bvh2 keeps the binary layout, cwbvh traces\n"
              "a compressed 8-wide one on either backend; all give the same hits)" },
    { .name = "--stack", .arg_of = stack_arg, .set = set_stack, .help_of = stack_help },
    { .name = "--stack-size",
      .arg = "K",
      .set = set_stack_size,
      .help = "entries of the short/spill stack, 1..64 (default 8)" },
    { .name = "--counters",
      .arg_of = counters_arg,
      .set = set_counters,
      .help = "CUDA atomics for the work and statistics counters: one per\n"
              "thread, one per warp (ballot + popc) or one per block (default warp)" },
    { .name = "--backend",
      .arg_of = backend_arg,
      .set = set_backend,
      .help = "where to trace (default auto: the GPU when one is usable)" },
    { .name = "--threads", .arg = "N", .set = set_threads, .help = "cpu backend: worker threads (default: all cores)" },
    { .name = "--ray-order",
      .arg = "auto|sorted|binned|input",
      .set = set_ray_order,
      .help = "in what order the rays are traced: sorted by direction octant,\n"
              "then origin along a Morton curve, so that neighbouring threads\n"
              "run alike (the sort counts in the trace time; hits come back in\n"
              "the file's order); binned: by the same key's top 16 bits (a\n"
              "coarser grid, a cheaper sort); or as they come (input). Default\n"
              "auto: on the cuda backend input for fewer than 64k rays or rays\n"
              "already coherent in the file (most sampled neighbours share a\n"
              "coarse bin), else binned; on the cpu input, where a sort pays\n"
              "no more than it costs. A bake's auto is input; sorted bins each\n"
              "wave's rays (GPU wavefront; --bin-rays on also sorts the texels)" },
    { .name = "--any-hit", .set = set_any_hit, .help = "occlusion query: stop at the first hit found" },
    { .name = "--stats",
      .set = set_stats,
      .help = "print the traversal counters (nodes, triangles, restarts, spills)" },
    { 0 },
};

void bk_cli_trace_help(FILE *f) { bk_cli_table_help(f, bk_cli_trace_opts); }

static int table_end(const bk_cli_opt *o) { return !o->name && !o->help && !o->sub; }

int bk_cli_table_option(const bk_cli_opt *tab, void *dst, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *v = NULL;
    for (const bk_cli_opt *o = tab; !table_end(o); ++o) {
        if (o->sub) {
            int r = bk_cli_table_option(o->sub, (char *)dst + o->sub_offset, argc, argv, i);
            if (r) return r;
            continue;
        }
        if (!o->name || !o->set || (strcmp(a, o->name) && !(o->alias && !strcmp(a, o->alias)))) continue;
        if ((o->arg || o->arg_of) && bk_cli_value(argc, argv, i, &v)) return -1;
        return o->set(dst, a, v) ? -1 : 1;
    }
    return 0;
}

void bk_cli_table_help(FILE *f, const bk_cli_opt *tab) { bk_cli_table_help_col(f, tab, 27); }

void bk_cli_table_help_col(FILE *f, const bk_cli_opt *tab, int col)
{
    for (const bk_cli_opt *o = tab; !table_end(o); ++o) {
        if (o->sub) {
            bk_cli_table_help_col(f, o->sub, col);
            continue;
        }
        if (!o->name) {
            fputs(o->help, f);
            continue;
        }
        const char *help = o->help_of ? o->help_of() : o->help;
        const char *arg = o->arg_of ? o->arg_of() : o->arg;
        if (!help) continue; /* parsed, not shown */
        char left[256];
        int  n = snprintf(left, sizeof left, "  %s%s%s", o->name, arg ? " " : "", arg ? arg : "");
        if (n < col) fprintf(f, "%-*s", col, left);
        else fprintf(f, "%s\n%*s", left, col, "");
        for (const char *p = help; *p; ++p) {
            fputc(*p, f);
            if (*p == '\n') fprintf(f, "%*s", col, "");
        }
        fputc('\n', f);
    }
}

void bk_cli_trace_default(bk_cli_trace *t)
{
    memset(t, 0, sizeof *t);
    t->backend = "auto";
    t->accel = BK_ACCEL_BVH;
    t->opts = bk_trace_opts_default();
}

int bk_cli_value(int argc, char **argv, int *i, const char **val)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "baker: %s needs a value\n", argv[*i]);
        return -1;
    }
    *val = argv[++*i];
    return 0;
}

const char *bk_cli_unknown(const char *opt, const char *help, char *buf, size_t n)
{
    if (access(opt, F_OK) == 0)
        snprintf(buf, n, "unknown option '%s' (see %s); to name the file %s, write ./%s or put -- before it", opt, help,
                 opt, opt);
    else snprintf(buf, n, "unknown option '%s' (see %s)", opt, help);
    bk_escape_controls(buf, n);
    return buf;
}

int bk_cli_f64(const char *opt, const char *val, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || !end || *end || end == val || !(v >= min && v <= max)) {
        fprintf(stderr, "baker: %s: expected a number from %g to %g, got '%s'\n", opt, min, max, val);
        return -1;
    }
    *out = v;
    return 0;
}

int bk_cli_u64(const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || !end || *end || val[0] == '-' || val[0] == 0) {
        /* accept 4M / 64k shorthands */
        if (!errno && end && end != val && (end[0] == 'k' || end[0] == 'K' || end[0] == 'M' || end[0] == 'G') &&
            !end[1]) {
            v *= end[0] == 'G' ? 1000000000ull : end[0] == 'M' ? 1000000ull : 1000ull;
        } else {
            fprintf(stderr, "baker: %s: expected a whole number, got '%s'\n", opt, val);
            return -1;
        }
    }
    if (v < min || v > max) {
        fprintf(stderr, "baker: %s: %llu is out of range (%llu..%llu)\n", opt, v, (unsigned long long)min,
                (unsigned long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int bk_cli_trace_option(bk_cli_trace *t, int argc, char **argv, int *i)
{
    return bk_cli_table_option(bk_cli_trace_opts, t, argc, argv, i);
}
