/* devices.c — the GPUs of a run: the reference module and a worker on
 * each GPU (this host's, the other MPI ranks', a distribution's shapes),
 * each fitted to the run's arch, the run's GPUs as one set (tn_devset,
 * through which the loop and the throughput at the end reach each GPU
 * alike), and each one's throughput at the end. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "search/tune/tune_int.h"

void tn_pch_prepare(const tn_env *e)
{
    for (int i = 0; i < e->nspaces; i++) {
        kv_buf pre;
        kv_buf_init(&pre);
        kevo_err err;
        kevo_compile_job job;
        if (!kevo_space_render_prelude(e->spaces[i], &pre, &err) && pre.len > 0 &&
            !kevo_compile_job_init(&job, e->spaces[i]->source_name, pre.data, e->arch, &err)) {
            kevo_compile_pch_prepare(&job);
            if (e->mpi && kevo_mpi_rank(e->mpi) == 0 && kevo_mpi_compile_prepare(e->mpi, &job, &err))
                kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0,
                        "the other MPI ranks write %s's precompiled header at its first job: %s",
                        e->spaces[i]->family, err.msg);
        }
        kv_buf_release(&pre);
    }
}

kevo_status tn_ref_module(tn_env *e, tn_work *w, kevo_err *err)
{
    memset(w, 0, sizeof *w);
    kv_buf_init(&w->source);
    kevo_status st = kevo_op_ref_render(e->op, e->kernels_dir, e->dt, e->abi, &w->source, err);
    if (st)
        return st;
    if ((st = kevo_compile_job_init(&w->job, e->op->ref_name, w->source.data, e->arch, err)))
        return st;
    const void *bufs[] = {w->source.data};
    size_t lens[] = {w->source.len};
    kv_sha256_hex(bufs, lens, 1, w->source_hash);
    kevo_compile_key(&w->job);
    if ((st = tn_compile(e, w, 1, err)))
        return st;
    if (w->job.fail != KEVO_FAIL_NONE)
        return kevo_err_set(err, KEVO_ERR_NVRTC, "the reference module '%s' did not compile for %s: %.400s",
                            e->op->ref_name, e->arch, w->job.log ? w->job.log : "");
    return KEVO_OK;
}

/* The error for a device that is not of the run's arch exactly (a cubin
 * is loaded only on the architecture it was built for): KEVO_ERR_UNSUPPORTED
 * naming the device (who: "" or "rank 2's "), its compute capability, the
 * one the arch needs and the --arch for the device. */
static kevo_status tn_arch_mismatch(const tn_env *e, kevo_err *err, const char *who, const kevo_gpu_info *in)
{
    char fits[64];
    kevo_arch_names_for(in->cc_major, in->cc_minor, fits, sizeof fits);
    return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "%s%s (compute capability %d.%d) is not a %s device: code for %s "
                        "is loaded only on compute capability %d.%d%s%s", who, in->name, in->cc_major,
                        in->cc_minor, e->arch, e->arch, e->lim.sm / 10, e->lim.sm % 10,
                        fits[0] ? "; --arch for this device: " : "", fits);
}

/* A GPU of the run (who: "" or "rank 2's "): of the run's arch exactly
 * (tn_arch_mismatch otherwise), and the plans' limits narrowed to its SM
 * count and opt-in shared memory, so that one plan fits every GPU. */
static kevo_status tn_dev_fit(tn_env *e, const kevo_gpu_info *in, const char *who, kevo_err *err)
{
    if (!kevo_arch_runs_on(&e->lim, in->cc_major, in->cc_minor))
        return tn_arch_mismatch(e, err, who, in);
    if (in->max_smem_optin > 0 && in->max_smem_optin < e->lim.max_smem)
        e->lim.max_smem = in->max_smem_optin;
    if (in->sm_count > 0 && in->sm_count < e->lim.num_sms)
        e->lim.num_sms = in->sm_count;
    return KEVO_OK;
}

kevo_status tn_start_gpu(tn_env *e, const tn_work *ref, int warmup, int reps, double timeout,
                         uint64_t seed, bool baseline, bool ceilings, kevo_err *err)
{
    kevo_gpu_config gc[KEVO_GPU_MAX_DEVICES] = {0}; /* nw >= 1 fills what is read */
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
    /* a distribution's other GPUs get their workers with its other shapes (tn_start_shape_gpus) */
    const int nw = e->dist ? 1 : e->ndev;
    for (int k = 0; k < nw; k++) /* every further GPU times its own peers and ceilings */
        gc[k] = tn_gpu_config(e, ref, &e->shape, e->ord[k], warmup, reps, timeout, seed, baseline || k > 0,
                              ceilings || k > 0);
    kevo_status st = nw == 1 ? kevo_gpu_start(&gc[0], &g[0], &e->dinfo[0], err)
                             : kevo_gpu_start_many(gc, nw, g, e->dinfo, err);
    if (st)
        return st;
    for (int k = 0; k < nw; k++)
        tn_say_ref_check(e, &e->dinfo[k]);
    e->gpu = g[0];
    for (int k = 1; k < nw; k++)
        e->dgpu[k] = g[k];
    e->info = e->dinfo[0];
    /* the device's own limits replace the arch table's (the first GPU's: one plan serves all) */
    e->lim.num_sms = e->info.sm_count;
    if (e->info.max_smem_optin > 0)
        e->lim.max_smem = e->info.max_smem_optin;
    for (int k = 0; k < nw; k++) {
        kevo_status st = tn_dev_fit(e, &e->dinfo[k], "", err);
        if (st)
            return st;
    }
    return KEVO_OK;
}

kevo_status tn_remote_devices(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, bool mixed,
                              kevo_err *err)
{
    kevo_wire_gpu_setup su;
    memset(&su, 0, sizeof su);
    snprintf(su.op, sizeof su.op, "%s", e->op->name);
    snprintf(su.shape, sizeof su.shape, "%s", e->shape_txt);
    snprintf(su.dtype, sizeof su.dtype, "%s", kevo_dtype_name(e->dt));
    su.warmup = o->def.warmup;
    su.reps = o->def.reps;
    su.timeout_s = o->proc.eval_timeout;
    su.seed = o->def.seed;
    su.ref_cubin = ref->job.cubin;
    su.ref_cubin_size = ref->job.cubin_size;
    kevo_status st = kevo_mpi_gpus_start(e->mpi, &su, &e->rgpu, &e->nrem, err);
    if (st)
        return st;
    if (e->ndev + e->nrem > TN_MAX_DEV)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "%d GPUs: a run takes at most %d", e->ndev + e->nrem,
                            TN_MAX_DEV);
    for (int i = 0; i < e->nrem; i++) {
        int k = e->ndev + i;
        const kevo_gpu_info *in = &e->rgpu[i].info, *a = &e->dinfo[0];
        e->dinfo[k] = *in;
        e->ord[k] = e->rgpu[i].device;
        snprintf(e->dlabel[k], sizeof e->dlabel[k], "rank %d GPU %d", e->rgpu[i].rank, e->rgpu[i].device);
        snprintf(e->dhost[k], sizeof e->dhost[k], "%s", e->rgpu[i].host);
        if (!mixed && (strcmp(a->name, in->name) != 0 || a->sm_count != in->sm_count || a->cc_major != in->cc_major ||
                       a->cc_minor != in->cc_minor))
            return kevo_err_set(err, KEVO_ERR_ARG, "GPUs of different models: rank 0's is %s (%d SMs), rank %d's "
                                "(%s) %s (%d SMs); --mixed-devices evaluates on both, each with its own peers",
                                a->name, a->sm_count, e->rgpu[i].rank, e->rgpu[i].host, in->name, in->sm_count);
        char who[48];
        snprintf(who, sizeof who, "rank %d's ", e->rgpu[i].rank);
        if ((st = tn_dev_fit(e, in, who, err)))
            return st;
    }
    return KEVO_OK;
}

kevo_status tn_devices(tn_env *e, const char *list, bool mixed, int device, kevo_err *err)
{
    e->ndev = 1;
    e->ord[0] = device;
    if (!list)
        return KEVO_OK;
    bool all = strcmp(list, "all") == 0;
    int n = 0;
    if (!all) {
        const char *p = list;
        for (;;) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || v < 0 || v > 1024 || (*end != ',' && *end != '\0'))
                return kevo_err_set(err, KEVO_ERR_ARG, "--devices takes all or a comma list of device ordinals "
                                    "(0,1,...), not '%.80s'", list);
            if (n == KEVO_GPU_MAX_DEVICES)
                return kevo_err_set(err, KEVO_ERR_ARG, "--devices names more than %d GPUs", KEVO_GPU_MAX_DEVICES);
            for (int i = 0; i < n; i++)
                if (e->ord[i] == (int)v)
                    return kevo_err_set(err, KEVO_ERR_ARG, "--devices names GPU %ld twice", v);
            e->ord[n++] = (int)v;
            if (*end == '\0')
                break;
            p = end + 1;
        }
    }
    kevo_gpu_device dev[KEVO_GPU_MAX_DEVICES];
    int count = 0;
    kevo_status st = kevo_gpu_list(dev, KEVO_GPU_MAX_DEVICES, &count, e->cancel, err);
    if (st)
        return st;
    if (all) {
        n = count;
        for (int i = 0; i < n; i++)
            e->ord[i] = i;
    }
    for (int i = 0; i < n; i++)
        if (e->ord[i] >= count)
            return kevo_err_set(err, KEVO_ERR_NO_GPU, "no CUDA device %d (this machine has %d)", e->ord[i], count);
    for (int i = 1; i < n && !mixed; i++) {
        const kevo_gpu_device *a = &dev[e->ord[0]], *b = &dev[e->ord[i]];
        if (strcmp(a->name, b->name) != 0 || a->cc_major != b->cc_major || a->cc_minor != b->cc_minor ||
            a->sm_count != b->sm_count)
            return kevo_err_set(err, KEVO_ERR_ARG, "GPUs of different models: %d is %s (%d SMs), %d is %s (%d SMs); "
                                "--mixed-devices evaluates on both, each with its own peers",
                                a->ordinal, a->name, a->sm_count, b->ordinal, b->name, b->sm_count);
    }
    e->ndev = n;
    return KEVO_OK;
}

void tn_dev_labels(tn_env *e)
{
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (int k = 0; k < e->ndev; k++) {
        snprintf(e->dlabel[k], sizeof e->dlabel[k], "%sGPU %d", e->nrem > 0 ? "rank 0 " : "", e->ord[k]);
        snprintf(e->dhost[k], sizeof e->dhost[k], "%s", host);
    }
}

kevo_status tn_devset(const tn_env *e, kevo_devset *s, kevo_err *err)
{
    kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
    for (int k = 0; k < e->ndev; k++)
        g[k] = tn_dgpu(e, k);
    kevo_devset_init(s);
    kevo_status st = kevo_devset_add_workers(s, g, e->ndev, err);
    return st || e->nrem == 0 ? st : kevo_devset_add_mpi(s, e->mpi, e->nrem, err);
}

kevo_status tn_start_shape_gpus(tn_env *e, const tn_work *ref, const kevo_tune_opts *o, tn_progress *prog,
                                kevo_err *err)
{
    const int n = e->dist->n, nd = e->ndev;
    kevo_status ast = tn_alloc_shapes(e, err);
    if (ast)
        return ast;
    for (int w0 = 0; w0 < n; w0 += nd) {
        int first = w0 == 0 ? 1 : w0, cnt = (w0 + nd < n ? w0 + nd : n) - first;
        if (cnt <= 0)
            continue;
        kevo_gpu_config gc[KEVO_GPU_MAX_DEVICES];
        kevo_gpu *g[KEVO_GPU_MAX_DEVICES];
        kevo_gpu_info in[KEVO_GPU_MAX_DEVICES];
        for (int j = 0; j < cnt; j++) {
            int i = first + j;
            if (nd > 1)
                tn_line(prog, "kevo: starting the GPU worker of shape %d of %d (%s) on %s", i + 1, n,
                        e->dist->text[i], e->dlabel[i % nd]);
            else
                tn_line(prog, "kevo: starting the GPU worker of shape %d of %d (%s)", i + 1, n, e->dist->text[i]);
            gc[j] = tn_gpu_config(e, ref, &e->dist->shape[i], e->ord[i % nd], o->def.warmup, o->def.reps,
                                  o->proc.eval_timeout, o->def.seed, true, false);
        }
        kevo_status st = cnt == 1 ? kevo_gpu_start(&gc[0], &g[0], &in[0], err)
                                  : kevo_gpu_start_many(gc, cnt, g, in, err);
        if (st) {
            if (cnt == 1)
                kevo_err_prefix(err, "shape %s", e->dist->text[first]);
            else
                kevo_err_prefix(err, "shapes %d to %d of %d", first + 1, first + cnt, n);
            return st;
        }
        for (int j = 0; j < cnt; j++) {
            int i = first + j;
            tn_say_ref_check(e, &in[j]);
            e->xgpu[i] = g[j];
            tn_keep_peers(e->op, &e->speers[i], &in[j].peers);
            if (i < nd) {
                e->dinfo[i] = in[j];
                kevo_peer_set_init(&e->dinfo[i].peers);
                if ((st = tn_dev_fit(e, &e->dinfo[i], "", err)))
                    return st;
            }
        }
    }
    return KEVO_OK;
}

kevo_status tn_devices_store(tn_env *e, const kevo_run_row *run, kevo_err *err)
{
    kevo_run_device *had = NULL;
    int nhad = 0;
    kevo_status st = kevo_db_run_devices_get(e->db, run->id, &had, &nhad, err);
    free(had);
    if (st)
        return st;
    e->dev_base = nhad;
    const int total = e->ndev + e->nrem;
    kevo_run_device *v = calloc((size_t)total, sizeof *v);
    if (!v)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    for (int k = 0; k < total; k++) {
        const kevo_gpu_info *in = &e->dinfo[k];
        v[k].idx = e->dev_base + k;
        v[k].ordinal = e->ord[k];
        snprintf(v[k].host, sizeof v[k].host, "%s", e->dhost[k]);
        snprintf(v[k].name, sizeof v[k].name, "%s", in->name);
        snprintf(v[k].pci_bus, sizeof v[k].pci_bus, "%s", in->pci_bus);
        v[k].sm_count = in->sm_count;
        const kevo_peer_set *ps = tn_dev_peers(e, run, k, &v[k].peak_tflops, &v[k].copy_tbps);
        v[k].loop_s = NAN;
        /* a distribution's peers are its shapes' (shape_idx), measured by each shape's worker */
        if (!e->dist || k == 0)
            st = kevo_db_peers_put(e->db, run->id, 0, v[k].idx, e->op, ps, err);
        if (st)
            break;
    }
    if (!st)
        st = kevo_db_run_devices_put(e->db, run->id, v, total, err);
    free(v);
    return st;
}

kevo_status tn_devices_done(tn_env *e, const kevo_run_row *run, tn_progress *prog, kevo_err *err)
{
    kevo_run_device *v = NULL;
    int n = 0;
    kevo_devset *D = malloc(sizeof *D);
    kevo_status st = D ? tn_devset(e, D, err) : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st)
        st = kevo_db_run_devices_get(e->db, run->id, &v, &n, err);
    double loop_s = kv_now() - e->loop_t0;
    int total = 0;
    const int ndev = e->ndev + e->nrem;
    /* a distribution: one evaluation per candidate and shape */
    const char *what = e->dist ? "shape evaluations" : "candidates";
    for (int k = 0; k < ndev && !st; k++) {
        int idx = e->dev_base + k;
        if (idx >= n || v[idx].idx != idx)
            continue;
        if (e->dist) { /* the workers of shapes k, k + ndev, ... (a distribution's GPUs are this process's) */
            v[idx].evaluated = 0;
            v[idx].busy_s = 0;
            for (int i = k; i < e->dist->n; i += e->ndev) {
                v[idx].evaluated += kevo_gpu_evaluated(tn_shape_gpu(e, i));
                v[idx].busy_s += kevo_gpu_busy_s(tn_shape_gpu(e, i));
            }
        } else {
            kevo_devset_stats(D, k, &v[idx].evaluated, &v[idx].busy_s);
        }
        v[idx].loop_s = loop_s;
        total += v[idx].evaluated;
        double per_min, busy;
        kevo_run_device_rate(&v[idx], &per_min, &busy);
        if (ndev > 1)
            tn_line(prog, "%s (%s, %s, %s): %d %s in %.1f s, %.1f per minute, busy %.0f%%", e->dlabel[k],
                    v[idx].name, v[idx].host, v[idx].pci_bus, v[idx].evaluated, what, loop_s,
                    loop_s > 0 ? per_min : 0.0, loop_s > 0 ? 100.0 * busy : 0.0);
        st = kevo_db_run_devices_put(e->db, run->id, &v[idx], 1, err);
    }
    if (!st && ndev > 1)
        tn_line(prog, "%d GPUs: %d %s in %.1f s of search, %.1f per minute", ndev, total, what, loop_s,
                loop_s > 0 ? 60.0 * total / loop_s : 0.0);
    free(v);
    free(D);
    return st;
}

void tn_run_device(kevo_run_row *run, const kevo_gpu_info *info)
{
    snprintf(run->device, sizeof run->device, "%s", info->name);
    run->driver_version = info->driver_version;
    run->sm_count = info->sm_count;
    run->sm_clock_mhz = info->sm_clock_mhz;
    run->mem_clock_mhz = info->mem_clock_mhz;
    run->peak_tflops = info->peak_tflops;
    run->copy_tbps = info->copy_tbps;
}
