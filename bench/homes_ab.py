#!/usr/bin/env python3
"""bench/homes_ab.py — bench/homes_ab.sh's table: per shape, the
configurations timed (status ok) under both template trees, the geometric
mean of B/A over them, how many B ran faster, and each side's best.
  homes_ab.py OUT SHAPE ...      (OUT/A/i/ab_1.db against OUT/B/i/ab_1.db)
With -v, one line per configuration."""
import json, math, os, sqlite3, sys


def times(db):
    """{params: median_ms} of a run's verified candidates."""
    if not os.path.exists(db):
        return {}
    c = sqlite3.connect(db)
    return {p: ms for p, ms in c.execute("select params, median_ms from candidates where status = 'ok' "
                                         "and median_ms > 0")}


def main(argv):
    verbose = "-v" in argv
    argv = [a for a in argv if a != "-v"]
    out, shapes = argv[1], argv[2:]
    print(f"{'#':>2} {'shape':44} {'n':>3} {'B/A':>6} {'B<A':>4} {'best A':>8} {'best B':>8}")
    for i, shape in enumerate(shapes, 1):
        a, b = (times(f"{out}/{s}/{i}/ab_1.db") for s in "AB")
        both = sorted(set(a) & set(b))
        if not both:
            print(f"{i:>2} {shape:44} {0:>3}  (no configuration timed on both sides)")
            continue
        r = [b[p] / a[p] for p in both]
        gm = math.exp(sum(map(math.log, r)) / len(r))
        print(f"{i:>2} {shape:44} {len(both):>3} {gm:6.3f} {sum(x < 1 for x in r):>4} "
              f"{min(a.values()):8.4f} {min(b.values()):8.4f}")
        if verbose:
            for p in both:
                kv = " ".join(f"{k}={v}" for k, v in json.loads(p).items())
                print(f"     {a[p]:8.4f} {b[p]:8.4f} {b[p] / a[p]:6.3f}  {kv}")


if __name__ == "__main__":
    main(sys.argv)
