/* run.c — a run from its options to its end, around the search loop:
 * the options checked (a resumed run's taken from the DB), the families,
 * devices, search and generators made ready before anything is written,
 * the run's row written in one transaction; after the loop, the devices'
 * throughput, the winner settled, the peer measured after the search, the
 * row ended and the summary said. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/tune/tune_int.h"

void kevo_tune_opts_init(kevo_tune_opts *o)
{
    memset(o, 0, sizeof *o);
    kevo_run_def *d = &o->def;
    d->op = kevo_op_list(NULL)[0]->name;
    d->dtype = "fp16";
    d->arch = "sm_90a";
    d->policy = "greedy";
    d->generators = "template";
    d->budget = 60;
    d->seed = 1;
    d->batch = KEVO_TUNE_BATCH;
    d->ahead = KEVO_TUNE_AHEAD;
    d->maps = TN_ALL_MAPS;
    d->warmup = 5;
    d->reps = 30;
    kevo_tune_proc *p = &o->proc;
    p->db_path = "kevo.db";
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    p->jobs = n > 0 ? (int)n : 1;
    p->compile_timeout = 300;
    p->eval_timeout = 120;
    kevo_gen_opts_init(&o->gen);
}

/* The options' ranges (KEVO_ERR_ARG), and an output that would replace an
 * input (the same file by device and inode, whatever the names). */
static kevo_status tn_opts_check(const kevo_tune_opts *o, kevo_err *err)
{
    const kevo_run_def *d = &o->def;
    const kevo_tune_proc *p = &o->proc;
    if (p->jobs < 1 || p->jobs > 256)
        return kevo_err_set(err, KEVO_ERR_ARG, "--jobs must be 1..256");
    if (d->batch < 1 || d->batch > KEVO_TUNE_BATCH_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "--batch must be 1..%d", KEVO_TUNE_BATCH_MAX);
    if (d->ahead < 1 || d->ahead > KEVO_TUNE_AHEAD_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "--ahead must be 1..%d", KEVO_TUNE_AHEAD_MAX);
    if (d->reps < 1 || d->reps > 1000 || d->warmup < 0 || d->warmup > 1000)
        return kevo_err_set(err, KEVO_ERR_ARG, "--reps must be 1..1000 and --warmup 0..1000");
    if (!(p->compile_timeout >= 0.1 && p->compile_timeout <= KEVO_TUNE_TIMEOUT_MAX) ||
        !(p->eval_timeout >= 0.1 && p->eval_timeout <= KEVO_TUNE_TIMEOUT_MAX))
        return kevo_err_set(err, KEVO_ERR_ARG, "timeouts must be 0.1..%d seconds", KEVO_TUNE_TIMEOUT_MAX);
    if (!(d->time_limit >= 0) || !(d->target >= 0) || d->plateau < 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "--time-limit, --target and --plateau must not be negative");
    if (d->shapes_file && kv_same_file(p->db_path, d->shapes_file))
        return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is the --shapes file: kevo never writes over an input",
                            p->db_path);
    return KEVO_OK;
}

static void tn_run_init(tn_run *R, const kevo_tune_opts *o, bool in_list)
{
    memset(R, 0, sizeof *R);
    R->o = o;
    R->ro = *o; /* a resumed run takes its settings from the DB */
    R->resume = o->resume_run > 0;
    R->in_list = in_list;
    kevo_run_row_init(&R->run);
    kevo_run_row_init(&R->seen);
    kevo_peer_set_init(&R->e.run_peers);
    kevo_gen_list_init(&R->G.list);
}

/* A resumed run's rows, read-only until the run is claimed (a resume that
 * is refused writes nothing): its row (held by no live process), settings,
 * shapes, peers and generators. */
static kevo_status tn_resume_rows(tn_run *R, kevo_run_generator **gens, int *ngens, kevo_err *err)
{
    kevo_db *db = NULL;
    kevo_status st = kevo_db_open_ro(R->o->proc.db_path, &db, err);
    if (st)
        return st;
    st = kevo_db_run_get(db, R->o->resume_run, &R->run, err);
    if (!st)
        st = tn_run_free(&R->run, err);
    R->seen = R->run; /* the run as this process first read it: its claim checks nobody took it since */
    kevo_err e2;
    if (!st)
        st = tn_optional(kevo_db_run_settings_get(db, R->run.id, &R->had, &e2), &e2, &R->have, err);
    if (!st && R->run.nshapes > 0)
        st = kevo_db_run_shapes_get(db, R->run.id, &R->stored, &R->nstored, err);
    if (!st)
        st = kevo_db_peers_list(db, R->run.id, &R->prows, &R->nprows, err);
    bool have_gens = false;
    if (!st)
        st = tn_optional(kevo_gen_store_get(db, R->run.id, gens, ngens, &e2), &e2, &have_gens, err);
    kevo_db_close(db);
    return st;
}

/* A resumed run: its stored options compared with the command line's and
 * taken (R->ro), a compile-only run handed off to a GPU here, a finished
 * one that nothing extends left as it is (R->finished), and a GPU run
 * refused where there is no GPU, all before anything is written. */
static kevo_status tn_resume_read(tn_run *R, int64_t *run_id, kevo_err *err)
{
    const kevo_tune_opts *o = R->o;
    kevo_run_generator *gens = NULL;
    int ngens = 0;
    kevo_status st = tn_resume_rows(R, &gens, &ngens, err);
    if (!st)
        st = tn_resume_opts(o, &R->run, R->have ? &R->had : NULL, R->stored, R->nstored, &R->ro, &R->rs,
                            &R->extends, err);
    if (!st)
        st = kevo_gen_list_resume(&R->G.list, gens, ngens,
                                  (o->given & KEVO_TUNE_GIVEN_GENERATORS) ? o->def.generators : NULL, &o->gen,
                                  &R->run, &R->extends, err);
    kevo_run_generators_free(gens, ngens);
    /* the hand-off: a compile-only run continued on a machine with a GPU */
    kevo_err e3;
    if (!st && R->ro.def.compile_only && !(o->given & KEVO_TUNE_GIVEN_COMPILE_ONLY) &&
        kevo_gpu_probe(R->ro.proc.device, kv_ctx_flag(R->ctx), &e3) == KEVO_OK) {
        R->handoff = true;
        R->ro.def.compile_only = false;
        R->run.compile_only = false;
        R->extends = true;
    }
    if (st)
        return st;
    *run_id = R->run.id;
    if (strcmp(R->run.status, "done") == 0 && !R->extends) {
        R->finished = true;
        kv_emit(kv_ctx_fn(R->ctx), kv_ctx_user(R->ctx), KEVO_EVENT_LINE, 0,
                "run %lld is finished (%s): nothing to do; a larger --budget, or another --time-limit, "
                "--plateau or --target continues it",
                (long long)R->run.id, R->run.stop_reason[0] ? R->run.stop_reason : "done");
        return KEVO_OK;
    }
    /* a GPU run needs a GPU here: said before anything is written */
    if (!R->ro.def.compile_only && !R->handoff) {
        int dev = R->ro.proc.device;
        if (o->proc.devices && o->proc.devices[0] >= '0' && o->proc.devices[0] <= '9')
            dev = atoi(o->proc.devices);
        if ((st = kevo_gpu_probe(dev, kv_ctx_flag(R->ctx), err))) {
            kevo_err_prefix(err, "run %lld was timed on a GPU", (long long)R->run.id);
            return st;
        }
    }
    return KEVO_OK;
}

/* A distribution: from the --shapes file (a new run) or as the run stored
 * it. */
static kevo_status tn_dist_load(tn_run *R, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    if (R->resume && R->run.nshapes > 0) {
        const kevo_op *op = kevo_op_find(R->run.op);
        if (!op || R->nstored != R->run.nshapes || R->nstored > KEVO_DIST_MAX)
            st = kevo_err_set(err, KEVO_ERR_DB, "run %lld's shapes are not as it stored them", (long long)R->run.id);
        if (!st && !(R->dist = calloc(1, sizeof *R->dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; i < R->nstored && !st; i++) {
            st = op->parse_shape(R->stored[i].shape, &R->dist->shape[i], err);
            op->shape_str(&R->dist->shape[i], R->dist->text[i], sizeof R->dist->text[i]);
            R->dist->weight[i] = R->stored[i].weight;
            R->dist->n++;
        }
    } else if (!R->resume && R->o->def.shapes_file) {
        const kevo_run_def *d = &R->ro.def;
        const kevo_op *op = kevo_op_find(d->op ? d->op : "");
        if (R->o->def.shape)
            st = kevo_err_set(err, KEVO_ERR_ARG, "--shape and --shapes exclude each other");
        else if (!op)
            st = kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%.100s'", d->op ? d->op : "");
        else if (!(R->dist = calloc(1, sizeof *R->dist)))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        else
            st = kevo_dist_read(R->o->def.shapes_file, op, R->dist, err);
        if (!st)
            R->ro.def.shape = R->dist->text[0];
    }
    return st;
}

/* Nothing a run stores is cut short: too long is refused (KEVO_ERR_ARG). */
static kevo_status tn_def_lengths(tn_run *R, kevo_err *err)
{
    const kevo_run_def *d = &R->ro.def;
    if (d->where && strlen(d->where) >= sizeof R->run.filter)
        return kevo_err_set(err, KEVO_ERR_ARG, "--where is longer than %zu characters", sizeof R->run.filter - 1);
    if (d->warm_start && strlen(d->warm_start) >= sizeof R->run.warm_start)
        return kevo_err_set(err, KEVO_ERR_ARG, "--warm-start: the path is longer than %zu characters",
                            sizeof R->run.warm_start - 1);
    if (d->extra_templates && strlen(d->extra_templates) >= sizeof R->rs.templates)
        return kevo_err_set(err, KEVO_ERR_ARG, "--templates: the path is longer than %zu characters",
                            sizeof R->rs.templates - 1);
    if (!R->resume && !tn_family_set(d->families, R->rs.family_arg, sizeof R->rs.family_arg))
        return kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is longer than %zu characters",
                            sizeof R->rs.family_arg - 1);
    return KEVO_OK;
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

/* What the run works in: the op, shape and families (the DB none of its
 * inputs), a resumed run's peers as stored, the generators checked, the
 * families' versions (a resume's against what it stored), a resumed run's
 * DB opened; *fams the families searched. */
static kevo_status tn_env_setup(tn_run *R, kv_buf *fams, kevo_err *err)
{
    const kevo_run_def *d = &R->ro.def;
    tn_env *e = &R->e;
    kevo_status st = tn_env_open(e, d->op, d->shape, d->dtype, d->arch, R->ro.proc.data_dir, d->extra_templates,
                                 err);
    if (!st)
        st = tn_db_not_input(e, R->ro.proc.db_path, &R->o->gen, err);
    e->dist = R->dist;
    e->peers = R->stored;
    R->dist = NULL;
    R->stored = NULL;
    if (!st && e->dist)
        st = tn_alloc_shapes(e, err);
    if (!st) { /* a resumed run's peers as it stored them (shape i at speers[i]) */
        kevo_peer_rows_set(e->op, R->prows, R->nprows, 0, 0, &e->run_peers);
        for (int i = 1; e->dist && i < e->dist->n; i++)
            kevo_peer_rows_set(e->op, R->prows, R->nprows, i, 0, &e->speers[i]);
    }
    e->on_event = kv_ctx_fn(R->ctx);
    e->event_ctx = kv_ctx_user(R->ctx);
    e->cancel = kv_ctx_flag(R->ctx);
    e->ctx = R->ctx;
    if (!st)
        st = tn_select_families(e, d->families, false, !R->resume && !R->in_list, err);
    if (!st) /* the generators this process runs, checked before anything compiles */
        st = tn_gens_check(R, err);
    for (int i = 0; !st && i < e->nspaces; i++)
        if (kv_buf_printf(fams, "%s%s", i ? "," : "", e->spaces[i]->family))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st && fams->len >= sizeof R->run.families)
        st = kevo_err_set(err, KEVO_ERR_ARG, "the %d families to search make a list longer than %zu characters; "
                          "name fewer with --family", e->nspaces, sizeof R->run.families - 1);
    /* a space changed since the run started: named, and nothing is written */
    if (!st && R->resume)
        st = tn_space_check(e, R->run.id, R->rs.space_hash, err);
    if (!st)
        st = tn_space_hash(e, R->rs.space_hash, sizeof R->rs.space_hash, err);
    /* a new run opens (creates) its DB only once its options, its search and (GPU) the device are known to
     * be good */
    if (!st && R->resume)
        st = kevo_db_open_ctx(R->ro.proc.db_path, false, R->ctx, &e->db, err);
    return st;
}

/* The GPU workers (a GPU run): the reference module, a worker on each GPU
 * (and each other MPI rank's, each distribution shape's). */
static kevo_status tn_gpus_start(tn_run *R, kevo_err *err)
{
    tn_env *e = &R->e;
    const kevo_run_def *d = &R->ro.def;
    tn_progress *prog = &R->prog;
    tn_line(prog, "kevo: compiling the %s reference module for %s", e->op->name, e->arch);
    kevo_status st = tn_ref_module(e, &R->ref, err);
    if (!st && e->ndev > 1 && e->dist)
        tn_line(prog, "kevo: starting the GPU worker of shape 1 of %d (%s) on GPU %d (inputs, reference, "
                "stage-0 baseline, ceilings)", e->dist->n, e->dist->text[0], e->ord[0]);
    else if (!st && e->ndev > 1)
        tn_line(prog, "kevo: starting a GPU worker on each of %d GPUs (inputs, reference, each one's "
                "stage-0 baseline and ceilings)", e->ndev);
    else if (!st)
        tn_line(prog, "kevo: starting the GPU worker (inputs, reference, stage-0 baseline, ceilings)");
    if (!st)
        st = tn_start_gpu(e, &R->ref, d->warmup, d->reps, R->ro.proc.eval_timeout, d->seed, true,
                          !R->resume || R->handoff, err);
    if (!st && e->mpi && !e->dist && kevo_mpi_size(e->mpi) > 1) {
        tn_line(prog, "kevo: starting a GPU worker on each other MPI rank (each one's peers and ceilings)");
        st = tn_remote_devices(e, &R->ref, &R->ro, R->o->proc.mixed_devices, err);
    }
    if (!st && e->mpi && e->dist && kevo_mpi_size(e->mpi) > 1)
        tn_line(prog, "kevo: a distribution of shapes is evaluated on this rank's GPUs; the other ranks "
                "compile");
    tn_dev_labels(e);
    if (!st && e->dist)
        st = tn_start_shape_gpus(e, &R->ref, &R->ro, prog, err);
    return st;
}

/* Fill the run row's settings from the options (a new run). */
static void tn_run_settings(kevo_run_row *run, const tn_env *e, const kevo_run_def *d, const char *policy,
                            const char *families)
{
    snprintf(run->op, sizeof run->op, "%s", e->op->name);
    snprintf(run->shape, sizeof run->shape, "%s", e->shape_txt);
    snprintf(run->dtype, sizeof run->dtype, "%s", kevo_dtype_name(e->dt));
    snprintf(run->arch, sizeof run->arch, "%s", e->arch);
    snprintf(run->policy, sizeof run->policy, "%s", policy);
    snprintf(run->families, sizeof run->families, "%s", families);
    run->seed = (int64_t)d->seed;
    run->budget = d->budget;
    snprintf(run->filter, sizeof run->filter, "%s", d->where ? d->where : "");
    snprintf(run->warm_start, sizeof run->warm_start, "%s", d->warm_start ? d->warm_start : "");
    run->compile_only = d->compile_only;
    run->flops = e->op->flops(&e->shape);
    run->bytes = e->op->bytes(&e->shape, e->dt);
}

/* The devices of the run (none for a compile-only one) and its settings:
 * the row of a new run, the device's figures, the peers it keeps. */
static kevo_status tn_devices_setup(tn_run *R, const kv_buf *fams, kevo_err *err)
{
    tn_env *e = &R->e;
    const kevo_run_def *d = &R->ro.def;
    const kevo_tune_proc *p = &R->o->proc;
    e->jobs = R->ro.proc.jobs;
    e->compile_timeout = R->ro.proc.compile_timeout;
    e->mpi = p->mpi;
    R->prog = (tn_progress){.fn = kv_ctx_fn(R->ctx), .ctx = kv_ctx_user(R->ctx), .budget = d->budget,
                            .t0 = kv_now()};
    kevo_status st = KEVO_OK;
    if (p->devices && d->compile_only)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--devices: a compile-only run uses no GPU");
    if (!st && !d->compile_only)
        st = tn_devices(e, p->devices, p->mixed_devices, R->ro.proc.device, err);
    if (!st && e->dist && e->ndev > e->dist->n) { /* shape i is evaluated on GPU i mod ndev */
        tn_line(&R->prog, "kevo: shape i is evaluated on the i-th GPU listed, so %d shapes use the first %d of the "
                "%d GPUs", e->dist->n, e->dist->n, e->ndev);
        e->ndev = e->dist->n;
    }
    if (!st)
        tn_pch_prepare(e);
    if (!st && !d->compile_only)
        st = tn_gpus_start(R, err);
    if (!R->resume) {
        tn_run_settings(&R->run, e, d, R->policy->name, fams->data ? fams->data : "");
        if (!d->compile_only)
            tn_run_device(&R->run, &e->info);
    }
    if (!d->compile_only)
        tn_keep_peers(e->op, &e->run_peers, &e->info.peers);
    if (!st && R->handoff) /* the GPU the compile-only run never had */
        tn_run_device(&R->run, &e->info);
    tn_settings_fill(&R->rs, &R->ro);
    return st;
}

/* The search, checked (--where, the constraints) before anything is
 * written, the generators opened, a new run's DB created, a resumed run's
 * graph rebuilt, the warm seeds. */
static kevo_status tn_search_setup(tn_run *R, kevo_err *err)
{
    tn_env *e = &R->e;
    const kevo_run_def *d = &R->ro.def;
    kevo_status st = kevo_search_init(&R->s, e->spaces, e->nspaces, &e->shape, &e->lim, e->dt, R->policy, d->seed,
                                      err);
    R->search_ready = !st;
    if (!st && (st = kevo_search_set_filter(&R->s, d->where, err)) == KEVO_ERR_PARSE)
        st = err->status = KEVO_ERR_ARG; /* the user's --where: a usage error */
    if (!st && e->dist)
        st = kevo_search_set_shapes(&R->s, e->dist->shape, e->dist->weight, e->dist->n, err);
    if (!st) {
        /* the model ranks with the run's stored ceilings, so a resumed run ranks as the first process did */
        kevo_model_device dev;
        kevo_model_device_init(&dev, &e->lim, R->run.peak_tflops, R->run.copy_tbps);
        kevo_search_set_model(&R->s, &dev);
        kevo_search_set_budget(&R->s, d->budget);
        st = kevo_search_check(&R->s, err);
    }
    if (!st)
        st = tn_gens_open(R, err);
    if (!st && !e->db)
        st = kevo_db_open_ctx(R->ro.proc.db_path, true, R->ctx, &e->db, err);
    if (!st && R->resume)
        st = tn_rebuild(R, err);
    if (!st)
        st = R->resume ? kevo_db_warm_get(e->db, R->run.id, &R->warm, &R->nwarm, err)
                       : tn_warm_collect_new(e, &R->ro, &R->warm, &R->nwarm, err);
    if (!st && kv_cancelled(e->cancel)) /* a signal before the run starts */
        st = KEVO_ERR_INTERRUPTED;
    return st;
}

/* From here on the run's row says what happens: it is marked running by
 * this process (a resume claims it), with its settings, generators, warm
 * seeds, peers and devices, in one transaction. */
static kevo_status tn_run_write(tn_run *R, int64_t *run_id, kevo_err *err)
{
    tn_env *e = &R->e;
    kevo_run_row *run = &R->run;
    run->budget = R->ro.def.budget;
    snprintf(run->status, sizeof run->status, "running");
    run->stop_reason[0] = '\0';
    run->finished_at[0] = '\0';
    run->pid = (int64_t)getpid();
    run->nshapes = e->dist ? e->dist->n : 0;
    kevo_run_generator gens[KEVO_GEN_MAX];
    kevo_gen_list_rows(&R->G.list, gens);
    kevo_status st = kevo_db_begin(e->db, err);
    if (!st && R->resume)
        st = tn_claim(e, &R->seen, err);
    if (!st)
        st = R->resume ? kevo_db_run_update(e->db, run, err) : kevo_db_run_insert(e->db, run, err);
    if (!st)
        st = kevo_db_run_settings_put(e->db, run->id, &R->rs, err);
    if (!st)
        st = kevo_gen_store_put(e->db, run->id, gens, R->G.list.n, err);
    if (!st && !R->resume && R->nwarm > 0)
        st = kevo_db_warm_put(e->db, run->id, R->warm, R->nwarm, err);
    if (!st && !R->ro.def.compile_only)
        st = kevo_db_peers_put(e->db, run->id, 0, 0, e->op, &e->run_peers, err);
    if (!st && e->dist)
        st = tn_store_peers(e, run, err);
    if (!st && !R->ro.def.compile_only)
        st = tn_devices_store(e, run, err);
    if (!st)
        st = kevo_db_commit(e->db, err);
    else
        kevo_db_rollback(e->db);
    R->written = !st;
    if (!st)
        *run_id = run->id;
    else if (!R->resume)
        run->id = 0;
    return st;
}

/* What the run is, said once its row is written: its settings, warm
 * seeds, devices and peers, what a resume found, the generators. */
static void tn_say_start(tn_run *R)
{
    tn_env *e = &R->e;
    const kevo_run_row *run = &R->run;
    tn_progress *prog = &R->prog;
    const bool co = R->ro.def.compile_only;
    tn_line(prog, "run %lld%s: %s %s %s %s, policy %s, budget %lld, seed %llu, families %s%s", (long long)run->id,
            R->resume ? " resumed" : "", run->op, run->shape, run->dtype, run->arch, run->policy,
            (long long)run->budget, (unsigned long long)R->ro.def.seed, run->families, co ? ", compile-only" : "");
    for (int i = 0; !R->resume && i < R->nwarm; i++)
        tn_line(prog, "warm start: %s %s, winner of run %lld at %s", R->warm[i].family, R->warm[i].params,
                (long long)R->warm[i].from_run, R->warm[i].from_shape);
    if (!co) {
        tn_line(prog, "device %s (%d SMs, driver %d); cuBLAS peak %.0f TFLOP/s, copy %.2f TB/s; roofline floor "
                "%.3f ms",
                e->info.name, e->info.sm_count, e->info.driver_version, run->peak_tflops, run->copy_tbps,
                tn_floor_ms(run->flops, run->bytes, run->peak_tflops, run->copy_tbps));
        tn_say_peers(prog, e->op, &e->run_peers, "");
    }
    for (int k = 1; k < e->ndev + e->nrem && !co && !e->dist; k++) {
        tn_line(prog, "%s: %s (%s, %d SMs); cuBLAS peak %.0f TFLOP/s, copy %.2f TB/s; its peers:", e->dlabel[k],
                e->dinfo[k].name, e->dinfo[k].pci_bus, e->dinfo[k].sm_count, e->dinfo[k].peak_tflops,
                e->dinfo[k].copy_tbps);
        tn_say_peers(prog, e->op, &e->dinfo[k].peers, "  ");
    }
    for (int k = 0; k < e->ndev && e->ndev > 1 && e->dist && !co; k++) {
        char which[160] = "";
        for (int i = k, len = 0; i < e->dist->n && len < (int)sizeof which - 8; i += e->ndev)
            len += snprintf(which + len, sizeof which - (size_t)len, "%s%d", i == k ? "" : ", ", i + 1);
        tn_line(prog, "%s: %s (%s, %d SMs) evaluates shape%s %s", e->dlabel[k], e->dinfo[k].name,
                e->dinfo[k].pci_bus, e->dinfo[k].sm_count, k + e->ndev < e->dist->n ? "s" : "", which);
    }
    if (R->handoff)
        tn_line(prog, "run %lld was compile-only: its compiled candidates are verified and timed on %s first",
                (long long)run->id, e->info.name);
    if (R->resume)
        tn_line(prog, "resumed with %lld candidates done, %d left pending by the last process", (long long)R->done,
                R->nleft);
    tn_gens_describe(R);
}

kevo_status tn_run_open(tn_run *R, kevo_ctx *ctx, const kevo_tune_opts *o, bool in_list, int64_t *run_id,
                        kevo_err *err)
{
    *run_id = 0;
    tn_run_init(R, o, in_list);
    R->ctx = ctx;
    kevo_status st = tn_opts_check(o, err);
    if (!st && !R->resume) /* a new run's generators and their options, checked before anything */
        st = kevo_gen_list_new(&R->G.list, o->def.generators, &o->gen, err);
    if (!st && R->resume)
        st = tn_resume_read(R, run_id, err);
    else if (!st && o->def.budget < 1)
        st = kevo_err_set(err, KEVO_ERR_ARG, "--budget must be at least 1");
    if (st || R->finished)
        return st;
    if (!(st = tn_dist_load(R, err)))
        st = tn_def_lengths(R, err);
    if (!st)
        st = tn_policy(R->ro.def.policy, &R->policy, err);
    if (st)
        return st;
    kv_buf fams;
    kv_buf_init(&fams);
    st = tn_env_setup(R, &fams, err);
    R->started = !st; /* from here on, an error still ends the run's way (tn_run_close) */
    if (!st)
        st = tn_devices_setup(R, &fams, err);
    kv_buf_release(&fams);
    if (!st)
        st = tn_search_setup(R, err);
    if (!st)
        st = tn_run_write(R, run_id, err);
    if (R->written) {
        tn_say_start(R);
        tn_warm_apply(&R->e, &R->s, R->warm, R->nwarm);
    }
    return st;
}

/* The run's summary: its counts, then its best (a distribution's per
 * shape) with the verdict against the peers. */
static void tn_say_end(tn_run *R)
{
    tn_env *e = &R->e;
    tn_progress *prog = &R->prog;
    const kevo_run_row *run = &R->run;
    int evaluated, compiled, failed, ok;
    kevo_db_run_counts(e->db, run->id, &evaluated, &compiled, &failed, &ok, NULL);
    tn_line(prog, "run %lld %s (%s): %d candidates, %d compiled, %d verified, %d failed", (long long)run->id,
            run->status, run->stop_reason, evaluated, compiled, ok, failed);
    kevo_cand_row b;
    if (R->ro.def.compile_only)
        return;
    if (e->dist && kevo_db_cand_best(e->db, run->id, &b, NULL) == KEVO_OK) {
        tn_line(prog, "best over the %d shapes #%lld %s %s: weighted geometric mean of vs_best_peer %.2fx",
                e->dist->n, (long long)b.id, b.family, b.params, b.fitness);
        kevo_cand_row_release(&b);
        tn_dist_summary(e, run, prog);
    } else if (kevo_db_cand_best(e->db, run->id, &b, NULL) == KEVO_OK) {
        tn_line(prog, "best #%lld %s %s: %.4f ms [%.4f, %.4f], %.2fx the stage-0 baseline (%.3f ms), %.1f "
                "TFLOP/s, %.0f%% of the roofline",
                (long long)b.id, b.family, b.params, b.median_ms, b.ci_lo_ms, b.ci_hi_ms, b.speedup,
                kevo_peer_ok_ms(&e->run_peers, kevo_op_peer_baseline(e->op)), b.tflops, 100 * b.roofline);
        char verdict[320];
        kevo_peer_verdict(e->op, b.vs_peer, &e->run_peers, verdict, sizeof verdict);
        tn_line(prog, "%s", verdict);
        kevo_cand_row_release(&b);
    } else {
        tn_line(prog, "no kernel verified at this shape: nothing beats the peers");
    }
}

/* The run's row ended: how it ended (done, interrupted, failed), why, when,
 * and the time its processes spent.  Returns st or the DB's error. */
static kevo_status tn_run_end(tn_run *R, kevo_status st, bool *stored_end, kevo_err *err)
{
    kevo_run_row *run = &R->run;
    bool interrupted = st == KEVO_ERR_INTERRUPTED;
    snprintf(run->status, sizeof run->status, "%s", interrupted ? "interrupted" : st ? "failed" : "done");
    snprintf(run->stop_reason, sizeof run->stop_reason, "%s",
             interrupted ? "signal" : st ? "error" : R->stop.reason);
    kv_utc_iso(run->finished_at);
    R->rs.elapsed_s = R->stop.elapsed0 + kv_now() - R->prog.t0;
    kevo_err err2;
    kevo_status st2 = kevo_db_run_update(R->e.db, run, &err2);
    *stored_end = !st2;
    if (!st2)
        st2 = kevo_db_run_settings_put(R->e.db, run->id, &R->rs, &err2);
    if (!st2) { /* the generators again: the calls each made */
        kevo_run_generator gens[KEVO_GEN_MAX];
        kevo_gen_list_rows(&R->G.list, gens);
        st2 = kevo_gen_store_put(R->e.db, run->id, gens, R->G.list.n, &err2);
    }
    if (!st && st2) {
        st = st2;
        *err = err2;
    }
    return st;
}

static void tn_run_release(tn_run *R)
{
    tn_gens_close(R);
    kevo_gen_list_release(&R->G.list);
    free(R->left);
    free(R->left_round);
    free(R->warm);
    free(R->dist);
    free(R->stored);
    free(R->prows);
    if (R->search_ready)
        kevo_search_release(&R->s);
    tn_work_release(&R->ref);
    tn_env_release(&R->e);
}

kevo_status tn_run_close(tn_run *R, kevo_status st, kevo_err *err)
{
    if (!R->started) { /* refused before anything started: nothing to end */
        tn_run_release(R);
        return st;
    }
    const bool co = R->ro.def.compile_only, written = R->written;
    tn_gens_close(R);
    if (R->search_ready)
        kevo_search_release(&R->s);
    R->search_ready = false;
    if (written && !st && !co)
        st = tn_devices_done(&R->e, &R->run, &R->prog, err);
    if (written && !st && !co && !R->e.dist)
        st = tn_settle(&R->e, &R->run, &R->ro, &R->prog, err);
    if (written && !st && !co)
        st = tn_peer_nocodesign(&R->e, &R->run, &R->ro, &R->ref, &R->prog, err);
    if (st == KEVO_ERR_INTERRUPTED || (st && kv_cancelled(kv_ctx_flag(R->ctx)))) {
        st = KEVO_ERR_INTERRUPTED;
        kv_ctx_ending(R->ctx); /* the run stops listening: a second signal may now end kevo at once */
    }
    bool stored_end = false; /* the run's row says how it ended */
    if (written)
        st = tn_run_end(R, st, &stored_end, err);
    if (st == KEVO_ERR_INTERRUPTED) /* a run left "running" by a process that has ended resumes as well */
        tn_interrupted(err, kv_ctx_why(R->ctx), R->resume ? R->run.id : (written ? R->run.id : 0), R->ro.proc.db_path,
                       !written ? 0 : stored_end ? 1 : 2);
    if (written && !st)
        tn_say_end(R);
    if (written && (!st || st == KEVO_ERR_INTERRUPTED))
        tn_gens_account(R); /* the generators with budgets of their own: what came of their calls */
    tn_run_release(R);
    return st;
}
