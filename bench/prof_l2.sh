#!/usr/bin/env bash
# bench/prof_l2.sh SHAPE WHERE — on the device (repo root, build/ carried): one
# lce_ws configuration (the --where filter naming it) tuned at SHAPE (naming B, M,
# N and Kc), then
# Nsight Compute on its candidate kernel and on cuBLAS's kernel for the same
# candidate GEMM alone (bench/prof_cand_gemm.py): time, tensor pipe, L2
# sectors read/written and from the SMs' texture path (TMA), L2 hit rate,
# DRAM bytes, instructions, the SM clock the kernel ran at.  ncu never changes the clocks (--clock-control
# none).  CSVs and a table under $OUT.  Example (docs/lce_ws.md, v13 profile):
#   bench/prof_l2.sh B=1024,M=433,N=200,Ku=512,Kc=3500,U=1 "BN == 256 && CONSUMERS == 2 && PINGPONG == 0 &&
#     STAGES == 3 && BK == 64 && CLUSTER == 1 && FUSE == 0 && EPI == 1 && RASTER == 1 && URES == 0 &&
#     TRANS == 1 && TRIM == 24 && SBUF == 4"
# PROF_METRICS=a,b,... adds ncu metrics to both kernels' pass (docs/lce_ws.md v35:
# l1tex__m_xbar2l1tex_read_bytes.sum, the bytes into the SMs over the crossbar).
# With PROF_MIX=1 one more ncu pass per kernel: the warp-state section (cycles
# per issued instruction, Nsight's stall rules).  bench/prof_stall.sh has the
# stalls and instructions per SASS instruction.
set -u
# shellcheck source=bench/prof_common.sh
. "$(dirname "$0")/prof_common.sh"
prof_setup prof_l2.sh "${1:-}" "${2:-}" prof.db
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_sectors.sum
M=$M,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_tex.sum,lts__t_sector_hit_rate.pct
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg.per_second
M=$M${PROF_METRICS:+,$PROF_METRICS}
timeout 200 ncu --csv --clock-control none --metrics "$M" --kernel-name regex:"${PROF_KERNEL:-lce_ws_cand}" --launch-count 1 \
  --target-processes all "$kevo" verify --db "$OUT/prof.db" --candidate 1 --maps sorted >"$OUT/kevo.csv" 2>"$OUT/kevo.err"
echo "ncu kevo rc=$?"
# PyTorch's batched GEMM runs a few times first: the fifth launch is profiled
timeout 200 ncu --csv --clock-control none --metrics "$M" --kernel-name regex:'nvjet|gemm|sm90' --launch-skip 4 \
  --launch-count 1 python3 bench/prof_cand_gemm.py "$shape" fp16 >"$OUT/cublas.csv" 2>"$OUT/cublas.err"
echo "ncu cublas rc=$?"
if [ "${PROF_MIX:-0}" = 1 ]; then
  for name in kevo cublas; do
    if [ $name = kevo ]; then
      tgt=(--kernel-name regex:"${PROF_KERNEL:-lce_ws_cand}" --launch-count 1 --target-processes all "$kevo" verify --db "$OUT/prof.db"
        --candidate 1 --maps sorted)
    else
      tgt=(--kernel-name regex:'nvjet|gemm|sm90' --launch-skip 4 --launch-count 1 python3 bench/prof_cand_gemm.py
        "$shape" fp16)
    fi
    timeout 200 ncu --csv --clock-control none --section WarpStateStats "${tgt[@]}" >"$OUT/$name.stall.csv" \
      2>"$OUT/$name.stall.err"
    echo "ncu $name warp state rc=$?"
  done
fi
python3 - "$OUT" <<'PY'
import csv, io, sys
for name in ("kevo", "cublas"):
    lines = [l for l in open(f"{sys.argv[1]}/{name}.csv").read().splitlines() if l.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    print(f"== {name}: {rows[0]['Kernel Name'][:70] if rows else 'no rows (see ' + name + '.err)'}")
    for r in rows:
        print(f"  {r['Metric Name']:70s} {r['Metric Unit']:10s} {r['Metric Value']}")
    try:
        lines = [l for l in open(f"{sys.argv[1]}/{name}.stall.csv").read().splitlines() if l.startswith('"')]
    except OSError:
        continue
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        if "Stall" in r.get("Metric Name", "") or "Warp Cycles" in r.get("Metric Name", ""):
            print(f"  {r['Metric Name']:70s} {r['Metric Unit']:10s} {r['Metric Value']}")
PY
