/* bench.h - `baker bench load`: OBJ loading speed (bench_load.c). A table, never a timed unit test. */
#ifndef BK_BENCH_H
#define BK_BENCH_H

/* argv: the arguments after "bench load": [--runs N] [FILE...]. Without files: the full Stanford
 * dragon (gunzipped to a temporary .obj first, so the parser is timed, not zlib), Sponza and Sibenik
 * under $BK_SCENES_DIR or ../shared/scenes. Returns 0, 1 when a file failed to load, 2 on bad usage. */
int bk_bench_load(int argc, char **argv);

#endif
