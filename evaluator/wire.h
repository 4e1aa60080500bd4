/* wire.h — the messages kevo's MPI ranks exchange (evaluator/mpi.c),
 * serialized so that no struct or pointer crosses a process boundary.
 *
 * A message is one frame:
 *
 *   "KEVO"  u32 version (little-endian)  u32 header length  header  blob...
 *
 * The header is a JSON object with at least "type" (hello, job, result,
 * alive, stop, bye, fin); it names the lengths of the byte blobs that follow
 * it, in order (a job's source; a result's log and cubin).  A frame of
 * another version is refused as a whole: ranks of different kevo builds
 * never guess at each other's fields.  This file does no MPI: it only turns
 * values into bytes and back, and checks everything it reads (a frame comes
 * from another process, possibly another build). */
#ifndef KEVO_WIRE_H
#define KEVO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/compile.h"
#include "evaluator/gpu.h"
#include "kevo.h"
#include "util/util.h"

#define KEVO_WIRE_VERSION 7 /* 2: GPU evaluation on other ranks (gpu_setup .. eval_result); 3: eval_result's passes;
                              * 4: hello's start, fin's reap; 5: prepare, result's pch;
                              * 6: an eval may come while one runs (it waits its turn);
                              * 7: gpu_hello's peers as a list by name */
#define KEVO_WIRE_HEADER_MAX (1u << 20) /* bytes of JSON a frame may carry */
#define KEVO_WIRE_REAP_MAX 4096         /* processes a fin may name */

/* Message kinds; also the MPI tags they travel under. */
typedef enum kevo_wire_type {
    KEVO_WIRE_HELLO = 1, /* worker -> rank 0, once: who it is, how many compiles it runs at once */
    KEVO_WIRE_JOB,       /* rank 0 -> worker: one compile */
    KEVO_WIRE_RESULT,    /* worker -> rank 0: a compile's outcome */
    KEVO_WIRE_ALIVE,     /* either way, every second: the sender still runs */
    KEVO_WIRE_STOP,      /* rank 0 -> worker: the run is over, drop what runs */
    KEVO_WIRE_BYE,       /* worker -> rank 0: stopped, nothing left to send */
    KEVO_WIRE_FIN,       /* rank 0 -> worker: leave, calling MPI_Finalize or not (and end the lost ranks of its host) */
    KEVO_WIRE_GPU_SETUP, /* rank 0 -> worker: start a GPU worker for the run (op, shape, settings, reference) */
    KEVO_WIRE_GPU_HELLO, /* worker -> rank 0: its GPU's figures (peers, ceilings), or why it has none */
    KEVO_WIRE_EVAL,      /* rank 0 -> worker: verify and time one candidate (plan, cubin) */
    KEVO_WIRE_EVAL_RESULT, /* worker -> rank 0: that evaluation's result */
    KEVO_WIRE_PREPARE,   /* rank 0 -> worker: a family's prelude, whose precompiled header to write before its jobs */
} kevo_wire_type;

/* Name of a type ("job"), "?" for another value. */
const char *kevo_wire_type_name(kevo_wire_type t);

/* A worker's introduction. */
typedef struct kevo_wire_hello {
    int rank;
    char host[256];  /* its host name */
    int64_t pid;
    int slots;       /* compiles it runs at once (its --jobs), 1..256 */
    char nvrtc[16];  /* its NVRTC version ("13.0"): cubins and cache keys match only within one */
    char start[KEVO_PROC_ID_MAX]; /* its process's identity on its host (kv_proc_id), "" where unknown */
} kevo_wire_hello;

/* A lost rank's process, which the ranks on its host end as they leave
 * (a fin's reap list), so that mpirun can end: host and pid from its hello,
 * start its kv_proc_id, which must still match (the pid may be another
 * process's by then). */
typedef struct kevo_wire_proc {
    int rank;
    char host[256];
    int64_t pid;
    char start[KEVO_PROC_ID_MAX];
} kevo_wire_proc;

/* A compile received: the job points into name and source, which it owns
 * (released by kevo_wire_job_release). */
typedef struct kevo_wire_job {
    int64_t id;         /* rank 0's number for this compile; the result quotes it */
    double timeout_s;   /* the compile's time limit */
    char *name, *source;
    kevo_compile_job job; /* its options are the sender's without -I, then this machine's includes */
} kevo_wire_job;

/* What a rank needs to evaluate the run's candidates on its GPU: the op,
 * shape and dtype by name (the receiver looks them up), the evaluation
 * settings and the op's reference module (cubin). */
typedef struct kevo_wire_gpu_setup {
    char op[64];
    char shape[256];
    char dtype[16];
    int warmup, reps;
    double timeout_s;
    uint64_t seed;
    void *ref_cubin;       /* unpacked: owned (kevo_wire_gpu_setup_release); packed: read */
    size_t ref_cubin_size;
} kevo_wire_gpu_setup;

/* A rank's GPU, or why it has none (ok false: msg). */
typedef struct kevo_wire_gpu_hello {
    bool ok;
    char msg[512];
    const kevo_op *op;   /* packing: the op whose peers info.peers holds (unpacking leaves it NULL) */
    int device;          /* its CUDA ordinal there */
    kevo_gpu_info info;  /* its device, peers and ceilings as its worker measured them */
} kevo_wire_gpu_hello;

/* Frames (appended to out).  Errors: KEVO_ERR_NOMEM; KEVO_ERR_ARG for a
 * value a frame cannot carry (a blob over 4 GiB). */
kevo_status kevo_wire_hello_pack(kv_buf *out, const kevo_wire_hello *h, kevo_err *err);
/* The job's name, source, arch and options (the -I ones left out: each
 * machine has its own paths) with id and its time limit. */
kevo_status kevo_wire_job_pack(kv_buf *out, int64_t id, const kevo_compile_job *job, double timeout_s,
                               kevo_err *err);
/* A prepare: a job whose source is a prelude (name, arch, options without
 * -I, the prelude; no id or time limit).  The receiver starts writing that
 * prelude's precompiled header (kevo_compile_pch_prepare) before any job of
 * the family reaches it. */
kevo_status kevo_wire_prepare_pack(kv_buf *out, const kevo_compile_job *prelude, kevo_err *err);
/* A finished job's outcome: failure kind, seconds, ptxas figures, whether
 * it used a precompiled header, log and cubin. */
kevo_status kevo_wire_result_pack(kv_buf *out, int64_t id, const kevo_compile_job *job, kevo_err *err);
/* alive, stop, bye, or fin (finalize: whether the receiver calls MPI_Finalize). */
kevo_status kevo_wire_control_pack(kv_buf *out, kevo_wire_type type, bool finalize, kevo_err *err);
/* fin with the processes to end (nreap 0..KEVO_WIRE_REAP_MAX, reap may be NULL when 0). */
kevo_status kevo_wire_fin_pack(kv_buf *out, bool finalize, const kevo_wire_proc *reap, int nreap, kevo_err *err);

/* gpu_setup: every field, the reference cubin as the one blob. */
kevo_status kevo_wire_gpu_setup_pack(kv_buf *out, const kevo_wire_gpu_setup *s, kevo_err *err);
/* gpu_hello: NaN figures (not measured) travel as null; the measured
 * peers as a list by h->op's names. */
kevo_status kevo_wire_gpu_hello_pack(kv_buf *out, const kevo_wire_gpu_hello *h, kevo_err *err);
/* eval: rank 0's number id for it, the request's candidate, maps, time,
 * seed and plan (as JSON text), its cubin as the one blob. */
kevo_status kevo_wire_eval_pack(kv_buf *out, int64_t id, const kevo_gpu_request *req, kevo_err *err);
/* eval_result: the result's figures, every repetition's time as the one
 * blob (little-endian IEEE doubles). */
kevo_status kevo_wire_eval_result_pack(kv_buf *out, int64_t id, const kevo_gpu_result *res, kevo_err *err);

/* The type of a frame, checking only its magic, version and header.
 * Errors: KEVO_ERR_PARSE (not a frame, a bad header), KEVO_ERR_UNSUPPORTED
 * (another protocol version, named). */
kevo_status kevo_wire_type_of(const void *msg, size_t n, kevo_wire_type *type, kevo_err *err);

/* Decoders: each checks the whole frame (type, every field's type and
 * range, blob lengths that add up to the frame) and writes its outputs only
 * on success.  Errors: KEVO_ERR_PARSE naming what is wrong,
 * KEVO_ERR_UNSUPPORTED (another version), KEVO_ERR_NOMEM. */
kevo_status kevo_wire_hello_unpack(const void *msg, size_t n, kevo_wire_hello *h, kevo_err *err);
/* Into *out (released with kevo_wire_job_release). */
kevo_status kevo_wire_job_unpack(const void *msg, size_t n, kevo_wire_job *out, kevo_err *err);
void kevo_wire_job_release(kevo_wire_job *j);
/* A prepare into *out as a job of id 0 and time limit 0, its options this
 * machine's as for a job (released with kevo_wire_job_release). */
kevo_status kevo_wire_prepare_unpack(const void *msg, size_t n, kevo_wire_job *out, kevo_err *err);
/* *id, and the outcome into job's output fields (fail, log, cubin, seconds,
 * regs, spill_bytes, smem_static, stack_bytes, pch; the job owns log and cubin);
 * its inputs are left alone. */
kevo_status kevo_wire_result_unpack(const void *msg, size_t n, int64_t *id, kevo_compile_job *job, kevo_err *err);
/* Into *s (its ref_cubin owned: kevo_wire_gpu_setup_release). */
kevo_status kevo_wire_gpu_setup_unpack(const void *msg, size_t n, kevo_wire_gpu_setup *s, kevo_err *err);
void kevo_wire_gpu_setup_release(kevo_wire_gpu_setup *s);
/* The peers by op's names (an unknown or repeated name is refused). */
kevo_status kevo_wire_gpu_hello_unpack(const void *msg, size_t n, const kevo_op *op, kevo_wire_gpu_hello *h,
                                       kevo_err *err);
/* *id and *req; req->cubin is malloc'd (the caller frees it) and the plan
 * is checked by kevo_plan_parse_json. */
kevo_status kevo_wire_eval_unpack(const void *msg, size_t n, int64_t *id, kevo_gpu_request *req, kevo_err *err);
/* *id and *res (every field; reps at most KEVO_GPU_MAX_REPS). */
kevo_status kevo_wire_eval_result_unpack(const void *msg, size_t n, int64_t *id, kevo_gpu_result *res,
                                         kevo_err *err);

/* A control frame of the expected type; *finalize from a fin (false otherwise);
 * a fin's reap list is checked and left out (kevo_wire_fin_unpack reads it). */
kevo_status kevo_wire_control_unpack(const void *msg, size_t n, kevo_wire_type expect, bool *finalize,
                                     kevo_err *err);
/* A fin: *finalize, and its reap list into *reap (malloc'd, NULL when
 * *nreap is 0; the caller frees it). */
kevo_status kevo_wire_fin_unpack(const void *msg, size_t n, bool *finalize, kevo_wire_proc **reap, int *nreap,
                                 kevo_err *err);

#endif /* KEVO_WIRE_H */
