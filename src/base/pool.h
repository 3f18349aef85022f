/* pool.h - the one thread pool of the host phases (builders, atlas, dilation, denoiser, CPU bake).
 *
 *   bk_pool_set_threads(n);                       // 0: all cores (bk_cpu_threads); before work
 *   bk_parallel_for(n, grain, fn, ctx);           // fn(ctx, begin, end, worker) over [0, n)
 *
 * [0, n) is cut into chunks of `grain` items (the last one shorter) in a fixed way; the calling
 * thread and the pool's workers take chunks from a shared counter until none is left, and the
 * call returns when every chunk is done. Which worker runs a chunk varies from run to run, so a
 * caller whose output must not depend on the thread count writes each chunk's result to a place
 * of its own (index by `begin`), and uses `worker` (0 .. bk_pool_threads() - 1) only to pick
 * scratch memory.
 *
 * Calls nest and may come from several threads: a call made while the pool is busy (from inside
 * fn, or from another thread) runs all its chunks on the calling thread, with worker 0 ... which
 * is why scratch indexed by `worker` belongs to one call, never to the pool. Workers are started
 * at the first call that can use them and live until bk_pool_shutdown() (or the process end).
 */
#ifndef BK_POOL_H
#define BK_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*bk_pool_fn)(void *ctx, size_t begin, size_t end, int worker);

/* Threads a parallel_for may use, the caller's included (>= 1). */
int bk_pool_threads(void);
/* n >= 1: that many; 0: bk_cpu_threads() (BK_THREADS or all cores). Stops the current workers. */
void bk_pool_set_threads(int n);
void bk_parallel_for(size_t n, size_t grain, bk_pool_fn fn, void *ctx);
/* Joins the workers (tests, leak checkers); the next call starts them again. */
void bk_pool_shutdown(void);

/* Teams: fn(ctx, team, k) for team = 0 .. k-1 at once, each team on its share of the pool's
 * threads (about bk_pool_threads() / k, the thread that runs fn included): inside fn,
 * bk_parallel_for and bk_pool_threads() see the team's threads only. For several independent
 * jobs that each scale poorly past a few threads (the atlas's trial packings). The teams run one
 * after another, each with all threads, where each would have fewer than two, when called from
 * inside a team or a parallel_for, and under bk_pool_sim; so fn's results must not depend on
 * the team's thread count or on which teams run at once. k <= 16. */
typedef void (*bk_team_fn)(void *ctx, int team, int k);
void bk_parallel_teams(int k, bk_team_fn fn, void *ctx);

/* A what-if profile for machines with more cores than this one: with bk_pool_sim(p), p >= 2, and
 * bk_pool_set_threads(1), bk_pool_threads() says p (callers size their batches for p threads),
 * but one thread runs every chunk, as worker 0, and every outermost bk_parallel_for times its
 * chunks and schedules them as p threads taking chunks in order would (each to the first thread
 * free; no cost for waking threads). bk_pool_sim_saved() then says how much sooner all calls so far
 * would have ended on p threads, so a phase's time on p threads is its time on one less the
 * difference of two readings. The serial parts, and chunks too big to share, show as such.
 * p = 0 turns it off (the default). */
void   bk_pool_sim(int p);
double bk_pool_sim_saved(void);

#ifdef __cplusplus
}
#endif

#endif /* BK_POOL_H */
