/* test_gpu_ref.c — GPU check (ctest label gpu; exits 77 without a GPU): the
 * device input generator matches the host one bit for bit, and the GPU fp32
 * reference matches the CPU double reference on small odd shapes.  This
 * process initialises CUDA itself, so it forks no GPU worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator/compile.h"
#include "evaluator/cudrv.h"
#include "evaluator/gpu.h"
#include "kernels/ikbo_lce/abi.h"
#include "kernels/ikbo_lce/ikbo_lce.h"
#include "core/op.h"
#include "templates/space.h"
#include "testutil.h"
#include "util/util.h"

static char *abi_text;

/* ---- 1. generator and reference against the host ---- */

static void check_reference(kevo_dtype dt, const char *shape_txt)
{
    kv_cu cu;
    kevo_err err;
    assert_int_equal(kv_cu_load(&cu, &err), KEVO_OK);
    assert_int_equal(cu.cuInit(0), CUDA_SUCCESS);
    CUdevice dev;
    CUcontext ctx;
    assert_int_equal(cu.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
    assert_int_equal(cu.cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(cu.cuCtxSetCurrent(ctx), CUDA_SUCCESS);

    char *src = tu_ref_source(dt, abi_text);
    kevo_compile_job job;
    tu_compile(&job, "ikbo_lce_ref.cu", src);
    CUmodule mod;
    assert_int_equal(cu.cuModuleLoadData(&mod, job.cubin), CUDA_SUCCESS);
    CUfunction f_gen, f_ref;
    assert_int_equal(cu.cuModuleGetFunction(&f_gen, mod, "kv_gen"), CUDA_SUCCESS);
    assert_int_equal(cu.cuModuleGetFunction(&f_ref, mod, "kv_ref"), CUDA_SUCCESS);

    kevo_syms shape;
    assert_int_equal(kevo_op_find("ikbo_lce")->parse_shape(shape_txt, &shape, &err), KEVO_OK);
    kevo_lce_host h;
    const uint64_t seed = 4242;
    assert_int_equal(kevo_lce_host_init(&h, &shape, dt, KEVO_MAP_SHUFFLED, seed, &err), KEVO_OK);
    size_t n_wu = (size_t)(h.M * h.Ku), n_wc = (size_t)(h.M * h.Kc);
    size_t n_eu = (size_t)(h.U * h.Ku * h.N), n_ec = (size_t)(h.B * h.Kc * h.N), n_out = (size_t)(h.B * h.M * h.N);
    CUdeviceptr wu, wc, eu, ec, map, ref;
    assert_int_equal(cu.cuMemAlloc(&wu, n_wu * 2), CUDA_SUCCESS);
    assert_int_equal(cu.cuMemAlloc(&wc, n_wc * 2), CUDA_SUCCESS);
    assert_int_equal(cu.cuMemAlloc(&eu, n_eu * 2), CUDA_SUCCESS);
    assert_int_equal(cu.cuMemAlloc(&ec, n_ec * 2), CUDA_SUCCESS);
    assert_int_equal(cu.cuMemAlloc(&map, (size_t)h.B * 4), CUDA_SUCCESS);
    assert_int_equal(cu.cuMemAlloc(&ref, n_out * 4), CUDA_SUCCESS);

    /* device generation of each tensor must equal the host's bits */
    struct {
        CUdeviceptr p;
        size_t n;
        unsigned tensor;
        const uint16_t *host;
    } t[] = {{wu, n_wu, 0, h.w_user}, {wc, n_wc, 1, h.w_cand}, {eu, n_eu, 2, h.e_user}, {ec, n_ec, 3, h.e_cand}};
    for (int i = 0; i < 4; i++) {
        unsigned long long count = t[i].n, sd = seed;
        void *p[] = {&t[i].p, &count, &sd, &t[i].tensor};
        assert_int_equal(cu.cuLaunchKernel(f_gen, 64, 1, 1, 256, 1, 1, 0, NULL, p, NULL), CUDA_SUCCESS);
        assert_int_equal(cu.cuCtxSynchronize(), CUDA_SUCCESS);
        uint16_t *back = malloc(t[i].n * 2);
        assert_int_equal(cu.cuMemcpyDtoH(back, t[i].p, t[i].n * 2), CUDA_SUCCESS);
        assert_memory_equal(back, t[i].host, t[i].n * 2);
        free(back);
    }
    assert_int_equal(cu.cuMemcpyHtoD(map, h.map, (size_t)h.B * 4), CUDA_SUCCESS);
    kevo_lce_args a;
    memset(&a, 0, sizeof a);
    a.w_user = (const void *)(uintptr_t)wu;
    a.w_cand = (const void *)(uintptr_t)wc;
    a.e_user = (const void *)(uintptr_t)eu;
    a.e_cand = (const void *)(uintptr_t)ec;
    a.cand_to_user = (const int *)(uintptr_t)map;
    a.B = (int)h.B, a.M = (int)h.M, a.N = (int)h.N, a.Ku = (int)h.Ku, a.Kc = (int)h.Kc, a.U = (int)h.U;
    a.ldw_user = (int)h.Ku, a.ldw_cand = (int)h.Kc;
    int b0 = 0;
    void *p[] = {&a, &ref, &b0};
    assert_int_equal(cu.cuLaunchKernel(f_ref, (unsigned)((h.N + 63) / 64), (unsigned)((h.M + 63) / 64),
                                       (unsigned)h.B, 16, 16, 1, 0, NULL, p, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(cu.cuCtxSynchronize(), CUDA_SUCCESS);
    float *got = malloc(n_out * 4);
    double *want = malloc(n_out * sizeof *want);
    assert_int_equal(cu.cuMemcpyDtoH(got, ref, n_out * 4), CUDA_SUCCESS);
    kevo_lce_reference_cpu(&h, want);
    double d2 = 0, r2 = 0;
    for (size_t i = 0; i < n_out; i++) {
        d2 += (got[i] - want[i]) * (got[i] - want[i]);
        r2 += want[i] * want[i];
    }
    double rel = sqrt(d2 / r2);
    printf("  reference %s %s: rel_err vs CPU double %.2e\n", kevo_dtype_name(dt), shape_txt, rel);
    assert_true(r2 > 0);
    assert_true(rel < 1e-6); /* fp32 sums of exact products */
    free(got);
    free(want);
    CUdeviceptr all[] = {wu, wc, eu, ec, map, ref};
    for (int i = 0; i < 6; i++)
        cu.cuMemFree(all[i]);
    cu.cuModuleUnload(mod);
    kevo_lce_host_release(&h);
    kevo_compile_job_release(&job);
    free(src);
    cu.cuDevicePrimaryCtxRelease(dev);
    kv_cu_unload(&cu);
}

static void test_reference_fp16(void **state)
{
    (void)state;
    check_reference(KEVO_DTYPE_F16, "B=5,M=37,N=72,Ku=45,Kc=29,U=2");
}

static void test_reference_bf16(void **state)
{
    (void)state;
    check_reference(KEVO_DTYPE_BF16, "B=7,M=70,N=64,Ku=130,Kc=66,ratio=3");
}

static int setup(void **state)
{
    (void)state;
    abi_text = tu_read_src("kernels/ikbo_lce/abi.h");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(abi_text);
    return 0;
}

int main(void)
{
    if (!tu_have_gpu()) {
        printf("skipped: no CUDA driver or device\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_fp16),
        cmocka_unit_test(test_reference_bf16),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
