#!/usr/bin/env bash
# bench/prof_stall.sh SHAPE WHERE — on the device (repo root, build/ carried): where
# the warps of one lce_ws configuration wait.  The configuration (the --where
# filter naming it) is tuned at SHAPE, then Nsight Compute samples its candidate
# kernel's warps (SourceCounters: stall samples per SASS instruction, clocks as
# found) and the same for cuBLAS's kernel on the candidate GEMM alone
# (bench/prof_cand_gemm.py).  Prints, per kernel, the samples grouped by what
# the instruction is (an mbarrier wait, a WGMMA wait, a named barrier, a
# global load or store, other), by stall reason, the executed instructions by
# opcode, and the 15 instructions with the most samples.
# The per-instruction CSVs stay under $OUT.  Example (docs/lce_ws.md, v14):
#   bench/prof_stall.sh B=1024,M=433,N=200,Ku=512,Kc=3500,U=1 "BN == 224 && ... && EPI == 0"
set -u
# shellcheck source=bench/prof_common.sh
. "$(dirname "$0")/prof_common.sh"
prof_setup prof_stall.sh "${1:-}" "${2:-}" stall.db
src=(--section SourceCounters --page source --print-source sass --csv --clock-control none)
timeout 300 ncu "${src[@]}" --kernel-name regex:lce_ws_cand --launch-count 1 --target-processes all \
  "$kevo" verify --db "$OUT/stall.db" --candidate 1 --maps sorted >"$OUT/kevo.src.csv" 2>"$OUT/kevo.src.err"
echo "ncu kevo rc=$?"
timeout 300 ncu "${src[@]}" --kernel-name regex:'nvjet|gemm|sm90' --launch-skip 4 --launch-count 1 \
  python3 bench/prof_cand_gemm.py "$shape" fp16 >"$OUT/cublas.src.csv" 2>"$OUT/cublas.src.err"
echo "ncu cublas rc=$?"
python3 - "$OUT" <<'PY'
import csv, io, re, sys
def kind(op):
    if "SYNCS" in op and "TRYWAIT" in op: return "mbarrier wait"
    if "DEPBAR" in op or "WARPGROUP" in op: return "wgmma wait/arrive"
    if op.startswith("HGMMA"): return "HGMMA"
    if op.startswith("BAR"): return "named/CTA barrier"
    if op.startswith(("LDG", "STG", "LDS", "STS", "STSM", "LDSM", "UTMA", "UBLKCP")): return "memory"
    if op.startswith("BRA") or op.startswith("@"): return "branch"
    return "other"
for name in ("kevo", "cublas"):
    text = open(f"{sys.argv[1]}/{name}.src.csv", errors="replace").read()
    lines = [l for l in text.splitlines() if l.startswith('"')]
    head = next((i for i, l in enumerate(lines) if l.startswith('"Address"')), 0)
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[head:]))))
    if not rows:
        print(f"== {name}: no rows; first lines: {text[:400]!r}")
        continue
    cols = list(rows[0].keys())
    scol = next((c for c in cols if "Sampling (All" in c), None) or next((c for c in cols if "Sampl" in c), None)
    ocol = next((c for c in cols if c.strip() in ("Source", "SASS")), cols[1])
    if scol is None:
        print(f"== {name}: no sampling column in {cols}")
        continue
    def num(v):
        try: return float(v.replace(",", ""))
        except ValueError: return 0.0
    tot = sum(num(r[scol]) for r in rows) or 1.0
    groups = {}
    for r in rows:
        op = re.sub(r"^@!?U?P\w+\s+", "", r[ocol].strip())
        groups[kind(op)] = groups.get(kind(op), 0.0) + num(r[scol])
    print(f"== {name}: {len(rows)} instructions, {tot:.0f} samples ({scol})")
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {k:22s} {100 * v / tot:5.1f}%")
    reasons = {c: sum(num(r[c]) for r in rows) for c in cols if c.startswith("stall_") and "Not Issued" not in c}
    print("  by stall reason: " + ", ".join(f"{c[6:]} {100 * v / tot:.1f}%" for c, v in
                                           sorted(reasons.items(), key=lambda kv: -kv[1])[:7]))
    icol = next((c for c in cols if c == "Instructions Executed"), None)
    if icol:
        mix = {}
        for r in rows:
            op = re.sub(r"^@!?U?P\w+\s+", "", r[ocol].strip()).split(" ")[0]
            mix[op] = mix.get(op, 0.0) + num(r[icol])
        it = sum(mix.values()) or 1.0
        print(f"  executed instructions {it / 1e6:.1f} M; top opcodes: " + ", ".join(
            f"{k} {100 * v / it:.0f}%" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])[:10]))
    print("  top instructions:")
    addr = next((c for c in cols if "Address" in c), None)
    for r in sorted(rows, key=lambda r: -num(r[scol]))[:15]:
        print(f"    {r.get(addr, '') if addr else '':>8s} {100 * num(r[scol]) / tot:5.1f}%  {r[ocol].strip()[:70]}")
PY
