# shellcheck shell=bash
# bench/prof_common.sh — sourced by bench/prof_l2.sh and bench/prof_stall.sh:
# prof_setup NAME SHAPE WHERE DB checks the arguments, sets OUT, KEVO_HOME and
# kevo, names the GPU, and tunes the one configuration WHERE names at SHAPE
# into DB (budget 1), printing its line: of lce_ws, or of $PROF_FAMILY of op
# $PROF_OP when they are set.  Then ncu profiles the kernel the regex
# $PROF_KERNEL names (default lce_ws_cand; a FUSE=1 configuration runs
# lce_ws_fused) in `"$kevo" verify --db DB --candidate 1`, and cuBLAS's kernel
# on the candidate GEMM alone in `python3 bench/prof_cand_gemm.py SHAPE fp16`.
prof_setup() {
  local name=$1 db=$4
  shape=${2:?usage: bench/$name SHAPE WHERE}
  where=${3:?usage: bench/$name SHAPE WHERE}
  OUT=${OUT:-/tmp/kevo-out}
  mkdir -p "$OUT"
  export KEVO_HOME=${KEVO_HOME:-$PWD}
  kevo=${KEVO:-build/kevo}
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 200 "$kevo" tune --op "${PROF_OP:-ikbo_lce}" --family "${PROF_FAMILY:-lce_ws}" --shape "$shape" --budget 1 --where "$where" \
    --db "$OUT/$db" --no-bar 2>&1 | grep -E "^\[|^best|^peer (beta1|decomposed)" | cut -c1-220
}
