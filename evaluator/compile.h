/* compile.h — NVRTC compilation of candidate sources to cubins, each in a
 * child process so that a crashing or hanging compiler costs one candidate,
 * never the run.  The parent process compiles nothing itself (one empty
 * program, which fails at once, maps NVRTC's PCH heap: evaluator/compile.c). */
#ifndef KEVO_COMPILE_H
#define KEVO_COMPILE_H

#include <stdbool.h>
#include <stddef.h>

#include "evaluator/eval.h"
#include "kevo.h"
#include "templates/space.h"
#include "util/ctx.h"

#define KEVO_COMPILE_MAX_OPTS 24

/* One compilation.  Inputs are borrowed; outputs are owned by the job and
 * released by kevo_compile_job_release(). */
typedef struct kevo_compile_job {
    /* in */
    const char *name;   /* program name shown in diagnostics: the template's file name */
    const char *source; /* complete source (everything inlined) */
    char arch[16];      /* "sm_90a" */
    int nopts;
    char opts[KEVO_COMPILE_MAX_OPTS][192]; /* every NVRTC option, -arch included */
    /* out */
    char key[65];      /* cache key: sha256(source, options, NVRTC version, arch) */
    kevo_fail fail;    /* NONE, COMPILE_ERROR, COMPILE_CRASH or COMPILE_TIMEOUT */
    char *log;         /* NVRTC log incl. the ptxas report; or the crash reason */
    void *cubin;
    size_t cubin_size;
    double seconds;    /* wall time of the compile */
    /* ptxas report, summed or maximized over entries; -1 when unknown */
    int regs;          /* most registers any entry uses */
    int spill_bytes;   /* spill stores + loads, all entries */
    int smem_static;   /* most static shared memory of any entry, bytes */
    int stack_bytes;   /* largest stack frame */
    bool cached;       /* filled from the DB cache, not compiled */
    bool pch;          /* compiled against a precompiled header of its prelude */
} kevo_compile_job;

/* The program name of a generated (untrusted) source: the source_name an
 * inline one-point space gets (templates/space.h), which makes a job
 * untrusted.  The name travels
 * with a job to other MPI ranks (evaluator/wire.c), so every rank compiles
 * it the same way.  An untrusted job's child:
 *   - works in an empty folder (kevo-untrusted-* under $TMPDIR, one per process,
 *     removed at exit), so a relative #include or __has_include finds
 *     nothing;
 *   - where the kernel has Landlock (Linux 5.13+), may read only beneath the
 *     job's -I folders (the CUDA toolkit's headers) and write nowhere, so an
 *     absolute #include, "../" and __has_include of any other file fail as
 *     if it did not exist (NVRTC's own library is loaded before);
 *   - uses no precompiled header;
 *   - sends a log that names no host path and quotes no other file: a
 *     diagnostic located in the candidate is kept, one in a toolkit header
 *     loses its folder, one in any other file is replaced by a line that
 *     says it was withheld (kevo_compile_log_scrub).
 * The static check every generated source passes before it compiles (its
 * admission) refuses such includes before any of this runs; this is the
 * second wall. */
#define KEVO_COMPILE_UNTRUSTED_NAME KEVO_SPACE_INLINE_SOURCE_NAME
bool kevo_compile_job_untrusted(const kevo_compile_job *job);

/* Scrub a compile log for text that leaves the machine (a generator's prompt):
 * each -I folder of job (this machine's toolkit paths) is cut from the paths
 * the log names; when untrusted, a diagnostic located in a file other than
 * the program (job->name, or a plain name a #line directive of job->source
 * gives the program's own lines) or a toolkit header is replaced, with the
 * source lines NVRTC quotes after it, by one line that says it was
 * withheld.  In
 * place; the text never grows.  log may be NULL. */
void kevo_compile_log_scrub(const kevo_compile_job *job, char *log, bool untrusted);

/* Fill job->opts with kevo's standard options for arch and the include
 * directories (CCCL and the toolkit's headers).  Errors: KEVO_ERR_ARG. */
kevo_status kevo_compile_job_init(kevo_compile_job *job, const char *name, const char *source, const char *arch,
                                  kevo_err *err);
/* Append this machine's include options (-I of CCCL and of the toolkit's
 * headers) to job->opts: what kevo_compile_job_init ends with, and what a
 * job received from another machine (evaluator/wire.h) gets instead of the
 * sender's paths.  Errors: KEVO_ERR_ARG (too many options, a path too long). */
kevo_status kevo_compile_job_add_includes(kevo_compile_job *job, kevo_err *err);
/* Compute job->key from source, options, NVRTC version and arch; the -I
 * options are left out (paths differ between machines with one toolkit). */
void kevo_compile_key(kevo_compile_job *job);
void kevo_compile_job_release(kevo_compile_job *job);

/* Compile n jobs, at most `parallel` children at once, each killed after
 * timeout_s.  Every job ends with fail set; a job's failure is not an error.
 * A precompiled header given up is said nowhere.  Errors: KEVO_ERR_IO when
 * children cannot be started. */
kevo_status kevo_compile_run(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_err *err);
/* kevo_compile_run for the call of ctx (kevo_compile_pool_set_ctx): it
 * stops (KEVO_ERR_INTERRUPTED, the children killed) once ctx is cancelled,
 * and a precompiled header given up is a WARNING event to ctx's callback.
 * ctx NULL: kevo_compile_run. */
kevo_status kevo_compile_run_ctx(kevo_compile_job *jobs, int n, int parallel, double timeout_s, kevo_ctx *ctx,
                                 kevo_err *err);

/* A pool of compile children fed one job at a time, for a caller that also
 * waits on something else (evaluator/mpi.c: jobs sent to other ranks).
 * kevo_compile_run is a loop over it.  A started job must stay where it is
 * until the pool hands it back (or is freed). */
typedef struct kevo_compile_pool kevo_compile_pool;

/* A pool of `parallel` (1..256, clamped) child slots.  Errors: KEVO_ERR_NOMEM. */
kevo_status kevo_compile_pool_new(int parallel, kevo_compile_pool **out, kevo_err *err);
/* The caller's handle, which p then uses until freed (ctx must outlive it):
 * kevo_compile_pool_wait stops once ctx is cancelled (kevo_ctx_cancel), and
 * a precompiled header that p's start or wait finds given up (its writer
 * failed, or a compile did not use it) is a WARNING event to ctx's callback
 * ("no precompiled header for a prelude; its compiles go without: ...", "a
 * compile did not use its precompiled header; the next ones go without:
 * ...").  NULL, as a new pool has: never cancelled, nothing said.  p may be
 * NULL (nothing done). */
void kevo_compile_pool_set_ctx(kevo_compile_pool *p, kevo_ctx *ctx);
/* Slots free for a new job. */
int kevo_compile_pool_idle(const kevo_compile_pool *p);
/* Jobs started and not yet handed back by kevo_compile_pool_wait. */
int kevo_compile_pool_busy(const kevo_compile_pool *p);
/* How long a job waits, by default, for its prelude's precompiled header
 * while that is being written (a writer takes 1-2 s; compiling the prelude
 * again instead costs each job about 1 s of a core). */
#define KEVO_COMPILE_PCH_WAIT_S 10.0
/* Set p's wait for a PCH being written, in seconds (0: such a job starts at
 * once, without it). */
void kevo_compile_pool_set_pch_wait(kevo_compile_pool *p, double seconds);
/* Fork a child that compiles job (not a cached one), killed after timeout_s
 * from its start; a job whose prelude's PCH is being written waits for it
 * first (kevo_compile_pool_set_pch_wait), its child started by a later
 * kevo_compile_pool_wait.
 * Errors: KEVO_ERR_IO (no pipe or process), KEVO_ERR_INTERNAL (no free slot,
 * a cached job). */
kevo_status kevo_compile_pool_start(kevo_compile_pool *p, kevo_compile_job *job, double timeout_s, kevo_err *err);
/* Wait up to wait_s seconds for a job to finish, starting the waiting jobs
 * whose PCH is written (or whose wait is over); *done is a finished job
 * (its fail, log, cubin and ptxas figures set) or NULL when none finished
 * in time (at once when nothing runs).  Errors: KEVO_ERR_INTERRUPTED once
 * the pool's ctx is cancelled (kevo_compile_pool_set_ctx), KEVO_ERR_IO when poll fails or a
 * waiting job's child cannot be started (that job stays unfinished). */
kevo_status kevo_compile_pool_wait(kevo_compile_pool *p, double wait_s, kevo_compile_job **done, kevo_err *err);
/* Kill and reap the children still running (their jobs stay unfinished)
 * and free the pool; p may be NULL. */
void kevo_compile_pool_free(kevo_compile_pool *p);

/* Bytes of source's prelude: its leading lines of the form
 * "#include <name>\n" (name of letters, digits and _ . / -).  A pool
 * compiles a prelude once per set of options into an NVRTC precompiled
 * header and every later job that begins with it uses that (0: none). */
size_t kevo_compile_prelude_len(const char *source);

/* Precompiled headers this process holds ready; *writing (may be NULL):
 * how many children that write one run (until a pool reads their end).
 * The PCHs and their writers outlive a pool (a writer takes no job slot;
 * any pool's wait reads them). */
int kevo_compile_pch_ready(int *writing);

/* Start writing the precompiled header that jobs like job (its prelude, its
 * options) will use, unless this process has one for them or job has no
 * prelude; the source after the prelude is not read.  Best effort, no
 * error: without a PCH the compiles are only slower.  A pool's jobs find it
 * once the writer has ended (a pool start or wait reads it). */
void kevo_compile_pch_prepare(const kevo_compile_job *job);

/* Read what the precompiled headers' writers have sent, without waiting:
 * a writer that ended leaves its PCH ready (or given up: a WARNING event to
 * ctx's callback, as kevo_compile_pool_set_ctx says; ctx NULL: nowhere) and
 * its temporary directory removed.  For a process that may be idle a while
 * after kevo_compile_pch_prepare (an MPI rank waiting for jobs); pools do
 * it themselves, saying to their own ctx. */
void kevo_compile_pch_poll(kevo_ctx *ctx);

/* Parse a ptxas -v report into the job's regs/spill/smem/stack fields. */
void kevo_compile_parse_ptxas(kevo_compile_job *job, const char *log);

/* NVRTC version as "13.0" (out at least 16 bytes). */
void kevo_nvrtc_version(char *out, size_t n);

/* Directory with CUDA headers (toolkit include); KEVO_CUDA_INCLUDE overrides. */
const char *kevo_cuda_include_dir(void);

#endif /* KEVO_COMPILE_H */
