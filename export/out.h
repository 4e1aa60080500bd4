/* out.h — the library's output folder (out.c): the manifest of what export
 * wrote, and the writes, which never replace a file export did not write.
 * Private to export/. */
#ifndef KEVO_EXPORT_OUT_H
#define KEVO_EXPORT_OUT_H

#include <cjson/cJSON.h>

#include "export/export.h"
#include "util/util.h"

/* The manifest export writes into the library's folder (see xp_write_out). */
#define XP_MANIFEST "kevo-export.json"

/* One file of the library: its path under the output folder and its text. */
typedef struct xp_file {
    char rel[160];
    const kv_buf *b;
} xp_file;

/* The manifest of files[0..nfiles): the library's name and each file with
 * its SHA-256, and (prev, may be NULL) what an earlier export left there,
 * appended to out as JSON.  KEVO_ERR_NOMEM. */
kevo_status xp_manifest(const char *name, const xp_file *files, int nfiles, const cJSON *prev, kv_buf *out,
                        kevo_err *err);

/* Write files[0..nf] (files[nf] the final manifest) into o->out_dir, once
 * nothing there would be lost: the folder is new or empty, or an earlier
 * export of this library (its manifest names it), or (o->force) any
 * folder; a file export would replace must be absent, identical, or as an
 * earlier export wrote it, and no output may be the DB read.  First a
 * manifest naming what is there and what comes, then the folders, then
 * each file, the final manifest last.  KEVO_ERR_ARG, KEVO_ERR_IO (nothing
 * written when refused), KEVO_ERR_NOMEM. */
kevo_status xp_write_out(const kevo_export_opts *o, const xp_file *files, int nf, kevo_err *err);

#endif /* KEVO_EXPORT_OUT_H */
