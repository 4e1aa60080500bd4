#!/usr/bin/env bash
# bench/device_fa.sh — on the device machine (repo root, build/ carried):
# ikbo_fa's GPU tests (references, peers, planted faults), then
# `kevo tune --op ikbo_fa` at each shape given (default: the default shape),
# one DB per shape; logs and slimmed DBs under $OUT, a table last:
# the best candidate, its TFLOP/s, speedups over the peers, wall time.
#   bash bench/device_fa.sh [tests] [SHAPE...]
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
if [ "${1:-}" = tests ]; then
  shift
  timeout 400 build/tests/test_gpu_fa >"$OUT/test_gpu_fa.log" 2>&1
  echo "== test_gpu_fa: rc=$?"
  grep -E "^\[  (PASSED|FAILED)|reference|peer|ms" "$OUT/test_gpu_fa.log" | tail -25
fi
[ $# -eq 0 ] && set -- "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64"
i=0
for shape in "$@"; do
  i=$((i + 1))
  t0=$(date +%s.%N)
  timeout 500 build/kevo tune --op ikbo_fa --shape "$shape" ${FA_TUNE_ARGS:-} --db "$OUT/fa$i.db" --no-bar \
    >"$OUT/fa$i.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "== $shape: rc=$rc wall $(python3 -c "print(round($t1 - $t0, 1))") s"
  grep -E "^device|peer|baseline|re-timed|^best|beats|no kernel" "$OUT/fa$i.log" | head -12
  build/kevo report --db "$OUT/fa$i.db" --top 5 >"$OUT/report$i.txt" 2>&1
  head -30 "$OUT/report$i.txt"
  python3 bench/slim_db.py "$OUT/fa$i.db" && rm -f "$OUT/fa$i.db-wal" "$OUT/fa$i.db-shm"
done
