#!/bin/sh
# courtyard_check.sh - the committed scenes/courtyard/ is what tools/courtyard.c writes, byte for
# byte: runs the generator into a temporary folder and compares every file it wrote.
#     tools/courtyard_check.sh build/courtyard [scenes/courtyard]
set -eu
gen=$1
dir=${2:-$(dirname "$0")/../scenes/courtyard}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen" -o "$tmp" >/dev/null
status=0
for f in "$tmp"/*; do
    name=$(basename "$f")
    if ! cmp -s "$f" "$dir/$name"; then
        echo "scenes/courtyard/$name differs from what $gen writes (rerun it: $gen -o scenes/courtyard)"
        status=1
    fi
done
[ $status -eq 0 ] && echo "scenes/courtyard: $(ls "$tmp" | wc -l) files as the generator writes them"
exit $status
