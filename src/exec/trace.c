/* The execution trace: hand-written JSON (the core links no JSON library). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "exec/trace_internal.h"

struct tp_trace {
    FILE *f;
    char *path;
    size_t runs;
    size_t nodes_in_run;
    int in_run;
    int failed;
};

tp_status tp_trace_open(const char *path, tp_trace **out)
{
    if (!path || !out)
        return tp_fail(TP_ERR_INVALID, "trace: NULL argument");
    tp_trace *t = calloc(1, sizeof *t);
    if (!t)
        return tp_fail(TP_ERR_NOMEM, "trace: out of memory");
    t->path = malloc(strlen(path) + 1);
    if (!t->path) {
        free(t);
        return tp_fail(TP_ERR_NOMEM, "trace: out of memory");
    }
    memcpy(t->path, path, strlen(path) + 1);
    t->f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w"); /* "-": standard output */
    if (!t->f) {
        free(t->path);
        free(t);
        return tp_fail(TP_ERR_IO, "trace: cannot open '%s' for writing", path);
    }
    fputs("{\"format\": \"tensorplan-trace\", \"version\": 1, \"runs\": [", t->f);
    *out = t;
    return TP_OK;
}

size_t tp_trace_runs(const tp_trace *trace)
{
    return trace ? trace->runs : 0;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* JSON has no NaN or infinity: those become null (counted separately in the stats) */
static void json_float(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fputs("null", f);
}

void tp_trace_begin_run(tp_trace *t, const tp_graph *g)
{
    if (!t)
        return;
    if (t->in_run)
        tp_trace_end_run(t);
    fprintf(t->f, "%s\n {\"graph_uid\": %llu, \"kind\": ", t->runs ? "," : "",
            (unsigned long long)g->uid);
    json_string(t->f, g->kind);
    fputs(", \"model\": ", t->f);
    json_string(t->f, g->model);
    fprintf(t->f, ", \"n_nodes\": %zu, \"nodes\": [", g->n_nodes);
    t->runs++;
    t->nodes_in_run = 0;
    t->in_run = 1;
}

void tp_trace_end_run(tp_trace *t)
{
    if (!t || !t->in_run)
        return;
    fputs("]}", t->f);
    t->in_run = 0;
}

void tp_trace_node(tp_trace *t, const tp_node *nd, const tp_bufref *ref, const float *data,
                   int host_filled)
{
    if (!t || !t->in_run)
        return;
    FILE *f = t->f;
    size_t n = ref->len;
    fprintf(f, "%s\n  {\"id\": %zu, \"name\": ", t->nodes_in_run ? "," : "", nd->id);
    json_string(f, nd->name);
    fputs(", \"op\": ", f);
    json_string(f, tp_op_name(nd->op));
    fputs(", \"backend\": ", f);
    json_string(f, tp_backend_name(ref->backend));
    fprintf(f, ", \"buffer\": {\"id\": %zu, \"offset\": %zu, \"len\": %zu}", ref->id,
            ref->offset, ref->len);
    fprintf(f, ", \"shape\": [%lld, %lld, %lld, %lld], \"dtype\": ", (long long)nd->shape[0],
            (long long)nd->shape[1], (long long)nd->shape[2], (long long)nd->shape[3]);
    json_string(f, tp_dtype_name(nd->dtype));
    if (host_filled)
        fputs(", \"host_filled\": true", f);
    size_t step = n > TP_TRACE_SAMPLE ? n / TP_TRACE_SAMPLE : 1;
    if (nd->dtype == TP_DTYPE_I32) {
        fputs(", \"sample\": [", f);
        for (size_t i = 0, k = 0; i < n && k < TP_TRACE_SAMPLE; i += step, k++) {
            int32_t v;
            memcpy(&v, &data[i], sizeof v);
            fprintf(f, "%s%ld", k ? ", " : "", (long)v);
        }
        fputs("]}", f);
        t->nodes_in_run++;
        return;
    }
    if (nd->dtype == TP_DTYPE_F16 || nd->dtype == TP_DTYPE_Q8_0) {
        /* a KV node whose window holds rows stored in the cache type, not f32 values */
        fputs(", \"sample\": []}", f);
        t->nodes_in_run++;
        return;
    }
    double mn = INFINITY, mx = -INFINITY, sum = 0, ss = 0;
    size_t nan = 0, inf = 0, finite = 0;
    for (size_t i = 0; i < n; i++) {
        double v = data[i];
        if (isnan(v)) {
            nan++;
            continue;
        }
        if (isinf(v)) {
            inf++;
            continue;
        }
        finite++;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        sum += v;
        ss += v * v;
    }
    fputs(", \"stats\": {\"min\": ", f);
    json_float(f, finite ? mn : NAN);
    fputs(", \"max\": ", f);
    json_float(f, finite ? mx : NAN);
    fputs(", \"mean\": ", f);
    json_float(f, finite ? sum / (double)finite : NAN);
    fputs(", \"rms\": ", f);
    json_float(f, finite ? sqrt(ss / (double)finite) : NAN);
    fprintf(f, ", \"nan\": %zu, \"inf\": %zu}, \"sample\": [", nan, inf);
    for (size_t i = 0, k = 0; i < n && k < TP_TRACE_SAMPLE; i += step, k++) {
        if (k)
            fputs(", ", f);
        json_float(f, data[i]);
    }
    fputs("]}", f);
    t->nodes_in_run++;
}

tp_status tp_trace_close(tp_trace *trace)
{
    if (!trace)
        return TP_OK;
    tp_trace_end_run(trace);
    fputs("\n]}\n", trace->f);
    int bad = ferror(trace->f);
    bad |= (trace->f == stdout ? fflush(stdout) : fclose(trace->f)) != 0;
    tp_status st = TP_OK;
    if (bad)
        st = tp_fail(TP_ERR_IO, "trace: writing '%s' failed", trace->path);
    free(trace->path);
    free(trace);
    return st;
}
