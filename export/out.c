/* out.c — the library's output folder (see out.h).  The folder is the
 * user's: export writes into a new or empty one, an earlier export of the
 * same library (kevo-export.json, written last, lists its files and their
 * SHA-256), or with --force beside other files, and never replaces a file
 * it did not write (xp_guard_out). */
#define _POSIX_C_SOURCE 200809L
#include "export/out.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Create a folder unless it is there. */
static kevo_status xp_mkdir(const char *path, kevo_err *err)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return kevo_err_set(err, KEVO_ERR_IO, "unable to create '%s': %s", path, strerror(errno));
    return KEVO_OK;
}

/* SHA-256 of a text as hex. */
static void xp_sha(const void *data, size_t len, char hex[65])
{
    const void *bufs[1] = {data ? data : ""};
    kv_sha256_hex(bufs, &len, 1, hex);
}

/* The manifest of an earlier export of library `name` in dir (parsed), or
 * NULL: none, unreadable, or another library's. */
static cJSON *xp_manifest_read(const char *dir, const char *name, bool *other)
{
    char path[PATH_MAX];
    struct stat sb;
    char *text = NULL;
    *other = false;
    snprintf(path, sizeof path, "%s/%s", dir, XP_MANIFEST);
    if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > (1 << 20) ||
        kv_read_file(path, &text, NULL, NULL) != KEVO_OK)
        return NULL;
    cJSON *m = cJSON_Parse(text);
    free(text);
    const cJSON *lib = cJSON_GetObjectItemCaseSensitive(m, "library");
    if (!cJSON_IsString(lib) || !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(m, "files"))) {
        cJSON_Delete(m);
        return NULL;
    }
    if (strcmp(lib->valuestring, name) != 0) {
        *other = true;
        cJSON_Delete(m);
        return NULL;
    }
    return m;
}

/* Whether the folder holds anything (a folder that cannot be read counts as full). */
static bool xp_dir_has_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return true;
    bool any = false;
    struct dirent *e;
    while (!any && (e = readdir(d)) != NULL)
        any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return any;
}

/* The folders of the library under its output folder, into dirs (each at
 * most 80 bytes); with the Python package (--torch) its three too.
 * Returns how many. */
static int xp_folders(const kevo_export_opts *o, char dirs[6][80])
{
    static const char *const fixed[] = {"include", "src", "cmake", "python", "python/csrc"};
    int n = o->torch ? 5 : 3;
    for (int i = 0; i < n; i++)
        snprintf(dirs[i], 80, "%s", fixed[i]);
    if (o->torch)
        snprintf(dirs[n++], 80, "python/%s", o->name);
    return n;
}

/* Decide, before anything is written, whether the library may be written
 * into o->out_dir: a new or empty folder, or an earlier export of this
 * library (its manifest names it), or with o->force any folder.  In every
 * case a file the export would write must be absent, identical to what it
 * would write, or listed in this library's manifest with the content it had
 * when kevo wrote it; anything else is the user's and is never replaced. */
static kevo_status xp_guard_out(const kevo_export_opts *o, const xp_file *files, int nfiles, cJSON **on_disk,
                                kevo_err *err)
{
    struct stat sb;
    *on_disk = NULL;
    const char *inputs[1] = {o->db_path};
    for (int i = 0; i < nfiles; i++) { /* an output never replaces an input: compared by device and inode */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", o->out_dir, files[i].rel);
        if (kv_file_among(path, inputs, 1) >= 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "'%s' is the DB export reads (--db '%s'): nothing written", path,
                                o->db_path);
    }
    if (kv_file_among(o->out_dir, inputs, 1) >= 0)
        return kevo_err_set(err, KEVO_ERR_ARG, "--out '%s' is the DB export reads: nothing written", o->out_dir);
    if (!(*on_disk = cJSON_CreateObject()))
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    if (stat(o->out_dir, &sb) != 0) {
        if (errno == ENOENT)
            return KEVO_OK; /* created */
        return kevo_err_set(err, KEVO_ERR_IO, "unable to use '%s': %s", o->out_dir, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode))
        return kevo_err_set(err, KEVO_ERR_IO, "--out '%s' exists and is not a folder", o->out_dir);
    if (!xp_dir_has_entries(o->out_dir))
        return KEVO_OK;
    bool other = false;
    cJSON *m = xp_manifest_read(o->out_dir, o->name, &other);
    if (!m && !o->force) {
        cJSON_Delete(*on_disk);
        *on_disk = NULL;
        return kevo_err_set(err, KEVO_ERR_IO,
                            "--out '%s' is not empty and is not an earlier export of library '%s'%s: nothing "
                            "written; give a new or empty folder, or --force to add the library beside what is "
                            "there (no existing file is replaced)",
                            o->out_dir, o->name,
                            other ? " (its " XP_MANIFEST " names another library)" : " (no " XP_MANIFEST " of it)");
    }
    const cJSON *listed = cJSON_GetObjectItemCaseSensitive(m, "files");
    kevo_status st = KEVO_OK;
    char dirs[6][80];
    int ndirs = xp_folders(o, dirs);
    for (int i = 0; i < ndirs && !st; i++) { /* a link to a folder elsewhere is never followed */
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", o->out_dir, dirs[i]);
        if (lstat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
            st = kevo_err_set(err, KEVO_ERR_IO, "'%s' exists and is not a folder%s: nothing written", path,
                              S_ISLNK(sb.st_mode) ? " (a symbolic link, which export does not follow)" : "");
    }
    for (int i = 0; i < nfiles && !st; i++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", o->out_dir, files[i].rel);
        if (lstat(path, &sb) != 0)
            continue; /* absent (or below a folder export creates) */
        if (!S_ISREG(sb.st_mode)) {
            st = kevo_err_set(err, KEVO_ERR_IO, "'%s' exists and is not a regular file: nothing written", path);
            break;
        }
        char *old = NULL;
        size_t len = 0;
        if ((st = kv_read_file(path, &old, &len, err)))
            break;
        char have[65], want[65];
        xp_sha(old, len, have);
        xp_sha(files[i].b->data, files[i].b->len, want);
        free(old);
        if (strcmp(files[i].rel, XP_MANIFEST) != 0 && !cJSON_AddStringToObject(*on_disk, files[i].rel, have)) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
            break;
        }
        /* what an earlier export of it wrote, or, where that one stopped part-way, would have written */
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(listed, files[i].rel);
        const cJSON *hp = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(m, "previous"),
                                                           files[i].rel);
        bool ours = strcmp(files[i].rel, XP_MANIFEST) == 0
                        ? m != NULL
                        : (cJSON_IsString(h) && strcmp(h->valuestring, have) == 0) ||
                              (cJSON_IsString(hp) && strcmp(hp->valuestring, have) == 0);
        if (strcmp(have, want) == 0 || ours)
            continue;
        st = cJSON_IsString(h)
                 ? kevo_err_set(err, KEVO_ERR_IO,
                                "'%s' changed since kevo exported it: nothing written; move it away (or delete it) "
                                "to export '%s' here again",
                                path, o->name)
                 : kevo_err_set(err, KEVO_ERR_IO,
                                "'%s' exists and kevo export did not write it: nothing written; move it away or "
                                "export into another folder",
                                path);
    }
    cJSON_Delete(m);
    if (st) {
        cJSON_Delete(*on_disk);
        *on_disk = NULL;
    }
    return st;
}

/* The manifest: the library's name and each file export wrote with its SHA-256. */
kevo_status xp_manifest(const char *name, const xp_file *files, int nfiles, const cJSON *prev, kv_buf *out,
                               kevo_err *err)
{
    cJSON *m = cJSON_CreateObject(), *f = cJSON_CreateObject();
    bool ok = m && f && cJSON_AddStringToObject(m, "kevo_export", "files kevo export wrote; it replaces only these") &&
              cJSON_AddStringToObject(m, "library", name);
    for (int i = 0; i < nfiles && ok; i++) {
        char hex[65];
        xp_sha(files[i].b->data, files[i].b->len, hex);
        ok = cJSON_AddStringToObject(f, files[i].rel, hex) != NULL;
    }
    if (ok)
        cJSON_AddItemToObject(m, "files", f);
    else
        cJSON_Delete(f);
    /* written before the files: what the earlier export left, each of which may still be there */
    cJSON *p = prev ? cJSON_Duplicate(prev, 1) : NULL;
    if (ok && prev && !(p && cJSON_AddItemToObject(m, "previous", p))) {
        cJSON_Delete(p);
        ok = false;
    }
    char *text = ok ? cJSON_Print(m) : NULL;
    cJSON_Delete(m);
    kevo_status st = text && !kv_buf_puts(out, text) && !kv_buf_puts(out, "\n")
                         ? KEVO_OK
                         : kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory");
    cJSON_free(text);
    return st;
}

/* Write files[0..nf] (files[nf] the final manifest) into o->out_dir once
 * xp_guard_out allows it: first a manifest naming both what is there and
 * what comes, then the folders, then each file, the final manifest last. */
kevo_status xp_write_out(const kevo_export_opts *o, const xp_file *files, int nf, kevo_err *err)
{
    char path[PATH_MAX];
    kevo_status st = KEVO_OK;
    for (int i = 0; i <= nf && !st; i++) /* never write to a cut path */
        if (strlen(o->out_dir) + 1 + strlen(files[i].rel) >= sizeof path)
            st = kevo_err_set(err, KEVO_ERR_ARG, "--out: the path of '%.100s...' is too long", o->out_dir);
    cJSON *on_disk = NULL;
    if (!st)
        st = xp_guard_out(o, files, nf + 1, &on_disk, err);
    /* the manifest first, naming both what is there and what comes: an export that stops part-way (a full
       disk) leaves a folder the next export recognises file by file; each file is replaced whole */
    kv_buf pending;
    kv_buf_init(&pending);
    if (!st)
        st = xp_manifest(o->name, files, nf, on_disk, &pending, err);
    cJSON_Delete(on_disk);
    if (!st)
        st = xp_mkdir(o->out_dir, err);
    if (!st) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, XP_MANIFEST);
        st = kv_write_file(path, pending.data, pending.len, err);
    }
    kv_buf_release(&pending);
    char dirs[6][80];
    int ndirs = xp_folders(o, dirs);
    for (int i = 0; i < ndirs && !st; i++) {
        snprintf(path, sizeof path, "%s/%s", o->out_dir, dirs[i]);
        st = xp_mkdir(path, err);
    }
    for (int i = 0; i <= nf && !st; i++) { /* the final manifest last */
        snprintf(path, sizeof path, "%s/%s", o->out_dir, files[i].rel);
        st = kv_write_file(path, files[i].b->data ? files[i].b->data : "", files[i].b->len, err);
    }
    return st;
}
