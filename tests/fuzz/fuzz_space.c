/* fuzz_space.c — libFuzzer target: template space files and their launch
 * plans.  The input is a space file's JSON; when it loads, every
 * configuration in the first few hundred of its product is checked against
 * the default ikbo_lce shape, and the valid ones are planned, rendered and
 * their plans round-tripped through JSON.  Nothing may crash or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/op.h"
#include "templates/space.h"
#include "tests/fuzz/fuzz.h"

static char dir[64];

/* A folder holding the source file the fuzzed space files name ("f.cu"). */
static void fz_setup(void)
{
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "/tmp/kevo-fuzz-space");
    mkdir(dir, 0700);
    char p[128];
    snprintf(p, sizeof p, "%s/f.cu", dir);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs("extern \"C\" __global__ void k(const __grid_constant__ kevo_lce_args a) {}\n", f);
        fclose(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_setup();
    char *text = fz_text(data, size);
    if (!text)
        return 0;
    char path[128];
    snprintf(path, sizeof path, "%s/fuzz.json", dir);
    kevo_space *sp = NULL;
    kevo_err err;
    if (kevo_space_load_text(text, path, &sp, &err) == KEVO_OK) {
        kevo_syms shape;
        kevo_limits lim;
        kevo_op_find("ikbo_lce")->parse_shape(NULL, &shape, &err);
        kevo_limits_for_arch("sm_90a", &lim, &err);
        kevo_space_supports(sp, &shape, &lim, KEVO_DTYPE_F16, &err);
        int idx[KEVO_MAX_PARAMS] = {0};
        for (int n = 0; n < 256; n++) {
            kevo_config cfg;
            memset(&cfg, 0, sizeof cfg);
            for (int i = 0; i < sp->nparams; i++)
                cfg.v[i] = sp->params[i].values[idx[i]];
            char why[256];
            if (kevo_space_check(sp, &shape, &lim, KEVO_DTYPE_F16, &cfg, why, sizeof why) == 1) {
                kevo_plan plan, back;
                if (kevo_space_plan(sp, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err) == KEVO_OK) {
                    kv_buf j;
                    kv_buf_init(&j);
                    kevo_plan_json(&plan, &j);
                    if (kevo_plan_parse_json(j.data, &back, &err) != KEVO_OK || back.nlaunches != plan.nlaunches ||
                        back.ntmaps != plan.ntmaps || back.workspace_bytes != plan.workspace_bytes)
                        abort(); /* a plan must survive the DB */
                    kv_buf_release(&j);
                }
                kv_buf src;
                kv_buf_init(&src);
                kevo_space_render(sp, &cfg, KEVO_DTYPE_BF16, "/* abi */", &src, &err);
                kv_buf_release(&src);
            }
            if (!kevo_space_step(sp, idx, sp->nparams - 1))
                break;
        }
        kevo_space_free(sp);
    }
    free(text);
    return 0;
}
