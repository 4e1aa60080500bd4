#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS — build the libFuzzer targets with clang
# (AddressSanitizer + UndefinedBehaviorSanitizer) and run each for SECONDS on a
# copy of its seed corpus (KEVO_FUZZ_TARGETS="llm space" runs only those).
# Exits non-zero when any target finds a crash, leak or undefined behaviour;
# the crashing input is kept under build-fuzz/.
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/build-fuzz
mkdir -p "$out"
cc=${CC_FUZZ:-clang}
flags="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c11 -I$root/include -I$root"
flags="$flags -DKEVO_FUZZ_ROOT=\"$root\" -I${KEVO_CUDA_INCLUDE:-/usr/local/cuda/include}"
# the op table links every op's GPU side, and so the worker's generic part
# (the CUDA driver is loaded at run time: only its headers are needed here)
lib="$root/util/util.c $root/templates/syms.c $root/templates/expr.c $root/templates/space.c $root/kernels/*.c"
lib="$lib $root/kernels/*/*.c $root/evaluator/eval.c $root/evaluator/cudrv.c $root/evaluator/gpu.c"
lib="$lib $root/evaluator/gpu_worker.c $root/evaluator/gpu_eval.c"
lib="$lib $root/export/emit.c $root/llm/lex.c $root/llm/check.c $root/llm/reply.c $root/llm/prompt.c"
status=0
for t in ${KEVO_FUZZ_TARGETS:-expr shape space export_rows export_emit llm}; do
  $cc $flags $lib "$root/tests/fuzz/fuzz_$t.c" -lcjson -lcrypto -lsqlite3 -lm -o "$out/fuzz_$t"
  rm -rf "$out/corpus_$t" && cp -r "$root/tests/fuzz/corpus/$t" "$out/corpus_$t"
  echo "== fuzz_$t for ${secs}s"
  if (cd "$out" && ./fuzz_$t -max_total_time="$secs" -max_len=8192 -print_final_stats=1 "corpus_$t" \
        >"fuzz_$t.log" 2>&1); then
    grep -E "stat::number_of_executed_units|Done" "$out/fuzz_$t.log" | tr '\n' ' '; echo
  else
    echo "fuzz_$t FOUND A PROBLEM: see $out/fuzz_$t.log"; tail -30 "$out/fuzz_$t.log"; status=1
  fi
done
exit $status
