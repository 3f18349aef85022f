#!/usr/bin/env python3
"""Registers, stack frame and spill bytes of every trace and bake kernel instance, from ptxas -v.

usage: python3 tools/kernel_resources.py [nvcc flags...]   (run from the repository root)
Compiles kernels/cuda/cuda_backend.cu and kernels/cuda/bake.cu for sm_90 with -Xptxas -v (bake.cu with
--fmad=false, as CMakeLists.txt does) and prints one row per template instance
<accel, stack, query, counters> or <stack, register cap> for the bake.
"""
import re
import subprocess
import sys

ACCEL = ["bvh", "kdtree"]
STACK = ["global", "short", "spill"]
QUERY = ["closest", "any"]
COUNT = ["thread", "warp", "block"]

def ptxas(source, extra):
    cmd = ["nvcc", "-arch=sm_90", "-O3", "-std=c++17", "-Isrc", "-Ikernels", "-DBK_HAVE_CUDA=1",
           "-Xptxas", "-v", "-c", source, "-o", "/dev/null"] + extra + sys.argv[1:]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(out.stderr)
    return out.stderr.splitlines()

rows, bake, cur = [], [], None
for line in ptxas("kernels/cuda/cuda_backend.cu", []) + ptxas("kernels/cuda/bake.cu", ["--fmad=false"]):
    m = re.search(r"Compiling entry function '_Z12trace_kernelILi(\d)ELi(\d)ELi(\d)ELi(\d)E", line)
    if m:
        cur = {"k": tuple(int(x) for x in m.groups())}
        rows.append(cur)
        continue
    m = re.search(r"Compiling entry function '_Z11bake_kernelILi(\d)ELi(\d+)E", line)
    if m:
        cur = {"k": (int(m.group(1)), int(m.group(2)))}
        bake.append(cur)
        continue
    if cur is None:
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m:
        cur["frame"], cur["st"], cur["ld"] = (int(x) for x in m.groups())
    m = re.search(r"Used (\d+) registers", line)
    if m:
        cur["regs"] = int(m.group(1))
print(f"{'accel':7} {'stack':7} {'query':8} {'counters':8} {'regs':>5} {'frame B':>8} {'spill st B':>10} {'spill ld B':>10}")
for r in sorted(rows, key=lambda r: r["k"]):
    a, s, q, c = r["k"]
    print(f"{ACCEL[a]:7} {STACK[s]:7} {QUERY[q]:8} {COUNT[c]:8} {r.get('regs', 0):5} {r.get('frame', 0):8} "
          f"{r.get('st', 0):10} {r.get('ld', 0):10}")
for r in sorted(bake, key=lambda r: r["k"]):
    cap = f"cap {r['k'][1]}" if r["k"][1] else "-"
    print(f"{'bake':7} {STACK[r['k'][0]]:7} {cap:8} {'warp':8} {r.get('regs', 0):5} {r.get('frame', 0):8} "
          f"{r.get('st', 0):10} {r.get('ld', 0):10}")
