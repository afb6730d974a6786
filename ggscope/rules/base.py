"""What a rule is and what it produces.

A rule is a small class in its family module: it declares ``code`` (stable, e.g.
"GG501"), ``name`` (kebab-case, e.g. "duplicate-tensor-name"), ``severity``, a one-line
``summary``, its ``source`` (the reader or writer behaviour it mirrors; by default the
docstring's Reference section), whether it ``needs_tensor_data`` (only ``--deep`` runs those) and
``only_if`` (its precondition, ``rules.preconditions``: the runner skips it on a file where that
fails), and its ``check(ctx)`` yields ``Finding``s.  Its docstring has ruff's sections - What it checks,
Why it matters, Example, Reference - which ``ggscope explain CODE`` prints.

Rules never print and reporters never judge: a Finding carries everything a reporter
needs (code, severity, file, message, node path, byte range, spec path).
"""
from __future__ import annotations

import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar

from ggscope.core.escape import quoted
from ggscope.ksy.node import find

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile
    from ggscope.ksy.node import Node

__all__ = ["Severity", "Finding", "Rule", "CheckContext", "quoted"]

_NONE = object()     # a path no node has (None is a node look-up's answer too)


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 2, "warning": 1, "info": 0}[self.value]


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    file: str
    message: str
    path: str = ""              # node path in the tree ("" = the whole file)
    start: int | None = None    # absolute byte range [start, end)
    end: int | None = None
    spec_path: str = ""
    rule: str = ""              # the rule's name

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity.value, "file": self.file,
                "message": self.message, "path": self.path, "start": self.start, "end": self.end}


class CheckContext:
    """What a rule sees: the parsed file (``mf``), the rule (``rule``), the run's options
    (``options``: ``manifest``, ``base``, ...), and helpers to make findings at nodes.
    A plain class with slots: the runner makes one per file and points it at each rule in turn."""

    __slots__ = ("mf", "rule", "options", "_nodes")

    def __init__(self, mf: "ModelFile", rule: "Rule", options: dict[str, Any] | None = None) -> None:
        self.mf = mf
        self.rule = rule
        self.options = {} if options is None else options
        self._nodes: dict[str, Any] = {}      # path -> node, for every rule this context serves

    def at(self, node: "Node | None", message: str, *, severity: Severity | None = None,
           start: int | None = None, end: int | None = None) -> Finding:
        """A finding of this rule located at ``node`` (or at an explicit byte range)."""
        if node is not None:
            s = node.start if start is None else start
            e = (node.end if node.end is not None else node.start) if end is None else end
            path, spec_path = node.path, node.spec_path
        else:
            s, e, path, spec_path = start, end, "", ""
        return Finding(self.rule.code, severity or self.rule.severity, self.mf.path, message,
                       path, s, e, spec_path, self.rule.name)

    def node(self, path: str) -> "Node | None":
        """The node at ``path``, resolved once per context - the runner's one context
        serves every rule of a file, and several point at the same entry (a template's
        key, ``general.architecture``)."""
        hit = self._nodes.get(path, _NONE)
        if hit is _NONE:
            hit = self._nodes[path] = find(self.mf.root, path)
        return hit


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    family: ClassVar[str]
    formats: ClassVar[tuple[str, ...]] = ("gguf",)      # ModelFile.format values it applies to
    needs_tensor_data: ClassVar[bool] = False
    source: ClassVar[str] = ""     # the reader or writer behaviour it mirrors (else: the docstring's Reference)
    # the precondition without which check() yields nothing (a key of rules.preconditions.PRECONDITIONS),
    # decided once per file by the runner; None: the rule runs on every file of its formats
    only_if: ClassVar[str | None] = None

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        raise NotImplementedError

    @classmethod
    def explanation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.summary)

    @classmethod
    def source_text(cls) -> str:
        """Where the rule's behaviour comes from: ``source``, else the docstring's Reference."""
        if cls.source:
            return cls.source
        text = cls.explanation()
        i = text.find("Reference:")
        return " ".join(text[i + len("Reference:"):].split()) if i >= 0 else ""
