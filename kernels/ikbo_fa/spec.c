/* spec.c — the ikbo_fa spec (IKBO flash attention), per head h:
 *     out[c] = softmax(Q[c] K[u]^T * scale) V[u],   u = cand_to_user[c]
 * Shape parsing, FLOP and byte counts, the tensors as the evaluator sees
 * them, tolerances, the names of the same-run peers, host input sets and a
 * CPU reference.  No export description yet (kevo export refuses the op). */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ikbo_fa/abi.h"
#include "kernels/ikbo_fa/ikbo_fa.h"
#include "core/op.h"

#define FA_DEFAULT_SHAPE "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64"

static const char *const fa_symbols[] = {"Bc", "H", "Sq", "D", "Skv", "U", "ratio"};

/* Keys parse_shape accepts, in shape_str order. */
enum { FA_BC, FA_H, FA_SQ, FA_D, FA_SKV, FA_RATIO, FA_U, FA_NKEYS };
static const char *const fa_keys[FA_NKEYS] = {"Bc", "H", "Sq", "D", "Skv", "ratio", "U"};

/* Value of a bound symbol, 0 when unbound. */
static int64_t fa_sym(const kevo_syms *s, const char *name)
{
    int64_t v = 0;
    if (!s || !kevo_syms_get(s, name, &v))
        return 0;
    return v;
}

/* Refuse a [rows, H, D] tensor whose rows (an int in the ABI) pass 2^31-1
 * or whose elements pass 2^48. */
static kevo_status fa_check_tensor(const char *tensor, const char *rows_text, int64_t r0, int64_t r1, int64_t H,
                                   int64_t D, kevo_err *err)
{
    const int64_t r[2] = {r0, r1};
    uint64_t rows = kevo_shape_count(r, 2, (uint64_t)KEVO_SHAPE_VALUE_MAX);
    if (rows > (uint64_t)KEVO_SHAPE_VALUE_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' has more than %" PRId64 " rows (%s)", tensor,
                            KEVO_SHAPE_VALUE_MAX, rows_text);
    const int64_t f[3] = {(int64_t)rows, H, D};
    char dims[64];
    snprintf(dims, sizeof dims, "%s, H, D", rows_text);
    return kevo_shape_check_elems(tensor, dims, f, 3, err);
}

static kevo_status fa_parse_shape(const char *text, kevo_syms *out, kevo_err *err)
{
    int64_t v[FA_NKEYS], dv[FA_NKEYS];
    bool given[FA_NKEYS], dgiven[FA_NKEYS];
    kevo_status st;

    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no output for shape '%s'", text ? text : "");
    if (kevo_shape_parse_items(FA_DEFAULT_SHAPE, fa_keys, FA_NKEYS, dv, dgiven, err) != KEVO_OK)
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "bad default shape '%s'", FA_DEFAULT_SHAPE);
    if ((st = kevo_shape_parse_items(text, fa_keys, FA_NKEYS, v, given, err)) != KEVO_OK)
        return st;
    for (int k = FA_BC; k <= FA_SKV; k++)
        if (!given[k])
            v[k] = dv[k];
    if (v[FA_D] != 64 && v[FA_D] != 128)
        return kevo_err_set(err, KEVO_ERR_ARG, "value '%" PRId64 "' for shape key 'D' must be 64 or 128", v[FA_D]);

    int64_t Bc = v[FA_BC], ratio, U;
    if ((st = kevo_shape_users("Bc", Bc, given[FA_RATIO], v[FA_RATIO], given[FA_U], v[FA_U], dv[FA_RATIO], &ratio, &U,
                               err)) != KEVO_OK)
        return st;

    int64_t H = v[FA_H], Sq = v[FA_SQ], D = v[FA_D], Skv = v[FA_SKV];
    if ((st = fa_check_tensor("q", "Bc * Sq", Bc, Sq, H, D, err)) != KEVO_OK ||
        (st = fa_check_tensor("k", "U * Skv", U, Skv, H, D, err)) != KEVO_OK ||
        (st = fa_check_tensor("v", "U * Skv", U, Skv, H, D, err)) != KEVO_OK ||
        (st = fa_check_tensor("out", "Bc * Sq", Bc, Sq, H, D, err)) != KEVO_OK)
        return st;

    kevo_syms s;
    kevo_syms_init(&s);
    const int64_t values[] = {Bc, H, Sq, D, Skv, U, ratio};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (kevo_syms_set(&s, fa_symbols[i], values[i]) != KEVO_OK)
            return kevo_err_set(err, KEVO_ERR_INTERNAL, "unable to bind shape symbol '%s'", fa_symbols[i]);
    *out = s;
    return KEVO_OK;
}

/* The shape without the co-design: each candidate its own K/V (U = Bc,
 * ratio = 1), through fa_parse_shape so that its limits apply (Bc * Skv
 * rows of K and V must fit an int). */
static kevo_status fa_nocodesign_shape(const kevo_syms *shape, kevo_syms *out, kevo_err *err)
{
    if (!shape || !out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no shape for the shape without the co-design");
    int64_t Bc = fa_sym(shape, "Bc");
    char text[256];
    snprintf(text, sizeof text, "Bc=%" PRId64 ",H=%" PRId64 ",Sq=%" PRId64 ",D=%" PRId64 ",Skv=%" PRId64 ",U=%" PRId64,
             Bc, fa_sym(shape, "H"), fa_sym(shape, "Sq"), fa_sym(shape, "D"), fa_sym(shape, "Skv"), Bc);
    kevo_status st = fa_parse_shape(text, out, err);
    if (st)
        kevo_err_prefix(err, "without the co-design (K/V gathered per candidate, %s)", text);
    return st;
}

static void fa_shape_str(const kevo_syms *shape, char *out, size_t n)
{
    if (!out || n == 0)
        return;
    snprintf(out, n,
             "Bc=%" PRId64 ",H=%" PRId64 ",Sq=%" PRId64 ",D=%" PRId64 ",Skv=%" PRId64 ",ratio=%" PRId64 ",U=%" PRId64,
             fa_sym(shape, "Bc"), fa_sym(shape, "H"), fa_sym(shape, "Sq"), fa_sym(shape, "D"), fa_sym(shape, "Skv"),
             fa_sym(shape, "ratio"), fa_sym(shape, "U"));
}

/* QK^T and PV, each 2 Sq Skv D per candidate and head. */
static double fa_flops(const kevo_syms *shape)
{
    double Bc = (double)fa_sym(shape, "Bc"), H = (double)fa_sym(shape, "H"), Sq = (double)fa_sym(shape, "Sq");
    double D = (double)fa_sym(shape, "D"), Skv = (double)fa_sym(shape, "Skv");
    return 4.0 * Bc * H * Sq * D * Skv;
}

/* Q read once, K and V read once at the users' batch (the IKBO point),
 * out written once, cand_to_user read once. */
static double fa_bytes(const kevo_syms *shape, kevo_dtype dtype)
{
    (void)dtype; /* fp16 and bf16 are both 2 bytes */
    double elem = 2.0;
    double Bc = (double)fa_sym(shape, "Bc"), H = (double)fa_sym(shape, "H"), Sq = (double)fa_sym(shape, "Sq");
    double D = (double)fa_sym(shape, "D"), Skv = (double)fa_sym(shape, "Skv"), U = (double)fa_sym(shape, "U");
    return elem * (2.0 * Bc * Sq * H * D + 2.0 * U * Skv * H * D) + 4.0 * Bc;
}

/* With u the unit roundoff (2^-11 fp16, 2^-8 bf16): a flash kernel rounds
 * P to the storage dtype before P.V (norm-wise about u/sqrt(3) of out, the
 * same as a rounding of out itself) and rounds out once; everything else is
 * fp32.  Norm-wise 2u leaves room for both and more; elementwise 4u|ref| +
 * 4u rms(ref) keeps the worst of 2^25 elements (about 7 standard deviations
 * of the P term) inside.  Derivation: README.md. */
static void fa_tolerance(kevo_dtype dt, double *rel_bound, double *rtol)
{
    double u = dt == KEVO_DTYPE_BF16 ? 1.0 / 256 : 1.0 / 2048;
    *rel_bound = 2.0 * u;
    *rtol = 4.0 * u;
}

double kevo_fa_scale(int64_t D, kevo_map_kind map)
{
    if (map == KEVO_MAP_UNEVEN)
        return KEVO_FA_CHECK_SCALE;
    return 1.0 / sqrt((double)(D > 0 ? D : 1));
}

/* The ABI struct's tensors (abi.h), in its order. */
static const kevo_tensor_desc fa_tensors[] = {
    {.name = "q", .role = KEVO_TENSOR_INPUT, .rank = 3, .dims = {"Bc * Sq", "H", "D"}, .stream = 0, .tmap = true,
     .tmap_offset = offsetof(kevo_fa_args, tm_q), .tmap_field = "tm_q"},
    {.name = "k", .role = KEVO_TENSOR_INPUT, .rank = 3, .dims = {"U * Skv", "H", "D"}, .stream = 1, .tmap = true,
     .tmap_offset = offsetof(kevo_fa_args, tm_k), .tmap_field = "tm_k"},
    {.name = "v", .role = KEVO_TENSOR_INPUT, .rank = 3, .dims = {"U * Skv", "H", "D"}, .stream = 2, .tmap = true,
     .tmap_offset = offsetof(kevo_fa_args, tm_v), .tmap_field = "tm_v"},
    {.name = "cand_to_user", .role = KEVO_TENSOR_MAP, .rank = 1, .dims = {"Bc"}, .users = "U", .per_user = "ratio"},
    {.name = "out", .role = KEVO_TENSOR_OUTPUT, .rank = 3, .dims = {"Bc * Sq", "H", "D"}, .tmap = true,
     .tmap_offset = offsetof(kevo_fa_args, tm_out), .tmap_field = "tm_out"},
};

/* The symbols the library's dispatch matches a tuned shape on. */
static const char *const fa_tuned_keys[] = {"Bc", "H", "Sq", "D", "Skv", "U"};

static const kevo_op_export fa_export = {
    .head = "ikbo_fa/export/head.h.in",
    .api = "ikbo_fa/export/api.h.in",
    .dispatch = "ikbo_fa/export/dispatch.c.in",
    .call = "ikbo_fa/export/call.c.in",
    .tuned_keys = fa_tuned_keys,
    .ntuned_keys = (int)(sizeof fa_tuned_keys / sizeof fa_tuned_keys[0]),
    .what = "IKBO flash-attention kernels",
    .readme_fallback = "the unfused attention on gathered K/V (stage 0) or the gathered form of kevo's best (baseline (b))",
    .pad_column = "padded copy",
    .torch = "ikbo_fa/export/torch.cpp.in",
    .torch_usage = "ikbo_fa/export/torch_usage.md.in",
    .pad_yes = "yes",
};

/* The same-run peers: stage 0 (gpu.c) with and without its gather, and
 * baseline (b), the run's best kevo FA kernel on K/V gathered per candidate
 * (the shape nocodesign_shape gives) plus the gather's time, which `kevo
 * tune` measures after the search (README.md). */
static const kevo_peer_desc fa_peers[] = {
    {.name = "stage0",
     .label = "stage 0 (K/V gathered beforehand; cuBLAS QK^T, softmax, cuBLAS PV)",
     .verdict = "the stage-0 cuBLAS baseline",
     .flags = KEVO_PEER_BASELINE},
    {.name = "stage0_gather", .label = "stage 0 with the gather of K/V in each call", .verdict = "stage 0 with its gather"},
    {.name = "nocodesign",
     .label = "(b) the best kevo FA kernel on K/V gathered per candidate, plus the gather",
     .verdict = "baseline (b), the best kevo FA kernel on gathered K/V with the gather",
     .flags = KEVO_PEER_AFTER,
     .bcast_with = "stage0_gather",
     .bcast_without = "stage0"},
};

const kevo_op kevo_op_ikbo_fa = {
    .name = "ikbo_fa",
    .summary = "IKBO flash attention: out[c] = softmax(Q[c] K[u]^T * scale) V[u], u = cand_to_user[c]",
    .default_shape = FA_DEFAULT_SHAPE,
    .symbols = fa_symbols,
    .nsymbols = (int)(sizeof fa_symbols / sizeof fa_symbols[0]),
    .parse_shape = fa_parse_shape,
    .shape_str = fa_shape_str,
    .flops = fa_flops,
    .bytes = fa_bytes,
    .tolerance = fa_tolerance,
    .abi_header = "ikbo_fa/abi.h",
    .ref_source = "ikbo_fa/ref.cu",
    .ref_name = "ikbo_fa_ref.cu",
    .tensors = fa_tensors,
    .ntensors = (int)(sizeof fa_tensors / sizeof fa_tensors[0]),
    .peers = fa_peers,
    .npeers = (int)(sizeof fa_peers / sizeof fa_peers[0]),
    .nocodesign_shape = fa_nocodesign_shape,
    .export_desc = &fa_export,
    .gpu = &kevo_ikbo_fa_gpu,
};

/* ---- host input sets ---- */

void kevo_fa_host_release(kevo_fa_host *h)
{
    if (!h)
        return;
    free(h->q);
    free(h->k);
    free(h->v);
    free(h->map);
    memset(h, 0, sizeof *h);
}

static kevo_status fa_shape_value(const kevo_syms *shape, const char *name, int64_t *out, kevo_err *err)
{
    if (!kevo_syms_get(shape, name, out))
        return kevo_err_set(err, KEVO_ERR_ARG, "shape lacks symbol '%s'", name);
    if (*out < 1 || *out > KEVO_SHAPE_VALUE_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "bad value '%" PRId64 "' for shape symbol '%s'", *out, name);
    return KEVO_OK;
}

kevo_status kevo_fa_host_init(kevo_fa_host *h, const kevo_syms *shape, kevo_dtype dt, kevo_map_kind map,
                              uint64_t seed, kevo_err *err)
{
    if (!h || !shape)
        return kevo_err_set(err, KEVO_ERR_ARG, "no host set or shape for 'ikbo_fa'");
    memset(h, 0, sizeof *h);
    if (dt != KEVO_DTYPE_F16 && dt != KEVO_DTYPE_BF16)
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown dtype '%d'", (int)dt);
    if (map != KEVO_MAP_SORTED && map != KEVO_MAP_UNEVEN && map != KEVO_MAP_SHUFFLED)
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown map kind '%d'", (int)map);

    int64_t Bc, H, Sq, D, Skv, U, ratio;
    const char *const names[6] = {"Bc", "H", "Sq", "D", "Skv", "U"};
    int64_t *const dims[6] = {&Bc, &H, &Sq, &D, &Skv, &U};
    for (int i = 0; i < 6; i++) {
        kevo_status st = fa_shape_value(shape, names[i], dims[i], err);
        if (st != KEVO_OK)
            return st;
    }
    if (!kevo_syms_get(shape, "ratio", &ratio) || ratio < 1)
        ratio = (Bc + U - 1) / U;

    /* element counts, capped so that count * 2 bytes fits in size_t */
    const uint64_t cap = (uint64_t)(SIZE_MAX / sizeof(uint16_t));
    const int64_t fq[4] = {Bc, Sq, H, D}, fkv[4] = {U, Skv, H, D};
    struct {
        const char *name;
        uint64_t n;
        uint16_t **dst;
    } t[3] = {
        {"q", kevo_shape_count(fq, 4, cap), &h->q},
        {"k", kevo_shape_count(fkv, 4, cap), &h->k},
        {"v", kevo_shape_count(fkv, 4, cap), &h->v},
    };
    for (int i = 0; i < 3; i++) /* refuse before allocating anything */
        if (t[i].n > cap)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "tensor '%s' too large to allocate", t[i].name);
    for (int i = 0; i < 3; i++) {
        if (!(*t[i].dst = malloc((size_t)t[i].n * sizeof(uint16_t)))) {
            kevo_fa_host_release(h);
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for tensor '%s' (%" PRIu64 " elements)", t[i].name,
                                t[i].n);
        }
    }
    if (!(h->map = malloc((size_t)Bc * sizeof(int32_t)))) { /* Bc <= 2^31-1: no overflow */
        kevo_fa_host_release(h);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for tensor 'cand_to_user' (%" PRId64 " elements)", Bc);
    }

    h->shape = *shape;
    h->dtype = dt;
    h->Bc = Bc;
    h->H = H;
    h->Sq = Sq;
    h->D = D;
    h->Skv = Skv;
    h->U = U;
    for (uint32_t i = 0; i < 3; i++)
        for (uint64_t j = 0; j < t[i].n; j++)
            kevo_gen_value(seed, i, j, dt, &(*t[i].dst)[j]);
    kevo_make_map(map, Bc, U, ratio, seed, h->map);
    return KEVO_OK;
}

void kevo_fa_reference_cpu(const kevo_fa_host *h, double scale, double *out)
{
    if (!h || !out)
        return;
    const int64_t Bc = h->Bc, H = h->H, Sq = h->Sq, D = h->D, Skv = h->Skv;
    const int64_t row = H * D; /* elements between consecutive rows of q, k, v, out */
    double *s = malloc((size_t)Skv * sizeof *s);
    double *qf = malloc((size_t)D * sizeof *qf);
    if (!s || !qf) {
        free(s);
        free(qf);
        for (int64_t i = 0; i < Bc * Sq * row; i++)
            out[i] = NAN;
        return;
    }
    for (int64_t c = 0; c < Bc; c++) {
        const int64_t u = h->map[c];
        for (int64_t hh = 0; hh < H; hh++)
            for (int64_t i = 0; i < Sq; i++) {
                const uint16_t *q = h->q + (c * Sq + i) * row + hh * D;
                for (int64_t d = 0; d < D; d++)
                    qf[d] = kevo_bits_to_float(q[d], h->dtype);
                double m = -INFINITY;
                for (int64_t j = 0; j < Skv; j++) {
                    const uint16_t *k = h->k + (u * Skv + j) * row + hh * D;
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; d++)
                        dot += qf[d] * (double)kevo_bits_to_float(k[d], h->dtype);
                    s[j] = dot * scale;
                    if (s[j] > m)
                        m = s[j];
                }
                double l = 0.0;
                for (int64_t j = 0; j < Skv; j++) {
                    s[j] = exp(s[j] - m);
                    l += s[j];
                }
                double *o = out + (c * Sq + i) * row + hh * D;
                for (int64_t d = 0; d < D; d++)
                    o[d] = 0.0;
                for (int64_t j = 0; j < Skv; j++) {
                    const uint16_t *v = h->v + (u * Skv + j) * row + hh * D;
                    double p = s[j] / l;
                    for (int64_t d = 0; d < D; d++)
                        o[d] += p * (double)kevo_bits_to_float(v[d], h->dtype);
                }
            }
    }
    free(s);
    free(qf);
}
