#!/usr/bin/env python3
"""bench/cand_gemm_ratio.py — issue 38's GEMM acceptance figure from kevo DBs:
for each GPU run of ikbo_lce, kevo's best verified ms (the run's settled
winner, shapes.run_best), cuBLASLt's candidate
GEMM alone (the fastest of the heuristic's algorithms that kevo's in-run
`decomposed` peer timed, beta = 0, K padded to 8; `beta1`'s accumulating
GEMM beside it), the best peer and stage 0, all timed by the same process
on the same GPU.  (bench/peers.py's cand_gemm_alone is PyTorch's one
heuristic pick, not the best algorithm.)
  cand_gemm_ratio.py DB ...
"""
import os
import re
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes import run_best  # noqa: E402  (a run's settled winner)

ALGO = re.compile(r"candidate GEMM [^;|]*?\(fastest of (\d+), ([0-9.]+) ms\)")


def report(path):
    db = sqlite3.connect(path)
    for rid, shape, dtype in db.execute("select id, shape, dtype from runs where compile_only = 0 and op = 'ikbo_lce'"):
        best = (run_best(db, rid, "c.median_ms") or (None,))[0]
        peers = {p: (ms, det) for p, ms, det in db.execute(
            "select peer, median_ms, detail from run_peers where run_id = ? and shape_idx = 0 and status = 'ok'",
            (rid,))}
        cand = {}
        for p in ("decomposed", "beta1"):
            m = ALGO.search(peers.get(p, (None, ""))[1] or "")
            if m:
                cand[p] = (float(m.group(2)), int(m.group(1)))
        stage0 = peers.get("stage0", (None,))[0]
        real = {p: v[0] for p, v in peers.items() if p not in ("stage0",) and v[0]}
        bp = min(real, key=real.get) if real else None
        c0 = cand.get("decomposed")
        print(f"{path} run {rid}: {shape} {dtype}")
        if best is None:
            print("  no verified candidate")
            continue
        print(f"  kevo best {best:.4f} ms" + (f", {stage0 / best:.2f}x stage 0 ({stage0:.4f})" if stage0 else ""))
        if c0:
            print(f"  cuBLASLt candidate GEMM alone (beta 0, fastest of {c0[1]}): {c0[0]:.3f} ms; "
                  f"kevo / it = {best / c0[0]:.3f}" + ("  (issue 38: <= 1.02)" if best / c0[0] <= 1.02 else ""))
        if "beta1" in cand:
            print(f"  cuBLASLt candidate GEMM, beta 1 (fastest of {cand['beta1'][1]}): {cand['beta1'][0]:.3f} ms")
        if bp:
            print(f"  best peer {bp} {real[bp]:.4f} ms, vs best peer {real[bp] / best:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
