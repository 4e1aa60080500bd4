/* fuzz_export_emit.c — libFuzzer target: the text kevo export generates
 * (export/emit.c).  The input's first line is a library name, its second a
 * free text (a device string, a why text), the rest a space file's JSON
 * (located in the source tree's templates/, so the real families' sources
 * and includes resolve).  Checked:
 *   - a name kevo_export_check_name accepts is a lower-case identifier, and
 *     filling the library's templates with it adds nothing but identifier
 *     characters;
 *   - the text as a C string literal decodes to the very bytes; as a comment
 *     it is printable, on one line, and neither opens nor closes one; as a
 *     Markdown table cell it holds no newline or unescaped '|';
 *   - a space file that loads emits, at each of its first configurations, a
 *     plan function and table entry that are inert C (tests/fuzz/fuzz.h).
 * Nothing may crash, leak or reach undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/emit.h"
#include "export/export.h"
#include "core/op.h"
#include "templates/space.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *tpl; /* export/template/CMakeLists.txt.in */

static void fz_setup(void)
{
    kevo_err err;
    if (!tpl && kv_read_file(KEVO_FUZZ_ROOT "/export/template/CMakeLists.txt.in", &tpl, NULL, &err) != KEVO_OK)
        abort();
}

static int fz_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void fz_name(const char *name)
{
    kevo_err err;
    if (kevo_export_check_name(name, &err) != KEVO_OK)
        return;
    if (!kv_is_ident(name, 64) || !(name[0] >= 'a' && name[0] <= 'z'))
        abort();
    kv_buf out;
    kv_buf_init(&out);
    if (kevo_emit_fill(tpl, name, NULL, NULL, 0, &out, &err) != KEVO_OK)
        abort();
    /* the same text with every replacement taken out again is the template with the keys taken out */
    const char *o = out.data, *t = tpl;
    while (*t) {
        if (strncmp(t, "@NAME@", 6) == 0 || strncmp(t, "@NAME_UPPER@", 12) == 0) {
            t += t[5] == '@' ? 6 : 12;
            size_t n = strlen(name);
            for (size_t i = 0; i < n; i++, o++)
                if (!fz_ident_char(*o))
                    abort();
        } else if (*o++ != *t++) {
            abort();
        }
    }
    if (*o)
        abort();
    kv_buf_release(&out);
}

/* Decode a literal kevo_emit_c_string wrote; -1 when it is not one. */
static long fz_decode(const char *lit, char *out)
{
    if (*lit++ != '"')
        return -1;
    long n = 0;
    for (; *lit != '"'; lit++) {
        if (!*lit || (unsigned char)*lit < 0x20 || (unsigned char)*lit >= 0x7f)
            return -1;
        if (*lit != '\\') {
            out[n++] = *lit;
            continue;
        }
        lit++;
        if (*lit >= '0' && *lit <= '7') {
            out[n++] = (char)((lit[0] - '0') * 64 + (lit[1] - '0') * 8 + (lit[2] - '0'));
            lit += 2;
        } else if (*lit == '\\' || *lit == '"' || *lit == '?') {
            out[n++] = *lit;
        } else {
            return -1;
        }
    }
    return lit[1] ? -1 : n;
}

static void fz_texts(const char *text)
{
    kv_buf b;
    kv_buf_init(&b);
    kevo_emit_c_string(&b, text);
    char *dec = malloc(strlen(text) + 1);
    if (!dec)
        return;
    long n = fz_decode(b.data, dec);
    if (n < 0 || (size_t)n != strlen(text) || memcmp(dec, text, (size_t)n) != 0)
        abort();
    free(dec);
    if (!fz_c_inert(b.data))
        abort();
    kv_buf_release(&b);
    kv_buf_puts(&b, "/* ");
    kevo_emit_c_comment(&b, text);
    kv_buf_puts(&b, " */");
    if (!fz_c_inert(b.data))
        abort();
    kv_buf_release(&b);
    kevo_emit_md_cell(&b, text);
    int slashes = 0; /* a '|' ends the cell unless an odd number of backslashes stand before it */
    for (const char *p = b.data ? b.data : ""; *p; p++) {
        if (*p == '\n' || *p == '\r' || (*p == '|' && slashes % 2 == 0))
            abort();
        slashes = *p == '\\' ? slashes + 1 : 0;
    }
    kv_buf_release(&b);
}

static void fz_space(const char *json)
{
    kevo_space *sp = NULL;
    kevo_err err;
    if (kevo_space_load_text(json, KEVO_FUZZ_ROOT "/templates/fuzz.json", &sp, &err) != KEVO_OK)
        return;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    int idx[KEVO_MAX_PARAMS] = {0};
    for (int n = 0; n < 16; n++) {
        kevo_config cfg;
        memset(&cfg, 0, sizeof cfg);
        for (int i = 0; i < sp->nparams; i++)
            cfg.v[i] = sp->params[i].values[idx[i]];
        kv_buf c;
        kv_buf_init(&c);
        if (kevo_emit_plan(&c, sp, op, &cfg, n, &err) == KEVO_OK)
            kevo_emit_kernel_entry(&c, sp, op, &cfg, 1, 90, n, &err);
        if (c.data && !fz_c_inert(c.data))
            abort();
        kv_buf_release(&c);
        if (!kevo_space_step(sp, idx, sp->nparams - 1))
            break;
    }
    kevo_space_free(sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_setup();
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    char *rest = NULL, *json = NULL;
    char *name = fz_line(text, &rest);
    char *free_text = fz_line(rest, &json);
    fz_name(name);
    fz_texts(free_text);
    fz_space(json);
    free(text);
    return 0;
}
