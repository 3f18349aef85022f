#!/bin/sh
# long_functions.sh [-n LINES] [-a] [FILE...] - functions in src/ and kernels/ longer than LINES
# (default 120), longest first, from Universal Ctags. A function may be long when a comment in
# the five lines above its definition says why, starting "Long:"; those are listed with -a and
# do not fail the check. Exit 1 when an unexplained long function remains.
cd "$(dirname "$0")/.." || exit 2
# Universal Ctags gives each function's end line (Debian: universal-ctags); without it, skipped (77).
ctags --version 2>/dev/null | grep -q 'Universal Ctags' || { echo "long_functions: no Universal Ctags, skipped"; exit 77; }
max=120; all=0
while [ $# -gt 0 ]; do
  case $1 in -n) max=$2; shift 2 ;; -a) all=1; shift ;; *) break ;; esac
done
[ $# -gt 0 ] || set -- $(find src kernels -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh' | sort)
out=$(ctags --languages=C --langmap=C:.c.h.cu.cuh --kinds-C=f --fields=+ne -f - "$@" |
awk -F'\t' -v max="$max" -v all="$all" '
  { n = ""; e = ""
    for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) n = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
    if (e == "" || e - n + 1 <= max) next
    why = 0; cmd = "sed -n " (n > 5 ? n - 5 : 1) "," n "p \"" $2 "\""
    while ((cmd | getline l) > 0) if (l ~ /Long:/) why = 1
    close(cmd)
    if (!why) bad++
    if (!why || all) printf "%5d  %s:%s  %s%s\n", e - n + 1, $2, n, $1, why ? "  (explained)" : "" }
  END { exit bad > 0 }')
rc=$?
[ -z "$out" ] || printf '%s\n' "$out" | sort -rn
exit $rc
