#!/usr/bin/env bash
# bench/lce_ws_ab.sh — issue 38 A/B on the device: lce_ws configurations picked by
# a --where filter, exhaustive, at the shapes given, each into its own DB; the
# log of each run (kevo's in-run peers, cuBLASLt's candidate GEMM best of 8
# included) under $OUT; a table last.  Run from a staging folder holding kevo,
# libcjson.so.1 and home/ (templates, kernels, prompts):
#   bench/lce_ws_ab.sh WHERE SHAPE[:DTYPE] ...
# OP=ikbo_fa FAMILY=fa_ws does the same for another family.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=${KEVO_HOME:-$PWD/home} LD_LIBRARY_PATH=$PWD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
W=$1
shift
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
i=0
for sd in "$@"; do
  i=$((i + 1))
  shape=${sd%%:*}; dt=fp16; [ "$sd" != "$shape" ] && dt=${sd#*:}
  timeout ${TL:-280} ./kevo tune --op "${OP:-ikbo_lce}" --shape "$shape" --dtype "$dt" --family "${FAMILY:-lce_ws}" --policy "${POLICY:-exhaustive}" \
    --budget "${BUDGET:-40}" --where "$W" --db "$OUT/ab_$i.db" --no-bar ${EXTRA:-} >"$OUT/ab_$i.log" 2>&1
  echo "== [$i] $shape $dt rc=$?"
  grep -E "^peer (stage0|decomposed|beta1)" "$OUT/ab_$i.log" | sed -E 's/\(cuBLASLt user GEMM.*candidate GEMM/... cand GEMM/' | cut -c1-200
  grep -E "ms" "$OUT/ab_$i.log" | grep -E "^\[ *[0-9]+/" | sed -E 's/(lce|fa)_ws //; s/PINGPONG=0 //; s/BK=64 //; s/RASTER=0 //; s/TRIM=0 //; s/SBUF=2 //; s/SPLITK=1 //' | cut -c1-220
  tail -2 "$OUT/ab_$i.log"
  # without sources and cubins, so the DB comes back (bench/model_rank.py, kevo replay)
  [ -s "$OUT/ab_$i.db" ] && python3 "$(dirname "$0")/slim_db.py" "$OUT/ab_$i.db" && rm -f "$OUT/ab_$i.db-wal" "$OUT/ab_$i.db-shm"
done
