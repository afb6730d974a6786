"""The template family's records: a template as the file holds it, and what one parse of it gives.

Why a module of its own: a file without a chat template creates neither class, so
``sources`` imports this module only when a file has a template (``issue`` holds the
analysis' record for the same reason); every ``validate`` process of a file without one
saved the two frozen-dataclass creations (~0.5 ms each).
"""
from __future__ import annotations

from dataclasses import dataclass

from ggscope.rules.templates.context import TEMPLATE_KEY
from ggscope.rules.templates.issue import Issue

__all__ = ["Template", "Study"]


@dataclass(frozen=True)
class Template:
    key: str
    text: str
    node_path: str

    @property
    def name(self) -> str:
        """"default" for tokenizer.chat_template, else the name after the dot."""
        return "default" if self.key == TEMPLATE_KEY else self.key[len(TEMPLATE_KEY) + 1:]

    def where(self, line: int, col: int) -> str:
        return f"{self.key} line {line}, column {col}"


@dataclass(frozen=True)
class Study:
    """What one parse of a template gives: its issues, the text it can write, and - when
    the issues allow it - the template compiled for a render in this process."""
    issues: "tuple[Issue, ...]"
    literals: str
    bounded: object = None          # a jinja2.Template with the budget's hooks, or None
