/* vendor.c — ikbo_lce's vendor fallback as export sees it: the configs the
 * GPU worker stores with its VENDOR peers (gpu.c, lce_vendor_note), parsed
 * strictly (they are DB text: untrusted), and the names of the forms and of
 * the small kernels (vendor.cu) the exported library launches. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"

const char *const kevo_lce_vendor_forms[KEVO_LCE_VENDOR_FORMS] = {"decomposed", "beta1"};
const char *const kevo_lce_vendor_entries[KEVO_LCE_VENDOR_ENTRIES] = {"kv_gather_user", "kv_bcast_add"};

/* The GEMMs' roles in a config, in the order the library runs them. */
static const char *const lce_vendor_roles[2] = {"user", "cand"};

/* Largest cublaslt version a config may give: an integer a double holds exactly. */
#define LCE_VENDOR_VERSION_MAX 9007199254740992.0

/* The integer value of member `key` of obj into *out when it is a number
 * with an integral value in [lo, hi]; false otherwise. */
static bool lce_vendor_int(const cJSON *obj, const char *key, double lo, double hi, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble) ||
        v->valuedouble < lo || v->valuedouble > hi)
        return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

/* Members of a JSON object (or elements of an array). */
static int lce_vendor_count(const cJSON *c)
{
    int n = 0;
    for (const cJSON *e = c ? c->child : NULL; e; e = e->next)
        n++;
    return n;
}

/* 128 lowercase hex digits into the 64 bytes they spell; false on
 * anything else (another length, uppercase, another character). */
static bool lce_vendor_hex(const char *s, unsigned char out[KEVO_VENDOR_ALGO_BYTES])
{
    if (!s || strlen(s) != 2 * KEVO_VENDOR_ALGO_BYTES)
        return false;
    for (int i = 0; i < 2 * KEVO_VENDOR_ALGO_BYTES; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        if (i % 2 == 0)
            out[i / 2] = (unsigned char)(d << 4);
        else
            out[i / 2] |= (unsigned char)d;
    }
    return true;
}

/* The two GEMMs of a parsed config: exactly {"role":"user","algo":HEX}
 * then {"role":"cand","algo":HEX}.  Errors: KEVO_ERR_PARSE. */
static kevo_status lce_vendor_gemms(const cJSON *root, kevo_vendor_cfg *v, kevo_err *err)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "gemms");
    if (!cJSON_IsArray(g) || lce_vendor_count(g) != 2)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'gemms' is not an array of exactly two GEMMs (user, cand)");
    int i = 0;
    for (const cJSON *e = g->child; e; e = e->next, i++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(e, "role");
        const cJSON *algo = cJSON_GetObjectItemCaseSensitive(e, "algo");
        if (!cJSON_IsObject(e) || lce_vendor_count(e) != 2 || !cJSON_IsString(role) || !cJSON_IsString(algo))
            return kevo_err_set(err, KEVO_ERR_PARSE, "GEMM %d is not an object of a 'role' and an 'algo'", i);
        if (strcmp(role->valuestring, lce_vendor_roles[i]) != 0)
            return kevo_err_set(err, KEVO_ERR_PARSE, "GEMM %d's role is not '%s'", i, lce_vendor_roles[i]);
        if (!lce_vendor_hex(algo->valuestring, v->algo[i]))
            return kevo_err_set(err, KEVO_ERR_PARSE, "the algo of GEMM '%s' is not %d lowercase hex digits",
                                lce_vendor_roles[i], 2 * KEVO_VENDOR_ALGO_BYTES);
    }
    v->ngemms = 2;
    return KEVO_OK;
}

/* Every field of a parsed config but the GEMMs, checked against the shape's
 * padded K (kup, kcp).  Errors: KEVO_ERR_PARSE. */
static kevo_status lce_vendor_fields(const cJSON *root, int64_t kup, int64_t kcp, kevo_vendor_cfg *v, kevo_err *err)
{
    if (!cJSON_IsObject(root) || lce_vendor_count(root) != 6)
        return kevo_err_set(err, KEVO_ERR_PARSE,
                            "not an object of exactly form, kup, kcp, cublaslt, workspace and gemms");
    const cJSON *form = cJSON_GetObjectItemCaseSensitive(root, "form");
    v->form = -1;
    for (int i = 0; cJSON_IsString(form) && i < KEVO_LCE_VENDOR_FORMS; i++)
        if (strcmp(form->valuestring, kevo_lce_vendor_forms[i]) == 0)
            v->form = i;
    if (v->form < 0)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'form' is not one of ikbo_lce's vendor forms (decomposed, beta1)");
    int64_t k = 0, ver = 0, ws = 0;
    if (!lce_vendor_int(root, "kup", 1, 2147483647.0, &k) || k != kup)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'kup' is not Ku rounded up to 8 at the tuned shape (%" PRId64 ")",
                            kup);
    v->gemm_k[0] = k;
    if (!lce_vendor_int(root, "kcp", 1, 2147483647.0, &k) || k != kcp)
        return kevo_err_set(err, KEVO_ERR_PARSE, "'kcp' is not Kc rounded up to 8 at the tuned shape (%" PRId64 ")",
                            kcp);
    v->gemm_k[1] = k;
    if (!lce_vendor_int(root, "cublaslt", 1, LCE_VENDOR_VERSION_MAX, &ver))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'cublaslt' is not a positive integer (a cublasLtGetVersion())");
    if (!lce_vendor_int(root, "workspace", 0, (double)KEVO_VENDOR_WORKSPACE_MAX, &ws))
        return kevo_err_set(err, KEVO_ERR_PARSE, "'workspace' is not a byte count from 0 to 256 MiB");
    v->lib_version = (uint64_t)ver;
    v->workspace = (uint64_t)ws;
    return KEVO_OK;
}

size_t kevo_lce_vendor_text(const kevo_vendor_cfg *v, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    char algo[2][2 * KEVO_VENDOR_ALGO_BYTES + 1];
    for (int g = 0; g < 2; g++) {
        for (int i = 0; i < KEVO_VENDOR_ALGO_BYTES; i++) {
            algo[g][2 * i] = hex[v->algo[g][i] >> 4];
            algo[g][2 * i + 1] = hex[v->algo[g][i] & 15];
        }
        algo[g][2 * KEVO_VENDOR_ALGO_BYTES] = '\0';
    }
    const char *form = v->form >= 0 && v->form < KEVO_LCE_VENDOR_FORMS ? kevo_lce_vendor_forms[v->form] : "?";
    int len = snprintf(out, n,
                       "{\"form\":\"%s\",\"kup\":%" PRId64 ",\"kcp\":%" PRId64 ",\"cublaslt\":%" PRIu64
                       ",\"workspace\":%" PRIu64 ",\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},"
                       "{\"role\":\"cand\",\"algo\":\"%s\"}]}",
                       form, v->gemm_k[0], v->gemm_k[1], v->lib_version, v->workspace, algo[0], algo[1]);
    return len < 0 ? n : (size_t)len;
}

kevo_status kevo_lce_vendor_parse(const char *config, const kevo_syms *shape, kevo_vendor_cfg *out, kevo_err *err)
{
    int64_t kup = 0, kcp = 0;
    memset(out, 0, sizeof *out);
    if (!shape || !kevo_syms_get(shape, "Kup", &kup) || !kevo_syms_get(shape, "Kcp", &kcp))
        return kevo_err_set(err, KEVO_ERR_ARG, "no tuned shape to check the config against");
    if (!config || !*config)
        return kevo_err_set(err, KEVO_ERR_PARSE, "the config is empty");
    if (strlen(config) >= KEVO_PEER_CONFIG_MAX)
        return kevo_err_set(err, KEVO_ERR_PARSE, "the config is longer than %d bytes", KEVO_PEER_CONFIG_MAX - 1);
    cJSON *root = cJSON_ParseWithOpts(config, NULL, 1);
    if (!root)
        return kevo_err_set(err, KEVO_ERR_PARSE, "the config is not JSON");
    kevo_vendor_cfg v;
    memset(&v, 0, sizeof v);
    kevo_status st = lce_vendor_fields(root, kup, kcp, &v, err);
    if (!st)
        st = lce_vendor_gemms(root, &v, err);
    cJSON_Delete(root);
    if (st)
        return st;
    /* what the worker writes and nothing else: no white space, other key
     * order, duplicate key or other spelling of a number */
    char canon[KEVO_PEER_CONFIG_MAX];
    size_t len = kevo_lce_vendor_text(&v, canon, sizeof canon);
    if (len >= sizeof canon || strcmp(canon, config) != 0)
        return kevo_err_set(err, KEVO_ERR_PARSE,
                            "the config is not in the exact form the GPU worker writes (white space, key order, "
                            "a repeated key or a number's spelling differ)");
    *out = v;
    return KEVO_OK;
}
