/* cmd_bake_job.c - a bake by a job of several processes (world.h: mpirun): the agreements, the
 * texels split into granules, and the gather of every rank's colours at rank 0. */
#include "cmd_bake_internal.h"
#include "util.h"
#include "world.h"

#include <stdlib.h>
#include <string.h>

/* One agreement of a job (bk_cmd_bake_job): 0 when every rank succeeded; else -1 on every rank, and rank
 * 0 prints the lowest failed rank's error (its own error it printed already). last: no agreement
 * follows this one. */
int bk_cmd_bake_job_agree(bk_cmd_bake_job *job, int ok, int last)
{
    char msg[1600];
    int  who = -1;
    if (bk_world_agree(ok, bk_cmd_bake_error_text(), msg, sizeof msg, &who) == 0) {
        if (last) job->stopped = 1;
        return 0;
    }
    job->stopped = 1;
    if (job->rank == 0 && who != 0) fprintf(stderr, "baker: %s; the job stops, nothing was written\n", msg);
    return -1;
}

/* A texel's pixel, from its refs once the whole texels are gone. */
static inline uint32_t pixel_of(const bk_texel *tx, const bk_texel_ref *refs, size_t i)
{
    return refs ? refs[i].pixel : tx[i].pixel;
}

/* bk_bake_run_opts.next_granule in a job: the job's next granule (world.h's counter), kept in
 * job->taken for the gather (called under the bake's lock, one at a time; taken has room for
 * every granule). */
uint64_t bk_cmd_bake_job_next_granule(void *ctx)
{
    bk_cmd_bake_job *job = ctx;
    const uint64_t   g = bk_world_counter_next();
    if (g < job->granules) job->taken[job->ntaken++] = (uint32_t)g;
    return g;
}

/* The granules' texel count (the last one may be short). */
static uint32_t granule_texels(uint32_t g, uint32_t G, uint32_t n) { return (uint64_t)(g + 1) * G < n ? G : n - g * G; }

/* What rank 0 unpacks (job_unpack): first every rank's list of granules, then the other ranks'
 * texel colours, granule after granule in the order of their lists. */
typedef struct job_recv {
    bk_f4              *tcol;
    uint8_t            *cov;
    const bk_texel     *tx; /* the texels, or (tx NULL) their refs */
    const bk_texel_ref *refs;
    uint32_t            n, granule, granules;
    uint32_t          **lists; /* per rank: its granules, counts[rank] of them */
    uint32_t           *counts;
    uint8_t            *seen; /* per granule: some rank's list named it */
} job_recv;

/* A gather's pieces, dropped (after a failure on rank 0). */
static int job_ignore(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err, size_t err_size)
{
    (void)ctx;
    (void)rank;
    (void)offset;
    (void)data;
    (void)bytes;
    (void)err;
    (void)err_size;
    return 0;
}

/* A piece of rank r's list of granules: each a granule no other rank took. */
static int job_unpack_list(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err,
                           size_t err_size)
{
    job_recv *j = ctx;
    if (offset % sizeof(uint32_t) || bytes % sizeof(uint32_t))
        return bk_fail(err, err_size, "rank %d sent a list of %zu bytes", rank, bytes);
    const uint64_t k0 = offset / sizeof(uint32_t), m = bytes / sizeof(uint32_t);
    if (k0 + m > j->granules)
        return bk_fail(err, err_size, "rank %d took more than the %u granules", rank, j->granules);
    uint32_t *l = j->lists[rank];
    if (!l && !(l = j->lists[rank] = malloc(sizeof(uint32_t) * j->granules)))
        return bk_fail(err, err_size, "out of memory for the granules of rank %d", rank);
    memcpy(l + k0, data, bytes);
    for (uint64_t k = k0; k < k0 + m; ++k) {
        if (l[k] >= j->granules || j->seen[l[k]])
            return bk_fail(err, err_size, "rank %d took granule %u, which is out of range or another rank's", rank,
                           l[k]);
        j->seen[l[k]] = 1;
    }
    j->counts[rank] = (uint32_t)(k0 + m);
    return 0;
}

/* A piece of rank r's colours: its granules' texels in the order of its list; a colour with
 * w < 0 (a variance never is) marks a texel found inside geometry, as the bake left it: colour 0
 * and its pixel's coverage cleared. */
static int job_unpack(void *ctx, int rank, uint64_t offset, const void *data, size_t bytes, char *err, size_t err_size)
{
    job_recv *j = ctx;
    if (rank == 0) return 0; /* rank 0's share is in place */
    if (offset % sizeof(bk_f4) || bytes % sizeof(bk_f4))
        return bk_fail(err, err_size, "rank %d sent a piece of %zu bytes", rank, bytes);
    const uint64_t       k0 = offset / sizeof(bk_f4), m = bytes / sizeof(bk_f4), G = j->granule;
    const unsigned char *p = data;
    /* the granule that colour k0 falls in: every granule but the job's last holds G texels */
    uint64_t at = 0;
    uint32_t gi = 0;
    while (gi < j->counts[rank] && at + granule_texels(j->lists[rank][gi], j->granule, j->n) <= k0)
        at += granule_texels(j->lists[rank][gi++], j->granule, j->n);
    for (uint64_t k = k0; k < k0 + m; ++k) {
        while (gi < j->counts[rank] && k >= at + granule_texels(j->lists[rank][gi], j->granule, j->n))
            at += granule_texels(j->lists[rank][gi++], j->granule, j->n);
        if (gi >= j->counts[rank])
            return bk_fail(err, err_size, "rank %d sent more than the texels of its %u granules", rank,
                           j->counts[rank]);
        const uint64_t t = (uint64_t)j->lists[rank][gi] * G + (k - at);
        bk_f4          c;
        memcpy(&c, p + (k - k0) * sizeof(bk_f4), sizeof c);
        if (c.w < 0) {
            c.x = c.y = c.z = c.w = 0.0f;
            j->cov[pixel_of(j->tx, j->refs, t)] = 0;
        }
        j->tcol[t] = c;
    }
    return 0;
}


/* What a job's ranks compare (bk_cmd_bake_job_share): the same command on the same files gives every rank
 * the same atlas; a rank that got another one (another file, another option) would send colours
 * for the wrong texels. FNV-1a over the texel count, the image height, the granule, the bake's
 * parameters and 64 whole texels spread over the array (tx, or made from their refs by mt when
 * the host holds only those), taken before the bake. */
uint64_t bk_cmd_bake_job_key(const bk_cmd_bake_job *job, const bk_cmd_bake_cli *c, const bk_texel *tx,
                             const bk_cmd_bake_made_texels *mt, uint32_t ntx, int img_h)
{
    const uint32_t       G = job->granule;
    uint64_t             key = 1469598103934665603ull;
    const uint64_t       facts[3] = { ntx, (uint64_t)img_h, G };
    const unsigned char *b = (const unsigned char *)facts;
    for (size_t k = 0; k < sizeof facts; ++k) key = (key ^ b[k]) * 1099511628211ull;
    b = (const unsigned char *)&c->p;
    for (size_t k = 0; k < sizeof c->p; ++k) key = (key ^ b[k]) * 1099511628211ull;
    for (uint32_t k = 0; ntx && k < 64; ++k) {
        const uint32_t i = (uint32_t)((uint64_t)ntx * k / 64);
        bk_texel       t;
        if (tx) t = tx[i];
        else bk_cmd_bake_make_texels((void *)mt, i, 1, &t); /* only their refs are held: the same bits */
        b = (const unsigned char *)&t;
        for (size_t q = 0; q < sizeof t; ++q) key = (key ^ b[q]) * 1099511628211ull;
    }
    return key;
}

/* The end of a job's bake, on every rank: the agreement that every rank baked its share; a check
 * that they baked the same thing (key: bk_cmd_bake_job_key); the counters summed (the seconds: the longest
 * rank's); then the other ranks' shares to rank 0, into tcol and cov, as if it had baked every
 * texel itself. */
int bk_cmd_bake_job_share(bk_cmd_bake_job *job, const bk_cmd_bake_cli *c, uint64_t key, const bk_texel *tx,
                          const bk_texel_ref *refs, uint32_t ntx, uint8_t *cov, bk_f4 *tcol, bk_bake_result *res)
{
    const double   t0 = bk_time_now();
    const uint32_t ranks = (uint32_t)job->size, rank = (uint32_t)job->rank, G = job->granule;
    uint32_t       mine = 0; /* the texels of the granules this rank took */
    for (uint32_t i = 0; i < job->ntaken; ++i) mine += granule_texels(job->taken[i], G, ntx);
    const uint32_t own = rank ? mine : 0; /* what it sends (rank 0's stay in place) */
    bk_f4         *send = own ? malloc(sizeof(bk_f4) * own) : NULL;
    if (own && !send) bk_cmd_bake_error("out of memory for the colours of %u texels to send to rank 0", own);
    if (bk_cmd_bake_job_agree(job, !own || send, 0)) {
        free(send);
        return -1;
    }
    const double t1 = bk_time_now();
    job->wait_seconds = t1 - t0;
    int other = -1;
    if (bk_world_same_u64(key, &other)) {
        job->stopped = 1;
        if (rank == 0)
            fprintf(stderr,
                    "baker: rank %d of %d has another atlas or other options than rank 0 (%u texels, %u spp here): "
                    "every rank "
                    "must run the same command on the same files; the job stops, nothing was written\n",
                    other, job->size, ntx, c->p.spp);
        free(send);
        return -1;
    }
    uint64_t u[7] = { res->totals.rays,   res->totals.nodes, res->totals.tris, res->totals.restarts,
                      res->totals.spills, res->launches,     res->invalid };
    bk_world_sum_u64(u, 7);
    res->totals.rays = u[0];
    res->totals.nodes = u[1];
    res->totals.tris = u[2];
    res->totals.restarts = u[3];
    res->totals.spills = u[4];
    res->launches = (uint32_t)u[5];
    res->invalid = (uint32_t)u[6];
    double d[4] = { res->totals.seconds, res->totals.upload_seconds, res->longest_launch_ms, res->wall_seconds };
    bk_world_max_f64(d, 4);
    res->totals.seconds = d[0];
    res->totals.upload_seconds = d[1];
    res->longest_launch_ms = d[2];
    res->wall_seconds = d[3];
    /* the share, packed: the granules in the order taken; inside geometry marked by w = -1 (a
     * texel has one pixel of its own, cleared in cov by the bake when it was found inside) */
    uint64_t k = 0;
    for (uint32_t i = 0; rank && i < job->ntaken; ++i)
        for (uint64_t t = (uint64_t)job->taken[i] * G, e = t + granule_texels(job->taken[i], G, ntx); t < e; ++t) {
            bk_f4 v = tcol[t];
            if (!cov[pixel_of(tx, refs, t)]) v.w = -1.0f;
            send[k++] = v;
        }
    BK_CHECK(k == own);
    job_recv jr;
    memset(&jr, 0, sizeof jr);
    jr.tcol = tcol;
    jr.cov = cov;
    jr.tx = tx;
    jr.refs = refs;
    jr.n = ntx;
    jr.granule = G;
    jr.granules = job->granules;
    char err[1024];
    err[0] = 0;
    int rc = 0;
    if (rank == 0) {
        jr.lists = calloc(ranks, sizeof *jr.lists);
        jr.counts = calloc(ranks, sizeof *jr.counts);
        jr.seen = calloc(job->granules ? job->granules : 1, 1);
        if (!jr.lists || !jr.counts || !jr.seen)
            rc = bk_fail(err, sizeof err, "out of memory for the job's lists of granules");
    }
    /* which granules each rank took, then their colours (a failure on rank 0 still takes both
     * gathers' bytes: the other ranks send them either way) */
    if (bk_world_gather(job->taken, sizeof(uint32_t) * (uint64_t)job->ntaken, rc ? job_ignore : job_unpack_list, &jr,
                        err, sizeof err))
        rc = -1;
    for (uint32_t g = 0; rank == 0 && !rc && g < job->granules; ++g)
        if (!jr.seen[g]) rc = bk_fail(err, sizeof err, "no rank baked granule %u of %u", g, job->granules);
    if (bk_world_gather(send, sizeof(bk_f4) * (uint64_t)own, rc ? job_ignore : job_unpack, &jr, err, sizeof err))
        rc = -1;
    free(send);
    for (uint32_t r = 0; jr.lists && r < ranks; ++r) free(jr.lists[r]);
    free(jr.lists);
    free(jr.counts);
    free(jr.seen);
    if (rc) {
        bk_cmd_bake_error("%s", err);
        return -1;
    }
    if (rank == 0) job->gather_bytes = sizeof(bk_f4) * (uint64_t)(ntx - mine);
    job->gather_seconds = bk_time_now() - t1;
    return 0;
}
