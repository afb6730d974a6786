"""``ggscope diff A B``: what changed from A to B, with numeric error per tensor.

``--logits TEXT`` adds what the change costs: both files' reference forward passes
(``ggscope.forward.logits.compare_logits``) on the same prompt, with the KL divergence
and top-1 agreement of their next-token distributions at every position.

Exit status follows diff(1): 0 identical, 1 different, 2 trouble (unreadable, unknown
or damaged file, tensor data that cannot be read, an architecture without a forward
pass).
"""
from __future__ import annotations

import sys

from ggscope.core.errors import GGScopeError
from ggscope.commands.common import add_color_argument, console, error, open_or_report, use_rich

HELP = "compare two model files: metadata, tensor set, and numeric error per tensor"
DESCRIPTION = """\
Compare two model files of any ggml-family formats (GGUF against GGJT, rwkv.cpp FP32
against Q5_1, ...).  A is the reference.  Reports metadata keys added, removed and
changed (arrays item by item), tensors added and removed, shape, type and offset
changes, and for tensors in both files the error of B against A after dequantization:
max |B-A|, RMSE, relative RMSE (||B-A|| / ||A||), cosine similarity and SNR in dB.
Byte-identical tensors are recognised without decoding; memory stays bounded on
files of any size.

--logits TEXT also runs both files' numpy reference forward passes on TEXT (tokenized
with A's vocabulary; --logits-tokens gives ids) one token at a time, and compares the
next-token distributions P_A and P_B after every prefix: KL(P_A || P_B) in nats (0 when
equal, never negative: how far B's predictions drift from A's; the quantity
llama.cpp's `llama-perplexity --kl-divergence` reports) and top-1 agreement (the
fraction of positions where both files' most likely next token is the same).  This
loads both files' weights as float32 in memory.  Supported architectures: those of
`ggscope run` (llama, qwen2/3, gemma2/3, phi3, deepseek2 ...); any other is reported (exit 2).  With --metadata-only the per-tensor
comparison is skipped and only metadata and logits are compared."""
EPILOG = """\
examples:
  ggscope diff model-f32.gguf model-q4_k.gguf
  ggscope diff --metadata-only old.gguf new.gguf
  ggscope diff --json model-f16.bin model-q5_1.bin | jq '.tensors[] | select(.cosine < 0.999) | .name'
  ggscope diff a.gguf b.gguf > /dev/null && echo same
  ggscope diff model-f16.gguf model-q4_k.gguf --logits "The capital of France is"
  ggscope diff --metadata-only --json a.bin b.bin --logits-tokens 34,105,110 | jq .logits.kl_mean

JSON: one object {"identical", "header": [{"field", "a", "b"}], "metadata": {"added",
"removed", "changed"}, "counts", "tensors": [{"name", "status", "changes", "shape_a",
"shape_b", "type_a", "type_b", "offset_a", "offset_b", "max_abs", "rmse", "rel_rmse",
"cosine", "snr_db", "n_nonfinite", "error"}]}; status is one of identical, equal,
changed, shape-changed, added, removed, error; infinite SNR is the string "Infinity".
With --logits or --logits-tokens the object also has "logits": {"architecture_a",
"architecture_b", "n_vocab", "tokens", "notes", "kl_mean", "kl_max", "top1_agreement",
"max_abs_logit", "n_nonfinite", "positions": [{"index", "token", "kl", "top1_a",
"top1_b", "max_abs_logit"}]}; position i is the prediction after tokens[0..i], and kl is
null where either file's logits are NaN/Inf.
exit status: 0 identical, 1 different (files, or logits with --logits), 2 unreadable/damaged
input or unreadable data, an architecture without a forward pass, bad token ids."""


def add_arguments(p) -> None:
    p.add_argument("a", metavar="A", help="reference file")
    p.add_argument("b", metavar="B", help="file compared against A")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--metadata-only", action="store_true",
                   help="compare header and metadata only (and logits, with --logits)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--logits", metavar="TEXT",
                     help="also compare next-token distributions on TEXT: KL divergence, top-1 agreement")
    src.add_argument("--logits-tokens", metavar="IDS",
                     help="as --logits, with token ids (comma- or space-separated)")
    p.add_argument("--tui", action="store_true", help="show the diff in the interactive browser")
    add_color_argument(p)


def _run_tui(a, b) -> int:
    from ggscope.tui.diff_app import run as run_diff_screen     # textual loads only for --tui
    return int(run_diff_screen(a, b) or 0)


def _logits(args, a, b):
    """The --logits comparison: architectures checked first, then tokens, then both runs."""
    from ggscope.forward import module_for  # start-up: numpy only when this command needs it
    from ggscope.forward.logits import compare_logits, tokens_for  # start-up: numpy only when this command needs it
    from ggscope.commands.run import parse_ids  # start-up: one-shot commands load only what they use
    module_for(a)                       # an unsupported architecture is named before tokenizing
    module_for(b)
    if args.logits is not None:
        ids, notes = tokens_for(a, b, args.logits)
    else:
        ids, notes = parse_ids(args.logits_tokens, "--logits-tokens"), ()
    result = compare_logits(a, b, ids, notes=notes)
    from ggscope.model.tokenizer import TokenizerError, load as load_tokenizer  # start-up: one-shot commands load only what they use
    try:
        return result.with_pieces(load_tokenizer(a).piece_bytes)    # candidates as text
    except TokenizerError:
        return result


def run(args) -> int:
    from ggscope.diff.compare import DiffCancelled, diff_files     # numpy and the spec engine: only now
    from ggscope.report import diff as render  # start-up: numpy only when this command needs it
    a = open_or_report(args.a)
    if a is None:
        return 2
    b = open_or_report(args.b)
    if b is None:
        return 2
    if args.tui:
        return _run_tui(a, b)
    logits = None
    if args.logits is not None or args.logits_tokens is not None:
        try:
            logits = _logits(args, a, b)
        except GGScopeError as exc:
            error(str(exc))
            return 2
        except MemoryError:
            error("not enough memory to hold both files' weights for --logits")
            return 2
    try:
        result = diff_files(a, b, metadata_only=args.metadata_only)     # progress: core.progress
    except DiffCancelled:
        return 2
    if args.json:
        from ggscope.report.jsonable import dumps  # start-up: numpy only when this command needs it
        sys.stdout.write(dumps(render.as_json(result, logits)) + "\n")
    elif use_rich(args):
        from ggscope.report.diff_rich import rich_renderables  # start-up: numpy only when this command needs it
        con = console(args)
        for r in rich_renderables(result, logits):
            con.print(r)
    else:
        sys.stdout.write(render.plain(result, logits) + "\n")
    for t in result.tensors:
        if t.status == "error":
            error(f"{t.name}: {t.error}")
    if result.has_errors:
        return 2
    if logits is not None and not logits.same:
        return 1
    return 0 if result.identical else 1
