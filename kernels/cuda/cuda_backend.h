/* cuda_backend.h - the CUDA backend's entry points (kernels/cuda/cuda_backend.cu), which only the backend
 * registry (src/registry/registry.c, the row "cuda") calls: the rest of baker holds a bk_backend. */
#ifndef BK_CUDA_BACKEND_H
#define BK_CUDA_BACKEND_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device 0, or the given one (CUDA's numbering); NULL and a reason in msg when it cannot start. */
bk_backend *bk_backend_cuda_init(char *msg, size_t msg_size);
bk_backend *bk_backend_cuda_init_device(int device, char *msg, size_t msg_size);
int         bk_cuda_device_count(void);
/* Destroys the device's primary context (cudaDeviceReset): nothing of it may be used after. */
void bk_cuda_device_release(int device);

#ifdef __cplusplus
}
#endif
#endif
