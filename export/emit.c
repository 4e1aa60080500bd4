/* emit.c — generated C, CMake and Markdown text from untrusted names and
 * params (see emit.h). */
#define _POSIX_C_SOURCE 200809L
#include "export/emit.h"

#include <stdio.h>
#include <string.h>

#include "export/export.h"

kevo_status kevo_emit_c_string(kv_buf *b, const char *s)
{
    kevo_status st = kv_buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p && !st; p++) {
        if (*p == '\\' || *p == '"' || *p == '?')
            st = kv_buf_printf(b, "\\%c", *p);
        else if (*p >= 0x20 && *p < 0x7f)
            st = kv_buf_append(b, p, 1);
        else
            st = kv_buf_printf(b, "\\%03o", *p); /* three digits: the next character cannot extend it */
    }
    return st ? st : kv_buf_puts(b, "\"");
}

kevo_status kevo_emit_c_comment(kv_buf *b, const char *s)
{
    kevo_status st = KEVO_OK;
    char last = ' ';
    for (const unsigned char *p = (const unsigned char *)s; *p && !st; p++) {
        char c = *p >= 0x20 && *p < 0x7f && *p != '\\' ? (char)*p : ' ';
        if ((last == '*' && c == '/') || (last == '/' && c == '*'))
            st = kv_buf_puts(b, " ");
        if (!st)
            st = kv_buf_append(b, &c, 1);
        last = c;
    }
    return st;
}

kevo_status kevo_emit_md_cell(kv_buf *b, const char *s)
{
    kevo_status st = KEVO_OK;
    for (const unsigned char *p = (const unsigned char *)s; *p && !st; p++) {
        if (*p && strchr("|\\[]()!*_~#+-.{}", *p)) /* no link, image, emphasis or heading: a backslash escape */
            st = kv_buf_printf(b, "\\%c", *p);
        else if (*p == '`')
            st = kv_buf_puts(b, "'");
        else if (*p == '<')
            st = kv_buf_puts(b, "&lt;");
        else if (*p == '>')
            st = kv_buf_puts(b, "&gt;");
        else if (*p == '&') /* no entity of the text's own */
            st = kv_buf_puts(b, "&amp;");
        else if (*p < 0x20 || *p == 0x7f)
            st = kv_buf_puts(b, " ");
        else
            st = kv_buf_append(b, p, 1);
    }
    return st;
}

/* Names a library must not take, and why: a header of C, POSIX or CUDA
 * (include/NAME.h would shadow it for every -I user), a target name CMake
 * or its generators reserve, or a prefix the generated code uses itself. */
static const struct {
    const char *name, *what;
} xp_reserved[] = {
#define XP_C "a C standard header"
    {"assert", XP_C}, {"complex", XP_C}, {"ctype", XP_C}, {"errno", XP_C}, {"fenv", XP_C}, {"float", XP_C},
    {"inttypes", XP_C}, {"iso646", XP_C}, {"limits", XP_C}, {"locale", XP_C}, {"math", XP_C}, {"setjmp", XP_C},
    {"signal", XP_C}, {"stdalign", XP_C}, {"stdarg", XP_C}, {"stdatomic", XP_C}, {"stdbit", XP_C},
    {"stdbool", XP_C}, {"stdckdint", XP_C}, {"stddef", XP_C}, {"stdint", XP_C}, {"stdio", XP_C}, {"stdlib", XP_C},
    {"stdnoreturn", XP_C}, {"string", XP_C}, {"tgmath", XP_C}, {"threads", XP_C}, {"time", XP_C}, {"uchar", XP_C},
    {"wchar", XP_C}, {"wctype", XP_C},
#define XP_P "a POSIX or system header"
    {"aio", XP_P}, {"alloca", XP_P}, {"arpa", XP_P}, {"byteswap", XP_P}, {"cpio", XP_P}, {"dirent", XP_P},
    {"dlfcn", XP_P}, {"elf", XP_P}, {"endian", XP_P}, {"fcntl", XP_P}, {"features", XP_P}, {"fmtmsg", XP_P},
    {"fnmatch", XP_P}, {"ftw", XP_P}, {"getopt", XP_P}, {"glob", XP_P}, {"grp", XP_P}, {"iconv", XP_P},
    {"langinfo", XP_P}, {"libgen", XP_P}, {"libintl", XP_P}, {"link", XP_P}, {"malloc", XP_P}, {"memory", XP_P},
    {"monetary", XP_P}, {"mqueue", XP_P}, {"ndbm", XP_P}, {"net", XP_P}, {"netdb", XP_P}, {"nl_types", XP_P},
    {"poll", XP_P}, {"pthread", XP_P}, {"pwd", XP_P}, {"regex", XP_P}, {"sched", XP_P}, {"search", XP_P},
    {"semaphore", XP_P}, {"spawn", XP_P}, {"strings", XP_P}, {"sys", XP_P}, {"syslog", XP_P}, {"tar", XP_P},
    {"termios", XP_P}, {"ulimit", XP_P}, {"unistd", XP_P}, {"utime", XP_P}, {"utmpx", XP_P}, {"wordexp", XP_P},
#define XP_CU "a CUDA header or library"
    {"builtin_types", XP_CU}, {"cub", XP_CU}, {"cublas", XP_CU}, {"cublas_api", XP_CU}, {"cublas_v2", XP_CU},
    {"cublaslt", XP_CU}, {"cuda", XP_CU}, {"cuda_bf16", XP_CU}, {"cuda_fp16", XP_CU}, {"cuda_fp8", XP_CU},
    {"cuda_runtime", XP_CU}, {"cuda_runtime_api", XP_CU}, {"cudart", XP_CU}, {"cudnn", XP_CU}, {"cufft", XP_CU},
    {"cupti", XP_CU}, {"curand", XP_CU}, {"cusolver", XP_CU}, {"cusparse", XP_CU}, {"cutlass", XP_CU},
    {"driver_types", XP_CU}, {"nccl", XP_CU}, {"npp", XP_CU}, {"nvjitlink", XP_CU}, {"nvml", XP_CU},
    {"nvrtc", XP_CU}, {"nvtx", XP_CU}, {"thrust", XP_CU}, {"vector_types", XP_CU},
#define XP_CM "a target name CMake reserves"
    {"all", XP_CM}, {"all_build", XP_CM}, {"clean", XP_CM}, {"continuous", XP_CM}, {"depend", XP_CM},
    {"edit_cache", XP_CM}, {"experimental", XP_CM}, {"help", XP_CM}, {"install", XP_CM},
    {"list_install_components", XP_CM}, {"nightly", XP_CM}, {"package", XP_CM}, {"package_source", XP_CM},
    {"preinstall", XP_CM}, {"rebuild_cache", XP_CM}, {"run_tests", XP_CM}, {"test", XP_CM},
    {"zero_check", XP_CM}, {"threads", XP_CM}, {"cudatoolkit", XP_CM},
#define XP_K "kevo's own names"
    {"kevo", XP_K}, {"x", XP_K},
#undef XP_C
#undef XP_P
#undef XP_CU
#undef XP_CM
#undef XP_K
};

kevo_status kevo_export_check_name(const char *name, kevo_err *err)
{
    bool ok = name && *name >= 'a' && *name <= 'z' && strlen(name) <= 64;
    for (const char *p = name; ok && *p; p++)
        ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok || strstr(name, "__") || name[strlen(name) - 1] == '_')
        return kevo_err_set(err, KEVO_ERR_ARG,
                            "--name must be a lower-case C identifier of at most 64 characters: a letter, then "
                            "letters, digits and single '_' not at the end (e.g. my_kernels)");
    for (size_t i = 0; i < KV_ARRAY_LEN(xp_reserved); i++)
        if (strcmp(name, xp_reserved[i].name) == 0)
            return kevo_err_set(err, KEVO_ERR_ARG, "--name '%s' clashes with %s: pick another name (e.g. %s_kernels)",
                                name, xp_reserved[i].what, name);
    if (strncmp(name, "x_", 2) == 0)
        return kevo_err_set(err, KEVO_ERR_ARG,
                            "--name '%s' clashes with the x_ prefix of the generated code's own names: pick another",
                            name);
    return KEVO_OK;
}

kevo_status kevo_emit_fill(const char *text, const char *name, const char *const *keys, const char *const *vals,
                           int nkeys, kv_buf *out, kevo_err *err)
{
    if (!kv_is_ident(name, 64))
        return kevo_err_set(err, KEVO_ERR_ARG, "a library name that is not an identifier");
    char upper[80];
    snprintf(upper, sizeof upper, "%s", name);
    for (char *p = upper; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    kevo_status st = KEVO_OK;
    for (const char *p = text; *p && !st;) {
        const char *at = strchr(p, '@');
        if (!at) {
            st = kv_buf_puts(out, p);
            break;
        }
        st = kv_buf_append(out, p, (size_t)(at - p));
        const char *rep = NULL;
        size_t klen = 0;
        if (strncmp(at, "@NAME_UPPER@", 12) == 0) {
            rep = upper;
            klen = 12;
        } else if (strncmp(at, "@NAME@", 6) == 0) {
            rep = name;
            klen = 6;
        }
        for (int i = 0; !rep && i < nkeys; i++) {
            size_t l = strlen(keys[i]);
            if (l && strncmp(at, keys[i], l) == 0) {
                rep = vals[i];
                klen = l;
            }
        }
        if (st)
            break;
        if (rep) {
            st = kv_buf_puts(out, rep);
            p = at + klen;
        } else {
            st = kv_buf_append(out, at, 1); /* another tool's @VAR@ (CMake) */
            p = at + 1;
        }
    }
    if (!st && !out->data)
        st = kv_buf_puts(out, "");
    return st ? kevo_err_set(err, st, "out of memory filling a template") : KEVO_OK;
}

typedef struct xp_syms_ctx {
    const kevo_space *sp;
    const kevo_op *op;
} xp_syms_ctx;

static const char *const xp_limits[] = {"sm", "num_sms", "max_smem", "max_regs_per_thread", "dtype_bytes",
                                        "dtype_bf16"};

static kevo_status xp_sym(void *ctx, const char *name, kv_buf *out, kevo_err *err)
{
    const xp_syms_ctx *c = ctx;
    bool known = kevo_space_param_index(c->sp, name) >= 0;
    for (int i = 0; !known && i < c->sp->nlets; i++)
        known = strcmp(c->sp->lets[i].name, name) == 0;
    for (int i = 0; !known && i < c->op->nsymbols; i++)
        known = strcmp(c->op->symbols[i], name) == 0;
    for (size_t i = 0; !known && i < KV_ARRAY_LEN(xp_limits); i++)
        known = strcmp(xp_limits[i], name) == 0;
    if (!known)
        return kevo_err_set(err, KEVO_ERR_ARG, "family '%s' uses unknown symbol '%s'", c->sp->family, name);
    if (!kv_is_ident(name, KEVO_SYM_NAME_MAX - 1))
        return kevo_err_set(err, KEVO_ERR_ARG, "family '%s' uses a symbol that is not an identifier", c->sp->family);
    return kv_buf_printf(out, "v_%s", name);
}

static kevo_status xp_emit_expr(kv_buf *b, const kevo_expr *e, xp_syms_ctx *ctx, kevo_err *err)
{
    return kevo_expr_to_c(e, b, xp_sym, ctx, err);
}

/* static int x_kN_plan(const x_syms *s, x_plan *p) { ... } */
kevo_status kevo_emit_plan(kv_buf *b, const kevo_space *sp, const kevo_op *op, const kevo_config *cfg, int ki,
                           kevo_err *err)
{
    xp_syms_ctx ctx = {sp, op};
    kevo_status st = KEVO_OK;
    /* names become C identifiers: the space file's loader checks them, and so does the emitter */
    for (int i = 0; i < sp->nparams && !st; i++)
        if (!kv_is_ident(sp->params[i].name, KEVO_SYM_NAME_MAX - 1))
            st = kevo_err_set(err, KEVO_ERR_ARG, "family '%s' has a param whose name is not an identifier",
                              sp->family);
    for (int i = 0; i < sp->nlets && !st; i++)
        if (!kv_is_ident(sp->lets[i].name, KEVO_SYM_NAME_MAX - 1))
            st = kevo_err_set(err, KEVO_ERR_ARG, "family '%s' has a let whose name is not an identifier", sp->family);
    for (int i = 0; i < op->nsymbols && !st; i++)
        if (!kv_is_ident(op->symbols[i], KEVO_SYM_NAME_MAX - 1))
            st = kevo_err_set(err, KEVO_ERR_ARG, "op '%s' has a symbol that is not an identifier", op->name);
    if (st)
        return st;
    kv_buf_printf(b, "static int x_k%d_plan(const x_syms *s, x_plan *p)\n{\n", ki);
    for (int i = 0; i < op->nsymbols; i++)
        kv_buf_printf(b, "    const int64_t v_%s = s->%s;\n", op->symbols[i], op->symbols[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(xp_limits); i++)
        kv_buf_printf(b, "    const int64_t v_%s = s->%s;\n", xp_limits[i], xp_limits[i]);
    for (int i = 0; i < sp->nparams; i++)
        kv_buf_printf(b, "    const int64_t v_%s = INT64_C(%lld);\n", sp->params[i].name, (long long)cfg->v[i]);
    for (int i = 0; i < sp->nlets && !st; i++) {
        kv_buf_printf(b, "    const int64_t v_%s = ", sp->lets[i].name);
        st = xp_emit_expr(b, sp->lets[i].expr, &ctx, err);
        kv_buf_puts(b, ";\n");
    }
    for (int i = 0; i < op->nsymbols; i++)
        kv_buf_printf(b, "    (void)v_%s;\n", op->symbols[i]);
    for (size_t i = 0; i < KV_ARRAY_LEN(xp_limits); i++)
        kv_buf_printf(b, "    (void)v_%s;\n", xp_limits[i]);
    for (int i = 0; i < sp->nparams; i++)
        kv_buf_printf(b, "    (void)v_%s;\n", sp->params[i].name);
    for (int i = 0; i < sp->nlets; i++)
        kv_buf_printf(b, "    (void)v_%s;\n", sp->lets[i].name);
    for (int i = 0; i < sp->nrequires && !st; i++) {
        kv_buf_puts(b, "    if (!(");
        st = xp_emit_expr(b, sp->requires[i].expr, &ctx, err);
        kv_buf_puts(b, "))\n        return 0; /* ");
        kevo_emit_c_comment(b, sp->requires[i].why);
        kv_buf_puts(b, " */\n");
    }
    for (int i = 0; i < sp->nconstraints && !st; i++) {
        kv_buf_puts(b, "    if (!(");
        st = xp_emit_expr(b, sp->constraints[i].expr, &ctx, err);
        kv_buf_puts(b, "))\n        return 0; /* ");
        kevo_emit_c_comment(b, sp->constraints[i].why);
        kv_buf_puts(b, " */\n");
    }
    kv_buf_puts(b, "    memset(p, 0, sizeof *p);\n    int64_t g;\n");
    int entry = 0;
    for (int i = 0; i < sp->nlaunches && !st; i++) {
        const kevo_launch_tpl *l = &sp->launches[i];
        int e = 0;
        while (e < i && strcmp(sp->launches[e].entry, l->entry) != 0)
            e++;
        e = e < i ? e : entry++;
        kv_buf_puts(b, "    if (");
        if (l->when)
            st = xp_emit_expr(b, l->when, &ctx, err);
        else
            kv_buf_puts(b, "1");
        kv_buf_printf(b, ") {\n        x_launch *l = &p->l[p->nlaunches++];\n        l->entry = %d;\n", e);
        static const char *const what[3] = {"grid", "block", "smem"};
        for (int w = 0; w < 3 && !st; w++) {
            for (int d = 0; d < (w == 2 ? 1 : 3) && !st; d++) {
                const kevo_expr *ex = w == 0 ? l->grid[d] : w == 1 ? l->block[d] : l->smem;
                long long lo = w == 2 ? 0 : 1;
                long long hi = w == 0 ? (d == 0 ? 2147483647LL : 65535) : w == 1 ? (d == 2 ? 64 : 1024) : 1 << 30;
                kv_buf_puts(b, "        g = ");
                st = xp_emit_expr(b, ex, &ctx, err);
                kv_buf_printf(b, ";\n        if (g < %lld || g > %lld)\n            return 0;\n", lo, hi);
                if (w == 2)
                    kv_buf_puts(b, "        l->smem = (unsigned)g;\n");
                else
                    kv_buf_printf(b, "        l->%s[%d] = (unsigned)g;\n", what[w], d);
            }
        }
        kv_buf_puts(b, "    }\n");
    }
    kv_buf_puts(b, "    g = ");
    if (sp->workspace)
        st = st ? st : xp_emit_expr(b, sp->workspace, &ctx, err);
    else
        kv_buf_puts(b, "0");
    kv_buf_puts(b, ";\n    if (g < 0)\n        return 0;\n    p->workspace = (uint64_t)g;\n    p->pad_k = (");
    if (sp->pad_k)
        st = st ? st : xp_emit_expr(b, sp->pad_k, &ctx, err);
    else
        kv_buf_puts(b, "0");
    kv_buf_puts(b, ") != 0;\n");
    for (int i = 0; i < sp->ntmaps && !st; i++) {
        for (int d = 0; d < 3 && !st; d++) {
            kv_buf_puts(b, "    g = ");
            st = xp_emit_expr(b, sp->tmaps[i].box[d], &ctx, err);
            kv_buf_printf(b, ";\n    if (g < 1 || g > 256)\n        return 0;\n    p->tbox[%d][%d] = (unsigned)g;\n", i,
                          d);
        }
        kv_buf_puts(b, "    g = ");
        if (sp->tmaps[i].swizzle)
            st = st ? st : xp_emit_expr(b, sp->tmaps[i].swizzle, &ctx, err);
        else
            kv_buf_puts(b, "0");
        kv_buf_printf(b, ";\n    if (g != 0 && g != 32 && g != 64 && g != 128)\n        return 0;\n"
                         "    p->tswizzle[%d] = (int)g;\n",
                      i);
    }
    kv_buf_puts(b, "    return 1;\n}\n\n");
    return st;
}

int kevo_emit_tmap_index(const kevo_op *op, const char *tensor)
{
    for (int i = 0, k = 0; i < op->ntensors; i++) {
        if (!op->tensors[i].tmap)
            continue;
        if (strcmp(op->tensors[i].name, tensor) == 0)
            return k;
        k++;
    }
    return -1;
}

kevo_status kevo_emit_tmap_tensors(kv_buf *b, const kevo_op *op)
{
    kevo_status st = KEVO_OK;
    for (int i = 0, k = 0; i < op->ntensors && !st; i++) {
        if (!op->tensors[i].tmap)
            continue;
        st = kv_buf_printf(b, "%s%d %s", k ? ", " : "", k, op->tensors[i].name);
        k++;
    }
    return st;
}

kevo_status kevo_emit_kernel_entry(kv_buf *b, const kevo_space *sp, const kevo_op *op, const kevo_config *cfg,
                                   int dtype, int sm, int ki, kevo_err *err)
{
    kevo_status st = KEVO_OK;
    kv_buf params;
    kv_buf_init(&params);
    kevo_config_json(sp, cfg, &params);
    kv_buf_puts(b, "    {");
    kevo_emit_c_string(b, sp->family);
    kv_buf_puts(b, ", ");
    kevo_emit_c_string(b, params.data ? params.data : "");
    kv_buf_release(&params);
    kv_buf_printf(b, ", %d, %d, x_k%d_cubin, ", dtype, sm, ki);
    int ne = 0;
    const char *entries[KEVO_MAX_LAUNCHES];
    for (int l = 0; l < sp->nlaunches; l++) {
        bool seen = false;
        for (int e = 0; e < ne; e++)
            seen |= strcmp(entries[e], sp->launches[l].entry) == 0;
        if (!seen)
            entries[ne++] = sp->launches[l].entry;
    }
    kv_buf_printf(b, "%d, {", ne);
    for (int e = 0; e < ne; e++) {
        kv_buf_puts(b, e ? ", " : "");
        kevo_emit_c_string(b, entries[e]);
    }
    kv_buf_printf(b, "}, x_k%d_plan, %d, {", ki, sp->ntmaps);
    for (int t = 0; t < sp->ntmaps; t++) {
        int ti = kevo_emit_tmap_index(op, sp->tmaps[t].tensor);
        if (ti < 0 && !st)
            st = kevo_err_set(err, KEVO_ERR_UNSUPPORTED, "family '%s' maps unknown tensor '%s'", sp->family,
                              kv_is_ident(sp->tmaps[t].tensor, 23) ? sp->tmaps[t].tensor : "(not a name)");
        kv_buf_printf(b, "%s{%d}", t ? ", " : "", ti);
    }
    kv_buf_puts(b, "}, 0, NULL, {0}, {{0}}},\n");
    return st;
}
