/* The install tree (docs/embedding.md): `cmake --install` of this build folder into a
 * temporary prefix must hold every public header of include/tensorplan byte for byte, one
 * archive with an object for every source file of every layer, the shared library under its
 * soname libtensorplan.so.MAJOR (when built), tensorplan.pc giving the prefix's flags, the
 * CMake package, the program (reporting the header's version) and the man page naming every
 * command and exit code. Expected names come from the source tree and the version macros,
 * never from the install rules. The consumer builds are scripts/check_install.sh (CI). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensorplan/version.h"

static char prefix[] = "/tmp/tp_install_XXXXXX";

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Output of a shell command (at most 64 KiB), NUL-terminated; the caller frees it. */
static char *run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *buf = calloc(1, 65536);
    assert_non_null(buf);
    size_t n = fread(buf, 1, 65535, p);
    buf[n] = '\0';
    assert_int_equal(pclose(p), 0);
    return buf;
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(prefix))
        return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cmake --install '%s' --prefix '%s' --component tensorplan >/dev/null",
             TP_BINARY_DIR, prefix);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", prefix);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_every_public_header_installed_verbatim(void **state)
{
    (void)state;
    DIR *d = opendir(TP_SOURCE_DIR "/include/tensorplan");
    assert_non_null(d);
    struct dirent *e;
    int headers = 0;
    while ((e = readdir(d)) != NULL) {
        const size_t n = strlen(e->d_name);
        if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0)
            continue;
        char src[1024], dst[1024];
        snprintf(src, sizeof src, "%s/include/tensorplan/%s", TP_SOURCE_DIR, e->d_name);
        snprintf(dst, sizeof dst, "%s/include/tensorplan/%s", prefix, e->d_name);
        size_t ls = 0, ld = 0;
        char *a = slurp(src, &ls), *b = slurp(dst, &ld);
        assert_non_null(a);
        if (!b)
            fail_msg("%s not installed", dst);
        assert_int_equal(ls, ld);
        assert_memory_equal(a, b, ls);
        free(a);
        free(b);
        headers++;
    }
    closedir(d);
    assert_true(headers >= 10);
}

/* `ar t` of the archive lists STEM.c.o for every src/LAYER/STEM.c. */
static void test_archive_holds_every_layer(void **state)
{
    (void)state;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "ar t '%s/lib/libtensorplan.a'", prefix);
    char *members = run(cmd);
    /* every folder of src/ is a layer */
    char src[1024];
    snprintf(src, sizeof src, "%s/src", TP_SOURCE_DIR);
    DIR *top = opendir(src);
    assert_non_null(top);
    size_t n_layers = 0;
    struct dirent *le;
    while ((le = readdir(top)) != NULL) {
        if (le->d_name[0] == '.')
            continue;
        n_layers++;
        char dir[1400];
        snprintf(dir, sizeof dir, "%s/%s", src, le->d_name);
        DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            const size_t n = strlen(e->d_name);
            if (n < 3 || strcmp(e->d_name + n - 2, ".c") != 0)
                continue;
            char want[512];
            snprintf(want, sizeof want, "\n%s.o\n", e->d_name);
            char *hay = malloc(strlen(members) + 2);
            assert_non_null(hay);
            hay[0] = '\n';
            strcpy(hay + 1, members);
            if (!strstr(hay, want))
                fail_msg("libtensorplan.a has no %s.o", e->d_name);
            free(hay);
        }
        closedir(d);
    }
    closedir(top);
    assert_true(n_layers >= 12);
    free(members);
}

static void test_shared_library_has_major_soname(void **state)
{
    (void)state;
#if !TP_SHARED
    skip();
#else
    char so[1024], soname[64], cmd[1200];
    snprintf(soname, sizeof soname, "libtensorplan.so.%d", TP_VERSION_MAJOR);
    snprintf(so, sizeof so, "%s/lib/%s", prefix, soname);
    struct stat st;
    assert_int_equal(stat(so, &st), 0); /* the link resolves */
    snprintf(cmd, sizeof cmd, "readelf -d '%s' | grep SONAME", so);
    char *out = run(cmd);
    char want[80];
    snprintf(want, sizeof want, "[%s]", soname);
    assert_non_null(strstr(out, want));
    free(out);
#endif
}

/* The directory after FLAG (e.g. "-I") in flags, resolved; fails when absent. */
static void assert_flag_dir(const char *flags, const char *flag, const char *want_dir)
{
    const char *p = flags;
    while ((p = strstr(p, flag)) != NULL) {
        p += strlen(flag);
        char dir[1024];
        size_t n = strcspn(p, " \n");
        assert_true(n < sizeof dir);
        memcpy(dir, p, n);
        dir[n] = '\0';
        char got[PATH_MAX], want[PATH_MAX];
        if (realpath(dir, got) && realpath(want_dir, want) && strcmp(got, want) == 0)
            return;
    }
    fail_msg("no %s flag naming %s in: %s", flag, want_dir, flags);
}

static void test_pkg_config_file_names_the_prefix(void **state)
{
    (void)state;
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs tensorplan && "
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --modversion tensorplan",
             prefix, prefix);
    char *out = run(cmd);
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/include", prefix);
    assert_flag_dir(out, "-I", dir);
    snprintf(dir, sizeof dir, "%s/lib", prefix);
    assert_flag_dir(out, "-L", dir);
    assert_non_null(strstr(out, " -ltensorplan"));
    char want[64];
    snprintf(want, sizeof want, "\n%d.%d.%d\n", TP_VERSION_MAJOR, TP_VERSION_MINOR,
             TP_VERSION_PATCH);
    assert_non_null(strstr(out, want));
    /* the file formats' libraries are private: only a static link needs them */
    snprintf(cmd, sizeof cmd,
             "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --static --libs tensorplan", prefix);
    char *st = run(cmd);
    assert_non_null(strstr(st, "-lcjson"));
    assert_null(strstr(out, "-lcjson"));
    free(st);
    free(out);
}

static void test_cmake_package_and_program(void **state)
{
    (void)state;
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/lib/cmake/tensorplan/tensorplanConfig.cmake", prefix);
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/lib/cmake/tensorplan/tensorplanConfigVersion.cmake", prefix);
    assert_int_equal(stat(path, &st), 0);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "'%s/bin/tensorplan' --version", prefix);
    char *out = run(cmd);
    char want[64];
    snprintf(want, sizeof want, "tensorplan %d.%d.%d\n", TP_VERSION_MAJOR, TP_VERSION_MINOR,
             TP_VERSION_PATCH);
    assert_string_equal(out, want);
    free(out);
}

static void test_man_page_names_commands_and_exit_codes(void **state)
{
    (void)state;
    char path[1200];
    snprintf(path, sizeof path, "%s/share/man/man1/tensorplan.1", prefix);
    char *man = slurp(path, NULL);
    assert_non_null(man);
    assert_true(strncmp(man, ".TH TENSORPLAN 1", 16) == 0);
    const char *commands[] = { "plan", "validate", "graph", "alloc", "model", "run" };
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        char want[64];
        snprintf(want, sizeof want, ".BI \"%s ", commands[i]);
        if (!strstr(man, want))
            fail_msg("the man page does not describe %s", commands[i]);
    }
    for (int code = 0; code <= 4; code++) {
        char want[32];
        snprintf(want, sizeof want, ".TP\n.B %d\n", code);
        if (!strstr(man, want))
            fail_msg("the man page does not list exit code %d", code);
    }
    free(man);
}

static void test_version_string_matches_macros(void **state)
{
    (void)state;
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", TP_VERSION_MAJOR, TP_VERSION_MINOR, TP_VERSION_PATCH);
    assert_string_equal(tp_version(), want);
    assert_string_equal(TP_VERSION_STRING, want);
    assert_int_equal(TP_VERSION_NUMBER,
                     TP_VERSION_MAJOR * 10000 + TP_VERSION_MINOR * 100 + TP_VERSION_PATCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_public_header_installed_verbatim),
        cmocka_unit_test(test_archive_holds_every_layer),
        cmocka_unit_test(test_shared_library_has_major_soname),
        cmocka_unit_test(test_pkg_config_file_names_the_prefix),
        cmocka_unit_test(test_cmake_package_and_program),
        cmocka_unit_test(test_man_page_names_commands_and_exit_codes),
        cmocka_unit_test(test_version_string_matches_macros),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
