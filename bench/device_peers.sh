#!/usr/bin/env bash
# bench/device_peers.sh SEED "POSITIONS GPU0" "POSITIONS GPU1" ... — on the
# device machine (repo root, build/ carried): issue 36's acceptance run.
# bench/shapes.sh on each GPU at once (CUDA_VISIBLE_DEVICES=k), each with
# its own DB, over the positions given for it (0 is the default shape, 1..12
# the public set, 13..20 the 8 shapes drawn from SEED, 21 the GEMM-bound
# shape): kevo tune at the default budget, then bench/peers.py beside `kevo
# verify --time` of the run's best on the same GPU.  Every ratio comes from
# one GPU and one job.
# Prints each GPU's table last; everything else goes into $OUT/peers_run.tgz.
#   bench/device_peers.sh 7 "0 1" "6 11" "12 13" "14 15 16"
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
SEED=$1
shift
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
  --format=csv,noheader
export PYTHONUNBUFFERED=1
k=0
for positions in "$@"; do
  dir=$OUT/gpu$k
  mkdir -p "$dir"
  # shapes.sh archives and removes the *.log of its own folder: its output goes beside it
  (CUDA_VISIBLE_DEVICES=$k OUT=$dir DB=$dir/shapes.db SHAPES="$positions" bench/shapes.sh "$SEED" \
     >"$OUT/gpu$k.log" 2>&1) &
  k=$((k + 1))
done
wait
for g in $(seq 0 $((k - 1))); do
  echo "== GPU $g: $(head -1 "$OUT/gpu$g.log")"
  grep -E "^\[|peers rc" "$OUT/gpu$g.log"
  cat "$OUT/gpu$g/shapes.md"
done
(cd "$OUT" && tar czf peers_run.tgz gpu* && rm -rf gpu*)
