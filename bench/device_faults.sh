#!/usr/bin/env bash
# bench/device_faults.sh — on the device machine (repo root, build/ carried):
#  1. the GPU tests (reference, families, planted faults)
#  2. compile throughput: the same 48 candidates with --jobs 1 and --jobs 8
#  3. bench/planted_runs.sh: a tuning run over the whole lce_wgmma space, and the same run with the
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

bash bench/planted_runs.sh
