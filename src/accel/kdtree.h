/* kdtree.h - the SAH KD-tree builder (src/accel/kdtree.c): bk_scene -> bk_accel of type BK_ACCEL_KDTREE. */
#ifndef BK_KDTREE_H
#define BK_KDTREE_H

#include "accel.h"
#include "scene.h"

#include <stddef.h>

/* 0, or a negative status with a message in err (too many primitives, out of memory). o may be
 * NULL (bk_build_opts_default). */
int bk_kd_build(const bk_scene *s, const bk_build_opts *o, bk_accel *out, char *err, size_t err_size);

#endif /* BK_KDTREE_H */
