"""Alignment and padding rules (GG3xx) on gguf-py files and byte-patched copies of them."""
from __future__ import annotations

import glob
import struct

import numpy as np
import pytest

import ggscope
from gguf_writers import KV, TensorSpec, T, V, write_gguf_py
from _helpers import findings


def _gg3(path):
    return [f for f in findings(path, select=["GG3"])]


@pytest.fixture()
def good(tmp_path):
    rng = np.random.default_rng(0)
    return write_gguf_py(tmp_path / "good.gguf", kvs=[KV("general.architecture", V.STRING, "llama")],
                         tensors=[TensorSpec("token_embd.weight", T.F32, rng.standard_normal((3, 5)).astype(np.float32)),
                                  TensorSpec("output_norm.weight", T.F32, rng.standard_normal((7,)).astype(np.float32))])


def _layout(path):
    mf = ggscope.open(str(path))
    tis = mf.root.child("tensor_infos").children
    return mf, tis[-1]["offset"].end, mf.data_offset, [(t["offset"], t) for t in tis]


def test_gguf_py_file_is_clean(good):
    assert _gg3(good) == []


def test_misaligned_offset(good, tmp_path):
    mf, _, _, tis = _layout(good)
    node = tis[1][0]
    data = bytearray(good.read_bytes())
    struct.pack_into("<Q", data, node.start, node.value + 4)
    p = tmp_path / "m.gguf"
    p.write_bytes(bytes(data))
    found = [f for f in _gg3(p) if f.code == "GG301"]
    assert len(found) == 1 and found[0].start == node.start
    assert "GG114" in {f.code for f in findings(p, select=["GG1"])}    # ggml refuses it too


def test_nonzero_header_padding(good, tmp_path):
    mf, header_end, data_start, _ = _layout(good)
    assert data_start > header_end, "gguf-py padded the header"
    data = bytearray(good.read_bytes())
    data[data_start - 1] = 0xAB
    p = tmp_path / "h.gguf"
    p.write_bytes(bytes(data))
    found = [f for f in _gg3(p) if f.code == "GG302"]
    assert len(found) == 1 and f"at {data_start - 1}" in found[0].message


def test_nonzero_tensor_padding(good, tmp_path):
    mf, _, data_start, _ = _layout(good)
    t0 = mf.tensors[0]
    assert t0.nbytes == 60                  # 15 F32, padded to 64 by gguf-py
    data = bytearray(good.read_bytes())
    data[data_start + 62] = 1
    p = tmp_path / "t.gguf"
    p.write_bytes(bytes(data))
    found = [f for f in _gg3(p) if f.code == "GG303"]
    assert len(found) == 1 and "token_embd.weight" in found[0].message


def test_real_files_have_no_alignment_errors(shared_fixtures, repo_fixtures):
    paths = sorted(glob.glob(str(shared_fixtures / "llama-vocab" / "*.gguf"))) + sorted(glob.glob(str(repo_fixtures / "*.gguf")))
    for p in paths:
        assert _gg3(p) == [], p
