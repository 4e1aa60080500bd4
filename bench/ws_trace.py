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
  ws_trace.py ktree SRC DST     the same, with the ring's k-tile stamps instead
                                (producer and consumer, per ring position;
                                num_sms x KT_BYTES more workspace)
  ws_trace.py kread DB DIR [N]  the ring's figures from a ktree build's dumps

A consumer warp group's thread 0 stamps each item (%globaltimer, ns): popped
from the queue, started (consumer_start: URES=0 waits there for the user
tile), main loop done, user tile ready (URES=1's late wait), stored.  `read`
prints, from the kernel's first stamp: when the user tiles' last part was
stored (the flag), how long candidate items waited for it and how many,
where the warp groups' time went (queue, start, main loop, late wait,
epilogue), and when the first and last warp groups finished.  The stamps
perturb the kernel (a few instructions per item); compare traced builds
with each other, and time untraced ones.

The k-tile trace (`ktree`, lce_ws/trace.cuh's kt_*) stamps SM cycles at each
ring position: the producer began to wait for the slot, had it free, the
consumer began to wait for the bytes, saw them.  `kread` prints where the
consumer's time goes: waiting for bytes whose loads were issued (a load's
flight outlasts the ring) or not yet issued (the producer is behind: it
waited for a free slot, or for the queue), and the k-tile period."""
import json, os, re, shutil, sqlite3, struct, sys

def trace_const(name):
    """A record count the stamps are written with, read from the header that defines it."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "templates", "lce_ws", "trace.cuh")
    m = re.search(rf"constexpr int {name} = (\d+);", open(path).read())
    if not m:
        sys.exit(f"ws_trace.py: {path} defines no {name}")
    return int(m.group(1))


RECS = trace_const("TRACE_RECS")    # records per consumer warp group
WG_BYTES = RECS * 8 * 8             # one consumer warp group's records (8 u64 each)
KT_RECS = trace_const("KT_RECS")    # ring positions stamped per CTA
KT_BYTES = 64 + KT_RECS * 16        # one CTA's k-tile header and records (4 u32 each)


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


# The k-tile stamps (ktree): anchors anywhere in lce_ws.cu and the family's
# lce_ws/ headers (the producer's loads, the consumers' main loop), each
# counted over all of them together.
KHOOKS = [
    ("    if (threadIdx.x % 128 != 0)\n        return;\n",
     "    if (threadIdx.x % 128 != 0)\n        return;\n    KT_TRACE_PRODUCER();\n", 1),
    ("            producer_claim(q);\n    }\n}\n", "            producer_claim(q);\n    }\n    KT_TRACE_END();\n}\n", 1),
    ("producer_load(a, sm, ws_decode(a, g, e.item, rank), e.p0, rank);",
     "producer_load(a, sm, ws_decode(a, g, e.item, rank), e.p0, rank, ktr);", 1),
    ("const ws_item &it, int p0,\n                                              unsigned rank)",
     "const ws_item &it, int p0,\n                                              unsigned rank, unsigned *ktr)", 1),
    ("        const int s = ring_acquire(sm.ctl->ring, p0 + k);\n",
     "        KT_PRODUCER(p0 + k, 0);\n        const int s = ring_acquire(sm.ctl->ring, p0 + k);\n"
     "        KT_PRODUCER(p0 + k, 1);\n", 1),
    ("    int held = -1;", "    unsigned *ktr = kt_trace(a, g);\n    int held = -1;", 1),
    ("consumer_compute(sm, it, e.p0, i, w, f.acc);", "consumer_compute(sm, it, e.p0, i, w, f.acc, ktr);", 1),
    ("const ws_cons &w, float (&acc)[NACC])\n{", "const ws_cons &w, float (&acc)[NACC], unsigned *ktr)\n{", 1),
    ("        const int p = p0 + k, s = ring_wait(sm.ctl->ring, p);\n",
     "        KT_CONSUMER(p0 + k, 2);\n        const int p = p0 + k, s = ring_wait(sm.ctl->ring, p);\n"
     "        KT_CONSUMER(p, 3);\n", 1),
]


def apply_hooks(texts, hooks, where):
    """hooks over texts ({name: text}), each anchor counted over all of them
    together; where names them in the message when a count is off."""
    for anchor, repl, times in hooks:
        n = sum(t.count(anchor) for t in texts.values())
        if n != times:
            sys.exit(f"ws_trace.py: {where} {'has' if len(texts) == 1 else 'have'} {n} of {anchor!r} "
                     f"where the hooks go, not {times}")
        texts = {name: t.replace(anchor, repl) for name, t in texts.items()}
    return texts


def hook_consumer(text):
    """lce_ws.cu with the stamps' hooks in its consumer function (lce_ws/trace.cuh defines them)."""
    head = "__device__ __forceinline__ void consumer(const kevo_lce_args"
    i = text.find(head)
    j = text.find("\n}\n", i)
    if i < 0 or j < 0:
        sys.exit("ws_trace.py: lce_ws.cu has no consumer function to hook")
    return text[:i] + apply_hooks({"lce_ws.cu": text[i:j]}, HOOKS, "lce_ws.cu")["lce_ws.cu"] + text[j:]


def make_tree(src, dst, ktiles=False):
    if os.path.exists(dst):
        sys.exit(f"ws_trace.py: {dst} exists (an output never replaces a folder)")
    for d in ("templates", "kernels", "prompts"):
        shutil.copytree(os.path.join(src, d), os.path.join(dst, d))
    tdir = os.path.join(dst, "templates")
    if not os.path.exists(os.path.join(tdir, "lce_ws", "trace.cuh")):
        sys.exit(f"ws_trace.py: {src} has no templates/lce_ws/trace.cuh")
    spath = os.path.join(tdir, "lce_ws.json")
    space = json.load(open(spath))
    inc = space["include"]
    if ktiles:  # lce_ws.cu and the family's own headers (lce_ws/...) the space includes
        names = ["lce_ws.cu"] + [n for n in inc if n.startswith("lce_ws/")]
        texts = apply_hooks({n: open(os.path.join(tdir, n)).read() for n in names}, KHOOKS, "lce_ws.cu and its headers")
        for n, text in texts.items():
            open(os.path.join(tdir, n), "w").write(text)
    else:
        cu = os.path.join(tdir, "lce_ws.cu")
        text = hook_consumer(open(cu).read())
        open(cu, "w").write(text)
    inc.insert(inc.index("lce_ws/work.cuh") + 1, "lce_ws/trace.cuh")  # the stamps and the hooks' definitions
    share = f"num_sms * {KT_BYTES}" if ktiles else f"num_sms * CONSUMERS * {WG_BYTES}"
    space["workspace"] = f"({space['workspace']}) + 255 + {share}"
    json.dump(space, open(spath, "w"), indent=1)
    print(f"{dst}: lce_ws traces its " + ("ring's k-tiles" if ktiles else "items") + f" (workspace + 255 + {share})")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0


def parse(blob, sms, cons):
    """The warp groups' records in a dumped workspace of len(blob) bytes whose
    last sms x cons x WG_BYTES (after 255 of alignment slack) are the trace: a list of
    {cta, c, sm, first, items: [{item, user, part, late, t: 5 stamps}]}."""
    start = trace_start(len(blob), sms * cons * WG_BYTES)
    if start is None:
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


def trace_start(size, tbytes):
    """Where a trace of tbytes starts in a dumped workspace of size bytes (256-byte aligned after the rest)."""
    start = (size - 255 - tbytes + 255) // 256 * 256
    return start if start >= 0 and start + tbytes <= size else None


def parse_kt(blob, sms):
    """The CTAs' k-tile records (ktree) in a dumped workspace: a list of
    {cta, sm, ghz, recs: [(acquire, acquired, wait, seen)]}, each stamp in ns
    from the CTA's producer start (SM cycles over the CTA's clock rate)."""
    start = trace_start(len(blob), sms * KT_BYTES)
    if start is None:
        return None
    ctas = []
    for k in range(sms):
        base = start + k * KT_BYTES
        n, gt0, clk0, smid, gt1, clk1 = struct.unpack_from("<6Q", blob, base)
        if not 1 <= n <= KT_RECS or gt1 <= gt0 or clk1 <= clk0:
            continue  # a CTA past the grid (poison) or none stamped
        ghz = (clk1 - clk0) / (gt1 - gt0)
        lo = clk0 & 0xFFFFFFFF

        def ns(x):
            d = (x - lo) & 0xFFFFFFFF
            return (d - (1 << 32) if d >= 1 << 31 else d) / ghz

        recs = [tuple(ns(x) for x in struct.unpack_from("<4I", blob, base + 64 + 16 * p)) for p in range(n)]
        ctas.append({"cta": k, "sm": smid, "ghz": ghz, "recs": recs})
    return ctas


def summary_kt(ctas, waited_ns=100.0):
    """The ring's figures over every CTA (ns): how the consumer's waits for
    bytes split into loads in flight and loads not issued yet, the
    producer's waits for a free slot, the load's flight, the k-tile period."""
    cw, pw, flight, period, work = [], [], [], [], []
    late_issue = in_flight = 0
    span = 0.0
    for c in ctas:
        r = c["recs"]
        span += r[-1][3] - r[0][2]
        for p, (acq, got, ask, seen) in enumerate(r):
            cw.append(seen - ask)
            pw.append(got - acq)
            if seen - ask > waited_ns:
                if got > ask:
                    late_issue += 1
                else:
                    in_flight += 1
                    flight.append(seen - got)
            if p + 1 < len(r):
                period.append(r[p + 1][3] - seen)
                work.append(r[p + 1][2] - seen)
    n = len(cw)
    return {"ctas": len(ctas), "ktiles": n, "ghz": sum(c["ghz"] for c in ctas) / max(1, len(ctas)),
            "wait_share": sum(cw) / span if span > 0 else 0.0, "waited": (late_issue + in_flight) / max(1, n),
            "late_issue": late_issue / max(1, n), "in_flight": in_flight / max(1, n),
            "flight_p50": pct(flight, 0.5), "flight_p90": pct(flight, 0.9),
            "wait_p50": pct(cw, 0.5), "wait_p90": pct(cw, 0.9),
            "prod_waited": sum(1 for x in pw if x > waited_ns) / max(1, n), "prod_wait_p90": pct(pw, 0.9),
            "period_p50": pct(period, 0.5), "period_p90": pct(period, 0.9), "work_p50": pct(work, 0.5)}


def candidate(db, path):
    """(id, params, shape) of the candidate a dump ws_<id>.bin belongs to, or None."""
    cid = int(re.search(r"ws_(\d+)\.bin$", path).group(1))
    row = db.execute("select c.params, r.shape from candidates c join runs r on r.id = c.run_id where c.id = ?",
                     (cid,)).fetchone()
    if not row:
        print(f"{path}: candidate {cid} not in the DB")
        return None
    return cid, json.loads(row[0]), row[1]


def open_dump(db, path, parse_blob, what):
    """A dump's trace, parse_blob(bytes, params) of it, with its candidate's
    line printed; None (and why, printed) when it has none."""
    got = candidate(db, path)
    if not got:
        return None
    cid, params, shape = got
    trace = parse_blob(open(path, "rb").read(), params)
    if not trace:
        print(f"{path}: no {what} in it")
        return None
    print(f"candidate {cid} {shape} " + " ".join(f"{k}={v}" for k, v in params.items()))
    return trace


def read_kt(db, path, sms):
    ctas = open_dump(db, path, lambda blob, params: parse_kt(blob, sms), f"k-tile trace of {sms} SMs")
    if not ctas:
        return
    s = summary_kt(ctas)
    print(f"  {s['ctas']} CTAs, {s['ktiles']} k-tiles stamped, SM clock {s['ghz']:.2f} GHz; k-tile period p50 "
          f"{s['period_p50']:.0f} ns p90 {s['period_p90']:.0f}, the consumer's own work p50 {s['work_p50']:.0f} ns")
    print(f"  consumer waits for bytes: {s['wait_share']:.0%} of its time; {s['waited']:.0%} of k-tiles waited "
          f"(p50 {s['wait_p50']:.0f} ns, p90 {s['wait_p90']:.0f}): {s['in_flight']:.0%} with the load in flight "
          f"(flight from the slot's release p50 {s['flight_p50']:.0f} ns, p90 {s['flight_p90']:.0f}), "
          f"{s['late_issue']:.0%} not issued yet")
    print(f"  producer waited for a free slot at {s['prod_waited']:.0%} of k-tiles (p90 {s['prod_wait_p90']:.0f} ns)")


def read_one(db, path, sms):
    wgs = open_dump(db, path, lambda blob, params: parse(blob, sms, params.get("CONSUMERS", 2)),
                    f"trace of {sms} SMs")
    if not wgs:
        return
    s = summary(wgs)
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
    if len(sys.argv) >= 4 and sys.argv[1] in ("tree", "ktree"):
        make_tree(sys.argv[2], sys.argv[3], ktiles=sys.argv[1] == "ktree")
    elif len(sys.argv) >= 4 and sys.argv[1] in ("read", "kread"):
        db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
        sms = int(sys.argv[4]) if len(sys.argv) > 4 else 132
        files = sorted(f for f in os.listdir(sys.argv[3]) if re.fullmatch(r"ws_\d+\.bin", f))
        for f in files:
            (read_kt if sys.argv[1] == "kread" else read_one)(db, os.path.join(sys.argv[3], f), sms)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
