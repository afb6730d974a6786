"""Fetch the real chat templates llama.cpp ships, for the template rules' false-positive test.

Why: llama.cpp keeps the chat templates of the models it supports in
``models/templates/*.jinja``; ggscope's template rules must report no error and no
unjustified warning on any of them (tests/rules/test_template_real.py).  CI cannot build
llama.cpp but can reach PyPI, so this script pip-downloads the sdist of
llama-cpp-python 0.3.36 (which vendors llama.cpp) and extracts only
``vendor/llama.cpp/models/templates/`` - nothing is executed and nothing else is kept.
The templates are not committed: they are llama.cpp's, and the sdist is their source.

    python -m tools.fetch_llama_templates [--dest .cache/llama-templates] [--sdist FILE]

``--sdist`` takes an already downloaded llama_cpp_python-0.3.36.tar.gz instead of
downloading one.  Exit status: 0 written (or already there), 2 download or archive error.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.3.36"
MEMBER = "vendor/llama.cpp/models/templates/"
DEFAULT_DEST = Path(__file__).resolve().parents[1] / ".cache" / "llama-templates"


def _download(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                    "-d", str(into), f"llama-cpp-python=={VERSION}"], check=True)
    found = sorted(into.glob("llama_cpp_python-*.tar.gz"))
    if not found:
        raise FileNotFoundError("pip download left no llama_cpp_python sdist")
    return found[0]


def extract(sdist: Path, dest: Path) -> int:
    """Write the templates of ``sdist`` into ``dest``; returns how many."""
    dest.mkdir(parents=True, exist_ok=True)
    n = 0
    with tarfile.open(sdist, "r:gz") as tar:
        for m in tar.getmembers():
            head, sep, rest = m.name.partition(MEMBER)
            if not sep or not m.isfile() or "/" in rest or not rest or head.count("/") > 1:
                continue
            data = tar.extractfile(m)
            if data is None:
                continue
            (dest / rest).write_bytes(data.read())      # the base name only: no path from the archive
            n += rest.endswith(".jinja")
    return n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST)
    ap.add_argument("--sdist", type=Path, help="an already downloaded llama_cpp_python sdist")
    args = ap.parse_args(argv)
    if any(args.dest.glob("*.jinja")):
        print(f"{args.dest}: already there")
        return 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sdist = args.sdist or _download(Path(tmp))
            n = extract(sdist, args.dest)
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        print(f"fetch_llama_templates: {exc}", file=sys.stderr)
        return 2
    print(f"{args.dest}: {n} templates from llama-cpp-python {VERSION}")
    return 0 if n else 2


if __name__ == "__main__":
    sys.exit(main())
