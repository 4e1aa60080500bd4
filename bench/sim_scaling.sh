#!/usr/bin/env bash
# bench/sim_scaling.sh — how the tuning loop keeps several GPUs busy, on a
# machine without one: the README's main job into fresh DBs on simulated GPUs
# (KEVO_SIM_GPUS=2) whose every evaluation takes $EVAL_MS ms (default 2000),
# with real NVRTC compiles, on one GPU (--devices 0) and on both (--devices
# all), with --ahead 1 (a round at a time) and --ahead $AHEAD (default 3).
# Choose EVAL_MS so that two GPUs evaluate more slowly than this machine
# compiles (on the 2-core CPU machine a compile takes ~1-2 s: 2000 ms), as on
# an H100/H200 host (a compile ~0.85 s on many cores, an evaluation ~0.1 s).
# With mpirun on the PATH, each --ahead also runs as `mpirun -np 2 kevo
# tune --mpi` (a simulated GPU per rank; rank 1's results come over MPI).
# COMPILE_MS=N simulates the compiles too (KEVO_SIM_COMPILE_MS: each sleeps N
# ms x 0.75..1.25), with JOBS (default 32) at once, as a host with many cores
# would run them (the 2x H200 host: ~1200 ms at 16-32 at once, EVAL_MS=41).
# Simulated GPUs measure nothing real (their times are a hash of the cubin):
# the figures are the scheduler's, not a kernel's.  Prints
# bench/multi_compare.py's table (graph, best, candidates per minute) for
# each --ahead, then bench/trace_idle.py's table of every run's trace (GPU
# busy share, where GPUs waited, each GPU's submit-to-result milliseconds).
set -u
OUT=${OUT:-/tmp/kevo-sim-scaling}
BUDGET=${BUDGET:-40}
EVAL_MS=${EVAL_MS:-2000}
AHEAD=${AHEAD:-3}
rm -rf "$OUT"
mkdir -p "$OUT"
export KEVO_HOME=${KEVO_HOME:-$PWD} KEVO_SIM_GPUS=2 KEVO_SIM_EVAL_MS=$EVAL_MS
echo "cores $(nproc); budget $BUDGET, simulated evaluation $EVAL_MS ms"
jobs=()
if [ -n "${COMPILE_MS:-}" ]; then
  export KEVO_SIM_COMPILE_MS=$COMPILE_MS
  jobs=(--jobs "${JOBS:-32}")
  echo "simulated compiles: $COMPILE_MS ms, ${JOBS:-32} at once"
fi
runs="0 all"
if command -v mpirun >/dev/null; then
  runs="$runs mpi"
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
traces=()
for ahead in 1 "$AHEAD"; do
  rows=()
  for dev in $runs; do
    name=a${ahead}_d${dev}
    t0=$(date +%s.%N)
    if [ "$dev" = mpi ]; then
      cmd=(mpirun --oversubscribe -np 2 --bind-to none build/kevo tune --mpi)
    else
      cmd=(build/kevo tune --devices "$dev")
    fi
    # the trace (stderr) apart from the log; mpirun passes KEVO_TRACE_EVAL on to rank 1
    KEVO_TRACE_EVAL=1 "${cmd[@]}" --op ikbo_lce --budget "$BUDGET" --ahead "$ahead" "${jobs[@]}" --no-bar \
      --warm-start none --db "$OUT/$name.db" >"$OUT/$name.log" 2>"$OUT/$name.trace"
    echo "== $name: rc=$? wall $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" \
      "$t0" "$(date +%s.%N)") s"
    rows+=("$OUT/$name.db:1")
    traces+=("$OUT/$name.trace")
  done
  echo "--ahead $ahead:"
  python3 bench/multi_compare.py "${rows[@]}"
done
python3 bench/trace_idle.py "${traces[@]}"
