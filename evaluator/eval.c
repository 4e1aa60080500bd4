/* eval.c — names of failure kinds, as stored in the DB. */
#include "evaluator/eval.h"

#include <string.h>

static const char *const ev_names[KEVO_FAIL__COUNT] = {
    [KEVO_FAIL_NONE] = "none",
    [KEVO_FAIL_COMPILE_ERROR] = "compile_error",
    [KEVO_FAIL_COMPILE_CRASH] = "compile_crash",
    [KEVO_FAIL_COMPILE_TIMEOUT] = "compile_timeout",
    [KEVO_FAIL_LOAD_ERROR] = "load_error",
    [KEVO_FAIL_LAUNCH_ERROR] = "launch_error",
    [KEVO_FAIL_ILLEGAL_ADDRESS] = "illegal_address",
    [KEVO_FAIL_EVAL_TIMEOUT] = "eval_timeout",
    [KEVO_FAIL_WRONG_RESULT] = "wrong_result",
    [KEVO_FAIL_NAN_OUTPUT] = "nan_output",
    [KEVO_FAIL_RESOURCE_EXCEEDED] = "resource_exceeded",
    [KEVO_FAIL_WORKER_CRASH] = "worker_crash",
    [KEVO_FAIL_PLAN_ERROR] = "plan_error",
    [KEVO_FAIL_GEN_ERROR] = "gen_error",
    [KEVO_FAIL_PARSE_ERROR] = "parse_error",
    [KEVO_FAIL_REJECTED] = "rejected",
    [KEVO_FAIL_INPUT_MODIFIED] = "input_modified",
    [KEVO_FAIL_OUT_OF_BOUNDS] = "out_of_bounds",
};

const char *kevo_fail_name(kevo_fail f)
{
    return (f >= 0 && f < KEVO_FAIL__COUNT && ev_names[f]) ? ev_names[f] : "unknown";
}

bool kevo_fail_parse(const char *s, kevo_fail *out)
{
    for (int i = 0; i < KEVO_FAIL__COUNT; i++) {
        if (ev_names[i] && strcmp(ev_names[i], s) == 0) {
            *out = (kevo_fail)i;
            return true;
        }
    }
    return false;
}
