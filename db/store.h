/* store.h — kevo's SQLite store: runs, candidates (graph nodes), edges,
 * sources, compiled binaries (the compile cache) and measurements.
 *
 * One file per database, WAL journal, a busy timeout, one transaction per
 * result.  A file that is not kevo's (wrong application_id, or a schema it
 * does not know) or that fails PRAGMA quick_check is refused before anything
 * is written.  Everything `report`
 * and `export` need is here, so they need nothing else.
 */
#ifndef KEVO_STORE_H
#define KEVO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/op.h"
#include "core/verdict.h"
#include "kevo.h"

typedef struct kevo_db kevo_db;

/* Open (create when `create` and the file does not exist) a kevo database.
 * A lock another process holds past the busy timeout (5 s) is waited for
 * until it is released; the handle says nothing of it (kevo_db_open_ctx
 * does).  Errors: KEVO_ERR_IO (cannot open or create), KEVO_ERR_DB (not a
 * kevo database, corrupt, newer schema), with the path quoted. */
kevo_status kevo_db_open(const char *path, bool create, kevo_db **out, kevo_err *err);
/* kevo_db_open for the call of ctx: a lock wait past the busy timeout, at
 * the open and after it, is said once per wait through ctx's event callback
 * (a WARNING event "'PATH' is locked by another process; waiting", to that
 * ctx alone) and gives up once ctx is cancelled (kevo_ctx_cancel: the open
 * or the statement that waited fails, "database is locked").  ctx must
 * outlive the handle; NULL: kevo_db_open (silent, never cancelled).
 * Errors: as kevo_db_open. */
kevo_status kevo_db_open_ctx(const char *path, bool create, kevo_ctx *ctx, kevo_db **out, kevo_err *err);

/* Open an existing kevo database for reading only (report, replay, export,
 * verify): SQLITE_OPEN_READONLY, so a user who may not write the file or its
 * folder can read it, and nothing is ever written to either: no schema for
 * an empty file, no -wal or -shm for a file no one has open (read as
 * immutable), no upgrade in place.  A file of an older schema is copied into
 * memory with SQLite's backup API (memory ~ the file's size) and upgraded
 * there.  PRAGMA quick_check runs first.  Every write through the handle
 * fails (KEVO_ERR_DB).  A lock waited for (a rollback-journal file being
 * written) is SQLite's busy timeout, 5 s, said nowhere; then the read fails
 * (KEVO_ERR_DB).  Errors: KEVO_ERR_IO (missing, unreadable),
 * KEVO_ERR_DB (empty, not kevo's, corrupt, newer schema), with the path
 * quoted. */
kevo_status kevo_db_open_ro(const char *path, kevo_db **out, kevo_err *err);

/* Whether db was opened by kevo_db_open_ro. */
bool kevo_db_readonly(const kevo_db *db);

void kevo_db_close(kevo_db *db);

/* A run: one `kevo tune` invocation and its settings and device figures.
 * Text fields are fixed arrays, truncated safely. */
typedef struct kevo_run_row {
    int64_t id;
    char op[32];
    char shape[256];   /* canonical shape text */
    char dtype[8];
    char arch[16];
    char policy[32];
    char families[1024]; /* comma-separated template families searched */
    int64_t seed;
    int64_t budget;
    bool compile_only;
    char status[16];      /* running, done, failed */
    char stop_reason[64]; /* budget, exhausted, error, ... */
    /* device, NULL-able figures use NaN / 0 for "none" */
    char device[128];
    int driver_version;
    int sm_count;
    int sm_clock_mhz;
    int mem_clock_mhz;
    double peak_tflops;       /* NaN when not measured */
    double copy_tbps;         /* NaN when not measured */
    double flops;             /* of the op at this shape */
    double bytes;
    int64_t pid;
    char created_at[32];
    char finished_at[32];
    char filter[512]; /* --where expression over the params, "" for none */
    int nshapes;          /* shapes of a distribution run (run_shapes rows); 0 for a one-shape run */
    char warm_start[512]; /* the DB the seeds' warm start read, "" for this DB or none */
    int64_t best_id;      /* the winner named by the paired re-timing at the end, 0 when none */
} kevo_run_row;

void kevo_run_row_init(kevo_run_row *r); /* zeros, NaN figures */

kevo_status kevo_db_run_insert(kevo_db *db, kevo_run_row *r, kevo_err *err); /* sets r->id */
/* Write every field of r over the row with r->id. */
kevo_status kevo_db_run_update(kevo_db *db, const kevo_run_row *r, kevo_err *err);
/* Errors: KEVO_ERR_NOT_FOUND. */
kevo_status kevo_db_run_get(kevo_db *db, int64_t id, kevo_run_row *r, kevo_err *err);
/* Ids of all runs, ascending; *ids is malloc'd (caller frees). */
kevo_status kevo_db_run_ids(kevo_db *db, int64_t **ids, int *n, kevo_err *err);

/* One same-run peer of a run (table run_peers, schema 9): an op peer's
 * figures at one shape on one GPU. */
typedef struct kevo_peer_row {
    int shape_idx;                 /* 0, or a distribution's shape (run_shapes.idx) */
    int device;                    /* 0 the run's first GPU, or another of a one-shape run's (run_devices.idx) */
    char peer[KEVO_PEER_NAME_MAX]; /* the op's peer name (kevo_op.peers); DB text, untrusted */
    kevo_peer_fig fig;             /* its state, figures, detail and config; cand_id 0 none */
} kevo_peer_row;

/* Write a row for each peer of op that ps does not hold UNMEASURED, at
 * (shape_idx, device), replacing what is there.  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_peers_put(kevo_db *db, int64_t run_id, int shape_idx, int device, const kevo_op *op,
                              const kevo_peer_set *ps, kevo_err *err);
/* Every peer row of a run, by shape, device, then name; *v malloc'd
 * (caller frees), *n may be 0.  A status kevo does not write reads as
 * ERROR (no check: never a best). */
kevo_status kevo_db_peers_list(kevo_db *db, int64_t run_id, kevo_peer_row **v, int *n, kevo_err *err);
/* The rows at (shape_idx, device) into *out by op's names
 * (kevo_peer_set_init first; a name op does not declare is left out). */
void kevo_peer_rows_set(const kevo_op *op, const kevo_peer_row *rows, int n, int shape_idx, int device,
                        kevo_peer_set *out);
/* kevo_db_peers_list then kevo_peer_rows_set. */
kevo_status kevo_db_peers_get(kevo_db *db, int64_t run_id, int shape_idx, int device, const kevo_op *op,
                              kevo_peer_set *out, kevo_err *err);
/* A peer measured after the search (KEVO_PEER_AFTER): write ps as the
 * run's peers at shape 0 on device 0 (kevo_db_peers_put) and set vs_peer
 * of every verified candidate (status ok, median_ms > 0) to the fastest
 * OK peer's time in ps (kevo_peer_best) over its median_ms, in one
 * transaction: nothing changes on an error.  Candidates' fitness is left
 * alone.  Errors: KEVO_ERR_NOT_FOUND (no such run), KEVO_ERR_DB. */
kevo_status kevo_db_peers_after(kevo_db *db, int64_t run_id, const kevo_op *op, const kevo_peer_set *ps,
                                kevo_err *err);

/* A run's best against its fastest same-run peer timed in the same rounds
 * (table run_paired, schema 11; tune's settle step): the peer run after
 * the leaders in every round of the interleaved re-timing, and the paired
 * ratio of the two (the median over rounds of peer time / best's time:
 * above 1 the best is faster) with its 95% bootstrap interval.  One row per
 * run at most, for the candidate that was the run's best when it was
 * written. */
typedef struct kevo_paired_row {
    int64_t cand_id;               /* the run's best (candidates.id) */
    char peer[KEVO_PEER_NAME_MAX]; /* the op's peer name (kevo_op.peers); DB text, checked on reading */
    int rounds;                    /* rounds of the re-timing, 2..KEVO_PAIRED_ROUNDS_MAX */
    double ratio, ci_lo, ci_hi;    /* finite and positive, ci_lo <= ratio <= ci_hi */
} kevo_paired_row;

#define KEVO_PAIRED_ROUNDS_MAX 1000 /* the most rounds a re-timing takes (KEVO_GPU_MAX_REPS) */

/* Write run_id's paired figure, replacing the one there; peer_ms (NULL:
 * not kept) the peer's time in each of p->rounds rounds, ms.  Errors:
 * KEVO_ERR_ARG (a figure out of the ranges above, a peer name that is not
 * [a-z0-9_]), KEVO_ERR_DB. */
kevo_status kevo_db_paired_put(kevo_db *db, int64_t run_id, const kevo_paired_row *p, const double *peer_ms,
                               kevo_err *err);
/* Remove run_id's paired figure (none there is no error: a settle that
 * found no peer to pair with leaves none).  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_paired_clear(kevo_db *db, int64_t run_id, kevo_err *err);
/* Run_id's paired figure into *out, checked as kevo_db_paired_put checks
 * it (the DB is untrusted).  Errors: KEVO_ERR_NOT_FOUND (none stored: a run
 * settled by an older kevo, or without a peer that passed its check),
 * KEVO_ERR_DB (a row that breaks the ranges, naming the field, never
 * quoting its text). */
kevo_status kevo_db_paired_get(kevo_db *db, int64_t run_id, kevo_paired_row *out, kevo_err *err);

/* A candidate: one node of the search graph. */
typedef struct kevo_cand_row {
    int64_t id;
    int64_t run_id;
    int64_t seq;           /* order of evaluation in the run, from 1 */
    char family[64];
    char *params;          /* JSON object text, owned */
    char *plan;            /* launch plan JSON, owned, may be NULL */
    char source_hash[65];  /* "" when none */
    char binary_key[65];   /* "" when none */
    char status[16];       /* pending, compiled, ok, failed */
    char fail[32];         /* failure kind name, "" when none */
    char *fail_msg;        /* owned, may be NULL */
    int regs, spill_bytes, smem_static, smem_dynamic; /* -1 unknown */
    double compile_s;      /* NaN unknown */
    double median_ms, min_ms, rel_err, max_abs_err, tflops, speedup; /* NaN when none */
    int checks;
    double vs_peer;        /* the fastest checked in-run peer's time over median_ms (kevo_peer_best) */
    double roofline;       /* max(FLOPs / GEMM peak, bytes / copy bandwidth) over median_ms, both measured */
    double ci_lo_ms, ci_hi_ms; /* 95% bootstrap confidence interval of the median, ms */
    double model_ms;       /* the family's cost model's prediction, ms */
    double fitness;        /* what the search ranked: speedup (one shape) or the weighted geometric mean of
                              vs_peer over a distribution's shapes; 0 failed; NaN unknown */
    int tied;              /* after the paired re-timing: 1 cannot be told apart from the winner, 0 separated,
                              -1 not re-timed */
    int device;            /* the run's device (run_devices.idx) that evaluated it; -1 none or unknown */
    double eval_s;         /* wall seconds of its evaluation (verification and timing); NaN unknown */
    int round;             /* the round (batch of proposals) it was proposed in, from 0; -1 unknown (schema < 8) */
} kevo_cand_row;

void kevo_cand_row_init(kevo_cand_row *c);
void kevo_cand_row_release(kevo_cand_row *c);

/* Insert (sets c->id).  Errors: KEVO_ERR_DB, or KEVO_ERR_ARG when the run
 * already has a candidate with the same family and params. */
kevo_status kevo_db_cand_insert(kevo_db *db, kevo_cand_row *c, kevo_err *err);
kevo_status kevo_db_cand_update(kevo_db *db, const kevo_cand_row *c, kevo_err *err);
kevo_status kevo_db_cand_get(kevo_db *db, int64_t id, kevo_cand_row *c, kevo_err *err);
/* All candidates of a run in seq order; *rows malloc'd, release each row
 * then free the array (kevo_cand_rows_free). */
kevo_status kevo_db_cand_list(kevo_db *db, int64_t run_id, kevo_cand_row **rows, int *n, kevo_err *err);
void kevo_cand_rows_free(kevo_cand_row *rows, int n);
/* The run's best verified candidate (highest speedup, ties to lower
 * median_ms); KEVO_ERR_NOT_FOUND when none. */
kevo_status kevo_db_cand_best(kevo_db *db, int64_t run_id, kevo_cand_row *c, kevo_err *err);

/* Graph edge parent -> child made by an operator ("retile", "stages", ...). */
kevo_status kevo_db_edge_insert(kevo_db *db, int64_t run_id, int64_t parent_id, int64_t child_id, const char *op,
                                kevo_err *err);

/* One edge of a run's graph. */
typedef struct kevo_edge_row {
    int64_t parent_id, child_id;
    char op[32];
} kevo_edge_row;

/* A run's edges ordered by child then parent; *rows malloc'd (caller frees). */
kevo_status kevo_db_edge_list(kevo_db *db, int64_t run_id, kevo_edge_row **rows, int *n, kevo_err *err);

/* Source texts by sha256. */
kevo_status kevo_db_source_put(kevo_db *db, const char *hash, const char *text, kevo_err *err);
/* *text malloc'd; KEVO_ERR_NOT_FOUND when absent. */
kevo_status kevo_db_source_get(kevo_db *db, const char *hash, char **text, kevo_err *err);

/* A compile result, keyed by the compile cache key. */
typedef struct kevo_binary_row {
    char key[65];
    char arch[16];
    char nvrtc_version[16];
    char *options;   /* owned: options joined by '\n' */
    char source_hash[65];
    void *cubin;     /* owned, NULL when the compile failed */
    size_t cubin_size;
    char *log;       /* owned */
    char fail[32];   /* "" when it compiled */
    int regs, spill_bytes, smem_static, stack_bytes;
    double compile_s;
} kevo_binary_row;

void kevo_binary_row_init(kevo_binary_row *b);
void kevo_binary_row_release(kevo_binary_row *b);
/* Insert or keep the existing row with the same key. */
kevo_status kevo_db_binary_put(kevo_db *db, const kevo_binary_row *b, kevo_err *err);
/* KEVO_ERR_NOT_FOUND when the key is absent. */
kevo_status kevo_db_binary_get(kevo_db *db, const char *key, kevo_binary_row *b, kevo_err *err);

/* One shape of a distribution run (`kevo tune --shapes`); its peers are
 * run_peers rows at shape_idx = idx. */
typedef struct kevo_run_shape {
    int idx;            /* 0.. in the shapes file's order */
    char shape[256];    /* canonical shape text */
    double weight;      /* > 0 */
    double flops, bytes;
} kevo_run_shape;

/* Replace the shape rows of a run with v[0..n).  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_run_shapes_put(kevo_db *db, int64_t run_id, const kevo_run_shape *v, int n, kevo_err *err);
/* The shape rows of a run by idx; *v malloc'd (caller frees), *n may be 0. */
kevo_status kevo_db_run_shapes_get(kevo_db *db, int64_t run_id, kevo_run_shape **v, int *n, kevo_err *err);

/* One GPU a run evaluated on (--devices): its own ceilings (its peers are
 * run_peers rows at device = idx), and its throughput over the last
 * process's search loop. */
typedef struct kevo_run_device {
    int idx;                /* 0.. : what kevo_cand_row.device names */
    int ordinal;            /* its CUDA device ordinal on its host */
    char host[256];
    char name[128];
    char pci_bus[32];
    int sm_count;
    double peak_tflops, copy_tbps;                        /* its ceilings; NaN not measured */
    int evaluated;          /* candidates it evaluated */
    double busy_s;          /* seconds it had an evaluation in flight */
    double loop_s;          /* seconds of the search loop it served; NaN before the end */
} kevo_run_device;

/* Insert or replace the device rows v[0..n) of a run (by idx).  Errors:
 * KEVO_ERR_DB. */
kevo_status kevo_db_run_devices_put(kevo_db *db, int64_t run_id, const kevo_run_device *v, int n, kevo_err *err);
/* The device rows of a run by idx; *v malloc'd (caller frees), *n may be 0. */
kevo_status kevo_db_run_devices_get(kevo_db *db, int64_t run_id, kevo_run_device **v, int *n, kevo_err *err);
/* A GPU's throughput over the search loop: evaluations per minute and the
 * fraction of the loop it had one in flight (NaN both until loop_s > 0). */
void kevo_run_device_rate(const kevo_run_device *v, double *per_minute, double *busy_fraction);

/* A candidate's figures at one shape of a distribution run. */
typedef struct kevo_shape_result {
    int shape_idx;
    double median_ms, ci_lo_ms, ci_hi_ms, speedup, vs_peer, roofline, rel_err; /* NaN when none */
} kevo_shape_result;

kevo_status kevo_db_shape_result_put(kevo_db *db, int64_t cand_id, const kevo_shape_result *r, kevo_err *err);
/* All of a candidate's shape results by shape_idx; *v malloc'd (caller frees). */
kevo_status kevo_db_shape_results_get(kevo_db *db, int64_t cand_id, kevo_shape_result **v, int *n, kevo_err *err);

/* Every timed repetition of a candidate (ms, in run order) under a label
 * ("tune", "retime"), at shape_idx (0 for a one-shape run). */
kevo_status kevo_db_timings_put(kevo_db *db, int64_t cand_id, int shape_idx, const char *label, const double *ms,
                                int n, kevo_err *err);
/* *ms malloc'd (caller frees); KEVO_ERR_NOT_FOUND when absent. */
kevo_status kevo_db_timings_get(kevo_db *db, int64_t cand_id, int shape_idx, const char *label, double **ms, int *n,
                                kevo_err *err);

/* A warm-start seed of a run: the winner of an earlier run at a nearby
 * shape, stored when the run starts so that a resume proposes the same. */
typedef struct kevo_warm_seed {
    char family[64];
    char params[512];     /* JSON object */
    int64_t from_run;     /* the run it won, in the DB it came from */
    char from_shape[256]; /* that run's shape */
    double distance;      /* sum over B, M, N, Ku, Kc, U of |ln(this / that)| */
} kevo_warm_seed;

/* Store a run's warm seeds v[0..n) in order.  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_warm_put(kevo_db *db, int64_t run_id, const kevo_warm_seed *v, int n, kevo_err *err);
/* A run's warm seeds in order; *v malloc'd (caller frees), *n may be 0. */
kevo_status kevo_db_warm_get(kevo_db *db, int64_t run_id, kevo_warm_seed **v, int *n, kevo_err *err);

/* What else defines a run, beside its row (schema 4): what `--resume`
 * compares the command line with and continues under.  Runs of older
 * schemas have none. */
#define KEVO_SPACE_HASH_MAX 4096
typedef struct kevo_run_settings {
    char family_arg[1024];  /* --family as asked (names deduplicated and sorted, comma-separated), "" all */
    int batch;              /* proposals per round */
    int ahead;              /* rounds proposed before the oldest one's results are in (1 for older runs) */
    unsigned maps;          /* cand_to_user kinds, a bitmask of 1 << kevo_map_kind */
    int reps, warmup;
    double time_limit;      /* seconds of the run's processes together, 0 none */
    int64_t plateau;        /* candidates without a better one, 0 none */
    double target;          /* speedup, 0 none */
    double compile_timeout; /* seconds */
    double eval_timeout;    /* seconds */
    char templates[4096];   /* --templates folder, "" none */
    char space_hash[KEVO_SPACE_HASH_MAX]; /* "family=sha256 prefix,..." of the searched families' files */
    double elapsed_s;       /* wall time the run's processes spent in the search so far */
} kevo_run_settings;

/* Insert or replace the settings of run_id.  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_run_settings_put(kevo_db *db, int64_t run_id, const kevo_run_settings *s, kevo_err *err);
/* Errors: KEVO_ERR_NOT_FOUND (a run of an older schema), KEVO_ERR_DB. */
kevo_status kevo_db_run_settings_get(kevo_db *db, int64_t run_id, kevo_run_settings *s, kevo_err *err);

/* A named extra figure of a candidate (e.g. "rel_err.shuffled"). */
kevo_status kevo_db_measure_put(kevo_db *db, int64_t cand_id, const char *name, double value, kevo_err *err);

/* One stored measurement (DB text: untrusted). */
typedef struct kevo_measure {
    char name[96];
    double value; /* NaN when stored as NULL */
} kevo_measure;

/* A candidate's measurements whose names start with prefix ("" all), by
 * name; *v malloc'd (caller frees), *n may be 0.  Errors: KEVO_ERR_DB,
 * KEVO_ERR_NOMEM. */
kevo_status kevo_db_measures_get(kevo_db *db, int64_t cand_id, const char *prefix, kevo_measure **v, int *n,
                                 kevo_err *err);

/* Counts for a run: candidates produced, compiled (cubin made or cached),
 * failed (any failure kind), verified (status ok). */
kevo_status kevo_db_run_counts(kevo_db *db, int64_t run_id, int *evaluated, int *compiled, int *failed, int *ok,
                               kevo_err *err);

/* Explicit transactions for a group of writes that must land together. */
kevo_status kevo_db_begin(kevo_db *db, kevo_err *err);
kevo_status kevo_db_commit(kevo_db *db, kevo_err *err);
void kevo_db_rollback(kevo_db *db);

/* One generator call and what it became (table generations, schema 5):
 * the candidate row it made (a gen_error or parse_error is a failed
 * candidate too), its parent, the model, the prompt and the reply as sent and
 * received, usage, and the one-point space and device source the reply
 * gave (NULL when it gave none).  The API key is never part of it. */
typedef struct kevo_generation_row {
    int64_t candidate_id, run_id;
    int64_t parent_id;          /* 0: none */
    char generator[16];         /* the generator that made the call (its name in run_generators) */
    char model[128];
    char *system_prompt, *prompt, *reply, *error; /* malloc'd, may be NULL */
    char *space, *source;       /* malloc'd, NULL when the reply gave none */
    int64_t tokens_in, tokens_out; /* -1 unknown */
    double latency_s;           /* NaN unknown */
    int64_t seed;               /* -1 none */
    double temperature;         /* NaN none */
    char finish_reason[32];
    int http_status;            /* 0 none */
    int attempts;
    char query[256];            /* the knowledge query the prompt used */
    char created_at[32];
} kevo_generation_row;

void kevo_generation_row_init(kevo_generation_row *g);
void kevo_generation_row_release(kevo_generation_row *g);
void kevo_generation_rows_free(kevo_generation_row *v, int n);
/* Insert (candidate_id must exist).  Errors: KEVO_ERR_DB. */
kevo_status kevo_db_generation_put(kevo_db *db, const kevo_generation_row *g, kevo_err *err);
/* A run's generations by candidate id; *out malloc'd (kevo_generation_rows_free). */
kevo_status kevo_db_generation_list(kevo_db *db, int64_t run_id, kevo_generation_row **out, int *n, kevo_err *err);
/* The generation of a candidate; KEVO_ERR_NOT_FOUND for a template candidate. */
kevo_status kevo_db_generation_get(kevo_db *db, int64_t candidate_id, kevo_generation_row *g, kevo_err *err);

/* One generator a run used (table run_generators, schema 10): a name of
 * the generator table (search/gen.h: "template", "mutate", ...), its
 * options as a JSON object (text) and the calls it made in the run. */
typedef struct kevo_run_gen_row {
    char name[64];
    char *options;  /* a JSON object (text); put: borrowed; get: malloc'd, kevo_run_gen_rows_free */
    int64_t calls;  /* calls the generator made that left a candidate (a request answered or failed); 0 for
                       the round generator, whose proposals are the rounds' candidates */
} kevo_run_gen_row;

/* Store the generators of run_id, v[0..n), replacing the ones it had.
 * Errors: KEVO_ERR_ARG (an empty name, options that are not a JSON object,
 * calls below 0), KEVO_ERR_DB. */
kevo_status kevo_db_run_generators_put(kevo_db *db, int64_t run_id, const kevo_run_gen_row *v, int n,
                                       kevo_err *err);
/* The generators of run_id in the order they were stored (*v malloc'd,
 * kevo_run_gen_rows_free).  The DB is untrusted: a row whose name is
 * empty or too long, whose options are not a JSON object or whose calls are
 * not a whole number >= 0 is refused (KEVO_ERR_PARSE naming the run and the
 * row).  KEVO_ERR_NOT_FOUND for a run that stored none (a run of a kevo
 * older than schema 5); KEVO_ERR_DB, KEVO_ERR_NOMEM. */
kevo_status kevo_db_run_generators_get(kevo_db *db, int64_t run_id, kevo_run_gen_row **v, int *n, kevo_err *err);
/* Frees rows v[0..n) and their options (v may be NULL). */
void kevo_run_gen_rows_free(kevo_run_gen_row *v, int n);

#endif /* KEVO_STORE_H */
