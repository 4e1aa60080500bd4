#!/usr/bin/env python3
"""bench/merge_binaries.py DEST SRC... — add every SRC DB's compiled sources and
binaries to DEST (a kevo DB that exists), so that runs from a copy of DEST find
them compiled (the device scripts' warm stages).  Prints DEST's binary count."""
import sqlite3
import sys

if len(sys.argv) < 3:
    sys.exit("usage: merge_binaries.py DEST SRC...")
db = sqlite3.connect(sys.argv[1])
for other in sys.argv[2:]:
    db.execute("attach ? as o", (other,))
    db.execute("insert or ignore into sources select * from o.sources")
    db.execute("insert or ignore into binaries select * from o.binaries")
    db.commit()
    db.execute("detach o")
print("cache:", db.execute("select count(*) from binaries").fetchone()[0], "binaries")
