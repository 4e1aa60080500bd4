/* test_compile.c — the compiler's machinery, NVRTC in child processes (no
 * GPU needed): compile errors, the compile time limit, a pool of jobs, the
 * simulated compile, the cache key, the precompiled prelude header and the
 * ptxas report parser.  (test_compile_templates.c compiles every template
 * family.) */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/compile.h"
#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

/* ---- failures ---- */

static const char bad_src[] = "extern \"C\" __global__ void k(float *p)\n"
                              "{\n"
                              "    int x = ;\n"
                              "    p[0] = 1.0f;\n"
                              "}\n";

static void test_compile_error(void **state)
{
    (void)state;
    kevo_compile_job j;
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_compile_job_init(&j, "bad.cu", bad_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(&j, 1, 1, 300, &err), KEVO_OK); /* a failed job is not an error */
    assert_int_equal(j.fail, KEVO_FAIL_COMPILE_ERROR);
    assert_null(j.cubin);
    assert_int_equal(j.cubin_size, 0);
    assert_non_null(j.log);
    if (!strstr(j.log, "bad.cu(3): error"))
        print_error("log:\n%s\n", j.log);
    assert_non_null(strstr(j.log, "bad.cu(3): error"));
    assert_int_equal(j.regs, -1);
    assert_int_equal(j.spill_bytes, -1);
    kevo_compile_job_release(&j);

    /* an arch NVRTC does not know: a compile error with NVRTC's message */
    assert_int_equal(kevo_compile_job_init(&j, "k.cu", "extern \"C\" __global__ void k() {}\n", "sm_12", &err),
                     KEVO_OK);
    assert_int_equal(kevo_compile_run(&j, 1, 1, 300, &err), KEVO_OK);
    assert_int_equal(j.fail, KEVO_FAIL_COMPILE_ERROR);
    assert_non_null(j.log);
    assert_true(strlen(j.log) > 0);
    assert_null(j.cubin);
    kevo_compile_job_release(&j);

    /* arch names that are not sm_*: refused before any compile */
    assert_int_equal(kevo_compile_job_init(&j, "k.cu", "", "gfx90a", &err), KEVO_ERR_ARG);
    assert_non_null(strstr(err.msg, "'gfx90a'"));
    assert_int_equal(kevo_compile_job_init(&j, "k.cu", "", "sm_90a_and_much_more", &err), KEVO_ERR_ARG);
}

/* KEVO_SIM_COMPILE_MS: a simulated compile (sleep, the source's hash as the
 * "cubin"), only beside KEVO_SIM_GPUS; otherwise NVRTC runs. */
static void test_sim_compile(void **state)
{
    (void)state;
    kevo_compile_job j[2];
    kevo_err err;
    kevo_err_clear(&err);
    setenv("KEVO_SIM_COMPILE_MS", "300", 1);
    /* without simulated GPUs the setting is ignored: bad_src fails to compile */
    assert_int_equal(kevo_compile_job_init(&j[0], "bad.cu", bad_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(&j[0], 1, 1, 300, &err), KEVO_OK);
    assert_int_equal(j[0].fail, KEVO_FAIL_COMPILE_ERROR);
    kevo_compile_job_release(&j[0]);

    setenv("KEVO_SIM_GPUS", "2", 1);
    assert_int_equal(kevo_compile_job_init(&j[0], "bad.cu", bad_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&j[1], "slow.cu", "extern \"C\" __global__ void k() {}\n", "sm_90a", &err),
                     KEVO_OK);
    double t0 = kv_now();
    assert_int_equal(kevo_compile_run(j, 2, 2, 300, &err), KEVO_OK);
    double dt = kv_now() - t0;
    printf("two simulated compiles of 300 ms (x0.75..1.25) at once: %.3f s\n", dt);
    assert_true(dt >= 0.225 && dt < 2.0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(j[i].fail, KEVO_FAIL_NONE);
        assert_int_equal(j[i].cubin_size, 64);
        assert_true(j[i].seconds >= 0.2);
    }
    assert_memory_not_equal(j[0].cubin, j[1].cubin, 64);
    kevo_compile_job_release(&j[0]);
    kevo_compile_job_release(&j[1]);

    /* a value out of 1..60000 is ignored */
    setenv("KEVO_SIM_COMPILE_MS", "0", 1);
    assert_int_equal(kevo_compile_job_init(&j[0], "bad.cu", bad_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(&j[0], 1, 1, 300, &err), KEVO_OK);
    assert_int_equal(j[0].fail, KEVO_FAIL_COMPILE_ERROR);
    kevo_compile_job_release(&j[0]);
    unsetenv("KEVO_SIM_COMPILE_MS");
    unsetenv("KEVO_SIM_GPUS");
}

/* About 2.5 s of ptxas on an idle core: 2500 dependent steps, inlined. */
static const char slow_src[] =
    "template <int N> struct Chain {\n"
    "    static __device__ __forceinline__ float run(float x) { return Chain<N - N / 2>::run(Chain<N / 2>::run(x)); }\n"
    "};\n"
    "template <> struct Chain<1> {\n"
    "    static __device__ __forceinline__ float run(float x) { return x * 1.0001f + __sinf(x) * __cosf(x * 0.5f); }\n"
    "};\n"
    "extern \"C\" __global__ void slow(float *p) { p[threadIdx.x] = Chain<2500>::run(p[threadIdx.x]); }\n";

static void test_compile_timeout(void **state)
{
    (void)state;
    kevo_compile_job j;
    kevo_err err;
    kevo_err_clear(&err);
    /* without a tight limit it compiles, and takes over a second */
    assert_int_equal(kevo_compile_job_init(&j, "slow.cu", slow_src, "sm_90a", &err), KEVO_OK);
    double t0 = kv_now();
    assert_int_equal(kevo_compile_run(&j, 1, 1, 300, &err), KEVO_OK);
    double full = kv_now() - t0;
    printf("slow source: %.2f s without a limit\n", full);
    assert_int_equal(j.fail, KEVO_FAIL_NONE);
    assert_true(full > 1.0);
    kevo_compile_job_release(&j);

    /* with 0.05 s it is killed, promptly */
    assert_int_equal(kevo_compile_job_init(&j, "slow.cu", slow_src, "sm_90a", &err), KEVO_OK);
    t0 = kv_now();
    assert_int_equal(kevo_compile_run(&j, 1, 1, 0.05, &err), KEVO_OK);
    double killed = kv_now() - t0;
    printf("slow source: killed after %.2f s\n", killed);
    assert_int_equal(j.fail, KEVO_FAIL_COMPILE_TIMEOUT);
    assert_null(j.cubin);
    assert_non_null(j.log);
    assert_non_null(strstr(j.log, "time limit"));
    assert_true(killed < 0.9);
    kevo_compile_job_release(&j);
}

/* A child past its limit is killed without disturbing the others in the pool. */
static void test_timeout_in_pool(void **state)
{
    (void)state;
    const char *good = "extern \"C\" __global__ void fine(float *p) { p[threadIdx.x] *= 2.0f; }\n";
    kevo_compile_job jobs[4];
    kevo_err err;
    kevo_err_clear(&err);
    assert_int_equal(kevo_compile_job_init(&jobs[0], "slow.cu", slow_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&jobs[1], "good1.cu", good, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&jobs[2], "bad.cu", bad_src, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&jobs[3], "good2.cu", good, "sm_90a", &err), KEVO_OK);
    double t0 = kv_now();
    assert_int_equal(kevo_compile_run(jobs, 4, 2, 0.5, &err), KEVO_OK);
    double wall = kv_now() - t0;
    assert_true(wall < 2.0);
    assert_int_equal(jobs[0].fail, KEVO_FAIL_COMPILE_TIMEOUT);
    assert_null(jobs[0].cubin);
    assert_int_equal(jobs[1].fail, KEVO_FAIL_NONE);
    assert_non_null(jobs[1].cubin);
    assert_int_equal(jobs[2].fail, KEVO_FAIL_COMPILE_ERROR);
    assert_non_null(strstr(jobs[2].log, "bad.cu(3): error"));
    assert_int_equal(jobs[3].fail, KEVO_FAIL_NONE);
    assert_non_null(jobs[3].cubin);
    /* same source, same options: the same cubin */
    assert_int_equal(jobs[1].cubin_size, jobs[3].cubin_size);
    for (int i = 0; i < 4; i++)
        kevo_compile_job_release(&jobs[i]);
}

/* ---- 3. a pool of jobs ---- */

static void test_parallel(void **state)
{
    (void)state;
    enum { N = 7 };
    char srcs[N][512], names[N][16];
    bool good[N];
    int err_line[N];
    kevo_compile_job jobs[N];
    kevo_err err;
    kevo_err_clear(&err);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "job%d.cu", i);
        good[i] = i % 3 != 1;
        err_line[i] = 0;
        if (good[i]) {
            /* entry entry_<i>, using i floats of shared memory */
            snprintf(srcs[i], sizeof srcs[i],
                     "extern \"C\" __global__ void entry_%d(float *p)\n"
                     "{\n"
                     "    __shared__ float s[%d];\n"
                     "    s[threadIdx.x %% %d] = p[threadIdx.x];\n"
                     "    __syncthreads();\n"
                     "    p[threadIdx.x] = s[(threadIdx.x + 1) %% %d];\n"
                     "}\n",
                     i, 64 * (i + 1), 64 * (i + 1), 64 * (i + 1));
        } else {
            /* a syntax error on line 2 + i */
            kv_buf b;
            kv_buf_init(&b);
            kv_buf_printf(&b, "extern \"C\" __global__ void broken_%d(float *p)\n{\n", i);
            for (int k = 0; k < i; k++)
                kv_buf_puts(&b, "    p[0] += 1.0f;\n");
            kv_buf_puts(&b, "    p[0] = ;\n}\n");
            snprintf(srcs[i], sizeof srcs[i], "%s", b.data);
            kv_buf_release(&b);
            err_line[i] = 3 + i;
        }
        assert_int_equal(kevo_compile_job_init(&jobs[i], names[i], srcs[i], "sm_90a", &err), KEVO_OK);
    }
    /* a job filled from the cache is left alone */
    jobs[N - 1].cached = true;
    assert_int_equal(kevo_compile_run(jobs, N, 2, 300, &err), KEVO_OK);
    for (int i = 0; i < N; i++) {
        kevo_compile_job *j = &jobs[i];
        if (i == N - 1) {
            assert_true(j->cached);
            assert_int_equal(j->fail, KEVO_FAIL_NONE);
            assert_null(j->cubin);
            assert_null(j->log);
            assert_int_equal(j->regs, -1);
            continue;
        }
        if (good[i]) {
            if (j->fail != KEVO_FAIL_NONE)
                print_error("%s: %s\n", names[i], j->log ? j->log : "");
            assert_int_equal(j->fail, KEVO_FAIL_NONE);
            assert_non_null(j->cubin);
            char entry[32];
            snprintf(entry, sizeof entry, "entry_%d", i);
            assert_non_null(memmem(j->cubin, j->cubin_size, entry, strlen(entry)));
            for (int k = 0; k < N; k++) {
                char other[32];
                snprintf(other, sizeof other, "entry_%d", k);
                if (k != i)
                    assert_null(memmem(j->cubin, j->cubin_size, other, strlen(other)));
            }
            char line[96];
            snprintf(line, sizeof line, "Compiling entry function '%s'", entry);
            assert_non_null(strstr(j->log, line));
            assert_int_equal(j->smem_static, 64 * (i + 1) * 4);
            assert_int_equal(j->spill_bytes, 0);
        } else {
            assert_int_equal(j->fail, KEVO_FAIL_COMPILE_ERROR);
            assert_null(j->cubin);
            char line[64];
            snprintf(line, sizeof line, "job%d.cu(%d): error", i, err_line[i]);
            if (!strstr(j->log, line))
                print_error("want '%s' in:\n%s\n", line, j->log);
            assert_non_null(strstr(j->log, line));
            assert_null(strstr(j->log, "entry_"));
        }
        kevo_compile_job_release(j);
    }

    /* more slots than jobs; no jobs at all */
    assert_int_equal(kevo_compile_job_init(&jobs[0], "one.cu", srcs[0], "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_run(jobs, 1, 16, 300, &err), KEVO_OK);
    assert_int_equal(jobs[0].fail, KEVO_FAIL_NONE);
    kevo_compile_job_release(&jobs[0]);
    assert_int_equal(kevo_compile_run(jobs, 0, 2, 300, &err), KEVO_OK);
}

/* ---- 4. the cache key ---- */

static void key_of(kevo_compile_job *j, const char *src, const char *arch, char out[65])
{
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(j, "k.cu", src, arch, &err), KEVO_OK);
    kevo_compile_key(j);
    assert_int_equal(strlen(j->key), 64);
    for (int i = 0; i < 64; i++)
        assert_non_null(strchr("0123456789abcdef", j->key[i]));
    memcpy(out, j->key, 65);
}

/* Cached jobs ahead of uncached ones fill every slot at first: the
 * uncached ones behind them are still compiled (regression: the pool once
 * stopped there, leaving them "compiled" without a cubin). */
static void test_cached_first(void **state)
{
    (void)state;
    kevo_compile_job jobs[3];
    kevo_err err;
    memset(jobs, 0, sizeof jobs);
    const char *src = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }\n";
    for (int i = 0; i < 3; i++)
        assert_int_equal(kevo_compile_job_init(&jobs[i], "k.cu", src, "sm_90a", &err), KEVO_OK);
    jobs[0].cached = jobs[1].cached = true;
    assert_int_equal(kevo_compile_run(jobs, 3, 2, 300, &err), KEVO_OK);
    assert_null(jobs[0].cubin);
    assert_null(jobs[1].cubin);
    assert_int_equal(jobs[2].fail, KEVO_FAIL_NONE);
    assert_non_null(jobs[2].cubin);
    for (int i = 0; i < 3; i++)
        kevo_compile_job_release(&jobs[i]);
}

/* ---- precompiled headers ---- */

static void test_prelude_len(void **state)
{
    (void)state;
    assert_int_equal(kevo_compile_prelude_len(""), 0);
    assert_int_equal(kevo_compile_prelude_len("// x\n#include <cuda/ptx>\n"), 0);
    assert_int_equal(kevo_compile_prelude_len("#include <cuda/ptx>\n"), 20);
    assert_int_equal(kevo_compile_prelude_len("#include <cuda/ptx>\n#include <cuda_fp16.h>\n#define X 1\n"), 43);
    assert_int_equal(kevo_compile_prelude_len("#include <a.h>\n#include \"b.h\"\n"), 15);
    assert_int_equal(kevo_compile_prelude_len("#include <a.h> // c\n"), 0);
    assert_int_equal(kevo_compile_prelude_len("#include <a.h>"), 0); /* no line end */
    assert_int_equal(kevo_compile_prelude_len("#include <>\n"), 0);
    assert_int_equal(kevo_compile_prelude_len("#include <a b>\n"), 0);
}

#define PCH_PRELUDE "#include <cuda_fp16.h>\n#include <cuda/ptx>\n"
#define PCH_KERNEL                                                                                                    \
    "extern \"C\" __global__ void k(unsigned *p, __half *h)\n"                                                       \
    "{\n"                                                                                                             \
    "    p[threadIdx.x] = cuda::ptx::get_sreg_laneid();\n"                                                           \
    "    h[threadIdx.x] = __float2half(1.0f);\n"                                                                     \
    "}\n"

/* Start job in p and wait for it. */
static void pch_compile(kevo_compile_pool *p, kevo_compile_job *job)
{
    kevo_err err;
    assert_int_equal(kevo_compile_pool_start(p, job, 300, &err), KEVO_OK);
    kevo_compile_job *done = NULL;
    while (!done)
        assert_int_equal(kevo_compile_pool_wait(p, 1.0, &done, &err), KEVO_OK);
    assert_ptr_equal(done, job);
}

/* The first job of a prelude starts the PCH's writer; told not to wait, it
 * compiles without it.  Once it is written the next jobs of that prelude and
 * options use it (the same ptxas figures, no PCH line left in the log, a
 * compile error still reported as such); a job of another prelude waits for
 * its own writer and uses that, or, with a wait shorter than the writer,
 * starts without it; KEVO_PCH=0 turns it off.  The PCH outlives the pool
 * that wrote it. */
static void test_pch(void **state)
{
    (void)state;
    kevo_err err;
    int writing = 0;
    int ready0 = kevo_compile_pch_ready(&writing);
    assert_int_equal(writing, 0);
    kevo_compile_pool *p;
    assert_int_equal(kevo_compile_pool_new(2, &p, &err), KEVO_OK);
    kevo_compile_pool_set_pch_wait(p, 0);
    kevo_compile_job a, b, c, d, e, f;
    assert_int_equal(kevo_compile_job_init(&a, "a.cu", PCH_PRELUDE PCH_KERNEL, "sm_90a", &err), KEVO_OK);
    pch_compile(p, &a);
    assert_int_equal(a.fail, KEVO_FAIL_NONE);
    assert_false(a.pch);
    kevo_compile_pool_free(p); /* the writer goes on */
    assert_int_equal(kevo_compile_pool_new(2, &p, &err), KEVO_OK);
    double t0 = kv_now();
    kevo_compile_job *none;
    while (kevo_compile_pch_ready(&writing) == ready0 && writing && kv_now() - t0 < 120)
        assert_int_equal(kevo_compile_pool_wait(p, 0.5, &none, &err), KEVO_OK);
    assert_int_equal(kevo_compile_pch_ready(&writing), ready0 + 1);
    assert_int_equal(writing, 0);

    assert_int_equal(kevo_compile_job_init(&b, "b.cu", PCH_PRELUDE PCH_KERNEL, "sm_90a", &err), KEVO_OK);
    pch_compile(p, &b);
    if (b.fail || !b.pch)
        print_error("log:\n%s\n", b.log ? b.log : "");
    assert_int_equal(b.fail, KEVO_FAIL_NONE);
    assert_true(b.pch);
    assert_int_equal(b.regs, a.regs);
    assert_int_equal(b.smem_static, a.smem_static);
    assert_int_equal(b.cubin_size, a.cubin_size);
    assert_null(strstr(b.log, "precompiled header"));
    assert_non_null(strstr(b.log, "ptxas info"));

    assert_int_equal(kevo_compile_job_init(&c, "c.cu", PCH_PRELUDE "extern \"C\" __global__ void k() { nope(); }\n",
                                           "sm_90a", &err),
                     KEVO_OK);
    pch_compile(p, &c);
    assert_int_equal(c.fail, KEVO_FAIL_COMPILE_ERROR);
    assert_true(c.pch);
    assert_non_null(strstr(c.log, "c.cu(3): error"));

    /* another prelude: its own writer, which this job waits for (the pool's default) */
    ready0 = kevo_compile_pch_ready(NULL);
    assert_int_equal(kevo_compile_job_init(&d, "d.cu", "#include <cuda_fp16.h>\n" PCH_KERNEL, "sm_90a", &err), KEVO_OK);
    pch_compile(p, &d);
    assert_true(d.pch);
    assert_int_equal(kevo_compile_pch_ready(&writing), ready0 + 1);
    assert_int_equal(d.fail, KEVO_FAIL_COMPILE_ERROR); /* no <cuda/ptx> */
    assert_non_null(strstr(d.log, "d.cu"));

    /* a third: a wait shorter than its writer ends, and the job goes without */
    kevo_compile_pool_set_pch_wait(p, 0.01);
    assert_int_equal(kevo_compile_job_init(&f, "f.cu", "#include <cuda/ptx>\n#include <cuda_fp16.h>\n" PCH_KERNEL,
                                           "sm_90a", &err),
                     KEVO_OK);
    pch_compile(p, &f);
    assert_false(f.pch);
    assert_int_equal(f.fail, KEVO_FAIL_NONE);
    assert_int_equal(f.regs, a.regs);

    setenv("KEVO_PCH", "0", 1);
    kevo_compile_pool *off;
    assert_int_equal(kevo_compile_pool_new(1, &off, &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&e, "e.cu", PCH_PRELUDE PCH_KERNEL, "sm_90a", &err), KEVO_OK);
    pch_compile(off, &e);
    unsetenv("KEVO_PCH");
    assert_int_equal(e.fail, KEVO_FAIL_NONE);
    assert_false(e.pch);
    assert_int_equal(e.regs, a.regs);
    kevo_compile_pool_free(off);

    kevo_compile_pool_free(p);
    kevo_compile_job_release(&a);
    kevo_compile_job_release(&b);
    kevo_compile_job_release(&c);
    kevo_compile_job_release(&d);
    kevo_compile_job_release(&e);
    kevo_compile_job_release(&f);
}


/* kevo_compile_pch_prepare before any job: the writers of two preludes run
 * at once, preparing one again starts no other, a source without a prelude
 * and KEVO_PCH=0 start none, and the first job of a prepared prelude
 * compiles with its PCH. */
static void test_pch_prepare(void **state)
{
    (void)state;
    kevo_err err;
    kevo_compile_pool *p;
    assert_int_equal(kevo_compile_pool_new(1, &p, &err), KEVO_OK);
    tu_pch_settle(p);
    int writing = 0, ready0 = kevo_compile_pch_ready(NULL);
    const char *pre1 = "#include <cuda_bf16.h>\n#include <cuda/ptx>\n";
    const char *pre2 = "#include <cuda/std/cstdint>\n";
    kevo_compile_job j1, j2, j3;
    assert_int_equal(kevo_compile_job_init(&j1, "p1.cu", pre1, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&j2, "p2.cu", pre2, "sm_90a", &err), KEVO_OK);
    assert_int_equal(kevo_compile_job_init(&j3, "p3.cu", PCH_KERNEL, "sm_90a", &err), KEVO_OK);
    setenv("KEVO_PCH", "0", 1);
    kevo_compile_pch_prepare(&j1);
    unsetenv("KEVO_PCH");
    kevo_compile_pch_ready(&writing);
    assert_int_equal(writing, 0);
    kevo_compile_pch_prepare(&j3); /* no prelude */
    kevo_compile_pch_ready(&writing);
    assert_int_equal(writing, 0);
    kevo_compile_pch_prepare(&j1);
    kevo_compile_pch_prepare(&j2);
    kevo_compile_pch_prepare(&j1);
    kevo_compile_pch_ready(&writing);
    assert_int_equal(writing, 2);
    tu_pch_settle(p);
    assert_int_equal(kevo_compile_pch_ready(NULL), ready0 + 2);

    kevo_compile_job a;
    assert_int_equal(kevo_compile_job_init(&a, "a.cu",
                                           "#include <cuda_bf16.h>\n#include <cuda/ptx>\n"
                                           "extern \"C\" __global__ void k(unsigned *p)\n"
                                           "{ p[threadIdx.x] = cuda::ptx::get_sreg_laneid(); }\n",
                                           "sm_90a", &err),
                     KEVO_OK);
    pch_compile(p, &a);
    if (a.fail || !a.pch)
        print_error("log:\n%s\n", a.log ? a.log : "");
    assert_int_equal(a.fail, KEVO_FAIL_NONE);
    assert_true(a.pch);
    assert_true(a.cubin_size > 0);
    kevo_compile_pool_free(p);
    kevo_compile_job_release(&a);
}

static void test_key(void **state)
{
    (void)state;
    const char *src = "extern \"C\" __global__ void k(float *p) { p[0] = 1.0f; }\n";
    kevo_compile_job j;
    char base[65], k2[65];
    key_of(&j, src, "sm_90a", base);
    /* stable */
    key_of(&j, src, "sm_90a", k2);
    assert_string_equal(base, k2);
    kevo_compile_key(&j);
    assert_string_equal(j.key, base);
    /* the program name is not part of it */
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(&j, "other_name.cu", src, "sm_90a", &err), KEVO_OK);
    kevo_compile_key(&j);
    assert_string_equal(j.key, base);

    /* the source */
    key_of(&j, "extern \"C\" __global__ void k(float *p) { p[0] = 2.0f; }\n", "sm_90a", k2);
    assert_string_not_equal(base, k2);
    /* the arch */
    key_of(&j, src, "sm_90", k2);
    assert_string_not_equal(base, k2);
    key_of(&j, src, "sm_80", k2);
    assert_string_not_equal(base, k2);
    /* an option more */
    key_of(&j, src, "sm_90a", k2);
    snprintf(j.opts[j.nopts++], sizeof j.opts[0], "-DEXTRA=1");
    kevo_compile_key(&j);
    assert_string_not_equal(base, j.key);
    /* an option changed */
    key_of(&j, src, "sm_90a", k2);
    for (int i = 0; i < j.nopts; i++)
        if (!strcmp(j.opts[i], "-lineinfo"))
            snprintf(j.opts[i], sizeof j.opts[0], "-G");
    kevo_compile_key(&j);
    assert_string_not_equal(base, j.key);

    /* -I paths are not part of it: two jobs that differ only there */
    kevo_compile_job a, b;
    key_of(&a, src, "sm_90a", k2);
    key_of(&b, src, "sm_90a", k2);
    int ni = 0;
    for (int i = 0; i < b.nopts; i++)
        if (!strncmp(b.opts[i], "-I", 2)) {
            snprintf(b.opts[i], sizeof b.opts[0], "-I/some/other/machine/cuda-13.0/include%d", i);
            ni++;
        }
    assert_true(ni >= 1);
    assert_string_not_equal(a.opts[a.nopts - 1], b.opts[b.nopts - 1]);
    kevo_compile_key(&a);
    kevo_compile_key(&b);
    assert_string_equal(a.key, b.key);
    assert_string_equal(a.key, base);
    /* nor is one more -I */
    snprintf(b.opts[b.nopts++], sizeof b.opts[0], "-I/opt/extra");
    kevo_compile_key(&b);
    assert_string_equal(b.key, base);
}

/* ---- 5. the ptxas report ---- */

static void test_parse_ptxas(void **state)
{
    (void)state;
    const char *log = "ptxas info    : 16 bytes gmem\n"
                      "ptxas info    : Compiling entry function 'first' for 'sm_90a'\n"
                      "ptxas info    : Function properties for first\n"
                      "ptxas         .     32 bytes stack frame, 8 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 40 registers, used 1 barriers, 32 bytes cumulative stack size, "
                      "1024 bytes smem\n"
                      "ptxas info    : Compile time = 1.965 ms\n"
                      "ptxas info    : Compiling entry function 'second' for 'sm_90a'\n"
                      "ptxas info    : Function properties for second\n"
                      "ptxas         .     16 bytes stack frame, 0 bytes spill stores, 16 bytes spill loads\n"
                      "ptxas info    : Used 168 registers, used 0 barriers, 16 bytes cumulative stack size\n"
                      "ptxas info    : Compile time = 2.5 ms\n";
    kevo_compile_job j;
    memset(&j, 0, sizeof j);
    kevo_compile_parse_ptxas(&j, log);
    assert_int_equal(j.regs, 168);
    assert_int_equal(j.spill_bytes, 24);
    assert_int_equal(j.smem_static, 1024);
    assert_int_equal(j.stack_bytes, 32);

    /* one entry, no smem field: static smem is 0 */
    const char *one = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
                      "ptxas info    : Function properties for k\n"
                      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
                      "ptxas info    : Used 8 registers, used 0 barriers\n";
    memset(&j, 0x11, sizeof j);
    kevo_compile_parse_ptxas(&j, one);
    assert_int_equal(j.regs, 8);
    assert_int_equal(j.spill_bytes, 0);
    assert_int_equal(j.smem_static, 0);
    assert_int_equal(j.stack_bytes, 0);

    /* no report: all unknown */
    kevo_compile_parse_ptxas(&j, "job.cu(3): error: expected an expression\n");
    assert_int_equal(j.regs, -1);
    assert_int_equal(j.spill_bytes, -1);
    assert_int_equal(j.smem_static, -1);
    assert_int_equal(j.stack_bytes, -1);

    /* NULL: left alone */
    j.regs = 5;
    kevo_compile_parse_ptxas(&j, NULL);
    assert_int_equal(j.regs, 5);
}

static void test_version(void **state)
{
    (void)state;
    char v[16];
    kevo_nvrtc_version(v, sizeof v);
    int major = 0, minor = -1;
    assert_int_equal(sscanf(v, "%d.%d", &major, &minor), 2);
    assert_true(major >= 13);
    assert_true(minor >= 0);
    const char *inc = kevo_cuda_include_dir();
    assert_non_null(inc);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cuda_fp16.h", inc);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ptxas),
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_prelude_len),
        cmocka_unit_test(test_pch),
        cmocka_unit_test(test_pch_prepare),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_compile_error),
        cmocka_unit_test(test_sim_compile),
        cmocka_unit_test(test_parallel),
        cmocka_unit_test(test_cached_first),
        cmocka_unit_test(test_compile_timeout),
        cmocka_unit_test(test_timeout_in_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
