/* export.h — kevo export: a DB's winners as a self-contained C library
 * (header, C source with the cubins embedded and their launch plans compiled
 * to C, CMake package, pkg-config file, README).  The library needs only the
 * CUDA driver API. */
#ifndef KEVO_EXPORT_H
#define KEVO_EXPORT_H

#include "kevo.h"

typedef struct kevo_export_opts {
    const char *db_path;
    const char *out_dir;         /* created; files in it are overwritten */
    const char *op;              /* "ikbo_lce" */
    const char *archs;           /* comma list ("sm_90a,sm_80") or NULL: every arch the DB tuned */
    const char *name;            /* C identifier, prefix of every exported symbol */
    const char *data_dir;        /* templates/, kernels/, export/template/ */
    const char *extra_templates; /* or NULL */
    int top;                     /* fastest distinct configurations taken per run (default 3) */
} kevo_export_opts;

void kevo_export_opts_init(kevo_export_opts *o);

/* Write the library folder.  The same DB and options give the same bytes.
 * Errors: KEVO_ERR_ARG (bad name), KEVO_ERR_NOT_FOUND (no verified candidate
 * of the op and archs; a candidate whose family or cubin is missing),
 * KEVO_ERR_IO, KEVO_ERR_DB. */
kevo_status kevo_export(const kevo_export_opts *o, int *nkernels, int *ntuned, kevo_err *err);

#endif /* KEVO_EXPORT_H */
