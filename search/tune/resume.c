/* resume.c — what defines a run, against what a resumed run stored: the
 * options compared and taken from the DB, the template families' versions,
 * the claim of the run by one process, and the graph rebuilt as the
 * uninterrupted run would have it. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/tune/tune_int.h"

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

kevo_status tn_run_free(const kevo_run_row *run, kevo_err *err)
{
    if (strcmp(run->status, "running") == 0 && run->pid != (int64_t)getpid() && tn_pid_alive(run->pid))
        return kevo_err_set(err, KEVO_ERR_BUSY, "run %lld is held by process %lld, which is still running (one run, "
                            "one writer: wait for it to end, or stop it)", (long long)run->id, (long long)run->pid);
    return KEVO_OK;
}

kevo_status tn_claim(tn_env *e, const kevo_run_row *seen, kevo_err *err)
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

static int tn_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool tn_family_set(const char *list, char *out, size_t n)
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

kevo_status tn_space_hash(const tn_env *e, char *out, size_t n, kevo_err *err)
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

kevo_status tn_space_check(const tn_env *e, int64_t run_id, const char *stored, kevo_err *err)
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

/* --shape or --shapes against what a resumed run searches (its shape, or
 * the nshapes of its distribution): KEVO_ERR_ARG when they differ. */
static kevo_status tn_resume_shape(const kevo_tune_opts *o, const kevo_op *op, const kevo_run_row *run,
                                   const kevo_run_shape *shapes, int nshapes, kevo_err *err)
{
    uint32_t g = o->given;
    if (g & KEVO_TUNE_GIVEN_SHAPE) {
        kevo_syms sh;
        char txt[256];
        if (nshapes > 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--shape: run %lld searches a distribution of %d shapes",
                                (long long)run->id, nshapes);
        kevo_status st = op->parse_shape(o->def.shape, &sh, err);
        if (st)
            return st;
        op->shape_str(&sh, txt, sizeof txt);
        if (strcmp(txt, run->shape) != 0)
            return kevo_gen_conflict(err, run, "--shape", txt, run->shape);
    }
    if (g & KEVO_TUNE_GIVEN_SHAPES) {
        if (nshapes == 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--shapes: run %lld searches one shape (%s)", (long long)run->id,
                                run->shape);
        kevo_dist *d = calloc(1, sizeof *d);
        if (!d)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        kevo_status st = kevo_dist_read(o->def.shapes_file, op, d, err);
        bool same = !st && d->n == nshapes;
        for (int i = 0; same && i < nshapes; i++)
            same = strcmp(d->text[i], shapes[i].shape) == 0 && d->weight[i] == shapes[i].weight;
        free(d);
        if (st)
            return st;
        if (!same)
            return kevo_gen_conflict(err, run, "--shapes", o->def.shapes_file, "distribution (kevo report shows it)");
    }
    return KEVO_OK;
}

/* The options that define a resumed run against those the user named:
 * one that differs is refused (KEVO_ERR_ARG naming it). */
static kevo_status tn_resume_compare(const kevo_tune_opts *o, const kevo_run_row *run,
                                     const kevo_run_settings *stored, const kevo_run_shape *shapes, int nshapes,
                                     kevo_err *err)
{
    uint32_t g = o->given;
    char a[64], b[64];
    const kevo_op *op = kevo_op_find(run->op);
    if (!op)
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "run %lld is of unknown op '%s'", (long long)run->id, run->op);
    if ((g & KEVO_TUNE_GIVEN_OP) && strcmp(o->def.op, run->op) != 0)
        return kevo_gen_conflict(err, run, "--op", o->def.op, run->op);
    kevo_status st = tn_resume_shape(o, op, run, shapes, nshapes, err);
    if (st)
        return st;
    if (g & KEVO_TUNE_GIVEN_DTYPE) {
        kevo_dtype x, y;
        if (!kevo_dtype_parse(o->def.dtype, &x) || !kevo_dtype_parse(run->dtype, &y) || x != y)
            return kevo_gen_conflict(err, run, "--dtype", o->def.dtype, run->dtype);
    }
    if ((g & KEVO_TUNE_GIVEN_ARCH) && strcmp(o->def.arch, run->arch) != 0)
        return kevo_gen_conflict(err, run, "--arch", o->def.arch, run->arch);
    if ((g & KEVO_TUNE_GIVEN_POLICY) && strcmp(o->def.policy, run->policy) != 0)
        return kevo_gen_conflict(err, run, "--policy", o->def.policy, run->policy);
    if (g & KEVO_TUNE_GIVEN_FAMILIES) {
        char want[1024], have[1024];
        if (!tn_family_set(o->def.families, want, sizeof want))
            return kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is longer than %zu characters",
                                sizeof want - 1);
        tn_family_set(stored ? (stored->family_arg[0] ? stored->family_arg : NULL) : run->families, have,
                      sizeof have);
        if (strcmp(want, have) != 0)
            return kevo_gen_conflict(err, run, "--family", want, have[0] ? have : "(all of the op's)");
    }
    if ((g & KEVO_TUNE_GIVEN_WHERE) && strcmp(o->def.where ? o->def.where : "", run->filter) != 0)
        return kevo_gen_conflict(err, run, "--where", o->def.where ? o->def.where : "", run->filter);
    if ((g & KEVO_TUNE_GIVEN_SEED) && (int64_t)o->def.seed != run->seed) {
        snprintf(a, sizeof a, "%llu", (unsigned long long)o->def.seed);
        snprintf(b, sizeof b, "%lld", (long long)run->seed);
        return kevo_gen_conflict(err, run, "--seed", a, b);
    }
    if ((g & KEVO_TUNE_GIVEN_COMPILE_ONLY) && o->def.compile_only != run->compile_only)
        return kevo_err_set(err, KEVO_ERR_ARG, "--compile-only: run %lld measures on a GPU; a resumed run keeps "
                            "what it started with", (long long)run->id);
    const char *warm = o->def.warm_start ? o->def.warm_start : "";
    if ((g & KEVO_TUNE_GIVEN_WARM) && strcmp(warm, run->warm_start) != 0)
        return kevo_gen_conflict(err, run, "--warm-start", warm, run->warm_start);
    if (stored) {
        const char *tpl = o->def.extra_templates ? o->def.extra_templates : "";
        if ((g & KEVO_TUNE_GIVEN_TEMPLATES) && strcmp(tpl, stored->templates))
            return kevo_gen_conflict(err, run, "--templates", tpl, stored->templates);
        struct {
            uint32_t bit;
            const char *name;
            int64_t given, had;
        } nums[] = {{KEVO_TUNE_GIVEN_MAPS, "--maps", o->def.maps, stored->maps},
                    {KEVO_TUNE_GIVEN_REPS, "--reps", o->def.reps, stored->reps},
                    {KEVO_TUNE_GIVEN_WARMUP, "--warmup", o->def.warmup, stored->warmup},
                    {KEVO_TUNE_GIVEN_BATCH, "--batch", o->def.batch, stored->batch},
                    {KEVO_TUNE_GIVEN_AHEAD, "--ahead", o->def.ahead, stored->ahead}};
        for (size_t i = 0; i < KV_ARRAY_LEN(nums); i++)
            if ((g & nums[i].bit) && nums[i].given != nums[i].had) {
                if (nums[i].bit == KEVO_TUNE_GIVEN_MAPS)
                    return kevo_err_set(err, KEVO_ERR_ARG, "--maps differs from run %lld's: a resumed run keeps "
                                        "what it started with (start a new run to change it)", (long long)run->id);
                snprintf(a, sizeof a, "%lld", (long long)nums[i].given);
                snprintf(b, sizeof b, "%lld", (long long)nums[i].had);
                return kevo_gen_conflict(err, run, nums[i].name, a, b);
            }
    }
    if ((g & KEVO_TUNE_GIVEN_BUDGET) && o->def.budget < run->budget)
        return kevo_err_set(err, KEVO_ERR_ARG,
                            "--budget %lld is below run %lld's budget %lld: a resume can raise the budget, not "
                            "lower it",
                            (long long)o->def.budget, (long long)run->id, (long long)run->budget);
    return KEVO_OK;
}

/* A resumed run's options: the stored ones, compared with those the user
 * named (o->given).  ro and rs receive what the run continues with;
 * *extends says whether a finished run has something left to do. */
kevo_status tn_resume_opts(const kevo_tune_opts *o, const kevo_run_row *run, const kevo_run_settings *stored,
                           const kevo_run_shape *shapes, int nshapes, kevo_tune_opts *ro, kevo_run_settings *rs,
                           bool *extends, kevo_err *err)
{
    uint32_t g = o->given;
    *extends = false;
    kevo_status st = tn_resume_compare(o, run, stored, shapes, nshapes, err);
    if (st)
        return st;
    /* what the run continues with: stored, extended where asked */
    ro->def.op = run->op;
    ro->def.shape = run->shape;
    ro->def.dtype = run->dtype;
    ro->def.arch = run->arch;
    ro->def.policy = run->policy;
    ro->def.families = run->families;
    ro->def.seed = (uint64_t)run->seed;
    ro->def.compile_only = run->compile_only;
    ro->def.where = run->filter[0] ? run->filter : NULL;
    ro->def.shapes_file = NULL;
    ro->def.warm_start = run->warm_start[0] ? run->warm_start : NULL;
    ro->def.budget = (g & KEVO_TUNE_GIVEN_BUDGET) ? o->def.budget : run->budget;
    *extends = ro->def.budget > run->budget;
    if (!stored) { /* a run of an older kevo: what it searched stands for what it asked, a round at a time */
        tn_family_set(run->families, rs->family_arg, sizeof rs->family_arg);
        ro->def.ahead = 1;
    }
    if (stored) {
        *rs = *stored;
        ro->def.extra_templates = stored->templates[0] ? stored->templates : NULL;
        ro->def.maps = stored->maps;
        ro->def.reps = stored->reps;
        ro->def.warmup = stored->warmup;
        ro->def.batch = stored->batch;
        ro->def.ahead = stored->ahead;
        ro->def.time_limit = stored->time_limit;
        ro->def.plateau = stored->plateau;
        ro->def.target = stored->target;
        if (!(g & KEVO_TUNE_GIVEN_CTIMEOUT))
            ro->proc.compile_timeout = stored->compile_timeout;
        if (!(g & KEVO_TUNE_GIVEN_ETIMEOUT))
            ro->proc.eval_timeout = stored->eval_timeout;
    }
    /* the termination options are the run's from now on */
    if ((g & KEVO_TUNE_GIVEN_TIME_LIMIT) && o->def.time_limit != ro->def.time_limit) {
        ro->def.time_limit = o->def.time_limit;
        *extends = true;
    }
    if ((g & KEVO_TUNE_GIVEN_PLATEAU) && o->def.plateau != ro->def.plateau) {
        ro->def.plateau = o->def.plateau;
        *extends = true;
    }
    if ((g & KEVO_TUNE_GIVEN_TARGET) && o->def.target != ro->def.target) {
        ro->def.target = o->def.target;
        *extends = true;
    }
    return KEVO_OK;
}

void tn_settings_fill(kevo_run_settings *rs, const kevo_tune_opts *ro)
{
    rs->batch = ro->def.batch;
    rs->ahead = ro->def.ahead;
    rs->maps = ro->def.maps;
    rs->reps = ro->def.reps;
    rs->warmup = ro->def.warmup;
    rs->time_limit = ro->def.time_limit;
    rs->plateau = ro->def.plateau;
    rs->target = ro->def.target;
    rs->compile_timeout = ro->proc.compile_timeout;
    rs->eval_timeout = ro->proc.eval_timeout;
    snprintf(rs->templates, sizeof rs->templates, "%s", ro->def.extra_templates ? ro->def.extra_templates : "");
}

kevo_status tn_optional(kevo_status s, const kevo_err *got, bool *have, kevo_err *err)
{
    *have = s == KEVO_OK;
    if (s && s != KEVO_ERR_NOT_FOUND) {
        *err = *got;
        return s;
    }
    return KEVO_OK;
}

/* ---- the graph of a stored run ---- */

/* A stored candidate's parents (the first has the lower candidate id:
 * edges come sorted) and move ("root" without), from the run's edges; a
 * parent of a generator's move has one more rewrite. */
static void tn_rebuild_edges(kevo_search *s, const kevo_cand_row *row, const kevo_edge_row *edges, int ne,
                             kevo_proposal *p)
{
    memset(p, 0, sizeof *p);
    p->parent = p->parent2 = -1;
    snprintf(p->move, sizeof p->move, "root");
    for (int k = 0; k < ne; k++) {
        if (edges[k].child_id != row->id)
            continue;
        int m = 0;
        while (m < s->nnodes && s->nodes[m].cand_id != edges[k].parent_id)
            m++;
        if (m == s->nnodes)
            continue;
        if (p->parent < 0)
            p->parent = m;
        else
            p->parent2 = m;
        snprintf(p->move, sizeof p->move, "%s", edges[k].op);
    }
    if (kevo_generator_of_move(p->move) && p->parent >= 0)
        s->nodes[p->parent].rewrites++;
}

/* A stored candidate's family index: a searched template family, or the
 * one-point space its generator restores, added to the graph (*sp NULL: a
 * call that gave no source, no node).  Errors: tn_space_of's, naming the
 * run; KEVO_ERR_NOMEM. */
static kevo_status tn_rebuild_family(tn_env *e, kevo_search *s, int64_t run_id, const kevo_cand_row *row,
                                     const kevo_space **sp, int *family, kevo_err *err)
{
    *sp = kevo_spaces_find(s->spaces, s->nspaces, row->family);
    if (*sp) {
        for (*family = 0; s->spaces[*family] != *sp; (*family)++)
            ;
        return KEVO_OK;
    }
    kevo_status st = tn_space_of(e, row, sp, err);
    if (st) {
        kevo_err_prefix(err, "run %lld", (long long)run_id);
        return st;
    }
    if (*sp && (*family = kevo_search_add_space(s, *sp)) < 0)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    return KEVO_OK;
}

/* Whether a stored row is still to be evaluated: pending (left by a killed
 * process), or compiled in a compile-only run now continued on a GPU. */
static bool tn_is_left(const kevo_cand_row *row, bool evaluate_compiled)
{
    return strcmp(row->status, "pending") == 0 || (evaluate_compiled && strcmp(row->status, "compiled") == 0);
}

/* A stored result, shown to the search as the loop applied it. */
static void tn_rebuild_observe(tn_run *R, int node, const kevo_cand_row *row)
{
    double fit = strcmp(row->status, "ok") == 0       ? (isnan(row->fitness) ? row->speedup : row->fitness)
                 : strcmp(row->status, "failed") == 0 ? 0.0
                                                      : NAN;
    kevo_search_observe(&R->s, node, fit);
    R->done++;
    if (!isnan(fit) && fit > R->best) {
        R->best = fit;
        R->last_gain = R->done;
    }
}

/* One stored candidate into the graph (a failed call without a source:
 * counted, no node).  Errors: as tn_rebuild. */
static kevo_status tn_rebuild_one(tn_run *R, const kevo_cand_row *row, const kevo_edge_row *edges, int ne,
                                  kevo_err *err)
{
    kevo_search *s = &R->s;
    const int64_t run_id = R->run.id;
    const bool evaluate_compiled = R->handoff;
    kevo_proposal p;
    tn_rebuild_edges(s, row, edges, ne, &p);
    const kevo_space *sp = NULL;
    kevo_status st = tn_rebuild_family(&R->e, s, run_id, row, &sp, &p.family, err);
    if (st)
        return st;
    if (!sp) { /* a generator's call that gave no source: a failed candidate, no node */
        R->done++;
        return KEVO_OK;
    }
    char who[64]; /* the stored params are untrusted: within the family's domains, before any use */
    snprintf(who, sizeof who, "run %lld candidate %lld", (long long)run_id, (long long)row->id);
    if ((st = kevo_config_parse_stored(sp, row->params, who, &p.cfg, err)))
        return st;
    int node = kevo_search_add(s, &p);
    if (node < 0)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    s->nodes[node].cand_id = row->id;
    if (tn_is_left(row, evaluate_compiled)) {
        R->left_round[R->nleft] = row->round;
        R->left[R->nleft++] = node;
        return KEVO_OK;
    }
    tn_rebuild_observe(R, node, row);
    return KEVO_OK;
}

/* Rebuild the graph of a stored run: every candidate in seq order with its
 * parent edge and fitness; candidates a killed process left pending go to
 * R->left (node indices) to be evaluated first, R->left_round their rounds
 * (-1 for a run of schema 7 or older), R->head_started whether some of the
 * first left one's round was applied.  R->done, best and last_gain (the
 * count at the last improvement) are the loop's as it would have them;
 * R->nrows the last seq, R->next_round the number of the run's next round.
 * Errors: the DB's, a stored candidate refused (KEVO_ERR_PARSE, naming
 * the run), KEVO_ERR_NOMEM. */
kevo_status tn_rebuild(tn_run *R, kevo_err *err)
{
    kevo_cand_row *rows = NULL;
    kevo_edge_row *edges = NULL;
    int n = 0, ne = 0;
    R->left = R->left_round = NULL;
    R->nleft = 0;
    R->head_started = false;
    R->done = 0;
    R->next_round = 0;
    kevo_status st = kevo_db_cand_list(R->e.db, R->run.id, &rows, &n, err);
    if (!st)
        st = kevo_db_edge_list(R->e.db, R->run.id, &edges, &ne, err);
    if (!st && n > 0 && (!(R->left = malloc((size_t)n * sizeof *R->left)) ||
                         !(R->left_round = malloc((size_t)n * sizeof *R->left_round))))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    R->nrows = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].seq > R->nrows)
            R->nrows = rows[i].seq;
        if (rows[i].round >= R->next_round)
            R->next_round = (int64_t)rows[i].round + 1;
    }
    for (int i = 0; i < n && !st; i++)
        st = tn_rebuild_one(R, &rows[i], edges, ne, err);
    for (int i = 0; i < n && !st && R->nleft > 0; i++)
        if (rows[i].round >= 0 && rows[i].round == R->left_round[0] && !tn_is_left(&rows[i], R->handoff))
            R->head_started = true;
    kevo_cand_rows_free(rows, n);
    free(edges);
    return st;
}
