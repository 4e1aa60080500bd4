#!/usr/bin/env python3
"""bench/model_rank.py LOG DB — how the cost model ranks the configurations a
`kevo tune` run timed, when that run's DB is not at hand (a device run's DB
too large to bring back): LOG is the run's output (its `[ i/n] #id FAMILY
P=V ... | T ms` lines), DB a `kevo tune --compile-only` run of the same op,
shape, family and --where on this machine (its candidates carry model_ms).
Prints the Spearman rank correlation of model_ms against the timed medians,
the best timed configuration's rank under the model and what the model's
first pick measured.  With the DB at hand, `kevo replay --db DB --model` is
the tool."""
import json, re, sqlite3, sys


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0] * len(v)
    for k, i in enumerate(order):
        r[i] = k
    return r


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    timed = {}
    for line in open(sys.argv[1], errors="replace"):
        m = re.match(r"^\[ *\d+/\d+\] #\d+ (\w+) (.*?) \| ([0-9.]+) ms", line)
        if m:
            params = dict(kv.split("=", 1) for kv in m.group(2).split())
            timed[(m.group(1), json.dumps({k: int(v) for k, v in params.items()}, sort_keys=True))] = float(m.group(3))
    db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
    model = {}
    for fam, params, ms in db.execute("SELECT family, params, model_ms FROM candidates WHERE model_ms > 0"):
        model[(fam, json.dumps(json.loads(params), sort_keys=True))] = ms
    pairs = [(model[k], t, k) for k, t in timed.items() if k in model]
    if len(pairs) < 3:
        sys.exit(f"model_rank: {len(pairs)} of {len(timed)} timed configurations have a model_ms in the DB")
    a, b = ranks([p for p, _, _ in pairs]), ranks([t for _, t, _ in pairs])
    n = len(pairs)
    rho = 1 - 6 * sum((x - y) ** 2 for x, y in zip(a, b)) / (n * (n * n - 1))
    best = min(range(n), key=lambda i: pairs[i][1])
    pick = min(range(n), key=lambda i: pairs[i][0])
    print(f"{n} of {len(timed)} timed configurations: Spearman {rho:.3f}; the best timed ({pairs[best][1]:.4f} ms) "
          f"is the model's #{a[best] + 1}; the model's first measured {pairs[pick][1]:.4f} ms")


if __name__ == "__main__":
    main()
