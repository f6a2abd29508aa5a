/* Small helpers shared by the subcommands (tools/cli.h): the built-in model by name, byte
 * counts and integers checked against a range, a CSV file or standard input, exit codes for
 * library failures, JSON numbers and printing. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common/error.h"
#include "common/grow.h"
#include "common/input_file.h"

int tp_cli_builtin_model(const char *model, tp_model_config *cfg)
{
    if (model == NULL) {
        tp_cli_error("MODEL is missing (built-in: %s)", tp_model_builtin_names());
        return -1;
    }
    if (tp_model_config_builtin(model, cfg) != TP_OK) {
        tp_cli_error("%s", tp_last_error());
        return -1;
    }
    return 0;
}

void tp_cli_alloc_options(const tp_cli_args *a, tp_alloc_options *o)
{
    /* in the order of the rows' choices */
    static const tp_alloc_strategy strategies[] = {TP_STRATEGY_POOL, TP_STRATEGY_ARENA,
                                                   TP_STRATEGY_NAIVE};
    static const tp_alias_policy policies[] = {TP_ALIAS_SOLE_CONSUMER, TP_ALIAS_LAST_CONSUMER,
                                               TP_ALIAS_NONE};
    if (tp_cli_given(a, TP_OPT_STRATEGY))
        o->strategy = strategies[a->opt[TP_OPT_STRATEGY].choice];
    if (tp_cli_given(a, TP_OPT_ALIASING))
        o->aliasing = policies[a->opt[TP_OPT_ALIASING].choice];
}

int tp_cli_parse_size(const char *flag, const char *text, size_t *value)
{
    size_t v = 0;
    const char *c = text;
    if (*c < '0' || *c > '9')
        goto bad;
    for (; *c >= '0' && *c <= '9'; c++) {
        size_t d = (size_t)(*c - '0');
        if (v > (SIZE_MAX - d) / 10)
            goto range;
        v = v * 10 + d;
    }
    /* K, M, G: powers of 1024 (one letter, either case) */
    unsigned shift = 0;
    if (*c == 'K' || *c == 'k')
        shift = 10;
    else if (*c == 'M' || *c == 'm')
        shift = 20;
    else if (*c == 'G' || *c == 'g')
        shift = 30;
    if (shift > 0)
        c++;
    if (*c != '\0')
        goto bad;
    if (shift > 0 && v > (SIZE_MAX >> shift))
        goto range;
    *value = v << shift;
    return 0;
range:
    tp_cli_error("%s %s: out of range, expected at most %zu", flag, text, (size_t)SIZE_MAX);
    return -1;
bad:
    tp_cli_error("%s '%s': expected a number of bytes (decimal digits, optionally followed by "
                 "K, M or G for 1024, 1024^2, 1024^3)",
                 flag, text);
    return -1;
}

int tp_cli_parse_count(const char *flag, const char *text, unsigned long long lo,
                       unsigned long long hi, unsigned long long *value)
{
    unsigned long long v = 0;
    int ok = *text != '\0';
    for (const char *c = text; ok && *c; c++) {
        unsigned d = (unsigned)(*c - '0');
        if (*c < '0' || *c > '9' || v > (ULLONG_MAX - d) / 10)
            ok = 0;
        else
            v = v * 10 + d;
    }
    if (!ok || v < lo || v > hi) {
        tp_cli_error("%s '%s': expected an integer from %llu to %llu", flag, text, lo, hi);
        return -1;
    }
    *value = v;
    return 0;
}

int tp_cli_exit_for(tp_status status)
{
    return (status == TP_ERR_INVALID || status == TP_ERR_OVERFLOW) ? TP_EXIT_BAD_INPUT
                                                                   : TP_EXIT_ERROR;
}

cJSON *tp_cli_json_size(size_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%zu", v);
    return cJSON_CreateRaw(text);
}

tp_status tp_cli_json_print(cJSON *o)
{
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (text == NULL)
        return TP_ERR_NOMEM;
    puts(text);
    cJSON_free(text);
    return TP_OK;
}

tp_status tp_cli_csv_read(const char *path, unsigned flags, tp_csv_table *out)
{
    if (strcmp(path, "-") != 0)
        return tp_csv_read(path, flags, out);
    memset(out, 0, sizeof *out);
    char *data = NULL;
    size_t len = 0;
    TP_TRY(tp_input_read_stream(stdin, "(stdin)", &data, &len));
    tp_status st = tp_csv_parse("(stdin)", data, len, flags, out);
    free(data);
    return st;
}
