#!/usr/bin/env python3
"""layers.py — fail on an include that runs from a lower layer up, on any
include cycle between files, and on a private header (<name>_int.h) included
from outside its own folder.

The library's folders, lowest first; a file may include its own folder and
any folder below it, never one above:

    include/    kevo.h, the public header
    util/       buffers, strings, hashing, statistics
    core/       expr, syms, the op contract (op.h), the arch table, the verdict
    templates/  space files: parse, bind, check, render
    evaluator/  compile, load, verify, time; op_gpu.h for ops' GPU sides
    kernels/    the ops (kernels/<op>/), written against core/ and evaluator/op_gpu.h
    db/         SQLite store and reports
    llm/        client, prompt, reply, admission of LLM source
    search/     graph, policies, generators, the tuning loop
    export/     the tuned library
    cli/        the kevo command

Only quoted includes that name a file of the tree count (generated and
system headers do not).  Folders outside the list (tests/, bench/, the
templates an export copies) are not checked.

Usage: .ci/layers.py [ROOT]   (exit 0: clean; 1: a violation, each printed)
"""
import os
import re
import sys

LAYERS = ["include", "util", "core", "templates", "evaluator", "kernels", "db", "llm", "search", "export", "cli"]

# (including file, included file) pairs allowed to run up, each with its reason (none)
ALLOW = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(root):
    for top in LAYERS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def includes(root, rel):
    """The tree files rel includes: relative to its folder, else to the root."""
    out = []
    with open(os.path.join(root, rel), errors="replace") as fh:
        for line in fh:
            m = INCLUDE.match(line)
            if not m:
                continue
            for cand in (os.path.join(os.path.dirname(rel), m.group(1)), m.group(1), os.path.join("include", m.group(1))):
                cand = os.path.normpath(cand)
                if os.path.isfile(os.path.join(root, cand)):
                    out.append(cand)
                    break
    return out


def layer(rel):
    top = rel.split("/", 1)[0]
    return LAYERS.index(top) if top in LAYERS else None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    graph = {rel: includes(root, rel) for rel in sources(root)}
    bad = 0
    for rel, incs in graph.items():
        for inc in incs:
            a, b = layer(rel), layer(inc)
            if b is not None and b > a and (rel, inc) not in ALLOW:
                print(f"layers: {rel} ({LAYERS[a]}) includes {inc} ({LAYERS[b]}), a higher layer")
                bad += 1
    for rel, incs in graph.items():
        for inc in incs:
            if inc.endswith("_int.h") and os.path.dirname(inc) != os.path.dirname(rel):
                print(f"layers: {rel} includes {inc}, private to {os.path.dirname(inc)}/")
                bad += 1
    # file cycles: depth-first search, grey = on the current path
    state, path = {}, []

    def visit(f):
        nonlocal bad
        state[f] = 1
        path.append(f)
        for g in graph.get(f, ()):
            if state.get(g) == 1:
                print("layers: include cycle: " + " -> ".join(path[path.index(g):] + [g]))
                bad += 1
            elif g in graph and not state.get(g):
                visit(g)
        path.pop()
        state[f] = 2

    for f in graph:
        if not state.get(f):
            visit(f)
    if bad:
        print(f"layers: {bad} violation(s); order, lowest first: {' < '.join(LAYERS)}")
        return 1
    print(f"layers: {len(graph)} files, no include upward or in a cycle ({' < '.join(LAYERS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
