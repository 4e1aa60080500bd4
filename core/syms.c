/* syms.c — named int64 values that expressions read. */
#include <stdint.h>
#include <string.h>

#include "core/expr.h"

_Static_assert(KEVO_SYMS_SLOTS >= 2 * KEVO_SYMS_MAX && (KEVO_SYMS_SLOTS & (KEVO_SYMS_SLOTS - 1)) == 0,
               "the hash needs a power-of-two table at most half full");
_Static_assert(KEVO_SYMS_MAX < 256, "slots hold index + 1 in a byte");

void kevo_syms_init(kevo_syms *s)
{
    s->n = 0;
    memset(s->slot, 0, sizeof s->slot);
}

uint32_t kevo_syms_hash(const char *name, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)name[i]) * 16777619u;
    return h;
}

/* The slot that holds the len bytes at name, or the empty one where they
 * would go (linear probing from hash; the table is never more than half
 * full). */
static unsigned sy_slot(const kevo_syms *s, const char *name, size_t len, uint32_t hash)
{
    unsigned i = hash & (KEVO_SYMS_SLOTS - 1);
    for (;;) {
        if (!s->slot[i])
            return i;
        const char *have = s->name[s->slot[i] - 1];
        if (len < KEVO_SYM_NAME_MAX && have[len] == '\0' && memcmp(have, name, len) == 0)
            return i;
        i = (i + 1) & (KEVO_SYMS_SLOTS - 1);
    }
}

kevo_status kevo_syms_set(kevo_syms *s, const char *name, int64_t value)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= KEVO_SYM_NAME_MAX)
        return KEVO_ERR_ARG;
    unsigned i = sy_slot(s, name, len, kevo_syms_hash(name, len));
    if (s->slot[i]) {
        s->value[s->slot[i] - 1] = value;
        return KEVO_OK;
    }
    if (s->n >= KEVO_SYMS_MAX)
        return KEVO_ERR_NOMEM;
    memcpy(s->name[s->n], name, len + 1);
    s->value[s->n++] = value;
    s->slot[i] = (unsigned char)s->n;
    return KEVO_OK;
}

bool kevo_syms_get(const kevo_syms *s, const char *name, int64_t *value)
{
    size_t len = strlen(name);
    return kevo_syms_find(s, name, len, kevo_syms_hash(name, len), value);
}

bool kevo_syms_find(const kevo_syms *s, const char *name, size_t len, uint32_t hash, int64_t *value)
{
    unsigned i = sy_slot(s, name, len, hash);
    if (!s->slot[i])
        return false;
    if (value)
        *value = s->value[s->slot[i] - 1];
    return true;
}

int kevo_syms_index(const kevo_syms *s, const char *name)
{
    size_t len = strlen(name);
    unsigned i = sy_slot(s, name, len, kevo_syms_hash(name, len));
    return s->slot[i] ? s->slot[i] - 1 : -1;
}
