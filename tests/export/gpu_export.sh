#!/usr/bin/env bash
# tests/export/gpu_export.sh [DB] — GPU test (ctest label gpu; exit 77 without
# a GPU): export a real tuning DB (given, or a short tune made here), build the
# library with CMake, install it, build kernels/ikbo_lce/export/example against
# the installed package, and run the example at every tuned shape (timed,
# against the DB's best time) and at an untuned shape; each run verifies its
# output.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kevo=${KEVO_BINARY:-$root/build/kevo}
export KEVO_HOME=${KEVO_HOME:-$root}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU"
  exit 77
fi
T=$(mktemp -d /tmp/kevo-export-XXXXXX)
trap 'rm -rf "$T"' EXIT
db=${1:-}
if [ -z "$db" ]; then
  db=$T/tune.db
  "$kevo" tune --op ikbo_lce --budget 6 --db "$db" --quiet
fi
"$kevo" export --db "$db" --out "$T/lib"
cmake -S "$T/lib" -B "$T/lib/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$T/lib/build" -j >/dev/null
cmake --install "$T/lib/build" --prefix "$T/inst" >/dev/null
cmake -S "$root/kernels/ikbo_lce/export/example" -B "$T/ex" -Dkevo_tuned_DIR="$T/inst/lib/cmake/kevo_tuned" >/dev/null
cmake --build "$T/ex" >/dev/null
status=0
# every tuned shape: verify, time, compare with the DB's best
while read -r B M N Ku Kc U dtype best; do
  line=$("$T/ex/ikbo_example" "$B" "$M" "$N" "$Ku" "$Kc" "$U" "$dtype" time) || status=1
  echo "$line"
  ms=$(echo "$line" | sed -n 's/^median \([0-9.]*\) ms.*/\1/p')
  if [ -n "$ms" ]; then
    python3 -c "import sys; r = $ms / $best; print(f'  library {$ms:.4f} ms vs DB best {$best:.4f} ms: ratio {r:.3f}'); sys.exit(0 if r <= 1.05 else 1)" || status=1
  else
    status=1
  fi
done < <(python3 - "$db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for shape, dtype, best in db.execute(
        "select r.shape, r.dtype, min(c.median_ms) from runs r join candidates c on c.run_id = r.id "
        "where c.status = 'ok' and r.op = 'ikbo_lce' group by r.id"):
    kv = dict(item.split("=") for item in shape.split(","))
    print(kv["B"], kv["M"], kv["N"], kv["Ku"], kv["Kc"], kv["U"], dtype, best)
PY
)
# a shape nobody tuned: the dispatch picks a kernel whose constraints accept it
# (N=256: the default shape's winners take N up to their tile width; a shape no
# exported kernel accepts gets UNSUPPORTED, which the library documents)
"$T/ex/ikbo_example" 300 200 256 500 300 20 || status=1
exit $status
