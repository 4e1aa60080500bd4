/* wire_int.h — the frame helpers wire.c gives wire_gpu.c (internal to
 * evaluator/): building a message's header and frame, and taking one apart
 * with every length and number checked. */
#ifndef KEVO_EVALUATOR_WIRE_INT_H
#define KEVO_EVALUATOR_WIRE_INT_H

#include "evaluator/wire.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A frame taken apart: its header and the bytes after it. */
typedef struct wr_frame {
    cJSON *hdr;
    kevo_wire_type type;
    const unsigned char *rest;
    size_t rest_len;
} wr_frame;

/* The frame of header hdr (consumed) and n blobs. */
kevo_status wr_pack(kv_buf *out, cJSON *hdr, const void *const *blobs, const size_t *lens, int n,
                    kevo_err *err);
/* A header object with its type; NULL when out of memory. */
cJSON *wr_header(kevo_wire_type t);
/* Add a number; false when out of memory (the caller checks once, at the end). */
bool wr_num(cJSON *h, const char *k, double v);
bool wr_str(cJSON *h, const char *k, const char *v);
/* Blob lengths travel as JSON numbers: exact up to 2^53, and kept far below. */
kevo_status wr_blob_len(size_t n, const char *what, kevo_err *err);
kevo_status wr_open(const void *msg, size_t n, wr_frame *f, kevo_err *err);
kevo_status wr_expect(wr_frame *f, kevo_wire_type t, kevo_err *err);
/* An integer field in [lo, hi]. */
kevo_status wr_int(const cJSON *h, const char *k, double lo, double hi, int64_t *out, kevo_err *err);
/* A string field of fewer than cap bytes (no NUL inside, as JSON can carry). */
kevo_status wr_text(const cJSON *h, const char *k, size_t cap, const char **out, kevo_err *err);
/* The blob lengths named by keys must add up to what follows the header. */
kevo_status wr_blobs(const wr_frame *f, const char *const *keys, size_t *lens, int n, kevo_err *err);

#endif
