/* GGUF files as models: the check of a file's tensors against its family's table
 * (tensorplan/model_family.h), the bytes per type and the weights as views of the mapping
 * (docs/gguf.md, "Models"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "loader/gguf_model_internal.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/model_family.h"
#include "tensorplan/quant.h"

/* The first tensor of an optional group in a file of family arch (in layer 0), which decides
 * whether the group is present; NULL when the family's files hold no such group. */
static const tp_model_tensor *group_head(const tp_model_tensor *t, size_t n, tp_arch arch,
                                         tp_tensor_group g)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].group == g && tp_model_tensor_in_family(&t[i], arch))
            return &t[i];
    return NULL;
}

static tp_status read_vocab(const tp_gguf *g, tp_model_config *c)
{
    const char *file = tp_gguf_name(g);
    const tp_gguf_tensor *t = tp_gguf_find_tensor(g, "token_embd.weight");
    if (!t)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': missing", file);
    if (t->n_dims != 2) /* else a 1-D table reads as 1 row: a wrong shape, not a wrong count */
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': expected shape [n_embd, "
                       "vocabulary] (2 dimensions), got %u dimensions", file,
                       (unsigned)t->n_dims);
    if (t->ne[1] < 1 || t->ne[1] > GM_MAX_DIM)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': expected 1..%d tokens "
                       "in ne[1], got %" PRId64, file, GM_MAX_DIM, t->ne[1]);
    c->vocab = (int)t->ne[1];
    const tp_gguf_kv *kv = tp_gguf_find_kv(g, "tokenizer.ggml.tokens");
    if (kv && (kv->type != TP_GGUF_ARRAY || kv->array.type != TP_GGUF_STRING))
        return tp_fail(TP_ERR_INVALID, "%s: key 'tokenizer.ggml.tokens': expected array of "
                       "string, got %s", file, tp_gguf_vtype_name(kv->type));
    if (kv && kv->array.count != (size_t)c->vocab)
        return tp_fail(TP_ERR_INVALID, "%s: tensor 'token_embd.weight': %d rows, but "
                       "tokenizer.ggml.tokens holds %zu tokens", file, c->vocab,
                       kv->array.count);
    return TP_OK;
}

static tp_status check_one(const tp_gguf *g, const tp_model_config *c, const tp_model_tensor *s,
                           const tp_gguf_tensor *t)
{
    const char *file = tp_gguf_name(g);
    const int64_t want[4] = {tp_model_tensor_dim(c, s->ne0), tp_model_tensor_dim(c, s->ne1), 1,
                             1};
    if (memcmp(want, t->ne, sizeof want) != 0)
        return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': expected shape [%" PRId64 ", %" PRId64
                       "], got [%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "]", file,
                       t->name, want[0], want[1], t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    const char *tn = tp_type_name(t->type);
    if (s->ne1 == TP_DIM_ONE) {
        if (t->type != TP_TYPE_F32 && t->type != TP_TYPE_F16 && t->type != TP_TYPE_BF16)
            return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': type %s: a 1-D tensor must be F32, "
                           "F16 or BF16", file, t->name, tn ? tn : "?");
    } else if (!tp_type_can_execute(t->type)) {
        return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': type %s cannot be executed here "
                       "(docs/quant.md)", file, t->name, tn ? tn : "?");
    }
    return TP_OK;
}

/* Is NAME a tensor the family lists, under the flags of c? */
static int listed(const tp_model_config *c, const char *name)
{
    const tp_model_tensor *t = tp_model_find_tensor(c, name, NULL);
    return t && tp_model_group_present(c, t->group);
}

static tp_status check_listed(const tp_gguf *g, const tp_model_config *c, const char *arch)
{
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (!listed(c, t->name))
            return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': not a tensor of a %d-layer %s "
                           "model%s", tp_gguf_name(g), t->name, c->n_layer, arch,
                           strncmp(t->name, "blk.", 4) == 0 ? " (or its group is absent in "
                                                              "blk.0)" : "");
    }
    return TP_OK;
}

tp_status tp_gguf_model_check_tensors(const tp_gguf *g, tp_model_config *c)
{
    const char *file = tp_gguf_name(g);
    const char *arch = c->arch == TP_ARCH_LLAMA ? "llama" : "qwen2";
    TP_TRY(read_vocab(g, c));
    size_t n = 0;
    const tp_model_tensor *specs = tp_model_tensors(&n);
    char name[TP_GGUF_MAX_NAME + 1];
    for (int f = TP_GROUP_REQUIRED + 1; f < TP_GROUP_COUNT; f++) {
        const tp_model_tensor *head = group_head(specs, n, c->arch, (tp_tensor_group)f);
        if (head)
            tp_model_tensor_name(head, 0, name, sizeof name);
        tp_model_group_set(c, (tp_tensor_group)f, head && tp_gguf_find_tensor(g, name) != NULL);
    }
    TP_TRY(check_listed(g, c, arch));
    for (size_t i = 0; i < n; i++) {
        if (!tp_model_tensor_in_family(&specs[i], c->arch))
            continue;
        const int on = tp_model_group_present(c, specs[i].group);
        for (int l = 0; l < (specs[i].per_layer ? c->n_layer : 1); l++) {
            tp_model_tensor_name(&specs[i], l, name, sizeof name);
            const tp_gguf_tensor *t = tp_gguf_find_tensor(g, name);
            if (!t && on) {
                char head[TP_GGUF_MAX_NAME + 1] = "";
                if (specs[i].group != TP_GROUP_REQUIRED)
                    tp_model_tensor_name(group_head(specs, n, c->arch, specs[i].group), 0,
                                         head, sizeof head);
                return tp_fail(TP_ERR_INVALID, "%s: tensor '%s': missing%s%s%s", file, name,
                               head[0] ? " (" : "", head, head[0] ? " is present)" : "");
            }
            if (t)
                TP_TRY(check_one(g, c, &specs[i], t));
        }
    }
    return TP_OK;
}

tp_status tp_gguf_model_weight_bytes(const tp_gguf *g, size_t *bytes_by_type, size_t *total)
{
    if (!g || !bytes_by_type)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_model_weight_bytes: NULL argument");
    memset(bytes_by_type, 0, TP_TYPE_ID_LIMIT * sizeof *bytes_by_type);
    size_t sum = 0;
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        if (t->type >= TP_TYPE_ID_LIMIT || t->nbytes > SIZE_MAX - sum)
            return tp_fail(TP_ERR_OVERFLOW, "%s: tensor '%s': bytes do not add up in size_t",
                           tp_gguf_name(g), t->name);
        bytes_by_type[t->type] += t->nbytes;
        sum += t->nbytes;
    }
    if (total)
        *total = sum;
    return TP_OK;
}

tp_status tp_gguf_model_weights(const tp_gguf *g, const tp_model_config *config,
                                tp_weights **out)
{
    if (!g || !config || !out)
        return tp_fail(TP_ERR_INVALID, "tp_gguf_model_weights: NULL argument");
    tp_weights *w = NULL;
    TP_TRY(tp_weights_create(&w));
    size_t n = 0;
    const tp_model_tensor *specs = tp_model_tensors(&n);
    char name[TP_GGUF_MAX_NAME + 1];
    tp_status st = TP_OK;
    for (size_t i = 0; i < n && st == TP_OK; i++) {
        if (!tp_model_tensor_in_family(&specs[i], config->arch) ||
            !tp_model_group_present(config, specs[i].group))
            continue;
        for (int l = 0; l < (specs[i].per_layer ? config->n_layer : 1) && st == TP_OK; l++) {
            tp_model_tensor_name(&specs[i], l, name, sizeof name);
            const tp_gguf_tensor *t = tp_gguf_find_tensor(g, name);
            if (!t) {
                st = tp_fail(TP_ERR_INVALID, "%s: tensor '%s': missing", tp_gguf_name(g), name);
                break;
            }
            const size_t rows = (size_t)(t->ne[1] * t->ne[2] * t->ne[3]);
            st = tp_weights_add_view(w, name, t->type, rows, (size_t)t->ne[0], t->data);
        }
    }
    if (st != TP_OK) {
        tp_weights_destroy(w);
        return st;
    }
    *out = w;
    return TP_OK;
}
