"""``ggscope stats FILE [TENSOR ...]``: streaming per-tensor statistics.

Why: finding the broken tensor (NaN/Inf values, zero or non-finite block scales, a
collapsed range) of a model file without loading it; ``ggscope.stats.tensors.tensor_stats``
does the work in bounded memory.  stdout carries the table or the JSON only; progress
goes through ``ggscope.core.progress`` (a bar per tensor on stderr, only on a terminal).
A file that changes while it is read is one line and exit status 2 (``FileChanged``
reaches ``ggscope.cli.main``; under the CLI's SIGBUS guard tensor bytes are read
through the file's map, ``ggscope.source.changes.reads_through_map``, and a page that
vanishes is the guard's line).
"""
from __future__ import annotations

import fnmatch
import sys

from ggscope.core.escape import escape_text
from ggscope.commands.common import add_color_argument, console, error, expand_files, open_or_report, use_rich

HELP = "per-tensor statistics: min, max, mean, std, zeros, NaN/Inf, histogram, block scales"
DESCRIPTION = """\
Compute statistics of every tensor (or of the named ones) by streaming its data in
bounded chunks: element count, min, max, mean, std, mean |x|, zero, NaN and Inf counts,
a histogram, and for block-quantized types the distribution of the block scales d.
NaN and Inf are counted and left out of min/max/mean/std. FILE and tensor names may be
glob patterns (quote them); several files print one table each.  On a terminal the
table keeps the columns that fit its width (NaN, Inf, range and spread first)."""
EPILOG = """\
examples:
  ggscope stats model.gguf
  ggscope stats model.gguf blk.0.attn_q.weight token_embd.weight
  ggscope stats model.gguf 'blk.*.ffn_down.weight'
  ggscope stats --json --bins 32 model.gguf 'blk.0.*' | jq '.tensors[] | {name, std}'
  ggscope stats 'models/*.gguf' output.weight

JSON: (an array of these for several files) {"version", "file", "tensors": [{"name", "type", "layout", "shape", "count",
"finite", "nan", "inf", "zeros", "min", "max", "mean", "std", "abs_mean",
"histogram": {"edges", "counts"}, "block_scales": {"field", "count", "min", "max",
"mean", "zeros", "nonfinite"} or null}], "errors": [{"name", "error"}]}; non-finite
floats are the strings "NaN", "Infinity", "-Infinity".
exit status: 0 ok, 1 some tensor could not be decoded, 2 unreadable or damaged file or
a name/pattern matching no tensor."""


def add_arguments(p) -> None:
    p.add_argument("file", help="model file or glob pattern (GGUF, GGML/GGMF/GGJT, rwkv.cpp, chatglm.cpp, BIT1)")
    p.add_argument("tensors", nargs="*", metavar="TENSOR", help="tensor names or glob patterns (default: all)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--bins", type=int, default=None, help="histogram bins (default 64)")
    p.add_argument("--threads", type=int, default=None,
                   help="worker threads (default: the streaming engine's, 2)")
    add_color_argument(p)


def _select(mf, patterns: list[str]):
    if not patterns:
        return list(mf.tensors), []
    chosen, missing, seen = [], [], set()
    for pat in patterns:
        hits = [t for t in mf.tensors if fnmatch.fnmatchcase(t.name, pat)]
        if not hits:
            missing.append(pat)
        for t in hits:
            if id(t) not in seen:
                seen.add(id(t))
                chosen.append(t)
    return chosen, missing


def run(args) -> int:
    from ggscope.stats.tensors import DEFAULT_BINS  # start-up: one-shot commands load only what they use
    if args.bins is None:
        args.bins = DEFAULT_BINS
    if not 1 <= args.bins <= 1 << 20:
        error(f"--bins must be between 1 and {1 << 20}")
        return 2
    files, missing = expand_files([args.file])
    if missing:
        error(f"no file matches {args.file}")
        return 2
    if len(files) == 1:
        return _one(args, files[0])
    status, docs = 0, []
    for i, path in enumerate(files):
        if args.json:
            import contextlib
            import io
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                code = _one(args, path)
            if buf.getvalue().strip():
                docs.append(buf.getvalue().strip())
        else:
            print(("\n" if i else "") + f"== {escape_text(path)}", flush=True)
            code = _one(args, path)
        status = max(status, code)
    if args.json:
        sys.stdout.write("[" + ", ".join(docs) + "]\n")
    return status


def _one(args, path: str) -> int:
    from ggscope.report import stats as render  # start-up: one-shot commands load only what they use
    from ggscope.stats.tensors import tensor_stats  # start-up: one-shot commands load only what they use
    mf = open_or_report(path)
    if mf is None:
        return 2
    chosen, missing = _select(mf, args.tensors)
    if missing:
        error(f"{path}: no tensor matches {', '.join(f'“{m}”' for m in missing)}; "
              f"`ggscope info {path}` lists the tensors")
        return 2
    from ggscope.source.changes import reads_through_map  # start-up: one-shot commands load only what they use
    rich = use_rich(args) and not args.json
    results, errors = [], []
    kw = {} if args.threads is None else {"threads": args.threads}
    with reads_through_map():           # under the CLI's guard: through the map, no read(2) copy
        for t in chosen:
            try:
                results.append(tensor_stats(t, bins=args.bins, **kw))
            except (ValueError, NotImplementedError) as exc:
                errors.append((t.name, str(exc)))
            # a remote file's fetched pages go back after each tensor; mapped pages the
            # statistics engine gives back itself (``ggscope.stats.chunks``)
            if t.file is not None and t.file.source.remote:
                t.file.source.release(t.offset, t.offset + t.nbytes)
    if args.json:
        from ggscope.report.jsonable import dumps  # start-up: numpy only when this command needs it
        sys.stdout.write(dumps(render.as_json(mf.path, results, errors)) + "\n")
    elif rich:
        con = console(args)
        con.print(render.rich_table(results))
        for name, msg in errors:
            from rich.text import Text
            con.print(Text.assemble((escape_text(name), "red"), ": ", escape_text(msg)))
    else:
        sys.stdout.write(render.plain(results, errors) + "\n")
    return 1 if errors else 0
