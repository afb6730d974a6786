"""Lazy re-exports for a package's ``__init__``: one mechanism, not a copy per package.

Why: ``ggscope.source``, ``.stats``, ``.diff``, ``.validate`` and ``.ksy`` re-export the
public names of one of their modules, as the modules they replaced did; importing the
package (or a sibling module) must cost nothing until a name is used, which keeps
one-shot commands' start-up as it was.

Contract: ``__getattr__, __dir__ = exports(__name__, {name: "ggscope.x.module", ...})``.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

__all__ = ["exports"]


def exports(package: str, homes: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: each name of ``homes`` loads
    from its module when first asked for."""
    def __getattr__(name: str) -> object:
        if name in homes:
            return getattr(importlib.import_module(homes[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(homes))
    return __getattr__, __dir__
