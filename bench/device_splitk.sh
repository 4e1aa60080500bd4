#!/usr/bin/env bash
# bench/device_splitk.sh — on the device machine (repo root, build/ carried):
# lce_ws's SPLITK against the cost model that credits a split only where its
# round is MMA-bound (docs/lce_ws.md, v9).  `kevo tune --family lce_ws` with
# the default budget (greedy, 60 candidates) at each shape given, one DB per
# shape; default: the three shapes measured in v9 and the default shape
#   B=40,M=256  (DRAM-bound split round: the model's first choices do not split)
#   B=70,M=256  (22 tiles past one wave: the first choice splits)
#   B=20,M=1024 (44 tiles past one wave)
#   default     (B=1024, 8+ waves: nothing to split)
#   bash bench/device_splitk.sh [SHAPE|default ...]
# Each tune stops after $SPLITK_TIME_LIMIT s (default 100; the default shape
# 150) and the final re-timing, and all of them within $SPLITK_DEADLINE s
# (default 570: one device command may run 600): a tune gets at most what is
# left less a minute, a shape with under 90 s left is skipped (its row says
# so).  Logs (one file), a table and slimmed DBs go to
# $OUT (six files); the table is printed last: per shape the run's best (after
# the interleaved re-timing), its speedup over the stage-0 baseline and over
# the best peer, the model's first choice measured, the best candidate with
# SPLITK=1 and how many with SPLITK > 1 were evaluated.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
[ $# -eq 0 ] && set -- "B=40,M=256,N=256,Ku=512,Kc=4096,ratio=10" "B=70,M=256,N=256,Ku=512,Kc=4096,ratio=10" \
  "B=20,M=1024,N=256,Ku=512,Kc=4096,ratio=10" default
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader
LOG="$OUT/splitk_tunes.log"
TABLE="$OUT/splitk_table.md"
: >"$LOG"
{
  echo "| shape | best ms | speedup | vs best peer | best configuration | model's first: measured (predicted) ms | best SPLITK=1 ms | SPLITK>1 evaluated |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$TABLE"
start=$(date +%s)
deadline=${SPLITK_DEADLINE:-570}
i=0
for shape in "$@"; do
  i=$((i + 1))
  db="$OUT/splitk$i.db"
  rm -f "$db" "$db-wal" "$db-shm"
  if [ "$shape" = default ]; then
    shape_arg=()
    limit=${SPLITK_TIME_LIMIT:-150}
  else
    shape_arg=(--shape "$shape")
    limit=${SPLITK_TIME_LIMIT:-100}
  fi
  t0=$(date +%s)
  left=$((deadline - (t0 - start)))
  if [ "$left" -lt 90 ]; then
    echo "== $shape: skipped, ${left} s left"
    echo "| $shape | skipped (${left} s left of ${deadline}) | | | | | | |" >>"$TABLE"
    continue
  fi
  [ "$limit" -gt $((left - 60)) ] && limit=$((left - 60))
  echo "== $shape (time limit $limit s)" >>"$LOG"
  timeout $((left - 10)) build/kevo tune --op ikbo_lce ${shape_arg[@]+"${shape_arg[@]}"} --family lce_ws \
    --time-limit "$limit" --db "$db" --no-bar >>"$LOG" 2>&1
  rc=$?
  echo "== $shape: rc=$rc wall $(($(date +%s) - t0)) s"
  grep -E "^best|beats|no kernel|stop" "$LOG" | tail -2
  python3 - "$db" "$shape" "$rc" >>"$TABLE" <<'PY'
import json, sqlite3, sys
sys.path.insert(0, "bench")
from shapes import run_best  # the run's settled winner, as every bench script reports it
try:
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    run = db.execute("select id from runs order by id desc limit 1").fetchone()
    if run:
        peer = lambda names: db.execute("select min(median_ms) from run_peers where run_id = ? and shape_idx = 0 and "
                                        f"device = 0 and status = 'ok' and peer in ({names})", (run[0],)).fetchone()[0]
        run = (run[0], peer("'stage0'"), peer("'decomposed', 'beta1'"))
except sqlite3.Error:
    run = None
if not run:
    print(f"| {sys.argv[2]} | no run (tune rc={sys.argv[3]}) | | | | | | |")
    sys.exit()
rid, base, peer = run
ok = "run_id=? and family='lce_ws' and status='ok' and median_ms is not null"
best = run_best(db, rid, "c.params, c.median_ms")
if not best:
    print(f"| {sys.argv[2]} | nothing verified | | | | | | |")
    sys.exit()
params, ms = best
best_peer = min(x for x in (base, peer) if x) if (base or peer) else None
first = db.execute(f"select median_ms, model_ms from candidates where {ok} and model_ms is not null "
                   "order by model_ms, seq limit 1", (rid,)).fetchone()
rows = db.execute(f"select params, median_ms from candidates where {ok}", (rid,)).fetchall()
one = [m for p, m in rows if json.loads(p).get("SPLITK", 1) == 1]
split = [m for p, m in rows if json.loads(p).get("SPLITK", 1) > 1]
cfg = " ".join(f"{k}={v}" for k, v in json.loads(params).items())
print(f"| {sys.argv[2]} | {ms:.4f} | {base / ms:.2f}x | {best_peer / ms:.2f}x | {cfg} | "
      + (f"{first[0]:.4f} ({first[1]:.4f})" if first else "-") + " | "
      + (f"{min(one):.4f}" if one else "-") + f" | {len(split)} (best "
      + (f"{min(split):.4f}" if split else "-") + ") |")
PY
  [ -s "$db" ] && python3 bench/slim_db.py "$db" "$OUT/splitk${i}_slim.db" 2>/dev/null
  rm -f "$db" "$db-wal" "$db-shm"
done
cat "$TABLE"
