/* env.c — what a run (or a verification) works in: the op, its shape,
 * dtype and arch, its files and template families, the spaces the
 * generators added, its GPUs' configs and the peer figures it keeps. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "search/tune/tune_int.h"

void tn_env_release(tn_env *e)
{
    kevo_gpu_stop(e->gpu);
    e->gpu = NULL;
    for (int k = 1; k < KEVO_GPU_MAX_DEVICES; k++) {
        kevo_gpu_stop(e->dgpu[k]);
        e->dgpu[k] = NULL;
    }
    free(e->rgpu);
    e->rgpu = NULL;
    e->nrem = 0;
    for (int i = 0; i < KEVO_DIST_MAX; i++) {
        kevo_gpu_stop(e->xgpu[i]);
        e->xgpu[i] = NULL;
    }
    free(e->dist);
    e->dist = NULL;
    free(e->peers);
    e->peers = NULL;
    free(e->speers);
    e->speers = NULL;
    kevo_spaces_free(e->spaces, e->nspaces);
    e->spaces = NULL;
    kevo_spaces_free(e->added, e->nadded);
    e->added = NULL;
    e->nadded = e->added_cap = 0;
    free(e->abi);
    e->abi = NULL;
    kevo_db_close(e->db);
    e->db = NULL;
}

kevo_status tn_env_open(tn_env *e, const char *op, const char *shape, const char *dtype, const char *arch,
                        const char *data_dir, const char *extra_templates, kevo_err *err)
{
    memset(e, 0, sizeof *e);
    e->op = kevo_op_find(op);
    if (!e->op) {
        char known[256];
        kevo_op_names(known, sizeof known);
        return kevo_err_set(err, KEVO_ERR_NOT_FOUND, "unknown op '%s' (known: %s)", op, known);
    }
    e->ninputs = kevo_op_tensor_names(e->op, false, e->inputs, KEVO_OP_MAX_FIELDS);
    e->noutputs = kevo_op_tensor_names(e->op, true, e->outputs, KEVO_OP_MAX_FIELDS);
    kevo_status st = e->op->parse_shape(shape, &e->shape, err);
    if (st)
        return st;
    e->op->shape_str(&e->shape, e->shape_txt, sizeof e->shape_txt);
    if (!kevo_dtype_parse(dtype, &e->dt))
        return kevo_err_set(err, KEVO_ERR_ARG, "unknown dtype '%s' (fp16 or bf16)", dtype);
    if ((st = kevo_limits_for_arch(arch, &e->lim, err)))
        return st;
    snprintf(e->arch, sizeof e->arch, "%s", arch);
    if (strlen(data_dir) + 64 >= sizeof e->kernels_dir)
        return kevo_err_set(err, KEVO_ERR_ARG, "the data folder's path is longer than %zu characters",
                            sizeof e->kernels_dir - 64);
    char path[PATH_MAX + 64];
    snprintf(e->kernels_dir, sizeof e->kernels_dir, "%s/kernels", data_dir);
    snprintf(path, sizeof path, "%s/%s", e->kernels_dir, e->op->abi_header);
    if ((st = kv_read_file(path, &e->abi, NULL, err)))
        return st;
    snprintf(path, sizeof path, "%s/templates", data_dir);
    return kevo_spaces_load_dirs(path, extra_templates, e->op->name, &e->spaces, &e->nspaces, err);
}

kevo_status tn_db_not_input(const tn_env *e, const char *db, const kevo_gen_opts *gen, kevo_err *err)
{
    struct stat st;
    if (!db || stat(db, &st) != 0)
        return KEVO_OK; /* a new file is nobody's input */
    char path[PATH_MAX + 320];
    for (int i = 0; i < e->nspaces; i++) {
        const kevo_space *sp = e->spaces[i];
        char dir[PATH_MAX];
        kv_dirname(sp->path ? sp->path : "", dir, sizeof dir);
        snprintf(path, sizeof path, "%s/%s", dir, sp->source_name ? sp->source_name : "");
        if (kv_same_file(db, sp->path) || kv_same_file(db, path))
            return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is a file of template family %s: kevo never writes "
                                "over an input", db, sp->family);
    }
    snprintf(path, sizeof path, "%s/%s", e->kernels_dir, e->op->abi_header);
    if (kv_same_file(db, path))
        return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is the op's ABI header: kevo never writes over an input",
                            db);
    const char *what = kevo_gen_reads(gen, e->op->name, db);
    if (what)
        return kevo_err_set(err, KEVO_ERR_ARG, "--db '%s' is %s: kevo never writes over an input", db, what);
    return KEVO_OK;
}

bool tn_family_listed(const char *list, const char *family)
{
    if (!list)
        return true;
    char pat[80];
    snprintf(pat, sizeof pat, ",%s,", family);
    kv_buf l;
    kv_buf_init(&l);
    kv_buf_printf(&l, ",%s,", list);
    bool in = l.data && strstr(l.data, pat) != NULL;
    kv_buf_release(&l);
    return in;
}

kevo_status tn_select_families(tn_env *e, const char *list, bool quiet, bool strict, kevo_err *err)
{
    if (e->nspaces == 0)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED,
                            "op '%s' has no template family yet (no space file under templates/ names it)",
                            e->op->name);
    if (list && !*list)
        return kevo_err_set(err, KEVO_ERR_ARG, "--family: the list is empty (name at least one family)");
    if (list) {
        /* every name must exist */
        char *buf = kv_strdup(list);
        if (!buf)
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (!kevo_spaces_find(e->spaces, e->nspaces, tok)) {
                kevo_err_set(err, KEVO_ERR_ARG, "unknown template family '%.100s' for op '%s'", tok, e->op->name);
                free(buf);
                return KEVO_ERR_ARG;
            }
        free(buf);
    }
    for (int i = 0; strict && list && i < e->nspaces; i++) {
        const kevo_space *s = e->spaces[i];
        if (!tn_family_listed(list, s->family) || kevo_space_has_arch(s, e->arch))
            continue;
        kv_buf a;
        kv_buf_init(&a);
        for (int k = 0; k < s->narchs; k++)
            kv_buf_printf(&a, "%s%s", k ? ", " : "", s->archs[k]);
        kevo_err_set(err, KEVO_ERR_ARG, "--family %s does not target %s (it targets %s)", s->family, e->arch,
                     a.data ? a.data : "nothing");
        kv_buf_release(&a);
        return KEVO_ERR_ARG;
    }
    int kept = 0, for_arch = 0, listed = 0;
    kevo_err why;
    for (int i = 0; i < e->nspaces; i++) {
        kevo_space *s = e->spaces[i];
        bool keep = tn_family_listed(list, s->family);
        listed += keep;
        for_arch += keep && !kevo_space_has_arch(s, e->arch);
        if (keep && !kevo_space_has_arch(s, e->arch)) {
            if (!quiet)
                kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0, "family '%s' does not target %s; left out",
                        s->family, e->arch);
            keep = false;
        }
        for (int k = 0; keep && k < (e->dist ? e->dist->n : 1); k++)
            if (kevo_space_supports(s, e->dist ? &e->dist->shape[k] : &e->shape, &e->lim, e->dt, &why)) {
                if (!quiet)
                    kv_emit(e->on_event, e->event_ctx, KEVO_EVENT_WARNING, 0, "%s%s%s; left out", why.msg,
                            e->dist ? " at " : "", e->dist ? e->dist->text[k] : "");
                keep = false;
            }
        if (keep)
            e->spaces[kept++] = s;
        else
            kevo_space_free(s);
    }
    e->nspaces = kept;
    if (kept == 0 && strict && listed > 0 && for_arch == listed) /* the arch, not the shape */
        return kevo_err_set(err, KEVO_ERR_ARG, "no template family of op '%s' targets %s (--arch)", e->op->name,
                            e->arch);
    if (kept == 0)
        return kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "no template family of op '%s' supports %s at %s",
                            e->op->name, e->arch, e->shape_txt);
    return KEVO_OK;
}

bool tn_keep_space(tn_env *e, kevo_space *sp)
{
    if (e->nadded == e->added_cap) {
        int cap = e->added_cap ? 2 * e->added_cap : 16;
        kevo_space **a = realloc(e->added, (size_t)cap * sizeof *a);
        if (!a) {
            kevo_space_free(sp);
            return false;
        }
        e->added = a;
        e->added_cap = cap;
    }
    e->added[e->nadded++] = sp;
    return true;
}

kevo_status tn_space_of(tn_env *e, const kevo_cand_row *row, const kevo_space **out, kevo_err *err)
{
    *out = kevo_spaces_find(e->spaces, e->nspaces, row->family);
    if (*out)
        return KEVO_OK;
    *out = kevo_spaces_find(e->added, e->nadded, row->family);
    if (*out)
        return KEVO_OK;
    kevo_space *sp = NULL;
    kevo_status st = kevo_gen_restore(e->db, row, e->op, NULL, &sp, err);
    if (!st && sp && !tn_keep_space(e, sp))
        st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!st)
        *out = sp;
    return st;
}

/* ---- the devices and the peers a run keeps (accessors the candidate, device and
 * peer files share) ---- */

kevo_gpu_config tn_gpu_config(const tn_env *e, const tn_work *ref, const kevo_syms *shape, int device,
                              int warmup, int reps, double timeout, uint64_t seed, bool baseline,
                              bool ceilings)
{
    kevo_gpu_config gc;
    memset(&gc, 0, sizeof gc);
    gc.op = e->op;
    gc.shape = *shape;
    gc.dtype = e->dt;
    gc.device = device;
    gc.warmup = warmup;
    gc.reps = reps;
    gc.timeout_s = timeout;
    gc.seed = seed;
    gc.baseline = baseline;
    gc.ceilings = ceilings;
    gc.ref_cubin = ref->job.cubin;
    gc.ref_cubin_size = ref->job.cubin_size;
    gc.cancel = e->cancel;
    return gc;
}

kevo_gpu *tn_dgpu(const tn_env *e, int k)
{
    return k == 0 ? e->gpu : e->dgpu[k];
}

kevo_gpu *tn_shape_gpu(const tn_env *e, int i)
{
    return i == 0 ? e->gpu : e->xgpu[i];
}

const kevo_peer_set *tn_dev_peers(const tn_env *e, const kevo_run_row *run, int k, double *peak_tflops,
                                  double *copy_tbps)
{
    const kevo_gpu_info *in = &e->dinfo[k];
    bool own = k > 0 && kevo_peer_best(e->op, &in->peers, NULL) >= 0;
    *peak_tflops = k > 0 && in->peak_tflops > 0 ? in->peak_tflops : run->peak_tflops;
    *copy_tbps = k > 0 && in->copy_tbps > 0 ? in->copy_tbps : run->copy_tbps;
    return own ? &in->peers : &e->run_peers;
}

void tn_keep_peers(const kevo_op *op, kevo_peer_set *kept, const kevo_peer_set *measured)
{
    for (int i = 0; i < op->npeers && i < KEVO_MAX_PEERS; i++)
        if (kept->p[i].state == KEVO_PEER_UNMEASURED)
            kept->p[i] = measured->p[i];
}

kevo_status tn_alloc_shapes(tn_env *e, kevo_err *err)
{
    if (!e->peers && !(e->peers = calloc(KEVO_DIST_MAX, sizeof *e->peers)))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (!e->speers) {
        if (!(e->speers = malloc(KEVO_DIST_MAX * sizeof *e->speers)))
            return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
        for (int i = 0; i < KEVO_DIST_MAX; i++)
            kevo_peer_set_init(&e->speers[i]);
    }
    return KEVO_OK;
}
