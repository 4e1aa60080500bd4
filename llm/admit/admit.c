/* admit.c — the admission of LLM text (llm/admit/admit.h): a fresh reply
 * and one a DB holds pass the same gate before anything of them compiles,
 * loads or is exported. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/admit.h"

#include <stdio.h>
#include <string.h>

#include "core/op.h"
#include "llm/admit/check.h"
#include "util/util.h"

void kevo_llm_family(const char *space_json, const char *source, char out[17])
{
    /* the two texts with their lengths, so no split of one text into two collides */
    char lens[48];
    snprintf(lens, sizeof lens, "%zu:%zu:", strlen(space_json), strlen(source));
    const void *bufs[] = {lens, space_json, source};
    size_t n[] = {strlen(lens), strlen(space_json), strlen(source)};
    char hex[65];
    kv_sha256_hex(bufs, n, 3, hex);
    snprintf(out, 17, "llm_%.12s", hex);
}

kevo_fail kevo_llm_admit_text(const char *space_json, const char *source, const char *const *inputs, int ninputs,
                               const char *const *outputs, int noutputs, const char *op,
                                  const char *arch, char family[17], kevo_space **out, char *why, size_t n)
{
    *out = NULL;
    family[0] = '\0';
    if (!space_json || !source) {
        snprintf(why, n, "no source or no plan");
        return KEVO_FAIL_PARSE_ERROR;
    }
    char rule[256];
    if (!kevo_llm_check_source(source, inputs, ninputs, outputs, noutputs, rule, sizeof rule)) {
        snprintf(why, n, "%s", rule);
        return KEVO_FAIL_REJECTED;
    }
    kevo_llm_family(space_json, source, family);
    kevo_err lerr;
    kevo_err_clear(&lerr);
    kevo_space *sp = NULL;
    if (kevo_space_load_inline(space_json, source, family, &sp, &lerr)) {
        snprintf(why, n, "plan: %.500s", lerr.msg);
        return KEVO_FAIL_PARSE_ERROR;
    }
    snprintf(sp->family, sizeof sp->family, "%s", family); /* the space text says "llm": its name is its hash */
    if (op && strcmp(sp->op, op) != 0) {
        snprintf(why, n, "plan: \"op\" is not %s", op);
        kevo_space_free(sp);
        return KEVO_FAIL_PARSE_ERROR;
    }
    if (arch && !kevo_space_has_arch(sp, arch)) {
        snprintf(why, n, "plan: \"archs\" does not list %s", arch);
        kevo_space_free(sp);
        return KEVO_FAIL_PARSE_ERROR;
    }
    *out = sp;
    return KEVO_FAIL_NONE;
}

kevo_status kevo_llm_admit(const kevo_generation_row *g, const char *family, const kevo_op *op,
                               const char *arch, kevo_space **out, kevo_err *err)
{
    *out = NULL;
    /* a family is printed only when it is one kevo could have made */
    const char *fam = family && strlen(family) == 16 && strncmp(family, "llm_", 4) == 0 && kv_is_ident(family, 16)
                          ? family
                          : "(not an LLM family)";
    if (!g->space || !g->source)
        return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld (%s): its LLM reply gave no source",
                            (long long)g->candidate_id, fam);
    char want[17];
    kevo_llm_family(g->space, g->source, want);
    if (!family || strcmp(want, family) != 0) /* the DB is untrusted: the name must be the content's */
        return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld: its stored source and plan do not hash to its "
                            "family", (long long)g->candidate_id);
    const char *inputs[KEVO_OP_MAX_FIELDS], *outputs[KEVO_OP_MAX_FIELDS];
    int nin = op ? kevo_op_tensor_names(op, false, inputs, KEVO_OP_MAX_FIELDS) : 0;
    int nout = op ? kevo_op_tensor_names(op, true, outputs, KEVO_OP_MAX_FIELDS) : 0;
    char why[600], got[17];
    kevo_fail f = kevo_llm_admit_text(g->space, g->source, inputs, nin, outputs, nout, op ? op->name : NULL,
                                          arch, got, out, why, sizeof why);
    if (f == KEVO_FAIL_NONE)
        return KEVO_OK;
    kv_term_clean(why);
    return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld (%s) is refused as a fresh reply would be (%s): %s",
                        (long long)g->candidate_id, fam, kevo_fail_name(f), why);
}

