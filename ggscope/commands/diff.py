"""``ggscope diff A B``: what changed from A to B, with numeric error per tensor.

Exit status follows diff(1): 0 identical, 1 different, 2 trouble (unreadable, unknown
or damaged file, tensor data that cannot be read, or ``--tui`` without the TUI).
"""
from __future__ import annotations

import importlib
import json
import sys

from ..diff import DiffCancelled, diff_files
from ..report import diff as render
from .common import add_color_argument, console, error, open_or_report, use_rich

HELP = "compare two model files: metadata, tensor set, and numeric error per tensor"
DESCRIPTION = """\
Compare two model files of any ggml-family formats (GGUF against GGJT, rwkv.cpp FP32
against Q5_1, ...).  A is the reference.  Reports metadata keys added, removed and
changed (arrays item by item), tensors added and removed, shape, type and offset
changes, and for tensors in both files the error of B against A after dequantization:
max |B-A|, RMSE, relative RMSE (||B-A|| / ||A||), cosine similarity and SNR in dB.
Byte-identical tensors are recognised without decoding; memory stays bounded on
files of any size."""
EPILOG = """\
examples:
  ggscope diff model-f32.gguf model-q4_k.gguf
  ggscope diff --metadata-only old.gguf new.gguf
  ggscope diff --json model-f16.bin model-q5_1.bin | jq '.tensors[] | select(.cosine < 0.999) | .name'
  ggscope diff a.gguf b.gguf > /dev/null && echo same

JSON: one object {"identical", "header": [{"field", "a", "b"}], "metadata": {"added",
"removed", "changed"}, "counts", "tensors": [{"name", "status", "changes", "shape_a",
"shape_b", "type_a", "type_b", "offset_a", "offset_b", "max_abs", "rmse", "rel_rmse",
"cosine", "snr_db", "n_nonfinite", "error"}]}; status is one of identical, equal,
changed, shape-changed, added, removed, error; infinite SNR is the string "Infinity".
exit status: 0 identical, 1 different, 2 unreadable/damaged input or unreadable data."""


def add_arguments(p) -> None:
    p.add_argument("a", metavar="A", help="reference file")
    p.add_argument("b", metavar="B", help="file compared against A")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--metadata-only", action="store_true", help="compare header and metadata only")
    p.add_argument("--tui", action="store_true", help="show the diff in the interactive browser")
    add_color_argument(p)


def _run_tui(a, b) -> int:
    try:
        mod = importlib.import_module("ggscope.tui.diff_app")
    except ModuleNotFoundError as exc:
        if exc.name not in ("ggscope.tui", "ggscope.tui.diff_app"):
            raise
        error("the diff screen of the TUI is not available in this build (ggscope.tui.diff_app "
              "is missing); run without --tui for text or --json output")
        return 2
    return int(mod.run(a, b) or 0)


def run(args) -> int:
    a = open_or_report(args.a)
    if a is None:
        return 2
    b = open_or_report(args.b)
    if b is None:
        return 2
    if args.tui:
        return _run_tui(a, b)
    try:
        result = diff_files(a, b, metadata_only=args.metadata_only)
    except DiffCancelled:
        return 2
    if args.json:
        json.dump(render.as_json(result), sys.stdout, ensure_ascii=False, allow_nan=False)
        sys.stdout.write("\n")
    elif use_rich(args):
        con = console(args)
        for r in render.rich_renderables(result):
            con.print(r)
    else:
        sys.stdout.write(render.plain(result) + "\n")
    for t in result.tensors:
        if t.status == "error":
            error(f"{t.name}: {t.error}")
    if result.has_errors:
        return 2
    return 0 if result.identical else 1
