/* unit_pool.c - the host thread pool (src/base/pool.c).
 *
 * Checked, with 1, 2, 3 and 16 threads: every index of [0, n) is visited exactly once for many
 * (n, grain) pairs (grain 0, grain > n, n not a multiple of grain); chunk bounds are the fixed
 * cut [k grain, min((k + 1) grain, n)); worker ids stay below bk_pool_threads(); with 16 threads
 * and slow chunks more than one worker runs (the pool is used at all); a parallel_for inside a
 * parallel_for runs inline with worker 0 and still covers its range; two threads calling at
 * once both complete; changing the thread count between calls works; shutdown and restart.
 * bk_parallel_teams: every team runs once; with 16 threads, 3 teams get 6, 5 and 5 threads,
 * run at once, and each covers its own parallel_for with worker ids below its share and more
 * than one worker; with 4 threads (fewer than 2 a team), nested in a parallel_for, or with one
 * team, they run one after another with all the caller's threads.
 */
#include "pool.h"
#include "bk_test.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef struct cover {
    atomic_int *seen; /* visits per index */
    size_t      grain, n;
    atomic_int  bad_chunk, bad_worker, max_worker;
    atomic_int  worker_used[64];
    int         sleep_us;
} cover;

static void cover_fn(void *ctx, size_t b, size_t e, int worker)
{
    cover *c = (cover *)ctx;
    if (b % c->grain != 0 || e != (b + c->grain < c->n ? b + c->grain : c->n)) atomic_fetch_add(&c->bad_chunk, 1);
    if (worker < 0 || worker >= bk_pool_threads()) atomic_fetch_add(&c->bad_worker, 1);
    if (worker >= 0 && worker < 64) atomic_store(&c->worker_used[worker], 1);
    for (size_t i = b; i < e; ++i) atomic_fetch_add(&c->seen[i], 1);
    if (c->sleep_us) {
        struct timespec ts = { 0, c->sleep_us * 1000L };
        nanosleep(&ts, NULL);
    }
}

/* Runs one parallel_for over n with grain; returns the number of distinct workers used. */
static int check_cover(size_t n, size_t grain, int sleep_us)
{
    cover c;
    memset(&c, 0, sizeof c);
    c.seen = calloc(n ? n : 1, sizeof *c.seen);
    c.grain = grain ? grain : 1;
    c.n = n;
    c.sleep_us = sleep_us;
    bk_parallel_for(n, grain, cover_fn, &c);
    int once = 1;
    for (size_t i = 0; i < n; ++i) once &= atomic_load(&c.seen[i]) == 1;
    BK_EXPECTF(once, "n %zu grain %zu threads %d: an index not visited exactly once", n, grain, bk_pool_threads());
    BK_EXPECTF(atomic_load(&c.bad_chunk) == 0, "n %zu grain %zu: chunk bounds off the fixed cut", n, grain);
    BK_EXPECTF(atomic_load(&c.bad_worker) == 0, "n %zu grain %zu: worker id out of range", n, grain);
    int used = 0;
    for (int i = 0; i < 64; ++i) used += atomic_load(&c.worker_used[i]);
    free(c.seen);
    return used;
}

typedef struct nest {
    atomic_int sum, bad_worker;
} nest;

static void inner_fn(void *ctx, size_t b, size_t e, int worker)
{
    nest *x = (nest *)ctx;
    if (worker != 0) atomic_fetch_add(&x->bad_worker, 1);
    for (size_t i = b; i < e; ++i) atomic_fetch_add(&x->sum, (int)i);
}

static void outer_fn(void *ctx, size_t b, size_t e, int worker)
{
    for (size_t i = b; i < e; ++i) bk_parallel_for(100, 7, inner_fn, ctx); /* sum 0..99 = 4950 each */
}

static void *caller_thread(void *arg)
{
    int  *ok = (int *)arg;
    cover c;
    memset(&c, 0, sizeof c);
    size_t n = 20000;
    c.seen = calloc(n, sizeof *c.seen);
    c.grain = 13;
    c.n = n;
    for (int rep = 0; rep < 20; ++rep) bk_parallel_for(n, 13, cover_fn, &c);
    int good = 1;
    for (size_t i = 0; i < n; ++i) good &= atomic_load(&c.seen[i]) == 20;
    free(c.seen);
    *ok = good;
    return NULL;
}

/* bk_parallel_teams: what each team saw */
typedef struct teams_seen {
    atomic_int calls[16], threads[16], used[16], inside, most_inside;
} teams_seen;

static void team_fn(void *ctx, int team, int k)
{
    teams_seen *t = (teams_seen *)ctx;
    int         now = atomic_fetch_add(&t->inside, 1) + 1, most = atomic_load(&t->most_inside);
    while (now > most && !atomic_compare_exchange_weak(&t->most_inside, &most, now)) {}
    atomic_fetch_add(&t->calls[team], 1);
    atomic_store(&t->threads[team], bk_pool_threads());
    BK_EXPECTF(k >= 1 && team < k, "team %d of %d", team, k);
    atomic_store(&t->used[team], check_cover(48, 1, 1500)); /* 48 chunks of 1.5 ms */
    atomic_fetch_sub(&t->inside, 1);
}

static void run_teams(teams_seen *t, int k)
{
    memset(t, 0, sizeof *t);
    bk_parallel_teams(k, team_fn, t);
    for (int i = 0; i < k; ++i)
        BK_EXPECTF(atomic_load(&t->calls[i]) == 1, "team %d of %d ran %d times", i, k, atomic_load(&t->calls[i]));
}

static void teams_nested_fn(void *ctx, size_t b, size_t e, int worker)
{
    (void)e;
    (void)worker;
    if (b == 0) run_teams((teams_seen *)ctx, 2); /* chunk 1 only makes the pool busy */
}

int main(void)
{
    const int    counts[] = { 1, 2, 3, 16 };
    const size_t ns[] = { 0, 1, 5, 64, 1000, 12345 };
    const size_t grains[] = { 0, 1, 7, 64, 100000 };
    for (int k = 0; k < 4; ++k) {
        bk_pool_set_threads(counts[k]);
        BK_EXPECT(bk_pool_threads() == counts[k]);
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 5; ++j) check_cover(ns[i], grains[j], 0);
    }

    /* the pool is used: 16 threads, 64 chunks of 2 ms each */
    bk_pool_set_threads(16);
    int used = check_cover(64, 1, 2000);
    BK_EXPECTF(used > 1, "16 threads, 64 slow chunks: only %d worker(s) ran", used);
    bk_pool_set_threads(1);
    used = check_cover(64, 1, 100);
    BK_EXPECTF(used == 1, "1 thread: %d workers ran", used);

    /* nested: inline, worker 0, complete */
    bk_pool_set_threads(4);
    nest x;
    atomic_store(&x.sum, 0);
    atomic_store(&x.bad_worker, 0);
    bk_parallel_for(32, 1, outer_fn, &x);
    BK_EXPECTF(atomic_load(&x.sum) == 32 * 4950, "nested sum %d, want %d", atomic_load(&x.sum), 32 * 4950);
    BK_EXPECT(atomic_load(&x.bad_worker) == 0);

    /* two callers at once */
    pthread_t a, b;
    int       oka = 0, okb = 0;
    BK_EXPECT(pthread_create(&a, NULL, caller_thread, &oka) == 0);
    BK_EXPECT(pthread_create(&b, NULL, caller_thread, &okb) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    BK_EXPECT(oka && okb);

    /* teams: 16 threads shared 6, 5, 5, at once */
    teams_seen ts;
    bk_pool_set_threads(16);
    run_teams(&ts, 3);
    BK_EXPECTF(atomic_load(&ts.threads[0]) == 6 && atomic_load(&ts.threads[1]) == 5 && atomic_load(&ts.threads[2]) == 5,
               "16 threads in 3 teams: %d, %d, %d", atomic_load(&ts.threads[0]), atomic_load(&ts.threads[1]),
               atomic_load(&ts.threads[2]));
    BK_EXPECTF(atomic_load(&ts.most_inside) > 1, "3 teams on 16 threads: at most %d at once",
               atomic_load(&ts.most_inside));
    for (int i = 0; i < 3; ++i)
        BK_EXPECTF(atomic_load(&ts.used[i]) > 1, "team %d: %d worker(s) ran its slow chunks", i,
                   atomic_load(&ts.used[i]));
    BK_EXPECT(bk_pool_threads() == 16); /* the caller's own share again */
    run_teams(&ts, 5);                  /* another split: 4, 3, 3, 3, 3 */
    BK_EXPECT(atomic_load(&ts.threads[0]) == 4 && atomic_load(&ts.threads[4]) == 3);
    /* one after another, with all threads: too few threads, one team, nested */
    bk_pool_set_threads(4);
    run_teams(&ts, 3);
    BK_EXPECT(atomic_load(&ts.most_inside) == 1 && atomic_load(&ts.threads[0]) == 4 &&
              atomic_load(&ts.threads[2]) == 4);
    bk_pool_set_threads(16);
    run_teams(&ts, 1);
    BK_EXPECT(atomic_load(&ts.threads[0]) == 16 && atomic_load(&ts.used[0]) > 1);
    bk_parallel_for(2, 1, teams_nested_fn, &ts);
    BK_EXPECT(atomic_load(&ts.most_inside) == 1);

    /* shutdown, then the next call starts the workers again */
    bk_pool_shutdown();
    check_cover(5000, 10, 0);
    bk_pool_set_threads(0);
    BK_EXPECT(bk_pool_threads() >= 1);
    check_cover(5000, 10, 0);
    bk_pool_shutdown();
    BK_TEST_DONE();
}
