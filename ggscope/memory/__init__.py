"""Memory llama.cpp will allocate for a model, predicted from the header (``ggscope fit``).

``plan(mf, Options(ctx=...))`` -> ``Plan`` with llama.cpp's buffers and byte totals;
``max_context`` / ``max_layers`` answer the converse.  See ``plan``'s docstring.
"""
from ggscope.memory.plan import CACHE_TYPES, Buffer, Cache, Options, Plan, default_plan, max_context, max_layers, plan

__all__ = ["CACHE_TYPES", "Buffer", "Cache", "Options", "Plan", "default_plan", "max_context", "max_layers", "plan"]
