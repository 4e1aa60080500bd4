/* test_op.c — op table and interface (tensor descriptions, tolerances, the
 * GPU side's ABI layout), ikbo_lce shapes, dtype conversions, the input
 * generator, cand_to_user maps and the CPU reference. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/gpu_int.h"
#include "kernels/ikbo_lce/abi.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"
#include "testutil.h"
#include "util/util.h"

static const kevo_op *lce(void)
{
    return tu_op("ikbo_lce");
}

static void parse_ok(const char *text, kevo_syms *s)
{
    tu_parse_ok(lce(), text, s);
}

static void assert_syms_equal(const kevo_syms *a, const kevo_syms *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_string_equal(a->name[i], b->name[i]);
        assert_int_equal(a->value[i], b->value[i]);
    }
}

/* ---- op table ---- */

static void test_op_lookup(void **state)
{
    (void)state;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    assert_non_null(op);
    assert_string_equal(op->name, "ikbo_lce");
    assert_non_null(op->summary);
    assert_string_equal(op->default_shape, "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70");
    assert_null(kevo_op_find("ikbo_fa_nope"));
    assert_null(kevo_op_find("IKBO_LCE"));
    assert_null(kevo_op_find(""));
    assert_null(kevo_op_find(NULL));

    int n = -1;
    const kevo_op *const *list = kevo_op_list(&n);
    assert_int_equal(n, 2);
    assert_ptr_equal(list[0], op); /* the first: the default op of tune and export */
    assert_ptr_equal(list[1], kevo_op_find("ikbo_fa"));

    static const char *const want[] = {"B", "M", "N", "Ku", "Kc", "U", "ratio", "Kup", "Kcp"};
    assert_int_equal(op->nsymbols, 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(op->symbols[i], want[i]);
}

/* Every op of the table describes what the generic evaluator, the LLM check
 * and export need: one output, at most one map, dimensions that evaluate at its
 * default shape, tensor maps inside its ABI struct, a launch_seq. */
static void test_op_interface(void **state)
{
    (void)state;
    int n = 0;
    const kevo_op *const *ops = kevo_op_list(&n);
    for (int k = 0; k < n; k++) {
        const kevo_op *op = ops[k];
        kevo_syms shape;
        kevo_err err;
        kevo_err_clear(&err);
        assert_int_equal(op->parse_shape(NULL, &shape, &err), KEVO_OK);
        assert_true(op->ntensors >= 2 && op->ntensors <= KEVO_OP_MAX_TENSORS);
        assert_non_null(op->tolerance);
        /* peers: 1..KEVO_MAX_PEERS, named [a-z0-9_], unique, exactly one BASELINE; an AFTER peer names the
           two peers whose difference is its broadcast, a BASELINE peer is never AFTER */
        assert_true(op->npeers >= 1 && op->npeers <= KEVO_MAX_PEERS);
        int baselines = 0;
        for (int i = 0; i < op->npeers; i++) {
            const kevo_peer_desc *d = &op->peers[i];
            assert_non_null(d->name);
            assert_true(strlen(d->name) > 0 && strlen(d->name) < KEVO_PEER_NAME_MAX);
            assert_int_equal(strspn(d->name, "abcdefghijklmnopqrstuvwxyz0123456789_"), strlen(d->name));
            assert_non_null(d->label);
            assert_non_null(d->verdict);
            assert_int_equal(kevo_op_peer_index(op, d->name), i);
            baselines += (d->flags & KEVO_PEER_BASELINE) != 0;
            if (d->flags & KEVO_PEER_AFTER) {
                assert_false(d->flags & KEVO_PEER_BASELINE);
                assert_true(kevo_op_peer_index(op, d->bcast_with) >= 0);
                assert_true(kevo_op_peer_index(op, d->bcast_without) >= 0);
            }
        }
        assert_int_equal(baselines, 1);
        assert_int_equal(kevo_op_peer_index(op, "no_such_peer"), -1);
        assert_non_null(op->ref_name);
        int outputs = 0, maps = 0;
        for (int i = 0; i < op->ntensors; i++) {
            const kevo_tensor_desc *t = &op->tensors[i];
            outputs += t->role == KEVO_TENSOR_OUTPUT;
            maps += t->role == KEVO_TENSOR_MAP;
            assert_int_equal(kevo_op_tensor_index(op, t->name), i);
            int64_t dims[KEVO_TENSOR_MAX_RANK], ld = 0;
            uint64_t count = 0;
            assert_int_equal(kevo_tensor_shape(t, &shape, dims, &ld, &count, &err), KEVO_OK);
            assert_true(ld >= dims[t->rank - 1]);
            if (t->role == KEVO_TENSOR_MAP) {
                assert_non_null(t->users);
                assert_non_null(t->per_user);
                assert_false(t->tmap);
                assert_null(t->padded);
            }
            if (op->gpu && t->tmap)
                assert_true(t->tmap_offset % 64 == 0 && t->tmap_offset + 128 <= op->gpu->args_size);
        }
        assert_int_equal(outputs, 1);
        assert_true(maps <= 1);
        assert_int_equal(kevo_op_tensor_index(op, "no_such_tensor"), -1);
        if (op->gpu) {
            assert_true(op->gpu->args_size <= WK_ARGS_MAX);
            assert_true(op->gpu->seq_offset + sizeof(int) <= op->gpu->args_size);
        }
        for (int i = 0; op->export_desc && i < op->export_desc->ntuned_keys; i++) {
            int64_t v;
            assert_true(kevo_syms_get(&shape, op->export_desc->tuned_keys[i], &v));
        }
    }
    char names[64];
    kevo_op_names(names, sizeof names);
    assert_string_equal(names, "ikbo_lce, ikbo_fa");
    kevo_op_names(names, 4);
    assert_string_equal(names, "ikb");
}

/* ikbo_lce's tensors are its ABI struct's: names, layouts, tensor map slots;
 * what kernels read and write (the LLM source check) as before. */
static void test_lce_tensors(void **state)
{
    (void)state;
    const kevo_op *op = lce();
    const char *in[KEVO_OP_MAX_FIELDS], *out[KEVO_OP_MAX_FIELDS];
    /* each tensor, then its TMA descriptor: the LLM check guards both */
    static const char *const want_in[] = {"w_user", "tm_w_user", "w_cand", "tm_w_cand", "e_user",
                                          "tm_e_user", "e_cand", "tm_e_cand", "cand_to_user"};
    assert_int_equal(kevo_op_tensor_names(op, false, in, KEVO_OP_MAX_FIELDS), 9);
    for (int i = 0; i < 9; i++)
        assert_string_equal(in[i], want_in[i]);
    assert_int_equal(kevo_op_tensor_names(op, true, out, KEVO_OP_MAX_FIELDS), 2);
    assert_string_equal(out[0], "out");
    assert_string_equal(out[1], "tm_out");
    assert_int_equal(kevo_op_tensor_names(op, false, in, 2), 2);

    static const struct {
        const char *name;
        size_t tmap_offset;
    } maps[] = {
        {"w_user", offsetof(kevo_lce_args, tm_w_user)}, {"w_cand", offsetof(kevo_lce_args, tm_w_cand)},
        {"e_user", offsetof(kevo_lce_args, tm_e_user)}, {"e_cand", offsetof(kevo_lce_args, tm_e_cand)},
        {"out", offsetof(kevo_lce_args, tm_out)},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(maps); i++) {
        int t = kevo_op_tensor_index(op, maps[i].name);
        assert_true(t >= 0 && op->tensors[t].tmap);
        assert_int_equal(op->tensors[t].tmap_offset, maps[i].tmap_offset);
    }
    assert_int_equal(op->gpu->args_size, sizeof(kevo_lce_args));
    assert_int_equal(op->gpu->seq_offset, offsetof(kevo_lce_args, launch_seq));

    kevo_syms s;
    parse_ok("B=7,M=5,N=16,Ku=9,Kc=3,U=2", &s);
    int64_t dims[KEVO_TENSOR_MAX_RANK], ld;
    uint64_t count;
    kevo_err err;
    const kevo_tensor_desc *w = &op->tensors[kevo_op_tensor_index(op, "w_user")];
    assert_int_equal(kevo_tensor_shape(w, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(dims[0], 5);
    assert_int_equal(dims[1], 9);
    assert_int_equal(ld, 16); /* Kup */
    assert_int_equal(count, 45);
    const kevo_tensor_desc *e = &op->tensors[kevo_op_tensor_index(op, "e_user")];
    assert_int_equal(kevo_tensor_shape(e, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(dims[0], 2);
    assert_int_equal(ld, 16); /* no padded copy: the last dim */
    assert_int_equal(count, 2 * 9 * 16);
    const kevo_tensor_desc *m = &op->tensors[kevo_op_tensor_index(op, "cand_to_user")];
    assert_int_equal(m->role, KEVO_TENSOR_MAP);
    assert_int_equal(kevo_tensor_shape(m, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(count, 7);

    /* a symbol the shape lacks, a dimension below 1: errors naming the tensor */
    kevo_tensor_desc bad = {.name = "bad", .role = KEVO_TENSOR_INPUT, .rank = 2, .dims = {"M", "nope"}};
    assert_int_equal(kevo_tensor_shape(&bad, &s, dims, &ld, &count, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "tensor 'bad'"));
    bad.dims[1] = "M - 5";
    assert_int_equal(kevo_tensor_shape(&bad, &s, dims, &ld, &count, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "not positive"));
    bad.dims[1] = "M";
    bad.padded = "M - 1";
    assert_int_equal(kevo_tensor_shape(&bad, &s, dims, &ld, &count, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "padded row stride"));
}

/* Norm-wise 2u, elementwise 4u (u = 2^-11 fp16, 2^-8 bf16), as README states. */
static void test_lce_tolerance(void **state)
{
    (void)state;
    double rel, rtol;
    lce()->tolerance(KEVO_DTYPE_F16, &rel, &rtol);
    assert_true(rel == 2.0 / 2048 && rtol == 4.0 / 2048);
    lce()->tolerance(KEVO_DTYPE_BF16, &rel, &rtol);
    assert_true(rel == 2.0 / 256 && rtol == 4.0 / 256);
}

/* ---- shapes ---- */

static void check_default(const kevo_syms *s)
{
    assert_int_equal(s->n, 9);
    for (int i = 0; i < 9; i++) /* bound in print order */
        assert_string_equal(s->name[i], lce()->symbols[i]);
    assert_int_equal(tu_sym(s, "B"), 1024);
    assert_int_equal(tu_sym(s, "M"), 433);
    assert_int_equal(tu_sym(s, "N"), 256);
    assert_int_equal(tu_sym(s, "Ku"), 1178);
    assert_int_equal(tu_sym(s, "Kc"), 866);
    assert_int_equal(tu_sym(s, "ratio"), 70);
    assert_int_equal(tu_sym(s, "U"), 15);
    assert_int_equal(tu_sym(s, "Kup"), 1184);
    assert_int_equal(tu_sym(s, "Kcp"), 872);
}

static void test_default_shape(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok(NULL, &s);
    check_default(&s);
    parse_ok("", &s);
    check_default(&s);
    parse_ok("  \t ", &s);
    check_default(&s);
    parse_ok(lce()->default_shape, &s);
    check_default(&s);
    parse_ok("B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15", &s);
    check_default(&s);
}

static void test_parse_ratio_and_u(void **state)
{
    (void)state;
    kevo_syms s;

    parse_ok("B=2048,ratio=10", &s);
    assert_int_equal(tu_sym(&s, "B"), 2048);
    assert_int_equal(tu_sym(&s, "ratio"), 10);
    assert_int_equal(tu_sym(&s, "U"), 205);
    assert_int_equal(tu_sym(&s, "M"), 433); /* the rest from the default */
    assert_int_equal(tu_sym(&s, "Kc"), 866);

    parse_ok("B=1024,U=16", &s);
    assert_int_equal(tu_sym(&s, "U"), 16);
    assert_int_equal(tu_sym(&s, "ratio"), 64);

    parse_ok("U=15", &s); /* B from the default: ratio = cdiv(1024, 15) */
    assert_int_equal(tu_sym(&s, "U"), 15);
    assert_int_equal(tu_sym(&s, "ratio"), 69);

    parse_ok("B=512", &s); /* default ratio */
    assert_int_equal(tu_sym(&s, "ratio"), 70);
    assert_int_equal(tu_sym(&s, "U"), 8);

    parse_ok(" Ku = 9 ,\tKc=17 , B = 64 , ratio = 8 ", &s);
    assert_int_equal(tu_sym(&s, "B"), 64);
    assert_int_equal(tu_sym(&s, "ratio"), 8);
    assert_int_equal(tu_sym(&s, "U"), 8);
    assert_int_equal(tu_sym(&s, "Ku"), 9);
    assert_int_equal(tu_sym(&s, "Kup"), 16);
    assert_int_equal(tu_sym(&s, "Kc"), 17);
    assert_int_equal(tu_sym(&s, "Kcp"), 24);

    parse_ok("B=1,M=1,N=1,Ku=8,Kc=1,U=1", &s);
    assert_int_equal(tu_sym(&s, "ratio"), 1);
    assert_int_equal(tu_sym(&s, "Kup"), 8);
    assert_int_equal(tu_sym(&s, "Kcp"), 8);

    parse_ok("B=10,U=6", &s); /* equal groups cannot give 6 users: ratio 2 */
    assert_int_equal(tu_sym(&s, "ratio"), 2);
    assert_int_equal(tu_sym(&s, "U"), 6);

    parse_ok("B=512,ratio=1000", &s); /* more candidates per user than B: one user */
    assert_int_equal(tu_sym(&s, "ratio"), 1000);
    assert_int_equal(tu_sym(&s, "U"), 1);

    /* the largest accepted value */
    parse_ok("B=2147483647,M=1,N=1,Ku=1,Kc=1,ratio=2147483647", &s);
    assert_int_equal(tu_sym(&s, "B"), 2147483647);
    assert_int_equal(tu_sym(&s, "U"), 1);
}

static void test_shape_str_round_trip(void **state)
{
    (void)state;
    kevo_syms s, t;
    char buf[256];

    parse_ok(NULL, &s);
    lce()->shape_str(&s, buf, sizeof buf);
    assert_string_equal(buf, "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15");

    static const char *const shapes[] = {
        NULL, "B=2048,ratio=10", "B=1024,U=16", "U=15", "B=10,U=6", "B=3,M=2,N=8,Ku=3,Kc=5,U=2",
        "B=3072,ratio=1000", "B=512,ratio=1000", "B=1000,U=999", "B=2147483647,M=1,N=1,Ku=1,Kc=1,ratio=3",
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        parse_ok(shapes[i], &s);
        lce()->shape_str(&s, buf, sizeof buf);
        parse_ok(buf, &t);
        assert_syms_equal(&s, &t);
    }

    parse_ok("B=3,M=2,N=8,Ku=3,Kc=5,U=2", &s);
    lce()->shape_str(&s, buf, sizeof buf);
    assert_string_equal(buf, "B=3,M=2,N=8,Ku=3,Kc=5,ratio=2,U=2");

    /* truncates, never overflows */
    memset(buf, 'x', sizeof buf);
    lce()->shape_str(&s, buf, 5);
    assert_string_equal(buf, "B=3,");
    assert_int_equal(buf[5], 'x');
}

static void check_parse_error(const char *text, const char *quoted)
{
    tu_parse_error(lce(), text, quoted);
}

static void test_parse_errors(void **state)
{
    (void)state;
    check_parse_error("X=5", "'X'");
    check_parse_error("b=5", "'b'"); /* keys are case-sensitive */
    check_parse_error("Kup=8", "'Kup'");
    check_parse_error("B=1,M=2,B=3", "'B'");
    check_parse_error("B=1, B =1", "'B'");
    check_parse_error("B1024", "'B1024'");
    check_parse_error("M=4,N", "'N'");
    check_parse_error("=5", "'=5'");
    check_parse_error("B=1,,M=2", "'B=1,,M=2'");
    check_parse_error("B=1,", "'B=1,'");
    check_parse_error("B=", "'B'");
    check_parse_error("B=  ", "'B'");
    check_parse_error("B=abc", "'abc'");
    check_parse_error("M=12x", "'12x'");
    check_parse_error("M=1 2", "'1 2'");
    check_parse_error("M=0x10", "'0x10'");
    check_parse_error("M=+", "'+'");
    check_parse_error("N=1.5", "'1.5'");
    check_parse_error("M=0", "'0'");
    check_parse_error("M=-3", "'-3'");
    check_parse_error("Kc=-99999999999999999999999", "'-99999999999999999999999'");
    check_parse_error("N=2147483648", "'2147483648'");
    check_parse_error("N=99999999999999999999999", "'99999999999999999999999'");
    check_parse_error("B=10,U=11", "'11'");
    check_parse_error("B=64", "'70'"); /* the default ratio exceeds B */
    check_parse_error("B=1024,ratio=70,U=3", "'3'");
    check_parse_error("B=1024,ratio=70,U=16", "'16'");
    /* more than 2^48 elements */
    check_parse_error("B=2147483647,Kc=2147483647,N=2147483647,ratio=2147483647", "'e_cand'");
    check_parse_error("M=2147483647,Ku=2147483647", "'w_user'");
    check_parse_error("M=2147483647,Kc=2147483647", "'w_cand'");
    check_parse_error("B=2147483647,U=2147483647,Ku=2147483647,Kc=1,M=1", "'e_user'");
    check_parse_error("B=2147483647,M=2147483647,Ku=1,Kc=1,N=1000000,ratio=1000", "'e_cand'");
    check_parse_error("B=2147483647,M=2147483647,Ku=1,Kc=1,N=1000,ratio=1000", "'out'");
}

static void test_flops_bytes(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok(NULL, &s);
    const int64_t B = 1024, M = 433, N = 256, Ku = 1178, Kc = 866, U = 15;
    int64_t flops = 2 * M * N * (B * Kc + U * Ku) + B * M * N;
    assert_true(lce()->flops(&s) == (double)flops);
    assert_true(lce()->flops(&s) == 200627342336.0);
    int64_t bytes = 2 * (M * Ku + M * Kc + U * Ku * N + B * Kc * N + B * M * N) + 4 * B;
    assert_true(lce()->bytes(&s, KEVO_DTYPE_F16) == (double)bytes);
    assert_true(lce()->bytes(&s, KEVO_DTYPE_BF16) == (double)bytes);
}

/* ---- names ---- */

static void test_dtype_names(void **state)
{
    (void)state;
    assert_string_equal(kevo_dtype_name(KEVO_DTYPE_F16), "fp16");
    assert_string_equal(kevo_dtype_name(KEVO_DTYPE_BF16), "bf16");
    static const char *const f16[] = {"fp16", "f16", "half", "float16"};
    static const char *const bf16[] = {"bf16", "bfloat16"};
    static const char *const bad[] = {"", "fp32", "FP16 ", "bf", "float", "fp16x", "bfloat"};
    kevo_dtype d;
    for (size_t i = 0; i < 4; i++) {
        d = KEVO_DTYPE_BF16;
        assert_true(kevo_dtype_parse(f16[i], &d));
        assert_int_equal(d, KEVO_DTYPE_F16);
    }
    for (size_t i = 0; i < 2; i++) {
        d = KEVO_DTYPE_F16;
        assert_true(kevo_dtype_parse(bf16[i], &d));
        assert_int_equal(d, KEVO_DTYPE_BF16);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(kevo_dtype_parse(bad[i], &d));
    assert_false(kevo_dtype_parse(NULL, &d));
    /* name -> parse -> same */
    assert_true(kevo_dtype_parse(kevo_dtype_name(KEVO_DTYPE_BF16), &d));
    assert_int_equal(d, KEVO_DTYPE_BF16);
}

static void test_map_names(void **state)
{
    (void)state;
    assert_string_equal(kevo_map_name(KEVO_MAP_SORTED), "sorted");
    assert_string_equal(kevo_map_name(KEVO_MAP_UNEVEN), "uneven");
    assert_string_equal(kevo_map_name(KEVO_MAP_SHUFFLED), "shuffled");
    kevo_map_kind k = KEVO_MAP_SHUFFLED;
    assert_true(kevo_map_parse("sorted", &k));
    assert_int_equal(k, KEVO_MAP_SORTED);
    assert_true(kevo_map_parse("uneven", &k));
    assert_int_equal(k, KEVO_MAP_UNEVEN);
    assert_true(kevo_map_parse("shuffled", &k));
    assert_int_equal(k, KEVO_MAP_SHUFFLED);
    assert_false(kevo_map_parse("random", &k));
    assert_false(kevo_map_parse("", &k));
    assert_false(kevo_map_parse("sorted ", &k));
    assert_false(kevo_map_parse(NULL, &k));
}

/* ---- conversions ---- */

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* fp16 value from its fields, independently of the code under test. */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    if (e == 31)
        v = INFINITY;
    return (h & 0x8000) ? -v : v;
}

static void test_fp16_all_patterns(void **state)
{
    (void)state;
    int checked = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue; /* NaN */
        float f = kevo_bits_to_float(h, KEVO_DTYPE_F16);
        assert_true((double)f == half_value(h));
        assert_int_equal(signbit(f) != 0, (h & 0x8000) != 0);
        assert_int_equal(kevo_float_to_bits(f, KEVO_DTYPE_F16), h);
        checked++;
    }
    assert_int_equal(checked, 65536 - 2 * 1023);

    /* midpoints round to even, a hair off them to the nearer side; 0x7c00
     * stands for 65536 so the last midpoint is 65520 */
    for (uint32_t h = 0; h < 0x7c00; h++) {
        double lo = half_value((uint16_t)h), hi = h + 1 == 0x7c00 ? 65536.0 : half_value((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2);
        assert_true((double)mid == (lo + hi) / 2); /* exact in float */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        assert_int_equal(kevo_float_to_bits(mid, KEVO_DTYPE_F16), even);
        assert_int_equal(kevo_float_to_bits(-mid, KEVO_DTYPE_F16), even | 0x8000);
        assert_int_equal(kevo_float_to_bits(nextafterf(mid, 0.0f), KEVO_DTYPE_F16), h);
        assert_int_equal(kevo_float_to_bits(nextafterf(mid, INFINITY), KEVO_DTYPE_F16), h + 1);
    }
}

static void test_bf16_all_patterns(void **state)
{
    (void)state;
    int checked = 0;
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t b = (uint16_t)i;
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
            continue; /* NaN */
        float f = kevo_bits_to_float(b, KEVO_DTYPE_BF16);
        assert_int_equal(f2u(f), (uint32_t)b << 16);
        assert_int_equal(kevo_float_to_bits(f, KEVO_DTYPE_BF16), b);
        checked++;
    }
    assert_int_equal(checked, 65536 - 2 * 127);

    for (uint32_t b = 0; b < 0x7f7f; b++) {
        double lo = u2f(b << 16), hi = u2f((b + 1) << 16);
        float mid = (float)((lo + hi) / 2);
        assert_true((double)mid == (lo + hi) / 2);
        uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
        assert_int_equal(kevo_float_to_bits(mid, KEVO_DTYPE_BF16), even);
        assert_int_equal(kevo_float_to_bits(-mid, KEVO_DTYPE_BF16), even | 0x8000);
        assert_int_equal(kevo_float_to_bits(nextafterf(mid, 0.0f), KEVO_DTYPE_BF16), b);
        assert_int_equal(kevo_float_to_bits(nextafterf(mid, INFINITY), KEVO_DTYPE_BF16), b + 1);
    }
}

static void test_conversion_values(void **state)
{
    (void)state;
    const kevo_dtype H = KEVO_DTYPE_F16, BF = KEVO_DTYPE_BF16;
    assert_int_equal(kevo_float_to_bits(1.0f, H), 0x3c00);
    assert_int_equal(kevo_float_to_bits(1.0f, BF), 0x3f80);
    assert_int_equal(kevo_float_to_bits(-2.0f, H), 0xc000);
    assert_int_equal(kevo_float_to_bits(-2.0f, BF), 0xc000);
    assert_int_equal(kevo_float_to_bits(0.0f, H), 0x0000);
    assert_int_equal(kevo_float_to_bits(-0.0f, H), 0x8000);
    assert_int_equal(kevo_float_to_bits(-0.0f, BF), 0x8000);
    assert_true(kevo_bits_to_float(0x3c00, H) == 1.0f);
    assert_true(kevo_bits_to_float(0x3f80, BF) == 1.0f);

    /* fp16 range ends */
    assert_int_equal(kevo_float_to_bits(65504.0f, H), 0x7bff);
    assert_true(kevo_bits_to_float(0x7bff, H) == 65504.0f);
    assert_int_equal(kevo_float_to_bits(65519.0f, H), 0x7bff);
    assert_int_equal(kevo_float_to_bits(65520.0f, H), 0x7c00);
    assert_int_equal(kevo_float_to_bits(-65520.0f, H), 0xfc00);
    assert_int_equal(kevo_float_to_bits(1e10f, H), 0x7c00);
    assert_int_equal(kevo_float_to_bits(INFINITY, H), 0x7c00);
    assert_int_equal(kevo_float_to_bits(-INFINITY, H), 0xfc00);
    assert_true(isinf(kevo_bits_to_float(0x7c00, H)));
    assert_int_equal(kevo_float_to_bits(3.4028235e38f, BF), 0x7f80); /* FLT_MAX rounds up */
    assert_int_equal(kevo_float_to_bits(INFINITY, BF), 0x7f80);

    /* subnormals */
    assert_true(kevo_bits_to_float(0x0001, H) == ldexpf(1.0f, -24));
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -24), H), 0x0001);
    assert_true(kevo_bits_to_float(0x03ff, H) == ldexpf(1023.0f, -24));
    assert_true(kevo_bits_to_float(0x0400, H) == ldexpf(1.0f, -14));
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -25), H), 0x0000); /* tie to even: 0 */
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -25) * 1.0001f, H), 0x0001);
    assert_int_equal(kevo_float_to_bits(ldexpf(3.0f, -25), H), 0x0002); /* tie to even: 2 */
    assert_int_equal(kevo_float_to_bits(ldexpf(2047.0f, -25), H), 0x0400); /* carries into normal */
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -30), H), 0x0000);
    assert_int_equal(kevo_float_to_bits(-ldexpf(1.0f, -30), H), 0x8000);
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -149), H), 0x0000);
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -149), BF), 0x0000); /* tie to even */
    assert_int_equal(kevo_float_to_bits(ldexpf(1.0f, -133), BF), 0x0001);

    /* ties to even in the normal range */
    assert_int_equal(kevo_float_to_bits(1.0f + ldexpf(1.0f, -11), H), 0x3c00);
    assert_int_equal(kevo_float_to_bits(1.0f + ldexpf(3.0f, -11), H), 0x3c02);
    assert_int_equal(kevo_float_to_bits(1.0f + ldexpf(1.0f, -8), BF), 0x3f80);
    assert_int_equal(kevo_float_to_bits(1.0f + ldexpf(3.0f, -8), BF), 0x3f82);
    assert_int_equal(kevo_float_to_bits(0.1f, H), 0x2e66);
    assert_int_equal(kevo_float_to_bits(0.1f, BF), 0x3dcd);
}

static void test_conversion_nan(void **state)
{
    (void)state;
    const kevo_dtype H = KEVO_DTYPE_F16, BF = KEVO_DTYPE_BF16;
    uint16_t h = kevo_float_to_bits(NAN, H);
    assert_int_equal(h & 0x7c00, 0x7c00);
    assert_true(h & 0x0200); /* quiet */
    assert_true(isnan(kevo_bits_to_float(h, H)));
    uint16_t b = kevo_float_to_bits(NAN, BF);
    assert_int_equal(b & 0x7f80, 0x7f80);
    assert_true(b & 0x0040);
    assert_true(isnan(kevo_bits_to_float(b, BF)));

    /* a signalling NaN comes out quiet, never as infinity */
    float snan = u2f(0x7f800001u);
    uint16_t hs = kevo_float_to_bits(snan, H), bs = kevo_float_to_bits(snan, BF);
    assert_int_equal(hs & 0x7e00, 0x7e00);
    assert_int_equal(bs & 0x7fc0, 0x7fc0);
    assert_int_equal(kevo_float_to_bits(-snan, H) & 0x8000, 0x8000);

    /* every 16-bit NaN pattern is a quiet float NaN and stays NaN */
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t x = (uint16_t)i;
        if ((x & 0x7c00) == 0x7c00 && (x & 0x3ff)) {
            float f = kevo_bits_to_float(x, H);
            assert_true(isnan(f));
            assert_true(f2u(f) & 0x00400000u);
            uint16_t back = kevo_float_to_bits(f, H);
            assert_int_equal(back, x | 0x0200);
        }
        if ((x & 0x7f80) == 0x7f80 && (x & 0x7f)) {
            float f = kevo_bits_to_float(x, BF);
            assert_true(isnan(f));
            assert_true(f2u(f) & 0x00400000u);
            assert_int_equal(kevo_float_to_bits(f, BF), x | 0x0040);
        }
    }
}

/* ---- generator ---- */

/* An independent re-implementation of the generator's integer draw. */
static int ref_gen_k(uint64_t seed, uint32_t tensor, uint64_t idx, int Q)
{
    uint64_t z = seed + UINT64_C(0x9e3779b97f4a7c15) * (tensor + UINT64_C(1));
    for (int r = 0; r < 2; r++) {
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        z = z ^ (z >> 31);
        if (r == 0)
            z ^= idx;
    }
    return (int)(z % (uint64_t)(2 * Q)) - Q;
}

static void test_gen_value_range(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++) {
        kevo_dtype dt = d ? KEVO_DTYPE_BF16 : KEVO_DTYPE_F16;
        int Q = d ? 128 : 1024;
        int lo = Q, hi = -Q - 1;
        for (uint32_t t = 0; t < 4; t++) {
            for (uint64_t i = 0; i < 5000; i++) {
                uint16_t bits = 0;
                float v = kevo_gen_value(42, t, i, dt, &bits);
                float k = v * (float)Q;
                assert_true(k == floorf(k));
                assert_true(k >= (float)-Q && k < (float)Q);
                assert_int_equal((int)k, ref_gen_k(42, t, i, Q));
                assert_int_equal(bits, kevo_float_to_bits(v, dt));
                assert_true(kevo_bits_to_float(bits, dt) == v); /* exact in the dtype */
                assert_true(kevo_gen_value(42, t, i, dt, NULL) == v);
                lo = (int)k < lo ? (int)k : lo;
                hi = (int)k > hi ? (int)k : hi;
            }
        }
        assert_int_equal(lo, -Q); /* the whole range is reached */
        assert_int_equal(hi, Q - 1);
    }
}

static void test_gen_value_streams(void **state)
{
    (void)state;
    const kevo_dtype H = KEVO_DTYPE_F16;
    int same_tensor = 0, same_seed = 0;
    for (uint64_t i = 0; i < 64; i++) {
        float a = kevo_gen_value(1, 0, i, H, NULL);
        same_tensor += a == kevo_gen_value(1, 1, i, H, NULL);
        same_seed += a == kevo_gen_value(2, 0, i, H, NULL);
    }
    /* independent streams agree on about 1 in 2048 draws */
    assert_true(same_tensor <= 2);
    assert_true(same_seed <= 2);
    /* reproducible */
    assert_true(kevo_gen_value(7, 3, 12345, H, NULL) == kevo_gen_value(7, 3, 12345, H, NULL));
}

static void test_gen_value_known(void **state)
{
    (void)state;
    /* seed 1, tensor 0, fp16: computed once with ref_gen_k (and a Python
     * re-implementation), kept here as numbers */
    static const int want_f16[8] = {440, -823, -141, -645, 271, 791, -959, -858};
    static const int want_bf16[8] = {56, 73, -13, -5, -113, -105, -63, 38};
    for (int i = 0; i < 8; i++) {
        assert_int_equal(ref_gen_k(1, 0, (uint64_t)i, 1024), want_f16[i]);
        uint16_t bits;
        float v = kevo_gen_value(1, 0, (uint64_t)i, KEVO_DTYPE_F16, &bits);
        assert_true(v == (float)want_f16[i] / 1024.0f);
        assert_int_equal(bits, kevo_float_to_bits((float)want_f16[i] / 1024.0f, KEVO_DTYPE_F16));
        v = kevo_gen_value(1, 0, (uint64_t)i, KEVO_DTYPE_BF16, &bits);
        assert_true(v == (float)want_bf16[i] / 128.0f);
    }
    /* 440/1024 = 0.4296875 = 0x36e0 in fp16 */
    uint16_t bits;
    kevo_gen_value(1, 0, 0, KEVO_DTYPE_F16, &bits);
    assert_int_equal(bits, 0x36e0);
}

/* ---- maps ---- */

static void histogram(const int32_t *map, int64_t B, int64_t U, int64_t *count)
{
    for (int64_t u = 0; u < U; u++)
        count[u] = 0;
    for (int64_t b = 0; b < B; b++) {
        assert_true(map[b] >= 0 && map[b] < U);
        count[map[b]]++;
    }
}

static void test_map_sorted(void **state)
{
    (void)state;
    int32_t map[1024];
    int64_t count[1024];
    kevo_make_map(KEVO_MAP_SORTED, 1024, 15, 70, 1, map);
    histogram(map, 1024, 15, count);
    for (int64_t b = 0; b < 1024; b++)
        assert_int_equal(map[b], b / 70);
    for (int u = 0; u < 14; u++)
        assert_int_equal(count[u], 70);
    assert_int_equal(count[14], 1024 - 14 * 70);

    /* U from cdiv(B, U): ratio 2 gives 5 groups, the 6th user is empty */
    kevo_make_map(KEVO_MAP_SORTED, 10, 6, 2, 1, map);
    histogram(map, 10, 6, count);
    static const int32_t want[10] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4};
    for (int b = 0; b < 10; b++)
        assert_int_equal(map[b], want[b]);

    /* ratio too small for U users: the last user takes the rest */
    kevo_make_map(KEVO_MAP_SORTED, 10, 3, 2, 1, map);
    static const int32_t want2[10] = {0, 0, 1, 1, 2, 2, 2, 2, 2, 2};
    for (int b = 0; b < 10; b++)
        assert_int_equal(map[b], want2[b]);

    map[0] = 99;
    kevo_make_map(KEVO_MAP_SORTED, 1, 1, 1, 1, map);
    assert_int_equal(map[0], 0);
    kevo_make_map(KEVO_MAP_SORTED, 5, 1, 5, 1, map);
    for (int b = 0; b < 5; b++)
        assert_int_equal(map[b], 0);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The uneven map as described: draw U-1 cuts in [0, B], sort, assign. */
static void ref_uneven(int64_t B, int64_t U, uint64_t seed, int32_t *map)
{
    uint64_t *cut = malloc((size_t)U * sizeof *cut);
    assert_non_null(cut);
    uint64_t st = seed;
    for (int64_t i = 0; i < U - 1; i++)
        cut[i] = kv_rand_below(&st, (uint64_t)B + 1);
    qsort(cut, (size_t)(U - 1), sizeof *cut, cmp_u64);
    cut[U - 1] = (uint64_t)B;
    uint64_t start = 0;
    for (int64_t u = 0; u < U; u++) {
        for (uint64_t b = start; b < cut[u]; b++)
            map[b] = (int32_t)u;
        start = cut[u];
    }
    free(cut);
}

static void test_map_uneven(void **state)
{
    (void)state;
    int32_t map[1000], again[1000], ref[1000];
    int64_t count[1000];
    static const struct {
        int64_t B, U;
        uint64_t seed;
    } cases[] = {{1000, 37, 1}, {1000, 37, 2}, {1000, 1000, 3}, {1000, 2, 4}, {16, 15, 5},
                 {7, 3, 6},     {1, 1, 7},     {1, 4, 8},       {1000, 1, 9}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t B = cases[c].B, U = cases[c].U;
        kevo_make_map(KEVO_MAP_UNEVEN, B, U, (B + U - 1) / U, cases[c].seed, map);
        histogram(map, B, U, count);
        int64_t total = 0;
        for (int64_t u = 0; u < U; u++)
            total += count[u];
        assert_int_equal(total, B);
        for (int64_t b = 1; b < B; b++)
            assert_true(map[b] >= map[b - 1]); /* contiguous groups */
        ref_uneven(B, U, cases[c].seed, ref);
        assert_memory_equal(map, ref, (size_t)B * sizeof *map);
        kevo_make_map(KEVO_MAP_UNEVEN, B, U, (B + U - 1) / U, cases[c].seed, again);
        assert_memory_equal(map, again, (size_t)B * sizeof *map);
    }

    /* sizes really are uneven, with empty users, and seeds differ */
    kevo_make_map(KEVO_MAP_UNEVEN, 1000, 100, 10, 11, map);
    histogram(map, 1000, 100, count);
    int64_t lo = 1000, hi = 0, empty = 0;
    for (int u = 0; u < 100; u++) {
        lo = count[u] < lo ? count[u] : lo;
        hi = count[u] > hi ? count[u] : hi;
        empty += count[u] == 0;
    }
    assert_true(hi > 2 * 10);
    assert_int_equal(lo, 0);
    assert_true(empty > 0);
    kevo_make_map(KEVO_MAP_UNEVEN, 1000, 100, 10, 12, again);
    assert_memory_not_equal(map, again, sizeof map);
}

/* The shuffled map as described: sorted, then Fisher-Yates from the seed. */
static void ref_shuffled(int64_t B, int64_t U, int64_t ratio, uint64_t seed, int32_t *map)
{
    for (int64_t b = 0; b < B; b++)
        map[b] = (int32_t)(b / ratio < U - 1 ? b / ratio : U - 1);
    uint64_t st = seed;
    for (int64_t i = B - 1; i >= 1; i--) {
        int64_t j = (int64_t)kv_rand_below(&st, (uint64_t)(i + 1));
        int32_t t = map[i];
        map[i] = map[j];
        map[j] = t;
    }
}

static void test_map_shuffled(void **state)
{
    (void)state;
    int32_t sorted[1024], map[1024], again[1024], ref[1024];
    int64_t hs[1024], hm[1024];
    static const struct {
        int64_t B, U, ratio;
    } cases[] = {{1024, 15, 70}, {16, 4, 4}, {16, 2, 8}, {17, 2, 9}, {100, 10, 10}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t B = cases[c].B, U = cases[c].U, r = cases[c].ratio;
        kevo_make_map(KEVO_MAP_SORTED, B, U, r, 0, sorted);
        histogram(sorted, B, U, hs);
        for (uint64_t seed = 1; seed <= 20; seed++) {
            kevo_make_map(KEVO_MAP_SHUFFLED, B, U, r, seed, map);
            histogram(map, B, U, hm);
            assert_memory_equal(hs, hm, (size_t)U * sizeof *hs);
            assert_memory_not_equal(sorted, map, (size_t)B * sizeof *map);
            kevo_make_map(KEVO_MAP_SHUFFLED, B, U, r, seed, again);
            assert_memory_equal(map, again, (size_t)B * sizeof *map);
            ref_shuffled(B, U, r, seed, ref);
            assert_memory_equal(map, ref, (size_t)B * sizeof *map);
        }
        kevo_make_map(KEVO_MAP_SHUFFLED, B, U, r, 1, map);
        kevo_make_map(KEVO_MAP_SHUFFLED, B, U, r, 2, again);
        assert_memory_not_equal(map, again, (size_t)B * sizeof *map);
    }
    map[0] = 5;
    kevo_make_map(KEVO_MAP_SHUFFLED, 1, 1, 1, 3, map);
    assert_int_equal(map[0], 0);
}

/* ---- host sets and the CPU reference ---- */

static double bv(uint16_t bits, kevo_dtype dt)
{
    return kevo_bits_to_float(bits, dt);
}

static void test_host_init(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok("B=3,M=2,N=8,Ku=3,Kc=5,U=2", &s);
    kevo_lce_host h;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_lce_host_init(&h, &s, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 9, &err), KEVO_OK);
    assert_int_equal(h.B, 3);
    assert_int_equal(h.M, 2);
    assert_int_equal(h.N, 8);
    assert_int_equal(h.Ku, 3);
    assert_int_equal(h.Kc, 5);
    assert_int_equal(h.U, 2);
    assert_int_equal(h.dtype, KEVO_DTYPE_F16);
    assert_syms_equal(&h.shape, &s);
    uint16_t bits;
    for (uint64_t i = 0; i < 2 * 3; i++) {
        kevo_gen_value(9, 0, i, KEVO_DTYPE_F16, &bits);
        assert_int_equal(h.w_user[i], bits);
    }
    for (uint64_t i = 0; i < 2 * 5; i++) {
        kevo_gen_value(9, 1, i, KEVO_DTYPE_F16, &bits);
        assert_int_equal(h.w_cand[i], bits);
    }
    for (uint64_t i = 0; i < 2 * 3 * 8; i++) {
        kevo_gen_value(9, 2, i, KEVO_DTYPE_F16, &bits);
        assert_int_equal(h.e_user[i], bits);
    }
    for (uint64_t i = 0; i < 3 * 5 * 8; i++) {
        kevo_gen_value(9, 3, i, KEVO_DTYPE_F16, &bits);
        assert_int_equal(h.e_cand[i], bits);
    }
    assert_int_equal(h.map[0], 0);
    assert_int_equal(h.map[1], 0);
    assert_int_equal(h.map[2], 1);
    kevo_lce_host_release(&h);
    assert_null(h.e_cand);
    kevo_lce_host_release(&h); /* twice is harmless */

    /* the map follows kind and seed */
    assert_int_equal(kevo_lce_host_init(&h, &s, KEVO_DTYPE_BF16, KEVO_MAP_UNEVEN, 5, &err), KEVO_OK);
    int32_t want[3];
    kevo_make_map(KEVO_MAP_UNEVEN, 3, 2, 2, 5, want);
    assert_memory_equal(h.map, want, sizeof want);
    kevo_gen_value(5, 3, 7, KEVO_DTYPE_BF16, &bits);
    assert_int_equal(h.e_cand[7], bits);
    kevo_lce_host_release(&h);
}

static void test_host_init_errors(void **state)
{
    (void)state;
    kevo_lce_host h;
    kevo_err err;
    kevo_syms s;

    parse_ok("B=3,M=2,N=8,Ku=3,Kc=5,U=2", &s);
    kevo_syms t;
    kevo_syms_init(&t); /* a shape with B alone */
    kevo_syms_set(&t, "B", 3);
    kevo_err_clear(&err);
    assert_int_equal(kevo_lce_host_init(&h, &t, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "'M'"));
    assert_null(h.w_user);

    t = s;
    kevo_syms_set(&t, "N", 0);
    assert_int_equal(kevo_lce_host_init(&h, &t, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "'N'"));

    assert_int_equal(kevo_lce_host_init(&h, &s, (kevo_dtype)7, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_lce_host_init(&h, &s, KEVO_DTYPE_F16, (kevo_map_kind)9, 1, &err), KEVO_ERR_ARG);

    /* sizes whose byte count overflows: refused before any allocation */
    t = s;
    kevo_syms_set(&t, "B", 2147483647);
    kevo_syms_set(&t, "Kc", 2147483647);
    kevo_syms_set(&t, "N", 2147483647);
    kevo_err_clear(&err);
    assert_int_equal(kevo_lce_host_init(&h, &t, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_NOMEM);
    assert_int_equal(err.status, KEVO_ERR_NOMEM);
    assert_non_null(strstr(err.msg, "'e_cand'"));
    assert_null(h.w_user);
    assert_null(h.e_user);

    /* a valid shape too large to allocate (e_cand 2^48 elements, 512 TiB):
     * the tensors allocated before it are freed (valgrind checks) */
    parse_ok("B=1048576,M=1,N=16384,Ku=1,Kc=16384,U=1", &s);
    kevo_err_clear(&err);
    assert_int_equal(kevo_lce_host_init(&h, &s, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_NOMEM);
    assert_non_null(strstr(err.msg, "'e_cand'"));
    assert_null(h.w_user);
    assert_null(h.e_user);
}

/* Direct triple loop over the stored bits. */
static void ref_direct(const kevo_lce_host *h, double *out)
{
    kevo_dtype dt = h->dtype;
    for (int64_t b = 0; b < h->B; b++)
        for (int64_t m = 0; m < h->M; m++)
            for (int64_t n = 0; n < h->N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < h->Kc; k++)
                    acc += bv(h->w_cand[m * h->Kc + k], dt) * bv(h->e_cand[(b * h->Kc + k) * h->N + n], dt);
                int64_t u = h->map[b];
                for (int64_t k = 0; k < h->Ku; k++)
                    acc += bv(h->w_user[m * h->Ku + k], dt) * bv(h->e_user[(u * h->Ku + k) * h->N + n], dt);
                out[(b * h->M + m) * h->N + n] = acc;
            }
}

static void test_reference_tiny(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok("B=3,M=2,N=8,Ku=3,Kc=5,U=2", &s);
    double got[3 * 2 * 8], want[3 * 2 * 8];
    for (int d = 0; d < 2; d++) {
        for (int k = 0; k < 3; k++) {
            kevo_lce_host h;
            kevo_err err;
            assert_int_equal(kevo_lce_host_init(&h, &s, d ? KEVO_DTYPE_BF16 : KEVO_DTYPE_F16, (kevo_map_kind)k,
                                                (uint64_t)(11 + k), &err),
                             KEVO_OK);
            for (size_t i = 0; i < 48; i++)
                got[i] = NAN;
            kevo_lce_reference_cpu(&h, got);
            ref_direct(&h, want);
            /* every product and partial sum is a short dyadic: exact */
            assert_memory_equal(got, want, sizeof got);

            /* one element written out: b=2, m=1, n=5 */
            kevo_dtype dt = h.dtype;
            int32_t u = h.map[2];
            double e = 0;
            e += bv(h.w_cand[5 + 0], dt) * bv(h.e_cand[(2 * 5 + 0) * 8 + 5], dt);
            e += bv(h.w_cand[5 + 1], dt) * bv(h.e_cand[(2 * 5 + 1) * 8 + 5], dt);
            e += bv(h.w_cand[5 + 2], dt) * bv(h.e_cand[(2 * 5 + 2) * 8 + 5], dt);
            e += bv(h.w_cand[5 + 3], dt) * bv(h.e_cand[(2 * 5 + 3) * 8 + 5], dt);
            e += bv(h.w_cand[5 + 4], dt) * bv(h.e_cand[(2 * 5 + 4) * 8 + 5], dt);
            e += bv(h.w_user[3 + 0], dt) * bv(h.e_user[(u * 3 + 0) * 8 + 5], dt);
            e += bv(h.w_user[3 + 1], dt) * bv(h.e_user[(u * 3 + 1) * 8 + 5], dt);
            e += bv(h.w_user[3 + 2], dt) * bv(h.e_user[(u * 3 + 2) * 8 + 5], dt);
            assert_true(got[(2 * 2 + 1) * 8 + 5] == e);
            kevo_lce_host_release(&h);
        }
    }
}

static void test_reference_by_hand(void **state)
{
    (void)state;
    /* B=2, M=1, N=1, Kc=2, Ku=2, U=2, map = {1, 0}:
     *   out[0] = 1*0.5 + 2*(-1)  +  0.25*3 + (-0.5)*(-2) = -1.5 + 1.75 = 0.25
     *   out[1] = 1*(-4) + 2*0.25 +  0.25*4 + (-0.5)*1    = -3.5 + 0.5  = -3 */
    const kevo_dtype H = KEVO_DTYPE_F16;
    uint16_t wc[2] = {kevo_float_to_bits(1.0f, H), kevo_float_to_bits(2.0f, H)};
    uint16_t wu[2] = {kevo_float_to_bits(0.25f, H), kevo_float_to_bits(-0.5f, H)};
    uint16_t ec[4] = {kevo_float_to_bits(0.5f, H), kevo_float_to_bits(-1.0f, H), kevo_float_to_bits(-4.0f, H),
                      kevo_float_to_bits(0.25f, H)};
    uint16_t eu[4] = {kevo_float_to_bits(4.0f, H), kevo_float_to_bits(1.0f, H), kevo_float_to_bits(3.0f, H),
                      kevo_float_to_bits(-2.0f, H)};
    int32_t map[2] = {1, 0};
    kevo_lce_host h;
    memset(&h, 0, sizeof h);
    h.dtype = H;
    h.B = 2;
    h.M = 1;
    h.N = 1;
    h.Ku = 2;
    h.Kc = 2;
    h.U = 2;
    h.w_cand = wc;
    h.w_user = wu;
    h.e_cand = ec;
    h.e_user = eu;
    h.map = map;
    double out[2] = {NAN, NAN};
    kevo_lce_reference_cpu(&h, out);
    assert_true(out[0] == 0.25);
    assert_true(out[1] == -3.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_lookup),
        cmocka_unit_test(test_op_interface),
        cmocka_unit_test(test_lce_tensors),
        cmocka_unit_test(test_lce_tolerance),
        cmocka_unit_test(test_default_shape),
        cmocka_unit_test(test_parse_ratio_and_u),
        cmocka_unit_test(test_shape_str_round_trip),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_flops_bytes),
        cmocka_unit_test(test_dtype_names),
        cmocka_unit_test(test_map_names),
        cmocka_unit_test(test_fp16_all_patterns),
        cmocka_unit_test(test_bf16_all_patterns),
        cmocka_unit_test(test_conversion_values),
        cmocka_unit_test(test_conversion_nan),
        cmocka_unit_test(test_gen_value_range),
        cmocka_unit_test(test_gen_value_streams),
        cmocka_unit_test(test_gen_value_known),
        cmocka_unit_test(test_map_sorted),
        cmocka_unit_test(test_map_uneven),
        cmocka_unit_test(test_map_shuffled),
        cmocka_unit_test(test_host_init),
        cmocka_unit_test(test_host_init_errors),
        cmocka_unit_test(test_reference_tiny),
        cmocka_unit_test(test_reference_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
