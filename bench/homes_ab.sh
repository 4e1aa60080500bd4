#!/usr/bin/env bash
# bench/homes_ab.sh — a template change's A/B on the device: the same kevo and
# the same lce_ws configurations (bench/lce_ws_ab.sh's --where filter, the
# model's order) timed with template tree A, then tree B, shape by shape on
# one GPU, so each pair of runs is seconds apart; then bench/homes_ab.py's
# table of B/A per configuration.  Run from the staging folder lce_ws_ab.sh
# wants (kevo, libcjson.so.1):
#   A_HOME=old/ B_HOME=new/ bench/homes_ab.sh WHERE SHAPE[:DTYPE] ...
# The trees must share the space file's model (else they time different
# configurations).  BUDGET, TL, POLICY, EXTRA as lce_ws_ab.sh.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
A_HOME=${A_HOME:?A_HOME: tree A (templates/, kernels/, prompts/)}
B_HOME=${B_HOME:?B_HOME: tree B}
here=$(dirname "$0")
W=$1
shift
i=0
for sd in "$@"; do
  i=$((i + 1))
  for side in A B; do
    home=$A_HOME; [ $side = B ] && home=$B_HOME
    OUT=$OUT/$side/$i KEVO_HOME=$home "$here/lce_ws_ab.sh" "$W" "$sd" >"$OUT/ab_${side}_$i.txt" 2>&1
  done
done
python3 "$here/homes_ab.py" "$OUT" "$@"
