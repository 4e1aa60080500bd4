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
 * one request of kind GP_RETIME (count candidates, rounds, warmup) followed
 * by `count` requests of kind GP_EVAL, each with its cubin. */
enum { GP_EVAL = 0, GP_RETIME = 1 };
typedef struct gp_request {
    int kind;
    int count, rounds, warmup; /* GP_RETIME */
    kevo_gpu_request req;      /* req.cubin is not used across the pipe */
    uint64_t cubin_size;
} gp_request;

/* worker -> parent, one per request */
typedef struct gp_response {
    kevo_gpu_result res;
    int restart; /* the worker exits after this reply (sticky CUDA error) */
} gp_response;

/* worker -> parent after a GP_RETIME: one per candidate, in order */
typedef struct gp_retime_response {
    kevo_gpu_retime_result res;
    int restart;
} gp_retime_response;

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
