#!/usr/bin/env python3
"""bench/peers.py — the peers a PyTorch user really runs for kevo's two IKBO
ops, checked against an fp32 reference and timed beside kevo on one GPU.

  peers.py lce [--shape S] [--dtype fp16|bf16] [--kevo-ms X | --kevo-db DB] [--json OUT.json]
  peers.py fa  [--shape S] [--dtype fp16|bf16] [--kevo-ms X | --kevo-db DB] [--json OUT.json]
  peers.py --selftest     CPU only: the Triton kernels under TRITON_INTERPRET=1 and
                          every torch form at tiny shapes against the fp32 reference

Shapes are kevo's text (missing keys keep the default): lce
B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70; fa Bc=2048,H=2,Sq=64,D=128,
Skv=2048,ratio=64; `U=` may replace `ratio=` (U = ceil(B/ratio), the sorted
map cand_to_user[b] = min(b // ratio, U - 1), as kevo makes it).

ikbo_lce  out[b] = W_cand @ E_cand[b] + W_user @ E_user[cand_to_user[b]]
  stage0               torch.matmul(cat(W_user, W_cand), E) on E = cat(E_user[c2u], E_cand)
                       built beforehand (the pre-broadcast E, what a user runs today)
  stage0_bcast         the same with the index/cat of E in each call
  decomposed_unpadded  wc @ ec + index_select(wu @ eu, 0, c2u), K as it is
  decomposed_padded    the same on copies of W and E with K zero-padded to a multiple of 8
  baddbmm_padded       baddbmm(index_select(wu_p @ eu_p, 0, c2u), wc_p.expand(B,-1,-1), ec_p)
  triton_ikbo          FBGEMM's IKBO stage-3 form: cuBLAS user GEMM (in the call), then a
                       Triton candidate GEMM whose epilogue adds user_res[c2u[b]] (autotuned)
  cand_gemm_alone      wc_p @ ec_p: the GEMM floor; a reference figure, not a peer
ikbo_fa   out[c] = softmax(Q[c] K[u]^T / sqrt(D)) V[u], u = cand_to_user[c]
  sdpa_gathered        K/V gathered per candidate beforehand ([Bc,Skv,H,D] by index_select
                       on the user dimension, viewed [Bc,H,Skv,D]), SDPA, flash backend
  sdpa_gathered_cudnn  the same with the cuDNN backend (error noted if it refuses)
  sdpa_gather          flash SDPA with the gather in each call
  triton_ikbo_fa       a Triton IKBO flash-attention forward: each program loads K/V of
                       its candidate's user directly (no gather), online softmax
Gathered forms run in chunks of candidates when K/V gathered would pass 40% of the free
GPU memory; their time is then the sum of the chunks' (the output says so).

Each form is checked (||out - ref|| / ||ref|| <= 5e-3 fp16, 2e-2 bf16; FA on 64
candidates spread over the batch) and timed with triton.testing.do_bench (warmup 25
ms, rep 100 ms, median, L2 flushed).  A FAILED or erroring form never counts as best.
vs_best_peer = the fastest checked peer's ms / kevo's ms.  --kevo-db DB runs
`build/kevo verify --db DB --run RUN --time` ($KEVO_BIN overrides the binary) on the
latest GPU run of DB at this op, shape and dtype, before the PyTorch timings and after
them; kevo's ms is the median of the two (their mean).  If verify fails, kevo is
reported missing and the exit status is 1.
"""
import argparse
import gc
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import types

if "--selftest" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = {"lce": "ikbo_lce", "fa": "ikbo_fa"}
DEFAULTS = {"lce": ("B", {"B": 1024, "M": 433, "N": 256, "Ku": 1178, "Kc": 866}, 70),
            "fa": ("Bc", {"Bc": 2048, "H": 2, "Sq": 64, "D": 128, "Skv": 2048}, 64)}
TOL = {"fp16": 5e-3, "bf16": 2e-2}
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
FA_CHECK_CANDS = 64


def cdiv(a, b):
    return -(-a // b)


# ---- shapes ----

def parse_shape(op, text):
    """kevo's shape text -> (every key with ratio and U, the keys a run must match: given ratio/U only)."""
    batch, base, default_ratio = DEFAULTS[op]
    s, given = dict(base), {}
    for kv in filter(None, (text or "").split(",")):
        k, v = kv.split("=")
        if k.strip() not in s and k.strip() not in ("ratio", "U"):
            raise ValueError(f"unknown shape key '{k}' for {OPS[op]}")
        given[k.strip()] = int(v)
    s.update({k: v for k, v in given.items() if k in s})
    if "U" in given:
        s["U"] = given["U"]
        s["ratio"] = given.get("ratio", cdiv(s[batch], s["U"]))
    else:
        s["ratio"] = given.get("ratio", default_ratio)
        s["U"] = cdiv(s[batch], s["ratio"])
    if min(s.values()) < 1 or s["U"] > s[batch]:
        raise ValueError(f"bad shape {text!r}: every key must be >= 1 and U <= {batch}")
    return s, list(base) + ([k for k in ("ratio", "U") if k in given] or ["ratio"])


def shape_text(s):
    return ",".join(f"{k}={v}" for k, v in s.items())


def user_map(n, s, dev):
    return (torch.arange(n, device=dev) // s["ratio"]).clamp_(max=s["U"] - 1).to(torch.int32)


def smem_limit():
    if not torch.cuda.is_available():
        return 232448
    return getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "shared_memory_per_block_optin",
                   232448)


# ---- the Triton IKBO LCE kernel: candidate GEMM, user result added in the epilogue ----

@triton.heuristics({"EVEN_K": lambda a: a["K"] % a["BK"] == 0})
@triton.jit
def _lce_kernel(W, E, R, MAP, O, M, N, K, B, s_wm, s_wk, s_eb, s_ek, s_en, s_rb, s_rm, s_rn, s_ob, s_om, s_on,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    n_tn = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * n_tn
    b = (pid // tiles).to(tl.int64)  # the tiles of one candidate are neighbours: E_cand[b] shared in L2
    t = pid % tiles
    rm = (t // n_tn) * BM + tl.arange(0, BM)
    rn = (t % n_tn) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    w_ptrs = W + (rm % M)[:, None] * s_wm + rk[None, :] * s_wk  # rows/cols wrapped: only the store masks M, N
    e_ptrs = E + b * s_eb + rk[:, None] * s_ek + (rn % N)[None, :] * s_en
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    k_full = (K // BK) * BK  # whole K tiles unmasked (the pipelined loop), then one masked tail
    for k0 in range(0, k_full, BK):
        a = tl.load(w_ptrs)
        e = tl.load(e_ptrs)
        acc = tl.dot(a, e, acc)
        w_ptrs += BK * s_wk
        e_ptrs += BK * s_ek
    if not EVEN_K:
        a = tl.load(w_ptrs, mask=rk[None, :] < K - k_full, other=0.0)
        e = tl.load(e_ptrs, mask=rk[:, None] < K - k_full, other=0.0)
        acc = tl.dot(a, e, acc)
    u = tl.load(MAP + b).to(tl.int64)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    r = tl.load(R + u * s_rb + rm[:, None] * s_rm + rn[None, :] * s_rn, mask=mask, other=0.0)
    acc += r.to(tl.float32)
    tl.store(O + b * s_ob + rm[:, None] * s_om + rn[None, :] * s_on, acc.to(O.dtype.element_ty), mask=mask)


LCE_CONFIGS = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=st, num_warps=nw) for bm, bn, bk, st, nw in [
    (128, 256, 64, 3, 8), (128, 256, 32, 4, 8), (128, 256, 32, 3, 8), (128, 128, 64, 5, 8), (128, 128, 64, 4, 8),
    (128, 128, 64, 3, 4), (128, 128, 32, 4, 4), (128, 128, 32, 5, 4), (128, 64, 64, 4, 4), (128, 64, 32, 5, 4),
    (64, 256, 64, 3, 8), (64, 256, 32, 4, 4), (64, 128, 64, 4, 4), (64, 128, 32, 5, 4), (64, 64, 64, 4, 4),
    (64, 64, 32, 5, 4)]]


def lce_prune(configs, named_args, **kwargs):
    """Drop configs whose pipeline buffers pass shared memory, or whose tile is far wider than M or N."""
    a = {**named_args, **kwargs}  # the autotuner passes keyword arguments apart
    keep = [c for c in configs
            if c.num_stages * (c.kwargs["BM"] + c.kwargs["BN"]) * c.kwargs["BK"] * 2 <= smem_limit()
            and c.kwargs["BM"] <= max(64, triton.next_power_of_2(a["M"]))
            and c.kwargs["BN"] <= max(64, triton.next_power_of_2(a["N"]))]
    return keep or [configs[-1]]


_lce_tuned = triton.autotune(LCE_CONFIGS, key=["M", "N", "K", "B"],
                             prune_configs_by={"early_config_prune": lce_prune})(_lce_kernel)


def ikbo_lce_triton(wc, ec, ures, c2u, config=None):
    """out[b] = wc[:, :K] @ ec[b, :K] + ures[c2u[b]], K = the smaller of wc's and ec's (padded copies welcome)."""
    M, B, N, K = wc.shape[0], ec.shape[0], ec.shape[2], min(wc.shape[1], ec.shape[1])
    out = torch.empty((B, M, N), device=ec.device, dtype=ec.dtype)
    args = (wc, ec, ures, c2u, out, M, N, K, B, *wc.stride(), *ec.stride(), *ures.stride(), *out.stride())
    grid = lambda meta: (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]) * B,)  # noqa: E731
    if config is None:
        _lce_tuned[grid](*args)
    else:
        _lce_kernel[grid](*args, **config)
    return out


# ---- the Triton IKBO flash-attention forward: K/V of the candidate's user, no gather ----

@triton.heuristics({"EVEN_N": lambda a: a["Skv"] % a["BLOCK_N"] == 0})
@triton.jit
def _fa_kernel(Q, K, V, MAP, O, Sq, Skv, s_qt, s_qh, s_kt, s_kh, s_vt, s_vh, s_ot, s_oh, qk_scale,
               HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr):
    c = tl.program_id(0).to(tl.int64)  # candidates fastest: a user's candidates run together, K/V in L2
    h = tl.program_id(1)
    rm = tl.program_id(2) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_D)
    rn = tl.arange(0, BLOCK_N)
    u = tl.load(MAP + c).to(tl.int64)
    qmask = (rm < Sq)[:, None]
    q = tl.load(Q + (c * Sq + rm)[:, None] * s_qt + h * s_qh + rd[None, :], mask=qmask, other=0.0)
    k_base = K + u * Skv * s_kt + h * s_kh
    v_base = V + u * Skv * s_vt + h * s_vh
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    for start in range(0, Skv, BLOCK_N):
        kn = start + rn
        if EVEN_N:
            k = tl.load(k_base + kn[None, :] * s_kt + rd[:, None])
        else:
            k = tl.load(k_base + kn[None, :] * s_kt + rd[:, None], mask=(kn < Skv)[None, :], other=0.0)
        s = tl.dot(q, k) * qk_scale  # log2 domain
        if not EVEN_N:
            s = tl.where((kn < Skv)[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if EVEN_N:
            v = tl.load(v_base + kn[:, None] * s_vt + rd[None, :])
        else:
            v = tl.load(v_base + kn[:, None] * s_vt + rd[None, :], mask=(kn < Skv)[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + (c * Sq + rm)[:, None] * s_ot + h * s_oh + rd[None, :], acc.to(O.dtype.element_ty), mask=qmask)


FA_CONFIGS = [triton.Config({"BLOCK_N": bn}, num_warps=nw, num_stages=st)
              for bn in (64, 128) for nw in (4, 8) for st in (2, 3, 4)]


def fa_prune(configs, named_args, **kwargs):
    a = {**named_args, **kwargs}  # HEAD_D and BLOCK_M come as keyword arguments
    D, bm = a["HEAD_D"], a["BLOCK_M"]
    return [c for c in configs if c.num_stages * 2 * c.kwargs["BLOCK_N"] * D * 2 + bm * D * 2 <= smem_limit()] \
        or [configs[0]]


_fa_tuned = triton.autotune(FA_CONFIGS, key=["Sq", "Skv", "HEAD_D", "BLOCK_M"],
                            prune_configs_by={"early_config_prune": fa_prune})(_fa_kernel)


def ikbo_fa_triton(q, k, v, c2u, Sq, Skv, config=None, block_m=None):
    """q [n*Sq, H, D], k/v [U*Skv, H, D], c2u [n] -> out [n*Sq, H, D]."""
    T, H, D = q.shape
    assert D in (16, 32, 64, 128, 256) and q.stride(2) == k.stride(2) == v.stride(2) == 1
    out = torch.empty_like(q)
    bm = block_m or min(128, max(16, triton.next_power_of_2(Sq)))
    args = (q, k, v, c2u, out, Sq, Skv, q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0),
            v.stride(1), out.stride(0), out.stride(1), 1.4426950408889634 / math.sqrt(D))
    grid = (T // Sq, H, triton.cdiv(Sq, bm))
    if config is None:
        _fa_tuned[grid](*args, HEAD_D=D, BLOCK_M=bm)
    else:
        _fa_kernel[grid](*args, HEAD_D=D, BLOCK_M=bm, **config)
    return out


# ---- ikbo_lce: inputs, reference, forms (each returns fn: fn() -> out [B, M, N]) ----

Ctx = types.SimpleNamespace  # inputs of one op at one shape, and what its forms share


def lce_setup(s, dt, dev, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    rn = lambda *shape: torch.randn(shape, generator=g, device=dev, dtype=dt)  # noqa: E731
    B, M, N, Ku, Kc, U = (s[k] for k in ("B", "M", "N", "Ku", "Kc", "U"))
    c2u = user_map(B, s, dev)
    return Ctx(s=s, B=B, dev=dev, wu=rn(M, Ku) / math.sqrt(Ku), wc=rn(M, Kc) / math.sqrt(Kc), eu=rn(U, Ku, N),
               ec=rn(B, Kc, N), c2u=c2u, idx=c2u.long(), pad=None, triton_config=None, note="")


def padded(c):
    """Copies of W and E with K zero-padded to a multiple of 8 (made once, outside any timing)."""
    if c.pad is None:
        def p(w, e):
            kp = -w.shape[1] % 8
            return (w, e) if kp == 0 else (F.pad(w, (0, kp)), F.pad(e, (0, 0, 0, kp)))
        (wu, eu), (wc, ec) = p(c.wu, c.eu), p(c.wc, c.ec)
        c.pad = Ctx(wu=wu, eu=eu, wc=wc, ec=ec)
    return c.pad


def lce_rel_err(c, out):
    """||out - ref|| / ||ref||, the fp32 reference made chunk by chunk of candidates."""
    f, (M, N, Ku, Kc) = torch.float32, (c.s[k] for k in ("M", "N", "Ku", "Kc"))
    ch = max(1, (256 << 20) // ((Ku + Kc + 2 * M) * N * 4))
    wu, wc, num, den = c.wu.to(f), c.wc.to(f), 0.0, 0.0
    for lo in range(0, c.B, ch):
        ref = wc @ c.ec[lo:lo + ch].to(f) + wu @ c.eu.index_select(0, c.idx[lo:lo + ch]).to(f)
        num += torch.linalg.vector_norm(out[lo:lo + ch].to(f) - ref).item() ** 2
        den += torch.linalg.vector_norm(ref).item() ** 2
    return math.sqrt(num / den)


def lce_stage0(c):
    W, E = torch.cat([c.wu, c.wc], 1), torch.cat([c.eu.index_select(0, c.idx), c.ec], 1)
    return lambda: torch.matmul(W, E)


def lce_stage0_bcast(c):
    W = torch.cat([c.wu, c.wc], 1)
    return lambda: torch.matmul(W, torch.cat([c.eu.index_select(0, c.idx), c.ec], 1))


def lce_decomposed_unpadded(c):
    return lambda: c.wc @ c.ec + torch.index_select(c.wu @ c.eu, 0, c.idx)


def lce_decomposed_padded(c):
    p = padded(c)
    return lambda: p.wc @ p.ec + torch.index_select(p.wu @ p.eu, 0, c.idx)


def lce_baddbmm_padded(c):
    p = padded(c)
    return lambda: torch.baddbmm(torch.index_select(p.wu @ p.eu, 0, c.idx), p.wc.expand(c.B, -1, -1), p.ec)


def lce_triton_ikbo(c):
    p = padded(c)
    return lambda: ikbo_lce_triton(p.wc, p.ec, p.wu @ p.eu, c.c2u, config=c.triton_config)


def lce_cand_gemm_alone(c):
    p = padded(c)
    return lambda: p.wc @ p.ec


# name, form, counts as a peer (cand_gemm_alone is the GEMM floor, a reference figure)
LCE_PEERS = [("stage0", lce_stage0, True), ("stage0_bcast", lce_stage0_bcast, True),
             ("decomposed_unpadded", lce_decomposed_unpadded, True),
             ("decomposed_padded", lce_decomposed_padded, True), ("baddbmm_padded", lce_baddbmm_padded, True),
             ("triton_ikbo", lce_triton_ikbo, True), ("cand_gemm_alone", lce_cand_gemm_alone, False)]


# ---- ikbo_fa: inputs, reference, forms (each yields (lo, hi, fn): fn() -> out [hi-lo, Sq, H, D]) ----

def fa_setup(s, dt, dev, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    Bc, H, Sq, D, Skv, U = (s[k] for k in ("Bc", "H", "Sq", "D", "Skv", "U"))
    rn = lambda *shape: torch.randn(shape, generator=g, device=dev, dtype=dt)  # noqa: E731
    c = Ctx(s=s, Bc=Bc, H=H, Sq=Sq, D=D, Skv=Skv, dev=dev, q=rn(Bc * Sq, H, D), k=rn(U * Skv, H, D),
            v=rn(U * Skv, H, D), c2u=user_map(Bc, s, dev), triton_config=None, note="")
    c.idx = c.c2u.long()
    c.q4, c.k4, c.v4 = c.q.view(Bc, Sq, H, D), c.k.view(U, Skv, H, D), c.v.view(U, Skv, H, D)
    per = 2 * Skv * H * D * c.k.element_size()  # K and V gathered, per candidate
    free = torch.cuda.mem_get_info()[0] if dev == "cuda" else float("inf")
    n = Bc if Bc * per <= 0.4 * free else max(1, int(0.4 * free // per))
    c.chunks = [(lo, min(Bc, lo + n)) for lo in range(0, Bc, n)]
    if len(c.chunks) > 1:
        c.note = (f"K/V gathered would take {Bc * per / 2**30:.1f} GiB (> 40% of {free / 2**30:.1f} GiB free): "
                  f"gathered forms run in {len(c.chunks)} chunks of {n} candidates, their times summed")
    # the check: FA_CHECK_CANDS candidates spread over the batch (the first and last among them), in fp32
    c.check = torch.linspace(0, Bc - 1, min(Bc, FA_CHECK_CANDS), device=dev).round().long().unique()
    refs = []
    for part in c.check.split(8):
        qs = c.q4.index_select(0, part).float().transpose(1, 2)
        ks, vs = (t.index_select(0, c.idx[part]).float().transpose(1, 2) for t in (c.k4, c.v4))
        refs.append((torch.softmax(qs @ ks.transpose(-1, -2) / math.sqrt(D), -1) @ vs).transpose(1, 2))
    c.ref = torch.cat(refs)  # [n_check, Sq, H, D]
    return c


def _sdpa(q, k, v, backend):
    if q.device.type != "cuda":  # the CPU selftest: whatever SDPA picks there
        return F.scaled_dot_product_attention(q, k, v)
    with sdpa_kernel(getattr(SDPBackend, backend)):
        return F.scaled_dot_product_attention(q, k, v)


def _gather(c, lo, hi):
    """K/V of each candidate's user, [hi-lo, H, Skv, D] (a transposed view of [hi-lo, Skv, H, D])."""
    return (t.index_select(0, c.idx[lo:hi]).transpose(1, 2) for t in (c.k4, c.v4))


def _fa_gathered(c, backend):
    for lo, hi in c.chunks:
        qh = c.q4[lo:hi].transpose(1, 2)
        kg, vg = _gather(c, lo, hi)
        yield lo, hi, (lambda: _sdpa(qh, kg, vg, backend).transpose(1, 2))
        kg = vg = None  # freed before the next chunk's gather


def fa_sdpa_gathered(c):
    return _fa_gathered(c, "FLASH_ATTENTION")


def fa_sdpa_gathered_cudnn(c):
    return _fa_gathered(c, "CUDNN_ATTENTION")


def fa_sdpa_gather(c):
    for lo, hi in c.chunks:
        qh = c.q4[lo:hi].transpose(1, 2)
        yield lo, hi, (lambda: _sdpa(qh, *_gather(c, lo, hi), "FLASH_ATTENTION").transpose(1, 2))


def fa_triton_ikbo(c):
    yield 0, c.Bc, (lambda: ikbo_fa_triton(c.q, c.k, c.v, c.c2u, c.Sq, c.Skv, config=c.triton_config)
                    .view(c.Bc, c.Sq, c.H, c.D))


FA_PEERS = [("sdpa_gathered", fa_sdpa_gathered, True), ("sdpa_gathered_cudnn", fa_sdpa_gathered_cudnn, True),
            ("sdpa_gather", fa_sdpa_gather, True), ("triton_ikbo_fa", fa_triton_ikbo, True)]


# ---- running the forms ----

def bench(fn):
    from triton.testing import do_bench
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def free_memory():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def check_text(r):
    return r["status"] if r["rel_err"] is None else f"{r['status']} {r['rel_err']:.2e}"


def run_form(op, c, name, form, is_peer, tol, timing):
    """Check one form against the reference, then time it; any exception (out of memory, a backend that
    refuses) is the form's status "error" and the others go on."""
    r = {"status": "error", "ms": None, "rel_err": None, "peer": is_peer, "note": ""}
    try:
        if op == "lce":
            fn = form(c)
            out = fn()
            if is_peer:
                r["rel_err"] = lce_rel_err(c, out)
            del out
            r["ms"] = bench(fn) if timing else None
            del fn
        else:
            num = den = ms = 0.0
            chunks = 0
            for lo, hi, fn in form(c):
                out = fn()
                sel = ((c.check >= lo) & (c.check < hi)).nonzero().flatten()
                if len(sel):
                    ref = c.ref.index_select(0, sel)
                    num += torch.linalg.vector_norm(out.index_select(0, c.check[sel] - lo).float() - ref).item() ** 2
                    den += torch.linalg.vector_norm(ref).item() ** 2
                del out
                ms += bench(fn) if timing else 0.0
                chunks += 1
                del fn
            r["rel_err"], r["ms"] = math.sqrt(num / den), ms if timing else None
            r["note"] = f"sum of {chunks} chunks" if chunks > 1 else ""
        r["status"] = ("ok" if r["rel_err"] <= tol else "FAILED") if is_peer else "reference figure"  # NaN fails
        if name.startswith("triton"):
            cfg = c.triton_config or tuned_config(_lce_tuned if op == "lce" else _fa_tuned)
            r["note"] = f"{r['note']} {cfg}".strip()
    except Exception as e:
        r["note"], r["ms"] = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}", None
    free_memory()
    return r


def tuned_config(fn):
    c = getattr(fn, "best_config", None)
    return "" if c is None else f"{c.kwargs} warps {c.num_warps} stages {c.num_stages}"


def run_peers(op, s, dtype, dev, timing=True, triton_config=None, log=print, skip=()):
    c = (lce_setup if op == "lce" else fa_setup)(s, DTYPES[dtype], dev)
    c.triton_config = triton_config
    notes = [c.note] if c.note else []
    for n in notes:
        log(n)
    res = {}
    for name, form, is_peer in (LCE_PEERS if op == "lce" else FA_PEERS):
        if name not in skip:
            r = res[name] = run_form(op, c, name, form, is_peer, TOL[dtype], timing)
            log(f"  {name}: {check_text(r)}, ms {r['ms']} {r['note']}".rstrip())
    del c
    free_memory()
    return res, notes


def flops(op, s):
    if op == "lce":  # kevo's count (kernels/ikbo_lce/spec.c)
        return 2.0 * s["M"] * s["N"] * (s["B"] * s["Kc"] + s["U"] * s["Ku"]) + s["B"] * s["M"] * s["N"]
    return 4.0 * s["Bc"] * s["H"] * s["Sq"] * s["D"] * s["Skv"]


# ---- kevo, from its DB ----

KEVO_LINE = re.compile(r"device [^\n]*?: ([0-9.]+) ms \[[^\n]*")  # verify's "  device NAME: 0.4050 ms [lo, hi], ..."


def kevo_run_id(db, op, s, match, dtype):
    """The latest GPU run of db at op, dtype and the shape (on the keys in match) that has a best
    candidate (best_id), else the latest such run at all (older DBs leave best_id empty), or None."""
    con = sqlite3.connect(f"file:{os.path.abspath(db)}?mode=ro", uri=True)
    rows = con.execute("select id, shape, dtype, best_id from runs where op = ? and compile_only = 0 order by id",
                       (OPS[op],)).fetchall()
    con.close()
    hits = []
    for rid, rshape, rdt, best in rows:
        try:
            have = parse_shape(op, rshape)[0]
        except ValueError:
            continue
        if rdt == dtype and all(have[k] == s[k] for k in match):
            hits.append((best is not None, rid))
    return max(hits)[1] if hits else None


def kevo_verify(db, run):
    """kevo's median ms from `kevo verify --time` of run's best candidate, or None (said why)."""
    exe = os.environ.get("KEVO_BIN", os.path.join(REPO, "build", "kevo"))
    env = dict(os.environ)
    env.setdefault("KEVO_HOME", REPO)
    try:
        p = subprocess.run([exe, "verify", "--db", os.path.abspath(db), "--run", str(run), "--time"],
                           capture_output=True, text=True, env=env, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"kevo verify: {e}")
        return None
    m = KEVO_LINE.search(p.stdout + p.stderr)
    if p.returncode != 0 or not m:
        print(f"kevo verify --run {run} failed (rc {p.returncode}):\n{(p.stdout + p.stderr)[-2000:]}")
        return None
    print(f"kevo verify --run {run}: {m.group(0)}")
    return float(m.group(1))


# ---- the report ----

def report(op, s, dtype, res, notes, kevo, args):
    fl = flops(op, s)
    fl_of = lambda n: 2.0 * s["B"] * s["M"] * s["N"] * s["Kc"] if n == "cand_gemm_alone" else fl  # noqa: E731
    tf = lambda ms, n="": f"{fl_of(n) / ms / 1e9:.1f}" if ms else "-"  # noqa: E731
    best = min(((r["ms"], n) for n, r in res.items() if r["peer"] and r["status"] == "ok" and r["ms"]),
               default=None)
    kevo_ms = kevo.get("ms")
    vs = best[0] / kevo_ms if best and kevo_ms else None
    print(f"\n{OPS[op]} {shape_text(s)} {dtype}" + "".join(f"\n{n}" for n in notes))
    print("| peer | ms | TFLOP/s | check | note |\n|---|---|---|---|---|")
    for n, r in res.items():
        ms = f"{r['ms']:.4f}" if r["ms"] else "-"
        print(f"| {n} | {ms} | {tf(r['ms'], n)} | {check_text(r)} | {r['note']} |")
    if kevo.get("source"):
        print(f"| kevo | {f'{kevo_ms:.4f}' if kevo_ms else 'missing'} | {tf(kevo_ms)} | | {kevo['source']} |")
    print(f"best_peer {best[1]} {best[0]:.4f}" if best else "best_peer none (no peer passed its check)")
    if vs is not None:
        print(f"vs_best_peer {vs:.3f}x ({best[1]} {best[0]:.4f} ms / kevo {kevo_ms:.4f} ms)")
    if args.json:
        doc = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
               "torch": torch.__version__, "triton": triton.__version__, "op": OPS[op], "shape_arg": args.shape,
               "shape": shape_text(s), "dtype": dtype, "flops": fl, "notes": notes,
               "peers": {n: dict(r, tflops=fl_of(n) / r["ms"] / 1e9 if r["ms"] else None) for n, r in res.items()},
               "kevo_ms": kevo_ms, "kevo": kevo, "best_peer": best[1] if best else None,
               "best_peer_ms": best[0] if best else None, "vs_best_peer": vs}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("op", choices=sorted(OPS))
    ap.add_argument("--shape", default="")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="fp16")
    k = ap.add_mutually_exclusive_group()
    k.add_argument("--kevo-ms", type=float)
    k.add_argument("--kevo-db")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    s, match = parse_shape(args.op, args.shape)
    if not torch.cuda.is_available():
        sys.exit("peers.py needs a CUDA GPU (--selftest runs on the CPU)")
    print(f"GPU: {torch.cuda.get_device_name()} (torch {torch.__version__}, triton {triton.__version__})")
    torch.backends.cuda.matmul.allow_tf32 = False  # the fp32 references
    torch.backends.cudnn.allow_tf32 = False
    kevo, runs = {}, []
    if args.kevo_ms:
        kevo = {"ms": args.kevo_ms, "source": "--kevo-ms"}
    elif args.kevo_db:
        rid = kevo_run_id(args.kevo_db, args.op, s, match, args.dtype) if os.path.exists(args.kevo_db) else None
        kevo = {"ms": None, "run": rid, "source": f"missing: no GPU run of {OPS[args.op]} at this shape and dtype "
                                                  f"in {args.kevo_db}"}
        if rid is not None:
            runs.append(kevo_verify(args.kevo_db, rid))  # before the PyTorch timings
    res, notes = run_peers(args.op, s, args.dtype, "cuda")
    if kevo.get("run") is not None:
        if runs[0] is not None:
            runs.append(kevo_verify(args.kevo_db, kevo["run"]))  # and after them
        kevo["runs_ms"] = runs
        if len(runs) == 2 and runs[1] is not None:
            kevo["ms"] = (runs[0] + runs[1]) / 2  # the median of two
            kevo["source"] = (f"kevo verify --run {kevo['run']}: median of 2 runs, before and after the PyTorch "
                              f"timings ({runs[0]:.4f}, {runs[1]:.4f} ms)")
        else:
            kevo["source"] = f"missing: kevo verify --run {kevo['run']} failed"
    report(args.op, s, args.dtype, res, notes, kevo, args)
    return 1 if args.kevo_db and kevo.get("ms") is None else 0


# ---- the CPU selftest ----

def selftest():
    bad = []

    def ok(cond, what):
        print(("ok      " if cond else "FAILED  ") + what)
        bad.extend([] if cond else [what])

    s, m = parse_shape("lce", "B=1024,ratio=70")
    ok(s["U"] == 15 and m == ["B", "M", "N", "Ku", "Kc", "ratio"], f"parse lce: {shape_text(s)}")
    s, m = parse_shape("fa", "Bc=2047,U=32")
    ok(s["ratio"] == 64 and "U" in m and "ratio" not in m, f"parse fa with U=: {shape_text(s)}")
    ok(user_map(7, parse_shape("lce", "B=7,U=3")[0], "cpu").tolist() == [0, 0, 0, 1, 1, 1, 2], "sorted map, U=3")
    line = "  device NVIDIA H100 80GB HBM3: 0.4050 ms [0.4041, 0.4062], 577.0 TFLOP/s (75% of the cuBLAS peak)"
    ok(float(KEVO_LINE.search("peers: x\n" + line).group(1)) == 0.405, "kevo verify's line read")
    fx = os.path.join(REPO, "tests/fixtures/export/kevo_h200.db")
    if os.path.exists(fx):
        ok(kevo_run_id(fx, "lce", *parse_shape("lce", ""), "bf16") == 2, "run found in the export fixture (bf16: 2)")
        ok(kevo_run_id(fx, "fa", *parse_shape("fa", ""), "fp16") is None, "no fa run in an lce DB")
    nl = len(lce_prune(LCE_CONFIGS, {"M": 433, "N": 256}))
    ok(0 < nl and len(lce_prune(LCE_CONFIGS, {"M": 20, "N": 24})) == 2, f"lce prune keeps {nl} configs at M=433")
    nf = len(fa_prune(FA_CONFIGS, {}, HEAD_D=128, BLOCK_M=64))
    ok(0 < nf < len(FA_CONFIGS), f"fa prune keeps {nf} of {len(FA_CONFIGS)} configs at D=128")

    print("(on the CPU the SDPA forms run SDPA's CPU backend: flash and cuDNN are chosen only on a GPU)")
    # every config of each autotuner, pruned as on the GPU, run once (a stand-in for do_bench)
    for tuned in (_lce_tuned, _fa_tuned):
        tuned._do_bench = lambda fn, quantiles: (fn(), [1.0, 1.0, 1.0])[1]
    quiet = lambda *a: None  # noqa: E731
    # Triton 3.6's interpreter multiplies bf16 in tl.dot as raw uint16 bits: its Triton forms run fp16 only
    for dtype in ("fp16", "bf16"):
        s = parse_shape("lce", "B=6,M=20,N=24,Ku=13,Kc=11,ratio=2")[0]
        skip = ("triton_ikbo",) if dtype == "bf16" else ()
        for n, r in run_peers("lce", s, dtype, "cpu", timing=False, log=quiet, skip=skip)[0].items():
            ok(r["status"] == ("ok" if r["peer"] else "reference figure"), f"lce {dtype} {n}: {check_text(r)} "
                                                                           f"{r['note']}")
    # the kernel on unpadded, unaligned inputs (K = 37, W's rows 37 apart) and on padded ones (K 30 -> 32,
    # EVEN_K at BK 16 and 32), several tiles
    for kc, pad in ((37, False), (30, True)):
        c = lce_setup(parse_shape("lce", f"B=5,M=70,N=40,Ku=9,Kc={kc},ratio=2")[0], torch.float16, "cpu", 1)
        p = padded(c) if pad else c
        for bm, bn, bk, st, nw in ((64, 64, 32, 3, 4), (16, 32, 16, 2, 4), (128, 64, 16, 4, 8), (32, 16, 64, 2, 4)):
            cfg = dict(BM=bm, BN=bn, BK=bk, num_stages=st, num_warps=nw)
            e = lce_rel_err(c, ikbo_lce_triton(p.wc, p.ec, p.wu @ p.eu, c.c2u, config=cfg))
            ok(e <= TOL["fp16"], f"lce triton {'padded' if pad else 'unpadded'} K={p.wc.shape[1]} M=70 N=40 "
                                 f"tile {bm}x{bn}x{bk}: {e:.2e}")
    for shape, dtype, block_n, bm in [
            ("Bc=4,H=2,Sq=5,D=64,Skv=37,ratio=2", "fp16", None, None),
            ("Bc=4,H=2,Sq=5,D=64,Skv=37,ratio=2", "fp16", 16, None),
            ("Bc=4,H=2,Sq=5,D=64,Skv=37,ratio=2", "bf16", None, None),
            ("Bc=5,H=3,Sq=20,D=128,Skv=32,U=2", "fp16", 16, None),
            ("Bc=5,H=3,Sq=20,D=128,Skv=32,U=2", "fp16", 16, 16),
            ("Bc=7,H=1,Sq=64,D=64,Skv=200,ratio=3", "fp16", None, None)]:
        s = parse_shape("fa", shape)[0]
        cfg = None if block_n is None else dict(BLOCK_N=block_n, num_warps=4, num_stages=2)
        what = f"fa {shape} {dtype} BLOCK_N={block_n or 'tuned'}"
        if bm is None:
            skip = ("triton_ikbo_fa",) if dtype == "bf16" else ()
            for n, r in run_peers("fa", s, dtype, "cpu", False, cfg, quiet, skip)[0].items():
                ok(r["status"] == "ok", f"{what} {n}: {check_text(r)} {r['note']}")
        else:  # several q blocks per candidate
            c = fa_setup(s, DTYPES[dtype], "cpu")
            out = ikbo_fa_triton(c.q, c.k, c.v, c.c2u, c.Sq, c.Skv, config=cfg, block_m=bm)
            o = out.view(c.Bc, c.Sq, c.H, c.D).index_select(0, c.check).float()
            e = (torch.linalg.vector_norm(o - c.ref) / torch.linalg.vector_norm(c.ref)).item()
            ok(e <= TOL[dtype], f"{what} triton_ikbo_fa BLOCK_M={bm} (2 q blocks per candidate): {e:.2e}")
    # the report and its JSON; kevo verify run and read through a stand-in binary
    with tempfile.TemporaryDirectory() as d:
        fake = os.path.join(d, "kevo")
        with open(fake, "w") as f:
            f.write(f"#!/bin/sh\necho 'verify #7 lce_x p'\necho '{line}'\n")
        os.chmod(fake, 0o755)
        os.environ["KEVO_BIN"] = fake
        ok(kevo_verify("x.db", 7) == 0.405, "kevo verify run and read (stand-in binary)")
        res = {"a": {"status": "ok", "ms": 0.6, "rel_err": 1e-4, "peer": True, "note": ""},
               "b": {"status": "FAILED", "ms": 0.1, "rel_err": 0.5, "peer": True, "note": ""},
               "c": {"status": "reference figure", "ms": 0.3, "rel_err": None, "peer": False, "note": ""}}
        args = argparse.Namespace(json=os.path.join(d, "p.json"), shape="")
        report("lce", parse_shape("lce", "")[0], "fp16", res, [], {"ms": 0.4, "source": "--kevo-ms"}, args)
        with open(args.json) as f:
            doc = json.load(f)
        ok(doc["best_peer"] == "a" and abs(doc["vs_best_peer"] - 1.5) < 1e-9, "report: the best is checked peer a")
    print(f"\nselftest: {'ok' if not bad else f'{len(bad)} FAILED'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(selftest() if "--selftest" in sys.argv else main(sys.argv[1:]))
