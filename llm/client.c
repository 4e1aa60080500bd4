/* client.c — OpenAI-compatible chat completions over libcurl, with cJSON for
 * the request and the reply.
 *
 * One call is a loop of attempts: POST the request, check the HTTP status,
 * then parse the body.  A 429, a 5xx or a failed connection is tried again
 * after a wait that doubles (backoff_s, 2 backoff_s, ..; a Retry-After header
 * lengthens it; backoff_max_s caps it); anything else ends the call.  Every
 * piece of server text that reaches the reply is scrubbed: the API key
 * replaced, control characters removed, cut short.
 *
 * The concurrent form forks a worker that makes the same call and writes the
 * reply as one JSON document to a pipe, then exits; the parent reads the pipe
 * without blocking and reaps the worker.  curl is initialised in the process
 * that uses it (the worker initialises its own) and kevo starts no threads, so
 * nothing of curl's or OpenSSL's state is shared across a fork.
 */
#define _POSIX_C_SOURCE 200809L
#include "llm/client.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"

#define LC_REDACTED "[redacted]"
#define LC_EXCERPT 200                 /* bytes of server text quoted in an error */
#define LC_KEY_MIN_CONTENT 8           /* shorter keys are redacted from errors only, not from replies */
#define LC_MAX_URL 2048
#define LC_MAX_KEY 8192
#define LC_MAX_NAME 256                /* model and finish_reason as stored */
#define LC_PIPE_LIMIT ((size_t)96 << 20) /* a worker's JSON document: the reply escaped, with room */
#define LC_WORKER_SLACK_S 60.0

/* ---- configuration ---------------------------------------------------- */

void kevo_llm_config_init(kevo_llm_config *c)
{
    memset(c, 0, sizeof *c);
    c->temperature = -1;
    c->seed = -1;
    c->connect_timeout_s = 10;
    c->total_timeout_s = 300;
    c->max_retries = 4;
    c->backoff_s = 1;
    c->backoff_max_s = 60;
    c->max_reply_bytes = KEVO_LLM_MAX_REPLY_BYTES;
}

/* The API key from the environment, or NULL when unset or empty. */
static const char *lc_key(void)
{
    const char *k = getenv(KEVO_LLM_KEY_ENV);
    return k && *k ? k : NULL;
}

static bool lc_seconds_ok(double s, double lo, double hi)
{
    return isfinite(s) && s >= lo && s <= hi;
}

kevo_status kevo_llm_url_check(const char *u, kevo_err *err)
{
    if (!u || !*u)
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url is not set");
    size_t ul = strlen(u);
    if (ul > LC_MAX_URL)
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url longer than %d bytes", LC_MAX_URL);
    for (size_t i = 0; i < ul; i++) {
        unsigned char ch = (unsigned char)u[i];
        if (ch <= 0x20 || ch >= 0x7f)
            return kevo_err_set(err, KEVO_ERR_ARG, "LLM url holds a space, a control or a non-ASCII character");
        if (ch == '?' || ch == '#')
            return kevo_err_set(err, KEVO_ERR_ARG,
                                "LLM url holds a query or a fragment ('?', '#'): give the API base alone");
    }
    size_t skip = strncasecmp(u, "http://", 7) == 0 ? 7 : strncasecmp(u, "https://", 8) == 0 ? 8 : 0;
    if (!skip)
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url must start with http:// or https://");
    if (u[skip] == '\0' || u[skip] == '/' || u[skip] == ':' || u[skip] == '@')
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url has no host");
    size_t auth = strcspn(u + skip, "/"); /* the authority: [user[:password]@]host[:port] */
    if (memchr(u + skip, '@', auth))
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url carries a user name or password ('user:pw@host'): kevo "
                            "refuses it; give the key through $%s", KEVO_LLM_KEY_ENV);
    if (memchr(u + skip, '\\', auth) || memchr(u + skip, '%', auth)) /* hosts a parser reads otherwise */
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM url holds a backslash or a %%-escape in its host part: give a "
                            "plain http(s)://host[:port]/path");
    return KEVO_OK;
}

kevo_status kevo_llm_config_check(const kevo_llm_config *c, kevo_err *err)
{
    if (!c)
        return kevo_err_set(err, KEVO_ERR_ARG, "no LLM config");
    kevo_status st = kevo_llm_url_check(c->url, err);
    if (st)
        return st;
    if (c->model) {
        size_t ml = strlen(c->model);
        if (ml > LC_MAX_NAME)
            return kevo_err_set(err, KEVO_ERR_ARG, "LLM model name longer than %d bytes", LC_MAX_NAME);
        for (size_t i = 0; i < ml; i++) {
            unsigned char ch = (unsigned char)c->model[i];
            if (ch < 0x20 || ch == 0x7f)
                return kevo_err_set(err, KEVO_ERR_ARG, "LLM model name holds a control character");
        }
    }
    if (isnan(c->temperature) || c->temperature > 100)
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM temperature must be a number from 0 to 100");
    if (!lc_seconds_ok(c->connect_timeout_s, 0.001, 86400))
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM connect timeout must be from 0.001 to 86400 s");
    if (!lc_seconds_ok(c->total_timeout_s, 0.001, 86400))
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM total timeout must be from 0.001 to 86400 s");
    if (c->max_retries < 0 || c->max_retries > 100)
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM retries must be from 0 to 100");
    if (!lc_seconds_ok(c->backoff_s, 0, 3600) || !lc_seconds_ok(c->backoff_max_s, 0, 86400))
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM backoff must be from 0 to 3600 s, its cap at most 86400 s");
    if (c->max_reply_bytes < 1024 || c->max_reply_bytes > ((size_t)1 << 30))
        return kevo_err_set(err, KEVO_ERR_ARG, "LLM reply limit must be from 1 KiB to 1 GiB");
    const char *k = lc_key();
    if (k) {
        size_t kl = strlen(k);
        if (kl > LC_MAX_KEY)
            return kevo_err_set(err, KEVO_ERR_ARG, "%s is longer than %d bytes", KEVO_LLM_KEY_ENV, LC_MAX_KEY);
        for (size_t i = 0; i < kl; i++)
            if ((unsigned char)k[i] <= 0x20 || (unsigned char)k[i] >= 0x7f)
                return kevo_err_set(err, KEVO_ERR_ARG, "%s holds a space, a control or a non-ASCII character",
                                    KEVO_LLM_KEY_ENV);
    }
    return KEVO_OK;
}

/* ---- replies ---------------------------------------------------------- */

void kevo_llm_reply_init(kevo_llm_reply *r)
{
    memset(r, 0, sizeof *r);
    r->tokens_in = r->tokens_out = -1;
}

void kevo_llm_reply_release(kevo_llm_reply *r)
{
    if (!r)
        return;
    free(r->content);
    free(r->finish_reason);
    free(r->model);
    kevo_llm_reply_init(r);
}

/* Replace every occurrence of key in s (NUL-terminated) by LC_REDACTED; a new
 * string (caller frees), NULL when out of memory. */
static char *lc_redact(const char *s, const char *key)
{
    kv_buf b;
    kv_buf_init(&b);
    size_t kl = key ? strlen(key) : 0;
    const char *p = s;
    if (kl) {
        for (const char *q; (q = strstr(p, key)) != NULL; p = q + kl)
            if (kv_buf_append(&b, p, (size_t)(q - p)) || kv_buf_puts(&b, LC_REDACTED)) {
                kv_buf_release(&b);
                return NULL;
            }
    }
    if (kv_buf_puts(&b, p)) {
        kv_buf_release(&b);
        return NULL;
    }
    return b.data ? kv_buf_take(&b) : kv_strdup("");
}

/* Server text made fit for an error message, into out[n]: n bytes of s (NUL
 * bytes read as spaces), the key redacted, control characters and broken
 * UTF-8 cleaned, runs of spaces folded, cut to at most max bytes on a
 * character boundary with "..." after a cut. */
static void lc_excerpt(const char *s, size_t len, size_t max, char *out, size_t n)
{
    out[0] = '\0';
    if (!s || !len || n < 8)
        return;
    size_t take = len < 4 * max + 64 ? len : 4 * max + 64; /* folding spaces shrinks it; the key may straddle */
    const char *key = lc_key();
    if (key && take < len) { /* keep an echoed key whole, so the redaction sees it */
        size_t kl = strlen(key);
        take = take + kl < len ? take + kl : len;
    }
    char *raw = malloc(take + 1);
    if (!raw)
        return;
    for (size_t i = 0; i < take; i++)
        raw[i] = s[i] ? s[i] : ' ';
    raw[take] = '\0';
    char *red = lc_redact(raw, key);
    free(raw);
    if (!red)
        return;
    kv_term_clean(red);
    size_t w = 0;
    for (size_t i = 0; red[i]; i++) /* fold runs of spaces, drop leading ones */
        if (red[i] != ' ' || (w > 0 && red[w - 1] != ' '))
            red[w++] = red[i];
    while (w > 0 && red[w - 1] == ' ')
        w--;
    red[w] = '\0';
    char *again = lc_redact(red, key); /* cleaning may have formed it ('?' for a bad byte) */
    free(red);
    if (!again)
        return;
    size_t al = strlen(again), lim = max < n - 4 ? max : n - 4;
    bool cut = al > lim || take < len;
    if (al > lim) {
        al = lim;
        while (al > 0 && ((unsigned char)again[al] & 0xC0) == 0x80) /* back to a character's first byte */
            al--;
    }
    snprintf(out, n, "%.*s%s", (int)al, again, cut ? "..." : "");
    free(again);
}

/* r->error = the formatted message, the key redacted (the final pass over
 * text that came from several places). */
static void lc_set_error(kevo_llm_reply *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void lc_set_error(kevo_llm_reply *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    char *red = lc_redact(r->error, lc_key());
    if (!red) {
        snprintf(r->error, sizeof r->error, "out of memory");
        return;
    }
    snprintf(r->error, sizeof r->error, "%s", red);
    free(red);
    kv_term_clean(r->error);
}

/* A copy of server text to keep in a reply field: the key redacted (when it
 * is long enough not to be a common word), optionally cleaned and cut to max
 * bytes (0: whole).  NULL when out of memory. */
static char *lc_keep(const char *s, bool clean, size_t max)
{
    const char *key = lc_key();
    char *t = (key && strlen(key) >= LC_KEY_MIN_CONTENT) ? lc_redact(s, key) : kv_strdup(s);
    if (!t)
        return NULL;
    if (clean)
        kv_term_clean(t);
    if (max && strlen(t) > max) {
        size_t l = max;
        while (l > 0 && ((unsigned char)t[l] & 0xC0) == 0x80)
            l--;
        t[l] = '\0';
    }
    return t;
}

/* ---- the request ------------------------------------------------------ */

/* The request body (caller frees with cJSON_free), NULL when out of memory. */
static char *lc_request_json(const kevo_llm_config *c, const char *system, const char *user)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *msgs = cJSON_CreateArray();
    bool ok = o && msgs;
    if (ok && c->model && *c->model)
        ok = cJSON_AddStringToObject(o, "model", c->model) != NULL;
    if (ok)
        cJSON_AddItemToObject(o, "messages", msgs);
    else
        cJSON_Delete(msgs);
    for (int i = 0; ok && i < 2; i++) {
        const char *text = i == 0 ? system : user;
        if (i == 0 && (!system || !*system))
            continue;
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(msgs, m); /* msgs owns m from here */
        ok = ok && cJSON_AddStringToObject(m, "role", i == 0 ? "system" : "user") &&
             cJSON_AddStringToObject(m, "content", text);
        if (!m)
            break;
    }
    if (ok && c->temperature >= 0)
        ok = cJSON_AddNumberToObject(o, "temperature", c->temperature) != NULL;
    if (ok && c->seed >= 0) { /* as an integer, exact beyond 2^53 */
        char num[32];
        snprintf(num, sizeof num, "%lld", (long long)c->seed);
        ok = cJSON_AddRawToObject(o, "seed", num) != NULL;
    }
    if (ok && c->max_tokens > 0)
        ok = cJSON_AddNumberToObject(o, "max_tokens", c->max_tokens) != NULL;
    if (ok && c->grammar)
        ok = cJSON_AddStringToObject(o, "grammar", c->grammar) != NULL;
    if (ok)
        ok = cJSON_AddFalseToObject(o, "stream") != NULL;
    char *s = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* ---- one call --------------------------------------------------------- */

typedef struct lc_sink {
    kv_buf body;
    size_t cap;
    bool over;  /* the body went past cap (what fits is kept) */
    bool nomem;
    kv_cancel *cancel; /* the caller's flag; NULL in a worker, which its parent kills instead */
} lc_sink;

static size_t lc_on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    lc_sink *k = ud;
    size_t n = size * nmemb;
    if (k->over)
        return 0;
    if (n > k->cap - k->body.len) {
        size_t fit = k->cap - k->body.len;
        if (kv_buf_append(&k->body, p, fit))
            k->nomem = true;
        k->over = true;
        return 0;
    }
    if (kv_buf_append(&k->body, p, n)) {
        k->nomem = true;
        return 0;
    }
    return n;
}

static int lc_on_progress(void *ud, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
    (void)dlt, (void)dln, (void)ult, (void)uln;
    const lc_sink *k = ud;
    return kv_cancelled(k->cancel) != 0;
}

/* Sleep s seconds in short steps; false when interrupted. */
static bool lc_sleep(double s, kv_cancel *cancel)
{
    double end = kv_now() + s;
    for (;;) {
        if (kv_cancelled(cancel))
            return false;
        double left = end - kv_now();
        if (left <= 0)
            return true;
        double step = left < 0.05 ? left : 0.05;
        struct timespec ts = {0, (long)(step * 1e9)};
        nanosleep(&ts, NULL);
    }
}

static bool lc_is_2xx(long st)
{
    return st >= 200 && st < 300;
}

/* The message a server put in an error body ({"error": {"message": ..}},
 * {"error": ".."}, {"message": ..} or {"detail": ..}), else the body. */
static void lc_error_excerpt(const kv_buf *body, char *out, size_t n)
{
    out[0] = '\0';
    if (!body->len)
        return;
    cJSON *doc = cJSON_ParseWithLength(body->data, body->len);
    const cJSON *msg = NULL;
    if (cJSON_IsObject(doc)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
        if (cJSON_IsObject(e))
            msg = cJSON_GetObjectItemCaseSensitive(e, "message");
        else if (cJSON_IsString(e))
            msg = e;
        if (!cJSON_IsString(msg))
            msg = cJSON_GetObjectItemCaseSensitive(doc, "message");
        if (!cJSON_IsString(msg))
            msg = cJSON_GetObjectItemCaseSensitive(doc, "detail");
    }
    if (cJSON_IsString(msg) && msg->valuestring[0])
        lc_excerpt(msg->valuestring, strlen(msg->valuestring), LC_EXCERPT, out, n);
    else
        lc_excerpt(body->data, body->len, LC_EXCERPT, out, n);
    cJSON_Delete(doc);
}

static int64_t lc_count(const cJSON *usage, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, name);
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > 9.0e15)
        return -1;
    return (int64_t)v->valuedouble;
}

/* Whether a JSON body holds a NUL character: a raw zero byte, or a \u0000
 * escape (one preceded by an odd run of backslashes: "\\u0000" is the
 * text \u0000).  cJSON would end the string there and the rest would be
 * lost without a word. */
static bool lc_has_nul(const kv_buf *body)
{
    if (memchr(body->data, '\0', body->len))
        return true;
    for (size_t i = 0; i + 6 <= body->len; i++) {
        if (body->data[i] != '\\' || (body->data[i + 1] != 'u' && body->data[i + 1] != 'U') ||
            strncmp(body->data + i + 2, "0000", 4) != 0)
            continue;
        size_t run = 1;
        while (run <= i && body->data[i - run] == '\\')
            run++;
        if (run % 2 == 1)
            return true;
    }
    return false;
}

/* Parse a 2xx body into r.  KEVO_ERR_NOMEM only; a bad reply is r->error. */
static kevo_status lc_parse_reply(const kv_buf *body, kevo_llm_reply *r)
{
    char ex[LC_EXCERPT + 8];
    if (!body->len) {
        lc_set_error(r, "empty reply body");
        return KEVO_OK;
    }
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(body->data, body->len, &end, false);
    if (!doc) {
        size_t at = end && end >= body->data && end <= body->data + body->len ? (size_t)(end - body->data) : 0;
        lc_excerpt(body->data, body->len, 120, ex, sizeof ex);
        lc_set_error(r, "malformed JSON reply (at byte %zu): %s", at, ex);
        return KEVO_OK;
    }
    kevo_status st = KEVO_OK;
    if (!cJSON_IsObject(doc)) {
        lc_set_error(r, "reply is not a JSON object");
        goto out;
    }
    if (lc_has_nul(body)) { /* cJSON ends a string at it: the rest would be lost without a word */
        lc_set_error(r, "reply holds a NUL character (\\u0000 or a zero byte): kevo takes no text with NUL bytes");
        goto out;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    if (e && !cJSON_IsNull(e)) {
        lc_error_excerpt(body, ex, sizeof ex);
        lc_set_error(r, "server error in a %d reply: %s", r->http_status, ex);
        goto out;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(doc, "model");
    if (cJSON_IsString(model) && !(r->model = lc_keep(model->valuestring, true, LC_MAX_NAME))) {
        st = KEVO_ERR_NOMEM;
        goto out;
    }
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
    if (cJSON_IsObject(usage)) {
        r->tokens_in = lc_count(usage, "prompt_tokens");
        r->tokens_out = lc_count(usage, "completion_tokens");
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *msg = cJSON_IsObject(c0) ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    const cJSON *content = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg, "content") : NULL;
    const cJSON *finish = cJSON_IsObject(c0) ? cJSON_GetObjectItemCaseSensitive(c0, "finish_reason") : NULL;
    if (cJSON_IsString(finish) && !(r->finish_reason = lc_keep(finish->valuestring, true, 64))) {
        st = KEVO_ERR_NOMEM;
        goto out;
    }
    if (cJSON_IsString(content) && !(r->content = lc_keep(content->valuestring, false, 0))) {
        st = KEVO_ERR_NOMEM;
        goto out;
    }
    if (r->finish_reason && strcmp(r->finish_reason, "length") == 0) {
        r->truncated = true;
        if (r->tokens_out >= 0)
            lc_set_error(r, "reply truncated (finish_reason length, %lld tokens out)", (long long)r->tokens_out);
        else
            lc_set_error(r, "reply truncated (finish_reason length)");
    } else if (!r->content) {
        lc_set_error(r, "reply has no choices[0].message.content");
    } else if (!r->content[0]) {
        lc_set_error(r, "reply content is empty");
    } else {
        r->ok = true;
    }
out:
    cJSON_Delete(doc);
    return st;
}

/* What one failed transfer means: the message (head, detail) and whether
 * to try again. */
typedef struct lc_outcome {
    char head[96];
    char detail[LC_EXCERPT + 8];
    bool retry;
    bool done;    /* a 2xx body to parse */
    bool no_peer; /* no server answered at the URL (refused, unresolved, the connection failed) */
} lc_outcome;

static void lc_classify(CURL *h, CURLcode res, const lc_sink *k, const char *errbuf, const kevo_llm_config *c,
                        lc_outcome *o)
{
    memset(o, 0, sizeof *o);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    bool got_status = status > 0 && (res == CURLE_OK || (res == CURLE_WRITE_ERROR && k->over));
    const char *eb = errbuf[0] ? errbuf : curl_easy_strerror(res);
    if (got_status && !lc_is_2xx(status)) { /* the status first: an HTML 404 page is "HTTP 404" */
        snprintf(o->head, sizeof o->head, "HTTP %ld", status);
        lc_error_excerpt(&k->body, o->detail, sizeof o->detail);
        o->retry = status == 429 || (status >= 500 && status <= 599);
    } else if (got_status && k->over) {
        snprintf(o->head, sizeof o->head, "reply body over the limit of %zu bytes", k->cap);
    } else if (got_status) {
        o->done = true;
    } else if (res == CURLE_OPERATION_TIMEDOUT) {
        long sent = 0;
        curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent);
        if (sent == 0) { /* the request never went out: as a refused connection, worth another try */
            snprintf(o->head, sizeof o->head, "connect timeout (%g s)", c->connect_timeout_s);
            o->retry = o->no_peer = true;
        } else { /* the server took the request and did not answer in time: asking again costs as much */
            snprintf(o->head, sizeof o->head, "timeout after %g s", c->total_timeout_s);
        }
    } else if (res == CURLE_COULDNT_CONNECT) {
        long oserr = 0;
        curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
        snprintf(o->head, sizeof o->head, "%s", oserr == ECONNREFUSED ? "connection refused" : "connection failed");
        lc_excerpt(eb, strlen(eb), LC_EXCERPT, o->detail, sizeof o->detail);
        o->retry = o->no_peer = true;
    } else if (res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY) {
        snprintf(o->head, sizeof o->head, "cannot resolve host");
        lc_excerpt(eb, strlen(eb), LC_EXCERPT, o->detail, sizeof o->detail);
        o->retry = o->no_peer = true;
    } else if (res == CURLE_SEND_ERROR || res == CURLE_RECV_ERROR || res == CURLE_GOT_NOTHING ||
               res == CURLE_PARTIAL_FILE || res == CURLE_SSL_CONNECT_ERROR || res == CURLE_HTTP2 ||
               res == CURLE_HTTP2_STREAM) {
        snprintf(o->head, sizeof o->head, "connection failed");
        lc_excerpt(eb, strlen(eb), LC_EXCERPT, o->detail, sizeof o->detail);
        o->retry = o->no_peer = true;
    } else {
        snprintf(o->head, sizeof o->head, "request failed (%s)", curl_easy_strerror(res));
        if (errbuf[0])
            lc_excerpt(errbuf, strlen(errbuf), LC_EXCERPT, o->detail, sizeof o->detail);
    }
}

static bool lc_curl_ready(void)
{
    static bool done = false;
    if (!done)
        done = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    return done;
}

/* The call behind kevo_llm_chat; cancel: the flag that stops it (NULL in a
 * worker, which its parent kills instead). */
static kevo_status lc_call(const kevo_llm_config *c, const char *system, const char *user, kevo_llm_reply *r,
                           kv_cancel *cancel, kevo_err *err)
{
    double t0 = kv_now();
    kevo_llm_reply_init(r);
    if (!user)
        return kevo_err_set(err, KEVO_ERR_ARG, "no user message for the LLM");
    kevo_status st = kevo_llm_config_check(c, err);
    if (st)
        return st;
    if (!lc_curl_ready())
        return kevo_err_set(err, KEVO_ERR_INTERNAL, "curl_global_init failed");

    char url[LC_MAX_URL + 32];
    size_t ul = strlen(c->url);
    if (c->url[ul - 1] == '/')
        ul--;
    snprintf(url, sizeof url, "%.*s/chat/completions", (int)ul, c->url);

    char *req = lc_request_json(c, system, user);
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL, *t = NULL;
    const char *fixed[] = {"Content-Type: application/json", "Accept: application/json", "Expect:"};
    bool ok = req && h;
    for (size_t i = 0; ok && i < KV_ARRAY_LEN(fixed); i++)
        ok = (t = curl_slist_append(hdr, fixed[i])) != NULL && (hdr = t);
    const char *key = lc_key();
    if (ok && key) {
        kv_buf auth;
        kv_buf_init(&auth);
        ok = kv_buf_printf(&auth, "Authorization: Bearer %s", key) == KEVO_OK &&
             (t = curl_slist_append(hdr, auth.data)) != NULL && (hdr = t);
        if (auth.data) /* the slist holds its own copy */
            memset(auth.data, 0, auth.cap);
        kv_buf_release(&auth);
    }
    if (!ok) {
        curl_slist_free_all(hdr);
        curl_easy_cleanup(h);
        cJSON_free(req);
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for an LLM request");
    }

    char errbuf[CURL_ERROR_SIZE];
    lc_sink k = {.cap = c->max_reply_bytes, .cancel = cancel};
    kv_buf_init(&k.body);
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500 /* 7.85 */
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect is an answer, never followed */
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, req);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(req));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "kevo/" KEVO_VERSION);
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, ""); /* the cap applies to the decoded body */
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ceil(c->connect_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)ceil(c->total_timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, lc_on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &k);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, lc_on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &k);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);

    /* no signals from curl (NOSIGNAL), and none from a peer that closes
     * its end: a write to it fails instead of killing kevo */
    struct sigaction ign, old_pipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);

    lc_outcome o;
    for (int attempt = 1;; attempt++) {
        r->attempts = attempt;
        k.body.len = 0;
        k.over = k.nomem = false;
        errbuf[0] = '\0';
        CURLcode res = curl_easy_perform(h);
        long status = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        r->http_status = (int)status;
        if (k.nomem) {
            st = kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for an LLM reply");
            break;
        }
        if (res == CURLE_ABORTED_BY_CALLBACK || kv_cancelled(cancel)) {
            lc_set_error(r, "interrupted");
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "LLM call interrupted");
            break;
        }
        lc_classify(h, res, &k, errbuf, c, &o);
        if (o.done) {
            st = lc_parse_reply(&k.body, r);
            if (st)
                kevo_err_set(err, st, "out of memory for an LLM reply");
            break;
        }
        if (!o.retry || attempt > c->max_retries) {
            char times[32] = "";
            if (attempt > 1)
                snprintf(times, sizeof times, " after %d attempts", attempt);
            lc_set_error(r, "%s%s%s%s", o.head, times, o.detail[0] ? ": " : "", o.detail);
            r->unreachable = o.no_peer;
            break;
        }
        double wait = c->backoff_s * ldexp(1.0, attempt - 1);
        curl_off_t after = -1;
        if (curl_easy_getinfo(h, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after > 0 && (double)after > wait)
            wait = (double)after;
        if (wait > c->backoff_max_s)
            wait = c->backoff_max_s;
        if (!lc_sleep(wait, cancel)) {
            lc_set_error(r, "interrupted");
            st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "LLM call interrupted");
            break;
        }
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    kv_buf_release(&k.body);
    curl_slist_free_all(hdr); /* the key's header line goes with it */
    curl_easy_cleanup(h);
    cJSON_free(req);
    r->latency_s = kv_now() - t0;
    if (st == KEVO_ERR_NOMEM) {
        kevo_llm_reply_release(r);
        r->latency_s = kv_now() - t0;
    }
    return st;
}

kevo_status kevo_llm_chat(const kevo_llm_config *c, const char *system, const char *user, kevo_llm_reply *r,
                          kevo_err *err)
{
    if (!r)
        return kevo_err_set(err, KEVO_ERR_ARG, "no reply to fill");
    return lc_call(c, system, user, r, c ? c->cancel : NULL, err);
}

/* ---- the worker ------------------------------------------------------- */

struct kevo_llm_call {
    pid_t pid;
    int fd;          /* read end of the worker's pipe, non-blocking */
    kv_buf in;       /* what came so far */
    bool eof;        /* the worker closed its end (or the pipe broke) */
    bool broken;     /* a read error or a document over LC_PIPE_LIMIT */
    double deadline; /* kv_now() past which the worker is killed */
    kv_cancel *cancel; /* the start's c->cancel: kevo_llm_finish stops waiting once it is raised */
};

static bool lc_put_str(cJSON *o, const char *name, const char *s)
{
    return cJSON_AddItemToObject(o, name, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

/* The worker's life: make the call, send the reply, exit.  Never returns. */
static void lc_worker(int fd, const kevo_llm_config *c, const char *system, const char *user)
{
    kevo_llm_reply r;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = lc_call(c, system, user, &r, NULL, &err);
    if (st) {
        kevo_llm_reply_release(&r);
        lc_set_error(&r, "%s", err.msg);
    }
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddBoolToObject(o, "ok", r.ok) && cJSON_AddBoolToObject(o, "truncated", r.truncated) &&
              cJSON_AddNumberToObject(o, "http_status", r.http_status) &&
              cJSON_AddNumberToObject(o, "attempts", r.attempts) &&
              cJSON_AddBoolToObject(o, "unreachable", r.unreachable) && lc_put_str(o, "content", r.content) &&
              lc_put_str(o, "finish_reason", r.finish_reason) && lc_put_str(o, "model", r.model) &&
              cJSON_AddNumberToObject(o, "tokens_in", (double)r.tokens_in) &&
              cJSON_AddNumberToObject(o, "tokens_out", (double)r.tokens_out) &&
              cJSON_AddNumberToObject(o, "latency_s", r.latency_s) && lc_put_str(o, "error", r.error);
    char *doc = ok ? cJSON_PrintUnformatted(o) : NULL;
    _exit(doc && kv_write_all(fd, doc, strlen(doc)) ? 0 : 3);
}

kevo_status kevo_llm_start(const kevo_llm_config *c, const char *system, const char *user, kevo_llm_call **out,
                           kevo_err *err)
{
    if (!out)
        return kevo_err_set(err, KEVO_ERR_ARG, "no call handle to fill");
    *out = NULL;
    if (!user)
        return kevo_err_set(err, KEVO_ERR_ARG, "no user message for the LLM");
    kevo_status st = kevo_llm_config_check(c, err);
    if (st)
        return st;
    kevo_llm_call *call = calloc(1, sizeof *call);
    if (!call)
        return kevo_err_set(err, KEVO_ERR_NOMEM, "out of memory for an LLM call");
    int fds[2];
    if (pipe(fds) != 0) {
        free(call);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to make a pipe for an LLM worker: %s", strerror(errno));
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        free(call);
        return kevo_err_set(err, KEVO_ERR_IO, "unable to start an LLM worker: %s", strerror(e));
    }
    if (pid == 0) {
        kv_child_init(parent);
        signal(SIGPIPE, SIG_IGN);
        close(fds[0]);
        lc_worker(fds[1], c, system, user);
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    call->pid = pid;
    call->fd = fds[0];
    call->cancel = c->cancel;
    kv_buf_init(&call->in);
    call->in.limit = LC_PIPE_LIMIT;
    int tries = c->max_retries + 1;
    call->deadline = kv_now() + tries * c->total_timeout_s + (tries - 1) * c->backoff_max_s + LC_WORKER_SLACK_S;
    *out = call;
    return KEVO_OK;
}

int kevo_llm_fd(const kevo_llm_call *call)
{
    return call ? call->fd : -1;
}

int kevo_llm_pid(const kevo_llm_call *call)
{
    return call ? (int)call->pid : -1;
}

bool kevo_llm_poll(kevo_llm_call *call)
{
    if (!call)
        return true;
    while (!call->eof) {
        char tmp[65536];
        ssize_t n = read(call->fd, tmp, sizeof tmp);
        if (n > 0) {
            if (kv_buf_append(&call->in, tmp, (size_t)n)) {
                call->broken = call->eof = true;
            }
        } else if (n == 0) {
            call->eof = true;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            return false;
        } else if (errno != EINTR) {
            call->broken = call->eof = true;
        }
    }
    return true;
}

static void lc_free_call(kevo_llm_call *call)
{
    if (call->fd >= 0)
        close(call->fd);
    kv_buf_release(&call->in);
    free(call);
}

/* Wait for the worker to end; its wait status. */
static int lc_reap(pid_t pid)
{
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
        ;
    return ws;
}

/* A string field of the worker's document into *dst (NULL stays NULL). */
static bool lc_get_str(const cJSON *o, const char *name, char **dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (cJSON_IsNull(v))
        return true;
    if (!cJSON_IsString(v))
        return false;
    return (*dst = kv_strdup(v->valuestring)) != NULL;
}

static double lc_get_num(const cJSON *o, const char *name, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

/* The worker's document into r; false when it is not one. */
static bool lc_decode(const kv_buf *in, kevo_llm_reply *r)
{
    if (!in->len)
        return false;
    cJSON *o = cJSON_ParseWithLength(in->data, in->len);
    const cJSON *okv = cJSON_GetObjectItemCaseSensitive(o, "ok");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(o, "error");
    bool good = cJSON_IsObject(o) && cJSON_IsBool(okv) && cJSON_IsString(err) &&
                lc_get_str(o, "content", &r->content) && lc_get_str(o, "finish_reason", &r->finish_reason) &&
                lc_get_str(o, "model", &r->model);
    if (good) {
        r->ok = cJSON_IsTrue(okv);
        r->truncated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "truncated"));
        r->unreachable = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "unreachable"));
        r->http_status = (int)lc_get_num(o, "http_status", 0);
        r->attempts = (int)lc_get_num(o, "attempts", 0);
        r->tokens_in = (int64_t)lc_get_num(o, "tokens_in", -1);
        r->tokens_out = (int64_t)lc_get_num(o, "tokens_out", -1);
        r->latency_s = lc_get_num(o, "latency_s", 0);
        snprintf(r->error, sizeof r->error, "%s", err->valuestring);
    }
    cJSON_Delete(o);
    return good;
}

kevo_status kevo_llm_finish(kevo_llm_call *call, kevo_llm_reply *r, kevo_err *err)
{
    if (!call || !r) {
        kevo_llm_cancel(call);
        return kevo_err_set(err, KEVO_ERR_ARG, "no LLM call or reply");
    }
    kevo_llm_reply_init(r);
    bool late = false, interrupted = false;
    while (!kevo_llm_poll(call)) {
        if (kv_cancelled(call->cancel)) {
            interrupted = true;
            break;
        }
        double left = call->deadline - kv_now();
        if (left <= 0) {
            late = true;
            break;
        }
        struct pollfd p = {.fd = call->fd, .events = POLLIN};
        poll(&p, 1, left > 0.2 ? 200 : (int)(left * 1000) + 1);
    }
    if (late || interrupted || call->broken)
        kill(call->pid, SIGKILL);
    int ws = lc_reap(call->pid);
    kevo_status st = KEVO_OK;
    if (interrupted) {
        lc_set_error(r, "interrupted");
        st = kevo_err_set(err, KEVO_ERR_INTERRUPTED, "LLM call interrupted");
    } else if (late) {
        lc_set_error(r, "LLM worker did not answer within its timeouts and %g s more", LC_WORKER_SLACK_S);
    } else if (call->broken) {
        lc_set_error(r, "LLM worker reply unreadable (over %zu bytes, or out of memory)", (size_t)LC_PIPE_LIMIT);
    } else if (WIFSIGNALED(ws)) {
        lc_set_error(r, "LLM worker died (signal %d)", WTERMSIG(ws));
    } else if (WIFEXITED(ws) && WEXITSTATUS(ws) != 0) {
        lc_set_error(r, "LLM worker exited with status %d", WEXITSTATUS(ws));
    } else if (!lc_decode(&call->in, r)) {
        kevo_llm_reply_release(r);
        lc_set_error(r, "LLM worker sent a malformed reply");
    }
    lc_free_call(call);
    return st;
}

void kevo_llm_cancel(kevo_llm_call *call)
{
    if (!call)
        return;
    kill(call->pid, SIGKILL);
    lc_reap(call->pid);
    lc_free_call(call);
}
