#!/usr/bin/env python3
"""bench/llm_probe.py — request bodies and reply checks for bench/llm_local.sh.

The shell script sends the requests with curl; this file only builds the JSON
bodies and reads the replies, so that no JSON is assembled or parsed in bash.

  llm_probe.py body speed  [--model M] [--max-tokens N]
      a short CUDA question (the throughput probe), temperature 0
  llm_probe.py body kernel [--model M] [--max-tokens N] [--seed S] [--temperature T] [--abi FILE]
      a kevo-like request: the ikbo_lce op, its ABI header, and the demand for
      one ```cuda block plus one ```json launch plan
  llm_probe.py read speed  REPLY.json WALL_S
      prints prompt and completion tokens, wall time and tokens/s
  llm_probe.py read kernel REPLY.json WALL_S
      the same plus whether the reply has the format kevo parses: a ```cuda
      block with the extern "C" __global__ entry taking kevo_lce_args, and a
      ```json plan with launches; ends with one line "format: ok", "format:
      loose" (a forgiving parser would take it) or "format: bad"

A reply is the model's: a malformed or empty one is reported, never a crash.
Exit status: 0 when the reply is a chat completion (whatever its format), 1
when it is not (HTTP error body, not JSON, no choices).
"""
import argparse
import json
import re
import sys

SPEED_SYSTEM = "You are an expert CUDA programmer. Answer concisely."
SPEED_USER = ("Write a CUDA kernel that computes a row-wise softmax of a [rows, cols] float matrix, "
              "one warp per row, using warp shuffles for the maximum and the sum. Explain it briefly.")

KERNEL_SYSTEM = """You write CUDA device code for kevo, a kernel autotuner. Rules:
- Reply with exactly two fenced blocks and nothing else of substance:
  1. a ```cuda block: the complete device source. No host code: no main(), no
     cudaMalloc, no printf, no #include of host headers. You may include
     <cuda_fp16.h> and <cuda_bf16.h>. The struct kevo_lce_args is already
     declared (the ABI header below is prepended to your source).
  2. a ```json block: the launch plan, an object
     {"workspace": "0", "launches": [{"entry": NAME, "grid": [X, Y, Z],
      "block": [X, Y, Z], "smem": "0"}]}
     where X, Y, Z and smem are integers or expressions over the symbols
     B, M, N, Ku, Kc, U, num_sms with + - * / and cdiv(a, b).
- Every entry is declared exactly as
  extern "C" __global__ void NAME(const __grid_constant__ kevo_lce_args a)
- Never read out before writing it; write every element of out exactly once.
"""

# The same demand shown as a reply to copy: small models imitate an example far
# more reliably than they follow a description of one.
KERNEL_SYSTEM_EXAMPLE = """You write CUDA device code for kevo, a kernel autotuner.
Your reply has exactly this shape, two fenced blocks:

```cuda
#include <cuda_fp16.h>

extern "C" __global__ void lce_simple(const __grid_constant__ kevo_lce_args a)
{
    // device code: read a.w_user, a.w_cand, a.e_user, a.e_cand, a.cand_to_user; write a.out
}
```

```json
{"workspace": "0", "launches": [{"entry": "lce_simple", "grid": ["cdiv(N, 256)", "M", "B"], "block": [256, 1, 1], "smem": "0"}]}
```

Rules: device code only (no main, no cudaMalloc, no printf, no host headers);
kevo_lce_args is already declared, do not declare it again; the json block names
the entry of the cuda block; grid, block and smem are integers or expressions over
B, M, N, Ku, Kc, U, num_sms with + - * / and cdiv(a, b); never read out before
writing it.
"""

KERNEL_USER = """Operator ikbo_lce (linear compression embedding):
    out[b] = W_cand @ E_cand[b] + W_user @ E_user[cand_to_user[b]]
Shapes (row-major, last dimension contiguous):
    w_user [M, ldw_user] (Ku columns used)   e_user [U, Ku, N]
    w_cand [M, ldw_cand] (Kc columns used)   e_cand [B, Kc, N]
    cand_to_user [B] int32 in [0, U)        out    [B, M, N]
Storage dtype fp16 (__half), accumulate in fp32, round once when storing out.
Typical shape: B=1024, M=433, N=256, Ku=1178, Kc=866, U=15.

The ABI header (already prepended to your source):
```c
{abi}
```

The pointers in kevo_lce_args are void pointers: cast them, e.g.
    const __half *wu = (const __half *)a.w_user;  __half *out = (__half *)a.out;
and the sizes are fields too: a.B, a.M, a.N, a.Ku, a.Kc, a.U, a.ldw_user, a.ldw_cand.

Write a simple, correct first kernel: one thread per output element
(b, m, n), both K sums in fp32. Give its launch plan."""


def load_abi(path):
    """The ABI header's text, or a one-line stand-in when it cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return "/* kernels/ikbo_lce/abi.h not found */"


def body(kind, a):
    """The request body for kind 'speed' or 'kernel' as a dict."""
    if kind == "speed":
        msgs = [{"role": "system", "content": SPEED_SYSTEM}, {"role": "user", "content": SPEED_USER}]
        temp, seed = 0.0, 1
    else:
        system = KERNEL_SYSTEM_EXAMPLE if a.style == "example" else KERNEL_SYSTEM
        msgs = [{"role": "system", "content": system},
                {"role": "user", "content": KERNEL_USER.replace("{abi}", load_abi(a.abi))}]
        temp, seed = a.temperature, a.seed
    return {"model": a.model, "messages": msgs, "max_tokens": a.max_tokens, "temperature": temp, "seed": seed,
            "stream": False}


FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)```", re.S)
ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(\s*const\s+__grid_constant__\s+kevo_lce_args\b')
# what a forgiving parser could take: any __global__ function whose parameter list names kevo_lce_args
LOOSE_ENTRY = re.compile(r"__global__\s+void\s+(\w+)\s*\([^)]*\bkevo_lce_args\b")
HOST = re.compile(r"\bint\s+main\s*\(|\bcuda(Malloc|Memcpy|Free|DeviceSynchronize)\w*\s*\(|\bprintf\s*\(|"
                  r"#\s*include\s*<(stdio|stdlib|iostream|cuda_runtime)")


def check_format(text):
    """(verdict, notes) for a kevo-like reply.

    verdict 'ok': a ```cuda block with an entry declared as the prompt demands
    (extern "C" __global__ void NAME(const __grid_constant__ kevo_lce_args a)),
    no host code, and a ```json plan whose launches name that entry.
    'loose': not that, but a forgiving parser would still get a source and a
    plan: code in any fence (```cuda, ```cpp, ```c, bare) with a __global__
    function taking kevo_lce_args (extern "C" could be added), no host code,
    and a JSON plan with launches.  'bad': neither."""
    blocks = [(lang.lower(), code) for lang, code in FENCE.findall(text)]
    notes = ["blocks: " + (", ".join(lang or "(bare)" for lang, _ in blocks) or "none")]
    cuda = [c for lang, c in blocks if lang in ("cuda", "cu")]
    code = [c for lang, c in blocks if lang in ("cuda", "cu", "cpp", "c++", "c", "")]
    plans = [c for lang, c in blocks if lang in ("json", "plan")]
    strict, loose = [], []
    if not cuda:
        strict.append("no ```cuda block" + (" (code in another fence)" if code else ""))
    if not code:
        loose.append("no fenced code")
    src = cuda[0] if cuda else (code[0] if code else "")
    entries = ENTRY.findall(src)
    loose_entries = LOOSE_ENTRY.findall(src)
    notes.append("entries: " + (", ".join(entries) if entries else
                                "none with the exact signature" +
                                (f" (loosely: {', '.join(loose_entries)})" if loose_entries else "")))
    if not entries:
        strict.append('no extern "C" __global__ entry taking const __grid_constant__ kevo_lce_args')
    if not loose_entries:
        loose.append("no __global__ function taking kevo_lce_args")
    if src and HOST.search(src):
        strict.append("host code in the source")
        loose.append("host code in the source")
    if len(cuda) > 1:
        notes.append(f"{len(cuda)} cuda blocks")
    if not plans:
        strict.append("no ```json plan")
        loose.append("no ```json plan")
    else:
        try:
            p = json.loads(plans[0])
            launches = p.get("launches") if isinstance(p, dict) else None
            if not isinstance(launches, list) or not launches:
                raise ValueError("no launches list")
            names = [str(l.get("entry")) if isinstance(l, dict) else "?" for l in launches]
            notes.append("plan entries: " + ", ".join(names))
            if not set(names) <= set(entries):
                strict.append("plan names an entry the source lacks")
            if not set(names) <= set(loose_entries):
                loose.append("plan names an entry the source lacks")
        except (ValueError, AttributeError) as e:
            strict.append(f"plan unusable ({str(e)[:60]})")
            loose.append(f"plan unusable ({str(e)[:60]})")
    if not strict:
        return "ok", notes
    notes.append("why not ok: " + "; ".join(strict))
    return ("loose" if not loose else "bad"), notes


def read(kind, path, wall):
    """Print the figures of one reply file; return the exit status."""
    try:
        with open(path, "rb") as f:
            raw = f.read(16 << 20)
        r = json.loads(raw.decode("utf-8", errors="replace"))
        choice = r["choices"][0]
        text = choice.get("message", {}).get("content") or ""
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
        print(f"  not a chat completion ({type(e).__name__}: {str(e)[:120]}); first bytes: {raw[:200]!r}"
              if "raw" in locals() else f"  cannot read {path}: {e}")
        return 1
    u = r.get("usage") or {}
    t = r.get("timings") or {}
    pt, ct = u.get("prompt_tokens"), u.get("completion_tokens")
    print(f"  prompt tokens      {pt}")
    print(f"  completion tokens  {ct}  (finish_reason {choice.get('finish_reason')})")
    print(f"  wall time          {wall:.2f} s")
    if isinstance(ct, int) and wall > 0:
        print(f"  end-to-end         {ct / wall:.2f} completion tokens/s (prompt processing included)")
    if t:
        print(f"  server timings     prompt {t.get('prompt_n')} tok in {t.get('prompt_ms', 0) / 1000:.2f} s "
              f"= {t.get('prompt_per_second', 0):.1f} tok/s; generation {t.get('predicted_n')} tok in "
              f"{t.get('predicted_ms', 0) / 1000:.2f} s = {t.get('predicted_per_second', 0):.2f} tok/s")
    if kind == "kernel":
        verdict, notes = check_format(text)
        for n in notes:
            print("  " + n)
        print("format: " + verdict)
    else:
        head = text.strip().splitlines()[:3]
        print("  reply starts       " + " / ".join(h[:60] for h in head))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["body", "read"])
    ap.add_argument("kind", choices=["speed", "kernel"])
    ap.add_argument("file", nargs="?", help="reply file (read)")
    ap.add_argument("wall", nargs="?", type=float, default=0.0, help="wall seconds of the request (read)")
    ap.add_argument("--model", default="qwen")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--abi", default="kernels/ikbo_lce/abi.h")
    ap.add_argument("--style", choices=["example", "rules"], default="example",
                    help="kernel request: the format shown as an example reply (default) or described in rules")
    a = ap.parse_args()
    if a.what == "body":
        json.dump(body(a.kind, a), sys.stdout)
        return 0
    if not a.file:
        ap.error("read needs the reply file")
    return read(a.kind, a.file, a.wall)


if __name__ == "__main__":
    sys.exit(main())
