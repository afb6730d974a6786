"""Two model files compared: metadata, tensor set, and numeric error per tensor.

Layer 6 (beside ``forward``, above ``stats``).  ``compare`` walks both files and
compares tensors (through ``ggscope.source.stream``); ``metadata`` compares header and
keys; ``results`` holds the records; ``sums`` is the pair-sum kernel (C, numba
fallback in ``sums_jit``).  The package
re-exports ``compare``'s public names, as the old ``ggscope.diff`` module did.
"""
from __future__ import annotations

from ggscope.core.lazy import exports

__all__ = ['diff_files', 'tensors_by_name', 'DiffResult', 'MetadataDiff', 'MetaEntry', 'MetaChange', 'ItemDiff', 'HeaderChange', 'TensorDiff', 'DiffCancelled', 'CHUNK_ELEMS', 'FIRST_ITEMS', 'STATUSES']

__getattr__, __dir__ = exports(__name__, dict.fromkeys(__all__, "ggscope.diff.compare"))
