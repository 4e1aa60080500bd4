#!/usr/bin/env bash
# bench/device_export.sh — on the device machine (repo root, build/ carried):
#  1. the main job as the README gives it (default shape, fp16, budget 60), a
#     short bf16 run, the run as a table, and the best verified elsewhere
#  2. the export: tests/export/gpu_export.sh on that DB, and the per-call host
#     overhead of the library against launching the same cubin directly
#  3. a slim copy of the DB (the exported candidates' cubins only) for the CI
#     export test
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/tune.log"
build/kevo tune --op ikbo_lce --db "$OUT/kevo.db" --no-bar >>"$OUT/tune.log" 2>&1
echo "tune rc=$?" | tee -a "$OUT/tune.log"
build/kevo tune --op ikbo_lce --dtype bf16 --budget 12 --db "$OUT/kevo.db" --no-bar >>"$OUT/tune.log" 2>&1
echo "bf16 tune rc=$?" | tee -a "$OUT/tune.log"
build/kevo report --db "$OUT/kevo.db" --top 12 >"$OUT/report.txt" 2>&1
: >"$OUT/verify.log"
for args in "--shape B=2048,ratio=70 --time" "--shape B=1024,ratio=10 --time" "--shape B=1024,ratio=1000 --time" \
            "--dtype bf16 --time" "--maps shuffled"; do
  echo "== kevo verify --run 1 $args" >>"$OUT/verify.log"
  build/kevo verify --db "$OUT/kevo.db" --run 1 $args >>"$OUT/verify.log" 2>&1
  echo "rc=$?" >>"$OUT/verify.log"
done
tests/export/gpu_export.sh "$OUT/kevo.db" >"$OUT/export.log" 2>&1
echo "export test rc=$?" | tee -a "$OUT/export.log"
T=$(mktemp -d)
build/kevo export --db "$OUT/kevo.db" --out "$T/lib" >>"$OUT/export.log" 2>&1
gcc -O2 -DKEVO_EXPORT_SRC="\"$T/lib/src/kevo_tuned.c\"" -I"$T/lib/include" -I/usr/local/cuda/include \
  bench/export_overhead.c -lcuda -lpthread -o "$T/overhead" >>"$OUT/export.log" 2>&1
"$T/overhead" 1024 433 256 1178 866 15 >>"$OUT/export.log" 2>&1
echo "overhead rc=$?" | tee -a "$OUT/export.log"
python3 bench/export_fixture.py "$OUT/kevo.db" "$OUT/export_fixture.db"
ls -la "$OUT"
tail -5 "$OUT/tune.log"; cat "$OUT/verify.log" | grep -E "==|speedup|ok|FAILED"; cat "$OUT/export.log" | tail -12
