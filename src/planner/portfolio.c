/* The portfolio: nine greedy orders and gap rules, run on several threads when the input is
 * large enough, the best plan kept (docs/planner.md). */
#include "planner/planner_internal.h"

#include "common/error.h"
#include "common/clock.h"
#include "common/sort.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The portfolio: deterministic orders (tp_greedy_order) with a gap rule each. */

typedef struct portfolio_entry {
    tp_order_kind order;
    tp_gap_rule rule;
    const char *name;
} portfolio_entry;

static const portfolio_entry portfolio[] = {
    { TP_ORDER_SIZE, TP_GAP_BEST_FIT, "greedy size best-fit" },
    { TP_ORDER_AREA, TP_GAP_BEST_FIT, "greedy area best-fit" },
    { TP_ORDER_LENGTH, TP_GAP_BEST_FIT, "greedy length best-fit" },
    { TP_ORDER_START, TP_GAP_BEST_FIT, "greedy start best-fit" },
    { TP_ORDER_END, TP_GAP_BEST_FIT, "greedy end best-fit" },
    { TP_ORDER_SIZE, TP_GAP_FIRST_FIT, "greedy size first-fit" },
    { TP_ORDER_AREA, TP_GAP_FIRST_FIT, "greedy area first-fit" },
    { TP_ORDER_LENGTH, TP_GAP_FIRST_FIT, "greedy length first-fit" },
    { TP_ORDER_START, TP_GAP_FIRST_FIT, "greedy start first-fit" },
};
#define PORTFOLIO_SIZE (sizeof portfolio / sizeof portfolio[0])

size_t tp_portfolio_size(void)
{
    return PORTFOLIO_SIZE;
}


static int by_keys(const void *pa, const void *pb)
{
    const tp_order_key *a = pa, *b = pb;
    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    if (a->k2 != b->k2)
        return a->k2 < b->k2 ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

static size_t saturating_mul(size_t a, size_t b)
{
    return (b != 0 && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

/* order[] = keys[].index sorted by (k1, k2, index) with two stable radix sorts, by k2 and
 * then by k1 (keys are in index order). 0 when the scratch cannot be had: qsort does it then. */
static int radix_order(const tp_order_key *keys, size_t n, size_t *order)
{
    tp_sort_item *a = malloc((n ? n : 1) * sizeof *a), *b = malloc((n ? n : 1) * sizeof *b);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        a[k] = (tp_sort_item){ keys[k].k2, k };
    tp_sort_item *sorted = tp_sort_items(a, b, n);
    tp_sort_item *other = sorted == a ? b : a;
    for (size_t k = 0; k < n; k++)
        other[k] = (tp_sort_item){ keys[sorted[k].val].k1, sorted[k].val };
    sorted = tp_sort_items(other, sorted, n);
    for (size_t k = 0; k < n; k++)
        order[k] = keys[sorted[k].val].index;
    free(a);
    free(b);
    return 1;
}

size_t tp_greedy_order(const tp_tensor_lifetime *t, size_t count, tp_order_kind kind,
                       tp_order_key *keys, size_t *order)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++) {
        if (t[i].size == 0)
            continue;
        const size_t len = t[i].last_use - t[i].first_use + 1;
        tp_order_key k = { 0, 0, i };
        switch (kind) {
        case TP_ORDER_SIZE: k.k1 = SIZE_MAX - t[i].size; break;
        case TP_ORDER_AREA:
            k.k1 = SIZE_MAX - saturating_mul(t[i].size, len);
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case TP_ORDER_LENGTH:
            k.k1 = SIZE_MAX - len;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case TP_ORDER_START:
            k.k1 = t[i].first_use;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        case TP_ORDER_END:
            k.k1 = SIZE_MAX - t[i].last_use;
            k.k2 = SIZE_MAX - t[i].size;
            break;
        }
        keys[n++] = k;
    }
    if (!radix_order(keys, n, order)) {
        qsort(keys, n, sizeof *keys, by_keys);
        for (size_t k = 0; k < n; k++)
            order[k] = keys[k].index;
    }
    return n;
}

void tp_plan_call_progress(const tp_plan_options *o, int have, size_t best, size_t lb,
                           double start, unsigned long long nodes)
{
    if (o->progress == NULL)
        return;
    tp_plan_progress p = { have, have ? best : 0, lb, tp_clock_seconds() - start, nodes, 0, 0 };
    o->progress(&p, o->user);
}

/* The orders of a portfolio are independent, so they run on several threads when the input
 * is large enough for that to pay (each order then takes milliseconds or more). Every thread
 * takes the next order not yet started and keeps the best plan among those it ran; the plan
 * returned is the one with the smallest arena, the earliest order on a tie, which is the plan
 * a single thread running the orders one after another keeps. */
#define PORTFOLIO_PARALLEL_MIN 4096u

typedef struct portfolio_run {
    const tp_tensor_lifetime *tensors;
    size_t count, n_entries, align;
    unsigned pass_threads; /* threads of one greedy pass: 0 = its own choice, else a cap */
    double deadline;
    pthread_mutex_t lock;
    size_t next;      /* the next entry to start */
    int timed_out;    /* an entry was not started because the time limit had passed */
    size_t best;      /* smallest arena so far, for progress reports */
    int have;
    size_t failed_at; /* the earliest entry that failed (n_entries: none), its status and
                         message (taken from the failing worker's thread) */
    tp_error failure;
} portfolio_run;

typedef struct portfolio_worker {
    portfolio_run *run;
    tp_greedy_ticker ticker; /* the deadline; on the calling thread also progress */
    tp_order_key *keys;
    size_t *order, *trial, *plan; /* plan: the best plan this worker found */
    size_t arena, entry;          /* its arena and entry (entry == n_entries: none yet) */
} portfolio_worker;

/* Takes entries until none is left; returns after each one when `one` is set (the calling
 * thread reports progress in between). Returns 0 when nothing was left to take. */
static int portfolio_work(portfolio_worker *w, int one)
{
    portfolio_run *r = w->run;
    int took = 0;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        size_t p = r->next;
        if (p < r->n_entries && p > 0 && r->deadline > 0 && tp_clock_seconds() >= r->deadline) {
            r->timed_out = 1;
            r->next = p = r->n_entries;
        }
        if (p < r->n_entries && r->failed_at < p)
            p = r->n_entries; /* an earlier entry failed: the call fails anyway */
        if (p < r->n_entries)
            r->next++;
        pthread_mutex_unlock(&r->lock);
        if (p >= r->n_entries)
            return took;
        took = 1;
        const size_t n = tp_greedy_order(r->tensors, r->count, portfolio[p].order, w->keys, w->order);
        size_t arena = 0;
        /* one thread per pass when the portfolio runs several passes at once */
        unsigned pass_threads = r->pass_threads;
        if (pass_threads > 1 && tp_scan_default_threads(n) < pass_threads)
            pass_threads = tp_scan_default_threads(n);
        const tp_status st =
            tp_greedy_place_threads(r->tensors, r->count, w->order, n, r->align,
                                    portfolio[p].rule, &w->ticker, pass_threads, w->trial, &arena);
        pthread_mutex_lock(&r->lock);
        if (st == TP_ERR_TIMEOUT) {
            r->timed_out = 1; /* this pass stopped: start no other */
            r->next = r->n_entries;
        } else if (st != TP_OK) {
            if (p < r->failed_at) {
                r->failed_at = p;
                tp_error_capture(&r->failure, st);
            }
        } else if (!r->have || arena < r->best) {
            r->have = 1;
            r->best = arena;
        }
        pthread_mutex_unlock(&r->lock);
        /* A worker takes entries in increasing order, so a tie keeps the earlier one. */
        if (st == TP_OK && (w->entry == r->n_entries || arena < w->arena)) {
            size_t *swap = w->plan;
            w->plan = w->trial;
            w->trial = swap;
            w->arena = arena;
            w->entry = p;
        }
        if (one)
            return took;
    }
}

static void *portfolio_thread(void *arg)
{
    portfolio_work(arg, 0);
    return NULL;
}

static int worker_init(portfolio_worker *w, portfolio_run *r)
{
    const size_t n = r->count ? r->count : 1;
    memset(w, 0, sizeof *w);
    w->run = r;
    w->entry = r->n_entries;
    if (n > SIZE_MAX / sizeof *w->keys)
        return 0;
    w->keys = malloc(n * sizeof *w->keys);
    w->order = malloc(n * sizeof *w->order);
    w->trial = malloc(n * sizeof *w->trial);
    w->plan = malloc(n * sizeof *w->plan);
    return w->keys != NULL && w->order != NULL && w->trial != NULL && w->plan != NULL;
}

static void worker_free(portfolio_worker *w)
{
    free(w->keys);
    free(w->order);
    free(w->trial);
    free(w->plan);
}

/* The calling thread's view of a pass under way, for the progress callback. */
typedef struct pass_progress {
    const tp_plan_options *o;
    portfolio_run *run;
    double start;
    size_t peak;
} pass_progress;

static void tick_pass(size_t placed, size_t to_place, void *user)
{
    const pass_progress *pp = user;
    pthread_mutex_lock(&pp->run->lock);
    tp_plan_progress p = { pp->run->have, pp->run->have ? pp->run->best : 0, pp->peak,
                           tp_clock_seconds() - pp->start, 0, placed, to_place };
    pthread_mutex_unlock(&pp->run->lock);
    pp->o->progress(&p, pp->o->user);
}

/* Runs entries [0, n_entries) of the portfolio on up to `threads` threads (the calling one
 * included) and leaves the best plan in offsets. */
tp_status tp_portfolio_run(const tp_tensor_lifetime *tensors, size_t count,
                               size_t n_entries, size_t align, double deadline, unsigned threads,
                               const tp_plan_options *o, double start, size_t peak,
                               size_t *offsets, tp_plan_report *rep, size_t *best, int *have)
{
    enum { MAX_THREADS = 16 };
    portfolio_run r;
    memset(&r, 0, sizeof r);
    r.tensors = tensors;
    r.count = count;
    r.n_entries = n_entries;
    r.align = align;
    /* one greedy order alone may share its pass; several keep one thread per pass */
    r.pass_threads = n_entries == 1 ? o->threads : 1;
    r.deadline = deadline;
    r.failed_at = n_entries;
    if (pthread_mutex_init(&r.lock, NULL) != 0)
        return tp_fail(TP_ERR_NOMEM, "cannot create a lock for the portfolio");
    if (threads > n_entries)
        threads = (unsigned)n_entries;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads < 1)
        threads = 1;
    portfolio_worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    unsigned n_workers = 0, n_started = 0;
    tp_status st = TP_OK;
    for (; n_workers < threads; n_workers++) {
        if (!worker_init(&w[n_workers], &r)) {
            worker_free(&w[n_workers]);
            if (n_workers == 0) {
                st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch",
                             count);
                goto out;
            }
            break; /* fewer threads then */
        }
    }
    /* Helpers: worker 0 is the calling thread, the only one that reports progress. A helper
     * that cannot start leaves its work to the others. */
    pass_progress pp = { o, &r, start, peak };
    for (unsigned k = 0; k < n_workers; k++)
        w[k].ticker = (tp_greedy_ticker){ NULL, NULL, deadline };
    if (o->progress != NULL)
        w[0].ticker = (tp_greedy_ticker){ tick_pass, &pp, deadline };
    for (unsigned k = 1; k < n_workers; k++)
        if (pthread_create(&tid[k], NULL, portfolio_thread, &w[k]) == 0)
            n_started = k;
        else
            break;
    double last_progress = start;
    while (portfolio_work(&w[0], 1)) {
        /* a portfolio over a million tensors takes seconds: show it is under way */
        if (o->progress != NULL && tp_clock_seconds() - last_progress >= 0.1) {
            pthread_mutex_lock(&r.lock);
            const int have_now = r.have;
            const size_t best_now = r.best;
            pthread_mutex_unlock(&r.lock);
            tp_plan_call_progress(o, have_now, best_now, peak, start, 0);
            last_progress = tp_clock_seconds();
        }
    }
    for (unsigned k = 1; k <= n_started; k++)
        pthread_join(tid[k], NULL);

    if (r.failed_at < n_entries) {
        st = tp_error_raise(&r.failure);
        goto out;
    }
    rep->timed_out = r.timed_out;
    const portfolio_worker *win = NULL;
    for (unsigned k = 0; k < n_workers; k++) {
        const portfolio_worker *c = &w[k];
        if (c->entry < n_entries && (win == NULL || c->arena < win->arena ||
                                     (c->arena == win->arena && c->entry < win->entry)))
            win = c;
    }
    if (win != NULL) {
        *have = 1;
        *best = win->arena;
        if (count > 0)
            memcpy(offsets, win->plan, count * sizeof *offsets);
        rep->method = portfolio[win->entry].name;
        rep->strategy = n_entries == 1 ? TP_PLAN_GREEDY : TP_PLAN_PORTFOLIO;
    }
out:
    for (unsigned k = 0; k < n_workers; k++)
        worker_free(&w[k]);
    pthread_mutex_destroy(&r.lock);
    return st;
}

/* Threads for a portfolio over count tensors: one below PORTFOLIO_PARALLEL_MIN, else as many
 * as there are processors online, at most cap (0: no cap; the runner caps it at the number of
 * orders). */
unsigned tp_portfolio_threads(size_t count, unsigned cap)
{
    if (count < PORTFOLIO_PARALLEL_MIN)
        return 1;
    unsigned cpus = tp_planner_cpus();
    if (cpus > 64)
        cpus = 64;
    return cap != 0 && cap < cpus ? cap : cpus;
}

tp_status tp_plan_portfolio_threads(const tp_tensor_lifetime *tensors, size_t count,
                                    size_t alignment, unsigned threads, size_t *offsets,
                                    size_t *arena_size, const char **method)
{
    tp_status st = tp_check_plan_args(tensors, count, offsets, arena_size);
    if (st != TP_OK)
        return st;
    tp_plan_options o;
    tp_plan_options_init(&o);
    tp_plan_report rep;
    memset(&rep, 0, sizeof rep);
    size_t best = SIZE_MAX;
    int have = 0;
    st = tp_portfolio_run(tensors, count, PORTFOLIO_SIZE, alignment ? alignment : 1, 0, threads,
                       &o, tp_clock_seconds(), 0, offsets, &rep, &best, &have);
    if (st != TP_OK)
        return st;
    *arena_size = have ? best : 0;
    if (method != NULL)
        *method = rep.method;
    return TP_OK;
}

/* The portfolio's orders and gap rules with the general pass (entries [0, n_entries)): the
 * smallest arena wins, the earlier entry on a tie, as in tp_portfolio_run. */
tp_status tp_portfolio_general(const tp_tensor_lifetime *tensors, size_t count,
                                   const tp_general *g, size_t n_entries, double deadline,
                                   size_t *offsets, size_t *trial, tp_plan_report *rep,
                                   size_t *best, int *have)
{
    tp_order_key *keys = malloc((count ? count : 1) * sizeof *keys);
    size_t *order = malloc((count ? count : 1) * sizeof *order);
    tp_status st = TP_OK;
    const tp_greedy_ticker ticker = { NULL, NULL, deadline };
    if (keys == NULL || order == NULL)
        st = tp_fail(TP_ERR_NOMEM, "%zu tensors: cannot allocate planner scratch", count);
    for (size_t p = 0; p < n_entries && st == TP_OK; p++) {
        if (p > 0 && deadline > 0 && tp_clock_seconds() >= deadline) {
            rep->timed_out = 1;
            break;
        }
        const size_t n = tp_greedy_order(tensors, count, portfolio[p].order, keys, order);
        size_t arena = 0;
        st = tp_general_place(tensors, g, order, n, portfolio[p].rule, &ticker, trial, &arena);
        if (st == TP_ERR_TIMEOUT) {
            rep->timed_out = 1;
            st = TP_OK;
            break;
        }
        if (st == TP_OK && (!*have || arena < *best)) {
            *have = 1;
            *best = arena;
            if (count > 0)
                memcpy(offsets, trial, count * sizeof *offsets);
            rep->method = portfolio[p].name;
            rep->strategy = n_entries == 1 ? TP_PLAN_GREEDY : TP_PLAN_PORTFOLIO;
        }
    }
    free(keys);
    free(order);
    return st;
}

