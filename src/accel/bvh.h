/* bvh.h - the binned SAH BVH builder (src/accel/bvh.c): bk_scene -> bk_accel of type BK_ACCEL_BVH. */
#ifndef BK_BVH_H
#define BK_BVH_H

#include "accel.h"
#include "scene.h"

#include <stddef.h>

/* 0, or a negative status with a message in err (no triangles, out of memory). */
int bk_bvh_build(const bk_scene *s, const bk_build_opts *o, bk_accel *out, char *err, size_t err_size);

#endif /* BK_BVH_H */
