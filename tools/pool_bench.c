/* pool_bench.c - what one bk_parallel_for call costs beyond its work (src/base/pool.c):
 *     build/pool_bench [THREADS]
 * Calls of 16 and 64 chunks of 0, 2 and 10 us of busy work each, with 0, 30 and 300 us of
 * serial work between calls (the atlas's shape searches make thousands of such calls, and its
 * passes run serial loops between them); prints the mean time a call takes against the ideal
 * (the chunks' work spread evenly over the threads). The work spins on the clock, which reads
 * the TSC on the machines measured (about 40 ns a read). */
#include "pool.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

static void busy_us(double us)
{
    double t_end = bk_time_now() + us * 1e-6;
    while (bk_time_now() < t_end) {}
}

static void work_fn(void *ctx, size_t begin, size_t end, int worker)
{
    (void)begin;
    (void)end;
    (void)worker;
    busy_us(*(const double *)ctx);
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 0;
    bk_pool_set_threads(threads);
    threads = bk_pool_threads();
    const double work_us[] = { 0, 2, 10 }, gap_us[] = { 0, 30, 300 };
    const size_t chunks[] = { 16, 64 };
    for (int a = 0; a < 3; ++a)
        for (int g = 0; g < 3; ++g)
            for (int k = 0; k < 2; ++k) {
                const int reps = 3000;
                double    total = 0;
                for (int r = 0; r < reps; ++r) {
                    busy_us(gap_us[g]);
                    double t0 = bk_time_now();
                    bk_parallel_for(chunks[k], 1, work_fn, (void *)&work_us[a]);
                    total += bk_time_now() - t0;
                }
                printf("%d threads, %2zu chunks of %4.1f us, %3.0f us between calls: %7.2f us a call (ideal %5.2f)\n",
                       threads, chunks[k], work_us[a], gap_us[g], total / reps * 1e6,
                       work_us[a] * (double)chunks[k] / threads);
            }
    bk_pool_shutdown();
    return 0;
}
