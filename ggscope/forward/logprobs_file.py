"""llama-perplexity's ``--kl-divergence-base`` file: a base model's log-probabilities, kept.

Why: the KL-divergence report compares a quantization with its base token by token.
llama-perplexity evaluates the base once and stores every scored position's
log-probabilities in a compact file; every later quantization is compared against
that file, never against the base model again.  ggscope reads and writes the same
file, so a base evaluated by llama.cpp can be compared by ggscope and the other way
round.

The format (llama.cpp as vendored in llama-cpp-python 0.3.36,
tools/perplexity/perplexity.cpp: ``perplexity`` writes it, ``kl_divergence`` reads it),
little-endian::

    "_logits_"                      8 bytes
    n_ctx    uint32                 the chunk length
    n_vocab  int32
    n_chunk  int32
    tokens   int32 [n_chunk * n_ctx]   the text's ids, chunk after chunk (no BOS swap)
    then per chunk, per scored position (n_ctx - 1 - n_ctx/2 of them), one row of
    nv = 2 * ((n_vocab + 1) / 2) + 4 uint16:
        float32 scale, float32 min_log_prob   (the first 4 uint16)
        uint16 q[n_vocab]                     log P(v) = scale * q[v] + min_log_prob
        padding to an even count

``encode_rows`` is llama.cpp's ``log_softmax(n_vocab, logits, log_prob, tok)`` (the
writer's rounding: log-probabilities more than 16 below the top one are stored as the
floor, q = nearest_int((logit - min_logit) / scale)); ``decode_rows`` inverts it.

Contract: ``read_header(path) -> Header`` checks the magic, the counts and that the
file holds every byte the header promises (a claim the file cannot back is a
``LogProbsFileError`` naming what is short, before anything is sized by it);
``Header.chunk(i)`` maps chunk ``i``'s rows read-only.  ``Writer`` writes the header
and appends chunks.  Files are opened read-only for reading.
"""
from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass

import numpy as np

from ggscope.core.errors import GGScopeError

__all__ = ["MAGIC", "LogProbsFileError", "Header", "read_header", "Writer", "row_width",
           "scored_positions", "encode_rows", "decode_rows", "expf"]

MAGIC = b"_logits_"
_HEAD = struct.Struct("<8sIii")


class LogProbsFileError(GGScopeError):
    """A --kl-divergence-base file that is not one, or holds less than it claims."""


def row_width(n_vocab: int) -> int:
    """uint16 per stored row: llama.cpp's ``nv = 2*((n_vocab + 1)/2) + 4``."""
    return 2 * ((n_vocab + 1) // 2) + 4


def scored_positions(n_ctx: int) -> int:
    """Positions scored per chunk: the second half, minus the last (no next token)."""
    return n_ctx - 1 - n_ctx // 2


@dataclass(frozen=True)
class Header:
    path: str
    n_ctx: int
    n_vocab: int
    n_chunk: int
    tokens: np.ndarray               # int32 [n_chunk, n_ctx]
    data_offset: int

    def chunk(self, i: int) -> np.ndarray:
        """Chunk ``i``'s stored rows, uint16 [scored_positions, nv], mapped read-only."""
        rows, nv = scored_positions(self.n_ctx), row_width(self.n_vocab)
        offset = self.data_offset + i * rows * nv * 2
        return np.memmap(self.path, dtype="<u2", mode="r", offset=offset, shape=(rows, nv))


def read_header(path: str) -> Header:
    """The header and tokens of a --kl-divergence-base file, every count checked."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size or head[:8] != MAGIC:
                raise LogProbsFileError(f"{path}: not a llama-perplexity --kl-divergence-base "
                                        f"file (it does not start with {MAGIC.decode()!r})")
            _, n_ctx, n_vocab, n_chunk = _HEAD.unpack(head)
            if n_ctx < 4 or n_vocab < 1 or n_chunk < 1:
                raise LogProbsFileError(f"{path}: the header says n_ctx {n_ctx}, n_vocab "
                                        f"{n_vocab}, n_chunk {n_chunk}; each must be positive "
                                        "(n_ctx at least 4)")
            n_tok = n_ctx * n_chunk
            need = (_HEAD.size + 4 * n_tok
                    + 2 * n_chunk * scored_positions(n_ctx) * row_width(n_vocab))
            if size < need:
                raise LogProbsFileError(
                    f"{path}: the header claims {n_chunk} chunks of {n_ctx} tokens over "
                    f"{n_vocab} tokens of vocabulary ({need} bytes), but the file has {size}")
            tokens = np.frombuffer(f.read(4 * n_tok), dtype="<i4").reshape(n_chunk, n_ctx)
    except OSError as exc:
        raise LogProbsFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    bad = (tokens < 0) | (tokens >= n_vocab)
    if bad.any():
        raise LogProbsFileError(f"{path}: token id {int(tokens[bad][0])} is outside the "
                                f"vocabulary of {n_vocab}")
    return Header(path, int(n_ctx), int(n_vocab), int(n_chunk), tokens.astype(np.int64),
                  _HEAD.size + 4 * n_tok)


def _nearest_int(x: np.ndarray) -> np.ndarray:
    """llama.cpp's nearest_int (x + 1.5*2^23, low mantissa bits): round half to even."""
    return np.rint(x).astype(np.int64)


# glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, e_exp2f_data.c), which llama-perplexity
# calls for every probability it sums: numpy's float32 exp differs from it in the last bit
# for about 40 % of arguments (enough to move the 7th digit of a PPL); this is its
# algorithm in float64 - 2^(k/32) from a table times a cubic in the remainder, rounded
# once to float32 - equal to it on every argument tried (400 000, -80 to 10).
_EXP_N = 32
_EXP_T = np.array([struct.unpack("<Q", struct.pack("<d", 2.0 ** (i / _EXP_N)))[0] - (i << 47)
                   for i in range(_EXP_N)], dtype=np.uint64)
_EXP_C = (float.fromhex("0x1.c6af84b912394p-5") / _EXP_N ** 3, float.fromhex("0x1.ebfce50fac4f3p-3") / _EXP_N ** 2,
          float.fromhex("0x1.62e42ff0c52d6p-1") / _EXP_N)
_EXP_INV_LN2 = float.fromhex("0x1.71547652b82fep+0") * _EXP_N
_EXP_SHIFT = float.fromhex("0x1.8p+52")
_EXP_HI, _EXP_LO = float.fromhex("0x1.62e42ep6"), float.fromhex("-0x1.9fe368p6")


def expf(x) -> np.ndarray:
    """glibc's ``expf`` of float32 ``x`` (array or scalar), bit for bit: float32."""
    xd = np.asarray(x, dtype=np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        z = _EXP_INV_LN2 * np.where(np.isfinite(xd), np.clip(xd, -200.0, 200.0), 0.0)
        kd = z + _EXP_SHIFT
        ki = kd.view(np.uint64)
        r = z - (kd - _EXP_SHIFT)
        s = (_EXP_T[ki % np.uint64(_EXP_N)] + (ki << np.uint64(47))).view(np.float64)
        y = ((_EXP_C[0] * r + _EXP_C[1]) * (r * r) + (_EXP_C[2] * r + 1.0)) * s
        y = np.where(xd > _EXP_HI, np.inf, np.where(xd < _EXP_LO, 0.0, y))
        y = np.where(np.isnan(xd), xd, y)
    return y.astype(np.float32)


def encode_rows(logits: np.ndarray, next_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows [T, nv] uint16 for logits [T, V] (float32), and each row's NLL of its next
    token (float64 of llama.cpp's float ``max_logit + log_sum_exp - logits[tok]``)."""
    x = np.asarray(logits, dtype=np.float32)
    T, V = x.shape
    out = np.zeros((T, row_width(V)), dtype=np.uint16)
    nll = np.empty(T, dtype=np.float64)
    f32 = np.float32
    for t in range(T):                       # one row at a time: bounded temporaries
        row = x[t]
        mx, mn = row.max(), row.min()
        mn = max(mn, f32(mx - f32(16)))
        lse = f32(math.log(float(expf(row - mx).astype(np.float64).sum())))
        min_lp = f32(f32(mn - mx) - lse)
        scale = f32(f32(mx - mn) / f32(65535))
        out[t, :4] = np.array([scale, min_lp], dtype="<f4").view("<u2")
        if scale:
            q = np.where(row > mn, _nearest_int(f32(1) / scale * (row - mn)), 0)
            out[t, 4:4 + V] = (q & 0xFFFF).astype(np.uint16)
        nll[t] = float(f32(f32(mx + lse) - row[int(next_tokens[t])]))
    return out, nll


def decode_rows(rows: np.ndarray, n_vocab: int) -> np.ndarray:
    """log P [T, n_vocab] float32 from stored rows: scale * q + min_log_prob."""
    rows = np.asarray(rows, dtype="<u2")
    head = np.ascontiguousarray(rows[:, :4]).view("<f4")       # [T, 2]
    q = rows[:, 4:4 + n_vocab].astype(np.float32)
    return (head[:, :1] * q + head[:, 1:2]).astype(np.float32)


class Writer:
    """Writes a --kl-divergence-base file: the header now, then one chunk per ``add``."""

    def __init__(self, path: str, n_ctx: int, n_vocab: int, tokens: np.ndarray) -> None:
        n_chunk = tokens.size // n_ctx
        try:
            self._f = open(path, "wb")
            self._f.write(_HEAD.pack(MAGIC, n_ctx, n_vocab, n_chunk))
            self._f.write(np.ascontiguousarray(tokens[:n_chunk * n_ctx], dtype="<i4").tobytes())
        except OSError as exc:
            raise LogProbsFileError(f"{path}: cannot write: {exc.strerror or exc}") from None
        self.path = path

    def add(self, rows: np.ndarray) -> None:
        try:
            self._f.write(np.ascontiguousarray(rows, dtype="<u2").tobytes())
        except OSError as exc:
            raise LogProbsFileError(f"{self.path}: cannot write: {exc.strerror or exc}") from None

    def close(self) -> None:
        self._f.close()
