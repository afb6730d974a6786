"""``ggscope info FILE...``: the overview's facts, header, metadata and tensors of each file.

Files may be glob patterns; a shard of a split model shows the whole model.  Several
files print one after another (``--json``: one array of the objects).
"""
from __future__ import annotations

import sys

from ggscope.commands.common import add_color_argument, console, error, expand_files, open_or_report, use_rich

HELP = "show a file's facts, header, metadata and tensor table"
DESCRIPTION = """\
Show a model file's facts (architecture, name, file type, parameter count, bits per
weight, size, the tensor types and their share), format, version, byte order,
alignment, metadata and tensor table.  A shard of a split model shows the whole model
and names the shard given.  Long arrays (vocabularies, scores, merges) are summarised
as their count and first items; --json prints everything, arrays in full.  Offsets are
decimal; --hex prints them in hexadecimal.  FILE may be a glob pattern (quote it)."""
EPILOG = """\
examples:
  ggscope info model.gguf
  ggscope info --json model.gguf > header.json
  ggscope info --json model.gguf | jq '.tensors[] | select(.type == "Q4_K") | .name'
  ggscope info 'models/*.gguf'

JSON: one object (an array of them for several files) {"file", "summary":
{"architecture", "name", "file_type", "n_params", "file_size", "tensor_bytes",
"bits_per_weight", "tensor_types": [{"type", "tensors", "bytes"}]}, "format",
"version", "endian", "alignment", "data_offset",
"metadata": {key: value}, "metadata_types": {key: type}, "tensors": [{"name",
"shape" (ggml order, ne[0] first), "type", "offset" (absolute), "nbytes", "shard"
(split models)}]}.
exit status: 0 ok, 2 unreadable, unknown or damaged file."""


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="model files or glob patterns (GGUF, GGML/GGMF/GGJT, rwkv.cpp, chatglm.cpp, BIT1)")
    p.add_argument("--json", action="store_true", help="print one JSON object with everything")
    p.add_argument("--hex", action="store_true", help="offsets in hexadecimal (default decimal)")
    add_color_argument(p)


def run(args) -> int:
    from ggscope.report import info as render  # start-up: one-shot commands load only what they use
    files, missing = expand_files(args.files)
    for pat in missing:
        error(f"no file matches {pat}")
    status = 2 if missing else 0
    rich = use_rich(args) and not args.json
    con = console(args) if rich else None
    many = len(files) > 1
    if args.json and many:
        sys.stdout.write("[")
    first = True
    for path in files:
        mf = open_or_report(path)
        if mf is None:
            status = 2
            continue
        if args.json:
            sys.stdout.write("" if first else ", ")
            render.write_json(mf, sys.stdout)
        elif rich:
            if many and not first:
                con.rule()
            for r in render.rich_renderables(mf, args.hex):
                con.print(r)
        else:
            sys.stdout.write(("" if first else "\n") + render.plain(mf, args.hex) + "\n")
        first = False
    if args.json:
        sys.stdout.write("]\n" if many else ("\n" if not first else ""))
    return status
