"""The gate cannot be fooled (issue 13): unknown rule words and non-regular files are
usage errors (exit 2, one line naming the problem), never a silent pass or a block.

FIFO cases run in a subprocess with a timeout: before the fix, opening a FIFO blocked
forever, and a test must fail rather than hang.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ggscope
from ggscope.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


@pytest.mark.parametrize("argv, word, hint", [
    (["--select", "NOPE"], "NOPE", None),
    (["--ignore", "GG9999"], "GG9999", "GG909"),
    (["--select", "truncated-fil"], "truncated-fil", "truncated-file"),
    (["--select", "GG1,strucutre"], "strucutre", "structure"),
])
def test_unknown_selector_is_a_usage_error(capsys, argv, word, hint):
    assert main(["validate", *argv, str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert repr(word) in err
    if hint:
        assert f"did you mean {hint!r}" in err
    assert len(err.strip().splitlines()) == 1


def test_known_selectors_still_work(capsys):
    assert main(["validate", "--select", "GG1,tensors,key-*", "--ignore", "GG801", str(EXAMPLE)]) in (0, 1)


def test_unknown_selector_in_config_is_a_usage_error(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope]\nselect = ["GG9999"]\n')
    monkeypatch.chdir(tmp_path)
    assert main(["validate", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert "'GG9999'" in err and "pyproject.toml" in err


def _run(args, cwd, timeout=60):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "ggscope", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("cmd", [["validate"], ["info"], ["stats"], ["diff", str(EXAMPLE)], []])
def test_fifo_is_refused_without_blocking(tmp_path, cmd):
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    r = _run([*cmd, str(fifo)], tmp_path)
    assert r.returncode == 2, r
    assert "FIFO" in r.stderr and "Traceback" not in r.stderr
    if cmd == ["validate"]:
        assert "0 files checked" in r.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_open_refuses_fifo_before_opening(tmp_path):
    fifo = tmp_path / "m.gguf"
    os.mkfifo(fifo)
    code = f"import ggscope\ntry:\n ggscope.open({str(fifo)!r})\nexcept ggscope.UnreadableFile as e:\n print(e)"
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(REPO)),
                       capture_output=True, text=True, timeout=60)
    assert "FIFO" in r.stdout


def test_device_and_directory(tmp_path, capsys):
    if os.path.exists("/dev/zero"):
        assert main(["info", "/dev/zero"]) == 2
        assert "character device" in capsys.readouterr().err
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "glob" in err and "0 files checked" in err
    with pytest.raises(ggscope.UnreadableFile):
        ggscope.open(tmp_path)
