/* gen_llm.c — the LLM generator: KernelEvolve's universal operator.  A
 * parent node (template or LLM), its measurements and failure, its earlier
 * LLM children and knowledge retrieved for its bottleneck become one prompt
 * (llm/prompt.c); the call runs in a worker process (llm/client.c) while
 * the search compiles and times; the reply is parsed (llm/reply.c), checked
 * (llm/admit/check.c) and becomes a one-point space with its own source.
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
#include "db/profile.h"
#include "llm/admit/admit.h"
#include "llm/bandit.h"
#include "llm/client.h"
#include "llm/grammar.h"
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
    int prompt_tokens;         /* <= 0: llm/prompt.h's default */
    int prompt_chars;          /* <= 0: no cap in bytes */
    bool edit_grammar;         /* hold a reply to one-line edits where the source is shown */
} lg_setup;

/* The LLM generator's options as a run stores them (run_generators.options,
 * a JSON object with these keys): what --resume applies again.  The API key
 * is never one of them; the prompt caps are this process's, kept as a
 * record of the latest (a resume takes its command line's). */
typedef struct lg_opts {
    int64_t budget;    /* LLM calls the run may make ("budget") */
    char url[512];     /* API base; never with credentials */
    char model[128];   /* a model or a comma list (the bandit's) */
    double temperature; /* NaN: not sent (null) */
    int64_t seed;      /* -1: not sent */
    int max_tokens;    /* 0: not sent */
    int prompt_tokens; /* a prompt's token budget ("prompt_tokens") */
    int prompt_chars;  /* a prompt's cap in bytes; 0: none ("prompt_chars") */
    bool edit_grammar; /* replies held to one-line edits ("edit_grammar") */
} lg_opts;

typedef struct lg_gen {
    kevo_gen base;
    kevo_search *s;
    lg_setup o;
    lg_opts rl;      /* the run's options: url, model, ... (o's strings point here) */
    char *prompts_dir;    /* owned */
    kevo_llm_config cfg;
    kevo_knowledge *kb;
    kevo_llm_call *call;  /* in flight, or NULL */
    kevo_bandit bandit;   /* --llm-model a,b,...: the models UCB1 picks among (n < 2: one model, no bandit) */
    char model_now[KEVO_BANDIT_NAME_MAX]; /* the model of the call in flight, as asked */
    /* the call in flight: what the generation row keeps */
    kv_buf system, user;
    char query[256];
    char *parent_source;  /* the parent's device source (what SEARCH/REPLACE edits) */
    char *parent_space;   /* its one-point space text */
    char *parent_params;  /* its params ("BM=128 BN=64 ..."): what the prompt compacts its source for */
    char *grammar;        /* the call's edit grammar (cfg.grammar), or NULL */
    int64_t seed_sent;
} lg_gen;

/* The generator of a candidate's family as a prompt names it: "llm" (this
 * one's families, kevo_report_generator's form) or "template". */
static const char *lg_generator(const char *family)
{
    static const kevo_run_gen_row self = {.name = "llm"};
    return kevo_report_generator(family, &self, 1);
}

/* ---- options: what a run stores ---- */

static kevo_status lg_opts_json(const lg_opts *rl, char **out, kevo_err *err)
{
    *out = NULL;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddNumberToObject(o, "budget", (double)rl->budget) &&
              cJSON_AddStringToObject(o, "url", rl->url) && cJSON_AddStringToObject(o, "model", rl->model) &&
              (isnan(rl->temperature) ? cJSON_AddNullToObject(o, "temperature") != NULL
                                      : cJSON_AddNumberToObject(o, "temperature", rl->temperature) != NULL) &&
              cJSON_AddNumberToObject(o, "seed", (double)rl->seed) &&
              cJSON_AddNumberToObject(o, "max_tokens", rl->max_tokens) &&
              cJSON_AddNumberToObject(o, "prompt_tokens", rl->prompt_tokens) &&
              cJSON_AddNumberToObject(o, "prompt_chars", rl->prompt_chars) &&
              cJSON_AddBoolToObject(o, "edit_grammar", rl->edit_grammar);
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

static kevo_status lg_opts_row(const char *json, lg_opts *rl, kevo_err *err)
{
    cJSON *o = cJSON_Parse(json ? json : "{}");
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return kevo_err_set(err, KEVO_ERR_PARSE, "the LLM generator's stored options are not a JSON object");
    }
    const cJSON *url = cJSON_GetObjectItemCaseSensitive(o, "url");
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "temperature");
    rl->budget = lg_json_int(o, "budget", 0);
    snprintf(rl->url, sizeof rl->url, "%s", cJSON_IsString(url) ? url->valuestring : "");
    snprintf(rl->model, sizeof rl->model, "%s", cJSON_IsString(model) ? model->valuestring : "");
    rl->temperature = cJSON_IsNumber(t) ? t->valuedouble : NAN;
    rl->seed = lg_json_int(o, "seed", -1);
    int64_t mt = lg_json_int(o, "max_tokens", 0);
    rl->max_tokens = mt > INT_MAX ? INT_MAX : mt < INT_MIN ? INT_MIN : (int)mt;
    int64_t pt = lg_json_int(o, "prompt_tokens", 0), pc = lg_json_int(o, "prompt_chars", 0);
    rl->prompt_tokens = pt > INT_MAX ? INT_MAX : pt < 0 ? 0 : (int)pt;
    rl->prompt_chars = pc > INT_MAX ? INT_MAX : pc < 0 ? 0 : (int)pc;
    rl->edit_grammar = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "edit_grammar"));
    cJSON_Delete(o);
    return KEVO_OK;
}

/* The command line's LLM options as the run stores them. */
static void lg_opts_cmd(const kevo_llm_opts *c, lg_opts *rl)
{
    memset(rl, 0, sizeof *rl);
    rl->budget = c->budget;
    snprintf(rl->url, sizeof rl->url, "%s", c->url ? c->url : "");
    snprintf(rl->model, sizeof rl->model, "%s", c->model ? c->model : "");
    rl->temperature = c->temperature;
    rl->seed = c->seed;
    rl->max_tokens = c->max_tokens;
    rl->prompt_tokens = c->prompt_tokens;
    rl->prompt_chars = c->prompt_chars;
    rl->edit_grammar = c->edit_grammar;
}

/* Usage checks of the stored options (KEVO_ERR_ARG), nothing cut.
 * need_url: a new run with the llm generator must name its server (a
 * resumed one without --llm-url makes no LLM call). */
static kevo_status lg_opts_check(const lg_opts *rl, bool listed, bool need_url, kevo_err *err)
{
    if (listed && need_url && !rl->url[0])
        return kevo_err_set(err, KEVO_ERR_ARG, "--generators llm needs --llm-url (an OpenAI-compatible API base, "
                            "e.g. http://127.0.0.1:8080/v1)");
    kevo_err uerr;
    if (listed && rl->url[0] && kevo_llm_url_check(rl->url, &uerr))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-url: %s", uerr.msg);
    if (rl->budget < 0 || rl->budget > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget must be 0..1000000");
    if (rl->max_tokens < 0 || rl->max_tokens > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-max-tokens must be 0..1000000");
    if (!isnan(rl->temperature) && !(rl->temperature >= 0 && rl->temperature <= 2))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-temperature must be 0..2");
    kevo_bandit b;
    if (!kevo_bandit_parse(rl->model, &b))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-model: a model name or a comma list of at most %d distinct "
                            "names (printable, no spaces)", KEVO_BANDIT_MAX);
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
                                                                "--llm-prompt-tokens, --llm-prompt-chars or "
                                                                "--prompts)";
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
static kevo_status lg_opts_resume(const kevo_gen_optreq *rq, lg_opts *rl, bool *extends, kevo_err *err)
{
    const kevo_llm_opts *c = &rq->cmd->llm;
    uint32_t g = c->given;
    lg_opts want;
    lg_opts_cmd(c, &want);
    memset(rl, 0, sizeof *rl);
    rl->seed = -1;
    rl->temperature = NAN;
    kevo_status st = rq->stored ? lg_opts_row(rq->stored, rl, err) : KEVO_OK;
    if (st)
        return st;
    if (g & KEVO_LLM_GIVEN_BUDGET) {
        if (want.budget < rl->budget)
            return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget %lld is below run %lld's %lld: a resume can raise "
                                "it, not lower it", (long long)want.budget, (long long)rq->run->id,
                                (long long)rl->budget);
        *extends |= want.budget > rl->budget;
        rl->budget = want.budget;
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
    rl->prompt_tokens = want.prompt_tokens; /* this process's, kept as a record */
    rl->prompt_chars = want.prompt_chars;
    rl->edit_grammar = want.edit_grammar;
    return lg_opts_check(rl, rq->listed, false, err);
}

static kevo_status lg_options(const kevo_gen_optreq *rq, char **out, bool *extends, kevo_err *err)
{
    lg_opts rl;
    kevo_status st;
    if (rq->resume) {
        st = lg_opts_resume(rq, &rl, extends, err);
    } else {
        lg_opts_cmd(&rq->cmd->llm, &rl);
        st = lg_opts_check(&rl, rq->listed, true, err);
        if (!st && !rq->listed)
            st = lg_unused(rq->cmd->llm.given, rq->names, false, err);
    }
    return st ? st : lg_opts_json(&rl, out, err);
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
    lg_opts rl;
    kevo_status st = lg_opts_row(ctx->options, &rl, err);
    *off = !st && !rl.url[0];
    if (st || *off)
        return st;
    char prompts[PATH_MAX];
    lg_prompts_dir(ctx, prompts, sizeof prompts);
    return kevo_prompt_check_dir(prompts, ctx->op->name, err);
}

static void lg_describe(const kevo_gen_ctx *ctx, bool on, int64_t run_id, kv_buf *line)
{
    lg_opts rl;
    kevo_err err;
    if (lg_opts_row(ctx->options, &rl, &err))
        return;
    if (on)
        kv_buf_printf(line, "generators %s: LLM %s%s%s%s, %lld calls (counted apart from --budget)", ctx->names,
                      rl.url, rl.model[0] ? (strchr(rl.model, ',') ? " models " : " model ") : "", rl.model,
                      strchr(rl.model, ',') ? " (UCB1 over the improvement each one's candidates bring)" : "",
                      (long long)rl.budget);
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
    free(g->parent_params);
    free(g->grammar);
    g->parent_source = g->parent_space = g->parent_params = g->grammar = NULL;
    g->cfg.grammar = NULL;
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
    kevo_status st = lg_opts_row(ctx->options, &g->rl, err);
    const kevo_llm_opts *c = &ctx->cmd->llm;
    g->base.calls_max = g->rl.budget;
    g->s = ctx->s;
    g->o = (lg_setup){.op = ctx->op->name, .shape = ctx->shape, .dtype = ctx->dtype, .arch = ctx->arch,
                      .abi_header = ctx->abi_header, .inputs = ctx->inputs, .ninputs = ctx->ninputs,
                      .outputs = ctx->outputs, .noutputs = ctx->noutputs, .seed = g->rl.seed,
                      .temperature = g->rl.temperature, .prompt_tokens = c->prompt_tokens,
                      .prompt_chars = c->prompt_chars, .edit_grammar = c->edit_grammar};
    char prompts[PATH_MAX];
    lg_prompts_dir(ctx, prompts, sizeof prompts);
    g->prompts_dir = kv_strdup(prompts);
    kv_buf_init(&g->system);
    kv_buf_init(&g->user);
    kevo_llm_config_init(&g->cfg);
    g->cfg.url = g->rl.url;
    g->cfg.model = g->rl.model[0] ? g->rl.model : NULL;
    if (!kevo_bandit_parse(g->rl.model, &g->bandit))
        st = st ? st : kevo_err_set(err, KEVO_ERR_ARG, "--llm-model: not a list of model names");
    g->cfg.temperature = isnan(g->rl.temperature) ? -1.0 : g->rl.temperature;
    g->cfg.seed = -1;
    g->cfg.max_tokens = g->rl.max_tokens;
    if (c->timeout > 0)
        g->cfg.total_timeout_s = c->timeout;
    g->cfg.max_retries = c->retries;
    g->cfg.cancel = ctx->cancel;
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
    n->generator = lg_generator(r->family);
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

/* What a prompt shows of the rest of the run: its best candidates of other
 * lineages (nodes, with the LLM ones' sources) and the in-run peers. */
typedef struct lg_run_view {
    kevo_llm_node tops[KEVO_PROMPT_TOPS_MAX];
    kevo_cand_row top_rows[KEVO_PROMPT_TOPS_MAX];
    kevo_generation_row top_gens[KEVO_PROMPT_TOPS_MAX];
    char top_params[KEVO_PROMPT_TOPS_MAX][512];
    int ntops;
    kevo_llm_peer peers[KEVO_MAX_PEERS];
    kevo_peer_row *prows;
    int npeers;
    char profile[512];  /* the parent's stored profiler figures, one line ("" none) */
    char stall[48];     /* its top warp-stall reason ("" none) */
} lg_run_view;

/* The run's verified candidates, best first, one per family (a lineage),
 * the parent's own row left out: up to KEVO_PROMPT_TOPS_MAX into v; the
 * run's peers at its first shape and GPU.  What cannot be read is left out. */
static void lg_run_view_get(lg_gen *g, kevo_db *db, int64_t run_id, int64_t parent_id, lg_run_view *v)
{
    memset(v, 0, sizeof *v);
    kevo_cand_row *rows = NULL;
    int n = 0;
    if (kevo_db_cand_list(db, run_id, &rows, &n, NULL) == KEVO_OK) {
        while (v->ntops < KEVO_PROMPT_TOPS_MAX) {
            int best = -1;
            for (int i = 0; i < n; i++) {
                bool seen = rows[i].id == parent_id || strcmp(rows[i].status, "ok") != 0 || isnan(rows[i].fitness);
                for (int k = 0; k < v->ntops && !seen; k++)
                    seen = !strcmp(v->top_rows[k].family, rows[i].family);
                if (!seen && (best < 0 || rows[i].fitness > rows[best].fitness))
                    best = i;
            }
            if (best < 0)
                break;
            int k = v->ntops++;
            v->top_rows[k] = rows[best]; /* moved: the row's strings are v's now */
            kevo_cand_row_init(&rows[best]);
            rows[best].id = parent_id; /* never again */
            kevo_generation_row_init(&v->top_gens[k]);
            lg_node(&v->top_rows[k], &v->tops[k]);
            const kevo_space *sp = NULL;
            for (int f = 0; !sp && kevo_search_space(g->s, f); f++)
                if (!strcmp(kevo_search_space(g->s, f)->family, v->top_rows[k].family))
                    sp = kevo_search_space(g->s, f);
            if (kevo_db_generation_get(db, v->top_rows[k].id, &v->top_gens[k], NULL) == KEVO_OK)
                v->tops[k].source = v->top_gens[k].source;
            if (sp && !strcmp(v->tops[k].generator, "template")) {
                kevo_config cfg;
                char who[32];
                snprintf(who, sizeof who, "candidate %lld", (long long)v->top_rows[k].id);
                if (kevo_config_parse_stored(sp, v->top_rows[k].params, who, &cfg, NULL) == KEVO_OK) {
                    kevo_config_str(sp, &cfg, v->top_params[k], sizeof v->top_params[k]);
                    v->tops[k].params = v->top_params[k];
                }
            }
        }
        kevo_cand_rows_free(rows, n);
    }
    kevo_profile prof;
    bool have = false;
    if (kevo_profile_load(db, parent_id, &prof, &have, NULL) == KEVO_OK && have) {
        kv_buf line;
        kv_buf_init(&line);
        kevo_profile_line(&prof, &line);
        snprintf(v->profile, sizeof v->profile, "%s", line.data ? line.data : "");
        kv_buf_release(&line);
        snprintf(v->stall, sizeof v->stall, "%s", prof.nstalls > 0 ? prof.stall[0] : "");
    }
    if (kevo_db_peers_list(db, run_id, &v->prows, &n, NULL) == KEVO_OK)
        for (int i = 0; i < n && v->npeers < KEVO_MAX_PEERS; i++)
            if (v->prows[i].shape_idx == 0 && v->prows[i].device == 0)
                v->peers[v->npeers++] = (kevo_llm_peer){.name = v->prows[i].peer,
                                                        .median_ms = v->prows[i].fig.state == KEVO_PEER_OK
                                                                         ? v->prows[i].fig.median_ms
                                                                         : NAN};
}

static void lg_run_view_release(lg_run_view *v)
{
    for (int k = 0; k < v->ntops; k++) {
        kevo_cand_row_release(&v->top_rows[k]);
        kevo_generation_row_release(&v->top_gens[k]);
    }
    free(v->prows);
    v->ntops = v->npeers = 0;
}

/* The grammar that holds the reply to one-line edits of what the prompt
 * shows of the parent's source (llm/grammar.h), into g->grammar and
 * g->cfg.grammar; none when no shown line is unique in what the edits
 * apply to.  Edits apply to the parent's source, or else to the compacted
 * base (lg_parse; kevo_prompt_build hands it back beside the shown text):
 * a line unique in the base is offered. */
static kevo_status lg_edit_grammar(lg_gen *g, const char *shown, const char *base, kevo_err *err)
{
    int nlines = 0;
    kevo_status st = kevo_llm_edit_grammar(shown, base, 2, &g->grammar, &nlines, err);
    g->cfg.grammar = g->grammar;
    return st;
}

/* Start a rewrite of parent (with up to nsib earlier LLM children of it as
 * siblings; call number k of the run; what the prompt shows of the rest of
 * the run in rv) in a worker process. */
static kevo_status lg_call(lg_gen *g, const lg_parent_node *parent, const kevo_cand_row *siblings, int nsib,
                           const lg_run_view *rv, double best_speedup, int64_t k, kevo_err *err)
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
    if (!(g->parent_params = kv_strdup(params))) {
        lg_forget(g);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    kevo_llm_node pn, *sib = nsib > 0 ? calloc((size_t)nsib, sizeof *sib) : NULL;
    lg_node(parent->row, &pn);
    pn.generator = parent->generator;
    pn.params = params;
    pn.source = g->parent_source;
    pn.space = g->parent_space;
    pn.profile = rv->profile[0] ? rv->profile : NULL;
    pn.stall = rv->stall[0] ? rv->stall : NULL;
    for (int i = 0; sib && i < nsib; i++)
        lg_node(&siblings[i], &sib[i]);
    kevo_prompt_in in = {.op = g->o.op, .shape = g->o.shape, .dtype = g->o.dtype, .arch = g->o.arch,
                         .abi_header = g->o.abi_header, .parent = &pn, .siblings = sib, .nsiblings = sib ? nsib : 0,
                         .best_speedup = best_speedup, .tops = rv->tops, .ntops = rv->ntops,
                         .peers = rv->peers, .npeers = rv->npeers,
                         .max_tokens = g->o.prompt_tokens > 0 ? (size_t)g->o.prompt_tokens : 0,
                         .max_chars = g->o.prompt_chars > 0 ? (size_t)g->o.prompt_chars : 0,
                         .edit_lines = g->o.edit_grammar};
    char *shown = NULL, *base = NULL;
    in.source_shown = g->o.edit_grammar ? &shown : NULL;
    in.source_base = g->o.edit_grammar ? &base : NULL;
    st = kevo_prompt_build(g->prompts_dir, g->kb, &in, &g->system, &g->user, g->query, sizeof g->query, err);
    free(sib);
    if (!st && shown && base)
        st = lg_edit_grammar(g, shown, base, err);
    free(shown);
    free(base);
    /* the seed: the run's, moved on by the call's number, so two calls differ */
    g->seed_sent = g->o.seed >= 0 ? g->o.seed + k : -1;
    g->cfg.seed = g->seed_sent;
    if (!st)
        st = kevo_llm_start(&g->cfg, g->system.data, g->user.data, &g->call, err);
    if (st)
        lg_forget(g);
    return st;
}

/* The model of the next call among several: the run's earlier calls (their
 * stored models, their candidates against their parents) fed to UCB1.  A
 * call whose candidate is still being evaluated counts as one that compiled
 * (0.5); what cannot be read counts as nothing. */
static void lg_pick_model(lg_gen *g, kevo_db *db, int64_t run_id)
{
    for (int k = 0; k < g->bandit.n; k++)
        g->bandit.pulls[k] = 0, g->bandit.reward[k] = 0;
    kevo_generation_row *gens = NULL;
    int n = 0;
    if (kevo_db_generation_list(db, run_id, &gens, &n, NULL) == KEVO_OK)
        for (int i = 0; i < n; i++) {
            kevo_cand_row c, p;
            if (kevo_db_cand_get(db, gens[i].candidate_id, &c, NULL) != KEVO_OK)
                continue;
            double pf = NAN;
            if (gens[i].parent_id > 0 && kevo_db_cand_get(db, gens[i].parent_id, &p, NULL) == KEVO_OK) {
                pf = p.fitness;
                kevo_cand_row_release(&p);
            }
            bool failed = strcmp(c.status, "failed") == 0;
            double fit = strcmp(c.status, "ok") == 0 ? c.fitness : NAN;
            kevo_bandit_add(&g->bandit, gens[i].model, kevo_bandit_reward(failed, fit, pf));
            kevo_cand_row_release(&c);
        }
    kevo_generation_rows_free(gens, n);
    int k = kevo_bandit_pick(&g->bandit);
    snprintf(g->model_now, sizeof g->model_now, "%s", k >= 0 ? g->bandit.name[k] : "");
    g->cfg.model = g->model_now[0] ? g->model_now : NULL;
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
                         .generator = lg_generator(prow.family)};
    if (!st && g->bandit.n > 1)
        lg_pick_model(g, call->db, call->run_id);
    lg_run_view rv;
    lg_run_view_get(g, call->db, call->run_id, nd->cand_id, &rv);
    if (!st)
        st = lg_call(g, &gp, sib, nsib, &rv, call->best, call->k, err);
    lg_run_view_release(&rv);
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
    /* several models: the one asked (the bandit reads it back); one: the name the server gave */
    snprintf(gr->model, sizeof gr->model, "%s",
             g->bandit.n > 1 ? g->model_now : r->model ? r->model : g->rl.model);
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

/* Whether two sources hold the same code: the same text once comments and
 * blanks are gone (kevo_prompt_source_view, then every space, tab and
 * newline).  1 same, 0 different, -1 out of memory. */
static int lg_same_code(const char *a, const char *b)
{
    char *va = kevo_prompt_source_view(a), *vb = kevo_prompt_source_view(b);
    int same = -1;
    if (va && vb) {
        const char *x = va, *y = vb;
        for (;;) {
            while (*x == ' ' || *x == '\t' || *x == '\n' || *x == '\r')
                x++;
            while (*y == ' ' || *y == '\t' || *y == '\n' || *y == '\r')
                y++;
            if (*x != *y || !*x)
                break;
            x++;
            y++;
        }
        same = *x == *y;
    }
    free(va);
    free(vb);
    return same;
}

/* A reply's code: code block + plan block, or SEARCH/REPLACE against the
 * parent's source or, when a block is not found there, against the base of
 * the compacted view the prompt showed (kevo_prompt_compact: the same code
 * without comments and dead branches, headers in full; edits made there
 * apply to that base, a valid source of its own).  A whole source that uses
 * the parent's shared headers without holding them gets them put in front.
 * KEVO_ERR_PARSE with perr's message when it gives none; KEVO_ERR_NOMEM. */
static kevo_status lg_parse(lg_gen *g, const char *content, kevo_llm_parsed *p, kevo_err *perr)
{
    kevo_err_clear(perr);
    kevo_status pst = kevo_llm_parse_reply(content, g->parent_source, g->parent_space, p, perr);
    char *edited = NULL; /* the compacted base, when the edits applied to it */
    if (pst == KEVO_ERR_PARSE && strstr(perr->msg, "SEARCH block") && strstr(perr->msg, " matches ")) {
        char *shown = NULL, *base = NULL;
        kevo_err verr;
        kevo_err_clear(&verr);
        if (kevo_prompt_compact(g->parent_source, g->parent_params, &shown, &base, &verr) == KEVO_OK &&
            strcmp(base, g->parent_source) != 0 &&
            kevo_llm_parse_reply(content, base, g->parent_space, p, &verr) == KEVO_OK) {
            pst = KEVO_OK;
            edited = base;
            base = NULL;
        }
        free(shown);
        free(base);
    }
    if (pst == KEVO_OK && p->nedits > 0) {
        int same = lg_same_code(p->source, edited ? edited : g->parent_source);
        if (same) {
            kevo_llm_parsed_free(p);
            pst = same < 0 ? kevo_err_set(perr, KEVO_ERR_NOMEM, "out of memory")
                           : kevo_err_set(perr, KEVO_ERR_PARSE, "the edits change only comments or blanks: the "
                                                                "parent's code is left as it was");
        }
    }
    free(edited);
    if (pst == KEVO_OK && p->nedits == 0) {
        char *headers = kevo_prompt_headers_for(g->parent_source, p->source);
        char *whole = headers ? malloc(strlen(headers) + strlen(p->source) + 1) : NULL;
        if (headers && !whole) {
            free(headers);
            kevo_llm_parsed_free(p);
            return kevo_err_set(perr, KEVO_ERR_NOMEM, "out of memory");
        }
        if (whole) {
            strcpy(whole, headers);
            strcat(whole, p->source);
            free(p->source);
            p->source = whole;
        }
        free(headers);
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
    out->fail = kevo_llm_admit_text(space, p->source, g->o.inputs, g->o.ninputs, g->o.outputs, g->o.noutputs,
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
        out->fail = KEVO_FAIL_GEN_ERROR;
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
static kevo_status lg_restore(kevo_db *db, const kevo_cand_row *row, const kevo_op *op, const char *arch,
                              kevo_space **out, bool *mine, kevo_err *err)
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
        st = kevo_llm_admit(&g, row->family, op, arch, out, err);
    kevo_generation_row_release(&g);
    return st;
}

const kevo_generator kevo_gen_llm = {
    .name = "llm",
    .summary = "an LLM rewrites a parent's source and launch plan (one call in flight, --llm-url)",
    .move = "llm",
    .label = "the LLM",
    .budgeted = true,
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
