#!/usr/bin/env python3
"""bench/same_sass.py — compile lce_ws configurations (OP, FAMILY: another op's family) with two template
trees (OLD_HOME, NEW_HOME: folders holding templates/, kernels/, prompts/) and
say whether each cubin is byte-identical (same SASS) and the registers.
  same_sass.py OLD_HOME NEW_HOME 'SHAPE|P=V,P=V,...' ...
Runs `build/kevo tune --compile-only` on this machine (no GPU).  With
NVDISASM=/path/to/nvdisasm it also counts the instructions less the NOPs that
pad each function to 128 bytes (the .text sizes include them).  OLD_DROP=P,Q leaves
those params out of the old tree's filter (params the new tree added, at their
absent value); OLD_SET=P=V,... adds to it (a param the new tree dropped)."""
import os, sqlite3, struct, subprocess, sys, tempfile


def sections(blob):
    """The ELF64 cubin's sections by name (NOBITS ones empty)."""
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", blob, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQ", blob, shoff + i * shentsize) for i in range(shnum)]
    stro = hdrs[shstrndx][4]
    return {blob[stro + h[0]:blob.index(b"\0", stro + h[0])].decode(): blob[h[4]:h[4] + h[5]] if h[1] != 8 else b""
            for h in hdrs}


def compile_one(home, shape, params, db):
    where = " && ".join(f"{k} == {v}" for k, v in (kv.split("=") for kv in params.split(",")))
    env = dict(os.environ, KEVO_HOME=home)
    subprocess.run(["build/kevo", "tune", "--op", os.environ.get("OP", "ikbo_lce"), "--shape", shape,
                    "--compile-only", "--family", os.environ.get("FAMILY", "lce_ws"), "--policy", "exhaustive", "--budget", "1", "--where", where, "--db", db, "--no-bar",
                    "--warm-start", "none"], env=env, check=True, capture_output=True)
    c = sqlite3.connect(db)
    row = c.execute("select b.cubin, c.regs, c.params from candidates c join binaries b on b.key = c.binary_key "
                    "order by c.id desc limit 1").fetchone()
    return row

def real_instr(cubin, d):
    """Instructions of the cubin's code, NOPs left out (NVDISASM set), else None."""
    tool = os.environ.get("NVDISASM")
    if not tool:
        return None
    path = f"{d}/c.cubin"
    with open(path, "wb") as f:
        f.write(cubin)
    out = subprocess.run([tool, "-c", path], check=True, capture_output=True, text=True).stdout
    return sum(1 for l in out.splitlines() if l.lstrip().startswith("/*") and "*/" in l and " NOP" not in l
               and l.lstrip()[2:6].isalnum())


old, new = sys.argv[1], sys.argv[2]
with tempfile.TemporaryDirectory() as d:
    for i, arg in enumerate(sys.argv[3:]):
        shape, params = arg.split("|")
        drop = set(filter(None, os.environ.get("OLD_DROP", "").split(",")))
        old_params = ",".join([kv for kv in params.split(",") if kv.split("=")[0] not in drop] +
                              list(filter(None, os.environ.get("OLD_SET", "").split(","))))
        a = compile_one(old, shape, old_params, f"{d}/o{i}.db")
        b = compile_one(new, shape, params, f"{d}/n{i}.db")
        sa, sb = sections(a[0]), sections(b[0])
        texts = sorted(k for k in sa if k.startswith(".text."))
        same = all(sa[k] == sb.get(k) for k in texts) and texts == sorted(k for k in sb if k.startswith(".text."))
        sizes = " ".join(f"{k[6:]}={len(sa[k]) // 16}/{len(sb.get(k, b'')) // 16}" for k in texts)
        ra, rb = real_instr(a[0], d), real_instr(b[0], d)
        real = f" no-NOP {ra}/{rb}" if ra is not None else ""
        print(f"{'SAME' if same else 'DIFF'} SASS (.text) regs {a[1]}/{b[1]} instr {sizes}{real}  {shape} {b[2]}")
