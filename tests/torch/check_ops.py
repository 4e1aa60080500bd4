#!/usr/bin/env python3
"""tests/torch/check_ops.py PACKAGE OP TUNED UNTUNED [--c-ms MS] — the
PyTorch op of a library written by `kevo export --torch` (installed as
PACKAGE), on the GPU:

  - at the TUNED shape (one it has a kernel for) and the UNTUNED one (none:
    the decomposed PyTorch form, with one warning), against a float32
    PyTorch reference on fresh random inputs, output of the op's bounds
    (norm-wise 2u, elementwise 4u|ref| + 4u rms(ref); u = 2^-11 fp16,
    2^-8 bf16), eagerly, under torch.compile and inside a captured CUDA
    graph replayed on new inputs;
  - the op's time at TUNED (median of 50 calls, L2 flushed before each, CUDA
    events; the method of kevo's evaluator and of the C examples) against
    the decomposed PyTorch form and the form that materializes the
    broadcast, and against the C library's time (--c-ms, from the C example
    at the same shape): within 3%.

Shapes are KEY=VALUE,... with the op's dispatch keys (ikbo_lce: B,M,N,Ku,Kc,U
and dtype; ikbo_fa: Bc,H,Sq,D,Skv,U and dtype).  Prints one line per check
and a table; exit status 0 only when every check passes."""
import argparse
import importlib
import math
import sys
import warnings

import torch
import torch.nn.functional as F

FAILED = []


def check(ok, what):
    print(("ok      " if ok else "FAILED  ") + what)
    if not ok:
        FAILED.append(what)


def parse(text):
    kv = dict(item.split("=") for item in text.split(","))
    dt = torch.bfloat16 if kv.pop("dtype", "fp16") == "bf16" else torch.float16
    return {k: int(v) for k, v in kv.items()}, dt


def uniform(shape, dt, gen):
    return (torch.rand(shape, generator=gen, device="cuda") * 2 - 1).to(dt)


def users(n, u, gen):
    """An uneven, shuffled map: candidate c to a random user of a random
    order, so some users get several candidates and some none."""
    perm = torch.randperm(u, generator=gen, device="cuda")
    pick = torch.randint(0, u, (n,), generator=gen, device="cuda")
    pick = (pick * pick) % u  # skewed
    return perm[pick].to(torch.int32).contiguous()


# ---- the ops: inputs, the float32 reference, the PyTorch peers ----

def lce_inputs(s, dt, gen):
    B, M, N, Ku, Kc, U = (s[k] for k in ("B", "M", "N", "Ku", "Kc", "U"))
    # weights packed once with rows padded to 8 elements (what the README says to do)
    wu = F.pad(uniform((M, Ku), dt, gen), (0, -Ku % 8))[:, :Ku]
    wc = F.pad(uniform((M, Kc), dt, gen), (0, -Kc % 8))[:, :Kc]
    return (wu, wc, uniform((U, Ku, N), dt, gen), uniform((B, Kc, N), dt, gen), users(B, U, gen))


def lce_ref(wu, wc, eu, ec, c2u):
    f = torch.float32
    return wc.to(f) @ ec.to(f) + (wu.to(f) @ eu.to(f)).index_select(0, c2u.long())


def lce_decomposed(wu, wc, eu, ec, c2u):
    return wc @ ec + (wu @ eu).index_select(0, c2u.long())


def lce_broadcast(wu, wc, eu, ec, c2u):
    """Stage 0: the user's E gathered per candidate, one batched GEMM."""
    return torch.cat([wu, wc], 1) @ torch.cat([eu.index_select(0, c2u.long()), ec], 1)


def fa_inputs(s, dt, gen):
    Bc, H, Sq, D, Skv, U = (s[k] for k in ("Bc", "H", "Sq", "D", "Skv", "U"))
    return (uniform((Bc, Sq, H, D), dt, gen), uniform((U, Skv, H, D), dt, gen), uniform((U, Skv, H, D), dt, gen),
            users(Bc, U, gen))


def fa_ref(q, k, v, c2u):
    f = torch.float32
    idx = c2u.long()
    qt, kt, vt = q.to(f).transpose(1, 2), k.to(f)[idx].transpose(1, 2), v.to(f)[idx].transpose(1, 2)
    p = torch.softmax((qt @ kt.transpose(-1, -2)) / math.sqrt(q.shape[-1]), dim=-1)
    return (p @ vt).transpose(1, 2)


def fa_decomposed(q, k, v, c2u):
    idx = c2u.long()
    return F.scaled_dot_product_attention(q.transpose(1, 2), k[idx].transpose(1, 2),
                                          v[idx].transpose(1, 2)).transpose(1, 2)


def fa_broadcast(q, k, v, c2u):
    """The unfused form a framework falls back to: gathered K/V, matmul,
    softmax, matmul."""
    idx = c2u.long()
    qt, kt, vt = q.transpose(1, 2), k[idx].transpose(1, 2), v[idx].transpose(1, 2)
    p = torch.softmax((qt @ kt.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1])), dim=-1)
    return (p @ vt).transpose(1, 2)


OPS = {"ikbo_lce": (lce_inputs, lce_ref, lce_decomposed, lce_broadcast),
       "ikbo_fa": (fa_inputs, fa_ref, fa_decomposed, fa_broadcast)}


def example_map(op, n, u, gen):
    """cand_to_user as the op's C example builds it (kernels/OP/export/
    example/example.c), so the two timings measure the same work: ikbo_lce
    sorted (b * U / B), ikbo_fa user perm[(c^2 + 0 or 1) mod U]."""
    c = torch.arange(n, device="cuda", dtype=torch.int64)
    if op == "ikbo_lce":
        return (c * u // n).to(torch.int32)
    perm = torch.randperm(u, generator=gen, device="cuda")
    return perm[(c * c + torch.randint(0, 2, (n,), generator=gen, device="cuda")) % u].to(torch.int32)


def same_layout(src):
    """A copy with src's strides (clone() makes a padded weight view
    contiguous, which would change which kernels take it)."""
    if src.is_contiguous():
        return src.clone()
    base = torch.zeros((src.shape[0], src.stride(0)), dtype=src.dtype, device=src.device)
    view = base[:, : src.shape[1]]
    view.copy_(src)
    return view


def within(out, ref, dt, what):
    u = 2.0 ** -8 if dt == torch.bfloat16 else 2.0 ** -11
    out, ref = out.float(), ref.float()
    d = (out - ref).abs()
    rms = ref.pow(2).mean().sqrt()
    rel = ((out - ref).norm() / ref.norm()).item()
    beyond = int((d > 4 * u * ref.abs() + 4 * u * rms).sum().item())
    finite = bool(torch.isfinite(out).all().item())
    check(finite and rel <= 2 * u and beyond == 0,
          f"{what}: rel_err {rel:.2e} (bound {2 * u:.1e}), {beyond} beyond the elementwise bound")


def median_ms(fn, reps=50):
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    for _ in range(5):
        fn()
    times = []
    for i in range(reps):
        flush.fill_(i & 0xFF)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        fn()
        e1.record()
        times.append((e0, e1))
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in times)
    return 0.5 * (t[reps // 2 - 1] + t[reps // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("package")
    ap.add_argument("op", choices=sorted(OPS))
    ap.add_argument("tuned")
    ap.add_argument("untuned")
    ap.add_argument("--c-ms", type=float, default=None)
    a = ap.parse_args()
    pkg = importlib.import_module(a.package)
    op = getattr(pkg, a.op)
    make, ref, decomposed, broadcast = OPS[a.op]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(20261122)

    for label, text in (("tuned", a.tuned), ("untuned", a.untuned)):
        s, dt = parse(text)
        x = make(s, dt, gen)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = op(*x)
            out2 = op(*x)
            torch.cuda.synchronize()
        fallback = [m for m in w if "kevo::" in str(m.message)]
        within(out, ref(*x), dt, f"{a.op} {label} {text}: eager")
        check(torch.equal(out, out2), f"{a.op} {label}: two calls agree bit for bit")
        if label == "untuned":
            check(len(fallback) == 1, f"{a.op} untuned: one fallback warning ({len(fallback)})")
        else:
            check(len(fallback) == 0, f"{a.op} tuned: the library's kernel, no fallback ({len(fallback)} warnings)")
        compiled = torch.compile(lambda *t: op(*t) * 1.0, fullgraph=True)
        within(compiled(*x), ref(*x), dt, f"{a.op} {label}: torch.compile(fullgraph=True)")
        # a CUDA graph captured on one set of inputs, replayed on two others
        static = [same_layout(t) for t in x]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            op(*static)  # warm-up before capture: loads the kernels
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            gout = op(*static)
        for r in range(2):
            fresh = make(s, dt, gen)
            for t, src in zip(static, fresh):
                t.copy_(src)
            g.replay()
            torch.cuda.synchronize()
            within(gout, ref(*static), dt, f"{a.op} {label}: CUDA graph replay {r + 1} on fresh inputs")

    s, dt = parse(a.tuned)
    x = list(make(s, dt, gen))
    x[-1] = example_map(a.op, x[-1].numel(), s["U"], gen)  # the C example's map: the same work
    t_op = median_ms(lambda: op(*x))
    t_dec = median_ms(lambda: decomposed(*x))
    t_bc = median_ms(lambda: broadcast(*x))
    print(f"\n{a.op} {a.tuned} on {torch.cuda.get_device_name(0)} (torch {torch.__version__})")
    print("| form | median ms | op's speedup |\n|---|---|---|")
    print(f"| kevo::{a.op} (this package) | {t_op:.4f} | 1.00x |")
    print(f"| decomposed PyTorch | {t_dec:.4f} | {t_dec / t_op:.2f}x |")
    print(f"| broadcast materialized (stage 0) | {t_bc:.4f} | {t_bc / t_op:.2f}x |")
    if a.c_ms:
        print(f"| C library (example) | {a.c_ms:.4f} | {a.c_ms / t_op:.2f}x |")
        check(abs(t_op / a.c_ms - 1) <= 0.03, f"{a.op}: op {t_op:.4f} ms vs C library {a.c_ms:.4f} ms "
                                               f"(ratio {t_op / a.c_ms:.3f}, bound 3%)")
    print(f"\n{len(FAILED)} failed" if FAILED else "\nall checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
