/* example.c — an application of an exported kevo library (kevo_tuned).
 *
 *   ikbo_example B M N Ku Kc U [bf16] [time] [natural]
 *
 * Makes random inputs in the padded layout (W with rows padded to 8
 * elements, each E batch with rows padded to 8: ke_* = K rounded up, the
 * padding zeros; what the fastest kernels read, and what a shape that runs
 * cuBLAS was timed at), or with "natural" E as [batch, K, N]; poisons the
 * output with NaN, runs kevo_tuned_ikbo_lce once, prints which path ran
 * ("path: kernel ..." or "path: cuBLAS ..."), checks that every output was
 * written and that 4096 sampled outputs match a double-precision CPU
 * reference, and with "time" reports the median of 50 timed calls (CUDA
 * events, L2 flushed before each).  Exit status 0 only when the check
 * passes. */
#include "example_util.h"
#include "kevo_tuned.h"

typedef struct lce_call {
    kevo_tuned_ikbo_lce_args a;
    CUdeviceptr ws;
} lce_call;

static int run_once(void *arg)
{
    lce_call *c = arg;
    kevo_tuned_status st = kevo_tuned_ikbo_lce(&c->a, (void *)(uintptr_t)c->ws, NULL);
    if (st != KEVO_TUNED_STATUS_SUCCESS)
        printf("kevo_tuned_ikbo_lce: %s\n", kevo_tuned_status_string(st));
    return st != KEVO_TUNED_STATUS_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s B M N Ku Kc U [bf16] [time]\n", argv[0]);
        return 2;
    }
    int B = atoi(argv[1]), M = atoi(argv[2]), N = atoi(argv[3]), Ku = atoi(argv[4]), Kc = atoi(argv[5]),
        U = atoi(argv[6]);
    int bf16 = 0, timing = 0, natural = 0;
    for (int i = 7; i < argc; i++) {
        bf16 |= strcmp(argv[i], "bf16") == 0;
        timing |= strcmp(argv[i], "time") == 0;
        natural |= strcmp(argv[i], "natural") == 0;
    }
    int ldu = (Ku + 7) / 8 * 8, ldc = (Kc + 7) / 8 * 8;
    int keu = natural ? Ku : ldu, kec = natural ? Kc : ldc; /* rows of each E batch as stored */
    CUdevice dev = ex_init();

    /* inputs: padded weights (zeros in the padding), sorted candidates per user */
    uint16_t *wu = calloc((size_t)M * ldu, 2), *wc = calloc((size_t)M * ldc, 2);
    for (int m = 0; m < M; m++) {
        for (int k = 0; k < Ku; k++)
            wu[(size_t)m * ldu + k] = ex_to_bits((float)ex_uniform(), bf16);
        for (int k = 0; k < Kc; k++)
            wc[(size_t)m * ldc + k] = ex_to_bits((float)ex_uniform(), bf16);
    }
    /* E [batch, ke, N]: rows K..ke-1 zeros */
    uint16_t *eu = calloc((size_t)U * keu * N, 2), *ec = calloc((size_t)B * kec * N, 2);
    for (int u = 0; u < U; u++)
        for (size_t i = 0; i < (size_t)Ku * N; i++)
            eu[(size_t)u * keu * N + i] = ex_to_bits((float)ex_uniform(), bf16);
    for (int b = 0; b < B; b++)
        for (size_t i = 0; i < (size_t)Kc * N; i++)
            ec[(size_t)b * kec * N + i] = ex_to_bits((float)ex_uniform(), bf16);
    int *map = malloc((size_t)B * sizeof *map);
    for (int b = 0; b < B; b++)
        map[b] = (int)((int64_t)b * U / B);
    size_t out_n = (size_t)B * M * N;
    CUdeviceptr d_wu = ex_upload(wu, (size_t)M * ldu * 2), d_wc = ex_upload(wc, (size_t)M * ldc * 2),
                d_eu = ex_upload(eu, (size_t)U * keu * N * 2), d_ec = ex_upload(ec, (size_t)B * kec * N * 2),
                d_map = ex_upload(map, (size_t)B * 4), d_out;
    EX_CHECK(cuMemAlloc(&d_out, out_n * 2));
    EX_CHECK(cuMemsetD16(d_out, 0xFFFF, out_n)); /* NaN: unwritten outputs show */

    lce_call c = {{bf16 ? KEVO_TUNED_DTYPE_BF16 : KEVO_TUNED_DTYPE_F16,
                   B, M, N, Ku, Kc, U,
                   (const void *)(uintptr_t)d_wu, ldu,
                   (const void *)(uintptr_t)d_wc, ldc,
                   (const void *)(uintptr_t)d_eu,
                   (const void *)(uintptr_t)d_ec,
                   (const int *)(uintptr_t)d_map,
                   (void *)(uintptr_t)d_out,
                   keu, kec},
                  0};
    size_t ws = kevo_tuned_ikbo_lce_workspace_size(&c.a);
    if (ws)
        EX_CHECK(cuMemAlloc(&c.ws, ws));
    if (run_once(&c) != 0)
        return 1;
    char what[256];
    kevo_tuned_ikbo_lce_path(&c.a, what, sizeof what); /* after the call: it says which algorithms cuBLAS ran */
    printf("path: %s (%s E)\n", what, natural ? "natural" : "padded");
    EX_CHECK(cuCtxSynchronize());
    uint16_t *out = malloc(out_n * 2);
    EX_CHECK(cuMemcpyDtoH(out, d_out, out_n * 2));

    size_t nonfinite = 0;
    for (size_t i = 0; i < out_n; i++)
        nonfinite += !isfinite(ex_from_bits(out[i], bf16));
    double d2 = 0, r2 = 0, worst = 0, u = bf16 ? 1.0 / 256 : 1.0 / 2048;
    int bad = 0;
    for (int s = 0; s < 4096; s++) {
        int b = ex_below(B), m = ex_below(M), n = ex_below(N);
        double ref = 0;
        for (int k = 0; k < Kc; k++)
            ref += ex_from_bits(wc[(size_t)m * ldc + k], bf16) * ex_from_bits(ec[((size_t)b * kec + k) * N + n], bf16);
        for (int k = 0; k < Ku; k++)
            ref += ex_from_bits(wu[(size_t)m * ldu + k], bf16) *
                   ex_from_bits(eu[((size_t)map[b] * keu + k) * N + n], bf16);
        double got = ex_from_bits(out[((size_t)b * M + m) * N + n], bf16), d = fabs(got - ref);
        d2 += d * d;
        r2 += ref * ref;
        if (d > worst)
            worst = d;
        bad += !(d <= 4 * u * fabs(ref) + 4 * u * sqrt((double)(Ku + Kc) / 9.0));
    }
    double rel = sqrt(d2 / r2);
    int pass = nonfinite == 0 && bad == 0 && rel <= 2 * u;
    printf("B=%d M=%d N=%d Ku=%d Kc=%d U=%d %s: workspace %zu bytes, %zu non-finite outputs, sampled rel_err %.2e "
           "(bound %.1e), %d beyond the elementwise bound: %s\n",
           B, M, N, Ku, Kc, U, bf16 ? "bf16" : "fp16", ws, nonfinite, rel, 2 * u, bad, pass ? "ok" : "FAILED");
    if (pass && timing)
        printf("median %.4f ms over 50 calls (L2 flushed before each)\n", ex_median_ms(dev, run_once, &c));
    kevo_tuned_shutdown();
    return pass ? 0 : 1;
}
