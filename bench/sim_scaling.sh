#!/usr/bin/env bash
# bench/sim_scaling.sh — how the tuning loop keeps several GPUs busy, on a
# machine without one: the README's main job into fresh DBs on simulated GPUs
# (KEVO_SIM_GPUS=2) whose every evaluation takes $EVAL_MS ms (default 2000),
# with real NVRTC compiles, on one GPU (--devices 0) and on both (--devices
# all), with --ahead 1 (a round at a time) and --ahead $AHEAD (default 3).
# Choose EVAL_MS so that two GPUs evaluate more slowly than this machine
# compiles (on the 2-core CPU machine a compile takes ~1-2 s: 2000 ms), as on
# an H100/H200 host (a compile ~0.85 s on many cores, an evaluation ~0.1 s).
# Simulated GPUs measure nothing real (their times are a hash of the cubin):
# the figures are the scheduler's, not a kernel's.  Prints
# bench/multi_compare.py's table (graph, best, candidates per minute) for
# each --ahead.
set -u
OUT=${OUT:-/tmp/kevo-sim-scaling}
BUDGET=${BUDGET:-40}
EVAL_MS=${EVAL_MS:-2000}
AHEAD=${AHEAD:-3}
rm -rf "$OUT"
mkdir -p "$OUT"
export KEVO_HOME=${KEVO_HOME:-$PWD} KEVO_SIM_GPUS=2 KEVO_SIM_EVAL_MS=$EVAL_MS
echo "cores $(nproc); budget $BUDGET, simulated evaluation $EVAL_MS ms"
for ahead in 1 "$AHEAD"; do
  rows=()
  for dev in 0 all; do
    name=a${ahead}_d${dev}
    t0=$(date +%s.%N)
    build/kevo tune --op ikbo_lce --budget "$BUDGET" --ahead "$ahead" --devices "$dev" --no-bar \
      --warm-start none --db "$OUT/$name.db" >"$OUT/$name.log" 2>&1
    echo "== $name: rc=$? wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
      "$t0" "$(date +%s.%N)") s"
    rows+=("$OUT/$name.db:1")
  done
  echo "--ahead $ahead:"
  python3 bench/multi_compare.py "${rows[@]}"
done
