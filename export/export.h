/* export.h — kevo export: a DB's winners as a self-contained C library
 * (header, C source with the cubins embedded and their launch plans compiled
 * to C, CMake package, pkg-config file, README).  The library links only
 * the CUDA driver API (and libdl): where a tuned shape dispatches to its
 * in-run peer's cuBLAS form, cuBLASLt is loaded at run time. */
#ifndef KEVO_EXPORT_H
#define KEVO_EXPORT_H

#include <stdbool.h>

#include "kevo.h"

typedef struct kevo_export_opts {
    const char *db_path;
    const char *out_dir;         /* created when absent; see kevo_export for what may be in it */
    const char *op;              /* an op's name; default: the table's first (kevo_op_list) */
    const char *archs;           /* comma list ("sm_90a,sm_80") or NULL: every arch the DB tuned */
    const char *families;        /* comma list of family names or fnmatch(3) patterns ("lce_ws,lce_m*"): only
                                    candidates of a family that matches one are taken; NULL: every family */
    const char *name;            /* C identifier, prefix of every exported symbol */
    const char *data_dir;        /* templates/, kernels/, export/template/ */
    const char *extra_templates; /* or NULL */
    int top;                     /* fastest distinct configurations taken per run (default 3) */
    bool force;                  /* write into a non-empty folder that is no earlier export of `name` */
    bool torch;                  /* also a Python package with the op as a PyTorch custom op (python/) */
} kevo_export_opts;

void kevo_export_opts_init(kevo_export_opts *o);

/* Whether name may name a library: a lower-case C identifier of at most 64
 * characters (a letter first, no "__", no '_' at the end) that clashes with
 * no C, POSIX or CUDA header (include/NAME.h would shadow it), no target
 * name CMake reserves (all, install, test, ...) and no name of kevo's or of
 * the generated code's own.  Errors: KEVO_ERR_ARG saying why. */
kevo_status kevo_export_check_name(const char *name, kevo_err *err);

/* Whether the library may name the Python package of `--torch`: not a
 * keyword, a module of Python's standard library or a well-known
 * distribution (pip, torchvision, ...), compared case-insensitively with
 * '-' as '_'.  Errors: KEVO_ERR_ARG saying why. */
kevo_status kevo_export_check_torch_name(const char *name, kevo_err *err);

/* Write the library folder.  The same DB and options give the same bytes.
 * out_dir must be new, empty, or an earlier export of the library `name`
 * (its kevo-export.json, written last, names the library and lists each
 * file with its SHA-256), unless force.  Whichever: a file export would
 * write that already exists must be one that manifest lists, unchanged
 * since, or hold the very bytes export would write; otherwise nothing is
 * written.  Files export did not write are never replaced or deleted.
 * Stored params must be configurations of their family's space file
 * (kevo_config_parse_stored); several runs at one shape, dtype and arch
 * give one tuned entry, the fastest measured.  A tuned shape where no
 * kernel beats the best in-run peer runs the fastest OK VENDOR peer's form
 * there when it is faster than kevo's best and its stored config passes
 * the op's strict parser (kevo_op_export.vendor_parse); the op's vendor
 * kernels are then compiled with NVRTC for that arch and dtype.  Otherwise
 * the shape returns UNSUPPORTED and a WARNING event says why.
 * Errors: KEVO_ERR_ARG (bad name), KEVO_ERR_NOT_FOUND (no verified candidate
 * of the op and archs; a candidate whose family or cubin is missing),
 * KEVO_ERR_PARSE (stored params or arch that are not valid, naming the
 * candidate and key), KEVO_ERR_IO (the folder holds files export would
 * replace, naming one), KEVO_ERR_NVRTC (the vendor kernels did not
 * compile), KEVO_ERR_DB. */
kevo_status kevo_export(kevo_ctx *ctx, const kevo_export_opts *o, int *nkernels, int *ntuned);

#endif /* KEVO_EXPORT_H */
