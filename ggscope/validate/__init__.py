"""The validation gate: selected rules run over files, locally, in processes or on Dask.

Layer 8 (above ``rules``).  ``runner`` runs the rules on one file; ``config`` reads
``[tool.ggscope]``; ``cluster`` maps validation over Dask distributed.  The package
re-exports ``runner``'s public names, as the old ``ggscope.validate`` module did.
"""
from __future__ import annotations

import importlib

__all__ = ['validate', 'validate_file', 'selected_rules', 'check_selectors', 'UnknownSelector']

_HOME = "ggscope.validate.runner"


def __getattr__(name: str):
    # re-exported lazily: importing the package (or one of its siblings) costs nothing
    # until a name is used, which keeps one-shot commands' start-up as before
    if name in __all__:
        return getattr(importlib.import_module(_HOME), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
