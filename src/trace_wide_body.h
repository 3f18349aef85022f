/* trace_wide_body.h - the body of the wide BVH traversal, included by src/trace_wide.c once per
 * instruction set (WIDE_SIMD 0: scalar, 1: SSE4.1) with WIDE_NAME the function to define and
 * WIDE_ATTR its target attribute. Not a header of its own: it has no include guard on purpose.
 *
 * One ray, Embree's single-ray scheme: the slab test of a node's four child boxes at once, the
 * hit children ordered by entry distance, the nearest entered at once and the others pushed as
 * (child, entry distance) far to near; a popped entry farther than the closest hit so far is
 * dropped without fetching its node. Triangles: the binary traversal's records and test
 * (bk_tri_intersect), its precise t (bk_tri_refine_t) and its choice between equal-t hits
 * (bk_bvh4_later, see bvh_wide.h).
 */
WIDE_ATTR static inline __attribute__((always_inline)) bk_hit WIDE_NAME(const bk_bvh4 *w, const bk_ray *ray,
                                                                         const int any_hit, bk_trace_stats *st)
{
    const bk_accel_view *a = &w->bin;
    bk_hit h;
    h.t = BK_INF; h.tri = BK_NO_HIT;
    bk_ray_pre r = bk_ray_prepare(ray);
    if (!r.valid) return h;
#if WIDE_SIMD
    /* rays parallel to a slab: the scalar code's bk_slab handles them (rare) */
    if (r.par) return any_hit ? wide_trace_scalar_any(w, ray, st) : wide_trace_scalar_closest(w, ray, st);
    const __m128 ox = _mm_set1_ps(r.o.x), oy = _mm_set1_ps(r.o.y), oz = _mm_set1_ps(r.o.z);
    const __m128 ix = _mm_set1_ps(r.inv.x), iy = _mm_set1_ps(r.inv.y), iz = _mm_set1_ps(r.inv.z);
    const __m128 tmin4 = _mm_set1_ps(r.tmin), widen = _mm_set1_ps(1.0000004f);
    /* offsets in floats of the near and far planes in a node: lo_x 0, hi_x 4, lo_y 8, ... The
     * near plane of a positive direction is the lower bound, the same value bk_slab's min picks. */
    const int nx = r.inv.x >= 0.0f ? 0 : 4, ny = r.inv.y >= 0.0f ? 8 : 12, nz = r.inv.z >= 0.0f ? 16 : 20;
    const int fx = nx ^ 4, fy = ny ^ 4, fz = nz ^ 4;
#endif
    float best = r.tmax;
    uint32_t hrec = 0;
    int32_t stk_ref[WIDE_STACK];
    float stk_t[WIDE_STACK];
    int top = 0;
    int32_t ref = 0;
    for (;;) {
        while (ref >= 0) {
            const bk_bvh4_node *n = w->nodes + ref;
            st->nodes++;
            BK_ALIGN16 float tn[4];
            int mask;
#if WIDE_SIMD
            const float *f = (const float *)n;
            __m128 tnx = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + nx), ox), ix);
            __m128 tny = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + ny), oy), iy);
            __m128 tnz = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + nz), oz), iz);
            __m128 tfx = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + fx), ox), ix);
            __m128 tfy = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + fy), oy), iy);
            __m128 tfz = _mm_mul_ps(_mm_sub_ps(_mm_load_ps(f + fz), oz), iz);
            __m128 t0 = _mm_max_ps(_mm_max_ps(tnx, tny), _mm_max_ps(tnz, tmin4));
            __m128 t1 = _mm_min_ps(_mm_min_ps(tfx, tfy), _mm_min_ps(tfz, _mm_set1_ps(best)));
            /* the far distance widened as in bk_slab */
            __m128 ok = _mm_or_ps(_mm_cmple_ps(t0, _mm_mul_ps(t1, widen)), _mm_cmple_ps(t0, t1));
            mask = _mm_movemask_ps(ok) & ((1 << n->count) - 1);
            _mm_store_ps(tn, t0);
#else
            mask = 0;
            for (int i = 0; i < (int)n->count; ++i)
                mask |= bk_slab(&r, n->lo_x[i], n->hi_x[i], n->lo_y[i], n->hi_y[i], n->lo_z[i], n->hi_z[i], r.tmin, best,
                                &tn[i]) << i;
#endif
            if (!mask) { ref = BK_REF_NONE; break; }
            int c0 = __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
            if (!mask) { ref = n->child[c0]; continue; }
            int c1 = __builtin_ctz((unsigned)mask);
            mask &= mask - 1;
            if (!mask) {                  /* two: enter the nearer, push the farther */
                int swap = tn[c1] < tn[c0];
                int cn = swap ? c1 : c0, cf = swap ? c0 : c1;
                int32_t far_ref = n->child[cf];
                wide_prefetch(w, far_ref);
                stk_ref[top] = far_ref; stk_t[top] = tn[cf]; ++top;
                ref = n->child[cn];
                continue;
            }
            /* three or four: sort by entry distance (slot order on equal ones), push all but the
             * nearest, farthest first */
            int idx[4], m = 2;
            idx[0] = c0; idx[1] = c1;
            while (mask) { idx[m++] = __builtin_ctz((unsigned)mask); mask &= mask - 1; }
            for (int i = 1; i < m; ++i) {
                int v = idx[i], j = i;
                while (j > 0 && tn[v] < tn[idx[j - 1]]) { idx[j] = idx[j - 1]; --j; }
                idx[j] = v;
            }
            for (int i = m - 1; i > 0; --i) {
                int32_t c = n->child[idx[i]];
                wide_prefetch(w, c);
                stk_ref[top] = c; stk_t[top] = tn[idx[i]]; ++top;
            }
            ref = n->child[idx[0]];
        }
        if (top > (int)st->depth) st->depth = (uint32_t)top;
        if (ref != BK_REF_NONE) {         /* a leaf: records ~ref .. the one marked last */
            for (uint32_t rec = (uint32_t)~ref;; ++rec) {
                const bk_f4 *q = a->tris + 3 * (size_t)rec;
                uint32_t id = bk_float_bits(q[0].w);
                float t;
                st->tris++;
                if (bk_tri_intersect(&r, bk_f4_xyz(q[0]), bk_f4_xyz(q[1]), bk_f4_xyz(q[2]), best, &t)) {
                    if (any_hit) { h.t = t; h.tri = id & BK_TRI_ID; return h; }
                    if (t < best || h.tri == BK_NO_HIT || bk_bvh4_later(w, &r, hrec, rec)) {
                        best = t; h.t = t; h.tri = id & BK_TRI_ID; hrec = rec;
                    }
                }
                if (id & BK_TRI_LAST) break;
            }
        }
        /* pop, dropping entries that start beyond the closest hit (widened as the slab test) */
        for (;;) {
            if (!top) goto done;
            --top;
            float t = stk_t[top];
            if (t <= best * 1.0000004f || t <= best) break;
        }
        ref = stk_ref[top];
    }
done:
    st->aux = 0;
    return bk_hit_refine(a, ray, h, hrec, any_hit, st);
}
