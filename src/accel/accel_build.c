/* accel_build.c - bk_accel_build: the builder for an acceleration structure type. */
#include "accel_build.h"
#include "bvh.h"
#include "kdtree.h"
#include "util.h"

int bk_accel_build(const bk_scene *s, int type, const bk_build_opts *o, bk_accel *out, char *err, size_t err_size)
{
    if (type == BK_ACCEL_BVH) return bk_bvh_build(s, o, out, err, err_size);
    if (type == BK_ACCEL_KDTREE) return bk_kd_build(s, o, out, err, err_size);
    return bk_fail(err, err_size, "unknown acceleration structure %d", type);
}
