/* example.c — an application of an exported kevo library (kevo_tuned) for
 * IKBO flash attention.
 *
 *   ikbo_fa_example Bc H Sq D Skv U [bf16] [time]
 *
 * Makes random Q, K, V in [-1, 1) and a shuffled cand_to_user where users
 * get uneven numbers of candidates (some none), poisons the output with NaN,
 * runs kevo_tuned_ikbo_fa once at scale 1/sqrt(D), checks that every output
 * was written and that 256 sampled query rows (all D values of each) match
 * a double-precision CPU reference within the op's bounds (norm-wise 2u,
 * elementwise 4u|ref| + 4u rms(ref): kernels/ikbo_fa/README.md), and with
 * "time" reports the median of 50 timed calls (CUDA events, L2 flushed
 * before each).  Exit status 0 only when the check passes. */
#include "example_util.h"
#include "kevo_tuned.h"

typedef struct fa_call {
    kevo_tuned_ikbo_fa_args a;
    CUdeviceptr ws;
} fa_call;

static int run_once(void *arg)
{
    fa_call *c = arg;
    kevo_tuned_status st = kevo_tuned_ikbo_fa(&c->a, (void *)(uintptr_t)c->ws, NULL);
    if (st != KEVO_TUNED_STATUS_SUCCESS)
        printf("kevo_tuned_ikbo_fa: %s\n", kevo_tuned_status_string(st));
    return st != KEVO_TUNED_STATUS_SUCCESS;
}

/* The reference of query row i of candidate c, head h, into ref[D]: scores
 * over user u's Skv keys, softmax with the row max subtracted, then V. */
static void reference(const uint16_t *q, const uint16_t *k, const uint16_t *v, int bf16, int H, int Sq, int D,
                      int Skv, int c, int u, int i, int h, double scale, double *p, double *ref)
{
    const uint16_t *qr = q + (((size_t)c * Sq + i) * H + h) * D;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < Skv; j++) {
        const uint16_t *kr = k + (((size_t)u * Skv + j) * H + h) * D;
        double s = 0;
        for (int d = 0; d < D; d++)
            s += ex_from_bits(qr[d], bf16) * ex_from_bits(kr[d], bf16);
        p[j] = s * scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j < Skv; j++)
        sum += p[j] = exp(p[j] - mx);
    for (int d = 0; d < D; d++)
        ref[d] = 0;
    for (int j = 0; j < Skv; j++) {
        const uint16_t *vr = v + (((size_t)u * Skv + j) * H + h) * D;
        for (int d = 0; d < D; d++)
            ref[d] += p[j] / sum * ex_from_bits(vr[d], bf16);
    }
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: %s Bc H Sq D Skv U [bf16] [time]\n", argv[0]);
        return 2;
    }
    int Bc = atoi(argv[1]), H = atoi(argv[2]), Sq = atoi(argv[3]), D = atoi(argv[4]), Skv = atoi(argv[5]),
        U = atoi(argv[6]);
    int bf16 = 0, timing = 0;
    for (int i = 7; i < argc; i++) {
        bf16 |= strcmp(argv[i], "bf16") == 0;
        timing |= strcmp(argv[i], "time") == 0;
    }
    if (Bc < 1 || H < 1 || Sq < 1 || Skv < 1 || U < 1 || U > Bc || (D != 64 && D != 128)) {
        fprintf(stderr, "sizes must be positive, U <= Bc and D 64 or 128\n");
        return 2;
    }
    CUdevice dev = ex_init();

    size_t q_n = (size_t)Bc * Sq * H * D, kv_n = (size_t)U * Skv * H * D;
    uint16_t *q = ex_random(q_n, bf16), *k = ex_random(kv_n, bf16), *v = ex_random(kv_n, bf16);
    /* uneven and shuffled: candidate c goes to user (c^2 mod U) of a
     * shuffled order, so some users take several, some none */
    int *perm = malloc((size_t)U * sizeof *perm), *map = malloc((size_t)Bc * sizeof *map);
    for (int u = 0; u < U; u++)
        perm[u] = u;
    for (int u = U - 1; u > 0; u--) {
        int j = ex_below(u + 1), t = perm[u];
        perm[u] = perm[j];
        perm[j] = t;
    }
    for (int c = 0; c < Bc; c++)
        map[c] = perm[(int)(((int64_t)c * c + ex_below(2)) % U)];
    CUdeviceptr d_q = ex_upload(q, q_n * 2), d_k = ex_upload(k, kv_n * 2), d_v = ex_upload(v, kv_n * 2),
                d_map = ex_upload(map, (size_t)Bc * 4), d_out;
    EX_CHECK(cuMemAlloc(&d_out, q_n * 2));
    EX_CHECK(cuMemsetD16(d_out, 0xFFFF, q_n)); /* NaN: unwritten outputs show */

    double scale = 1.0 / sqrt((double)D);
    fa_call c = {{bf16 ? KEVO_TUNED_DTYPE_BF16 : KEVO_TUNED_DTYPE_F16, Bc, H, Sq, D, Skv, U, (float)scale,
                  (const void *)(uintptr_t)d_q, (const void *)(uintptr_t)d_k, (const void *)(uintptr_t)d_v,
                  (const int *)(uintptr_t)d_map, (void *)(uintptr_t)d_out},
                 0};
    size_t ws = kevo_tuned_ikbo_fa_workspace_size(&c.a);
    if (ws)
        EX_CHECK(cuMemAlloc(&c.ws, ws));
    if (run_once(&c) != 0)
        return 1;
    EX_CHECK(cuCtxSynchronize());
    uint16_t *out = malloc(q_n * 2);
    EX_CHECK(cuMemcpyDtoH(out, d_out, q_n * 2));

    size_t nonfinite = 0;
    for (size_t i = 0; i < q_n; i++)
        nonfinite += !isfinite(ex_from_bits(out[i], bf16));
    enum { ROWS = 256 };
    double *p = malloc((size_t)Skv * sizeof *p), *ref = malloc((size_t)ROWS * D * sizeof *ref);
    double *got = malloc((size_t)ROWS * D * sizeof *got);
    for (int r = 0; r < ROWS; r++) {
        int cand = ex_below(Bc), i = ex_below(Sq), h = ex_below(H);
        reference(q, k, v, bf16, H, Sq, D, Skv, cand, map[cand], i, h, (double)(float)scale, p, ref + (size_t)r * D);
        for (int d = 0; d < D; d++)
            got[(size_t)r * D + d] = ex_from_bits(out[(((size_t)cand * Sq + i) * H + h) * D + d], bf16);
    }
    double d2 = 0, r2 = 0, u = bf16 ? 1.0 / 256 : 1.0 / 2048;
    for (size_t e = 0; e < (size_t)ROWS * D; e++) {
        d2 += (got[e] - ref[e]) * (got[e] - ref[e]);
        r2 += ref[e] * ref[e];
    }
    double rms = sqrt(r2 / ((double)ROWS * D)), rel = sqrt(d2 / r2);
    int bad = 0;
    for (size_t e = 0; e < (size_t)ROWS * D; e++)
        bad += !(fabs(got[e] - ref[e]) <= 4 * u * fabs(ref[e]) + 4 * u * rms);
    int pass = nonfinite == 0 && bad == 0 && rel <= 2 * u;
    printf("Bc=%d H=%d Sq=%d D=%d Skv=%d U=%d %s: workspace %zu bytes, %zu non-finite outputs, sampled rel_err %.2e "
           "(bound %.1e), %d beyond the elementwise bound: %s\n",
           Bc, H, Sq, D, Skv, U, bf16 ? "bf16" : "fp16", ws, nonfinite, rel, 2 * u, bad, pass ? "ok" : "FAILED");
    if (pass && timing) {
        double ms = ex_median_ms(dev, run_once, &c);
        printf("median %.4f ms over 50 calls (L2 flushed before each), %.1f TFLOP/s\n", ms,
               4.0 * Bc * H * Sq * D * (double)Skv / (ms * 1e9));
    }
    kevo_tuned_shutdown();
    return pass ? 0 : 1;
}
