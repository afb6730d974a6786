"""``ggscope diff`` on a terminal: the renderables of one ``DiffResult`` for Rich.

Why apart from ``report.diff``: the text rendering is for pipes and files, this one
for a console of a known width.  The tensor table keeps to that width by dropping the
least telling columns first (``TENSOR_COLUMNS``' priorities, ``report.fit``) and says
which it left out.  Every cell is a ``rich.text.Text`` of text ``report.diff`` already escaped
(``core.escape``): file text never reaches Rich as markup.
"""
from __future__ import annotations

from typing import Any

from ggscope.diff.compare import DiffResult
from ggscope.forward.logits import LogitsDiff
from ggscope.report.diff import (LOGITS_HEAD, METRICS, STATUS_STYLE, change_lines, counts_line, display_status,
                                 logits_rows, logits_summary, number, shape_text, summary_line, summary_rows,
                                 worst_line)
from ggscope.core.escape import escape_text as _text
from ggscope.report.fit import Column, FittingTable

__all__ = ["rich_renderables", "TENSOR_COLUMNS"]

# (heading, right-aligned, priority: lower survives a narrow terminal longer)
TENSOR_COLUMNS = tuple(Column(*c) for c in (
    ("tensor", False, 0), ("status", False, 1), ("type", False, 2), ("shape", False, 6),
    ("max|Δ|", True, 5), ("rmse", True, 7), ("rel rmse", True, 3), ("cosine", True, 4),
    ("snr dB", True, 8), ("note", False, 9)))


def _pair(a: Any, b: Any, status: str) -> str:
    if status == "added":
        return str(b)
    if status == "removed" or a == b:
        return str(a)
    return f"{a} → {b}"


def _rich_rows(r: DiffResult) -> list[list[str]]:
    return [[_text(t.name), display_status(t), _pair(t.type_a, t.type_b, t.status),
             _pair(shape_text(t.shape_a), shape_text(t.shape_b), t.status),
             *(number(getattr(t, m), m) for m in METRICS), _text(t.error or "")]
            for t in r.tensors if not t.same]


def rich_renderables(r: DiffResult, logits: LogitsDiff | None = None) -> list[Any]:
    from rich.table import Table
    from rich.text import Text
    out: list[Any] = [Text(f"--- {_text(r.path_a)}\n+++ {_text(r.path_b)}", style="bold")]
    srows = summary_rows(r)
    if srows:
        summ = Table(box=None, pad_edge=False, header_style="bold")
        summ.add_column("", style="bold cyan", no_wrap=True)
        summ.add_column("A", overflow="fold")
        summ.add_column("B", overflow="fold")
        for what, a, b in srows:
            summ.add_row(Text(what), Text(a), Text(b, style="yellow" if a != b else ""))
        out.append(summ)
        if r.tensors:
            out.append(Text(counts_line(r)))
        if worst_line(r):
            out.append(Text(worst_line(r), style="yellow"))
    lines = change_lines(r)
    if lines:
        meta = Table(title="metadata and header", show_header=False, box=None)
        meta.add_column(overflow="fold")
        style = {"+": "cyan", "-": "magenta", "~": "yellow", "h": "yellow"}
        for ln in lines:
            meta.add_row(Text(ln, style=style.get(ln[:1], "")))
        out.append(meta)
    rows = _rich_rows(r)
    if rows:
        out.append(FittingTable(TENSOR_COLUMNS, rows, "tensors (B relative to A)",
                                cell_style=lambda i, text: STATUS_STYLE.get(text, "") if i == 1 else ""))
    n_same = sum(t.same for t in r.tensors)
    if n_same and not r.identical:
        out.append(Text(f"({n_same} identical tensors not shown)", style="dim"))
    out.append(Text(summary_line(r), style="green" if r.identical else "yellow"))
    if logits is not None:
        table = Table(title=Text(f"next-token distributions ({_text(logits.architecture_a)} vs "
                                 f"{_text(logits.architecture_b)}; position i predicts after tokens 0..i)"))
        for h in LOGITS_HEAD:
            table.add_column(h, justify="right")
        for p, row in zip(logits.positions, logits_rows(logits)):
            table.add_row(*(Text(c) for c in row), style="" if p.agree else "yellow")  # token text is not markup
        out.append(table)
        out += [Text(f"note: {_text(n)}", style="dim") for n in logits.notes]
        out.append(Text(logits_summary(logits), style="green" if logits.same else "yellow"))
    return out
