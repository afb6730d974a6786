"""``ggscope diff`` in-process through ``cli.main``: exit codes (diff(1)) and JSON shape."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ggscope.cli import main
from gguf_writers import KV, T, TensorSpec, V, write_gguf_py


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("diffcli")
    x = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    a = write_gguf_py(d / "a.gguf", kvs=[KV("test.n", V.UINT32, 1)], tensors=[TensorSpec("w", T.F32, x)])
    b = write_gguf_py(d / "b.gguf", kvs=[KV("test.n", V.UINT32, 2)],
                      tensors=[TensorSpec("w", T.F16, x.astype(np.float16))])
    return a, b


def test_identical_exit_0(files, capsys):
    assert main(["diff", str(files[0]), str(files[0])]) == 0
    assert "identical" in capsys.readouterr().out


def test_different_exit_1_and_json(files, capsys):
    assert main(["diff", "--json", str(files[0]), str(files[1])]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["metadata"]) == {"added", "removed", "changed"}
    assert doc["metadata"]["changed"] == [{"key": "test.n", "type_a": "uint32", "type_b": "uint32", "a": 1, "b": 2}]
    (t,) = doc["tensors"]
    assert t["name"] == "w" and t["status"] == "changed" and t["type_b"] == "F16"
    assert {"max_abs", "rmse", "rel_rmse", "cosine", "snr_db"} <= set(t)
    assert t["cosine"] > 0.9999 and doc["identical"] is False


def test_plain_text_and_rich(files, capsys):
    assert main(["diff", "--color", "never", str(files[0]), str(files[1])]) == 1
    out = capsys.readouterr().out
    assert "test.n" in out and "F32 → F16" in out
    assert main(["diff", "--color", "always", str(files[0]), str(files[1])]) == 1
    assert "F16" in capsys.readouterr().out


def test_metadata_only(files, capsys):
    assert main(["diff", "--json", "--metadata-only", str(files[0]), str(files[1])]) == 1
    assert json.loads(capsys.readouterr().out)["tensors"] == []


def test_errors_exit_2(files, tmp_path, capsys):
    assert main(["diff", str(files[0]), str(tmp_path / "missing.gguf")]) == 2
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 64)
    assert main(["diff", str(junk), str(files[0])]) == 2
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(files[1].read_bytes()[:-40])
    assert main(["diff", str(files[0]), str(cut)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "ggscope:" in err


def test_help_teaches(capsys):
    assert main(["diff", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "exit status" in out


def test_progress_bar_on_a_terminal_only(files, monkeypatch, capsys):
    """diff draws a progress bar on stderr when it is a terminal, nothing when piped."""
    import io
    import sys
    a, b = files[0], files[-1]
    main(["diff", str(a), str(b)])
    assert "comparing" not in capsys.readouterr().err

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setenv("TERM", "xterm-256color")
    main(["diff", str(a), str(b)])
    assert "comparing" in term.getvalue()
