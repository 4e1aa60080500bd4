/* gpu_proto.h — messages between kevo and its GPU worker over two pipes.
 * Both ends are the same binary (the worker is forked), so messages are the
 * structs themselves. */
#ifndef KEVO_GPU_PROTO_H
#define KEVO_GPU_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "evaluator/gpu_types.h"

/* worker -> parent, once, after start-up */
typedef struct gp_hello {
    int status; /* kevo_status */
    char msg[1024];
    kevo_gpu_info info;
} gp_hello;

/* parent -> worker, followed by cubin_size bytes of cubin.  A re-timing is
 * one request of kind GP_RETIME (count candidates, rounds, warmup, and
 * whether a peer runs beside them) followed by `count` requests of kind
 * GP_EVAL, each with its cubin. */
enum { GP_EVAL = 0, GP_RETIME = 1 };
typedef struct gp_request {
    int kind;
    int count, rounds, warmup; /* GP_RETIME */
    /* GP_RETIME: has_peer 1 when the op's same-run peer `peer` (an index
       into kevo_op.peers, not a KEVO_PEER_AFTER one) is timed in every
       round after the candidates; 0 none (peer is then ignored) */
    int has_peer, peer;
    kevo_gpu_request req;      /* req.cubin is not used across the pipe */
    uint64_t cubin_size;
} gp_request;

/* worker -> parent, one per request */
typedef struct gp_response {
    kevo_gpu_result res;
    int restart; /* the worker exits after this reply (sticky CUDA error) */
} gp_response;

/* worker -> parent after a GP_RETIME: one per candidate, in order, then
 * one for the peer when the request has one (res.ms its time in each
 * round, or res.fail and res.msg why it was not timed) */
typedef struct gp_retime_response {
    kevo_gpu_retime_result res;
    int restart;
} gp_retime_response;

/* Check a GP_RETIME request against op before anything runs: count in
 * 1..KEVO_GPU_RETIME_MAX (2.. without a peer), rounds >= 2, warmup in
 * 0..KEVO_GPU_MAX_REPS, has_peer 0 or 1, with a peer: peer an index of
 * op->peers that is not KEVO_PEER_AFTER; and (count + has_peer) * rounds
 * runs at most KEVO_GPU_MAX_REPS.  Returns true when it holds; otherwise
 * why[n] says which field is wrong and its value ("peer index 9 is out of
 * range: ikbo_lce has 4 peers"). */
bool gp_retime_check(const gp_request *head, const kevo_op *op, char *why, size_t n);

/* Check one re-timing answer read from the worker (untrusted bytes of
 * another process): msg terminated; a timed one (fail KEVO_FAIL_NONE)
 * holds exactly `rounds` times, each finite and positive.  A result that
 * breaks this is turned into a failure saying why (KEVO_FAIL_WORKER_CRASH);
 * returns whether it held. */
bool gp_retime_result_check(kevo_gpu_retime_result *res, int rounds);

/* Blocking whole-buffer I/O; 0 on success, -1 on error or end of file. */
int gp_write(int fd, const void *p, size_t n);
int gp_read(int fd, void *p, size_t n);

/* probe -> parent, once: the machine's GPUs */
typedef struct gp_probe {
    int status; /* kevo_status */
    char msg[1024];
    int count; /* devices the driver reports (more than listed when over KEVO_GPU_MAX_DEVICES) */
    kevo_gpu_device dev[KEVO_GPU_MAX_DEVICES];
} gp_probe;

#endif /* KEVO_GPU_PROTO_H */
