#!/usr/bin/env bash
# bench/homes_ab.sh — a template change's A/B on the device: the same kevo and
# the same lce_ws configurations (bench/lce_ws_ab.sh's --where filter, the
# model's order) timed with template tree A, then tree B, shape by shape on
# one GPU, so each pair of runs is seconds apart; then bench/homes_ab.py's
# table of B/A per configuration ($OUT/homes_ab.txt; logs and DBs in
# $OUT/homes_ab.tgz).  Run from the staging folder lce_ws_ab.sh
# wants (kevo, libcjson.so.1):
#   A_HOME=old/ B_HOME=new/ bench/homes_ab.sh WHERE SHAPE[:DTYPE] ...
# Trees whose models differ may order, and so time, different
# configurations: the table compares those both timed.  BUDGET, TL, POLICY,
# EXTRA as lce_ws_ab.sh.
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
python3 "$here/homes_ab.py" "$OUT" "$@" | tee "$OUT/homes_ab.txt"
# the device tool returns few files: the logs and DBs travel as one archive
# (tar xzf homes_ab.tgz, then homes_ab.py -v . SHAPE... reads them again)
(cd "$OUT" && tar czf homes_ab.tgz ab_*.txt A B && rm -rf ab_*.txt A B)
