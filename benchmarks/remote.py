"""Remote files over loopback HTTP: what opening a header costs, and validating 200 URLs.

1. A Llama-3-sized header (``open_header.write_header``: 128k tokens, 280k merges, 291
   tensor infos) in a sparse 20 GB file, served with Range by a loopback werkzeug
   server (pytest-httpserver).  Reported: bytes and requests to ``ggscope.open`` the
   URL against the header's size (the budget: header + 2 MiB), the time next to
   opening the local file, and each client's peak RSS (fresh subprocess each).
2. 200 small GGUF files (the repository's fixtures, each under its own URL) with 20 ms
   added to every request: ``ggscope validate URL...`` sequential, ``--jobs 2`` (the
   standard-library pool) and ``--scheduler local --jobs 2`` (a Dask LocalCluster of two
   worker processes, its start-up included; its fixed cost is measured on one file),
   with the client's peak RSS.  All three must print the same report.

Run: python benchmarks/remote.py [--files 200] [--latency 0.02]
Needs the test extra (pytest-httpserver) and ggscope[dask].
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "remote"))

CLIENT = r"""
import json, resource, sys, time
sys.argv = ["ggscope", *sys.argv[1:]]
what = sys.argv[1]
t = time.perf_counter()
if what == "open":
    import ggscope
    m = ggscope.open(sys.argv[2])
    src = m.source
    out = {"keys": len(m.metadata), "tensors": len(m.tensors),
           "requests": getattr(getattr(src, "reader", None), "requests", 0),
           "bytes": getattr(getattr(src, "reader", None), "bytes_received", 0)}
    code = 0
else:
    import contextlib, io
    from ggscope.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(sys.argv[1:])
    out = {"report": buf.getvalue()}
out.update(seconds=time.perf_counter() - t, code=code,
           rss_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print("RESULT " + json.dumps(out))
"""


def client(*argv: str, env: dict | None = None) -> dict:
    proc = subprocess.run([sys.executable, "-c", CLIENT, *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})}, timeout=1800)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"client failed: {proc.stderr[-2000:]}")
    return json.loads(line[len("RESULT "):])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.02, help="seconds added to every request")
    args = ap.parse_args(argv)
    from open_header import write_header
    from range_server import RangeServer, file_response
    import logging
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    with tempfile.TemporaryDirectory() as tmp, RangeServer() as server:
        # ---- 1. one Llama-3-sized header, 20 GB sparse ---------------------------------
        big = Path(tmp) / "llama3-20GB-sparse.gguf"
        write_header(big, data_gb=20)
        import ggscope
        header = ggscope.open(big).data_offset
        url = server.serve("/llama3.gguf", big)
        local = client("open", str(big))
        server.served.requests = server.served.bytes_sent = 0
        remote = client("open", url)
        print(f"Llama-3-sized header: {header:,} bytes of a {big.stat().st_size / 1e9:.0f} GB file")
        print(f"  remote open: {remote['bytes']:,} bytes in {remote['requests']} requests "
              f"(server counted {server.served.bytes_sent:,} in {server.served.requests}) = "
              f"{remote['bytes'] / header:.2f}x the header, {remote['bytes'] - header:+,} bytes; "
              f"budget header + 2 MiB = {header + 2 * 2 ** 20:,}")
        print(f"  time: remote {remote['seconds'] * 1e3:.0f} ms vs local {local['seconds'] * 1e3:.0f} ms "
              f"(loopback, no added latency; both include the first import)")
        print(f"  peak RSS: remote {remote['rss_mib']:.0f} MiB vs local {local['rss_mib']:.0f} MiB")

        # ---- 2. 200 small files with added latency --------------------------------------
        sources = sorted((REPO / "fixtures").glob("*.gguf")) + sorted((REPO / "fixtures" / "malicious").glob("*.gguf"))
        by_name = {}
        urls = []
        for i in range(args.files):
            src = sources[i % len(sources)]
            name = f"{i:03d}-{src.name}"
            by_name[name] = src
            urls.append(server.url(f"/many/{name}"))

        def many(req):
            time.sleep(args.latency)
            return file_response(req, by_name[req.path.rsplit("/", 1)[-1]], server.served)
        server.http.expect_request(re.compile(r"^/many/.*")).respond_with_handler(many)
        listing = Path(tmp) / "urls.txt"
        listing.write_text("\n".join(urls) + "\n")
        base = ["validate", "--format", "json", "--from-list", str(listing)]
        runs = {}
        for label, extra in (("sequential", []), ("--jobs 2 (stdlib pool)", ["--jobs", "2"]),
                             ("--scheduler local --jobs 2 (Dask)", ["--scheduler", "local", "--jobs", "2"])):
            server.served.requests = server.served.bytes_sent = 0
            r = client(*base, *extra)
            runs[label] = r
            print(f"{args.files} remote files, {args.latency * 1e3:.0f} ms per request, {label}: "
                  f"{r['seconds']:.2f} s, {server.served.requests} requests, "
                  f"{server.served.bytes_sent / 2 ** 20:.1f} MiB, client peak RSS {r['rss_mib']:.0f} MiB")
        fixed = client("validate", "--format", "json", "--scheduler", "local", "--jobs", "2", urls[0])
        print(f"  of which Dask's fixed cost (start a 2-worker LocalCluster, import ggscope in each "
              f"worker, check 1 file, shut down): {fixed['seconds']:.2f} s")
        reports = {r["report"] for r in runs.values()}
        codes = {r["code"] for r in runs.values()}
        seq = runs["sequential"]["seconds"]
        for label, r in runs.items():
            print(f"  {label}: {seq / r['seconds']:.2f}x the sequential speed")
        print(f"  same report from all three: {len(reports) == 1}; exit codes {sorted(codes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
