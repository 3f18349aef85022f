/* cmd_view.h - `baker view SCENE... --lightmap LM -o view.png`: a baked scene seen from a camera
 * (cmd_view.c over src/bake/view.h). */
#ifndef BK_CMD_VIEW_H
#define BK_CMD_VIEW_H

#include "cli.h"

#include <stdio.h>

/* The camera's options (--camera, --resolution, --show), rows setting a bk_view_opts (view.h):
 * `baker view`'s and the bake's --preview's. */
extern const bk_cli_opt bk_cmd_view_opts[];

/* `baker help view`. */
void bk_cmd_view_help(FILE *f);
/* argv: everything after "view". Returns the exit status (0, 1 failure, 2 usage). */
int bk_cmd_view(int argc, char **argv);

#endif
