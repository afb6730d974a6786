"""One thing the syntax-tree analysis found in a template (``analysis``), as plain data.

Why a module of its own: kept studies (``kept``) are read back into it without importing
Jinja2, which ``analysis`` needs.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Issue"]


@dataclass(frozen=True)
class Issue:
    kind: str
    line: int
    col: int
    message: str
    fatal: bool = True       # code execution / refusal / unbounded work (error) vs hiding (warning)
