#!/usr/bin/env bash
# bench/llm_competent.sh OUTDIR — on the CPU (no GPU needed): two compile-only
# runs answered by the loopback server playing a competent model
# (build/tests/kevo_fake_llm --match, tests/fixtures/llm/competent/script.txt: an
# edit of the lce_ws or lce_mma parent the prompt shows, a WMMA kernel, a SIMT
# kernel without tunables), for the GPU half in bench/device_llm.sh:
#   OUTDIR/comp.db    lce_ws at the default shape, budget 4: the edit's parent is
#                     the run's first template
#   OUTDIR/strong.db  the same, the templates held by --where to one tile that
#                     beats the cuBLAS peers at the default shape (H200: 0.372 ms
#                     against beta1's 0.401), so that the edit of it can win too
# Then, on the device (the DBs carried):
#   bench/device_llm.sh handoff OUTDIR/comp.db OUTDIR/strong.db
#   bench/device_llm.sh export "$OUT/strong.db"     (the handed-off copy)
set -euo pipefail
out=${1:?usage: bench/llm_competent.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
fake=${KEVO_FAKE_LLM:-$root/build/tests/kevo_fake_llm}
export KEVO_HOME=${KEVO_HOME:-$root}
mkdir -p "$out"
for name in comp strong; do
  [ -e "$out/$name.db" ] && { echo "llm_competent: $out/$name.db exists; give a new OUTDIR" >&2; exit 2; }
done
run() { # run NAME ARGS...: a fresh server (its script starts over), one compile-only run
  local name=$1; shift
  local pf=$out/$name.port
  rm -f "$pf"
  "$fake" --script "$root/tests/fixtures/llm/competent/script.txt" --port-file "$pf" --match >"$out/$name.server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do [ -s "$pf" ] && break; sleep 0.1; done
  "$kevo" tune --op ikbo_lce --compile-only --family lce_ws --generators template,llm \
    --llm-url "http://127.0.0.1:$(cat "$pf")/v1" --llm-budget 3 --db "$out/$name.db" --no-bar "$@" | tee "$out/$name.log"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
run comp --budget 4
run strong --budget 2 --where "STAGES == 4 && CLUSTER == 2 && FUSE == 1 && SBUF == 2 && BN == 224 && CONSUMERS == 2 && PINGPONG == 0 && BK == 64 && RASTER == 0 && TRIM == 0 && EPI == 1 && TRANS == 1"
