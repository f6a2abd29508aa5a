/* How far the logits of a GGUF file move from the exact forward of its dequantized weights:
 * the same file run twice in one process, once through the typed kernels (block types meet
 * activations rounded to 16 bits per group of 32, docs/quant.md section 5) and once with every
 * tensor dequantized exactly to an owned f32 tensor (f32 kernels, no rounding of
 * activations). Prints, per prompt length, the largest absolute logit difference over the
 * prompt rows and the relative L2 distance of the last row, and whether the greedy tokens
 * agree. Usage: bench_logit_drift FILE.gguf [N_PROMPT] (default 64). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "tensorplan/decode.h"
#include "tensorplan/gguf.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/quant.h"

static tp_status dequantized_copy(const tp_weights *src, tp_weights **out)
{
    TP_TRY(tp_weights_create(out));
    for (size_t i = 0; i < tp_weights_count(src); i++) {
        const tp_weight *w = tp_weights_at(src, i);
        float *data;
        TP_TRY(tp_weights_add(*out, w->name, w->rows, w->cols, &data));
        for (size_t r = 0; r < w->rows; r++)
            TP_TRY(tp_dequantize_row(w->type, (const uint8_t *)w->bytes + r * w->row_bytes,
                                     data + r * w->cols, w->cols));
    }
    return TP_OK;
}

static tp_status logits_of(const tp_model_config *c, const tp_weights *w, const int32_t *prompt,
                           size_t n, float *logits)
{
    tp_session_options o = tp_session_options_default();
    o.tail_rows = 0;
    o.n_ctx = n + 1;
    tp_session *s = NULL;
    TP_TRY(tp_session_create(c, w, &o, &s));
    tp_status st = tp_session_forward(s, prompt, n, n, logits);
    tp_session_destroy(s);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_logit_drift FILE.gguf [N_PROMPT]\n");
        return 2;
    }
    size_t n = argc > 2 ? (size_t)atoi(argv[2]) : 64;
    tp_gguf *g = NULL;
    tp_model_config c;
    tp_weights *typed = NULL, *exact = NULL;
    if (tp_gguf_open(argv[1], &g) != TP_OK || tp_gguf_model_config(g, &c) != TP_OK ||
        tp_gguf_model_weights(g, &c, &typed) != TP_OK || dequantized_copy(typed, &exact) != TP_OK) {
        fprintf(stderr, "bench_logit_drift: %s\n", tp_last_error());
        return 1;
    }
    size_t vocab = (size_t)c.vocab;
    int32_t *prompt = malloc(n * sizeof *prompt);
    float *a = malloc(n * vocab * sizeof *a), *b = malloc(n * vocab * sizeof *b);
    if (!prompt || !a || !b)
        return 1;
    for (size_t i = 0; i < n; i++)
        prompt[i] = (int32_t)((i * 7919 + 13) % vocab);
    if (logits_of(&c, typed, prompt, n, a) != TP_OK || logits_of(&c, exact, prompt, n, b) != TP_OK) {
        fprintf(stderr, "bench_logit_drift: %s\n", tp_last_error());
        return 1;
    }
    double max_abs = 0, num = 0, den = 0, scale = 0;
    size_t same = 0;
    for (size_t r = 0; r < n; r++) {
        size_t ia = 0, ib = 0;
        for (size_t i = 0; i < vocab; i++) {
            double d = fabs((double)a[r * vocab + i] - b[r * vocab + i]);
            max_abs = d > max_abs ? d : max_abs;
            scale = fabs(b[r * vocab + i]) > scale ? fabs(b[r * vocab + i]) : scale;
            ia = a[r * vocab + i] > a[r * vocab + ia] ? i : ia;
            ib = b[r * vocab + i] > b[r * vocab + ib] ? i : ib;
            if (r == n - 1) {
                num += d * d;
                den += (double)b[r * vocab + i] * b[r * vocab + i];
            }
        }
        same += ia == ib;
    }
    printf("%s: %zu-token prompt, %d layers: max |logit - exact| %.4g (largest |logit| %.3g), "
           "last row relative L2 %.3g, greedy tokens equal on %zu of %zu rows\n",
           argv[1], n, c.n_layer, max_abs, scale, sqrt(num / den), same, n);
    free(prompt);
    free(a);
    free(b);
    tp_weights_destroy(exact);
    tp_weights_destroy(typed);
    tp_gguf_close(g);
    return 0;
}
