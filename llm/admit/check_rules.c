/* check_rules.c — passes 2 and 3 of the static check (see check.c): preprocessor
 * directives and macros, then forbidden names and constructs token by token. */
#define _POSIX_C_SOURCE 200809L
#include "llm/admit/check_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ directives */

static const char *const ck_allowed_headers[] = {
    "dtype.cuh", "mma.cuh", "wgmma.cuh", "hopper.cuh", "wgmma_attn.cuh", "softmax.cuh", "sm90/ring.cuh", "sm90/tma.cuh",
    "lce_ws/config.cuh", "lce_ws/work.cuh", "lce_ws/queue.cuh", "lce_ws/producer.cuh", "lce_ws/consumer.cuh",
    "lce_ws/user_res.cuh", "lce_ws/split.cuh", "lce_ws/epilogue.cuh",
    "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h",
    "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h", "cuda_awbarrier_primitives.h", "mma.h",
    "cooperative_groups.h", "cooperative_groups/memcpy_async.h", "cooperative_groups/reduce.h",
    "cooperative_groups/scan.h", "cuda/ptx", "cuda/barrier", "cuda/atomic", "cuda/pipeline", "cuda/annotated_ptr",
    "cuda/std/cstdint", "cuda/std/cstddef", "cuda/std/climits", "cuda/std/cfloat", "cuda/std/type_traits",
    "cuda/std/utility", "cuda/std/limits", "cuda/std/array", "cuda/std/bit", "cuda/std/tuple",
    "cuda/std/functional", "cuda/std/cmath", "cuda/std/atomic", "cuda/std/barrier", NULL};

static bool ck_header_ok(const char *h)
{
    for (int k = 0; ck_allowed_headers[k]; k++)
        if (strcmp(h, ck_allowed_headers[k]) == 0)
            return true;
    /* an op's ABI header, by name or from the templates' folder ("../kernels/x_abi.h") */
    const char *base = h;
    if (strncmp(base, "../kernels/", 11) == 0)
        base += 11;
    else if (strncmp(base, "kernels/", 8) == 0)
        base += 8;
    size_t n = strlen(base);
    if (n < 7 || strcmp(base + n - 6, "_abi.h") != 0)
        return false;
    for (size_t i = 0; i + 6 < n; i++)
        if (!((base[i] >= 'a' && base[i] <= 'z') || (base[i] >= '0' && base[i] <= '9') || base[i] == '_'))
            return false;
    return true;
}

/* Names a #define or #undef may not take. */
static const char *const ck_reserved_macro_names[] = {
    "__global__", "__device__", "__host__", "__shared__", "__constant__", "__managed__", "__grid_constant__",
    "__launch_bounds__", "__cluster_dims__", "__forceinline__", "__noinline__", "__restrict__", "asm", "__asm__",
    "__asm", "volatile", "__volatile__", "const", "constexpr", "extern", "static", "inline", "struct", "class",
    "union", "typedef", "using", "template", "typename", "namespace", "operator", "sizeof", "void", "if", "else",
    "for", "while", "do", "switch", "case", "return", "goto", "const_cast", "static_cast", "reinterpret_cast",
    "dynamic_cast", "main", "__CUDA_ARCH__", "__CUDACC__", "__CUDACC_RTC__", "__cplusplus", NULL};

static bool ck_forbidden_name(const ck *c, int i, const char **why);

bool ck_field(const ck *c, int i, bool *input, int *idx)
{
    if (!ck_ident(c, i))
        return false;
    for (int k = 0; k < c->ninputs && k < CK_MAX_FIELDS; k++)
        if (c->id[i] == c->in_id[k] && c->in_id[k] >= 0) {
            *input = true;
            *idx = k;
            return true;
        }
    for (int k = 0; k < c->noutputs && k < CK_MAX_FIELDS; k++)
        if (c->id[i] == c->out_id[k] && c->out_id[k] >= 0) {
            *input = false;
            *idx = k;
            return true;
        }
    return false;
}

bool ck_directives(ck *c)
{
    char name[64], hdr[256];
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind == KEVO_TK_PUNCT && (!strcmp(t->punct, "#") || !strcmp(t->punct, "##")) && t->dir != i) {
            if (t->dir >= 0 && ck_is(c, t->dir + 1, "define"))
                return ck_reject(c, t->line, "'%s' in a macro (token pasting or stringizing can build names the "
                                             "check cannot see)", t->punct);
            return ck_reject(c, t->line, "stray '%s' outside a directive", t->punct);
        }
        if (t->dir != i)
            continue;
        int d = i + 1, end = i + 1;
        while (end < c->lx.ntok && c->lx.tok[end].dir == i)
            end++;
        if (d >= end)
            continue; /* the null directive */
        ck_text(c, d, name, sizeof name);
        if (!strcmp(name, "include")) {
            /* the header name as written: "x" or <x> */
            const char *s = c->lx.text + c->lx.tok[d].off + c->lx.tok[d].len;
            const char *e = c->lx.text + (end < c->lx.ntok ? c->lx.tok[end].off : c->lx.n);
            while (s < e && (*s == ' ' || *s == '\t'))
                s++;
            char close = *s == '"' ? '"' : *s == '<' ? '>' : 0;
            const char *q = close ? memchr(s + 1, close, (size_t)(e - s - 1)) : NULL;
            if (!q || (size_t)(q - s - 1) >= sizeof hdr)
                return ck_reject(c, t->line, "#include without a plain header name");
            memcpy(hdr, s + 1, (size_t)(q - s - 1));
            hdr[q - s - 1] = '\0';
            if (!ck_header_ok(hdr)) {
                kv_term_clean(hdr);
                return ck_reject(c, t->line,
                                 "#include of '%s' (allowed: the op's ABI header, the templates' .cuh files, "
                                 "cuda_fp16.h, cuda_bf16.h, cuda_pipeline.h, cuda/ptx, cuda/barrier, cuda/atomic, "
                                 "cuda/pipeline, cooperative_groups, mma.h, cuda/std type headers)",
                                 hdr);
            }
        } else if (!strcmp(name, "pragma")) {
            if (!(ck_among(c, d + 1, (const char *const[]){"unroll", "nounroll", "once", NULL}) &&
                  c->lx.tok[d + 1].dir == i))
                return ck_reject(c, t->line, "#pragma other than unroll, nounroll or once");
        } else if (!strcmp(name, "define") || !strcmp(name, "undef")) {
            int m = d + 1;
            if (m >= end || !ck_ident(c, m))
                return ck_reject(c, t->line, "#%s without a name", name);
            char mname[64];
            ck_text(c, m, mname, sizeof mname);
            const char *why = NULL;
            bool inp;
            int idx;
            if (ck_among(c, m, ck_reserved_macro_names) || ck_forbidden_name(c, m, &why) || ck_field(c, m, &inp, &idx))
                return ck_reject(c, t->line, "#%s of '%s' (a keyword, a forbidden name or an argument field)", name,
                                 mname);
            if (!strcmp(name, "undef"))
                continue;
            bool fnlike = ck_is(c, m + 1, "(") && c->lx.tok[m + 1].dir == i &&
                          c->lx.tok[m].off + c->lx.tok[m].len == c->lx.tok[m + 1].off;
            int body = m + 1, prp = -1;
            if (fnlike) {
                prp = m + 1;
                while (prp < end && !ck_is(c, prp, ")"))
                    prp++;
                body = prp + 1;
            }
            for (int j = body; j < end; j++) {
                if (ck_field(c, j, &inp, &idx)) {
                    char f[64];
                    ck_text(c, j, f, sizeof f);
                    return ck_reject(c, t->line, "macro '%s' names the argument field '%s' (write the access out "
                                                 "so that it can be checked)", mname, f);
                }
                if (ck_among(c, j, (const char *const[]){"asm", "__asm__", "__asm", NULL}))
                    return ck_reject(c, t->line, "macro '%s' holds inline PTX (the check cannot follow its operands)",
                                     mname);
                /* a parameter used as a cast type: (T)x, xxx_cast<T> */
                if (fnlike && ck_ident(c, j)) {
                    bool param = false;
                    for (int k = m + 2; k < prp; k++)
                        param |= ck_ident(c, k) && c->id[k] == c->id[j];
                    bool c_cast = param && ck_is(c, j - 1, "(") && ck_is(c, j + 1, ")") && j + 2 < end &&
                                  (ck_ident(c, j + 2) || ck_is(c, j + 2, "(") || ck_is(c, j + 2, "&") ||
                                   ck_is(c, j + 2, "*"));
                    bool named = param && ck_is(c, j - 1, "<") && j >= 2 && ck_ident(c, j - 2) &&
                                 ck_among(c, j - 2, (const char *const[]){"static_cast", "reinterpret_cast",
                                                                          "const_cast", "bit_cast", NULL});
                    if (c_cast || named)
                        return ck_reject(c, t->line, "macro '%s' casts to a macro parameter (casts must be written "
                                                     "out so that they can be checked)", mname);
                }
            }
        } else if (!ck_among(c, d, (const char *const[]){"if", "ifdef", "ifndef", "elif", "else", "endif", "line",
                                                         "error", "warning", "elifdef", "elifndef", NULL})) {
            return ck_reject(c, t->line, "preprocessor directive '#%s'", name);
        }
    }
    return true;
}

/* ------------------------------------------------------- forbidden names */

typedef struct ck_ban {
    const char *name;
    const char *why;
    bool call_only; /* only when called: name( */
} ck_ban;

static const ck_ban ck_bans[] = {
    {"printf", "device code may not print", false},
    {"vprintf", "device code may not print", false},
    {"fprintf", "device code may not print", false},
    {"sprintf", "device code may not print", false},
    {"snprintf", "device code may not print", false},
    {"puts", "device code may not print", false},
    {"putchar", "device code may not print", false},
    {"assert", "assert prints from the device (use __trap())", true},
    {"__assert_fail", "assert prints from the device (use __trap())", false},
    {"__assertfail", "assert prints from the device (use __trap())", false},
    {"clock", "clock reads are not allowed", false},
    {"clock64", "clock reads are not allowed", false},
    {"__clock64", "clock reads are not allowed", false},
    {"globaltimer", "timer reads are not allowed", false},
    {"__globaltimer", "timer reads are not allowed", false},
    {"get_sreg_clock", "clock reads are not allowed", false},
    {"get_sreg_clock64", "clock reads are not allowed", false},
    {"get_sreg_clock_hi", "clock reads are not allowed", false},
    {"get_sreg_globaltimer", "timer reads are not allowed", false},
    {"get_sreg_globaltimer_lo", "timer reads are not allowed", false},
    {"get_sreg_globaltimer_hi", "timer reads are not allowed", false},
    {"chrono", "timer reads are not allowed", false},
    {"time", "timer reads are not allowed", true},
    {"gettimeofday", "timer reads are not allowed", false},
    {"clock_gettime", "timer reads are not allowed", false},
    {"malloc", "no dynamic allocation in device code", false},
    {"calloc", "no dynamic allocation in device code", false},
    {"realloc", "no dynamic allocation in device code", false},
    {"free", "no dynamic allocation in device code", true},
    {"aligned_alloc", "no dynamic allocation in device code", false},
    {"new", "no dynamic allocation in device code", false},
    {"delete", "no dynamic allocation in device code", false},
    {"__managed__", "no managed memory", false},
    {"fopen", "no file access", false},
    {"fclose", "no file access", false},
    {"fread", "no file access", false},
    {"fwrite", "no file access", false},
    {"fputs", "no file access", false},
    {"fgets", "no file access", false},
    {"fflush", "no file access", false},
    {"system", "no process control", true},
    {"popen", "no process control", false},
    {"fork", "no process control", true},
    {"execl", "no process control", false},
    {"execlp", "no process control", false},
    {"execv", "no process control", false},
    {"execvp", "no process control", false},
    {"execve", "no process control", false},
    {"getenv", "no environment access", false},
    {"setenv", "no environment access", false},
    {"putenv", "no environment access", false},
    {"remove", "no file access", true},
    {"unlink", "no file access", false},
    {"rename", "no file access", true},
    {"syscall", "no system calls", false},
    {"exit", "no process control", true},
    {"_exit", "no process control", true},
    {"abort", "no process control", true},
    {"atexit", "no process control", false},
    {"dlopen", "no dynamic loading", false},
    {"dlsym", "no dynamic loading", false},
    {"mmap", "no system calls", false},
    {"_Pragma", "no pragmas", false},
    {"__pragma", "no pragmas", false},
    {"const_cast", "const_cast removes const (inputs are const)", false},
    {"remove_const", "removing const is not allowed (inputs are const)", false},
    {"remove_const_t", "removing const is not allowed (inputs are const)", false},
    {"remove_cv", "removing const is not allowed (inputs are const)", false},
    {"remove_cv_t", "removing const is not allowed (inputs are const)", false},
    {"remove_cvref", "removing const is not allowed (inputs are const)", false},
    {"remove_cvref_t", "removing const is not allowed (inputs are const)", false},
    {"offsetof", "reaching argument fields by offset is not allowed", false},
    {"__builtin_offsetof", "reaching argument fields by offset is not allowed", false},
    {"__has_include", "no probing of files (an LLM candidate sees only the headers kevo hands it)", false},
    {"__has_include_next", "no probing of files (an LLM candidate sees only the headers kevo hands it)", false},
    {"__cvta_global_to_generic", "no pointer made from an integer address", false},
    {"__cvta_constant_to_generic", "no pointer made from an integer address", false},
    {"__cvta_local_to_generic", "no pointer made from an integer address", false},
    {"__cvta_grid_constant_to_generic", "no pointer made from an integer address", false},
    {"__nv_cvta_global_to_generic_impl", "no pointer made from an integer address", false},
};

static bool ck_forbidden_name(const ck *c, int i, const char **why)
{
    if (!ck_ident(c, i))
        return false;
    for (size_t k = 0; k < KV_ARRAY_LEN(ck_bans); k++) {
        if (!ck_is(c, i, ck_bans[k].name))
            continue;
        if (ck_bans[k].call_only && !ck_is(c, i + 1, "("))
            continue;
        *why = ck_bans[k].why;
        return true;
    }
    return false;
}

/* The tokens of a declaration from i to its first ; = { ( [ : is it a variable
 * (not a function), and is it constant? */
static void ck_decl_kind(const ck *c, int from, int i, bool *variable, bool *constant, bool *shared)
{
    *variable = false;
    *constant = *shared = false;
    for (int j = from; j < c->lx.ntok && j < from + CK_DECL_CAP && ck_code(c, j); j++) {
        if (ck_is(c, j, "("))
            return; /* a function */
        if (ck_is(c, j, "<") && ck_angle(c, j) > j) {
            j = ck_angle(c, j);
            continue;
        }
        if (ck_is(c, j, ";") || ck_is(c, j, "=") || ck_is(c, j, "{") || ck_is(c, j, "[")) {
            *variable = j > i;
            return;
        }
        *constant |= ck_among(c, j, (const char *const[]){"const", "constexpr", "__constant__", NULL});
        *shared |= ck_is(c, j, "__shared__");
    }
}

bool ck_tokens(ck *c)
{
    const char *why;
    char name[64];
    for (int i = 0; i < c->lx.ntok; i++) {
        const kevo_tok *t = &c->lx.tok[i];
        if (t->kind == KEVO_TK_IDENT && ck_forbidden_name(c, i, &why)) {
            ck_text(c, i, name, sizeof name);
            return ck_reject(c, t->line, "'%s' is not allowed (%s)", name, why);
        }
        if (t->kind == KEVO_TK_IDENT && t->len > 4 && ck_is(c, i + 1, "(")) {
            const char *p = c->lx.text + t->off;
            bool rt = t->len > 4 && !memcmp(p, "cuda", 4) && p[4] >= 'A' && p[4] <= 'Z';
            bool drv = t->len > 2 && !memcmp(p, "cu", 2) && p[2] >= 'A' && p[2] <= 'Z';
            bool device_api = ck_among(c, i, (const char *const[]){"cudaGridDependencySynchronize",
                                                                   "cudaTriggerProgrammaticLaunchCompletion", NULL});
            if ((rt || drv) && !device_api && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->")) {
                ck_text(c, i, name, sizeof name);
                return ck_reject(c, t->line, "'%s' is a CUDA %s API call (device code only)", name,
                                 rt ? "runtime" : "driver");
            }
        }
        if (ck_is(c, i, "__host__")) {
            bool device = false;
            for (int j = i - 4; j <= i + 4; j++) {
                if (j == i || j < 0 || j >= c->lx.ntok || c->lx.tok[j].dir != t->dir)
                    continue;
                if (ck_is(c, j, ";") || ck_is(c, j, "{") || ck_is(c, j, "}") || ck_is(c, j, "(")) {
                    if (j > i)
                        break;
                    continue;
                }
                device |= ck_is(c, j, "__device__");
            }
            if (!device)
                return ck_reject(c, t->line, "'__host__' function (device code only; __host__ __device__ helpers "
                                             "are fine)");
        }
        if (t->dir >= 0)
            continue;
        if (ck_is(c, i, "main") && ck_is(c, i + 1, "(") && !ck_is(c, i - 1, ".") && !ck_is(c, i - 1, "->"))
            return ck_reject(c, t->line, "'main' (host code is not allowed)");
        if (ck_is(c, i, "<<") && ck_is(c, i + 1, "<") && c->lx.tok[i + 1].off == t->off + 2)
            return ck_reject(c, t->line, "'<<<' kernel launch from device code");
        if (ck_is(c, i, "__device__") && c->fn_of[i] < 0) {
            bool variable, constant, shared;
            ck_decl_kind(c, ck_decl_start(c, i), i, &variable, &constant, &shared);
            if (variable && !constant && !shared)
                return ck_reject(c, t->line, "mutable __device__ variable (state kept between launches; use the "
                                             "workspace)");
        }
        if (ck_is(c, i, "static") && c->fn_of[i] >= 0 && i > c->fn[c->fn_of[i]].lb) {
            bool variable, constant, shared;
            ck_decl_kind(c, i, i, &variable, &constant, &shared);
            if (variable && !constant && !shared)
                return ck_reject(c, t->line, "function-local 'static' variable (state kept between launches)");
        }
    }
    return true;
}
