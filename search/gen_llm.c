/* gen_llm.c — the LLM generator: KernelEvolve's universal operator.  A
 * parent node (template or LLM), its measurements and failure, its earlier
 * LLM children and knowledge retrieved for its bottleneck become one prompt
 * (llm/prompt.c); the call runs in a worker process (llm/client.c) while
 * the search compiles and times; the reply is parsed (llm/reply.c), checked
 * (llm/check.c) and becomes a one-point space with its own source.
 *
 * Also here: its options (what a run stores, what a resume may change, the
 * usage errors), and the admission of LLM text, the same for a fresh reply
 * and for one a DB holds. */
#define _POSIX_C_SOURCE 200809L
#include "search/gen.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "db/report.h"
#include "core/op.h"
#include "llm/check.h"
#include "llm/client.h"
#include "llm/prompt.h"
#include "llm/reply.h"
#include "util/util.h"

#define LG_SIBLINGS 4 /* a parent's latest LLM children the prompt shows */

/* What the generator's prompt and admission need of the run. */
typedef struct lg_setup {
    const char *op, *shape, *dtype, *arch;
    const char *abi_header;
    const char *const *inputs;
    int ninputs;
    const char *const *outputs;
    int noutputs;
    int64_t seed;              /* -1: not sent; call k sends seed + k */
    double temperature;        /* NaN: not sent */
    int prompt_chars;          /* <= 0: 96 KiB */
} lg_setup;

typedef struct lg_gen {
    kevo_gen base;
    kevo_search *s;
    lg_setup o;
    kevo_run_llm rl;      /* the run's options: url, model, ... (o's strings point here) */
    char *prompts_dir;    /* owned */
    kevo_llm_config cfg;
    kevo_knowledge *kb;
    kevo_llm_call *call;  /* in flight, or NULL */
    /* the call in flight: what the generation row keeps */
    kv_buf system, user;
    char query[256];
    char *parent_source;  /* the parent's device source (what SEARCH/REPLACE edits) */
    char *parent_space;   /* its one-point space text */
    int64_t seed_sent;
} lg_gen;

/* ---- options: what a run stores ---- */

kevo_status kevo_gen_llm_opts_json(const kevo_run_llm *rl, char **out, kevo_err *err)
{
    *out = NULL;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddNumberToObject(o, "budget", (double)rl->llm_budget) &&
              cJSON_AddStringToObject(o, "url", rl->url) && cJSON_AddStringToObject(o, "model", rl->model) &&
              (isnan(rl->temperature) ? cJSON_AddNullToObject(o, "temperature") != NULL
                                      : cJSON_AddNumberToObject(o, "temperature", rl->temperature) != NULL) &&
              cJSON_AddNumberToObject(o, "seed", (double)rl->seed) &&
              cJSON_AddNumberToObject(o, "max_tokens", rl->max_tokens);
    if (ok)
        *out = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return *out ? KEVO_OK : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
}

/* A whole number of a JSON object (a stored blob: bounded, no overflow). */
static int64_t lg_json_int(const cJSON *o, const char *key, int64_t none)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return none;
    double d = v->valuedouble;
    return d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
}

kevo_status kevo_gen_llm_opts_row(const char *json, kevo_run_llm *rl, kevo_err *err)
{
    cJSON *o = cJSON_Parse(json ? json : "{}");
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kevo_err_set(err, KEVO_ERR_PARSE, "the LLM generator's stored options are not a JSON object");
    }
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(o, "url");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "temperature");
    rl->llm_budget = lg_json_int(o, "budget", 0);
    snprintf(rl->url, sizeof rl->url, "%s", cJSON_IsString(url) ? url->valuestring : "");
    snprintf(rl->model, sizeof rl->model, "%s", cJSON_IsString(model) ? model->valuestring : "");
    rl->temperature = cJSON_IsNumber(t) ? t->valuedouble : NAN;
    rl->seed = lg_json_int(o, "seed", -1);
    int64_t mt = lg_json_int(o, "max_tokens", 0);
    rl->max_tokens = mt > INT_MAX ? INT_MAX : mt < INT_MIN ? INT_MIN : (int)mt;
    cJSON_Delete(o);
    return KEVO_OK;
}

/* The command line's LLM options as the run stores them. */
static void lg_opts_cmd(const kevo_llm_opts *c, kevo_run_llm *rl)
{
    memset(rl, 0, sizeof *rl);
    rl->llm_budget = c->budget;
    snprintf(rl->url, sizeof rl->url, "%s", c->url ? c->url : "");
    snprintf(rl->model, sizeof rl->model, "%s", c->model ? c->model : "");
    rl->temperature = c->temperature;
    rl->seed = c->seed;
    rl->max_tokens = c->max_tokens;
}

/* Usage checks of the stored options (KEVO_ERR_ARG), nothing cut.
 * need_url: a new run with the llm generator must name its server (a
 * resumed one without --llm-url makes no LLM call). */
static kevo_status lg_opts_check(const kevo_run_llm *rl, bool listed, bool need_url, kevo_err *err)
{
    if (listed && need_url && !rl->url[0])
        return kevo_err_set(err, KEVO_ERR_ARG, "--generators llm needs --llm-url (an OpenAI-compatible API base, "
                            "e.g. http://127.0.0.1:8080/v1)");
    kevo_err uerr;
    if (listed && rl->url[0] && kevo_llm_url_check(rl->url, &uerr))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-url: %s", uerr.msg);
    if (rl->llm_budget < 0 || rl->llm_budget > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget must be 0..1000000");
    if (rl->max_tokens < 0 || rl->max_tokens > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-max-tokens must be 0..1000000");
    if (!isnan(rl->temperature) && !(rl->temperature >= 0 && rl->temperature <= 2))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-temperature must be 0..2");
    return KEVO_OK;
}

/* An LLM option given to a run without the llm generator: a usage error
 * (KEVO_ERR_ARG naming it), never silently ignored. */
static kevo_status lg_unused(uint32_t given, const char *names, bool resume, kevo_err *err)
{
    if (!given)
        return KEVO_OK;
    const char *name = (given & KEVO_LLM_GIVEN_URL)           ? "--llm-url"
                       : (given & KEVO_LLM_GIVEN_MODEL)       ? "--llm-model"
                       : (given & KEVO_LLM_GIVEN_BUDGET)      ? "--llm-budget"
                       : (given & KEVO_LLM_GIVEN_TEMPERATURE) ? "--llm-temperature"
                       : (given & KEVO_LLM_GIVEN_SEED)        ? "--llm-seed"
                       : (given & KEVO_LLM_GIVEN_MAX_TOKENS)  ? "--llm-max-tokens"
                                                              : "an LLM option (--llm-timeout, --llm-retries, "
                                                                "--llm-prompt-chars or --prompts)";
    if (resume)
        return kevo_err_set(err, KEVO_ERR_ARG, "%s is given, but the run searches without the LLM (generators "
                            "'%.60s'): an LLM option applies only to a run with --generators llm", name, names);
    return kevo_err_set(err, KEVO_ERR_ARG, "%s is given without --generators llm (or template,llm): it would be "
                        "ignored", name);
}

/* A resumed run's LLM options: stored (a run of an older kevo, or one
 * without LLM settings, has none).  A larger --llm-budget extends the run;
 * the model, temperature, seed and token limit given now replace the
 * stored ones.  The server is only ever the one this command line names:
 * the URL a DB holds is never called (the DB may come from anywhere, and
 * the API key goes with every call), so without --llm-url the url is empty
 * and this process makes no LLM call. */
static kevo_status lg_opts_resume(const kevo_gen_optreq *rq, kevo_run_llm *rl, bool *extends, kevo_err *err)
{
    const kevo_llm_opts *c = &rq->cmd->llm;
    uint32_t g = c->given;
    kevo_run_llm want;
    lg_opts_cmd(c, &want);
    memset(rl, 0, sizeof *rl);
    rl->seed = -1;
    rl->temperature = NAN;
    kevo_status st = rq->stored ? kevo_gen_llm_opts_row(rq->stored, rl, err) : KEVO_OK;
    if (st)
        return st;
    if (g & KEVO_LLM_GIVEN_BUDGET) {
        if (want.llm_budget < rl->llm_budget)
            return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget %lld is below run %lld's %lld: a resume can raise "
                                "it, not lower it", (long long)want.llm_budget, (long long)rq->run->id,
                                (long long)rl->llm_budget);
        *extends |= want.llm_budget > rl->llm_budget;
        rl->llm_budget = want.llm_budget;
    }
    if (!rq->listed && (st = lg_unused(g, rq->names, true, err)))
        return st;
    /* the endpoint: this command line's, or none (never the DB's) */
    snprintf(rl->url, sizeof rl->url, "%s", (g & KEVO_LLM_GIVEN_URL) ? want.url : "");
    if (g & KEVO_LLM_GIVEN_MODEL)
        snprintf(rl->model, sizeof rl->model, "%s", want.model);
    if (g & KEVO_LLM_GIVEN_TEMPERATURE)
        rl->temperature = want.temperature;
    if (g & KEVO_LLM_GIVEN_SEED)
        rl->seed = want.seed;
    if (g & KEVO_LLM_GIVEN_MAX_TOKENS)
        rl->max_tokens = want.max_tokens;
    return lg_opts_check(rl, rq->listed, false, err);
}

static kevo_status lg_options(const kevo_gen_optreq *rq, char **out, bool *extends, kevo_err *err)
{
    kevo_run_llm rl;
    kevo_status st;
    if (rq->resume) {
        st = lg_opts_resume(rq, &rl, extends, err);
    } else {
        lg_opts_cmd(&rq->cmd->llm, &rl);
        st = lg_opts_check(&rl, rq->listed, true, err);
        if (!st && !rq->listed)
            st = lg_unused(rq->cmd->llm.given, rq->names, false, err);
    }
    return st ? st : kevo_gen_llm_opts_json(&rl, out, err);
}

/* ---- this process: on or off, open, close ---- */

/* The prompts folder: --prompts, or the data folder's. */
static void lg_prompts_dir(const kevo_gen_ctx *ctx, char *out, size_t n)
{
    if (ctx->cmd->llm.prompts_dir)
        snprintf(out, n, "%s", ctx->cmd->llm.prompts_dir);
    else
        snprintf(out, n, "%s/prompts", ctx->data_dir ? ctx->data_dir : ".");
}

/* A prompt file --prompts names: never a run's DB. */
static const char *lg_reads(const kevo_gen_opts *cmd, const char *op, const char *path)
{
    const char *dir = cmd->llm.prompts_dir;
    char file[PATH_MAX + 320];
    for (int k = 0; dir && k < 2; k++) {
        if (k == 0)
            snprintf(file, sizeof file, "%s/system.md", dir);
        else
            snprintf(file, sizeof file, "%s/ops/%s.md", dir, op);
        if (kv_same_file(path, file))
            return "a prompt file";
    }
    return NULL;
}

/* The LLM runs only with a server this command line names (a resume
 * without --llm-url makes no LLM call); its prompts folder is checked
 * before anything compiles. */
static kevo_status lg_check(const kevo_gen_ctx *ctx, bool *off, kevo_err *err)
{
    kevo_run_llm rl;
    kevo_status st = kevo_gen_llm_opts_row(ctx->options, &rl, err);
    *off = !st && !rl.url[0];
    if (st || *off)
        return st;
    char prompts[PATH_MAX];
    lg_prompts_dir(ctx, prompts, sizeof prompts);
    return kevo_prompt_check_dir(prompts, ctx->op->name, err);
}

static void lg_describe(const kevo_gen_ctx *ctx, bool on, int64_t run_id, kv_buf *line)
{
    kevo_run_llm rl;
    kevo_err err;
    if (kevo_gen_llm_opts_row(ctx->options, &rl, &err))
        return;
    if (on)
        kv_buf_printf(line, "generators %s: LLM %s%s%s, %lld calls at most", ctx->names, rl.url,
                      rl.model[0] ? " model " : "", rl.model, (long long)rl.llm_budget);
    else
        kv_buf_printf(line, "kevo: run %lld searches with the LLM too, but no --llm-url was given: this process "
                      "makes no LLM call (the server is never taken from the DB); templates go on",
                      (long long)run_id);
}

static void lg_forget(lg_gen *g)
{
    kv_buf_release(&g->system);
    kv_buf_release(&g->user);
    free(g->parent_source);
    free(g->parent_space);
    g->parent_source = g->parent_space = NULL;
    g->query[0] = '\0';
}

static void lg_cancel(kevo_gen *base)
{
    lg_gen *g = (lg_gen *)base;
    if (g && g->call) {
        kevo_llm_cancel(g->call);
        g->call = NULL;
    }
    if (g)
        lg_forget(g);
}

static void lg_close(kevo_gen *base)
{
    lg_gen *g = (lg_gen *)base;
    if (!g)
        return;
    lg_cancel(base);
    kevo_knowledge_close(g->kb);
    free(g->prompts_dir);
    free(g);
}

/* Open the generator: the client settings (checked: KEVO_ERR_ARG for a bad
 * URL) and the knowledge index (KEVO_ERR_IO / KEVO_ERR_PARSE for a missing
 * or bad prompts folder). */
static kevo_status lg_open(const kevo_gen_ctx *ctx, kevo_gen **out, kevo_err *err)
{
    *out = NULL;
    lg_gen *g = calloc(1, sizeof *g);
    if (!g)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st = kevo_gen_llm_opts_row(ctx->options, &g->rl, err);
    const kevo_llm_opts *c = &ctx->cmd->llm;
    g->base.calls_max = g->rl.llm_budget;
    g->s = ctx->s;
    g->o = (lg_setup){.op = ctx->op->name, .shape = ctx->shape, .dtype = ctx->dtype, .arch = ctx->arch,
                      .abi_header = ctx->abi_header, .inputs = ctx->inputs, .ninputs = ctx->ninputs,
                      .outputs = ctx->outputs, .noutputs = ctx->noutputs, .seed = g->rl.seed,
                      .temperature = g->rl.temperature, .prompt_chars = c->prompt_chars};
    char prompts[PATH_MAX];
    lg_prompts_dir(ctx, prompts, sizeof prompts);
    g->prompts_dir = kv_strdup(prompts);
    kv_buf_init(&g->system);
    kv_buf_init(&g->user);
    kevo_llm_config_init(&g->cfg);
    g->cfg.url = g->rl.url;
    g->cfg.model = g->rl.model[0] ? g->rl.model : NULL;
    g->cfg.temperature = isnan(g->rl.temperature) ? -1.0 : g->rl.temperature;
    g->cfg.seed = -1;
    g->cfg.max_tokens = g->rl.max_tokens;
    if (c->timeout > 0)
        g->cfg.total_timeout_s = c->timeout;
    g->cfg.max_retries = c->retries;
    if (!st)
        st = g->prompts_dir ? kevo_llm_config_check(&g->cfg, err) : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st)
        st = kevo_knowledge_open(g->prompts_dir, &g->kb, err);
    if (st) {
        lg_close(&g->base);
        return st;
    }
    *out = &g->base;
    return KEVO_OK;
}

/* ---- the parent of the next rewrite ---- */

/* The evaluated node with the highest value halved for each rewrite it
 * already has, or -1 when no node is evaluated yet (or out of memory).  A
 * node's value is its fitness; in a compile-only run (no fitness) the cost
 * model's best prediction over its own (0.5 without a model); a failed LLM
 * node with no rewrite yet is worth half the best fitness (its failure
 * message asks for a repair); failed template nodes are never parents. */
static int lg_parent(kevo_gen *base)
{
    const kevo_search *s = ((lg_gen *)base)->s;
    double *pred = s->nnodes > 0 ? malloc((size_t)s->nnodes * sizeof *pred) : NULL;
    if (!pred)
        return -1;
    double best_base = 0.0, best_pred = NAN;
    for (int i = 0; i < s->nnodes; i++) {
        const kevo_node *n = &s->nodes[i];
        pred[i] = n->done && isnan(n->fitness) ? kevo_search_predict(s, n->family, &n->cfg) : NAN;
        if (n->done && n->fitness > best_base)
            best_base = n->fitness;
        if (!isnan(pred[i]) && !(pred[i] >= best_pred))
            best_pred = pred[i];
    }
    int pick = -1;
    double pick_score = 0.0;
    for (int i = 0; i < s->nnodes; i++) {
        const kevo_node *n = &s->nodes[i];
        if (!n->done)
            continue;
        double b;
        if (n->fitness > 0)
            b = n->fitness;
        else if (isnan(n->fitness))
            b = !isnan(pred[i]) && pred[i] > 0 && !isnan(best_pred) ? best_pred / pred[i] : 0.5;
        else if (n->family >= s->nspaces && n->rewrites == 0)
            b = 0.5 * (best_base > 0 ? best_base : 1.0);
        else
            continue;
        double score = b * pow(0.5, n->rewrites);
        if (score > pick_score) {
            pick_score = score;
            pick = i;
        }
    }
    free(pred);
    return pick;
}

/* ---- a call ---- */

/* A parent node as the prompt reads it: its row, its family's space and
 * configuration, its generator ("template" or "llm"). */
typedef struct lg_parent_node {
    const kevo_cand_row *row;
    const kevo_space *space;
    kevo_config cfg;
    const char *generator;
} lg_parent_node;

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

/* The parent's source and one-point space: an LLM parent's are its own, a
 * template parent's are its family's at its configuration. */
static kevo_status lg_parent_texts(lg_gen *g, const lg_parent_node *parent, kevo_err *err)
{
    kv_buf sp;
    kv_buf_init(&sp);
    kevo_status st = KEVO_OK;
    if (strcmp(parent->generator, "llm") == 0)
        st = kv_buf_puts(&sp, parent->space->json ? parent->space->json : "");
    else
        st = kevo_space_point_json(parent->space, &parent->cfg, "llm", &sp, err);
    g->parent_space = kv_buf_take(&sp);
    g->parent_source = kv_strdup(parent->space->source ? parent->space->source : "");
    if (!st && (!g->parent_space || !g->parent_source))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    return st;
}

/* Start a rewrite of parent (with up to nsib earlier LLM children of it as
 * siblings; call number k of the run) in a worker process. */
static kevo_status lg_call(lg_gen *g, const lg_parent_node *parent, const kevo_cand_row *siblings, int nsib,
                           double best_speedup, int64_t k, kevo_err *err)
{
    if (g->call)
        return kevo_err_set(err, KEVO_ERR_BUSY, "an LLM call is already in flight");
    lg_forget(g);
    kevo_status st = lg_parent_texts(g, parent, err);
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
    st = kevo_prompt_build(g->prompts_dir, g->kb, &in, &g->system, &g->user, g->query, sizeof g->query, err);
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

/* Start an LLM rewrite of node call->parent: its row, up to LG_SIBLINGS of
 * its latest LLM children as siblings, call number call->k. */
static kevo_status lg_start(kevo_gen *base, const kevo_gen_call *call, kevo_err *err)
{
    lg_gen *g = (lg_gen *)base;
    const kevo_node *nd = &g->s->nodes[call->parent];
    kevo_cand_row prow, sib[LG_SIBLINGS];
    int nsib = 0;
    kevo_status st = kevo_db_cand_get(call->db, nd->cand_id, &prow, err);
    if (st)
        return st;
    kevo_edge_row *edges = NULL;
    int ne = 0;
    st = kevo_db_edge_list(call->db, call->run_id, &edges, &ne, err);
    for (int i = ne - 1; i >= 0 && !st && nsib < LG_SIBLINGS; i--)
        if (edges[i].parent_id == nd->cand_id && strcmp(edges[i].op, base->type->move) == 0 &&
            kevo_db_cand_get(call->db, edges[i].child_id, &sib[nsib], NULL) == KEVO_OK)
            nsib++;
    free(edges);
    lg_parent_node gp = {.row = &prow, .space = kevo_search_space(g->s, nd->family), .cfg = nd->cfg,
                         .generator = kevo_report_generator(prow.family)};
    if (!st)
        st = lg_call(g, &gp, sib, nsib, call->best, call->k, err);
    for (int i = 0; i < nsib; i++)
        kevo_cand_row_release(&sib[i]);
    kevo_cand_row_release(&prow);
    return st;
}

static bool lg_ready(kevo_gen *base)
{
    lg_gen *g = (lg_gen *)base;
    return g->call && kevo_llm_poll(g->call);
}

/* ---- a reply ---- */

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

/* The call as it went, whatever comes of it, into the generation row. */
static void lg_generation(lg_gen *g, const kevo_llm_reply *r, kevo_generation_row *gr)
{
    snprintf(gr->generator, sizeof gr->generator, "llm");
    snprintf(gr->model, sizeof gr->model, "%s", r->model ? r->model : g->rl.model);
    gr->system_prompt = kv_buf_take(&g->system);
    gr->prompt = kv_buf_take(&g->user);
    gr->reply = r->content ? kv_strdup(r->content) : NULL;
    gr->tokens_in = r->tokens_in;
    gr->tokens_out = r->tokens_out;
    gr->latency_s = r->latency_s;
    gr->seed = g->seed_sent;
    gr->temperature = g->o.temperature;
    snprintf(gr->finish_reason, sizeof gr->finish_reason, "%s", r->finish_reason ? r->finish_reason : "");
    gr->http_status = r->http_status;
    gr->attempts = r->attempts;
    snprintf(gr->query, sizeof gr->query, "%s", g->query);
}

/* A reply's code: code block + plan block, or SEARCH/REPLACE against the
 * parent's source (or against the view of it a long prompt shows, without
 * comments: edits made there apply to that view, a valid source of its
 * own).  KEVO_ERR_PARSE with perr's message when it gives none. */
static kevo_status lg_parse(lg_gen *g, const char *content, kevo_llm_parsed *p, kevo_err *perr)
{
    kevo_err_clear(perr);
    kevo_status pst = kevo_llm_parse_reply(content, g->parent_source, g->parent_space, p, perr);
    if (pst == KEVO_ERR_PARSE && strstr(perr->msg, "SEARCH block") && strstr(perr->msg, " matches ")) {
        char *view = kevo_prompt_source_view(g->parent_source);
        kevo_err verr;
        kevo_err_clear(&verr);
        if (view && strcmp(view, g->parent_source) != 0 &&
            kevo_llm_parse_reply(content, view, g->parent_space, p, &verr) == KEVO_OK)
            pst = KEVO_OK;
        free(view);
    }
    return pst;
}

/* A parsed reply into out: the stored texts, then the admission a stored
 * candidate passes again on resume, verify and export. */
static void lg_admit(lg_gen *g, const kevo_llm_parsed *p, kevo_gen_source *out)
{
    kevo_generation_row *gr = &out->gen;
    char *space = lg_canonical_space(p->space);
    gr->source = kv_strdup(p->source);
    gr->space = space;
    if (!space || !gr->source) {
        out->fail = KEVO_FAIL_PARSE_ERROR;
        snprintf(out->why, sizeof out->why, "the plan is not a JSON object");
        return;
    }
    out->fail = kevo_gen_llm_admit_text(space, p->source, g->o.inputs, g->o.ninputs, g->o.outputs, g->o.noutputs,
                                        g->o.op, g->o.arch, out->family, &out->space, out->why, sizeof out->why);
    if (out->fail == KEVO_FAIL_NONE) {
        out->owns_space = true;
        kevo_space_default(out->space, &out->cfg);
    }
}

/* Wait for the call and finish it into out: parse, the static check, and
 * the one-point space.  A failed call, an unusable reply or a refused
 * source is out->fail with why; a call no server answered is out->gone;
 * errors only for out of memory. */
static kevo_status lg_finish(kevo_gen *base, kevo_gen_source *out, kevo_err *err)
{
    lg_gen *g = (lg_gen *)base;
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
    kevo_generation_row *gr = &out->gen;
    lg_generation(g, &r, gr);
    if (!r.ok) {
        out->fail = KEVO_FAIL_LLM_ERROR;
        out->gone = r.unreachable; /* nothing answered at the URL (a GPU node without a network): not a candidate */
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
    if (lg_parse(g, r.content, &p, &perr)) {
        out->fail = KEVO_FAIL_PARSE_ERROR;
        snprintf(out->why, sizeof out->why, "%.500s", perr.msg);
    } else {
        lg_admit(g, &p, out);
        kevo_llm_parsed_free(&p);
    }
    if (out->fail != KEVO_FAIL_NONE)
        gr->error = kv_strdup(out->why);
    kevo_llm_reply_release(&r);
    lg_forget(g);
    return KEVO_OK;
}

/* ---- a stored candidate ---- */

/* An LLM candidate a DB holds: the one-point space its generation stored,
 * admitted again as a fresh reply would be (the arch is checked by the
 * callers that need it). */
static kevo_status lg_restore(kevo_db *db, const kevo_cand_row *row, const kevo_op *op, kevo_space **out, bool *mine,
                              kevo_err *err)
{
    *out = NULL;
    *mine = false;
    kevo_generation_row g;
    kevo_err e2;
    if (kevo_db_generation_get(db, row->id, &g, &e2) != KEVO_OK)
        return KEVO_OK;
    *mine = true;
    kevo_status st = KEVO_OK;
    if (g.source && g.space)
        st = kevo_gen_llm_admit(&g, row->family, op, NULL, out, err);
    kevo_generation_row_release(&g);
    return st;
}

/* ---- admission ---- */

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

kevo_fail kevo_gen_llm_admit_text(const char *space_json, const char *source, const char *const *inputs,
                                  int ninputs, const char *const *outputs, int noutputs, const char *op,
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
    kevo_gen_llm_family(space_json, source, family);
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

kevo_status kevo_gen_llm_admit(const kevo_generation_row *g, const char *family, const kevo_op *op,
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
    kevo_gen_llm_family(g->space, g->source, want);
    if (!family || strcmp(want, family) != 0) /* the DB is untrusted: the name must be the content's */
        return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld: its stored source and plan do not hash to its "
                            "family", (long long)g->candidate_id);
    const char *inputs[KEVO_OP_MAX_FIELDS], *outputs[KEVO_OP_MAX_FIELDS];
    int nin = op ? kevo_op_tensor_names(op, false, inputs, KEVO_OP_MAX_FIELDS) : 0;
    int nout = op ? kevo_op_tensor_names(op, true, outputs, KEVO_OP_MAX_FIELDS) : 0;
    char why[600], got[17];
    kevo_fail f = kevo_gen_llm_admit_text(g->space, g->source, inputs, nin, outputs, nout, op ? op->name : NULL,
                                          arch, got, out, why, sizeof why);
    if (f == KEVO_FAIL_NONE)
        return KEVO_OK;
    kv_term_clean(why);
    return kevo_err_set(err, KEVO_ERR_PARSE, "candidate %lld (%s) is refused as a fresh reply would be (%s): %s",
                        (long long)g->candidate_id, fam, kevo_fail_name(f), why);
}

const kevo_generator kevo_gen_llm = {
    .name = "llm",
    .summary = "an LLM rewrites a parent's source and launch plan (one call in flight, --llm-url)",
    .move = "llm",
    .label = "the LLM",
    .options = lg_options,
    .check = lg_check,
    .reads = lg_reads,
    .open = lg_open,
    .describe = lg_describe,
    .parent = lg_parent,
    .start = lg_start,
    .ready = lg_ready,
    .finish = lg_finish,
    .cancel = lg_cancel,
    .close = lg_close,
    .restore = lg_restore,
};
