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
from ggscope.commands.common import add_color_argument, console, error, forward_module, open_or_report, use_rich

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
`ggscope run` (llama, qwen2/3, gemma/2/3, phi3, mistral3, command-r, gpt-oss, deepseek2 ...);
any other is reported (exit 2).  With --metadata-only the per-tensor
comparison is skipped and only metadata and logits are compared.

--corpus TEXTFILE is llama-perplexity's --kl-divergence report over a whole text: the
text is tokenized once with A's vocabulary, cut into chunks of --ctx tokens (at most
--chunks of them), each chunk evaluated from an empty cache in the micro-batches
llama-perplexity cuts it into (its first token replaced by BOS where the vocabulary
adds one), and the second half of every chunk scored.  A is the base: its log-probabilities are stored as llama-perplexity
stores them (uint16 per token and row), and the report is computed from those, as
llama-perplexity computes it from its --kl-divergence-base file: PPL(Q), PPL(base),
ln(PPL(Q)/PPL(base)), mean KLD with its percentiles, Δp and RMS Δp, and "same top p"
(how often both pick the same most likely token), each with its uncertainty, under
llama-perplexity's names.  --kl-divergence-base FILE with --corpus also writes A's
log-probabilities to FILE; without --corpus it reads them from FILE (written by
`llama-perplexity -m BASE -f TEXT --kl-divergence-base FILE` or by ggscope) instead
of evaluating A.  The per-tensor comparison is skipped.  Below the block: each layer's
output error on the first chunk (relative error and cosine against A's), and with
--attribute every weight matrix of B ranked by how much of the first chunk's KLD goes
away when that one tensor is given A's weights.  With --tui the per-tensor comparison
is shown as without a text and the report in the screen's tab 3 ("Attribution"),
evaluated while the screen is up.

Arithmetic: by default --logits and --corpus compute what llama.cpp computes on a CPU
(activations rounded to each weight type's dot-product format as ggml-cpu rounds them;
with --corpus also llama-perplexity's F16 key/value cache and flash attention).
--exact computes what the weights themselves mean: every weight dequantized to float32,
activations never rounded, a float32 cache -- the model transformers' GGUF loader
builds (transformer decoders only)."""
EPILOG = """\
examples:
  ggscope diff model-f32.gguf model-q4_k.gguf
  ggscope diff --metadata-only old.gguf new.gguf
  ggscope diff --json model-f16.bin model-q5_1.bin | jq '.tensors[] | select(.cosine < 0.999) | .name'
  ggscope diff a.gguf b.gguf > /dev/null && echo same
  ggscope diff model-f16.gguf model-q4_k.gguf --logits "The capital of France is"
  ggscope diff --metadata-only --json a.bin b.bin --logits-tokens 34,105,110 | jq .logits.kl_mean
  ggscope diff model-f16.gguf model-q4_k.gguf --corpus wiki.test.raw --ctx 512 --chunks 20
  ggscope diff model-f16.gguf model-q4_k.gguf --corpus wiki.test.raw --kl-divergence-base f16.kld
  ggscope diff model-f16.gguf model-q8_0.gguf --kl-divergence-base f16.kld --json | jq .kld_mean

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
With --corpus or --kl-divergence-base the object is the KL-divergence report instead:
{"n_ctx", "n_chunk", "n_scored", "ppl_quant", "ppl_base", "ln_ppl_ratio", "ppl_ratio",
"ppl_diff", "kld_mean", "dp_mean_pct", "dp_rms_pct", "same_top_p_pct" (each {"value",
"uncertainty"}), "cor_ln_ppl_pct", "kld_percentiles" {"max", "99.9", "99.0", "95.0",
"90.0", "median", "10.0", "5.0", "1.0", "0.1", "min"}, "dp_percentiles_pct",
"identical", "notes", "layers": [{"layer", "rel_error", "cosine"}], "tensors": [{"name",
"kld", "recovered"}]}; exit 0 when every scored position's KLD is 0, else 1.
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
    src.add_argument("--corpus", metavar="TEXTFILE",
                     help="llama-perplexity's KL-divergence report of B against A over a text file")
    p.add_argument("--ctx", type=int, default=512, metavar="N",
                   help="tokens per chunk with --corpus (llama-perplexity -c; default 512)")
    p.add_argument("--chunks", type=int, default=-1, metavar="K",
                   help="evaluate at most K chunks (llama-perplexity --chunks; default all)")
    p.add_argument("--kl-divergence-base", metavar="FILE",
                   help="with --corpus: write A's log-probabilities to FILE; without: read "
                        "them from FILE (llama-perplexity's format) instead of evaluating A")
    p.add_argument("--attribute", action="store_true",
                   help="with --corpus: rank B's weight matrices by the KLD that giving each the "
                        "base's weights recovers on the first chunk (one chunk pass per tensor)")
    p.add_argument("--exact", action="store_true",
                   help="with --logits/--corpus: the dequantized models as transformers computes "
                        "them (float32, nothing rounded); default: llama.cpp's CPU arithmetic")
    p.add_argument("--tui", action="store_true",
                   help="show the diff in the interactive browser; with --corpus its tab 3 shows the "
                        "KL-divergence report, each layer's error and (--attribute) the ranked tensors")
    add_color_argument(p)


def _run_tui(args, a, b) -> int:
    from ggscope.tui.diff_app import run as run_diff_screen     # textual loads only for --tui
    kld = None
    if args.corpus is not None or args.kl_divergence_base is not None:
        kld = _kld_job(args, a, b)          # evaluated by the screen's worker, shown in its tab 3
        if kld is None:
            return 2
    return int(run_diff_screen(a, b, kld=kld, attribute=args.attribute) or 0)


def _logits(args, a, b):
    """The --logits comparison: architectures checked first, then tokens, then both runs."""
    from ggscope.forward.logits import compare_logits, tokens_for  # start-up: numpy only when this command needs it
    from ggscope.commands.run import parse_ids  # start-up: one-shot commands load only what they use
    forward_module(a)                   # an unsupported architecture is named before tokenizing
    forward_module(b)
    if args.logits is not None:
        ids, notes = tokens_for(a, b, args.logits)
    else:
        ids, notes = parse_ids(args.logits_tokens, "--logits-tokens"), ()
    result = compare_logits(a, b, ids, notes=notes, exact=args.exact)
    from ggscope.model.tokenizer import TokenizerError, load as load_tokenizer  # start-up: one-shot commands load only what they use
    try:
        return result.with_pieces(load_tokenizer(a).piece_bytes)    # candidates as text
    except TokenizerError:
        return result


def _kld_job(args, a, b):
    """The --corpus / --kl-divergence-base evaluation as a callable of a progress callback,
    or None when the text cannot be read (said on stderr)."""
    from ggscope.forward.perplexity import evaluate  # start-up: one-shot commands load only what they use
    if args.corpus is None:
        return lambda progress=None: evaluate(b, base_file=args.kl_divergence_base, chunks=args.chunks,
                                              exact=args.exact, progress=progress)
    try:
        with open(args.corpus, "rb") as f:
            text = f.read().decode("utf-8", errors="replace")
    except OSError as exc:
        error(f"cannot read {args.corpus}: {exc.strerror or exc}")
        return None
    return lambda progress=None: evaluate(b, base=a, text=text, n_ctx=args.ctx, chunks=args.chunks,
                                          write_base=args.kl_divergence_base, exact=args.exact,
                                          attribute=args.attribute, progress=progress)


def _corpus(args, a, b) -> int:
    """--corpus / --kl-divergence-base: the KL-divergence report alone."""
    from ggscope.report import perplexity as render  # start-up: one-shot commands load only what they use
    job = _kld_job(args, a, b)
    if job is None:
        return 2
    try:
        rep = job()
    except GGScopeError as exc:
        error(str(exc))
        return 2
    except MemoryError:
        error("not enough memory to hold both files' weights for --corpus")
        return 2
    if args.json:
        from ggscope.report.jsonable import dumps  # start-up: one-shot commands load only what they use
        sys.stdout.write(dumps(render.as_json(rep)) + "\n")
    else:
        sys.stdout.write(render.plain(rep) + "\n")
    return 0 if rep.identical else 1


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
        return _run_tui(args, a, b)
    if args.corpus is not None or args.kl_divergence_base is not None:
        return _corpus(args, a, b)
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
