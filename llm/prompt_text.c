/* prompt_text.c — untrusted text as it enters a prompt: control characters
 * removed, lengths bounded on whole characters, messages cut in the middle,
 * code fenced with a fence longer than any inside it. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/prompt_int.h"


/* Append n bytes of untrusted text: control characters but newline (and tab,
 * when multiline) become spaces, bytes that are no UTF-8 become '?', and a
 * line-only text loses its newlines too.  Never cuts a character. */
kevo_status pr_put_clean(kv_buf *b, const char *s, size_t n, bool multiline)
{
    const unsigned char *p = (const unsigned char *)s, *e = p + n;
    char tmp[256];
    size_t t = 0;
    kevo_status st = KEVO_OK;
    while (p < e && !st) {
        unsigned char c = *p;
        size_t len = c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3
                                 : (c >= 0xF0 && c <= 0xF4)   ? 4
                                                              : 0;
        size_t k = 1;
        while (len > 1 && k < len && p + k < e && (p[k] & 0xC0) == 0x80)
            k++;
        if (len == 0 || k < len) {
            tmp[t++] = '?';
            p++;
        } else if (len == 1) {
            bool keep = c >= 0x20 && c != 0x7f;
            if (multiline && (c == '\n' || c == '\t'))
                keep = true;
            tmp[t++] = keep ? (char)c : ' ';
            p++;
        } else if (len == 2 && c == 0xC2 && p[1] < 0xA0) {
            tmp[t++] = ' '; /* C1 controls */
            p += 2;
        } else {
            memcpy(tmp + t, p, len);
            t += len;
            p += len;
        }
        if (t > sizeof tmp - 8 || p >= e) {
            st = kv_buf_append(b, tmp, t);
            t = 0;
        }
    }
    return st;
}

/* The length of the longest prefix of s, at most max bytes, that ends on a
 * character boundary. */
size_t pr_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

/* One line of untrusted text, at most max bytes ("..." when cut); "(none)" for NULL/empty. */
kevo_status pr_line(kv_buf *b, const char *s, size_t max)
{
    if (!s || !*s)
        return kv_buf_puts(b, "(none)");
    size_t len = strnlen(s, max + 8);
    size_t n = pr_cut(s, len, max);
    kevo_status st = pr_put_clean(b, s, n, false);
    if (!st && n < len)
        st = kv_buf_puts(b, "...");
    return st;
}

/* A multi-line untrusted message: head and tail kept within max bytes. */
kevo_status pr_message(kv_buf *b, const char *s, size_t max)
{
    size_t len = strlen(s);
    if (len <= max)
        return pr_put_clean(b, s, len, true);
    size_t head = pr_cut(s, len, max * 3 / 4);
    size_t tail_start = len - max / 4;
    while (tail_start < len && ((unsigned char)s[tail_start] & 0xC0) == 0x80)
        tail_start++;
    kevo_status st = pr_put_clean(b, s, head, true);
    if (!st)
        st = kv_buf_printf(b, "\n[... %zu bytes of the message cut here ...]\n", tail_start - head);
    if (!st)
        st = pr_put_clean(b, s + tail_start, len - tail_start, true);
    return st;
}

/* A fence of backticks longer than any run of backticks in text (at least 3). */
void pr_fence(const char *text, char *fence, size_t n)
{
    size_t run = 0, best = 0;
    for (const char *p = text; p && *p; p++) {
        run = *p == '`' ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    size_t len = best + 1 < 3 ? 3 : best + 1;
    if (len > n - 1)
        len = n - 1;
    memset(fence, '`', len);
    fence[len] = '\0';
}

/* A fenced block of untrusted text (already bounded by the caller). */
kevo_status pr_block(kv_buf *b, const char *lang, const char *text, size_t len)
{
    char fence[64];
    kv_buf tmp;
    kv_buf_init(&tmp);
    kevo_status st = pr_put_clean(&tmp, text, len, true);
    if (st) {
        kv_buf_release(&tmp);
        return st;
    }
    pr_fence(tmp.data, fence, sizeof fence);
    st = kv_buf_printf(b, "%s%s\n", fence, lang);
    if (!st && tmp.len)
        st = kv_buf_append(b, tmp.data, tmp.len);
    if (!st && (tmp.len == 0 || tmp.data[tmp.len - 1] != '\n'))
        st = kv_buf_puts(b, "\n");
    if (!st)
        st = kv_buf_printf(b, "%s\n", fence);
    kv_buf_release(&tmp);
    return st;
}
