#!/usr/bin/env bash
# bench/device_mpi_loop.sh — on a device machine (repo root; build/kevo and
# build/tests/kevo_mpi_slow_sender carried, with libcjson beside each): is
# rank 0's loop held by the other ranks' messages?
#   1. the host's MPI facts: Open MPI's shared-memory single-copy mechanism
#      and the kernel's ptrace scope (CMA needs it);
#   2. the slow-sender test program (test_mpi slow) as this host's MPI runs
#      by default, and with single-copy off: the longest call of rank 0's
#      loop while rank 1 holds an 8 MiB message for 3 s;
#   3. the main job (budget $BUDGET, default 120) as `mpirun -np 2 kevo tune
#      --mpi` with each kevo in $KEVO_BINS (default build/kevo), $ROUNDS
#      rounds interleaved (default 2), and once on --devices 0 with the
#      last: candidates per minute and each run's evaluation seconds (mean,
#      and how many took over 0.2 s).
# Logs and slimmed DBs go to $OUT/mpi_loop.tgz; the table is printed last.
set -u
BUDGET=${BUDGET:-120}
ROUNDS=${ROUNDS:-2}
read -r -a BINS <<<"${KEVO_BINS:-build/kevo}"
. bench/mpi_common.sh
ompi_info --param btl vader --level 9 2>/dev/null | grep -E "single_copy_mechanism\"" | sed 's/^ *//' | cut -c1-120
echo "kernel.yama.ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo absent)"
for copy in default none; do
  if [ $copy = none ]; then
    env=(env OMPI_MCA_btl_vader_single_copy_mechanism=none)
  else
    env=(env)
  fi
  echo "slow sender, single copy $copy: $("${env[@]}" timeout 60 mpirun --oversubscribe -np 2 \
    build/tests/kevo_mpi_slow_sender 2>&1 | grep -E "longest|rror" | head -2)"
done
rows=()
run() { # name, kevo, then what follows `kevo tune`, under $PRE
  local name=$1 bin=$2
  shift 2
  local t0
  t0=$(date +%s.%N)
  timeout 300 ${PRE:-} "$bin" tune --op ikbo_lce --budget "$BUDGET" --no-bar "$@" --db "$OUT/$name.db" \
    >"$OUT/$name.log" 2>&1
  echo "== $name ($bin): rc=$? wall $(elapsed "$t0") s"
  grep -E "per minute|^best|lost" "$OUT/$name.log" | cut -c1-160
  rows+=("$name|$bin")
}
for r in $(seq "$ROUNDS"); do
  for i in "${!BINS[@]}"; do
    PRE=$MPIRUN run "mpi_b${i}_r$r" "${BINS[$i]}" --mpi
  done
done
run "dev0" "${BINS[-1]}" --devices 0
table() {
  echo "| run | kevo | candidates | per minute | eval s, mean | evals > 0.2 s | best |"
  echo "|---|---|---|---|---|---|---|"
  for row in "${rows[@]}"; do
    python3 - "$OUT/${row%%|*}.db" "${row%%|*}" "${row#*|}" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
n, mean, slow = db.execute("select count(*), avg(eval_s), sum(eval_s > 0.2) from candidates where run_id = 1").fetchone()
loop, total = db.execute("select max(loop_s), sum(evaluated) from run_devices where run_id = 1").fetchone()
best = db.execute("select c.seq, c.median_ms, c.speedup from runs r join candidates c on c.id = r.best_id "
                  "where r.id = 1").fetchone()
rate = 60.0 * total / loop if loop and total else float("nan")
bs = "#%d %.4f ms %.2fx" % best if best else "none"
print("| %s | %s | %d | %.1f | %.3f | %d | %s |" % (sys.argv[2], sys.argv[3], n, rate, mean or 0, slow or 0, bs))
PY
  done
}
table | tee "$OUT/mpi_loop.md"
for f in "$OUT"/*.db; do
  python3 bench/slim_db.py "$f" && rm -f "$f-wal" "$f-shm"
done
(cd "$OUT" && tar czf mpi_loop.tgz ./*.db ./*.log ./*.md && rm -f ./*.db ./*.log)
