#!/usr/bin/env bash
# bench/prof_fa.sh SHAPE WHERE — on the device (repo root, build/ carried): what
# limits one fa_ws configuration.  The configuration (the --where filter naming
# it) is tuned at SHAPE; then Nsight Compute (clocks as found) reads its main
# kernel's pipe utilizations (tensor, XU: the MUFU exp2, FMA, ALU), issue
# rate, L2 and DRAM traffic, and samples its warps per SASS instruction
# (bench/prof_sass.py's table: where they wait, and on what).  Raw output and
# CSVs stay under $OUT.  Example (docs/fa_ws.md, v4):
#   bench/prof_fa.sh Bc=1200,H=4,Sq=48,D=64,Skv=2500,ratio=30 \
#     "BN == 160 && CONSUMERS == 2 && STAGES == 3 && QBUF == 1 && PP == 1"
set -u
# shellcheck source=bench/prof_common.sh
. "$(dirname "$0")/prof_common.sh"
PROF_OP=ikbo_fa PROF_FAMILY=fa_ws prof_setup prof_fa.sh "${1:-}" "${2:-}" fa.db
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active
M=$M,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,smsp__inst_executed.sum
run=("$kevo" verify --db "$OUT/fa.db" --candidate 1 --maps sorted)
timeout 200 ncu --csv --clock-control none --metrics "$M" --kernel-name regex:fa_ws_main --launch-count 1 \
  --target-processes all "${run[@]}" >"$OUT/fa.metrics.csv" 2>"$OUT/fa.metrics.err"
echo "ncu metrics rc=$?"
python3 - "$OUT/fa.metrics.csv" <<'PY'
import csv, io, sys
lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith('"')]
for r in csv.DictReader(io.StringIO("".join(lines))):
    print(f"  {r['Metric Name']:62s} {r['Metric Unit']:8s} {r['Metric Value']}")
PY
timeout 300 ncu --section SourceCounters --page source --print-source sass --csv --clock-control none \
  --kernel-name regex:fa_ws_main --launch-count 1 --target-processes all "${run[@]}" \
  >"$OUT/fa.src.csv" 2>"$OUT/fa.src.err"
echo "ncu source rc=$?"
python3 "$(dirname "$0")/prof_sass.py" "$OUT" fa
