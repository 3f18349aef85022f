#!/usr/bin/env bash
# Regenerates the golden images that tests/cpu_golden.c compares against. Run it deliberately,
# from the repository root, after a change that is meant to alter the bake, and look at the new
# image before committing it:  tools/update_golden.sh [build-dir]
set -euo pipefail
build=${1:-build}
"$build/baker" scenes/cornell.obj -o assets/cornell_golden.png --backend cpu --size 128 --spp 64 --seed 1 --denoise off --quiet
"$build/baker" scenes/cornell.obj -o assets/cornell_denoised_golden.png --backend cpu --size 128 --spp 16 --seed 1 --quiet
"$build/baker" scenes/cornell.vox -o assets/cornell_vox_golden.png --backend cpu --size 192 --spp 32 --seed 1 --texels-per-voxel 1 --denoise off --quiet
# the textured demo scene (tools/courtyard.c); the same command as tests/cpu_golden_courtyard.c
"$build/baker" scenes/courtyard/courtyard.obj -o assets/courtyard_golden.png --backend cpu --size 128 --spp 32 --seed 1 --denoise off --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky 0.25,0.3,0.4 --quiet
# its preview (tests/cpu_view_golden.c)
lm=$(mktemp --suffix=.png)
"$build/baker" scenes/courtyard/courtyard.obj -o "$lm" --preview assets/view_courtyard_golden.png --backend cpu --size 256 --spp 16 --seed 1 --sun 0.6,0.75,0.28,2.2,2.05,1.8,0.5 --sky 0.25,0.3,0.4 --resolution 480,270 --camera 3,7,4.5,-1,0,-1,65 --quiet
rm -f "$lm"
echo "wrote assets/cornell_golden.png, assets/cornell_denoised_golden.png, assets/cornell_vox_golden.png, assets/courtyard_golden.png and assets/view_courtyard_golden.png"
