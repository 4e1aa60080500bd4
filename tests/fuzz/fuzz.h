/* fuzz.h — what the libFuzzer targets share. */
#ifndef KEVO_FUZZ_H
#define KEVO_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a NUL-terminated string (caller frees); NULL when out of memory. */
static inline char *fz_text(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (text) {
        memcpy(text, data, size);
        text[size] = '\0';
    }
    return text;
}

/* Split text at its first newline: *rest is what follows (the newline
 * becomes NUL), or "" when there is none. */
static inline char *fz_line(char *text, char **rest)
{
    char *nl = strchr(text, '\n');
    if (nl) {
        *nl = '\0';
        *rest = nl + 1;
    } else {
        *rest = text + strlen(text);
    }
    return text;
}

/* Whether generated C text is inert whatever its input was: printable
 * ASCII and newlines only; every block comment closed, on one line, with no
 * opener inside; no line comment, no character literal, no preprocessor
 * line, no backslash outside string literals; every string literal closed
 * on its line, holding only \\, \", \? and three-digit octal escapes. */
static inline int fz_c_inert(const char *t)
{
    for (const char *p = t; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x7f || (c < 0x20 && c != '\n'))
            return 0;
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            if (!e)
                return 0;
            for (const char *q = p + 2; q < e; q++)
                if (*q == '\n' || (q[0] == '/' && q[1] == '*'))
                    return 0;
            p = e + 1;
        } else if (c == '"') {
            for (p++; *p != '"'; p++) {
                if (!*p || *p == '\n')
                    return 0;
                if (*p == '\\') {
                    p++;
                    if (*p >= '0' && *p <= '7') {
                        if (!(p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7'))
                            return 0;
                        p += 2;
                    } else if (*p != '\\' && *p != '"' && *p != '?') {
                        return 0;
                    }
                }
            }
        } else if ((p[0] == '/' && p[1] == '/') || c == '\'' || c == '#' || c == '\\') {
            return 0;
        }
    }
    return 1;
}

#endif
