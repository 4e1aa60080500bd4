#!/usr/bin/env python3
"""bench/llm_server.py — serve one GGUF model over llama.cpp's OpenAI-compatible
HTTP API through xllamacpp (which has no command line of its own), for
bench/llm_local.sh.

xllamacpp.Server(params) loads the model and starts llama.cpp's C++ HTTP server
in its own threads; this process only keeps it alive.  Once it listens, the
base URL (http://HOST:PORT, no /v1) is written to --ready-file, so a caller
that asked for port 0 learns the port the kernel chose without a race.  The
process ends on SIGTERM or SIGINT (exit status 0) and the server with it.

usage: llm_server.py --model F.gguf [--host 127.0.0.1] [--port 0] [--ctx 16384]
                     [--threads 2] [--parallel 1] [--alias qwen] [--ready-file F]
"""
import argparse
import os
import signal
import sys
import threading


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="path of the .gguf file")
    ap.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback by default)")
    ap.add_argument("--port", type=int, default=0, help="TCP port; 0 lets the kernel choose a free one")
    ap.add_argument("--ctx", type=int, default=16384, help="context size in tokens, shared by all slots")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads for generation and prompt processing")
    ap.add_argument("--parallel", type=int, default=1, help="concurrent request slots (each gets ctx/parallel)")
    ap.add_argument("--alias", default="qwen", help="model name the server reports and accepts")
    ap.add_argument("--ready-file", help="file that receives the base URL once the server listens")
    a = ap.parse_args()

    import xllamacpp as xlc  # imported late so that --help works without the package

    p = xlc.CommonParams()
    p.model.path = a.model
    p.hostnames = [a.host]
    p.port = a.port
    p.n_ctx = a.ctx
    p.n_parallel = a.parallel
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    p.model_alias = {a.alias}
    p.ui = False  # no web UI: this is an API endpoint for kevo

    try:
        server = xlc.Server(p)  # blocks until the model is loaded and the socket listens
    except RuntimeError as e:  # llama.cpp logged the cause above (port in use, unreadable model, ...)
        print(f"llm_server: xllamacpp could not start the server: {e} (the cause is in the lines above)",
              file=sys.stderr, flush=True)
        return 1
    url = server.listening_address
    print(f"llm_server: xllamacpp {xlc.__version__} serving {os.path.basename(a.model)} as '{a.alias}' "
          f"at {url}/v1 (ctx {a.ctx}, {a.threads} threads, {a.parallel} slot(s))", flush=True)
    if a.ready_file:
        tmp = a.ready_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(url + "\n")
        os.replace(tmp, a.ready_file)  # atomic: a reader sees the whole URL or nothing

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(3600):
        pass
    print("llm_server: stopping", flush=True)
    sys.stdout.flush()
    # The native server's threads are not daemon-friendly: leave without running
    # destructors that could wait on an HTTP thread blocked in accept().
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
