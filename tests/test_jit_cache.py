"""ggscope.core.jit: numba's kernel cache goes to the user cache directory, never next to the
package, and an unusable cache directory costs speed, never an error."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import ggscope

PACKAGE = Path(ggscope.__file__).resolve().parent

# computes statistics through the compiled kernels and reports where numba caches
SCRIPT = """
import os, sys
import numpy as np
import ggscope.stats.tensors as S
S.JIT_MIN_ELEMS = 0                          # the compiled route even for a small tensor
import ggscope
mf = ggscope.open(sys.argv[1])
s = mf.tensor("blk.0.attn_q.weight").stats()
from numba.core.config import CACHE_DIR
print(CACHE_DIR)
print(s["count"], s["min"] is not None)
"""
EXAMPLE = PACKAGE / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def _run(env_updates: dict[str, str | None], home: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env["XDG_CACHE_HOME"] = str(home / "cache")             # platformdirs' user cache on Linux
    env["HOME"] = str(home)
    env["GGSCOPE_KERNELS"] = "numba"                        # numba's route even where the C kernels are built
    for k, v in env_updates.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return subprocess.run([sys.executable, "-c", SCRIPT, str(EXAMPLE)], env=env, capture_output=True, text=True)


def _no_cache_files_in_package() -> set[Path]:
    return {p for p in PACKAGE.rglob("*") if p.suffix in (".nbi", ".nbc")}


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME steers platformdirs on Linux only")
def test_kernels_are_cached_in_the_user_cache_dir(tmp_path):
    before = _no_cache_files_in_package()
    r = _run({}, tmp_path)
    assert r.returncode == 0, r.stderr
    where = Path(r.stdout.splitlines()[0])
    assert where == tmp_path / "cache" / "ggscope" / "numba"
    assert any(where.rglob("*.nbi")), "nothing cached"
    assert r.stdout.splitlines()[1] == "4096 True"
    assert _no_cache_files_in_package() == before


def test_the_users_numba_cache_dir_is_kept(tmp_path):
    mine = tmp_path / "mine"
    r = _run({"NUMBA_CACHE_DIR": str(mine)}, tmp_path)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.splitlines()[0]) == mine
    assert any(mine.rglob("*.nbi"))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only directories")
def test_a_read_only_cache_dir_only_costs_speed(tmp_path):
    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    (home / "cache").chmod(0o500)
    try:
        r = _run({}, home)
    finally:
        (home / "cache").chmod(0o700)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "4096 True"
    assert "Error" not in r.stderr and "Traceback" not in r.stderr


def test_a_cache_dir_that_is_a_file_only_costs_speed(tmp_path):
    """Works as root too: the user cache path is blocked by a plain file."""
    home = tmp_path / "home"
    (home / "cache").mkdir(parents=True)
    (home / "cache" / "ggscope").write_text("not a directory")
    for given in (None, str(home / "cache" / "ggscope" / "numba")):
        r = _run({"NUMBA_CACHE_DIR": given}, home)
        assert r.returncode == 0, r.stderr
        assert r.stdout.splitlines()[1] == "4096 True"
        assert "Traceback" not in r.stderr
        assert not Path(r.stdout.splitlines()[0]).is_relative_to(PACKAGE)


def test_every_module_reaches_numba_through_jit():
    """A module that imports numba itself, before ggscope.core.jit has run, would cache its
    kernels next to the package: every compiled kernel comes through ggscope.core.jit."""
    import re
    direct = re.compile(r"^\s*(from numba import|import numba\b)", re.M)
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if p.name != "jit.py" and direct.search(p.read_text(encoding="utf-8"))]
    assert offenders == []
