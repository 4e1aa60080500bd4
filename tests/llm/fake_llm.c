/* fake_llm.c — kevo_fake_llm, a loopback OpenAI-compatible server for the
 * tests: a real HTTP/1.1 server on 127.0.0.1 that answers every request
 * (any path, any method) with the next line of a script.
 *
 *   kevo_fake_llm --script S [--port N] [--port-file F] [--log DIR]
 *                 [--max-requests N] [--loop] [--match]
 *
 * --port 0 (the default) takes any free port; --port-file F receives the
 * port as decimal text once the server listens (written whole, by rename).
 * Request n (1, 2, .. in the order connections are accepted) gets script line
 * n; when the lines run out the last one repeats, or with --loop the script
 * starts again.  With --match the server plays a model that reads its
 * prompt: request n gets the first line not yet used whose when=TEXT occurs
 * in the request's body (a line without when= matches every request); when
 * every matching line was used, the last of them repeats (the script
 * tests/fixtures/llm/competent/script.txt is such a model).  --log DIR writes request n's body to DIR/req-NNN.json and
 * its request line and headers to DIR/req-NNN.headers (NNN = n, 3 digits or
 * more), before any delay.  The server stops on SIGTERM or SIGINT, or once
 * --max-requests connections were served (it waits for their answers).
 * Each connection is answered by a child process (so that delayed answers
 * overlap), with "Connection: close".
 *
 * Script: one reply per line; blank lines and lines starting with '#' are
 * skipped.  A line is words key=value; a value is a bare word, a quoted
 * string ("..", with \" \\ \n \t \r), or @FILE (the file's bytes; a relative
 * path is read from the script's folder).  Keys:
 *   status=N        HTTP status (default 200)
 *   content=V       the assistant message; the server wraps it in a
 *                   chat.completion document with usage (default "hello")
 *   big=N           content of N bytes of 'x' instead
 *   finish=V        choices[0].finish_reason (default stop; null: JSON null)
 *   model=V         the "model" the reply names (default fake-model)
 *   tokens_in=N, tokens_out=N   usage figures (default: request bytes / 4,
 *                   content bytes / 4 + 1); usage=0 leaves usage out
 *   body=V, raw=V   the body sent as it is, instead of a chat.completion
 *                   (default for a status other than 200: an OpenAI-style
 *                   {"error": {"message": "fake error N", ...}})
 *   echo_auth=1     the body is an error document whose message quotes the
 *                   request's Authorization header
 *   type=V          Content-Type (default application/json)
 *   retry_after=N   a Retry-After: N header
 *   delay_ms=N      wait N ms after reading the request, before answering
 *   drop=1          close the connection without an answer
 *   when=V          --match: the line answers only a request whose body holds V
 *                   (as the JSON body spells it: a newline is \n there)
 */
#define _GNU_SOURCE
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#define FL_MAX_HEADERS (64 << 10)
#define FL_MAX_BODY ((size_t)64 << 20)
#define FL_MAX_FILE ((size_t)256 << 20)

typedef struct fl_line {
    int status;
    char *content;
    long big; /* -1: none */
    char *finish; /* NULL: JSON null */
    char *model;
    long tokens_in, tokens_out; /* -1: computed */
    bool usage;
    char *body; size_t body_len; bool has_body;
    bool echo_auth;
    char *type;
    int retry_after; /* -1: none */
    int delay_ms;
    bool drop;
    char *when; /* --match: NULL matches every request */
    bool used;
} fl_line;

static volatile sig_atomic_t fl_stop;

static void fl_on_signal(int sig)
{
    (void)sig;
    fl_stop = 1;
}

static void fl_die(const char *fmt, const char *arg)
{
    fprintf(stderr, "kevo_fake_llm: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

/* A whole file (NUL added; *len without it), or NULL. */
static char *fl_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= FL_MAX_FILE) {
            free(b);
            b = NULL;
            break;
        }
        char *nb = realloc(b, cap * 2 + 1);
        if (!nb) {
            free(b);
            b = NULL;
            break;
        }
        b = nb;
        cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!b || bad) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    *len = n;
    return b;
}

/* The next word of a script line at *p: key=value with value bare, quoted or
 * @file.  Returns false at the end of the line. */
static bool fl_word(const char **p, const char *dir, char *key, size_t kn, char **val, size_t *vlen)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s || *s == '\n' || *s == '\r')
        return false;
    size_t k = 0;
    while (*s && *s != '=' && *s != ' ' && *s != '\t' && *s != '\n' && k + 1 < kn)
        key[k++] = *s++;
    key[k] = '\0';
    if (*s != '=')
        fl_die("script word '%s' is not key=value", key);
    s++;
    char *v = NULL;
    size_t n = 0;
    if (*s == '"') {
        v = malloc(strlen(s) + 1);
        if (!v)
            fl_die("out of memory%s", "");
        for (s++; *s && *s != '"'; s++) {
            char ch = *s;
            if (ch == '\\' && s[1]) {
                s++;
                ch = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
            }
            v[n++] = ch;
        }
        if (*s != '"')
            fl_die("unterminated quoted value for '%s'", key);
        s++;
        v[n] = '\0';
    } else {
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t' && *e != '\n' && *e != '\r')
            e++;
        n = (size_t)(e - s);
        v = strndup(s, n);
        if (!v)
            fl_die("out of memory%s", "");
        s = e;
        if (v[0] == '@') {
            char path[8200];
            if (v[1] == '/')
                snprintf(path, sizeof path, "%s", v + 1);
            else
                snprintf(path, sizeof path, "%s/%s", dir, v + 1);
            char *f = fl_read_file(path, &n);
            if (!f)
                fl_die("cannot read '%s'", path);
            free(v);
            v = f;
        }
    }
    *p = s;
    *val = v;
    *vlen = n;
    return true;
}

static long fl_num(const char *key, const char *v)
{
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < 0)
        fl_die("'%s' needs a non-negative number", key);
    return x;
}

static void fl_parse_line(const char *text, const char *dir, fl_line *l)
{
    memset(l, 0, sizeof *l);
    l->status = 200;
    l->big = l->tokens_in = l->tokens_out = l->retry_after = -1;
    l->usage = true;
    l->finish = strdup("stop");
    l->model = strdup("fake-model");
    l->type = strdup("application/json");
    char key[64], *v;
    size_t vn;
    const char *p = text;
    while (fl_word(&p, dir, key, sizeof key, &v, &vn)) {
        bool keep = false;
        if (!strcmp(key, "status"))
            l->status = (int)fl_num(key, v);
        else if (!strcmp(key, "content"))
            free(l->content), l->content = v, keep = true;
        else if (!strcmp(key, "big"))
            l->big = fl_num(key, v);
        else if (!strcmp(key, "finish")) {
            free(l->finish);
            l->finish = strcmp(v, "null") ? v : NULL;
            keep = l->finish != NULL;
        } else if (!strcmp(key, "model"))
            free(l->model), l->model = v, keep = true;
        else if (!strcmp(key, "tokens_in"))
            l->tokens_in = fl_num(key, v);
        else if (!strcmp(key, "tokens_out"))
            l->tokens_out = fl_num(key, v);
        else if (!strcmp(key, "usage"))
            l->usage = fl_num(key, v) != 0;
        else if (!strcmp(key, "body") || !strcmp(key, "raw")) {
            free(l->body);
            l->body = v, l->body_len = vn, l->has_body = true, keep = true;
        } else if (!strcmp(key, "echo_auth"))
            l->echo_auth = fl_num(key, v) != 0;
        else if (!strcmp(key, "type"))
            free(l->type), l->type = v, keep = true;
        else if (!strcmp(key, "retry_after"))
            l->retry_after = (int)fl_num(key, v);
        else if (!strcmp(key, "delay_ms"))
            l->delay_ms = (int)fl_num(key, v);
        else if (!strcmp(key, "drop"))
            l->drop = fl_num(key, v) != 0;
        else if (!strcmp(key, "when"))
            free(l->when), l->when = v, keep = true;
        else
            fl_die("unknown script key '%s'", key);
        if (!keep)
            free(v);
    }
    if (!l->content && l->big < 0)
        l->content = strdup("hello");
}

static void fl_free_line(fl_line *l)
{
    free(l->content);
    free(l->finish);
    free(l->model);
    free(l->body);
    free(l->type);
    free(l->when);
}

static bool fl_send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static const char *fl_reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
    }
}

/* The value of header name in the header block (a copy), or NULL. */
static char *fl_header(const char *hdrs, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = strstr(hdrs, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
        const char *h = p + 2;
        if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
            const char *v = h + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            const char *e = strstr(v, "\r\n");
            return strndup(v, e ? (size_t)(e - v) : strlen(v));
        }
    }
    return NULL;
}

static void fl_write_log(const char *dir, int n, const char *suffix, const char *data, size_t len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/req-%03d.%s", dir, n, suffix);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(data, 1, len, f);
    fclose(f);
}

/* The body of a scripted reply (caller frees). */
static char *fl_reply_body(const fl_line *l, const char *auth, size_t req_len, size_t *len)
{
    if (l->echo_auth) {
        char *msg = NULL;
        if (asprintf(&msg, "Incorrect API key provided: %s", auth ? auth : "(none)") < 0)
            return NULL;
        cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "type", "invalid_request_error");
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        free(msg);
        *len = s ? strlen(s) : 0;
        return s;
    }
    if (l->has_body) {
        char *s = malloc(l->body_len + 1);
        if (s) {
            memcpy(s, l->body, l->body_len);
            s[l->body_len] = '\0';
        }
        *len = l->body_len;
        return s;
    }
    cJSON *o = cJSON_CreateObject();
    if (l->status != 200) {
        char msg[64];
        snprintf(msg, sizeof msg, "fake error %d", l->status);
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddStringToObject(e, "message", msg);
        cJSON_AddStringToObject(e, "type", "fake");
    } else {
        char *big = NULL;
        if (l->big >= 0) {
            big = malloc((size_t)l->big + 1);
            if (!big)
                return NULL;
            memset(big, 'x', (size_t)l->big);
            big[l->big] = '\0';
        }
        const char *content = big ? big : l->content;
        cJSON_AddStringToObject(o, "id", "chatcmpl-fake");
        cJSON_AddStringToObject(o, "object", "chat.completion");
        cJSON_AddNumberToObject(o, "created", 0);
        cJSON_AddStringToObject(o, "model", l->model);
        cJSON *ch = cJSON_AddArrayToObject(o, "choices"), *c0 = cJSON_CreateObject();
        cJSON_AddItemToArray(ch, c0);
        cJSON_AddNumberToObject(c0, "index", 0);
        cJSON *m = cJSON_AddObjectToObject(c0, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", content);
        if (l->finish)
            cJSON_AddStringToObject(c0, "finish_reason", l->finish);
        else
            cJSON_AddNullToObject(c0, "finish_reason");
        if (l->usage) {
            long tin = l->tokens_in >= 0 ? l->tokens_in : (long)(req_len / 4);
            long tout = l->tokens_out >= 0 ? l->tokens_out : (long)(strlen(content) / 4 + 1);
            cJSON *u = cJSON_AddObjectToObject(o, "usage");
            cJSON_AddNumberToObject(u, "prompt_tokens", (double)tin);
            cJSON_AddNumberToObject(u, "completion_tokens", (double)tout);
            cJSON_AddNumberToObject(u, "total_tokens", (double)(tin + tout));
        }
        free(big);
    }
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    *len = s ? strlen(s) : 0;
    return s;
}

/* A request read from a connection: its body and Authorization header
 * (both malloc'd, may be NULL). */
typedef struct fl_req {
    char *body, *auth;
    size_t len;
} fl_req;

/* Read request n from fd (logged under logdir); false when it never came whole. */
static bool fl_read_request(int fd, int n, const char *logdir, fl_req *q)
{
    memset(q, 0, sizeof *q);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char *buf = malloc(FL_MAX_HEADERS + 1);
    size_t got = 0;
    char *end = NULL;
    while (buf && got < FL_MAX_HEADERS) {
        ssize_t r = recv(fd, buf + got, FL_MAX_HEADERS - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
        if ((end = strstr(buf, "\r\n\r\n")) != NULL)
            break;
    }
    if (!end) {
        free(buf);
        return false;
    }
    size_t hlen = (size_t)(end - buf) + 4;
    end[2] = '\0'; /* headers end with one CRLF */
    char *cl = fl_header(buf, "Content-Length");
    size_t want = cl ? strtoull(cl, NULL, 10) : 0;
    free(cl);
    if (want > FL_MAX_BODY)
        want = FL_MAX_BODY;
    char *expect = fl_header(buf, "Expect");
    if (expect && strncasecmp(expect, "100-continue", 12) == 0)
        fl_send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    free(expect);
    char *auth = fl_header(buf, "Authorization");
    char *body = malloc(want + 1);
    size_t have = got - hlen < want ? got - hlen : want;
    if (body) {
        memcpy(body, buf + hlen, have);
        while (have < want) {
            ssize_t r = recv(fd, body + have, want - have, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            have += (size_t)r;
        }
        body[have] = '\0';
    }
    if (logdir) {
        fl_write_log(logdir, n, "headers", buf, strlen(buf));
        if (body)
            fl_write_log(logdir, n, "json", body, have);
    }
    free(buf);
    q->body = body;
    q->auth = auth;
    q->len = have;
    return true;
}

/* Answer a request read from fd with line l. */
static void fl_answer(int fd, const fl_line *l, const fl_req *q)
{
    const char *auth = q->auth;
    size_t have = q->len;
    if (!l->drop) {
        if (l->delay_ms > 0) {
            struct timespec ts = {l->delay_ms / 1000, (long)(l->delay_ms % 1000) * 1000000L};
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
        }
        size_t rlen = 0;
        char *reply = fl_reply_body(l, auth, have, &rlen);
        char head[512], ra[48] = "";
        if (l->retry_after >= 0)
            snprintf(ra, sizeof ra, "Retry-After: %d\r\n", l->retry_after);
        int hn = snprintf(head, sizeof head,
                          "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
                          l->status, fl_reason(l->status), l->type, rlen, ra);
        if (hn > 0 && (size_t)hn < sizeof head && fl_send_all(fd, head, (size_t)hn) && reply)
            fl_send_all(fd, reply, rlen);
        free(reply);
        shutdown(fd, SHUT_WR);
        char sink[256];
        while (recv(fd, sink, sizeof sink, 0) > 0) /* let the client close first: no RST */
            ;
    }
}

/* --match: the line that answers body (see the header). */
static long fl_pick(fl_line *lines, int nlines, const char *body)
{
    long last = -1;
    for (int i = 0; i < nlines; i++) {
        if (lines[i].when && !(body && strstr(body, lines[i].when)))
            continue;
        if (!lines[i].used) {
            lines[i].used = true;
            return i;
        }
        last = i;
    }
    return last >= 0 ? last : nlines - 1;
}

int main(int argc, char **argv)
{
    const char *script = NULL, *port_file = NULL, *logdir = NULL;
    long port = 0, max_requests = 0;
    bool loop = false, match = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--loop")) {
            loop = true;
            continue;
        }
        if (!strcmp(a, "--match")) {
            match = true;
            continue;
        }
        if (!v)
            fl_die("'%s' needs a value (or is unknown)", a);
        if (!strcmp(a, "--script"))
            script = v;
        else if (!strcmp(a, "--port-file"))
            port_file = v;
        else if (!strcmp(a, "--log"))
            logdir = v;
        else if (!strcmp(a, "--port"))
            port = fl_num(a, v);
        else if (!strcmp(a, "--max-requests"))
            max_requests = fl_num(a, v);
        else
            fl_die("unknown option '%s'", a);
        i++;
    }
    if (!script)
        fl_die("%s", "usage: kevo_fake_llm --script S [--port N] [--port-file F] [--log DIR] [--max-requests N] "
                     "[--loop] [--match]");
    size_t slen = 0;
    char *text = fl_read_file(script, &slen);
    if (!text)
        fl_die("cannot read script '%s'", script);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", script);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    fl_line *lines = NULL;
    int nlines = 0;
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl)
            *nl = '\0';
        const char *q = p;
        while (*q == ' ' || *q == '\t')
            q++;
        if (*q && *q != '#' && *q != '\r') {
            fl_line *nlp = realloc(lines, sizeof *lines * (size_t)(nlines + 1));
            if (!nlp)
                fl_die("out of memory%s", "");
            lines = nlp;
            fl_parse_line(q, dir, &lines[nlines++]);
        }
        p = nl ? nl + 1 : NULL;
    }
    free(text);
    if (nlines == 0)
        fl_die("script '%s' has no reply line", script);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fl_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(ls, 64) != 0)
        fl_die("cannot listen on 127.0.0.1: %s", strerror(errno));
    socklen_t al = sizeof addr;
    getsockname(ls, (struct sockaddr *)&addr, &al);
    if (port_file) {
        char tmp[4200], num[16];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        int w = snprintf(num, sizeof num, "%d\n", ntohs(addr.sin_port));
        FILE *f = fopen(tmp, "w");
        if (!f || fwrite(num, 1, (size_t)w, f) != (size_t)w || fclose(f) != 0 || rename(tmp, port_file) != 0)
            fl_die("cannot write the port file '%s'", port_file);
    }

    pid_t self = getpid();
    long served = 0;
    while (!fl_stop && (max_requests == 0 || served < max_requests)) {
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        struct pollfd p = {.fd = ls, .events = POLLIN};
        if (poll(&p, 1, 200) <= 0)
            continue;
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        served++;
        long idx = served - 1;
        idx = loop ? idx % nlines : (idx < nlines ? idx : nlines - 1);
        fl_req q;
        bool have = false;
        if (match) { /* the line depends on the prompt: read it here, answer in a child */
            have = fl_read_request(c, (int)served, logdir, &q);
            idx = fl_pick(lines, nlines, have ? q.body : NULL);
        }
        pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self)
                _exit(1);
            close(ls);
            if (!match)
                have = fl_read_request(c, (int)served, logdir, &q);
            if (have)
                fl_answer(c, &lines[idx], &q);
            close(c);
            _exit(0);
        }
        if (have) {
            free(q.body);
            free(q.auth);
        }
        close(c);
    }
    close(ls);
    if (!fl_stop) /* --max-requests: let every answer go out */
        while (!fl_stop && (wait(NULL) > 0 || errno == EINTR))
            ;
    for (int i = 0; i < nlines; i++)
        fl_free_line(&lines[i]);
    free(lines);
    return 0;
}
