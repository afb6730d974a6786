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

from ggscope.core.lazy import exports

__all__ = ['tensor_stats', 'StatsCancelled', 'DEFAULT_BINS', 'DEFAULT_CHUNK_ELEMS', 'block_scale_stats', 'CACHE_BYTES']

__getattr__, __dir__ = exports(__name__, dict.fromkeys(__all__, "ggscope.stats.tensors"))
