/* cmd_bake_opts.c - the options of `baker SCENE -o lightmap.png`: one table (name, argument, help
 * text, setter) from which both `baker help bake` and the parser are made. */
#include "cmd_bake_internal.h"
#include "cmd_bake.h"
#include "cmd_view.h"
#include "gltf.h"
#include "image.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int bk_cmd_bake_parse_floats(const char *opt, const char *val, int n, float *out)
{
    const char *p = val;
    for (int i = 0; i < n; ++i) {
        char *end;
        errno = 0;
        double d = strtod(p, &end);
        if (end == p || errno || !isfinite(d) || (i + 1 < n ? *end != ',' : *end != 0)) {
            bk_cmd_bake_error("%s: expected %d comma-separated numbers, got '%s'\n", opt, n, val);
            return -1;
        }
        out[i] = (float)d;
        p = end + 1;
    }
    return 0;
}

/* --devices LIST: comma-separated device numbers 0..BK_BAKE_MAX_DEVICES-1 (whether they exist is
 * the backend's to say). */
static int parse_devices(const char *v, int **out, int *n)
{
    int cap = 1;
    for (const char *q = v; *q; ++q) cap += *q == ',';
    int *d = malloc(sizeof(int) * (size_t)cap), k = 0;
    if (!d) {
        bk_cmd_bake_error("out of memory\n");
        return -1;
    }
    for (const char *q = v;;) {
        char *end;
        long  x = strtol(q, &end, 10);
        if (end == q || x < 0 || x >= BK_BAKE_MAX_DEVICES || (*end && *end != ',')) {
            bk_cmd_bake_error("--devices: expected all or a comma list of device numbers (0,1,...), got '%s'\n", v);
            free(d);
            return -1;
        }
        d[k++] = (int)x;
        if (!*end) break;
        q = end + 1;
    }
    *out = d;
    *n = k;
    return 0;
}

/* The setters of the table's rows: dst is a bk_cmd_bake_cli, opt the option as written, v its
 * value (NULL for a flag). */
#define CLI(dst) bk_cmd_bake_cli *c = dst

/* -o, repeatable: one lightmap of each image type (bake_check sorts and checks them) */
static int set_out(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (c->nouts == BK_CMD_BAKE_MAX_OUTS) {
        bk_cmd_bake_error("%s %s: at most %d lightmaps, one of each type (.png, .hdr, .exr)\n", opt, v,
                          BK_CMD_BAKE_MAX_OUTS);
        return -1;
    }
    c->outs[c->nouts++] = v;
    return 0;
}
/* --mesh-out, repeatable: one OBJ and one glTF at most */
static int set_mesh_out(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    const int   gltf = bk_gltf_path(v) != 0;
    const char *had = gltf ? c->mesh_gltf : c->mesh_obj;
    if (!gltf && !bk_path_has_ext(v, ".obj")) {
        bk_cmd_bake_error("%s %s: the mesh is written as a .obj, .gltf or .glb file\n", opt, v);
        return -1;
    }
    if (had) {
        bk_cmd_bake_error("%s %s and %s %s: one mesh of each kind (an .obj and a .gltf or .glb) at most\n", opt, had,
                          opt, v);
        return -1;
    }
    if (gltf) c->mesh_gltf = v;
    else c->mesh_obj = v;
    c->mesh_out = c->mesh_gltf ? c->mesh_gltf : c->mesh_obj;
    return 0;
}
static int set_preview(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    c->preview = v;
    return 0;
}
static int set_quiet(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    (void)v;
    c->quiet = 1;
    return 0;
}

static int set_exposure(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (!strcmp(v, "auto")) {
        c->exposure_auto = 1;
        return 0;
    }
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->exposure)) return -1;
    if (!(c->exposure >= 0)) {
        bk_cmd_bake_error("--exposure must be >= 0\n");
        return -1;
    }
    return 0;
}

static int set_size(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 4, BK_ATLAS_MAX_SIZE, &u)) return -1;
    c->atlas.size = (int)u;
    return 0;
}

static int set_texels_per_unit(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->atlas.texels_per_unit)) return -1;
    if (!(c->atlas.texels_per_unit > 0)) {
        bk_cmd_bake_error("--texels-per-unit must be positive\n");
        return -1;
    }
    return 0;
}

static int set_object_scale(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    const char *eq = strrchr(v, '=');
    float       f = 0;
    if (!eq || eq == v || bk_cmd_bake_parse_floats(opt, eq + 1, 1, &f) || !(f > 0 && f <= 1000)) {
        bk_cmd_bake_error("--object-scale %s: expected PATTERN=F with F in (0, 1000], e.g. 'statue*=2'\n", v);
        return -1;
    }
    const char **np = realloc(c->oscale_pat, sizeof(char *) * (size_t)(c->noscale + 1));
    if (np) c->oscale_pat = np;
    float *nf = np ? realloc(c->oscale_f, sizeof(float) * (size_t)(c->noscale + 1)) : NULL;
    char  *pat = nf ? malloc((size_t)(eq - v) + 1) : NULL;
    if (nf) c->oscale_f = nf;
    if (!pat) {
        bk_cmd_bake_error("out of memory\n");
        return -1;
    }
    memcpy(pat, v, (size_t)(eq - v));
    pat[eq - v] = 0;
    c->oscale_pat[c->noscale] = pat;
    c->oscale_f[c->noscale++] = f;
    return 0;
}

static int set_padding(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 2, 64, &u)) return -1;
    c->atlas.padding = (int)u;
    return 0;
}

static int set_uv(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "auto")) c->atlas.uv_from_file = 0;
    else if (!strcmp(v, "file")) c->atlas.uv_from_file = 1;
    else {
        bk_cmd_bake_error("--uv: expected auto or file, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_texels_per_voxel(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    /* a model side of 256 voxels at 64 texels each is the largest atlas side */
    if (bk_cli_u64(opt, v, 1, BK_ATLAS_MAX_SIZE / BK_VOX_MAX_SIZE, &u)) return -1;
    c->texels_per_voxel = (int)u;
    return 0;
}

static int set_pages(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "auto")) c->pages_auto = 1;
    else if (!strcmp(v, "1")) c->pages_auto = 0;
    else {
        bk_cmd_bake_error("--pages: expected 1 or auto, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_mode(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "light")) c->p.mode = BK_BAKE_LIGHT;
    else if (!strcmp(v, "ao")) c->p.mode = BK_BAKE_AO;
    else {
        bk_cmd_bake_error("--mode: expected light or ao, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_directional(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "off")) c->directional = BK_CMD_DIR_OFF;
    else if (!strcmp(v, "sh")) c->directional = BK_CMD_DIR_SH;
    else if (!strcmp(v, "dominant")) c->directional = BK_CMD_DIR_DOMINANT;
    else {
        bk_cmd_bake_error("--directional: expected off, sh or dominant, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_probes(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->probe_spacing)) return -1;
    if (!(c->probe_spacing > 0.0f) || !isfinite(c->probe_spacing)) {
        bk_cmd_bake_error("--probes: the spacing must be a distance > 0 in the scene's units, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_probe_spp(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 1, 1u << 20, &u)) return -1;
    c->probe_spp = (uint32_t)u;
    return 0;
}

static int set_probes_out(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    c->probes_out = v;
    return 0;
}

static int set_spp(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 1, 1u << 20, &u)) return -1;
    c->p.spp = (uint32_t)u;
    return 0;
}

static int set_bounces(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 0, 64, &u)) return -1;
    c->p.bounces = (uint32_t)u;
    return 0;
}

/* A light's value with an optional ",MODE" after its n numbers (enum bk_light_mode): the numbers
 * into f, the mode into *mode (BK_LIGHT_BAKED when none is given); -1 after saying why. */
static int parse_light(const char *opt, const char *v, int n, float *f, uint32_t *mode)
{
    static const char *const names[] = { "baked", "indirect", "off" };
    char                     num[256];
    const char              *comma = strrchr(v, ',');
    *mode = BK_LIGHT_BAKED;
    if (!comma || !((comma[1] >= 'a' && comma[1] <= 'z') || (comma[1] >= 'A' && comma[1] <= 'Z')))
        return bk_cmd_bake_parse_floats(opt, v, n, f);
    uint32_t k = 0;
    while (k < 3 && strcmp(comma + 1, names[k])) ++k;
    if (k == 3 || (size_t)(comma - v) >= sizeof num) {
        bk_cmd_bake_error("%s %s: the light's mode after its numbers is baked, indirect or off, not '%s'\n", opt, v,
                          comma + 1);
        return -1;
    }
    memcpy(num, v, (size_t)(comma - v));
    num[comma - v] = 0;
    *mode = k;
    return bk_cmd_bake_parse_floats(opt, num, n, f);
}

static int set_shadowmask(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    (void)v;
    c->shadowmask = 1;
    return 0;
}

/* --shadowmask: its channels, the lights baked indirect (the sun first, then the points in
 * order), into c->p.mask_count and mask_vis; -1 after saying why there are none or too many. */
static int plan_shadowmask(bk_cmd_bake_cli *c)
{
    uint32_t n = 0, total = 0;
    int      sun =
        c->p.sun_mode == BK_LIGHT_INDIRECT && (c->p.sun_color[0] > 0 || c->p.sun_color[1] > 0 || c->p.sun_color[2] > 0);
    total = (uint32_t)sun;
    for (uint32_t i = 0; i < c->point_count; ++i) total += c->point_modes[i] == BK_LIGHT_INDIRECT;
    const char *why = c->p.mode == BK_BAKE_AO ? "an AO bake has no lights"
                      : c->pages_auto         ? "not yet with --pages auto"
                      : !total                ? "no light is baked indirect: mark the sun or a point light so, as in "
                                                "--sun X,Y,Z,R,G,B,DEG,indirect (the engine then draws its direct "
                                                "light, and the mask says where it is shadowed)"
                      : total > BK_MASK_MAX   ? "at most 4 lights baked indirect (one per channel of the mask)"
                                              : NULL;
    for (uint32_t i = 0; !why && i < c->point_count; ++i)
        if (c->point_modes[i] == BK_LIGHT_INDIRECT && i >= BK_DIR_POINTS)
            why = "a point light baked indirect must be one of the first 30";
    if (why) {
        bk_cmd_bake_error("--shadowmask: %s\n", why);
        return -1;
    }
    if (sun) {
        c->mask_point[n] = -1;
        c->p.mask_vis[n++] = BK_VIS_SUN;
    }
    for (uint32_t i = 0; i < c->point_count; ++i)
        if (c->point_modes[i] == BK_LIGHT_INDIRECT) {
            c->mask_point[n] = (int)i;
            c->p.mask_vis[n++] = 1u << (BK_VIS_POINT0 + i);
        }
    c->p.mask_count = n;
    return 0;
}

static int set_sun(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    float f[7];
    if (parse_light(opt, v, 7, f, &c->p.sun_mode)) return -1;
    float l = sqrtf(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
    if (!(l > 0) || f[3] < 0 || f[4] < 0 || f[5] < 0 || f[6] < 0 || f[6] >= 90) {
        bk_cmd_bake_error("--sun: need a non-zero direction, colours >= 0 and an angle in [0, 90) degrees\n");
        return -1;
    }
    for (int k = 0; k < 3; ++k) {
        c->p.sun_dir[k] = f[k] / l;
        c->p.sun_color[k] = f[3 + k];
    }
    c->p.sun_cos = cosf(f[6] * 3.14159265f / 180.0f);
    return 0;
}

static int set_point(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    float    f[6];
    uint32_t mode;
    if (parse_light(opt, v, 6, f, &mode)) return -1;
    float   *np = realloc(c->points, sizeof(float) * 6 * (c->point_count + 1));
    uint8_t *nm = np ? realloc(c->point_modes, c->point_count + 1) : NULL;
    if (np) c->points = np;
    if (!nm) {
        bk_cmd_bake_error("out of memory\n");
        return -1;
    }
    c->point_modes = nm;
    c->point_modes[c->point_count] = (uint8_t)mode;
    memcpy(c->points + 6 * c->point_count++, f, sizeof f);
    return 0;
}

static int set_sky(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 3, c->p.sky)) return -1;
    c->sky_given = 1;
    return 0;
}

static int set_ao_distance(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->p.ao_distance)) return -1;
    if (!(c->p.ao_distance > 0)) {
        bk_cmd_bake_error("--ao-distance must be positive\n");
        return -1;
    }
    c->ao_given = 1;
    return 0;
}

static int set_inside_share(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->p.inside_share)) return -1;
    if (!(c->p.inside_share > 0.0f && c->p.inside_share <= 1.0f)) {
        bk_cmd_bake_error("--inside-share must be in (0, 1], got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_seed(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    uint64_t u;
    if (bk_cli_u64(opt, v, 0, 0xFFFFFFFFu, &u)) return -1;
    c->p.seed = (uint32_t)u;
    return 0;
}

static int set_denoise(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "on")) c->denoise = 1;
    else if (!strcmp(v, "off")) c->denoise = 0;
    else {
        bk_cmd_bake_error("--denoise: expected on or off, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_denoise_passes(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    float f;
    if (bk_cmd_bake_parse_floats(opt, v, 1, &f)) return -1;
    if (!(f >= 0 && f <= 10 && f == (float)(int)f)) {
        bk_cmd_bake_error("--denoise-passes must be an integer in 0..10\n");
        return -1;
    }
    c->dn.passes = (int)f;
    return 0;
}

static int set_denoise_sigma(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    float f[3];
    if (bk_cmd_bake_parse_floats(opt, v, 3, f)) return -1;
    if (!(f[0] > 0 && f[1] >= 0 && f[2] > 0)) {
        bk_cmd_bake_error("--denoise-sigma: L and X must be positive, N >= 0\n");
        return -1;
    }
    c->dn.sigma_l = f[0];
    c->dn.sigma_n = f[1];
    c->dn.sigma_x = f[2];
    return 0;
}

static int set_kernel(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "megakernel")) c->t.opts.wavefront = 0;
    else if (!strcmp(v, "wavefront")) c->t.opts.wavefront = 1;
    else {
        bk_cmd_bake_error("--kernel: expected megakernel or wavefront, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_bin_rays(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    if (!strcmp(v, "on")) {
        c->bin_rays = 1;
        c->t.opts.ray_order = BK_RAY_ORDER_SORTED;
    } else if (!strcmp(v, "off")) {
        c->bin_rays = 0;
        c->t.opts.ray_order = BK_RAY_ORDER_AUTO;
    } else {
        bk_cmd_bake_error("--bin-rays: expected on or off, got '%s'\n", v);
        return -1;
    }
    return 0;
}

static int set_max_launch_ms(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->max_launch_ms)) return -1;
    if (!(c->max_launch_ms > 0)) {
        bk_cmd_bake_error("--max-launch-ms must be positive\n");
        return -1;
    }
    return 0;
}

static int set_devices(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    (void)opt;
    free(c->devices);
    c->devices = NULL;
    c->ndevices = 0;
    if (strcmp(v, "all") && parse_devices(v, &c->devices, &c->ndevices)) return -1;
    return 0;
}

static int set_max_memory(void *dst, const char *opt, const char *v)
{
    CLI(dst);
    if (bk_cmd_bake_parse_floats(opt, v, 1, &c->max_memory_gb)) return -1;
    if (!(c->max_memory_gb > 0)) {
        bk_cmd_bake_error("--max-memory must be a positive number of GB\n");
        return -1;
    }
    return 0;
}
#undef CLI

/* A line of help text, printed as it is. */
#define TEXT(s)   \
    {             \
        .help = s \
    }

/* The atlas's options: the bake's, and `baker view`'s, which rebuilds the bake's atlas. */
const bk_cli_opt bk_cmd_bake_atlas_opts[] = {
    { .name = "--size", .arg = "N", .set = set_size, .help = "atlas side in texels (default 1024)" },
    { .name = "--texels-per-unit",
      .arg = "T",
      .set = set_texels_per_unit,
      .help = "texel density instead of --size; the atlas grows to fit" },
    { .name = "--object-scale",
      .arg = "PATTERN=F",
      .set = set_object_scale,
      .help = "texel density of the OBJ objects (o / g names, a shell glob:\n"
              "'statue*=2') times F along each axis (F^2 texels per area),\n"
              "like Unity's scale in lightmap; repeatable, the last match wins" },
    { .name = "--padding",
      .arg = "P",
      .set = set_padding,
      .help = "the texels bilinear lookups in two charts read stay P - 2 apart\n"
              "(default 2: never one texel for both; raise it for mipmaps)" },
    { .name = "--uv",
      .arg = "auto|file",
      .set = set_uv,
      .help = "make charts (default), or use the OBJ's own vt (must be in [0,1]\n"
              "and must not overlap; not for voxels)" },
    { .name = "--texels-per-voxel",
      .arg = "N",
      .set = set_texels_per_voxel,
      .help = "voxels: N x N texels per voxel face (default 2, at most 64); each\n"
              "merged quad of visible faces is one chart. World units are voxels,\n"
              "so an OBJ baked with a .vox is charted at --texels-per-unit (with\n"
              "--pages auto: N when not given, the voxels' density), else at the\n"
              "largest scale that fits the page beside the voxel charts" },
    { .name = "--pages",
      .arg = "1|auto",
      .set = set_pages,
      .help = "one atlas page (default; too many charts: an error saying how many\n"
              "pages are needed), or as many pages of --size as needed, written\n"
              "as NAME-0.png, NAME-1.png ... (a voxel instance stays on one page\n"
              "when it fits one, else takes consecutive pages;\n"
              "needs fixed chart sizes: voxels, or --texels-per-unit)" },
    { 0 },
};

/* The bake's options in the order --help lists them; the tracing options (cli.h) sit in the
 * engine section. --stats is taken out before the parse (bk_cmd_bake's startup): its row is help. */
static const bk_cli_opt bake_opts[] = {
    TEXT("usage: baker SCENE [SCENE...] -o LIGHTMAP.png|.hdr|.exr [options]\n"
         "\n"
         "Bakes a lightmap for SCENE (Wavefront .obj with its .mtl, .obj.gz, or MagicaVoxel .vox):\n"
         "direct light, soft shadows and bounced light for every texel of an automatically packed UV\n"
         "atlas. Several SCENEs are baked together into one atlas, as one scene (a file named twice,\n"
         "even by two different paths, is refused: it would bake as two coincident copies at half the\n"
         "texel density). A SCENE whose name starts with '-' is written ./-NAME, or after --, which\n"
         "ends the options. Each texel\n"
         "holds the incoming diffuse light divided by pi (the outgoing radiance of a white Lambertian\n"
         "surface: multiply by the albedo in the game), linear in .hdr and .exr, sRGB after --exposure\n"
         "in .png.\n"
         "\n"
         "output:\n"),
    { .name = "-o",
      .alias = "--output",
      .arg = "FILE",
      .set = set_out,
      .help = ".png (8-bit sRGB), .hdr (Radiance RGBE, linear, rounded) or .exr\n"
              "(OpenEXR RGB half-float, linear; builds with libtinyexr-dev only);\n"
              "repeatable, one of each type: -o lm.png -o lm.exr writes both\n"
              "from one bake (with --pages auto each as NAME-K.ext)" },
    { .name = "--exposure",
      .arg = "E|auto",
      .set = set_exposure,
      .help = "PNG scale before sRGB encoding (default 1); auto maps the 99th\n"
              "percentile of the texels' luminance to white" },
    { .name = "--mesh-out",
      .arg = "FILE.obj",
      .set = set_mesh_out,
      .help = "also write the mesh with its lightmap UVs (as vt), its objects\n"
              "(o), and FILE.mtl beside it: the scene's MTL files copied with\n"
              "their texture statements commented out (they would read the\n"
              "lightmap UVs), map_Ka naming the lightmap; with voxels, their\n"
              "merged quads too (materials vox_M, M the scene material: the\n"
              "palette index for a lone .vox). Files are named by paths below\n"
              "FILE's folder, or by their name with a note to copy them there;\n"
              "an existing FILE.mtl that baker did not write is never replaced\n"
              "(the run is refused). Repeatable: one .obj and one glTF" },
    TEXT("  --mesh-out FILE.gltf|.glb  or as glTF 2.0, one file with every image inside (.gltf\n"
         "                           embeds its buffer): a node per object, the file's own UVs as\n"
         "                           TEXCOORD_0, the lightmap UVs as TEXCOORD_1, materials (Kd, map_Kd,\n"
         "                           cut-outs), each page's lit image (albedo x light) as the\n"
         "                           emissiveTexture (texCoord 1), the lightmap PNG named in\n"
         "                           extras.baker_lightmap (docs/engines.md); voxels too\n"),
    { .name = "--stats",
      .arg = "FILE.json",
      .help = "write timings, rays, atlas and memory figures as JSON (- for\n"
              "standard output; the summary then goes to stderr)" },
    { .name = "--quiet", .alias = "-q", .set = set_quiet, .help = "no progress bar, no summary, no hints" },
    { .name = "--preview",
      .arg = "FILE.png",
      .set = set_preview,
      .help = "also write the baked scene seen from a camera, albedo x lightmap\n"
              "as `baker view` shows it (the lightmap as -o writes it: a .png's\n"
              "exposed and clamped values); not for voxels yet" },
    { .sub = bk_cmd_view_opts, .sub_offset = offsetof(bk_cmd_bake_cli, view) },
    TEXT("atlas:\n"),
    { .sub = bk_cmd_bake_atlas_opts },
    TEXT("lighting:\n"),
    { .name = "--mode", .arg = "light|ao", .set = set_mode, .help = "full lighting (default) or ambient occlusion" },
    { .name = "--spp", .arg = "N", .set = set_spp, .help = "samples per texel (default 64)" },
    { .name = "--directional",
      .arg = "off|sh|dominant",
      .set = set_directional,
      .help = "also bake which way the light comes from, for normal maps\n"
              "(default off); files beside each .png or .exr -o:\n"
              "  sh        NAME_L1x, NAME_L1y, NAME_L1z: the L1 band of the\n"
              "            light (the irradiance vector, rgb): a normal map's\n"
              "            n' is lit map + dot(L1, n' - n); the map is unchanged\n"
              "  dominant  NAME_dir: Unity's directional map (direction in rgb,\n"
              "            rebalancing in alpha)\n"
              "encodings and shader code: docs/baking.md, Directional maps" },
    { .name = "--bounces",
      .arg = "N",
      .set = set_bounces,
      .help = "bounces of indirect light using MTL Kd as albedo (default 2)" },
    { .name = "--sun",
      .arg = "X,Y,Z,R,G,B,DEG[,MODE]",
      .set = set_sun,
      .help = "a sun: direction towards it, irradiance, angular radius in degrees\n"
              "(soft shadows), e.g. --sun 0.3,1,0.2,3,2.9,2.7,0.5. MODE, for an\n"
              "engine that draws the light itself (mixed lighting):\n"
              "  baked     all of its light in the map (default)\n"
              "  indirect  only its bounced light: the engine adds the direct\n"
              "            light and its shadows in real time (Unity's Baked\n"
              "            Indirect, Godot's Dynamic bake mode)\n"
              "  off       none of its light" },
    { .name = "--point",
      .arg = "X,Y,Z,R,G,B[,MODE]",
      .set = set_point,
      .help = "a point light of intensity R,G,B (repeatable); MODE as for --sun" },
    { .name = "--shadowmask",
      .set = set_shadowmask,
      .help = "also write NAME_shadowmask.png beside the first -o: per texel,\n"
              "how much of each light baked indirect it sees (soft: the share\n"
              "of the bake's own shadow rays that reach it), one light per\n"
              "channel, r the sun, then the indirect --point lights in order,\n"
              "up to four (Unity's Shadowmask mode; docs/baking.md, Shadowmask)" },
    { .name = "--sky",
      .arg = "R,G,B",
      .set = set_sky,
      .help = "constant sky radiance (default 0; 1,1,1 when the scene has no\n"
              "other light)" },
    { .name = "--ao-distance",
      .arg = "D",
      .set = set_ao_distance,
      .help = "AO: occluders beyond D do not count (default: 10% of the scene size)" },
    { .name = "--seed", .arg = "S", .set = set_seed, .help = "random seed (default 1): same seed, same map" },
    { .name = "--inside-share",
      .arg = "F",
      .set = set_inside_share,
      .help = "a texel is inside geometry (filled from its chart's nearest valid\n"
              "texel) when more than F of 16 fixed rays from it meet back faces\n"
              "(default 0.5: an open wall beside it never does, a box over it\n"
              "always); the same at any --spp and --seed (docs/baking.md)" },
    { .name = "--denoise",
      .arg = "on|off",
      .set = set_denoise,
      .help = "filter the noise out of the map (default: on for light, off for\n"
              "ao), in the atlas, each chart on its own: texels mix only with\n"
              "texels of their chart that face the same way, lie in the same\n"
              "plane and differ by no more than their baked variance explains;\n"
              "each chart keeps its mean (docs/baking.md: Denoising)" },
    { .name = "--denoise-passes",
      .arg = "N",
      .set = set_denoise_passes,
      .help = "filter passes, each twice as wide as the last (default 5: about\n"
              "120 texels across; 0 = off)" },
    { .name = "--denoise-sigma",
      .arg = "L,N,X",
      .set = set_denoise_sigma,
      .help = "luminance (in standard deviations), normal (cosine exponent) and\n"
              "plane (texels) tolerances (default 2,8,1)" },
    TEXT("  Emissive triangles (MTL Ke) are area lights.\n"),
    TEXT("light probes (for what moves through the level):\n"),
    { .name = "--probes",
      .arg = "SPACING",
      .set = set_probes,
      .help = "also bake light probes on a grid SPACING apart over the scene's\n"
              "box, with the map's bounces and lights: per probe the L2\n"
              "spherical harmonics (9 rgb coefficients) of the light reaching it,\n"
              "and whether it is valid (a probe inside geometry, under a floor\n"
              "or behind a wall sees back faces and is flagged invalid); one\n"
              "JSON file, NAME_probes.json beside the first -o (format and\n"
              "shader code: docs/baking.md, Light probes)" },
    { .name = "--probe-spp", .arg = "N", .set = set_probe_spp, .help = "rays per probe (default 1024)" },
    { .name = "--probes-out",
      .arg = "FILE.json",
      .set = set_probes_out,
      .help = "the probes' file instead of NAME_probes.json" },
    TEXT("engine:\n"),
    { .sub = bk_cli_trace_opts, .sub_offset = offsetof(bk_cmd_bake_cli, t) },
    { .name = "--kernel",
      .arg = "wavefront|megakernel",
      .set = set_kernel,
      .help = "GPU bake: paths wait in buffers and each wave traces its\n"
              "occlusion and closest-hit rays apart (default), or one kernel\n"
              "walks whole paths per texel; same texels either way (the CPU\n"
              "bakes one texel at a time for both)" },
    { .name = "--bin-rays",
      .arg = "on|off",
      .set = set_bin_rays,
      .help = "trace texels in the order of their rays' key (normal octant,\n"
              "then a Morton code of the position) instead of atlas order, and\n"
              "(GPU wavefront) each wave's rays in bins of direction octant and\n"
              "origin cell (default off: slower on an H100: docs/bench/bake_gpu.md)" },
    { .name = "--max-launch-ms",
      .arg = "MS",
      .set = set_max_launch_ms,
      .help = "longest single GPU launch (default 50), so a desktop GPU's\n"
              "watchdog never resets the device (on each GPU)" },
    { .name = "--devices",
      .arg = "all|LIST",
      .set = set_devices,
      .help = "the GPUs to bake on (default all): a comma list of CUDA device\n"
              "numbers (0,1); each takes the next block of texels when done\n"
              "with one, and the lightmap is the same bytes as on one GPU" },
    { .name = "--max-memory",
      .arg = "GB",
      .set = set_max_memory,
      .help = "refuse a bake whose estimated host memory exceeds GB (default:\n"
              "the memory available when the bake starts); the estimate is\n"
              "made once the atlas is packed, before its texels are made" },
    TEXT("\n"
         "examples:\n"
         "  baker scenes/cornell.obj -o cornell.png\n"
         "  baker sponza.obj -o sponza.hdr --size 2048 --sun 0.2,1,0.3,4,3.8,3.5,0.3 --sky 0.3,0.4,0.6\n"
         "  baker sponza.obj -o sponza_ao.png --mode ao --ao-distance 2 --spp 128\n"
         "  baker chr_knight.vox -o knight.png --texels-per-voxel 4 --mesh-out knight.obj\n"
         "  baker level.obj props.vox -o lm.png --texels-per-unit 2 --pages auto\n"),
    { 0 },
};
#undef TEXT

void bk_cmd_bake_help(FILE *f) { bk_cli_table_help(f, bake_opts); }

/* The defaults, before the options. */
void bk_cmd_bake_defaults(bk_cmd_bake_cli *c)
{
    bk_view_opts_default(&c->view);
    c->texels_per_voxel = 2;
    bk_cli_trace_default(&c->t);
    c->t.opts.wavefront = 1; /* measured faster on the H100: see --kernel */
    bk_atlas_opts_default(&c->atlas);
    c->p.mode = BK_BAKE_LIGHT;
    c->p.spp = 64;
    c->p.bounces = 2;
    c->p.seed = 1;
    c->p.sun_cos = 1.0f;
    c->exposure = 1.0f;
    c->max_launch_ms = 50.0f;
    c->p.inside_share = BK_INSIDE_SHARE;
    c->probe_spp = 1024;
    c->denoise = -1;
    bk_denoise_opts_default(&c->dn);
}

int bk_cmd_bake_check_scenes(bk_cmd_bake_cli *c)
{
    if (!c->nscenes) {
        bk_cmd_bake_error("no SCENE given\n");
        return -1;
    }
    /* messages name the scene, or the scenes joined by " + " */
    size_t len = 0;
    c->scene_label[0] = 0;
    for (int k = 0; k < c->nscenes && len + 8 < sizeof c->scene_label; ++k) {
        int n = snprintf(c->scene_label + len, sizeof c->scene_label - len, "%s%s", k ? " + " : "", c->scenes[k]);
        if (n < 0 || (size_t)n >= sizeof c->scene_label - len) {
            snprintf(c->scene_label + sizeof c->scene_label - 5, 5, "...");
            break;
        }
        len += (size_t)n;
    }
    c->scene = c->nscenes == 1 ? c->scenes[0] : c->scene_label;
    if (c->pages_auto && c->atlas.uv_from_file) {
        bk_cmd_bake_error("--pages auto: --uv file bakes the file's own UVs, which are one page\n");
        return -1;
    }
    c->atlas.scene_path = c->scene;
    c->atlas.pages_auto = c->pages_auto;
    return 0;
}

/* What the options say together, once all are read: a SCENE and an output, of known kinds. */
static int bake_check(bk_cmd_bake_cli *c)
{
    if (bk_cmd_bake_check_scenes(c)) return -1;
    if (!c->nouts) {
        bk_cmd_bake_error("no output given: add -o lightmap.png (or .hdr, .exr)\n");
        return -1;
    }
    char terr[1024];
    for (int k = 0; k < c->nouts; ++k)
        if (bk_image_type_check("-o", c->outs[k], terr, sizeof terr)) {
            bk_cmd_bake_error("%s\n", terr);
            return -1;
        }
    if (c->preview && bk_image_type_check("--preview", c->preview, terr, sizeof terr)) {
        bk_cmd_bake_error("%s\n", terr);
        return -1;
    }
    /* one bake, its lightmap in several types: each type once (two PNGs would be the same bytes) */
    for (int k = 1; k < c->nouts; ++k)
        for (int j = 0; j < k; ++j)
            if (bk_image_type_of(c->outs[j]) == bk_image_type_of(c->outs[k])) {
                bk_cmd_bake_error("-o %s and -o %s: %s; name one lightmap of each type (.png, .hdr, .exr)\n",
                                  c->outs[j], c->outs[k],
                                  strcmp(c->outs[j], c->outs[k]) ? "two lightmaps of one type" : "the same file twice");
                return -1;
            }
    if (c->directional) {
        const char *why = c->p.mode == BK_BAKE_AO          ? "an AO bake has no light to give a direction"
                          : c->pages_auto                  ? "not yet with --pages auto"
                          : c->point_count > BK_DIR_POINTS ? "at most 30 point lights"
                                                           : NULL;
        int         any = 0;
        for (int k = 0; k < c->nouts; ++k) any |= bk_image_type_of(c->outs[k]) != BK_IMAGE_TYPE_HDR;
        if (!why && !any) why = "the bands are signed: add -o NAME.png or NAME.exr (an .hdr's RGBE has no sign)";
        if (why) {
            bk_cmd_bake_error("--directional: %s\n", why);
            return -1;
        }
    }
    if (c->shadowmask && plan_shadowmask(c)) return -1;
    if (c->probes_out && !c->probe_spacing) {
        bk_cmd_bake_error("--probes-out %s: no probes to write; add --probes SPACING\n", c->probes_out);
        return -1;
    }
    if (c->probe_spacing > 0) {
        const char *why = c->p.mode == BK_BAKE_AO          ? "an AO bake has no light for probes"
                          : c->point_count > BK_DIR_POINTS ? "at most 30 point lights"
                                                           : NULL;
        if (why) {
            bk_cmd_bake_error("--probes: %s\n", why);
            return -1;
        }
    }
    /* the PNG first: the glTF, --preview and the messages name it */
    for (int k = 1; k < c->nouts; ++k)
        if (bk_image_type_of(c->outs[k]) == BK_IMAGE_TYPE_PNG) {
            const char *png = c->outs[k];
            memmove(c->outs + 1, c->outs, sizeof(char *) * (size_t)k);
            c->outs[0] = png;
        }
    c->out = c->outs[0];
    if (c->shadowmask) {
        size_t n = strlen(c->out), cut = n >= 4 ? n - 4 : n;
        if ((size_t)snprintf(c->mask_name, sizeof c->mask_name, "%.*s_shadowmask.png", (int)cut, c->out) >=
            sizeof c->mask_name) {
            bk_cmd_bake_error("-o %s: the name is too long for its shadowmask's file\n", c->out);
            return -1;
        }
        c->mask_out = c->mask_name;
    }
    if (c->probe_spacing > 0 && !c->probes_out) {
        size_t n = strlen(c->out), cut = n >= 4 ? n - 4 : n;
        if ((size_t)snprintf(c->probes_name, sizeof c->probes_name, "%.*s_probes.json", (int)cut, c->out) >=
            sizeof c->probes_name) {
            bk_cmd_bake_error("-o %s: the name is too long for its probes' file\n", c->out);
            return -1;
        }
        c->probes_out = c->probes_name;
    }
    return 0;
}

int bk_cmd_bake_parse(bk_cmd_bake_cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->scenes = malloc(sizeof(char *) * (size_t)(argc + 1));
    if (!c->scenes) {
        bk_cmd_bake_error("out of memory\n");
        return -1;
    }
    bk_cmd_bake_defaults(c);
    int operands = 0; /* after --: every argument is a SCENE */
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i];
        if (operands || !strcmp(a, "--")) {
            if (operands++) c->scenes[c->nscenes++] = a;
            continue;
        }
        int r = bk_cli_table_option(bake_opts, c, argc, argv, &i);
        if (r < 0) return -1;
        if (r > 0) {
            if (!strcmp(a, "--any-hit")) {
                bk_cmd_bake_error("--any-hit is an option of baker trace\n");
                return -1;
            }
            continue;
        }
        if (a[0] == '-') {
            char m[1024];
            bk_cmd_bake_error("%s\n", bk_cli_unknown(a, "baker --help", m, sizeof m));
            return -1;
        }
        c->scenes[c->nscenes++] = a;
    }
    return bake_check(c);
}
