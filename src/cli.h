/* cli.h - option parsing shared by baker's subcommands: strict numbers, named enums, and one
 * error line that names the offending argument. */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stdint.h>
#include "backend.h"
#include "accel.h"

/* The options every tracing command takes. */
typedef struct bk_cli_trace {
    const char   *backend;    /* cpu | cuda | auto */
    int           accel;      /* enum bk_accel_type */
    bk_trace_opts opts;
    int           stats;      /* print counter totals */
} bk_cli_trace;

void bk_cli_trace_default(bk_cli_trace *t);
/* If argv[*i] is one of the tracing options, consumes it (and its value) and returns 1; returns
 * -1 after printing an error for a bad value; 0 when the argument is not a tracing option. */
int  bk_cli_trace_option(bk_cli_trace *t, int argc, char **argv, int *i);
/* Help text for those options. */
extern const char bk_cli_trace_help[];

/* Parse helpers: print "baker: OPTION: ..." and return -1 on a bad value. */
int bk_cli_u64(const char *opt, const char *val, uint64_t min, uint64_t max, uint64_t *out);
int bk_cli_value(int argc, char **argv, int *i, const char **val);   /* the value after argv[*i] */
/* The message for an unknown option opt ("unknown option 'opt' (see HELP)"); when a file of that
 * name exists, it also says how to name it as a file: ./opt, or after --. Returns buf. */
const char *bk_cli_unknown(const char *opt, const char *help, char *buf, size_t n);

#endif
