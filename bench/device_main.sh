#!/usr/bin/env bash
# bench/device_main.sh — on the device machine (repo root, build/ carried):
# the README's main job twice with the same seed into two fresh DBs (wall
# time, the winner and its re-timing, whether the two name the same best or
# mark it tied), then a small distribution run (bench/dist3.txt).
# Logs and slimmed DBs go to $OUT; a short summary is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
for i in 1 2; do
  t0=$(date +%s.%N)
  timeout 300 build/kevo tune --op ikbo_lce --db "$OUT/main$i.db" --no-bar >"$OUT/main$i.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  echo "== main job $i: rc=$rc wall $(python3 -c "print(round($t1 - $t0, 1))") s"
  grep -E "^device|re-timed|^  #|^best|beats|no kernel" "$OUT/main$i.log"
  build/kevo report --db "$OUT/main$i.db" --top 6 >"$OUT/report$i.txt" 2>&1
  python3 bench/slim_db.py "$OUT/main$i.db" && rm -f "$OUT/main$i.db-wal" "$OUT/main$i.db-shm"
done
python3 - "$OUT/main1.db" "$OUT/main2.db" <<'PY'
import sqlite3, sys
best = []
for p in sys.argv[1:]:
    db = sqlite3.connect(p)
    bid = db.execute("select best_id from runs").fetchone()[0]
    row = db.execute("select family, params, median_ms, tied from candidates where id = ?", (bid,)).fetchone()
    tied = [r[0] for r in db.execute("select params from candidates where tied = 1")]
    best.append((row[0], row[1], row[2], row[3], tied))
same = best[0][:2] == best[1][:2]
cross = best[0][1] in best[1][4] or best[1][1] in best[0][4]
print("same best in both runs:", same, "| each other's tie group:", cross)
for b in best:
    print(f"  {b[0]} {b[1]} {b[2]:.4f} ms tied={b[3]} ({len(b[4])} in its tie group)")
PY
timeout 240 build/kevo tune --op ikbo_lce --shapes bench/dist3.txt --budget 16 --time-limit 90 --db "$OUT/dist.db" \
  --no-bar >"$OUT/dist.log" 2>&1
echo "== distribution rc=$?"
tail -6 "$OUT/dist.log"
python3 bench/slim_db.py "$OUT/dist.db"
