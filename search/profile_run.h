/* profile_run.h — run Nsight Compute on a stored candidate: `ncu --csv
 * --metrics ... --clock-control none --target-processes all KEVO verify
 * --db DB --candidate ID ...` (--kernel-name: the plan's entries) in a child process (an argv, no shell) with a
 * time limit, its output parsed (db/profile.h) and stored as the
 * candidate's "ncu.*" measurements.  ncu never changes the GPU's clocks
 * (--clock-control none). */
#ifndef KEVO_PROFILE_RUN_H
#define KEVO_PROFILE_RUN_H

#include <stdint.h>

#include "db/profile.h"
#include "kevo.h"

typedef struct kevo_profile_run_opts {
    const char *ncu;     /* ncu's path (kevo_profile_find_ncu) */
    const char *kevo;    /* the kevo executable ncu starts (verify) */
    const char *db_path; /* the DB verify reads and the figures go to */
    int64_t cand_id;
    const char *plan;    /* the candidate's launch plan JSON (DB text), NULL: none; its entries name the
                            kernels ncu profiles (--kernel-name), so the reference's are left out */
    int device;          /* verify's --device */
    double timeout_s;    /* ncu and everything it started are killed past it; <= 0: 600 */
} kevo_profile_run_opts;

/* ncu's path: given (as it is), else $KEVO_NCU, else the first executable
 * "ncu" of $PATH.  Errors: KEVO_ERR_NOT_FOUND saying where it looked. */
kevo_status kevo_profile_find_ncu(const char *given, char *out, size_t outsz, kevo_err *err);

/* Run ncu as above, parse its CSV into *out and store it in the DB (only
 * then; a lock on it is waited for, said through ctx's events and given up
 * when ctx is cancelled: kevo_db_open_ctx); a failure goes to ctx's error
 * buffer.  Errors: KEVO_ERR_IO (ncu could not start, was killed at the time
 * limit, or died), KEVO_ERR_UNSUPPORTED (ncu cannot read the performance
 * counters: ERR_NVGPUCTRPERM), KEVO_ERR_PARSE (no figures in its output),
 * the DB's. */
kevo_status kevo_profile_run(kevo_ctx *ctx, const kevo_profile_run_opts *o, kevo_profile *out);

#endif
