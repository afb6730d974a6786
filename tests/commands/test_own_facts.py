"""rwkv.cpp and chatglm.cpp files state what they are; `diff`, `info` and `run` say it
(issue 26: `diff` showed '-' for their architecture and file type, `run` said
architecture 'unknown').

The expectations come from how the shared fixtures were written, not from ggscope: each
file's name records the converter run that wrote it (``MANIFEST.md`` of
``fixtures/rwkv`` and ``fixtures/chatglm``: rwkv.cpp's ``convert_pytorch_to_ggml.py`` and
``quantize.py`` for ``tiny-rwkv-<major>v<minor>-...-<TYPE>.bin``; chatglm.cpp's
``convert.py`` with model type ChatGLM/ChatGLM2/ChatGLM3 for ``chatglm<N>-tiny-...``),
and chatglm.cpp's header stores the weights' ggml_type, whose id is read from the raw
bytes here (``struct``) and named by gguf-py's ``GGMLQuantizationType``.
"""
from __future__ import annotations

import json
import re
import struct

import pytest

from ggscope.cli import main

gguf = pytest.importorskip("gguf")


def _rwkv_pair(shared_fixtures):
    d = shared_fixtures / "rwkv"
    a, b = d / "tiny-rwkv-5v1-730K-FP16.bin", d / "tiny-rwkv-5v1-730K-Q4_1.bin"
    if not (a.is_file() and b.is_file()):
        pytest.skip(f"rwkv.cpp fixtures missing in {d}")
    return a, b


def _rwkv_expected(path) -> tuple[str, str]:
    m = re.match(r"tiny-rwkv-(\d)v(\d)-[^-]+-(?:v100-)?(\w+)\.bin$", path.name)
    major, minor, dtype = m.groups()
    return (f"rwkv{major}" if minor == "0" else f"rwkv{major}.{minor}"), dtype


def _chatglm_expected(path) -> tuple[str, str]:
    """(architecture, ggml type name of the header's dtype) of a chatglm.cpp file of the
    current header (magic, model_type, version, then the config whose first int is dtype)."""
    raw = path.read_bytes()[:16]
    assert raw[:4] == b"ggml"
    _model_type, version, dtype = struct.unpack("<3i", raw[4:16])
    assert version in (1, 2)
    arch = re.match(r"(chatglm\d)-", path.name).group(1).replace("chatglm1", "chatglm")
    return arch, gguf.GGMLQuantizationType(dtype).name


@pytest.mark.parametrize("kind", ["rwkv", "chatglm"])
def test_diff_states_architecture_and_file_type(shared_fixtures, kind, capsys):
    if kind == "rwkv":
        a, b = _rwkv_pair(shared_fixtures)
        want_a, want_b = _rwkv_expected(a), _rwkv_expected(b)
    else:
        d = shared_fixtures / "chatglm"
        a, b = d / "chatglm2-tiny-f86777c-f16.bin", d / "chatglm2-tiny-f86777c-q4_0.bin"
        if not (a.is_file() and b.is_file()):
            pytest.skip(f"chatglm.cpp fixtures missing in {d}")
        want_a, want_b = _chatglm_expected(a), _chatglm_expected(b)
    assert main(["diff", "--json", str(a), str(b)]) == 1
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert (summary["a"]["architecture"], summary["a"]["file_type"]) == want_a
    assert (summary["b"]["architecture"], summary["b"]["file_type"]) == want_b
    assert main(["diff", str(a), str(b)]) == 1
    text = capsys.readouterr().out
    arch_line = next(line for line in text.splitlines() if line.startswith("architecture"))
    type_line = next(line for line in text.splitlines() if line.startswith("file type"))
    assert arch_line.split()[1:3] == [want_a[0], want_b[0]]
    assert type_line.split()[2:4] == [want_a[1], want_b[1]]


def test_every_chatglm_file_of_the_current_header_states_its_type(shared_fixtures, capsys):
    files = sorted((shared_fixtures / "chatglm").glob("chatglm*-f86777c-*.bin"))
    if not files:
        pytest.skip("chatglm.cpp fixtures missing")
    for path in files:
        assert main(["info", "--json", str(path)]) == 0
        facts = json.loads(capsys.readouterr().out)["summary"]
        assert (facts["architecture"], facts["file_type"]) == _chatglm_expected(path), path.name


def test_run_names_the_architecture_a_chatglm_file_states(shared_fixtures, capsys):
    path = shared_fixtures / "chatglm" / "chatglm3-tiny-f86777c-f16.bin"
    if not path.is_file():
        pytest.skip(f"{path} missing")
    assert main(["run", str(path), "--tokens", "1,2"]) == 2
    err = capsys.readouterr().err
    assert "architecture 'chatglm3'" in err and "'unknown'" not in err


def test_run_on_rwkv_says_the_version_the_file_has(shared_fixtures, capsys):
    a, _ = _rwkv_pair(shared_fixtures)
    assert main(["run", str(a), "--tokens", "1,2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["architecture"] == _rwkv_expected(a)[0]
