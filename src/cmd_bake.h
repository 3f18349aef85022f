/* cmd_bake.h - `baker SCENE -o lightmap.png`: the bake command (cmd_bake.c). */
#ifndef BK_CMD_BAKE_H
#define BK_CMD_BAKE_H

/* printf format: takes bk_cli_trace_help as its one argument */
extern const char bk_bake_usage[];
/* argv: everything after the program name. Returns the exit status. */
int bk_cmd_bake(int argc, char **argv);

#endif
