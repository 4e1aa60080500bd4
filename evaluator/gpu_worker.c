/* gpu_worker.c — the GPU worker process: driver and context, device figures,
 * loading candidates, and the request loop.  Inputs, verification and timing
 * are gpu_eval.c's; what only the op knows, its GPU side's (kevo_op.gpu). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evaluator/backend.h"
#include "evaluator/gpu_int.h"
#include "evaluator/gpu_proto.h"
#include "util/util.h"

/* Driver, device, context, stream, events, flush buffer, reference module. */
/* Load the driver, initialise it and check that device ordinal `device`
 * exists.  Errors: KEVO_ERR_NO_GPU. */
static kevo_status wk_find_device(kv_cu *cu, int device, kevo_err *err)
{
    char buf[256];
    kevo_status st = kv_cu_load(cu, err);
    if (st)
        return st;
    CUresult r = cu->cuInit(0);
    if (r != CUDA_SUCCESS)
        return kevo_err_set(err, KEVO_ERR_NO_GPU, "CUDA driver present but cuInit failed: %s; this command needs a GPU",
                            kv_cu_errstr(cu, r, buf, sizeof buf));
    int count = 0;
    cu->cuDeviceGetCount(&count);
    if (device < 0 || device >= count)
        return kevo_err_set(err, KEVO_ERR_NO_GPU, "no CUDA device %d (this machine has %d)", device, count);
    return KEVO_OK;
}

static void wk_probe_main(int wfd)
{
    kv_cu cu;
    kevo_err err;
    kevo_err_clear(&err);
    gp_probe pr;
    memset(&pr, 0, sizeof pr);
    pr.status = wk_find_device(&cu, 0, &err);
    if (pr.status == KEVO_OK) {
        int count = 0;
        cu.cuDeviceGetCount(&count);
        pr.count = count;
        for (int i = 0; i < count && i < KEVO_GPU_MAX_DEVICES; i++) {
            kevo_gpu_device *d = &pr.dev[i];
            CUdevice dev;
            d->ordinal = i;
            if (cu.cuDeviceGet(&dev, i) != CUDA_SUCCESS)
                continue;
            cu.cuDeviceGetName(d->name, sizeof d->name, dev);
            cu.cuDeviceGetPCIBusId(d->pci_bus, sizeof d->pci_bus, dev);
            cu.cuDeviceGetAttribute(&d->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
            cu.cuDeviceGetAttribute(&d->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
            cu.cuDeviceGetAttribute(&d->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        }
    }
    snprintf(pr.msg, sizeof pr.msg, "%s", err.msg);
    _exit(gp_write(wfd, &pr, sizeof pr) ? 3 : 0);
}

static kevo_status wk_open_device(wk_ctx *w, kevo_err *err)
{
    kv_cu *cu = &w->cu;
    kevo_status st = wk_find_device(cu, w->cfg.device, err);
    if (st)
        return st;
    KV_CU_TRY(cu, err, cu->cuDeviceGet(&w->dev, w->cfg.device));
    KV_CU_TRY(cu, err, cu->cuDevicePrimaryCtxRetain(&w->ctx, w->dev));
    KV_CU_TRY(cu, err, cu->cuCtxSetCurrent(w->ctx));
    KV_CU_TRY(cu, err, cu->cuStreamCreate(&w->stream, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 2 * WK_MAX_REPS; i++)
        KV_CU_TRY(cu, err, cu->cuEventCreate(&w->ev[i], CU_EVENT_DEFAULT));

    kevo_gpu_info *in = &w->info;
    cu->cuDeviceGetName(in->name, sizeof in->name, w->dev);
    cu->cuDeviceGetPCIBusId(in->pci_bus, sizeof in->pci_bus, w->dev);
    cu->cuDriverGetVersion(&in->driver_version);
    int v = 0;
    cu->cuDeviceGetAttribute(&in->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, w->dev);
    cu->cuDeviceGetAttribute(&in->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, w->dev);
    cu->cuDeviceGetAttribute(&in->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, w->dev);
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, w->dev) == CUDA_SUCCESS)
        in->sm_clock_mhz = v / 1000;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, w->dev) == CUDA_SUCCESS)
        in->mem_clock_mhz = v / 1000;
    if (cu->cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, w->dev) == CUDA_SUCCESS)
        in->l2_bytes = v;
    cu->cuDeviceGetAttribute(&in->max_smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, w->dev);
    size_t mem = 0;
    cu->cuDeviceTotalMem(&mem, w->dev);
    in->mem_bytes = (int64_t)mem;
    kevo_peer_set_init(&in->peers);
    in->peak_tflops = in->copy_tbps = NAN;
    in->ref_check_rel_err = in->ref_check_nonfinite = NAN;

    w->flush_bytes = (size_t)(in->l2_bytes > 0 ? in->l2_bytes : (64 << 20)) * 2;
    w->flush_bytes = (w->flush_bytes + 255) & ~(size_t)255;
    KV_CU_TRY_AS(cu, err, cu->cuMemAlloc(&w->flush, w->flush_bytes), "allocating the L2 flush buffer");
    KV_CU_TRY_AS(cu, err, cu->cuModuleLoadData(&w->ref_mod, w->cfg.ref_cubin),
                 "loading the reference module (is --arch right for %s?)", in->name);
    st = kv_cublas_load(&w->cb, err);
    if (st)
        return st;
    KV_CUBLAS_TRY_AS(&w->cb, err, w->cb.cublasCreate_v2(&w->blas), "cublasCreate failed");
    w->cb.cublasSetStream_v2(w->blas, (cudaStream_t)w->stream);
    wk_lt_open(w); /* never fatal: the peers that need it say why it is missing */
    return KEVO_OK;
}

/* Load a candidate's cubin and check each launch against the device before
 * anything runs. */
static CUmodule wk_load_cand(wk_ctx *w, const kevo_gpu_request *req, wk_cand *c, kevo_gpu_result *res, bool *sticky)
{
    kv_cu *cu = &w->cu;
    CUmodule mod = NULL;
    CUresult r = cu->cuModuleLoadData(&mod, req->cubin);
    if (r != CUDA_SUCCESS) {
        char buf[256];
        res->fail = KEVO_FAIL_LOAD_ERROR;
        snprintf(res->msg, sizeof res->msg, "module load: %s", kv_cu_errstr(cu, r, buf, sizeof buf));
        if (wk_fail_of(r, sticky) != KEVO_FAIL_LAUNCH_ERROR || *sticky)
            res->fail = wk_fail_of(r, sticky);
        return NULL;
    }
    c->plan = &req->plan;
    for (int i = 0; i < req->plan.nlaunches; i++) {
        const kevo_launch *l = &req->plan.launches[i];
        r = cu->cuModuleGetFunction(&c->fn[i], mod, l->entry);
        if (r != CUDA_SUCCESS) {
            res->fail = KEVO_FAIL_LOAD_ERROR;
            snprintf(res->msg, sizeof res->msg, "entry '%s' not in the module", l->entry);
            break;
        }
        int max_threads = 0, static_smem = 0;
        cu->cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, c->fn[i]);
        cu->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, c->fn[i]);
        unsigned threads = l->block[0] * l->block[1] * l->block[2];
        if ((int)threads > max_threads) {
            res->fail = KEVO_FAIL_RESOURCE_EXCEEDED;
            snprintf(res->msg, sizeof res->msg, "'%s' takes at most %d threads per block, the plan asks %u",
                     l->entry, max_threads, threads);
            break;
        }
        if ((long)l->smem + static_smem > (long)w->info.max_smem_optin) {
            res->fail = KEVO_FAIL_RESOURCE_EXCEEDED;
            snprintf(res->msg, sizeof res->msg, "'%s' needs %u + %d bytes of shared memory, the device allows %d",
                     l->entry, l->smem, static_smem, w->info.max_smem_optin);
            break;
        }
        r = cu->cuFuncSetAttribute(c->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)l->smem);
        if (r != CUDA_SUCCESS) {
            char buf[256];
            res->fail = KEVO_FAIL_RESOURCE_EXCEEDED;
            snprintf(res->msg, sizeof res->msg, "'%s' dynamic shared memory %u: %s", l->entry, l->smem,
                     kv_cu_errstr(cu, r, buf, sizeof buf));
            break;
        }
    }
    if (res->fail != KEVO_FAIL_NONE) {
        cu->cuModuleUnload(mod);
        return NULL;
    }
    return mod;
}

/* Answer a re-timing: one gp_retime_response per candidate, then the
 * peer's when one was asked; false when the pipe broke. */
static bool wk_retime_answer(int wfd, const kevo_gpu_retime_result *out, int n, const kevo_gpu_retime_result *peer,
                             bool sticky)
{
    for (int i = 0; i < n + (peer != NULL); i++) {
        gp_retime_response rs;
        memset(&rs, 0, sizeof rs);
        rs.res = i < n ? out[i] : *peer;
        rs.restart = sticky;
        if (gp_write(wfd, &rs, sizeof rs))
            return false;
    }
    return true;
}

/* A GP_RETIME request: read its candidates, load them, time them
 * interleaved (with the peer asked for, checked first: gp_retime_check),
 * answer one gp_retime_response each and one for the peer; exit after a
 * sticky error (the parent starts a fresh worker). */
static void wk_retime(wk_ctx *w, const gp_request *head, int rfd, int wfd)
{
    int n = head->count;
    if (n < 1 || n > KEVO_GPU_RETIME_MAX)
        _exit(6); /* the candidates that follow cannot be read: the parent sees the worker end */
    kevo_gpu_request reqs[KEVO_GPU_RETIME_MAX];
    void *cubins[KEVO_GPU_RETIME_MAX] = {0};
    static wk_cand cands[KEVO_GPU_RETIME_MAX];
    static kevo_gpu_retime_result out[KEVO_GPU_RETIME_MAX], peer_out;
    CUmodule mods[KEVO_GPU_RETIME_MAX] = {0};
    for (int i = 0; i < n; i++) {
        gp_request rq;
        if (gp_read(rfd, &rq, sizeof rq) || !(cubins[i] = malloc(rq.cubin_size ? rq.cubin_size : 1)) ||
            gp_read(rfd, cubins[i], rq.cubin_size))
            _exit(4);
        reqs[i] = rq.req;
        reqs[i].cubin = cubins[i];
        reqs[i].cubin_size = rq.cubin_size;
    }
    memset(&peer_out, 0, sizeof peer_out);
    char why[200];
    bool valid = gp_retime_check(head, w->cfg.op, why, sizeof why);
    bool sticky = false, all_loaded = valid;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        kevo_gpu_result res;
        memset(&res, 0, sizeof res);
        memset(&cands[i], 0, sizeof cands[i]);
        if (!valid) {
            out[i].fail = KEVO_FAIL_LOAD_ERROR;
            snprintf(out[i].msg, sizeof out[i].msg, "re-timing refused: %.200s", why);
            continue;
        }
        mods[i] = sticky ? NULL : wk_load_cand(w, &reqs[i], &cands[i], &res, &sticky);
        if (!mods[i]) {
            out[i].fail = res.fail != KEVO_FAIL_NONE ? res.fail : KEVO_FAIL_LOAD_ERROR;
            snprintf(out[i].msg, sizeof out[i].msg, "%.255s", res.msg);
            all_loaded = false;
        }
    }
    const bool has_peer = head->has_peer != 0;
    if (all_loaded) {
        wk_op_retime(w, reqs, cands, n, has_peer ? head->peer : -1, head->warmup, head->rounds, out, &peer_out,
                     &sticky);
    } else {
        for (int i = 0; i < n; i++)
            if (mods[i]) {
                out[i].fail = KEVO_FAIL_LOAD_ERROR;
                snprintf(out[i].msg, sizeof out[i].msg, "not timed: another candidate of the re-timing did not load");
            }
        peer_out.fail = KEVO_FAIL_LOAD_ERROR;
        snprintf(peer_out.msg, sizeof peer_out.msg, "%s%.200s", valid ? "not timed: a candidate did not load" : "",
                 valid ? "" : why);
    }
    for (int i = 0; i < n; i++) {
        if (mods[i] && !sticky)
            w->cu.cuModuleUnload(mods[i]);
        free(cubins[i]);
    }
    if (!wk_retime_answer(wfd, out, n, has_peer ? &peer_out : NULL, sticky))
        _exit(5);
    if (sticky)
        _exit(0);
}

static void wk_worker_main(const kevo_gpu_config *cfg, int rfd, int wfd, bool first)
{
    static wk_ctx w; /* large (events); one per process */
    memset(&w, 0, sizeof w);
    w.cfg = *cfg;
    kevo_err err;
    kevo_err_clear(&err);
    gp_hello hello;
    memset(&hello, 0, sizeof hello);
    kevo_status st = cfg->op->gpu
                         ? wk_open_device(&w, &err)
                         : kevo_err_set(&err, KEVO_ERR_UNSUPPORTED, "no GPU backend for op '%s'", cfg->op->name);
    if (!st)
        st = wk_op_init(&w, first, &err);
    hello.status = st;
    snprintf(hello.msg, sizeof hello.msg, "%s", err.msg);
    hello.info = w.info;
    if (gp_write(wfd, &hello, sizeof hello) || st)
        _exit(st ? 2 : 3);

    for (;;) {
        gp_request rq;
        if (gp_read(rfd, &rq, sizeof rq))
            break; /* parent closed the pipe: done */
        if (rq.kind == GP_RETIME) {
            wk_retime(&w, &rq, rfd, wfd);
            continue;
        }
        void *cubin = malloc(rq.cubin_size ? rq.cubin_size : 1);
        if (!cubin || gp_read(rfd, cubin, rq.cubin_size))
            _exit(4);
        kevo_gpu_request req = rq.req;
        req.cubin = cubin;
        req.cubin_size = rq.cubin_size;
        gp_response rs;
        memset(&rs, 0, sizeof rs);
        rs.res.median_ms = rs.res.min_ms = rs.res.max_ms = NAN;
        rs.res.rel_err = rs.res.max_abs_err = NAN;
        bool sticky = false;
        wk_cand c;
        memset(&c, 0, sizeof c);
        double t0 = kv_now();
        CUmodule mod = wk_load_cand(&w, &req, &c, &rs.res, &sticky);
        rs.res.phase_ms[KEVO_PHASE_LOAD] = 1e3 * (kv_now() - t0); /* wk_op_eval adds the other phases */
        if (mod) {
            wk_op_eval(&w, &req, &c, &rs.res, &sticky);
            if (!sticky)
                w.cu.cuModuleUnload(mod);
        }
        rs.res.phase_ms[KEVO_PHASE_ALL] = 1e3 * (kv_now() - t0); /* the parent reports where the time went */
        free(cubin);
        rs.restart = sticky;
        if (gp_write(wfd, &rs, sizeof rs))
            _exit(5);
        if (sticky)
            _exit(0); /* the context is broken: the parent starts a fresh worker */
    }
    wk_op_fini(&w);
    wk_lt_close(&w);
    _exit(0);
}

const kv_gpu_backend kv_backend_local = {"local", wk_probe_main, wk_worker_main};
