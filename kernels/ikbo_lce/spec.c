/* spec.c — the ikbo_lce spec (decomposed linear compression embedding):
 *     out[b] = W_cand @ E_cand[b] + W_user @ E_user[cand_to_user[b]]
 * Shape parsing, FLOP and byte counts, the tensors as the evaluator sees
 * them, tolerances, the names of the same-run peers, what export needs,
 * host input sets and a CPU reference. */
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ikbo_lce/abi.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"
#include "util/util.h"

#define LCE_DEFAULT_SHAPE "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70"

static const char *const lce_symbols[] = {"B", "M", "N", "Ku", "Kc", "U", "ratio", "Kup", "Kcp"};

/* Keys parse_shape accepts, in shape_str order. */
enum { LCE_B, LCE_M, LCE_N, LCE_KU, LCE_KC, LCE_RATIO, LCE_U, LCE_NKEYS };
static const char *const lce_keys[LCE_NKEYS] = {"B", "M", "N", "Ku", "Kc", "ratio", "U"};

static int64_t lce_cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static int64_t lce_round_up8(int64_t a)
{
    return (a + 7) / 8 * 8;
}

/* Value of a bound symbol, 0 when unbound. */
static int64_t lce_sym(const kevo_syms *s, const char *name)
{
    int64_t v = 0;
    if (!s || !kevo_syms_get(s, name, &v))
        return 0;
    return v;
}

/* a*b*c for positive factors, saturated at limit+1 so nothing overflows. */
static uint64_t lce_count(int64_t a, int64_t b, int64_t c, uint64_t limit)
{
    const int64_t f[3] = {a, b, c};
    return kevo_shape_count(f, 3, limit);
}

/* Refuse a tensor of more than 2^48 elements. */
static kevo_status lce_check_elems(const char *tensor, const char *dims, int64_t a, int64_t b, int64_t c,
                                   kevo_err *err)
{
    const int64_t f[3] = {a, b, c};
    return kevo_shape_check_elems(tensor, dims, f, 3, err);
}

static kevo_status lce_parse_shape(const char *text, kevo_syms *out, kevo_err *err)
{
    int64_t v[LCE_NKEYS], dv[LCE_NKEYS];
    bool given[LCE_NKEYS], dgiven[LCE_NKEYS];
    kevo_status st;

    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no output for shape '%s'", text ? text : "");
    if (kevo_shape_parse_items(LCE_DEFAULT_SHAPE, lce_keys, LCE_NKEYS, dv, dgiven, err) != KEVO_OK)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad default shape '%s'", LCE_DEFAULT_SHAPE);
    if ((st = kevo_shape_parse_items(text, lce_keys, LCE_NKEYS, v, given, err)) != KEVO_OK)
        return st;
    for (int k = LCE_B; k <= LCE_KC; k++)
        if (!given[k])
            v[k] = dv[k];

    int64_t B = v[LCE_B], ratio, U;
    if ((st = kevo_shape_users("B", B, given[LCE_RATIO], v[LCE_RATIO], given[LCE_U], v[LCE_U], dv[LCE_RATIO], &ratio,
                               &U, err)) != KEVO_OK)
        return st;

    int64_t M = v[LCE_M], N = v[LCE_N], Ku = v[LCE_KU], Kc = v[LCE_KC];
    int64_t Kup = lce_round_up8(Ku), Kcp = lce_round_up8(Kc);
    /* weights are checked at their padded width, the largest they are stored at */
    if ((st = lce_check_elems("w_user", "M, Kup", M, Kup, 1, err)) != KEVO_OK ||
        (st = lce_check_elems("w_cand", "M, Kcp", M, Kcp, 1, err)) != KEVO_OK ||
        (st = lce_check_elems("e_user", "U, Ku, N", U, Ku, N, err)) != KEVO_OK ||
        (st = lce_check_elems("e_cand", "B, Kc, N", B, Kc, N, err)) != KEVO_OK ||
        (st = lce_check_elems("out", "B, M, N", B, M, N, err)) != KEVO_OK)
        return st;

    kevo_syms s;
    kevo_syms_init(&s);
    const int64_t values[] = {B, M, N, Ku, Kc, U, ratio, Kup, Kcp};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (kevo_syms_set(&s, lce_symbols[i], values[i]) != KEVO_OK)
            return kevo_err_set(err, KEVO_ERR_INTERNAL, "unable to bind shape symbol '%s'", lce_symbols[i]);
    *out = s;
    return KEVO_OK;
}

static void lce_shape_str(const kevo_syms *shape, char *out, size_t n)
{
    if (!out || n == 0)
        return;
    snprintf(out, n,
             "B=%" PRId64 ",M=%" PRId64 ",N=%" PRId64 ",Ku=%" PRId64 ",Kc=%" PRId64 ",ratio=%" PRId64 ",U=%" PRId64,
             lce_sym(shape, "B"), lce_sym(shape, "M"), lce_sym(shape, "N"), lce_sym(shape, "Ku"),
             lce_sym(shape, "Kc"), lce_sym(shape, "ratio"), lce_sym(shape, "U"));
}

/* Candidate GEMM at batch B, user GEMM at batch U, broadcast add. */
static double lce_flops(const kevo_syms *shape)
{
    double B = (double)lce_sym(shape, "B"), M = (double)lce_sym(shape, "M"), N = (double)lce_sym(shape, "N");
    double Ku = (double)lce_sym(shape, "Ku"), Kc = (double)lce_sym(shape, "Kc"), U = (double)lce_sym(shape, "U");
    return 2.0 * M * N * (B * Kc + U * Ku) + B * M * N;
}

/* Each input read once, out written once, cand_to_user read once. */
static double lce_bytes(const kevo_syms *shape, kevo_dtype dtype)
{
    (void)dtype; /* fp16 and bf16 are both 2 bytes */
    double elem = 2.0;
    double B = (double)lce_sym(shape, "B"), M = (double)lce_sym(shape, "M"), N = (double)lce_sym(shape, "N");
    double Ku = (double)lce_sym(shape, "Ku"), Kc = (double)lce_sym(shape, "Kc"), U = (double)lce_sym(shape, "U");
    return elem * (M * Ku + M * Kc + U * Ku * N + B * Kc * N + B * M * N) + 4.0 * B;
}

/* The output is rounded once (twice in the decomposed peer): the norm-wise
 * error of one rounding is about u/sqrt(3), u the unit roundoff, 2^-11
 * (fp16) or 2^-8 (bf16).  The bounds leave room for two roundings. */
static void lce_tolerance(kevo_dtype dt, double *rel_bound, double *rtol)
{
    double u = dt == KEVO_DTYPE_BF16 ? 1.0 / 256 : 1.0 / 2048;
    *rel_bound = 2.0 * u;
    *rtol = 4.0 * u;
}

/* The ABI struct's tensors (abi.h), in its order; the weights have copies
 * with rows padded to 8 elements for plans with pad_k. */
static const kevo_tensor_desc lce_tensors[] = {
    {.name = "w_user", .role = KEVO_TENSOR_INPUT, .rank = 2, .dims = {"M", "Ku"}, .padded = "Kup", .stream = 0,
     .tmap = true, .tmap_offset = offsetof(kevo_lce_args, tm_w_user),
     .tmap_field = "tm_w_user"},
    {.name = "w_cand", .role = KEVO_TENSOR_INPUT, .rank = 2, .dims = {"M", "Kc"}, .padded = "Kcp", .stream = 1,
     .tmap = true, .tmap_offset = offsetof(kevo_lce_args, tm_w_cand),
     .tmap_field = "tm_w_cand"},
    {.name = "e_user", .role = KEVO_TENSOR_INPUT, .rank = 3, .dims = {"U", "Ku", "N"}, .stream = 2, .tmap = true,
     .tmap_offset = offsetof(kevo_lce_args, tm_e_user),
     .tmap_field = "tm_e_user"},
    {.name = "e_cand", .role = KEVO_TENSOR_INPUT, .rank = 3, .dims = {"B", "Kc", "N"}, .stream = 3, .tmap = true,
     .tmap_offset = offsetof(kevo_lce_args, tm_e_cand),
     .tmap_field = "tm_e_cand"},
    {.name = "cand_to_user", .role = KEVO_TENSOR_MAP, .rank = 1, .dims = {"B"}, .users = "U", .per_user = "ratio"},
    {.name = "out", .role = KEVO_TENSOR_OUTPUT, .rank = 3, .dims = {"B", "M", "N"}, .tmap = true,
     .tmap_offset = offsetof(kevo_lce_args, tm_out),
     .tmap_field = "tm_out"},
};

/* The symbols the library's dispatch matches a tuned shape on. */
static const char *const lce_tuned_keys[] = {"B", "M", "N", "Ku", "Kc", "U"};

static const kevo_op_export lce_export = {
    .head = "ikbo_lce/export/head.h.in",
    .api = "ikbo_lce/export/api.h.in",
    .dispatch = "ikbo_lce/export/dispatch.c.in",
    .call = "ikbo_lce/export/call.c.in",
    .tuned_keys = lce_tuned_keys,
    .ntuned_keys = (int)(sizeof lce_tuned_keys / sizeof lce_tuned_keys[0]),
    .what = "IKBO linear-compression kernels",
    .readme_fallback = "what cuBLAS gives (the stage-0 batched GEMM or the decomposed form)",
    .pad_column = "pads W",
    .torch = "ikbo_lce/export/torch.cpp.in",
    .torch_usage = "ikbo_lce/export/torch_usage.md.in",
    .pad_yes = "yes (rows of 8)",
    .vendor_forms = kevo_lce_vendor_forms,
    .nvendor_forms = KEVO_LCE_VENDOR_FORMS,
    .vendor_source = "ikbo_lce/vendor.cu",
    .vendor_entries = kevo_lce_vendor_entries,
    .nvendor_entries = KEVO_LCE_VENDOR_ENTRIES,
    .vendor_parse = kevo_lce_vendor_parse,
    .vendor_text = kevo_lce_vendor_text,
};

/* The same-run peers (gpu.c runs them), each at its strongest: stage 0 is
 * what a PyTorch user runs today without the co-design; decomposed and
 * beta1 are the strongest forms without a custom kernel (the IKBO blog's
 * stages 1-2, and torch.baddbmm onto the gathered user result), their
 * GEMMs through cuBLASLt at its fastest algorithm of the heuristic's top
 * ones, on copies of W and E with K padded to 8. */
static const kevo_peer_desc lce_peers[] = {
    {.name = "stage0",
     .label = "stage 0 (one cuBLAS batched GEMM over the pre-broadcast E, W = cat(W_user, W_cand))",
     .verdict = "the stage-0 cuBLAS baseline",
     .flags = KEVO_PEER_BASELINE},
    {.name = "stage0_bcast", .label = "stage 0 with the broadcast of E in each call", .verdict = "stage 0 with its broadcast"},
    {.name = "decomposed",
     .label = "decomposed (cuBLASLt user GEMM at batch U, candidate GEMM, broadcast-add; K padded to 8)",
     .verdict = "decomposed cuBLAS (K padded)",
     .flags = KEVO_PEER_VENDOR},
    {.name = "beta1",
     .label = "beta=1 (cuBLASLt user GEMM at batch U, gather into out, candidate GEMM accumulating; K padded to 8)",
     .verdict = "cuBLAS (beta=1)",
     .flags = KEVO_PEER_VENDOR},
};

const kevo_op kevo_op_ikbo_lce = {
    .name = "ikbo_lce",
    .summary = "linear compression embedding, decomposed: out[b] = Wc @ Ec[b] + Wu @ Eu[cand_to_user[b]]",
    .default_shape = LCE_DEFAULT_SHAPE,
    .symbols = lce_symbols,
    .nsymbols = (int)(sizeof lce_symbols / sizeof lce_symbols[0]),
    .parse_shape = lce_parse_shape,
    .shape_str = lce_shape_str,
    .flops = lce_flops,
    .bytes = lce_bytes,
    .tolerance = lce_tolerance,
    .abi_header = "ikbo_lce/abi.h",
    .ref_source = "ikbo_lce/ref.cu",
    .ref_name = "ikbo_lce_ref.cu",
    .tensors = lce_tensors,
    .ntensors = (int)(sizeof lce_tensors / sizeof lce_tensors[0]),
    .peers = lce_peers,
    .npeers = (int)(sizeof lce_peers / sizeof lce_peers[0]),
    .export_desc = &lce_export,
    .gpu = &kevo_ikbo_lce_gpu,
};

/* ---- host input sets ---- */

void kevo_lce_host_release(kevo_lce_host *h)
{
    if (!h)
        return;
    free(h->w_user);
    free(h->w_cand);
    free(h->e_user);
    free(h->e_cand);
    free(h->map);
    memset(h, 0, sizeof *h);
}

static kevo_status lce_shape_value(const kevo_syms *shape, const char *name, int64_t *out, kevo_err *err)
{
    if (!kevo_syms_get(shape, name, out))
        return kevo_err_set(err, KEVO_ERR_ARG, "shape lacks symbol '%s'", name);
    if (*out < 1 || *out > KEVO_SHAPE_VALUE_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "bad value '%" PRId64 "' for shape symbol '%s'", *out, name);
    return KEVO_OK;
}

/* Fill n elements of one tensor with its generated storage bits. */
static void lce_fill(uint16_t *dst, uint64_t n, uint64_t seed, uint32_t tensor, kevo_dtype dt)
{
    for (uint64_t i = 0; i < n; i++)
        kevo_gen_value(seed, tensor, i, dt, &dst[i]);
}

kevo_status kevo_lce_host_init(kevo_lce_host *h, const kevo_syms *shape, kevo_dtype dt, kevo_map_kind map,
                               uint64_t seed, kevo_err *err)
{
    if (!h || !shape)
        return kevo_err_set(err, KEVO_ERR_ARG, "no host set or shape for 'ikbo_lce'");
    memset(h, 0, sizeof *h);
    if (dt != KEVO_DTYPE_F16 && dt != KEVO_DTYPE_BF16)
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown dtype '%d'", (int)dt);
    if (map != KEVO_MAP_SORTED && map != KEVO_MAP_UNEVEN && map != KEVO_MAP_SHUFFLED)
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown map kind '%d'", (int)map);

    int64_t B, M, N, Ku, Kc, U, ratio;
    const char *const names[6] = {"B", "M", "N", "Ku", "Kc", "U"};
    int64_t *const dims[6] = {&B, &M, &N, &Ku, &Kc, &U};
    for (int i = 0; i < 6; i++) {
        kevo_status st = lce_shape_value(shape, names[i], dims[i], err);
        if (st != KEVO_OK)
            return st;
    }
    if (!kevo_syms_get(shape, "ratio", &ratio) || ratio < 1)
        ratio = lce_cdiv(B, U);

    /* element counts, capped so that count * 2 bytes fits in size_t */
    const uint64_t cap = (uint64_t)(SIZE_MAX / sizeof(uint16_t));
    struct {
        const char *name;
        uint64_t n;
        uint16_t **dst;
    } t[4] = {
        {"w_user", lce_count(M, Ku, 1, cap), &h->w_user},
        {"w_cand", lce_count(M, Kc, 1, cap), &h->w_cand},
        {"e_user", lce_count(U, Ku, N, cap), &h->e_user},
        {"e_cand", lce_count(B, Kc, N, cap), &h->e_cand},
    };
    for (int i = 0; i < 4; i++) /* refuse before allocating anything */
        if (t[i].n > cap)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "tensor '%s' too large to allocate", t[i].name);
    for (int i = 0; i < 4; i++) {
        if (!(*t[i].dst = malloc((size_t)t[i].n * sizeof(uint16_t)))) {
            kevo_lce_host_release(h);
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for tensor '%s' (%" PRIu64 " elements)", t[i].name,
                                t[i].n);
        }
    }
    if (!(h->map = malloc((size_t)B * sizeof(int32_t)))) { /* B <= 2^31-1: no overflow */
        kevo_lce_host_release(h);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for tensor 'cand_to_user' (%" PRId64 " elements)", B);
    }

    h->shape = *shape;
    h->dtype = dt;
    h->B = B;
    h->M = M;
    h->N = N;
    h->Ku = Ku;
    h->Kc = Kc;
    h->U = U;
    for (uint32_t i = 0; i < 4; i++)
        lce_fill(*t[i].dst, t[i].n, seed, i, dt);
    kevo_make_map(map, B, U, ratio, seed, h->map);
    return KEVO_OK;
}

/* out[b, m, :] += sum_k w[m, k] * e[k, :] over K rows of e, in double. */
static void lce_gemv_rows(const uint16_t *w_row, const uint16_t *e, int64_t K, int64_t N, kevo_dtype dt, double *o)
{
    for (int64_t k = 0; k < K; k++) {
        double w = kevo_bits_to_float(w_row[k], dt);
        const uint16_t *er = e + k * N;
        for (int64_t n = 0; n < N; n++)
            o[n] += w * (double)kevo_bits_to_float(er[n], dt);
    }
}

void kevo_lce_reference_cpu(const kevo_lce_host *h, double *out)
{
    if (!h || !out)
        return;
    const int64_t B = h->B, M = h->M, N = h->N, Ku = h->Ku, Kc = h->Kc;
    for (int64_t b = 0; b < B; b++) {
        const uint16_t *ec = h->e_cand + b * Kc * N;
        const uint16_t *eu = h->e_user + (int64_t)h->map[b] * Ku * N;
        for (int64_t m = 0; m < M; m++) {
            double *o = out + (b * M + m) * N;
            for (int64_t n = 0; n < N; n++)
                o[n] = 0.0;
            lce_gemv_rows(h->w_cand + m * Kc, ec, Kc, N, h->dtype, o);
            lce_gemv_rows(h->w_user + m * Ku, eu, Ku, N, h->dtype, o);
        }
    }
}
