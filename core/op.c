/* op.c — what every op shares: dtype and map names, the input generator
 * and cand_to_user maps, tensor descriptions evaluated at a shape, and the
 * 16-bit storage conversions (fp16, bf16).  The table of ops: ops.c. */
#include "core/op.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* ---- the table of ops (kernels/ops.c) ---- */

const kevo_op *kevo_op_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < kevo_op_table_len; i++)
        if (strcmp(kevo_op_table[i]->name, name) == 0)
            return kevo_op_table[i];
    return NULL;
}

const kevo_op *const *kevo_op_list(int *n)
{
    if (n)
        *n = kevo_op_table_len;
    return kevo_op_table;
}

void kevo_op_names(char *out, size_t n)
{
    if (!out || n == 0)
        return;
    out[0] = '\0';
    size_t len = 0;
    for (int i = 0; i < kevo_op_table_len && len < n; i++) {
        int w = snprintf(out + len, n - len, "%s%s", i ? ", " : "", kevo_op_table[i]->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* ---- the reference module ---- */

kevo_status kevo_op_ref_render(const kevo_op *op, const char *kernels_dir, kevo_dtype dt, const char *abi,
                               kv_buf *out, kevo_err *err)
{
    static const char common[] = "ref.cuh";
    /* the op's vendor kernels (export launches them too) after its own */
    const char *vendor = op->export_desc ? op->export_desc->vendor_source : NULL;
    const char *rel[3] = {common, op->ref_source, vendor};
    char vendor_line[256];
    snprintf(vendor_line, sizeof vendor_line, "kernels/%s", vendor ? vendor : "");
    const char *line_name[3] = {"kernels/ref.cuh", op->ref_name, vendor_line};
    char *text[3] = {NULL, NULL, NULL};
    int nfiles = vendor ? 3 : 2;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < nfiles && !st; i++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", kernels_dir, rel[i]) >= sizeof path)
            st = kevo_err_set(err, KEVO_ERR_IO, "the kernels folder's path is too long: %.200s", kernels_dir);
        else
            st = kv_read_file(path, &text[i], NULL, err);
    }
    if (!st && kv_buf_printf(out, "#define DTYPE_BF16 %d\n%s\n#line 1 \"%s\"\n%s\n#line 1 \"%s\"\n%s",
                             dt == KEVO_DTYPE_BF16, abi, line_name[0], text[0], line_name[1], text[1]))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st && vendor && kv_buf_printf(out, "\n#line 1 \"%s\"\n%s", line_name[2], text[2]))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 3; i++)
        free(text[i]);
    return st;
}

/* ---- names ---- */

const char *kevo_dtype_name(kevo_dtype d)
{
    switch (d) {
    case KEVO_DTYPE_F16: return "fp16";
    case KEVO_DTYPE_BF16: return "bf16";
    }
    return "unknown";
}

bool kevo_dtype_parse(const char *s, kevo_dtype *out)
{
    static const struct {
        const char *name;
        kevo_dtype dtype;
    } names[] = {
        {"fp16", KEVO_DTYPE_F16},  {"f16", KEVO_DTYPE_F16},       {"half", KEVO_DTYPE_F16},
        {"float16", KEVO_DTYPE_F16}, {"bf16", KEVO_DTYPE_BF16}, {"bfloat16", KEVO_DTYPE_BF16},
    };
    if (!s)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(s, names[i].name) == 0) {
            if (out)
                *out = names[i].dtype;
            return true;
        }
    }
    return false;
}

const char *kevo_map_name(kevo_map_kind k)
{
    switch (k) {
    case KEVO_MAP_SORTED: return "sorted";
    case KEVO_MAP_UNEVEN: return "uneven";
    case KEVO_MAP_SHUFFLED: return "shuffled";
    }
    return "unknown";
}

bool kevo_map_parse(const char *s, kevo_map_kind *out)
{
    static const kevo_map_kind kinds[] = {KEVO_MAP_SORTED, KEVO_MAP_UNEVEN, KEVO_MAP_SHUFFLED};
    if (!s)
        return false;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strcmp(s, kevo_map_name(kinds[i])) == 0) {
            if (out)
                *out = kinds[i];
            return true;
        }
    }
    return false;
}

/* ---- peers ---- */

static const char *const op_peer_states[] = {"unmeasured", "ok", "failed", "error"};

const char *kevo_peer_state_name(kevo_peer_state s)
{
    return (unsigned)s < sizeof op_peer_states / sizeof op_peer_states[0] ? op_peer_states[s] : "unmeasured";
}

bool kevo_peer_state_parse(const char *s, kevo_peer_state *out)
{
    for (unsigned i = 0; s && i < sizeof op_peer_states / sizeof op_peer_states[0]; i++)
        if (strcmp(s, op_peer_states[i]) == 0) {
            *out = (kevo_peer_state)i;
            return true;
        }
    return false;
}

void kevo_peer_set_init(kevo_peer_set *s)
{
    memset(s, 0, sizeof *s);
    for (int i = 0; i < KEVO_MAX_PEERS; i++) {
        kevo_peer_fig *f = &s->p[i];
        f->state = KEVO_PEER_UNMEASURED;
        f->median_ms = f->ci_lo_ms = f->ci_hi_ms = f->rel_err = NAN;
    }
}

int kevo_op_peer_index(const kevo_op *op, const char *name)
{
    for (int i = 0; op && name && i < op->npeers; i++)
        if (strcmp(op->peers[i].name, name) == 0)
            return i;
    return -1;
}

int kevo_op_peer_baseline(const kevo_op *op)
{
    for (int i = 0; op && i < op->npeers; i++)
        if (op->peers[i].flags & KEVO_PEER_BASELINE)
            return i;
    return -1;
}

/* ---- tensors ---- */

int kevo_op_tensor_index(const kevo_op *op, const char *name)
{
    for (int i = 0; op && name && i < op->ntensors; i++)
        if (strcmp(op->tensors[i].name, name) == 0)
            return i;
    return -1;
}

int kevo_op_tensor_names(const kevo_op *op, bool outputs, const char **names, int max)
{
    int n = 0;
    for (int i = 0; op && i < op->ntensors && n < max; i++)
        if ((op->tensors[i].role == KEVO_TENSOR_OUTPUT) == outputs) {
            names[n++] = op->tensors[i].name;
            if (op->tensors[i].tmap && op->tensors[i].tmap_field && n < max)
                names[n++] = op->tensors[i].tmap_field;
        }
    return n;
}

/* Value of expression text at shape, at least 1; what names it in messages. */
static kevo_status op_dim(const kevo_tensor_desc *t, const char *what, const char *text, const kevo_syms *shape,
                          int64_t *out, kevo_err *err)
{
    kevo_status st = text ? kevo_expr_eval_text(text, shape, out, err)
                          : kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' has no %s", t->name, what);
    if (st) {
        kevo_err_prefix(err, "tensor '%s' %s", t->name, what);
        return st;
    }
    if (*out < 1)
        return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' %s '%s' is %" PRId64 ", not positive", t->name, what, text,
                            *out);
    return KEVO_OK;
}

kevo_status kevo_tensor_shape(const kevo_tensor_desc *t, const kevo_syms *shape, int64_t dims[KEVO_TENSOR_MAX_RANK],
                              int64_t *ld, uint64_t *count, kevo_err *err)
{
    if (t->rank < 1 || t->rank > KEVO_TENSOR_MAX_RANK)
        return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' has rank %d", t->name, t->rank);
    const uint64_t limit = UINT64_C(1) << 62;
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        kevo_status st = op_dim(t, "dimension", t->dims[d], shape, &dims[d], err);
        if (st)
            return st;
        if ((uint64_t)dims[d] > limit / n)
            return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' has more than 2^62 elements", t->name);
        n *= (uint64_t)dims[d];
    }
    *ld = dims[t->rank - 1];
    if (t->padded) {
        kevo_status st = op_dim(t, "padded row stride", t->padded, shape, ld, err);
        if (st)
            return st;
        if (*ld < dims[t->rank - 1] || (uint64_t)*ld > limit / (n / (uint64_t)dims[t->rank - 1]))
            return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' padded row stride %" PRId64 " is out of range",
                                t->name, *ld);
    }
    *count = n;
    return KEVO_OK;
}

/* ---- shape text ---- */

#define OP_QUOTE_MAX 200 /* longest piece of input quoted in a message */

static int64_t op_cdiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

static bool op_is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Trim [*p, *e) of surrounding white space. */
static void op_trim(const char **p, const char **e)
{
    while (*p < *e && op_is_space(**p))
        (*p)++;
    while (*e > *p && op_is_space((*e)[-1]))
        (*e)--;
}

static int op_quote_len(const char *p, const char *e)
{
    return e - p > OP_QUOTE_MAX ? OP_QUOTE_MAX : (int)(e - p);
}

/* True when [p, e) spells key exactly (case-sensitive). */
static bool op_key_is(const char *key, const char *p, const char *e)
{
    size_t n = (size_t)(e - p);
    return strlen(key) == n && memcmp(key, p, n) == 0;
}

/* Parse one value [p, e) for key into *out (in [1, 2^31-1]). */
static kevo_status op_parse_value(const char *key, const char *p, const char *e, int64_t *out, kevo_err *err)
{
    int qn = op_quote_len(p, e);
    if (p == e)
        return kevo_err_set(err, KEVO_ERR_ARG, "empty value for shape key '%s'", key);
    const char *d = p;
    bool negative = false;
    if (*d == '+' || *d == '-')
        negative = *d++ == '-';
    if (d == e)
        return kevo_err_set(err, KEVO_ERR_ARG, "bad value '%.*s' for shape key '%s'", qn, p, key);
    bool nonzero = false;
    for (const char *c = d; c < e; c++) {
        if (*c < '0' || *c > '9')
            return kevo_err_set(err, KEVO_ERR_ARG, "bad value '%.*s' for shape key '%s'", qn, p, key);
        nonzero |= *c != '0';
    }
    if (negative || !nonzero)
        return kevo_err_set(err, KEVO_ERR_ARG, "value '%.*s' for shape key '%s' must be positive", qn, p, key);
    /* all digits from here: a failed or long parse is out of range */
    char buf[32];
    int64_t v = 0;
    bool ok = (size_t)(e - p) < sizeof buf;
    if (ok) {
        memcpy(buf, p, (size_t)(e - p));
        buf[e - p] = '\0';
        ok = kv_parse_i64(buf, &v);
    }
    if (!ok || v > KEVO_SHAPE_VALUE_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "value '%.*s' for shape key '%s' exceeds %" PRId64, qn, p, key,
                            KEVO_SHAPE_VALUE_MAX);
    *out = v;
    return KEVO_OK;
}

/* "(known: A, B, C)" for an unknown key's message. */
static void op_known_keys(const char *const *keys, int nkeys, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (int k = 0; k < nkeys && len < n; k++) {
        int w = snprintf(out + len, n - len, "%s%s", k ? ", " : "", keys[k]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

kevo_status kevo_shape_parse_items(const char *text, const char *const *keys, int nkeys, int64_t *val, bool *given,
                                   kevo_err *err)
{
    for (int k = 0; k < nkeys; k++)
        given[k] = false;
    if (!text)
        text = "";
    const char *end = text + strlen(text);
    const char *tp = text, *te = end;
    op_trim(&tp, &te);
    if (tp == te)
        return KEVO_OK;

    const char *p = text;
    for (;;) {
        const char *e = p;
        while (e < end && *e != ',')
            e++;
        const char *ip = p, *ie = e;
        op_trim(&ip, &ie);
        if (ip == ie)
            return kevo_err_set(err, KEVO_ERR_ARG, "empty item in shape '%.*s'", op_quote_len(text, end), text);
        const char *eq = memchr(ip, '=', (size_t)(ie - ip));
        if (!eq)
            return kevo_err_set(err, KEVO_ERR_ARG, "missing '=' in shape item '%.*s'", op_quote_len(ip, ie), ip);
        const char *kp = ip, *ke = eq, *vp = eq + 1, *ve = ie;
        op_trim(&kp, &ke);
        op_trim(&vp, &ve);
        if (kp == ke)
            return kevo_err_set(err, KEVO_ERR_ARG, "missing key in shape item '%.*s'", op_quote_len(ip, ie), ip);
        int k = 0;
        while (k < nkeys && !op_key_is(keys[k], kp, ke))
            k++;
        if (k == nkeys) {
            char known[256];
            op_known_keys(keys, nkeys, known, sizeof known);
            return kevo_err_set(err, KEVO_ERR_ARG, "unknown shape key '%.*s' (known: %s)", op_quote_len(kp, ke), kp,
                                known);
        }
        if (given[k])
            return kevo_err_set(err, KEVO_ERR_ARG, "duplicate shape key '%s'", keys[k]);
        kevo_status st = op_parse_value(keys[k], vp, ve, &val[k], err);
        if (st != KEVO_OK)
            return st;
        given[k] = true;
        if (e == end)
            return KEVO_OK;
        p = e + 1;
    }
}

kevo_status kevo_shape_users(const char *batch_key, int64_t B, bool ratio_given, int64_t ratio_value, bool u_given,
                             int64_t u_value, int64_t default_ratio, int64_t *ratio, int64_t *U, kevo_err *err)
{
    if (u_given && u_value > B)
        return kevo_err_set(err, KEVO_ERR_ARG, "value '%" PRId64 "' for shape key 'U' exceeds %s '%" PRId64 "'",
                            u_value, batch_key, B);
    /* a ratio above B is one user owning every candidate (U = 1) */
    if (u_given && ratio_given) {
        /* either derivation may have produced the pair (shape_str prints both) */
        if (u_value != op_cdiv(B, ratio_value) && ratio_value != op_cdiv(B, u_value))
            return kevo_err_set(err, KEVO_ERR_ARG,
                                "value '%" PRId64 "' for shape key 'U' does not match ratio '%" PRId64
                                "' at %s '%" PRId64 "' (expected '%" PRId64 "')",
                                u_value, ratio_value, batch_key, B, op_cdiv(B, ratio_value));
        *ratio = ratio_value;
        *U = u_value;
    } else if (u_given) {
        *U = u_value;
        *ratio = op_cdiv(B, u_value);
    } else {
        int64_t r = ratio_given ? ratio_value : default_ratio;
        if (!ratio_given && r > B) /* the default does not fit: ask for ratio or U */
            return kevo_err_set(err, KEVO_ERR_ARG,
                                "default ratio '%" PRId64 "' exceeds %s '%" PRId64 "' (give ratio or U)", r, batch_key,
                                B);
        *ratio = r;
        *U = op_cdiv(B, r);
    }
    return KEVO_OK;
}

uint64_t kevo_shape_count(const int64_t *f, int nf, uint64_t limit)
{
    uint64_t n = 1;
    for (int i = 0; i < nf; i++) {
        uint64_t x = (uint64_t)f[i];
        if (x != 0 && n > limit / x)
            return limit + 1;
        n *= x;
    }
    return n;
}

kevo_status kevo_shape_check_elems(const char *tensor, const char *dims, const int64_t *f, int nf, kevo_err *err)
{
    if (kevo_shape_count(f, nf, KEVO_SHAPE_ELEMS_MAX) <= KEVO_SHAPE_ELEMS_MAX)
        return KEVO_OK;
    return kevo_err_set(err, KEVO_ERR_ARG, "tensor '%s' [%s] has more than 2^48 elements", tensor, dims);
}

/* ---- input generation (kernels/ref.cuh implements the same arithmetic on the device) ---- */

static uint64_t op_mix64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xbf58476d1ce4e5b9ull;
    z ^= z >> 27;
    z *= 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z;
}

float kevo_gen_value(uint64_t seed, uint32_t tensor, uint64_t idx, kevo_dtype dt, uint16_t *bits)
{
    uint64_t h = op_mix64(op_mix64(seed + 0x9e3779b97f4a7c15ull * ((uint64_t)tensor + 1)) ^ idx);
    int Q = (dt == KEVO_DTYPE_F16) ? 1024 : 128;
    int k = (int)(h % (uint64_t)(2 * Q)) - Q; /* in [-Q, Q) */
    float v = (float)k / (float)Q;            /* exact in the dtype */
    if (bits)
        *bits = kevo_float_to_bits(v, dt);
    return v;
}

void kevo_make_map(kevo_map_kind kind, int64_t B, int64_t U, int64_t ratio, uint64_t seed, int32_t *map)
{
    if (!map || B < 1 || U < 1)
        return;
    if (ratio < 1)
        ratio = (B + U - 1) / U;
    uint64_t state = seed;

    if (kind == KEVO_MAP_UNEVEN) {
        /* U-1 cut points uniform in [0, B]; sorted, user u owns
         * [cut[u-1], cut[u]).  So map[b] = number of cuts <= b: count the
         * cuts per position in map itself, then take prefix sums.  Same
         * result as sorting the cuts, with no extra memory. */
        memset(map, 0, (size_t)B * sizeof *map);
        for (int64_t i = 0; i < U - 1; i++) {
            uint64_t c = kv_rand_below(&state, (uint64_t)B + 1);
            if (c < (uint64_t)B)
                map[c]++;
        }
        for (int64_t b = 1; b < B; b++)
            map[b] += map[b - 1];
        return;
    }

    for (int64_t b = 0; b < B; b++) {
        int64_t u = b / ratio;
        map[b] = (int32_t)(u < U - 1 ? u : U - 1);
    }
    if (kind == KEVO_MAP_SHUFFLED) {
        /* Fisher-Yates */
        for (int64_t i = B - 1; i > 0; i--) {
            int64_t j = (int64_t)kv_rand_below(&state, (uint64_t)i + 1);
            int32_t t = map[i];
            map[i] = map[j];
            map[j] = t;
        }
    }
}

/* ---- 16-bit storage conversions ---- */

static uint32_t op_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float op_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16, 1-5-10 bits, exponent bias 15. */
static float op_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (exp == 0x1f) /* inf, or NaN made quiet with its payload kept */
        return op_bits_f32(sign | 0x7f800000u | (mant ? 0x00400000u | (mant << 13) : 0));
    if (exp == 0) {
        if (mant == 0)
            return op_bits_f32(sign);
        /* subnormal: normalize, mant * 2^-24 */
        exp = 113; /* biased float exponent of 2^-14, one lower per shift */
        while (!(mant & 0x400u)) {
            mant <<= 1;
            exp--;
        }
        return op_bits_f32(sign | (exp << 23) | ((mant & 0x3ffu) << 13));
    }
    return op_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

static uint16_t op_float_to_half(float f)
{
    uint32_t u = op_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;

    if (a > 0x7f800000u) /* NaN: quiet, top of the payload kept */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x38800000u) {
        /* normal in fp16 (or overflowing): rebias 127 -> 15, round the 13
         * dropped bits to nearest even; a carry may bump the exponent */
        uint32_t m = a - 0x38000000u;
        m += 0xfffu + ((m >> 13) & 1u);
        m >>= 13;
        return (uint16_t)(sign | (m >= 0x7c00u ? 0x7c00u : m));
    }
    uint32_t e = a >> 23;
    if (e < 102) /* below 2^-25: rounds to zero (float subnormals included) */
        return sign;
    /* fp16 subnormal: value in units of 2^-24 is mant >> (126 - e) */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t s = 126 - e; /* 14..24 */
    uint32_t q = mant >> s;
    uint32_t rem = mant & ((1u << s) - 1);
    uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++; /* may reach 0x400, the smallest normal: still the right encoding */
    return (uint16_t)(sign | q);
}

/* bfloat16: the top 16 bits of a float32. */
static float op_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u |= 0x00400000u; /* quiet NaN */
    return op_bits_f32(u);
}

static uint16_t op_float_to_bf16(float f)
{
    uint32_t u = op_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    /* round to nearest even; overflow carries into the exponent: inf */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float kevo_bits_to_float(uint16_t bits, kevo_dtype dt)
{
    return dt == KEVO_DTYPE_BF16 ? op_bf16_to_float(bits) : op_half_to_float(bits);
}

uint16_t kevo_float_to_bits(float f, kevo_dtype dt)
{
    return dt == KEVO_DTYPE_BF16 ? op_float_to_bf16(f) : op_float_to_half(f);
}
