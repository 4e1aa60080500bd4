/* test_ikbo_fa.c — the ikbo_fa op on the CPU: shapes (default, U=, bad keys
 * and values, D not 64 or 128, limits), FLOPs and bytes, its tensors as the
 * evaluator and the LLM check see them, tolerances, the check scale, the CPU
 * double reference (against the formula written out, convex combinations of
 * V rows, one key gives V, no overflow at the check scale), its export pieces
 * and the reference module compiled by NVRTC. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluator/compile.h"
#include "evaluator/gpu_int.h"
#include "kernels/ikbo_fa/abi.h"
#include "kernels/ikbo_fa/ikbo_fa.h"
#include "core/op.h"
#include "testutil.h"
#include "util/util.h"

static const kevo_op *fa(void)
{
    return tu_op("ikbo_fa");
}

static void parse_ok(const char *text, kevo_syms *s)
{
    tu_parse_ok(fa(), text, s);
}

/* ---- the op in the table ---- */

static void test_fa_lookup(void **state)
{
    (void)state;
    const kevo_op *op = fa();
    assert_string_equal(op->name, "ikbo_fa");
    assert_string_equal(op->default_shape, "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64");
    static const char *const want[] = {"Bc", "H", "Sq", "D", "Skv", "U", "ratio"};
    assert_int_equal(op->nsymbols, (int)KV_ARRAY_LEN(want));
    for (size_t i = 0; i < KV_ARRAY_LEN(want); i++)
        assert_string_equal(op->symbols[i], want[i]);
    assert_string_equal(op->abi_header, "ikbo_fa/abi.h");
    assert_string_equal(op->ref_source, "ikbo_fa/ref.cu");
    assert_string_equal(op->ref_name, "ikbo_fa_ref.cu");
    assert_non_null(op->export_desc);
    assert_non_null(op->gpu);
    assert_int_equal(op->npeers, 3);
    assert_string_equal(op->peers[kevo_op_peer_baseline(op)].name, "stage0");
}

/* ---- shapes ---- */

static void check_default(const kevo_syms *s)
{
    assert_int_equal(s->n, 7);
    for (int i = 0; i < 7; i++) /* bound in print order */
        assert_string_equal(s->name[i], fa()->symbols[i]);
    assert_int_equal(tu_sym(s, "Bc"), 2048);
    assert_int_equal(tu_sym(s, "H"), 2);
    assert_int_equal(tu_sym(s, "Sq"), 64);
    assert_int_equal(tu_sym(s, "D"), 128);
    assert_int_equal(tu_sym(s, "Skv"), 2048);
    assert_int_equal(tu_sym(s, "ratio"), 64);
    assert_int_equal(tu_sym(s, "U"), 32);
}

static void test_fa_default_shape(void **state)
{
    (void)state;
    kevo_syms s, t;
    parse_ok(NULL, &s);
    check_default(&s);
    parse_ok(" \t", &s);
    check_default(&s);
    parse_ok(fa()->default_shape, &s);
    check_default(&s);
    char buf[256];
    fa()->shape_str(&s, buf, sizeof buf);
    assert_string_equal(buf, "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64,U=32");
    parse_ok(buf, &t);
    check_default(&t);
}

static void test_fa_parse_ratio_and_u(void **state)
{
    (void)state;
    kevo_syms s, t;
    char buf[256];

    parse_ok("U=10", &s); /* Bc from the default: ratio = cdiv(2048, 10) */
    assert_int_equal(tu_sym(&s, "U"), 10);
    assert_int_equal(tu_sym(&s, "ratio"), 205);

    parse_ok(" Bc = 2047 , D=64,Skv=3000, ratio=64 ", &s);
    assert_int_equal(tu_sym(&s, "Bc"), 2047);
    assert_int_equal(tu_sym(&s, "D"), 64);
    assert_int_equal(tu_sym(&s, "Skv"), 3000);
    assert_int_equal(tu_sym(&s, "U"), 32);
    assert_int_equal(tu_sym(&s, "H"), 2); /* the rest from the default */
    assert_int_equal(tu_sym(&s, "Sq"), 64);

    parse_ok("Bc=7,U=3,Sq=5,H=3,Skv=1", &s);
    assert_int_equal(tu_sym(&s, "ratio"), 3);
    fa()->shape_str(&s, buf, sizeof buf);
    assert_string_equal(buf, "Bc=7,H=3,Sq=5,D=128,Skv=1,ratio=3,U=3");
    parse_ok(buf, &t);
    assert_int_equal(tu_sym(&t, "U"), 3);

    parse_ok("Bc=100,ratio=1000", &s); /* more candidates per user than Bc: one user */
    assert_int_equal(tu_sym(&s, "U"), 1);
}

static void check_parse_error(const char *text, const char *quoted)
{
    tu_parse_error(fa(), text, quoted);
}

static void test_fa_parse_errors(void **state)
{
    (void)state;
    check_parse_error("B=5", "'B'"); /* ikbo_lce's key */
    check_parse_error("B=5", "known: Bc, H, Sq, D, Skv, ratio, U");
    check_parse_error("bc=5", "'bc'"); /* keys are case-sensitive */
    check_parse_error("Bc=1,Bc=2", "'Bc'");
    check_parse_error("Skv", "'Skv'");
    check_parse_error("Skv=", "'Skv'");
    check_parse_error("Skv=abc", "'abc'");
    check_parse_error("Skv=-3", "'-3'");
    check_parse_error("Sq=0", "'0'");
    check_parse_error("H=1.5", "'1.5'");
    check_parse_error("H=2147483648", "'2147483648'");
    check_parse_error("Bc=1,,H=2", "'Bc=1,,H=2'");
    /* head dimensions the op does not take */
    check_parse_error("D=96", "'96'");
    check_parse_error("D=96", "64 or 128");
    check_parse_error("D=256", "'256'");
    check_parse_error("D=32", "'D'");
    /* users */
    check_parse_error("Bc=10,U=11", "'11'");
    check_parse_error("Bc=32", "'64'"); /* the default ratio exceeds Bc */
    check_parse_error("Bc=2048,ratio=64,U=3", "'3'");
    /* rows beyond the ABI's int, elements beyond 2^48 */
    check_parse_error("Bc=2147483647,Sq=2,ratio=2147483647", "'q'");
    check_parse_error("Bc=2147483647,Sq=2,ratio=2147483647", "rows");
    check_parse_error("Skv=2147483647,U=2", "'k'");
    check_parse_error("Bc=1,Sq=1048576,H=4194304,ratio=1", "'q'");
    check_parse_error("Bc=1,Sq=1048576,H=4194304,ratio=1", "2^48");
    check_parse_error("Sq=1,Skv=1048576,H=4194304", "'k'");
}

/* 4 Bc H Sq D Skv and 2 (2 Bc Sq H D + 2 U Skv H D) + 4 Bc at the default shape. */
static void test_fa_flops_bytes(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok(NULL, &s);
    assert_true(fa()->flops(&s) == 274877906944.0); /* 2^38 */
    assert_true(fa()->bytes(&s, KEVO_DTYPE_F16) == 201334784.0);
    assert_true(fa()->bytes(&s, KEVO_DTYPE_BF16) == 201334784.0);
    parse_ok("Bc=3,H=1,Sq=5,D=64,Skv=7,U=2", &s);
    assert_true(fa()->flops(&s) == 4.0 * 3 * 1 * 5 * 64 * 7);
    assert_true(fa()->bytes(&s, KEVO_DTYPE_F16) == 2.0 * (2.0 * 3 * 5 * 64 + 2.0 * 2 * 7 * 64) + 12);
}

/* ---- tensors, ABI, tolerances ---- */

static void test_fa_tensors(void **state)
{
    (void)state;
    const kevo_op *op = fa();
    const char *in[KEVO_OP_MAX_FIELDS], *out[KEVO_OP_MAX_FIELDS];
    static const char *const want_in[] = {"q", "tm_q", "k", "tm_k", "v", "tm_v", "cand_to_user"};
    assert_int_equal(kevo_op_tensor_names(op, false, in, KEVO_OP_MAX_FIELDS), 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(in[i], want_in[i]);
    assert_int_equal(kevo_op_tensor_names(op, true, out, KEVO_OP_MAX_FIELDS), 2);
    assert_string_equal(out[0], "out");
    assert_string_equal(out[1], "tm_out");

    static const struct {
        const char *name;
        size_t off;
        int stream;
    } maps[] = {
        {"q", offsetof(kevo_fa_args, tm_q), 0},
        {"k", offsetof(kevo_fa_args, tm_k), 1},
        {"v", offsetof(kevo_fa_args, tm_v), 2},
        {"out", offsetof(kevo_fa_args, tm_out), 0},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(maps); i++) {
        int t = kevo_op_tensor_index(op, maps[i].name);
        assert_true(t >= 0 && op->tensors[t].tmap);
        assert_int_equal(op->tensors[t].tmap_offset, maps[i].off);
        assert_int_equal(op->tensors[t].tmap_offset % 64, 0);
        if (op->tensors[t].role == KEVO_TENSOR_INPUT)
            assert_int_equal(op->tensors[t].stream, maps[i].stream);
    }
    assert_int_equal(op->gpu->args_size, sizeof(kevo_fa_args));
    assert_int_equal(op->gpu->seq_offset, offsetof(kevo_fa_args, launch_seq));
    assert_true(op->gpu->args_size <= WK_ARGS_MAX);

    kevo_syms s;
    parse_ok("Bc=7,H=3,Sq=5,D=64,Skv=11,U=2", &s);
    int64_t dims[KEVO_TENSOR_MAX_RANK], ld;
    uint64_t count;
    kevo_err err;
    const kevo_tensor_desc *q = &op->tensors[kevo_op_tensor_index(op, "q")];
    assert_int_equal(kevo_tensor_shape(q, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(dims[0], 35);
    assert_int_equal(dims[1], 3);
    assert_int_equal(dims[2], 64);
    assert_int_equal(count, 35 * 3 * 64);
    const kevo_tensor_desc *k = &op->tensors[kevo_op_tensor_index(op, "k")];
    assert_int_equal(kevo_tensor_shape(k, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(dims[0], 22);
    assert_int_equal(ld, 64);
    const kevo_tensor_desc *m = &op->tensors[kevo_op_tensor_index(op, "cand_to_user")];
    assert_int_equal(m->role, KEVO_TENSOR_MAP);
    assert_int_equal(kevo_tensor_shape(m, &s, dims, &ld, &count, &err), KEVO_OK);
    assert_int_equal(count, 7);
    int64_t users = 0, per = 0;
    assert_int_equal(kevo_expr_eval_text(m->users, &s, &users, &err), KEVO_OK);
    assert_int_equal(kevo_expr_eval_text(m->per_user, &s, &per, &err), KEVO_OK);
    assert_int_equal(users, 2);
    assert_int_equal(per, 4);
}

/* Norm-wise 2u, elementwise 4u (u = 2^-11 fp16, 2^-8 bf16), as README derives. */
static void test_fa_tolerance(void **state)
{
    (void)state;
    double rel, rtol;
    fa()->tolerance(KEVO_DTYPE_F16, &rel, &rtol);
    assert_true(rel == 2.0 / 2048 && rtol == 4.0 / 2048);
    fa()->tolerance(KEVO_DTYPE_BF16, &rel, &rtol);
    assert_true(rel == 2.0 / 256 && rtol == 4.0 / 256);
}

/* The check scale: 1/sqrt(D) on the sorted and shuffled maps, a power of
 * two on the uneven map large enough that exp of the unshifted row max
 * overflows fp32 in nearly every row of generated inputs (what makes a
 * kernel without the max subtraction fail), while the largest possible
 * |score| (scale * D, inputs in [-1, 1)) stays far inside fp32. */
static void check_overflow_rows(const char *shape_txt, double min_fraction)
{
    kevo_syms s;
    parse_ok(shape_txt, &s);
    kevo_fa_host h;
    kevo_err err;
    assert_int_equal(kevo_fa_host_init(&h, &s, KEVO_DTYPE_F16, KEVO_MAP_UNEVEN, 77, &err), KEVO_OK);
    const double scale = kevo_fa_scale(h.D, KEVO_MAP_UNEVEN);
    const double ln_flt_max = log(FLT_MAX); /* 88.72 */
    const int64_t row = h.H * h.D;
    int64_t rows = 0, over = 0;
    for (int64_t c = 0; c < h.Bc; c++)
        for (int64_t i = 0; i < h.Sq; i++)
            for (int64_t hh = 0; hh < h.H; hh++) {
                double mx = -INFINITY;
                for (int64_t j = 0; j < h.Skv; j++) {
                    double dot = 0;
                    for (int64_t d = 0; d < h.D; d++)
                        dot += (double)kevo_bits_to_float(h.q[(c * h.Sq + i) * row + hh * h.D + d], h.dtype) *
                               kevo_bits_to_float(h.k[((int64_t)h.map[c] * h.Skv + j) * row + hh * h.D + d], h.dtype);
                    mx = fmax(mx, dot * scale);
                }
                rows++;
                over += mx > ln_flt_max;
            }
    printf("  %s: %lld of %lld rows overflow exp() unshifted at scale %g\n", shape_txt, (long long)over,
           (long long)rows, scale);
    assert_true((double)over >= min_fraction * (double)rows);
    kevo_fa_host_release(&h);
}

static void test_fa_check_scale(void **state)
{
    (void)state;
    assert_true(fabs(kevo_fa_scale(128, KEVO_MAP_SORTED) - 1.0 / sqrt(128.0)) < 1e-15);
    assert_true(fabs(kevo_fa_scale(64, KEVO_MAP_SHUFFLED) - 0.125) < 1e-15);
    double big = kevo_fa_scale(128, KEVO_MAP_UNEVEN);
    assert_true(big == kevo_fa_scale(64, KEVO_MAP_UNEVEN));
    int e;
    assert_true(frexp(big, &e) == 0.5); /* a power of two */
    assert_true(big * 128 <= 4096);     /* |scores| <= scale * D: exp(s - max) only underflows, harmlessly */
    check_overflow_rows("Bc=6,H=1,Sq=16,D=128,Skv=64,U=3", 0.9);
    check_overflow_rows("Bc=6,H=2,Sq=8,D=64,Skv=64,U=2", 0.9);
}

/* ---- CPU reference ---- */

/* out[c, i, h, :] from the formula with no max subtraction (fine at small
 * scores), written out without the reference's loops. */
static void test_fa_reference_by_hand(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok("Bc=3,H=2,Sq=2,D=64,Skv=3,U=2", &s);
    kevo_fa_host h;
    kevo_err err;
    assert_int_equal(kevo_fa_host_init(&h, &s, KEVO_DTYPE_F16, KEVO_MAP_SHUFFLED, 5, &err), KEVO_OK);
    const double scale = 0.125;
    size_t n = (size_t)(3 * 2 * 2 * 64);
    double *got = malloc(n * sizeof *got);
    kevo_fa_reference_cpu(&h, scale, got);
#define Q(c, i, hh, d) (double)kevo_bits_to_float(h.q[(((c) * 2 + (i)) * 2 + (hh)) * 64 + (d)], h.dtype)
#define K(u, j, hh, d) (double)kevo_bits_to_float(h.k[(((u) * 3 + (j)) * 2 + (hh)) * 64 + (d)], h.dtype)
#define V(u, j, hh, d) (double)kevo_bits_to_float(h.v[(((u) * 3 + (j)) * 2 + (hh)) * 64 + (d)], h.dtype)
    double worst = 0;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 2; i++)
            for (int hh = 0; hh < 2; hh++) {
                int u = h.map[c];
                double e[3], den = 0;
                for (int j = 0; j < 3; j++) {
                    double dot = 0;
                    for (int d = 0; d < 64; d++)
                        dot += Q(c, i, hh, d) * K(u, j, hh, d);
                    e[j] = exp(dot * scale);
                    den += e[j];
                }
                for (int d = 0; d < 64; d++) {
                    double want = (e[0] * V(u, 0, hh, d) + e[1] * V(u, 1, hh, d) + e[2] * V(u, 2, hh, d)) / den;
                    double g = got[((c * 2 + i) * 2 + hh) * 64 + d];
                    worst = fmax(worst, fabs(g - want));
                }
            }
#undef Q
#undef K
#undef V
    assert_true(worst < 1e-12);
    free(got);
    kevo_fa_host_release(&h);
}

/* Every output is a convex combination of the user's V rows: inside their
 * range per column, at the default scale and at the check scale (where the
 * max subtraction keeps everything finite); one key gives that key's V. */
static void check_convex(const char *shape_txt, kevo_dtype dt, kevo_map_kind map)
{
    kevo_syms s;
    parse_ok(shape_txt, &s);
    kevo_fa_host h;
    kevo_err err;
    assert_int_equal(kevo_fa_host_init(&h, &s, dt, map, 11, &err), KEVO_OK);
    const int64_t row = h.H * h.D, n = h.Bc * h.Sq * row;
    double *out = malloc((size_t)n * sizeof *out);
    kevo_fa_reference_cpu(&h, kevo_fa_scale(h.D, map), out);
    for (int64_t c = 0; c < h.Bc; c++)
        for (int64_t i = 0; i < h.Sq; i++)
            for (int64_t hh = 0; hh < h.H; hh++)
                for (int64_t d = 0; d < h.D; d++) {
                    double lo = INFINITY, hi = -INFINITY;
                    for (int64_t j = 0; j < h.Skv; j++) {
                        double v = kevo_bits_to_float(h.v[((int64_t)h.map[c] * h.Skv + j) * row + hh * h.D + d], dt);
                        lo = fmin(lo, v);
                        hi = fmax(hi, v);
                    }
                    double o = out[(c * h.Sq + i) * row + hh * h.D + d];
                    assert_true(isfinite(o));
                    assert_true(o >= lo - 1e-12 && o <= hi + 1e-12);
                    if (h.Skv == 1)
                        assert_true(o == lo);
                }
    free(out);
    kevo_fa_host_release(&h);
}

static void test_fa_reference_convex(void **state)
{
    (void)state;
    check_convex("Bc=5,H=2,Sq=3,D=64,Skv=9,U=2", KEVO_DTYPE_F16, KEVO_MAP_SORTED);
    check_convex("Bc=5,H=1,Sq=3,D=128,Skv=17,U=3", KEVO_DTYPE_BF16, KEVO_MAP_UNEVEN); /* the check scale */
    check_convex("Bc=4,H=3,Sq=2,D=64,Skv=1,U=2", KEVO_DTYPE_F16, KEVO_MAP_SHUFFLED);  /* one key: out = V */
    check_convex("Bc=4,H=1,Sq=2,D=128,Skv=1,U=4", KEVO_DTYPE_BF16, KEVO_MAP_UNEVEN);
}

/* Host sets: the generator's streams 0, 1, 2; every map value in [0, U);
 * errors for a shape without the op's symbols. */
static void test_fa_host_init(void **state)
{
    (void)state;
    kevo_syms s;
    parse_ok("Bc=9,H=2,Sq=3,D=64,Skv=5,U=4", &s);
    kevo_fa_host h;
    kevo_err err;
    assert_int_equal(kevo_fa_host_init(&h, &s, KEVO_DTYPE_BF16, KEVO_MAP_UNEVEN, 3, &err), KEVO_OK);
    uint16_t bits;
    kevo_gen_value(3, 0, 17, KEVO_DTYPE_BF16, &bits);
    assert_int_equal(h.q[17], bits);
    kevo_gen_value(3, 1, 5, KEVO_DTYPE_BF16, &bits);
    assert_int_equal(h.k[5], bits);
    kevo_gen_value(3, 2, 4 * 5 * 2 * 64 - 1, KEVO_DTYPE_BF16, &bits);
    assert_int_equal(h.v[4 * 5 * 2 * 64 - 1], bits);
    for (int c = 0; c < 9; c++)
        assert_true(h.map[c] >= 0 && h.map[c] < 4);
    kevo_fa_host_release(&h);
    kevo_fa_host_release(&h); /* twice is harmless */

    kevo_syms lce;
    assert_int_equal(kevo_op_find("ikbo_lce")->parse_shape(NULL, &lce, &err), KEVO_OK);
    assert_int_equal(kevo_fa_host_init(&h, &lce, KEVO_DTYPE_F16, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "'Bc'"));
    assert_int_equal(kevo_fa_host_init(&h, &s, (kevo_dtype)7, KEVO_MAP_SORTED, 1, &err), KEVO_ERR_ARG);
}

/* ---- the shape without the co-design (baseline (b)) ---- */

static void check_nocodesign(const char *text, int64_t Bc)
{
    kevo_syms s, n;
    parse_ok(text, &s);
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(fa()->nocodesign_shape(&s, &n, &err), KEVO_OK);
    assert_int_equal(tu_sym(&n, "Bc"), Bc);
    assert_int_equal(tu_sym(&n, "U"), Bc); /* each candidate its own K/V */
    assert_int_equal(tu_sym(&n, "ratio"), 1);
    static const char *const same[] = {"Bc", "H", "Sq", "D", "Skv"};
    for (size_t i = 0; i < KV_ARRAY_LEN(same); i++)
        assert_int_equal(tu_sym(&n, same[i]), tu_sym(&s, same[i]));
}

static void test_fa_nocodesign_shape(void **state)
{
    (void)state;
    check_nocodesign(NULL, 2048);
    check_nocodesign("Skv=16384", 2048);
    check_nocodesign("Bc=2047,ratio=70,D=64,Skv=3000", 2047);
    check_nocodesign("Bc=3,U=2", 3);
    check_nocodesign("Bc=5,ratio=1", 5);

    /* K/V of Bc * Skv = 2^32 rows: fine shared (U = 32), past the ABI's int per candidate */
    kevo_syms s, n;
    parse_ok("Bc=2048,Skv=2097152,ratio=64", &s);
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(fa()->nocodesign_shape(&s, &n, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "without the co-design"));
    assert_non_null(strstr(err.msg, "tensor 'k' has more than 2147483647 rows (U * Skv)"));
    assert_int_equal(fa()->nocodesign_shape(NULL, &n, &err), KEVO_ERR_ARG);

    /* ikbo_lce has no such peer */
    const kevo_op *lce = kevo_op_find("ikbo_lce");
    assert_non_null(lce);
    assert_null(lce->nocodesign_shape);
    int b = kevo_op_peer_index(fa(), "nocodesign");
    assert_true(b >= 0 && (fa()->peers[b].flags & KEVO_PEER_AFTER));
    for (int i = 0; i < lce->npeers; i++)
        assert_false(lce->peers[i].flags & KEVO_PEER_AFTER);
}

/* ---- export and the reference module ---- */

/* The library's dispatch keys are the shape's own symbols (U rather than
 * ratio: the caller gives U), and the op's pieces are files of the tree. */
static void test_fa_export_desc(void **state)
{
    (void)state;
    const kevo_op_export *xd = fa()->export_desc;
    static const char *const keys[] = {"Bc", "H", "Sq", "D", "Skv", "U"};
    assert_int_equal(xd->ntuned_keys, (int)KV_ARRAY_LEN(keys));
    for (size_t i = 0; i < KV_ARRAY_LEN(keys); i++)
        assert_string_equal(xd->tuned_keys[i], keys[i]);
    const char *const pieces[] = {xd->head, xd->api, xd->dispatch, xd->call};
    for (size_t i = 0; i < KV_ARRAY_LEN(pieces); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/kernels/%s", KEVO_SOURCE_DIR, pieces[i]);
        assert_int_equal(access(path, R_OK), 0);
        assert_non_null(strstr(pieces[i], "ikbo_fa/export/"));
    }
}

/* The module kevo compiles for every ikbo_fa run: both dtypes for sm_90a
 * (and sm_80: nothing in it needs Hopper), every entry the evaluator and
 * gpu.c look up, no spills. */
static void test_fa_ref_module_compiles(void **state)
{
    (void)state;
    static const char *const entries[] = {"kv_gen",         "kv_checksum",  "kv_sumsq",     "kv_compare",
                                          "kv_fa_ref_d64",  "kv_fa_ref_d128", "kv_fa_gather", "kv_fa_softmax",
                                          "kv_fa_softmax32", "kv_to_f32", "kv_fa_ptrs", "kv_fa_softmax_terms",
                                          "kv_fa_ptrs_pv"};
    static const char *const archs[] = {"sm_90a", "sm_90a", "sm_80"};
    kevo_compile_job jobs[3];
    char *src[3];
    kevo_err err;
    for (int i = 0; i < 3; i++) {
        src[i] = tu_op_ref_source(fa(), i == 1 ? KEVO_DTYPE_BF16 : KEVO_DTYPE_F16);
        assert_int_equal(kevo_compile_job_init(&jobs[i], fa()->ref_name, src[i], archs[i], &err), KEVO_OK);
    }
    assert_int_equal(kevo_compile_run(jobs, 3, 2, 300, &err), KEVO_OK);
    for (int i = 0; i < 3; i++) {
        kevo_compile_job *j = &jobs[i];
        if (j->fail != KEVO_FAIL_NONE)
            print_error("%s for %s: %s\n", fa()->ref_name, archs[i], j->log ? j->log : "");
        assert_int_equal(j->fail, KEVO_FAIL_NONE);
        printf("  %s %s: %.1f s, %d regs, %d B spill\n", fa()->ref_name, archs[i], j->seconds, j->regs,
               j->spill_bytes);
        assert_int_equal(j->spill_bytes, 0);
        for (size_t e = 0; e < KV_ARRAY_LEN(entries); e++) {
            char line[128];
            snprintf(line, sizeof line, "Compiling entry function '%s' for '%s'", entries[e], archs[i]);
            if (!strstr(j->log, line))
                print_error("no '%s' in:\n%s\n", line, j->log);
            assert_non_null(strstr(j->log, line));
        }
        kevo_compile_job_release(j);
        free(src[i]);
    }
}

/* The planted-fault candidates test_gpu_fa.c runs (tests/fixtures/fa)
 * compile for every fault and dtype: the GPU test fails on its checks, not
 * on a typo. */
static void test_fa_fault_fixture_compiles(void **state)
{
    (void)state;
    enum { NFAULTS = 5 };
    char *abi = tu_read_src("kernels/ikbo_fa/abi.h");
    char *body = tu_read_src("tests/fixtures/fa/fa_faults.cu");
    kevo_compile_job jobs[2 * NFAULTS];
    kv_buf src[2 * NFAULTS];
    kevo_err err;
    for (int i = 0; i < 2 * NFAULTS; i++) {
        kv_buf_init(&src[i]);
        kv_buf_printf(&src[i], "#define DTYPE_BF16 %d\n#define FA_FAULT %d\n%s\n#line 1 \"fa_faults.cu\"\n%s", i / NFAULTS,
                      i % NFAULTS, abi, body);
        assert_int_equal(kevo_compile_job_init(&jobs[i], "fa_faults.cu", src[i].data, "sm_90a", &err), KEVO_OK);
    }
    assert_int_equal(kevo_compile_run(jobs, 2 * NFAULTS, 2, 300, &err), KEVO_OK);
    for (int i = 0; i < 2 * NFAULTS; i++) {
        if (jobs[i].fail != KEVO_FAIL_NONE)
            print_error("fault %d: %s\n", i % NFAULTS, jobs[i].log ? jobs[i].log : "");
        assert_int_equal(jobs[i].fail, KEVO_FAIL_NONE);
        assert_non_null(strstr(jobs[i].log, "Compiling entry function 'fa_fault' for 'sm_90a'"));
        kevo_compile_job_release(&jobs[i]);
        kv_buf_release(&src[i]);
    }
    free(abi);
    free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fa_lookup),
        cmocka_unit_test(test_fa_default_shape),
        cmocka_unit_test(test_fa_parse_ratio_and_u),
        cmocka_unit_test(test_fa_parse_errors),
        cmocka_unit_test(test_fa_flops_bytes),
        cmocka_unit_test(test_fa_tensors),
        cmocka_unit_test(test_fa_tolerance),
        cmocka_unit_test(test_fa_check_scale),
        cmocka_unit_test(test_fa_reference_by_hand),
        cmocka_unit_test(test_fa_reference_convex),
        cmocka_unit_test(test_fa_host_init),
        cmocka_unit_test(test_fa_nocodesign_shape),
        cmocka_unit_test(test_fa_export_desc),
        cmocka_unit_test(test_fa_ref_module_compiles),
        cmocka_unit_test(test_fa_fault_fixture_compiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
