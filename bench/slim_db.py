#!/usr/bin/env python3
"""bench/slim_db.py IN [OUT] — a kevo DB without sources and cubins (what
reports, replay and verify read stays), small enough to come back from the
device machine.  Without OUT the DB is slimmed in place."""
import shutil
import sqlite3
import sys

if len(sys.argv) not in (2, 3):
    sys.exit("usage: slim_db.py IN [OUT]")
path = sys.argv[1]
if len(sys.argv) == 3:
    shutil.copyfile(path, sys.argv[2])
    path = sys.argv[2]
db = sqlite3.connect(path)
db.execute("update candidates set binary_key = null, source_hash = null")
db.execute("delete from binaries")
db.execute("delete from sources")
db.commit()
db.execute("pragma journal_mode=delete")
db.execute("vacuum")
db.close()
