/* pool.c - see pool.h. Workers spin between jobs for a while (SPIN), so that back-to-back calls
 * find them awake, then sleep on a condition variable; a job is one bk_parallel_for call.
 *
 * A job is published without the lock: the caller writes its fields, then bumps the generation,
 * which spinning workers watch; they read the fields and start taking chunks. The lock is only
 * for going to sleep and waking: a caller broadcasts only when a worker sleeps, and a worker
 * that ends a job wakes the caller only when the caller sleeps. (Picking a job up under the lock
 * made 16 threads queue on it at every call: the atlas's shape searches make 12,000 calls of
 * microseconds each on sponza 4096^2.)
 *
 * The chunk counter carries the job's tag (its generation) in its top bits, and a thread takes a
 * chunk only by a compare-and-swap that sees its own job's tag: a worker that wakes late, or is
 * still looking for one more chunk when its job ends, finds another tag and leaves without
 * running anything. So a call returns as soon as its chunks are done, without waiting for every
 * worker it woke to come and go (with 16 threads and the atlas's 26,000 small calls that waiting
 * was most of the atlas phase). The same tag check makes the lock-free read of the job's fields
 * safe: they are written again only for a later job, once this one's chunks are all done, and a
 * worker that read them then finds the later tag. The tag has 24 bits: a worker would have to
 * sleep between reading its job and its first chunk through 16 million other jobs to take a
 * chunk of the wrong one.
 *
 * Teams (bk_parallel_teams) are pools of their own (team_), each with its share of the threads:
 * the teams are the chunks of one job on the caller's pool, and the thread that takes a team's
 * chunk makes the team's pool the one its calls use (cur_) until the team's work returns. Workers
 * of the process's pool that take no team spin for their SPIN and go to sleep, so about as many
 * threads run as the pool has. */
#include "pool.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

#define POOL_MAX 256
#define IDX_BITS 40 /* chunk index; the tag is the 24 bits above it */
#define IDX_MASK ((UINT64_C(1) << IDX_BITS) - 1)
/* Pauses a worker waits for the next job before it sleeps, and a caller for its job's last
 * chunks: about 0.5 ms (a pause takes 20-25 ns on the GPU machine's Xeon and on the AMD EPYC
 * build machine), longer than most serial stretches between the atlas's calls. Waking a
 * sleeping thread takes 50-100 us on the GPU machine (a VM). tools/pool_bench there, 16
 * threads, a call of 16 chunks of 2 us with 300 us of serial work between calls: 57 us with the
 * job picked up under the lock and 4,000 pauses, 96 us picked up without it and 4,000 pauses,
 * 6 us with 20,000; 64 chunks of 10 us: 224 -> 54 us (ideal 40). With more threads than cores
 * the spinning takes cores from the threads with work: then 4,000, as before. */
#define SPIN         20000
#define SPIN_CROWDED 4000

/* A pool: the one of the process (main_), or a team's (bk_parallel_teams). */
typedef struct pool pool;
/* a worker's pool and its id in it */
typedef struct worker_arg {
    pool *p;
    int   id;
} worker_arg;
struct pool {
    pthread_mutex_t lock;
    pthread_cond_t  wake, idle;
    pthread_t       th[POOL_MAX];
    worker_arg      arg[POOL_MAX]; /* the workers' start arguments */
    int             want;          /* threads asked for (0: bk_cpu_threads) */
    int             started;       /* workers running (callers not counted) */
    atomic_int      quit;
    int             busy;          /* a job is open */
    atomic_uint     gen;           /* bumped for every job, once its fields are written */
    int             sleepers;      /* workers asleep on wake (under the lock) */
    int             spin;          /* SPIN or SPIN_CROWDED, set when workers start */
    atomic_int      caller_asleep; /* the caller sleeps on idle */
    /* the job: written by the caller before it bumps gen, read by workers without the lock */
    _Atomic(bk_pool_fn)  fn;
    _Atomic(void *)      ctx;
    atomic_size_t        n, grain, chunks;
    atomic_uint_fast64_t next; /* tag << IDX_BITS | the next chunk */
    atomic_size_t        done; /* chunks finished */
};

#define POOL_INIT                                                                                             \
    {                                                                                                         \
        .lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER \
    }
#define TEAMS_MAX 16
static pool                main_ = POOL_INIT;
static pool                team_[TEAMS_MAX]; /* their locks made once (teams_once) */
static pthread_once_t      teams_once_ = PTHREAD_ONCE_INIT;
static _Thread_local pool *cur_; /* the pool of this thread's calls: its team's, or main_ (NULL) */
static pool               *here(void) { return cur_ ? cur_ : &main_; }

static int sim_p_; /* bk_pool_sim */

static int threads_of(const pool *P)
{
    int n = P->want > 0 ? P->want : bk_cpu_threads();
    return n < 1 ? 1 : (n > POOL_MAX ? POOL_MAX : n);
}

int bk_pool_threads(void)
{
    if (sim_p_ && main_.want == 1 && !cur_) return sim_p_; /* callers size batches and scratch for those threads */
    return threads_of(here());
}

static uint64_t tag_of(unsigned gen) { return (uint64_t)(gen & 0xffffffu) << IDX_BITS; }

/* Takes chunks of the job tagged tag until none is left (or the job is over); returns how many
 * this thread ran. */
static size_t run_chunks(pool *P, bk_pool_fn fn, void *ctx, size_t n, size_t grain, size_t chunks, int worker,
                         uint64_t tag)
{
    size_t        ran = 0;
    uint_fast64_t v = atomic_load(&P->next);
    for (;;) {
        if ((v & ~IDX_MASK) != tag || (v & IDX_MASK) >= chunks) return ran;
        if (!atomic_compare_exchange_weak(&P->next, &v, v + 1)) continue; /* v reloaded */
        size_t b = (size_t)(v & IDX_MASK) * grain, e = b + grain < n ? b + grain : n;
        fn(ctx, b, e, worker);
        ran++;
        v = atomic_load(&P->next);
    }
}

/* A thread's chunks are done: the one that finishes the job wakes its caller, if it sleeps
 * (the caller says so before its last look at done: seq_cst orders the two). */
static void add_done(pool *P, size_t ran, size_t chunks)
{
    if (ran && atomic_fetch_add(&P->done, ran) + ran == chunks && atomic_load(&P->caller_asleep)) {
        pthread_mutex_lock(&P->lock);
        pthread_cond_broadcast(&P->idle);
        pthread_mutex_unlock(&P->lock);
    }
}

/* Spins while the generation is old, for at most spin pauses; returns the last value read. */
static unsigned spin_gen(pool *P, unsigned old, int spin)
{
    for (int i = 0; i < spin; ++i) {
        unsigned g = atomic_load(&P->gen);
        if (g != old || atomic_load(&P->quit)) return g;
        cpu_relax();
    }
    return atomic_load(&P->gen);
}

static void *worker_main(void *arg)
{
    pool     *P = ((worker_arg *)arg)->p;
    const int id = ((worker_arg *)arg)->id;
    const int spin = P->spin; /* set before this thread was made */
    unsigned  seen = 0;
    cur_ = P; /* a call from one of its chunks nests in this pool */
    for (;;) {
        unsigned g = spin_gen(P, seen, spin);
        if (g == seen && !atomic_load(&P->quit)) {
            pthread_mutex_lock(&P->lock);
            P->sleepers++;
            while (!atomic_load(&P->quit) && atomic_load(&P->gen) == seen) pthread_cond_wait(&P->wake, &P->lock);
            P->sleepers--;
            pthread_mutex_unlock(&P->lock);
            g = atomic_load(&P->gen);
        }
        if (atomic_load(&P->quit)) break;
        seen = g;
        /* the fields of job g, or of a later one (then the tag check runs nothing) */
        bk_pool_fn fn = atomic_load_explicit(&P->fn, memory_order_relaxed);
        void      *ctx = atomic_load_explicit(&P->ctx, memory_order_relaxed);
        size_t     n = atomic_load_explicit(&P->n, memory_order_relaxed),
               grain = atomic_load_explicit(&P->grain, memory_order_relaxed);
        size_t chunks = atomic_load_explicit(&P->chunks, memory_order_relaxed);
        if (fn) add_done(P, run_chunks(P, fn, ctx, n, grain, chunks, id, tag_of(seen)), chunks);
    }
    return NULL;
}

/* Called with P's lock held. */
static void stop_workers(pool *P)
{
    atomic_store(&P->quit, 1);
    pthread_cond_broadcast(&P->wake);
    int n = P->started;
    pthread_mutex_unlock(&P->lock);
    for (int i = 0; i < n; ++i) pthread_join(P->th[i], NULL);
    pthread_mutex_lock(&P->lock);
    P->started = 0;
    atomic_store(&P->quit, 0);
}

/* P's thread count: n >= 1 that many, 0 bk_cpu_threads(); its workers stopped when it changes
 * (not while a job is open: then nothing changes) */
static void set_threads(pool *P, int n, int always_stop)
{
    pthread_mutex_lock(&P->lock);
    if (!P->busy && (always_stop || P->want != (n > 0 ? n : 0))) {
        if (P->started) stop_workers(P);
        P->want = n > 0 ? n : 0;
    }
    pthread_mutex_unlock(&P->lock);
}

static void teams_init(void)
{
    for (int i = 0; i < TEAMS_MAX; ++i) {
        pthread_mutex_init(&team_[i].lock, NULL);
        pthread_cond_init(&team_[i].wake, NULL);
        pthread_cond_init(&team_[i].idle, NULL);
        team_[i].want = 1;
    }
}

void bk_pool_set_threads(int n) { set_threads(&main_, n, 1); }

void bk_pool_shutdown(void)
{
    pool *all[TEAMS_MAX + 1] = { &main_ };
    pthread_once(&teams_once_, teams_init);
    for (int i = 0; i < TEAMS_MAX; ++i) all[i + 1] = &team_[i];
    for (int i = 0; i <= TEAMS_MAX; ++i) {
        pthread_mutex_lock(&all[i]->lock);
        if (!all[i]->busy && all[i]->started) stop_workers(all[i]);
        pthread_mutex_unlock(&all[i]->lock);
    }
}

/* bk_pool_sim: the threads simulated, and the time they would have saved so far */
#define SIM_MAX 256
static double            sim_saved_;
static _Thread_local int sim_depth_;

void bk_pool_sim(int p)
{
    sim_p_ = p >= 2 ? (p < SIM_MAX ? p : SIM_MAX) : 0;
    sim_saved_ = 0;
}
double bk_pool_sim_saved(void) { return sim_saved_; }

/* One thread runs the chunks in order, timing each; the simulated threads take them in the same
 * order, each the next chunk when it comes free. */
static void sim_run(size_t n, size_t grain, bk_pool_fn fn, void *ctx)
{
    double free_at[SIM_MAX] = { 0 }, t_all = bk_time_now(), end = 0;
    sim_depth_++;
    for (size_t b = 0; b < n; b += grain) {
        double t0 = bk_time_now();
        fn(ctx, b, b + grain < n ? b + grain : n, 0);
        double d = bk_time_now() - t0;
        int    w = 0;
        for (int i = 1; i < sim_p_; ++i)
            if (free_at[i] < free_at[w]) w = i;
        free_at[w] += d;
        if (free_at[w] > end) end = free_at[w];
    }
    sim_depth_--;
    sim_saved_ += (bk_time_now() - t_all) - end;
}

void bk_parallel_for(size_t n, size_t grain, bk_pool_fn fn, void *ctx)
{
    if (n == 0) return;
    if (grain == 0) grain = 1;
    const size_t chunks = (n - 1) / grain + 1;
    if (sim_p_ && main_.want == 1 && !cur_) {
        if (sim_depth_ == 0) sim_run(n, grain, fn, ctx);
        else
            for (size_t b = 0; b < n; b += grain) fn(ctx, b, b + grain < n ? b + grain : n, 0);
        return;
    }
    pool     *P = here();
    const int nt = threads_of(P);
    pthread_mutex_lock(&P->lock);
    if (P->busy || nt == 1 || chunks == 1 || (uint64_t)chunks > IDX_MASK) {
        /* nested, concurrent, or nothing to share: all chunks here, in order */
        pthread_mutex_unlock(&P->lock);
        for (size_t b = 0; b < n; b += grain) fn(ctx, b, b + grain < n ? b + grain : n, 0);
        return;
    }
    if (!P->started) {
        static long cores;
        if (!cores) cores = sysconf(_SC_NPROCESSORS_ONLN);
        P->spin = cores > 0 && nt > cores ? SPIN_CROWDED : SPIN;
    }
    while (P->started < nt - 1) {
        worker_arg *wa = &P->arg[P->started];
        wa->p = P;
        wa->id = P->started + 1;
        if (pthread_create(&P->th[P->started], NULL, worker_main, wa) != 0) break;
        P->started++;
    }
    P->busy = 1;
    atomic_store_explicit(&P->fn, fn, memory_order_relaxed);
    atomic_store_explicit(&P->ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&P->n, n, memory_order_relaxed);
    atomic_store_explicit(&P->grain, grain, memory_order_relaxed);
    atomic_store_explicit(&P->chunks, chunks, memory_order_relaxed);
    const unsigned gen = atomic_load(&P->gen) + 1;
    atomic_store(&P->done, 0);
    atomic_store(&P->next, tag_of(gen));
    atomic_store(&P->gen, gen); /* publishes the fields above */
    if (P->sleepers) pthread_cond_broadcast(&P->wake);
    pthread_mutex_unlock(&P->lock);

    add_done(P, run_chunks(P, fn, ctx, n, grain, chunks, 0, tag_of(gen)), chunks);

    /* every chunk was taken; wait for those still running (spinning first: most jobs end within
     * microseconds of the caller's last chunk) */
    for (int i = 0; i < P->spin && atomic_load(&P->done) < chunks; ++i) cpu_relax();
    pthread_mutex_lock(&P->lock);
    if (atomic_load(&P->done) < chunks) {
        atomic_store(&P->caller_asleep, 1);
        while (atomic_load(&P->done) < chunks) pthread_cond_wait(&P->idle, &P->lock);
        atomic_store(&P->caller_asleep, 0);
    }
    /* closed: a worker still on its way in finds another tag in next */
    atomic_store(&P->next, tag_of(gen) | IDX_MASK);
    P->busy = 0;
    pthread_mutex_unlock(&P->lock);
}

/* bk_parallel_teams: each team one chunk of a job on the caller's pool; its leader (the thread
 * that takes the chunk) makes the team's pool its own for the team's calls */
typedef struct teams_job {
    bk_team_fn fn;
    void      *ctx;
    int        k;
} teams_job;

static void team_run(void *ctx, size_t begin, size_t end, int worker)
{
    const teams_job *j = ctx;
    (void)worker;
    for (size_t i = begin; i < end; ++i) {
        pool *saved = cur_;
        cur_ = &team_[i];
        j->fn(j->ctx, (int)i, j->k);
        cur_ = saved;
    }
}

void bk_parallel_teams(int k, bk_team_fn fn, void *ctx)
{
    if (k <= 0) return;
    pool     *P = here();
    const int nt = bk_pool_threads();
    int       busy;
    pthread_mutex_lock(&P->lock);
    busy = P->busy;
    pthread_mutex_unlock(&P->lock);
    /* one after another where the teams would have a thread each at most, where this thread is
     * a team's or the pool is busy (a nested call), or under bk_pool_sim */
    if (k == 1 || nt < 2 * k || k > TEAMS_MAX || cur_ != NULL || busy || (sim_p_ && main_.want == 1)) {
        for (int i = 0; i < k; ++i) fn(ctx, i, k);
        return;
    }
    pthread_once(&teams_once_, teams_init);
    /* the pool's threads shared out: team i gets nt / k, the first nt % k one more; each team's
     * leader is one of them */
    for (int i = 0; i < k; ++i) set_threads(&team_[i], nt / k + (i < nt % k), 0);
    teams_job j = { fn, ctx, k };
    bk_parallel_for((size_t)k, 1, team_run, &j);
}
