/* rays.h - RAYS / HITS files (docs/formats.md) and the standard ray sets.
 *
 * Ray sets are seeded and reproducible, so baker, Embree and OptiX can be compared on the same
 * rays: `baker rays SCENE -o R --diffuse N` and `--primary N`.
 */
#ifndef BK_RAYS_H
#define BK_RAYS_H

#include "scene.h"
#include "bk_traverse.h"

#include <stdio.h>

/* The most records a RAYS or HITS file may hold: 2^30 rays are 32 GiB of rays. */
#define BK_RAYS_MAX (1ull << 30)

/* Readers: a regular file, its magic, its header and its size checked (one line in err naming the
 * file); writers: temporary file + rename (outputs.h). */
int bk_rays_read(const char *path, bk_ray **rays, uint64_t *n, char *err, size_t err_size);
int bk_rays_write(const char *path, const bk_ray *rays, uint64_t n, char *err, size_t err_size);
int bk_hits_read(const char *path, bk_hit **hits, uint64_t *n, char *err, size_t err_size);
int bk_hits_write(const char *path, const bk_hit *hits, uint64_t n, char *err, size_t err_size);
/* The writers into an open stream (an output of bk_outputs); path names it in messages. */
int bk_rays_write_file(FILE *f, const char *path, const bk_ray *rays, uint64_t n, char *err, size_t err_size);
int bk_hits_write_file(FILE *f, const char *path, const bk_hit *hits, uint64_t n, char *err, size_t err_size);

/* Diffuse rays: a triangle chosen with probability proportional to its area, a uniform point on
 * it, one of its two sides with equal probability, the origin pushed 1e-4 of the scene's bounding
 * box diagonal along that side's normal, a cosine-distributed direction about it, tmin 0,
 * tmax infinite. */
int bk_rays_diffuse(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size);
/* The same from the front side only (where the winding normal points): for a closed surface such
 * as a voxel scene's (voxmesh.h), rays that start outside the solid. */
int bk_rays_diffuse_front(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size);
/* Primary rays: a pinhole camera at the centre of the scene box, looking along its longest
 * horizontal axis (+y up), 60 degree vertical field of view, jittered over a square image. */
int bk_rays_primary(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size);
/* Test rays: origins uniform in the scene box grown by 20 %, uniform directions; every 7th ray
 * has a direction along a single axis, every 11th a finite tmax. */
int bk_rays_random(const bk_scene *s, uint64_t n, uint32_t seed, bk_ray **out, char *err, size_t err_size);

/* Short rays (ambient-occlusion style, rays that end soon): every tmax at most fraction times the
 * diagonal of s's box (bk_scene_bounds). */
void bk_rays_limit(bk_ray *rays, uint64_t n, const bk_scene *s, float fraction);

/* The rays in place in the order the trace sorts them by (--ray-order sorted: bits 24; binned:
 * BK_RAY_ORDER_BINNED_BITS): by the top bits of bk_ray_order_key (kernels/bk_ray.h) over the box
 * lo..hi (the accel's: bk_accel.lo, hi), stable, so rays with equal keys keep their order, as in
 * the trace's radix sort. -1 (err) for bits outside 1..24 or without memory. */
int bk_rays_sort(bk_ray *rays, uint64_t n, bk_vec3 lo, bk_vec3 hi, int bits, char *err, size_t err_size);

/* rays.md: two tracers agree on a ray when both miss, or both hit with relative t difference
 * under rel (ties on shared edges may name different triangles at the same t). In any-hit mode
 * only hit or miss is compared. */
int bk_hit_agree(bk_hit a, bk_hit b, int any_hit, float rel);

void bk_scene_bounds(const bk_scene *s, float lo[3], float hi[3]);

#endif
