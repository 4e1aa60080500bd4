#!/usr/bin/env python3
"""bench/export_fixture.py IN OUT [TOP] — a copy of a kevo DB that `kevo
export` still exports the same library from, small enough for the repo: per
run, the cubins of the TOP (default 4) fastest verified candidates and of the
fastest one reading the natural layout (plan pad_k 0) are kept, every other
cubin and log and every source dropped (the test fixtures under
tests/fixtures/export/)."""
import shutil
import sqlite3
import sys

if len(sys.argv) not in (3, 4):
    sys.exit("usage: export_fixture.py IN OUT [TOP]")
top = int(sys.argv[3]) if len(sys.argv) == 4 else 4
shutil.copyfile(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
keep = set()
for (run,) in db.execute("select id from runs"):
    rows = db.execute("select binary_key, plan from candidates where run_id = ? and status = 'ok' "
                      "order by speedup desc, median_ms, id", (run,)).fetchall()
    keep.update(k for k, _ in rows[:top])
    natural = [k for k, p in rows if p and '"pad_k":0' in p]
    if natural:
        keep.add(natural[0])
db.execute("create temp table keep(k text primary key)")
db.executemany("insert or ignore into keep values (?)", [(k,) for k in keep])
db.execute("update binaries set cubin = null, log = null where key not in (select k from keep)")
db.execute("delete from sources")
db.commit()
db.execute("pragma journal_mode=delete")
db.execute("vacuum")
db.close()
