"""The rule catalogue: an explicit list, one entry per rule, no discovery magic.

Families live in their own modules (structure, values, alignment, naming, schema,
tensors, tokenizer, filename, legacy, deep); ``RULES`` lists every rule class in code
order.  Codes are stable: a retired code goes into ``REDIRECTS`` (old -> new), never
reused.
"""
from __future__ import annotations

import importlib
import threading

from ggscope.rules.base import CheckContext, Finding, Rule, Severity

__all__ = ["RULES", "REDIRECTS", "by_code", "Finding", "Rule", "Severity", "CheckContext"]

_FILLING = threading.Lock()
_CATALOGUE: list[type[Rule]] = []                 # RULES, filled on first use (__getattr__)
REDIRECTS: dict[str, str] = {"GG603": "GG1103"}   # arch-required-key -> missing-hparam (llama.cpp's own list)


def _register(module_name: str) -> None:
    _CATALOGUE.extend(importlib.import_module(f"ggscope.rules.{module_name}").RULES)


# the families, in catalogue order; each module exports RULES = [RuleClass, ...]
FAMILIES: tuple[str, ...] = ("structure", "values", "alignment", "naming", "schema", "tensors",
                             "tokenizer", "filename", "legacy", "deep", "loader", "sidecar", "sidecar_data", "manifest", "templates",
                             "release")


def __getattr__(name: str) -> list[type[Rule]]:
    """``RULES``, the families imported on first use: ``run``'s loader gate imports two
    rule modules, not the catalogue (start-up)."""
    if name != "RULES":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _FILLING:                                # two threads' first use must not register twice
        if not _CATALOGUE:
            for family in FAMILIES:
                _register(family)
            _CATALOGUE.sort(key=lambda r: r.code)
    globals()["RULES"] = _CATALOGUE
    return _CATALOGUE


def by_code(code: str) -> type[Rule] | None:
    code = REDIRECTS.get(code.upper(), code.upper())
    for r in __getattr__("RULES"):
        if r.code == code or r.name == code.lower():
            return r
    return None
