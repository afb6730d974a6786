"""Findings as GitHub Actions workflow commands (annotations on the run and the PR).

Why: inside a GitHub workflow, ``::error file=...::message`` lines on stdout become
annotations without any upload step; ``ggscope validate`` picks this format by itself
when ``GITHUB_ACTIONS=true`` and no ``--format`` was asked for.

Contract: one line per finding,
``::error file=F,title=CODE name::message (path, bytes start-end)`` with ``warning``
for warnings and ``notice`` for infos.  Model files have no lines, so the byte range
goes in the message.  File text (the file name, the message) is escaped once by
``core.escape.escape_text`` (a message keeps its line breaks: GitHub shows them), then the workflow command's own encoding of GitHub's
toolkit (``@actions/core`` command.ts) applies: in the message ``%``, ``\\r``, ``\\n``
become ``%25``, ``%0D``, ``%0A``; in property values ``:`` and ``,`` also become
``%3A`` and ``%2C``.
"""
from __future__ import annotations

from collections.abc import Iterable

from ggscope.core.escape import escape_text
from ggscope.rules import Finding

__all__ = ["line", "render", "escape_data", "escape_property", "LEVELS"]

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _where(f: Finding) -> str:
    parts = []
    if f.path:
        parts.append(f.path)
    if f.start is not None:
        parts.append(f"bytes {f.start}-{f.end if f.end is not None else f.start}")
    return f" ({', '.join(parts)})" if parts else ""


def line(f: Finding) -> str:
    title = f"{f.code} {f.rule}".strip()
    props = f"file={escape_property(escape_text(f.file))},title={escape_property(title)}"
    message = escape_text(f.message + _where(f), keep="\r\n")
    return f"::{LEVELS[f.severity.value]} {props}::{escape_data(message)}"


def render(findings: Iterable[Finding]) -> str:
    return "".join(line(f) + "\n" for f in findings)
