/* op.c — the table of operator specs, dtype and map names, and the 16-bit
 * storage conversions (fp16, bf16) every op shares. */
#include "kernels/op.h"

#include <string.h>

/* Defined in kernels/ikbo_lce/spec.c. */
extern const kevo_op kevo_op_ikbo_lce;

static const kevo_op *const op_table[] = {
    &kevo_op_ikbo_lce,
};

const kevo_op *kevo_op_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0]; i++)
        if (strcmp(op_table[i]->name, name) == 0)
            return op_table[i];
    return NULL;
}

const kevo_op *const *kevo_op_list(int *n)
{
    if (n)
        *n = (int)(sizeof op_table / sizeof op_table[0]);
    return op_table;
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
