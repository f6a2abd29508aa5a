/* Shared by the fuzzing harnesses of tests/fuzz (docs/fuzzing.md).
 *
 * Each harness defines one static function `int NAME(const uint8_t *data, size_t size)` and
 * ends with TPF_ENTRY(NAME), which makes it libFuzzer's entry point. tests/test_fuzz_regress.c
 * includes every harness with TPF_NO_ENTRY defined and TPF_FAIL set to a cmocka failure, and
 * replays the inputs of tests/data/fuzz/NAME/ through it in the ordinary test suite; so a
 * harness keeps all its names static and prefixed by its own name. */
#ifndef TP_TESTS_FUZZ_UTIL_H
#define TP_TESTS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef TPF_FAIL
#define TPF_FAIL(msg) (fprintf(stderr, "fuzz check failed: %s\n", (msg)), abort())
#endif

/* A property every input must keep; on a violation the run stops with the message. */
#define TPF_CHECK(cond, ...)                                                             \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            char tpf_msg_[1024];                                                          \
            int tpf_n_ = snprintf(tpf_msg_, sizeof tpf_msg_, "%s:%d: ", __FILE__, __LINE__); \
            snprintf(tpf_msg_ + tpf_n_, sizeof tpf_msg_ - (size_t)tpf_n_, __VA_ARGS__);  \
            TPF_FAIL(tpf_msg_);                                                          \
        }                                                                                \
    } while (0)

#ifdef TPF_NO_ENTRY
#define TPF_ENTRY(fn)
#else
/* Huge requests made on purpose by an input are a refusal (TP_ERR_NOMEM), not a crash. */
#define TPF_ENTRY(fn)                                                                    \
    const char *__asan_default_options(void);                                           \
    const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }  \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                        \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fn(data, size); }
#endif

#endif
