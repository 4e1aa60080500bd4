/* client.h — a chat client for any OpenAI-compatible server (vLLM, llama.cpp's
 * server, Ollama, a hosted API): one blocking call, or the same call in a
 * worker process that the caller polls while compiles and GPU evaluations go
 * on.
 *
 * The request is POST <url>/chat/completions with a system and a user message;
 * the reply's choices[0].message.content is the text.  Failures of the server
 * (an HTTP error, a timeout, a truncated or malformed reply) are not errors of
 * the call: they fill a reply with ok = false and a reason, which the search
 * stores as a `gen_error` candidate.
 *
 * The API key is read from the environment variable KEVO_LLM_API_KEY alone and
 * sent as "Authorization: Bearer <key>".  It never enters a reply: where a
 * server echoes it back it is replaced by "[redacted]" (in the error always;
 * in content, model and finish_reason when the key has 8 bytes or more, so
 * that a toy key such as "x" does not mangle the code a reply holds).
 */
#ifndef KEVO_LLM_CLIENT_H
#define KEVO_LLM_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo.h"
#include "util/ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The environment variable that holds the API key (may be unset: servers on
 * a private network often need none). */
#define KEVO_LLM_KEY_ENV "KEVO_LLM_API_KEY"

/* Default cap on a reply body, bytes. */
#define KEVO_LLM_MAX_REPLY_BYTES ((size_t)8 << 20)

/* Where and how to ask.  The strings are borrowed: they must outlive every
 * call made with the config. */
typedef struct kevo_llm_config {
    const char *url;          /* API base, e.g. "http://127.0.0.1:8080/v1"; "/chat/completions" is appended (one
                                 trailing '/' tolerated).  http:// and https:// only */
    const char *model;        /* the "model" field; NULL or "": not sent (servers with one model ignore it) */
    double temperature;       /* < 0: not sent */
    int64_t seed;             /* < 0: not sent */
    int max_tokens;           /* <= 0: not sent */
    const char *grammar;      /* llama.cpp's "grammar" field (GBNF, llm/grammar.h); NULL: not sent */
    double connect_timeout_s; /* per attempt; default 10 */
    double total_timeout_s;   /* per attempt, connection included; default 300 */
    int max_retries;          /* retries after a 429, a 5xx or a connection failure; default 4 (5 attempts) */
    double backoff_s;         /* wait before retry k (k = 1, 2, ..) is backoff_s * 2^(k-1); default 1 */
    double backoff_max_s;     /* cap on one wait, Retry-After included; default 60 */
    size_t max_reply_bytes;   /* a longer reply body is an error; default KEVO_LLM_MAX_REPLY_BYTES */
    kv_cancel *cancel;        /* the caller's kevo_ctx flag (kv_ctx_flag): a call stops once it is raised;
                                 NULL (the default): never */
} kevo_llm_config;

/* Fill c with the defaults above (url NULL: it must be set). */
void kevo_llm_config_init(kevo_llm_config *c);

/* Check a config and the API key in the environment before any call: the url
 * (http:// or https://, a host, no spaces or control characters, at most
 * 2048 bytes), finite non-negative timeouts and backoffs within a day,
 * max_retries 0..100, a temperature that is a number, a model name of
 * printable characters, a key of printable ASCII without spaces (it goes into
 * a header).  KEVO_ERR_ARG with a message naming the field (never quoting the
 * key). */
kevo_status kevo_llm_config_check(const kevo_llm_config *c, kevo_err *err);

/* The url part of kevo_llm_config_check, for a caller that checks options
 * before it does anything else: http:// or https://, a host, no user or
 * password in it ("user:pw@host": credentials go only through
 * $KEVO_LLM_API_KEY, to the URL this invocation names), no query or
 * fragment, no spaces or control characters, at most 2048 bytes.
 * KEVO_ERR_ARG with a message that never quotes the url (it may hold a
 * password). */
kevo_status kevo_llm_url_check(const char *url, kevo_err *err);

/* The outcome of one call.  Strings are malloc'd and owned by the reply; free
 * them with kevo_llm_reply_release. */
typedef struct kevo_llm_reply {
    bool ok;                       /* a complete reply with non-empty content */
    bool truncated;                /* finish_reason "length": ok is false then (a truncated reply is not used), but
                                      content holds what came */
    bool unreachable;              /* the last attempt found no server at the URL (refused, unresolved, the
                                      connection failed or timed out before the request went out) */
    int http_status;               /* the last attempt's HTTP status; 0 when none came */
    int attempts;                  /* HTTP requests made (1 + retries) */
    char *content;                 /* the assistant message's text, or NULL */
    char *finish_reason;           /* as the server said it (cleaned for a terminal), or NULL */
    char *model;                   /* the model the server says it used (cleaned), or NULL */
    int64_t tokens_in, tokens_out; /* usage.prompt_tokens / completion_tokens; -1 when absent */
    double latency_s;              /* wall time of the whole call, retries and waits included */
    char error[512];               /* why not ok, one line: "HTTP 500 after 5 attempts: <excerpt>", "timeout after
                                      300 s", "malformed JSON reply: ...", "reply has no choices[0].message.content",
                                      "connection refused: ...", "interrupted"; "" when ok.  Never the key */
} kevo_llm_reply;

/* An empty reply (no strings, tokens -1). */
void kevo_llm_reply_init(kevo_llm_reply *r);

/* Free the reply's strings and leave it as kevo_llm_reply_init does.  r may
 * be NULL. */
void kevo_llm_reply_release(kevo_llm_reply *r);

/* Ask once (with retries), blocking: system (NULL or "": no system message)
 * and user messages.  r is overwritten (release it first if it held a reply)
 * and filled whatever the server did; its failure is in r->error.
 * Returns KEVO_OK whenever r was filled by a call that ran to its end;
 * KEVO_ERR_ARG for a bad config (kevo_llm_config_check) or a NULL user,
 * KEVO_ERR_NOMEM; KEVO_ERR_INTERRUPTED when c->cancel was raised
 * (the transfer and the backoff waits look), with r filled as well (ok false,
 * error "interrupted"). */
kevo_status kevo_llm_chat(const kevo_llm_config *c, const char *system, const char *user, kevo_llm_reply *r,
                          kevo_err *err);

/* A call running in a worker process: the child (which dies with kevo) makes
 * the blocking call and writes the reply back over a pipe as one JSON
 * document; the parent polls its end. */
typedef struct kevo_llm_call kevo_llm_call;

/* Start a call as kevo_llm_chat would make it; *out receives the handle
 * (finish or cancel it exactly once).  Errors: KEVO_ERR_ARG (the config or
 * user, checked here), KEVO_ERR_IO (no pipe or fork), KEVO_ERR_NOMEM. */
kevo_status kevo_llm_start(const kevo_llm_config *c, const char *system, const char *user, kevo_llm_call **out,
                           kevo_err *err);

/* The file descriptor to poll() for POLLIN: readable while the reply comes
 * and at its end (EOF, or POLLHUP).  Valid until finish or cancel. */
int kevo_llm_fd(const kevo_llm_call *call);

/* Read what the worker has sent, without blocking; true once the whole reply
 * (or the worker's end) has come, so that kevo_llm_finish will not wait. */
bool kevo_llm_poll(kevo_llm_call *call);

/* Wait for the reply if needed, reap the worker, fill r (overwritten, as in
 * kevo_llm_chat) and free the call.  A worker that died fills r with ok
 * false and "LLM worker died (signal N)"; one that outlives every timeout of
 * its config by a minute is killed ("LLM worker did not answer ...").
 * Returns KEVO_OK when r was filled; KEVO_ERR_INTERRUPTED when the start's
 * c->cancel was raised while waiting (the worker is killed, r says
 * "interrupted"); KEVO_ERR_NOMEM.  call is freed in every case. */
kevo_status kevo_llm_finish(kevo_llm_call *call, kevo_llm_reply *r, kevo_err *err);

/* Kill the worker, reap it and free the call.  call may be NULL. */
void kevo_llm_cancel(kevo_llm_call *call);

/* The worker's process id (for tests and diagnostics). */
int kevo_llm_pid(const kevo_llm_call *call);

#ifdef __cplusplus
}
#endif
#endif /* KEVO_LLM_CLIENT_H */
