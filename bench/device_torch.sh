#!/usr/bin/env bash
# bench/device_torch.sh — on the device machine (repo root, build/ carried):
# issue 14's test of `kevo export --torch`.  The CI fixture DBs are exported
# twice: as C libraries named kevo_tuned (built with CMake; the C examples
# verify and time them at the tuned shapes) and as PyTorch packages
# kevo_lce and kevo_fa (pip install --no-build-isolation against the
# installed PyTorch); then tests/torch/check_ops.py checks each op at a
# tuned and an untuned shape (eager, torch.compile, a CUDA graph) and times
# it against the PyTorch forms and the C library.  Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
T=$(mktemp -d /tmp/kevo-torch-XXXXXX)
trap 'rm -rf "$T"' EXIT
status=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"
declare -A DB=([ikbo_lce]=tests/fixtures/export/kevo_h200.db [ikbo_fa]=tests/fixtures/export/kevo_fa_h100.db)
declare -A PKG=([ikbo_lce]=kevo_lce [ikbo_fa]=kevo_fa)
declare -A EX=([ikbo_lce]=ikbo_example [ikbo_fa]=ikbo_fa_example)
declare -A TUNED=([ikbo_lce]="B=1024,M=433,N=256,Ku=1178,Kc=866,U=15,dtype=fp16"
                  [ikbo_fa]="Bc=2048,H=2,Sq=64,D=128,Skv=2048,U=32,dtype=fp16")
declare -A EXARGS=([ikbo_lce]="1024 433 256 1178 866 15" [ikbo_fa]="2048 2 64 128 2048 32")
# untuned: ikbo_lce N % 8 != 0 (no kernel takes it), ikbo_fa D=64 in fp16 (only bf16 D=64 kernels)
declare -A UNTUNED=([ikbo_lce]="B=64,M=100,N=100,Ku=96,Kc=72,U=8,dtype=fp16"
                    [ikbo_fa]="Bc=256,H=2,Sq=32,D=64,Skv=500,U=16,dtype=fp16")
for op in ikbo_lce ikbo_fa; do
  build/kevo export --op $op --db "${DB[$op]}" --out "$T/c_$op" >/dev/null || status=1
  (cmake -S "$T/c_$op" -B "$T/c_$op/build" -DCMAKE_BUILD_TYPE=Release && cmake --build "$T/c_$op/build" -j8 &&
   cmake --install "$T/c_$op/build" --prefix "$T/inst_$op" &&
   cmake -S kernels/$op/export/example -B "$T/ex_$op" -Dkevo_tuned_DIR="$T/inst_$op/lib/cmake/kevo_tuned" &&
   cmake --build "$T/ex_$op") >"$OUT/c_build_$op.log" 2>&1 || { echo "C build of $op failed"; status=1; }
  build/kevo export --op $op --db "${DB[$op]}" --out "$T/py_$op" --name "${PKG[$op]}" --torch || status=1
  t0=$(date +%s)
  python3 -m pip install --no-build-isolation --no-deps --no-index "$T/py_$op/python" >"$OUT/pip_$op.log" 2>&1 ||
    { echo "pip install of ${PKG[$op]} failed:"; tail -30 "$OUT/pip_$op.log"; status=1; }
  echo "pip install ${PKG[$op]}: $(( $(date +%s) - t0 )) s"
done
for op in ikbo_lce ikbo_fa; do
  line=$("$T/ex_$op/${EX[$op]}" ${EXARGS[$op]} time 2>&1)
  echo "C example: $line" >"$OUT/check_$op.log"
  cms=$(echo "$line" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  (cd "$T" && timeout 400 python3 "$OLDPWD/tests/torch/check_ops.py" "${PKG[$op]}" $op "${TUNED[$op]}" \
    "${UNTUNED[$op]}" ${cms:+--c-ms $cms}) >>"$OUT/check_$op.log" 2>&1 || status=1
  cat "$OUT/check_$op.log"
done
echo "device_torch status=$status"
exit $status
