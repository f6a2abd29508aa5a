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
    fprintf(out,
        "usage: tensorplan write-model CONFIG [--arch llama|qwen2] [--type T]\n"
        "                              [--tokenizer gpt2|llama] [--pre PRE] [--seed S] -o FILE\n"
        "\n"
        "Writes a GGUF file of the built-in CONFIG: its metadata keys with their exact types,\n"
        "the random weights of the config (seed S) with every matrix stored in type T and every\n"
        "vector in F32, and a synthesised vocabulary of exactly the config's vocab tokens\n"
        "(docs/gguf.md, \"Test models\"). tensorplan model, inspect and run read the file.\n"
        "\n"
        "CONFIG: %s (a byte-level vocabulary needs at least 259 tokens: tiny-qwen2,\n"
        "        tiny-llama)\n"
        "\n"
        "options:\n"
        "  --arch A       llama or qwen2 (default: the config's); llama uses NORM rope,\n"
        "                 qwen2 NEOX; switching drops the biases the other family lacks\n"
        "  --type T       f32, f16, bf16, q8_0 or q4_0 (default f32); q4_k where every\n"
        "                 matrix row is a multiple of 256 elements (no built-in config)\n"
        "  --tokenizer K  gpt2 (byte-level BPE) or llama (SentencePiece); default: gpt2 for\n"
        "                 qwen2, llama for llama\n"
        "  --pre PRE      tokenizer.ggml.pre for gpt2 (default qwen2): %s\n"
        "  --seed S       weight seed (default 1)\n"
        "  -o, --output FILE  the file to write; - is standard output\n"
        "\n"
        "exit codes: 0 written, 1 write failed, 2 bad command line\n"
        "\n"
        "example:\n"
        "  tensorplan write-model tiny-llama --type q8_0 -o tiny-llama.gguf\n",
        tp_model_builtin_names(), tp_tokenizer_pre_names());
}

/* --arch: the family's rope mode and the optional tensors it can hold. */
static int set_arch(tp_model_config *c, const char *arch)
{
    if (strcmp(arch, "qwen2") == 0) {
        c->arch = TP_ARCH_QWEN2;
        c->rope_mode = TP_ROPE_NEOX;
        c->rope_freqs = c->attn_out_bias = c->ffn_bias = 0;
    } else if (strcmp(arch, "llama") == 0) {
        c->arch = TP_ARCH_LLAMA;
        c->rope_mode = TP_ROPE_NORM;
        c->output_bias = 0;
    } else {
        tp_cli_error("--arch: expected llama or qwen2, got '%s'", arch);
        return -1;
    }
    return 0;
}

int tp_cmd_write_model(int argc, char **argv)
{
    const char *model = NULL, *arch = NULL, *type_s = "f32", *tok = NULL, *pre = NULL;
    const char *seed_s = NULL, *path = NULL;
    const tp_cli_flag flags[] = {{"--arch", &arch},   {"--type", &type_s}, {"--tokenizer", &tok},
                                 {"--pre", &pre},     {"--seed", &seed_s}};
    for (int i = 1; i < argc; i++) {
        int taken = tp_cli_take_value(argc, argv, &i, "--output", "-o", &path);
        if (taken == 0)
            taken = tp_cli_take_flags(argc, argv, &i, flags, sizeof flags / sizeof *flags);
        if (taken < 0)
            return TP_EXIT_USAGE;
        if (taken)
            continue;
        if (tp_cli_take_positional(argv[0], argv[i], &model, "CONFIG") != 0)
            return TP_EXIT_USAGE;
    }
    tp_model_config cfg;
    if (tp_cli_builtin_model(model, &cfg) != 0)
        return TP_EXIT_USAGE;
    if (arch && set_arch(&cfg, arch) != 0)
        return TP_EXIT_USAGE;
    tp_gguf_test_model how = {.type = TP_TYPE_F32, .seed = 1, .pre = pre};
    if (!tp_type_from_name(type_s, &how.type) || !tp_type_can_quantize(how.type)) {
        tp_cli_error("--type: expected f32, f16, bf16, q8_0, q4_0 or q4_k, got '%s'", type_s);
        return TP_EXIT_USAGE;
    }
    how.tokenizer = tok ? tok : cfg.arch == TP_ARCH_LLAMA ? "llama" : "gpt2";
    if (strcmp(how.tokenizer, "gpt2") != 0 && strcmp(how.tokenizer, "llama") != 0) {
        tp_cli_error("--tokenizer: expected gpt2 or llama, got '%s'", how.tokenizer);
        return TP_EXIT_USAGE;
    }
    if (strcmp(how.tokenizer, "gpt2") == 0 && pre && !tp_tokenizer_pre_supported(pre)) {
        tp_cli_error("--pre: expected one of %s, got '%s'", tp_tokenizer_pre_names(), pre);
        return TP_EXIT_USAGE;
    }
    unsigned long long seed = 1;
    if (seed_s && tp_cli_parse_count("--seed", seed_s, 0, UINT64_MAX, &seed) != 0)
        return TP_EXIT_USAGE;
    how.seed = seed;
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
