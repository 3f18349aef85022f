#!/usr/bin/env python3
"""Writes scenes/cornell.obj and scenes/cornell.mtl: baker's own Cornell-box-style demo scene.

A 2 x 2 x 2 room (y up, open at +z), red left wall, green right wall, white floor, ceiling and back
wall, a short and a tall box turned about y, and an emissive quad just under the ceiling.
Run from the repository root: python3 tools/make_cornell.py
"""
import math

def quad(a, b, c, d):
    return [a, b, c, d]

def box(cx, cz, w, h, angle):
    """Five visible faces of a box standing on the floor (the bottom face is omitted)."""
    ca, sa = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    def p(x, y, z):
        return (cx + ca * x - sa * z, y, cz + sa * x + ca * z)
    s = w / 2
    c = [p(-s, 0, -s), p(s, 0, -s), p(s, 0, s), p(-s, 0, s),
         p(-s, h, -s), p(s, h, -s), p(s, h, s), p(-s, h, s)]
    # counter-clockwise seen from outside: the winding's normals face out of the box
    return [quad(c[4], c[7], c[6], c[5]),            # top
            quad(c[0], c[4], c[5], c[1]),            # -z
            quad(c[1], c[5], c[6], c[2]),            # +x
            quad(c[2], c[6], c[7], c[3]),            # +z
            quad(c[3], c[7], c[4], c[0])]            # -x

groups = [
    ("white", [quad((-1, 0, -1), (-1, 0, 1), (1, 0, 1), (1, 0, -1)),       # floor
               quad((-1, 2, -1), (1, 2, -1), (1, 2, 1), (-1, 2, 1)),       # ceiling
               quad((-1, 0, -1), (1, 0, -1), (1, 2, -1), (-1, 2, -1))]),   # back wall
    ("red",   [quad((-1, 0, -1), (-1, 2, -1), (-1, 2, 1), (-1, 0, 1))]),
    ("green", [quad((1, 0, -1), (1, 0, 1), (1, 2, 1), (1, 2, -1))]),
    ("white", box(0.35, 0.3, 0.6, 0.6, -17)),
    ("white", box(-0.35, -0.3, 0.6, 1.2, 17)),
    ("light", [quad((-0.25, 1.99, -0.25), (0.25, 1.99, -0.25), (0.25, 1.99, 0.25), (-0.25, 1.99, 0.25))]),
]

with open("scenes/cornell.obj", "w") as f:
    f.write("# baker demo scene: a Cornell-box-style room with an emissive ceiling light.\n")
    f.write("# Written by tools/make_cornell.py; y is up, units are metres.\nmtllib cornell.mtl\n")
    n = 0
    for mat, quads in groups:
        f.write(f"usemtl {mat}\n")
        for q in quads:
            for v in q:
                f.write("v %.6f %.6f %.6f\n" % v)
            f.write(f"f {n + 1} {n + 2} {n + 3} {n + 4}\n")
            n += 4

with open("scenes/cornell.mtl", "w") as f:
    f.write("# baker demo scene materials (tools/make_cornell.py)\n")
    for name, kd, ke in [("white", (0.73, 0.73, 0.73), (0, 0, 0)), ("red", (0.65, 0.05, 0.05), (0, 0, 0)),
                         ("green", (0.12, 0.45, 0.15), (0, 0, 0)), ("light", (0.78, 0.78, 0.78), (17, 12, 4))]:
        f.write(f"newmtl {name}\nKd {kd[0]} {kd[1]} {kd[2]}\nKe {ke[0]} {ke[1]} {ke[2]}\n\n")
