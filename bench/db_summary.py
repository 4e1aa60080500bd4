#!/usr/bin/env python3
"""bench/db_summary.py DB... — one kevo DB per argument: candidates, ok and
failed, the stop reason, the baseline, the two best; and, where the planted
fault family ran, how each fault was classified."""
import sqlite3
import sys

for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    name = path.rsplit("/", 1)[-1].removesuffix(".db")
    n, ok, failed = db.execute("select count(*), sum(status='ok'), sum(status='failed') from candidates").fetchone()
    stop = db.execute("select stop_reason from runs").fetchone()[0]
    base = db.execute("select median_ms from run_peers where peer = 'stage0' and shape_idx = 0 and device = 0 "
                      "and status = 'ok'").fetchone()
    base = base[0] if base else float("nan")
    print(f"{name}: {n} candidates, {ok} ok, {failed} failed, stop {stop}, baseline {base:.4f} ms")
    for b in db.execute("select family, params, median_ms, speedup from candidates where status='ok' "
                        "order by speedup desc limit 2"):
        print(f"   {b[0]} {b[1]} {b[2]:.4f} ms {b[3]:.2f}x")
    for row in db.execute("select json_extract(params,'$.FAULT'), status, coalesce(fail,''), "
                          "substr(coalesce(fail_msg,''),1,70) from candidates where family='lce_faults' "
                          "order by 1"):
        print("   FAULT=%-2s %-7s %-18s %s" % row)
    db.close()
