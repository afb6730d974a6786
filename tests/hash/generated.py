"""The generated GGUF files the llama-gguf-hash records cover, written deterministically.

Why: the records in ``fixtures/gguf_hash`` (made by ``tools/record_gguf_hash.py`` from
the real tool) must be reproducible in CI without the tool, so the files they describe
are either in the repository, in ``../shared/fixtures``, or written here from fixed
seeds by gguf-py's own writer (``tests/gguf_writers.py``): every ggml tensor type, both
byte orders, a custom alignment, GGUF v1/v2, a tensor larger than one read window,
hundreds of tiny tensors (reads that coalesce), and a three-shard split set written by
gguf-py's splitting writer.

Contract: ``write_all(directory)`` writes every file and returns ``{name: path}``;
``SPLIT`` is the split set's shard names.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import gguf_writers as gw  # noqa: E402

__all__ = ["write_all", "SPLIT", "NAMES"]

SPLIT = tuple(f"split-{i:05d}-of-00003.gguf" for i in (1, 2, 3))


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


def _split(directory: Path) -> list[Path]:
    """Three shards of 4 tensors each, written by gguf-py's GGUFWriter(split_max_tensors=4)."""
    import gguf
    rng = np.random.default_rng(32)
    w = gguf.GGUFWriter(directory / "split.gguf", "llama", split_max_tensors=4)
    w.add_name("Split")
    for i in range(12):
        spec = gw.quantized_tensor(f"blk.{i}.w", gw.T.Q8_0 if i % 2 else gw.T.F16, (64, 2), rng)
        w.add_tensor(spec.name, spec.data, raw_dtype=spec.type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return [directory / n for n in SPLIT]


NAMES = (*(f"{r}.gguf" for r in gw.RECIPES), "big_tensor.gguf", "tiny_tensors.gguf", *SPLIT)


def write_all(directory: str | Path) -> dict[str, Path]:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out = {f"{name}.gguf": recipe(d / f"{name}.gguf") for name, recipe in gw.RECIPES.items()}
    out["big_tensor.gguf"] = _big_tensor(d / "big_tensor.gguf")
    out["tiny_tensors.gguf"] = _tiny_tensors(d / "tiny_tensors.gguf")
    out.update({p.name: p for p in _split(d)})
    return {k: Path(v) for k, v in out.items()}
