#!/usr/bin/env bash
# behaviour_hashes.sh BAKER [SCENES_DIR] - sha256 of a fixed set of baker outputs on the CPU
# backend: bakes (PNG, HDR, OBJ and glTF mesh-out) of the Cornell box, Sponza and monu1.vox, a
# seeded ray set and its HITS under every accel x stack, and `baker build` reports without their
# timings. A change that should not alter behaviour (a refactor) leaves the list unchanged:
#   tools/behaviour_hashes.sh build/baker > before.txt; ...; diff before.txt after.txt
set -euo pipefail
baker=$(readlink -f "$1")
scenes=$(readlink -f "${2:-$(dirname "$0")/../../shared/scenes}")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cornell=$scenes/cornell-box/CornellBox-Original.obj
sponza=$scenes/sponza-dabrovic/sponza.obj
monu=$scenes/vox/monu1.vox
common=(--backend cpu --quiet --spp 16)
"$baker" "$cornell" -o cornell.png --mesh-out cornell.obj --size 256 "${common[@]}"
"$baker" "$cornell" -o cornell.hdr --mesh-out cornell.gltf --size 256 --mode ao "${common[@]}"
"$baker" "$sponza" -o sponza.png --mesh-out sponza.glb --size 512 "${common[@]}"
"$baker" "$sponza" -o sponza.hdr --size 256 --accel kdtree --stack short "${common[@]}"
"$baker" "$monu" -o monu1.png --mesh-out monu1.obj --size 512 "${common[@]}"
"$baker" "$monu" -o monu1.hdr --mesh-out monu1.gltf --size 512 --pages auto --stack spill "${common[@]}"
"$baker" rays "$sponza" -o sponza.rays --diffuse 200k --seed 7
for accel in bvh bvh2 cwbvh kdtree; do
  for stack in global short spill; do
    "$baker" trace "$sponza" --rays sponza.rays --hits "sponza-$accel-$stack.hits" \
      --accel "$accel" --stack "$stack" --backend cpu >/dev/null
  done
done
"$baker" trace "$sponza" --rays sponza.rays --hits sponza-any.hits --any-hit --backend cpu >/dev/null
"$baker" rays "$monu" -o monu1.rays --random 100k --seed 3
"$baker" trace "$monu" --rays monu1.rays --hits monu1.hits --backend cpu >/dev/null
for s in "$cornell" "$sponza" "$monu"; do
  # the reports without the seconds (the only thing a run may change)
  "$baker" build "$s" | sed -E 's/[0-9]+\.[0-9]+ s//; /stages/d' > "build-$(basename "$s").txt"
done
sha256sum -- * | sort -k2
