/* cmd_bake.h - `baker SCENE -o lightmap.png`: the bake command (cmd_bake.c). */
#ifndef BK_CMD_BAKE_H
#define BK_CMD_BAKE_H

#include <stdio.h>

/* `baker help bake`: the help made from the bake's option table (cmd_bake_opts.c). */
void bk_cmd_bake_help(FILE *f);
/* argv: everything after the program name. Returns the exit status. */
int bk_cmd_bake(int argc, char **argv);
/* on != 0: a successful bake leaves its large host structures (texels, image, atlas, scene, trees)
 * to the process end, which takes them back at once, instead of freeing them one by one first
 * (sponza 4096^2: the image alone is 200 MB). For the baker program's main(), which returns right
 * after; not in a build with a leak checker (AddressSanitizer), where they would be reported. */
void bk_cmd_bake_end_fast(int on);
/* on != 0: the process ends with the bake (the baker program's main()): the backend and its GPUs'
 * contexts go on a thread of their own as soon as the bake is done with them (after the exposure),
 * so that their teardown overlaps the write instead of the process's exit. */
void bk_cmd_bake_last(int on);

#endif
