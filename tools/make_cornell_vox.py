#!/usr/bin/env python3
"""make_cornell_vox.py - writes scenes/cornell.vox, the project's own small voxel scene.

A Cornell box in voxels as a MagicaVoxel version-200 file with a scene graph: a 32^3 room (white
floor, ceiling and back wall, red left and green right wall, open front), an emissive 8 x 8 panel
under the ceiling (MATL _emit), a tall block turned 90 degrees about z and a short block mirrored
in x (a signed permutation with determinant -1), one model placed twice (floor and ceiling).
World units are voxels, z is up. Deterministic: the same bytes on every run.

Usage: tools/make_cornell_vox.py [OUT]   (default scenes/cornell.vox)
"""
import os
import struct
import sys


def chunk(cid, content, children=b""):
    return cid + struct.pack("<ii", len(content), len(children)) + content + children


def string(s):
    b = s.encode()
    return struct.pack("<i", len(b)) + b


def dictionary(d):
    out = struct.pack("<i", len(d))
    for k, v in d.items():
        out += string(k) + string(v)
    return out


def box_model(sx, sy, sz, colour_of):
    """A solid box model; colour_of(x, y, z) gives the palette index (1..255)."""
    vox = [(x, y, z, colour_of(x, y, z)) for z in range(sz) for y in range(sy) for x in range(sx)]
    size = chunk(b"SIZE", struct.pack("<iii", sx, sy, sz))
    xyzi = chunk(b"XYZI", struct.pack("<i", len(vox)) + b"".join(struct.pack("<BBBB", *v) for v in vox))
    return (sx, sy, sz), size + xyzi


WHITE, RED, GREEN, LIGHT, BLUE = 1, 2, 3, 4, 5


def rot_byte(m):
    """MagicaVoxel _r byte of a row-major signed permutation matrix."""
    cols = [next(c for c in range(3) if m[r][c]) for r in range(3)]
    signs = [m[r][cols[r]] < 0 for r in range(3)]
    return cols[0] | cols[1] << 2 | signs[0] << 4 | signs[1] << 5 | signs[2] << 6


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "scenes", "cornell.vox")
    models = [
        box_model(34, 34, 1, lambda x, y, z: WHITE),                                   # 0 floor / ceiling
        box_model(34, 1, 32, lambda x, y, z: WHITE),                                   # 1 back wall
        box_model(1, 32, 32, lambda x, y, z: RED),                                     # 2 left wall
        box_model(1, 32, 32, lambda x, y, z: GREEN),                                   # 3 right wall
        box_model(8, 8, 1, lambda x, y, z: LIGHT),                                     # 4 light panel
        box_model(8, 8, 16, lambda x, y, z: BLUE if (x + y + z) % 7 == 0 else WHITE),  # 5 tall block
        box_model(8, 8, 8, lambda x, y, z: RED if x == 0 else WHITE),                  # 6 short block
    ]
    ident = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    turn = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]      # 90 degrees about z
    mirror = [[-1, 0, 0], [0, 1, 0], [0, 0, 1]]    # x mirrored
    # (model, rotation, lowest world corner): t = corner + floor(size / 2) for the identity; for
    # the others the box is centred where the identity's would be (the pivot rule).
    placements = [
        (0, ident, (-1, -1, -1)), (0, ident, (-1, -1, 32)),      # floor and ceiling: one model twice
        (1, ident, (-1, 32, 0)), (2, ident, (-1, 0, 0)), (3, ident, (32, 0, 0)),
        (4, ident, (12, 12, 31)),
        (5, turn, (6, 14, 0)), (6, mirror, (18, 6, 0)),
    ]
    nodes = b""
    children = []
    next_id = 2
    for model, m, corner in placements:
        size = models[model][0]
        t = [corner[k] + size[k] // 2 for k in range(3)]
        tid, sid = next_id, next_id + 1
        next_id += 2
        children.append(tid)
        frame = {"_t": "%d %d %d" % tuple(t)}
        if m != ident:
            frame["_r"] = str(rot_byte(m))
        nodes += chunk(b"nTRN", struct.pack("<i", tid) + dictionary({}) + struct.pack("<iiii", sid, -1, 0, 1) + dictionary(frame))
        nodes += chunk(b"nSHP", struct.pack("<i", sid) + dictionary({}) + struct.pack("<ii", 1, model) + dictionary({}))
    root = chunk(b"nTRN", struct.pack("<i", 0) + dictionary({}) + struct.pack("<iiii", 1, -1, -1, 1) + dictionary({}))
    group = chunk(b"nGRP", struct.pack("<i", 1) + dictionary({}) + struct.pack("<i", len(children)) +
                  b"".join(struct.pack("<i", c) for c in children))
    layer = chunk(b"LAYR", struct.pack("<i", 0) + dictionary({"_name": "room"}) + struct.pack("<i", -1))
    palette = [(200, 200, 200), (190, 40, 35), (40, 170, 50), (255, 240, 220), (60, 90, 200)]
    rgba = b""
    for i in range(256):                          # entry i is palette index i + 1
        r, g, b = palette[i] if i < len(palette) else (0, 0, 0)
        rgba += struct.pack("<BBBB", r, g, b, 255)
    matl = chunk(b"MATL", struct.pack("<i", LIGHT) + dictionary({"_type": "_emit", "_emit": "1", "_flux": "2"}))
    body = b"".join(m[1] for m in models) + root + group + nodes + layer + chunk(b"RGBA", rgba) + matl
    data = b"VOX " + struct.pack("<i", 200) + chunk(b"MAIN", b"", body)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out)
    print("wrote %s (%d bytes, %d models, %d instances)" % (out, len(data), len(models), len(placements)))


if __name__ == "__main__":
    main()
