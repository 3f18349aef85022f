/* world.c - see world.h. The only file that includes mpi.h; built with BK_HAVE_MPI=1 when CMake
 * found MPI (BK_MPI), else every function is the one-process answer. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "world.h"
#include "util.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef BK_HAVE_MPI
#define BK_HAVE_MPI 0
#endif
#if BK_HAVE_MPI
#include <mpi.h>
#endif

static struct {
    int       inited; /* bk_world_init ran */
    int       mpi;    /* ... and joined a job (MPI_Init was called) */
    int       rank, size, local_rank, local_size;
    char      host[256];
    cpu_set_t host_cpus; /* the cores the job's ranks on this host may run on, together */
    int       host_cpus_known;
    uint64_t  counter; /* bk_world_counter_next without a job */
#if BK_HAVE_MPI
    MPI_Comm comm; /* a duplicate of MPI_COMM_WORLD: our tags never meet anyone else's */
    MPI_Win  win;  /* the job's counter (bk_world_counter_next), in rank 0's window */
    int      win_open;
#endif
} W; /* zero until bk_world_init: rank 0 of a world of one */

int bk_world_built(void) { return BK_HAVE_MPI; }

/* Set by the launchers of OpenMPI (ORTE; PMIx in 4.x and 5.x), MPICH / Intel MPI (Hydra's PMI),
 * MVAPICH and Slurm's srun --mpi=pmix|pmi2: a process started by one of them is part of a job. */
static int launched_by_mpi(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK",
                                        "MV2_COMM_WORLD_SIZE" };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i)
        if (getenv(vars[i])) return 1;
    return 0;
}

int bk_world_init(char *err, size_t err_size)
{
    if (W.inited) return 0;
    W.inited = 1;
    W.rank = 0;
    W.size = 1;
    W.local_rank = 0;
    W.local_size = 1;
    if (gethostname(W.host, sizeof W.host) != 0) snprintf(W.host, sizeof W.host, "?");
    W.host[sizeof W.host - 1] = 0;
#if BK_HAVE_MPI
    if (!launched_by_mpi()) return 0;
    int provided = 0;
    /* threads run the bake and the pool; the bake's device threads take granules from the job's
     * counter (bk_world_counter_next), one at a time under the bake's lock */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return bk_fail(err, err_size, "MPI_Init failed (started by mpirun, but it could not join the job)");
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        return bk_fail(err, err_size,
                       "this MPI library does not allow calls from several threads (MPI_THREAD_SERIALIZED)");
    }
    W.mpi = 1;
    MPI_Comm_dup(MPI_COMM_WORLD, &W.comm);
    MPI_Comm_rank(W.comm, &W.rank);
    MPI_Comm_size(W.comm, &W.size);
    MPI_Comm local;
    MPI_Comm_split_type(W.comm, MPI_COMM_TYPE_SHARED, W.rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &W.local_rank);
    MPI_Comm_size(local, &W.local_size);
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_ZERO(&W.host_cpus);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
    MPI_Allreduce(&mine, &W.host_cpus, (int)sizeof mine, MPI_BYTE, MPI_BOR, local);
    W.host_cpus_known = CPU_COUNT(&W.host_cpus) > 0;
    MPI_Comm_free(&local);
    char name[MPI_MAX_PROCESSOR_NAME];
    int  len = 0;
    if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0)
        snprintf(W.host, sizeof W.host, "%.*s", len, name);
    if (W.size > 1) {
        /* the job's counter: made here, where every rank passes, so that the bake's protocol
         * (bake_job in cmd_bake.c) has no collective call before its first agreement */
        uint64_t *base = NULL;
        if (MPI_Win_allocate(W.rank == 0 ? (MPI_Aint)sizeof(uint64_t) : 0, (int)sizeof(uint64_t), MPI_INFO_NULL, W.comm,
                             &base, &W.win) != MPI_SUCCESS)
            return bk_fail(err, err_size, "MPI_Win_allocate failed (the job's counter)");
        if (W.rank == 0) *base = 0;
        MPI_Barrier(W.comm); /* nobody adds before it is 0 */
        MPI_Win_lock_all(MPI_MODE_NOCHECK, W.win);
        W.win_open = 1;
    }
#else
    (void)err;
    (void)err_size;
    /* every process of the job would bake the whole map and write the same files */
    if (launched_by_mpi())
        fprintf(stderr, "baker: started by mpirun, but built without MPI (libopenmpi-dev): each process bakes alone\n");
#endif
    return 0;
}

void bk_world_finalize(void)
{
#if BK_HAVE_MPI
    if (W.mpi) {
        if (W.win_open) {
            MPI_Win_unlock_all(W.win);
            MPI_Win_free(&W.win);
            W.win_open = 0;
        }
        MPI_Comm_free(&W.comm);
        MPI_Finalize();
        W.mpi = 0;
    }
#endif
    W.inited = 0;
}

int         bk_world_rank(void) { return W.rank; }
int         bk_world_size(void) { return W.size > 0 ? W.size : 1; }
int         bk_world_local_rank(void) { return W.local_rank; }
int         bk_world_local_size(void) { return W.local_size > 0 ? W.local_size : 1; }
const char *bk_world_host(void) { return W.host[0] ? W.host : "?"; }

int bk_world_cpu_threads(int shared)
{
    /* BK_THREADS is the user's own choice, per process; a world of one keeps every core */
    if (W.size <= 1 || getenv("BK_THREADS")) return bk_cpu_threads();
    long      online = sysconf(_SC_NPROCESSORS_ONLN);
    int       t = online > 0 ? (int)(online / (shared && W.local_size > 0 ? W.local_size : 1)) : 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    /* mpirun binds each of 2 ranks to one core by default (OpenMPI: --bind-to core for np <= 2):
     * more threads than the mask holds would only take turns on it */
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int allowed = CPU_COUNT(&set);
        if (allowed > 0 && allowed < t) t = allowed;
    }
    return t > 0 ? t : 1;
}

#if BK_HAVE_MPI
/* Waits for a request while giving the core away: MPI's blocking calls spin, and a rank waiting
 * for the others (the slowest rank's bake, rank 0's denoise and write) would take a core from
 * the ranks still at work on its host. Tests after 10 us, backing off to every millisecond. */
static void wait_quietly(MPI_Request *rq)
{
    long ns = 10000;
    for (;;) {
        int done = 0;
        MPI_Test(rq, &done, MPI_STATUS_IGNORE);
        if (done) return;
        struct timespec ts = { 0, ns };
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
}
#endif

int bk_world_take_host_cores(void)
{
    if (W.size <= 1 || !W.host_cpus_known || getenv("BK_THREADS")) return bk_world_cpu_threads(0);
    if (sched_setaffinity(0, sizeof W.host_cpus, &W.host_cpus) != 0) return bk_world_cpu_threads(0);
    return CPU_COUNT(&W.host_cpus);
}

int bk_world_agree(int ok, const char *msg, char *out, size_t out_size, int *failed_rank)
{
    if (failed_rank) *failed_rank = -1;
    if (out && out_size) out[0] = 0;
#if BK_HAVE_MPI
    if (W.mpi && W.size > 1) {
        int         v[2] = { ok ? INT_MAX : W.rank, ok ? 0 : 1 }, r[2]; /* the lowest failed rank; how many */
        MPI_Request rq;
        MPI_Iallreduce(&v[0], &r[0], 1, MPI_INT, MPI_MIN, W.comm, &rq);
        wait_quietly(&rq);
        if (r[0] == INT_MAX) return 0;
        MPI_Iallreduce(&v[1], &r[1], 1, MPI_INT, MPI_SUM, W.comm, &rq);
        wait_quietly(&rq);
        int  first = r[0];
        char buf[1536];
        if (W.rank == first) {
            int n = snprintf(buf, sizeof buf, "rank %d of %d (%s): %s", W.rank, W.size, bk_world_host(),
                             msg && msg[0] ? msg : "failed");
            if (r[1] > 1 && n > 0 && (size_t)n < sizeof buf)
                snprintf(buf + n, sizeof buf - (size_t)n, " (%d ranks failed; the lowest is named)", r[1]);
        }
        MPI_Ibcast(buf, (int)sizeof buf, MPI_CHAR, first, W.comm, &rq);
        wait_quietly(&rq);
        buf[sizeof buf - 1] = 0;
        if (failed_rank) *failed_rank = first;
        if (out && out_size) snprintf(out, out_size, "%s", buf);
        return -1;
    }
#endif
    if (ok) return 0;
    if (failed_rank) *failed_rank = 0;
    if (out && out_size) snprintf(out, out_size, "%s", msg && msg[0] ? msg : "failed");
    return -1;
}

void bk_world_sum_u64(uint64_t *v, int n)
{
#if BK_HAVE_MPI
    if (W.mpi && W.size > 1 && n > 0) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_UINT64_T, MPI_SUM, W.comm);
#else
    (void)v;
    (void)n;
#endif
}

void bk_world_max_f64(double *v, int n)
{
#if BK_HAVE_MPI
    if (W.mpi && W.size > 1 && n > 0) MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, W.comm);
#else
    (void)v;
    (void)n;
#endif
}

int bk_world_same_u64(uint64_t x, int *first_other)
{
    if (first_other) *first_other = -1;
#if BK_HAVE_MPI
    if (W.mpi && W.size > 1) {
        uint64_t x0 = x;
        MPI_Bcast(&x0, 1, MPI_UINT64_T, 0, W.comm);
        int first = x != x0 ? W.rank : INT_MAX;
        MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, W.comm);
        if (first == INT_MAX) return 0;
        if (first_other) *first_other = first;
        return -1;
    }
#else
    (void)x;
#endif
    return 0;
}

uint64_t bk_world_counter_next(void)
{
#if BK_HAVE_MPI
    if (W.win_open) {
        const uint64_t one = 1;
        uint64_t       old = 0;
        MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 0, 0, MPI_SUM, W.win);
        MPI_Win_flush(0, W.win);
        return old;
    }
#endif
    return W.counter++;
}

int bk_world_gather(const void *data, uint64_t bytes, bk_world_recv_fn fn, void *ctx, char *err, size_t err_size)
{
    int rc = 0;
    if (W.rank == 0 && fn(ctx, 0, 0, data, (size_t)bytes, err, err_size)) rc = -1;
#if BK_HAVE_MPI
    if (!W.mpi || W.size <= 1) return rc;
    /* a failure on rank 0 still takes every rank's bytes, or they would wait for it forever */
    enum { TAG_SIZE = 1, TAG_DATA = 2 };
    /* 64 MiB pieces: far below MPI's int counts, large enough that the per-message cost (~10 us)
     * is lost in the transfer (6 ms at 10 GB/s) */
    const uint64_t piece_max = (uint64_t)64 << 20;
    if (W.rank != 0) {
        MPI_Send(&bytes, 1, MPI_UINT64_T, 0, TAG_SIZE, W.comm);
        for (uint64_t off = 0; off < bytes; off += piece_max) {
            uint64_t n = bytes - off < piece_max ? bytes - off : piece_max;
            MPI_Send((const char *)data + off, (int)n, MPI_BYTE, 0, TAG_DATA, W.comm);
        }
        return 0;
    }
    char *buf = malloc((size_t)piece_max);
    if (!buf) { /* 64 MiB: a machine this short of memory stops the job */
        fprintf(stderr, "baker: rank 0: out of memory for the gather's 64 MiB buffer\n");
        MPI_Abort(W.comm, 1);
        return -1;
    }
    for (int r = 1; r < W.size; ++r) {
        uint64_t n = 0;
        MPI_Recv(&n, 1, MPI_UINT64_T, r, TAG_SIZE, W.comm, MPI_STATUS_IGNORE);
        for (uint64_t off = 0; off < n; off += piece_max) {
            uint64_t want = n - off < piece_max ? n - off : piece_max;
            MPI_Recv(buf, (int)want, MPI_BYTE, r, TAG_DATA, W.comm, MPI_STATUS_IGNORE);
            if (!rc && fn(ctx, r, off, buf, (size_t)want, err, err_size)) rc = -1;
        }
    }
    free(buf);
#endif
    return rc;
}
