/* ops.c — the table of ops.  Adding an op is its folder kernels/<op>/, its
 * template families and one row here; the lookups over it are core/op.c's. */
#include "kernels/ikbo_fa/ikbo_fa.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"

const kevo_op *const kevo_op_table[] = {
    &kevo_op_ikbo_lce,
    &kevo_op_ikbo_fa,
};

const int kevo_op_table_len = (int)(sizeof kevo_op_table / sizeof kevo_op_table[0]);
