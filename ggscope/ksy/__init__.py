"""The spec engine: Kaitai Struct YAML specs interpreted at run time, and the node tree.

Layer 2 (above ``source``).  ``parse(format_id, source)`` reads
``formats/<format_id>.ksy`` (cached after the first load; shipped already parsed in
``documents``) and returns the root ``Node`` (``node``) of the file.  See ``engine`` for
the semantics and ``expr`` for the expression language.  The names below load lazily:
``ggscope.ksy.node`` alone (the browser's first paint needs it) costs no spec engine.
"""
from __future__ import annotations

from ggscope.core.lazy import exports

__all__ = ["parse", "parse_spec", "load_spec", "ParseResult"]

__getattr__, __dir__ = exports(__name__, {"parse": "ggscope.ksy.engine", "parse_spec": "ggscope.ksy.engine",
                                          "ParseResult": "ggscope.ksy.engine", "load_spec": "ggscope.ksy.loader"})
