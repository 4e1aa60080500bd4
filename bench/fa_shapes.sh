#!/usr/bin/env bash
# bench/fa_shapes.sh — on the device machine (repo root, build/ carried): the
# ikbo_fa counterpart of bench/shapes.sh.  `kevo tune --op ikbo_fa` (default
# budget unless BUDGET is set) at each shape below, all into one DB; after
# each, bench/peers.py fa times SDPA on gathered K/V (flash, cuDNN, flash with
# the gather) and the Triton IKBO FA kernel beside `kevo verify --time` of the
# run's best (before and after them); then one table of TFLOP/s.
#   bench/fa_shapes.sh [FIRST [LAST]]    shapes FIRST..LAST (1-based) of the list
# Env: BUDGET, TIME_LIMIT (per shape, s), DB (default $OUT/fa_shapes.db).
# The table goes to $OUT/fa_shapes.md, the logs and JSON into $OUT/fa_logs.tgz.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
FIRST=${1:-1}
LAST=${2:-99}
DB=${DB:-$OUT/fa_shapes.db}
extra=()
[ -n "${BUDGET:-}" ] && extra+=(--budget "$BUDGET")
[ -n "${TIME_LIMIT:-}" ] && extra+=(--time-limit "$TIME_LIMIT")
SHAPES=(
  "Bc=2048,H=2,Sq=64,D=128,Skv=2048,ratio=64 fp16"
  "Bc=2048,H=2,Sq=64,D=128,Skv=512,ratio=64 fp16"
  "Bc=2048,H=2,Sq=64,D=128,Skv=8192,ratio=64 fp16"
  "Bc=1000,H=4,Sq=32,D=64,Skv=3000,ratio=25 fp16"
  "Bc=2047,H=2,Sq=64,D=128,Skv=4096,ratio=63 bf16"
  "Bc=1200,H=4,Sq=48,D=64,Skv=2500,ratio=30 fp16"
)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
i=0
for line in "${SHAPES[@]}"; do
  i=$((i + 1))
  [ "$i" -lt "$FIRST" ] || [ "$i" -gt "$LAST" ] && continue
  read -r shape dtype <<<"$line"
  timeout 420 build/kevo tune --op ikbo_fa --shape "$shape" --dtype "$dtype" --db "$DB" --no-bar "${extra[@]}" \
    >"$OUT/fa_tune_$i.log" 2>&1
  trc=$?
  echo "[$i] $shape $dtype tune rc=$trc $(tail -1 "$OUT/fa_tune_$i.log")"
  timeout 600 python3 bench/peers.py fa --shape "$shape" --dtype "$dtype" --kevo-db "$DB" \
    --json "$OUT/fa_peers_$i.json" >"$OUT/fa_peers_$i.log" 2>&1
  prc=$?
  echo "    peers rc=$prc $(grep -E '^(best_peer|vs_best_peer) ' "$OUT/fa_peers_$i.log" | tr '\n' ' ')"
done
python3 - "$OUT" <<'PY' | tee "$OUT/fa_shapes.md"
import glob, json, math, os, sys
names = ["sdpa_gathered", "sdpa_gathered_cudnn", "sdpa_gather", "triton_ikbo_fa"]
print("| shape | dtype | kevo ms | kevo TFLOP/s | " + " | ".join(f"{n} TFLOP/s" for n in names) +
      " | best peer | vs_best_peer |")
print("|---" * (len(names) + 6) + "|")
logs = []
paths = sorted(glob.glob(os.path.join(sys.argv[1], "fa_peers_*.json")), key=lambda p: int(p.split("_")[-1][:-5]))
for path in paths:
    d = json.load(open(path))
    k = d.get("kevo_ms")
    cell = lambda r: (f"{r['tflops']:.0f}" if r["status"] == "ok" and r.get("tflops") else r["status"])
    vs = d.get("vs_best_peer")
    if vs:
        logs.append(math.log(vs))
    kms = f"{k:.4f}" if k else "missing"
    ktf = f"{d['flops'] / k / 1e9:.0f}" if k else "-"
    vtxt = (f"{vs:.2f}x" + (" LOSES" if vs < 1 else "")) if vs else "-"
    print(f"| {d['shape_arg']} | {d['dtype']} | {kms} | {ktf} | "
          + " | ".join(cell(d["peers"][n]) if n in d["peers"] else "-" for n in names)
          + f" | {d.get('best_peer') or '-'} | {vtxt} |")
if logs:
    print(f"\ngeometric mean of vs_best_peer over {len(logs)} shapes: {math.exp(sum(logs) / len(logs)):.2f}x")
PY
python3 bench/slim_db.py "$DB"
(cd "$OUT" && tar czf fa_logs.tgz ./fa_*.log $(ls fa_peers_*.json 2>/dev/null) && rm -f ./fa_*.log ./fa_peers_*.json)
