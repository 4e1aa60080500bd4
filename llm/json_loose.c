/* json_loose.c — mend the JSON a model writes (see json_loose.h). */
#include "llm/json_loose.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define JL_MAX_DEPTH 64

/* Whether [p, p+n) is a JSON number, true, false or null. */
static bool jl_literal(const char *p, size_t n)
{
    if ((n == 4 && (!memcmp(p, "true", 4) || !memcmp(p, "null", 4))) || (n == 5 && !memcmp(p, "false", 5)))
        return true;
    size_t i = 0;
    if (i < n && p[i] == '-')
        i++;
    if (i < n && p[i] == '0')
        i++;
    else if (i < n && p[i] >= '1' && p[i] <= '9')
        while (i < n && isdigit((unsigned char)p[i]))
            i++;
    else
        return false;
    if (i < n && p[i] == '.') {
        size_t d = ++i;
        while (i < n && isdigit((unsigned char)p[i]))
            i++;
        if (i == d)
            return false;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && isdigit((unsigned char)p[i]))
            i++;
        if (i == d)
            return false;
    }
    return i == n;
}

/* Whether [p, p+n) is made only of what an expression is written with,
 * with no two operands side by side ("256 KiB" is not one). */
static bool jl_expression(const char *p, size_t n, bool key)
{
    if (n == 0)
        return false;
    bool gap = false, after_operand = false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        bool word = isalnum(c) || c == '_' || c == '.';
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            gap = true;
            continue;
        }
        if (!word && (key || !strchr("+-*/%()<>=!?&|:~^", c)))
            return false;
        if (word && gap && after_operand)
            return false;
        after_operand = word || c == ')';
        gap = false;
    }
    return !key || !isdigit((unsigned char)p[0]);
}

/* text with its comments (outside strings) turned into spaces; NULL when out of memory */
static char *jl_uncomment(const char *text)
{
    char *m = kv_strdup(text);
    for (size_t i = 0; m && m[i]; i++) {
        if (m[i] == '"') {
            for (i++; m[i] && m[i] != '"'; i++)
                i += m[i] == '\\' && m[i + 1];
            if (!m[i])
                break;
        } else if (m[i] == '/' && m[i + 1] == '/') {
            for (; m[i] && m[i] != '\n'; i++)
                m[i] = ' ';
            if (!m[i])
                break;
        } else if (m[i] == '/' && m[i + 1] == '*') {
            for (m[i] = m[i + 1] = ' ', i += 2; m[i] && !(m[i] == '*' && m[i + 1] == '/'); i++)
                m[i] = m[i] == '\n' ? '\n' : ' ';
            if (!m[i])
                break;
            m[i] = m[i + 1] = ' ';
            i++;
        }
    }
    return m;
}

char *kevo_json_loosen(const char *text)
{
    char *m = text ? jl_uncomment(text) : NULL;
    if (!m)
        return NULL;
    kv_buf b;
    kv_buf_init(&b);
    char stack[JL_MAX_DEPTH];
    int depth = 0;
    bool value_next = true; /* a value goes here (else a key) */
    bool oom = false;
    for (size_t i = 0; m[i] && !oom;) {
        char c = m[i];
        if (isspace((unsigned char)c)) {
            i++;
            continue;
        }
        if (c == '"') {
            size_t j = i + 1;
            while (m[j] && m[j] != '"')
                j += m[j] == '\\' && m[j + 1] ? 2 : 1;
            j += m[j] == '"';
            oom = kv_buf_append(&b, m + i, j - i) != KEVO_OK;
            i = j;
            value_next = false;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth < JL_MAX_DEPTH)
                stack[depth] = c;
            depth++;
            value_next = c == '[';
        } else if (c == '}' || c == ']') {
            depth -= depth > 0;
            value_next = false;
        } else if (c == ':') {
            value_next = true;
        } else if (c == ',') {
            size_t k = i + 1;
            while (isspace((unsigned char)m[k]))
                k++;
            if (m[k] == '}' || m[k] == ']') {
                i++; /* a trailing comma */
                continue;
            }
            value_next = depth > 0 && depth <= JL_MAX_DEPTH && stack[depth - 1] == '[';
        } else {
            /* a bare token: up to the next separator outside parentheses */
            size_t j = i;
            int paren = 0;
            while (m[j] && m[j] != '"' && !(paren == 0 && strchr(value_next ? ",}]" : ":,}]", m[j]))) {
                paren += m[j] == '(' ? 1 : m[j] == ')' ? -1 : 0;
                j++;
            }
            size_t n = j - i;
            while (n > 0 && isspace((unsigned char)m[i + n - 1]))
                n--;
            bool quote = !jl_literal(m + i, n) && jl_expression(m + i, n, !value_next);
            oom = (quote && kv_buf_append(&b, "\"", 1) != KEVO_OK) || kv_buf_append(&b, m + i, n) != KEVO_OK ||
                  (quote && kv_buf_append(&b, "\"", 1) != KEVO_OK);
            i = j > i ? j : i + 1;
            value_next = false;
            continue;
        }
        oom = kv_buf_append(&b, &c, 1) != KEVO_OK;
        i++;
    }
    free(m);
    if (oom || !b.data) {
        kv_buf_release(&b);
        return NULL;
    }
    return kv_buf_take(&b);
}
