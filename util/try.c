/* try.c — the text of a failed check (see try.h). */
#include "util/try.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

kevo_status kv_try_fail(kevo_err *err, kevo_status status, const char *call_text, const char *text)
{
    const char *open = strchr(call_text, '(');
    const char *end = open ? open : call_text + strlen(call_text);
    while (end > call_text && isspace((unsigned char)end[-1]))
        end--;
    const char *start = end;
    while (start > call_text && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
        start--;
    if (start == end) { /* no name before the parenthesis: the whole text */
        start = call_text;
        end = call_text + strlen(call_text);
    }
    return kevo_err_set(err, status, "%.*s: %s", (int)(end - start), start, text ? text : "(no text)");
}

kevo_status kv_try_failf(kevo_err *err, kevo_status status, const char *text, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kevo_err_set(err, status, "%s: %s", what, text ? text : "(no text)");
}

const char *kv_try_mpi_text(int code, int (*error_string)(int, char *, int *), char *buf, int n)
{
    int len = 0;
    if (n <= 0)
        return "";
    buf[0] = '\0';
    if (!error_string || error_string(code, buf, &len) != 0 || len < 0 || len >= n) /* 0: MPI_SUCCESS */
        snprintf(buf, (size_t)n, "MPI error %d", code);
    else
        buf[len] = '\0';
    return buf;
}
