/* admit.h — the admission of LLM text: the gate every LLM candidate passes,
 * fresh from a reply (search/gen_llm.c) or read back from a DB (tune
 * --resume, verify, export, a warm start), before anything of it is
 * compiled, loaded or exported.  It names the candidate by the hash of its
 * content, runs the static check (llm/admit/check.h) and loads its plan as
 * a one-point space.  It needs no part of the search: export calls it
 * without search/.  Why it is built this way and what it does not catch:
 * llm/admit/README.md. */
#ifndef KEVO_LLM_ADMIT_H
#define KEVO_LLM_ADMIT_H

#include <stddef.h>

#include "db/store.h"
#include "evaluator/eval.h"
#include "core/op.h"
#include "templates/space.h"

/* An LLM candidate's family name: "llm_" + the first 12 hex digits of the
 * SHA-256 of its one-point space text (whose "family" is "llm") and source. */
void kevo_llm_family(const char *space_json, const char *source, char out[17]);

/* The admission of LLM text, the same for a fresh reply and for one a DB
 * holds: the static check of the source (llm/admit/check.h, against the op's
 * input and output fields, inputs[ninputs] and outputs[noutputs]), then its
 * family computed (kevo_llm_family) into family[17], the one-point
 * space loaded and checked (kevo_space_load_inline: params of one value,
 * launches, lets, tensor maps; the space's op must be op), and its "archs"
 * must list arch (NULL: not checked).  Returns KEVO_FAIL_NONE with *out
 * (named family; caller frees with kevo_space_free), or KEVO_FAIL_REJECTED
 * (the static check) or KEVO_FAIL_PARSE_ERROR (no source, the plan, the
 * arch) with the reason in why[n] and *out NULL. */
kevo_fail kevo_llm_admit_text(const char *space_json, const char *source, const char *const *inputs, int ninputs,
                               const char *const *outputs, int noutputs, const char *op,
                                  const char *arch, char family[17], kevo_space **out, char *why, size_t n);

/* Admit again an LLM candidate a DB holds, before anything of it is
 * compiled, loaded or exported (tune --resume, verify, export, warm start):
 * its generation row's space and source must hash to the candidate's
 * family (the DB is untrusted: the name must be the content's), then pass
 * kevo_llm_admit_text for the op (its ABI fields) and arch (NULL: any).
 * *out: the candidate's one-point space, named family (caller frees).
 * Errors: KEVO_ERR_PARSE naming the candidate and why it is refused (the
 * static check's rule and line, the plan, the hash), KEVO_ERR_NOMEM. */
kevo_status kevo_llm_admit(const kevo_generation_row *g, const char *family, const kevo_op *op,
                               const char *arch, kevo_space **out, kevo_err *err);

#endif /* KEVO_LLM_ADMIT_H */
