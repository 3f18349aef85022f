/* cmd_bake_out.c - the bake's files: every name checked before any work, the pages' names, the
 * glTF mesh and the --stats JSON. */
#include "cmd_bake_internal.h"
#include "gltf.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A JSON string: quotes, backslashes and control characters escaped (paths may hold any byte). */
static void json_str(FILE *f, const char *v)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)v; *p; ++p) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7F) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* "pages": which page each object lies on: per material of the scene's own triangles (the pages
 * its triangles use) and per voxel instance (its first page; "pages": [first, last] when it
 * spreads over several). */
static void write_pages_json(FILE *f, const bk_scene *s, const bk_voxmesh *vm, const bk_atlas *at, char **page_names,
                             const char *out)
{
    fputs("  \"pages\": { \"count\": ", f);
    fprintf(f, "%d, \"files\": [", at->page_count);
    for (int p = 0; page_names && p < at->page_count; ++p) {
        if (p) fputs(", ", f);
        json_str(f, page_names[p]);
    }
    if (!page_names) json_str(f, out);
    fputs("],\n    \"materials\": [", f);
    uint32_t T0 = vm ? vm->first_quad_tri : at->tri_count, nm = s->material_count + 1;
    /* a bit set of pages per material (the default material last) */
    size_t    words = ((size_t)at->page_count + 63) / 64;
    uint64_t *bits = calloc((size_t)nm * words, sizeof(uint64_t));
    if (bits) {
        for (uint32_t t = 0; t < T0; ++t) {
            uint32_t m = s->tri_material && s->tri_material[t] < s->material_count ? s->tri_material[t] : nm - 1;
            uint32_t p = at->tri_page ? at->tri_page[t] : 0;
            bits[(size_t)m * words + p / 64] |= 1ull << (p % 64);
        }
        int first = 1;
        for (uint32_t m = 0; m < nm; ++m) {
            int any = 0;
            for (size_t w = 0; w < words; ++w) any |= bits[(size_t)m * words + w] != 0;
            if (!any) continue;
            fputs(first ? "\n      { \"material\": " : ",\n      { \"material\": ", f);
            first = 0;
            json_str(f, m + 1 < nm ? s->materials[m].name : "(default)");
            fputs(", \"pages\": [", f);
            int fp = 1;
            for (int p = 0; p < at->page_count; ++p)
                if (bits[(size_t)m * words + p / 64] >> (p % 64) & 1) {
                    fprintf(f, fp ? "%d" : ", %d", p);
                    fp = 0;
                }
            fputs("] }", f);
        }
        free(bits);
    }
    fputs("],\n    \"voxel_instances\": [", f);
    /* quads are in instance order: one entry per instance that has quads */
    for (uint32_t q = 0, n = 0; vm && q < vm->quad_count; ++q) {
        if (q && vm->quads[q].instance == vm->quads[q - 1].instance) continue;
        uint32_t t = vm->first_quad_tri + 2 * q, p0 = at->tri_page ? at->tri_page[t] : 0, e = q + 1;
        fprintf(f, "%s{ \"instance\": %u, \"page\": %u",
                n == 0  ? "\n      "
                : n % 4 ? ", "
                        : ",\n      ",
                vm->quads[q].instance, p0);
        /* an instance larger than a page (--pages auto) takes consecutive pages: all of them */
        while (e < vm->quad_count && vm->quads[e].instance == vm->quads[q].instance) ++e;
        uint32_t pl = at->tri_page ? at->tri_page[vm->first_quad_tri + 2 * (e - 1)] : 0;
        if (pl != p0) fprintf(f, ", \"pages\": [%u, %u]", p0, pl);
        fputs(" }", f);
        n++;
    }
    fputs("] },\n", f);
}

/* --probes: their figures and file */
static void write_probes_json(FILE *f, const bk_cmd_bake_cli *c, const bk_cmd_bake_probes *probes)
{
    fprintf(f,
            "  \"probes\": { \"count\": %u, \"invalid\": %u, \"spp\": %u, \"seconds\": %.6f, \"rays\": %llu, "
            "\"trace_seconds\": %.6f, \"file\": ",
            probes->n, probes->invalid, probes->spp, probes->seconds, (unsigned long long)probes->totals.rays,
            probes->totals.seconds);
    json_str(f, c->probes_out);
    fputs(" },\n", f);
}

/* --shadowmask: its file and its channels' lights */
static void write_mask_json(FILE *f, const bk_cmd_bake_cli *c)
{
    fputs("  \"shadowmask\": { \"file\": ", f);
    json_str(f, c->mask_out);
    fputs(", \"channels\": [", f);
    for (uint32_t k = 0; k < c->p.mask_count; ++k)
        if (c->mask_point[k] < 0) fprintf(f, "%s\"sun\"", k ? ", " : "");
        else fprintf(f, "%s\"point %d\"", k ? ", " : "", c->mask_point[k]);
    fputs("] },\n", f);
}

void bk_cmd_bake_write_stats(FILE *f, const bk_cmd_bake_cli *c, const bk_outputs *io, const bk_scene *s,
                             const bk_voxmesh *vm, const bk_atlas *at, char **page_names, uint32_t texels,
                             const bk_bake_result *r, const double ph[PH_COUNT], const char *backend, double mean_lum,
                             double sort_seconds, const uint64_t mem[MEM_COUNT], const bk_denoise_result *dn,
                             const bk_cmd_bake_job *job, const double wr[WR_COUNT], double bake_prep,
                             const bk_cmd_bake_tex *tex, const bk_cmd_bake_probes *probes)
{
    double mrays = r->totals.seconds > 0 ? (double)r->totals.rays / r->totals.seconds / 1e6 : 0.0;
    fputs("{\n  \"scene\": ", f);
    json_str(f, c->scene);
    fputs(",\n  \"scenes\": [", f);
    for (int k = 0; k < c->nscenes; ++k) {
        if (k) fputs(", ", f);
        json_str(f, c->scenes[k]);
    }
    fputs("],\n  \"output\": ", f);
    json_str(f, c->out);
    /* every file the run writes (each page, the mesh's MTL, this file): standard output is none */
    fputs(",\n  \"outputs\": [", f);
    for (int k = 0, n = 0; k < io->n_out; ++k) {
        if (io->out[k].to_stdout) continue;
        if (n++) fputs(", ", f);
        json_str(f, io->out[k].path);
    }
    fputs("]", f);
    fprintf(f, ",\n  \"backend\": \"%s\",\n", backend);
    fprintf(
        f,
        "  \"triangles\": %u,\n  \"atlas\": { \"width\": %d, \"height\": %d, \"pages\": %d, \"charts\": %u, "
        "\"texels\": %u, "
        "\"utilisation\": %.4f, \"texels_per_unit\": %.6g, \"smooth_charts\": %u, \"stretch_l2\": %.5f, "
        "\"stretch_min\": %.4f, \"stretch_max\": %.4f, \"density_max\": %.4f, \"seconds\": %.6f,\n    \"stages\": { ",
        s->tri_count, at->width, at->height, at->page_count, at->chart_count, texels, at->utilisation,
        at->texels_per_unit, at->smooth_charts, (double)at->stretch_l2, (double)at->stretch_min,
        (double)at->stretch_max, (double)at->density_max, at->seconds);
    /* where the atlas phase went: bk_atlas_build's stages, then the texels (the rest of the phase) */
    for (int k = 0; k < BK_ATLAS_STAGES; ++k)
        fprintf(f, "\"%s\": %.6f, ", bk_atlas_stage_names[k], at->stage_seconds[k]);
    fprintf(f, "\"texels\": %.6f } },\n", fmax(0.0, ph[PH_ATLAS] - at->seconds));
    if (vm && vm->quad_count)
        fprintf(f,
                "  \"voxels\": { \"instances\": %u, \"instanced_voxels\": %llu, \"visible_faces\": %llu, "
                "\"hidden_faces\": %llu, "
                "\"quads\": %u, \"texels_per_voxel\": %d, \"surface_seconds\": %.6f },\n",
                s->vox_instance_count, (unsigned long long)vm->voxel_count, (unsigned long long)vm->face_count,
                (unsigned long long)vm->hidden_faces, vm->quad_count, c->texels_per_voxel, vm->seconds);
    write_pages_json(f, vm ? &vm->scene : s, vm, at, page_names, c->out);
    fputs("  \"seconds\": { ", f);
    double total = 0.0;
    for (int k = 0; k < PH_COUNT; ++k) {
        fprintf(f, "\"%s\": %.6f, ", bk_cmd_bake_phase_names[k], ph[k]);
        total += ph[k];
    }
    fprintf(f, "\"total\": %.6f },\n", total);
    fputs("  \"write\": { ", f);
    for (int k = 0; k < WR_COUNT; ++k)
        fprintf(f, "%s\"%s_seconds\": %.6f", k ? ", " : "", bk_cmd_bake_write_step_names[k], wr[k]);
    fputs(" },\n", f);
    fprintf(f,
            "  \"bake\": { \"spp\": %u, \"bounces\": %u, \"mode\": \"%s\", \"rays\": %llu, \"trace_seconds\": %.6f, "
            "\"mrays_per_s\": %.2f, \"launches\": %u, \"longest_launch_ms\": %.3f, \"inside_geometry\": %u,\n"
            "    \"prep_seconds\": %.6f, \"texels_seconds\": %.6f, \"begin_seconds\": %.6f, \"texels_made\": \"%s\", "
            "\"fetch_seconds\": %.6f,\n"
            "    \"devices\": [",
            c->p.spp, c->p.bounces, c->p.mode == BK_BAKE_AO ? "ao" : "light", (unsigned long long)r->totals.rays,
            r->totals.seconds, mrays, r->launches, r->longest_launch_ms, r->invalid, bake_prep, r->texels_seconds,
            r->begin_seconds,
            r->texels_made == 2   ? "device"
            : r->texels_made == 1 ? "host"
                                  : "given",
            r->fetch_seconds);
    /* each device's share (one entry per device; a bake on one device has one) */
    for (int k = 0; k < r->devices && k < BK_BAKE_MAX_DEVICES; ++k)
        fprintf(f, "%s{ \"device\": %d, \"texels\": %llu, \"blocks\": %u, \"rays\": %llu, \"busy_seconds\": %.6f }",
                k ? ", " : "", k, (unsigned long long)r->dev[k].texels, r->dev[k].blocks,
                (unsigned long long)r->dev[k].rays, r->dev[k].busy_seconds);
    fputs("] },\n", f);
    if (probes->n) write_probes_json(f, c, probes);
    if (c->p.mask_count) write_mask_json(f, c);
    fprintf(f,
            "  \"job\": { \"ranks\": %d, \"granule\": %u, \"wait_seconds\": %.6f, \"gather_bytes\": %llu, "
            "\"gather_seconds\": %.6f },\n",
            job->size, job->size > 1 ? job->granule : texels, job->wait_seconds, (unsigned long long)job->gather_bytes,
            job->gather_seconds);
    fprintf(f,
            "  \"denoise\": { \"on\": %s, \"passes\": %d, \"sigma\": [%.6g, %.6g, %.6g], \"seconds\": %.6f, "
            "\"filter_seconds\": %.6f, \"prep_seconds\": %.6f, \"backend_seconds\": %.6f, \"finish_seconds\": %.6f, "
            "\"texels\": %llu, \"charts\": %u },\n",
            dn->texels ? "true" : "false", c->dn.passes, c->dn.sigma_l, c->dn.sigma_n, c->dn.sigma_x, dn->seconds,
            dn->filter_seconds, dn->prep_seconds, dn->backend_seconds, dn->finish_seconds,
            (unsigned long long)dn->texels, dn->charts);
    uint64_t px = (uint64_t)BK_ATLAS_PIXELS(at);
    fprintf(
        f,
        "  \"memory\": { \"estimate_host_bytes\": %llu, \"estimate_device_bytes\": %llu, \"peak_host_bytes\": %llu, "
        "\"peak_device_bytes\": %llu, \"atlas_texels\": %llu, \"peak_host_bytes_per_texel\": %.2f },\n",
        (unsigned long long)mem[MEM_EST_HOST], (unsigned long long)mem[MEM_EST_DEVICE],
        (unsigned long long)mem[MEM_PEAK_HOST], (unsigned long long)mem[MEM_PEAK_DEVICE], (unsigned long long)px,
        px ? (double)mem[MEM_PEAK_HOST] / (double)px : 0.0);
    fprintf(
        f,
        "  \"exposure\": %.6g,\n  \"mean_luminance\": %.6g,\n  \"bin_rays\": { \"on\": %s, \"sort_seconds\": %.6f },\n"
        "  \"gpu_kernel\": \"%s\",\n",
        c->exposure, mean_lum, c->bin_rays ? "true" : "false", sort_seconds,
        c->t.opts.wavefront ? "wavefront" : "megakernel");
    const bk_tex_pool *tp = tex->pool;
    fprintf(f,
            "  \"textures\": { \"images\": %u, \"records\": %u, \"texel_bytes\": %llu, \"device_bytes\": %llu, "
            "\"alpha_triangles\": %u, \"textured_triangles\": %u, \"cut_texels\": %u, \"build_seconds\": %.6f },\n",
            s->image_count, tp->rec_count,
            (unsigned long long)(4ull * tp->texel8_count + sizeof(bk_f4) * (uint64_t)tp->texelf_count),
            (unsigned long long)bk_tex_pool_bytes(tp), tp->alpha_count, tp->textured_tris, tex->cut,
            tex->build_seconds);
    fprintf(f, "  \"traversal\": { \"nodes\": %llu, \"triangles\": %llu, \"restarts\": %llu, \"spills\": %llu }\n}\n",
            (unsigned long long)r->totals.nodes, (unsigned long long)r->totals.tris,
            (unsigned long long)r->totals.restarts, (unsigned long long)r->totals.spills);
}

/* Every file the bake reads and writes, checked before any work (outputs.h). Returns 0, or the
 * exit status after printing why: 2 when two names clash, 1 when an output cannot be written.
 * With --pages auto -o itself names no file: page 0 (NAME-0.png, there is always one) of each -o
 * is checked here, the other pages once the atlas is packed, before the bake. */
int bk_cmd_bake_plan_files(const bk_cmd_bake_cli *c, bk_outputs *io, int idx[OUT_COUNT], int *lm_idx,
                           char *const *page0)
{
    char err[1024];
    int  r = 0;
    /* a scene named twice would be baked as two coincident copies, each at half the density */
    for (int k = 1; k < c->nscenes; ++k)
        for (int j = 0; j < k; ++j)
            if (bk_same_file(c->scenes[j], c->scenes[k])) {
                bk_cmd_bake_error(
                    "SCENE %s and %s are the same file: name each scene once (two copies would bake as coincident "
                    "geometry at half the texel density)\n",
                    c->scenes[j], c->scenes[k]);
                return 2;
            }
    for (int k = 0; k < c->nscenes && !r; ++k) r = bk_outputs_input(io, "a scene", c->scenes[k], err, sizeof err);
    /* another rank of a job writes nothing: it neither checks nor probes the outputs (their folder
     * may exist only where rank 0 runs) */
    for (int k = 0; !r && c->writer && k < c->nouts; ++k)
        if ((r = lm_idx[k] = bk_outputs_add(io, "-o", page0 && page0[k] ? page0[k] : c->outs[k], 0, err, sizeof err)) >=
            0)
            r = 0;
    if (c->writer && c->nouts) idx[OUT_LIGHTMAP] = lm_idx[0];
    if (!r && c->writer && c->mesh_obj &&
        (r = idx[OUT_MESH_OBJ] = bk_outputs_add(io, "--mesh-out", c->mesh_obj, 0, err, sizeof err)) >= 0)
        r = 0;
    if (!r && c->writer && c->mesh_gltf &&
        (r = idx[OUT_MESH_GLTF] = bk_outputs_add(io, "--mesh-out", c->mesh_gltf, 0, err, sizeof err)) >= 0)
        r = 0;
    if (!r && c->stats &&
        (r = idx[OUT_STATS] = bk_outputs_add(io, "--stats", c->stats, BK_OUT_ALLOW_STDOUT, err, sizeof err)) >= 0)
        r = 0;
    if (!r && c->writer && c->probes_out &&
        (r = idx[OUT_PROBES] = bk_outputs_add(io, "--probes", c->probes_out, 0, err, sizeof err)) >= 0)
        r = 0;
    if (!r && c->writer && c->mask_out &&
        (r = idx[OUT_MASK] = bk_outputs_add(io, "--shadowmask", c->mask_out, 0, err, sizeof err)) >= 0)
        r = 0;
    if (!r && c->writer && c->preview &&
        (r = idx[OUT_PREVIEW] = bk_outputs_add(io, "--preview", c->preview, 0, err, sizeof err)) >= 0)
        r = 0;
    if (!r) return 0;
    bk_cmd_bake_error("%s\n", err);
    return r == BK_OUT_CLASH ? 2 : 1;
}

/* NAME.ext -> NAME-K.ext (ext is .png, .hdr or .exr, 4 characters). */
char *bk_cmd_bake_page_name(const char *out, int k)
{
    size_t n = strlen(out), cut = n >= 4 ? n - 4 : n;
    char  *p = malloc(cut + 16 + (n - cut));
    if (p) snprintf(p, cut + 16 + (n - cut), "%.*s-%d%s", (int)cut, out, k, out + cut);
    return p;
}

/* --pages auto: pages NAME-K.png of an earlier bake with more pages stay (they are no output of
 * this run, so they are not removed); say which files are this bake's. */
void bk_cmd_bake_note_stale_pages(const bk_cmd_bake_cli *c, const char *out, int pages)
{
    int last = pages;
    for (;; ++last) {
        char *p = bk_cmd_bake_page_name(out, last);
        int   there = p && access(p, F_OK) == 0;
        free(p);
        if (!there) break;
    }
    if (last == pages) return;
    char *first = bk_cmd_bake_page_name(out, pages), *final = bk_cmd_bake_page_name(out, last - 1),
         *mine = bk_cmd_bake_page_name(out, pages - 1);
    char m[4096];
    if (first && final && mine) {
        if (last - 1 > pages)
            snprintf(m, sizeof m, "note: %s .. %s are from an earlier bake: this one wrote %d page%s, up to %s", first,
                     final, pages, pages > 1 ? "s" : "", mine);
        else
            snprintf(m, sizeof m, "note: %s is from an earlier bake: this one wrote %d page%s, up to %s", first, pages,
                     pages > 1 ? "s" : "", mine);
        bk_escape_controls(m, sizeof m);
        if (!c->quiet) fprintf(stderr, "baker: %s\n", m);
    }
    free(first);
    free(final);
    free(mine);
}

/* --mesh-out FILE.gltf|.glb: the surface (a voxel scene's quads included) with the lightmap
 * pages it is baked into and the lit pages made from rgb (gltf.h). files: where each page's
 * bytes are now (the temporary files of the run), NULL for the names. */
int bk_cmd_bake_write_gltf(FILE *f, const bk_cmd_bake_cli *c, const bk_scene *src, const bk_scene *surf,
                           const bk_voxmesh *vm, const bk_atlas *at, char **page_names, const char *const *files,
                           const float *rgb, const bk_tex_pool *pool, uint32_t probe_count, char *err, size_t err_size)
{
    bk_gltf_opts go;
    bk_gltf_opts_default(&go);
    const char *one[1] = { c->out };
    go.lightmaps = page_names ? (const char *const *)page_names : one;
    go.lightmap_files = files;
    go.rgb = rgb;
    go.pool = pool;
    go.vm = vm;
    go.src = src;
    go.exposure = c->exposure;
    go.probes = probe_count ? c->probes_out : NULL;
    go.probe_count = probe_count;
    go.shadowmask = c->mask_out;
    go.mask_count = (int)c->p.mask_count;
    for (uint32_t k = 0; k < c->p.mask_count && k < 4; ++k) {
        const int i = go.mask_point[k] = c->mask_point[k];
        for (int a = 0; a < 3; ++a) go.mask_at[k][a] = i < 0 ? c->p.sun_dir[a] : c->points[6 * i + a];
    }
    /* --directional's files beside the first -o */
    char *dir[3] = { NULL, NULL, NULL };
    for (int b = 0; c->directional && b < bk_cmd_bake_dir_files(c); ++b) {
        dir[b] = bk_cmd_bake_dir_name(c->directional, c->out, b);
        go.directional_count += dir[b] != NULL;
    }
    go.directional = (const char *const *)dir;
    go.directional_mode = c->directional == BK_CMD_DIR_SH ? "sh" : "dominant";
    /* the scene's file name without its folder and extension names what has no object */
    char        name[256];
    const char *sc = c->nscenes > 0 ? c->scenes[0] : c->scene, *b = strrchr(sc, '/') ? strrchr(sc, '/') + 1 : sc;
    snprintf(name, sizeof name, "%s", b);
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = 0;
    go.name = name;
    int rc = bk_gltf_write_file(f, c->mesh_gltf, surf, at, &go, err, err_size);
    for (int b = 0; b < 3; ++b) free(dir[b]);
    return rc;
}
