/* test_space_text.c — space files written from text: a minimal family,
 * includes and entries, the prelude, one-point spaces, malformed files, the
 * loader's refusals, and folders of families. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"
#include "space_fixture.h"

/* ---- malformed space files ---- */

static void test_prelude(void **state)
{
    (void)state;
    static const char *const bad[] = {"[\"cuda/../x.h\"]", "[\"/etc/passwd\"]", "[\"a>b\"]",  "[\"x\\ny\"]",
                                      "[\".hidden\"]",    "[\"\"]",            "[1]",        "\"cuda/ptx\"",
                                      "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\",\"i\"]"};
    char text[1024];
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        snprintf(text, sizeof text, SP_HEAD "\"prelude\": %s,\n" SP_PARAMS SP_LAUNCH "}", bad[i]);
        kevo_space *p = (kevo_space *)1;
        kevo_err err;
        if (kevo_space_load_inline(text, "__global__ void k() {}", "x", &p, &err) != KEVO_ERR_PARSE)
            print_error("prelude %s was taken\n", bad[i]);
        assert_null(p);
        assert_non_null(strstr(err.msg, "prelude"));
    }
    snprintf(text, sizeof text,
             SP_HEAD "\"prelude\": [\"cuda_fp16.h\", \"cuda/ptx\"],\n"
                     "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n" SP_LAUNCH "}");
    kevo_space *p = NULL;
    kevo_err err;
    assert_int_equal(kevo_space_load_inline(text, "extern \"C\" __global__ void k() {}", "x", &p, &err), KEVO_OK);
    kevo_config cfg;
    kevo_space_default(p, &cfg);
    kv_buf src;
    kv_buf_init(&src);
    assert_int_equal(kevo_space_render(p, &cfg, KEVO_DTYPE_F16, NULL, &src, &err), KEVO_OK);
    const char *want = "#include <cuda_fp16.h>\n#include <cuda/ptx>\n// kevo: family ";
    assert_int_equal(strncmp(src.data, want, strlen(want)), 0);
    assert_true(strstr(src.data, "#define A 2\n") > strstr(src.data, "// kevo: family"));
    kv_buf_release(&src);
    kevo_space_free(p);
}

/* A template configuration as a one-point space (what an LLM candidate
 * starts from): it loads inline, renders the same device code and plans the
 * same launches as the family at that configuration, at two shapes; a
 * space with two values or an axis is no one-point space. */
static void test_point_space(void **state)
{
    (void)state;
    static const char *const fams[] = {"lce_mma", "lce_ws"};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        kevo_space *s = load_family(fams[f]);
        kevo_config cfg;
        kevo_space_default(s, &cfg);
        kv_buf j;
        kv_buf_init(&j);
        kevo_err err;
        assert_int_equal(kevo_space_point_json(s, &cfg, "llm_0000000000ab", &j, &err), KEVO_OK);
        kevo_space *p = NULL;
        assert_int_equal(kevo_space_load_inline(j.data, s->source, "llm_0000000000ab", &p, &err), KEVO_OK);
        assert_string_equal(p->family, "llm_0000000000ab");
        assert_int_equal(p->nparams, s->nparams);
        assert_int_equal(p->naxes, 0);
        kevo_config pc;
        kevo_space_default(p, &pc);
        assert_memory_equal(pc.v, cfg.v, (size_t)s->nparams * sizeof cfg.v[0]);
        kv_buf a, b;
        kv_buf_init(&a);
        kv_buf_init(&b);
        assert_int_equal(kevo_space_render(s, &cfg, KEVO_DTYPE_F16, "//abi", &a, &err), KEVO_OK);
        assert_int_equal(kevo_space_render(p, &pc, KEVO_DTYPE_F16, "//abi", &b, &err), KEVO_OK);
        /* the same prelude, and the same after the line that names the family */
        const char *fa = strstr(a.data, "// kevo: family "), *fb = strstr(b.data, "// kevo: family ");
        assert_true(fa && fb && fa - a.data == fb - b.data);
        assert_memory_equal(a.data, b.data, (size_t)(fa - a.data));
        assert_string_equal(strchr(fa, '\n'), strchr(fb, '\n'));
        static const char *const shapes[] = {NULL, "B=300,M=200,N=136,Ku=96,Kc=72,ratio=10"};
        for (int k = 0; k < 2; k++) {
            kevo_syms shape;
            shape_of(shapes[k], &shape);
            kevo_limits lim = h100();
            kevo_plan x, y;
            kevo_status sx = kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &x, &err);
            kevo_status sy = kevo_space_plan(p, &shape, &lim, KEVO_DTYPE_F16, &pc, &y, &err);
            assert_int_equal(sx, sy);
            if (!sx)
                assert_memory_equal(&x, &y, sizeof x);
        }
        kv_buf_release(&a);
        kv_buf_release(&b);
        kv_buf_release(&j);
        kevo_space_free(p);
        kevo_space_free(s);
    }
    kevo_space *p = (kevo_space *)1;
    kevo_err err;
    assert_int_equal(kevo_space_load_inline(SP_HEAD SP_PARAMS SP_LAUNCH "}", "__global__ void k() {}", "x", &p, &err),
                     KEVO_ERR_PARSE);
    assert_null(p);
    assert_non_null(strstr(err.msg, "one value"));
    assert_int_equal(kevo_space_load_inline(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n"
                                            "\"axes\": {\"t\": [\"A\"]},\n" SP_LAUNCH "}",
                                            "__global__ void k() {}", "x", &p, &err),
                     KEVO_ERR_PARSE);
    assert_int_equal(kevo_space_load_inline(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [2]}],\n" SP_LAUNCH "}",
                                            "extern \"C\" __global__ void k() {}", "x", &p, &err),
                     KEVO_OK);
    assert_string_equal(p->source, "extern \"C\" __global__ void k() {}");
    kevo_space_free(p);
}

/* Text of a space file reaches the terminal (a refused shape prints its
 * why): escape sequences and line breaks are gone once it is loaded. */
static void test_space_text_clean(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    const char *text = "{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", "
                       "\"archs\": [\"sm_90a\"], \"description\": \"d\\u001b[2Jx\",\n" SP_PARAMS
                       "\"requires\": [{\"expr\": \"N % 100000 == 0\", \"why\": \"w\\u001b]0;t\\u0007\\nnext\"}],\n"
                       "\"constraints\": [{\"expr\": \"A > 5\", \"why\": \"c\\u009b31m\"}],\n" SP_LAUNCH "}";
    assert_int_equal(load_text("esc.json", text, &s, &err), KEVO_OK);
    assert_string_equal(s->description, "d [2Jx");
    assert_string_equal(s->requires[0].why, "w ]0;t  next");
    assert_null(strchr(s->constraints[0].why, 0x1b));
    assert_null(strstr(s->constraints[0].why, "\xc2\x9b"));
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    assert_int_equal(kevo_space_supports(s, &shape, &lim, KEVO_DTYPE_F16, &err), KEVO_ERR_UNSUPPORTED);
    assert_null(strchr(err.msg, 0x1b));
    assert_null(strchr(err.msg, '\n'));
    kevo_space_free(s);
}

static void test_minimal_space(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json", SP_HEAD SP_PARAMS SP_LAUNCH "}", &s, &err), KEVO_OK);
    assert_non_null(s);
    assert_string_equal(s->family, "fam");
    assert_int_equal(s->nparams, 1);
    assert_int_equal(s->params[0].def, 2);
    assert_int_equal(s->naxes, 0);
    assert_null(s->pad_k);
    assert_null(s->workspace);
    assert_string_equal(s->source, "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    /* plan without pad_k and workspace: zeros */
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    kevo_plan plan;
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
    assert_int_equal(plan.nlaunches, 1);
    assert_int_equal(plan.launches[0].grid[0], 2);
    assert_int_equal(plan.workspace_bytes, 0);
    assert_int_equal(plan.pad_k, 0);
    kevo_space_free(s);
    /* no default: the first value */
    assert_int_equal(load_text("ok.json",
                               SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [7, 2, 3]}],\n" SP_LAUNCH "}", &s,
                               &err),
                     KEVO_OK);
    assert_int_equal(s->params[0].def, 7);
    kevo_space_free(s);
}

/* Includes are inlined ahead of the source; enter_from maps a source
 * configuration param by param (0 when a value falls outside the list). */
static void test_include_and_entry(void **state)
{
    (void)state;
    write_text(tmpdir, "common.cuh", "#define COMMON 1\n");
    kevo_space *s, *src;
    kevo_err err;
    assert_int_equal(load_text("src.json",
                               "{\"family\": \"src\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", "
                               "\"archs\": [\"sm_90a\"],\n"
                               "\"params\": [{\"name\": \"S\", \"values\": [1, 2, 3]}],\n"
                               "\"let\": [[\"twice\", \"2 * S\"]],\n" SP_LAUNCH "}",
                               &src, &err),
                     KEVO_OK);
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"common.cuh\"],\n"
                                                           "\"enter_from\": [{\"family\": \"src\", \"op\": "
                                                           "\"go\", \"why\": \"w\", \"set\": {\"A\": \"twice - 1\"}}]}",
                               &s, &err),
                     KEVO_OK);
    assert_string_equal(s->source, "#line 1 \"common.cuh\"\n#define COMMON 1\n\n"
                                   "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    assert_int_equal(s->nentries, 1);
    assert_string_equal(s->entries[0].from, "src");
    assert_string_equal(s->entries[0].op, "go");
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config in, out;
    char why[256];
    kevo_space_default(src, &in);
    in.v[0] = 2; /* twice - 1 = 3 */
    assert_int_equal(kevo_space_enter(s, 0, src, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), 1);
    assert_int_equal(out.v[0], 3);
    in.v[0] = 3; /* 5: not a value of A */
    assert_int_equal(kevo_space_enter(s, 0, src, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), 0);
    assert_non_null(strstr(why, "A=5"));
    /* the mapping reads the source's names: through the target it fails */
    assert_int_equal(kevo_space_enter(s, 0, s, &shape, &lim, KEVO_DTYPE_F16, &in, &out, why, sizeof why, &err), -1);
    assert_non_null(strstr(err.msg, "twice"));
    kv_buf src_text;
    kv_buf_init(&src_text);
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    assert_int_equal(kevo_space_render(s, &cfg, KEVO_DTYPE_F16, NULL, &src_text, &err), KEVO_OK);
    assert_non_null(strstr(src_text.data, "#define A 2\n"));
    assert_true(strstr(src_text.data, "#define COMMON 1") < strstr(src_text.data, "__global__"));
    kv_buf_release(&src_text);
    kevo_space_free(s);
    kevo_space_free(src);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/common.cuh", tmpdir);
    unlink(path);
}

/* An include may name a file one folder down ("sm90/ring.cuh"); its #line
 * marker keeps the name.  Deeper paths, "..", hidden or empty parts and odd
 * characters are refused as a name outside the folder is. */
static void test_include_subfolder(void **state)
{
    (void)state;
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/sm90", tmpdir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_text(sub, "ring.cuh", "#define RING 1\n");
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("sub.json", SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"sm90/ring.cuh\"]}", &s, &err),
                     KEVO_OK);
    assert_string_equal(s->source, "#line 1 \"sm90/ring.cuh\"\n#define RING 1\n\n"
                                   "#line 1 \"dummy.cu\"\nextern \"C\" __global__ void k() {}\n\n");
    kevo_space_free(s);
    char long_name[260];
    memset(long_name, 'a', 201);
    memcpy(long_name + 201, ".cuh", 5);
    const char *bad[] = {"../x.cuh",       "/etc/passwd",    "sm90/../x.cuh", "sm90/x/y.cuh", ".hidden",
                         "sm90/.ring.cuh", "sm90//ring.cuh", "sm90/",         "/ring.cuh",    "sm90:ring.cuh",
                         "sm90/ring..cuh", "-x.cuh",         "sm90/-x.cuh",   "a b.cuh",      long_name};
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        char text[1024];
        snprintf(text, sizeof text, SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"%s\"]}", bad[i]);
        expect_load_error(text, KEVO_ERR_PARSE, "include 0 must name a file beside the space file or one folder down");
    }
    /* a FIFO one folder down is not read (it would block) */
    char fifo[PATH_MAX + 32];
    snprintf(fifo, sizeof fifo, "%s/fifo.cuh", sub);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"sm90/fifo.cuh\"]}", KEVO_ERR_IO, "fifo.cuh");
    unlink(fifo);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ring.cuh", sub);
    unlink(path);
    rmdir(sub);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_load_error("this is not json", KEVO_ERR_PARSE, "malformed JSON");
    expect_load_error("[1, 2]", KEVO_ERR_PARSE, "not a JSON object");
    expect_load_error("{\"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "missing \"family\"");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 1]}],\n" SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "param 'A' repeats value 1");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 4}],\n" SP_LAUNCH
                      "}",
                      KEVO_ERR_PARSE, "param 'A' default is not one of its values");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2.5]}],\n" SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "values must be integers");
    expect_load_error(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1]}, {\"name\": \"A\", \"values\": [2]}],\n"
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "param 'A' given twice");
    expect_load_error(SP_HEAD "\"params\": [],\n" SP_LAUNCH "}", KEVO_ERR_PARSE, "\"params\" must be a non-empty");
    expect_load_error(SP_HEAD SP_PARAMS "\"axes\": {\"grow\": [\"A\", \"Z\"]},\n" SP_LAUNCH "}", KEVO_ERR_PARSE,
                      "axis 'grow' names an unknown param");
    expect_load_error(SP_HEAD SP_PARAMS "\"constraints\": [{\"expr\": \"A + * 2\", \"why\": \"w\"}],\n" SP_LAUNCH
                      "}",
                      KEVO_ERR_PARSE, "constraints");
    expect_load_error(SP_HEAD SP_PARAMS "\"let\": [[\"x\", \"A +\"]],\n" SP_LAUNCH "}", KEVO_ERR_PARSE, "x");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": 100}]}",
                      KEVO_ERR_PARSE, "swizzle must be 0, 32, 64 or 128");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64]}]}",
                      KEVO_ERR_PARSE, "\"box\" must be an array of 3");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"sub/dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "must be a file beside the space file");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"../dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "must be a file beside the space file");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"absent.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_IO, "absent.cu");
    expect_load_error("{\"family\": \"not-ident\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": "
                      "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "is not an identifier");
    expect_load_error("{\"family\": \"fam\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [],\n" SP_PARAMS
                      SP_LAUNCH "}",
                      KEVO_ERR_PARSE, "\"archs\"");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": []}", KEVO_ERR_PARSE, "\"launches\"");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": "
                                        "[32, 1, \"1 +\"], \"smem\": 0}]}",
                      KEVO_ERR_PARSE, "block");
    expect_load_error(SP_HEAD SP_PARAMS "\"launches\": [{\"entry\": \"k\", \"grid\": [\"A\", 1, 1], \"block\": "
                                        "[32, 1, 1]}]}",
                      KEVO_ERR_PARSE, "smem");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"pad_k\": \"((\"}", KEVO_ERR_PARSE, "pad_k");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": \"hopper.cuh\"}", KEVO_ERR_PARSE,
                      "\"include\" must be an array");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"../x.cuh\"]}", KEVO_ERR_PARSE,
                      "include 0 must name a file beside");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"include\": [\"absent.cuh\"]}", KEVO_ERR_IO, "absent.cuh");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\"}]}",
                      KEVO_ERR_PARSE, "must \"set\" each of the 1 params");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"B\": 1}}]}",
                      KEVO_ERR_PARSE, "sets 'B', not a param");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"fam\", \"op\": \"go\", \"set\": {\"A\": 1}}]}",
                      KEVO_ERR_PARSE, "another family's name");
    expect_load_error(SP_HEAD SP_PARAMS "\"axes\": {\"go\": [\"A\"]},\n" SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"A\": 1}}]}",
                      KEVO_ERR_PARSE, "op 'go' is also an axis");
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"enter_from\": [{\"family\": \"src\", \"op\": \"go\", \"set\": {\"A\": \"X +\"}}]}",
                      KEVO_ERR_PARSE, "enter_from");

    /* a missing space file */
    kevo_space *s = (kevo_space *)(uintptr_t)1;
    kevo_err err;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/absent.json", tmpdir);
    assert_int_equal(kevo_space_load(path, &s, &err), KEVO_ERR_IO);
    assert_null(s);
    assert_non_null(strstr(err.msg, "absent.json"));
}

/* ---- loader gaps: inputs the loader should refuse but accepts ---- */

/* Load text that must be refused with KEVO_ERR_PARSE; frees what loaded. */
static void expect_refused(const char *text, const char *what)
{
    kevo_space *s = NULL;
    kevo_err err;
    kevo_status st = load_text("gap.json", text, &s, &err);
    if (st != KEVO_ERR_PARSE)
        print_error("%s: loaded (status %d), want KEVO_ERR_PARSE\n", what, (int)st);
    kevo_space_free(s);
    assert_int_equal(st, KEVO_ERR_PARSE);
}

static void test_default_not_integer(void **state)
{
    (void)state;
    /* regression: a fractional default (2.5 over [1, 2, 3]) was once taken as 2 */
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 3], \"default\": 2.5}],\n" SP_LAUNCH
                   "}",
                   "default 2.5");
}

static void test_swizzle_not_number(void **state)
{
    (void)state;
    /* regression: a swizzle given as a string once read as 0 (no swizzle) and
     * 128.5 as 128; a string is now an expression, so "128" must plan as 128 */
    expect_refused(SP_HEAD SP_PARAMS SP_LAUNCH
                   ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": 128.5}]}",
                   "swizzle 128.5");
    expect_refused(SP_HEAD SP_PARAMS SP_LAUNCH
                   ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": true}]}",
                   "swizzle true");
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"128\"}]}",
                               &s, &err),
                     KEVO_OK);
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_space_default(s, &cfg);
    kevo_plan plan;
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
    assert_int_equal(plan.tmaps[0].swizzle, 128);
    kevo_space_free(s);
}

/* A swizzle may be an expression over params and lets (lce_ws: 64-byte
 * swizzle for E boxes of 32 columns); its value is checked when a plan is
 * made, a missing swizzle is none. */
static void test_swizzle_expression(void **state)
{
    (void)state;
    kevo_space *s;
    kevo_err err;
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS "\"let\": [[\"cols\", \"A == 1 ? 32 : 64\"]],\n" SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"e_user\", \"box\": [\"cols\", 64, 1], "
                               "\"swizzle\": \"A == 3 ? 100 : 2 * cols\"},\n"
                               "{\"tensor\": \"out\", \"box\": [64, 64, 1]}]}",
                               &s, &err),
                     KEVO_OK);
    assert_non_null(s->tmaps[0].swizzle);
    assert_null(s->tmaps[1].swizzle);
    kevo_syms shape;
    shape_of(NULL, &shape);
    kevo_limits lim = h100();
    kevo_config cfg;
    kevo_plan plan;
    static const int64_t a[] = {1, 2};
    static const int want[] = {64, 128};
    for (int i = 0; i < 2; i++) {
        kevo_space_default(s, &cfg);
        cfg.v[0] = a[i];
        assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_OK);
        assert_int_equal(plan.ntmaps, 2);
        assert_int_equal(plan.tmaps[0].swizzle, want[i]);
        assert_int_equal(plan.tmaps[0].box[0], want[i] / 2);
        assert_int_equal(plan.tmaps[1].swizzle, 0);
        /* the plan's JSON keeps the evaluated value */
        kv_buf j;
        kv_buf_init(&j);
        assert_int_equal(kevo_plan_json(&plan, &j), KEVO_OK);
        kevo_plan back;
        assert_int_equal(kevo_plan_parse_json(j.data, &back, &err), KEVO_OK);
        assert_int_equal(back.tmaps[0].swizzle, want[i]);
        kv_buf_release(&j);
    }
    /* a value TMA has no mode for: refused when the plan is made, saying which */
    kevo_space_default(s, &cfg);
    cfg.v[0] = 3;
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "tmap 'e_user' swizzle = 100"));
    assert_non_null(strstr(err.msg, "not 0, 32, 64 or 128"));
    kevo_space_free(s);

    /* a name the expression does not know: at plan time, naming the map */
    assert_int_equal(load_text("ok.json",
                               SP_HEAD SP_PARAMS SP_LAUNCH
                               ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"NOPE\"}]}",
                               &s, &err),
                     KEVO_OK);
    kevo_space_default(s, &cfg);
    kevo_err_clear(&err);
    assert_int_equal(kevo_space_plan(s, &shape, &lim, KEVO_DTYPE_F16, &cfg, &plan, &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "tmap 'w_user' swizzle"));
    kevo_space_free(s);

    /* bad syntax: at load */
    expect_load_error(SP_HEAD SP_PARAMS SP_LAUNCH
                      ", \"tmaps\": [{\"tensor\": \"w_user\", \"box\": [64, 64, 1], \"swizzle\": \"A ?\"}]}",
                      KEVO_ERR_PARSE, "tmap 'w_user' swizzle");
}

static void test_axis_repeats_param(void **state)
{
    (void)state;
    /* regression: an axis naming a param twice was once accepted, and the
     * neighbourhood then moved that param two steps in one operator */
    expect_refused(SP_HEAD SP_PARAMS "\"axes\": {\"grow\": [\"A\", \"A\"]},\n" SP_LAUNCH "}", "axis [A, A]");
}

/* An axis may be an object: its params and an expression its kept moves hold. */
static void test_axis_keep(void **state)
{
    (void)state;
#define SP_TWO "\"params\": [{\"name\": \"A\", \"values\": [1, 2, 4]}, {\"name\": \"S\", \"values\": [2, 3, 4, 6]}],\n"
    kevo_space *s = NULL;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(load_text("keep.json",
                               SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\", \"S\"], \"keep\": \"A * S\"}, "
                                              "\"s\": [\"S\"]},\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_int_equal(s->naxes, 2);
    assert_int_equal(s->axes[0].nparams, 2);
    assert_non_null(s->axes[0].keep);
    assert_null(s->axes[1].keep);
    assert_false(s->axes[0].seed);
    kevo_space_free(s);
    /* a seed axis (search/moves.c seeds the model's best of each of its combinations) */
    assert_int_equal(load_text("seed.json",
                               SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"seed\": true}},\n" SP_LAUNCH "}",
                               &s, &err),
                     KEVO_OK);
    assert_true(s->axes[0].seed);
    assert_null(s->axes[0].keep);
    kevo_space_free(s);
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"seed\": 1}},\n" SP_LAUNCH "}",
                   "seed not a boolean");
    /* the model's lets may not shadow a param, a let or a device rate, nor be given twice */
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"A\", \"1\"]], \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let shadowing a param");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"dram_gbs\", \"1\"]], \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let shadowing a rate");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": [[\"x\", \"1\"], [\"x\", \"2\"]], \"flops\": \"0\", "
                                  "\"dram_bytes\": \"0\", \"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "a model let given twice");
    expect_refused(SP_HEAD SP_TWO "\"model\": {\"let\": {\"x\": \"1\"}, \"flops\": \"0\", \"dram_bytes\": \"0\", "
                                  "\"items\": \"1\", \"slots\": \"1\"},\n" SP_LAUNCH "}",
                   "model.let not an array");
    /* refused: keep over one param, a keep that does not parse, an object without params, params not an array */
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\"], \"keep\": \"A\"}},\n" SP_LAUNCH "}",
                   "keep with one param");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": [\"A\", \"S\"], \"keep\": \"A *\"}},\n" SP_LAUNCH "}",
                   "keep that does not parse");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"keep\": \"A * S\"}},\n" SP_LAUNCH "}", "no params");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": {\"params\": \"A\"}},\n" SP_LAUNCH "}", "params a string");
    expect_refused(SP_HEAD SP_TWO "\"axes\": {\"a\": 3},\n" SP_LAUNCH "}", "an axis that is a number");
#undef SP_TWO
}

static void test_names_shadow_symbols(void **state)
{
    (void)state;
    /* regression: params and lets were once allowed to shadow shape symbols,
     * device limits and params (a param "N" replaced the shape's N in every
     * expression; a let "A" changed what constraints saw, not the source) */
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"N\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the shape symbol N");
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"num_sms\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the limit num_sms");
    expect_refused(SP_HEAD SP_PARAMS "\"let\": [[\"A\", \"5\"]],\n" SP_LAUNCH "}", "let named like param A");
    /* the model's terms see the device's rates under these names */
    expect_refused(SP_HEAD SP_PARAMS "\"let\": [[\"dram_gbs\", \"3000\"]],\n" SP_LAUNCH "}",
                   "let named like the model's rate dram_gbs");
    expect_refused(SP_HEAD "\"params\": [{\"name\": \"peak_gflops\", \"values\": [1, 2]}],\n" SP_LAUNCH "}",
                   "param named like the model's rate peak_gflops");
}

/* ---- directories ---- */

static void test_load_dir(void **state)
{
    (void)state;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/templates", tu_home());
    kevo_space **sp = NULL;
    int n = -1;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_spaces_load_dir(dir, "ikbo_lce", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 4);
    assert_string_equal(sp[0]->family, "lce_mem");
    assert_string_equal(sp[1]->family, "lce_mma");
    assert_string_equal(sp[2]->family, "lce_wgmma");
    assert_string_equal(sp[3]->family, "lce_ws");
    assert_ptr_equal(kevo_spaces_find(sp, n, "lce_wgmma"), sp[2]);
    assert_ptr_equal(kevo_spaces_find(sp, n, "lce_mma"), sp[1]);
    assert_null(kevo_spaces_find(sp, n, "nope"));
    kevo_spaces_free(sp, n);

    /* every op's families: ikbo_lce's four and ikbo_fa's */
    int nfa = -1;
    assert_int_equal(kevo_spaces_load_dir(dir, "ikbo_fa", &sp, &nfa, &err), KEVO_OK);
    assert_true(nfa >= 1);
    for (int i = 0; i < nfa; i++)
        assert_string_equal(sp[i]->op, "ikbo_fa");
    kevo_spaces_free(sp, nfa);
    assert_int_equal(kevo_spaces_load_dir(dir, NULL, &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 4 + nfa);
    kevo_spaces_free(sp, n);

    assert_int_equal(kevo_spaces_load_dir(dir, "other_op", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 0);
    kevo_spaces_free(sp, n);

    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/nope", tmpdir);
    assert_int_equal(kevo_spaces_load_dir(missing, NULL, &sp, &n, &err), KEVO_ERR_IO);
    assert_null(sp);
    assert_int_equal(n, 0);

    /* our own directory: sorted by family name, not by file name */
    char d2[PATH_MAX];
    snprintf(d2, sizeof d2, "%s/dir", tmpdir);
    assert_int_equal(mkdir(d2, 0700), 0);
    write_text(d2, "dummy.cu", "// k\n");
    write_text(d2, "a.json",
               "{\"family\": \"zeta\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "b.json",
               "{\"family\": \"alpha\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "c.json",
               "{\"family\": \"mid\", \"op\": \"other\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    write_text(d2, "notes.txt", "not a space file");
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 2);
    assert_string_equal(sp[0]->family, "alpha");
    assert_string_equal(sp[1]->family, "zeta");
    kevo_spaces_free(sp, n);
    assert_int_equal(kevo_spaces_load_dir(d2, NULL, &sp, &n, &err), KEVO_OK);
    assert_int_equal(n, 3);
    assert_string_equal(sp[0]->family, "alpha");
    assert_string_equal(sp[1]->family, "mid");
    assert_string_equal(sp[2]->family, "zeta");
    kevo_spaces_free(sp, n);

    /* a duplicate family name */
    write_text(d2, "d.json",
               "{\"family\": \"zeta\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": [\"sm_90a\"],\n" SP_PARAMS
                   SP_LAUNCH "}");
    kevo_err_clear(&err);
    sp = (kevo_space **)(uintptr_t)1;
    n = 99;
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "family 'zeta' defined twice"));
    assert_null(sp);
    assert_int_equal(n, 0);

    /* a malformed file in the directory fails the load */
    char d2d[PATH_MAX + 16];
    snprintf(d2d, sizeof d2d, "%s/d.json", d2);
    unlink(d2d);
    write_text(d2, "e.json", "{ nope");
    assert_int_equal(kevo_spaces_load_dir(d2, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "e.json"));
    assert_null(sp);
    tu_rm_tree(d2);

    /* an extra folder whose families clash with the first's: refused, naming
     * the family, whether the clash is its first family or a later one (the
     * families before it were moved, the rest freed: ASan checks) */
    static const char *const extra[][2] = {{"aaa_extra", "lce_ws"}, {"lce_mma", NULL}};
    for (int t = 0; t < 2; t++) {
        char d3[PATH_MAX];
        snprintf(d3, sizeof d3, "%s/extra%d", tmpdir, t);
        assert_int_equal(mkdir(d3, 0700), 0);
        write_text(d3, "dummy.cu", "// k\n");
        for (int f = 0; f < 2 && extra[t][f]; f++) {
            char name[32], text[1024];
            snprintf(name, sizeof name, "f%d.json", f);
            snprintf(text, sizeof text,
                     "{\"family\": \"%s\", \"op\": \"ikbo_lce\", \"source\": \"dummy.cu\", \"archs\": "
                     "[\"sm_90a\"],\n" SP_PARAMS SP_LAUNCH "}",
                     extra[t][f]);
            write_text(d3, name, text);
        }
        kevo_err_clear(&err);
        assert_int_equal(kevo_spaces_load_dirs(dir, d3, "ikbo_lce", &sp, &n, &err), KEVO_ERR_PARSE);
        assert_non_null(strstr(err.msg, t == 0 ? "family 'lce_ws' in '" : "family 'lce_mma' in '"));
        assert_non_null(strstr(err.msg, "is already defined"));
        assert_null(sp);
        assert_int_equal(n, 0);
        tu_rm_tree(d3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minimal_space),
        cmocka_unit_test(test_space_text_clean),
        cmocka_unit_test(test_point_space),
        cmocka_unit_test(test_include_and_entry),
        cmocka_unit_test(test_include_subfolder),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_load_dir),
        cmocka_unit_test(test_default_not_integer),
        cmocka_unit_test(test_swizzle_not_number),
        cmocka_unit_test(test_swizzle_expression),
        cmocka_unit_test(test_axis_repeats_param),
        cmocka_unit_test(test_axis_keep),
        cmocka_unit_test(test_names_shadow_symbols),
        cmocka_unit_test(test_prelude),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
