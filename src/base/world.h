/* world.h - the processes of one job: MPI when baker is built with it (BK_MPI) and launched by
 * mpirun, else a world of one process (every function below is then a cheap stub).
 *
 * Pipeline: main() -> bk_world_init -> the bake on every rank (cmd_bake.c: each rank bakes the
 * granules of texels it takes from the job's counter, bake.h) -> bk_world_agree (did every rank
 * succeed?) -> bk_world_gather (the texels' colours to rank 0) -> rank 0 denoises and writes ->
 * bk_world_finalize. docs/scaling.md says what is sent and where it stops scaling.
 *
 *     bk_world_init();                              // MPI_Init only under mpirun (its env vars)
 *     if (bk_world_size() > 1) { ... bk_world_rank() ... }
 *     if (bk_world_agree(ok, err, msg, sizeof msg, &who)) ...  // any rank failed: all learn it
 *     bk_world_sum_u64(counters, n);                // on every rank, in place
 *     bk_world_gather(mine, bytes, receive, ctx, err, sizeof err); // rank 0 gets every rank's bytes
 *     bk_world_finalize();
 *
 * Only the main thread calls these, but bk_world_counter_next, which any thread may call, one at
 * a time (MPI_THREAD_SERIALIZED). Every call but the rank/size queries and counter_next is
 * collective: every rank makes the same calls in the same order. An MPI error aborts the job (MPI's
 * default handler): mpirun then stops every rank, and rank 0 never reaches its commit, so no output
 * is written either way.
 */
#ifndef BK_WORLD_H
#define BK_WORLD_H

#include <stddef.h>
#include <stdint.h>

/* 1 when this baker was built with MPI. */
int bk_world_built(void);
/* Joins the job when the process was started by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
 * PMI_SIZE, MV2_COMM_WORLD_SIZE...): a plain `baker` run never calls MPI_Init. Returns 0, or -1
 * with err (MPI_Init failed). Idempotent. */
int bk_world_init(char *err, size_t err_size);
/* Leaves the job (MPI_Finalize when init joined one). */
void bk_world_finalize(void);

int         bk_world_rank(void);       /* 0 .. size - 1 */
int         bk_world_size(void);       /* 1 without a job */
int         bk_world_local_rank(void); /* among the ranks on this host (MPI_COMM_TYPE_SHARED) */
int         bk_world_local_size(void); /* ranks on this host */
const char *bk_world_host(void);       /* this host's name (MPI_Get_processor_name, else gethostname) */

/* The CPU threads a rank should use when none were asked for, >= 1: the host's cores, shared by
 * its ranks when shared != 0 (while they all bake), no more than its affinity mask allows (which
 * mpirun's --bind-to narrows: OpenMPI binds each of 2 ranks to a core by default). BK_THREADS
 * when set, and the whole machine's count (bk_cpu_threads) in a world of one. */
int bk_world_cpu_threads(int shared);
/* For a rank whose host's other ranks have nothing left to do but wait (they sleep: see
 * bk_world_agree): widens the calling thread's affinity to every core the job's ranks on this
 * host may run on together (mpirun bound each to its own), so that threads it starts from now
 * on may use them all. Returns how many cores that is (BK_THREADS when set). */
int bk_world_take_host_cores(void);

/* Collective: every rank says whether it succeeded (ok != 0), and a failed one why (msg); ranks
 * wait for the others asleep, not spinning (MPI's blocking calls spin), giving their core away.
 * Returns
 * 0 when every rank succeeded; else -1 on every rank, with *failed_rank the lowest failed rank
 * and out (out_size bytes, may be NULL) its message, prefixed "rank R of N (host): ". */
int bk_world_agree(int ok, const char *msg, char *out, size_t out_size, int *failed_rank);

/* Collective, in place on every rank: v[i] = the sum (max) of v[i] over the ranks. */
void bk_world_sum_u64(uint64_t *v, int n);
void bk_world_max_f64(double *v, int n);
/* Collective: 0 when x is the same on every rank, else -1 and *first_other the lowest rank
 * whose x differs from rank 0's. */
int bk_world_same_u64(uint64_t x, int *first_other);

/* A counter the whole job shares, for work handed out as it is asked for: 0 at bk_world_init;
 * each call returns it and adds 1, atomically across the ranks (MPI one-sided fetch-and-add on
 * rank 0's window, whatever rank 0 is busy with; from any thread, one call at a time). Without a
 * job, a plain counter. Not collective. */
uint64_t bk_world_counter_next(void);

/* Collective: every rank's bytes reach rank 0, which calls fn for each piece, rank by rank in
 * order (rank 0's own first, as one piece), each rank's bytes in order; offset is where the piece
 * starts in that rank's bytes. Ranks send in pieces of at most 64 MiB, so any size goes (MPI
 * counts are ints) and rank 0 holds one piece at a time, not all ranks' bytes. Ranks other than 0
 * only send (fn is not called). A failing fn does not stop the transfer (the other ranks still
 * send everything): the first failure is returned after all was received. 0, or -1 with err. */
typedef int (*bk_world_recv_fn)(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err,
                                size_t err_size);
int bk_world_gather(const void *data, uint64_t bytes, bk_world_recv_fn fn, void *ctx, char *err, size_t err_size);

#endif /* BK_WORLD_H */
