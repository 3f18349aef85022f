# courtyard_gltf.py - the textured demo scene (scenes/courtyard) as a glTF that Blender wrote: a
# glTF input baker's tests never wrote themselves (Blender's node names, its material
# export, its embedded PNGs, its Y-up conversion).
#
# Run headless (Debian: apt-get install blender python3-numpy; tested with Blender 3.4):
#     blender -b --factory-startup --python tools/courtyard_gltf.py -- scenes/courtyard/courtyard.obj yard.glb
# .glb embeds the textures; .gltf writes .bin and the PNGs beside it. The OBJ is read as Y-up
# (baker's scene frame), so the glTF and the OBJ have the same coordinates.
import sys

import bpy

try:
    import numpy  # Debian's Blender 3.4 exporter imports numpy and uses np.bool (gone in NumPy 1.24)
    if "bool" not in numpy.__dict__:
        numpy.bool = bool
except ImportError:
    sys.exit("courtyard_gltf.py: Blender's glTF exporter needs numpy (apt-get install python3-numpy)")

src, dst = sys.argv[sys.argv.index("--") + 1:][:2]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.obj(filepath=src, axis_forward="-Z", axis_up="Y")
bpy.ops.export_scene.gltf(filepath=dst, export_format="GLB" if dst.lower().endswith(".glb") else "GLTF_SEPARATE",
                          export_texcoords=True, export_normals=True, export_materials="EXPORT", export_yup=True)
print("courtyard_gltf.py: %d objects, %d materials -> %s" % (len(bpy.context.scene.objects), len(bpy.data.materials), dst))
