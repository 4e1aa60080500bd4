/* gen_llm.c — the LLM generator: KernelEvolve's universal operator.  A
 * parent node (template or LLM), its measurements and failure, its earlier
 * LLM children and knowledge retrieved for its bottleneck become one prompt
 * (llm/prompt.c); the call runs in a worker process (llm/client.c) while
 * the search compiles and times; the reply is parsed (llm/reply.c), checked
 * (llm/check.c) and becomes a one-point space with its own source. */
#include "search/gen.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/report.h"
#include "llm/check.h"
#include "llm/client.h"
#include "llm/prompt.h"
#include "llm/reply.h"
#include "util/util.h"

struct kevo_llm_gen {
    kevo_llm_gen_opts o;
    char *prompts_dir;    /* o.prompts_dir, owned */
    kevo_llm_config cfg;
    kevo_knowledge *kb;
    kevo_llm_call *call;  /* in flight, or NULL */
    /* the call in flight: what the generation row keeps */
    kv_buf system, user;
    char query[256];
    char *parent_source;  /* the parent's device source (what SEARCH/REPLACE edits) */
    char *parent_space;   /* its one-point space text */
    int64_t seed_sent;
};

kevo_status kevo_llm_gen_open(const kevo_llm_gen_opts *o, kevo_llm_gen **out, kevo_err *err)
{
    *out = NULL;
    kevo_llm_gen *g = calloc(1, sizeof *g);
    if (!g)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    g->o = *o;
    g->prompts_dir = kv_strdup(o->prompts_dir ? o->prompts_dir : "prompts");
    g->o.prompts_dir = g->prompts_dir;
    kv_buf_init(&g->system);
    kv_buf_init(&g->user);
    kevo_llm_config_init(&g->cfg);
    g->cfg.url = o->url;
    g->cfg.model = o->model;
    g->cfg.temperature = isnan(o->temperature) ? -1.0 : o->temperature;
    g->cfg.seed = -1;
    g->cfg.max_tokens = o->max_tokens;
    if (o->timeout_s > 0)
        g->cfg.total_timeout_s = o->timeout_s;
    g->cfg.max_retries = o->retries;
    kevo_status st = g->prompts_dir ? kevo_llm_config_check(&g->cfg, err)
                                    : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st)
        st = kevo_knowledge_open(g->prompts_dir, &g->kb, err);
    if (st) {
        kevo_llm_gen_close(g);
        return st;
    }
    *out = g;
    return KEVO_OK;
}

kevo_status kevo_llm_gen_check_url(const char *url, kevo_err *err)
{
    return kevo_llm_url_check(url, err);
}

kevo_status kevo_llm_gen_check_prompts(const char *prompts_dir, const char *op, kevo_err *err)
{
    return kevo_prompt_check_dir(prompts_dir, op, err);
}

static void lg_forget(kevo_llm_gen *g)
{
    kv_buf_release(&g->system);
    kv_buf_release(&g->user);
    free(g->parent_source);
    free(g->parent_space);
    g->parent_source = g->parent_space = NULL;
    g->query[0] = '\0';
}

void kevo_llm_gen_close(kevo_llm_gen *g)
{
    if (!g)
        return;
    kevo_llm_gen_cancel(g);
    kevo_knowledge_close(g->kb);
    free(g->prompts_dir);
    free(g);
}

void kevo_llm_gen_cancel(kevo_llm_gen *g)
{
    if (g && g->call) {
        kevo_llm_cancel(g->call);
        g->call = NULL;
    }
    if (g)
        lg_forget(g);
}

bool kevo_llm_gen_busy(const kevo_llm_gen *g)
{
    return g && g->call;
}

bool kevo_llm_gen_ready(kevo_llm_gen *g)
{
    return g && g->call && kevo_llm_poll(g->call);
}

/* A candidate row as the prompt shows it. */
static void lg_node(const kevo_cand_row *r, kevo_llm_node *n)
{
    memset(n, 0, sizeof *n);
    n->family = r->family;
    n->params = r->params;
    n->status = r->status;
    n->fail = r->fail[0] ? r->fail : NULL;
    n->fail_msg = r->fail_msg;
    n->median_ms = r->median_ms;
    n->tflops = r->tflops;
    n->roofline = r->roofline;
    n->speedup = r->speedup;
    n->regs = r->regs;
    n->spill_bytes = r->spill_bytes;
    n->smem_bytes = r->smem_static >= 0 && r->smem_dynamic >= 0 ? r->smem_static + r->smem_dynamic : -1;
    n->generator = kevo_report_generator(r->family);
}

kevo_status kevo_llm_gen_start(kevo_llm_gen *g, const kevo_gen_parent *parent, const kevo_cand_row *siblings,
                               int nsib, double best_speedup, int64_t k, kevo_err *err)
{
    if (g->call)
        return kevo_err_set(err, KEVO_ERR_BUSY, "an LLM call is already in flight");
    lg_forget(g);
    /* the parent's source and one-point space: an LLM parent's are its own,
     * a template parent's are its family's at its configuration */
    kv_buf sp;
    kv_buf_init(&sp);
    kevo_status st = KEVO_OK;
    if (strcmp(parent->generator, "llm") == 0) {
        st = kv_buf_puts(&sp, parent->space->json ? parent->space->json : "");
    } else {
        st = kevo_space_point_json(parent->space, &parent->cfg, "llm", &sp, err);
    }
    g->parent_space = kv_buf_take(&sp);
    g->parent_source = kv_strdup(parent->space->source ? parent->space->source : "");
    if (!st && (!g->parent_space || !g->parent_source))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (st) {
        lg_forget(g);
        return st;
    }
    char params[512];
    kevo_config_str(parent->space, &parent->cfg, params, sizeof params);
    kevo_llm_node pn, *sib = nsib > 0 ? calloc((size_t)nsib, sizeof *sib) : NULL;
    lg_node(parent->row, &pn);
    pn.generator = parent->generator;
    pn.params = params;
    pn.source = g->parent_source;
    pn.space = g->parent_space;
    for (int i = 0; sib && i < nsib; i++)
        lg_node(&siblings[i], &sib[i]);
    kevo_prompt_in in = {.op = g->o.op, .shape = g->o.shape, .dtype = g->o.dtype, .arch = g->o.arch,
                         .abi_header = g->o.abi_header, .parent = &pn, .siblings = sib, .nsiblings = sib ? nsib : 0,
                         .best_speedup = best_speedup,
                         .max_chars = g->o.prompt_chars > 0 ? (size_t)g->o.prompt_chars : 96 * 1024};
    st = kevo_prompt_build(g->o.prompts_dir, g->kb, &in, &g->system, &g->user, g->query, sizeof g->query, err);
    free(sib);
    /* the seed: the run's, moved on by the call's number, so two calls differ */
    g->seed_sent = g->o.seed >= 0 ? g->o.seed + k : -1;
    g->cfg.seed = g->seed_sent;
    if (!st)
        st = kevo_llm_start(&g->cfg, g->system.data, g->user.data, &g->call, err);
    if (st)
        lg_forget(g);
    return st;
}

/* The reply's one-point space as stored: its "family" is "llm" (the name
 * is the hash of this text and the source), printed by cJSON. */
static char *lg_canonical_space(const char *text)
{
    cJSON *root = cJSON_Parse(text);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(root, "family");
    char *out = cJSON_AddStringToObject(root, "family", "llm") ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return out;
}

kevo_status kevo_llm_gen_finish(kevo_llm_gen *g, kevo_gen_source *out, kevo_err *err)
{
    kevo_gen_source_init(out);
    if (!g->call)
        return kevo_err_set(err, KEVO_ERR_ARG, "no LLM call in flight");
    kevo_llm_reply r;
    kevo_llm_reply_init(&r);
    kevo_status st = kevo_llm_finish(g->call, &r, err);
    g->call = NULL;
    if (st) {
        kevo_llm_reply_release(&r);
        lg_forget(g);
        return st;
    }
    /* the call as it went, whatever comes of it */
    kevo_generation_row *gr = &out->gen;
    snprintf(gr->generator, sizeof gr->generator, "llm");
    snprintf(gr->model, sizeof gr->model, "%s", r.model ? r.model : g->o.model ? g->o.model : "");
    gr->system_prompt = kv_buf_take(&g->system);
    gr->prompt = kv_buf_take(&g->user);
    gr->reply = r.content ? kv_strdup(r.content) : NULL;
    gr->tokens_in = r.tokens_in;
    gr->tokens_out = r.tokens_out;
    gr->latency_s = r.latency_s;
    gr->seed = g->seed_sent;
    gr->temperature = g->o.temperature;
    snprintf(gr->finish_reason, sizeof gr->finish_reason, "%s", r.finish_reason ? r.finish_reason : "");
    gr->http_status = r.http_status;
    gr->attempts = r.attempts;
    snprintf(gr->query, sizeof gr->query, "%s", g->query);
    if (!r.ok) {
        out->fail = KEVO_FAIL_LLM_ERROR;
        out->unreachable = r.unreachable;
        if (r.truncated)
            snprintf(out->why, sizeof out->why, "truncated reply (finish_reason: length, %lld tokens): raise "
                     "--llm-max-tokens", (long long)r.tokens_out);
        else
            snprintf(out->why, sizeof out->why, "%.500s", r.error[0] ? r.error : "no reply");
        gr->error = kv_strdup(out->why);
        kevo_llm_reply_release(&r);
        lg_forget(g);
        return KEVO_OK;
    }
    kevo_llm_parsed p;
    kevo_err perr;
    kevo_err_clear(&perr);
    kevo_status pst = kevo_llm_parse_reply(r.content, g->parent_source, g->parent_space, &p, &perr);
    if (pst == KEVO_ERR_PARSE && strstr(perr.msg, "SEARCH block") && strstr(perr.msg, " matches ")) {
        /* edits made against the source as a long prompt shows it (without
         * comments): they apply to that view, a valid source of its own */
        char *view = kevo_prompt_source_view(g->parent_source);
        kevo_err verr;
        kevo_err_clear(&verr);
        if (view && strcmp(view, g->parent_source) != 0 &&
            kevo_llm_parse_reply(r.content, view, g->parent_space, &p, &verr) == KEVO_OK)
            pst = KEVO_OK;
        free(view);
    }
    if (pst) {
        out->fail = KEVO_FAIL_PARSE_ERROR;
        snprintf(out->why, sizeof out->why, "%.500s", perr.msg);
    } else {
        char *space = lg_canonical_space(p.space);
        gr->source = kv_strdup(p.source);
        gr->space = space;
        if (!space || !gr->source) {
            out->fail = KEVO_FAIL_PARSE_ERROR;
            snprintf(out->why, sizeof out->why, "the plan is not a JSON object");
        } else {
            /* the admission a stored candidate passes again on resume, verify and export */
            out->fail = kevo_gen_llm_admit_text(space, p.source, g->o.inputs, g->o.ninputs, g->o.outputs,
                                                g->o.noutputs, g->o.op, g->o.arch, out->family, &out->space,
                                                out->why, sizeof out->why);
            if (out->fail == KEVO_FAIL_NONE) {
                out->owns_space = true;
                kevo_space_default(out->space, &out->cfg);
            }
        }
        kevo_llm_parsed_free(&p);
    }
    if (out->fail != KEVO_FAIL_NONE)
        gr->error = kv_strdup(out->why);
    kevo_llm_reply_release(&r);
    lg_forget(g);
    return KEVO_OK;
}
