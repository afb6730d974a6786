"""Per-tensor statistics, streamed in bounded chunks on the compiled (or numba) kernels.

Layer 5 (above ``quant``).  ``tensors`` is the entry point (``tensor_stats``): it picks
the kernels and a route - ``counted`` (codes, BIT1 bits), ``decoded`` (two decoding
passes) - over ``chunks`` (a tensor's blocks through ``ggscope.source.stream``);
``scales`` summarises block scales; ``cstats`` is the compiled engine,
``fused``/``fused_decoders``/``kernels`` numba's, ``fused_specs`` the layout-family
table both read, ``scale_range`` the block-scale bounds.  The package re-exports
``tensors``' public names, as the old ``ggscope.stats`` module did.
"""
from __future__ import annotations

import importlib

__all__ = ['tensor_stats', 'StatsCancelled', 'DEFAULT_BINS', 'DEFAULT_CHUNK_ELEMS', 'block_scale_stats', 'CACHE_BYTES']

_HOME = "ggscope.stats.tensors"


def __getattr__(name: str):
    # re-exported lazily: importing the package (or one of its siblings) costs nothing
    # until a name is used, which keeps one-shot commands' start-up as before
    if name in __all__:
        return getattr(importlib.import_module(_HOME), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
