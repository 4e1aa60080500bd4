#!/usr/bin/env bash
# bench/shapes.sh — issue 9's acceptance run, on the device machine (repo root,
# build/ carried): the README's `kevo tune` (default budget unless BUDGET is
# set) at each shape of `bench/shapes.py list SEED` (the public set, then 8
# drawn from SEED), all into one DB (later shapes reuse compiled cubins and
# warm-start from earlier winners, as a user's kevo.db does), then the table.
#   bench/shapes.sh [SEED [FIRST [LAST]]]    shapes FIRST..LAST (1-based) of the list
# Env: BUDGET, TIME_LIMIT (per shape, s), DB (default $OUT/shapes.db).
# Logs, the slimmed DB and the table go to $OUT; the table is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
SEED=${1:-1}
FIRST=${2:-1}
LAST=${3:-20}
DB=${DB:-$OUT/shapes.db}
extra=()
[ -n "${BUDGET:-}" ] && extra+=(--budget "$BUDGET")
[ -n "${TIME_LIMIT:-}" ] && extra+=(--time-limit "$TIME_LIMIT")
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
i=0
while read -r shape dtype; do
  i=$((i + 1))
  [ "$i" -lt "$FIRST" ] || [ "$i" -gt "$LAST" ] && continue
  t0=$(date +%s.%N)
  timeout 420 build/kevo tune --op ikbo_lce --shape "$shape" --dtype "$dtype" --db "$DB" --no-bar "${extra[@]}" \
    >"$OUT/tune_$i.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\n' "$shape" "$dtype" "$(python3 -c "print($t1 - $t0)")" >>"$OUT/walls.tsv"
  echo "[$i] $shape $dtype rc=$rc $(tail -1 "$OUT/tune_$i.log")"
done < <(python3 bench/shapes.py list "$SEED")
python3 bench/shapes.py table "$DB" "$OUT/walls.tsv" | tee "$OUT/shapes.md"
