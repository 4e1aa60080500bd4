#!/usr/bin/env bash
# bench/device_fa_export.sh — on the device machine (repo root, build/ carried):
#  1. `kevo tune --op ikbo_fa` at the default shape (fp16, budget
#     ${FA_BUDGET:-20}) and at a D=64 bf16 shape (budget 8), in one DB;
#  2. tests/export/gpu_export.sh --op ikbo_fa on that DB: the exported
#     library built with CMake, its example verified and timed at each tuned
#     shape against the DB's best (at most 5% slower) and run at an untuned
#     shape;
#  3. the CI fixture: a copy of the DB with the exported candidates' cubins.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/tune.log"
build/kevo tune --op ikbo_fa --budget "${FA_BUDGET:-20}" --db "$OUT/fa.db" --no-bar >>"$OUT/tune.log" 2>&1
echo "fp16 tune rc=$?" | tee -a "$OUT/tune.log"
build/kevo tune --op ikbo_fa --dtype bf16 --shape Bc=1024,H=2,Sq=64,D=64,Skv=1024,ratio=32 --budget 8 \
  --db "$OUT/fa.db" --no-bar >>"$OUT/tune.log" 2>&1
echo "bf16 tune rc=$?" | tee -a "$OUT/tune.log"
build/kevo report --db "$OUT/fa.db" --top 8 >"$OUT/report.txt" 2>&1
tests/export/gpu_export.sh --op ikbo_fa "$OUT/fa.db" >"$OUT/export.log" 2>&1
echo "export test rc=$?" | tee -a "$OUT/export.log"
python3 bench/export_fixture.py "$OUT/fa.db" "$OUT/export_fa_fixture.db"
rm -f "$OUT/fa.db-wal" "$OUT/fa.db-shm"
python3 bench/slim_db.py "$OUT/fa.db"
ls -la "$OUT"
grep -E "^run|^best|beats|no kernel|rc=" "$OUT/tune.log"
cat "$OUT/export.log"
