/* fuzz_shape.c — libFuzzer target: the ikbo_lce shape parser.  Any text
 * either parses into a shape whose canonical text parses back to the same
 * symbols, or is refused with a message; nothing crashes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    kevo_syms a, b;
    kevo_err err;
    err.msg[0] = '\0';
    if (op->parse_shape(text, &a, &err) == KEVO_OK) {
        char canon[256];
        op->shape_str(&a, canon, sizeof canon);
        if (op->parse_shape(canon, &b, &err) != KEVO_OK || a.n != b.n ||
            memcmp(a.value, b.value, sizeof a.value[0] * (size_t)a.n) != 0)
            abort(); /* canonical text must round-trip */
        (void)op->flops(&a);
        (void)op->bytes(&a, KEVO_DTYPE_F16);
    } else if (err.msg[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    free(text);
    return 0;
}
