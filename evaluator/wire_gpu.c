/* wire_gpu.c — the GPU ranks' MPI messages to bytes and back (see wire.h):
 * setup, hello with the peers' times, an evaluation and its result.  Every
 * decoder treats its input as untrusted, as wire.c's do. */
#include "evaluator/wire.h"
#include "evaluator/wire_int.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A figure that may be NaN (not measured): JSON has no NaN, so null. */
static bool wr_dbl(cJSON *h, const char *k, double v)
{
    return h && (isfinite(v) ? cJSON_AddNumberToObject(h, k, v) : cJSON_AddNullToObject(h, k)) != NULL;
}

/* A figure in [lo, hi], or null (NaN); anything else is refused. */
static kevo_status wr_get_dbl(const cJSON *h, const char *k, double lo, double hi, double *out, kevo_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(h, k);
    if (cJSON_IsNull(v)) {
        *out = NAN;
        return KEVO_OK;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi))
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field '%s' is missing or not null or a number in %g..%g",
                            k, lo, hi);
    *out = v->valuedouble;
    return KEVO_OK;
}

/* 64-bit seeds travel as 16 hex digits (a JSON number holds 53 bits). */
static bool wr_seed(cJSON *h, const char *k, uint64_t v)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)v);
    return wr_str(h, k, hex);
}

static kevo_status wr_get_seed(const cJSON *h, const char *k, uint64_t *out, kevo_err *err)
{
    const char *s = NULL;
    kevo_status st = wr_text(h, k, 17, &s, err);
    if (st)
        return st;
    uint64_t v = 0;
    size_t i = 0;
    for (; s[i]; i++) {
        int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 : -1;
        if (d < 0)
            break;
        v = v << 4 | (uint64_t)d;
    }
    if (i != 16 || s[i])
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field '%s' is not 16 hex digits", k);
    *out = v;
    return KEVO_OK;
}

static kevo_status wr_nomem(cJSON *j, kevo_err *err)
{
    cJSON_Delete(j);
    return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
}

kevo_status kevo_wire_gpu_setup_pack(kv_buf *out, const kevo_wire_gpu_setup *s, kevo_err *err)
{
    kevo_status st = wr_blob_len(s->ref_cubin_size, "reference cubin", err);
    if (st)
        return st;
    cJSON *j = wr_header(KEVO_WIRE_GPU_SETUP);
    bool ok = wr_str(j, "op", s->op) && wr_str(j, "shape", s->shape) && wr_str(j, "dtype", s->dtype) &&
              wr_num(j, "warmup", s->warmup) && wr_num(j, "reps", s->reps) && wr_num(j, "timeout_s", s->timeout_s) &&
              wr_seed(j, "seed", s->seed) && wr_num(j, "ref_len", (double)s->ref_cubin_size);
    if (!ok)
        return wr_nomem(j, err);
    const void *blobs[] = {s->ref_cubin};
    size_t lens[] = {s->ref_cubin_size};
    return wr_pack(out, j, blobs, lens, 1, err);
}

void kevo_wire_gpu_setup_release(kevo_wire_gpu_setup *s)
{
    free(s->ref_cubin);
    s->ref_cubin = NULL;
    s->ref_cubin_size = 0;
}

kevo_status kevo_wire_gpu_setup_unpack(const void *msg, size_t n, kevo_wire_gpu_setup *s, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_GPU_SETUP, err);
    if (st)
        return st;
    kevo_wire_gpu_setup v;
    memset(&v, 0, sizeof v);
    const char *op = NULL, *shape = NULL, *dtype = NULL;
    int64_t warmup = 0, reps = 0;
    size_t len = 0;
    static const char *const keys[] = {"ref_len"};
    st = wr_text(f.hdr, "op", sizeof v.op, &op, err);
    if (!st)
        st = wr_text(f.hdr, "shape", sizeof v.shape, &shape, err);
    if (!st)
        st = wr_text(f.hdr, "dtype", sizeof v.dtype, &dtype, err);
    if (!st)
        st = wr_int(f.hdr, "warmup", 0, 1000, &warmup, err);
    if (!st)
        st = wr_int(f.hdr, "reps", 1, KEVO_GPU_MAX_REPS, &reps, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "timeout_s", 0.1, 86400, &v.timeout_s, err);
    if (!st && isnan(v.timeout_s))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a gpu_setup message without a time limit");
    if (!st)
        st = wr_get_seed(f.hdr, "seed", &v.seed, err);
    if (!st)
        st = wr_blobs(&f, keys, &len, 1, err);
    if (!st && len == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a gpu_setup message without a reference cubin");
    if (!st && !(v.ref_cubin = malloc(len)))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st) {
        memcpy(v.ref_cubin, f.rest, len);
        v.ref_cubin_size = len;
        snprintf(v.op, sizeof v.op, "%s", op);
        snprintf(v.shape, sizeof v.shape, "%s", shape);
        snprintf(v.dtype, sizeof v.dtype, "%s", dtype);
        v.warmup = (int)warmup;
        v.reps = (int)reps;
        *s = v;
    }
    cJSON_Delete(f.hdr);
    return st;
}

/* The measured peers of a gpu_hello, by name: [{"peer", "status",
 * "median_ms", "ci_lo_ms", "ci_hi_ms", "rel_err", "detail", "config"}]. */
static bool wr_peers(cJSON *h, const kevo_op *op, const kevo_peer_set *ps)
{
    cJSON *a = h ? cJSON_AddArrayToObject(h, "peers") : NULL;
    if (!a)
        return false;
    for (int i = 0; op && i < op->npeers && i < KEVO_MAX_PEERS; i++) {
        const kevo_peer_fig *f = &ps->p[i];
        if (f->state == KEVO_PEER_UNMEASURED)
            continue;
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(a, o))
            return cJSON_Delete(o), false;
        if (!wr_str(o, "peer", op->peers[i].name) || !wr_str(o, "status", kevo_peer_state_name(f->state)) ||
            !wr_dbl(o, "median_ms", f->median_ms) || !wr_dbl(o, "ci_lo_ms", f->ci_lo_ms) ||
            !wr_dbl(o, "ci_hi_ms", f->ci_hi_ms) || !wr_dbl(o, "rel_err", f->rel_err) ||
            !wr_str(o, "detail", f->detail) || !wr_str(o, "config", f->config))
            return false;
    }
    return true;
}

/* The peers of a gpu_hello into ps (kevo_peer_set_init first): each named
 * peer of op, once; a name op does not declare is refused. */
static kevo_status wr_get_peers(const cJSON *h, const kevo_op *op, kevo_peer_set *ps, kevo_err *err)
{
    kevo_peer_set_init(ps);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(h, "peers"), *o;
    if (!cJSON_IsArray(a))
        return kevo_err_set(err, KEVO_ERR_PARSE, "message field 'peers' is missing or not an array");
    bool seen[KEVO_MAX_PEERS] = {false};
    cJSON_ArrayForEach(o, a)
    {
        const char *name = NULL, *status = NULL, *detail = NULL, *config = NULL;
        kevo_status st = cJSON_IsObject(o) ? KEVO_OK
                                           : kevo_err_set(err, KEVO_ERR_PARSE, "a 'peers' item is not an object");
        if (!st)
            st = wr_text(o, "peer", KEVO_PEER_NAME_MAX, &name, err);
        int i = st ? -1 : kevo_op_peer_index(op, name);
        if (!st && (i < 0 || i >= KEVO_MAX_PEERS || seen[i]))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'peers' item names a peer that is unknown or repeated");
        kevo_peer_fig f;
        memset(&f, 0, sizeof f);
        if (!st)
            st = wr_text(o, "status", 16, &status, err);
        if (!st && (!kevo_peer_state_parse(status, &f.state) || f.state == KEVO_PEER_UNMEASURED))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'peers' item's status is not ok, failed or error");
        if (!st)
            st = wr_get_dbl(o, "median_ms", 0, 1e9, &f.median_ms, err);
        if (!st)
            st = wr_get_dbl(o, "ci_lo_ms", 0, 1e9, &f.ci_lo_ms, err);
        if (!st)
            st = wr_get_dbl(o, "ci_hi_ms", 0, 1e9, &f.ci_hi_ms, err);
        if (!st)
            st = wr_get_dbl(o, "rel_err", 0, 1e300, &f.rel_err, err);
        if (!st)
            st = wr_text(o, "detail", sizeof f.detail, &detail, err);
        if (!st)
            st = wr_text(o, "config", sizeof f.config, &config, err);
        if (!st && f.state == KEVO_PEER_OK && !(f.median_ms > 0))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "a checked peer without a positive 'median_ms'");
        if (st)
            return st;
        snprintf(f.detail, sizeof f.detail, "%s", detail);
        snprintf(f.config, sizeof f.config, "%s", config);
        if (f.state != KEVO_PEER_OK)
            f.median_ms = f.ci_lo_ms = f.ci_hi_ms = NAN;
        ps->p[i] = f;
        seen[i] = true;
    }
    return KEVO_OK;
}

kevo_status kevo_wire_gpu_hello_pack(kv_buf *out, const kevo_wire_gpu_hello *h, kevo_err *err)
{
    const kevo_gpu_info *in = &h->info;
    cJSON *j = wr_header(KEVO_WIRE_GPU_HELLO);
    bool ok = j && cJSON_AddBoolToObject(j, "ok", h->ok) && wr_str(j, "msg", h->msg) &&
              wr_num(j, "device", h->device) && wr_str(j, "name", in->name) && wr_str(j, "pci_bus", in->pci_bus) &&
              wr_num(j, "driver_version", in->driver_version) && wr_num(j, "cc_major", in->cc_major) &&
              wr_num(j, "cc_minor", in->cc_minor) && wr_num(j, "sm_count", in->sm_count) &&
              wr_num(j, "sm_clock_mhz", in->sm_clock_mhz) && wr_num(j, "mem_clock_mhz", in->mem_clock_mhz) &&
              wr_num(j, "l2_bytes", (double)in->l2_bytes) && wr_num(j, "mem_bytes", (double)in->mem_bytes) &&
              wr_num(j, "max_smem_optin", in->max_smem_optin) && wr_dbl(j, "peak_tflops", in->peak_tflops) &&
              wr_dbl(j, "copy_tbps", in->copy_tbps) && wr_peers(j, h->op, &in->peers);
    if (!ok)
        return wr_nomem(j, err);
    return wr_pack(out, j, NULL, NULL, 0, err);
}

kevo_status kevo_wire_gpu_hello_unpack(const void *msg, size_t n, const kevo_op *op, kevo_wire_gpu_hello *h,
                                       kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_GPU_HELLO, err);
    if (st)
        return st;
    kevo_wire_gpu_hello v;
    memset(&v, 0, sizeof v);
    kevo_gpu_info *in = &v.info;
    const cJSON *okj = cJSON_GetObjectItemCaseSensitive(f.hdr, "ok");
    const char *m = NULL, *name = NULL, *bus = NULL;
    int64_t dev = 0, drv = 0, ccM = 0, ccm = 0, sms = 0, smc = 0, memc = 0, l2 = 0, mem = 0, smem = 0;
    if (!cJSON_IsBool(okj))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a gpu_hello message without a true/false 'ok'");
    if (!st)
        st = wr_text(f.hdr, "msg", sizeof v.msg, &m, err);
    if (!st)
        st = wr_int(f.hdr, "device", 0, 1024, &dev, err);
    if (!st)
        st = wr_text(f.hdr, "name", sizeof in->name, &name, err);
    if (!st)
        st = wr_text(f.hdr, "pci_bus", sizeof in->pci_bus, &bus, err);
    if (!st)
        st = wr_int(f.hdr, "driver_version", 0, INT32_MAX, &drv, err);
    if (!st)
        st = wr_int(f.hdr, "cc_major", 0, 1000, &ccM, err);
    if (!st)
        st = wr_int(f.hdr, "cc_minor", 0, 1000, &ccm, err);
    if (!st)
        st = wr_int(f.hdr, "sm_count", 0, 1 << 20, &sms, err);
    if (!st)
        st = wr_int(f.hdr, "sm_clock_mhz", 0, 1 << 20, &smc, err);
    if (!st)
        st = wr_int(f.hdr, "mem_clock_mhz", 0, 1 << 20, &memc, err);
    if (!st)
        st = wr_int(f.hdr, "l2_bytes", 0, (double)(INT64_C(1) << 53), &l2, err);
    if (!st)
        st = wr_int(f.hdr, "mem_bytes", 0, (double)(INT64_C(1) << 53), &mem, err);
    if (!st)
        st = wr_int(f.hdr, "max_smem_optin", 0, INT32_MAX, &smem, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "peak_tflops", 0, 1e9, &in->peak_tflops, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "copy_tbps", 0, 1e9, &in->copy_tbps, err);
    if (!st)
        st = wr_get_peers(f.hdr, op, &in->peers, err);
    if (!st && f.rest_len)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "a 'gpu_hello' message with %zu bytes of data", f.rest_len);
    if (!st) {
        v.ok = cJSON_IsTrue(okj);
        snprintf(v.msg, sizeof v.msg, "%s", m);
        v.device = (int)dev;
        snprintf(in->name, sizeof in->name, "%s", name);
        snprintf(in->pci_bus, sizeof in->pci_bus, "%s", bus);
        in->driver_version = (int)drv;
        in->cc_major = (int)ccM;
        in->cc_minor = (int)ccm;
        in->sm_count = (int)sms;
        in->sm_clock_mhz = (int)smc;
        in->mem_clock_mhz = (int)memc;
        in->l2_bytes = l2;
        in->mem_bytes = mem;
        in->max_smem_optin = (int)smem;
        *h = v;
    }
    cJSON_Delete(f.hdr);
    return st;
}

kevo_status kevo_wire_eval_pack(kv_buf *out, int64_t id, const kevo_gpu_request *req, kevo_err *err)
{
    kevo_status st = wr_blob_len(req->cubin_size, "cubin", err);
    if (st)
        return st;
    kv_buf plan;
    kv_buf_init(&plan);
    if (kevo_plan_json(&req->plan, &plan) || !plan.data) {
        kv_buf_release(&plan);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    }
    cJSON *j = wr_header(KEVO_WIRE_EVAL);
    bool ok = wr_num(j, "id", (double)id) && wr_num(j, "candidate", (double)req->candidate_id) &&
              wr_num(j, "maps", req->maps) && j && cJSON_AddBoolToObject(j, "time", req->time) &&
              wr_seed(j, "seed", req->seed) && wr_str(j, "plan", plan.data) &&
              wr_num(j, "cubin_len", (double)req->cubin_size);
    kv_buf_release(&plan);
    if (!ok)
        return wr_nomem(j, err);
    const void *blobs[] = {req->cubin};
    size_t lens[] = {req->cubin_size};
    return wr_pack(out, j, blobs, lens, 1, err);
}

kevo_status kevo_wire_eval_unpack(const void *msg, size_t n, int64_t *id, kevo_gpu_request *req, kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_EVAL, err);
    if (st)
        return st;
    kevo_gpu_request r;
    memset(&r, 0, sizeof r);
    int64_t rid = 0, cand = 0, maps = 0;
    const char *plan = NULL;
    size_t len = 0;
    static const char *const keys[] = {"cubin_len"};
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(f.hdr, "time");
    st = wr_int(f.hdr, "id", 1, (double)(INT64_C(1) << 53), &rid, err);
    if (!st)
        st = wr_int(f.hdr, "candidate", 0, (double)(INT64_C(1) << 53), &cand, err);
    if (!st)
        st = wr_int(f.hdr, "maps", 1, 255, &maps, err);
    if (!st && !cJSON_IsBool(t))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "an eval message without a true/false 'time'");
    if (!st)
        st = wr_get_seed(f.hdr, "seed", &r.seed, err);
    if (!st)
        st = wr_text(f.hdr, "plan", KEVO_WIRE_HEADER_MAX, &plan, err);
    if (!st)
        st = kevo_plan_parse_json(plan, &r.plan, err);
    if (!st)
        st = wr_blobs(&f, keys, &len, 1, err);
    if (!st && len == 0)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "an eval message without a cubin");
    void *cubin = NULL;
    if (!st && !(cubin = malloc(len)))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st) {
        memcpy(cubin, f.rest, len);
        r.candidate_id = cand;
        r.maps = (unsigned)maps;
        r.time = cJSON_IsTrue(t);
        r.cubin = cubin;
        r.cubin_size = len;
        *id = rid;
        *req = r;
    }
    cJSON_Delete(f.hdr);
    return st;
}

kevo_status kevo_wire_eval_result_pack(kv_buf *out, int64_t id, const kevo_gpu_result *res, kevo_err *err)
{
    int reps = res->reps < 0 ? 0 : res->reps > KEVO_GPU_MAX_REPS ? KEVO_GPU_MAX_REPS : res->reps;
    unsigned char *ms = malloc((size_t)(reps > 0 ? reps : 1) * 8);
    if (!ms)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int i = 0; i < reps; i++) {
        uint64_t b;
        memcpy(&b, &res->rep_ms[i], 8);
        for (int k = 0; k < 8; k++)
            ms[8 * i + k] = (unsigned char)(b >> (8 * k));
    }
    cJSON *j = wr_header(KEVO_WIRE_EVAL_RESULT);
    bool ok = wr_num(j, "id", (double)id) && wr_str(j, "fail", kevo_fail_name(res->fail)) &&
              wr_str(j, "msg", res->msg) && wr_num(j, "checks", res->checks) && wr_dbl(j, "rel_err", res->rel_err) &&
              wr_dbl(j, "max_abs_err", res->max_abs_err) && wr_num(j, "bad_elems", (double)res->bad_elems) &&
              wr_dbl(j, "median_ms", res->median_ms) && wr_dbl(j, "min_ms", res->min_ms) &&
              wr_dbl(j, "max_ms", res->max_ms) && wr_num(j, "reps", reps) && wr_num(j, "reps_len", 8.0 * reps) &&
              wr_num(j, "passes", res->passes);
    for (int i = 0; ok && i < KEVO_GPU_PHASES; i++) { /* "phase_load", ...: where the worker's time went */
        char key[32];
        snprintf(key, sizeof key, "phase_%s", kevo_gpu_phase_name((kevo_gpu_phase)i));
        ok = wr_dbl(j, key, res->phase_ms[i]);
    }
    if (!ok) {
        free(ms);
        return wr_nomem(j, err);
    }
    const void *blobs[] = {ms};
    size_t lens[] = {(size_t)reps * 8};
    kevo_status st = wr_pack(out, j, blobs, lens, 1, err);
    free(ms);
    return st;
}

kevo_status kevo_wire_eval_result_unpack(const void *msg, size_t n, int64_t *id, kevo_gpu_result *res,
                                         kevo_err *err)
{
    wr_frame f;
    kevo_status st = wr_open(msg, n, &f, err);
    if (!st)
        st = wr_expect(&f, KEVO_WIRE_EVAL_RESULT, err);
    if (st)
        return st;
    kevo_gpu_result *r = calloc(1, sizeof *r);
    int64_t rid = 0, checks = 0, bad = 0, reps = 0, passes = 0;
    const char *fail = NULL, *m = NULL;
    size_t len = 0;
    static const char *const keys[] = {"reps_len"};
    if (!r)
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st)
        st = wr_int(f.hdr, "id", 1, (double)(INT64_C(1) << 53), &rid, err);
    if (!st)
        st = wr_text(f.hdr, "fail", 64, &fail, err);
    if (!st && !kevo_fail_parse(fail, &r->fail))
        st = kevo_err_set(err, KEVO_ERR_PARSE, "an eval_result message with failure kind '%.64s'", fail);
    if (!st)
        st = wr_text(f.hdr, "msg", sizeof r->msg, &m, err);
    if (!st)
        st = wr_int(f.hdr, "checks", 0, 1 << 20, &checks, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "rel_err", 0, 1e300, &r->rel_err, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "max_abs_err", 0, 1e300, &r->max_abs_err, err);
    if (!st)
        st = wr_int(f.hdr, "bad_elems", 0, (double)(INT64_C(1) << 53), &bad, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "median_ms", 0, 1e9, &r->median_ms, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "min_ms", 0, 1e9, &r->min_ms, err);
    if (!st)
        st = wr_get_dbl(f.hdr, "max_ms", 0, 1e9, &r->max_ms, err);
    if (!st)
        st = wr_int(f.hdr, "reps", 0, KEVO_GPU_MAX_REPS, &reps, err);
    if (!st)
        st = wr_int(f.hdr, "passes", 0, KEVO_GPU_TIMING_PASSES, &passes, err);
    for (int i = 0; !st && i < KEVO_GPU_PHASES; i++) { /* optional: absent (an older rank) is not known */
        char key[32];
        snprintf(key, sizeof key, "phase_%s", kevo_gpu_phase_name((kevo_gpu_phase)i));
        if (cJSON_GetObjectItemCaseSensitive(f.hdr, key))
            st = wr_get_dbl(f.hdr, key, 0, 1e9, &r->phase_ms[i], err);
        if (!st && isnan(r->phase_ms[i]))
            r->phase_ms[i] = 0;
    }
    if (!st)
        st = wr_blobs(&f, keys, &len, 1, err);
    if (!st && len != (size_t)reps * 8)
        st = kevo_err_set(err, KEVO_ERR_PARSE, "an eval_result message with %lld repetitions in %zu bytes",
                          (long long)reps, len);
    for (int i = 0; !st && i < reps; i++) {
        uint64_t b = 0;
        for (int k = 0; k < 8; k++)
            b |= (uint64_t)f.rest[8 * i + k] << (8 * k);
        memcpy(&r->rep_ms[i], &b, 8);
        if (!(r->rep_ms[i] >= 0 && r->rep_ms[i] <= 1e9))
            st = kevo_err_set(err, KEVO_ERR_PARSE, "an eval_result message with repetition %d at %g ms", i,
                              r->rep_ms[i]);
    }
    if (!st) {
        snprintf(r->msg, sizeof r->msg, "%s", m);
        r->checks = (int)checks;
        r->bad_elems = bad;
        r->reps = (int)reps;
        r->passes = (int)passes;
        *id = rid;
        *res = *r;
    }
    free(r);
    cJSON_Delete(f.hdr);
    return st;
}
