#!/usr/bin/env bash
# bench/device_multi.sh — on a device machine with two or more GPUs (repo root,
# build/ carried; nvidia-h200-x2): the README's main job at budget 120 on one
# GPU and on every GPU (--devices all), first into fresh DBs (compiles
# included), then again with the compile cache of the first run (both warm,
# so that the figure is the GPUs' evaluation rate); then planted faults
# (a hang among them) on every GPU.  Logs and slimmed DBs go to $OUT; the
# comparison table (bench/multi_compare.py) is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
BUDGET=${BUDGET:-120}
nvidia-smi -L
nproc
ldd build/kevo | grep -E "not found|mpi|cjson"
tune() { # name, then kevo tune's options
  local name=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  timeout "${LIMIT:-200}" build/kevo tune --op ikbo_lce --budget "$BUDGET" --no-bar "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  echo "== $name: rc=$rc wall $(python3 -c "print(round($t1 - $t0, 1))") s"
  grep -E "^GPU|GPUs:|^best|beats|no kernel|^run .* done" "$OUT/$name.log"
}
copy() { python3 -c "import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)" "$1" "$2"; }
tune cold1 --devices 0 --db "$OUT/cold1.db"
copy "$OUT/cold1.db" "$OUT/warm1.db"
copy "$OUT/cold1.db" "$OUT/warm2.db"
tune cold2 --devices all --db "$OUT/cold2.db"
LIMIT=150 tune warm1 --devices 0 --warm-start none --db "$OUT/warm1.db"
LIMIT=150 tune warm2 --devices all --warm-start none --db "$OUT/warm2.db"
# a planted hang (FAULT=3) and the other planted faults, on every GPU
t0=$(date +%s.%N)
KEVO_FAULT_INJECT=1 timeout 150 build/kevo tune --op ikbo_lce --templates tests/fixtures/faults --family lce_faults \
  --policy exhaustive --budget 12 --eval-timeout 20 --compile-timeout 10 --devices all --no-bar \
  --db "$OUT/faults.db" >"$OUT/faults.log" 2>&1
echo "== faults: rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
grep -E "GPU|FAILED|done" "$OUT/faults.log" | cut -c1-220
python3 - "$OUT/faults.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("select seq, json_extract(params, '$.FAULT'), device, round(eval_s, 2), status, fail "
                      "from candidates order by seq"):
    print("  seq %s FAULT=%s device idx %s eval %s s %s %s" % row)
PY
for d in cold1 cold2 warm1 warm2 faults; do
  python3 bench/slim_db.py "$OUT/$d.db" && rm -f "$OUT/$d.db-wal" "$OUT/$d.db-shm"
done
python3 bench/multi_compare.py "$OUT/cold1.db:1" "$OUT/cold2.db:1" "$OUT/warm1.db:2" "$OUT/warm2.db:2"
