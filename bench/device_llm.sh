#!/usr/bin/env bash
# bench/device_llm.sh — on the device machine (repo root, build/ carried): the
# GPU side of the LLM generator and of interrupted runs.
#   bench/device_llm.sh tests          the GPU tests: test_gpu_llm (LLM candidates from a
#                                      loopback server: verified, wrong, constant, output read,
#                                      hidden input write; verify at another shape; export),
#                                      test_gpu_lce (every family still verifies with the input
#                                      checksums), test_gpu_faults
#   bench/device_llm.sh handoff DB...  each DB (a compile-only run made where the LLM answered,
#                                      e.g. by bench/llm_local.sh) continued here with
#                                      `kevo tune --resume RUN --db DB`: its compiled candidates
#                                      are verified and timed, the search goes on with templates
#                                      (each LLM candidate's time is printed beside its parent's)
#   bench/device_llm.sh export DB...   each DB's LLM candidates alone exported (`kevo export
#                                      --family 'llm_*'`), built and called from the library:
#                                      tests/export/gpu_export.sh --family 'llm_*' DB
#   bench/device_llm.sh interrupt      Ctrl-C (SIGINT) during a GPU run, then --resume
# Logs and DBs go to $OUT; a short table is printed last.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
MODE=${1:-tests}
shift || true
# the tests find the source tree and the binary where they were built
SRC=$(strings build/tests/test_gpu_llm 2>/dev/null | grep -m1 -E '^/.*/tests/fixtures/llm$' | sed 's#/tests/fixtures/llm$##')
if [ -n "$SRC" ] && [ ! -e "$SRC" ]; then mkdir -p "$(dirname "$SRC")" && ln -s "$PWD" "$SRC"; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader

table=()
if [ "$MODE" = tests ]; then
  for t in ${TESTS:-test_gpu_llm test_gpu_faults test_gpu_lce}; do
    t0=$(date +%s)
    timeout 420 "build/tests/$t" >"$OUT/$t.log" 2>&1
    rc=$?
    table+=("$t rc=$rc $(( $(date +%s) - t0 )) s $(grep -cE '^\[       OK' "$OUT/$t.log") ok $(grep -cE '^\[  FAILED  \] test_' "$OUT/$t.log") failed")
    grep -E '^call |FAILED|ERROR' "$OUT/$t.log" | head -8
  done
elif [ "$MODE" = handoff ]; then
  for db in "$@"; do
    name=$(basename "$db" .db)
    cp "$db" "$OUT/$name.db"
    run=$(build/kevo report --db "$OUT/$name.db" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][-1]["id"])')
    t0=$(date +%s)
    timeout 500 build/kevo tune --resume "$run" --db "$OUT/$name.db" --no-bar >"$OUT/$name.resume.log" 2>&1
    rc=$?
    tail -4 "$OUT/$name.resume.log"
    build/kevo report --db "$OUT/$name.db" --run "$run" >"$OUT/$name.report.txt" 2>&1
    python3 - "$OUT/$name.db" "$run" <<'PY' >"$OUT/$name.summary.txt"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); run = int(sys.argv[2])
for gen, like in (("llm", "llm%"), ("template", "%")):
    q = ("select status || coalesce('/' || fail, ''), count(*), max(speedup) from candidates where run_id=? and "
         + ("family like 'llm%'" if gen == "llm" else "family not like 'llm%'") + " group by 1 order by 1")
    for st, n, sp in db.execute(q, (run,)):
        print(f"{gen:8s} {st:28s} {n:3d}  best {sp if sp is not None else '-'}")
# each LLM candidate against the parent it was written from (median ms, 95% interval)
q = ("select c.id, c.family, c.status, c.median_ms, c.ci_lo_ms, c.ci_hi_ms, p.id, p.family, p.median_ms, "
     "p.ci_lo_ms, p.ci_hi_ms from candidates c join edges e on e.child_id = c.id "
     "join candidates p on p.id = e.parent_id where c.run_id = ? and c.family like 'llm%' order by c.seq")
f = lambda ms, lo, hi: f"{ms:.4f} ms [{lo:.4f}, {hi:.4f}]" if ms and lo and hi else "-"
for cid, fam, st, ms, lo, hi, pid, pfam, pms, plo, phi in db.execute(q, (run,)):
    r = f"{ms / pms:.3f}x the parent's time" if ms and pms else ""
    print(f"#{cid} {fam} {st}: {f(ms, lo, hi)}; parent #{pid} {pfam}: {f(pms, plo, phi)}; {r}")
PY
    cat "$OUT/$name.summary.txt"
    table+=("handoff $name run $run rc=$rc $(( $(date +%s) - t0 )) s")
  done
elif [ "$MODE" = export ]; then
  for db in "$@"; do
    name=$(basename "$db" .db)
    t0=$(date +%s)
    timeout 300 tests/export/gpu_export.sh --family 'llm_*' "$db" >"$OUT/$name.export.log" 2>&1
    rc=$?
    grep -E '^path|ratio|^wrote' "$OUT/$name.export.log" | head -6
    table+=("export $name (LLM candidates alone) rc=$rc $(( $(date +%s) - t0 )) s")
  done
elif [ "$MODE" = interrupt ]; then
  db="$OUT/interrupt.db"
  build/kevo tune --op ikbo_lce --budget 24 --db "$db" --no-bar >"$OUT/interrupt.1.log" 2>&1 &
  pid=$!
  sleep "${INTERRUPT_AFTER:-40}"
  kill -INT "$pid"
  wait "$pid"
  rc1=$?
  tail -3 "$OUT/interrupt.1.log"
  build/kevo report --db "$db" --format json >"$OUT/interrupt.1.json"
  timeout 400 build/kevo tune --resume 1 --db "$db" --no-bar >"$OUT/interrupt.2.log" 2>&1
  rc2=$?
  tail -3 "$OUT/interrupt.2.log"
  python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("run:", db.execute("select status, stop_reason, budget from runs where id=1").fetchone())
print("candidates:", db.execute("select group_concat(status || ' ' || n) from (select status, count(*) n from "
                                "candidates where run_id=1 group by status)").fetchone()[0])
print("seq gaps/dups:", db.execute("select count(*) - count(distinct seq) from candidates where run_id=1").fetchone()[0])
PY
  table+=("interrupt: first rc=$rc1 (130 expected), resume rc=$rc2")
fi
echo "---"
printf '%s\n' "${table[@]}"
