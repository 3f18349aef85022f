/* trace_wide_body.h - the body of the wide BVH traversal, included by src/accel/trace_wide.c once per
 * instruction set (WIDE_SIMD 0: scalar, 1: SSE4.1, 2: AVX2) with WIDE_NAME the function to define
 * and WIDE_ATTR its target attribute. Not a header of its own: it has no include guard on purpose.
 *
 * One ray, Embree's single-ray scheme: the slab test of a node's child boxes at once, the
 * hit children ordered by entry distance, the nearest entered at once and the others pushed as
 * (child, entry distance) far to near; a popped entry farther than the closest hit so far is
 * dropped without fetching its node. Triangles: the binary traversal's records and test
 * (bk_tri_intersect), its precise t (bk_tri_refine_t) and its choice between equal-t hits
 * (bk_hit_better: the lower id).
 */
#define W BK_WBVH_WIDTH
#if WIDE_SIMD == 2 && BK_WBVH_WIDTH == 8
#define VL        8
#define V         __m256
#define VSET1     _mm256_set1_ps
#define VLOAD     _mm256_load_ps
#define VSTORE    _mm256_store_ps
#define VSUB      _mm256_sub_ps
#define VMUL      _mm256_mul_ps
#define VMIN      _mm256_min_ps
#define VMAX      _mm256_max_ps
#define VOR       _mm256_or_ps
#define VLE(a, b) _mm256_cmp_ps(a, b, _CMP_LE_OQ)
#define VLT(a, b) _mm256_cmp_ps(a, b, _CMP_LT_OQ)
#define VEQ(a, b) _mm256_cmp_ps(a, b, _CMP_EQ_OQ)
#define VMASK     _mm256_movemask_ps
#define VLOADI(p) _mm256_load_si256((const __m256i *)(p))
#define VCASTI    _mm256_castsi256_ps
#elif WIDE_SIMD
#define VL        4
#define V         __m128
#define VSET1     _mm_set1_ps
#define VLOAD     _mm_load_ps
#define VSTORE    _mm_store_ps
#define VSUB      _mm_sub_ps
#define VMUL      _mm_mul_ps
#define VMIN      _mm_min_ps
#define VMAX      _mm_max_ps
#define VOR       _mm_or_ps
#define VLE(a, b) _mm_cmple_ps(a, b)
#define VLT(a, b) _mm_cmplt_ps(a, b)
#define VEQ(a, b) _mm_cmpeq_ps(a, b)
#define VMASK     _mm_movemask_ps
#define VLOADI(p) _mm_load_si128((const __m128i *)(p))
#define VCASTI    _mm_castsi128_ps
#endif
/* Long: the hot per-ray loop; always_inline helpers for its child ordering changed the generated code
 * (trace_wide.c.o), and a quiet machine to show the speed unchanged was not at hand. */
WIDE_ATTR static inline __attribute__((always_inline)) bk_hit WIDE_NAME(const bk_wbvh *w, const bk_ray *ray,
                                                                        const int any_hit, bk_trace_stats *st)
{
    const bk_accel_view *a = &w->bin;
    bk_hit               h;
    h.t = BK_INF;
    h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
#if WIDE_SIMD
    /* rays parallel to a slab: the scalar code's bk_slab handles them (rare) */
    if (r.par) return any_hit ? wide_trace_scalar_any(w, ray, st) : wide_trace_scalar_closest(w, ray, st);
    const V ox = VSET1(r.o.x), oy = VSET1(r.o.y), oz = VSET1(r.o.z);
    const V ix = VSET1(r.inv.x), iy = VSET1(r.inv.y), iz = VSET1(r.inv.z);
    const V tmin4 = VSET1(r.tmin), widen = VSET1(1.0000004f);
    /* offsets in floats of the near and far planes in a node: lo_x 0, hi_x W, lo_y 2W, ... The
     * near plane of a positive direction is the lower bound, the same value bk_slab's min picks. */
    const int nx = r.inv.x >= 0.0f ? 0 : W, ny = r.inv.y >= 0.0f ? 2 * W : 3 * W, nz = r.inv.z >= 0.0f ? 4 * W : 5 * W;
    const int fx = nx ^ W, fy = ny ^ W, fz = nz ^ W;
#endif
    float               best = r.tmax;
    const bk_wbvh_tri4 *hblk = 0;
    int                 found = 0, hlane = 0;
#if WIDE_SIMD
    const wide_tri_pre tp = wide_tri_prepare(&r);
#endif
    int32_t stk_ref[WIDE_STACK];
    float   stk_t[WIDE_STACK];
    int     top = 0;
    int32_t ref = 0;
    for (;;) {
        while (ref >= 0) {
            const bk_wbvh_node *n = w->nodes + ref;
            st->nodes++;
            _Alignas(32) float tn[W];
            int                mask;
#if WIDE_SIMD
            const float *f = (const float *)n;
            const V      vbest = VSET1(bk_cull_far(best));
            mask = 0;
            for (int b = 0; b < W; b += VL) {
                V tnx = VMUL(VSUB(VLOAD(f + nx + b), ox), ix);
                V tny = VMUL(VSUB(VLOAD(f + ny + b), oy), iy);
                V tnz = VMUL(VSUB(VLOAD(f + nz + b), oz), iz);
                V tfx = VMUL(VSUB(VLOAD(f + fx + b), ox), ix);
                V tfy = VMUL(VSUB(VLOAD(f + fy + b), oy), iy);
                V tfz = VMUL(VSUB(VLOAD(f + fz + b), oz), iz);
                V t0 = VMAX(VMAX(tnx, tny), VMAX(tnz, tmin4));
                V t1 = VMIN(VMIN(tfx, tfy), VMIN(tfz, vbest));
                /* the far distance widened as in bk_slab */
                V ok = VOR(VLE(t0, VMUL(t1, widen)), VLE(t0, t1));
                mask |= VMASK(ok) << b;
                VSTORE(tn + b, t0);
            }
            mask &= (1 << n->count) - 1;
#else
            mask = 0;
            for (int i = 0; i < (int)n->count; ++i)
                mask |= bk_slab(&r, n->lo_x[i], n->hi_x[i], n->lo_y[i], n->hi_y[i], n->lo_z[i], n->hi_z[i], r.tmin,
                                bk_cull_far(best), &tn[i])
                        << i;
#endif
            if (!mask) {
                ref = BK_REF_NONE;
                break;
            }
            int c0 = __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
            if (!mask) {
                ref = n->child[c0];
                continue;
            }
            int c1 = __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
            if (any_hit) {
                /* any hit: the leaves first (in slot order), then the inner children farthest
                 * first. Rays that leave a surface (diffuse and shadow rays) find their occluder
                 * sooner so: the nearest boxes hold the surface they start on. One thread, 1M
                 * diffuse rays, Mrays/s (nodes per ray): sponza, slot order as Embree's
                 * occlusion rays 6.3 (4.0), leaves first 6.9 (3.45), and inner children
                 * farthest first 7.3 (3.0), nearest first 5.9 (3.9); dragon_vrip_res2 2.1 (9.1),
                 * 2.1 (9.0), 2.3 (7.6), 1.7 (10.4). */
                mask |= 1 << c0 | 1 << c1;
#if WIDE_SIMD
                /* without branches: each inner child's place is the number of inner children
                 * nearer than it (earlier slots first on equal distances), as the scalar code's
                 * stable insertion sort orders them */
                int leafbits = 0;
                for (int b = 0; b < W; b += VL) leafbits |= VMASK(VCASTI(VLOADI(n->child + b))) << b;
                int lm = mask & leafbits, inner = mask & ~leafbits, m2 = __builtin_popcount((unsigned)inner);
                while (inner) {
                    int     i = __builtin_ctz((unsigned)inner);
                    int     before = 0;
                    const V ti = VSET1(tn[i]);
                    for (int b = 0; b < W; b += VL) {
                        V tb = VLOAD(tn + b);
                        before |= (VMASK(VLT(tb, ti)) | (VMASK(VEQ(tb, ti)) & ((1 << i) - 1) >> b)) << b;
                    }
                    int     k = top + __builtin_popcount((unsigned)(before & mask & ~leafbits));
                    int32_t c = n->child[i];
                    wide_prefetch(w, c);
                    stk_ref[k] = c;
                    stk_t[k] = -BK_INF;
                    inner &= inner - 1;
                }
                top += m2;
#else
                int lm = 0, ii[W], m2 = 0;
                while (mask) {
                    int i = __builtin_ctz((unsigned)mask);
                    mask &= mask - 1;
                    int32_t c = n->child[i];
                    if (c < 0) {
                        lm |= 1 << i;
                        continue;
                    }
                    int j = m2++;
                    while (j > 0 && tn[i] < tn[ii[j - 1]]) {
                        ii[j] = ii[j - 1];
                        --j;
                    }
                    ii[j] = i;
                }
                for (int j = 0; j < m2; ++j) {
                    int32_t c = n->child[ii[j]];
                    wide_prefetch(w, c);
                    stk_ref[top] = c;
                    stk_t[top] = -BK_INF;
                    ++top;
                }
#endif
                while (lm) {
                    int32_t c = n->child[__builtin_ctz((unsigned)lm)];
                    lm &= lm - 1;
                    wide_prefetch(w, c);
                    stk_ref[top] = c;
                    stk_t[top] = -BK_INF;
                    ++top;
                }
                ref = stk_ref[--top];
                continue;
            }
            if (!mask) { /* two: enter the nearer, push the farther */
                int     swap = tn[c1] < tn[c0];
                int     cn = swap ? c1 : c0, cf = swap ? c0 : c1;
                int32_t far_ref = n->child[cf];
                wide_prefetch(w, far_ref);
                stk_ref[top] = far_ref;
                stk_t[top] = tn[cf];
                ++top;
                ref = n->child[cn];
                continue;
            }
            /* three or more: sort by entry distance (slot order on equal ones), push all but the
             * nearest, farthest first */
#if WIDE_SIMD
            { /* without branches: a child's rank is the number of hit children nearer than it */
                int all = mask | 1 << c0 | 1 << c1, m = __builtin_popcount((unsigned)all), rest = all;
                while (rest) {
                    int i = __builtin_ctz((unsigned)rest);
                    rest &= rest - 1;
                    int     before = 0;
                    const V ti = VSET1(tn[i]);
                    for (int b = 0; b < W; b += VL) {
                        V tb = VLOAD(tn + b);
                        before |= (VMASK(VLT(tb, ti)) | (VMASK(VEQ(tb, ti)) & ((1 << i) - 1) >> b)) << b;
                    }
                    int     rank = __builtin_popcount((unsigned)(before & all));
                    int32_t c = n->child[i];
                    if (rank == 0) {
                        ref = c;
                        continue;
                    }
                    int k = top + m - 1 - rank;
                    wide_prefetch(w, c);
                    stk_ref[k] = c;
                    stk_t[k] = tn[i];
                }
                top += m - 1;
                continue;
            }
#endif
            int idx[W], m = 2;
            idx[0] = c0;
            idx[1] = c1;
            while (mask) {
                idx[m++] = __builtin_ctz((unsigned)mask);
                mask &= mask - 1;
            }
            for (int i = 1; i < m; ++i) {
                int v = idx[i], j = i;
                while (j > 0 && tn[v] < tn[idx[j - 1]]) {
                    idx[j] = idx[j - 1];
                    --j;
                }
                idx[j] = v;
            }
            for (int i = m - 1; i > 0; --i) {
                int32_t c = n->child[idx[i]];
                wide_prefetch(w, c);
                stk_ref[top] = c;
                stk_t[top] = tn[idx[i]];
                ++top;
            }
            ref = n->child[idx[0]];
        }
        if (top > (int)st->depth) st->depth = (uint32_t)top;
        if (ref != BK_REF_NONE) { /* a leaf: blocks ~ref .. the one marked last */
            for (uint32_t bi = (uint32_t)~ref;; ++bi) {
                const bk_wbvh_tri4 *blk = w->tri4 + bi;
                float               tl[4];
#if WIDE_SIMD
                int hm = wide_tri4_sse41(&r, &tp, blk, a->tris, best, tl, st);
#else
                int hm = wide_tri4_scalar(&r, blk, a->tris, best, tl, st);
#endif
                while (hm) { /* in record order, as the binary traversal tests them */
                    int l = __builtin_ctz((unsigned)hm);
                    hm &= hm - 1;
                    float t = tl[l];
                    if (a->alpha) { /* the cut-out filter of every leaf test (bk_alpha_keep) */
                        const uint32_t rec = blk->rec[l] & BK_WBVH_REC;
                        if (bk_float_bits(a->tris[3 * (size_t)rec + 1].w) && !bk_alpha_keep(a, ray, rec, t)) continue;
                    }
                    if (any_hit) {
                        h.t = t;
                        h.tri = blk->id[l];
                        return h;
                    }
                    if (t > best) continue;
                    if (!found || bk_hit_better(t, blk->id[l], best, hblk->id[hlane])) {
                        best = t;
                        hblk = blk;
                        hlane = l;
                        found = 1;
                    }
                }
                if (blk->rec[0] & BK_WBVH_BLOCK_LAST) break;
            }
        }
        /* pop, dropping entries that start beyond the closest hit (widened as the slab test) */
        for (;;) {
            if (!top) goto done;
            --top;
            float       t = stk_t[top];
            const float far = bk_cull_far(best);
            if (t <= far * 1.0000004f || t <= far) break;
        }
        ref = stk_ref[top];
    }
done:
    st->aux = 0;
    if (found) { /* bk_hit_refine's precise t, from the block's copy of the vertices */
        const float *v = &hblk->v[0][0];
        h.tri = hblk->id[hlane];
        h.t = bk_tri_refine_t(ray, bk_v3(v[0 + hlane], v[4 + hlane], v[8 + hlane]),
                              bk_v3(v[12 + hlane], v[16 + hlane], v[20 + hlane]),
                              bk_v3(v[24 + hlane], v[28 + hlane], v[32 + hlane]), best);
    }
    return h;
}
#undef W
#if WIDE_SIMD
#undef VL
#undef V
#undef VSET1
#undef VLOAD
#undef VSTORE
#undef VSUB
#undef VMUL
#undef VMIN
#undef VMAX
#undef VOR
#undef VLE
#undef VLT
#undef VEQ
#undef VMASK
#undef VLOADI
#undef VCASTI
#endif
