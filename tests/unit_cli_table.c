/* unit_cli_table.c - the option tables of cli.h: one table makes both the parser (names, aliases,
 * values, flags, included tables at their offset, errors) and the help (text rows as they are,
 * names padded to the text's column or alone on their line, continuation lines indented, rows
 * without help not shown). */
#include "bk_test.h"
#include "cli.h"

#include <stddef.h>

typedef struct inner {
    int         flag;
    const char *name;
} inner;
typedef struct outer {
    int   size;
    int   quiet;
    inner in;
} outer;

static int set_size(void *dst, const char *opt, const char *v)
{
    uint64_t u;
    if (bk_cli_u64(opt, v, 1, 100, &u)) return -1;
    ((outer *)dst)->size = (int)u;
    return 0;
}
static int set_quiet(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((outer *)dst)->quiet = 1;
    return 0;
}
static int set_flag(void *dst, const char *opt, const char *v)
{
    (void)opt;
    (void)v;
    ((inner *)dst)->flag = 1;
    return 0;
}
static int set_name(void *dst, const char *opt, const char *v)
{
    (void)opt;
    ((inner *)dst)->name = v;
    return 0;
}

static const bk_cli_opt inner_opts[] = {
    { .name = "--flag", .set = set_flag, .help = "a flag" },
    { .name = "--name", .arg = "a-rather-long-argument", .set = set_name, .help = "on its own line" },
    { 0 },
};

static const bk_cli_opt outer_opts[] = {
    { .help = "usage: t [options]\n" },
    { .name = "--size", .alias = "-s", .arg = "N", .set = set_size, .help = "the size\nand a second line" },
    { .name = "--quiet", .set = set_quiet, .help = "no words" },
    { .name = "--hidden", .arg = "X", .set = set_size },
    { .sub = inner_opts, .sub_offset = offsetof(outer, in) },
    { .help = "end\n" },
    { 0 },
};

/* Parses argv (argc of them) from index 0; returns what bk_cli_table_option said and *i after. */
static int parse1(outer *o, int argc, char **argv, int *i)
{
    *i = 0;
    return bk_cli_table_option(outer_opts, o, argc, argv, i);
}

int main(void)
{
    outer o;
    int   i;
    memset(&o, 0, sizeof o);
    char *a1[] = { "--size", "7" }, *a2[] = { "-s", "9" }, *a3[] = { "--quiet" }, *a4[] = { "--flag" };
    char *a5[] = { "--name", "x" }, *a6[] = { "--nope" }, *a7[] = { "--size" }, *a8[] = { "--size", "1000" };
    char *a9[] = { "--hidden", "3" };
    BK_EXPECT(parse1(&o, 2, a1, &i) == 1 && i == 1 && o.size == 7);
    BK_EXPECT(parse1(&o, 2, a2, &i) == 1 && i == 1 && o.size == 9);  /* the alias */
    BK_EXPECT(parse1(&o, 1, a3, &i) == 1 && i == 0 && o.quiet == 1); /* a flag takes no value */
    BK_EXPECT(parse1(&o, 1, a4, &i) == 1 && o.in.flag == 1);         /* the included table, at its offset */
    BK_EXPECT(parse1(&o, 2, a5, &i) == 1 && o.in.name && !strcmp(o.in.name, "x"));
    BK_EXPECT(parse1(&o, 1, a6, &i) == 0 && i == 0);       /* not an option of the table */
    BK_EXPECT(parse1(&o, 1, a7, &i) == -1);                /* no value */
    BK_EXPECT(parse1(&o, 2, a8, &i) == -1 && o.size == 9); /* the setter refuses it */
    BK_EXPECT(parse1(&o, 2, a9, &i) == 1 && o.size == 3);  /* hidden rows still parse */

    char  *text = NULL;
    size_t len = 0;
    FILE  *f = open_memstream(&text, &len);
    BK_EXPECT(f != NULL);
    if (f) {
        bk_cli_table_help(f, outer_opts);
        fclose(f);
        const char *want = "usage: t [options]\n"
                           "  --size N                 the size\n"
                           "                           and a second line\n"
                           "  --quiet                  no words\n"
                           "  --flag                   a flag\n"
                           "  --name a-rather-long-argument\n"
                           "                           on its own line\n"
                           "end\n";
        BK_EXPECTF(text && !strcmp(text, want), "got:\n%s", text ? text : "(null)");
        free(text);
    }
    text = NULL;
    f = open_memstream(&text, &len);
    if (f) {
        bk_cli_table_help_col(f, inner_opts, 10);
        fclose(f);
        BK_EXPECTF(text &&
                       !strcmp(text, "  --flag  a flag\n  --name a-rather-long-argument\n          on its own line\n"),
                   "got:\n%s", text ? text : "(null)");
        free(text);
    }
    BK_TEST_DONE();
}
