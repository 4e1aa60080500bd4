/* test_llm_client.c — the OpenAI-compatible client against a real HTTP
 * server on 127.0.0.1 (kevo_fake_llm, started per test with a script of
 * replies; ctest label llm).
 *
 * 1. A good reply: content, tokens, finish_reason, model, latency; the
 *    request holds the configured model, messages, temperature, seed (exact
 *    as an integer), max_tokens, and leaves out what is unset.
 * 2. Retries: 429 then 200 (2 attempts); Retry-After honoured and capped; a
 *    500 every time (max_retries + 1 attempts, "HTTP 500 after N attempts");
 *    a dropped connection retried; 400 and a redirect not retried.
 * 3. Bad replies: a timeout, finish_reason length (truncated), malformed
 *    JSON, binary junk (no control character reaches the error), no
 *    choices, an error document in a 200, an HTML 404 page, a body over the
 *    limit, a port nobody listens on.
 * 4. The key: sent as a Bearer header, never in an error, content or model
 *    even when the server echoes it (whole, or where an excerpt is cut);
 *    a key unfit for a header is refused without being quoted.
 * 5. The worker form: two calls overlap (wall time under twice one call), a
 *    failure crosses the pipe intact, cancel leaves no process, a killed
 *    worker is "LLM worker died (signal 9)".
 * 6. Interruption: the backoff wait, the transfer and kevo_llm_finish stop
 *    on SIGTERM once a handler cancels the config's kevo_ctx.
 * 7. Config checks.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "llm/client.h"
#include "testutil.h"
#include "util/util.h"

#define KEY "sk-test-SECRET"

static char tmpdir[64];
static int nserver; /* numbers each server's files */

typedef struct srv {
    pid_t pid;
    char url[64];
    char logdir[128];
} srv;

/* A file of tmpdir by name (for @file values in scripts). */
static void write_tmp(const char *name, const void *data, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    kevo_err err;
    assert_int_equal(kv_write_file(path, data, len, &err), KEVO_OK);
}

/* Start kevo_fake_llm with a script; its url is http://127.0.0.1:PORT/v1. */
static void srv_start(srv *s, const char *script)
{
    nserver++;
    char spath[256];
    snprintf(spath, sizeof spath, "%s/script-%d.txt", tmpdir, nserver);
    snprintf(s->logdir, sizeof s->logdir, "%s/log-%d", tmpdir, nserver);
    assert_int_equal(mkdir(s->logdir, 0700), 0);
    tu_write_text(spath, script);
    s->pid = tu_fake_llm_start(KEVO_FAKE_LLM, spath, s->logdir, tmpdir, s->url, sizeof s->url);
}

static void srv_stop(srv *s)
{
    tu_fake_llm_stop(s->pid);
}

/* Request n's body as the server logged it (caller frees), NULL if none. */
static char *srv_request(const srv *s, int n, const char *suffix)
{
    char path[256];
    snprintf(path, sizeof path, "%s/req-%03d.%s", s->logdir, n, suffix);
    char *t = NULL;
    size_t len;
    kevo_err err;
    if (kv_read_file(path, &t, &len, &err) != KEVO_OK)
        return NULL;
    return t;
}

static int srv_nrequests(const srv *s)
{
    int n = 0;
    for (;;) {
        char path[256];
        snprintf(path, sizeof path, "%s/req-%03d.headers", s->logdir, n + 1);
        struct stat st;
        if (stat(path, &st) != 0)
            return n;
        n++;
    }
}

/* A config for the fake server: short waits, no key unless a test sets one. */
static void cfg_for(kevo_llm_config *c, const srv *s)
{
    kevo_llm_config_init(c);
    c->url = s->url;
    c->backoff_s = 0.01;
    c->backoff_max_s = 0.05;
    c->connect_timeout_s = 5;
    c->total_timeout_s = 20;
}

static void chat(const kevo_llm_config *c, kevo_llm_reply *r)
{
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_llm_chat(c, "You write CUDA.", "Make it faster.", r, &err);
    if (st)
        print_error("kevo_llm_chat: %s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
}

static void assert_contains(const char *s, const char *sub)
{
    if (!s || !strstr(s, sub))
        fail_msg("'%s' does not contain '%s'", s ? s : "(null)", sub);
}

static void assert_starts(const char *s, const char *pre)
{
    if (!s || strncmp(s, pre, strlen(pre)) != 0)
        fail_msg("'%s' does not start with '%s'", s ? s : "(null)", pre);
}

/* Every byte printable (no control character, no line break). */
static void assert_clean(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            fail_msg("control byte 0x%02x in '%s'", *p, s);
}

/* ---- 1. a good reply and the request ---------------------------------- */

static void test_good_reply(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    const char *good = "```cuda\n__global__ void k(LceArgs a) { /* \"quoted\" \\ */ }\n```\n```plan\nentry k\n```\n";
    write_tmp("good.txt", good, strlen(good));
    srv s;
    srv_start(&s, "# a good reply, then defaults\n"
                  "status=200 finish=stop content=@good.txt tokens_in=123 tokens_out=45 model=qwen-fake\n"
                  "\n"
                  "status=200 content=\"two words\" usage=0\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    c.model = "coder-1";
    c.temperature = 0.25;
    c.seed = 4611686018427387905LL; /* 2^62 + 1: not a double */
    c.max_tokens = 300;
    kevo_llm_reply r;
    kevo_err err;
    const char *user = "parent source:\n__global__ void p() {}\n\"quotes\" and \\ and \t tabs, ünïcödé";
    assert_int_equal(kevo_llm_chat(&c, "SYSTEM PROMPT", user, &r, &err), KEVO_OK);
    assert_true(r.ok);
    assert_false(r.truncated);
    assert_string_equal(r.error, "");
    assert_string_equal(r.content, good);
    assert_string_equal(r.finish_reason, "stop");
    assert_string_equal(r.model, "qwen-fake");
    assert_int_equal(r.tokens_in, 123);
    assert_int_equal(r.tokens_out, 45);
    assert_int_equal(r.http_status, 200);
    assert_int_equal(r.attempts, 1);
    assert_true(r.latency_s > 0 && r.latency_s < 10);

    char *body = srv_request(&s, 1, "json");
    assert_non_null(body);
    assert_contains(body, "\"seed\":4611686018427387905");
    cJSON *req = cJSON_Parse(body);
    assert_non_null(req);
    assert_string_equal(cJSON_GetObjectItem(req, "model")->valuestring, "coder-1");
    assert_true(fabs(cJSON_GetObjectItem(req, "temperature")->valuedouble - 0.25) < 1e-12);
    assert_int_equal((int)cJSON_GetObjectItem(req, "max_tokens")->valuedouble, 300);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(req, "stream")));
    cJSON *msgs = cJSON_GetObjectItem(req, "messages");
    assert_int_equal(cJSON_GetArraySize(msgs), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "role")->valuestring, "system");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content")->valuestring, "SYSTEM PROMPT");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "role")->valuestring, "user");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content")->valuestring, user);
    cJSON_Delete(req);
    free(body);
    char *hdr = srv_request(&s, 1, "headers");
    assert_starts(hdr, "POST /v1/chat/completions HTTP/1.1\r\n");
    assert_contains(hdr, "Content-Type: application/json\r\n");
    assert_null(strstr(hdr, "Authorization"));
    assert_null(strstr(hdr, "Expect"));
    free(hdr);
    kevo_llm_reply_release(&r);
    assert_null(r.content);

    /* unset fields are left out; a trailing '/' on the url; no system message */
    char url[80];
    snprintf(url, sizeof url, "%s/", s.url);
    c.url = url;
    c.model = "";
    c.temperature = -1;
    c.seed = -1;
    c.max_tokens = 0;
    assert_int_equal(kevo_llm_chat(&c, NULL, "just this", &r, &err), KEVO_OK);
    assert_true(r.ok);
    assert_string_equal(r.content, "two words");
    assert_int_equal(r.tokens_in, -1);
    assert_int_equal(r.tokens_out, -1);
    kevo_llm_reply_release(&r);
    body = srv_request(&s, 2, "json");
    req = cJSON_Parse(body);
    assert_non_null(req);
    assert_null(cJSON_GetObjectItem(req, "model"));
    assert_null(cJSON_GetObjectItem(req, "temperature"));
    assert_null(cJSON_GetObjectItem(req, "seed"));
    assert_null(cJSON_GetObjectItem(req, "max_tokens"));
    msgs = cJSON_GetObjectItem(req, "messages");
    assert_int_equal(cJSON_GetArraySize(msgs), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content")->valuestring, "just this");
    cJSON_Delete(req);
    free(body);
    hdr = srv_request(&s, 2, "headers");
    assert_starts(hdr, "POST /v1/chat/completions HTTP/1.1\r\n");
    free(hdr);

    /* a prompt of 1.5 MiB goes out whole, without an Expect round trip */
    size_t big_len = 3 << 19;
    char *big = malloc(big_len + 1);
    assert_non_null(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (char)('a' + i % 26);
    big[big_len] = '\0';
    assert_int_equal(kevo_llm_chat(&c, NULL, big, &r, &err), KEVO_OK);
    assert_true(r.ok);
    assert_true(r.latency_s < 5);
    kevo_llm_reply_release(&r);
    body = srv_request(&s, 3, "json");
    req = cJSON_Parse(body);
    assert_non_null(req);
    msgs = cJSON_GetObjectItem(req, "messages");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content")->valuestring, big);
    cJSON_Delete(req);
    free(body);
    free(big);
    hdr = srv_request(&s, 3, "headers");
    assert_null(strstr(hdr, "Expect"));
    free(hdr);
    srv_stop(&s);
}

/* ---- 2. retries --------------------------------------------------------- */

static void test_retries(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    kevo_llm_config c;
    kevo_llm_reply r;
    srv s;

    /* 429 then 200 */
    srv_start(&s, "status=429\nstatus=200 content=fine\n");
    cfg_for(&c, &s);
    chat(&c, &r);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(r.http_status, 200);
    assert_string_equal(r.content, "fine");
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* Retry-After: 1 lengthens a 0.01 s backoff to 1 s */
    srv_start(&s, "status=429 retry_after=1\nstatus=200\n");
    cfg_for(&c, &s);
    c.backoff_max_s = 5;
    chat(&c, &r);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_true(r.latency_s >= 0.95);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* ... but never past backoff_max_s */
    srv_start(&s, "status=503 retry_after=100\nstatus=200\n");
    cfg_for(&c, &s);
    c.backoff_max_s = 0.1;
    chat(&c, &r);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_true(r.latency_s < 5);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* 500 every time: max_retries + 1 attempts, the body quoted */
    srv_start(&s, "status=500 body=oops type=text/plain\n");
    cfg_for(&c, &s);
    c.max_retries = 3;
    chat(&c, &r);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 4);
    assert_int_equal(r.http_status, 500);
    assert_string_equal(r.error, "HTTP 500 after 4 attempts: oops");
    assert_false(r.unreachable); /* a server answered */
    assert_null(r.content);
    assert_int_equal(srv_nrequests(&s), 4);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* a connection closed without an answer is tried again */
    srv_start(&s, "drop=1\nstatus=200 content=after-drop\n");
    cfg_for(&c, &s);
    chat(&c, &r);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_string_equal(r.content, "after-drop");
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* 400: not tried again; the server's message is quoted */
    srv_start(&s, "status=400\nstatus=200\n");
    cfg_for(&c, &s);
    chat(&c, &r);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.http_status, 400);
    assert_string_equal(r.error, "HTTP 400: fake error 400");
    assert_int_equal(srv_nrequests(&s), 1);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* a redirect is not followed */
    srv_start(&s, "status=302 body=\"moved\" type=text/plain\n");
    cfg_for(&c, &s);
    chat(&c, &r);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 1);
    assert_string_equal(r.error, "HTTP 302: moved");
    kevo_llm_reply_release(&r);
    srv_stop(&s);
}

/* ---- 3. bad replies ----------------------------------------------------- */

static void test_timeout(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    srv s;
    srv_start(&s, "delay_ms=5000 status=200 content=late\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    c.total_timeout_s = 1;
    kevo_llm_reply r;
    chat(&c, &r);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 1); /* the server took it: asking again costs as much */
    assert_int_equal(r.http_status, 0);
    assert_string_equal(r.error, "timeout after 1 s");
    assert_true(r.latency_s >= 0.9 && r.latency_s < 4);
    kevo_llm_reply_release(&r);
    srv_stop(&s);
}

static void test_truncated(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    const char *half = "```cuda\n__global__ void k(";
    write_tmp("half.txt", half, strlen(half));
    srv s;
    srv_start(&s, "status=200 finish=length content=@half.txt tokens_out=64\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    kevo_llm_reply r;
    chat(&c, &r);
    assert_false(r.ok);
    assert_true(r.truncated);
    assert_int_equal(r.attempts, 1);
    assert_string_equal(r.content, "```cuda\n__global__ void k(");
    assert_string_equal(r.finish_reason, "length");
    assert_string_equal(r.error, "reply truncated (finish_reason length, 64 tokens out)");
    kevo_llm_reply_release(&r);
    srv_stop(&s);
}

static void test_bad_bodies(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    const char junk[] = "{\"choices\": \x1b[2J\x00\x01\xff\xfe\r\n\x9b" "31m end";
    write_tmp("junk.bin", junk, sizeof junk - 1);
    const char *html = "<!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n<body>\n"
                       "<h1>Not Found</h1>\n<p>The requested URL was not found on this server.</p>\n</body></html>\n";
    write_tmp("404.html", html, strlen(html));
    srv s;
    srv_start(&s, "status=200 raw=\"{\\\"choices\\\": [ {\\\"message\\\": \"\n"
                  "status=200 raw=@junk.bin\n"
                  "status=200 raw=\"{\\\"id\\\":\\\"x\\\",\\\"object\\\":\\\"chat.completion\\\"}\"\n"
                  "status=200 raw=\"{\\\"choices\\\":[{\\\"message\\\":{\\\"content\\\":null}}]}\"\n"
                  "status=200 raw=\"{\\\"choices\\\":[]}\"\n"
                  "status=200 raw=\"[1,2,3]\"\n"
                  "status=200 raw=\"{\\\"error\\\":{\\\"message\\\":\\\"model overloaded\\\"}}\"\n"
                  "status=200 content=\"\"\n"
                  "status=404 type=text/html body=@404.html\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    kevo_llm_reply r;
    const char *want[] = {
        "malformed JSON reply",
        "malformed JSON reply",
        "reply has no choices[0].message.content",
        "reply has no choices[0].message.content",
        "reply has no choices[0].message.content",
        "reply is not a JSON object",
        "server error in a 200 reply: model overloaded",
        "reply content is empty",
        "HTTP 404: <!DOCTYPE html> <html> <head><title>404 Not Found</title>",
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(want); i++) {
        chat(&c, &r);
        assert_false(r.ok);
        assert_int_equal(r.attempts, 1);
        assert_starts(r.error, want[i]);
        assert_clean(r.error);
        assert_true(strlen(r.error) < 300);
        kevo_llm_reply_release(&r);
    }
    assert_int_equal(srv_nrequests(&s), (int)KV_ARRAY_LEN(want));
    srv_stop(&s);
}

static void test_limits_and_refused(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    char big[5000];
    memset(big, 'E', sizeof big);
    write_tmp("big.txt", big, sizeof big);
    srv s;
    srv_start(&s, "status=200 big=4096\nstatus=500 body=@big.txt\nstatus=200 big=700\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    c.max_reply_bytes = 1024;
    c.max_retries = 0;
    kevo_llm_reply r;
    chat(&c, &r);
    assert_false(r.ok);
    assert_string_equal(r.error, "reply body over the limit of 1024 bytes");
    assert_null(r.content);
    kevo_llm_reply_release(&r);
    chat(&c, &r); /* over the limit too, but the status speaks first */
    assert_false(r.ok);
    assert_int_equal(r.http_status, 500);
    assert_starts(r.error, "HTTP 500: EEEE");
    assert_true(strlen(r.error) < 220);
    kevo_llm_reply_release(&r);
    chat(&c, &r); /* under it */
    assert_true(r.ok);
    assert_int_equal(strlen(r.content), 700);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* a port bound but not listening: refused, tried again, then given up */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
    kevo_llm_config_init(&c);
    c.url = url;
    c.max_retries = 2;
    c.backoff_s = 0.01;
    chat(&c, &r);
    close(fd);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.http_status, 0);
    assert_starts(r.error, "connection refused after 3 attempts: ");
    assert_true(r.unreachable);
    assert_clean(r.error);
    kevo_llm_reply_release(&r);
}

/* ---- 4. the key --------------------------------------------------------- */

static void assert_no_key(const kevo_llm_reply *r)
{
    const char *fields[] = {r->error, r->content, r->model, r->finish_reason};
    for (size_t i = 0; i < KV_ARRAY_LEN(fields); i++)
        if (fields[i] && (strstr(fields[i], "SECRET") || strstr(fields[i], "sk-test")))
            fail_msg("the key in a reply: '%s'", fields[i]);
}

static void test_key(void **state)
{
    (void)state;
    setenv(KEVO_LLM_KEY_ENV, KEY, 1);
    char echo[400];
    snprintf(echo, sizeof echo, "bad key " KEY "\nsee https://example/keys?k=" KEY);
    write_tmp("echo.txt", echo, strlen(echo));
    char cut[400]; /* the key across the point where an error excerpt is cut */
    memset(cut, 'A', 195);
    snprintf(cut + 195, sizeof cut - 195, "%s tail", KEY);
    write_tmp("cut.txt", cut, strlen(cut));
    srv s;
    srv_start(&s, "status=200 content=ok\n"
                  "status=401 echo_auth=1\n"
                  "status=401 body=@echo.txt type=text/plain\n"
                  "status=400 body=@cut.txt type=text/plain\n"
                  "status=200 content=\"your key is " KEY "\" model=" KEY " finish=" KEY "\n"
                  "status=200 raw=\"{\\\"error\\\":\\\"" KEY "\\\"}\"\n"
                  "status=200 raw=\"not json " KEY "\"\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    kevo_llm_reply r;
    chat(&c, &r);
    assert_true(r.ok);
    char *hdr = srv_request(&s, 1, "headers");
    assert_contains(hdr, "\r\nAuthorization: Bearer " KEY "\r\n");
    free(hdr);
    kevo_llm_reply_release(&r);
    for (int i = 0; i < 6; i++) {
        chat(&c, &r);
        assert_no_key(&r);
        assert_clean(r.error);
        if (i < 3)
            assert_contains(r.error, i == 0 ? "HTTP 401: Incorrect API key provided: Bearer [redacted]"
                                     : i == 1 ? "HTTP 401: bad key [redacted] see https://example/keys?k=[redacted]"
                                              : "HTTP 400: AAAA");
        if (i == 3) {
            assert_true(r.ok);
            assert_string_equal(r.content, "your key is [redacted]");
            assert_string_equal(r.model, "[redacted]");
        }
        kevo_llm_reply_release(&r);
    }
    /* through the worker too */
    srv_stop(&s);
    srv_start(&s, "status=401 echo_auth=1\n");
    cfg_for(&c, &s);
    kevo_llm_call *call = NULL;
    kevo_err err;
    assert_int_equal(kevo_llm_start(&c, "s", "u", &call, &err), KEVO_OK);
    assert_int_equal(kevo_llm_finish(call, &r, &err), KEVO_OK);
    assert_starts(r.error, "HTTP 401: Incorrect API key provided: Bearer [redacted]");
    assert_no_key(&r);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* a key that would break the header line: refused, not quoted */
    setenv(KEVO_LLM_KEY_ENV, "sk-bad\r\nX-Evil: SECRET2", 1);
    kevo_llm_config_init(&c);
    c.url = "http://127.0.0.1:9/v1";
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    assert_null(strstr(err.msg, "SECRET2"));
    assert_contains(err.msg, KEVO_LLM_KEY_ENV);
    assert_int_equal(kevo_llm_chat(&c, NULL, "u", &r, &err), KEVO_ERR_ARG);
    assert_null(strstr(err.msg, "SECRET2"));
    unsetenv(KEVO_LLM_KEY_ENV);
}

/* ---- 5. the worker form ------------------------------------------------- */

/* Start a call; assert success. */
static kevo_llm_call *start(const kevo_llm_config *c)
{
    kevo_llm_call *call = NULL;
    kevo_err err;
    kevo_status st = kevo_llm_start(c, "sys", "user", &call, &err);
    if (st)
        print_error("kevo_llm_start: %s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    assert_non_null(call);
    assert_true(kevo_llm_fd(call) >= 0);
    return call;
}

static void finish(kevo_llm_call *call, kevo_llm_reply *r)
{
    kevo_err err;
    assert_int_equal(kevo_llm_finish(call, r, &err), KEVO_OK);
}

static bool process_gone(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD && kill(pid, 0) < 0 && errno == ESRCH;
}

static void test_worker(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    srv s;
    srv_start(&s, "delay_ms=500 status=200 content=worker-reply tokens_in=7 tokens_out=3\n");
    kevo_llm_config c;
    cfg_for(&c, &s);
    kevo_llm_reply r, r2;

    double t0 = kv_now();
    kevo_llm_call *one = start(&c);
    finish(one, &r);
    double t_one = kv_now() - t0;
    assert_true(r.ok);
    assert_string_equal(r.content, "worker-reply");
    assert_string_equal(r.finish_reason, "stop");
    assert_string_equal(r.model, "fake-model");
    assert_int_equal(r.tokens_in, 7);
    assert_int_equal(r.tokens_out, 3);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.http_status, 200);
    assert_true(r.latency_s >= 0.45);
    kevo_llm_reply_release(&r);

    /* two at once, polled: they overlap */
    t0 = kv_now();
    kevo_llm_call *a = start(&c), *b = start(&c);
    assert_false(kevo_llm_poll(a)); /* the server waits 500 ms: nothing yet, and poll did not block */
    bool da = false, db = false;
    while (!(da && db)) {
        struct pollfd p[2] = {{.fd = kevo_llm_fd(a), .events = POLLIN}, {.fd = kevo_llm_fd(b), .events = POLLIN}};
        assert_true(poll(p, 2, 10000) > 0);
        if (p[0].revents)
            da = kevo_llm_poll(a);
        if (p[1].revents)
            db = kevo_llm_poll(b);
        assert_true(kv_now() - t0 < 20);
    }
    finish(a, &r);
    finish(b, &r2);
    double t_two = kv_now() - t0;
    assert_true(r.ok && r2.ok);
    assert_string_equal(r.content, "worker-reply");
    assert_string_equal(r2.content, "worker-reply");
    if (!(t_two < 2 * t_one))
        fail_msg("two calls took %.3f s, one %.3f s", t_two, t_one);
    kevo_llm_reply_release(&r);
    kevo_llm_reply_release(&r2);

    /* cancel: the worker is killed and reaped */
    kevo_llm_call *x = start(&c);
    pid_t pid = kevo_llm_pid(x);
    assert_true(pid > 0);
    kevo_llm_cancel(x);
    assert_true(process_gone(pid));
    kevo_llm_cancel(NULL);

    /* a worker that dies */
    x = start(&c);
    pid = kevo_llm_pid(x);
    kill(pid, SIGKILL);
    finish(x, &r);
    assert_false(r.ok);
    assert_string_equal(r.error, "LLM worker died (signal 9)");
    assert_null(r.content);
    assert_true(process_gone(pid));
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* a failure crosses the pipe as it is */
    srv_start(&s, "status=500 body=oops type=text/plain\nstatus=500 body=oops\nstatus=200 big=3000000\n");
    cfg_for(&c, &s);
    c.max_retries = 1;
    x = start(&c);
    finish(x, &r);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(r.http_status, 500);
    assert_string_equal(r.error, "HTTP 500 after 2 attempts: oops");
    assert_int_equal(r.tokens_in, -1);
    kevo_llm_reply_release(&r);
    x = start(&c); /* 3 MB: many pipe reads */
    finish(x, &r);
    assert_true(r.ok);
    assert_int_equal(strlen(r.content), 3000000);
    assert_int_equal(strspn(r.content, "x"), 3000000);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* bad arguments are refused before any fork */
    kevo_err err;
    kevo_llm_call *none = (kevo_llm_call *)&err;
    assert_int_equal(kevo_llm_start(&c, "s", NULL, &none, &err), KEVO_ERR_ARG);
    assert_null(none);
    c.url = "ftp://x";
    assert_int_equal(kevo_llm_start(&c, "s", "u", &none, &err), KEVO_ERR_ARG);
    assert_null(none);
}

/* ---- 6. interruption ---------------------------------------------------- */

/* A child that sends SIGTERM to this process after ms. */
static pid_t signal_me_after(int ms)
{
    pid_t me = getpid();
    fflush(NULL);
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0) {
        tu_sleep_ms(ms);
        kill(me, SIGTERM);
        _exit(0);
    }
    return p;
}

/* SIGTERM cancels sig_ctx while catch_term's handler is on (the CLI's
 * handlers, cli/signals.c, in small). */
static kevo_ctx *sig_ctx;
static struct sigaction sig_old;

static void on_term(int sig)
{
    kevo_ctx_cancel(sig_ctx, sig);
}

static void catch_term(kevo_ctx *ctx)
{
    kevo_ctx_reset(ctx);
    sig_ctx = ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGTERM, &sa, &sig_old), 0);
}

static void restore_term(void)
{
    sigaction(SIGTERM, &sig_old, NULL);
    sig_ctx = NULL;
}

static void test_interrupt(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    srv s;
    kevo_llm_config c;
    kevo_llm_reply r;
    kevo_err err;
    kevo_ctx *ctx = kevo_ctx_new();
    assert_non_null(ctx);

    /* in a backoff wait */
    srv_start(&s, "status=500\n");
    cfg_for(&c, &s);
    c.max_retries = 100;
    c.backoff_s = 0.5;
    c.backoff_max_s = 0.5;
    c.cancel = kv_ctx_flag(ctx);
    catch_term(ctx);
    pid_t h = signal_me_after(300);
    assert_int_equal(kevo_llm_chat(&c, "s", "u", &r, &err), KEVO_ERR_INTERRUPTED);
    restore_term();
    assert_int_equal(kevo_ctx_cancelled(ctx), SIGTERM);
    assert_int_equal(tu_wait(h), 0);
    assert_false(r.ok);
    assert_string_equal(r.error, "interrupted");
    assert_true(r.latency_s < 3);
    assert_true(r.attempts < 10);
    kevo_llm_reply_release(&r);
    srv_stop(&s);

    /* in a transfer */
    srv_start(&s, "delay_ms=8000 status=200\n");
    cfg_for(&c, &s);
    c.cancel = kv_ctx_flag(ctx);
    catch_term(ctx);
    h = signal_me_after(300);
    assert_int_equal(kevo_llm_chat(&c, "s", "u", &r, &err), KEVO_ERR_INTERRUPTED);
    restore_term();
    assert_int_equal(tu_wait(h), 0);
    assert_string_equal(r.error, "interrupted");
    assert_true(r.latency_s < 4);
    kevo_llm_reply_release(&r);

    /* waiting for a worker */
    kevo_llm_call *x = start(&c);
    pid_t pid = kevo_llm_pid(x);
    catch_term(ctx);
    h = signal_me_after(300);
    double t0 = kv_now();
    assert_int_equal(kevo_llm_finish(x, &r, &err), KEVO_ERR_INTERRUPTED);
    restore_term();
    assert_int_equal(tu_wait(h), 0);
    assert_true(kv_now() - t0 < 4);
    assert_string_equal(r.error, "interrupted");
    assert_true(process_gone(pid));
    kevo_llm_reply_release(&r);
    srv_stop(&s);
    kevo_ctx_free(ctx);
}

/* ---- 7. config checks --------------------------------------------------- */

static void test_config(void **state)
{
    (void)state;
    unsetenv(KEVO_LLM_KEY_ENV);
    kevo_llm_config c;
    kevo_err err;
    kevo_llm_config_init(&c);
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG); /* no url */
    assert_contains(err.msg, "url");
    c.url = "https://api.example.com/v1";
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_OK);
    c.url = "HTTP://127.0.0.1:8080";
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_OK);
    const char *bad_urls[] = {"", "ftp://x/v1", "file:///etc/passwd", "http://", "http:///v1", "127.0.0.1:8080/v1",
                              "http://h/v1?x=1", "http://h/v1#f", "http://h /v1", "http://h/\nv1"};
    for (size_t i = 0; i < KV_ARRAY_LEN(bad_urls); i++) {
        c.url = bad_urls[i];
        if (kevo_llm_config_check(&c, &err) != KEVO_ERR_ARG)
            fail_msg("url '%s' accepted", bad_urls[i]);
        assert_clean(err.msg);
    }
    char longurl[3000];
    memset(longurl, 'a', sizeof longurl - 1);
    memcpy(longurl, "http://", 7);
    longurl[sizeof longurl - 1] = '\0';
    c.url = longurl;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);

    kevo_llm_config ok;
    kevo_llm_config_init(&ok);
    ok.url = "http://127.0.0.1:1/v1";
    c = ok;
    c.temperature = NAN;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.total_timeout_s = 0;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.connect_timeout_s = INFINITY;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.max_retries = 101;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.backoff_s = -1;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.max_reply_bytes = 10;
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    c = ok;
    c.model = "bad\nmodel";
    assert_int_equal(kevo_llm_config_check(&c, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_config_check(NULL, &err), KEVO_ERR_ARG);

    kevo_llm_reply r;
    assert_int_equal(kevo_llm_chat(&ok, "s", NULL, &r, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_llm_chat(&ok, "s", "u", NULL, &err), KEVO_ERR_ARG);
    kevo_llm_reply_release(NULL);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kevo-llm-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmpdir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_reply), cmocka_unit_test(test_retries),
        cmocka_unit_test(test_timeout),    cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_bodies), cmocka_unit_test(test_limits_and_refused),
        cmocka_unit_test(test_key),        cmocka_unit_test(test_worker),
        cmocka_unit_test(test_interrupt),  cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
