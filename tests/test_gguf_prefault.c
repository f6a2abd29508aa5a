/* tp_gguf_prefault (gguf.h): the pages of a tensor are mapped in (the resident size of the
 * file's mapping, read from /proc/self/smaps, covers them afterwards), ranges outside the
 * file are refused, and a caller's buffer is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tensorplan/gguf.h"
#include "tensorplan/model.h"
#include "tensorplan/test_model.h"

static char tmpdir[] = "/tmp/tp_gguf_prefault_XXXXXX";
static char path[256];

/* The resident bytes ("Rss:") of the mapping that holds address a, from /proc/self/smaps;
 * -1 when it cannot be read (not Linux, no /proc). */
static long long mapping_rss(const void *a)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int inside = 0;
    long long rss = -1;
    const uintptr_t x = (uintptr_t)a;
    while (fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        if (sscanf(line, "%llx-%llx ", &lo, &hi) == 2 && strchr(line, ' ') &&
            line[strspn(line, "0123456789abcdef")] == '-') {
            inside = x >= lo && x < hi;
            continue;
        }
        long long kb;
        if (inside && sscanf(line, "Rss: %lld kB", &kb) == 1) {
            rss = kb * 1024;
            break;
        }
    }
    fclose(f);
    return rss;
}

static void test_prefault_maps_the_tensors_in(void **state)
{
    (void)state;
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    const tp_gguf_tensor *first = tp_gguf_tensor_at(g, 0);
    assert_non_null(first);
    long long before = mapping_rss(first->data);
    if (before < 0) {
        tp_gguf_close(g);
        skip();
    }
    long page = sysconf(_SC_PAGESIZE);
    assert_true(page > 0);
    size_t whole_pages = 0; /* pages lying wholly inside some tensor, counted once */
    const unsigned char *base = (const unsigned char *)first->data - tp_gguf_data_offset(g) -
                                first->offset;
    size_t n_pages = (tp_gguf_file_size(g) + (size_t)page - 1) / (size_t)page;
    unsigned char *covered = calloc(n_pages, 1);
    assert_non_null(covered);
    for (size_t i = 0; i < tp_gguf_tensor_count(g); i++) {
        const tp_gguf_tensor *t = tp_gguf_tensor_at(g, i);
        assert_int_equal(tp_gguf_prefault(g, t->data, t->nbytes), TP_OK);
        size_t a = (size_t)((const unsigned char *)t->data - base), z = a + t->nbytes;
        for (size_t p = (a + (size_t)page - 1) / (size_t)page; (p + 1) * (size_t)page <= z; p++)
            covered[p] = 1;
    }
    for (size_t p = 0; p < n_pages; p++)
        whole_pages += covered[p];
    free(covered);
    long long after = mapping_rss(first->data);
    assert_true(whole_pages > 16); /* the file is larger than what a fault maps around */
    assert_true(after >= (long long)(whole_pages * (size_t)page));
    assert_true(after > before);
    tp_gguf_close(g);
}

static void test_prefault_refuses_ranges_outside_the_file(void **state)
{
    (void)state;
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open(path, &g), TP_OK);
    const tp_gguf_tensor *t = tp_gguf_tensor_at(g, tp_gguf_tensor_count(g) - 1);
    size_t size = tp_gguf_file_size(g);
    const unsigned char *start = /* the file's first byte */
        (const unsigned char *)t->data - tp_gguf_data_offset(g) - t->offset;
    assert_int_equal(tp_gguf_prefault(g, t->data, t->nbytes), TP_OK);
    assert_int_equal(tp_gguf_prefault(g, t->data, 0), TP_OK);
    assert_int_equal(tp_gguf_prefault(g, t->data, t->nbytes + size), TP_ERR_INVALID);
    assert_non_null(strstr(tp_last_error(), "not in the file"));
    assert_int_equal(tp_gguf_prefault(g, start, size), TP_OK);
    assert_int_equal(tp_gguf_prefault(g, start - 1, 1), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_prefault(g, start + size, 1), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_prefault(g, NULL, 1), TP_ERR_INVALID);
    assert_int_equal(tp_gguf_prefault(NULL, t->data, 1), TP_ERR_INVALID);
    tp_gguf_close(g);
}

static void test_prefault_of_a_callers_buffer_reads_nothing(void **state)
{
    (void)state;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    unsigned char *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    tp_gguf *g = NULL;
    assert_int_equal(tp_gguf_open_memory("buffer", buf, (size_t)n, &g), TP_OK);
    const tp_gguf_tensor *t = tp_gguf_tensor_at(g, 0);
    assert_int_equal(tp_gguf_prefault(g, t->data, t->nbytes), TP_OK);
    assert_int_equal(tp_gguf_prefault(g, buf + n, 1), TP_ERR_INVALID);
    tp_gguf_close(g);
    free(buf);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(path, sizeof path, "%s/m.gguf", tmpdir);
    tp_model_config c;
    tp_gguf_test_model how = {0, 7, "llama", NULL};
    if (tp_model_config_builtin("tiny-llama", &c) != TP_OK)
        return -1;
    return tp_gguf_write_test_model(path, &c, &how) == TP_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remove(path);
    return rmdir(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefault_maps_the_tensors_in),
        cmocka_unit_test(test_prefault_refuses_ranges_outside_the_file),
        cmocka_unit_test(test_prefault_of_a_callers_buffer_reads_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
