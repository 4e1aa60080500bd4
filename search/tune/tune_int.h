/* tune_int.h — the tuning loop's private header: what its files share.
 *
 * The loop (tune.c) reads as propose -> prepare -> evaluate -> record ->
 * stop?; each role is a file:
 *   run.c       what defines a run: options, resume, the run's row
 *   env.c       what a run works in: the op, shape, families, the DB, its
 *               GPUs' configs and the peer figures it keeps (accessors the
 *               other files share, so that none of them calls back up)
 *   devices.c   the GPUs: workers, their fit to the arch, the run's GPUs as
 *               one set (evaluator/devset.h), their throughput
 *   propose.c   the generators' calls (search/gen.h) each round
 *   cand.c      a candidate: prepare (render, plan, key), compile through the
 *               cache, register, request, finish (verify, time, figures), apply
 *   pipe.c      the rounds in flight: compiles streaming to the GPUs, each
 *               GPU (this process's or another rank's) driven through the set
 *   settle.c    the winner beyond the noise (the leaders re-timed)
 *   warm.c      warm start: earlier winners at the nearest shapes
 *   peers.c     the same-run peers, and the one measured after the search
 *   verify.c    `kevo verify`, and a stored candidate at another shape
 *   progress.c  the run's account as events (lines, the bar, traces)
 *   stop.c      every stop rule, through kevo_stop_check
 */
#ifndef KEVO_TUNE_INT_H
#define KEVO_TUNE_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "db/store.h"
#include "evaluator/compile.h"
#include "evaluator/devset.h"
#include "evaluator/gpu.h"
#include "evaluator/mpi.h"
#include "core/op.h"
#include "core/verdict.h"
#include "search/dist.h"
#include "search/gen.h"
#include "search/search.h"
#include "search/tune.h"
#include "templates/space.h"
#include "util/util.h"

#define TN_ALL_MAPS ((1u << KEVO_MAP_SORTED) | (1u << KEVO_MAP_UNEVEN) | (1u << KEVO_MAP_SHUFFLED))
#define TN_MAX_DEV KEVO_DEVSET_MAX /* GPUs of a run: this process's and, under --mpi, the other ranks' */

/* ---- what a run (or a verification) works in (env.c) ---- */

typedef struct tn_env {
    const kevo_op *op;
    kevo_syms shape;
    char shape_txt[256];
    kevo_dtype dt;
    char arch[16];
    kevo_limits lim;
    char *abi;         /* the op's ABI header text */
    /* the names of the op's tensors kernels read and write (a generated source's check) */
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
     * the run (their ord and dinfo too); each evaluates through e->mpi.  The
     * loop drives all ndev + nrem alike, as one set (tn_devset) */
    kevo_mpi_gpu *rgpu;
    int nrem;
    char dlabel[TN_MAX_DEV][48]; /* how progress lines name each device ("GPU 1", "rank 2 GPU 0") */
    char dhost[TN_MAX_DEV][256]; /* each device's host, as stored with the run */
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
    /* generators' one-point spaces met so far (owned) */
    kevo_space **added;
    int nadded, added_cap;
    kevo_event_fn on_event; /* the caller's events (warnings, traces); NULL: none */
    void *event_ctx;
    kv_cancel *cancel;      /* the caller's kevo_ctx flag: every wait of the run stops once it is raised */
    kevo_ctx *ctx;          /* the caller's handle (events, flag) for what the run hands it to: compiles */
} tn_env;

/* Op, shape, dtype, arch, the op's files and template families into e.
 * Errors: KEVO_ERR_NOT_FOUND (op), KEVO_ERR_ARG, the files' and spaces'. */
kevo_status tn_env_open(tn_env *e, const char *op, const char *shape, const char *dtype, const char *arch,
                        const char *data_dir, const char *extra_templates, kevo_err *err);
/* Stops e's workers, frees what it owns, closes its DB. */
void tn_env_release(tn_env *e);
/* An output never replaces an input: the run's DB is none of the files it
 * reads (a family's space file or source, the op's ABI header, a file a
 * generator reads with options gen), compared by device and inode.
 * KEVO_ERR_ARG naming the file. */
kevo_status tn_db_not_input(const tn_env *e, const char *db, const kevo_gen_opts *gen, kevo_err *err);
/* Whether family is one of the comma list (every family when list is NULL). */
bool tn_family_listed(const char *list, const char *family);
/* Keep the families named in `list` (all when NULL) that support arch and
 * shape; say why each other one is left out (unless quiet).  strict (one
 * new run on one arch): a family the list names that does not target the
 * arch is a usage error (KEVO_ERR_ARG), as is an arch no family targets;
 * none left: KEVO_ERR_UNSUPPORTED. */
kevo_status tn_select_families(tn_env *e, const char *list, bool quiet, bool strict, kevo_err *err);
/* Keep a generator's space (owned by e from now on).  false when out of
 * memory (the space is freed). */
bool tn_keep_space(tn_env *e, kevo_space *sp);
/* The space of a stored candidate: its template family, or the one-point
 * space its generator restores (kept in e, admitted again as a fresh one
 * would be: the DB is untrusted).  *out NULL with KEVO_OK for a call that
 * gave no source.  Errors: kevo_gen_restore's. */
kevo_status tn_space_of(tn_env *e, const kevo_cand_row *row, const kevo_space **out, kevo_err *err);

/* ---- a candidate on its way through the pipeline (cand.c) ---- */

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

void tn_work_release(tn_work *w);
/* Render, plan and key one candidate (a plan that does not evaluate is its
 * failure, not an error: the job comes back failed and cached).  Errors:
 * rendering's, KEVO_ERR_NOMEM. */
kevo_status tn_prepare(tn_env *e, const kevo_space *sp, int family, const kevo_config *cfg, tn_work *w,
                       kevo_err *err);
/* The DB cache's binary for a prepared candidate, if it holds one. */
void tn_cache_get(tn_env *e, tn_work *w);
/* A compiled candidate's source and binary into the DB's cache (a
 * read-only DB keeps nothing).  Errors: the DB's. */
kevo_status tn_cache_store(tn_env *e, const tn_work *w, kevo_err *err);
/* Compile (or fetch from the cache) every job of w[0..n).  Errors: the
 * compile pool's or MPI's, the DB's. */
kevo_status tn_compile(tn_env *e, tn_work *w, int n, kevo_err *err);
/* First line of a log (the error's, past ptxas's info lines) into out[n]. */
void tn_first_line(const char *s, char *out, size_t n);
/* The evaluation request for a prepared candidate: its id, cubin and plan,
 * the maps to verify, whether to time, the inputs' seed. */
kevo_gpu_request tn_request(const tn_work *w, int64_t id, unsigned maps, bool time, uint64_t seed);

/* ---- the run's account (progress.c) ---- */

typedef struct tn_progress {
    kevo_event_fn fn; /* NULL: silent */
    void *ctx;
    int64_t budget;
    double t0;
} tn_progress;

/* Where the run stands (a PROGRESS event): done of the budget, best, what it does. */
void tn_bar(tn_progress *p, int64_t done, double best, const char *what);
/* A line of the run's account (a LINE event). */
#define tn_line(p, ...) kv_emit((p)->fn, (p)->ctx, KEVO_EVENT_LINE, 0, __VA_ARGS__)
/* A TRACE event: every proposal, compile, submit, result and apply of the
 * loop with its time since the loop began (the CLI prints them under
 * KEVO_TRACE_EVAL=1). */
void tn_trace(const tn_env *e, const char *what, int64_t cand, int dev);
/* A DEBUG event with the worker's check of its cuBLAS reference, when it ran. */
void tn_say_ref_check(const tn_env *e, const kevo_gpu_info *in);
/* A DEBUG event with where a candidate's evaluation spent its time in the worker. */
void tn_say_phases(const tn_env *e, int64_t cand, const kevo_gpu_result *res);
/* One line per peer of op in ps, the fastest checked one marked. */
void tn_say_peers(tn_progress *prog, const kevo_op *op, const kevo_peer_set *ps, const char *indent);
/* A finished candidate as a CANDIDATE event (nothing without a handler). */
void tn_cand_event(tn_progress *prog, const kevo_cand_event *c);
/* A stored candidate's CANDIDATE event, its data from the graph, the work
 * and the row (gpu: which GPU, when several evaluate; NULL otherwise). */
void tn_print_result(tn_progress *prog, const kevo_search *s, const tn_work *w, const kevo_cand_row *row,
                     int64_t done, int64_t budget, double best, bool compile_only, const char *gpu);
/* A distribution run's summary: each shape's fastest candidate and verdict. */
void tn_dist_summary(tn_env *e, const kevo_run_row *run, tn_progress *prog);

/* ---- figures of a timed candidate (cand.c) ---- */

typedef struct tn_figs {
    double median_ms, ci_lo_ms, ci_hi_ms, speedup, vs_peer, roofline, tflops;
} tn_figs;

/* The roofline floor, ms (NaN when neither ceiling was measured). */
double tn_floor_ms(double flops, double bytes, double peak_tflops, double copy_tbps);
/* A timed result's figures against one shape's peers. */
tn_figs tn_figures(const kevo_gpu_result *res, uint64_t seed, const kevo_op *op, const kevo_peer_set *ps,
                   double flops, double bytes, double peak_tflops, double copy_tbps);

/* ---- the GPUs (devices.c) ---- */

/* The worker configuration of one shape of the run (env.c). */
kevo_gpu_config tn_gpu_config(const tn_env *e, const tn_work *ref, const kevo_syms *shape, int device, int warmup,
                              int reps, double timeout, uint64_t seed, bool baseline, bool ceilings);
/* Worker k of the run's GPUs (0: e->gpu), and the worker of a
 * distribution's shape i (env.c). */
kevo_gpu *tn_dgpu(const tn_env *e, int k);
kevo_gpu *tn_shape_gpu(const tn_env *e, int i);
/* The op's reference module for the dtype, through the cache. */
kevo_status tn_ref_module(tn_env *e, tn_work *w, kevo_err *err);
/* Start a worker with the reference module on each of the run's GPUs;
 * fills e->info and e->dinfo, narrows the plans' limits to the GPUs. */
kevo_status tn_start_gpu(tn_env *e, const tn_work *ref, int warmup, int reps, double timeout, uint64_t seed,
                         bool baseline, bool ceilings, kevo_err *err);
/* The GPUs of --devices into e->ord / e->ndev. */
kevo_status tn_devices(tn_env *e, const char *list, bool mixed, int device, kevo_err *err);
/* Under --mpi: a GPU worker on every other rank, appended to the run's devices. */
kevo_status tn_remote_devices(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, bool mixed, kevo_err *err);
/* Every device's label and host, once they are known. */
void tn_dev_labels(tn_env *e);
/* The run's GPUs as one set: device k of the run is the set's GPU k (this
 * process's workers, then the other ranks' GPUs).  The set points at e's
 * workers: valid while they are not stopped or replaced.  Errors:
 * kevo_devset's (KEVO_ERR_ARG: too many). */
kevo_status tn_devset(const tn_env *e, kevo_devset *s, kevo_err *err);
/* The workers of a distribution's shapes 1.. (shape i on GPU i mod ndev). */
kevo_status tn_start_shape_gpus(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, tn_progress *prog,
                                kevo_err *err);
/* Start each family's precompiled header now (best effort). */
void tn_pch_prepare(const tn_env *e);
/* The peers and ceilings a result of GPU k is measured against (env.c). */
const kevo_peer_set *tn_dev_peers(const tn_env *e, const kevo_run_row *run, int k, double *peak_tflops,
                                  double *copy_tbps);
/* This process's GPUs as rows of the run's devices (after earlier processes'). */
kevo_status tn_devices_store(tn_env *e, const kevo_run_row *run, kevo_err *err);
/* At the end of the search loop: each GPU's throughput, stored and (several) printed. */
kevo_status tn_devices_done(tn_env *e, const kevo_run_row *run, tn_progress *prog, kevo_err *err);
/* The run's device: its name, driver, SMs, clocks and measured ceilings. */
void tn_run_device(kevo_run_row *run, const kevo_gpu_info *info);

/* ---- the peers (peers.c) ---- */

/* A worker's peers into the figures a run keeps (those measured first stay; env.c). */
void tn_keep_peers(const kevo_op *op, kevo_peer_set *kept, const kevo_peer_set *measured);
/* Room for a distribution's shapes and their peers (env.c). */
kevo_status tn_alloc_shapes(tn_env *e, kevo_err *err);
/* A distribution run's shapes with their weights and peers, stored. */
kevo_status tn_store_peers(tn_env *e, const kevo_run_row *run, kevo_err *err);

/* ---- stop rules (stop.c) ---- */

/* Where in the loop the rules are asked. */
typedef enum kevo_stop_at {
    KEVO_STOP_AT_TURN,  /* a turn of the loop begins: a signal; the time limit, target or plateau; the budget */
    KEVO_STOP_AT_EMPTY, /* the round generator proposed nothing: the space is exhausted when nothing is in
                           flight and no call is coming */
    KEVO_STOP_AT_IDLE,  /* no round is in flight: the end once a rule held or the budget is spent */
    KEVO_STOP_AT_STEP,  /* between two steps of a round: a signal */
} kevo_stop_at;

/* What the loop does next. */
typedef enum kevo_stop_act {
    KEVO_STOP_GO,    /* propose: no rule holds and the budget has room */
    KEVO_STOP_FULL,  /* the budget is spoken for: propose nothing; what is in flight goes on */
    KEVO_STOP_DRAIN, /* a rule held (time limit, target, plateau): propose nothing, take no generator's call;
                        the rounds in flight finish */
    KEVO_STOP_END,   /* end the loop now (interrupted: a signal came) */
} kevo_stop_act;

/* A run's stop rules (0: off) and what has held so far. */
typedef struct kevo_stop {
    int64_t budget;
    double time_limit;    /* seconds over the run's processes */
    int64_t plateau;      /* candidates without a better one */
    double target;        /* speedup */
    double elapsed0, t0;  /* seconds the run's earlier processes spent; kv_now() when this one began */
    const char *reason;   /* why the run stops: "budget" until another rule holds (its stop_reason) */
    bool draining;        /* the time limit, target or plateau held */
    bool interrupted;     /* a signal came */
    kv_cancel *cancel;    /* the run's cancel flag (tn_env.cancel); NULL: never */
} kevo_stop;

/* Where the run stands, for the rules. */
typedef struct kevo_stop_facts {
    int64_t done;         /* candidates applied */
    int64_t last_gain;    /* done at the last better candidate */
    int64_t inflight;     /* registered and not applied */
    double best;          /* the best fitness */
    bool busy;            /* a generator's call is in flight */
} kevo_stop_facts;

/* The rules of a run, nothing held yet. */
void kevo_stop_init(kevo_stop *st, const kevo_run_def *def, double elapsed0, double t0);
/* Every stop rule of a run, asked at one point of the loop: what the loop
 * does next (st->reason and st->interrupted say why it ends).  The time
 * limit, target and plateau are asked at each turn and, once one held,
 * hold for the rest of the run.  At KEVO_STOP_AT_STEP, st and f may be
 * NULL (only the signal is asked). */
kevo_stop_act kevo_stop_check(kevo_stop *st, kevo_stop_at at, const kevo_stop_facts *f);

/* ---- the run (run.c) and its loop (tune.c, propose.c, pipe.c) ---- */

/* The rounds in flight (pipe.c): the candidates registered and not yet
 * applied, in proposal order, positions [head, tail) of a ring of cap
 * slots, round k in flight ending at position rend[k] (oldest first). */
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
    int64_t queued[TN_MAX_DEV]; /* a device's next position, sent to wait there behind on_gpu (depth > 1); -1 none */
    int64_t last_use[TN_MAX_DEV]; /* when each device last took a candidate (placement count), 0 never */
    int64_t placements;
    bool stream;
    kevo_devset devs;        /* stream: the run's GPUs (tn_devset) */
    kevo_compile_pool *pool; /* stream without other ranks */
    bool mpi;                /* stream with other ranks: kevo_mpi_compile_start is open */
    int compiling;           /* compiles started (local) or queued (MPI) and not done */
} tn_pipe;

/* The generators this process drives (propose.c). */
typedef struct tn_gens {
    kevo_gen_list list;              /* the run's, with their stored options */
    kevo_gen_ctx ctx[KEVO_GEN_MAX];  /* what each works in */
    bool off[KEVO_GEN_MAX];          /* listed, but not run by this process (kevo_generator.check) */
    kevo_gen *g[KEVO_GEN_MAX];       /* open; NULL: not run (the round generator always is) */
    bool busy[KEVO_GEN_MAX];         /* a call in flight */
    int parent[KEVO_GEN_MAX];        /* the call's parent node */
    int64_t calls[KEVO_GEN_MAX];     /* calls made in the run (stored ones included) */
    int64_t asked[KEVO_GEN_MAX];     /* a budgeted generator's calls_max when it opened; -1: none */
    char why[KEVO_GEN_MAX][256];     /* why it stopped calling before its budget ran out ("" none yet) */
    int round;                       /* the round generator's index */
} tn_gens;

/* A run from its options to its end: everything kevo_tune's steps share. */
typedef struct tn_run {
    kevo_ctx *ctx;            /* the caller's handle: events, cancel flag */
    const kevo_tune_opts *o;  /* as the caller gave them */
    kevo_tune_opts ro;        /* what the run goes on with (a resumed run's from the DB) */
    bool resume, in_list, handoff, extends;
    bool finished;            /* a finished resumed run that nothing extends: left as it is */
    bool started;             /* past the checks: the devices may have started (an error now ends the run's way) */
    bool written;             /* the run's row says it is running */
    kevo_run_row run, seen;   /* the run's row; as this process first read it (a resume's claim) */
    kevo_run_settings rs, had;
    bool have;                /* had: the stored settings (a run of an older kevo has none) */
    kevo_run_shape *stored;   /* a resumed distribution's shapes as stored */
    int nstored;
    kevo_peer_row *prows;     /* a resumed run's peers as stored */
    int nprows;
    kevo_dist *dist;
    const kevo_policy *policy;
    tn_env e;
    tn_progress prog;
    tn_work ref;              /* the op's reference module */
    kevo_search s;
    bool search_ready;
    tn_gens G;
    kevo_warm_seed *warm;
    int nwarm;
    /* the loop */
    tn_pipe pipe;
    kevo_stop stop;
    tn_work *works;           /* a round's candidates being registered */
    int64_t done, last_gain, nrows, next_round;
    double best;
    int *left, *left_round, nleft; /* what a killed process left pending, with the rounds */
    bool head_started;
} tn_run;

/* Everything before the search loop (run.c): the options checked (and a
 * resumed run's taken from the DB), the families, devices, search and
 * generators ready, and the run's row written (R->written, *run_id).  A
 * finished resumed run that nothing extends is R->finished with KEVO_OK.
 * in_list: one run of an --arch list.  Errors: kevo_tune's. */
kevo_status tn_run_open(tn_run *R, kevo_ctx *ctx, const kevo_tune_opts *o, bool in_list, int64_t *run_id,
                        kevo_err *err);
/* After the loop (run.c): throughput, the winner settled, the peer measured
 * after the search, the run's row ended, the summary; R released.
 * Returns st or what went wrong after it. */
kevo_status tn_run_close(tn_run *R, kevo_status st, kevo_err *err);
/* The message of an interrupted run and the command that continues it;
 * why: the kevo_ctx_cancel that stopped it (a signal, named). */
kevo_status tn_interrupted(kevo_err *err, int why, int64_t run_id, const char *db_path, int written);

/* ---- what defines a run, and a resume (resume.c) ---- */

/* A run another live process holds is refused, naming that process:
 * KEVO_ERR_BUSY. */
kevo_status tn_run_free(const kevo_run_row *run, kevo_err *err);
/* Claim a resumed run for this process inside the transaction that marks
 * it running: it must still be as this process first read it (`seen`), and
 * held by no live process (KEVO_ERR_BUSY naming the holder otherwise). */
kevo_status tn_claim(tn_env *e, const kevo_run_row *seen, kevo_err *err);
/* A --family list as a set: names deduplicated and sorted, joined by commas
 * into out[n] ("" for NULL).  false when it does not fit. */
bool tn_family_set(const char *list, char *out, size_t n);
/* "family=<16 hex digits of sha256(space file, sources)>,..." of the
 * searched families into out[n].  Errors: reading a space file, KEVO_ERR_ARG
 * (too many), KEVO_ERR_NOMEM. */
kevo_status tn_space_hash(const tn_env *e, char *out, size_t n, kevo_err *err);
/* A resumed run's families against the hashes it stored: one that changed
 * is named (KEVO_ERR_UNSUPPORTED), and nothing is written. */
kevo_status tn_space_check(const tn_env *e, int64_t run_id, const char *stored, kevo_err *err);
/* A resumed run's options: the stored ones, compared with those the user
 * named (o->given; one that differs is KEVO_ERR_ARG).  ro and rs receive
 * what the run continues with; *extends whether a finished run has
 * something left to do. */
kevo_status tn_resume_opts(const kevo_tune_opts *o, const kevo_run_row *run, const kevo_run_settings *stored,
                           const kevo_run_shape *shapes, int nshapes, kevo_tune_opts *ro, kevo_run_settings *rs,
                           bool *extends, kevo_err *err);
/* The settings row of a run from the options it runs with. */
void tn_settings_fill(kevo_run_settings *rs, const kevo_tune_opts *ro);
/* An optional row's read (a run of an older kevo has none): *have when it
 * was there; KEVO_ERR_NOT_FOUND is no error, any other (got) is passed on. */
kevo_status tn_optional(kevo_status s, const kevo_err *got, bool *have, kevo_err *err);
/* Rebuild a stored run's graph: every candidate with its parent edge and
 * fitness; what a killed process left pending into R->left. */
kevo_status tn_rebuild(tn_run *R, kevo_err *err);

/* The generators (propose.c): checked before anything is written, opened
 * once the graph is ready, described once the run's row is, closed. */
kevo_status tn_gens_check(tn_run *R, kevo_err *err);
kevo_status tn_gens_open(tn_run *R, kevo_err *err);
void tn_gens_describe(tn_run *R);
void tn_gens_close(tn_run *R);
/* The candidates the run may make: --budget for the round generator (and
 * the generators without a budget of their own), plus, apart, each
 * budgeted generator's calls (its calls_max while it runs here, the calls
 * it made once it stopped or when it is off).  The stop rules' budget. */
int64_t tn_gens_budget(const tn_run *R);
/* The run's last lines for each budgeted generator (account.c): calls made
 * of those asked, failed by kind, compiled, verified, its best candidate's
 * figures, and why it made fewer calls than asked.  Reads the DB; a DB
 * error leaves a line saying so. */
void tn_gens_account(tn_run *R);
/* Propose: each generator's call started, the round's proposals prepared
 * and registered into R->works (*ready of them), a finished call taken.
 * propose: the state is one an uninterrupted run proposes in (and the
 * rules allow); act: what the stop rules said this turn; inflight: the
 * candidates registered and not applied.  *end: the space is exhausted.
 * Errors: the DB's, the generators', KEVO_ERR_NOMEM. */
kevo_status tn_propose(tn_run *R, bool propose, kevo_stop_act act, int64_t inflight, int *ready, bool *end,
                       kevo_err *err);

/* Register a batch of proposals (cand.c): render, plan, and insert every
 * row and edge (and gen, a generator's call) in one transaction. */
kevo_status tn_register(tn_env *e, kevo_search *s, int64_t run_id, int64_t seq0, int64_t round,
                        const kevo_proposal *props, int n, kevo_generation_row *gen, tn_work *works, int *ready,
                        kevo_err *err);
/* Store one candidate's outcome (cand.c: its row, one transaction), show it
 * to the search and print it.  pre: its result, evaluated already on GPU
 * dev in eval_s seconds; NULL: evaluated here. */
kevo_status tn_apply_one(tn_run *R, tn_work *w, const kevo_gpu_result *pre, int dev, double eval_s, kevo_err *err);

/* The pipe (pipe.c). */
kevo_status tn_pipe_open(tn_env *e, tn_pipe *P, int cap, bool stream, kevo_err *err);
void tn_pipe_close(tn_env *e, tn_pipe *P);
kevo_status tn_pipe_round_add(tn_env *e, tn_pipe *P, tn_work *w, int n, kevo_err *err);
/* Finish the oldest round: compile, verify and time it, every result
 * applied in proposal order (the later rounds compiling meanwhile).
 * Errors: the DB's, KEVO_ERR_INTERRUPTED, KEVO_ERR_WORKER. */
kevo_status tn_pipe_finish_round(tn_run *R, kevo_err *err);

/* ---- settle, warm start, peer after, verify ---- */

/* The run's winner decided beyond the noise (settle.c). */
kevo_status tn_settle(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, tn_progress *prog, kevo_err *err);
/* The op's peer that needs the search's winner (peers.c). */
kevo_status tn_peer_nocodesign(tn_env *e, kevo_run_row *run, const kevo_tune_opts *o, const tn_work *ref,
                               tn_progress *prog, kevo_err *err);
/* A new run's warm seeds, collected before its row exists (warm.c). */
kevo_status tn_warm_collect_new(tn_env *e, const kevo_tune_opts *o, kevo_warm_seed **v, int *n, kevo_err *err);
/* Hand stored warm seeds to the search (those whose family is searched). */
void tn_warm_apply(const tn_env *e, kevo_search *s, const kevo_warm_seed *v, int n);
/* Verify (and time) a stored candidate's configuration at e's shape
 * (verify.c): what `kevo verify` does, and tune for the peer after. */
kevo_status tn_check_config(tn_env *e, const kevo_space *sp, const kevo_config *cfg, const kevo_cand_row *c,
                            unsigned maps, bool time, uint64_t seed, tn_work *w, kevo_gpu_result *res,
                            kevo_err *err);

#endif /* KEVO_TUNE_INT_H */
