/* fuzz_peer_config.c — libFuzzer target: a VENDOR peer's stored config (DB
 * text) as `kevo export` reads it, through ikbo_lce's strict parser
 * (kevo_op_export.vendor_parse, kernels/ikbo_lce/vendor.c).  The input's
 * first byte picks the tuned shape it is checked against (the default
 * shape, a small one, one whose K are multiples of 8), the rest is the
 * config.  What the parser accepts re-serializes to the very same bytes
 * (vendor_text), parses back to the same config, and stays within bounds:
 * a form of the op, two GEMMs, K of the shape padded to 8, a positive
 * cuBLASLt version, at most 256 MiB of workspace.  A refusal says why.
 * Nothing may crash, leak or reach undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/op.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fz_shapes[] = {"B=1024,M=433,N=256,Ku=1178,Kc=866,U=15", "B=7,M=37,N=72,Ku=45,Kc=29,U=2",
                                        "B=64,M=100,N=128,Ku=96,Kc=72,U=8"};

/* Abort unless v lies within what the op and the shape allow. */
static void fz_bounds(const kevo_op_export *xd, const kevo_syms *shape, const kevo_vendor_cfg *v)
{
    int64_t kup = 0, kcp = 0;
    kevo_syms_get(shape, "Kup", &kup);
    kevo_syms_get(shape, "Kcp", &kcp);
    if (v->form < 0 || v->form >= xd->nvendor_forms || v->ngemms != 2 || v->gemm_k[0] != kup ||
        v->gemm_k[1] != kcp || v->lib_version < 1 || v->workspace > KEVO_VENDOR_WORKSPACE_MAX)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    const kevo_op_export *xd = op->export_desc;
    kevo_syms shape;
    kevo_err err;
    if (op->parse_shape(fz_shapes[data[0] % 3], &shape, &err) != KEVO_OK)
        abort();
    char *text = fz_text(data + 1, size - 1);
    if (!text)
        return 0;
    kevo_vendor_cfg v, back;
    err.msg[0] = '\0';
    if (xd->vendor_parse(text, &shape, &v, &err) == KEVO_OK) {
        fz_bounds(xd, &shape, &v);
        char canon[KEVO_PEER_CONFIG_MAX];
        size_t len = xd->vendor_text(&v, canon, sizeof canon);
        if (len >= sizeof canon || len != strlen(text) || memcmp(canon, text, len) != 0)
            abort(); /* accepted: exactly its canonical bytes (the text up to a NUL, as the DB's column reads) */
        if (xd->vendor_parse(canon, &shape, &back, &err) != KEVO_OK || memcmp(&back, &v, sizeof v) != 0)
            abort(); /* and they parse back to the same config */
    } else if (err.msg[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    free(text);
    return 0;
}
