"""``[tool.ggscope]`` is read and parsed once per pyproject.toml state, not once per run.

Why: a process that runs ``validate`` once per file (a server, a test suite, the
in-process benchmark of issue 27 item 3) paid a directory walk, a read, a TOML parse and
the selector check on every call.  What must still hold: an edited file is seen - by
inode, modification time and size, and read every time while it is recent enough for an
equal-size edit to share its modification time.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest

from ggscope.cli import main
from ggscope.validate import config
from gguf_writers import KV, T, TensorSpec, V, write_gguf_v1_v2

HOUR_AGO = time.time() - 3600


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """cwd in tmp_path, no GitHub format, and a count of TOML reads and table parses."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(config, "_SEEN", {}, raising=False)
    calls = {"toml": 0, "parse": 0}
    read, parse = config._read_toml, config.parse

    def counting_read(path, data):
        calls["toml"] += 1
        return read(path, data)

    def counting_parse(table, where="[tool.ggscope]"):
        calls["parse"] += 1
        return parse(table, where)
    monkeypatch.setattr(config, "_read_toml", counting_read)
    monkeypatch.setattr(config, "parse", counting_parse)
    return calls


@pytest.fixture
def v1_file(tmp_path) -> Path:
    kvs = [KV("general.architecture", V.STRING, "llama")]
    return write_gguf_v1_v2(tmp_path / "old.gguf", 1, kvs, [TensorSpec("tok", T.F32, np.ones((2, 4), np.float32))])


def _codes(capsys, *argv) -> tuple[int, list[str]]:
    code = main(["validate", *argv])
    out = capsys.readouterr().out
    return code, [f["code"] for f in json.loads(out)] if out.strip() else []


def _write(path: Path, text: str, when: float | None = HOUR_AGO) -> None:
    path.write_text(text)
    if when is not None:
        os.utime(path, (when, when))


def test_a_settled_config_is_read_and_parsed_once_for_many_runs(counted, v1_file, tmp_path, capsys):
    _write(tmp_path / "pyproject.toml", '[tool.ggscope]\nselect = ["GG1"]\nformat = "json"\n')
    for _ in range(5):
        assert _codes(capsys, "old.gguf") == (1, ["GG102"])
    assert counted == {"toml": 1, "parse": 1}


def test_an_edited_config_is_seen(counted, v1_file, tmp_path, capsys):
    pyproject = tmp_path / "pyproject.toml"
    _write(pyproject, '[tool.ggscope]\nselect = ["GG1"]\nformat = "json"\n')
    assert _codes(capsys, "old.gguf") == (1, ["GG102"])
    _write(pyproject, '[tool.ggscope]\nselect = ["GG8"]\nformat = "json"\n', HOUR_AGO + 1)   # same size, other time
    assert _codes(capsys, "old.gguf") == (0, ["GG801"])
    assert counted == {"toml": 2, "parse": 2}
    _write(pyproject, '[tool.ggscope]\nselct = ["GG8"]\n', HOUR_AGO + 2)      # now broken: exit 2 on every run
    assert main(["validate", "old.gguf"]) == 2 and main(["validate", "old.gguf"]) == 2
    assert "selct" in capsys.readouterr().err


def test_a_config_written_just_now_is_read_on_every_run(counted, v1_file, tmp_path, capsys):
    """Two equal-size edits within one tick of the file system's clock share a
    modification time: a recent file is never served from what was kept."""
    pyproject = tmp_path / "pyproject.toml"
    _write(pyproject, '[tool.ggscope]\nselect = ["GG1"]\nformat = "json"\n', None)
    assert _codes(capsys, "old.gguf") == (1, ["GG102"])
    stamp = os.stat(pyproject).st_mtime_ns
    _write(pyproject, '[tool.ggscope]\nselect = ["GG8"]\nformat = "json"\n', None)
    os.utime(pyproject, ns=(stamp, stamp))                                     # the same tick
    assert _codes(capsys, "old.gguf") == (0, ["GG801"])


def test_no_pyproject_reads_nothing(counted, v1_file, tmp_path, capsys):
    _write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')        # no [tool.ggscope]: no TOML read
    for _ in range(3):
        assert main(["validate", "--select", "GG1", "old.gguf"]) == 1
    assert counted == {"toml": 0, "parse": 0}


def test_the_walk_from_the_current_directory_follows_its_real_path(tmp_path, monkeypatch):
    """Run in a directory reached through a symbolic link, the nearest pyproject.toml is
    that of the link's target's parents (as ``realpath`` of the directory gives them),
    never one beside the link, exactly as when the resolved directory is named."""
    monkeypatch.setattr(config, "_SEEN", {}, raising=False)
    real = tmp_path / "real" / "proj"
    (real / "sub" / "deeper").mkdir(parents=True)
    (real / "pyproject.toml").write_text('[tool.ggscope]\nselect = ["GG1"]\n')
    beside = tmp_path / "elsewhere"
    beside.mkdir()
    (beside / "pyproject.toml").write_text('[tool.ggscope]\nselect = ["GG5"]\n')
    (beside / "link").symlink_to(real / "sub")
    monkeypatch.chdir(beside / "link" / "deeper")
    assert config.load().select == ("GG1",)
    assert config.load() == config.load(os.path.realpath(os.getcwd())) == config.load(real / "sub" / "deeper")
    assert config.load(beside / "link").select == ("GG1",)           # a start that is named is resolved too
    monkeypatch.chdir(beside)
    assert config.load().select == ("GG5",)
