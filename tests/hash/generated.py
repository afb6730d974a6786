"""The generated GGUF files the llama-gguf-hash records cover, written deterministically.

Why: the records in ``fixtures/gguf_hash`` (made by ``tools/record_gguf_hash.py`` from
the real tool) must be reproducible in CI without the tool, so the files they describe
are either in the repository, in ``../shared/fixtures``, or written here from fixed
seeds by gguf-py's own writer (``tests/gguf_writers.py``): every ggml tensor type, both
byte orders, a custom alignment, GGUF v1/v2, a tensor larger than one read window,
hundreds of tiny tensors (reads that coalesce), a file without tensors, alignment 1,
tensor names at the 63-byte limit / non-ASCII / with spaces, a tensor of no elements,
and two three-shard split sets written by gguf-py's splitting writer (one whose first
shard holds only metadata, as ``llama-gguf-split --no-tensor-first-split`` writes).

Contract: ``write_all(directory)`` writes every file and returns ``{name: path}``;
``SPLIT`` and ``SPLIT_SMALL_FIRST`` are the split sets' shard names.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import gguf_writers as gw  # noqa: E402

__all__ = ["write_all", "SPLIT", "SPLIT_SMALL_FIRST", "NAMES"]

SPLIT = tuple(f"split-{i:05d}-of-00003.gguf" for i in (1, 2, 3))
SPLIT_SMALL_FIRST = tuple(f"smallfirst-{i:05d}-of-00003.gguf" for i in (1, 2, 3))


def _big_tensor(path: Path) -> Path:
    """One F32 tensor of 12 MiB (more than one 8 MiB read window) between two small ones."""
    rng = np.random.default_rng(30)
    tensors = [gw.quantized_tensor("a.weight", gw.T.F16, (64, 3), rng),
               gw.quantized_tensor("big.weight", gw.T.F32, (1024, 3 * 1024), rng),
               gw.quantized_tensor("z.weight", gw.T.Q8_0, (64, 2), rng)]
    return gw.write_gguf_py(path, kvs=[gw.KV("general.name", gw.V.STRING, "Big")], tensors=tensors)


def _tiny_tensors(path: Path) -> Path:
    """300 tensors of 4 to 60 bytes: many of them share one read."""
    rng = np.random.default_rng(31)
    tensors = [gw.quantized_tensor(f"t.{i}", gw.T.F32, (1 + i % 15,), rng) for i in range(300)]
    return gw.write_gguf_py(path, kvs=[gw.KV("general.name", gw.V.STRING, "Tiny")], tensors=tensors)


def _no_tensors(path: Path) -> Path:
    """Metadata only: the tool prints just the whole-data lines (hashes of no bytes)."""
    return gw.write_gguf_py(path, kvs=[gw.KV("general.name", gw.V.STRING, "Empty")])


def _align_1(path: Path) -> Path:
    """``general.alignment`` = 1: no padding anywhere, tensors at odd offsets."""
    rng = np.random.default_rng(33)
    tensors = [gw.quantized_tensor("odd.i8", gw.T.I8, (3,), rng),
               gw.quantized_tensor("odd.q4_0", gw.T.Q4_0, (32, 3), rng),
               gw.quantized_tensor("odd.f16", gw.T.F16, (7,), rng)]
    return gw.write_gguf_py(path, kvs=[gw.KV("general.name", gw.V.STRING, "Align 1")], tensors=tensors,
                            alignment=1)


def _names(path: Path) -> Path:
    """Tensor names at the 63-byte limit (GGML_MAX_NAME - 1), non-ASCII, with spaces; one of no elements."""
    rng = np.random.default_rng(34)
    tensors = [gw.quantized_tensor("n" * 63, gw.T.F32, (4,), rng),
               gw.quantized_tensor("blk.\u00fcn\u00ef.\U0001f600", gw.T.F16, (8,), rng),
               gw.quantized_tensor("a b  c", gw.T.F32, (3,), rng),
               gw.quantized_tensor("empty", gw.T.F32, (0,), rng),
               gw.quantized_tensor("z" * 62, gw.T.Q8_0, (32,), rng)]
    return gw.write_gguf_py(path, kvs=[gw.KV("general.name", gw.V.STRING, "Names")], tensors=tensors)


def _split(directory: Path, *, small_first: bool = False) -> list[Path]:
    """Three shards written by gguf-py's GGUFWriter: 4 tensors each, or (``small_first``)
    a metadata-only first shard and 6 tensors in each of the others."""
    import gguf
    rng = np.random.default_rng(32)
    stem = "smallfirst" if small_first else "split"
    w = gguf.GGUFWriter(directory / f"{stem}.gguf", "llama", split_max_tensors=6 if small_first else 4,
                        small_first_shard=small_first)
    w.add_name("Split")
    for i in range(12):
        spec = gw.quantized_tensor(f"blk.{i}.w", gw.T.Q8_0 if i % 2 else gw.T.F16, (64, 2), rng)
        w.add_tensor(spec.name, spec.data, raw_dtype=spec.type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return [directory / n for n in (SPLIT_SMALL_FIRST if small_first else SPLIT)]


NAMES = (*(f"{r}.gguf" for r in gw.RECIPES), "big_tensor.gguf", "tiny_tensors.gguf", *SPLIT,
         "no_tensors.gguf", "align_1.gguf", "names.gguf", *SPLIT_SMALL_FIRST)


def write_all(directory: str | Path) -> dict[str, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {f"{name}.gguf": recipe(d / f"{name}.gguf") for name, recipe in gw.RECIPES.items()}
    out["big_tensor.gguf"] = _big_tensor(d / "big_tensor.gguf")
    out["tiny_tensors.gguf"] = _tiny_tensors(d / "tiny_tensors.gguf")
    out.update({p.name: p for p in _split(d)})
    out["no_tensors.gguf"] = _no_tensors(d / "no_tensors.gguf")
    out["align_1.gguf"] = _align_1(d / "align_1.gguf")
    out["names.gguf"] = _names(d / "names.gguf")
    out.update({p.name: p for p in _split(d, small_first=True)})
    return {k: Path(v) for k, v in out.items()}
