# blender_check.py - loads baker's --mesh-out files in Blender and prints what came through.
#
# Run headless (Debian: apt-get install blender; tested with Blender 3.4):
#     blender -b --factory-startup --python tools/blender_check.py -- c.glb c.gltf c.obj
# Each file is imported into an empty scene with Blender's own importer (.gltf/.glb:
# bpy.ops.import_scene.gltf; .obj: bpy.ops.wm.obj_import, Blender >= 3.3, else
# import_scene.obj) and the script prints: the objects, each mesh's UV layers (name, loops, u/v
# range), each material's base colour, emission and the images its nodes use (with the UV map
# that feeds them), and every image Blender loaded (size, whether its pixels were found).
# Nothing is written. The exit status is 1 when an import fails.
import sys

import bpy

try:
    # Debian's Blender 3.4 glTF importer uses np.bool, which NumPy 1.24 (Debian 12's) removed:
    # the import then fails inside Blender whatever the file. The alias restores it.
    import numpy
    if "bool" not in numpy.__dict__:
        numpy.bool = bool
except ImportError:
    pass   # the glTF importer needs numpy: apt-get install python3-numpy


def empty_scene():
    bpy.ops.wm.read_factory_settings(use_empty=True)


def import_file(path):
    p = path.lower()
    if p.endswith(".gltf") or p.endswith(".glb"):
        return bpy.ops.import_scene.gltf(filepath=path)
    if p.endswith(".obj"):
        if hasattr(bpy.ops.wm, "obj_import"):
            return bpy.ops.wm.obj_import(filepath=path)
        return bpy.ops.import_scene.obj(filepath=path)
    raise ValueError("not a .gltf, .glb or .obj file: " + path)


def fmt(v):
    return "(" + ", ".join("%.3f" % x for x in v) + ")"


def uv_range(mesh, layer):
    if not len(layer.data):
        return "empty"
    us = [d.uv[0] for d in layer.data]
    vs = [d.uv[1] for d in layer.data]
    return "u %.4f..%.4f v %.4f..%.4f" % (min(us), max(us), min(vs), max(vs))


def image_users(mat):
    """Image nodes of a material: image name, the socket it feeds, and the UV map feeding it."""
    out = []
    if not mat.use_nodes:
        return out
    for tree in [mat.node_tree] + [n.node_tree for n in mat.node_tree.nodes if n.type == "GROUP" and n.node_tree]:
        for n in tree.nodes:
            if n.type != "TEX_IMAGE" or not n.image:
                continue
            uv = "default UV"
            if n.inputs["Vector"].is_linked:
                src = n.inputs["Vector"].links[0].from_node
                while src.type != "UVMAP" and src.inputs and src.inputs[0].is_linked:
                    src = src.inputs[0].links[0].from_node   # through a Mapping node
                if src.type == "UVMAP":
                    uv = "UV map '%s'" % src.uv_map
            feeds = []
            for o in n.outputs:
                for l in o.links:
                    to = l.to_node
                    if to.type == "SEPARATE_COLOR":   # the occlusion slot takes one channel
                        for l2 in [x for oo in to.outputs for x in oo.links]:
                            g = l2.to_node.node_tree.name if l2.to_node.type == "GROUP" and l2.to_node.node_tree else l2.to_node.name
                            feeds.append("Separate Color.%s -> '%s'.%s" % (l2.from_socket.name, g, l2.to_socket.name))
                    else:
                        feeds.append("%s.%s" % (to.label or to.name, l.to_socket.name))
            out.append("%s via %s -> %s" % (n.image.name, uv, ", ".join(feeds) or "nothing"))
    return out


def report(path):
    print("== %s" % path)
    empty_scene()
    try:
        r = import_file(path)
    except Exception as e:   # the importer raises on malformed files
        print("   IMPORT FAILED: %s" % e)
        return False
    print("   import: %s" % ", ".join(sorted(r)))
    objs = list(bpy.context.scene.objects)
    meshes = [o for o in objs if o.type == "MESH"]
    print("   objects: %d (%d meshes)" % (len(objs), len(meshes)))
    for o in meshes:
        me = o.data
        print("   mesh '%s': %d vertices, %d faces, %d UV layers" % (o.name, len(me.vertices), len(me.polygons), len(me.uv_layers)))
        for layer in me.uv_layers:
            print("     UV layer '%s': %d loops, %s" % (layer.name, len(layer.data), uv_range(me, layer)))
        mats = [m for m in me.materials if m]
        print("     materials: %d" % len(mats))
        for m in mats:
            base = emis = None
            if m.use_nodes:
                bsdf = next((n for n in m.node_tree.nodes if n.type == "BSDF_PRINCIPLED"), None)
                if bsdf:
                    base = bsdf.inputs["Base Color"].default_value
                    if bsdf.inputs["Base Color"].is_linked:
                        # a texture: the importer multiplies it by the factor in a MixRGB node
                        src = bsdf.inputs["Base Color"].links[0].from_node
                        base = (src.inputs["Color2"].default_value if src.type == "MIX_RGB" else
                                src.inputs[7].default_value if src.type == "MIX" else None)   # 3.4: Mix node, B colour
                    emis = (bsdf.inputs["Emission"].default_value, bsdf.inputs["Emission Strength"].default_value)
            line = "       '%s': base colour %s" % (m.name, fmt(base[:3]) if base else "from a texture")
            if emis and any(c > 0 for c in emis[0][:3]) and emis[1] > 0:
                line += ", emission %s x %.3g" % (fmt(emis[0][:3]), emis[1])
            print(line)
            for u in image_users(m):
                print("         image %s" % u)
    imgs = [i for i in bpy.data.images if i.source == "FILE"]
    print("   images: %d" % len(imgs))
    for i in imgs:
        print("     '%s' %s: %dx%d, %s" % (i.name, i.filepath, i.size[0], i.size[1],
                                           "pixels loaded" if i.has_data or i.size[0] > 0 else "FILE NOT FOUND"))
    return True


def main():
    args = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []
    if not args:
        print("usage: blender -b --factory-startup --python tools/blender_check.py -- FILE.glb|.gltf|.obj ...")
        sys.exit(2)
    print("Blender %s" % bpy.app.version_string)
    ok = all([report(p) for p in args])
    sys.exit(0 if ok else 1)


main()
