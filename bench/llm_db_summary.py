#!/usr/bin/env python3
"""bench/llm_db_summary.py DB — what the LLM did in a kevo DB (bench/llm_local.sh).

Reads the `generations` table (one row per LLM call: candidate_id, parent_id,
model, prompt, reply, tokens_in, tokens_out, latency_s, seed, finish_reason,
...) and the candidates the LLM produced, by status and failure kind.  The
layout is read from the DB (PRAGMA table_info) rather than assumed: a missing
table or column is said in one line and the rest is still printed.  The DB is
opened read-only.  Exit 1 only when the file is not an SQLite DB.
"""
import re
import sqlite3
import sys

# A reply's SEARCH/REPLACE blocks (kevo's form, llm/reply.h).
EDIT = re.compile(r"^<<<<<<< SEARCH[ \t]*\n(.*?)^=======[ \t]*\n(.*?)^>>>>>>> REPLACE", re.S | re.M)
FENCE = re.compile(r"^```[a-z+]*[ \t]*\n(.*?)^```", re.S | re.M)


def cols(db, table):
    """The column names of table, or an empty set when it does not exist."""
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def num(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)


def generations(db):
    """Calls, tokens, latency and finish reasons of the generations table."""
    g = cols(db, "generations")
    if not g:
        print("generations: no such table (this kevo stores no LLM calls)")
        return
    n = db.execute("SELECT count(*) FROM generations").fetchone()[0]
    print(f"generations: {n} LLM call(s)")
    if n == 0:
        return
    if "model" in g:
        models = [r[0] for r in db.execute("SELECT DISTINCT model FROM generations")]
        print("  model(s)          " + ", ".join(str(m) for m in models))
    for c, label in (("tokens_in", "tokens in"), ("tokens_out", "tokens out")):
        if c in g:
            s, a, mx = db.execute(f"SELECT sum({c}), avg({c}), max({c}) FROM generations").fetchone()
            print(f"  {label:<17} total {num(s, '{:.0f}')}, mean {num(a)}, max {num(mx, '{:.0f}')}")
    if "latency_s" in g:
        s, a, lo, hi = db.execute("SELECT sum(latency_s), avg(latency_s), min(latency_s), max(latency_s) "
                                  "FROM generations").fetchone()
        print(f"  latency           total {num(s)} s, mean {num(a)} s, min {num(lo)} s, max {num(hi)} s")
        if "tokens_out" in g and s:
            out = db.execute("SELECT sum(tokens_out) FROM generations WHERE latency_s > 0").fetchone()[0]
            if out:
                print(f"  throughput        {out / s:.2f} tokens out per second of call latency")
    if "finish_reason" in g:
        fr = db.execute("SELECT coalesce(finish_reason, '(none)'), count(*) FROM generations "
                        "GROUP BY 1 ORDER BY 2 DESC").fetchall()
        print("  finish reasons    " + ", ".join(f"{r} {k}" for r, k in fr))
    for c, label in (("prompt", "prompts"), ("reply", "replies")):
        if c in g:
            empty, mean = db.execute(f"SELECT sum({c} IS NULL OR length({c}) = 0), avg(length({c})) "
                                     "FROM generations").fetchone()
            print(f"  {label:<17} {n - (empty or 0)} stored, {empty or 0} empty, mean {num(mean, '{:.0f}')} chars")
    if "candidate_id" in g:
        none = db.execute("SELECT count(*) FROM generations WHERE candidate_id IS NULL").fetchone()[0]
        print(f"  without candidate {none} (calls whose reply gave no candidate row)")


def llm_candidates(db):
    """Candidates the LLM wrote, by status and failure kind."""
    c = cols(db, "candidates")
    if not c:
        print("candidates: no such table")
        return
    if "generator" in c:
        where, how = "generator = 'llm'", "generator = 'llm'"
    elif "candidate_id" in cols(db, "generations"):
        where, how = "id IN (SELECT candidate_id FROM generations)", "named by generations.candidate_id"
    else:
        where, how = "family = 'llm'", "family = 'llm'"
    total = db.execute("SELECT count(*) FROM candidates").fetchone()[0]
    n = db.execute(f"SELECT count(*) FROM candidates WHERE {where}").fetchone()[0]
    print(f"candidates: {total} in all, {n} from the LLM ({how})")
    fail = "coalesce(fail, '')" if "fail" in c else "''"
    for status, kind, k in db.execute(f"SELECT status, {fail}, count(*) FROM candidates WHERE {where} "
                                      "GROUP BY 1, 2 ORDER BY 3 DESC"):
        print(f"  {status:<10} {kind or '-':<18} {k}")
    if "fail_msg" in c and "fail" in c:
        for kind, msg in db.execute(f"SELECT fail, substr(replace(fail_msg, char(10), ' '), 1, 100) FROM candidates "
                                    f"WHERE {where} AND fail IS NOT NULL GROUP BY fail LIMIT 8"):
            print(f"    e.g. {kind}: {msg}")
    if "generator" in c:
        for gen, status, k in db.execute("SELECT generator, status, count(*) FROM candidates GROUP BY 1, 2 ORDER BY 1, 2"):
            print(f"  all: {gen:<10} {status:<10} {k}")
    e = cols(db, "edges")
    if "operator" in e:
        k = db.execute("SELECT count(*) FROM edges WHERE operator = 'llm'").fetchone()[0]
        print(f"edges: {k} with operator llm")


def norm(code):
    """Code without comments and blanks: what two texts must share to be the same code."""
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    code = re.sub(r"//[^\n]*", "", code)
    return re.sub(r"\s+", "", code)


def novelty(db):
    """Which LLM candidates that compiled hold new code: an edit whose blocks change
    their SEARCH text and whose REPLACE text is none of the edits the prompt shows
    (the system prompt's example among them); a whole source that the prompt does
    not already hold (its example reply, the parent's source)."""
    g, c = cols(db, "generations"), cols(db, "candidates")
    if not {"reply", "prompt", "candidate_id"} <= g or not {"status", "fail"} <= c:
        print("novelty: this DB lacks the generations or candidates columns it needs")
        return
    sysp = "g.system_prompt" if "system_prompt" in g else "''"
    rows = db.execute(f"SELECT c.id, g.parent_id, g.reply, coalesce({sysp}, '') || char(10) || coalesce(g.prompt, '') "
                      "FROM generations g JOIN candidates c ON c.id = g.candidate_id WHERE c.status != 'failed' "
                      "OR c.fail NOT IN ('parse_error', 'gen_error', 'llm_error', 'rejected', 'compile_error') "
                      "ORDER BY c.id").fetchall()
    new = edits = whole = 0
    for cid, parent, reply, prompt in rows:
        reply = reply or ""
        blocks = EDIT.findall(reply)
        shown = {norm(r) for _, r in EDIT.findall(prompt)}
        if blocks:
            changed = any(norm(a) != norm(b) for a, b in blocks)
            copied = any(norm(b) in shown and norm(b) for _, b in blocks)
            ok = changed and not copied
            what = "; ".join(f"{a.strip()[:60]!r} -> {b.strip()[:60]!r}" for a, b in blocks)
            edits += ok
        else:
            code = FENCE.findall(reply)
            body = norm(code[-1]) if code else ""
            ok = bool(body) and body not in norm(prompt)
            what = f"whole source, {len(code[-1]) if code else 0} bytes"
            whole += ok
        new += ok
        print(f"  #{cid} <- #{parent}: {'new' if ok else 'NOT new'}: {what}")
    print(f"novelty: {new} of {len(rows)} LLM candidates that compiled hold new code ({edits} edits, "
          f"{whole} whole sources): each differs from its parent and from every example its prompt shows")


def main():
    if len(sys.argv) != 2:
        print("usage: llm_db_summary.py DB", file=sys.stderr)
        return 2
    try:
        db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as e:
        print(f"llm_db_summary: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    for part in (generations, llm_candidates, novelty):
        try:
            part(db)
        except sqlite3.Error as e:  # a layout this script did not foresee: say so, go on
            print(f"  ({part.__name__}: {e})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
