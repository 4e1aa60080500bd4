#!/usr/bin/env python3
"""bench/multi_compare.py DB:RUN ... — for runs of `kevo tune` that should
search alike (one seed, on 1 or several GPUs): whether each run's graph
(every candidate in proposal order with the operator and parents that made
it) and best candidate equal the first's (then, for three runs or more,
where every pair parts), and each run's evaluation
throughput (candidates evaluated per minute of the search loop, per GPU and
in all, from run_devices; for a distribution of shapes, evaluations of a
candidate at a shape)."""
import sqlite3
import sys


def graph(db, run):
    seqs = {}
    for cid, seq, fam, params in db.execute(
            "select id, seq, family, params from candidates where run_id = ? order by seq", (run,)):
        seqs[cid] = (seq, fam, params)
    edges = {}
    for parent, child, op in db.execute("select parent_id, child_id, operator from edges where run_id = ?", (run,)):
        edges.setdefault(child, []).append((seqs[parent][0] if parent in seqs else -1, op))
    return [(s, f, p, tuple(sorted(edges.get(cid, [])))) for cid, (s, f, p) in sorted(seqs.items(), key=lambda x: x[1][0])]


def main():
    rows = []
    for arg in sys.argv[1:]:
        path, run = arg.rsplit(":", 1)
        db = sqlite3.connect(path)
        run = int(run)
        g = graph(db, run)
        best = db.execute("select c.family, c.params, c.median_ms, c.speedup from runs r join candidates c "
                          "on c.id = r.best_id where r.id = ?", (run,)).fetchone()
        devs = db.execute("select d.ordinal, d.name, d.evaluated, d.busy_s, d.loop_s, p.median_ms from run_devices d "
                          "left join run_peers p on p.run_id = d.run_id and p.device = d.idx and p.shape_idx = 0 "
                          "and p.peer = 'stage0' and p.status = 'ok' where d.run_id = ? order by d.idx",
                          (run,)).fetchall()
        nshapes = db.execute("select coalesce(nshapes, 0) from runs where id = ?", (run,)).fetchone()[0]
        rows.append((arg, g, best, devs, nshapes))
    g0, b0 = rows[0][1], rows[0][2]
    first_diff = lambda g, h: next((a[0] for a, b in zip(g, h) if a != b), None if len(g) == len(h)
                                   else min(len(g), len(h)) + 1)
    print("| run | candidates | same graph as the first | best | same best | GPUs | evaluated/min | busy |")
    print("|---|---|---|---|---|---|---|---|")
    for arg, g, best, devs, nshapes in rows:
        same = g == g0
        note = "yes" if same else f"no (first difference at seq {first_diff(g, g0)})"
        loop = max((d[4] or 0) for d in devs) if devs else 0
        total = sum(d[2] or 0 for d in devs)
        rate = 60.0 * total / loop if loop else float("nan")
        unit = "shape evals" if nshapes else "cand"  # a distribution: one evaluation per candidate and shape
        busy = ", ".join(f"GPU {d[0]} {d[2]} {unit} {100.0 * (d[3] or 0) / loop:.0f}%" for d in devs) if loop else "-"
        bs = f"{best[0]} {best[1]} {best[2]:.4f} ms {best[3]:.2f}x" if best else "none"
        print(f"| {arg} | {len(g)} | {note} | {bs} | {best[:2] == b0[:2] if best and b0 else False} | "
              f"{len(devs)} | {rate:.1f} | {busy} |")
    if len(rows) > 2:
        pairs = []
        for i in range(len(rows)):
            for j in range(i + 1, len(rows)):
                d = first_diff(rows[i][1], rows[j][1])
                pairs.append(f"{i + 1}-{j + 1} " + ("same graph" if d is None else f"part at seq {d}"))
        print("\npairs (runs numbered as listed): " + "; ".join(pairs))


if __name__ == "__main__":
    main()
