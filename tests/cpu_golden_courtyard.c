/* cpu_golden_courtyard.c - the textured demo scene (scenes/courtyard, tools/courtyard.c) baked by the
 * real program on the CPU and compared with assets/courtyard_golden.png through the Cornell box's
 * machinery (tests/bk_test_golden.h): checkered floor, cloth, cut-out fence, emissive sign under
 * a sun and a sky. Skips (77) while the reference is absent: it is made by tools/update_golden.sh
 * once the bake reads the scene's textures. */
#include "bk_test.h"
#include "bk_test_golden.h"

/* The same command as tools/update_golden.sh's courtyard line. */
#define COURTYARD_ARGS                                                                                     \
    "--backend cpu --size 128 --spp 32 --seed 1 --denoise off --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky " \
    "0.25,0.3,0.4"

int main(void)
{
    if (!golden_exists("courtyard_golden.png"))
        BK_TEST_SKIP("assets/courtyard_golden.png is not made yet (tools/update_golden.sh makes it)");
    golden("courtyard/courtyard.obj", COURTYARD_ARGS, "courtyard_golden.png");
    BK_TEST_DONE();
}
