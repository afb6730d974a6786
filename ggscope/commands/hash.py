"""``ggscope hash FILE...``: per-tensor hashes and manifests, as ``llama-gguf-hash`` makes them.

Why: people who download, mirror or publish GGUF files want to know that what they hold
is what was published, tensor by tensor, and that a split set is complete.  llama.cpp's
``llama-gguf-hash`` (examples/gguf-hash in the llama.cpp that llama-cpp-python 0.3.36
vendors) defines the lines and the check; this command prints the same bytes for the
same file and options (its options, spelled as it spells them), so manifests made by
either tool check with the other.  It adds what the tool lacks: several files, any
shard hashes its whole split set, http(s):// and hf:// files hashed by range reads,
``--xxh3`` and ``--json``.

stdout carries the lines (exactly the tool's bytes when piped; on a terminal file text
is escaped); errors go to stderr.  Exit status: without ``--check`` 0, or 2 when a file
cannot be read or hashed; with ``--check`` the tool's: 0 success, 1 a mismatch, 3 the
manifest has no entry for the file, 4 it has no known hash type, 5 it cannot be opened.
"""
from __future__ import annotations

import json
import sys

from ggscope.commands.common import error
from ggscope.core.errors import GGScopeError
from ggscope.core.escape import escape_text, json_text

HELP = "per-tensor hashes and manifests, compatible with llama-gguf-hash (--check verifies)"
DESCRIPTION = """\
Hash every tensor's data and all tensor data together, printing the lines
llama.cpp's llama-gguf-hash prints, byte for byte: "TYPE  DIGEST  FILE:TENSOR" per
tensor, then "TYPE  DIGEST  FILE" for the whole data.  Save them as a manifest and
verify a file later with --check (the tool's messages and exit status).  A shard of a
split set (NAME-0000k-of-0000n.gguf) hashes every shard, each under its own name, and
--check reports a missing, extra or changed shard.  http(s):// and hf:// files are
hashed by range reads of their tensor data only."""
EPILOG = """\
examples:
  ggscope hash model.gguf > model.manifest          xxh64 per tensor and overall
  ggscope hash --all --uuid model.gguf              sha256, sha1, xxh64 and the UUIDv5
  ggscope hash --check model.manifest model.gguf    verify (exit 1 on a mismatch)
  ggscope hash model-00001-of-00003.gguf            a whole split set
  ggscope hash --sha256 --no-layer hf://OWNER/REPO/model.gguf

JSON (--json): {"files": [{"input", "paths", "missing": [{"path", "reason"}], "hashes":
[{"path", "nbytes", "tensors": [{"name", ALGO: hex}], "whole": {ALGO: hex}}],
"check": null or {"manifest", "exit", "result", "tensors": [{"file", "tensor", "algo",
"result"}], "whole": [{"file", "algo", "result"}], "shards": [{"path", "status"}],
"absent": [{"file", "tensor"}]}}], "exit"}.
exit status: 0 ok; 2 a file cannot be read or hashed; with --check, llama-gguf-hash's:
1 mismatch, 3 no manifest entry for the file, 4 no known hash type in the manifest,
5 the manifest cannot be opened."""


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="model files, split shards or http(s):// / hf:// URLs")
    p.add_argument("--xxh64", action="store_true", help="use xxh64 hash (the default)")
    p.add_argument("--sha1", action="store_true", help="use sha1 hash")
    p.add_argument("--sha256", action="store_true", help="use sha256 hash")
    p.add_argument("--xxh3", action="store_true", help="use xxh3 (64-bit) hash; llama-gguf-hash has no such option")
    p.add_argument("--all", action="store_true", help="use all hash (sha256, sha1 and xxh64, as the tool's --all)")
    p.add_argument("--no-layer", "--no_layer", action="store_true", help="exclude per layer (per tensor) hash")
    p.add_argument("--uuid", action="store_true", help="generate UUIDv5 ID of the tensor data")
    p.add_argument("-c", "--check", metavar="MANIFEST", help="verify against a manifest")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--threads", type=int, default=2, help="reader and hasher threads (default 2)")


def _algos(args) -> list[str]:
    chosen = [a for a in ("xxh64", "sha1", "sha256", "xxh3", "uuid") if getattr(args, a)]
    if args.all:
        chosen += ["sha256", "sha1", "xxh64"]
    return chosen


def _out(data: bytes) -> None:
    if sys.stdout.isatty():            # file text never reaches a terminal unescaped
        data = "\n".join(escape_text(s) for s in data.decode("utf-8", "surrogateescape").split("\n")).encode()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def run(args) -> int:
    from ggscope.hash.engine import hash_set  # start-up: xxhash only when this command needs it
    from ggscope.hash.manifest import Manifest, ManifestError, check_set, plain_lines  # start-up: xxhash only when this command needs it
    if not 1 <= args.threads <= 64:
        error("--threads must be between 1 and 64")
        return 2
    algos = _algos(args)
    manifest = None
    if args.check is not None:
        try:
            manifest = Manifest.read(args.check)
        except ManifestError as exc:
            if args.json:
                _dump({"files": [], "error": json_text(str(exc)), "exit": exc.code})
            else:
                _out(exc.message)
            return exc.code
        if not algos:
            algos = list(manifest.pick())
    algos = algos or ["xxh64"]
    codes, report = [], []
    for path in args.files:
        try:
            sh = hash_set(path, algos, per_tensor=not args.no_layer, threads=args.threads)
        except GGScopeError as exc:
            error(f"cannot hash {escape_text(str(exc))}")
            codes.append(2)
            report.append({"input": json_text(path), "error": json_text(str(exc))})
            continue
        for p, reason in sh.missing:
            error(f"shard {escape_text(p)} of the split set is missing: {escape_text(reason)}")
        entry = _facts(path, sh)
        if manifest is None:
            if not args.json:
                _out(b"".join(line for fh in sh.files for line in plain_lines(fh)))
            codes.append(2 if sh.missing else 0)
        else:
            from ggscope.hash.engine import order  # start-up: xxhash only when this command needs it
            v = check_set(sh, manifest, order(algos))
            if not args.json:
                _out(b"".join(v.lines))
            entry["check"] = _check_facts(manifest, v)
            codes.append(v.code)
        report.append(entry)
    code = 1 if 1 in codes else max(codes)
    if args.json:
        _dump({"files": report, "exit": code})
    return code


def _dump(obj) -> None:
    json.dump(obj, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


def _facts(path: str, sh) -> dict:
    return {"input": json_text(path), "paths": [json_text(p) for p in sh.paths],
            "missing": [{"path": json_text(p), "reason": json_text(r)} for p, r in sh.missing],
            "hashes": [{"path": json_text(fh.path), "nbytes": fh.nbytes,
                        "tensors": [{"name": json_text(t.name), **dict(t.digests)} for t in fh.tensors],
                        "whole": dict(fh.whole)} for fh in sh.files],
            "check": None}


def _check_facts(m, v) -> dict:
    from ggscope.hash.manifest import EXIT_TEXT  # start-up: xxhash only when this command needs it
    return {"manifest": json_text(m.path), "exit": v.code, "result": EXIT_TEXT[v.code],
            "tensors": [{"file": json_text(c.file), "tensor": json_text(c.tensor), "algo": c.algo,
                         "result": c.result} for c in v.tensors],
            "whole": [{"file": json_text(f), "algo": a, "result": r} for f, a, r in v.whole],
            "shards": [{"path": json_text(p), "status": s} for p, s in v.shards],
            "absent": [{"file": json_text(f), "tensor": json_text(t)} for f, t in v.absent]}

