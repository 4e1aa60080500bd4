/* test_security_export.c — what kevo export and kv_write_file do with
 * untrusted input and with what the user already has (ctest label
 * security), without a GPU:
 *   - kv_write_file writes through devices and FIFOs, refuses symbolic
 *     links, keeps a file's permissions, and `report --svg /dev/stdout`
 *     writes the SVG to stdout (a pipe and a file). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "testutil.h"
#include "util/util.h"

static char tmp[64];

static const char *home(void)
{
    const char *h = getenv("KEVO_HOME");
    return h && *h ? h : KEVO_SOURCE_DIR;
}

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

static char *slurp(const char *dir, const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    char *t = NULL;
    kevo_err err;
    assert_int_equal(kv_read_file(path, &t, NULL, &err), KEVO_OK);
    return t;
}

static void put(const char *dir, const char *rel, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* ---- kv_write_file ---- */

static void test_write_special_files(void **state)
{
    (void)state;
    kevo_err err;
    struct stat sb;
    /* a device: written through, still a device.  As root (where the old code replaced /dev/null) on a
     * null device of our own first, so that a regression harms only the test's folder */
    char dev[128];
    snprintf(dev, sizeof dev, "%s/null", tmp);
    if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
        assert_int_equal(kv_write_file(dev, "x", 1, &err), KEVO_OK);
        assert_int_equal(lstat(dev, &sb), 0);
        assert_true(S_ISCHR(sb.st_mode));
    }
    assert_int_equal(kv_write_file("/dev/null", "x", 1, &err), KEVO_OK);
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));

    /* a FIFO: written through (the reader gets the bytes), still a FIFO */
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    assert_int_equal(kv_write_file(fifo, "hello", 5, &err), KEVO_OK);
    char got[16] = {0};
    assert_int_equal(read(rd, got, sizeof got - 1), 5);
    assert_string_equal(got, "hello");
    close(rd);
    assert_int_equal(lstat(fifo, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));

    /* a symbolic link: refused; link and target unchanged */
    char target[128], link[128];
    snprintf(target, sizeof target, "%s/target.txt", tmp);
    snprintf(link, sizeof link, "%s/link.svg", tmp);
    put(tmp, "target.txt", "precious\n");
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(kv_write_file(link, "new", 3, &err), KEVO_ERR_IO);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *t = slurp(tmp, "target.txt");
    assert_string_equal(t, "precious\n");
    free(t);

    /* a regular file keeps its permissions; a folder is refused */
    char f[128];
    snprintf(f, sizeof f, "%s/private.txt", tmp);
    put(tmp, "private.txt", "old\n");
    chmod(f, 0600);
    assert_int_equal(kv_write_file(f, "new\n", 4, &err), KEVO_OK);
    assert_int_equal(stat(f, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(kv_write_file(tmp, "x", 1, &err), KEVO_ERR_IO);
}

static void test_svg_to_stdout(void **state)
{
    (void)state;
    char db[1024];
    snprintf(db, sizeof db, "%s/tests/fixtures/export/kevo_h200.db", home());
    /* a link of our own to the stream first (a regression replaces it, not /dev/stdout), then /dev/stdout */
    char link[128], cmd[2560];
    snprintf(link, sizeof link, "%s/stdout", tmp);
    assert_int_equal(symlink("/proc/self/fd/1", link), 0);
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --svg '%s' | grep -q '</svg>'", KEVO_BINARY, db, link);
    assert_int_equal(sh("%s", cmd), 0);
    struct stat sb;
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    /* stdout a pipe */
    snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --svg /dev/stdout", KEVO_BINARY, db);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    kv_buf b;
    kv_buf_init(&b);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0)
        kv_buf_append(&b, chunk, n);
    assert_int_equal(pclose(p), 0);
    assert_non_null(b.data);
    assert_non_null(strstr(b.data, "<svg"));
    assert_non_null(strstr(b.data, "</svg>"));
    assert_null(strstr(b.data, "wrote")); /* the SVG alone */
    kv_buf_release(&b);
    /* stdout a file */
    char log[128];
    snprintf(log, sizeof log, "%s/svg.out", tmp);
    char *args[] = {"kevo", "report", "--db", db, "--svg", "/dev/stdout", NULL};
    assert_int_equal(tu_wait(tu_spawn(log, args)), 0);
    char *t = slurp(tmp, "svg.out");
    assert_non_null(strstr(t, "<svg"));
    assert_non_null(strstr(t, "</svg>"));
    free(t);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/kevo-security-test-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_special_files),
        cmocka_unit_test(test_svg_to_stdout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
