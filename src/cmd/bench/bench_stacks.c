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
#include "bench_plot.h"
#include "voxmesh.h"
#include "cli.h"
#include "outputs.h"
#include "loader.h"
#include "raster.h"
#include "scene.h"
#include "util.h"

#include <errno.h>
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
    const char  *backend, *csv;
    const char  *plots[4]; /* --svg and --plot: SVG or PNG by the name */
    int          plot_count;
    const char  *from_csv; /* re-plot this CSV instead of baking */
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

/* 1, 2 or 5 times a power of ten, at least x. */
static double nice_ceil(double x)
{
    if (!(x > 0)) return 1.0;
    double p = pow(10.0, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

/* What the plot's subtitle says: the settings of the run (reps 0: unknown, from a CSV). */
typedef struct plot_meta {
    char     backend[32];
    uint32_t spp, bounces;
    int      reps, stack_size;
} plot_meta;

/* The series of a plot: the stack strategies and register caps that occur in the rows, in the
 * order of BK_STACK_MODES and of increasing cap (none first); present[s][k] when a row has both. */
typedef struct plot_series {
    int stacks[STACKS], nstacks;
    int caps[16], ncaps;
    int present[STACKS][16];
} plot_series;

static void find_series(const stacks_row *rows, int n, plot_series *ps)
{
    memset(ps, 0, sizeof *ps);
    int has[STACKS] = { 0 };
    for (int i = 0; i < n; ++i) {
        has[rows[i].stack] = 1;
        int k = 0;
        while (k < ps->ncaps && ps->caps[k] != rows[i].cap) k++;
        if (k == ps->ncaps && k < 16) ps->caps[ps->ncaps++] = rows[i].cap;
    }
    for (int a = 1; a < ps->ncaps; ++a) /* insertion sort: a handful */
        for (int b = a; b > 0 && ps->caps[b - 1] > ps->caps[b]; --b) {
            int t = ps->caps[b];
            ps->caps[b] = ps->caps[b - 1];
            ps->caps[b - 1] = t;
        }
    for (int s = 0; s < STACKS; ++s)
        if (has[s]) ps->stacks[ps->nstacks++] = s;
    for (int i = 0; i < n; ++i)
        for (int k = 0; k < ps->ncaps; ++k)
            if (ps->caps[k] == rows[i].cap) ps->present[rows[i].stack][k] = 1;
}

static int slot_of(const plot_series *ps, int stack, int cap)
{
    int s = 0, k = 0;
    while (s < ps->nstacks && ps->stacks[s] != stack) s++;
    while (k < ps->ncaps && ps->caps[k] != cap) k++;
    return s * ps->ncaps + k;
}

/* a capped series' hatching: none for the uncapped one, then one direction per cap */
static bk_plot_hatch_style cap_hatch(int k)
{
    return k == 0 ? BK_PLOT_HATCH_NONE : (bk_plot_hatch_style)(1 + (k - 1) % 4);
}

/* the colour of hatch lines over a bar: the bar's colour at half brightness */
static uint32_t darker(uint32_t c)
{
    return (((c >> 16 & 0xff) / 2) << 16) | (((c >> 8 & 0xff) / 2) << 8) | ((c & 0xff) / 2);
}

static double row_mrays(const stacks_row *r) { return r->bake_s > 0 ? (double)r->rays / r->bake_s / 1e6 : 0.0; }

/* Long: the whole chart's layout in one place (title, wrapped legend, one panel per scene with
 * its axes, groups and bars), each part a few lines that share the running coordinates.
 * Grouped bars: one panel per scene (its own Mrays/s axis, as scenes differ by orders of
 * magnitude), a group per accel, a bar per stack x cap: colour = stack, hatching = cap. The
 * canvas is as wide as its title and bars need (at least 900) and the legend wraps into rows
 * within it, so nothing runs off. */
static void draw_chart(bk_plot *pl, const stacks_row *rows, int n, const plot_meta *m)
{
    /* a stack strategy's colour: its place in the palette (Tableau 10), so a new one needs none */
    static const uint32_t palette[] = { 0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2,
                                        0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac };
    enum { PALETTE = (int)(sizeof palette / sizeof palette[0]) };
    plot_series ps;
    find_series(rows, n, &ps);
    const int panel_h = 280, ml = 80, mr = 20, plot_h = 200, min_bar = 30, swatch = 14;
    int       slots = ps.nstacks * ps.ncaps > 0 ? ps.nstacks * ps.ncaps : 1;
    char      title[] = "baker bench stacks: Mrays/s during the bake (higher is better)", sub[256], reps[32] = "";
    if (m->reps > 0) snprintf(reps, sizeof reps, ", best of %d", m->reps);
    snprintf(sub, sizeof sub, "%s backend, %u spp, %u bounce(s)%s; short/spill stack: %d entries in shared memory",
             m->backend, m->spp, m->bounces, reps, m->stack_size);
    int W = 900, need = ml + ACCELS * (60 + slots * min_bar) + mr;
    if (need > W) W = need;
    need = ml + bk_plot_text_width(16, BK_PLOT_BOLD, title) + mr;
    if (need > W) W = need;
    need = ml + bk_plot_text_width(12, 0, sub) + mr;
    if (need > W) W = need;
    for (int i = 0; i < n; ++i) {
        need = ml + bk_plot_text_width(14, BK_PLOT_BOLD, rows[i].scene) + mr;
        if (need > W) W = need;
    }
    bk_plot_text(pl, ml, 22, 16, BK_PLOT_BOLD, 0, title);
    bk_plot_text(pl, ml, 40, 12, 0, 0x555555, sub);
    /* legend: every series that occurs, wrapped into rows of 20 pixels */
    int lx = ml, ly = 54;
    for (int si = 0; si < ps.nstacks; ++si)
        for (int k = 0; k < ps.ncaps; ++k) {
            int s = ps.stacks[si];
            if (!ps.present[s][k]) continue;
            char cp[16], label[64];
            snprintf(label, sizeof label, "%s, cap %s", bk_stack_mode_name(s), cap_name(ps.caps[k], cp, sizeof cp));
            int w = swatch + 4 + bk_plot_text_width(12, 0, label);
            if (lx > ml && lx + w > W - mr) {
                lx = ml;
                ly += 20;
            }
            uint32_t c = palette[s % PALETTE];
            bk_plot_rect(pl, lx, ly, swatch, swatch, c, NULL);
            bk_plot_hatch(pl, lx, ly, swatch, swatch, darker(c), cap_hatch(k));
            bk_plot_text(pl, lx + swatch + 4, ly + 12, 12, 0, 0, label);
            lx += w + 18;
        }
    int top = ly + 26, panel = 0;
    for (int i0 = 0; i0 < n;) {
        int i1 = i0;
        while (i1 < n && !strcmp(rows[i1].scene, rows[i0].scene)) i1++;
        int    y0 = top + panel * panel_h, base = y0 + 30 + plot_h;
        double vmax = 0;
        for (int i = i0; i < i1; ++i)
            if (rows[i].ran && row_mrays(&rows[i]) > vmax) vmax = row_mrays(&rows[i]);
        double ymax = nice_ceil(vmax * 1.1);
        bk_plot_text(pl, ml, y0 + 18, 14, BK_PLOT_BOLD, 0, rows[i0].scene);
        for (int t = 0; t <= 5; ++t) { /* y axis: grid lines and labels */
            int  y = base - t * plot_h / 5;
            char v[32];
            snprintf(v, sizeof v, "%g", ymax * t / 5);
            bk_plot_line(pl, ml, y, W - mr, y, 0xdddddd);
            bk_plot_text(pl, ml - 6, y + 4, 12, BK_PLOT_END, 0, v);
        }
        bk_plot_line(pl, ml, base, W - mr, base, 0);
        bk_plot_line(pl, ml, base, ml, base - plot_h, 0);
        bk_plot_text(pl, ml - 50, base - plot_h / 2, 12, BK_PLOT_MIDDLE | BK_PLOT_UP, 0, "Mrays/s");
        const int group_w = (W - ml - mr) / ACCELS, bar_w = (group_w - 60) / slots;
        for (int a = 0; a < ACCELS; ++a) {
            int gx = ml + a * group_w + 30;
            bk_plot_text(pl, gx + bar_w * slots / 2, base + 18, 12, BK_PLOT_MIDDLE | BK_PLOT_BOLD, 0,
                         bk_accel_type_name(a));
            for (int i = i0; i < i1; ++i) {
                const stacks_row *r = &rows[i];
                if (r->accel != a) continue;
                int slot = slot_of(&ps, r->stack, r->cap), x = gx + slot * bar_w;
                if (!r->ran || !(r->bake_s > 0)) {
                    bk_plot_text(pl, x + bar_w / 2, base - 4, 10, BK_PLOT_MIDDLE, 0x888888, "n/a");
                    continue;
                }
                double   mr_s = row_mrays(r);
                int      h = (int)(mr_s / ymax * plot_h + 0.5);
                char     tip[160], v[32], cp[16];
                uint32_t c = palette[r->stack % PALETTE];
                snprintf(tip, sizeof tip, "%s, %s, cap %s: %.1f Mrays/s, %.4f s", bk_accel_type_name(a),
                         bk_stack_mode_name(r->stack), cap_name(r->cap, cp, sizeof cp), mr_s, r->bake_s);
                bk_plot_rect(pl, x + 2, base - h, bar_w - 4, h, c, tip);
                bk_plot_hatch(pl, x + 2, base - h, bar_w - 4, h, darker(c), cap_hatch(slot % ps.ncaps));
                snprintf(v, sizeof v, mr_s >= 100 ? "%.0f" : "%.3g", mr_s); /* a CPU's 0.962, not 1 */
                bk_plot_text(pl, x + bar_w / 2, base - h - 3, 10, BK_PLOT_MIDDLE, 0, v);
            }
        }
        bk_plot_text(pl, ml + (W - ml - mr) / 2, base + 36, 12, BK_PLOT_MIDDLE, 0x555555,
                     "accel (bars: stack strategy x register cap)");
        panel++;
        i0 = i1;
    }
    bk_plot_size(pl, W, top + (panel ? panel : 1) * panel_h + 10);
}

/* The chart of the rows into an output of io (SVG or PNG by its name): 0, or -1 with err. */
static int write_plot(bk_outputs *io, int out, const char *path, const stacks_row *rows, int n, const plot_meta *m,
                      char *err, size_t err_size)
{
    bk_plot *pl = bk_plot_new();
    if (!pl) return bk_fail(err, err_size, "out of memory");
    draw_chart(pl, rows, n, m);
    FILE *f = bk_outputs_open(io, out, err, err_size);
    int   rc = !f || bk_plot_write(pl, f, path, err, err_size) ? -1 : 0;
    bk_plot_free(pl);
    if (f && bk_outputs_close(io, out, err, err_size) && !rc) rc = -1;
    return rc;
}

/* ---- re-plotting a CSV ------------------------------------------------------------------------ */

/* Splits one CSV line in place (quotes honoured, "" inside them): the number of fields. */
static int split_csv(char *line, char **field, int max)
{
    int   n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *w = ++p;
            field[n++] = w;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"') ++p;
                *w++ = *p++;
            }
            if (*p == '"') ++p;
            *w = 0;
            if (*p != ',') break;
            ++p;
            continue;
        }
        field[n++] = p;
        char *c = strchr(p, ',');
        if (!c) break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

/* Rows of a CSV that `--csv` wrote (read by its header's names) into *rows_out and *m. 0, or -1
 * with one line in err naming the file and line. */
static int read_csv(const char *path, stacks_row **rows_out, int *nrows, plot_meta *m, char *err, size_t err_size)
{
    *rows_out = NULL;
    *nrows = 0;
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f) return bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    enum { C_SCENE, C_BACKEND, C_ACCEL, C_STACK, C_SIZE, C_CAP, C_STATUS, C_SPP, C_BOUNCES, C_RAYS, C_BAKE, C_N };
    static const char *const need[C_N] = { "scene",  "backend", "accel",   "stack", "stack_size", "reg_cap",
                                           "status", "spp",     "bounces", "rays",  "bake_s" };
    int                      col[C_N], nhead = 0, line_no = 0, cap = 0, rc = 0;
    char                     line[4096], *fld[64];
    stacks_row              *rows = NULL;
    while (!rc && fgets(line, sizeof line, f)) {
        line_no++;
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n') {
            rc = bk_fail(err, err_size, "%s:%d: a line of more than %d bytes", path, line_no, (int)sizeof line - 2);
            break;
        }
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        int nf = split_csv(line, fld, 64);
        if (!nhead) {
            nhead = nf;
            for (int k = 0; k < C_N && !rc; ++k) {
                col[k] = -1;
                for (int j = 0; j < nf; ++j)
                    if (!strcmp(fld[j], need[k])) col[k] = j;
                if (col[k] < 0)
                    rc = bk_fail(err, err_size, "%s:%d: no column '%s' (not a CSV of baker bench stacks --csv)", path,
                                 line_no, need[k]);
            }
            continue;
        }
        if (nf != nhead) {
            rc = bk_fail(err, err_size, "%s:%d: %d fields, the header has %d", path, line_no, nf, nhead);
            break;
        }
        if (*nrows == cap) {
            cap = cap ? 2 * cap : 64;
            stacks_row *nr = realloc(rows, (size_t)cap * sizeof *nr);
            if (!nr) {
                rc = bk_fail(err, err_size, "out of memory");
                break;
            }
            rows = nr;
        }
        stacks_row *r = &rows[*nrows];
        memset(r, 0, sizeof *r);
        snprintf(r->scene, sizeof r->scene, "%s", fld[col[C_SCENE]]);
        r->accel = r->stack = -1;
        for (int a = 0; a < ACCELS; ++a)
            if (!strcmp(fld[col[C_ACCEL]], bk_accel_type_name(a))) r->accel = a;
        for (int s = 0; s < STACKS; ++s)
            if (!strcmp(fld[col[C_STACK]], bk_stack_mode_name(s))) r->stack = s;
        char *e1, *e2;
        long  cap_v = strtol(fld[col[C_CAP]], &e1, 10), size_v = strtol(fld[col[C_SIZE]], &e2, 10);
        if (r->accel < 0 || r->stack < 0 || *e1 || *e2 || e1 == fld[col[C_CAP]] || cap_v < 0 || cap_v > 1024) {
            rc = bk_fail(err, err_size, "%s:%d: unknown accel, stack or register cap '%s', '%s', '%s'", path, line_no,
                         fld[col[C_ACCEL]], fld[col[C_STACK]], fld[col[C_CAP]]);
            break;
        }
        r->cap = (int)cap_v;
        r->stack_size = (int)size_v;
        r->ran = !strcmp(fld[col[C_STATUS]], "ok");
        if (r->ran) {
            r->rays = strtoull(fld[col[C_RAYS]], &e1, 10);
            r->bake_s = strtod(fld[col[C_BAKE]], &e2);
            if (*e1 || *e2 || !(r->bake_s >= 0)) {
                rc = bk_fail(err, err_size, "%s:%d: rays '%s' or bake_s '%s' is not a number", path, line_no,
                             fld[col[C_RAYS]], fld[col[C_BAKE]]);
                break;
            }
        } else snprintf(r->why, sizeof r->why, "%s", fld[col[C_STATUS]]);
        if (!*nrows) {
            snprintf(m->backend, sizeof m->backend, "%s", fld[col[C_BACKEND]]);
            m->spp = (uint32_t)strtoul(fld[col[C_SPP]], NULL, 10);
            m->bounces = (uint32_t)strtoul(fld[col[C_BOUNCES]], NULL, 10);
        }
        if (r->stack_size > m->stack_size) m->stack_size = r->stack_size;
        (*nrows)++;
    }
    if (!rc && ferror(f)) rc = bk_fail(err, err_size, "%s: %s", path, strerror(errno));
    if (!rc && !*nrows) rc = bk_fail(err, err_size, "%s: no rows", path);
    fclose(f);
    if (rc) {
        free(rows);
        *nrows = 0;
        return -1;
    }
    *rows_out = rows;
    return 0;
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
        } else if (!strcmp(a, "--svg") || !strcmp(a, "--plot")) {
            const char *f;
            if (bk_cli_value(argc, argv, &i, &f)) return -1;
            if (c->plot_count == 4) {
                fprintf(stderr, "baker bench stacks: at most 4 plots (--svg, --plot)\n");
                return -1;
            }
            if (!strcmp(a, "--plot") && !bk_plot_type_ok(f)) {
                fprintf(stderr, "baker bench stacks: --plot %s: the name must end in .svg or .png\n", f);
                return -1;
            }
            c->plots[c->plot_count++] = f;
        } else if (!strcmp(a, "--from-csv")) {
            if (bk_cli_value(argc, argv, &i, &c->from_csv)) return -1;
        } else if (a[0] == '-') {
            fprintf(stderr, "baker bench stacks: unknown option '%s'\n%s", a, bk_bench_usage);
            return -1;
        } else {
            c->scenes[c->scene_count++] = a;
        }
    }
    if (c->from_csv && (c->scene_count || c->csv || !c->plot_count)) {
        fprintf(stderr,
                "baker bench stacks: --from-csv FILE takes no scenes and no --csv, and wants --plot or --svg\n");
        return -1;
    }
    return 0;
}

/* `--from-csv FILE`: the plots of a CSV written earlier, nothing baked. */
static int replot(const stacks_cli *c)
{
    char       err[1024];
    bk_outputs io;
    bk_outputs_init(&io);
    int out[4], rc = bk_outputs_input(&io, "--from-csv", c->from_csv, err, sizeof err);
    for (int k = 0; k < c->plot_count && !rc; ++k)
        if ((out[k] = bk_outputs_add(&io, "--plot", c->plots[k], 0, err, sizeof err)) < 0) rc = out[k];
    if (rc) {
        fprintf(stderr, "baker: %s\n", err);
        bk_outputs_free(&io);
        return rc == BK_OUT_CLASH ? 2 : 1;
    }
    stacks_row *rows = NULL;
    int         nrows = 0;
    plot_meta   m;
    if (read_csv(c->from_csv, &rows, &nrows, &m, err, sizeof err)) rc = 1;
    for (int k = 0; k < c->plot_count && !rc; ++k)
        if (write_plot(&io, out[k], c->plots[k], rows, nrows, &m, err, sizeof err)) rc = 1;
    if (!rc && bk_outputs_commit(&io, err, sizeof err)) rc = 1;
    if (rc) fprintf(stderr, "baker: %s\n", err);
    else printf("bench stacks: %d rows of %s plotted\n", nrows, c->from_csv);
    free(rows);
    bk_outputs_free(&io);
    return rc;
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
    if (c.from_csv) {
        int rc = replot(&c);
        free(c.scenes);
        return rc;
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
    int out_csv = -1, out_plot[4], rc = 0;
    for (int i = 0; i < c.scene_count && !rc; ++i) rc = bk_outputs_input(&io, "a scene", c.scenes[i], err, sizeof err);
    if (!rc && c.csv && (out_csv = bk_outputs_add(&io, "--csv", c.csv, 0, err, sizeof err)) < 0) rc = out_csv;
    for (int k = 0; k < c.plot_count && !rc; ++k)
        if ((out_plot[k] = bk_outputs_add(&io, "--plot", c.plots[k], 0, err, sizeof err)) < 0) rc = out_plot[k];
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
    plot_meta m;
    memset(&m, 0, sizeof m);
    snprintf(m.backend, sizeof m.backend, "%s", bname);
    m.spp = c.spp;
    m.bounces = c.bounces;
    m.reps = c.reps;
    m.stack_size = c.stack_size;
    for (int k = 0; k < c.plot_count && !rc; ++k)
        if (write_plot(&io, out_plot[k], c.plots[k], rows, nrows, &m, err, sizeof err)) rc = 1;
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
