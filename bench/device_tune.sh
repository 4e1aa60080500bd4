#!/usr/bin/env bash
# bench/device_tune.sh — on the device machine (repo root, build/ carried):
# GPU tests, then the main job at the default shape, then the best candidate
# verified at other shapes, dtype and maps.  Logs and the DB go to $OUT.
#   usage: bench/device_tune.sh [BUDGET] [POLICY]
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
BUDGET=${1:-60}
POLICY=${2:-greedy}
# the card as found (nothing here changes it)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv 2>&1 | tee "$OUT/tune.log.gpu"
{ build/tests/test_gpu_ref; echo "test_gpu_ref rc=$?"; build/tests/test_gpu_lce; echo "test_gpu_lce rc=$?"; } \
  >"$OUT/gpu_tests.log" 2>&1
grep -E "rc=|FAILED|PASSED|rel_err|ERROR" "$OUT/gpu_tests.log" | tail -20
build/kevo tune --op ikbo_lce --budget "$BUDGET" --policy "$POLICY" --db "$OUT/kevo.db" --no-bar >"$OUT/tune.log" 2>&1
echo "tune rc=$?"
build/kevo report --db "$OUT/kevo.db" --top 15 >"$OUT/report.txt" 2>&1
: >"$OUT/verify.log"
for args in "--shape B=2048,ratio=70 --time" "--shape B=1024,ratio=10 --time" "--shape B=1024,ratio=1000 --time" \
            "--dtype bf16 --time" "--maps shuffled"; do
  echo "== kevo verify $args" >>"$OUT/verify.log"
  build/kevo verify --db "$OUT/kevo.db" $args >>"$OUT/verify.log" 2>&1
  echo "rc=$?" >>"$OUT/verify.log"
done
# the best candidate's SASS: which tensor-core instructions it uses
python3 - "$OUT/kevo.db" "$OUT/best.cubin" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("select b.cubin from candidates c join binaries b on b.key = c.binary_key "
                 "where c.status = 'ok' order by c.speedup desc limit 1").fetchone()
if row:
    open(sys.argv[2], "wb").write(row[0])
PY
if [ -f "$OUT/best.cubin" ]; then
  cuobjdump -sass "$OUT/best.cubin" >"$OUT/best.sass" 2>&1
  echo "best SASS:" $(grep -oE "HGMMA|HMMA|UTMALDG|USETMAXREG|LDSM" "$OUT/best.sass" | sort | uniq -c)
fi
tail -4 "$OUT/tune.log"
cat "$OUT/verify.log"
head -30 "$OUT/report.txt"
