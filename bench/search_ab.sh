#!/usr/bin/env bash
# bench/search_ab.sh — two kevo builds' default search, A then B, shape by
# shape, on the device machine (repo root, build/ carried): the README's
# `kevo tune` at each shape of SHAPES (positions in `bench/shapes.py list 1`
# with the default shape as 0), each build into its own DB per GPU (warm
# starts in the same order for both), A and B on the same GPU one after the
# other.  GPUS="0 1" splits SHAPES0 and SHAPES1 between two GPUs.
#   A_BIN, A_HOME  build A's kevo and its KEVO_HOME (templates/, kernels/)
#   B_BIN, B_HOME  build B (default build/kevo and the repo root)
#   FRESH=1        a fresh DB per shape (no warm starts)
# Per shape: A's and B's best verified ms, B/A, and each one's in-run best
# peer ratio (bench/search_ab.py); logs under $OUT/search_ab.tgz.
#   A_BIN=build/kevo_old A_HOME=build/home_old SHAPES0="0 13 9 21 11 3" \
#     SHAPES1="14 7 15 12 16 18" GPUS="0 1" bench/search_ab.sh
set -u
OUT=${OUT:-/tmp/kevo-out}
A_BIN=${A_BIN:?A_BIN: the kevo of build A}
A_HOME=${A_HOME:?A_HOME: build A\'s KEVO_HOME}
B_BIN=${B_BIN:-build/kevo}
B_HOME=${B_HOME:-$PWD}
mkdir -p "$OUT/L"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
mapfile -t L < <(echo "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70 fp16"; python3 bench/shapes.py list 1)
one() { # gpu position
  local g=$1 i=$2 shape dt sfx=""
  read -r shape dt <<<"${L[$i]}"
  [ "${FRESH:-0}" = 1 ] && sfx=_$i
  for v in A B; do
    local bin=$A_BIN home=$A_HOME
    [ $v = B ] && bin=$B_BIN home=$B_HOME
    CUDA_VISIBLE_DEVICES=$g KEVO_HOME=$home timeout 300 "$bin" tune --op ikbo_lce --shape "$shape" --dtype "$dt" \
      --db "$OUT/$v$g$sfx.db" --no-bar >"$OUT/L/${v}_${g}_$i.log" 2>&1
  done
  [ -n "$sfx" ] && python3 bench/search_ab.py "$OUT/A$g$sfx.db" "$OUT/B$g$sfx.db" >"$OUT/L/ab_${g}_$i.txt"
}
gpu() { # gpu positions...
  local g=$1
  shift
  for i in "$@"; do one "$g" "$i"; done
  [ "${FRESH:-0}" = 1 ] || python3 bench/search_ab.py "$OUT/A$g.db" "$OUT/B$g.db" >"$OUT/L/ab_$g.txt"
}
if [ -n "${GPUS:-}" ]; then
  for g in $GPUS; do
    v=SHAPES$g
    gpu "$g" ${!v} &
  done
  wait
else
  gpu 0 ${SHAPES:-0 13}
fi
tar czf "$OUT/search_ab.tgz" -C "$OUT" L
cat "$OUT"/L/ab_*.txt
