/* fuzz_expr.c — libFuzzer target for core/expr.c: parse arbitrary text
 * and, when it parses, evaluate it against a realistic symbol set. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "util/util.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size);
    if (!text)
        return 0;

    /* part: the names a fold binds; syms: all of them */
    kevo_syms part;
    kevo_syms_init(&part);
    kevo_syms_set(&part, "BM", 128);
    kevo_syms_set(&part, "BN", 64);
    kevo_syms_set(&part, "B", 8);
    kevo_syms_set(&part, "U", 3);
    kevo_syms_set(&part, "num_sms", 132);
    kevo_syms syms = part;
    kevo_syms_set(&syms, "M", 4096);
    kevo_syms_set(&syms, "N", 1024);
    kevo_syms_set(&syms, "K", 768);
    kevo_syms_set(&syms, "max_smem", 232448);

    kevo_err err;
    kevo_err_clear(&err);
    kevo_expr *e = NULL;
    if (kevo_expr_parse(text, &e, &err) == KEVO_OK) {
        /* the text round-trips for inputs without an embedded NUL */
        if (strcmp(kevo_expr_text(e), text) != 0)
            abort();
        int64_t v = 0, v2 = 0;
        kevo_status st = kevo_expr_eval(e, &syms, &v, &err);
        /* evaluation is deterministic: a second run agrees */
        kevo_status st2 = kevo_expr_eval(e, &syms, &v2, &err);
        if (st != st2 || (st == KEVO_OK && v != v2))
            abort();
        /* folded at part (M, N, K, max_smem left free), the text evaluates
         * as the original does wherever that evaluates */
        kv_buf fb;
        kv_buf_init(&fb);
        if (kevo_expr_fold(e, &part, &fb, NULL, NULL, &err) != KEVO_OK)
            abort(); /* only memory can fail */
        kevo_expr *f = NULL;
        if (kevo_expr_parse(fb.data, &f, &err) == KEVO_OK) {
            int64_t w = 0;
            if (st == KEVO_OK && (kevo_expr_eval(f, &syms, &w, &err) != KEVO_OK || w != v))
                abort();
            kevo_expr_free(f);
        } else if (fb.len <= 4096) {
            abort(); /* the folded text parses, unless it grew past the length limit */
        }
        kv_buf_release(&fb);
        kevo_expr_free(e);
    } else if (e != NULL) {
        abort(); /* a failed parse must leave *out NULL */
    }
    free(text);
    return 0;
}
