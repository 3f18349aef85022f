/* vox_instance.c - a voxel instance's rotation byte and its place in the world (vox.h).
 *
 * Pipeline: scene stage, beside scene.c. The .vox reader (vox.c) places the instances it reads
 * with these; the voxel surface (voxmesh.c) and the top-level builders (geom.c) read the same
 * placement back, so reader and consumers agree on one definition of world = M (p - h) + t.
 * Reference: MagicaVoxel-file-format-vox-extension.txt (ROTATION).
 */
#include "vox.h"

int bk_vox_rot_matrix(uint8_t rot, int8_t m[9])
{
    int c0 = rot & 3, c1 = (rot >> 2) & 3;
    if (c0 == 3 || c1 == 3 || c0 == c1) return 0;
    int c2 = 3 - c0 - c1;
    int col[3] = { c0, c1, c2 };
    for (int i = 0; i < 9; ++i) m[i] = 0;
    for (int r = 0; r < 3; ++r) m[3 * r + col[r]] = (int8_t)((rot >> (4 + r)) & 1 ? -1 : 1);
    return 1;
}

uint8_t bk_vox_rot_byte(const int8_t m[9])
{
    int col[3] = { 0, 0, 0 }, neg[3] = { 0, 0, 0 };
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            if (m[3 * r + c]) {
                col[r] = c;
                neg[r] = m[3 * r + c] < 0;
            }
    return (uint8_t)(col[0] | col[1] << 2 | neg[0] << 4 | neg[1] << 5 | neg[2] << 6);
}

void bk_vox_instance_offset(const bk_vox_instance *in, const uint32_t size[3], int32_t T[3])
{
    /* world = M (p - h) + t = M p + (t - M h), h = floor(size / 2) */
    for (int r = 0; r < 3; ++r) {
        int32_t mh = 0;
        for (int c = 0; c < 3; ++c) mh += in->m[3 * r + c] * (int32_t)(size[c] / 2);
        T[r] = in->t[r] - mh;
    }
}

void bk_vox_instance_place(bk_vox_instance *in, const uint32_t size[3])
{
    int32_t T[3];
    bk_vox_instance_offset(in, size, T);
    for (int r = 0; r < 3; ++r) {
        /* the image of [0, size] along row r: M has one entry per row */
        int32_t a = T[r], b = T[r];
        for (int c = 0; c < 3; ++c) b += in->m[3 * r + c] * (int32_t)size[c];
        in->lo[r] = a < b ? a : b;
        in->hi[r] = a < b ? b : a;
    }
}
