/* space_fixture.h — what the template-family tests share (test_space*.c):
 * the real families loaded from the tree, the default LCE shape, sm_90a's
 * limits, and a temporary folder of space files written from text.  Its
 * functions are static inline, so a program that uses only some of them
 * builds without warnings. */
#ifndef KEVO_TEST_SPACE_FIXTURE_H
#define KEVO_TEST_SPACE_FIXTURE_H

/* (after <cmocka.h>, whose assertions it uses) */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"

static inline kevo_space *load_family(const char *family)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/templates/%s.json", tu_home(), family);
    kevo_space *s = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_space_load(path, &s, &err);
    if (st != KEVO_OK)
        print_error("load '%s': %s\n", path, err.msg);
    assert_int_equal(st, KEVO_OK);
    assert_non_null(s);
    return s;
}

static inline void shape_of(const char *text, kevo_syms *out)
{
    kevo_err err;
    kevo_err_clear(&err);
    const kevo_op *op = kevo_op_find("ikbo_lce");
    assert_non_null(op);
    kevo_status st = op->parse_shape(text, out, &err);
    if (st)
        print_error("shape '%s': %s\n", text ? text : "(default)", err.msg);
    assert_int_equal(st, KEVO_OK);
}

static inline kevo_limits h100(void)
{
    kevo_limits lim;
    kevo_err err;
    assert_int_equal(kevo_limits_for_arch("sm_90a", &lim, &err), KEVO_OK);
    return lim;
}

/* cfg = default with "K=V,K=V" applied. */
static inline void config_of(const kevo_space *s, const char *params, kevo_config *cfg)
{
    assert_true(tu_config_of(s, params, cfg));
}

static inline int64_t cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}


#if defined(__GNUC__)
__attribute__((unused))
#endif
static char tmpdir[64];

static inline void write_text(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < sizeof path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static inline int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo_test_space_XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    write_text(tmpdir, "dummy.cu", "extern \"C\" __global__ void k() {}\n");
    return 0;
}

static inline int remove_tmpdir(void **state)
{
    (void)state;
    tu_rm_tree(tmpdir);
    return 0;
}

/* A minimal valid space file with one piece replaced. */
#define SP_HEAD "{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n"
#define SP_PARAMS "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 2}],\n"
#define SP_LAUNCH "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": [32, 1, 1], \"smem\": 0}]"

static inline kevo_status load_text(const char *name, const char *text, kevo_space **out, kevo_err *err)
{
    write_text(tmpdir, name, text);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    kevo_err_clear(err);
    *out = (kevo_space *)(uintptr_t)1; /* must be reset */
    kevo_status st = kevo_space_load(path, out, err);
    unlink(path);
    return st;
}

static inline void expect_load_error(const char *text, kevo_status want, const char *msg_part)
{
    kevo_space *s;
    kevo_err err;
    kevo_status st = load_text("bad.json", text, &s, &err);
    if (st != want || !strstr(err.msg, msg_part))
        print_error("load -> %d '%s', want %d '%s'\n--- %s\n", (int)st, err.msg, (int)want, msg_part, text);
    assert_int_equal(st, want);
    assert_null(s);
    assert_int_equal(err.status, want);
    assert_non_null(strstr(err.msg, msg_part));
    /* a parse error names the space file; an I/O error names the file it could not read */
    if (want == KEVO_ERR_PARSE)
        assert_non_null(strstr(err.msg, "bad.json"));
}

/* "prelude": system header names reach generated source between angle
 * brackets, so only plain names pass; the rendered source begins with them,
 * ahead of the params' #defines. */

#endif
