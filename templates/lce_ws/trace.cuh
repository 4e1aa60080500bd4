// lce_ws/trace.cuh — a profiling build of lce_ws: thread 0 of each consumer
// warp group stamps each item with %globaltimer (ns) into the workspace,
// where the evaluator's KEVO_WS_DUMP finds them and bench/ws_trace.py reads
// them (docs/lce_ws.md v30).  Not part of the lce_ws family: `bench/ws_trace.py
// tree` makes a copy of a template tree whose lce_ws.json includes it after
// lce_ws/work.cuh and asks num_sms x CONSUMERS x 4 KiB more workspace, and
// whose lce_ws.cu calls the hooks at the end of this file in its consumer
// loop.  (The
// family's own sources stay as they are: the admission checks reject timer
// reads in a kernel the search builds, and the LLM's prompt shows them.)
#ifndef KEVO_LCE_WS_TRACE_CUH
#define KEVO_LCE_WS_TRACE_CUH

// After everything else in the workspace (256-byte aligned): [gridDim.x]
// [CONSUMERS] blocks of TRACE_RECS records of 8 u64, consumer warp group c's
// block here.  Record 0: items recorded, the warp group's first stamp, its
// SM; then one per item: item | user << 32 | (part + 1) << 40 | late << 48,
// then the stamps at its pop from the queue, after its start, after its main
// loop, once its user tile was ready, and at its end.
constexpr int TRACE_RECS = 64;
__device__ __forceinline__ unsigned long long *ws_trace(const kevo_lce_args &a, const ws_geom &g, int c)
{
    const size_t end = SPLITK > 1 || USPLIT > 1
                           ? (size_t)(reinterpret_cast<char *>(ws_part(a, g, g.splits, 0, 0, 0, 0)) -
                                      static_cast<char *>(a.workspace))
                           : ws_split_offset(a, g);
    unsigned long long *base =
        reinterpret_cast<unsigned long long *>(static_cast<char *>(a.workspace) + ((end + 255) & ~(size_t)255));
    return base + ((size_t)blockIdx.x * CONSUMERS + c) * TRACE_RECS * 8;
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

#endif // KEVO_LCE_WS_TRACE_CUH
