# blender_gltf_check.py - what Blender makes of baker's --mesh-out FILE.glb, seen as a user would.
#
# Run headless (Debian: apt-get install blender python3-numpy; tested with Blender 3.4):
#     blender -b --factory-startup --python tools/blender_gltf_check.py -- yard.glb \
#         [--camera X,Y,Z,TX,TY,TZ,FOV] [--resolution W,H] [-o render.png] [--compare view.png] [--as-imported]
# The file is copied ALONE into an empty temporary folder and imported from there with Blender's
# own importer (so a file that names anything beside itself shows it: an image not found). The
# script prints the objects and their UV layers, each material's base colour and emission and
# the image nodes feeding them (with their UV map and colour space), and every image: packed
# (inside the file) or not. With -o it renders the scene emission only: each material's
# Principled BSDF replaced by an Emission shader fed by whatever the importer linked to its
# Emission input (so the wiring is what is tested), Cycles, no lights, a black world, no
# bounces, the Standard view transform (sRGB, no Filmic), from --camera given as `baker view`
# takes it (eye, target, vertical FOV in degrees, baker's Y-up frame; the importer turns glTF's
# Y-up into Blender's Z-up). --as-imported keeps the importer's materials instead: then every
# emitting surface also lights the others (Cycles samples the BSDF towards them even with no
# bounces), which is what a plain Cycles render of the import shows. With --compare it
# prints the mean absolute difference (0..255) and PSNR against another PNG of the same size,
# e.g. `baker view SCENE --lightmap LM -o view.png --camera ... --show lit`.
# The exit status is 1 when the import fails or an image is missing.
import math
import os
import shutil
import sys
import tempfile

import bpy
import mathutils

try:
    # Debian's Blender 3.4 glTF importer uses np.bool, which NumPy 1.24 (Debian 12's) removed.
    import numpy
    if "bool" not in numpy.__dict__:
        numpy.bool = bool
except ImportError:
    pass


def opts(argv):
    a = argv[argv.index("--") + 1:] if "--" in argv else []
    o = {"file": None, "camera": None, "resolution": (960, 540), "out": None, "compare": None, "as_imported": False}
    i = 0
    while i < len(a):
        k = a[i]
        if k == "--as-imported":
            o["as_imported"] = True
            i += 1
        elif k in ("--camera", "--resolution", "-o", "--compare") and i + 1 < len(a):
            v = a[i + 1]
            if k == "--camera":
                o["camera"] = [float(x) for x in v.split(",")]
            elif k == "--resolution":
                o["resolution"] = tuple(int(x) for x in v.split(","))
            elif k == "-o":
                o["out"] = os.path.abspath(v)
            else:
                o["compare"] = os.path.abspath(v)
            i += 2
        else:
            o["file"] = os.path.abspath(k)
            i += 1
    return o


def image_nodes(mat):
    """(socket fed, image, UV map, colour space) for each image node of the material."""
    out = []
    if not mat.use_nodes:
        return out
    for n in mat.node_tree.nodes:
        if n.type != "TEX_IMAGE" or not n.image:
            continue
        uv = "default UV"
        if n.inputs["Vector"].is_linked:
            src = n.inputs["Vector"].links[0].from_node
            while src.type != "UVMAP" and src.inputs and src.inputs[0].is_linked:
                src = src.inputs[0].links[0].from_node
            if src.type == "UVMAP":
                uv = src.uv_map
        feeds = ["%s.%s" % (l.to_node.name, l.to_socket.name) for o in n.outputs for l in o.links]
        out.append((", ".join(feeds) or "nothing", n.image.name, uv, n.image.colorspace_settings.name))
    return out


def report():
    ok = True
    for o in bpy.context.scene.objects:
        if o.type != "MESH":
            continue
        me = o.data
        print("   object '%s': %d faces, UV layers %s" % (o.name, len(me.polygons), [l.name for l in me.uv_layers]))
    for m in bpy.data.materials:
        if not m.use_nodes:
            continue
        bsdf = next((n for n in m.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
        if not bsdf:
            continue
        e = bsdf.inputs["Emission"]
        how = "linked from %s" % e.links[0].from_node.type if e.is_linked else "colour %s" % list(e.default_value[:3])
        print("   material '%s': emission %s x %.3g; base colour %s; alpha %s (%s)" % (
            m.name, how, bsdf.inputs["Emission Strength"].default_value,
            "linked" if bsdf.inputs["Base Color"].is_linked else list(bsdf.inputs["Base Color"].default_value[:3]),
            "linked" if bsdf.inputs["Alpha"].is_linked else bsdf.inputs["Alpha"].default_value, m.blend_method))
        for feeds, img, uv, cs in image_nodes(m):
            print("      image '%s' (%s) via UV '%s' -> %s" % (img, cs, uv, feeds))
        for k in m.keys():
            if k.startswith("baker_"):
                print("      extras %s = %s" % (k, m[k].to_dict() if hasattr(m[k], "to_dict") else m[k]))
    for i in bpy.data.images:
        if i.source != "FILE":
            continue
        packed = i.packed_file is not None
        found = packed or (i.filepath and os.path.exists(bpy.path.abspath(i.filepath)))
        print("   image '%s': %dx%d, %s" % (i.name, i.size[0], i.size[1],
                                          "packed" if packed else "file %s%s" % (i.filepath, "" if found else " NOT FOUND")))
        ok = ok and bool(found)
    return ok


def emission_only():
    """Each Principled BSDF replaced by an Emission shader fed from its Emission input's link."""
    for m in bpy.data.materials:
        if not m.use_nodes:
            continue
        nt = m.node_tree
        bsdf = next((n for n in nt.nodes if n.type == "BSDF_PRINCIPLED"), None)
        out = next((n for n in nt.nodes if n.type == "OUTPUT_MATERIAL"), None)
        if not bsdf or not out:
            continue
        e = nt.nodes.new("ShaderNodeEmission")
        src = bsdf.inputs["Emission"]
        if src.is_linked:
            nt.links.new(src.links[0].from_socket, e.inputs["Color"])
        else:
            e.inputs["Color"].default_value = src.default_value
        e.inputs["Strength"].default_value = bsdf.inputs["Emission Strength"].default_value
        shader = e.outputs[0]
        alpha = bsdf.inputs["Alpha"]
        if alpha.is_linked or alpha.default_value < 1:  # cut-outs (alphaMode MASK / BLEND) stay cut
            mix = nt.nodes.new("ShaderNodeMixShader")
            hole = nt.nodes.new("ShaderNodeBsdfTransparent")
            if alpha.is_linked:
                nt.links.new(alpha.links[0].from_socket, mix.inputs["Fac"])
            else:
                mix.inputs["Fac"].default_value = alpha.default_value
            nt.links.new(hole.outputs[0], mix.inputs[1])
            nt.links.new(e.outputs[0], mix.inputs[2])
            shader = mix.outputs[0]
        nt.links.new(shader, out.inputs["Surface"])


def render(o):
    sc = bpy.context.scene
    if not o["as_imported"]:
        emission_only()
    for m in bpy.data.materials:  # the emission is what the bake put there: not a light of its own
        if hasattr(m, "cycles"):
            if hasattr(m.cycles, "emission_sampling"):
                m.cycles.emission_sampling = "NONE"
            elif hasattr(m.cycles, "sample_as_light"):
                m.cycles.sample_as_light = False
    sc.world = bpy.data.worlds.new("black")
    sc.world.use_nodes = False
    sc.world.color = (0, 0, 0)
    sc.render.engine = "CYCLES"
    sc.cycles.samples = 16
    sc.cycles.max_bounces = 0
    sc.cycles.use_denoising = False
    sc.cycles.filter_width = 0.01  # one point per pixel, as `baker view` traces the pixel's centre
    sc.view_settings.view_transform = "Standard"
    sc.view_settings.look = "None"
    sc.view_settings.exposure = 0
    sc.view_settings.gamma = 1
    sc.render.resolution_x, sc.render.resolution_y = o["resolution"]
    sc.render.resolution_percentage = 100
    sc.render.image_settings.file_format = "PNG"
    sc.render.image_settings.color_mode = "RGB"
    cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    sc.collection.objects.link(cam)
    c = o["camera"] or [3, 7, 4.5, -1, 0, -1, 65]
    yup = lambda x, y, z: mathutils.Vector((x, -z, y))  # baker's / glTF's Y up -> Blender's Z up
    eye, tgt = yup(*c[0:3]), yup(*c[3:6])
    cam.location = eye
    cam.rotation_euler = (tgt - eye).to_track_quat("-Z", "Y").to_euler()
    cam.data.sensor_fit = "VERTICAL"
    cam.data.angle = math.radians(c[6])
    sc.camera = cam
    sc.render.filepath = o["out"]
    bpy.ops.render.render(write_still=True)
    print("   rendered %s" % o["out"])


def compare(a, b):
    ia, ib = bpy.data.images.load(a), bpy.data.images.load(b)
    if tuple(ia.size) != tuple(ib.size):
        print("   compare: sizes differ %s %s" % (tuple(ia.size), tuple(ib.size)))
        return
    for i in (ia, ib):
        i.colorspace_settings.name = "Non-Color"  # the stored bytes, not decoded
    pa, pb = numpy.array(ia.pixels[:]).reshape(-1, 4)[:, :3], numpy.array(ib.pixels[:]).reshape(-1, 4)[:, :3]
    d = numpy.abs(numpy.round(pa * 255) - numpy.round(pb * 255))
    mse = float((d ** 2).mean())
    psnr = 10 * math.log10(255 ** 2 / mse) if mse > 0 else float("inf")
    print("   compare %s vs %s: mean abs difference %.3f (0..255), PSNR %.2f dB, pixels off by > 16: %.2f%%" % (
        os.path.basename(a), os.path.basename(b), float(d.mean()), psnr, 100.0 * float((d.max(axis=1) > 16).mean())))


def main():
    o = opts(sys.argv)
    if not o["file"]:
        print("usage: blender -b --factory-startup --python tools/blender_gltf_check.py -- FILE.glb "
              "[--camera X,Y,Z,TX,TY,TZ,FOV] [--resolution W,H] [-o render.png] [--compare view.png] [--as-imported]")
        sys.exit(2)
    print("Blender %s: %s" % (bpy.app.version_string, o["file"]))
    tmp = tempfile.mkdtemp(prefix="bk_gltf_")
    alone = os.path.join(tmp, os.path.basename(o["file"]))
    shutil.copyfile(o["file"], alone)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        bpy.ops.import_scene.gltf(filepath=alone)
    except Exception as e:
        print("   IMPORT FAILED: %s" % e)
        sys.exit(1)
    ok = report()
    if o["out"]:
        render(o)
        if o["compare"]:
            compare(o["out"], o["compare"])
    shutil.rmtree(tmp)
    sys.exit(0 if ok else 1)


main()
