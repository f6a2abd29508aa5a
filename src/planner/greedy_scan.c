/* The greedy of docs/planner.md ("Semantics") by scanning every placed tensor in address order.
 *
 * greedy_tree.c keeps placed tensors in a segment tree over time, which is fast when few of them
 * conflict with each new one. When lifetimes are long, a large share of all placed tensors
 * conflict with every new one, their union has hundreds of gaps, and the tree's answer is the
 * union of some thirty large sets: about 10 s for 1e5 tensors whose lifetimes reach half the
 * graph. This file does the opposite. Placed tensors are kept sorted by start address, and each
 * placement reads all of them once, 16 at a time, with four 32-bit words per tensor (start,
 * end, first and last use; the narrow AVX2 form reads three: start, end and both uses packed
 * in one word, see pack_times). Walking in address order, the union's end so far is a running
 * maximum E over the ends of conflicting tensors; a conflicting tensor starting above E closes
 * the gap [E, start). The smallest fitting gap (lowest on a tie) and the final E (where the
 * union ends, for appending) are the whole answer: no set is built.
 *
 * Layout. The sorted sequence is cut into chunks of up to 16 x 2048 tensors, and a chunk into
 * 16 lanes: lane j holds a contiguous run of the chunk's sequence, and row k holds the k-th
 * tensor of every lane, so one vector load reads one tensor of each lane. Every lane keeps its
 * own running maximum, so the scan needs no shuffles; what a lane cannot know is the union's
 * end before its first tensor (the carry c). It starts from 0. While its maximum e is below U,
 * the largest end among all tensors before it (a bound of c, kept per lane whatever the
 * lifetimes), the gaps it finds are recorded as (e, start) instead of compared: once the
 * carries are known, the true gap below that start is [max(c, e), start), if any. Beyond that
 * e >= c and its gaps are exact. So chunks are independent: with several processors, each
 * thread owns a contiguous part of the chunks, inserts into them and scans them, and they stay
 * in its cache; the calling thread then walks the lanes' maxima in order for the carries.
 *
 * Cost: every placement reads every placed tensor, O(n^2) for n tensors, at about 0.06 ns per
 * tensor on one Zen 4 core with AVX-512 (16 lanes of 32 bits, 12 bytes a tensor: about 3 ns
 * a row, bound by its instructions rather than its bytes: reading the end as a 16-bit size
 * instead, 10 bytes a tensor, took the same time at 3e5 and 1e6 tensors). tp_greedy_place
 * uses it only when lifetimes are long (see greedy_tree.c), and only for addresses below
 * 4 GiB. */
#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/clock.h"
#include "common/grow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define X86_KERNELS 1 /* AVX2 and AVX-512 versions, chosen at run time */
#else
#define X86_KERNELS 0
#endif

#define LANES 16
/* Rows of a chunk. Deeper chunks are read in longer runs of each array and set up less often
 * per query (the rows that test sureness are not what they save: 1.5% of all rows at 1e5),
 * and cost more to insert into (the rows after the new tensor shift). 2,048 against 1,024:
 * 1e5 random lifetimes 1.11-1.16 -> 0.97-0.98 s on one thread, 1e6 about 135 -> 103-112 s of
 * CPU (BENCHMARKS.md); 4,096 gained no more at 1e6 and leaves too few chunks at 1e5 to share
 * evenly between two threads. */
#define DEPTH 2048
#define CAP (LANES * DEPTH)
#define NO_TIME UINT32_MAX /* first use of an empty slot: conflicts with nothing */
/* The packed word of an empty slot: first use 0x7fff, above every packed first use, and a
 * high half that no query's equals (see pack_times) */
#define EMPTY_TIMES 0x80007fffu
#define MAX_THREADS 8

typedef struct chunk {
    uint32_t a[CAP], b[CAP], f[CAP], l[CAP]; /* tensor k of lane j at k * LANES + j */
    uint32_t t[CAP]; /* f and l packed (pack_times), read by the narrow AVX2 form */
    uint32_t cnt[LANES];
    uint32_t b_max[LANES];   /* the largest end in each lane, whatever the lifetimes */
    uint32_t total, depth;   /* tensors; the longest lane */
    uint32_t lane_max[LANES]; /* last scan: running maximum of each lane, from 0 */
    size_t rec_from, rec_to; /* last scan: its candidates recorded while unsure */
} chunk;

/* One query: a tensor to place. */
typedef struct query {
    uint32_t size, first, last;
    uint32_t align;    /* a power of two */
    uint32_t key_mask; /* all ones: best fit (gap, then start); 0: first fit (start) */
    int narrow;        /* every rank, end and the size below 2^31: see avx2_narrow_half_row */
    uint32_t packed;   /* [first, last] as pack_times packs a query */
} query;

struct scan;

/* One thread's part of the address order, and its last results. */
typedef struct worker {
    chunk **chunks;
    size_t n, cap;
    size_t tensors;
    uint32_t b_max;    /* the largest end among its tensors (pending one included) */
    uint32_t in_bound; /* the largest end among the tensors of the workers before it */
    int pending;       /* an insertion to make before the next scan */
    uint32_t pa, pb, pf, pl;
    int failed;         /* an allocation failed in its thread */
    uint32_t *scratch;  /* 4 x CAP words for re-dealing a chunk, made on first use */
    uint32_t best_gap[LANES], best_start[LANES]; /* last scan: per lane */
    /* candidates found while a lane was unsure: the lane's maximum then, the start of the
     * tensor above, the lane */
    uint32_t *rec_e, *rec_a;
    unsigned char *rec_lane;
    size_t rec_n, rec_cap;
    struct scan *scan;
    pthread_t thread;
    int started;
    double turn_at; /* a helper: when it began its turn on the current query (note_wait) */
} worker;

typedef struct scan {
    worker w[MAX_THREADS];
    unsigned threads;
    int level; /* 0: portable, 1: AVX2, 2: AVX-512 */
    unsigned time_shift; /* pack_times: ranks >> time_shift stay below 0x7fff */
    query q;
    _Atomic unsigned go;   /* incremented for each query */
    _Atomic unsigned done; /* helpers finished with the current query */
    _Atomic int quit;
    /* A thread that has waited long sleeps on `wake` (see wait_for) */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic int sleepers;
    /* Over the current window of queries: how many, and in how many a helper began its part
     * later than the calling thread finished its own (see note_wait). */
    unsigned window, waited;
    size_t share_from; /* the helpers take their parts from this many tensors placed */
} scan;

static void clear_slots(chunk *c, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        c->a[i] = c->b[i] = 0;
        c->f[i] = NO_TIME;
        c->l[i] = 0;
        c->t[i] = EMPTY_TIMES;
    }
}

/* A lifetime [f, l] in one word for the narrow AVX2 form: the low half f >> shift, the high
 * half 0x7fff - (l >> shift), both below 0x7fff (tp_scan_place picks shift for that). A query
 * packs [QF, QL] as QL >> shift and 0x7fff - (QF >> shift); a signed 16-bit comparison of a
 * stored word with the query's then says in its low half f' > QL' and in its high half
 * QF' > l' (the ' for shifted), each of which means for sure that the lifetimes are apart,
 * and equal halves leave it open. An empty slot's low half 0x7fff is above every QL', and
 * its high half 0x8000 equals no query's (at least 1). */
static inline uint32_t pack_times(uint32_t f, uint32_t l, unsigned shift)
{
    return (f >> shift) | (0x7fffu - (l >> shift)) << 16;
}

static chunk *chunk_new(void)
{
    chunk *c = aligned_alloc(64, (sizeof(chunk) + 63) / 64 * 64);
    if (c == NULL)
        return NULL;
    clear_slots(c, 0, CAP);
    memset(c->cnt, 0, sizeof c->cnt);
    memset(c->b_max, 0, sizeof c->b_max);
    c->total = c->depth = 0;
    return c;
}

static uint32_t chunk_first(const chunk *c)
{
    for (unsigned j = 0; j < LANES; j++)
        if (c->cnt[j] > 0)
            return c->a[j];
    return 0;
}

/* Copies the chunk's tensors in address order into t[4][...]; returns how many. */
static uint32_t chunk_gather(const chunk *c, uint32_t *t)
{
    uint32_t p = 0;
    for (unsigned j = 0; j < LANES; j++)
        for (uint32_t k = 0; k < c->cnt[j]; k++, p++) {
            const uint32_t i = k * LANES + j;
            t[p] = c->a[i];
            t[CAP + p] = c->b[i];
            t[2 * CAP + p] = c->f[i];
            t[3 * CAP + p] = c->l[i];
        }
    return p;
}

/* Fills c with t[4][from .. from + n), spread evenly over the lanes (shift: pack_times). */
static void chunk_deal(chunk *c, const uint32_t *t, uint32_t from, uint32_t n, unsigned shift)
{
    clear_slots(c, 0, c->depth * LANES); /* rows below the depth are clear already */
    const uint32_t per = n / LANES, extra = n % LANES;
    uint32_t p = from, depth = 0;
    for (unsigned j = 0; j < LANES; j++) {
        const uint32_t k_n = per + (j < extra);
        c->cnt[j] = k_n;
        c->b_max[j] = 0;
        depth = k_n > depth ? k_n : depth;
        for (uint32_t k = 0; k < k_n; k++, p++) {
            const uint32_t i = k * LANES + j;
            c->a[i] = t[p];
            c->b[i] = t[CAP + p];
            c->f[i] = t[2 * CAP + p];
            c->l[i] = t[3 * CAP + p];
            c->t[i] = pack_times(c->f[i], c->l[i], shift);
            c->b_max[j] = c->b[i] > c->b_max[j] ? c->b[i] : c->b_max[j];
        }
    }
    c->total = n;
    c->depth = depth;
}

/* Room in the worker's list for one more chunk. */
static int chunks_room(worker *w)
{
    return TP_GROW(&w->chunks, &w->cap, w->n + 1) == TP_OK;
}

/* Inserts one tensor into the worker's chunks (made by the worker's own thread; the caller
 * counts it in w->tensors). */
static int worker_insert(worker *w, uint32_t a, uint32_t b, uint32_t f, uint32_t l)
{
    if (w->n == 0) {
        if (!chunks_room(w) || (w->chunks[0] = chunk_new()) == NULL)
            return 0;
        w->n = 1;
    }
    size_t lo = 0, hi = w->n; /* the last chunk starting at or below a, else the first */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (chunk_first(w->chunks[mid]) <= a)
            lo = mid;
        else
            hi = mid;
    }
    for (;;) {
        chunk *c = w->chunks[lo];
        unsigned lane = LANES;
        for (unsigned j = 0; j < LANES; j++) {
            if (c->cnt[j] == 0)
                continue;
            if (lane == LANES || c->a[j] <= a)
                lane = j;
            else
                break;
        }
        if (lane == LANES)
            lane = 0;
        /* Lanes are kept near the chunk's average length: a chunk is read to the depth of its
         * longest lane. (Early on this also spreads a few tensors over all lanes.) */
        const uint32_t n = c->cnt[lane];
        const uint32_t even = c->total / LANES + 1;
        const uint32_t limit = even + even / 4 + 4 < DEPTH ? even + even / 4 + 4 : DEPTH;
        if (n < limit) {
            uint32_t p = 0, q = n;
            while (p < q) {
                const uint32_t mid = (p + q) / 2;
                if (c->a[mid * LANES + lane] <= a)
                    p = mid + 1;
                else
                    q = mid;
            }
            for (uint32_t k = n; k > p; k--) {
                const uint32_t to = k * LANES + lane, from = to - LANES;
                c->a[to] = c->a[from];
                c->b[to] = c->b[from];
                c->f[to] = c->f[from];
                c->l[to] = c->l[from];
                c->t[to] = c->t[from];
            }
            const uint32_t i = p * LANES + lane;
            c->a[i] = a;
            c->b[i] = b;
            c->f[i] = f;
            c->l[i] = l;
            c->t[i] = pack_times(f, l, w->scan->time_shift);
            c->cnt[lane]++;
            c->b_max[lane] = b > c->b_max[lane] ? b : c->b_max[lane];
            c->total++;
            if (c->cnt[lane] > c->depth)
                c->depth = c->cnt[lane];
            return 1;
        }
        /* The lane is long: spread the chunk evenly again, or split it in two. */
        if (w->scratch == NULL && (w->scratch = malloc(4 * (size_t)CAP * sizeof *w->scratch)) == NULL)
            return 0;
        uint32_t *t = w->scratch;
        const uint32_t total = chunk_gather(c, t);
        if (total < CAP - CAP / 4) {
            chunk_deal(c, t, 0, total, w->scan->time_shift);
            continue;
        }
        chunk *d = chunks_room(w) ? chunk_new() : NULL;
        if (d == NULL)
            return 0;
        chunk_deal(c, t, 0, total / 2, w->scan->time_shift);
        chunk_deal(d, t, total / 2, total - total / 2, w->scan->time_shift);
        memmove(w->chunks + lo + 2, w->chunks + lo + 1, (w->n - lo - 1) * sizeof *w->chunks);
        w->chunks[lo + 1] = d;
        w->n++;
        if (a >= chunk_first(d))
            lo++;
    }
}

/* U of each lane of c: the largest end among all tensors before the lane's first one in address
 * order (`*bound` on entry: those before the chunk; on return: those up to its end). The carry
 * into the lane, the largest end among those that conflict, cannot exceed it. An empty lane
 * gets 0: there is nothing in it to be unsure about. */
static inline void lane_bound_values(const chunk *c, uint32_t *bound, uint32_t *u)
{
    uint32_t x = *bound;
    for (unsigned j = 0; j < LANES; j++) {
        u[j] = c->cnt[j] ? x : 0;
        x = c->b_max[j] > x ? c->b_max[j] : x;
    }
    *bound = x;
}

#define INLINE static inline __attribute__((always_inline))

/* Room for 16 more records in the worker's list. */
static int reserve_records(worker *w)
{
    if (w->rec_n + LANES <= w->rec_cap)
        return 1;
    /* three parallel arrays of one capacity: tp_grow gives each the same new one */
    size_t c_e = w->rec_cap, c_a = w->rec_cap, c_lane = w->rec_cap;
    if (TP_GROW(&w->rec_e, &c_e, w->rec_n + LANES) != TP_OK ||
        TP_GROW(&w->rec_a, &c_a, w->rec_n + LANES) != TP_OK ||
        TP_GROW(&w->rec_lane, &c_lane, w->rec_n + LANES) != TP_OK)
        return 0;
    w->rec_cap = c_e;
    return 1;
}

/* The portable scan (greedy_scan_generic.h), compiled for the target; on x86-64 the AVX2 and
 * AVX-512 forms below are picked at run time when the processor has them. */
#define KERNEL(name) name##_default
#define KERNEL_TARGET
#define KERNEL_LANES 4
#if X86_KERNELS
#define KERNEL_ANY(v) (_mm_movemask_epi8((__m128i)(v)) != 0) /* SSE2, in every x86-64 */
#endif
#include "planner/greedy_scan_generic.h"
#undef KERNEL
#undef KERNEL_TARGET
#undef KERNEL_LANES
#undef KERNEL_ANY

#if X86_KERNELS
/* Runs body(w, q, aligned, keyed, narrow) with aligned (an alignment above 1), keyed (best
 * fit) and narrow as constants, so that the compiler makes one copy of body for each and no
 * needless constant takes a register (the vector forms below). */
#define SCAN_FORMS(body, w, q)                                                                 \
    do {                                                                                       \
        const int aligned_ = (q)->align > 1, keyed_ = (q)->key_mask != 0;                      \
        if ((q)->narrow)                                                                       \
            SCAN_FORMS_OF(body, w, q, aligned_, keyed_, 1);                                    \
        else                                                                                   \
            SCAN_FORMS_OF(body, w, q, aligned_, keyed_, 0);                                    \
    } while (0)
#define SCAN_FORMS_OF(body, w, q, aligned, keyed, narrow)                                      \
    do {                                                                                       \
        if (!(aligned) && (keyed))                                                             \
            body(w, q, 0, 1, narrow);                                                          \
        else if (!(aligned))                                                                   \
            body(w, q, 0, 0, narrow);                                                          \
        else if (keyed)                                                                        \
            body(w, q, 1, 1, narrow);                                                          \
        else                                                                                   \
            body(w, q, 1, 0, narrow);                                                          \
    } while (0)

/* The same scan with AVX-512 (F and BW): 16 lanes a vector, comparisons into mask registers,
 * recorded candidates stored by compression. Compiled for AVX-512 whatever the target, and
 * only called when the processor has it. Like the AVX2 form below it reads the lifetimes as
 * the packed words t (pack_times: 12 bytes a tensor, not 16) and a chunk's rows in two loops
 * (while some lane is unsure, then without the test and the recording), and is compiled for
 * each of aligned, keyed and narrow. The packed test: QW - t in 16-bit halves is negative in
 * a half that says for sure that the lifetimes are apart (an empty slot's too, see
 * pack_times), so a lane meets the query where neither half's sign is set; a row where a
 * half is 0 (the halves equal) is tested on the exact ranks instead. Narrow (every address,
 * end and the size below 2^31): the room a - at is compared as a signed number, without the
 * max that keeps an unsigned a - at from wrapping. */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline __mmask16
avx512_meet(const chunk *ch, size_t at, __m512i QW, __m512i QF, __m512i QL)
{
    const __m512i t = _mm512_loadu_si512(ch->t + at);
    if (__builtin_expect(_mm512_cmpeq_epi16_mask(t, QW) == 0, 1))
        return _mm512_testn_epi32_mask(_mm512_sub_epi16(QW, t),
                                       _mm512_set1_epi32((int)0x80008000u));
    const __m512i f = _mm512_loadu_si512(ch->f + at), l = _mm512_loadu_si512(ch->l + at);
    return _mm512_mask_cmple_epu32_mask(_mm512_cmpge_epu32_mask(l, QF), f, QL);
}

/* Stores the candidates (e, a) of the lanes in record; 0 when the records cannot grow. */
__attribute__((target("avx512f"))) static int avx512_record(worker *w, __m512i e, __m512i a,
                                                           __mmask16 record)
{
    if (!reserve_records(w))
        return 0;
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_storeu_si512(w->rec_e + w->rec_n, _mm512_maskz_compress_epi32(record, e));
    _mm512_storeu_si512(w->rec_a + w->rec_n, _mm512_maskz_compress_epi32(record, a));
    uint32_t lanes[LANES];
    _mm512_storeu_si512(lanes, _mm512_maskz_compress_epi32(record, lane));
    const unsigned n_rec = (unsigned)__builtin_popcount(record);
    for (unsigned r = 0; r < n_rec; r++)
        w->rec_lane[w->rec_n + r] = (unsigned char)lanes[r];
    w->rec_n += n_rec;
    return 1;
}

typedef struct avx512_lanes {
    __m512i e, best_gap, best_start, u;
} avx512_lanes;

/* One row k of a chunk; 0 when recording ran out of memory (never with all_sure). */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline int
avx512_row(worker *w, const chunk *ch, uint32_t k, avx512_lanes *x, __m512i QW, __m512i QF,
           __m512i QL, __m512i S, __m512i A1, __m512i AM, int aligned, int keyed, int narrow,
           int all_sure)
{
    const size_t at_row = (size_t)k * LANES;
    const __mmask16 m = avx512_meet(ch, at_row, QW, QF, QL);
    const __m512i a = _mm512_loadu_si512(ch->a + at_row);
    const __m512i at = aligned ? _mm512_and_si512(_mm512_add_epi32(x->e, A1), AM) : x->e;
    __mmask16 ok;
    if (narrow)
        ok = _mm512_mask_cmpge_epi32_mask(m, _mm512_sub_epi32(a, at), S);
    else
        ok = _mm512_mask_cmpge_epu32_mask(m, _mm512_sub_epi32(_mm512_max_epu32(a, at), at), S);
    const __mmask16 unsure = all_sure ? 0 : _mm512_cmplt_epu32_mask(x->e, x->u);
    /* key_mask all ones (best fit): the smallest gap, the lowest on a tie; 0 (first fit):
     * every gap 0, the lowest wins */
    const __m512i gap = keyed ? _mm512_sub_epi32(a, x->e) : _mm512_setzero_si512();
    /* the best gap kept by a minimum: one cycle from row to row, where a blend waited for
     * the comparison with the last best */
    const __mmask16 take = ok & (__mmask16)~unsure;
    const __mmask16 upd = _mm512_mask_cmplt_epu32_mask(take, gap, x->best_gap);
    x->best_gap = _mm512_mask_min_epu32(x->best_gap, take, x->best_gap, gap);
    x->best_start = _mm512_mask_mov_epi32(x->best_start, upd, x->e);
    if (!all_sure && (ok & unsure) != 0 && !avx512_record(w, x->e, a, ok & unsure))
        return 0;
    const __m512i b = _mm512_loadu_si512(ch->b + at_row);
    x->e = _mm512_mask_max_epu32(x->e, m, x->e, b);
    return 1;
}

__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
scan_avx512_body(worker *w, const query *q, int aligned, int keyed, int narrow)
{
    const __m512i S = _mm512_set1_epi32((int)q->size), QF = _mm512_set1_epi32((int)q->first);
    const __m512i QL = _mm512_set1_epi32((int)q->last), QW = _mm512_set1_epi32((int)q->packed);
    const __m512i A1 = _mm512_set1_epi32((int)(q->align - 1));
    const __m512i AM = _mm512_set1_epi32((int)~(q->align - 1));
    avx512_lanes x;
    x.best_gap = x.best_start = _mm512_set1_epi32(-1);
    uint32_t bound = w->in_bound;
    w->rec_n = 0;
    for (size_t c = 0; c < w->n; c++) {
        chunk *ch = w->chunks[c];
        uint32_t u[LANES];
        lane_bound_values(ch, &bound, u);
        x.u = _mm512_loadu_si512(u);
        x.e = _mm512_setzero_si512();
        ch->rec_from = w->rec_n;
        uint32_t k = 0;
        /* until every lane is sure (e >= u, which stays so: e only grows), rows that record */
        for (; k < ch->depth && _mm512_cmplt_epu32_mask(x.e, x.u) != 0; k++)
            if (!avx512_row(w, ch, k, &x, QW, QF, QL, S, A1, AM, aligned, keyed, narrow, 0)) {
                w->failed = 1;
                return;
            }
        /* then rows without the test: a sure lane records nothing */
        for (; k < ch->depth; k++)
            avx512_row(w, ch, k, &x, QW, QF, QL, S, A1, AM, aligned, keyed, narrow, 1);
        ch->rec_to = w->rec_n;
        _mm512_storeu_si512(ch->lane_max, x.e);
    }
    _mm512_storeu_si512(w->best_gap, x.best_gap);
    _mm512_storeu_si512(w->best_start, x.best_start);
}

__attribute__((target("avx512f,avx512bw"))) static void scan_avx512(worker *w, const query *q)
{
    SCAN_FORMS(scan_avx512_body, w, q);
}

/* The same scan with AVX2 intrinsics: a row of 16 lanes as two vectors of 8, each half with
 * its own named registers (arrays indexed by the half went through the stack, and every
 * row's running maximum waited for a store). AVX2 compares signed lanes only, so each
 * unsigned x <= y is max_epu32(x, y) == y (two instructions, no sign flips), and the running
 * maxima are max_epu32 itself; recorded candidates are stored lane by lane from the bits of
 * their mask, in the order of the other forms. Compiled for each of aligned (alignment
 * above 1) and keyed (best fit), so that no needless constant takes one of the 16 registers.
 * A lane stays sure once it is (e only grows, u is fixed per chunk), and every lane of a
 * chunk is sure after a few rows (its first conflict that ends past u), so a chunk's rows are
 * read in two loops: rows that test sureness and record while some lane is unsure, then rows
 * with all_sure, which skip the test and the recording (about a fifth of the instructions of
 * a row: 1e5 random lifetimes on an AVX2-only Zen 3 2.2-2.8 -> 1.8-2.3 s on one thread,
 * BENCHMARKS.md). avx2_half_row returns 0 when recording ran out of memory (never with
 * all_sure). */
typedef struct avx2_half {
    __m256i e, best_gap, best_start, u;
    __m256i best, imax; /* the narrow form: INT32_MAX - best gap (0: none), INT32_MAX */
} avx2_half;

/* Stores the candidates (e, a) of the lanes in record, lane by lane in the order of the other
 * forms (half h of a row); 0 when the records cannot grow. */
__attribute__((target("avx2"))) static int avx2_record(worker *w, __m256i e, __m256i a,
                                                        __m256i record, unsigned h)
{
    if (!reserve_records(w))
        return 0;
    uint32_t ev[8], av[8];
    _mm256_storeu_si256((__m256i *)(void *)ev, e);
    _mm256_storeu_si256((__m256i *)(void *)av, a);
    for (unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(record)); bits != 0;
         bits &= bits - 1) {
        const unsigned j = (unsigned)__builtin_ctz(bits);
        w->rec_e[w->rec_n] = ev[j];
        w->rec_a[w->rec_n] = av[j];
        w->rec_lane[w->rec_n++] = (unsigned char)(8 * h + j);
    }
    return 1;
}

/* The lanes whose running maximum has reached their bound u (all ones), the others 0. */
__attribute__((target("avx2"), always_inline)) static inline __m256i
avx2_sure(const avx2_half *x)
{
    return _mm256_cmpeq_epi32(_mm256_max_epu32(x->e, x->u), x->e);
}

__attribute__((target("avx2"), always_inline)) static inline int
avx2_half_row(worker *w, const chunk *ch, size_t at_row, unsigned h, avx2_half *x, __m256i S,
              __m256i QF, __m256i QL, __m256i A1, __m256i AM, int aligned, int keyed,
              int all_sure)
{
    const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(ch->a + at_row));
    const __m256i f = _mm256_loadu_si256((const __m256i *)(const void *)(ch->f + at_row));
    const __m256i l = _mm256_loadu_si256((const __m256i *)(const void *)(ch->l + at_row));
    /* f <= QL and QF <= l: the lifetimes meet */
    const __m256i m = _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(f, QL), QL),
                                       _mm256_cmpeq_epi32(_mm256_max_epu32(l, QF), l));
    const __m256i sure = all_sure ? _mm256_set1_epi32(-1) : avx2_sure(x);
    const __m256i at = aligned ? _mm256_and_si256(_mm256_add_epi32(x->e, A1), AM) : x->e;
    const __m256i room = _mm256_sub_epi32(_mm256_max_epu32(a, at), at);
    const __m256i ok = _mm256_and_si256(m, _mm256_cmpeq_epi32(_mm256_max_epu32(room, S), room));
    /* key_mask is all ones (best fit) or 0 (first fit: every gap ties, the lowest wins) */
    const __m256i gap = keyed ? _mm256_sub_epi32(a, x->e) : _mm256_setzero_si256();
    /* gap < best_gap: not (max(gap, best_gap) == gap) */
    const __m256i upd =
        _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_max_epu32(gap, x->best_gap), gap),
                            _mm256_and_si256(ok, sure));
    x->best_gap = _mm256_blendv_epi8(x->best_gap, gap, upd);
    x->best_start = _mm256_blendv_epi8(x->best_start, x->e, upd);
    const __m256i record = _mm256_andnot_si256(sure, ok);
    if (!all_sure && !_mm256_testz_si256(record, record) && !avx2_record(w, x->e, a, record, h))
        return 0;
    const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(ch->b + at_row));
    x->e = _mm256_max_epu32(x->e, _mm256_and_si256(b, m));
    return 1;
}

/* The narrow form (query.narrow: every address, end, rank and the size below 2^31). Signed
 * comparisons then give the unsigned answers in one instruction (cmpgt) where the form above
 * needs max_epu32 and cmpeq. And it reads 12 bytes a tensor instead of 16: the lifetime as
 * the packed word t (pack_times), whose two 16-bit halves are compared with the query's at
 * once. A scan that reads its chunks from the L3 cache is bound by how many bytes it reads
 * (about 16 bytes a cycle on a Zen 3 core), so fewer bytes are most of the gain. The halves
 * are the ranks shifted right by time_shift: a half that compares greater says for sure
 * that the lifetimes are apart; a half that compares equal leaves it open, and such a row
 * (rare: about 2^shift / ranks a lane) is tested on the exact ranks f and l instead.
 * Empty slots (exact first use NO_TIME, -1 as signed, last use 0) may pass that exact test
 * when the query starts at rank 0, which changes nothing: their end 0 never raises e and
 * their gap 0 - e never fits (S >= 1); their packed word never compares equal. A lane keeps
 * INT32_MAX - its best gap, 0 for none, by a maximum (one instruction from row to row, where
 * a blend waited for a comparison with the last best), which the caller turns back into
 * gaps. m: the lanes whose lifetimes meet the query's. */
__attribute__((target("avx2"), always_inline)) static inline int
avx2_narrow_half_row(worker *w, const chunk *ch, size_t at_row, unsigned h, avx2_half *x,
                     __m256i m, __m256i S, __m256i A1, __m256i AM, int aligned, int keyed,
                     int all_sure)
{
    const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(ch->a + at_row));
    const __m256i gap = _mm256_sub_epi32(a, x->e);
    const __m256i room =
        aligned ? _mm256_sub_epi32(a, _mm256_and_si256(_mm256_add_epi32(x->e, A1), AM)) : gap;
    /* a candidate: the lifetimes meet and the gap is long enough (room >= S) */
    const __m256i ok = _mm256_andnot_si256(_mm256_cmpgt_epi32(S, room), m);
    const __m256i unsure = all_sure ? _mm256_setzero_si256() : _mm256_cmpgt_epi32(x->u, x->e);
    /* the candidate's value INT32_MAX - gap (INT32_MAX for every gap in first fit), 0 where
     * there is none: no gap reaches INT32_MAX */
    const __m256i v0 = _mm256_and_si256(ok, keyed ? _mm256_sub_epi32(x->imax, gap) : x->imax);
    const __m256i v = all_sure ? v0 : _mm256_andnot_si256(unsure, v0);
    /* best_start takes the start where the value is strictly higher: the lowest start wins
     * a tie */
    const __m256i upd = _mm256_cmpgt_epi32(v, x->best);
    x->best = _mm256_max_epi32(x->best, v);
    x->best_start = _mm256_blendv_epi8(x->best_start, x->e, upd);
    const __m256i record = _mm256_and_si256(ok, unsure);
    if (!all_sure && !_mm256_testz_si256(record, record) && !avx2_record(w, x->e, a, record, h))
        return 0;
    const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(ch->b + at_row));
    x->e = _mm256_max_epi32(x->e, _mm256_and_si256(b, m));
    return 1;
}

/* The lanes of 8 tensors from row offset at whose exact lifetimes meet [QF, QL] (narrow). */
__attribute__((target("avx2"), always_inline)) static inline __m256i
avx2_narrow_meet(const chunk *ch, size_t at, __m256i QF, __m256i QL)
{
    const __m256i f = _mm256_loadu_si256((const __m256i *)(const void *)(ch->f + at));
    const __m256i l = _mm256_loadu_si256((const __m256i *)(const void *)(ch->l + at));
    const __m256i apart = _mm256_or_si256(_mm256_cmpgt_epi32(f, QL), _mm256_cmpgt_epi32(QF, l));
    return _mm256_andnot_si256(apart, _mm256_set1_epi32(-1));
}

/* One row of 16 in the narrow form: the packed lifetimes decide the conflicts of both halves,
 * or the exact ranks where a half compared equal. */
__attribute__((target("avx2"), always_inline)) static inline int
avx2_narrow_row(worker *w, const chunk *ch, uint32_t k, avx2_half *x0, avx2_half *x1,
                __m256i QW, __m256i S, __m256i QF, __m256i QL, __m256i A1, __m256i AM,
                int aligned, int keyed, int all_sure)
{
    const size_t at = (size_t)k * LANES;
    const __m256i t0 = _mm256_loadu_si256((const __m256i *)(const void *)(ch->t + at));
    const __m256i t1 = _mm256_loadu_si256((const __m256i *)(const void *)(ch->t + at + 8));
    const __m256i open = _mm256_or_si256(_mm256_cmpeq_epi16(t0, QW), _mm256_cmpeq_epi16(t1, QW));
    __m256i m0, m1;
    if (__builtin_expect(_mm256_testz_si256(open, open), 1)) {
        /* no half greater: the lifetimes meet */
        m0 = _mm256_cmpeq_epi32(_mm256_cmpgt_epi16(t0, QW), _mm256_setzero_si256());
        m1 = _mm256_cmpeq_epi32(_mm256_cmpgt_epi16(t1, QW), _mm256_setzero_si256());
    } else {
        m0 = avx2_narrow_meet(ch, at, QF, QL);
        m1 = avx2_narrow_meet(ch, at + 8, QF, QL);
    }
    return avx2_narrow_half_row(w, ch, at, 0, x0, m0, S, A1, AM, aligned, keyed, all_sure) &&
           avx2_narrow_half_row(w, ch, at + 8, 1, x1, m1, S, A1, AM, aligned, keyed, all_sure);
}

/* One row of 16 in the full form. */
__attribute__((target("avx2"), always_inline)) static inline int
avx2_row(worker *w, const chunk *ch, uint32_t k, avx2_half *x0, avx2_half *x1, __m256i S,
         __m256i QF, __m256i QL, __m256i A1, __m256i AM, int aligned, int keyed, int all_sure)
{
    const size_t at = (size_t)k * LANES;
    return avx2_half_row(w, ch, at, 0, x0, S, QF, QL, A1, AM, aligned, keyed, all_sure) &&
           avx2_half_row(w, ch, at + 8, 1, x1, S, QF, QL, A1, AM, aligned, keyed, all_sure);
}

/* The scan of a worker's chunks in the full form or the narrow one. */
__attribute__((target("avx2"), always_inline)) static inline void
scan_avx2_body(worker *w, const query *q, int aligned, int keyed, int narrow)
{
    const __m256i S = _mm256_set1_epi32((int)q->size), QF = _mm256_set1_epi32((int)q->first);
    const __m256i QL = _mm256_set1_epi32((int)q->last);
    const __m256i QW = _mm256_set1_epi32((int)q->packed);
    const __m256i A1 = _mm256_set1_epi32((int)(q->align - 1));
    const __m256i AM = _mm256_set1_epi32((int)~(q->align - 1));
    avx2_half x0, x1;
    x0.best_gap = x0.best_start = x1.best_gap = x1.best_start = _mm256_set1_epi32(-1);
    x0.imax = x1.imax = _mm256_set1_epi32(INT32_MAX);
    x0.best = x1.best = _mm256_setzero_si256();
    uint32_t bound = w->in_bound;
    w->rec_n = 0;
    for (size_t c = 0; c < w->n; c++) {
        chunk *ch = w->chunks[c];
        uint32_t u[LANES];
        lane_bound_values(ch, &bound, u);
        x0.u = _mm256_loadu_si256((const __m256i *)(const void *)u);
        x1.u = _mm256_loadu_si256((const __m256i *)(const void *)(u + 8));
        x0.e = x1.e = _mm256_setzero_si256();
        ch->rec_from = w->rec_n;
        uint32_t k = 0;
        /* until every lane is sure (e >= u, which stays so: e only grows), rows that record */
        for (; k < ch->depth; k++) {
            if (narrow) {
                const __m256i unsure = _mm256_or_si256(_mm256_cmpgt_epi32(x0.u, x0.e),
                                                       _mm256_cmpgt_epi32(x1.u, x1.e));
                if (_mm256_testz_si256(unsure, unsure))
                    break;
            } else if (_mm256_movemask_epi8(_mm256_and_si256(avx2_sure(&x0), avx2_sure(&x1))) ==
                       -1)
                break;
            if (!(narrow ? avx2_narrow_row(w, ch, k, &x0, &x1, QW, S, QF, QL, A1, AM, aligned,
                                           keyed, 0)
                         : avx2_row(w, ch, k, &x0, &x1, S, QF, QL, A1, AM, aligned, keyed, 0))) {
                w->failed = 1;
                return;
            }
        }
        /* then rows without the test: a sure lane records nothing */
        for (; k < ch->depth; k++) {
            if (narrow)
                avx2_narrow_row(w, ch, k, &x0, &x1, QW, S, QF, QL, A1, AM, aligned, keyed, 1);
            else
                avx2_row(w, ch, k, &x0, &x1, S, QF, QL, A1, AM, aligned, keyed, 1);
        }
        ch->rec_to = w->rec_n;
        _mm256_storeu_si256((__m256i *)(void *)ch->lane_max, x0.e);
        _mm256_storeu_si256((__m256i *)(void *)(ch->lane_max + 8), x1.e);
    }
    if (narrow) {
        /* back to gaps: INT32_MAX - value, UINT32_MAX for none (first fit: 0 for a gap) */
        const __m256i zero = _mm256_setzero_si256();
        x0.best_gap = _mm256_or_si256(_mm256_sub_epi32(x0.imax, x0.best),
                                      _mm256_cmpeq_epi32(x0.best, zero));
        x1.best_gap = _mm256_or_si256(_mm256_sub_epi32(x1.imax, x1.best),
                                      _mm256_cmpeq_epi32(x1.best, zero));
    }
    _mm256_storeu_si256((__m256i *)(void *)w->best_gap, x0.best_gap);
    _mm256_storeu_si256((__m256i *)(void *)(w->best_gap + 8), x1.best_gap);
    _mm256_storeu_si256((__m256i *)(void *)w->best_start, x0.best_start);
    _mm256_storeu_si256((__m256i *)(void *)(w->best_start + 8), x1.best_start);
}

__attribute__((target("avx2"))) static void scan_avx2(worker *w, const query *q)
{
    SCAN_FORMS(scan_avx2_body, w, q);
}
#undef SCAN_FORMS
#undef SCAN_FORMS_OF
#endif

/* A worker's part of a query: the insertion routed to it by the previous one, then its scan. */
static void worker_turn(scan *s, worker *w)
{
    if (w->pending) {
        w->pending = 0;
        if (!worker_insert(w, w->pa, w->pb, w->pf, w->pl)) {
            w->failed = 1;
            return;
        }
    }
#if X86_KERNELS
    if (s->level == 2) {
        scan_avx512(w, &s->q);
        return;
    }
    if (s->level == 1) {
        scan_avx2(w, &s->q);
        return;
    }
#endif
    scan_generic_default(w, &s->q);
}

/* Waiting for another thread. A query takes microseconds, so a waiting thread first spins
 * (with the processor's pause hint) for at most SPIN_S seconds, which covers the time between
 * two queries and a helper finishing its part on a processor of its own; if the wait lasts
 * longer (the processors are shared with other work, or there are more threads than
 * processors), it sleeps on a condition variable, and whoever changes go, done or quit wakes
 * the sleepers. The sleeper counts itself before its last look at the counters and the waker
 * looks at the count after changing them (both sequentially consistent), so a wake-up cannot
 * be missed. A spin counted in pauses instead (256 of them, a few microseconds) ended before
 * the next query came, so every query paid for waking a sleeper and two threads were slower
 * than one. */
#define SPIN_S 20e-6
#define SHARE_FROM 8192 /* tensors placed before the helpers first take their parts */
#define SPINS_PER_LOOK 64

static void wake_sleepers(scan *s)
{
    if (atomic_load(&s->sleepers) > 0) {
        pthread_mutex_lock(&s->lock);
        pthread_cond_broadcast(&s->wake);
        pthread_mutex_unlock(&s->lock);
    }
}

/* Until *counter != value (want_change) or == value (!want_change), or quit. */
static void wait_for(scan *s, _Atomic unsigned *counter, unsigned value, int want_change)
{
    double until = 0;
    for (unsigned spins = 0;; spins++) {
        if ((atomic_load(counter) != value) == want_change || atomic_load(&s->quit))
            return;
        if (spins % SPINS_PER_LOOK == 0) {
            const double now = tp_clock_seconds();
            if (spins == 0)
                until = now + SPIN_S;
            else if (now > until)
                break;
        }
#if X86_KERNELS
        __builtin_ia32_pause();
#endif
    }
    pthread_mutex_lock(&s->lock);
    atomic_fetch_add(&s->sleepers, 1);
    while ((atomic_load(counter) != value) != want_change && !atomic_load(&s->quit))
        pthread_cond_wait(&s->wake, &s->lock);
    atomic_fetch_sub(&s->sleepers, 1);
    pthread_mutex_unlock(&s->lock);
}

/* Helper threads: wait for a query, take their turn, report. */
static void *helper_main(void *arg)
{
    worker *w = arg;
    scan *s = w->scan;
    unsigned seen = 0;
    for (;;) {
        wait_for(s, &s->go, seen, 1);
        if (atomic_load(&s->quit))
            return NULL;
        seen = atomic_load(&s->go);
        w->turn_at = tp_clock_seconds();
        worker_turn(s, w);
        atomic_fetch_add(&s->done, 1);
        wake_sleepers(s);
    }
}

/* After the scans: the carry into every lane in address order, the candidates recorded while a
 * lane was unsure judged with it, and the best candidate overall. A recorded candidate (e, a)
 * of a lane whose carry is c: the union's end below a is max(c, e), and the gap [max(c, e), a)
 * is a real one if a lies above it and the query fits. Returns where the union ends. */
static uint32_t settle(const scan *s, uint32_t *best_gap, uint32_t *best_start)
{
    const query *q = &s->q;
    const uint32_t key_mask = q->key_mask, align = q->align;
    uint32_t g = UINT32_MAX, st = UINT32_MAX;
    uint32_t carry = 0;
    for (unsigned t = 0; t < s->threads; t++) {
        const worker *w = &s->w[t];
        for (size_t c = 0; c < w->n; c++) {
            const chunk *ch = w->chunks[c];
            uint32_t into[LANES];
            for (unsigned j = 0; j < LANES; j++) {
                into[j] = carry;
                carry = ch->lane_max[j] > carry ? ch->lane_max[j] : carry;
            }
            for (size_t r = ch->rec_from; r < ch->rec_to; r++) {
                const uint32_t c_in = into[w->rec_lane[r]];
                const uint32_t start = w->rec_e[r] > c_in ? w->rec_e[r] : c_in;
                const uint32_t a = w->rec_a[r];
                const uint32_t at = (start + (align - 1)) & ~(align - 1);
                if (a <= start || at > a || a - at < q->size)
                    continue;
                const uint32_t gap = (a - start) & key_mask;
                if (gap < g || (gap == g && start < st)) {
                    g = gap;
                    st = start;
                }
            }
        }
        for (unsigned j = 0; j < LANES; j++)
            if (w->best_gap[j] < g || (w->best_gap[j] == g && w->best_start[j] < st)) {
                g = w->best_gap[j];
                st = w->best_start[j];
            }
    }
    *best_gap = g;
    *best_start = st;
    return carry;
}

/* The largest end among a worker's tensors, after chunks moved. */
static void worker_bound(worker *w)
{
    w->b_max = 0;
    for (size_t c = 0; c < w->n; c++)
        for (unsigned j = 0; j < LANES; j++)
            w->b_max = w->chunks[c]->b_max[j] > w->b_max ? w->chunks[c]->b_max[j] : w->b_max;
}

/* Keeps the workers' shares of tensors even: moves a boundary chunk to the lighter neighbour
 * when that brings the two closer. Only between queries, when every helper waits. */
static int rebalance(scan *s)
{
    for (unsigned t = 0; t + 1 < s->threads; t++) {
        worker *l = &s->w[t], *r = &s->w[t + 1];
        if (l->n >= 2 && l->tensors > r->tensors &&
            l->tensors - r->tensors > l->chunks[l->n - 1]->total) {
            if (!chunks_room(r))
                return 0;
            chunk *c = l->chunks[--l->n];
            memmove(r->chunks + 1, r->chunks, r->n * sizeof *r->chunks);
            r->chunks[0] = c;
            r->n++;
            l->tensors -= c->total;
            r->tensors += c->total;
            worker_bound(l);
            worker_bound(r);
        } else if (r->n >= 2 && r->tensors > l->tensors &&
                   r->tensors - l->tensors > r->chunks[0]->total) {
            if (!chunks_room(l))
                return 0;
            chunk *c = r->chunks[0];
            memmove(r->chunks, r->chunks + 1, (r->n - 1) * sizeof *r->chunks);
            r->n--;
            l->chunks[l->n++] = c;
            r->tensors -= c->total;
            l->tensors += c->total;
            worker_bound(r);
            worker_bound(l);
        }
    }
    return 1;
}

/* The worker whose part of the address order takes a tensor starting at a. */
static unsigned owner_of(const scan *s, uint32_t a)
{
    unsigned owner = s->threads;
    for (unsigned t = 0; t < s->threads; t++) {
        if (s->w[t].n == 0)
            continue;
        if (owner == s->threads || chunk_first(s->w[t].chunks[0]) <= a)
            owner = t;
        else
            break;
    }
    return owner == s->threads ? 0 : owner;
}

static int cpu_level;
static pthread_once_t cpu_level_once = PTHREAD_ONCE_INIT;

static void read_cpu_level(void)
{
#if X86_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        cpu_level = 2;
    else if (__builtin_cpu_supports("avx2"))
        cpu_level = 1;
#endif
}

int tp_scan_level(void)
{
    pthread_once(&cpu_level_once, read_cpu_level); /* once, whichever thread asks first */
    return cpu_level;
}

unsigned tp_scan_default_threads(size_t n_order)
{
    if (n_order < TP_SCAN_THREADS_FROM)
        return 1;
    const unsigned cpus = tp_planner_cpus();
    return cpus > MAX_THREADS ? MAX_THREADS : cpus;
}

/* Sets up s with its thread count and kernel; no thread started yet. */
static void scan_init(scan *s, unsigned threads, tp_scan_kernel kernel, size_t n_order)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->go, 0);
    atomic_init(&s->done, 0);
    atomic_init(&s->quit, 0);
    atomic_init(&s->sleepers, 0);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->threads = threads == 0 ? tp_scan_default_threads(n_order) : threads;
    if (s->threads > MAX_THREADS)
        s->threads = MAX_THREADS;
    s->share_from = SHARE_FROM;
    s->level = tp_scan_level();
    if (kernel == TP_SCAN_GENERIC)
        s->level = 0;
    else if (kernel == TP_SCAN_AVX2 && s->level > 1)
        s->level = 1;
    for (unsigned t = 0; t < MAX_THREADS; t++)
        s->w[t].scan = s;
}

static void scan_start_helpers(scan *s)
{
    for (unsigned t = 1; t < s->threads; t++) {
        if (pthread_create(&s->w[t].thread, NULL, helper_main, &s->w[t]) != 0) {
            s->threads = t; /* fewer helpers: the same plan, a little later */
            break;
        }
        s->w[t].started = 1;
    }
}

/* Stops and joins the helpers and frees every worker's chunks and records. */
static void scan_finish(scan *s)
{
    atomic_store(&s->quit, 1);
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    for (unsigned t = 1; t < MAX_THREADS; t++)
        if (s->w[t].started)
            pthread_join(s->w[t].thread, NULL);
    for (unsigned t = 0; t < MAX_THREADS; t++) {
        for (size_t c = 0; c < s->w[t].n; c++)
            free(s->w[t].chunks[c]);
        free(s->w[t].chunks);
        free(s->w[t].rec_e);
        free(s->w[t].rec_a);
        free(s->w[t].rec_lane);
        free(s->w[t].scratch);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
}

/* Helpers that run beside the calling thread begin their parts as soon as it hands the query
 * on. When on most queries of a window a helper begins only after the calling thread has
 * finished its own part (the parts are still small, or the helpers are not scheduled: the
 * processors are busy with other work, or the process has fewer of them than threads),
 * sharing costs more than it gives: the calling thread takes every part again, the helpers
 * sleep, and sharing is tried again when a quarter more tensors are placed, or twice as many
 * when every query of the window was late (as when the threads share one processor: then one
 * window at every doubling). What is compared is when the helpers began, not how long the
 * calling thread waited: a helper's part may take longer than the caller's (an insertion
 * that shifts a long lane, a chunk split) while the two still run side by side, and ending
 * the sharing for that made two threads 10-20% slower on an idle machine (BENCHMARKS.md).
 * Counting queries, not summing their times, keeps one long query (a moment on a busy
 * processor) from ending the sharing. Which thread scans a part never changes the plan. */
#define FOLD_WINDOW 64

static void note_wait(scan *s, double t0, double t1, size_t placed)
{
    double began = t0;
    for (unsigned t = 1; t < s->threads; t++)
        began = s->w[t].turn_at > began ? s->w[t].turn_at : began;
    s->waited += began > t1;
    if (++s->window < FOLD_WINDOW)
        return;
    if (s->waited == FOLD_WINDOW)
        s->share_from = 2 * placed;
    else if (s->waited > FOLD_WINDOW * 3 / 4)
        s->share_from = placed + placed / 4;
    s->window = 0;
    s->waited = 0;
}

/* Runs the query s->q on every worker (the calling thread is worker 0) and settles it:
 * returns the start of the chosen gap, or where the union ends when no gap fits, in *from.
 * Returns 0 when a worker could not allocate. */
static inline int scan_query(scan *s, uint32_t *from)
{
    uint32_t bound = 0;
    for (unsigned t = 0; t < s->threads; t++) {
        s->w[t].in_bound = bound;
        bound = s->w[t].b_max > bound ? s->w[t].b_max : bound;
    }
    size_t placed = 0;
    for (unsigned t = 0; t < s->threads; t++)
        placed += s->w[t].tensors;
    /* Few tensors placed: the query is shorter than handing it on, so the calling thread
     * takes every part (the helpers wait, asleep after their spin), and the time it takes
     * says nothing about sharing (see note_wait). */
    const int share = s->threads > 1 && placed >= s->share_from;
    if (!share)
        for (unsigned t = 1; t < s->threads; t++)
            worker_turn(s, &s->w[t]);
    const double t0 = share ? tp_clock_seconds() : 0;
    if (share) {
        atomic_store(&s->done, 0);
        atomic_fetch_add(&s->go, 1);
        wake_sleepers(s);
    }
    worker_turn(s, &s->w[0]);
    if (share) {
        const double t1 = tp_clock_seconds();
        wait_for(s, &s->done, s->threads - 1, 0);
        note_wait(s, t0, t1, placed);
    }
    for (unsigned t = 0; t < s->threads; t++)
        if (s->w[t].failed)
            return 0;
    uint32_t gap, start;
    const uint32_t end = settle(s, &gap, &start);
    *from = start != UINT32_MAX ? start : end;
    return 1;
}

/* Hands the block [a, b) used during [f, l] to the worker whose part of the address order
 * takes it: inserted by the owner's thread at the start of its next turn. */
static inline void scan_route(scan *s, uint32_t a, uint32_t b, uint32_t f, uint32_t l)
{
    worker *w = &s->w[owner_of(s, a)];
    w->pending = 1;
    w->pa = a;
    w->pb = b;
    w->pf = f;
    w->pl = l;
    w->tensors++;
    w->b_max = w->pb > w->b_max ? w->pb : w->b_max;
}

/* The placements of tp_scan_place, in order, with the helpers running; first and last are
 * the ranks of each tensor's lifetime. */
static tp_status scan_place_all(scan *s, const tp_tensor_lifetime *tensors, const size_t *order,
                                size_t n_order, const size_t *first, const size_t *last,
                                uint32_t align, tp_gap_rule rule, const tp_greedy_ticker *ticker,
                                size_t *offsets, size_t *arena_size, int *declined)
{
    const uint32_t limit = UINT32_MAX - align; /* every block ends at or below this */
    size_t arena = 0;
    double last_tick = ticker != NULL ? tp_clock_seconds() : 0;
    for (size_t k = 0; k < n_order; k++) {
        const size_t id = order[k];
        const size_t size = tensors[id].size;
        if ((k & 255u) == 255u && tp_ticker_poll(ticker, k, n_order, &last_tick))
            return tp_greedy_timeout(k, n_order);
        if (size > limit) {
            *declined = 1;
            return TP_OK;
        }
        /* blocks end at or below arena, ranks are below n_order */
        const int narrow = n_order <= INT32_MAX && size <= INT32_MAX &&
                           arena <= (size_t)INT32_MAX - align;
        const uint32_t qf = (uint32_t)first[k], ql = (uint32_t)last[k];
        s->q = (query){ (uint32_t)size, qf, ql, align, rule == TP_GAP_FIRST_FIT ? 0u : UINT32_MAX,
                        narrow, pack_times(ql, qf, s->time_shift) };
        uint32_t from;
        if (!scan_query(s, &from))
            return tp_fail(TP_ERR_NOMEM, "cannot grow the address-ordered tensors");
        const uint32_t offset = (from + (align - 1)) & ~(align - 1);
        if (offset > limit - size) {
            *declined = 1;
            return TP_OK;
        }
        offsets[id] = offset;
        if (offset + size > arena)
            arena = offset + size;
        if (k + 1 == n_order)
            break;
        if (!rebalance(s))
            return tp_fail(TP_ERR_NOMEM, "cannot grow the address-ordered tensors");
        scan_route(s, offset, (uint32_t)(offset + size), (uint32_t)first[k], (uint32_t)last[k]);
    }
    *arena_size = arena;
    return TP_OK;
}

tp_status tp_scan_place(const tp_tensor_lifetime *tensors, size_t count, const size_t *order,
                        size_t n_order, size_t alignment, tp_gap_rule rule,
                        const tp_greedy_ticker *ticker, unsigned threads, tp_scan_kernel kernel,
                        size_t *offsets, size_t *arena_size, int *declined)
{
    *declined = 0;
    for (size_t i = 0; i < count; i++)
        offsets[i] = 0;
    *arena_size = 0;
    if (alignment == 0)
        alignment = 1;
    if (n_order == 0)
        return TP_OK;
    if ((alignment & (alignment - 1)) != 0 || alignment > TP_SCAN_MAX_ALIGN ||
        n_order >= UINT32_MAX) {
        *declined = 1;
        return TP_OK;
    }
    tp_status st = TP_OK;
    scan s;
    scan_init(&s, threads, kernel, n_order);
    /* Times become ranks (tp_lifetime_ranks): below n_order, so 32 bits suffice. */
    size_t *first = malloc(n_order * sizeof *first), *last = malloc(n_order * sizeof *last);
    size_t n_ranks = 0;
    if (first == NULL || last == NULL)
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", n_order);
    else
        st = tp_lifetime_ranks(tensors, order, n_order, first, last, &n_ranks);
    if (st == TP_OK) {
        /* every rank is below n_ranks (pack_times) */
        while (((n_ranks - 1) >> s.time_shift) >= 0x7fff)
            s.time_shift++;
        scan_start_helpers(&s);
        st = scan_place_all(&s, tensors, order, n_order, first, last, (uint32_t)alignment, rule,
                            ticker, offsets, arena_size, declined);
    }
    scan_finish(&s);
    if (st != TP_OK || *declined) {
        for (size_t i = 0; i < count; i++)
            offsets[i] = 0;
        *arena_size = 0;
    }
    free(first);
    free(last);
    return st;
}
