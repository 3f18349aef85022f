/* bench_trace.h - `baker bench`: the benchmark commands (tables, never timed unit tests). */
#ifndef BK_BENCH_TRACE_H
#define BK_BENCH_TRACE_H

extern const char bk_bench_usage[];
/* argv after "bench": "load ...", "trace ...", "primitives ...", "stacks ..." or "bake ..." */
int bk_bench_main(int argc, char **argv);
int bk_bench_trace(int argc, char **argv);
/* `baker bench stacks`: the bake under every accel x stack strategy x register cap (bench_stacks.c). */
int bk_bench_stacks(int argc, char **argv);
/* `baker bench bake`: the whole bake command timed as a child process, phase by phase (bench_bake.c). */
int bk_bench_bake(int argc, char **argv);
/* `baker bench primitives`: GPU reduction, histogram, sort and counter aggregation against CUB
 * (kernels/prim_bench.cu; without CUDA it says so and fails). */
int bk_bench_primitives(int argc, char **argv);

#endif
