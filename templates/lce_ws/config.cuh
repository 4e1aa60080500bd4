// lce_ws/config.cuh — lce_ws's tunables and what follows from them: the
// tile (TILE_R x BW accumulators, TILE_M x TILE_N of M and N), what a
// cluster shares, the stage and staging bytes, the consumers' registers
// and named barriers, and the checks on them.  Inlined ahead of
// lce_ws.cu (space "include"); see lce_ws.cu for the kernel.
#ifndef KEVO_LCE_WS_CONFIG_CUH
#define KEVO_LCE_WS_CONFIG_CUH

// ---- tunables (kevo defines them; these defaults make a standalone compile) ----
#ifndef BN
#define BN 256
#endif
#ifndef CONSUMERS
#define CONSUMERS 2
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef BK
#define BK 64 // K per stage: one or two W boxes of 64 (a 128-byte swizzle row each)
#endif
#ifndef EPI
#define EPI 1
#endif
#ifndef RASTER
#define RASTER 0
#endif
#ifndef CLUSTER
#define CLUSTER 1
#endif
#ifndef FUSE
#define FUSE 1
#endif
#ifndef URES
#define URES 0 // user_res in fp32 (0) or the storage dtype (1)
#endif
#ifndef TRANS
#define TRANS 0 // the tile computes out (0) or out^T (1: N on the WGMMA's M side)
#endif
#ifndef TRIM
#define TRIM 0 // the tile spans BW = BN - TRIM columns of N (TRANS=1: rows of M)
#endif
#ifndef SBUF
#define SBUF 2 // staged output boxes per consumer warp group (EPI=1: SBUF - 1 TMA stores in flight)
#endif
#ifndef SPLITK
#define SPLITK 1 // the last partial wave's tiles split along Kc (1: none)
#endif
#ifndef CLB
#define CLB 0 // CLUSTER=2 pairs two tiles of one candidate (0) or two candidates' (1)
#endif
#ifndef USPLIT
#define USPLIT 1 // each user tile split along Ku into USPLIT parts (1: none)
#endif
#ifndef UFOLD
#define UFOLD 0 // 1: candidate tiles run their user's k-tiles first
#endif
#ifndef STACK
#define STACK 0 // TRANS=1: candidates end to end along N
#endif

// The accumulator tile of a CTA: TILE_R rows (64 per consumer warp group, the
// WGMMA's M side) by BW columns (its N).  Rows are M and columns N, or with
// TRANS=1 rows are N and columns M.
constexpr int TILE_R = PINGPONG ? 64 : 64 * CONSUMERS;   // accumulator rows of a CTA's tile
constexpr int BW = BN - TRIM;                            // accumulator columns: the wgmma's N
constexpr int TILE_M = TRANS ? BW : TILE_R;              // rows of M in a CTA's tile
constexpr int TILE_N = TRANS ? TILE_R : BW;              // columns of N in it
// A cluster pairs tiles that share an operand, which its CTAs load in halves
// and multicast.  CLB=0: two tiles of one candidate that share the larger
// operand: TRANS=0 two M tiles (E's BN columns), TRANS=1 two N tiles (W's BW
// rows).  CLB=1: the same tile of two candidates (or users), which share W:
// every candidate multiplies the same W, so this halves W's reads whatever
// M and N are (with N small, W is most of a tile's bytes).
constexpr bool W_MCAST = CLUSTER > 1 && (TRANS || CLB);   // the cluster shares W's rows
constexpr bool E_MCAST = CLUSTER > 1 && !W_MCAST;         // the cluster shares E's boxes
constexpr int CL_B = CLB ? CLUSTER : 1;                   // CTAs of a cluster's item with candidates (users) of their own
constexpr int CL_T = CLUSTER / CL_B;                      // CTA tiles of one candidate in it
constexpr int CL_M = TRANS || CLB ? TILE_M : TILE_M * CLUSTER; // rows of M in a cluster's tile
constexpr int CL_N = TRANS && !CLB ? TILE_N * CLUSTER : TILE_N; // columns of N in it
constexpr int NT = 128 * (CONSUMERS + 1);
// E boxes are one swizzle atom wide: N-major E comes in whole atoms along N,
// so BN % 64 == 32 takes 32-column atoms (64-byte rows).  A trimmed TRANS=0
// tile loads whole 64-column atoms past its BW columns; its wgmma reads BW.
constexpr int E_SPAN = TRANS ? TILE_R : TRIM ? (BW + 63) / 64 * 64 : BN; // E columns a stage holds
constexpr int E_COLS = STACK || E_SPAN % 64 ? 32 : 64; // columns of an E box
constexpr int E_ROW = 2 * E_COLS;                        // its row in bytes = its swizzle (64 or 128)
constexpr int E_BOXES = E_SPAN / E_COLS;                 // E boxes per stage
// W is K-major, a box one swizzle row wide: 64 K-columns with 128-byte
// swizzle, so BK=128 takes two boxes per stage (K at k * BK and k * BK + 64);
// BK=32 takes one box of 32 K-columns with 64-byte swizzle (half the bytes a
// stage, so twice the stages fit in the same shared memory).
constexpr int W_ROW = BK < 64 ? 64 : 128;                // a W box's row in bytes = its swizzle (W_ROW / 2 K-columns)
constexpr int W_BOXES = BK * 2 / W_ROW;                  // W boxes per stage
constexpr int W_BOX_BYTES = TILE_M * W_ROW;              // one of them: TILE_M rows
constexpr int W_LOAD_ROWS = W_MCAST ? TILE_M / CLUSTER : TILE_M; // rows of it a CTA loads (multicast)
constexpr int W_BYTES = TILE_M * BK * 2;                 // W per stage
constexpr int MMA_LAG = BK == 32 ? 2 : 1;                // k-tiles of wgmmas in flight (consumer_compute)
constexpr int E_BYTES = E_SPAN * BK * 2;                 // E per stage: E_BOXES boxes of [BK][E_COLS]
constexpr int STAGE_BYTES = W_BYTES + E_BYTES;
constexpr int NACC = BW / 2;                             // fp32 accumulators per consumer thread
// A wgmma's N is at most 256: a wider tile (BW up to 320) issues two per
// k-step, over BW1 and BW2 columns, BW1 about half of BW in whole 8-row
// groups of W (TRANS=1) or whole E atoms (TRANS=0).  The second's B operand
// starts B1_OFF bytes on: BW1 rows of W (W_ROW bytes each) or BW1 / E_COLS
// E boxes.  The accumulators stay one array.
constexpr int BW_STEP = TRANS ? 8 : E_COLS;
constexpr int BW1 = BW > 256 ? (BW / 2 + BW_STEP - 1) / BW_STEP * BW_STEP : BW;
constexpr int BW2 = BW - BW1;
constexpr unsigned B1_OFF = TRANS ? BW1 * W_ROW : BW1 / E_COLS * BK * E_ROW;
constexpr int BOX_BYTES = 64 * 128;                      // one staged 64x64 output box
// output boxes per warp group: its 64 rows by BW columns in boxes of 64
// columns of N, or (TRANS=1) its 64 columns of N by BW rows in boxes of 64
// rows of M; the last one partly used when BW % 64
constexpr int OUT_BOXES = (BW + 63) / 64;
constexpr int STAGING_BYTES = CONSUMERS * SBUF * BOX_BYTES; // SBUF boxes per consumer warp group
constexpr int QN = 4;                                    // work queue depth
constexpr int ITEM_WARPS = 4 * (PINGPONG ? 1 : CONSUMERS); // consumer warps reading one item
// Registers: the CTA starts with NT threads of the most __launch_bounds__(NT, 1)
// allows (a multiple of 8); setmaxnreg.inc takes from what the producer's
// setmaxnreg.dec 40 released, so the consumers share the rest: 240, 232, 152, 104.
constexpr int LAUNCH_REGS = (65536 / NT < 255 ? 65536 / NT : 255) / 8 * 8;
constexpr int SHARE_REGS = (LAUNCH_REGS * (CONSUMERS + 1) - 40) / CONSUMERS / 8 * 8;
constexpr int CONSUMER_REGS = SHARE_REGS < 240 ? SHARE_REGS : 240;
// Named barriers (0 is __syncthreads): 1 + c is consumer warp group c's own,
// BAR_TILE joins them all (a user tile's flag).  BAR_TILE was 3 before there
// could be a third consumer; it stays there while 3 is free.  Ping-pong:
// BAR_LOADED + c, "warp group c has seen all of its item's k-tiles loaded"
// (its 128 threads arrive, the other warp group's 128 wait).
constexpr int BAR_TILE = CONSUMERS <= 2 ? 3 : CONSUMERS + 1;
constexpr int BAR_LOADED = BAR_TILE + 1;

static_assert(BN % 32 == 0 && BN >= 64 && BN <= 320, "BN must be 64..320 in steps of 32");
static_assert(TRANS == 0 || TRANS == 1, "TRANS is 0 or 1");
static_assert(TRIM % 8 == 0 && TRIM >= 0 && TRIM < 32, "TRIM is 0..24 by 8");
static_assert(CONSUMERS >= 1 && CONSUMERS <= 4, "one to four consumer warp groups");
static_assert(W_LOAD_ROWS <= 256, "a W box has at most 256 rows");
static_assert(!PINGPONG || CONSUMERS == 2, "ping-pong needs two consumer warp groups");
static_assert(STAGES > MMA_LAG && STAGES <= 8, "STAGES must be MMA_LAG + 1..8");
static_assert(BK == 32 || BK == 64 || BK == 128, "BK must be 32, 64 or 128");
static_assert(SBUF == 2 || (SBUF == 4 && EPI == 1),
              "SBUF is 2, or 4 with EPI=1");
static_assert(CLUSTER == 1 || (CLUSTER == 2 && (W_MCAST ? TILE_M % 16 == 0 : E_BOXES % 2 == 0)),
              "CLUSTER=2 halves E's boxes, or W's rows in 16-row steps (TRANS=1 or CLB=1)");
static_assert(CLB == 0 || (CLB == 1 && CLUSTER == 2 && SPLITK == 1),
              "CLB=1 takes CLUSTER=2 and SPLITK=1");
static_assert(STAGE_BYTES % 1024 == 0 && W_BYTES % 1024 == 0 && (BK * E_ROW) % 512 == 0,
              "stages keep the swizzle atoms aligned");
static_assert(NACC % 4 == 0, "user_res moves 16-byte vectors");
static_assert(NACC + (URES ? (NACC + 7) / 8 * 4 : 0) + 40 <= CONSUMER_REGS,
              "accumulators, URES=1's prefetch and ~40 more must fit a consumer's registers");
static_assert(BW1 / 2 + 32 <= LAUNCH_REGS,
              "each wgmma's accumulators and ~30 more fit the launch bound (C7602)");
static_assert(SPLITK >= 1 && SPLITK <= 4, "SPLITK must be 1..4");
static_assert(USPLIT == 1 || USPLIT == 2 || USPLIT == 4 || USPLIT == 8, "USPLIT must be 1, 2, 4 or 8");
static_assert(!UFOLD || (FUSE && !URES && SPLITK == 1 && USPLIT == 1), "UFOLD=1 takes FUSE=1, URES=0, no split");
static_assert(USPLIT == 1 || SPLITK == 1, "USPLIT and SPLITK share one workspace");
// A split tile's parts: the candidate tail's (SPLITK) or the user tiles' (USPLIT); one of them at most.
constexpr int NPARTS = SPLITK > 1 ? SPLITK : USPLIT;
static_assert(BAR_TILE <= 15 && (!PINGPONG || BAR_LOADED + 1 <= 15), "16 named barriers");

enum { PHASE_USER = 0, PHASE_CAND = 1, PHASE_BOTH = 2 };

#endif // KEVO_LCE_WS_CONFIG_CUH
