#!/usr/bin/env python3
# cycles_compare.py - baker's lightmap against Blender Cycles' bake of the same scene on the same
# lightmap UVs: mean ratio, per-texel sRGB PSNR and a difference image (docs/baking.md,
# "Checking against Cycles"). Plain Python 3, no numpy: the numbers are `baker diff`'s.
#
#     tools/cycles_compare.py SCENE.obj [--baker build/baker] [--out DIR] [--size 128]
#         [--spp 1024] [--samples 256] [--bounces 2] [--sun X,Y,Z,R,G,B,DEG] [--sky R,G,B]
#         [--label NAME] [--blender blender] [--threads 2] [--textures on|off]
#
# Runs, in DIR (default /tmp/cycles_compare):
#   baker SCENE -o baker.exr --mesh-out lm.obj --denoise off --seed 1 --backend cpu ...   (EXR: half
#       floats rounded to nearest; an .hdr's shared exponent moves a weak channel's mean by up to 1 %)
#   blender -b --factory-startup --python tools/cycles_bake.py -- SCENE lm.obj cycles.exr
#       --coverage baker.exr --mask mask.png ...   (the texels both cover, outside geometry)
#   baker diff cycles.exr baker.exr --mask mask.png -o diff.png --json
# and prints one markdown row: mean ratio baker / Cycles (luminance, then r g b), sRGB PSNR,
# texels compared. Exit status 1 when a step fails.
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse(argv):
    opt = {"baker": os.path.join(HERE, "..", "build", "baker"), "out": "/tmp/cycles_compare", "size": "128",
           "spp": "1024", "samples": "256", "bounces": "2", "sun": None, "sky": None, "label": None,
           "blender": "blender", "threads": "2", "textures": "on"}
    pos, i = [], 1
    while i < len(argv):
        k = argv[i][2:] if argv[i].startswith("--") else None
        if k in opt and i + 1 < len(argv):
            opt[k] = argv[i + 1]
            i += 2
        else:
            pos.append(argv[i])
            i += 1
    if len(pos) != 1:
        sys.exit(__doc__ or "usage: cycles_compare.py SCENE.obj [options]")
    opt["scene"] = os.path.abspath(pos[0])
    return opt


def run(cmd, log):
    t = time.time()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + r.stdout + "\n")
    if r.returncode != 0:
        sys.stderr.write(r.stdout[-3000:])
        sys.exit("cycles_compare: failed (status %d): %s" % (r.returncode, " ".join(cmd)))
    return r.stdout, time.time() - t


def main():
    o = parse(sys.argv)
    os.makedirs(o["out"], exist_ok=True)
    d = lambda name: os.path.join(o["out"], name)
    log = d("log.txt")
    open(log, "w").close()
    light = []
    for k in ("sun", "sky"):
        if o[k]:
            light += ["--" + k, o[k]]
    _, t_baker = run([o["baker"], o["scene"], "-o", d("baker.exr"), "--mesh-out", d("lm.obj"), "--size", o["size"],
                      "--spp", o["spp"], "--bounces", o["bounces"], "--seed", "1", "--denoise", "off", "--backend",
                      "cpu", "--quiet"] + light, log)
    out, t_cycles = run([o["blender"], "-b", "--factory-startup", "--python", os.path.join(HERE, "cycles_bake.py"),
                         "--", o["scene"], d("lm.obj"), d("cycles.exr"), "--coverage", d("baker.exr"), "--mask",
                         d("mask.png"), "--samples", o["samples"], "--bounces", o["bounces"], "--threads",
                         o["threads"], "--textures", o["textures"]] + light, log)
    for line in out.splitlines():
        if line.startswith("cycles_bake:"):
            print(line, file=sys.stderr)
    js, _ = run([o["baker"], "diff", d("cycles.exr"), d("baker.exr"), "--mask", d("mask.png"), "-o", d("diff.png"),
                 "--json"], log)
    r = json.loads(js)
    ratio = {k: 1.0 + r["bias"][k] for k in ("luminance", "r", "g", "b")}
    label = o["label"] or os.path.basename(o["scene"])
    print("| scene | texels compared | mean ratio baker / Cycles (lum; r g b) | sRGB PSNR | baker | Cycles |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("| %s | %d of %d | %.4f; %.4f %.4f %.4f | %.2f dB | %s spp, %.0f s | %s samples, %.0f s |" %
          (label, r["covered"], r["texels"], ratio["luminance"], ratio["r"], ratio["g"], ratio["b"], r["psnr_srgb"],
           o["spp"], t_baker, o["samples"], t_cycles))
    print("difference image: %s (white = %.4g, the largest |baker - Cycles|)" % (d("diff.png"), r["max_abs_diff"]),
          file=sys.stderr)


if __name__ == "__main__":
    main()
