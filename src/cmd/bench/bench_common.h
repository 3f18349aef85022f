/* bench_common.h - what the bench commands (bench_*.c) share: the usage text of `baker bench`. */
#ifndef BK_BENCH_COMMON_H
#define BK_BENCH_COMMON_H

/* every bench command's usage, printed by `baker help bench` and after a bad argument */
extern const char bk_bench_usage[];

#endif
