/* devset.c — a process's GPUs under one index, each group driven through
 * its kv_dev_ops row (devset.h). */
#include "evaluator/devset.h"

#include <string.h>

void kevo_devset_init(kevo_devset *s)
{
    memset(s, 0, sizeof *s);
}

/* Append a group of n GPUs driven by ops over impl. */
static kevo_status ds_add(kevo_devset *s, const kv_dev_ops *ops, void *impl, int n, kevo_err *err)
{
    if (n <= 0)
        return KEVO_OK;
    if (s->ngroups == KEVO_DEVSET_GROUPS || n > KEVO_DEVSET_MAX - s->n)
        return kevo_err_set(err, KEVO_ERR_ARG, "%d GPUs: a process drives at most %d", s->n + n, KEVO_DEVSET_MAX);
    kv_dev_group *grp = &s->group[s->ngroups];
    grp->ops = ops;
    grp->impl = impl;
    grp->first = s->n;
    grp->n = n;
    for (int k = s->n; k < s->n + n; k++)
        s->group_of[k] = (signed char)s->ngroups;
    s->ngroups++;
    s->n += n;
    return KEVO_OK;
}

kevo_status kevo_devset_add_workers(kevo_devset *s, kevo_gpu *const *g, int n, kevo_err *err)
{
    if (n > KEVO_DEVSET_MAX - s->ngpu)
        return kevo_err_set(err, KEVO_ERR_ARG, "%d GPUs: a process drives at most %d", s->n + n, KEVO_DEVSET_MAX);
    kevo_gpu **at = &s->gpu[s->ngpu];
    kevo_status st = ds_add(s, &kv_dev_workers, at, n, err);
    if (st || n <= 0)
        return st;
    memcpy(at, g, (size_t)n * sizeof *g);
    s->ngpu += n;
    return KEVO_OK;
}

kevo_status kevo_devset_add_mpi(kevo_devset *s, kevo_mpi *m, int n, kevo_err *err)
{
    return ds_add(s, &kv_dev_mpi, m, n, err);
}

/* GPU k's group (k in range). */
static const kv_dev_group *ds_group(const kevo_devset *s, int k)
{
    return &s->group[s->group_of[k]];
}

kevo_status kevo_devset_submit(kevo_devset *s, int k, const kevo_gpu_request *req, bool *taken, kevo_err *err)
{
    *taken = false;
    if (k < 0 || k >= s->n)
        return kevo_err_set(err, KEVO_ERR_ARG, "no GPU %d (the set has %d)", k, s->n);
    kv_dev_group *grp = &s->group[s->group_of[k]];
    return grp->ops->submit(grp, k - grp->first, req, taken, err);
}

kevo_status kevo_devset_wait(kevo_devset *s, const bool *busy, bool look, bool also, kevo_gpu_result *res,
                             kevo_devset_end_fn fn, void *ctx, kevo_err *err)
{
    bool gbusy[KEVO_DEVSET_GROUPS] = {false};
    for (int k = 0; k < s->n; k++)
        gbusy[s->group_of[k]] = gbusy[s->group_of[k]] || busy[k];
    for (int j = 0; j < s->ngroups; j++) {
        if (!gbusy[j])
            continue;
        kv_dev_group *grp = &s->group[j];
        bool others = also;
        for (int i = 0; i < s->ngroups; i++)
            others = others || (i != j && gbusy[i]);
        int which = -1;
        int64_t cand = 0;
        bool lost = false;
        kevo_status st = grp->ops->wait(grp, look ? 0 : others ? grp->ops->poll_s : grp->ops->idle_s, &which, &cand,
                                        &lost, res, err);
        if (st)
            return st;
        if (which >= 0)
            fn(ctx, grp->first + which, cand, lost, lost ? NULL : res);
    }
    return KEVO_OK;
}

bool kevo_devset_alive(const kevo_devset *s, int k)
{
    if (k < 0 || k >= s->n)
        return false;
    const kv_dev_group *grp = ds_group(s, k);
    return grp->ops->alive(grp, k - grp->first);
}

int kevo_devset_queued(const kevo_devset *s, int k)
{
    if (k < 0 || k >= s->n)
        return 0;
    const kv_dev_group *grp = ds_group(s, k);
    return grp->ops->queued(grp, k - grp->first);
}

int kevo_devset_depth(const kevo_devset *s, int k)
{
    return k < 0 || k >= s->n ? 0 : ds_group(s, k)->ops->depth;
}

void kevo_devset_stats(const kevo_devset *s, int k, int *evaluated, double *busy_s)
{
    *evaluated = 0;
    *busy_s = 0;
    if (k < 0 || k >= s->n)
        return;
    const kv_dev_group *grp = ds_group(s, k);
    grp->ops->stats(grp, k - grp->first, evaluated, busy_s);
}
