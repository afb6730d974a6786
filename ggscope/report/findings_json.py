"""Findings as one JSON array: ``[{"code", "severity", "file", "message", "path", "start", "end"}]``.

Why: CI scripts and ``jq`` read this; the keys are a contract (see ``Finding.as_dict``).
"""
from __future__ import annotations

from collections.abc import Iterable

from ggscope.rules import Finding
from ggscope.report.jsonable import dumps

__all__ = ["render"]


def render(findings: Iterable[Finding]) -> str:
    return dumps([f.as_dict() for f in findings])
