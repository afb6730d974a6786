"""``ggscope run FILE --prompt TEXT``: what the model predicts next, by a numpy reference.

Why: a file can parse cleanly and still compute garbage (wrong tensor order, broken
quantization); running the reference forward pass of ``ggscope.forward`` shows it.
The prompt is tokenized with the file's own vocabulary (``ggscope.model.tokenizer``) or
given as ids with ``--tokens``.  Errors (no forward pass for the architecture, no
tokenizer, bad ids, missing weights) are one line on stderr and exit status 2; so is a
file llama.cpp's loader refuses (the GG11xx rules), refused before anything is built from
the counts it claims.
"""
from __future__ import annotations

import sys

from ggscope.core.errors import GGScopeError
from ggscope.commands.common import add_color_argument, console, error, forward_module, open_or_report, use_rich
from ggscope.core.escape import escape_text

HELP = "run a reference forward pass: next-token distribution, greedy generation"
DESCRIPTION = """\
Run the numpy reference forward pass of a model file on a prompt and print the
next-token distribution after its last token (top-k ids, logits, probabilities).
The prompt is tokenized with the file's own vocabulary (SentencePiece or byte-level
BPE from the GGUF metadata; bytes for rwkv.cpp files); --tokens passes ids directly.
Supported architectures: llama, llama4, qwen2, qwen3, qwen3moe, qwen2moe, qwen2vl, qwen3vl,
qwen3vlmoe (their text decoders), gemma, gemma2,
gemma3, phi2, phi3, phimoe, nemotron, starcoder2, stablelm, falcon, command-r, cohere2, deepseek2, granite,
granitemoe, minicpm, olmo2, olmoe, mistral3, smollm3, exaone, exaone4, internlm2, xverse, orion, seed_oss,
arcee, gpt-oss, glm4, glm4moe, baichuan, hunyuan-dense, hunyuan-moe, dots1, bailingmoe,
plamo, apertus, deci, ernie4_5, ernie4_5-moe, gptneox, starcoder and gpt2 (GGUF; llama and
gpt2 also early ggml files), mamba (GGUF), RWKV v4-v7 (rwkv.cpp files)
and RWKV v6/v7 (GGUF); any other architecture is reported, not guessed.  Candidates are listed with their text, escaped."""
EPILOG = """\
examples:
  ggscope run model.gguf --prompt "Hello"
  ggscope run model.gguf --prompt "Once upon a time" --generate 20
  ggscope run model.gguf --tokens 1,15043,3186 --top-k 5
  ggscope run model.gguf --prompt "Hello" --json | jq .top
  ggscope run model.gguf --prompt "Hello" --check      # logits finite? entropy?

JSON: one object {"architecture", "tokens": [ids fed], "logits": [n_vocab floats after
the last token], "top": [{"id", "token" (its text as llama.cpp's token_to_piece gives
it; null without a vocabulary), "logit", "prob"}], "generated": [ids] (with
--generate), "check": {"finite", "n_nonfinite", "entropy_nats", "max_entropy_nats", "top1"} (with
--check; entropy of the next-token distribution in nats, log(n_vocab) = uniform)}.
exit status: 0 ok, 1 --check found non-finite logits, 2 unreadable file, a file
llama.cpp's loader refuses (see `ggscope validate`), unsupported architecture or
tokenizer, bad token ids."""


def add_arguments(p) -> None:
    p.add_argument("file", help="model file (GGUF, early ggml/ggjt llama or gpt-2, rwkv.cpp)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--prompt", metavar="TEXT", help="text to tokenize with the file's vocabulary")
    src.add_argument("--tokens", metavar="IDS", help="token ids, comma- or space-separated")
    p.add_argument("--top-k", type=int, default=10, metavar="N", help="how many candidates to list (default 10)")
    p.add_argument("--generate", type=int, default=0, metavar="N", help="continue greedily for N tokens")
    p.add_argument("--no-bos", action="store_true", help="do not prepend the file's BOS token to --prompt")
    p.add_argument("--check", action="store_true", help="sanity mode: are the logits finite? entropy")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--exact", action="store_true",
                   help="the dequantized model as transformers computes it (float32 weights and "
                        "activations, nothing rounded); default: llama.cpp's CPU arithmetic")
    add_color_argument(p)


def parse_ids(text: str, option: str = "--tokens") -> list[int]:
    """Token ids given on the command line (``option`` names the flag in the error)."""
    parts = text.replace(",", " ").split()
    try:
        return [int(x) for x in parts]
    except ValueError as exc:
        raise GGScopeError(f"{option} wants integers separated by commas or spaces: {exc}") from None


def _labeller(mf, tok):
    """The tokenizer that names candidates: the prompt's, else the file's own if it has
    one (--tokens); None when the file has no vocabulary ggscope can read."""
    if tok is not None:
        return tok
    from ggscope.model.tokenizer import TokenizerError, load as load_tokenizer  # start-up: one-shot commands load only what they use
    try:
        return load_tokenizer(mf)
    except TokenizerError:
        return None


def top_ids(logits, k: int):
    """The ids of the ``k`` largest logits, largest first, equal logits by id and NaN
    last - what a stable sort of all of them gives - from one partition: no sort of the
    whole vocabulary to list five candidates."""
    import numpy as np
    key = -np.nan_to_num(np.asarray(logits), nan=-np.inf)          # ascending: the order wanted
    k = max(0, min(k, key.size))
    if k == 0:
        return np.zeros(0, np.int64)
    if k < key.size:
        edge = key[np.argpartition(key, k - 1)[k - 1]]                        # the k-th smallest key
        less = np.flatnonzero(key < edge)
        key_ids = np.concatenate([less, np.flatnonzero(key == edge)[:k - len(less)]])
    else:
        key_ids = np.arange(key.size)
    return key_ids[np.argsort(key[key_ids], kind="stable")]


def _generate(module, weights, logits, state, n: int, bar) -> tuple[list[int], object]:
    """Greedy continuation for ``n`` tokens (stops at non-finite logits), one bar step each."""
    import numpy as np
    generated: list[int] = []
    last = logits
    for _ in range(max(0, n)):
        if not np.isfinite(last).all():
            break
        nxt = int(np.argmax(last))
        generated.append(nxt)
        last, state = module.forward(weights, [nxt], state)
        bar.advance(1)
    return generated, last


def _run(args) -> int:
    import numpy as np
    from ggscope import forward as F  # start-up: numpy only when this command needs it
    from ggscope.forward.logits import check_logits, log_softmax  # start-up: numpy only when this command needs it
    from ggscope.rules.refusal import loader_refusal  # start-up: numpy, asyncio only when this command needs it
    mf = open_or_report(args.file)
    if mf is None:
        return 2
    module = forward_module(mf)
    refused = loader_refusal(mf)
    if refused is not None:          # before anything is built from the file's claims
        raise GGScopeError(f"{mf.path}: {refused}; the reference forward pass is not run")
    tok = None
    if args.prompt is not None:
        from ggscope.model.tokenizer import load as load_tokenizer  # start-up: one-shot commands load only what they use
        tok = load_tokenizer(mf)
        ids = tok.encode(args.prompt, add_bos=False if args.no_bos else None)
    else:
        ids = parse_ids(args.tokens)
    from ggscope.core import progress  # start-up: one-shot commands load only what they use
    arch = F.architecture(mf)
    with progress.task(f"{arch}: loading weights", 2 + max(0, args.generate)) as bar:
        module, weights = F.load_weights(mf, args.exact)
        bar.update(1, desc=f"{arch}: forward pass over {len(ids)} tokens")
        logits, state = module.forward(weights, ids)
        bar.update(2, desc=f"{arch}: generating" if args.generate else None)
        generated, last = _generate(module, weights, logits, state, args.generate, bar)
    names = _labeller(mf, tok)
    # the entropy only when asked for (--check): the rest reads k of the n_vocab logits
    sanity = check_logits(logits, arch=F.architecture(mf), tokens=ids) if args.check else None
    finite = sanity.finite if sanity is not None else bool(np.isfinite(logits).all())
    order = top_ids(logits, args.top_k)
    probs = np.exp(log_softmax(logits)[order]) if finite else np.full(len(order), np.nan)
    top = [{"id": int(i), "token": names.piece(int(i)) if names is not None else None,
            "logit": float(logits[i]), "prob": float(p)} for i, p in zip(order, probs)]
    entropy = sanity.entropy_nats if sanity is not None else None
    out = {"architecture": F.architecture(mf), "tokens": ids}
    if args.json:                      # n_vocab floats as Python objects: only when printed
        out["logits"] = [float(x) if np.isfinite(x) else None for x in logits.tolist()]
    out["top"] = top
    if args.generate:
        out["generated"] = generated
        if tok is not None:
            out["generated_text"] = tok.decode(generated)
    if args.check:
        out["check"] = sanity.as_dict()
    if args.json:
        from ggscope.report.jsonable import dumps  # start-up: numpy only when this command needs it
        sys.stdout.write(dumps(out) + "\n")
    elif use_rich(args):
        _rich(args, out, top, names, tok, sanity)
    else:
        w = sys.stdout.write
        w(f"architecture: {escape_text(out['architecture'])}\ntokens ({len(ids)}): {' '.join(map(str, ids))}\n")
        w("rank  id        logit      prob  token\n")
        for r, t in enumerate(top, 1):
            text = names.label(t["id"]) if names is not None else "(no vocabulary)"
            w(f"{r:>4}  {t['id']:<8} {t['logit']:>9.4f} {t['prob']:>9.5f}  {text}\n")
        if args.generate:
            w(f"generated: {' '.join(map(str, generated))}\n")
            if tok is not None:
                w(f"generated text: \"{escape_text(out['generated_text'])}\"\n")
        if args.check:
            c = out["check"]
            w(f"check: logits {'finite' if finite else 'NOT finite'} "
              f"({c['n_nonfinite']} non-finite), entropy {entropy if entropy is None else round(entropy, 4)} nats "
              f"(uniform would be {sanity.max_entropy_nats:.4f})\n")
    return 0 if finite or not args.check else 1


def _rich(args, out: dict, top: list, names, tok, sanity) -> None:
    """The same report for a terminal: a table of the candidates, colour on the check."""
    from rich.table import Table
    from rich.text import Text

    from ggscope.core.escape import escape_text  # start-up: one-shot commands load only what they use
    con = console(args)
    ids = out["tokens"]
    con.print(Text.assemble(("architecture: ", "bold cyan"), escape_text(out["architecture"])))
    con.print(Text.assemble((f"tokens ({len(ids)}): ", "bold cyan"), " ".join(map(str, ids))), overflow="fold")
    table = Table(title="next token", title_justify="left")
    for h in ("rank", "id", "logit", "prob"):
        table.add_column(h, justify="right", no_wrap=True)
    table.add_column("token", overflow="fold")
    for r, t in enumerate(top, 1):
        text = names.label(t["id"]) if names is not None else "(no vocabulary)"
        table.add_row(str(r), str(t["id"]), f"{t['logit']:.4f}", f"{t['prob']:.5f}", Text(text))
    con.print(table)
    if args.generate:
        con.print(Text.assemble(("generated: ", "bold cyan"), " ".join(map(str, out["generated"]))))
        if tok is not None:
            con.print(Text.assemble(("generated text: ", "bold cyan"), f"\"{escape_text(out['generated_text'])}\""))
    if args.check:
        c = out["check"]
        e = c["entropy_nats"]
        con.print(Text(f"check: logits {'finite' if sanity.finite else 'NOT finite'} ({c['n_nonfinite']} non-finite), "
                       f"entropy {e if e is None else round(e, 4)} nats (uniform would be "
                       f"{sanity.max_entropy_nats:.4f})", style="green" if sanity.finite else "bold red"))


def run(args) -> int:
    if args.top_k < 0 or args.generate < 0:
        error("--top-k and --generate must not be negative")
        return 2
    try:
        return _run(args)
    except GGScopeError as exc:
        error(escape_text(str(exc)))       # paths, names and tokens are file text
        return 2
    except MemoryError:
        error(f"{args.file}: not enough memory to run the reference forward pass")
        return 2
