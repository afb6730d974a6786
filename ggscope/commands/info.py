"""``ggscope info FILE``: format, version, byte order, alignment, metadata and tensors."""
from __future__ import annotations

import sys

from ggscope.commands.common import add_color_argument, console, open_or_report, use_rich

HELP = "show a file's header, metadata and tensor table"
DESCRIPTION = """\
Show a model file's format, version, byte order, alignment, metadata and tensor table.
Long arrays (vocabularies, scores, merges) are summarised as their count and first
items; --json prints everything, arrays in full."""
EPILOG = """\
examples:
  ggscope info model.gguf
  ggscope info --json model.gguf > header.json
  ggscope info --json model.gguf | jq '.tensors[] | select(.type == "Q4_K") | .name'

JSON: one object {"format", "version", "endian", "alignment", "data_offset",
"metadata": {key: value}, "metadata_types": {key: type}, "tensors": [{"name",
"shape" (ggml order, ne[0] first), "type", "offset" (absolute), "nbytes"}]}.
exit status: 0 ok, 2 unreadable, unknown or damaged file."""


def add_arguments(p) -> None:
    p.add_argument("file", help="model file (GGUF, GGML/GGMF/GGJT, rwkv.cpp, chatglm.cpp, BIT1)")
    p.add_argument("--json", action="store_true", help="print one JSON object with everything")
    add_color_argument(p)


def run(args) -> int:
    from ggscope.report import info as render  # start-up: numpy only when this command needs it
    mf = open_or_report(args.file)
    if mf is None:
        return 2
    if args.json:
        render.write_json(mf, sys.stdout)
        sys.stdout.write("\n")
    elif use_rich(args):
        con = console(args)
        for r in render.rich_renderables(mf):
            con.print(r)
    else:
        sys.stdout.write(render.plain(mf) + "\n")
    return 0
