#!/usr/bin/env bash
# bench/device_faults.sh — on the device machine (repo root, build/ carried):
#  1. the GPU tests (reference, families, planted faults)
#  2. compile throughput: the same 48 candidates with --jobs 1 and --jobs 8
#  3. a tuning run over the whole lce_wgmma space, and the same run with the
#     planted faults among its candidates: each fault's kind, and the best
# Logs and DBs go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
log=$OUT/faults.log
: >"$log"
for t in test_gpu_ref test_gpu_lce test_gpu_faults; do
  build/tests/$t >>"$log" 2>&1
  echo "$t rc=$?" | tee -a "$log"
done

now() { date +%s.%N; }
for j in 1 8; do
  rm -f "$OUT/j$j.db"*
  t0=$(now)
  build/kevo tune --op ikbo_lce --compile-only --policy random --seed 3 --budget 48 --jobs $j \
    --db "$OUT/j$j.db" --quiet >>"$log" 2>&1
  t1=$(now)
  echo "jobs $j: 48 compiles in $(python3 -c "print(round($t1 - $t0, 2))") s" | tee -a "$log"
done

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
    stop = db.execute("select stop_reason, baseline_ms from runs").fetchone()
    print(f"{name}: {n} candidates, {ok} ok, {failed} failed, stop {stop[0]}, baseline {stop[1]:.4f} ms")
    for b in best:
        print(f"   {b[0]} {b[1]} {b[2]:.4f} ms {b[3]:.2f}x")
    if name == "planted":
        for row in db.execute("select json_extract(params,'$.FAULT'), status, coalesce(fail,''), "
                              "substr(coalesce(fail_msg,''),1,70) from candidates where family='lce_faults' "
                              "order by 1"):
            print("   FAULT=%-2s %-7s %-18s %s" % row)
PY
