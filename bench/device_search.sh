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
python3 bench/db_summary.py "$OUT/landscape.db" "$OUT/ucb.db"
for name in landscape clean planted ucb; do python3 bench/slim_db.py "$OUT/$name.db"; done
ls -la "$OUT"
