#!/usr/bin/env python3
"""bench/ws_trace.py — lce_ws's item timeline, from a profiling build's stamps.

  ws_trace.py tree SRC DST      DST: a copy of SRC's templates/, kernels/ and
                                prompts/ whose lce_ws traces (lce_ws/trace.cuh
                                included, its hooks in the consumer loop,
                                num_sms x CONSUMERS x 4 KiB more workspace)
  ws_trace.py read DB DIR [N]   the timeline of each DIR/ws_<id>.bin that
                                `KEVO_WS_DUMP=DIR kevo tune ...` with that tree
                                wrote (candidate <id> of DB); N: the device's
                                SMs (132)

A consumer warp group's thread 0 stamps each item (%globaltimer, ns): popped
from the queue, started (consumer_start: URES=0 waits there for the user
tile), main loop done, user tile ready (URES=1's late wait), stored.  `read`
prints, from the kernel's first stamp: when the user tiles' last part was
stored (the flag), how long candidate items waited for it and how many,
where the warp groups' time went (queue, start, main loop, late wait,
epilogue), and when the first and last warp groups finished.  The stamps
perturb the kernel (a few instructions per item); compare traced builds
with each other, and time untraced ones."""
import json, os, re, shutil, sqlite3, struct, sys

RECS = 64                      # TRACE_RECS (templates/lce_ws/trace.cuh)
WG_BYTES = RECS * 8 * 8        # one consumer warp group's records


# Where the stamps go in lce_ws.cu's consumer loop: (anchor, replacement,
# times); a tree whose template moved on fails here, and test_ws_trace runs
# `tree` on this repository's templates.
HOOKS = [
    ("int held = -1;", "int held = -1;\n    WS_TRACE_BEGIN();", 1),
    ("const ws_entry e = queue_pop(sm.ctl, i);\n        __syncwarp();",
     "const ws_entry e = queue_pop(sm.ctl, i);\n        WS_TRACE(0);\n        __syncwarp();", 1),
    ("consumer_start<PHASE>(a, g, it, w, tile, rank, f, held);",
     "consumer_start<PHASE>(a, g, it, w, tile, rank, f, held);\n        WS_TRACE(1);", 1),
    ("consumer_compute(sm, it, e.p0, i, w, f.acc);", "consumer_compute(sm, it, e.p0, i, w, f.acc);\n        WS_TRACE_MAIN();", 1),
    ("consumer_late_user<PHASE>(a, g, it, w, tile, rank, f, held);\n#endif",
     "consumer_late_user<PHASE>(a, g, it, w, tile, rank, f, held);\n#endif\n        WS_TRACE(3);", 1),
    ("continue;", "{ WS_TRACE_DONE(); continue; }", 3),
    ("consumer_finish(a, sm, it, w, tile, f, boxes);", "consumer_finish(a, sm, it, w, tile, f, boxes);\n        WS_TRACE_DONE();", 1),
]


def hook_consumer(text):
    """lce_ws.cu with the stamps' hooks in its consumer function (lce_ws/trace.cuh defines them)."""
    head = "__device__ __forceinline__ void consumer(const kevo_lce_args"
    i = text.find(head)
    j = text.find("\n}\n", i)
    if i < 0 or j < 0:
        sys.exit("ws_trace.py: lce_ws.cu has no consumer function to hook")
    body = text[i:j]
    for anchor, repl, times in HOOKS:
        if body.count(anchor) != times:
            sys.exit(f"ws_trace.py: lce_ws.cu's consumer has {body.count(anchor)} of {anchor!r}, not {times}")
        body = body.replace(anchor, repl)
    return text[:i] + body + text[j:]


def make_tree(src, dst):
    if os.path.exists(dst):
        sys.exit(f"ws_trace.py: {dst} exists (an output never replaces a folder)")
    for d in ("templates", "kernels", "prompts"):
        shutil.copytree(os.path.join(src, d), os.path.join(dst, d))
    tdir = os.path.join(dst, "templates")
    if not os.path.exists(os.path.join(tdir, "lce_ws", "trace.cuh")):
        sys.exit(f"ws_trace.py: {src} has no templates/lce_ws/trace.cuh")
    cu = os.path.join(tdir, "lce_ws.cu")
    text = hook_consumer(open(cu).read())
    open(cu, "w").write(text)
    spath = os.path.join(tdir, "lce_ws.json")
    space = json.load(open(spath))
    inc = space["include"]
    inc.insert(inc.index("lce_ws/work.cuh") + 1, "lce_ws/trace.cuh")  # the stamps and the hooks' definitions
    space["workspace"] = f"({space['workspace']}) + 255 + num_sms * CONSUMERS * {WG_BYTES}"
    json.dump(space, open(spath, "w"), indent=1)
    print(f"{dst}: lce_ws traces ({WG_BYTES} workspace bytes per consumer warp group)")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0


def parse(blob, sms, cons):
    """The warp groups' records in a dumped workspace of len(blob) bytes whose
    last sms x cons x WG_BYTES (after 255 of alignment slack) are the trace: a list of
    {cta, c, sm, first, items: [{item, user, part, late, t: 5 stamps}]}."""
    tbytes = sms * cons * WG_BYTES
    start = (len(blob) - 255 - tbytes + 255) // 256 * 256
    if start < 0 or start + tbytes > len(blob):
        return None
    wgs = []
    for k in range(sms * cons):
        base = start + k * WG_BYTES
        n, t_first, smid = struct.unpack_from("<QQQ", blob, base)
        if n == 0 or n >= RECS:
            continue  # a CTA past the grid (poison) or no item
        items = []
        for j in range(1, n + 1):
            r = struct.unpack_from("<8Q", blob, base + j * 64)
            items.append({"item": r[0] & 0xFFFFFFFF, "user": (r[0] >> 32) & 1, "part": ((r[0] >> 40) & 0xFF) - 1,
                          "late": (r[0] >> 48) & 1, "t": r[1:6]})
        wgs.append({"cta": k // cons, "c": k % cons, "sm": smid, "first": t_first, "items": items})
    return wgs


def summary(wgs):
    """The timeline's figures, in us from the first warp group's first stamp."""
    t0 = min(w["first"] for w in wgs)
    us = lambda t: (t - t0) / 1000.0
    users = [it for w in wgs for it in w["items"] if it["user"]]
    cands = [it for w in wgs for it in w["items"] if not it["user"]]
    flag = max((it["t"][4] for it in users), default=t0)
    ends = [w["items"][-1]["t"][4] for w in wgs]
    late = [it for it in cands if it["late"]]
    waits = [(it["t"][3] - it["t"][2]) / 1000.0 for it in late]
    parts = {"queue": 0.0, "start": 0.0, "main": 0.0, "late": 0.0, "epilogue": 0.0}
    for w in wgs:
        prev = w["first"]
        for it in w["items"]:
            t = it["t"]
            for k, (a, b) in zip(parts, ((prev, t[0]), (t[0], t[1]), (t[1], t[2]), (t[2], t[3]), (t[3], t[4]))):
                parts[k] += (b - a) / 1000.0
            prev = t[4]
    per = sorted(len(w["items"]) for w in wgs)
    cm = [(it["t"][2] - it["t"][1]) / 1000.0 for it in cands]
    return {"wgs": len(wgs), "users": len(users), "cands": len(cands), "span": us(max(ends)),
            "first_done": us(min(ends)), "user_popped": (us(min(it["t"][0] for it in users)),
                                                         us(max(it["t"][0] for it in users))) if users else None,
            "flag": us(flag), "before_flag": sum(1 for it in cands if it["t"][0] < flag), "late": len(late),
            "wait_p50": pct(waits, 0.5), "wait_max": max(waits, default=0.0), "wait_sum": sum(waits),
            "parts": parts, "items_per_wg": (per[0], per[len(per) // 2], per[-1]),
            "main_p50": pct(cm, 0.5), "main_p90": pct(cm, 0.9),
            "item_p50": pct([(it["t"][4] - it["t"][0]) / 1000.0 for it in cands], 0.5)}


def read_one(db, path, sms):
    cid = int(re.search(r"ws_(\d+)\.bin$", path).group(1))
    row = db.execute("select c.params, r.shape from candidates c join runs r on r.id = c.run_id where c.id = ?",
                     (cid,)).fetchone()
    if not row:
        print(f"{path}: candidate {cid} not in the DB")
        return
    params = json.loads(row[0])
    wgs = parse(open(path, "rb").read(), sms, params.get("CONSUMERS", 2))
    if not wgs:
        print(f"{path}: no trace of {sms} SMs in it")
        return
    s = summary(wgs)
    print(f"candidate {cid} {row[1]} " + " ".join(f"{k}={v}" for k, v in params.items()))
    print(f"  {s['wgs']} warp groups, {s['users']} user items, {s['cands']} candidate items; span {s['span']:.1f} us, "
          f"warp groups done {s['first_done']:.1f}..{s['span']:.1f} us")
    if s["user_popped"]:
        print(f"  user items popped {s['user_popped'][0]:.1f}..{s['user_popped'][1]:.1f} us; the last stored (the "
              f"flag) at {s['flag']:.1f} us")
    print(f"  candidate items popped before the flag: {s['before_flag']}; late (waited after the main loop): "
          f"{s['late']}, wait p50 {s['wait_p50']:.2f} max {s['wait_max']:.2f} us, sum {s['wait_sum']:.0f} us")
    total = sum(s["parts"].values())
    print("  warp groups' time: " + ", ".join(f"{k} {v / total:.0%}" for k, v in s["parts"].items()) +
          f" (of {total:.0f} us)")
    lo, med, hi = s["items_per_wg"]
    print(f"  items per warp group {lo}..{hi}, median {med}; candidate main loop p50 {s['main_p50']:.2f} us, "
          f"p90 {s['main_p90']:.2f}; candidate item p50 {s['item_p50']:.2f} us")


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "tree":
        make_tree(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "read":
        db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
        sms = int(sys.argv[4]) if len(sys.argv) > 4 else 132
        files = sorted(f for f in os.listdir(sys.argv[3]) if re.fullmatch(r"ws_\d+\.bin", f))
        for f in files:
            read_one(db, os.path.join(sys.argv[3], f), sms)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
