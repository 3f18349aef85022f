/* pool.c - see pool.h. Workers sleep on a condition variable between jobs; a job is one
 * bk_parallel_for call, open from its start until its caller has seen every chunk done. */
#include "pool.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define POOL_MAX 256

static pthread_mutex_t lock_ = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  wake_ = PTHREAD_COND_INITIALIZER, idle_ = PTHREAD_COND_INITIALIZER;

static struct {
    pthread_t       th[POOL_MAX];
    int             want;        /* threads asked for (0: bk_cpu_threads) */
    int             started;     /* workers running (callers not counted) */
    int             quit;
    int             busy;        /* a job is open or being closed */
    unsigned        gen;         /* bumped for every job */
    int             in_job;      /* workers inside the current job */
    /* the job */
    bk_pool_fn      fn;
    void           *ctx;
    size_t          n, grain, chunks;
    atomic_size_t   next, done;
} P;

int bk_pool_threads(void)
{
    int n = P.want > 0 ? P.want : bk_cpu_threads();
    return n < 1 ? 1 : (n > POOL_MAX ? POOL_MAX : n);
}

/* Takes chunks until none is left; returns how many this thread ran. */
static size_t run_chunks(bk_pool_fn fn, void *ctx, size_t n, size_t grain, size_t chunks, int worker)
{
    size_t ran = 0;
    for (;;) {
        size_t c = atomic_fetch_add(&P.next, 1);
        if (c >= chunks) return ran;
        size_t b = c * grain, e = b + grain < n ? b + grain : n;
        fn(ctx, b, e, worker);
        ran++;
    }
}

static void *worker_main(void *arg)
{
    const int id = (int)(intptr_t)arg;
    unsigned seen = 0;
    pthread_mutex_lock(&lock_);
    for (;;) {
        while (!P.quit && (P.gen == seen || !P.busy || P.fn == NULL)) {
            if (P.gen != seen && !P.busy) seen = P.gen;   /* a job closed before this worker woke */
            pthread_cond_wait(&wake_, &lock_);
        }
        if (P.quit) break;
        seen = P.gen;
        bk_pool_fn fn = P.fn;
        void *ctx = P.ctx;
        size_t n = P.n, grain = P.grain, chunks = P.chunks;
        P.in_job++;
        pthread_mutex_unlock(&lock_);
        size_t ran = run_chunks(fn, ctx, n, grain, chunks, id);
        pthread_mutex_lock(&lock_);
        atomic_fetch_add(&P.done, ran);
        if (--P.in_job == 0) pthread_cond_broadcast(&idle_);
    }
    pthread_mutex_unlock(&lock_);
    return NULL;
}

/* Called with the lock held. */
static void stop_workers(void)
{
    P.quit = 1;
    pthread_cond_broadcast(&wake_);
    int n = P.started;
    pthread_mutex_unlock(&lock_);
    for (int i = 0; i < n; ++i) pthread_join(P.th[i], NULL);
    pthread_mutex_lock(&lock_);
    P.started = 0;
    P.quit = 0;
}

void bk_pool_set_threads(int n)
{
    pthread_mutex_lock(&lock_);
    if (!P.busy) {
        if (P.started) stop_workers();
        P.want = n > 0 ? n : 0;
    }
    pthread_mutex_unlock(&lock_);
}

void bk_pool_shutdown(void)
{
    pthread_mutex_lock(&lock_);
    if (!P.busy && P.started) stop_workers();
    pthread_mutex_unlock(&lock_);
}

void bk_parallel_for(size_t n, size_t grain, bk_pool_fn fn, void *ctx)
{
    if (n == 0) return;
    if (grain == 0) grain = 1;
    const size_t chunks = (n - 1) / grain + 1;
    const int nt = bk_pool_threads();
    pthread_mutex_lock(&lock_);
    if (P.busy || nt == 1 || chunks == 1) {
        /* nested, concurrent, or nothing to share: all chunks here, in order */
        pthread_mutex_unlock(&lock_);
        for (size_t b = 0; b < n; b += grain) fn(ctx, b, b + grain < n ? b + grain : n, 0);
        return;
    }
    while (P.started < nt - 1) {
        if (pthread_create(&P.th[P.started], NULL, worker_main, (void *)(intptr_t)(P.started + 1)) != 0) break;
        P.started++;
    }
    P.busy = 1;
    P.fn = fn; P.ctx = ctx; P.n = n; P.grain = grain; P.chunks = chunks;
    atomic_store(&P.next, 0);
    atomic_store(&P.done, 0);
    P.gen++;
    pthread_cond_broadcast(&wake_);
    pthread_mutex_unlock(&lock_);

    size_t ran = run_chunks(fn, ctx, n, grain, chunks, 0);

    pthread_mutex_lock(&lock_);
    atomic_fetch_add(&P.done, ran);
    /* Every chunk was taken; wait for those still running, then close the job so a worker that
     * wakes late does not enter it. */
    while (atomic_load(&P.done) < chunks || P.in_job > 0) pthread_cond_wait(&idle_, &lock_);
    P.fn = NULL;
    P.busy = 0;
    pthread_mutex_unlock(&lock_);
}
