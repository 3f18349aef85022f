/* gpu_materials.c - the GPU bakes textured and cut-out scenes as the CPU does, byte for byte, for
 * every layout and stack strategy of the traversal lists (tests/bk_test_stacks.h) and both bake
 * kernels: the fence cut by map_d (MASK), the fence of opacity 0.5 (BLEND, the coin of each ray),
 * the lamp with a half-black emission map (the sub-triangle emitters) and the Cornell box whose
 * colours come from textures. Skips (77) without a CUDA device.
 */
#include "bk_test_materials.h"
#include "bk_test_stacks.h"
#include "registry.h"

static void cornell_textured(void)
{
    char src[1024], cmd[2048];
    snprintf(src, sizeof src, "%s/scenes/cornell.obj", BK_SOURCE_DIR);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/box.obj'", src, dir);
    BK_EXPECT(system(cmd) == 0);
    png_solid("white.png", 8, 8, 220, 220, 220, 255);
    png_solid("red.png", 8, 8, 210, 60, 60, 255);
    png_solid("green.png", 8, 8, 90, 180, 100, 255);
    put("cornell.mtl", "newmtl white\nKd 1 1 1\nmap_Kd white.png\n\nnewmtl red\nKd 1 1 1\nmap_Kd red.png\n\n"
                       "newmtl green\nKd 0.9 1 0.9\nmap_Kd green.png\n\nnewmtl light\nKd 0.78 0.78 0.78\nKe 17 12 4\n");
}

int main(void)
{
    char        msg[512];
    bk_backend *gpu = bk_backend_init("cuda", msg, sizeof msg);
    if (!gpu) BK_TEST_SKIP("no CUDA device: %s", msg);
    bk_backend_free(gpu);
    snprintf(dir, sizeof dir, "/tmp/bk_gpu_materials_%d", (int)getpid());
    char cmd[512];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return 1;
    write_fence_cut();
    write_blend();
    write_lamp_tex();
    cornell_textured();
    static const char *scenes[4] = { "fence_cut.obj", "fence_blend.obj", "lamp_tex.obj", "box.obj" };
    static const char *args[4] = {
        "--uv file --size 128 --spp 16 --bounces 2 --sun 0,1,1,3,3,3,0.5 --sky 0.1,0.1,0.1 --denoise off",
        "--uv file --size 128 --spp 16 --bounces 2 --sun 0,1,1,3,3,3,0.5 --sky 0.1,0.1,0.1 --denoise off",
        "--uv file --size 128 --spp 16 --bounces 2 --sky 0,0,0 --denoise off",
        "--size 96 --spp 16 --bounces 2 --denoise off"
    };
    static const int   sizes[] = { 2, 8 };
    bk_test_stack      st[BK_TEST_STACKS_MAX];
    int                nst = bk_test_stacks(sizes, 2, st);
    static const char *accels[] = { "bvh", "kdtree", "cwbvh" };
    int                runs = 0, same = 0;
    for (int s = 0; s < 4; ++s) {
        char ref[64], a[1024];
        snprintf(ref, sizeof ref, "ref_%d.hdr", s);
        bake(scenes[s], ref, args[s]);
        for (int k = 0; k < 3; ++k)
            for (int i = 0; i < nst; ++i)
                for (int wave = 0; wave < 2; ++wave) {
                    if (wave && (k || i)) continue; /* the megakernel: once per scene */
                    char out[64];
                    snprintf(out, sizeof out, "cuda_%d_%d_%d_%d.hdr", s, k, i, wave);
                    snprintf(a, sizeof a, "%s --backend cuda --accel %s --stack %s --stack-size %d%s", args[s],
                             accels[k], bk_stack_mode_name(st[i].mode), bk_test_stack_size(st[i]),
                             wave ? " --kernel megakernel" : "");
                    if (bake(scenes[s], out, a)) continue;
                    runs++;
                    int eq = same_file(ref, out);
                    same += eq;
                    BK_EXPECTF(eq, "%s %s: the GPU's map differs from the CPU's", scenes[s], a);
                }
    }
    printf("%d of %d GPU bakes equal to the CPU's, byte for byte\n", same, runs);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (!bk_test_failures) BK_EXPECT(system(cmd) == 0);
    BK_TEST_DONE();
}
