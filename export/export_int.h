/* export_int.h — what export.c (the library's kernels, tuned shapes and
 * files) and vendor.c (the vendor fallback of shapes no kernel won) share.
 * Private to export/. */
#ifndef KEVO_EXPORT_INT_H
#define KEVO_EXPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "db/store.h"
#include "export/export.h"
#include "core/op.h"
#include "core/verdict.h"
#include "templates/space.h"
#include "util/ctx.h"
#include "util/util.h"

/* One kernel of the library. */
typedef struct xp_kernel {
    const kevo_space *sp;
    kevo_config cfg;
    char *params;
    int dtype;
    char arch[16];
    int sm;
    void *cubin;
    size_t cubin_size;
    double ms, speedup;
    int64_t cand_id, run_id;
} xp_kernel;

/* One tuned shape: a run (and for a distribution run one of its shapes)
 * and the kernel of its best candidate there; kernel -1 when no candidate
 * beat the best in-run peer there: then vendor, the in-run peer's cuBLAS
 * form the library runs instead (an index into xp_state.v), or -1 and the
 * library returns UNSUPPORTED. */
typedef struct xp_tuned {
    kevo_run_row run;
    char shape_txt[256];
    kevo_syms shape;
    int dtype, sm, kernel, vendor;
    double ms, speedup, vs_peer; /* the run's best candidate there */
    double lib_ms;               /* what the library runs there: the vendor form's median, else ms */
} xp_tuned;

/* A vendor form the library runs at a tuned shape: a VENDOR peer's config,
 * parsed and checked by the op (kevo_op_export.vendor_parse). */
typedef struct xp_vendor {
    kevo_vendor_cfg cfg;
    int peer; /* index into the op's peers */
    int dtype, sm;
    char arch[16];
    double ms, kevo_ms; /* the peer's median there, and kevo's best */
    int64_t run_id;
    char shape_txt[256]; /* the op's canonical text of the shape */
} xp_vendor;

/* The op's vendor kernels (kevo_op_export.vendor_source) compiled for one
 * arch and dtype. */
typedef struct xp_vmod {
    char arch[16];
    int sm, dtype;
    void *cubin;
    size_t cubin_size;
} xp_vmod;

typedef struct xp_state {
    kevo_ctx *ctx; /* the caller's: events, cancel flag */
    const kevo_export_opts *o;
    const kevo_op *op;
    kevo_db *db;
    kevo_space **spaces;
    int nspaces;
    xp_kernel *k;
    int nk, kcap;
    xp_tuned *t;
    int nt, tcap;
    xp_vendor *v;
    int nv, vcap;
    xp_vmod *vm;
    int nvm;
} xp_state;

/* ---- pynames.c ---- */

/* Whether a Python package may not take name (`export --torch`): a
 * keyword, a module of Python's standard library or a well-known
 * distribution, compared case-insensitively with '-' as '_'. */
bool xp_py_name_taken(const char *name);

/* ---- vendor.c ---- */

/* A tuned shape where kevo's best (kevo_ms) does not beat the best in-run
 * peer (run's shape shape_idx, text shape_txt, storage dtype): the fastest
 * OK VENDOR peer there (device 0) becomes a vendor form of x (*vendor its
 * index) when it is faster than kevo's best and its config passes the op's
 * vendor_parse.  Where that form is slower than kevo's best (the peer that
 * wins is one the library cannot run, e.g. stage 0 on a pre-broadcast E),
 * *kernel_best: the kernel stays, the fastest the library can run, and a
 * warning says so.  Otherwise *vendor = -1 and an event (the run, the shape
 * and why) says the shape stays UNSUPPORTED.  Errors: KEVO_ERR_DB,
 * KEVO_ERR_ARG (a shape that does not parse), KEVO_ERR_NOMEM. */
kevo_status xp_vendor_for(xp_state *x, const kevo_run_row *run, int shape_idx, const char *shape_txt, int dtype,
                          double kevo_ms, int *vendor, bool *kernel_best, kevo_err *err);

/* Keep the vendor forms the tuned entries still name (after
 * xp_fastest_per_shape), in their order, renumbering xp_tuned.vendor. */
void xp_vendor_compact(xp_state *x);

/* Compile the op's vendor source with NVRTC (in child processes) after
 * kernels/ref.cuh for each arch and dtype of x's vendor forms, into x->vm.
 * Errors: KEVO_ERR_NVRTC naming the file, arch and dtype with the log;
 * KEVO_ERR_IO (the sources unreadable, no child process), KEVO_ERR_NOMEM. */
kevo_status xp_vendor_compile(xp_state *x, kevo_err *err);

/* The generated vendor tables (an op with vendor_source only): the forms'
 * and entries' names and numbers, the modules' cubins, x_vmods and
 * x_vendors.  Appended to b.  Errors: KEVO_ERR_ARG (a form or entry name
 * that is not an identifier). */
kevo_status xp_emit_vendors(kv_buf *b, const xp_state *x, kevo_err *err);

/* The README's kernel cell of a tuned entry that runs vendor form t->vendor. */
void xp_vendor_readme_cell(kv_buf *b, const xp_state *x, const xp_tuned *t);

/* Free x's vendor forms and modules. */
void xp_vendor_free(xp_state *x);

#endif /* KEVO_EXPORT_INT_H */
