#!/usr/bin/env python3
"""bench/prof_sass.py DIR NAME... — the table of bench/prof_stall.sh and bench/prof_fa.sh:
for each NAME, DIR/NAME.src.csv (ncu --section SourceCounters --page source
--print-source sass --csv) read as stall samples per SASS instruction, printed
grouped by what the instruction is (an mbarrier wait, a WGMMA wait, a named
barrier, memory, other), by stall reason, the executed instructions by opcode,
and the 15 instructions with the most samples."""
import csv, io, re, sys
def kind(op):
    if "SYNCS" in op and "TRYWAIT" in op: return "mbarrier wait"
    if "DEPBAR" in op or "WARPGROUP" in op: return "wgmma wait/arrive"
    if op.startswith("HGMMA"): return "HGMMA"
    if op.startswith("MUFU"): return "MUFU (exp2, rcp)"
    if op.startswith("BAR"): return "named/CTA barrier"
    if op.startswith(("LDG", "STG", "LDS", "STS", "STSM", "LDSM", "UTMA", "UBLKCP")): return "memory"
    if op.startswith("BRA") or op.startswith("@"): return "branch"
    return "other"
for name in sys.argv[2:]:
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
