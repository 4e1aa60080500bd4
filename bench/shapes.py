#!/usr/bin/env python3
"""bench/shapes.py — the shape set of bench/shapes.sh, and its result table.

  shapes.py list SEED          one shape per line: "SHAPE DTYPE" (the public
                               set of issue 9, then 8 drawn from SEED)
  shapes.py table DB WALL.tsv  per shape: kevo ms, baseline ms, decomposed ms,
                               vs_best_peer, fraction of the roofline, wall s;
                               then the geometric mean of vs_best_peer

Random shapes (a seeded generator, so a seed always gives the same set): B
log-uniform 256..4096, candidates per user log-uniform 2..10000, M
log-uniform 64..1024, N a multiple of 8 in 64..512, Ku and Kc log-uniform
32..4096, fp16 or bf16.
"""
import math
import random
import sqlite3
import sys

PUBLIC = [
    ("B=512,M=256,N=128,Ku=512,Kc=1024,ratio=16", "fp16"),
    ("B=2048,M=600,N=320,Ku=1500,Kc=700,ratio=100", "bf16"),
    ("B=4096,M=96,N=64,Ku=128,Kc=48,ratio=4096", "fp16"),
    ("B=300,M=900,N=256,Ku=2500,Kc=400,ratio=3", "fp16"),
    ("B=1024,ratio=10000", "fp16"),
    ("B=3072,M=200,N=512,Ku=300,Kc=2000,ratio=30", "bf16"),
    ("B=256,ratio=70", "fp16"),
    ("B=4096,ratio=70", "fp16"),
    ("B=1000,M=345,N=96,Ku=800,Kc=1100,ratio=25", "fp16"),
    ("B=1536,M=128,N=384,Ku=4096,Kc=256,ratio=12", "fp16"),
    ("B=2048,M=1024,N=128,Ku=64,Kc=64,ratio=50", "bf16"),
    ("B=768,M=512,N=200,Ku=1000,Kc=1000,ratio=64", "fp16"),
]
DEFAULT = ("B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70", "fp16")


def log_uniform(rng, lo, hi):
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def drawn(seed, n=8):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        b = log_uniform(rng, 256, 4096)
        ratio = log_uniform(rng, 2, 10000)
        m = log_uniform(rng, 64, 1024)
        nn = 8 * rng.randint(8, 64)
        ku = log_uniform(rng, 32, 4096)
        kc = log_uniform(rng, 32, 4096)
        dt = rng.choice(["fp16", "bf16"])
        out.append((f"B={b},M={m},N={nn},Ku={ku},Kc={kc},ratio={ratio}", dt))
    return out


def canon(shape):
    """The keys of a shape text, for matching a run's canonical shape."""
    return {k: int(v) for k, v in (kv.split("=") for kv in shape.split(","))}


def table(db_path, wall_path):
    walls = {}
    for line in open(wall_path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 3:
            walls[(parts[0], parts[1])] = float(parts[2])
    db = sqlite3.connect(db_path)
    rows = []
    for (shape, dtype), wall in walls.items():
        want = canon(shape)
        best = None
        for rid, rshape, rdt, base, dec in db.execute(
                "select id, shape, dtype, baseline_ms, decomposed_ms from runs where compile_only = 0 order by id"):
            have = canon(rshape)
            if rdt == dtype and all(have.get(k) == v for k, v in want.items()):
                best = (rid, base, dec)
        if best is None:
            rows.append((shape, dtype, None))
            continue
        rid, base, dec = best
        c = db.execute("select c.median_ms, c.vs_peer, c.roofline, c.family from candidates c "
                       "where c.run_id = ? and c.status = 'ok' order by "
                       "c.id = (select best_id from runs where id = ?) desc, coalesce(c.fitness, c.speedup) desc, "
                       "c.median_ms limit 1", (rid, rid)).fetchone()
        rows.append((shape, dtype, (base, dec, c, wall)))
    print("| shape | dtype | kevo ms | family | baseline ms | decomposed ms | vs_best_peer | roofline | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    logs = []
    for shape, dtype, r in rows:
        if r is None or r[2] is None:
            print(f"| {shape} | {dtype} | - | - | - | - | no verified kernel | - | - |")
            continue
        base, dec, (ms, vs, roof, fam), wall = r
        logs.append(math.log(vs))
        print(f"| {shape} | {dtype} | {ms:.4f} | {fam} | {base:.4f} | {dec:.4f} | {vs:.2f}x | "
              f"{100 * roof:.0f}% | {wall:.0f} |")
    if logs:
        print(f"\ngeometric mean of vs_best_peer over {len(logs)} shapes: {math.exp(sum(logs) / len(logs)):.2f}x; "
              f"lowest {math.exp(min(logs)):.2f}x")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "list":
        for s, d in PUBLIC + drawn(int(sys.argv[2])):
            print(s, d)
    elif len(sys.argv) == 4 and sys.argv[1] == "table":
        table(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
