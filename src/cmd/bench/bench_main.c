/* bench_main.c - `baker bench`: hands its arguments to the bench command they name. */
#include "bench.h"
#include "bench_common.h"

#include <stdio.h>
#include <string.h>

#if !BK_HAVE_CUDA
int bk_bench_primitives(int argc, char **argv)
{
    fprintf(stderr, "baker bench primitives: this baker was built without CUDA (nvcc was not found)\n");
    return 1;
}
#endif

int bk_bench_main(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "primitives")) return bk_bench_primitives(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "trace")) return bk_bench_trace(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "load")) return bk_bench_load(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "stacks")) return bk_bench_stacks(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "bake")) return bk_bench_bake(argc - 1, argv + 1);
    fputs(bk_bench_usage, argc ? stderr : stdout);
    return 2;
}
