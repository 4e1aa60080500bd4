/* ops.c — the table of ops.  Adding an op is its folder kernels/<op>/, its
 * template families and one row here. */
#include <stdio.h>
#include <string.h>

#include "kernels/ikbo_fa/ikbo_fa.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"

static const kevo_op *const op_table[] = {
    &kevo_op_ikbo_lce,
    &kevo_op_ikbo_fa,
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

void kevo_op_names(char *out, size_t n)
{
    if (!out || n == 0)
        return;
    out[0] = '\0';
    size_t len = 0;
    for (size_t i = 0; i < sizeof op_table / sizeof op_table[0] && len < n; i++) {
        int w = snprintf(out + len, n - len, "%s%s", i ? ", " : "", op_table[i]->name);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}
