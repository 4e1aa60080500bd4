/* emit.h — the text kevo export writes into generated C, CMake and Markdown.
 *
 * Everything here is fed untrusted text: a DB's rows (params, device and
 * shape strings) and space files (names, `why` texts).  What reaches the
 * output is validated (identifiers match [A-Za-z_][A-Za-z0-9_]* of bounded
 * length) or escaped (string literals, comments, table cells), so no input
 * can add code to an exported library.  Kept apart from export.c (no DB) so
 * that tests/fuzz/fuzz_export_emit.c can drive it. */
#ifndef KEVO_EMIT_H
#define KEVO_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/op.h"
#include "templates/space.h"
#include "util/util.h"


/* Append s as a C string literal, quotes included: printable ASCII as is,
 * except \\, \" and \? (no trigraph can form); every other byte (newlines,
 * control characters, non-ASCII) as a three-digit octal escape. */
kevo_status kevo_emit_c_string(kv_buf *b, const char *s);

/* Append s for the inside of a C block comment: printable ASCII only
 * (other bytes and backslashes become spaces, so no newline and no line
 * splice), and never a comment opener or closer: a '/' after a '*' and a
 * '*' after a '/' get a space between them. */
kevo_status kevo_emit_c_comment(kv_buf *b, const char *s);

/* Append s for a Markdown table cell, as text that opens no element:
 * control characters become spaces; '|', '\\' and the punctuation that makes
 * links, images, emphasis and headings ("[]()!*_~#+-.{}") are
 * backslash-escaped; '`' becomes '\''; '<', '>' and '&' become entities. */
kevo_status kevo_emit_md_cell(kv_buf *b, const char *s);

/* Template text with @NAME@ and @NAME_UPPER@ replaced by name (which
 * kevo_export_check_name accepted) and each keys[i] by vals[i]; other '@'
 * (CMake's @VAR@) pass through.  Appended to out.  Errors: KEVO_ERR_ARG for
 * a name that is not an identifier, KEVO_ERR_NOMEM. */
kevo_status kevo_emit_fill(const char *text, const char *name, const char *const *keys, const char *const *vals,
                           int nkeys, kv_buf *out, kevo_err *err);

/* The C function "static int x_k<ki>_plan(const x_syms *s, x_plan *p)" of
 * one kernel: family sp at configuration cfg (parsed and checked by
 * kevo_config_parse_stored), its lets, requires, constraints and launch
 * plan compiled to C over op's symbols (x_syms has one field per symbol).
 * Appended to b.  Errors: KEVO_ERR_ARG (a symbol the family does not
 * define, a name that is not an identifier). */
kevo_status kevo_emit_plan(kv_buf *b, const kevo_space *sp, const kevo_op *op, const kevo_config *cfg, int ki,
                           kevo_err *err);

/* One entry of the x_kernels[] table: family, canonical params, dtype,
 * sm, cubin x_k<ki>_cubin, entries, plan x_k<ki>_plan and tensor maps (by
 * kevo_emit_tmap_index).  Appended to b.  Errors: KEVO_ERR_UNSUPPORTED (a
 * tensor map of a tensor the op cannot map). */
kevo_status kevo_emit_kernel_entry(kv_buf *b, const kevo_space *sp, const kevo_op *op, const kevo_config *cfg,
                                   int dtype, int sm, int ki, kevo_err *err);

/* The library's number for a tensor map of op's tensor `tensor`: its index
 * among the op's tensors that a plan may map (kevo_tensor_desc.tmap), in
 * order; -1 when it is none of them. */
int kevo_emit_tmap_index(const kevo_op *op, const char *tensor);

/* Those numbers and names as the library's comment lists them ("0 w_user,
 * 1 w_cand, ..."), appended to b. */
kevo_status kevo_emit_tmap_tensors(kv_buf *b, const kevo_op *op);

#endif /* KEVO_EMIT_H */
