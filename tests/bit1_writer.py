"""Write valid BIT1 files of any shape from a seeded RNG.

Why: no real BIT1 file is public.  Tests need files of many shapes (row widths that are
and are not multiples of 64, zero layers, odd head counts) and ggscope bundles a small
example; both come from here.  The writer follows the exporter's description (restated
in ``docs/legacy-formats.md`` §8), not ggscope's spec, so it is an independent check of
``formats/bit1.ksy``.

Layout written (little-endian, contiguous, no padding); ``W(d) = ceil(d / 64)``:

====  ==========================================  ==========================  ===========
 #    section (node path)                          element                     count
====  ==========================================  ==========================  ===========
 1    ``header``                                   8 x u32 + i64 (40 bytes)    1
 2    ``embedding/words``                          u64                         V * W(dm)
 3    per layer ``l`` (``layers[l]/...``):
 3a     ``alibi_slopes``                           i32                         nh
 3b     ``q_proj``, ``k_proj``, ``v_proj``,        BitLinear[dm -> dm]:
        ``o_proj``                                 ``weight_bits/words`` u64   dm * W(dm)
                                                   ``int_threshold`` i32       dm
 3c     ``gate``, ``up``                           BitLinear[dm -> dff]
 3d     ``down``                                   BitLinear[dff -> dm]
 4    ``out_codebook/words``                       u64                         V * W(dm)
 5    ``int_out_bias``                             i64                         V
====  ==========================================  ==========================  ===========

Each bit row holds ``d`` signs packed least-significant bit first (bit 1 = +1, bit 0 =
-1); the unused high bits of a row's last word are zero unless ``dirty_tail_bits`` asks
for a damaged file.

Contract: ``write_bit1(path, ...)`` returns the number of bytes written, which always
equals ``bit1_size(...)`` of the same shape; ``bit1_sections(...)`` lists every section
with its node path, absolute start and size, in file order.  Same arguments and seed,
same bytes.
"""
from __future__ import annotations

import argparse
import math
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["MAGIC", "VERSION", "LOGIT_SCALE_M", "Bit1Shape", "Section", "bit1_sections",
           "bit1_size", "write_bit1", "bit1_bytes", "main"]

MAGIC = b"BIT1"                 # 0x31544942 as a little-endian u32
VERSION = 1
LOGIT_SCALE_M = 1 << 16         # the exporter's integer logit scale multiplier
HEADER = struct.Struct("<4s7Iq")  # magic, version, 6 dimension words, logit_scale_M


@dataclass(frozen=True)
class Bit1Shape:
    """The header's dimension words, named as the exporter names them."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_seq_len: int = 256

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_seq_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v < 2**32:
                raise ValueError(f"{name} must be an integer in [0, 2**32), got {v!r}")


@dataclass(frozen=True)
class Section:
    """One contiguous run of the file: its node path, absolute start, size in bytes."""

    path: str
    start: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.start + self.nbytes


def _words(d: int) -> int:
    """u64 words per row of ``d`` bits."""
    return (d + 63) // 64


def _layout(shape: Bit1Shape) -> Iterator[tuple[str, int]]:
    """(path, nbytes) of every section in file order, from the description alone."""
    V, dm, nh, dff = shape.vocab_size, shape.d_model, shape.n_heads, shape.d_ff
    yield "header", HEADER.size
    yield "embedding/words", 8 * V * _words(dm)
    linears = (("q_proj", dm, dm), ("k_proj", dm, dm), ("v_proj", dm, dm), ("o_proj", dm, dm),
               ("gate", dm, dff), ("up", dm, dff), ("down", dff, dm))
    for layer in range(shape.n_layers):
        yield f"layers[{layer}]/alibi_slopes", 4 * nh
        for name, d_in, d_out in linears:
            yield f"layers[{layer}]/{name}/weight_bits/words", 8 * d_out * _words(d_in)
            yield f"layers[{layer}]/{name}/int_threshold", 4 * d_out
    yield "out_codebook/words", 8 * V * _words(dm)
    yield "int_out_bias", 8 * V


def bit1_sections(**dims: int) -> list[Section]:
    """Every section of a file with these header dimensions, with absolute offsets."""
    shape = Bit1Shape(**dims)
    out, pos = [], 0
    for path, nbytes in _layout(shape):
        out.append(Section(path, pos, nbytes))
        pos += nbytes
    return out


def bit1_size(**dims: int) -> int:
    """The exact size in bytes of a BIT1 file with these header dimensions."""
    return sum(nbytes for _, nbytes in _layout(Bit1Shape(**dims)))


def _bit_rows(rng: np.random.Generator, rows: int, d: int, dirty_tail: bool) -> bytes:
    """``rows`` random sign rows of ``d`` bits, packed LSB first into u64 words."""
    w = _words(d)
    if rows == 0 or w == 0:
        return b""
    signs = rng.integers(0, 2, size=(rows, d), dtype=np.uint8)          # (rows, d) 1 = +1
    packed = np.packbits(signs, axis=1, bitorder="little")              # (rows, ceil(d/8))
    out = np.zeros((rows, 8 * w), dtype=np.uint8)                       # (rows, 8 W) zero tail
    out[:, :packed.shape[1]] = packed
    if dirty_tail and d % 64:
        out[:, -1] |= 0x80                      # bit 63 of each row's last word: unused
    return out.tobytes()


def _chunks(shape: Bit1Shape, seed: int, version: int, logit_scale_M: int,
            dirty_tail_bits: bool) -> Iterator[bytes]:
    """The file's bytes, section by section, in the order of ``_layout``."""
    rng = np.random.default_rng(seed)
    V, dm, nh, dff = shape.vocab_size, shape.d_model, shape.n_heads, shape.d_ff
    yield HEADER.pack(MAGIC, version, V, dm, shape.n_layers, nh, dff, shape.max_seq_len,
                      logit_scale_M)
    yield _bit_rows(rng, V, dm, dirty_tail_bits)
    linears = ((dm, dm),) * 4 + ((dm, dff), (dm, dff), (dff, dm))
    for _ in range(shape.n_layers):
        slopes = rng.integers(1, 1 << 16, size=nh, dtype=np.int64)
        yield slopes.astype("<i4").tobytes()
        for d_in, d_out in linears:
            yield _bit_rows(rng, d_out, d_in, dirty_tail_bits)
            thr = np.ceil(rng.normal(0.0, 0.5, size=d_out) * math.sqrt(max(d_in, 1)))
            yield thr.astype("<i4").tobytes()
    yield _bit_rows(rng, V, dm, dirty_tail_bits)
    bias = np.round(rng.normal(0.0, 1.0, size=V) * logit_scale_M / 8.0)
    yield bias.astype("<i8").tobytes()


def bit1_bytes(*, vocab_size: int, d_model: int, n_layers: int, n_heads: int, d_ff: int,
               max_seq_len: int = 256, seed: int = 0, version: int = VERSION,
               logit_scale_M: int = LOGIT_SCALE_M, dirty_tail_bits: bool = False) -> bytes:
    """The bytes ``write_bit1`` would write, in memory (for small shapes)."""
    shape = Bit1Shape(vocab_size, d_model, n_layers, n_heads, d_ff, max_seq_len)
    return b"".join(_chunks(shape, seed, version, logit_scale_M, dirty_tail_bits))


def write_bit1(path: str | os.PathLike[str], *, vocab_size: int, d_model: int, n_layers: int,
               n_heads: int, d_ff: int, max_seq_len: int = 256, seed: int = 0,
               version: int = VERSION, logit_scale_M: int = LOGIT_SCALE_M,
               dirty_tail_bits: bool = False) -> int:
    """Write a BIT1 file; return its size, which equals ``bit1_size`` of the shape.

    ``version``, ``logit_scale_M`` and ``dirty_tail_bits`` exist to write deliberately
    invalid files for validator tests; their defaults write a valid file.
    """
    shape = Bit1Shape(vocab_size, d_model, n_layers, n_heads, d_ff, max_seq_len)
    written = 0
    with open(path, "wb") as fh:
        for chunk in _chunks(shape, seed, version, logit_scale_M, dirty_tail_bits):
            fh.write(chunk)
            written += len(chunk)
    return written


def main(argv: list[str] | None = None) -> int:
    """``python -m bit1_writer OUT``: write a seeded BIT1 file."""
    ap = argparse.ArgumentParser(
        prog="python -m bit1_writer",
        description="Write a valid BIT1 packed 1-bit model file with random weights.",
        epilog="example: python -m bit1_writer tiny.bit1 --vocab-size 256 "
               "--d-model 64 --n-layers 2 --n-heads 4 --d-ff 256 --seed 0")
    ap.add_argument("out", help="path of the file to write")
    ap.add_argument("--vocab-size", type=int, default=256)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--n-layers", type=int, default=2)
    ap.add_argument("--n-heads", type=int, default=4)
    ap.add_argument("--d-ff", type=int, default=256)
    ap.add_argument("--max-seq-len", type=int, default=256)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    try:
        n = write_bit1(args.out, vocab_size=args.vocab_size, d_model=args.d_model,
                       n_layers=args.n_layers, n_heads=args.n_heads, d_ff=args.d_ff,
                       max_seq_len=args.max_seq_len, seed=args.seed)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {n} bytes to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
