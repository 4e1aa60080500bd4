#!/usr/bin/env bash
# bench/prof_launches.sh SHAPE WHERE — on the device (repo root, build/ carried):
# where one configuration's time goes, launch by launch.  The configuration (the
# --where filter naming it; lce_ws unless PROF_FAMILY says) is tuned at SHAPE,
# then Nsight Compute reads every kernel launch of one `kevo verify` run of it
# (the op's launches: a user GEMM and a candidate kernel, or one fused kernel):
# duration, tensor pipe busy, SMs active, achieved occupancy, DRAM bytes and
# L2 sectors.  ncu never changes the clocks (--clock-control none).  The CSV
# goes to $OUT/launches.csv, a table is printed last.  Example (docs/lce_ws.md):
#   bench/prof_launches.sh B=1559,M=83,N=72,Ku=2441,Kc=212,ratio=1654 "BN == 96 && FUSE == 0 && ..."
set -u
# shellcheck source=bench/prof_common.sh
. "$(dirname "$0")/prof_common.sh"
prof_setup prof_launches.sh "${1:-}" "${2:-}" launches.db
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
M=$M,sm__cycles_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,launch__grid_size
timeout 200 ncu --csv --clock-control none --metrics "$M" --kernel-name "regex:${PROF_KERNELS:-lce_|fa_}" \
  --launch-count "${PROF_LAUNCHES:-6}" --target-processes all "$kevo" verify --db "$OUT/launches.db" --candidate 1 \
  --maps sorted >"$OUT/launches.csv" 2>"$OUT/launches.err"
echo "ncu rc=$?"
python3 - "$OUT/launches.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))  # kevo verify's own lines come first
first = next((i for i, r in enumerate(rows) if r[:1] == ["ID"]), None)
if first is None:
    sys.exit("no ncu rows (see launches.err)")
rows = rows[first:]
head = rows[0]
col = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value")}
launch = {}
for r in rows[1:]:
    k = (int(r[col["ID"]]), r[col["Kernel Name"]].split("(")[0])
    launch.setdefault(k, {})[r[col["Metric Name"]]] = (r[col["Metric Value"]].replace(",", ""), r[col["Metric Unit"]])
short = [("gpu__time_duration.sum", "time"), ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
         "tensor %"), ("sm__cycles_active.avg.pct_of_peak_sustained_elapsed", "SMs active %"),
         ("sm__warps_active.avg.pct_of_peak_sustained_active", "occupancy %"), ("dram__bytes_read.sum", "DRAM read"),
         ("dram__bytes_write.sum", "DRAM write"), ("lts__t_sectors.sum", "L2 sectors"), ("launch__grid_size", "grid")]
print("| launch | kernel | " + " | ".join(s for _, s in short) + " |")
print("|---" * (len(short) + 2) + "|")
for (i, name), m in sorted(launch.items()):
    cells = [f"{m[k][0]} {m[k][1]}".strip() if k in m else "-" for k, _ in short]
    print(f"| {i} | {name} | " + " | ".join(cells) + " |")
PY
