/* vox.h - MagicaVoxel scenes: what the .vox reader (vox.c) puts into a bk_scene.
 *
 * Pipeline: .vox file -> bk_scene_load_vox -> bk_scene (vox_models, vox_instances, 256 palette
 * materials) -> voxel surface (voxmesh.c: visible faces, merged quads, charts) for the atlas and
 * the bake's texels, and -> the builders' top level over instance boxes + the brick DDA
 * (kernels/bk_voxel.h) for tracing.
 *
 * Coordinates. A model's voxel (x, y, z) is the unit cell [x, x+1] x [y, y+1] x [z, z+1] of model
 * space (z up, as MagicaVoxel). An instance places it in the world with a signed permutation M
 * and an integer translation t:
 *     world = M (p - floor(size / 2)) + t
 * for a point p of model space, so a voxel cell maps to a unit cell of the world with integer
 * corners. World units are voxels.
 *
 * Up axis. The world (the scene frame every reader, the tracer and every output share) is Y-up, as
 * glTF and Blender's OBJ export. MagicaVoxel is Z-up (its format text: "size z: gravity
 * direction") and right-handed, x cross y = z: the frame of Blender, whose .vox importers take the
 * file's coordinates as they are (the format text itself says nothing of handedness). So the
 * reader maps MagicaVoxel (x, y, z) to the world's (x, z, -y), the proper rotation BK_VOX_YUP
 * (det +1: a turn about x, no mirror, so a model keeps its handedness): M = BK_VOX_YUP R and
 * t = BK_VOX_YUP t_file, where R and t_file are MagicaVoxel's _r and _t composed through the
 * scene graph (in the file's frame). Blender's glTF import turns Y-up back into Z-up with
 * (x, y, z) -> (x, -z, y), which gives MagicaVoxel's own coordinates again.
 *
 * The functions below are the scene stage's (vox_instance.c); the reader is declared in loader.h.
 */
#ifndef BK_VOX_H
#define BK_VOX_H

#include <stddef.h>
#include <stdint.h>

#define BK_VOX_MAX_SIZE      256          /* a model side, as MagicaVoxel */
#define BK_VOX_MAX_MODELS    (1u << 20)   /* models in one file */
#define BK_VOX_MAX_INSTANCES (1u << 24)   /* shapes placed, after the scene graph is walked */
#define BK_VOX_MAX_BYTES     (1ull << 31) /* a .vox file */
/* |t| of a composed translation. The tracer's leaf records hold a voxel segment's box and its
 * instance's translation in floats, and the walk (kernels/bk_voxel.h) converts them back to the
 * integers of its cells: exact only while every coordinate a cell or the brick around it can
 * have, |t| + a model side + a brick, is at most 2^24 (BK_VOX_MAX_WORLD, which bk_geom_init
 * checks for any scene). 2^23 leaves that room: past 2^24 the walk read bricks out of bounds. */
#define BK_VOX_MAX_COORD_LOG2 23
#define BK_VOX_MAX_COORD      (1 << BK_VOX_MAX_COORD_LOG2)
#define BK_VOX_MAX_WORLD      (1 << 24) /* |x| of a voxel's world cells and bricks: floats hold it */
#define BK_VOX_MAX_DEPTH      1024      /* nodes on a path from the scene graph's root */

_Static_assert(BK_VOX_MAX_COORD + BK_VOX_MAX_SIZE + 4 <= BK_VOX_MAX_WORLD,
               "a model placed at the translation limit must stay where floats hold its cells exactly");

/* MagicaVoxel's frame to the world's, row-major: world (x, z, -y) for MagicaVoxel (x, y, z). */
#define BK_VOX_YUP                 \
    {                              \
        1, 0, 0, 0, 0, 1, 0, -1, 0 \
    }

typedef struct bk_vox_model {
    uint32_t size[3]; /* x y z, each 1..BK_VOX_MAX_SIZE */
    uint32_t voxel_count;
    uint8_t *xyzi;          /* 4 bytes per voxel: x, y, z (< size), colour index 1..255 */
    uint32_t material_base; /* the voxel of colour index k has scene material material_base + k */
} bk_vox_model;

typedef struct bk_vox_instance {
    uint32_t model;        /* index into bk_scene.vox_models; a model may be placed many times */
    uint8_t  rot;          /* m written as a MagicaVoxel _r byte (bk_vox_rot_byte) */
    int8_t   m[9];         /* model -> world rotation, row-major, -1 / 0 / 1: BK_VOX_YUP times the
                              file's composed _r (see the top of the file) */
    int32_t  t[3];         /* translation in the world: BK_VOX_YUP times the file's composed _t */
    int32_t  lo[3], hi[3]; /* world box of the model's cells: integer corners, lo < hi */
    uint32_t object;       /* its name in bk_scene.object_names (MagicaVoxel's _name of its shape's
                              nTRN), BK_NONE when it has none */
} bk_vox_instance;

/* The MagicaVoxel rotation byte: bits 0-1 the column of the non-zero entry of row 0, bits 2-3
 * that of row 1 (row 2 takes the column left over), bits 4, 5, 6 the signs of rows 0, 1, 2
 * (1 = -1). Returns 0 for a byte that is not a permutation (two rows in one column). */
int     bk_vox_rot_matrix(uint8_t rot, int8_t m[9]);
uint8_t bk_vox_rot_byte(const int8_t m[9]);
/* world = M (p - floor(size / 2)) + t: the instance's box and the translation T with
 * world = M p + T. */
void bk_vox_instance_place(bk_vox_instance *in, const uint32_t size[3]);
void bk_vox_instance_offset(const bk_vox_instance *in, const uint32_t size[3], int32_t T[3]);

#endif /* BK_VOX_H */
