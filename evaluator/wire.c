/* wire.c — kevo's MPI messages to bytes and back (see wire.h): the frame, and
 * the compile ranks' messages; the GPU ranks' are wire_gpu.c.  Every
 * decoder treats its input as untrusted: lengths are checked against the
 * frame before anything is copied, numbers against their ranges, strings
 * for embedded NULs. */
#include "evaluator/wire.h"
#include "evaluator/wire_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WR_PREFIX 12 /* "KEVO", version, header length */

static const char *const wr_names[] = {
    [KEVO_WIRE_HELLO] = "hello", [KEVO_WIRE_JOB] = "job",   [KEVO_WIRE_RESULT] = "result", [KEVO_WIRE_ALIVE] = "alive",
    [KEVO_WIRE_STOP] = "stop",   [KEVO_WIRE_BYE] = "bye",   [KEVO_WIRE_FIN] = "fin",
    [KEVO_WIRE_GPU_SETUP] = "gpu_setup", [KEVO_WIRE_GPU_HELLO] = "gpu_hello", [KEVO_WIRE_EVAL] = "eval",
    [KEVO_WIRE_EVAL_RESULT] = "eval_result", [KEVO_WIRE_PREPARE] = "prepare",
};
#define WR_LAST KEVO_WIRE_PREPARE

const char *kevo_wire_type_name(kevo_wire_type t)
{
    return t >= KEVO_WIRE_HELLO && t <= WR_LAST ? wr_names[t] : "?";
}

static void wr_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t wr_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- packing ---- */

/* The frame of header hdr (consumed) and n blobs. */
kevo_status wr_pack(kv_buf *out, cJSON *hdr, const void *const *blobs, const size_t *lens, int n,
                    kevo_err *err)
{
    char *json = hdr ? cJSON_PrintUnformatted(hdr) : NULL;
    cJSON_Delete(hdr);
    if (!json)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    size_t jl = strlen(json);
    kevo_status st = KEVO_OK;
    if (jl > KEVO_WIRE_HEADER_MAX)
        st = kevo_err_set(err, KEVO_ERR_ARG, "a message header of %zu bytes is too long", jl);
    unsigned char pre[WR_PREFIX] = {'K', 'E', 'V', 'O'};
    wr_put_u32(pre + 4, KEVO_WIRE_VERSION);
    wr_put_u32(pre + 8, (uint32_t)jl);
    if (!st && (kv_buf_append(out, pre, sizeof pre) || kv_buf_append(out, json, jl)))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && !st; i++)
        if (lens[i] && kv_buf_append(out, blobs[i], lens[i]))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    free(json);
    return st;
}

/* A header object with its type; NULL when out of memory. */
cJSON *wr_header(kevo_wire_type t)
{
    cJSON *h = cJSON_CreateObject();
    if (h && !cJSON_AddStringToObject(h, "type", kevo_wire_type_name(t))) {
        cJSON_Delete(h);
        return NULL;
    }
    return h;
}

/* Add a number; false when out of memory (the caller checks once, at the end). */
bool wr_num(cJSON *h, const char *k, double v)
{
    return h && cJSON_AddNumberToObject(h, k, v) != NULL;
}

bool wr_str(cJSON *h, const char *k, const char *v)
{
    return h && cJSON_AddStringToObject(h, k, v) != NULL;
}

/* Blob lengths travel as JSON numbers: exact up to 2^53, and kept far below. */
kevo_status wr_blob_len(size_t n, const char *what, kevo_err *err)
{
    if (n > UINT32_MAX)
        return kevo_err_set(err, KEVO_ERR_ARG, "a %s of %zu bytes is too large to send", what, n);
    return KEVO_OK;
}

kevo_status kevo_wire_hello_pack(kv_buf *out, const kevo_wire_hello *h, kevo_err *err)
{
    cJSON *j = wr_header(KEVO_WIRE_HELLO);
    bool ok = wr_num(j, "rank", h->rank) && wr_str(j, "host", h->host) && wr_num(j, "pid", (double)h->pid) &&
              wr_num(j, "slots", h->slots) && wr_str(j, "nvrtc", h->nvrtc) && wr_str(j, "start", h->start) &&
              wr_str(j, "kevo", KEVO_VERSION);
    if (!ok) {
        cJSON_Delete(j);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    return wr_pack(out, j, NULL, NULL, 0, err);
}

/* A job or prepare frame: job's name, arch, options without -I and source;
 * a job's also its id and time limit. */
static kevo_status wr_job_pack(kv_buf *out, kevo_wire_type type, int64_t id, const kevo_compile_job *job,
                               double timeout_s, kevo_err *err)
{
    size_t slen = strlen(job->source);
    kevo_status st = wr_blob_len(slen, "source", err);
    if (st)
        return st;
    cJSON *j = wr_header(type);
    bool ok = wr_str(j, "name", job->name ? job->name : "") && wr_str(j, "arch", job->arch) &&
              wr_num(j, "source_len", (double)slen);
    if (ok && type == KEVO_WIRE_JOB)
        ok = wr_num(j, "id", (double)id) && wr_num(j, "timeout_s", timeout_s);
    cJSON *opts = ok ? cJSON_AddArrayToObject(j, "opts") : NULL;
    ok = opts != NULL;
    for (int i = 0; ok && i < job->nopts; i++) {
        if (strncmp(job->opts[i], "-I", 2) == 0)
            continue;
        cJSON *s = cJSON_CreateString(job->opts[i]);
        ok = s && cJSON_AddItemToArray(opts, s);
    }
    if (!ok) {
        cJSON_Delete(j);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    const void *blobs[] = {job->source};
    size_t lens[] = {slen};
    return wr_pack(out, j, blobs, lens, 1, err);
}

kevo_status kevo_wire_job_pack(kv_buf *out, int64_t id, const kevo_compile_job *job, double timeout_s,
                               kevo_err *err)
{
    return wr_job_pack(out, KEVO_WIRE_JOB, id, job, timeout_s, err);
}

kevo_status kevo_wire_prepare_pack(kv_buf *out, const kevo_compile_job *prelude, kevo_err *err)
{
    return wr_job_pack(out, KEVO_WIRE_PREPARE, 0, prelude, 0, err);
}

kevo_status kevo_wire_result_pack(kv_buf *out, int64_t id, const kevo_compile_job *job, kevo_err *err)
{
    size_t llen = job->log ? strlen(job->log) : 0, clen = job->cubin ? job->cubin_size : 0;
    kevo_status st = wr_blob_len(llen, "compile log", err);
    if (!st)
        st = wr_blob_len(clen, "cubin", err);
    if (st)
        return st;
    cJSON *j = wr_header(KEVO_WIRE_RESULT);
    /* NaN seconds (nothing ran) travel as -1: JSON has no NaN */
    bool ok = wr_num(j, "id", (double)id) && wr_str(j, "fail", kevo_fail_name(job->fail)) &&
              wr_num(j, "seconds", isfinite(job->seconds) ? job->seconds : -1) && wr_num(j, "regs", job->regs) &&
              wr_num(j, "spill_bytes", job->spill_bytes) && wr_num(j, "smem_static", job->smem_static) &&
              wr_num(j, "stack_bytes", job->stack_bytes) && wr_num(j, "log_len", (double)llen) &&
              wr_num(j, "cubin_len", (double)clen) && cJSON_AddBoolToObject(j, "pch", job->pch);
    if (!ok) {
        cJSON_Delete(j);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    const void *blobs[] = {job->log, job->cubin};
    size_t lens[] = {llen, clen};
    return wr_pack(out, j, blobs, lens, 2, err);
}

kevo_status kevo_wire_control_pack(kv_buf *out, kevo_wire_type type, bool finalize, kevo_err *err)
{
    if (type != KEVO_WIRE_ALIVE && type != KEVO_WIRE_STOP && type != KEVO_WIRE_BYE && type != KEVO_WIRE_FIN)
        return kevo_err_set(err, KEVO_ERR_ARG, "'%s' is not a control message", kevo_wire_type_name(type));
    if (type == KEVO_WIRE_FIN)
        return kevo_wire_fin_pack(out, finalize, NULL, 0, err);
    cJSON *j = wr_header(type);
    if (!j)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    return wr_pack(out, j, NULL, NULL, 0, err);
}

kevo_status kevo_wire_fin_pack(kv_buf *out, bool finalize, const kevo_wire_proc *reap, int nreap, kevo_err *err)
{
    if (nreap < 0 || nreap > KEVO_WIRE_REAP_MAX || (nreap > 0 && !reap))
        return kevo_err_set(err, KEVO_ERR_ARG, "a fin cannot name %d processes", nreap);
    cJSON *j = wr_header(KEVO_WIRE_FIN);
    bool ok = j && cJSON_AddBoolToObject(j, "finalize", finalize);
    cJSON *list = ok ? cJSON_AddArrayToObject(j, "reap") : NULL;
    ok = list != NULL;
    for (int i = 0; ok && i < nreap; i++) {
        cJSON *p = cJSON_CreateObject();
        ok = p && cJSON_AddItemToArray(list, p);
        if (!ok)
            cJSON_Delete(p);
        ok = ok && wr_num(p, "rank", reap[i].rank) && wr_str(p, "host", reap[i].host) &&
             wr_num(p, "pid", (double)reap[i].pid) && wr_str(p, "start", reap[i].start);
    }
    if (!ok) {
        cJSON_Delete(j);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    return wr_pack(out, j, NULL, NULL, 0, err);
}

/* ---- unpacking ---- */


kevo_status wr_open(const void *msg, size_t n, wr_frame *f, kevo_err *err)
{
    memset(f, 0, sizeof *f);
    const unsigned char *p = msg;
    if (!p || n < WR_PREFIX || memcmp(p, "KEVO", 4) != 0)
        return kevo_err_set(err, KEVO_ERR_PARSE, "not a kevo message (%zu bytes)", n);
    uint32_t ver = wr_get_u32(p + 4), jl = wr_get_u32(p + 8);
    if (ver != KEVO_WIRE_VERSION)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "a message of protocol version %u (this kevo speaks %u)",
                            ver, KEVO_WIRE_VERSION);
    if (jl > KEVO_WIRE_HEADER_MAX || jl > n - WR_PREFIX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "a message header of %u bytes in a message of %zu", jl, n);
    f->hdr = cJSON_ParseWithLength((const char *)p + WR_PREFIX, jl);
    if (!cJSON_IsObject(f->hdr)) {
        cJSON_Delete(f->hdr);
        f->hdr = NULL;
        return kevo_err_set(err, KEVO_ERR_PARSE, "a message header that is not a JSON object");
    }
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->hdr, "type");
    for (int i = KEVO_WIRE_HELLO; cJSON_IsString(t) && i <= WR_LAST && !f->type; i++)
        if (strcmp(t->valuestring, wr_names[i]) == 0)
            f->type = (kevo_wire_type)i;
    if (!f->type) {
        cJSON_Delete(f->hdr);
        f->hdr = NULL;
        return kevo_err_set(err, KEVO_ERR_PARSE, "a message of no known type");
    }
    f->rest = p + WR_PREFIX + jl;
    f->rest_len = n - WR_PREFIX - jl;
    return KEVO_OK;
}

kevo_status wr_expect(wr_frame *f, kevo_wire_type t, kevo_err *err)
{
    if (f->type == t)
        return KEVO_OK;
    kevo_status st = kevo_err_set(err, KEVO_ERR_PARSE, "a '%s' message where a '%s' one was expected",
                                  kevo_wire_type_name(f->type), kevo_wire_type_name(t));
    cJSON_Delete(f->hdr);
    f->hdr = NULL;
    return st;
}

/* An integer field in [lo, hi]. */
kevo_status wr_int(const cJSON *h, const char *k, double lo, double hi, int64_t *out, kevo_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, k);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) || v->valuedouble != floor(v->valuedouble))
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field '%s' is missing or not a whole number in %.0f..%.0f",
                            k, lo, hi);
    *out = (int64_t)v->valuedouble;
    return KEVO_OK;
}

/* A string field of fewer than cap bytes (no NUL inside, as JSON can carry). */
kevo_status wr_text(const cJSON *h, const char *k, size_t cap, const char **out, kevo_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, k);
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= cap)
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field '%s' is missing, not a string or longer than %zu",
                            k, cap - 1);
    *out = v->valuestring;
    return KEVO_OK;
}

/* A process identity (kv_proc_id: hex digits, '-', one '/', digits; or ""). */
static kevo_status wr_proc_id(const cJSON *h, const char **out, kevo_err *err)
{
    kevo_status st = wr_text(h, "start", KEVO_PROC_ID_MAX, out, err);
    if (st)
        return st;
    const char *s = *out, *slash = strchr(s, '/');
    bool ok = s[0] == '\0' || (slash && slash > s && slash[1] && strspn(s, "0123456789abcdef-") == (size_t)(slash - s) &&
                               strspn(slash + 1, "0123456789") == strlen(slash + 1));
    return ok ? KEVO_OK : kevo_err_set(err, KEVO_ERR_PARSE, "message field 'start' is not a process identity");
}

/* The blob lengths named by keys must add up to what follows the header. */
kevo_status wr_blobs(const wr_frame *f, const char *const *keys, size_t *lens, int n, kevo_err *err)
{
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        int64_t v = 0; /* set by wr_int whenever it returns KEVO_OK */
        kevo_status st = wr_int(f->hdr, keys[i], 0, (double)UINT32_MAX, &v, err);
        if (st)
            return st;
        lens[i] = (size_t)v;
        total += lens[i];
    }
    if (total != f->rest_len)
        return kevo_err_set(err, KEVO_ERR_PARSE, "a '%s' message names %zu bytes of data but carries %zu",
                            kevo_wire_type_name(f->type), total, f->rest_len);
    return KEVO_OK;
}

kevo_status kevo_wire_type_of(const void *msg, size_t n, kevo_wire_type *type, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        *type = f.type;
    cJSON_Delete(f.hdr);
    return st;
}

kevo_status kevo_wire_hello_unpack(const void *msg, size_t n, kevo_wire_hello *h, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_HELLO, err);
    if (st)
        return st;
    int64_t rank = 0, pid = 0, slots = 0;
    const char *host = NULL, *nvrtc = NULL, *start = NULL;
    st = wr_int(f.hdr, "rank", 1, INT32_MAX, &rank, err);
    if (!st)
        st = wr_int(f.hdr, "pid", 0, INT64_C(1) << 53, &pid, err);
    if (!st)
        st = wr_int(f.hdr, "slots", 1, 256, &slots, err);
    if (!st)
        st = wr_text(f.hdr, "host", sizeof h->host, &host, err);
    if (!st)
        st = wr_text(f.hdr, "nvrtc", sizeof h->nvrtc, &nvrtc, err);
    if (!st)
        st = wr_proc_id(f.hdr, &start, err);
    if (!st && f.rest_len)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'hello' message with %zu bytes of data", f.rest_len);
    if (!st) {
        memset(h, 0, sizeof *h);
        h->rank = (int)rank;
        h->pid = pid;
        h->slots = (int)slots;
        snprintf(h->host, sizeof h->host, "%s", host);
        snprintf(h->nvrtc, sizeof h->nvrtc, "%s", nvrtc);
        snprintf(h->start, sizeof h->start, "%s", start);
    }
    cJSON_Delete(f.hdr);
    return st;
}

void kevo_wire_job_release(kevo_wire_job *j)
{
    kevo_compile_job_release(&j->job);
    free(j->name);
    free(j->source);
    j->name = j->source = NULL;
}

/* The options of a job frame into job->opts: strings that fit, none an
 * include path (the receiver adds its own), room left for the two includes. */
static kevo_status wr_opts(const cJSON *h, kevo_compile_job *job, kevo_err *err)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(h, "opts");
    if (!cJSON_IsArray(a))
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field 'opts' is missing or not an array");
    const cJSON *o;
    cJSON_ArrayForEach(o, a)
    {
        if (!cJSON_IsString(o) || strlen(o->valuestring) >= sizeof job->opts[0] || strncmp(o->valuestring, "-I", 2) == 0)
            return kevo_err_set(err, KEVO_ERR_PARSE, "a compile option in a message is not a string of at most %zu "
                                "bytes without an include path", sizeof job->opts[0] - 1);
        if (job->nopts >= KEVO_COMPILE_MAX_OPTS - 2)
            return kevo_err_set(err, KEVO_ERR_PARSE, "a message with more than %d compile options",
                                KEVO_COMPILE_MAX_OPTS - 2);
        snprintf(job->opts[job->nopts++], sizeof job->opts[0], "%s", o->valuestring);
    }
    return KEVO_OK;
}

/* A job or prepare frame (type) into *out (a prepare's id and time limit 0). */
static kevo_status wr_job_unpack(const void *msg, size_t n, kevo_wire_type type, kevo_wire_job *out, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, type, err);
    if (st)
        return st;
    const char *what = kevo_wire_type_name(type);
    kevo_wire_job j;
    memset(&j, 0, sizeof j);
    j.job.regs = j.job.spill_bytes = j.job.smem_static = j.job.stack_bytes = -1;
    const char *name = NULL, *arch = NULL;
    size_t slen = 0;
    static const char *const keys[] = {"source_len"};
    const cJSON *to = cJSON_GetObjectItemCaseSensitive(f.hdr, "timeout_s");
    if (type == KEVO_WIRE_JOB) {
        st = wr_int(f.hdr, "id", 1, (double)(INT64_C(1) << 53), &j.id, err);
        if (!st && !(cJSON_IsNumber(to) && to->valuedouble >= 0.1 && to->valuedouble <= 86400))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "message field 'timeout_s' is missing or not 0.1..86400 seconds");
    }
    if (!st)
        st = wr_text(f.hdr, "name", 256, &name, err);
    if (!st)
        st = wr_text(f.hdr, "arch", sizeof j.job.arch, &arch, err);
    if (!st && strncmp(arch, "sm_", 3) != 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a %s message for arch '%s'", what, arch);
    if (!st)
        st = wr_blobs(&f, keys, &slen, 1, err);
    if (!st && memchr(f.rest, '\0', slen))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a %s message whose source holds a NUL byte", what);
    if (!st)
        st = wr_opts(f.hdr, &j.job, err);
    if (!st)
        st = kevo_compile_job_add_includes(&j.job, err);
    if (!st) {
        j.timeout_s = type == KEVO_WIRE_JOB ? to->valuedouble : 0;
        snprintf(j.job.arch, sizeof j.job.arch, "%s", arch);
        j.name = kv_strdup(name);
        j.source = malloc(slen + 1);
        if (!j.name || !j.source) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        } else {
            memcpy(j.source, f.rest, slen);
            j.source[slen] = '\0';
            j.job.name = j.name;
            j.job.source = j.source;
        }
    }
    cJSON_Delete(f.hdr);
    if (st) {
        kevo_wire_job_release(&j);
        return st;
    }
    *out = j;
    return KEVO_OK;
}

kevo_status kevo_wire_job_unpack(const void *msg, size_t n, kevo_wire_job *out, kevo_err *err)
{
    return wr_job_unpack(msg, n, KEVO_WIRE_JOB, out, err);
}

kevo_status kevo_wire_prepare_unpack(const void *msg, size_t n, kevo_wire_job *out, kevo_err *err)
{
    return wr_job_unpack(msg, n, KEVO_WIRE_PREPARE, out, err);
}

kevo_status kevo_wire_result_unpack(const void *msg, size_t n, int64_t *id, kevo_compile_job *job, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_RESULT, err);
    if (st)
        return st;
    int64_t rid = 0, regs = 0, spill = 0, smem = 0, stack = 0;
    const char *fail = NULL;
    kevo_fail kind = KEVO_FAIL_NONE;
    size_t lens[2] = {0, 0};
    static const char *const keys[] = {"log_len", "cubin_len"};
    const cJSON *secs = cJSON_GetObjectItemCaseSensitive(f.hdr, "seconds");
    const cJSON *pch = cJSON_GetObjectItemCaseSensitive(f.hdr, "pch");
    st = wr_int(f.hdr, "id", 1, (double)(INT64_C(1) << 53), &rid, err);
    if (!st && !cJSON_IsBool(pch))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "message field 'pch' is missing or not true/false");
    if (!st)
        st = wr_text(f.hdr, "fail", 64, &fail, err);
    /* a compile ends in one of four ways; anything else is not a compile's result */
    if (!st && (!kevo_fail_parse(fail, &kind) ||
                (kind != KEVO_FAIL_NONE && kind != KEVO_FAIL_COMPILE_ERROR && kind != KEVO_FAIL_COMPILE_CRASH &&
                 kind != KEVO_FAIL_COMPILE_TIMEOUT)))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a result message with failure kind '%.64s'", fail);
    if (!st && !(cJSON_IsNumber(secs) && (secs->valuedouble == -1 || (secs->valuedouble >= 0 && secs->valuedouble <= 1e7))))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "message field 'seconds' is missing or out of range");
    if (!st)
        st = wr_int(f.hdr, "regs", -1, 1 << 20, &regs, err);
    if (!st)
        st = wr_int(f.hdr, "spill_bytes", -1, INT32_MAX, &spill, err);
    if (!st)
        st = wr_int(f.hdr, "smem_static", -1, INT32_MAX, &smem, err);
    if (!st)
        st = wr_int(f.hdr, "stack_bytes", -1, INT32_MAX, &stack, err);
    if (!st)
        st = wr_blobs(&f, keys, lens, 2, err);
    if (!st && memchr(f.rest, '\0', lens[0]))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a result message whose log holds a NUL byte");
    if (!st && kind == KEVO_FAIL_NONE && lens[1] == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a result message of a successful compile without a cubin");
    char *log = NULL;
    void *cubin = NULL;
    if (!st) {
        log = lens[0] ? malloc(lens[0] + 1) : NULL;
        cubin = lens[1] ? malloc(lens[1]) : NULL;
        if ((lens[0] && !log) || (lens[1] && !cubin))
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    if (!st) {
        if (log) {
            memcpy(log, f.rest, lens[0]);
            log[lens[0]] = '\0';
        }
        if (cubin)
            memcpy(cubin, f.rest + lens[0], lens[1]);
        kevo_compile_job_release(job);
        *id = rid;
        job->fail = kind;
        job->log = log;
        job->cubin = cubin;
        job->cubin_size = lens[1];
        job->seconds = secs->valuedouble < 0 ? NAN : secs->valuedouble;
        job->regs = (int)regs;
        job->spill_bytes = (int)spill;
        job->smem_static = (int)smem;
        job->stack_bytes = (int)stack;
        job->pch = cJSON_IsTrue(pch);
    } else {
        free(log);
        free(cubin);
    }
    cJSON_Delete(f.hdr);
    return st;
}

/* A fin's reap list: an array of at most KEVO_WIRE_REAP_MAX processes,
 * into *out (malloc'd; NULL with *n 0) when out is not NULL. */
static kevo_status wr_reap(const cJSON *h, kevo_wire_proc **out, int *n, kevo_err *err)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(h, "reap");
    if (!cJSON_IsArray(list))
        return kevo_err_set(err, KEVO_ERR_PARSE, "a 'fin' message without a 'reap' list");
    int count = cJSON_GetArraySize(list);
    if (count > KEVO_WIRE_REAP_MAX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "a 'fin' message naming %d processes (at most %d)", count,
                            KEVO_WIRE_REAP_MAX);
    kevo_wire_proc *v = count > 0 ? calloc((size_t)count, sizeof *v) : NULL;
    if (count > 0 && !v)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    kevo_status st = KEVO_OK;
    int i = 0;
    for (const cJSON *p = list->child; p && !st; p = p->next, i++) {
        int64_t rank = 0, pid = 0;
        const char *host = NULL, *start = NULL;
        if (!cJSON_IsObject(p))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'fin' message whose reap entry %d is not an object", i);
        if (!st)
            st = wr_int(p, "rank", 1, INT32_MAX, &rank, err);
        if (!st)
            st = wr_int(p, "pid", 1, INT64_C(1) << 53, &pid, err);
        if (!st)
            st = wr_text(p, "host", sizeof v[i].host, &host, err);
        if (!st)
            st = wr_proc_id(p, &start, err);
        if (!st) {
            v[i].rank = (int)rank;
            v[i].pid = pid;
            snprintf(v[i].host, sizeof v[i].host, "%s", host);
            snprintf(v[i].start, sizeof v[i].start, "%s", start);
        }
    }
    if (st || !out) {
        free(v);
        return st;
    }
    *out = v;
    *n = count;
    return KEVO_OK;
}

static kevo_status wr_control(const void *msg, size_t n, kevo_wire_type expect, bool *finalize,
                              kevo_wire_proc **reap, int *nreap, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, expect, err);
    if (st)
        return st;
    const cJSON *fin = cJSON_GetObjectItemCaseSensitive(f.hdr, "finalize");
    kevo_wire_proc *list = NULL;
    int nlist = 0;
    if (expect == KEVO_WIRE_FIN && !cJSON_IsBool(fin))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'fin' message without a true/false 'finalize'");
    else if (f.rest_len)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a '%s' message with %zu bytes of data", kevo_wire_type_name(f.type),
                          f.rest_len);
    else if (expect == KEVO_WIRE_FIN)
        st = wr_reap(f.hdr, reap ? &list : NULL, &nlist, err);
    if (!st && finalize)
        *finalize = expect == KEVO_WIRE_FIN && cJSON_IsTrue(fin);
    if (!st && reap) {
        *reap = list;
        *nreap = nlist;
    }
    cJSON_Delete(f.hdr);
    return st;
}

kevo_status kevo_wire_control_unpack(const void *msg, size_t n, kevo_wire_type expect, bool *finalize,
                                     kevo_err *err)
{
    return wr_control(msg, n, expect, finalize, NULL, NULL, err);
}

kevo_status kevo_wire_fin_unpack(const void *msg, size_t n, bool *finalize, kevo_wire_proc **reap, int *nreap,
                                 kevo_err *err)
{
    return wr_control(msg, n, KEVO_WIRE_FIN, finalize, reap, nreap, err);
}
