#!/usr/bin/env bash
# bench/device_ab.sh — two kevo builds, A and B, on one GPU of a device machine
# (repo root, build/ carried), for a change to the evaluator or the loop: the
# README's main job at budget $BUDGET (default 120, batch 8, --devices 0;
# OP=ikbo_fa: that op's, at its default shape),
#   cold  A, B, A, B, ... ($ROUNDS pairs, default 2), each into a fresh DB
#   warm  the same order again, each from a copy of a DB holding every cold
#         run's binaries (its run 2; what the GPU alone sets: nearly nothing
#         compiles)
# Every run is traced (KEVO_TRACE_EVAL=1); bench/trace_idle.py gives each
# run's rate, GPU busy share, where the GPU waited and, where the build traces
# them, an evaluation's phases; bench/multi_compare.py whether each run's
# graph and best equal the first's.
#   A_BIN, A_HOME  build A's kevo and its KEVO_HOME (kernels/, templates/):
#                  an older build needs its own tree's reference module
#   B_BIN, B_HOME  build B (default build/kevo and the repo root)
# Logs, traces and slimmed DBs go to $OUT/ab.tgz; the tables are printed last.
set -u
BUDGET=${BUDGET:-120}
OP=${OP:-ikbo_lce}
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
A_BIN=${A_BIN:?A_BIN: the kevo of build A}
A_HOME=${A_HOME:?A_HOME: build A\'s KEVO_HOME}
B_BIN=${B_BIN:-build/kevo}
B_HOME=${B_HOME:-$PWD}
nvidia-smi -L
run() { # name, build (A or B), then more options
  local name=$1 bin home t0
  if [ "$2" = A ]; then bin=$A_BIN home=$A_HOME; else bin=$B_BIN home=$B_HOME; fi
  shift 2
  t0=$(date +%s.%N)
  KEVO_HOME=$home KEVO_TRACE_EVAL=1 timeout 300 "$bin" tune --op "$OP" --budget "$BUDGET" --batch 8 \
    --devices 0 --no-bar "$@" >"$OUT/$name.log" 2>"$OUT/$name.trace"
  echo "== $name: rc=$? wall $(python3 -c "import sys,time; print(round(time.time() - float(sys.argv[1]), 1))" "$t0") s"
  grep -E "^best|no kernel|did not start|error" "$OUT/$name.log" "$OUT/$name.trace" | cut -c1-200
}
cold=() warm=()
for i in $(seq "${ROUNDS:-2}"); do
  for b in A B; do
    run "cold_$b$i" $b --db "$OUT/cold_$b$i.db"
    cold+=("$OUT/cold_$b$i.db")
  done
done
# the cache: every cold run's binaries (one source compiles to one key for both builds)
python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))" \
  "${cold[0]}" "$OUT/cache.db"
python3 bench/merge_binaries.py "$OUT/cache.db" "${cold[@]:1}"
for i in $(seq "${ROUNDS:-2}"); do
  for b in A B; do
    python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))" \
      "$OUT/cache.db" "$OUT/warm_$b$i.db"
    run "warm_$b$i" $b --warm-start none --db "$OUT/warm_$b$i.db"
    warm+=("$OUT/warm_$b$i.db")
  done
done
rm -f "$OUT/cache.db"
for f in "$OUT"/*.db; do
  python3 bench/slim_db.py "$f" && rm -f "$f-wal" "$f-shm"
done
python3 bench/trace_idle.py "$OUT"/cold_*.trace "$OUT"/warm_*.trace | tee "$OUT/idle.md"
python3 bench/multi_compare.py $(for f in "${cold[@]}"; do echo "$f:1"; done) | tee "$OUT/table.md"
python3 bench/multi_compare.py $(for f in "${warm[@]}"; do echo "$f:2"; done) | tee -a "$OUT/table.md"
(cd "$OUT" && tar czf ab.tgz ./*.db ./*.log ./*.trace ./*.md && rm -f ./*.db ./*.log ./*.trace)
