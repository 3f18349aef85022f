/* registry.c - the backend table and the by-name factory over it (registry.h). */
#include "registry.h"
#include "util.h"
#if BK_HAVE_CUDA
#include "cuda_backend.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AUTO_NAME "auto"

/* ---- the rows' functions -------------------------------------------------------------------- */

static int cpu_device_count(void) { return 1; }

static bk_backend *cpu_init(char *msg, size_t msg_size)
{
    bk_backend *be = bk_backend_cpu_init();
    if (!be) bk_fail(msg, msg_size, "out of memory");
    return be;
}

#if BK_HAVE_CUDA
static bk_backend *cuda_init(char *msg, size_t msg_size) { return bk_backend_cuda_init(msg, msg_size); }
static int         cuda_device_count(void) { return bk_cuda_device_count(); }
static bk_backend *cuda_init_device(int device, char *msg, size_t msg_size)
{
    return bk_backend_cuda_init_device(device, msg, msg_size);
}
static void cuda_release(int device) { bk_cuda_device_release(device); }
#else
static const char  cuda_missing[] = "baker was built without CUDA (nvcc was not found at configure time)";
static bk_backend *cuda_init(char *msg, size_t msg_size)
{
    bk_fail(msg, msg_size, "%s", cuda_missing);
    return NULL;
}
static int         cuda_device_count(void) { return 0; }
static bk_backend *cuda_init_device(int device, char *msg, size_t msg_size)
{
    (void)device;
    bk_fail(msg, msg_size, "%s", cuda_missing);
    return NULL;
}
#define cuda_release NULL
#endif

/* ---- the table ------------------------------------------------------------------------------ */

static const bk_backend_reg rows[] = {
    {
        .name = "cpu",
        .device_word = "CPU",
        .starts_device = 0,
        .device_count = cpu_device_count,
        .init = cpu_init,
        .init_device = NULL,
        .one_device = "the CPU backend has one device, 0 (all its cores)",
        .release = NULL,
    },
    {
        .name = "cuda",
        .device_word = "CUDA",
        .starts_device = 1,
        .device_count = cuda_device_count,
        .init = cuda_init,
        .init_device = cuda_init_device,
        .one_device = NULL,
        .release = cuda_release,
    },
};
enum { ROWS = (int)(sizeof rows / sizeof rows[0]) };

int bk_backend_reg_count(void) { return ROWS; }

const bk_backend_reg *bk_backend_reg_get(int i) { return i >= 0 && i < ROWS ? &rows[i] : NULL; }

/* The one lookup of a backend's name: a row's index, ROWS for "auto", -1 when unknown. */
static int reg_lookup(const char *name)
{
    for (int i = 0; i < ROWS; ++i)
        if (!strcmp(name, rows[i].name)) return i;
    return !strcmp(name, AUTO_NAME) ? ROWS : -1;
}

const bk_backend_reg *bk_backend_reg_find(const char *name)
{
    int i = reg_lookup(name);
    return i >= 0 && i < ROWS ? &rows[i] : NULL;
}

int bk_backend_known(const char *name) { return reg_lookup(name) >= 0; }

const char *bk_backend_names(char *buf, size_t size, const char *sep, const char *last)
{
    const char *words[ROWS + 1];
    for (int i = 0; i < ROWS; ++i) words[i] = rows[i].name;
    words[ROWS] = AUTO_NAME;
    return bk_join_words(buf, size, words, ROWS + 1, sep, last);
}

/* "auto"'s fallback: the first row that does not start a device */
static const bk_backend_reg *host_row(void)
{
    for (int i = 0; i < ROWS; ++i)
        if (!rows[i].starts_device) return &rows[i];
    return &rows[0];
}

/* "auto" for --devices: the first row that starts a device and has any, else the host's */
static const bk_backend_reg *auto_devices_row(void)
{
    for (int i = 0; i < ROWS; ++i)
        if (rows[i].starts_device && rows[i].device_count() > 0) return &rows[i];
    return host_row();
}

/* ---- the factory ---------------------------------------------------------------------------- */

/* "auto": each row that starts a device, in order, until one can be made; else the host's row. */
static bk_backend *init_auto(char *msg, size_t msg_size)
{
    char why[256] = "";
    for (int i = 0; i < ROWS; ++i) {
        if (!rows[i].starts_device) continue;
        bk_backend *be = rows[i].init(why, sizeof why);
        if (be) {
            bk_fail(msg, msg_size, "auto backend: using %s (%s)", rows[i].name, why);
            return be;
        }
    }
    bk_fail(msg, msg_size, "auto backend: no usable GPU (%s); using the CPU", why);
    return host_row()->init(why, sizeof why);
}

bk_backend *bk_backend_init(const char *name, char *msg, size_t msg_size)
{
    if (msg && msg_size) msg[0] = 0;
    int i = reg_lookup(name);
    if (i == ROWS) return init_auto(msg, msg_size);
    if (i < 0) {
        char names[128];
        bk_fail(msg, msg_size, "unknown backend '%s' (expected %s)", name,
                bk_backend_names(names, sizeof names, ", ", " or "));
        return NULL;
    }
    const bk_backend_reg *r = &rows[i];
    if (!r->starts_device) return r->init(msg, msg_size);
    char        why[256] = "";
    bk_backend *be = r->init(why, sizeof why);
    if (!be) bk_fail(msg, msg_size, "--backend %s: %s", r->name, why);
    return be;
}

int bk_backend_starts_device(const char *name)
{
    int i = reg_lookup(name);
    if (i >= 0 && i < ROWS) return rows[i].starts_device;
    return 1; /* "auto" (and a name not known): it may */
}

int bk_backend_device_count(const char *name)
{
    int i = reg_lookup(name);
    if (i == ROWS) return auto_devices_row()->device_count();
    return i >= 0 ? rows[i].device_count() : 0;
}

/* One backend per device of row r, grouped when there are several. */
static bk_backend *init_members(const bk_backend_reg *r, int is_auto, const int *devices, int n, char *msg,
                                size_t msg_size)
{
    bk_backend **m = calloc((size_t)n, sizeof *m);
    if (!m) {
        bk_fail(msg, msg_size, "out of memory");
        return NULL;
    }
    char why[256] = "";
    for (int k = 0; k < n; ++k) {
        if (!(m[k] = r->init_device(devices[k], why, sizeof why))) {
            bk_fail(msg, msg_size, "--devices: %s", why);
            for (int j = 0; j < k; ++j) bk_backend_free(m[j]);
            free(m);
            return NULL;
        }
    }
    bk_backend *be = n == 1 ? m[0] : bk_backend_group(m, n);
    free(m);
    if (!be) bk_fail(msg, msg_size, "out of memory");
    else if (is_auto) bk_fail(msg, msg_size, "auto backend: using %s on %d device%s", r->name, n, n > 1 ? "s" : "");
    return be;
}

bk_backend *bk_backend_init_devices(const char *name, const int *devices, int n, char *msg, size_t msg_size)
{
    if (msg && msg_size) msg[0] = 0;
    if (n <= 1 && (n < 1 || devices[0] == 0)) return bk_backend_init(name, msg, msg_size);
    int i = reg_lookup(name);
    if (i < 0) return bk_backend_init(name, msg, msg_size); /* says it is unknown */
    const bk_backend_reg *r = i == ROWS ? auto_devices_row() : &rows[i];
    if (r->init_device && r->device_count() > 0) return init_members(r, i == ROWS, devices, n, msg, msg_size);
    if (r->init_device) bk_fail(msg, msg_size, "--backend %s: no usable %s device", r->name, r->device_word);
    else bk_fail(msg, msg_size, "--devices: %s", r->one_device);
    return NULL;
}

void bk_backend_free_last(bk_backend *be)
{
    if (!be) return;
    enum { MAX_DEV = 256 };
    int                   dev[MAX_DEV], n = 0;
    const bk_backend_reg *row[MAX_DEV];
    bk_backend_caps       caps;
    be->i->caps(be, &caps);
    for (int k = 0; k < caps.devices && n < MAX_DEV; ++k) {
        bk_backend     *m = bk_backend_member(be, k);
        bk_backend_caps mc;
        if (!m) continue;
        m->i->caps(m, &mc);
        const bk_backend_reg *r = bk_backend_reg_find(m->i->name(m));
        int                   dup = mc.device < 0 || !r || !r->release;
        for (int j = 0; j < n && !dup; ++j) dup = dev[j] == mc.device && row[j] == r; /* a device named twice: once */
        if (!dup) {
            row[n] = r;
            dev[n++] = mc.device;
        }
    }
    bk_backend_free(be);
    for (int j = 0; j < n; ++j) row[j]->release(dev[j]);
}
