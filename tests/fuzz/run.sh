#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] — build every libFuzzer target (tests/fuzz/fuzz_*.c)
# with clang (AddressSanitizer + UndefinedBehaviorSanitizer) and run each for
# SECONDS (default 60) on a copy of its seed corpus (tests/fuzz/corpus/NAME;
# KEVO_FUZZ_TARGETS="llm space" runs only those).  The targets link kevo's
# library as CMakeLists.txt lists it (add_library(kevo_lib ...)), compiled once
# into build-fuzz/libkevo_fuzz.a, so a source added there is never missed here.
# CC_FUZZ picks the compiler (default clang, else clang-14), KEVO_CUDA_INCLUDE
# the toolkit's headers (NVRTC is linked from beside them).  Exits non-zero
# when a target does not build or finds a crash, leak or undefined behaviour;
# the crashing input is kept under build-fuzz/.
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/build-fuzz
cc=${CC_FUZZ:-$(command -v clang || command -v clang-14 || echo clang)}
inc=${KEVO_CUDA_INCLUDE:-/usr/local/cuda/include}
libdir=
for d in "$inc/../lib64" "$inc/../lib"; do
  if ls "$d"/libnvrtc.so* >/dev/null 2>&1; then libdir=$(cd "$d" && pwd); break; fi
done
[ -n "$libdir" ] || { echo "run.sh: no libnvrtc.so beside $inc (set KEVO_CUDA_INCLUDE)"; exit 1; }
common="-g -O1 -std=c11 -I$root/include -I$root -I$inc -DKEVO_FUZZ_ROOT=\"$root\" -DKEVO_CUDA_INCLUDE_DIR=\"$inc\""
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
libs="-L$libdir -Wl,-rpath,$libdir -lnvrtc -lcjson -lcrypto -lsqlite3 -lcurl -ldl -lpthread -lm"

# the library's sources, from CMakeLists.txt's kevo_lib target (one path a line)
srcs=$(sed -n '/^add_library(kevo_lib /,/^)/p' "$root/CMakeLists.txt" | sed -n 's/^[[:space:]]*\([A-Za-z0-9_./-]*\.c\)[[:space:]]*$/\1/p')
[ -n "$srcs" ] || { echo "run.sh: no kevo_lib sources found in $root/CMakeLists.txt"; exit 1; }
rm -rf "$out/obj" && mkdir -p "$out/obj"
echo "== building libkevo_fuzz.a ($(echo "$srcs" | wc -l) sources) with $cc"
export cc root out common san
# fuzzer-no-link: each target brings libFuzzer's main itself
printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} sh -c \
  'o="$out/obj/$(echo "{}" | tr / _).o"; $cc $common $san -fsanitize=fuzzer-no-link -c "$root/{}" -o "$o"'
rm -f "$out/libkevo_fuzz.a"
ar rcs "$out/libkevo_fuzz.a" "$out"/obj/*.o

targets=${KEVO_FUZZ_TARGETS:-$(cd "$root/tests/fuzz" && ls fuzz_*.c | sed 's/^fuzz_\(.*\)\.c$/\1/')}
status=0
for t in $targets; do
  if ! $cc $common $san -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$t.c" "$out/libkevo_fuzz.a" $libs \
         -o "$out/fuzz_$t"; then
    echo "fuzz_$t DOES NOT BUILD"; status=1; continue
  fi
  rm -rf "$out/corpus_$t" && mkdir -p "$out/corpus_$t"
  if [ -d "$root/tests/fuzz/corpus/$t" ]; then cp -r "$root/tests/fuzz/corpus/$t/." "$out/corpus_$t/"; fi
  echo "== fuzz_$t for ${secs}s"
  if (cd "$out" && ./fuzz_$t -max_total_time="$secs" -max_len=8192 -print_final_stats=1 "corpus_$t" \
        >"fuzz_$t.log" 2>&1); then
    grep -E "stat::number_of_executed_units|Done" "$out/fuzz_$t.log" | tr '\n' ' '; echo
  else
    echo "fuzz_$t FOUND A PROBLEM: see $out/fuzz_$t.log"; tail -30 "$out/fuzz_$t.log"; status=1
  fi
done
exit $status
