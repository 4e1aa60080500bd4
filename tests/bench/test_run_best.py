#!/usr/bin/env python3
"""tests/bench/test_run_best.py — bench/shapes.py's run_best, the run's answer
that the bench scripts (shapes.py's table, search_ab.py, cand_gemm_ratio.py,
shapes.sh's exhaustive check) report: the settled winner (runs.best_id) even
where another candidate's single timing was faster, the fittest verified one
where a run has none, never a failed candidate."""
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from shapes import run_best  # noqa: E402


def db_with(rows, best_id):
    db = sqlite3.connect(":memory:")
    db.execute("create table runs (id integer primary key, best_id integer)")
    db.execute("create table candidates (id integer primary key, run_id integer, status text, median_ms real, "
               "fitness real, speedup real, family text, params text)")
    db.execute("insert into runs values (1, ?)", (best_id,))
    db.executemany("insert into candidates values (?, 1, ?, ?, ?, ?, 'lce_ws', ?)", rows)
    return db


def main():
    rows = [(1, "ok", 3.369, 2.11, 2.11, '{"N":1}'),   # a noise-fast single timing
            (2, "ok", 3.788, 1.87, 1.87, '{"N":2}'),   # the settled winner
            (3, "failed", 1.0, None, None, '{"N":3}')]
    got = run_best(db_with(rows, 2), 1)
    assert got == (3.788, "lce_ws", '{"N":2}'), got
    # no settled winner (older DBs): the fittest verified one, never a failed candidate
    got = run_best(db_with(rows, None), 1, "c.id, c.median_ms")
    assert got == (1, 3.369), got
    fit = [(1, "ok", 1.0, 1.2, 1.0, "{}"), (2, "ok", 0.9, 1.5, 1.1, "{}"), (3, "failed", 0.5, 9.0, 9.0, "{}")]
    got = run_best(db_with(fit, None), 1, "c.id")
    assert got == (2,), got
    # a best_id that names a failed candidate is passed over
    got = run_best(db_with(rows, 3), 1, "c.id")
    assert got == (1,), got
    # nothing verified
    assert run_best(db_with([(1, "failed", 1.0, None, None, "{}")], 1), 1) is None
    print("run_best: 5 checks ok")


if __name__ == "__main__":
    main()
