"""ggscope: inspect, validate and diff ggml-family model files.

``ggscope.open(path)`` detects the format, parses the file with its Kaitai spec and
returns a format-neutral ``ModelFile`` (``ggscope.model.modelfile``); see
``ggscope.model.open``.  The package is layered (README, "Architecture"); this module
only names the public API, loading each part when it is first used so that
``ggscope --version`` imports nothing heavy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ggscope.core import progress as _progress
from ggscope.core.errors import DamagedFile, GGScopeError, UnknownFormat, UnreadableFile

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile, TensorInfo

__all__ = ["open", "open_bytes", "ModelFile", "TensorInfo", "GGScopeError", "UnknownFormat", "UnreadableFile",
           "DamagedFile", "__version__"]
__version__ = "0.1.0"

def _terminal_task(desc: str, total: int | None):
    # long work done through the library draws on a terminal as the CLI does (and on
    # nothing else); the renderer loads only when a task starts
    from ggscope.report.progress import terminal_reporter
    reporter = terminal_reporter()
    return _progress.NULL if reporter is None else reporter(desc, total)


_progress.set_fallback(_terminal_task)

_LAZY = {"ModelFile": "ggscope.model.modelfile", "TensorInfo": "ggscope.model.modelfile"}


def __getattr__(name: str):
    # ModelFile and TensorInfo pull in numpy: `ggscope --version` must not pay for it
    if name in _LAZY:
        import importlib
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ggscope' has no attribute {name!r}")


def open(path, /):  # noqa: A001 - the natural name
    """Parse the model file at ``path`` (see ``ggscope.model.open.open``)."""
    from ggscope.model.open import open as _open  # start-up: `import ggscope` loads no spec engine
    return _open(path)


def open_bytes(data: bytes, name: str = "<memory>"):
    """Like ``open`` for bytes already in memory (tests, fuzzing, network buffers)."""
    from ggscope.model.open import open_bytes as _open_bytes  # start-up: `import ggscope` loads no spec engine
    return _open_bytes(data, name)
