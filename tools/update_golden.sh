#!/usr/bin/env bash
# Regenerates the golden images that tests/cpu_golden.c compares against. Run it deliberately,
# from the repository root, after a change that is meant to alter the bake, and look at the new
# image before committing it:  tools/update_golden.sh [build-dir]
set -euo pipefail
build=${1:-build}
"$build/baker" scenes/cornell.obj -o assets/cornell_golden.png --backend cpu --size 128 --spp 64 --seed 1 --denoise off --quiet
"$build/baker" scenes/cornell.obj -o assets/cornell_denoised_golden.png --backend cpu --size 128 --spp 16 --seed 1 --quiet
"$build/baker" scenes/cornell.vox -o assets/cornell_vox_golden.png --backend cpu --size 192 --spp 32 --seed 1 --texels-per-voxel 1 --denoise off --quiet
echo "wrote assets/cornell_golden.png, assets/cornell_denoised_golden.png and assets/cornell_vox_golden.png"
