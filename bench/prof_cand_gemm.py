#!/usr/bin/env python3
"""bench/prof_cand_gemm.py SHAPE DTYPE — run the candidate GEMM of an ikbo_lce
shape (out[b] = W_cand @ E_cand[b], K padded to 8) the way PyTorch does
(cuBLAS, batched over B), a few times, so that Nsight Compute can profile
cuBLAS's kernel for it beside kevo's (docs/lce_ws.md)."""
import sys

import torch

kv = dict(x.split("=") for x in sys.argv[1].split(","))
B, M, N, Kc = (int(kv[k]) for k in ("B", "M", "N", "Kc"))
dt = torch.float16 if sys.argv[2] == "fp16" else torch.bfloat16
Kp = (Kc + 7) // 8 * 8
w = torch.zeros(M, Kp, device="cuda", dtype=dt)
e = torch.zeros(B, Kp, N, device="cuda", dtype=dt)
w[:, :Kc].normal_()
e[:, :Kc].normal_()
for _ in range(4):
    out = w @ e
torch.cuda.synchronize()
s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
ms = []
for _ in range(20):
    s.record()
    out = w @ e
    t.record()
    t.synchronize()
    ms.append(s.elapsed_time(t))
ms.sort()
print(f"cand GEMM {B}x{M}x{N}x{Kp} {sys.argv[2]}: median {ms[len(ms) // 2]:.4f} ms, "
      f"{2 * B * M * N * Kc / ms[len(ms) // 2] / 1e9:.0f} TFLOP/s")
