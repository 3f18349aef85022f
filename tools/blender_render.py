# blender_render.py - renders a glTF written by `baker ... --mesh-out FILE.glb` in Blender, to see
# the bake applied (baker writes each page's lit image, albedo x light, as the materials'
# emissiveTexture on TEXCOORD_1 with emissiveFactor 1, which Blender's importer wires straight to
# the Emission input). A quick look from a fixed camera; tools/blender_gltf_check.py renders from
# a `baker view` camera, emission only, and compares with baker's own image.
#
# Run headless (Debian: apt-get install blender python3-numpy; tested with Blender 3.4):
#     blender -b --factory-startup --python tools/blender_render.py -- c.glb render.png
# A camera looks along +Y (glTF's -Z) at the middle of the scene's box from 1.6 box sizes away;
# black world; Cycles, 16 samples, no bounces of its own (the light is the lightmap's).
import bpy, sys, math, mathutils
import numpy
if "bool" not in numpy.__dict__: numpy.bool = bool
args = sys.argv[sys.argv.index("--") + 1:]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_scene.gltf(filepath=args[0])
sc = bpy.context.scene
objs = [o for o in sc.objects if o.type == "MESH"]
lo = [min(min((o.matrix_world @ mathutils.Vector(c))[k] for c in o.bound_box) for o in objs) for k in range(3)]
hi = [max(max((o.matrix_world @ mathutils.Vector(c))[k] for c in o.bound_box) for o in objs) for k in range(3)]
ctr = [(a + b) / 2 for a, b in zip(lo, hi)]
size = max(b - a for a, b in zip(lo, hi))
cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
sc.collection.objects.link(cam)
cam.location = (ctr[0], lo[1] - 1.6 * size, ctr[2])
cam.rotation_euler = (math.pi / 2, 0, 0)
sc.camera = cam
sc.world = bpy.data.worlds.new("w"); sc.world.color = (0, 0, 0)
sc.render.engine = "CYCLES"; sc.cycles.samples = 16; sc.cycles.max_bounces = 0; sc.cycles.use_denoising = False
sc.render.resolution_x = sc.render.resolution_y = 256
sc.render.filepath = args[1]
bpy.ops.render.render(write_still=True)
print("RENDERED", args[1])
