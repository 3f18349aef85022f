/* geom.c - primitives for the builders (geom.h): triangle and voxel instance boxes and records,
 * and the bricks of voxel models. */
#include "geom.h"
#include "pool.h"
#include "util.h"

#include <stdatomic.h>

#include <stdlib.h>
#include <string.h>

/* Bricks of a model (4 x 4 x 4 cells each): the segment records and the pack must count alike. */
static uint32_t model_bricks(const uint32_t size[3])
{
    return ((size[0] + 3) / 4) * ((size[1] + 3) / 4) * ((size[2] + 3) / 4);
}

void bk_geom_free(bk_geom *g)
{
    if (!g) return;
    free(g->brick_base);
    free(g->msegs);
    free(g->mseg_first);
    free(g->prim_inst);
    free(g->prim_mseg);
    memset(g, 0, sizeof *g);
}

/* Model m's segments: for each BK_VOX_SEG^3 block with voxels, the box of its voxels. */
static int model_segments(const bk_vox_model *vm, bk_vox_mseg **out, uint32_t *count)
{
    const uint32_t S = BK_VOX_SEG;
    uint32_t       nx = (vm->size[0] + S - 1) / S, ny = (vm->size[1] + S - 1) / S, nz = (vm->size[2] + S - 1) / S;
    size_t         blocks = (size_t)nx * ny * nz;
    bk_vox_mseg   *b = malloc(sizeof *b * (blocks ? blocks : 1));
    if (!b) return -1;
    for (size_t i = 0; i < blocks; ++i)
        for (int k = 0; k < 3; ++k) {
            b[i].lo[k] = 0xFFFF;
            b[i].hi[k] = 0;
        }
    for (uint32_t v = 0; v < vm->voxel_count; ++v) {
        const uint8_t *q = vm->xyzi + 4 * (size_t)v;
        if (q[0] >= vm->size[0] || q[1] >= vm->size[1] || q[2] >= vm->size[2] || q[3] == 0) continue;
        bk_vox_mseg *g = &b[q[0] / S + nx * (q[1] / S + (size_t)ny * (q[2] / S))];
        for (int k = 0; k < 3; ++k) {
            if (q[k] < g->lo[k]) g->lo[k] = q[k];
            if (q[k] + 1 > g->hi[k]) g->hi[k] = (uint16_t)(q[k] + 1);
        }
    }
    uint32_t n = 0;
    for (size_t i = 0; i < blocks; ++i)
        if (b[i].hi[0] > 0) b[n++] = b[i];
    *out = b;
    *count = n;
    return 0;
}

/* The models' segments on the pool (each model's own array, then each copied to its place), and
 * each instance's primitives (from its first one on): the same arrays as a serial loop makes. */
typedef struct seg_job {
    const bk_scene *s;
    bk_vox_mseg   **ms; /* per model: its segments */
    uint32_t       *n;  /* ... and their count */
    bk_geom        *g;
    const uint32_t *first; /* per instance: its first primitive */
    atomic_int      failed;
} seg_job;

static void seg_models(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    seg_job *J = ctx;
    for (size_t m = begin; m < end; ++m)
        if (model_segments(&J->s->vox_models[m], &J->ms[m], &J->n[m])) atomic_store(&J->failed, 1);
}

static void seg_gather(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    seg_job *J = ctx;
    for (size_t m = begin; m < end; ++m)
        if (J->n[m]) memcpy(J->g->msegs + J->g->mseg_first[m], J->ms[m], sizeof(bk_vox_mseg) * J->n[m]);
}

static void seg_prims(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    const seg_job *J = ctx;
    const bk_geom *g = J->g;
    for (size_t j = begin; j < end; ++j) {
        uint32_t m = J->s->vox_instances[j].model, p = J->first[j];
        for (uint32_t k = g->mseg_first[m]; k < g->mseg_first[m + 1]; ++k, ++p) {
            g->prim_inst[p] = (uint32_t)j;
            g->prim_mseg[p] = k;
        }
    }
}

static void seg_job_free(seg_job *J, uint32_t NM)
{
    for (uint32_t m = 0; J->ms && m < NM; ++m) free(J->ms[m]);
    free(J->ms);
    free(J->n);
    J->ms = NULL;
    J->n = NULL;
}

int bk_geom_init(bk_geom *g, const bk_scene *s, char *err, size_t err_size)
{
    memset(g, 0, sizeof *g);
    g->s = s;
    if (s->tri_count && (!s->positions || !s->tri_v))
        return bk_fail(err, err_size, "scene has triangles but no vertex data");
    if (s->vox_model_count >= (1u << 25))
        return bk_fail(err, err_size, "%u voxel models: at most 2^25", s->vox_model_count);
    if (s->tri_count >= BK_PRIM_VOX_BIT || s->vox_instance_count >= BK_PRIM_VOX_BIT)
        return bk_fail(err, err_size, "%u triangles and %u voxel instances: at most 2^30 of each", s->tri_count,
                       s->vox_instance_count);
    for (uint64_t i = 0; i < 3 * (uint64_t)s->tri_count; ++i)
        if (s->tri_v[i] >= s->vertex_count)
            return bk_fail(err, err_size, "triangle %llu uses vertex %u, but the scene has %u vertices",
                           (unsigned long long)(i / 3), s->tri_v[i], s->vertex_count);
    uint64_t faces = s->tri_count;
    for (uint32_t j = 0; j < s->vox_instance_count; ++j) {
        uint32_t m = s->vox_instances[j].model;
        if (m >= s->vox_model_count)
            return bk_fail(err, err_size, "voxel instance %u uses model %u, but the scene has %u models", j, m,
                           s->vox_model_count);
        /* The leaf records carry the boxes and translations as floats and the walk turns them
         * back into cell integers (kernels/bk_voxel.h): each cell and the bricks around it must be
         * integers a float holds exactly. (The .vox reader's limit keeps its scenes well inside.) */
        const bk_vox_instance *in = &s->vox_instances[j];
        int64_t                reach = 0;
        int                    axis = 0;
        for (int k = 0; k < 3; ++k) {
            int64_t t = in->t[k] < 0 ? -(int64_t)in->t[k] : in->t[k];
            if (t > reach) {
                reach = t;
                axis = k;
            }
        }
        if (reach <= BK_VOX_MAX_WORLD) {
            bk_vox_instance box = *in;
            bk_vox_instance_place(&box, s->vox_models[m].size);
            for (int k = 0; k < 3; ++k) {
                int64_t lo = -(int64_t)box.lo[k] + 4, hi = (int64_t)box.hi[k] + 4;
                if (lo > reach) {
                    reach = lo;
                    axis = k;
                }
                if (hi > reach) {
                    reach = hi;
                    axis = k;
                }
            }
        }
        if (reach > BK_VOX_MAX_WORLD)
            return bk_fail(err, err_size,
                           "voxel instance %u reaches %lld along %c (its box and a brick around it): voxels "
                           "must stay within +-%d (2^24), where floats hold integers exactly",
                           j, (long long)reach, "xyz"[axis], BK_VOX_MAX_WORLD);
        faces += 6ull * s->vox_models[m].voxel_count;
    }
    if (faces >= 0xFFFFFFFFull)
        return bk_fail(err, err_size, "%llu triangles and voxel faces: hit ids hold at most 2^32 - 1",
                       (unsigned long long)faces);
    uint64_t count = s->tri_count;
    if (s->vox_model_count) {
        const uint32_t NM = s->vox_model_count, NI = s->vox_instance_count;
        g->brick_base = malloc(sizeof(uint32_t) * NM);
        g->mseg_first = malloc(sizeof(uint32_t) * ((size_t)NM + 1));
        seg_job J = { s, calloc(NM, sizeof(bk_vox_mseg *)), calloc((size_t)NM + 1, sizeof(uint32_t)), g, NULL, 0 };
        atomic_init(&J.failed, 0);
        if (!g->brick_base || !g->mseg_first || !J.ms || !J.n) goto seg_oom;
        bk_parallel_for(NM, 1, seg_models, &J);
        if (atomic_load(&J.failed)) goto seg_oom;
        uint32_t next = 0;
        uint64_t segs = 0;
        for (uint32_t m = 0; m < NM; ++m) {
            g->brick_base[m] = next;
            next += model_bricks(s->vox_models[m].size);
            g->mseg_first[m] = (uint32_t)segs;
            segs += J.n[m];
        }
        g->mseg_first[NM] = (uint32_t)segs;
        if (segs >= 0xFFFFFFFFull || !(g->msegs = malloc(sizeof *g->msegs * (segs ? segs : 1)))) goto seg_oom;
        bk_parallel_for(NM, 16, seg_gather, &J);
        seg_job_free(&J, NM);
        uint64_t  prims = 0;
        uint32_t *first = malloc(sizeof(uint32_t) * ((size_t)NI + 1)); /* per instance: its first primitive */
        if (!first) goto oom;
        for (uint32_t j = 0; j < NI; ++j) {
            uint32_t m = s->vox_instances[j].model;
            first[j] = (uint32_t)(prims < 0xFFFFFFFFull ? prims : 0);
            prims += g->mseg_first[m + 1] - g->mseg_first[m];
        }
        if (count + prims >= 0x7FFFFFFEull) {
            free(first);
            return bk_geom_free(g),
                   bk_fail(err, err_size, "%llu primitives: at most 2^31 - 3", (unsigned long long)(count + prims));
        }
        g->prim_inst = malloc(sizeof(uint32_t) * (prims ? prims : 1));
        g->prim_mseg = malloc(sizeof(uint32_t) * (prims ? prims : 1));
        if (!g->prim_inst || !g->prim_mseg) {
            free(first);
            goto oom;
        }
        J.first = first;
        bk_parallel_for(NI, 1024, seg_prims, &J);
        free(first);
        count += prims;
        goto segs_done;
    seg_oom:
        seg_job_free(&J, NM);
        goto oom;
    }
segs_done:
    if (count == 0) return bk_geom_free(g), bk_fail(err, err_size, "scene has no triangles and no voxels");
    g->count = (uint32_t)count;
    return 0;
oom:
    bk_geom_free(g);
    return bk_fail(err, err_size, "out of memory for the voxel segments");
}

/* Segment primitive i's world box (integer corners) and its instance's translation T. */
static void seg_box(const bk_geom *g, uint32_t i, int32_t lo[3], int32_t hi[3], int32_t T[3],
                    const bk_vox_instance **inst)
{
    const bk_scene        *s = g->s;
    uint32_t               p = i - s->tri_count;
    const bk_vox_instance *in = &s->vox_instances[g->prim_inst[p]];
    const bk_vox_mseg     *ms = &g->msegs[g->prim_mseg[p]];
    bk_vox_instance_offset(in, s->vox_models[in->model].size, T);
    for (int r = 0; r < 3; ++r) {
        /* world = M p + T: row r has one entry, +-1 at column c */
        int     c = in->m[3 * r] ? 0 : (in->m[3 * r + 1] ? 1 : 2), sg = in->m[3 * r + c];
        int32_t a = T[r] + sg * (int32_t)ms->lo[c], b = T[r] + sg * (int32_t)ms->hi[c];
        lo[r] = a < b ? a : b;
        hi[r] = a < b ? b : a;
    }
    *inst = in;
}

void bk_geom_box(const bk_geom *g, uint32_t i, float lo[3], float hi[3])
{
    const bk_scene *s = g->s;
    if (i < s->tri_count) {
        for (int k = 0; k < 3; ++k) {
            lo[k] = BK_INF;
            hi[k] = -BK_INF;
        }
        for (int v = 0; v < 3; ++v) {
            const float *p = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)i + v];
            for (int k = 0; k < 3; ++k) {
                lo[k] = bk_minf(lo[k], p[k]);
                hi[k] = bk_maxf(hi[k], p[k]);
            }
        }
        return;
    }
    int32_t                l[3], h[3], T[3];
    const bk_vox_instance *in;
    seg_box(g, i, l, h, T, &in);
    for (int k = 0; k < 3; ++k) {
        lo[k] = (float)l[k];
        hi[k] = (float)h[k];
    }
}

void bk_geom_record(const bk_geom *g, uint32_t i, bk_f4 rec[3])
{
    const bk_scene *s = g->s;
    if (i < s->tri_count) {
        for (int v = 0; v < 3; ++v) {
            const float *p = s->positions + 3 * (size_t)s->tri_v[3 * (size_t)i + v];
            rec[v].x = p[0];
            rec[v].y = p[1];
            rec[v].z = p[2];
            rec[v].w = 0.0f;
        }
        rec[0].w = bk_bits_float(i);
        return;
    }
    int32_t                l[3], h[3], T[3];
    const bk_vox_instance *in;
    seg_box(g, i, l, h, T, &in);
    const uint32_t *sz = s->vox_models[in->model].size;
    uint32_t        nbx = (sz[0] + 3) / 4, nby = (sz[1] + 3) / 4;
    rec[0].x = (float)l[0];
    rec[0].y = (float)l[1];
    rec[0].z = (float)l[2];
    rec[0].w = bk_bits_float(BK_PRIM_VOX_BIT | g->prim_inst[i - s->tri_count]);
    rec[1].x = (float)h[0];
    rec[1].y = (float)h[1];
    rec[1].z = (float)h[2];
    rec[1].w = bk_bits_float(g->brick_base[in->model]);
    rec[2].x = (float)T[0];
    rec[2].y = (float)T[1];
    rec[2].z = (float)T[2];
    rec[2].w = bk_bits_float((uint32_t)bk_vox_rot_byte(in->m) | nbx << 7 | nby << 14);
}

void bk_vox_pack_free(bk_vox_pack *p)
{
    if (!p) return;
    free(p->models);
    free(p->bricks);
    free(p->colours);
    free(p->inst);
    memset(p, 0, sizeof *p);
}

/* One model of the pack (on the pool: each model writes its own bricks, and its colours at
 * the first of its voxels in tmp; the colours are closed up afterwards). */
typedef struct pack_job {
    const bk_scene *s;
    bk_vox_pack    *out;
    const uint32_t *vbase; /* per model: its first voxel in the scene's voxel order */
    uint8_t        *tmp;   /* colours, each model's at vbase */
    uint8_t       **dense; /* per worker: a model's palette index per cell, 0 = empty */
    size_t          dense_cells;
    atomic_int      failed;
} pack_job;

static void pack_models(void *ctx, size_t begin, size_t end, int worker)
{
    pack_job *J = ctx;
    if (!J->dense[worker] && !(J->dense[worker] = malloc(J->dense_cells))) {
        atomic_store(&J->failed, 1);
        return;
    }
    uint8_t *dense = J->dense[worker];
    for (size_t m = begin; m < end; ++m) {
        const bk_vox_model *vm = &J->s->vox_models[m];
        const uint32_t      sx = vm->size[0], sy = vm->size[1], sz = vm->size[2];
        const uint32_t      nbx = (sx + 3) / 4, nby = (sy + 3) / 4, nbz = (sz + 3) / 4;
        size_t              cells = (size_t)nbx * nby * nbz * 64;
        memset(dense, 0, cells);
        /* cells in brick order: brick (bx, by, bz), then bit x + 4 y + 16 z inside it */
        for (uint32_t v = 0; v < vm->voxel_count; ++v) {
            const uint8_t *q = vm->xyzi + 4 * (size_t)v;
            if (q[0] >= sx || q[1] >= sy || q[2] >= sz || q[3] == 0) continue; /* the reader refuses these */
            size_t b = q[0] / 4 + nbx * (q[1] / 4 + (size_t)nby * (q[2] / 4));
            dense[b * 64 + (q[0] & 3) + 4 * (q[1] & 3) + 16 * (q[2] & 3)] = q[3];
        }
        bk_vox_model_rec *r = &J->out->models[m];
        uint8_t          *colours = J->tmp + J->vbase[m];
        uint32_t          rank = 0;
        for (size_t b = 0; b < cells / 64; ++b) {
            bk_vox_brick *br = &J->out->bricks[r->brick_base + b];
            uint64_t      mask = 0;
            br->rank = rank;
            br->pad = 0;
            for (int bit = 0; bit < 64; ++bit) {
                uint8_t c = dense[b * 64 + bit];
                if (!c) continue;
                mask |= (uint64_t)1 << bit;
                colours[rank++] = c;
            }
            br->mask_lo = (uint32_t)mask;
            br->mask_hi = (uint32_t)(mask >> 32);
        }
        r->voxel_count = rank;
    }
}

static void pack_colours(void *ctx, size_t begin, size_t end, int worker)
{
    (void)worker;
    pack_job *J = ctx;
    for (size_t m = begin; m < end; ++m)
        memcpy(J->out->colours + J->out->models[m].colour_base, J->tmp + J->vbase[m], J->out->models[m].voxel_count);
}

int bk_vox_pack_build(const bk_scene *s, bk_vox_pack *out, char *err, size_t err_size)
{
    memset(out, 0, sizeof *out);
    if (!s->vox_model_count) return 0;
    const uint32_t NM = s->vox_model_count;
    uint64_t       bricks = 0, voxels = 0;
    size_t         max_cells = 64;
    for (uint32_t m = 0; m < NM; ++m) {
        bricks += model_bricks(s->vox_models[m].size);
        voxels += s->vox_models[m].voxel_count;
        if (64 * (size_t)model_bricks(s->vox_models[m].size) > max_cells)
            max_cells = 64 * (size_t)model_bricks(s->vox_models[m].size);
    }
    if (bricks >= 0xFFFFFFFFull || voxels >= 0xFFFFFFFFull)
        return bk_fail(err, err_size, "voxel models too large: %llu bricks, %llu voxels", (unsigned long long)bricks,
                       (unsigned long long)voxels);
    const int nw = bk_pool_threads();
    pack_job  J;
    memset(&J, 0, sizeof J);
    J.s = s;
    J.out = out;
    J.dense_cells = max_cells;
    atomic_init(&J.failed, 0);
    uint32_t *vbase = malloc(sizeof(uint32_t) * NM);
    J.vbase = vbase;
    J.tmp = malloc(voxels ? voxels : 1);
    J.dense = calloc((size_t)nw, sizeof *J.dense);
    out->models = calloc(NM, sizeof *out->models);
    out->bricks = malloc(sizeof *out->bricks * (bricks ? bricks : 1));
    out->colours = calloc(voxels ? voxels : 1, 1);
    out->inst = calloc(2 * (size_t)(s->vox_instance_count ? s->vox_instance_count : 1), sizeof *out->inst);
    int rc = -1;
    if (!vbase || !J.tmp || !J.dense || !out->models || !out->bricks || !out->colours || !out->inst) goto done;
    out->model_count = NM;
    uint32_t brick_next = 0, voxel_next = 0;
    for (uint32_t m = 0; m < NM; ++m) {
        const bk_vox_model *vm = &s->vox_models[m];
        bk_vox_model_rec   *r = &out->models[m];
        r->sx = vm->size[0];
        r->sy = vm->size[1];
        r->sz = vm->size[2];
        r->brick_base = brick_next; /* = bk_geom.brick_base[m] */
        r->material_base = vm->material_base;
        vbase[m] = voxel_next;
        brick_next += model_bricks(vm->size);
        voxel_next += vm->voxel_count;
    }
    bk_parallel_for(NM, 1, pack_models, &J);
    if (atomic_load(&J.failed)) goto done;
    uint32_t colour_next = 0;
    for (uint32_t m = 0; m < NM; ++m) {
        out->models[m].colour_base = colour_next;
        colour_next += out->models[m].voxel_count;
    }
    bk_parallel_for(NM, 16, pack_colours, &J);
    out->brick_count = brick_next;
    out->colour_count = colour_next;
    out->instance_count = s->vox_instance_count;
    uint64_t base = s->tri_count;
    for (uint32_t j = 0; j < s->vox_instance_count; ++j) {
        out->inst[2 * (size_t)j] = (uint32_t)base;
        out->inst[2 * (size_t)j + 1] = s->vox_instances[j].model;
        base += 6ull * out->models[s->vox_instances[j].model].voxel_count;
    }
    rc = 0;
done:
    for (int w = 0; J.dense && w < nw; ++w) free(J.dense[w]);
    free(J.dense);
    free(J.tmp);
    free(vbase);
    if (rc) {
        bk_vox_pack_free(out);
        return bk_fail(err, err_size, "out of memory packing %u voxel models", NM);
    }
    return 0;
}
