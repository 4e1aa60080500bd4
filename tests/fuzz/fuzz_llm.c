/* fuzz_llm.c — libFuzzer target for the LLM half's untrusted-text readers:
 * the input is an LLM reply (parsed against a fixed parent), device source
 * (the static check, entry finder, the edit grammar built from it), a plan
 * (merged into the parent's space), a parent's source compacted for a prompt
 * and knowledge query text.  Nothing may crash, leak or read out of bounds;
 * what they return must hold up: a parsed reply's space loads and its source
 * has a __global__, messages and summaries carry no control characters. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "llm/admit/check.h"
#include "llm/grammar.h"
#include "llm/prompt.h"
#include "llm/reply.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fz_in[] = {"w_user", "w_cand", "e_user", "e_cand", "cand_to_user",
                                    "tm_w_user", "tm_w_cand", "tm_e_user", "tm_e_cand"};
static const char *const fz_out[] = {"out", "tm_out"};

static const char fz_parent_src[] =
    "#define BM 64\n"
    "__device__ __forceinline__ float twice(float x) { return 2.0f * x; }\n"
    "extern \"C\" __global__ void k1(const __grid_constant__ kevo_lce_args a)\n"
    "{\n"
    "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < a.M)\n"
    "        static_cast<float *>(a.workspace)[i] = twice(1.0f);\n"
    "}\n";

static const char fz_parent_space[] =
    "{\"family\":\"llm_fz\",\"op\":\"ikbo_lce\",\"source\":\"x.cu\",\"archs\":[\"sm_90a\"],"
    "\"params\":[{\"name\":\"BM\",\"values\":[64],\"default\":64}],"
    "\"let\":[[\"threads\",\"128\"]],"
    "\"launches\":[{\"entry\":\"k1\",\"grid\":[\"cdiv(M, BM)\",1,1],\"block\":[\"threads\",1,1],\"smem\":0}]}";

/* No control character but tab and newline, and NUL-terminated within n. */
static void fz_clean(const char *s, size_t n, int newlines)
{
    size_t len = strnlen(s, n);
    if (len == n)
        abort();
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && !(newlines && (c == '\n' || c == '\t'))) || c == 0x7f)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    char why[512];
    why[0] = '\0';
    if (!kevo_llm_check_source(text, fz_in, 9, fz_out, 2, why, sizeof why))
        fz_clean(why, sizeof why, 0);
    kevo_llm_entry ent[4];
    int ne = kevo_llm_find_entries(text, ent, 4);
    for (int i = 0; i < ne && i < 4; i++)
        fz_clean(ent[i].name, sizeof ent[i].name, 0);

    kevo_err err;
    kevo_err_clear(&err);
    char *gbnf = NULL;
    int nlines = 0;
    if (kevo_llm_edit_grammar(text, text, 2, &gbnf, &nlines, &err) != KEVO_OK ||
        nlines > KEVO_GRAMMAR_MAX_LINES || (!gbnf) != (nlines == 0))
        abort();
    if (gbnf) /* its literals escaped: printable ASCII, lines ending each rule or alternative */
        fz_clean(gbnf, strlen(gbnf) + 1, 1);
    free(gbnf);

    kevo_llm_parsed p;
    kevo_status st = kevo_llm_parse_reply(text, fz_parent_src, fz_parent_space, &p, &err);
    if (st == KEVO_OK) {
        if (!p.summary || strlen(p.summary) > KEVO_LLM_SUMMARY_MAX)
            abort();
        fz_clean(p.summary, KEVO_LLM_SUMMARY_MAX + 1, 0);
        if (!p.source || !p.space || kevo_llm_find_entries(p.source, NULL, 0) < 1)
            abort();
        kevo_space *sp = NULL;
        if (kevo_llm_space_load(p.space, &sp, &err) != KEVO_OK)
            abort();
        kevo_space_free(sp);
        kevo_llm_check_source(p.source, fz_in, 9, fz_out, 2, why, sizeof why);
    } else if (p.source || p.space || p.summary) {
        abort(); /* a failure leaves nothing to free */
    }
    kevo_llm_parsed_free(&p);

    /* an LLM candidate is a parent too: its source compacted (headers,
     * guards, #if groups, static_asserts); what a whole-source reply gets
     * put back is whole header units of it */
    char *shown = NULL, *base = NULL;
    if (kevo_prompt_compact(text, "BM=64 A=2", &shown, &base, &err) != KEVO_OK || !shown || !base ||
        strlen(shown) > 2 * strlen(text) + 4096)
        abort();
    free(shown);
    free(base);
    char *back = kevo_prompt_headers_for(text, "k1(); twice(2.0f);");
    free(back);

    char *merged = NULL;
    if (kevo_llm_merge_plan(fz_parent_space, text, &merged, &err) == KEVO_OK) {
        kevo_space *sp = NULL;
        if (kevo_llm_space_load(merged, &sp, &err) == KEVO_OK)
            kevo_space_free(sp);
        free(merged);
    }
    char q[2048];
    kevo_knowledge_fts_query(text, q, sizeof q);
    for (const char *c = q; *c; c++)
        if (!(*c == '"' || *c == ' ' || *c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == 'O' || *c == 'R'))
            abort();
    free(text);
    return 0;
}
