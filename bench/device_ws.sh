#!/usr/bin/env bash
# bench/device_ws.sh — on the device machine (repo root, build/ carried): the
# persistent warp-specialized family (templates/lce_ws.*).
#   bench/device_ws.sh check      GPU tests (every family on odd shapes), then a
#                                 landscape of lce_ws at the default shape
#   bench/device_ws.sh ncu WHERE...  Nsight Compute sections for one launch of
#                                 each configuration WHERE selects
#   bench/device_ws.sh point SHAPE DTYPE WHERE  lce_ws tuned (exhaustive over WHERE)
#                                 at one shape
#   bench/device_ws.sh split      the SPLITK GPU tests, then at each shape of
#                                 $SPLIT_SHAPES: the README's tune of lce_ws, and
#                                 its best configuration with SPLITK 1..4 timed
#                                 side by side (exhaustive over SPLITK); with
#                                 $SPLIT_WHERE (a fixed tile) no tune, that
#                                 tile with every SPLITK the space allows; then
#                                 with $SPLIT_TUNE (a shape) the README's tune
#                                 of lce_ws there, and its SPLITK > 1 candidates
#   bench/device_ws.sh main [N]   the main job (all families, greedy, budget N),
#                                 then its best verified and timed over the sweep
#                                 B x candidates-per-user x dtype, as a table
# Logs and DBs go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
MODE=${1:-check}

# slim copies (no sources, no cubins) small enough to come back
slim() { python3 bench/slim_db.py "$1" "$2"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv,noheader

if [ "$MODE" = check ]; then
  timeout 300 build/tests/test_gpu_lce >"$OUT/gpu_lce.log" 2>&1
  echo "test_gpu_lce rc=$?"
  grep -E "lce_ws|FAILED|PASSED" "$OUT/gpu_lce.log" | tail -20
  WHERE=${WS_WHERE:-'RASTER == 0 && (STAGES == 3 || STAGES == 4) && BN == 256 && CONSUMERS == 2'}
  timeout 240 build/kevo tune --op ikbo_lce --family lce_ws --policy exhaustive --budget 400 --where "$WHERE" \
    --eval-timeout 15 --time-limit 220 --db "$OUT/ws_landscape.db" --no-bar >"$OUT/ws_landscape.log" 2>&1
  echo "landscape rc=$?"
  grep -E "FAILED|failed|wrong|timeout" "$OUT/ws_landscape.log" | head -5
  tail -2 "$OUT/ws_landscape.log"
  python3 - "$OUT/ws_landscape.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("status:", db.execute("select group_concat(status || ' ' || n) from "
                            "(select status, count(*) n from candidates group by status)").fetchone()[0])
for r in db.execute("select params, median_ms, speedup from candidates where status='ok' "
                    "order by median_ms limit 12"):
    print(f"  {r[1]:.4f} ms {r[2]:.2f}x  {r[0]}")
PY
  slim "$OUT/ws_landscape.db" "$OUT/ws_landscape_slim.db" && rm -f "$OUT/ws_landscape.db"
  exit 0
fi

if [ "$MODE" = ncu ]; then
  # Nsight Compute on one launch of each named configuration; clocks left as they are
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  echo "ncu: ${NCU:-none}"
  [ -n "$NCU" ] || exit 0
  shift
  i=0
  for where in "$@"; do
    i=$((i + 1))
    timeout 150 "$NCU" --clock-control none --target-processes all --kernel-name regex:'lce_ws_fused|lce_cand_gemm' \
      --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats --section SourceCounters build/kevo tune --op ikbo_lce --family lce_ws,lce_wgmma --policy exhaustive \
      --where "$where" --maps sorted --reps 2 --warmup 1 --db "$OUT/ncu$i.db" --no-bar >"$OUT/ncu$i.txt" 2>&1
    echo "== ncu $i rc=$? ($where)"
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1/TEX Cache Throughput|Shared|Tensor|Issue Slots|Stall|Warp Cycles|ERR|==PROF==" "$OUT/ncu$i.txt" | head -40
  done
  exit 0
fi

if [ "$MODE" = point ]; then
  # the family tuned at one sweep point: bench/device_ws.sh point SHAPE DTYPE WHERE
  tag=$(echo "$2_$3" | tr ',=' '__')
  timeout 200 build/kevo tune --op ikbo_lce --shape "$2" --dtype "$3" --family lce_ws --policy exhaustive \
    --budget 100 --where "$4" --db "$OUT/point_$tag.db" --no-bar >"$OUT/point_$tag.log" 2>&1
  echo "point $2 $3 rc=$?"
  grep -E "re-timed|^  #|^best" "$OUT/point_$tag.log"
  python3 - "$OUT/point_$tag.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for r in db.execute("select id, params, median_ms, speedup, coalesce(tied, 0) from candidates where status = 'ok' "
                    "order by median_ms limit 10"):
    print(f"  #{r[0]} {r[2]:.4f} ms {r[3]:.2f}x tied={r[4]}  {r[1]}")
PY
  slim "$OUT/point_$tag.db" "$OUT/point_${tag}_slim.db" && rm -f "$OUT/point_$tag.db"
  exit 0
fi

if [ "$MODE" = split ]; then
  KEVO_GPU_TESTS=test_persistent_family KEVO_GPU_CASES=SPLITK timeout 240 build/tests/test_gpu_lce \
    >"$OUT/gpu_split.log" 2>&1
  echo "test_gpu_lce (SPLITK cases) rc=$?"
  grep -E "SPLITK|FAILED|PASSED" "$OUT/gpu_split.log" | sed -E 's/ +/ /g' | cut -c1-200 | tail -20
  SHAPES=${SPLIT_SHAPES:-"B=300,M=256,N=256,Ku=512,Kc=4096,ratio=10 B=256,ratio=70 B=300,M=900,N=256,Ku=2500,Kc=400,ratio=3"}
  i=0
  : >"$OUT/split_table.txt"
  for shape in $SHAPES; do
    i=$((i + 1))
    where=${SPLIT_WHERE:-}
    if [ -z "$where" ]; then
      timeout 120 build/kevo tune --op ikbo_lce --shape "$shape" --family lce_ws --db "$OUT/split$i.db" --no-bar \
        >"$OUT/split$i.log" 2>&1
      echo "tune $shape rc=$?"
      tail -1 "$OUT/split$i.log"
      # the tune's best, with every SPLITK the space allows at this shape
      where=$(python3 - "$OUT/split$i.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
r = db.execute("select params from candidates where status='ok' and family='lce_ws' "
               "order by median_ms limit 1").fetchone()
if r:
    import json
    print(" && ".join(f"{k} == {v}" for k, v in json.loads(r[0]).items() if k != "SPLITK"))
PY
)
    fi
    [ -n "$where" ] || continue
    timeout 120 build/kevo tune --op ikbo_lce --shape "$shape" --family lce_ws --policy exhaustive --budget 8 \
      --where "$where" --db "$OUT/split$i.db" --no-bar >"$OUT/split${i}x.log" 2>&1
    echo "exhaustive over SPLITK at $shape rc=$?"
    python3 - "$OUT/split$i.db" "$shape" >>"$OUT/split_table.txt" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
run = db.execute("select max(id) from runs").fetchone()[0]
rows = db.execute("select params, median_ms, speedup from candidates where run_id=? and status='ok'", (run,)).fetchall()
best = db.execute("select min(median_ms) from candidates where status='ok' and run_id<?", (run,)).fetchone()[0]
tb = f"(tune's best {best:.4f} ms)" if best else ""
for p, ms, sp in sorted(rows, key=lambda r: json.loads(r[0]).get("SPLITK", 1)):
    k = json.loads(p).get("SPLITK", 1)
    print(f"{sys.argv[2]:<45} SPLITK={k} {ms:.4f} ms {sp:.2f}x {tb} {p}")
bad = db.execute("select count(*) from candidates where run_id=? and status!='ok'", (run,)).fetchone()[0]
if bad:
    print(f"{sys.argv[2]:<45} {bad} candidates not ok")
PY
    slim "$OUT/split$i.db" "$OUT/split${i}_slim.db" && rm -f "$OUT/split$i.db"
  done
  if [ -n "${SPLIT_TUNE:-}" ]; then
    timeout 150 build/kevo tune --op ikbo_lce --shape "$SPLIT_TUNE" --family lce_ws --time-limit 120 \
      --db "$OUT/split_tune.db" --no-bar >"$OUT/split_tune.log" 2>&1
    echo "tune $SPLIT_TUNE rc=$?"
    tail -1 "$OUT/split_tune.log"
    python3 - "$OUT/split_tune.db" "$SPLIT_TUNE" >>"$OUT/split_table.txt" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select params, median_ms from candidates where status='ok' order by median_ms").fetchall()
if rows:
    print(f"tune {sys.argv[2]}: best {rows[0][1]:.4f} ms {rows[0][0]}")
    for p, ms in rows:
        if json.loads(p).get("SPLITK", 1) > 1:
            print(f"  SPLITK>1 evaluated: {ms:.4f} ms {p}")
PY
    slim "$OUT/split_tune.db" "$OUT/split_tune_slim.db" && rm -f "$OUT/split_tune.db"
  fi
  cat "$OUT/split_table.txt"
  exit 0
fi

BUDGET=${2:-60}
timeout 300 build/kevo tune --op ikbo_lce --budget "$BUDGET" --time-limit 280 --db "$OUT/kevo.db" --no-bar \
  >"$OUT/tune.log" 2>&1
echo "tune rc=$?"
tail -3 "$OUT/tune.log"
build/kevo report --db "$OUT/kevo.db" --top 10 >"$OUT/report.txt" 2>&1
build/kevo report --db "$OUT/kevo.db" --svg "$OUT/tune.svg" >/dev/null 2>&1
: >"$OUT/sweep.log"
for dt in fp16 bf16; do
  for b in 512 1024 2048 3072; do
    for r in 10 70 1000; do
      echo "== $dt B=$b ratio=$r" >>"$OUT/sweep.log"
      timeout 60 build/kevo verify --db "$OUT/kevo.db" --shape "B=$b,ratio=$r" --dtype $dt --time >>"$OUT/sweep.log" 2>&1
      echo "rc=$?" >>"$OUT/sweep.log"
    done
  done
done
python3 - "$OUT/sweep.log" "$OUT/sweep.md" <<'PY'
import re, sys
rows, cur = [], None
for line in open(sys.argv[1]):
    m = re.match(r"== (\w+) B=(\d+) ratio=(\d+)", line)
    if m:
        cur = {"dt": m[1], "B": m[2], "r": m[3], "ok": False}
        rows.append(cur)
    elif cur and ": ok," in line:
        cur["ok"] = True
        cur["rel"] = re.search(r"rel_err ([0-9.e+-]+)", line)[1]
    elif cur and "stage-0 baseline" in line:
        m = re.search(r": ([0-9.]+) ms, ([0-9.]+) TFLOP/s \((\d+)% of the cuBLAS peak, (\d+) TFLOP/s\); "
                      r"stage-0 baseline ([0-9.]+) ms -> speedup ([0-9.]+)x", line)
        if m:
            cur.update(ms=m[1], tf=m[2], frac=m[3], peak=m[4], base=m[5], sp=m[6])
with open(sys.argv[2], "w") as f:
    f.write("| dtype | B | cands/user | verified (rel_err) | baseline ms | kevo ms | speedup | TFLOP/s | of cuBLAS peak |\n")
    f.write("|---|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        f.write(f"| {r['dt']} | {r['B']} | {r['r']} | {'yes (' + r['rel'] + ')' if r['ok'] else 'NO'} | "
                f"{r.get('base','-')} | {r.get('ms','-')} | {r.get('sp','-')}x | {r.get('tf','-')} | "
                f"{r.get('frac','-')}% of {r.get('peak','-')} |\n")
print(open(sys.argv[2]).read())
PY
head -14 "$OUT/report.txt"
slim "$OUT/kevo.db" "$OUT/kevo_slim.db" && rm -f "$OUT/kevo.db"
