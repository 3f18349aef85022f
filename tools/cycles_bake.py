# cycles_bake.py - bakes a scene with Blender's Cycles on baker's lightmap UVs, for comparison with
# baker's own lightmap (tools/cycles_compare.py runs the whole comparison; docs/baking.md says how).
#
# Run headless (Debian: apt-get install blender; tested with Blender 3.4):
#     blender -b --factory-startup --python tools/cycles_bake.py -- SCENE.obj LM.obj OUT.exr
#         [--size W[xH]] [--samples 256] [--bounces 2] [--sun X,Y,Z,R,G,B,DEG] [--sky R,G,B]
#         [--coverage BAKER.exr --mask MASK.png] [--textures on|off] [--threads 2] [--save-blend F.blend]
# SCENE.obj is the scene baker baked, LM.obj its `--mesh-out` (same triangles in file order, the
# lightmap UVs as vt). OUT.exr gets Cycles' bake: type DIFFUSE, passes DIRECT + INDIRECT without
# COLOR, i.e. the light a white Lambertian surface sends out, which is what a baker texel holds
# (the incoming diffuse light / pi), linear, float. With --coverage, MASK.png gets the texels both
# cover: baker wrote them (non-zero in BAKER.exr), Cycles baked them (a texel centre inside a
# triangle) and found them lit, their centre is not in a cut-out hole (an EMIT bake of map_d) and
# not inside geometry (a second bake: the share of rays that meet a back face, baker's rule is
# > 0.1, src/bake/fill.h); `baker diff --mask` takes it.
#
# What is reproduced of baker (kernels/bk_bake.h):
# - the scene: Blender's OBJ importer (wm.obj_import, no axis change) for the materials and the
#   texture UVs, then one mesh of baker's triangles in baker's order (fans of each polygon, as
#   baker's reader cuts them, matched by their corners) with UVMap (the file's vt) and Lightmap;
# - materials: the importer (3.4) wires map_Kd to Base Color without Kd, map_Ke to Emission
#   without Ke, map_d's alpha to Alpha in BLEND mode, and its Principled BSDF's diffuse is not
#   Lambert; each material is rebuilt as Lambert (Diffuse BSDF, roughness 0) of Kd x map_Kd (map_Kd
#   alone for an MTL whose first line is "# Blender", as baker reads it), plus Emission Ke x
#   map_Ke emitted from the front only, cut out where map_d's alpha < 0.5 (MASK), and black on
#   back faces (baker: a ray that meets the back of a surface brings no light);
# - lights: --sun -> a sun lamp, strength = the irradiance (its largest channel, the colour the
#   ratio), angle = 2 x DEG (Blender's angle is the diameter, baker's DEG the radius); --sky ->
#   the world colour (radiance); neither and no emitter -> a white sky, as baker does;
# - --textures off: Kd, Ke and opaque surfaces only (baker before it read textures: checks the
#   rest of the pipeline on a textured scene);
# - bounces: baker's --bounces B (indirect bounces after the direct light) -> Cycles'
#   max_bounces = diffuse_bounces = B; clamping and the light threshold off, so nothing is cut.
import math
import sys

import bpy
import mathutils


def parse_args(argv):
    args = argv[argv.index("--") + 1:] if "--" in argv else []
    opt = {"size": None, "samples": 256, "bounces": 2, "sun": None, "sky": None, "coverage": None, "mask": None,
           "threads": 2, "save_blend": None, "seed": 1, "textures": "on"}
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and a[2:].replace("-", "_") in opt:
            opt[a[2:].replace("-", "_")] = args[i + 1]
            i += 2
        else:
            pos.append(a)
            i += 1
    if len(pos) != 3:
        sys.exit("usage: blender -b --python cycles_bake.py -- SCENE.obj LM.obj OUT.exr [options]")
    opt["scene"], opt["lm"], opt["out"] = pos
    for k in ("samples", "bounces", "threads", "seed"):
        opt[k] = int(opt[k])
    if opt["sun"]:
        opt["sun"] = [float(x) for x in opt["sun"].split(",")]
        if len(opt["sun"]) != 7:
            sys.exit("--sun: expected X,Y,Z,R,G,B,DEG")
    if opt["sky"]:
        opt["sky"] = [float(x) for x in opt["sky"].split(",")]
    return opt


def read_lm_obj(path):
    """baker's --mesh-out OBJ: positions and lightmap UVs of each triangle, in file order."""
    v, vt, tris, pages = [], [], [], set()
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "v":
                v.append(tuple(float(x) for x in w[1:4]))
            elif w[0] == "vt":
                vt.append((float(w[1]), float(w[2])))
            elif w[0] == "g":
                pages.update(x for x in w[1:] if x.startswith("page_"))
            elif w[0] == "f":
                c = [x.split("/") for x in w[1:]]
                if len(c) != 3:
                    sys.exit("%s: a face that is not a triangle" % path)
                tris.append(([v[int(x[0]) - 1] for x in c], [vt[int(x[1]) - 1] for x in c]))
    if len(pages) > 1:
        sys.exit("%s: %d lightmap pages; one page only" % (path, len(pages)))
    return tris


def key(p):
    return tuple(round(x, 4) for x in p)


def mtl_is_blender(scene_path):
    """Whether the scene's MTL (the first mtllib) starts with "# Blender" (map_Kd replaces Kd)."""
    import os
    d = os.path.dirname(scene_path)
    with open(scene_path) as f:
        for line in f:
            if line.startswith("mtllib"):
                try:
                    with open(os.path.join(d, line.split(None, 1)[1].strip())) as m:
                        return m.readline().startswith("# Blender")
                except OSError:
                    return False
    return False


def import_scene(path):
    bpy.ops.wm.obj_import(filepath=path, forward_axis="Y", up_axis="Z")   # no axis change
    return [o for o in bpy.context.scene.objects if o.type == "MESH"]


def scalar_out(tex_node):
    """map_d's scalar: its alpha, or, for an image without alpha, its grey (as baker reads it)."""
    img = tex_node.image
    with_alpha = img.depth in (16, 32, 64, 128)   # bits per texel: grey + alpha, RGBA 8 / 16 / 32
    return tex_node.outputs["Alpha"] if with_alpha else tex_node.outputs["Color"]


def material_parts(mat):
    """Kd, Ke and the images of map_Kd, map_Ke, map_d as the importer left them."""
    p = mat.node_tree.nodes.get("Principled BSDF")
    parts = {"kd": (0.8, 0.8, 0.8), "ke": (0, 0, 0), "map_kd": None, "map_ke": None, "map_d": None}
    if not p:
        return parts
    parts["kd"] = tuple(p.inputs["Base Color"].default_value[:3])
    parts["ke"] = tuple(x * p.inputs["Emission Strength"].default_value for x in p.inputs["Emission"].default_value[:3])
    for name, sock in (("map_kd", "Base Color"), ("map_ke", "Emission"), ("map_d", "Alpha")):
        s = p.inputs[sock]
        if s.is_linked and s.links[0].from_node.type == "TEX_IMAGE":
            parts[name] = s.links[0].from_node.image
    return parts


def rebuild_material(mat, parts, kd_by_map, lm_image, share=False):
    """The material as baker sees it; share: white in front, emitting 1 from the back (the
    back-face share pass: the DIFFUSE DIRECT bake is then the cosine-weighted share of a texel's
    rays that meet a back face)."""
    nt = mat.node_tree
    nt.nodes.clear()
    N, L = nt.nodes.new, nt.links.new
    uv = N("ShaderNodeUVMap")
    uv.uv_map = "UVMap"

    def tex(img, non_color=False):
        t = N("ShaderNodeTexImage")
        t.image = img
        t.interpolation = "Linear"
        if non_color:
            img.colorspace_settings.name = "Non-Color"
        L(uv.outputs["UV"], t.inputs["Vector"])
        return t

    def times(color_socket, factor):
        m = N("ShaderNodeMixRGB")
        m.blend_type = "MULTIPLY"
        m.inputs["Fac"].default_value = 1.0
        L(color_socket, m.inputs[1])
        m.inputs[2].default_value = tuple(factor) + (1.0,)
        return m.outputs["Color"]

    diffuse = N("ShaderNodeBsdfDiffuse")
    diffuse.inputs["Roughness"].default_value = 0.0
    if share:
        diffuse.inputs["Color"].default_value = (1, 1, 1, 1)
    elif parts["map_kd"]:
        c = tex(parts["map_kd"]).outputs["Color"]
        L(c if kd_by_map else times(c, parts["kd"]), diffuse.inputs["Color"])
    else:
        diffuse.inputs["Color"].default_value = tuple(parts["kd"]) + (1.0,)
    surface = diffuse.outputs["BSDF"]
    if not share and (parts["map_ke"] or any(parts["ke"])):
        emit = N("ShaderNodeEmission")
        emit.inputs["Strength"].default_value = 1.0
        if parts["map_ke"]:
            L(times(tex(parts["map_ke"]).outputs["Color"], parts["ke"]), emit.inputs["Color"])
        else:
            emit.inputs["Color"].default_value = tuple(parts["ke"]) + (1.0,)
        add = N("ShaderNodeAddShader")
        L(surface, add.inputs[0])
        L(emit.outputs["Emission"], add.inputs[1])
        surface = add.outputs["Shader"]
    # the back of a surface: black (no reflection, no emission); in the share pass, emitting 1
    geo = N("ShaderNodeNewGeometry")
    if share:
        black = N("ShaderNodeEmission")
        black.inputs["Color"].default_value = (1, 1, 1, 1)
        black.inputs["Strength"].default_value = 1.0
    else:
        black = N("ShaderNodeBsdfDiffuse")
        black.inputs["Color"].default_value = (0, 0, 0, 1)
    back = N("ShaderNodeMixShader")
    L(geo.outputs["Backfacing"], back.inputs["Fac"])
    L(surface, back.inputs[1])
    L(black.outputs[0], back.inputs[2])
    surface = back.outputs["Shader"]
    if parts["map_d"]:
        a = tex(parts["map_d"], non_color=True)
        cut = N("ShaderNodeMath")
        cut.operation = "GREATER_THAN"
        cut.inputs[1].default_value = 0.5 - 1e-6   # standing where alpha >= 0.5
        L(scalar_out(a), cut.inputs[0])
        hole = N("ShaderNodeBsdfTransparent")
        m = N("ShaderNodeMixShader")
        L(cut.outputs["Value"], m.inputs["Fac"])
        L(hole.outputs["BSDF"], m.inputs[1])
        L(surface, m.inputs[2])
        surface = m.outputs["Shader"]
        mat.blend_method = "CLIP"
        mat.alpha_threshold = 0.5
    out = N("ShaderNodeOutputMaterial")
    L(surface, out.inputs["Surface"])
    # the bake's target: an unconnected image node, selected and active
    target = N("ShaderNodeTexImage")
    target.image = lm_image
    for n in nt.nodes:
        n.select = False
    target.select = True
    nt.nodes.active = target
    return any(parts["ke"])


def build_bake_mesh(objs, lm_tris):
    """One mesh of baker's triangles in baker's order: UVMap from the import, Lightmap from baker."""
    mats, slot_of = [], {}
    fans = {}
    for o in objs:
        me, mw = o.data, o.matrix_world
        uv0 = me.uv_layers[0].data if me.uv_layers else None
        for poly in me.polygons:
            loops = list(poly.loop_indices)
            m = o.material_slots[poly.material_index].material if o.material_slots else None
            if m and m.name not in slot_of:
                slot_of[m.name] = len(mats)
                mats.append(m)
            for i in range(1, len(loops) - 1):
                corners = [loops[0], loops[i], loops[i + 1]]
                pos = [tuple(mw @ me.vertices[me.loops[l].vertex_index].co) for l in corners]
                uvs = [tuple(uv0[l].uv) if uv0 else (0.0, 0.0) for l in corners]
                fans.setdefault(tuple(key(p) for p in pos), []).append((uvs, slot_of[m.name] if m else 0))
    verts, faces, uv0s, uv1s, mat_idx = [], [], [], [], []
    for t, (pos, lm_uv) in enumerate(lm_tris):
        k = tuple(key(p) for p in pos)
        if not fans.get(k):
            sys.exit("triangle %d of the lightmap mesh %s: no triangle of the scene has these corners" % (t, pos))
        uvs, mi = fans[k].pop(0)
        faces.append((3 * t, 3 * t + 1, 3 * t + 2))
        verts.extend(pos)
        uv0s.extend(uvs)
        uv1s.extend(lm_uv)
        mat_idx.append(mi)
    left = sum(len(v) for v in fans.values())
    if left:
        sys.exit("%d triangles of the scene are not in the lightmap mesh" % left)
    me = bpy.data.meshes.new("baked")
    me.from_pydata(verts, [], faces)
    for m in mats:
        me.materials.append(m)
    me.polygons.foreach_set("material_index", mat_idx)
    for name, uvs in (("UVMap", uv0s), ("Lightmap", uv1s)):
        layer = me.uv_layers.new(name=name)
        layer.data.foreach_set("uv", [c for uv in uvs for c in uv])
    me.uv_layers.active = me.uv_layers["Lightmap"]   # the layer the bake writes through
    me.update()
    ob = bpy.data.objects.new("baked", me)
    for o in objs:
        bpy.data.objects.remove(o, do_unlink=True)
    bpy.context.scene.collection.objects.link(ob)
    return ob, mats


def setup_lights(opt, any_emitter):
    sc = bpy.context.scene
    sc.world = bpy.data.worlds.new("sky")
    sky = opt["sky"] or ((1.0, 1.0, 1.0) if not opt["sun"] and not any_emitter else (0.0, 0.0, 0.0))
    sc.world.use_nodes = True
    bg = sc.world.node_tree.nodes["Background"]
    bg.inputs["Color"].default_value = tuple(sky) + (1.0,)
    bg.inputs["Strength"].default_value = 1.0
    if opt["sun"]:
        x, y, z, r, g, b, deg = opt["sun"]
        peak = max(r, g, b)
        sun = bpy.data.lights.new("sun", type="SUN")
        sun.energy = peak
        sun.color = (r / peak, g / peak, b / peak) if peak > 0 else (1, 1, 1)
        sun.angle = math.radians(2.0 * deg)
        ob = bpy.data.objects.new("sun", sun)
        d = mathutils.Vector((x, y, z)).normalized()
        ob.rotation_euler = d.to_track_quat("Z", "Y").to_euler()   # the lamp shines along its -Z
        sc.collection.objects.link(ob)
    return sky


def setup_cycles(opt):
    sc = bpy.context.scene
    sc.render.engine = "CYCLES"
    cy = sc.cycles
    cy.device = "CPU"
    cy.samples = opt["samples"]
    cy.use_adaptive_sampling = False
    cy.use_denoising = False
    cy.seed = opt["seed"]
    cy.max_bounces = cy.diffuse_bounces = opt["bounces"]
    cy.glossy_bounces = cy.transmission_bounces = cy.volume_bounces = 0
    cy.transparent_max_bounces = 64
    cy.sample_clamp_direct = cy.sample_clamp_indirect = 0.0
    cy.light_sampling_threshold = 0.0
    cy.caustics_reflective = cy.caustics_refractive = False
    sc.render.threads_mode = "FIXED"
    sc.render.threads = opt["threads"]


def read_pixels(img):
    px = [0.0] * (len(img.pixels))
    img.pixels.foreach_get(px)
    return px


def rebuild_stand(mat, parts, target_image):
    """1 where the surface stands, 0 in its cut-out holes (map_d < 0.5), as an emission for an EMIT
    bake: a texel whose centre lies in a hole is not a surface that light reaches."""
    nt = mat.node_tree
    nt.nodes.clear()
    N, L = nt.nodes.new, nt.links.new
    emit = N("ShaderNodeEmission")
    emit.inputs["Strength"].default_value = 1.0
    emit.inputs["Color"].default_value = (1, 1, 1, 1)
    if parts["map_d"]:
        uv = N("ShaderNodeUVMap")
        uv.uv_map = "UVMap"
        t = N("ShaderNodeTexImage")
        t.image = parts["map_d"]
        t.interpolation = "Linear"
        L(uv.outputs["UV"], t.inputs["Vector"])
        cut = N("ShaderNodeMath")
        cut.operation = "GREATER_THAN"
        cut.inputs[1].default_value = 0.5 - 1e-6
        L(scalar_out(t), cut.inputs[0])
        L(cut.outputs["Value"], emit.inputs["Color"])
    out = N("ShaderNodeOutputMaterial")
    L(emit.outputs["Emission"], out.inputs["Surface"])
    target = N("ShaderNodeTexImage")
    target.image = target_image
    for n in nt.nodes:
        n.select = False
    target.select = True
    nt.nodes.active = target


def bake_stand(mats, parts, w, h):
    stand = bpy.data.images.new("stand", w, h, alpha=True, float_buffer=True)
    stand.generated_color = (0, 0, 0, 0)
    for m in mats:
        rebuild_stand(m, parts[m.name], stand)
    sc = bpy.context.scene
    samples = sc.cycles.samples
    sc.cycles.samples = 1
    bpy.ops.object.bake(type="EMIT", margin=0, use_clear=True, target="IMAGE_TEXTURES")
    sc.cycles.samples = samples
    return read_pixels(stand)


def bake_share(opt, ob, mats, parts, kd_by_map, w, h):
    """The cosine-weighted share of each texel's rays that meet a back face: baker takes a texel
    whose share is above 0.1 for one inside geometry and fills it from its chart's neighbours
    (src/bake/fill.h), so the comparison leaves such texels out. Sky and sun off, no bounces."""
    share = bpy.data.images.new("share", w, h, alpha=True, float_buffer=True)
    share.generated_color = (0, 0, 0, 0)
    for m in mats:
        rebuild_material(m, parts[m.name], kd_by_map, share, share=True)
    sc = bpy.context.scene
    sc.world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.0
    for o in sc.objects:
        if o.type == "LIGHT":
            o.hide_render = True
    sc.cycles.samples = max(16, opt["samples"] // 4)
    sc.cycles.max_bounces = sc.cycles.diffuse_bounces = 0
    bpy.ops.object.bake(type="DIFFUSE", pass_filter={"DIRECT"}, margin=0, use_clear=True, target="IMAGE_TEXTURES")
    return read_pixels(share)


def write_mask(opt, lm_px, share_px, stand_px, w, h):
    """MASK.png: texels baker wrote (non-zero in its lightmap) that Cycles baked, found lit, found
    outside geometry (a back-face share of at most 0.1, baker's own rule) and not in a hole."""
    bk = bpy.data.images.load(opt["coverage"])
    if tuple(bk.size) != (w, h):
        sys.exit("%s is %dx%d, the bake %dx%d" % (opt["coverage"], bk.size[0], bk.size[1], w, h))
    a, b = read_pixels(bk), lm_px
    m = [0.0] * (4 * w * h)
    n = holes = inside = cut = 0
    for i in range(w * h):
        j = 4 * i
        baker = a[j] != 0 or a[j + 1] != 0 or a[j + 2] != 0
        cycles_baked = b[j + 3] > 0
        lit = b[j] != 0 or b[j + 1] != 0 or b[j + 2] != 0
        if not (baker and cycles_baked):
            pass
        elif stand_px[j] < 0.5:
            cut += 1
        elif share_px[j] > 0.1:
            inside += 1
        elif not lit:
            holes += 1
        else:
            m[j] = m[j + 1] = m[j + 2] = 1.0
            n += 1
        m[j + 3] = 1.0
    mask = bpy.data.images.new("mask", w, h, alpha=False)
    mask.pixels.foreach_set(m)
    mask.filepath_raw = opt["mask"]
    mask.file_format = "PNG"
    mask.save()
    print("cycles_bake: %s: %d texels both cover; left out: %d in cut-out holes, %d inside geometry "
          "(back-face share > 0.1), %d black in Cycles' bake" % (opt["mask"], n, cut, inside, holes))


def main():
    opt = parse_args(sys.argv)
    lm_tris = read_lm_obj(opt["lm"])
    if opt["size"]:
        w, _, h = opt["size"].partition("x")
        w, h = int(w), int(h or w)
    elif opt["coverage"]:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        img = bpy.data.images.load(opt["coverage"])
        w, h = img.size
    else:
        sys.exit("--size or --coverage: the lightmap's size")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    lm = bpy.data.images.new("lightmap", w, h, alpha=True, float_buffer=True)
    lm.generated_color = (0, 0, 0, 0)
    kd_by_map = mtl_is_blender(opt["scene"])
    objs = import_scene(opt["scene"])
    ob, mats = build_bake_mesh(objs, lm_tris)
    any_emitter = False
    parts = {m.name: material_parts(m) for m in mats}
    if opt["textures"] == "off":
        for p in parts.values():
            p["map_kd"] = p["map_ke"] = p["map_d"] = None
    for m in mats:
        any_emitter |= rebuild_material(m, parts[m.name], kd_by_map, lm)
    sky = setup_lights(opt, any_emitter)
    setup_cycles(opt)
    sc = bpy.context.scene
    sc.render.bake.margin = 0
    sc.render.bake.use_clear = True
    bpy.context.view_layer.objects.active = ob
    ob.select_set(True)
    print("cycles_bake: %d triangles, %d materials, %dx%d, %d samples, %d bounces, sky %s, sun %s, textures %s" %
          (len(lm_tris), len(mats), w, h, opt["samples"], opt["bounces"], tuple(sky), opt["sun"], opt["textures"]))
    if opt["save_blend"]:
        bpy.ops.wm.save_as_mainfile(filepath=opt["save_blend"])
    bpy.ops.object.bake(type="DIFFUSE", pass_filter={"DIRECT", "INDIRECT"}, margin=0, use_clear=True,
                        target="IMAGE_TEXTURES")
    # save_render writes the float buffer as it is; Image.save() would write it display-encoded
    sc.render.image_settings.file_format = "OPEN_EXR"
    sc.render.image_settings.color_depth = "32"
    sc.render.image_settings.exr_codec = "ZIP"
    lm.save_render(opt["out"], scene=sc)
    print("cycles_bake: wrote", opt["out"])
    if opt["coverage"] and opt["mask"]:
        lm_px = read_pixels(lm)
        share_px = bake_share(opt, ob, mats, parts, kd_by_map, w, h)
        stand_px = bake_stand(mats, parts, w, h) if opt["textures"] == "on" else [1.0] * (4 * w * h)
        write_mask(opt, lm_px, share_px, stand_px, w, h)


main()
