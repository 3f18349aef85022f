/* cpu_golden.c - the real program bakes the demo scene on the CPU and the result is compared
 * with assets/cornell_golden.png, and the voxel demo scene with assets/cornell_vox_golden.png (the
 * Embree tutorials' way, tests/bk_test_golden.h): RMSE at most 1.0 (8-bit units) and at most
 * 0.5 % of texels off by more than 3. tools/update_golden.sh regenerates the reference; a test
 * run never does. The textured demo scene has a test of its own (cpu_golden_courtyard.c). */
#include "bk_test.h"
#include "bk_test_golden.h"

int main(void)
{
    /* the light transport alone (the denoiser off), and the map as users get it (denoised) */
    golden("cornell.obj", "--backend cpu --size 128 --spp 64 --seed 1 --denoise off", "cornell_golden.png");
    golden("cornell.obj", "--backend cpu --size 128 --spp 16 --seed 1", "cornell_denoised_golden.png");
    /* voxels traced natively, one rotated and one mirrored instance, an emissive panel */
    golden("cornell.vox", "--backend cpu --size 192 --spp 32 --seed 1 --texels-per-voxel 1 --denoise off",
           "cornell_vox_golden.png");
    BK_TEST_DONE();
}
