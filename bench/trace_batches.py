#!/usr/bin/env python3
"""bench/trace_batches.py ONE.trace MANY.trace... — from KEVO_TRACE_EVAL=1
traces of runs of one search (one GPU first), the GPUs' evaluation rate with
compiling left out.  A batch runs from its `batch` line to its last
`applied`; within it, a GPU that sits idle while a candidate of the batch is
not yet submitted waits for a compile.  Batches are compared by position
(the runs propose alike until their graphs part, and batches of one size
after that); only positions where no run waited more than 20 ms for a
compile count (under --mpi, compiles run between batches: a gap of more
than 50 ms before a batch is such a wait).  Per run: the time in those batches, candidates per minute,
the ratio to the first run, and the most the batch sizes allow G GPUs
(sum n / sum ceil(n / G)); and the whole run's compile wait."""
import math
import sys

WAIT_LIMIT = 0.02  # seconds of GPU time waiting for compiles that make a batch unfit
GAP_LIMIT = 0.05  # seconds between batches beyond proposing and registering one (~5 ms): compiles


def batches(path):
    events = []
    for line in open(path):
        p = line.split()
        if len(p) == 6 and p[0] == "trace":
            events.append((float(p[1]), p[2], p[3], int(p[5])))
    ndev = max([e[3] for e in events] + [0]) + 1
    out, cur = [], None
    busy = set()
    prev = events[0][0] if events else 0.0
    for t, what, cand, dev in events:
        if cur and cur["left"] > 0 and len(busy) < ndev:
            cur["wait"] += (t - prev) * (ndev - len(busy))  # GPU seconds idle with work not compiled yet
        prev = t
        if what == "batch":
            # under --mpi a batch's compiles finish before its `batch` line: a long gap is that wait
            gap = t - out[-1]["end"] if out else 0.0
            cur = {"start": t, "end": t, "n": int(cand[1:]), "left": int(cand[1:]),
                   "wait": ndev * gap if gap > GAP_LIMIT else 0.0}
            out.append(cur)
        elif cur:
            cur["end"] = max(cur["end"], t)
            if what == "submit":
                busy.add(dev)
                cur["left"] -= 1
            elif what in ("done", "lost"):
                busy.discard(dev)
    return ndev, out


def main():
    runs = [(p, *batches(p)) for p in sys.argv[1:]]
    k = min(len(b) for _, _, b in runs)
    keep = [i for i in range(k) if len({b[i]["n"] for _, _, b in runs}) == 1 and
            all(b[i]["wait"] <= WAIT_LIMIT for _, _, b in runs)]
    n = sum(runs[0][2][i]["n"] for i in keep)
    print(f"batches no run waited in for a compile: {len(keep)} of {k}, {n} candidates")
    t0 = None
    for path, ndev, b in runs:
        t = sum(b[i]["end"] - b[i]["start"] for i in keep)
        t0 = t if t0 is None else t0
        cap = n / sum(math.ceil(b[i]["n"] / ndev) for i in keep) if keep else float("nan")
        wait = sum(x["wait"] for x in b)
        print(f"  {path}: {ndev} GPU{'s' if ndev > 1 else ''}, {t:.2f} s in them, {60 * n / t if t else 0:.0f} "
              f"candidates/min, {t0 / t if t else 0:.3f}x the first (batch sizes allow {cap:.3f}x); "
              f"whole run: {wait:.2f} GPU s waiting for compiles")


if __name__ == "__main__":
    main()
