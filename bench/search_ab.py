#!/usr/bin/env python3
"""bench/search_ab.py A.db B.db — two builds' default searches over the same
shapes (bench/search_ab.sh): per shape (B's run order), each DB's best
verified ms, B/A, the in-run best peer over each (kevo's checked same-run peers,
shapes.inrun_peers, stage 0 included), and the role (CONSUMERS, PINGPONG) of B's best; then
the geometric means and the losses."""
import json
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shapes import inrun_peers, run_best  # noqa: E402  (kevo's checked same-run peers, its answer)


def load(path):
    db = sqlite3.connect(path)
    out = {}
    for rid, shape, dt in db.execute("select id, shape, dtype from runs where compile_only = 0 order by id"):
        best = run_best(db, rid)
        peers = inrun_peers(db, rid)
        out[(shape, dt)] = (best, min(peers.values()) if peers else None)
    return out


def gmean(v):
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ratio, pa, pb = [], [], []
    for key, (bb, peer_b) in b.items():
        ba, peer_a = a.get(key, (None, None))
        if not bb or not ba or not peer_a or not peer_b:
            print(f"  {key[0]} {key[1]}: not in both, or no verified candidate or peer")
            continue
        p = json.loads(bb[2]) if bb[1] == "lce_ws" else {}
        role = f"C{p['CONSUMERS']}P{p['PINGPONG']}" if p else ""
        ratio.append(bb[0] / ba[0])
        pa.append(peer_a / ba[0])
        pb.append(peer_b / bb[0])
        print(f"  {key[0][:52]:52s} {key[1]} A {ba[0]:.4f} B {bb[0]:.4f} B/A {bb[0] / ba[0]:.3f} | "
              f"vs best in-run peer A {pa[-1]:.2f}x B {pb[-1]:.2f}x | B's best {bb[1]} {role}")
    print(f"  n={len(ratio)} geomean B/A {gmean(ratio):.3f}; vs best in-run peer geomean A {gmean(pa):.3f} "
          f"B {gmean(pb):.3f}; losses A {sum(x < 1 for x in pa)} B {sum(x < 1 for x in pb)}")


if __name__ == "__main__":
    main()
