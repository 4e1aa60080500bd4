#!/usr/bin/env bash
# bench/shapes.sh — issue 9's acceptance run, on the device machine (repo root,
# build/ carried): the README's `kevo tune` (default budget unless BUDGET is
# set) at each shape of `bench/shapes.py list SEED` (the public set, then 8
# drawn from SEED), all into one DB (later shapes reuse compiled cubins and
# warm-start from earlier winners, as a user's kevo.db does); after each
# shape's tune, bench/peers.py times the PyTorch peers at that shape beside
# `kevo verify --time` of the run's best (before and after them, same GPU,
# same job) into $OUT/peers_$i.json; then the table (shapes.py table):
# kevo's in-run figures, the peers', and vs_best_peer over all of them.
#   bench/shapes.sh [SEED [FIRST [LAST]]]    shapes FIRST..LAST (1-based) of the list
#   (position 0 is the default shape, before the list: FIRST=0 includes it)
# Env: BUDGET, TIME_LIMIT (per shape, s), DB (default $OUT/shapes.db);
#   PEERS=0 skips bench/peers.py (the table then has kevo's in-run peers only);
#   SHAPES="0 1 6 ..." runs those positions instead of FIRST..LAST;
#   EXHAUSTIVE="i j ..." (1-based list positions): after the default run of each,
#   an exhaustive run over every family (the model's order) for EX_LIMIT seconds
#   (default 60) into its own DB, and the ratio of its best to the default run's.
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
i=-1
while read -r shape dtype; do
  i=$((i + 1))
  if [ -n "${SHAPES:-}" ]; then
    case " $SHAPES " in *" $i "*) ;; *) continue ;; esac
  elif [ "$i" -lt "$FIRST" ] || [ "$i" -gt "$LAST" ]; then
    continue
  fi
  t0=$(date +%s.%N)
  timeout 420 build/kevo tune --op ikbo_lce --shape "$shape" --dtype "$dtype" --db "$DB" --no-bar "${extra[@]}" \
    >"$OUT/tune_$i.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  printf '%s\t%s\t%s\n' "$shape" "$dtype" "$(python3 -c "print($t1 - $t0)")" >>"$OUT/walls.tsv"
  echo "[$i] $shape $dtype rc=$rc $(tail -1 "$OUT/tune_$i.log")"
  if [ "${PEERS:-1}" != 0 ]; then
    timeout 600 python3 bench/peers.py lce --shape "$shape" --dtype "$dtype" --kevo-db "$DB" \
      --json "$OUT/peers_$i.json" >"$OUT/peers_$i.log" 2>&1
    prc=$?
    echo "    peers rc=$prc $(grep -E '^(best_peer|vs_best_peer) ' "$OUT/peers_$i.log" | tr '\n' ' ')"
  fi
  case " ${EXHAUSTIVE:-} " in
  *" $i "*)
    timeout $(( ${EX_LIMIT:-60} + 120 )) build/kevo tune --op ikbo_lce --shape "$shape" --dtype "$dtype" \
      --policy exhaustive --budget 100000 --time-limit "${EX_LIMIT:-60}" --warm-start none --db "$OUT/exh_$i.db" \
      --no-bar >"$OUT/exh_$i.log" 2>&1
    python3 - "$DB" "$OUT/exh_$i.db" "$shape" "$dtype" "$i" <<'PY' | tee -a "$OUT/exhaustive.txt"
import sqlite3, sys
sys.path.insert(0, "bench")
from shapes import canon, run_best
want = canon(sys.argv[3])
def best(path):
    db = sqlite3.connect(path)
    runs = [r for r in db.execute("select id, shape, dtype from runs where compile_only = 0")
            if r[2] == sys.argv[4] and all(canon(r[1]).get(k) == v for k, v in want.items())]
    rid = runs[-1][0]
    n = db.execute("select count(*) from candidates where run_id = ? and status = 'ok'", (rid,)).fetchone()[0]
    ms = run_best(db, rid, "c.median_ms")[0]
    return ms, n
d, nd = best(sys.argv[1])
e, ne = best(sys.argv[2])
print(f"exhaustive [{sys.argv[5]}] {sys.argv[3]} {sys.argv[4]}: default budget {d:.4f} ms ({nd} verified), "
      f"exhaustive {e:.4f} ms ({ne} verified), exhaustive / default = {e / d:.3f}"
      f"{'' if e >= 0.95 * d else '  MORE THAN 5% FASTER'}")
PY
    python3 bench/slim_db.py "$OUT/exh_$i.db"
    ;;
  esac
done < <(python3 bench/shapes.py default; python3 bench/shapes.py list "$SEED")
python3 bench/shapes.py table "$DB" "$OUT/walls.tsv" "$OUT" | tee "$OUT/shapes.md"
[ -f "$OUT/exhaustive.txt" ] && cat "$OUT/exhaustive.txt"
python3 bench/slim_db.py "$DB"
# the device tool returns few files: the logs and peers.py's JSON travel as one archive
(cd "$OUT" && tar czf logs.tgz ./*.log walls.tsv $(ls peers_*.json 2>/dev/null) && rm -f ./*.log ./peers_*.json)
