#!/usr/bin/env python3
"""walls.py - the open-wall scenes of issue 35 baked at two sample counts: does the ground converge?

A 4 x 4 ground (y = 0) with a wall across it (x = 0, 2 high, 4 wide) facing +x, lit by a sun from
+x: the wall single-sided, two-faced (two coincident faces of opposite winding, as OBJ exporters
write double-sided cards) or a closed thin box (0.05 thick). Each is baked at --spp LO and HI
(HDR, no denoiser), and the ground's mean (the texels whose centre lies in its triangles, read
through --mesh-out's lightmap UVs) and the texels called inside geometry (--stats) are printed:
a map that converges has the same ground at both, and the same inside count.

    tools/walls.py [--baker build/baker] [--lo 16] [--hi 4096] [--size 128] [--dir /tmp/walls]

Pure Python (no numpy): the .hdr reader below takes baker's own flat or run-length scanlines.
"""
import argparse
import json
import os
import struct
import subprocess
import sys


def quad(a, b, c, d):
    return [(a, b, c), (a, c, d)]


def scene(kind):
    v = []
    tris = []

    def P(x, y, z):
        v.append((x, y, z))
        return len(v)

    g = [P(-2, 0, -2), P(-2, 0, 2), P(2, 0, 2), P(2, 0, -2)]
    tris += quad(*g)  # the ground, facing +y: its two triangles come first
    if kind in ("single", "twofaced"):
        w = [P(0, 0, -2), P(0, 2, -2), P(0, 2, 2), P(0, 0, 2)]
        front = quad(w[0], w[1], w[2], w[3])  # facing +x
        tris += front
        if kind == "twofaced":
            tris += [(a, c, b) for (a, b, c) in front]
    else:
        t = 0.025
        c = [P(x, y, z) for x in (-t, t) for y in (0, 2) for z in (-2, 2)]

        def C(i, j, k):
            return c[4 * i + 2 * j + k]

        # six outward faces of the box [-t, t] x [0, 2] x [-2, 2]
        tris += quad(C(1, 0, 0), C(1, 1, 0), C(1, 1, 1), C(1, 0, 1))  # +x
        tris += quad(C(0, 0, 0), C(0, 0, 1), C(0, 1, 1), C(0, 1, 0))  # -x
        tris += quad(C(0, 1, 0), C(0, 1, 1), C(1, 1, 1), C(1, 1, 0))  # +y
        tris += quad(C(0, 0, 0), C(1, 0, 0), C(1, 0, 1), C(0, 0, 1))  # -y
        tris += quad(C(0, 0, 1), C(1, 0, 1), C(1, 1, 1), C(0, 1, 1))  # +z
        tris += quad(C(0, 0, 0), C(0, 1, 0), C(1, 1, 0), C(1, 0, 0))  # -z
    out = "".join("v %g %g %g\n" % p for p in v)
    out += "".join("f %d %d %d\n" % t for t in tris)
    return out


def read_hdr(path):
    data = open(path, "rb").read()
    i = data.index(b"\n\n") + 2
    j = data.index(b"\n", i)
    _, h, _, w = data[i:j].split()
    h, w, pos = int(h), int(w), j + 1
    rows = []
    for _ in range(h):
        if data[pos] == 2 and data[pos + 1] == 2:
            pos += 4
            planes = []
            for _k in range(4):
                pl = bytearray()
                while len(pl) < w:
                    n = data[pos]
                    pos += 1
                    if n > 128:
                        pl += bytes([data[pos]]) * (n - 128)
                        pos += 1
                    else:
                        pl += data[pos : pos + n]
                        pos += n
                planes.append(pl)
            px = [(planes[0][x], planes[1][x], planes[2][x], planes[3][x]) for x in range(w)]
        else:
            px = [tuple(data[pos + 4 * x : pos + 4 * x + 4]) for x in range(w)]
            pos += 4 * w
        row = []
        for r, g, b, e in px:
            f = 0.0 if e == 0 else 2.0 ** (e - 136)
            row.append((r * f, g * f, b * f))
        rows.append(row)
    return w, h, rows


def ground_mean(mesh_path, hdr_path):
    vs, vt, faces = [], [], []
    for line in open(mesh_path):
        p = line.split()
        if p and p[0] == "v":
            vs.append(float(p[1]))
        elif p and p[0] == "vt":
            vt.append((float(p[1]), float(p[2])))
        elif p and p[0] == "f":
            faces.append([[int(i) - 1 for i in c.split("/")[:2]] for c in p[1:4]])
    w, h, rows = read_hdr(hdr_path)
    sums = [0.0, 0.0, 0.0]  # all, x < 0 (behind the wall), x > 0
    ns = [0, 0, 0]
    for f in faces[:2]:
        (ax, ay), (bx, by), (qx, qy) = [(vt[c[1]][0] * w, (1.0 - vt[c[1]][1]) * h) for c in f]
        wx = [vs[c[0]] for c in f]
        area = (bx - ax) * (qy - ay) - (by - ay) * (qx - ax)
        for y in range(h):
            for x in range(w):
                cx, cy = x + 0.5, y + 0.5
                l0 = ((bx - cx) * (qy - cy) - (by - cy) * (qx - cx)) / area
                l1 = ((qx - cx) * (ay - cy) - (qy - cy) * (ax - cx)) / area
                l2 = 1.0 - l0 - l1
                if min(l0, l1, l2) < 0 or (min(l0, l1, l2) == 0 and f is faces[1]):
                    continue
                r, g, b = rows[y][x]
                lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
                side = 1 if l0 * wx[0] + l1 * wx[1] + l2 * wx[2] < 0 else 2
                for k in (0, side):
                    sums[k] += lum
                    ns[k] += 1
    return [sums[k] / max(ns[k], 1) for k in range(3)], ns[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baker", default="build/baker")
    ap.add_argument("--lo", type=int, default=16)
    ap.add_argument("--hi", type=int, default=4096)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--dir", default="/tmp/walls")
    ap.add_argument("--extra", default="", help="more baker options, space-separated")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    for kind in ("single", "twofaced", "box"):
        obj = os.path.join(a.dir, kind + ".obj")
        open(obj, "w").write(scene(kind))
        res = {}
        for spp in (a.lo, a.hi):
            base = os.path.join(a.dir, "%s_%d" % (kind, spp))
            cmd = [a.baker, obj, "-o", base + ".hdr", "--mesh-out", base + "_mesh.obj", "--stats", base + ".json",
                   "--size", str(a.size), "--spp", str(spp), "--sun", "1,0.6,0.3,3,3,3,0.5", "--denoise", "off",
                   "--backend", "cpu", "--quiet"] + a.extra.split()
            subprocess.run(cmd, check=True)
            st = json.load(open(base + ".json"))
            inside = st["bake"]["inside_geometry"]
            mean, n = ground_mean(base + "_mesh.obj", base + ".hdr")
            res[spp] = (mean, n, inside, st["seconds"]["bake"], st["atlas"]["texels"])
        lo, hi = res[a.lo], res[a.hi]
        print("%-8s ground mean %.5f at %d spp, %.5f at %d (%+.1f %%; behind the wall %+.1f %%); inside %d / %d "
              "texels at %d spp, %d at %d; bake %.2f s at %d spp"
              % (kind, lo[0][0], a.lo, hi[0][0], a.hi, 100.0 * (lo[0][0] / hi[0][0] - 1.0),
                 100.0 * (lo[0][1] / hi[0][1] - 1.0), lo[2], lo[4], a.lo, hi[2], a.hi, hi[3], a.hi))
        print("         ground behind the wall (x < 0) %.5f / %.5f, in front %.5f / %.5f (%d ground texels)"
              % (lo[0][1], hi[0][1], lo[0][2], hi[0][2], lo[1]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
