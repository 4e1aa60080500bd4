#!/usr/bin/env bash
# bench/prof_stall.sh SHAPE WHERE — on the device (repo root, build/ carried): where
# the warps of one lce_ws configuration wait.  The configuration (the --where
# filter naming it) is tuned at SHAPE, then Nsight Compute samples its candidate
# kernel's warps (SourceCounters: stall samples per SASS instruction, clocks as
# found) and the same for cuBLAS's kernel on the candidate GEMM alone
# (bench/prof_cand_gemm.py).  Prints, per kernel, the samples grouped by what
# the instruction is (an mbarrier wait, a WGMMA wait, a named barrier, a
# global load or store, other), by stall reason, the executed instructions by
# opcode, and the 15 instructions with the most samples.
# The per-instruction CSVs stay under $OUT.  Example (docs/lce_ws.md, v14):
#   bench/prof_stall.sh B=1024,M=433,N=200,Ku=512,Kc=3500,U=1 "BN == 224 && ... && EPI == 0"
set -u
# shellcheck source=bench/prof_common.sh
. "$(dirname "$0")/prof_common.sh"
prof_setup prof_stall.sh "${1:-}" "${2:-}" stall.db
src=(--section SourceCounters --page source --print-source sass --csv --clock-control none)
timeout 300 ncu "${src[@]}" --kernel-name regex:"${PROF_KERNEL:-lce_ws_cand}" --launch-count 1 --target-processes all \
  "$kevo" verify --db "$OUT/stall.db" --candidate 1 --maps sorted >"$OUT/kevo.src.csv" 2>"$OUT/kevo.src.err"
echo "ncu kevo rc=$?"
timeout 300 ncu "${src[@]}" --kernel-name regex:'nvjet|gemm|sm90' --launch-skip 4 --launch-count 1 \
  python3 bench/prof_cand_gemm.py "$shape" fp16 >"$OUT/cublas.src.csv" 2>"$OUT/cublas.src.err"
echo "ncu cublas rc=$?"
python3 "$(dirname "$0")/prof_sass.py" "$OUT" kevo cublas
