#!/usr/bin/env python3
"""bench/trace_idle.py TRACE... — where a tuning loop's GPUs waited, from
KEVO_TRACE_EVAL=1 traces of `kevo tune` (stderr lines "trace T EVENT #N dev D").

Per trace: the GPUs, the loop's seconds (its last event), candidates evaluated
per minute of it, each GPU's busy share, and the GPU seconds spent idle, by
what the oldest unfinished work was doing then:
  queued     a registered candidate waited for a compile slot (too few cores)
  compiling  candidates were compiling, none queued (a compile's latency)
  nothing    no registered candidate was unevaluated (the search had not proposed
             the next round yet: --ahead too shallow, or results applied late)
Also each GPU's milliseconds from a submit to its result (median / mean /
max: a mean far over the median is a result that waited to be taken, as a
remote rank's did when it looked for messages only every 50 ms while
compiling) and the local compiles' seconds (mean, median, max).  Under --mpi, rank 0
traces no compile starts, so there all compile waiting shows as `queued`.
The first trace is the reference for the `x first` column (rate ratio).

Where the GPU workers also traced each evaluation's phases (lines
"eval-phases #N ms load L fill F ...", kevo after 0773111), a second table
gives each phase's mean milliseconds per evaluation, over the evaluations
that reached the timing passes (those that failed a check stop early)."""
import statistics
import sys


def load(path):
    ev = []
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) == 6 and p[0] == "trace" and p[3].startswith("#"):
            try:
                ev.append((float(p[1]), p[2], int(p[3][1:]), int(p[5])))
            except ValueError:
                pass
    return ev


def phases(path):
    """Per evaluation that was timed: {phase: ms}."""
    out = []
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) >= 5 and p[0] == "eval-phases" and p[2] == "ms" and len(p) % 2 == 1:
            try:
                d = {p[i]: float(p[i + 1]) for i in range(3, len(p), 2)}
            except ValueError:
                continue
            if d.get("time", 0) > 0:
                out.append(d)
    return out


def analyse(ev):
    ndev = max([d for _, w, _, d in ev if w in ("submit", "done")] + [0]) + 1
    state = {}  # candidate id -> q (queued), c (compiling), r (ready), g (on a GPU), d (done)
    next_id = None
    busy, idle = set(), {"queued": 0.0, "compiling": 0.0, "nothing": 0.0}
    busy_s = [0.0] * ndev
    held = [[] for _ in range(ndev)]  # per GPU: seconds from each submit to its result
    on_since = {}
    cs, comp, evaluated = {}, [], 0
    prev = ev[0][0] if ev else 0.0
    for t, what, cand, dev in ev:
        free = ndev - len(busy)
        if free > 0:
            st = set(state.values())
            k = "queued" if "q" in st else "compiling" if "c" in st else "nothing"
            if "r" not in st:  # a ready candidate is placed at once: not a wait
                idle[k] += free * (t - prev)
        prev = t
        if what == "registered":
            # candidate ids of a fresh run's rounds are consecutive from the first compile's
            first = next_id if next_id is not None else None
            if first is None:
                first = min([c for _, w, c, _ in ev if w in ("compile", "submit")] or [1])
            for i in range(cand):
                state[first + i] = "q"
            next_id = first + cand
        elif what == "compile":
            state[cand] = "c"
            cs[cand] = t
        elif what == "compiled":
            state[cand] = "r"
            if cand in cs:
                comp.append(t - cs[cand])
        elif what == "queued":  # sent to wait on a remote GPU behind the one it runs; "submit" when its turn comes
            state[cand] = "g"
        elif what == "submit":
            state[cand] = "g"
            busy.add(dev)
            on_since[dev] = t
        elif what in ("done", "lost"):
            state[cand] = "d" if what == "done" else "r"
            busy.discard(dev)
            since = on_since.pop(dev, t)
            busy_s[dev] += t - since
            held[dev].append(t - since)
            evaluated += what == "done"
        elif what == "applied":
            state.pop(cand, None)
    loop = ev[-1][0] if ev else 0.0
    return ndev, loop, evaluated, busy_s, idle, comp, held


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: trace_idle.py TRACE...")
    print("| trace | GPUs | loop s | evaluated / min | x first | GPU busy | GPU s idle: queued / compiling / "
          "nothing | submit to result ms per GPU: median / mean / max | compile s: mean / median / max |")
    print("|---|---|---|---|---|---|---|---|---|")
    first = None
    for path in sys.argv[1:]:
        ev = load(path)
        if not ev:
            print(f"| {path} | no trace events |  |  |  |  |  |  |  |")
            continue
        ndev, loop, n, busy_s, idle, comp, held = analyse(ev)
        traced = any(w == "registered" for _, w, _, _ in ev)  # kevo before 7676583 traced no registrations
        rate = 60 * n / loop if loop > 0 else 0.0
        first = rate if first is None else first
        busy = " ".join(f"{100 * b / loop:.0f}%" for b in busy_s) if loop > 0 else ""
        h = ", ".join(f"{1e3 * statistics.median(x):.1f} / {1e3 * statistics.mean(x):.1f} / {1e3 * max(x):.1f}"
                      if x else "-" for x in held)
        c = (f"{statistics.mean(comp):.2f} / {statistics.median(comp):.2f} / {max(comp):.2f}" if comp
             else "not traced")
        print(f"| {path} | {ndev} | {loop:.2f} | {rate:.1f} | {rate / first if first else 0:.2f} | {busy} | "
              f"{idle['queued']:.2f} / {idle['compiling']:.2f} / {idle['nothing']:.2f} | {h} | {c} |" if traced else
              f"not traced | {h} | {c} |")
    rows = [(path, phases(path)) for path in sys.argv[1:]]
    rows = [(path, ph) for path, ph in rows if ph]
    if rows:
        keys = list(rows[0][1][0].keys())
        print()
        print("| trace | timed evaluations | mean ms: " + " / ".join(keys) + " |")
        print("|---|---|---|")
        for path, ph in rows:
            print(f"| {path} | {len(ph)} | " + " / ".join(f"{statistics.mean(d.get(k, 0) for d in ph):.1f}"
                                                         for k in keys) + " |")


if __name__ == "__main__":
    main()
