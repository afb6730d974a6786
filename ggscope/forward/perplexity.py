"""What a quantization costs over a text: llama-perplexity's KL-divergence report.

Why: the figure people publish and compare quantizations by is the block
``llama-perplexity --kl-divergence`` prints -- PPL of both files, their ratio, mean KL
divergence with its percentiles, RMS Δp and "same top p" -- over a whole text, not
the one prompt of ``diff --logits``.  This module computes that block as llama.cpp
does (llama.cpp as vendored in llama-cpp-python 0.3.36,
tools/perplexity/perplexity.cpp, ``perplexity`` and ``kl_divergence``):

* the whole text is tokenized once (BOS as the vocabulary adds it) and cut into
  ``n_chunk = min(chunks, len(tokens) // n_ctx)`` chunks of ``n_ctx`` tokens; fewer
  than ``2 * n_ctx`` tokens is refused, as llama.cpp refuses it;
* each chunk is evaluated from an empty cache, its first token replaced by BOS when
  the vocabulary adds one, in the micro-batches llama.cpp cuts it into
  (``llama_pieces``), and the positions ``first = n_ctx/2 .. n_ctx-2`` are scored
  against the token that follows;
* the base's log-probabilities go through llama-perplexity's uint16 row encoding
  (``logprobs_file``), and every base figure (PPL(base), KLD, same top p, Δp) is
  computed from the decoded rows, exactly as llama-perplexity computes them from its
  --kl-divergence-base file -- so a file written by llama.cpp and one written here
  are interchangeable;
* the statistics and their uncertainties are those of ``kl_divergence``:
  ``mean_and_uncertainty`` (standard error, 0 under 11 values), the covariance of the
  two NLLs for ln(PPL(Q)/PPL(base)), percentiles interpolated in float32, the median
  as the middle (or mean of the two middle) values.

When both models are evaluated (not from a base file) and the architecture gives its
hidden states (the transformer decoders), the report also carries per-layer
attribution on the first chunk: each layer's output relative error and cosine against
the base's (``layers``); with ``attribute=True`` also every weight matrix ranked by
the KLD that giving it the base's weights recovers on that chunk (``attribution``).

Contract: ``evaluate(quant, *, base=None, base_file=None, text=None, n_ctx, chunks,
write_base=None, exact=False, attribute=False, progress=None) -> KLDReport``; either ``base`` and ``text`` (the base
is evaluated, and its rows are written to ``write_base`` when given) or ``base_file``
(a --kl-divergence-base file, by llama.cpp or by ggscope).  Memory per chunk: one
chunk's logits of each model; the per-token KLD and Δp values (4 bytes each) are kept
for the percentiles.  ``exact`` evaluates both files as the dequantized models (no
ggml rounding, float32 cache: ``decoder.load(exact=True)``) instead of llama.cpp's
arithmetic.  Errors are ``GGScopeError`` lines.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ggscope.core.errors import GGScopeError
from ggscope.forward import load_weights, module_for
from ggscope.forward.logprobs_file import (LogProbsFileError, Writer, decode_rows, encode_rows, expf,
                                           read_header, scored_positions)

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["PERCENTILES", "KLDReport", "LayerError", "layer_errors", "CorpusError", "evaluate", "chunk_logits", "Accumulator",
           "llama_pieces", "chunk_group"]

# (json key, fraction) in llama-perplexity's order; None = its median rule.
PERCENTILES: tuple[tuple[str, float | None], ...] = (
    ("max", 1.0), ("99.9", 0.999), ("99.0", 0.990), ("95.0", 0.950), ("90.0", 0.900),
    ("median", None), ("10.0", 0.100), ("5.0", 0.050), ("1.0", 0.010), ("0.1", 0.001),
    ("min", 0.0))
DP_PERCENTILES: tuple[tuple[str, float | None], ...] = (
    ("max", 1.0), ("99.9", 0.999), ("99.0", 0.990), ("95.0", 0.950), ("90.0", 0.900),
    ("75.0", 0.750), ("median", None), ("25.0", 0.250), ("10.0", 0.100), ("5.0", 0.050),
    ("1.0", 0.010), ("0.1", 0.001), ("min", 0.0))
MIN_COUNT = 100           # llama-perplexity prints no statistics over fewer scored tokens


class CorpusError(GGScopeError):
    """The text, context or base file cannot give a report."""


def _mean_unc(s: float, s2: float, n: int) -> tuple[float, float]:
    if n < 1:
        return 0.0, 0.0
    f = s / n
    df = s2 / n - f * f
    return f, (math.sqrt(df / (n - 1)) if df > 0 and n > 10 else 0.0)


def _cov(sa: float, sb: float, sab: float, n: int) -> float:
    if n < 10:
        return 0.0
    return (sab / n - (sa / n) * (sb / n)) / (n - 1)


def _percentile(values: np.ndarray, fraction: float | None) -> float:
    """perplexity.cpp's percentile lambda (float32 interpolation) and median rule."""
    n = values.size
    if fraction is None:
        mid = n // 2
        return float(values[mid]) if n % 2 else float(np.float32(0.5) * (values[mid] + values[mid - 1]))
    if fraction <= 0:
        return float(values[0])
    if fraction >= 1:
        return float(values[-1])
    p = np.float32(fraction) * np.float32(n - 1)
    ip = int(p)
    p = np.float32(p - np.float32(ip))
    return float((np.float32(1) - p) * values[ip] + p * values[min(ip + 1, n - 1)])


class Accumulator:
    """kl_divergence_result: the running sums over scored positions."""

    def __init__(self) -> None:
        self.s = dict.fromkeys(("nll", "nll2", "base", "base2", "nll_base", "kld", "kld2",
                                "dp", "dp2", "dp4"), 0.0)
        self.same_top = 0
        self.count = 0
        self.kld_values: list[np.ndarray] = []
        self.dp_values: list[np.ndarray] = []

    def add(self, logits: np.ndarray, base_lp: np.ndarray, next_tokens: np.ndarray) -> None:
        """One chunk: quant logits [T, V] float32, base log-probs [T, V] float32."""
        f32 = np.float32
        T = logits.shape[0]
        kld = np.empty(T, np.float32)
        dp = np.empty(T, np.float32)
        for t in range(T):                       # one row at a time: bounded temporaries
            row, lpb, tok = logits[t], base_lp[t], int(next_tokens[t])
            imax = int(np.argmax(row))
            mx = row[imax]
            lse = f32(math.log(float(expf(row - mx).astype(np.float64).sum())))   # glibc's expf, log
            nll = f32(f32(mx + lse) - row[tok])
            nll_base = f32(-lpb[tok])
            s = self.s
            s["nll"] += float(nll)
            s["nll2"] += float(nll * nll)
            s["base"] += float(nll_base)
            s["base2"] += float(nll_base * nll_base)
            s["nll_base"] += float(nll * nll_base)
            top = f32(mx + lse)
            keep = lpb > f32(-16)
            terms = expf(lpb[keep]) * ((lpb[keep] - row[keep]) + top)
            k = float(terms.astype(np.float64).sum())
            s["kld"] += k
            s["kld2"] += k * k
            self.same_top += int(imax == int(np.argmax(lpb)))
            d = f32(expf(-nll) - expf(-nll_base))
            d2 = float(d * d)
            s["dp"] += float(d)
            s["dp2"] += d2
            s["dp4"] += d2 * d2
            kld[t], dp[t] = k, d
        self.count += T
        self.kld_values.append(kld)
        self.dp_values.append(dp)


@dataclass(frozen=True)
class LayerError:
    """What one layer's output carries of the quantization (first chunk, scored rows)."""
    layer: int
    rel_error: float                 # ||h_Q - h_B|| / ||h_B||
    cosine: float                    # mean over rows of cos(h_Q, h_B)


@dataclass(frozen=True)
class KLDReport:
    """llama-perplexity --kl-divergence's figures (value, uncertainty) pairs."""
    n_ctx: int
    n_chunk: int
    count: int                                   # scored positions
    ppl_quant: tuple[float, float]
    ppl_base: tuple[float, float]
    cor_ln_ppl: float
    ln_ppl_ratio: tuple[float, float]
    ppl_ratio: tuple[float, float]
    ppl_diff: tuple[float, float]
    kld_mean: tuple[float, float]
    kld_percentiles: dict[str, float]
    dp_mean_pct: tuple[float, float]
    dp_percentiles_pct: dict[str, float]
    dp_rms_pct: tuple[float, float]
    same_top_p_pct: tuple[float, float]
    notes: tuple[str, ...] = ()
    layers: tuple[LayerError, ...] = ()      # per-layer error on the first chunk (both models run)
    tensors: tuple = ()                      # attribution.TensorGain, best first (attribute=True)

    @property
    def identical(self) -> bool:
        """Every scored position's KL divergence is 0 (the base's rounding aside)."""
        return self.kld_percentiles["max"] == 0.0


def report(acc: Accumulator, n_ctx: int, n_chunk: int, notes: tuple[str, ...] = ()) -> KLDReport:
    """The final block of kl_divergence from the sums."""
    s, n = acc.s, acc.count
    if n < MIN_COUNT:
        raise CorpusError(f"only {n} positions were scored; llama-perplexity reports statistics "
                          f"over at least {MIN_COUNT} (use more text, more chunks or a longer --ctx)")
    lp, lpu = _mean_unc(s["nll"], s["nll2"], n)
    lb, lbu = _mean_unc(s["base"], s["base2"], n)
    ppl, ppl_b = math.exp(lp), math.exp(lb)
    cov = _cov(s["nll"], s["base"], s["nll_base"], n)
    cor = cov / (lpu * lbu) if lpu and lbu else 0.0
    ratio_unc = math.sqrt(max(0.0, lpu * lpu + lbu * lbu - 2.0 * cov))
    ratio = math.exp(lp - lb)
    diff_unc = math.sqrt(max(0.0, (ppl * lpu) ** 2 + (ppl_b * lbu) ** 2 - 2.0 * ppl * ppl_b * cov))
    kl = np.sort(np.concatenate(acc.kld_values))
    dp = np.sort(np.concatenate(acc.dp_values))
    dpm, dpu = _mean_unc(s["dp"], s["dp2"], n)
    mse, mseu = _mean_unc(s["dp2"], s["dp4"], n)
    rms = math.sqrt(mse)
    same = acc.same_top / n
    return KLDReport(
        n_ctx, n_chunk, n, (ppl, ppl * lpu), (ppl_b, ppl_b * lbu), cor,
        (lp - lb, ratio_unc), (ratio, ratio * ratio_unc), (ppl - ppl_b, diff_unc),
        _mean_unc(s["kld"], s["kld2"], n), {k: _percentile(kl, f) for k, f in PERCENTILES},
        (100 * dpm, 100 * dpu), {k: 100 * _percentile(dp, f) for k, f in DP_PERCENTILES},
        (100 * rms, 100 * (0.5 / rms * mseu if rms else 0.0)),
        (100 * same, 100 * math.sqrt(same * (1 - same) / (n - 1))), notes)


PPL_BATCH, PPL_UBATCH = 2048, 512          # llama-perplexity's -b and -ub (common/common.h)


def chunk_group(n_ctx: int) -> int:
    """Chunks llama-perplexity decodes together: n_parallel = max(1, n_batch / n_ctx)."""
    return max(1, PPL_BATCH // n_ctx)


def llama_pieces(n_ctx: int, n_seqs: int) -> tuple[int, ...]:
    """The micro-batches (token counts) llama.cpp evaluates a chunk in when ``n_seqs``
    chunks are decoded together, one cache stream each (tools/perplexity: n_batch =
    min(2048, n_parallel x n_ctx); src/llama-kv-cache.cpp init_batch: micro-batches of
    n_ubatch = min(512, n_batch) by ``split_simple`` with one stream, else ``split_equal``
    - src/llama-batch.cpp: n_ubatch // n_seqs tokens of every sequence, then the rest).
    ggml-cpu picks kernels by a micro-batch's rows (flash attention tiled from 64 query
    rows, else one row at a time), so the pieces decide llama-perplexity's rounding."""
    n_par = chunk_group(n_ctx)
    n_batch = min(PPL_BATCH, n_par * n_ctx)
    n_ubatch = min(PPL_UBATCH, n_batch)
    step = n_ubatch if n_par == 1 else max(1, n_ubatch // max(1, n_seqs))
    out: list[int] = []
    for start in range(0, n_ctx, n_batch):
        size = min(n_ctx - start, n_batch)
        out += [min(step, size - s) for s in range(0, size, step)]
    return tuple(out)


def chunk_logits(module, weights, chunk: list[int], first: int, exact: bool = False,
                 hidden: list | None = None, pieces: tuple[int, ...] | None = None) -> np.ndarray:
    """Logits [n_ctx - first, V] of positions ``first..`` of one chunk from an empty
    cache: in the micro-batches ``pieces`` (default one) where the module evaluates
    batches, else token by token with the recurrent state carried (recurrent families)."""
    params = inspect.signature(module.forward).parameters
    with np.errstate(all="ignore"):
        if "logits_from" in params:
            # llama-perplexity's defaults on a CPU: an F16 cache, flash attention (attention._attend)
            flash = not exact
            out, layers, state, at = [], [], None, 0
            for n in (pieces if pieces and sum(pieces) == len(chunk) else (len(chunk),)):
                want = at + n > first
                extra = {"hidden": []} if hidden is not None and want and "hidden" in params else {}
                logits, state = module.forward(weights, chunk[at:at + n], state, kv_f16=not exact,
                                               logits_from=max(0, first - at) if want else None,
                                               flash_attn=flash, **extra)
                if want:
                    out.append(np.asarray(logits, np.float32).reshape(-1, np.shape(logits)[-1]))
                    layers += [extra["hidden"]] if extra else []
                at += n
            if hidden is not None and layers:
                hidden.extend(np.concatenate(parts) for parts in zip(*layers))
            return np.concatenate(out)
        rows, state = [], None
        for i, tok in enumerate(chunk):
            la, state = module.forward(weights, [tok], state)
            if i >= first:
                rows.append(np.asarray(la, np.float32))
        return np.stack(rows)


def _bos(model: "ModelFile") -> tuple[int | None, "object"]:
    from ggscope.model.tokenizer import load as load_tokenizer  # lazy: loaded only on the path that needs it
    tok = load_tokenizer(model)
    return (tok.bos_id if tok.add_bos else None), tok


def evaluate(quant: "ModelFile", *, base: "ModelFile | None" = None, base_file: str | None = None,
             text: str | None = None, n_ctx: int = 512, chunks: int = -1,
             write_base: str | None = None, exact: bool = False, attribute: bool = False,
             progress: Callable[[int, int], None] | None = None) -> KLDReport:
    """The KL-divergence report of ``quant`` against ``base`` (over ``text``) or a base file."""
    module_for(quant)                      # an unsupported architecture before any work
    bos_q, tok_q = _bos(quant)
    if base_file is not None:
        header = read_header(base_file)
        n_ctx, n_chunk, V = header.n_ctx, header.n_chunk, header.n_vocab
        if chunks >= 0:
            n_chunk = min(chunks, n_chunk)
        tokens = header.tokens[:n_chunk]
        if V != tok_q.n_vocab:              # before any work is sized by the file's claims
            raise CorpusError(f"{base_file}: the base's vocabulary has {V} tokens, "
                              f"{quant.path} has {tok_q.n_vocab}: inconsistent vocabulary")
        mod_b = w_b = None
    else:
        if base is None or text is None:
            raise CorpusError("give a base model and a text, or a --kl-divergence-base file")
        module_for(base)
        if n_ctx < 4:
            raise CorpusError(f"--ctx {n_ctx} is too small: a chunk needs at least 4 tokens")
        bos_b, tokenizer = _bos(base)
        ids = np.asarray(tokenizer.encode(text), dtype=np.int64)
        if ids.size < 2 * n_ctx:
            raise CorpusError(f"you need at least {2 * n_ctx} tokens to evaluate perplexity "
                              f"with a context of {n_ctx}; the text tokenizes to {ids.size}")
        n_max = ids.size // n_ctx
        n_chunk = n_max if chunks < 0 else min(chunks, n_max)
        tokens = ids[:n_chunk * n_ctx].reshape(n_chunk, n_ctx)
        V = tokenizer.n_vocab
        mod_b, w_b = load_weights(base, exact)
    if n_chunk < 1:
        raise CorpusError("--chunks must leave at least one chunk")
    mod_q, w_q = load_weights(quant, exact)
    first = n_ctx // 2
    rows_n = scored_positions(n_ctx)
    writer = Writer(write_base, n_ctx, V, tokens.reshape(-1)) if write_base else None
    layers: tuple[LayerError, ...] = ()
    tensors: tuple = ()
    acc = Accumulator()
    group = chunk_group(n_ctx)
    try:
        for i in range(n_chunk):
            pieces = None if exact else llama_pieces(n_ctx, min(group, n_chunk - i // group * group))
            if progress is not None:
                progress(i, n_chunk)
            chunk = [int(t) for t in tokens[i]]
            nxt = tokens[i, first + 1:]
            hb = [] if (i == 0 and w_b is not None) else None
            hq = [] if hb is not None else None
            if w_b is not None:
                lb = chunk_logits(mod_b, w_b, _with_bos(chunk, bos_b), first, exact, hb, pieces)[:rows_n]
                _check_vocab(lb.shape[1], V, base, "base")
                rows, _ = encode_rows(lb, nxt)
                if writer is not None:
                    writer.add(rows)
            else:
                rows = header.chunk(i)
            lq = chunk_logits(mod_q, w_q, _with_bos(chunk, bos_q), first, exact, hq, pieces)[:rows_n]
            if hb and hq and len(hb) == len(hq):
                layers = layer_errors([h[:rows_n] for h in hb], [h[:rows_n] for h in hq])
            _check_vocab(lq.shape[1], V, quant, "quantized")
            base_lp = decode_rows(rows, V)
            acc.add(lq, base_lp, nxt)
            if attribute and i == 0 and w_b is not None and hasattr(w_q, "layers"):
                from ggscope.forward.attribution import rank_tensors  # lazy: loaded only on the path that needs it
                tensors = rank_tensors(w_q, w_b, _chunk_kld(mod_q, _with_bos(chunk, bos_q), first,
                                                            rows_n, base_lp, nxt, exact))
    finally:
        if writer is not None:
            writer.close()
    if progress is not None:
        progress(n_chunk, n_chunk)
    return replace(report(acc, n_ctx, n_chunk), layers=layers, tensors=tensors)


def layer_errors(base: list[np.ndarray], quant: list[np.ndarray]) -> tuple["LayerError", ...]:
    """Per layer, the quantization's hidden state against the base's over the scored
    rows of one chunk: ||h_Q - h_B|| / ||h_B|| and the mean cosine of the rows."""
    out = []
    for il, (hb, hq) in enumerate(zip(base, quant)):
        b, q = hb.astype(np.float64), hq.astype(np.float64)
        nb = np.linalg.norm(b)
        rel = float(np.linalg.norm(q - b) / nb) if nb else 0.0
        den = np.linalg.norm(b, axis=1) * np.linalg.norm(q, axis=1)
        cos = np.where(den > 0, (b * q).sum(axis=1) / np.where(den > 0, den, 1), 1.0)
        out.append(LayerError(il, rel, float(cos.mean())))
    return tuple(out)


def _chunk_kld(module, chunk: list[int], first: int, rows_n: int, base_lp: np.ndarray,
               nxt: np.ndarray, exact: bool) -> Callable[[object], float]:
    """weights -> the mean KLD of one chunk against the base's log-probabilities."""
    def kld(weights) -> float:
        acc = Accumulator()
        acc.add(chunk_logits(module, weights, chunk, first, exact)[:rows_n], base_lp, nxt)
        return acc.s["kld"] / acc.count
    return kld


def _with_bos(chunk: list[int], bos: int | None) -> list[int]:
    """llama-perplexity's chunk: its first token replaced by BOS when the vocabulary adds one."""
    return chunk if bos is None else [bos, *chunk[1:]]


def _check_vocab(got: int, want: int, model, what: str) -> None:
    if got != want:
        raise CorpusError(f"{model.path}: the {what} model has {got} logits per token but the "
                          f"base has a vocabulary of {want}: the distributions cannot be compared")


__all__ += ["LogProbsFileError", "report"]
