/* testutil.h — helpers shared by kevo's tests. */
#ifndef KEVO_TESTUTIL_H
#define KEVO_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "evaluator/compile.h"
#include "core/op.h"
#include "templates/space.h"

/* Read a file of the sources (under tu_home()); aborts the test on failure.
 * Caller frees. */
char *tu_read_src(const char *rel);

/* Where the sources are: KEVO_HOME when set (a build folder carried to another
 * machine finds its sources there), else the source tree it was built from. */
const char *tu_home(void);

/* Whether a CUDA driver and device exist, found out in a child process so that
 * this process never initialises CUDA (its forked workers could not use it). */
bool tu_have_gpu(void);

/* Compile source for sm_90a in a child; asserts success.  The job owns the cubin. */
void tu_compile(kevo_compile_job *job, const char *name, const char *src);

/* ikbo_lce's reference module source for a dtype, with the ABI header text abi.  Caller frees. */
char *tu_ref_source(kevo_dtype dt, const char *abi);

/* Any op's reference module for a dtype as kevo compiles it
 * (kevo_op_ref_render: its ABI header and kernels/ref.cuh inlined).  Caller frees. */
char *tu_op_ref_source(const kevo_op *op, kevo_dtype dt);

/* The op named name from the table (the test fails when it is unknown). */
const kevo_op *tu_op(const char *name);

/* The value of a bound symbol of s (the test fails when it is unbound). */
int64_t tu_sym(const kevo_syms *s, const char *name);

/* op->parse_shape(text) into s; the test fails (printing the message) unless it succeeds. */
void tu_parse_ok(const kevo_op *op, const char *text, kevo_syms *s);

/* op->parse_shape(text) must fail with KEVO_ERR_ARG, its message quoting
 * `quoted` in kevo's style (lower-case start, no full stop, one line), and
 * leave the output alone. */
void tu_parse_error(const kevo_op *op, const char *text, const char *quoted);

/* Start the kevo binary with args (argv[0] included, NULL-terminated) in its
 * own process group, stdout and stderr into log.  Returns the pid. */
int tu_spawn(const char *log, char *const args[]);
/* The same for the program at path (mpirun, a fake server). */
int tu_spawn_path(const char *path, const char *log, char *const args[]);

/* Write text to path; the test fails when it cannot. */
void tu_write_text(const char *path, const char *text);
/* A file's text (caller frees); "" when it cannot be read. */
char *tu_read_text(const char *path);

/* Wait for a process; its exit status, or 128 + signal. */
int tu_wait(int pid);

/* One integer from a SQL query on db (read-only), -1 when it cannot be read. */
long long tu_query_int(const char *db, const char *sql);
/* The same as a real number; NaN when it cannot be read or is NULL. */
double tu_query_double(const char *db, const char *sql);

/* tu_query_int(db, sql) every 10 ms until it is at least want, for up to
 * ms milliseconds (a run in another process getting that far); its last
 * value. */
long long tu_wait_query(const char *db, const char *sql, long long want, int ms);

void tu_sleep_ms(int ms);

/* A fresh unique path /tmp/PREFIX_XXXXXX that does not exist yet (out holds
 * 64 bytes; prefix at most 40 characters). */
void tu_tmp_path(const char *prefix, char out[64]);

/* Read the PCH writers in pool p (kevo_compile_pool_wait) until none runs,
 * at most 120 s (asserting none is left). */
void tu_pch_settle(kevo_compile_pool *p);

/* cfg = the family's default with "K=V,K=V,..." applied (params NULL: the
 * default).  false, with the reason on stderr, for a malformed pair or a name
 * the family lacks. */
bool tu_config_of(const kevo_space *sp, const char *params, kevo_config *cfg);

/* A reproducible random stream for property tests (splitmix64): seeded
 * from $KEVO_TEST_SEED, else the clock, and the seed printed, so that a
 * failure can be run again with it. */
void tu_rng_seed(void);
uint64_t tu_rng(void);

/* Remove a folder and everything below it; 0 when it is gone. */
int tu_rm_tree(const char *dir);

/* Start kevo_fake_llm (the binary at `binary`) with a script file, logging
 * each request into logdir (NULL: none), its own files in workdir; url
 * receives "http://127.0.0.1:PORT/v1".  Returns its pid; the test fails when
 * the server does not listen within 10 s. */
int tu_fake_llm_start(const char *binary, const char *script, const char *logdir, const char *workdir, char *url,
                      size_t n);
/* The same with --match: each request answered by the first unused script
 * line whose when= text its body holds (a model that reads its prompt). */
int tu_fake_llm_start_match(const char *binary, const char *script, const char *logdir, const char *workdir,
                            char *url, size_t n);
/* Stop it (SIGTERM); the test fails unless it exits with 0. */
void tu_fake_llm_stop(int pid);

/* Run the kevo binary (args as for tu_spawn), output into log; its exit
 * status, with stdout and stderr together in *out (caller frees). */
int tu_run(const char *log, char **out, char *const args[]);

/* Run the kevo binary with args (NULL-terminated, without argv[0]) in dir,
 * stdin from /dev/null, stdout and stderr into the files outp and errp;
 * as_nobody: as user and group 65534 when this process is root (who ignores
 * permissions).  Returns its exit status (128 + signal). */
int tu_run_files(const char *dir, const char *outp, const char *errp, bool as_nobody, const char *const *args);

/* How tu_run_in runs kevo. */
typedef struct tu_run_how {
    bool as_nobody;        /* as tu_run_files */
    const char *env;       /* NAME=VALUE added to its environment, or NULL */
    unsigned long fsize;   /* RLIMIT_FSIZE in bytes (0: none) */
    bool default_signals;  /* every catchable signal at its default (not this process's dispositions) */
} tu_run_how;

/* A kevo run's exit status (128 + signal) and what it printed. */
typedef struct tu_result {
    int status;
    char *out, *err; /* owned; "" when nothing could be read */
} tu_result;

/* Run kevo with args (NULL-terminated, without argv[0]) in dir as tu_run_files
 * does, with how's additions (NULL: none); stdout and stderr go through
 * dir/.stdout and dir/.stderr into the result.  Release it with
 * tu_result_release. */
tu_result tu_run_in(const char *dir, const tu_run_how *how, const char *const *args);
void tu_result_release(tu_result *r);

/* A run's graph as text, for comparing two runs: every candidate (seq,
 * family, params, status, failure) and every edge, in order.  Caller frees. */
char *tu_graph_dump(const char *db);

/* SQL that undoes what schema 11 did to a kevo DB: a file as schema 10
 * wrote it (no paired figures). */
#define TU_SCHEMA10_SQL "DROP TABLE run_paired; PRAGMA user_version=10;"

/* SQL that undoes what schemas 10 and 11 did to a kevo DB: a file as schema 9
 * wrote it, with run_llm (the old DDL, empty; the generators' rows go) and
 * the old name of a generator call's failure kind. */
#define TU_SCHEMA9_SQL                                                                                            \
    TU_SCHEMA10_SQL                                                                                               \
    "DROP TABLE run_generators;"                                                                                  \
    "CREATE TABLE run_llm("                                                                                       \
    " run_id INTEGER PRIMARY KEY REFERENCES runs(id), generators TEXT, llm_budget INTEGER, url TEXT,"             \
    " model TEXT, temperature REAL, seed INTEGER, max_tokens INTEGER);"                                          \
    "UPDATE candidates SET fail = 'llm_error' WHERE fail = 'gen_error';"                                         \
    "PRAGMA user_version=9;"

/* SQL that undoes what schemas 9 and 10 did to a kevo DB: a file as schema
 * 8 wrote it, its run's peers at shape 0 on device 0 back in the columns (stage 0,
 * stage 0 with its broadcast, the other peer), the shapes' and devices'
 * peer columns empty. */
#define TU_SCHEMA8_PEER(names)                                                                                    \
    "(SELECT median_ms FROM run_peers p WHERE p.run_id = runs.id AND p.shape_idx = 0 AND p.device = 0 AND "       \
    "p.status = 'ok' AND p.peer IN (" names "))"
#define TU_SCHEMA8_SQL                                                                                            \
    TU_SCHEMA9_SQL                                                                                                \
    "ALTER TABLE runs ADD COLUMN baseline_ms REAL; ALTER TABLE runs ADD COLUMN baseline_bcast_ms REAL;"           \
    "ALTER TABLE runs ADD COLUMN decomposed_ms REAL; ALTER TABLE runs ADD COLUMN peer_id INTEGER;"               \
    "ALTER TABLE runs ADD COLUMN peer_kernel_ms REAL; ALTER TABLE runs ADD COLUMN peer_gather_ms REAL;"           \
    "UPDATE runs SET baseline_ms = " TU_SCHEMA8_PEER("'stage0'") ", baseline_bcast_ms = "                         \
    TU_SCHEMA8_PEER("'stage0_bcast', 'stage0_gather'") ", decomposed_ms = "                                      \
    TU_SCHEMA8_PEER("'decomposed', 'nocodesign'") ";"                                                            \
    "ALTER TABLE run_shapes ADD COLUMN baseline_ms REAL; ALTER TABLE run_shapes ADD COLUMN baseline_bcast_ms REAL;" \
    "ALTER TABLE run_shapes ADD COLUMN decomposed_ms REAL;"                                                       \
    "ALTER TABLE run_devices ADD COLUMN baseline_ms REAL; ALTER TABLE run_devices ADD COLUMN baseline_bcast_ms REAL;" \
    "ALTER TABLE run_devices ADD COLUMN decomposed_ms REAL;"                                                      \
    "DROP TABLE run_peers; PRAGMA user_version=8;"

/* SQL that undoes what schemas 8 to 10 added to a kevo DB: a file as schema 7 wrote it. */
#define TU_SCHEMA7_SQL                                                                                            \
    TU_SCHEMA8_SQL                                                                                                \
    "ALTER TABLE candidates DROP COLUMN round; ALTER TABLE run_settings DROP COLUMN ahead;"                       \
    "PRAGMA user_version=7;"

/* SQL that undoes what schemas 7 to 10 added to a kevo DB: a file as schema 6 wrote it. */
#define TU_SCHEMA6_SQL                                                                                            \
    TU_SCHEMA7_SQL                                                                                                \
    "DROP TABLE run_devices; ALTER TABLE candidates DROP COLUMN device;"                                         \
    "ALTER TABLE candidates DROP COLUMN eval_s; PRAGMA user_version=6;"

/* SQL that undoes what schemas 6 to 10 added to a kevo DB: a file as schema 5 wrote it. */
#define TU_SCHEMA5_SQL                                                                                            \
    TU_SCHEMA6_SQL                                                                                                \
    "ALTER TABLE runs DROP COLUMN peer_id; ALTER TABLE runs DROP COLUMN peer_kernel_ms;"                         \
    "ALTER TABLE runs DROP COLUMN peer_gather_ms; PRAGMA user_version=5;"

/* SQL that undoes what schemas 3 to 10 added to a kevo DB: run on a file
 * of the current schema it leaves a file as schema 2 wrote it. */
#define TU_SCHEMA2_SQL                                                                                            \
    TU_SCHEMA5_SQL                                                                                                \
    "DROP TABLE generations; DROP TABLE run_llm; DROP TABLE run_settings;"                                         \
    "DROP TABLE run_shapes; DROP TABLE shape_results; DROP TABLE timings; DROP TABLE warm_seeds;"                 \
    "ALTER TABLE runs DROP COLUMN decomposed_ms; ALTER TABLE runs DROP COLUMN nshapes;"                          \
    "ALTER TABLE runs DROP COLUMN warm_start; ALTER TABLE runs DROP COLUMN best_id;"                              \
    "ALTER TABLE candidates DROP COLUMN vs_peer; ALTER TABLE candidates DROP COLUMN roofline;"                    \
    "ALTER TABLE candidates DROP COLUMN ci_lo_ms; ALTER TABLE candidates DROP COLUMN ci_hi_ms;"                    \
    "ALTER TABLE candidates DROP COLUMN model_ms; ALTER TABLE candidates DROP COLUMN fitness;"                     \
    "ALTER TABLE candidates DROP COLUMN tied; PRAGMA user_version=2;"

#endif
