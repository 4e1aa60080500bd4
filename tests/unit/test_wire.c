/* test_wire.c — the MPI ranks' messages (evaluator/wire.h), no MPI needed:
 * every kind of frame round-trips; a job on the receiving side has its own
 * include paths and the sender's other options; and a frame that is cut,
 * flipped, of another version or lying about its lengths is refused with a
 * message, never read past its end (the sanitized build checks that).
 * Also the GPU worker's re-timing messages over its pipes
 * (evaluator/gpu_proto.h): a re-timing with a peer round-trips, and a
 * request or an answer out of range is refused with a message. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "evaluator/gpu_proto.h"
#include "evaluator/wire.h"
#include "testutil.h"
#include "util/util.h"

static const char src[] = "extern \"C\" __global__ void k(float *o) { o[threadIdx.x] = 1.0f; }\n";

/* A job as rank 0 builds it. */
static void make_job(kevo_compile_job *j)
{
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(j, "k.cu", src, "sm_90a", &err), KEVO_OK);
    kevo_compile_key(j);
}

/* A finished job as a worker has it: a cubin with a NUL and high bytes inside. */
static void make_result(kevo_compile_job *j)
{
    memset(j, 0, sizeof *j);
    static const unsigned char cubin[] = {0x7f, 'E', 'L', 'F', 0, 1, 2, 0xff, 0x80, 0};
    j->fail = KEVO_FAIL_NONE;
    j->log = kv_strdup("ptxas info    : Used 10 registers\n");
    j->cubin = malloc(sizeof cubin);
    memcpy(j->cubin, cubin, sizeof cubin);
    j->cubin_size = sizeof cubin;
    j->seconds = 0.25;
    j->regs = 10;
    j->spill_bytes = 0;
    j->smem_static = 1024;
    j->stack_bytes = 8;
    j->pch = true;
}

static void test_job_roundtrip(void **state)
{
    (void)state;
    kevo_compile_job j;
    make_job(&j);
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    assert_int_equal(kevo_wire_job_pack(&b, 42, &j, 300, &err), KEVO_OK);
    kevo_wire_type t;
    assert_int_equal(kevo_wire_type_of(b.data, b.len, &t, &err), KEVO_OK);
    assert_int_equal(t, KEVO_WIRE_JOB);
    kevo_wire_job w;
    assert_int_equal(kevo_wire_job_unpack(b.data, b.len, &w, &err), KEVO_OK);
    assert_int_equal(w.id, 42);
    assert_true(w.timeout_s == 300);
    assert_string_equal(w.job.name, "k.cu");
    assert_string_equal(w.job.source, src);
    assert_string_equal(w.job.arch, "sm_90a");
    /* the same options, so the same cache key, whatever the include paths */
    assert_int_equal(w.job.nopts, j.nopts);
    for (int i = 0; i < j.nopts; i++)
        assert_string_equal(w.job.opts[i], j.opts[i]);
    kevo_compile_key(&w.job);
    assert_string_equal(w.job.key, j.key);
    kevo_wire_job_release(&w);
    /* another machine's include paths never travel */
    snprintf(j.opts[j.nopts - 1], sizeof j.opts[0], "-I/home/someone/cuda/include");
    b.len = 0;
    assert_int_equal(kevo_wire_job_pack(&b, 43, &j, 300, &err), KEVO_OK);
    assert_null(memmem(b.data, b.len, "/home/someone", 13));
    kv_buf_release(&b);
}

static void test_result_roundtrip(void **state)
{
    (void)state;
    kevo_compile_job r, got;
    make_result(&r);
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    assert_int_equal(kevo_wire_result_pack(&b, 7, &r, &err), KEVO_OK);
    memset(&got, 0, sizeof got);
    int64_t id = 0;
    assert_int_equal(kevo_wire_result_unpack(b.data, b.len, &id, &got, &err), KEVO_OK);
    assert_int_equal(id, 7);
    assert_int_equal(got.fail, KEVO_FAIL_NONE);
    assert_string_equal(got.log, r.log);
    assert_int_equal(got.cubin_size, r.cubin_size);
    assert_memory_equal(got.cubin, r.cubin, r.cubin_size);
    assert_true(got.seconds == 0.25);
    assert_int_equal(got.regs, 10);
    assert_int_equal(got.spill_bytes, 0);
    assert_int_equal(got.smem_static, 1024);
    assert_int_equal(got.stack_bytes, 8);
    assert_true(got.pch);
    kevo_compile_job_release(&got);
    /* a failed compile: no cubin, unknown figures, no time */
    kevo_compile_job_release(&r);
    memset(&r, 0, sizeof r);
    r.fail = KEVO_FAIL_COMPILE_CRASH;
    r.log = kv_strdup("compiler process died with signal 11 (Segmentation fault)");
    r.regs = r.spill_bytes = r.smem_static = r.stack_bytes = -1;
    r.seconds = NAN;
    b.len = 0;
    assert_int_equal(kevo_wire_result_pack(&b, 8, &r, &err), KEVO_OK);
    memset(&got, 0, sizeof got);
    assert_int_equal(kevo_wire_result_unpack(b.data, b.len, &id, &got, &err), KEVO_OK);
    assert_int_equal(got.fail, KEVO_FAIL_COMPILE_CRASH);
    assert_false(got.pch);
    assert_null(got.cubin);
    assert_int_equal(got.regs, -1);
    assert_true(isnan(got.seconds));
    assert_string_equal(got.log, r.log);
    kevo_compile_job_release(&got);
    kevo_compile_job_release(&r);
    kv_buf_release(&b);
}

static void test_hello_and_control(void **state)
{
    (void)state;
    kevo_wire_hello h = {.rank = 3, .pid = 1234, .slots = 16}, g;
    snprintf(h.host, sizeof h.host, "node7");
    snprintf(h.nvrtc, sizeof h.nvrtc, "13.0");
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    assert_int_equal(kevo_wire_hello_pack(&b, &h, &err), KEVO_OK);
    assert_int_equal(kevo_wire_hello_unpack(b.data, b.len, &g, &err), KEVO_OK);
    assert_int_equal(g.rank, 3);
    assert_int_equal(g.pid, 1234);
    assert_int_equal(g.slots, 16);
    assert_string_equal(g.host, "node7");
    assert_string_equal(g.nvrtc, "13.0");
    /* a hello is not a job */
    kevo_wire_job w;
    assert_int_equal(kevo_wire_job_unpack(b.data, b.len, &w, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'hello' message where a 'job' one"));
    for (int t = KEVO_WIRE_ALIVE; t <= KEVO_WIRE_FIN; t++) {
        for (int fin = 0; fin < 2; fin++) {
            b.len = 0;
            assert_int_equal(kevo_wire_control_pack(&b, (kevo_wire_type)t, fin, &err), KEVO_OK);
            bool f = !fin;
            assert_int_equal(kevo_wire_control_unpack(b.data, b.len, (kevo_wire_type)t, &f, &err), KEVO_OK);
            assert_int_equal(f, t == KEVO_WIRE_FIN && fin);
        }
    }
    assert_int_equal(kevo_wire_control_pack(&b, KEVO_WIRE_JOB, false, &err), KEVO_ERR_ARG);
    kv_buf_release(&b);
}

/* Build a frame by hand: version, header text, then data bytes. */
static void frame(kv_buf *b, uint32_t version, const char *hdr, const void *data, size_t n)
{
    b->len = 0;
    unsigned char pre[12] = {'K', 'E', 'V', 'O'};
    uint32_t jl = (uint32_t)strlen(hdr);
    for (int i = 0; i < 4; i++) {
        pre[4 + i] = (unsigned char)(version >> (8 * i));
        pre[8 + i] = (unsigned char)(jl >> (8 * i));
    }
    kv_buf_append(b, pre, sizeof pre);
    kv_buf_append(b, hdr, jl);
    if (n)
        kv_buf_append(b, data, n);
}

static void expect_refused(const kv_buf *b, kevo_status want, const char *says)
{
    kevo_wire_job w;
    kevo_err err;
    kevo_err_clear(&err);
    kevo_status st = kevo_wire_job_unpack(b->data, b->len, &w, &err);
    if (st != want || !strstr(err.msg, says))
        fprintf(stderr, "got status %d, message '%s'; wanted %d and '%s'\n", st, err.msg, want, says);
    assert_int_equal(st, want);
    assert_non_null(strstr(err.msg, says));
}

static void test_bad_frames(void **state)
{
    (void)state;
    kv_buf b;
    kv_buf_init(&b);
    const char ok[] = "{\"type\":\"job\",\"id\":1,\"name\":\"k.cu\",\"arch\":\"sm_90a\",\"timeout_s\":300,"
                      "\"source_len\":3,\"opts\":[\"-std=c++17\"]}";
    frame(&b, KEVO_WIRE_VERSION, ok, "abc", 3);
    kevo_wire_job w;
    kevo_err err;
    assert_int_equal(kevo_wire_job_unpack(b.data, b.len, &w, &err), KEVO_OK);
    assert_string_equal(w.source, "abc");
    kevo_wire_job_release(&w);

    char says[64];
    frame(&b, KEVO_WIRE_VERSION + 1, ok, "abc", 3);
    snprintf(says, sizeof says, "protocol version %d (this kevo speaks %d)", KEVO_WIRE_VERSION + 1, KEVO_WIRE_VERSION);
    expect_refused(&b, KEVO_ERR_UNSUPPORTED, says);
    frame(&b, 1, ok, "abc", 3); /* a rank of a kevo before GPU evaluation over MPI */
    snprintf(says, sizeof says, "protocol version 1 (this kevo speaks %d)", KEVO_WIRE_VERSION);
    expect_refused(&b, KEVO_ERR_UNSUPPORTED, says);
    frame(&b, 3, ok, "abc", 3); /* one before a hello said who its process is */
    snprintf(says, sizeof says, "protocol version 3 (this kevo speaks %d)", KEVO_WIRE_VERSION);
    expect_refused(&b, KEVO_ERR_UNSUPPORTED, says);
    frame(&b, KEVO_WIRE_VERSION, ok, "ab", 2);
    expect_refused(&b, KEVO_ERR_PARSE, "names 3 bytes of data but carries 2");
    frame(&b, KEVO_WIRE_VERSION, ok, "abcd", 4);
    expect_refused(&b, KEVO_ERR_PARSE, "names 3 bytes of data but carries 4");
    frame(&b, KEVO_WIRE_VERSION, ok, "a\0c", 3);
    expect_refused(&b, KEVO_ERR_PARSE, "NUL");
    frame(&b, KEVO_WIRE_VERSION, "[1,2]", NULL, 0);
    expect_refused(&b, KEVO_ERR_PARSE, "not a JSON object");
    frame(&b, KEVO_WIRE_VERSION, "{\"type\":\"gossip\"}", NULL, 0);
    expect_refused(&b, KEVO_ERR_PARSE, "no known type");
    static const char *const bad[][2] = {
        {"{\"type\":\"job\",\"id\":-1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,\"opts\":[]}",
         "'id'"},
        {"{\"type\":\"job\",\"id\":1.5,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,\"opts\":[]}",
         "'id'"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":0,\"source_len\":0,\"opts\":[]}",
         "'timeout_s'"},
        {"{\"type\":\"job\",\"id\":1,\"name\":7,\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,\"opts\":[]}",
         "'name'"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"gfx90a\",\"timeout_s\":3,\"source_len\":0,\"opts\":[]}",
         "arch 'gfx90a'"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":1e30,\"opts\":[]}",
         "'source_len'"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,"
         "\"opts\":[\"-I/etc\"]}",
         "without an include path"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,\"opts\":[3]}",
         "compile option"},
        {"{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0}", "'opts'"},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        frame(&b, KEVO_WIRE_VERSION, bad[i][0], NULL, 0);
        expect_refused(&b, KEVO_ERR_PARSE, bad[i][1]);
    }
    /* too many options for the job's table */
    kv_buf h;
    kv_buf_init(&h);
    kv_buf_puts(&h, "{\"type\":\"job\",\"id\":1,\"name\":\"k\",\"arch\":\"sm_90a\",\"timeout_s\":3,\"source_len\":0,"
                    "\"opts\":[");
    for (int i = 0; i < KEVO_COMPILE_MAX_OPTS; i++)
        kv_buf_printf(&h, "%s\"-DX%d\"", i ? "," : "", i);
    kv_buf_puts(&h, "]}");
    frame(&b, KEVO_WIRE_VERSION, h.data, NULL, 0);
    expect_refused(&b, KEVO_ERR_PARSE, "more than");
    kv_buf_release(&h);
    /* a header longer than the frame, a frame too short for its prefix */
    frame(&b, KEVO_WIRE_VERSION, ok, "abc", 3);
    b.data[8] = (char)0xff;
    expect_refused(&b, KEVO_ERR_PARSE, "header of");
    expect_refused(&(kv_buf){.data = "KEVO", .len = 4}, KEVO_ERR_PARSE, "not a kevo message");

    /* results: only a compile's four outcomes, a success carries a cubin */
    kevo_compile_job j;
    memset(&j, 0, sizeof j);
    int64_t id;
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"result\",\"id\":1,\"fail\":\"wrong_result\",\"seconds\":1,\"regs\":1,\"spill_bytes\":0,"
          "\"smem_static\":0,\"stack_bytes\":0,\"log_len\":0,\"cubin_len\":0,\"pch\":false}",
          NULL, 0);
    assert_int_equal(kevo_wire_result_unpack(b.data, b.len, &id, &j, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "wrong_result"));
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"result\",\"id\":1,\"fail\":\"none\",\"seconds\":1,\"regs\":1,\"spill_bytes\":0,"
          "\"smem_static\":0,\"stack_bytes\":0,\"log_len\":0,\"cubin_len\":0,\"pch\":false}",
          NULL, 0);
    assert_int_equal(kevo_wire_result_unpack(b.data, b.len, &id, &j, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "without a cubin"));
    /* whether it used a precompiled header: true or false, nothing else */
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"result\",\"id\":1,\"fail\":\"compile_error\",\"seconds\":1,\"regs\":-1,\"spill_bytes\":-1,"
          "\"smem_static\":-1,\"stack_bytes\":-1,\"log_len\":0,\"cubin_len\":0,\"pch\":1}",
          NULL, 0);
    assert_int_equal(kevo_wire_result_unpack(b.data, b.len, &id, &j, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'pch'"));
    assert_null(j.log);
    assert_null(j.cubin);
    kv_buf_release(&b);
}

/* A prepare carries a prelude as a job does its source, with the receiver's
 * include paths, so the receiver's header has the key its jobs will look
 * for; it is neither a job nor read as one. */
static void test_prepare_roundtrip(void **state)
{
    (void)state;
    static const char prelude[] = "#include <cuda_fp16.h>\n#include <cuda/ptx>\n";
    kevo_compile_job p, j;
    kevo_err err;
    assert_int_equal(kevo_compile_job_init(&p, "lce_ws.cu", prelude, "sm_90a", &err), KEVO_OK);
    make_job(&j);
    kv_buf b;
    kv_buf_init(&b);
    assert_int_equal(kevo_wire_prepare_pack(&b, &p, &err), KEVO_OK);
    kevo_wire_type t;
    assert_int_equal(kevo_wire_type_of(b.data, b.len, &t, &err), KEVO_OK);
    assert_int_equal(t, KEVO_WIRE_PREPARE);
    assert_string_equal(kevo_wire_type_name(t), "prepare");
    kevo_wire_job w;
    assert_int_equal(kevo_wire_prepare_unpack(b.data, b.len, &w, &err), KEVO_OK);
    assert_string_equal(w.job.name, "lce_ws.cu");
    assert_string_equal(w.job.source, prelude);
    assert_int_equal(w.id, 0);
    assert_int_equal(w.job.nopts, p.nopts);
    for (int i = 0; i < p.nopts; i++)
        assert_string_equal(w.job.opts[i], p.opts[i]);
    kevo_wire_job_release(&w);
    assert_int_equal(kevo_wire_job_unpack(b.data, b.len, &w, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'prepare' message where a 'job' one"));
    b.len = 0;
    assert_int_equal(kevo_wire_job_pack(&b, 5, &j, 60, &err), KEVO_OK);
    assert_int_equal(kevo_wire_prepare_unpack(b.data, b.len, &w, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "'job' message where a 'prepare' one"));
    /* checked like a job: an include path or another arch is refused */
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"prepare\",\"name\":\"k\",\"arch\":\"gfx90a\",\"source_len\":0,\"opts\":[]}", NULL, 0);
    assert_int_equal(kevo_wire_prepare_unpack(b.data, b.len, &w, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "a prepare message for arch 'gfx90a'"));
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"prepare\",\"name\":\"k\",\"arch\":\"sm_90a\",\"source_len\":0,\"opts\":[\"-I/etc\"]}",
          NULL, 0);
    assert_int_equal(kevo_wire_prepare_unpack(b.data, b.len, &w, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "without an include path"));
    kv_buf_release(&b);
}

/* Every prefix of every frame, and every frame with one byte changed, is
 * read or refused, never read past (a cheap, deterministic fuzz). */
/* The GPU frames round-trip: a setup with its reference cubin and a 64-bit
 * seed, a GPU's hello with NaN figures (not measured) kept NaN, an
 * evaluation with its plan and cubin, a result with every repetition's
 * time bit for bit; and each is refused when a field lies. */
static void test_gpu_frames(void **state)
{
    (void)state;
    kevo_err err;
    kv_buf b;
    kv_buf_init(&b);
    static const unsigned char ref[] = {0x7f, 'E', 'L', 'F', 0, 9, 0xfe};
    kevo_wire_gpu_setup su = {.op = "ikbo_lce", .shape = "B=1024,M=433", .dtype = "bf16", .warmup = 5, .reps = 30,
                              .timeout_s = 120, .seed = 0xfedcba9876543210ull, .ref_cubin = (void *)ref,
                              .ref_cubin_size = sizeof ref};
    assert_int_equal(kevo_wire_gpu_setup_pack(&b, &su, &err), KEVO_OK);
    kevo_wire_gpu_setup su2;
    assert_int_equal(kevo_wire_gpu_setup_unpack(b.data, b.len, &su2, &err), KEVO_OK);
    assert_string_equal(su2.op, "ikbo_lce");
    assert_string_equal(su2.shape, "B=1024,M=433");
    assert_string_equal(su2.dtype, "bf16");
    assert_true(su2.warmup == 5 && su2.reps == 30 && su2.timeout_s == 120);
    assert_true(su2.seed == 0xfedcba9876543210ull);
    assert_int_equal(su2.ref_cubin_size, sizeof ref);
    assert_memory_equal(su2.ref_cubin, ref, sizeof ref);
    kevo_wire_gpu_setup_release(&su2);

    kevo_wire_gpu_hello h;
    memset(&h, 0, sizeof h);
    h.ok = true;
    h.device = 3;
    snprintf(h.info.name, sizeof h.info.name, "NVIDIA H200");
    snprintf(h.info.pci_bus, sizeof h.info.pci_bus, "0000:07:00.0");
    h.info.sm_count = 132;
    h.info.cc_major = 9;
    h.info.l2_bytes = INT64_C(52428800);
    const kevo_op *op = kevo_op_find("ikbo_lce");
    h.op = op;
    kevo_peer_set_init(&h.info.peers);
    kevo_peer_fig *s0 = &h.info.peers.p[kevo_op_peer_index(op, "stage0")];
    s0->state = KEVO_PEER_OK;
    s0->median_ms = 1.956;
    s0->ci_lo_ms = 1.95;
    s0->ci_hi_ms = 1.96;
    s0->rel_err = 1e-4;
    kevo_peer_fig *b1 = &h.info.peers.p[kevo_op_peer_index(op, "beta1")];
    b1->state = KEVO_PEER_FAILED;
    b1->rel_err = 0.5;
    snprintf(b1->detail, sizeof b1->detail, "disagrees \"quoted\"");
    snprintf(b1->config, sizeof b1->config, "{\"form\":\"beta1\"}");
    h.info.peak_tflops = 770.5;
    h.info.copy_tbps = NAN;
    b.len = 0;
    assert_int_equal(kevo_wire_gpu_hello_pack(&b, &h, &err), KEVO_OK);
    kevo_wire_gpu_hello h2;
    assert_int_equal(kevo_wire_gpu_hello_unpack(b.data, b.len, op, &h2, &err), KEVO_OK);
    assert_true(h2.ok && h2.device == 3 && h2.info.sm_count == 132 && h2.info.cc_major == 9);
    assert_string_equal(h2.info.name, "NVIDIA H200");
    assert_true(h2.info.l2_bytes == INT64_C(52428800));
    assert_true(h2.info.peak_tflops == 770.5 && isnan(h2.info.copy_tbps));
    /* the peers by name: the measured ones as sent, the others unmeasured */
    const kevo_peer_fig *r0 = &h2.info.peers.p[kevo_op_peer_index(op, "stage0")];
    assert_true(r0->state == KEVO_PEER_OK && r0->median_ms == 1.956 && r0->ci_hi_ms == 1.96 && r0->rel_err == 1e-4);
    const kevo_peer_fig *r1 = &h2.info.peers.p[kevo_op_peer_index(op, "beta1")];
    assert_true(r1->state == KEVO_PEER_FAILED && isnan(r1->median_ms) && r1->rel_err == 0.5);
    assert_string_equal(r1->detail, "disagrees \"quoted\"");
    assert_string_equal(r1->config, "{\"form\":\"beta1\"}");
    assert_int_equal(h2.info.peers.p[kevo_op_peer_index(op, "decomposed")].state, KEVO_PEER_UNMEASURED);
    /* another op's peers: a name it does not declare is refused */
    assert_int_equal(kevo_wire_gpu_hello_unpack(b.data, b.len, kevo_op_find("ikbo_fa"), &h2, &err),
                     KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "peer"));

    kevo_gpu_request rq;
    memset(&rq, 0, sizeof rq);
    rq.candidate_id = 42;
    rq.maps = 5;
    rq.time = true;
    rq.seed = UINT64_MAX;
    rq.cubin = ref;
    rq.cubin_size = sizeof ref;
    rq.plan.nlaunches = 1;
    snprintf(rq.plan.launches[0].entry, sizeof rq.plan.launches[0].entry, "lce_ws");
    rq.plan.launches[0].grid[0] = 132;
    rq.plan.launches[0].grid[1] = rq.plan.launches[0].grid[2] = 1;
    rq.plan.launches[0].block[0] = 384;
    rq.plan.launches[0].block[1] = rq.plan.launches[0].block[2] = 1;
    rq.plan.launches[0].smem = 200000;
    rq.plan.workspace_bytes = 4096;
    b.len = 0;
    assert_int_equal(kevo_wire_eval_pack(&b, 7, &rq, &err), KEVO_OK);
    int64_t id = 0;
    kevo_gpu_request rq2;
    assert_int_equal(kevo_wire_eval_unpack(b.data, b.len, &id, &rq2, &err), KEVO_OK);
    assert_true(id == 7 && rq2.candidate_id == 42 && rq2.maps == 5 && rq2.time && rq2.seed == UINT64_MAX);
    assert_int_equal(rq2.cubin_size, sizeof ref);
    assert_memory_equal(rq2.cubin, ref, sizeof ref);
    assert_int_equal(rq2.plan.nlaunches, 1);
    assert_string_equal(rq2.plan.launches[0].entry, "lce_ws");
    assert_true(rq2.plan.launches[0].grid[0] == 132 && rq2.plan.launches[0].block[0] == 384);
    assert_true(rq2.plan.launches[0].smem == 200000 && rq2.plan.workspace_bytes == 4096);
    free((void *)rq2.cubin);

    kevo_gpu_result *res = calloc(1, sizeof *res), *res2 = calloc(1, sizeof *res2);
    assert_non_null(res);
    assert_non_null(res2);
    res->fail = KEVO_FAIL_NONE;
    snprintf(res->msg, sizeof res->msg, "ok \"quoted\"\n");
    res->checks = 3;
    res->rel_err = 2.2e-4;
    res->max_abs_err = NAN;
    res->bad_elems = 0;
    res->reps = 30;
    for (int i = 0; i < res->reps; i++)
        res->rep_ms[i] = 0.3869 + 1e-7 * i * i + 1.0 / 3.0 * 1e-9;
    res->median_ms = res->rep_ms[15];
    res->min_ms = res->rep_ms[0];
    res->max_ms = res->rep_ms[29];
    res->passes = 2;
    for (int i = 0; i < KEVO_GPU_PHASES; i++)
        res->phase_ms[i] = 1.25 + i;
    b.len = 0;
    assert_int_equal(kevo_wire_eval_result_pack(&b, 9, res, &err), KEVO_OK);
    assert_int_equal(kevo_wire_eval_result_unpack(b.data, b.len, &id, res2, &err), KEVO_OK);
    assert_true(id == 9 && res2->fail == KEVO_FAIL_NONE && res2->checks == 3 && res2->reps == 30 &&
                res2->passes == 2);
    assert_memory_equal(res2->phase_ms, res->phase_ms, sizeof res->phase_ms); /* where the time went */
    assert_string_equal(res2->msg, res->msg);
    assert_true(res2->rel_err == 2.2e-4 && isnan(res2->max_abs_err) && res2->median_ms == res->median_ms);
    assert_memory_equal(res2->rep_ms, res->rep_ms, 30 * sizeof(double));
    /* a failure travels by name */
    res->fail = KEVO_FAIL_EVAL_TIMEOUT;
    res->reps = 0;
    res->median_ms = NAN;
    b.len = 0;
    assert_int_equal(kevo_wire_eval_result_pack(&b, 10, res, &err), KEVO_OK);
    assert_int_equal(kevo_wire_eval_result_unpack(b.data, b.len, &id, res2, &err), KEVO_OK);
    assert_true(res2->fail == KEVO_FAIL_EVAL_TIMEOUT && res2->reps == 0 && isnan(res2->median_ms));

    /* refused: fields that lie, each named */
    static const struct {
        const char *hdr;
        size_t blob;
        const char *says;
    } bad[] = {
        {"{\"type\":\"gpu_setup\",\"op\":\"x\",\"shape\":\"B=1\",\"dtype\":\"fp16\",\"warmup\":1,\"reps\":0,"
         "\"timeout_s\":5,\"seed\":\"0000000000000001\",\"ref_len\":2}", 2, "'reps'"},
        {"{\"type\":\"gpu_setup\",\"op\":\"x\",\"shape\":\"B=1\",\"dtype\":\"fp16\",\"warmup\":1,\"reps\":3,"
         "\"timeout_s\":5,\"seed\":\"1\",\"ref_len\":2}", 2, "'seed' is not 16 hex digits"},
        {"{\"type\":\"gpu_setup\",\"op\":\"x\",\"shape\":\"B=1\",\"dtype\":\"fp16\",\"warmup\":1,\"reps\":3,"
         "\"timeout_s\":5,\"seed\":\"000000000000000g\",\"ref_len\":2}", 2, "'seed' is not 16 hex digits"},
        {"{\"type\":\"gpu_setup\",\"op\":\"x\",\"shape\":\"B=1\",\"dtype\":\"fp16\",\"warmup\":1,\"reps\":3,"
         "\"timeout_s\":5,\"seed\":\"0000000000000001\",\"ref_len\":0}", 0, "without a reference cubin"},
        {"{\"type\":\"eval\",\"id\":1,\"candidate\":1,\"maps\":1,\"time\":true,\"seed\":\"0000000000000001\","
         "\"plan\":\"{]\",\"cubin_len\":2}", 2, "plan"},
        {"{\"type\":\"eval\",\"id\":1,\"candidate\":1,\"maps\":0,\"time\":true,\"seed\":\"0000000000000001\","
         "\"plan\":\"{}\",\"cubin_len\":2}", 2, "'maps'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"bogus\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
         "\"reps_len\":0,\"passes\":1}", 0, "failure kind 'bogus'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":-1,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
         "\"reps_len\":0,\"passes\":1}", 0, "'median_ms'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":2,"
         "\"reps_len\":8,\"passes\":1}", 8, "2 repetitions in 8 bytes"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":1001,"
         "\"reps_len\":8008,\"passes\":1}", 8008, "'reps'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
         "\"reps_len\":0,\"passes\":4}", 0, "'passes'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
         "\"reps_len\":0,\"passes\":1,\"phase_ref\":\"3\"}", 0, "'phase_ref'"},
        {"{\"type\":\"eval_result\",\"id\":1,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
         "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
         "\"reps_len\":0,\"passes\":1,\"phase_all\":-2}", 0, "'phase_all'"},
    };
    unsigned char *zeros = calloc(1, 8008);
    assert_non_null(zeros);
    /* a rank that sends no phases (an older kevo): accepted, the phases not known (0) */
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"eval_result\",\"id\":3,\"fail\":\"none\",\"msg\":\"\",\"checks\":0,\"rel_err\":null,"
          "\"max_abs_err\":null,\"bad_elems\":0,\"median_ms\":null,\"min_ms\":null,\"max_ms\":null,\"reps\":0,"
          "\"reps_len\":0,\"passes\":1}",
          zeros, 0);
    assert_int_equal(kevo_wire_eval_result_unpack(b.data, b.len, &id, res2, &err), KEVO_OK);
    for (int i = 0; i < KEVO_GPU_PHASES; i++)
        assert_true(res2->phase_ms[i] == 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        frame(&b, KEVO_WIRE_VERSION, bad[i].hdr, zeros, bad[i].blob);
        kevo_err_clear(&err);
        kevo_status st;
        if (strstr(bad[i].hdr, "gpu_setup")) {
            st = kevo_wire_gpu_setup_unpack(b.data, b.len, &su2, &err);
        } else if (strstr(bad[i].hdr, "\"eval\"")) {
            st = kevo_wire_eval_unpack(b.data, b.len, &id, &rq2, &err);
        } else {
            st = kevo_wire_eval_result_unpack(b.data, b.len, &id, res2, &err);
        }
        if (st == KEVO_OK || !strstr(err.msg, bad[i].says))
            fprintf(stderr, "case %zu: status %d, message '%s'; wanted '%s'\n", i, st, err.msg, bad[i].says);
        assert_int_not_equal(st, KEVO_OK);
        assert_non_null(strstr(err.msg, bad[i].says));
    }
    free(zeros);
    free(res);
    free(res2);
    kv_buf_release(&b);
}

static void test_cut_and_flipped(void **state)
{
    (void)state;
    kv_buf frames[5];
    kevo_err err;
    kevo_compile_job j, r;
    make_job(&j);
    make_result(&r);
    kevo_wire_hello h = {.rank = 1, .pid = 9, .slots = 2};
    snprintf(h.host, sizeof h.host, "h");
    snprintf(h.nvrtc, sizeof h.nvrtc, "13.0");
    for (int i = 0; i < 5; i++)
        kv_buf_init(&frames[i]);
    assert_int_equal(kevo_wire_job_pack(&frames[0], 1, &j, 60, &err), KEVO_OK);
    assert_int_equal(kevo_wire_result_pack(&frames[1], 2, &r, &err), KEVO_OK);
    assert_int_equal(kevo_wire_hello_pack(&frames[2], &h, &err), KEVO_OK);
    kevo_wire_proc reap = {.rank = 1, .pid = 5};
    snprintf(reap.host, sizeof reap.host, "h");
    snprintf(reap.start, sizeof reap.start, "0a-1/22");
    assert_int_equal(kevo_wire_fin_pack(&frames[3], true, &reap, 1, &err), KEVO_OK);
    assert_int_equal(kevo_wire_prepare_pack(&frames[4], &j, &err), KEVO_OK);
    for (int f = 0; f < 5; f++) {
        size_t n = frames[f].len;
        unsigned char *copy = malloc(n);
        for (size_t cut = 0; cut <= n; cut++) {
            for (long flip = -1; flip < (long)cut; flip++) {
                memcpy(copy, frames[f].data, cut);
                if (flip >= 0)
                    copy[flip] ^= (unsigned char)(0x5a + flip);
                /* an exact-size heap block: the sanitizer catches a read past it */
                unsigned char *msg = malloc(cut ? cut : 1);
                memcpy(msg, copy, cut);
                kevo_wire_job w;
                kevo_compile_job out;
                memset(&out, 0, sizeof out);
                int64_t id;
                kevo_wire_hello g;
                bool fin;
                kevo_wire_type t;
                kevo_err_clear(&err);
                if (kevo_wire_job_unpack(msg, cut, &w, &err) == KEVO_OK)
                    kevo_wire_job_release(&w);
                else
                    assert_true(err.msg[0] != '\0');
                if (kevo_wire_prepare_unpack(msg, cut, &w, &err) == KEVO_OK)
                    kevo_wire_job_release(&w);
                else
                    assert_true(err.msg[0] != '\0');
                if (kevo_wire_result_unpack(msg, cut, &id, &out, &err) == KEVO_OK)
                    kevo_compile_job_release(&out);
                (void)kevo_wire_hello_unpack(msg, cut, &g, &err);
                (void)kevo_wire_control_unpack(msg, cut, KEVO_WIRE_FIN, &fin, &err);
                kevo_wire_proc *list = NULL;
                int nlist = 0;
                if (kevo_wire_fin_unpack(msg, cut, &fin, &list, &nlist, &err) == KEVO_OK)
                    free(list);
                (void)kevo_wire_type_of(msg, cut, &t, &err);
                free(msg);
                if (cut < n && flip > 16) /* past the prefix, only whole frames are flipped */
                    break;
            }
        }
        free(copy);
        kv_buf_release(&frames[f]);
    }
    kevo_compile_job_release(&r);
}

/* A lost rank's end: a hello carries its process's identity; a fin names
 * the processes to end (rank, host, pid, identity), and every field of the
 * list is checked like any other (an identity is hex digits, '-', '/' and
 * digits only: it reaches no shell, but nothing else has a reason to be
 * there). */
static void test_reap_frames(void **state)
{
    (void)state;
    kevo_wire_hello h = {.rank = 2, .pid = 77, .slots = 4}, g;
    snprintf(h.host, sizeof h.host, "node3");
    snprintf(h.nvrtc, sizeof h.nvrtc, "13.0");
    snprintf(h.start, sizeof h.start, "68db6aff-0d20-4e8f-9fe3-48d28035f492/1938599");
    kv_buf b;
    kv_buf_init(&b);
    kevo_err err;
    assert_int_equal(kevo_wire_hello_pack(&b, &h, &err), KEVO_OK);
    assert_int_equal(kevo_wire_hello_unpack(b.data, b.len, &g, &err), KEVO_OK);
    assert_string_equal(g.start, h.start);
    kevo_wire_proc reap[2] = {{.rank = 1, .pid = 4242}, {.rank = 5, .pid = 9}};
    snprintf(reap[0].host, sizeof reap[0].host, "node3");
    snprintf(reap[0].start, sizeof reap[0].start, "%s", h.start);
    snprintf(reap[1].host, sizeof reap[1].host, "node4");
    b.len = 0;
    assert_int_equal(kevo_wire_fin_pack(&b, true, reap, 2, &err), KEVO_OK);
    kevo_wire_proc *got = NULL;
    int n = 0;
    bool fin = false;
    assert_int_equal(kevo_wire_fin_unpack(b.data, b.len, &fin, &got, &n, &err), KEVO_OK);
    assert_true(fin);
    assert_int_equal(n, 2);
    assert_int_equal(got[0].rank, 1);
    assert_int_equal(got[0].pid, 4242);
    assert_string_equal(got[0].host, "node3");
    assert_string_equal(got[0].start, h.start);
    assert_int_equal(got[1].rank, 5);
    assert_string_equal(got[1].start, "");
    free(got);
    /* a fin with a list is still a fin to the plain reader */
    fin = false;
    assert_int_equal(kevo_wire_control_unpack(b.data, b.len, KEVO_WIRE_FIN, &fin, &err), KEVO_OK);
    assert_true(fin);
    assert_int_equal(kevo_wire_fin_pack(&b, true, NULL, 1, &err), KEVO_ERR_ARG);
    assert_int_equal(kevo_wire_fin_pack(&b, true, reap, KEVO_WIRE_REAP_MAX + 1, &err), KEVO_ERR_ARG);
    static const struct {
        const char *hdr, *says;
    } bad[] = {
        {"{\"type\":\"fin\",\"finalize\":false}", "without a 'reap' list"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":{}}", "without a 'reap' list"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[7]}", "reap entry 0 is not an object"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[{\"rank\":1,\"pid\":0,\"host\":\"a\",\"start\":\"\"}]}",
         "'pid'"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[{\"rank\":1,\"pid\":5,\"host\":\"a\",\"start\":\"ab/1;kill\"}]}",
         "not a process identity"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[{\"rank\":1,\"pid\":5,\"host\":\"a\",\"start\":\"/12\"}]}",
         "not a process identity"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[{\"rank\":1,\"pid\":5,\"host\":\"a\",\"start\":\"ab/\"}]}",
         "not a process identity"},
        {"{\"type\":\"fin\",\"finalize\":false,\"reap\":[{\"rank\":1,\"pid\":5,\"start\":\"\"}]}", "'host'"},
    };
    for (size_t i = 0; i < KV_ARRAY_LEN(bad); i++) {
        frame(&b, KEVO_WIRE_VERSION, bad[i].hdr, NULL, 0);
        kevo_err_clear(&err);
        got = (kevo_wire_proc *)&h; /* untouched on failure */
        assert_int_equal(kevo_wire_fin_unpack(b.data, b.len, &fin, &got, &n, &err), KEVO_ERR_PARSE);
        if (!strstr(err.msg, bad[i].says))
            fprintf(stderr, "%s: '%s', wanted '%s'\n", bad[i].hdr, err.msg, bad[i].says);
        assert_non_null(strstr(err.msg, bad[i].says));
        assert_ptr_equal(got, &h);
        assert_int_equal(kevo_wire_control_unpack(b.data, b.len, KEVO_WIRE_FIN, &fin, &err), KEVO_ERR_PARSE);
    }
    /* too many */
    kv_buf big;
    kv_buf_init(&big);
    kv_buf_puts(&big, "{\"type\":\"fin\",\"finalize\":false,\"reap\":[");
    for (int i = 0; i <= KEVO_WIRE_REAP_MAX; i++)
        kv_buf_puts(&big, i ? ",{}" : "{}");
    kv_buf_puts(&big, "]}");
    frame(&b, KEVO_WIRE_VERSION, big.data, NULL, 0);
    assert_int_equal(kevo_wire_fin_unpack(b.data, b.len, &fin, &got, &n, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "at most 4096"));
    kv_buf_release(&big);
    frame(&b, KEVO_WIRE_VERSION,
          "{\"type\":\"hello\",\"rank\":1,\"pid\":5,\"slots\":1,\"host\":\"a\",\"nvrtc\":\"13.0\",\"start\":\"$(x)/1\"}", NULL,
          0);
    assert_int_equal(kevo_wire_hello_unpack(b.data, b.len, &g, &err), KEVO_ERR_PARSE);
    assert_non_null(strstr(err.msg, "not a process identity"));
    kv_buf_release(&b);
}

/* kv_proc_id names a process for as long as it lives; kv_proc_end kills
 * only the process of that identity, never this one. */
static void test_proc_end(void **state)
{
    (void)state;
    char self[KEVO_PROC_ID_MAX], again[KEVO_PROC_ID_MAX], child_id[KEVO_PROC_ID_MAX];
    assert_true(kv_proc_id((long long)getpid(), self));
    assert_true(kv_proc_id((long long)getpid(), again));
    assert_string_equal(self, again);
    assert_non_null(strchr(self, '/'));
    assert_false(kv_proc_end((long long)getpid(), self));
    assert_false(kv_proc_id(0, again));
    assert_string_equal(again, "");
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        pause();
        _exit(0);
    }
    assert_true(kv_proc_id((long long)child, child_id));
    assert_string_not_equal(child_id, self);
    /* another process's identity (this one's), or none: the child lives on */
    assert_false(kv_proc_end((long long)child, self));
    assert_false(kv_proc_end((long long)child, ""));
    assert_false(kv_proc_end((long long)child, NULL));
    assert_int_equal(kill(child, 0), 0);
    assert_true(kv_proc_end((long long)child, child_id));
    /* dead and not yet waited for (a zombie): ended already */
    for (int t = 0; t < 500 && kv_proc_id((long long)child, again); t++)
        tu_sleep_ms(10);
    assert_false(kv_proc_id((long long)child, again));
    assert_false(kv_proc_end((long long)child, child_id));
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* gone: its identity names nothing */
    assert_false(kv_proc_id((long long)child, again));
    assert_false(kv_proc_end((long long)child, child_id));
}

/* A timing pass is steady when its median is within 5% of its minimum: the
 * pass of 10 repetitions at 0.39 ms and 20 at 0.63 ms (an H100, 2026-11-23)
 * is not, a quiet pass (0.396 / 0.390) is; nothing unknown is steady. */
static void test_timing_steady(void **state)
{
    (void)state;
    assert_true(kevo_gpu_timing_steady(0.3956, 0.3902));
    assert_true(kevo_gpu_timing_steady(1.05, 1.0));
    assert_false(kevo_gpu_timing_steady(0.6293, 0.3893));
    assert_false(kevo_gpu_timing_steady(1.051, 1.0));
    assert_false(kevo_gpu_timing_steady(NAN, 1.0));
    assert_false(kevo_gpu_timing_steady(1.0, NAN));
    assert_false(kevo_gpu_timing_steady(0.0, 0.0));
}

/* A GP_RETIME head for ikbo_lce with peer p (-1: none). */
static gp_request retime_head(int count, int rounds, int p)
{
    gp_request h;
    memset(&h, 0, sizeof h);
    h.kind = GP_RETIME;
    h.count = count;
    h.rounds = rounds;
    h.warmup = 2;
    h.has_peer = p >= 0;
    h.peer = p;
    return h;
}

/* A re-timing with a peer through a pipe as the parent and the worker
 * send it: the head keeps its peer, the answers their rounds, and each is
 * checked on arrival (gp_retime_check, gp_retime_result_check). */
static void test_retime_peer_roundtrip(void **state)
{
    (void)state;
    const kevo_op *op = kevo_op_find("ikbo_lce");
    assert_non_null(op);
    int beta1 = kevo_op_peer_index(op, "beta1");
    assert_true(beta1 >= 0);
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    gp_request h = retime_head(1, 60, beta1), got;
    assert_int_equal(gp_write(fd[1], &h, sizeof h), 0);
    assert_int_equal(gp_read(fd[0], &got, sizeof got), 0);
    char why[200] = "";
    assert_true(gp_retime_check(&got, op, why, sizeof why));
    assert_int_equal(got.kind, GP_RETIME);
    assert_int_equal(got.has_peer, 1);
    assert_int_equal(got.peer, beta1);
    assert_int_equal(got.count, 1);

    static gp_retime_response rs, back;
    memset(&rs, 0, sizeof rs);
    rs.res.rounds = 60;
    for (int r = 0; r < 60; r++)
        rs.res.ms[r] = 0.4 + 0.001 * r;
    assert_int_equal(gp_write(fd[1], &rs, sizeof rs), 0);
    assert_int_equal(gp_read(fd[0], &back, sizeof back), 0);
    assert_true(gp_retime_result_check(&back.res, 60));
    assert_int_equal(back.res.fail, KEVO_FAIL_NONE);
    assert_int_equal(back.res.rounds, 60);
    assert_true(back.res.ms[59] == rs.res.ms[59]);
    /* the peer's failure travels as a result, its message kept */
    memset(&rs, 0, sizeof rs);
    rs.res.fail = KEVO_FAIL_WRONG_RESULT;
    snprintf(rs.res.msg, sizeof rs.res.msg, "peer 'beta1' disagrees with the reference");
    assert_int_equal(gp_write(fd[1], &rs, sizeof rs), 0);
    assert_int_equal(gp_read(fd[0], &back, sizeof back), 0);
    assert_true(gp_retime_result_check(&back.res, 60));
    assert_string_equal(back.res.msg, "peer 'beta1' disagrees with the reference");
    close(fd[0]);
    close(fd[1]);

    /* without a peer, a re-timing still takes two candidates; with one, a single candidate will do */
    h = retime_head(1, 60, -1);
    assert_false(gp_retime_check(&h, op, why, sizeof why));
    assert_non_null(strstr(why, "takes 2..8 candidates, not 1"));
    h = retime_head(2, 60, -1);
    assert_true(gp_retime_check(&h, op, why, sizeof why));
}

/* A peer index out of range, a peer that runs after the search, a flag
 * that is neither 0 nor 1 and too many runs are refused, each named; an
 * answer with the wrong number of rounds, a time that is not finite and
 * positive, a failure kind kevo has not, or an unterminated message is
 * turned into a failure saying so. */
static void test_retime_peer_refused(void **state)
{
    (void)state;
    const kevo_op *lce = kevo_op_find("ikbo_lce"), *fa = kevo_op_find("ikbo_fa");
    char why[200] = "";
    gp_request h = retime_head(2, 60, 4);
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    assert_string_equal(why, "peer index 4 is out of range: ikbo_lce has 4 peers");
    h = retime_head(2, 60, 0);
    h.peer = -3;
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    assert_string_equal(why, "peer index -3 is out of range: ikbo_lce has 4 peers");
    h.peer = 1 << 30;
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    assert_non_null(strstr(why, "is out of range"));
    h = retime_head(2, 60, kevo_op_peer_index(fa, "nocodesign"));
    assert_false(gp_retime_check(&h, fa, why, sizeof why));
    assert_string_equal(why, "peer 'nocodesign' of ikbo_fa runs after the search, not beside the candidates");
    h = retime_head(2, 60, 0);
    h.has_peer = 7;
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    assert_string_equal(why, "a re-timing's has_peer is 7, not 0 or 1");
    /* 8 candidates and a peer over 112 rounds: 1008 runs, more than the worker's 1000 */
    h = retime_head(8, 112, 3);
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    assert_string_equal(why, "a re-timing of 9 kernels over 112 rounds is more than 1000 runs");
    h.rounds = 111;
    assert_true(gp_retime_check(&h, lce, why, sizeof why));
    h = retime_head(2, 1, -1);
    assert_false(gp_retime_check(&h, lce, why, sizeof why));
    h = retime_head(9, 10, -1);
    assert_false(gp_retime_check(&h, lce, why, sizeof why));

    static kevo_gpu_retime_result r;
    memset(&r, 0, sizeof r);
    r.rounds = 59;
    for (int i = 0; i < 60; i++)
        r.ms[i] = 1.0;
    assert_false(gp_retime_result_check(&r, 60));
    assert_int_equal(r.fail, KEVO_FAIL_WORKER_CRASH);
    assert_non_null(strstr(r.msg, "answered 59 rounds (asked 60)"));
    memset(&r, 0, sizeof r);
    r.rounds = 3;
    r.ms[0] = r.ms[2] = 1.0;
    r.ms[1] = NAN;
    assert_false(gp_retime_result_check(&r, 3));
    assert_int_equal(r.fail, KEVO_FAIL_WORKER_CRASH);
    memset(&r, 0, sizeof r);
    r.rounds = 2;
    r.ms[0] = 1.0;
    r.ms[1] = -1.0;
    assert_false(gp_retime_result_check(&r, 2));
    memset(&r, 0, sizeof r);
    r.fail = (kevo_fail)999;
    assert_false(gp_retime_result_check(&r, 2));
    assert_string_equal(r.msg, "re-timing: the worker answered failure kind 999, which kevo has not");
    memset(&r, 'x', sizeof r.msg);
    r.fail = KEVO_FAIL_LOAD_ERROR;
    memset(r.msg, 'x', sizeof r.msg);
    assert_true(gp_retime_result_check(&r, 2));
    assert_int_equal(strlen(r.msg), sizeof r.msg - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_job_roundtrip),     cmocka_unit_test(test_prepare_roundtrip),
        cmocka_unit_test(test_result_roundtrip),
        cmocka_unit_test(test_hello_and_control), cmocka_unit_test(test_bad_frames),
        cmocka_unit_test(test_cut_and_flipped),   cmocka_unit_test(test_gpu_frames),
        cmocka_unit_test(test_timing_steady),     cmocka_unit_test(test_reap_frames),
        cmocka_unit_test(test_proc_end),          cmocka_unit_test(test_retime_peer_roundtrip),
        cmocka_unit_test(test_retime_peer_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
