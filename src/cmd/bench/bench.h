/* bench.h - `baker bench`: the benchmark commands (tables, never timed unit tests). */
#ifndef BK_BENCH_H
#define BK_BENCH_H

/* argv after "bench": "load ...", "trace ...", "primitives ...", "stacks ..." or "bake ..." (bench_main.c) */
int bk_bench_main(int argc, char **argv);
/* `baker bench trace`: Mrays/s of every accel x stack strategy x query (bench_trace.c). */
int bk_bench_trace(int argc, char **argv);
/* `baker bench stacks`: the bake under every accel x stack strategy x register cap (bench_stacks.c). */
int bk_bench_stacks(int argc, char **argv);
/* `baker bench bake`: the whole bake command timed as a child process, phase by phase (bench_bake.c). */
int bk_bench_bake(int argc, char **argv);
/* `baker bench load`: OBJ loading speed (bench_load.c). argv: the arguments after "bench load":
 * [--runs N] [FILE...]. Without files: the full Stanford dragon (gunzipped to a temporary .obj
 * first, so the parser is timed, not zlib), Sponza and Sibenik under $BK_SCENES_DIR or
 * ../shared/scenes. Returns 0, 1 when a file failed to load, 2 on bad usage. */
int bk_bench_load(int argc, char **argv);
/* `baker bench primitives`: GPU reduction, histogram, sort and counter aggregation against CUB
 * (kernels/gpu_ops/bench/gpu_ops_bench.cu; without CUDA it says so and fails, bench_main.c). */
int bk_bench_primitives(int argc, char **argv);

#endif
