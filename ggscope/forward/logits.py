"""What the logits say: a sanity check of one file, and the distance between two files.

Why: a converted or quantized file can be structurally perfect and still compute
something else.  ``check`` is the one sanity check of a forward pass (are the logits
finite, how spread out is the next-token distribution) that ``ggscope run --check``
and ``validate --deep`` (rule GG1003) share; ``compare_logits`` is the quality cost of
a quantization in one number: the KL divergence and top-1 agreement of two files'
next-token distributions over the same prompt, which ``ggscope diff --logits`` reports.

Contract
--------
* ``check(model, tokens) -> CheckResult``: load the weights, feed ``tokens`` and judge
  the logits after the last one; ``check_logits(logits, ...)`` judges logits already
  computed.  Entropy is in nats, computed in float64; ``None`` when a logit is NaN/Inf.
* ``compare_logits(a, b, tokens, progress=None, exact=False) -> LogitsDiff``: ``a`` is the
  reference (as in ``ggscope diff``).  Both files get the same token ids, one token at
  a time with the state carried, so position ``i`` holds the two distributions of the
  token *after* ``tokens[:i+1]``.  Per position, in float64:
  ``KL(P_A || P_B) = sum_v P_A(v) (log P_A(v) - log P_B(v))`` in nats (0 for equal
  logits, never negative), top-1 agreement (the argmax ids are equal) and
  ``max |logit_B - logit_A|``.  A position where either file's logits are not all
  finite has ``kl = None`` and counts as a disagreement.  ``progress(done, total)``
  is called before each position.
* ``tokens_for(a, b, text)``: ``text`` tokenized with A's tokenizer, and notes when
  B's own tokenizer would have given other ids (the comparison still feeds A's ids to
  both, so it compares the weights, not the vocabularies).
* Errors are ``GGScopeError``s with one-line messages: ``UnsupportedArchitecture``
  (naming the supported ones), ``WeightError``, ``TokenError``, and ``LogitsError``
  when the two vocabularies differ in size.  Both files' float32 weights are in
  memory at once while comparing.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ggscope.core.errors import GGScopeError
from ggscope.forward import architecture, module_for
from ggscope.forward import TokenError

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["CheckResult", "PositionDiff", "LogitsDiff", "LogitsError", "check", "check_logits",
           "compare_logits", "tokens_for", "log_softmax", "entropy_nats"]


class LogitsError(GGScopeError):
    """The two files' logits cannot be compared (different vocabulary sizes)."""


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log P in float64 for finite ``logits`` [n_vocab] (stable: max subtracted first)."""
    x = np.asarray(logits, dtype=np.float64)                   # [V]
    x = x - x.max()                                            # [V] max is 0
    return x - math.log(np.exp(x).sum())                       # [V]


def entropy_nats(logits: np.ndarray) -> float:
    """Entropy of softmax(``logits``) in nats: 0 (one certain token) .. log(n_vocab) (uniform)."""
    lp = log_softmax(logits)                                   # [V]
    return float(max(0.0, -(np.exp(lp) * lp).sum()))


@dataclass(frozen=True)
class CheckResult:
    """Sanity of the logits after ``tokens`` (the last position only)."""
    architecture: str
    tokens: tuple[int, ...]
    n_vocab: int
    n_nonfinite: int                 # NaN/Inf logits
    entropy_nats: float | None       # None when not finite
    top1: int | None                 # argmax id; None when not finite

    @property
    def finite(self) -> bool:
        return self.n_nonfinite == 0

    @property
    def max_entropy_nats(self) -> float:
        """log(n_vocab): the entropy of a uniform distribution, the upper bound."""
        return math.log(self.n_vocab) if self.n_vocab else 0.0

    def as_dict(self) -> dict:
        return {"finite": self.finite, "n_nonfinite": self.n_nonfinite,
                "entropy_nats": self.entropy_nats, "max_entropy_nats": self.max_entropy_nats,
                "top1": self.top1}


def check_logits(logits: np.ndarray, *, arch: str = "", tokens: Sequence[int] = ()) -> CheckResult:
    """Judge logits already computed (``ggscope run`` has them from its own pass)."""
    logits = np.asarray(logits)
    n_bad = int((~np.isfinite(logits)).sum())
    if n_bad:
        return CheckResult(arch, tuple(int(t) for t in tokens), int(logits.size), n_bad, None, None)
    return CheckResult(arch, tuple(int(t) for t in tokens), int(logits.size), 0,
                       entropy_nats(logits), int(np.argmax(logits)))


def check(model: "ModelFile", tokens: Sequence[int]) -> CheckResult:
    """Run ``model``'s reference forward pass on ``tokens`` and judge the last logits."""
    module = module_for(model)
    with np.errstate(all="ignore"):           # NaN weights are what is being looked for
        logits, _ = module.forward(module.load(model), list(tokens))
    return check_logits(logits, arch=architecture(model), tokens=tokens)


@dataclass(frozen=True)
class PositionDiff:
    """The two next-token distributions after ``tokens[:index+1]``."""
    index: int
    token: int                       # the id fed at this position
    kl: float | None                 # KL(P_A || P_B) in nats; None if a logit is NaN/Inf
    top1_a: int
    top1_b: int
    max_abs_logit: float | None      # max |logit_B - logit_A|; None if a logit is NaN/Inf

    @property
    def agree(self) -> bool:
        return self.kl is not None and self.top1_a == self.top1_b


@dataclass(frozen=True)
class LogitsDiff:
    """B's next-token distributions against A's (the reference) over one token sequence."""
    architecture_a: str
    architecture_b: str
    n_vocab: int
    tokens: tuple[int, ...]
    positions: tuple[PositionDiff, ...]
    notes: tuple[str, ...] = ()
    # token id -> its text (llama.cpp's token_to_piece, from A's vocabulary) for the ids
    # shown; empty when A has no vocabulary ggscope reads.  Filled by ``with_pieces``.
    pieces: Mapping[int, bytes] = field(default_factory=dict)

    def with_pieces(self, piece_bytes: Callable[[int], bytes]) -> "LogitsDiff":
        """This comparison with the text of every token it shows, from ``piece_bytes``."""
        ids = set(self.tokens) | {p.top1_a for p in self.positions} | {p.top1_b for p in self.positions}
        return replace(self, pieces={i: piece_bytes(i) for i in sorted(ids)})

    @property
    def n_nonfinite(self) -> int:
        """Positions where either file's logits hold NaN/Inf."""
        return sum(p.kl is None for p in self.positions)

    @property
    def kl_mean(self) -> float | None:
        kls = [p.kl for p in self.positions if p.kl is not None]
        return float(np.mean(kls)) if kls else None

    @property
    def kl_max(self) -> float | None:
        kls = [p.kl for p in self.positions if p.kl is not None]
        return max(kls) if kls else None

    @property
    def top1_agreement(self) -> float:
        """Fraction of positions whose argmax ids are equal (and finite)."""
        return sum(p.agree for p in self.positions) / len(self.positions) if self.positions else 1.0

    @property
    def max_abs_logit(self) -> float | None:
        d = [p.max_abs_logit for p in self.positions if p.max_abs_logit is not None]
        return max(d) if d else None

    @property
    def same(self) -> bool:
        """Every logit equal at every position."""
        return self.n_nonfinite == 0 and all(p.max_abs_logit == 0 for p in self.positions)


def _top1(logits: np.ndarray) -> int:
    return int(np.argmax(np.nan_to_num(logits, nan=-np.inf)))


def _position(index: int, token: int, la: np.ndarray, lb: np.ndarray) -> PositionDiff:
    if not (np.isfinite(la).all() and np.isfinite(lb).all()):
        return PositionDiff(index, token, None, _top1(la), _top1(lb), None)
    lpa, lpb = log_softmax(la), log_softmax(lb)                 # [V] float64
    kl = float(max(0.0, (np.exp(lpa) * (lpa - lpb)).sum()))    # rounding can give -1e-17
    d = float(np.abs(lb.astype(np.float64) - la.astype(np.float64)).max())
    return PositionDiff(index, token, kl, int(np.argmax(la)), int(np.argmax(lb)), d)


def compare_logits(a: "ModelFile", b: "ModelFile", tokens: Sequence[int],
                   progress: Callable[[int, int], None] | None = None,
                   notes: Sequence[str] = (), exact: bool = False) -> LogitsDiff:
    """Feed ``tokens`` to both files and compare their next-token distributions per position."""
    mod_a, mod_b = module_for(a), module_for(b)        # both unsupported-checks before loading
    ids = [int(t) for t in tokens]
    if not ids:
        raise TokenError("no tokens to compare: the prompt is empty")
    from ggscope.forward import load_weights  # lazy: loaded only on the path that needs it
    mod_a, wa = load_weights(a, exact)
    mod_b, wb = load_weights(b, exact)
    state_a = state_b = None
    positions = []
    n_vocab = 0
    with np.errstate(all="ignore"):
        for i, tok in enumerate(ids):
            if progress is not None:
                progress(i, len(ids))
            la, state_a = mod_a.forward(wa, [tok], state_a)
            lb, state_b = mod_b.forward(wb, [tok], state_b)
            if la.size != lb.size:
                raise LogitsError(f"{a.path} has {la.size} logits and {b.path} has {lb.size}: "
                                  "the vocabularies differ, so the distributions cannot be compared")
            n_vocab = int(la.size)
            positions.append(_position(i, tok, la, lb))
    if progress is not None:
        progress(len(ids), len(ids))
    return LogitsDiff(architecture(a), architecture(b), n_vocab, tuple(ids), tuple(positions),
                      tuple(notes))


def tokens_for(a: "ModelFile", b: "ModelFile", text: str) -> tuple[list[int], tuple[str, ...]]:
    """``text`` as A's token ids (BOS as A's tokenizer adds it), plus notes about B's ids."""
    from ggscope.model.tokenizer import load as load_tokenizer  # lazy: 3 more modules only when used
    ids = load_tokenizer(a).encode(text)
    try:
        ids_b = load_tokenizer(b).encode(text)
    except GGScopeError:
        return ids, ("tokenized with A's tokenizer; B's tokenizer could not be loaded",)
    if ids_b != ids:
        return ids, (f"B's own tokenizer gives other ids ({len(ids_b)} tokens: "
                     f"{' '.join(map(str, ids_b[:12]))}{' ...' if len(ids_b) > 12 else ''}); "
                     "A's ids were fed to both",)
    return ids, ()
