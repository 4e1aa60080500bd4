/* fuzz_export_rows.c — libFuzzer target: a DB row as kevo export reads it.
 * The input's first line is a candidate's stored params JSON, the rest its
 * stored plan JSON.  The params go through kevo_config_parse_stored against
 * every ikbo_lce family of the source tree's templates/: what it accepts
 * lies in the family's domains, survives its canonical text, agrees with
 * the lenient parser, and emits an inert plan function and table entry; the
 * plan goes through kevo_plan_parse_json: what parses prints back to the
 * same plan.  Nothing may crash, leak or reach undefined behaviour. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/emit.h"
#include "core/op.h"
#include "templates/space.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kevo_space **spaces;
static int nspaces;

static void fz_setup(void)
{
    if (spaces)
        return;
    kevo_err err;
    if (kevo_spaces_load_dir(KEVO_FUZZ_ROOT "/templates", "ikbo_lce", &spaces, &nspaces, &err) != KEVO_OK ||
        nspaces == 0)
        abort(); /* the fuzzer needs the real families */
}

static void fz_params(const char *params)
{
    const kevo_op *op = kevo_op_find("ikbo_lce");
    for (int f = 0; f < nspaces; f++) {
        const kevo_space *sp = spaces[f];
        kevo_config cfg, back, lenient;
        kevo_err err;
        err.msg[0] = '\0';
        if (kevo_config_parse_stored(sp, params, "candidate 1", &cfg, &err) != KEVO_OK) {
            if (!strstr(err.msg, "candidate 1"))
                abort(); /* a refusal names the row */
            continue;
        }
        for (int i = 0; i < sp->nparams; i++) {
            int ok = 0;
            for (int j = 0; j < sp->params[i].nvalues; j++)
                ok |= sp->params[i].values[j] == cfg.v[i];
            if (!ok)
                abort(); /* accepted outside the domain */
        }
        kv_buf canon, c;
        kv_buf_init(&canon);
        kv_buf_init(&c);
        kevo_config_json(sp, &cfg, &canon);
        if (kevo_config_parse_stored(sp, canon.data, "canonical", &back, &err) != KEVO_OK ||
            memcmp(&back, &cfg, sizeof cfg) != 0)
            abort(); /* the canonical text is the same configuration */
        if (kevo_config_parse_json(sp, params, &lenient, &err) != KEVO_OK || memcmp(&lenient, &cfg, sizeof cfg) != 0)
            abort(); /* strict accepts a subset of what the lenient parser does, with the same values */
        if (kevo_emit_plan(&c, sp, op, &cfg, 0, &err) == KEVO_OK)
            kevo_emit_kernel_entry(&c, sp, op, &cfg, 0, 90, 0, &err);
        if (c.data && !fz_c_inert(c.data))
            abort();
        kv_buf_release(&canon);
        kv_buf_release(&c);
    }
}

static void fz_plan(const char *plan)
{
    kevo_plan p, q;
    kevo_err err;
    if (kevo_plan_parse_json(plan, &p, &err) != KEVO_OK)
        return;
    if (p.nlaunches > KEVO_MAX_LAUNCHES || p.ntmaps > KEVO_MAX_TMAPS)
        abort();
    kv_buf j;
    kv_buf_init(&j);
    kevo_plan_json(&p, &j);
    if (kevo_plan_parse_json(j.data, &q, &err) != KEVO_OK || memcmp(&p, &q, sizeof p) != 0)
        abort(); /* a plan survives the DB */
    kv_buf_release(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_setup();
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    char *plan = NULL;
    char *params = fz_line(text, &plan);
    fz_params(params);
    fz_plan(plan);
    free(text);
    return 0;
}
