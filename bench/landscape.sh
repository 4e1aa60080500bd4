#!/usr/bin/env bash
# bench/landscape.sh — landscapes for the cost model, on the device machine
# (repo root, build/ carried): for each "FAMILY SHAPE DTYPE N [WHERE]" line on
# stdin, N configurations of FAMILY drawn uniformly at random (--policy
# random: an unbiased sample) measured at SHAPE, into $OUT/land_<i>.db
# (slimmed), then `kevo replay --model` on each.  Per line at most
# TIME_LIMIT seconds (default 90).  OP (default ikbo_lce) names the op.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
i=0
while read -r fam shape dtype n where; do
  [ -z "$fam" ] && continue
  i=$((i + 1))
  db="$OUT/land_$i.db"
  args=(--op "${OP:-ikbo_lce}" --family "$fam" --shape "$shape" --dtype "$dtype" --policy random --budget "$n"
        --time-limit "${TIME_LIMIT:-90}" --warm-start none --db "$db" --no-bar)
  [ -n "${where:-}" ] && args+=(--where "$where")
  timeout $(( ${TIME_LIMIT:-90} + 60 )) build/kevo tune "${args[@]}" >"$OUT/land_$i.log" 2>&1
  echo "== land_$i $fam $shape $dtype rc=$? $(grep -c '| FAILED' "$OUT/land_$i.log") failed"
  grep '| FAILED' "$OUT/land_$i.log" | head -3
  python3 bench/slim_db.py "$db" && build/kevo replay --db "$db" --model
done
