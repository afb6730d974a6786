"""Regenerate the ggml-type part of formats/gguf.ksy from ggscope/ggml_types.py.

The spec needs each type's block size to compute a tensor's byte range, and Kaitai has
no way to import a Python table.  So the table stays the one source of truth and the
spec carries a generated copy between marker comments; ``--check`` (and a test) fails
when the copy is stale.

    python -m tools.gen_gguf_types          # rewrite formats/gguf.ksy in place
    python -m tools.gen_gguf_types --check  # exit 1 if it is out of date
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ggscope.facts import ggml_types
from ggscope.ksy.loader import spec_path

BEGIN = "# -- generated from ggscope/facts/ggml_types.py by `python -m tools.gen_gguf_types`; do not edit --"
END = "# -- end of generated part --"


def _current_types() -> list[ggml_types.GGMLType]:
    return [t for t in ggml_types.TYPES if not t.removed]


def instances_block(indent: str) -> str:
    def chain(attr: str) -> str:
        parts = [f"type == ggml_type::{t.name.lower()} ? {getattr(t, attr)}" for t in _current_types()]
        return " : ".join(parts) + " : 0"
    return (f"{indent}block_elems:\n{indent}  value: '{chain('block_elems')}'\n"
            f"{indent}  doc: Elements per block of the type (0 for unknown or removed types).\n"
            f"{indent}block_bytes:\n{indent}  value: '{chain('block_bytes')}'\n"
            f"{indent}  doc: Bytes per block of the type (0 for unknown or removed types).\n")


def enum_block(indent: str) -> str:
    lines = [f"{indent}ggml_type:"] + [f"{indent}  {t.id}: {t.name.lower()}" for t in _current_types()]
    return "\n".join(lines) + "\n"


def regenerate(text: str) -> str:
    pattern = re.compile(r"(?P<indent>[ ]*)" + re.escape(BEGIN) + r"\n(?P<body>.*?)(?P=indent)" + re.escape(END),
                         re.S)
    blocks = list(pattern.finditer(text))
    if len(blocks) != 2:
        raise SystemExit(f"expected 2 generated sections in gguf.ksy, found {len(blocks)}")
    out, pos = [], 0
    for m in blocks:
        indent = m.group("indent")
        body = instances_block(indent) if "block_elems" in m.group("body") else enum_block(indent)
        out.append(text[pos:m.start("body")] + body)
        pos = m.start("body") + len(m.group("body"))
    out.append(text[pos:])
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 when formats/gguf.ksy is out of date")
    ap.add_argument("--path", type=Path, default=None, help="the spec to update (default: the package's)")
    args = ap.parse_args(argv)
    path = args.path or spec_path("gguf")
    text = path.read_text(encoding="utf-8")
    new = regenerate(text)
    if args.check:
        if new != text:
            print(f"{path} is out of date: run python -m tools.gen_gguf_types", file=sys.stderr)
            return 1
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
