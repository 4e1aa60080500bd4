// lce_ws/trace.cuh — a profiling build of lce_ws: thread 0 of each consumer
// warp group stamps each item with %globaltimer (ns) into the workspace,
// where the evaluator's KEVO_WS_DUMP finds them and bench/ws_trace.py reads
// them (docs/lce_ws.md v30).  Not part of the lce_ws family: `bench/ws_trace.py
// tree` makes a copy of a template tree whose lce_ws.json includes it after
// lce_ws/work.cuh and asks num_sms x CONSUMERS x 4 KiB more workspace, and
// whose lce_ws.cu calls the item hooks in its consumer loop.  `ktree` does
// the same for the ring's k-tile stamps (the kt_* below, docs/lce_ws.md
// v33): num_sms x KT_BYTES more workspace, hooks in the producer's and the
// consumer's k-tile loops.  (The family's own sources stay as they are: the
// admission checks reject timer reads in a kernel the search builds, and the
// LLM's prompt shows them.)
#ifndef KEVO_LCE_WS_TRACE_CUH
#define KEVO_LCE_WS_TRACE_CUH

// After everything else in the workspace (256-byte aligned): [gridDim.x]
// [CONSUMERS] blocks of TRACE_RECS records of 8 u64, consumer warp group c's
// block here.  Record 0: items recorded, the warp group's first stamp, its
// SM; then one per item: item | user << 32 | (part + 1) << 40 | late << 48,
// then the stamps at its pop from the queue, after its start, after its main
// loop, once its user tile was ready, and at its end.
constexpr int TRACE_RECS = 64;
// Where the trace starts: after everything else in the workspace, 256-byte aligned.
__device__ __forceinline__ char *trace_base(const kevo_lce_args &a, const ws_geom &g)
{
    const size_t end = SPLITK > 1 || USPLIT > 1
                           ? (size_t)(reinterpret_cast<char *>(ws_part(a, g, g.splits, 0, 0, 0, 0)) -
                                      static_cast<char *>(a.workspace))
                           : ws_split_offset(a, g);
    return static_cast<char *>(a.workspace) + ((end + 255) & ~(size_t)255);
}
__device__ __forceinline__ unsigned long long *ws_trace(const kevo_lce_args &a, const ws_geom &g, int c)
{
    return reinterpret_cast<unsigned long long *>(trace_base(a, g)) +
           ((size_t)blockIdx.x * CONSUMERS + c) * TRACE_RECS * 8;
}

__device__ __forceinline__ unsigned long long trace_now()
{
    return cuda::ptx::get_sreg_globaltimer();
}

// Record 0 of a warp group's block (thread 0).
__device__ __forceinline__ void trace_begin(unsigned long long *trc, int tid)
{
    if (tid == 0) {
        trc[0] = 0;
        trc[1] = trace_now();
        trc[2] = cuda::ptx::get_sreg_smid();
    }
}

// One item's record (thread 0), t: its first four stamps; the fifth is now.
__device__ __forceinline__ void trace_item(unsigned long long *trc, int &n, int item, const ws_item &it, bool late,
                                           const unsigned long long (&t)[4], int tid)
{
    if (tid != 0 || n + 1 >= TRACE_RECS)
        return;
    unsigned long long *r = trc + (size_t)(++n) * 8;
    r[0] = (unsigned)item | (unsigned long long)it.user << 32 | (unsigned long long)(it.part + 1) << 40 |
           (unsigned long long)late << 48;
    for (int k = 0; k < 4; ++k)
        r[1 + k] = t[k];
    r[5] = trace_now();
    trc[0] = (unsigned)n;
}

// The consumer loop's hooks (bench/ws_trace.py tree puts them there).
#define WS_TRACE_BEGIN()                                                                                               \
    unsigned long long *trc = ws_trace(a, g, w.c), tt[4];                                                              \
    int ntr = 0;                                                                                                       \
    trace_begin(trc, w.tid)
#define WS_TRACE(k) (tt[k] = trace_now())
#if URES // late: consumer_late_user waits for the user tile
#define WS_TRACE_MAIN()                                                                                                \
    WS_TRACE(2);                                                                                                       \
    const bool tr_late = held == HELD_LATE
#else
#define WS_TRACE_MAIN()                                                                                                \
    WS_TRACE(2);                                                                                                       \
    const bool tr_late = false
#endif
#define WS_TRACE_DONE() trace_item(trc, ntr, e.item, it, tr_late, tt, w.tid)

// ---- the ring's k-tile trace (`bench/ws_trace.py ktree`) ----
// Per CTA, after the same 256-byte aligned end as ws_trace: KT_BYTES, a
// header of 8 u64 (ring positions stamped, then %globaltimer, clock64 and
// the SM at the producer's start, %globaltimer and clock64 at its end) and
// KT_RECS records of 4 u32, one per ring position p < KT_RECS, each the low
// 32 bits of clock64 (SM cycles, one clock per CTA): the producer began to
// wait for p's slot, had it free (its loads follow), the consumer began to
// wait for p's bytes, saw them.  In a cooperative CTA warp group 0 stamps
// the consumer's two (every warp group waits on every position); with
// ping-pong each warp group stamps its own items' positions.  UFOLD=1's
// candidate tiles load through producer_load_kt and are not stamped.
constexpr int KT_RECS = 2048;
constexpr int KT_BYTES = 64 + KT_RECS * 16;
__device__ __forceinline__ unsigned *kt_trace(const kevo_lce_args &a, const ws_geom &g)
{
    return reinterpret_cast<unsigned *>(trace_base(a, g) + (size_t)blockIdx.x * KT_BYTES);
}
// The header's clocks: at = 1 at the producer's start (and the SM), 4 at its end.
__device__ __forceinline__ void kt_head(unsigned *ktr, int at)
{
    unsigned long long *h = reinterpret_cast<unsigned long long *>(ktr);
    h[at] = trace_now();
    h[at + 1] = clock64();
    if (at == 1) {
        h[0] = 0;
        h[3] = cuda::ptx::get_sreg_smid();
    }
}
// Field f (0-3) of position p's record; the producer's first (f = 0) also
// counts p in.
__device__ __forceinline__ void kt_stamp(unsigned *ktr, int p, int f)
{
    if (p < KT_RECS) {
        ktr[16 + 4 * p + f] = (unsigned)clock64();
        if (f == 0)
            reinterpret_cast<unsigned long long *>(ktr)[0] = (unsigned)p + 1;
    }
}
#define KT_TRACE_PRODUCER()                                                                                            \
    unsigned *ktr = kt_trace(a, g);                                                                                    \
    kt_head(ktr, 1)
#define KT_TRACE_END() kt_head(ktr, 4)
#define KT_PRODUCER(p, f) kt_stamp(ktr, p, f)
#define KT_CONSUMER(p, f)                                                                                              \
    do {                                                                                                               \
        if (w.tid == 0 && (PINGPONG || w.c == 0))                                                                      \
            kt_stamp(ktr, p, f);                                                                                       \
    } while (0)

#endif // KEVO_LCE_WS_TRACE_CUH
