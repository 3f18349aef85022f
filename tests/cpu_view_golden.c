/* cpu_view_golden.c - the textured demo scene's preview (`baker --preview`: albedo x lightmap seen
 * from the default camera) against assets/view_courtyard_golden.png, as tests/cpu_golden.c compares
 * lightmaps (tests/bk_test_golden.h). Skips (77) until the golden image is made
 * (tools/update_golden.sh, the same command). */
#include "bk_test.h"
#include "bk_test_golden.h"

int main(void)
{
    if (!golden_exists("view_courtyard_golden.png"))
        BK_TEST_SKIP("assets/view_courtyard_golden.png not made yet (tools/update_golden.sh)");
    /* the same options as tools/update_golden.sh's line for it */
    golden_run("courtyard/courtyard.obj",
               "--backend cpu --size 256 --spp 16 --seed 1 --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky 0.25,0.3,0.4 "
               "--resolution 480,270 --camera 3,7,4.5,-1,0,-1,65",
               "view_courtyard_golden.png", 1);
    BK_TEST_DONE();
}
