/* backend.c - picking a backend, and the names of the trace options. */
#include "backend.h"
#include "bvh_cw.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bk_trace_opts bk_trace_opts_default(void)
{
    bk_trace_opts o;
    memset(&o, 0, sizeof o);
    o.stack_mode = BK_STACK_GLOBAL;
    o.stack_size = 8;
    o.counters = BK_COUNTERS_WARP;
    return o;
}

bk_backend *bk_backend_init(const char *name, char *msg, size_t msg_size)
{
    if (msg && msg_size) msg[0] = 0;
    if (!strcmp(name, "cpu")) return bk_backend_cpu_init();
    if (!strcmp(name, "cuda") || !strcmp(name, "auto")) {
        char why[256] = "baker was built without CUDA (nvcc was not found at configure time)";
#if BK_HAVE_CUDA
        bk_backend *be = bk_backend_cuda_init(why, sizeof why);
        if (be) {
            if (!strcmp(name, "auto")) bk_fail(msg, msg_size, "auto backend: using cuda (%s)", why);
            return be;
        }
#endif
        if (!strcmp(name, "cuda")) { bk_fail(msg, msg_size, "--backend cuda: %s", why); return NULL; }
        bk_fail(msg, msg_size, "auto backend: no usable GPU (%s); using the CPU", why);
        return bk_backend_cpu_init();
    }
    bk_fail(msg, msg_size, "unknown backend '%s' (expected cpu, cuda or auto)", name);
    return NULL;
}

bk_cwbvh *bk_backend_cw_layout(const bk_accel_view *bin, bk_accel_view *view)
{
    if (bin->type != BK_ACCEL_BVH || bin->prim != BK_PRIM_TRI) return NULL;
    bk_cwbvh *cw = malloc(sizeof *cw);
    if (!cw) return NULL;
    if (bk_cwbvh_build(bin, cw, NULL, 0)) { free(cw); return NULL; }
    *view = bk_cwbvh_view(cw, bin);
    return cw;
}

void bk_backend_cw_free(bk_cwbvh *cw)
{
    if (!cw) return;
    bk_cwbvh_free(cw);
    free(cw);
}

int bk_backend_starts_device(const char *name) { return strcmp(name, "cpu") != 0; }

int bk_backend_device_count(const char *name)
{
    if (!strcmp(name, "cpu")) return 1;
#if BK_HAVE_CUDA
    int n = bk_cuda_device_count();
    if (n > 0 || !strcmp(name, "cuda")) return n;
#else
    if (!strcmp(name, "cuda")) return 0;
#endif
    return !strcmp(name, "auto") ? 1 : 0;
}

bk_backend *bk_backend_init_devices(const char *name, const int *devices, int n, char *msg, size_t msg_size)
{
    if (msg && msg_size) msg[0] = 0;
    if (n <= 1 && (n < 1 || devices[0] == 0)) return bk_backend_init(name, msg, msg_size);
#if BK_HAVE_CUDA
    if (strcmp(name, "cpu") && bk_cuda_device_count() > 0) {
        bk_backend **m = calloc((size_t)n, sizeof *m);
        if (!m) { bk_fail(msg, msg_size, "out of memory"); return NULL; }
        char why[256] = "";
        for (int k = 0; k < n; ++k) {
            if (!(m[k] = bk_backend_cuda_init_device(devices[k], why, sizeof why))) {
                bk_fail(msg, msg_size, "--devices: %s", why);
                for (int j = 0; j < k; ++j) bk_backend_free(m[j]);
                free(m);
                return NULL;
            }
        }
        bk_backend *be = n == 1 ? m[0] : bk_backend_group(m, n);
        free(m);
        if (!be) bk_fail(msg, msg_size, "out of memory");
        else if (!strcmp(name, "auto")) bk_fail(msg, msg_size, "auto backend: using cuda on %d device%s", n, n > 1 ? "s" : "");
        return be;
    }
#endif
    if (!strcmp(name, "cuda")) bk_fail(msg, msg_size, "--backend cuda: no usable CUDA device");
    else bk_fail(msg, msg_size, "--devices: the CPU backend has one device, 0 (all its cores)");
    return NULL;
}

void bk_backend_free(bk_backend *be)
{
    if (be) be->i->free(be);
}

void bk_backend_free_last(bk_backend *be)
{
    if (!be) return;
    enum { MAX_DEV = 256 };
    int dev[MAX_DEV], n = 0;
    bk_backend_caps caps;
    be->i->caps(be, &caps);
    for (int k = 0; k < caps.devices && n < MAX_DEV; ++k) {
        bk_backend *m = bk_backend_member(be, k);
        bk_backend_caps mc;
        if (!m) continue;
        m->i->caps(m, &mc);
        int dup = mc.device < 0;
        for (int j = 0; j < n && !dup; ++j) dup = dev[j] == mc.device;   /* a device named twice: once */
        if (!dup) dev[n++] = mc.device;
    }
    bk_backend_free(be);
#if BK_HAVE_CUDA
    for (int j = 0; j < n; ++j) bk_cuda_device_release(dev[j]);
#endif
}

static const char *const stack_names[] = { "global", "short", "spill" };
static const char *const counter_names[] = { "thread", "warp", "block" };

const char *bk_stack_mode_name(int mode) { return mode >= 0 && mode < 3 ? stack_names[mode] : "?"; }
const char *bk_counters_name(int c)      { return c >= 0 && c < 3 ? counter_names[c] : "?"; }

int bk_stack_mode_parse(const char *s)
{
    for (int i = 0; i < 3; ++i) if (!strcmp(s, stack_names[i])) return i;
    return -1;
}

int bk_counters_parse(const char *s)
{
    for (int i = 0; i < 3; ++i) if (!strcmp(s, counter_names[i])) return i;
    return -1;
}
