"""ggscope's cache folder is platformdirs' answer, without importing platformdirs on Linux.

Why: ``ggscope.core.stamped.user_cache_dir`` takes the XDG rule from the environment so
that a ``validate`` process does not pay platformdirs' import (tempfile, random) to read
one cached record; it must still name the folder platformdirs names, or the caches of
earlier versions (and numba's, ``ggscope.core.jit``) would be lost or split.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from ggscope.core import stamped

platformdirs = pytest.importorskip("platformdirs")
pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the environment rule is Linux's (XDG)")


@pytest.mark.parametrize("xdg", [None, "", "   ", "relative/cache", "/abs/cache", "/abs/cache/"])
@pytest.mark.parametrize("home", ["/home/someone", "/tmp/h"])
def test_the_folder_is_platformdirs_folder(monkeypatch, xdg, home):
    monkeypatch.setenv("HOME", home)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    want = platformdirs.user_cache_dir("ggscope")
    assert stamped.user_cache_dir() == want
    assert stamped.area("facts") == f"{want}/facts"


def test_reading_a_cached_record_imports_no_platformdirs(tmp_path):
    code = ("import sys\nfrom ggscope.core import stamped\n"
            "stamped.read(stamped.area('facts') + '/x.json', 'stamp')\n"
            "print('platformdirs' in sys.modules, 'tempfile' in sys.modules)")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(__import__("pathlib").Path(
        stamped.__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
