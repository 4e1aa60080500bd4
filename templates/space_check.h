/* space_check.h — the checks space.c and space_load.c share on what a space
 * file, a stored configuration or a stored plan holds (internal to templates/). */
#ifndef KEVO_TEMPLATES_SPACE_CHECK_H
#define KEVO_TEMPLATES_SPACE_CHECK_H

#include "core/expr.h"
#include "util/util.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

/* A JSON number that is a whole number of modest size. */
static inline bool sp_is_int(const cJSON *v)
{
    return cJSON_IsNumber(v) && v->valuedouble >= -1e15 && v->valuedouble <= 1e15 &&
           v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* A C identifier shorter than n bytes. */
static inline bool sp_is_ident_n(const char *s, size_t n)
{
    return n > 0 && kv_is_ident(s, n - 1);
}

static inline bool sp_is_ident(const char *s)
{
    return sp_is_ident_n(s, KEVO_SYM_NAME_MAX);
}

/* The swizzles TMA and WGMMA have: none, 32, 64 or 128 bytes. */
static inline bool sp_swizzle_ok(int64_t v)
{
    return v == 0 || v == 32 || v == 64 || v == 128;
}

#endif
