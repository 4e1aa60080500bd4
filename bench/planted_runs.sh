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
python3 bench/db_summary.py "$OUT/clean.db" "$OUT/planted.db"
