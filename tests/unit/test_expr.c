/* test_expr.c — unit tests for core/expr.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "testutil.h"
#include "util/util.h"

/* Evaluate text against syms (may be NULL), asserting success. */
static int64_t ev_s(const char *text, const kevo_syms *syms)
{
    kevo_err err;
    kevo_err_clear(&err);
    int64_t v = -12345;
    kevo_status st = kevo_expr_eval_text(text, syms, &v, &err);
    if (st != KEVO_OK)
        print_error("unexpected failure for '%s': %s\n", text, err.msg);
    assert_int_equal(st, KEVO_OK);
    return v;
}

static int64_t ev(const char *text)
{
    return ev_s(text, NULL);
}

/* Evaluate text expecting failure with status want; the message is left in err. */
static void ev_fail_s(const char *text, const kevo_syms *syms, kevo_status want, kevo_err *err)
{
    kevo_err_clear(err);
    int64_t v = -12345;
    kevo_status st = kevo_expr_eval_text(text, syms, &v, err);
    if (st != want)
        print_error("'%s': status %d, want %d (%s)\n", text, (int)st, (int)want, err->msg);
    assert_int_equal(st, want);
    assert_int_equal(err->status, want);
    assert_int_equal(v, -12345); /* *out untouched on failure */
    assert_true(err->msg[0] != '\0');
}

static void ev_fail(const char *text, kevo_status want, kevo_err *err)
{
    ev_fail_s(text, NULL, want, err);
}

/* Assert that parsing fails with KEVO_ERR_PARSE and leaves *out NULL. */
static void parse_fails(const char *text, kevo_err *err)
{
    kevo_expr *e = (kevo_expr *)(uintptr_t)1;
    kevo_err_clear(err);
    kevo_status st = kevo_expr_parse(text, &e, err);
    if (st != KEVO_ERR_PARSE)
        print_error("'%.60s': status %d, want parse error\n", text, (int)st);
    assert_int_equal(st, KEVO_ERR_PARSE);
    assert_null(e);
    assert_true(strstr(err->msg, "at column") != NULL || strstr(err->msg, "longer than") != NULL);
}

/* A string of n copies of open, then mid, then n copies of close. */
static char *nest(int n, const char *open, const char *mid, const char *close)
{
    size_t lo = strlen(open), lm = strlen(mid), lc = strlen(close);
    char *s = malloc((size_t)n * (lo + lc) + lm + 1);
    assert_non_null(s);
    char *q = s;
    for (int i = 0; i < n; i++, q += lo)
        memcpy(q, open, lo);
    memcpy(q, mid, lm);
    q += lm;
    for (int i = 0; i < n; i++, q += lc)
        memcpy(q, close, lc);
    *q = '\0';
    return s;
}

static void test_literals_and_whitespace(void **state)
{
    (void)state;
    assert_int_equal(ev("0"), 0);
    assert_int_equal(ev("42"), 42);
    assert_int_equal(ev("0x10"), 16);
    assert_int_equal(ev("0XfF"), 255);
    assert_int_equal(ev("0x7fffffffffffffff"), INT64_MAX);
    assert_int_equal(ev("9223372036854775807"), INT64_MAX);
    assert_int_equal(ev(" \t1\n+\r2 \f*\v3 "), 7);
    assert_int_equal(ev("( 1 )"), 1);
    assert_int_equal(ev("-9223372036854775807-1"), INT64_MIN);
}

static void test_precedence(void **state)
{
    (void)state;
    assert_int_equal(ev("2+3*4"), 14);
    assert_int_equal(ev("2*3+4"), 10);
    assert_int_equal(ev("(2+3)*4"), 20);
    assert_int_equal(ev("2*3%4"), 2);
    assert_int_equal(ev("2*(3%4)"), 6);
    assert_int_equal(ev("10-4-3"), 3);
    assert_int_equal(ev("100/10/5"), 2);
    assert_int_equal(ev("-2*-3"), 6);
    assert_int_equal(ev("- -5"), 5);
    assert_int_equal(ev("+5"), 5);
    assert_int_equal(ev("!0"), 1);
    assert_int_equal(ev("!7"), 0);
    assert_int_equal(ev("!!7"), 1);
    assert_int_equal(ev("-!0"), -1);
    assert_int_equal(ev("1<2==1"), 1);
    assert_int_equal(ev("3>2>1"), 0); /* (3>2)>1 */
    assert_int_equal(ev("1+1==2"), 1);
    assert_int_equal(ev("2<=2"), 1);
    assert_int_equal(ev("2>=3"), 0);
    assert_int_equal(ev("2!=3"), 1);
    assert_int_equal(ev("1<2 && 3<2 || 1"), 1);
    assert_int_equal(ev("1 || 0 && 0"), 1); /* && binds tighter */
    /* C truncating division and remainder */
    assert_int_equal(ev("7/2"), 3);
    assert_int_equal(ev("-7/2"), -3);
    assert_int_equal(ev("7/-2"), -3);
    assert_int_equal(ev("-7%3"), -1);
    assert_int_equal(ev("7%-3"), 1);
}

static void test_ternary(void **state)
{
    (void)state;
    assert_int_equal(ev("1?2:3"), 2);
    assert_int_equal(ev("0?2:3"), 3);
    assert_int_equal(ev("0?1:0?2:3"), 3); /* 0?1:(0?2:3) */
    assert_int_equal(ev("0?1:1?2:3"), 2);
    assert_int_equal(ev("1?2:0?3:4"), 2);
    assert_int_equal(ev("1?0?4:5:6"), 5); /* nested in the middle */
    assert_int_equal(ev("0?0?4:5:6"), 6);
    assert_int_equal(ev("1+1 ? 2*3 : 4"), 6);
    assert_int_equal(ev("(0 ? 1 : 2) + 10"), 12);

    kevo_syms s;
    kevo_syms_init(&s);
    assert_int_equal(kevo_syms_set(&s, "FUSE", 0), KEVO_OK);
    assert_int_equal(ev_s("FUSE==0 ? 1 : 0", &s), 1);
    assert_int_equal(kevo_syms_set(&s, "FUSE", 1), KEVO_OK);
    assert_int_equal(ev_s("FUSE==0 ? 1 : 0", &s), 0);
}

/* The symbol table: full to KEVO_SYMS_MAX names (the hash probes past
 * collisions), insertion order kept, a replace adds nothing, one more is
 * refused, a struct copy and a re-init behave. */
static void test_syms_table(void **state)
{
    (void)state;
    kevo_syms s;
    kevo_syms_init(&s);
    char name[KEVO_SYM_NAME_MAX];
    for (int i = 0; i < KEVO_SYMS_MAX; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(kevo_syms_set(&s, name, 1000 + i), KEVO_OK);
    }
    assert_int_equal(s.n, KEVO_SYMS_MAX);
    assert_int_equal(kevo_syms_set(&s, "one_more", 1), KEVO_ERR_NOMEM);
    assert_int_equal(kevo_syms_set(&s, "s7", -7), KEVO_OK); /* a replace fits a full table */
    assert_int_equal(s.n, KEVO_SYMS_MAX);
    kevo_syms c = s;
    for (int i = 0; i < KEVO_SYMS_MAX; i++) {
        int64_t v = 0;
        snprintf(name, sizeof name, "s%d", i);
        assert_string_equal(c.name[i], name);
        assert_true(kevo_syms_get(&c, name, &v));
        assert_int_equal(v, i == 7 ? -7 : 1000 + i);
    }
    assert_false(kevo_syms_get(&c, "s96", NULL));
    assert_false(kevo_syms_get(&c, "S1", NULL));
    assert_int_equal(kevo_syms_set(&s, "", 1), KEVO_ERR_ARG);
    kevo_syms_init(&c);
    assert_false(kevo_syms_get(&c, "s0", NULL));
    assert_int_equal(kevo_syms_set(&c, "s0", 5), KEVO_OK);
    assert_int_equal(c.n, 1);

    /* a name is its bytes, not a prefix of them: BN and B, a longest name */
    kevo_syms_init(&c);
    char longest[KEVO_SYM_NAME_MAX];
    memset(longest, 'x', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    assert_int_equal(kevo_syms_set(&c, "BN", 128), KEVO_OK);
    assert_int_equal(kevo_syms_set(&c, longest, 9), KEVO_OK);
    int64_t v = 0;
    assert_false(kevo_syms_find(&c, "BN", 1, kevo_syms_hash("BN", 1), &v));
    assert_false(kevo_syms_get(&c, "BNX", NULL));
    assert_true(kevo_syms_find(&c, "BNX", 2, kevo_syms_hash("BNX", 2), &v)); /* the first 2 bytes */
    assert_int_equal(v, 128);
    assert_true(kevo_syms_get(&c, longest, &v));
    assert_int_equal(v, 9);
    char longer[KEVO_SYM_NAME_MAX + 8];
    memset(longer, 'x', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_false(kevo_syms_get(&c, longer, NULL));
    assert_int_equal(kevo_syms_set(&c, longer, 1), KEVO_ERR_ARG);
}

/* An expression reads names by their hash and bytes: names that share a
 * prefix stay apart, an unknown one is named whole, and one too long for a
 * kevo_syms is refused when parsed. */
static void test_expr_names_lookup(void **state)
{
    (void)state;
    kevo_syms s;
    kevo_syms_init(&s);
    assert_int_equal(kevo_syms_set(&s, "BN", 128), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "BNX", 3), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "B", 7), KEVO_OK);
    kevo_err err;
    assert_int_equal(ev_s("BN * 100 + BNX * 10 + B", &s), 12837);
    ev_fail_s("BN + BNXY", &s, KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "unknown symbol 'BNXY'"));
    /* the parser refuses a name no kevo_syms can hold */
    parse_fails("BN + a_name_longer_than_any_symbol_may_be", &err);
}

static void test_short_circuit(void **state)
{
    (void)state;
    kevo_err err;
    assert_int_equal(ev("0 && 1/0"), 0);
    assert_int_equal(ev("1 || x"), 1);
    assert_int_equal(ev("0 && x && 1/0"), 0);
    assert_int_equal(ev("0 || 0 || 5"), 1);
    assert_int_equal(ev("0 || 0"), 0);
    assert_int_equal(ev("2 && 3"), 1);
    assert_int_equal(ev("2 && 0"), 0);
    assert_int_equal(ev("0 ? 1/0 : 7"), 7);
    assert_int_equal(ev("1 ? 7 : x"), 7);
    ev_fail("1 && 1/0", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "division by zero"));
    ev_fail("0 || x", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "'x'"));
}

static void test_functions(void **state)
{
    (void)state;
    kevo_err err;
    assert_int_equal(ev("cdiv(7,2)"), 4);
    assert_int_equal(ev("cdiv(8,2)"), 4);
    assert_int_equal(ev("cdiv(0,5)"), 0);
    assert_int_equal(ev("cdiv(1,1)"), 1);
    assert_int_equal(ev("cdiv(-7,2)"), -3); /* ceiling of -3.5 */
    assert_int_equal(ev("cdiv(9223372036854775807,2)"), 4611686018427387904LL);
    ev_fail("cdiv(1,0)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "'cdiv'"));
    ev_fail("cdiv(1,-2)", KEVO_ERR_ARG, &err);

    assert_int_equal(ev("min(3,1,2)"), 1);
    assert_int_equal(ev("max(3,1,2)"), 3);
    assert_int_equal(ev("min(-1,1)"), -1);
    assert_int_equal(ev("max(5,5)"), 5);
    assert_int_equal(ev("max(1,2,3,4,5,6,7,8,9,10)"), 10);
    assert_int_equal(ev("min(max(1,2),3)"), 2);

    assert_int_equal(ev("round_up(5,4)"), 8);
    assert_int_equal(ev("round_up(8,4)"), 8);
    assert_int_equal(ev("round_up(0,4)"), 0);
    assert_int_equal(ev("round_up(-5,4)"), -4);
    ev_fail("round_up(5,0)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "'round_up'"));
    ev_fail("round_up(9223372036854775807,2)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));

    assert_int_equal(ev("log2(1)"), 0);
    assert_int_equal(ev("log2(2)"), 1);
    assert_int_equal(ev("log2(1023)"), 9);
    assert_int_equal(ev("log2(1024)"), 10);
    assert_int_equal(ev("log2(9223372036854775807)"), 62);
    ev_fail("log2(0)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "'log2'"));
    ev_fail("log2(-4)", KEVO_ERR_ARG, &err);

    assert_int_equal(ev("is_pow2(1)"), 1);
    assert_int_equal(ev("is_pow2(64)"), 1);
    assert_int_equal(ev("is_pow2(96)"), 0);
    assert_int_equal(ev("is_pow2(0)"), 0);
    assert_int_equal(ev("is_pow2(-8)"), 0);
    assert_int_equal(ev("is_pow2(0x4000000000000000)"), 1);
    assert_int_equal(ev("is_pow2(-9223372036854775807-1)"), 0);

    /* errors inside arguments propagate */
    ev_fail("max(1, 2/0)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "division by zero"));
}

static void test_function_errors(void **state)
{
    (void)state;
    kevo_err err;
    static const struct {
        const char *text, *name;
    } bad[] = {
        {"cdiv(1)", "'cdiv'"},       {"cdiv(1,2,3)", "'cdiv'"}, {"min(1)", "'min'"},
        {"max(1)", "'max'"},         {"round_up(1)", "'round_up'"}, {"round_up(1,2,3)", "'round_up'"},
        {"log2(1,2)", "'log2'"},     {"is_pow2(1,2)", "'is_pow2'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ev_fail(bad[i].text, KEVO_ERR_ARG, &err);
        assert_non_null(strstr(err.msg, bad[i].name));
        assert_non_null(strstr(err.msg, "argument"));
    }
    ev_fail("cdiv(1)", KEVO_ERR_ARG, &err);
    assert_string_equal(err.msg, "function 'cdiv' takes 2 arguments, got 1 at column 1 in 'cdiv(1)'");

    /* unknown function: a parse error that names it */
    parse_fails("1 + foo(2)", &err);
    assert_string_equal(err.msg, "unknown function 'foo' at column 5 in '1 + foo(2)'");
    /* no arguments at all is bad syntax */
    parse_fails("is_pow2()", &err);
    /* a function name not followed by '(' is an ordinary symbol */
    kevo_syms s;
    kevo_syms_init(&s);
    assert_int_equal(kevo_syms_set(&s, "min", 5), KEVO_OK);
    assert_int_equal(ev_s("min + 1", &s), 6);
}

static void test_symbols(void **state)
{
    (void)state;
    kevo_syms s;
    kevo_syms_init(&s);
    assert_int_equal(kevo_syms_set(&s, "M", 1000), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "N", 512), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "BM", 128), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "BN", 64), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "BK", 32), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "B", 3), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "STAGES", 4), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "max_smem", 232448), KEVO_OK);
    assert_int_equal(kevo_syms_set(&s, "_x9", -7), KEVO_OK);

    assert_int_equal(ev_s("cdiv(M,BM)*cdiv(N,BN)*B", &s), 8 * 8 * 3);
    assert_int_equal(ev_s("STAGES*(BM*BK+BK*BN)*2", &s), 49152);
    assert_int_equal(ev_s("STAGES*(BM*BK+BK*BN)*2 <= max_smem", &s), 1);
    assert_int_equal(ev_s("_x9 * 2", &s), -14);

    /* parse once, evaluate many times */
    kevo_err err;
    kevo_expr *e = NULL;
    const char *text = "cdiv(M, BM) * BM";
    assert_int_equal(kevo_expr_parse(text, &e, &err), KEVO_OK);
    assert_non_null(e);
    assert_string_equal(kevo_expr_text(e), text);
    int64_t v = 0;
    assert_int_equal(kevo_expr_eval(e, &s, &v, &err), KEVO_OK);
    assert_int_equal(v, 1024);
    assert_int_equal(kevo_syms_set(&s, "M", 1025), KEVO_OK);
    assert_int_equal(kevo_expr_eval(e, &s, &v, &err), KEVO_OK);
    assert_int_equal(v, 1152);
    /* unbound now: fails and names it */
    kevo_syms empty;
    kevo_syms_init(&empty);
    kevo_err_clear(&err);
    assert_int_equal(kevo_expr_eval(e, &empty, &v, &err), KEVO_ERR_ARG);
    assert_string_equal(err.msg, "unknown symbol 'M' at column 6 in 'cdiv(M, BM) * BM'");
    assert_int_equal(kevo_expr_eval(e, NULL, &v, &err), KEVO_ERR_ARG);
    kevo_expr_free(e);

    ev_fail_s("M + nope", &s, KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "unknown symbol 'nope'"));

    /* names of 31 characters are fine; 32 are a parse error */
    const char *n31 = "abcdefghijklmnopqrstuvwxyz01234";
    assert_int_equal(strlen(n31), 31);
    assert_int_equal(kevo_syms_set(&s, n31, 11), KEVO_OK);
    assert_int_equal(ev_s("abcdefghijklmnopqrstuvwxyz01234 + 1", &s), 12);
    parse_fails("abcdefghijklmnopqrstuvwxyz012345 + 1", &err);
}

static void test_division_by_zero(void **state)
{
    (void)state;
    kevo_err err;
    ev_fail("1/0", KEVO_ERR_ARG, &err);
    assert_string_equal(err.msg, "division by zero at column 2 in '1/0'");
    ev_fail("1%0", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "modulo by zero"));
    ev_fail("5 / (3 - 3)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "division by zero"));
    ev_fail("0 % 0", KEVO_ERR_ARG, &err);
}

static void test_overflow(void **state)
{
    (void)state;
    kevo_err err;
    ev_fail("9223372036854775807+1", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));
    ev_fail("-9223372036854775807-2", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));
    ev_fail("(-9223372036854775807-1)/-1", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));
    assert_int_equal(ev("(-9223372036854775807-1)%-1"), 0);
    ev_fail("-(-9223372036854775807-1)", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));
    ev_fail("4294967296*4294967296", KEVO_ERR_ARG, &err);
    assert_non_null(strstr(err.msg, "overflow"));
    ev_fail("3037000500*3037000500", KEVO_ERR_ARG, &err);
    assert_int_equal(ev("3037000499*3037000499"), 9223372030926249001LL);
    ev_fail("-4294967296*4294967296*2", KEVO_ERR_ARG, &err);

    kevo_syms s;
    kevo_syms_init(&s);
    assert_int_equal(kevo_syms_set(&s, "big", INT64_MAX / 2 + 1), KEVO_OK);
    ev_fail_s("big*2", &s, KEVO_ERR_ARG, &err);
    assert_int_equal(ev_s("(big-1)*2+1", &s), INT64_MAX);

    /* out-of-range literals are parse errors */
    parse_fails("9223372036854775808", &err);
    assert_non_null(strstr(err.msg, "out of range"));
    parse_fails("0x8000000000000000", &err);
    parse_fails("1 + 99999999999999999999999999", &err);
    assert_non_null(strstr(err.msg, "column 5"));
}

static void test_nesting_depth(void **state)
{
    (void)state;
    kevo_err err;
    char *s;

    s = nest(64, "(", "1", ")");
    assert_int_equal(ev(s), 1);
    free(s);
    s = nest(65, "(", "1", ")");
    parse_fails(s, &err);
    assert_non_null(strstr(err.msg, "nesting"));
    free(s);
    s = nest(2000, "(", "1", ")");
    parse_fails(s, &err);
    free(s);
    s = nest(3000, "(", "", "");
    parse_fails(s, &err);
    free(s);

    s = nest(64, "-", "1", "");
    assert_int_equal(ev(s), 1);
    free(s);
    s = nest(63, "-", "1", "");
    assert_int_equal(ev(s), -1);
    free(s);
    s = nest(65, "-", "1", "");
    parse_fails(s, &err);
    assert_non_null(strstr(err.msg, "nesting"));
    free(s);
    s = nest(4000, "!", "1", "");
    parse_fails(s, &err);
    free(s);
    s = nest(64, "+", "7", "");
    assert_int_equal(ev(s), 7);
    free(s);
    s = nest(65, "+", "7", "");
    parse_fails(s, &err);
    free(s);

    s = nest(64, "max(1,", "2", ")");
    assert_int_equal(ev(s), 2);
    free(s);
    s = nest(65, "max(1,", "2", ")");
    parse_fails(s, &err);
    free(s);

    s = nest(64, "0?1:", "5", "");
    assert_int_equal(ev(s), 5);
    free(s);
    s = nest(65, "0?1:", "5", "");
    parse_fails(s, &err);
    free(s);
    s = nest(64, "1?", "5", ":0");
    assert_int_equal(ev(s), 5);
    free(s);
    s = nest(65, "1?", "5", ":0");
    parse_fails(s, &err);
    free(s);

    /* a long flat chain is not nesting */
    s = nest(2047, "1+", "1", "");
    assert_int_equal(strlen(s), 4095);
    assert_int_equal(ev(s), 2048);
    free(s);
}

static void test_length_limit(void **state)
{
    (void)state;
    kevo_err err;
    char *s = malloc(4098);
    assert_non_null(s);
    memset(s, ' ', 4095);
    strcpy(s + 4095, "1");
    assert_int_equal(strlen(s), 4096);
    assert_int_equal(ev(s), 1);
    memset(s, ' ', 4096);
    strcpy(s + 4096, "1");
    assert_int_equal(strlen(s), 4097);
    parse_fails(s, &err);
    assert_non_null(strstr(err.msg, "4096"));
    free(s);
}

static void test_parse_errors(void **state)
{
    (void)state;
    kevo_err err;
    static const char *const bad[] = {
        "",   "   ", "1 +",   "(1",    "1)",     "cdiv(1,", "@",       "1 2",  "1 = 2", "1 & 2",
        "1 | 2", "0x", "0xg", "012",  "1 ? 2", "1 ? 2 :", "()",     "min(1,)", ",",   "cdiv 1",
        "12abc", "*1", "1 ** 2", "a b", "#",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        parse_fails(bad[i], &err);

    /* the column points at the offending token */
    parse_fails("cdiv(M,BM", &err);
    assert_string_equal(err.msg, "expected ',' or ')' at column 10 in 'cdiv(M,BM'");
    parse_fails("1 2", &err);
    assert_string_equal(err.msg, "expected operator or end of text at column 3 in '1 2'");
    parse_fails("1 +", &err);
    assert_string_equal(err.msg, "expected expression at column 4 in '1 +'");
    parse_fails("", &err);
    assert_string_equal(err.msg, "expected expression at column 1 in ''");
    parse_fails("(1 + 2", &err);
    assert_string_equal(err.msg, "expected ')' at column 7 in '(1 + 2'");
    parse_fails("1 ? 2 3", &err);
    assert_string_equal(err.msg, "expected ':' at column 7 in '1 ? 2 3'");
    parse_fails("  @", &err);
    assert_string_equal(err.msg, "expected expression at column 3 in '  @'");
}

static void test_api_edges(void **state)
{
    (void)state;
    kevo_err err;
    kevo_expr *e = NULL;
    int64_t v;
    assert_int_equal(kevo_expr_parse(NULL, &e, &err), KEVO_ERR_ARG);
    assert_null(e);
    assert_int_equal(kevo_expr_parse("1", NULL, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_expr_eval(NULL, NULL, &v, &err), KEVO_ERR_ARG);
    /* a NULL error buffer is allowed */
    assert_int_equal(kevo_expr_parse("1 +", &e, NULL), KEVO_ERR_PARSE);
    assert_int_equal(kevo_expr_eval_text("1/0", NULL, &v, NULL), KEVO_ERR_ARG);
    kevo_expr_free(NULL);

    /* the text is a copy the expression owns */
    char buf[16];
    strcpy(buf, " 6 * 7 ");
    assert_int_equal(kevo_expr_parse(buf, &e, &err), KEVO_OK);
    strcpy(buf, "garbage");
    assert_string_equal(kevo_expr_text(e), " 6 * 7 ");
    assert_int_equal(kevo_expr_eval(e, NULL, &v, &err), KEVO_OK);
    assert_int_equal(v, 42);
    kevo_expr_free(e);
}

/* kevo_expr_fold of text at syms, asserting success; caller frees. */
static char *fold_s(const char *text, const kevo_syms *syms, bool *is_const, int64_t *value)
{
    kevo_expr *e = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_expr_parse(text, &e, &err), KEVO_OK);
    kv_buf b;
    kv_buf_init(&b);
    kevo_status st = kevo_expr_fold(e, syms, &b, is_const, value, &err);
    if (st)
        print_error("fold '%s': %s\n", text, err.msg);
    assert_int_equal(st, KEVO_OK);
    kevo_expr_free(e);
    return kv_buf_take(&b);
}

/* Folding at P=0, Q=2: decided values, taken branches, neutral operands,
 * deciding operands of || and &&, parentheses only where the text needs
 * them. */
static void test_fold(void **state)
{
    (void)state;
    kevo_syms syms;
    kevo_syms_init(&syms);
    assert_int_equal(kevo_syms_set(&syms, "P", 0), KEVO_OK);
    assert_int_equal(kevo_syms_set(&syms, "Q", 2), KEVO_OK);
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"P ? 64 : 64 * Q", "128"},
        {"P ? cdiv(a * b, Q) : a", "a"},
        {"Q ? cdiv(a * b, Q * 64) : a", "cdiv(a * b, 128)"},
        {"a * 1 + 0", "a"},
        {"1 * a / 1 - P", "a"},
        {"0 + a - 3", "a - 3"},
        {"Q * 3 * a", "6 * a"},
        {"a * Q * 3", "a * 2 * 3"},
        {"a - (b - c)", "a - (b - c)"},
        {"(a - b) - c", "a - b - c"},
        {"(a + b) * Q", "(a + b) * 2"},
        {"-(a + b)", "-(a + b)"},
        {"-(a * Q)", "-(a * 2)"},
        {"a && Q", "a != 0"},
        {"a > 1 && Q", "a > 1"},
        {"a + 1 && Q && b", "a + 1 && b"},
        {"a || Q", "1"},
        {"a && P", "0"},
        {"a || P || b < 3", "a || b < 3"},
        {"(c ? a : b) + Q", "(c ? a : b) + 2"},
        {"c ? (d ? a : b) : P + a", "c ? (d ? a : b) : a"},
        {"max(a, Q * 4, P)", "max(a, 8, 0)"},
        {"P - Q * 4 + a", "(-8) + a"},
        {"a - P - 5 * Q", "a - 10"},
        {"!(P) + a", "1 + a"},
        {"!(a < Q)", "!(a < 2)"},
        {"a / P", "a / 0"},
        {"a % 1", "a % 1"},
        {"cdiv(a + b, Q - 1)", "a + b"},
        {"round_up(a, P + 1) * 2", "a * 2"},
        {"round_up(a, 0 * b)", "round_up(a, 0 * b)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool c = true;
        char *out = fold_s(cases[i].in, &syms, &c, NULL);
        if (strcmp(out, cases[i].out) != 0)
            print_error("fold '%s': '%s', want '%s'\n", cases[i].in, out, cases[i].out);
        assert_string_equal(out, cases[i].out);
        free(out);
    }
    bool c = false;
    int64_t v = 0;
    free(fold_s("P ? a : Q * 100", &syms, &c, &v));
    assert_true(c);
    assert_int_equal(v, 200);
    free(fold_s("P ? a : Q * a", &syms, &c, &v));
    assert_false(c);
    /* a value no literal spells stays unfolded */
    free(fold_s("-9223372036854775807 - 1 + a", &syms, &c, &v));
    assert_false(c);
    kevo_err err;
    kevo_err_clear(&err);
    kv_buf b;
    kv_buf_init(&b);
    assert_int_not_equal(kevo_expr_fold(NULL, &syms, &b, NULL, NULL, &err), KEVO_OK);
    kv_buf_release(&b);
}


/* A random expression over a, b (free) and P, Q (bound), into b. */
static void fold_gen(kv_buf *b, int depth)
{
    static const char *const atoms[] = {"a", "b", "P", "Q", "0", "1", "2", "3", "7", "64"};
    static const char *const ops[] = {" + ", " - ", " * ", " / ", " % ", " < ", " <= ", " == ", " != ", " && ", " || "};
    static const char *const fns[] = {"cdiv", "min", "max", "round_up"};
    int pick = depth <= 0 ? 0 : (int)(tu_rng() % 6);
    switch (pick) {
    case 0:
    case 1:
        kv_buf_puts(b, atoms[tu_rng() % 10]);
        return;
    case 2:
        kv_buf_puts(b, "(");
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ops[tu_rng() % 11]);
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ")");
        return;
    case 3:
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ops[tu_rng() % 4]);
        fold_gen(b, depth - 1);
        return;
    case 4:
        kv_buf_puts(b, "(");
        fold_gen(b, depth - 1);
        kv_buf_puts(b, " ? ");
        fold_gen(b, depth - 1);
        kv_buf_puts(b, " : ");
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ")");
        return;
    default:
        kv_buf_printf(b, "%s%s(", tu_rng() % 4 ? "" : "-", fns[tu_rng() % 4]);
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ", ");
        fold_gen(b, depth - 1);
        kv_buf_puts(b, ")");
        return;
    }
}

/* Random expressions folded at random P and Q: wherever one evaluates at a
 * binding of a and b, its folded text evaluates to the same value. */
static void test_fold_random(void **state)
{
    (void)state;
    tu_rng_seed();
    int compared = 0;
    for (int i = 0; i < 3000; i++) {
        kv_buf t;
        kv_buf_init(&t);
        fold_gen(&t, 5);
        kevo_syms part;
        kevo_syms_init(&part);
        int64_t p = (int64_t)(tu_rng() % 5) - 1, q = (int64_t)(tu_rng() % 5) - 1;
        assert_int_equal(kevo_syms_set(&part, "P", p), KEVO_OK);
        assert_int_equal(kevo_syms_set(&part, "Q", q), KEVO_OK);
        char *folded = fold_s(t.data, &part, NULL, NULL);
        kevo_expr *e = NULL, *f = NULL;
        kevo_err err;
        kevo_err_clear(&err);
        assert_int_equal(kevo_expr_parse(t.data, &e, &err), KEVO_OK);
        kevo_status st = kevo_expr_parse(folded, &f, &err);
        if (st)
            print_error("'%s' folded to '%s', which does not parse: %s\n", t.data, folded, err.msg);
        assert_int_equal(st, KEVO_OK);
        for (int k = 0; k < 12; k++) {
            kevo_syms all = part;
            assert_int_equal(kevo_syms_set(&all, "a", (int64_t)(tu_rng() % 9) - 3), KEVO_OK);
            assert_int_equal(kevo_syms_set(&all, "b", (int64_t)(tu_rng() % 9) - 3), KEVO_OK);
            int64_t want, got;
            if (kevo_expr_eval(e, &all, &want, &err) != KEVO_OK)
                continue;
            st = kevo_expr_eval(f, &all, &got, &err);
            if (st || got != want)
                print_error("'%s' at P=%lld Q=%lld folded to '%s': %lld, want %lld (%s)\n", t.data, (long long)p,
                            (long long)q, folded, (long long)got, (long long)want, st ? err.msg : "");
            assert_int_equal(st, KEVO_OK);
            assert_int_equal(got, want);
            compared++;
        }
        kevo_expr_free(e);
        kevo_expr_free(f);
        free(folded);
        kv_buf_release(&t);
    }
    printf("%d evaluations compared\n", compared);
    assert_true(compared > 3000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals_and_whitespace),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_ternary),
        cmocka_unit_test(test_syms_table),
        cmocka_unit_test(test_expr_names_lookup),
        cmocka_unit_test(test_short_circuit),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_function_errors),
        cmocka_unit_test(test_symbols),
        cmocka_unit_test(test_division_by_zero),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_nesting_depth),
        cmocka_unit_test(test_length_limit),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_api_edges),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_fold_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
