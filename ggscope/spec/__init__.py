"""The spec engine: Kaitai Struct YAML specs interpreted at run time.

``parse(format_id, source)`` reads ``formats/<format_id>.ksy`` (cached after the first
load) and returns the root ``Node`` of the file.  See ``engine.py`` for the semantics
and ``expr.py`` for the expression language.
"""
from __future__ import annotations

from .engine import ParseResult, parse, parse_spec
from .loader import load_spec

__all__ = ["parse", "parse_spec", "load_spec", "ParseResult"]
