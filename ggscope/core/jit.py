"""numba, with its compiled kernels cached in the user's cache directory.

Why: numba caches compiled functions next to their source by default, which is
read-only in system site-packages and containers (numba then compiles on every run,
seconds per command), and the package directory is no place for per-user files.  So
before numba is first imported, ``NUMBA_CACHE_DIR`` is pointed at
``ggscope.core.stamped.user_cache_dir()``/numba (platformdirs' folder) -- unless the user set it.  A cache
directory that cannot be created or written costs only speed: the kernels then go to
a private temporary directory that lives as long as the process.

Every compiled module of ggscope imports ``njit`` from here, never from numba.
"""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

from ggscope.core.stamped import user_cache_dir

__all__ = ["njit", "cache_dir"]


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe"):
            pass
        return True
    except OSError:
        return False


def cache_dir() -> str:
    """The directory numba caches ggscope's kernels in (set up on first call)."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        if "numba" in sys.modules or _writable(given):
            return given
    else:
        given = os.path.join(user_cache_dir(), "numba")
        if _writable(given):
            os.environ["NUMBA_CACHE_DIR"] = given
            return given
    if "numba" in sys.modules:              # too late to redirect: numba's own fallback applies
        return given
    private = tempfile.mkdtemp(prefix="ggscope-numba-")
    atexit.register(shutil.rmtree, private, ignore_errors=True)
    os.environ["NUMBA_CACHE_DIR"] = private
    return private


cache_dir()

from numba import njit  # noqa: E402  (after the cache directory is chosen)
