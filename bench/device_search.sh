#!/usr/bin/env bash
# bench/device_search.sh — on the device machine (repo root, build/ carried):
#  1. a landscape: every lce_mma configuration of a sub-grid at the default
#     shape (exhaustive), slimmed to fitness rows for tests/fixtures/
#  2. kevo tune --policy ucb --budget 60 at the default shape
#  3. bench/planted_runs.sh: the whole lce_wgmma space with and without the planted faults
# Logs and DBs go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
WHERE='STAGES <= 4 && (BM == 112 || BM == 128) && BN >= 128 && RASTER == 0'
build/kevo tune --op ikbo_lce --family lce_mma --policy exhaustive --budget 2000 --where "$WHERE" --maps sorted \
  --db "$OUT/landscape.db" --no-bar >"$OUT/landscape.log" 2>&1
echo "landscape rc=$?"
build/kevo tune --op ikbo_lce --policy ucb --budget 60 --db "$OUT/ucb.db" --no-bar >"$OUT/ucb.log" 2>&1
echo "ucb rc=$?"
bash bench/planted_runs.sh
python3 - "$OUT" <<'PY'
import sqlite3, sys
out = sys.argv[1]
# a summary of the landscape and ucb DBs (planted_runs.sh printed its own), then slim copies
for name in ("landscape", "ucb"):
    db = sqlite3.connect(f"{out}/{name}.db")
    n, ok, failed = db.execute("select count(*), sum(status='ok'), sum(status='failed') from candidates").fetchone()
    best = db.execute("select family, params, median_ms, speedup from candidates where status='ok' "
                      "order by speedup desc limit 2").fetchall()
    stop, base = db.execute("select stop_reason, baseline_ms from runs").fetchone()
    print(f"{name}: {n} candidates, {ok} ok, {failed} failed, stop {stop}, baseline {base:.4f} ms")
    for b in best:
        print(f"   {b[0]} {b[1]} {b[2]:.4f} ms {b[3]:.2f}x")
    db.close()
PY
for name in landscape clean planted ucb; do python3 bench/slim_db.py "$OUT/$name.db"; done
ls -la "$OUT"
