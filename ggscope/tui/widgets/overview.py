"""``OverviewPane``: what the file is, at a glance -- the browser's first screen.

Format and version, architecture, name, parameter count, file type (llama.cpp's
name), size, bits per weight, the tensor types with their counts and bytes, and the
validator's findings counted by severity.  The facts come from ``ggscope.model.summary``;
this pane only lays them out.  Before the file is parsed it says so, or shows what the
header peek (``model.peek``) read, with "…" where the parse has still to tell.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from ggscope.tui.first_screen import PANE_KEYS, PEEK_PENDING, peek_facts
from ggscope.tui.format import file_text, human_bytes

__all__ = ["OverviewPane", "severity_counts"]

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def severity_counts(findings: list) -> list[tuple[str, int]]:
    """(severity, count) in the order error, warning, info, then any other."""
    counts = Counter(getattr(f.severity, "value", str(f.severity)) for f in findings)
    order = ["error", "warning", "info"]
    return [(s, counts[s]) for s in order if counts[s]] + [(s, n) for s, n in counts.items() if s not in order]


class OverviewPane(VerticalScroll, can_focus=True):
    """See the module docstring; ``show_file(mf)`` then ``set_findings(findings)``."""

    DEFAULT_CSS = "OverviewPane { padding: 0 1; } OverviewPane > Static { width: 1fr; }"

    def __init__(self, path: str, **kw) -> None:
        super().__init__(**kw)
        self.path = path
        self.facts: list[tuple[str, Any]] = []
        self.findings: list | None = None

    def compose(self):
        yield Static(Text(f"parsing {file_text(Path(self.path).name)} …", style="italic"), id="overview-text")

    def show_peek(self, p) -> None:
        """The header's facts (``model.peek``) while the parse runs: the same lines
        ``show_file`` gives them (in ``first_screen.peek_facts``'s words, which the
        launcher's pre-frame shows too), the rest said to follow."""
        self.facts = [(label, value if value is not None else Text("…", style="dim"))
                      for label, value in peek_facts(p)]
        self._redraw(validating=PEEK_PENDING)

    def show_file(self, mf) -> None:
        from ggscope.model.summary import human_count, summarize  # lazy: 6 more modules only when used
        s = summarize(mf)
        facts: list[tuple[str, Any]] = [
            ("format", f"{s.format} v{s.version}, {s.endian}-endian"),
            ("architecture", file_text(s.architecture) if s.architecture else Text("not stated", style="dim")),
            ("name", file_text(s.name) if s.name else Text("not stated", style="dim")),
            ("parameters", f"{human_count(s.n_params)} ({s.n_params:,})"),
            ("file type", file_text(s.file_type) if s.file_type else Text("not stated", style="dim")),
            ("size", f"{human_bytes(s.file_size)} ({s.file_size:,} B)"),
            ("bits/weight", f"{s.bpw:.2f}" if s.bpw is not None else Text("no tensors", style="dim")),
            ("contents", f"{s.n_keys} metadata key{'s' * (s.n_keys != 1)}, "
                         f"{s.n_tensors} tensor{'s' * (s.n_tensors != 1)}"),
            ("chat templates", Text(file_text(", ".join(s.templates))) if s.templates else Text("none", style="dim")),
        ]
        from ggscope.memory import default_plan  # lazy: 8 more modules only when used
        from ggscope.memory.describe import one_line  # lazy: 9 more modules only when used
        if (plan := default_plan(mf)) is not None:        # llama.cpp's buffers (ggscope fit)
            facts.append(("memory", Text(one_line(plan))))       # what llama.cpp allocates
        if mf.damage is not None:
            facts.append(("damage", Text(f"parsing stopped at offset {mf.damage.start:#x} in "
                                         f"{mf.damage.path or '/'}: {file_text(mf.damage.error or '')}",
                                         style="bold red")))
        self.facts = facts
        self.census = s.census
        self._redraw()

    def set_findings(self, findings: list) -> None:
        self.findings = findings
        self._redraw()

    def _redraw(self, validating: str = "validating …") -> None:
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold cyan", no_wrap=True)
        grid.add_column(overflow="fold")
        for label, value in self.facts:       # Text, never markup: values hold file text
            grid.add_row(Text(label), value if isinstance(value, Text) else Text(str(value)))
        parts: list[Any] = [grid]
        if getattr(self, "census", None):
            types = Table(box=None, pad_edge=False, header_style="bold", title="tensor types",
                          title_justify="left", title_style="bold cyan")
            types.add_column("type")
            types.add_column("tensors", justify="right")
            types.add_column("size", justify="right")
            for name, n, nbytes in self.census:
                types.add_row(Text(file_text(name)), Text(str(n)), Text(human_bytes(nbytes)))
            parts += [Text(""), types]
        parts.append(Text(""))
        line = Text("findings  ", style="bold cyan")
        if self.findings is None:
            line.append(validating, style="italic")
        elif not self.findings:
            line.append("none", style="green")
        else:
            for i, (sev, n) in enumerate(severity_counts(self.findings)):
                line.append(", " if i else "")
                line.append(f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}",
                            style=_SEVERITY_STYLE.get(sev, ""))
            line.append("  (4 to list them)", style="dim")
        parts.append(line)
        parts.append(Text(PANE_KEYS, style="dim"))
        self.query_one("#overview-text", Static).update(Group(*parts))
