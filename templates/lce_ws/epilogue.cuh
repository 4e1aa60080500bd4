// lce_ws/epilogue.cuh — a candidate tile's epilogue (consumer_finish): its
// accumulators (+ URES=1's user_res) rounded to the storage dtype, staged
// in 64x64 swizzled boxes in the warp group's SBUF buffers (TRANS=1: each
// 8x8 block transposed by stmatrix), and stored by TMA (EPI=1) or by
// 16-byte stores (EPI=0, a last box of BW % 64, STACK=1's boxes that cross
// candidates).  Inlined ahead of lce_ws.cu after lce_ws/split.cuh (space
// "include").
#ifndef KEVO_LCE_WS_EPILOGUE_CUH
#define KEVO_LCE_WS_EPILOGUE_CUH
#ifndef KEVO_LCE_WS_CONSUMER_CUH
#include "lce_ws/consumer.cuh"
#endif

// Consumer: a candidate tile's epilogue: rounded, staged in 64x64 swizzled
// boxes, stored (the tile's own columns only) by TMA (EPI=1, up to SBUF - 1
// stores in flight) or 16-byte stores (EPI=0, and TRANS=1's last box when
// BW % 64: its 64 rows would write the next tile's).  boxes counts the
// boxes staged so far (it cycles through the warp group's SBUF buffers).
__device__ __forceinline__ void consumer_finish(const kevo_lce_args &a, const ws_smem &sm, const ws_item &it,
                                                const ws_cons &w, const ws_tile &tile, const ws_frag &f, int &boxes)
{
    const int M = tile.M, N = tile.N, row0 = tile.row0;
    const int fr = w.warp * 16 + (w.lane >> 2), fc = 2 * (w.lane & 3); // fragment row / column
    // accumulators e and e + 1 of a tile (+ user_res with URES=1)
    auto result = [&](int e) -> float2 {
        float2 r = make_float2(f.acc[e], f.acc[e + 1]);
#if URES
        const float2 ur = unpack2(reinterpret_cast<const elem2_t *>(&f.pre[e / UVEC])[(e % UVEC) / 2]);
        r.x += ur.x;
        r.y += ur.y;
#endif
        return r;
    };
    constexpr bool PART_BOX = EPI == 1 && BW % 64 != 0;
#if STACK
    // the warp group's first row of the stack: column sc of candidate sb
    const int NP = stack_pitch(a), sr = it.bb * TILE_R + row0, sb = sr / NP, sc = sr - sb * NP;
#endif
#pragma unroll
    for (int box = 0; box < OUT_BOXES; ++box) {
        unsigned char *buf = sm.staging + (w.c * SBUF + (boxes & (SBUF - 1))) * BOX_BYTES;
#if STACK
        // nor where the warp group's 64 columns of N cross from one candidate
        // to the next (a box stores to one candidate; storing it twice, once
        // at a negative column, raised an illegal instruction on the H200).
        // Inside one candidate's pitch, TMA drops the columns past N.
        const bool by_tma = EPI == 1 && !(PART_BOX && box == OUT_BOXES - 1) && sc + 64 <= NP;
#else
        const bool by_tma = EPI == 1 && !(PART_BOX && box == OUT_BOXES - 1);
#endif
        if constexpr (EPI == 1) {
            // the TMA store that last read this buffer (SBUF boxes ago) is
            // done reading it; the SBUF - 1 after it may still be.  A box
            // stored without TMA commits no group, so before one every
            // store is waited for: the count holds again after it
            if (w.tid == 0 && by_tma)
                tma_store_wait_read<SBUF - 1>();
            else if (w.tid == 0)
                tma_store_wait_read<0>();
            wg_sync(1 + w.c);
        }
        if constexpr (TRANS) {
            // The box holds rows 64 * box.. of M by this warp group's 64
            // columns of N.  stmatrix .trans writes each 8x8 block of the
            // fragment (rows: 8 columns of N, 16 * warp + 8h..; columns:
            // 8 rows of M, 8j..) as 8 rows of M of 8 consecutive columns
            // of N: 16-byte unit 2 * warp + h of rows 8 * (j % 8) + q.
            // Lane 8t + q gives row q of block t (j = 8 * box + jj + t / 2,
            // h = t % 2); register t holds accumulators 4j + 2h and + 1.
            const unsigned sbuf = static_cast<unsigned>(__cvta_generic_to_shared(buf));
            const int t = w.lane >> 3, q = w.lane & 7;
            auto pair = [&](int e) -> unsigned { // accumulators e, e + 1, rounded (+ user_res)
                union { elem2_t h; unsigned u; } x;
                const float2 r = result(e);
                x.h = pack2(r.x, r.y);
                return x.u;
            };
#pragma unroll
            for (int jj = 0; jj < 8; jj += 2) {
                const int j = 8 * box + jj;
                if (j >= BW / 8)
                    continue; // past the tile: the last box of BW % 64
                const int r = 8 * (jj + (t >> 1)) + q, unit = 2 * w.warp + (t & 1);
                const unsigned addr = sbuf + r * 128 + ((unit ^ q) << 4);
                if (j + 1 < BW / 8)
                    stmatrix_x4_trans(addr, pair(4 * j), pair(4 * j + 2), pair(4 * j + 4), pair(4 * j + 6));
                else
                    stmatrix_x2_trans(addr, pair(4 * j), pair(4 * j + 2));
            }
        } else {
#pragma unroll
            for (int q = 0; q < 16; ++q) {
                const int r = fr + 8 * (q & 1), unit = q >> 1; // 16-byte unit within the 128-byte row
                const int j = 8 * box + unit;
                if (j >= BW / 8)
                    continue; // past the tile: the last box of BW % 64
                const int e = 4 * j + 2 * (q & 1); // first of the two accumulators
                const float2 y = result(e);
                const elem2_t v = pack2(y.x, y.y);
                *reinterpret_cast<elem2_t *>(buf + r * 128 + ((unit ^ (r & 7)) << 4) + 2 * fc) = v;
            }
        }
        if (by_tma) {
            tma_store_fence();
            wg_sync(1 + w.c);
#if STACK
            if (w.tid == 0) // the box of candidate sb (one past B: nothing stored)
                tma_store_3d(&a.tm_out, sc, it.m0 + 64 * box, sb, buf);
#else
            if (w.tid == 0) // {column of N, row of M, b} of the box
                tma_store_3d(&a.tm_out, TRANS ? row0 : it.n0 + 64 * box, TRANS ? it.m0 + 64 * box : row0, it.bb, buf);
#endif
        } else {
            wg_sync(1 + w.c);
            elem_t *out = static_cast<elem_t *>(a.out) + (STACK ? 0 : (size_t)it.bb * M * N);
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                // row r of M, 16-byte unit of 8 columns of N
                const int idx = w.tid + 128 * q, r = idx / 8, unit = idx % 8;
                const int gm = TRANS ? it.m0 + 64 * box + r : row0 + r;
                int gn = TRANS ? row0 + 8 * unit : it.n0 + 64 * box + 8 * unit;
                const bool in_tile = 64 * box + (TRANS ? r : 8 * unit) < BW;
#if STACK
                // row gn of the tile: a column of candidate k's N in the stack
                const int k = (it.bb * TILE_R + gn) / NP;
                gn += it.bb * TILE_R - k * NP;
                if (gm < M && k < a.B && gn < a.N && in_tile)
                    *reinterpret_cast<uint4 *>(out + ((size_t)k * M + gm) * a.N + gn) =
                        *reinterpret_cast<const uint4 *>(buf + r * 128 + ((unit ^ (r & 7)) << 4));
#else
                if (gm < M && gn < N && in_tile)
                    *reinterpret_cast<uint4 *>(out + (size_t)gm * N + gn) =
                        *reinterpret_cast<const uint4 *>(buf + r * 128 + ((unit ^ (r & 7)) << 4));
#endif
            }
        }
        ++boxes;
    }
}

#endif // KEVO_LCE_WS_EPILOGUE_CUH
