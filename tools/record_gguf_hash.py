"""Record what llama.cpp's ``llama-gguf-hash`` prints, for CI to compare ``ggscope hash`` with.

Why: CI never builds llama.cpp, yet ``ggscope hash`` must print the tool's bytes.  This
script runs the real tool (examples/gguf-hash of the llama.cpp that llama-cpp-python
0.3.36 vendors) over the repository's GGUF files, every GGUF file of
``../shared/fixtures`` and the generated files of ``tests/hash/generated.py`` (every
tensor type, a multi-window tensor, a split set, ...), with each of its options and a
set of ``--check`` cases, and writes ``fixtures/gguf_hash/records.json`` (one record
per run: file, arguments, exit status, stdout) plus the manifests the checks read.
Each run is made in the file's directory with the bare file name, so the records hold
no machine path.  A file the tool crashes on (it dereferences a NULL context when
``gguf_init_from_file`` refuses a file) is recorded with its signal and no stdout.

Usage: python -m tools.record_gguf_hash --tool PATH/TO/llama-gguf-hash
(or LLAMA_GGUF_HASH=PATH), optionally --shared DIR (default: <repo>/../shared/fixtures).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "fixtures" / "gguf_hash"

FULL_OPTIONS = ([], ["--all"], ["--uuid"], ["--sha1"], ["--sha256", "--no-layer"], ["--all", "--uuid", "--no-layer"],
                ["--xxh64", "--sha1", "--uuid"])
SHARED_OPTIONS = ([], ["--all", "--uuid"])


def run(tool: str, cwd: Path, args: list[str]) -> tuple[int, bytes | None]:
    p = subprocess.run([tool, *args], cwd=cwd, capture_output=True, timeout=600)
    return p.returncode, (p.stdout if p.returncode >= 0 else None)


def record(rows: list, tool: str, source: str, path: Path, args: list[str], case: str = "") -> bytes | None:
    code, out = run(tool, path.parent, [*args, path.name])
    row = {"source": source, "file": path.name if source != "repo" else str(path.relative_to(REPO)),
           "args": args, "exit": code, "case": case}
    if out is not None:
        try:
            row["stdout"] = out.decode("utf-8")
        except UnicodeDecodeError:
            row["stdout_hex"] = out.hex()
    rows.append(row)
    return out


def check_cases(rows: list, tool: str, source: str, path: Path, other: Path) -> None:
    """``--check`` cases on ``path``; the manifests go to fixtures/gguf_hash/manifests/."""
    mdir = OUT / "manifests"
    mdir.mkdir(parents=True, exist_ok=True)
    stem = path.stem
    full = run(tool, path.parent, ["--all", "--uuid", path.name])[1] or b""
    lines = full.splitlines(keepends=True)
    flip = lambda ln: ln.replace(ln.split()[1], ln.split()[1][::-1], 1)            # noqa: E731
    other_full = run(tool, other.parent, ["--all", other.name])[1] or b""
    manifests = {
        "all": full,
        "tensor_changed": b"".join(flip(ln) if i == 4 else ln for i, ln in enumerate(lines)),
        "whole_changed": b"".join(flip(ln) if i == len(lines) - 3 else ln for i, ln in enumerate(lines)),
        "other_file": other_full,
        "unknown_types": b"md5  0123  " + path.name.encode() + b"\nfoo bar baz\n",
        "whole_only": run(tool, path.parent, ["--all", "--no-layer", path.name])[1] or b"",
        "tensors_only": b"".join(ln for ln in lines if b":" in ln),
        "first_decides": b"".join(flip(ln) for ln in lines) + full,
        "crlf": full.replace(b"\n", b"\r\n"),
        "xxh64_only": run(tool, path.parent, [path.name])[1] or b"",
    }
    for name, text in manifests.items():
        (mdir / f"{stem}.{name}.txt").write_bytes(text)
    for name in manifests:
        m = f"{stem}.{name}.txt"
        rel = os.path.relpath(mdir / m, path.parent)
        for opts in ([], ["--uuid"], ["--xxh64"], ["--sha1", "--no-layer"]):
            code, out = run(tool, path.parent, [*opts, "--check", rel, path.name])
            rows.append({"source": source, "file": path.name if source != "repo" else str(path.relative_to(REPO)),
                         "args": [*opts, "--check", rel], "exit": code, "case": f"check:{name}",
                         "stdout": (out or b"").decode("utf-8")})
    code, out = run(tool, path.parent, ["--check", "no-such-manifest.txt", path.name])
    rows.append({"source": source, "file": path.name if source != "repo" else str(path.relative_to(REPO)),
                 "args": ["--check", "no-such-manifest.txt"], "exit": code, "case": "check:missing",
                 "stdout": (out or b"").decode()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", default=os.environ.get("LLAMA_GGUF_HASH"), help="path of llama-gguf-hash")
    ap.add_argument("--shared", default=str(REPO / ".." / "shared" / "fixtures"), help="the shared fixtures")
    a = ap.parse_args(argv)
    if not a.tool:
        ap.error("give --tool or set LLAMA_GGUF_HASH")
    sys.path.insert(0, str(REPO / "tests" / "hash"))
    import generated
    rows: list = []
    repo_files = sorted(REPO.glob("fixtures/*.gguf")) + sorted(REPO.glob("ggscope/examples/*.gguf"))
    for p in repo_files:
        for opts in FULL_OPTIONS:
            record(rows, a.tool, "repo", p, list(opts))
    q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
    check_cases(rows, a.tool, "repo", q8, REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf")
    with tempfile.TemporaryDirectory() as tmp:
        files = generated.write_all(tmp)
        for name in generated.NAMES:
            for opts in FULL_OPTIONS:
                record(rows, a.tool, "generated", files[name], list(opts))
    shared = Path(a.shared)
    for p in sorted(shared.rglob("*.gguf")):
        for opts in SHARED_OPTIONS:
            code, out = run(a.tool, p.parent, [*opts, p.name])
            row = {"source": "shared", "file": str(p.relative_to(shared)), "args": list(opts), "exit": code, "case": ""}
            if out is not None:
                row["stdout"] = out.decode("utf-8", "surrogateescape") if out.isascii() else None
                if row["stdout"] is None:
                    del row["stdout"]
                    row["stdout_hex"] = out.hex()
            rows.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "records.json").write_text(json.dumps({"tool": "llama-gguf-hash (llama.cpp as vendored in "
                                                  "llama-cpp-python 0.3.36)", "records": rows}, indent=0) + "\n")
    crashed = sum(1 for r in rows if r["exit"] < 0)
    print(f"{len(rows)} runs recorded ({crashed} crashed) in {OUT.relative_to(REPO)}/records.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
