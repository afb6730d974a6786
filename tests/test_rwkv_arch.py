"""ggscope.facts.rwkv_arch against the tensor sets the documents give for each architecture.

Oracles: the required parameter names per architecture (legacy-formats.md §6.6, via
``tests/formats/rwkv_manifest.py``) with the shapes §6.6 states, and the
architecture MANIFEST.md assigns to each real rwkv.cpp file by its name (read with the
official Kaitai compiler's parser when it is available, else skipped).
"""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "formats"))
from rwkv_manifest import arch_of, required_names  # noqa: E402

from ggscope.facts.rwkv_arch import arch_version, head_geometry  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RWKV_DIR = REPO / ".." / "shared" / "fixtures" / "rwkv"

N_EMBED, HEAD_SIZE, N_HEAD = 64, 8, 8


def _shape(name: str, arch: str) -> tuple[int, ...]:
    """The ne-order shape §6.6 gives for ``name`` in a model of ``arch``."""
    if name.endswith(("att.time_decay", "att.time_first", "att.time_faaaa")):
        if arch == "4":
            return (N_EMBED,)
        if arch == "5.1":
            return (1, 1, N_HEAD)
        return (1, HEAD_SIZE, N_HEAD)
    if name.endswith("att.r_k"):
        return (HEAD_SIZE, N_HEAD)
    if name.endswith(".weight") and not name.split(".")[-2].startswith("ln"):
        return (N_EMBED, N_EMBED)
    return (N_EMBED,)


def _params(arch: str, n_layer: int = 2) -> list[tuple[str, tuple[int, ...]]]:
    return [(n, _shape(n, arch)) for n in sorted(required_names(arch, n_layer))]


@pytest.mark.parametrize("arch", ["4", "5.1", "5.2", "6", "7"])
def test_each_documented_tensor_set_gets_its_version(arch: str) -> None:
    assert arch_version(_params(arch)) == arch


@pytest.mark.parametrize("arch", ["4", "5.1", "5.2", "6", "7"])
def test_order_of_parameters_does_not_matter(arch: str) -> None:
    assert arch_version(list(reversed(_params(arch)))) == arch


def test_empty_and_unrelated_sets_are_v4_as_in_rwkv_cpp() -> None:
    assert arch_version([]) == "4"
    assert arch_version([("foo", (1,))]) == "4"


def test_markers_outside_block_0_do_not_count() -> None:
    params = _params("4") + [("blocks.1.att.ln_x.weight", (N_EMBED,))]
    assert arch_version(params) == "4"


def test_gate_without_ln_x_is_not_v5() -> None:
    assert arch_version(_params("4") + [("blocks.0.att.gate.weight", (64, 64))]) == "4"


@pytest.mark.parametrize("arch,expected", [
    ("4", None), ("5.1", (N_HEAD, HEAD_SIZE)), ("5.2", (N_HEAD, HEAD_SIZE)),
    ("6", (N_HEAD, HEAD_SIZE)), ("7", (N_HEAD, HEAD_SIZE))])
def test_head_geometry_follows_rwkv_cpp(arch: str, expected) -> None:
    assert head_geometry(_params(arch), arch) == expected


def test_head_geometry_of_inconsistent_shapes_is_none() -> None:
    params = dict(_params("5.2"))
    params["blocks.0.att.time_decay"] = (1, HEAD_SIZE, 7)        # 64 % 7 != 0
    assert head_geometry(params.items(), "5.2") is None
    params["blocks.0.att.time_decay"] = (HEAD_SIZE,)             # too few dims
    assert head_geometry(params.items(), "5.2") is None
    del params["blocks.0.att.time_decay"]
    assert head_geometry(params.items(), "5.2") is None


def test_real_files_get_the_architecture_the_manifest_names() -> None:
    if not RWKV_DIR.is_dir():
        pytest.skip(f"shared rwkv fixtures not found at {RWKV_DIR.resolve()}")
    from kaitai_oracle import compile_ksy
    from kaitaistruct import KaitaiStream
    module = compile_ksy(REPO / "formats" / "rwkv_cpp.ksy")
    for path in sorted(RWKV_DIR.glob("tiny-rwkv-*.bin")):
        root = module.RwkvCpp(KaitaiStream(io.BytesIO(path.read_bytes())))
        root._read()
        params = [(p.key, tuple(p.shape)) for p in root.parameters]
        arch = arch_version(params)
        assert arch == arch_of(path.name), path.name
        heads = head_geometry(params, arch)
        if arch != "4":
            assert heads is not None and heads[0] * heads[1] == root.n_embed, path.name
