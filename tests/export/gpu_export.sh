#!/usr/bin/env bash
# tests/export/gpu_export.sh [--op OP] [DB] — GPU test (ctest label gpu; exit
# 77 without a GPU): export a real tuning DB of OP (default ikbo_lce; the DB
# given, or a short tune made here), build the library with CMake, install
# it, build kernels/OP/export/example against the installed package, and run
# the example at every tuned shape (timed, against the DB's best time: at
# most 5% slower) and at an untuned shape; each run verifies its output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kevo=${KEVO_BINARY:-$root/build/kevo}
export KEVO_HOME=${KEVO_HOME:-$root}
op=ikbo_lce
if [ "${1:-}" = --op ]; then
  op=$2
  shift 2
fi
# the example's size arguments (the op's dispatch keys, in its order) and a
# shape nobody tuned that the default shape's winners accept (ikbo_lce: N=256
# takes them up to their tile width; ikbo_fa: D=128, odd Sq and Skv)
case $op in
  ikbo_lce) keys="B M N Ku Kc U"; untuned="300 200 256 500 300 20"; example=ikbo_example ;;
  ikbo_fa) keys="Bc H Sq D Skv U"; untuned="300 2 50 128 777 7"; example=ikbo_fa_example ;;
  *) echo "unknown op '$op'" >&2; exit 2 ;;
esac
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU"
  exit 77
fi
T=$(mktemp -d /tmp/kevo-export-XXXXXX)
trap 'rm -rf "$T"' EXIT
db=${1:-}
if [ -z "$db" ]; then
  db=$T/tune.db
  "$kevo" tune --op "$op" --budget 6 --db "$db" --quiet
fi
"$kevo" export --op "$op" --db "$db" --out "$T/lib"
cmake -S "$T/lib" -B "$T/lib/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$T/lib/build" -j >/dev/null
cmake --install "$T/lib/build" --prefix "$T/inst" >/dev/null
cmake -S "$root/kernels/$op/export/example" -B "$T/ex" -Dkevo_tuned_DIR="$T/inst/lib/cmake/kevo_tuned" >/dev/null
cmake --build "$T/ex" >/dev/null
status=0
# every tuned shape: verify, time, compare with the DB's best
while read -r -a row; do
  best=${row[-1]}
  unset 'row[-1]'
  line=$("$T/ex/$example" "${row[@]}" time) || status=1
  echo "$line"
  ms=$(echo "$line" | sed -n 's/^median \([0-9.]*\) ms.*/\1/p')
  if [ -n "$ms" ]; then
    python3 -c "import sys; r = $ms / $best; print(f'  library {$ms:.4f} ms vs DB best {$best:.4f} ms: ratio {r:.3f}'); sys.exit(0 if r <= 1.05 else 1)" || status=1
  else
    status=1
  fi
done < <(python3 - "$db" "$op" $keys <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
op, keys = sys.argv[2], sys.argv[3:]
for shape, dtype, best in db.execute(
        "select r.shape, r.dtype, min(c.median_ms) from runs r join candidates c on c.run_id = r.id "
        "where c.status = 'ok' and r.op = ? group by r.id", (op,)):
    kv = dict(item.split("=") for item in shape.split(","))
    print(*[kv[k] for k in keys], dtype, best)
PY
)
# a shape nobody tuned: the dispatch picks a kernel whose constraints accept
# it (a shape no exported kernel accepts gets UNSUPPORTED, which the library
# documents)
"$T/ex/$example" $untuned || status=1
exit $status
