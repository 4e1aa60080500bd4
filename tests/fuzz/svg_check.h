/* svg_check.h — what the SVG emitter's output must be whatever a DB holds
 * (tests/fuzz/fuzz_emit.c and tests/unit/test_security_input.c):
 *   - well-formed XML 1.0 in UTF-8: one prolog, one root element, every tag
 *     closed in order, attribute values quoted, every '&' one of the five
 *     named entities, no '<' in text, no comment, CDATA section,
 *     DOCTYPE or processing instruction past the prolog, no character XML
 *     forbids (C0 controls but tab, CR and LF; U+FFFE, U+FFFF), well-formed
 *     UTF-8 (no overlong form, no surrogate);
 *   - only the elements the emitter writes (svg, g, rect, circle, line,
 *     polyline, text, title), no attribute that links, loads or runs
 *     anything (href, xlink:*, src, on*, style).
 * svgc_check returns NULL when doc is all of that, else what is wrong, and
 * appends each element's name and a newline to names (in document order;
 * may be NULL), so that a caller can compare the structure of two renders. */
#ifndef KEVO_SVG_CHECK_H
#define KEVO_SVG_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "util/util.h"

/* The length of the well-formed UTF-8 character at p (XML 1.0 Char), 0 when
 * there is none. */
static inline size_t svgc_char(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return (c >= 0x20 || c == '\t' || c == '\n' || c == '\r') ? 1 : 0;
    size_t n = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (!n || (size_t)(end - p) < n)
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((p[k] & 0xC0) != 0x80)
            return 0;
    if ((c == 0xE0 && p[1] < 0xA0) || (c == 0xED && p[1] >= 0xA0) || (c == 0xF0 && p[1] < 0x90) ||
        (c == 0xF4 && p[1] >= 0x90) || (c == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)))
        return 0;
    return n;
}

/* An entity at p ('&'): one of the five XML names (the emitter writes no
 * character reference); its length, 0 when it is none. */
static inline size_t svgc_entity(const char *p, const char *end)
{
    static const char *const names[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t l = strlen(names[i]);
        if ((size_t)(end - p) >= l && strncmp(p, names[i], l) == 0)
            return l;
    }
    return 0;
}

static inline bool svgc_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
           c == ':' || c == '.';
}

static inline const char *svgc_check(const char *doc, size_t len, kv_buf *names)
{
    static const char *const elements[] = {"svg", "g", "rect", "circle", "line", "polyline", "text", "title"};
    const char *p = doc, *end = doc + len;
    /* characters and encoding, all of it */
    for (const unsigned char *u = (const unsigned char *)doc; u < (const unsigned char *)end;) {
        size_t n = svgc_char(u, (const unsigned char *)end);
        if (!n)
            return "a byte that is no XML character (a control, ill-formed UTF-8, U+FFFE/FFFF)";
        u += n;
    }
    /* the prolog: exactly the one the emitter writes */
    static const char prolog[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    if (len < sizeof prolog - 1 || strncmp(doc, prolog, sizeof prolog - 1) != 0)
        return "no XML prolog";
    p += sizeof prolog - 1;
    char stack[64][16];
    int depth = 0;
    bool root_done = false;
    while (p < end) {
        if (*p != '<') {
            if (*p == '&') {
                size_t n = svgc_entity(p, end);
                if (!n)
                    return "an '&' that is no entity";
                p += n;
                continue;
            }
            if (*p == '>')
                return "a raw '>' in text";
            if (depth == 0 && *p != '\n' && *p != ' ' && *p != '\t' && *p != '\r')
                return "text outside the root element";
            p++;
            continue;
        }
        if (p + 1 < end && (p[1] == '!' || p[1] == '?'))
            return "a comment, CDATA section, DOCTYPE or processing instruction";
        bool closing = p + 1 < end && p[1] == '/';
        const char *n0 = p + 1 + closing, *n1 = n0;
        while (n1 < end && svgc_name_char(*n1))
            n1++;
        size_t nl = (size_t)(n1 - n0);
        if (nl == 0 || nl >= sizeof stack[0])
            return "a tag without a name";
        bool known = false;
        for (size_t i = 0; i < sizeof elements / sizeof elements[0]; i++)
            known |= strlen(elements[i]) == nl && strncmp(elements[i], n0, nl) == 0;
        if (!known)
            return "an element the emitter does not write";
        if (closing) {
            if (depth == 0 || strlen(stack[depth - 1]) != nl || strncmp(stack[depth - 1], n0, nl) != 0)
                return "a closing tag that closes nothing open";
            depth--;
            while (n1 < end && (*n1 == ' ' || *n1 == '\n'))
                n1++;
            if (n1 >= end || *n1 != '>')
                return "a closing tag not closed by '>'";
            p = n1 + 1;
            if (depth == 0)
                root_done = true;
            continue;
        }
        if (root_done || (depth == 0 && (nl != 3 || strncmp(n0, "svg", 3) != 0)))
            return "a second root, or a root that is not svg";
        if (names) {
            kv_buf_append(names, n0, nl);
            kv_buf_puts(names, "\n");
        }
        /* attributes: name="value" */
        const char *q = n1;
        bool empty = false;
        for (;;) {
            while (q < end && (*q == ' ' || *q == '\n' || *q == '\t'))
                q++;
            if (q >= end)
                return "a tag not closed";
            if (*q == '>') {
                q++;
                break;
            }
            if (*q == '/' && q + 1 < end && q[1] == '>') {
                empty = true;
                q += 2;
                break;
            }
            const char *a0 = q;
            while (q < end && svgc_name_char(*q))
                q++;
            size_t al = (size_t)(q - a0);
            if (!al || q + 1 >= end || *q != '=' || q[1] != '"')
                return "an attribute that is not name=\"value\"";
            if ((al >= 2 && (a0[0] == 'o' || a0[0] == 'O') && (a0[1] == 'n' || a0[1] == 'N')) ||
                (al == 4 && strncmp(a0, "href", 4) == 0) || (al == 3 && strncmp(a0, "src", 3) == 0) ||
                (al == 5 && strncmp(a0, "style", 5) == 0) || (al > 6 && strncmp(a0, "xlink:", 6) == 0))
                return "an attribute that links, loads, styles or runs something";
            q += 2;
            while (q < end && *q != '"') {
                if (*q == '<')
                    return "a '<' in an attribute value";
                if (*q == '&') {
                    size_t n = svgc_entity(q, end);
                    if (!n)
                        return "an '&' that is no entity in an attribute value";
                    q += n;
                    continue;
                }
                q++;
            }
            if (q >= end)
                return "an attribute value not closed";
            q++;
            if (q < end && svgc_name_char(*q))
                return "attributes not separated";
        }
        if (!empty) {
            if (depth >= 64)
                return "elements nested too deep";
            memcpy(stack[depth], n0, nl);
            stack[depth][nl] = '\0';
            depth++;
        } else if (depth == 0) {
            root_done = true;
        }
        p = q;
    }
    if (depth != 0 || !root_done)
        return "the root element is not closed";
    return NULL;
}

#endif
