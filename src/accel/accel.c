/* accel.c - what callers of both builders share: the stage names, the view handed to traversals, freeing. */
#include "accel.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const bk_build_stage_names[BK_BUILD_STAGES] = { "prep", "top", "subtrees", "join", "flatten" };

bk_accel_view bk_accel_get_view(const bk_accel *a)
{
    bk_accel_view v;
    memset(&v, 0, sizeof v);
    v.type = a->type;
    v.depth = a->info.depth;
    v.bvh_nodes = a->bvh_nodes;
    v.bvh_node_count = a->bvh_node_count;
    v.kd_nodes = a->kd_nodes;
    v.kd_node_count = a->kd_node_count;
    v.kd_refs = a->kd_refs;
    v.kd_ref_count = a->kd_ref_count;
    v.tris = a->tris;
    v.tri_count = a->tri_count;
    v.lo = a->lo;
    v.hi = a->hi;
    v.prim = a->vox.instance_count ? BK_PRIM_VOX : a->alpha ? BK_PRIM_CUT : BK_PRIM_TRI;
    v.vox_models = a->vox.models;
    v.vox_model_count = a->vox.model_count;
    v.vox_bricks = a->vox.bricks;
    v.vox_brick_count = a->vox.brick_count;
    v.vox_colours = a->vox.colours;
    v.vox_colour_count = a->vox.colour_count;
    v.vox_inst = a->vox.inst;
    v.vox_instance_count = a->vox.instance_count;
    v.alpha = a->alpha;
    v.alpha_count = a->alpha_count;
    v.tex = a->tex;
    return v;
}

void bk_accel_free(bk_accel *a)
{
    if (!a) return;
    free(a->bvh_nodes);
    free(a->kd_nodes);
    free(a->kd_refs);
    free(a->tris);
    bk_vox_pack_free(&a->vox);
    memset(a, 0, sizeof *a);
}

typedef struct accel_word {
    const char *word;
    int         type, layout, shown;
} accel_word;
#define ACCEL_WORD_(W, T, L, S) { W, T, L, S },
static const accel_word accel_words[] = { BK_ACCEL_WORDS(ACCEL_WORD_) };
#undef ACCEL_WORD_
#define ACCEL_WORD_COUNT (int)(sizeof accel_words / sizeof accel_words[0])

const char *bk_accel_layout_name(int type, int layout)
{
    for (int k = 0; k < ACCEL_WORD_COUNT; ++k)
        if (accel_words[k].shown && accel_words[k].type == type && accel_words[k].layout == layout)
            return accel_words[k].word;
    return "?";
}

const char *bk_accel_type_name(int type) { return bk_accel_layout_name(type, 0); }

int bk_accel_word_parse(const char *word, int types_only, int *type, int *layout)
{
    for (int k = 0; k < ACCEL_WORD_COUNT; ++k) {
        if (types_only && (accel_words[k].layout || !accel_words[k].shown)) continue;
        if (strcmp(word, accel_words[k].word)) continue;
        *type = accel_words[k].type;
        *layout = accel_words[k].layout;
        return 0;
    }
    return -1;
}

const char *bk_accel_words(char *buf, size_t size, const char *sep, const char *last, int types_only)
{
    const char *words[ACCEL_WORD_COUNT];
    int         n = 0;
    for (int k = 0; k < ACCEL_WORD_COUNT; ++k)
        if (accel_words[k].shown && (!types_only || !accel_words[k].layout)) words[n++] = accel_words[k].word;
    return bk_join_words(buf, size, words, n, sep, last);
}

void bk_accel_set_surface(bk_accel *a, const bk_tex_pool *p)
{
    a->alpha = p && p->alpha_count ? p->alpha : NULL;
    a->alpha_count = a->alpha ? p->alpha_count : 0;
    a->tex = bk_tex_pool_view(p);
    for (uint32_t r = 0; r < a->tri_count; ++r) {
        uint32_t id = bk_float_bits(a->tris[3 * (size_t)r].w) & BK_TRI_ID;
        if (a->vox.instance_count && (id & BK_PRIM_VOX_BIT)) continue; /* a voxel record's v1.w is its own */
        uint32_t w = a->alpha && id < p->tri_count ? p->tri_alpha[id] : 0;
        a->tris[3 * (size_t)r + 1].w = bk_bits_float(w);
    }
}
