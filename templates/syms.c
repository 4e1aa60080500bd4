/* syms.c — named int64 values that expressions read. */
#include <string.h>

#include "templates/expr.h"

void kevo_syms_init(kevo_syms *s)
{
    s->n = 0;
}

kevo_status kevo_syms_set(kevo_syms *s, const char *name, int64_t value)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len >= KEVO_SYM_NAME_MAX)
        return KEVO_ERR_ARG;
    for (int i = 0; i < s->n; i++) {
        if (strcmp(s->name[i], name) == 0) {
            s->value[i] = value;
            return KEVO_OK;
        }
    }
    if (s->n >= KEVO_SYMS_MAX)
        return KEVO_ERR_NOMEM;
    memcpy(s->name[s->n], name, len + 1);
    s->value[s->n++] = value;
    return KEVO_OK;
}

bool kevo_syms_get(const kevo_syms *s, const char *name, int64_t *value)
{
    for (int i = 0; i < s->n; i++) {
        if (strcmp(s->name[i], name) == 0) {
            if (value)
                *value = s->value[i];
            return true;
        }
    }
    return false;
}
