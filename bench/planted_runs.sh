#!/usr/bin/env bash
# bench/planted_runs.sh — on the device machine (repo root, build/ carried): the
# whole lce_wgmma space tuned twice, once as it is (clean.db) and once with the
# planted faults of tests/fixtures/faults among its candidates (planted.db);
# prints each run's best and every fault's classification.  Used by
# bench/device_faults.sh and bench/device_search.sh; DBs and logs go to $OUT.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
build/kevo tune --op ikbo_lce --family lce_wgmma --policy exhaustive --budget 1000 \
  --db "$OUT/clean.db" --no-bar >"$OUT/clean.log" 2>&1
echo "clean run rc=$?"
KEVO_FAULT_INJECT=1 build/kevo tune --op ikbo_lce --templates tests/fixtures/faults \
  --family lce_faults,lce_wgmma --policy exhaustive --budget 1000 --eval-timeout 20 --compile-timeout 5 \
  --db "$OUT/planted.db" --no-bar >"$OUT/planted.log" 2>&1
echo "planted run rc=$?"
python3 - "$OUT" <<'PY'
import sqlite3, sys
out = sys.argv[1]
for name in ("clean", "planted"):
    db = sqlite3.connect(f"{out}/{name}.db")
    n, ok, failed = db.execute("select count(*), sum(status='ok'), sum(status='failed') from candidates").fetchone()
    best = db.execute("select family, params, median_ms, speedup from candidates where status='ok' "
                      "order by speedup desc limit 2").fetchall()
    stop, base = db.execute("select stop_reason, baseline_ms from runs").fetchone()
    print(f"{name}: {n} candidates, {ok} ok, {failed} failed, stop {stop}, baseline {base:.4f} ms")
    for b in best:
        print(f"   {b[0]} {b[1]} {b[2]:.4f} ms {b[3]:.2f}x")
    if name == "planted":
        for row in db.execute("select json_extract(params,'$.FAULT'), status, coalesce(fail,''), "
                              "substr(coalesce(fail_msg,''),1,70) from candidates where family='lce_faults' "
                              "order by 1"):
            print("   FAULT=%-2s %-7s %-18s %s" % row)
    db.close()
PY
