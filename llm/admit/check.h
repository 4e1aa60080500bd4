/* check.h — the static check of LLM-written device source (a defence against
 * reward hacking: code that games the measurement instead of computing the op).
 *
 * kevo_llm_check_source() tokenizes the source (comments dropped, line
 * splices undone, literals kept whole) and rejects, naming the rule and line:
 *   - host code: `main(`, `__host__` functions that are not also `__device__`,
 *     device-side launches (`<<<`), CUDA runtime or driver API calls
 *     (`cudaXxx(`, `cuXxx(`);
 *   - printing, timers, allocation, files and processes: printf and friends,
 *     assert, clock/clock64/%clock/%globaltimer/performance counters,
 *     malloc/free/new/delete, `__managed__`, fopen/system/getenv/exit...;
 *   - state kept between launches: mutable `__device__` globals and
 *     function-local `static` variables (constants are fine);
 *   - preprocessor tricks: `#include` of anything but the allowed headers
 *     (an op's `*_abi.h`, the templates' dtype/mma/wgmma/hopper.cuh,
 *     sm90/ring.cuh, sm90/tma.cuh, lce_ws/config.cuh, lce_ws/work.cuh and
 *     lce_ws's other headers (queue, producer, consumer, user_res, split,
 *     epilogue), CUDA's
 *     fp16/bf16/pipeline/ptx/barrier/atomic/cooperative-groups/cuda/std type
 *     headers), `#pragma` other
 *     than unroll/nounroll/once, `_Pragma`, `##`,
 *     `#x` stringizing, a stray `#`, a `#define`/`#undef` of a keyword, a
 *     forbidden name or an argument field, a macro body that names an
 *     argument field, casts to a macro parameter or holds inline PTX, and
 *     an asm template built from anything but literals and string macros;
 *   - file probes: `__has_include` (an LLM candidate sees only the headers
 *     kevo hands NVRTC; evaluator/compile.c confines the compile as well);
 *   - addresses from integers: a cast to a pointer type of an integer
 *     literal (a lone 0 aside), of an expression holding a cast to an
 *     integer type, or of names declared with an integer type; the
 *     __cvta_*_to_generic functions; an inline PTX memory operand that is
 *     such an integer, or a constant address in the PTX text itself
 *     (`st.global.u32 [0x7f0000001000], ...`, `cvta.to.global %0, 4096`).
 *     Memory is reached through the pointers kevo passes and what is
 *     derived from them (pointer arithmetic stays possible: the runtime's
 *     checksums and guards are what see a write past a buffer);
 *   - inline PTX (every string literal is scanned, asm or not): generic
 *     stores (`st.` without a state space), global or generic `red.`/`atom.`,
 *     `cp.reduce.async.bulk` into global memory, `multimem`, `discard`,
 *     `call`, `.global`/`.extern`/`.func` declarations, `tensormap.replace`
 *     in global memory, and the time special registers.  `st.global` and
 *     TMA/bulk stores (`cp.async.bulk...global.shared...`) are allowed: they
 *     are how results are written;
 *   - writes to the inputs (names given by the caller: the ABI struct's input
 *     fields, e.g. w_user ... tm_e_cand): pointers derived from an input
 *     field (through assignments, struct members, local arrays that hold
 *     them, helper parameters and return values, asm outputs, memcpy into
 *     `&x`, the address of the argument struct) may not be cast to a
 *     non-const pointer that is kept or stored through (C casts, *_cast,
 *     aliases, decltype, template type parameters; a cast read through at
 *     once is fine), nor reach a store: a global store in inline PTX
 *     (address operand), TMA/bulk stores, __stcg/__stcs/..., atomic*,
 *     memcpy/memset, cuda::atomic_ref, a C++ assignment through them, or a
 *     helper parameter that reaches any of these.  Nor may such a pointer's
 *     value be stored to memory the analysis does not follow (anything but
 *     a local or __shared__ array of the function: the workspace, out, a
 *     PTX store's data), where another alias could read it back.
 *     `const_cast` is rejected outright;
 *   - reads of the output before it is written, in the form that matters:
 *     values read from the output (C++ dereference, __ldg/__ldcs..., a
 *     global load in PTX, a TMA load of its tensor map, a helper that loads)
 *     may flow anywhere, but may not decide control flow (if/while/for/
 *     switch conditions and statements with ?:, && or ||), directly or
 *     through variables and helper return values.  A read-modify-write of
 *     out written by an earlier launch of the plan (a decomposed
 *     broadcast-add) stays allowed; a kernel that skips work when out "looks
 *     done" does not.
 *
 * The analysis is name-based and flow-insensitive within a function (a name
 * tainted anywhere in a function is tainted everywhere in it), follows
 * helpers through per-parameter summaries computed to a fixpoint, and errs
 * toward refusing (a source that keeps the fixpoints busy past a fixed
 * amount of work is refused).  It is not complete and is not claimed to be:
 * implicit flows escape it (an address rebuilt bit by bit under conditions
 * on the real one), as do pointers two levels deep in local arrays and
 * values the output held that reach a branch through memory it does not
 * follow.  The runtime checks back it up: the output is poisoned with NaN
 * before every check, every check uses fresh random inputs (so cached or
 * constant answers fail), and the inputs are checksummed after each checked
 * run (input_modified).
 *
 * Templates' own sources (templates/ *.cu, rendered) pass this check; a
 * rejection of one is a bug of the check.
 */
#ifndef KEVO_LLM_CHECK_H
#define KEVO_LLM_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* Largest source the check (and the reply parser) accepts, bytes. */
#define KEVO_LLM_SOURCE_MAX (256 * 1024)

/* Check device source src (NUL-terminated).  inputs[ninputs] and
 * outputs[noutputs] name the ABI struct's fields that are the op's input and
 * output tensors (for ikbo_lce: w_user, w_cand, e_user, e_cand, cand_to_user,
 * tm_w_user, tm_w_cand, tm_e_user, tm_e_cand; out, tm_out).  Returns true
 * when the source passes; false with the reason ("line 12: 'printf' ...")
 * in why[n] when it does not, or when src is NULL or over
 * KEVO_LLM_SOURCE_MAX.  Never crashes on any text. */
bool kevo_llm_check_source(const char *src, const char *const *inputs, int ninputs, const char *const *outputs,
                           int noutputs, char *why, size_t n);

/* A `__global__` function a source defines. */
typedef struct kevo_llm_entry {
    char name[64];
    bool extern_c; /* declared extern "C" (directly, in an extern "C" block or by its macro) */
    int line;
} kevo_llm_entry;

/* The `__global__` functions src defines (with a body), in source order,
 * including ones a function-like macro declares (`#define K(name) extern "C"
 * __global__ void name`; `K(foo)(...) {...}`).  Preprocessor conditions are
 * not evaluated: an entry under `#if 0` counts.  Stores at most max in
 * out[]; returns how many there are (may exceed max), or -1 when src is NULL,
 * over KEVO_LLM_SOURCE_MAX or out of memory. */
int kevo_llm_find_entries(const char *src, kevo_llm_entry *out, int max);

/* Give the `__global__` function `name` of src C linkage, as a model that
 * forgot `extern "C"` meant: `extern "C" ` is put in front of each of its
 * file-scope declarations that is __global__ and not yet extern "C" (its
 * definition and any forward declaration).  Returns how many were changed,
 * with the new source in *out (malloc'd, NUL-terminated); 0 with *out NULL
 * when there is nothing to change or it would not be safe (a template, a
 * static function, a macro-made entry, a source with backslash-newlines or
 * one the tokenizer refuses); -1 when out of memory. */
int kevo_llm_give_c_linkage(const char *src, const char *name, char **out);

#endif /* KEVO_LLM_CHECK_H */
