/* tune.c — the tuning loop and the per-candidate pipeline.
 *
 *   policy proposes a batch -> render each source and plan -> compile the
 *   batch in child processes (cubins cached in the DB by key) -> verify and
 *   time each on the GPU worker -> one transaction per result -> the policy
 *   sees the fitness -> until the budget or the space is spent.
 */
#define _POSIX_C_SOURCE 200809L
#include "search/tune.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <errno.h>

#include "db/report.h"
#include "db/store.h"
#include "evaluator/compile.h"
#include "evaluator/gpu.h"
#include "evaluator/mpi.h"
#include "kernels/op.h"
#include "search/dist.h"
#include "search/gen.h"
#include "search/model.h"
#include "search/search.h"
#include "templates/space.h"
#include "util/stats.h"
#include "util/util.h"

#define TN_ALL_MAPS ((1u << KEVO_MAP_SORTED) | (1u << KEVO_MAP_UNEVEN) | (1u << KEVO_MAP_SHUFFLED))

void kevo_tune_opts_init(kevo_tune_opts *o)
{
    memset(o, 0, sizeof *o);
    o->op = kevo_op_list(NULL)[0]->name;
    o->dtype = "fp16";
    o->arch = "sm_90a";
    o->policy = "greedy";
    o->db_path = "kevo.db";
    o->budget = 60;
    o->seed = 1;
    o->batch = KEVO_TUNE_BATCH;
    o->ahead = KEVO_TUNE_AHEAD;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = n > 0 ? (int)n : 1;
    o->compile_timeout = 300;
    o->eval_timeout = 120;
    o->warmup = 5;
    o->reps = 30;
    o->maps = TN_ALL_MAPS;
    o->generators = "template";
    o->llm_temperature = NAN;
    o->llm_seed = -1;
    o->llm_budget = 10;
    o->llm_max_tokens = 8192;
    o->llm_timeout = 600;
    o->llm_retries = 4;
    o->llm_prompt_chars = 96 * 1024;
}

void kevo_verify_opts_init(kevo_verify_opts *o)
{
    memset(o, 0, sizeof *o);
    o->db_path = "kevo.db";
    o->maps = TN_ALL_MAPS;
    o->warmup = 5;
    o->reps = 30;
    o->eval_timeout = 120;
    o->compile_timeout = 300;
    o->seed = 7;
}

/* What a run (or a verification) works in. */
#define TN_MAX_DEV 64 /* GPUs of a run: this process's and, under --mpi, the other ranks' */

typedef struct tn_env {
    const kevo_op *op;
    kevo_syms shape;
    char shape_txt[256];
    kevo_dtype dt;
    char arch[16];
    kevo_limits lim;
    char *abi;         /* the op's ABI header text */
    /* the names of the op's tensors kernels read and write (the LLM source check) */
    const char *inputs[KEVO_OP_MAX_FIELDS], *outputs[KEVO_OP_MAX_FIELDS];
    int ninputs, noutputs;
    char kernels_dir[PATH_MAX];
    kevo_space **spaces;
    int nspaces;
    kevo_db *db;
    kevo_gpu *gpu;
    kevo_gpu_info info;
    int jobs;
    double compile_timeout;
    kevo_mpi *mpi;     /* compiles spread over MPI ranks; NULL: here */
    /* the GPUs evaluating at once (--devices): worker k is gpu for k = 0 and
     * dgpu[k] after it, each with its own info (peers, ceilings); ord[k] its
     * ordinal; run_devices.idx of worker k is dev_base + k.  A distribution
     * has no dgpu: its shape i is evaluated on GPU i mod ndev (xgpu below) */
    int ndev;
    int ord[TN_MAX_DEV];
    kevo_gpu *dgpu[KEVO_GPU_MAX_DEVICES];
    kevo_gpu_info dinfo[TN_MAX_DEV];
    /* under --mpi: the other ranks' GPUs, devices ndev .. ndev + nrem - 1 of
     * the run (their ord and dinfo too); each evaluates through e->mpi */
    kevo_mpi_gpu *rgpu;
    int nrem;
    char dlabel[TN_MAX_DEV][48]; /* how progress lines name each device ("GPU 1", "rank 2 GPU 0") */
    int dev_base;
    double loop_t0;    /* kv_now() when the search loop began: the devices' throughput */
    /* a distribution run (--shapes): its shapes (0 is `shape` above), the
     * workers of shapes 1.. (0 is `gpu`) and each shape's peers as stored
     * with the run; NULL for a one-shape run */
    kevo_dist *dist;
    kevo_gpu *xgpu[KEVO_DIST_MAX];
    kevo_run_shape *peers;
    kevo_peer_set *speers; /* [KEVO_DIST_MAX] a distribution's peers per shape (0: run_peers) */
    /* the run's peers at its (first) shape on its first GPU, as stored: a
     * resumed run keeps the figures it measured first */
    kevo_peer_set run_peers;
    /* LLM candidates' one-point spaces met so far (owned) */
    kevo_space **llm;
    int nllm, llm_cap;
    kevo_event_fn on_event; /* the caller's events (warnings, traces); NULL: none */
    void *event_ctx;
} tn_env;

/* One candidate on its way through the pipeline. */
typedef struct tn_work {
    int family;
    const kevo_space *space;
    kevo_config cfg;
    kv_buf source;
    char source_hash[65];
    kevo_plan plan;
    kevo_compile_job job;
    int node;
    int64_t cand_id;
} tn_work;

static void tn_env_release(tn_env *e)
{
    kevo_gpu_stop(e->gpu);
    e->gpu = NULL;
    for (int k = 1; k < KEVO_GPU_MAX_DEVICES; k++) {
        kevo_gpu_stop(e->dgpu[k]);
        e->dgpu[k] = NULL;
    }
    free(e->rgpu);
    e->rgpu = NULL;
    e->nrem = 0;
    for (int i = 0; i < KEVO_DIST_MAX; i++) {
        kevo_gpu_stop(e->xgpu[i]);
        e->xgpu[i] = NULL;
    }
    free(e->dist);
    e->dist = NULL;
    free(e->peers);
    e->peers = NULL;
    free(e->speers);
    e->speers = NULL;
    kevo_spaces_free(e->spaces, e->nspaces);
    e->spaces = NULL;
    kevo_spaces_free(e->llm, e->nllm);
    e->llm = NULL;
    e->nllm = e->llm_cap = 0;
    free(e->abi);
    e->abi = NULL;
    kevo_db_close(e->db);
    e->db = NULL;
}

/* Op, shape, dtype, arch, the op's files and template families. */
static kevo_status tn_env_open(tn_env *e, const char *op, const char *shape, const char *dtype, const char *arch,
                               const char *data_dir, const char *extra_templates, kevo_err *err)
{
    memset(e, 0, sizeof *e);
    e->op = kevo_op_find(op);
    if (!e->op) {
        char known[256];
        kevo_op_names(known, sizeof known);
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%s' (known: %s)", op, known);
    }
    e->ninputs = kevo_op_tensor_names(e->op, false, e->inputs, KEVO_OP_MAX_FIELDS);
    e->noutputs = kevo_op_tensor_names(e->op, true, e->outputs, KEVO_OP_MAX_FIELDS);
    kevo_status st = e->op->parse_shape(shape, &e->shape, err);
    if (st)
        return st;
    e->op->shape_str(&e->shape, e->shape_txt, sizeof e->shape_txt);
    if (!kevo_dtype_parse(dtype, &e->dt))
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown dtype '%s' (fp16 or bf16)", dtype);
    if ((st = kevo_limits_for_arch(arch, &e->lim, err)))
        return st;
    snprintf(e->arch, sizeof e->arch, "%s", arch);
    if (strlen(data_dir) + 64 >= sizeof e->kernels_dir)
        return kevo_err_set(err, KEVO_ERR_ARG, "the data folder's path is longer than %zu characters",
                            sizeof e->kernels_dir - 64);
    char path[PATH_MAX + 64];
    snprintf(e->kernels_dir, sizeof e->kernels_dir, "%s/kernels", data_dir);
    snprintf(path, sizeof path, "%s/%s", e->kernels_dir, e->op->abi_header);
    if ((st = kv_read_file(path, &e->abi, NULL, err)))
        return st;
    snprintf(path, sizeof path, "%s/templates", data_dir);
    return kevo_spaces_load_dirs(path, extra_templates, e->op->name, &e->spaces, &e->nspaces, err);
}

/* An output never replaces an input: the run's DB is none of the files it
 * reads (a family's space file or source, the op's ABI header, a prompt),
 * compared by device and inode.  KEVO_ERR_ARG naming the file. */
static kevo_status tn_db_not_input(const tn_env *e, const char *db, const char *prompts_dir, kevo_err *err)
{
    struct stat st;
    if (!db || stat(db, &st) != 0)
        return KEVO_OK; /* a new file is nobody's input */
    char path[PATH_MAX + 320];
    for (int i = 0; i < e->nspaces; i++) {
        const kevo_space *sp = e->spaces[i];
        char dir[PATH_MAX];
        kv_dirname(sp->path ? sp->path : "", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s", dir, sp->source_name ? sp->source_name : "");
        if (kv_same_file(db, sp->path) || kv_same_file(db, path))
            return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is a file of template family %s: kevo never writes "
                                "over an input", db, sp->family);
    }
    snprintf(path, sizeof path, "%s/%s", e->kernels_dir, e->op->abi_header);
    if (kv_same_file(db, path))
        return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is the op's ABI header: kevo never writes over an input",
                            db);
    for (int k = 0; prompts_dir && k < 2; k++) {
        snprintf(path, sizeof path, k ? "%s/ops/%s.md" : "%s/system.md", prompts_dir, e->op->name);
        if (k == 0)
            snprintf(path, sizeof path, "%s/system.md", prompts_dir);
        if (kv_same_file(db, path))
            return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is a prompt file: kevo never writes over an input", db);
    }
    return KEVO_OK;
}

/* Whether family is one of the comma list (every family when list is NULL). */
static bool tn_family_listed(const char *list, const char *family)
{
    if (!list)
        return true;
    char pat[80];
    snprintf(pat, sizeof pat, ",%s,", family);
    kv_buf l;
    kv_buf_init(&l);
    kv_buf_printf(&l, ",%s,", list);
    bool in = l.data && strstr(l.data, pat) != NULL;
    kv_buf_release(&l);
    return in;
}

/* Keep the families named in `list` (all when NULL) that support arch and
 * shape; say why each other one is left out.  strict (one new run on one
 * arch): a family the list names that does not target the arch is a usage
 * error (KEVO_ERR_ARG), as is an arch no family of the op targets. */
static kevo_status tn_select_families(tn_env *e, const char *list, bool quiet, bool strict, kevo_err *err)
{
    if (e->nspaces == 0)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED,
                            "op '%s' has no template family yet (no space file under templates/ names it)",
                            e->op->name);
    if (list && !*list)
        return kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is empty (name at least one family)");
    if (list) {
        /* every name must exist */
        char *buf = kv_strdup(list);
        if (!buf)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (!kevo_spaces_find(e->spaces, e->nspaces, tok)) {
                kevo_err_set(err, KEVO_ERR_ARG, "unknown template family '%.100s' for op '%s'", tok, e->op->name);
                free(buf);
                return KEVO_ERR_ARG;
            }
        free(buf);
    }
    for (int i = 0; strict && list && i < e->nspaces; i++) {
        const kevo_space *s = e->spaces[i];
        if (!tn_family_listed(list, s->family) || kevo_space_has_arch(s, e->arch))
            continue;
        kv_buf a;
        kv_buf_init(&a);
        for (int k = 0; k < s->narchs; k++)
            kv_buf_printf(&a, "%s%s", k ? ", " : "", s->archs[k]);
        kevo_err_set(err, KEVO_ERR_ARG, "--family %s does not target %s (it targets %s)", s->family, e->arch,
                     a.data ? a.data : "nothing");
        kv_buf_release(&a);
        return KEVO_ERR_ARG;
    }
    int kept = 0, for_arch = 0, listed = 0;
    kevo_err why;
    for (int i = 0; i < e->nspaces; i++) {
        kevo_space *s = e->spaces[i];
        bool keep = tn_family_listed(list, s->family);
        listed += keep;
        for_arch += keep && !kevo_space_has_arch(s, e->arch);
        if (keep && !kevo_space_has_arch(s, e->arch)) {
            if (!quiet)
                kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0, "family '%s' does not target %s; left out",
                        s->family, e->arch);
            keep = false;
        }
        for (int k = 0; keep && k < (e->dist ? e->dist->n : 1); k++)
            if (kevo_space_supports(s, e->dist ? &e->dist->shape[k] : &e->shape, &e->lim, e->dt, &why)) {
                if (!quiet)
                    kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0, "%s%s%s; left out", why.msg,
                            e->dist ? " at " : "", e->dist ? e->dist->text[k] : "");
                keep = false;
            }
        if (keep)
            e->spaces[kept++] = s;
        else
            kevo_space_free(s);
    }
    e->nspaces = kept;
    if (kept == 0 && strict && listed > 0 && for_arch == listed) /* the arch, not the shape */
        return kevo_err_set(err, KEVO_ERR_ARG, "no template family of op '%s' targets %s (--arch)", e->op->name,
                            e->arch);
    if (kept == 0)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "no template family of op '%s' supports %s at %s",
                            e->op->name, e->arch, e->shape_txt);
    return KEVO_OK;
}

/* Fill a compile job from a cache row. */
static void tn_job_from_row(kevo_compile_job *j, kevo_binary_row *b)
{
    j->cached = true;
    j->cubin = b->cubin;
    j->cubin_size = b->cubin_size;
    j->log = b->log;
    b->cubin = NULL;
    b->log = NULL;
    kevo_fail f = KEVO_FAIL_NONE;
    if (b->fail[0])
        kevo_fail_parse(b->fail, &f);
    j->fail = f;
    j->regs = b->regs;
    j->spill_bytes = b->spill_bytes;
    j->smem_static = b->smem_static;
    j->stack_bytes = b->stack_bytes;
    j->seconds = b->compile_s;
}

/* Store a fresh compile result (and its source) in the cache.  Timeouts are
 * not cached: they depend on the machine's load. */
static kevo_status tn_cache_put(tn_env *e, const kevo_compile_job *j, const char *source_hash, kevo_err *err)
{
    if (j->cached || j->fail == KEVO_FAIL_COMPILE_TIMEOUT)
        return KEVO_OK;
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    snprintf(b.key, sizeof b.key, "%s", j->key);
    snprintf(b.arch, sizeof b.arch, "%s", j->arch);
    kevo_nvrtc_version(b.nvrtc_version, sizeof b.nvrtc_version);
    snprintf(b.source_hash, sizeof b.source_hash, "%s", source_hash);
    kv_buf opts;
    kv_buf_init(&opts);
    for (int i = 0; i < j->nopts; i++)
        kv_buf_printf(&opts, "%s%s", i ? "\n" : "", j->opts[i]);
    b.options = opts.data;
    b.cubin = j->cubin;
    b.cubin_size = j->cubin_size;
    b.log = j->log;
    snprintf(b.fail, sizeof b.fail, "%s", j->fail == KEVO_FAIL_NONE ? "" : kevo_fail_name(j->fail));
    b.regs = j->regs;
    b.spill_bytes = j->spill_bytes;
    b.smem_static = j->smem_static;
    b.stack_bytes = j->stack_bytes;
    b.compile_s = j->seconds;
    kevo_status st = kevo_db_binary_put(e->db, &b, err);
    kv_buf_release(&opts);
    return st;
}

/* The DB cache's binary for a prepared candidate, if it holds one (a
 * candidate whose plan failed is cached already: nothing to compile). */
static void tn_cache_get(tn_env *e, tn_work *w)
{
    kevo_binary_row b;
    kevo_binary_row_init(&b);
    if (e->db && !w->job.cached && kevo_db_binary_get(e->db, w->job.key, &b, NULL) == KEVO_OK)
        tn_job_from_row(&w->job, &b);
    kevo_binary_row_release(&b);
}

/* A compiled candidate's source and binary into the DB's cache (a
 * read-only DB keeps nothing).  Errors: the DB's. */
static kevo_status tn_cache_store(tn_env *e, const tn_work *w, kevo_err *err)
{
    if (!e->db || kevo_db_readonly(e->db))
        return KEVO_OK;
    kevo_status st = kevo_db_source_put(e->db, w->source_hash, w->source.data, err);
    return st ? st : tn_cache_put(e, &w->job, w->source_hash, err);
}

/* Compile (or fetch from the cache) every job of a batch. */
static kevo_status tn_compile(tn_env *e, tn_work *w, int n, kevo_err *err)
{
    kevo_compile_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        tn_cache_get(e, &w[i]);
        jobs[i] = w[i].job;
    }
    kevo_status st = e->mpi ? kevo_mpi_compile(e->mpi, jobs, n, e->jobs, e->compile_timeout, err)
                            : kevo_compile_run(jobs, n, e->jobs, e->compile_timeout, err);
    for (int i = 0; i < n; i++)
        w[i].job = jobs[i];
    free(jobs);
    for (int i = 0; i < n && !st; i++)
        st = tn_cache_store(e, &w[i], err);
    return st;
}

/* Render, plan and key one candidate.  A plan that does not evaluate for
 * this configuration (division by zero, a dimension out of range) is the
 * candidate's failure, not an error: the job comes back failed
 * (KEVO_FAIL_PLAN_ERROR, cached so nothing compiles) with the reason. */
static kevo_status tn_prepare(tn_env *e, const kevo_space *sp, int family, const kevo_config *cfg, tn_work *w,
                              kevo_err *err)
{
    memset(w, 0, sizeof *w);
    w->family = family;
    w->space = sp;
    w->cfg = *cfg;
    kv_buf_init(&w->source);
    kevo_status st = kevo_space_render(w->space, cfg, e->dt, e->abi, &w->source, err);
    if (st)
        return st;
    const void *bufs[] = {w->source.data};
    size_t lens[] = {w->source.len};
    kv_sha256_hex(bufs, lens, 1, w->source_hash);
    kevo_err perr;
    kevo_err_clear(&perr);
    st = kevo_space_plan(w->space, &e->shape, &e->lim, e->dt, cfg, &w->plan, &perr);
    if (st == KEVO_ERR_NOMEM)
        return kevo_err_set(err, st, "%s", perr.msg);
    if (st) {
        memset(&w->plan, 0, sizeof w->plan);
        w->job.cached = true;
        w->job.fail = KEVO_FAIL_PLAN_ERROR;
        w->job.regs = w->job.spill_bytes = w->job.smem_static = w->job.stack_bytes = -1;
        w->job.seconds = NAN;
        kv_buf m;
        kv_buf_init(&m);
        kv_buf_printf(&m, "launch plan: %s", perr.msg);
        w->job.log = kv_buf_take(&m);
        return KEVO_OK;
    }
    if ((st = kevo_compile_job_init(&w->job, w->space->source_name, w->source.data, e->arch, err)))
        return st;
    kevo_compile_key(&w->job);
    return KEVO_OK;
}

/* Keep an LLM candidate's space (owned by e from now on).  false when out
 * of memory (the space is freed). */
static bool tn_llm_keep(tn_env *e, kevo_space *sp)
{
    if (e->nllm == e->llm_cap) {
        int cap = e->llm_cap ? 2 * e->llm_cap : 16;
        kevo_space **a = realloc(e->llm, (size_t)cap * sizeof *a);
        if (!a) {
            kevo_space_free(sp);
            return false;
        }
        e->llm = a;
        e->llm_cap = cap;
    }
    e->llm[e->nllm++] = sp;
    return true;
}

/* The space of a stored candidate: its template family, or the one-point
 * space its LLM generation stored (loaded once, kept in e), admitted again
 * as a fresh reply would be (kevo_gen_llm_admit: the DB is untrusted).
 * *out NULL with KEVO_OK for an LLM candidate that has no source (an
 * llm_error or parse_error row).  Errors: KEVO_ERR_NOT_FOUND for a family
 * that is not loaded, KEVO_ERR_PARSE for a stored candidate refused. */
static kevo_status tn_space_of(tn_env *e, const kevo_cand_row *row, const kevo_space **out, kevo_err *err)
{
    *out = kevo_spaces_find(e->spaces, e->nspaces, row->family);
    if (*out)
        return KEVO_OK;
    *out = kevo_spaces_find(e->llm, e->nllm, row->family);
    if (*out)
        return KEVO_OK;
    if (strncmp(row->family, "llm_call", 8) == 0) /* a call that gave nothing to compile (or was refused) */
        return KEVO_OK;
    kevo_generation_row g;
    kevo_err e2;
    if (!e->db || kevo_db_generation_get(e->db, row->id, &g, &e2) != KEVO_OK)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "candidate %lld is of family '%s', which is not loaded",
                            (long long)row->id, row->family);
    kevo_status st = KEVO_OK;
    if (g.source && g.space) {
        /* admitted again as a fresh reply is (static check, hash, plan) before anything of it compiles;
         * the arch is checked by the callers that need it */
        kevo_space *sp = NULL;
        st = kevo_gen_llm_admit(&g, row->family, e->op, NULL, &sp, err);
        if (!st && !tn_llm_keep(e, sp))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        if (!st)
            *out = sp;
    }
    kevo_generation_row_release(&g);
    return st;
}

static void tn_work_release(tn_work *w)
{
    kv_buf_release(&w->source);
    kevo_compile_job_release(&w->job);
}

/* Start writing each family's precompiled header (evaluator/compile.c) now,
 * so that it is ready when the first round compiles (a first lce_ws compile
 * without one takes ~2.5 s instead of ~1 s).  Best effort: a family whose
 * prelude cannot be rendered just compiles without. */
static void tn_pch_prepare(const tn_env *e)
{
    for (int i = 0; i < e->nspaces; i++) {
        kv_buf pre;
        kv_buf_init(&pre);
        kevo_err err;
        kevo_compile_job job;
        if (!kevo_space_render_prelude(e->spaces[i], &pre, &err) && pre.len > 0 &&
            !kevo_compile_job_init(&job, e->spaces[i]->source_name, pre.data, e->arch, &err)) {
            kevo_compile_pch_prepare(&job);
            if (e->mpi && kevo_mpi_rank(e->mpi) == 0 && kevo_mpi_compile_prepare(e->mpi, &job, &err))
                kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0,
                        "the other MPI ranks write %s's precompiled header at its first job: %s",
                        e->spaces[i]->family, err.msg);
        }
        kv_buf_release(&pre);
    }
}

/* The op's reference module for the dtype, through the cache. */
static kevo_status tn_ref_module(tn_env *e, tn_work *w, kevo_err *err)
{
    memset(w, 0, sizeof *w);
    kv_buf_init(&w->source);
    kevo_status st = kevo_op_ref_render(e->op, e->kernels_dir, e->dt, e->abi, &w->source, err);
    if (st)
        return st;
    if ((st = kevo_compile_job_init(&w->job, e->op->ref_name, w->source.data, e->arch, err)))
        return st;
    const void *bufs[] = {w->source.data};
    size_t lens[] = {w->source.len};
    kv_sha256_hex(bufs, lens, 1, w->source_hash);
    kevo_compile_key(&w->job);
    if ((st = tn_compile(e, w, 1, err)))
        return st;
    if (w->job.fail != KEVO_FAIL_NONE)
        return kevo_err_set(err, KEVO_ERR_NVRTC, "the reference module '%s' did not compile for %s: %.400s",
                            e->op->ref_name, e->arch, w->job.log ? w->job.log : "");
    return KEVO_OK;
}

/* The worker configuration of one shape of the run. */
static kevo_gpu_config tn_gpu_config(const tn_env *e, const tn_work *ref, const kevo_syms *shape, int device,
                                     int warmup, int reps, double timeout, uint64_t seed, bool baseline,
                                     bool ceilings)
{
    kevo_gpu_config gc;
    memset(&gc, 0, sizeof gc);
    gc.op = e->op;
    gc.shape = *shape;
    gc.dtype = e->dt;
    gc.device = device;
    gc.warmup = warmup;
    gc.reps = reps;
    gc.timeout_s = timeout;
    gc.seed = seed;
    gc.baseline = baseline;
    gc.ceilings = ceilings;
    gc.ref_cubin = ref->job.cubin;
    gc.ref_cubin_size = ref->job.cubin_size;
    return gc;
}

/* Worker k of the run's GPUs (0: e->gpu). */
static kevo_gpu *tn_dgpu(const tn_env *e, int k)
{
    return k == 0 ? e->gpu : e->dgpu[k];
}

/* The error for a device that is not of the run's arch exactly (a cubin
 * is loaded only on the architecture it was built for): KEVO_ERR_UNSUPPORTED
 * naming the device (who: "" or "rank 2's "), its compute capability, the
 * one the arch needs and the --arch for the device. */
static kevo_status tn_arch_mismatch(const tn_env *e, kevo_err *err, const char *who, const kevo_gpu_info *in)
{
    char fits[64];
    kevo_arch_names_for(in->cc_major, in->cc_minor, fits, sizeof fits);
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "%s%s (compute capability %d.%d) is not a %s device: code for %s "
                        "is loaded only on compute capability %d.%d%s%s", who, in->name, in->cc_major,
                        in->cc_minor, e->arch, e->arch, e->lim.sm / 10, e->lim.sm % 10,
                        fits[0] ? "; --arch for this device: " : "", fits);
}

/* A GPU of the run (who: "" or "rank 2's "): of the run's arch exactly
 * (tn_arch_mismatch otherwise), and the plans' limits narrowed to its SM
 * count and opt-in shared memory, so that one plan fits every GPU. */
static kevo_status tn_dev_fit(tn_env *e, const kevo_gpu_info *in, const char *who, kevo_err *err)
{
    if (!kevo_arch_runs_on(&e->lim, in->cc_major, in->cc_minor))
        return tn_arch_mismatch(e, err, who, in);
    if (in->max_smem_optin > 0 && in->max_smem_optin < e->lim.max_smem)
        e->lim.max_smem = in->max_smem_optin;
    if (in->sm_count > 0 && in->sm_count < e->lim.num_sms)
        e->lim.num_sms = in->sm_count;
    return KEVO_OK;
}

/* A DEBUG event with the worker's check of its cuBLAS reference against the
 * SIMT one, when it ran. */
static void tn_say_ref_check(const tn_env *e, const kevo_gpu_info *in)
{
    if (in->ref_check_against[0])
        kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_DEBUG, 0,
                "eval-reference cuBLAS against %s: rel_err %.3e, %.0f non-finite", in->ref_check_against,
                in->ref_check_rel_err, in->ref_check_nonfinite);
}

/* Start a worker with the reference module on each of the run's GPUs
 * (e->ord[0..ndev), their start-ups overlapping); fills e->info (the first
 * GPU's) and e->dinfo. */
static kevo_status tn_start_gpu(tn_env *e, const tn_work *ref, int warmup, int reps, double timeout,
                                uint64_t seed, bool baseline, bool ceilings, kevo_err *err)
{
    kevo_gpu_config gc[KEVO_GPU_MAX_DEVICES] = {0}; /* nw >= 1 fills what is read */
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
    /* a distribution's other GPUs get their workers with its other shapes (tn_start_shape_gpus) */
    const int nw = e->dist ? 1 : e->ndev;
    for (int k = 0; k < nw; k++) /* every further GPU times its own peers and ceilings */
        gc[k] = tn_gpu_config(e, ref, &e->shape, e->ord[k], warmup, reps, timeout, seed, baseline || k > 0,
                              ceilings || k > 0);
    kevo_status st = nw == 1 ? kevo_gpu_start(&gc[0], &g[0], &e->dinfo[0], err)
                             : kevo_gpu_start_many(gc, nw, g, e->dinfo, err);
    if (st)
        return st;
    for (int k = 0; k < nw; k++)
        tn_say_ref_check(e, &e->dinfo[k]);
    e->gpu = g[0];
    for (int k = 1; k < nw; k++)
        e->dgpu[k] = g[k];
    e->info = e->dinfo[0];
    /* the device's own limits replace the arch table's (the first GPU's: one plan serves all) */
    e->lim.num_sms = e->info.sm_count;
    if (e->info.max_smem_optin > 0)
        e->lim.max_smem = e->info.max_smem_optin;
    for (int k = 0; k < nw; k++) {
        kevo_status st = tn_dev_fit(e, &e->dinfo[k], "", err);
        if (st)
            return st;
    }
    return KEVO_OK;
}

/* Under --mpi (a one-shape GPU run): a GPU worker on every other rank,
 * each timing its own peers and ceilings, appended to the run's devices.
 * GPUs of another model than the first are refused unless mixed.  Errors:
 * kevo_mpi_gpus_start's, KEVO_ERR_ARG (models), KEVO_ERR_UNSUPPORTED. */
static kevo_status tn_remote_devices(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, bool mixed,
                                     kevo_err *err)
{
    kevo_wire_gpu_setup su;
    memset(&su, 0, sizeof su);
    snprintf(su.op, sizeof su.op, "%s", e->op->name);
    snprintf(su.shape, sizeof su.shape, "%s", e->shape_txt);
    snprintf(su.dtype, sizeof su.dtype, "%s", kevo_dtype_name(e->dt));
    su.warmup = o->warmup;
    su.reps = o->reps;
    su.timeout_s = o->eval_timeout;
    su.seed = o->seed;
    su.ref_cubin = ref->job.cubin;
    su.ref_cubin_size = ref->job.cubin_size;
    kevo_status st = kevo_mpi_gpus_start(e->mpi, &su, &e->rgpu, &e->nrem, err);
    if (st)
        return st;
    if (e->ndev + e->nrem > TN_MAX_DEV)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "%d GPUs: a run takes at most %d", e->ndev + e->nrem,
                            TN_MAX_DEV);
    for (int i = 0; i < e->nrem; i++) {
        int k = e->ndev + i;
        const kevo_gpu_info *in = &e->rgpu[i].info, *a = &e->dinfo[0];
        e->dinfo[k] = *in;
        e->ord[k] = e->rgpu[i].device;
        snprintf(e->dlabel[k], sizeof e->dlabel[k], "rank %d GPU %d", e->rgpu[i].rank, e->rgpu[i].device);
        if (!mixed && (strcmp(a->name, in->name) != 0 || a->sm_count != in->sm_count || a->cc_major != in->cc_major ||
                       a->cc_minor != in->cc_minor))
            return kevo_err_set(err, KEVO_ERR_ARG, "GPUs of different models: rank 0's is %s (%d SMs), rank %d's "
                                "(%s) %s (%d SMs); --mixed-devices evaluates on both, each with its own peers",
                                a->name, a->sm_count, e->rgpu[i].rank, e->rgpu[i].host, in->name, in->sm_count);
        char who[48];
        snprintf(who, sizeof who, "rank %d's ", e->rgpu[i].rank);
        if ((st = tn_dev_fit(e, in, who, err)))
            return st;
    }
    return KEVO_OK;
}

/* The GPUs of --devices ("all" or a comma list of ordinals; NULL: the one
 * of --device) into e->ord / e->ndev.  The list's form is checked before
 * any GPU is looked for; then the GPUs must exist and, unless mixed, be of
 * one model.  Errors: KEVO_ERR_ARG (the list, mixed models), what
 * kevo_gpu_list says (no driver, no GPU). */
static kevo_status tn_devices(tn_env *e, const char *list, bool mixed, int device, kevo_err *err)
{
    e->ndev = 1;
    e->ord[0] = device;
    if (!list)
        return KEVO_OK;
    bool all = strcmp(list, "all") == 0;
    int n = 0;
    if (!all) {
        const char *p = list;
        for (;;) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > 1024 || (*end != ',' && *end != '\0'))
                return kevo_err_set(err, KEVO_ERR_ARG, "--devices takes all or a comma list of device ordinals "
                                    "(0,1,...), not '%.80s'", list);
            if (n == KEVO_GPU_MAX_DEVICES)
                return kevo_err_set(err, KEVO_ERR_ARG, "--devices names more than %d GPUs", KEVO_GPU_MAX_DEVICES);
            for (int i = 0; i < n; i++)
                if (e->ord[i] == (int)v)
                    return kevo_err_set(err, KEVO_ERR_ARG, "--devices names GPU %ld twice", v);
            e->ord[n++] = (int)v;
            if (*end == '\0')
                break;
            p = end + 1;
        }
    }
    kevo_gpu_device dev[KEVO_GPU_MAX_DEVICES];
    int count = 0;
    kevo_status st = kevo_gpu_list(dev, KEVO_GPU_MAX_DEVICES, &count, err);
    if (st)
        return st;
    if (all) {
        n = count;
        for (int i = 0; i < n; i++)
            e->ord[i] = i;
    }
    for (int i = 0; i < n; i++)
        if (e->ord[i] >= count)
            return kevo_err_set(err, KEVO_ERR_NO_GPU, "no CUDA device %d (this machine has %d)", e->ord[i], count);
    for (int i = 1; i < n && !mixed; i++) {
        const kevo_gpu_device *a = &dev[e->ord[0]], *b = &dev[e->ord[i]];
        if (strcmp(a->name, b->name) != 0 || a->cc_major != b->cc_major || a->cc_minor != b->cc_minor ||
            a->sm_count != b->sm_count)
            return kevo_err_set(err, KEVO_ERR_ARG, "GPUs of different models: %d is %s (%d SMs), %d is %s (%d SMs); "
                                "--mixed-devices evaluates on both, each with its own peers",
                                a->ordinal, a->name, a->sm_count, b->ordinal, b->name, b->sm_count);
    }
    e->ndev = n;
    return KEVO_OK;
}

/* Every device's label, once they are known. */
static void tn_dev_labels(tn_env *e)
{
    for (int k = 0; k < e->ndev; k++)
        snprintf(e->dlabel[k], sizeof e->dlabel[k], "%sGPU %d", e->nrem > 0 ? "rank 0 " : "", e->ord[k]);
}

/* The worker of a distribution's shape i: shape 0's is the run's first. */
static kevo_gpu *tn_shape_gpu(const tn_env *e, int i)
{
    return i == 0 ? e->gpu : e->xgpu[i];
}

/* A worker's peers into the figures a run keeps: every peer that `kept`
 * has not measured yet (a new run, a resumed one that never measured it,
 * or a peer this kevo declares and the run's kevo did not) takes the
 * worker's; those measured first stay, so that a resumed run's vs_peer
 * keeps one denominator. */
static void tn_keep_peers(const kevo_op *op, kevo_peer_set *kept, const kevo_peer_set *measured)
{
    for (int i = 0; i < op->npeers && i < KEVO_MAX_PEERS; i++)
        if (kept->p[i].state == KEVO_PEER_UNMEASURED)
            kept->p[i] = measured->p[i];
}

/* Room for a distribution's shapes and their peers (each shape's all
 * unmeasured until its worker measures them). */
static kevo_status tn_alloc_shapes(tn_env *e, kevo_err *err)
{
    if (!e->peers && !(e->peers = calloc(KEVO_DIST_MAX, sizeof *e->peers)))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!e->speers) {
        if (!(e->speers = malloc(KEVO_DIST_MAX * sizeof *e->speers)))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; i < KEVO_DIST_MAX; i++)
            kevo_peer_set_init(&e->speers[i]);
    }
    return KEVO_OK;
}

/* A distribution run's shapes with their weights and peers, stored (a new
 * run) or completed (a resumed one keeps the peers it measured first):
 * shape 0's are the run's. */
static kevo_status tn_store_peers(tn_env *e, const kevo_run_row *run, kevo_err *err)
{
    kevo_status st = tn_alloc_shapes(e, err);
    for (int i = 0; !st && i < e->dist->n; i++) {
        kevo_run_shape *p = &e->peers[i];
        p->idx = i;
        snprintf(p->shape, sizeof p->shape, "%s", e->dist->text[i]);
        p->weight = e->dist->weight[i];
        p->flops = e->op->flops(&e->dist->shape[i]);
        p->bytes = e->op->bytes(&e->dist->shape[i], e->dt);
        if (i == 0)
            e->speers[0] = e->run_peers;
    }
    if (!st)
        st = kevo_db_run_shapes_put(e->db, run->id, e->peers, e->dist->n, err);
    for (int i = 1; !st && i < e->dist->n; i++)
        st = kevo_db_peers_put(e->db, run->id, i, 0, e->op, &e->speers[i], err);
    return st;
}

/* ---- progress output: events to the caller (kevo_tune_opts.on_event) ---- */

typedef struct tn_progress {
    kevo_event_fn fn; /* NULL: silent */
    void *ctx;
    int64_t budget;
    double t0;
} tn_progress;

/* Where the run stands (a PROGRESS event): done of the budget, best, what it does. */
static void tn_bar(tn_progress *p, int64_t done, double best, const char *what)
{
    if (!p->fn)
        return;
    kevo_event ev = {.kind = KEVO_EVENT_PROGRESS, .text = what, .device = -1, .done = done, .budget = p->budget,
                     .best = best > 0 ? best : 0, .elapsed_s = kv_now() - p->t0};
    p->fn(p->ctx, &ev);
}

/* A line of the run's account (a LINE event); lines about one candidate
 * name it in cand (0: none). */
#define tn_line(p, ...) kv_emit((p)->fn, (p)->ctx, KEVO_EVENT_LINE, 0, __VA_ARGS__)
#define tn_cand_line(p, cand, ...) kv_emit((p)->fn, (p)->ctx, KEVO_EVENT_LINE, (cand), __VA_ARGS__)

/* One line per peer of op in ps: its name, figure (or why it has none)
 * and label, the fastest checked one marked; an AFTER peer not yet
 * measured says when it will be. */
static void tn_say_peers(tn_progress *prog, const kevo_op *op, const kevo_peer_set *ps, const char *indent)
{
    int best = kevo_peer_best(op, ps, NULL);
    for (int i = 0; i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        const kevo_peer_fig *f = &ps->p[i];
        char fig[96];
        if (f->state == KEVO_PEER_OK)
            snprintf(fig, sizeof fig, "%.4f ms [%.4f, %.4f]", f->median_ms, f->ci_lo_ms, f->ci_hi_ms);
        else if (f->state == KEVO_PEER_UNMEASURED)
            snprintf(fig, sizeof fig, "%s",
                     op->peers[i].flags & KEVO_PEER_AFTER ? "measured after the search" : "not measured");
        else
            snprintf(fig, sizeof fig, "%s", f->state == KEVO_PEER_FAILED ? "FAILED its check" : "did not run");
        tn_line(prog, "%speer %s: %s, %s%s%s%s", indent, op->peers[i].name, fig, op->peers[i].label,
                f->detail[0] ? " | " : "", f->detail, i == best ? "  <- best" : "");
    }
}

/* Start the workers of a distribution's shapes 1.. (shape 0's is e->gpu),
 * each measuring its own shape's peers (the ceilings are the first
 * worker's).  Shape i's worker runs on GPU i mod ndev, so that every
 * candidate's time at a shape, and that shape's peers, come from one GPU;
 * with several GPUs they start in waves of one shape per GPU (peers timed
 * on one GPU at once would slow each other), and each GPU's first worker
 * gives its dinfo (fitted as tn_start_gpu's, with no peers of its own: a
 * distribution's peers are per shape).  Errors: kevo_gpu_start's, naming
 * the shape. */
static kevo_status tn_start_shape_gpus(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, tn_progress *prog,
                                       kevo_err *err)
{
    const int n = e->dist->n, nd = e->ndev;
    kevo_status ast = tn_alloc_shapes(e, err);
    if (ast)
        return ast;
    for (int w0 = 0; w0 < n; w0 += nd) {
        int first = w0 == 0 ? 1 : w0, cnt = (w0 + nd < n ? w0 + nd : n) - first;
        if (cnt <= 0)
            continue;
        kevo_gpu_config gc[KEVO_GPU_MAX_DEVICES];
        kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
        kevo_gpu_info in[KEVO_GPU_MAX_DEVICES];
        for (int j = 0; j < cnt; j++) {
            int i = first + j;
            if (nd > 1)
                tn_line(prog, "kevo: starting the GPU worker of shape %d of %d (%s) on %s", i + 1, n,
                        e->dist->text[i], e->dlabel[i % nd]);
            else
                tn_line(prog, "kevo: starting the GPU worker of shape %d of %d (%s)", i + 1, n, e->dist->text[i]);
            gc[j] = tn_gpu_config(e, ref, &e->dist->shape[i], e->ord[i % nd], o->warmup, o->reps, o->eval_timeout,
                                  o->seed, true, false);
        }
        kevo_status st = cnt == 1 ? kevo_gpu_start(&gc[0], &g[0], &in[0], err)
                                  : kevo_gpu_start_many(gc, cnt, g, in, err);
        if (st) {
            if (cnt == 1)
                kevo_err_prefix(err, "shape %s", e->dist->text[first]);
            else
                kevo_err_prefix(err, "shapes %d to %d of %d", first + 1, first + cnt, n);
            return st;
        }
        for (int j = 0; j < cnt; j++) {
            int i = first + j;
            tn_say_ref_check(e, &in[j]);
            e->xgpu[i] = g[j];
            tn_keep_peers(e->op, &e->speers[i], &in[j].peers);
            if (i < nd) {
                e->dinfo[i] = in[j];
                kevo_peer_set_init(&e->dinfo[i].peers);
                if ((st = tn_dev_fit(e, &e->dinfo[i], "", err)))
                    return st;
            }
        }
    }
    return KEVO_OK;
}

/* First line of a log, for one-line messages. */
static void tn_first_line(const char *s, char *out, size_t n)
{
    if (!s) {
        snprintf(out, n, "(no message)");
        return;
    }
    /* skip ptxas info lines; NVRTC errors carry "error" */
    const char *e = strstr(s, "error");
    const char *start = s;
    if (e) {
        while (e > s && e[-1] != '\n')
            e--;
        start = e;
    }
    size_t len = strcspn(start, "\n");
    if (len >= n)
        len = n - 1;
    memcpy(out, start, len);
    out[len] = '\0';
}

/* One progress line for a finished candidate. */
static void tn_print_result(tn_progress *prog, const kevo_search *s, const tn_work *w, const kevo_cand_row *row,
                            int64_t done, int64_t budget, double best, bool compile_only, const char *gpu)
{
    char on[64] = ""; /* which GPU, when several evaluate */
    if (gpu)
        snprintf(on, sizeof on, " | %s", gpu);
    char cfgs[256];
    kevo_config_str(w->space, &w->cfg, cfgs, sizeof cfgs);
    const kevo_node *nd = &s->nodes[w->node];
    char from[64] = "";
    if (nd->parent >= 0 && nd->parent2 >= 0)
        snprintf(from, sizeof from, " <-%s #%lld #%lld", nd->op, (long long)s->nodes[nd->parent].cand_id,
                 (long long)s->nodes[nd->parent2].cand_id);
    else if (nd->parent >= 0)
        snprintf(from, sizeof from, " <-%s #%lld", nd->op, (long long)s->nodes[nd->parent].cand_id);
    /* ptxas's warning that it serialized the wgmmas (C7514/C7515: a silent slowdown) */
    const char *warn = w->job.log && strstr(w->job.log, "wgmma.mma_async instructions are serialized")
                           ? " | ptxas: wgmma serialized"
                           : "";
    if (strcmp(row->status, "failed") == 0)
        tn_cand_line(prog, w->cand_id, "[%3lld/%lld] #%lld %s %s%s | FAILED %s: %s%s", (long long)done,
                     (long long)budget, (long long)w->cand_id, w->space->family, cfgs, from, row->fail,
                     row->fail_msg ? row->fail_msg : "", on);
    else if (compile_only)
        tn_cand_line(prog, w->cand_id,
                     "[%3lld/%lld] #%lld %s %s%s | compiled%s %.1f s, %d regs, %d B spill, %d KB smem%s",
                     (long long)done, (long long)budget, (long long)w->cand_id, w->space->family, cfgs, from,
                     w->job.cached ? " (cached)" : "", w->job.seconds, w->job.regs, w->job.spill_bytes,
                     row->smem_dynamic / 1024, warn);
    else if (s->nextra > 0) /* a distribution: its fitness is the weighted geometric mean of vs_peer */
        tn_cand_line(prog, w->cand_id,
                     "[%3lld/%lld] #%lld %s %s%s | first shape %.4f ms %.2fx peer | weighted geomean vs_peer %.2fx | "
                     "best %.2fx%s",
                     (long long)done, (long long)budget, (long long)w->cand_id, w->space->family, cfgs, from,
                     row->median_ms, row->vs_peer, row->fitness, best, warn);
    else
        tn_cand_line(prog, w->cand_id,
                     "[%3lld/%lld] #%lld %s %s%s | %.4f ms %5.2fx, %.2fx peer, %5.1f TFLOP/s, %2.0f%% roofline, "
                     "rel %.1e | best %.2fx%s%s",
                     (long long)done, (long long)budget, (long long)w->cand_id, w->space->family, cfgs, from,
                     row->median_ms, row->speedup, row->vs_peer, row->tflops, 100 * row->roofline, row->rel_err, best,
                     warn, on);
}

/* ---- figures of a timed candidate ---- */

#define TN_CROSS_DEVICE 0.05 /* with several GPUs, candidates within this of the fastest are re-timed on one */
/* Re-timed candidates within this of the leader are one kernel for the run's
 * answer: one H100 times a kernel 0.1-0.5% apart from run to run (two EPI
 * variants of lce_ws 0.1-0.4% apart were named best in turn by five runs of
 * one seed), so the best among them is the first in configuration order,
 * the same in every run that measures them, not the one the noise favoured
 * (greedy's GR_TIE is the same 1%). */
#define TN_EQUIV 0.01

/* The roofline floor, ms: max(FLOPs / measured GEMM peak, bytes / measured
 * copy bandwidth); NaN when neither ceiling was measured. */
static double tn_floor_ms(double flops, double bytes, double peak_tflops, double copy_tbps)
{
    double a = peak_tflops > 0 ? flops / (peak_tflops * 1e12) * 1e3 : NAN;
    double b = copy_tbps > 0 ? bytes / (copy_tbps * 1e12) * 1e3 : NAN;
    if (isnan(a))
        return b;
    return isnan(b) || a > b ? a : b;
}

/* A timed result's figures against one shape's peers. */
typedef struct tn_figs {
    double median_ms, ci_lo_ms, ci_hi_ms, speedup, vs_peer, roofline, tflops;
} tn_figs;

/* speedup over op's BASELINE peer in ps, vs_peer over its fastest OK peer
 * (NaN where none is OK). */
static tn_figs tn_figures(const kevo_gpu_result *res, uint64_t seed, const kevo_op *op, const kevo_peer_set *ps,
                          double flops, double bytes, double peak_tflops, double copy_tbps)
{
    tn_figs f;
    double best_ms = NAN;
    kevo_peer_best(op, ps, &best_ms);
    f.median_ms = res->median_ms;
    kv_median_ci(res->rep_ms, res->reps, seed, KV_BOOTSTRAP, &f.ci_lo_ms, &f.ci_hi_ms);
    f.speedup = kevo_peer_ok_ms(ps, kevo_op_peer_baseline(op)) / res->median_ms;
    f.vs_peer = best_ms / res->median_ms;
    f.roofline = tn_floor_ms(flops, bytes, peak_tflops, copy_tbps) / res->median_ms;
    f.tflops = flops / (res->median_ms * 1e-3) / 1e12;
    return f;
}

/* ---- tune ---- */

/* The evaluation request for a prepared candidate: its id, cubin and plan,
 * the maps to verify, whether to time, the inputs' seed. */
static kevo_gpu_request tn_request(const tn_work *w, int64_t id, unsigned maps, bool time, uint64_t seed)
{
    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    rq.candidate_id = id;
    rq.cubin = w->job.cubin;
    rq.cubin_size = w->job.cubin_size;
    rq.plan = w->plan;
    rq.maps = maps;
    rq.time = time;
    rq.seed = seed;
    return rq;
}

/* The request that verifies and times a compiled candidate at shape i of
 * the run (0: its shape; a distribution's others need their own plan).
 * Errors: kevo_space_plan's. */
static kevo_status tn_shape_request(const tn_env *e, const tn_work *w, int i, uint64_t seed, unsigned maps,
                                    kevo_gpu_request *rq, kevo_err *err)
{
    *rq = tn_request(w, w->cand_id, maps, true,
                     seed ^ (uint64_t)w->cand_id * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull);
    return i > 0 ? kevo_space_plan(w->space, &e->dist->shape[i], &e->lim, e->dt, &w->cfg, &rq->plan, err)
                 : KEVO_OK;
}

/* Verify and time a compiled candidate at the run's shapes (one, or a
 * distribution's) in order, up to and including the first that fails:
 * res[i] for i < *upto.  A distribution's shape i runs on GPU i mod ndev
 * (tn_start_shape_gpus): a GPU's shapes go in turn, the GPUs at once, and
 * once a shape fails no later one is started, so any number of GPUs gives
 * the results one GPU gives.  Errors: tn_shape_request's, kevo_gpu_submit's
 * and kevo_gpu_wait's. */
static kevo_status tn_eval_shapes(tn_env *e, const tn_work *w, uint64_t seed, unsigned maps, kevo_gpu_result *res,
                                  int *upto, kevo_err *err)
{
    const int n = e->dist ? e->dist->n : 1, nd = e->dist ? e->ndev : 1;
    int stop = n; /* shapes from here on are not evaluated: one before failed */
    kevo_status st = KEVO_OK;
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES]; /* the worker GPU k evaluates on, NULL when idle */
    int next[KEVO_GPU_MAX_DEVICES], on[KEVO_GPU_MAX_DEVICES], inflight = 0;
    for (int k = 0; k < nd; k++) {
        g[k] = NULL;
        next[k] = k;
        on[k] = -1;
    }
    kevo_gpu_result *r = malloc(sizeof *r);
    if (!r)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (;;) {
        for (int k = 0; k < nd && !st; k++) {
            if (on[k] >= 0 || next[k] >= stop)
                continue;
            int i = next[k];
            kevo_gpu_request rq;
            if (!(st = tn_shape_request(e, w, i, seed, maps, &rq, err)) &&
                !(st = kevo_gpu_submit(tn_shape_gpu(e, i), &rq, err))) {
                g[k] = tn_shape_gpu(e, i);
                on[k] = i;
                next[k] += nd;
                inflight++;
            }
        }
        if (st || inflight == 0)
            break;
        int which = -1;
        st = kevo_gpu_wait(g, nd, 1.0, &which, r, err);
        if (!st && which >= 0) {
            int i = on[which];
            res[i] = *r;
            g[which] = NULL;
            on[which] = -1;
            inflight--;
            if (res[i].fail != KEVO_FAIL_NONE && i + 1 < stop)
                stop = i + 1;
        }
    }
    free(r);
    *upto = stop;
    return st;
}

/* The peers and ceilings a result of GPU k is measured against: the run's
 * (as stored: a resumed run keeps its first figures) for the first GPU,
 * the GPU's own for the others (the run's where it checked none, and the
 * run's ceilings where it has none). */
static const kevo_peer_set *tn_dev_peers(const tn_env *e, const kevo_run_row *run, int k, double *peak_tflops,
                                         double *copy_tbps)
{
    const kevo_gpu_info *in = &e->dinfo[k];
    bool own = k > 0 && kevo_peer_best(e->op, &in->peers, NULL) >= 0;
    *peak_tflops = k > 0 && in->peak_tflops > 0 ? in->peak_tflops : run->peak_tflops;
    *copy_tbps = k > 0 && in->copy_tbps > 0 ? in->copy_tbps : run->copy_tbps;
    return own ? &in->peers : &e->run_peers;
}

/* A DEBUG event with where a candidate's evaluation spent its time in the
 * worker (kevo_gpu_result.phase_ms; bench/trace_idle.py reads the line),
 * when the worker sent it. */
static void tn_say_phases(const tn_env *e, int64_t cand, const kevo_gpu_result *res)
{
    const double *pm = res->phase_ms;
    if (!e->on_event || !(pm[KEVO_PHASE_ALL] > 0))
        return;
    char line[256];
    int len = snprintf(line, sizeof line, "eval-phases #%lld ms", (long long)cand);
    for (int k = 0; k < KEVO_GPU_PHASES && len > 0 && len < (int)sizeof line; k++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %s %.2f", kevo_gpu_phase_name((kevo_gpu_phase)k),
                        pm[k]);
    kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_DEBUG, cand, "%s", line);
}

/* Evaluate one prepared candidate and store its row (one transaction).
 * pre: its result at the run's shape, evaluated already on GPU dev in
 * eval_s seconds (tn_eval_batch); NULL: evaluated here, on the first GPU. */
static kevo_status tn_finish_one(tn_env *e, kevo_run_row *run, tn_work *w, bool compile_only, uint64_t seed,
                                 unsigned maps, const kevo_gpu_result *pre, int dev, double eval_s,
                                 double *fitness, kevo_cand_row *row, kevo_err *err)
{
    row->regs = w->job.regs;
    row->spill_bytes = w->job.spill_bytes;
    row->smem_static = w->job.smem_static;
    int smem_dyn = 0;
    for (int i = 0; i < w->plan.nlaunches; i++)
        if ((int)w->plan.launches[i].smem > smem_dyn)
            smem_dyn = (int)w->plan.launches[i].smem;
    row->smem_dynamic = smem_dyn;
    row->compile_s = w->job.seconds;
    snprintf(row->binary_key, sizeof row->binary_key, "%s", w->job.key);
    *fitness = 0.0;
    if (w->job.fail != KEVO_FAIL_NONE) {
        char line[300];
        tn_first_line(w->job.log, line, sizeof line);
        kevo_compile_log_scrub(&w->job, line, false); /* no toolkit path in what a prompt may quote */
        snprintf(row->status, sizeof row->status, "failed");
        snprintf(row->fail, sizeof row->fail, "%s", kevo_fail_name(w->job.fail));
        row->fail_msg = kv_strdup(line);
    } else if (compile_only) {
        snprintf(row->status, sizeof row->status, "compiled");
        *fitness = NAN;
    } else {
        int nsh = e->dist ? e->dist->n : 1, upto = 1;
        double vs[KEVO_DIST_MAX];
        row->fitness = 0.0;
        row->device = e->dev_base + (pre ? dev : 0);
        kevo_gpu_result *all = pre ? NULL : calloc((size_t)nsh, sizeof *all);
        if (!pre && !all)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        double t0 = kv_now();
        kevo_status st = pre ? KEVO_OK : tn_eval_shapes(e, w, seed, maps, all, &upto, err);
        row->eval_s = pre ? eval_s : kv_now() - t0;
        for (int i = 0; i < upto && !st; i++) {
            const kevo_gpu_result *res = pre ? pre : &all[i];
            tn_say_phases(e, w->cand_id, res);
            row->checks += res->checks;
            if (res->checks && !(row->rel_err >= res->rel_err))
                row->rel_err = res->rel_err;
            if (res->checks && !(row->max_abs_err >= res->max_abs_err))
                row->max_abs_err = res->max_abs_err;
            if (res->fail != KEVO_FAIL_NONE) {
                snprintf(row->status, sizeof row->status, "failed");
                snprintf(row->fail, sizeof row->fail, "%s", kevo_fail_name(res->fail));
                if (e->dist) {
                    kv_buf m;
                    kv_buf_init(&m);
                    kv_buf_printf(&m, "at %s: %s", e->dist->text[i], res->msg);
                    row->fail_msg = kv_buf_take(&m);
                } else {
                    row->fail_msg = kv_strdup(res->msg);
                }
                row->speedup = 0.0;
                row->fitness = 0.0;
                break;
            }
            const kevo_run_shape *pr = e->dist ? &e->peers[i] : NULL;
            double peak, copy;
            const kevo_peer_set *ps = tn_dev_peers(e, run, pre ? dev : 0, &peak, &copy);
            tn_figs f = tn_figures(res, (uint64_t)w->cand_id, e->op, pr ? &e->speers[i] : ps,
                                   pr ? pr->flops : run->flops, pr ? pr->bytes : run->bytes, peak, copy);
            vs[i] = f.vs_peer;
            if (i == 0) {
                snprintf(row->status, sizeof row->status, "ok");
                row->median_ms = f.median_ms;
                row->min_ms = res->min_ms;
                row->ci_lo_ms = f.ci_lo_ms;
                row->ci_hi_ms = f.ci_hi_ms;
                row->speedup = f.speedup;
                row->vs_peer = f.vs_peer;
                row->roofline = f.roofline;
                row->tflops = f.tflops;
            }
            if (e->dist) {
                kevo_shape_result sr = {.shape_idx = i, .median_ms = f.median_ms, .ci_lo_ms = f.ci_lo_ms,
                                        .ci_hi_ms = f.ci_hi_ms, .speedup = f.speedup, .vs_peer = f.vs_peer,
                                        .roofline = f.roofline, .rel_err = res->rel_err};
                st = kevo_db_shape_result_put(e->db, w->cand_id, &sr, err);
            }
            if (!st)
                st = kevo_db_timings_put(e->db, w->cand_id, i, "tune", res->rep_ms, res->reps, err);
            if (!st && res->passes > 1) { /* a pass was not steady: timed again, the lowest median kept */
                char name[32];
                snprintf(name, sizeof name, i ? "timing_passes_%d" : "timing_passes", i);
                st = kevo_db_measure_put(e->db, w->cand_id, name, res->passes, err);
            }
            /* one shape: the speedup (what --target and the landscapes read); a
             * distribution: the weighted geometric mean of vs_best_peer */
            if (i == nsh - 1)
                row->fitness = e->dist ? kevo_dist_geomean(e->dist, vs) : row->speedup;
        }
        free(all);
        if (st)
            return st;
        *fitness = row->fitness;
    }
    if (w->job.fail != KEVO_FAIL_NONE)
        row->fitness = 0.0;
    return kevo_db_cand_update(e->db, row, err);
}

/* The search loop's running state, shared by the ways a batch is finished. */
typedef struct tn_loop {
    kevo_run_row *run;
    const kevo_tune_opts *ro;
    kevo_search *s;
    tn_progress *prog;
    int64_t done, last_gain;
    double best;
} tn_loop;

/* Store one candidate's outcome (its row, one transaction), show it to the
 * search and print it.  pre, dev, eval_s: as tn_finish_one. */
static kevo_status tn_apply_one(tn_env *e, tn_loop *L, tn_work *w, const kevo_gpu_result *pre, int dev,
                                double eval_s, kevo_err *err)
{
    kevo_cand_row row;
    kevo_status st = kevo_db_cand_get(e->db, w->cand_id, &row, err);
    double fit = 0;
    if (!st) {
        st = kevo_db_begin(e->db, err);
        if (!st)
            st = tn_finish_one(e, L->run, w, L->ro->compile_only, L->ro->seed, L->ro->maps, pre, dev, eval_s, &fit,
                               &row, err);
        if (!st)
            st = kevo_db_commit(e->db, err);
        else
            kevo_db_rollback(e->db);
    }
    if (st) {
        kevo_cand_row_release(&row);
        return st;
    }
    kevo_search_observe(L->s, w->node, fit);
    L->done++;
    if (!isnan(fit) && fit > L->best) {
        L->best = fit;
        L->last_gain = L->done;
    }
    tn_print_result(L->prog, L->s, w, &row, L->done, L->ro->budget, L->best, L->ro->compile_only,
                    e->ndev + e->nrem > 1 && pre ? e->dlabel[dev] : NULL);
    kevo_cand_row_release(&row);
    return KEVO_OK;
}

/* The progress bar while a batch is evaluated on several GPUs: what each
 * GPU does. */
static void tn_bar_devices(tn_env *e, tn_loop *L, const int *on_gpu, int compiling)
{
    if (!L->prog->fn)
        return;
    char what[160];
    int len = snprintf(what, sizeof what, "compiling %d |", compiling);
    int busy = 0;
    for (int k = 0; k < e->ndev + e->nrem; k++)
        busy += on_gpu[k] >= 0;
    if (e->ndev + e->nrem > 4) /* many: a count */
        snprintf(what + len, sizeof what - (size_t)len, " %d of %d GPUs busy", busy, e->ndev + e->nrem);
    for (int k = 0; k < e->ndev + e->nrem && e->ndev + e->nrem <= 4 && len < (int)sizeof what - 40; k++)
        len += snprintf(what + len, sizeof what - (size_t)len, " %s %s", e->dlabel[k],
                        on_gpu[k] >= 0 ? "busy" : "idle");
    tn_bar(L->prog, L->done, L->best, what);
}

/* A TRACE event: every proposal, compile, submit, result and apply of the
 * loop with its time (seconds since the search loop began), to see where
 * GPUs wait (the CLI prints them under KEVO_TRACE_EVAL=1). */
static void tn_trace(const tn_env *e, const char *what, int64_t cand, int dev)
{
    if (!e->on_event)
        return;
    kevo_event ev = {.kind = KEVO_EVENT_TRACE, .text = what, .cand_id = cand, .device = dev,
                     .t = kv_now() - e->loop_t0};
    e->on_event(e->event_ctx, &ev);
}

/* ---- the rounds in flight ---- */

/* The candidates registered and not yet applied, in proposal order, over
 * every round in flight: positions [head, tail) of a ring of cap slots,
 * round k in flight ending at position rend[k] (oldest first).  With --ahead D the loop
 * proposes round j + D once round j is applied, so a one-shape GPU run
 * (stream) compiles the later rounds while the GPUs evaluate the earlier
 * ones: each compile starts as a slot frees (--jobs; under --mpi the
 * ranks' slots too), compiled candidates go in proposal order each to the
 * idle GPU that has waited longest (so every GPU takes work even when
 * compiles, not evaluations, hold the run back), and results are applied
 * in proposal order, so the search sees what one GPU would give it. */
enum { TN_COMPILE, TN_READY, TN_ON_GPU, TN_DONE };
typedef struct tn_pipe {
    tn_work *w;
    int *state, *dev;
    double *t0, *eval_s;
    kevo_gpu_result *res, *r; /* r: a wait's result */
    int cap;
    int64_t head, tail;
    int64_t next_compile; /* stream: the next position whose compile may start (local pool) or be queued (MPI);
                             else: the first not compiled */
    int64_t *rend;
    int nround;
    int64_t on_gpu[TN_MAX_DEV]; /* the position each device evaluates, -1 none */
    int64_t queued[TN_MAX_DEV]; /* a remote device's next position, sent to wait there behind on_gpu; -1 none */
    int64_t last_use[TN_MAX_DEV]; /* when each device last took a candidate (placement count), 0 never */
    int64_t placements;
    bool stream;
    kevo_compile_pool *pool; /* stream without other ranks */
    bool mpi;                /* stream with other ranks: kevo_mpi_compile_start is open */
    int compiling;           /* compiles started (local) or queued (MPI) and not done */
} tn_pipe;

static tn_work *tn_slot(const tn_pipe *P, int64_t pos)
{
    return &P->w[pos % P->cap];
}

/* Room for cap candidates in flight (and as many rounds).  Errors:
 * KEVO_ERR_NOMEM, the pool's or MPI's. */
static kevo_status tn_pipe_open(tn_env *e, tn_pipe *P, int cap, bool stream, kevo_err *err)
{
    memset(P, 0, sizeof *P);
    P->cap = cap;
    P->stream = stream;
    for (int k = 0; k < TN_MAX_DEV; k++)
        P->on_gpu[k] = P->queued[k] = -1;
    size_t c = (size_t)cap;
    P->w = calloc(c, sizeof *P->w);
    P->state = calloc(c, sizeof *P->state);
    P->dev = calloc(c, sizeof *P->dev);
    P->t0 = calloc(c, sizeof *P->t0);
    P->eval_s = calloc(c, sizeof *P->eval_s);
    P->res = calloc(c, sizeof *P->res);
    P->r = malloc(sizeof *P->r);
    P->rend = calloc(c, sizeof *P->rend);
    if (!P->w || !P->state || !P->dev || !P->t0 || !P->eval_s || !P->res || !P->r || !P->rend)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!stream)
        return KEVO_OK;
    if (kevo_mpi_size(e->mpi) > 1) {
        kevo_status st = kevo_mpi_compile_start(e->mpi, e->jobs, e->compile_timeout, err);
        P->mpi = !st;
        return st;
    }
    return kevo_compile_pool_new(e->jobs, &P->pool, err);
}

/* Ends the compiles still running (killed here, abandoned on other ranks)
 * and releases every candidate still in flight (they stay pending in the
 * DB, for --resume). */
static void tn_pipe_close(tn_env *e, tn_pipe *P)
{
    kevo_compile_pool_free(P->pool);
    if (P->mpi)
        kevo_mpi_compile_stop(e->mpi);
    for (int64_t p = P->head; P->w && p < P->tail; p++)
        tn_work_release(tn_slot(P, p));
    free(P->w);
    free(P->state);
    free(P->dev);
    free(P->t0);
    free(P->eval_s);
    free(P->res);
    free(P->r);
    free(P->rend);
    memset(P, 0, sizeof *P);
}

/* Take n registered candidates as the newest round: into the ring, their
 * binaries from the cache, their compiles queued under --mpi.  The ring
 * has room (the caller sizes it).  Errors: MPI's. */
static kevo_status tn_pipe_round_add(tn_env *e, tn_pipe *P, tn_work *w, int n, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n; i++) {
        int64_t p = P->tail++;
        *tn_slot(P, p) = w[i];
        memset(&w[i], 0, sizeof w[i]);
        tn_work *x = tn_slot(P, p);
        int k = (int)(p % P->cap);
        P->dev[k] = -1;
        P->eval_s[k] = 0;
        if (!P->stream)
            continue;
        tn_cache_get(e, x);
        P->state[k] = x->job.cached ? TN_READY : TN_COMPILE;
        if (P->mpi && !st && P->state[k] == TN_COMPILE) {
            st = kevo_mpi_compile_add(e->mpi, &x->job, err);
            P->compiling++;
        }
    }
    if (n > 0)
        P->rend[P->nround++] = P->tail;
    return st;
}

/* The oldest round is applied: forget it. */
static void tn_pipe_round_pop(tn_pipe *P)
{
    memmove(P->rend, P->rend + 1, (size_t)(P->nround - 1) * sizeof *P->rend);
    P->nround--;
}

/* The idle device that has waited longest (the lowest index of those never
 * used), another rank's once lost excepted; -1 when none is idle. */
static int tn_pipe_idle(const tn_env *e, const tn_pipe *P)
{
    int best = -1;
    for (int k = 0; k < e->ndev + e->nrem; k++) {
        if (P->on_gpu[k] >= 0 || (k >= e->ndev && !kevo_mpi_gpu_alive(e->mpi, k - e->ndev)))
            continue;
        if (best < 0 || P->last_use[k] < P->last_use[best])
            best = k;
    }
    if (best >= 0)
        return best;
    /* none idle: a remote GPU takes a second one to wait there (kevo_mpi_eval_submit) */
    for (int k = e->ndev; k < e->ndev + e->nrem; k++) {
        if (P->queued[k] >= 0 || !kevo_mpi_gpu_alive(e->mpi, k - e->ndev) ||
            kevo_mpi_gpu_queued(e->mpi, k - e->ndev) >= KEVO_MPI_GPU_QUEUE)
            continue;
        if (best < 0 || P->last_use[k] < P->last_use[best])
            best = k;
    }
    return best;
}

/* Put compiled candidates on idle GPUs in proposal order, each on the GPU
 * idle longest (a failed compile needs none: done at once).  Errors: the
 * GPUs', MPI's. */
static kevo_status tn_pipe_place(tn_env *e, tn_loop *L, tn_pipe *P, kevo_gpu *const *g, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    for (int64_t p = P->head; p < P->tail && !st; p++) {
        int i = (int)(p % P->cap);
        tn_work *w = &P->w[i];
        if (P->state[i] != TN_READY)
            continue;
        if (w->job.fail != KEVO_FAIL_NONE) {
            P->state[i] = TN_DONE;
            continue;
        }
        kevo_gpu_request rq = tn_request(w, w->cand_id, L->ro->maps, true,
                                         L->ro->seed ^ (uint64_t)w->cand_id * 0x9e3779b97f4a7c15ull);
        bool placed = false;
        while (!placed && !st) {
            int k = tn_pipe_idle(e, P);
            if (k < 0)
                return KEVO_OK;
            if (k < e->ndev) {
                st = kevo_gpu_submit(g[k], &rq, err);
                placed = !st;
            } else {
                /* not sent: the rank is lost now, and tn_pipe_idle skips it */
                bool sent = false;
                st = kevo_mpi_eval_submit(e->mpi, k - e->ndev, &rq, &sent, err);
                placed = !st && sent;
            }
            if (placed) {
                bool behind = P->on_gpu[k] >= 0;
                tn_trace(e, behind ? "queued" : "submit", w->cand_id, k);
                P->state[i] = TN_ON_GPU;
                P->dev[i] = k;
                P->t0[i] = kv_now();
                if (behind)
                    P->queued[k] = p;
                else
                    P->on_gpu[k] = p;
                P->last_use[k] = ++P->placements;
            }
        }
    }
    return st;
}

/* Remote device k ended candidate cand (its result in *P->r), or lost it
 * with its rank (then another device takes it).  The one waiting behind it
 * there starts now. */
static void tn_pipe_remote_end(const tn_env *e, tn_pipe *P, int k, int64_t cand, bool lost)
{
    bool head = P->on_gpu[k] >= 0 && tn_slot(P, P->on_gpu[k])->cand_id == cand;
    int64_t p = head ? P->on_gpu[k] : P->queued[k];
    if (p < 0 || tn_slot(P, p)->cand_id != cand)
        return; /* not one this loop waits for */
    int i = (int)(p % P->cap);
    double now = kv_now();
    tn_trace(e, lost ? "lost" : "done", cand, k);
    if (lost) {
        P->state[i] = TN_READY;
    } else {
        P->res[i] = *P->r;
        P->eval_s[i] = now - P->t0[i];
        P->state[i] = TN_DONE;
    }
    if (head) {
        P->on_gpu[k] = P->queued[k];
        P->queued[k] = -1;
        if (P->on_gpu[k] >= 0 && !lost) { /* its turn there: its time counts from now */
            int j = (int)(P->on_gpu[k] % P->cap);
            P->t0[j] = now;
            tn_trace(e, "submit", P->w[j].cand_id, k);
        }
    } else {
        P->queued[k] = -1;
    }
}

/* A compile finished: its binary into the cache, the candidate ready. */
static kevo_status tn_pipe_compiled(tn_env *e, tn_pipe *P, const kevo_compile_job *job, kevo_err *err)
{
    for (int64_t p = P->head; p < P->tail; p++)
        if (&tn_slot(P, p)->job == job) {
            tn_trace(e, "compiled", tn_slot(P, p)->cand_id, -1);
            P->state[p % P->cap] = TN_READY;
            P->compiling--;
            return tn_cache_store(e, tn_slot(P, p), err);
        }
    return KEVO_OK;
}

/* Finish the oldest round of a one-shape GPU run (stream): compile and
 * evaluate until every candidate of it is applied, the later rounds
 * compiling and evaluating meanwhile.  Errors: the DB's,
 * KEVO_ERR_INTERRUPTED (the rest stays pending, for --resume),
 * KEVO_ERR_WORKER. */
static kevo_status tn_pipe_stream(tn_env *e, tn_loop *L, tn_pipe *P, kevo_err *err)
{
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
    const int total = e->ndev + e->nrem;
    for (int k = 0; k < e->ndev; k++)
        g[k] = tn_dgpu(e, k);
    const int64_t end = P->rend[0];
    kevo_status st = KEVO_OK;
    tn_trace(e, "round", end - P->head, -1);
    while (!st && P->head < end) {
        if (kv_interrupted()) {
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by signal %d", kv_signal_caught());
            break;
        }
        for (; P->pool && P->next_compile < P->tail && !st && kevo_compile_pool_idle(P->pool) > 0;
             P->next_compile++)
            if (P->state[P->next_compile % P->cap] == TN_COMPILE) {
                st = kevo_compile_pool_start(P->pool, &tn_slot(P, P->next_compile)->job, e->compile_timeout, err);
                tn_trace(e, "compile", tn_slot(P, P->next_compile)->cand_id, -1);
                P->compiling++;
            }
        if (!st)
            st = tn_pipe_place(e, L, P, g, err);
        /* one result applied per turn: a GPU that finishes meanwhile gets its next candidate first */
        int h = (int)(P->head % P->cap);
        if (!st && P->state[h] == TN_DONE) {
            tn_work *w = &P->w[h];
            bool evaluated = w->job.fail == KEVO_FAIL_NONE;
            tn_trace(e, "apply", w->cand_id, P->dev[h]);
            st = tn_apply_one(e, L, w, evaluated ? &P->res[h] : NULL, P->dev[h], P->eval_s[h], err);
            tn_trace(e, "applied", w->cand_id, P->dev[h]);
            tn_work_release(w);
            P->head++;
        }
        if (st || P->head == end)
            break;
        bool more = P->state[P->head % P->cap] == TN_DONE; /* then the waits below only look */
        bool local_busy = false, remote_busy = false;
        int busy_on[TN_MAX_DEV];
        for (int k = 0; k < total; k++) {
            busy_on[k] = P->on_gpu[k] >= 0 ? 0 : -1;
            local_busy = local_busy || (k < e->ndev && P->on_gpu[k] >= 0);
            remote_busy = remote_busy || (k >= e->ndev && P->on_gpu[k] >= 0);
        }
        tn_bar_devices(e, L, busy_on, P->compiling);
        bool gpus_busy = local_busy || remote_busy;
        bool compiles_busy = P->pool ? kevo_compile_pool_busy(P->pool) > 0 : P->compiling > 0;
        if (local_busy) {
            int which = -1;
            st = kevo_gpu_wait(g, e->ndev, more ? 0 : compiles_busy || remote_busy ? 0.002 : 1.0, &which, P->r, err);
            if (!st && which >= 0) {
                int64_t p = P->on_gpu[which];
                int i = (int)(p % P->cap);
                tn_trace(e, "done", P->w[i].cand_id, which);
                P->res[i] = *P->r;
                P->eval_s[i] = kv_now() - P->t0[i];
                P->state[i] = TN_DONE;
                P->on_gpu[which] = -1;
            }
        }
        if (!st && remote_busy) {
            int which = -1;
            int64_t cand = 0;
            bool lost = false;
            st = kevo_mpi_eval_wait(e->mpi, more || compiles_busy || local_busy ? 0.0 : 0.05, &which, &cand, &lost,
                                    P->r, err);
            if (!st && which >= 0)
                tn_pipe_remote_end(e, P, e->ndev + which, cand, lost);
        }
        if (!st && compiles_busy && P->pool) {
            kevo_compile_job *done = NULL;
            st = kevo_compile_pool_wait(P->pool, more ? 0 : gpus_busy ? 0.002 : 1.0, &done, err);
            if (!st && done)
                st = tn_pipe_compiled(e, P, done, err);
        } else if (!st && compiles_busy) {
            kevo_compile_job *done = NULL;
            int left = 0;
            st = kevo_mpi_compile_next(e->mpi, more ? 0 : gpus_busy ? 0.002 : 1.0, &done, &left, err);
            if (!st && done)
                st = tn_pipe_compiled(e, P, done, err);
        }
    }
    if (!st)
        tn_pipe_round_pop(P);
    return st;
}

/* Finish the oldest round of a compile-only or distribution run: compile
 * every round in flight (the cache first), then store and, with GPUs,
 * verify and time the oldest one's candidates in order.  Errors: as
 * tn_pipe_stream. */
static kevo_status tn_pipe_sync(tn_env *e, tn_loop *L, tn_pipe *P, tn_progress *prog, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    if (P->next_compile < P->tail) {
        char what[64];
        snprintf(what, sizeof what, "compiling %lld", (long long)(P->tail - P->next_compile));
        tn_bar(prog, L->done, L->best, what);
    }
    while (!st && P->next_compile < P->tail) { /* in at most two runs of slots, where the ring wraps */
        int64_t from = P->next_compile, to = P->tail;
        if (to / P->cap != from / P->cap)
            to = (from / P->cap + 1) * P->cap;
        st = tn_compile(e, tn_slot(P, from), (int)(to - from), err);
        if (!st)
            P->next_compile = to;
    }
    const int64_t end = P->rend[0];
    while (!st && P->head < end) {
        if (kv_interrupted()) /* the rest stays pending, for the resume */
            return KEVO_ERR_INTERRUPTED;
        tn_bar(prog, L->done, L->best, L->ro->compile_only ? "storing" : "verifying and timing");
        st = tn_apply_one(e, L, tn_slot(P, P->head), NULL, 0, 0, err);
        if (!st)
            tn_work_release(tn_slot(P, P->head++));
    }
    if (!st)
        tn_pipe_round_pop(P);
    return st;
}

/* Whether a process with this pid runs on this machine (a zombie, killed
 * but not yet reaped, does not). */
static bool tn_pid_alive(int64_t pid)
{
    if (pid <= 0 || pid > INT32_MAX)
        return false;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
        return false;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')'); /* "pid (comm) S ..." */
    return !(paren && paren[1] == ' ' && paren[2] == 'Z');
}

/* A run another live process holds is refused, naming that process:
 * KEVO_ERR_BUSY. */
static kevo_status tn_run_free(const kevo_run_row *run, kevo_err *err)
{
    if (strcmp(run->status, "running") == 0 && run->pid != (int64_t)getpid() && tn_pid_alive(run->pid))
        return kevo_err_set(err, KEVO_ERR_BUSY, "run %lld is held by process %lld, which is still running (one run, "
                            "one writer: wait for it to end, or stop it)", (long long)run->id, (long long)run->pid);
    return KEVO_OK;
}

/* Claim a resumed run for this process, inside the transaction that marks
 * it running (BEGIN IMMEDIATE: one writer at a time), so that of two
 * resumes started together exactly one goes on: the run must still be as
 * this process first read it (`seen`), and held by no live process.
 * KEVO_ERR_BUSY naming the holder otherwise (the caller rolls back). */
static kevo_status tn_claim(tn_env *e, const kevo_run_row *seen, kevo_err *err)
{
    kevo_run_row now;
    kevo_status st = kevo_db_run_get(e->db, seen->id, &now, err);
    if (!st)
        st = tn_run_free(&now, err);
    if (!st && (strcmp(now.status, seen->status) != 0 || now.pid != seen->pid))
        st = kevo_err_set(err, KEVO_ERR_BUSY, "run %lld was taken by process %lld while this one started (it is "
                          "%s now): one run, one writer", (long long)seen->id, (long long)now.pid, now.status);
    return st;
}

/* Rebuild the graph of a stored run: every candidate in seq order with its
 * parent edge and fitness; candidates a killed process left pending go to
 * left[] (node indices) to be evaluated first, left_round[] their rounds
 * (-1 for a run of schema 7 or older), *head_started whether some of the
 * first left one's round was applied.  *done, *best and *last_gain (the
 * count at the last improvement) are the loop's as it would have them;
 * *next_round the number of the run's next round. */
static kevo_status tn_rebuild(tn_env *e, kevo_search *s, int64_t run_id, bool evaluate_compiled, int **left,
                              int **left_round, int *nleft, bool *head_started, int64_t *done, double *best,
                              int64_t *last_gain, int64_t *nrows, int64_t *next_round, kevo_err *err)
{
    kevo_cand_row *rows = NULL;
    kevo_edge_row *edges = NULL;
    int n = 0, ne = 0;
    *left = *left_round = NULL;
    *nleft = 0;
    *head_started = false;
    *done = 0;
    *next_round = 0;
    kevo_status st = kevo_db_cand_list(e->db, run_id, &rows, &n, err);
    if (!st)
        st = kevo_db_edge_list(e->db, run_id, &edges, &ne, err);
    if (!st && n > 0 &&
        (!(*left = malloc((size_t)n * sizeof **left)) || !(*left_round = malloc((size_t)n * sizeof **left_round))))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    *nrows = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].seq > *nrows)
            *nrows = rows[i].seq;
        if (rows[i].round >= *next_round)
            *next_round = (int64_t)rows[i].round + 1;
    }
    for (int i = 0; i < n && !st; i++) {
        kevo_proposal p;
        memset(&p, 0, sizeof p);
        p.parent = p.parent2 = -1;
        snprintf(p.op, sizeof p.op, "root");
        /* the first parent has the lower candidate id (edges come sorted) */
        for (int k = 0; k < ne; k++) {
            if (edges[k].child_id != rows[i].id)
                continue;
            int m = 0;
            while (m < s->nnodes && s->nodes[m].cand_id != edges[k].parent_id)
                m++;
            if (m == s->nnodes)
                continue;
            if (p.parent < 0)
                p.parent = m;
            else
                p.parent2 = m;
            snprintf(p.op, sizeof p.op, "%s", edges[k].op);
        }
        bool by_llm = strcmp(p.op, "llm") == 0;
        if (by_llm && p.parent >= 0)
            s->nodes[p.parent].llm_children++;
        const kevo_space *sp = kevo_spaces_find(s->spaces, s->nspaces, rows[i].family);
        if (sp) {
            for (p.family = 0; s->spaces[p.family] != sp; p.family++)
                ;
        } else {
            if ((st = tn_space_of(e, &rows[i], &sp, err))) {
                kevo_err_prefix(err, "run %lld", (long long)run_id);
                break;
            }
            if (!sp) { /* an LLM call that gave no source: a failed candidate, no node */
                (*done)++;
                continue;
            }
            if ((p.family = kevo_search_add_space(s, sp)) < 0) {
                st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
                break;
            }
        }
        char who[64]; /* the stored params are untrusted: within the family's domains, before any use */
        snprintf(who, sizeof who, "run %lld candidate %lld", (long long)run_id, (long long)rows[i].id);
        if ((st = kevo_config_parse_stored(sp, rows[i].params, who, &p.cfg, err)))
            break;
        int node = kevo_search_add(s, &p);
        if (node < 0) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        s->nodes[node].cand_id = rows[i].id;
        /* pending: left by a killed process; compiled: a compile-only run now continued on a GPU */
        if (strcmp(rows[i].status, "pending") == 0 || (evaluate_compiled && strcmp(rows[i].status, "compiled") == 0)) {
            (*left_round)[*nleft] = rows[i].round;
            (*left)[(*nleft)++] = node;
            continue;
        }
        double fit = strcmp(rows[i].status, "ok") == 0 ? (isnan(rows[i].fitness) ? rows[i].speedup : rows[i].fitness)
                     : strcmp(rows[i].status, "failed") == 0 ? 0.0
                                                              : NAN;
        kevo_search_observe(s, node, fit);
        (*done)++;
        if (!isnan(fit) && fit > *best) {
            *best = fit;
            *last_gain = *done;
        }
    }
    for (int i = 0; i < n && !st && *nleft > 0; i++)
        if (rows[i].round >= 0 && rows[i].round == (*left_round)[0] && strcmp(rows[i].status, "pending") != 0 &&
            !(evaluate_compiled && strcmp(rows[i].status, "compiled") == 0))
            *head_started = true;
    kevo_cand_rows_free(rows, n);
    free(edges);
    return st;
}

/* Register a batch of proposals: render, plan, and insert every row and
 * edge in one transaction, so that a kill leaves all of the batch or none. */
static kevo_status tn_register(tn_env *e, kevo_search *s, int64_t run_id, int64_t seq0, int64_t round,
                               const kevo_proposal *props, int n, kevo_generation_row *gen, tn_work *works,
                               int *ready, kevo_err *err)
{
    *ready = 0;
    kevo_status st = KEVO_OK;
    for (int i = 0; i < n && !st; i++) {
        st = tn_prepare(e, kevo_search_space(s, props[i].family), props[i].family, &props[i].cfg, &works[i], err);
        if (!st)
            (*ready)++;
    }
    if (!st)
        st = kevo_db_begin(e->db, err);
    if (st)
        return st;
    for (int i = 0; i < n && !st; i++) {
        tn_work *w = &works[i];
        kevo_cand_row row;
        kevo_cand_row_init(&row);
        row.run_id = run_id;
        row.seq = seq0 + i + 1;
        row.round = (int)round;
        snprintf(row.family, sizeof row.family, "%s", w->space->family);
        kv_buf pj, plj;
        kv_buf_init(&pj);
        kv_buf_init(&plj);
        kevo_config_json(w->space, &w->cfg, &pj);
        kevo_plan_json(&w->plan, &plj);
        row.params = kv_buf_take(&pj);
        row.plan = kv_buf_take(&plj);
        snprintf(row.source_hash, sizeof row.source_hash, "%s", w->source_hash);
        snprintf(row.status, sizeof row.status, "pending");
        row.model_ms = kevo_search_predict(s, props[i].family, &props[i].cfg) * 1e3;
        st = kevo_db_cand_insert(e->db, &row, err);
        w->cand_id = row.id;
        kevo_cand_row_release(&row);
        if (!st && props[i].parent >= 0)
            st = kevo_db_edge_insert(e->db, run_id, s->nodes[props[i].parent].cand_id, w->cand_id, props[i].op, err);
        if (!st && props[i].parent2 >= 0)
            st = kevo_db_edge_insert(e->db, run_id, s->nodes[props[i].parent2].cand_id, w->cand_id, props[i].op,
                                     err);
        if (!st && gen) { /* an LLM candidate (n is 1): its call, in the same transaction */
            gen->candidate_id = w->cand_id;
            st = kevo_db_generation_put(e->db, gen, err);
        }
    }
    if (st) {
        kevo_db_rollback(e->db);
        return st;
    }
    if ((st = kevo_db_commit(e->db, err)))
        return st;
    for (int i = 0; i < n; i++) {
        works[i].node = kevo_search_add(s, &props[i]);
        if (works[i].node < 0)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        s->nodes[works[i].node].cand_id = works[i].cand_id;
    }
    return KEVO_OK;
}

/* ---- the LLM generator in the loop ---- */

/* Start an LLM rewrite of node `parent`: its row, up to TN_LLM_SIBLINGS of
 * its latest LLM children as siblings, call number k. */
#define TN_LLM_SIBLINGS 4
static kevo_status tn_llm_start(tn_env *e, kevo_search *s, int64_t run_id, kevo_llm_gen *lg, int parent, double best,
                                int64_t k, kevo_err *err)
{
    const kevo_node *nd = &s->nodes[parent];
    kevo_cand_row prow, sib[TN_LLM_SIBLINGS];
    int nsib = 0;
    kevo_status st = kevo_db_cand_get(e->db, nd->cand_id, &prow, err);
    if (st)
        return st;
    kevo_edge_row *edges = NULL;
    int ne = 0;
    st = kevo_db_edge_list(e->db, run_id, &edges, &ne, err);
    for (int i = ne - 1; i >= 0 && !st && nsib < TN_LLM_SIBLINGS; i--)
        if (edges[i].parent_id == nd->cand_id && strcmp(edges[i].op, "llm") == 0 &&
            kevo_db_cand_get(e->db, edges[i].child_id, &sib[nsib], NULL) == KEVO_OK)
            nsib++;
    free(edges);
    kevo_gen_parent gp = {.row = &prow, .space = kevo_search_space(s, nd->family), .cfg = nd->cfg,
                          .generator = kevo_report_generator(prow.family)};
    if (!st)
        st = kevo_llm_gen_start(lg, &gp, sib, nsib, best, k, err);
    for (int i = 0; i < nsib; i++)
        kevo_cand_row_release(&sib[i]);
    kevo_cand_row_release(&prow);
    return st;
}

/* Store an LLM call that gave no candidate to compile (llm_error,
 * parse_error, rejected): a failed candidate row, the llm edge from its
 * parent and the call, in one transaction. */
static kevo_status tn_llm_store_failure(tn_env *e, kevo_search *s, int64_t run_id, int64_t seq, int parent,
                                        kevo_gen_source *g, int64_t *cand_id, kevo_err *err)
{
    kevo_cand_row row;
    kevo_cand_row_init(&row);
    row.run_id = run_id;
    row.seq = seq;
    snprintf(row.family, sizeof row.family, "%s", g->family);
    row.params = kv_strdup("{}");
    snprintf(row.status, sizeof row.status, "failed");
    snprintf(row.fail, sizeof row.fail, "%s", kevo_fail_name(g->fail));
    row.fail_msg = kv_strdup(g->why);
    row.fitness = 0.0;
    kevo_status st = row.params && row.fail_msg ? kevo_db_begin(e->db, err)
                                                : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    bool open = !st;
    if (!st)
        st = kevo_db_cand_insert(e->db, &row, err);
    *cand_id = row.id;
    if (!st && parent >= 0)
        st = kevo_db_edge_insert(e->db, run_id, s->nodes[parent].cand_id, row.id, "llm", err);
    if (!st) {
        g->gen.candidate_id = row.id;
        st = kevo_db_generation_put(e->db, &g->gen, err);
    }
    if (!st)
        st = kevo_db_commit(e->db, err);
    else if (open)
        kevo_db_rollback(e->db);
    kevo_cand_row_release(&row);
    return st;
}

/* Finish the LLM call in flight into the round: a candidate with a source
 * is registered into *w (*added 1) to be compiled and evaluated with the
 * round's template candidates; a failed call, an unusable reply, a refused
 * or repeated source is stored as a failed candidate at once.  A call that
 * reached no server is not a candidate (*gone: the caller drops the LLM,
 * *llm_calls is given back). */
static kevo_status tn_llm_take(tn_env *e, kevo_search *s, const kevo_run_row *run, kevo_llm_gen *lg, int parent,
                               int64_t *nrows, int64_t round, tn_work *w, int *added, int64_t *llm_calls,
                               int64_t *done, tn_progress *prog, bool *gone, kevo_err *err)
{
    *added = 0;
    *gone = false;
    kevo_gen_source g;
    kevo_gen_source_init(&g);
    kevo_status st = kevo_llm_gen_finish(lg, &g, err);
    if (st) {
        kevo_gen_source_release(&g);
        return st;
    }
    if (g.unreachable) { /* nothing answered at the URL (a GPU node without a network): not a candidate */
        (*llm_calls)--;
        *gone = true;
        tn_line(prog, "kevo: the LLM does not answer (%s): going on with templates", g.why);
        kevo_gen_source_release(&g);
        return KEVO_OK;
    }
    const int64_t parent_id = parent >= 0 ? s->nodes[parent].cand_id : 0;
    g.gen.run_id = run->id;
    g.gen.parent_id = parent_id;
    if (parent >= 0)
        s->nodes[parent].llm_children++;
    const kevo_space *same = g.fail == KEVO_FAIL_NONE ? kevo_spaces_find(e->llm, e->nllm, g.family) : NULL;
    if (same) { /* the very source and plan of an earlier candidate */
        g.fail = KEVO_FAIL_REJECTED;
        snprintf(g.why, sizeof g.why, "the reply repeats an earlier candidate (%s)", same->family);
    }
    if (g.fail != KEVO_FAIL_NONE) {
        snprintf(g.family, sizeof g.family, "llm_call%lld", (long long)(*llm_calls - 1));
        int64_t id = 0;
        st = tn_llm_store_failure(e, s, run->id, ++*nrows, parent, &g, &id, err);
        if (!st) {
            (*done)++;
            tn_cand_line(prog, id, "[%3lld/%lld] #%lld %s <-llm #%lld | FAILED %s: %s", (long long)*done,
                         (long long)prog->budget, (long long)id, g.family, (long long)parent_id,
                         kevo_fail_name(g.fail), g.why);
        }
        kevo_gen_source_release(&g);
        return st;
    }
    /* a source: its one-point space joins the graph as a family of one */
    kevo_space *sp = g.space;
    g.space = NULL;
    g.owns_space = false;
    int fam = -1;
    if (!tn_llm_keep(e, sp) || (fam = kevo_search_add_space(s, sp)) < 0) {
        kevo_gen_source_release(&g);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    kevo_proposal p = {.family = fam, .cfg = g.cfg, .parent = parent, .parent2 = -1};
    snprintf(p.op, sizeof p.op, "llm");
    int ready = 0;
    st = tn_register(e, s, run->id, *nrows, round, &p, 1, &g.gen, w, &ready, err);
    if (!st) {
        (*nrows)++;
        *added = ready;
    }
    kevo_gen_source_release(&g);
    return st;
}

/* A distribution run's summary: for each shape, the candidate fastest
 * there (the library's dispatch for that shape) and the verdict against
 * that shape's peers. */
static void tn_dist_summary(tn_env *e, const kevo_run_row *run, tn_progress *prog)
{
    kevo_cand_row *rows = NULL;
    int n = 0;
    kevo_err err;
    if (kevo_db_cand_list(e->db, run->id, &rows, &n, &err))
        return;
    int64_t best[KEVO_DIST_MAX] = {0};
    kevo_shape_result bres[KEVO_DIST_MAX];
    int bi[KEVO_DIST_MAX];
    for (int i = 0; i < n; i++) {
        kevo_shape_result *v = NULL;
        int m = 0;
        if (strcmp(rows[i].status, "ok") != 0 || kevo_db_shape_results_get(e->db, rows[i].id, &v, &m, &err))
            continue;
        for (int k = 0; k < m; k++) {
            int j = v[k].shape_idx;
            if (j < 0 || j >= e->dist->n || !(v[k].median_ms > 0))
                continue;
            if (!best[j] || v[k].median_ms < bres[j].median_ms) {
                best[j] = rows[i].id;
                bres[j] = v[k];
                bi[j] = i;
            }
        }
        free(v);
    }
    for (int j = 0; j < e->dist->n; j++) {
        if (!best[j]) {
            tn_line(prog, "  %s (weight %g): no kernel verified there", e->dist->text[j], e->dist->weight[j]);
            continue;
        }
        char verdict[320];
        kevo_peer_verdict(e->op, bres[j].vs_peer, &e->speers[j], verdict, sizeof verdict);
        tn_line(prog, "  %s (weight %g): fastest #%lld %s %s %.4f ms, %.2fx the baseline; %s", e->dist->text[j],
                e->dist->weight[j], (long long)best[j], rows[bi[j]].family, rows[bi[j]].params, bres[j].median_ms,
                bres[j].speedup, verdict);
    }
    kevo_cand_rows_free(rows, n);
}

/* ---- a candidate at another shape ---- */

/* Verify (and time when `time`) configuration cfg of space sp, a stored
 * candidate c's, at e's shape on e's worker: checked against the family's
 * constraints there, planned, compiled through e's compile cache (added to
 * unless e->db is read-only), then kevo_gpu_eval on the maps with seed.
 * w receives the prepared work (the caller releases it), res the result: a
 * failed check is res->fail, not an error.  What `kevo verify` does, and
 * `kevo tune` for a peer at the shape without the co-design.  Errors:
 * KEVO_ERR_UNSUPPORTED (not valid or no launch plan at the shape, naming
 * why), KEVO_ERR_NVRTC (does not compile), the worker's errors. */
static kevo_status tn_check_config(tn_env *e, const kevo_space *sp, const kevo_config *cfg, const kevo_cand_row *c,
                                   unsigned maps, bool time, uint64_t seed, tn_work *w, kevo_gpu_result *res,
                                   kevo_err *err)
{
    memset(w, 0, sizeof *w);
    kv_buf_init(&w->source);
    char why[256];
    if (kevo_space_check(sp, &e->shape, &e->lim, e->dt, cfg, why, sizeof why) != 1)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s %s) is not valid at %s: %s",
                            (long long)c->id, c->family, c->params, e->shape_txt, why);
    kevo_status st = tn_prepare(e, sp, 0, cfg, w, err);
    if (!st && w->job.fail == KEVO_FAIL_PLAN_ERROR)
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld has no launch plan at %s: %s", (long long)c->id,
                          e->shape_txt, w->job.log ? w->job.log : "");
    if (!st)
        st = tn_compile(e, w, 1, err);
    if (!st && w->job.fail != KEVO_FAIL_NONE) {
        char line[300];
        tn_first_line(w->job.log, line, sizeof line);
        st = kevo_err_set(err, KEVO_ERR_NVRTC, "candidate %lld does not compile for %s %s: %s", (long long)c->id,
                          e->arch, kevo_dtype_name(e->dt), line);
    }
    if (st)
        return st;
    kevo_gpu_request rq = tn_request(w, c->id, maps, time, seed);
    return kevo_gpu_eval(e->gpu, &rq, res, err);
}

/* ---- the winner beyond the noise ---- */

typedef struct tn_lead {
    kevo_cand_row row;
    tn_work w;
    bool prepared;
    kevo_config cfg;   /* its configuration (configuration order) */
    double median;     /* of its interleaved times */
    double ratio, lo, hi; /* its time over the leader's, paired by round, and the 95% interval */
} tn_lead;

static int tn_cmp_median(const void *a, const void *b)
{
    const kevo_cand_row *x = a, *y = b;
    if (x->median_ms != y->median_ms)
        return x->median_ms < y->median_ms ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Whether a comes before b in configuration order: family name, then each
 * parameter's value in the family's order. */
static bool tn_config_before(const tn_lead *a, const tn_lead *b)
{
    int c = strcmp(a->row.family, b->row.family);
    return c != 0 ? c < 0 : kevo_config_cmp(&a->cfg, &b->cfg) < 0;
}

/* The run's winner, decided beyond the noise: the verified candidates whose
 * median's 95% interval overlaps the fastest one's or that are within
 * TN_EQUIV of it (at most KEVO_GPU_RETIME_MAX, fastest first) are timed
 * again interleaved in one process (A B C A B C ...), the fastest by that
 * median leads, and each other is compared with it round by round
 * (kv_paired_ratio): one whose ratio's interval holds 1 cannot be told
 * apart and is marked tied, as is then the leader.  The run's best_id is
 * the first in configuration order of those within TN_EQUIV of the leader
 * (the leader itself when it is alone there).  Idempotent: a resumed run
 * does it again. */
static kevo_status tn_settle(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, tn_progress *prog,
                             kevo_err *err)
{
    kevo_cand_row *rows = NULL;
    int n = 0;
    kevo_status st = kevo_db_cand_list(e->db, run->id, &rows, &n, err);
    if (st)
        return st;
    /* verified and timed, fastest first */
    int ok = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(rows[i].status, "ok") == 0 && rows[i].median_ms > 0) {
            kevo_cand_row t = rows[ok];
            rows[ok++] = rows[i];
            rows[i] = t;
        }
    qsort(rows, (size_t)ok, sizeof *rows, tn_cmp_median);
    /* the leaders: those whose interval is not clear of the fastest's and,
     * when several GPUs measured, every one within TN_CROSS_DEVICE of it (two
     * GPUs of one model can time one kernel a few percent apart: 2.5% seen on
     * two H200s of one host), re-timed together on the run's first GPU */
    bool several = e->ndev + e->nrem > 1;
    int m = ok > 0 ? 1 : 0;
    for (int i = 1; i < ok && m < KEVO_GPU_RETIME_MAX; i++)
        if (!(rows[i].ci_lo_ms > rows[0].ci_hi_ms) || isnan(rows[i].ci_lo_ms) ||
            rows[i].median_ms <= (1 + TN_EQUIV) * rows[0].median_ms ||
            (several && rows[i].median_ms <= (1 + TN_CROSS_DEVICE) * rows[0].median_ms)) {
            kevo_cand_row t = rows[m]; /* into the group, in order */
            rows[m++] = rows[i];
            rows[i] = t;
        }
    tn_lead *lead = calloc((size_t)(m ? m : 1), sizeof *lead);
    if (!lead)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_gpu_request reqs[KEVO_GPU_RETIME_MAX];
    kevo_gpu_retime_result *out = m > 1 ? calloc((size_t)m, sizeof *out) : NULL;
    if (!st && m > 1 && !out)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    /* the group's cubins and plans, through the compile cache */
    for (int i = 0; i < m && !st && m > 1; i++) {
        lead[i].row = rows[i];
        const kevo_space *sp = NULL;
        kevo_config cfg;
        st = tn_space_of(e, &rows[i], &sp, err);
        if (!st && !sp)
            st = kevo_err_set(err, KEVO_ERR_DB, "candidate %lld is verified but has no source", (long long)rows[i].id);
        if (!st)
            st = kevo_config_parse_stored(sp, rows[i].params, "a leader", &cfg, err);
        if (!st) {
            lead[i].cfg = cfg;
            st = tn_prepare(e, sp, -1, &cfg, &lead[i].w, err);
        }
        lead[i].prepared = !st;
        if (!st)
            st = tn_compile(e, &lead[i].w, 1, err);
        if (!st && lead[i].w.job.fail != KEVO_FAIL_NONE)
            st = kevo_err_set(err, KEVO_ERR_NVRTC, "candidate %lld no longer compiles for the re-timing",
                              (long long)rows[i].id);
        if (!st) {
            memset(&reqs[i], 0, sizeof reqs[i]);
            reqs[i].candidate_id = rows[i].id;
            reqs[i].cubin = lead[i].w.job.cubin;
            reqs[i].cubin_size = lead[i].w.job.cubin_size;
            reqs[i].plan = lead[i].w.plan;
            reqs[i].time = true;
        }
    }
    int rounds = 2 * o->reps;
    if (m > 1 && rounds * m > KEVO_GPU_MAX_REPS)
        rounds = KEVO_GPU_MAX_REPS / m;
    if (!st && m > 1)
        st = kevo_gpu_retime(e->gpu, reqs, m, o->warmup, rounds, out, err);
    int leader = 0, timed = 0;
    if (!st && m > 1) {
        for (int i = 0; i < m; i++) {
            lead[i].median = out[i].fail == KEVO_FAIL_NONE ? kv_median(out[i].ms, out[i].rounds) : NAN;
            if (isnan(lead[i].median))
                continue;
            timed++;
            if (isnan(lead[leader].median) || lead[i].median < lead[leader].median)
                leader = i;
        }
    }
    if (!st && timed >= 2) {
        /* the leader by the paired comparisons, not only the medians */
        const double *series[KEVO_GPU_RETIME_MAX];
        double med[KEVO_GPU_RETIME_MAX];
        uint64_t seeds[KEVO_GPU_RETIME_MAX];
        for (int i = 0; i < m; i++) {
            series[i] = out[i].ms;
            med[i] = lead[i].median;
            seeds[i] = (uint64_t)lead[i].row.id;
        }
        leader = kv_paired_leader(series, med, m, rounds, seeds, KV_BOOTSTRAP);
        for (int i = 0; i < m; i++) /* each one against the leader */
            if (!isnan(lead[i].median) && i != leader)
                kv_paired_ratio(out[leader].ms, out[i].ms, rounds, (uint64_t)lead[i].row.id, KV_BOOTSTRAP,
                                &lead[i].ratio, &lead[i].lo, &lead[i].hi);
        bool any_tie = false;
        for (int i = 0; i < m && !st; i++) {
            if (isnan(lead[i].median))
                continue;
            if (i != leader) {
                lead[i].row.tied = !(lead[i].lo > 1.0);
                any_tie |= lead[i].row.tied == 1;
            }
            st = kevo_db_timings_put(e->db, lead[i].row.id, 0, "retime", out[i].ms, rounds, err);
        }
        lead[leader].row.tied = any_tie;
        for (int i = 0; i < m && !st; i++)
            if (!isnan(lead[i].median))
                st = kevo_db_cand_update(e->db, &lead[i].row, err);
        int best = leader;
        for (int i = 0; i < m; i++)
            if (i != leader && !isnan(lead[i].median) && lead[i].ratio <= 1 + TN_EQUIV &&
                tn_config_before(&lead[i], &lead[best]))
                best = i;
        run->best_id = lead[best].row.id;
        tn_line(prog, "re-timed the %d leaders interleaved, %d rounds: #%lld leads at %.4f ms", m, rounds,
                (long long)lead[leader].row.id, lead[leader].median);
        for (int i = 0; i < m; i++) {
            if (i == leader)
                continue;
            if (isnan(lead[i].median))
                tn_line(prog, "  #%lld not re-timed: %s", (long long)lead[i].row.id, out[i].msg);
            else
                tn_line(prog, "  #%lld %+.1f%% [%+.1f%%, %+.1f%%]%s", (long long)lead[i].row.id,
                        100 * (lead[i].ratio - 1), 100 * (lead[i].lo - 1), 100 * (lead[i].hi - 1),
                        lead[i].row.tied ? ": tied (cannot be told apart)" : ": slower");
        }
        if (best != leader)
            tn_line(prog, "best: #%lld (%+.1f%% against #%lld): within %.0f%%, the noise between runs, the first "
                    "in configuration order", (long long)lead[best].row.id,
                    100 * (lead[best].ratio - 1), (long long)lead[leader].row.id, 100 * TN_EQUIV);
    } else if (!st && ok > 0) {
        /* one leader, its interval clear of every other's */
        run->best_id = rows[0].id;
        if (m <= 1 && ok > 1)
            tn_line(prog, "#%lld leads beyond the noise (its 95%% interval clear of the next one's)",
                    (long long)rows[0].id);
    }
    for (int i = 0; i < m; i++)
        if (lead[i].prepared)
            tn_work_release(&lead[i].w);
    free(lead);
    free(out);
    kevo_cand_rows_free(rows, n);
    return st;
}

/* ---- the op's peer without the co-design ---- */

/* Measure the op peer that needs the search's winner (KEVO_PEER_AFTER,
 * ikbo_fa's baseline (b)): the configuration of the run's best
 * (run->best_id) planned at the op's shape without the co-design
 * (kevo_op.nocodesign_shape), compiled through the cache, verified on the
 * run's maps and timed on a worker of that shape that measures no peers
 * and no ceilings (the run's worker is stopped first: at Skv=16384 the
 * gathered K/V alone take 2 x 17 GB).  The timing inputs are the worker's
 * (the sorted map: identity at ratio 1).  The peer is that kernel's time
 * plus the broadcast's (the peer's bcast_with minus bcast_without, as the
 * run stored them); it joins the run's peers (its candidate and both times
 * in its detail) and every verified candidate's vs_peer is recomputed, in
 * one transaction.  What keeps it from being measured (no broadcast time,
 * a shape past the op's limits, a configuration not valid or failing
 * there, a worker that cannot start) is said in one line and leaves the
 * peer unmeasured, not the run failed.  Errors: the DB's, KEVO_ERR_NOMEM,
 * KEVO_ERR_INTERRUPTED. */
static kevo_status tn_peer_nocodesign(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, const tn_work *ref,
                                      tn_progress *prog, kevo_err *err)
{
    int pi = -1;
    for (int i = 0; i < e->op->npeers && pi < 0; i++)
        if (e->op->peers[i].flags & KEVO_PEER_AFTER)
            pi = i;
    if (pi < 0 || !e->op->nocodesign_shape)
        return KEVO_OK;
    const kevo_peer_desc *pd = &e->op->peers[pi];
    const char *name = pd->name;
    if (e->dist)
        tn_line(prog, "peer %s is not measured for a distribution of shapes", name);
    if (e->dist || run->best_id <= 0)
        return KEVO_OK;
    double with_ms = kevo_peer_ok_ms(&e->run_peers, kevo_op_peer_index(e->op, pd->bcast_with));
    double without_ms = kevo_peer_ok_ms(&e->run_peers, kevo_op_peer_index(e->op, pd->bcast_without));
    double gather_ms = with_ms - without_ms;
    if (!(isfinite(gather_ms) && gather_ms > 0)) {
        tn_line(prog, "peer %s not measured: no time for the broadcast (%s %.3f ms, %s %.3f ms)", name,
                pd->bcast_without, without_ms, pd->bcast_with, with_ms);
        return KEVO_OK;
    }
    kevo_err why;
    kevo_err_clear(&why);
    tn_env v = *e; /* a view of e at the other shape: borrows e's spaces, DB and ABI, owns only v.gpu */
    v.gpu = NULL;
    v.dist = NULL;
    v.peers = NULL;
    v.speers = NULL;
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    tn_work w;
    memset(&w, 0, sizeof w);
    kevo_gpu_result *res = calloc(1, sizeof *res);
    if (!res)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    const kevo_space *sp = NULL;
    kevo_config cfg;
    kevo_status st = kevo_db_cand_get(e->db, run->best_id, &c, err);
    kevo_status soft = KEVO_OK; /* what leaves the peer unmeasured, in why */
    if (!st)
        soft = e->op->nocodesign_shape(&e->shape, &v.shape, &why);
    if (!st && !soft) {
        e->op->shape_str(&v.shape, v.shape_txt, sizeof v.shape_txt);
        soft = tn_space_of(e, &c, &sp, &why);
        if (!soft && !sp)
            soft = kevo_err_set(&why, KEVO_ERR_DB, "candidate %lld has no source", (long long)c.id);
        if (!soft)
            soft = kevo_config_parse_stored(sp, c.params, "the winner", &cfg, &why);
    }
    if (!st && !soft) {
        tn_line(prog, "peer %s: #%lld %s %s at %s (K/V gathered), on a worker of its own", name, (long long)c.id,
                c.family, c.params, v.shape_txt);
        kevo_gpu_stop(e->gpu); /* its memory is the new worker's */
        e->gpu = NULL;
        kevo_gpu_config gc = tn_gpu_config(e, ref, &v.shape, e->ord[0], o->warmup, o->reps, o->eval_timeout,
                                           o->seed, false, false);
        kevo_gpu_info info;
        soft = kevo_gpu_start(&gc, &v.gpu, &info, &why);
        if (!soft)
            tn_say_ref_check(e, &info);
    }
    if (!st && !soft)
        soft = tn_check_config(&v, sp, &cfg, &c, o->maps, true, o->seed ^ 0x6a09e667f3bcc909ull, &w, res, &why);
    if (!st && !soft && res->fail != KEVO_FAIL_NONE)
        soft = kevo_err_set(&why, KEVO_ERR_INTERNAL, "#%lld failed at %s: %s: %s", (long long)c.id, v.shape_txt,
                            kevo_fail_name(res->fail), res->msg);
    if (!st && !soft && !(res->median_ms > 0))
        soft = kevo_err_set(&why, KEVO_ERR_INTERNAL, "#%lld was not timed at %s", (long long)c.id, v.shape_txt);
    if (!st && (soft == KEVO_ERR_INTERRUPTED || soft == KEVO_ERR_NOMEM || kv_interrupted())) {
        st = kv_interrupted() ? KEVO_ERR_INTERRUPTED : soft;
        *err = why;
    } else if (!st && soft) {
        tn_line(prog, "peer %s not measured: %s", name, why.msg);
    } else if (!st) {
        kevo_peer_fig *f = &e->run_peers.p[pi];
        f->state = KEVO_PEER_OK;
        f->cand_id = c.id;
        f->median_ms = res->median_ms + gather_ms;
        kv_median_ci(res->rep_ms, res->reps, (uint64_t)c.id, KV_BOOTSTRAP, &f->ci_lo_ms, &f->ci_hi_ms);
        f->ci_lo_ms += gather_ms;
        f->ci_hi_ms += gather_ms;
        f->rel_err = res->rel_err;
        snprintf(f->detail, sizeof f->detail, "#%lld at %.160s: kernel %.4f ms + gather %.4f ms", (long long)c.id,
                 v.shape_txt, res->median_ms, gather_ms);
        st = kevo_db_peers_after(e->db, run->id, e->op, &e->run_peers, err);
        if (!st)
            tn_line(prog, "peer %s: #%lld %s %s at %s (K/V gathered) %.4f ms + gather %.4f ms = %.4f ms", name,
                    (long long)c.id, c.family, c.params, v.shape_txt, res->median_ms, gather_ms, f->median_ms);
    }
    kevo_gpu_stop(v.gpu);
    tn_work_release(&w);
    kevo_cand_row_release(&c);
    free(res);
    return st;
}

/* ---- warm start ---- */

#define TN_WARM_RUNS 3 /* nearest earlier runs whose winners seed a new run */

/* How far apart two shapes of an op are: the sum over its symbols of
 * |ln(a / b)| (a symbol either lacks counts as equal). */
static double tn_shape_distance(const kevo_op *op, const kevo_syms *a, const kevo_syms *b)
{
    double d = 0;
    for (int i = 0; i < op->nsymbols; i++) {
        int64_t x, y;
        if (kevo_syms_get(a, op->symbols[i], &x) && kevo_syms_get(b, op->symbols[i], &y) && x > 0 && y > 0)
            d += fabs(log((double)x / (double)y));
    }
    return d;
}

/* The winners of the TN_WARM_RUNS runs of db nearest to the run's shape:
 * same op, dtype and arch, finished, measured on a GPU, one shape, not the
 * run `self`, and of a family this run searches.  *v malloc'd. */
static kevo_status tn_warm_collect(const tn_env *e, kevo_db *db, int64_t self, kevo_warm_seed **v, int *n,
                                   kevo_err *err)
{
    *v = NULL;
    *n = 0;
    int64_t *ids = NULL;
    int nids = 0;
    kevo_status st = kevo_db_run_ids(db, &ids, &nids, err);
    kevo_warm_seed *w = calloc((size_t)nids + 1, sizeof *w);
    if (!st && !w)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int i = 0; i < nids && !st; i++) {
        kevo_run_row r;
        kevo_syms shape;
        kevo_err e2;
        if (ids[i] == self || kevo_db_run_get(db, ids[i], &r, &e2) || strcmp(r.op, e->op->name) ||
            strcmp(r.dtype, kevo_dtype_name(e->dt)) || strcmp(r.arch, e->arch) || r.compile_only || r.nshapes > 0 ||
            strcmp(r.status, "done") || e->op->parse_shape(r.shape, &shape, &e2))
            continue;
        kevo_cand_row c;
        if (kevo_db_cand_best(db, r.id, &c, &e2))
            continue;
        kevo_config cfg;
        kevo_space *sp = kevo_spaces_find(e->spaces, e->nspaces, c.family);
        /* another DB's params are untrusted: only a configuration of the family's domains seeds the run */
        if (sp && strlen(c.params) < sizeof w[m].params && !kevo_config_parse_stored(sp, c.params, "warm start",
                                                                                      &cfg, &e2)) {
            snprintf(w[m].family, sizeof w[m].family, "%s", c.family);
            snprintf(w[m].params, sizeof w[m].params, "%s", c.params);
            w[m].from_run = r.id;
            snprintf(w[m].from_shape, sizeof w[m].from_shape, "%s", r.shape);
            w[m].distance = tn_shape_distance(e->op, &e->shape, &shape);
            m++;
        }
        kevo_cand_row_release(&c);
    }
    free(ids);
    if (st) {
        free(w);
        return st;
    }
    /* nearest first (ties: the later run), the first TN_WARM_RUNS distinct configurations */
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && (w[j].distance < w[j - 1].distance ||
                                  (w[j].distance == w[j - 1].distance && w[j].from_run > w[j - 1].from_run));
             j--) {
            kevo_warm_seed t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
    int k = 0;
    for (int i = 0; i < m && k < TN_WARM_RUNS; i++) {
        bool dup = false;
        for (int j = 0; j < k && !dup; j++)
            dup = strcmp(w[j].family, w[i].family) == 0 && strcmp(w[j].params, w[i].params) == 0;
        if (!dup)
            w[k++] = w[i];
    }
    *v = w;
    *n = k;
    return KEVO_OK;
}

/* Hand stored warm seeds to the search (those whose family is searched). */
static void tn_warm_apply(const tn_env *e, kevo_search *s, const kevo_warm_seed *v, int n)
{
    for (int i = 0; i < n; i++) {
        kevo_space *sp = kevo_spaces_find(e->spaces, e->nspaces, v[i].family);
        kevo_config cfg;
        kevo_err e2;
        if (!sp || kevo_config_parse_stored(sp, v[i].params, "warm seed", &cfg, &e2))
            continue; /* stored warm seeds are DB text: within the family's domains, or not used */
        int f = 0;
        while (s->spaces[f] != sp)
            f++;
        kevo_search_add_warm(s, f, &cfg);
    }
}

/* A new run's warm seeds, collected before its row exists (from
 * o->warm_start, or the run's own DB); *v malloc'd, *n may be 0. */
static kevo_status tn_warm_collect_new(tn_env *e, const kevo_tune_opts *o, kevo_warm_seed **v, int *n,
                                       kevo_err *err)
{
    *v = NULL;
    *n = 0;
    if (o->warm_start && strcmp(o->warm_start, "none") == 0)
        return KEVO_OK;
    kevo_db *src = e->db;
    kevo_status st;
    if (o->warm_start && (st = kevo_db_open_ro(o->warm_start, &src, err))) { /* read, never written */
        kevo_err_prefix(err, "--warm-start");
        return st;
    }
    st = tn_warm_collect(e, src, 0, v, n, err);
    if (src != e->db)
        kevo_db_close(src);
    return st;
}

/* This process's GPUs as rows of the run's devices, after those of earlier
 * processes (a resumed run): e->dev_base is where they begin.  loop_s is
 * NaN until tn_devices_done.  Errors: the DB's. */
static kevo_status tn_devices_store(tn_env *e, const kevo_run_row *run, kevo_err *err)
{
    kevo_run_device *had = NULL;
    int nhad = 0;
    kevo_status st = kevo_db_run_devices_get(e->db, run->id, &had, &nhad, err);
    free(had);
    if (st)
        return st;
    e->dev_base = nhad;
    const int total = e->ndev + e->nrem;
    kevo_run_device *v = calloc((size_t)total, sizeof *v);
    if (!v)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (int k = 0; k < total; k++) {
        const kevo_gpu_info *in = &e->dinfo[k];
        v[k].idx = e->dev_base + k;
        v[k].ordinal = e->ord[k];
        snprintf(v[k].host, sizeof v[k].host, "%s", k < e->ndev ? host : e->rgpu[k - e->ndev].host);
        snprintf(v[k].name, sizeof v[k].name, "%s", in->name);
        snprintf(v[k].pci_bus, sizeof v[k].pci_bus, "%s", in->pci_bus);
        v[k].sm_count = in->sm_count;
        const kevo_peer_set *ps = tn_dev_peers(e, run, k, &v[k].peak_tflops, &v[k].copy_tbps);
        v[k].loop_s = NAN;
        /* a distribution's peers are its shapes' (shape_idx), measured by each shape's worker */
        if (!e->dist || k == 0)
            st = kevo_db_peers_put(e->db, run->id, 0, v[k].idx, e->op, ps, err);
        if (st)
            break;
    }
    if (!st)
        st = kevo_db_run_devices_put(e->db, run->id, v, total, err);
    free(v);
    return st;
}

/* At the end of the search loop: each GPU's throughput (candidates per
 * minute, busy fraction; a distribution's: evaluations of a candidate at a
 * shape) stored with its row and, with several GPUs, printed.  Errors: the
 * DB's. */
static kevo_status tn_devices_done(tn_env *e, const kevo_run_row *run, tn_progress *prog, kevo_err *err)
{
    kevo_run_device *v = NULL;
    int n = 0;
    kevo_status st = kevo_db_run_devices_get(e->db, run->id, &v, &n, err);
    double loop_s = kv_now() - e->loop_t0;
    int total = 0;
    const int ndev = e->ndev + e->nrem;
    /* a distribution: one evaluation per candidate and shape */
    const char *what = e->dist ? "shape evaluations" : "candidates";
    for (int k = 0; k < ndev && !st; k++) {
        int idx = e->dev_base + k;
        if (idx >= n || v[idx].idx != idx)
            continue;
        if (k < e->ndev && e->dist) { /* the workers of shapes k, k + ndev, ... */
            v[idx].evaluated = 0;
            v[idx].busy_s = 0;
            for (int i = k; i < e->dist->n; i += e->ndev) {
                v[idx].evaluated += kevo_gpu_evaluated(tn_shape_gpu(e, i));
                v[idx].busy_s += kevo_gpu_busy_s(tn_shape_gpu(e, i));
            }
        } else if (k < e->ndev) {
            v[idx].evaluated = kevo_gpu_evaluated(tn_dgpu(e, k));
            v[idx].busy_s = kevo_gpu_busy_s(tn_dgpu(e, k));
        } else {
            kevo_mpi_gpu_stats(e->mpi, k - e->ndev, &v[idx].evaluated, &v[idx].busy_s);
        }
        v[idx].loop_s = loop_s;
        total += v[idx].evaluated;
        double per_min, busy;
        kevo_run_device_rate(&v[idx], &per_min, &busy);
        if (ndev > 1)
            tn_line(prog, "%s (%s, %s, %s): %d %s in %.1f s, %.1f per minute, busy %.0f%%", e->dlabel[k],
                    v[idx].name, v[idx].host, v[idx].pci_bus, v[idx].evaluated, what, loop_s,
                    loop_s > 0 ? per_min : 0.0, loop_s > 0 ? 100.0 * busy : 0.0);
        st = kevo_db_run_devices_put(e->db, run->id, &v[idx], 1, err);
    }
    if (!st && ndev > 1)
        tn_line(prog, "%d GPUs: %d %s in %.1f s of search, %.1f per minute", ndev, total, what, loop_s,
                loop_s > 0 ? 60.0 * total / loop_s : 0.0);
    free(v);
    return st;
}

/* Fill the run row's settings from the options (a new run). */
/* The run's device: its name, driver, SMs, clocks and measured ceilings. */
static void tn_run_device(kevo_run_row *run, const kevo_gpu_info *info)
{
    snprintf(run->device, sizeof run->device, "%s", info->name);
    run->driver_version = info->driver_version;
    run->sm_count = info->sm_count;
    run->sm_clock_mhz = info->sm_clock_mhz;
    run->mem_clock_mhz = info->mem_clock_mhz;
    run->peak_tflops = info->peak_tflops;
    run->copy_tbps = info->copy_tbps;
}

static void tn_run_settings(kevo_run_row *run, const tn_env *e, const kevo_tune_opts *o, const char *policy,
                            const char *families)
{
    snprintf(run->op, sizeof run->op, "%s", e->op->name);
    snprintf(run->shape, sizeof run->shape, "%s", e->shape_txt);
    snprintf(run->dtype, sizeof run->dtype, "%s", kevo_dtype_name(e->dt));
    snprintf(run->arch, sizeof run->arch, "%s", e->arch);
    snprintf(run->policy, sizeof run->policy, "%s", policy);
    snprintf(run->families, sizeof run->families, "%s", families);
    run->seed = (int64_t)o->seed;
    run->budget = o->budget;
    snprintf(run->filter, sizeof run->filter, "%s", o->where ? o->where : "");
    snprintf(run->warm_start, sizeof run->warm_start, "%s", o->warm_start ? o->warm_start : "");
    run->compile_only = o->compile_only;
    run->flops = e->op->flops(&e->shape);
    run->bytes = e->op->bytes(&e->shape, e->dt);
}

static kevo_status tn_policy(const char *name, const kevo_policy **out, kevo_err *err)
{
    *out = kevo_policy_find(name);
    if (*out)
        return KEVO_OK;
    int n;
    const kevo_policy *const *all = kevo_policy_list(&n);
    kv_buf names;
    kv_buf_init(&names);
    for (int i = 0; i < n; i++)
        kv_buf_printf(&names, "%s%s", i ? ", " : "", all[i]->name);
    kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown policy '%.100s' (known: %s)", name, names.data);
    kv_buf_release(&names);
    return KEVO_ERR_NOT_FOUND;
}

/* ---- what defines a run: stored, compared on resume ---- */

static int tn_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A --family list as a set: its names deduplicated and sorted, joined by
 * commas into out[n] ("" for NULL).  false when it does not fit. */
static bool tn_family_set(const char *list, char *out, size_t n)
{
    out[0] = '\0';
    if (!list)
        return true;
    char *buf = kv_strdup(list);
    size_t cap = strlen(list) / 2 + 2, k = 0;
    char **names = malloc(cap * sizeof *names);
    bool ok = buf && names;
    for (char *save = NULL, *t = ok ? strtok_r(buf, ",", &save) : NULL; t && k < cap; t = strtok_r(NULL, ",", &save))
        names[k++] = t;
    if (ok)
        qsort(names, k, sizeof *names, tn_cmp_str);
    kv_buf b;
    kv_buf_init(&b);
    for (size_t i = 0; ok && i < k; i++)
        if (i == 0 || strcmp(names[i], names[i - 1]) != 0)
            ok = kv_buf_printf(&b, "%s%s", b.len ? "," : "", names[i]) == KEVO_OK;
    ok = ok && (b.len < n);
    if (ok)
        snprintf(out, n, "%s", b.data ? b.data : "");
    kv_buf_release(&b);
    free(names);
    free(buf);
    return ok;
}

/* "family=<first 16 hex digits of sha256(space file, sources)>,..." of the
 * searched families into out[n]: what a resume checks so that one run
 * never mixes two versions of a space. */
static kevo_status tn_space_hash(const tn_env *e, char *out, size_t n, kevo_err *err)
{
    kv_buf b;
    kv_buf_init(&b);
    kevo_status st = KEVO_OK;
    for (int i = 0; i < e->nspaces && !st; i++) {
        const kevo_space *sp = e->spaces[i];
        char *json = NULL;
        size_t len = 0;
        if (sp->path && (st = kv_read_file(sp->path, &json, &len, err)))
            break;
        const void *bufs[] = {json ? json : "", sp->source ? sp->source : ""};
        size_t lens[] = {json ? len : 0, sp->source ? strlen(sp->source) : 0};
        char hex[65];
        kv_sha256_hex(bufs, lens, 2, hex);
        free(json);
        if (kv_buf_printf(&b, "%s%s=%.16s", i ? "," : "", sp->family, hex))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    if (!st && b.len >= n)
        st = kevo_err_set(err, KEVO_ERR_ARG, "too many template families for one run (%d)", e->nspaces);
    if (!st)
        snprintf(out, n, "%s", b.data ? b.data : "");
    kv_buf_release(&b);
    return st;
}

/* A resumed run's families against the hashes it stored: one that changed
 * is named, and nothing is written. */
static kevo_status tn_space_check(const tn_env *e, int64_t run_id, const char *stored, kevo_err *err)
{
    char now[KEVO_SPACE_HASH_MAX];
    kevo_status st = tn_space_hash(e, now, sizeof now, err);
    if (st || !stored[0])
        return st;
    char *buf = kv_strdup(stored);
    if (!buf)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !st; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        if (!eq)
            continue;
        *eq = '\0';
        kevo_space *sp = kevo_spaces_find(e->spaces, e->nspaces, t);
        char pat[128];
        snprintf(pat, sizeof pat, "%s=%s", t, eq + 1);
        size_t pl = strlen(pat);
        bool same = false;
        for (const char *p = now; sp && (p = strstr(p, pat)) != NULL; p += pl)
            same |= (p == now || p[-1] == ',') && (p[pl] == ',' || p[pl] == '\0');
        if (!same)
            st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED,
                              "template family '%s' changed since run %lld started ('%s' or its sources differ): "
                              "resuming would mix two versions of its space; restore it, or start a new run",
                              t, (long long)run_id, sp && sp->path ? sp->path : "its space file");
    }
    free(buf);
    return st;
}

/* The refusal of an option that differs from the resumed run's. */
static kevo_status tn_conflict(kevo_err *err, const kevo_run_row *run, const char *opt, const char *given,
                               const char *stored)
{
    return kevo_err_set(err, KEVO_ERR_ARG,
                        "%s %.200s differs from run %lld's %.200s: a resumed run keeps what it started with "
                        "(start a new run to change it)",
                        opt, given, (long long)run->id, stored[0] ? stored : "(none)");
}

/* A resumed run's options: the stored ones, compared with those the user
 * named (o->given).  ro and rs receive what the run continues with;
 * *extends says whether a finished run has something left to do. */
static kevo_status tn_resume_opts(const kevo_tune_opts *o, const kevo_run_row *run, const kevo_run_settings *stored,
                                  const kevo_run_shape *shapes, int nshapes, kevo_tune_opts *ro,
                                  kevo_run_settings *rs, bool *extends, kevo_err *err)
{
    uint32_t g = o->given;
    char a[64], b[64];
    *extends = false;
    const kevo_op *op = kevo_op_find(run->op);
    if (!op)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld is of unknown op '%s'", (long long)run->id, run->op);
    if ((g & KEVO_TUNE_GIVEN_OP) && strcmp(o->op, run->op) != 0)
        return tn_conflict(err, run, "--op", o->op, run->op);
    if (g & KEVO_TUNE_GIVEN_SHAPE) {
        kevo_syms sh;
        char txt[256];
        if (nshapes > 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--shape: run %lld searches a distribution of %d shapes",
                                (long long)run->id, nshapes);
        kevo_status st = op->parse_shape(o->shape, &sh, err);
        if (st)
            return st;
        op->shape_str(&sh, txt, sizeof txt);
        if (strcmp(txt, run->shape) != 0)
            return tn_conflict(err, run, "--shape", txt, run->shape);
    }
    if (g & KEVO_TUNE_GIVEN_SHAPES) {
        if (nshapes == 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--shapes: run %lld searches one shape (%s)", (long long)run->id,
                                run->shape);
        kevo_dist *d = calloc(1, sizeof *d);
        if (!d)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        kevo_status st = kevo_dist_read(o->shapes_file, op, d, err);
        bool same = !st && d->n == nshapes;
        for (int i = 0; same && i < nshapes; i++)
            same = strcmp(d->text[i], shapes[i].shape) == 0 && d->weight[i] == shapes[i].weight;
        free(d);
        if (st)
            return st;
        if (!same)
            return tn_conflict(err, run, "--shapes", o->shapes_file, "distribution (kevo report shows it)");
    }
    if (g & KEVO_TUNE_GIVEN_DTYPE) {
        kevo_dtype x, y;
        if (!kevo_dtype_parse(o->dtype, &x) || !kevo_dtype_parse(run->dtype, &y) || x != y)
            return tn_conflict(err, run, "--dtype", o->dtype, run->dtype);
    }
    if ((g & KEVO_TUNE_GIVEN_ARCH) && strcmp(o->arch, run->arch) != 0)
        return tn_conflict(err, run, "--arch", o->arch, run->arch);
    if ((g & KEVO_TUNE_GIVEN_POLICY) && strcmp(o->policy, run->policy) != 0)
        return tn_conflict(err, run, "--policy", o->policy, run->policy);
    if (g & KEVO_TUNE_GIVEN_FAMILIES) {
        char want[1024], have[1024];
        if (!tn_family_set(o->families, want, sizeof want))
            return kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is longer than %zu characters",
                                sizeof want - 1);
        tn_family_set(stored ? (stored->family_arg[0] ? stored->family_arg : NULL) : run->families, have,
                      sizeof have);
        if (strcmp(want, have) != 0)
            return tn_conflict(err, run, "--family", want, have[0] ? have : "(all of the op's)");
    }
    if ((g & KEVO_TUNE_GIVEN_WHERE) && strcmp(o->where ? o->where : "", run->filter) != 0)
        return tn_conflict(err, run, "--where", o->where ? o->where : "", run->filter);
    if ((g & KEVO_TUNE_GIVEN_SEED) && (int64_t)o->seed != run->seed) {
        snprintf(a, sizeof a, "%llu", (unsigned long long)o->seed);
        snprintf(b, sizeof b, "%lld", (long long)run->seed);
        return tn_conflict(err, run, "--seed", a, b);
    }
    if ((g & KEVO_TUNE_GIVEN_COMPILE_ONLY) && o->compile_only != run->compile_only)
        return kevo_err_set(err, KEVO_ERR_ARG, "--compile-only: run %lld measures on a GPU; a resumed run keeps "
                            "what it started with", (long long)run->id);
    if ((g & KEVO_TUNE_GIVEN_WARM) && strcmp(o->warm_start ? o->warm_start : "", run->warm_start) != 0)
        return tn_conflict(err, run, "--warm-start", o->warm_start ? o->warm_start : "", run->warm_start);
    if (stored) {
        if ((g & KEVO_TUNE_GIVEN_TEMPLATES) && strcmp(o->extra_templates ? o->extra_templates : "", stored->templates))
            return tn_conflict(err, run, "--templates", o->extra_templates ? o->extra_templates : "",
                               stored->templates);
        struct {
            uint32_t bit;
            const char *name;
            int64_t given, had;
        } nums[] = {{KEVO_TUNE_GIVEN_MAPS, "--maps", o->maps, stored->maps},
                    {KEVO_TUNE_GIVEN_REPS, "--reps", o->reps, stored->reps},
                    {KEVO_TUNE_GIVEN_WARMUP, "--warmup", o->warmup, stored->warmup},
                    {KEVO_TUNE_GIVEN_BATCH, "--batch", o->batch, stored->batch},
                    {KEVO_TUNE_GIVEN_AHEAD, "--ahead", o->ahead, stored->ahead}};
        for (size_t i = 0; i < KV_ARRAY_LEN(nums); i++)
            if ((g & nums[i].bit) && nums[i].given != nums[i].had) {
                if (nums[i].bit == KEVO_TUNE_GIVEN_MAPS)
                    return kevo_err_set(err, KEVO_ERR_ARG, "--maps differs from run %lld's: a resumed run keeps "
                                        "what it started with (start a new run to change it)", (long long)run->id);
                snprintf(a, sizeof a, "%lld", (long long)nums[i].given);
                snprintf(b, sizeof b, "%lld", (long long)nums[i].had);
                return tn_conflict(err, run, nums[i].name, a, b);
            }
    }
    if ((g & KEVO_TUNE_GIVEN_BUDGET) && o->budget < run->budget)
        return kevo_err_set(err, KEVO_ERR_ARG,
                            "--budget %lld is below run %lld's budget %lld: a resume can raise the budget, not "
                            "lower it",
                            (long long)o->budget, (long long)run->id, (long long)run->budget);

    /* what the run continues with: stored, extended where asked */
    ro->op = run->op;
    ro->shape = run->shape;
    ro->dtype = run->dtype;
    ro->arch = run->arch;
    ro->policy = run->policy;
    ro->families = run->families;
    ro->seed = (uint64_t)run->seed;
    ro->compile_only = run->compile_only;
    ro->where = run->filter[0] ? run->filter : NULL;
    ro->shapes_file = NULL;
    ro->warm_start = run->warm_start[0] ? run->warm_start : NULL;
    ro->budget = (g & KEVO_TUNE_GIVEN_BUDGET) ? o->budget : run->budget;
    *extends = ro->budget > run->budget;
    if (!stored) { /* a run of an older kevo: what it searched stands for what it asked, a round at a time */
        tn_family_set(run->families, rs->family_arg, sizeof rs->family_arg);
        ro->ahead = 1;
    }
    if (stored) {
        *rs = *stored;
        ro->extra_templates = stored->templates[0] ? stored->templates : NULL;
        ro->maps = stored->maps;
        ro->reps = stored->reps;
        ro->warmup = stored->warmup;
        ro->batch = stored->batch;
        ro->ahead = stored->ahead;
        ro->time_limit = stored->time_limit;
        ro->plateau = stored->plateau;
        ro->target = stored->target;
        if (!(g & KEVO_TUNE_GIVEN_CTIMEOUT))
            ro->compile_timeout = stored->compile_timeout;
        if (!(g & KEVO_TUNE_GIVEN_ETIMEOUT))
            ro->eval_timeout = stored->eval_timeout;
    }
    /* the termination options are the run's from now on */
    if ((g & KEVO_TUNE_GIVEN_TIME_LIMIT) && o->time_limit != ro->time_limit) {
        ro->time_limit = o->time_limit;
        *extends = true;
    }
    if ((g & KEVO_TUNE_GIVEN_PLATEAU) && o->plateau != ro->plateau) {
        ro->plateau = o->plateau;
        *extends = true;
    }
    if ((g & KEVO_TUNE_GIVEN_TARGET) && o->target != ro->target) {
        ro->target = o->target;
        *extends = true;
    }
    return KEVO_OK;
}

/* The settings row of a run from the options it runs with. */
static void tn_settings_fill(kevo_run_settings *rs, const kevo_tune_opts *ro)
{
    rs->batch = ro->batch;
    rs->ahead = ro->ahead;
    rs->maps = ro->maps;
    rs->reps = ro->reps;
    rs->warmup = ro->warmup;
    rs->time_limit = ro->time_limit;
    rs->plateau = ro->plateau;
    rs->target = ro->target;
    rs->compile_timeout = ro->compile_timeout;
    rs->eval_timeout = ro->eval_timeout;
    snprintf(rs->templates, sizeof rs->templates, "%s", ro->extra_templates ? ro->extra_templates : "");
}

/* A path as one shell word (single-quoted when it needs quoting). */
static void tn_shell_word(kv_buf *b, const char *s)
{
    bool plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                strchr("_./-+=:,@%", *p) != NULL;
    if (plain) {
        kv_buf_puts(b, s);
        return;
    }
    kv_buf_puts(b, "'");
    for (const char *p = s; *p; p++)
        if (*p == '\'')
            kv_buf_puts(b, "'\\''");
        else
            kv_buf_append(b, p, 1);
    kv_buf_puts(b, "'");
}

/* The message of an interrupted run: what happened and the command that
 * continues it. */
static kevo_status tn_interrupted(kevo_err *err, int64_t run_id, const char *db_path, int written)
{
    const char *name = kv_signal_name(kv_signal_caught());
    if (run_id <= 0)
        return kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by %s before the run started; nothing was stored",
                            name);
    kv_buf cmd;
    kv_buf_init(&cmd);
    kv_buf_printf(&cmd, "kevo tune --resume %lld --db ", (long long)run_id);
    tn_shell_word(&cmd, db_path);
    kevo_err_set(err, KEVO_ERR_INTERRUPTED, "interrupted by %s: run %lld is %s; continue it with: %s", name,
                 (long long)run_id,
                 written == 1 ? "stored as interrupted"
                 : written    ? "still marked running by this ended process (the DB could not be written)"
                              : "unchanged",
                 cmd.data ? cmd.data : "");
    kv_buf_release(&cmd);
    return KEVO_ERR_INTERRUPTED;
}

/* The run, between kevo_tune's signal handlers. */
/* The result of reading an optional row (a run of an older kevo has none):
 * *have when it was there; KEVO_ERR_NOT_FOUND is no error, any other error
 * (its message in got) is passed on. */
static kevo_status tn_optional(kevo_status s, const kevo_err *got, bool *have, kevo_err *err)
{
    *have = s == KEVO_OK;
    if (s && s != KEVO_ERR_NOT_FOUND) {
        *err = *got;
        return s;
    }
    return KEVO_OK;
}

/* ---- generators and the LLM's settings ---- */

/* Parse a --generators list into flags; false for an unknown name, an
 * empty list or a repeated name. */
static bool tn_generators(const char *list, bool *tpl, bool *llm)
{
    *tpl = *llm = false;
    if (!list || !*list)
        return false;
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        bool *flag = len == 8 && strncmp(p, "template", 8) == 0 ? tpl : len == 3 && strncmp(p, "llm", 3) == 0 ? llm
                                                                                                            : NULL;
        if (!flag || *flag)
            return false;
        *flag = true;
        p += len;
        if (!*p++)
            return true;
    }
}

/* A new run's LLM settings from the options (generators normalized). */
static void tn_llm_new(const kevo_tune_opts *o, kevo_run_llm *rl)
{
    memset(rl, 0, sizeof *rl);
    bool tpl, llm;
    if (tn_generators(o->generators, &tpl, &llm))
        snprintf(rl->generators, sizeof rl->generators, "%s%s%s", tpl ? "template" : "", tpl && llm ? "," : "",
                 llm ? "llm" : "");
    else
        snprintf(rl->generators, sizeof rl->generators, "%.60s", o->generators ? o->generators : "");
    rl->llm_budget = o->llm_budget;
    snprintf(rl->url, sizeof rl->url, "%s", o->llm_url ? o->llm_url : "");
    snprintf(rl->model, sizeof rl->model, "%s", o->llm_model ? o->llm_model : "");
    rl->temperature = o->llm_temperature;
    rl->seed = o->llm_seed;
    rl->max_tokens = o->llm_max_tokens;
}

/* The options that only an LLM generator uses. */
#define TN_GIVEN_LLM                                                                                              \
    (KEVO_TUNE_GIVEN_LLM_URL | KEVO_TUNE_GIVEN_LLM_MODEL | KEVO_TUNE_GIVEN_LLM_TEMPERATURE |                    \
     KEVO_TUNE_GIVEN_LLM_SEED | KEVO_TUNE_GIVEN_LLM_BUDGET | KEVO_TUNE_GIVEN_LLM_MAX_TOKENS |                    \
     KEVO_TUNE_GIVEN_LLM_OTHER)

/* An LLM option given to a run without the llm generator: a usage error
 * (KEVO_ERR_ARG naming it), never silently ignored. */
static kevo_status tn_llm_unused(uint32_t given, const char *generators, bool resume, kevo_err *err)
{
    if (!(given & TN_GIVEN_LLM))
        return KEVO_OK;
    const char *name = (given & KEVO_TUNE_GIVEN_LLM_URL)           ? "--llm-url"
                       : (given & KEVO_TUNE_GIVEN_LLM_MODEL)       ? "--llm-model"
                       : (given & KEVO_TUNE_GIVEN_LLM_BUDGET)      ? "--llm-budget"
                       : (given & KEVO_TUNE_GIVEN_LLM_TEMPERATURE) ? "--llm-temperature"
                       : (given & KEVO_TUNE_GIVEN_LLM_SEED)        ? "--llm-seed"
                       : (given & KEVO_TUNE_GIVEN_LLM_MAX_TOKENS)  ? "--llm-max-tokens"
                                                                   : "an LLM option (--llm-timeout, --llm-retries, "
                                                                     "--llm-prompt-chars or --prompts)";
    if (resume)
        return kevo_err_set(err, KEVO_ERR_ARG, "%s is given, but the run searches without the LLM (generators "
                            "'%.60s'): an LLM option applies only to a run with --generators llm", name, generators);
    return kevo_err_set(err, KEVO_ERR_ARG, "%s is given without --generators llm (or template,llm): it would be "
                        "ignored", name);
}

/* Usage checks of the generator options (KEVO_ERR_ARG), nothing cut.
 * need_url: a new run with the llm generator must name its server (a
 * resumed one without --llm-url makes no LLM call). */
static kevo_status tn_llm_check(const kevo_run_llm *rl, bool need_url, kevo_err *err)
{
    bool tpl, llm;
    if (!tn_generators(rl->generators, &tpl, &llm))
        return kevo_err_set(err, KEVO_ERR_ARG, "--generators '%.100s': a comma list of template and llm",
                            rl->generators);
    if (llm && need_url && !rl->url[0])
        return kevo_err_set(err, KEVO_ERR_ARG, "--generators llm needs --llm-url (an OpenAI-compatible API base, "
                            "e.g. http://127.0.0.1:8080/v1)");
    kevo_err uerr;
    if (llm && rl->url[0] && kevo_llm_gen_check_url(rl->url, &uerr))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-url: %s", uerr.msg);
    if (rl->llm_budget < 0 || rl->llm_budget > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget must be 0..1000000");
    if (rl->max_tokens < 0 || rl->max_tokens > 1000000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-max-tokens must be 0..1000000");
    if (!isnan(rl->temperature) && !(rl->temperature >= 0 && rl->temperature <= 2))
        return kevo_err_set(err, KEVO_ERR_ARG, "--llm-temperature must be 0..2");
    return KEVO_OK;
}

/* A resumed run's generators: stored (a run of an older kevo, or one
 * without LLM settings, searched templates only).  --generators may be
 * repeated, not changed; a larger --llm-budget extends the run; the
 * model, temperature, seed and token limit given now replace the stored
 * ones.  The server is only ever the one this command line names: the URL
 * a DB holds is never called (the DB may come from anywhere, and the API
 * key goes with every call), so without --llm-url rl->url is empty and
 * this process makes no LLM call.  LLM options for a run without the llm
 * generator are a usage error. */
static kevo_status tn_llm_resume(const kevo_tune_opts *o, const kevo_run_row *run, bool have, kevo_run_llm *rl,
                                 bool *extends, kevo_err *err)
{
    uint32_t g = o->given;
    kevo_run_llm want;
    tn_llm_new(o, &want);
    if (!have) {
        memset(rl, 0, sizeof *rl);
        snprintf(rl->generators, sizeof rl->generators, "template");
        rl->seed = -1;
        rl->temperature = NAN;
    }
    if ((g & KEVO_TUNE_GIVEN_GENERATORS) && strcmp(want.generators, rl->generators) != 0)
        return tn_conflict(err, run, "--generators", want.generators, rl->generators);
    if (g & KEVO_TUNE_GIVEN_LLM_BUDGET) {
        if (want.llm_budget < rl->llm_budget)
            return kevo_err_set(err, KEVO_ERR_ARG, "--llm-budget %lld is below run %lld's %lld: a resume can raise "
                                "it, not lower it", (long long)want.llm_budget, (long long)run->id,
                                (long long)rl->llm_budget);
        *extends |= want.llm_budget > rl->llm_budget;
        rl->llm_budget = want.llm_budget;
    }
    bool tpl = true, llm = false;
    tn_generators(rl->generators, &tpl, &llm);
    kevo_status st = llm ? KEVO_OK : tn_llm_unused(g, rl->generators, true, err);
    if (st)
        return st;
    /* the endpoint: this command line's, or none (never the DB's) */
    snprintf(rl->url, sizeof rl->url, "%s", (g & KEVO_TUNE_GIVEN_LLM_URL) ? want.url : "");
    if (g & KEVO_TUNE_GIVEN_LLM_MODEL)
        snprintf(rl->model, sizeof rl->model, "%s", want.model);
    if (g & KEVO_TUNE_GIVEN_LLM_TEMPERATURE)
        rl->temperature = want.temperature;
    if (g & KEVO_TUNE_GIVEN_LLM_SEED)
        rl->seed = want.seed;
    if (g & KEVO_TUNE_GIVEN_LLM_MAX_TOKENS)
        rl->max_tokens = want.max_tokens;
    return tn_llm_check(rl, false, err);
}

/* in_list: one run of an --arch list (kevo_tune_archs), whose families that do not target this arch
 * are left out with a line */
static kevo_status tn_tune(const kevo_tune_opts *o, int64_t *run_id, bool in_list, kevo_err *err)
{
    *run_id = 0;
    if (o->jobs < 1 || o->jobs > 256)
        return kevo_err_set(err, KEVO_ERR_ARG, "--jobs must be 1..256");
    if (o->batch < 1 || o->batch > KEVO_TUNE_BATCH_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "--batch must be 1..%d", KEVO_TUNE_BATCH_MAX);
    if (o->ahead < 1 || o->ahead > KEVO_TUNE_AHEAD_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "--ahead must be 1..%d", KEVO_TUNE_AHEAD_MAX);
    if (o->reps < 1 || o->reps > 1000 || o->warmup < 0 || o->warmup > 1000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--reps must be 1..1000 and --warmup 0..1000");
    if (!(o->compile_timeout >= 0.1 && o->compile_timeout <= KEVO_TUNE_TIMEOUT_MAX) ||
        !(o->eval_timeout >= 0.1 && o->eval_timeout <= KEVO_TUNE_TIMEOUT_MAX))
        return kevo_err_set(err, KEVO_ERR_ARG, "timeouts must be 0.1..%d seconds", KEVO_TUNE_TIMEOUT_MAX);
    if (!(o->time_limit >= 0) || !(o->target >= 0) || o->plateau < 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "--time-limit, --target and --plateau must not be negative");
    /* an output never replaces an input (the same file by device and inode, whatever the names) */
    if (o->shapes_file && kv_same_file(o->db_path, o->shapes_file))
        return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is the --shapes file: kevo never writes over an input",
                            o->db_path);
    kevo_run_row run;
    kevo_run_row_init(&run);
    kevo_run_settings rs;
    memset(&rs, 0, sizeof rs);
    tn_env e;
    memset(&e, 0, sizeof e);
    kevo_peer_set_init(&e.run_peers);
    kevo_status st = KEVO_OK;
    kevo_tune_opts ro = *o; /* a resumed run takes its settings from the DB */
    kevo_peer_row *prows = NULL; /* a resumed run's peers as stored */
    int nprows = 0;
    const bool resume = o->resume_run > 0;
    bool extends = false;
    kevo_run_shape *stored = NULL;
    int nstored = 0;
    kevo_run_llm rl; /* the generators and the LLM's settings */
    tn_llm_new(o, &rl);
    bool have_llm = false, handoff = false;
    if (!resume) {
        bool tpl0 = true, llm0 = false;
        tn_generators(rl.generators, &tpl0, &llm0);
        if ((st = tn_llm_check(&rl, true, err)))
            return st;
        if (!llm0 && (st = tn_llm_unused(o->given, rl.generators, false, err)))
            return st;
    }
    kevo_run_settings had; /* ro's strings may point into it for the whole run */
    bool have = false;
    kevo_run_row seen; /* the run as this process first read it: its claim checks nobody took it since */
    kevo_run_row_init(&seen);
    if (resume) {
        /* read-only until the run is claimed: a resume that is refused writes nothing */
        if ((st = kevo_db_open_ro(o->db_path, &e.db, err)))
            return st;
        st = kevo_db_run_get(e.db, o->resume_run, &run, err);
        if (!st)
            st = tn_run_free(&run, err);
        seen = run;
        kevo_err e2;
        if (!st)
            st = tn_optional(kevo_db_run_settings_get(e.db, run.id, &had, &e2), &e2, &have, err);
        if (!st && run.nshapes > 0)
            st = kevo_db_run_shapes_get(e.db, run.id, &stored, &nstored, err);
        if (!st)
            st = kevo_db_peers_list(e.db, run.id, &prows, &nprows, err);
        if (!st)
            st = tn_optional(kevo_db_run_llm_get(e.db, run.id, &rl, &e2), &e2, &have_llm, err);
        kevo_db_close(e.db);
        e.db = NULL;
        if (!st)
            st = tn_resume_opts(o, &run, have ? &had : NULL, stored, nstored, &ro, &rs, &extends, err);
        if (!st)
            st = tn_llm_resume(o, &run, have_llm, &rl, &extends, err);
        /* the hand-off: a compile-only run continued on a machine with a GPU */
        kevo_err e3;
        if (!st && ro.compile_only && !(o->given & KEVO_TUNE_GIVEN_COMPILE_ONLY) &&
            kevo_gpu_probe(ro.device, &e3) == KEVO_OK) {
            handoff = true;
            ro.compile_only = false;
            run.compile_only = false;
            extends = true;
        }
        if (st) {
            free(stored);
            free(prows);
            return st;
        }
        *run_id = run.id;
        if (strcmp(run.status, "done") == 0 && !extends) {
            free(stored);
            free(prows);
            kv_emit(ro.on_event, ro.event_ctx, KEVO_EVENT_LINE, 0,
                    "run %lld is finished (%s): nothing to do; a larger --budget, or another --time-limit, "
                    "--plateau or --target continues it",
                    (long long)run.id, run.stop_reason[0] ? run.stop_reason : "done");
            return KEVO_OK;
        }
        /* a GPU run needs a GPU here: said before anything is written */
        if (!ro.compile_only && !handoff) {
            int dev = ro.device;
            if (o->devices && o->devices[0] >= '0' && o->devices[0] <= '9')
                dev = atoi(o->devices);
            if ((st = kevo_gpu_probe(dev, err))) {
                free(stored);
                free(prows);
                kevo_err_prefix(err, "run %lld was timed on a GPU", (long long)run.id);
                return st;
            }
        }
    } else if (o->budget < 1) {
        return kevo_err_set(err, KEVO_ERR_ARG, "--budget must be at least 1");
    }
    /* a distribution: from the file (a new run) or as the run stored it */
    kevo_dist *dist = NULL;
    if (resume && run.nshapes > 0) {
        const kevo_op *op = kevo_op_find(run.op);
        if (!op || nstored != run.nshapes || nstored > KEVO_DIST_MAX)
            st = kevo_err_set(err, KEVO_ERR_DB, "run %lld's shapes are not as it stored them", (long long)run.id);
        if (!st && !(dist = calloc(1, sizeof *dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; i < nstored && !st; i++) {
            st = op->parse_shape(stored[i].shape, &dist->shape[i], err);
            op->shape_str(&dist->shape[i], dist->text[i], sizeof dist->text[i]);
            dist->weight[i] = stored[i].weight;
            dist->n++;
        }
    } else if (!resume && o->shapes_file) {
        const kevo_op *op = kevo_op_find(ro.op ? ro.op : "");
        if (o->shape)
            st = kevo_err_set(err, KEVO_ERR_ARG, "--shape and --shapes exclude each other");
        else if (!op)
            st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%.100s'", ro.op ? ro.op : "");
        else if (!(dist = calloc(1, sizeof *dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        else
            st = kevo_dist_read(o->shapes_file, op, dist, err);
        if (!st)
            ro.shape = dist->text[0];
    }
    /* nothing a run stores is cut short: too long is refused */
    if (!st && ro.where && strlen(ro.where) >= sizeof run.filter)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--where is longer than %zu characters", sizeof run.filter - 1);
    if (!st && ro.warm_start && strlen(ro.warm_start) >= sizeof run.warm_start)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--warm-start: the path is longer than %zu characters",
                          sizeof run.warm_start - 1);
    if (!st && ro.extra_templates && strlen(ro.extra_templates) >= sizeof rs.templates)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--templates: the path is longer than %zu characters",
                          sizeof rs.templates - 1);
    if (!st && !resume && !tn_family_set(ro.families, rs.family_arg, sizeof rs.family_arg))
        st = kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is longer than %zu characters",
                          sizeof rs.family_arg - 1);
    if (st) {
        free(dist);
        free(stored);
        free(prows);
        return st;
    }
    const kevo_policy *policy;
    if ((st = tn_policy(ro.policy, &policy, err))) {
        free(dist);
        free(stored);
        free(prows);
        return st;
    }
    st = tn_env_open(&e, ro.op, ro.shape, ro.dtype, ro.arch, ro.data_dir, ro.extra_templates, err);
    if (!st)
        st = tn_db_not_input(&e, ro.db_path, ro.prompts_dir, err);
    e.dist = dist;
    e.peers = stored;
    if (!st && dist)
        st = tn_alloc_shapes(&e, err);
    if (!st) { /* a resumed run's peers as it stored them (shape i at speers[i]) */
        kevo_peer_rows_set(e.op, prows, nprows, 0, 0, &e.run_peers);
        for (int i = 1; dist && i < dist->n; i++)
            kevo_peer_rows_set(e.op, prows, nprows, i, 0, &e.speers[i]);
    }
    free(prows);
    prows = NULL;
    e.on_event = ro.on_event;
    e.event_ctx = ro.event_ctx;
    if (!st)
        st = tn_select_families(&e, ro.families, false, !resume && !in_list, err);
    /* the generators this process runs: the LLM only with a server this command line names (a resume
     * without --llm-url makes no LLM call); its prompts folder checked before anything compiles */
    bool gen_tpl = true, gen_llm = false, llm_off = false;
    tn_generators(rl.generators, &gen_tpl, &gen_llm);
    if (gen_llm && !rl.url[0]) {
        gen_llm = false;
        gen_tpl = true;
        llm_off = true;
    }
    char prompts[PATH_MAX];
    snprintf(prompts, sizeof prompts, "%s/prompts", ro.data_dir ? ro.data_dir : ".");
    if (!st && gen_llm)
        st = kevo_llm_gen_check_prompts(ro.prompts_dir ? ro.prompts_dir : prompts, e.op->name, err);
    kv_buf fams;
    kv_buf_init(&fams);
    for (int i = 0; !st && i < e.nspaces; i++)
        if (kv_buf_printf(&fams, "%s%s", i ? "," : "", e.spaces[i]->family))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st && fams.len >= sizeof run.families)
        st = kevo_err_set(err, KEVO_ERR_ARG, "the %d families to search make a list longer than %zu characters; "
                          "name fewer with --family", e.nspaces, sizeof run.families - 1);
    /* a space changed since the run started: named, and nothing is written */
    if (!st && resume)
        st = tn_space_check(&e, run.id, rs.space_hash, err);
    if (!st)
        st = tn_space_hash(&e, rs.space_hash, sizeof rs.space_hash, err);
    /* a new run opens (creates) its DB only once its options, its search
     * and (GPU) the device are known to be good */
    if (!st && resume)
        st = kevo_db_open(ro.db_path, false, &e.db, err);
    if (st) {
        kv_buf_release(&fams);
        tn_env_release(&e);
        return st;
    }
    e.jobs = ro.jobs;
    e.compile_timeout = ro.compile_timeout;
    e.mpi = o->mpi;

    tn_progress prog = {.fn = ro.on_event, .ctx = ro.event_ctx, .budget = ro.budget, .t0 = kv_now()};
    tn_work ref;
    memset(&ref, 0, sizeof ref);
    if (!st && o->devices && ro.compile_only)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--devices: a compile-only run uses no GPU");
    if (!st && !ro.compile_only)
        st = tn_devices(&e, o->devices, o->mixed_devices, ro.device, err);
    if (!st && e.dist && e.ndev > e.dist->n) { /* shape i is evaluated on GPU i mod ndev */
        tn_line(&prog, "kevo: shape i is evaluated on the i-th GPU listed, so %d shapes use the first %d of the %d "
                "GPUs", e.dist->n, e.dist->n, e.ndev);
        e.ndev = e.dist->n;
    }
    if (!st)
        tn_pch_prepare(&e);
    if (!st && !ro.compile_only) {
        tn_line(&prog, "kevo: compiling the %s reference module for %s", e.op->name, e.arch);
        st = tn_ref_module(&e, &ref, err);
        if (!st && e.ndev > 1 && e.dist)
            tn_line(&prog, "kevo: starting the GPU worker of shape 1 of %d (%s) on GPU %d (inputs, reference, "
                    "stage-0 baseline, ceilings)", e.dist->n, e.dist->text[0], e.ord[0]);
        else if (!st && e.ndev > 1)
            tn_line(&prog, "kevo: starting a GPU worker on each of %d GPUs (inputs, reference, each one's "
                    "stage-0 baseline and ceilings)", e.ndev);
        else if (!st)
            tn_line(&prog, "kevo: starting the GPU worker (inputs, reference, stage-0 baseline, ceilings)");
        if (!st)
            st = tn_start_gpu(&e, &ref, ro.warmup, ro.reps, ro.eval_timeout, ro.seed, true, !resume || handoff, err);
        if (!st && e.mpi && !e.dist && kevo_mpi_size(e.mpi) > 1) {
            tn_line(&prog, "kevo: starting a GPU worker on each other MPI rank (each one's peers and ceilings)");
            st = tn_remote_devices(&e, &ref, &ro, o->mixed_devices, err);
        }
        if (!st && e.mpi && e.dist && kevo_mpi_size(e.mpi) > 1)
            tn_line(&prog, "kevo: a distribution of shapes is evaluated on this rank's GPUs; the other ranks "
                    "compile");
        tn_dev_labels(&e);
        if (!st && e.dist)
            st = tn_start_shape_gpus(&e, &ref, &ro, &prog, err);
    }
    if (!resume) {
        tn_run_settings(&run, &e, &ro, policy->name, fams.data ? fams.data : "");
        if (!ro.compile_only)
            tn_run_device(&run, &e.info);
    }
    if (!ro.compile_only)
        tn_keep_peers(e.op, &e.run_peers, &e.info.peers);
    if (!st && handoff) /* the GPU the compile-only run never had */
        tn_run_device(&run, &e.info);
    kv_buf_release(&fams);
    tn_settings_fill(&rs, &ro);

    /* the search, checked (--where, the constraints) before anything is written */
    kevo_search s;
    memset(&s, 0, sizeof s);
    bool search_ready = false;
    if (!st) {
        st = kevo_search_init(&s, e.spaces, e.nspaces, &e.shape, &e.lim, e.dt, policy, ro.seed, err);
        search_ready = !st;
    }
    if (!st && (st = kevo_search_set_filter(&s, ro.where, err)) == KEVO_ERR_PARSE)
        st = err->status = KEVO_ERR_ARG; /* the user's --where: a usage error */
    if (!st && e.dist)
        st = kevo_search_set_shapes(&s, e.dist->shape, e.dist->weight, e.dist->n, err);
    if (!st) {
        /* the model ranks with the run's stored ceilings, so a resumed run ranks as the first process did */
        kevo_model_device dev;
        kevo_model_device_init(&dev, &e.lim, run.peak_tflops, run.copy_tbps);
        kevo_search_set_model(&s, &dev);
        kevo_search_set_budget(&s, ro.budget);
        st = kevo_search_check(&s, err);
    }
    /* the generators: templates (the policy's proposals), the LLM (one call in flight at a time) */
    kevo_llm_gen *lg = NULL;
    if (!st && gen_llm) {
        kevo_llm_gen_opts go = {.url = rl.url, .model = rl.model[0] ? rl.model : NULL,
                                .temperature = rl.temperature, .seed = rl.seed, .max_tokens = rl.max_tokens,
                                .timeout_s = ro.llm_timeout, .retries = ro.llm_retries,
                                .prompt_chars = ro.llm_prompt_chars,
                                .prompts_dir = ro.prompts_dir ? ro.prompts_dir : prompts,
                                .op = e.op->name, .shape = e.shape_txt, .dtype = kevo_dtype_name(e.dt),
                                .arch = e.arch, .abi_header = e.abi, .inputs = e.inputs,
                                .ninputs = e.ninputs, .outputs = e.outputs, .noutputs = e.noutputs};
        st = kevo_llm_gen_open(&go, &lg, err);
    }
    if (!st && !e.db)
        st = kevo_db_open(ro.db_path, true, &e.db, err);
    int64_t done = 0, last_gain = 0, nrows = 0;
    double best = 0;
    int *left = NULL, *left_round = NULL, nleft = 0;
    int64_t next_round = 0;
    bool head_started = false;
    if (!st && resume)
        st = tn_rebuild(&e, &s, run.id, handoff, &left, &left_round, &nleft, &head_started, &done, &best,
                        &last_gain, &nrows, &next_round, err);
    kevo_warm_seed *warm = NULL;
    int nwarm = 0;
    if (!st)
        st = resume ? kevo_db_warm_get(e.db, run.id, &warm, &nwarm, err)
                    : tn_warm_collect_new(&e, &ro, &warm, &nwarm, err);
    if (!st && kv_interrupted())
        st = KEVO_ERR_INTERRUPTED;

    /* from here on the run's row says what happens */
    bool written = false;
    if (!st) {
        run.budget = ro.budget;
        snprintf(run.status, sizeof run.status, "running");
        run.stop_reason[0] = '\0';
        run.finished_at[0] = '\0';
        run.pid = (int64_t)getpid();
        run.nshapes = e.dist ? e.dist->n : 0;
        st = kevo_db_begin(e.db, err);
        if (!st && resume)
            st = tn_claim(&e, &seen, err);
        if (!st)
            st = resume ? kevo_db_run_update(e.db, &run, err) : kevo_db_run_insert(e.db, &run, err);
        if (!st)
            st = kevo_db_run_settings_put(e.db, run.id, &rs, err);
        if (!st)
            st = kevo_db_run_llm_put(e.db, run.id, &rl, err);
        if (!st && !resume && nwarm > 0)
            st = kevo_db_warm_put(e.db, run.id, warm, nwarm, err);
        if (!st && !ro.compile_only)
            st = kevo_db_peers_put(e.db, run.id, 0, 0, e.op, &e.run_peers, err);
        if (!st && e.dist)
            st = tn_store_peers(&e, &run, err);
        if (!st && !ro.compile_only)
            st = tn_devices_store(&e, &run, err);
        if (!st)
            st = kevo_db_commit(e.db, err);
        else
            kevo_db_rollback(e.db);
        written = !st;
        if (!st)
            *run_id = run.id;
        else if (!resume)
            run.id = 0;
    }
    if (written) {
        tn_line(&prog, "run %lld%s: %s %s %s %s, policy %s, budget %lld, seed %llu, families %s%s", (long long)run.id,
                resume ? " resumed" : "", run.op, run.shape, run.dtype, run.arch, run.policy, (long long)run.budget,
                (unsigned long long)ro.seed, run.families, ro.compile_only ? ", compile-only" : "");
        if (!resume)
            for (int i = 0; i < nwarm; i++)
                tn_line(&prog, "warm start: %s %s, winner of run %lld at %s", warm[i].family, warm[i].params,
                        (long long)warm[i].from_run, warm[i].from_shape);
        if (!ro.compile_only) {
            tn_line(&prog, "device %s (%d SMs, driver %d); cuBLAS peak %.0f TFLOP/s, copy %.2f TB/s; roofline floor "
                    "%.3f ms",
                    e.info.name, e.info.sm_count, e.info.driver_version, run.peak_tflops, run.copy_tbps,
                    tn_floor_ms(run.flops, run.bytes, run.peak_tflops, run.copy_tbps));
            tn_say_peers(&prog, e.op, &e.run_peers, "");
        }
        for (int k = 1; k < e.ndev + e.nrem && !ro.compile_only && !e.dist; k++) {
            tn_line(&prog, "%s: %s (%s, %d SMs); cuBLAS peak %.0f TFLOP/s, copy %.2f TB/s; its peers:", e.dlabel[k],
                    e.dinfo[k].name, e.dinfo[k].pci_bus, e.dinfo[k].sm_count, e.dinfo[k].peak_tflops,
                    e.dinfo[k].copy_tbps);
            tn_say_peers(&prog, e.op, &e.dinfo[k].peers, "  ");
        }
        for (int k = 0; k < e.ndev && e.ndev > 1 && e.dist && !ro.compile_only; k++) {
            char which[160] = "";
            for (int i = k, len = 0; i < e.dist->n && len < (int)sizeof which - 8; i += e.ndev)
                len += snprintf(which + len, sizeof which - (size_t)len, "%s%d", i == k ? "" : ", ", i + 1);
            tn_line(&prog, "%s: %s (%s, %d SMs) evaluates shape%s %s", e.dlabel[k], e.dinfo[k].name,
                    e.dinfo[k].pci_bus, e.dinfo[k].sm_count, k + e.ndev < e.dist->n ? "s" : "", which);
        }
        if (handoff)
            tn_line(&prog, "run %lld was compile-only: its compiled candidates are verified and timed on %s first",
                    (long long)run.id, e.info.name);
        if (resume)
            tn_line(&prog, "resumed with %lld candidates done, %d left pending by the last process", (long long)done,
                    nleft);
        if (gen_llm)
            tn_line(&prog, "generators %s: LLM %s%s%s, %lld calls at most", rl.generators, rl.url,
                    rl.model[0] ? " model " : "", rl.model, (long long)rl.llm_budget);
        else if (llm_off)
            tn_line(&prog, "kevo: run %lld searches with the LLM too, but no --llm-url was given: this process "
                    "makes no LLM call (the server is never taken from the DB); templates go on",
                    (long long)run.id);
        tn_warm_apply(&e, &s, warm, nwarm);
    }
    free(warm);

    const double elapsed0 = rs.elapsed_s;
    e.loop_t0 = kv_now();
    const char *stop = "budget";
    bool stopping = false; /* a stop condition held: no round is proposed, those in flight finish */
    /* rounds are proposed only where the state is one an uninterrupted run proposes in: after a round is
     * applied (up to --ahead in flight, until the policy has nothing), so that a resumed run proposes as the
     * first process would have; a resume whose oldest round is half applied waits for the rest of it */
    bool may_propose = !head_started;
    /* a one-shape GPU run: compiles stream to the GPUs (--devices: several at once) */
    const bool stream = !ro.compile_only && !e.dist;
    /* room for --ahead rounds of --batch candidates, an LLM candidate each, and what was left pending */
    const int pcap = ro.batch * ro.ahead + ro.ahead + nleft + 1;
    kevo_proposal *props = written ? calloc((size_t)ro.batch, sizeof *props) : NULL;
    tn_work *works = written ? calloc((size_t)ro.batch + 1, sizeof *works) : NULL; /* + an LLM candidate */
    tn_pipe pipe;
    memset(&pipe, 0, sizeof pipe);
    int64_t llm_calls = 0; /* calls the run has made (stored generations) */
    int llm_parent = -1;   /* node of the call in flight */
    if (written && gen_llm) {
        kevo_generation_row *gv = NULL;
        int ng = 0;
        if (!(st = kevo_db_generation_list(e.db, run.id, &gv, &ng, err)))
            llm_calls = ng;
        kevo_generation_rows_free(gv, ng);
    }
    if (written && (!props || !works))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (written && !st)
        st = tn_pipe_open(&e, &pipe, pcap, stream, err);
    /* what a killed process registered but never finished: its rounds in flight, in order, finished first
     * (a run of schema 7 or older, and a compile-only run's candidates now continued on a GPU: one lot) */
    for (int i = 0, from = 0; written && !st && i < nleft; i++) {
        const kevo_node *nd = &s.nodes[left[i]];
        st = tn_prepare(&e, kevo_search_space(&s, nd->family), nd->family, &nd->cfg, &works[i - from], err);
        if (st)
            break;
        works[i - from].node = left[i];
        works[i - from].cand_id = nd->cand_id;
        if (i + 1 == nleft || left_round[i + 1] != left_round[i] || i + 1 - from == ro.batch + 1) {
            st = tn_pipe_round_add(&e, &pipe, works, i + 1 - from, err);
            from = i + 1;
        }
    }
    while (written && !st) {
        if (kv_interrupted()) {
            st = KEVO_ERR_INTERRUPTED;
            break;
        }
        const int64_t inflight = pipe.tail - pipe.head;
        /* termination other than the budget, checked between rounds; the rounds in flight finish */
        if (!stopping) {
            if (ro.time_limit > 0 && elapsed0 + kv_now() - prog.t0 >= ro.time_limit) {
                stop = "time_limit";
                stopping = true;
            } else if (ro.target > 0 && best >= ro.target) {
                stop = "target";
                stopping = true;
            } else if (ro.plateau > 0 && done - last_gain >= ro.plateau) {
                stop = "plateau";
                stopping = true;
            }
        }
        int ready = 0;
        bool propose = may_propose && !stopping && pipe.nround < ro.ahead && done + inflight < ro.budget;
        /* the llm operator: a call when none is in flight and the budgets allow */
        if (propose && lg && !kevo_llm_gen_busy(lg) && llm_calls < rl.llm_budget) {
            llm_parent = kevo_search_llm_parent(&s);
            if (llm_parent >= 0 && !(st = tn_llm_start(&e, &s, run.id, lg, llm_parent, best, llm_calls, err))) {
                llm_calls++;
                tn_bar(&prog, done, best, "asking the LLM");
            }
            if (st)
                break;
        }
        bool llm_busy = lg && kevo_llm_gen_busy(lg);
        if (propose) {
            /* the budget keeps a slot for each LLM call still to come (--llm-budget calls are made), but
             * the seeds always have room: they are the first parents */
            int64_t llm_left = lg ? rl.llm_budget - llm_calls : 0;
            int64_t room = ro.budget - done - inflight - (llm_busy ? 1 : 0) - (llm_left > 0 ? llm_left : 0);
            if (room <= 0 && !llm_busy && kevo_search_llm_parent(&s) < 0)
                room = ro.budget - done - inflight;
            int want = (int)(room < ro.batch ? room : ro.batch);
            int n = 0;
            if (want > 0) {
                tn_trace(&e, "propose", want, -1);
                kevo_search_reseed(&s);
                /* without the template generator, templates only seed the LLM */
                n = gen_tpl ? policy->propose(&s, props, want) : kevo_search_seeds(&s, props, want);
            }
            /* nothing to propose with nothing in flight is the end; with rounds in flight, their results
             * may give the policy something */
            if (n == 0 && !llm_busy && inflight == 0) {
                stop = "exhausted";
                break;
            }
            if (n > 0) {
                tn_trace(&e, "register", n, -1);
                st = tn_register(&e, &s, run.id, nrows, next_round, props, n, NULL, works, &ready, err);
                tn_trace(&e, "registered", ready, -1);
                nrows += n;
            }
        }
        /* the LLM's reply: taken when it is there, or waited for when nothing else is to be done */
        if (!st && !stopping && llm_busy && (kevo_llm_gen_ready(lg) || (ready == 0 && inflight == 0))) {
            tn_bar(&prog, done, best, "waiting for the LLM");
            int added = 0;
            bool gone = false;
            st = tn_llm_take(&e, &s, &run, lg, llm_parent, &nrows, next_round, &works[ready], &added, &llm_calls,
                             &done, &prog, &gone, err);
            if (!st && gone) { /* this process goes on without the LLM, with templates */
                kevo_llm_gen_close(lg);
                lg = NULL;
                gen_tpl = true;
            }
            ready += added;
        }
        if (!st && ready > 0) {
            st = tn_pipe_round_add(&e, &pipe, works, ready, err);
            next_round++;
        }
        if (st)
            break;
        if (ready > 0)
            continue; /* another round, while --ahead allows and the policy has one */
        may_propose = false;
        if (pipe.nround == 0) {
            if (stopping || done >= ro.budget)
                break;
            may_propose = true; /* nothing in flight to wait for: an LLM call stored as failed */
            continue;
        }
        tn_loop L = {.run = &run, .ro = &ro, .s = &s, .prog = &prog, .done = done, .last_gain = last_gain,
                     .best = best};
        st = stream ? tn_pipe_stream(&e, &L, &pipe, err) : tn_pipe_sync(&e, &L, &pipe, &prog, err);
        may_propose = true;
        done = L.done;
        best = L.best;
        last_gain = L.last_gain;
        /* the time the run has spent, for --time-limit across processes */
        rs.elapsed_s = elapsed0 + kv_now() - prog.t0;
        if (!st)
            st = kevo_db_run_settings_put(e.db, run.id, &rs, err);
    }
    tn_pipe_close(&e, &pipe);
    if (lg && kevo_llm_gen_busy(lg))
        kevo_llm_gen_cancel(lg); /* a call the run no longer waits for: not stored */
    kevo_llm_gen_close(lg);
    free(props);
    free(works);
    free(left);
    free(left_round);
    if (search_ready)
        kevo_search_release(&s);
    if (written && !st && !ro.compile_only)
        st = tn_devices_done(&e, &run, &prog, err);
    if (written && !st && !ro.compile_only && !e.dist)
        st = tn_settle(&e, &run, &ro, &prog, err);
    if (written && !st && !ro.compile_only)
        st = tn_peer_nocodesign(&e, &run, &ro, &ref, &prog, err);
    if (st == KEVO_ERR_INTERRUPTED || (st && kv_interrupted())) {
        st = KEVO_ERR_INTERRUPTED;
        /* a second signal now ends kevo at once (the default action) */
        kv_signals_restore();
    }

    bool stored_end = false; /* the run's row says how it ended */
    if (written) {
        bool interrupted = st == KEVO_ERR_INTERRUPTED;
        snprintf(run.status, sizeof run.status, "%s", interrupted ? "interrupted" : st ? "failed" : "done");
        snprintf(run.stop_reason, sizeof run.stop_reason, "%s", interrupted ? "signal" : st ? "error" : stop);
        kv_utc_iso(run.finished_at);
        rs.elapsed_s = elapsed0 + kv_now() - prog.t0;
        kevo_err err2;
        kevo_status st2 = kevo_db_run_update(e.db, &run, &err2);
        stored_end = !st2;
        if (!st2)
            st2 = kevo_db_run_settings_put(e.db, run.id, &rs, &err2);
        if (!st && st2) {
            st = st2;
            *err = err2;
        }
    }
    if (st == KEVO_ERR_INTERRUPTED) /* a run left "running" by a process that has ended resumes as well */
        tn_interrupted(err, resume ? run.id : (written ? run.id : 0), ro.db_path, !written ? 0 : stored_end ? 1 : 2);
    if (written && !st) {
        int evaluated, compiled, failed, ok;
        kevo_db_run_counts(e.db, run.id, &evaluated, &compiled, &failed, &ok, NULL);
        tn_line(&prog, "run %lld %s (%s): %d candidates, %d compiled, %d verified, %d failed", (long long)run.id,
                run.status, run.stop_reason, evaluated, compiled, ok, failed);
        kevo_cand_row b;
        if (!ro.compile_only && e.dist && kevo_db_cand_best(e.db, run.id, &b, NULL) == KEVO_OK) {
            tn_line(&prog, "best over the %d shapes #%lld %s %s: weighted geometric mean of vs_best_peer %.2fx",
                    e.dist->n, (long long)b.id, b.family, b.params, b.fitness);
            kevo_cand_row_release(&b);
            tn_dist_summary(&e, &run, &prog);
        } else if (!ro.compile_only && kevo_db_cand_best(e.db, run.id, &b, NULL) == KEVO_OK) {
            tn_line(&prog, "best #%lld %s %s: %.4f ms [%.4f, %.4f], %.2fx the stage-0 baseline (%.3f ms), %.1f "
                    "TFLOP/s, %.0f%% of the roofline",
                    (long long)b.id, b.family, b.params, b.median_ms, b.ci_lo_ms, b.ci_hi_ms, b.speedup,
                    kevo_peer_ok_ms(&e.run_peers, kevo_op_peer_baseline(e.op)), b.tflops, 100 * b.roofline);
            char verdict[320];
            kevo_peer_verdict(e.op, b.vs_peer, &e.run_peers, verdict, sizeof verdict);
            tn_line(&prog, "%s", verdict);
            kevo_cand_row_release(&b);
        } else if (!ro.compile_only) {
            tn_line(&prog, "no kernel verified at this shape: nothing beats the peers");
        }
    }
    tn_work_release(&ref);
    tn_env_release(&e);
    return st;
}

kevo_status kevo_tune(const kevo_tune_opts *o, int64_t *run_id, kevo_err *err)
{
    kv_signals_catch();
    kevo_status st = tn_tune(o, run_id, false, err);
    if (st == KEVO_ERR_INTERRUPTED && !strstr(err->msg, "continue it with") && !strstr(err->msg, "nothing was"))
        tn_interrupted(err, 0, o->db_path, false);
    kv_signals_restore();
    return st;
}

/* Before the first run of an --arch list: some requested family (o->families,
 * else all of the op's) declares arch (else KEVO_ERR_ARG naming the families
 * that do), and those support the run's shape(s) there (tn_select_families,
 * quiet).  Reads the space files and the --shapes file; writes nothing. */
static kevo_status tn_arch_check(const kevo_tune_opts *o, const char *arch, kevo_err *err)
{
    tn_env e;
    kevo_status st = tn_env_open(&e, o->op ? o->op : "", o->shape, o->dtype, arch, o->data_dir, o->extra_templates,
                                 err);
    if (!st && o->shapes_file && !o->shape) {
        if (!(e.dist = calloc(1, sizeof *e.dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        else
            st = kevo_dist_read(o->shapes_file, e.op, e.dist, err);
    }
    /* the families asked for that declare arch, and the op's that do */
    kv_buf asked, targets;
    kv_buf_init(&asked);
    kv_buf_init(&targets);
    int declared = 0;
    for (int i = 0; !st && i < e.nspaces; i++) {
        const kevo_space *sp = e.spaces[i];
        bool has = kevo_space_has_arch(sp, arch);
        if (has)
            kv_buf_printf(&targets, "%s%s", targets.len ? ", " : "", sp->family);
        if (tn_family_listed(o->families, sp->family)) {
            kv_buf_printf(&asked, "%s%s", asked.len ? ", " : "", sp->family);
            declared += has;
        }
    }
    if (!st && e.nspaces > 0 && declared == 0 && asked.len > 0)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--arch %s: no family searched (%s) targets it; %s%s", arch,
                          asked.data, targets.len ? "families of the op that do: " : "no family of the op does",
                          targets.len ? targets.data : "");
    kv_buf_release(&asked);
    kv_buf_release(&targets);
    if (!st)
        st = tn_select_families(&e, o->families, true, false, err);
    tn_env_release(&e);
    return st;
}

kevo_status kevo_tune_archs(const kevo_tune_opts *o, int64_t *run_ids, int *nruns, kevo_err *err)
{
    *nruns = 0;
    if (!o->arch || !strchr(o->arch, ',')) { /* one arch: kevo_tune itself */
        run_ids[0] = 0;
        kevo_status st = kevo_tune(o, &run_ids[0], err);
        *nruns = run_ids[0] > 0;
        return st;
    }
    char archs[KEVO_TUNE_ARCHS_MAX][16];
    int n = 0;
    kevo_status st = kevo_arch_list_parse(o->arch, archs, KEVO_TUNE_ARCHS_MAX, &n, err);
    if (st)
        return st;
    if (o->resume_run > 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "--arch takes one architecture with --resume (a run has one)");
    if (!o->compile_only)
        return kevo_err_set(err, KEVO_ERR_ARG, "--arch takes a list of architectures only with --compile-only "
                            "(a GPU run loads its code on devices of one architecture)");
    for (int i = 0; i < n && !st; i++)
        st = tn_arch_check(o, archs[i], err);
    if (st)
        return st;
    kv_signals_catch();
    for (int i = 0; i < n && !st; i++) {
        kevo_tune_opts one = *o;
        one.arch = archs[i];
        int64_t id = 0;
        st = tn_tune(&one, &id, true, err);
        if (id > 0)
            run_ids[(*nruns)++] = id;
        if (st == KEVO_ERR_INTERRUPTED && !strstr(err->msg, "continue it with") && !strstr(err->msg, "nothing was"))
            tn_interrupted(err, 0, o->db_path, false);
        if (st && i + 1 < n) { /* the architectures after it are not started */
            kv_buf rest;
            kv_buf_init(&rest);
            for (int k = i + 1; k < n; k++)
                kv_buf_printf(&rest, "%s%s", k > i + 1 ? ", " : "", archs[k]);
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            kevo_err_set(err, st, "%s; the runs for %s were not started", msg, rest.data ? rest.data : "");
            kv_buf_release(&rest);
        }
    }
    kv_signals_restore();
    return st;
}

/* ---- verify ---- */

/* The candidate to verify: explicit id, else the best of run_id, else of the last run. */
static kevo_status tn_pick_candidate(kevo_db *db, const kevo_verify_opts *o, kevo_cand_row *c, kevo_err *err)
{
    if (o->candidate_id > 0)
        return kevo_db_cand_get(db, o->candidate_id, c, err);
    int64_t run = o->run_id;
    if (run <= 0) {
        int64_t *ids = NULL;
        int n = 0;
        kevo_status st = kevo_db_run_ids(db, &ids, &n, err);
        if (st)
            return st;
        run = n > 0 ? ids[n - 1] : 0;
        free(ids);
        if (run <= 0)
            return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "'%s' holds no run", o->db_path);
    }
    kevo_status st = kevo_db_cand_best(db, run, c, err);
    if (st == KEVO_ERR_NOT_FOUND)
        kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld has no verified candidate", (long long)run);
    return st;
}

kevo_status kevo_verify(const kevo_verify_opts *o, bool *passed, kevo_err *err)
{
    *passed = false;
    /* no GPU: fail before the DB is even opened */
    kevo_status st = kevo_gpu_probe(o->device, err);
    if (st)
        return st;
    kevo_db *db = NULL;
    if ((st = kevo_db_open_ro(o->db_path, &db, err)))
        return st;
    kevo_cand_row c;
    kevo_cand_row_init(&c);
    kevo_run_row run;
    st = tn_pick_candidate(db, o, &c, err);
    if (!st)
        st = kevo_db_run_get(db, c.run_id, &run, err);
    kevo_db_close(db);
    if (st) {
        kevo_cand_row_release(&c);
        return st;
    }
    tn_env e;
    st = tn_env_open(&e, run.op, o->shape ? o->shape : run.shape, o->dtype ? o->dtype : run.dtype,
                     o->arch ? o->arch : run.arch, o->data_dir, o->extra_templates, err);
    /* a template family, or an LLM candidate's stored one-point space */
    bool llm = !st && !kevo_spaces_find(e.spaces, e.nspaces, c.family);
    if (!st && !llm)
        st = tn_select_families(&e, c.family, true, false, err);
    if (!st) /* read-only: the compile cache is read, never added to */
        st = kevo_db_open_ro(o->db_path, &e.db, err);
    const kevo_space *sp = NULL;
    if (!st)
        st = llm ? tn_space_of(&e, &c, &sp, err) : KEVO_OK;
    if (!st && !llm)
        sp = e.spaces[0];
    if (!st && !sp)
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s) has no source: %s", (long long)c.id,
                          c.fail[0] ? c.fail : "never made", c.fail_msg ? c.fail_msg : "");
    if (!st && llm && !kevo_space_has_arch(sp, e.arch))
        st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "candidate %lld (%s) does not target %s", (long long)c.id,
                          c.family, e.arch);
    kevo_config cfg;
    char who[48]; /* the stored params are untrusted: checked against the family's domains */
    snprintf(who, sizeof who, "candidate %lld", (long long)c.id);
    if (!st)
        st = kevo_config_parse_stored(sp, c.params, who, &cfg, err);
    tn_work ref, w;
    memset(&ref, 0, sizeof ref);
    memset(&w, 0, sizeof w);
    e.jobs = 2;
    e.compile_timeout = o->compile_timeout;
    if (!st)
        st = tn_ref_module(&e, &ref, err);
    e.ndev = 1;
    e.ord[0] = o->device;
    if (!st)
        st = tn_start_gpu(&e, &ref, o->warmup, o->reps, o->eval_timeout, o->seed, o->time, o->time, err);
    kevo_gpu_result res;
    if (!st)
        st = tn_check_config(&e, sp, &cfg, &c, o->maps, o->time, o->seed, &w, &res, err);
    if (!st) {
        kv_buf maps;
        kv_buf_init(&maps);
        for (int k = 0; k < 3; k++)
            if (o->maps & (1u << k))
                kv_buf_printf(&maps, "%s%s", maps.len ? "," : "", kevo_map_name((kevo_map_kind)k));
        double rel_bound, rtol;
        e.op->tolerance(e.dt, &rel_bound, &rtol);
        *passed = res.fail == KEVO_FAIL_NONE;
        /* DB text: a terminal gets these lines through the caller's cleaner (kevo_event.text) */
        kevo_event_fn fn = o->on_event;
        void *ctx = o->event_ctx;
        kv_emit(fn, ctx, KEVO_EVENT_LINE, c.id, "verify #%lld %s %s", (long long)c.id, c.family, c.params);
        char how[768];
        if (*passed)
            snprintf(how, sizeof how, "ok, %d checks, rel_err %.2e (bound %.1e), max |d| %.3e", res.checks,
                     res.rel_err, rel_bound, res.max_abs_err);
        else
            snprintf(how, sizeof how, "FAILED %s: %s", kevo_fail_name(res.fail), res.msg);
        kv_emit(fn, ctx, KEVO_EVENT_LINE, c.id, "  at %s %s %s, maps %s: %s", e.shape_txt, kevo_dtype_name(e.dt),
                e.arch, maps.data ? maps.data : "", how);
        tn_figs f = {NAN, NAN, NAN, NAN, NAN, NAN, NAN};
        if (*passed && o->time) {
            f = tn_figures(&res, (uint64_t)c.id, e.op, &e.info.peers, e.op->flops(&e.shape),
                           e.op->bytes(&e.shape, e.dt), e.info.peak_tflops, e.info.copy_tbps);
            kv_emit(fn, ctx, KEVO_EVENT_LINE, c.id,
                    "  device %s: %.4f ms [%.4f, %.4f], %.1f TFLOP/s (%.0f%% of the cuBLAS peak, %.0f TFLOP/s), "
                    "%.0f%% of the roofline",
                    e.info.name, f.median_ms, f.ci_lo_ms, f.ci_hi_ms, f.tflops,
                    e.info.peak_tflops > 0 ? 100.0 * f.tflops / e.info.peak_tflops : 0.0, e.info.peak_tflops,
                    100 * f.roofline);
            tn_progress vp = {.fn = fn, .ctx = ctx, .t0 = kv_now()};
            tn_say_peers(&vp, e.op, &e.info.peers, "  ");
            kv_emit(fn, ctx, KEVO_EVENT_LINE, c.id, "  speedup %.2fx over stage 0; vs_best_peer %.2fx", f.speedup,
                    f.vs_peer);
            char verdict[320];
            kevo_peer_verdict(e.op, f.vs_peer, &e.info.peers, verdict, sizeof verdict);
            kv_emit(fn, ctx, KEVO_EVENT_LINE, c.id, "  %s", verdict);
        }
        kv_buf_release(&maps);
    }
    tn_work_release(&w);
    tn_work_release(&ref);
    tn_env_release(&e);
    kevo_cand_row_release(&c);
    return st;
}
