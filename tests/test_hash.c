/* The name hash of src/common/hash.h, restated from its definition: FNV-1a's step (xor a
 * byte, then multiply by the FNV prime 0x100000001b3) from the offset basis
 * 0x14650fb0739d0383 (1469598103934665603, the value the seeded random weights were drawn
 * from; FNV's published basis is 0xcbf29ce484222325). The weight registry, the random
 * weights, the CSV reader and the tokenizer's map all key on it, so a change of value shows
 * here first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/hash.h"

static uint64_t reference(const unsigned char *b, size_t n)
{
    uint64_t h = 0x14650fb0739d0383ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The empty string hashes to the basis; one byte is one step, written out. */
static void test_basis_and_one_step(void **state)
{
    (void)state;
    assert_true(tp_hash_name("") == 0x14650fb0739d0383ull);
    assert_true(tp_hash_bytes("", 0) == 0x14650fb0739d0383ull);
    const uint64_t a = (0x14650fb0739d0383ull ^ 0x61u) * 0x100000001b3ull;
    assert_true(tp_hash_name("a") == a);
    assert_true(tp_hash_bytes("a", 1) == a);
}

/* The length-taking form hashes exactly len bytes, zeros and bytes above 127 included, and
 * agrees with the terminated form on every prefix of a string. */
static void test_bytes_match_definition(void **state)
{
    (void)state;
    unsigned char buf[64];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37u + 200u); /* holds a zero at i = 8 and high bytes */
    for (size_t n = 0; n <= sizeof buf; n++)
        assert_true(tp_hash_bytes(buf, n) == reference(buf, n));
    const char *s = "blk.12.attn_q.weight";
    char prefix[32];
    for (size_t n = 0; n <= strlen(s); n++) {
        memcpy(prefix, s, n);
        prefix[n] = '\0';
        assert_true(tp_hash_name(prefix) == tp_hash_bytes(s, n));
        assert_true(tp_hash_name(prefix) == reference((const unsigned char *)s, n));
    }
    assert_true(tp_hash_bytes("a\0b", 3) != tp_hash_bytes("a", 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basis_and_one_step),
        cmocka_unit_test(test_bytes_match_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
