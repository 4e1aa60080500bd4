#!/usr/bin/env python3
"""bench/trace_batches.py ONE.trace MANY.trace... — from KEVO_TRACE_EVAL=1
traces of runs that proposed the same batches (one GPU first), the time each
run spent inside its batches (first submit to last result applied) over the
batches they share, the candidates per minute there, the ratio to the first
run, and the most the batch sizes allow G GPUs (sum n / sum ceil(n/G)).
A batch that had to compile (its first submit late) ends the shared part."""
import math
import sys


def batches(path):
    out, cur = [], None
    for line in open(path):
        p = line.split()
        if len(p) != 6 or p[0] != "trace":
            continue
        t, what, cand = float(p[1]), p[2], p[3]
        if what == "batch":
            if cur:
                out.append(cur)
            cur = {"start": t, "n": int(cand[1:]), "end": t, "first": None, "cands": []}
        elif cur:
            cur["end"] = max(cur["end"], t)
            if what == "submit":
                cur["cands"].append(cand)
                if cur["first"] is None:
                    cur["first"] = t
    if cur:
        out.append(cur)
    return out


def main():
    runs = [(p, batches(p)) for p in sys.argv[1:]]
    # the shared part: batches of the same sizes, none waiting > 50 ms for its first submit (a compile)
    k = 0
    while all(k < len(b) for _, b in runs) and len({b[k]["n"] for _, b in runs}) == 1 and \
            all(b[k]["first"] is not None and b[k]["first"] - b[k]["start"] < 0.05 for _, b in runs):
        k += 1
    n = sum(b["n"] for b in runs[0][1][:k])
    t0 = sum(b["end"] - b["start"] for b in runs[0][1][:k])
    print(f"shared: the first {k} batches, {n} candidates")
    for gpus, (path, b) in enumerate(runs, 1):
        t = sum(x["end"] - x["start"] for x in b[:k])
        g = 1 if gpus == 1 else 2
        cap = n / sum(math.ceil(x["n"] / g) for x in b[:k]) if k else float("nan")
        print(f"  {path}: {t:.2f} s in batches, {60 * n / t if t else 0:.0f} candidates/min, "
              f"{t0 / t if t else 0:.3f}x the first (batch sizes allow {cap:.3f}x on {g} GPU{'s' if g > 1 else ''})")


if __name__ == "__main__":
    main()
