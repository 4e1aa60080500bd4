/* fake_driver_lce.c — an exported ikbo_lce library's vendor path on the
 * CPU: the generated source (KEVO_LIB_SRC) built with a fake CUDA driver
 * (here) and run against a fake cuBLASLt (fake_cublaslt.c, loaded by the
 * library with dlopen: build with -DKEVO_TUNED_CUBLASLT_NAMES naming it).
 * Both append what they are asked to $KEVO_FAKE_LT_LOG, one line a call,
 * so the order of GEMMs and launches shows.  The library comes from
 * tests/unit/test_export.c's vendor fixture: run 2 (bf16, B=1024 M=433
 * N=256 Ku=1178 Kc=866 U=15) lost to its vendor peer, whose config stores
 * algorithms of bytes 0x10.. (user GEMM) and 0xa0.. (candidate GEMM) for
 * cuBLASLt 130100 with 32 MiB of workspace; run 1 (fp16) has its kernel.
 *
 *   fake_lce beta1        the beta = 1 form: workspace, refusals, two GEMMs
 *                         with the stored algorithms around the gather, the
 *                         thread's cache, natural and misaligned E (the
 *                         heuristic), the kernel shape, shutdown
 *   fake_lce decomposed   the decomposed form: two GEMMs, then the
 *                         broadcast-add
 *   fake_lce version      cuBLASLt of another version: the heuristic
 *   fake_lce unavailable  no cuBLASLt to load: VENDOR_UNAVAILABLE, nothing
 *                         launched; the kernel shape still runs
 * Prints "ok" and exits 0, or names the first failed check and exits 1.
 * Pointers are made-up addresses: nothing here dereferences device memory. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include KEVO_LIB_SRC

#define GATHER ((CUkernel)(uintptr_t)0x61)
#define BCAST ((CUkernel)(uintptr_t)0x62)
#define KERNEL ((CUkernel)(uintptr_t)0x70)

/* One line appended to $KEVO_FAKE_LT_LOG (as fake_cublaslt.c does). */
static void f_log(const char *fmt, ...)
{
    const char *path = getenv("KEVO_FAKE_LT_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *d)
{
    *d = 0;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *p, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    *p = a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
         : a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
         : a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT     ? 132
                                                             : 232448;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *l, const void *c, CUjit_option *o, void **ov, unsigned no,
                                   CUlibraryOption *lo, void **lov, unsigned nlo)
{
    (void)c, (void)o, (void)ov, (void)no, (void)lo, (void)lov, (void)nlo;
    *l = (CUlibrary)(uintptr_t)0x10;
    f_log("load");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *k, CUlibrary l, const char *n)
{
    (void)l;
    *k = strcmp(n, "kv_gather_user") == 0 ? GATHER : strcmp(n, "kv_bcast_add") == 0 ? BCAST : KERNEL;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary l)
{
    (void)l;
    f_log("unload");
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d)
{
    (void)a, (void)v, (void)k, (void)d;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *t, CUtensorMapDataType d, cuuint32_t r, void *g,
                                        const cuuint64_t *gd, const cuuint64_t *gs, const cuuint32_t *b,
                                        const cuuint32_t *e, CUtensorMapInterleave i, CUtensorMapSwizzle s,
                                        CUtensorMapL2promotion l, CUtensorMapFloatOOBfill f)
{
    (void)d, (void)r, (void)g, (void)gd, (void)gs, (void)b, (void)e, (void)i, (void)s, (void)l, (void)f;
    memset(t, 0x5a, sizeof *t);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                unsigned bz, unsigned smem, CUstream st, void **p, void **e)
{
    (void)e;
    CUkernel k = (CUkernel)fn;
    if (k == GATHER)
        f_log("launch kv_gather_user grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p out=%p ur=%p map=%p B=%d mn=%llu",
              gx, gy, gz, bx, by, bz, smem, (void *)st, *(void **)p[0], *(void **)p[1], *(void **)p[2], *(int *)p[3],
              *(unsigned long long *)p[4]);
    else if (k == BCAST)
        f_log("launch kv_bcast_add grid=%u,%u,%u block=%u,%u,%u smem=%u stream=%p out=%p ur=%p map=%p B=%d M=%d N=%d",
              gx, gy, gz, bx, by, bz, smem, (void *)st, *(void **)p[0], *(void **)p[1], *(void **)p[2], *(int *)p[3],
              *(int *)p[4], *(int *)p[5]);
    else
        f_log("launch kernel grid=%u,%u,%u block=%u", gx, gy, gz, bx);
    return CUDA_SUCCESS;
}

#define EXPECT(cond)                                                                                                   \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            printf("failed: %s (line %d)\n", #cond, __LINE__);                                                         \
            f_dump();                                                                                                  \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* The log's lines (re-read by f_read), for the checks. */
static char *f_text;
static char *f_line[256];
static int f_n;

static void f_read(void)
{
    free(f_text);
    f_text = NULL;
    f_n = 0;
    const char *path = getenv("KEVO_FAKE_LT_LOG");
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    f_text = calloc((size_t)len + 1, 1);
    if (f_text && fread(f_text, 1, (size_t)len, f) == (size_t)len)
        for (char *save = NULL, *l = strtok_r(f_text, "\n", &save); l && f_n < 256; l = strtok_r(NULL, "\n", &save))
            f_line[f_n++] = l;
    fclose(f);
}

static void f_dump(void)
{
    f_read();
    for (int i = 0; i < f_n; i++)
        printf("  log %d: %.300s\n", i, f_line[i]);
}

/* Whether log line i starts with `what` and holds each of the n strings of has[]. */
static int f_is(int i, const char *what, const char *const *has, int n)
{
    if (i >= f_n || strncmp(f_line[i], what, strlen(what)) != 0)
        return 0;
    for (int j = 0; j < n; j++)
        if (!strstr(f_line[i], has[j])) {
            printf("log %d lacks '%s'\n", i, has[j]);
            return 0;
        }
    return 1;
}

/* An algorithm's stored bytes (first, first + 1, ...) as hex. */
static void f_hex(int first, char out[129])
{
    for (int i = 0; i < 64; i++)
        snprintf(out + 2 * i, 3, "%02x", (first + i) & 0xff);
}

/* made-up device addresses, 256-byte aligned */
#define DEV(x) ((void *)(uintptr_t)(0x10000000ull * (x)))

static kevo_tuned_ikbo_lce_args f_args(void)
{
    kevo_tuned_ikbo_lce_args a = {KEVO_TUNED_DTYPE_BF16, 1024, 433, 256, 1178, 866, 15,
                                  DEV(1), 1184, DEV(2), 872, DEV(3), DEV(4), (const int *)DEV(5), DEV(6), 1184, 872};
    return a;
}

#define WS DEV(7)
#define UR_BYTES 3325440ull /* 15 * 433 * 256 * 2, a multiple of 256 */
#define LT_WS 33554432ull

/* The user and candidate GEMMs' matmul lines of a call at K ku, kc (batch
 * strides of E as stored: ske_u, ske_c rows), beta of the second, with
 * algorithms user_algo and cand_algo. */
static int f_gemm_lines(int i0, int i1, long long ku, long long kc, long long ske_u, long long ske_c, const char *beta,
                        const char *user_algo, const char *cand_algo, const kevo_tuned_ikbo_lce_args *a)
{
    char k[64], sa[64], ldb[64], pa[64], pb[64], pd[64], pws[64], algo[160], k2[64], sa2[64], ldb2[64], pa2[64],
        pb2[64], pd2[64], algo2[160], types[64];
    snprintf(types, sizeof types, "type=%d,%d,%d compute=%d scale=%d trans=0,0", CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
             CUBLAS_COMPUTE_32F, CUDA_R_32F);
    snprintf(k, sizeof k, "m=256 n=433 k=%lld batch=15,15,15 ", ku);
    snprintf(sa, sizeof sa, "sa=%lld sb=0 sd=110848 ", ske_u * 256);
    snprintf(ldb, sizeof ldb, "lda=256 ldb=%d ldd=256 ", a->ldw_user);
    snprintf(pa, sizeof pa, "a=%p ", a->e_user);
    snprintf(pb, sizeof pb, "b=%p ", a->w_user);
    snprintf(pd, sizeof pd, "d=%p c_is_d=1 ", WS);
    snprintf(pws, sizeof pws, "ws=%p wsb=%llu ", (void *)((char *)WS + UR_BYTES), LT_WS);
    snprintf(algo, sizeof algo, "algo=%s", user_algo);
    const char *user[] = {k, sa, ldb, "beta=0 ", "alpha=1 ", types, pa, pb, pd, pws, algo};
    snprintf(k2, sizeof k2, "m=256 n=433 k=%lld batch=1024,1024,1024 ", kc);
    snprintf(sa2, sizeof sa2, "sa=%lld sb=0 sd=110848 ", ske_c * 256);
    snprintf(ldb2, sizeof ldb2, "lda=256 ldb=%d ldd=256 ", a->ldw_cand);
    snprintf(pa2, sizeof pa2, "a=%p ", a->e_cand);
    snprintf(pb2, sizeof pb2, "b=%p ", a->w_cand);
    snprintf(pd2, sizeof pd2, "c=%p d=%p c_is_d=1 ", a->out, a->out);
    snprintf(algo2, sizeof algo2, "algo=%s", cand_algo);
    const char *cand[] = {k2, sa2, ldb2, beta, "alpha=1 ", types, pa2, pb2, pd2, pws, algo2};
    return f_is(i0, "matmul ", user, 11) && f_is(i1, "matmul ", cand, 11);
}

/* The beta = 1 form, with the stored algorithms and without. */
static int f_beta1(void)
{
    char user[129], cand[129], ee[129];
    f_hex(0x10, user);
    f_hex(0xa0, cand);
    memset(ee, 'e', 128);
    ee[128] = '\0';
    kevo_tuned_ikbo_lce_args a = f_args();
    EXPECT(kevo_tuned_ikbo_lce_workspace_size(&a) == UR_BYTES + LT_WS);
    /* refusals launch nothing */
    EXPECT(kevo_tuned_ikbo_lce(&a, NULL, NULL) == KEVO_TUNED_STATUS_NO_WORKSPACE);
    EXPECT(kevo_tuned_ikbo_lce(&a, (char *)WS + 16, NULL) == KEVO_TUNED_STATUS_INVALID_VALUE);
    kevo_tuned_ikbo_lce_args bad = a;
    bad.ke_user = 1180; /* neither K nor K rounded up to 8 */
    EXPECT(kevo_tuned_ikbo_lce(&bad, WS, NULL) == KEVO_TUNED_STATUS_INVALID_VALUE);
    bad = a;
    bad.ldw_cand = 870; /* below the padded K */
    EXPECT(kevo_tuned_ikbo_lce(&bad, WS, NULL) == KEVO_TUNED_STATUS_INVALID_VALUE);
    f_read();
    EXPECT(f_n == 0);
    char what[256];
    EXPECT(kevo_tuned_ikbo_lce_path(&a, what, sizeof what) == KEVO_TUNED_IKBO_LCE_PATH_VENDOR);
    EXPECT(strstr(what, "beta1") && strstr(what, "first call"));

    /* padded E: the stored algorithms, the gather between the GEMMs */
    CUstream stream = (CUstream)(uintptr_t)0x77;
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    char chk_u[160], chk_c[160], gather[256];
    snprintf(chk_u, sizeof chk_u, "algo=%s", user);
    snprintf(chk_c, sizeof chk_c, "algo=%s", cand);
    snprintf(gather, sizeof gather, "grid=4224,1,1 block=256,1,1 smem=0 stream=%p out=%p ur=%p map=%p B=1024 mn=110848",
             (void *)stream, a.out, WS, (const void *)a.cand_to_user);
    const char *g1[] = {gather}, *cu[] = {chk_u}, *cc[] = {chk_c};
    EXPECT(f_n == 7);
    EXPECT(f_is(0, "create", NULL, 0));
    EXPECT(f_is(1, "load", NULL, 0)); /* the vendor module */
    EXPECT(f_is(2, "check ", cu, 1) && f_is(3, "check ", cc, 1));
    EXPECT(f_is(5, "launch kv_gather_user ", g1, 1));
    EXPECT(f_gemm_lines(4, 6, 1184, 872, 1184, 872, "beta=1 ", user, cand, &a));
    EXPECT(kevo_tuned_ikbo_lce_path(&a, what, sizeof what) == KEVO_TUNED_IKBO_LCE_PATH_VENDOR);
    EXPECT(strstr(what, "the stored cuBLASLt algorithms"));
    /* again: described once, run at once */
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    EXPECT(f_n == 10 && f_is(7, "matmul ", NULL, 0) && f_is(8, "launch kv_gather_user", NULL, 0) &&
           f_is(9, "matmul ", NULL, 0));

    /* natural E: K as given, the heuristic's algorithm (the stored ones were chosen at K padded) */
    kevo_tuned_ikbo_lce_args nat = a;
    nat.ke_user = nat.ke_cand = 0;
    EXPECT(kevo_tuned_ikbo_lce_workspace_size(&nat) == UR_BYTES + LT_WS);
    EXPECT(kevo_tuned_ikbo_lce(&nat, WS, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    const char *h256[] = {"ws=33554432 align=256,256,256,256"};
    EXPECT(f_n == 15 && f_is(10, "heuristic ", h256, 1) && f_is(11, "heuristic ", h256, 1));
    EXPECT(f_is(13, "launch kv_gather_user", NULL, 0));
    EXPECT(f_gemm_lines(12, 14, 1178, 866, 1178, 866, "beta=1 ", ee, ee, &nat));
    EXPECT(kevo_tuned_ikbo_lce_path(&nat, what, sizeof what) == KEVO_TUNED_IKBO_LCE_PATH_VENDOR);
    EXPECT(strstr(what, "heuristic") && strstr(what, "K 1178"));

    /* E_user 16-byte aligned only: the heuristic for the user GEMM, told so; the stored one for the other */
    kevo_tuned_ikbo_lce_args mis = a;
    mis.e_user = (const char *)a.e_user + 16;
    EXPECT(kevo_tuned_ikbo_lce(&mis, WS, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    const char *h16[] = {"align=16,16,16,16"};
    EXPECT(f_n == 20 && f_is(15, "heuristic ", h16, 1) && f_is(16, "check ", cc, 1));
    EXPECT(f_is(18, "launch kv_gather_user", NULL, 0));
    EXPECT(f_gemm_lines(17, 19, 1184, 872, 1184, 872, "beta=1 ", ee, cand, &mis));

    /* out not 16-byte aligned: refused, nothing launched */
    kevo_tuned_ikbo_lce_args odd = a;
    odd.out = (char *)a.out + 2;
    EXPECT(kevo_tuned_ikbo_lce(&odd, WS, stream) == KEVO_TUNED_STATUS_UNSUPPORTED);
    f_read();
    EXPECT(f_n == 20);

    /* the fp16 shape, where kevo's kernel won: the kernel, no GEMM; padded E reads as K rounded up */
    kevo_tuned_ikbo_lce_args k16 = a;
    k16.dtype = KEVO_TUNED_DTYPE_F16;
    EXPECT(kevo_tuned_ikbo_lce_path(&k16, what, sizeof what) == KEVO_TUNED_IKBO_LCE_PATH_KERNEL);
    size_t kws = kevo_tuned_ikbo_lce_workspace_size(&k16);
    EXPECT(kevo_tuned_ikbo_lce(&k16, kws ? WS : NULL, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    EXPECT(f_n > 20);
    for (int i = 20; i < f_n; i++)
        EXPECT(strncmp(f_line[i], "launch kernel", 13) == 0 || strcmp(f_line[i], "load") == 0);
    EXPECT(x_cache.kargs.Ku == 1184 && x_cache.kargs.Kc == 872); /* the padded problem */
    int n = f_n;

    /* shutdown: handles destroyed, modules unloaded; the next call describes its GEMMs again */
    kevo_tuned_shutdown();
    f_read();
    int destroyed = 0;
    for (int i = n; i < f_n; i++)
        destroyed += strcmp(f_line[i], "destroy") == 0;
    EXPECT(destroyed == 1);
    n = f_n;
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, stream) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    EXPECT(f_n == n + 7 && f_is(n, "create", NULL, 0) && f_is(n + 2, "check ", cu, 1));
    return 0;
}

/* The decomposed form: both GEMMs (beta 0), then the broadcast-add. */
static int f_decomposed(void)
{
    char user[129], cand[129], bcast[256];
    f_hex(0x10, user);
    f_hex(0xa0, cand);
    kevo_tuned_ikbo_lce_args a = f_args();
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    snprintf(bcast, sizeof bcast, "grid=4224,1,1 block=256,1,1 smem=0 stream=(nil) out=%p ur=%p map=%p B=1024 M=433 N=256",
             a.out, WS, (const void *)a.cand_to_user);
    const char *b1[] = {bcast};
    EXPECT(f_n == 7 && f_is(0, "create", NULL, 0) && f_is(2, "check ", NULL, 0) && f_is(3, "check ", NULL, 0));
    EXPECT(f_gemm_lines(4, 5, 1184, 872, 1184, 872, "beta=0 ", user, cand, &a));
    EXPECT(f_is(6, "launch kv_bcast_add ", b1, 1));
    return 0;
}

/* cuBLASLt of another version than the algorithms': the heuristic's. */
static int f_version(void)
{
    kevo_tuned_ikbo_lce_args a = f_args();
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    EXPECT(f_n == 7 && f_is(2, "heuristic ", NULL, 0) && f_is(3, "heuristic ", NULL, 0));
    char what[256];
    EXPECT(kevo_tuned_ikbo_lce_path(&a, what, sizeof what) == KEVO_TUNED_IKBO_LCE_PATH_VENDOR);
    EXPECT(strstr(what, "cuBLASLt 120000, the algorithms were chosen with 130100"));
    return 0;
}

/* No cuBLASLt: VENDOR_UNAVAILABLE, nothing launched; kernels still run. */
static int f_unavailable(void)
{
    kevo_tuned_ikbo_lce_args a = f_args();
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, NULL) == KEVO_TUNED_STATUS_VENDOR_UNAVAILABLE);
    EXPECT(kevo_tuned_ikbo_lce(&a, WS, NULL) == KEVO_TUNED_STATUS_VENDOR_UNAVAILABLE);
    f_read();
    EXPECT(f_n == 0);
    EXPECT(strstr(kevo_tuned_status_string(KEVO_TUNED_STATUS_VENDOR_UNAVAILABLE), "cuBLASLt"));
    EXPECT(strstr(x_lt.why, "libkevo_fake_cublaslt.so"));
    a.dtype = KEVO_TUNED_DTYPE_F16;
    size_t kws = kevo_tuned_ikbo_lce_workspace_size(&a);
    EXPECT(kevo_tuned_ikbo_lce(&a, kws ? WS : NULL, NULL) == KEVO_TUNED_STATUS_SUCCESS);
    f_read();
    EXPECT(f_n > 0 && strncmp(f_line[f_n - 1], "launch kernel", 13) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rc = strcmp(mode, "beta1") == 0        ? f_beta1()
             : strcmp(mode, "decomposed") == 0 ? f_decomposed()
             : strcmp(mode, "version") == 0    ? f_version()
             : strcmp(mode, "unavailable") == 0 ? f_unavailable()
                                                : (printf("unknown mode '%s'\n", mode), 2);
    if (rc == 0)
        printf("ok\n");
    free(f_text);
    return rc;
}
