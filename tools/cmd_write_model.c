/* tensorplan write-model: a GGUF test model of a built-in config with random weights. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "tensorplan/gguf_model.h"
#include "tensorplan/test_model.h"
#include "tensorplan/quant.h"
#include "tensorplan/tokenizer.h"

void tp_help_write_model(FILE *out)
{
    tp_cli_help_usage(out, "usage: ", TP_CMD_WRITE_MODEL, "CONFIG -o FILE");
    fprintf(out,
        "\n"
        "Writes a GGUF file of the built-in CONFIG: its metadata keys with their exact types,\n"
        "the random weights of the config (seed S) with every matrix stored in type T and every\n"
        "vector in F32, and a synthesised vocabulary of exactly the config's vocab tokens\n"
        "(docs/gguf.md, \"Test models\"). tensorplan model, inspect and run read the file.\n"
        "\n"
        "CONFIG: %s (a byte-level vocabulary needs at least 259 tokens: tiny-qwen2,\n"
        "        tiny-llama)\n"
        "\n",
        tp_model_builtin_names());
    tp_cli_help_options(out, "options:", TP_CLI_BIT(TP_CMD_WRITE_MODEL), 0);
    fputs(
        "\n"
        "exit codes: 0 written, 1 write failed, 2 bad command line\n"
        "\n"
        "example:\n"
        "  tensorplan write-model tiny-llama --type q8_0 -o tiny-llama.gguf\n",
        out);
}

/* --arch: the family's rope mode and the optional tensors it can hold (index: the row's
 * choices, llama|qwen2). */
static void set_arch(tp_model_config *c, int arch)
{
    if (arch == 1) {
        c->arch = TP_ARCH_QWEN2;
        c->rope_mode = TP_ROPE_NEOX;
        c->rope_freqs = c->attn_out_bias = c->ffn_bias = 0;
    } else {
        c->arch = TP_ARCH_LLAMA;
        c->rope_mode = TP_ROPE_NORM;
        c->output_bias = 0;
    }
}

int tp_cmd_write_model(int argc, char **argv)
{
    static const char *const tokenizers[] = {"gpt2", "llama"}; /* the row's choices */
    tp_cli_args o;
    if (tp_cli_parse(TP_CMD_WRITE_MODEL, argc, argv, &o) != 0)
        return TP_EXIT_USAGE;
    const char *path = o.opt[TP_OPT_OUTPUT].text;
    tp_model_config cfg;
    if (tp_cli_builtin_model(o.pos[0], &cfg) != 0)
        return TP_EXIT_USAGE;
    if (tp_cli_given(&o, TP_OPT_ARCH))
        set_arch(&cfg, o.opt[TP_OPT_ARCH].choice);
    tp_gguf_test_model how = {.type = TP_TYPE_F32, .seed = 1, .pre = o.opt[TP_OPT_PRE].text};
    /* the row's choices are the names of the types a matrix can be stored in */
    if (tp_cli_given(&o, TP_OPT_TYPE) &&
        (!tp_type_from_name(o.opt[TP_OPT_TYPE].text, &how.type) ||
         !tp_type_can_quantize(how.type))) {
        tp_cli_error("--type: %s cannot be written", o.opt[TP_OPT_TYPE].text);
        return TP_EXIT_USAGE;
    }
    how.tokenizer = tp_cli_given(&o, TP_OPT_TOKENIZER) ? tokenizers[o.opt[TP_OPT_TOKENIZER].choice]
                    : cfg.arch == TP_ARCH_LLAMA        ? "llama"
                                                       : "gpt2";
    if (strcmp(how.tokenizer, "gpt2") == 0 && how.pre && !tp_tokenizer_pre_supported(how.pre)) {
        tp_cli_error("--pre: expected one of %s, got '%s'", tp_tokenizer_pre_names(), how.pre);
        return TP_EXIT_USAGE;
    }
    if (tp_cli_given(&o, TP_OPT_SEED))
        how.seed = o.opt[TP_OPT_SEED].count;
    if (!path) {
        tp_cli_error("no output file (-o FILE)");
        return TP_EXIT_USAGE;
    }
    tp_status st = tp_gguf_write_test_model(path, &cfg, &how);
    if (st != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return st == TP_ERR_INVALID ? TP_EXIT_USAGE : TP_EXIT_ERROR;
    }
    return TP_EXIT_OK;
}
