"""The validation gate: selected rules run over files, locally, in processes or on Dask.

Layer 8 (above ``rules``).  ``runner`` runs the rules on one file; ``config`` reads
``[tool.ggscope]``; ``cluster`` maps validation over Dask distributed.  The package
re-exports ``runner``'s public names, as the old ``ggscope.validate`` module did.
"""
from __future__ import annotations

from ggscope.core.lazy import exports

__all__ = ['validate', 'validate_file', 'selected_rules', 'check_selectors', 'UnknownSelector']

__getattr__, __dir__ = exports(__name__, dict.fromkeys(__all__, "ggscope.validate.runner"))
