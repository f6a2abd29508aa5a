/* The portable scan of greedy_scan.c, included there for the compiler's target: KERNEL(name)
 * names the copy, KERNEL_TARGET is its target attribute and KERNEL_LANES the width of the
 * target's vectors in 32-bit lanes (4 for SSE2), a divisor of LANES. A row of 16 lanes is
 * processed as LANES / KERNEL_LANES vectors of the target's own width: wider GCC vectors are
 * split by the compiler, and their comparisons lane by lane. */
#define KV KERNEL(kv)
#define PARTS (LANES / KERNEL_LANES)
typedef uint32_t KV __attribute__((vector_size(4 * KERNEL_LANES)));
typedef int32_t KERNEL(ikv) __attribute__((vector_size(4 * KERNEL_LANES)));

KERNEL_TARGET INLINE KV KERNEL(splat)(uint32_t x)
{
    KV v;
    for (unsigned j = 0; j < KERNEL_LANES; j++)
        v[j] = x;
    return v;
}

/* x < y as unsigned: SSE2 and AVX2 compare signed lanes only, so both sides get their sign bits
 * flipped. */
KERNEL_TARGET INLINE KV KERNEL(ult)(KV x, KV y)
{
    const KV sign = KERNEL(splat)(UINT32_C(0x80000000));
    return (KV)((KERNEL(ikv))(x ^ sign) < (KERNEL(ikv))(y ^ sign));
}

KERNEL_TARGET INLINE KV KERNEL(max)(KV x, KV y)
{
    const KV m = KERNEL(ult)(y, x);
    return (x & m) | (y & ~m);
}

KERNEL_TARGET INLINE KV KERNEL(load)(const uint32_t *p)
{
    KV v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Whether any lane of v is set (KERNEL_ANY: one instruction where the includer has one). */
KERNEL_TARGET INLINE int KERNEL(any)(KV v)
{
#ifdef KERNEL_ANY
    return KERNEL_ANY(v);
#else
    uint32_t any = 0;
    for (unsigned j = 0; j < KERNEL_LANES; j++)
        any |= v[j];
    return any != 0;
#endif
}

KERNEL_TARGET __attribute__((unused)) static void KERNEL(scan_generic)(worker *w, const query *q)
{
    const KV S = KERNEL(splat)(q->size), QF = KERNEL(splat)(q->first);
    const KV QL = KERNEL(splat)(q->last), KEY = KERNEL(splat)(q->key_mask);
    const KV ALIGN_1 = KERNEL(splat)(q->align - 1), ALIGN_MASK = KERNEL(splat)(~(q->align - 1));
    const KV NONE = KERNEL(splat)(UINT32_MAX), ZERO = KERNEL(splat)(0);
    KV best_gap[PARTS], best_start[PARTS];
    for (unsigned p = 0; p < PARTS; p++)
        best_gap[p] = best_start[p] = NONE;
    uint32_t bound = w->in_bound;
    w->rec_n = 0;
    for (size_t c = 0; c < w->n; c++) {
        chunk *ch = w->chunks[c];
        uint32_t u[LANES];
        lane_bound_values(ch, &bound, u);
        KV U[PARTS], e[PARTS];
        for (unsigned p = 0; p < PARTS; p++) {
            U[p] = KERNEL(load)(u + p * KERNEL_LANES);
            e[p] = ZERO;
        }
        ch->rec_from = w->rec_n;
        for (uint32_t k = 0; k < ch->depth; k++) {
#pragma GCC unroll 4
            for (unsigned p = 0; p < PARTS; p++) {
                const size_t at_row = (size_t)k * LANES + p * KERNEL_LANES;
                const KV a = KERNEL(load)(ch->a + at_row), b = KERNEL(load)(ch->b + at_row);
                const KV f = KERNEL(load)(ch->f + at_row), l = KERNEL(load)(ch->l + at_row);
                const KV unsure = KERNEL(ult)(e[p], U[p]);
                const KV m = ~KERNEL(ult)(QL, f) & ~KERNEL(ult)(l, QF);
                /* a conflicting tensor starts above e and the aligned rest holds the query */
                const KV at = (e[p] + ALIGN_1) & ALIGN_MASK;
                const KV room = KERNEL(max)(a, at) - at;
                const KV ok = m & ~KERNEL(ult)(room, S);
                const KV gap = (a - e[p]) & KEY;
                const KV upd = ok & ~unsure & KERNEL(ult)(gap, best_gap[p]);
                best_gap[p] = (gap & upd) | (best_gap[p] & ~upd);
                best_start[p] = (e[p] & upd) | (best_start[p] & ~upd);
                const KV record = ok & unsure;
                if (KERNEL(any)(record)) {
                    if (!reserve_records(w)) {
                        w->failed = 1;
                        return;
                    }
                    for (unsigned j = 0; j < KERNEL_LANES; j++)
                        if (record[j] != 0) {
                            w->rec_e[w->rec_n] = e[p][j];
                            w->rec_a[w->rec_n] = a[j];
                            w->rec_lane[w->rec_n++] = (unsigned char)(p * KERNEL_LANES + j);
                        }
                }
                e[p] = KERNEL(max)(e[p], b & m);
            }
        }
        ch->rec_to = w->rec_n;
        for (unsigned p = 0; p < PARTS; p++)
            memcpy(ch->lane_max + p * KERNEL_LANES, &e[p], sizeof e[p]);
    }
    for (unsigned p = 0; p < PARTS; p++) {
        memcpy(w->best_gap + p * KERNEL_LANES, &best_gap[p], sizeof best_gap[p]);
        memcpy(w->best_start + p * KERNEL_LANES, &best_start[p], sizeof best_start[p]);
    }
}

#undef KV
#undef PARTS
