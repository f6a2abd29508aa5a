/* The portable parts of plan_scan.c, included there once per instruction set with KERNEL(name)
 * naming the copy and KERNEL_TARGET its target attribute. */
#ifndef FIT_GENERIC
/* ok: a tensor conflicting with the query starts above e and the aligned rest of the gap below
 * it holds the query; gap: the key compared, (start - e) & key_mask. */
#define FIT_GENERIC(a, e, m, ok, gap)                                                              \
    do {                                                                                           \
        const vec at_ = (e + ALIGN_1) & ALIGN_MASK;                                                \
        const vec room_ = vmax(a, at_) - at_;                                                      \
        ok = m & ~ult(room_, S);                                                                   \
        gap = (a - e) & KEY;                                                                       \
    } while (0)
#endif

KERNEL_TARGET __attribute__((unused)) static void KERNEL(scan_generic)(worker *w, const query *q)
{
    const vec S = splat(q->size), QF = splat(q->first), QL = splat(q->last);
    const vec ALIGN_1 = splat(q->align - 1), ALIGN_MASK = splat(~(q->align - 1));
    const vec KEY = splat(q->key_mask), NONE = splat(UINT32_MAX);
    vec best_gap = NONE, best_start = NONE;
    uint32_t bound = w->in_bound;
    w->rec_n = 0;
    for (size_t c = 0; c < w->n; c++) {
        chunk *ch = w->chunks[c];
        const vec U = lane_bounds(ch, &bound);
        vec e = splat(0);
        ch->rec_from = w->rec_n;
        for (uint32_t k = 0; k < ch->depth; k++) {
            const vec unsure = ult(e, U);
            const vec a = load(ch->a + k * LANES), b = load(ch->b + k * LANES);
            const vec f = load(ch->f + k * LANES), l = load(ch->l + k * LANES);
            const vec m = ~ult(QL, f) & ~ult(l, QF);
            vec ok, gap;
            FIT_GENERIC(a, e, m, ok, gap);
            const vec upd = ok & ~unsure & ult(gap, best_gap);
            best_gap = (gap & upd) | (best_gap & ~upd);
            best_start = (e & upd) | (best_start & ~upd);
            const vec record = ok & unsure;
            uint32_t any = 0;
            for (unsigned j = 0; j < LANES; j++)
                any |= record[j];
            for (unsigned j = 0; any != 0 && j < LANES; j++) {
                if (record[j] == 0)
                    continue;
                if (!reserve_records(w)) {
                    w->failed = 1;
                    return;
                }
                w->rec_e[w->rec_n] = e[j];
                w->rec_a[w->rec_n] = a[j];
                w->rec_lane[w->rec_n++] = (unsigned char)j;
            }
            e = vmax(e, b & m);
        }
        ch->rec_to = w->rec_n;
        ch->lane_max = e;
    }
    w->best_gap = best_gap;
    w->best_start = best_start;
}
