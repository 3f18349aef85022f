/* registry.h - the backends by name: one row per backend, in the manner of ggml's backend
 * registry, and the by-name factory over it ("cpu", "cuda", "auto").
 *
 * Pipeline: --backend NAME -> bk_backend_init / bk_backend_init_devices -> a row's init -> a
 * bk_backend (backend.h). "auto" is a rule over the rows, not a row: the first row that starts a
 * device and can be made, else the host's row. Callers never test a backend's name; the one
 * lookup of a name is here (src/registry/registry.c).
 *
 * Sits above every backend (src/backend*.c and the CUDA files of kernels/): it calls their init functions; none of
 * them includes this header.
 */
#ifndef BK_REGISTRY_H
#define BK_REGISTRY_H

#include <stddef.h>
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One backend. A new backend is a row in src/registry/registry.c's table plus its own code. */
typedef struct bk_backend_reg {
    const char *name;          /* what --backend takes: "cpu", "cuda" */
    const char *device_word;   /* its devices in messages: "no usable CUDA device" */
    int         starts_device; /* 1: making it may start a device (a CUDA context, then uploads: a
                                  core busy for a while, on the thread that starts it); 0: the
                                  host's own threads. The host's row ("auto"'s fallback) is the
                                  first with 0. */
    /* the devices it can bake on (0 without any; the host: 1, all its cores) */
    int (*device_count)(void);
    /* its backend on its first device, or NULL with the reason in msg (written on success too:
       what was made, for "auto"'s message) */
    bk_backend *(*init)(char *msg, size_t msg_size);
    /* its backend on device k (numbers from 0), or NULL with the reason; NULL: it has one device
       only, and one_device says so to --devices */
    bk_backend *(*init_device)(int device, char *msg, size_t msg_size);
    const char *one_device;
    /* lets go of device k for good (the CUDA context's teardown), or NULL */
    void (*release)(int device);
} bk_backend_reg;

/* The rows, in order of preference for "auto" (the host last is not required: the first row that
 * does not start a device is the fallback). */
int                   bk_backend_reg_count(void);
const bk_backend_reg *bk_backend_reg_get(int i);
/* The row of a backend's name; NULL for "auto" and for an unknown name. */
const bk_backend_reg *bk_backend_reg_find(const char *name);
/* 1 for a row's name or "auto" (what --backend accepts), else 0. */
int bk_backend_known(const char *name);
/* The accepted names into buf, the rows' then "auto", between sep with last before the last one:
 * (", ", " or ") gives "cpu, cuda or auto", ("|", "|") "cpu|cuda|auto". Returns buf. */
const char *bk_backend_names(char *buf, size_t size, const char *sep, const char *last);

/* "cpu", "cuda" or "auto". NULL with a reason in msg when it cannot be made ("cuda" without a
 * usable GPU). For "auto", msg says which backend was chosen and why. */
bk_backend *bk_backend_init(const char *name, char *msg, size_t msg_size);
/* The devices backend `name` can bake on: "cuda": the CUDA devices (0 without CUDA or a GPU);
 * "cpu": 1 (all its cores); "auto": the CUDA devices, else 1. */
int bk_backend_device_count(const char *name);
/* 1 when starting backend `name` may start a device (a CUDA context, then uploads: a core busy
 * for a while, on the thread that starts it), 0 for the host's own threads ("cpu"). */
int bk_backend_starts_device(const char *name);
/* bk_backend_init on devices[0 .. n) of that backend (numbers from 0, as CUDA counts them): one
 * device gives that device's backend, several a group of them (bk_backend_group). A device
 * named twice gets two backends of its own (a one-GPU machine can run the multi-device bake). */
bk_backend *bk_backend_init_devices(const char *name, const int *devices, int n, char *msg, size_t msg_size);
/* bk_backend_free, and then the contexts of its GPUs, for the last use of them in the process:
 * their teardown (about 55 ms on the H100) runs here, where the caller can overlap it with other
 * work, instead of in the process's exit. */
void bk_backend_free_last(bk_backend *be);

#ifdef __cplusplus
}
#endif
#endif
