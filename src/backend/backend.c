/* backend.c - what the backends share: default trace options, the compressed layout they may trace,
 * freeing, and the names of the trace options (from BK_STACK_MODES and BK_COUNTER_MODES). Picking a
 * backend by name is src/registry/registry.c's. */
#include "backend.h"
#include "bvh_cw.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bk_trace_opts bk_trace_opts_default(void)
{
    bk_trace_opts o;
    memset(&o, 0, sizeof o);
    o.stack_mode = BK_STACK_GLOBAL;
    o.stack_size = 8;
    o.counters = BK_COUNTERS_WARP;
    return o;
}

int bk_ray_order_bits(const bk_trace_opts *o)
{
    if (o->order_bits >= 1 && o->order_bits <= BK_RAY_ORDER_KEY_BITS) return o->order_bits;
    return o->ray_order == BK_RAY_ORDER_SORTED ? BK_RAY_ORDER_KEY_BITS : BK_RAY_ORDER_BINNED_BITS;
}

bk_cwbvh *bk_backend_cw_layout(const bk_accel_view *bin, bk_accel_view *view)
{
    if (bin->type != BK_ACCEL_BVH || bin->prim == BK_PRIM_VOX) return NULL;
    bk_cwbvh *cw = malloc(sizeof *cw);
    if (!cw) return NULL;
    if (bk_cwbvh_build(bin, cw, NULL, 0)) {
        free(cw);
        return NULL;
    }
    *view = bk_cwbvh_view(cw, bin);
    return cw;
}

void bk_backend_cw_free(bk_cwbvh *cw)
{
    if (!cw) return;
    bk_cwbvh_free(cw);
    free(cw);
}

void bk_backend_free(bk_backend *be)
{
    if (be) be->i->free(be);
}

/* ---- the names of the trace options, from their lists -------------------------------------- */

#define STACK_NAME_(N, S, SZ, SP, D)  S,
#define STACK_ABOUT_(N, S, SZ, SP, D) D,
static const char *const stack_names[BK_STACK_MODE_COUNT] = { BK_STACK_MODES(STACK_NAME_) };
static const char *const stack_about[BK_STACK_MODE_COUNT] = { BK_STACK_MODES(STACK_ABOUT_) };
#undef STACK_NAME_
#undef STACK_ABOUT_
#define COUNTERS_NAME_(N, S, D)  S,
#define COUNTERS_ABOUT_(N, S, D) D,
static const char *const counter_names[BK_COUNTERS_COUNT] = { BK_COUNTER_MODES(COUNTERS_NAME_) };
static const char *const counter_about[BK_COUNTERS_COUNT] = { BK_COUNTER_MODES(COUNTERS_ABOUT_) };
#undef COUNTERS_NAME_
#undef COUNTERS_ABOUT_

const char *bk_stack_mode_name(int mode) { return mode >= 0 && mode < BK_STACK_MODE_COUNT ? stack_names[mode] : "?"; }
const char *bk_stack_mode_about(int mode) { return mode >= 0 && mode < BK_STACK_MODE_COUNT ? stack_about[mode] : ""; }
const char *bk_counters_name(int c) { return c >= 0 && c < BK_COUNTERS_COUNT ? counter_names[c] : "?"; }
const char *bk_counters_about(int c) { return c >= 0 && c < BK_COUNTERS_COUNT ? counter_about[c] : ""; }

const char *bk_stack_mode_names(char *buf, size_t size, const char *sep, const char *last)
{
    return bk_join_words(buf, size, stack_names, BK_STACK_MODE_COUNT, sep, last);
}

const char *bk_counters_names(char *buf, size_t size, const char *sep, const char *last)
{
    return bk_join_words(buf, size, counter_names, BK_COUNTERS_COUNT, sep, last);
}

int bk_stack_mode_parse(const char *s)
{
    for (int i = 0; i < BK_STACK_MODE_COUNT; ++i)
        if (!strcmp(s, stack_names[i])) return i;
    return -1;
}

int bk_counters_parse(const char *s)
{
    for (int i = 0; i < BK_COUNTERS_COUNT; ++i)
        if (!strcmp(s, counter_names[i])) return i;
    return -1;
}
