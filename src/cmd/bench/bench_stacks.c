/* bench_stacks.c - `baker bench stacks`: the three traversal stack strategies compared in a real
 * bake, the way a voxel engine once compared them on a GTX 1060 (per-thread stack in global
 * memory, shared-memory short stack with restart, shared stack spilling to global; with and
 * without a 32-register cap).
 *
 * For every scene, accel (bvh, kdtree), stack strategy and register cap (BK_REG_CAPS), the scene
 * is baked (sun + sky, --bounces 1, --spp 64 by default) through the real bake driver
 * (bk_bake_texels) and one row is printed: bake time (best of --reps, the backend's bake time:
 * kernel time on the GPU), Mrays/s, the kernel's registers, local and shared memory and its
 * theoretical and achieved occupancy (backend kernel_info and bk_occupancy, see backend.h), and
 * how many texels differ from the global-stack, uncapped bake of the same accel (the llm.c habit:
 * every variant is checked before its time counts). Writes the table, and optionally a CSV and an
 * SVG bar chart (hand-written, no dependencies). docs/bench_stacks.md explains every column.
 *
 * Pipeline: prepare_scene (load -> accels -> atlas -> texels -> shading data -> lighting; the only
 * scene-specific code) -> per accel: upload -> per variant: bk_bake_texels x reps.
 */
#include "accel_build.h"
#include "atlas.h"
#include "backend.h"
#include "registry.h"
#include "bake.h"
#include "bench.h"
#include "bench_common.h"
#include "voxmesh.h"
#include "cli.h"
#include "outputs.h"
#include "loader.h"
#include "raster.h"
#include "scene.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACCELS      2                   /* bvh, kdtree */
#define STACKS      BK_STACK_MODE_COUNT /* BK_STACK_MODES: global, short, spill */
#define CAP_LIST(C) C,
static const int reg_caps[] = { BK_REG_CAPS(CAP_LIST) };
#undef CAP_LIST
#define CAPS ((int)(sizeof reg_caps / sizeof reg_caps[0]))

typedef struct stacks_cli {
    const char **scenes;
    int          scene_count;
    int          size;             /* atlas side (mesh scenes) */
    float        texels_per_voxel; /* atlas density (voxel scenes; world units are voxels) */
    uint32_t     spp, bounces;
    int          reps, stack_size, threads;
    const char  *backend, *csv, *svg;
} stacks_cli;

/* A scene ready to bake: everything prepare_scene makes. */
typedef struct prepared {
    bk_scene       scene;
    bk_accel       accel[ACCELS];
    bk_atlas       atlas;
    bk_texel      *texels;
    uint32_t       texel_count;
    bk_bake_data   data;
    bk_bake_params params;
} prepared;

/* One row of the table. */
typedef struct stacks_row {
    char           scene[96];
    int            accel, stack, stack_size, cap;
    int            ran; /* 0: the backend does not support it (why) */
    char           why[128];
    double         bake_s, wall_s; /* best of reps: backend bake time; bk_bake_texels wall */
    uint64_t       rays;
    int            have_info; /* kernel_info answered (a GPU backend) */
    bk_kernel_info ki;
    int            have_occ;
    double         occ_warps, occ_blocks;
    uint32_t       sms;
    uint64_t       differ; /* texels unlike the reference bake */
} stacks_row;

static void prepared_free(prepared *p)
{
    free(p->texels);
    bk_bake_data_free(&p->data);
    bk_atlas_free(&p->atlas);
    for (int a = 0; a < ACCELS; ++a) bk_accel_free(&p->accel[a]);
    bk_scene_free(&p->scene);
    memset(p, 0, sizeof *p);
}

/* Everything that depends on the scene: load -> both accels -> atlas -> texels -> shading data
 * -> lighting (a high sun of angular radius 0.5 degrees and a blue sky, --bounces of indirect
 * light). Returns 0, or -1 with one line in err (the caller frees *out either way). */
static int prepare_scene(const char *path, const stacks_cli *c, prepared *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (bk_scene_load(path, &out->scene, err, err_size)) return -1;
    for (int a = 0; a < ACCELS; ++a) {
        bk_build_opts bo = bk_build_opts_default();
        if (bk_accel_build(&out->scene, a, &bo, &out->accel[a], err, err_size)) return -1;
    }
    int up = 1; /* OBJ scenes are y up */
    /* Voxels are traced natively (the accels above); their surface's quads make the atlas (one
     * rectangular chart each), the texels and the emitters. MagicaVoxel is z up. */
    bk_voxmesh vm;
    memset(&vm, 0, sizeof vm);
    const bk_scene *surf = &out->scene;
    bk_atlas_opts   ao;
    bk_atlas_opts_default(&ao);
    ao.size = c->size;
    ao.scene_path = path;
    bk_atlas_rect *rects = NULL;
    if (out->scene.vox_instance_count) {
        up = 2;
        ao.pages_auto = 1;
        if (bk_voxmesh_build(&out->scene, &vm, err, err_size)) return -1;
        if (!(rects = bk_voxmesh_rects(&vm, c->texels_per_voxel, &ao))) {
            bk_voxmesh_free(&vm);
            return bk_fail(err, err_size, "out of memory");
        }
        surf = &vm.scene;
    }
    int      vox = out->scene.vox_instance_count > 0;
    uint32_t first_quad = vm.first_quad_tri, quad_end = vm.scene.tri_count;
    int      rc = bk_atlas_build(surf, &ao, &out->atlas, err, err_size) ||
             bk_atlas_rasterize(surf, &out->atlas, &out->texels, &out->texel_count, NULL, err, err_size) ||
             bk_bake_data_build_hit(surf, NULL, vox ? first_quad : surf->tri_count, NULL, 0, &out->data, err, err_size);
    free(rects);
    bk_voxmesh_free(&vm);
    if (rc) return -1;

    bk_bake_params *p = &out->params;
    memset(p, 0, sizeof *p);
    p->mode = BK_BAKE_LIGHT;
    p->spp = c->spp;
    p->bounces = c->bounces;
    p->seed = 1;
    const float sun[3] = { 0.25f, 0.15f, 1.0f }; /* x, the other horizontal axis, up */
    float       l = sqrtf(sun[0] * sun[0] + sun[1] * sun[1] + sun[2] * sun[2]);
    p->sun_dir[0] = sun[0] / l;
    p->sun_dir[up] = sun[2] / l;
    p->sun_dir[3 - up] = sun[1] / l;
    p->sun_color[0] = 3.0f;
    p->sun_color[1] = 2.9f;
    p->sun_color[2] = 2.7f;
    p->sun_cos = cosf(0.5f * 3.14159265f / 180.0f);
    p->sky[0] = 0.3f;
    p->sky[1] = 0.4f;
    p->sky[2] = 0.6f;
    const bk_accel *a = &out->accel[0];
    float           dx = a->hi.x - a->lo.x, dy = a->hi.y - a->lo.y, dz = a->hi.z - a->lo.z,
          diag = sqrtf(dx * dx + dy * dy + dz * dz);
    p->eps = 1e-4f * diag; /* as a bake from the command line */
    p->ao_distance = 0.1f * diag;
    p->texel_world = out->atlas.texels_per_unit > 0 ? 1.0f / out->atlas.texels_per_unit : 0.01f * diag;
    if (vox) { /* as a bake from the command line (cmd_bake.c) */
        p->eps = bk_minf(p->eps, 1e-3f);
        p->texel_world = 1.0f / (float)c->texels_per_voxel;
        p->open_tri_begin = first_quad;
        p->open_tri_end = quad_end;
    }
    return 0;
}

/* ---- measuring one variant -------------------------------------------------------------------- */

/* Bakes the prepared scene with accel a (already uploaded) into rgb. */
static int bake_once(bk_backend *be, const prepared *ps, int a, const bk_trace_opts *o, float *rgb, bk_bake_result *res,
                     char *err, size_t err_size)
{
    bk_bake_view     v = bk_bake_data_view(&ps->data, &ps->accel[a]);
    bk_bake_run_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.params = ps->params;
    ro.trace = *o;
    ro.max_launch_ms = 50;
    return bk_bake_texels(be, &v, ps->texels, ps->texel_count, ps->atlas.width, ps->atlas.height * ps->atlas.page_count,
                          &ro, rgb, NULL, res, err, err_size);
}

/* Texels whose colour differs from the reference by more than 1e-3 relative (plus 1e-6). */
static uint64_t count_differ(const prepared *ps, const float *ref, const float *got)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < ps->texel_count; ++i) {
        size_t px = 3 * (size_t)ps->texels[i].pixel;
        int    bad = 0;
        for (int k = 0; k < 3; ++k) bad |= fabsf(ref[px + k] - got[px + k]) > 1e-3f * fabsf(ref[px + k]) + 1e-6f;
        n += (uint64_t)bad;
    }
    return n;
}

/* Measures one (accel, stack, cap) of an uploaded accel: reps bakes, the first checked against
 * ref (NULL: this one is the reference, copied into ref_out), the last with achieved occupancy
 * recorded (the recording does not touch the timed kernel work, but is kept to one run anyway). */
static int measure(bk_backend *be, const prepared *ps, int a, const bk_trace_opts *o, int reps, const float *ref,
                   float *ref_out, float *rgb, stacks_row *r, char *err, size_t err_size)
{
    if (!be->i->supports(be, o, r->why, sizeof r->why)) return 0;
    r->ran = 1;
    r->have_info = be->i->kernel_info(be, o, &r->ki, err, err_size) == 0;
    bk_occupancy occ;
    memset(&occ, 0, sizeof occ);
    for (int k = 0; k < reps; ++k) {
        bk_trace_opts ok = *o;
        if (k == reps - 1 && r->have_info) ok.occupancy = &occ;
        bk_bake_result res;
        if (bake_once(be, ps, a, &ok, rgb, &res, err, err_size)) return -1;
        if (k == 0 || res.totals.seconds < r->bake_s) {
            r->bake_s = res.totals.seconds;
            r->rays = res.totals.rays;
        }
        if (k == 0 || res.wall_seconds < r->wall_s) r->wall_s = res.wall_seconds;
        if (k == 0) {
            if (ref) r->differ = count_differ(ps, ref, rgb);
            else memcpy(ref_out, rgb, sizeof(float) * 3 * BK_ATLAS_PIXELS(&ps->atlas));
        }
    }
    if (occ.capacity_ns > 0) {
        r->have_occ = 1;
        r->occ_warps = occ.warp_ns / occ.capacity_ns;
        r->occ_blocks = occ.block_ns / occ.capacity_ns;
        r->sms = occ.sms_used;
    }
    return 0;
}

/* ---- output ----------------------------------------------------------------------------------- */

static const char *cap_name(int cap, char *buf, size_t n)
{
    if (cap) snprintf(buf, n, "%d", cap);
    else snprintf(buf, n, "none");
    return buf;
}

static const char *stack_label(int stack, int size, char *buf, size_t n)
{
    if (!bk_stack_sized(stack)) snprintf(buf, n, "%s", bk_stack_mode_name(stack));
    else snprintf(buf, n, "%s/%d", bk_stack_mode_name(stack), size);
    return buf;
}

static void print_header(void)
{
    printf("%-16s %-6s %-9s %-4s %9s %9s %5s %8s %10s %6s %6s %8s\n", "scene", "accel", "stack", "cap", "bake s",
           "Mrays/s", "regs", "local B", "shared B", "occ th", "occ ac", "differ");
}

static void print_row(const stacks_row *r)
{
    char st[32], cp[16], v[6][32];
    printf("%-16.16s %-6s %-9s %-4s ", r->scene, bk_accel_type_name(r->accel),
           stack_label(r->stack, r->stack_size, st, sizeof st), cap_name(r->cap, cp, sizeof cp));
    if (!r->ran) {
        printf("%9s %9s   n/a: %s\n", "n/a", "n/a", r->why);
        return;
    }
    if (r->have_info) {
        snprintf(v[0], 32, "%d", r->ki.registers);
        snprintf(v[1], 32, "%u", r->ki.local_bytes);
        snprintf(v[2], 32, "%u", r->ki.shared_static + r->ki.shared_dynamic);
        snprintf(v[3], 32, "%.2f", r->ki.occupancy);
    } else {
        for (int k = 0; k < 4; ++k) snprintf(v[k], 32, "-");
    }
    if (r->have_occ) snprintf(v[4], 32, "%.2f", r->occ_warps);
    else snprintf(v[4], 32, "-");
    printf("%9.4f %9.1f %5s %8s %10s %6s %6s %8llu\n", r->bake_s,
           r->bake_s > 0 ? (double)r->rays / r->bake_s / 1e6 : 0.0, v[0], v[1], v[2], v[3], v[4],
           (unsigned long long)r->differ);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break. */
static void csv_str(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; ++s) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Columns that do not apply (not supported, not a GPU) are empty. */
static void write_csv(FILE *f, const stacks_row *rows, int n, const char *backend, const stacks_cli *c)
{
    fputs("scene,backend,accel,stack,stack_size,reg_cap,status,spp,bounces,rays,bake_s,wall_s,mrays_s,registers,"
          "local_bytes,shared_static_bytes,shared_dynamic_bytes,max_threads_per_block,block,blocks_per_sm,"
          "occupancy_theoretical,occupancy_achieved,occupancy_achieved_blocks,sms_used,texels_differ\n",
          f);
    for (int i = 0; i < n; ++i) {
        const stacks_row *r = &rows[i];
        csv_str(f, r->scene);
        fprintf(f, ",%s,%s,%s,%d,%d,", backend, bk_accel_type_name(r->accel), bk_stack_mode_name(r->stack),
                bk_stack_sized(r->stack) ? r->stack_size : 0, r->cap);
        if (!r->ran) {
            char why[160];
            snprintf(why, sizeof why, "n/a: %s", r->why);
            csv_str(f, why);
            fprintf(f, ",%u,%u,,,,,,,,,,,,,,,,\n", c->spp, c->bounces);
            continue;
        }
        fprintf(f, "ok,%u,%u,%llu,%.6f,%.6f,%.3f,", c->spp, c->bounces, (unsigned long long)r->rays, r->bake_s,
                r->wall_s, r->bake_s > 0 ? (double)r->rays / r->bake_s / 1e6 : 0.0);
        if (r->have_info)
            fprintf(f, "%d,%u,%u,%u,%d,%d,%d,%.4f,", r->ki.registers, r->ki.local_bytes, r->ki.shared_static,
                    r->ki.shared_dynamic, r->ki.max_threads, r->ki.block, r->ki.blocks_per_sm, r->ki.occupancy);
        else fputs(",,,,,,,,", f);
        if (r->have_occ) fprintf(f, "%.4f,%.4f,%u,", r->occ_warps, r->occ_blocks, r->sms);
        else fputs(",,,", f);
        fprintf(f, "%llu\n", (unsigned long long)r->differ);
    }
}

/* Text for SVG: the five XML specials escaped. */
static void xml_str(FILE *f, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* 1, 2 or 5 times a power of ten, at least x. */
static double nice_ceil(double x)
{
    if (!(x > 0)) return 1.0;
    double p = pow(10.0, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

/* Grouped bars: one panel per scene (its own Mrays/s axis, as scenes differ by orders of
 * magnitude), a group per accel, a bar per stack x cap: colour = stack, hatching = capped. */
static void write_svg(FILE *f, const stacks_row *rows, int n, const char *backend, const stacks_cli *c)
{
    /* a stack strategy's colour: its place in the palette (Tableau 10), so a new one needs none */
    static const char *const palette[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };
    enum { PALETTE = (int)(sizeof palette / sizeof palette[0]) };
    const char *colour[STACKS];
    for (int s = 0; s < STACKS; ++s) colour[s] = palette[s % PALETTE];
    const int W = 900, top = 96, panel_h = 280, ml = 80, mr = 20, plot_h = 200;
    int       scenes = 0;
    for (int i = 0; i < n; ++i)
        if (i == 0 || strcmp(rows[i].scene, rows[i - 1].scene)) scenes++;
    int H = top + (scenes ? scenes : 1) * panel_h + 10;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fputs("<defs><pattern id=\"hatch\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\">"
          "<path d=\"M0,6 L6,0\" stroke=\"#000\" stroke-opacity=\"0.45\" stroke-width=\"1.2\"/></pattern></defs>\n",
          f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n", W, H);
    fprintf(f,
            "<text x=\"%d\" y=\"22\" font-size=\"16\" font-weight=\"bold\">baker bench stacks: Mrays/s during the bake "
            "(higher is better)</text>\n",
            ml);
    fprintf(f,
            "<text x=\"%d\" y=\"40\" fill=\"#555\">%s backend, %u spp, %u bounce(s), best of %d; short/spill stack: "
            "%d entries in shared memory</text>\n",
            ml, backend, c->spp, c->bounces, c->reps, c->stack_size);
    /* legend */
    int lx = ml;
    for (int s = 0; s < STACKS; ++s)
        for (int k = 0; k < CAPS; ++k) {
            char cp[16], label[64];
            snprintf(label, sizeof label, "%s, cap %s", bk_stack_mode_name(s), cap_name(reg_caps[k], cp, sizeof cp));
            fprintf(f, "<rect x=\"%d\" y=\"54\" width=\"14\" height=\"14\" fill=\"%s\"/>", lx, colour[s]);
            if (reg_caps[k])
                fprintf(f, "<rect x=\"%d\" y=\"54\" width=\"14\" height=\"14\" fill=\"url(#hatch)\"/>", lx);
            fprintf(f, "<text x=\"%d\" y=\"66\">%s</text>\n", lx + 18, label);
            lx += 130;
        }
    int panel = 0;
    for (int i0 = 0; i0 < n;) {
        int i1 = i0;
        while (i1 < n && !strcmp(rows[i1].scene, rows[i0].scene)) i1++;
        int    y0 = top + panel * panel_h, base = y0 + 30 + plot_h;
        double vmax = 0;
        for (int i = i0; i < i1; ++i)
            if (rows[i].ran && rows[i].bake_s > 0) {
                double m = (double)rows[i].rays / rows[i].bake_s / 1e6;
                if (m > vmax) vmax = m;
            }
        double ymax = nice_ceil(vmax * 1.1);
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\">", ml, y0 + 18);
        xml_str(f, rows[i0].scene);
        fputs("</text>\n", f);
        for (int t = 0; t <= 5; ++t) { /* y axis: grid lines and labels */
            int y = base - t * plot_h / 5;
            fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>", ml, y, W - mr, y);
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%g</text>\n", ml - 6, y + 4, ymax * t / 5);
        }
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>", ml, base, W - mr, base);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#000\"/>\n", ml, base, ml, base - plot_h);
        fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\">Mrays/s</text>\n", ml - 50,
                base - plot_h / 2);
        const int group_w = (W - ml - mr) / ACCELS, bar_w = (group_w - 60) / (STACKS * CAPS);
        for (int a = 0; a < ACCELS; ++a) {
            int gx = ml + a * group_w + 30;
            fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">%s</text>\n",
                    gx + bar_w * STACKS * CAPS / 2, base + 18, bk_accel_type_name(a));
            for (int i = i0; i < i1; ++i) {
                const stacks_row *r = &rows[i];
                if (r->accel != a) continue;
                int k = 0;
                while (k < CAPS && reg_caps[k] != r->cap) k++;
                int x = gx + (r->stack * CAPS + k) * bar_w;
                if (!r->ran || !(r->bake_s > 0)) {
                    fprintf(
                        f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#888\" font-size=\"10\">n/a</text>\n",
                        x + bar_w / 2, base - 4);
                    continue;
                }
                double m = (double)r->rays / r->bake_s / 1e6;
                int    h = (int)(m / ymax * plot_h + 0.5);
                fprintf(f,
                        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"><title>%s, %s, cap %d: "
                        "%.1f Mrays/s, %.4f s</title></rect>",
                        x + 2, base - h, bar_w - 4, h, colour[r->stack], bk_accel_type_name(a),
                        bk_stack_mode_name(r->stack), r->cap, m, r->bake_s);
                if (r->cap)
                    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"url(#hatch)\"/>", x + 2,
                            base - h, bar_w - 4, h);
                fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">%.0f</text>\n",
                        x + bar_w / 2, base - h - 3, m);
            }
        }
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">accel (bars: stack strategy x register "
                "cap)</text>\n",
                ml + (W - ml - mr) / 2, base + 36);
        panel++;
        i0 = i1;
    }
    fputs("</svg>\n", f);
}

/* ---- the command ------------------------------------------------------------------------------ */

static const char *const default_mesh_scene = "sponza-dabrovic/sponza.obj"; /* under the corpus */
static const char *const default_vox_scene = "/tmp/world54k.vox";           /* tools/vox_world, if made */

static int parse(stacks_cli *c, int argc, char **argv)
{
    memset(c, 0, sizeof *c);
    c->size = 1024;
    c->texels_per_voxel = 1.0f;
    c->spp = 64;
    c->bounces = 1;
    c->reps = 3;
    c->stack_size = 8;
    c->backend = "auto";
    c->scenes = calloc((size_t)argc + 2, sizeof(char *));
    if (!c->scenes) return -1;
    for (int i = 0; i < argc; ++i) {
        const char *a = argv[i], *v;
        uint64_t    u;
        if (!strcmp(a, "--size")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 4, BK_ATLAS_MAX_SIZE, &u)) return -1;
            c->size = (int)u;
        } else if (!strcmp(a, "--texels-per-voxel")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 64, &u)) return -1;
            c->texels_per_voxel = (float)u;
        } else if (!strcmp(a, "--spp")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 1u << 16, &u)) return -1;
            c->spp = (uint32_t)u;
        } else if (!strcmp(a, "--bounces")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 0, 64, &u)) return -1;
            c->bounces = (uint32_t)u;
        } else if (!strcmp(a, "--reps")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 100, &u)) return -1;
            c->reps = (int)u;
        } else if (!strcmp(a, "--stack-size")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, BK_STACK_ENTRIES, &u)) return -1;
            c->stack_size = (int)u;
        } else if (!strcmp(a, "--threads")) {
            if (bk_cli_value(argc, argv, &i, &v) || bk_cli_u64(a, v, 1, 1024, &u)) return -1;
            c->threads = (int)u;
        } else if (!strcmp(a, "--backend")) {
            if (bk_cli_value(argc, argv, &i, &c->backend)) return -1;
        } else if (!strcmp(a, "--csv")) {
            if (bk_cli_value(argc, argv, &i, &c->csv)) return -1;
        } else if (!strcmp(a, "--svg")) {
            if (bk_cli_value(argc, argv, &i, &c->svg)) return -1;
        } else if (a[0] == '-') {
            fprintf(stderr, "baker bench stacks: unknown option '%s'\n%s", a, bk_bench_usage);
            return -1;
        } else {
            c->scenes[c->scene_count++] = a;
        }
    }
    return 0;
}

/* Every variant (accel x stack strategy x register cap) of one prepared scene, each row into
 * rows[*nrows] and printed: rc as given, or 1 after printing why one failed. */
static int run_variants(bk_backend *be, const prepared *ps, const stacks_cli *c, const char *name, stacks_row *rows,
                        int *nrows, float *ref, float *rgb, int rc, char *err, size_t err_size)
{
    for (int a = 0; a < ACCELS && !rc; ++a) {
        bk_accel_view av = bk_accel_get_view(&ps->accel[a]);
        if (be->i->upload(be, &av, err, err_size)) {
            fprintf(stderr, "baker: %s\n", err);
            rc = 1;
            break;
        }
        for (int s = 0; s < STACKS && !rc; ++s)
            for (int k = 0; k < CAPS && !rc; ++k) {
                stacks_row *r = &rows[*nrows];
                snprintf(r->scene, sizeof r->scene, "%s", name);
                r->accel = a;
                r->stack = s;
                r->stack_size = c->stack_size;
                r->cap = reg_caps[k];
                bk_trace_opts o = bk_trace_opts_default();
                o.stack_mode = s;
                o.stack_size = c->stack_size;
                o.reg_cap = reg_caps[k];
                o.threads = c->threads;
                /* the first variant of each accel (global, no cap) is the reference */
                int is_ref = s == 0 && k == 0;
                if (measure(be, ps, a, &o, c->reps, is_ref ? NULL : ref, ref, rgb, r, err, err_size)) {
                    fprintf(stderr, "baker: %s: %s %s: %s\n", name, bk_accel_type_name(a), bk_stack_mode_name(s), err);
                    rc = 1;
                    break;
                }
                print_row(r);
                fflush(stdout);
                (*nrows)++;
            }
    }
    return rc;
}

int bk_bench_stacks(int argc, char **argv)
{
    stacks_cli c;
    if (parse(&c, argc, argv)) {
        free(c.scenes);
        return 2;
    }
    char defaults[4096];
    if (!c.scene_count) {
        const char *dir = getenv("BK_SCENES_DIR") ? getenv("BK_SCENES_DIR") : "../shared/scenes";
        snprintf(defaults, sizeof defaults, "%s/%s", dir, default_mesh_scene);
        c.scenes[c.scene_count++] = defaults;
        if (access(default_vox_scene, R_OK) == 0) c.scenes[c.scene_count++] = default_vox_scene;
    }
    /* every file named, checked before any work (outputs.h) */
    char       err[1024], msg[512];
    bk_outputs io;
    bk_outputs_init(&io);
    int out_csv = -1, out_svg = -1, rc = 0;
    for (int i = 0; i < c.scene_count && !rc; ++i) rc = bk_outputs_input(&io, "a scene", c.scenes[i], err, sizeof err);
    if (!rc && c.csv && (out_csv = bk_outputs_add(&io, "--csv", c.csv, 0, err, sizeof err)) < 0) rc = out_csv;
    if (!rc && c.svg && (out_svg = bk_outputs_add(&io, "--svg", c.svg, 0, err, sizeof err)) < 0) rc = out_svg;
    if (rc) {
        fprintf(stderr, "baker: %s\n", err);
        bk_outputs_free(&io);
        free(c.scenes);
        return rc == BK_OUT_CLASH ? 2 : 1;
    }
    bk_backend *be = bk_backend_init(c.backend, msg, sizeof msg);
    if (!be) {
        fprintf(stderr, "baker: %s\n", msg);
        bk_outputs_free(&io);
        free(c.scenes);
        return 1;
    }
    if (msg[0]) fprintf(stderr, "baker: %s\n", msg);
    const char *bname = be->i->name(be);

    stacks_row *rows = calloc((size_t)c.scene_count * ACCELS * STACKS * CAPS, sizeof *rows);
    int         nrows = 0, failed = 0;
    if (!rows) {
        fprintf(stderr, "baker: out of memory\n");
        rc = 1;
        goto done;
    }
    printf("bench stacks: %s backend, %u spp, %u bounce(s), sun + sky, best of %d; short/spill stack %d entries\n",
           bname, c.spp, c.bounces, c.reps, c.stack_size);
    for (int si = 0; si < c.scene_count && !rc; ++si) {
        const char *path = c.scenes[si], *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        prepared    ps;
        double      t0 = bk_time_now();
        float      *rgb = NULL, *ref = NULL;
        if (prepare_scene(path, &c, &ps, err, sizeof err) || bk_outputs_scene_inputs(&io, &ps.scene, err, sizeof err)) {
            fprintf(stderr, "baker: %s (skipped)\n", err);
            failed = 1;
            prepared_free(&ps);
            continue;
        }
        size_t px = BK_ATLAS_PIXELS(&ps.atlas);
        rgb = malloc(sizeof(float) * 3 * px);
        ref = malloc(sizeof(float) * 3 * px);
        if (!rgb || !ref) {
            fprintf(stderr, "baker: out of memory for a %dx%d atlas\n", ps.atlas.width, ps.atlas.height);
            rc = 1;
        } else
            printf("\n%s: %u triangles, %dx%d atlas, %u texels, prepared in %.2f s\n", name, ps.scene.tri_count,
                   ps.atlas.width, ps.atlas.height, ps.texel_count, bk_time_now() - t0);
        if (!rc) print_header();
        rc = run_variants(be, &ps, &c, name, rows, &nrows, ref, rgb, rc, err, sizeof err);
        free(rgb);
        free(ref);
        prepared_free(&ps);
    }
    if (rc) goto done;
    /* A scene that could not be prepared is skipped, not fatal: the rows that ran are written
     * (they may have cost many minutes of GPU time) and the exit status says one was skipped. */
    FILE *f;
    if (out_csv >= 0 && (!(f = bk_outputs_open(&io, out_csv, err, sizeof err)) ||
                         (write_csv(f, rows, nrows, bname, &c), bk_outputs_close(&io, out_csv, err, sizeof err))))
        rc = 1;
    if (!rc && out_svg >= 0 &&
        (!(f = bk_outputs_open(&io, out_svg, err, sizeof err)) ||
         (write_svg(f, rows, nrows, bname, &c), bk_outputs_close(&io, out_svg, err, sizeof err))))
        rc = 1;
    if (!rc && bk_outputs_commit(&io, err, sizeof err)) rc = 1;
    if (rc) fprintf(stderr, "baker: %s\n", err);
    else if (failed) rc = 1;
done:
    bk_outputs_free(&io);
    bk_backend_free(be);
    free(rows);
    free(c.scenes);
    return rc;
}
