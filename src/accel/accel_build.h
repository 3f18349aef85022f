/* accel_build.h - one entry to the builders: bk_accel_build picks bvh.h's or kdtree.h's by type.
 * It sits above both (the builders include accel.h, never this), so the arrows point down. */
#ifndef BK_ACCEL_BUILD_H
#define BK_ACCEL_BUILD_H

#include "accel.h"
#include "scene.h"

#include <stddef.h>

/* type: enum bk_accel_type. 0, or a negative status with a message in err (an unknown type, or
 * what the builder reports). */
int bk_accel_build(const bk_scene *s, int type, const bk_build_opts *o, bk_accel *out, char *err, size_t err_size);

#endif /* BK_ACCEL_BUILD_H */
