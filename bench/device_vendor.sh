#!/usr/bin/env bash
# bench/device_vendor.sh — on the device machine (repo root, build/ carried):
# issue 36's "never ship slower" on hardware.  One DB tuned (the README's
# `kevo tune`, default budget) at the default shape, where kevo wins, and at
# shapes where it lost to a peer on an H200 (B=768,...,Kc=1000: to beta1;
# B=2048,M=1024,...: to stage 0, which the library cannot run); then
# tests/export/gpu_export.sh on that DB: the exported library's call at each
# tuned shape verifies, says which path ran, and is timed against what the
# DB measured there (a kernel: its best candidate; cuBLAS: its vendor
# peer, within 3%).  When no shape of the DB went to cuBLAS (kevo won them
# all this time), the same with --force-vendor.  Logs under $OUT.
set -u
OUT=${OUT:-/tmp/kevo-out}
mkdir -p "$OUT"
export KEVO_HOME=$PWD
DB=$OUT/vendor.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for spec in "B=1024,M=433,N=256,Ku=1178,Kc=866,ratio=70 fp16" "B=768,M=512,N=200,Ku=1000,Kc=1000,ratio=64 fp16" \
            "B=2048,M=1024,N=128,Ku=64,Kc=64,ratio=50 bf16"; do
  read -r shape dtype <<<"$spec"
  timeout 300 build/kevo tune --op ikbo_lce --shape "$shape" --dtype "$dtype" --db "$DB" --no-bar \
    >>"$OUT/vendor_tune.log" 2>&1
  echo "tune $shape $dtype rc=$? | $(tail -1 "$OUT/vendor_tune.log")"
done
timeout 400 tests/export/gpu_export.sh "$DB" >"$OUT/vendor_export.log" 2>&1
rc=$?
echo "gpu_export.sh rc=$rc"
grep -E "path:|ratio|ok|FAIL|error|vendor|keeps" "$OUT/vendor_export.log" | head -30
if ! grep -q "path: cuBLAS" "$OUT/vendor_export.log"; then
  timeout 300 tests/export/gpu_export.sh --force-vendor "$DB" >"$OUT/vendor_forced.log" 2>&1
  echo "gpu_export.sh --force-vendor rc=$?"
  grep -E "path:|ratio|ok|FAIL|error" "$OUT/vendor_forced.log" | head -20
fi
python3 bench/slim_db.py "$DB"
