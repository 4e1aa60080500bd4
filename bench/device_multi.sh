#!/usr/bin/env bash
# bench/device_multi.sh [STAGE...] — on a device machine with two or more GPUs
# (repo root, build/ carried; nvidia-h200-x2): the README's main job at budget
# $BUDGET (default 120, batch $BATCH, default 8) on one GPU (--devices 0), on
# every GPU (--devices all) and as `mpirun -np 2 kevo tune --mpi` (one GPU per
# rank), compared by bench/multi_compare.py (graph, best, candidates per
# minute).  Stages (default: cold mpi warm faults):
#   cold   --devices 0 and --devices all into fresh DBs, compiles included
#   mpi    mpirun -np 2 into a fresh DB
#   warm   the three again, each from a copy of a DB holding every cold run's
#          binaries, in $WARM_ROUNDS rounds (default 2; each round's binaries join
#          the cache), so that the last round's rate is the GPUs' evaluation rate
#   one    for a machine with one GPU: --devices 0 twice with the default --ahead
#          (how far two identical runs part) and once with --ahead 1
#   repeat --devices 0 $REPEAT times (default 3) into fresh DBs: how far runs of one
#          seed on one GPU part (compared with the first)
#   mpi1   for a machine with one GPU: mpirun -np 2 into a fresh DB named ${TAG}mpi1
#          (rank 1 finds no GPU 1 and compiles only), and the first round's
#          compile seconds (a rank's first compiles without a precompiled header
#          take twice as long)
#   ahead1 cold and mpi again with --ahead 1 (a round at a time: each round is
#          proposed after every earlier result, as before --ahead), DBs *_ahead1
#   nopch  cold and mpi again with KEVO_PCH=0 (compiles without NVRTC's precompiled
#          headers), into fresh DBs named *_nopch
#   compile --compile-only at budget $BUDGET with and without precompiled headers
#          (KEVO_PCH=1, 0): the compiles' seconds, and each run's wall time
#   kill   mpirun -np 2, rank 1 killed (-9) mid-run: the run completes
#   stop   the same with rank 1 stopped (SIGSTOP, a rank that hangs): the run
#          completes and mpirun returns (rank 0 ends the stopped process)
#   faults the planted faults (a hang among them) on every GPU, and under mpirun
#   shapes a distribution of shapes ($SHAPES, default bench/dist3.txt) at budget
#          $SHAPES_BUDGET (default 40) on --devices 0 and --devices all into fresh
#          DBs, then both again from a copy of a DB holding both runs' binaries
#          (the GPUs' rate: shape i is evaluated on GPU i mod 2)
# $KEVO_BIN (default build/kevo) is the kevo that tune runs; $TAG prefixes the
# names of the repeat stage's DBs (two builds compared in one call).
# Every tune run is traced (KEVO_TRACE_EVAL=1, the trace apart in NAME.trace);
# bench/trace_idle.py says where each run's GPUs waited (compile slots, compiles,
# proposals).  Traces, logs and slimmed DBs go to $OUT/multi.tgz; the tables are
# printed last.
set -u
BUDGET=${BUDGET:-120}
BATCH=${BATCH:-8}
STAGES=${*:-cold mpi warm faults}
. bench/mpi_common.sh
ldd build/kevo | grep -E "not found|mpi"
tune() { # name, then the command after `kevo tune` (or an mpirun prefix in PRE)
  local name=$1
  shift
  local t0
  t0=$(date +%s.%N)
  # the trace (stderr) apart; mpirun passes KEVO_TRACE_EVAL on to the ranks
  KEVO_TRACE_EVAL=1 timeout "${LIMIT:-240}" ${PRE:-} "${KEVO_BIN:-build/kevo}" tune --op ikbo_lce --budget "$BUDGET" \
    --batch "$BATCH" --no-bar "$@" >"$OUT/$name.log" 2>"$OUT/$name.trace"
  grep -v "^trace " "$OUT/$name.trace" >>"$OUT/$name.log"
  echo "== $name: rc=$? wall $(elapsed "$t0") s"
  grep -E "^(rank|GPU)|GPUs:|^best|beats|no kernel|^run .* done|lost|MPI|re-timed|leads|^  #" "$OUT/$name.log" | cut -c1-200
}
copy() { python3 -c "import sqlite3,sys; s=sqlite3.connect(sys.argv[1]); d=sqlite3.connect(sys.argv[2]); s.backup(d)" "$1" "$2"; }
rows=()
for stage in $STAGES; do
  case $stage in
  cold)
    tune cold1 --devices 0 --db "$OUT/cold1.db"
    tune cold2 --devices all --db "$OUT/cold2.db"
    rows+=("$OUT/cold1.db:1" "$OUT/cold2.db:1") ;;
  mpi)
    PRE=$MPIRUN tune mpi2 --mpi --db "$OUT/mpi2.db"
    rows+=("$OUT/mpi2.db:1") ;;
  warm)
    # the cache: every cold run's binaries; a second round adds what the first
    # round's runs compiled (their graphs part where measurements tie, into
    # configurations no cold run had), so that the second round compiles ~nothing
    copy "$OUT/cold1.db" "$OUT/cache.db"
    merge() { python3 bench/merge_binaries.py "$OUT/cache.db" "$@"; }
    merge "$OUT"/cold2.db "$OUT"/mpi2.db
    for round in $(seq "${WARM_ROUNDS:-2}"); do
      for w in warm1 warm2 mpiwarm; do copy "$OUT/cache.db" "$OUT/$w.db"; done
      tune warm1 --devices 0 --warm-start none --db "$OUT/warm1.db"
      tune warm2 --devices all --warm-start none --db "$OUT/warm2.db"
      PRE=$MPIRUN tune mpiwarm --mpi --warm-start none --db "$OUT/mpiwarm.db"
      merge "$OUT"/warm1.db "$OUT"/warm2.db "$OUT"/mpiwarm.db
    done
    rm -f "$OUT/cache.db"
    rows+=("$OUT/warm1.db:2" "$OUT/warm2.db:2" "$OUT/mpiwarm.db:2") ;;
  one)
    tune one_a --devices 0 --db "$OUT/one_a.db"
    tune one_b --devices 0 --db "$OUT/one_b.db"
    tune one_ahead1 --devices 0 --ahead 1 --db "$OUT/one_ahead1.db"
    rows+=("$OUT/one_a.db:1" "$OUT/one_b.db:1" "$OUT/one_ahead1.db:1") ;;
  mpi1)
    PRE=$MPIRUN tune "${TAG:-}mpi1" --mpi --db "$OUT/${TAG:-}mpi1.db"
    python3 - "$OUT/${TAG:-}mpi1.db" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
for rnd in (0, 1, 2):
    s = [r[0] for r in db.execute("select compile_s from candidates where round = ? and compile_s is not null", (rnd,))]
    if s:
        print("  round %d: %d compiles, mean %.2f s, max %.2f s" % (rnd, len(s), statistics.mean(s), max(s)))
PY
    rows+=("$OUT/${TAG:-}mpi1.db:1") ;;
  repeat)
    for i in $(seq "${REPEAT:-3}"); do
      tune "${TAG:-}repeat$i" --devices 0 --db "$OUT/${TAG:-}repeat$i.db"
      rows+=("$OUT/${TAG:-}repeat$i.db:1")
    done ;;
  ahead1)
    tune cold1_ahead1 --devices 0 --ahead 1 --db "$OUT/cold1_ahead1.db"
    tune cold2_ahead1 --devices all --ahead 1 --db "$OUT/cold2_ahead1.db"
    PRE="$MPIRUN" tune mpi2_ahead1 --mpi --ahead 1 --db "$OUT/mpi2_ahead1.db"
    rows+=("$OUT/cold1_ahead1.db:1" "$OUT/cold2_ahead1.db:1" "$OUT/mpi2_ahead1.db:1") ;;
  nopch)
    KEVO_PCH=0 tune cold1_nopch --devices 0 --db "$OUT/cold1_nopch.db"
    KEVO_PCH=0 tune cold2_nopch --devices all --db "$OUT/cold2_nopch.db"
    KEVO_PCH=0 PRE="$MPIRUN -x KEVO_PCH" tune mpi2_nopch --mpi --db "$OUT/mpi2_nopch.db"
    rows+=("$OUT/cold1_nopch.db:1" "$OUT/cold2_nopch.db:1" "$OUT/mpi2_nopch.db:1") ;;
  compile)
    for pch in 1 0; do
      KEVO_PCH=$pch tune "compile_pch$pch" --compile-only --db "$OUT/compile_pch$pch.db"
      python3 - "$OUT/compile_pch$pch.db" <<'PY'
import sqlite3, statistics, sys
db = sqlite3.connect(sys.argv[1])
s = [r[0] for r in db.execute("select compile_s from candidates where compile_s is not null order by seq")]
print("  %d compiles: median %.2f s, mean %.2f s; the first 8 %.2f s, the rest %.2f s (mean)"
      % (len(s), statistics.median(s), statistics.mean(s), statistics.mean(s[:8]), statistics.mean(s[8:])))
PY
    done ;;
  kill|stop)
    t0=$(date +%s.%N)
    timeout 300 $MPIRUN build/kevo tune --op ikbo_lce --budget "$BUDGET" --batch "$BATCH" --no-bar --mpi \
      --db "$OUT/$stage.db" >"$OUT/$stage.log" 2>&1 &
    job=$!
    # once the run has 24 candidates stored, kill -9 (or stop) the rank that is not rank 0 (runs.pid)
    for _ in $(seq 600); do
      n=$(python3 -c "import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute('select count(*) from candidates where status != \"pending\"').fetchone()[0])
except Exception: print(0)" "$OUT/$stage.db")
      [ "$n" -ge 24 ] && break
      sleep 0.2
    done
    r0=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select pid from runs').fetchone()[0])" "$OUT/$stage.db")
    mp=$(pgrep -x mpirun | head -1)
    victim=$(ps -o pid= --ppid "$mp" | tr -d ' ' | grep -vx "$r0" | head -1)
    sig=KILL
    [ "$stage" = stop ] && sig=STOP
    echo "SIG$sig to rank process $victim (rank 0 is $r0) after $n candidates"
    kill -s "$sig" "$victim"
    wait $job
    echo "== $stage: rc=$? wall $(elapsed "$t0") s; rank process $victim: $(ps -o stat= -p "$victim" || echo gone)"
    [ "$stage" = stop ] && kill -CONT "$victim" 2>/dev/null # should it still be there
    grep -E "lost|^best|^run .* done|GPU" "$OUT/$stage.log" | cut -c1-200
    rows+=("$OUT/$stage.db:1") ;;
  shapes)
    sb=${SHAPES_BUDGET:-40}
    BUDGET=$sb tune shapes1 --devices 0 --shapes "${SHAPES:-bench/dist3.txt}" --db "$OUT/shapes1.db"
    BUDGET=$sb tune shapes2 --devices all --shapes "${SHAPES:-bench/dist3.txt}" --db "$OUT/shapes2.db"
    copy "$OUT/shapes1.db" "$OUT/shapes_w1.db"
    python3 bench/merge_binaries.py "$OUT/shapes_w1.db" "$OUT/shapes2.db"
    copy "$OUT/shapes_w1.db" "$OUT/shapes_w2.db"
    BUDGET=$sb tune shapes_w1 --devices 0 --warm-start none --shapes "${SHAPES:-bench/dist3.txt}" --db "$OUT/shapes_w1.db"
    BUDGET=$sb tune shapes_w2 --devices all --warm-start none --shapes "${SHAPES:-bench/dist3.txt}" \
      --db "$OUT/shapes_w2.db"
    rows+=("$OUT/shapes1.db:1" "$OUT/shapes2.db:1" "$OUT/shapes_w1.db:2" "$OUT/shapes_w2.db:2") ;;
  faults)
    for how in devices mpi; do
      t0=$(date +%s.%N)
      if [ $how = devices ]; then pre=""; opt="--devices all"; else pre=$MPIRUN; opt="--mpi"; fi
      KEVO_FAULT_INJECT=1 timeout 200 $pre build/kevo tune --op ikbo_lce --templates tests/fixtures/faults \
        --family lce_faults --policy exhaustive --budget 12 --eval-timeout 20 --compile-timeout 10 $opt --no-bar \
        --db "$OUT/faults_$how.db" >"$OUT/faults_$how.log" 2>&1
      echo "== faults ($how): rc=$? wall $(elapsed "$t0") s"
      grep -E "GPU|lost" "$OUT/faults_$how.log" | cut -c1-160
      python3 - "$OUT/faults_$how.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for row in db.execute("select c.seq, json_extract(c.params, '$.FAULT'), d.host || ' GPU ' || d.ordinal, "
                      "round(c.eval_s, 2), c.status, c.fail from candidates c left join run_devices d "
                      "on d.run_id = c.run_id and d.idx = c.device order by c.seq"):
    print("  seq %s FAULT=%s on %s eval %s s: %s %s" % row)
PY
    done ;;
  esac
done
for f in "$OUT"/*.db; do
  python3 bench/slim_db.py "$f" && rm -f "$f-wal" "$f-shm"
done
ls "$OUT"/*.trace >/dev/null 2>&1 && python3 bench/trace_idle.py "$OUT"/*.trace | tee "$OUT/idle.md"
[ ${#rows[@]} -gt 0 ] && python3 bench/multi_compare.py "${rows[@]}" | tee "$OUT/table.md"
(cd "$OUT" && tar czf multi.tgz ./*.db ./*.log ./*.md $(ls ./*.trace 2>/dev/null) && rm -f ./*.db ./*.log ./*.trace)
