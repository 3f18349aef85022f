#!/bin/sh
# sort_bench.sh [BAKER [SCENES_DIR]] - the trace's ray orders on the GPU machine (issue 37, "a ray
# sort that pays for itself"): for each scene, N seeded diffuse rays in the order raygen makes them
# and the same rays sorted beforehand as the trace sorts them, closest and any hit, Mrays/s with
# --ray-order input, sorted, binned, auto and the sort's variants (`baker bench trace --orders`,
# src/cmd/bench/bench_trace.c). Then the same through files (`baker rays`, `baker rays --sort`,
# `baker trace --ray-order input|auto`), the files OptiX is compared on.
#
#   tools/sort_bench.sh build-gpu/baker                   # the GPU machine (default backend cuda)
#   BACKEND=cpu RAYS=20k REPS=1 tools/sort_bench.sh build/baker   # flags checked on the CPU
#
# Scenes: sponza, sibenik, dragon_vrip_res2, the 54k-object voxel world (made by vox_world beside
# BAKER from SCENES_DIR/vox-mmmm when that exists, or $WORLD), then a fast interior: the Cornell
# box and sibenik with rays at most LENGTH (default 0.05) times the box diagonal long.
# Environment: RAYS (default 4M), REPS (5), BACKEND (cuda), LENGTH, WORLD, TMP (a scratch folder,
# default one from mktemp, removed).
# SCENES_DIR defaults to $BK_SCENES_DIR, else ../shared/scenes beside the repository.
set -eu
baker=$(readlink -f "${1:-build-gpu/baker}")
scenes=$(readlink -f "${2:-${BK_SCENES_DIR:-$(dirname "$0")/../../shared/scenes}}")
rays=${RAYS:-4M}
reps=${REPS:-5}
backend=${BACKEND:-cuda}
length=${LENGTH:-0.05}
tmp=${TMP:-}
if [ -z "$tmp" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
world=${WORLD:-}
if [ -z "$world" ] && [ -x "$(dirname "$baker")/vox_world" ]; then
  world=$tmp/world54k.vox
  "$(dirname "$baker")/vox_world" --props "$scenes/vox-mmmm" -o "$world" >/dev/null || world=
fi
list=$scenes/sponza-dabrovic/sponza.obj,$scenes/sibenik/sibenik.obj,$scenes/dragon/dragon_vrip_res2.obj
[ -n "$world" ] && [ -f "$world" ] && list=$list,$world
common="--backend $backend --rays $rays --reps $reps --orders"

echo "== bench trace --orders: diffuse rays, tmax infinite"
"$baker" bench trace $common --scenes "$list" || echo "(bench trace: exit $?)"
echo
echo "== bench trace --orders: short rays (at most $length x the box diagonal): a fast interior"
"$baker" bench trace $common --length "$length" \
  --scenes "$scenes/cornell-box/CornellBox-Original.obj,$scenes/sibenik/sibenik.obj" || echo "(bench trace: exit $?)"

# Files: the raygen order and the sorted copy, traced by `baker trace` as OptiX would be given them
# (each call loads, builds and starts the device again: two scenes only).
echo
echo "== files: baker rays [--sort], baker trace --ray-order input|auto (the trace line's Mrays/s)"
for case in "sponza-dabrovic/sponza.obj:" "sibenik/sibenik.obj:--length $length"; do
  scene=$scenes/${case%%:*}
  extra=${case#*:}
  tag=$(basename "$scene" .obj)${extra:+-short}
  "$baker" rays "$scene" -o "$tmp/$tag.rays" --diffuse "$rays" $extra >/dev/null
  "$baker" rays "$scene" -o "$tmp/$tag-sorted.rays" --diffuse "$rays" $extra --sort >/dev/null
  for file in "$tag" "$tag-sorted"; do
    for order in input auto; do
      for q in closest any; do
        flag=
        [ "$q" = any ] && flag=--any-hit
        line=$("$baker" trace "$scene" --rays "$tmp/$file.rays" --hits "$tmp/$file.hits" --backend "$backend" \
          --ray-order "$order" $flag | grep '^trace') || line="(baker trace failed)"
        printf '%-22s %-6s %-8s %s\n' "$file" "$order" "$q" "$(echo "$line" |
          sed 's/.*hit, \([0-9.]*\) Mrays\/s.*, \([^,]*\))$/\1 Mrays\/s (\2)/')"
      done
    done
  done
done
