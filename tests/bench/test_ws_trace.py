#!/usr/bin/env python3
"""tests/bench/test_ws_trace.py — bench/ws_trace.py reads a profiling build's
stamps where lce_ws/trace.cuh's ws_trace writes them (the workspace's last
sms x consumers x WG_BYTES, 256-byte aligned after the rest), skips CTAs past the grid, and
sums a known timeline right: the user flag, the late waits, the time split.
`tree` makes a tracing copy (its hooks where lce_ws.cu's consumer loop
still has their anchors) and never replaces a folder; `ktree`'s hooks go into
lce_ws.cu and the family's lce_ws/ headers.  The k-tile trace
(`ktree`, `kread`): parse_kt finds each CTA's header and records, turns SM
cycles into ns by the CTA's own clock rate across a 32-bit wrap, and
summary_kt splits the consumer's waits into loads in flight and loads not
yet issued."""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))
from ws_trace import KT_BYTES, KT_RECS, RECS, WG_BYTES, parse, parse_kt, summary, summary_kt  # noqa: E402


def blob_with(head, sms, cons, wgs):
    """head bytes of other workspace, the slack, then the trace; wgs: {index: (first, [records])}"""
    tb = sms * cons * WG_BYTES
    size = head + 255 + tb
    start = (head + 255) // 256 * 256
    b = bytearray(b"\xff" * size)  # poison: CTAs past the grid
    for k, (first, recs) in wgs.items():
        base = start + k * WG_BYTES
        struct.pack_into("<QQQ", b, base, len(recs), first, 7)
        for j, (word, ts) in enumerate(recs, 1):
            struct.pack_into("<8Q", b, base + j * 64, word, *ts, 0, 0)
    return bytes(b)


def kt_blob(head, sms, ctas):
    """head bytes of other workspace, the slack, then the k-tile trace; ctas:
    {index: (gt0, gt1, clk0, ghz, [(acquire, acquired, wait, seen) in cycles])}"""
    tb = sms * KT_BYTES
    start = (head + 255) // 256 * 256
    b = bytearray(b"\xff" * (head + 255 + tb))
    for k, (gt0, gt1, clk0, ghz, recs) in ctas.items():
        base = start + k * KT_BYTES
        clk1 = clk0 + int((gt1 - gt0) * ghz)
        struct.pack_into("<6Q", b, base, len(recs), gt0, clk0, 9, gt1, clk1)
        for p, r in enumerate(recs):
            struct.pack_into("<4I", b, base + 64 + 16 * p, *((clk0 + x) & 0xFFFFFFFF for x in r))
    return bytes(b)


def check_kt():
    # CTA 0 at 2 GHz, its clock about to wrap: position 0 waited 1000 ns for a
    # load in flight (issued 1100 ns before it landed), position 1 waited 500
    # ns for a slot the producer got only after the consumer asked (it waited
    # 1450 ns for it), position 2 was there.  CTA 1 is past the grid.
    recs = [(0, 0, 200, 2200), (100, 3000, 2400, 3400), (3100, 3100, 3600, 3610)]
    for head in (0, 4000):
        ctas = parse_kt(kt_blob(head, 2, {0: (10**12, 10**12 + 10**6, 2**32 - 1000, 2.0, recs)}), 2)
        assert ctas is not None and [c["cta"] for c in ctas] == [0], ctas
        assert abs(ctas[0]["ghz"] - 2.0) < 1e-9 and ctas[0]["recs"][1] == (50.0, 1500.0, 1200.0, 1700.0), ctas
        s = summary_kt(ctas)
        near = lambda x, y: abs(x - y) < 1e-9
        assert s["ktiles"] == 3 and near(s["waited"], 2 / 3) and near(s["late_issue"], 1 / 3), s
        assert near(s["in_flight"], 1 / 3) and near(s["flight_p50"], 1100.0), s
        assert near(s["prod_waited"], 1 / 3) and near(s["prod_wait_p90"], 1450.0), s
        assert near(s["wait_share"], 1505 / 1705) and near(s["period_p90"], 600.0), s
    assert parse_kt(b"\0" * 100, 2) is None
    assert KT_BYTES == 64 + 16 * KT_RECS


def word(item, user=0, part=-1, late=0):
    return item | user << 32 | (part + 1) << 40 | late << 48


def main():
    us = 1000
    T = 10**12  # the stamps' origin
    # CTA 0, warp group 0: a user part (the last, storing at 9 us), then a
    # candidate that waited 4 us for the flag; warp group 1: two candidates,
    # the first late by 2 us.  CTA 1 is past the grid (poison).
    wgs = {
        0: (T, [(word(0, user=1, part=3), (T + 1 * us, T + 1 * us, T + 8 * us, T + 8 * us, T + 9 * us)),
                (word(5, late=1), (T + 9 * us, T + 9 * us, T + 10 * us, T + 14 * us, T + 15 * us))]),
        1: (T + 500, [(word(4, late=1), (T + 1 * us, T + 1 * us, T + 5 * us, T + 7 * us, T + 8 * us)),
                      (word(6), (T + 8 * us, T + 8 * us, T + 12 * us, T + 12 * us, T + 13 * us))]),
    }
    for head in (0, 1000, 4096):
        got = parse(blob_with(head, 2, 2, wgs), 2, 2)
        assert got is not None and len(got) == 2, (head, got)
        assert [w["cta"] for w in got] == [0, 0] and [w["c"] for w in got] == [0, 1]
        s = summary(got)
        assert (s["users"], s["cands"], s["late"]) == (1, 3, 2), s
        assert abs(s["flag"] - 9.0) < 1e-9 and abs(s["span"] - 15.0) < 1e-9 and abs(s["first_done"] - 13.0) < 1e-9, s
        assert s["before_flag"] == 2, s            # items 4 and 6 popped before 9 us
        assert abs(s["wait_sum"] - 6.0) < 1e-9 and abs(s["wait_max"] - 4.0) < 1e-9, s
        parts = s["parts"]
        assert abs(parts["late"] - 6.0) < 1e-9 and abs(parts["main"] - (7 + 1 + 4 + 4)) < 1e-9, parts
        assert abs(parts["queue"] - (1 + 0 + 0.5 + 0)) < 1e-9, parts
        assert abs(sum(parts.values()) - (15 + 12.5)) < 1e-9, parts
    assert parse(b"\0" * 100, 2, 2) is None  # too small to hold a trace

    with tempfile.TemporaryDirectory() as d:
        dst = os.path.join(d, "t")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ws_trace.py"), "tree", ROOT, dst],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        cu = open(os.path.join(dst, "templates", "lce_ws.cu")).read()
        assert cu.count("WS_TRACE_DONE()") == 4 and cu.count("WS_TRACE(") == 3 and "WS_TRACE_BEGIN();" in cu, "tree hooks"
        assert "WS_TRACE" not in open(os.path.join(ROOT, "templates", "lce_ws.cu")).read()  # the family's own: no stamps
        space = json.load(open(os.path.join(dst, "templates", "lce_ws.json")))
        inc = space["include"]
        assert inc.index("lce_ws/trace.cuh") == inc.index("lce_ws/work.cuh") + 1, inc
        ws = space["workspace"]
        assert ws.endswith(f"+ 255 + num_sms * CONSUMERS * {WG_BYTES}"), ws
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ws_trace.py"), "tree", ROOT, dst],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "exists" in r.stderr, r
        kdst = os.path.join(d, "k")
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "ws_trace.py"), "ktree", ROOT, kdst],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        space = json.load(open(os.path.join(kdst, "templates", "lce_ws.json")))
        # lce_ws.cu and the family's headers the hooks go into (trace.cuh defines them)
        cu = "".join(open(os.path.join(kdst, "templates", n)).read() for n in ["lce_ws.cu"] + space["include"]
                     if n == "lce_ws.cu" or n.startswith("lce_ws/") and n != "lce_ws/trace.cuh")
        assert cu.count("KT_PRODUCER(") == 2 and cu.count("KT_CONSUMER(") == 2 and "KT_TRACE_END();" in cu, cu
        assert cu.count(", ktr)") == 2 and cu.count("unsigned *ktr") == 3, "ktree hooks"
        assert space["workspace"].endswith(f"+ 255 + num_sms * {KT_BYTES}"), space["workspace"]
    assert RECS * 64 == WG_BYTES
    check_kt()
    print("test_ws_trace: ok")


if __name__ == "__main__":
    main()
