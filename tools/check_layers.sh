#!/bin/sh
# check_layers.sh - the include graph between baker's stage folders, and the check that every
# edge points down the pipeline (docs/ARCHITECTURE.md). Each folder of src/ and kernels/ is a
# stage with a rank (the list below, lowest first); a file may include headers of its own stage
# or of a lower one. Prints "FROM -> TO  (N includes)" for every pair of stages, then any upward
# edge with the file and line, and exits 1 if there is one (an upward edge is what a cycle needs:
# with every edge pointing down there can be none) or a quoted include names no file of the tree.
cd "$(dirname "$0")/.." || exit 2
# rank stage folder...: folders that make one stage (one CMake library)
stages='
0 kernels kernels
1 base src/base
2 gpu_ops src/gpu_ops kernels/gpu_ops
3 scene src/scene
4 io src/io
5 accel src/accel
6 atlas src/atlas
7 out src/out
8 backend src/backend
9 cuda kernels/cuda
10 registry src/registry
11 bake src/bake
12 cmd src/cmd src/cmd/bench kernels/gpu_ops/bench
'
files=$(find src kernels -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
printf '%s\n' "$stages" | awk -v files="$files" '
  NF >= 3 { for (i = 3; i <= NF; i++) { rank[$i] = $1; name[$i] = $2 }; sname[$1] = $2; if ($1 > top) top = $1 }
  END {
    n = split(files, f, "\n")
    for (i = 1; i <= n; i++) { base = f[i]; sub(/.*\//, "", base); if (base in where) dup[base] = 1; where[base] = f[i] }
    bad = 0
    for (i = 1; i <= n; i++) {
      dir = f[i]; sub(/\/[^\/]*$/, "", dir)
      if (!(dir in rank)) { printf "%s: folder %s is not a stage (add it to tools/check_layers.sh)\n", f[i], dir; bad = 1; continue }
      ln = 0
      while ((getline l < f[i]) > 0) {
        ln++
        if (l !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        inc = l; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        t = ""
        if ((dir "/" inc) in seen_file || system("test -f \"" dir "/" inc "\"") == 0) { t = dir "/" inc; seen_file[t] = 1 }
        else { b = inc; sub(/.*\//, "", b); if (b in where) t = where[b] }
        if (t == "") { printf "%s:%d: \"%s\" is no file of src/ or kernels/\n", f[i], ln, inc; bad = 1; continue }
        while (t ~ /\/[^\/]+\/\.\.\//) sub(/\/[^\/]+\/\.\.\//, "/", t)
        td = t; sub(/\/[^\/]*$/, "", td)
        if (!(td in rank)) continue
        a = rank[dir]; b2 = rank[td]
        if (a == b2) continue
        edge[a "," b2]++
        if (b2 > a) { up[++nup] = sprintf("%s:%d: %s includes %s (%s above %s)", f[i], ln, name[dir], t, name[td], name[dir]); bad = 1 }
      }
      close(f[i])
    }
    for (b in dup) { printf "two headers are named %s: includes by name would be ambiguous\n", b; bad = 1 }
    print "include graph between stages (lowest first; N = includes):"
    for (a = 0; a <= top; a++) {
      line = ""
      for (b2 = 0; b2 <= top; b2++) if ((a "," b2) in edge) line = line sprintf(" %s(%d)", sname[b2], edge[a "," b2])
      printf "  %-9s ->%s\n", sname[a], line == "" ? " (nothing)" : line
    }
    if (nup) { print "upward edges:"; for (k = 1; k <= nup; k++) print "  " up[k] }
    else print "upward edges: none, so no cycle between stages"
    exit bad
  }'
