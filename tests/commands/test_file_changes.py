"""A file that shrinks, grows or is replaced while ggscope reads it (issue 23 item 4).

Every command must end with one line naming the file and exit status 2 - never a
signal (``stats`` died with SIGBUS, exit 135 and no message, when another process
truncated the file under it).  Each case runs the real CLI in a child process (a
signal there is a negative return code here, not a dead test run) on a copy of the
bundled real GGUF; another writer changes the copy right after ggscope mapped it,
before any tensor byte is read, so the timing is deterministic.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ggscope

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"

# The child maps the file as ggscope does, then (as another writer would) changes it,
# then lets the command run on.  ``how``: truncate to N bytes, append N bytes, or
# replace the path by a copy of the file with every tensor byte zeroed.
CHILD = """
import os, sys
from ggscope.source import mapped
target, how, n = os.path.abspath(sys.argv[1]), sys.argv[2], int(sys.argv[3])
real = mapped.ByteSource.open.__func__
done = []

def opening(cls, path):
    src = real(cls, path)
    if os.path.abspath(path) == target and not done:
        done.append(1)
        if how == "truncate":
            os.truncate(path, n)
        elif how == "append":
            with open(path, "ab") as fh:
                fh.write(bytes(n))
        else:
            data = bytearray(open(path, "rb").read())
            data[n:] = bytes(len(data) - n)
            with open(path + ".new", "wb") as fh:
                fh.write(data)
            os.replace(path + ".new", path)
    return src

mapped.ByteSource.open = classmethod(opening)
from ggscope.cli import main
sys.exit(main(sys.argv[4:]))
"""


def _data_start() -> int:
    with ggscope.open(str(EXAMPLE)) as mf:
        return min(t.offset for t in mf.tensors)


def _run(path: Path, how: str, n: int, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", CHILD, str(path), how, str(n), *argv], capture_output=True,
                          text=True, env=env, cwd=str(REPO), timeout=600)


def _one_line_naming(out: subprocess.CompletedProcess, path: Path) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])       # never a signal (< 0)
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in out.stderr, out.stderr
    hits = [ln for ln in lines if str(path) in ln and "changed while ggscope read it" in ln]
    assert len(hits) == 1, lines
    return hits[0]


COMMANDS = {
    "stats": lambda p, q: ["stats", str(p)],
    "diff": lambda p, q: ["diff", str(q), str(p)],
    "validate --deep": lambda p, q: ["validate", "--deep", str(p)],
    "run": lambda p, q: ["run", str(p), "--tokens", "1,2"],
    "info": lambda p, q: ["info", str(p)],
}


@pytest.fixture
def copies(tmp_path):
    p, q = tmp_path / "model.gguf", tmp_path / "other.gguf"
    shutil.copyfile(EXAMPLE, p)
    shutil.copyfile(EXAMPLE, q)
    return p, q


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_file_truncated_under_a_command_is_one_line_and_exit_2(copies, command):
    """Cut inside the tensor data (the header stays whole): every command that reads
    tensor bytes reads them, not touches the map, so it meets a short read or a size
    that changed; ``info``, which reads none, learns it at the end (``cli.main``)."""
    p, q = copies
    cut = _data_start() + 1000
    line = _one_line_naming(_run(p, "truncate", cut, *COMMANDS[command](p, q)), p)
    assert f"{p.stat().st_size}" in line or "shrank" in line or "now" in line


@pytest.mark.parametrize("command", ["stats", "info", "validate --deep"])
def test_a_file_that_grows_under_a_command_is_one_line_and_exit_2(copies, command):
    p, q = copies
    line = _one_line_naming(_run(p, "append", 4096, *COMMANDS[command](p, q)), p)
    assert "now" in line


@pytest.mark.parametrize("command", ["stats", "diff", "run"])
def test_a_file_replaced_under_a_command_is_one_line_and_exit_2(copies, command):
    """The path now names another inode (``mv new model.gguf``): reading it would mix two
    files' bytes, so the command stops."""
    p, q = copies
    line = _one_line_naming(_run(p, "replace", _data_start(), *COMMANDS[command](p, q)), p)
    assert "another file" in line


def test_an_unchanged_file_still_succeeds(copies):
    """The control: the same child with a change past the end that changes nothing
    (append 0 bytes) leaves every command's status as it was."""
    p, q = copies
    for command in ("stats", "diff"):
        out = _run(p, "append", 0, *COMMANDS[command](p, q))
        assert out.returncode == 0, (command, out.stderr[-2000:])


@pytest.mark.parametrize("command", ["info", "validate", "stats"])
def test_a_header_cut_under_the_parser_is_one_line_and_exit_2(shared_fixtures, tmp_path, command):
    """The parser reads the header through the map: cut a vocabulary file's header
    (600 KB of tokens) right after it is mapped and the parser touches pages that are
    gone.  Before: SIGBUS (-7 here, 135 in a shell), no word; now the guard
    (``ggscope.source._guard``) writes the file's line and exits 2."""
    import importlib.util
    if importlib.util.find_spec("ggscope.source._guard") is None:     # (not installed here: pytest keeps its handlers)
        pytest.skip("ggscope.source._guard not built (no C compiler at install)")
    src = shared_fixtures / "llama-vocab" / "ggml-vocab-bert-bge.gguf"
    if not src.is_file():
        pytest.skip(f"{src.name} not in the shared fixtures")
    p = tmp_path / "vocab.gguf"
    shutil.copyfile(src, p)
    os.chmod(p, 0o644)
    line = _one_line_naming(_run(p, "truncate", 5000, command, str(p)), p)
    assert "shrank" in line
