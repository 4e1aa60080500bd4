/* gen.c — the generator contract's shared parts: candidate sources and LLM
 * candidates' identities and stored spaces. */
#include "search/gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

void kevo_gen_source_init(kevo_gen_source *g)
{
    memset(g, 0, sizeof *g);
    kevo_generation_row_init(&g->gen);
}

void kevo_gen_source_release(kevo_gen_source *g)
{
    if (g->owns_space)
        kevo_space_free(g->space);
    g->space = NULL;
    g->owns_space = false;
    kevo_generation_row_release(&g->gen);
}

void kevo_gen_llm_family(const char *space_json, const char *source, char out[17])
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

kevo_status kevo_gen_llm_space(const kevo_generation_row *g, const char *family, kevo_space **out, kevo_err *err)
{
    *out = NULL;
    if (!g->space || !g->source)
        return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld: its LLM reply gave no source",
                            (long long)g->candidate_id);
    char want[17];
    kevo_gen_llm_family(g->space, g->source, want);
    if (strcmp(want, family) != 0) /* the DB is untrusted: the name must be the content's */
        return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld: its stored source and plan do not hash to its family",
                            (long long)g->candidate_id);
    kevo_status st = kevo_space_load_inline(g->space, g->source, family, out, err);
    if (!st) /* the space text says "llm": its name is its hash */
        snprintf((*out)->family, sizeof (*out)->family, "%s", family);
    return st;
}
