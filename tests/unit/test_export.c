/* test_export.c — kevo export on DBs measured on a GPU, without one:
 * tests/fixtures/export/kevo_h200.db (ikbo_lce on an H200) and
 * kevo_fa_h100.db (ikbo_fa on an H100), each a fp16 and a bf16 run with the
 * exported candidates' cubins kept (bench/export_fixture.py); for each op:
 *   - the same DB exports to the same bytes;
 *   - the header compiles as C11 and C++17 with -Wall -Wextra -Werror -pedantic;
 *   - the folder configures, builds and installs with CMake, and the example
 *     builds against the installed package (find_package);
 *   - the launch plans compiled to C agree with kevo's own planner on every
 *     kernel at many shapes, valid and not;
 *   - the op's pieces and what its description derives fill every key of
 *     the generic runtime;
 *   - ikbo_fa's call path against a fake driver (launches, arguments,
 *     tensor maps, shared-memory attribute, refusals);
 *   - the vendor fallback (a copy of kevo_h200.db where run 2 lost to its
 *     beta = 1 or decomposed cuBLAS peer): the generated vendor entry, its
 *     README line and event, and ikbo_lce's call path against a fake driver
 *     and a fake cuBLASLt (tests/export/fake_*.c): the GEMMs with the stored
 *     algorithms, the gather or broadcast-add, the heuristic where they do
 *     not apply, VENDOR_UNAVAILABLE without cuBLASLt. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/store.h"
#include "export/emit.h"
#include "export/export.h"
#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static char tmp[64];

/* Export options for op's kernels in db into dir, the rest defaults. */
static void opts_for(kevo_export_opts *o, const char *op, const char *db, const char *dir)
{
    kevo_export_opts_init(o);
    o->op = op;
    o->db_path = db;
    o->out_dir = dir;
    o->data_dir = tu_home();
}

/* kevo_export with a handle of its own (events to fn, ctx) and its error
 * copied into *err. */
static kevo_status export_with(const kevo_export_opts *o, kevo_event_fn fn, void *ctx, int *nk, int *nt,
                               kevo_err *err)
{
    kevo_ctx *h = kevo_ctx_new();
    assert_non_null(h);
    kevo_ctx_set_events(h, fn, ctx);
    kevo_status st = kevo_export(h, o, nk, nt);
    *err = *kevo_ctx_error(h);
    kevo_ctx_free(h);
    return st;
}

/* Export with options o, asserting it works (its error printed when not);
 * *nk and *nt get the kernel and tuned-shape counts. */
static void export_ok(const kevo_export_opts *o, int *nk, int *nt)
{
    kevo_err err;
    kevo_status st = export_with(o, NULL, NULL, nk, nt, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
}

/* Export op's kernels in db into dir, the rest defaults (export_ok). */
static void export_db(const char *op, const char *db, const char *dir, int *nk, int *nt)
{
    kevo_export_opts o;
    opts_for(&o, op, db, dir);
    export_ok(&o, nk, nt);
}

/* An op's export fixture: a DB measured on a GPU with the exported
 * candidates' cubins kept (bench/export_fixture.py), its kernels' args
 * struct built from a row of the op's six dispatch keys (C text over
 * `sh[i]` and `dt`), and shapes for the plan comparison. */
typedef struct xp_case {
    const char *op, *fixture, *args_init;
    const char *shapes[8];
} xp_case;

static const xp_case xp_lce = {
    "ikbo_lce", "kevo_h200.db",
    "{(kevo_tuned_dtype)dt, sh[i][0], sh[i][1], sh[i][2], sh[i][3], sh[i][4], sh[i][5], 0, 0, 0, 0, 0, 0, 0, 0}",
    {"B=1024,M=433,N=256,Ku=1178,Kc=866,U=15", "B=2048,M=433,N=256,Ku=1178,Kc=866,U=30",
     "B=300,M=200,N=128,Ku=500,Kc=300,U=20", "B=7,M=37,N=72,Ku=45,Kc=29,U=2",
     "B=64,M=100,N=100,Ku=96,Kc=72,U=8", /* N % 8 != 0: refused */
     "B=4096,M=1000,N=512,Ku=64,Kc=4000,U=4096"},
};

/* (H100: a fp16 D=128 and a bf16 D=64 run, bench/device_fa_export.sh) */
static const xp_case xp_fa = {
    "ikbo_fa", "kevo_fa_h100.db",
    "{(kevo_tuned_dtype)dt, sh[i][0], sh[i][1], sh[i][2], sh[i][3], sh[i][4], sh[i][5], 0.125f, 0, 0, 0, 0, 0}",
    {"Bc=2048,H=2,Sq=64,D=128,Skv=2048,U=32", "Bc=1024,H=2,Sq=64,D=64,Skv=1024,U=32",
     "Bc=2047,H=2,Sq=64,D=64,Skv=3000,U=40", "Bc=300,H=3,Sq=50,D=128,Skv=777,U=7",
     "Bc=5,H=1,Sq=1,D=128,Skv=20,U=5", /* Skv far below the tiles: refused */
     "Bc=65536,H=16,Sq=128,D=128,Skv=16384,U=1000"},
};

static void export_op(const xp_case *c, const char *dir)
{
    char db[1024];
    snprintf(db, sizeof db, "%s/tests/fixtures/export/%s", tu_home(), c->fixture);
    int nk = 0, nt = 0;
    export_db(c->op, db, dir, &nk, &nt);
    assert_true(nk >= 2);
    assert_int_equal(nt, 2); /* each fixture: two runs at two shapes */
}

static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

static void test_reproducible(void **state)
{
    (void)state;
    const xp_case *cases[] = {&xp_lce, &xp_fa};
    for (size_t i = 0; i < KV_ARRAY_LEN(cases); i++) {
        char a[128], b[128];
        snprintf(a, sizeof a, "%s/a_%s", tmp, cases[i]->op);
        snprintf(b, sizeof b, "%s/b_%s", tmp, cases[i]->op);
        export_op(cases[i], a);
        export_op(cases[i], b);
        assert_int_equal(sh("diff -r '%s' '%s' >/dev/null", a, b), 0);
    }
}

static void test_header_strict(void **state)
{
    (void)state;
    const xp_case *cases[] = {&xp_lce, &xp_fa};
    for (size_t i = 0; i < KV_ARRAY_LEN(cases); i++) {
        const char *op = cases[i]->op;
        char dir[128], c[160], cpp[160];
        snprintf(dir, sizeof dir, "%s/h_%s", tmp, op);
        export_op(cases[i], dir);
        kv_buf use;
        kv_buf_init(&use);
        kv_buf_printf(&use,
                      "#include \"kevo_tuned.h\"\n"
                      "int main(void) {\n"
                      "    kevo_tuned_%s_args a;\n"
                      "    a.dtype = KEVO_TUNED_DTYPE_BF16;\n"
                      "    return kevo_tuned_%s_workspace_size(&a) == 0 &&\n"
                      "           kevo_tuned_status_string(KEVO_TUNED_STATUS_UNSUPPORTED)[0] == 0;\n"
                      "}\n",
                      op, op);
        snprintf(c, sizeof c, "%s/use_%s.c", tmp, op);
        snprintf(cpp, sizeof cpp, "%s/use_%s.cpp", tmp, op);
        kevo_err err;
        assert_int_equal(kv_write_file(c, use.data, use.len, &err), KEVO_OK);
        assert_int_equal(kv_write_file(cpp, use.data, use.len, &err), KEVO_OK);
        kv_buf_release(&use);
        assert_int_equal(sh("gcc -std=c11 -Wall -Wextra -Werror -pedantic -I'%s/include' -I'%s' -fsyntax-only '%s'",
                            dir, KEVO_CUDA_INCLUDE, c),
                         0);
        assert_int_equal(sh("g++ -std=c++17 -Wall -Wextra -Werror -pedantic -I'%s/include' -I'%s' -fsyntax-only '%s'",
                            dir, KEVO_CUDA_INCLUDE, cpp),
                         0);
        /* the library's own source: no warning a user's build flags would raise */
        assert_int_equal(sh("gcc -std=c11 -Wall -Wextra -Werror -I'%s/include' -I'%s' -fsyntax-only "
                            "'%s/src/kevo_tuned.c'",
                            dir, KEVO_CUDA_INCLUDE, dir),
                         0);
    }
}

static void test_cmake_package(void **state)
{
    (void)state;
    const xp_case *cases[] = {&xp_lce, &xp_fa};
    static const char *const examples[] = {"ikbo_example", "ikbo_fa_example"};
    for (size_t i = 0; i < KV_ARRAY_LEN(cases); i++) {
        const char *op = cases[i]->op;
        char dir[128], inst[128];
        snprintf(dir, sizeof dir, "%s/pkg_%s", tmp, op);
        snprintf(inst, sizeof inst, "%s/inst_%s", tmp, op);
        export_op(cases[i], dir);
        assert_int_equal(sh("cmake -S '%s' -B '%s/build' -DCMAKE_BUILD_TYPE=Release >/dev/null && "
                            "cmake --build '%s/build' -j2 >/dev/null && "
                            "cmake --install '%s/build' --prefix '%s' >/dev/null",
                            dir, dir, dir, dir, inst),
                         0);
        assert_int_equal(sh("test -f '%s/lib/cmake/kevo_tuned/kevo_tunedConfig.cmake' && "
                            "test -f '%s/include/kevo_tuned.h' && ls '%s'/lib*/libkevo_tuned.so >/dev/null && "
                            "ls '%s'/lib*/libkevo_tuned.a >/dev/null && ls '%s'/lib*/pkgconfig/kevo_tuned.pc "
                            ">/dev/null",
                            inst, inst, inst, inst, inst),
                         0);
        /* an application finds and links it */
        assert_int_equal(sh("cmake -S '%s/kernels/%s/export/example' -B '%s/ex_%s' "
                            "-Dkevo_tuned_DIR='%s/lib/cmake/kevo_tuned' >/dev/null && cmake --build '%s/ex_%s' "
                            ">/dev/null && test -x '%s/ex_%s/%s'",
                            tu_home(), op, tmp, op, inst, tmp, op, tmp, op, examples[i]),
                         0);
    }
}

/* The generated plan of every kernel at several shapes, printed by a small
 * program built on the generated source, against kevo_space_plan. */
/* Driver stubs: planning and dispatch never reach the driver, so a test
 * program runs the generated library's C without one. */
static const char xp_stubs[] =
    "CUresult CUDAAPI cuCtxGetDevice(CUdevice *d) { (void)d; return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuDeviceGetAttribute(int *p, CUdevice_attribute a, CUdevice d) "
    "{ (void)p; (void)a; (void)d; return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuLibraryLoadData(CUlibrary *l, const void *c, CUjit_option *o, void **ov, "
    "unsigned no, CUlibraryOption *lo, void **lov, unsigned nlo) { return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *n) "
    "{ return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuLibraryUnload(CUlibrary l) { return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) "
    "{ return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *t, CUtensorMapDataType d, cuuint32_t r, "
    "void *g, const cuuint64_t *gd, const cuuint64_t *gs, const cuuint32_t *b, const cuuint32_t *e, "
    "CUtensorMapInterleave i, CUtensorMapSwizzle s, CUtensorMapL2promotion l, "
    "CUtensorMapFloatOOBfill f) { return CUDA_ERROR_NOT_INITIALIZED; }\n"
    "CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, "
    "unsigned by, unsigned bz, unsigned sm, CUstream st, void **p, void **e) "
    "{ return CUDA_ERROR_NOT_INITIALIZED; }\n"
;

static void plans_match_kevo(const xp_case *c)
{
    char dir[128], prog[160], bin[160], out[160];
    snprintf(dir, sizeof dir, "%s/plans_%s", tmp, c->op);
    export_op(c, dir);
    const kevo_op *op = kevo_op_find(c->op);
    const kevo_op_export *xd = op->export_desc;
    assert_int_equal(xd->ntuned_keys, 6);
    int nshapes = 0;
    while (nshapes < (int)KV_ARRAY_LEN(c->shapes) && c->shapes[nshapes])
        nshapes++;
    kv_buf src;
    kv_buf_init(&src);
    kv_buf_printf(&src,
                  "#include \"%s/src/kevo_tuned.c\"\n#include <stdio.h>\n"
                  "%s"
                  "static int run(const int (*sh)[6]);\n"
                  "int main(void) {\n  static const int sh[][6] = {\n",
                  dir, xp_stubs);
    kevo_syms syms[KV_ARRAY_LEN(c->shapes)];
    kevo_err err;
    for (int i = 0; i < nshapes; i++) {
        assert_int_equal(op->parse_shape(c->shapes[i], &syms[i], &err), KEVO_OK);
        kv_buf_puts(&src, "    {");
        for (int j = 0; j < 6; j++) {
            int64_t v = 0;
            assert_true(kevo_syms_get(&syms[i], xd->tuned_keys[j], &v));
            kv_buf_printf(&src, "%s%lld", j ? ", " : "", (long long)v);
        }
        kv_buf_puts(&src, "},\n");
    }
    /* planning never reaches the driver: stubs let the program run without one */
    kv_buf_puts(&src, "  };\n  return run(sh);\n}\n");
    kv_buf_printf(&src,
                  "static int run(const int (*sh)[6]) {\n  for (int k = 0; k < X_NKERNELS; k++)\n"
                  "    for (int i = 0; i < %d; i++) {\n"
                  "      int dt = x_kernels[k].dtype;\n"
                  "      kevo_tuned_%s_args a = %s;\n"
                  "      x_device d = {1, 90, 132, 232448};\n      x_syms s;\n      x_plan p;\n"
                  "      x_syms_of(&a, &d, &s);\n      int ok = x_kernels[k].plan(&s, &p);\n"
                  "      printf(\"%%s|%%s|%%d|%%d|%%d\", x_kernels[k].family, x_kernels[k].params, "
                  "x_kernels[k].dtype, i, ok);\n"
                  "      if (ok) {\n        printf(\"|%%d|%%llu|%%d\", p.nlaunches, (unsigned long long)p.workspace, "
                  "p.pad_k);\n        for (int l = 0; l < p.nlaunches; l++)\n"
                  "          printf(\"|%%s %%u %%u %%u %%u %%u %%u %%u\", x_kernels[k].entries[p.l[l].entry], "
                  "p.l[l].grid[0], p.l[l].grid[1], p.l[l].grid[2], p.l[l].block[0], p.l[l].block[1], "
                  "p.l[l].block[2], p.l[l].smem);\n"
                  "        for (int t = 0; t < x_kernels[k].ntmaps; t++)\n"
                  "          printf(\"|box %%u %%u %%u\", p.tbox[t][0], p.tbox[t][1], p.tbox[t][2]);\n      }\n"
                  "      printf(\"\\n\");\n    }\n  return 0;\n}\n",
                  nshapes, c->op, c->args_init);
    snprintf(prog, sizeof prog, "%s/plans_%s.c", tmp, c->op);
    snprintf(bin, sizeof bin, "%s/plans_%s_bin", tmp, c->op);
    snprintf(out, sizeof out, "%s/plans_%s.txt", tmp, c->op);
    assert_int_equal(kv_write_file(prog, src.data, src.len, &err), KEVO_OK);
    kv_buf_release(&src);
    assert_int_equal(sh("gcc -std=c11 -w -I'%s/include' -I'%s' '%s' -o '%s' -lpthread && '%s' > '%s'",
                        dir, KEVO_CUDA_INCLUDE, prog, bin, bin, out),
                     0);

    char *text = NULL;
    assert_int_equal(kv_read_file(out, &text, NULL, &err), KEVO_OK);
    char tdir[1024];
    snprintf(tdir, sizeof tdir, "%s/templates", tu_home());
    kevo_space **sp = NULL;
    int nsp = 0;
    assert_int_equal(kevo_spaces_load_dir(tdir, c->op, &sp, &nsp, &err), KEVO_OK);
    kevo_limits lim = {90, 132, 232448, 255};
    int lines = 0, valid = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char fam[64], params[256];
        int dtype, si, ok;
        assert_int_equal(sscanf(line, "%63[^|]|%255[^|]|%d|%d|%d", fam, params, &dtype, &si, &ok), 5);
        kevo_space *s = kevo_spaces_find(sp, nsp, fam);
        assert_non_null(s);
        kevo_config cfg;
        assert_int_equal(kevo_config_parse_json(s, params, &cfg, &err), KEVO_OK);
        char why[256];
        int want_ok = kevo_space_supports(s, &syms[si], &lim, (kevo_dtype)dtype, &err) == KEVO_OK &&
                      kevo_space_check(s, &syms[si], &lim, (kevo_dtype)dtype, &cfg, why, sizeof why) == 1;
        kevo_plan plan;
        if (want_ok)
            want_ok = kevo_space_plan(s, &syms[si], &lim, (kevo_dtype)dtype, &cfg, &plan, &err) == KEVO_OK;
        if (ok != want_ok)
            fprintf(stderr, "validity differs: %s\n", line);
        assert_int_equal(ok, want_ok);
        if (want_ok) {
            kv_buf exp;
            kv_buf_init(&exp);
            kv_buf_printf(&exp, "%s|%s|%d|%d|1|%d|%llu|%d", fam, params, dtype, si, plan.nlaunches,
                          (unsigned long long)plan.workspace_bytes, plan.pad_k);
            for (int l = 0; l < plan.nlaunches; l++) {
                const kevo_launch *L = &plan.launches[l];
                kv_buf_printf(&exp, "|%s %u %u %u %u %u %u %u", L->entry, L->grid[0], L->grid[1], L->grid[2],
                              L->block[0], L->block[1], L->block[2], L->smem);
            }
            for (int t = 0; t < plan.ntmaps; t++)
                kv_buf_printf(&exp, "|box %u %u %u", plan.tmaps[t].box[0], plan.tmaps[t].box[1],
                              plan.tmaps[t].box[2]);
            if (strcmp(exp.data, line) != 0)
                fprintf(stderr, "generated: %s\nkevo:      %s\n", line, exp.data);
            assert_string_equal(line, exp.data);
            kv_buf_release(&exp);
            valid++;
        }
        lines++;
    }
    printf("  %s: %d kernel x shape plans compared, %d valid\n", c->op, lines, valid);
    assert_true(valid > 0 && valid < lines); /* both kinds were exercised */
    kevo_spaces_free(sp, nsp);
    free(text);
}

static void test_plans_match_kevo(void **state)
{
    (void)state;
    plans_match_kevo(&xp_lce);
    plans_match_kevo(&xp_fa);
}

/* The FA library's call path against a fake driver (tests/export/fake_driver_fa.c). */
static void test_fa_call(void **state)
{
    (void)state;
    char dir[128];
    snprintf(dir, sizeof dir, "%s/call_fa", tmp);
    export_op(&xp_fa, dir);
    assert_int_equal(sh("gcc -std=c11 -Wall -Wextra -Werror -DKEVO_LIB_SRC='\"%s/src/kevo_tuned.c\"' -I'%s/include' "
                        "-I'%s' '%s/tests/export/fake_driver_fa.c' -o '%s/fake_fa' -lpthread -lm && '%s/fake_fa'",
                        dir, dir, KEVO_CUDA_INCLUDE, tu_home(), tmp, tmp),
                     0);
}

/* g++ on a generated binding (run in the package's python/ folder)
 * against tests/torch/stub, the PyTorch and Python API it uses declared
 * strictly (tests/torch/stub/README.md); the CUDA headers are the
 * toolkit's.  LC_ALL=C: messages in ASCII, for the greps below. */
#define TORCH_STUB_GXX                                                                                                 \
    "LC_ALL=C g++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I'" KEVO_TORCH_STUB "' -I'" KEVO_CUDA_INCLUDE        \
    "' -Icsrc"

/* The stub refuses what PyTorch would: each edit breaks the generated
 * binding in python_dir once (a misspelled member, a wrong argument count
 * or type, an unknown dispatch key, a kernel argument the dispatcher
 * cannot take, a streamed TORCH_CHECK message), and g++ must fail with the
 * error named. */
static void torch_stub_refuses(const char *op, const char *python_dir)
{
    static const struct {
        const char *op; /* NULL: both */
        const char *sed, *error;
    } breaks[] = {
        {NULL, "s/\\.data_ptr(/.data_pt(/g", "has no member named 'data_pt'"},
        {NULL, "s/t\\.size(i)/t.size(i, 0)/", "no matching function for call to 'at::Tensor::size("},
        {NULL, "s/CUDAGuard guard(\\([a-z]*\\)\\.device())/CUDAGuard guard(\\1)/",
         "CUDAGuard::CUDAGuard(const at::Tensor&)"},
        {NULL, "s/TORCH_LIBRARY_IMPL(kevo, CUDA, m)/TORCH_LIBRARY_IMPL(kevo, Cuda, m)/",
         "'Cuda' is not a member of 'c10::DispatchKey'"},
        {NULL, "s/PyErr_WarnEx(PyExc_UserWarning, msg, 1)/PyErr_WarnEx(PyExc_UserWarning, msg)/",
         "too few arguments to function 'int PyErr_WarnEx("},
        {NULL, "s/TORCH_CHECK(false, (const char \\*)x_msg_)/TORCH_CHECK(false, \"kevo: \", x_msg_)/",
         "macro \"TORCH_CHECK\" passed 3 arguments"},
        {"ikbo_lce", "s/^at::Tensor x_lce_meta(const at::Tensor &wu/at::Tensor x_lce_meta(int, const at::Tensor \\&wu/",
         "a kernel argument type is not one the dispatcher takes"},
        {"ikbo_fa", "s/c10::optional<double> scale)/c10::optional<float> scale)/",
         "a kernel argument type is not one the dispatcher takes"},
    };
    int n = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(breaks); i++) {
        if (breaks[i].op && strcmp(breaks[i].op, op) != 0)
            continue;
        char bad[192], log[192];
        snprintf(bad, sizeof bad, "%s/torch_broken_%s_%zu.cpp", tmp, op, i);
        snprintf(log, sizeof log, "%s/torch_broken_%s_%zu.log", tmp, op, i);
        /* the edit applies (the file changed) */
        assert_int_equal(sh("cd '%s' && sed -e '%s' csrc/kevo_pkg_torch.cpp > '%s' && "
                            "! cmp -s '%s' csrc/kevo_pkg_torch.cpp",
                            python_dir, breaks[i].sed, bad, bad),
                         0);
        /* and compiling the result fails, for that reason (the error
         * text travels in the environment: it has quotes of both kinds) */
        assert_int_equal(setenv("KEVO_TORCH_ERROR", breaks[i].error, 1), 0);
        assert_int_equal(sh("cd '%s' && ! " TORCH_STUB_GXX " '%s' 2>'%s' && grep -qF -e \"$KEVO_TORCH_ERROR\" '%s' || "
                            "{ echo \"expected: $KEVO_TORCH_ERROR\"; cat '%s'; exit 1; }",
                            python_dir, bad, log, log, log),
                         0);
        n++;
    }
    unsetenv("KEVO_TORCH_ERROR");
    printf("  %s: g++ refuses each of %d broken copies of the binding against the stub\n", op, n);
}

/* --torch: the Python package beside the library, for both ops: the
 * Python compiles, every key is filled, the op is registered in the kevo
 * namespace with a CUDA and a meta kernel, the C sources are the library's
 * own bytes and compile as C11, and the binding's C++ passes g++
 * -fsyntax-only -Wall -Wextra -Werror against tests/torch/stub (always:
 * CI has no PyTorch) and, where PyTorch is importable, against its own
 * headers too.  (The build, the op against PyTorch, torch.compile and CUDA
 * graphs: bench/device_torch.sh.) */
static void test_torch_package(void **state)
{
    (void)state;
    const xp_case *cases[] = {&xp_lce, &xp_fa};
    int have_torch = system("python3 -c 'import torch' >/dev/null 2>&1") == 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(cases); i++) {
        const char *op = cases[i]->op;
        char dir[128], db[1024];
        snprintf(dir, sizeof dir, "%s/torch_%s", tmp, op);
        snprintf(db, sizeof db, "%s/tests/fixtures/export/%s", tu_home(), cases[i]->fixture);
        kevo_export_opts o;
        opts_for(&o, op, db, dir);
        o.name = "kevo_pkg";
        o.torch = true;
        int nk = 0, nt = 0;
        export_ok(&o, &nk, &nt);
        assert_int_equal(sh("cd '%s/python' && python3 -m py_compile setup.py kevo_pkg/__init__.py && "
                            "cmp csrc/kevo_pkg.c ../src/kevo_pkg.c && cmp csrc/kevo_pkg.h ../include/kevo_pkg.h && "
                            "test -f pyproject.toml && test -f README.md && "
                            "! grep -l '@OP\\|@NAME\\|@ABI' setup.py pyproject.toml README.md kevo_pkg/__init__.py "
                            "csrc/kevo_pkg_torch.cpp && "
                            "grep -q 'TORCH_LIBRARY_FRAGMENT(kevo, m)' csrc/kevo_pkg_torch.cpp && "
                            "grep -q 'm.def(\"%s(' csrc/kevo_pkg_torch.cpp && "
                            "grep -q 'TORCH_LIBRARY_IMPL(kevo, CUDA, m)' csrc/kevo_pkg_torch.cpp && "
                            "grep -q 'TORCH_LIBRARY_IMPL(kevo, Meta, m)' csrc/kevo_pkg_torch.cpp && "
                            "grep -q '^%s = torch.ops.kevo.%s$' kevo_pkg/__init__.py && "
                            "gcc -std=c11 -Wall -Wextra -Werror -Icsrc -I'%s' -c csrc/kevo_pkg.c -o '%s/pkg_%s.o'",
                            dir, op, op, op, KEVO_CUDA_INCLUDE, tmp, op),
                         0);
        /* the manifest lists the package's files */
        char path[256];
        char *text = NULL;
        kevo_err err;
        snprintf(path, sizeof path, "%s/kevo-export.json", dir);
        assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
        assert_non_null(strstr(text, "\"python/csrc/kevo_pkg_torch.cpp\""));
        assert_non_null(strstr(text, "\"python/kevo_pkg/__init__.py\""));
        free(text);
        char python_dir[160];
        snprintf(python_dir, sizeof python_dir, "%s/python", dir);
        assert_int_equal(sh("cd '%s' && " TORCH_STUB_GXX " csrc/kevo_pkg_torch.cpp", python_dir), 0);
        torch_stub_refuses(op, python_dir);
        if (have_torch)
            assert_int_equal(sh("cd '%s' && g++ -std=c++17 -fsyntax-only -Icsrc -I'%s' "
                                "$(python3 -c 'import sysconfig, torch.utils.cpp_extension as c; "
                                "print(\" \".join(\"-I\" + p for p in c.include_paths() + "
                                "[sysconfig.get_paths()[\"include\"]]))') csrc/kevo_pkg_torch.cpp",
                                python_dir, KEVO_CUDA_INCLUDE),
                             0);
        else
            printf("  %s: PyTorch is not importable here: the binding's C++ is checked against tests/torch/stub "
                   "only (against PyTorch: bench/device_torch.sh)\n",
                   op);
    }
    /* a name Python cannot import as a package is refused before anything is written */
    kevo_export_opts o;
    char db[1024], dir[128];
    snprintf(db, sizeof db, "%s/tests/fixtures/export/kevo_fa_h100.db", tu_home());
    snprintf(dir, sizeof dir, "%s/torch_bad", tmp);
    opts_for(&o, "ikbo_fa", db, dir);
    o.name = "lambda";
    o.torch = true;
    int nk = 0, nt = 0;
    kevo_err err;
    assert_int_equal(export_with(&o, NULL, NULL, &nk, &nt, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "cannot name a Python package"));
    assert_int_equal(access(dir, F_OK), -1);
}

/* A tuned shape whose best does not beat its best in-run peer gets no
 * kernel and a dispatch entry that returns UNSUPPORTED (the README says
 * so); the other run's shape still dispatches to its kernel. */
static void test_unsupported(void **state)
{
    (void)state;
    char src_db[1024], db[160], dir[160], prog[160], bin[160];
    snprintf(src_db, sizeof src_db, "%s/tests/fixtures/export/kevo_h200.db", tu_home());
    snprintf(db, sizeof db, "%s/lost.db", tmp);
    snprintf(dir, sizeof dir, "%s/lost", tmp);
    assert_int_equal(sh("cp '%s' '%s'", src_db, db), 0);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    /* the bf16 run (2): its peer at a tenth of a millisecond, every candidate slower */
    assert_int_equal(sqlite3_exec(h,
                                  "UPDATE runs SET decomposed_ms = 0.1 WHERE id = 2;"
                                  "UPDATE candidates SET vs_peer = 0.1 / median_ms WHERE run_id = 2;",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(h);
    int nk = 0, nt = 0;
    kevo_err err;
    export_db("ikbo_lce", db, dir, &nk, &nt);
    assert_int_equal(nt, 2);
    assert_true(nk >= 1);
    char path[256];
    char *text = NULL;
    snprintf(path, sizeof path, "%s/src/kevo_tuned.c", dir);
    assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
    assert_non_null(strstr(text, ", -1}, /* run 2: "));
    assert_non_null(strstr(text, "beats no in-run peer: UNSUPPORTED"));
    free(text);
    snprintf(path, sizeof path, "%s/README.md", dir);
    assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
    assert_non_null(strstr(text, "none: UNSUPPORTED"));
    free(text);
    /* the dispatch: run 1's shape (fp16) has a kernel, run 2's (bf16) none */
    kv_buf src;
    kv_buf_init(&src);
    kv_buf_printf(&src,
                  "#include \"%s/src/kevo_tuned.c\"\n#include <stdio.h>\n%s"
                  "int main(void) {\n  x_device d = {1, 90, 132, 232448};\n  x_plan p;\n"
                  "  kevo_tuned_ikbo_lce_args a = {KEVO_TUNED_DTYPE_F16, 1024, 433, 256, 1178, 866, 15, 0, 1184, 0, "
                  "872, 0, 0, 0, 0};\n"
                  "  int k16 = x_choose(&a, &d, &p);\n  a.dtype = KEVO_TUNED_DTYPE_BF16;\n"
                  "  int k8 = x_choose(&a, &d, &p);\n  printf(\"%%d %%d\\n\", k16, k8);\n"
                  "  return k16 >= 0 && k8 == -1 ? 0 : 1;\n}\n",
                  dir, xp_stubs);
    snprintf(prog, sizeof prog, "%s/lost.c", tmp);
    snprintf(bin, sizeof bin, "%s/lost_bin", tmp);
    assert_int_equal(kv_write_file(prog, src.data, src.len, &err), KEVO_OK);
    kv_buf_release(&src);
    assert_int_equal(sh("gcc -std=c11 -w -I'%s/include' -I'%s' '%s' -o '%s' -lpthread && '%s'", dir,
                        KEVO_CUDA_INCLUDE, prog, bin, bin),
                     0);
}

/* Export case c into tmp/sub and check its header, source and pkg-config
 * file: no template key left unfilled, each of want[file][] (NULL-ended)
 * present, `absent` (unless NULL) nowhere. */
static void check_pieces(const xp_case *c, const char *sub, const char *const want[3][5], const char *absent)
{
    static const char *const files[] = {"include/kevo_tuned.h", "src/kevo_tuned.c", "kevo_tuned.pc.in"};
    static const char *const keys[] = {"@OP_", "@ABI@", "@KERNELS@", "@SYMBOLS@", "@TMAP_TENSORS@", "@TUNED_KEYS@",
                                       "@NAME"};
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "%s/%s", tmp, sub);
    export_op(c, dir);
    kevo_err err;
    for (size_t i = 0; i < KV_ARRAY_LEN(files); i++) {
        char *text = NULL;
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
        for (size_t k = 0; k < KV_ARRAY_LEN(keys); k++)
            assert_null(strstr(text, keys[k]));
        for (int w = 0; w < 5 && want[i][w]; w++)
            assert_non_null(strstr(text, want[i][w]));
        if (absent)
            assert_null(strstr(text, absent));
        free(text);
    }
}

/* The library is the generic runtime (export/template/) filled with the
 * op's pieces (kernels/ikbo_lce/export/) and what its description derives:
 * symbols, tensor-map numbers, dispatch keys; no key is left unfilled. */
static void test_op_pieces(void **state)
{
    (void)state;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    assert_int_equal(kevo_emit_tmap_index(op, "w_user"), 0);
    assert_int_equal(kevo_emit_tmap_index(op, "out"), 4);
    assert_int_equal(kevo_emit_tmap_index(op, "cand_to_user"), -1);
    assert_int_equal(kevo_emit_tmap_index(op, "nope"), -1);
    const kevo_op *fa = kevo_op_find("ikbo_fa");
    assert_int_equal(kevo_emit_tmap_index(fa, "q"), 0);
    assert_int_equal(kevo_emit_tmap_index(fa, "out"), 3);
    /* per file (header, source, pkg-config): what the op's pieces and description put there */
    static const char *const lce_want[3][5] = {
        {"kevo_tuned_status kevo_tuned_ikbo_lce(const kevo_tuned_ikbo_lce_args *args"},
        {"    int64_t B, M, N, Ku, Kc, U, ratio, Kup, Kcp;\n",
         "int tensor; /* 0 w_user, 1 w_cand, 2 e_user, 3 e_cand, 4 out */", "    int B, M, N, Ku, Kc, U, dtype, sm;\n",
         "static int x_choose(const kevo_tuned_ikbo_lce_args *a"},
        {"Description: IKBO linear-compression kernels tuned by kevo"},
    };
    static const char *const fa_want[3][5] = {
        {"kevo_tuned_status kevo_tuned_ikbo_fa(const kevo_tuned_ikbo_fa_args *args"},
        {"    int64_t Bc, H, Sq, D, Skv, U, ratio;\n", "int tensor; /* 0 q, 1 k, 2 v, 3 out */",
         "    int Bc, H, Sq, D, Skv, U, dtype, sm;\n"},
        {"Description: IKBO flash-attention kernels tuned by kevo"},
    };
    check_pieces(&xp_lce, "pieces", lce_want, NULL);
    /* nothing of the other op but comments ("lce_args" names no ikbo_fa type) */
    check_pieces(&xp_fa, "pieces_fa", fa_want, "lce_args");
}

/* A stored algorithm of 64 bytes first, first + 1, ... as hex into out[129]. */
static void algo_hex(int first, char out[129])
{
    for (int i = 0; i < 64; i++)
        snprintf(out + 2 * i, 3, "%02x", (first + i) & 0xff);
}

/* A copy of kevo_h200.db at tmp/name, upgraded to the current schema
 * (kevo_db_open), where run 2 (bf16) lost: every candidate's vs_peer below
 * 1 and its peers stage0 0.9 ms, decomposed and beta1 (one at 0.3 ms, the
 * other 0.35: `fastest` names which) with the configs the GPU worker
 * writes (algorithms 0x10.. for the user GEMM, 0xa0.. for the candidate
 * GEMM, cuBLASLt 130100, 32 MiB).  Path into out[n]. */
static void vendor_db(const char *name, const char *fastest, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", tmp, name);
    assert_int_equal(sh("cp '%s/tests/fixtures/export/kevo_h200.db' '%s'", tu_home(), out), 0);
    kevo_db *db = NULL;
    kevo_err err;
    assert_int_equal(kevo_db_open(out, false, &db, &err), KEVO_OK);
    kevo_db_close(db);
    char user[129], cand[129];
    algo_hex(0x10, user);
    algo_hex(0xa0, cand);
    kv_buf sql;
    kv_buf_init(&sql);
    kv_buf_puts(&sql, "UPDATE candidates SET vs_peer = 0.3 / median_ms WHERE run_id = 2;"
                      "DELETE FROM run_peers WHERE run_id = 2;"
                      "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, detail, config) "
                      "VALUES (2, 0, 0, 'stage0', 'ok', 0.9, '', '');");
    static const char *const forms[2] = {"decomposed", "beta1"};
    for (int f = 0; f < 2; f++)
        kv_buf_printf(&sql,
                      "INSERT INTO run_peers(run_id, shape_idx, device, peer, status, median_ms, detail, config) "
                      "VALUES (2, 0, 0, '%s', 'ok', %s, 'cuBLASLt', '{\"form\":\"%s\",\"kup\":1184,\"kcp\":872,"
                      "\"cublaslt\":130100,\"workspace\":33554432,\"gemms\":[{\"role\":\"user\",\"algo\":\"%s\"},"
                      "{\"role\":\"cand\",\"algo\":\"%s\"}]}');",
                      forms[f], strcmp(fastest, forms[f]) == 0 ? "0.3" : "0.35", forms[f], user, cand);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(out, &h), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql.data, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "%s\n", msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(h);
    kv_buf_release(&sql);
    assert_int_equal(rc, SQLITE_OK);
}

/* Every event's text, one a line (an export handle's callback). */
static void collect_events(void *ctx, const kevo_event *ev)
{
    kv_buf_printf(ctx, "%s %s\n", ev->kind == KEVO_EVENT_WARNING ? "warning:" : "line:", ev->text);
}

/* Export the ikbo_lce DB db into tmp/sub with the events into *events. */
static void export_vendor(const char *db, const char *sub, kv_buf *events)
{
    char dir[160];
    snprintf(dir, sizeof dir, "%s/%s", tmp, sub);
    kevo_export_opts o;
    opts_for(&o, "ikbo_lce", db, dir);
    int nk = 0, nt = 0;
    kevo_err err;
    kevo_status st = export_with(&o, collect_events, events, &nk, &nt, &err);
    if (st)
        fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(st, KEVO_OK);
    assert_int_equal(nt, 2);
}

/* The file tmp/sub/rel holds each of want[] (NULL-ended). */
static void file_has(const char *sub, const char *rel, const char *const *want)
{
    char path[256];
    char *text = NULL;
    kevo_err err;
    snprintf(path, sizeof path, "%s/%s/%s", tmp, sub, rel);
    assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
    for (int i = 0; want[i]; i++) {
        if (!strstr(text, want[i]))
            fprintf(stderr, "%s lacks: %s\n", rel, want[i]);
        assert_non_null(strstr(text, want[i]));
    }
    free(text);
}

/* A shape where no kernel beat the beta = 1 peer dispatches to it: the
 * generated vendor entry (form, cuBLASLt version, workspace, K padded, the
 * algorithms' bytes), the tuned entry pointing at it, the vendor kernels
 * compiled for the run's arch and dtype, the README line and export's
 * event; the same DB exports to the same bytes, and the source compiles
 * without a warning at -O2. */
static void test_vendor_export(void **state)
{
    (void)state;
    char db[160];
    vendor_db("vendor_b.db", "beta1", db, sizeof db);
    kv_buf ev;
    kv_buf_init(&ev);
    export_vendor(db, "vendor_b", &ev);
    assert_non_null(strstr(ev.data, "line: run 2 at B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15 (bf16, sm_90a): "
                                    "no kernel beats cuBLAS (beta=1) (0.3000 ms; kevo's best "));
    assert_non_null(strstr(ev.data, "the library runs it there (cuBLASLt 130100"));
    assert_null(strstr(ev.data, "warning:"));
    char user[160] = "{", cand[160] = "{";
    for (int i = 0; i < 3; i++) {
        snprintf(user + strlen(user), sizeof user - strlen(user), "0x%02x,", 0x10 + i);
        snprintf(cand + strlen(cand), sizeof cand - strlen(cand), "0x%02x,", 0xa0 + i);
    }
    const char *src[] = {"#define X_NVENDORS 1\n", "    {1, 90, 1, 130100ULL, 33554432ULL, {1184, 872},\n",
                         user, cand, "0x4e,0x4f}", "0xde,0xdf}}},", "#define X_VFORM_beta1 1\n",
                         "#define X_VENTRY_kv_gather_user 0\n", "#define X_NVMODS 1\n",
                         "/* vendor module 0: kernels/ikbo_lce/vendor.cu for sm_90a, bf16 */",
                         "    {90, 1, x_vm0_cubin, 0, NULL, {NULL}},\n",
                         "1024, 433, 256, 1178, 866, 15, 1, 90, -1, 0}, /* run 2: ",
                         "beats no in-run peer: its vendor form runs */", "1024, 433, 256, 1178, 866, 15, 0, 90, ",
                         "generated by kevo export; do not edit", NULL};
    file_has("vendor_b", "src/kevo_tuned.c", src);
    const char *readme[] = {"| cuBLAS: cuBLAS (beta=1) (peer `beta1`, 0.3000 ms; cuBLASLt 130100, algorithms as timed) |",
                            "A shape marked cuBLAS dispatches to cuBLAS", NULL};
    file_has("vendor_b", "README.md", readme);
    const char *hdr[] = {"KEVO_TUNED_STATUS_VENDOR_UNAVAILABLE = 6", "int ke_user, ke_cand;",
                         "kevo_tuned_ikbo_lce_path(const kevo_tuned_ikbo_lce_args *args", NULL};
    file_has("vendor_b", "include/kevo_tuned.h", hdr);
    kv_buf_release(&ev);
    kv_buf_init(&ev);
    export_vendor(db, "vendor_b2", &ev);
    kv_buf_release(&ev);
    assert_int_equal(sh("diff -r '%s/vendor_b' '%s/vendor_b2' >/dev/null", tmp, tmp), 0);
    assert_int_equal(sh("gcc -std=c11 -O2 -Wall -Wextra -Werror -I'%s/vendor_b/include' -I'%s' -c "
                        "'%s/vendor_b/src/kevo_tuned.c' -o '%s/vendor_b.o'",
                        tmp, KEVO_CUDA_INCLUDE, tmp, tmp),
                     0);
}

/* A shape lost only to a peer the library cannot run (stage 0 on a
 * pre-broadcast E) while both vendor forms are slower than the kernel: the
 * library keeps the kernel there (no vendor entry, no UNSUPPORTED), and a
 * warning says why. */
static void test_vendor_slower_keeps_kernel(void **state)
{
    (void)state;
    char db[160];
    vendor_db("vendor_k.db", "beta1", db, sizeof db);
    assert_int_equal(sh("sqlite3 '%s' \"UPDATE run_peers SET median_ms = 0.05 WHERE run_id = 2 AND peer = 'stage0';"
                        "UPDATE run_peers SET median_ms = median_ms * 100 WHERE run_id = 2 AND peer <> 'stage0';"
                        "UPDATE candidates SET vs_peer = 0.05 / median_ms WHERE run_id = 2;\"",
                        db),
                     0);
    kv_buf ev;
    kv_buf_init(&ev);
    export_vendor(db, "vendor_k", &ev);
    assert_non_null(strstr(ev.data, "warning: run 2 at B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70,U=15 (bf16, "
                                    "sm_90a): the stage-0 cuBLAS baseline (0.0500 ms) beats kevo's best"));
    assert_non_null(strstr(ev.data, "the library keeps the kernel there"));
    const char *src[] = {"#define X_NVENDORS 0\n", NULL};
    file_has("vendor_k", "src/kevo_tuned.c", src);
    char path[256];
    char *text = NULL;
    kevo_err err;
    snprintf(path, sizeof path, "%s/vendor_k/src/kevo_tuned.c", tmp);
    assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
    const char *run2 = strstr(text, "/* run 2: ");
    assert_non_null(run2);
    /* the entry before the comment: "..., 1, 90, K, -1}," with a kernel K >= 0 */
    const char *open = run2;
    while (open > text && *open != '{')
        open--;
    assert_true(strncmp(run2 - 5, "-1}, ", 5) == 0); /* no vendor form */
    assert_false(strstr(open, ", -1, -1}") && strstr(open, ", -1, -1}") < run2); /* a kernel, not UNSUPPORTED */
    free(text);
    kv_buf_release(&ev);
}

/* --family: the library holds only kernels of the families named (a name
 * or a pattern), the same DB and options give the same bytes, a list that
 * matches nothing says so, and a pattern with other characters is refused
 * before anything is read or written. */
static void test_family_filter(void **state)
{
    (void)state;
    char db[1024], dir[256];
    snprintf(db, sizeof db, "%s/tests/fixtures/export/kevo_h200.db", tu_home());
    static const struct {
        const char *families, *sub, *has, *lacks;
    } cases[] = {
        {"lce_mma", "fam_mma", "lce_mma {", "lce_wgmma {"},
        {"nope,lce_w*", "fam_wgmma", "lce_wgmma {", "lce_mma {"},
    };
    for (size_t c = 0; c < KV_ARRAY_LEN(cases); c++) {
        kevo_export_opts o;
        snprintf(dir, sizeof dir, "%s/%s", tmp, cases[c].sub);
        opts_for(&o, "ikbo_lce", db, dir);
        o.families = cases[c].families;
        int nk = 0, nt = 0;
        export_ok(&o, &nk, &nt);
        assert_true(nk >= 1);
        assert_int_equal(nt, 2);
        const char *want[] = {cases[c].has, NULL};
        file_has(cases[c].sub, "src/kevo_tuned.c", want);
        char path[512];
        char *text = NULL;
        kevo_err err;
        snprintf(path, sizeof path, "%s/src/kevo_tuned.c", dir);
        assert_int_equal(kv_read_file(path, &text, NULL, &err), KEVO_OK);
        assert_null(strstr(text, cases[c].lacks));
        free(text);
    }
    /* the same options, the same bytes */
    kevo_export_opts o;
    snprintf(dir, sizeof dir, "%s/fam_mma2", tmp);
    opts_for(&o, "ikbo_lce", db, dir);
    o.families = "lce_mma";
    int nk = 0, nt = 0;
    kevo_err err;
    assert_int_equal(export_with(&o, NULL, NULL, &nk, &nt, &err), KEVO_OK);
    assert_int_equal(sh("diff -r '%s/fam_mma' '%s/fam_mma2' >/dev/null", tmp, tmp), 0);
    /* nothing matches: not found, naming the list; nothing written */
    snprintf(dir, sizeof dir, "%s/fam_none", tmp);
    opts_for(&o, "ikbo_lce", db, dir);
    o.families = "llm_*";
    assert_int_equal(export_with(&o, NULL, NULL, &nk, &nt, &err), KEVO_ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "of family llm_*"));
    assert_int_equal(access(dir, F_OK) == 0 ? sh("test -z \"$(ls -A '%s')\"", dir) : 0, 0);
    /* a pattern with other characters (a path, a quote, an empty item) is an argument error */
    const char *bad[] = {"lce_ws,", "../x", "lce'ws", "", "a,,b"};
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        snprintf(dir, sizeof dir, "%s/fam_bad%zu", tmp, i);
        opts_for(&o, "ikbo_lce", db, dir);
        o.families = bad[i];
        assert_int_equal(export_with(&o, NULL, NULL, &nk, &nt, &err), KEVO_ERR_ARG);
        assert_non_null(strstr(err.msg, "--family takes"));
        assert_int_not_equal(access(dir, F_OK), 0);
    }
}

/* ikbo_lce's call at the lost shape against a fake driver and a fake
 * cuBLASLt (tests/export/fake_driver_lce.c says what each mode checks):
 * beta = 1 and decomposed libraries, a cuBLASLt of another version, and
 * none at all (the fake's directory left off LD_LIBRARY_PATH). */
static void test_vendor_call(void **state)
{
    (void)state;
    static const char *const forms[2] = {"beta1", "decomposed"};
    char lt[160];
    snprintf(lt, sizeof lt, "%s/fake_lt", tmp);
    assert_int_equal(sh("mkdir -p '%s' '%s/no_lt' && gcc -std=c11 -Wall -Wextra -Werror -shared -fPIC -I'%s' "
                        "'%s/tests/export/fake_cublaslt.c' -o '%s/libkevo_fake_cublaslt.so'",
                        lt, tmp, KEVO_CUDA_INCLUDE, tu_home(), lt),
                     0);
    for (int f = 0; f < 2; f++) {
        char db[160], sub[64], name[64];
        snprintf(name, sizeof name, "call_%s.db", forms[f]);
        snprintf(sub, sizeof sub, "call_%s", forms[f]);
        vendor_db(name, forms[f], db, sizeof db);
        kv_buf ev;
        kv_buf_init(&ev);
        export_vendor(db, sub, &ev);
        kv_buf_release(&ev);
        assert_int_equal(sh("gcc -std=c11 -Wall -Wextra -Werror -DKEVO_LIB_SRC='\"%s/%s/src/kevo_tuned.c\"' "
                            "-DKEVO_TUNED_CUBLASLT_NAMES='\"libkevo_fake_cublaslt.so\"' -I'%s/%s/include' -I'%s' "
                            "'%s/tests/export/fake_driver_lce.c' -o '%s/fake_%s' -lpthread -ldl",
                            tmp, sub, tmp, sub, KEVO_CUDA_INCLUDE, tu_home(), tmp, forms[f]),
                         0);
    }
    static const struct {
        const char *bin, *mode, *env;
    } runs[] = {
        {"beta1", "beta1", ""},
        {"decomposed", "decomposed", ""},
        {"beta1", "version", "KEVO_FAKE_LT_VERSION=120000"},
        {"beta1", "unavailable", "NO_LT=1"},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(runs); i++) {
        int no_lt = strcmp(runs[i].mode, "unavailable") == 0;
        printf("  fake cuBLASLt: %s\n", runs[i].mode);
        assert_int_equal(sh("rm -f '%s/lt_%zu.log' && env %s KEVO_FAKE_LT_LOG='%s/lt_%zu.log' LD_LIBRARY_PATH='%s%s' "
                            "'%s/fake_%s' %s",
                            tmp, i, runs[i].env, tmp, i, no_lt ? tmp : lt, no_lt ? "/no_lt" : "", tmp, runs[i].bin,
                            runs[i].mode),
                         0);
    }
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof tmp, "/tmp/kevo-export-test-XXXXXX");
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return tu_rm_tree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_header_strict),
        cmocka_unit_test(test_cmake_package),
        cmocka_unit_test(test_plans_match_kevo),
        cmocka_unit_test(test_fa_call),
        cmocka_unit_test(test_torch_package),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_op_pieces),
        cmocka_unit_test(test_vendor_export),
        cmocka_unit_test(test_vendor_slower_keeps_kernel),
        cmocka_unit_test(test_vendor_call),
        cmocka_unit_test(test_family_filter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
