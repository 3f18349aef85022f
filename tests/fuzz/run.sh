#!/usr/bin/env bash
# run.sh - run every libFuzzer target for a bounded time each. Builds nothing.
#
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET] [BUILD_DIR]     (defaults: 60, build-fuzz)
#   Build first:  CC=clang cmake -S . -B build-fuzz -DBK_FUZZ=ON -DBK_CUDA=OFF && cmake --build build-fuzz -j2
#   Fuzz longer:  tests/fuzz/run.sh 3600
#   One target:   BK_FUZZ_TARGETS=fuzz_vox tests/fuzz/run.sh 300
#
# Seeds are made at run time in BUILD_DIR/fuzz/seeds from the scene corpus ($BK_SCENES_DIR, else
# the BK_SHARED_SCENES the build was configured with, else ../shared/scenes) and the demo scene;
# RAYS and HITS seeds are written by the build's own `baker rays` / `baker trace`, image seeds
# (PNG, HDR, EXR) by its own bake and `baker diff`. Inputs that
# add coverage collect in BUILD_DIR/fuzz/corpus/TARGET (kept between runs, so runs add up); a
# crash, leak, timeout or out-of-memory input is saved in BUILD_DIR/fuzz/artifacts/TARGET/ and
# the script exits 1. The last lines of each target's log give runs and coverage.
set -euo pipefail
secs=${1:-60}
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$repo/build-fuzz}
case $build in /*) ;; *) build=$PWD/$build ;; esac
for t in fuzz_obj fuzz_rays fuzz_trace fuzz_vox fuzz_vox_world fuzz_image fuzz_texture fuzz_gltf baker; do
  [ -x "$build/$t" ] || { echo "run.sh: $build/$t missing: configure with -DBK_FUZZ=ON and build first" >&2; exit 2; }
done

scenes=${BK_SCENES_DIR:-}
if [ -z "$scenes" ] && [ -f "$build/CMakeCache.txt" ]; then
  scenes=$(sed -n 's/^BK_SHARED_SCENES:PATH=//p' "$build/CMakeCache.txt")
fi
[ -n "$scenes" ] || scenes=$repo/../shared/scenes

work=$build/fuzz
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{fuzz_obj,fuzz_rays,fuzz_trace,fuzz_vox,fuzz_vox_world,fuzz_image,fuzz_texture,fuzz_gltf}

# ---- seeds ------------------------------------------------------------------------------------
# Small OBJ files (the loader's tests, the Cornell boxes); an OBJ with its MTL becomes one input
# "OBJ \n#@MTL@\n MTL" (fuzz_obj.c), and a few are gzipped for the .obj.gz path.
objs=("$repo/scenes/cornell.obj")
if [ -d "$scenes" ]; then
  while IFS= read -r f; do objs+=("$f"); done < <(find "$scenes" -name '*.obj' -size -128k | sort)
else
  echo "run.sh: scene corpus $scenes absent: seeds from the demo scene only" >&2
fi
i=0
for f in "${objs[@]}"; do
  i=$((i + 1))
  name=$(printf '%02d-%s' "$i" "$(basename "$f" .obj)")
  cp "$f" "$seeds/fuzz_obj/$name.obj"
  chmod u+w "$seeds/fuzz_obj/$name.obj"
  mtl=$(sed -n 's/^mtllib[[:space:]]\{1,\}\([^[:space:]]*\).*/\1/p' "$f" | awk 'NR == 1')
  if [ -n "$mtl" ] && [ -f "$(dirname "$f")/$mtl" ]; then
    { cat "$f"; printf '\n#@MTL@\n'; cat "$(dirname "$f")/$mtl"; } > "$seeds/fuzz_obj/$name-mtl.obj"
  fi
  if [ "$(wc -c < "$f")" -lt 4096 ]; then
    gzip -9 -n -c "$f" > "$seeds/fuzz_obj/$name.obj.gz"
    cp "$f" "$seeds/fuzz_trace/$name.obj"
  fi
done

# RAYS and HITS files from the demo scene, and the same rays appended to trace seeds.
cornell=$repo/scenes/cornell.obj
n=0
for mode in "--random 3" "--primary 4" "--diffuse 2" "--random 40"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$build/baker" rays "$cornell" -o "$seeds/fuzz_rays/$n.rays" $mode --seed "$n" >/dev/null
  "$build/baker" trace "$cornell" --rays "$seeds/fuzz_rays/$n.rays" --hits "$seeds/fuzz_rays/$n.hits" --backend cpu >/dev/null
  { cat "$cornell"; printf '\n#@RAYS@\n'; tail -c +17 "$seeds/fuzz_rays/$n.rays"; } > "$seeds/fuzz_trace/cornell-rays$n.obj"
done

# .vox files: the corpus's (the small ones: larger inputs are cut to -max_len anyway, a few of the
# vox-mmmm props) and the files tests/unit_vox.c writes (every chunk kind, every refusal).
if [ -d "$scenes" ]; then
  { find "$scenes/vox" -name '*.vox' -size -160k 2>/dev/null; find "$scenes/vox-mmmm" -name '*.vox' -size -24k 2>/dev/null | sort | awk 'NR <= 12'; } |
    while IFS= read -r f; do cp "$f" "$seeds/fuzz_vox/"; chmod u+w "$seeds/fuzz_vox/$(basename "$f")"; done
fi
if [ -x "$build/unit_vox" ]; then
  BK_VOX_SEEDS="$seeds/fuzz_vox/unit" "$build/unit_vox" >/dev/null 2>&1 || true
  if [ -d "$seeds/fuzz_vox/unit" ]; then
    for f in "$seeds/fuzz_vox/unit"/*; do [ -f "$f" ] && mv "$f" "$seeds/fuzz_vox/unit-$(basename "$f")"; done
    rm -rf "$seeds/fuzz_vox/unit"
  fi
fi

# tools/vox_world's own reader starts from the same .vox seeds
cp "$seeds"/fuzz_vox/* "$seeds/fuzz_vox_world/" 2>/dev/null || true

# Lightmaps written by the build's own baker: the demo scene at a few sizes (4 wide: flat HDR
# scanlines; 16 and 40: run-length ones) as PNG, HDR and, when built with tinyexr, EXR; the
# difference images of `baker diff` too (.png scaled to white, .hdr/.exr unscaled).
for sz in 4 16 40; do
  for ext in png hdr exr; do
    "$build/baker" "$cornell" -o "$seeds/fuzz_image/cornell$sz.$ext" --size "$sz" --spp 1 --backend cpu --quiet \
      >/dev/null 2>&1 || [ "$ext" = exr ] || { echo "run.sh: baker could not write a .$ext seed" >&2; exit 2; }
  done
done
for ext in png hdr exr; do
  [ -f "$seeds/fuzz_image/cornell16.$ext" ] || continue
  "$build/baker" "$cornell" -o "$seeds/fuzz_image/cornell16b.$ext" --size 16 --spp 1 --seed 7 --backend cpu --quiet >/dev/null 2>&1 || true
  "$build/baker" diff "$seeds/fuzz_image/cornell16.$ext" "$seeds/fuzz_image/cornell16b.$ext" \
    -o "$seeds/fuzz_image/diff16.$ext" >/dev/null 2>&1 || true
  rm -f "$seeds/fuzz_image/cornell16b.$ext"
done

# Textures: the lightmaps above (PNG, HDR), the corpus's small JPEGs, and the images
# tests/unit_texture.c writes (grey, grey + alpha, RGBA, 16-bit and paletted PNG, JPEG, BMP, TGA,
# flat and run-length HDR, and the refused ones).
cp "$seeds"/fuzz_image/*.png "$seeds"/fuzz_image/*.hdr "$seeds/fuzz_texture/" 2>/dev/null || true
if [ -d "$scenes" ]; then
  for ext in jpg png tga bmp gif; do find "$scenes" -name "*.$ext" -size -24k 2>/dev/null | sort | awk 'NR <= 4'; done |
    while IFS= read -r f; do cp "$f" "$seeds/fuzz_texture/"; chmod u+w "$seeds/fuzz_texture/$(basename "$f")"; done
fi
if [ -x "$build/unit_texture" ]; then
  BK_TEXTURE_SEEDS="$seeds/fuzz_texture" "$build/unit_texture" >/dev/null 2>&1 || true
fi

# glTF: the assimp corpus's small .gltf and .glb files (fuzz_gltf reads no other file, so a .gltf
# whose buffers are external files only exercises the JSON side), and the documents
# tests/unit_gltf_read.c writes (data: URIs: every accessor kind, every refusal).
if [ -d "$scenes/gltf-assimp" ]; then
  find "$scenes/gltf-assimp" \( -name '*.gltf' -o -name '*.glb' \) -size -64k | sort | while IFS= read -r f; do
    d=$(basename "$(dirname "$f")")
    cp "$f" "$seeds/fuzz_gltf/$d-$(basename "$f")"
    chmod u+w "$seeds/fuzz_gltf/$d-$(basename "$f")"
  done
fi
if [ -x "$build/unit_gltf_read" ]; then
  BK_GLTF_SEEDS="$seeds/fuzz_gltf" "$build/unit_gltf_read" >/dev/null 2>&1 || true
fi

# ---- fuzzing ----------------------------------------------------------------------------------
# -max_len: the OBJ loader gets room for a few thousand lines; ray files 128 records; the trace
#   target small scenes (it brute-forces every ray against every triangle); .vox files up to the
#   size of the corpus's scene-graph file; images a little over the largest seed.
# -rss_limit_mb / -malloc_limit_mb: a 64 KB input may honestly ask for tens of MB (a gzip bomb, a
#   line of a million face indices); a single allocation over 1 GB or a process over 2 GB is
#   reported as out-of-memory.
# -timeout: seconds for one input (sanitized code); slower means something is quadratic or stuck.
declare -A maxlen=([fuzz_obj]=65536 [fuzz_rays]=4112 [fuzz_trace]=16384 [fuzz_vox]=131072 [fuzz_vox_world]=131072 [fuzz_image]=32768 [fuzz_texture]=32768 [fuzz_gltf]=65536)
declare -A dict=([fuzz_obj]=obj.dict [fuzz_rays]=rays.dict [fuzz_trace]=obj.dict [fuzz_vox]=vox.dict [fuzz_vox_world]=vox.dict [fuzz_image]=image.dict [fuzz_texture]=texture.dict [fuzz_gltf]=gltf.dict)
status=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in ${BK_FUZZ_TARGETS:-fuzz_obj fuzz_rays fuzz_trace fuzz_vox fuzz_vox_world fuzz_image fuzz_texture fuzz_gltf}; do
  corpus=$work/corpus/$t
  art=$work/artifacts/$t
  mkdir -p "$corpus" "$art"
  log=$work/$t.log
  echo "== $t: ${secs}s (log $log)"
  set +e
  "$build/$t" -max_total_time="$secs" -max_len="${maxlen[$t]}" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=1024 -dict="$repo/tests/fuzz/${dict[$t]}" -print_final_stats=1 \
    -artifact_prefix="$art/" "$corpus" "$seeds/$t" > "$log" 2>&1
  rc=$?
  set -e
  grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" | sed 's/^/   /' || true
  grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | sed 's/^/   /' || true
  if [ $rc -ne 0 ]; then
    status=1
    echo "   $t FAILED (exit $rc); inputs in $art:"
    ls "$art" | sed 's/^/     /'
    grep -E 'ERROR|SUMMARY|fuzz check failed|runtime error|internal error' "$log" | head -n 5 | sed 's/^/   /'
  fi
done
exit $status
