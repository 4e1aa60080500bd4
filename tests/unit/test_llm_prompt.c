/* test_llm_prompt.c — the LLM's universal operator: the static check (every
 * template accepted, each forbidden construct rejected with a reason that
 * names it). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "llm/check.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static const char *const lce_inputs[] = {"w_user",    "w_cand",    "e_user",    "e_cand",   "cand_to_user",
                                         "tm_w_user", "tm_w_cand", "tm_e_user", "tm_e_cand"};
static const char *const lce_outputs[] = {"out", "tm_out"};

static const char *home(void)
{
    const char *h = getenv("KEVO_HOME");
    return h && *h ? h : KEVO_SOURCE_DIR;
}

/* ------------------------------------------------------------------ check */

static void test_check_templates(void **state)
{
    (void)state;
    char *abi = tu_read_src("kernels/ikbo_lce_abi.h");
    char tdir[PATH_MAX];
    snprintf(tdir, sizeof tdir, "%s/templates", home());
    kevo_space **sp = NULL;
    int n = 0;
    kevo_err err;
    assert_int_equal(kevo_spaces_load_dir(tdir, NULL, &sp, &n, &err), KEVO_OK);
    assert_true(n >= 4);
    for (int i = 0; i < n; i++) {
        for (int dt = 0; dt < 2; dt++) {
            kevo_config cfg;
            kevo_space_default(sp[i], &cfg);
            kv_buf b;
            kv_buf_init(&b);
            assert_int_equal(kevo_space_render(sp[i], &cfg, (kevo_dtype)dt, abi, &b, &err), KEVO_OK);
            char why[512];
            bool ok = kevo_llm_check_source(b.data, lce_inputs, KV_ARRAY_LEN(lce_inputs), lce_outputs,
                                            KV_ARRAY_LEN(lce_outputs), why, sizeof why);
            if (!ok)
                print_error("template %s rejected: %s\n", sp[i]->family, why);
            assert_true(ok);
            /* as a prompt shows it: without the ABI header */
            kv_buf_release(&b);
            kv_buf_init(&b);
            assert_int_equal(kevo_space_render(sp[i], &cfg, (kevo_dtype)dt, NULL, &b, &err), KEVO_OK);
            assert_true(kevo_llm_check_source(b.data, lce_inputs, KV_ARRAY_LEN(lce_inputs), lce_outputs,
                                              KV_ARRAY_LEN(lce_outputs), why, sizeof why));
            /* its entries are found, extern "C" */
            kevo_llm_entry e[8];
            int ne = kevo_llm_find_entries(b.data, e, 8);
            assert_true(ne >= 2);
            for (int k = 0; k < sp[i]->nlaunches; k++) {
                bool found = false;
                for (int j = 0; j < ne && j < 8; j++)
                    found |= strcmp(e[j].name, sp[i]->launches[k].entry) == 0 && e[j].extern_c;
                if (!found)
                    print_error("%s: entry %s not found\n", sp[i]->family, sp[i]->launches[k].entry);
                assert_true(found);
            }
            kv_buf_release(&b);
        }
    }
    kevo_spaces_free(sp, n);
    free(abi);
}

/* A small correct kernel with room for a file-scope part and a statement. */
static char *kernel(const char *file_part, const char *body_part)
{
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_printf(&b,
                  "#include \"ikbo_lce_abi.h\"\n#include <cuda_fp16.h>\n#include <cuda/ptx>\n%s\n"
                  "extern \"C\" __global__ void k(const __grid_constant__ kevo_lce_args a)\n{\n"
                  "    const __half *wc = static_cast<const __half *>(a.w_cand);\n"
                  "    __half *out = static_cast<__half *>(a.out);\n"
                  "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                  "    const int n = a.B * a.M * a.N;\n"
                  "    const int co[3] = {0, 0, 0};\n"
                  "    unsigned char *buf = nullptr;\n"
                  "    if (i >= n)\n        return;\n"
                  "#pragma unroll 4\n"
                  "    for (int j = 0; j < 4; ++j)\n        (void)j;\n"
                  "    %s\n"
                  "    out[i] = wc[i %% a.M];\n}\n",
                  file_part, body_part);
    return kv_buf_take(&b);
}

static bool check(const char *file_part, const char *body_part, char *why, size_t n)
{
    char *src = kernel(file_part, body_part);
    bool ok = kevo_llm_check_source(src, lce_inputs, KV_ARRAY_LEN(lce_inputs), lce_outputs,
                                    KV_ARRAY_LEN(lce_outputs), why, n);
    free(src);
    return ok;
}

static const char *const put_helper =
    "__device__ void put(const void *p, unsigned v) { asm volatile(\"st.global.u32 [%0], %1;\" :: \"l\"(p), "
    "\"r\"(v) : \"memory\"); }\n__device__ void put2(const void *q) { put(q, 0u); }";

static void test_check_accepts(void **state)
{
    (void)state;
    struct {
        const char *file, *body;
    } ok[] = {
        {"", ""},
        {"", "out[i] = __hadd(out[i], wc[0]);"},
        {"", "out[i] = *reinterpret_cast<const __half *>(wc + 1); reinterpret_cast<uint4 *>(out)[0] = "
             "reinterpret_cast<const uint4 *>(wc)[0];"},
        {"", "float2 v = *reinterpret_cast<const float2 *>(wc); if (v.x > 0.f) out[i] = wc[1];"},
        {"", "__stcs(out + i, wc[0]);"},
        {"", "asm volatile(\"st.global.cs.u16 [%0], %1;\" :: \"l\"(out + i), \"h\"((unsigned short)1));"},
        {"", "unsigned short v; asm volatile(\"ld.global.nc.u16 %0, [%1];\" : \"=h\"(v) : \"l\"(wc + i)); "
             "if (v) return;"},
        {"", "if (__half2float(wc[i]) > 0.f && a.N > 8) return;"},
        {"", "atomicAdd((int *)a.workspace, 1);"},
        {"", "cuda::atomic_ref<int, cuda::thread_scope_device> f(*(int *)a.workspace); f.store(a.launch_seq);"},
        {"", "cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, buf, &a.tm_w_cand, "
             "co, (uint64_t *)buf);"},
        {"", "cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &a.tm_out, co, buf);"},
        {put_helper, "put(out + i, 1u); put2(a.workspace);"},
        {"__host__ __device__ constexpr int hd(int x) { return x + 1; }", "out[hd(i) % n] = wc[0];"},
        {"__device__ const int table[2] = {1, 2};\n__constant__ int ct[2];", "out[i] = wc[table[0] + ct[1]];"},
        {"__device__ __forceinline__ const __half *row(const __half *p, int r) { return p + r; }",
         "out[i] = *row(wc, 1);"},
        {"#define STEP \"add.u32 %0, %0, 1;\"", "unsigned r = 0; asm(STEP : \"+r\"(r)); out[i] = wc[r];"},
        {"", "static_assert(sizeof(int) == 4, \"int is 4 bytes; st.global below relies on it\");"},
        {"extern \"C\" {\n__device__ int helper_c(int x) { return x; }\n}", "out[helper_c(i)] = wc[0];"},
        {"struct G { const __half *w; int K; };",
         "G g; g.w = wc; g.K = a.Kc; *(out + g.K) = g.w[0]; out[sizeof(int *) * g.K] = wc[0];"},
        {"#define HD __host__ __device__", ""},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(ok); i++) {
        char why[512] = "";
        bool pass = check(ok[i].file, ok[i].body, why, sizeof why);
        if (!pass)
            print_error("accept case %zu rejected: %s\n", i, why);
        assert_true(pass);
    }
}

static void test_check_rejects(void **state)
{
    (void)state;
    struct {
        const char *file, *body, *why;
    } bad[] = {
        /* host, printing, timers, allocation, files */
        {"", "printf(\"%d\\n\", i);", "'printf'"},
        {"", "long long t = clock64(); (void)t;", "'clock64'"},
        {"", "long long t = clock(); (void)t;", "'clock'"},
        {"", "unsigned long long t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));", "time"},
        {"", "unsigned long long t; asm volatile(\"mov.u64 %0, \\x25globaltimer;\" : \"=l\"(t));", "time"},
        {"", "unsigned t; asm volatile(\"mov.u32 %0, %%clock;\" : \"=r\"(t));", "time"},
        {"", "unsigned long long t = cuda::ptx::get_sreg_clock64(); (void)t;", "get_sreg_clock64"},
        {"", "void *m = malloc(16); (void)m;", "'malloc'"},
        {"", "__half *m = new __half[4]; (void)m;", "'new'"},
        {"", "assert(i >= 0);", "'assert'"},
        {"", "int *p; cudaMalloc(&p, 4);", "CUDA runtime"},
        {"", "k<<<1, 1>>>(a);", "<<<"},
        {"", "const char *e = getenv(\"HOME\"); (void)e;", "'getenv'"},
        {"__managed__ int mm;", "", "__managed__"},
        {"__host__ void h() {}", "", "__host__"},
        {"int main() { return 0; }", "", "'main'"},
        {"__device__ int cache[64];", "", "mutable __device__ variable"},
        {"", "static int calls = 0; calls++;", "function-local 'static'"},
        /* preprocessor */
        {"#include <stdio.h>", "", "#include of 'stdio.h'"},
        {"#include \"../../secret.h\"", "", "#include of"},
        {"#pragma nv_diag_suppress 177", "", "#pragma"},
        {"", "_Pragma(\"unroll\") for (int j = 0; j < 2; ++j) {}", "_Pragma"},
        {"#define CAT(x, y) x##y", "", "'##'"},
        {"#define STR(x) #x", "", "'#' in a macro"},
        {"#define P printf", "", "'printf'"},
        {"#define W w_user", "", "names the argument field 'w_user'"},
        {"#define w_user x", "", "#define of 'w_user'"},
        {"#define ASM(x) asm volatile(x)", "", "holds inline PTX"},
        {"#define CAST(T, x) ((T)(x))", "", "casts to a macro parameter"},
        {"#define TPL st_text", "asm volatile(TPL ::);", "asm template built from 'TPL'"},
        {"#import <x>", "", "directive '#import'"},
        {"", "int x = 1 # 2;", "stray '#'"},
        {"", "pri\\\nntf(\"x\");", "'printf'"},
        {"", "pr\\u0069ntf(\"x\");", "backslash"},
        {"", "int \xc3\xa9t\xc3\xa9 = 0;", "non-ASCII"},
        {"", "const char *s = \"open;", "unterminated"},
        /* inline PTX */
        {"", "asm volatile(\"st.u32 [%0], %1;\" :: \"l\"(out), \"r\"(0));", "generic address"},
        {"", "asm volatile(\"red.global.add.u32 [%0], 1;\" :: \"l\"(a.workspace));", "atomics"},
        {"", "asm volatile(\"atom.add.u32 %0, [%1], 1;\" : \"=r\"(*(unsigned *)buf) : \"l\"(out));", "atomics"},
        {"", "asm volatile(\"call (_), vprintf, (%0, %1);\" :: \"l\"(0), \"l\"(0));", "'call'"},
        {"", "asm volatile(\".global .u32 g;\");", "declares"},
        {"", "asm volatile(\"discard.global.L2 [%0], 128;\" :: \"l\"(wc));", "'discard"},
        {"", "asm volatile(\"cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%0], [%1], 16;\" :: "
             "\"l\"(out), \"r\"(0));",
         "reduces into global"},
        {"", "const char *t = \"st.u8 [%0], 0;\"; (void)t;", "generic address"},
        /* writes to inputs */
        {"", "((__half *)a.w_cand)[0] = out[0];", "input 'w_cand'"},
        {"", "__half *w = (__half *)a.w_cand; (void)w;", "input 'w_cand' is cast to a non-const pointer"},
        {"", "*(__half *)wc = out[0];", "input 'w_cand' reaches a store"},
        {"", "__half *q; asm(\"mov.b64 %0, %1;\" : \"=l\"(q) : \"l\"(wc)); q[0] = out[0];",
         "input 'w_cand' reaches a store"},
        {"__device__ void tstore(const void *m, const int *c2, unsigned char *b) { "
         "cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, m, c2, b); }",
         "tstore(&a.tm_e_user, co, buf);", "input 'tm_e_user' reaches a store"},
        {"", "__half *w = (__half *)wc; w[0] = out[0];", "input 'w_cand'"},
        {"", "const_cast<__half *>(wc)[0] = out[0];", "const_cast"},
        {"", "unsigned long long p = (unsigned long long)a.e_cand; __half *q = (__half *)p; q[0] = out[0];",
         "input 'e_cand'"},
        {"", "__half *q = reinterpret_cast<__half *>(reinterpret_cast<unsigned long long>(a.e_user)); q[0] = wc[0];",
         "input 'e_user'"},
        {"", "atomicAdd((int *)a.cand_to_user, 1);", "input 'cand_to_user'"},
        {"", "asm volatile(\"st.global.u16 [%0], %1;\" :: \"l\"(a.w_user), \"h\"((unsigned short)0));",
         "input 'w_user' reaches a store"},
        {"", "const __half *e = static_cast<const __half *>(a.e_cand) + 64; asm volatile(\"st.global.v4.u32 [%0], "
             "{%1, %1, %1, %1};\" :: \"l\"(e), \"r\"(0u));",
         "input 'e_cand' reaches a store"},
        {put_helper, "put(a.e_user, 1u);", "input 'e_user' reaches a store"},
        {put_helper, "put2(a.cand_to_user);", "input 'cand_to_user' reaches a store"},
        {"", "cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, &a.tm_w_cand, co, "
             "buf);",
         "input 'tm_w_cand' reaches a store"},
        {"", "const void *tm = &a.tm_e_cand; cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, "
             "cuda::ptx::space_shared, tm, co, buf);",
         "input 'tm_e_cand' reaches a store"},
        {"", "asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\" :: "
             "\"l\"(&a.tm_w_user), \"r\"(0), \"r\"(0), \"r\"(0u) : \"memory\");",
         "input 'tm_w_user' reaches a store"},
        {"", "__half *q; memcpy(&q, &wc, sizeof q); q[0] = out[0];", "input 'w_cand' reaches a store"},
        {"", "union { const __half *c; __half *m; } u; u.c = wc; u.m[0] = out[0];", "reaches a store"},
        {"union U2 { const __half *c; __half *m; };", "U2 u; u.c = wc; u.m[0] = out[0];", "reaches a store"},
        {"struct G { const __half *w; int K; };", "G g; g.w = wc; g.K = a.Kc; ((__half *)g.w)[g.K] = out[0];",
         "input 'w_cand'"},
        {"#define HOST __host__", "", "'__host__'"},
        {"", "const char *base = (const char *)&a; __half *w = *(__half **)(base + 16); w[0] = out[0];",
         "the argument struct"},
        {"typedef __half *hp;", "hp w = (hp)a.w_cand; w[0] = out[0];", "input 'w_cand'"},
        {"", "auto w = (decltype(out))wc; w[0] = out[0];", "input 'w_cand'"},
        {"template <typename T> __device__ T *mut(const T *p) { return (T *)p; }", "mut(wc)[0] = out[0];",
         "input 'w_cand'"},
        {"", "cuda::atomic_ref<const int, cuda::thread_scope_device> r(a.cand_to_user[0]); (void)r;",
         "input 'cand_to_user'"},
        /* the output read before it is written */
        {"", "if (__half2float(out[i]) == 1.0f) return;", "decides control flow"},
        {"", "float prev = __half2float(out[i]); if (prev == prev) return;", "decides control flow"},
        {"", "if (__half2float(__ldg(out + i)) > 0.f) return;", "decides control flow"},
        {"", "out[i] = __half2float(out[i]) != 0.f ? out[i] : wc[0];", "decides control flow"},
        {"", "bool done = __hisnan(out[i]) == false; if (!done) out[i] = wc[0]; else return;", "decides control flow"},
        {"__device__ bool done(const __half *o, int j) { return __half2float(o[j]) == 1.0f; }",
         "if (done(out, i)) return;", "decides control flow"},
        {"__device__ void maybe(__half *o, const __half *w, int j) { if (__half2float(o[j]) != 0.f) return; "
         "o[j] = w[0]; }",
         "maybe(out, wc, i);", "decides control flow"},
        {"", "int kt = (int)(__half2float(out[i]) == 0.f); for (int k2 = 0; k2 < kt; ++k2) out[i] = wc[k2];",
         "decides control flow"},
        {"", "__shared__ float flag; flag = __half2float(out[0]); __syncthreads(); if (flag == 1.f) return;",
         "decides control flow"},
        {"", "unsigned short v; asm volatile(\"ld.global.u16 %0, [%1];\" : \"=h\"(v) : \"l\"(out + i)); "
             "if (v) return;",
         "decides control flow"},
        {"", "__shared__ __half sm[64]; cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, "
             "cuda::ptx::space_global, sm, &a.tm_out, co, (uint64_t *)buf); if (__half2float(sm[0]) > 0.f) return;",
         "decides control flow"},
        {"", "while (__half2float(out[0]) < 1.0f) out[0] = wc[0];", "decides control flow"},
        {"", "float2 v = *reinterpret_cast<const float2 *>(out); if (v.x == v.x) return;", "decides control flow"},
        {"", "if (atomicAdd((int *)out, 0) == 1) return;", "decides control flow"},
        {"", "cuda::atomic_ref<int, cuda::thread_scope_device> r(*(int *)out); if (r.load()) return;",
         "decides control flow"},
        {"", "bool skip = __half2float(out[i]) > 0.f && a.N > 0; if (skip) return;", "decides control flow"},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        char why[512] = "";
        bool pass = check(bad[i].file, bad[i].body, why, sizeof why);
        if (pass || !strstr(why, bad[i].why))
            print_error("reject case %zu (%s | %s): %s, '%s' (want '%s')\n", i, bad[i].file, bad[i].body,
                        pass ? "accepted" : "rejected", why, bad[i].why);
        assert_false(pass);
        assert_non_null(strstr(why, bad[i].why));
        assert_non_null(strstr(why, "line "));
    }
}

static void test_check_limits(void **state)
{
    (void)state;
    char why[256];
    assert_false(kevo_llm_check_source(NULL, lce_inputs, 9, lce_outputs, 2, why, sizeof why));
    /* over 256 KiB */
    size_t big = KEVO_LLM_SOURCE_MAX + 10;
    char *t = malloc(big + 1);
    memset(t, ' ', big);
    t[big] = '\0';
    assert_false(kevo_llm_check_source(t, lce_inputs, 9, lce_outputs, 2, why, sizeof why));
    assert_non_null(strstr(why, "over 256 KiB"));
    /* deep nesting and long chains are refused or handled, quickly */
    for (size_t i = 0; i < 200000; i++)
        t[i] = "(("[i % 2];
    t[200000] = '\0';
    assert_false(kevo_llm_check_source(t, lce_inputs, 9, lce_outputs, 2, why, sizeof why));
    assert_non_null(strstr(why, "nested deeper"));
    kv_buf b;
    kv_buf_init(&b);
    kv_buf_puts(&b, "extern \"C\" __global__ void k(const __grid_constant__ kevo_lce_args a) { int x = 0;\n");
    while (b.len < 200000)
        kv_buf_puts(&b, "x = x ? x && x : x || x; __device__ __device__ ");
    kv_buf_puts(&b, "}\n");
    double t0 = kv_now();
    kevo_llm_check_source(b.data, lce_inputs, 9, lce_outputs, 2, why, sizeof why);
    assert_true(kv_now() - t0 < 60.0);
    kv_buf_release(&b);
    free(t);
    /* no field lists: still a check of everything else */
    assert_false(kevo_llm_check_source("__device__ void f() { printf(\"x\"); }", NULL, 0, NULL, 0, why, sizeof why));
    assert_true(kevo_llm_check_source("__device__ int f() { return 1; }", NULL, 0, NULL, 0, why, sizeof why));
    /* entries: macros, extern "C" blocks, plain ones */
    kevo_llm_entry e[4];
    int n = kevo_llm_find_entries("#define K(name) extern \"C\" __global__ void name\n"
                                  "K(first)(int a) {}\n"
                                  "extern \"C\" { __global__ void second(int a) {} }\n"
                                  "__global__ void third(int a) {}\n"
                                  "__global__ void decl_only(int a);\n",
                                  e, 4);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].name, "first");
    assert_true(e[0].extern_c);
    assert_string_equal(e[1].name, "second");
    assert_true(e[1].extern_c);
    assert_string_equal(e[2].name, "third");
    assert_false(e[2].extern_c);
    assert_int_equal(kevo_llm_find_entries(NULL, e, 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_templates),
        cmocka_unit_test(test_check_accepts),
        cmocka_unit_test(test_check_rejects),
        cmocka_unit_test(test_check_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
