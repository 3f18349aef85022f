/* cmd_bake_backend.c - the bake's backend started on a thread of its own while the host loads,
 * builds and makes the atlas, and let go on another once the bake is done with it. */
#include "cmd_bake_internal.h"
#include "registry.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static void *be_start_run(void *arg)
{
    bk_cmd_bake_start *b = (bk_cmd_bake_start *)arg;
    /* --devices, or all the devices there are (the CPU: one); in a job of several ranks on this
     * host, the ones numbered local_rank modulo local_size, or device local_rank modulo the count */
    int all[BK_BAKE_MAX_DEVICES], m = 0;
    if (!b->devices) {
        int n = bk_backend_device_count(b->name);
        if (n > BK_BAKE_MAX_DEVICES) n = BK_BAKE_MAX_DEVICES;
        for (int k = 0; k < n; ++k)
            if (b->local_size <= 1 || k % b->local_size == b->local_rank) all[m++] = k;
        if (!m && n > 0) all[m++] = b->local_rank % n;
    }
    bk_backend *be = b->devices ? bk_backend_init_devices(b->name, b->devices, b->ndevices, b->note, sizeof b->note)
                                : bk_backend_init_devices(b->name, all, m, b->note, sizeof b->note);
    int         ok = be != NULL;
    if (!be) {
        snprintf(b->msg, sizeof b->msg, "%s", b->note);
        b->note[0] = 0;
    } else ok = be->i->supports(be, b->opts, b->msg, sizeof b->msg);
    pthread_mutex_lock(&b->lock);
    b->be = be;
    b->ok = ok;
    b->started = 1;
    b->t_started = bk_time_now();
    pthread_cond_broadcast(&b->cv);
    while (ok && !b->view && !b->stop) pthread_cond_wait(&b->cv, &b->lock);
    const bk_accel_view *v = b->stop ? NULL : b->view;
    pthread_mutex_unlock(&b->lock);
    if (ok && v) b->ok = be->i->upload(be, v, b->msg, sizeof b->msg) == 0;
    return NULL;
}

void bk_cmd_bake_start_begin(bk_cmd_bake_start *b, const char *name, const int *devices, int ndevices, int local_rank,
                             int local_size, const bk_trace_opts *opts)
{
    memset(b, 0, sizeof *b);
    b->name = name;
    b->opts = opts;
    b->devices = devices;
    b->ndevices = ndevices;
    b->local_rank = local_rank;
    b->local_size = local_size;
    pthread_mutex_init(&b->lock, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->running = pthread_create(&b->th, NULL, be_start_run, b) == 0;
    if (!b->running) b->stop = 1, be_start_run(b); /* no thread: the start here and now */
}

/* Hands the accel over for upload; 0, or -1 when the start is known to have failed. */
int bk_cmd_bake_start_give(bk_cmd_bake_start *b, const bk_accel_view *v)
{
    if (!b->running) { /* started here: upload here */
        if (b->ok) b->ok = b->be->i->upload(b->be, v, b->msg, sizeof b->msg) == 0;
        return b->ok ? 0 : -1;
    }
    pthread_mutex_lock(&b->lock);
    int failed = b->started && !b->ok;
    b->view = v;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->lock);
    return failed ? -1 : 0;
}

/* Waits for the thread (giving up on the upload when the accel was never handed over); the
 * backend, or NULL. *start_wait and *upload_wait (may be NULL) get the time spent waiting before
 * and after the start was done. */
bk_backend *bk_cmd_bake_start_finish(bk_cmd_bake_start *b, double *start_wait, double *upload_wait)
{
    const double t0 = bk_time_now();
    if (b->running) {
        pthread_mutex_lock(&b->lock);
        if (!b->view) b->stop = 1;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->th, NULL);
        b->running = 0;
    }
    const double t1 = bk_time_now();
    double       s = b->t_started > t0 ? b->t_started - t0 : 0.0;
    if (s > t1 - t0) s = t1 - t0;
    if (start_wait) *start_wait += s;
    if (upload_wait) *upload_wait += (t1 - t0) - s;
    return b->be;
}


void *bk_cmd_bake_release_run(void *arg)
{
    bk_cmd_bake_release *r = arg;
    bk_gpu_ops_free(r->gpu);
    bk_backend_free_last(r->be);
    return NULL;
}

/* Waits for it, if it runs. */
void bk_cmd_bake_release_finish(bk_cmd_bake_release *r)
{
    if (r->running) pthread_join(r->th, NULL);
    r->running = 0;
}
