#!/usr/bin/env bash
# bench/llm_replay.sh DB OUT.db [KEVO TUNE OPTIONS...] — on the CPU: the LLM replies a DB
# stored, answered again, in call order, by the loopback server
# (build/tests/kevo_fake_llm) to a new compile-only run, so that a change to how kevo
# reads replies (llm/reply.c, llm/json_loose.c) is measured on what a real model wrote.
# The options are the original run's, without its --llm-url and --db: for the 1.5B
# run of docs/results/llm.md,
#   bench/llm_replay.sh llm15.db replay.db --family lce_mma,lce_mem --budget 12 --batch 2 \
#     --jobs 1 --llm-budget 10
# Each reply is sent with its stored finish reason (a cut reply stays cut).  The
# prompts of the new run need not match the old ones, so this measures the parser, not
# the model.  Prints the run's last lines (calls, failures by kind, compiled).
set -euo pipefail
db=${1:?usage: bench/llm_replay.sh DB OUT.db [KEVO TUNE OPTIONS...]}
out=${2:?usage: bench/llm_replay.sh DB OUT.db [KEVO TUNE OPTIONS...]}
shift 2
[ -e "$out" ] && { echo "llm_replay: $out exists; give a new name" >&2; exit 2; }
[ "$(realpath -m "$db")" = "$(realpath -m "$out")" ] && { echo "llm_replay: OUT.db is DB" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
kevo=${KEVO:-$root/build/kevo}
fake=${KEVO_FAKE_LLM:-$root/build/tests/kevo_fake_llm}
export KEVO_HOME=${KEVO_HOME:-$root}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
python3 - "$db" "$tmp" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = c.execute("SELECT candidate_id, reply, finish_reason FROM generations WHERE reply IS NOT NULL "
                 "ORDER BY candidate_id").fetchall()
if not rows:
    sys.exit("llm_replay: no stored replies in " + sys.argv[1])
with open(f"{sys.argv[2]}/script", "w") as s:
    for i, (cid, reply, fin) in enumerate(rows):
        with open(f"{sys.argv[2]}/r{i}.txt", "w") as f:
            f.write(reply)
        fin = fin if fin and fin.isidentifier() else "stop"
        s.write(f"content=@r{i}.txt finish={fin}\n")
print(f"llm_replay: {len(rows)} stored replies")
PY
"$fake" --script "$tmp/script" --port-file "$tmp/port" >"$tmp/server.log" 2>&1 &
pid=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
"$kevo" tune --op ikbo_lce --compile-only --generators template,llm --llm-url "http://127.0.0.1:$(cat "$tmp/port")/v1" \
  --db "$out" --no-bar "$@" 2>&1 | grep -E "^run |^llm|<-llm"
