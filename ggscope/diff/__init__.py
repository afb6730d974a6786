"""Two model files compared: metadata, tensor set, and numeric error per tensor.

Layer 6 (beside ``forward``, above ``stats``).  ``compare`` walks both files and
compares tensors (through ``ggscope.source.stream``); ``metadata`` compares header and
keys; ``results`` holds the records; ``sums`` is the pair-sum kernel (C, numba
fallback in ``sums_jit``).  The package
re-exports ``compare``'s public names, as the old ``ggscope.diff`` module did.
"""
from __future__ import annotations

import importlib

__all__ = ['diff_files', 'tensors_by_name', 'DiffResult', 'MetadataDiff', 'MetaEntry', 'MetaChange', 'ItemDiff', 'HeaderChange', 'TensorDiff', 'DiffCancelled', 'CHUNK_ELEMS', 'FIRST_ITEMS', 'STATUSES']

_HOME = "ggscope.diff.compare"


def __getattr__(name: str):
    # re-exported lazily: importing the package (or one of its siblings) costs nothing
    # until a name is used, which keeps one-shot commands' start-up as before
    if name in __all__:
        return getattr(importlib.import_module(_HOME), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
