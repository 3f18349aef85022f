/* cli.h - option parsing shared by baker's subcommands: strict numbers, named enums, and one
 * error line that names the offending argument. */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "backend.h"
#include "accel.h"

/* One row of a command's option table, from which both its --help and its parser are made. A
 * row with a name is an option; one without is a line of help text (a section title, a note),
 * printed as it is, or (sub) another table included at that place, whose rows set the field at
 * sub_offset of the command's options. A row of zeros ends the table. */
typedef struct bk_cli_opt {
    const char *name;  /* as --help shows it, e.g. "--size"; NULL: text or sub */
    const char *alias; /* another name the parser takes, not shown (e.g. "--output"), or NULL */
    const char *arg;   /* the value's name in the help ("N"); NULL: a flag, no value */
    const char *help;  /* the option's text, lines apart by '\n', each printed from column 27;
                          NULL: parsed but not shown */
    int (*set)(void *dst, const char *opt, const char *val); /* opt as written, val NULL for a flag;
                                                                 0, or -1 after printing why. NULL:
                                                                 help only (parsed elsewhere) */
    /* Instead of arg / help: text made when the help is printed (from a list such as
     * BK_STACK_MODES or the backend registry); a row with arg_of takes a value. */
    const char *(*arg_of)(void);
    const char *(*help_of)(void);
    const struct bk_cli_opt *sub;
    size_t                   sub_offset;
} bk_cli_opt;

/* If argv[*i] is an option of table tab, consumes it (and its value), sets it in dst and returns
 * 1; -1 after printing an error; 0 when the table has no such option. */
int bk_cli_table_option(const bk_cli_opt *tab, void *dst, int argc, char **argv, int *i);
/* The table's help: "  NAME ARG" padded to column 27 (or alone on its line when longer), then
 * the text. */
void bk_cli_table_help(FILE *f, const bk_cli_opt *tab);
/* The same with the text from column col (a command whose help has narrower names). */
void bk_cli_table_help_col(FILE *f, const bk_cli_opt *tab, int col);

/* The options every tracing command takes. */
typedef struct bk_cli_trace {
    const char   *backend; /* cpu | cuda | auto */
    int           accel;   /* enum bk_accel_type */
    bk_trace_opts opts;
    int           stats; /* print counter totals */
} bk_cli_trace;

void bk_cli_trace_default(bk_cli_trace *t);
/* If argv[*i] is one of the tracing options, consumes it (and its value) and returns 1; returns
 * -1 after printing an error for a bad value; 0 when the argument is not a tracing option. */
int bk_cli_trace_option(bk_cli_trace *t, int argc, char **argv, int *i);
/* Their table, and the help made from it. */
extern const bk_cli_opt bk_cli_trace_opts[];
void                    bk_cli_trace_help(FILE *f);

/* Parse helpers: print "baker: OPTION: ..." and return -1 on a bad value. */
int bk_cli_u64(const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out);
int bk_cli_f64(const char *opt, const char *val, double min, double max, double *out); /* min <= v <= max */
int bk_cli_value(int argc, char **argv, int *i, const char **val);                     /* the value after argv[*i] */
/* The message for an unknown option opt ("unknown option 'opt' (see HELP)"); when a file of that
 * name exists, it also says how to name it as a file: ./opt, or after --. Returns buf. */
const char *bk_cli_unknown(const char *opt, const char *help, char *buf, size_t n);

#endif
